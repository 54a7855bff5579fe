/*
 * test_upstream.c - proxy/upstream: what upstream_setup makes a curl handle send, observed on
 * the wire. A plain-HTTP listener in this process records each request's bytes (the request
 * line with base URL + path, the Authorization header, the caller's headers kept); an https
 * server (proxy/http_server with a certificate made here with OpenSSL) shows the TLS options
 * at work: the CA file or in-memory CA verifies the server, a wrong or missing CA fails
 * verification, --insecure-skip-tls-verify connects anyway, a client certificate that cannot
 * be loaded fails the handshake. Token files are re-read when their mtime changes.
 * The credential layer: basic auth, gzip for decoded bodies, http and socks5 proxies (a SOCKS5
 * stand-in records the name it is asked for), an OpenSSL origin that requires client
 * certificates (files, -data, an exec plugin's) and records SNI and Host (tls-server-name),
 * exec tokens and their 401 invalidation, and the status upstream_done records for /readyz.
 *
 * Everything listens on 127.0.0.1 port 0; files live in a mkdtemp directory.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
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
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "cache/sbuf.h"
#include "proxy/auth.h"
#include "proxy/execcred.h"
#include "proxy/http_server.h"
#include "proxy/kubeconfig.h"
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

/* A listening socket on 127.0.0.1, port 0; its URL "<scheme>://127.0.0.1:PORT" in <url>. */
static int listen_loopback(const char *scheme, char *url, size_t cap)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    cr_assert_geq(fd, 0);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(listen(fd, 16), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    snprintf(url, cap, "%s://127.0.0.1:%u", scheme, (unsigned)ntohs(sa.sin_port));
    return fd;
}

/* Starts a recorder serving <want> connections, one after another. */
static struct recorder *recorder_new(int want)
{
    struct recorder *r = calloc(1, sizeof(*r));

    cr_assert_not_null(r);
    cr_assert_leq(want, MAX_REQS);
    r->want = want;
    r->lfd = listen_loopback("http", r->url, sizeof(r->url));
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

/* A self-signed P-256 CA certificate (CN <cn>, subjectAltName <san>) valid from an hour ago
 * for <valid_s> seconds (negative: expired that long ago) written to <cert>/<key>. */
static void make_cert_san(const char *cn, const char *san, long valid_s, const char *cert,
                          const char *key)
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
    X509_gmtime_adj(X509_getm_notBefore(x), valid_s < 0 ? valid_s - 3600 : -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), valid_s);
    X509_set_pubkey(x, pk);
    name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name, san);
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

/* A self-signed P-256 certificate for IP 127.0.0.1 (CN <cn>) written to <cert>/<key>. */
static void make_cert(const char *cn, const char *cert, const char *key)
{
    make_cert_san(cn, "IP:127.0.0.1", 2 * 86400, cert, key);
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

/* ---- the credential layer: what upstream_begin sends, what upstream_done records ------- */

/* A GET of <path> through upstream_begin with <flags> and <call>, then upstream_done with its
 * outcome. The body (up to <cap>) is copied to <body> when not NULL. Returns curl's result
 * (or CURLE_LOGIN_DENIED when upstream_begin refused: no credential). */
struct body {
    char *p;
    size_t len, cap;
};

static size_t keep(char *p, size_t size, size_t n, void *ctx)
{
    struct body *b = ctx;
    size_t len = size * n;

    if (b->p != NULL && b->len + len < b->cap) {
        memcpy(b->p + b->len, p, len);
        b->len += len;
        b->p[b->len] = '\0';
    }
    return len;
}

static CURLcode get_done(struct upstream *up, const char *path, unsigned flags,
                         struct upstream_call *call, long *code, char *body, size_t cap)
{
    CURL *e = curl_easy_init();
    struct curl_slist *h = NULL;
    struct body b = {.p = body, .cap = cap};
    CURLcode rc;
    int brc;

    cr_assert_not_null(e);
    if (body != NULL) {
        body[0] = '\0';
    }
    *code = 0;
    brc = upstream_begin(up, e, path, flags, &h, call);
    if (brc != 0) {
        cr_assert_eq(brc, -EACCES, "upstream_begin: %d", brc);
        curl_easy_cleanup(e);
        curl_slist_free_all(h);
        return CURLE_LOGIN_DENIED;
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, keep);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 10000L);
    rc = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, code);
    upstream_done(up, call, rc, *code);
    curl_easy_cleanup(e);
    curl_slist_free_all(h);
    return rc;
}

/* upstream_problem's text, or "" when there is none. */
static const char *problem(struct upstream *up)
{
    static char why[1024];

    if (!upstream_problem(up, why, sizeof(why))) {
        why[0] = '\0';
    }
    return why;
}

Test(upstream, basic_auth_is_sent_when_no_token_is_set)
{
    struct recorder *r = recorder_new(2);
    struct upstream_opts o = {.username = "admin", .password = "pa:ss"};
    struct upstream *up;
    char v[256];
    long code;

    o.url = r->url;
    up = up_new(&o);
    cr_assert_eq(get(up, "/api", NULL, &code, NULL, 0), CURLE_OK);
    cr_assert_str_eq(header_of(r->reqs[0], "Authorization", v, sizeof(v)),
                     "Basic YWRtaW46cGE6c3M="); /* base64("admin:pa:ss") */
    upstream_free(up);
    o.token = "tok"; /* a token goes first (kubeconfig validation forbids both) */
    up = up_new(&o);
    cr_assert_eq(get(up, "/api", NULL, &code, NULL, 0), CURLE_OK);
    cr_assert_str_eq(header_of(r->reqs[1], "Authorization", v, sizeof(v)), "Bearer tok");
    upstream_free(up);
    recorder_free(r);
}

Test(upstream, gzip_is_asked_for_decoded_bodies_unless_compression_is_disabled)
{
    struct recorder *r = recorder_new(3);
    struct upstream_call call;
    struct upstream_opts o = {0};
    struct upstream *up;
    char v[256];
    long code;

    o.url = r->url;
    up = up_new(&o);
    cr_assert_eq(get_done(up, "/a", UPSTREAM_DECODE, &call, &code, NULL, 0), CURLE_OK);
    cr_assert_str_eq(header_of(r->reqs[0], "Accept-Encoding", v, sizeof(v)), "gzip");
    /* the passthrough's requests: the client's own Accept-Encoding, bytes untouched */
    cr_assert_eq(get_done(up, "/b", 0, &call, &code, NULL, 0), CURLE_OK);
    cr_assert_null(header_of(r->reqs[1], "Accept-Encoding", v, sizeof(v)), "%s", r->reqs[1]);
    upstream_free(up);
    o.disable_compression = true;
    up = up_new(&o);
    cr_assert_eq(get_done(up, "/c", UPSTREAM_DECODE, &call, &code, NULL, 0), CURLE_OK);
    cr_assert_null(header_of(r->reqs[2], "Accept-Encoding", v, sizeof(v)), "%s", r->reqs[2]);
    upstream_free(up);
    recorder_free(r);
}

Test(upstream, an_http_proxy_url_carries_every_request_even_past_no_proxy)
{
    struct recorder *r = recorder_new(1);
    struct upstream_opts o = {.url = "http://kwp-upstream.invalid:6443/p", .token = "t"};
    struct upstream *up;
    char v[256];
    long code;

    setenv("no_proxy", "kwp-upstream.invalid", 1); /* a kubeconfig proxy-url ignores it */
    setenv("NO_PROXY", "kwp-upstream.invalid", 1);
    o.proxy_url = r->url;
    up = up_new(&o);
    cr_assert_eq(get(up, "/api?x=1", NULL, &code, NULL, 0), CURLE_OK);
    cr_assert_eq(code, 200);
    cr_assert(
        strncmp(r->reqs[0], "GET http://kwp-upstream.invalid:6443/p/api?x=1 HTTP/1.1\r\n", 56) == 0,
        "%s", r->reqs[0]);
    cr_assert_str_eq(header_of(r->reqs[0], "Authorization", v, sizeof(v)), "Bearer t");
    upstream_free(up);
    recorder_free(r);
}

/* A SOCKS5 proxy that is also the origin: it records the address asked for and answers the
 * HTTP request on the same connection with 200. */
struct socks {
    int lfd;
    char url[64];
    pthread_t thread;
    unsigned char atyp; /* 3: a host name (resolved by the proxy), 1: IPv4 */
    char host[256];
    unsigned port;
};

static bool read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;

    while (got < n) {
        ssize_t k = recv(fd, (char *)buf + got, n - got, 0);
        if (k <= 0) {
            return false;
        }
        got += (size_t)k;
    }
    return true;
}

static void *socks_main(void *arg)
{
    struct socks *s = arg;
    unsigned char b[512];
    static const unsigned char ok[] = {5, 0, 0, 1, 0, 0, 0, 0, 0, 0};
    static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n"
                                "\r\nok";
    char req[REQ_CAP] = "";
    size_t len = 0;
    int c = accept(s->lfd, NULL, NULL);

    if (c == -1) {
        return NULL;
    }
    /* greeting: VER NMETHODS METHODS...; choose "no authentication" */
    if (!read_full(c, b, 2) || !read_full(c, b + 2, b[1])) {
        goto out;
    }
    (void)!send(c, "\x05\x00", 2, MSG_NOSIGNAL);
    /* request: VER CMD RSV ATYP ADDR PORT */
    if (!read_full(c, b, 4)) {
        goto out;
    }
    s->atyp = b[3];
    if (s->atyp == 3) {
        if (!read_full(c, b, 1) || !read_full(c, b + 1, b[0])) {
            goto out;
        }
        snprintf(s->host, sizeof(s->host), "%.*s", b[0], (char *)b + 1);
    } else if (s->atyp == 1) {
        if (!read_full(c, b, 4)) {
            goto out;
        }
        snprintf(s->host, sizeof(s->host), "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
    } else {
        goto out;
    }
    if (!read_full(c, b, 2)) {
        goto out;
    }
    s->port = (unsigned)b[0] << 8 | b[1];
    (void)!send(c, ok, sizeof(ok), MSG_NOSIGNAL);
    while (len + 1 < sizeof(req) && strstr(req, "\r\n\r\n") == NULL) {
        ssize_t k = recv(c, req + len, sizeof(req) - 1 - len, 0);
        if (k <= 0) {
            break;
        }
        len += (size_t)k;
        req[len] = '\0';
    }
    (void)!send(c, reply, sizeof(reply) - 1, MSG_NOSIGNAL);
out:
    close(c);
    return NULL;
}

Test(upstream, a_socks5_proxy_url_resolves_names_on_the_proxy, .timeout = 30)
{
    struct socks s = {0};
    char err[256];
    struct upstream_opts o = {.url = "http://kwp-upstream.invalid:6443"};
    struct upstream *up;
    long code;

    s.lfd = listen_loopback("socks5", s.url, sizeof(s.url));
    cr_assert_eq(pthread_create(&s.thread, NULL, socks_main, &s), 0);
    o.proxy_url = s.url;
    up = up_new(&o);
    cr_assert_eq(get(up, "/version", NULL, &code, NULL, 0), CURLE_OK);
    cr_assert_eq(code, 200);
    pthread_join(s.thread, NULL);
    close(s.lfd);
    cr_assert_eq(s.atyp, 3, "the name went to the proxy (socks5h), not an address");
    cr_assert_str_eq(s.host, "kwp-upstream.invalid");
    cr_assert_eq(s.port, 6443);
    upstream_free(up);

    o.proxy_url = "ftp://127.0.0.1:1";
    cr_assert_null(upstream_new(&o, err, sizeof(err)));
    cr_assert_str_eq(err, "proxy-url ftp://127.0.0.1:1: must start with http://, https:// or "
                          "socks5://");
}

/* ---- an OpenSSL https origin: client certificates, SNI, the Host header -------------- */

struct tls_origin {
    int lfd;
    char url[64];
    pthread_t thread;
    SSL_CTX *ctx;
    int want;                     /* connections to serve */
    char cn[MAX_REQS][128];       /* the client certificate's CN, "" without one */
    char sni[MAX_REQS][128];      /* the server name the client sent */
    char reqs[MAX_REQS][REQ_CAP]; /* request heads ("" when the handshake failed) */
};

static void *tls_origin_main(void *arg)
{
    struct tls_origin *o = arg;

    for (int i = 0; i < o->want; i++) {
        int c = accept(o->lfd, NULL, NULL);
        SSL *ssl;
        size_t len = 0;
        X509 *peer;
        char body[160];
        char reply[400];
        const char *sni;

        if (c == -1) {
            return NULL;
        }
        ssl = SSL_new(o->ctx);
        SSL_set_fd(ssl, c);
        if (SSL_accept(ssl) <= 0) {
            /* the alert is out; read what the client still sends so that closing does not
             * reset the connection before the client reads the alert (as a server that
             * lingers would) */
            struct timeval tv = {2, 0};
            char sink[4096];

            SSL_free(ssl);
            shutdown(c, SHUT_WR);
            setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
            while (recv(c, sink, sizeof(sink), 0) > 0) {
            }
            close(c);
            continue;
        }
        sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
        snprintf(o->sni[i], sizeof(o->sni[i]), "%s", sni ? sni : "");
        peer = SSL_get1_peer_certificate(ssl);
        if (peer) {
            X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, o->cn[i],
                                      sizeof(o->cn[i]));
            X509_free(peer);
        }
        while (len + 1 < REQ_CAP && strstr(o->reqs[i], "\r\n\r\n") == NULL) {
            int k = SSL_read(ssl, o->reqs[i] + len, (int)(REQ_CAP - 1 - len));
            if (k <= 0) {
                break;
            }
            len += (size_t)k;
            o->reqs[i][len] = '\0';
        }
        snprintf(body, sizeof(body), "cn=%s", o->cn[i]);
        snprintf(reply, sizeof(reply),
                 "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                 strlen(body), body);
        SSL_write(ssl, reply, (int)strlen(reply));
        SSL_shutdown(ssl);
        SSL_free(ssl);
        close(c);
    }
    return NULL;
}

/* Serves <want> connections with <cert>/<key>; with <client_ca> it requires a client
 * certificate issued by it (the handshake fails without one). */
static struct tls_origin *tls_origin_new(int want, const char *cert, const char *key,
                                         const char *client_ca)
{
    struct tls_origin *o = calloc(1, sizeof(*o));

    cr_assert_not_null(o);
    signal(SIGPIPE, SIG_IGN); /* a client that gave up: OpenSSL writes its alert anyway */
    o->want = want;
    o->ctx = SSL_CTX_new(TLS_server_method());
    cr_assert_not_null(o->ctx);
    cr_assert_eq(SSL_CTX_use_certificate_file(o->ctx, cert, SSL_FILETYPE_PEM), 1);
    cr_assert_eq(SSL_CTX_use_PrivateKey_file(o->ctx, key, SSL_FILETYPE_PEM), 1);
    if (client_ca) {
        cr_assert_eq(SSL_CTX_load_verify_locations(o->ctx, client_ca, NULL), 1);
        SSL_CTX_set_verify(o->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    }
    o->lfd = listen_loopback("https", o->url, sizeof(o->url));
    cr_assert_eq(pthread_create(&o->thread, NULL, tls_origin_main, o), 0);
    return o;
}

/* Waits until <o> served all its connections (its records are final then). */
static void tls_origin_join(struct tls_origin *o)
{
    if (o->want >= 0) {
        pthread_join(o->thread, NULL);
        o->want = -1;
    }
}

static void tls_origin_free(struct tls_origin *o)
{
    tls_origin_join(o);
    close(o->lfd);
    SSL_CTX_free(o->ctx);
    free(o);
}

/* Files for the TLS tests: a server certificate for 127.0.0.1 and a client certificate. */
struct pki {
    char dir[256];
    char srv[300], srv_key[300], cli[300], cli_key[300];
};

static void pki_make(struct pki *k, const char *srv_san)
{
    tmp_dir(k->dir, sizeof(k->dir));
    snprintf(k->srv, sizeof(k->srv), "%s/srv.pem", k->dir);
    snprintf(k->srv_key, sizeof(k->srv_key), "%s/srv.key", k->dir);
    snprintf(k->cli, sizeof(k->cli), "%s/cli.pem", k->dir);
    snprintf(k->cli_key, sizeof(k->cli_key), "%s/cli.key", k->dir);
    make_cert_san("kwp-test-server", srv_san, 86400, k->srv, k->srv_key);
    make_cert_san("kwp-client", "DNS:kwp-client", 86400, k->cli, k->cli_key);
}

static void pki_drop(struct pki *k)
{
    unlink(k->srv);
    unlink(k->srv_key);
    unlink(k->cli);
    unlink(k->cli_key);
    rmdir(k->dir);
}

Test(upstream, client_certificates_from_files_and_data_reach_the_server, .timeout = 60)
{
    struct pki k;
    struct tls_origin *srv;
    struct upstream_call call;
    struct upstream_opts o = {0};
    struct upstream *up;
    char body[256], *cert, *key;
    long code;

    pki_make(&k, "IP:127.0.0.1");
    srv = tls_origin_new(3, k.srv, k.srv_key, k.cli);
    o.url = srv->url;
    o.ca_file = k.srv;
    o.client_cert = k.cli;
    o.client_key = k.cli_key;
    up = up_new(&o);
    cr_assert_eq(get_done(up, "/a", 0, &call, &code, body, sizeof(body)), CURLE_OK);
    cr_assert_eq(code, 200);
    cr_assert_str_eq(body, "cn=kwp-client");
    upstream_free(up);

    cert = slurp(k.cli);
    key = slurp(k.cli_key);
    memset(&o, 0, sizeof(o));
    o.url = srv->url;
    o.ca_file = k.srv;
    o.client_cert_data = cert;
    o.client_key_data = key;
    up = up_new(&o);
    cr_assert_eq(get_done(up, "/b", 0, &call, &code, body, sizeof(body)), CURLE_OK);
    cr_assert_str_eq(body, "cn=kwp-client", "client-certificate-data");
    upstream_free(up);

    /* none: the server ends the session; that is a TLS problem /readyz names */
    memset(&o, 0, sizeof(o));
    o.url = srv->url;
    o.ca_file = k.srv;
    up = up_new(&o);
    cr_assert_neq(get_done(up, "/c", 0, &call, &code, body, sizeof(body)), CURLE_OK);
    cr_assert(strncmp(problem(up), "upstream: TLS handshake failed: ", 32) == 0, "%s", problem(up));
    cr_assert(strstr(problem(up), "alert") != NULL, "the server's alert: %s", problem(up));
    upstream_free(up);
    tls_origin_free(srv);
    free(cert);
    free(key);
    pki_drop(&k);
}

Test(upstream, tls_server_name_is_verified_and_sent_while_connecting_to_the_server, .timeout = 60)
{
    struct pki k;
    struct tls_origin *srv;
    struct upstream_call call;
    struct upstream_opts o = {0};
    struct upstream *up;
    char v[256], hostport[64];
    long code;

    pki_make(&k, "DNS:kwp-upstream.test"); /* names only the tls-server-name */
    srv = tls_origin_new(2, k.srv, k.srv_key, NULL);
    o.url = srv->url;
    o.ca_file = k.srv;
    up = up_new(&o);
    cr_assert_eq(get_done(up, "/x", 0, &call, &code, NULL, 0), CURLE_PEER_FAILED_VERIFICATION);
    cr_assert(strncmp(problem(up), "upstream: TLS certificate verify failed: ", 41) == 0, "%s",
              problem(up));
    upstream_free(up);

    o.tls_server_name = "kwp-upstream.test";
    up = up_new(&o);
    cr_assert_str_eq(upstream_url(up), srv->url, "logs keep the configured URL");
    cr_assert_eq(get_done(up, "/api?y=2", 0, &call, &code, NULL, 0), CURLE_OK);
    cr_assert_eq(code, 200);
    cr_assert_str_eq(problem(up), "");
    tls_origin_join(srv);
    cr_assert_str_eq(srv->sni[1], "kwp-upstream.test");
    snprintf(hostport, sizeof(hostport), "%s", srv->url + 8);
    cr_assert_str_eq(header_of(srv->reqs[1], "Host", v, sizeof(v)), hostport,
                     "the Host header keeps the server's address");
    cr_assert(strncmp(srv->reqs[1], "GET /api?y=2 HTTP/1.1\r\n", 23) == 0, "%s", srv->reqs[1]);
    tls_origin_free(srv);
    upstream_free(up);
    pki_drop(&k);
}

/* ---- exec plugins and the recorded status ----------------------------------------------- */

/* tests/data/execcred (the plugins of test_execcred.c), from this file's path. */
static const char *plugins_dir(void)
{
    static char path[1024];
    const char *here = __FILE__;
    const char *cut = strstr(here, "tests/unit/proxy/");

    cr_assert(cut != NULL);
    snprintf(path, sizeof(path), "%.*stests/data/execcred", (int)(cut - here), here);
    return path;
}

/* Lines in <path>: how often a plugin ran. */
static int runs_in(const char *path)
{
    char line[64];
    int n = 0;
    FILE *f = fopen(path, "r");

    if (!f) {
        return 0;
    }
    while (fgets(line, sizeof(line), f)) {
        n++;
    }
    fclose(f);
    return n;
}

/*
 * An upstream for <url> whose kubeconfig user is <user_yaml> (extra user fields, may be "")
 * plus an exec plugin <script> of tests/data/execcred counting its runs in <counter>, built
 * the way kwp proxy builds it: kubeconfig target -> upstream_opts -> execcred_new.
 */
static struct upstream *exec_upstream(const char *url, const char *script, const char *api,
                                      const char *counter, const char *user_yaml)
{
    struct kubeconfig *kc = kubeconfig_new();
    struct kubeconfig_target *t = NULL;
    struct execcred_opts eo = {.backoff_initial_ms = 50, .backoff_max_ms = 100};
    struct upstream_opts o;
    struct upstream *up;
    char yaml[4096], origin[1100], err[1024] = "";

    snprintf(origin, sizeof(origin), "%s/kubeconfig", plugins_dir());
    snprintf(yaml, sizeof(yaml),
             "clusters:\n- name: c\n  cluster: {server: '%s', insecure-skip-tls-verify: true}\n"
             "users:\n- name: u\n  user:\n%s    exec:\n"
             "      apiVersion: client.authentication.k8s.io/%s\n"
             "      interactiveMode: Never\n"
             "      command: ./%s\n"
             "      env: [{name: KWP_COUNTER, value: '%s'}]\n"
             "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
             url, user_yaml, api, script, counter);
    cr_assert_eq(kubeconfig_add_buffer(kc, yaml, strlen(yaml), origin, err, sizeof(err)), 0,
                 "%s\n%s", err, yaml);
    cr_assert_eq(kubeconfig_resolve(kc, NULL, &t, err, sizeof(err)), 0, "%s", err);
    upstream_opts_from_target(&o, t);
    o.exec = execcred_new(t, &eo, err, sizeof(err));
    cr_assert_not_null(o.exec, "%s", err);
    up = upstream_new(&o, err, sizeof(err));
    cr_assert_not_null(up, "%s", err);
    kubeconfig_target_free(t);
    kubeconfig_free(kc);
    return up;
}

Test(upstream, an_exec_token_is_sent_and_one_401_burst_runs_the_plugin_once, .timeout = 60)
{
    struct recorder *r = recorder_new(4);
    struct upstream_call a, b, c;
    struct upstream *up;
    char dir[256], counter[300], v[256];
    long code;

    tmp_dir(dir, sizeof(dir));
    snprintf(counter, sizeof(counter), "%s/runs", dir);
    up = exec_upstream(r->url, "token.sh", "v1", counter, "");
    cr_assert_eq(get_done(up, "/a", UPSTREAM_DECODE, &a, &code, NULL, 0), CURLE_OK);
    cr_assert_str_eq(header_of(r->reqs[0], "Authorization", v, sizeof(v)), "Bearer tok-1");
    cr_assert_eq(get_done(up, "/b", UPSTREAM_DECODE, &b, &code, NULL, 0), CURLE_OK);
    cr_assert_str_eq(header_of(r->reqs[1], "Authorization", v, sizeof(v)), "Bearer tok-1",
                     "kept: no expiry");
    cr_assert_eq(runs_in(counter), 1);

    /* both requests are answered 401: the credential they carried is stale, once */
    upstream_done(up, &a, CURLE_OK, 401);
    upstream_done(up, &b, CURLE_OK, 401);
    cr_assert_str_eq(problem(up),
                     "upstream: 401 Unauthorized: the exec plugin's token was refused");
    cr_assert_eq(get_done(up, "/c", UPSTREAM_DECODE, &c, &code, NULL, 0), CURLE_OK);
    cr_assert_str_eq(header_of(r->reqs[2], "Authorization", v, sizeof(v)), "Bearer tok-2");
    cr_assert_str_eq(problem(up), "", "the newer request succeeded");
    /* a late 401 for the old credential neither reruns the plugin nor hides the success */
    upstream_done(up, &a, CURLE_OK, 401);
    cr_assert_str_eq(problem(up), "");
    cr_assert_eq(get_done(up, "/d", UPSTREAM_DECODE, &c, &code, NULL, 0), CURLE_OK);
    cr_assert_str_eq(header_of(r->reqs[3], "Authorization", v, sizeof(v)), "Bearer tok-2");
    cr_assert_eq(runs_in(counter), 2);
    upstream_free(up);
    recorder_free(r);
    unlink(counter);
    rmdir(dir);
}

Test(upstream, a_static_token_goes_before_the_exec_token, .timeout = 60)
{
    struct recorder *r = recorder_new(1);
    struct upstream_call a;
    struct upstream *up;
    char dir[256], counter[300], v[256];
    long code;

    tmp_dir(dir, sizeof(dir));
    snprintf(counter, sizeof(counter), "%s/runs", dir);
    up = exec_upstream(r->url, "token.sh", "v1", counter, "    token: static-one\n");
    cr_assert_eq(get_done(up, "/a", 0, &a, &code, NULL, 0), CURLE_OK);
    cr_assert_str_eq(header_of(r->reqs[0], "Authorization", v, sizeof(v)), "Bearer static-one");
    upstream_done(up, &a, CURLE_OK, 401);
    cr_assert_str_eq(problem(up), "upstream: 401 Unauthorized: the token was refused");
    upstream_free(up);
    recorder_free(r);
    unlink(counter);
    rmdir(dir);
}

Test(upstream, a_failing_plugin_refuses_the_request_and_says_why, .timeout = 60)
{
    struct upstream_call a;
    struct upstream *up;
    char dir[256], counter[300];
    long code;

    tmp_dir(dir, sizeof(dir));
    snprintf(counter, sizeof(counter), "%s/runs", dir);
    up = exec_upstream("http://127.0.0.1:1", "fail.sh", "v1", counter, "");
    cr_assert_eq(get_done(up, "/a", 0, &a, &code, NULL, 0), CURLE_LOGIN_DENIED);
    cr_assert(strncmp(problem(up), "upstream: exec plugin failed: exec: executable ", 47) == 0,
              "%s", problem(up));
    cr_assert(strstr(problem(up), "fail.sh failed with exit code 3; stderr: boom: the identity "
                                  "provider said no") != NULL,
              "%s", problem(up));
    /* within the backoff: no new run, the same answer */
    cr_assert_eq(get_done(up, "/b", 0, &a, &code, NULL, 0), CURLE_LOGIN_DENIED);
    cr_assert_eq(runs_in(counter), 1);
    upstream_free(up);
    unlink(counter);
    rmdir(dir);
}

Test(upstream, an_exec_client_certificate_reaches_the_server, .timeout = 60)
{
    struct pki k;
    struct tls_origin *srv;
    struct upstream_call a;
    struct upstream *up;
    char dir[256], counter[300], body[256], cli_ca[1100];
    long code;

    pki_make(&k, "IP:127.0.0.1");
    /* cert.sh answers with tests/data/execcred/client.crt (self-signed, CN kwp-execcred-test) */
    snprintf(cli_ca, sizeof(cli_ca), "%s/client.crt", plugins_dir());
    srv = tls_origin_new(1, k.srv, k.srv_key, cli_ca);
    tmp_dir(dir, sizeof(dir));
    snprintf(counter, sizeof(counter), "%s/runs", dir);
    up = exec_upstream(srv->url, "cert.sh", "v1beta1", counter, "");
    cr_assert_eq(get_done(up, "/a", 0, &a, &code, body, sizeof(body)), CURLE_OK);
    cr_assert_eq(code, 200);
    cr_assert_str_eq(body, "cn=kwp-execcred-test");
    upstream_done(up, &a, CURLE_OK, 401);
    cr_assert_str_eq(
        problem(up),
        "upstream: 401 Unauthorized: the exec plugin's client certificate was refused");
    tls_origin_free(srv);
    upstream_free(up);
    rmdir(dir);
    pki_drop(&k);
}

Test(upstream, the_newest_outcome_is_the_status)
{
    struct upstream_opts o = {.url = "http://127.0.0.1:1", .token = "t"};
    struct upstream *up = up_new(&o);
    struct upstream_call old, mid, newer;
    struct curl_slist *h = NULL;
    CURL *e = curl_easy_init();

    cr_assert_eq(upstream_begin(up, e, "/a", 0, &h, &old), 0);
    cr_assert_eq(upstream_begin(up, e, "/b", 0, &h, &mid), 0);
    cr_assert_eq(upstream_begin(up, e, "/c", 0, &h, &newer), 0);
    cr_assert_str_eq(problem(up), "", "nothing known yet");
    upstream_done(up, &mid, CURLE_OK, 401);
    cr_assert_str_eq(problem(up), "upstream: 401 Unauthorized: the token was refused");
    upstream_done(up, &old, CURLE_OK, 200); /* a watch opened long ago ends fine */
    cr_assert_str_eq(problem(up), "upstream: 401 Unauthorized: the token was refused");
    upstream_done(up, &newer, CURLE_ABORTED_BY_CALLBACK, 0); /* we ended it: nothing learned */
    cr_assert_str_eq(problem(up), "upstream: 401 Unauthorized: the token was refused");
    upstream_done(up, &newer, CURLE_COULDNT_CONNECT, 0); /* unreachable is not a credential */
    cr_assert_str_eq(problem(up), "");
    upstream_done(NULL == up ? NULL : up, NULL, CURLE_OK, 401); /* no call: ignored */
    cr_assert_str_eq(problem(up), "");
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    upstream_free(up);
}

Test(upstream, the_401_reason_names_the_refused_credential)
{
    static const struct {
        struct upstream_opts o;
        const char *why;
    } cases[] = {
        {{.url = "http://h:1"}, "upstream: 401 Unauthorized: no credentials were sent"},
        {{.url = "http://h:1", .username = "u", .password = "p"},
         "upstream: 401 Unauthorized: the username and password were refused"},
        {{.url = "https://h:1", .client_cert = "/c", .client_key = "/k"},
         "upstream: 401 Unauthorized: the client certificate was refused"},
        {{.url = "https://h:1", .token = "t", .client_cert = "/c", .client_key = "/k"},
         "upstream: 401 Unauthorized: the token was refused"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct upstream *up = up_new(&cases[i].o);
        struct upstream_call call;
        struct curl_slist *h = NULL;
        CURL *e = curl_easy_init();

        cr_assert_eq(upstream_begin(up, e, "/", 0, &h, &call), 0);
        upstream_done(up, &call, CURLE_OK, 401);
        cr_assert_str_eq(problem(up), cases[i].why, "case %zu", i);
        curl_slist_free_all(h);
        curl_easy_cleanup(e);
        upstream_free(up);
    }
}

Test(upstream, a_refused_file_token_is_read_again_and_a_swapped_file_too)
{
    struct recorder *r = recorder_new(3);
    struct upstream_call call;
    struct upstream_opts o = {0};
    struct upstream *up;
    char dir[256], path[300], tmp[300], v[256];
    long code;

    tmp_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/token", dir);
    snprintf(tmp, sizeof(tmp), "%s/token.new", dir);
    write_file(path, "one");
    set_mtime(path, 1000000000);
    o.url = r->url;
    o.token_file = path;
    up = up_new(&o);
    cr_assert_eq(get_done(up, "/a", 0, &call, &code, NULL, 0), CURLE_OK);
    cr_assert_str_eq(header_of(r->reqs[0], "Authorization", v, sizeof(v)), "Bearer one");
    /* rewritten in place with the same mtime: only a 401 makes kwp look again */
    write_file(path, "two");
    set_mtime(path, 1000000000);
    upstream_done(up, &call, CURLE_OK, 401);
    cr_assert_str_eq(problem(up),
                     "upstream: 401 Unauthorized: the token from the token file was refused");
    cr_assert_eq(get_done(up, "/b", 0, &call, &code, NULL, 0), CURLE_OK);
    cr_assert_str_eq(header_of(r->reqs[1], "Authorization", v, sizeof(v)), "Bearer two");
    /* the kubelet's way: a new file renamed over the old one (same mtime, new inode) */
    write_file(tmp, "three");
    set_mtime(tmp, 1000000000);
    cr_assert_eq(rename(tmp, path), 0);
    cr_assert_eq(get_done(up, "/c", 0, &call, &code, NULL, 0), CURLE_OK);
    cr_assert_str_eq(header_of(r->reqs[2], "Authorization", v, sizeof(v)), "Bearer three");
    upstream_free(up);
    recorder_free(r);
    unlink(path);
    rmdir(dir);
}

Test(upstream, the_target_maps_onto_the_options)
{
    struct kubeconfig_target t = {.server = "https://h:6443",
                                  .ca_file = "/ca",
                                  .ca_data = "CA",
                                  .insecure = true,
                                  .tls_server_name = "n",
                                  .proxy_url = "socks5://p:1",
                                  .disable_compression = true,
                                  .token = "tok",
                                  .token_file = "/tf",
                                  .client_cert_file = "/cf",
                                  .client_key_file = "/kf",
                                  .client_cert_data = "CD",
                                  .client_key_data = "KD",
                                  .username = "u",
                                  .password = "p"};
    struct upstream_opts o;

    memset(&o, 0xff, sizeof(o));
    upstream_opts_from_target(&o, &t);
    cr_assert_str_eq(o.url, "https://h:6443");
    cr_assert_str_eq(o.ca_file, "/ca");
    cr_assert_str_eq(o.ca_data, "CA");
    cr_assert(o.insecure && o.disable_compression);
    cr_assert_str_eq(o.tls_server_name, "n");
    cr_assert_str_eq(o.proxy_url, "socks5://p:1");
    cr_assert_str_eq(o.token, "tok");
    cr_assert_str_eq(o.token_file, "/tf");
    cr_assert_str_eq(o.client_cert, "/cf");
    cr_assert_str_eq(o.client_key, "/kf");
    cr_assert_str_eq(o.client_cert_data, "CD");
    cr_assert_str_eq(o.client_key_data, "KD");
    cr_assert_str_eq(o.username, "u");
    cr_assert_str_eq(o.password, "p");
    cr_assert_null(o.exec);
}

#define POST_LINE "POST /apis/authentication.k8s.io/v1/tokenreviews HTTP/1.1\r\n"

Test(upstream, post_is_the_reviews_transport_with_the_same_credentials)
{
    static const char review[] = "{\"apiVersion\":\"authentication.k8s.io/v1\"}";
    auth_send_fn *send = upstream_post; /* the type auth.h injects */
    struct recorder *r = recorder_new(1);
    struct upstream_opts o = {.token = "t"};
    struct upstream *up;
    struct sbuf resp = {0};
    char err[256] = "", v[256], clen[32];
    long code = 0;

    o.url = r->url;
    up = up_new(&o);
    cr_assert_eq(send(up, "/apis/authentication.k8s.io/v1/tokenreviews", review, sizeof(review) - 1,
                      &resp, &code, err, sizeof(err)),
                 0, "%s", err);
    cr_assert_eq(code, 200);
    cr_assert_str_eq(resp.p, "ok");
    cr_assert(strncmp(r->reqs[0], POST_LINE, strlen(POST_LINE)) == 0, "%s", r->reqs[0]);
    cr_assert_str_eq(header_of(r->reqs[0], "Authorization", v, sizeof(v)), "Bearer t");
    cr_assert_str_eq(header_of(r->reqs[0], "Content-Type", v, sizeof(v)), "application/json");
    snprintf(clen, sizeof(clen), "%zu", sizeof(review) - 1);
    cr_assert_str_eq(header_of(r->reqs[0], "Content-Length", v, sizeof(v)), clen);
    upstream_free(up);
    sbuf_free(&resp);
    recorder_free(r);

    o.url = "http://127.0.0.1:1";
    up = up_new(&o);
    cr_assert_eq(upstream_post(up, "/x", "{}", 2, &resp, &code, err, sizeof(err)), -ECONNREFUSED);
    cr_assert_eq(code, 0);
    cr_assert(err[0] != '\0');
    upstream_free(up);
    sbuf_free(&resp);
}
