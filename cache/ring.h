/*
 * ring.h - the bounded history of events of one resource, keyed by resourceVersion.
 *
 *            tail (oldest kept)                         head (next seq to write)
 *              v                                           v
 *   ... evicted | e[t] | e[t+1] | ...           | e[h-1] |  (free)
 *                  ^ cursor of a slow watcher       ^ cursor of a live watcher
 *
 * Sequence numbers (seq) grow forever; slot = seq % cap. A watcher holds a seq cursor; if
 * its cursor falls below the tail it has lost events and must be ended (the writer never
 * waits for a reader). Events are stored in rv order (the writer guarantees increasing rv).
 *
 * Capacity follows kube-apiserver's watch cache (SEMANTICS 3.1) when fresh_ms > 0: start at
 * min_cap; before inserting into a full ring, double (<= max_cap) if the oldest event is
 * younger than fresh_ms, else halve (>= min_cap) if the event at head-cap/4 is older than
 * fresh_ms; then evict the oldest if still full. With fresh_ms == 0 the ring grows by
 * doubling up to max_cap and then evicts; min_cap == max_cap gives a fixed capacity.
 *
 * The "too old" boundary (SEMANTICS 2.4/3.3): oldest = reset_rv+1 when nothing was evicted
 * since the last reset, else the rv of the first kept event (or last evicted rv + 1 when
 * empty). A watch from rv is accepted iff rv >= oldest-1.
 *
 * Storage and borrowing: slots live in segments of RING_SEG consecutive seqs, and a slot is
 * written once (by ring_push) and never moved, whatever the resizes. A reader may borrow the
 * segment of an event (ring_borrow) instead of taking a reference on each blob: until it
 * returns it (ring_return), the events of that segment keep their blob references even if
 * they leave the window meanwhile. So a watcher's batch costs one borrow per segment (two
 * plain counters under the resource lock) instead of two atomic operations per event.
 *
 *   seg k-1 (retired, borrowed) | seg k          | seg k+1          | seg k+2 (partial)
 *   [evicted, refs kept]        | [evicted|tail ... ]               [ ... head-1 ] (free)
 *
 * Not thread-safe by itself: guarded by the resource mutex (borrow counts included).
 */
#ifndef KWP_CACHE_RING_H
#define KWP_CACHE_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct blob;
struct ring;

enum watch_type { WATCH_ADDED = 0, WATCH_MODIFIED, WATCH_DELETED, WATCH_BOOKMARK, WATCH_ERROR };

/* One event. obj is the object as of the event (for DELETED: the deleted object carrying the
 * deletion rv); prev is the object before the event (NULL for ADDED). */
struct ring_event {
    uint64_t seq;
    uint64_t rv;
    enum watch_type type;
    struct blob *obj;
    struct blob *prev;
    int64_t t_ms;         /* when it was appended */
    _Atomic(void *) *aux; /* its slot's attachment (ring_aux), also from a copy of the event */
};

/* Seqs per segment (the unit of storage and of borrowing); a power of two. */
#define RING_SEG 64

struct ring_seg;

#define RING_MIN_CAP_DEFAULT 100
#define RING_MAX_CAP_DEFAULT 102400
#define RING_FRESH_MS_DEFAULT 75000

struct ring_opts {
    size_t min_cap;   /* >= 1 */
    size_t max_cap;   /* >= min_cap */
    int64_t fresh_ms; /* 0 = no time rule */
};

/* Returns a new empty ring (reset_rv 0). Invalid opts are clamped (min_cap >= 1 ...). */
struct ring *ring_new(const struct ring_opts *opts);

/* Frees the ring and drops its references. NULL-safe. */
void ring_free(struct ring *r);

/*
 * Appends an event; takes new references to <obj> and <prev> (either may be NULL for prev).
 * <rv> must be greater than the last pushed rv (else -EINVAL, nothing changes).
 * Returns 0 or -EINVAL.
 */
int ring_push(struct ring *r, enum watch_type type, struct blob *obj, struct blob *prev,
              uint64_t rv, int64_t now_ms);

/* Empties the ring after a relist at <list_rv>: oldest becomes list_rv+1. Seqs keep growing
 * so every cursor taken before the reset falls below the tail. */
void ring_reset(struct ring *r, uint64_t list_rv);

/* Drops every event with rv <= <rv> (etcd-like compaction). Returns how many were dropped. */
size_t ring_compact(struct ring *r, uint64_t rv);

uint64_t ring_head(const struct ring *r); /* next seq to be written */
uint64_t ring_tail(const struct ring *r); /* oldest seq kept (== head when empty) */
size_t ring_len(const struct ring *r);
size_t ring_cap(const struct ring *r);

/* Returns the event at <seq> (lent) or NULL when seq is outside [tail, head). */
const struct ring_event *ring_at(const struct ring *r, uint64_t seq);

/*
 * Borrows the segment holding <seq> (tail <= seq < head, else BUG): every event of it keeps
 * its obj and prev references, even once evicted, until the matching ring_return. Returns
 * the segment (a handle for ring_return only). Every borrow must be returned before
 * ring_free; the segment itself stays valid until then.
 */
struct ring_seg *ring_borrow(struct ring *r, uint64_t seq);

/* Returns a borrow: the last one frees what the ring has let go of meanwhile (the evicted
 * events' references and attachments, or the whole segment). */
void ring_return(struct ring *r, struct ring_seg *seg);

/*
 * Attachments: one heap block per event that readers derive from it and share (the proxy's
 * encoded watch frame), so the first reader builds it and the others reuse it. Called
 * WITHOUT the lock on a copy <e> of an event whose segment the caller has borrowed (that
 * keeps the block alive); any thread. The ring frees a block with free() once the event is
 * RING_AUX_SPAN seqs behind the head, or evicted, and nobody borrows its segment: so blocks
 * cost memory for the newest events only (a borrower may re-attach to an older one; its last
 * ring_return frees that).
 */
#define RING_AUX_SPAN (2 * RING_SEG)

/* The block attached to <e>, or NULL. */
void *ring_aux(const struct ring_event *e);

/* Attaches <aux> (malloc'd) to <e> unless a block is there already. Returns the attached
 * block: <aux>, now owned by the ring, or the one another reader attached first (then the
 * caller still owns <aux>). */
void *ring_aux_attach(const struct ring_event *e, void *aux);

/*
 * Finds where a watch from <rv> starts: sets <seq> to the first event with rv > <rv>
 * (head if none). Returns 0, or -ESTALE when rv < oldest-1; then <boundary> (if not NULL)
 * gets oldest-1 for the "too old resource version: rv (boundary)" message.
 */
int ring_seek(const struct ring *r, uint64_t rv, uint64_t *seq, uint64_t *boundary);

/* oldest-1: the smallest rv a watch may start from (see the header comment). */
uint64_t ring_boundary(const struct ring *r);

/* Whether every event since the last reset is still kept (none evicted or compacted): the
 * boundary is then the reset's list rv, where this history began. */
bool ring_whole(const struct ring *r);

/* Approximate heap bytes of the slots held by the ring (not the blobs, nor segments that
 * only a borrower still holds). */
size_t ring_footprint(const struct ring *r);

#endif
