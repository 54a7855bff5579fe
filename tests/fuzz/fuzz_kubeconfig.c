/*
 * fuzz_kubeconfig.c - proxy/kubeconfig.c (and proxy/execcred.c's ExecCredential parser): one
 * input is one kubeconfig file, named /nonexistent/kwp-fuzz/config so relative paths resolve
 * where nothing can be read. Checked:
 *  - kubeconfig_add_buffer returns 0, -EINVAL, -EFBIG or -ENOMEM; on error the message is
 *    non-empty and the merge stays empty;
 *  - adding the same file a second time changes nothing (the first file wins whole): the
 *    current-context and every resolved target are the same after it;
 *  - kubeconfig_resolve of current-context and of "x": 0 or a negative errno with a message;
 *    on 0 the target is coherent: an http(s) server, absolute paths, a file never together
 *    with its -data twin, token_file only without token, no token with basic auth, a client
 *    key only with a certificate, an exec spec with a command and a known apiVersion, the exec
 *    extension valid JSON; execcred_new accepts it unless interactiveMode is Always (not
 *    tried when it would read a CA file: an absolute path may name a FIFO);
 *  - execcred_parse of the same bytes: 0 with a token or a certificate and key, or -EPROTO
 *    with a message.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "proxy/execcred.h"
#include "proxy/kubeconfig.h"
#include "tests/fuzz/fuzz.h"

#define ORIGIN "/nonexistent/kwp-fuzz/config"

static bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool mem_eq(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen == blen && (!a) == (!b) && (!a || memcmp(a, b, alen) == 0);
}

static void check_target(const struct kubeconfig_target *t)
{
    char err[512];
    struct execcred *ec;

    CHECK(t->server != NULL);
    CHECK(strncmp(t->server, "http://", 7) == 0 || strncmp(t->server, "https://", 8) == 0);
    CHECK(!t->ca_file || t->ca_file[0] == '/');
    CHECK(!t->client_cert_file || t->client_cert_file[0] == '/');
    CHECK(!t->client_key_file || t->client_key_file[0] == '/');
    CHECK(!t->token_file || t->token_file[0] == '/');
    CHECK(!(t->ca_file && t->ca_data));
    CHECK(!(t->client_cert_file && t->client_cert_data));
    CHECK(!(t->client_key_file && t->client_key_data));
    CHECK(!(t->token && t->token_file));
    CHECK(!(t->token && (t->username || t->password)));
    CHECK(!(t->client_key_file || t->client_key_data) ||
          (t->client_cert_file || t->client_cert_data));
    CHECK(!t->ca_data || t->ca_data[t->ca_data_len] == '\0');
    CHECK(!t->insecure || (!t->ca_file && !t->ca_data));
    if (t->exec_cluster_config) {
        cJSON *j = cJSON_Parse(t->exec_cluster_config);

        CHECK(j != NULL);
        cJSON_Delete(j);
    }
    if (!t->exec) {
        return;
    }
    CHECK(t->exec->command && t->exec->command[0]);
    CHECK(strcmp(t->exec->api_version, "client.authentication.k8s.io/v1") == 0 ||
          strcmp(t->exec->api_version, "client.authentication.k8s.io/v1beta1") == 0);
    for (size_t i = 0; i < t->exec->env_len; i++) {
        CHECK(t->exec->env[i].name[0] && !strchr(t->exec->env[i].name, '='));
        CHECK(t->exec->env[i].value != NULL);
    }
    for (size_t i = 0; i < t->exec->args_len; i++) {
        CHECK(t->exec->args[i] != NULL);
    }
    if (t->exec->provide_cluster_info && t->ca_file) {
        return; /* execcred_new would read an arbitrary absolute path (a FIFO, a tty) */
    }
    /* builds KUBERNETES_EXEC_INFO; runs nothing */
    ec = execcred_new(t, NULL, err, sizeof(err));
    CHECK((ec == NULL) == (t->exec->interactive == KUBECONFIG_INTERACTIVE_ALWAYS));
    CHECK(ec || err[0]);
    execcred_free(ec);
}

static bool same_target(const struct kubeconfig_target *a, const struct kubeconfig_target *b)
{
    return str_eq(a->server, b->server) && str_eq(a->context, b->context) &&
           str_eq(a->cluster, b->cluster) && str_eq(a->user, b->user) &&
           str_eq(a->ca_file, b->ca_file) &&
           mem_eq(a->ca_data, a->ca_data_len, b->ca_data, b->ca_data_len) &&
           str_eq(a->token, b->token) && str_eq(a->token_file, b->token_file) &&
           str_eq(a->username, b->username) && str_eq(a->password, b->password) &&
           str_eq(a->proxy_url, b->proxy_url) && str_eq(a->tls_server_name, b->tls_server_name) &&
           str_eq(a->exec_cluster_config, b->exec_cluster_config) && a->insecure == b->insecure &&
           (!a->exec) == (!b->exec) && (!a->exec || str_eq(a->exec->command, b->exec->command));
}

/* Resolves <context> in <kc> twice-merged <kc2> and checks both agree. */
static void resolve_both(const struct kubeconfig *kc, const struct kubeconfig *kc2,
                         const char *context)
{
    struct kubeconfig_target *t = NULL;
    struct kubeconfig_target *t2 = NULL;
    char err[512] = "";
    char err2[512] = "";
    int rc = kubeconfig_resolve(kc, context, &t, err, sizeof(err));
    int rc2 = kubeconfig_resolve(kc2, context, &t2, err2, sizeof(err2));

    CHECK(rc == rc2);
    CHECK(rc <= 0);
    if (rc != 0) {
        CHECK(t == NULL && err[0] != '\0' && memchr(err, '\0', sizeof(err)));
        CHECK(strcmp(err, err2) == 0);
        return;
    }
    check_target(t);
    CHECK(same_target(t, t2));
    kubeconfig_target_free(t);
    kubeconfig_target_free(t2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size ? size : 1);
    struct kubeconfig *kc = kubeconfig_new();
    struct kubeconfig *kc2 = kubeconfig_new();
    struct execcred_cred cred;
    char err[512] = "";
    int rc;

    memcpy(buf, data, size);
    rc = kubeconfig_add_buffer(kc, buf, size, ORIGIN, err, sizeof(err));
    CHECK(rc == 0 || rc == -EINVAL || rc == -EFBIG || rc == -ENOMEM);
    if (rc != 0) {
        CHECK(err[0] != '\0' && memchr(err, '\0', sizeof(err)));
        CHECK(kubeconfig_is_empty(kc));
    } else {
        CHECK(kubeconfig_add_buffer(kc2, buf, size, ORIGIN, err, sizeof(err)) == 0);
        CHECK(kubeconfig_add_buffer(kc2, buf, size, ORIGIN "2", err, sizeof(err)) == 0);
        CHECK(str_eq(kubeconfig_current_context(kc), kubeconfig_current_context(kc2)));
        resolve_both(kc, kc2, NULL);
        resolve_both(kc, kc2, "x");
    }
    kubeconfig_free(kc2);
    kubeconfig_free(kc);

    rc = execcred_parse(buf, size, "client.authentication.k8s.io/v1", &cred, err, sizeof(err));
    CHECK(rc == 0 || rc == -EPROTO);
    if (rc == 0) {
        CHECK(cred.token || (cred.cert_pem && cred.key_pem));
    } else {
        CHECK(err[0] != '\0' && !cred.token && !cred.cert_pem);
    }
    execcred_cred_fini(&cred);
    free(buf);
    return 0;
}
