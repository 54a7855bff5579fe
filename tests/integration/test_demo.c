/*
 * test_demo.c - `kwp demo` on 127.0.0.1:0, the real binary: by default no auth over plain
 * http (as it always was); with --auth delegated the demo users it prints (tokens read back
 * from its banner) over https verified with the demo's CA: alice's allowed reads (200), bob
 * and alice outside her namespace denied with kube-apiserver's exact 403 bodies (AUTH.md 4),
 * no credentials and an unknown token 401 (AUTH.md 3), carol's client certificate allowed
 * and denied, the private directory 0700 with 0600 files while it runs and gone after it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <curl/curl.h>

#include "tests/support/http.h"
#include "tests/support/nap.h"
#include "tests/support/proc.h"
#include "tests/support/srv.h"

#define T_TIMEOUT 60
#define REQ_MS 20000

#define BODY_401                                                                                   \
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","           \
    "\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}\n"
#define FORBID_HEAD                                                                                \
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
#define FORBID_LIST(user, res, where)                                                              \
    FORBID_HEAD "\"message\":\"" res " is forbidden: User \\\"" user "\\\" cannot list resource "  \
                "\\\"" res "\\\" in API group \\\"\\\" " where "\",\"reason\":\"Forbidden\","      \
                "\"details\":{\"kind\":\"" res "\"},\"code\":403}\n"

/* What the banner printed: the demo directory and the tokens. */
struct banner {
    char dir[256];
    char alice[128], bob[128], admin[128];
};

/* The word after <key> on the banner line holding it, into <out>. */
static bool banner_word(const char *text, const char *key, char *out, size_t cap)
{
    const char *p = strstr(text, key);
    size_t n;

    if (p == NULL) {
        return false;
    }
    p += strlen(key);
    n = strcspn(p, " ,)\n");
    if (n == 0 || n >= cap) {
        return false;
    }
    memcpy(out, p, n);
    out[n] = '\0';
    return true;
}

/* Reads the banner from the demo's stdout log: its last line is the 401 example; 5 s bound. */
static void banner_read(const struct proc *p, struct banner *b)
{
    char text[16384];

    for (int i = 0; i < 50; i++) {
        FILE *f = fopen(proc_stdout_path(p), "r");
        size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;

        if (f) {
            fclose(f);
        }
        text[n] = '\0';
        if (strstr(text, "no credentials: 401\n") != NULL) {
            cr_assert(banner_word(text, "users (files in ", b->dir, sizeof(b->dir)), "%s", text);
            cr_assert(banner_word(text, "alice  token ", b->alice, sizeof(b->alice)), "%s", text);
            cr_assert(banner_word(text, "bob    token ", b->bob, sizeof(b->bob)), "%s", text);
            cr_assert(banner_word(text, "admin  token ", b->admin, sizeof(b->admin)), "%s", text);
            return;
        }
        nap(100);
    }
    cr_assert_fail("no complete banner within 5 s: %s", text);
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
    struct http_resp *r = ctx;
    size_t add = size * n;

    r->body = realloc(r->body, r->body_len + add + 1);
    cr_assert_not_null(r->body);
    memcpy(r->body + r->body_len, p, add);
    r->body_len += add;
    r->body[r->body_len] = '\0';
    return add;
}

/* GET <url><path> over https verified with the demo's ca.crt, with bearer <token> and client
 * certificate <cert> (its .crt and .key in the demo directory), either NULL. */
static void get(const char *url, const struct banner *b, const char *token, const char *cert,
                const char *path, struct http_resp *r)
{
    char full[512], ca[300], crt[300], key[300], auth[256];
    struct curl_slist *h = NULL;
    CURL *c = curl_easy_init();
    CURLcode rc;

    memset(r, 0, sizeof(*r));
    snprintf(full, sizeof(full), "%s%s", url, path);
    curl_easy_setopt(c, CURLOPT_URL, full);
    if (strncmp(url, "https://", 8) == 0) {
        snprintf(ca, sizeof(ca), "%s/ca.crt", b->dir);
        curl_easy_setopt(c, CURLOPT_CAINFO, ca);
    }
    if (cert) {
        snprintf(crt, sizeof(crt), "%s/%s.crt", b->dir, cert);
        snprintf(key, sizeof(key), "%s/%s.key", b->dir, cert);
        curl_easy_setopt(c, CURLOPT_SSLCERT, crt);
        curl_easy_setopt(c, CURLOPT_SSLKEY, key);
    }
    h = curl_slist_append(h, "User-Agent: " HTTP_USER_AGENT);
    h = curl_slist_append(h, "Accept: application/json");
    if (token) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)REQ_MS);
    rc = curl_easy_perform(c);
    cr_assert_eq(rc, CURLE_OK, "GET %s: %s", full, curl_easy_strerror(rc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->code);
    if (r->body == NULL) {
        r->body = calloc(1, 1);
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

static void expect(const char *url, const struct banner *b, const char *token, const char *cert,
                   const char *path, long code, const char *body)
{
    struct http_resp r;

    get(url, b, token, cert, path, &r);
    cr_assert_eq(r.code, code, "GET %s as %s: %ld, want %ld: %s", path,
                 token  ? token
                 : cert ? cert
                        : "nobody",
                 r.code, code, r.body);
    if (body) {
        cr_assert_str_eq(r.body, body, "GET %s", path);
    } else {
        cr_assert(strstr(r.body, "\"kind\":\"") != NULL && strstr(r.body, "\"items\":[") != NULL,
                  "GET %s: %s", path, r.body);
    }
    http_resp_free(&r);
}

static void expect_mode(const char *dir, const char *name, unsigned mode)
{
    char p[300];
    struct stat st;

    snprintf(p, sizeof(p), "%s/%s", dir, name);
    cr_assert_eq(lstat(p, &st), 0, "%s: %s", p, strerror(errno));
    cr_assert_eq(st.st_mode & 0777, mode, "%s: mode %o", p, st.st_mode & 0777);
}

Test(demo, default_is_no_auth_over_http, .timeout = T_TIMEOUT)
{
    char url[256];
    struct proc *p =
        proc_spawn_kwp("demo", ARGS("--objects", "5", "--churn", "0"), NULL, url, sizeof(url));
    struct banner none;

    memset(&none, 0, sizeof(none));
    cr_assert_not_null(p);
    cr_assert(strncmp(url, "http://", 7) == 0, "%s", url);
    expect(url, &none, NULL, NULL, "/api/v1/namespaces/default/pods", 200, NULL);
    cr_assert_eq(proc_stop(p), 0);
}

Test(demo, delegated_auth_users, .timeout = T_TIMEOUT)
{
    char url[256];
    struct proc *p =
        proc_spawn_kwp("demo", ARGS("--auth", "delegated", "--objects", "5", "--churn", "0"), NULL,
                       url, sizeof(url));
    struct banner b;
    struct stat st;
    char ca_key[300];

    cr_assert_not_null(p);
    cr_assert(strncmp(url, "https://127.0.0.1:", 18) == 0, "%s", url);
    banner_read(p, &b);
    cr_assert_eq(lstat(b.dir, &st), 0, "%s", b.dir);
    cr_assert_eq(st.st_mode & 0777, 0700, "%s: mode %o", b.dir, st.st_mode & 0777);
    expect_mode(b.dir, "tokens.csv", 0600);
    expect_mode(b.dir, "carol.key", 0600);
    expect_mode(b.dir, "server.key", 0600);
    expect_mode(b.dir, "kubeconfig", 0600);
    /* the CA's key is never written */
    snprintf(ca_key, sizeof(ca_key), "%s/ca.key", b.dir);
    cr_assert(access(ca_key, F_OK) != 0, "%s exists", ca_key);

    /* alice: pods and configmaps in default */
    expect(url, &b, b.alice, NULL, "/api/v1/namespaces/default/pods", 200, NULL);
    expect(url, &b, b.alice, NULL, "/api/v1/namespaces/default/pods?resourceVersion=0", 200, NULL);
    expect(url, &b, b.alice, NULL, "/api/v1/namespaces/default/configmaps", 200, NULL);
    expect(url, &b, b.alice, NULL, "/api/v1/namespaces/ns-1/pods", 403,
           FORBID_LIST("alice", "pods", "in the namespace \\\"ns-1\\\""));
    expect(url, &b, b.alice, NULL, "/api/v1/pods", 403,
           FORBID_LIST("alice", "pods", "at the cluster scope"));
    /* bob: nothing but discovery */
    expect(url, &b, b.bob, NULL, "/api/v1/namespaces/default/pods", 403,
           FORBID_LIST("bob", "pods", "in the namespace \\\"default\\\""));
    /* admin: everything */
    expect(url, &b, b.admin, NULL, "/api/v1/nodes", 200, NULL);
    /* no credentials, a token nobody holds */
    expect(url, &b, NULL, NULL, "/api/v1/namespaces/default/pods", 401, BODY_401);
    expect(url, &b, "alice-00000000000000000000000000000000", NULL,
           "/api/v1/namespaces/default/pods", 401, BODY_401);
    /* carol's client certificate (O=viewers): pods everywhere, no configmaps; it wins over
     * bob's token */
    expect(url, &b, NULL, "carol", "/api/v1/pods", 200, NULL);
    expect(url, &b, b.bob, "carol", "/api/v1/namespaces/default/pods", 200, NULL);
    expect(url, &b, NULL, "carol", "/api/v1/namespaces/default/configmaps", 403,
           FORBID_LIST("carol", "configmaps", "in the namespace \\\"default\\\""));
    /* the server certificate is not a client certificate */
    expect(url, &b, NULL, "server", "/api/v1/pods", 401, BODY_401);

    cr_assert_eq(proc_stop(p), 0);
    cr_assert_eq(lstat(b.dir, &st), -1, "%s is left behind", b.dir);
}
