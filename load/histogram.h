/*
 * histogram.h - an HDR-style log-linear histogram of unsigned 64-bit samples (latencies in ns).
 *
 * Values below 2^HISTOGRAM_SUB_BITS get a bucket each (exact). Above that, each power-of-two
 * range [2^e, 2^(e+1)) is cut into 2^(HISTOGRAM_SUB_BITS-1) equal buckets, so a bucket is never
 * wider than 1/128 of its lowest value:
 *
 *   index:  0 1 2 ... 255 | 256 ... 383   | 384 ... 511   | ... | 7296 ... 7423
 *   values: 0 1 2 ... 255 | 256..511 by 2 | 512..1023 by 4| ... | 2^63 .. 2^64-1 by 2^56
 *
 * Memory is fixed (HISTOGRAM_BUCKETS counters, 59 KB) whatever the samples. Percentiles report
 * the highest value of the bucket holding the wanted rank, clamped to the exact min and max, so
 * they never under-state a latency and over-state it by less than 1/128 (0.8 %).
 *
 * A histogram has one owner and no lock: the load client records on its one thread.
 */
#ifndef KWP_LOAD_HISTOGRAM_H
#define KWP_LOAD_HISTOGRAM_H

#include <stdint.h>

#define HISTOGRAM_SUB_BITS 8
#define HISTOGRAM_BUCKETS                                                                          \
    ((1u << HISTOGRAM_SUB_BITS) + (64u - HISTOGRAM_SUB_BITS) * (1u << (HISTOGRAM_SUB_BITS - 1)))

struct histogram;

/* Returns a new empty histogram the caller owns (release with histogram_free). Aborts on OOM. */
struct histogram *histogram_new(void);

/* Frees <h>; NULL is a no-op. */
void histogram_free(struct histogram *h);

/* Counts one sample <v>. */
void histogram_record(struct histogram *h, uint64_t v);

/* Forgets every sample. */
void histogram_reset(struct histogram *h);

/* Adds every sample of <src> to <dst> (exactly as if recorded there). */
void histogram_merge(struct histogram *dst, const struct histogram *src);

/* Number of samples. */
uint64_t histogram_count(const struct histogram *h);

/* Exact smallest and largest sample; 0 when empty. */
uint64_t histogram_min(const struct histogram *h);
uint64_t histogram_max(const struct histogram *h);

/* Exact arithmetic mean; 0 when empty. */
double histogram_mean(const struct histogram *h);

/*
 * The value at percentile <p> (0..100, clamped): the highest value of the bucket that holds the
 * sample of rank ceil(p/100 * count) (at least 1), clamped to [min, max]. So p = 100 is the
 * exact max and p = 0 the exact min. Returns 0 when empty.
 */
uint64_t histogram_percentile(const struct histogram *h, double p);

/* Bucket arithmetic, exposed for tests: the bucket of <v>, and the value range of bucket <i>. */
unsigned histogram_bucket_of(uint64_t v);
void histogram_bucket_range(unsigned i, uint64_t *lo, uint64_t *hi);

#endif
