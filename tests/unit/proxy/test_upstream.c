/*
 * test_upstream.c - proxy/upstream: what upstream_setup makes a curl handle send, observed on
 * the wire. A plain-HTTP listener in this process records each request's bytes (the request
 * line with base URL + path, the Authorization header, the caller's headers kept); an https
 * server (proxy/http_server with a certificate made here with OpenSSL) shows the TLS options
 * at work: the CA file or in-memory CA verifies the server, a wrong or missing CA fails
 * verification, --insecure-skip-tls-verify connects anyway, a client certificate that cannot
 * be loaded fails the handshake. Token files are re-read when their mtime changes.
 *
 * Everything listens on 127.0.0.1 port 0; files live in a mkdtemp directory.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "proxy/http_server.h"
#include "proxy/upstream.h"

#define REQ_CAP 8192
#define MAX_REQS 8

/* ---- a plain-HTTP listener that records requests -------------------------------------- */

struct recorder {
    int lfd;
    char url[64];
    pthread_t thread;
    int want;                     /* connections to serve, then the thread ends */
    char reqs[MAX_REQS][REQ_CAP]; /* the bytes of each request head */
};

static void *recorder_main(void *arg)
{
    struct recorder *r = arg;
    static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n"
                                "\r\nok";

    for (int i = 0; i < r->want; i++) {
        int c = accept(r->lfd, NULL, NULL);
        size_t len = 0;

        if (c == -1) {
            return NULL;
        }
        while (len + 1 < REQ_CAP && strstr(r->reqs[i], "\r\n\r\n") == NULL) {
            ssize_t k = recv(c, r->reqs[i] + len, REQ_CAP - 1 - len, 0);
            if (k <= 0) {
                break;
            }
            len += (size_t)k;
            r->reqs[i][len] = '\0';
        }
        (void)!send(c, reply, sizeof(reply) - 1, MSG_NOSIGNAL);
        close(c);
    }
    return NULL;
}

/* Starts a recorder serving <want> connections, one after another. */
static struct recorder *recorder_new(int want)
{
    struct recorder *r = calloc(1, sizeof(*r));
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof(sa);

    cr_assert_not_null(r);
    cr_assert_leq(want, MAX_REQS);
    r->want = want;
    r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(r->lfd, 0);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(r->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(listen(r->lfd, 16), 0);
    cr_assert_eq(getsockname(r->lfd, (struct sockaddr *)&sa, &len), 0);
    snprintf(r->url, sizeof(r->url), "http://127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
    cr_assert_eq(pthread_create(&r->thread, NULL, recorder_main, r), 0);
    return r;
}

/* Waits for the recorder to have served all its connections and frees it. */
static void recorder_free(struct recorder *r)
{
    pthread_join(r->thread, NULL);
    close(r->lfd);
    free(r);
}

/* The value of header <name> in request head <req> (copied into <out>), or NULL. */
static const char *header_of(const char *req, const char *name, char *out, size_t cap)
{
    size_t nlen = strlen(name);

    for (const char *l = strstr(req, "\r\n"); l != NULL && l[2] != '\r';
         l = strstr(l + 2, "\r\n")) {
        const char *h = l + 2;
        if (strncasecmp(h, name, nlen) == 0 && h[nlen] == ':') {
            const char *v = h + nlen + 1;
            size_t vlen;
            while (*v == ' ') {
                v++;
            }
            vlen = strcspn(v, "\r\n");
            snprintf(out, cap, "%.*s", (int)vlen, v);
            return out;
        }
    }
    return NULL;
}

/* ---- requests through upstream_setup ------------------------------------------------ */

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
    (void)p;
    (void)ctx;
    return size * n;
}

/* One GET of <path> through upstream_setup on <up>, with <extra> (may be NULL) as a caller's
 * header already in the list. Returns curl's result; the response code in *code. When
 * <effective> is not NULL the URL curl used is copied there. */
static CURLcode get(struct upstream *up, const char *path, const char *extra, long *code,
                    char *effective, size_t cap)
{
    CURL *e = curl_easy_init();
    struct curl_slist *h = NULL;
    CURLcode rc;

    cr_assert_not_null(e);
    if (extra != NULL) {
        h = curl_slist_append(h, extra);
    }
    cr_assert_eq(upstream_setup(up, e, path, &h), 0);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 10000L);
    rc = curl_easy_perform(e);
    *code = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, code);
    if (effective != NULL) {
        char *u = NULL;
        curl_easy_getinfo(e, CURLINFO_EFFECTIVE_URL, &u);
        snprintf(effective, cap, "%s", u ? u : "");
    }
    curl_easy_cleanup(e);
    curl_slist_free_all(h);
    return rc;
}

static struct upstream *up_new(const struct upstream_opts *o)
{
    char err[256] = "";
    struct upstream *up = upstream_new(o, err, sizeof(err));

    cr_assert_not_null(up, "upstream_new: %s", err);
    return up;
}

/* A fresh directory for this test's files. */
static void tmp_dir(char *dir, size_t cap)
{
    snprintf(dir, cap, "%s/kwp-upstream-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

/* Sets the mtime of <path> to <sec> seconds since the epoch (a change the test controls). */
static void set_mtime(const char *path, time_t sec)
{
    struct timespec ts[2] = {{sec, 0}, {sec, 0}};

    cr_assert_eq(utimensat(AT_FDCWD, path, ts, 0), 0, "%s", strerror(errno));
}

/* ---- URLs and construction --------------------------------------------------------- */

Test(upstream, new_wants_an_http_or_https_url)
{
    static const char *const bad[] = {"",        "ftp://h:1",          "127.0.0.1:6443", "http:/h",
                                      "https:h", "file:///etc/passwd", " http://h"};
    struct upstream_opts o = {0};
    char err[256];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        o.url = bad[i];
        err[0] = '\0';
        cr_assert_null(upstream_new(&o, err, sizeof(err)), "%s accepted", bad[i]);
        cr_assert(strstr(err, "must start with http:// or https://") != NULL, "%s: %s", bad[i],
                  err);
        cr_assert(strstr(err, bad[i]) != NULL, "the message names the URL: %s", err);
    }
    o.url = NULL;
    cr_assert_null(upstream_new(&o, err, sizeof(err)));
    cr_assert_str_eq(err, "upstream URL (none): must start with http:// or https://");
    upstream_free(NULL);
}

Test(upstream, the_base_url_loses_its_trailing_slashes)
{
    static const char *const cases[][2] = {
        {"http://h:1", "http://h:1"},
        {"http://h:1/", "http://h:1"},
        {"https://h:1/prefix///", "https://h:1/prefix"},
        {"https://h:1/a/b", "https://h:1/a/b"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct upstream_opts o = {.url = cases[i][0]};
        struct upstream *up = up_new(&o);

        cr_assert_str_eq(upstream_url(up), cases[i][1]);
        upstream_free(up);
    }
}

Test(upstream, requests_go_to_the_base_url_plus_the_path)
{
    struct recorder *r = recorder_new(2);
    char base[128], eff[512];
    struct upstream_opts o = {0};
    struct upstream *up;
    long code;

    snprintf(base, sizeof(base), "%s/prefix/", r->url);
    o.url = base;
    up = up_new(&o);
    cr_assert_eq(get(up, "/api/v1/pods?watch=1&resourceVersion=0", NULL, &code, eff, sizeof(eff)),
                 CURLE_OK);
    cr_assert_eq(code, 200);
    cr_assert(strncmp(r->reqs[0], "GET /prefix/api/v1/pods?watch=1&resourceVersion=0 HTTP/1.1\r\n",
                      60) == 0,
              "%s", r->reqs[0]);
    cr_assert(strstr(eff, "/prefix/api/v1/pods?watch=1&resourceVersion=0") != NULL, "%s", eff);
    cr_assert_eq(get(up, "/version", NULL, &code, NULL, 0), CURLE_OK);
    cr_assert(strncmp(r->reqs[1], "GET /prefix/version HTTP/1.1\r\n", 30) == 0, "%s", r->reqs[1]);
    upstream_free(up);
    recorder_free(r);
}

/* ---- credentials -------------------------------------------------------------------- */

Test(upstream, a_token_becomes_a_bearer_header_after_the_callers_headers)
{
    struct recorder *r = recorder_new(1);
    struct upstream_opts o = {.token = "s3cret"};
    struct upstream *up;
    char v[256];
    long code;

    o.url = r->url;
    up = up_new(&o);
    cr_assert_eq(get(up, "/api", "Accept: application/json", &code, NULL, 0), CURLE_OK);
    cr_assert_str_eq(header_of(r->reqs[0], "Authorization", v, sizeof(v)), "Bearer s3cret");
    cr_assert_str_eq(header_of(r->reqs[0], "Accept", v, sizeof(v)), "application/json");
    upstream_free(up);
    recorder_free(r);
}

Test(upstream, no_token_sends_no_authorization)
{
    struct recorder *r = recorder_new(2);
    struct upstream_opts o = {0};
    struct upstream *up;
    char v[256];
    long code;

    o.url = r->url;
    up = up_new(&o);
    cr_assert_eq(get(up, "/api", NULL, &code, NULL, 0), CURLE_OK);
    cr_assert_null(header_of(r->reqs[0], "Authorization", v, sizeof(v)), "%s", r->reqs[0]);
    upstream_free(up);
    o.token = ""; /* an empty token is none */
    up = up_new(&o);
    cr_assert_eq(get(up, "/api", NULL, &code, NULL, 0), CURLE_OK);
    cr_assert_null(header_of(r->reqs[1], "Authorization", v, sizeof(v)), "%s", r->reqs[1]);
    upstream_free(up);
    recorder_free(r);
}

Test(upstream, a_token_file_is_trimmed_and_reread_when_its_mtime_changes)
{
    struct recorder *r = recorder_new(5);
    struct upstream_opts o = {0};
    struct upstream *up;
    char dir[256], path[300], v[256];
    long code;

    tmp_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/token", dir);
    write_file(path, "first-token \r\n\n");
    set_mtime(path, 1000000000);
    o.url = r->url;
    o.token = "ignored-when-a-file-is-given";
    o.token_file = path;
    up = up_new(&o);
    cr_assert_eq(get(up, "/a", NULL, &code, NULL, 0), CURLE_OK);
    cr_assert_str_eq(header_of(r->reqs[0], "Authorization", v, sizeof(v)), "Bearer first-token");

    /* rotated: new content, new mtime */
    write_file(path, "second-token\n");
    set_mtime(path, 1000000100);
    cr_assert_eq(get(up, "/b", NULL, &code, NULL, 0), CURLE_OK);
    cr_assert_str_eq(header_of(r->reqs[1], "Authorization", v, sizeof(v)), "Bearer second-token");

    /* the mtime is the signal: same mtime, the cached token stays */
    write_file(path, "third-token\n");
    set_mtime(path, 1000000100);
    cr_assert_eq(get(up, "/c", NULL, &code, NULL, 0), CURLE_OK);
    cr_assert_str_eq(header_of(r->reqs[2], "Authorization", v, sizeof(v)), "Bearer second-token");

    /* briefly missing (an atomic swap in progress): the last good token is kept */
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(get(up, "/d", NULL, &code, NULL, 0), CURLE_OK);
    cr_assert_str_eq(header_of(r->reqs[3], "Authorization", v, sizeof(v)), "Bearer second-token");

    write_file(path, "fourth-token");
    set_mtime(path, 1000000200);
    cr_assert_eq(get(up, "/e", NULL, &code, NULL, 0), CURLE_OK);
    cr_assert_str_eq(header_of(r->reqs[4], "Authorization", v, sizeof(v)), "Bearer fourth-token");
    upstream_free(up);
    recorder_free(r);
    unlink(path);
    rmdir(dir);
}

Test(upstream, a_missing_token_file_fails_construction)
{
    struct upstream_opts o = {.url = "http://127.0.0.1:1", .token_file = "/nonexistent/kwp/tok"};
    char err[256] = "";

    cr_assert_null(upstream_new(&o, err, sizeof(err)));
    cr_assert_str_eq(err, "cannot read token file /nonexistent/kwp/tok");
}

Test(upstream, an_empty_token_file_sends_no_authorization)
{
    struct recorder *r = recorder_new(1);
    struct upstream_opts o = {0};
    struct upstream *up;
    char dir[256], path[300], v[256];
    long code;

    tmp_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/token", dir);
    write_file(path, "\n");
    o.url = r->url;
    o.token_file = path;
    up = up_new(&o);
    cr_assert_eq(get(up, "/a", NULL, &code, NULL, 0), CURLE_OK);
    cr_assert_null(header_of(r->reqs[0], "Authorization", v, sizeof(v)), "%s", r->reqs[0]);
    upstream_free(up);
    recorder_free(r);
    unlink(path);
    rmdir(dir);
}

/* ---- TLS ------------------------------------------------------------------------------- */

/* A self-signed P-256 certificate for IP 127.0.0.1 (CN <cn>) written to <cert>/<key>. */
static void make_cert(const char *cn, const char *cert, const char *key)
{
    EVP_PKEY *pk = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509_NAME *name;
    X509V3_CTX ctx;
    X509_EXTENSION *ext;
    FILE *f;

    cr_assert(pk != NULL && x != NULL);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 2 * 86400);
    X509_set_pubkey(x, pk);
    name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name, "IP:127.0.0.1");
    cr_assert_not_null(ext);
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints, "critical,CA:TRUE");
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    cr_assert(X509_sign(x, pk, EVP_sha256()) > 0);
    f = fopen(cert, "w");
    cr_assert_not_null(f);
    PEM_write_X509(f, x);
    fclose(f);
    f = fopen(key, "w");
    cr_assert_not_null(f);
    PEM_write_PrivateKey(f, pk, NULL, NULL, 0, NULL, NULL);
    fclose(f);
    X509_free(x);
    EVP_PKEY_free(pk);
}

/* The https server answers every request with 200 "ok". */
static void answer_ok(void *app, struct http_req *req)
{
    (void)app;
    http_reply(req, 200, "text/plain", "ok", 2);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = calloc(1, 65536);
    size_t n;

    cr_assert(f != NULL && buf != NULL);
    n = fread(buf, 1, 65535, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* An https server with a fresh certificate, and a second certificate it does not use. */
struct tls_fixture {
    char dir[256];
    char cert[300], key[300], other[300], other_key[300];
    struct http_server *srv;
};

static void tls_up(struct tls_fixture *t)
{
    struct http_server_opts so = {.listen = "127.0.0.1:0", .max_connections = 64};
    char err[256] = "";

    tmp_dir(t->dir, sizeof(t->dir));
    snprintf(t->cert, sizeof(t->cert), "%s/cert.pem", t->dir);
    snprintf(t->key, sizeof(t->key), "%s/key.pem", t->dir);
    snprintf(t->other, sizeof(t->other), "%s/other.pem", t->dir);
    snprintf(t->other_key, sizeof(t->other_key), "%s/other.key", t->dir);
    make_cert("127.0.0.1", t->cert, t->key);
    make_cert("other", t->other, t->other_key);
    so.tls_cert_file = t->cert;
    so.tls_key_file = t->key;
    t->srv = http_server_start(&so, answer_ok, NULL, err, sizeof(err));
    cr_assert_not_null(t->srv, "https server: %s", err);
    cr_assert(strncmp(http_server_url(t->srv), "https://127.0.0.1:", 18) == 0, "%s",
              http_server_url(t->srv));
}

static void tls_down(struct tls_fixture *t)
{
    http_server_stop(t->srv);
    unlink(t->cert);
    unlink(t->key);
    unlink(t->other);
    unlink(t->other_key);
    rmdir(t->dir);
}

/* GET /x on the fixture's server with <o> (its url filled in); returns curl's result. */
static CURLcode tls_get(struct tls_fixture *t, struct upstream_opts *o, long *code)
{
    struct upstream *up;
    CURLcode rc;

    o->url = http_server_url(t->srv);
    up = up_new(o);
    rc = get(up, "/x", NULL, code, NULL, 0);
    upstream_free(up);
    return rc;
}

Test(upstream, https_verifies_the_server_with_the_ca_file_or_data, .timeout = 60)
{
    struct tls_fixture t;
    struct upstream_opts o = {0};
    char *pem;
    long code = 0;

    tls_up(&t);
    o.ca_file = t.cert;
    cr_assert_eq(tls_get(&t, &o, &code), CURLE_OK);
    cr_assert_eq(code, 200);
    pem = slurp(t.cert);
    memset(&o, 0, sizeof(o));
    o.ca_data = pem;
    code = 0;
    cr_assert_eq(tls_get(&t, &o, &code), CURLE_OK, "certificate-authority-data");
    cr_assert_eq(code, 200);
    free(pem);
    tls_down(&t);
}

Test(upstream, https_refuses_a_server_the_ca_does_not_vouch_for, .timeout = 60)
{
    struct tls_fixture t;
    struct upstream_opts o = {0};
    char *pem;
    long code = 0;

    tls_up(&t);
    /* the system store does not know a self-signed certificate */
    cr_assert_eq(tls_get(&t, &o, &code), CURLE_PEER_FAILED_VERIFICATION);
    o.ca_file = t.other;
    cr_assert_eq(tls_get(&t, &o, &code), CURLE_PEER_FAILED_VERIFICATION);
    pem = slurp(t.other);
    memset(&o, 0, sizeof(o));
    o.ca_data = pem;
    cr_assert_eq(tls_get(&t, &o, &code), CURLE_PEER_FAILED_VERIFICATION);
    free(pem);
    tls_down(&t);
}

Test(upstream, insecure_skips_verification, .timeout = 60)
{
    struct tls_fixture t;
    struct upstream_opts o = {.insecure = true};
    long code = 0;

    tls_up(&t);
    cr_assert_eq(tls_get(&t, &o, &code), CURLE_OK);
    cr_assert_eq(code, 200);
    o.ca_file = t.other; /* a wrong CA does not matter then */
    cr_assert_eq(tls_get(&t, &o, &code), CURLE_OK);
    tls_down(&t);
}

Test(upstream, a_client_certificate_that_cannot_be_loaded_fails_the_handshake, .timeout = 60)
{
    struct tls_fixture t;
    struct upstream_opts o = {0};
    char *pem;
    long code = 0;
    CURLcode rc;

    tls_up(&t);
    o.ca_file = t.cert;
    o.client_cert = "/nonexistent/kwp/client.pem";
    o.client_key = "/nonexistent/kwp/client.key";
    rc = tls_get(&t, &o, &code);
    cr_assert(rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_CONNECT_ERROR, "got %d (%s)", rc,
              curl_easy_strerror(rc));
    memset(&o, 0, sizeof(o));
    o.ca_file = t.cert;
    o.client_cert_data = "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n";
    o.client_key_data = "garbage";
    rc = tls_get(&t, &o, &code);
    cr_assert(rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_CONNECT_ERROR, "got %d (%s)", rc,
              curl_easy_strerror(rc));
    /* a loadable pair is presented (the server does not ask for one, so it connects) */
    memset(&o, 0, sizeof(o));
    o.ca_file = t.cert;
    o.client_cert = t.other;
    o.client_key = t.other_key;
    cr_assert_eq(tls_get(&t, &o, &code), CURLE_OK);
    pem = slurp(t.other);
    {
        char *key = slurp(t.other_key);

        memset(&o, 0, sizeof(o));
        o.ca_file = t.cert;
        o.client_cert_data = pem;
        o.client_key_data = key;
        cr_assert_eq(tls_get(&t, &o, &code), CURLE_OK);
        free(key);
    }
    free(pem);
    tls_down(&t);
}
