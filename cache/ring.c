/*
 * ring.c - the bounded, self-sizing event history (see ring.h for the diagram and rules).
 *
 * Events live in segments of RING_SEG slots (slot of seq = seq % RING_SEG of segment
 * seq / RING_SEG), allocated as head reaches them and let go of once the tail has left them;
 * a resize only changes how many events are kept, so slots never move and seqs (and
 * watchers' cursors) are never renumbered. Capacity follows kube-apiserver's
 * resizeCacheLocked exactly, including its quirk that a ring at max_cap with fresh events
 * does not consider halving.
 * The "too old" boundary needs three facts besides the kept events: the rv of the last
 * reset, whether anything was dropped since (eviction, shrink or compaction), and the rv of
 * the last dropped event (the boundary of an emptied ring).
 * Not thread-safe: the owning resource's mutex guards every call.
 */
#include "cache/ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache/blob.h"
#include "cache/bug.h"

struct ring {
    struct ring_seg **segs; /* seg_cap entries (a power of two); segment k at segs[k & mask] */
    size_t seg_cap;
    uint64_t seg_lo; /* segments [seg_lo, seg_hi) are held: from the one of tail ... */
    uint64_t seg_hi; /* ... to the one of head-1 (or of head, once written into) */
    size_t lent;     /* borrows not yet returned */
    size_t cap;      /* events kept at most (the logical capacity) */
    size_t min_cap;
    size_t max_cap;
    int64_t fresh_ms;    /* 0: no time rule, grow to max_cap then evict */
    uint64_t head;       /* next seq to write */
    uint64_t tail;       /* oldest kept seq */
    uint64_t last_rv;    /* rv of the newest push, or the reset rv: pushes must exceed it */
    uint64_t reset_rv;   /* list rv of the last ring_reset (0 initially) */
    uint64_t dropped_rv; /* rv of the last event dropped since the reset */
    bool dropped;        /* some event was dropped since the reset */
};

/*
 * RING_SEG consecutive slots. A slot below the tail (evicted) keeps its references while the
 * segment is borrowed, and loses them when the last borrower returns; a segment entirely
 * below the tail is let go of by the ring (freed, or <retired> when still borrowed: then its
 * last borrower frees it).
 */
struct ring_seg {
    uint64_t base;      /* seq of ev[0], a multiple of RING_SEG */
    unsigned borrowers; /* ring_borrow minus ring_return */
    bool retired;       /* the ring no longer holds it */
    struct ring_event ev[RING_SEG];
    _Atomic(void *) aux[RING_SEG]; /* attachments: set by borrowers (CAS), freed under the lock
                                      only while nobody borrows the segment */
};

static struct ring_seg *seg_of(const struct ring *r, uint64_t seq)
{
    return r->segs[(seq / RING_SEG) & (r->seg_cap - 1)];
}

static struct ring_event *slot(const struct ring *r, uint64_t seq)
{
    return &seg_of(r, seq)->ev[seq % RING_SEG];
}

/* Frees an attachment (the caller made sure no borrower can be reading it). */
static void aux_drop(_Atomic(void *) *aux)
{
    free(atomic_exchange_explicit(aux, NULL, memory_order_acquire));
}

static void event_clear(struct ring_event *e)
{
    blob_unref(e->obj);
    blob_unref(e->prev);
    aux_drop(e->aux);
    memset(e, 0, sizeof(*e));
}

/* Drops every reference the segment still holds (unwritten slots are zeroed) and frees it. */
static void seg_free(struct ring_seg *g)
{
    for (size_t i = 0; i < RING_SEG; i++) {
        blob_unref(g->ev[i].obj);
        blob_unref(g->ev[i].prev);
        aux_drop(&g->aux[i]);
    }
    free(g);
}

/* Frees the attachments of the segment's events that are RING_AUX_SPAN behind the head
 * (nobody borrows the segment). */
static void seg_age(const struct ring *r, struct ring_seg *g)
{
    uint64_t old = r->head > RING_AUX_SPAN ? r->head - RING_AUX_SPAN : 0;

    for (uint64_t seq = g->base; seq < old && seq < g->base + RING_SEG; seq++) {
        aux_drop(&g->aux[seq % RING_SEG]);
    }
}

/* Segments that <cap> events can span, plus the one being filled. */
static size_t segs_for(size_t cap)
{
    return (cap + RING_SEG - 1) / RING_SEG + 1;
}

/* Makes room in the segment table for <n> segments (re-placing the held ones). */
static void segs_reserve(struct ring *r, size_t n)
{
    size_t cap = r->seg_cap;
    struct ring_seg **segs;

    if (cap >= n) {
        return;
    }
    while (cap < n) {
        cap *= 2;
    }
    segs = xcalloc(cap, sizeof(*segs));
    for (uint64_t k = r->seg_lo; k < r->seg_hi; k++) {
        segs[k & (cap - 1)] = r->segs[k & (r->seg_cap - 1)];
    }
    free(r->segs);
    r->segs = segs;
    r->seg_cap = cap;
}

struct ring *ring_new(const struct ring_opts *opts)
{
    struct ring *r = xcalloc(1, sizeof(*r));

    r->min_cap = opts != NULL ? opts->min_cap : RING_MIN_CAP_DEFAULT;
    r->max_cap = opts != NULL ? opts->max_cap : RING_MAX_CAP_DEFAULT;
    r->fresh_ms = opts != NULL ? opts->fresh_ms : RING_FRESH_MS_DEFAULT;
    if (r->min_cap < 1) {
        r->min_cap = 1;
    }
    if (r->max_cap < r->min_cap) {
        r->max_cap = r->min_cap;
    }
    if (r->fresh_ms < 0) {
        r->fresh_ms = 0;
    }
    r->cap = r->min_cap;
    r->seg_cap = 1;
    r->segs = xcalloc(1, sizeof(*r->segs));
    segs_reserve(r, segs_for(r->cap));
    return r;
}

/* Lets go of the segments entirely below the tail (the tail's own segment stays held, also
 * when the ring is empty: the next push writes into it). */
static void trim(struct ring *r)
{
    while (r->seg_lo < r->tail / RING_SEG) {
        struct ring_seg **pp = &r->segs[r->seg_lo & (r->seg_cap - 1)];

        if ((*pp)->borrowers > 0) {
            (*pp)->retired = true;
        } else {
            seg_free(*pp);
        }
        *pp = NULL;
        r->seg_lo++;
    }
}

/* Moves the tail past the oldest event; its references go now unless its segment is
 * borrowed (then at the last ring_return). */
static void pop_tail(struct ring *r)
{
    struct ring_seg *g = seg_of(r, r->tail);

    BUG_ON(r->tail >= r->head);
    if (g->borrowers == 0) {
        event_clear(&g->ev[r->tail % RING_SEG]);
    }
    r->tail++;
    if (r->tail % RING_SEG == 0) {
        trim(r);
    }
}

/* Drops the oldest event; it counts against the "too old" boundary. */
static void drop_oldest(struct ring *r)
{
    r->dropped_rv = slot(r, r->tail)->rv;
    r->dropped = true;
    pop_tail(r);
}

void ring_free(struct ring *r)
{
    if (r == NULL) {
        return;
    }
    /* A borrowed segment outliving the ring would be freed by a ring_return into freed memory. */
    BUG_ON(r->lent != 0);
    for (uint64_t k = r->seg_lo; k < r->seg_hi; k++) {
        seg_free(r->segs[k & (r->seg_cap - 1)]);
    }
    free(r->segs);
    free(r);
}

/* A new logical capacity: a shrink first drops the oldest; the slots never move. */
static void resize(struct ring *r, size_t new_cap)
{
    while (r->head - r->tail > new_cap) {
        drop_oldest(r);
    }
    segs_reserve(r, segs_for(new_cap));
    r->cap = new_cap;
}

/* kube-apiserver resizeCacheLocked, run before inserting into a full ring. */
static void resize_if_full(struct ring *r, int64_t now_ms)
{
    size_t new_cap;

    if (r->head - r->tail < r->cap) {
        return;
    }
    if (r->fresh_ms == 0) {
        if (r->cap < r->max_cap) {
            resize(r, r->cap * 2 < r->max_cap ? r->cap * 2 : r->max_cap);
        }
        return;
    }
    if (now_ms - slot(r, r->tail)->t_ms < r->fresh_ms) {
        /* The whole window is younger than fresh_ms: keep more history. */
        new_cap = r->cap * 2 < r->max_cap ? r->cap * 2 : r->max_cap;
        if (new_cap > r->cap) {
            resize(r, new_cap);
        }
        return;
    }
    /* Even the newest quarter is stale: the ring is bigger than the traffic needs. */
    if (now_ms - slot(r, r->head - r->cap / 4)->t_ms > r->fresh_ms) {
        new_cap = r->cap / 2 > r->min_cap ? r->cap / 2 : r->min_cap;
        if (new_cap < r->cap) {
            resize(r, new_cap);
        }
    }
}

/* Order matters: resize first (it may grow and avoid the eviction), then evict if still
 * full, then write; the caller's references are untouched, the ring takes its own. */
int ring_push(struct ring *r, enum watch_type type, struct blob *obj, struct blob *prev,
              uint64_t rv, int64_t now_ms)
{
    struct ring_event *e;

    if (rv <= r->last_rv) {
        return -EINVAL;
    }
    resize_if_full(r, now_ms);
    if (r->head - r->tail == r->cap) {
        drop_oldest(r);
    }
    if (r->head / RING_SEG == r->seg_hi) {
        struct ring_seg *g = xcalloc(1, sizeof(*g));

        g->base = r->head;
        for (size_t i = 0; i < RING_SEG; i++) {
            atomic_init(&g->aux[i], NULL);
        }
        r->segs[r->seg_hi & (r->seg_cap - 1)] = g;
        r->seg_hi++;
    }
    /* Only the newest events keep attachments (ring.h). */
    if (r->head >= r->tail + RING_AUX_SPAN && seg_of(r, r->head - RING_AUX_SPAN)->borrowers == 0) {
        aux_drop(slot(r, r->head - RING_AUX_SPAN)->aux);
    }
    e = slot(r, r->head);
    e->seq = r->head;
    e->aux = &seg_of(r, r->head)->aux[r->head % RING_SEG];
    e->rv = rv;
    e->type = type;
    e->obj = blob_ref(obj);
    e->prev = blob_ref(prev);
    e->t_ms = now_ms;
    r->head++;
    r->last_rv = rv;
    return 0;
}

void ring_reset(struct ring *r, uint64_t list_rv)
{
    /* Not "dropped": after a relist the boundary is the list rv, whatever was kept. */
    while (r->tail < r->head) {
        pop_tail(r);
    }
    r->reset_rv = list_rv;
    r->last_rv = list_rv;
    r->dropped = false;
    r->dropped_rv = 0;
}

size_t ring_compact(struct ring *r, uint64_t rv)
{
    size_t n = 0;

    while (r->tail < r->head && slot(r, r->tail)->rv <= rv) {
        drop_oldest(r);
        n++;
    }
    return n;
}

uint64_t ring_head(const struct ring *r)
{
    return r->head;
}

uint64_t ring_tail(const struct ring *r)
{
    return r->tail;
}

size_t ring_len(const struct ring *r)
{
    return (size_t)(r->head - r->tail);
}

size_t ring_cap(const struct ring *r)
{
    return r->cap;
}

const struct ring_event *ring_at(const struct ring *r, uint64_t seq)
{
    if (seq < r->tail || seq >= r->head) {
        return NULL;
    }
    return slot(r, seq);
}

/* oldest-1, per SEMANTICS 3.3: reset rv while nothing was dropped, else the first kept
 * rv minus one, else (emptied by drops) the last dropped rv. */
uint64_t ring_boundary(const struct ring *r)
{
    if (!r->dropped) {
        return r->reset_rv;
    }
    if (r->tail < r->head) {
        return slot(r, r->tail)->rv - 1;
    }
    return r->dropped_rv;
}

bool ring_whole(const struct ring *r)
{
    return !r->dropped;
}

int ring_seek(const struct ring *r, uint64_t rv, uint64_t *seq, uint64_t *boundary)
{
    uint64_t b = ring_boundary(r);
    uint64_t lo = r->tail;
    uint64_t hi = r->head;

    if (boundary != NULL) {
        *boundary = b;
    }
    if (rv < b) {
        return -ESTALE;
    }
    /* First kept event with rv > <rv>: kept rvs are strictly increasing. */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;

        if (slot(r, mid)->rv <= rv) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *seq = lo;
    return 0;
}

struct ring_seg *ring_borrow(struct ring *r, uint64_t seq)
{
    struct ring_seg *g;

    BUG_ON(seq < r->tail || seq >= r->head);
    g = seg_of(r, seq);
    g->borrowers++;
    r->lent++;
    return g;
}

void ring_return(struct ring *r, struct ring_seg *g)
{
    BUG_ON(g->borrowers == 0 || r->lent == 0);
    r->lent--;
    if (--g->borrowers > 0) {
        return;
    }
    if (g->retired) {
        seg_free(g);
        return;
    }
    /* Still held: clear what was evicted from it while it was borrowed, and attachments
     * that aged meanwhile. */
    for (uint64_t seq = g->base; seq < r->tail && seq < g->base + RING_SEG; seq++) {
        if (g->ev[seq % RING_SEG].obj != NULL) {
            event_clear(&g->ev[seq % RING_SEG]);
        }
    }
    seg_age(r, g);
}

void *ring_aux(const struct ring_event *e)
{
    return atomic_load_explicit(e->aux, memory_order_acquire);
}

void *ring_aux_attach(const struct ring_event *e, void *aux)
{
    void *cur = NULL;

    if (atomic_compare_exchange_strong_explicit(e->aux, &cur, aux, memory_order_acq_rel,
                                                memory_order_acquire)) {
        return aux;
    }
    return cur;
}

size_t ring_footprint(const struct ring *r)
{
    return sizeof(*r) + r->seg_cap * sizeof(*r->segs) +
           (size_t)(r->seg_hi - r->seg_lo) * sizeof(struct ring_seg);
}
