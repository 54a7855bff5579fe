/*
 * evseq.h - for tests with several servers on one upstream (replicas, tiers): a proxy's
 * per-resource metrics, and watch streams reduced to their (type, name, rv) sequence so that
 * two streams, or a list plus a stream, can be compared with the simulator's truth: nothing
 * missing, nothing duplicated, order kept.
 *
 * Every helper asserts with Criterion: call them from a Test's thread. An evseq belongs to
 * its caller; evseq_free releases it.
 */
#ifndef KWP_SUPPORT_EVSEQ_H
#define KWP_SUPPORT_EVSEQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "tests/support/http.h"

/* ---- /metrics ------------------------------------------------------------------------- */

/* `<name>{resource="<res>"} <value>` of the proxy at <base> (`<name> <value>` for <res>
 * NULL); false when it is not there. */
bool evseq_metric_try(const char *base, const char *name, const char *res, uint64_t *v);

/* The same, asserted present. */
uint64_t evseq_metric(const char *base, const char *name, const char *res);

/* Polls until the metric is >= <want> (within <ms>); asserts it got there; returns it. */
uint64_t evseq_metric_reach(const char *base, const char *name, const char *res, uint64_t want,
                            long ms);

/* ---- event sequences ------------------------------------------------------------------ */

struct evrec {
    char type; /* 'A'dded, 'M'odified, 'D'eleted */
    char name[128];
    uint64_t rv;
};

struct evseq {
    struct evrec *v;
    size_t n, cap;
};

void evseq_free(struct evseq *s);

/*
 * Reads the events of <w> from line *<pos> on (advancing it) into <out> while their rv is
 * <= <until_rv>, until one beyond it arrives (not taken, *pos stays on it) or <ms> passed
 * (asserted). BOOKMARKs are skipped; an ERROR event or an rv not above the previous one
 * fails the test, naming <what>.
 */
void evseq_collect(struct watch *w, size_t *pos, uint64_t until_rv, long ms, struct evseq *out,
                   const char *what);

/* Asserts <got> and <want> are the same sequence; <what> names got. */
void evseq_expect_equal(const struct evseq *got, const struct evseq *want, const char *what);

/*
 * Asserts that the list <list> (a LIST body: items with metadata.name, .namespace and
 * .resourceVersion) with the events of <evs> applied in order (ADDED/MODIFIED set, DELETED
 * removes) holds exactly the objects of list <truth>, each at the same rv.
 */
void evseq_expect_state(const cJSON *list, const struct evseq *evs, const cJSON *truth,
                        const char *what);

#endif
