/*
 * passthrough.c - streams requests the cache does not answer to the upstream apiserver.
 *
 * Threads: passthrough_forward, xfer_handle (the request handler after each resume),
 * xfer_read (the body reader) and xfer_detach (completion) run on MHD threads. Every curl call
 * on an added easy handle and on the multi runs on the passthrough thread (pt_thread); the MHD
 * side reaches it only through the op queue (pt->mtx, then curl_multi_wakeup).
 *
 * Locks: pt->mtx guards the op queue and the transfer count; t->mtx guards one transfer's
 * buffer and state. Neither is held while the other is taken, and no curl, MHD or log call
 * runs under t->mtx. curl_multi_wakeup runs under pt->mtx (see pt_post for why).
 *
 * Lifetime: a transfer holds one reference for the MHD side (dropped by xfer_detach when the
 * request completes), one for the curl side (while the easy handle is in the multi) and one
 * while it sits in the op queue. The passthrough itself is freed when its owner has called
 * passthrough_free and the last transfer is gone, so a straggler never touches freed memory.
 */
#include "proxy/passthrough.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include <curl/curl.h>

#include "cache/bug.h"
#include "cache/gotext.h"
#include "cache/sbuf.h"
#include "proxy/authz_status.h"
#include "proxy/impersonate.h"
#include "proxy/k8s_path.h"
#include "proxy/kstatus.h"
#include "proxy/log.h"
#include "proxy/reqstats.h"

#define PT_INITIAL_BUFFER (32 * 1024) /* the buffer grows to opts.buffer_bytes on demand */
#define PT_MAX_RESP_HEADERS 14        /* copied response headers (http_server keeps 16) */
#define PT_RESP_HEADER_MAX 4096       /* bytes of one copied response header value */
#define PT_RESP_HEADERS_TOTAL 16384   /* bytes of all copied response header values */
#define PT_REQ_HEADER_MAX 8192        /* request header values above this are not forwarded */
#define PT_POLL_MAX_MS 1000

/* Request headers forwarded when present. Authorization never is: upstream_begin adds the
 * proxy's own. Hop-by-hop headers (Connection, Keep-Alive, TE, Upgrade, ...) are absent. */
static const char *const pt_req_headers[] = {
    "Accept",          "Accept-Encoding", "Accept-Language",   "Audit-ID",
    "Content-Type",    "If-Match",        "If-Modified-Since", "If-None-Match",
    "Kubectl-Command", "Kubectl-Session", "User-Agent",
};

/* Response headers copied to the client (Content-Type goes through the reply call). */
static const char *const pt_resp_headers[] = {
    "Content-Encoding",
    "Retry-After",
    "Warning",
    "Audit-Id",
    "X-Kubernetes-Pf-Flowschema-Uid",
    "X-Kubernetes-Pf-Prioritylevel-Uid",
    "Location",
    "Vary",
    "ETag",
    "Cache-Control",
    "Expires",
    "Last-Modified",
};

enum xfer_op {
    XFER_OP_ADD = 1,     /* add the easy handle to the multi */
    XFER_OP_UNPAUSE = 2, /* the reader made room: curl_easy_pause(CONT) */
    XFER_OP_ABORT = 4,   /* the downstream request is gone: remove the easy handle */
};

struct xfer {
    atomic_uint refs;       /* MHD side + curl side + queued op */
    struct passthrough *pt; /* counted in pt->live until xfer_free */
    int fd;                 /* downstream socket; used only while `suspended` */
    char *what;             /* "METHOD path" for log lines (immutable) */
    int verb;               /* enum reqstats_verb of the request (immutable) */

    /* ---- curl thread only, once queued (built by passthrough_forward before) ---------- */
    CURL *e;       /* NULL once cleaned up */
    bool in_multi; /* e is in pt->multi, and the curl reference is held */
    struct curl_slist *req_hdrs;
    char *body;                /* request body copy; curl reads it while uploading */
    struct upstream_call call; /* credential sent; call.errbuf is read by the MHD side
                                * only after `finished` */
    struct xfer *prev, *next;  /* pt->active */

    /* ---- written by the curl thread until headers_done, then immutable ----------------- */
    long code;
    char *content_type;
    struct {
        const char *name; /* from pt_resp_headers */
        char *value;
    } hdrs[PT_MAX_RESP_HEADERS];
    size_t n_hdrs;
    size_t hdr_bytes;
    bool head; /* a HEAD request: the reply has no body */

    /* ---- under pt->mtx ------------------------------------------------------------------ */
    unsigned ops; /* enum xfer_op bits not yet run */
    bool queued;
    struct xfer *qnext;

    /* ---- under mtx ---------------------------------------------------------------------- */
    pthread_mutex_t mtx;
    struct http_req *req; /* NULL once the downstream request completed */
    bool suspended;       /* req is (about to be) suspended; who clears it resumes */
    bool headers_done;    /* code, content_type and hdrs are final */
    bool finished;        /* the curl side is done; result is final */
    bool shutdown;        /* finished by passthrough_free */
    bool peer_gone;       /* the sweep saw the client close */
    bool paused;          /* the write callback returned CURL_WRITEFUNC_PAUSE */
    bool unpause_posted;  /* an UNPAUSE op is on its way */
    bool line_mode;       /* JSON, not encoded: prefer chunks ending on '\n' */
    bool discard;         /* replied without a body: drop what arrives */
    CURLcode result;
    char *buf;   /* buffered body: buf[off .. off+len) */
    size_t size; /* allocated bytes of buf */
    size_t off;
    size_t len;
    size_t want; /* size of the chunk that did not fit (while paused) */
};

struct passthrough {
    struct upstream *up;          /* borrowed */
    struct passthrough_opts opts; /* defaults applied */
    CURLM *multi;
    pthread_t thread;
    atomic_bool stop; /* passthrough_free asks the thread to exit */

    pthread_mutex_t mtx; /* guards the fields down to owner_gone */
    pthread_cond_t idle; /* broadcast when live drops to 0 */
    struct xfer *q_head; /* op queue */
    struct xfer *q_tail;
    bool stopped;    /* the thread takes no more ops; multi may be gone */
    size_t live;     /* transfers not yet freed */
    bool owner_gone; /* passthrough_free returned: the last xfer_free frees pt */

    struct xfer *active;   /* transfers in the multi: curl thread only */
    int64_t next_sweep_ms; /* curl thread only */

    atomic_uint_fast64_t requests;
    atomic_uint_fast64_t bytes_upstream;
    atomic_uint_fast64_t bytes_client;
    atomic_uint_fast64_t upstream_errors;
    atomic_uint_fast64_t stream_errors;
    atomic_uint_fast64_t client_aborts;
    atomic_uint_fast64_t rejected;
    atomic_uint_fast64_t pauses;
};

static void pt_destroy(struct passthrough *pt)
{
    pthread_cond_destroy(&pt->idle);
    pthread_mutex_destroy(&pt->mtx);
    free(pt);
}

/* ---- transfers: references ---------------------------------------------------------- */

static void xfer_free(struct xfer *t)
{
    struct passthrough *pt = t->pt;
    bool destroy;

    BUG_ON(t->in_multi);
    if (t->e) {
        curl_easy_cleanup(t->e); /* never added (shutdown) or setup failed */
    }
    curl_slist_free_all(t->req_hdrs);
    for (size_t i = 0; i < t->n_hdrs; i++) {
        free(t->hdrs[i].value);
    }
    free(t->content_type);
    free(t->body);
    free(t->buf);
    free(t->what);
    pthread_mutex_destroy(&t->mtx);
    free(t);

    pthread_mutex_lock(&pt->mtx);
    BUG_ON(pt->live == 0);
    pt->live--;
    destroy = pt->live == 0 && pt->owner_gone;
    if (pt->live == 0) {
        pthread_cond_broadcast(&pt->idle);
    }
    pthread_mutex_unlock(&pt->mtx);
    if (destroy) {
        pt_destroy(pt);
    }
}

static void xfer_ref(struct xfer *t)
{
    unsigned old = atomic_fetch_add(&t->refs, 1);
    BUG_ON(old == 0);
}

static void xfer_unref(struct xfer *t)
{
    unsigned old = atomic_fetch_sub(&t->refs, 1);

    BUG_ON(old == 0);
    if (old == 1) {
        xfer_free(t);
    }
}

/*
 * Queues <op> for the curl thread. Returns false once the thread has stopped (nothing
 * queued). curl_multi_wakeup runs under pt->mtx on purpose: after the unlock the thread may
 * stop and passthrough_free clean the multi up; the thread never holds pt->mtx inside curl.
 */
static bool pt_post(struct passthrough *pt, struct xfer *t, enum xfer_op op)
{
    pthread_mutex_lock(&pt->mtx);
    if (pt->stopped) {
        pthread_mutex_unlock(&pt->mtx);
        return false;
    }
    t->ops |= (unsigned)op;
    if (!t->queued) {
        t->queued = true;
        t->qnext = NULL;
        if (pt->q_tail) {
            pt->q_tail->qnext = t;
        } else {
            pt->q_head = t;
        }
        pt->q_tail = t;
        xfer_ref(t);
    }
    curl_multi_wakeup(pt->multi);
    pthread_mutex_unlock(&pt->mtx);
    return true;
}

/* Clears `suspended` if set and returns the request the caller must resume (or NULL).
 * Under t->mtx. */
static struct http_req *xfer_take_wake(struct xfer *t)
{
    if (!t->suspended) {
        return NULL;
    }
    t->suspended = false;
    BUG_ON(!t->req); /* a suspended request cannot have completed */
    return t->req;
}

/* ---- the curl side (passthrough thread) --------------------------------------------- */

/* Stores one copied response header, within the caps. Curl thread, before headers_done. */
static void xfer_keep_header(struct xfer *t, const char *name, const char *v, size_t vlen)
{
    if (vlen > PT_RESP_HEADER_MAX || t->hdr_bytes + vlen > PT_RESP_HEADERS_TOTAL) {
        return;
    }
    if (strcasecmp(name, "Content-Type") == 0) {
        free(t->content_type);
        t->content_type = xstrndup(v, vlen);
        t->hdr_bytes += vlen;
        return;
    }
    for (size_t i = 0; i < sizeof(pt_resp_headers) / sizeof(pt_resp_headers[0]); i++) {
        if (strcasecmp(name, pt_resp_headers[i]) == 0) {
            if (t->n_hdrs < PT_MAX_RESP_HEADERS) {
                t->hdrs[t->n_hdrs].name = pt_resp_headers[i];
                t->hdrs[t->n_hdrs].value = xstrndup(v, vlen);
                t->n_hdrs++;
                t->hdr_bytes += vlen;
            }
            return;
        }
    }
}

/* Forgets the headers of an interim (1xx) response. */
static void xfer_reset_headers(struct xfer *t)
{
    for (size_t i = 0; i < t->n_hdrs; i++) {
        free(t->hdrs[i].value);
    }
    t->n_hdrs = 0;
    t->hdr_bytes = 0;
    free(t->content_type);
    t->content_type = NULL;
}

/* True when the body is JSON text sent as is: chunks may then wait for a whole line. */
static bool xfer_is_line_body(const struct xfer *t)
{
    if (!t->content_type || !strstr(t->content_type, "json")) {
        return false;
    }
    for (size_t i = 0; i < t->n_hdrs; i++) {
        if (strcmp(t->hdrs[i].name, "Content-Encoding") == 0 &&
            strcasecmp(t->hdrs[i].value, "identity") != 0) {
            return false;
        }
    }
    return true;
}

static size_t on_header(char *data, size_t size, size_t nitems, void *ud)
{
    struct xfer *t = ud;
    size_t n = size * nitems;
    size_t len = n;
    const char *colon;
    struct http_req *wake;
    char name[64];
    size_t name_len;
    const char *v;
    size_t vlen;

    if (t->headers_done) {
        return n; /* trailers */
    }
    while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r')) {
        len--;
    }
    if (len >= 5 && memcmp(data, "HTTP/", 5) == 0) {
        xfer_reset_headers(t); /* a new status line: interim responses carry nothing for us */
        return n;
    }
    if (len == 0) {
        long code = 0;

        curl_easy_getinfo(t->e, CURLINFO_RESPONSE_CODE, &code);
        if (code < 200) {
            xfer_reset_headers(t);
            return n;
        }
        pthread_mutex_lock(&t->mtx);
        t->code = code;
        t->line_mode = xfer_is_line_body(t);
        t->headers_done = true;
        wake = xfer_take_wake(t);
        pthread_mutex_unlock(&t->mtx);
        if (wake) {
            http_resume(wake);
        }
        return n;
    }
    colon = memchr(data, ':', len);
    if (!colon || colon == data || (size_t)(colon - data) >= sizeof(name)) {
        return n;
    }
    name_len = (size_t)(colon - data);
    memcpy(name, data, name_len);
    name[name_len] = '\0';
    v = colon + 1;
    vlen = len - name_len - 1;
    while (vlen > 0 && (*v == ' ' || *v == '\t')) {
        v++;
        vlen--;
    }
    while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t')) {
        vlen--;
    }
    xfer_keep_header(t, name, v, vlen);
    return n;
}

/* Makes room for <n> more bytes within the cap. Returns false when they do not fit now.
 * Under t->mtx. */
static bool xfer_make_room(struct xfer *t, size_t cap, size_t n)
{
    size_t need = t->len + n;

    /* an empty buffer always takes one chunk, so a chunk above the cap cannot stall */
    if (need > cap && t->len > 0) {
        return false;
    }
    if (t->off + need <= t->size) {
        return true;
    }
    if (t->off > 0) {
        memmove(t->buf, t->buf + t->off, t->len);
        t->off = 0;
    }
    if (need > t->size) {
        size_t sz = t->size ? t->size : PT_INITIAL_BUFFER;

        while (sz < need) {
            sz *= 2;
        }
        if (sz > cap && need <= cap) {
            sz = cap;
        }
        t->buf = xrealloc(t->buf, sz);
        t->size = sz;
    }
    return true;
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *ud)
{
    struct xfer *t = ud;
    struct passthrough *pt = t->pt;
    size_t n = size * nmemb;
    struct http_req *wake;

    pthread_mutex_lock(&t->mtx);
    if (!t->req) {
        pthread_mutex_unlock(&t->mtx);
        return 0; /* the client is gone: CURLE_WRITE_ERROR ends the transfer */
    }
    if (t->discard) {
        pthread_mutex_unlock(&t->mtx);
        return n;
    }
    if (!xfer_make_room(t, pt->opts.buffer_bytes, n)) {
        t->paused = true;
        t->want = n;
        atomic_fetch_add_explicit(&pt->pauses, 1, memory_order_relaxed);
        wake = xfer_take_wake(t); /* a reader holding back a partial line must flush now */
        pthread_mutex_unlock(&t->mtx);
        if (wake) {
            http_resume(wake);
        }
        return CURL_WRITEFUNC_PAUSE;
    }
    memcpy(t->buf + t->off + t->len, data, n);
    t->len += n;
    wake = xfer_take_wake(t);
    pthread_mutex_unlock(&t->mtx);
    if (wake) {
        http_resume(wake);
    }
    atomic_fetch_add_explicit(&pt->bytes_upstream, n, memory_order_relaxed);
    return n;
}

static void pt_link_active(struct passthrough *pt, struct xfer *t)
{
    t->prev = NULL;
    t->next = pt->active;
    if (pt->active) {
        pt->active->prev = t;
    }
    pt->active = t;
}

static void pt_unlink_active(struct passthrough *pt, struct xfer *t)
{
    if (t->prev) {
        t->prev->next = t->next;
    } else {
        pt->active = t->next;
    }
    if (t->next) {
        t->next->prev = t->prev;
    }
    t->prev = t->next = NULL;
}

/*
 * Ends the curl side of <t>: removes and frees the easy handle (if it was added), publishes
 * <result>, wakes the request if it waits, logs and counts failures, and drops the curl
 * reference. Curl thread.
 */
static void xfer_finish(struct passthrough *pt, struct xfer *t, CURLcode result, bool shutdown)
{
    static struct log_ratelimit rl_down;
    static struct log_ratelimit rl_cut;
    struct http_req *wake;
    bool had_req;
    bool headers_done;
    bool was_in_multi = t->in_multi;
    long code;

    if (t->in_multi) {
        curl_multi_remove_handle(pt->multi, t->e);
        pt_unlink_active(pt, t);
        t->in_multi = false;
    }
    if (t->e) {
        if (was_in_multi) {
            upstream_observe(t->e, t->verb, t->headers_done ? t->code : 0);
        }
        curl_easy_cleanup(t->e);
        t->e = NULL;
    }
    if (result == CURLE_OK && !t->headers_done) {
        result = CURLE_GOT_NOTHING;
        snprintf(t->call.errbuf, sizeof(t->call.errbuf), "no response headers");
    }
    pthread_mutex_lock(&t->mtx);
    t->finished = true;
    t->result = result;
    t->shutdown = shutdown;
    had_req = t->req != NULL;
    headers_done = t->headers_done;
    code = headers_done ? t->code : 0;
    wake = xfer_take_wake(t);
    pthread_mutex_unlock(&t->mtx);
    if (wake) {
        http_resume(wake);
    }
    if (was_in_multi && !shutdown) {
        upstream_done(pt->up, &t->call, result, code); /* a 401 makes the credential stale */
    }
    if (result != CURLE_OK && had_req && !shutdown) {
        const char *msg = t->call.errbuf[0] ? t->call.errbuf : curl_easy_strerror(result);

        if (!headers_done) {
            atomic_fetch_add_explicit(&pt->upstream_errors, 1, memory_order_relaxed);
            log_ratelimited(&rl_down, 5000, LOG_LEVEL_WARN, "passthrough",
                            "req=\"%s\" err=\"%s\" msg=\"upstream unavailable, answered 503\"",
                            t->what, msg);
        } else {
            atomic_fetch_add_explicit(&pt->stream_errors, 1, memory_order_relaxed);
            log_ratelimited(&rl_cut, 5000, LOG_LEVEL_WARN, "passthrough",
                            "req=\"%s\" err=\"%s\" msg=\"upstream stream failed, cut\"", t->what,
                            msg);
        }
    }
    if (was_in_multi) {
        xfer_unref(t); /* the curl reference */
    }
}

/* Runs the ops queued for <t> and drops the queue's reference. Curl thread. */
static void xfer_run_ops(struct passthrough *pt, struct xfer *t, unsigned ops, bool stopping)
{
    bool gone;

    pthread_mutex_lock(&t->mtx);
    gone = t->req == NULL;
    if (ops & XFER_OP_UNPAUSE) {
        t->unpause_posted = false;
    }
    pthread_mutex_unlock(&t->mtx);

    if ((ops & XFER_OP_ADD) && !t->in_multi && t->e) {
        if (gone || stopping) {
            xfer_finish(pt, t, CURLE_ABORTED_BY_CALLBACK, stopping);
        } else if (curl_multi_add_handle(pt->multi, t->e) != CURLM_OK) {
            snprintf(t->call.errbuf, sizeof(t->call.errbuf), "curl_multi_add_handle failed");
            xfer_finish(pt, t, CURLE_FAILED_INIT, false);
        } else {
            xfer_ref(t); /* the curl reference, dropped in xfer_finish */
            t->in_multi = true;
            pt_link_active(pt, t);
        }
    }
    if ((ops & XFER_OP_ABORT) && t->in_multi) {
        xfer_finish(pt, t, CURLE_ABORTED_BY_CALLBACK, false);
    }
    if ((ops & XFER_OP_UNPAUSE) && t->in_multi) {
        /* may call on_write right away with the data curl held back */
        curl_easy_pause(t->e, CURLPAUSE_CONT);
    }
    xfer_unref(t); /* the queue's reference */
}

/* Takes the whole op queue and runs it. Curl thread. */
static void pt_run_queue(struct passthrough *pt, bool stopping)
{
    struct xfer *t;

    pthread_mutex_lock(&pt->mtx);
    t = pt->q_head;
    pt->q_head = pt->q_tail = NULL;
    if (stopping) {
        pt->stopped = true;
    }
    pthread_mutex_unlock(&pt->mtx);
    while (t) {
        struct xfer *next;
        unsigned ops;

        pthread_mutex_lock(&pt->mtx);
        next = t->qnext;
        ops = t->ops;
        t->ops = 0;
        t->queued = false;
        t->qnext = NULL;
        pthread_mutex_unlock(&pt->mtx);
        xfer_run_ops(pt, t, ops, stopping);
        t = next;
    }
}

static void pt_reap(struct passthrough *pt)
{
    for (;;) {
        int left = 0;
        CURLMsg *msg = curl_multi_info_read(pt->multi, &left);
        char *priv = NULL;

        if (!msg) {
            break;
        }
        if (msg->msg != CURLMSG_DONE) {
            continue;
        }
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
        BUG_ON(!priv);
        xfer_finish(pt, (struct xfer *)priv, msg->data.result, false);
    }
}

/*
 * Suspended requests do not notice a client that closed (TOOLCHAIN 2.1), so an idle watch
 * would keep its upstream transfer until the next byte. Peek at each suspended request's
 * socket: EOF or an error wakes it and the request ends. Curl thread; only this thread clears
 * `suspended`, and a suspended request cannot complete, so t->fd stays valid after unlocking.
 */
static void pt_sweep(struct passthrough *pt)
{
    for (struct xfer *t = pt->active; t; t = t->next) {
        bool check;
        char ch;
        ssize_t r;
        int err;
        struct http_req *wake = NULL;

        pthread_mutex_lock(&t->mtx);
        check = t->suspended && t->fd >= 0;
        pthread_mutex_unlock(&t->mtx);
        if (!check) {
            continue;
        }
        r = recv(t->fd, &ch, 1, MSG_PEEK | MSG_DONTWAIT);
        err = errno;
        if (r > 0 || (r == -1 && (err == EAGAIN || err == EWOULDBLOCK || err == EINTR))) {
            continue;
        }
        pthread_mutex_lock(&t->mtx);
        t->peer_gone = true;
        wake = xfer_take_wake(t);
        pthread_mutex_unlock(&t->mtx);
        if (wake) {
            http_resume(wake);
        }
    }
}

static void *pt_thread(void *arg)
{
    struct passthrough *pt = arg;
    int running = 0;

    while (!atomic_load(&pt->stop)) {
        int64_t now;
        int64_t wait_ms;

        pt_run_queue(pt, false);
        curl_multi_perform(pt->multi, &running);
        pt_reap(pt);
        now = clock_mono_ms();
        if (now >= pt->next_sweep_ms) {
            pt_sweep(pt);
            pt->next_sweep_ms = now + pt->opts.sweep_interval_ms;
        }
        wait_ms = pt->next_sweep_ms - now;
        if (wait_ms > PT_POLL_MAX_MS) {
            wait_ms = PT_POLL_MAX_MS;
        }
        if (wait_ms < 1) {
            wait_ms = 1;
        }
        curl_multi_poll(pt->multi, NULL, 0, (int)wait_ms, NULL);
    }
    /* stop: no more ops after this; fail what was queued, abort what runs */
    pt_run_queue(pt, true);
    while (pt->active) {
        xfer_finish(pt, pt->active, CURLE_ABORTED_BY_CALLBACK, true);
    }
    return NULL;
}

/* ---- the MHD side --------------------------------------------------------------------- */

/* The last '\n' in s[0..n), or NULL (memrchr without _GNU_SOURCE). */
static const char *last_newline(const char *s, size_t n)
{
    while (n > 0) {
        n--;
        if (s[n] == '\n') {
            return s + n;
        }
    }
    return NULL;
}

/*
 * Copies buffered body bytes into <dst> (at most <max>). JSON bodies end a chunk after the
 * last '\n' that fits and hold back a partial line while more may come (a watch event then
 * reaches the client in one chunk); a line longer than <max> is cut, never inside a UTF-8
 * character. Returns the bytes copied. Under t->mtx.
 */
static size_t xfer_take(struct xfer *t, char *dst, size_t max)
{
    const char *src = t->buf + t->off;
    size_t n = t->len < max ? t->len : max;

    if (n == 0) {
        return 0;
    }
    BUG_ON(t->buf == NULL); /* len > 0 bytes are held in buf */
    if (t->line_mode && !t->finished && !t->paused) {
        const char *nl = last_newline(src, n);

        if (nl) {
            n = (size_t)(nl - src) + 1;
        } else if (t->len < max) {
            return 0; /* a partial line, and the rest fits later */
        } else {
            n = gotext_utf8_cut(src, n, t->len);
        }
    }
    memcpy(dst, src, n);
    t->off += n;
    t->len -= n;
    if (t->len == 0) {
        t->off = 0;
    }
    return n;
}

/* The streamed body (http_stream_fn). MHD thread. */
static ssize_t xfer_read(void *ctx, char *buf, size_t max)
{
    struct xfer *t = ctx;
    struct passthrough *pt = t->pt;
    struct http_req *req;
    size_t n;
    bool unpause = false;
    bool ended_ok;

    pthread_mutex_lock(&t->mtx);
    req = t->req;
    if (t->shutdown || t->peer_gone) {
        pthread_mutex_unlock(&t->mtx);
        return HTTP_STREAM_ABORT;
    }
    n = xfer_take(t, buf, max);
    if (t->paused && !t->unpause_posted &&
        (t->len == 0 || t->len + t->want <= pt->opts.buffer_bytes)) {
        t->paused = false;
        t->unpause_posted = true;
        unpause = true;
    }
    if (n > 0 || !t->finished) {
        if (n == 0) {
            t->suspended = true;
        }
        pthread_mutex_unlock(&t->mtx);
        if (unpause) {
            (void)pt_post(pt, t, XFER_OP_UNPAUSE);
        }
        if (n > 0) {
            atomic_fetch_add_explicit(&pt->bytes_client, n, memory_order_relaxed);
            return (ssize_t)n;
        }
        /* after the unlock: a resume that comes first cancels this suspend (MHD) */
        http_stream_suspend(req);
        return 0;
    }
    ended_ok = t->result == CURLE_OK;
    if (!ended_ok && !t->shutdown) {
        /* errbuf was written before `finished` was published under mtx */
        http_req_note(req, NULL, "upstream stream failed: %s",
                      t->call.errbuf[0] ? t->call.errbuf : curl_easy_strerror(t->result));
    }
    pthread_mutex_unlock(&t->mtx);
    return ended_ok ? HTTP_STREAM_END : HTTP_STREAM_ABORT;
}

/* 503 ServiceUnavailable for an upstream that gave no response. MHD thread. */
static void xfer_reply_unavailable(struct xfer *t, struct http_req *req, CURLcode result,
                                   bool shutdown, bool peer_gone)
{
    struct kstatus st;
    const char *msg;

    if (shutdown) {
        msg = "the proxy is shutting down";
    } else if (peer_gone) {
        msg = "the client disconnected"; /* nobody reads it: the write fails, MHD ends it */
    } else {
        msg = t->call.errbuf[0] ? t->call.errbuf : curl_easy_strerror(result);
    }
    kstatus_set(&st, 503, "ServiceUnavailable", "the upstream kube-apiserver is unavailable: %s",
                msg);
    if (!peer_gone) {
        http_req_note(req, NULL, "upstream unavailable: %s", msg);
    }
    http_reply_status(req, &st);
}

/*
 * The request handler after passthrough_forward and after every resume until a reply is
 * queued (http_req_take_over routes it here). Replies once the upstream headers are in or
 * the transfer failed; otherwise suspends again. MHD thread.
 */
static void xfer_handle(void *ctx, struct http_req *req)
{
    struct xfer *t = ctx;
    bool headers_done;
    bool finished;
    bool peer_gone;
    bool shutdown;
    bool no_body = false;
    CURLcode result;

    pthread_mutex_lock(&t->mtx);
    headers_done = t->headers_done;
    finished = t->finished;
    peer_gone = t->peer_gone;
    shutdown = t->shutdown;
    result = t->result;
    if (headers_done && !shutdown && !peer_gone) {
        no_body = t->head || t->code == 204 || t->code == 304;
        t->discard = no_body;
    }
    if (!headers_done && !finished && !peer_gone) {
        t->suspended = true;
    }
    pthread_mutex_unlock(&t->mtx);

    if (peer_gone || shutdown || (finished && !headers_done)) {
        xfer_reply_unavailable(t, req, result, shutdown, peer_gone);
        return;
    }
    if (!headers_done) {
        http_suspend(req); /* after the unlock: see xfer_read */
        return;
    }
    /* headers are immutable now: no lock needed to read them */
    for (size_t i = 0; i < t->n_hdrs; i++) {
        http_req_add_header(req, t->hdrs[i].name, t->hdrs[i].value);
    }
    if (no_body) {
        http_reply(req, (int)t->code, t->content_type, "", 0);
    } else {
        http_reply_stream(req, (int)t->code, t->content_type, xfer_read, t);
    }
}

/* The request completed (http_req_take_over's free function): detach, abort the upstream
 * transfer if it still runs, drop the MHD reference. MHD thread. */
static void xfer_detach(void *ctx)
{
    struct xfer *t = ctx;
    struct passthrough *pt = t->pt;
    bool running;

    pthread_mutex_lock(&t->mtx);
    BUG_ON(t->suspended);
    t->req = NULL;
    t->fd = -1;
    running = !t->finished;
    pthread_mutex_unlock(&t->mtx);
    if (running) {
        atomic_fetch_add_explicit(&pt->client_aborts, 1, memory_order_relaxed);
        (void)pt_post(pt, t, XFER_OP_ABORT);
    }
    xfer_unref(t);
}

/* ---- building the upstream request ---------------------------------------------------- */

/* MHD hands the path percent-decoded: encode again what a URL path cannot carry as is
 * (RFC 3986 pchar plus '/'; '%' itself is encoded, so "%2F" in a name survives as "%252F"
 * would not: such names do not exist in Kubernetes). */
static void path_escape(struct sbuf *sb, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";

    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char c = *p;

        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            strchr("-._~!$&'()*+,;=:@/", c)) {
            sbuf_putc(sb, (char)c);
        } else {
            sbuf_putc(sb, '%');
            sbuf_putc(sb, hex[c >> 4]);
            sbuf_putc(sb, hex[c & 15]);
        }
    }
}

/* "/path?k=v&flag&k2=" from the decoded request; keys escaped too, no "=" without a value.
 * The caller frees the result. */
static char *xfer_target(struct http_req *req)
{
    struct sbuf sb = {0};
    size_t n = 0;
    const struct k8s_query_kv *q = http_req_query(req, &n);

    path_escape(&sb, http_req_path(req));
    for (size_t i = 0; i < n; i++) {
        sbuf_putc(&sb, i == 0 ? '?' : '&');
        gotext_query_escape(&sb, q[i].key);
        if (q[i].value) {
            sbuf_putc(&sb, '=');
            gotext_query_escape(&sb, q[i].value);
        }
    }
    return sbuf_take(&sb);
}

static int slist_add(struct curl_slist **list, const char *line)
{
    struct curl_slist *l = curl_slist_append(*list, line);

    if (!l) {
        return -ENOMEM;
    }
    *list = l;
    return 0;
}

/* Forwards the allowlisted request headers. Returns 0 or -ENOMEM. */
static int xfer_copy_headers(struct xfer *t, struct http_req *req, bool *have_ct)
{
    char line[PT_REQ_HEADER_MAX + 64];

    *have_ct = false;
    for (size_t i = 0; i < sizeof(pt_req_headers) / sizeof(pt_req_headers[0]); i++) {
        const char *v = http_req_header(req, pt_req_headers[i]);

        if (!v || strlen(v) > PT_REQ_HEADER_MAX || strpbrk(v, "\r\n")) {
            continue;
        }
        /* curl drops "Name:" with an empty value; "Name;" sends it empty */
        snprintf(line, sizeof(line), v[0] ? "%s: %s" : "%s;", pt_req_headers[i], v);
        if (slist_add(&t->req_hdrs, line) != 0) {
            return -ENOMEM;
        }
        if (strcmp(pt_req_headers[i], "Content-Type") == 0) {
            *have_ct = true;
        }
    }
    /* no Expect: 100-continue round trip; no curl default Content-Type for a body */
    return slist_add(&t->req_hdrs, "Expect:");
}

static int emit_impersonate(void *ctx, const char *name, const char *value)
{
    struct xfer *t = ctx;
    struct sbuf line = {0};
    int rc;

    sbuf_printf(&line, "%s: %s", name, value);
    rc = slist_add(&t->req_hdrs, line.p);
    sbuf_free(&line);
    return rc;
}

/* Builds the easy handle for <req>, acting as <as> upstream when not NULL. Returns 0,
 * -EINVAL when <as> cannot be sent as Impersonate-* headers, -EACCES (no credential: the exec
 * plugin failed) or -ENOMEM, with t->e possibly set (freed with the transfer). MHD thread,
 * before the transfer is queued; may wait for an exec plugin run (upstream_begin). */
static int xfer_setup(struct xfer *t, struct http_req *req, const struct identity *as)
{
    struct passthrough *pt = t->pt;
    const char *method = http_req_method(req);
    char *target = NULL;
    bool have_ct = false;
    int rc = -ENOMEM;

    t->e = curl_easy_init();
    if (!t->e) {
        goto out;
    }
    t->verb = (int)reqstats_verb_of_request(req, NULL);
    target = xfer_target(req);
    if (xfer_copy_headers(t, req, &have_ct) != 0) {
        goto out;
    }
    if (as != NULL) {
        rc = impersonate_headers(as, emit_impersonate, t);
        if (rc != 0) {
            goto out;
        }
        rc = -ENOMEM;
    }
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(t->e, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(t->e, CURLOPT_NOBODY, 1L);
        t->head = true;
    } else {
        size_t body_len = 0;
        const char *body = http_req_body(req, &body_len);

        if (body_len > 0 || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
            strcmp(method, "PATCH") == 0) {
            t->body = xmalloc(body_len + 1);
            memcpy(t->body, body, body_len);
            t->body[body_len] = '\0';
            curl_easy_setopt(t->e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
            curl_easy_setopt(t->e, CURLOPT_POSTFIELDS, t->body);
            if (!have_ct && slist_add(&t->req_hdrs, "Content-Type:") != 0) {
                goto out;
            }
        }
        curl_easy_setopt(t->e, CURLOPT_CUSTOMREQUEST, method);
    }
    /* the body passes untouched: the client's Accept-Encoding decides */
    rc = upstream_begin(pt->up, t->e, target, 0, &t->req_hdrs, &t->call);
    if (rc != 0) {
        goto out;
    }
    curl_easy_setopt(t->e, CURLOPT_HTTPHEADER, t->req_hdrs);
    curl_easy_setopt(t->e, CURLOPT_CONNECTTIMEOUT_MS, (long)pt->opts.connect_timeout_ms);
    /* a watch may idle for many minutes: no total timeout and no low-speed limit */
    curl_easy_setopt(t->e, CURLOPT_TIMEOUT_MS, 0L);
    curl_easy_setopt(t->e, CURLOPT_LOW_SPEED_TIME, 0L);
    curl_easy_setopt(t->e, CURLOPT_FOLLOWLOCATION, 0L);
    /* HTTP/1.1 by default: a transfer paused for a slow client then holds only its own
     * connection, never the HTTP/2 connection other clients' requests share (TOOLCHAIN 3) */
    curl_easy_setopt(t->e, CURLOPT_HTTP_VERSION,
                     pt->opts.http2 ? (long)CURL_HTTP_VERSION_2TLS : (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(t->e, CURLOPT_HTTP_CONTENT_DECODING, 0L); /* gzip passes through */
    curl_easy_setopt(t->e, CURLOPT_PRIVATE, (char *)t);
    curl_easy_setopt(t->e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(t->e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(t->e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(t->e, CURLOPT_WRITEDATA, t);
    rc = 0;
out:
    free(target);
    return rc;
}

/* A transfer for <req> with the MHD reference, counted in pt->live. Returns 0, -EAGAIN at
 * max_transfers or -ECANCELED after the thread stopped. */
static int xfer_new(struct passthrough *pt, struct http_req *req, struct xfer **out)
{
    struct xfer *t;
    size_t wlen;

    pthread_mutex_lock(&pt->mtx);
    if (pt->stopped || atomic_load(&pt->stop)) {
        pthread_mutex_unlock(&pt->mtx);
        return -ECANCELED;
    }
    if (pt->live >= pt->opts.max_transfers) {
        pthread_mutex_unlock(&pt->mtx);
        return -EAGAIN;
    }
    pt->live++;
    pthread_mutex_unlock(&pt->mtx);

    t = xcalloc(1, sizeof(*t));
    atomic_init(&t->refs, 1);
    t->pt = pt;
    t->req = req;
    t->fd = http_req_fd(req);
    wlen = strlen(http_req_method(req)) + strlen(http_req_path(req)) + 2;
    if (wlen > 512) {
        wlen = 512;
    }
    t->what = xmalloc(wlen);
    snprintf(t->what, wlen, "%s %s", http_req_method(req), http_req_path(req));
    for (char *p = t->what; *p; p++) {
        if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20) {
            *p = '?';
        }
    }
    pthread_mutex_init(&t->mtx, NULL);
    *out = t;
    return 0;
}

/* ---- public API ----------------------------------------------------------------------- */

void passthrough_forward(struct passthrough *pt, struct http_req *req)
{
    passthrough_forward_as(pt, req, NULL);
}

void passthrough_forward_as(struct passthrough *pt, struct http_req *req, const struct identity *as)
{
    struct xfer *t = NULL;
    struct kstatus st;
    int rc;

    rc = xfer_new(pt, req, &t);
    if (rc == -EAGAIN) {
        atomic_fetch_add_explicit(&pt->rejected, 1, memory_order_relaxed);
        /* kube-apiserver's max-in-flight answer */
        kstatus_set(&st, 429, "TooManyRequests", "Too many requests, please try again later.");
        st.retry_after = 1;
        http_reply_status(req, &st);
        return;
    }
    if (rc != 0) {
        kstatus_set(&st, 503, "ServiceUnavailable",
                    "the upstream kube-apiserver is unavailable: the proxy is shutting down");
        http_reply_status(req, &st);
        return;
    }
    rc = xfer_setup(t, req, as);
    if (rc == -EINVAL) {
        char text[1024];
        size_t n = authz_status_internal_error(
            http_req_uri(req),
            "cannot carry the caller's identity upstream as impersonation headers", text,
            sizeof(text));

        xfer_unref(t);
        http_reply(req, 500, AUTHZ_STATUS_TEXT_TYPE, text, n < sizeof(text) ? n : sizeof(text) - 1);
        return;
    }
    if (rc == -EACCES) {
        /* the exec plugin gave no credential: /readyz and the log say why */
        xfer_unref(t);
        kstatus_set(&st, 503, "ServiceUnavailable",
                    "the upstream kube-apiserver is unavailable: the proxy has no credentials "
                    "for it (its exec plugin failed)");
        st.retry_after = 1;
        http_reply_status(req, &st);
        return;
    }
    if (rc != 0) {
        xfer_unref(t);
        kstatus_set(&st, 500, "InternalError",
                    "Internal error occurred: cannot set up the upstream request");
        http_reply_status(req, &st);
        return;
    }
    atomic_fetch_add_explicit(&pt->requests, 1, memory_order_relaxed);
    if (pt->opts.stall_timeout_s > 0) {
        http_req_set_stall_timeout(req, pt->opts.stall_timeout_s);
    }
    http_req_take_over(req, xfer_handle, t, xfer_detach);
    if (!pt_post(pt, t, XFER_OP_ADD)) {
        pthread_mutex_lock(&t->mtx);
        t->finished = true;
        t->shutdown = true;
        t->result = CURLE_ABORTED_BY_CALLBACK;
        pthread_mutex_unlock(&t->mtx);
    }
    xfer_handle(t, req);
}

struct passthrough *passthrough_new(struct upstream *up, const struct passthrough_opts *o,
                                    char *err, size_t err_len)
{
    struct passthrough *pt;
    int rc;

    pt = xcalloc(1, sizeof(*pt));
    pt->up = up;
    if (o) {
        pt->opts = *o;
    }
    if (pt->opts.buffer_bytes == 0) {
        pt->opts.buffer_bytes = PASSTHROUGH_DEFAULT_BUFFER;
    }
    if (pt->opts.buffer_bytes < PASSTHROUGH_MIN_BUFFER) {
        pt->opts.buffer_bytes = PASSTHROUGH_MIN_BUFFER;
    }
    if (pt->opts.connect_timeout_ms <= 0) {
        pt->opts.connect_timeout_ms = PASSTHROUGH_DEFAULT_CONNECT_MS;
    }
    if (pt->opts.shutdown_wait_ms <= 0) {
        pt->opts.shutdown_wait_ms = PASSTHROUGH_DEFAULT_SHUTDOWN_MS;
    }
    if (pt->opts.sweep_interval_ms <= 0) {
        pt->opts.sweep_interval_ms = PASSTHROUGH_DEFAULT_SWEEP_MS;
    }
    if (pt->opts.max_transfers == 0) {
        pt->opts.max_transfers = PASSTHROUGH_DEFAULT_MAX_TRANSFERS;
    }
    pthread_mutex_init(&pt->mtx, NULL);
    pthread_cond_init(&pt->idle, NULL);
    pt->multi = curl_multi_init();
    if (!pt->multi) {
        snprintf(err, err_len, "passthrough: curl_multi_init failed");
        goto err_free_pt;
    }
    pt->next_sweep_ms = clock_mono_ms() + pt->opts.sweep_interval_ms;
    rc = pthread_create(&pt->thread, NULL, pt_thread, pt);
    if (rc != 0) {
        snprintf(err, err_len, "passthrough: cannot start thread: %s", strerror(rc));
        goto err_free_multi;
    }
    return pt;

err_free_multi:
    curl_multi_cleanup(pt->multi);
err_free_pt:
    pt_destroy(pt);
    return NULL;
}

void passthrough_free(struct passthrough *pt)
{
    struct timespec deadline;
    bool destroy;
    size_t left;

    if (!pt) {
        return;
    }
    atomic_store(&pt->stop, true);
    curl_multi_wakeup(pt->multi);
    pthread_join(pt->thread, NULL);
    /* the thread set `stopped`: nobody calls into the multi any more */
    curl_multi_cleanup(pt->multi);
    pt->multi = NULL;

    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += pt->opts.shutdown_wait_ms / 1000;
    deadline.tv_nsec += (pt->opts.shutdown_wait_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&pt->mtx);
    while (pt->live > 0) {
        if (pthread_cond_timedwait(&pt->idle, &pt->mtx, &deadline) == ETIMEDOUT) {
            break;
        }
    }
    left = pt->live;
    pt->owner_gone = true;
    destroy = pt->live == 0;
    pthread_mutex_unlock(&pt->mtx);
    if (left > 0) {
        log_warn("passthrough", "requests=%zu msg=\"requests still open at shutdown\"", left);
    }
    if (destroy) {
        pt_destroy(pt);
    }
}

void passthrough_stats(const struct passthrough *pt, struct passthrough_stats *out)
{
    struct passthrough *p = (struct passthrough *)pt; /* the mutex is not part of the value */

    memset(out, 0, sizeof(*out));
    out->requests = atomic_load_explicit(&p->requests, memory_order_relaxed);
    out->bytes_upstream = atomic_load_explicit(&p->bytes_upstream, memory_order_relaxed);
    out->bytes_client = atomic_load_explicit(&p->bytes_client, memory_order_relaxed);
    out->upstream_errors = atomic_load_explicit(&p->upstream_errors, memory_order_relaxed);
    out->stream_errors = atomic_load_explicit(&p->stream_errors, memory_order_relaxed);
    out->client_aborts = atomic_load_explicit(&p->client_aborts, memory_order_relaxed);
    out->rejected = atomic_load_explicit(&p->rejected, memory_order_relaxed);
    out->pauses = atomic_load_explicit(&p->pauses, memory_order_relaxed);
    pthread_mutex_lock(&p->mtx);
    out->active = p->live;
    pthread_mutex_unlock(&p->mtx);
}
