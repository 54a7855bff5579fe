/*
 * ring.c - the bounded, self-sizing event history (see ring.h for the diagram and rules).
 *
 * Events live in slots[seq % cap] for seq in [tail, head). A resize allocates a new slot
 * array and re-places every kept event at seq % new_cap, so seqs (and watchers' cursors)
 * are never renumbered. Capacity follows kube-apiserver's resizeCacheLocked exactly,
 * including its quirk that a ring at max_cap with fresh events does not consider halving.
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
    struct ring_event *slots; /* cap entries; slot of seq = seq % cap */
    size_t cap;
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

static struct ring_event *slot(const struct ring *r, uint64_t seq)
{
    return &r->slots[seq % r->cap];
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
    r->slots = xcalloc(r->cap, sizeof(*r->slots));
    return r;
}

static void event_clear(struct ring_event *e)
{
    blob_unref(e->obj);
    blob_unref(e->prev);
    memset(e, 0, sizeof(*e));
}

/* Drops the oldest event; it counts against the "too old" boundary. */
static void drop_oldest(struct ring *r)
{
    struct ring_event *e = slot(r, r->tail);

    BUG_ON(r->tail >= r->head);
    r->dropped_rv = e->rv;
    r->dropped = true;
    event_clear(e);
    r->tail++;
}

void ring_free(struct ring *r)
{
    if (r == NULL) {
        return;
    }
    while (r->tail < r->head) {
        event_clear(slot(r, r->tail));
        r->tail++;
    }
    free(r->slots);
    free(r);
}

/* Moves the kept events into a <new_cap> slot array; a shrink first drops the oldest. */
static void resize(struct ring *r, size_t new_cap)
{
    struct ring_event *slots;

    while (r->head - r->tail > new_cap) {
        drop_oldest(r);
    }
    slots = xcalloc(new_cap, sizeof(*slots));
    for (uint64_t seq = r->tail; seq < r->head; seq++) {
        slots[seq % new_cap] = *slot(r, seq);
    }
    free(r->slots);
    r->slots = slots;
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
    e = slot(r, r->head);
    e->seq = r->head;
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
        event_clear(slot(r, r->tail));
        r->tail++;
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

size_t ring_footprint(const struct ring *r)
{
    return sizeof(*r) + r->cap * sizeof(*r->slots);
}
