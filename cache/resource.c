/*
 * resource.c - store + ring + watchers + rv of one resource behind one mutex (see
 * resource.h).
 *
 * Lock model: <mu> guards every field below it in struct resource and every private field
 * of an attached watcher. Critical sections only move references, cursors and flags, plus
 * O(log n) tree work: a put/del, or taking a snapshot (O(1) for the current state, at most
 * CKPT_EVERY/2 replayed events for an older rv). Only a relist (resource_replace) is O(n).
 * Wake protocol: a writer collects, under <mu>, the watchers it must wake whose <suspended>
 * flag is set, clearing that flag (whoever clears it owns the wake-up); after unlocking it
 * calls their wake functions. A suspended watcher cannot be freed before its wake call, and
 * the (fn, ctx) pairs are copied under the lock, so no watcher memory is read unlocked.
 * Readers copy their batch of events under the lock and read the blobs after unlocking: the
 * watcher borrows the ring segments of the batch (ring_borrow, plain counters under <mu>)
 * until its next call or its detach, so evicting those events meanwhile keeps their blobs.
 * Dispatch index: each STREAM watcher sits in exactly one place, a bucket keyed by its
 * trigger value ('t') or namespace ('n'), or the unscoped list. An event visits the unscoped
 * list and the buckets of its object's namespace and of its object's and previous object's
 * trigger values: the watchers that can match it, not all of them (SEMANTICS 3.6). Each of these
 * dispatch lists also keeps a sleep list (sleep_prev/sleep_next) of exactly its watchers whose
 * <suspended> flag is set, linked where a reader suspends and unlinked wherever the flag is
 * cleared (wakeset_add, detach): an event walks only the sleep lists, never the running readers.
 * Invariant: a suspended STREAM watcher had consumed everything (cursor == head) when it
 * suspended, and every push in its scope after that wakes it. So while it stays suspended,
 * every event past its cursor is out of its scope: when it is woken its cursor may jump to the
 * waking event (or to head for a timer or a sweep), and a suspended watcher is never a laggard.
 */
#include "cache/resource.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/blob.h"
#include "cache/bug.h"
#include "cache/ring.h"
#include "cache/snapshot.h"
#include "cache/store.h"

/* A dispatch bucket: the STREAM watchers with one trigger value or one namespace. */
struct wbucket {
    char type; /* 't' trigger value, 'n' namespace */
    char *val;
    uint64_t hash;
    struct watcher *head;     /* linked through bprev/bnext */
    struct watcher *sleeping; /* those of them suspended, through sleep_prev/sleep_next */
    struct wbucket *hnext;    /* hash chain */
};

/*
 * Checkpoints, for the state at an older rv (Exact, legacy exact, continue tokens): a frozen
 * store fork of the state just before each event whose seq is a multiple of CKPT_EVERY, for
 * every such seq still in the ring ([tail, head)). The state before any seq q in the window
 * is then the checkpoint at or below q with the events up to q replayed forward, or the
 * checkpoint above q (or the live store, at head) with the events down to q undone: at most
 * CKPT_EVERY/2 persistent puts/dels, O(CKPT_EVERY log n), and the result shares every node
 * it did not touch. Memory: a fork costs nothing until the writer diverges from it; each
 * checkpoint then keeps the nodes the next CKPT_EVERY events replaced, at most CKPT_EVERY
 * paths of the tree (~CKPT_EVERY * (log2(n / CKPT_EVERY) + 2) nodes of 40 bytes), so the
 * history costs about 40 * (log2(n / CKPT_EVERY) + 2) bytes of tree per event on top of its
 * blobs (~500 B per event at 100k objects), freed as events leave the window.
 */
#define CKPT_EVERY 64

struct ckpt {
    uint64_t seq;     /* the state before the event at seq: after every event below it */
    struct store *st; /* a frozen fork, owned */
};

/* A circular array of checkpoints with increasing seqs, consecutive multiples of CKPT_EVERY. */
struct ckpts {
    struct ckpt *v;
    size_t cap;
    size_t first; /* slot of the oldest */
    size_t len;
};

struct resource {
    char *name;                /* immutable */
    const char *trigger_field; /* set once before watchers attach */
    void *user;                /* owner's pointer; set once at startup */
    pthread_mutex_t mu;
    pthread_cond_t fresh; /* broadcast whenever rv moves; CLOCK_MONOTONIC */
    /* ---- everything below is guarded by mu ---- */
    struct store *store;
    struct ring *ring;
    struct snapshot *snap;    /* current state, taken lazily (O(1)); NULL after a change */
    struct ckpts ckpts;       /* the states at every CKPT_EVERY-th ring seq in the window */
    struct watcher *streams;  /* attached STREAM watchers */
    struct watcher *waiters;  /* attached RVWAIT watchers */
    struct watcher *unscoped; /* STREAM watchers without a bucket (bprev/bnext) */
    struct watcher *unscoped_sleeping; /* those of them suspended (sleep_prev/sleep_next) */
    struct wbucket **btab;             /* dispatch buckets, chained; btab_cap is a power of two */
    size_t btab_cap;
    size_t btab_len;
    struct watcher **due; /* min-heap on due_ms: watchers to wake at a time (see tick) */
    size_t due_len;
    size_t due_cap;
    uint64_t rv;      /* current rv (events, progress, relists) */
    uint64_t epoch;   /* bumped by every relist; ends older STREAM watchers */
    bool ready;       /* a relist completed and upstream has not broken since */
    bool closing;     /* resource_close_all ran: no new watchers */
    int64_t since_ms; /* when <ready> last changed */
    uint64_t n_events;
    uint64_t n_relists;
    uint64_t n_relists_kept;
    uint64_t restored_rv; /* highest rv before a relist went backwards (0: none): a watch from
                             an rv above the current one up to this is from the lost history */
    uint64_t n_streams;
    uint64_t n_laggards;

    /* resource_drain_watches ran: STREAM watchers end at drain_seq */
    bool draining;
    uint64_t drain_seq; /* the ring's head when the drain began: what is still handed out */
    uint64_t drain_rv;  /* rv when the drain began: every event up to it is below drain_seq */
};

/* ---- wake-up collection ------------------------------------------------------------------ */

#define WAKESET_LOCAL 16

struct wake_item {
    watchers_wake_fn *fn;
    void *ctx;
};

/* A growable list of wake-ups gathered under the lock and run after it. */
struct wakeset {
    struct wake_item *v;
    size_t len;
    size_t cap;
    struct wake_item local[WAKESET_LOCAL];
};

static void wakeset_init(struct wakeset *ws)
{
    ws->v = ws->local;
    ws->len = 0;
    ws->cap = WAKESET_LOCAL;
}

/* Takes <w> off the sleep list it is on, if any. */
static void sleep_del(struct watcher *w)
{
    if (w->sleep_head == NULL) {
        return;
    }
    if (w->sleep_prev != NULL) {
        w->sleep_prev->sleep_next = w->sleep_next;
    } else {
        *w->sleep_head = w->sleep_next;
    }
    if (w->sleep_next != NULL) {
        w->sleep_next->sleep_prev = w->sleep_prev;
    }
    w->sleep_prev = w->sleep_next = NULL;
    w->sleep_head = NULL;
}

/* Under the lock: takes ownership of <w>'s wake-up by clearing its suspended flag (and so
 * takes it off its sleep list). */
static void wakeset_add(struct wakeset *ws, struct watcher *w)
{
    w->suspended = false;
    sleep_del(w);
    if (ws->len == ws->cap) {
        struct wake_item *v = xmalloc(ws->cap * 2 * sizeof(*v));

        memcpy(v, ws->v, ws->len * sizeof(*v));
        if (ws->v != ws->local) {
            free(ws->v);
        }
        ws->v = v;
        ws->cap *= 2;
    }
    ws->v[ws->len].fn = w->wake;
    ws->v[ws->len].ctx = w->wake_ctx;
    ws->len++;
}

/* After unlocking: calls every collected wake function; returns how many. */
static size_t wakeset_run(struct wakeset *ws)
{
    size_t n = ws->len;

    for (size_t i = 0; i < n; i++) {
        if (ws->v[i].fn != NULL) {
            ws->v[i].fn(ws->v[i].ctx);
        }
    }
    if (ws->v != ws->local) {
        free(ws->v);
    }
    wakeset_init(ws);
    return n;
}

/* ---- small helpers (all under mu) --------------------------------------------------------- */

static void lock(struct resource *res)
{
    int rc = pthread_mutex_lock(&res->mu);

    BUG_ON(rc != 0);
}

static void unlock(struct resource *res)
{
    int rc = pthread_mutex_unlock(&res->mu);

    BUG_ON(rc != 0);
}

static void list_add(struct watcher **head, struct watcher *w)
{
    w->prev = NULL;
    w->next = *head;
    if (*head != NULL) {
        (*head)->prev = w;
    }
    *head = w;
}

static void list_del(struct watcher **head, struct watcher *w)
{
    if (w->prev != NULL) {
        w->prev->next = w->next;
    } else {
        *head = w->next;
    }
    if (w->next != NULL) {
        w->next->prev = w->prev;
    }
    w->prev = NULL;
    w->next = NULL;
}

static uint64_t bucket_hash(char type, const char *val)
{
    uint64_t h = 1469598103934665603ull ^ (unsigned char)type;

    h *= 1099511628211ull;
    for (const unsigned char *p = (const unsigned char *)val; *p; p++) {
        h ^= *p;
        h *= 1099511628211ull;
    }
    return h;
}

static struct wbucket *bucket_find(const struct resource *res, char type, const char *val)
{
    uint64_t h;

    if (res->btab_cap == 0) {
        return NULL;
    }
    h = bucket_hash(type, val);
    for (struct wbucket *b = res->btab[h & (res->btab_cap - 1)]; b != NULL; b = b->hnext) {
        if (b->hash == h && b->type == type && strcmp(b->val, val) == 0) {
            return b;
        }
    }
    return NULL;
}

static void btab_grow(struct resource *res)
{
    size_t cap = res->btab_cap ? res->btab_cap * 2 : 64;
    struct wbucket **tab = xcalloc(cap, sizeof(*tab));

    for (size_t i = 0; i < res->btab_cap; i++) {
        struct wbucket *next;
        for (struct wbucket *b = res->btab[i]; b != NULL; b = next) {
            next = b->hnext;
            b->hnext = tab[b->hash & (cap - 1)];
            tab[b->hash & (cap - 1)] = b;
        }
    }
    free(res->btab);
    res->btab = tab;
    res->btab_cap = cap;
}

/* Puts a STREAM watcher in its bucket (creating it) or on the unscoped list. */
static void index_add(struct resource *res, struct watcher *w)
{
    char type = 0;
    const char *val = NULL;
    struct watcher **head = &res->unscoped;

    if (w->trigger != NULL && res->trigger_field != NULL) {
        type = 't';
        val = w->trigger;
    } else if (w->ns != NULL) {
        type = 'n';
        val = w->ns;
    }
    w->bucket = NULL;
    if (type != 0) {
        struct wbucket *b = bucket_find(res, type, val);
        if (b == NULL) {
            if (res->btab_len >= res->btab_cap) {
                btab_grow(res);
            }
            b = xcalloc(1, sizeof(*b));
            b->type = type;
            b->val = xstrdup(val);
            b->hash = bucket_hash(type, val);
            b->hnext = res->btab[b->hash & (res->btab_cap - 1)];
            res->btab[b->hash & (res->btab_cap - 1)] = b;
            res->btab_len++;
        }
        w->bucket = b;
        head = &b->head;
    }
    w->bprev = NULL;
    w->bnext = *head;
    if (*head != NULL) {
        (*head)->bprev = w;
    }
    *head = w;
}

static void index_del(struct resource *res, struct watcher *w)
{
    struct wbucket *b = w->bucket;
    struct watcher **head = b != NULL ? &b->head : &res->unscoped;

    BUG_ON(w->sleep_head != NULL); /* the bucket would keep a link to it */
    if (w->bprev != NULL) {
        w->bprev->bnext = w->bnext;
    } else {
        *head = w->bnext;
    }
    if (w->bnext != NULL) {
        w->bnext->bprev = w->bprev;
    }
    w->bprev = w->bnext = NULL;
    w->bucket = NULL;
    if (b != NULL && b->head == NULL) { /* drop the empty bucket */
        struct wbucket **pp = &res->btab[b->hash & (res->btab_cap - 1)];
        while (*pp != b) {
            pp = &(*pp)->hnext;
        }
        *pp = b->hnext;
        res->btab_len--;
        free(b->val);
        free(b);
    }
}

/* Wakes a suspended STREAM watcher at <seq>: everything between its cursor and <seq> was out
 * of its scope (see the invariant at the top), so the cursor may skip it. */
static void wake_stream(struct wakeset *ws, struct watcher *w, uint64_t seq)
{
    if (w->cursor < seq) {
        w->cursor = seq;
    }
    wakeset_add(ws, w);
}

/*
 * The due heap: every attached watcher with a due time that no tick has found due yet, so a
 * tick pops what is due instead of walking every watcher. A tick marks what it pops
 * <overdue>; a popped watcher that was running, or that was woken and suspends again while
 * its due time stays in the past, goes back in when it suspends (sleep_add), so the next
 * tick wakes it: as before, a suspended watcher whose due time has passed is woken by every
 * tick until its due time moves.
 */
static void due_set(struct resource *res, size_t i, struct watcher *w)
{
    res->due[i] = w;
    w->due_idx = i + 1;
}

static void due_up(struct resource *res, size_t i)
{
    struct watcher *w = res->due[i];

    while (i > 0 && res->due[(i - 1) / 2]->due_ms > w->due_ms) {
        due_set(res, i, res->due[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    due_set(res, i, w);
}

static void due_down(struct resource *res, size_t i)
{
    struct watcher *w = res->due[i];

    for (;;) {
        size_t c = 2 * i + 1;

        if (c >= res->due_len) {
            break;
        }
        if (c + 1 < res->due_len && res->due[c + 1]->due_ms < res->due[c]->due_ms) {
            c++;
        }
        if (w->due_ms <= res->due[c]->due_ms) {
            break;
        }
        due_set(res, i, res->due[c]);
        i = c;
    }
    due_set(res, i, w);
}

static void due_add(struct resource *res, struct watcher *w)
{
    if (res->due_len == res->due_cap) {
        res->due_cap = res->due_cap ? res->due_cap * 2 : 64;
        res->due = xrealloc(res->due, res->due_cap * sizeof(*res->due));
    }
    res->due[res->due_len++] = w;
    due_up(res, res->due_len - 1);
}

static void due_del(struct resource *res, struct watcher *w)
{
    size_t i = w->due_idx - 1;
    struct watcher *last;

    if (w->due_idx == 0) {
        return;
    }
    w->due_idx = 0;
    last = res->due[--res->due_len];
    if (i < res->due_len) {
        due_set(res, i, last);
        due_up(res, i);
        due_down(res, last->due_idx - 1);
    }
}

/* Marks a STREAM watcher suspended and puts it on its dispatch list's sleep list. */
static void sleep_add(struct resource *res, struct watcher *w)
{
    struct wbucket *b = w->bucket;
    struct watcher **head = b != NULL ? &b->sleeping : &res->unscoped_sleeping;

    w->suspended = true;
    if (w->overdue && w->due_idx == 0) { /* due while it ran: the next tick wakes it */
        due_add(res, w);
    }
    if (w->sleep_head != NULL) { /* already there: it suspended again without a wake */
        return;
    }
    w->sleep_prev = NULL;
    w->sleep_next = *head;
    if (*head != NULL) {
        (*head)->sleep_prev = w;
    }
    *head = w;
    w->sleep_head = head;
}

/* Wakes every watcher suspended in one dispatch list for the event at <seq>; each wake takes
 * it off the sleep list, so the list ends empty. */
static void dispatch_list(struct watcher **sleeping, struct wakeset *ws, uint64_t seq)
{
    while (*sleeping != NULL) {
        struct watcher *w = *sleeping;

        BUG_ON(!w->suspended || w->sleep_head != sleeping);
        wake_stream(ws, w, seq);
    }
}

static void dispatch_bucket(struct resource *res, struct wakeset *ws, char type, const char *val,
                            uint64_t seq)
{
    struct wbucket *b = bucket_find(res, type, val);

    if (b != NULL) {
        dispatch_list(&b->sleeping, ws, seq);
    }
}

static const char *trigger_of(const struct resource *res, const struct blob *b)
{
    const char *v = blob_field(b, res->trigger_field);
    return v != NULL ? v : ""; /* an absent field compares as "" (SEMANTICS 7.1) */
}

/*
 * Ends a STREAM watcher whose cursor fell below the tail; counted once, because <closed>
 * short-circuits every later check. The writer never waits for it (DESIGN "Laggards").
 */
static bool check_laggard(struct resource *res, struct watcher *w)
{
    /* A suspended watcher has nothing in scope pending: never a laggard (invariant above). */
    if (!w->closed && !w->suspended && w->cursor < ring_tail(res->ring)) {
        w->closed = true;
        res->n_laggards++;
    }
    return w->closed;
}

/* Wakes the suspended STREAM watchers that have just been ended (laggards, closed). */
static void wake_ended(struct resource *res, struct wakeset *ws)
{
    for (struct watcher *w = res->streams; w != NULL; w = w->next) {
        if (check_laggard(res, w) && w->suspended) {
            wakeset_add(ws, w);
        }
    }
}

/* Wakes the RVWAIT watchers the current rv satisfies. */
static void wake_waiters(struct resource *res, struct wakeset *ws)
{
    for (struct watcher *w = res->waiters; w != NULL; w = w->next) {
        if (w->suspended && res->rv >= w->wait_rv) {
            wakeset_add(ws, w);
        }
    }
}

static void drop_snapshot(struct resource *res)
{
    snapshot_unref(res->snap);
    res->snap = NULL;
}

/*
 * The snapshot of the current state, taken on first use after a change: a store fork, O(1).
 * LISTs and initial-event watches at the same rv share it. Progress does not invalidate it:
 * the state is unchanged, only the rv moved.
 */
static struct snapshot *current_snapshot(struct resource *res)
{
    if (res->snap == NULL) {
        res->snap = snapshot_new(store_fork(res->store), res->rv);
    }
    return res->snap;
}

/* ---- checkpoints (see struct ckpts) ------------------------------------------------------- */

static struct ckpt *ckpt_slot(const struct ckpts *c, size_t i)
{
    return &c->v[(c->first + i) % c->cap];
}

/* Appends the state before the event at <seq> (the live store now). */
static void ckpt_push(struct ckpts *c, uint64_t seq, const struct store *live)
{
    if (c->len == c->cap) {
        size_t cap = c->cap > 0 ? c->cap * 2 : 8;
        struct ckpt *v = xmalloc(cap * sizeof(*v));

        for (size_t i = 0; i < c->len; i++) {
            v[i] = *ckpt_slot(c, i);
        }
        free(c->v);
        c->v = v;
        c->cap = cap;
        c->first = 0;
    }
    BUG_ON(c->len > 0 && ckpt_slot(c, c->len - 1)->seq + CKPT_EVERY != seq);
    ckpt_slot(c, c->len)->seq = seq;
    ckpt_slot(c, c->len)->st = store_fork(live);
    c->len++;
}

/* Drops the checkpoints below <tail>: the events to replay from them are gone. */
static void ckpt_prune(struct ckpts *c, uint64_t tail)
{
    while (c->len > 0 && ckpt_slot(c, 0)->seq < tail) {
        store_free(ckpt_slot(c, 0)->st);
        c->first = (c->first + 1) % c->cap;
        c->len--;
    }
}

static void ckpt_clear(struct ckpts *c)
{
    ckpt_prune(c, UINT64_MAX);
    c->first = 0;
}

/* The checkpoint at exactly <seq>, or NULL. */
static const struct store *ckpt_find(const struct ckpts *c, uint64_t seq)
{
    uint64_t first;

    if (c->len == 0 || seq % CKPT_EVERY != 0) {
        return NULL;
    }
    first = ckpt_slot(c, 0)->seq;
    if (seq < first || (seq - first) / CKPT_EVERY >= c->len) {
        return NULL;
    }
    return ckpt_slot(c, (size_t)((seq - first) / CKPT_EVERY))->st;
}

/* Sets <e>'s key in <st> to the object after the event (forward) or before it (undo). */
static void replay(struct store *st, const struct ring_event *e, bool forward)
{
    struct blob *to;

    BUG_ON(e->obj == NULL);
    to = forward ? (e->type == WATCH_DELETED ? NULL : e->obj) : e->prev;
    if (to != NULL) {
        store_put(st, to, NULL);
    } else {
        store_del(st, e->obj->key, NULL);
    }
}

/*
 * Under mu: the state before the event at <q> (tail <= q < head), from the nearest
 * checkpoint: forward from the one at or below q, or back from the one above it (the live
 * store at head). At most CKPT_EVERY/2 replays; the result is a fresh store the caller owns.
 */
static struct store *state_before(struct resource *res, uint64_t q)
{
    uint64_t head = ring_head(res->ring);
    uint64_t lo = q - q % CKPT_EVERY;
    uint64_t hi = lo + CKPT_EVERY;
    const struct store *from_lo = ckpt_find(&res->ckpts, lo);
    const struct store *from_hi = hi < head ? ckpt_find(&res->ckpts, hi) : res->store;
    struct store *st;

    if (hi >= head) {
        hi = head;
    }
    if (from_lo != NULL && (from_hi == NULL || q - lo <= hi - q)) {
        st = store_fork(from_lo);
        for (uint64_t s = lo; s < q; s++) {
            replay(st, ring_at(res->ring, s), true);
        }
        return st;
    }
    /* Every multiple of CKPT_EVERY in [tail, head) has its checkpoint. */
    BUG_ON(from_hi == NULL);
    st = store_fork(from_hi);
    for (uint64_t s = hi; s > q; s--) {
        replay(st, ring_at(res->ring, s - 1), false);
    }
    return st;
}

/* Initialises every private field: callers only set the public ones. */
static void attach(struct resource *res, struct watcher *w, enum watcher_kind kind)
{
    BUG_ON(w->attached);
    w->kind = kind;
    w->cursor = 0;
    w->epoch = res->epoch;
    w->wait_rv = 0;
    w->from_rv = 0;
    w->due_ms = 0;
    w->attached = true;
    w->suspended = false;
    w->closed = false;
    w->sleep_prev = w->sleep_next = NULL;
    w->sleep_head = NULL;
    w->n_held = 0;
    w->due_idx = 0;
    w->overdue = false;
    if (kind == WATCHER_STREAM) {
        list_add(&res->streams, w);
        index_add(res, w);
        res->n_streams++;
    } else {
        list_add(&res->waiters, w);
    }
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

struct resource *resource_new(const char *name, const struct ring_opts *ring_opts)
{
    struct resource *res = xcalloc(1, sizeof(*res));
    pthread_condattr_t attr;

    res->name = xstrdup(name != NULL ? name : "");
    BUG_ON(pthread_mutex_init(&res->mu, NULL) != 0);
    BUG_ON(pthread_condattr_init(&attr) != 0);
    /* Freshness deadlines must not jump with the wall clock. */
    BUG_ON(pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0);
    BUG_ON(pthread_cond_init(&res->fresh, &attr) != 0);
    pthread_condattr_destroy(&attr);
    res->store = store_new();
    res->ring = ring_new(ring_opts);
    return res;
}

void resource_free(struct resource *res)
{
    if (res == NULL) {
        return;
    }
    /* A watcher still attached would point into freed memory. */
    BUG_ON(res->streams != NULL || res->waiters != NULL || res->unscoped_sleeping != NULL);
    BUG_ON(res->btab_len != 0); /* empty buckets are freed at detach */
    BUG_ON(res->due_len != 0);
    free(res->btab);
    free(res->due);
    snapshot_unref(res->snap);
    ckpt_clear(&res->ckpts);
    free(res->ckpts.v);
    ring_free(res->ring);
    store_free(res->store);
    pthread_cond_destroy(&res->fresh);
    pthread_mutex_destroy(&res->mu);
    free(res->name);
    free(res);
}

const char *resource_name(const struct resource *res)
{
    return res->name;
}

void resource_set_trigger(struct resource *res, const char *field)
{
    lock(res);
    BUG_ON(res->streams != NULL); /* the index is built at attach */
    res->trigger_field = field;
    unlock(res);
}

void resource_set_user(struct resource *res, void *user)
{
    res->user = user;
}

void *resource_user(const struct resource *res)
{
    return res->user;
}

/* ---- writers ------------------------------------------------------------------------------ */

int resource_replace(struct resource *res, struct blob *const *items, size_t n, uint64_t list_rv,
                     int64_t now_ms)
{
    struct wakeset ws;

    wakeset_init(&ws);
    lock(res);
    if (list_rv < res->rv && res->rv > res->restored_rv) {
        res->restored_rv = res->rv; /* upstream went backwards (restored from a backup) */
    }
    store_clear(res->store);
    for (size_t i = 0; i < n; i++) {
        store_put(res->store, items[i], NULL);
    }
    /* The history restarts at list_rv: watches from below it now get 410 (SEMANTICS 2.12). */
    ring_reset(res->ring, list_rv);
    ckpt_clear(&res->ckpts);
    res->rv = list_rv;
    if (!res->ready) {
        res->since_ms = now_ms;
    }
    res->ready = true;
    res->epoch++;
    res->n_relists++;
    drop_snapshot(res);
    pthread_cond_broadcast(&res->fresh);
    /* Every stream predates the new epoch: end them all, cleanly (not laggards). */
    for (struct watcher *w = res->streams; w != NULL; w = w->next) {
        w->closed = true;
        if (w->suspended) {
            wakeset_add(&ws, w);
        }
    }
    wake_waiters(res, &ws);
    unlock(res);
    wakeset_run(&ws);
    return 0;
}

static int key_cmp(const void *a, const void *b)
{
    return strcmp((*(struct blob *const *)a)->key, (*(struct blob *const *)b)->key);
}

/* Whether <sorted> (n blobs sorted by key) has two blobs with one key. */
static bool keys_repeat(struct blob *const *sorted, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        if (strcmp(sorted[i - 1]->key, sorted[i]->key) == 0) {
            return true;
        }
    }
    return false;
}

/* Under mu: whether the store holds exactly <items> (distinct keys): the same keys, each at
 * the same rv. Same key and rv is the same object version (an rv is one write). */
static bool store_equals(const struct resource *res, struct blob *const *items, size_t n)
{
    if (store_len(res->store) != n) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        const struct blob *cur = store_get(res->store, items[i]->key);

        if (cur == NULL || cur->rv != items[i]->rv) {
            return false;
        }
    }
    return true;
}

int resource_relist(struct resource *res, struct blob *const *items, size_t n, uint64_t list_rv,
                    int64_t now_ms)
{
    struct blob **sorted = NULL;
    struct wakeset ws;
    bool same;

    /* Distinct keys first, outside the lock: n equal lookups with a repeated key would let
     * a list that misses an object pass for the same state. */
    if (n > 0) {
        sorted = xmalloc(n * sizeof(*sorted));
        memcpy(sorted, items, n * sizeof(*sorted));
        qsort(sorted, n, sizeof(*sorted), key_cmp);
    }
    same = !keys_repeat(sorted, n);
    free(sorted);
    wakeset_init(&ws);
    lock(res);
    same = same && res->n_relists > 0 && !res->closing && list_rv >= res->rv &&
           store_equals(res, items, n);
    if (!same) {
        unlock(res);
        return resource_replace(res, items, n, list_rv, now_ms);
    }
    /* Nothing happened to this resource between its rv and list_rv: the history is whole
     * up to list_rv, so every watcher and every rv in the window stays valid. */
    if (list_rv > res->rv) {
        res->rv = list_rv;
        pthread_cond_broadcast(&res->fresh);
    }
    if (!res->ready) {
        res->since_ms = now_ms;
    }
    res->ready = true;
    res->n_relists_kept++;
    wake_waiters(res, &ws);
    unlock(res);
    wakeset_run(&ws);
    return 1;
}

int resource_apply(struct resource *res, enum watch_type type, struct blob *obj, uint64_t rv,
                   int64_t now_ms)
{
    struct wakeset ws;
    struct blob *prev = NULL;
    uint64_t seq;
    int rc;

    if (obj == NULL || (type != WATCH_ADDED && type != WATCH_MODIFIED && type != WATCH_DELETED)) {
        return -EINVAL;
    }
    wakeset_init(&ws);
    lock(res);
    /* Validate before touching the store: past this point nothing may fail half-way. */
    if (rv <= res->rv) {
        unlock(res);
        return -EINVAL;
    }
    seq = ring_head(res->ring);
    if (seq % CKPT_EVERY == 0) {
        ckpt_push(&res->ckpts, seq, res->store);
    }
    if (type == WATCH_DELETED) {
        store_del(res->store, obj->key, &prev);
    } else {
        store_put(res->store, obj, &prev);
        if (type == WATCH_MODIFIED && prev == NULL) {
            type = WATCH_ADDED;
        }
    }
    /* The ring's last rv never exceeds res->rv, so this push cannot be refused. */
    rc = ring_push(res->ring, type, obj, prev, rv, now_ms);
    BUG_ON(rc != 0);
    ckpt_prune(&res->ckpts, ring_tail(res->ring));
    res->rv = rv;
    res->n_events++;
    drop_snapshot(res);
    pthread_cond_broadcast(&res->fresh);

    /*
     * Only the watchers that can match: running readers need nothing (they call
     * resource_watch_next again); suspended ones in scope are woken at this event.
     */
    dispatch_list(&res->unscoped_sleeping, &ws, seq);
    if (res->btab_len > 0) {
        dispatch_bucket(res, &ws, 'n', obj->ns, seq);
        if (res->trigger_field != NULL) {
            const char *t = trigger_of(res, obj);
            dispatch_bucket(res, &ws, 't', t, seq);
            if (prev != NULL && strcmp(trigger_of(res, prev), t) != 0) {
                dispatch_bucket(res, &ws, 't', trigger_of(res, prev), seq);
            }
        }
    }
    blob_unref(prev);
    wake_waiters(res, &ws);
    unlock(res);
    wakeset_run(&ws);
    return 0;
}

void resource_progress(struct resource *res, uint64_t rv)
{
    struct wakeset ws;

    wakeset_init(&ws);
    lock(res);
    if (rv > res->rv) {
        res->rv = rv;
        pthread_cond_broadcast(&res->fresh);
        wake_waiters(res, &ws);
    }
    unlock(res);
    wakeset_run(&ws);
}

/* Watchers keep streaming what they have: the next resource_replace ends them. */
void resource_set_unready(struct resource *res, int64_t now_ms)
{
    lock(res);
    /* Keep the start of the outage if it was already unready. */
    if (res->ready) {
        res->ready = false;
        res->since_ms = now_ms;
    }
    unlock(res);
}

/* Only watchers that had undelivered events below the new tail are ended; a caught-up
 * watcher lost nothing and keeps going. */
void resource_compact(struct resource *res, uint64_t rv)
{
    struct wakeset ws;

    wakeset_init(&ws);
    lock(res);
    if (ring_compact(res->ring, rv) > 0) {
        ckpt_prune(&res->ckpts, ring_tail(res->ring));
        wake_ended(res, &ws);
    }
    unlock(res);
    wakeset_run(&ws);
}

void resource_close_all(struct resource *res)
{
    struct wakeset ws;
    struct watcher *lists[2];

    wakeset_init(&ws);
    lock(res);
    res->closing = true;
    lists[0] = res->streams;
    lists[1] = res->waiters;
    for (size_t i = 0; i < 2; i++) {
        for (struct watcher *w = lists[i]; w != NULL; w = w->next) {
            w->closed = true;
            if (w->suspended) {
                wakeset_add(&ws, w);
            }
        }
    }
    unlock(res);
    wakeset_run(&ws);
}

void resource_drain_watches(struct resource *res)
{
    struct wakeset ws;

    wakeset_init(&ws);
    lock(res);
    if (!res->draining) {
        res->draining = true;
        res->drain_seq = ring_head(res->ring);
        res->drain_rv = res->rv;
    }
    /* A suspended STREAM watcher has nothing in its scope pending (see tick_wake): woken at
     * the head, its next call finds nothing more and gets -ESHUTDOWN. */
    for (struct watcher *w = res->streams; w != NULL; w = w->next) {
        if (w->suspended) {
            wake_stream(&ws, w, ring_head(res->ring));
        }
    }
    unlock(res);
    wakeset_run(&ws);
}

void resource_end_watches(struct resource *res)
{
    struct wakeset ws;

    wakeset_init(&ws);
    lock(res);
    for (struct watcher *w = res->streams; w != NULL; w = w->next) {
        w->closed = true;
        if (w->suspended) {
            w->suspended = false;
            wakeset_add(&ws, w);
        }
    }
    unlock(res);
    wakeset_run(&ws);
}

/* ---- readers ------------------------------------------------------------------------------ */

uint64_t resource_rv(struct resource *res)
{
    uint64_t rv;

    lock(res);
    rv = res->rv;
    unlock(res);
    return rv;
}

bool resource_is_ready(struct resource *res, int64_t *since_ms)
{
    bool ready;

    lock(res);
    ready = res->ready;
    if (since_ms != NULL) {
        *since_ms = res->since_ms;
    }
    unlock(res);
    return ready;
}

void resource_stats(struct resource *res, struct resource_stats *out)
{
    lock(res);
    out->rv = res->rv;
    out->events = res->n_events;
    out->relists = res->n_relists;
    out->relists_kept = res->n_relists_kept;
    out->watchers = res->n_streams;
    out->laggards = res->n_laggards;
    out->objects = store_len(res->store);
    out->object_bytes = store_bytes(res->store);
    out->history_len = ring_len(res->ring);
    out->history_cap = ring_cap(res->ring);
    out->history_boundary = ring_boundary(res->ring);
    out->history_oldest_ms = 0;
    out->history_oldest_rv = 0;
    out->history_newest_rv = 0;
    if (ring_len(res->ring) > 0) {
        const struct ring_event *o = ring_at(res->ring, ring_tail(res->ring));

        out->history_oldest_ms = o->t_ms;
        out->history_oldest_rv = o->rv;
        out->history_newest_rv = ring_at(res->ring, ring_head(res->ring) - 1)->rv;
    }
    out->ready = res->ready;
    unlock(res);
}

struct blob *resource_get(struct resource *res, const char *key)
{
    struct blob *b;

    lock(res);
    b = blob_ref(store_get(res->store, key));
    unlock(res);
    return b;
}

struct snapshot *resource_snapshot(struct resource *res, uint64_t *rv)
{
    struct snapshot *s;

    lock(res);
    s = snapshot_ref(current_snapshot(res));
    if (rv != NULL) {
        *rv = res->rv;
    }
    unlock(res);
    return s;
}

/* Under mu: resource_snapshot_at's work. */
static int snapshot_at_locked(struct resource *res, uint64_t rv, struct snapshot **out)
{
    struct snapshot *cur;
    uint64_t seq;
    int rc;

    if (rv > res->rv) {
        return -EAGAIN;
    }
    rc = ring_seek(res->ring, rv, &seq, NULL);
    if (rc != 0) {
        return rc;
    }
    if (seq < ring_head(res->ring)) {
        *out = snapshot_new(state_before(res, seq), rv);
        return 0;
    }
    /* Nothing changed after rv: the current state, relabelled if progress moved the rv. */
    cur = current_snapshot(res);
    *out = cur->rv == rv ? snapshot_ref(cur) : snapshot_new(store_fork(res->store), rv);
    return 0;
}

/* Cost under the lock: O(CKPT_EVERY log n) when events newer than rv exist, else O(1). */
int resource_snapshot_at(struct resource *res, uint64_t rv, struct snapshot **out)
{
    int rc;

    lock(res);
    rc = snapshot_at_locked(res, rv, out);
    unlock(res);
    return rc;
}

int resource_export(struct resource *res, struct resource_export *out)
{
    uint64_t tail, head;
    int rc;

    memset(out, 0, sizeof(*out));
    lock(res);
    if (!res->ready) {
        unlock(res);
        return -EAGAIN;
    }
    out->boundary = ring_boundary(res->ring);
    out->rv = res->rv;
    /* The boundary is always a state the history can rebuild (ring_seek accepts it). */
    rc = snapshot_at_locked(res, out->boundary, &out->base);
    BUG_ON(rc != 0);
    tail = ring_tail(res->ring);
    head = ring_head(res->ring);
    out->n_events = (size_t)(head - tail);
    out->events = xmalloc((out->n_events > 0 ? out->n_events : 1) * sizeof(*out->events));
    for (uint64_t s = tail; s < head; s++) {
        struct ring_event *e = &out->events[s - tail];

        *e = *ring_at(res->ring, s);
        e->obj = blob_ref(e->obj);
        e->prev = NULL;
        e->aux = NULL;
    }
    unlock(res);
    return 0;
}

void resource_export_fini(struct resource_export *x)
{
    if (x == NULL) {
        return;
    }
    for (size_t i = 0; i < x->n_events; i++) {
        blob_unref(x->events[i].obj);
    }
    free(x->events);
    snapshot_unref(x->base);
    memset(x, 0, sizeof(*x));
}

int resource_wait_fresh(struct resource *res, uint64_t rv, int64_t timeout_ms, uint64_t *cur)
{
    struct timespec deadline;
    bool ok;

    /* Absolute deadline on the condvar's clock (CLOCK_MONOTONIC, set in resource_new), so
     * spurious wake-ups and partial progress do not extend the total wait. */
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    if (timeout_ms > 0) {
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
    }
    lock(res);
    /* Loop: wake-ups may be spurious or for an rv still below the target. */
    while (res->rv < rv && timeout_ms > 0) {
        int rc = pthread_cond_timedwait(&res->fresh, &res->mu, &deadline);

        if (rc == ETIMEDOUT) {
            break;
        }
        BUG_ON(rc != 0);
    }
    ok = res->rv >= rv;
    if (cur != NULL) {
        *cur = res->rv;
    }
    unlock(res);
    return ok ? 0 : -ETIMEDOUT;
}

/* ---- watchers ----------------------------------------------------------------------------- */

int resource_watch_from(struct resource *res, struct watcher *w, uint64_t from_rv,
                        uint64_t *boundary)
{
    return resource_watch_replay(res, w, from_rv, boundary, NULL);
}

int resource_watch_replay(struct resource *res, struct watcher *w, uint64_t from_rv,
                          uint64_t *boundary, uint64_t *replay_rv)
{
    uint64_t seq;
    int rc = -EAGAIN;

    lock(res);
    if (!res->ready || res->closing) {
        goto out;
    }
    rc = ring_seek(res->ring, from_rv, &seq, boundary);
    if (rc != 0) {
        goto out;
    }
    if (from_rv > res->rv && from_rv <= res->restored_rv) {
        /* An rv of the history lost when upstream went backwards: waiting for upstream to
         * pass it would skip every change until then; 410 makes the client relist. */
        if (boundary != NULL) {
            *boundary = ring_boundary(res->ring);
        }
        rc = -ESTALE;
        goto out;
    }
    /* from_rv may be ahead of the cache (silent until newer events, SEMANTICS 3.3): the
     * cursor starts at head and watch_next skips events that are not newer than from_rv. */
    attach(res, w, WATCHER_STREAM);
    w->cursor = seq;
    w->from_rv = from_rv;
    if (replay_rv != NULL) {
        const struct ring_event *last = ring_at(res->ring, ring_head(res->ring) - 1);

        *replay_rv = last != NULL && last->rv > from_rv ? last->rv : from_rv;
    }
out:
    unlock(res);
    return rc;
}

bool resource_history_whole(struct resource *res)
{
    bool whole;

    lock(res);
    /* Only the history that began at the first list: after a relist that reset it, the
     * upstream itself has compacted past what was lost, and a 410 here spares it N watches
     * that would each get its own 410. */
    whole = res->n_relists == 1 && ring_whole(res->ring);
    unlock(res);
    return whole;
}

int resource_watch_now(struct resource *res, struct watcher *w, struct snapshot **initial,
                       uint64_t *rv)
{
    int rc = -EAGAIN;

    lock(res);
    if (!res->ready || res->closing) {
        goto out;
    }
    /* Cursor and snapshot taken in one critical section: no event falls between them. */
    attach(res, w, WATCHER_STREAM);
    w->cursor = ring_head(res->ring);
    w->from_rv = res->rv;
    if (initial != NULL) {
        *initial = snapshot_ref(current_snapshot(res));
    }
    if (rv != NULL) {
        *rv = res->rv;
    }
    rc = 0;
out:
    unlock(res);
    return rc;
}

int resource_wait_rv(struct resource *res, struct watcher *w, uint64_t rv, int64_t due_ms)
{
    int rc = 0;

    lock(res);
    /* After close_all nobody would wake it: report "go on" and let the caller re-read rv. */
    if (res->rv < rv && !res->closing) {
        attach(res, w, WATCHER_RVWAIT);
        w->wait_rv = rv;
        w->due_ms = due_ms;
        w->suspended = true;
        if (due_ms != 0) {
            due_add(res, w);
        }
        rc = -EAGAIN;
    }
    unlock(res);
    return rc;
}

static ssize_t watch_next(struct resource *res, struct watcher *w, struct ring_event *out,
                          size_t max, bool may_suspend);

ssize_t resource_watch_next(struct resource *res, struct watcher *w, struct ring_event *out,
                            size_t max)
{
    return watch_next(res, w, out, max, true);
}

ssize_t resource_watch_take(struct resource *res, struct watcher *w, struct ring_event *out,
                            size_t max)
{
    return watch_next(res, w, out, max, false);
}

/* Gives back the ring segments the watcher's last batch borrowed: its events are done. */
static void return_held(struct resource *res, struct watcher *w)
{
    for (size_t i = 0; i < w->n_held; i++) {
        ring_return(res->ring, w->held[i]);
        w->held[i] = NULL;
    }
    w->n_held = 0;
}

static ssize_t watch_next(struct resource *res, struct watcher *w, struct ring_event *out,
                          size_t max, bool may_suspend)
{
    ssize_t n = 0;
    uint64_t head;

    lock(res);
    return_held(res, w);
    if (!w->attached || w->kind != WATCHER_STREAM || w->closed) {
        n = -EPIPE;
        goto out;
    }
    /* Epoch first: after a relist every old cursor is below the tail, but those watchers
     * were ended cleanly and must not count as laggards. */
    if (w->epoch != res->epoch) {
        w->closed = true;
        n = -EPIPE;
        goto out;
    }
    if (check_laggard(res, w)) {
        n = -EPIPE;
        goto out;
    }
    head = ring_head(res->ring);
    BUG_ON(w->cursor > head);
    if (res->draining && head > res->drain_seq) {
        head = res->drain_seq; /* later events are the next replica's to deliver */
    }
    while (w->cursor < head && (size_t)n < max) {
        const struct ring_event *e = ring_at(res->ring, w->cursor);

        if (e->rv <= w->from_rv) {
            w->cursor++;
            continue;
        }
        /* The events handed out are consecutive: borrow each segment they enter, rather
         * than a reference on each blob (shared cache lines, from every worker thread). */
        if (w->n_held == 0 || w->cursor % RING_SEG == 0) {
            if (w->n_held == WATCHER_HELD_MAX) {
                break;
            }
            w->held[w->n_held++] = ring_borrow(res->ring, w->cursor);
        }
        out[n++] = *e;
        w->cursor++;
    }
    /* Set under the same lock the writers test it under, so an event appended after this
     * unlock always finds the flag set and wakes us: no lost wake-up. */
    if (n == 0 && max > 0 && may_suspend) {
        if (res->draining && w->cursor >= head) {
            n = -ESHUTDOWN; /* caught up: the reader ends its stream rather than wait */
        } else {
            sleep_add(res, w);
        }
    }
out:
    unlock(res);
    return n;
}

bool resource_watch_idle_rv(struct resource *res, struct watcher *w, uint64_t *rv)
{
    uint64_t end;
    bool idle;

    lock(res);
    end = res->draining ? res->drain_seq : ring_head(res->ring);
    idle = w->attached && w->kind == WATCHER_STREAM && w->cursor >= end;
    if (idle) {
        *rv = res->draining ? res->drain_rv : res->rv;
    }
    unlock(res);
    return idle;
}

bool resource_watch_oldest_ms(struct resource *res, struct watcher *w, int64_t *t_ms)
{
    bool waits = false;

    lock(res);
    if (w->attached && w->kind == WATCHER_STREAM && !w->closed) {
        uint64_t head = ring_head(res->ring);
        uint64_t c = w->cursor;

        if (c < ring_tail(res->ring)) {
            *t_ms = INT64_MIN;
            waits = true;
        }
        for (; !waits && c < head; c++) {
            const struct ring_event *e = ring_at(res->ring, c);
            if (e->rv > w->from_rv) {
                *t_ms = e->t_ms;
                waits = true;
            }
        }
    }
    unlock(res);
    return waits;
}

void resource_watch_set_due(struct resource *res, struct watcher *w, int64_t due_ms)
{
    lock(res);
    if (w->attached) {
        due_del(res, w);
        w->overdue = false;
    }
    w->due_ms = due_ms;
    if (w->attached && due_ms != 0) {
        due_add(res, w);
    }
    unlock(res);
}

void resource_watch_detach(struct resource *res, struct watcher *w)
{
    lock(res);
    if (w->attached) {
        return_held(res, w);
        due_del(res, w);
        sleep_del(w);
        if (w->kind == WATCHER_STREAM) {
            list_del(&res->streams, w);
            index_del(res, w);
            res->n_streams--;
        } else {
            list_del(&res->waiters, w);
        }
        w->attached = false;
        w->suspended = false;
    }
    unlock(res);
}

enum watch_end resource_watch_end_reason(struct resource *res, const struct watcher *w)
{
    enum watch_end why = WATCH_END_CLOSED;

    lock(res);
    if (res->closing) {
        why = WATCH_END_SHUTDOWN;
    } else if (w->epoch != res->epoch) {
        why = WATCH_END_RELIST;
    } else if (w->cursor < ring_tail(res->ring)) {
        why = WATCH_END_EXPIRED;
    }
    unlock(res);
    return why;
}

/* Kill, tick and close only flag and wake: the reader sees -EPIPE on its next call and its
 * completion path detaches, so there is one teardown path (STYLE, Ownership 5). */

void resource_watch_kill(struct resource *res, struct watcher *w)
{
    struct wakeset ws;

    wakeset_init(&ws);
    lock(res);
    if (w->attached) {
        w->closed = true;
        if (w->suspended) {
            wakeset_add(&ws, w);
        }
    }
    unlock(res);
    wakeset_run(&ws);
}

/* Tick helper: wakes a suspended watcher, STREAM ones at the head (nothing in their scope
 * is pending: see the invariant at the top). */
static void tick_wake(struct resource *res, struct wakeset *ws, struct watcher *w)
{
    if (w->kind == WATCHER_STREAM) {
        wake_stream(ws, w, ring_head(res->ring));
    } else {
        wakeset_add(ws, w);
    }
}

/* Tick helper: asks <dead> about each suspended watcher of a list linked through <next> or
 * <sleep_next>; those it names are closed and woken (which unlinks them from sleep lists). */
static void tick_sweep(struct resource *res, struct wakeset *ws, struct watcher *w, bool sleep,
                       bool (*dead)(struct watcher *w, void *ctx), void *ctx)
{
    while (w != NULL) {
        struct watcher *next = sleep ? w->sleep_next : w->next;

        if (w->suspended && dead(w, ctx)) {
            w->closed = true;
            tick_wake(res, ws, w);
        }
        w = next;
    }
}

size_t resource_tick(struct resource *res, int64_t now_ms,
                     bool (*dead)(struct watcher *w, void *ctx), void *ctx)
{
    struct wakeset ws;

    wakeset_init(&ws);
    lock(res);
    while (res->due_len > 0 && res->due[0]->due_ms <= now_ms) {
        struct watcher *w = res->due[0];

        due_del(res, w);
        w->overdue = true;
        /* A due watcher is woken anyway; its write attempt will find a dead peer. A running
         * one goes back in the heap when it suspends (sleep_add). */
        if (w->suspended) {
            tick_wake(res, &ws, w);
        }
    }
    if (dead != NULL) {
        /* Only suspended watchers: the sleep lists and the RV waiters. */
        tick_sweep(res, &ws, res->unscoped_sleeping, true, dead, ctx);
        for (size_t i = 0; i < res->btab_cap; i++) {
            for (struct wbucket *b = res->btab[i]; b != NULL; b = b->hnext) {
                tick_sweep(res, &ws, b->sleeping, true, dead, ctx);
            }
        }
        tick_sweep(res, &ws, res->waiters, false, dead, ctx);
    }
    unlock(res);
    return wakeset_run(&ws);
}

size_t resource_sweep_running(struct resource *res,
                              bool (*lagging)(struct watcher *w, int64_t t_ms, void *ctx),
                              void *ctx)
{
    size_t n = 0;

    lock(res);
    for (struct watcher *w = res->streams; w != NULL; w = w->next) {
        uint64_t c = w->cursor;
        int64_t t_ms = 0;

        /* Suspended: nothing was pending when it stopped (or a wake-up is on its way). */
        if (w->suspended) {
            continue;
        }
        if (!w->closed) {
            if (c >= ring_head(res->ring)) {
                continue;
            }
            if (c < ring_tail(res->ring)) {
                t_ms = INT64_MIN; /* its next event has already left the history */
            } else {
                const struct ring_event *e = ring_at(res->ring, c);
                if (e->rv <= w->from_rv) {
                    continue; /* a watch from a future rv skips it: not an event it waits for */
                }
                t_ms = e->t_ms;
            }
        }
        if (lagging(w, t_ms, ctx) && !w->closed) {
            w->closed = true;
            n++;
        }
    }
    unlock(res);
    return n;
}

/* ---- lag report ------------------------------------------------------------------------ */

/* Under the lock: what <w> has yet to be sent (see struct watcher_lag). */
static struct watcher_lag lag_of(struct resource *res, const struct watcher *w, int64_t now_ms)
{
    struct watcher_lag l = {0, 0};
    uint64_t head = ring_head(res->ring);
    uint64_t tail = ring_tail(res->ring);
    uint64_t c = w->cursor;
    uint64_t s;

    /* Suspended: nothing in its scope was pending when it stopped (the invariant above). */
    if (w->suspended || c >= head) {
        return l;
    }
    /* A watch from a future rv skips the events up to it: they are not pending. */
    if (c >= tail && ring_at(res->ring, c)->rv <= w->from_rv &&
        ring_seek(res->ring, w->from_rv, &s, NULL) == 0 && s > c) {
        c = s;
        if (c >= head) {
            return l;
        }
    }
    l.events = head - c;
    if (c < tail) {
        c = tail; /* its next event has left the history: the oldest held bounds the age */
    }
    if (c < head && now_ms > ring_at(res->ring, c)->t_ms) {
        l.age_ms = now_ms - ring_at(res->ring, c)->t_ms;
    }
    return l;
}

/* Orders lags: more events first, then older. */
static bool lag_less(const struct watcher_lag *a, const struct watcher_lag *b)
{
    return a->events != b->events ? a->events < b->events : a->age_ms < b->age_ms;
}

/* The <n> entries of <h> are a min-heap under lag_less; sifts entry <i> down. */
static void lag_sift_down(struct watcher_lag *h, size_t n, size_t i)
{
    for (;;) {
        size_t m = i;
        size_t l = 2 * i + 1;
        size_t r = l + 1;
        struct watcher_lag t;

        if (l < n && lag_less(&h[l], &h[m])) {
            m = l;
        }
        if (r < n && lag_less(&h[r], &h[m])) {
            m = r;
        }
        if (m == i) {
            return;
        }
        t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static void lag_sift_up(struct watcher_lag *h, size_t i)
{
    while (i > 0 && lag_less(&h[i], &h[(i - 1) / 2])) {
        struct watcher_lag t = h[i];

        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

void resource_watcher_lags(struct resource *res, int64_t now_ms, struct watcher_lag *out,
                           size_t max, struct watcher_lags *sum)
{
    size_t n = 0;

    memset(sum, 0, sizeof(*sum));
    lock(res);
    for (const struct watcher *w = res->streams; w != NULL; w = w->next) {
        struct watcher_lag l = lag_of(res, w, now_ms);

        sum->count++;
        if (l.events > sum->max_events) {
            sum->max_events = l.events;
        }
        if (l.age_ms > sum->max_age_ms) {
            sum->max_age_ms = l.age_ms;
        }
        /* Keep the <max> largest: a min-heap whose root is the smallest kept. */
        if (n < max) {
            out[n] = l;
            lag_sift_up(out, n);
            n++;
        } else if (max > 0 && lag_less(&out[0], &l)) {
            out[0] = l;
            lag_sift_down(out, n, 0);
        }
    }
    unlock(res);
    /* Heap to largest-first order, in place (heapsort on the min-heap). */
    for (size_t k = n; k > 1; k--) {
        struct watcher_lag t = out[0];

        out[0] = out[k - 1];
        out[k - 1] = t;
        lag_sift_down(out, k - 1, 0);
    }
    sum->n = n;
}
