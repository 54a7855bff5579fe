/*
 * handlers_watch.c - the WATCH stream from the cache (SEMANTICS 2): a content reader over the
 * watcher's cursor. It writes the synthetic ADDED events of the initial snapshot, the end
 * bookmark, then events taken from the ring in batches, whole frames only (a frame larger
 * than MHD's buffer goes through an overflow buffer that is drained at UTF-8 boundaries, so
 * no chunk ever splits a character). When nothing is pending it suspends; the resource wakes
 * it after the next append, the tick when a bookmark or the deadline is due, or when the
 * sweep finds the peer gone. At shutdown (resource_drain_watches) a watch that has sent what
 * was appended before the drain ends cleanly instead of suspending, after one last BOOKMARK
 * when it allows bookmarks.
 *
 * The hot path (emit_*, watch_fill, shared frames) is direct calls and memcpy into MHD's
 * buffer: no function pointers, one copy per frame and watcher. It owns the watch fields of
 * struct hreq (handlers_int.h) and uses scope.h, transforms.h and handlers.c's replies.
 * Threads: the request's MHD thread; the cache calls take the resource lock themselves.
 */
#include "proxy/handlers_watch.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cache/blob.h"
#include "cache/bug.h"
#include "cache/gotext.h"
#include "cache/resource.h"
#include "cache/rv.h"
#include "cache/sbuf.h"
#include "cache/selector.h"
#include "cache/snapshot.h"
#include "proxy/fanout.h"
#include "proxy/handlers_int.h"
#include "proxy/http_server.h"
#include "proxy/kstatus.h"
#include "proxy/log.h"
#include "proxy/pieces.h"
#include "proxy/reqstats.h"

_Static_assert(HANDLERS_WATCH_BATCH <= RING_SEG,
               "a short batch must mean nothing more was pending");
#define HANDLERS_BOOKMARK_DEFAULT_MS 60000
#define HANDLERS_MIN_TIMEOUT_DEFAULT_S 1800
#define HANDLERS_RELEASE_IDLE_MS 5000 /* a watch quiet this long gives back its write buffer */
#define INITIAL_EVENTS_END_ANNOTATION "\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}"

/* ---- frames ------------------------------------------------------------------------------ */

/* Copies as much of the overflow frame as fits, cutting only at UTF-8 character starts. */
static size_t drain_over(struct hreq *h, char *buf, size_t max)
{
    size_t left = h->over_len - h->over_off, n = left < max ? left : max;

    n = gotext_utf8_cut(h->over + h->over_off, n, left);
    memcpy(buf, h->over + h->over_off, n);
    h->over_off += (uint32_t)n;
    if (h->over_off == h->over_len) {
        free(h->over);
        h->over = NULL;
        h->over_len = h->over_off = 0;
    }
    return n;
}

enum emit_rc { EMIT_OK = 0, EMIT_FULL };

/*
 * Writes the frame made of <iov> pieces into buf at *n if it fits; if it does not and nothing
 * has been written in this call, stages it in the overflow buffer and writes what fits.
 */
static enum emit_rc emit_pieces(struct hreq *h, char *buf, size_t max, size_t *n,
                                const struct iovec *iov, size_t cnt, size_t total)
{
    char *dst;

    if (total <= max - *n) {
        dst = buf + *n;
        for (size_t i = 0; i < cnt; i++) {
            memcpy(dst, iov[i].iov_base, iov[i].iov_len);
            dst += iov[i].iov_len;
        }
        *n += total;
        h->frames++;
        return EMIT_OK;
    }
    if (*n > 0) {
        return EMIT_FULL;
    }
    BUG_ON(total > UINT32_MAX);
    h->over = xmalloc(total);
    h->over_len = (uint32_t)total;
    h->over_off = 0;
    dst = h->over;
    for (size_t i = 0; i < cnt; i++) {
        memcpy(dst, iov[i].iov_base, iov[i].iov_len);
        dst += iov[i].iov_len;
    }
    h->frames++;
    *n += drain_over(h, buf, max);
    return EMIT_OK;
}

/* The event object as negotiated when it is transformed: a PartialObjectMetadata, or a
 * one-row Table with column definitions on the first event only. (emit_view gathers the
 * plain object itself.) */
static void pc_event_object(struct pieces *pc, struct hreq *h, const struct transforms_obj *ov)
{
    struct transforms_ctx tc = handlers_tc(h);

    if (h->neg.as == NEGOTIATE_AS_POM) {
        transforms_pom(pc, &tc, ov);
    } else {
        transforms_table_single(pc, &tc, ov, !h->table_hdr_sent);
        h->table_hdr_sent = true;
    }
}

#define FRAME_HEAD_MAX 48

/* Writes {"type":"<type>","object": into <head> (FRAME_HEAD_MAX bytes); returns its length.
 * Per frame and per watcher: memcpy, not snprintf (it showed in profiles). */
static size_t frame_head(const char *type, char *head)
{
    static const char pre[] = "{\"type\":\"", post[] = "\",\"object\":";
    size_t tl = strlen(type), w = 0;

    BUG_ON(tl > FRAME_HEAD_MAX - sizeof(pre) - sizeof(post));
    memcpy(head, pre, sizeof(pre) - 1);
    w += sizeof(pre) - 1;
    memcpy(head + w, type, tl);
    w += tl;
    memcpy(head + w, post, sizeof(post) - 1);
    return w + sizeof(post) - 1;
}

/* A frame whose object is not transformed (most watches; also PartialObjectMetadataList,
 * which cannot transform one object, so watchEmbeddedEncoder sends it untransformed). */
static bool frame_is_plain(const struct hreq *h)
{
    return h->neg.as != NEGOTIATE_AS_POM && h->neg.as != NEGOTIATE_AS_TABLE;
}

/* The plain frame: <head> (w bytes), the object's pieces, "}\n", as at most 8 iovecs.
 * Returns their count; *total gets the frame's length. */
static size_t plain_frame_iov(const struct hreq *h, const char *head, size_t w,
                              const struct transforms_obj *ov, struct iovec *iov, size_t *total)
{
    size_t cnt, len;

    iov[0].iov_base = (void *)head;
    iov[0].iov_len = w;
    cnt = 1 + transforms_object_iov(h->typemeta, h->typemeta_len, ov, iov + 1, &len);
    iov[cnt].iov_base = (void *)"}\n";
    iov[cnt++].iov_len = 2;
    *total = w + len + 2;
    return cnt;
}

/* Frames {"type":T,"object":O}\n around the object or pc_event_object. */
static enum emit_rc emit_view(struct hreq *h, char *buf, size_t max, size_t *n, const char *type,
                              const struct transforms_obj *ov)
{
    struct pieces pc;
    char head[FRAME_HEAD_MAX];
    enum emit_rc rc;
    size_t w = frame_head(type, head);

    if (frame_is_plain(h)) {
        /* gathered straight into the buffer, without a struct pieces per event and watcher */
        struct iovec iov[8];
        size_t total, cnt = plain_frame_iov(h, head, w, ov, iov, &total);

        return emit_pieces(h, buf, max, n, iov, cnt, total);
    }
    memset(&pc, 0, sizeof(pc));
    pieces_lent(&pc, head, w);
    pc_event_object(&pc, h, ov);
    pieces_lit(&pc, "}\n");
    pieces_resolve(&pc, pc.sb.p);
    rc = emit_pieces(h, buf, max, n, pc.iov, pc.n, pieces_total(&pc));
    sbuf_free(&pc.sb);
    return rc;
}

static enum emit_rc emit_object(struct hreq *h, char *buf, size_t max, size_t *n, const char *type,
                                const struct blob *b, const char *rv_override)
{
    struct transforms_obj ov = transforms_obj_of(b, rv_override);

    return emit_view(h, buf, max, n, type, &ov);
}

/* A BOOKMARK: an empty object of the kind carrying only the resourceVersion (and the
 * watch-list annotation), encoded and transformed like any event object. */
static enum emit_rc emit_bookmark(struct hreq *h, char *buf, size_t max, size_t *n, uint64_t rv,
                                  bool initial_end)
{
    char obj[1024];
    char rvbuf[24];
    struct transforms_obj ov;
    int w;

    rv_format(rv, rvbuf);
    w = snprintf(obj, sizeof(obj), "{\"metadata\":{\"resourceVersion\":\"%s\"%s%s}%s}", rvbuf,
                 initial_end ? "," : "", initial_end ? INITIAL_EVENTS_END_ANNOTATION : "",
                 h->ar->kind.bookmark_body);
    if (w <= 0 || (size_t)w >= sizeof(obj)) {
        return EMIT_OK; /* cannot happen with the static table; skip rather than truncate */
    }
    if (h->typemeta_len == 0) {
        /* custom resources store kind and apiVersion in the object: so does their bookmark */
        char full[1400];
        w = snprintf(full, sizeof(full), "{\"kind\":\"%s\",\"apiVersion\":\"%s\",%s",
                     h->ar->kind.kind, h->ar->api_version, obj + 1);
        if (w <= 0 || (size_t)w >= sizeof(full)) {
            return EMIT_OK;
        }
        ov = (struct transforms_obj){full, (size_t)w, 0, 0, rvbuf, false};
        return emit_view(h, buf, max, n, "BOOKMARK", &ov);
    }
    ov = (struct transforms_obj){obj, (size_t)w, 0, 0, rvbuf, false};
    return emit_view(h, buf, max, n, "BOOKMARK", &ov);
}

static enum emit_rc emit_status(struct hreq *h, char *buf, size_t max, size_t *n,
                                const struct kstatus *st)
{
    char body[2048];
    struct iovec iov[3];
    size_t len = kstatus_json(st, body, sizeof(body));

    if (len >= sizeof(body)) {
        len = sizeof(body) - 1;
    }
    iov[0].iov_base = (void *)"{\"type\":\"ERROR\",\"object\":";
    iov[0].iov_len = strlen(iov[0].iov_base);
    iov[1].iov_base = body;
    iov[1].iov_len = len;
    iov[2].iov_base = (void *)"}\n";
    iov[2].iov_len = 2;
    return emit_pieces(h, buf, max, n, iov, 3, iov[0].iov_len + len + 2);
}

/*
 * The frame of an event as stored (its own type, its object, the resource's typemeta) is the
 * same bytes for every plain watcher of the resource: the first one to send the event builds
 * it and attaches it to the event in the ring (ring_aux_attach, freed by the ring), and the
 * others copy it in one piece instead of gathering it again. Valid while the event's batch
 * is lent (resource_watch_next).
 */
struct shared_frame {
    const struct apires *ar; /* the resource whose typemeta it carries */
    size_t len;
    char data[];
};

static struct shared_frame *shared_frame_new(const struct hreq *h, const char *type,
                                             const struct blob *b)
{
    char head[FRAME_HEAD_MAX];
    struct iovec iov[8];
    struct transforms_obj ov = transforms_obj_of(b, NULL);
    size_t total, cnt = plain_frame_iov(h, head, frame_head(type, head), &ov, iov, &total);
    struct shared_frame *f = xmalloc(sizeof(*f) + total);
    char *dst = f->data;

    f->ar = h->ar;
    f->len = total;
    for (size_t i = 0; i < cnt; i++) {
        memcpy(dst, iov[i].iov_base, iov[i].iov_len);
        dst += iov[i].iov_len;
    }
    return f;
}

/* The shared frame of <ev> sent as <type> when this watcher's frame is the stored one
 * (plain, and <type> is the event's own), built by the first watcher that needs it; NULL
 * when this watcher needs a frame of its own. */
static const struct shared_frame *stored_frame(const struct hreq *h, const struct ring_event *ev,
                                               enum watch_type type)
{
    static const char *const names[] = {"ADDED", "MODIFIED", "DELETED"};
    const struct shared_frame *f;

    BUG_ON(type > WATCH_DELETED);
    if (type != ev->type || ev->aux == NULL || !frame_is_plain(h)) {
        return NULL;
    }
    f = ring_aux(ev);
    if (f == NULL) {
        struct shared_frame *mine = shared_frame_new(h, names[type], ev->obj);

        f = ring_aux_attach(ev, mine);
        if (f != mine) {
            free(mine);
        }
    }
    return f->ar == h->ar ? f : NULL;
}

/* Emits <ev> as <type> with its own object: from the shared frame when there is one for this
 * watcher, else built for this watcher. */
static enum emit_rc emit_stored(struct hreq *h, char *buf, size_t max, size_t *n,
                                const struct ring_event *ev, enum watch_type type)
{
    static const char *const names[] = {"ADDED", "MODIFIED", "DELETED"};
    const struct shared_frame *f = stored_frame(h, ev, type);
    struct iovec iov;

    if (f == NULL) {
        return emit_object(h, buf, max, n, names[type], ev->obj, NULL);
    }
    iov.iov_base = (void *)f->data;
    iov.iov_len = f->len;
    return emit_pieces(h, buf, max, n, &iov, 1, f->len);
}

/* What <ev> is to this watcher (SEMANTICS 2.10): at or below its watermark (not sent, its rv
 * not taken), outside its filter (not sent, its rv taken), its stored object as *<type>, or a
 * DELETED of its previous object (it left the filter). */
enum ev_view { EV_OLD = 0, EV_SKIP, EV_STORED, EV_LEFT };

static enum ev_view event_view(const struct hreq *h, const struct ring_event *ev,
                               enum watch_type *type)
{
    bool cur, old;

    if (ev->rv <= h->watermark) {
        return EV_OLD;
    }
    if (ev->type == WATCH_DELETED) {
        *type = WATCH_DELETED;
        return scope_match(&h->sc, ev->prev ? ev->prev : ev->obj) ? EV_STORED : EV_SKIP;
    }
    cur = scope_match(&h->sc, ev->obj);
    old = ev->prev && scope_match(&h->sc, ev->prev);
    if (cur) {
        *type = old ? WATCH_MODIFIED : WATCH_ADDED;
        return EV_STORED;
    }
    return old ? EV_LEFT : EV_SKIP;
}

static enum emit_rc emit_event(struct hreq *h, char *buf, size_t max, size_t *n,
                               const struct ring_event *ev)
{
    enum watch_type type = WATCH_ADDED;
    enum emit_rc rc = EMIT_OK;

    switch (event_view(h, ev, &type)) {
    case EV_OLD:
        return EMIT_OK;
    case EV_SKIP:
        break;
    case EV_STORED:
        rc = emit_stored(h, buf, max, n, ev, type);
        break;
    case EV_LEFT:
        rc = emit_object(h, buf, max, n, "DELETED", ev->prev, ev->obj->rv_str);
        break;
    }
    if (rc == EMIT_OK) {
        h->last_rv = ev->rv;
    }
    return rc;
}

/*
 * Tells the resource when the tick must wake this watch: the next bookmark, the deadline, or
 * the moment its write buffer may be released. A busy watch would move that last moment at
 * every suspend, a locked call each time: an earlier wake already armed is kept instead (it
 * costs one spare wake-up, after which watch_quiet arms the right moment).
 */
static void watch_set_due(struct hreq *h, int64_t now)
{
    int64_t due = h->next_bm_ms && h->next_bm_ms < h->deadline_ms ? h->next_bm_ms : h->deadline_ms;

    if (h->wbuf_dirty > 0 && h->last_data_ms + HANDLERS_RELEASE_IDLE_MS < due) {
        due = h->last_data_ms + HANDLERS_RELEASE_IDLE_MS;
    }
    if (h->due_ms > now && h->due_ms < due && h->wbuf_dirty > 0) {
        return;
    }
    if (due != h->due_ms) {
        h->due_ms = due;
        resource_watch_set_due(h->ar->res, &h->w, due);
    }
}

/*
 * A watch about to suspend. The server's write buffer (most of the connection's memory
 * pool) stays resident once written (libmicrohttpd also zeroes the whole pool between two
 * requests of a connection), although an idle watch needs none of it: at its first suspend,
 * and later when nothing was sent for HANDLERS_RELEASE_IDLE_MS, its whole pages go back to
 * the kernel
 * (MADV_DONTNEED: they read as zeros, and are faulted in again by the next write). The
 * bytes are ours to overwrite until we return, and we return 0, so nothing is lost; the tick
 * wakes the watch at that moment when no event does sooner.
 */
static void watch_quiet(struct hreq *h, int64_t now)
{
    if (h->wbuf_dirty == 0) {
        return;
    }
    if (!h->released || now - h->last_data_ms >= HANDLERS_RELEASE_IDLE_MS) {
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t lo = ((uintptr_t)h->wbuf + page - 1) & ~(page - 1);
        uintptr_t hi = ((uintptr_t)h->wbuf + h->wbuf_dirty) & ~(page - 1);
        if (hi > lo) {
            (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
        }
        h->wbuf_dirty = 0;
        h->released = true;
    }
    watch_set_due(h, now);
}

static void schedule_bookmark(struct hreq *h, int64_t now)
{
    int64_t interval = handlers_opt_or(h->opts->bookmark_interval_ms, HANDLERS_BOOKMARK_DEFAULT_MS);
    int64_t next = now + interval;

    if (!h->bookmarks) {
        h->next_bm_ms = 0;
    } else if (h->deadline_ms - 2000 < next) {
        next = h->deadline_ms - 2000;
        h->next_bm_ms = next > now ? next : 0;
    } else {
        h->next_bm_ms = next;
    }
    watch_set_due(h, now);
}

/* A watch's kernel send buffer (SO_SNDBUF; the kernel doubles it): a slow reader parks at
 * most this much there, so --watch-max-lag sees its lag (instead of up to 4 MiB absorbing
 * it) and the writer is called again once a third of it drained. Ample for one watch: 100
 * events/s of 1 KiB need 100 KiB/s. */
#define HANDLERS_WATCH_SNDBUF (128 * 1024)

/*
 * SEMANTICS 2.11: kube-apiserver ends a watcher whose buffer stays full past its dispatch
 * budget; kwp holds no per-watcher buffer (a cursor into the shared history), so the bound is
 * on time instead: a watch whose next event has waited longer than --watch-max-lag, counted
 * from the event's arrival or the start of the live phase, is ended cleanly (no ERROR event)
 * and the client re-watches from its last resourceVersion. Its memory never grew meanwhile.
 * A watch still sending its initial events is checked once per call on the oldest live event
 * waiting behind them (counted from its arrival); after them the backlog counts from the end
 * of the initial events.
 */
static bool watch_lagging(struct hreq *h, int64_t t_ms, int64_t now)
{
    int64_t since = t_ms > h->live_ms ? t_ms : h->live_ms;

    if (h->opts->watch_max_lag_ms <= 0 || now - since <= h->opts->watch_max_lag_ms) {
        return false;
    }
    static struct log_ratelimit rl;
    int was = HANDLERS_LAG_NONE;

    h->ending = true;
    /* the tick may have found it first: then it counted and logged it */
    if (!atomic_compare_exchange_strong(&h->lag_state, &was, HANDLERS_LAG_WRITER)) {
        return true;
    }
    log_ratelimited(
        &rl, 1000, LOG_LEVEL_INFO, "watch",
        "resource=%s namespace=\"%s\" lag_ms=%lld last_rv=%llu msg=\"Forcing %s watcher "
        "close due to unresponsiveness\"",
        resource_name(h->ar->res), h->sc.ns, (long long)(now - since),
        (unsigned long long)h->last_rv, resource_name(h->ar->res));
    atomic_fetch_add(&h->ar->ctr.terminated, 1);
    http_req_note(h->req, NULL,
                  "client too slow: its next event waited %lld ms (--watch-max-lag %lld ms)",
                  (long long)(now - since), (long long)h->opts->watch_max_lag_ms);
    return true;
}

/* The request log's reason for a watch the cache ended (not for a client that left). */
static void note_cache_end(struct hreq *h)
{
    static const char *const why[] = {
        [WATCH_END_CLOSED] = "ended by the server",
        [WATCH_END_SHUTDOWN] = "server shutting down",
        [WATCH_END_RELIST] = "upstream relist: the cache's history was reset",
        [WATCH_END_EXPIRED] = "overflow: the watch fell out of the history window",
    };

    if (h->req != NULL && !h->peer_gone) {
        http_req_note(h->req, NULL, "%s", why[resource_watch_end_reason(h->ar->res, &h->w)]);
    }
}

/* kwp_watch_event_delivery_lag_seconds: after a frame of the event appended at <t_ms> was
 * written, counts it and remembers the oldest such time of this write (from the start of the
 * live stream at the earliest, as --watch-max-lag); lag_flush observes them once per write
 * (initial ADDED events and bookmarks are not events that waited: not counted). */
static inline void lag_note(struct hreq *h, int64_t t_ms)
{
    if (h->lag_from_ms == 0) {
        h->lag_from_ms = t_ms > h->live_ms ? t_ms : h->live_ms;
    }
    h->lag_frames++;
}

static void lag_flush(struct hreq *h, int64_t now)
{
    if (h->lag_from_ms != 0) {
        reqstats_lag_ms(now - h->lag_from_ms, h->lag_frames);
        h->lag_from_ms = 0;
        h->lag_frames = 0;
    }
}

/*
 * The same rule on the tick, for a watch whose server is not calling watch_read: a client
 * reading slowly keeps the socket full, and libmicrohttpd calls the writer only once a third
 * of the send buffer drained (minutes at 1 KB/s). The tick closes the watcher (a writer
 * called meanwhile ends the stream cleanly) and, when the writer has not ended the stream
 * a second later, shuts the connection down: the client reads what it had, sees the stream
 * break and re-watches from its last resourceVersion (the history still holds what follows
 * it, or it gets the 410). Under the resource lock: no logging here (handlers_watch_tick
 * logs).
 */
#define HANDLERS_LAG_CUT_MS 1000

struct lag_sweep {
    int64_t now;
    int64_t max_lag_ms; /* the largest lag among the watches closed */
};

static bool tick_lagging(struct watcher *w, int64_t t_ms, void *ctx)
{
    struct hreq *h = (struct hreq *)((char *)w - offsetof(struct hreq, w));
    struct lag_sweep *ls = ctx;
    int64_t live = h->live_ms, since = t_ms > live ? t_ms : live;
    int st = atomic_load(&h->lag_state);

    if (h->fc.fd < 0) {
        return false;
    }
    if (st == HANDLERS_LAG_TICK) {
        /* closed a second ago and the writer has not ended the stream since: cut it */
        if (ls->now >= h->lag_cut_ms &&
            atomic_compare_exchange_strong(&h->lag_state, &st, HANDLERS_LAG_CUT)) {
            (void)shutdown(h->fc.fd, SHUT_RDWR); /* libmicrohttpd's next send fails: it closes */
        }
        return false;
    }
    /* live 0: attached, its stream not started yet (no lag counts before it) */
    if (w->closed || st != HANDLERS_LAG_NONE || live == 0 || h->opts->watch_max_lag_ms <= 0 ||
        ls->now - since <= h->opts->watch_max_lag_ms ||
        !atomic_compare_exchange_strong(&h->lag_state, &st, HANDLERS_LAG_TICK)) {
        return false;
    }
    atomic_fetch_add(&h->ar->ctr.terminated, 1);
    h->lag_cut_ms = ls->now + HANDLERS_LAG_CUT_MS;
    if (ls->now - since > ls->max_lag_ms) {
        ls->max_lag_ms = ls->now - since;
    }
    return true;
}

void handlers_watch_tick(struct apires *ar, int64_t now_ms)
{
    struct lag_sweep ls = {now_ms, 0};
    size_t n = resource_sweep_running(ar->res, tick_lagging, &ls);
    static struct log_ratelimit rl;

    if (n > 0) {
        log_ratelimited(&rl, 1000, LOG_LEVEL_INFO, "watch",
                        "resource=%s watches=%zu lag_ms=%lld msg=\"Forcing %s watcher close due "
                        "to unresponsiveness\"",
                        resource_name(ar->res), n, (long long)ls.max_lag_ms,
                        resource_name(ar->res));
    }
}

/*
 * Batch arrays (HANDLERS_WATCH_BATCH events, ~1.8 KB) are held only while a watch has events in
 * hand, so an idle watch costs none; a watch woken for one event mallocs one and frees it.
 * No spare is kept per thread to save that pair: with one, and so no malloc/free pair at a
 * new watch's first wake-up, glibc carved the long-lived allocations of new watches out of
 * the holes their LISTs' reply blocks had left (malloc_trim then found ~4,000 holes instead
 * of ~60 and left their edge pages resident), and memory per idle watch rose from 6.9 to
 * 8.6-10.8 KB (5,000 watches on 100 1 KiB pods; bench/README, "Memory per idle watch").
 */
static struct ring_event *batch_take(void)
{
    return xmalloc(HANDLERS_WATCH_BATCH * sizeof(struct ring_event));
}

static void batch_give(struct ring_event *b)
{
    free(b);
}

/*
 * Shutdown (resource_drain_watches): every event appended before the drain began has been
 * written. A watch that allows bookmarks gets one last BOOKMARK at the rv of that moment,
 * read under the lock that says nothing before it is pending (so it never skips an event this
 * watch has not been sent), and never below what the client already holds; its client then
 * re-watches from there on another replica without a relist, and gets the later events there.
 * Returns false when events are pending after all (they go out first). Called with nothing in
 * <buf> (*n == 0), so the frame always fits or is staged.
 */
static bool shutdown_bookmark(struct hreq *h, char *buf, size_t max, size_t *n)
{
    uint64_t rv = 0;

    if (!h->bookmarks) {
        return true;
    }
    if (!resource_watch_idle_rv(h->ar->res, &h->w, &rv)) {
        return false;
    }
    if (rv < h->last_rv) {
        rv = h->last_rv;
    }
    if (rv < h->watermark) {
        rv = h->watermark; /* a watch from an rv ahead of this cache: the client has that */
    }
    (void)emit_bookmark(h, buf, max, n, rv, false);
    h->last_rv = rv;
    return true;
}

static ssize_t watch_fill(struct hreq *h, char *buf, size_t max, int64_t now)
{
    size_t n = 0;
    bool drained = false; /* the last batch taken was short: it emptied the history */

    if (h->over) {
        n = drain_over(h, buf, max);
        if (h->over || n > 0) {
            return (ssize_t)n;
        }
    }
    /* the tick found it lagging (a writer that did not run): end at this call */
    if (h->ending || atomic_load(&h->lag_state) == HANDLERS_LAG_TICK) {
        return HTTP_STREAM_END;
    }
    if (now >= h->deadline_ms) {
        h->ending = true;
        return HTTP_STREAM_END;
    }
    for (;;) {
        if (h->initial) {
            /* one O(log n) seek per call, then in key order within the namespace */
            struct store_iter it;
            const struct blob *b;
            int64_t oldest;

            /* the live events wait meanwhile: one that waited too long ends the watch here,
             * as kube-apiserver ends a watcher whose input fills during its initial events */
            if (h->opts->watch_max_lag_ms > 0 &&
                resource_watch_oldest_ms(h->ar->res, &h->w, &oldest) &&
                watch_lagging(h, oldest, now)) {
                return n > 0 ? (ssize_t)n : HTTP_STREAM_END;
            }
            b = scope_start(&h->sc, h->initial, h->init_after, &it);
            for (; b != NULL && scope_in_ns(&h->sc, b); b = snapshot_next(&it)) {
                if (scope_match(&h->sc, b) &&
                    emit_object(h, buf, max, &n, "ADDED", b, NULL) == EMIT_FULL) {
                    return (ssize_t)n;
                }
                h->init_after = b->key;
                if (h->over) {
                    return (ssize_t)n;
                }
            }
            snapshot_unref(h->initial);
            h->initial = NULL;
            h->live_ms = now;
        }
        if (h->end_bookmark) {
            if (emit_bookmark(h, buf, max, &n, h->interval_rv, true) == EMIT_FULL) {
                return (ssize_t)n;
            }
            h->end_bookmark = false;
            if (h->interval_rv > h->last_rv) {
                h->last_rv = h->interval_rv;
            }
            if (h->over) {
                return (ssize_t)n;
            }
        }
        while (h->pend_i < h->pend_n) {
            if (watch_lagging(h, h->pend[h->pend_i].t_ms, now)) {
                return n > 0 ? (ssize_t)n : HTTP_STREAM_END;
            }
            uint64_t frames = h->frames;
            if (emit_event(h, buf, max, &n, &h->pend[h->pend_i]) == EMIT_FULL) {
                return (ssize_t)n;
            }
            if (h->frames != frames) {
                lag_note(h, h->pend[h->pend_i].t_ms);
            }
            h->pend_i++;
            if (h->over) {
                return (ssize_t)n;
            }
        }
        h->pend_i = h->pend_n = 0;
        uint64_t bm_rv = 0;
        /* a bookmark waits until the events appended before it were taken: its rv is read
         * under the lock that says nothing is pending, so it never overtakes an event */
        if (h->next_bm_ms && now >= h->next_bm_ms &&
            resource_watch_idle_rv(h->ar->res, &h->w, &bm_rv)) {
            /* kube-apiserver's cacheWatcher does not move its watermark past the interval:
             * under churn a bookmark goes out each period, at the rv of the last event too */
            if (bm_rv > h->interval_rv) {
                if (emit_bookmark(h, buf, max, &n, bm_rv, false) == EMIT_FULL) {
                    return (ssize_t)n;
                }
                h->last_rv = bm_rv;
            }
            schedule_bookmark(h, now);
            if (h->over) {
                return (ssize_t)n;
            }
        }
        /* with bytes in hand this call will not suspend: take without arming the suspended
         * flag, or a writer could resume (wake) a connection that is not suspended. The
         * events are lent until the next take or the detach (no reference per blob). */
        if (n > 0 && drained) {
            return (ssize_t)n; /* rather than lock again to find nothing: the next call looks */
        }
        if (!h->pend) {
            h->pend = batch_take();
        }
        ssize_t got = n > 0 ? resource_watch_take(h->ar->res, &h->w, h->pend, HANDLERS_WATCH_BATCH)
                            : resource_watch_next(h->ar->res, &h->w, h->pend, HANDLERS_WATCH_BATCH);
        if (got > 0) {
            h->pend_n = (uint32_t)got;
            drained = got < HANDLERS_WATCH_BATCH; /* HANDLERS_WATCH_BATCH <= RING_SEG */
            continue;
        }
        if (got == 0 && n > 0) {
            return (ssize_t)n; /* MHD calls again once this is sent; we suspend then */
        }
        batch_give(h->pend); /* an idle watch holds no batch array */
        h->pend = NULL;
        if (got == -ESHUTDOWN) {
            if (!shutdown_bookmark(h, buf, max, &n)) {
                continue; /* events are pending after all: they go out first */
            }
            h->ending = true;
            return n > 0 ? (ssize_t)n : HTTP_STREAM_END;
        }
        if (got < 0) {
            note_cache_end(h);
            h->ending = true;
            return n > 0 ? (ssize_t)n : HTTP_STREAM_END;
        }
        http_stream_suspend(h->req);
        watch_quiet(h, now);
        return 0;
    }
}

/* ---- the watch writers: plain-TCP streams written straight from the shared frames ------ */

/*
 * Once a plain-TCP watch is live (its initial events and end bookmark sent), its stream is
 * handed to the watch writers (fanout.h) while libmicrohttpd holds it suspended with nothing
 * buffered. A writer's pass takes its events from the ring and sends each batch as one chunk,
 * one sendmsg of the chunk's size line, the shared frames themselves (no copy per watcher)
 * and CRLF. Whatever the pass does not do itself goes back to libmicrohttpd's path, which is
 * the same code as before: bookmarks, the deadline, the lag rule's end, the end after a
 * relist or at shutdown, and any frame this watcher must build for itself (an event that
 * enters or leaves its selector, a transformed watch). The stream is given back only
 * between two chunks (or broken: the request then aborts), and the writer's pass and
 * watch_read never run at once: the stream is the writers' from fanout_attach, made in
 * watch_read as its last act, to fanout_detach, which the pass follows with http_resume.
 */
struct dw_chunk {
    size_t n, i; /* iov[i..n) is still to send */
    char head[12];
    struct iovec iov[HANDLERS_WATCH_BATCH + 2];
};

/* Whatever the writers leave to libmicrohttpd's path is due. */
static bool dw_wants_mhd(const struct hreq *h, int64_t now)
{
    return h->ending || atomic_load(&h->lag_state) == HANDLERS_LAG_TICK || now >= h->deadline_ms ||
           (h->next_bm_ms && now >= h->next_bm_ms);
}

/* watch_read, on entry: may the stream go to the writers now? */
static struct fanout *dw_ready(const struct hreq *h, int64_t now)
{
    struct fanout *f;

    if (h->dw_off || h->initial || h->end_bookmark || h->over || !frame_is_plain(h) ||
        dw_wants_mhd(h, now)) {
        return NULL;
    }
    f = http_req_fanout(h->req);
    return f;
}

static void dw_pass(struct fanout_conn *c, unsigned events);

/* From watch_read: suspends the stream and hands it to the writers. Returns false (nothing
 * changed) when they refused it. The watcher is not armed here: nothing wakes it before its
 * first pass, which runs on the writer and may already be running when this returns. */
static bool dw_handover(struct hreq *h, struct fanout *f, int64_t now)
{
    int zero = 0, one = 1;

    /* whatever libmicrohttpd corked goes out, and small chunks are not held back by Nagle */
    (void)setsockopt(h->fc.fd, IPPROTO_TCP, TCP_CORK, &zero, sizeof(zero));
    (void)setsockopt(h->fc.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    h->fc.pass = dw_pass;
    h->fc.stall_ms = (uint32_t)(handlers_opt_or(h->opts->watch_stall_s, 10) * 1000);
    http_stream_suspend(h->req);
    watch_quiet(h, now);
    /* the batch array's malloc/free pair that this thread's first suspend made before the
     * writers existed: without it glibc places the next watches' long-lived state in the
     * holes of their LIST replies on this thread, and an idle watch costs ~1 KB more (see
     * batch_take) */
    batch_give(batch_take());
    h->dw = true;
    h->dw_armed = false;
    if (!fanout_attach(f, &h->fc)) {
        h->dw = false;
        h->dw_off = true;
        http_resume(h->req); /* we suspended it: the next call goes on as before */
        return false;
    }
    return true;
}

/* From a pass: the stream goes back to libmicrohttpd (at once, or at the next pass when a
 * kick is still queued). Nothing may be half-written unless <h>->dw_abort is set. */
static void dw_give_back(struct hreq *h)
{
    if (!fanout_detach(&h->fc)) {
        h->dw_leaving = true;
        return;
    }
    h->dw_leaving = false;
    free(h->dw_out);
    h->dw_out = NULL;
    h->dw = false;
    h->dw_skip = true;
    http_resume(h->req);
}

/* Sends what is left of the chunk: 1 all of it, 0 the socket is full, -1 the stream broke. */
static int dw_write(struct hreq *h)
{
    struct dw_chunk *o = h->dw_out;

    while (o->i < o->n) {
        struct msghdr m = {.msg_iov = o->iov + o->i, .msg_iovlen = o->n - o->i};
        ssize_t k = sendmsg(h->fc.fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);

        if (k == -1) {
            int e = errno;
            if (e == EINTR) {
                continue;
            }
            return e == EAGAIN || e == EWOULDBLOCK ? 0 : -1;
        }
        while (k > 0) {
            struct iovec *v = &o->iov[o->i];
            if ((size_t)k >= v->iov_len) {
                k -= (ssize_t)v->iov_len;
                o->i++;
            } else {
                v->iov_base = (char *)v->iov_base + k;
                v->iov_len -= (size_t)k;
                k = 0;
            }
        }
    }
    return 1;
}

/*
 * Gathers the pending events from pend_i into one chunk of shared frames (h->dw_out; n 0
 * when none is sent). Returns false when it stopped at an event it leaves to libmicrohttpd's
 * path (a frame of this watcher's own) or ended the watch for lag.
 */
static bool dw_gather(struct hreq *h, int64_t now)
{
    struct dw_chunk *o = h->dw_out;
    size_t cnt = 1, bytes = 0;
    bool more = true;

    if (o == NULL) {
        o = h->dw_out = xmalloc(sizeof(*o));
    }
    while (h->pend_i < h->pend_n && cnt <= HANDLERS_WATCH_BATCH) {
        const struct ring_event *ev = &h->pend[h->pend_i];
        const struct shared_frame *f = NULL;
        enum watch_type type = WATCH_ADDED;
        enum ev_view v = event_view(h, ev, &type);

        if (v == EV_STORED || v == EV_LEFT) {
            if (watch_lagging(h, ev->t_ms, now)) {
                more = false;
                break;
            }
            f = v == EV_STORED ? stored_frame(h, ev, type) : NULL;
            if (f == NULL) {
                more = false; /* its own frame: libmicrohttpd's path builds it */
                break;
            }
            o->iov[cnt].iov_base = (void *)f->data;
            o->iov[cnt++].iov_len = f->len;
            bytes += f->len;
            h->frames++;
            lag_note(h, ev->t_ms);
        }
        if (v != EV_OLD) {
            h->last_rv = ev->rv;
        }
        h->pend_i++;
    }
    o->i = 0;
    o->n = 0;
    if (cnt > 1) {
        int w = snprintf(o->head, sizeof(o->head), "%zx\r\n", bytes);

        BUG_ON(w <= 0 || (size_t)w >= sizeof(o->head));
        o->iov[0].iov_base = o->head;
        o->iov[0].iov_len = (size_t)w;
        o->iov[cnt].iov_base = (void *)"\r\n";
        o->iov[cnt++].iov_len = 2;
        o->n = cnt;
    }
    return more;
}

/* Adds the frames written to the counters and the delivery-lag histogram (as watch_read). */
static void dw_count(struct hreq *h, int64_t now)
{
    if (h->frames > 0) {
        lag_flush(h, now);
        atomic_fetch_add(&h->ar->ctr.frames, h->frames);
        h->frames = 0;
    }
}

static void dw_pass(struct fanout_conn *c, unsigned events)
{
    struct hreq *h = (struct hreq *)((char *)c - offsetof(struct hreq, fc));
    int64_t now = clock_mono_ms();
    int r;

    if (events & FANOUT_EV_KICK) {
        h->dw_armed = false; /* a kick of an armed watcher is its wake: the waker disarmed it */
    }
    if (h->dw_leaving) {
        dw_give_back(h);
        return;
    }
    if (events & (FANOUT_EV_STALL | FANOUT_EV_STOP)) {
        if (h->dw_armed) {
            /* an armed watcher may be woken at any moment: close it instead, and its wake
             * (a kick) gives the stream back, ended as any closed watch */
            resource_watch_kill(h->ar->res, &h->w);
            return;
        }
        if (events & FANOUT_EV_STALL) {
            /* as libmicrohttpd's connection timeout is logged on its path (reqlog.c) */
            http_req_note(h->req, NULL,
                          "client stalled: it read nothing for "
                          "--watch-stall-timeout while events waited");
        }
        h->dw_abort = true;
        dw_give_back(h);
        return;
    }
    if (h->dw_out != NULL && h->dw_out->i < h->dw_out->n) {
        r = dw_write(h);
        if (r == 0) {
            fanout_blocked(c, true, now);
            return;
        }
        fanout_blocked(c, false, now);
        if (r < 0) {
            h->peer_gone = true;
            h->dw_abort = true;
            dw_give_back(h);
            return;
        }
    } else if (h->dw_armed) {
        return; /* a writable edge of an idle stream (a closed peer: the sweep finds it) */
    }
    for (;;) {
        bool more;

        if (dw_wants_mhd(h, now)) {
            dw_give_back(h);
            return;
        }
        if (h->pend_i == h->pend_n) {
            ssize_t got;

            if (!h->pend) {
                h->pend = batch_take();
            }
            got = resource_watch_next(h->ar->res, &h->w, h->pend, HANDLERS_WATCH_BATCH);
            if (got == 0) {
                h->pend_i = h->pend_n = 0;
                batch_give(h->pend); /* an idle watch holds no batch array */
                h->pend = NULL;
                free(h->dw_out);
                h->dw_out = NULL;
                h->dw_armed = true; /* from here a wake (a kick) may come at any time */
                watch_set_due(h, now);
                return;
            }
            if (got < 0) {
                dw_give_back(h); /* the shutdown bookmark, or the end: libmicrohttpd's path */
                return;
            }
            h->pend_i = 0;
            h->pend_n = (uint32_t)got;
        }
        more = dw_gather(h, now);
        if (h->dw_out->n > 0) {
            r = dw_write(h);
            dw_count(h, now);
            if (r < 0) {
                h->peer_gone = true;
                h->dw_abort = true;
                dw_give_back(h);
                return;
            }
            if (r == 0) {
                fanout_blocked(c, true, now);
                return;
            }
        }
        if (!more) {
            dw_give_back(h);
            return;
        }
    }
}

static ssize_t watch_read(void *ctx, char *buf, size_t max)
{
    struct hreq *h = ctx;
    int64_t now = clock_mono_ms();
    ssize_t got;

    if (buf != h->wbuf) { /* a new buffer (the first call): assume every page was touched */
        h->wbuf = buf;
        h->wbuf_dirty = max < UINT32_MAX ? (uint32_t)max : UINT32_MAX;
        h->last_data_ms = now;
    }
    if (h->dw_abort) {
        return HTTP_STREAM_ABORT; /* given back broken by a writer */
    }
    if (h->dw_skip) {
        h->dw_skip = false; /* given back for what the writers leave to this path */
    } else if (h->req != NULL) {
        struct fanout *f = dw_ready(h, now);
        if (f != NULL && dw_handover(h, f, now)) {
            return 0; /* the writers' now: touch nothing more */
        }
    }
    got = watch_fill(h, buf, max, now);
    if (got == HTTP_STREAM_END) {
        int st = HANDLERS_LAG_TICK;
        /* the tick closed it for lag and this call ends it cleanly: no cut needed */
        (void)atomic_compare_exchange_strong(&h->lag_state, &st, HANDLERS_LAG_WRITER);
    }
    if (h->frames > 0) { /* one shared-counter update per call, not per frame */
        lag_flush(h, now);
        atomic_fetch_add(&h->ar->ctr.frames, h->frames);
        h->frames = 0;
    }
    if (got > 0) {
        h->last_data_ms = now;
        if ((size_t)got > h->wbuf_dirty) {
            h->wbuf_dirty = (uint32_t)got;
        }
    }
    return got;
}

/* A watch answered 200 whose stream is a single ERROR event (410 too old, 504 too large). */
static ssize_t error_stream_read(void *ctx, char *buf, size_t max)
{
    struct hreq *h = ctx;

    if (h->frames > 0) {
        atomic_fetch_add(&h->ar->ctr.frames, h->frames);
        h->frames = 0;
    }
    if (h->over) {
        return (ssize_t)drain_over(h, buf, max);
    }
    return HTTP_STREAM_END;
}

static void reply_watch_error(struct hreq *h, const struct kstatus *st)
{
    char tmp[16];
    size_t n = 0;

    /* stage the whole frame in the overflow buffer (max 0 forces staging) */
    (void)emit_status(h, tmp, 0, &n, st);
    h->phase = PH_DONE;
    h->ending = true;
    http_reply_stream(h->req, 200, "application/json", error_stream_read, h);
}

static void start_stream(struct hreq *h)
{
    int64_t now = clock_mono_ms();

    h->phase = PH_STREAM;
    h->live_ms = now;
    h->counted_open = true;
    atomic_fetch_add(&h->ar->ctr.watches_open, 1);
    schedule_bookmark(h, now);
    http_req_set_stall_timeout(h->req, (unsigned)handlers_opt_or(h->opts->watch_stall_s, 10));
    http_req_set_send_buffer(h->req, HANDLERS_WATCH_SNDBUF);
    http_reply_stream(h->req, 200, "application/json", watch_read, h);
}

void handlers_watch_serve(struct hreq *h, const struct k8s_list_opts *lo)
{
    const struct handlers_opts *o = h->opts;
    struct resource *res = h->ar->res;
    bool rv_unset = !lo->has_rv || lo->rv_str[0] == '\0';
    bool rv_zero = !rv_unset && lo->rv == 0;
    int64_t now = clock_mono_ms();
    uint64_t boundary = 0, rv = 0;
    int rc;

    if (h->phase == PH_NEW) {
        int64_t t = lo->timeout_seconds;
        if (t < 0) {
            t = 0; /* get.go: context.WithTimeout with a negative timeout: ends at once */
        } else if (t == 0) {
            int64_t min = handlers_opt_or(o->min_request_timeout_s, HANDLERS_MIN_TIMEOUT_DEFAULT_S);
            t = min + (int64_t)((uint64_t)rand() % (uint64_t)min);
        }
        h->deadline_ms = now + t * 1000;
        h->bookmarks = lo->allow_bookmarks;
    }
    if (!resource_is_ready(res, NULL)) {
        h->phase = PH_DONE;
        handlers_reply_not_ready(h);
        return;
    }
    if (handlers_reply_bad_table_options(h)) {
        return; /* serveWatchHandler's optionsForTransform, before the first event */
    }
    if (lo->send_initial_events == 1 && !rv_unset && !rv_zero && lo->rv > resource_rv(res)) {
        if (h->phase != PH_WAIT_FRESH) {
            handlers_start_fresh_wait(
                h, lo->rv, handlers_opt_or(o->too_large_wait_ms, HANDLERS_TOO_LARGE_DEFAULT_MS));
        }
        rc = handlers_wait_fresh(h);
        if (rc == 0) {
            return;
        }
        if (rc < 0) {
            struct kstatus st;
            kstatus_too_large_rv(&st, lo->rv, resource_rv(res));
            atomic_fetch_add(&h->ar->ctr.too_large, 1);
            atomic_fetch_add(&h->ar->ctr.watches, 1);
            reply_watch_error(h, &st);
            return;
        }
    }
    memset(&h->w, 0, sizeof(h->w));
    h->w.wake = handlers_wake;
    h->w.wake_ctx = h;
    h->w.kind = WATCHER_STREAM;
    h->w.ns = h->sc.ns[0] ? h->sc.ns : NULL;
    /* pods watches with fieldSelector spec.nodeName=X wait in the X dispatch bucket, so an
     * event visits only its node's watchers (SEMANTICS 3.6) */
    for (size_t i = 0; i < selector_count(h->sc.fsel); i++) {
        if (!selector_negated(h->sc.fsel, i) &&
            strcmp(selector_field(h->sc.fsel, i), "spec.nodeName") == 0) {
            h->w.trigger = selector_value(h->sc.fsel, i);
        }
    }
    atomic_fetch_add(&h->ar->ctr.watches, 1);

    if (lo->send_initial_events == 1 || (lo->send_initial_events == -1 && (rv_unset || rv_zero))) {
        rc = resource_watch_now(res, &h->w, &h->initial, &rv);
        if (rc != 0) {
            h->phase = PH_DONE;
            handlers_reply_not_ready(h);
            return;
        }
        h->interval_rv = rv;
        h->watermark = rv;
        h->last_rv = 0;
        h->end_bookmark = lo->send_initial_events == 1 && lo->allow_bookmarks;
        start_stream(h);
        return;
    }
    if (rv_unset || rv_zero) { /* sendInitialEvents=false: from now, no initial state */
        rc = resource_watch_now(res, &h->w, NULL, &rv);
        if (rc != 0) {
            h->phase = PH_DONE;
            handlers_reply_not_ready(h);
            return;
        }
        h->interval_rv = rv;
        h->watermark = rv;
        h->last_rv = rv;
        start_stream(h);
        return;
    }
    rc = resource_watch_replay(res, &h->w, lo->rv, &boundary, &h->interval_rv);
    if (rc == -ESTALE && resource_history_whole(res) &&
        handlers_route(h->opts, HANDLERS_WHY_BEFORE_CACHE) == HANDLERS_FORWARD) {
        /* Not a 410: the client comes from a replica that is older than this cache; the
         * watch goes upstream (cheaper there than the relist a 410 would cause), and its
         * next re-watch, from a newer rv, lands in this history. */
        atomic_fetch_add(&h->ar->ctr.watches_before_cache, 1);
        h->opts->forward(h->opts->app, h->req);
        return;
    }
    if (rc == -ESTALE) {
        struct kstatus st;
        kstatus_too_old(&st, lo->rv, boundary);
        atomic_fetch_add(&h->ar->ctr.too_old, 1);
        reply_watch_error(h, &st);
        return;
    }
    if (rc != 0) {
        h->phase = PH_DONE;
        handlers_reply_not_ready(h);
        return;
    }
    h->watermark = lo->rv;
    h->last_rv = lo->rv;
    start_stream(h);
}

void handlers_watch_fini(struct hreq *h)
{
    if (h->counted_open) {
        atomic_fetch_sub(&h->ar->ctr.watches_open, 1);
    }
    if (h->frames > 0) {
        atomic_fetch_add(&h->ar->ctr.frames, h->frames);
    }
    free(h->pend); /* its events were lent: the detach before this gave them back */
    h->pend = NULL;
    snapshot_unref(h->initial);
    h->initial = NULL;
    free(h->over);
    h->over = NULL;
    free(h->dw_out);
    h->dw_out = NULL;
}

/* ---- bare watches: bench and tests ------------------------------------------------------- */

static const struct handlers_opts bare_opts; /* all defaults; the frame writer reads none */

static void bare_wake(void *ctx)
{
    (void)ctx; /* nothing to resume: the caller drives the watch */
}

struct hreq *handlers_watch_bare_new(struct apires *ar, const char *label_selector, char *err,
                                     size_t err_len)
{
    struct hreq *h = handlers_hreq_new(NULL, ar, &bare_opts, "", "");

    if (label_selector) {
        h->sc.lsel = selector_parse_labels(label_selector, err, err_len);
        if (!h->sc.lsel) {
            handlers_hreq_free(h);
            return NULL;
        }
    }
    h->w.wake = bare_wake;
    h->w.kind = WATCHER_STREAM;
    return h;
}

struct watcher *handlers_watch_bare_watcher(struct hreq *h)
{
    return &h->w;
}

int handlers_watch_bare_emit(struct hreq *h, char *buf, size_t max, size_t *n,
                             const struct ring_event *ev)
{
    uint64_t frames = h->frames;
    int rc = emit_event(h, buf, max, n, ev) == EMIT_OK ? 0 : -ENOSPC;

    if (h->frames != frames) {
        lag_note(h, ev->t_ms);
    }
    return rc;
}

uint64_t handlers_watch_bare_frames(struct hreq *h)
{
    uint64_t f = h->frames;

    if (f > 0) {
        lag_flush(h, h->lag_from_ms); /* as watch_read does; the bench keeps no clock */
    }
    h->frames = 0;
    return f;
}

bool handlers_watch_bare_overflowed(const struct hreq *h)
{
    return h->over != NULL;
}

void handlers_watch_bare_free(struct hreq *h)
{
    handlers_hreq_free(h);
}
