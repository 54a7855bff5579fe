/*
 * test_resource_mt.c - one writer, many readers, real threads (run it under TSan too).
 *
 * Each reader behaves like the HTTP watch handler: pull with resource_watch_next; on 0 it
 * "suspends" by waiting on its own semaphore, which its wake function posts. A reader whose
 * wait times out while events were pending has lost a wake-up, which fails the test; every
 * reader must see every rv (of its scope) in order, exactly once. Also: snapshots (current
 * and at older rvs) taken, checked against the known write pattern and released on other
 * threads while the writer copies paths, and freshness waiters released by another thread's
 * progress. Every loop is bounded by a deadline.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/blob.h"
#include "cache/resource.h"
#include "cache/snapshot.h"

#include "tests/support/tsan_boxfort.h"

enum { EVENTS = 20000, READERS = 8, NS = 4, BATCH = 64 };

#define LIST_RV 1000u
#define DEADLINE_MS 60000
#define SUSPEND_MS 2000

struct reader {
    struct resource *res;
    struct watcher w;
    sem_t sem;
    const char *ns;     /* scope, or NULL for every namespace */
    unsigned seed;      /* picks the attach delay */
    bool early;         /* attaches at once; the writer starts after it parked */
    atomic_bool parked; /* has suspended at least once */
    atomic_int wakes;
    uint64_t expect; /* next rv this reader must see */
    uint64_t step;   /* distance between the rvs it must see */
    size_t seen;
    int rc; /* 0, or why it stopped */
    char why[160];
};

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *ns_of(uint64_t rv)
{
    static const char *names[NS] = {"ns0", "ns1", "ns2", "ns3"};

    return names[(rv - LIST_RV) % NS];
}

static void wake_sem(void *ctx)
{
    struct reader *r = ctx;

    atomic_fetch_add(&r->wakes, 1);
    sem_post(&r->sem);
}

/* Waits up to SUSPEND_MS for a wake; returns false on timeout. */
static bool suspend(struct reader *r)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += SUSPEND_MS / 1000;
    while (sem_timedwait(&r->sem, &ts) == -1) {
        if (errno != EINTR) {
            return false;
        }
    }
    return true;
}

static void fail(struct reader *r, int rc, const char *fmt, unsigned long long a,
                 unsigned long long b)
{
    r->rc = rc;
    snprintf(r->why, sizeof(r->why), fmt, a, b);
}

/* Checks a batch; returns false (and records why) on the first out-of-order rv. */
static bool check(struct reader *r, const struct ring_event *ev, ssize_t n)
{
    for (ssize_t i = 0; i < n; i++) {
        if (r->ns != NULL && strcmp(ev[i].obj->ns, r->ns) != 0) {
            continue; /* the handler's own filter */
        }
        if (ev[i].rv != r->expect) {
            fail(r, -EINVAL, "got rv %llu, expected %llu", ev[i].rv, r->expect);
            return false;
        }
        r->expect += r->step;
        r->seen++;
    }
    return true;
}

static void *reader_main(void *p)
{
    struct reader *r = p;
    struct ring_event ev[BATCH];
    int64_t deadline = mono_ms() + DEADLINE_MS;
    struct timespec delay = {0, (long)(r->seed % 20) * 1000000L};
    uint64_t last = LIST_RV + EVENTS;

    if (!r->early) {
        nanosleep(&delay, NULL); /* attach mid-stream: replay, then follow */
    }
    if (resource_watch_from(r->res, &r->w, LIST_RV, NULL) != 0) {
        fail(r, -EAGAIN, "attach failed %llu%llu", 0, 0);
        return NULL;
    }
    while (r->expect <= last) {
        ssize_t n = resource_watch_next(r->res, &r->w, ev, BATCH);
        bool ok;

        if (n < 0) {
            fail(r, (int)n, "watch ended (%lld) at rv %llu", (unsigned long long)n, r->expect);
            break;
        }
        ok = check(r, ev, n);
        if (!ok) {
            break;
        }
        if (mono_ms() > deadline) {
            fail(r, -ETIMEDOUT, "deadline at rv %llu (seen %llu)", r->expect, r->seen);
            break;
        }
        if (n == 0) {
            atomic_store(&r->parked, true);
        }
        if (n == 0 && !suspend(r)) {
            /* Nobody woke us. That is only fine if there really was nothing to read. */
            n = resource_watch_next(r->res, &r->w, ev, BATCH);
            if (n > 0) {
                fail(r, -EDEADLK, "lost wake-up at rv %llu (%llu pending)", r->expect,
                     (unsigned long long)n);
                break;
            }
        }
    }
    resource_watch_detach(r->res, &r->w);
    return NULL;
}

struct writer {
    struct resource *res;
    struct reader *wait_for; /* readers whose early ones must park first; may be NULL */
    int rc;
};

/* Waits (bounded) until every early reader has suspended once. */
static void wait_parked(struct reader *rs)
{
    int64_t deadline = mono_ms() + 10000;

    for (int k = 0; k < READERS && mono_ms() < deadline; k++) {
        while (rs[k].early && !atomic_load(&rs[k].parked) && mono_ms() < deadline) {
            struct timespec d = {0, 1000000L};

            nanosleep(&d, NULL);
        }
    }
}

/* Applies the event at <rv> (object o<rv % 97> in ns_of(rv)). */
static int apply_one(struct resource *res, uint64_t rv)
{
    char name[16];
    char rvs[24];
    struct blob *b;
    int rc;

    snprintf(name, sizeof(name), "o%llu", (unsigned long long)(rv % 97));
    snprintf(rvs, sizeof(rvs), "%llu", (unsigned long long)rv);
    b = blob_new(rvs, strlen(rvs),
                 &(struct blob_meta){.ns = ns_of(rv), .name = name, .rv_str = rvs});
    rc = resource_apply(res, rv % 3 ? WATCH_MODIFIED : WATCH_ADDED, b, rv, (int64_t)rv);
    blob_unref(b);
    return rc;
}

static void *writer_main(void *p)
{
    struct writer *wr = p;
    struct timespec pause = {0, 50000L};

    if (wr->wait_for != NULL) {
        wait_parked(wr->wait_for);
    }
    for (uint64_t i = 1; i <= EVENTS; i++) {
        wr->rc = apply_one(wr->res, LIST_RV + i);
        if (wr->rc != 0) {
            break;
        }
        /* Let readers catch up now and then, so they suspend and get woken mid-stream. */
        if (wr->wait_for != NULL && i % 200 == 0) {
            nanosleep(&pause, NULL);
        }
    }
    return NULL;
}

struct fresh_waiter {
    struct resource *res;
    int rc;
};

static void *fresh_main(void *p)
{
    struct fresh_waiter *f = p;

    f->rc = resource_wait_fresh(f->res, LIST_RV + EVENTS, DEADLINE_MS, NULL);
    return NULL;
}

/* Walks the watchers' lags (the /debug/resources report) while readers attach, read and
 * detach: every answer must be consistent. A small array, so the cap is exercised. */
struct lag_walker {
    struct resource *res;
    atomic_bool stop;
    size_t walks;
    int rc;
    char why[160];
};

static void *lag_walker_main(void *p)
{
    struct lag_walker *lw = p;
    int64_t deadline = mono_ms() + DEADLINE_MS;

    while (!atomic_load(&lw->stop) && mono_ms() < deadline) {
        struct watcher_lag out[3];
        struct watcher_lags sum;

        resource_watcher_lags(lw->res, (int64_t)(LIST_RV + EVENTS), out, 3, &sum);
        lw->walks++;
        if (sum.count > READERS || sum.n != (sum.count < 3 ? sum.count : 3) ||
            sum.max_events > EVENTS || (sum.n > 0 && out[0].events != sum.max_events)) {
            snprintf(lw->why, sizeof(lw->why), "count %llu n %zu max %llu",
                     (unsigned long long)sum.count, sum.n, (unsigned long long)sum.max_events);
            lw->rc = -EINVAL;
            break;
        }
        for (size_t i = 1; i < sum.n; i++) {
            if (out[i].events > out[i - 1].events) {
                snprintf(lw->why, sizeof(lw->why), "not largest first at %zu", i);
                lw->rc = -EINVAL;
                return NULL;
            }
        }
    }
    return NULL;
}

/* Runs one writer and READERS readers; <scoped> gives reader k the scope ns(k % NS). */
static void run(bool scoped)
{
    struct resource *res =
        resource_new("pods", &(struct ring_opts){.min_cap = 256, .max_cap = 32768, .fresh_ms = 0});
    struct reader *rs = calloc(READERS, sizeof(*rs));
    struct fresh_waiter fw[2] = {{.res = res}, {.res = res}};
    struct resource_stats st;
    struct writer wr = {.res = res, .wait_for = rs};
    pthread_t rt[READERS];
    pthread_t wt;
    pthread_t ft[2];
    struct lag_walker lw = {.res = res};
    pthread_t lt;

    cr_assert_eq(resource_replace(res, NULL, 0, LIST_RV, 0), 0);
    cr_assert_eq(pthread_create(&lt, NULL, lag_walker_main, &lw), 0);
    for (int k = 0; k < READERS; k++) {
        struct reader *r = &rs[k];

        r->res = res;
        r->seed = (unsigned)k * 7919u + 1;
        r->early = k % 2 == 0;
        cr_assert_eq(sem_init(&r->sem, 0, 0), 0);
        r->w.wake = wake_sem;
        r->w.wake_ctx = r;
        r->w.kind = WATCHER_STREAM;
        r->expect = LIST_RV + 1;
        r->step = 1;
        if (scoped) {
            r->ns = ns_of(LIST_RV + 1 + (uint64_t)(k % NS));
            r->w.ns = r->ns;
            r->expect = LIST_RV + 1 + (uint64_t)(k % NS);
            r->step = NS;
        }
        cr_assert_eq(pthread_create(&rt[k], NULL, reader_main, r), 0);
    }
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(pthread_create(&ft[i], NULL, fresh_main, &fw[i]), 0);
    }
    cr_assert_eq(pthread_create(&wt, NULL, writer_main, &wr), 0);
    pthread_join(wt, NULL);
    for (int k = 0; k < READERS; k++) {
        pthread_join(rt[k], NULL);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(ft[i], NULL);
        cr_expect_eq(fw[i].rc, 0, "freshness waiter %d", i);
    }
    atomic_store(&lw.stop, true);
    pthread_join(lt, NULL);
    cr_expect_eq(lw.rc, 0, "lag walker: %s", lw.why);
    cr_expect_gt(lw.walks, 0);
    cr_assert_eq(wr.rc, 0);
    for (int k = 0; k < READERS; k++) {
        struct reader *r = &rs[k];

        cr_expect_eq(r->rc, 0, "reader %d: %s", k, r->why);
        cr_expect_eq(r->seen, scoped ? EVENTS / NS : EVENTS, "reader %d saw %zu", k, r->seen);
        /* Parked before the first event: the protocol had to wake it at least once. */
        if (r->early) {
            cr_expect_gt(atomic_load(&r->wakes), 0, "reader %d never woken", k);
        }
        sem_destroy(&r->sem);
    }
    resource_stats(res, &st);
    cr_expect_eq(st.watchers, 0);
    cr_expect_eq(st.laggards, 0);
    cr_expect_eq(st.events, EVENTS);
    cr_expect_eq(st.history_len, EVENTS); /* grew instead of evicting */
    resource_free(res);
    free(rs);
}

Test(resource_mt, every_reader_sees_every_rv_once_in_order, .timeout = 120)
{
    run(false);
}

Test(resource_mt, scoped_readers_see_their_namespace_in_order, .timeout = 120)
{
    run(true);
}

/* A reader that never reads must not slow the writer; it is ended, not waited for. */
Test(resource_mt, slow_reader_is_ended_and_writer_never_waits, .timeout = 120)
{
    struct resource *res =
        resource_new("pods", &(struct ring_opts){.min_cap = 64, .max_cap = 64, .fresh_ms = 0});
    struct writer wr = {.res = res};
    struct reader r = {.res = res};
    struct ring_event ev[BATCH];
    struct resource_stats st;
    pthread_t wt;
    int64_t t0;

    cr_assert_eq(resource_replace(res, NULL, 0, LIST_RV, 0), 0);
    cr_assert_eq(sem_init(&r.sem, 0, 0), 0);
    r.w.wake = wake_sem;
    r.w.wake_ctx = &r;
    cr_assert_eq(resource_watch_from(res, &r.w, LIST_RV, NULL), 0);
    t0 = mono_ms();
    cr_assert_eq(pthread_create(&wt, NULL, writer_main, &wr), 0);
    pthread_join(wt, NULL);
    cr_assert_eq(wr.rc, 0);
    cr_assert_lt(mono_ms() - t0, 30000);
    cr_assert_eq(resource_watch_next(res, &r.w, ev, BATCH), -EPIPE);
    resource_watch_detach(res, &r.w);
    resource_stats(res, &st);
    cr_assert_eq(st.laggards, 1);
    cr_assert_eq(st.history_len, 64);
    sem_destroy(&r.sem);
    resource_free(res);
}

/* ---- snapshots read and released on other threads while the writer goes on ------------------ */

/* apply_one writes key ns_of(rv)/o<rv % 97>: the same key again every KEY_PERIOD rvs. */
#define KEY_PERIOD 388u /* lcm(NS, 97) */
#define HOLD 8

struct lister {
    struct resource *res;
    unsigned seed;
    size_t lists;
    int rc;
    char why[160];
};

/*
 * <s> is exactly the state at s->rv: every rv in (LIST_RV, s->rv] wrote one key, so each key
 * holds the newest of its writes (within the last KEY_PERIOD rvs) and there are
 * min(s->rv - LIST_RV, KEY_PERIOD) keys, in key order.
 */
static bool check_snapshot(struct lister *l, const struct snapshot *s)
{
    uint64_t want = s->rv - LIST_RV < KEY_PERIOD ? s->rv - LIST_RV : KEY_PERIOD;
    struct store_iter it;
    const char *prev = NULL;
    size_t n = 0;

    for (struct blob *b = snapshot_seek(s, NULL, &it); b != NULL; b = snapshot_next(&it)) {
        if (b->rv > s->rv || b->rv + KEY_PERIOD <= s->rv) {
            snprintf(l->why, sizeof(l->why), "rv %llu holds %s at rv %llu",
                     (unsigned long long)s->rv, b->key, (unsigned long long)b->rv);
            return false;
        }
        if (prev != NULL && strcmp(prev, b->key) >= 0) {
            snprintf(l->why, sizeof(l->why), "order %s then %s", prev, b->key);
            return false;
        }
        prev = b->key;
        n++;
    }
    if (n != want || s->len != want) {
        snprintf(l->why, sizeof(l->why), "rv %llu: %zu items (len %zu), want %llu",
                 (unsigned long long)s->rv, n, s->len, (unsigned long long)want);
        return false;
    }
    return true;
}

/* Takes snapshots (current, or at a random rv of the window), checks each, and keeps the
 * last HOLD alive a while, so versions die here while the writer copies paths. */
static void *lister_main(void *p)
{
    struct lister *l = p;
    struct snapshot *held[HOLD] = {0};
    int64_t deadline = mono_ms() + DEADLINE_MS;
    uint64_t cur = 0;

    while (cur < LIST_RV + EVENTS && mono_ms() < deadline && l->rc == 0) {
        struct snapshot *s = NULL;
        size_t slot = l->lists % HOLD;

        if (l->lists % 2 == 0) {
            s = resource_snapshot(l->res, &cur);
        } else {
            uint64_t back;

            /* xorshift, not rand_r: under TSan tests/support/tsan_boxfort.h replaces rand_r */
            l->seed ^= l->seed << 13;
            l->seed ^= l->seed >> 17;
            l->seed ^= l->seed << 5;
            back = l->seed % 5000;

            cur = resource_rv(l->res);
            if (resource_snapshot_at(l->res, cur > LIST_RV + back ? cur - back : LIST_RV, &s) !=
                0) {
                l->rc = -EINVAL;
                snprintf(l->why, sizeof(l->why), "snapshot_at failed near %llu",
                         (unsigned long long)cur);
                break;
            }
        }
        if (!check_snapshot(l, s)) {
            l->rc = -EINVAL;
        }
        snapshot_unref(held[slot]);
        held[slot] = s;
        l->lists++;
    }
    for (size_t i = 0; i < HOLD; i++) {
        snapshot_unref(held[i]);
    }
    return NULL;
}

Test(resource_mt, snapshots_stay_exact_while_writer_goes_on, .timeout = 120)
{
    struct resource *res =
        resource_new("pods", &(struct ring_opts){.min_cap = 256, .max_cap = 32768, .fresh_ms = 0});
    struct lister ls[2] = {{.res = res, .seed = 11}, {.res = res, .seed = 23}};
    struct writer wr = {.res = res};
    pthread_t lt[2];
    pthread_t wt;

    cr_assert_eq(resource_replace(res, NULL, 0, LIST_RV, 0), 0);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(pthread_create(&lt[i], NULL, lister_main, &ls[i]), 0);
    }
    cr_assert_eq(pthread_create(&wt, NULL, writer_main, &wr), 0);
    pthread_join(wt, NULL);
    for (int i = 0; i < 2; i++) {
        pthread_join(lt[i], NULL);
        cr_expect_eq(ls[i].rc, 0, "lister %d: %s", i, ls[i].why);
        cr_expect_gt(ls[i].lists, 10, "lister %d took %zu snapshots", i, ls[i].lists);
    }
    cr_assert_eq(wr.rc, 0);
    resource_free(res);
}

/* ---- batches read while the writer evicts them ------------------------------------------- */

/*
 * A watcher's batch is lent, not referenced (the watcher borrows the ring's segments): a
 * reader that holds its batch while the writer pushes the events out of a small history must
 * still read every blob intact (ASan/TSan would see a use after free) until its next call.
 * Each holder reads, dawdles with the batch in hand, checks it again, and re-attaches at the
 * head whenever it is ended as a laggard, until the writer is done. The holders also share an
 * attachment per event (ring_aux_attach), as the proxy shares encoded frames.
 */
struct holder {
    struct resource *res;
    atomic_bool *done;
    atomic_size_t batches; /* checked after dawdling */
    atomic_size_t evicted; /* of which the first event had left the history by then */
    size_t ended;          /* times ended as a laggard */
    int rc;
    char why[160];
};

static bool check_held(struct holder *h, const struct ring_event *ev, ssize_t n)
{
    char want[24];

    for (ssize_t i = 0; i < n; i++) {
        snprintf(want, sizeof(want), "%llu", (unsigned long long)ev[i].rv);
        if (strcmp(ev[i].obj->data, want) != 0 || strcmp(ev[i].obj->rv_str, want) != 0) {
            snprintf(h->why, sizeof(h->why), "rv %s holds %.20s", want, ev[i].obj->data);
            return false;
        }
        /* the previous version of the key was written KEY_PERIOD rvs earlier */
        if (ev[i].prev != NULL && ev[i].prev->rv + KEY_PERIOD != ev[i].rv) {
            snprintf(h->why, sizeof(h->why), "rv %s has prev %.20s", want, ev[i].prev->data);
            return false;
        }
        /* the holders race to attach a block to each event and must all see the same one,
         * intact, while the writer ages and evicts attachments */
        char *mine = strdup(want);
        const char *got = ring_aux_attach(&ev[i], mine);

        if (got != mine) {
            free(mine);
        }
        if (strcmp(got, want) != 0) {
            snprintf(h->why, sizeof(h->why), "rv %s has attachment %.20s", want, got);
            return false;
        }
    }
    return true;
}

static void *holder_main(void *p)
{
    struct holder *h = p;
    struct watcher w = {0};
    struct ring_event ev[BATCH];
    struct timespec dawdle = {0, 200000L};
    int64_t deadline = mono_ms() + DEADLINE_MS;

    if (resource_watch_now(h->res, &w, NULL, NULL) != 0) {
        h->rc = -EAGAIN;
        return NULL;
    }
    while (!atomic_load(h->done) && mono_ms() < deadline && h->rc == 0) {
        ssize_t n = resource_watch_take(h->res, &w, ev, BATCH);

        if (n < 0) { /* fell behind the small history: start again at the head */
            h->ended++;
            resource_watch_detach(h->res, &w);
            memset(&w, 0, sizeof(w));
            if (resource_watch_now(h->res, &w, NULL, NULL) != 0) {
                h->rc = -EAGAIN;
            }
            continue;
        }
        if (!check_held(h, ev, n)) {
            h->rc = -EINVAL;
            break;
        }
        nanosleep(&dawdle, NULL); /* the writer evicts meanwhile */
        if (n > 0) {
            struct resource_stats st;

            resource_stats(h->res, &st);
            if (ev[0].rv <= st.history_boundary) {
                atomic_fetch_add(&h->evicted, 1);
            }
            if (!check_held(h, ev, n)) {
                h->rc = -EINVAL;
                break;
            }
            atomic_fetch_add(&h->batches, 1);
        }
    }
    resource_watch_detach(h->res, &w);
    return NULL;
}

/* Writes (pausing now and then) until every holder has checked 50 batches, one of them
 * evicted, or at most 2,000,000 events. */
static int write_until_held(struct resource *res, struct holder *hs, int n)
{
    struct timespec pause = {0, 20000L};
    int64_t deadline = mono_ms() + DEADLINE_MS / 2;

    for (uint64_t rv = LIST_RV + 1; rv <= LIST_RV + 2000000 && mono_ms() < deadline; rv++) {
        int rc = apply_one(res, rv);
        bool enough = true;
        size_t evicted = 0;

        if (rc != 0) {
            return rc;
        }
        if (rv % 16 != 0) {
            continue;
        }
        nanosleep(&pause, NULL);
        for (int i = 0; i < n; i++) {
            enough = enough && atomic_load(&hs[i].batches) >= 50;
            evicted += atomic_load(&hs[i].evicted);
        }
        if (enough && evicted > 0) {
            break;
        }
    }
    return 0;
}

Test(resource_mt, lent_batches_survive_eviction, .timeout = 120)
{
    struct resource *res =
        resource_new("pods", &(struct ring_opts){.min_cap = 64, .max_cap = 64, .fresh_ms = 0});
    atomic_bool done = false;
    struct holder hs[4];
    pthread_t ht[4];
    struct resource_stats st;
    size_t ended = 0, evicted = 0;

    cr_assert_eq(resource_replace(res, NULL, 0, LIST_RV, 0), 0);
    for (int i = 0; i < 4; i++) {
        hs[i] = (struct holder){.res = res, .done = &done};
        cr_assert_eq(pthread_create(&ht[i], NULL, holder_main, &hs[i]), 0);
    }
    cr_assert_eq(write_until_held(res, hs, 4), 0);
    atomic_store(&done, true);
    for (int i = 0; i < 4; i++) {
        pthread_join(ht[i], NULL);
        cr_expect_eq(hs[i].rc, 0, "holder %d: %s", i, hs[i].why);
        cr_expect_geq(atomic_load(&hs[i].batches), 50, "holder %d checked too few", i);
        ended += hs[i].ended;
        evicted += atomic_load(&hs[i].evicted);
    }
    resource_stats(res, &st);
    cr_expect_eq(st.watchers, 0);
    cr_expect_eq(st.laggards, ended);
    cr_expect_gt(evicted, 0, "no batch was ever evicted while held: the test proved nothing");
    resource_free(res); /* BUG_ON if a borrow was never given back */
}

/* ---- freshness waiters released by another thread ---------------------------------------- */

struct stepper {
    struct resource *res;
    bool by_progress;
    int rc; /* asserts belong to the test's thread */
};

/* Moves the rv to LIST_RV+1 then LIST_RV+2, 30 ms apart: the first step wakes a waiter for
 * LIST_RV+2 below its target, and it must go back to waiting. */
static void *stepper_main(void *p)
{
    struct stepper *s = p;
    struct timespec d = {0, 30000000L};

    for (uint64_t rv = LIST_RV + 1; rv <= LIST_RV + 2; rv++) {
        nanosleep(&d, NULL);
        if (s->by_progress) {
            resource_progress(s->res, rv);
        } else if (s->rc == 0) {
            s->rc = apply_one(s->res, rv);
        }
    }
    return NULL;
}

static void wait_fresh_sees_other_thread(bool by_progress)
{
    struct resource *res = resource_new("pods", NULL);
    struct stepper s = {.res = res, .by_progress = by_progress};
    pthread_t th;
    uint64_t cur = 0;
    int64_t t0;
    int64_t took;

    cr_assert_eq(resource_replace(res, NULL, 0, LIST_RV, 0), 0);
    t0 = mono_ms();
    cr_assert_eq(pthread_create(&th, NULL, stepper_main, &s), 0);
    cr_assert_eq(resource_wait_fresh(res, LIST_RV + 2, 5000, &cur), 0);
    took = mono_ms() - t0;
    pthread_join(th, NULL);
    cr_assert_eq(s.rc, 0);
    cr_assert_eq(cur, LIST_RV + 2);
    cr_assert_geq(took, 55);
    cr_assert_lt(took, 4000);
    resource_free(res);
}

Test(resource_mt, wait_fresh_returns_when_events_arrive, .timeout = 120)
{
    wait_fresh_sees_other_thread(false);
}

Test(resource_mt, wait_fresh_returns_on_progress, .timeout = 120)
{
    wait_fresh_sees_other_thread(true);
}
