/*
 * test_tls.c - the downstream TLS of http_server (tls.h) on 127.0.0.1:0 with certificates
 * made by the openssl CLI in a mkdtemp directory: client certificate identities (CN, every
 * O, verified against the client CA, absent, foreign), a certificate wins over a bearer
 * token through the gate, and the serving certificate re-read when its files change while a
 * connection made before the change keeps working.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <curl/curl.h>

#include "cache/sbuf.h"
#include "proxy/http_server.h"
#include "proxy/identity.h"

static char dir[64];

static void sh(const char *fmt, const char *a)
{
    char cmd[2048];

    snprintf(cmd, sizeof(cmd), fmt, a, a, a, a, a, a, a, a);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* ca, ca2 (foreign), server (CN=s1), server2 (CN=s2), alice (CN=alice, O=devs, O=ops),
 * carol (CN=first, O=ops, CN=carol, O=devs: two of each), mallory (signed by ca2). */
static void make_certs(void)
{
    snprintf(dir, sizeof(dir), "/tmp/kwp-tls-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    sh("cd %s && for c in ca ca2; do openssl req -x509 -newkey rsa:2048 -nodes -keyout $c.key "
       "-out $c.pem -days 2 -subj /CN=$c 2>/dev/null || exit 1; done",
       dir);
    sh("cd %s && printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext && for s in s1 s2; do "
       "openssl req -newkey rsa:2048 -nodes -keyout $s.key -out $s.csr -subj /CN=$s 2>/dev/null "
       "&& openssl x509 -req -in $s.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $s.pem "
       "-days 2 -extfile san.ext 2>/dev/null || exit 1; done",
       dir);
    sh("cd %s && openssl req -newkey rsa:2048 -nodes -keyout alice.key -out alice.csr "
       "-subj /O=devs/O=ops/CN=alice 2>/dev/null && openssl x509 -req -in alice.csr -CA ca.pem "
       "-CAkey ca.key -CAcreateserial -out alice.pem -days 2 2>/dev/null && openssl req -newkey "
       "rsa:2048 -nodes -keyout mallory.key -out mallory.csr -subj /CN=mallory 2>/dev/null && "
       "openssl x509 -req -in mallory.csr -CA ca2.pem -CAkey ca2.key -CAcreateserial -out "
       "mallory.pem -days 2 2>/dev/null && cp s1.pem serve.pem && cp s1.key serve.key",
       dir);
    sh("cd %s && openssl req -newkey rsa:2048 -nodes -keyout carol.key -out carol.csr "
       "-subj /CN=first/O=ops/CN=carol/O=devs 2>/dev/null && openssl x509 -req -in carol.csr "
       "-CA ca.pem -CAkey ca.key -CAcreateserial -out carol.pem -days 2 2>/dev/null",
       dir);
}

static void rm_certs(void)
{
    sh("rm -rf %s", dir);
}

static void handle(void *app, struct http_req *req)
{
    struct identity *id = NULL;
    struct sbuf b = {0};
    int rc = http_req_client_identity(req, &id);

    (void)app;
    if (rc == 0) {
        sbuf_str(&b, id->user);
        for (size_t i = 0; i < id->n_groups; i++) {
            sbuf_printf(&b, ",%s", id->groups[i]);
        }
    } else {
        sbuf_printf(&b, "rc=%d", rc);
    }
    http_reply(req, 200, "text/plain", b.p, b.len);
    identity_free(id);
    sbuf_free(&b);
}

static size_t on_body(char *d, size_t s, size_t n, void *ud)
{
    sbuf_put(ud, d, s * n);
    return s * n;
}

/* GET / over https as <client> (NULL: no certificate) on handle <c> (NULL: a new one, freed
 * here). Returns the body (caller frees) and the server certificate's subject in <subject>. */
static char *get(CURL *c, const struct http_server *srv, const char *client, char *subject,
                 size_t cap)
{
    struct sbuf b = {0};
    char path[256];
    CURL *e = c ? c : curl_easy_init();
    struct curl_certinfo *ci = NULL;

    curl_easy_setopt(e, CURLOPT_URL, http_server_url(srv));
    snprintf(path, sizeof(path), "%s/ca.pem", dir);
    curl_easy_setopt(e, CURLOPT_CAINFO, path);
    if (client) {
        snprintf(path, sizeof(path), "%s/%s.pem", dir, client);
        curl_easy_setopt(e, CURLOPT_SSLCERT, path);
        snprintf(path, sizeof(path), "%s/%s.key", dir, client);
        curl_easy_setopt(e, CURLOPT_SSLKEY, path);
    }
    curl_easy_setopt(e, CURLOPT_CERTINFO, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 10000L);
    cr_assert_eq(curl_easy_perform(e), CURLE_OK);
    if (subject) {
        subject[0] = '\0';
        curl_easy_getinfo(e, CURLINFO_CERTINFO, &ci);
        for (struct curl_slist *s = ci && ci->num_of_certs > 0 ? ci->certinfo[0] : NULL; s;
             s = s->next) {
            if (strncmp(s->data, "Subject:", 8) == 0) {
                snprintf(subject, cap, "%s", s->data + 8);
            }
        }
    }
    if (!c) {
        curl_easy_cleanup(e);
    }
    sbuf_put(&b, "", 0);
    return b.p;
}

static struct http_server *start(bool client_ca)
{
    char cert[128], key[128], ca[128], err[256];
    struct http_server_opts o = {
        .listen = "127.0.0.1:0", .max_connections = 16, .tls_cert_file = cert, .tls_key_file = key};
    struct http_server *srv;

    snprintf(cert, sizeof(cert), "%s/serve.pem", dir);
    snprintf(key, sizeof(key), "%s/serve.key", dir);
    snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
    o.client_ca_file = client_ca ? ca : NULL;
    srv = http_server_start(&o, handle, NULL, err, sizeof(err));
    cr_assert_not_null(srv, "%s", err);
    return srv;
}

Test(tls, client_certificate_identity, .timeout = 60)
{
    struct http_server *srv;
    char *b;

    make_certs();
    srv = start(true);
    b = get(NULL, srv, "alice", NULL, 0);
    cr_assert_str_eq(b, "alice,devs,ops,system:authenticated");
    free(b);
    /* Go's pkix.Name: the last CN is the user, every O a group in subject order */
    b = get(NULL, srv, "carol", NULL, 0);
    cr_assert_str_eq(b, "carol,ops,devs,system:authenticated");
    free(b);
    b = get(NULL, srv, NULL, NULL, 0);
    cr_assert_str_eq(b, "rc=-2"); /* -ENOENT: no certificate */
    free(b);
    b = get(NULL, srv, "mallory", NULL, 0);
    cr_assert_str_eq(b, "rc=-13"); /* -EACCES: another CA signed it */
    free(b);
    http_server_stop(srv);
    /* without --client-ca-file no certificate counts */
    srv = start(false);
    b = get(NULL, srv, "alice", NULL, 0);
    cr_assert_str_eq(b, "rc=-2");
    free(b);
    http_server_stop(srv);
    rm_certs();
}

Test(tls, serving_certificate_is_reread_when_it_changes, .timeout = 60)
{
    struct http_server *srv;
    CURL *kept = curl_easy_init();
    char subject[256];
    char *b;

    make_certs();
    srv = start(false);
    b = get(kept, srv, NULL, subject, sizeof(subject));
    free(b);
    cr_assert(strstr(subject, "CN = s1") || strstr(subject, "CN=s1"), "%s", subject);
    sh("cd %s && cp s2.key serve.key.new && cp s2.pem serve.pem.new && mv serve.key.new serve.key "
       "&& mv serve.pem.new serve.pem",
       dir);
    usleep(1200 * 1000); /* TLS_RELOAD_CHECK_MS */
    b = get(NULL, srv, NULL, subject, sizeof(subject));
    free(b);
    cr_assert(strstr(subject, "CN = s2") || strstr(subject, "CN=s2"), "%s", subject);
    /* the connection made before the change still answers */
    b = get(kept, srv, NULL, NULL, 0);
    cr_assert_str_eq(b, "rc=-2");
    free(b);
    curl_easy_cleanup(kept);
    http_server_stop(srv);
    rm_certs();
}
