/*
 * evseq.c - proxy metrics and watch streams as (type, name, rv) sequences (see evseq.h).
 */
#include "tests/support/evseq.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "tests/support/api.h"
#include "tests/support/json.h"
#include "tests/support/nap.h"

#define EVSEQ_POLL_MS 20

/* ---- /metrics --------------------------------------------------------------------------- */

bool evseq_metric_try(const char *base, const char *name, const char *res, uint64_t *v)
{
    char url[API_URL_CAP], line[256];
    struct http_resp r;
    const char *at;
    bool ok = false;

    api_url(base, "/metrics", url, sizeof(url));
    if (http_do("GET", url, NULL, NULL, NULL, 5000, &r) == 0 && r.code == 200) {
        if (res != NULL) {
            snprintf(line, sizeof(line), "\n%s{resource=\"%s\"} ", name, res);
        } else {
            snprintf(line, sizeof(line), "\n%s ", name);
        }
        at = strstr(r.body, line);
        if (at != NULL) {
            char *end;

            at += strlen(line);
            *v = strtoull(at, &end, 10);
            ok = end != at;
        }
    }
    http_resp_free(&r);
    return ok;
}

uint64_t evseq_metric(const char *base, const char *name, const char *res)
{
    uint64_t v = 0;

    cr_assert(evseq_metric_try(base, name, res, &v), "%s/metrics: no %s{resource=\"%s\"}", base,
              name, res);
    return v;
}

uint64_t evseq_metric_reach(const char *base, const char *name, const char *res, uint64_t want,
                            long ms)
{
    uint64_t end = http_now_ms() + (uint64_t)ms, v = 0;

    while (!(evseq_metric_try(base, name, res, &v) && v >= want)) {
        cr_assert_lt(http_now_ms(), end,
                     "%s: %s{resource=\"%s\"} is %" PRIu64 ", not %" PRIu64 " after %ld ms", base,
                     name, res, v, want, ms);
        nap(EVSEQ_POLL_MS);
    }
    return v;
}

/* ---- sequences ---------------------------------------------------------------------------- */

void evseq_free(struct evseq *s)
{
    free(s->v);
    memset(s, 0, sizeof(*s));
}

static void evseq_push(struct evseq *s, char type, const char *name, uint64_t rv)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->v = realloc(s->v, s->cap * sizeof(*s->v));
        cr_assert_not_null(s->v);
    }
    s->v[s->n].type = type;
    snprintf(s->v[s->n].name, sizeof(s->v[s->n].name), "%s", name);
    s->v[s->n].rv = rv;
    s->n++;
}

void evseq_collect(struct watch *w, size_t *pos, uint64_t until_rv, long ms, struct evseq *out,
                   const char *what)
{
    uint64_t end = http_now_ms() + (uint64_t)ms;
    uint64_t last = out->n > 0 ? out->v[out->n - 1].rv : 0;

    for (;;) {
        const char *line;
        struct api_ev e;
        bool beyond;

        if (watch_wait_lines(w, *pos + 1, EVSEQ_POLL_MS * 5) != 0) {
            cr_assert_not(watch_ended(w, NULL, NULL), "%s: stream ended after %zu lines", what,
                          *pos);
            cr_assert_lt(http_now_ms(), end, "%s: no event beyond rv %" PRIu64 " within %ld ms",
                         what, until_rv, ms);
            continue;
        }
        line = watch_line(w, *pos, NULL);
        api_ev_parse(line, &e);
        cr_assert_str_neq(e.type, "ERROR", "%s: line %zu is an ERROR: %s", what, *pos, line);
        if (strcmp(e.type, "BOOKMARK") == 0) {
            api_ev_free(&e);
            (*pos)++;
            continue;
        }
        cr_assert_gt(e.rv, last, "%s: line %zu rv %" PRIu64 " after %" PRIu64 ": %.200s", what,
                     *pos, e.rv, last, line);
        beyond = e.rv > until_rv;
        if (!beyond) {
            char k[160];

            snprintf(k, sizeof(k), "%s/%s", json_txt(e.obj, "metadata.namespace"), e.name);
            evseq_push(out, e.type[0], k, e.rv);
            last = e.rv;
            (*pos)++;
        }
        api_ev_free(&e);
        if (beyond) {
            return;
        }
    }
}

void evseq_expect_equal(const struct evseq *got, const struct evseq *want, const char *what)
{
    size_t n = got->n < want->n ? got->n : want->n;

    for (size_t i = 0; i < n; i++) {
        const struct evrec *g = &got->v[i], *x = &want->v[i];

        cr_assert(g->type == x->type && g->rv == x->rv && strcmp(g->name, x->name) == 0,
                  "%s: event %zu is %c %s@%" PRIu64 ", the simulator's is %c %s@%" PRIu64, what, i,
                  g->type, g->name, g->rv, x->type, x->name, x->rv);
    }
    cr_assert_eq(got->n, want->n, "%s: %zu events, the simulator sent %zu (first missing: %s)",
                 what, got->n, want->n,
                 got->n < want->n ? want->v[got->n].name : got->v[want->n].name);
}

/* A list body's objects as evrecs ('A', "ns/name", rv), in the list's order. */
static void list_recs(const cJSON *list, struct evseq *out)
{
    const cJSON *items = json_at(list, "items");
    const cJSON *it;

    cr_assert(cJSON_IsArray(items), "a list body with items");
    cJSON_ArrayForEach(it, items)
    {
        char k[160];

        snprintf(k, sizeof(k), "%s/%s", json_txt(it, "metadata.namespace"),
                 json_txt(it, "metadata.name"));
        evseq_push(out, 'A', k, json_rv(it));
    }
}

static int rec_cmp(const void *a, const void *b)
{
    return strcmp(((const struct evrec *)a)->name, ((const struct evrec *)b)->name);
}

void evseq_expect_state(const cJSON *list, const struct evseq *evs, const cJSON *truth,
                        const char *what)
{
    struct evseq st = {0}, want = {0};

    list_recs(list, &st);
    for (size_t i = 0; i < evs->n; i++) {
        const struct evrec *e = &evs->v[i];
        size_t j = 0;

        while (j < st.n && strcmp(st.v[j].name, e->name) != 0) {
            j++;
        }
        if (e->type == 'D') {
            cr_assert_lt(j, st.n, "%s: DELETED %s@%" PRIu64 " of an object not held", what, e->name,
                         e->rv);
            st.v[j] = st.v[--st.n];
        } else if (j < st.n) {
            cr_assert_eq(e->type, 'M', "%s: ADDED %s@%" PRIu64 " of an object held", what, e->name,
                         e->rv);
            st.v[j].rv = e->rv;
        } else {
            cr_assert_eq(e->type, 'A', "%s: MODIFIED %s@%" PRIu64 " of an object not held", what,
                         e->name, e->rv);
            evseq_push(&st, 'A', e->name, e->rv);
        }
    }
    list_recs(truth, &want);
    qsort(st.v, st.n, sizeof(*st.v), rec_cmp);
    qsort(want.v, want.n, sizeof(*want.v), rec_cmp);
    evseq_expect_equal(&st, &want, what);
    evseq_free(&st);
    evseq_free(&want);
}
