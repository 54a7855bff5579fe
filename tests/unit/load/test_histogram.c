/*
 * test_histogram.c - load/histogram.h: bucket arithmetic, and percentiles checked against a
 * sorted copy of the same samples (the HDR bound: never below the true value, above it by
 * less than 1/128 of it).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "load/histogram.h"

#define T_TIMEOUT 30

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The nearest-rank percentile of sorted v[0..n). */
static uint64_t ref_percentile(const uint64_t *v, size_t n, double p)
{
    size_t rank;

    if (p <= 0) {
        return v[0];
    }
    rank = (size_t)ceil(p / 100.0 * (double)n - 1e-9);
    if (rank < 1) {
        rank = 1;
    }
    if (rank > n) {
        rank = n;
    }
    return v[rank - 1];
}

static void check_against_reference(uint64_t *v, size_t n)
{
    static const double ps[] = {0, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100};
    struct histogram *h = histogram_new();
    long double sum = 0;

    for (size_t i = 0; i < n; i++) {
        histogram_record(h, v[i]);
        sum += v[i];
    }
    qsort(v, n, sizeof(uint64_t), cmp_u64);
    cr_assert_eq(histogram_count(h), n);
    cr_assert_eq(histogram_min(h), v[0]);
    cr_assert_eq(histogram_max(h), v[n - 1]);
    cr_assert(fabs(histogram_mean(h) - (double)(sum / n)) <= 1e-9 * (double)(sum / n) + 1e-9);
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
        uint64_t want = ref_percentile(v, n, ps[i]);
        uint64_t got = histogram_percentile(h, ps[i]);
        cr_assert_geq(got, want, "p%g: %llu below the true %llu", ps[i], (unsigned long long)got,
                      (unsigned long long)want);
        cr_assert_leq(got - want, want / 128, "p%g: %llu too far above the true %llu", ps[i],
                      (unsigned long long)got, (unsigned long long)want);
    }
    histogram_free(h);
}

Test(histogram, empty_reports_zeros, .timeout = T_TIMEOUT)
{
    struct histogram *h = histogram_new();

    cr_assert_eq(histogram_count(h), 0);
    cr_assert_eq(histogram_percentile(h, 50), 0);
    cr_assert_eq(histogram_max(h), 0);
    cr_assert_eq(histogram_min(h), 0);
    cr_assert_eq(histogram_mean(h), 0);
    histogram_free(h);
    histogram_free(NULL);
}

Test(histogram, small_values_are_exact, .timeout = T_TIMEOUT)
{
    struct histogram *h = histogram_new();

    for (uint64_t v = 1; v <= 100; v++) {
        histogram_record(h, v);
    }
    cr_assert_eq(histogram_percentile(h, 50), 50);
    cr_assert_eq(histogram_percentile(h, 90), 90);
    cr_assert_eq(histogram_percentile(h, 99), 99);
    cr_assert_eq(histogram_percentile(h, 99.9), 100);
    cr_assert_eq(histogram_percentile(h, 0), 1);
    cr_assert_eq(histogram_percentile(h, 100), 100);
    cr_assert_float_eq(histogram_mean(h), 50.5, 1e-12);
    histogram_free(h);
}

Test(histogram, buckets_cover_every_value_within_one_128th, .timeout = T_TIMEOUT)
{
    uint64_t prev_hi = 0;

    /* contiguous and increasing over all buckets */
    for (unsigned i = 0; i < HISTOGRAM_BUCKETS; i++) {
        uint64_t lo, hi;
        histogram_bucket_range(i, &lo, &hi);
        cr_assert_leq(lo, hi);
        if (i > 0) {
            cr_assert_eq(lo, prev_hi + 1, "bucket %u starts at %llu, previous ended at %llu", i,
                         (unsigned long long)lo, (unsigned long long)prev_hi);
        }
        cr_assert_leq(hi - lo, lo / 128, "bucket %u too wide", i);
        prev_hi = hi;
    }
    cr_assert_eq(prev_hi, UINT64_MAX);
    for (int k = 0; k < 200000; k++) {
        uint64_t v = rnd() >> (rnd() % 64);
        uint64_t lo, hi;
        unsigned b = histogram_bucket_of(v);
        cr_assert_lt(b, HISTOGRAM_BUCKETS);
        histogram_bucket_range(b, &lo, &hi);
        cr_assert(lo <= v && v <= hi, "%llu not in bucket %u [%llu, %llu]", (unsigned long long)v,
                  b, (unsigned long long)lo, (unsigned long long)hi);
    }
    cr_assert_eq(histogram_bucket_of(UINT64_MAX), HISTOGRAM_BUCKETS - 1);
}

Test(histogram, percentiles_match_sorted_reference_uniform, .timeout = T_TIMEOUT)
{
    size_t n = 100000;
    uint64_t *v = malloc(n * sizeof(uint64_t));

    for (size_t i = 0; i < n; i++) {
        v[i] = rnd() % 50000000; /* 0 .. 50 ms in ns */
    }
    check_against_reference(v, n);
    free(v);
}

Test(histogram, percentiles_match_sorted_reference_long_tail, .timeout = T_TIMEOUT)
{
    size_t n = 54321;
    uint64_t *v = malloc(n * sizeof(uint64_t));

    /* log-uniform over 10 decades with a few huge outliers: a latency distribution's shape */
    for (size_t i = 0; i < n; i++) {
        double x = (double)(rnd() % 1000000) / 1000000.0;
        v[i] = (uint64_t)pow(10.0, 2 + 10 * x);
    }
    v[7] = UINT64_MAX;
    v[8] = (uint64_t)1 << 62;
    v[9] = 0;
    check_against_reference(v, n);
    free(v);
}

Test(histogram, percentiles_match_sorted_reference_small_counts, .timeout = T_TIMEOUT)
{
    for (size_t n = 1; n <= 40; n++) {
        uint64_t v[40];
        for (size_t i = 0; i < n; i++) {
            v[i] = 1000 + rnd() % 10000000;
        }
        check_against_reference(v, n);
    }
}

Test(histogram, merge_equals_recording_everything_in_one, .timeout = T_TIMEOUT)
{
    struct histogram *a = histogram_new(), *b = histogram_new(), *all = histogram_new();

    for (int i = 0; i < 10000; i++) {
        uint64_t v = rnd() % 1000000000;
        histogram_record(i % 3 ? a : b, v);
        histogram_record(all, v);
    }
    histogram_merge(a, b);
    cr_assert_eq(histogram_count(a), histogram_count(all));
    cr_assert_eq(histogram_min(a), histogram_min(all));
    cr_assert_eq(histogram_max(a), histogram_max(all));
    for (double p = 0; p <= 100; p += 0.5) {
        cr_assert_eq(histogram_percentile(a, p), histogram_percentile(all, p), "p%g", p);
    }
    histogram_reset(a);
    cr_assert_eq(histogram_count(a), 0);
    cr_assert_eq(histogram_percentile(a, 99), 0);
    histogram_merge(a, b);
    cr_assert_eq(histogram_count(a), histogram_count(b));
    histogram_free(a);
    histogram_free(b);
    histogram_free(all);
}

Test(histogram, never_reports_beyond_the_exact_extremes, .timeout = T_TIMEOUT)
{
    struct histogram *h = histogram_new();

    /* one sample in a wide bucket: every percentile is that sample, not the bucket's top */
    histogram_record(h, 1000001);
    cr_assert_eq(histogram_percentile(h, 50), 1000001);
    cr_assert_eq(histogram_percentile(h, 99.999), 1000001);
    histogram_record(h, 1000000);
    cr_assert_geq(histogram_percentile(h, 1), 1000000);
    cr_assert_leq(histogram_percentile(h, 1), 1000001);
    histogram_free(h);
}
