/*
 * test_kubeconfig.c - proxy/kubeconfig.h, black-box: clientcmd's merge rules over several
 * files (first file wins per name, current-context from the first that sets one), context
 * selection and its errors, paths resolved against the naming file's directory, -data decoded,
 * the validation errors kubectl gives, auth-provider refused, invalid YAML with its line, every
 * cap, the in-cluster config from a temporary root, and the whole --kubeconfig / $KUBECONFIG /
 * ~/.kube/config / in-cluster lookup. Files live in a fresh mkdtemp directory per test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proxy/kubeconfig.h"

static char dir[256];
static char err[1024];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/kwp-kubeconfig-XXXXXX");
    cr_assert(mkdtemp(dir) != NULL);
    err[0] = '\0';
}

static void teardown(void)
{
    char cmd[300];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    (void)!system(cmd);
}

TestSuite(kubeconfig, .init = setup, .fini = teardown, .timeout = 60);

/* Writes <text> to <dir>/<name> (creating subdirectories) and returns the path (static). */
static const char *put(const char *name, const char *text)
{
    static char path[8][512];
    static int slot;
    char *p = path[slot++ % 8];
    char *slash;
    FILE *f;

    snprintf(p, 512, "%s/%s", dir, name);
    for (slash = strchr(p + strlen(dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        mkdir(p, 0700);
        *slash = '/';
    }
    f = fopen(p, "w");
    cr_assert(f != NULL, "cannot write %s", p);
    fputs(text, f);
    fclose(f);
    return p;
}

/* Adds YAML text as a file named <dir>/<name> (not written to disk). */
static int add(struct kubeconfig *kc, const char *name, const char *yaml)
{
    char origin[512];

    snprintf(origin, sizeof(origin), "%s/%s", dir, name);
    return kubeconfig_add_buffer(kc, yaml, strlen(yaml), origin, err, sizeof(err));
}

/* One file with cluster <c> (server <s>), user <u> (token <t>) and context <x>. */
static char *one(const char *c, const char *s, const char *u, const char *t, const char *x,
                 const char *current)
{
    static char buf[4][1024];
    static int slot;
    char *b = buf[slot++ % 4];

    snprintf(b, 1024,
             "apiVersion: v1\nkind: Config\n%s%s%s"
             "clusters:\n- name: %s\n  cluster:\n    server: %s\n"
             "users:\n- name: %s\n  user:\n    token: %s\n"
             "contexts:\n- name: %s\n  context:\n    cluster: %s\n    user: %s\n",
             current ? "current-context: " : "", current ? current : "", current ? "\n" : "", c, s,
             u, t, x, c, u);
    return b;
}

static struct kubeconfig_target *resolve_ok(struct kubeconfig *kc, const char *context)
{
    struct kubeconfig_target *t = NULL;
    int rc = kubeconfig_resolve(kc, context, &t, err, sizeof(err));

    cr_assert_eq(rc, 0, "resolve: %d %s", rc, err);
    cr_assert(t != NULL);
    return t;
}

static int resolve_err(struct kubeconfig *kc, const char *context)
{
    struct kubeconfig_target *t = (void *)1;
    int rc = kubeconfig_resolve(kc, context, &t, err, sizeof(err));

    cr_assert_neq(rc, 0);
    cr_assert_null(t);
    return rc;
}

/* Resolves the single context "x" of one file <yaml> and returns the error (0 if none). */
static int resolve_one(const char *yaml, struct kubeconfig_target **out)
{
    struct kubeconfig *kc = kubeconfig_new();
    int rc = add(kc, "config", yaml);

    if (rc == 0) {
        rc = kubeconfig_resolve(kc, "x", out, err, sizeof(err));
    }
    kubeconfig_free(kc);
    return rc;
}

/* ---- merging ------------------------------------------------------------------------------ */

Test(kubeconfig, first_file_wins_for_clusters_users_and_contexts)
{
    struct kubeconfig *kc = kubeconfig_new();
    struct kubeconfig_target *t;

    cr_assert_eq(add(kc, "a", one("c", "https://a:1", "u", "tok-a", "x", NULL)), 0, "%s", err);
    cr_assert_eq(add(kc, "b", one("c", "https://b:2", "u", "tok-b", "x", "x")), 0, "%s", err);
    t = resolve_ok(kc, NULL);
    cr_assert_str_eq(t->server, "https://a:1");
    cr_assert_str_eq(t->token, "tok-a");
    cr_assert_str_eq(t->context, "x");
    cr_assert(strstr(t->source, "/a") != NULL, "context from the first file: %s", t->source);
    kubeconfig_target_free(t);
    kubeconfig_free(kc);
}

Test(kubeconfig, entries_merge_whole_not_field_by_field)
{
    struct kubeconfig *kc = kubeconfig_new();
    struct kubeconfig_target *t;

    /* b's cluster "c" has a CA and tls-server-name; a's "c" wins whole, so neither applies */
    cr_assert_eq(add(kc, "a", "clusters:\n- name: c\n  cluster:\n    server: https://a\n"), 0);
    cr_assert_eq(add(kc, "b",
                     "clusters:\n- name: c\n  cluster:\n    server: https://b\n"
                     "    tls-server-name: b.example\n"
                     "users:\n- name: u\n  user: {token: t}\n"
                     "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"),
                 0, "%s", err);
    t = resolve_ok(kc, "x");
    cr_assert_str_eq(t->server, "https://a");
    cr_assert_null(t->tls_server_name);
    kubeconfig_target_free(t);
    kubeconfig_free(kc);
}

Test(kubeconfig, later_files_add_names_the_first_lacks)
{
    struct kubeconfig *kc = kubeconfig_new();
    struct kubeconfig_target *t;

    cr_assert_eq(add(kc, "a", one("c1", "https://one", "u1", "t1", "x1", "x2")), 0);
    cr_assert_eq(add(kc, "b", one("c2", "https://two", "u2", "t2", "x2", "x1")), 0);
    cr_assert_str_eq(kubeconfig_current_context(kc), "x2");
    t = resolve_ok(kc, NULL);
    cr_assert_str_eq(t->server, "https://two");
    cr_assert_str_eq(t->token, "t2");
    kubeconfig_target_free(t);
    t = resolve_ok(kc, "x1");
    cr_assert_str_eq(t->server, "https://one");
    kubeconfig_target_free(t);
    kubeconfig_free(kc);
}

Test(kubeconfig, current_context_from_the_first_file_that_sets_one)
{
    struct kubeconfig *kc = kubeconfig_new();

    cr_assert_eq(add(kc, "a", one("c", "https://a", "u", "t", "a", NULL)), 0);
    cr_assert_null(kubeconfig_current_context(kc));
    cr_assert_eq(add(kc, "b", "current-context: \"\"\n"), 0); /* empty: not set */
    cr_assert_null(kubeconfig_current_context(kc));
    cr_assert_eq(add(kc, "c", one("c", "https://c", "u", "t", "b", "b")), 0);
    cr_assert_eq(add(kc, "d", one("c", "https://d", "u", "t", "a", "a")), 0);
    cr_assert_str_eq(kubeconfig_current_context(kc), "b");
    kubeconfig_free(kc);
}

Test(kubeconfig, list_skips_missing_files_and_repeats)
{
    struct kubeconfig *kc = kubeconfig_new();
    struct kubeconfig_target *t;
    const char *a = put("a.yaml", one("c", "https://a", "u", "ta", "x", NULL));
    const char *b = put("b.yaml", one("c", "https://b", "u", "tb", "y", "y"));
    char list[2048];

    snprintf(list, sizeof(list), "%s/missing.yaml::%s:%s:%s", dir, b, a, b);
    cr_assert_eq(kubeconfig_add_list(kc, list, err, sizeof(err)), 0, "%s", err);
    t = resolve_ok(kc, NULL);
    cr_assert_str_eq(t->context, "y");
    cr_assert_str_eq(t->server, "https://b"); /* b came first in the list */
    kubeconfig_target_free(t);
    t = resolve_ok(kc, "x");
    cr_assert_str_eq(t->server, "https://b");
    cr_assert_str_eq(t->token, "tb");
    kubeconfig_target_free(t);
    kubeconfig_free(kc);
}

Test(kubeconfig, list_stops_at_an_invalid_file)
{
    struct kubeconfig *kc = kubeconfig_new();
    const char *a = put("a.yaml", one("c", "https://a", "u", "ta", "x", NULL));
    const char *bad = put("bad.yaml", "clusters: {\n");
    char list[2048];

    snprintf(list, sizeof(list), "%s:%s", a, bad);
    cr_assert_eq(kubeconfig_add_list(kc, list, err, sizeof(err)), -EINVAL);
    cr_assert(strstr(err, "bad.yaml:") != NULL, "%s", err);
    kubeconfig_free(kc);
}

Test(kubeconfig, list_has_a_cap)
{
    struct kubeconfig *kc = kubeconfig_new();
    char list[8192] = "";
    size_t n = 0;

    for (int i = 0; i < KUBECONFIG_MAX_FILES + 1; i++) {
        n += (size_t)snprintf(list + n, sizeof(list) - n, "%s/f%d:", dir, i);
    }
    cr_assert_eq(kubeconfig_add_list(kc, list, err, sizeof(err)), -E2BIG);
    cr_assert(strstr(err, "more than 64 files") != NULL, "%s", err);
    kubeconfig_free(kc);
}

Test(kubeconfig, a_failed_add_changes_nothing)
{
    struct kubeconfig *kc = kubeconfig_new();
    struct kubeconfig_target *t;

    cr_assert_eq(add(kc, "a", one("c", "https://a", "u", "ta", "x", NULL)), 0);
    /* valid clusters, then an error in users: nothing of it may stay */
    cr_assert_eq(add(kc, "b",
                     "current-context: y\nclusters:\n- name: d\n  cluster: {server: https://d}\n"
                     "users: 5\n"),
                 -EINVAL);
    cr_assert(strstr(err, "b:5: users: expected a list") != NULL, "%s", err);
    cr_assert_null(kubeconfig_current_context(kc));
    t = resolve_ok(kc, "x");
    kubeconfig_target_free(t);
    cr_assert_eq(add(kc, "c",
                     "clusters:\n- name: d\n  cluster: {server: https://d2}\n"
                     "contexts:\n- name: y\n  context: {cluster: d, user: u}\n"),
                 0, "%s", err);
    t = resolve_ok(kc, "y");
    cr_assert_str_eq(t->server, "https://d2");
    kubeconfig_target_free(t);
    kubeconfig_free(kc);
}

Test(kubeconfig, duplicate_name_in_one_file)
{
    struct kubeconfig *kc = kubeconfig_new();

    cr_assert_eq(add(kc, "a",
                     "clusters:\n- name: c\n  cluster: {server: https://1}\n"
                     "- name: c\n  cluster: {server: https://2}\n"),
                 -EINVAL);
    cr_assert_str_eq(strstr(err, "a:4:"), "a:4: clusters: duplicate name \"c\"");
    cr_assert(kubeconfig_is_empty(kc));
    kubeconfig_free(kc);
}

Test(kubeconfig, empty_files_are_empty_configs)
{
    struct kubeconfig *kc = kubeconfig_new();

    cr_assert_eq(add(kc, "a", ""), 0);
    cr_assert_eq(add(kc, "b", "# just a comment\n"), 0);
    cr_assert_eq(add(kc, "c", "---\n"), 0);
    cr_assert_eq(add(kc, "d", "apiVersion: v1\nkind: Config\nclusters: []\nusers:\n"), 0);
    cr_assert(kubeconfig_is_empty(kc));
    cr_assert_eq(resolve_err(kc, NULL), -ENOENT);
    cr_assert(strstr(err, "no context chosen") != NULL, "%s", err);
    kubeconfig_free(kc);
}

/* ---- selecting ---------------------------------------------------------------------------- */

Test(kubeconfig, context_flag_overrides_current_context)
{
    struct kubeconfig *kc = kubeconfig_new();
    struct kubeconfig_target *t;

    cr_assert_eq(add(kc, "a", one("c1", "https://one", "u1", "t1", "x1", "x1")), 0);
    cr_assert_eq(add(kc, "b", one("c2", "https://two", "u2", "t2", "x2", NULL)), 0);
    t = resolve_ok(kc, "x2");
    cr_assert_str_eq(t->context, "x2");
    cr_assert_str_eq(t->cluster, "c2");
    cr_assert_str_eq(t->user, "u2");
    cr_assert_str_eq(t->server, "https://two");
    kubeconfig_target_free(t);
    t = resolve_ok(kc, "");
    cr_assert_str_eq(t->context, "x1");
    kubeconfig_target_free(t);
    kubeconfig_free(kc);
}

Test(kubeconfig, missing_context_cluster_or_user)
{
    struct kubeconfig *kc = kubeconfig_new();

    cr_assert_eq(add(kc, "a",
                     "current-context: gone\n"
                     "clusters:\n- name: c\n  cluster: {server: https://c}\n"
                     "users:\n- name: u\n  user: {token: t}\n"
                     "contexts:\n"
                     "- name: nouser\n  context: {cluster: c, user: ghost}\n"
                     "- name: nocluster\n  context: {cluster: void, user: u}\n"
                     "- name: unset\n  context: {cluster: c}\n"),
                 0, "%s", err);
    cr_assert_eq(resolve_err(kc, NULL), -ENOENT);
    cr_assert_str_eq(err, "context was not found for specified context: gone");
    cr_assert_eq(resolve_err(kc, "nope"), -ENOENT);
    cr_assert_str_eq(err, "context was not found for specified context: nope");
    cr_assert_eq(resolve_err(kc, "nouser"), -ENOENT);
    cr_assert_str_eq(err, "user \"ghost\" was not found for context \"nouser\"");
    cr_assert_eq(resolve_err(kc, "nocluster"), -ENOENT);
    cr_assert_str_eq(err, "cluster \"void\" was not found for context \"nocluster\"");
    cr_assert_eq(resolve_err(kc, "unset"), -EINVAL);
    cr_assert_str_eq(err, "user was not specified for context \"unset\"");
    kubeconfig_free(kc);
}

Test(kubeconfig, no_server)
{
    struct kubeconfig_target *t = NULL;

    cr_assert_eq(resolve_one("clusters:\n- name: c\n  cluster: {tls-server-name: x}\n"
                             "users:\n- name: u\n  user: {}\n"
                             "contexts:\n- name: x\n  context: {cluster: c, user: u}\n",
                             &t),
                 -EINVAL);
    cr_assert_str_eq(err, "no server found for cluster \"c\"");
}

/* ---- paths and data ----------------------------------------------------------------------- */

Test(kubeconfig, relative_paths_resolve_against_the_naming_file)
{
    struct kubeconfig *kc = kubeconfig_new();
    struct kubeconfig_target *t;
    char want[600];
    const char *cfg;

    put("kube/pki/ca.crt", "ca");
    put("kube/pki/u.crt", "cert");
    put("other/u.key", "key");
    cfg = put("kube/config", "clusters:\n- name: c\n  cluster:\n    server: https://c\n"
                             "    certificate-authority: pki/ca.crt\n"
                             "users:\n- name: u\n  user:\n"
                             "    client-certificate: ./pki//u.crt\n"
                             "    client-key: ../other/u.key\n"
                             "    tokenFile: token\n"
                             "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
                             "      command: ./bin/plugin\n      interactiveMode: Never\n"
                             "- name: bare\n  user:\n    exec:\n"
                             "      apiVersion: client.authentication.k8s.io/v1beta1\n"
                             "      command: kubelogin\n"
                             "- name: abs\n  user:\n    tokenFile: /var/run/token\n"
                             "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                             "- name: bare\n  context: {cluster: c, user: bare}\n"
                             "- name: abs\n  context: {cluster: c, user: abs}\n");
    cr_assert_eq(kubeconfig_add_file(kc, cfg, false, err, sizeof(err)), 0, "%s", err);
    t = resolve_ok(kc, "x");
    snprintf(want, sizeof(want), "%s/kube/pki/ca.crt", dir);
    cr_assert_str_eq(t->ca_file, want);
    snprintf(want, sizeof(want), "%s/kube/pki/u.crt", dir);
    cr_assert_str_eq(t->client_cert_file, want);
    snprintf(want, sizeof(want), "%s/other/u.key", dir);
    cr_assert_str_eq(t->client_key_file, want);
    snprintf(want, sizeof(want), "%s/kube/token", dir);
    cr_assert_str_eq(t->token_file, want);
    snprintf(want, sizeof(want), "%s/kube/bin/plugin", dir);
    cr_assert_str_eq(t->exec->command, want);
    cr_assert_eq(t->exec->interactive, KUBECONFIG_INTERACTIVE_NEVER);
    kubeconfig_target_free(t);
    t = resolve_ok(kc, "bare");
    cr_assert_str_eq(t->exec->command, "kubelogin"); /* PATH lookup when it runs */
    cr_assert_eq(t->exec->interactive, KUBECONFIG_INTERACTIVE_IF_AVAILABLE);
    kubeconfig_target_free(t);
    t = resolve_ok(kc, "abs");
    cr_assert_str_eq(t->token_file, "/var/run/token");
    kubeconfig_target_free(t);
    kubeconfig_free(kc);
}

Test(kubeconfig, relative_origin_uses_the_working_directory)
{
    struct kubeconfig *kc = kubeconfig_new();
    struct kubeconfig_target *t;
    char old[1024];
    char want[600];
    const char *yaml = "clusters:\n- name: c\n  cluster: {server: https://c}\n"
                       "users:\n- name: u\n  user: {tokenFile: t}\n"
                       "contexts:\n- name: x\n  context: {cluster: c, user: u}\n";

    cr_assert(getcwd(old, sizeof(old)) != NULL);
    put("sub/keep", "");
    cr_assert_eq(chdir(dir), 0);
    cr_assert_eq(kubeconfig_add_buffer(kc, yaml, strlen(yaml), "sub/../sub/cfg", err, sizeof(err)),
                 0, "%s", err);
    cr_assert_eq(chdir(old), 0);
    t = resolve_ok(kc, "x");
    snprintf(want, sizeof(want), "%s/sub/t", dir);
    cr_assert_str_eq(t->token_file, want);
    kubeconfig_target_free(t);
    kubeconfig_free(kc);
}

Test(kubeconfig, data_fields_are_decoded)
{
    struct kubeconfig_target *t = NULL;
    /* "-----BEGIN CERTIFICATE-----\nCA\n" and friends, base64, one wrapped over two lines */
    const char *yaml =
        "clusters:\n- name: c\n  cluster:\n    server: https://c\n"
        "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCg==\n"
        "users:\n- name: u\n  user:\n"
        "    client-certificate-data: |\n      Y2VydA\n      ==\n"
        "    client-key-data: a2V5AA==\n"
        "contexts:\n- name: x\n  context: {cluster: c, user: u}\n";

    cr_assert_eq(resolve_one(yaml, &t), 0, "%s", err);
    cr_assert_eq(t->ca_data_len, 31);
    cr_assert_str_eq(t->ca_data, "-----BEGIN CERTIFICATE-----\nCA\n");
    cr_assert_null(t->ca_file);
    cr_assert_eq(t->client_cert_data_len, 4);
    cr_assert_str_eq(t->client_cert_data, "cert");
    cr_assert_eq(t->client_key_data_len, 4); /* bytes, NUL included: lengths are exact */
    cr_assert_eq(memcmp(t->client_key_data, "key\0", 4), 0);
    kubeconfig_target_free(t);
}

Test(kubeconfig, bad_base64_names_file_line_and_byte)
{
    struct kubeconfig *kc = kubeconfig_new();

    cr_assert_eq(add(kc, "cfg",
                     "clusters:\n- name: c\n  cluster:\n    server: https://c\n"
                     "    certificate-authority-data: \"-----BEGIN CERTIFICATE-----\"\n"),
                 -EINVAL);
    cr_assert(strstr(err, "cfg:5: certificate-authority-data: illegal base64 data at input "
                          "byte 0") != NULL,
              "%s", err);
    cr_assert_eq(add(kc, "cfg", "users:\n- name: u\n  user:\n    client-key-data: abc\n"), -EINVAL);
    cr_assert(strstr(err, "cfg:4: client-key-data: illegal base64") != NULL, "%s", err);
    cr_assert_eq(add(kc, "cfg", "users:\n- name: u\n  user:\n    client-key-data: ab=c\n"),
                 -EINVAL);
    kubeconfig_free(kc);
}

Test(kubeconfig, all_cluster_and_user_fields)
{
    struct kubeconfig_target *t = NULL;
    const char *yaml =
        "clusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1:6443/prefix\n"
        "    insecure-skip-tls-verify: true\n    tls-server-name: api.example\n"
        "    proxy-url: socks5://127.0.0.1:1080\n    disable-compression: yes\n"
        "    extensions:\n    - name: other\n      extension: {a: 1}\n"
        "    - name: client.authentication.k8s.io/exec\n"
        "      extension:\n        audience: \"06e3\"\n        n: 12\n        f: 1.5e3\n"
        "        ok: true\n        nothing: ~\n        list: [x, 'y', 010]\n"
        "users:\n- name: u\n  user:\n    username: alice\n    password: s3cret\n"
        "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: plug\n"
        "      args: [--a, \"\", b c]\n      env:\n      - {name: K1, value: v1}\n"
        "      - name: K2\n      installHint: apt-get install plug\n"
        "      provideClusterInfo: true\n      interactiveMode: IfAvailable\n"
        "contexts:\n- name: x\n  context: {cluster: c, user: u, namespace: ns}\n";

    cr_assert_eq(resolve_one(yaml, &t), 0, "%s", err);
    cr_assert_str_eq(t->server, "https://10.0.0.1:6443/prefix");
    cr_assert(t->insecure);
    cr_assert_str_eq(t->tls_server_name, "api.example");
    cr_assert_str_eq(t->proxy_url, "socks5://127.0.0.1:1080");
    cr_assert(t->disable_compression);
    cr_assert_str_eq(t->exec_cluster_config,
                     "{\"audience\":\"06e3\",\"n\":12,\"f\":1.5e3,\"ok\":true,\"nothing\":null,"
                     "\"list\":[\"x\",\"y\",\"010\"]}");
    cr_assert_null(t->token);
    cr_assert_null(t->token_file);
    cr_assert_str_eq(t->username, "alice");
    cr_assert_str_eq(t->password, "s3cret");
    cr_assert_str_eq(t->exec->api_version, "client.authentication.k8s.io/v1");
    cr_assert_str_eq(t->exec->command, "plug");
    cr_assert_eq(t->exec->args_len, 3);
    cr_assert_str_eq(t->exec->args[0], "--a");
    cr_assert_str_eq(t->exec->args[1], "");
    cr_assert_str_eq(t->exec->args[2], "b c");
    cr_assert_eq(t->exec->env_len, 2);
    cr_assert_str_eq(t->exec->env[0].name, "K1");
    cr_assert_str_eq(t->exec->env[0].value, "v1");
    cr_assert_str_eq(t->exec->env[1].name, "K2");
    cr_assert_str_eq(t->exec->env[1].value, "");
    cr_assert_str_eq(t->exec->install_hint, "apt-get install plug");
    cr_assert(t->exec->provide_cluster_info);
    cr_assert_eq(t->exec->interactive, KUBECONFIG_INTERACTIVE_IF_AVAILABLE);
    kubeconfig_target_free(t);
}

Test(kubeconfig, token_wins_over_token_file)
{
    struct kubeconfig_target *t = NULL;

    cr_assert_eq(resolve_one("clusters:\n- name: c\n  cluster: {server: https://c}\n"
                             "users:\n- name: u\n  user: {token: abc, tokenFile: /tok}\n"
                             "contexts:\n- name: x\n  context: {cluster: c, user: u}\n",
                             &t),
                 0, "%s", err);
    cr_assert_str_eq(t->token, "abc");
    cr_assert_null(t->token_file);
    kubeconfig_target_free(t);
}

Test(kubeconfig, server_without_scheme)
{
    struct kubeconfig_target *t = NULL;

    cr_assert_eq(resolve_one("clusters:\n- name: c\n  cluster: {server: 'c:8080'}\n"
                             "users:\n- name: u\n  user: {}\n"
                             "contexts:\n- name: x\n  context: {cluster: c, user: u}\n",
                             &t),
                 0, "%s", err);
    cr_assert_str_eq(t->server, "http://c:8080");
    kubeconfig_target_free(t);
    cr_assert_eq(resolve_one("clusters:\n- name: c\n  cluster: {server: 'c:6443', "
                             "insecure-skip-tls-verify: true}\n"
                             "users:\n- name: u\n  user: {}\n"
                             "contexts:\n- name: x\n  context: {cluster: c, user: u}\n",
                             &t),
                 0, "%s", err);
    cr_assert_str_eq(t->server, "https://c:6443");
    kubeconfig_target_free(t);
    cr_assert_eq(resolve_one("clusters:\n- name: c\n  cluster: {server: 'ftp://c'}\n"
                             "users:\n- name: u\n  user: {}\n"
                             "contexts:\n- name: x\n  context: {cluster: c, user: u}\n",
                             &t),
                 -EINVAL);
    cr_assert(strstr(err, "the scheme must be http or https") != NULL, "%s", err);
}

/* ---- what kubectl refuses ----------------------------------------------------------------- */

/* <user> is the body of user "u" (flow style); expects resolve to fail with <rc> and <msg>. */
static void refused(const char *cluster, const char *user, int want_rc, const char *msg)
{
    char yaml[2048];
    struct kubeconfig_target *t = NULL;
    int rc;

    snprintf(yaml, sizeof(yaml),
             "clusters:\n- name: c\n  cluster: %s\n"
             "users:\n- name: u\n  user: %s\n"
             "contexts:\n- name: x\n  context: {cluster: c, user: u}\n",
             cluster, user);
    rc = resolve_one(yaml, &t);
    cr_assert_eq(rc, want_rc, "%s: rc %d (%s)", user, rc, err);
    cr_assert_null(t);
    cr_assert(strstr(err, msg) != NULL, "want \"%s\" in \"%s\"", msg, err);
}

Test(kubeconfig, auth_provider_is_a_clear_error)
{
    refused("{server: https://c}", "{auth-provider: {name: gcp, config: {access-token: x}}}",
            -EINVAL, "user \"u\" uses auth-provider \"gcp\", which client-go removed in v1.26");
    refused("{server: https://c}", "{auth-provider: {}}", -EINVAL, "uses auth-provider \"\"");
}

Test(kubeconfig, conflicting_or_incomplete_users)
{
    const char *c = "{server: https://c}";

    refused(c, "{token: t, username: a, password: b}", -EINVAL,
            "more than one authentication method found for u; found [token basicAuth]");
    refused(c, "{client-certificate-data: Y2VydA==}", -EINVAL,
            "client-key-data or client-key must be specified for u");
    refused(c, "{client-certificate: /x, client-certificate-data: Y2VydA==, client-key: /y}",
            -EINVAL, "client-cert-data and client-cert are both specified for u");
    refused(c, "{client-certificate-data: Y2VydA==, client-key: /y, client-key-data: a2V5}",
            -EINVAL, "client-key-data and client-key are both specified for u");
    refused(c, "{client-key-data: a2V5}", -EINVAL, "client-key without client-certificate");
    refused(c, "{client-certificate: /nonexistent/c, client-key-data: a2V5}", -ENOENT,
            "unable to read client-cert /nonexistent/c for u due to No such file");
    refused(c, "{as: bob}", -EINVAL, "impersonation in the kubeconfig (as) is not supported");
    refused(c, "{as-groups: [g]}", -EINVAL, "(as-groups)");
    refused(c, "{exec: {apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never}}",
            -EINVAL, "command must be specified for u to use exec authentication plugin");
    refused(c, "{exec: {command: p, interactiveMode: Never}}", -EINVAL,
            "apiVersion must be specified for u");
    refused(c, "{exec: {command: p, apiVersion: client.authentication.k8s.io/v1alpha1}}", -EINVAL,
            "exec plugin: invalid apiVersion \"client.authentication.k8s.io/v1alpha1\"");
    refused(c, "{exec: {command: p, apiVersion: client.authentication.k8s.io/v1}}", -EINVAL,
            "interactiveMode must be specified for u to use exec authentication plugin");
    refused(c,
            "{exec: {command: p, apiVersion: client.authentication.k8s.io/v1, "
            "interactiveMode: Sometimes}}",
            -EINVAL, "invalid interactiveMode for u: \"Sometimes\"");
}

Test(kubeconfig, conflicting_or_unreadable_clusters)
{
    refused("{server: https://c, certificate-authority: /x, certificate-authority-data: Q0E=}",
            "{}", -EINVAL, "certificate-authority-data and certificate-authority are both");
    refused("{server: https://c, certificate-authority: /nonexistent/ca}", "{}", -ENOENT,
            "unable to read certificate-authority /nonexistent/ca for c due to No such file");
    refused("{server: https://c, insecure-skip-tls-verify: true, certificate-authority-data: "
            "Q0E=}",
            "{}", -EINVAL, "specifying a root certificates file with the insecure flag");
    refused("{server: https://c, proxy-url: 'ftp://p'}", "{}", -EINVAL,
            "proxy-url ftp://p: unsupported scheme, must be http, https, or socks5");
}

Test(kubeconfig, always_interactive_resolves_for_execcred_to_refuse)
{
    struct kubeconfig_target *t = NULL;

    cr_assert_eq(resolve_one("clusters:\n- name: c\n  cluster: {server: https://c}\n"
                             "users:\n- name: u\n  user: {exec: {command: p, apiVersion: "
                             "client.authentication.k8s.io/v1, interactiveMode: Always}}\n"
                             "contexts:\n- name: x\n  context: {cluster: c, user: u}\n",
                             &t),
                 0, "%s", err);
    cr_assert_eq(t->exec->interactive, KUBECONFIG_INTERACTIVE_ALWAYS);
    kubeconfig_target_free(t);
}

/* ---- invalid input ------------------------------------------------------------------------ */

Test(kubeconfig, bad_yaml_gives_file_and_line)
{
    struct kubeconfig *kc = kubeconfig_new();

    cr_assert_eq(
        add(kc, "broken", "clusters:\n- name: c\n  cluster:\n    server: https://c\n   bad: [\n"),
        -EINVAL);
    cr_assert(strstr(err, "/broken:5:") != NULL, "%s", err);
    cr_assert(strstr(err, "invalid YAML") != NULL, "%s", err);
    cr_assert_eq(add(kc, "tabs", "clusters:\n\t- name: c\n"), -EINVAL);
    cr_assert(strstr(err, "/tabs:2:") != NULL, "%s", err);
    cr_assert_eq(add(kc, "alias", "clusters: *nope\n"), -EINVAL);
    cr_assert(strstr(err, "/alias:1:") != NULL, "%s", err);
    cr_assert_eq(add(kc, "utf8", "clusters:\n- name: \"\xff\"\n"), -EINVAL);
    cr_assert(strstr(err, "/utf8:2:") != NULL, "%s", err);
    cr_assert(kubeconfig_is_empty(kc));
    kubeconfig_free(kc);
}

Test(kubeconfig, wrong_types_give_file_and_line)
{
    struct kubeconfig *kc = kubeconfig_new();

    cr_assert_eq(add(kc, "f", "- a\n- b\n"), -EINVAL);
    cr_assert(strstr(err, "f:1: expected a mapping (a kubeconfig) at the top level") != NULL, "%s",
              err);
    cr_assert_eq(add(kc, "f", "clusters:\n  c: {server: x}\n"), -EINVAL);
    cr_assert(strstr(err, "f:2: clusters: expected a list") != NULL, "%s", err);
    cr_assert_eq(add(kc, "f", "clusters:\n- name: c\n  cluster:\n    server: [a]\n"), -EINVAL);
    cr_assert(strstr(err, "f:4: server: expected a string") != NULL, "%s", err);
    cr_assert_eq(
        add(kc, "f", "clusters:\n- name: c\n  cluster:\n    insecure-skip-tls-verify: \"true\"\n"),
        -EINVAL);
    cr_assert(strstr(err, "f:4: insecure-skip-tls-verify: expected true or false") != NULL, "%s",
              err);
    cr_assert_eq(add(kc, "f", "clusters:\n- name: c\n  cluster:\n    server: a\n    server: b\n"),
                 -EINVAL);
    cr_assert(strstr(err, "f:5: cluster: key \"server\" given twice") != NULL, "%s", err);
    cr_assert_eq(add(kc, "f", "users:\n- name: u\n  user:\n    token: \"a\\0b\"\n"), -EINVAL);
    cr_assert(strstr(err, "f:4: token: contains a NUL byte") != NULL, "%s", err);
    cr_assert_eq(add(kc, "f", "users:\n- name: u\n  user:\n    exec: {env: [{value: x}]}\n"),
                 -EINVAL);
    cr_assert(strstr(err, "exec.env[]: name is empty") != NULL, "%s", err);
    cr_assert_eq(add(kc, "f", "users:\n- x\n"), -EINVAL);
    cr_assert(strstr(err, "f:2: users[]: expected a mapping with name and user") != NULL, "%s",
              err);
    cr_assert(kubeconfig_is_empty(kc));
    kubeconfig_free(kc);
}

Test(kubeconfig, oversize_input)
{
    struct kubeconfig *kc = kubeconfig_new();
    size_t big = KUBECONFIG_MAX_FILE_BYTES + 1;
    char *buf = malloc(big + 64);
    const char *path;
    FILE *f;

    memset(buf, ' ', big);
    buf[big] = '\0';
    cr_assert_eq(kubeconfig_add_buffer(kc, buf, big, "mem", err, sizeof(err)), -EFBIG);
    cr_assert(strstr(err, "mem: larger than") != NULL, "%s", err);
    path = put("big", "");
    f = fopen(path, "w");
    fwrite(buf, 1, big, f);
    fclose(f);
    cr_assert_eq(kubeconfig_add_file(kc, path, false, err, sizeof(err)), -EFBIG);
    cr_assert(strstr(err, "larger than 8388608 bytes") != NULL, "%s", err);

    /* one string past KUBECONFIG_MAX_STRING */
    memcpy(buf, "users:\n- name: u\n  user:\n    token: ", 36);
    memset(buf + 36, 'a', KUBECONFIG_MAX_STRING + 1);
    buf[36 + KUBECONFIG_MAX_STRING + 1] = '\n';
    cr_assert_eq(
        kubeconfig_add_buffer(kc, buf, 36 + KUBECONFIG_MAX_STRING + 2, "mem", err, sizeof(err)),
        -EFBIG);
    cr_assert(strstr(err, "mem:4: token: longer than 1048576 bytes") != NULL, "%s", err);

    /* nesting */
    memset(buf, '[', 100);
    cr_assert_eq(kubeconfig_add_buffer(kc, buf, 100, "mem", err, sizeof(err)), -EFBIG);
    cr_assert(strstr(err, "nested more than 64 levels deep") != NULL, "%s", err);

    /* nodes: a flat list of 600000 scalars */
    buf[0] = '[';
    for (size_t i = 0; i < 600000; i++) {
        memcpy(buf + 1 + 2 * i, "a,", 2);
    }
    buf[1 + 2 * 600000 - 1] = ']';
    cr_assert_eq(kubeconfig_add_buffer(kc, buf, 2 * 600000, "mem", err, sizeof(err)), -EFBIG);
    cr_assert(strstr(err, "mem:1: YAML has more than 500000 nodes") != NULL, "%s", err);
    cr_assert(kubeconfig_is_empty(kc));
    free(buf);
    kubeconfig_free(kc);
}

Test(kubeconfig, too_many_entries)
{
    struct kubeconfig *kc = kubeconfig_new();
    size_t cap = 64 + 32 * (KUBECONFIG_MAX_ENTRIES + 1);
    char *buf = malloc(cap);
    size_t n = (size_t)snprintf(buf, cap, "contexts:\n");

    for (int i = 0; i <= KUBECONFIG_MAX_ENTRIES; i++) {
        n += (size_t)snprintf(buf + n, cap - n, "- {name: c%d}\n", i);
    }
    cr_assert_eq(kubeconfig_add_buffer(kc, buf, n, "mem", err, sizeof(err)), -EFBIG);
    cr_assert(strstr(err, "mem:2: contexts: more than 4096 entries") != NULL, "%s", err);

    /* two files of 3000 each: the merge is capped too */
    for (int file = 0; file < 2; file++) {
        n = (size_t)snprintf(buf, cap, "contexts:\n");
        for (int i = 0; i < 3000; i++) {
            n += (size_t)snprintf(buf + n, cap - n, "- {name: f%d-%d}\n", file, i);
        }
        if (file == 0) {
            cr_assert_eq(kubeconfig_add_buffer(kc, buf, n, "mem", err, sizeof(err)), 0, "%s", err);
        }
    }
    cr_assert_eq(kubeconfig_add_buffer(kc, buf, n, "mem2", err, sizeof(err)), -EFBIG);
    cr_assert(strstr(err, "more than 4096 clusters, users or contexts") != NULL, "%s", err);
    free(buf);
    kubeconfig_free(kc);
}

Test(kubeconfig, alias_bombs_stop_at_a_cap)
{
    struct kubeconfig *kc = kubeconfig_new();
    /* nine levels of 9x aliases: 387M nodes if expanded */
    const char *bomb = "x: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
                       "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                       "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                       "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                       "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
                       "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                       "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
                       "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
                       "clusters:\n- name: c\n  cluster:\n    server: https://c\n"
                       "    extensions:\n    - name: client.authentication.k8s.io/exec\n"
                       "      extension: *h\n";
    /* an alias cycle: a sequence holding itself */
    const char *cycle = "clusters:\n- name: c\n  cluster:\n    server: https://c\n"
                        "    extensions:\n    - name: client.authentication.k8s.io/exec\n"
                        "      extension: &l [*l]\n";
    /* one big string repeated through aliases */
    size_t cap = 2 * KUBECONFIG_MAX_STRING;
    char *buf = malloc(cap);
    size_t n;

    cr_assert_eq(add(kc, "bomb", bomb), -EFBIG);
    cr_assert(strstr(err, "aliases") != NULL, "%s", err);
    cr_assert_eq(add(kc, "cycle", cycle), -EFBIG);
    cr_assert(strstr(err, "cycle:7: extension nested too deep (an alias cycle?)") != NULL, "%s",
              err);
    n = (size_t)snprintf(buf, cap, "s: &s ");
    memset(buf + n, 'x', KUBECONFIG_MAX_STRING - 10);
    n += KUBECONFIG_MAX_STRING - 10;
    n += (size_t)snprintf(buf + n, cap - n,
                          "\nusers:\n- name: u\n  user:\n    exec:\n      args: [");
    for (int i = 0; i < 20; i++) {
        n += (size_t)snprintf(buf + n, cap - n, "*s,");
    }
    n += (size_t)snprintf(buf + n, cap - n, "*s]\n");
    cr_assert_eq(kubeconfig_add_buffer(kc, buf, n, "mem", err, sizeof(err)), -EFBIG);
    cr_assert(strstr(err, "bytes of strings (aliases?)") != NULL, "%s", err);
    cr_assert(kubeconfig_is_empty(kc));
    free(buf);
    kubeconfig_free(kc);
}

Test(kubeconfig, files_that_cannot_be_read)
{
    struct kubeconfig *kc = kubeconfig_new();
    char path[600];

    snprintf(path, sizeof(path), "%s/none", dir);
    cr_assert_eq(kubeconfig_add_file(kc, path, true, err, sizeof(err)), 0);
    cr_assert_eq(kubeconfig_add_file(kc, path, false, err, sizeof(err)), -ENOENT);
    cr_assert(strstr(err, "error loading config file") != NULL, "%s", err);
    cr_assert_eq(kubeconfig_add_file(kc, dir, true, err, sizeof(err)), -EISDIR);
    cr_assert(kubeconfig_is_empty(kc));
    kubeconfig_free(kc);
}

/* ---- in-cluster and the whole lookup ------------------------------------------------------ */

Test(kubeconfig, in_cluster_from_a_temporary_root)
{
    struct kubeconfig_target *t = NULL;
    char want[600];

    cr_assert_eq(kubeconfig_incluster(dir, "10.96.0.1", "443", &t, err, sizeof(err)), -ENOENT);
    cr_assert(strstr(err, "cannot read the service account token") != NULL, "%s", err);
    put("var/run/secrets/kubernetes.io/serviceaccount/token", "tok\n");
    cr_assert_eq(kubeconfig_incluster(dir, "10.96.0.1", "443", &t, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(t->server, "https://10.96.0.1:443");
    cr_assert_str_eq(t->source, "in-cluster");
    snprintf(want, sizeof(want), "%s/var/run/secrets/kubernetes.io/serviceaccount/token", dir);
    cr_assert_str_eq(t->token_file, want);
    cr_assert_null(t->token);
    cr_assert_null(t->ca_file);
    cr_assert(t->warning && strstr(t->warning, "system trust store"), "%s", t->warning);
    kubeconfig_target_free(t);

    put("var/run/secrets/kubernetes.io/serviceaccount/ca.crt", "ca");
    cr_assert_eq(kubeconfig_incluster(dir, "fd00:10:96::1", "6443", &t, err, sizeof(err)), 0);
    cr_assert_str_eq(t->server, "https://[fd00:10:96::1]:6443");
    snprintf(want, sizeof(want), "%s/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", dir);
    cr_assert_str_eq(t->ca_file, want);
    cr_assert_null(t->warning);
    kubeconfig_target_free(t);
}

Test(kubeconfig, in_cluster_needs_host_and_port)
{
    struct kubeconfig_target *t = NULL;

    put("var/run/secrets/kubernetes.io/serviceaccount/token", "tok\n");
    cr_assert_eq(kubeconfig_incluster(dir, "", "443", &t, err, sizeof(err)), -ENOENT);
    cr_assert(strstr(err, "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined"));
    cr_assert_eq(kubeconfig_incluster(dir, "h", NULL, &t, err, sizeof(err)), -ENOENT);
    cr_assert_eq(kubeconfig_incluster(dir, "h", "https", &t, err, sizeof(err)), -EINVAL);
    cr_assert_eq(kubeconfig_incluster(dir, "h", "70000", &t, err, sizeof(err)), -EINVAL);
    cr_assert_eq(kubeconfig_incluster(dir, "h", "+443", &t, err, sizeof(err)), -EINVAL);
    cr_assert_eq(kubeconfig_incluster(dir, "h/x", "443", &t, err, sizeof(err)), -EINVAL);
    cr_assert_eq(kubeconfig_incluster(dir, "[::1]", "443", &t, err, sizeof(err)), -EINVAL);
    cr_assert_null(t);
}

Test(kubeconfig, lookup_order)
{
    struct kubeconfig_load_opts o = {.incluster_root = dir};
    struct kubeconfig_target *t = NULL;
    const char *flag = put("flag.yaml", one("c", "https://flag", "u", "t", "x", "x"));
    const char *env = put("env.yaml", one("c", "https://env", "u", "t", "x", "x"));
    char home[600];
    char list[1300];

    snprintf(home, sizeof(home), "%s/home", dir);
    put("home/.kube/config", one("c", "https://home", "u", "t", "x", "x"));
    snprintf(list, sizeof(list), "%s/nothing.yaml:%s", dir, env);
    o.home = home;

    /* --kubeconfig wins over $KUBECONFIG, which wins over ~/.kube/config */
    o.path = flag;
    o.env_list = list;
    cr_assert_eq(kubeconfig_target_load(&o, &t, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(t->server, "https://flag");
    kubeconfig_target_free(t);
    o.path = NULL;
    cr_assert_eq(kubeconfig_target_load(&o, &t, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(t->server, "https://env");
    kubeconfig_target_free(t);
    o.env_list = "";
    cr_assert_eq(kubeconfig_target_load(&o, &t, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(t->server, "https://home");
    kubeconfig_target_free(t);

    /* an explicit file must exist */
    o.path = "/nonexistent/kubeconfig";
    cr_assert_eq(kubeconfig_target_load(&o, &t, err, sizeof(err)), -ENOENT);
    cr_assert(strstr(err, "/nonexistent/kubeconfig") != NULL, "%s", err);
    cr_assert_null(t);
}

Test(kubeconfig, lookup_falls_back_to_in_cluster)
{
    struct kubeconfig_load_opts o = {.incluster_root = dir,
                                     .env_list = "/nonexistent/a:/nonexistent/b",
                                     .service_host = "10.0.0.1",
                                     .service_port = "443"};
    struct kubeconfig_target *t = NULL;

    put("var/run/secrets/kubernetes.io/serviceaccount/token", "tok\n");
    cr_assert_eq(kubeconfig_target_load(&o, &t, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(t->server, "https://10.0.0.1:443");
    cr_assert_str_eq(t->source, "in-cluster");
    kubeconfig_target_free(t);

    /* asking for a context means a kubeconfig is wanted */
    o.context = "prod";
    cr_assert_eq(kubeconfig_target_load(&o, &t, err, sizeof(err)), -ENOENT);
    cr_assert_str_eq(err, "context was not found for specified context: prod");

    /* nothing at all */
    o.context = NULL;
    o.service_host = NULL;
    cr_assert_eq(kubeconfig_target_load(&o, &t, err, sizeof(err)), -ENOENT);
    cr_assert(strstr(err, "no configuration has been provided") != NULL, "%s", err);
    cr_assert_null(t);
}
