/*
 * http_server.h - the downstream HTTP server (libmicrohttpd, epoll, suspend/resume).
 *
 * The server owns connections and per-request state (struct http_req). It reads the request
 * (headers, query, body up to a cap), then calls the app's handle function on an MHD thread.
 * The handler answers with one of the http_reply_* calls, or suspends the request
 * (http_suspend) and is called again after http_resume, from any thread. Streaming bodies
 * use a content reader that may suspend itself (see handlers.c for the watch protocol).
 *
 * One teardown path: when MHD reports completion, the request's state free function runs
 * (where watchers are detached), then the request is freed.
 * http_server.c alone maps errors to HTTP: http_reply_status writes a Kubernetes Status.
 */
#ifndef KWP_PROXY_HTTP_SERVER_H
#define KWP_PROXY_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "proxy/k8s_path.h"
#include "proxy/kstatus.h"

struct http_req;
struct http_server;

/* The app's request entry point, called on an MHD thread once the request is complete, and
 * again after each http_resume. It must reply or suspend before returning. */
typedef void http_handle_fn(void *app, struct http_req *req);

/* A streaming body: like MHD's content reader. Return bytes written (>0), 0 after calling
 * http_stream_suspend (nothing to send now), HTTP_STREAM_END or HTTP_STREAM_ABORT. */
typedef ssize_t http_stream_fn(void *ctx, char *buf, size_t max);
#define HTTP_STREAM_END ((ssize_t)-1)
#define HTTP_STREAM_ABORT ((ssize_t)-2)

/* Frees per-request app state; called exactly once at completion (never under app locks). */
typedef void http_state_free_fn(void *state);

/* How a request ended, from MHD's termination code. */
enum http_end {
    HTTP_END_OK = 0,      /* the response went out whole */
    HTTP_END_CLIENT_GONE, /* the client closed the connection */
    HTTP_END_TIMEOUT,     /* no progress for the stall timeout (http_req_set_stall_timeout) */
    HTTP_END_SHUTDOWN,    /* the server stopped */
    HTTP_END_ERROR,       /* a write or read failed, or the stream aborted */
};

/* Called once per request at completion, on an MHD thread, before any of its state is freed:
 * everything http_req_* reads is still there (the app's metrics and request log). */
typedef void http_done_fn(void *app, struct http_req *req, enum http_end how);

struct http_server_opts {
    const char *listen;         /* "HOST:PORT", port 0 allowed */
    unsigned threads;           /* MHD epoll worker threads (0 = 1) */
    unsigned max_connections;   /* MHD_OPTION_CONNECTION_LIMIT */
    size_t conn_memory;         /* per-connection pool bytes (headers + write buffer) */
    size_t max_body;            /* request bodies above this get 413 */
    int64_t resume_interval_ms; /* http_resume_batched: at most one batch per interval
                                   (0 = each batch at once) */
    bool stream_writers;        /* plain-TCP chunked streams may be written by watch writer
                                   threads (fanout.h), one per MHD thread */
    const char *tls_cert_file;  /* PEM certificate: serve https (with tls_key_file); both files
                                   are re-read when they change (new handshakes only) */
    const char *tls_key_file;   /* PEM private key */
    const char *client_ca_file; /* PEM CAs: request client certificates and verify them */
    http_done_fn *done;         /* NULL: none; called with the app pointer of http_server_start */
};

#define HTTP_DEFAULT_MAX_CONNECTIONS 60000
#define HTTP_DEFAULT_CONN_MEMORY (32 * 1024)
#define HTTP_DEFAULT_MAX_BODY (3 * 1024 * 1024)
#define HTTP_DEFAULT_RESUME_INTERVAL_MS 10

/* Starts the server. Returns NULL with a message in <err> on failure. */
struct http_server *http_server_start(const struct http_server_opts *opts, http_handle_fn *handle,
                                      void *app, char *err, size_t err_len);

/* The bound "http://HOST:PORT". */
const char *http_server_url(const struct http_server *srv);

/* Stops accepting new connections; open ones stay, but every response queued from now on
 * carries "Connection: close", so each connection ends after its current request (a client
 * that follows a finished watch with another request gets that one answered, then the close).
 * Idempotent; main thread. */
void http_server_quiesce(struct http_server *srv);

/* Stops the server (the app must have woken every suspended request first) and frees it. */
void http_server_stop(struct http_server *srv);

/* Number of requests in flight. */
unsigned http_server_active(const struct http_server *srv);

/* The heap's free pages handed back to the kernel (malloc_trim) after a burst of replies or
 * after many connections closed, counted over every server of the process. */
unsigned long http_server_malloc_trims(void);

/* The rule for those trims: <now> alive against a <peak> since the last trim is a trim when at
 * least <min_drop> are gone and at most 1/<ratio> of the peak is left. Pure; for tests. */
bool http_trim_due(unsigned peak, unsigned now, unsigned min_drop, unsigned ratio);

/* ---- the request ------------------------------------------------------------------- */

const char *http_req_method(const struct http_req *req);
const char *http_req_path(const struct http_req *req);
/* The decoded query pairs in order. */
const struct k8s_query_kv *http_req_query(const struct http_req *req, size_t *n);
/* First value of query key <key> (NULL if absent; "" if given without "="). */
const char *http_req_arg(const struct http_req *req, const char *key);
/* Request header (case-insensitive) or NULL. */
const char *http_req_header(const struct http_req *req, const char *name);
/* The request target exactly as the client sent it (path and raw query), for the texts
 * that quote it (authz_status_internal_error). */
const char *http_req_uri(const struct http_req *req);

/* Receives one request header; return false to stop. */
typedef bool http_header_fn(void *ctx, const char *name, const char *value);

/* Calls <fn> for every request header in the order received, a repeated header once per
 * line (Impersonate-Group). MHD thread (the handle function). */
void http_req_headers(const struct http_req *req, http_header_fn *fn, void *ctx);

/*
 * The auth gate's per-request state (kept apart from http_req_set_state, which the handlers
 * own): <free_fn>(<ctx>) runs once at completion, after the state's and the owner's. Set it
 * from the handle function; read it from any thread that owns the request.
 */
void http_req_set_auth(struct http_req *req, void *ctx, http_state_free_fn *free_fn);

struct identity;

/*
 * The identity of the request's TLS client certificate, verified against client_ca_file
 * (tls_client_identity): 0 with *out (caller owns it), -ENOENT when there is none (plain
 * http, no client CA configured, or the client sent no certificate), -EACCES when it does
 * not verify. MHD thread (the handle function).
 */
int http_req_client_identity(const struct http_req *req, struct identity **out);
void *http_req_auth(const struct http_req *req);

const char *http_req_body(const struct http_req *req, size_t *len);
/* The connection's socket (for the idle-disconnect sweep). */
int http_req_fd(const struct http_req *req);
/* Monotonic ms when the request arrived. */
int64_t http_req_start_ms(const struct http_req *req);
/* Monotonic ns when the request arrived. */
int64_t http_req_start_ns(const struct http_req *req);
/* The status code of the reply queued, 0 before one is. */
int http_req_code(const struct http_req *req);
/* True once http_req_take_over gave the request to another owner (the passthrough). */
bool http_req_is_taken_over(const struct http_req *req);

/*
 * Says why the request failed or ended early, for the request log at completion: the caller's
 * user name <user> (NULL: unknown) and the printf-formatted reason (cut at 511 bytes). The
 * first note of a request wins; later ones are ignored. <req> NULL is a no-op. Any thread
 * that owns the request. Read back with http_req_note_reason.
 */
void http_req_note(struct http_req *req, const char *user, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The reason noted (NULL: none); *<user> (when not NULL) gets the user noted with it. */
const char *http_req_note_reason(const struct http_req *req, const char **user);

/*
 * Closes the connection when it makes no progress for <seconds> (0 = never). Suspended
 * connections never time out (MHD), so for a watch this only ends a client that stopped
 * reading while data was waiting for it. Call from the handle function.
 */
void http_req_set_stall_timeout(struct http_req *req, unsigned seconds);

/*
 * Fixes the connection's kernel send buffer at <bytes> (the kernel doubles it), which turns
 * off its autotuning (up to net.ipv4.tcp_wmem's 4 MiB here). For a long stream: bounds what a
 * slow reader parks in the kernel, and keeps the writer's view of its progress close to the
 * client's. Call from the handle function.
 */
void http_req_set_send_buffer(struct http_req *req, int bytes);

/* App state attached to the request; freed with <free_fn> at completion. */
void http_req_set_state(struct http_req *req, void *state, http_state_free_fn *free_fn);
void *http_req_state(const struct http_req *req);

/*
 * Routes every later call for this request (after http_resume) to <fn>(<ctx>, req) instead
 * of the app's handle function, and runs <free_fn>(<ctx>) at completion (after the state's
 * free function). Used by the passthrough, which owns a request once it forwards it.
 */
void http_req_take_over(struct http_req *req, http_handle_fn *fn, void *ctx,
                        http_state_free_fn *free_fn);

/* ---- request parsing (pure: what on_access reads from a request) --------------------- */

/* Most query pairs a request may carry; one more is 400 "too many query parameters". */
#define HTTP_MAX_QUERY 64

/*
 * The pairs http_server_query_decode needs room for to decode the raw query <raw> (the bytes
 * after '?'): one per '&' plus one, at most HTTP_MAX_QUERY. Any thread.
 */
size_t http_server_query_slots(const char *raw);

/*
 * Decodes <raw> in place as kube-apiserver reads a query (k8s_query_parse: Go's
 * url.ParseQuery) into <pairs>, in order, at most <cap> of them; the pairs point into <raw>.
 * Returns how many were stored; *<overflow> says the query held more pairs than <cap> (the
 * request is then refused). Any thread.
 */
size_t http_server_query_decode(char *raw, struct k8s_query_kv *pairs, size_t cap, bool *overflow);

/*
 * True when the header value <value> (NULL: no header) lists <token> as one of its
 * comma-separated elements, case-insensitively, blanks around elements ignored ("keep-alive,
 * Close" has "close"). Any thread.
 */
bool http_server_has_token(const char *value, const char *token);

/* ---- replying (exactly one reply per request) --------------------------------------- */

/* Adds a response header for the coming reply (at most 8). Strings are copied. */
void http_req_add_header(struct http_req *req, const char *name, const char *value);

/* A complete body (copied). */
void http_reply(struct http_req *req, int code, const char *content_type, const char *body,
                size_t len);

/* A Status body (JSON + "\n"), Retry-After when st->retry_after > 0. */
void http_reply_status(struct http_req *req, const struct kstatus *st);

/* A body gathered from <iov> (the pieces are not copied until MHD writes them; the array
 * is); <done>(<ctx>) runs when MHD no longer needs the pieces. Sent with Content-Length. */
void http_reply_iov(struct http_req *req, int code, const char *content_type,
                    const struct iovec *iov, size_t n, void (*done)(void *ctx), void *ctx);

/* A streamed (chunked) body. <fn> runs on MHD threads. */
void http_reply_stream(struct http_req *req, int code, const char *content_type, http_stream_fn *fn,
                       void *ctx);

/* Suspends the request inside the handle function (the handler is called again on resume). */
void http_suspend(struct http_req *req);

/* Suspends a streaming response from inside its stream function (which then returns 0). */
void http_stream_suspend(struct http_req *req);

struct fanout;

/*
 * The server's watch writers when <req>'s stream may be written by them: plain TCP (not
 * https), chunked, and the server started with stream_writers; else NULL. A stream handed
 * to them is suspended (http_stream_suspend) with nothing buffered: every earlier chunk was
 * sent, since MHD calls a content reader only with an empty write buffer. The writers then
 * write whole chunks (size line, data, CRLF) to http_req_fd's socket, and give the stream
 * back, with no chunk half-written, before anyone resumes it (http_resume).
 */
struct fanout *http_req_fanout(const struct http_req *req);

/* Resumes a suspended request or stream; any thread. The caller must own the wake-up
 * (see resource.h): a request may only be resumed once per suspension. */
void http_resume(struct http_req *req);

/*
 * Like http_resume, but wakes go out in rounds, at most one per resume_interval_ms for the
 * whole server, so that a busy stream writes the events of an interval together. After a
 * quiet interval a round starts at once on the calling thread (the wakes of the next 2 ms
 * join it); later wakes wait for the next round, issued by the server's resume thread. For
 * streams whose latency may wait that long (watches); any thread; same ownership rule.
 */
void http_resume_batched(struct http_req *req);

#endif
