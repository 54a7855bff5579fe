/*
 * test_review_cache.c - proxy/review_cache.h: hits, TTLs per outcome on a fake clock, the
 * entry bound, single flight across real threads (one sender, the others wait and share its
 * answer, or learn it was abandoned), wait deadlines, and the key encoding (field boundaries,
 * salt, domain).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proxy/review_cache.h"

/* ---- helpers ------------------------------------------------------------------------- */

static int64_t fake_now;

static int64_t fake_clock(void *ctx)
{
    (void)ctx;
    return fake_now;
}

static struct review_cache *cache_new(int64_t ttl_allowed, int64_t ttl_denied, size_t max)
{
    struct review_cache_opts o = {
        .ttl_allowed_ms = ttl_allowed,
        .ttl_denied_ms = ttl_denied,
        .max_entries = max,
        .clock = fake_clock,
    };
    struct review_cache *c = review_cache_new(&o);

    cr_assert_not_null(c);
    fake_now = 1000;
    return c;
}

static struct review_cache_key key_of(const struct review_cache *c, const char *s)
{
    struct review_cache_hash h;
    struct review_cache_key k;

    cr_assert_eq(review_cache_hash_begin(&h, c, "test"), 0);
    review_cache_hash_str(&h, s);
    cr_assert_eq(review_cache_hash_end(&h, &k), 0);
    return k;
}

/* Looks <name> up expecting a miss, and publishes <value> as the sender. */
static void fill(struct review_cache *c, const char *name, enum review_outcome o, const char *value)
{
    struct review_cache_key k = key_of(c, name);
    struct review_cache_val v;
    struct review_flight *f;

    cr_assert_eq(review_cache_lookup(c, &k, &v, &f), REVIEW_CACHE_SEND, "%s", name);
    cr_assert_not_null(f);
    cr_assert_eq(review_cache_publish(c, f, o, value, strlen(value)), 0);
}

/* True when <name> is a hit holding <value>; a miss is abandoned again. */
static bool hit(struct review_cache *c, const char *name, const char *value)
{
    struct review_cache_key k = key_of(c, name);
    struct review_cache_val v;
    struct review_flight *f;
    enum review_cache_result r = review_cache_lookup(c, &k, &v, &f);
    bool ok;

    if (r == REVIEW_CACHE_SEND) {
        review_cache_abandon(c, f);
        return false;
    }
    cr_assert_eq(r, REVIEW_CACHE_HIT);
    cr_assert_null(f);
    ok = v.len == strlen(value) && (v.len == 0 || memcmp(v.data, value, v.len) == 0);
    review_cache_val_fini(&v);
    return ok;
}

/* ---- basics -------------------------------------------------------------------------- */

Test(review_cache, miss_publish_hit)
{
    struct review_cache *c = cache_new(10000, 10000, 0);
    struct review_cache_key k = key_of(c, "alice");
    struct review_cache_val v;
    struct review_flight *f;
    struct review_cache_stats st;

    cr_assert_eq(review_cache_lookup(c, &k, &v, &f), REVIEW_CACHE_SEND);
    cr_assert_eq(review_cache_publish(c, f, REVIEW_OUTCOME_DENIED, "no", 2), 0);
    cr_assert_eq(review_cache_lookup(c, &k, &v, &f), REVIEW_CACHE_HIT);
    cr_expect_eq(v.outcome, REVIEW_OUTCOME_DENIED);
    cr_expect_eq(v.len, 2);
    cr_expect_eq(memcmp(v.data, "no", 2), 0);
    review_cache_val_fini(&v);
    cr_expect_null(v.data);
    review_cache_stats(c, &st);
    cr_expect_eq(st.hits, 1);
    cr_expect_eq(st.misses, 1);
    cr_expect_eq(st.reviews, 1);
    cr_expect_eq(st.entries, 1);
    review_cache_free(c);
}

/* A short value is copied into the val itself, a longer one onto the heap: both read back
 * whole, from lookup and from peek, and val_fini releases each the right way (ASan). */
Test(review_cache, short_and_long_values_read_back)
{
    struct review_cache *c = cache_new(10000, 10000, 0);
    static const size_t sizes[] = {1, REVIEW_CACHE_VAL_INLINE, REVIEW_CACHE_VAL_INLINE + 1, 5000};
    char *big = malloc(5000);

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        char name[32];
        struct review_cache_key k;
        struct review_cache_val v;
        struct review_flight *f;

        snprintf(name, sizeof(name), "v%zu", sizes[i]);
        k = key_of(c, name);
        for (size_t j = 0; j < sizes[i]; j++) {
            big[j] = (char)('a' + (i + j) % 26);
        }
        cr_assert_eq(review_cache_lookup(c, &k, &v, &f), REVIEW_CACHE_SEND);
        cr_assert_eq(review_cache_publish(c, f, REVIEW_OUTCOME_ALLOWED, big, sizes[i]), 0);
        cr_assert_eq(review_cache_lookup(c, &k, &v, &f), REVIEW_CACHE_HIT);
        cr_expect_eq(v.len, sizes[i]);
        cr_expect_eq(memcmp(v.data, big, sizes[i]), 0, "size %zu", sizes[i]);
        cr_expect_eq(v.data == v.small, sizes[i] <= REVIEW_CACHE_VAL_INLINE, "size %zu", sizes[i]);
        review_cache_val_fini(&v);
        cr_expect_null(v.data);
        cr_assert(review_cache_peek(c, &k, &v));
        cr_expect_eq(v.len, sizes[i]);
        cr_expect_eq(memcmp(v.data, big, sizes[i]), 0, "size %zu", sizes[i]);
        review_cache_val_fini(&v);
    }
    free(big);
    review_cache_free(c);
}

Test(review_cache, empty_value_is_a_value)
{
    struct review_cache *c = cache_new(10000, 10000, 0);

    fill(c, "k", REVIEW_OUTCOME_ALLOWED, "");
    cr_expect(hit(c, "k", ""));
    review_cache_free(c);
}

Test(review_cache, ttl_by_outcome)
{
    struct review_cache *c = cache_new(10000, 3000, 0);

    fill(c, "allowed", REVIEW_OUTCOME_ALLOWED, "a");
    fill(c, "denied", REVIEW_OUTCOME_DENIED, "d");
    fake_now += 2999;
    cr_expect(hit(c, "allowed", "a"));
    cr_expect(hit(c, "denied", "d"));
    fake_now += 1;
    cr_expect_not(hit(c, "denied", "d"));
    cr_expect(hit(c, "allowed", "a"));
    fake_now += 7000;
    cr_expect_not(hit(c, "allowed", "a"));
    review_cache_free(c);
}

Test(review_cache, ttl_zero_is_not_stored)
{
    struct review_cache *c = cache_new(0, 10000, 0);
    struct review_cache_stats st;

    fill(c, "a", REVIEW_OUTCOME_ALLOWED, "x");
    cr_expect_not(hit(c, "a", "x"));
    fill(c, "d", REVIEW_OUTCOME_DENIED, "y");
    cr_expect(hit(c, "d", "y"));
    review_cache_stats(c, &st);
    cr_expect_eq(st.entries, 1);
    review_cache_free(c);
}

Test(review_cache, bounded_evicts_oldest)
{
    struct review_cache *c = cache_new(10000, 10000, 3);
    struct review_cache_stats st;

    fill(c, "1", REVIEW_OUTCOME_ALLOWED, "one");
    fill(c, "2", REVIEW_OUTCOME_ALLOWED, "two");
    fill(c, "3", REVIEW_OUTCOME_ALLOWED, "three");
    cr_expect(hit(c, "1", "one")); /* a hit does not make an entry younger: FIFO by age */
    fill(c, "4", REVIEW_OUTCOME_DENIED, "four");
    review_cache_stats(c, &st);
    cr_expect_eq(st.entries, 3);
    cr_expect_eq(st.evictions, 1);
    cr_expect_not(hit(c, "1", "one"));
    cr_expect(hit(c, "2", "two"));
    cr_expect(hit(c, "3", "three"));
    cr_expect(hit(c, "4", "four"));
    review_cache_free(c);
}

Test(review_cache, expired_entries_go_first_and_do_not_count_as_evictions)
{
    struct review_cache *c = cache_new(10000, 1000, 2);
    struct review_cache_stats st;

    fill(c, "d", REVIEW_OUTCOME_DENIED, "d");
    fill(c, "a", REVIEW_OUTCOME_ALLOWED, "a");
    fake_now += 1000;
    fill(c, "b", REVIEW_OUTCOME_ALLOWED, "b");
    review_cache_stats(c, &st);
    cr_expect_eq(st.evictions, 0);
    cr_expect(hit(c, "a", "a"));
    cr_expect(hit(c, "b", "b"));
    review_cache_free(c);
}

Test(review_cache, publish_replaces_and_clear_empties)
{
    struct review_cache *c = cache_new(10000, 10000, 0);
    struct review_cache_stats st;

    fill(c, "k", REVIEW_OUTCOME_ALLOWED, "old");
    fake_now += 20000;
    fill(c, "k", REVIEW_OUTCOME_ALLOWED, "new");
    cr_expect(hit(c, "k", "new"));
    review_cache_clear(c);
    review_cache_stats(c, &st);
    cr_expect_eq(st.entries, 0);
    cr_expect_not(hit(c, "k", "new"));
    review_cache_free(c);
}

Test(review_cache, too_large_value_is_answered_not_stored)
{
    static char big[REVIEW_CACHE_MAX_VALUE + 1];
    struct review_cache *c = cache_new(10000, 10000, 0);
    struct review_cache_key k = key_of(c, "big");
    struct review_cache_val v;
    struct review_flight *sender, *waiter;

    memset(big, 'x', sizeof(big));
    cr_assert_eq(review_cache_lookup(c, &k, &v, &sender), REVIEW_CACHE_SEND);
    cr_assert_eq(review_cache_lookup(c, &k, &v, &waiter), REVIEW_CACHE_WAIT);
    cr_expect_eq(review_cache_publish(c, sender, REVIEW_OUTCOME_ALLOWED, big, sizeof(big)), -E2BIG);
    cr_assert_eq(review_cache_wait(c, waiter, 1000, &v), 0);
    cr_expect_eq(v.len, sizeof(big));
    review_cache_val_fini(&v);
    cr_assert_eq(review_cache_lookup(c, &k, &v, &sender), REVIEW_CACHE_SEND);
    review_cache_abandon(c, sender);
    review_cache_free(c);
}

/* ---- single flight ------------------------------------------------------------------- */

Test(review_cache, abandon_wakes_waiters_and_stores_nothing)
{
    struct review_cache *c = cache_new(10000, 10000, 0);
    struct review_cache_key k = key_of(c, "k");
    struct review_cache_val v;
    struct review_flight *sender, *waiter;
    struct review_cache_stats st;

    cr_assert_eq(review_cache_lookup(c, &k, &v, &sender), REVIEW_CACHE_SEND);
    cr_assert_eq(review_cache_lookup(c, &k, &v, &waiter), REVIEW_CACHE_WAIT);
    review_cache_abandon(c, sender);
    cr_expect_eq(review_cache_wait(c, waiter, 1000, &v), -ECANCELED);
    cr_expect_null(v.data);
    /* the retry finds no entry and no flight: it becomes the sender */
    cr_assert_eq(review_cache_lookup(c, &k, &v, &sender), REVIEW_CACHE_SEND);
    review_cache_abandon(c, sender);
    review_cache_stats(c, &st);
    cr_expect_eq(st.abandoned, 2);
    cr_expect_eq(st.waits, 1);
    cr_expect_eq(st.entries, 0);
    review_cache_free(c);
}

Test(review_cache, wait_times_out)
{
    struct review_cache *c = cache_new(10000, 10000, 0);
    struct review_cache_key k = key_of(c, "k");
    struct review_cache_val v;
    struct review_flight *sender, *waiter;
    struct timespec t0, t1;
    int64_t ms;

    cr_assert_eq(review_cache_lookup(c, &k, &v, &sender), REVIEW_CACHE_SEND);
    cr_assert_eq(review_cache_lookup(c, &k, &v, &waiter), REVIEW_CACHE_WAIT);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_expect_eq(review_cache_wait(c, waiter, 50, &v), -ETIMEDOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    cr_expect_geq(ms, 49);
    /* the sender's publish after its waiter left is still fine */
    cr_expect_eq(review_cache_publish(c, sender, REVIEW_OUTCOME_ALLOWED, "v", 1), 0);
    cr_expect(hit(c, "k", "v"));
    review_cache_free(c);
}

#define THREADS 8

struct flight_test {
    struct review_cache *c;
    struct review_cache_key key;
    pthread_barrier_t start;
    atomic_int senders;
    atomic_int got_value;
    atomic_int canceled;
    atomic_int bad; /* unexpected results (Criterion asserts belong to the main thread) */
    bool abandon;   /* the sender abandons instead of publishing */
};

/* One worker: look up; the one sender waits until every other thread is waiting on its
 * flight (so the test proves sharing, not luck), then answers. */
static void *flight_worker(void *arg)
{
    struct flight_test *t = arg;
    struct review_cache_val v;
    struct review_flight *f;
    enum review_cache_result r;
    int rc;

    pthread_barrier_wait(&t->start);
    r = review_cache_lookup(t->c, &t->key, &v, &f);
    if (r == REVIEW_CACHE_SEND) {
        struct review_cache_stats st;
        struct timespec nap = {0, 1000000};

        atomic_fetch_add(&t->senders, 1);
        for (int i = 0; i < 5000; i++) {
            review_cache_stats(t->c, &st);
            if (st.waits == THREADS - 1) {
                break;
            }
            nanosleep(&nap, NULL);
        }
        if (t->abandon) {
            review_cache_abandon(t->c, f);
        } else if (review_cache_publish(t->c, f, REVIEW_OUTCOME_ALLOWED, "yes", 3) != 0) {
            atomic_fetch_add(&t->bad, 1);
        }
        return NULL;
    }
    if (r != REVIEW_CACHE_WAIT) {
        atomic_fetch_add(&t->bad, 1);
        return NULL;
    }
    rc = review_cache_wait(t->c, f, 10000, &v);
    if (rc == 0) {
        if (v.len == 3 && memcmp(v.data, "yes", 3) == 0) {
            atomic_fetch_add(&t->got_value, 1);
        }
        review_cache_val_fini(&v);
    } else if (rc == -ECANCELED) {
        atomic_fetch_add(&t->canceled, 1);
    }
    return NULL;
}

static void run_flight(struct flight_test *t)
{
    pthread_t th[THREADS];

    t->c = cache_new(10000, 10000, 0);
    t->key = key_of(t->c, "shared");
    pthread_barrier_init(&t->start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        cr_assert_eq(pthread_create(&th[i], NULL, flight_worker, t), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
    }
    pthread_barrier_destroy(&t->start);
    cr_expect_eq(atomic_load(&t->bad), 0);
}

Test(review_cache, concurrent_misses_send_one_review, .timeout = 60)
{
    struct flight_test t = {0};
    struct review_cache_stats st;

    run_flight(&t);
    review_cache_stats(t.c, &st);
    cr_expect_eq(atomic_load(&t.senders), 1);
    cr_expect_eq(atomic_load(&t.got_value), THREADS - 1);
    cr_expect_eq(st.reviews, 1);
    cr_expect_eq(st.misses, 1);
    cr_expect_eq(st.waits, THREADS - 1);
    cr_expect(hit(t.c, "shared", "yes"));
    review_cache_free(t.c);
}

Test(review_cache, abandoned_flight_cancels_every_waiter, .timeout = 60)
{
    struct flight_test t = {.abandon = true};
    struct review_cache_stats st;

    run_flight(&t);
    review_cache_stats(t.c, &st);
    cr_expect_eq(atomic_load(&t.senders), 1);
    cr_expect_eq(atomic_load(&t.canceled), THREADS - 1);
    cr_expect_eq(st.entries, 0);
    review_cache_free(t.c);
}

Test(review_cache, past_max_flights_misses_send_alone)
{
    struct review_cache_opts o = {.ttl_allowed_ms = 1000, .ttl_denied_ms = 1000, .max_flights = 1};
    struct review_cache *c = review_cache_new(&o);
    struct review_cache_key a = key_of(c, "a"), b = key_of(c, "b");
    struct review_cache_val v;
    struct review_flight *fa, *fb1, *fb2;

    cr_assert_eq(review_cache_lookup(c, &a, &v, &fa), REVIEW_CACHE_SEND);
    cr_assert_eq(review_cache_lookup(c, &b, &v, &fb1), REVIEW_CACHE_SEND);
    cr_assert_eq(review_cache_lookup(c, &b, &v, &fb2), REVIEW_CACHE_SEND);
    cr_expect_eq(review_cache_publish(c, fb1, REVIEW_OUTCOME_ALLOWED, "1", 1), 0);
    cr_expect_eq(review_cache_publish(c, fb2, REVIEW_OUTCOME_ALLOWED, "2", 1), 0);
    review_cache_abandon(c, fa);
    cr_expect(hit(c, "b", "2"));
    review_cache_free(c);
}

/* ---- keys ---------------------------------------------------------------------------- */

static struct review_cache_key key_of2(const struct review_cache *c, const char *domain,
                                       const char *x, const char *y)
{
    struct review_cache_hash h;
    struct review_cache_key k;

    cr_assert_eq(review_cache_hash_begin(&h, c, domain), 0);
    review_cache_hash_str(&h, x);
    review_cache_hash_str(&h, y);
    cr_assert_eq(review_cache_hash_end(&h, &k), 0);
    return k;
}

Test(review_cache, keys_keep_field_boundaries_salt_and_domain)
{
    struct review_cache_opts o = {.ttl_allowed_ms = 1};
    struct review_cache *c1 = review_cache_new(&o), *c2 = review_cache_new(&o);
    struct review_cache_key k1 = key_of2(c1, "d", "a", "bc");
    struct review_cache_key k2 = key_of2(c1, "d", "ab", "c");
    struct review_cache_key k3 = key_of2(c1, "d", "a", "bc");
    struct review_cache_key k4 = key_of2(c2, "d", "a", "bc");
    struct review_cache_key k5 = key_of2(c1, "e", "a", "bc");
    struct review_cache_key k6 = key_of2(c1, "d", "", "abc");
    struct review_cache_hash h;
    struct review_cache_key k7, k8;

    cr_expect_neq(memcmp(k1.d, k2.d, sizeof(k1.d)), 0);
    cr_expect_eq(memcmp(k1.d, k3.d, sizeof(k1.d)), 0);
    cr_expect_neq(memcmp(k1.d, k4.d, sizeof(k1.d)), 0); /* per-cache salt */
    cr_expect_neq(memcmp(k1.d, k5.d, sizeof(k1.d)), 0);
    cr_expect_neq(memcmp(k1.d, k6.d, sizeof(k1.d)), 0);
    /* a u64 and the same 8 bytes as data differ too (data carries its length) */
    cr_assert_eq(review_cache_hash_begin(&h, c1, "d"), 0);
    review_cache_hash_u64(&h, 1);
    cr_assert_eq(review_cache_hash_end(&h, &k7), 0);
    cr_assert_eq(review_cache_hash_begin(&h, c1, "d"), 0);
    review_cache_hash_bytes(&h, "\0\0\0\0\0\0\0\1", 8);
    cr_assert_eq(review_cache_hash_end(&h, &k8), 0);
    cr_expect_neq(memcmp(k7.d, k8.d, sizeof(k7.d)), 0);
    review_cache_free(c1);
    review_cache_free(c2);
}

/* Keys longer than the gathering buffer (REVIEW_CACHE_HASH_BUF) go through SHA-256 in pieces:
 * every byte still counts, wherever the buffer was flushed. */
Test(review_cache, long_keys_hash_every_byte)
{
    struct review_cache_opts o = {.ttl_allowed_ms = 1};
    struct review_cache *c = review_cache_new(&o);
    static const size_t sizes[] = {100, REVIEW_CACHE_HASH_BUF - 60, REVIEW_CACHE_HASH_BUF,
                                   3 * REVIEW_CACHE_HASH_BUF + 7};
    char *x = malloc(4 * REVIEW_CACHE_HASH_BUF);

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i];
        struct review_cache_key k[5];

        for (int j = 0; j < 5; j++) {
            struct review_cache_hash h;

            memset(x, 'a', n);
            if (j == 2) {
                x[0] = 'b'; /* the first byte of the long field */
            } else if (j == 3) {
                x[n - 1] = 'b'; /* its last byte, past any flush */
            }
            cr_assert_eq(review_cache_hash_begin(&h, c, "d"), 0);
            review_cache_hash_bytes(&h, x, n);
            review_cache_hash_str(&h, j == 4 ? "tail!" : "tail.");
            cr_assert_eq(review_cache_hash_end(&h, &k[j]), 0);
        }
        cr_expect_eq(memcmp(k[0].d, k[1].d, sizeof(k[0].d)), 0, "size %zu", n);
        for (int j = 2; j < 5; j++) {
            cr_expect_neq(memcmp(k[0].d, k[j].d, sizeof(k[0].d)), 0, "size %zu, change %d", n, j);
        }
    }
    free(x);
    review_cache_free(c);
}

Test(review_cache, free_null_is_a_no_op)
{
    review_cache_free(NULL);
}
