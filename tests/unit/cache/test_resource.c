/*
 * test_resource.c - one resource end to end, single reader: readiness, apply/replace,
 * watch replay and the 410 boundary, the wake protocol (who is woken, once, never under the
 * lock), scoped cursors, laggards, relists, RVWAIT, the tick, freshness timeouts, and
 * snapshot_at checked against a brute-force replay of random operations. Tests with more
 * than one thread live in test_resource_mt.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/blob.h"
#include "cache/resource.h"
#include "cache/snapshot.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static struct blob *mk(const char *ns, const char *name, uint64_t rv)
{
    char rvs[24];

    snprintf(rvs, sizeof(rvs), "%llu", (unsigned long long)rv);
    return blob_new(rvs, strlen(rvs), &(struct blob_meta){.ns = ns, .name = name, .rv_str = rvs});
}

/* Applies a fresh blob for ns/name at rv; the resource keeps its own references. */
static void put(struct resource *res, enum watch_type t, const char *ns, const char *name,
                uint64_t rv)
{
    struct blob *b = mk(ns, name, rv);

    cr_assert_eq(resource_apply(res, t, b, rv, 0), 0, "apply rv %llu", (unsigned long long)rv);
    blob_unref(b);
}

static struct resource *new_res(size_t cap)
{
    return resource_new("pods", &(struct ring_opts){.min_cap = cap, .max_cap = cap});
}

static struct resource *new_ready(size_t cap, uint64_t list_rv)
{
    struct resource *res = new_res(cap);

    cr_assert_eq(resource_replace(res, NULL, 0, list_rv, 0), 0);
    return res;
}

/* Counts wake calls. Taking the resource lock inside proves wake runs unlocked: a wake
 * under the lock deadlocks here and the test times out. */
struct waker {
    atomic_int calls;
    struct resource *res;
};

static void count_wake(void *ctx)
{
    struct waker *k = ctx;

    if (k->res != NULL) {
        (void)resource_rv(k->res);
    }
    atomic_fetch_add(&k->calls, 1);
}

static void winit(struct watcher *w, struct waker *k, struct resource *res, const char *ns)
{
    memset(w, 0, sizeof(*w));
    atomic_init(&k->calls, 0);
    k->res = res;
    w->wake = count_wake;
    w->wake_ctx = k;
    w->kind = WATCHER_STREAM;
    w->ns = ns;
}

/* Drains <w>: returns the number of events read and releases them. */
static ssize_t drain(struct resource *res, struct watcher *w, uint64_t *rvs, size_t max)
{
    struct ring_event ev[16];
    size_t total = 0;
    ssize_t n;

    for (;;) {
        n = resource_watch_next(res, w, ev, 16);
        if (n <= 0) {
            break;
        }
        for (ssize_t i = 0; i < n; i++) {
            if (rvs != NULL && total < max) {
                rvs[total] = ev[i].rv;
            }
            total++;
        }
    }
    return n < 0 ? n : (ssize_t)total;
}

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- readiness and writes ----------------------------------------------------------------- */

Test(resource, not_ready_until_first_replace)
{
    struct resource *res = new_res(8);
    struct watcher w;
    struct waker k;
    int64_t since = -1;

    winit(&w, &k, res, NULL);
    cr_assert_not(resource_is_ready(res, &since));
    cr_assert_eq(resource_watch_from(res, &w, 0, NULL), -EAGAIN);
    cr_assert_eq(resource_watch_now(res, &w, NULL, NULL), -EAGAIN);
    cr_assert_not(w.attached);
    cr_assert_eq(resource_replace(res, NULL, 0, 10, 500), 0);
    cr_assert(resource_is_ready(res, &since));
    cr_assert_eq(since, 500);
    cr_assert_eq(resource_rv(res), 10);
    resource_set_unready(res, 1000);
    resource_set_unready(res, 2000); /* keeps the start of the outage */
    cr_assert_not(resource_is_ready(res, &since));
    cr_assert_eq(since, 1000);
    cr_assert_eq(resource_replace(res, NULL, 0, 20, 3000), 0);
    cr_assert(resource_is_ready(res, &since));
    cr_assert_eq(since, 3000);
    cr_assert_str_eq(resource_name(res), "pods");
    resource_set_user(res, &k);
    cr_assert_eq(resource_user(res), &k);
    resource_free(res);
    resource_free(NULL);
}

Test(resource, apply_updates_store_history_and_rv)
{
    struct resource *res = new_ready(16, 10);
    struct resource_stats st;
    struct watcher w;
    struct waker k;
    struct ring_event ev[8];
    struct blob *a11 = mk("ns", "a", 11);
    struct blob *got;

    winit(&w, &k, res, NULL);
    cr_assert_eq(resource_watch_from(res, &w, 10, NULL), 0);
    cr_assert_eq(resource_apply(res, WATCH_ADDED, a11, 11, 0), 0);
    put(res, WATCH_MODIFIED, "ns", "a", 12);
    put(res, WATCH_MODIFIED, "ns", "b", 13); /* absent: recorded as ADDED */
    put(res, WATCH_DELETED, "ns", "a", 14);
    put(res, WATCH_DELETED, "ns", "zz", 15); /* absent: still recorded, prev NULL */
    cr_assert_eq(resource_rv(res), 15);
    cr_assert_null(resource_get(res, "ns/a"));
    got = resource_get(res, "ns/b");
    cr_assert_not_null(got);
    cr_assert_str_eq(got->rv_str, "13");
    blob_unref(got);

    cr_assert_eq(resource_watch_next(res, &w, ev, 8), 5);
    cr_assert_eq(ev[0].type, WATCH_ADDED);
    cr_assert_eq(ev[0].obj, a11);
    cr_assert_null(ev[0].prev);
    cr_assert_eq(ev[1].type, WATCH_MODIFIED);
    cr_assert_eq(ev[1].prev, a11);
    cr_assert_eq(ev[2].type, WATCH_ADDED);
    cr_assert_null(ev[2].prev);
    cr_assert_eq(ev[3].type, WATCH_DELETED);
    cr_assert_eq(ev[3].prev, ev[1].obj); /* prev = the stored version, not the tombstone */
    cr_assert_eq(ev[4].type, WATCH_DELETED);
    cr_assert_null(ev[4].prev);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(ev[i].rv, (uint64_t)(11 + i));
    }

    resource_stats(res, &st);
    cr_assert_eq(st.rv, 15);
    cr_assert_eq(st.events, 5);
    cr_assert_eq(st.relists, 1);
    cr_assert_eq(st.watchers, 1);
    cr_assert_eq(st.objects, 1);
    cr_assert_eq(st.object_bytes, 2);
    cr_assert_eq(st.history_len, 5);
    cr_assert_eq(st.history_cap, 16);
    cr_assert_eq(st.history_boundary, 10);
    cr_assert(st.ready);
    resource_watch_detach(res, &w);
    blob_unref(a11);
    resource_free(res);
}

Test(resource, apply_rejects_bad_input)
{
    struct resource *res = new_ready(8, 10);
    struct blob *b = mk("ns", "a", 5);

    cr_assert_eq(resource_apply(res, WATCH_ADDED, b, 10, 0), -EINVAL); /* not > rv */
    cr_assert_eq(resource_apply(res, WATCH_ADDED, b, 9, 0), -EINVAL);
    cr_assert_eq(resource_apply(res, WATCH_BOOKMARK, b, 11, 0), -EINVAL);
    cr_assert_eq(resource_apply(res, WATCH_ADDED, NULL, 11, 0), -EINVAL);
    cr_assert_eq(resource_rv(res), 10);
    cr_assert_null(resource_get(res, "ns/a"));
    cr_assert_eq(atomic_load(&b->ref), 1);
    resource_progress(res, 20);
    cr_assert_eq(resource_apply(res, WATCH_ADDED, b, 20, 0), -EINVAL);
    cr_assert_eq(resource_apply(res, WATCH_ADDED, b, 21, 0), 0);
    resource_progress(res, 5); /* ignored */
    cr_assert_eq(resource_rv(res), 21);
    blob_unref(b);
    resource_free(res);
}

Test(resource, replace_takes_refs_and_replaces_state)
{
    struct resource *res = new_res(8);
    struct blob *items[3] = {mk("b", "x", 1), mk("a", "y", 2), mk("a", "x", 3)};
    struct snapshot *s;
    uint64_t rv = 0;

    put(res, WATCH_ADDED, "old", "gone", 1);
    cr_assert_eq(resource_replace(res, items, 3, 50, 0), 0);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(atomic_load(&items[i]->ref), 2); /* ours + the store's */
    }
    s = resource_snapshot(res, &rv);
    cr_assert_eq(rv, 50);
    cr_assert_eq(s->len, 3);
    cr_assert_str_eq(snapshot_at(s, 0)->key, "a/x");
    cr_assert_str_eq(snapshot_at(s, 1)->key, "a/y");
    cr_assert_str_eq(snapshot_at(s, 2)->key, "b/x");
    cr_assert_null(resource_get(res, "old/gone"));
    snapshot_unref(s);
    resource_free(res);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(atomic_load(&items[i]->ref), 1);
        blob_unref(items[i]);
    }
}

/* ---- watches ------------------------------------------------------------------------------ */

Test(resource, watch_from_replays_then_follows)
{
    struct resource *res = new_ready(16, 100);
    struct watcher w;
    struct waker k;
    uint64_t rvs[16];

    for (uint64_t rv = 101; rv <= 105; rv++) {
        put(res, WATCH_ADDED, "ns", "o", rv);
    }
    winit(&w, &k, res, NULL);
    cr_assert_eq(resource_watch_from(res, &w, 102, NULL), 0);
    cr_assert_eq(drain(res, &w, rvs, 16), 3);
    cr_assert_eq(rvs[0], 103);
    cr_assert_eq(rvs[2], 105);
    cr_assert(w.suspended);
    put(res, WATCH_MODIFIED, "ns", "o", 106);
    cr_assert_eq(drain(res, &w, rvs, 16), 1);
    cr_assert_eq(rvs[0], 106);
    resource_watch_detach(res, &w);
    resource_free(res);
}

Test(resource, watch_from_too_old_is_estale_with_boundary)
{
    struct resource *res = new_ready(4, 100);
    struct resource_stats st;
    struct watcher w;
    struct waker k;
    uint64_t boundary = 0;

    winit(&w, &k, res, NULL);
    cr_assert_eq(resource_watch_from(res, &w, 99, &boundary), -ESTALE);
    cr_assert_eq(boundary, 100);
    cr_assert_not(w.attached);
    for (uint64_t rv = 110; rv <= 160; rv += 10) {
        put(res, WATCH_ADDED, "ns", "o", rv); /* 110,120 evicted; kept 130..160 */
    }
    cr_assert_eq(resource_watch_from(res, &w, 128, &boundary), -ESTALE);
    cr_assert_eq(boundary, 129);
    resource_stats(res, &st);
    cr_assert_eq(st.watchers, 0);
    cr_assert_eq(st.history_boundary, 129);
    cr_assert_eq(resource_watch_from(res, &w, 129, &boundary), 0);
    cr_assert_eq(drain(res, &w, NULL, 0), 4);
    resource_watch_detach(res, &w);
    resource_free(res);
}

Test(resource, watch_from_future_rv_skips_older_events)
{
    struct resource *res = new_ready(16, 10);
    struct watcher w;
    struct waker k;
    uint64_t rvs[8];

    winit(&w, &k, res, NULL);
    cr_assert_eq(resource_watch_from(res, &w, 15, NULL), 0);
    put(res, WATCH_ADDED, "ns", "o", 12);
    put(res, WATCH_MODIFIED, "ns", "o", 15);
    put(res, WATCH_MODIFIED, "ns", "o", 16);
    cr_assert_eq(drain(res, &w, rvs, 8), 1);
    cr_assert_eq(rvs[0], 16);
    resource_watch_detach(res, &w);
    resource_free(res);
}

/* A relist whose rv is below the cache's (upstream restored from a backup): a watch from an
 * rv of the lost history (above the new rv, up to the old one) gets 410, not a silent wait
 * that would skip the new history's changes until upstream passes it; once the rv has passed
 * it again, it is an ordinary rv. */
Test(resource, watch_from_an_rv_lost_by_a_backwards_relist_is_estale)
{
    struct resource *res = new_ready(16, 100);
    struct watcher w;
    struct waker k;
    uint64_t boundary = 0;

    put(res, WATCH_ADDED, "ns", "o", 110);
    cr_assert_eq(resource_replace(res, NULL, 0, 50, 0), 0); /* backwards */
    winit(&w, &k, res, NULL);
    cr_assert_eq(resource_watch_from(res, &w, 105, &boundary), -ESTALE);
    cr_assert_eq(boundary, 50);
    cr_assert_eq(resource_watch_from(res, &w, 110, &boundary), -ESTALE);
    cr_assert_not(w.attached);
    /* beyond what the cache ever had: an ordinary future rv */
    cr_assert_eq(resource_watch_from(res, &w, 111, NULL), 0);
    resource_watch_detach(res, &w);
    /* the new history passes 105: from then on it is one of its rvs */
    put(res, WATCH_ADDED, "ns", "p", 106);
    winit(&w, &k, res, NULL);
    cr_assert_eq(resource_watch_from(res, &w, 105, NULL), 0);
    resource_watch_detach(res, &w);
    resource_free(res);
}

Test(resource, watch_now_gives_initial_state_and_only_new_events)
{
    struct resource *res = new_ready(16, 10);
    struct snapshot *init = NULL;
    struct watcher w;
    struct waker k;
    uint64_t rv = 0;
    uint64_t rvs[8];

    put(res, WATCH_ADDED, "ns", "b", 11);
    put(res, WATCH_ADDED, "ns", "a", 12);
    resource_progress(res, 14);
    winit(&w, &k, res, NULL);
    cr_assert_eq(resource_watch_now(res, &w, &init, &rv), 0);
    cr_assert_eq(rv, 14);
    cr_assert_eq(init->len, 2);
    cr_assert_str_eq(snapshot_at(init, 0)->key, "ns/a");
    cr_assert_eq(drain(res, &w, NULL, 0), 0);
    put(res, WATCH_ADDED, "ns", "c", 15);
    cr_assert_eq(drain(res, &w, rvs, 8), 1);
    cr_assert_eq(rvs[0], 15);
    cr_assert_eq(init->len, 2); /* the snapshot is immutable */
    snapshot_unref(init);
    resource_watch_detach(res, &w);
    resource_free(res);
}

/* ---- the wake protocol -------------------------------------------------------------------- */

Test(resource, wakes_only_suspended_watchers_once_and_unlocked, .timeout = 120)
{
    struct resource *res = new_ready(16, 10);
    struct watcher w;
    struct waker k;

    winit(&w, &k, res, NULL);
    cr_assert_eq(resource_watch_from(res, &w, 10, NULL), 0);
    put(res, WATCH_ADDED, "ns", "o", 11); /* reader running: no wake needed */
    cr_assert_eq(atomic_load(&k.calls), 0);
    cr_assert_eq(drain(res, &w, NULL, 0), 1);
    cr_assert(w.suspended);
    put(res, WATCH_MODIFIED, "ns", "o", 12);
    cr_assert_eq(atomic_load(&k.calls), 1);
    cr_assert_not(w.suspended); /* the writer cleared it and owned the wake */
    put(res, WATCH_MODIFIED, "ns", "o", 13);
    cr_assert_eq(atomic_load(&k.calls), 1); /* still running: not woken again */
    resource_progress(res, 20);             /* progress has no event: no stream wake */
    cr_assert_eq(drain(res, &w, NULL, 0), 2);
    resource_progress(res, 21);
    cr_assert_eq(atomic_load(&k.calls), 1);
    resource_watch_detach(res, &w);
    put(res, WATCH_MODIFIED, "ns", "o", 22); /* detached: never woken */
    cr_assert_eq(atomic_load(&k.calls), 1);
    resource_free(res);
}

Test(resource, many_suspended_watchers_all_woken, .timeout = 120)
{
    enum { N = 100 };
    struct resource *res = new_ready(16, 10);
    struct watcher *ws = calloc(N, sizeof(*ws));
    struct waker *ks = calloc(N, sizeof(*ks));

    for (int i = 0; i < N; i++) {
        winit(&ws[i], &ks[i], res, NULL);
        cr_assert_eq(resource_watch_now(res, &ws[i], NULL, NULL), 0);
        cr_assert_eq(drain(res, &ws[i], NULL, 0), 0);
    }
    put(res, WATCH_ADDED, "ns", "o", 11);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(atomic_load(&ks[i].calls), 1, "watcher %d", i);
        resource_watch_detach(res, &ws[i]);
    }
    free(ws);
    free(ks);
    resource_free(res);
}

Test(resource, scoped_watcher_not_woken_and_cursor_advanced)
{
    struct resource *res = new_ready(4, 10);
    struct resource_stats st;
    struct watcher w;
    struct waker k;
    struct ring_event ev[4];

    winit(&w, &k, res, "a");
    cr_assert_eq(resource_watch_now(res, &w, NULL, NULL), 0);
    cr_assert_eq(drain(res, &w, NULL, 0), 0);
    /* Far more out-of-scope events than the ring holds. */
    for (uint64_t rv = 11; rv <= 30; rv++) {
        put(res, WATCH_ADDED, "b", "o", rv);
    }
    cr_assert_eq(atomic_load(&k.calls), 0);
    cr_assert(w.suspended);
    put(res, WATCH_ADDED, "a", "o", 31);
    cr_assert_eq(atomic_load(&k.calls), 1);
    cr_assert_eq(resource_watch_next(res, &w, ev, 4), 1);
    cr_assert_eq(ev[0].rv, 31);
    resource_stats(res, &st);
    cr_assert_eq(st.laggards, 0);
    resource_watch_detach(res, &w);
    resource_free(res);
}

Test(resource, unscoped_and_cluster_scoped_events)
{
    struct resource *res = new_ready(8, 10);
    struct watcher w;
    struct waker k;

    winit(&w, &k, res, "");
    cr_assert_eq(resource_watch_now(res, &w, NULL, NULL), 0);
    cr_assert_eq(drain(res, &w, NULL, 0), 0);
    put(res, WATCH_ADDED, NULL, "node1", 11); /* cluster-scoped object, ns "" */
    cr_assert_eq(atomic_load(&k.calls), 1);
    resource_watch_detach(res, &w);
    resource_free(res);
}

Test(resource, laggard_gets_epipe_and_is_counted_once)
{
    struct resource *res = new_ready(4, 10);
    struct resource_stats st;
    struct watcher w;
    struct waker k;
    struct ring_event ev[2];

    winit(&w, &k, res, NULL);
    put(res, WATCH_ADDED, "ns", "o", 11);
    put(res, WATCH_ADDED, "ns", "o", 12);
    cr_assert_eq(resource_watch_from(res, &w, 10, NULL), 0);
    cr_assert_eq(resource_watch_next(res, &w, ev, 1), 1); /* reads 11, then stalls */
    for (uint64_t rv = 13; rv <= 20; rv++) {
        put(res, WATCH_ADDED, "ns", "o", rv);
    }
    cr_assert_eq(resource_watch_next(res, &w, ev, 2), -EPIPE);
    cr_assert_eq(resource_watch_next(res, &w, ev, 2), -EPIPE);
    resource_stats(res, &st);
    cr_assert_eq(st.laggards, 1);
    cr_assert_eq(atomic_load(&k.calls), 0); /* it was running, nobody had to wake it */
    resource_watch_detach(res, &w);
    resource_free(res);
}

/* A batch holds no reference per blob: the watcher borrows it from the history until its next
 * call or its detach, and the blobs outlive their eviction meanwhile. */
Test(resource, batch_is_lent_until_the_next_call_or_detach)
{
    struct resource *res = new_ready(4, 10);
    struct watcher w, w2;
    struct waker k, k2;
    struct ring_event ev[4], ev2[4];
    struct blob *a = mk("ns", "a", 11);

    winit(&w, &k, res, NULL);
    winit(&w2, &k2, res, NULL);
    cr_assert_eq(resource_watch_from(res, &w, 10, NULL), 0);
    cr_assert_eq(resource_watch_from(res, &w2, 10, NULL), 0);
    cr_assert_eq(resource_apply(res, WATCH_ADDED, a, 11, 0), 0);
    put(res, WATCH_ADDED, "ns", "b", 12);
    cr_assert_eq(resource_watch_next(res, &w, ev, 4), 2);
    cr_assert_eq(resource_watch_next(res, &w2, ev2, 4), 2);
    cr_assert_eq(atomic_load(&a->ref), 3, "ours, the store's, the history's: none per reader");
    for (uint64_t rv = 13; rv <= 20; rv++) {
        put(res, WATCH_ADDED, "ns", "c", rv); /* 11 and 12 leave the history */
    }
    cr_assert_eq(atomic_load(&a->ref), 3, "the evicted slot keeps it while it is lent");
    cr_assert_str_eq(ev[0].obj->data, "11");
    cr_assert_str_eq(ev[1].obj->data, "12");
    cr_assert_eq(ev[0].obj, a);
    resource_watch_detach(res, &w2); /* one borrower gives it back ... */
    cr_assert_eq(atomic_load(&a->ref), 3);
    cr_assert_eq(resource_watch_next(res, &w, ev, 4), -EPIPE); /* ... the other by its next call */
    cr_assert_eq(atomic_load(&a->ref), 2, "ours and the store's");
    resource_watch_detach(res, &w);
    resource_free(res);
    cr_assert_eq(atomic_load(&a->ref), 1);
    blob_unref(a);
}

Test(resource, batch_stops_at_the_second_segment)
{
    struct resource *res = new_ready(1024, 1);
    struct watcher w;
    struct waker k;
    struct ring_event ev[300];
    ssize_t n;

    winit(&w, &k, res, NULL);
    cr_assert_eq(resource_watch_from(res, &w, 1, NULL), 0);
    for (uint64_t rv = 2; rv < 2 + 300; rv++) {
        put(res, WATCH_ADDED, "ns", "o", rv);
    }
    n = resource_watch_next(res, &w, ev, 300);
    cr_assert_eq(n, 2 * RING_SEG, "a batch spans at most WATCHER_HELD_MAX segments");
    cr_assert_eq(ev[n - 1].rv, 1 + 2 * RING_SEG);
    n = resource_watch_next(res, &w, ev, 300);
    cr_assert_eq(n, 2 * RING_SEG);
    cr_assert_eq(ev[0].rv, 2 + 2 * RING_SEG);
    n = resource_watch_next(res, &w, ev, 300);
    cr_assert_eq(n, 300 - 4 * RING_SEG);
    cr_assert_eq(ev[n - 1].rv, 301);
    cr_assert_eq(resource_watch_next(res, &w, ev, 300), 0);
    /* up to RING_SEG events are never cut short, wherever the batch starts */
    for (uint64_t rv = 302; rv < 302 + 3 * RING_SEG; rv++) {
        put(res, WATCH_ADDED, "ns", "o", rv);
    }
    cr_assert_eq(resource_watch_next(res, &w, ev, 1), 1); /* from mid-segment */
    while ((n = resource_watch_next(res, &w, ev, RING_SEG)) == RING_SEG) {
    }
    cr_assert_eq(n, 3 * RING_SEG - 1 - 2 * RING_SEG, "short only at the end");
    cr_assert_eq(ev[n - 1].rv, 301 + 3 * RING_SEG);
    resource_watch_detach(res, &w);
    resource_free(res);
}

Test(resource, compaction_ends_watchers_behind_the_tail)
{
    struct resource *res = new_ready(16, 10);
    struct resource_stats st;
    struct watcher behind, live;
    struct waker kb, kl;

    winit(&behind, &kb, res, NULL);
    winit(&live, &kl, res, NULL);
    for (uint64_t rv = 11; rv <= 15; rv++) {
        put(res, WATCH_ADDED, "ns", "o", rv);
    }
    cr_assert_eq(resource_watch_from(res, &behind, 10, NULL), 0);
    cr_assert_eq(resource_watch_now(res, &live, NULL, NULL), 0);
    cr_assert_eq(drain(res, &live, NULL, 0), 0);
    resource_compact(res, 12);
    cr_assert_eq(drain(res, &behind, NULL, 0), -EPIPE);
    cr_assert_eq(atomic_load(&kl.calls), 0);
    resource_compact(res, 100); /* empties the ring; the caught-up watcher lost nothing */
    put(res, WATCH_ADDED, "ns", "o", 101);
    cr_assert_eq(drain(res, &live, NULL, 0), 1);
    resource_stats(res, &st);
    cr_assert_eq(st.laggards, 1);
    cr_assert_eq(st.history_boundary, 100);
    resource_watch_detach(res, &behind);
    resource_watch_detach(res, &live);
    resource_free(res);
}

Test(resource, relist_ends_stream_watchers, .timeout = 120)
{
    struct resource *res = new_ready(16, 10);
    struct resource_stats st;
    struct watcher idle, busy, again;
    struct waker ki, kb, ka;
    uint64_t boundary = 0;

    winit(&idle, &ki, res, NULL);
    winit(&busy, &kb, res, NULL);
    winit(&again, &ka, res, NULL);
    cr_assert_eq(resource_watch_now(res, &idle, NULL, NULL), 0);
    cr_assert_eq(resource_watch_now(res, &busy, NULL, NULL), 0);
    cr_assert_eq(drain(res, &idle, NULL, 0), 0);
    put(res, WATCH_ADDED, "ns", "o", 11);
    cr_assert_eq(atomic_load(&ki.calls), 1);
    cr_assert_eq(drain(res, &idle, NULL, 0), 1); /* suspended again */
    cr_assert_eq(resource_replace(res, NULL, 0, 50, 0), 0);
    cr_assert_eq(atomic_load(&ki.calls), 2);
    cr_assert_eq(atomic_load(&kb.calls), 0); /* running: finds out on its next call */
    cr_assert_eq(drain(res, &idle, NULL, 0), -EPIPE);
    cr_assert_eq(drain(res, &busy, NULL, 0), -EPIPE);
    /* Re-watch: below the list rv is too old, at it is fine. */
    cr_assert_eq(resource_watch_from(res, &again, 49, &boundary), -ESTALE);
    cr_assert_eq(boundary, 50);
    cr_assert_eq(resource_watch_from(res, &again, 50, &boundary), 0);
    put(res, WATCH_ADDED, "ns", "o", 51);
    cr_assert_eq(drain(res, &again, NULL, 0), 1);
    resource_stats(res, &st);
    cr_assert_eq(st.relists, 2);
    cr_assert_eq(st.laggards, 0);
    resource_watch_detach(res, &idle);
    resource_watch_detach(res, &busy);
    resource_watch_detach(res, &again);
    resource_free(res);
}

/*
 * resource_relist (issue 13, tiers): a relist that finds exactly what the store holds lost
 * nothing, so it keeps the watchers, the history and the store; any difference resets as
 * resource_replace does.
 */

/* A ready resource listed at 10 with a@5, b@8, then c ADDED at 11; <w> watches from 10 and
 * has taken c (suspended). */
static struct resource *relist_fixture(struct watcher *w, struct waker *k)
{
    struct blob *items[2] = {mk("ns", "a", 5), mk("ns", "b", 8)};
    struct resource *res = new_res(16);
    uint64_t boundary = 0;

    cr_assert_eq(resource_replace(res, items, 2, 10, 0), 0);
    blob_unref(items[0]);
    blob_unref(items[1]);
    winit(w, k, res, NULL);
    cr_assert_eq(resource_watch_from(res, w, 10, &boundary), 0);
    put(res, WATCH_ADDED, "ns", "c", 11);
    cr_assert_eq(drain(res, w, NULL, 0), 1);
    return res;
}

/* Relists <res> with the blobs <spec> ("ns/name@rv" each) at <list_rv>; returns the result. */
static int relist_with(struct resource *res, const char *const *spec, size_t n, uint64_t list_rv)
{
    struct blob *items[8];
    int rc;

    cr_assert_leq(n, 8u);
    for (size_t i = 0; i < n; i++) {
        char name[32];
        unsigned long long rv = 0;

        cr_assert_eq(sscanf(spec[i], "ns/%31[^@]@%llu", name, &rv), 2, "%s", spec[i]);
        items[i] = mk("ns", name, rv);
    }
    resource_set_unready(res, 1); /* as the reflector does before it relists */
    rc = resource_relist(res, items, n, list_rv, 2);
    for (size_t i = 0; i < n; i++) {
        blob_unref(items[i]);
    }
    return rc;
}

Test(resource, relist_of_the_same_state_keeps_watchers_and_history, .timeout = 120)
{
    const char *same[] = {"ns/c@11", "ns/a@5", "ns/b@8"}; /* any order */
    struct watcher w, again;
    struct waker k, ka;
    struct resource *res = relist_fixture(&w, &k);
    struct resource_stats st;
    uint64_t boundary = 0, rvs[4];
    int64_t since = 0;

    cr_assert_eq(relist_with(res, same, 3, 40), 1);
    cr_assert(resource_is_ready(res, &since), "ready again");
    cr_assert_eq(since, 2);
    cr_assert_eq(resource_rv(res), 40, "the rv moves to the list rv");
    cr_assert_eq(atomic_load(&k.calls), 0, "the watcher is not woken: nothing to tell it");
    cr_assert_eq(drain(res, &w, NULL, 0), 0, "still open, nothing pending");
    /* The history still reaches back to 10: no 410 for an rv it had. */
    winit(&again, &ka, res, NULL);
    cr_assert_eq(resource_watch_from(res, &again, 10, &boundary), 0);
    put(res, WATCH_MODIFIED, "ns", "a", 41);
    cr_assert_eq(drain(res, &again, rvs, 4), 2);
    cr_assert_eq(rvs[0], 11);
    cr_assert_eq(rvs[1], 41);
    cr_assert_eq(drain(res, &w, rvs, 4), 1, "the old watcher gets the next event, once");
    cr_assert_eq(rvs[0], 41);
    resource_stats(res, &st);
    cr_assert_eq(st.relists, 1, "no reset");
    cr_assert_eq(st.relists_kept, 1);
    cr_assert_eq(st.objects, 3);
    cr_assert_eq(st.history_boundary, 10);
    resource_watch_detach(res, &w);
    resource_watch_detach(res, &again);
    resource_free(res);
}

/* Every way the list can differ from the store resets (the events in between were lost). */
Test(resource, relist_of_a_changed_state_resets, .timeout = 120)
{
    static const char *const cases[][4] = {
        {"ns/a@5", "ns/b@8", "ns/c@12", NULL},      /* c modified */
        {"ns/a@5", "ns/b@8", NULL},                 /* c deleted */
        {"ns/a@5", "ns/b@8", "ns/c@11", "ns/d@13"}, /* d added */
        {"ns/a@5", "ns/a@5", "ns/c@11", NULL},      /* b gone, a repeated: same count */
    };
    static const size_t lens[] = {3, 2, 4, 3};

    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        struct watcher w, again;
        struct waker k, ka;
        struct resource *res = relist_fixture(&w, &k);
        struct resource_stats st;
        uint64_t boundary = 0;

        cr_assert_eq(relist_with(res, cases[i], lens[i], 40), 0, "case %zu", i);
        cr_assert_eq(drain(res, &w, NULL, 0), -EPIPE, "case %zu: the watch ends", i);
        winit(&again, &ka, res, NULL);
        cr_assert_eq(resource_watch_from(res, &again, 11, &boundary), -ESTALE, "case %zu", i);
        cr_assert_eq(boundary, 40);
        resource_stats(res, &st);
        cr_assert_eq(st.relists, 2, "case %zu", i);
        cr_assert_eq(st.relists_kept, 0, "case %zu", i);
        cr_assert(resource_is_ready(res, NULL));
        resource_watch_detach(res, &w);
        resource_free(res);
    }
}

/* The upstream going backwards is not "nothing happened", and a first list has no state to
 * keep. */
Test(resource, relist_below_the_rv_or_first_list_resets, .timeout = 120)
{
    const char *same[] = {"ns/a@5", "ns/b@8", "ns/c@11"};
    struct watcher w;
    struct waker k;
    struct resource *res = relist_fixture(&w, &k);
    struct resource_stats st;

    cr_assert_eq(relist_with(res, same, 3, 10), 0, "list rv 10 < rv 11");
    cr_assert_eq(drain(res, &w, NULL, 0), -EPIPE);
    resource_watch_detach(res, &w);
    resource_free(res);

    res = new_res(16);
    cr_assert_eq(resource_relist(res, NULL, 0, 7, 0), 0, "never listed: a replace");
    cr_assert(resource_is_ready(res, NULL));
    cr_assert_eq(resource_relist(res, NULL, 0, 7, 0), 1, "same (empty) state, same rv");
    resource_stats(res, &st);
    cr_assert_eq(st.relists, 1);
    cr_assert_eq(st.relists_kept, 1);
    resource_free(res);
}

/* ---- RVWAIT, the tick, kill, close -------------------------------------------------------- */

Test(resource, rvwait_woken_when_rv_reached, .timeout = 120)
{
    struct resource *res = new_ready(16, 10);
    struct watcher w;
    struct waker k;

    winit(&w, &k, res, NULL);
    cr_assert_eq(resource_wait_rv(res, &w, 10, 0), 0);
    cr_assert_not(w.attached);
    cr_assert_eq(resource_wait_rv(res, &w, 13, 0), -EAGAIN);
    cr_assert(w.attached);
    cr_assert(w.suspended);
    put(res, WATCH_ADDED, "ns", "o", 12);
    cr_assert_eq(atomic_load(&k.calls), 0);
    put(res, WATCH_ADDED, "ns", "o", 13);
    cr_assert_eq(atomic_load(&k.calls), 1);
    put(res, WATCH_ADDED, "ns", "o", 14);
    cr_assert_eq(atomic_load(&k.calls), 1);
    resource_watch_detach(res, &w);

    winit(&w, &k, res, NULL);
    cr_assert_eq(resource_wait_rv(res, &w, 30, 0), -EAGAIN);
    resource_progress(res, 29);
    cr_assert_eq(atomic_load(&k.calls), 0);
    resource_progress(res, 30);
    cr_assert_eq(atomic_load(&k.calls), 1);
    resource_watch_detach(res, &w);

    winit(&w, &k, res, NULL);
    cr_assert_eq(resource_wait_rv(res, &w, 100, 0), -EAGAIN);
    cr_assert_eq(resource_replace(res, NULL, 0, 99, 0), 0);
    cr_assert_eq(atomic_load(&k.calls), 0);
    cr_assert_eq(resource_replace(res, NULL, 0, 100, 0), 0);
    cr_assert_eq(atomic_load(&k.calls), 1);
    resource_watch_detach(res, &w);
    resource_free(res);
}

static bool dead_if_ctx(struct watcher *w, void *ctx)
{
    return w == ctx;
}

Test(resource, tick_wakes_due_and_dead_watchers, .timeout = 120)
{
    struct resource *res = new_ready(16, 10);
    struct watcher due, later, dead, running, never, waiter;
    struct waker kd, kl, kx, kr, kn, kw;

    winit(&due, &kd, res, NULL);
    winit(&later, &kl, res, NULL);
    winit(&dead, &kx, res, NULL);
    winit(&running, &kr, res, NULL);
    winit(&never, &kn, res, NULL);
    winit(&waiter, &kw, res, NULL);
    cr_assert_eq(resource_watch_now(res, &due, NULL, NULL), 0);
    cr_assert_eq(resource_watch_now(res, &later, NULL, NULL), 0);
    cr_assert_eq(resource_watch_now(res, &dead, NULL, NULL), 0);
    cr_assert_eq(resource_watch_now(res, &running, NULL, NULL), 0);
    cr_assert_eq(resource_watch_now(res, &never, NULL, NULL), 0);
    cr_assert_eq(resource_wait_rv(res, &waiter, 99, 1000), -EAGAIN);
    drain(res, &due, NULL, 0);
    drain(res, &later, NULL, 0);
    drain(res, &dead, NULL, 0);
    drain(res, &never, NULL, 0);
    resource_watch_set_due(res, &due, 1000);
    resource_watch_set_due(res, &later, 2000);
    resource_watch_set_due(res, &running, 500);

    cr_assert_eq(resource_tick(res, 999, NULL, NULL), 0);
    cr_assert_eq(resource_tick(res, 1000, dead_if_ctx, &dead), 3); /* due, dead, waiter */
    cr_assert_eq(atomic_load(&kd.calls), 1);
    cr_assert_eq(atomic_load(&kx.calls), 1);
    cr_assert_eq(atomic_load(&kw.calls), 1);
    cr_assert_eq(atomic_load(&kl.calls), 0);
    cr_assert_eq(atomic_load(&kr.calls), 0); /* due but running */
    cr_assert_eq(atomic_load(&kn.calls), 0);
    cr_assert_eq(drain(res, &dead, NULL, 0), -EPIPE);
    cr_assert_eq(drain(res, &due, NULL, 0), 0); /* woken for a bookmark, still alive */
    /* The next tick wakes it again while still due; "later" joins at 2000. */
    cr_assert_eq(resource_tick(res, 2000, NULL, NULL), 2);
    cr_assert_eq(atomic_load(&kl.calls), 1);
    /* "running" fell due while it ran: once it suspends, the next tick wakes it; the others
     * were woken and have not suspended since */
    cr_assert_eq(drain(res, &running, NULL, 0), 0);
    cr_assert_eq(resource_tick(res, 2100, NULL, NULL), 1);
    cr_assert_eq(atomic_load(&kr.calls), 1);
    /* a new due time in the future: not woken before it */
    cr_assert_eq(drain(res, &running, NULL, 0), 0);
    resource_watch_set_due(res, &running, 5000);
    cr_assert_eq(resource_tick(res, 4999, NULL, NULL), 0);
    cr_assert_eq(resource_tick(res, 5000, NULL, NULL), 1);
    resource_watch_detach(res, &due);
    resource_watch_detach(res, &later);
    resource_watch_detach(res, &dead);
    resource_watch_detach(res, &running);
    resource_watch_detach(res, &never);
    resource_watch_detach(res, &waiter);
    resource_free(res);
}

Test(resource, kill_ends_and_wakes, .timeout = 120)
{
    struct resource *res = new_ready(16, 10);
    struct watcher s, r;
    struct waker ks, kr;

    winit(&s, &ks, res, NULL);
    winit(&r, &kr, res, NULL);
    cr_assert_eq(resource_watch_now(res, &s, NULL, NULL), 0);
    cr_assert_eq(resource_watch_now(res, &r, NULL, NULL), 0);
    cr_assert_eq(drain(res, &s, NULL, 0), 0);
    resource_watch_kill(res, &s);
    resource_watch_kill(res, &r);
    cr_assert_eq(atomic_load(&ks.calls), 1);
    cr_assert_eq(atomic_load(&kr.calls), 0);
    cr_assert_eq(drain(res, &s, NULL, 0), -EPIPE);
    cr_assert_eq(drain(res, &r, NULL, 0), -EPIPE);
    resource_watch_detach(res, &s);
    resource_watch_detach(res, &r);
    resource_free(res);
}

Test(resource, close_all_ends_everything_and_refuses_new, .timeout = 120)
{
    struct resource *res = new_ready(16, 10);
    struct watcher s, w, late;
    struct waker ks, kw, kl;

    winit(&s, &ks, res, NULL);
    winit(&w, &kw, res, NULL);
    winit(&late, &kl, res, NULL);
    cr_assert_eq(resource_watch_now(res, &s, NULL, NULL), 0);
    cr_assert_eq(drain(res, &s, NULL, 0), 0);
    cr_assert_eq(resource_wait_rv(res, &w, 50, 0), -EAGAIN);
    resource_close_all(res);
    cr_assert_eq(atomic_load(&ks.calls), 1);
    cr_assert_eq(atomic_load(&kw.calls), 1);
    cr_assert_eq(drain(res, &s, NULL, 0), -EPIPE);
    cr_assert_eq(resource_watch_now(res, &late, NULL, NULL), -EAGAIN);
    cr_assert_eq(resource_watch_from(res, &late, 10, NULL), -EAGAIN);
    cr_assert_eq(resource_wait_rv(res, &late, 50, 0), 0);
    cr_assert_not(late.attached);
    resource_watch_detach(res, &s);
    resource_watch_detach(res, &w);
    resource_free(res);
}

Test(resource, drain_hands_out_what_is_pending_then_eshutdown, .timeout = 120)
{
    struct resource *res = new_ready(16, 10);
    struct watcher idle, busy, scoped, late;
    struct waker ki, kb, ks, kl;
    struct ring_event ev[4];
    uint64_t rvs[4] = {0}, rv = 0;

    winit(&idle, &ki, res, NULL);
    winit(&busy, &kb, res, NULL);
    winit(&scoped, &ks, res, "a");
    winit(&late, &kl, res, NULL);
    cr_assert_eq(resource_watch_now(res, &idle, NULL, NULL), 0);
    cr_assert_eq(resource_watch_now(res, &busy, NULL, NULL), 0);
    cr_assert_eq(resource_watch_now(res, &scoped, NULL, NULL), 0);
    cr_assert_eq(drain(res, &idle, NULL, 0), 0);   /* suspended */
    cr_assert_eq(drain(res, &scoped, NULL, 0), 0); /* suspended */
    put(res, WATCH_ADDED, "b", "x", 11);           /* idle is woken (running now), scoped not */
    put(res, WATCH_ADDED, "b", "y", 12);
    cr_assert_eq(drain(res, &idle, rvs, 4), 2); /* caught up: suspended again */
    cr_assert(idle.suspended);
    put(res, WATCH_MODIFIED, "b", "y", 13);
    cr_assert_eq(atomic_load(&ki.calls), 2);
    cr_assert_eq(atomic_load(&ks.calls), 0);
    resource_drain_watches(res);
    /* the suspended ones are woken: the scoped one too (nothing in its scope is pending);
     * idle is running since 13 woke it; busy never suspended */
    cr_assert_eq(atomic_load(&ks.calls), 1);
    cr_assert_eq(atomic_load(&ki.calls), 2);
    cr_assert_eq(atomic_load(&kb.calls), 0);
    cr_assert_eq(resource_watch_next(res, &scoped, ev, 4), -ESHUTDOWN);
    cr_assert_not(scoped.suspended);
    /* what is pending goes out first, in order, then the end */
    cr_assert_eq(drain(res, &busy, rvs, 4), -ESHUTDOWN);
    cr_assert(rvs[0] == 11 && rvs[1] == 12 && rvs[2] == 13);
    cr_assert_not(busy.suspended);
    cr_assert_not(resource_watch_idle_rv(res, &idle, &rv));
    cr_assert_eq(resource_watch_next(res, &idle, ev, 4), 1);
    cr_assert_eq(ev[0].rv, 13);
    cr_assert(resource_watch_idle_rv(res, &idle, &rv));
    cr_assert_eq(rv, 13);
    cr_assert_eq(resource_watch_next(res, &idle, ev, 4), -ESHUTDOWN);
    /* events appended during the drain are not handed out (the next replica delivers
     * them): the end and its rv stay those of the moment the drain began */
    put(res, WATCH_DELETED, "b", "y", 14);
    resource_progress(res, 15);
    cr_assert_eq(resource_rv(res), 15);
    cr_assert_eq(atomic_load(&ki.calls), 2, "a draining watcher is not suspended");
    cr_assert_eq(resource_watch_take(res, &idle, ev, 4), 0, "take never ends a stream");
    cr_assert_eq(resource_watch_next(res, &idle, ev, 4), -ESHUTDOWN);
    cr_assert(resource_watch_idle_rv(res, &idle, &rv));
    cr_assert_eq(rv, 13);
    /* new watches are still attached, replay up to the drain's moment, and end the same way */
    cr_assert_eq(resource_watch_from(res, &late, 11, NULL), 0);
    cr_assert_not(resource_watch_idle_rv(res, &late, &rv));
    cr_assert_eq(drain(res, &late, rvs, 4), -ESHUTDOWN);
    cr_assert(rvs[0] == 12 && rvs[1] == 13);
    cr_assert(resource_watch_idle_rv(res, &late, &rv));
    cr_assert_eq(rv, 13);
    resource_drain_watches(res); /* the first call counts */
    cr_assert_eq(resource_watch_next(res, &late, ev, 4), -ESHUTDOWN);
    cr_assert(resource_watch_idle_rv(res, &late, &rv));
    cr_assert_eq(rv, 13);
    cr_assert_eq(atomic_load(&kl.calls), 0);
    resource_watch_detach(res, &idle);
    resource_watch_detach(res, &busy);
    resource_watch_detach(res, &scoped);
    resource_watch_detach(res, &late);
    resource_free(res);
}

Test(resource, detach_is_idempotent)
{
    struct resource *res = new_ready(16, 10);
    struct resource_stats st;
    struct watcher w, never;
    struct waker k, kn;

    winit(&w, &k, res, NULL);
    winit(&never, &kn, res, NULL);
    resource_watch_detach(res, &never);
    cr_assert_eq(resource_watch_now(res, &w, NULL, NULL), 0);
    resource_stats(res, &st);
    cr_assert_eq(st.watchers, 1);
    resource_watch_detach(res, &w);
    resource_watch_detach(res, &w);
    resource_stats(res, &st);
    cr_assert_eq(st.watchers, 0);
    cr_assert_eq(drain(res, &w, NULL, 0), -EPIPE);
    resource_free(res);
}

Test(resource, free_with_attached_watcher_aborts, .signal = SIGABRT)
{
    struct resource *res = new_ready(16, 10);
    struct watcher w;
    struct waker k;

    winit(&w, &k, res, NULL);
    cr_assert_eq(resource_watch_now(res, &w, NULL, NULL), 0);
    resource_free(res);
}

/* ---- freshness ---------------------------------------------------------------------------- */

Test(resource, wait_fresh_times_out, .timeout = 120)
{
    struct resource *res = new_ready(16, 10);
    uint64_t cur = 0;
    int64_t t0 = mono_ms();
    int64_t took;

    cr_assert_eq(resource_wait_fresh(res, 11, 50, &cur), -ETIMEDOUT);
    took = mono_ms() - t0;
    cr_assert_geq(took, 49);
    cr_assert_lt(took, 2000);
    cr_assert_eq(cur, 10);
    cr_assert_eq(resource_wait_fresh(res, 11, 0, &cur), -ETIMEDOUT);
    cr_assert_eq(resource_wait_fresh(res, 10, 0, &cur), 0);
    cr_assert_eq(resource_wait_fresh(res, 5, 50, NULL), 0);
    resource_free(res);
}

/* ---- snapshots ---------------------------------------------------------------------------- */

Test(resource, snapshot_cached_until_change)
{
    struct resource *res = new_ready(16, 10);
    struct snapshot *s1, *s2, *s3, *s4;
    uint64_t rv = 0;

    put(res, WATCH_ADDED, "ns", "a", 11);
    s1 = resource_snapshot(res, &rv);
    s2 = resource_snapshot(res, &rv);
    cr_assert_eq(s1, s2);
    cr_assert_eq(s1->rv, 11);
    resource_progress(res, 15);
    s3 = resource_snapshot(res, &rv);
    cr_assert_eq(s3, s1); /* nothing changed */
    cr_assert_eq(rv, 15);
    put(res, WATCH_ADDED, "ns", "b", 16);
    s4 = resource_snapshot(res, &rv);
    cr_assert_neq(s4, s1);
    cr_assert_eq(s4->len, 2);
    cr_assert_eq(s4->rv, 16);
    cr_assert_eq(s1->len, 1); /* old snapshot untouched */
    snapshot_unref(s1);
    snapshot_unref(s2);
    snapshot_unref(s3);
    snapshot_unref(s4);
    resource_free(res);
}

Test(resource, snapshot_at_errors_and_current)
{
    struct resource *res = new_ready(4, 10);
    struct snapshot *s = NULL;

    for (uint64_t rv = 11; rv <= 16; rv++) {
        put(res, WATCH_ADDED, "ns", "o", rv); /* kept 13..16: boundary 12 */
    }
    cr_assert_eq(resource_snapshot_at(res, 17, &s), -EAGAIN);
    cr_assert_eq(resource_snapshot_at(res, 11, &s), -ESTALE);
    cr_assert_null(s);
    cr_assert_eq(resource_snapshot_at(res, 12, &s), 0);
    cr_assert_eq(s->rv, 12);
    cr_assert_eq(s->len, 1);
    cr_assert_str_eq(snapshot_at(s, 0)->rv_str, "12");
    snapshot_unref(s);
    cr_assert_eq(resource_snapshot_at(res, 16, &s), 0);
    cr_assert_eq(s->rv, 16);
    cr_assert_str_eq(snapshot_at(s, 0)->rv_str, "16");
    snapshot_unref(s);
    resource_progress(res, 20);
    cr_assert_eq(resource_snapshot_at(res, 20, &s), 0);
    cr_assert_eq(s->rv, 20);
    cr_assert_eq(s->len, 1);
    snapshot_unref(s);
    cr_assert_eq(resource_snapshot_at(res, 18, &s), 0);
    cr_assert_eq(s->rv, 18);
    snapshot_unref(s);
    resource_free(res);
}

/*
 * Random adds/modifies/deletes (and a relist, and progress) over 60 keys; after each step
 * the model's state is recorded by rv. At checkpoints every rv from below the boundary to
 * past the current rv is rebuilt by resource_snapshot_at and compared pointer by pointer.
 */
enum { KEYS = 60, OPS = 3000, MAXREC = OPS + 16 };

struct model {
    struct blob *cur[KEYS]; /* current object per key index (keys sorted by index) */
    struct blob **made;     /* every blob created, kept alive so pointers stay unique */
    size_t n_made;
    uint64_t rec_rv[MAXREC]; /* recorded rvs, increasing */
    struct blob *rec[MAXREC][KEYS];
    size_t n_rec;
};

static void key_name(int i, char *ns, char *name)
{
    snprintf(ns, 8, "ns%d", i / 20);
    snprintf(name, 8, "o%02d", i % 20);
}

static void record(struct model *m, uint64_t rv)
{
    cr_assert_lt(m->n_rec, MAXREC);
    m->rec_rv[m->n_rec] = rv;
    memcpy(m->rec[m->n_rec], m->cur, sizeof(m->cur));
    m->n_rec++;
}

/*
 * <s> holds exactly the model row <row>: iterated in key order, by index (snapshot_at) and
 * by rank, pointer for pointer.
 */
static void check_state(const struct snapshot *s, struct blob *const *row, uint64_t q)
{
    struct store_iter it;
    struct blob *b = snapshot_seek(s, NULL, &it);
    size_t j = 0;

    for (int i = 0; i < KEYS; i++) {
        if (row[i] == NULL) {
            continue;
        }
        cr_assert_lt(j, s->len, "rv %llu: too few items", (unsigned long long)q);
        cr_assert_eq(b, row[i], "rv %llu key %d", (unsigned long long)q, i);
        cr_assert_eq(snapshot_at(s, j), row[i], "rv %llu index %zu", (unsigned long long)q, j);
        cr_assert_eq(snapshot_rank(s, row[i]->key), j + 1);
        b = snapshot_next(&it);
        j++;
    }
    cr_assert_null(b, "rv %llu: extra items", (unsigned long long)q);
    cr_assert_eq(j, s->len, "rv %llu: extra items", (unsigned long long)q);
    cr_assert_null(snapshot_at(s, j));
}

/* Snapshots kept while the writer goes on, checked again at the end. */
struct held {
    struct snapshot *s[256];
    size_t row[256]; /* model row each one must still equal */
    size_t n;
};

/* The model row in force at <q>: the last recorded rv <= q. */
static size_t row_at(const struct model *m, uint64_t q)
{
    size_t r = m->n_rec;

    while (r > 0 && m->rec_rv[r - 1] > q) {
        r--;
    }
    cr_assert_gt(r, 0);
    return r - 1;
}

static void verify_all(struct resource *res, struct model *m, struct held *keep)
{
    struct resource_stats st;

    resource_stats(res, &st);
    for (uint64_t q = st.history_boundary > 3 ? st.history_boundary - 3 : 0; q <= st.rv + 2; q++) {
        struct snapshot *s = NULL;
        int rc = resource_snapshot_at(res, q, &s);
        size_t r;

        if (q > st.rv) {
            cr_assert_eq(rc, -EAGAIN);
            continue;
        }
        if (q < st.history_boundary) {
            cr_assert_eq(rc, -ESTALE, "rv %llu", (unsigned long long)q);
            continue;
        }
        cr_assert_eq(rc, 0, "rv %llu", (unsigned long long)q);
        cr_assert_eq(s->rv, q);
        r = row_at(m, q);
        check_state(s, m->rec[r], q);
        if (q % 97 == 0 && keep->n < 256) {
            keep->s[keep->n] = s;
            keep->row[keep->n++] = r;
            continue;
        }
        snapshot_unref(s);
    }
}

Test(resource, snapshot_at_matches_bruteforce_replay, .timeout = 120)
{
    struct model *m = calloc(1, sizeof(*m));
    struct held *keep = calloc(1, sizeof(*keep));
    struct resource *res = new_res(700);
    uint64_t rv = 1000;

    m->made = calloc(OPS * 2, sizeof(*m->made));
    srand(2024);
    cr_assert_eq(resource_replace(res, NULL, 0, rv, 0), 0);
    record(m, rv);
    for (int op = 1; op <= OPS; op++) {
        int i = rand() % KEYS;
        int what = rand() % 10;
        char ns[8];
        char name[8];
        struct blob *b;

        key_name(i, ns, name);
        rv += 1 + (uint64_t)(rand() % 3);
        if (op == OPS / 2) {
            /* Relist at the current model state: history resets to this rv. */
            struct blob *items[KEYS];
            size_t n = 0;

            for (int k = 0; k < KEYS; k++) {
                if (m->cur[k] != NULL) {
                    items[n++] = m->cur[k];
                }
            }
            cr_assert_eq(resource_replace(res, items, n, rv, 0), 0);
            record(m, rv);
            continue;
        }
        if (what == 0) {
            resource_progress(res, rv);
            record(m, rv);
            continue;
        }
        b = mk(ns, name, rv);
        m->made[m->n_made++] = b;
        if (what <= 3) {
            cr_assert_eq(resource_apply(res, WATCH_DELETED, b, rv, 0), 0);
            m->cur[i] = NULL;
        } else {
            cr_assert_eq(resource_apply(res, what <= 6 ? WATCH_ADDED : WATCH_MODIFIED, b, rv, 0),
                         0);
            m->cur[i] = b;
        }
        record(m, rv);
        if (op % 500 == 0 || op == OPS / 2 + 1) {
            verify_all(res, m, keep);
        }
    }
    verify_all(res, m, keep);
    /* Every state taken along the way is still exactly itself after all the later writes,
     * the relist and the evictions (and outlives the resource). */
    resource_free(res);
    cr_assert_gt(keep->n, 10);
    for (size_t i = 0; i < keep->n; i++) {
        check_state(keep->s[i], m->rec[keep->row[i]], keep->s[i]->rv);
        snapshot_unref(keep->s[i]);
    }
    free(keep);
    for (size_t i = 0; i < m->n_made; i++) {
        cr_assert_eq(atomic_load(&m->made[i]->ref), 1);
        blob_unref(m->made[i]);
    }
    free(m->made);
    free(m);
}

/* ---- dispatch index ----------------------------------------------------------------------- */

/* A pod blob with a spec.nodeName field. */
static struct blob *mk_node(const char *ns, const char *name, const char *node, uint64_t rv)
{
    char rvs[24];
    struct blob_kv f = {"spec.nodeName", node};

    snprintf(rvs, sizeof(rvs), "%llu", (unsigned long long)rv);
    return blob_new(
        rvs, strlen(rvs),
        &(struct blob_meta){
            .ns = ns, .name = name, .rv_str = rvs, .fields = &f, .n_fields = node ? 1 : 0});
}

static void put_node(struct resource *res, enum watch_type t, const char *name, const char *node,
                     uint64_t rv)
{
    struct blob *b = mk_node("default", name, node, rv);

    cr_assert_eq(resource_apply(res, t, b, rv, 0), 0);
    blob_unref(b);
}

Test(resource, idle_scoped_watcher_survives_ring_wrap_and_sees_only_its_events, .timeout = 120)
{
    struct resource *res = new_ready(4, 10);
    struct watcher w;
    struct waker k;
    uint64_t rvs[8];

    winit(&w, &k, res, "a");
    cr_assert_eq(resource_watch_from(res, &w, 10, NULL), 0);
    cr_assert_eq(drain(res, &w, NULL, 0), 0); /* suspended, caught up */
    for (uint64_t rv = 11; rv <= 30; rv++) {  /* 20 events elsewhere wrap a 4-slot ring */
        put(res, WATCH_ADDED, "b", "x", rv);
    }
    cr_assert_eq(atomic_load(&k.calls), 0, "out-of-scope events do not wake it");
    put(res, WATCH_ADDED, "a", "mine", 31);
    cr_assert_eq(atomic_load(&k.calls), 1);
    cr_assert_eq(drain(res, &w, rvs, 8), 1, "not a laggard: it missed nothing in scope");
    cr_assert_eq(rvs[0], 31);
    resource_watch_detach(res, &w);
    resource_free(res);
}

Test(resource, trigger_watchers_woken_only_for_their_value_old_or_new, .timeout = 120)
{
    struct resource *res = new_res(64);
    struct watcher w1, w2, any;
    struct waker k1, k2, ka;
    uint64_t rvs[8];

    resource_set_trigger(res, "spec.nodeName");
    cr_assert_eq(resource_replace(res, NULL, 0, 1, 0), 0);
    winit(&w1, &k1, res, NULL);
    w1.trigger = "n1";
    winit(&w2, &k2, res, NULL);
    w2.trigger = "n2";
    winit(&any, &ka, res, "default"); /* namespace-scoped, no trigger */
    cr_assert_eq(resource_watch_from(res, &w1, 1, NULL), 0);
    cr_assert_eq(resource_watch_from(res, &w2, 1, NULL), 0);
    cr_assert_eq(resource_watch_from(res, &any, 1, NULL), 0);
    drain(res, &w1, NULL, 0);
    drain(res, &w2, NULL, 0);
    drain(res, &any, NULL, 0);

    put_node(res, WATCH_ADDED, "p", "n1", 2);
    cr_assert_eq(atomic_load(&k1.calls), 1);
    cr_assert_eq(atomic_load(&k2.calls), 0);
    cr_assert_eq(atomic_load(&ka.calls), 1);
    cr_assert_eq(drain(res, &w1, rvs, 8), 1);
    cr_assert_eq(drain(res, &any, NULL, 0), 1);

    /* moving p from n1 to n2 concerns both node watchers (DELETED for one, ADDED for the
     * other after filtering) */
    put_node(res, WATCH_MODIFIED, "p", "n2", 3);
    cr_assert_eq(atomic_load(&k1.calls), 2);
    cr_assert_eq(atomic_load(&k2.calls), 1);
    cr_assert_eq(drain(res, &w1, rvs, 8), 1);
    cr_assert_eq(rvs[0], 3);
    cr_assert_eq(drain(res, &w2, rvs, 8), 1, "w2 skipped rv 2, out of its scope");
    cr_assert_eq(rvs[0], 3);

    /* an object without the field matches the trigger value "" only */
    put_node(res, WATCH_ADDED, "q", NULL, 4);
    cr_assert_eq(atomic_load(&k1.calls), 2);
    cr_assert_eq(atomic_load(&k2.calls), 1);
    resource_watch_detach(res, &w1);
    resource_watch_detach(res, &w2);
    resource_watch_detach(res, &any);
    resource_free(res);
}

#define MANY_NODES 10000

Test(resource, ten_thousand_node_watchers_one_event_one_wake, .timeout = 120)
{
    struct resource *res = new_res(64);
    struct watcher *ws = calloc(MANY_NODES, sizeof(*ws));
    struct waker *ks = calloc(MANY_NODES, sizeof(*ks));
    char(*names)[16] = calloc(MANY_NODES, sizeof(*names));
    int total = 0;

    resource_set_trigger(res, "spec.nodeName");
    cr_assert_eq(resource_replace(res, NULL, 0, 1, 0), 0);
    for (int i = 0; i < MANY_NODES; i++) {
        snprintf(names[i], sizeof(names[i]), "node-%d", i);
        winit(&ws[i], &ks[i], NULL, NULL);
        ws[i].trigger = names[i];
        cr_assert_eq(resource_watch_from(res, &ws[i], 1, NULL), 0);
        cr_assert_eq(drain(res, &ws[i], NULL, 0), 0);
    }
    put_node(res, WATCH_ADDED, "p", "node-4242", 2);
    for (int i = 0; i < MANY_NODES; i++) {
        total += atomic_load(&ks[i].calls);
    }
    cr_assert_eq(total, 1, "exactly the one watcher of node-4242 is visited and woken");
    cr_assert_eq(atomic_load(&ks[4242].calls), 1);
    for (int i = 0; i < MANY_NODES; i++) {
        resource_watch_detach(res, &ws[i]);
    }
    resource_free(res);
    free(ws);
    free(ks);
    free(names);
}

Test(resource, tick_wake_skips_out_of_scope_events, .timeout = 120)
{
    struct resource *res = new_ready(64, 1);
    struct watcher w;
    struct waker k;

    winit(&w, &k, res, "a");
    cr_assert_eq(resource_watch_from(res, &w, 1, NULL), 0);
    cr_assert_eq(drain(res, &w, NULL, 0), 0);
    put(res, WATCH_ADDED, "b", "x", 2);
    put(res, WATCH_ADDED, "b", "y", 3);
    resource_watch_set_due(res, &w, 5);
    cr_assert_eq(resource_tick(res, 10, NULL, NULL), 1);
    cr_assert_eq(drain(res, &w, NULL, 0), 0, "nothing in scope to deliver after a timer wake");
    put(res, WATCH_ADDED, "a", "z", 4);
    cr_assert_eq(drain(res, &w, NULL, 0), 1);
    resource_watch_detach(res, &w);
    resource_free(res);
}

Test(resource, idle_rv_only_when_nothing_pending, .timeout = 120)
{
    struct resource *res = new_ready(64, 5);
    struct watcher w;
    struct waker k;
    uint64_t rv = 0;

    winit(&w, &k, res, NULL);
    cr_assert_eq(resource_watch_from(res, &w, 5, NULL), 0);
    cr_assert(resource_watch_idle_rv(res, &w, &rv));
    cr_assert_eq(rv, 5);
    put(res, WATCH_ADDED, "a", "x", 6);
    cr_assert_not(resource_watch_idle_rv(res, &w, &rv), "an event is pending: no bookmark");
    cr_assert_eq(drain(res, &w, NULL, 0), 1);
    resource_progress(res, 9);
    cr_assert(resource_watch_idle_rv(res, &w, &rv));
    cr_assert_eq(rv, 9, "progress moves the bookmark rv");
    resource_watch_detach(res, &w);
    resource_free(res);
}

/* A pod written at <t_ms> on the ring's clock. */
static void put_at(struct resource *res, const char *name, uint64_t rv, int64_t t_ms)
{
    struct blob *b = mk("ns", name, rv);

    cr_assert_eq(resource_apply(res, WATCH_ADDED, b, rv, t_ms), 0);
    blob_unref(b);
}

/* --watch-max-lag while a watch sends its initial events: the oldest live event waiting. */
Test(resource, oldest_waiting_event_time, .timeout = 120)
{
    struct resource *res = new_ready(4, 1);
    struct watcher w;
    struct waker k;
    int64_t t = 0;

    winit(&w, &k, res, NULL);
    cr_assert_eq(resource_watch_now(res, &w, NULL, NULL), 0);
    cr_assert_not(resource_watch_oldest_ms(res, &w, &t), "nothing waits yet");
    put_at(res, "a", 2, 1000);
    put_at(res, "b", 3, 2000);
    cr_assert(resource_watch_oldest_ms(res, &w, &t));
    cr_assert_eq(t, 1000, "the oldest waiting event's arrival, not the newest's");
    cr_assert_eq(drain(res, &w, NULL, 0), 2);
    cr_assert_not(resource_watch_oldest_ms(res, &w, &t), "all taken: nothing waits");
    for (uint64_t rv = 4; rv <= 12; rv++) { /* a 4-event history: rv 4 leaves it */
        put_at(res, "c", rv, 3000 + (int64_t)rv);
    }
    cr_assert(resource_watch_oldest_ms(res, &w, &t));
    cr_assert_eq(t, INT64_MIN, "its oldest event already left the history");
    resource_watch_detach(res, &w);
    cr_assert_not(resource_watch_oldest_ms(res, &w, &t), "a detached watcher has nothing waiting");
    resource_free(res);
}

Test(resource, take_never_sets_suspended, .timeout = 120)
{
    struct resource *res = new_ready(64, 1);
    struct watcher w;
    struct waker k;
    struct ring_event ev[4];

    winit(&w, &k, res, NULL);
    cr_assert_eq(resource_watch_from(res, &w, 1, NULL), 0);
    cr_assert_eq(resource_watch_take(res, &w, ev, 4), 0);
    cr_assert_not(w.suspended, "a reader that keeps running owns no wake-up");
    put(res, WATCH_ADDED, "a", "x", 2);
    cr_assert_eq(atomic_load(&k.calls), 0, "nobody to wake: the reader is running");
    cr_assert_eq(resource_watch_take(res, &w, ev, 4), 1);
    cr_assert_eq(resource_watch_next(res, &w, ev, 4), 0);
    cr_assert(w.suspended);
    resource_watch_detach(res, &w);
    resource_free(res);
}

/* ---- sleep lists: an event visits only the suspended watchers of its scope ---------------- */

/* One dispatch list: unscoped, a namespace bucket, or a trigger bucket. */
struct scope {
    const char *ns;
    const char *trigger;
};

static const struct scope SCOPES[] = {{NULL, NULL}, {"a", NULL}, {NULL, "n1"}};

static struct resource *new_scoped_ready(void)
{
    struct resource *res = new_res(256);

    resource_set_trigger(res, "spec.nodeName");
    cr_assert_eq(resource_replace(res, NULL, 0, 1, 0), 0);
    return res;
}

/* Attaches <w> in <sc> at head; it is running (not suspended) until it drains. */
static void attach_in(struct resource *res, struct watcher *w, struct waker *k,
                      const struct scope *sc)
{
    winit(w, k, res, sc->ns);
    w->trigger = sc->trigger;
    cr_assert_eq(resource_watch_now(res, w, NULL, NULL), 0);
}

/* An event in every scope of SCOPES: namespace "a", node "n1". */
static void put_in_scope(struct resource *res, uint64_t rv)
{
    struct blob *b = mk_node("a", "p", "n1", rv);

    cr_assert_eq(resource_apply(res, WATCH_MODIFIED, b, rv, 0), 0);
    blob_unref(b);
}

/* An event in no scope of SCOPES but the unscoped list. */
static void put_elsewhere(struct resource *res, uint64_t rv)
{
    struct blob *b = mk_node("b", "q", "n2", rv);

    cr_assert_eq(resource_apply(res, WATCH_MODIFIED, b, rv, 0), 0);
    blob_unref(b);
}

#define SLEEP_N 8

Test(resource, sleep_list_wakes_suspended_once_and_never_running, .timeout = 120)
{
    for (size_t s = 0; s < sizeof(SCOPES) / sizeof(SCOPES[0]); s++) {
        struct resource *res = new_scoped_ready();
        struct watcher ws[SLEEP_N];
        struct waker ks[SLEEP_N];
        uint64_t rv = 2;

        for (int i = 0; i < SLEEP_N; i++) {
            attach_in(res, &ws[i], &ks[i], &SCOPES[s]);
        }
        for (int i = 0; i < SLEEP_N; i += 2) { /* the even ones suspend */
            cr_assert_eq(drain(res, &ws[i], NULL, 0), 0);
        }
        put_in_scope(res, rv++);
        for (int i = 0; i < SLEEP_N; i++) {
            cr_assert_eq(atomic_load(&ks[i].calls), i % 2 == 0 ? 1 : 0, "scope %zu w%d", s, i);
            cr_assert_not(ws[i].suspended);
        }
        /* The odd ones catch up and suspend (twice: no second link, no second wake); the
         * even ones keep running with an event pending. */
        for (int i = 1; i < SLEEP_N; i += 2) {
            cr_assert_eq(drain(res, &ws[i], NULL, 0), 1);
            cr_assert_eq(drain(res, &ws[i], NULL, 0), 0);
        }
        put_in_scope(res, rv++);
        put_in_scope(res, rv++);
        for (int i = 0; i < SLEEP_N; i++) {
            cr_assert_eq(atomic_load(&ks[i].calls), 1, "scope %zu w%d: once in all", s, i);
        }
        /* Suspend, be woken, suspend again, be woken by the next event: one wake each. */
        for (int round = 0; round < 5; round++) {
            cr_assert_gt(drain(res, &ws[0], NULL, 0), 0);
            cr_assert(ws[0].suspended);
            if (SCOPES[s].ns != NULL || SCOPES[s].trigger != NULL) {
                put_elsewhere(res, rv++); /* out of scope: still asleep */
                cr_assert(ws[0].suspended, "scope %zu", s);
            }
            put_in_scope(res, rv++);
            cr_assert_eq(atomic_load(&ks[0].calls), 2 + round, "scope %zu round %d", s, round);
        }
        for (int i = 1; i < SLEEP_N; i++) {
            cr_assert_eq(atomic_load(&ks[i].calls), 1, "scope %zu w%d: never while running", s, i);
        }
        for (int i = 0; i < SLEEP_N; i++) {
            resource_watch_detach(res, &ws[i]);
        }
        resource_free(res);
    }
}

Test(resource, detached_killed_and_ticked_watchers_leave_no_sleep_link, .timeout = 120)
{
    for (size_t s = 0; s < sizeof(SCOPES) / sizeof(SCOPES[0]); s++) {
        struct resource *res = new_scoped_ready();
        struct watcher *ws[SLEEP_N];
        struct waker ks[SLEEP_N];
        uint64_t rv = 2;

        for (int i = 0; i < SLEEP_N; i++) {
            ws[i] = malloc(sizeof(*ws[i]));
            attach_in(res, ws[i], &ks[i], &SCOPES[s]);
            cr_assert_eq(drain(res, ws[i], NULL, 0), 0);
        }
        /* Sleep lists are newest first: detach its head (7), a middle one (4), its tail (0),
         * and free them, so a stale link is a use after free (ASan) or a BUG_ON. */
        for (int i = 0; i < SLEEP_N; i += 4) {
            resource_watch_detach(res, ws[i]);
            free(ws[i]);
            ws[i] = NULL;
        }
        resource_watch_detach(res, ws[SLEEP_N - 1]);
        free(ws[SLEEP_N - 1]);
        ws[SLEEP_N - 1] = NULL;
        resource_watch_kill(res, ws[1]); /* woken once, ended */
        resource_watch_set_due(res, ws[2], 5);
        cr_assert_eq(resource_tick(res, 10, NULL, NULL), 1); /* ws[2] woken for a bookmark */
        cr_assert_eq(atomic_load(&ks[1].calls), 1);
        cr_assert_eq(atomic_load(&ks[2].calls), 1);
        put_in_scope(res, rv++);
        for (int i = 0; i < SLEEP_N; i++) {
            if (ws[i] != NULL) {
                cr_assert_eq(atomic_load(&ks[i].calls), 1, "scope %zu w%d", s, i);
            }
        }
        cr_assert_eq(drain(res, ws[1], NULL, 0), -EPIPE);
        /* Empty the list and the bucket, then attach anew in the same scope. */
        for (int i = 0; i < SLEEP_N; i++) {
            if (ws[i] != NULL) {
                resource_watch_detach(res, ws[i]);
                free(ws[i]);
                ws[i] = NULL;
            }
        }
        put_in_scope(res, rv++); /* nobody left to visit */
        ws[0] = malloc(sizeof(*ws[0]));
        attach_in(res, ws[0], &ks[0], &SCOPES[s]);
        cr_assert_eq(drain(res, ws[0], NULL, 0), 0);
        put_in_scope(res, rv++);
        cr_assert_eq(atomic_load(&ks[0].calls), 1, "scope %zu: a fresh list", s);
        cr_assert_eq(drain(res, ws[0], NULL, 0), 1);
        resource_watch_detach(res, ws[0]);
        free(ws[0]);
        resource_free(res);
    }
}

Test(resource, relist_ends_suspended_and_running_in_every_list, .timeout = 120)
{
    struct resource *res = new_scoped_ready();
    struct watcher sl[3], run[3];
    struct waker ksl[3], krun[3];

    for (int s = 0; s < 3; s++) {
        attach_in(res, &sl[s], &ksl[s], &SCOPES[s]);
        attach_in(res, &run[s], &krun[s], &SCOPES[s]);
        cr_assert_eq(drain(res, &sl[s], NULL, 0), 0);
    }
    cr_assert_eq(resource_replace(res, NULL, 0, 50, 0), 0);
    put_in_scope(res, 51); /* the ended ones are off their sleep lists: no second wake */
    for (int s = 0; s < 3; s++) {
        cr_assert_eq(atomic_load(&ksl[s].calls), 1, "scope %d", s);
        cr_assert_eq(atomic_load(&krun[s].calls), 0, "scope %d", s);
        cr_assert_eq(drain(res, &sl[s], NULL, 0), -EPIPE);
        cr_assert_eq(drain(res, &run[s], NULL, 0), -EPIPE);
    }
    put_in_scope(res, 52);
    for (int s = 0; s < 3; s++) {
        cr_assert_eq(atomic_load(&ksl[s].calls), 1, "scope %d", s);
        cr_assert_eq(atomic_load(&krun[s].calls), 0, "scope %d", s);
        resource_watch_detach(res, &sl[s]);
        resource_watch_detach(res, &run[s]);
    }
    resource_free(res);
}

/* ---- why a watch ended (the request log's reason) ------------------------------------------ */

Test(resource, a_watch_ended_by_the_cache_says_why)
{
    struct resource *res = new_ready(4, 10);
    struct watcher lag, rel, kil, shut;
    struct waker k1, k2, k3, k4;
    struct ring_event ev[2];

    winit(&lag, &k1, res, NULL);
    winit(&rel, &k2, res, NULL);
    winit(&kil, &k3, res, NULL);
    winit(&shut, &k4, res, NULL);
    cr_assert_eq(resource_watch_from(res, &lag, 10, NULL), 0);
    cr_assert_eq(resource_watch_from(res, &kil, 10, NULL), 0);
    put(res, WATCH_ADDED, "ns", "o", 11);
    cr_assert_eq(resource_watch_next(res, &lag, ev, 1), 1); /* then falls behind */
    for (uint64_t rv = 12; rv <= 20; rv++) {
        put(res, WATCH_ADDED, "ns", "o", rv);
    }
    cr_assert_eq(resource_watch_next(res, &lag, ev, 2), -EPIPE);
    cr_assert_eq(resource_watch_end_reason(res, &lag), WATCH_END_EXPIRED);
    resource_watch_kill(res, &kil);
    (void)drain(res, &kil, NULL, 0);
    cr_assert_eq(resource_watch_end_reason(res, &kil), WATCH_END_EXPIRED,
                 "its cursor is below the tail too: the history outran it first");
    cr_assert_eq(resource_watch_from(res, &rel, 20, NULL), 0);
    cr_assert_eq(drain(res, &rel, NULL, 0), 0);
    cr_assert_eq(resource_replace(res, NULL, 0, 30, 0), 0); /* a relist */
    cr_assert_eq(resource_watch_next(res, &rel, ev, 2), -EPIPE);
    cr_assert_eq(resource_watch_end_reason(res, &rel), WATCH_END_RELIST);
    cr_assert_eq(resource_watch_from(res, &shut, 30, NULL), 0);
    resource_close_all(res);
    cr_assert_eq(resource_watch_next(res, &shut, ev, 2), -EPIPE);
    cr_assert_eq(resource_watch_end_reason(res, &shut), WATCH_END_SHUTDOWN);
    resource_watch_detach(res, &lag);
    resource_watch_detach(res, &rel);
    resource_watch_detach(res, &kil);
    resource_watch_detach(res, &shut);
    resource_free(res);
}

Test(resource, a_killed_watch_is_closed_by_its_owner)
{
    struct resource *res = new_ready(8, 10);
    struct watcher w;
    struct waker k;
    struct ring_event ev[2];

    winit(&w, &k, res, NULL);
    cr_assert_eq(resource_watch_from(res, &w, 10, NULL), 0);
    resource_watch_kill(res, &w);
    cr_assert_eq(resource_watch_next(res, &w, ev, 2), -EPIPE);
    cr_assert_eq(resource_watch_end_reason(res, &w), WATCH_END_CLOSED);
    resource_watch_detach(res, &w);
    resource_free(res);
}

Test(resource, stats_give_when_the_oldest_event_held_arrived)
{
    struct resource *res = new_ready(4, 10);
    struct resource_stats st;
    struct blob *b;

    resource_stats(res, &st);
    cr_assert_eq(st.history_oldest_ms, 0, "empty history");
    for (uint64_t rv = 11; rv <= 16; rv++) { /* 6 events in a ring of 4: 11 and 12 leave */
        b = mk("ns", "o", rv);
        cr_assert_eq(resource_apply(res, WATCH_ADDED, b, rv, (int64_t)rv * 1000), 0);
        blob_unref(b);
    }
    resource_stats(res, &st);
    cr_assert_eq(st.history_oldest_ms, 13000);
    cr_assert_eq(st.history_oldest_rv, 13);
    cr_assert_eq(st.history_newest_rv, 16);
    cr_assert_eq(resource_replace(res, NULL, 0, 20, 0), 0);
    resource_stats(res, &st);
    cr_assert_eq(st.history_oldest_ms, 0, "a relist resets the history");
    cr_assert_eq(st.history_oldest_rv, 0);
    cr_assert_eq(st.history_newest_rv, 0);
    resource_free(res);
}

/* What the lag sweep saw: the watchers it was called for, with their t_ms and closed flag. */
struct lag_seen {
    int calls;
    struct watcher *w[4];
    int64_t t[4];
    bool closed[4];
    bool close_them;
};

static bool lag_cb(struct watcher *w, int64_t t_ms, void *ctx)
{
    struct lag_seen *ls = ctx;

    if (ls->calls < 4) {
        ls->w[ls->calls] = w;
        ls->t[ls->calls] = t_ms;
        ls->closed[ls->calls] = w->closed;
    }
    ls->calls++;
    return ls->close_them;
}

/* resource_sweep_running: only running watchers with an event waiting (its append time), or
 * closed ones (t_ms 0); a true answer closes the watcher, whose next call gets -EPIPE. */
Test(resource, lag_sweep_sees_running_watchers_with_events_waiting)
{
    struct resource *res = new_ready(16, 10);
    struct watcher run, idle, asleep;
    struct waker k1, k2, k3;
    struct ring_event ev[4];
    struct lag_seen ls = {0};

    winit(&run, &k1, res, NULL);
    winit(&idle, &k2, res, NULL);
    winit(&asleep, &k3, res, NULL);
    cr_assert_eq(resource_watch_from(res, &run, 10, NULL), 0);
    cr_assert_eq(resource_watch_from(res, &idle, 10, NULL), 0);
    cr_assert_eq(resource_watch_from(res, &asleep, 10, NULL), 0);
    cr_assert_eq(resource_watch_next(res, &asleep, ev, 4), 0); /* suspended: nothing pending */
    {
        struct blob *b = mk("ns", "o", 11);

        cr_assert_eq(resource_apply(res, WATCH_ADDED, b, 11, 777), 0);
        blob_unref(b);
    }
    /* idle has taken the event: running, nothing waits for it */
    cr_assert_eq(resource_watch_take(res, &idle, ev, 4), 1);
    /* asleep was woken by the event (no longer suspended): it waits too */
    cr_assert_eq(resource_sweep_running(res, lag_cb, &ls), 0);
    cr_assert_eq(ls.calls, 2, "run and the woken one, not idle");
    for (int i = 0; i < 2; i++) {
        cr_assert(ls.w[i] == &run || ls.w[i] == &asleep);
        cr_assert_eq(ls.t[i], 777);
        cr_assert_not(ls.closed[i]);
    }
    ls = (struct lag_seen){.close_them = true};
    cr_assert_eq(resource_sweep_running(res, lag_cb, &ls), 2);
    cr_assert_eq(resource_watch_next(res, &run, ev, 4), -EPIPE);
    /* closed, still attached: called again with t_ms 0, not counted again */
    ls = (struct lag_seen){.close_them = true};
    cr_assert_eq(resource_sweep_running(res, lag_cb, &ls), 0);
    cr_assert_geq(ls.calls, 1);
    cr_assert(ls.closed[0] && ls.t[0] == 0);
    resource_watch_detach(res, &run);
    resource_watch_detach(res, &idle);
    resource_watch_detach(res, &asleep);
    resource_free(res);
}

/* resource_watcher_lags: events from the cursor to the newest, the age of the oldest pending
 * one, caught up (0) when suspended or past the newest; largest first; capped. */
Test(resource, watcher_lags_give_each_watchers_pending_events_largest_first)
{
    struct resource *res = new_ready(64, 10);
    struct watcher w[5];
    struct waker k[5];
    struct ring_event ev[8];
    struct watcher_lag out[8];
    struct watcher_lags sum;

    resource_watcher_lags(res, 0, NULL, 0, &sum);
    cr_assert_eq(sum.count, 0);
    cr_assert_eq(sum.n, 0);
    for (int i = 0; i < 5; i++) {
        winit(&w[i], &k[i], res, NULL);
    }
    for (uint64_t rv = 11; rv <= 20; rv++) {
        put_at(res, "o", rv, (int64_t)rv * 1000); /* rv 11 at 11 s ... rv 20 at 20 s */
    }
    cr_assert_eq(resource_watch_from(res, &w[0], 10, NULL), 0); /* all 10 pending */
    cr_assert_eq(resource_watch_from(res, &w[1], 15, NULL), 0); /* 16..20: 5 */
    cr_assert_eq(resource_watch_from(res, &w[2], 10, NULL), 0);
    cr_assert_eq(resource_watch_take(res, &w[2], ev, 8), 8); /* 19, 20 left: 2 */
    cr_assert_eq(resource_watch_from(res, &w[3], 20, NULL), 0);
    cr_assert_eq(resource_watch_next(res, &w[3], ev, 8), 0);    /* suspended: caught up */
    cr_assert_eq(resource_watch_from(res, &w[4], 30, NULL), 0); /* a future rv: nothing yet */

    resource_watcher_lags(res, 25000, out, 8, &sum);
    cr_assert_eq(sum.count, 5);
    cr_assert_eq(sum.n, 5);
    cr_assert_eq(sum.max_events, 10);
    cr_assert_eq(sum.max_age_ms, 14000, "rv 11 appended at 11 s, now 25 s");
    cr_assert_eq(out[0].events, 10);
    cr_assert_eq(out[0].age_ms, 14000);
    cr_assert_eq(out[1].events, 5);
    cr_assert_eq(out[1].age_ms, 9000, "rv 16 at 16 s");
    cr_assert_eq(out[2].events, 2);
    cr_assert_eq(out[2].age_ms, 6000, "rv 19 at 19 s");
    cr_assert_eq(out[3].events, 0);
    cr_assert_eq(out[3].age_ms, 0);
    cr_assert_eq(out[4].events, 0);
    cr_assert_eq(out[4].age_ms, 0);

    /* capped: the 2 largest of 5, the maxima still over all */
    memset(out, 0, sizeof(out));
    resource_watcher_lags(res, 25000, out, 2, &sum);
    cr_assert_eq(sum.count, 5);
    cr_assert_eq(sum.n, 2);
    cr_assert_eq(sum.max_events, 10);
    cr_assert_eq(out[0].events, 10);
    cr_assert_eq(out[1].events, 5);
    cr_assert_eq(out[2].events, 0, "nothing written past the cap");

    /* the reader catches up; a detached one is gone */
    cr_assert_eq(resource_watch_take(res, &w[0], ev, 8), 8);
    cr_assert_eq(resource_watch_take(res, &w[0], ev, 8), 2);
    resource_watch_detach(res, &w[1]);
    resource_watcher_lags(res, 25000, out, 8, &sum);
    cr_assert_eq(sum.count, 4);
    cr_assert_eq(sum.max_events, 2);
    cr_assert_eq(out[0].events, 2);
    cr_assert_eq(out[1].events, 0);
    /* two more: the suspended one is woken and waits for them, the one from rv 30 does not */
    put_at(res, "o", 21, 21000);
    put_at(res, "o", 22, 22000);
    resource_watcher_lags(res, 25000, out, 8, &sum);
    cr_assert_eq(sum.count, 4);
    cr_assert_eq(out[0].events, 4, "w2: 19..22");
    cr_assert_eq(out[1].events, 2);
    cr_assert_eq(out[1].age_ms, 4000);
    cr_assert_eq(out[2].events, 2);
    cr_assert_eq(out[3].events, 0, "w4 skips the events up to rv 30");
    for (int i = 0; i < 5; i++) {
        resource_watch_detach(res, &w[i]);
    }
    resource_watcher_lags(res, 25000, out, 8, &sum);
    cr_assert_eq(sum.count, 0);
    resource_free(res);
}

/* A watcher whose pending events left the ring: every event up to the newest still counts, its
 * age is bounded by the oldest event held. */
Test(resource, watcher_lags_count_events_that_left_the_history)
{
    struct resource *res = new_ready(4, 10);
    struct watcher w;
    struct waker k;
    struct watcher_lag out[1];
    struct watcher_lags sum;

    winit(&w, &k, res, NULL);
    cr_assert_eq(resource_watch_from(res, &w, 10, NULL), 0);
    for (uint64_t rv = 11; rv <= 16; rv++) { /* 11 and 12 leave the ring of 4 */
        put_at(res, "o", rv, (int64_t)rv * 1000);
    }
    resource_watcher_lags(res, 20000, out, 1, &sum);
    cr_assert_eq(sum.n, 1);
    cr_assert_eq(out[0].events, 6);
    cr_assert_eq(out[0].age_ms, 7000, "rv 13, the oldest held, at 13 s");
    resource_watch_detach(res, &w);
    resource_free(res);
}
