/*
 * upstream.h - how to reach the upstream kube-apiserver: base URL, TLS, proxy and credentials,
 * applied to libcurl easy handles by every upstream request (reflector, passthrough,
 * discovery, probe, and the reviews through upstream_post), and what their outcomes say about
 * those credentials (for /readyz).
 *
 * Credentials come from one place, per request: a static token (or a token file, re-read when
 * it changes: bound service-account tokens rotate), basic auth, client certificates, and an
 * exec plugin's token or certificate (proxy/execcred.h), taken fresh for each request so a
 * rotation reaches every caller without a restart. upstream_done records a 401 (and makes the
 * exec plugin run again, once per credential), a TLS failure or a success; the newest request
 * decides, so a long watch ending late never hides a newer failure.
 * Thread safety: every function may be called from any thread (token, status: one mutex,
 * never held while calling curl, the plugin or the logger).
 */
#ifndef KWP_PROXY_UPSTREAM_H
#define KWP_PROXY_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

struct execcred;
struct kubeconfig_target;
struct sbuf;
struct upstream;

struct upstream_opts {
    const char *url;         /* http(s)://host:port[/prefix], required */
    const char *token;       /* bearer token, or NULL */
    const char *token_file;  /* file holding the bearer token (wins over token), or NULL */
    const char *ca_file;     /* PEM CA bundle for https, or NULL (system store) */
    const char *ca_data;     /* PEM CA bundle in memory (kubeconfig certificate-authority-data) */
    const char *client_cert; /* PEM client certificate file, or NULL */
    const char *client_key;  /* PEM client key file, or NULL */
    const char *client_cert_data; /* in-memory PEM (kubeconfig client-certificate-data) */
    const char *client_key_data;
    bool insecure;        /* skip TLS verification */
    const char *username; /* HTTP basic auth with password, when no token is set */
    const char *password;
    const char *tls_server_name; /* verify the server's certificate for (and send SNI) this
                                  * name instead of the URL's host */
    const char *proxy_url;       /* http://, https:// or socks5:// (names resolved by the proxy,
                                  * as Go dials); NULL: libcurl's *_proxy environment */
    bool disable_compression;    /* never ask for gzip (kubeconfig disable-compression) */
    struct execcred *exec;       /* exec plugin credentials, or NULL: upstream_new takes it
                                  * over on success (upstream_free frees it); on error the
                                  * caller still owns it */
};

/* A request's bookkeeping between upstream_begin and upstream_done, embedded in the caller's
 * per-request state (one per request in flight; reuse it for the next request). */
struct upstream_call {
    /* private */
    uint64_t seq;                 /* upstream_begin order: newer outcomes win */
    uint64_t generation;          /* the exec credential sent, 0 for none */
    int sent;                     /* which credential went out (for the 401 reason) */
    char errbuf[CURL_ERROR_SIZE]; /* curl's error text (CURLOPT_ERRORBUFFER); "" when none */
};

/* upstream_begin flags */
#define UPSTREAM_DECODE                                                                            \
    1u /* the caller reads the body: ask for gzip (unless disable-compression)                     \
        * and let curl decode it. Without it the body passes untouched and                         \
        * the caller's own Accept-Encoding applies (the passthrough). */

/* Validates and copies <o>. Returns NULL with a message in <err>. Any thread. */
struct upstream *upstream_new(const struct upstream_opts *o, char *err, size_t err_len);

void upstream_free(struct upstream *up); /* NULL-safe; frees the exec plugin it took */

/*
 * Fills <o> from kubeconfig target <t> (its strings are lent: <t> must outlive the
 * upstream_new call). Leaves <o>->exec NULL: the caller creates it from t->exec.
 */
void upstream_opts_from_target(struct upstream_opts *o, const struct kubeconfig_target *t);

/* The base URL without a trailing slash (as configured, for logs). */
const char *upstream_url(const struct upstream *up);

/* How the upstream's certificate is verified: <ca_file> and <ca_data> (NULL when unset: the
 * system store) and <insecure>. Strings lent for the upstream's life. Any thread. */
void upstream_trust(const struct upstream *up, const char **ca_file, const char **ca_data,
                    bool *insecure);

/*
 * Prepares easy handle <e> for a request to <path_and_query> (starting with "/"): URL, TLS and
 * proxy options, credentials (an Authorization header appended to *<headers>, which the caller
 * sets with CURLOPT_HTTPHEADER and frees; a Host header with tls_server_name), TCP keepalive,
 * no signals, CURLOPT_ERRORBUFFER into <call> (the caller must not replace it). <flags>:
 * UPSTREAM_DECODE or 0. Fills <call> for upstream_done (NULL: nothing is recorded).
 * May run the exec plugin (blocking for at most its timeout; concurrent callers share one
 * run). Returns 0, -ENOMEM, or -EACCES when the exec plugin gave no credential (the reason is
 * recorded for upstream_problem and was logged by execcred; do not send the request).
 */
int upstream_begin(struct upstream *up, CURL *e, const char *path_and_query, unsigned flags,
                   struct curl_slist **headers, struct upstream_call *call);

/* upstream_begin(up, e, path_and_query, 0, headers, NULL): a request whose outcome is not
 * recorded. Returns 0, -ENOMEM or -EACCES. */
int upstream_setup(struct upstream *up, CURL *e, const char *path_and_query,
                   struct curl_slist **headers);

/*
 * After the request of <call> ended with curl result <cc> and HTTP status <http_code> (0 when
 * no response arrived): a 401 makes the exec credential it carried stale (any number of 401s
 * for one credential cause one plugin run) and a token file be read again, and is recorded
 * with a TLS failure as the upstream's problem; any other response, or a failure to connect,
 * clears it. Aborted transfers change nothing. The first problem of a kind is logged with what
 * to fix, repeats at most once a minute, and the recovery once.
 */
/*
 * kwp_upstream_request_duration_seconds for the finished transfer <e> (before its cleanup):
 * <verb> (an enum reqstats_verb) answered <code> (0: no response); a WATCH is measured to its
 * response headers (CURLINFO_STARTTRANSFER_TIME_T), anything else to its end (TOTAL_TIME_T).
 * The thread that drives <e>.
 */
void upstream_observe(CURL *e, int verb, long code);

void upstream_done(struct upstream *up, const struct upstream_call *call, CURLcode cc,
                   long http_code);

#define UPSTREAM_POST_MAX_BYTES ((size_t)4 << 20) /* an upstream_post answer; more is -EFBIG */
#define UPSTREAM_POST_TIMEOUT_MS 10000L           /* one upstream_post, connect to last byte */

/*
 * POSTs <body> (<len> bytes, application/json) to <path> with kwp's credentials, blocking:
 * appends the response body to <resp> (struct sbuf, cache/sbuf.h) and sets *<code> to its
 * HTTP status; the outcome goes to upstream_done as every request's does. <up> is a struct
 * upstream *, passed as void * so that this is an auth_send_fn (proxy/auth.h): the transport
 * of the TokenReviews and SubjectAccessReviews. Returns 0 when a response came (any status),
 * else -ECONNREFUSED, -ETIMEDOUT, -EFBIG (past UPSTREAM_POST_MAX_BYTES), -EACCES (no
 * credential: the exec plugin failed) or -EIO, with a short reason in <err>. Any thread.
 */
int upstream_post(void *up, const char *path, const char *body, size_t len, struct sbuf *resp,
                  long *code, char *err, size_t err_len);

/*
 * Whether the upstream is unusable for a credential or TLS reason, according to the newest
 * recorded outcome: true with the reason in <why> ("upstream: 401 Unauthorized: the token was
 * refused", "upstream: TLS certificate verify failed: ...", "upstream: exec plugin failed:
 * ..."), false when there is none.
 */
bool upstream_problem(struct upstream *up, char *why, size_t why_len);

#endif
