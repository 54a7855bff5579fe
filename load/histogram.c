/*
 * histogram.c - log-linear latency histogram (see histogram.h for the bucket layout).
 *
 * The sum is kept as a long double so the mean stays exact enough for hours of nanosecond
 * samples; counters are uint64_t and cannot overflow in any run this tool can make.
 */
#include "load/histogram.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cache/bug.h"

#define SUB_COUNT (1u << HISTOGRAM_SUB_BITS)        /* linear buckets: 0 .. 2^S - 1 */
#define HALF_COUNT (1u << (HISTOGRAM_SUB_BITS - 1)) /* buckets per power of two above */

struct histogram {
    uint64_t count;
    uint64_t min;
    uint64_t max;
    long double sum;
    uint64_t buckets[HISTOGRAM_BUCKETS];
};

unsigned histogram_bucket_of(uint64_t v)
{
    unsigned e, shift;

    if (v < SUB_COUNT) {
        return (unsigned)v;
    }
    e = 63u - (unsigned)__builtin_clzll(v); /* 2^e <= v < 2^(e+1), e >= S */
    shift = e - HISTOGRAM_SUB_BITS + 1;     /* bucket width is 2^shift */
    return SUB_COUNT + (e - HISTOGRAM_SUB_BITS) * HALF_COUNT +
           (unsigned)((v >> shift) - HALF_COUNT);
}

void histogram_bucket_range(unsigned i, uint64_t *lo, uint64_t *hi)
{
    unsigned k, e, shift;

    BUG_ON(i >= HISTOGRAM_BUCKETS);
    if (i < SUB_COUNT) {
        *lo = i;
        *hi = i;
        return;
    }
    k = i - SUB_COUNT;
    e = HISTOGRAM_SUB_BITS + k / HALF_COUNT;
    shift = e - HISTOGRAM_SUB_BITS + 1;
    *lo = (uint64_t)(HALF_COUNT + k % HALF_COUNT) << shift;
    *hi = *lo + ((uint64_t)1 << shift) - 1;
}

struct histogram *histogram_new(void)
{
    return xcalloc(1, sizeof(struct histogram));
}

void histogram_free(struct histogram *h)
{
    free(h);
}

void histogram_record(struct histogram *h, uint64_t v)
{
    h->buckets[histogram_bucket_of(v)]++;
    if (h->count == 0 || v < h->min) {
        h->min = v;
    }
    if (v > h->max) {
        h->max = v;
    }
    h->count++;
    h->sum += (long double)v;
}

void histogram_reset(struct histogram *h)
{
    memset(h, 0, sizeof(*h));
}

void histogram_merge(struct histogram *dst, const struct histogram *src)
{
    if (src->count == 0) {
        return;
    }
    for (unsigned i = 0; i < HISTOGRAM_BUCKETS; i++) {
        dst->buckets[i] += src->buckets[i];
    }
    if (dst->count == 0 || src->min < dst->min) {
        dst->min = src->min;
    }
    if (src->max > dst->max) {
        dst->max = src->max;
    }
    dst->count += src->count;
    dst->sum += src->sum;
}

uint64_t histogram_count(const struct histogram *h)
{
    return h->count;
}

uint64_t histogram_min(const struct histogram *h)
{
    return h->min;
}

uint64_t histogram_max(const struct histogram *h)
{
    return h->max;
}

double histogram_mean(const struct histogram *h)
{
    return h->count ? (double)(h->sum / (long double)h->count) : 0.0;
}

uint64_t histogram_percentile(const struct histogram *h, double p)
{
    uint64_t rank, seen = 0;
    double x;

    if (h->count == 0) {
        return 0;
    }
    if (!(p > 0)) { /* also NaN */
        return h->min;
    }
    if (p >= 100) {
        return h->max;
    }
    /* ceil, forgiving the few ulps p/100 adds (99.9/100*1000 is 999.0000000000001) */
    x = p / 100.0 * (double)h->count;
    rank = (uint64_t)ceil(x - (x * 1e-14 + 1e-12));
    if (rank < 1) {
        rank = 1;
    }
    if (rank > h->count) {
        rank = h->count;
    }
    for (unsigned i = 0; i < HISTOGRAM_BUCKETS; i++) {
        seen += h->buckets[i];
        if (seen >= rank) {
            uint64_t lo, hi;
            histogram_bucket_range(i, &lo, &hi);
            if (hi > h->max) {
                hi = h->max;
            }
            return hi < h->min ? h->min : hi;
        }
    }
    return h->max; /* not reached: the buckets sum to count */
}
