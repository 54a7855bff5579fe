/*
 * http_server.c - libmicrohttpd glue: connections, request state, replies, suspend/resume.
 *
 * Threads: MHD's internal epoll thread(s) call on_access, the content readers and
 * on_completed. http_resume may be called from any thread. Per-request state lives in
 * struct http_req, allocated on the first MHD callback and freed only in on_completed
 * (the single teardown path, where the app's state free function runs first).
 */
#include "proxy/http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "cache/bug.h"
#include "proxy/fanout.h"
#include "proxy/log.h"
#include "proxy/tls.h"

#define HTTP_MAX_EXTRA_HEADERS 16   /* the passthrough copies up to 14 upstream headers */
#define HTTP_ACCEPT_BATCH 256       /* accepts per wake of the acceptor */
#define HTTP_ACCEPT_FULL_WAIT_MS 50 /* at the connection limit: look again after this */
#define HTTP_LISTEN_BACKLOG 4096    /* capped by net.core.somaxconn */
#define HTTP_TRIM_CHECK_MS 1000     /* trim_after_burst: checked at least this often */
#define HTTP_TRIM_BURST 64          /* ... after this many reply bodies were alive at once */
#define HTTP_TRIM_RATIO 8           /* ... and all but 1/8 of them are done */
#define HTTP_TRIM_CONNS 256         /* or after this many connections closed (8 MiB of pools) */
#define HTTP_TRIM_CONN_RATIO 2      /* ... and at least half of the peak's are gone */
#define HTTP_ROUND_NS 2000000LL     /* http_resume_batched: a direct round's wakes, this long */
/* Batching pays when many watches share the events (measured, 100 writes/s: at 5,000
 * watches 10 ms rounds cut p99 from 1.08 s to 0.43 s; at 1,000 they change nothing; at 100
 * they only add delay, p50 6.1 ms vs 3.2 ms). With fewer requests in flight than this, every
 * wake goes out at once. (Wakes per interval are no signal: under saturation most watches
 * are busy writing, not suspended, so few wakes are asked for.) */
#define HTTP_BATCH_MIN_ACTIVE 2048
/* The watch writers' rounds (fanout_new) pay from fewer streams: at 1,000 watches they cut
 * p99 from 152 to 72 ms at 300 writes/s and from 32 to 23 ms at 100, and CPU per event by
 * 16 % (bench/floor.py, 2 runs, 2026-12-03); a writer's first turn after a quiet interval
 * still starts at once, so a lone event is not held back. */
#define HTTP_WRITER_ROUND_MIN_STREAMS 512
#define HTTP_FD_SLACK 64        /* descriptors besides connections: listen, epoll, curl, logs */
#define HTTP_POOL_HEADROOM 1536 /* pool left after a request: our reply's headers + writes */
#define HTTP_POOL_PER_ITEM 64   /* pool bytes MHD spends per header or query pair */
#define HTTP_STREAM_BLOCK_CHUNKED 16        /* MHD's block for a chunked stream: unused */
#define HTTP_STREAM_BLOCK_PLAIN (16 * 1024) /* a stream sent without chunking */
#define HTTP_STREAM_DROP_MAX 32 /* drop_sent_headers: headers dropped, at most (we add <= 21) */

/* Stream resumes gathered by http_resume_batched and issued together by the flusher. */
struct resume_batch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct http_req **q; /* under mu */
    size_t n, cap;       /* under mu */
    bool stop;           /* under mu */
    int64_t last_ns;     /* under mu: when the last round started */
    int64_t direct_ns;   /* under mu: wakes until then go out at once (the current round) */
    int64_t interval_ns; /* read-only: at most one batch per interval */
    pthread_t thread;
    bool started;
};

struct http_server {
    struct MHD_Daemon *d;
    http_handle_fn *handle;
    void *app;
    http_done_fn *done; /* opts.done: the app's look at each request as it completes */
    size_t max_body;
    size_t pool;       /* per-connection pool bytes (MHD_OPTION_CONNECTION_MEMORY_LIMIT) */
    unsigned max_conn; /* connections MHD holds at most */
    char url[128];
    atomic_uint active;
    atomic_uint bodies;      /* http_reply_iov bodies alive (LISTs, GETs) */
    atomic_uint bodies_peak; /* most alive at once since the last trim */
    unsigned conns_peak;     /* acceptor: most connections open at once since the last trim */
    atomic_bool closing;     /* quiesced: each response from now on closes its connection */
    struct tls_certs *certs; /* https: the serving certificate, re-read when it changes */
    char *tls_trust;         /* --client-ca-file PEM, kept for the daemon's lifetime */
    int listen_fd;           /* ours: the acceptor hands connections to MHD (-1 once closed) */
    int wake_fd;             /* eventfd that stops the acceptor */
    pthread_t acceptor;
    bool acceptor_started;
    struct resume_batch rb;
    struct fanout *fanout; /* opts.stream_writers on plain TCP: the watch writers */
};

/* An extra response header, copied; freed once the reply is queued. */
struct http_hdr {
    char *name;
    char *value;
};

/*
 * One request. Everything a request keeps while it streams for hours is here and in the
 * app's state, so it is sized to what the request holds: the method, path and decoded query
 * pairs live in one allocation with the struct (<strs>), extra response headers exist only
 * between http_req_add_header and the reply, and the body only for requests that send one.
 */
struct http_req {
    struct http_server *srv;
    struct MHD_Connection *conn;
    const char *method;         /* into strs */
    const char *path;           /* into strs */
    const char *uri;            /* into strs: the request target as sent (path?query) */
    struct k8s_query_kv *query; /* n_query pairs, into strs */
    size_t n_query;
    bool query_overflow;
    bool body_too_large;
    bool replied;
    bool suspended;
    bool chunked;     /* HTTP/1.1 without "Connection: close": a stream goes out chunked */
    size_t pool_need; /* pool bytes the request itself occupies (request_pool_bytes) */
    char *body;
    size_t body_len;
    size_t body_cap;
    int64_t start_ms;
    int64_t start_ns; /* CLOCK_MONOTONIC, for the duration histogram */
    int code;         /* the status queued, 0 before a reply */
    char *note;       /* http_req_note: "user\0reason", or NULL (rare: failures only) */
    void *state;
    http_state_free_fn *state_free;
    http_handle_fn *owner_fn; /* set by http_req_take_over */
    void *owner_ctx;
    http_state_free_fn *owner_free;
    void *auth; /* http_req_set_auth: the auth gate's state */
    http_state_free_fn *auth_free;
    http_stream_fn *stream_fn;
    void *stream_ctx;
    struct MHD_Response *stream_resp; /* until the first read: its headers go (stream_reader) */
    struct http_hdr *hdr;             /* HTTP_MAX_EXTRA_HEADERS slots, allocated on the first add */
    size_t n_hdr;
    _Alignas(struct k8s_query_kv) char strs[]; /* query pairs, then NUL-terminated strings */
};

/* ---- small helpers ------------------------------------------------------------------- */

static int64_t clock_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static _Thread_local uint64_t rng_state;

static uint64_t rng_next(void)
{
    uint64_t x;

    if (rng_state == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        rng_state = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^
                    ((uint64_t)(uintptr_t)&ts) ^ 0x9E3779B97F4A7C15ull;
    }
    x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    rng_state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* A random (version 4) UUID for Audit-Id. */
static void uuid4(char out[37])
{
    static const char hex[] = "0123456789abcdef";
    uint64_t a = rng_next(), b = rng_next();
    unsigned char bytes[16];
    size_t o = 0;

    memcpy(bytes, &a, 8);
    memcpy(bytes + 8, &b, 8);
    bytes[6] = (unsigned char)((bytes[6] & 0x0f) | 0x40);
    bytes[8] = (unsigned char)((bytes[8] & 0x3f) | 0x80);
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            out[o++] = '-';
        }
        out[o++] = hex[bytes[i] >> 4];
        out[o++] = hex[bytes[i] & 15];
    }
    out[o] = '\0';
}

static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
    static struct log_ratelimit rl;
    char msg[512];
    size_t n;

    vsnprintf(msg, sizeof(msg), fmt, ap);
    n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) {
        msg[--n] = '\0';
    }
    for (size_t i = 0; i < n; i++) {
        if (msg[i] == '"') {
            msg[i] = '\'';
        }
    }
    log_ratelimited(&rl, 1000, LOG_LEVEL_DEBUG, "http", "msg=\"%s\"", msg);
}

/* Where http_server_query_decode collects the pairs k8s_query_parse keeps. */
struct query_sink {
    struct k8s_query_kv *pairs;
    size_t cap;
    size_t n;
    bool overflow;
};

static bool collect_arg(void *ctx, const char *key, const char *value)
{
    struct query_sink *q = ctx;

    if (q->n >= q->cap) {
        q->overflow = true;
        return false;
    }
    q->pairs[q->n].key = key;
    q->pairs[q->n].value = value;
    q->n++;
    return true;
}

size_t http_server_query_slots(const char *raw)
{
    size_t slots = 1;

    for (const char *p = strchr(raw, '&'); p != NULL && slots <= HTTP_MAX_QUERY;
         p = strchr(p + 1, '&')) {
        slots++;
    }
    return slots > HTTP_MAX_QUERY ? HTTP_MAX_QUERY : slots;
}

size_t http_server_query_decode(char *raw, struct k8s_query_kv *pairs, size_t cap, bool *overflow)
{
    struct query_sink q = {pairs, cap, 0, false};

    (void)k8s_query_parse(raw, collect_arg, &q);
    *overflow = q.overflow;
    return q.n;
}

bool http_server_has_token(const char *value, const char *token)
{
    const char *v = value;
    size_t tlen = strlen(token);

    while (v && *v) {
        size_t len;
        while (*v == ' ' || *v == '\t' || *v == ',') {
            v++;
        }
        len = strcspn(v, ",");
        while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t')) {
            len--;
        }
        if (len == tlen && strncasecmp(v, token, tlen) == 0) {
            return true;
        }
        v += strcspn(v, ",");
    }
    return false;
}

/* True when header <name> carries the comma-separated token <token> (case-insensitive). */
static bool header_has_token(struct MHD_Connection *conn, const char *name, const char *token)
{
    return http_server_has_token(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name), token);
}

static enum MHD_Result add_item_size(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    size_t *bytes = cls;

    *bytes += strlen(key) + (value ? strlen(value) : 0) + 4 + HTTP_POOL_PER_ITEM;
    return MHD_YES;
}

/*
 * About how much of the connection's pool the request occupies: MHD keeps the request line
 * and headers in it for the whole request, plus a record per header and per query pair.
 * The reply needs the rest (its headers; for a stream, its write buffer). A request that
 * leaves too little would make MHD close the connection without any answer.
 */
static size_t request_pool_bytes(struct MHD_Connection *conn, const char *method, const char *url)
{
    size_t bytes = strlen(method) + strlen(url) + sizeof(" HTTP/1.1\r\n\r\n");

    MHD_get_connection_values(conn, MHD_HEADER_KIND | MHD_GET_ARGUMENT_KIND, add_item_size, &bytes);
    return bytes;
}

/*
 * MHD_OPTION_URI_LOG_CALLBACK: libmicrohttpd calls it with the raw request target before
 * it decodes the query its own way (it keeps bad %-escapes and ';' as text), and what it
 * returns becomes the request's *req_cls: a placeholder request holding only the raw query,
 * which on_access replaces (req_new) and on_completed frees even when the request never
 * reached on_access. kwp decodes the query as kube-apiserver does (k8s_query_parse).
 */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    const char *q = strchr(uri, '?');
    size_t len = q ? strlen(q + 1) : 0, ulen = strlen(uri);
    struct http_req *pre = xcalloc(1, sizeof(*pre) + len + 1 + ulen + 1);

    (void)cls;
    pre->conn = conn;
    if (q) {
        memcpy(pre->strs, q + 1, len + 1);
    }
    memcpy(pre->strs + len + 1, uri, ulen + 1); /* the raw target, after the query's NUL */
    return pre;
}

/* A placeholder from on_uri: no method yet. */
static bool req_is_placeholder(const struct http_req *req)
{
    return req->method == NULL;
}

static const char *str_copy(char **next, const char *s)
{
    size_t len = strlen(s) + 1;
    char *dst = *next;

    memcpy(dst, s, len);
    *next += len;
    return dst;
}

/*
 * The request's struct with its method, path and decoded query in one allocation: the
 * pairs (at most one per '&' plus one, and at most HTTP_MAX_QUERY), the raw query decoded
 * in place, then the method and path. <pre> is on_uri's placeholder (freed here).
 */
static struct http_req *req_new(struct http_server *srv, struct MHD_Connection *conn,
                                const char *url, const char *method, const char *version,
                                struct http_req *pre)
{
    const char *raw = pre ? pre->strs : "";
    const char *target = pre ? raw + strlen(raw) + 1 : url;
    size_t rlen = strlen(raw) + 1, mlen = strlen(method) + 1, ulen = strlen(url) + 1;
    size_t tlen = strlen(target) + 1;
    size_t slots = http_server_query_slots(raw);
    struct http_req *req;
    char *next;

    req =
        xcalloc(1, sizeof(*req) + slots * sizeof(struct k8s_query_kv) + rlen + mlen + ulen + tlen);
    req->srv = srv;
    req->conn = conn;
    req->query = (struct k8s_query_kv *)(void *)req->strs;
    next = req->strs + slots * sizeof(struct k8s_query_kv);
    memcpy(next, raw, rlen);
    req->n_query = http_server_query_decode(next, req->query, slots, &req->query_overflow);
    next += rlen;
    req->method = str_copy(&next, method);
    req->path = str_copy(&next, url);
    req->uri = str_copy(&next, target);
    req->chunked = strcmp(version, MHD_HTTP_VERSION_1_1) == 0 &&
                   !header_has_token(conn, MHD_HTTP_HEADER_CONNECTION, "close");
    req->start_ms = clock_mono_ms();
    req->start_ns = clock_mono_ns();
    free(pre);
    return req;
}

static void req_free_headers(struct http_req *req)
{
    for (size_t i = 0; i < req->n_hdr; i++) {
        free(req->hdr[i].name);
        free(req->hdr[i].value);
    }
    free(req->hdr);
    req->hdr = NULL;
    req->n_hdr = 0;
}

static void req_free(struct http_req *req)
{
    if (req->state_free) {
        req->state_free(req->state);
    }
    if (req->owner_free) {
        req->owner_free(req->owner_ctx);
    }
    if (req->auth_free) {
        req->auth_free(req->auth);
    }
    req_free_headers(req);
    free(req->body);
    free(req->note);
    free(req);
}

/* ---- MHD callbacks ------------------------------------------------------------------- */

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **req_cls)
{
    struct http_server *srv = cls;
    struct http_req *req = *req_cls;

    if (!req || req_is_placeholder(req)) {
        req = req_new(srv, conn, url, method, version, req);
        req->pool_need = request_pool_bytes(conn, method, url);
        *req_cls = req;
        atomic_fetch_add(&srv->active, 1);
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        if (!req->body_too_large && req->body_len + n > srv->max_body) {
            req->body_too_large = true;
            free(req->body);
            req->body = NULL;
            req->body_len = req->body_cap = 0;
        }
        if (!req->body_too_large) {
            if (req->body_len + n + 1 > req->body_cap) {
                size_t cap = req->body_cap ? req->body_cap : 4096;
                while (cap < req->body_len + n + 1) {
                    cap *= 2;
                }
                req->body = xrealloc(req->body, cap);
                req->body_cap = cap;
            }
            memcpy(req->body + req->body_len, upload_data, n);
            req->body_len += n;
            req->body[req->body_len] = '\0';
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (req->replied) {
        return MHD_YES;
    }
    req->suspended = false;
    if (req->body_too_large) {
        struct kstatus st;
        kstatus_set(&st, 413, "RequestEntityTooLarge", "Request entity too large: limit is %zu",
                    srv->max_body);
        http_reply_status(req, &st);
        return MHD_YES;
    }
    if (req->pool_need + HTTP_POOL_HEADROOM > srv->pool) {
        struct kstatus st;
        kstatus_set(&st, 431, NULL,
                    "request headers too large: about %zu bytes of the %zu this server keeps "
                    "per connection (--conn-memory) are needed for the request alone",
                    req->pool_need, srv->pool);
        http_reply_status(req, &st);
        return MHD_YES;
    }
    if (req->query_overflow) {
        struct kstatus st;
        kstatus_set(&st, 400, "BadRequest", "too many query parameters (limit %d)", HTTP_MAX_QUERY);
        http_reply_status(req, &st);
        return MHD_YES;
    }
    if (req->owner_fn) {
        req->owner_fn(req->owner_ctx, req);
    } else {
        srv->handle(srv->app, req);
    }
    if (!req->replied && !req->suspended) {
        struct kstatus st;
        log_error("http", "method=%s path=%s msg=\"handler neither replied nor suspended\"",
                  req->method, req->path);
        kstatus_set(&st, 500, "InternalError", "Internal error occurred: no response");
        http_reply_status(req, &st);
    }
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct http_server *srv = cls;
    struct http_req *req = *req_cls;

    if (!req) {
        return;
    }
    *req_cls = NULL;
    if (req_is_placeholder(req)) {
        free(req); /* the request never reached on_access */
        return;
    }
    if (srv->done) {
        static const enum http_end ends[] = {
            [MHD_REQUEST_TERMINATED_COMPLETED_OK] = HTTP_END_OK,
            [MHD_REQUEST_TERMINATED_WITH_ERROR] = HTTP_END_ERROR,
            [MHD_REQUEST_TERMINATED_TIMEOUT_REACHED] = HTTP_END_TIMEOUT,
            [MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN] = HTTP_END_SHUTDOWN,
            [MHD_REQUEST_TERMINATED_READ_ERROR] = HTTP_END_ERROR,
            [MHD_REQUEST_TERMINATED_CLIENT_ABORT] = HTTP_END_CLIENT_GONE,
        };
        srv->done(srv->app, req,
                  (size_t)toe < sizeof(ends) / sizeof(ends[0]) ? ends[toe] : HTTP_END_ERROR);
    }
    req_free(req);
    atomic_fetch_sub(&srv->active, 1);
}

struct resp_hdrs {
    size_t n;
    const char *kv[2 * HTTP_STREAM_DROP_MAX];
};

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    struct resp_hdrs *h = cls;

    if (kind != MHD_HEADER_KIND || strcasecmp(key, "Connection") == 0) {
        return MHD_YES; /* MHD still reads "Connection" when the response ends */
    }
    if (h->n == HTTP_STREAM_DROP_MAX) {
        return MHD_NO;
    }
    h->kv[2 * h->n] = key;
    h->kv[2 * h->n + 1] = value;
    h->n++;
    return MHD_YES;
}

/*
 * A stream's response headers, once sent, are dead weight for as long as the stream lives:
 * MHD keeps each as three mallocs (the entry, a copy of the name, a copy of the value), ~400 B
 * for a watch's Audit-Id, Cache-Control and Content-Type, 6 % of an idle watch. MHD builds
 * the header block before it asks for the first byte of the body and reads the list again
 * only for footers and the "Connection" header, so the first read drops the rest. The
 * reader runs on the connection's own thread, the only one that touches its response.
 */
static void drop_sent_headers(struct MHD_Response *resp)
{
    struct resp_hdrs h = {0};

    (void)MHD_get_response_headers(resp, collect_header, &h);
    for (size_t i = 0; i < h.n; i++) {
        (void)MHD_del_response_header(resp, h.kv[2 * i], h.kv[2 * i + 1]);
    }
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct http_req *req = cls;
    ssize_t n;

    (void)pos;
    if (req->stream_resp) {
        drop_sent_headers(req->stream_resp);
        req->stream_resp = NULL;
    }
    n = req->stream_fn(req->stream_ctx, buf, max);

    if (n == HTTP_STREAM_END) {
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (n == HTTP_STREAM_ABORT) {
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    return n;
}

/* ---- server lifecycle ---------------------------------------------------------------- */

static int parse_listen(const char *listen, struct sockaddr_in *sa, char *err, size_t err_len)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    char *end = NULL;
    unsigned long port;
    size_t hlen;

    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    if (!colon) {
        snprintf(err, err_len, "listen address %s: want HOST:PORT", listen);
        return -EINVAL;
    }
    hlen = (size_t)(colon - listen);
    if (hlen >= sizeof(host)) {
        snprintf(err, err_len, "listen address %s: host too long", listen);
        return -EINVAL;
    }
    memcpy(host, listen, hlen);
    host[hlen] = '\0';
    errno = 0;
    port = strtoul(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || errno != 0 || port > 65535) {
        snprintf(err, err_len, "listen address %s: bad port", listen);
        return -EINVAL;
    }
    sa->sin_port = htons((uint16_t)port);
    if (hlen == 0 || strcmp(host, "0.0.0.0") == 0) {
        sa->sin_addr.s_addr = htonl(INADDR_ANY);
    } else if (strcmp(host, "localhost") == 0) {
        sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    } else if (inet_pton(AF_INET, host, &sa->sin_addr) != 1) {
        snprintf(err, err_len, "listen address %s: host must be an IPv4 address or localhost",
                 listen);
        return -EINVAL;
    }
    return 0;
}

/* Reads a whole PEM file (capped at 1 MiB). Returns a heap string or NULL. */
static char *read_pem(const char *path, char *err, size_t err_len)
{
    FILE *f = fopen(path, "r");
    char *buf;
    size_t n;

    if (!f) {
        snprintf(err, err_len, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    buf = xmalloc(1024 * 1024 + 1);
    n = fread(buf, 1, 1024 * 1024, f);
    fclose(f);
    buf[n] = '\0';
    if (n == 0 || n == 1024 * 1024) {
        snprintf(err, err_len, "%s: empty or larger than 1 MiB", path);
        free(buf);
        return NULL;
    }
    return buf;
}

/*
 * Watchers are connections, each a descriptor: raises the soft open-file limit up to the
 * hard one as far as <want> connections need, and returns how many connections the limit
 * allows (<want> when it is enough), saying so in the log when it is not.
 */
static unsigned nofile_connections(unsigned want)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)want + HTTP_FD_SLACK;
    unsigned allowed;

    if (getrlimit(RLIMIT_NOFILE, &rl) == -1) {
        return want;
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need ? rl.rlim_max : need;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
        (void)getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need) {
        return want;
    }
    allowed =
        rl.rlim_cur > 2 * HTTP_FD_SLACK ? (unsigned)(rl.rlim_cur - HTTP_FD_SLACK) : HTTP_FD_SLACK;
    log_warn("http",
             "max_connections=%u wanted=%u nofile_soft=%llu nofile_hard=%llu msg=\"the open-file "
             "limit caps downstream connections (watches); raise the hard limit (ulimit -Hn, "
             "systemd LimitNOFILE=, a container's nofile ulimit) for more\"",
             allowed, want, (unsigned long long)rl.rlim_cur,
             rl.rlim_max == RLIM_INFINITY ? 0ull : (unsigned long long)rl.rlim_max);
    return allowed;
}

/*
 * The acceptor. libmicrohttpd accepts at most 10 connections per turn of a worker's event
 * loop, and a turn serves every ready connection once: with thousands of busy watches a turn
 * lasts tens of milliseconds, the kernel's accept queue overflows and new clients wait for
 * SYN retransmits (1 s, 3 s, 7 s...) while the watches already open keep the workers busy.
 * So this thread accepts as fast as connections come and hands each to a worker
 * (MHD_add_connection, which wakes it); at the connection limit it leaves them queued.
 */
/*
 * Heap pages freed after a burst of replies, or after many connections closed. A burst of
 * LISTs (every new watch starts with one) leaves the heap full of holes where their reply
 * buffers lived, and glibc keeps those pages resident: with 2,000 watches arriving at once
 * they doubled the memory per idle watch. Closed connections do the same with their pools
 * (32 KiB each by default, below glibc's mmap threshold, so carved out of the heap): after
 * 5,000 watches ended, the soak's proxy stayed at 105 MB against a 21.5 MB baseline until a
 * malloc_trim by hand gave 83 MB back. So once most of a burst's replies are done, or the open
 * connections fell to half of their peak and by at least HTTP_TRIM_CONNS, malloc_trim gives
 * the free pages back. Checked by the acceptor at least once a second; costs nothing without
 * bursts; one trim of a 100 MB heap takes a few milliseconds.
 */
static atomic_ulong malloc_trims; /* process-wide, as the heap is */

unsigned long http_server_malloc_trims(void)
{
    return atomic_load(&malloc_trims);
}

bool http_trim_due(unsigned peak, unsigned now, unsigned min_drop, unsigned ratio)
{
    return peak >= now + min_drop && (unsigned long long)now * ratio <= peak;
}

static void trim_after_burst(struct http_server *srv)
{
    unsigned peak = atomic_load(&srv->bodies_peak);
    unsigned now = atomic_load(&srv->bodies);
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(srv->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    unsigned conns = info ? info->num_connections : srv->conns_peak;
    bool bodies_done = peak >= HTTP_TRIM_BURST && http_trim_due(peak, now, 0, HTTP_TRIM_RATIO);
    bool conns_gone = http_trim_due(srv->conns_peak, conns, HTTP_TRIM_CONNS, HTTP_TRIM_CONN_RATIO);

    if (conns > srv->conns_peak) {
        srv->conns_peak = conns;
    }
    if (bodies_done || conns_gone) {
#ifdef __GLIBC__
        (void)malloc_trim(0);
        atomic_fetch_add(&malloc_trims, 1);
#endif
        atomic_store(&srv->bodies_peak, now);
        srv->conns_peak = conns;
    }
}

static void *acceptor_main(void *arg)
{
    struct http_server *srv = arg;
    struct pollfd pfd[2] = {{srv->listen_fd, POLLIN, 0}, {srv->wake_fd, POLLIN, 0}};

    for (;;) {
        int ready = poll(pfd, 2, HTTP_TRIM_CHECK_MS);

        if (ready == -1) {
            if (errno == EINTR) {
                continue;
            }
            log_error("http", "msg=\"acceptor poll failed: %s\"", strerror(errno));
            return NULL;
        }
        if (pfd[1].revents != 0) {
            return NULL; /* http_server_quiesce */
        }
        trim_after_burst(srv);
        if (ready == 0) {
            continue;
        }
        for (unsigned i = 0; i < HTTP_ACCEPT_BATCH; i++) {
            struct sockaddr_storage ss;
            socklen_t len = sizeof(ss);
            const union MHD_DaemonInfo *info =
                MHD_get_daemon_info(srv->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
            int fd, err;

            if (info && info->num_connections >= srv->max_conn) {
                struct timespec ts = {0, HTTP_ACCEPT_FULL_WAIT_MS * 1000000L};
                nanosleep(&ts, NULL); /* full: clients wait in the backlog */
                break;
            }
            /* MHD_add_connection makes it non-blocking and non-inheritable */
            fd = accept(srv->listen_fd, (struct sockaddr *)&ss, &len);
            if (fd == -1) {
                static struct log_ratelimit rl;
                err = errno;
                if (err == EAGAIN || err == EWOULDBLOCK) {
                    break;
                }
                if (err == EINTR || err == ECONNABORTED) {
                    continue;
                }
                log_ratelimited(&rl, 1000, LOG_LEVEL_WARN, "http", "msg=\"accept failed: %s\"",
                                strerror(err));
                if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
                    struct timespec ts = {0, HTTP_ACCEPT_FULL_WAIT_MS * 1000000L};
                    nanosleep(&ts, NULL);
                }
                break;
            }
            if (MHD_add_connection(srv->d, fd, (const struct sockaddr *)&ss, len) != MHD_YES) {
                static struct log_ratelimit rl;
                log_ratelimited(&rl, 1000, LOG_LEVEL_WARN, "http",
                                "msg=\"connection refused by the server: %s\"", strerror(errno));
            }
        }
    }
}

/* Binds and listens; returns the socket or -1 with a message in <err>. */
static int listen_on(const char *listen_str, struct sockaddr_in *sa, char *err, size_t err_len)
{
    int one = 1, e;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    socklen_t len = sizeof(*sa);

    if (fd == -1) {
        e = errno;
        snprintf(err, err_len, "cannot listen on %s: %s", listen_str, strerror(e));
        return -1;
    }
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) == -1 ||
        listen(fd, HTTP_LISTEN_BACKLOG) == -1 ||
        getsockname(fd, (struct sockaddr *)sa, &len) == -1) {
        e = errno;
        snprintf(err, err_len, "cannot listen on %s: %s", listen_str, strerror(e));
        close(fd);
        return -1;
    }
    return fd;
}

/*
 * Batched resumes. Every event wakes every watch it concerns, and each resume costs a
 * system call on the waking thread plus a separate write on the worker: at 10,000 watches
 * x 100 events/s that is a million of each per second, one event per write. Gathering the
 * resumes of stream watches and issuing them at most once per interval makes every write
 * carry the events of that interval, and costs an idle server nothing: the first wake after
 * a quiet interval goes out at once.
 */
static void *flusher_main(void *arg)
{
    struct resume_batch *rb = arg;
    struct http_req **local = NULL;
    size_t local_cap = 0;

    pthread_mutex_lock(&rb->mu);
    for (;;) {
        size_t n;
        int64_t now, wait;

        while (rb->n == 0 && !rb->stop) {
            pthread_cond_wait(&rb->cv, &rb->mu);
        }
        if (rb->n == 0) {
            break; /* stopped, nothing left */
        }
        now = clock_mono_ns();
        wait = rb->last_ns + rb->interval_ns - now;
        if (wait > 0 && !rb->stop) {
            struct timespec ts = {wait / 1000000000L, wait % 1000000000L};
            pthread_mutex_unlock(&rb->mu);
            nanosleep(&ts, NULL);
            pthread_mutex_lock(&rb->mu);
            continue;
        }
        if (local_cap < rb->n) {
            local_cap = rb->cap;
            local = xrealloc(local, local_cap * sizeof(*local));
        }
        n = rb->n;
        memcpy(local, rb->q, n * sizeof(*local));
        rb->n = 0;
        rb->last_ns = now;
        rb->direct_ns = 0;
        pthread_mutex_unlock(&rb->mu);
        for (size_t i = 0; i < n; i++) {
            MHD_resume_connection(local[i]->conn);
        }
        pthread_mutex_lock(&rb->mu);
    }
    pthread_mutex_unlock(&rb->mu);
    free(local);
    return NULL;
}

/* Issues every queued resume and ends the flusher (before MHD_stop_daemon). */
static void flusher_stop(struct resume_batch *rb)
{
    if (!rb->started) {
        return;
    }
    pthread_mutex_lock(&rb->mu);
    rb->stop = true;
    pthread_cond_signal(&rb->cv);
    pthread_mutex_unlock(&rb->mu);
    pthread_join(rb->thread, NULL);
    rb->started = false;
}

static void srv_free(struct http_server *srv)
{
    fanout_free(srv->fanout); /* gives every stream back (resumed) before MHD stops */
    srv->fanout = NULL;
    flusher_stop(&srv->rb);
    if (srv->d) {
        MHD_stop_daemon(srv->d);
    }
    if (srv->listen_fd >= 0) {
        close(srv->listen_fd);
    }
    if (srv->wake_fd >= 0) {
        close(srv->wake_fd);
    }
    pthread_mutex_destroy(&srv->rb.mu);
    pthread_cond_destroy(&srv->rb.cv);
    free(srv->rb.q);
    tls_certs_free(srv->certs); /* after MHD_stop_daemon: no handshake can run */
    free(srv->tls_trust);
    free(srv);
}

struct http_server *http_server_start(const struct http_server_opts *opts, http_handle_fn *handle,
                                      void *app, char *err, size_t err_len)
{
    struct http_server *srv;
    struct sockaddr_in sa;
    unsigned threads = opts->threads ? opts->threads : 1;
    unsigned max_conn =
        opts->max_connections ? opts->max_connections : HTTP_DEFAULT_MAX_CONNECTIONS;
    size_t pool = opts->conn_memory ? opts->conn_memory : HTTP_DEFAULT_CONN_MEMORY;
    char host[64];
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
                     MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;

    if (parse_listen(opts->listen, &sa, err, err_len) != 0) {
        return NULL;
    }
    max_conn = nofile_connections(max_conn);
    if ((opts->tls_cert_file != NULL) != (opts->tls_key_file != NULL)) {
        snprintf(err, err_len, "https needs both a certificate and a key file");
        return NULL;
    }
    srv = xcalloc(1, sizeof(*srv));
    srv->handle = handle;
    srv->app = app;
    srv->done = opts->done;
    srv->max_body = opts->max_body ? opts->max_body : HTTP_DEFAULT_MAX_BODY;
    srv->pool = pool;
    srv->max_conn = max_conn;
    srv->listen_fd = -1;
    srv->wake_fd = -1;
    pthread_mutex_init(&srv->rb.mu, NULL);
    pthread_cond_init(&srv->rb.cv, NULL);
    srv->rb.interval_ns = opts->resume_interval_ms > 0 ? opts->resume_interval_ms * 1000000LL : 0;
    if (opts->client_ca_file && !opts->tls_cert_file) {
        snprintf(err, err_len, "client certificates (a client CA file) need https");
        srv_free(srv);
        return NULL;
    }
    if (opts->tls_cert_file) {
        const char *files[2] = {opts->tls_cert_file, opts->tls_key_file};

        for (int i = 0; i < 2; i++) {
            FILE *f = fopen(files[i], "r"); /* a clear message for a missing file */

            if (!f) {
                snprintf(err, err_len, "cannot open %s: %s", files[i], strerror(errno));
                srv_free(srv);
                return NULL;
            }
            fclose(f);
        }
        srv->certs = tls_certs_new(opts->tls_cert_file, opts->tls_key_file, err, err_len);
        if (!srv->certs) {
            srv_free(srv);
            return NULL;
        }
        flags |= MHD_USE_TLS;
    }
    if (opts->client_ca_file) {
        srv->tls_trust = read_pem(opts->client_ca_file, err, err_len);
        if (!srv->tls_trust) {
            srv_free(srv);
            return NULL;
        }
    }
    srv->listen_fd = listen_on(opts->listen, &sa, err, err_len);
    srv->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (srv->listen_fd < 0 || srv->wake_fd < 0) {
        if (srv->listen_fd >= 0) {
            snprintf(err, err_len, "eventfd: %s", strerror(errno));
        }
        srv_free(srv);
        return NULL;
    }
    {
        struct MHD_OptionItem ops[16];
        size_t n = 0;
#define OPT(o, v, p) ops[n++] = (struct MHD_OptionItem){o, (intptr_t)(v), p}
        OPT(MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_logger, NULL);
        OPT(MHD_OPTION_CONNECTION_LIMIT, max_conn, NULL);
        OPT(MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool, NULL);
        OPT(MHD_OPTION_CONNECTION_TIMEOUT, 0, NULL);
        OPT(MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, srv);
        OPT(MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_uri, srv);
        if (threads > 1) {
            OPT(MHD_OPTION_THREAD_POOL_SIZE, threads, NULL);
        }
        if (srv->certs) {
            OPT(MHD_OPTION_HTTPS_CERT_CALLBACK, 0, tls_certs_callback());
        }
        if (srv->tls_trust) {
            OPT(MHD_OPTION_HTTPS_MEM_TRUST, 0, srv->tls_trust);
        }
        OPT(MHD_OPTION_END, 0, NULL);
#undef OPT
        srv->d = MHD_start_daemon(flags, 0, NULL, NULL, on_access, srv, MHD_OPTION_ARRAY, ops,
                                  MHD_OPTION_END);
    }
    if (!srv->d) {
        snprintf(err, err_len, "cannot start the HTTP server on %s: %s", opts->listen,
                 errno ? strerror(errno) : "MHD_start_daemon failed");
        srv_free(srv);
        return NULL;
    }
    if (pthread_create(&srv->rb.thread, NULL, flusher_main, &srv->rb) != 0) {
        snprintf(err, err_len, "cannot start the resume thread");
        srv_free(srv);
        return NULL;
    }
    srv->rb.started = true;
    if (opts->stream_writers && !srv->certs) {
        /* the same rounds as http_resume_batched: they pay from ~2,000 watches on */
        srv->fanout = fanout_new(threads, opts->resume_interval_ms, HTTP_WRITER_ROUND_MIN_STREAMS);
        if (!srv->fanout) {
            snprintf(err, err_len, "cannot start the watch writer threads");
            srv_free(srv);
            return NULL;
        }
    }
    if (pthread_create(&srv->acceptor, NULL, acceptor_main, srv) != 0) {
        snprintf(err, err_len, "cannot start the accept thread");
        srv_free(srv);
        return NULL;
    }
    srv->acceptor_started = true;
    inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host));
    snprintf(srv->url, sizeof(srv->url), "%s://%s:%u", srv->certs ? "https" : "http",
             sa.sin_addr.s_addr == htonl(INADDR_ANY) ? "0.0.0.0" : host,
             (unsigned)ntohs(sa.sin_port));
    return srv;
}

const char *http_server_url(const struct http_server *srv)
{
    return srv->url;
}

void http_server_quiesce(struct http_server *srv)
{
    uint64_t one = 1;

    atomic_store(&srv->closing, true);
    if (srv->acceptor_started) {
        (void)!write(srv->wake_fd, &one, sizeof(one));
        pthread_join(srv->acceptor, NULL);
        srv->acceptor_started = false;
    }
    if (srv->listen_fd >= 0) {
        close(srv->listen_fd); /* new clients are refused from now on */
        srv->listen_fd = -1;
    }
}

void http_server_stop(struct http_server *srv)
{
    if (!srv) {
        return;
    }
    http_server_quiesce(srv);
    srv_free(srv); /* queued resumes go out before MHD_stop_daemon */
}

unsigned http_server_active(const struct http_server *srv)
{
    return atomic_load(&((struct http_server *)srv)->active);
}

/* ---- request accessors --------------------------------------------------------------- */

const char *http_req_method(const struct http_req *req)
{
    return req->method;
}

const char *http_req_path(const struct http_req *req)
{
    return req->path;
}

const struct k8s_query_kv *http_req_query(const struct http_req *req, size_t *n)
{
    *n = req->n_query;
    return req->query;
}

const char *http_req_arg(const struct http_req *req, const char *key)
{
    for (size_t i = 0; i < req->n_query; i++) {
        if (strcmp(req->query[i].key, key) == 0) {
            return req->query[i].value ? req->query[i].value : "";
        }
    }
    return NULL;
}

const char *http_req_header(const struct http_req *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *http_req_uri(const struct http_req *req)
{
    return req->uri;
}

struct header_walk {
    http_header_fn *fn;
    void *ctx;
};

static enum MHD_Result walk_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    struct header_walk *w = cls;

    (void)kind;
    return w->fn(w->ctx, key, value ? value : "") ? MHD_YES : MHD_NO;
}

void http_req_headers(const struct http_req *req, http_header_fn *fn, void *ctx)
{
    struct header_walk w = {fn, ctx};

    MHD_get_connection_values(req->conn, MHD_HEADER_KIND, walk_header, &w);
}

int http_req_client_identity(const struct http_req *req, struct identity **out)
{
    const union MHD_ConnectionInfo *ci;

    *out = NULL;
    if (req->srv->tls_trust == NULL) {
        return -ENOENT;
    }
    ci = MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (ci == NULL || ci->tls_session == NULL) {
        return -ENOENT;
    }
    return tls_client_identity(ci->tls_session, out);
}

void http_req_set_auth(struct http_req *req, void *ctx, http_state_free_fn *free_fn)
{
    req->auth = ctx;
    req->auth_free = free_fn;
}

void *http_req_auth(const struct http_req *req)
{
    return req->auth;
}

const char *http_req_body(const struct http_req *req, size_t *len)
{
    *len = req->body_len;
    return req->body ? req->body : "";
}

int http_req_fd(const struct http_req *req)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

int64_t http_req_start_ms(const struct http_req *req)
{
    return req->start_ms;
}

int64_t http_req_start_ns(const struct http_req *req)
{
    return req->start_ns;
}

int http_req_code(const struct http_req *req)
{
    return req->code;
}

bool http_req_is_taken_over(const struct http_req *req)
{
    return req->owner_fn != NULL;
}

void http_req_note(struct http_req *req, const char *user, const char *fmt, ...)
{
    char reason[512];
    size_t ulen, rlen;
    va_list ap;

    if (req == NULL || req->note != NULL) {
        return; /* the first says why */
    }
    va_start(ap, fmt);
    (void)vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    user = user ? user : "";
    ulen = strlen(user);
    rlen = strlen(reason);
    req->note = xmalloc(ulen + rlen + 2);
    memcpy(req->note, user, ulen + 1);
    memcpy(req->note + ulen + 1, reason, rlen + 1);
}

const char *http_req_note_reason(const struct http_req *req, const char **user)
{
    if (req->note == NULL) {
        return NULL;
    }
    if (user) {
        *user = req->note;
    }
    return req->note + strlen(req->note) + 1;
}

void http_req_set_stall_timeout(struct http_req *req, unsigned seconds)
{
    MHD_set_connection_option(req->conn, MHD_CONNECTION_OPTION_TIMEOUT, seconds);
}

void http_req_set_send_buffer(struct http_req *req, int bytes)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);

    if (ci != NULL &&
        setsockopt(ci->connect_fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes)) != 0) {
        log_debug("http", "msg=\"SO_SNDBUF: %s\"", strerror(errno));
    }
}

void http_req_set_state(struct http_req *req, void *state, http_state_free_fn *free_fn)
{
    req->state = state;
    req->state_free = free_fn;
}

void *http_req_state(const struct http_req *req)
{
    return req->state;
}

void http_req_take_over(struct http_req *req, http_handle_fn *fn, void *ctx,
                        http_state_free_fn *free_fn)
{
    req->owner_fn = fn;
    req->owner_ctx = ctx;
    req->owner_free = free_fn;
}

/* ---- replies ------------------------------------------------------------------------- */

void http_req_add_header(struct http_req *req, const char *name, const char *value)
{
    if (req->n_hdr >= HTTP_MAX_EXTRA_HEADERS) {
        return;
    }
    if (!req->hdr) {
        req->hdr = xcalloc(HTTP_MAX_EXTRA_HEADERS, sizeof(*req->hdr));
    }
    req->hdr[req->n_hdr].name = xstrdup(name);
    req->hdr[req->n_hdr].value = xstrdup(value);
    req->n_hdr++;
}

static void queue(struct http_req *req, int code, const char *content_type,
                  struct MHD_Response *resp)
{
    char audit[37];
    const char *given = http_req_header(req, "Audit-ID");
    bool have_cc = false;
    bool have_audit = false;

    BUG_ON(req->replied);
    BUG_ON(!resp);
    for (size_t i = 0; i < req->n_hdr; i++) {
        MHD_add_response_header(resp, req->hdr[i].name, req->hdr[i].value);
        if (strcasecmp(req->hdr[i].name, "Cache-Control") == 0) {
            have_cc = true;
        }
        if (strcasecmp(req->hdr[i].name, "Audit-Id") == 0) {
            have_audit = true; /* the passthrough copies the apiserver's */
        }
    }
    if (have_audit) {
        /* already there */
    } else if (given && given[0] && strlen(given) < 128) {
        MHD_add_response_header(resp, "Audit-Id", given);
    } else {
        uuid4(audit);
        MHD_add_response_header(resp, "Audit-Id", audit);
    }
    if (!have_cc) {
        MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
    }
    if (content_type) {
        MHD_add_response_header(resp, "Content-Type", content_type);
    }
    if (code >= 400) {
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    }
    if (atomic_load(&req->srv->closing)) {
        /* shutting down: a client's next request must open a connection (to another
         * replica), as Go's http.Server does once Shutdown began */
        MHD_add_response_header(resp, "Connection", "close");
    }
    req_free_headers(req); /* MHD copied them */
    req->replied = true;
    req->code = code;
    if (MHD_queue_response(req->conn, (unsigned)code, resp) != MHD_YES) {
        log_warn("http", "path=%s code=%d msg=\"cannot queue response\"", req->path, code);
    }
    MHD_destroy_response(resp);
}

void http_reply(struct http_req *req, int code, const char *content_type, const char *body,
                size_t len)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    queue(req, code, content_type, resp);
}

void http_reply_status(struct http_req *req, const struct kstatus *st)
{
    char small[2048];
    char *buf = small;
    size_t need = kstatus_json(st, small, sizeof(small) - 1);

    if (need + 2 > sizeof(small)) {
        buf = xmalloc(need + 2);
        kstatus_json(st, buf, need + 1);
    }
    buf[need] = '\n';
    if (st->retry_after > 0) {
        char ra[16];
        snprintf(ra, sizeof(ra), "%d", st->retry_after);
        http_req_add_header(req, "Retry-After", ra);
    }
    http_reply(req, st->code, "application/json", buf, need + 1);
    if (buf != small) {
        free(buf);
    }
}

/* A gathered body read piece by piece into MHD's buffer (MHD 0.9.75's own iovec responses
 * abort on more than IOV_MAX pieces, and a list has two per item). */
struct iovbody {
    struct http_server *srv;
    struct iovec *iov;
    size_t n;
    size_t idx;
    size_t off;
    void (*done)(void *ctx);
    void *ctx;
};

static ssize_t iov_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct iovbody *b = cls;
    size_t w = 0;

    while (w < max && b->idx < b->n) {
        const struct iovec *v = &b->iov[b->idx];
        size_t left = v->iov_len - b->off, take = left < max - w ? left : max - w;
        memcpy(buf + w, (const char *)v->iov_base + b->off, take);
        w += take;
        b->off += take;
        if (b->off == v->iov_len) {
            b->idx++;
            b->off = 0;
        }
    }
    if (w == 0) {
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    return (ssize_t)w;
}

static void iov_free(void *cls)
{
    struct iovbody *b = cls;
    if (b->done) {
        b->done(b->ctx);
    }
    atomic_fetch_sub(&b->srv->bodies, 1);
    free(b->iov);
    free(b);
}

void http_reply_iov(struct http_req *req, int code, const char *content_type,
                    const struct iovec *iov, size_t n, void (*done)(void *ctx), void *ctx)
{
    struct iovbody *b = xcalloc(1, sizeof(*b));
    uint64_t total = 0;
    unsigned alive;
    struct MHD_Response *resp;

    b->iov = xmalloc(sizeof(*iov) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        b->iov[b->n] = iov[i];
        total += iov[i].iov_len;
        if (iov[i].iov_len > 0) {
            b->n++;
        }
    }
    b->done = done;
    b->ctx = ctx;
    b->srv = req->srv;
    alive = atomic_fetch_add(&req->srv->bodies, 1) + 1;
    if (alive > atomic_load(&req->srv->bodies_peak)) {
        atomic_store(&req->srv->bodies_peak, alive); /* a lost race only delays a trim */
    }
    resp = MHD_create_response_from_callback(total, 16 * 1024, iov_reader, b, iov_free);
    queue(req, code, content_type, resp);
}

void http_reply_stream(struct http_req *req, int code, const char *content_type, http_stream_fn *fn,
                       void *ctx)
{
    struct MHD_Response *resp;

    req->stream_fn = fn;
    req->stream_ctx = ctx;
    /* A chunked stream is read straight into the connection's write buffer (its pool), so
     * the response's own block is never used: keep it minimal, it lives as long as the
     * watch. Without chunking (HTTP/1.0, Connection: close) MHD reads into that block. */
    resp = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, req->chunked ? HTTP_STREAM_BLOCK_CHUNKED : HTTP_STREAM_BLOCK_PLAIN,
        stream_reader, req, NULL);
    req->stream_resp = resp;
    queue(req, code, content_type, resp);
}

void http_suspend(struct http_req *req)
{
    req->suspended = true;
    MHD_suspend_connection(req->conn);
}

void http_stream_suspend(struct http_req *req)
{
    MHD_suspend_connection(req->conn);
}

struct fanout *http_req_fanout(const struct http_req *req)
{
    return req->chunked ? req->srv->fanout : NULL;
}

void http_resume(struct http_req *req)
{
    MHD_resume_connection(req->conn);
}

void http_resume_batched(struct http_req *req)
{
    struct resume_batch *rb = &req->srv->rb;
    int64_t now = clock_mono_ns();

    if (atomic_load(&req->srv->active) < HTTP_BATCH_MIN_ACTIVE) {
        MHD_resume_connection(req->conn); /* few watches: no reason to wait */
        return;
    }
    pthread_mutex_lock(&rb->mu);
    if (rb->n == 0 && now - rb->last_ns >= rb->interval_ns) {
        /* quiet for an interval: a new round starts now, on this thread (no hop through the
         * flusher); the wakes of the same moment (one event waking many) join it */
        rb->last_ns = now;
        rb->direct_ns = now + HTTP_ROUND_NS;
    }
    if (rb->stop || (rb->n == 0 && now < rb->direct_ns)) {
        pthread_mutex_unlock(&rb->mu);
        MHD_resume_connection(req->conn);
        return;
    }
    if (rb->n == rb->cap) {
        rb->cap = rb->cap ? rb->cap * 2 : 1024;
        rb->q = xrealloc(rb->q, rb->cap * sizeof(*rb->q));
    }
    rb->q[rb->n++] = req;
    if (rb->n == 1) {
        pthread_cond_signal(&rb->cv);
    }
    pthread_mutex_unlock(&rb->mu);
}
