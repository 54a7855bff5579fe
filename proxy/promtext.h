/*
 * promtext.h - the Prometheus text exposition format (0.0.4) for /metrics: label values
 * escaped, HELP and TYPE lines, numbers as the text that reads back exactly (integers in
 * full, +Inf, NaN), and histograms with cumulative _bucket{le=...} lines ending at le="+Inf",
 * then _sum and _count, over lock-free bucket counters any thread may observe into.
 *
 *   # HELP kwp_x_seconds What it measures.
 *   # TYPE kwp_x_seconds histogram
 *   kwp_x_seconds_bucket{verb="LIST",le="0.005"} 3      <- observations <= 0.005
 *   kwp_x_seconds_bucket{verb="LIST",le="+Inf"} 4       <- all of them, == _count
 *   kwp_x_seconds_sum{verb="LIST"} 0.031
 *   kwp_x_seconds_count{verb="LIST"} 4
 *
 * Writers add to a per-bucket (not cumulative) counter and to the sum with relaxed atomics;
 * the printer sums the buckets it read, so +Inf always equals _count. Any thread, no locks.
 */
#ifndef KWP_PROXY_PROMTEXT_H
#define KWP_PROXY_PROMTEXT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct sbuf;

/* A label: name (a valid Prometheus label name, not escaped) and value (any bytes; escaped). */
struct promtext_label {
    const char *name;
    const char *value;
};

/* Appends <v> as a label value: backslash, double quote and line feed become \\, \" and \n. */
void promtext_escape_label(struct sbuf *b, const char *v);

/* Appends "# HELP <name> <help>\n# TYPE <name> <type>\n"; the help text's backslashes and line
 * feeds are escaped as the format requires. */
void promtext_family(struct sbuf *b, const char *name, const char *type, const char *help);

/* Appends <v>: an integral value below 2^53 in full ("1234567"), any other the shortest %g
 * text that reads back as <v> ("0.005"); "+Inf", "-Inf", "NaN" as the format spells them. */
void promtext_number(struct sbuf *b, double v);

/* Appends one sample line: name{labels} value (no braces without labels). */
void promtext_sample(struct sbuf *b, const char *name, const struct promtext_label *l, size_t n_l,
                     double v);

/*
 * Appends one histogram series: a _bucket line per bound in <bounds> (n of them, ascending)
 * with cumulative counts, le="+Inf" with the total, then _sum (<sum>) and _count. <counts>
 * holds n + 1 per-bucket (not cumulative) counts, the last for values above every bound.
 */
void promtext_histogram(struct sbuf *b, const char *name, const struct promtext_label *l,
                        size_t n_l, const double *bounds, size_t n, const uint64_t *counts,
                        double sum);

/* Bucket counters for one series. Embedded by its owner; observe from any thread. */
struct promtext_histo {
    const double *bounds;  /* upper bounds in seconds, ascending; lent (static tables) */
    size_t n;              /* number of bounds */
    atomic_ullong *counts; /* n + 1 per-bucket counts (last: above every bound) */
    atomic_ullong sum_ns;  /* sum of the observations, nanoseconds */
};

/* Sets up <h> over <bounds> (n of them; kept, not copied) with zero counts. */
void promtext_histo_init(struct promtext_histo *h, const double *bounds, size_t n);

/* Frees the counters; <h> may be zeroed or never initialised past memset. */
void promtext_histo_fini(struct promtext_histo *h);

/* Counts one observation of <ns> nanoseconds (negative counts as 0). Any thread. */
void promtext_histo_observe_ns(struct promtext_histo *h, int64_t ns);

/* The bucket index <seconds> falls into: the first bound >= it, else n (+Inf). */
size_t promtext_bucket(const double *bounds, size_t n, double seconds);

/* promtext_histogram over <h>'s current counts. */
void promtext_histo_write(struct sbuf *b, const char *name, const struct promtext_label *l,
                          size_t n_l, const struct promtext_histo *h);

#endif
