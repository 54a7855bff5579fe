/*
 * test_replicas.c - two kwp proxies A and B on one `kwp sim` (issue 13, "Replicas and
 * tiers"): replicas behind one Service, each with its own cache. A client lists from one and
 * watches from the other with the list's resourceVersion while the simulator writes pods
 * (--churn): it must get no 410 and miss no event.
 *
 * The truth is the simulator itself: its Exact LIST at an RV is the state there, and a watch
 * on it from the same RV is the reference sequence. A replica's answer is compared with them
 * by (type, namespace/name, rv): the list at N equals the sim's state at N, the watch from N
 * on the other replica is the sim's sequence (nothing missing, nothing duplicated, order
 * kept), and the list plus the events is the sim's state at the end.
 *
 * A replica that is behind (its upstream watch held by a TCP relay in this process) answers as the
 * README says: LIST rv=N waits --freshness-wait and forwards (default --too-large-rv
 * forward), or waits 3 s and answers kube-apiserver's 504 (local), or answers from its cache
 * as soon as it catches up within the 3 s; WATCH rv=N stays silent until the replica passes N
 * and then delivers from N without a gap. A replica started after the client's list has no
 * history below its own list RV: WATCH there is forwarded upstream (no 410, no gap).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "tests/support/api.h"
#include "tests/support/evseq.h"
#include "tests/support/http.h"
#include "tests/support/json.h"
#include "tests/support/nap.h"
#include "tests/support/relay.h"
#include "tests/support/srv.h"

#define READY_MS 30000L
#define COLLECT_MS 20000L
#define CHURN "25"     /* pod writes per second, for the whole test (the sim stops with it) */
#define WRITES_MS 1500 /* how long the writes run between the list and the comparison */

struct replicas {
    struct srv sim, a, b;
    struct relay *rl; /* between the sim and B, or NULL */
};

static void sim_up(struct replicas *r)
{
    memset(r, 0, sizeof(*r));
    srv_spawn(&r->sim, "sim",
              ARGS("--objects", "40", "--namespaces", "3", "--churn", CHURN,
                   "--compaction-interval", "0", "--watch-max-lag", "0"),
              NULL);
}

static void proxy_up(struct srv *px, const char *up, const char *const *more)
{
    srv_spawn(px, "proxy", ARGS("--upstream", up, "--resources", "pods"), more);
    srv_wait_ready(px, READY_MS);
}

/* The sim, A, and B (behind a relay when <relay>, with <b_args> added). */
static void replicas_up(struct replicas *r, bool relay, const char *const *b_args)
{
    sim_up(r);
    proxy_up(&r->a, r->sim.url, NULL);
    if (relay) {
        r->rl = relay_new(r->sim.url);
    }
    proxy_up(&r->b, relay ? relay_url(r->rl) : r->sim.url, b_args);
}

static void replicas_down(struct replicas *r)
{
    srv_stop(&r->a, "kwp proxy A");
    srv_stop(&r->b, "kwp proxy B");
    if (r->rl != NULL) {
        relay_free(r->rl);
    }
    srv_stop(&r->sim, "kwp sim");
}

/* GET <base><path>, 200, parsed (the caller frees it). */
static cJSON *list_json(const char *base, const char *path)
{
    struct http_resp r;
    cJSON *j;

    api_req(base, "GET", path, NULL, NULL, NULL, &r);
    cr_assert_eq(r.code, 200, "GET %s%s: HTTP %ld %.300s", base, path, r.code, r.body);
    j = json_body(&r);
    http_resp_free(&r);
    return j;
}

/* The simulator's state at <rv> (its Exact LIST). */
static cJSON *truth_at(const struct replicas *r, uint64_t rv)
{
    char path[128];

    snprintf(path, sizeof(path),
             "/api/v1/pods?resourceVersion=%" PRIu64 "&resourceVersionMatch=Exact", rv);
    return list_json(r->sim.url, path);
}

/*
 * The client's move: <list> (a LIST body from one replica, at N) then WATCH rv=N on
 * <watch_base>, opened now, against the sim's own watch from N: after WRITES_MS of writes
 * both sequences up to the sim's revision then must be equal, and the list plus the events
 * the sim's state there. <before_first> runs after the watches opened and before any event
 * is awaited (NULL: nothing), for a replica that must first catch up.
 */
static void expect_no_gap(struct replicas *r, const cJSON *list, const char *watch_base,
                          void (*before_first)(struct replicas *, struct watch *), const char *what)
{
    struct evseq got = {0}, want = {0};
    uint64_t n = json_rv(list), until;
    struct watch *wb, *ws;
    size_t pb = 0, ps = 0;
    char path[128];
    cJSON *truth;

    truth = truth_at(r, n);
    evseq_expect_state(list, &(struct evseq){0}, truth, what);
    cJSON_Delete(truth);
    snprintf(path, sizeof(path), "/api/v1/pods?watch=1&resourceVersion=%" PRIu64, n);
    wb = api_watch(watch_base, path, 200);
    ws = api_watch(r->sim.url, path, 200);
    if (before_first != NULL) {
        before_first(r, wb);
    }
    nap(WRITES_MS);
    until = api_sim_stat(r->sim.url, "revision");
    evseq_collect(ws, &ps, until, COLLECT_MS, &want, "the sim's watch");
    evseq_collect(wb, &pb, until, COLLECT_MS, &got, what);
    cr_assert_gt(want.n, 0u, "%s: the sim wrote nothing in %d ms", what, WRITES_MS);
    evseq_expect_equal(&got, &want, what);
    truth = truth_at(r, until);
    evseq_expect_state(list, &got, truth, what);
    cJSON_Delete(truth);
    evseq_free(&got);
    evseq_free(&want);
    watch_close(wb);
    watch_close(ws);
}

/* (a) and (b): LIST on one replica (rv 0: its cache; rv unset: the sim's consistent read),
 * WATCH on the other, both ways. */
Test(replicas, list_on_one_watch_on_the_other_misses_nothing, .timeout = 180)
{
    struct replicas r;
    const struct srv *from[] = {&r.a, &r.b};
    const struct srv *to[] = {&r.b, &r.a};
    const char *queries[] = {"/api/v1/pods?resourceVersion=0", "/api/v1/pods",
                             "/api/v1/pods?resourceVersion=0&limit=500"};

    replicas_up(&r, false, NULL);
    for (size_t d = 0; d < 2; d++) {
        for (size_t q = 0; q < sizeof(queries) / sizeof(queries[0]); q++) {
            char what[256];
            cJSON *list = list_json(from[d]->url, queries[q]);

            snprintf(what, sizeof(what), "%s from %s, watched on %s", queries[q],
                     d == 0 ? "A" : "B", d == 0 ? "B" : "A");
            expect_no_gap(&r, list, to[d]->url, NULL, what);
            cJSON_Delete(list);
        }
    }
    replicas_down(&r);
}

/* B's upstream held for <ms>: B falls behind A while the sim writes. Returns B's rv then. */
static uint64_t b_falls_behind(struct replicas *r, long ms)
{
    uint64_t b0;

    relay_hold_open(r->rl, true); /* B's upstream watch; what B forwards gets through */
    nap(ms);
    b0 = evseq_metric(r->b.url, "kwp_resource_version", "pods");
    cr_assert_lt(b0, api_sim_stat(r->sim.url, "revision"), "B is behind");
    return b0;
}

/* Before the first event of B's watch: nothing can come while B is behind N; then B's
 * upstream is let go. */
static void silent_then_release(struct replicas *r, struct watch *wb)
{
    nap(500);
    cr_assert_eq(watch_line_count(wb), 0u, "B is behind N: nothing to send yet, got %s",
                 watch_line_count(wb) ? watch_line(wb, 0, NULL) : "");
    cr_assert_not(watch_ended(wb, NULL, NULL), "the watch from a future rv stays open");
    relay_hold_open(r->rl, false);
}

/* (c), default --too-large-rv forward: LIST rv=N on a B behind N is forwarded after
 * --freshness-wait and is the sim's answer; WATCH rv=N waits for B and has no gap. */
Test(replicas, a_replica_behind_forwards_the_list_and_watches_without_gap, .timeout = 180)
{
    struct replicas r;
    uint64_t b0, n, fwd0;
    char path[128];
    cJSON *list, *fwd, *truth;

    replicas_up(&r, true, NULL);
    b0 = b_falls_behind(&r, 1500);
    list = list_json(r.a.url, "/api/v1/pods?resourceVersion=0");
    n = json_rv(list);
    cr_assert_gt(n, b0, "A (%" PRIu64 ") is ahead of B (%" PRIu64 ")", n, b0);
    fwd0 = evseq_metric(r.b.url, "kwp_forwarded_total", "pods");
    snprintf(path, sizeof(path), "/api/v1/pods?resourceVersion=%" PRIu64, n);
    fwd = list_json(r.b.url, path);
    cr_assert_geq(json_rv(fwd), n, "not older than N");
    truth = truth_at(&r, json_rv(fwd));
    evseq_expect_state(fwd, &(struct evseq){0}, truth, "LIST rv=N on B, forwarded");
    cr_assert_eq(evseq_metric(r.b.url, "kwp_forwarded_total", "pods"), fwd0 + 1,
                 "B forwarded it (it was behind)");
    cr_assert_lt(evseq_metric(r.b.url, "kwp_resource_version", "pods"), n, "B is still behind");
    cJSON_Delete(truth);
    cJSON_Delete(fwd);
    expect_no_gap(&r, list, r.b.url, silent_then_release, "WATCH rv=N on B, behind");
    cJSON_Delete(list);
    replicas_down(&r);
}

struct release_later {
    struct relay *rl;
    long ms;
};

static void *release_main(void *arg)
{
    struct release_later *rel = arg;

    nap(rel->ms);
    relay_hold_open(rel->rl, false);
    return NULL;
}

/* (c) with --too-large-rv local: LIST rv=N on a B behind N answers kube-apiserver's 504
 * after 3 s when B stays behind, and B's own consistent answer as soon as it catches up. */
Test(replicas, a_replica_behind_with_local_too_large_rv_waits_then_504s, .timeout = 180)
{
    struct replicas r;
    uint64_t b0, n, t0, took;
    char path[128], want[1024];
    struct http_resp resp;
    struct release_later rel;
    pthread_t t;
    cJSON *list, *got, *truth;

    replicas_up(&r, true, ARGS("--too-large-rv", "local"));
    b0 = b_falls_behind(&r, 1000);
    list = list_json(r.a.url, "/api/v1/pods?resourceVersion=0");
    n = json_rv(list);
    cJSON_Delete(list);
    snprintf(path, sizeof(path), "/api/v1/pods?resourceVersion=%" PRIu64, n);
    t0 = http_now_ms();
    api_req(r.b.url, "GET", path, NULL, NULL, NULL, &resp);
    took = http_now_ms() - t0;
    snprintf(want, sizeof(want), API_TOO_LARGE_FMT "\n", n, b0);
    cr_assert_eq(resp.code, 504, "HTTP %ld %s", resp.code, resp.body);
    cr_assert_str_eq(resp.body, want);
    api_expect_header(&resp, "Retry-After", "1");
    cr_assert_geq(took, 2900, "the 504 comes after the 3 s wait, not after %" PRIu64 " ms", took);
    http_resp_free(&resp);

    /* Held again, a fresh N from A; B's upstream let go 1 s into the wait. */
    list = list_json(r.a.url, "/api/v1/pods?resourceVersion=0");
    n = json_rv(list);
    cJSON_Delete(list);
    rel = (struct release_later){.rl = r.rl, .ms = 1000};
    cr_assert_eq(pthread_create(&t, NULL, release_main, &rel), 0);
    snprintf(path, sizeof(path), "/api/v1/pods?resourceVersion=%" PRIu64, n);
    t0 = http_now_ms();
    got = list_json(r.b.url, path);
    took = http_now_ms() - t0;
    pthread_join(t, NULL);
    cr_assert_geq(json_rv(got), n);
    cr_assert_lt(took, 2900, "answered once B caught up (%" PRIu64 " ms)", took);
    truth = truth_at(&r, json_rv(got));
    evseq_expect_state(got, &(struct evseq){0}, truth, "LIST rv=N on B once caught up");
    cr_assert_eq(evseq_metric(r.b.url, "kwp_forwarded_total", "pods"), 0, "local: never forwarded");
    cJSON_Delete(truth);
    cJSON_Delete(got);
    replicas_down(&r);
}

/* A replica started after the client's list: LIST rv=N is served (B is past N); WATCH rv=N,
 * below B's own list RV, is not the 410 a restarted kube-apiserver's watch cache would give:
 * B's history is whole (it began after N), so the watch goes upstream (counted in
 * kwp_watches_before_cache_total) and has no gap; the client's next re-watch, from a newer
 * RV, is B's own. */
Test(replicas, a_replica_started_later_forwards_watches_from_before_it, .timeout = 180)
{
    struct replicas r;
    uint64_t n, b_list, fwd0;
    char path[128];
    cJSON *list, *again, *truth;

    sim_up(&r);
    proxy_up(&r.a, r.sim.url, NULL);
    list = list_json(r.a.url, "/api/v1/pods?resourceVersion=0");
    n = json_rv(list);
    nap(500); /* writes go on */
    proxy_up(&r.b, r.sim.url, NULL);
    b_list = evseq_metric(r.b.url, "kwp_resource_version", "pods");
    cr_assert_gt(b_list, n);

    snprintf(path, sizeof(path), "/api/v1/pods?resourceVersion=%" PRIu64, n);
    again = list_json(r.b.url, path);
    cr_assert_geq(json_rv(again), b_list);
    truth = truth_at(&r, json_rv(again));
    evseq_expect_state(again, &(struct evseq){0}, truth, "LIST rv=N on B");
    cJSON_Delete(truth);

    fwd0 = evseq_metric(r.b.url, "kwp_watches_before_cache_total", "pods");
    expect_no_gap(&r, list, r.b.url, NULL, "list on A, watch from before B began on B");
    cr_assert_eq(evseq_metric(r.b.url, "kwp_watches_before_cache_total", "pods"), fwd0 + 1,
                 "B forwarded the watch from before its history");
    /* a watch from inside B's history stays B's own */
    expect_no_gap(&r, again, r.b.url, NULL, "relist on B, watch on B");
    cr_assert_eq(evseq_metric(r.b.url, "kwp_watches_before_cache_total", "pods"), fwd0 + 1);
    expect_no_gap(&r, again, r.a.url, NULL, "relist on B, watch on A");
    cJSON_Delete(again);
    cJSON_Delete(list);
    replicas_down(&r);
}
