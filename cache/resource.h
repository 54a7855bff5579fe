/*
 * resource.h - everything the cache knows about one group/version/resource.
 *
 *   struct resource (one mutex)
 *     store    : key -> current blob (LIST, synthetic ADDED, GET)
 *     ring     : history of events (replay, 410 boundary, selector transitions via prev)
 *     watchers : cursors into the ring, woken after each append
 *     rv       : current RV; a condition variable wakes blocking freshness waiters
 *     snapshot : the current state as an immutable store version, taken in O(1)
 *     ckpts    : store versions every 64 events of the ring, for the state at an older rv
 *
 * Writers (the reflector, or the simulator's own writes) call resource_replace/apply/
 * progress. Readers (HTTP handlers) attach watchers and pull events with
 * resource_watch_next. Wake-ups: every writer call that advances the state clears the
 * <suspended> flag of the watchers it must wake UNDER the lock (whoever clears the flag owns
 * the wake-up), then calls their wake functions AFTER unlocking. A watcher whose flag is set
 * cannot complete (its connection is suspended), so it stays valid until that call.
 * The cache never logs and never calls into HTTP or curl; it only calls the wake functions.
 */
#ifndef KWP_CACHE_RESOURCE_H
#define KWP_CACHE_RESOURCE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cache/ring.h"

struct blob;
struct snapshot;
struct resource;

/* Called (outside the resource lock) to wake a suspended reader; any thread. */
typedef void watchers_wake_fn(void *ctx);

enum watcher_kind { WATCHER_STREAM = 0, WATCHER_RVWAIT };

/* Ring segments one batch may borrow: a batch of up to RING_SEG events spans at most two. */
#define WATCHER_HELD_MAX 2

/*
 * A downstream watch (or a request waiting for the RV to reach some value), embedded by the
 * caller in its per-request state. Set the public fields before attaching; the private ones
 * belong to the resource and are read/written only under its lock.
 * Contract: zero the struct, then set the public fields. Once attached,
 * resource_watch_detach() MUST be called before the memory is freed, on every path (the
 * HTTP completion callback), even if never woken; detaching twice is harmless.
 */
struct watcher {
    /* public: set before attach, read-only afterwards */
    watchers_wake_fn *wake;
    void *wake_ctx;
    const char *ns;      /* dispatch scope: only events in this namespace wake it; NULL = any */
    const char *trigger; /* dispatch scope: only events whose object (or previous object) has
                            this value in the resource's trigger field wake it (e.g. pods
                            with spec.nodeName=X); NULL = none. Takes precedence over ns. */
    /* private: under the resource lock */
    uint64_t cursor;  /* next ring seq to deliver */
    uint64_t epoch;   /* resource epoch at attach; a relist bumps it and ends the watch */
    uint64_t wait_rv; /* RVWAIT: wake when rv >= wait_rv */
    uint64_t from_rv; /* STREAM: events with rv <= from_rv are skipped (watch from a future rv) */
    int64_t due_ms;   /* wake when now >= due_ms (bookmark, deadline); 0 = never */
    struct watcher *prev, *next;   /* all watchers of the kind */
    struct watcher *bprev, *bnext; /* STREAM: the dispatch bucket (or the unscoped list) */
    void *bucket;                  /* STREAM: the bucket it is in, NULL = unscoped */
    struct watcher *sleep_prev, *sleep_next; /* STREAM, suspended: its bucket's sleep list */
    struct watcher **sleep_head;             /* the sleep list it is on; NULL = on none */
    struct ring_seg *held[WATCHER_HELD_MAX]; /* STREAM: ring segments the last batch borrowed */
    size_t due_idx; /* 1 + its place in the resource's due heap; 0 = not in it */
    /* The small fields last, packed (every idle watch holds this struct): */
    uint8_t kind;   /* public, set before attach: enum watcher_kind */
    uint8_t n_held; /* entries of held[] in use */
    bool attached;
    bool suspended; /* the reader is (about to be) suspended; cleared by whoever wakes it */
    bool closed;    /* ended by the cache (relist, laggard, shutdown) or killed by a sweep */
    bool overdue;   /* a tick found it due and due_ms has not moved since */
};

/* Counters, read with resource_stats(). */
struct resource_stats {
    uint64_t rv;
    uint64_t events;       /* events appended since start */
    uint64_t relists;      /* resource_replace calls (resource_relist that reset included) */
    uint64_t relists_kept; /* resource_relist calls that kept the state (nothing was lost) */
    uint64_t watchers;     /* currently attached STREAM watchers */
    uint64_t laggards;     /* watchers ended because their cursor fell out of the ring */
    size_t objects;        /* objects in the store */
    size_t object_bytes;   /* JSON bytes in the store */
    size_t history_len;    /* events in the ring */
    size_t history_cap;
    uint64_t history_boundary;  /* oldest-1: smallest rv a watch may start from */
    uint64_t history_oldest_rv; /* rv of the oldest event held; 0 when the history is empty */
    uint64_t history_newest_rv; /* rv of the newest event held; 0 when the history is empty */
    int64_t history_oldest_ms;  /* when the oldest event held was appended (the clock given to
                                   the writers); 0 when the history is empty */
    bool ready;
};

struct resource *resource_new(const char *name, const struct ring_opts *ring_opts);

/* Frees the resource. All watchers must be detached. NULL-safe. */
void resource_free(struct resource *res);

/* The name given to resource_new (for logs and metrics). */
const char *resource_name(const struct resource *res);

/*
 * Names the trigger field of this resource (pods: "spec.nodeName", SEMANTICS 3.6): watchers
 * that set w->trigger are then indexed by its value, so an event only visits the watchers
 * that can match it. Call once before any watcher attaches; <field> must outlive <res>.
 */
void resource_set_trigger(struct resource *res, const char *field);

/* An opaque pointer the owner may hang on the resource (e.g. its API metadata). */
void resource_set_user(struct resource *res, void *user);
void *resource_user(const struct resource *res);

/* ---- writers ------------------------------------------------------------------------- */

/*
 * Relist: replaces the whole state with <items> (any order, n of them; takes new
 * references) at <list_rv>, resets the history (watches below list_rv get 410), marks the
 * resource ready, bumps the epoch (every attached STREAM watcher is ended cleanly) and
 * wakes everyone. A <list_rv> below the current rv (upstream went backwards: restored from a
 * backup) also makes watches from the rvs in between get 410 (resource_watch_from) until
 * the rv passes them again. Returns 0.
 */
int resource_replace(struct resource *res, struct blob *const *items, size_t n, uint64_t list_rv,
                     int64_t now_ms);

/*
 * A relist after the first one (the upstream watch got 410, or broke on bad data): when the
 * list holds exactly the objects the store holds (the same keys, each at the same rv) and
 * <list_rv> >= the current rv, nothing was lost while the watch was down, so the history,
 * the store and every watcher are kept: the rv moves to <list_rv> (as a progress
 * notification would), the resource is ready again, and 1 is returned. Otherwise (something
 * changed, the upstream's rv went backwards, or the resource never listed) it is
 * resource_replace and 0 is returned. Takes no reference on <items> when it keeps the state.
 * The check is O(n log n); <items> are not modified.
 */
int resource_relist(struct resource *res, struct blob *const *items, size_t n, uint64_t list_rv,
                    int64_t now_ms);

/*
 * Applies one event at <rv> (> current rv, else -EINVAL): ADDED/MODIFIED store <obj>
 * (takes a reference), DELETED removes obj->key (obj is the deleted object as of the
 * deletion). The previous version becomes the event's prev. Advances rv, invalidates the
 * cached snapshot, wakes watchers and freshness waiters. Returns 0 or -EINVAL.
 * A MODIFIED for an absent key is stored as ADDED; a DELETED for an absent key is still
 * recorded (prev NULL) so the RV sequence has no hole.
 */
int resource_apply(struct resource *res, enum watch_type type, struct blob *obj, uint64_t rv,
                   int64_t now_ms);

/* Advances the RV without an event (an upstream bookmark / progress notification); rv <=
 * current is ignored. Wakes freshness waiters. */
void resource_progress(struct resource *res, uint64_t rv);

/* Marks the resource not ready (its upstream broke and it must relist), remembering when. */
void resource_set_unready(struct resource *res, int64_t now_ms);

/* Compacts the history: drops events with rv <= <rv>. Watchers whose cursor falls out are
 * ended. */
void resource_compact(struct resource *res, uint64_t rv);

/* Ends every STREAM watcher now (their streams end cleanly, as when an apiserver restarts)
 * while the resource keeps serving; new watches are accepted. */
void resource_end_watches(struct resource *res);

/*
 * Shutdown, before resource_close_all: the events appended so far are the last ones handed
 * out. Every STREAM watcher, once it has taken them, gets -ESHUTDOWN from resource_watch_next
 * instead of being suspended, and resource_watch_idle_rv gives it the rv of this moment (so
 * its reader can send a last BOOKMARK that skips nothing and end its stream cleanly; the
 * events appended later are for the replica the client moves to). Suspended watchers are
 * woken now. New watches are still attached and drain the same way. The first call counts;
 * later ones do nothing. Any thread.
 */
void resource_drain_watches(struct resource *res);

/* Ends every watcher (shutdown) and wakes them; later attaches are refused (see below). */
void resource_close_all(struct resource *res);

/* ---- readers ------------------------------------------------------------------------- */

uint64_t resource_rv(struct resource *res);
bool resource_is_ready(struct resource *res, int64_t *since_ms);
void resource_stats(struct resource *res, struct resource_stats *out);

/* Returns a reference to the blob at <key> (caller unrefs) or NULL. */
struct blob *resource_get(struct resource *res, const char *key);

/*
 * Returns a reference to the snapshot of the current state (O(1); cached until the next
 * change) and the current rv through <rv> (may exceed snapshot->rv after progress).
 */
struct snapshot *resource_snapshot(struct resource *res, uint64_t *rv);

/*
 * Returns a reference to the state as of <rv>, rebuilt from the nearest history checkpoint
 * by replaying or undoing at most 32 events: O(log n) per event, whatever the store's size.
 * -ESTALE when rv < boundary (the history does not reach back), -EAGAIN when rv > current
 * rv. On success *out is set, snapshot->rv == rv.
 */
int resource_snapshot_at(struct resource *res, uint64_t rv, struct snapshot **out);

/*
 * Blocks until rv >= <rv> or <timeout_ms> passed (condition variable, no polling).
 * Returns 0 or -ETIMEDOUT; <cur> (if not NULL) gets the rv at return.
 */
int resource_wait_fresh(struct resource *res, uint64_t rv, int64_t timeout_ms, uint64_t *cur);

/*
 * What a warm restart needs to rebuild this resource exactly (proxy/state.c writes it): the
 * state at the history boundary, every event of the history after it, and the current rv.
 * Replaying <events> in order onto <base> with resource_replace(base, boundary) and
 * resource_apply gives the current state, the same history and the same 410 boundary.
 */
struct resource_export {
    struct snapshot *base;     /* the state at <boundary>, one reference */
    struct ring_event *events; /* the history, oldest first: obj referenced, prev NULL */
    size_t n_events;
    uint64_t boundary; /* oldest-1 of the history (base->rv) */
    uint64_t rv;       /* current rv (may exceed the last event's after progress) */
};

/*
 * Takes <out> in one critical section: O(history) reference counts plus one state rebuild
 * (resource_snapshot_at's cost), no copy of any object. Returns 0, or -EAGAIN when the
 * resource is not ready (never synced, or relisting: its state must not be resumed from).
 * Any thread; takes the lock. Release with resource_export_fini.
 */
int resource_export(struct resource *res, struct resource_export *out);

/* Drops the references of <x> and zeroes it. NULL-safe; any thread, no lock. */
void resource_export_fini(struct resource_export *x);

/* ---- watchers ------------------------------------------------------------------------ */

/*
 * Attaches a STREAM watcher that replays every event with rv > <from_rv>, then follows live.
 * Returns 0, -ESTALE when from_rv is older than the history (then <boundary> gets oldest-1
 * for the 410 message and nothing is attached) or is an rv of the history lost when a relist
 * went backwards (above the current rv, at most the rv before it; <boundary> gets oldest-1 too), or
 * -EAGAIN when not ready or after resource_close_all (shutting down).
 */
int resource_watch_from(struct resource *res, struct watcher *w, uint64_t from_rv,
                        uint64_t *boundary);

/*
 * resource_watch_from that also tells, on success, the rv up to which the watch replays the
 * history of this moment through *<replay_rv>: the rv of the last event appended so far, or
 * <from_rv> when that is not newer. It is kube-apiserver's watermark after the interval (a
 * periodic BOOKMARK goes to the watch only above it, SEMANTICS 2.3/2.6).
 */
int resource_watch_replay(struct resource *res, struct watcher *w, uint64_t from_rv,
                          uint64_t *boundary, uint64_t *replay_rv);

/*
 * Whether the history is whole: it holds every event since this cache's first list, none
 * evicted or compacted, and no relist reset it since. A watch below the boundary of a whole
 * history asks for events from before this cache existed (a replica that started later than
 * the one the client came from), not for events the cache let go: upstream may still have
 * them.
 */
bool resource_history_whole(struct resource *res);

/*
 * Attaches a STREAM watcher at the current head (only events appended after this call) and,
 * when <initial> is not NULL, returns in the same critical section a reference to the
 * snapshot of the current state (for synthetic ADDED events) and its rv through <rv>.
 * Returns 0 or -EAGAIN when not ready or after resource_close_all.
 */
int resource_watch_now(struct resource *res, struct watcher *w, struct snapshot **initial,
                       uint64_t *rv);

/*
 * Attaches an RVWAIT watcher: if rv >= <rv> already returns 0 and attaches nothing;
 * otherwise attaches it with w->suspended set and returns -EAGAIN: the caller must suspend
 * and will be woken when rv >= <rv> or at <due_ms> (through resource_tick), then detach.
 * After resource_close_all nothing would wake it, so it returns 0 without attaching: the
 * caller re-reads the rv.
 */
int resource_wait_rv(struct resource *res, struct watcher *w, uint64_t rv, int64_t due_ms);

/*
 * Copies up to <max> events after the cursor into <out> and advances the cursor. The events
 * are lent, without a reference per blob: their obj and prev stay valid (even if the events
 * leave the history meanwhile) until the next resource_watch_next/take or
 * resource_watch_detach of <w>, which gives them back (the watcher borrows the ring
 * segments they sit in, see ring.h). A batch may stop short of <max> at a segment boundary
 * when <max> > RING_SEG; with <max> <= RING_SEG a short batch means nothing more was pending.
 * Returns >0 (count), 0 when nothing is pending (w->suspended is then set: the caller must
 * suspend its connection, or call again if it cannot), -EPIPE when the watch must end
 * (relist, fell out of the ring, compaction, shutdown, or resource_watch_kill), or
 * -ESHUTDOWN when nothing is pending after resource_drain_watches (w->suspended not set).
 */
ssize_t resource_watch_next(struct resource *res, struct watcher *w, struct ring_event *out,
                            size_t max);

/*
 * For a BOOKMARK: when <w> has taken every event appended so far (nothing pending), sets *rv
 * to the current rv and returns true, both read under one lock, so a bookmark never overtakes
 * an event the watcher has not sent yet. Returns false when events are pending. After
 * resource_drain_watches: the same for the events and the rv of the moment the drain began.
 */
bool resource_watch_idle_rv(struct resource *res, struct watcher *w, uint64_t *rv);

/*
 * For a watch still sending its initial events, while the live ones wait: when the oldest
 * event <w> has not taken yet was appended (the ring's t_ms). Returns false when none waits;
 * *t_ms is INT64_MIN when it has already left the history.
 */
bool resource_watch_oldest_ms(struct resource *res, struct watcher *w, int64_t *t_ms);

/*
 * Like resource_watch_next, but never sets w->suspended: returns 0 when nothing is pending.
 * A reader that already has bytes to hand to the server (so it will not suspend now) must
 * use this: a suspended flag on a connection that is not suspended would let a writer resume
 * a connection that may complete and be freed before the wake-up runs.
 */
ssize_t resource_watch_take(struct resource *res, struct watcher *w, struct ring_event *out,
                            size_t max);

/* Why the cache ended a watch (resource_watch_end_reason). */
enum watch_end {
    WATCH_END_CLOSED = 0, /* closed by its owner: resource_watch_kill, resource_end_watches */
    WATCH_END_SHUTDOWN,   /* resource_close_all */
    WATCH_END_RELIST,     /* a relist reset the history (resource_replace) */
    WATCH_END_EXPIRED,    /* its cursor fell out of the history (too slow, or compaction) */
};

/* After resource_watch_next/take returned -EPIPE for <w> (still attached): why. */
enum watch_end resource_watch_end_reason(struct resource *res, const struct watcher *w);

/* Sets when the tick must wake this watcher next (bookmark or deadline); 0 = never. */
void resource_watch_set_due(struct resource *res, struct watcher *w, int64_t due_ms);

/* Detaches <w> (idempotent; a never-attached watcher is fine) and gives back the events of
 * its last batch. */
void resource_watch_detach(struct resource *res, struct watcher *w);

/* Marks <w> closed and wakes it if suspended (e.g. a disconnected peer found by a sweep). */
void resource_watch_kill(struct resource *res, struct watcher *w);

/*
 * The tick: wakes suspended watchers whose due_ms <= now_ms (again at every tick while it
 * stays so), and when <dead> is not NULL calls <dead>(w, ctx) under the lock for each other
 * suspended watcher: when it returns true the watcher is closed and woken. <dead> must be
 * cheap and must not call into the cache. Cost: O(log n) per due watcher (a heap on due_ms),
 * plus the suspended ones when <dead> is given; running watchers are not visited.
 * Returns the number woken.
 */
size_t resource_tick(struct resource *res, int64_t now_ms,
                     bool (*dead)(struct watcher *w, void *ctx), void *ctx);

/*
 * The lag sweep: for each running STREAM watcher (not suspended) calls <lagging>(w, t_ms, ctx)
 * under the lock: for one not closed, only when an event waits for it, with that event's
 * append time (INT64_MIN when it already left the history); for a closed one (still
 * attached: its server has not ended it yet) with t_ms 0 (w->closed tells which). When it
 * returns true for one not closed, the watcher is closed (its next resource_watch_next
 * returns -EPIPE). A running watcher whose client reads slowly may not be called by its
 * server for a long time: this finds it anyway. <lagging> must be cheap and must not call
 * into the cache. O(attached STREAM watchers). Returns the number closed.
 */
size_t resource_sweep_running(struct resource *res,
                              bool (*lagging)(struct watcher *w, int64_t t_ms, void *ctx),
                              void *ctx);

/* One attached STREAM watcher's lag (resource_watcher_lags). */
struct watcher_lag {
    uint64_t events; /* events of the history it has not been sent yet: from its cursor (or, for
                        a watch from a future rv, the first event past that rv) to the newest */
    int64_t age_ms;  /* now - append time of the oldest of them (of the oldest event held when
                        they have already left the history); 0 when caught up */
};

/* What resource_watcher_lags found over every attached STREAM watcher. */
struct watcher_lags {
    uint64_t count;      /* attached STREAM watchers (resource_stats' watchers) */
    uint64_t max_events; /* the largest lag in events among them */
    int64_t max_age_ms;  /* the largest lag in time among them */
    size_t n;            /* entries filled in the caller's array: min(count, max) */
};

/*
 * The lag of every attached STREAM watcher, read in one critical section (safe against
 * watchers attaching and detaching on other threads): <sum> gets the count and the maxima
 * over all of them, and <out> the <max> largest lags, largest first (by events, then age).
 * A suspended watcher is caught up (nothing in its scope is pending: see resource.c), as is
 * one whose pending events are all at or below the rv it watches from. <now_ms> is on the
 * writers' clock (the t_ms given to resource_apply). O(watchers log max) under the lock, no
 * allocation; <out> may be NULL when <max> is 0. Any thread.
 */
void resource_watcher_lags(struct resource *res, int64_t now_ms, struct watcher_lag *out,
                           size_t max, struct watcher_lags *sum);

#endif
