/*
 * handlers_int.h - private to handlers*.c: the per-request state of LIST, WATCH and GET
 * (struct hreq) and the few helpers handlers.c lends the other two rooms. The public API is
 * handlers.h; nothing outside proxy/handlers*.c includes this file (bench and tests reach
 * the watch through handlers_watch.h's bare entry points instead).
 *
 * It is the one header without a .c of its own stem (STYLE rule 1): handlers.c implements
 * what it declares, and the state is shared by handlers.c (entry, GET, teardown, the
 * freshness wait), handlers_list.c (LIST) and handlers_watch.c (the WATCH stream, which
 * alone touches the fields below the divider). The state is created on the first call for
 * a request and freed by the server's completion callback: the one teardown path.
 * Threads: the request's MHD thread; the sweep reads fc.fd and sets peer_gone under the
 * resource lock.
 */
#ifndef KWP_PROXY_HANDLERS_INT_H
#define KWP_PROXY_HANDLERS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "cache/resource.h"
#include "proxy/body.h"
#include "proxy/fanout.h"
#include "proxy/handlers.h"
#include "proxy/negotiate.h"
#include "proxy/scope.h"
#include "proxy/transforms.h"

#define HANDLERS_TOO_LARGE_DEFAULT_MS 3000 /* the 3 s rule */

/* hreq.lag_state: who ended a lagging watch (only the first counts it). */
enum { HANDLERS_LAG_NONE = 0, HANDLERS_LAG_TICK, HANDLERS_LAG_WRITER, HANDLERS_LAG_CUT };

enum hphase { PH_NEW = 0, PH_WAIT_FRESH, PH_STREAM, PH_DONE };

struct hreq {
    struct watcher w; /* first member: the sweep maps a watcher back to its hreq */
    enum hphase phase;
    bool peer_gone; /* set by the sweep (under the resource lock) */
    /* The flags of the stream's state below, packed here (every idle watch holds this
     * struct): the watch stream (handlers_watch.c only) ... */
    bool counted_open;
    bool end_bookmark;
    bool bookmarks;
    bool ending;
    bool released;   /* the write buffer was released once (watch_quiet) */
    bool dw;         /* the writers own the stream; read by handlers_wake (see there) */
    bool dw_armed;   /* (writers) the watcher is armed: resource_watch_next gave 0 */
    bool dw_skip;    /* given back: the next watch_read stays on MHD's path */
    bool dw_abort;   /* given back broken (write failed, stalled, stopped) */
    bool dw_leaving; /* a give-back refused while a kick was queued: again at its pass */
    bool dw_off;     /* the writers refused it (stopping): MHD's path from now on */
    /* ... and negotiation */
    bool table_hdr_sent;   /* watch Tables: columnDefinitions only on the first event */
    uint32_t typemeta_len; /* of typemeta below (a short prefix) */
    struct http_req *req;
    struct apires *ar;
    const struct handlers_opts *opts;
    int64_t fresh_deadline_ms;
    uint64_t fresh_rv;
    struct scope sc;      /* ns and name point into strs; the selectors are owned */
    const char *typemeta; /* {"kind":"Pod","apiVersion":"v1" for built-ins, else ""; into strs */
    /* ---- the watch stream: handlers_watch.c only ---- */
    struct snapshot *initial;
    const char *init_after; /* key of the last initial item handled (lent from <initial>) */
    uint64_t interval_rv;   /* kube-apiserver's watermark once the interval is sent (the
                               initial state's rv, or the last replayed event's, or the rv
                               watched from): the end bookmark's rv, and a periodic bookmark
                               goes out only above it (SEMANTICS 2.6) */
    uint64_t watermark;     /* only events with rv > watermark are sent */
    uint64_t last_rv;       /* rv of the last event or bookmark sent */
    int64_t deadline_ms;
    int64_t next_bm_ms;      /* 0 = no more bookmarks */
    struct ring_event *pend; /* HANDLERS_WATCH_BATCH slots while events are in hand, else NULL */
    uint32_t pend_n;         /* at most HANDLERS_WATCH_BATCH */
    uint32_t pend_i;
    char *over;        /* a frame that did not fit MHD's buffer */
    uint32_t over_len; /* a frame is at most the longest watch line: far below 4 GiB */
    uint32_t over_off;
    int64_t due_ms;        /* the due time last given to the resource (0 = none) */
    char *wbuf;            /* the server's write buffer as last lent to watch_read */
    uint32_t wbuf_dirty;   /* bytes at its start that may hold resident pages (MHD's buffer
                              is below 16 MiB: its largest chunk) */
    _Atomic int lag_state; /* the lag rule, between the writer and the tick: HANDLERS_LAG_* */
    int64_t last_data_ms;  /* when watch_read last returned bytes */
    _Atomic int64_t
        live_ms; /* (the tick reads it) when live events began (after any initial events): lag
                 counts   from here, so a resumed watch may replay old events */
    int64_t lag_cut_ms;  /* HANDLERS_LAG_TICK: when the tick cuts it (the tick thread only) */
    uint64_t frames;     /* frames written, not yet added to ar->ctr.frames */
    int64_t lag_from_ms; /* arrival (or live start) of the oldest event among them; 0 = none */
    uint64_t lag_frames; /* how many of them are events (not initial ADDED or bookmarks) */
    /* ---- the watch writers (fanout.h): handlers_watch.c only ---- */
    struct fanout_conn fc; /* while dw; fc.fd is the request's socket from the start (-1 for
                              a bare watch) */
    /* (its flags, dw*, are packed at the top) */
    struct dw_chunk *dw_out; /* the chunk being written, while events are in hand */
    /* ---- negotiation and bodies ---- */
    struct negotiate neg; /* recomputed on every entry (a pure function of the request) */
    struct body *body;    /* a streamed LIST/GET body (pretty or gzip), freed with the request */
    char strs[];          /* ns, name and typemeta: a watch holds its state for hours */
};

static inline int64_t handlers_opt_or(int64_t v, int64_t dflt)
{
    return v > 0 ? v : dflt;
}

/* How <h> shows objects, for the transforms (built on the stack: it costs no state). */
static inline struct transforms_ctx handlers_tc(const struct hreq *h)
{
    struct transforms_ctx tc = {h->ar, &h->neg, h->typemeta, h->typemeta_len};
    return tc;
}

/*
 * The request state of <req> (NULL: a bare watch of the bench and tests, fd -1) for <ar>,
 * scope namespace <ns> and name <name> ("" for none; copied), with the typemeta prefix of
 * the kind. Freed by handlers_hreq_free.
 */
struct hreq *handlers_hreq_new(struct http_req *req, struct apires *ar,
                               const struct handlers_opts *opts, const char *ns, const char *name);

/* Detaches the watcher and frees everything <state> (a struct hreq, NULL: nothing) holds.
 * The server's completion callback (http_state_free_fn). */
void handlers_hreq_free(void *state);

/* The watcher's wake function: resumes the request (batched for a watch stream). */
void handlers_wake(void *ctx);

/* Replies with Status <st> as negotiated (Status indentation). */
void handlers_reply_status(struct hreq *h, const struct kstatus *st);

/* Replies 200 with the body gathered from <iov> as negotiated (pretty, gzip), see
 * body_reply; a streamed body is kept in h->body. Ends the request's phase. */
void handlers_reply_body(struct hreq *h, const struct iovec *iov, size_t n, body_done_fn *done,
                         void *ctx);

/* The 429 of a cache that is not ready (Retry-After counts from when it stopped being). */
void handlers_reply_not_ready(struct hreq *h);

/* The 504 "Too large resource version" for <want>, counted as a LIST or GET served. */
void handlers_reply_too_large(struct hreq *h, uint64_t want);

/* optionsForTransform: an invalid includeObject is a 400 once the object is at hand.
 * Returns true when it replied. */
bool handlers_reply_bad_table_options(struct hreq *h);

/* response.go's errNotAcceptable: PartialObjectMetadata for a list (<list>) or
 * PartialObjectMetadataList for one object. */
void handlers_reply_transform_mismatch(struct hreq *h, bool list);

/* Starts a freshness wait for rv <rv> of at most <wait_ms>. */
void handlers_start_fresh_wait(struct hreq *h, uint64_t rv, int64_t wait_ms);

/*
 * The freshness wait. Returns 1 when the resource has reached h->fresh_rv, 0 when the request
 * was suspended (handlers_serve runs again on wake), -ETIMEDOUT when the deadline passed.
 */
int handlers_wait_fresh(struct hreq *h);

/*
 * The rule for LIST and GET at an rv newer than the cache (SEMANTICS 1.4): wait for events in
 * flight (the proxy: --freshness-wait, then forward; local: 3 s, then the 504). Returns true
 * when the cache reached <rv> and the caller goes on; false when the request was suspended,
 * forwarded or answered.
 */
bool handlers_await_rv(struct hreq *h, uint64_t rv);

#endif
