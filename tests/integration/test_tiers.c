/*
 * test_tiers.c - kwp in front of kwp (issue 13, "Replicas and tiers"): `kwp sim` <- proxy T1
 * <- proxy T2 (T2's --upstream is T1's URL).
 *
 *   - Every kind of request a client sends gets through T2 what it gets through T1: the same
 *     status, Content-Type and body bytes (LIST at rv unset, 0, N and Exact, limit/continue
 *     pages from the cache and from upstream, selectors, GET, 404, bad requests, Table,
 *     PartialObjectMetadata, protobuf Accept, discovery, watches with initial events and the
 *     end bookmark, the 410 of a too old watch, and forwarded writes and their errors).
 *   - A relist in T1 reaches T2's watchers only when events were lost: a relist that finds
 *     the state T1 holds (the upstream compacted past T1's rv while its watch was down, but
 *     nothing of the resource changed) keeps T1's history and watches, so T2 sees nothing; a
 *     relist with lost writes ends T2's watches cleanly and a re-watch below gets the 410.
 *
 * T1's upstream faults come from a TCP relay in this process (hold, then cut) and the sim's
 * POST /_sim/reset-history (an apiserver restart, for T1's re-watch to get 410). Waits are
 * bounded polls; every server is stopped with an asserted exit status 0.
 */
#include <inttypes.h>
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
#include "tests/support/relay.h"
#include "tests/support/srv.h"

#define READY_MS 30000L
#define SYNC_MS 15000L
#define RELIST_MS 30000L
#define WATCH_END_MS 15000L

struct chain {
    struct srv sim, t1, t2;
    struct relay *rl; /* between the sim and T1, or NULL */
};

static void chain_up_with(struct chain *c, bool relay, const char *resources,
                          const char *const *proxy_args)
{
    memset(c, 0, sizeof(*c));
    srv_spawn(&c->sim, "sim", ARGS("--objects", "0", "--churn", "0", "--compaction-interval", "0"),
              NULL);
    if (relay) {
        c->rl = relay_new(c->sim.url);
    }
    srv_spawn(&c->t1, "proxy",
              ARGS("--upstream", relay ? relay_url(c->rl) : c->sim.url, "--resources", resources),
              proxy_args);
    srv_wait_ready(&c->t1, READY_MS);
    srv_spawn(&c->t2, "proxy", ARGS("--upstream", c->t1.url, "--resources", resources), proxy_args);
    srv_wait_ready(&c->t2, READY_MS);
}

static void chain_up(struct chain *c, bool relay, const char *resources)
{
    chain_up_with(c, relay, resources, NULL);
}

/* The outer tier first: no shutdown may depend on the one behind it. */
static void chain_down(struct chain *c)
{
    srv_stop(&c->t2, "kwp proxy T2");
    srv_stop(&c->t1, "kwp proxy T1");
    if (c->rl != NULL) {
        relay_free(c->rl);
    }
    srv_stop(&c->sim, "kwp sim");
}

/* Waits until both tiers' cache of <res> is at <rv>. */
static void tiers_at(const struct chain *c, const char *res, uint64_t rv)
{
    evseq_metric_reach(c->t1.url, "kwp_resource_version", res, rv, SYNC_MS);
    evseq_metric_reach(c->t2.url, "kwp_resource_version", res, rv, SYNC_MS);
}

/* ---- the same answer through one tier and through two --------------------------------- */

/* One request to T1 and the same to T2; returns whether status, Content-Type and body bytes
 * are equal (a difference is printed), with T1's status through <code1>. */
static bool same_answer(const struct chain *c, const char *method, const char *path,
                        const char *accept, const char *ctype, const char *body, long *code1)
{
    const char *hdrs[] = {accept, NULL};
    struct http_resp a, b;
    char cta[256] = "", ctb[256] = "";
    bool same;

    api_req(c->t1.url, method, path, ctype, body, accept ? hdrs : NULL, &a);
    api_req(c->t2.url, method, path, ctype, body, accept ? hdrs : NULL, &b);
    http_resp_header(&a, "Content-Type", cta, sizeof(cta));
    http_resp_header(&b, "Content-Type", ctb, sizeof(ctb));
    same = a.code == b.code && strcmp(cta, ctb) == 0 && a.body_len == b.body_len &&
           memcmp(a.body, b.body, a.body_len) == 0;
    if (!same) {
        fprintf(stderr, "%s %s (%s)\n  T1: %ld %s %.600s\n  T2: %ld %s %.600s\n", method, path,
                accept ? accept : "default Accept", a.code, cta, a.body, b.code, ctb, b.body);
    }
    *code1 = a.code;
    http_resp_free(&a);
    http_resp_free(&b);
    return same;
}

/* Asserts T2 answers as T1, and T1 with <want>. */
static void expect_same(const struct chain *c, const char *path, const char *accept, long want)
{
    long code = 0;

    cr_assert(same_answer(c, "GET", path, accept, NULL, NULL, &code),
              "GET %s: T2's answer differs from T1's (above)", path);
    cr_assert_eq(code, want, "GET %s: HTTP %ld through T1, expected %ld", path, code, want);
}

/* The same for a body with Table ages in it (HumanDuration of now - creationTimestamp): the
 * two requests may straddle a second, so one of three tries must agree. */
static void expect_same_aged(const struct chain *c, const char *path, const char *accept)
{
    long code = 0;
    bool same = false;

    for (int i = 0; i < 3 && !same; i++) {
        same = same_answer(c, "GET", path, accept, NULL, NULL, &code);
    }
    cr_assert(same, "GET %s (%s): T2's answer differs from T1's in three tries", path, accept);
    cr_assert_eq(code, 200);
}

/* The continue token of a LIST body; asserts there is one. Returns a heap copy, escaped for
 * a query. */
static char *continue_of(const char *base, const char *path)
{
    struct http_resp r;
    const char *tok;
    char *esc;
    cJSON *j;

    api_req(base, "GET", path, NULL, NULL, NULL, &r);
    cr_assert_eq(r.code, 200, "GET %s: %ld %s", path, r.code, r.body);
    j = json_body(&r);
    tok = json_str(j, "metadata.continue");
    cr_assert_not_null(tok, "GET %s: no continue token: %.300s", path, r.body);
    esc = malloc(strlen(tok) * 3 + 1);
    cr_assert_not_null(esc);
    for (size_t i = 0, o = 0;; i++) {
        unsigned char ch = (unsigned char)tok[i];

        if (ch == '\0') {
            esc[o] = '\0';
            break;
        }
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '_') {
            esc[o++] = (char)ch;
        } else {
            o += (size_t)snprintf(esc + o, 4, "%%%02X", ch);
        }
    }
    cJSON_Delete(j);
    http_resp_free(&r);
    return esc;
}

/* Watches <path> (which bounds itself with timeoutSeconds) on both tiers at once and asserts
 * both streams end cleanly with the same lines; returns how many. */
static size_t expect_same_watch(const struct chain *c, const char *path, size_t min_lines)
{
    struct watch *a = api_watch(c->t1.url, path, 200);
    struct watch *b = api_watch(c->t2.url, path, 200);
    size_t n;

    cr_assert_eq(watch_wait_end(a, WATCH_END_MS), 0, "T1 watch %s did not end", path);
    cr_assert_eq(watch_wait_end(b, WATCH_END_MS), 0, "T2 watch %s did not end", path);
    {
        char cta[128] = "", ctb[128] = "";

        http_header_get(watch_headers(a), "Content-Type", cta, sizeof(cta));
        http_header_get(watch_headers(b), "Content-Type", ctb, sizeof(ctb));
        cr_assert_str_eq(ctb, cta, "watch %s: Content-Type", path);
    }
    n = watch_line_count(a);
    cr_assert_geq(n, min_lines, "T1 watch %s: %zu lines", path, n);
    for (size_t i = 0; i < n && i < watch_line_count(b); i++) {
        cr_assert_str_eq(watch_line(b, i, NULL), watch_line(a, i, NULL),
                         "watch %s line %zu: T2 differs from T1", path, i);
    }
    cr_assert_eq(watch_line_count(b), n, "watch %s: T2 sent %zu lines, T1 %zu", path,
                 watch_line_count(b), n);
    watch_close(a);
    watch_close(b);
    return n;
}

/* Creates <name> through <base> and asserts the answer is the object as the sim holds it. */
static void write_matches_sim(const struct chain *c, const char *base, const char *method,
                              const char *path, const char *ctype, const char *body, long want,
                              const char *obj_path)
{
    struct http_resp w, s;
    char ct[256] = "";

    api_req(base, method, path, ctype, body, NULL, &w);
    cr_assert_eq(w.code, want, "%s %s via %s: HTTP %ld %s", method, path, base, w.code, w.body);
    cr_assert(http_resp_header(&w, "Content-Type", ct, sizeof(ct)));
    cr_assert_str_eq(ct, "application/json", "%s %s via %s", method, path, base);
    api_req(c->sim.url, "GET", obj_path, NULL, NULL, NULL, &s);
    if (strcmp(method, "DELETE") == 0) {
        cr_assert_eq(s.code, 404, "deleted through %s, the sim still has it", base);
    } else {
        cr_assert(
            s.code == 200 && s.body_len == w.body_len && memcmp(s.body, w.body, s.body_len) == 0,
            "%s %s via %s answered\n%s\nthe sim holds\n%s", method, path, base, w.body, s.body);
    }
    http_resp_free(&w);
    http_resp_free(&s);
}

/* The write sequence, once through T1 (names w1-*) and once through T2 (w2-*). */
static void writes_through(const struct chain *c, const struct srv *via, const char *tag)
{
    char body[512], path[256], obj[256];
    struct http_resp g;
    cJSON *j;

    snprintf(obj, sizeof(obj), "/api/v1/namespaces/t/configmaps/%s-cm", tag);
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s-cm\"},"
             "\"data\":{\"k\":\"1\"}}",
             tag);
    write_matches_sim(c, via->url, "POST", "/api/v1/namespaces/t/configmaps", "application/json",
                      body, 201, obj);
    /* PUT of what the sim holds, with a changed value (its resourceVersion included) */
    api_req(c->sim.url, "GET", obj, NULL, NULL, NULL, &g);
    j = json_body(&g);
    http_resp_free(&g);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "data"), "k", cJSON_CreateString("2"));
    {
        char *put = cJSON_PrintUnformatted(j);

        write_matches_sim(c, via->url, "PUT", obj, "application/json", put, 200, obj);
        free(put);
    }
    cJSON_Delete(j);
    write_matches_sim(c, via->url, "PATCH", obj, "application/merge-patch+json",
                      "{\"data\":{\"k\":\"3\"}}", 200, obj);
    snprintf(path, sizeof(path), "%s", obj);
    write_matches_sim(c, via->url, "DELETE", path, NULL, NULL, 200, obj);
}

/* Requests whose answer does not depend on the test's RVs: path, Accept (NULL: JSON), the
 * status T1 gives. */
static const struct {
    const char *path, *accept;
    long code;
} fixed[] = {
    {"/api/v1/namespaces/t/configmaps/c01?resourceVersion=0", NULL, 200},
    {"/api/v1/namespaces/t/configmaps/c01", NULL, 200},
    {"/api/v1/namespaces/t/configmaps/zzz?resourceVersion=0", NULL, 404},
    {"/api/v1/namespaces/t/configmaps/zzz", NULL, 404},
    {"/api/v1/namespaces/t/foos", NULL, 404},
    {"/api/v1/configmaps?resourceVersion=abc", NULL, 400},
    {"/api/v1/configmaps?resourceVersionMatch=Exact", NULL, 422},
    {"/api/v1/configmaps?resourceVersion=0&fieldSelector=spec.foo%3Dbar", NULL, 400},
    {"/api/v1/configmaps?continue=garbage!!", NULL, 400},
    {"/api/v1/configmaps?watch=1&resourceVersion=abc", NULL, 500},
    {"/api/v1/namespaces/t/configmaps?resourceVersion=0",
     "Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", 200},
    {"/api/v1/namespaces/t/configmaps/c01?resourceVersion=0",
     "Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", 200},
    {"/api/v1/namespaces/t/configmaps?resourceVersion=0",
     "Accept: application/vnd.kubernetes.protobuf, application/json", 200},
    {"/api/v1/configmaps?resourceVersion=0&pretty=true", NULL, 200},
    {"/api", NULL, 200},
    {"/api/v1", NULL, 200},
    {"/apis", NULL, 200},
    {"/apis/apps/v1", NULL, 200},
    {"/version", NULL, 200},
};

Test(tiers, every_request_through_two_tiers_as_through_one, .timeout = 240)
{
    struct chain c;
    uint64_t rv_first = 0, rv_mid = 0, rv_cm = 0, rv_pod = 0;
    char path[1024], *tok;
    long code = 0;

    chain_up(&c, false, "configmaps,pods");
    /* Written after both tiers listed, so each resource's rv is its last write in both. */
    api_make_ns(c.sim.url, "t");
    rv_pod = api_pod_create(c.sim.url, "t", "p1", "{\"app\":\"x\"}");
    rv_pod = api_pod_create(c.sim.url, "t", "p2", "{\"app\":\"y\"}");
    for (int i = 1; i <= 7; i++) {
        char name[16];
        uint64_t rv;

        snprintf(name, sizeof(name), "c%02d", i);
        rv = api_cm_create(c.sim.url, "t", name, i % 2 ? "{\"app\":\"x\"}" : "{\"app\":\"y\"}", "1",
                           NULL);
        rv_first = rv_first ? rv_first : rv;
        rv_mid = i == 4 ? rv : rv_mid;
        rv_cm = rv;
    }
    rv_cm = api_cm_patch(c.sim.url, "t", "c02", "{\"data\":{\"k\":\"2\"}}", NULL);
    tiers_at(&c, "configmaps", rv_cm);
    tiers_at(&c, "pods", rv_pod);

    /* LIST: from the cache (rv 0, N, Exact), and consistent (forwarded by both tiers). */
    expect_same(&c, "/api/v1/namespaces/t/configmaps?resourceVersion=0", NULL, 200);
    expect_same(&c, "/api/v1/configmaps?resourceVersion=0", NULL, 200);
    expect_same(&c, "/api/v1/namespaces/t/configmaps", NULL, 200);
    expect_same(&c, "/api/v1/pods?resourceVersion=0", NULL, 200);
    snprintf(path, sizeof(path), "/api/v1/namespaces/t/configmaps?resourceVersion=%" PRIu64, rv_cm);
    expect_same(&c, path, NULL, 200);
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/t/configmaps?resourceVersion=%" PRIu64
             "&resourceVersionMatch=Exact",
             rv_mid);
    expect_same(&c, path, NULL, 200);
    /* Pages: minted by the tiers' caches (rv N, NotOlderThan), then by the sim (rv unset). */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/t/configmaps?limit=3&resourceVersion=%" PRIu64
             "&resourceVersionMatch=NotOlderThan",
             rv_first);
    expect_same(&c, path, NULL, 200);
    tok = continue_of(c.t1.url, path);
    snprintf(path, sizeof(path), "/api/v1/namespaces/t/configmaps?limit=3&continue=%s", tok);
    expect_same(&c, path, NULL, 200);
    free(tok);
    snprintf(path, sizeof(path), "/api/v1/configmaps?limit=2&resourceVersion=%" PRIu64, rv_mid);
    expect_same(&c, path, NULL, 200); /* legacy exact */
    expect_same(&c, "/api/v1/namespaces/t/configmaps?limit=2", NULL, 200);
    tok = continue_of(c.t1.url, "/api/v1/namespaces/t/configmaps?limit=2");
    snprintf(path, sizeof(path), "/api/v1/namespaces/t/configmaps?limit=2&continue=%s", tok);
    expect_same(&c, path, NULL, 200);
    free(tok);
    /* Selectors. */
    expect_same(&c, "/api/v1/configmaps?resourceVersion=0&labelSelector=app%3Dx", NULL, 200);
    expect_same(&c, "/api/v1/namespaces/t/configmaps?resourceVersion=0&limit=2&labelSelector=app",
                NULL, 200);
    expect_same(&c, "/api/v1/configmaps?resourceVersion=0&fieldSelector=metadata.name%3Dc03", NULL,
                200);
    expect_same(&c,
                "/api/v1/pods?resourceVersion=0&fieldSelector=spec.nodeName%3D,metadata."
                "namespace%3Dt",
                NULL, 200);
    /* GET, 404, bad requests, transforms and encodings, discovery (forwarded twice). */
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        expect_same(&c, fixed[i].path, fixed[i].accept, fixed[i].code);
    }
    expect_same_aged(&c, "/api/v1/namespaces/t/configmaps?resourceVersion=0",
                     "Accept: application/json;as=Table;g=meta.k8s.io;v=v1");
    expect_same_aged(&c, "/api/v1/namespaces/t/pods?resourceVersion=0",
                     "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/"
                     "json;as=Table;v=v1beta1;g=meta.k8s.io,application/json");
    cr_assert(same_answer(&c, "GET", "/api/v1/namespaces/t/configmaps?resourceVersion=0",
                          "Accept: application/vnd.kubernetes.protobuf", NULL, NULL, &code),
              "protobuf only: T2 differs from T1");

    /* WATCH: replay from N, initial events with the end bookmark, watch-list, 410. */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/t/configmaps?watch=1&resourceVersion=%" PRIu64 "&timeoutSeconds=2",
             rv_first);
    expect_same_watch(&c, path, 7);
    expect_same_watch(&c,
                      "/api/v1/configmaps?watch=1&resourceVersion=0&allowWatchBookmarks=true&"
                      "timeoutSeconds=2",
                      8);
    expect_same_watch(&c,
                      "/api/v1/namespaces/t/configmaps?watch=1&sendInitialEvents=true&"
                      "resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&"
                      "resourceVersion=&labelSelector=app%3Dx&timeoutSeconds=2",
                      5);
    expect_same_watch(&c,
                      "/api/v1/pods?watch=1&resourceVersion=0&fieldSelector=metadata.name%3Dp1&"
                      "timeoutSeconds=2",
                      1);
    /* rv 1 is older than both caches (their histories began at their lists): each forwards
     * the watch (kwp_watches_before_cache_total), and once the sim has compacted past it the
     * sim's own 410 comes back through both tiers. */
    {
        struct http_resp cr;
        char cpath[96];

        snprintf(cpath, sizeof(cpath), "/_sim/compact?revision=%" PRIu64, rv_first);
        api_req(c.sim.url, "POST", cpath, NULL, NULL, NULL, &cr);
        cr_assert_eq(cr.code, 200, "compact: %ld %s", cr.code, cr.body);
        http_resp_free(&cr);
    }
    cr_assert_eq(expect_same_watch(&c, "/api/v1/configmaps?watch=1&resourceVersion=1", 1), 1,
                 "one ERROR line: too old");
    {
        struct watch *w = api_watch(c.t2.url, "/api/v1/configmaps?watch=1&resourceVersion=1", 200);

        cr_assert_not_null(strstr(api_wline(w, 0), "\"reason\":\"Expired\",\"code\":410"),
                           "rv 1 is too old: %s", watch_line(w, 0, NULL));
        watch_close(w);
    }

    /* Writes, forwarded by both tiers: each answer is the sim's object; errors byte equal. */
    writes_through(&c, &c.t1, "w1");
    writes_through(&c, &c.t2, "w2");
    cr_assert(same_answer(&c, "POST", "/api/v1/namespaces/t/configmaps", NULL, "application/json",
                          "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                          "{\"name\":\"c01\"}}",
                          &code),
              "409 AlreadyExists");
    cr_assert_eq(code, 409);
    cr_assert(same_answer(&c, "PUT", "/api/v1/namespaces/t/configmaps/c01", NULL,
                          "application/json",
                          "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                          "{\"name\":\"c01\",\"namespace\":\"t\",\"resourceVersion\":\"1\"}}",
                          &code),
              "409 Conflict");
    cr_assert_eq(code, 409);
    cr_assert(same_answer(&c, "PATCH", "/api/v1/namespaces/t/configmaps/zzz", NULL,
                          "application/merge-patch+json", "{}", &code),
              "PATCH 404");
    cr_assert_eq(code, 404);
    cr_assert(
        same_answer(&c, "DELETE", "/api/v1/namespaces/t/configmaps/zzz", NULL, NULL, NULL, &code),
        "DELETE 404");
    cr_assert_eq(code, 404);
    chain_down(&c);
}

/* Periodic bookmarks: a watch of namespace t whose RV moves with a write elsewhere gets the
 * same BOOKMARKs through T2 as through T1 (T1's progress reaches T2 on T2's own upstream watch,
 * which allows bookmarks), then its stream ends at timeoutSeconds. */
Test(tiers, periodic_bookmarks_through_two_tiers_as_through_one, .timeout = 120)
{
    struct chain c;
    uint64_t rv_t, rv_other;
    char path[256], want[256];
    struct watch *a, *b;

    chain_up_with(&c, false, "configmaps", ARGS("--bookmark-interval", "1s"));
    api_make_ns(c.sim.url, "t");
    api_make_ns(c.sim.url, "other");
    rv_t = api_cm_create(c.sim.url, "t", "c1", NULL, "1", NULL);
    tiers_at(&c, "configmaps", rv_t);
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/t/configmaps?watch=1&resourceVersion=%" PRIu64
             "&allowWatchBookmarks=true&timeoutSeconds=4",
             rv_t);
    a = api_watch(c.t1.url, path, 200);
    b = api_watch(c.t2.url, path, 200);
    /* Out of the watches' scope, after they opened (SEMANTICS vector 36). */
    rv_other = api_cm_create(c.sim.url, "other", "o1", NULL, "1", NULL);
    snprintf(want, sizeof(want), API_CM_BOOKMARK_FMT, rv_other);
    api_expect_line(a, 0, want);
    api_expect_line(b, 0, want);
    cr_assert_eq(watch_wait_end(a, WATCH_END_MS), 0);
    cr_assert_eq(watch_wait_end(b, WATCH_END_MS), 0);
    /* once per interval at that rv until the pre-deadline one (the tiers' ticks need not
     * fall at the same moments, so the counts may differ by one) */
    api_expect_repeats(a, 0, 2, want);
    api_expect_repeats(b, 0, 2, want);
    watch_close(a);
    watch_close(b);
    chain_down(&c);
}

/* ---- relists in T1 --------------------------------------------------------------------- */

/*
 * T1's upstream watch is held, then cut, and meanwhile the sim's configmaps history restarts
 * at its current revision (as a restarted kube-apiserver's watch cache does), so T1's
 * re-watch gets 410 and T1 relists. <lose> says whether configmaps changed in between (c3
 * created, c1 deleted) or only pods did (T1 does not cache them: its configmaps rv is simply
 * left behind by the sim's revision).
 */
static uint64_t t1_relists_after(struct chain *c, bool lose)
{
    uint64_t rev;
    char path[128];
    struct http_resp r;

    relay_hold(c->rl, true);
    api_pod_create(c->sim.url, "q", "p1", NULL);
    if (lose) {
        api_cm_create(c->sim.url, "q", "c3", NULL, "1", NULL);
        api_cm_delete(c->sim.url, "q", "c1", NULL);
    }
    api_pod_create(c->sim.url, "q", "p2", NULL);
    rev = api_sim_stat(c->sim.url, "revision");
    snprintf(path, sizeof(path), "/_sim/reset-history?resource=configmaps");
    api_req(c->sim.url, "POST", path, NULL, NULL, NULL, &r);
    cr_assert_eq(r.code, 200, "%s: %ld %s", path, r.code, r.body);
    http_resp_free(&r);
    relay_cut(c->rl);
    return rev;
}

/* No line of <w> is an ERROR event. */
static void expect_no_error(struct watch *w, const char *what)
{
    for (size_t i = 0; i < watch_line_count(w); i++) {
        cr_assert_null(strstr(watch_line(w, i, NULL), "\"type\":\"ERROR\""), "%s: line %zu: %s",
                       what, i, watch_line(w, i, NULL));
    }
}

/* Waits for the end bookmark of <w>'s initial events; returns the lines up to it. */
static size_t initial_lines(struct watch *w)
{
    for (size_t i = 0;; i++) {
        if (strstr(api_wline(w, i), "k8s.io/initial-events-end") != NULL) {
            return i + 1;
        }
    }
}

Test(tiers, a_relist_in_t1_that_lost_nothing_does_not_reach_t2, .timeout = 180)
{
    struct chain c;
    struct watch *w1, *w2, *w3, *w4;
    uint64_t r0, rv, t1_relists, t2_relists, t2_watches, rev;
    char path[256];
    size_t n2;

    chain_up(&c, true, "configmaps");
    api_make_ns(c.sim.url, "q");
    api_cm_create(c.sim.url, "q", "c1", NULL, "1", NULL);
    r0 = api_cm_create(c.sim.url, "q", "c2", NULL, "1", NULL);
    tiers_at(&c, "configmaps", r0);
    t1_relists = evseq_metric(c.t1.url, "kwp_relists_total", "configmaps");
    t2_relists = evseq_metric(c.t2.url, "kwp_relists_total", "configmaps");
    t2_watches = evseq_metric(c.t2.url, "kwp_upstream_watch_requests_total", "configmaps");
    snprintf(path, sizeof(path), "/api/v1/namespaces/q/configmaps?watch=1&resourceVersion=%" PRIu64,
             r0);
    w1 = api_watch(c.t2.url, path, 200);
    w2 = api_watch(c.t2.url,
                   "/api/v1/configmaps?watch=1&resourceVersion=0&allowWatchBookmarks=true", 200);
    n2 = initial_lines(w2);
    w3 = api_watch(c.t1.url, path, 200);

    rev = t1_relists_after(&c, false);
    evseq_metric_reach(c.t1.url, "kwp_relists_kept_total", "configmaps", 1, RELIST_MS);
    cr_assert_eq(evseq_metric(c.t1.url, "kwp_relists_total", "configmaps"), t1_relists + 1,
                 "T1 relisted once");
    evseq_metric_reach(c.t1.url, "kwp_resource_version", "configmaps", rev, SYNC_MS);
    srv_wait_ready(&c.t1, READY_MS);

    /* The next write reaches every watch once, as the next line: nothing ended, nothing
     * replayed, no ERROR. */
    rv = api_cm_create(c.sim.url, "q", "c4", NULL, "1", NULL);
    api_expect_ev(w1, 0, "ADDED", "c4", rv);
    api_expect_ev(w2, n2, "ADDED", "c4", rv);
    api_expect_ev(w3, 0, "ADDED", "c4", rv);
    tiers_at(&c, "configmaps", rv);
    cr_assert_eq(watch_line_count(w1), 1u, "%s", watch_line(w1, watch_line_count(w1) - 1, NULL));
    cr_assert_eq(watch_line_count(w2), n2 + 1);
    cr_assert_eq(watch_line_count(w3), 1u);
    cr_assert_not(watch_ended(w1, NULL, NULL), "T2's watch from r0 goes on");
    cr_assert_not(watch_ended(w2, NULL, NULL), "T2's watch from 0 goes on");
    cr_assert_not(watch_ended(w3, NULL, NULL), "T1's own watch goes on");
    expect_no_error(w1, "T2 watch from r0");
    expect_no_error(w2, "T2 watch from 0");
    cr_assert_eq(evseq_metric(c.t2.url, "kwp_relists_total", "configmaps"), t2_relists,
                 "T2 did not relist");
    cr_assert_eq(evseq_metric(c.t2.url, "kwp_upstream_watch_requests_total", "configmaps"),
                 t2_watches, "T2's watch on T1 never broke");
    /* T1's history still reaches r0: a re-watch there is no 410 on either tier. */
    w4 = api_watch(c.t2.url, path, 200);
    api_expect_ev(w4, 0, "ADDED", "c4", rv);
    watch_close(w4);
    w4 = api_watch(c.t1.url, path, 200);
    api_expect_ev(w4, 0, "ADDED", "c4", rv);
    watch_close(w4);
    watch_close(w1);
    watch_close(w2);
    watch_close(w3);
    chain_down(&c);
}

Test(tiers, a_relist_in_t1_that_lost_events_reaches_t2, .timeout = 180)
{
    struct chain c;
    struct watch *w1, *w2, *w3;
    uint64_t r0, t2_relists, rev;
    char path[256];
    struct http_resp r, s;
    cJSON *tj, *sj;
    char want[512];

    chain_up(&c, true, "configmaps");
    api_make_ns(c.sim.url, "q");
    api_cm_create(c.sim.url, "q", "c1", NULL, "1", NULL);
    r0 = api_cm_create(c.sim.url, "q", "c2", NULL, "1", NULL);
    tiers_at(&c, "configmaps", r0);
    t2_relists = evseq_metric(c.t2.url, "kwp_relists_total", "configmaps");
    snprintf(path, sizeof(path), "/api/v1/namespaces/q/configmaps?watch=1&resourceVersion=%" PRIu64,
             r0);
    w1 = api_watch(c.t2.url, path, 200);
    w2 = api_watch(c.t2.url,
                   "/api/v1/configmaps?watch=1&resourceVersion=0&allowWatchBookmarks=true", 200);
    api_wline(w2, 2);

    rev = t1_relists_after(&c, true);
    /* T1 lost c3 and c1's deletion: it resets and ends its watches, T2's among them; T2's
     * re-watch below T1's list rv gets 410, T2 relists, finds a changed state, and ends its
     * own watches cleanly (no ERROR), as kube-apiserver's cacher does (vector 39). */
    evseq_metric_reach(c.t2.url, "kwp_relists_total", "configmaps", t2_relists + 1, RELIST_MS);
    cr_assert_eq(watch_wait_end(w1, RELIST_MS), 0, "T2's watch from r0 ends");
    cr_assert_eq(watch_wait_end(w2, RELIST_MS), 0, "T2's watch from 0 ends");
    expect_no_error(w1, "T2 watch from r0");
    expect_no_error(w2, "T2 watch from 0");
    cr_assert_eq(watch_line_count(w1), 0u, "the lost writes never arrive as events: %s",
                 watch_line_count(w1) ? watch_line(w1, 0, NULL) : "");
    cr_assert_eq(evseq_metric(c.t1.url, "kwp_relists_kept_total", "configmaps"), 0);
    cr_assert_eq(evseq_metric(c.t2.url, "kwp_relists_kept_total", "configmaps"), 0);
    watch_close(w1);
    watch_close(w2);
    srv_wait_ready(&c.t2, READY_MS);
    /* A re-watch from r0 on T2 is too old (its client relists), and T2 holds the sim's state. */
    w3 = api_watch(c.t2.url, path, 200);
    snprintf(want, sizeof(want),
             "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
             "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version: "
             "%" PRIu64 " (%" PRIu64 ")\",\"reason\":\"Expired\",\"code\":410}}",
             r0, evseq_metric(c.t2.url, "kwp_resource_version", "configmaps"));
    api_expect_line(w3, 0, want);
    watch_close(w3);
    api_req(c.t2.url, "GET", "/api/v1/namespaces/q/configmaps?resourceVersion=0", NULL, NULL, NULL,
            &r);
    api_req(c.sim.url, "GET", "/api/v1/namespaces/q/configmaps", NULL, NULL, NULL, &s);
    tj = json_body(&r);
    sj = json_body(&s);
    evseq_expect_state(tj, &(struct evseq){0}, sj, "T2 after its relist");
    cr_assert_geq(json_rv(tj), rev);
    cJSON_Delete(tj);
    cJSON_Delete(sj);
    http_resp_free(&r);
    http_resp_free(&s);
    chain_down(&c);
}
