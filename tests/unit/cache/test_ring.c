/*
 * test_ring.c - the event history: seqs and slots, the "too old" boundary exactly as
 * SEMANTICS 2.4/3.3 state it (eviction, reset, compaction), binary-search seek, and
 * kube-apiserver's capacity rule (double under fresh events, halve when old).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache/blob.h"
#include "cache/ring.h"

static struct blob *obj;

static void setup(void)
{
    obj = blob_new("{}", 2, &(struct blob_meta){.ns = "ns", .name = "o"});
}

static void teardown(void)
{
    blob_unref(obj);
}

static struct ring *fixed(size_t cap)
{
    return ring_new(&(struct ring_opts){.min_cap = cap, .max_cap = cap, .fresh_ms = 0});
}

/* Pushes rvs <rv0>, <rv0+step>, ... (<n> of them) at time <t>. */
static void push_n(struct ring *r, uint64_t rv0, uint64_t step, size_t n, int64_t t)
{
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(ring_push(r, WATCH_MODIFIED, obj, NULL, rv0 + i * step, t), 0);
    }
}

TestSuite(ring, .init = setup, .fini = teardown);

Test(ring, push_and_at)
{
    struct ring *r = fixed(8);
    struct blob *prev = blob_new("{}", 2, &(struct blob_meta){.name = "p"});
    const struct ring_event *e;

    cr_assert_eq(ring_head(r), 0);
    cr_assert_eq(ring_tail(r), 0);
    cr_assert_null(ring_at(r, 0));
    cr_assert_eq(ring_push(r, WATCH_ADDED, obj, NULL, 5, 100), 0);
    cr_assert_eq(ring_push(r, WATCH_DELETED, obj, prev, 9, 101), 0);
    cr_assert_eq(ring_len(r), 2);
    cr_assert_eq(ring_head(r), 2);
    e = ring_at(r, 1);
    cr_assert_not_null(e);
    cr_assert_eq(e->seq, 1);
    cr_assert_eq(e->rv, 9);
    cr_assert_eq(e->type, WATCH_DELETED);
    cr_assert_eq(e->obj, obj);
    cr_assert_eq(e->prev, prev);
    cr_assert_eq(e->t_ms, 101);
    cr_assert_null(ring_at(r, 2));
    cr_assert_eq(atomic_load(&obj->ref), 3);
    cr_assert_eq(atomic_load(&prev->ref), 2);
    ring_free(r);
    cr_assert_eq(atomic_load(&obj->ref), 1);
    cr_assert_eq(atomic_load(&prev->ref), 1);
    blob_unref(prev);
    ring_free(NULL);
}

Test(ring, push_requires_increasing_rv)
{
    struct ring *r = fixed(4);

    cr_assert_eq(ring_push(r, WATCH_ADDED, obj, NULL, 0, 0), -EINVAL);
    cr_assert_eq(ring_push(r, WATCH_ADDED, obj, NULL, 10, 0), 0);
    cr_assert_eq(ring_push(r, WATCH_ADDED, obj, NULL, 10, 0), -EINVAL);
    cr_assert_eq(ring_push(r, WATCH_ADDED, obj, NULL, 9, 0), -EINVAL);
    cr_assert_eq(ring_len(r), 1);
    cr_assert_eq(atomic_load(&obj->ref), 2);
    ring_free(r);
}

Test(ring, fixed_cap_evicts_oldest)
{
    struct ring *r = fixed(4);

    push_n(r, 10, 10, 6, 0); /* 10..60; 10 and 20 evicted */
    cr_assert_eq(ring_cap(r), 4);
    cr_assert_eq(ring_len(r), 4);
    cr_assert_eq(ring_tail(r), 2);
    cr_assert_eq(ring_head(r), 6);
    cr_assert_null(ring_at(r, 1));
    cr_assert_eq(ring_at(r, 2)->rv, 30);
    cr_assert_eq(ring_at(r, 5)->rv, 60);
    cr_assert_eq(ring_boundary(r), 29);
    cr_assert_eq(atomic_load(&obj->ref), 5);
    ring_free(r);
}

Test(ring, boundary_oldest_minus_one_accepted_minus_two_rejected)
{
    struct ring *r = fixed(3);
    uint64_t seq = 99;
    uint64_t boundary = 0;

    push_n(r, 10, 10, 4, 0); /* 10 evicted, kept 20 30 40: oldest = 20 */
    cr_assert_eq(ring_seek(r, 19, &seq, &boundary), 0);
    cr_assert_eq(seq, ring_tail(r)); /* replays the whole buffer */
    cr_assert_eq(ring_seek(r, 18, &seq, &boundary), -ESTALE);
    cr_assert_eq(boundary, 19);
    /* Between the last evicted rv and oldest-1: rejected, as the apiserver does. */
    cr_assert_eq(ring_seek(r, 11, &seq, &boundary), -ESTALE);
    cr_assert_eq(ring_seek(r, 20, &seq, NULL), 0);
    cr_assert_eq(seq, ring_tail(r) + 1);
    ring_free(r);
}

Test(ring, reset_sets_boundary_to_list_rv)
{
    struct ring *r = fixed(4);
    uint64_t seq = 0;
    uint64_t boundary = 0;
    uint64_t head;

    push_n(r, 10, 1, 6, 0);
    head = ring_head(r);
    ring_reset(r, 100);
    cr_assert_eq(ring_len(r), 0);
    cr_assert_eq(ring_head(r), head); /* seqs keep growing */
    cr_assert_eq(ring_tail(r), head);
    cr_assert_eq(ring_boundary(r), 100);
    cr_assert_eq(ring_seek(r, 100, &seq, NULL), 0);
    cr_assert_eq(seq, head);
    cr_assert_eq(ring_seek(r, 99, &seq, &boundary), -ESTALE);
    cr_assert_eq(boundary, 100);
    /* Pushes must exceed the list rv. */
    cr_assert_eq(ring_push(r, WATCH_ADDED, obj, NULL, 100, 0), -EINVAL);
    cr_assert_eq(ring_push(r, WATCH_ADDED, obj, NULL, 105, 0), 0);
    cr_assert_eq(ring_push(r, WATCH_ADDED, obj, NULL, 110, 0), 0);
    /* Nothing evicted since the reset: still L, not first-event-rv - 1. */
    cr_assert_eq(ring_boundary(r), 100);
    cr_assert_eq(ring_seek(r, 100, &seq, NULL), 0);
    cr_assert_eq(seq, head);
    cr_assert_eq(ring_seek(r, 102, &seq, NULL), 0);
    cr_assert_eq(ring_at(r, seq)->rv, 105);
    cr_assert_eq(ring_seek(r, 99, &seq, &boundary), -ESTALE);
    cr_assert_eq(boundary, 100);
    /* Once something is evicted after the reset, the first kept event rules. */
    push_n(r, 111, 1, 3, 0); /* 105 evicted; kept 110 111 112 113 */
    cr_assert_eq(ring_boundary(r), 109);
    cr_assert_eq(ring_seek(r, 108, &seq, &boundary), -ESTALE);
    cr_assert_eq(boundary, 109);
    ring_free(r);
}

Test(ring, reset_to_lower_rv_allows_pushes_above_it)
{
    struct ring *r = fixed(4);

    push_n(r, 1000, 1, 2, 0);
    ring_reset(r, 50);
    cr_assert_eq(ring_push(r, WATCH_ADDED, obj, NULL, 51, 0), 0);
    cr_assert_eq(ring_boundary(r), 50);
    ring_free(r);
}

Test(ring, compact_drops_up_to_rv)
{
    struct ring *r = fixed(16);
    uint64_t seq;
    uint64_t boundary;

    ring_reset(r, 5);
    push_n(r, 10, 10, 5, 0); /* 10 20 30 40 50 */
    cr_assert_eq(ring_compact(r, 5), 0);
    cr_assert_eq(ring_boundary(r), 5);
    cr_assert_eq(ring_compact(r, 25), 2);
    cr_assert_eq(ring_len(r), 3);
    cr_assert_eq(ring_at(r, ring_tail(r))->rv, 30);
    cr_assert_eq(ring_boundary(r), 29);
    cr_assert_eq(ring_seek(r, 28, &seq, &boundary), -ESTALE);
    cr_assert_eq(boundary, 29);
    /* Emptied: the boundary is the last dropped rv. */
    cr_assert_eq(ring_compact(r, 1000), 3);
    cr_assert_eq(ring_len(r), 0);
    cr_assert_eq(ring_tail(r), ring_head(r));
    cr_assert_eq(ring_boundary(r), 50);
    cr_assert_eq(ring_seek(r, 50, &seq, NULL), 0);
    cr_assert_eq(seq, ring_head(r));
    cr_assert_eq(ring_seek(r, 49, &seq, &boundary), -ESTALE);
    cr_assert_eq(atomic_load(&obj->ref), 1);
    ring_free(r);
}

Test(ring, seek_binary_search_matches_linear_scan)
{
    struct ring *r = fixed(1000);
    uint64_t rvs[1000];
    uint64_t rv = 100;

    srand(42);
    ring_reset(r, 99);
    for (size_t i = 0; i < 1000; i++) {
        rv += 1 + (uint64_t)(rand() % 5);
        rvs[i] = rv;
        cr_assert_eq(ring_push(r, WATCH_MODIFIED, obj, NULL, rv, 0), 0);
    }
    for (uint64_t q = 99; q <= rv + 3; q++) {
        uint64_t seq = 0;
        size_t want = 0;

        while (want < 1000 && rvs[want] <= q) {
            want++;
        }
        cr_assert_eq(ring_seek(r, q, &seq, NULL), 0);
        cr_assert_eq(seq, ring_tail(r) + want, "rv %llu", (unsigned long long)q);
    }
    ring_free(r);
}

Test(ring, seek_past_last_returns_head)
{
    struct ring *r = fixed(4);
    uint64_t seq = 0;

    push_n(r, 1, 1, 3, 0);
    cr_assert_eq(ring_seek(r, 1000, &seq, NULL), 0);
    cr_assert_eq(seq, ring_head(r));
    ring_free(r);
}

Test(ring, doubles_while_events_are_fresh)
{
    struct ring *r = ring_new(&(struct ring_opts){.min_cap = 4, .max_cap = 32, .fresh_ms = 1000});
    int64_t t = 0;

    cr_assert_eq(ring_cap(r), 4);
    push_n(r, 1, 1, 4, t);
    cr_assert_eq(ring_cap(r), 4);
    cr_assert_eq(ring_push(r, WATCH_MODIFIED, obj, NULL, 5, ++t), 0);
    cr_assert_eq(ring_cap(r), 8);
    cr_assert_eq(ring_len(r), 5);
    cr_assert_eq(ring_tail(r), 0); /* nothing dropped by growth */
    push_n(r, 6, 1, 27, t);        /* 32 events: 8 -> 16 -> 32 */
    cr_assert_eq(ring_cap(r), 32);
    cr_assert_eq(ring_len(r), 32);
    cr_assert_eq(ring_boundary(r), 0);
    for (uint64_t s = ring_tail(r); s < ring_head(r); s++) {
        cr_assert_eq(ring_at(r, s)->seq, s);
        cr_assert_eq(ring_at(r, s)->rv, s + 1);
    }
    /* At max_cap with fresh events: no halving, evict the oldest. */
    cr_assert_eq(ring_push(r, WATCH_MODIFIED, obj, NULL, 33, t + 1), 0);
    cr_assert_eq(ring_cap(r), 32);
    cr_assert_eq(ring_tail(r), 1);
    cr_assert_eq(ring_boundary(r), 1);
    ring_free(r);
}

Test(ring, does_not_grow_when_oldest_is_stale)
{
    struct ring *r = ring_new(&(struct ring_opts){.min_cap = 4, .max_cap = 32, .fresh_ms = 1000});

    push_n(r, 1, 1, 3, 0);
    push_n(r, 4, 1, 1, 1500); /* newest quarter (1 event) is fresh */
    cr_assert_eq(ring_push(r, WATCH_MODIFIED, obj, NULL, 5, 1500), 0);
    /* oldest is 1500 ms old (not < 1000): no doubling; head-1 is fresh: no halving. */
    cr_assert_eq(ring_cap(r), 4);
    cr_assert_eq(ring_len(r), 4);
    cr_assert_eq(ring_at(r, ring_tail(r))->rv, 2);
    ring_free(r);
}

Test(ring, halves_when_events_are_old)
{
    struct ring *r = ring_new(&(struct ring_opts){.min_cap = 4, .max_cap = 64, .fresh_ms = 1000});

    push_n(r, 1, 1, 16, 0); /* grows 4 -> 8 -> 16, all at t=0 */
    cr_assert_eq(ring_cap(r), 16);
    cr_assert_eq(ring_len(r), 16);
    /* Everything is old by t=5000: halve to 8 keeping the newest 8, then evict one. */
    cr_assert_eq(ring_push(r, WATCH_MODIFIED, obj, NULL, 17, 5000), 0);
    cr_assert_eq(ring_cap(r), 8);
    cr_assert_eq(ring_len(r), 8);
    cr_assert_eq(ring_at(r, ring_tail(r))->rv, 10);
    cr_assert_eq(ring_at(r, ring_head(r) - 1)->rv, 17);
    cr_assert_eq(ring_boundary(r), 9);
    for (uint64_t s = ring_tail(r); s < ring_head(r); s++) {
        cr_assert_eq(ring_at(r, s)->rv, s + 1);
    }
    /* Next push still old: 8 -> 4 */
    cr_assert_eq(ring_push(r, WATCH_MODIFIED, obj, NULL, 18, 10000), 0);
    cr_assert_eq(ring_cap(r), 4);
    cr_assert_eq(ring_len(r), 4);
    cr_assert_eq(ring_at(r, ring_tail(r))->rv, 15);
    /* Never below min_cap. */
    push_n(r, 19, 1, 4, 20000);
    cr_assert_eq(ring_cap(r), 4);
    cr_assert_eq(atomic_load(&obj->ref), 5);
    ring_free(r);
}

Test(ring, halving_checks_the_event_a_quarter_back)
{
    const struct ring_opts o = {.min_cap = 2, .max_cap = 64, .fresh_ms = 1000};
    struct ring *r = ring_new(&o);

    /* cap 8: oldest 4 at t=0, newest 4 at t=500. The event at head-cap/4 (= head-2) is
     * from t=500: at t=1400 it is only 900 ms old, so no halving (although the oldest is
     * 1400 ms old); at t=1600 it is stale. */
    push_n(r, 1, 1, 4, 0);
    push_n(r, 5, 1, 4, 500);
    cr_assert_eq(ring_cap(r), 8);
    cr_assert_eq(ring_push(r, WATCH_MODIFIED, obj, NULL, 9, 1400), 0);
    cr_assert_eq(ring_cap(r), 8);
    cr_assert_eq(ring_tail(r), 1);
    ring_free(r);

    r = ring_new(&o);
    push_n(r, 1, 1, 4, 0);
    push_n(r, 5, 1, 4, 500);
    cr_assert_eq(ring_cap(r), 8);
    cr_assert_eq(ring_push(r, WATCH_MODIFIED, obj, NULL, 9, 1600), 0);
    cr_assert_eq(ring_cap(r), 4);
    cr_assert_eq(ring_at(r, ring_tail(r))->rv, 6);
    ring_free(r);
}

Test(ring, no_time_rule_grows_to_max_then_evicts)
{
    struct ring *r = ring_new(&(struct ring_opts){.min_cap = 2, .max_cap = 10, .fresh_ms = 0});

    push_n(r, 1, 1, 10, 0);
    cr_assert_eq(ring_cap(r), 10); /* 2 -> 4 -> 8 -> 10 */
    cr_assert_eq(ring_tail(r), 0);
    push_n(r, 11, 1, 5, 1000000);
    cr_assert_eq(ring_cap(r), 10);
    cr_assert_eq(ring_tail(r), 5);
    cr_assert_eq(ring_boundary(r), 5);
    ring_free(r);
}

Test(ring, opts_are_clamped)
{
    struct ring *r = ring_new(&(struct ring_opts){.min_cap = 0, .max_cap = 0, .fresh_ms = -5});
    struct ring *d = ring_new(NULL);

    cr_assert_eq(ring_cap(r), 1);
    push_n(r, 1, 1, 3, 0);
    cr_assert_eq(ring_len(r), 1);
    cr_assert_eq(ring_at(r, 2)->rv, 3);
    cr_assert_eq(ring_cap(d), RING_MIN_CAP_DEFAULT);
    push_n(d, 1, 1, RING_MIN_CAP_DEFAULT, 0); /* segments are allocated as events arrive */
    cr_assert_geq(ring_footprint(d), RING_MIN_CAP_DEFAULT * sizeof(struct ring_event));
    ring_free(r);
    ring_free(d);
}

/* ---- borrowing (a watcher's batch without a reference per blob) ----------------------------- */

static struct blob *named(const char *name)
{
    return blob_new("{}", 2, &(struct blob_meta){.ns = "ns", .name = name});
}

Test(ring, borrowed_event_keeps_its_blobs_past_eviction)
{
    struct ring *r = fixed(4);
    struct blob *a = named("a");
    struct blob *p = named("p");
    struct ring_seg *g;

    cr_assert_eq(ring_push(r, WATCH_MODIFIED, a, p, 1, 0), 0);
    g = ring_borrow(r, 0);
    push_n(r, 2, 1, 6, 0); /* rv 1 evicted */
    cr_assert_eq(ring_tail(r), 3);
    cr_assert_null(ring_at(r, 0));
    cr_assert_eq(ring_boundary(r), 3);
    cr_assert_eq(atomic_load(&a->ref), 2, "the borrowed slot keeps obj");
    cr_assert_eq(atomic_load(&p->ref), 2, "and prev");
    cr_assert_eq(atomic_load(&obj->ref), 7, "rv 2 and 3 are evicted, in the borrowed segment");
    ring_return(r, g);
    cr_assert_eq(atomic_load(&a->ref), 1, "the last return drops the evicted slots' refs");
    cr_assert_eq(atomic_load(&p->ref), 1);
    cr_assert_eq(atomic_load(&obj->ref), 5, "the 4 kept events only");
    ring_free(r);
    cr_assert_eq(atomic_load(&obj->ref), 1);
    blob_unref(a);
    blob_unref(p);
}

Test(ring, unborrowed_eviction_drops_refs_at_once)
{
    struct ring *r = fixed(2);
    struct blob *a = named("a");
    struct ring_seg *g;

    cr_assert_eq(ring_push(r, WATCH_ADDED, a, NULL, 1, 0), 0);
    push_n(r, 2, 1, 1, 0);
    g = ring_borrow(r, 1);
    ring_return(r, g);
    push_n(r, 3, 1, 1, 0); /* rv 1 evicted: its segment is not borrowed */
    cr_assert_eq(atomic_load(&a->ref), 1);
    ring_free(r);
    blob_unref(a);
}

Test(ring, segment_left_behind_lives_until_its_last_borrower)
{
    struct ring *r = fixed(4);
    struct blob *a = named("a");
    struct ring_seg *g1, *g2;

    cr_assert_eq(ring_push(r, WATCH_ADDED, a, NULL, 1, 0), 0);
    g1 = ring_borrow(r, 0);
    g2 = ring_borrow(r, 0);
    push_n(r, 2, 1, 3 * RING_SEG, 0); /* the ring lets go of segment 0 entirely */
    cr_assert_eq(ring_tail(r), 3 * RING_SEG + 1 - 4);
    cr_assert_eq(atomic_load(&a->ref), 2);
    ring_return(r, g1);
    cr_assert_eq(atomic_load(&a->ref), 2, "one borrower left");
    ring_return(r, g2);
    cr_assert_eq(atomic_load(&a->ref), 1, "freed with the segment");
    ring_free(r);
    blob_unref(a);
}

Test(ring, reset_keeps_borrowed_events_until_returned)
{
    struct ring *r = fixed(8);
    struct blob *a = named("a");
    struct ring_seg *g;
    uint64_t seq = 0;

    push_n(r, 1, 1, 2, 0);
    cr_assert_eq(ring_push(r, WATCH_MODIFIED, a, NULL, 3, 0), 0);
    g = ring_borrow(r, 2);
    ring_reset(r, 100);
    cr_assert_eq(ring_len(r), 0);
    cr_assert_eq(ring_boundary(r), 100);
    cr_assert_eq(atomic_load(&a->ref), 2);
    cr_assert_eq(ring_push(r, WATCH_ADDED, obj, NULL, 101, 0), 0); /* into the same segment */
    cr_assert_eq(ring_seek(r, 100, &seq, NULL), 0);
    cr_assert_eq(ring_at(r, seq)->rv, 101);
    ring_return(r, g);
    cr_assert_eq(atomic_load(&a->ref), 1);
    cr_assert_eq(atomic_load(&obj->ref), 2, "only the event after the reset");
    ring_free(r);
    blob_unref(a);
}

Test(ring, slots_stay_put_across_resizes_and_segments)
{
    struct ring *r = ring_new(&(struct ring_opts){.min_cap = 4, .max_cap = 1024, .fresh_ms = 0});
    struct ring_seg *g;

    push_n(r, 1, 1, 3, 0);
    g = ring_borrow(r, 2);
    push_n(r, 4, 1, 700, 0); /* grows 4 -> ... -> 1024 across many segments */
    cr_assert_eq(ring_cap(r), 1024);
    cr_assert_eq(ring_tail(r), 0);
    for (uint64_t s = 0; s < ring_head(r); s++) {
        cr_assert_eq(ring_at(r, s)->seq, s);
        cr_assert_eq(ring_at(r, s)->rv, s + 1);
    }
    ring_return(r, g);
    cr_assert_geq(ring_footprint(r), 703 * sizeof(struct ring_event));
    ring_free(r);
    cr_assert_eq(atomic_load(&obj->ref), 1);
}

/* ---- attachments (a block readers share per event, e.g. an encoded frame) ------------------ */

Test(ring, attachment_is_shared_and_aged_out_behind_the_head)
{
    struct ring *r = ring_new(&(struct ring_opts){.min_cap = 1024, .max_cap = 1024});
    struct ring_event e;
    char *mine = strdup("frame"), *other = strdup("other");
    struct ring_seg *g;

    push_n(r, 1, 1, 1, 0);
    e = *ring_at(r, 0); /* readers work on copies */
    g = ring_borrow(r, 0);
    cr_assert_null(ring_aux(&e));
    cr_assert_eq(ring_aux_attach(&e, mine), mine, "the first one attaches");
    cr_assert_eq(ring_aux_attach(&e, other), mine, "a later one gets the first");
    cr_assert_eq(ring_aux(ring_at(r, 0)), mine, "every copy of the event sees it");
    free(other);
    push_n(r, 2, 1, RING_AUX_SPAN + 10, 0);
    cr_assert_eq(ring_aux(&e), mine, "kept while its segment is borrowed");
    ring_return(r, g);
    cr_assert_null(ring_aux(&e), "freed by the last return once behind the head");
    /* without a borrow it goes when the head moves RING_AUX_SPAN past it */
    e = *ring_at(r, ring_head(r) - 1);
    g = ring_borrow(r, e.seq);
    cr_assert_not_null(ring_aux_attach(&e, strdup("x")));
    ring_return(r, g);
    push_n(r, 1000, 1, RING_AUX_SPAN - 1, 0);
    cr_assert_not_null(ring_aux(&e));
    push_n(r, 2000, 1, 1, 0);
    cr_assert_null(ring_aux(&e));
    /* one left attached is freed with the ring (ASan: no leak) */
    e = *ring_at(r, ring_head(r) - 1);
    cr_assert_not_null(ring_aux_attach(&e, strdup("y")));
    ring_free(r);
}
