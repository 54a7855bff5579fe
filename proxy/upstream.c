/*
 * upstream.c - upstream connection settings and credentials applied to curl handles, and the
 * upstream's credential/TLS status (see upstream.h).
 *
 * Everything but the token and the status is immutable after upstream_new. <lock> guards the
 * token read from a file and the status: the newest request's outcome (by upstream_begin
 * order) is the status, so outcomes arriving out of order never move it backwards. The exec
 * plugin runs (execcred_get) and every log call happen with <lock> released.
 */
#include "proxy/upstream.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cache/bug.h"
#include "cache/gotext.h"
#include "cache/sbuf.h"
#include "proxy/execcred.h"
#include "proxy/kubeconfig.h"
#include "proxy/log.h"
#include "proxy/reqstats.h"

#define UPSTREAM_TOKEN_MAX 16384
#define UPSTREAM_WHY_MAX 1024         /* the recorded reason, as /readyz shows it */
#define UPSTREAM_RELOG_MS (60 * 1000) /* a problem that persists is logged again this often */

/* Which credential a request carried: the 401 reason names it. */
enum upstream_sent {
    SENT_NONE = 0,
    SENT_TOKEN,
    SENT_TOKEN_FILE,
    SENT_BASIC,
    SENT_EXEC_TOKEN,
    SENT_EXEC_CERT,
    SENT_CERT,
};

/* What the newest outcome says. */
enum upstream_state {
    STATE_OK = 0, /* no credential or TLS problem known */
    STATE_AUTH,   /* 401 */
    STATE_TLS,    /* verification, handshake or certificate loading failed */
    STATE_EXEC,   /* the exec plugin gave no credential (execcred logs it) */
};

struct upstream {
    /* immutable after upstream_new */
    char *url;                  /* as configured, for logs */
    char *req_url;              /* requests go here: url, or url with tls_server_name as host */
    struct curl_slist *conn_to; /* with tls_server_name: "NAME:PORT:HOST:PORT" */
    char *host_hdr;             /* with tls_server_name: "Host: <url's host[:port]>" */
    char *token_file;
    char *ca_file;
    char *ca_data;
    char *client_cert;
    char *client_key;
    char *client_cert_data;
    char *client_key_data;
    char *username;
    char *password;
    char *proxy_url; /* socks5:// rewritten to socks5h:// */
    bool insecure;
    bool https;
    bool disable_compression;
    struct execcred *exec; /* owned; thread-safe itself */

    pthread_mutex_t lock; /* guards everything below */
    char *token;          /* static, or the token file's content */
    struct stat token_st; /* of the file when last read (mtime, inode): changed -> re-read */
    bool token_recheck;   /* a 401 came back for the file's token: read it again */
    uint64_t seq;         /* upstream_begin calls so far */
    uint64_t st_seq;      /* the request whose outcome is the status */
    enum upstream_state st;
    char st_why[UPSTREAM_WHY_MAX]; /* "" when st == STATE_OK */
    enum upstream_state logged;    /* the kind last logged (STATE_OK: none or recovered) */
    int64_t logged_ms;             /* when it was logged (monotonic) */
};

static char *dup_or_null(const char *s)
{
    return s && s[0] ? xstrdup(s) : NULL;
}

static void strip_slashes(char *s)
{
    size_t n = strlen(s);

    while (n > 0 && s[n - 1] == '/') {
        s[--n] = '\0';
    }
}

/* Reads the token file into up->token if it changed (mtime or inode: a kubelet's atomic
 * symlink swap gives a new file). Under up->lock. */
static int reload_token(struct upstream *up)
{
    struct stat st;
    FILE *f;
    char *buf;
    size_t n;

    if (!up->token_file) {
        return 0;
    }
    if (stat(up->token_file, &st) == -1) {
        return -errno;
    }
    if (up->token && !up->token_recheck && st.st_mtim.tv_sec == up->token_st.st_mtim.tv_sec &&
        st.st_mtim.tv_nsec == up->token_st.st_mtim.tv_nsec && st.st_ino == up->token_st.st_ino &&
        st.st_dev == up->token_st.st_dev) {
        return 0;
    }
    f = fopen(up->token_file, "r");
    if (!f) {
        return -errno;
    }
    buf = xmalloc(UPSTREAM_TOKEN_MAX + 1);
    n = fread(buf, 1, UPSTREAM_TOKEN_MAX, f);
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) {
        n--;
    }
    buf[n] = '\0';
    free(up->token);
    up->token = buf;
    up->token_st = st;
    up->token_recheck = false;
    return 0;
}

/*
 * With a tls_server_name: requests name that host in the URL (libcurl verifies the
 * certificate against it and sends it as SNI; it has no separate override) while
 * CURLOPT_CONNECT_TO sends the connection to the configured host and port, and the Host
 * header keeps the configured authority, as Go's tls.Config.ServerName does.
 */
static int sni_setup(struct upstream *up, const char *name, char *err, size_t err_len)
{
    CURLU *u = curl_url();
    char *host = NULL, *port = NULL, *url = NULL;
    const char *auth = strstr(up->url, "://") + 3;
    size_t auth_len = strcspn(auth, "/?#");
    size_t len;
    char *ct = NULL;
    struct curl_slist *l;
    int rc = -EINVAL;

    if (!u) {
        return -ENOMEM;
    }
    if (curl_url_set(u, CURLUPART_URL, up->url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
        curl_url_set(u, CURLUPART_HOST, name, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_URL, &url, 0) != CURLUE_OK) {
        snprintf(err, err_len, "tls-server-name %s with server %s: not a valid URL", name, up->url);
        goto out;
    }
    len = strlen(name) + strlen(host) + 2 * strlen(port) + 4;
    ct = xmalloc(len);
    snprintf(ct, len, "%s:%s:%s:%s", name, port, host, port);
    l = curl_slist_append(NULL, ct);
    if (!l) {
        rc = -ENOMEM;
        goto out;
    }
    up->conn_to = l;
    up->req_url = xstrdup(url);
    strip_slashes(up->req_url);
    len = auth_len + sizeof("Host: ");
    up->host_hdr = xmalloc(len);
    snprintf(up->host_hdr, len, "Host: %.*s", (int)auth_len, auth);
    rc = 0;
out:
    free(ct);
    curl_free(host);
    curl_free(port);
    curl_free(url);
    curl_url_cleanup(u);
    return rc;
}

static int proxy_setup(struct upstream *up, const char *p, char *err, size_t err_len)
{
    size_t len;

    if (strncmp(p, "socks5://", 9) == 0) {
        /* Go's SOCKS5 dialer sends the host name: the proxy resolves it */
        len = strlen(p) + 2;
        up->proxy_url = xmalloc(len);
        snprintf(up->proxy_url, len, "socks5h://%s", p + 9);
        return 0;
    }
    if (strncmp(p, "http://", 7) != 0 && strncmp(p, "https://", 8) != 0 &&
        strncmp(p, "socks5h://", 10) != 0) {
        snprintf(err, err_len, "proxy-url %s: must start with http://, https:// or socks5://", p);
        return -EINVAL;
    }
    up->proxy_url = xstrdup(p);
    return 0;
}

struct upstream *upstream_new(const struct upstream_opts *o, char *err, size_t err_len)
{
    struct upstream *up;

    if (!o->url || (strncmp(o->url, "http://", 7) != 0 && strncmp(o->url, "https://", 8) != 0)) {
        snprintf(err, err_len, "upstream URL %s: must start with http:// or https://",
                 o->url ? o->url : "(none)");
        return NULL;
    }
    up = xcalloc(1, sizeof(*up));
    pthread_mutex_init(&up->lock, NULL);
    up->url = xstrdup(o->url);
    strip_slashes(up->url);
    up->https = strncmp(up->url, "https://", 8) == 0;
    up->token = dup_or_null(o->token);
    up->token_file = dup_or_null(o->token_file);
    up->ca_file = dup_or_null(o->ca_file);
    up->ca_data = dup_or_null(o->ca_data);
    up->client_cert = dup_or_null(o->client_cert);
    up->client_key = dup_or_null(o->client_key);
    up->client_cert_data = dup_or_null(o->client_cert_data);
    up->client_key_data = dup_or_null(o->client_key_data);
    up->username = dup_or_null(o->username);
    up->password = o->password ? xstrdup(o->password) : NULL;
    up->insecure = o->insecure;
    up->disable_compression = o->disable_compression;
    if (o->tls_server_name && o->tls_server_name[0] && up->https &&
        sni_setup(up, o->tls_server_name, err, err_len) != 0) {
        goto fail;
    }
    if (!up->req_url) {
        up->req_url = xstrdup(up->url);
    }
    if (o->proxy_url && o->proxy_url[0] && proxy_setup(up, o->proxy_url, err, err_len) != 0) {
        goto fail;
    }
    if (up->token_file && reload_token(up) != 0) {
        snprintf(err, err_len, "cannot read token file %s", up->token_file);
        goto fail;
    }
    up->exec = o->exec; /* taken over only now: nothing below fails */
    return up;
fail:
    upstream_free(up);
    return NULL;
}

void upstream_free(struct upstream *up)
{
    if (!up) {
        return;
    }
    pthread_mutex_destroy(&up->lock);
    execcred_free(up->exec);
    free(up->url);
    free(up->req_url);
    curl_slist_free_all(up->conn_to);
    free(up->host_hdr);
    free(up->token);
    free(up->token_file);
    free(up->ca_file);
    free(up->ca_data);
    free(up->client_cert);
    free(up->client_key);
    free(up->client_cert_data);
    free(up->client_key_data);
    free(up->username);
    free(up->password);
    free(up->proxy_url);
    free(up);
}

void upstream_opts_from_target(struct upstream_opts *o, const struct kubeconfig_target *t)
{
    memset(o, 0, sizeof(*o));
    o->url = t->server;
    o->token = t->token;
    o->token_file = t->token_file;
    o->ca_file = t->ca_file;
    o->ca_data = t->ca_data;
    o->client_cert = t->client_cert_file;
    o->client_key = t->client_key_file;
    o->client_cert_data = t->client_cert_data;
    o->client_key_data = t->client_key_data;
    o->insecure = t->insecure;
    o->username = t->username;
    o->password = t->password;
    o->tls_server_name = t->tls_server_name;
    o->proxy_url = t->proxy_url;
    o->disable_compression = t->disable_compression;
}

const char *upstream_url(const struct upstream *up)
{
    return up->url;
}

void upstream_trust(const struct upstream *up, const char **ca_file, const char **ca_data,
                    bool *insecure)
{
    *ca_file = up->ca_file;
    *ca_data = up->ca_data;
    *insecure = up->insecure;
}

static void set_blob(CURL *e, CURLoption opt, const char *pem)
{
    struct curl_blob b = {.data = (void *)pem, .len = strlen(pem), .flags = CURL_BLOB_COPY};
    curl_easy_setopt(e, opt, &b);
}

static int add_header(struct curl_slist **headers, const char *line)
{
    struct curl_slist *h = curl_slist_append(*headers, line);

    if (!h) {
        return -ENOMEM;
    }
    *headers = h;
    return 0;
}

static int add_bearer(struct curl_slist **headers, const char *token)
{
    size_t hl = strlen(token) + 32;
    char *hdr = xmalloc(hl);
    int rc;

    snprintf(hdr, hl, "Authorization: Bearer %s", token);
    rc = add_header(headers, hdr);
    free(hdr);
    return rc;
}

static void set_tls(const struct upstream *up, CURL *e)
{
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, up->insecure ? 0L : 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, up->insecure ? 0L : 2L);
    if (up->ca_file) {
        curl_easy_setopt(e, CURLOPT_CAINFO, up->ca_file);
    }
    if (up->ca_data) {
        set_blob(e, CURLOPT_CAINFO_BLOB, up->ca_data);
    }
    if (up->client_cert) {
        curl_easy_setopt(e, CURLOPT_SSLCERT, up->client_cert);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    }
    if (up->client_key) {
        curl_easy_setopt(e, CURLOPT_SSLKEY, up->client_key);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (up->client_cert_data) {
        set_blob(e, CURLOPT_SSLCERT_BLOB, up->client_cert_data);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    }
    if (up->client_key_data) {
        set_blob(e, CURLOPT_SSLKEY_BLOB, up->client_key_data);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    }
}

/* Records <st>/<why> as the outcome of request <seq> if no newer one is recorded, and says
 * what to log (the caller logs after unlocking). Under up->lock. */
static enum log_level record(struct upstream *up, uint64_t seq, enum upstream_state st,
                             const char *why, bool *do_log)
{
    int64_t now = clock_mono_ms();
    enum log_level level = LOG_LEVEL_ERROR;

    *do_log = false;
    if (seq < up->st_seq) {
        return level;
    }
    up->st_seq = seq;
    up->st = st;
    snprintf(up->st_why, sizeof(up->st_why), "%s", st == STATE_OK ? "" : why);
    if (st == STATE_OK) {
        *do_log = up->logged != STATE_OK;
        up->logged = STATE_OK;
        return LOG_LEVEL_INFO;
    }
    if (st == STATE_EXEC) {
        return level; /* execcred logged the run with its stderr */
    }
    if (up->logged != st || now - up->logged_ms >= UPSTREAM_RELOG_MS) {
        *do_log = true;
        up->logged = st;
        up->logged_ms = now;
    }
    return level;
}

/* The exec plugin's credential for a request: its token unless <have_auth> (a static token
 * or basic auth goes first, as client-go's exec round tripper leaves an Authorization alone),
 * its certificate unless a static one is set. Sets *<sent> to what it applied. Returns 0,
 * -ENOMEM, or -EACCES with the reason recorded as request <seq>'s outcome. */
static int exec_apply(struct upstream *up, CURL *e, struct curl_slist **headers, bool have_auth,
                      uint64_t seq, uint64_t *generation, enum upstream_sent *sent)
{
    struct execcred_cred cred = {0};
    char err[1024], why[UPSTREAM_WHY_MAX];
    bool do_log;
    int rc;

    err[0] = '\0';
    rc = execcred_get(up->exec, &cred, err, sizeof(err));
    if (rc != 0) {
        snprintf(why, sizeof(why), "upstream: exec plugin failed: %s", err);
        pthread_mutex_lock(&up->lock);
        (void)record(up, seq, STATE_EXEC, why, &do_log);
        pthread_mutex_unlock(&up->lock);
        return -EACCES;
    }
    *generation = cred.generation;
    if (cred.token && cred.token[0] && !have_auth) {
        rc = add_bearer(headers, cred.token);
        *sent = SENT_EXEC_TOKEN;
    }
    if (rc == 0 && cred.cert_pem && cred.key_pem && up->https && !up->client_cert &&
        !up->client_cert_data) {
        set_blob(e, CURLOPT_SSLCERT_BLOB, cred.cert_pem);
        set_blob(e, CURLOPT_SSLKEY_BLOB, cred.key_pem);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
        if (*sent == SENT_NONE) {
            *sent = SENT_EXEC_CERT;
        }
    }
    execcred_cred_fini(&cred);
    return rc;
}

int upstream_begin(struct upstream *up, CURL *e, const char *path_and_query, unsigned flags,
                   struct curl_slist **headers, struct upstream_call *call)
{
    size_t len = strlen(up->req_url) + strlen(path_and_query) + 1;
    char *url = xmalloc(len);
    enum upstream_sent sent = SENT_NONE;
    uint64_t seq, generation = 0;
    bool have_auth;
    int rc = 0;

    snprintf(url, len, "%s%s", up->req_url, path_and_query);
    curl_easy_setopt(e, CURLOPT_URL, url);
    free(url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 10L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    if (call) {
        memset(call, 0, sizeof(*call));
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, call->errbuf);
    }
    if (up->conn_to) {
        curl_easy_setopt(e, CURLOPT_CONNECT_TO, up->conn_to);
        if (add_header(headers, up->host_hdr) != 0) {
            return -ENOMEM;
        }
    }
    if (up->proxy_url) {
        curl_easy_setopt(e, CURLOPT_PROXY, up->proxy_url);
        curl_easy_setopt(e, CURLOPT_NOPROXY, ""); /* a kubeconfig proxy-url applies to all */
    }
    if ((flags & UPSTREAM_DECODE) && !up->disable_compression) {
        curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "gzip");
    }
    if (up->https) {
        set_tls(up, e);
    }
    pthread_mutex_lock(&up->lock);
    seq = ++up->seq;
    (void)reload_token(up); /* keep the last good token if the file is briefly missing */
    have_auth = up->token && up->token[0];
    if (have_auth) {
        rc = add_bearer(headers, up->token);
        sent = up->token_file ? SENT_TOKEN_FILE : SENT_TOKEN;
    }
    pthread_mutex_unlock(&up->lock);
    if (rc == 0 && !have_auth && up->username) {
        curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(e, CURLOPT_USERNAME, up->username);
        curl_easy_setopt(e, CURLOPT_PASSWORD, up->password ? up->password : "");
        have_auth = true;
        sent = SENT_BASIC;
    }
    if (rc == 0 && sent == SENT_NONE && up->https && (up->client_cert || up->client_cert_data)) {
        sent = SENT_CERT;
    }
    if (rc == 0 && up->exec) {
        rc = exec_apply(up, e, headers, have_auth, seq, &generation, &sent);
    }
    if (call) {
        call->seq = seq;
        call->generation = generation;
        call->sent = (int)sent;
    }
    return rc;
}

int upstream_setup(struct upstream *up, CURL *e, const char *path_and_query,
                   struct curl_slist **headers)
{
    return upstream_begin(up, e, path_and_query, 0, headers, NULL);
}

/* The 401 reason and what to do about it, by the credential that was refused. */
static void auth_reason(int sent, char *why, size_t why_len, const char **fix)
{
    const char *what;

    switch (sent) {
    case SENT_TOKEN:
        what = "the token was refused";
        *fix = "renew the token (expired or revoked?) in the kubeconfig user or --token";
        break;
    case SENT_TOKEN_FILE:
        what = "the token from the token file was refused";
        *fix = "write a valid token to the token file (it is read again when it changes)";
        break;
    case SENT_BASIC:
        what = "the username and password were refused";
        *fix = "fix the kubeconfig user's username and password";
        break;
    case SENT_EXEC_TOKEN:
        what = "the exec plugin's token was refused";
        *fix = "the plugin runs again for a new one; if that one is refused too, check the "
               "identity the plugin logs in as";
        break;
    case SENT_EXEC_CERT:
        what = "the exec plugin's client certificate was refused";
        *fix = "the plugin runs again for a new one; if that one is refused too, check the "
               "identity the plugin logs in as";
        break;
    case SENT_CERT:
        what = "the client certificate was refused";
        *fix = "renew the client certificate, or check that the cluster trusts its issuer";
        break;
    default:
        what = "no credentials were sent";
        *fix = "give the kubeconfig user a token, client certificate or exec plugin (or pass "
               "--token)";
        break;
    }
    snprintf(why, why_len, "upstream: 401 Unauthorized: %s", what);
}

/* A TLS failure's reason and fix; false when <cc> is not about TLS. */
static bool tls_reason(CURLcode cc, const char *errbuf, char *why, size_t why_len, const char **fix)
{
    const char *what;
    const char *detail = errbuf && errbuf[0] ? errbuf : curl_easy_strerror(cc);

    switch (cc) {
    case CURLE_PEER_FAILED_VERIFICATION:
        what = "TLS certificate verify failed";
        *fix = "the server's certificate must be signed by the cluster's certificate-authority "
               "(-data) or --ca-file, be valid now and name the server (or its tls-server-name)";
        break;
    case CURLE_SSL_CACERT_BADFILE:
        what = "TLS CA certificates unusable";
        *fix = "certificate-authority (-data) or --ca-file must be a readable PEM bundle";
        break;
    case CURLE_SSL_CERTPROBLEM:
        what = "TLS client certificate unusable";
        *fix = "client-certificate and client-key must be readable PEM and a matching pair";
        break;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
        what = "TLS handshake failed";
        *fix = "check that the server speaks TLS at this address and accepts the client "
               "certificate (expired? issued by a CA the cluster trusts?)";
        break;
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
        /* TLS 1.3 checks a client certificate after the client's handshake is done: the
         * server's alert arrives with the first read */
        if (!strstr(detail, "alert") && !strstr(detail, "SSL")) {
            return false;
        }
        what = "TLS handshake failed";
        *fix = "the server refused the TLS session: check the client certificate (expired? "
               "issued by a CA the cluster trusts?)";
        break;
    default:
        return false;
    }
    snprintf(why, why_len, "upstream: %s: %s", what, detail);
    return true;
}

void upstream_observe(CURL *e, int verb, long code)
{
    curl_off_t us = 0;
    CURLINFO what =
        verb == REQSTATS_WATCH && code > 0 ? CURLINFO_STARTTRANSFER_TIME_T : CURLINFO_TOTAL_TIME_T;

    if (curl_easy_getinfo(e, what, &us) == CURLE_OK) {
        reqstats_upstream((enum reqstats_verb)verb, (int)code, (int64_t)us * 1000);
    }
}

void upstream_done(struct upstream *up, const struct upstream_call *call, CURLcode cc,
                   long http_code)
{
    char why[UPSTREAM_WHY_MAX], q[UPSTREAM_WHY_MAX + 64];
    struct sbuf qs;
    const char *fix = "";
    enum upstream_state st;
    enum log_level level;
    bool do_log;

    if (!call || call->seq == 0) {
        return;
    }
    why[0] = '\0';
    if (http_code == 401) {
        st = STATE_AUTH;
        auth_reason(call->sent, why, sizeof(why), &fix);
        if (call->generation != 0) {
            execcred_invalidate(up->exec, call->generation);
        }
    } else if (http_code >= 100) {
        st = STATE_OK;
    } else if (tls_reason(cc, call->errbuf, why, sizeof(why), &fix)) {
        st = STATE_TLS;
    } else if (cc == CURLE_ABORTED_BY_CALLBACK || cc == CURLE_WRITE_ERROR ||
               cc == CURLE_READ_ERROR || cc == CURLE_OUT_OF_MEMORY || cc == CURLE_FAILED_INIT ||
               cc == CURLE_OK) {
        return; /* ended here, not by the upstream: nothing learned */
    } else {
        st = STATE_OK; /* unreachable: not a credential problem (/readyz says so elsewhere) */
    }
    pthread_mutex_lock(&up->lock);
    if (st == STATE_AUTH && call->sent == SENT_TOKEN_FILE) {
        up->token_recheck = true;
    }
    level = record(up, call->seq, st, why, &do_log);
    pthread_mutex_unlock(&up->lock);
    if (!do_log) {
        return;
    }
    if (st == STATE_OK) {
        log_msg(level, "upstream", "upstream=%s msg=\"upstream accepts kwp's credentials again\"",
                up->url);
        return;
    }
    sbuf_init_fixed(&qs, q, sizeof(q));
    gotext_json_quote(&qs, why, strlen(why));
    log_msg(level, "upstream", "upstream=%s err=%s msg=\"not ready: %s\"", up->url, q, fix);
}

/* upstream_post's response body: appended to the caller's sbuf up to the cap. */
struct post_sink {
    struct sbuf *resp;
    size_t got;
    bool too_big;
};

static size_t post_write(char *p, size_t size, size_t n, void *ctx)
{
    struct post_sink *k = ctx;
    size_t len = size * n;

    if (len > UPSTREAM_POST_MAX_BYTES - k->got) {
        k->too_big = true;
        return 0;
    }
    sbuf_put(k->resp, p, len);
    k->got += len;
    return len;
}

int upstream_post(void *ctx, const char *path, const char *body, size_t len, struct sbuf *resp,
                  long *code, char *err, size_t err_len)
{
    struct upstream *up = ctx;
    struct post_sink sink = {.resp = resp};
    struct upstream_call call;
    struct curl_slist *h = NULL;
    CURL *e = curl_easy_init();
    CURLcode cc;
    int rc;

    *code = 0;
    if (!e) {
        snprintf(err, err_len, "out of memory");
        return -ENOMEM;
    }
    h = curl_slist_append(h, "Content-Type: application/json");
    if (h) {
        h = curl_slist_append(h, "Accept: application/json");
    }
    rc = h ? upstream_begin(up, e, path, UPSTREAM_DECODE, &h, &call) : -ENOMEM;
    if (rc != 0) {
        snprintf(err, err_len, "%s",
                 rc == -EACCES ? "no credentials: the exec plugin failed" : "out of memory");
        goto out;
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, post_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, UPSTREAM_POST_TIMEOUT_MS);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "kwp-proxy/auth");
    cc = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, code);
    upstream_done(up, &call, cc, *code);
    if (cc == CURLE_OK) {
        rc = 0;
    } else {
        rc = sink.too_big                     ? -EFBIG
             : cc == CURLE_COULDNT_CONNECT    ? -ECONNREFUSED
             : cc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT
                                              : -EIO;
        snprintf(err, err_len, "%s", call.errbuf[0] ? call.errbuf : curl_easy_strerror(cc));
        *code = 0;
    }
out:
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    return rc;
}

bool upstream_problem(struct upstream *up, char *why, size_t why_len)
{
    bool bad;

    pthread_mutex_lock(&up->lock);
    bad = up->st != STATE_OK;
    if (bad) {
        snprintf(why, why_len, "%s", up->st_why);
    }
    pthread_mutex_unlock(&up->lock);
    return bad;
}
