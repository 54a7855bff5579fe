/*
 * test_writers.c - the watch writers (issue 16, proxy/fanout.c): plain-HTTP watches are
 * written by them once live, lose nothing and keep order (the same sequence on every watch,
 * against the simulator's own stream), go back to the server's buffers for bookmarks and
 * come back, end cleanly at their timeout, are let go when their client leaves, and
 * --watch-direct-write=false or https keeps every watch on the server's own path with the
 * same events. Real binaries on 127.0.0.1 port 0.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/api.h"
#include "tests/support/evseq.h"
#include "tests/support/http.h"
#include "tests/support/nap.h"
#include "tests/support/srv.h"

#define READY_MS 15000
#define WATCHES 5

static uint64_t writer_streams(const char *base)
{
    return evseq_metric(base, "kwp_watch_writer_streams", NULL);
}

/* Polls until the writers own exactly <want> streams (within <ms>); returns the last value. */
static uint64_t writer_streams_become(const char *base, uint64_t want, long ms)
{
    uint64_t v = writer_streams(base);

    for (long t = 0; t < ms && v != want; t += 50) {
        nap(50);
        v = writer_streams(base);
    }
    return v;
}

/* The current rv of the simulator (a LIST's metadata). */
static uint64_t sim_rv(const char *sim)
{
    char url[512], rv[32] = "";
    struct http_resp r;
    const char *at;

    snprintf(url, sizeof(url), "%s/api/v1/pods?limit=1", sim);
    cr_assert_eq(http_get(url, 5000, &r), 0);
    at = strstr(r.body, "\"resourceVersion\":\"");
    cr_assert_not_null(at, "%s", r.body);
    sscanf(at + 19, "%31[0-9]", rv);
    http_resp_free(&r);
    return strtoull(rv, NULL, 10);
}

/* <n> watches of pods on <base> from rv 0 (initial ADDED events, then live) with <query>. */
static void open_watches(const char *base, struct watch **w, size_t n, const char *query)
{
    char url[512];

    snprintf(url, sizeof(url), "%s/api/v1/pods?watch=1&resourceVersion=0%s", base, query);
    for (size_t i = 0; i < n; i++) {
        w[i] = watch_open(url, 60000);
        cr_assert_not_null(w[i]);
        cr_assert_eq(watch_wait_status(w[i], 10000), 200);
    }
}

/* Moves *<pos> past the lines of <w> whose event rv is <= <from> (the initial ADDED events come
 * in key order, not rv order, so evseq_collect cannot take them), waiting up to <ms>. */
static void skip_to(struct watch *w, size_t *pos, uint64_t from, long ms)
{
    for (long t = 0; t <= ms; t += 20) {
        const char *line;

        while ((line = watch_line(w, *pos, NULL)) != NULL) {
            const char *at = strstr(line, "\"resourceVersion\":\"");
            if (at != NULL && strtoull(at + 19, NULL, 10) > from) {
                return;
            }
            (*pos)++;
        }
        nap(20);
    }
    cr_assert_fail("no event after rv %llu within %ld ms", (unsigned long long)from, ms);
}

/*
 * Every watch's events after <from> up to <until> are the simulator's own stream's, the same
 * sequence, in order, nothing missing or twice (evseq_collect asserts rising rvs).
 */
static void expect_streams_match(const char *sim, struct watch **w, size_t n, uint64_t from,
                                 uint64_t until)
{
    char url[512];
    struct watch *truth;
    struct evseq want = {0};
    size_t pos = 0;

    snprintf(url, sizeof(url), "%s/api/v1/pods?watch=1&resourceVersion=%llu", sim,
             (unsigned long long)from);
    truth = watch_open(url, 60000);
    cr_assert_eq(watch_wait_status(truth, 10000), 200);
    evseq_collect(truth, &pos, until, 20000, &want, "the simulator's stream");
    watch_close(truth);
    cr_assert_gt(want.n, 50, "only %zu events in the window", want.n);
    for (size_t i = 0; i < n; i++) {
        struct evseq got = {0};
        size_t p = 0;

        skip_to(w[i], &p, from, 20000); /* the initial ADDED events, the live ones up to <from> */
        evseq_collect(w[i], &p, until, 20000, &got, "a watch");
        evseq_expect_equal(&got, &want, "a proxied watch");
        evseq_free(&got);
    }
    evseq_free(&want);
}

Test(writers, live_plain_watches_are_the_writers_and_lose_nothing, .timeout = 120)
{
    struct srv sim, px;
    struct watch *w[WATCHES];
    uint64_t from, until;
    uint64_t handovers;

    srv_spawn(&sim, "sim", ARGS("--objects", "50", "--namespaces", "1", "--churn", "300"), NULL);
    srv_spawn(&px, "proxy", ARGS("--upstream", sim.url, "--resources", "pods"), NULL);
    srv_wait_ready(&px, READY_MS);
    open_watches(px.url, w, WATCHES, "");
    cr_assert_eq(writer_streams_become(px.url, WATCHES, 5000), WATCHES,
                 "every live plain watch is the writers'");
    from = sim_rv(sim.url);
    until = from + 600; /* two seconds of churn */
    expect_streams_match(sim.url, w, WATCHES, from, until);
    handovers = evseq_metric(px.url, "kwp_watch_writer_handovers_total", NULL);
    cr_assert_geq(handovers, WATCHES);
    for (size_t i = 0; i < WATCHES; i++) {
        watch_close(w[i]);
    }
    /* the clients left: the sweep finds the closed sockets and the streams are let go */
    cr_assert_eq(writer_streams_become(px.url, 0, 10000), 0, "streams kept after the clients left");
    srv_stop(&px, "kwp proxy");
    srv_stop(&sim, "kwp sim");
}

/* POSTs object <json> to <path> of the simulator at <sim>; asserts 201. */
static void sim_create(const char *sim, const char *path, const char *json)
{
    char url[512];
    struct http_resp r;

    snprintf(url, sizeof(url), "%s%s", sim, path);
    cr_assert_eq(http_do("POST", url, "application/json", json, NULL, 5000, &r), 0);
    cr_assert_eq(r.code, 201, "%s: %ld %s", url, r.code, r.body);
    http_resp_free(&r);
}

/*
 * A bookmark goes out through the server's path and the stream comes back to the writers. A
 * bookmark is only sent past the last event (the rv must have moved): with no pod churn, the
 * simulator's configmap writes move the revision, and its own bookmarks (1 s) bring it to kwp.
 */
Test(writers, bookmarks_leave_the_writers_and_the_watch_comes_back, .timeout = 120)
{
    struct srv sim, px;
    struct watch *w;
    size_t bookmarks = 0, last = 0, added = 0;
    uint64_t h0;
    char json[256];

    srv_spawn(
        &sim, "sim",
        ARGS("--objects", "20", "--namespaces", "1", "--churn", "0", "--bookmark-interval", "1s"),
        NULL);
    srv_spawn(&px, "proxy",
              ARGS("--upstream", sim.url, "--resources", "pods", "--bookmark-interval", "1s"),
              NULL);
    srv_wait_ready(&px, READY_MS);
    open_watches(px.url, &w, 1, "&allowWatchBookmarks=true");
    cr_assert_eq(writer_streams_become(px.url, 1, 5000), 1);
    h0 = evseq_metric(px.url, "kwp_watch_writer_handovers_total", NULL);
    for (int t = 0; t < 60 && bookmarks < 3; t++) {
        snprintf(json, sizeof(json),
                 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c%d\"}}",
                 t);
        sim_create(sim.url, "/api/v1/namespaces/default/configmaps", json);
        nap(200);
        for (size_t n = watch_line_count(w); last < n; last++) {
            if (strstr(watch_line(w, last, NULL), "\"type\":\"BOOKMARK\"") != NULL) {
                bookmarks++;
            }
        }
    }
    cr_assert_geq(bookmarks, 3, "%zu bookmarks in 12 s at --bookmark-interval 1s", bookmarks);
    cr_assert_gt(evseq_metric(px.url, "kwp_watch_writer_handovers_total", NULL), h0,
                 "the watch never came back to the writers after a bookmark");
    cr_assert_eq(writer_streams_become(px.url, 1, 5000), 1);
    /* and new pods still arrive, from the writers */
    for (int i = 0; i < 5; i++) {
        snprintf(json, sizeof(json),
                 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"late-%d\"},"
                 "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}",
                 i);
        sim_create(sim.url, "/api/v1/namespaces/default/pods", json);
    }
    for (int t = 0; t < 100 && added < 5; t++) {
        nap(50);
        added = 0;
        for (size_t i = 0, n = watch_line_count(w); i < n; i++) {
            const char *l = watch_line(w, i, NULL);
            added += strstr(l, "\"type\":\"ADDED\"") && strstr(l, "\"name\":\"late-") ? 1 : 0;
        }
    }
    cr_assert_eq(added, 5, "%zu of the 5 new pods arrived", added);
    watch_close(w);
    srv_stop(&px, "kwp proxy");
    srv_stop(&sim, "kwp sim");
}

/* timeoutSeconds ends the stream cleanly (the terminating chunk), from the writers. */
Test(writers, a_watch_timeout_ends_the_stream_cleanly, .timeout = 60)
{
    struct srv sim, px;
    struct watch *w;
    uint64_t at;
    int rc = -1;

    srv_spawn(&sim, "sim", ARGS("--objects", "20", "--namespaces", "1", "--churn", "100"), NULL);
    srv_spawn(&px, "proxy", ARGS("--upstream", sim.url, "--resources", "pods"), NULL);
    srv_wait_ready(&px, READY_MS);
    open_watches(px.url, &w, 1, "&timeoutSeconds=2");
    cr_assert_eq(writer_streams_become(px.url, 1, 1500), 1);
    cr_assert_eq(watch_wait_end(w, 10000), 0, "the watch did not end at its timeout");
    cr_assert(watch_ended(w, &at, &rc));
    cr_assert_eq(rc, 0, "curl %d: not a clean end of the chunked body", rc);
    cr_assert_gt(watch_line_count(w), 100);
    cr_assert_eq(writer_streams_become(px.url, 0, 3000), 0);
    watch_close(w);
    srv_stop(&px, "kwp proxy");
    srv_stop(&sim, "kwp sim");
}

/* --watch-direct-write=false and https: no stream is the writers', the events are the same. */
static void server_path_only(const char *const *proxy_args, const char *scheme_note)
{
    struct srv sim, px;
    struct watch *w[2];
    uint64_t from;

    srv_spawn(&sim, "sim", ARGS("--objects", "30", "--namespaces", "1", "--churn", "200"), NULL);
    srv_spawn(&px, "proxy", ARGS("--upstream", sim.url, "--resources", "pods"), proxy_args);
    srv_wait_ready(&px, READY_MS);
    open_watches(px.url, w, 2, "");
    nap(500);
    cr_assert_eq(writer_streams(px.url), 0, "%s: a stream went to the writers", scheme_note);
    cr_assert_eq(evseq_metric(px.url, "kwp_watch_writer_handovers_total", NULL), 0);
    from = sim_rv(sim.url);
    expect_streams_match(sim.url, w, 2, from, from + 400);
    for (size_t i = 0; i < 2; i++) {
        watch_close(w[i]);
    }
    srv_stop(&px, "kwp proxy");
    srv_stop(&sim, "kwp sim");
}

Test(writers, watch_direct_write_false_keeps_every_watch_on_the_server, .timeout = 120)
{
    server_path_only(ARGS("--watch-direct-write=false"), "--watch-direct-write=false");
}

Test(writers, https_watches_stay_on_the_server_path, .timeout = 120)
{
    char dir[] = "/tmp/kwp-writers-XXXXXX", cmd[1024], crt[256], key[256];

    cr_assert_not_null(mkdtemp(dir));
    snprintf(crt, sizeof(crt), "%s/srv.crt", dir);
    snprintf(key, sizeof(key), "%s/srv.key", dir);
    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout %s "
             "-out %s -days 2 -subj /CN=kwp-test -addext subjectAltName=IP:127.0.0.1 "
             ">/dev/null 2>&1",
             key, crt);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    http_set_ca_file(crt);
    server_path_only(ARGS("--tls-cert-file", crt, "--tls-key-file", key), "https");
    http_set_ca_file(NULL);
    unlink(crt);
    unlink(key);
    rmdir(dir);
}
