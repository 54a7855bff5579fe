/*
 * reqstats.c - request, upstream and delivery-lag histograms (see reqstats.h).
 *
 * A family is an open-addressing table of series pointers keyed by (verb, resource label
 * pointer, code): a lookup is lock-free (acquire loads); a series seen for the first time is
 * created under the family's mutex and published with a release store, never removed. The
 * lag histogram is a list of per-thread cells; the owner thread alone writes its cell (relaxed
 * load + store, no locked instruction), the scrape reads every cell.
 */
#include "proxy/reqstats.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cache/bug.h"
#include "cache/sbuf.h"
#include "proxy/http_server.h"
#include "proxy/promtext.h"

#define SLOTS (REQSTATS_MAX_SERIES * 2) /* a power of two: at most half full */

/* kube-apiserver's apiserver_request_duration_seconds buckets, with three below its first
 * (5 ms): answers from the cache take well under it. */
static const double duration_bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.025, 0.05, 0.1, 0.2, 0.4,
                                         0.6,    0.8,   1.0,    1.25,  1.5,   2,    3,   4,   5,
                                         6,      8,     10,     15,    20,    30,   45,  60};
#define N_DURATION (sizeof(duration_bounds) / sizeof(duration_bounds[0]))

#define N_LAG 14
static const double lag_bounds[N_LAG] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1,
                                         0.2,   0.5,   1,     2,    5,    10,   30};
static const int64_t lag_bounds_ms[N_LAG] = {1,   2,   5,    10,   20,   50,    100,
                                             200, 500, 1000, 2000, 5000, 10000, 30000};

static const char *const verb_names[REQSTATS_VERBS] = {
    "APPLY", "CONNECT", "DELETE", "GET", "LIST", "PATCH", "POST", "PUT", "WATCH", "other"};

struct series {
    enum reqstats_verb verb;
    int code;
    const char *resource; /* NULL: the family has no resource label */
    struct promtext_histo h;
};

struct family {
    pthread_mutex_t mu; /* creating a series */
    _Atomic(struct series *) slot[SLOTS];
    size_t n;              /* series created; under mu */
    atomic_ullong dropped; /* observations without a series (table full) */
};

static struct family requests = {.mu = PTHREAD_MUTEX_INITIALIZER};
static struct family upstream = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* One thread's lag counters, cache-line aligned so no two threads' share a line. */
struct lag_cell {
    _Alignas(64) atomic_ullong counts[N_LAG + 1];
    atomic_ullong sum_ms;
    struct lag_cell *next; /* set before the cell is published */
};

static _Atomic(struct lag_cell *) lag_cells;
/* initial-exec: one %fs-relative load (kwp links this library into executables only) */
static _Thread_local struct lag_cell *my_lag __attribute__((tls_model("initial-exec")));

const char reqstats_other[] = "other";
const char reqstats_none[] = "";

const char *reqstats_verb_name(enum reqstats_verb v)
{
    return v < REQSTATS_VERBS ? verb_names[v] : "other";
}

/* ---- the verb ------------------------------------------------------------------------- */

/* getVerbIfWatch: a GET whose first watch= value is neither "0" nor "false" (any case). */
static bool watch_param(const struct k8s_query_kv *q, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(q[i].key, "watch") == 0) {
            const char *v = q[i].value ? q[i].value : "";
            return strcmp(v, "0") != 0 && strcasecmp(v, "false") != 0;
        }
    }
    return false;
}

enum reqstats_verb reqstats_verb_of(const char *method, const struct k8s_path *kp,
                                    const struct k8s_query_kv *q, size_t n,
                                    const char *content_type)
{
    static const char *const connect[] = {"log", "exec", "portforward", "attach", "proxy"};
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    enum reqstats_verb v;

    if (get) {
        /* CanonicalVerb with the installer's scope: a named object is "resource" scope */
        v = kp != NULL && kp->name[0] == '\0' ? REQSTATS_LIST : REQSTATS_GET;
        if ((kp != NULL && kp->legacy_watch) || watch_param(q, n)) {
            return REQSTATS_WATCH; /* the installer's WATCH/WATCHLIST, getVerbIfWatch */
        }
    } else if (strcmp(method, "POST") == 0) {
        v = REQSTATS_POST;
    } else if (strcmp(method, "PUT") == 0) {
        v = REQSTATS_PUT;
    } else if (strcmp(method, "DELETE") == 0) {
        v = REQSTATS_DELETE;
    } else if (strcmp(method, "PATCH") == 0) {
        v = content_type != NULL && strcmp(content_type, "application/apply-patch+yaml") == 0
                ? REQSTATS_APPLY
                : REQSTATS_PATCH;
    } else {
        return REQSTATS_OTHER; /* cleanVerb: not one of validRequestMethods */
    }
    if (kp != NULL && kp->subresource[0] != '\0') {
        for (size_t i = 0; i < sizeof(connect) / sizeof(connect[0]); i++) {
            if (strcmp(kp->subresource, connect[i]) == 0) {
                return REQSTATS_CONNECT;
            }
        }
    }
    return v;
}

enum reqstats_verb reqstats_verb_of_request(const struct http_req *req, const struct k8s_path *kp)
{
    struct k8s_path mine;
    const struct k8s_query_kv *q;
    size_t n;

    if (kp == NULL && k8s_path_parse(http_req_path(req), &mine) == 0) {
        kp = &mine;
    }
    q = http_req_query(req, &n);
    return reqstats_verb_of(http_req_method(req), kp, q, n, http_req_header(req, "Content-Type"));
}

/* ---- series ----------------------------------------------------------------------------- */

static size_t slot_of(enum reqstats_verb verb, const char *resource, int code)
{
    uint64_t h = (uint64_t)(uintptr_t)resource * 0x9E3779B97F4A7C15ull;

    h ^= ((uint64_t)verb << 48) ^ (uint64_t)(unsigned)code * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    return (size_t)(h & (SLOTS - 1));
}

static bool series_is(const struct series *s, enum reqstats_verb verb, const char *resource,
                      int code)
{
    return s->verb == verb && s->code == code && s->resource == resource;
}

/* The series for the key, created on first sight; NULL when the family is full. */
static struct series *series_get(struct family *f, enum reqstats_verb verb, const char *resource,
                                 int code)
{
    size_t i = slot_of(verb, resource, code);

    for (size_t probe = 0; probe < SLOTS; probe++, i = (i + 1) & (SLOTS - 1)) {
        struct series *s = atomic_load_explicit(&f->slot[i], memory_order_acquire);

        if (s == NULL) {
            pthread_mutex_lock(&f->mu);
            s = atomic_load_explicit(&f->slot[i], memory_order_relaxed);
            if (s == NULL) {
                if (f->n < REQSTATS_MAX_SERIES) {
                    s = xcalloc(1, sizeof(*s));
                    s->verb = verb;
                    s->code = code;
                    s->resource = resource;
                    promtext_histo_init(&s->h, duration_bounds, N_DURATION);
                    atomic_store_explicit(&f->slot[i], s, memory_order_release);
                    f->n++;
                }
                pthread_mutex_unlock(&f->mu);
                return s;
            }
            pthread_mutex_unlock(&f->mu);
        }
        if (series_is(s, verb, resource, code)) {
            return s;
        }
    }
    return NULL;
}

static void observe(struct family *f, enum reqstats_verb verb, const char *resource, int code,
                    int64_t ns)
{
    struct series *s = series_get(f, verb, resource, code);

    if (s == NULL) {
        atomic_fetch_add_explicit(&f->dropped, 1, memory_order_relaxed);
        return;
    }
    promtext_histo_observe_ns(&s->h, ns);
}

void reqstats_request(enum reqstats_verb verb, const char *resource, int code, int64_t ns)
{
    observe(&requests, verb, resource, code, ns);
}

void reqstats_upstream(enum reqstats_verb verb, int code, int64_t ns)
{
    observe(&upstream, verb, NULL, code, ns);
}

/* ---- delivery lag ---------------------------------------------------------------------- */

static struct lag_cell *lag_register(void)
{
    struct lag_cell *c = aligned_alloc(64, sizeof(*c)); /* sizeof: a multiple of 64 */

    BUG_ON(c == NULL);
    memset(c, 0, sizeof(*c));
    c->next = atomic_load(&lag_cells);
    while (!atomic_compare_exchange_weak(&lag_cells, &c->next, c)) {
    }
    my_lag = c;
    return c;
}

void reqstats_lag_ms(int64_t lag_ms, uint64_t frames)
{
    struct lag_cell *c = my_lag;
    size_t i = 0;

    if (c == NULL) {
        c = lag_register();
    }
    if (lag_ms < 0) {
        lag_ms = 0;
    }
    while (i < N_LAG && lag_ms > lag_bounds_ms[i]) {
        i++;
    }
    /* one writer per cell: a plain read-modify-write, atomic only for the scrape's reads */
    atomic_store_explicit(&c->counts[i],
                          atomic_load_explicit(&c->counts[i], memory_order_relaxed) + frames,
                          memory_order_relaxed);
    atomic_store_explicit(&c->sum_ms,
                          atomic_load_explicit(&c->sum_ms, memory_order_relaxed) +
                              (unsigned long long)lag_ms * frames,
                          memory_order_relaxed);
}

/* ---- exposition ------------------------------------------------------------------------ */

static void write_family(struct sbuf *b, struct family *f, const char *name)
{
    for (size_t i = 0; i < SLOTS; i++) {
        const struct series *s = atomic_load_explicit(&f->slot[i], memory_order_acquire);
        struct promtext_label l[3];
        char code[16];
        size_t n = 0;

        if (s == NULL) {
            continue;
        }
        if (s->code > 0) {
            snprintf(code, sizeof(code), "%d", s->code);
        } else {
            snprintf(code, sizeof(code), "<error>");
        }
        l[n++] = (struct promtext_label){"verb", verb_names[s->verb]};
        if (s->resource != NULL) {
            l[n++] = (struct promtext_label){"resource", s->resource};
        }
        l[n++] = (struct promtext_label){"code", code};
        promtext_histo_write(b, name, l, n, &s->h);
    }
}

void reqstats_write(struct sbuf *b)
{
    uint64_t lag[N_LAG + 1] = {0};
    uint64_t lag_sum = 0;

    promtext_family(b, "kwp_request_duration_seconds", "histogram",
                    "Downstream requests by kube-apiserver's verb, resource and HTTP code, from "
                    "arrival to the end of the response (a WATCH when it ends, as "
                    "apiserver_request_duration_seconds).");
    write_family(b, &requests, "kwp_request_duration_seconds");
    promtext_family(b, "kwp_upstream_request_duration_seconds", "histogram",
                    "Requests sent upstream (reflector LIST and WATCH, forwarded requests) by "
                    "verb and HTTP code (<error>: no response), to the end of the response (a "
                    "WATCH to its response headers).");
    write_family(b, &upstream, "kwp_upstream_request_duration_seconds");
    for (struct lag_cell *c = atomic_load(&lag_cells); c != NULL; c = c->next) {
        for (size_t i = 0; i <= N_LAG; i++) {
            lag[i] += atomic_load_explicit(&c->counts[i], memory_order_relaxed);
        }
        lag_sum += atomic_load_explicit(&c->sum_ms, memory_order_relaxed);
    }
    promtext_family(b, "kwp_watch_event_delivery_lag_seconds", "histogram",
                    "Watch frames by the time from the event's arrival in the cache (or the "
                    "start of the live stream) to the frame's copy into the connection's write "
                    "buffer (millisecond clock).");
    promtext_histogram(b, "kwp_watch_event_delivery_lag_seconds", NULL, 0, lag_bounds, N_LAG, lag,
                       (double)lag_sum / 1000.0);
    promtext_family(b, "kwp_metrics_series_dropped_total", "counter",
                    "Histogram observations not recorded because their family already holds "
                    "the most series it may.");
    sbuf_printf(
        b, "kwp_metrics_series_dropped_total %llu\n",
        (unsigned long long)(atomic_load(&requests.dropped) + atomic_load(&upstream.dropped)));
}
