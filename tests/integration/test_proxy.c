/*
 * test_proxy.c - black-box tests of `kwp proxy` in front of `kwp sim` (issue 3), written to
 * SEMANTICS.md.
 *
 * Each Test starts its own `kwp sim` and `kwp proxy --upstream <sim>` on 127.0.0.1:0
 * (proc_spawn; readiness of the proxy = /readyz answering 200, a bounded poll), drives both
 * over HTTP and stops both with proc_stop, asserting exit status 0. Writes go to the
 * simulator directly unless a test is about passthrough, so the RVs they return are the
 * RVs the proxy's events must carry. The sim's /_sim/stats proves what the proxy sent
 * upstream; the proxy's /metrics what it did.
 *
 * Faults need no hook in kwp: a TCP relay in this process sits between proxy and sim and
 * can hold the sim->proxy direction (events in flight), cut every connection (a broken
 * upstream stream) and reset new ones (an upstream that went away). Slow readers are raw
 * sockets with a small SO_RCVBUF that stop reading.
 *
 * Status bodies are compared byte for byte, trailing "\n" included (Go's encoder writes it).
 * Waits are bounded polls or deadlines, never fixed sleeps for readiness.
 */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "tests/support/api.h"
#include "tests/support/http.h"
#include "tests/support/json.h"
#include "tests/support/nap.h"
#include "tests/support/proc.h"
#include "tests/support/relay.h"
#include "tests/support/sock.h"
#include "tests/support/srv.h"

#define REQ_MS 15000L   /* one request */
#define READY_MS 30000L /* proxy /readyz 200 after start */
#define POLL_MS 20L
#define URL_CAP 4096

/* ---- processes ---------------------------------------------------------------------- */

static void sim_up(struct srv *s, const char *const *args)
{
    srv_spawn(s, "sim", args, NULL);
}

/* Proxy first: its shutdown must not depend on the upstream. */
static void stop_both(struct srv *px, struct srv *sim)
{
    srv_stop(px, "kwp proxy");
    srv_stop(sim, "kwp sim");
}

/* One request that must get a response. */
static void req(const char *base, const char *method, const char *path, const char *ctype,
                const char *body, struct http_resp *r)
{
    api_req(base, method, path, ctype, body, NULL, r);
}

static void get(const char *base, const char *path, struct http_resp *r)
{
    req(base, "GET", path, NULL, NULL, r);
}

static long get_code(const char *base, const char *path)
{
    struct http_resp r;
    char url[URL_CAP];
    long code;

    api_url(base, path, url, sizeof(url));
    if (http_do("GET", url, NULL, NULL, NULL, 3000, &r) != 0) {
        return 0;
    }
    code = r.code;
    http_resp_free(&r);
    return code;
}

/* kwp proxy --upstream <up> <args...>, ready. */
static void proxy_up(struct srv *px, const char *up, const char *const *args)
{
    srv_spawn(px, "proxy", ARGS("--upstream", up), args);
    srv_wait_ready(px, READY_MS);
}

/* ---- bodies and headers ------------------------------------------------------------- */

/* Asserts the exact status and body: <expected> followed by the "\n" Go's encoder writes. */
static void expect_exact(const struct http_resp *r, long code, const char *expected)
{
    size_t n = strlen(expected);

    cr_assert_eq(r->code, code, "HTTP %ld, expected %ld; body: %s", r->code, code, r->body);
    cr_assert(r->body_len == n + 1 && memcmp(r->body, expected, n) == 0 && r->body[n] == '\n',
              "body mismatch\nexpected: %s\\n\n     got: %s", expected, r->body);
}

/* Asserts two lists have equal items (same objects, same order). */
static void expect_same_items(const cJSON *got, const cJSON *want, const char *what)
{
    const cJSON *gi = json_at(got, "items");
    const cJSON *wi = json_at(want, "items");
    int n;

    cr_assert(cJSON_IsArray(gi) && cJSON_IsArray(wi), "%s: items arrays", what);
    n = cJSON_GetArraySize(wi);
    cr_assert_eq(cJSON_GetArraySize(gi), n, "%s: %d items, expected %d", what,
                 cJSON_GetArraySize(gi), n);
    for (int i = 0; i < n; i++) {
        const cJSON *a = cJSON_GetArrayItem(gi, i);
        const cJSON *b = cJSON_GetArrayItem(wi, i);

        cr_assert(cJSON_Compare(a, b, true), "%s: item %d differs: %s vs %s", what, i,
                  json_txt(a, "metadata.name"), json_txt(b, "metadata.name"));
    }
}

/* ---- simulator stats and proxy metrics ---------------------------------------------- */

static uint64_t sim_stat(const struct srv *sim, const char *path)
{
    return api_sim_stat(sim->url, path);
}

/* Reads `<name>{resource="<res>"} <value>` from the proxy's /metrics. */
static bool metric_try(const struct srv *px, const char *name, const char *res, uint64_t *v)
{
    struct http_resp r;
    char url[URL_CAP];
    char key[256];
    const char *p;
    bool found = false;

    api_url(px->url, "/metrics", url, sizeof(url));
    if (http_do("GET", url, NULL, NULL, NULL, 5000, &r) != 0) {
        return false;
    }
    snprintf(key, sizeof(key), "\n%s{resource=\"%s\"} ", name, res);
    p = r.code == 200 ? strstr(r.body, key) : NULL;
    if (p != NULL) {
        char *end = NULL;

        *v = (uint64_t)strtoull(p + strlen(key), &end, 10);
        found = end != p + strlen(key);
    }
    http_resp_free(&r);
    return found;
}

static uint64_t metric(const struct srv *px, const char *name, const char *res)
{
    uint64_t v = 0;

    cr_assert(metric_try(px, name, res, &v), "/metrics of %s has no %s{resource=\"%s\"}", px->url,
              name, res);
    return v;
}

/* Waits until the metric equals <want>; returns the last value read. */
static uint64_t wait_metric(const struct srv *px, const char *name, const char *res, uint64_t want,
                            long ms)
{
    uint64_t v = 0;
    bool ok;

    WAIT_FOR(ok, metric_try(px, name, res, &v) && v == want, ms);
    cr_assert(ok, "%s{resource=\"%s\"} is %" PRIu64 ", expected %" PRIu64 " within %ld ms", name,
              res, v, want, ms);
    return v;
}

/* ---- watches ------------------------------------------------------------------------ */

/* Asserts the stream ended cleanly (end of body, not an error or our timeout). */
static void expect_clean_end(struct watch *w, long ms, const char *what)
{
    uint64_t at = 0;
    int rc = -1;

    cr_assert_eq(watch_wait_end(w, ms), 0, "%s: stream still open after %ld ms", what, ms);
    cr_assert(watch_ended(w, &at, &rc));
    cr_assert_eq(rc, 0, "%s: stream ended with curl error %d, expected a clean end", what, rc);
}

static void expect_no_error_event(struct watch *w, const char *what)
{
    size_t n = watch_line_count(w);

    for (size_t i = 0; i < n; i++) {
        const char *l = watch_line(w, i, NULL);

        cr_assert_null(strstr(l, "\"type\":\"ERROR\""), "%s: line %zu is an ERROR event: %s", what,
                       i, l);
    }
}

#define TOO_OLD_FMT                                                                                \
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","                   \
    "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version: %" PRIu64      \
    " (%" PRIu64 ")\",\"reason\":\"Expired\",\"code\":410}}"
#define NOT_READY_BODY                                                                             \
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","           \
    "\"message\":\"storage is (re)initializing\",\"reason\":\"TooManyRequests\","                  \
    "\"details\":{\"retryAfterSeconds\":1},\"code\":429}"

/* ---- raw sockets: readers that stop reading ---------------------------------------- */

/* Connects to <base> with SO_RCVBUF <rcvbuf> set before connect and sends a GET. */
static int raw_get(const char *base, int rcvbuf, const char *path)
{
    char rq[URL_CAP + 256];
    int fd = sock_connect(base, rcvbuf);
    int n;

    n = snprintf(rq, sizeof(rq),
                 "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: " HTTP_USER_AGENT
                 "\r\nAccept: application/json\r\n\r\n",
                 path);
    cr_assert(n > 0 && (size_t)n < sizeof(rq));
    cr_assert(sock_send_all(fd, rq, (size_t)n));
    return fd;
}

struct bytes {
    char *d;
    size_t len, cap;
};

static void bytes_add(struct bytes *b, const char *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->d = realloc(b->d, b->cap);
        cr_assert_not_null(b->d);
    }
    memcpy(b->d + b->len, p, n);
    b->len += n;
    b->d[b->len] = '\0';
}

enum drain_end { DRAIN_EOF, DRAIN_ERROR, DRAIN_IDLE, DRAIN_DEADLINE };

/*
 * Reads <fd> into <into> (may be NULL: discard) until EOF, a socket error, <idle_ms> without
 * data (0: never) or <total_ms>.
 */
static enum drain_end drain(int fd, struct bytes *into, long idle_ms, long total_ms, size_t *got)
{
    uint64_t end = http_now_ms() + (uint64_t)total_ms;
    uint64_t last = http_now_ms();
    char buf[65536];

    *got = 0;
    for (;;) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        uint64_t now = http_now_ms();
        ssize_t k;

        if (now >= end) {
            return DRAIN_DEADLINE;
        }
        if (idle_ms > 0 && now - last >= (uint64_t)idle_ms) {
            return DRAIN_IDLE;
        }
        if (poll(&pf, 1, 50) <= 0) {
            continue;
        }
        k = recv(fd, buf, sizeof(buf), 0);
        if (k == 0) {
            return DRAIN_EOF;
        }
        if (k < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                continue;
            }
            return DRAIN_ERROR;
        }
        *got += (size_t)k;
        last = http_now_ms();
        if (into != NULL) {
            bytes_add(into, buf, (size_t)k);
        }
    }
}

/* Decodes an HTTP/1.1 chunked response (headers included) into its body; stops at the first
 * incomplete chunk. Asserts a 200 status line. */
static void dechunk(const struct bytes *raw, struct bytes *body)
{
    const char *p = raw->d;
    const char *end = raw->d + raw->len;
    const char *hend = memmem(p, raw->len, "\r\n\r\n", 4);

    cr_assert_not_null(hend, "no complete response header in %zu bytes", raw->len);
    cr_assert(strncmp(p, "HTTP/1.1 200 ", 13) == 0, "status line: %.40s", p);
    cr_assert_not_null(memmem(p, (size_t)(hend - p), "chunked", 7), "not chunked: %.*s",
                       (int)(hend - p), p);
    p = hend + 4;
    while (p < end) {
        const char *crlf = memmem(p, (size_t)(end - p), "\r\n", 2);
        char *num_end = NULL;
        unsigned long long sz;

        if (crlf == NULL) {
            return;
        }
        sz = strtoull(p, &num_end, 16);
        cr_assert(num_end != p, "bad chunk size line: %.20s", p);
        if (sz == 0 || (size_t)(end - (crlf + 2)) < sz + 2) {
            return;
        }
        bytes_add(body, crlf + 2, (size_t)sz);
        p = crlf + 2 + sz + 2;
    }
}

/* Events (type, rv) of a watch body, read by pattern: objects may be megabytes. */
struct tv {
    char type;
    uint64_t rv;
};

static size_t body_events(const struct bytes *body, struct tv *out, size_t max)
{
    size_t n = 0;
    const char *p = body->d;
    const char *end = body->d + body->len;

    while (p < end && n < max) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *rv;

        if (nl == NULL) {
            break;
        }
        cr_assert(strncmp(p, "{\"type\":\"", 9) == 0, "event line: %.80s", p);
        rv = memmem(p, (size_t)(nl - p), "\"resourceVersion\":\"", 19);
        cr_assert_not_null(rv, "event without resourceVersion: %.200s", p);
        out[n].type = p[9];
        out[n].rv = (uint64_t)strtoull(rv + 19, NULL, 10);
        n++;
        p = nl + 1;
    }
    return n;
}

/* ====================================================================================== */
/* LIST                                                                                   */
/* ====================================================================================== */

/* Issue 3: rv=0 is served from the cache while the simulator is stopped (SIGSTOP). */
Test(proxy, list_rv0_served_from_cache_while_sim_frozen, .timeout = 180)
{
    struct srv sim, px;
    struct http_resp s, r;
    cJSON *sj, *pj;
    const cJSON *it;
    uint64_t rev;
    char path[256];
    int in_ns1 = 0;

    sim_up(&sim, ARGS("--objects", "30", "--namespaces", "3", "--churn", "0"));
    proxy_up(&px, sim.url, ARGS("--resources", "pods"));
    get(sim.url, "/api/v1/pods?resourceVersion=0", &s);
    cr_assert_eq(s.code, 200);
    sj = json_body(&s);
    rev = sim_stat(&sim, "revision");
    cr_assert_eq(cJSON_GetArraySize(json_at(sj, "items")), 30, "the sim holds 30 pods");
    wait_metric(&px, "kwp_resource_version", "pods", rev, REQ_MS);

    cr_assert_eq(proc_kill(sim.p, SIGSTOP), 0);
    get(px.url, "/api/v1/pods?resourceVersion=0", &r);
    cr_assert_eq(r.code, 200, "rv=0 LIST while the sim is frozen: HTTP %ld %s", r.code, r.body);
    pj = json_body(&r);
    cr_assert_str_eq(json_txt(pj, "kind"), "PodList");
    cr_assert_eq(json_rv(pj), rev, "metadata.resourceVersion %" PRIu64 " is the cache RV %" PRIu64,
                 json_rv(pj), rev);
    expect_same_items(pj, sj, "rv=0 LIST from the cache vs the sim");
    cr_assert(r.body_len == s.body_len && memcmp(r.body, s.body, s.body_len) == 0,
              "the list is assembled from upstream bytes: byte-identical to the sim's rv=0 "
              "answer at the same RV (%zu vs %zu bytes)",
              r.body_len, s.body_len);
    cJSON_Delete(pj);
    http_resp_free(&r);

    /* limit is ignored for rv=0 (vector 2): every pod of ns-1, no continue. */
    get(px.url, "/api/v1/namespaces/ns-1/pods?resourceVersion=0&limit=1", &r);
    cr_assert_eq(r.code, 200, "namespaced rv=0 LIST: HTTP %ld", r.code);
    pj = json_body(&r);
    cJSON_ArrayForEach(it, json_at(sj, "items"))
    {
        in_ns1 += strcmp(json_txt(it, "metadata.namespace"), "ns-1") == 0;
    }
    cr_assert_gt(in_ns1, 1, "the seed puts several pods in ns-1");
    cr_assert_eq(cJSON_GetArraySize(json_at(pj, "items")), in_ns1, "limit ignored for rv=0");
    cr_assert_null(json_at(pj, "metadata.continue"), "no continue for rv=0");
    cr_assert_null(json_at(pj, "metadata.remainingItemCount"));
    cJSON_Delete(pj);
    http_resp_free(&r);

    /* A NotOlderThan LIST at the cache RV and a GET rv=0 need no upstream either. */
    snprintf(path, sizeof(path), "/api/v1/pods?resourceVersion=%" PRIu64, rev);
    get(px.url, path, &r);
    cr_assert_eq(r.code, 200, "LIST rv=%" PRIu64 " while frozen: HTTP %ld", rev, r.code);
    pj = json_body(&r);
    expect_same_items(pj, sj, "LIST rv=N from the cache");
    cJSON_Delete(pj);
    http_resp_free(&r);
    it = cJSON_GetArrayItem(json_at(sj, "items"), 0);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s?resourceVersion=0",
             json_txt(it, "metadata.namespace"), json_txt(it, "metadata.name"));
    get(px.url, path, &r);
    cr_assert_eq(r.code, 200, "GET rv=0 while frozen: HTTP %ld", r.code);
    pj = json_body(&r);
    cr_assert_str_eq(json_txt(pj, "kind"), "Pod");
    cr_assert_str_eq(json_txt(pj, "metadata.resourceVersion"),
                     json_txt(it, "metadata.resourceVersion"),
                     "GET returns the object with its own RV");
    cJSON_Delete(pj);
    http_resp_free(&r);

    cr_assert_eq(proc_kill(sim.p, SIGCONT), 0);
    cJSON_Delete(sj);
    http_resp_free(&s);
    stop_both(&px, &sim);
}

/* GET <path> on <base>: 200 and its JSON (caller deletes). */
static cJSON *get_json(const char *base, const char *path)
{
    struct http_resp r;
    cJSON *j;

    get(base, path, &r);
    cr_assert_eq(r.code, 200, "GET %s: HTTP %ld %.300s", path, r.code, r.body);
    j = json_body(&r);
    http_resp_free(&r);
    return j;
}

/* Writes between pages: pods created at both ends and inside ns-1, one deleted, and <extra>
 * pods in ns-2, all upstream; returns once the proxy's cache has them. */
static void writes_between_pages(const struct srv *sim, const struct srv *px, int page,
                                 const char *del_name, int extra)
{
    char name[64];
    char path[256];
    struct http_resp r;

    snprintf(name, sizeof(name), "a-late-%d", page);
    api_pod_create(sim->url, "ns-1", name, NULL);
    snprintf(name, sizeof(name), "pod-000050-late-%d", page);
    api_pod_create(sim->url, "ns-1", name, NULL);
    snprintf(name, sizeof(name), "zz-late-%d", page);
    api_pod_create(sim->url, "ns-1", name, NULL);
    if (del_name != NULL) {
        snprintf(path, sizeof(path), "/api/v1/namespaces/ns-1/pods/%s", del_name);
        req(sim->url, "DELETE", path, NULL, NULL, &r);
        cr_assert_eq(r.code, 200, "delete %s: HTTP %ld %s", del_name, r.code, r.body);
        http_resp_free(&r);
    }
    for (int i = 0; i < extra; i++) {
        snprintf(name, sizeof(name), "burst-%d-%d", page, i);
        api_pod_create(sim->url, "ns-2", name, NULL);
    }
    wait_metric(px, "kwp_resource_version", "pods", sim_stat(sim, "revision"), REQ_MS);
}

/*
 * Issue 4: paging a namespace through the cache while writes land between pages. Every page
 * carries the first page's RV, the items are exactly the state at that RV (the simulator's
 * own Exact LIST), remainingItemCount counts down, and nothing goes upstream. A burst of
 * writes longer than the cache's checkpoint interval (64 events) sits between two pages, and
 * legacy exact and Exact LISTs at that RV, now far behind, match too.
 */
Test(proxy, paging_a_namespace_under_writes_stays_at_the_first_rv, .timeout = 180)
{
    struct srv sim, px;
    char path[URL_CAP];
    char tok[2048] = "";
    cJSON *want, *got, *page, *all = cJSON_CreateArray();
    uint64_t rev, list_rv = 0, lists0;
    int total, seen = 0, pages = 0;

    sim_up(&sim, ARGS("--objects", "200", "--namespaces", "3", "--churn", "0"));
    proxy_up(&px, sim.url, ARGS("--resources", "pods"));
    rev = sim_stat(&sim, "revision");
    wait_metric(&px, "kwp_resource_version", "pods", rev, REQ_MS);
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/ns-1/pods?resourceVersion=%" PRIu64 "&resourceVersionMatch=Exact",
             rev);
    want = get_json(sim.url, path);
    total = cJSON_GetArraySize(json_at(want, "items"));
    cr_assert_gt(total, 40, "the seed puts ~1/3 of 200 pods in ns-1");
    lists0 = sim_stat(&sim, "resources.pods.lists");

    for (;;) {
        const cJSON *it;
        const cJSON *cont;
        int n = 0;

        if (pages == 0) {
            snprintf(path, sizeof(path),
                     "/api/v1/namespaces/ns-1/pods?limit=7&resourceVersion=%" PRIu64
                     "&resourceVersionMatch=NotOlderThan",
                     rev);
        } else {
            snprintf(path, sizeof(path), "/api/v1/namespaces/ns-1/pods?limit=7&continue=%s", tok);
        }
        page = get_json(px.url, path);
        if (pages == 0) {
            list_rv = json_rv(page);
            cr_assert_eq(list_rv, rev, "the first page is at the cache's RV");
        }
        cr_assert_eq(json_rv(page), list_rv, "page %d at the first page's RV", pages);
        cJSON_ArrayForEach(it, json_at(page, "items"))
        {
            cJSON_AddItemToArray(all, cJSON_Duplicate(it, true));
            n++;
        }
        seen += n;
        cont = json_at(page, "metadata.continue");
        if (seen < total) {
            cr_assert_eq(n, 7, "full pages until the end (page %d)", pages);
            cr_assert(cJSON_IsString(cont), "a continue token while items remain");
            cr_assert_eq(cJSON_GetNumberValue(json_at(page, "metadata.remainingItemCount")),
                         total - seen, "remainingItemCount after %d items", seen);
            snprintf(tok, sizeof(tok), "%s", cont->valuestring);
        } else {
            cr_assert_null(cont, "no continue on the last page");
            cr_assert_null(json_at(page, "metadata.remainingItemCount"));
        }
        cJSON_Delete(page);
        pages++;
        if (seen >= total || pages > total) {
            break;
        }
        /* the last pod of the list goes now; page 2 is followed by a burst of 70 writes */
        writes_between_pages(
            &sim, &px, pages,
            pages == 1
                ? json_txt(cJSON_GetArrayItem(json_at(want, "items"), total - 1), "metadata.name")
                : NULL,
            pages == 2 ? 70 : 0);
    }
    got = cJSON_CreateObject();
    cJSON_AddItemToObject(got, "items", all);
    expect_same_items(got, want, "the pages at the first RV vs the sim's Exact LIST there");
    cr_assert_eq(sim_stat(&sim, "resources.pods.lists"), lists0, "every page from the cache");

    /* legacy exact (limit + rv) and Exact at that RV, now >70 events behind the cache */
    snprintf(path, sizeof(path), "/api/v1/namespaces/ns-1/pods?limit=1000&resourceVersion=%" PRIu64,
             list_rv);
    page = get_json(px.url, path);
    cr_assert_eq(json_rv(page), list_rv);
    expect_same_items(page, want, "legacy exact at the first RV");
    cJSON_Delete(page);
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/ns-1/pods?resourceVersion=%" PRIu64 "&resourceVersionMatch=Exact",
             list_rv);
    page = get_json(px.url, path);
    cr_assert_eq(json_rv(page), list_rv);
    expect_same_items(page, want, "Exact at the first RV");
    cJSON_Delete(page);
    cr_assert_eq(sim_stat(&sim, "resources.pods.lists"), lists0, "both from the cache");
    cJSON_Delete(got);
    cJSON_Delete(want);
    stop_both(&px, &sim);
}

/* Issue 3: rv unset is a consistent read: forwarded, one upstream LIST per request, and the
 * answer is the upstream's own. */
Test(proxy, list_rv_unset_reaches_upstream, .timeout = 180)
{
    static const char *const paths[] = {
        "/api/v1/pods",
        "/api/v1/namespaces/ns-1/pods",
        "/api/v1/pods?labelSelector=app%3Dapi",
        "/api/v1/pods?limit=2",
        NULL,
    };
    struct srv sim, px;

    sim_up(&sim, ARGS("--objects", "12", "--namespaces", "2", "--churn", "0"));
    proxy_up(&px, sim.url, ARGS("--resources", "pods"));
    for (size_t i = 0; paths[i]; i++) {
        uint64_t lists0 = sim_stat(&sim, "resources.pods.lists");
        uint64_t fwd0 = metric(&px, "kwp_forwarded_total", "pods");
        struct http_resp p, s;
        cJSON *pj, *sj;

        get(px.url, paths[i], &p);
        cr_assert_eq(p.code, 200, "%s through the proxy: HTTP %ld %s", paths[i], p.code, p.body);
        cr_assert_eq(sim_stat(&sim, "resources.pods.lists"), lists0 + 1,
                     "%s: the sim served exactly one LIST for it", paths[i]);
        cr_assert_eq(metric(&px, "kwp_forwarded_total", "pods"), fwd0 + 1,
                     "%s: counted as forwarded", paths[i]);
        get(sim.url, paths[i], &s);
        cr_assert_eq(s.code, 200);
        pj = json_body(&p);
        sj = json_body(&s);
        expect_same_items(pj, sj, paths[i]);
        cr_assert_eq(json_rv(pj), json_rv(sj), "%s: list RV", paths[i]);
        cr_assert(p.body_len == s.body_len && memcmp(p.body, s.body, s.body_len) == 0,
                  "%s: the forwarded body is the sim's own bytes\nproxy: %.300s\n  sim: %.300s",
                  paths[i], p.body, s.body);
        cJSON_Delete(pj);
        cJSON_Delete(sj);
        http_resp_free(&p);
        http_resp_free(&s);
    }
    stop_both(&px, &sim);
}

/* Issue 3 / SEMANTICS 1.4: --too-large-rv=local waits 3 s and answers the 504 itself. */
Test(proxy, too_large_rv_local_504_after_3s, .timeout = 180)
{
    struct srv sim, px;
    struct http_resp r;
    struct watch *w;
    char path[512];
    char want[1024];
    uint64_t rev, lists0, gets0, t0, dt;
    const char *pod;
    cJSON *j;

    sim_up(&sim, ARGS("--objects", "5", "--namespaces", "1", "--churn", "0"));
    proxy_up(&px, sim.url, ARGS("--resources", "pods", "--too-large-rv", "local"));
    rev = sim_stat(&sim, "revision");
    wait_metric(&px, "kwp_resource_version", "pods", rev, REQ_MS);
    lists0 = sim_stat(&sim, "resources.pods.lists");
    gets0 = sim_stat(&sim, "resources.pods.gets");

    snprintf(path, sizeof(path), "/api/v1/pods?resourceVersion=%" PRIu64, rev + 50);
    t0 = http_now_ms();
    get(px.url, path, &r);
    dt = http_now_ms() - t0;
    snprintf(want, sizeof(want), API_TOO_LARGE_FMT, rev + 50, rev);
    expect_exact(&r, 504, want);
    api_expect_header(&r, "Retry-After", "1");
    api_expect_header(&r, "Content-Type", "application/json");
    cr_assert_geq(dt, 3000u, "the 504 comes after the 3 s wait, not after %" PRIu64 " ms", dt);
    http_resp_free(&r);

    /* The same for GET of a named object (SEMANTICS 4). */
    get(px.url, "/api/v1/pods?resourceVersion=0", &r);
    j = json_body(&r);
    pod = json_txt(cJSON_GetArrayItem(json_at(j, "items"), 0), "metadata.name");
    snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s?resourceVersion=%" PRIu64, pod,
             rev + 7);
    cJSON_Delete(j);
    http_resp_free(&r);
    t0 = http_now_ms();
    get(px.url, path, &r);
    dt = http_now_ms() - t0;
    snprintf(want, sizeof(want), API_TOO_LARGE_FMT, rev + 7, rev);
    expect_exact(&r, 504, want);
    api_expect_header(&r, "Retry-After", "1");
    cr_assert_geq(dt, 3000u, "GET: 504 after %" PRIu64 " ms", dt);
    http_resp_free(&r);

    /* Watch-list at a future RV: 200, then one ERROR event with the same Status (vector 31). */
    snprintf(path, sizeof(path),
             "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
             "&allowWatchBookmarks=true&resourceVersion=%" PRIu64,
             rev + 9);
    w = api_watch(px.url, path, 200);
    snprintf(want, sizeof(want), "{\"type\":\"ERROR\",\"object\":" API_TOO_LARGE_FMT "}", rev + 9,
             rev);
    api_expect_line(w, 0, want);
    expect_clean_end(w, REQ_MS, "watch-list at a future RV");
    cr_assert_eq(watch_line_count(w), 1u, "exactly one line");
    watch_close(w);

    cr_assert_eq(sim_stat(&sim, "resources.pods.lists"), lists0, "local: nothing sent upstream");
    cr_assert_eq(sim_stat(&sim, "resources.pods.gets"), gets0, "local: no GET sent upstream");
    stop_both(&px, &sim);
}

/* Issue 3: with the default (forward) the request reaches the sim, whose 504 comes back. */
Test(proxy, too_large_rv_forwarded_to_upstream, .timeout = 180)
{
    struct srv sim, px;
    struct http_resp r;
    char path[256];
    char want[1024];
    uint64_t rev, lists0, lists1, fwd0, t0, dt;

    sim_up(&sim, ARGS("--objects", "5", "--namespaces", "1", "--churn", "0"));
    proxy_up(&px, sim.url, ARGS("--resources", "pods", "--freshness-wait", "250ms"));
    rev = sim_stat(&sim, "revision");
    wait_metric(&px, "kwp_resource_version", "pods", rev, REQ_MS);
    lists0 = sim_stat(&sim, "resources.pods.lists");
    fwd0 = metric(&px, "kwp_forwarded_total", "pods");

    snprintf(path, sizeof(path), "/api/v1/pods?resourceVersion=%" PRIu64, rev + 50);
    t0 = http_now_ms();
    get(px.url, path, &r);
    dt = http_now_ms() - t0;
    cr_assert_eq(metric(&px, "kwp_forwarded_total", "pods"), fwd0 + 1, "counted as forwarded");
    cr_assert_eq(metric(&px, "kwp_too_large_total", "pods"), 0u, "not answered by the proxy");
    lists1 = sim_stat(&sim, "resources.pods.lists");
    snprintf(want, sizeof(want), API_TOO_LARGE_FMT, rev + 50, rev);
    expect_exact(&r, 504, want);
    api_expect_header(&r, "Retry-After", "1");
    cr_assert_geq(dt, 3000u, "the sim's 504 comes after its 3 s wait (%" PRIu64 " ms)", dt);
    http_resp_free(&r);

    /* A write that reaches the RV during the wait answers 200 (through the proxy). */
    snprintf(path, sizeof(path), "/api/v1/pods?resourceVersion=%" PRIu64, rev + 1);
    {
        struct watch *lw;
        char url[URL_CAP];
        const char *l;
        uint64_t got;

        api_url(px.url, path, url, sizeof(url));
        lw = watch_open(url, REQ_MS); /* a plain GET read as a stream: it runs in background */
        cr_assert_not_null(lw);
        got = api_pod_create(sim.url, "default", "late", NULL);
        cr_assert_eq(got, rev + 1);
        cr_assert_eq(watch_wait_end(lw, REQ_MS), 0);
        cr_assert_eq(watch_status(lw), 200, "LIST rv=N reached by a write: HTTP %ld",
                     watch_status(lw));
        l = watch_line(lw, 0, NULL);
        cr_assert_not_null(l);
        cr_assert_not_null(strstr(l, "\"name\":\"late\""), "the list holds the new pod");
        watch_close(lw);
    }
    cr_assert_eq(lists1, lists0 + 1,
                 "/_sim/stats: the LIST at a future RV reached the sim once (pods.lists %" PRIu64
                 " -> %" PRIu64 ")",
                 lists0, lists1);
    stop_both(&px, &sim);
}

/* ====================================================================================== */
/* WATCH                                                                                  */
/* ====================================================================================== */

/* Issue 3 / vector 22: replay from rv N is exactly the writes after N, in order, then live. */
Test(proxy, watch_replays_writes_after_rv, .timeout = 180)
{
    struct srv sim, px;
    struct watch *w;
    uint64_t rv[8];
    char path[256];

    sim_up(&sim, ARGS("--objects", "0", "--churn", "0"));
    proxy_up(&px, sim.url, ARGS("--resources", "pods,configmaps"));
    api_make_ns(sim.url, "rp");
    rv[0] = api_cm_create(sim.url, "rp", "a", NULL, "1", NULL);
    rv[1] = api_cm_create(sim.url, "rp", "b", NULL, "1", NULL);
    rv[2] = api_cm_create(sim.url, "rp", "c", NULL, "1", NULL);
    rv[3] = api_cm_patch(sim.url, "rp", "a", "{\"data\":{\"k\":\"2\"}}", NULL);
    rv[4] = api_cm_delete(sim.url, "rp", "b", NULL);
    rv[5] = api_cm_create(sim.url, "rp", "d", NULL, "1", NULL);
    for (int i = 1; i < 6; i++) {
        cr_assert_gt(rv[i], rv[i - 1], "write RVs increase");
    }

    /* Namespaced and cluster-wide from rv[1]: c, a, b, d after it, then live writes. */
    for (int pass = 0; pass < 2; pass++) {
        static const char *const types[] = {"ADDED", "MODIFIED", "DELETED", "ADDED"};
        static const char *const names[] = {"c", "a", "b", "d"};
        const char *live = pass == 0 ? "d" : "e";

        snprintf(path, sizeof(path), "%s?watch=%s&resourceVersion=%" PRIu64,
                 pass == 0 ? "/api/v1/namespaces/rp/configmaps" : "/api/v1/configmaps",
                 pass == 0 ? "1" : "true", rv[1]);
        w = api_watch(px.url, path, 200);
        for (size_t i = 0; i < 4; i++) {
            api_expect_ev(w, i, types[i], names[i], rv[i + 2]);
        }
        /* The next write is the very next line: nothing replayed twice in between. */
        rv[6 + pass] = pass == 0
                           ? api_cm_patch(sim.url, "rp", live, "{\"data\":{\"k\":\"3\"}}", NULL)
                           : api_cm_create(sim.url, "rp", live, NULL, "1", NULL);
        for (int i = 0; i <= pass; i++) {
            api_expect_ev(w, 4 + (size_t)i, i == 0 ? "MODIFIED" : "ADDED", i == 0 ? "d" : "e",
                          rv[6 + i]);
        }
        cr_assert_eq(watch_line_count(w), 5u + (size_t)pass);
        if (pass == 0) {
            struct api_ev e;

            api_ev_parse(api_wline(w, 0), &e);
            cr_assert_str_eq(json_txt(e.obj, "kind"), "ConfigMap", "watch objects carry kind");
            cr_assert_str_eq(json_txt(e.obj, "apiVersion"), "v1", "watch objects carry apiVersion");
            api_ev_free(&e);
        }
        watch_close(w);
    }
    stop_both(&px, &sim);
}

/* kwp_frames_sent_total counts every frame a watch was sent, while the watch is still open
 * (and quiet). */
Test(proxy, frames_metric_reaches_every_frame_of_an_open_quiet_watch, .timeout = 180)
{
    struct srv sim, px;
    struct watch *w;
    uint64_t rv[4];
    char path[256];

    sim_up(&sim, ARGS("--objects", "0", "--churn", "0"));
    proxy_up(&px, sim.url, ARGS("--resources", "configmaps"));
    api_make_ns(sim.url, "fm");
    rv[0] = api_cm_create(sim.url, "fm", "a", NULL, "1", NULL);
    rv[1] = api_cm_create(sim.url, "fm", "b", NULL, "1", NULL);
    rv[2] = api_cm_create(sim.url, "fm", "c", NULL, "1", NULL);
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/fm/configmaps?watch=1&resourceVersion=%" PRIu64, rv[0]);
    w = api_watch(px.url, path, 200);
    api_expect_ev(w, 0, "ADDED", "b", rv[1]);
    api_expect_ev(w, 1, "ADDED", "c", rv[2]);
    rv[3] = api_cm_patch(sim.url, "fm", "a", "{\"data\":{\"k\":\"2\"}}", NULL);
    api_expect_ev(w, 2, "MODIFIED", "a", rv[3]);
    (void)wait_metric(&px, "kwp_frames_sent_total", "configmaps", 3, 15000);
    cr_assert_eq(watch_line_count(w), 3u);
    watch_close(w);
    stop_both(&px, &sim);
}

/* Issue 3 / vectors 23-24: once the proxy's history moved past the rv, HTTP 200 and one
 * ERROR event with the proxy's boundary, then the stream ends. */
Test(proxy, watch_too_old_410_error_event, .timeout = 180)
{
    struct srv sim, px;
    struct watch *w;
    uint64_t rv[15];
    uint64_t boundary;
    char path[256];
    char want[512];

    sim_up(&sim, ARGS("--objects", "0", "--churn", "0"));
    proxy_up(&px, sim.url,
             ARGS("--resources", "configmaps", "--history-min", "10", "--history-max", "10",
                  "--history-window", "0"));
    api_make_ns(sim.url, "old");
    for (int i = 0; i < 15; i++) {
        char name[16];

        snprintf(name, sizeof(name), "c%02d", i);
        rv[i] = api_cm_create(sim.url, "old", name, NULL, "v", NULL);
    }
    wait_metric(&px, "kwp_resource_version", "configmaps", rv[14], REQ_MS);
    /* Ten events held: rv[5]..rv[14]; the boundary is oldest-1 (SEMANTICS 3.3). */
    boundary = rv[5] - 1;
    cr_assert_eq(metric(&px, "kwp_history_events", "configmaps"), 10u);

    snprintf(path, sizeof(path),
             "/api/v1/namespaces/old/configmaps?watch=1&resourceVersion=%" PRIu64, rv[0]);
    w = api_watch(px.url, path, 200);
    snprintf(want, sizeof(want), TOO_OLD_FMT, rv[0], boundary);
    api_expect_line(w, 0, want);
    expect_clean_end(w, REQ_MS, "too-old watch");
    cr_assert_eq(watch_line_count(w), 1u, "exactly one line");
    {
        char ct[128];

        cr_assert(http_header_get(watch_headers(w), "Content-Type", ct, sizeof(ct)));
        cr_assert_str_eq(ct, "application/json");
    }
    watch_close(w);

    /* One below the boundary: still too old. */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/old/configmaps?watch=1&resourceVersion=%" PRIu64, boundary - 1);
    w = api_watch(px.url, path, 200);
    snprintf(want, sizeof(want), TOO_OLD_FMT, boundary - 1, boundary);
    api_expect_line(w, 0, want);
    expect_clean_end(w, REQ_MS, "too-old watch at boundary-1");
    watch_close(w);

    /* At the boundary: accepted, replays the whole window. */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/old/configmaps?watch=1&resourceVersion=%" PRIu64, boundary);
    w = api_watch(px.url, path, 200);
    for (int i = 5; i < 15; i++) {
        char name[16];

        snprintf(name, sizeof(name), "c%02d", i);
        api_expect_ev(w, (size_t)(i - 5), "ADDED", name, rv[i]);
    }
    watch_close(w);
    cr_assert_geq(metric(&px, "kwp_too_old_total", "configmaps"), 2u);
    stop_both(&px, &sim);
}

/* Issue 3 / vector 35: label-selector transitions through the proxy. */
Test(proxy, watch_label_selector_transitions, .timeout = 180)
{
    struct srv sim, px;
    struct watch *w;
    struct http_resp r, s;
    uint64_t r0, r1, r2, r3, r4;
    char path[256];
    struct api_ev e;
    cJSON *pj, *sj;

    sim_up(&sim, ARGS("--objects", "0", "--churn", "0"));
    proxy_up(&px, sim.url, ARGS("--resources", "configmaps"));
    api_make_ns(sim.url, "sel");
    api_cm_create(sim.url, "sel", "a", "{\"app\":\"x\"}", "a0", NULL);
    api_cm_create(sim.url, "sel", "b", "{\"app\":\"x\"}", "b0", NULL);
    r0 = api_cm_create(sim.url, "sel", "d", NULL, "d0", NULL);
    snprintf(
        path, sizeof(path),
        "/api/v1/namespaces/sel/configmaps?watch=1&labelSelector=app%%3Dx&resourceVersion=%" PRIu64,
        r0);
    w = api_watch(px.url, path, 200);
    r1 = api_cm_patch(sim.url, "sel", "a",
                      "{\"metadata\":{\"labels\":{\"app\":\"y\"}},\"data\":{\"k\":\"a1\"}}", NULL);
    r2 = api_cm_patch(sim.url, "sel", "a", "{\"metadata\":{\"labels\":{\"app\":\"x\"}}}", NULL);
    r3 = api_cm_patch(sim.url, "sel", "d", "{\"metadata\":{\"labels\":{\"app\":\"x\"}}}", NULL);
    r4 = api_cm_patch(sim.url, "sel", "b", "{\"data\":{\"k\":\"b1\"}}", NULL);
    api_cm_patch(sim.url, "sel", "b", "{\"metadata\":{\"labels\":{\"app\":\"z\"}}}", NULL);

    /* a left the selection: DELETED with its previous content, stamped with the event RV. */
    api_expect_ev(w, 0, "DELETED", "a", r1);
    api_ev_parse(api_wline(w, 0), &e);
    cr_assert_str_eq(json_txt(e.obj, "metadata.labels.app"), "x", "previous labels");
    cr_assert_str_eq(json_txt(e.obj, "data.k"), "a0", "previous content");
    api_ev_free(&e);
    api_expect_ev(w, 1, "ADDED", "a", r2);
    api_ev_parse(api_wline(w, 1), &e);
    cr_assert_str_eq(json_txt(e.obj, "data.k"), "a1", "the new object");
    api_ev_free(&e);
    api_expect_ev(w, 2, "ADDED", "d", r3);
    api_expect_ev(w, 3, "MODIFIED", "b", r4);
    {
        uint64_t r5 = sim_stat(&sim, "revision");

        api_expect_ev(w, 4, "DELETED", "b", r5);
    }
    watch_close(w);

    /* LIST rv=0 with the selector from the cache equals the sim's answer. */
    get(px.url, "/api/v1/namespaces/sel/configmaps?resourceVersion=0&labelSelector=app%3Dx", &r);
    get(sim.url, "/api/v1/namespaces/sel/configmaps?resourceVersion=0&labelSelector=app%3Dx", &s);
    cr_assert_eq(r.code, 200);
    pj = json_body(&r);
    sj = json_body(&s);
    expect_same_items(pj, sj, "rv=0 LIST with a label selector");
    cr_assert_eq(cJSON_GetArraySize(json_at(pj, "items")), 2, "a and d match app=x");
    cJSON_Delete(pj);
    cJSON_Delete(sj);
    http_resp_free(&r);
    http_resp_free(&s);

    /* A metadata.name field selector on a watch from rv=0: only that object. */
    w = api_watch(px.url,
                  "/api/v1/namespaces/sel/configmaps?watch=1&resourceVersion=0"
                  "&fieldSelector=metadata.name%3Dd",
                  200);
    api_expect_ev(w, 0, "ADDED", "d", r3);
    r4 = api_cm_patch(sim.url, "sel", "a", "{\"data\":{\"k\":\"a2\"}}", NULL);
    r1 = api_cm_patch(sim.url, "sel", "d", "{\"data\":{\"k\":\"d2\"}}", NULL);
    api_expect_ev(w, 1, "MODIFIED", "d", r1);
    cr_assert_gt(r1, r4);
    watch_close(w);
    stop_both(&px, &sim);
}

/* Issue 3 / vectors 27-29, 36: periodic bookmarks carry the RV of writes the watcher does
 * not see; the initial-events-end bookmark closes the initial state. */
Test(proxy, bookmarks_and_initial_events_end_bookmark, .timeout = 180)
{
    struct srv sim, px;
    struct watch *w, *quiet;
    uint64_t rv_a, rv_b, other, next, cache;
    char path[256];
    char want[512];

    sim_up(&sim, ARGS("--objects", "0", "--churn", "0", "--bookmark-interval", "1s"));
    proxy_up(&px, sim.url, ARGS("--resources", "configmaps", "--bookmark-interval", "1s"));
    api_make_ns(sim.url, "bm");
    api_make_ns(sim.url, "other");
    rv_a = api_cm_create(sim.url, "bm", "a", NULL, "1", NULL);
    rv_b = api_cm_create(sim.url, "bm", "b", NULL, "1", NULL);

    snprintf(path, sizeof(path),
             "/api/v1/namespaces/bm/"
             "configmaps?watch=1&allowWatchBookmarks=true&resourceVersion=%" PRIu64,
             rv_b);
    w = api_watch(px.url, path, 200);
    other = api_cm_create(sim.url, "other", "x", NULL, "1", NULL);
    snprintf(want, sizeof(want), API_CM_BOOKMARK_FMT, other);
    api_expect_line(w, 0, want); /* no event for the other namespace; the bookmark has its RV */
    /* A watch from the rv of now: nothing passes its watermark, so no bookmark at all. */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/bm/"
             "configmaps?watch=1&allowWatchBookmarks=true&resourceVersion=%" PRIu64,
             other);
    quiet = api_watch(px.url, path, 200);
    /* The RV does not move for ~3 intervals: the bookmark repeats at it each interval, as
     * kube-apiserver's (its watermark stays at the interval's, SEMANTICS 2.6); the next
     * line after them is the next write in scope. */
    nap(3000);
    api_expect_repeats(w, 0, 2, want);
    cr_assert_eq(watch_line_count(quiet), 0u, "a bookmark below the watermark: %s",
                 watch_line_count(quiet) > 0 ? watch_line(quiet, 0, NULL) : "");
    watch_close(quiet);
    next = api_cm_patch(sim.url, "bm", "a", "{\"data\":{\"k\":\"2\"}}", NULL);
    api_expect_ev(w, api_skip_line(w, 1, want), "MODIFIED", "a", next);
    watch_close(w);
    cache = wait_metric(&px, "kwp_resource_version", "configmaps", next, REQ_MS);

    /* sendInitialEvents=true + NotOlderThan (vector 29): ADDED a, b, then the end bookmark. */
    w = api_watch(px.url,
                  "/api/v1/namespaces/bm/configmaps?watch=1&sendInitialEvents=true"
                  "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=",
                  200);
    api_expect_ev(w, 0, "ADDED", "a", next);
    api_expect_ev(w, 1, "ADDED", "b", rv_b);
    snprintf(want, sizeof(want), API_CM_END_BOOKMARK_FMT, cache);
    api_expect_line(w, 2, want);
    watch_close(w);

    /* rv=0 with bookmarks (vector 28): the same end bookmark. */
    w = api_watch(
        px.url,
        "/api/v1/namespaces/bm/configmaps?watch=1&resourceVersion=0&allowWatchBookmarks=true", 200);
    api_expect_ev(w, 0, "ADDED", "a", next);
    api_expect_ev(w, 1, "ADDED", "b", rv_b);
    api_expect_line(w, 2, want);
    watch_close(w);

    /* rv=0 without bookmarks (vector 27): no bookmark; a write is the next line. */
    w = api_watch(px.url, "/api/v1/namespaces/bm/configmaps?watch=1&resourceVersion=0", 200);
    api_expect_ev(w, 0, "ADDED", "a", next);
    api_expect_ev(w, 1, "ADDED", "b", rv_b);
    next = api_cm_patch(sim.url, "bm", "b", "{\"data\":{\"k\":\"2\"}}", NULL);
    api_expect_ev(w, 2, "MODIFIED", "b", next);
    watch_close(w);
    (void)rv_a;
    stop_both(&px, &sim);
}

/*
 * A bookmark must never overtake events the watcher has not been sent yet: its RV tells the
 * client "you have everything up to here" (client-go resumes from it). A reader that pauses
 * while writes pile up, with --bookmark-interval 1s, must still see strictly increasing RVs
 * over events and bookmarks, and every write once.
 */
Test(proxy, bookmark_never_overtakes_pending_events, .timeout = 180)
{
    enum { WRITES = 30, VAL = 400 * 1024 };
    struct srv sim, px;
    static struct bytes raw, body; /* static: still reachable (not a leak) if an assert fires */
    static char val[VAL + 1];
    struct tv evs[WRITES * 4];
    uint64_t rv[WRITES];
    uint64_t start;
    char path[256];
    size_t got, n, k = 0;
    int fd, big = 4 << 20;

    memset(val, 'x', VAL);
    val[VAL] = '\0';
    sim_up(&sim, ARGS("--objects", "0", "--churn", "0"));
    proxy_up(&px, sim.url, ARGS("--resources", "configmaps", "--bookmark-interval", "1s"));
    api_make_ns(sim.url, "slowbm");
    start = sim_stat(&sim, "revision"); /* newer than the configmaps cache: silent until then */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/slowbm/"
             "configmaps?watch=1&allowWatchBookmarks=true&resourceVersion=%" PRIu64,
             start);
    fd = raw_get(px.url, 4096, path);
    for (int i = 0; i < WRITES; i++) {
        char name[16];

        snprintf(name, sizeof(name), "big%02d", i);
        rv[i] = api_cm_create(sim.url, "slowbm", name, NULL, val, NULL);
    }
    nap(2500); /* > 2 bookmark intervals while ~12 MB wait for this reader */
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
    /* Periodic bookmarks repeat while the rv stays (kube-apiserver's cacheWatcher does), so
     * the stream never goes idle: read in 1 s turns until every write is in, at most 60. */
    for (int turn = 0; turn < 60; turn++) {
        cr_assert_eq(drain(fd, &raw, 0, 1000, &got), DRAIN_DEADLINE,
                     "the watch stays open; read %zu bytes", raw.len);
        free(body.d);
        memset(&body, 0, sizeof(body));
        dechunk(&raw, &body);
        n = body_events(&body, evs, sizeof(evs) / sizeof(evs[0]));
        k = 0;
        for (size_t i = 0; i < n; i++) {
            k += evs[i].type != 'B';
        }
        if (k >= (size_t)WRITES) {
            break;
        }
    }
    close(fd);
    k = 0;
    for (size_t i = 0; i < n; i++) {
        /* An event's rv is above every line before it; a bookmark's is at least the line
         * before (a repeat at an rv already sent is allowed, one ahead of an event is not). */
        if (i > 0 && evs[i].type == 'B') {
            cr_assert_geq(evs[i].rv, evs[i - 1].rv,
                          "line %zu (BOOKMARK rv %" PRIu64 ") after line %zu (rv %" PRIu64
                          "): a bookmark's rv never goes back",
                          i, evs[i].rv, i - 1, evs[i - 1].rv);
        } else if (i > 0) {
            cr_assert_gt(evs[i].rv, evs[i - 1].rv,
                         "line %zu (event rv %" PRIu64 ") after line %zu (%s rv %" PRIu64
                         "): a bookmark overtook a pending event, or events reordered",
                         i, evs[i].rv, i - 1, evs[i - 1].type == 'B' ? "BOOKMARK" : "event",
                         evs[i - 1].rv);
        }
        if (evs[i].type != 'B') {
            cr_assert_lt(k, (size_t)WRITES, "more events than writes");
            cr_assert_eq(evs[i].rv, rv[k], "event %zu: rv %" PRIu64 ", expected %" PRIu64, k,
                         evs[i].rv, rv[k]);
            k++;
        }
    }
    cr_assert_eq(k, (size_t)WRITES, "%zu of %d writes arrived", k, WRITES);
    free(raw.d);
    free(body.d);
    stop_both(&px, &sim);
}

/* ====================================================================================== */
/* upstream faults                                                                        */
/* ====================================================================================== */

/*
 * Two ways to break the proxy's upstream watch so that the writes made meanwhile never reach
 * it on that stream:
 *   BREAK_RELAY: the relay holds the sim->proxy bytes, then resets every connection (the
 *                events in flight are lost with the connection);
 *   BREAK_HOOK:  the proxy is frozen (SIGSTOP), the sim ends its watch streams
 *                (POST /_sim/drop-watches), and the proxy is thawed after the writes.
 * break_begin() starts the break, break_end() completes it; writes go in between.
 */
enum break_how { BREAK_RELAY, BREAK_HOOK };

struct upstream {
    struct srv sim, px;
    struct relay *rl; /* BREAK_RELAY only */
    enum break_how how;
};

static void upstream_up(struct upstream *u, enum break_how how, const char *resources)
{
    memset(u, 0, sizeof(*u));
    u->how = how;
    sim_up(&u->sim, ARGS("--objects", "0", "--churn", "0", "--compaction-interval", "0"));
    if (how == BREAK_RELAY) {
        u->rl = relay_new(u->sim.url);
    }
    proxy_up(&u->px, how == BREAK_RELAY ? relay_url(u->rl) : u->sim.url,
             ARGS("--resources", resources));
}

static void break_begin(struct upstream *u, const char *resource)
{
    if (u->how == BREAK_RELAY) {
        relay_hold(u->rl, true);
    } else {
        struct http_resp r;
        char path[128];

        cr_assert_eq(proc_kill(u->px.p, SIGSTOP), 0);
        snprintf(path, sizeof(path), "/_sim/drop-watches?resource=%s", resource);
        req(u->sim.url, "POST", path, NULL, NULL, &r);
        cr_assert_eq(r.code, 200, "%s: HTTP %ld %s", path, r.code, r.body);
        http_resp_free(&r);
    }
}

static void break_end(struct upstream *u)
{
    if (u->how == BREAK_RELAY) {
        relay_cut(u->rl);
    } else {
        cr_assert_eq(proc_kill(u->px.p, SIGCONT), 0);
    }
}

static void upstream_down(struct upstream *u)
{
    srv_stop(&u->px, "kwp proxy");
    if (u->rl != NULL) {
        relay_free(u->rl);
    }
    srv_stop(&u->sim, "kwp sim");
}

/*
 * Issue 3 / SEMANTICS 2.12, vector 39: the upstream watch breaks with writes it never carried
 * and the sim compacts past them, so the re-watch gets 410: the proxy relists, ends every
 * downstream watch of the resource cleanly (no ERROR), and serves the sim's state again.
 */
static void relist_case(enum break_how how)
{
    struct upstream u;
    struct watch *w1, *w2, *w3;
    struct http_resp r, s;
    uint64_t r0, held, compacted, lists0, relists0, rv;
    char path[256];
    char want[512];
    cJSON *pj, *sj;

    upstream_up(&u, how, "configmaps");
    api_make_ns(u.sim.url, "rl");
    api_cm_create(u.sim.url, "rl", "c1", NULL, "1", NULL);
    r0 = api_cm_create(u.sim.url, "rl", "c2", NULL, "1", NULL);
    wait_metric(&u.px, "kwp_resource_version", "configmaps", r0, REQ_MS);
    lists0 = sim_stat(&u.sim, "resources.configmaps.lists");
    relists0 = metric(&u.px, "kwp_relists_total", "configmaps");

    snprintf(path, sizeof(path),
             "/api/v1/namespaces/rl/configmaps?watch=1&resourceVersion=%" PRIu64, r0);
    w1 = api_watch(u.px.url, path, 200);
    w2 = api_watch(u.px.url,
                   "/api/v1/configmaps?watch=1&resourceVersion=0&allowWatchBookmarks=true", 200);
    api_wline(w2, 2); /* c1, c2, end bookmark */

    /* Events the proxy never receives, then compaction past them, then the break. */
    break_begin(&u, "configmaps");
    api_cm_create(u.sim.url, "rl", "c3", NULL, "1", NULL);
    api_cm_delete(u.sim.url, "rl", "c1", NULL);
    held = api_cm_create(u.sim.url, "rl", "c4", NULL, "1", NULL);
    {
        struct http_resp c;
        char cpath[64];

        snprintf(cpath, sizeof(cpath), "/_sim/compact?revision=%" PRIu64, held);
        req(u.sim.url, "POST", cpath, NULL, NULL, &c);
        cr_assert_eq(c.code, 200, "compact: HTTP %ld %s", c.code, c.body);
        http_resp_free(&c);
    }
    compacted = sim_stat(&u.sim, "compacted");
    cr_assert_eq(compacted, held, "the sim compacted to its revision");
    break_end(&u);

    wait_metric(&u.px, "kwp_relists_total", "configmaps", relists0 + 1, 30000);
    expect_clean_end(w1, 30000, "a namespaced watch open during the relist");
    expect_clean_end(w2, 30000, "a cluster-wide watch open during the relist");
    expect_no_error_event(w1, "namespaced watch");
    expect_no_error_event(w2, "cluster-wide watch");
    cr_assert_eq(watch_line_count(w1), 0u, "w1 saw none of the held events: %s",
                 watch_line_count(w1) ? watch_line(w1, 0, NULL) : "");
    watch_close(w1);
    watch_close(w2);
    /* a cut stream (the relay) is followed by the reflector's RV check, a limit=1 LIST */
    cr_assert_eq(sim_stat(&u.sim, "resources.configmaps.lists"),
                 lists0 + 1 + (u.how == BREAK_RELAY), "exactly one relist reached the sim");
    srv_wait_ready(&u.px, READY_MS);

    /* The cache recovered: rv=0 equals the sim's state, at the relist RV. */
    get(u.px.url, "/api/v1/namespaces/rl/configmaps?resourceVersion=0", &r);
    get(u.sim.url, "/api/v1/namespaces/rl/configmaps?resourceVersion=0", &s);
    cr_assert_eq(r.code, 200);
    pj = json_body(&r);
    sj = json_body(&s);
    expect_same_items(pj, sj, "rv=0 LIST after the relist");
    cr_assert_eq(cJSON_GetArraySize(json_at(pj, "items")), 3, "c2, c3, c4");
    cr_assert_eq(json_rv(pj), held, "cache RV = relist RV");
    cJSON_Delete(pj);
    cJSON_Delete(sj);
    http_resp_free(&r);
    http_resp_free(&s);

    /* Re-watches below the relist RV are too old; at it they work (vector 39). */
    w3 = api_watch(u.px.url, path, 200);
    snprintf(want, sizeof(want), TOO_OLD_FMT, r0, held);
    api_expect_line(w3, 0, want);
    expect_clean_end(w3, REQ_MS, "re-watch below the relist RV");
    watch_close(w3);
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/rl/configmaps?watch=1&resourceVersion=%" PRIu64, held);
    w3 = api_watch(u.px.url, path, 200);
    rv = api_cm_create(u.sim.url, "rl", "c5", NULL, "1", NULL);
    api_expect_ev(w3, 0, "ADDED", "c5", rv);
    watch_close(w3);

    upstream_down(&u);
}

Test(proxy, relist_after_upstream_410_ends_watches_and_recovers, .timeout = 180)
{
    relist_case(BREAK_RELAY);
}

Test(proxy, relist_after_upstream_410_via_sim_drop_watches, .timeout = 180)
{
    relist_case(BREAK_HOOK);
}

/*
 * Issue 3: a broken upstream stream (reset with events in flight, or ended by the sim while the
 * proxy was frozen) resumes from the last RV with no lost and no duplicated event, and without
 * a relist: a downstream watch opened before sees exactly the writes, in order.
 */
static void resume_case(enum break_how how)
{
    enum { N = 12 };
    struct upstream u;
    struct watch *w;
    uint64_t rv[N + 1];
    uint64_t start, lists0, relists0, upw0, simw0;
    char path[256];

    upstream_up(&u, how, "configmaps");
    api_make_ns(u.sim.url, "rs");
    start = sim_stat(&u.sim, "revision"); /* newer than the configmaps cache: silent until then */
    lists0 = sim_stat(&u.sim, "resources.configmaps.lists");
    simw0 = sim_stat(&u.sim, "resources.configmaps.watches");
    relists0 = metric(&u.px, "kwp_relists_total", "configmaps");
    upw0 = metric(&u.px, "kwp_upstream_watch_requests_total", "configmaps");

    snprintf(path, sizeof(path),
             "/api/v1/namespaces/rs/configmaps?watch=1&resourceVersion=%" PRIu64, start);
    w = api_watch(u.px.url, path, 200);
    /* a00-a03 delivered normally; a04-a07 written during the break (never sent on the old
     * stream); a08-a11 while the proxy re-watches. */
    for (int i = 0; i < N; i++) {
        char name[16];

        if (i == 4) {
            api_wline(w, 3);
            break_begin(&u, "configmaps");
        } else if (i == 8) {
            break_end(&u);
        }
        snprintf(name, sizeof(name), "a%02d", i);
        rv[i] = api_cm_create(u.sim.url, "rs", name, NULL, "1", NULL);
    }
    for (int i = 0; i < N; i++) {
        char name[16];

        snprintf(name, sizeof(name), "a%02d", i);
        api_expect_ev(w, (size_t)i, "ADDED", name, rv[i]);
    }
    /* Live after the resume, and nothing duplicated before it. */
    rv[N] = api_cm_patch(u.sim.url, "rs", "a00", "{\"data\":{\"k\":\"2\"}}", NULL);
    api_expect_ev(w, N, "MODIFIED", "a00", rv[N]);
    cr_assert_eq(watch_line_count(w), (size_t)N + 1);
    cr_assert_not(watch_ended(w, NULL, NULL), "the downstream watch survives a re-watch");
    watch_close(w);

    cr_assert_eq(metric(&u.px, "kwp_relists_total", "configmaps"), relists0,
                 "a broken stream re-watches; it does not relist");
    cr_assert_eq(sim_stat(&u.sim, "resources.configmaps.lists"), lists0 + (u.how == BREAK_RELAY),
                 "no LIST upstream but the RV check (a limit=1 LIST) after a cut stream");
    cr_assert_geq(metric(&u.px, "kwp_upstream_watch_requests_total", "configmaps"), upw0 + 1,
                  "the proxy re-watched");
    cr_assert_geq(sim_stat(&u.sim, "resources.configmaps.watches"), simw0 + 1);
    upstream_down(&u);
}

Test(proxy, broken_upstream_stream_resumes_without_loss_or_duplicates, .timeout = 180)
{
    resume_case(BREAK_RELAY);
}

Test(proxy, ended_upstream_stream_resumes_via_sim_drop_watches, .timeout = 180)
{
    resume_case(BREAK_HOOK);
}

/* Issue 3 "Bad input" / rule 11: an upstream watch line longer than --max-line is logged and
 * causes a relist, never a crash; downstream watches end cleanly and the cache recovers. */
Test(proxy, overlong_upstream_line_relists, .timeout = 180)
{
    enum { VAL = 100 * 1024 };
    static char val[VAL + 1];
    struct srv sim, px;
    struct watch *w;
    struct http_resp r;
    uint64_t relists0, errors0, rv;
    char path[256];
    cJSON *j;

    memset(val, 'q', VAL);
    sim_up(&sim, ARGS("--objects", "0", "--churn", "0"));
    proxy_up(&px, sim.url, ARGS("--resources", "configmaps", "--max-line", "64Ki"));
    api_make_ns(sim.url, "long");
    rv = api_cm_create(sim.url, "long", "small", NULL, "1", NULL);
    wait_metric(&px, "kwp_resource_version", "configmaps", rv, REQ_MS);
    relists0 = metric(&px, "kwp_relists_total", "configmaps");
    errors0 = metric(&px, "kwp_upstream_errors_total", "configmaps");
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/long/configmaps?watch=1&resourceVersion=%" PRIu64, rv);
    w = api_watch(px.url, path, 200);

    rv = api_cm_create(sim.url, "long", "huge", NULL, val, NULL);
    wait_metric(&px, "kwp_relists_total", "configmaps", relists0 + 1, 30000);
    cr_assert_gt(metric(&px, "kwp_upstream_errors_total", "configmaps"), errors0,
                 "the over-long line counts as an upstream error");
    expect_clean_end(w, 30000, "a downstream watch during the relist");
    expect_no_error_event(w, "a downstream watch during the relist");
    watch_close(w);
    srv_wait_ready(&px, READY_MS);
    get(px.url, "/api/v1/namespaces/long/configmaps?resourceVersion=0", &r);
    cr_assert_eq(r.code, 200);
    j = json_body(&r);
    cr_assert_eq(cJSON_GetArraySize(json_at(j, "items")), 2, "the relist brought the huge object");
    cr_assert_eq(json_rv(j), rv);
    cJSON_Delete(j);
    http_resp_free(&r);
    stop_both(&px, &sim);
}

/* Issue 3 / rule 1: 200 downstream watches of one resource make one upstream watch, and all
 * of them receive the next write. */
Test(proxy, fanout_200_watches_one_upstream_watch, .timeout = 180)
{
    enum { N = 200 };
    struct srv sim, px;
    struct watch *w[N];
    uint64_t start, watches0, rv;
    char path[256];

    sim_up(&sim, ARGS("--objects", "10", "--namespaces", "2", "--churn", "0"));
    proxy_up(&px, sim.url, ARGS("--resources", "pods"));
    start = sim_stat(&sim, "revision");
    wait_metric(&px, "kwp_resource_version", "pods", start, REQ_MS);
    cr_assert_eq(sim_stat(&sim, "resources.pods.watches_open"), 1u);
    watches0 = sim_stat(&sim, "resources.pods.watches");

    for (int i = 0; i < N; i++) {
        snprintf(path, sizeof(path), "%s?watch=1&resourceVersion=%" PRIu64,
                 i % 2 ? "/api/v1/pods" : "/api/v1/namespaces/default/pods", start);
        w[i] = api_watch(px.url, path, 200);
    }
    wait_metric(&px, "kwp_watches_open", "pods", N, REQ_MS);
    cr_assert_eq(sim_stat(&sim, "resources.pods.watches_open"), 1u,
                 "one upstream watch while %d downstream watches are open", N);
    cr_assert_eq(sim_stat(&sim, "resources.pods.watches"), watches0,
                 "no upstream WATCH request for downstream watches");
    cr_assert_eq(metric(&px, "kwp_upstream_watches_open", "pods"), 1u);

    rv = api_pod_create(sim.url, "default", "fan", NULL);
    for (int i = 0; i < N; i++) {
        api_expect_ev(w[i], 0, "ADDED", "fan", rv);
    }
    for (int i = 0; i < N; i++) {
        watch_close(w[i]);
    }
    cr_assert_eq(sim_stat(&sim, "resources.pods.watches"), watches0);
    stop_both(&px, &sim);
}

/*
 * Issue 3 / SEMANTICS 2.11: a reader that stops reading is ended (its cursor falls out of a
 * small history under churn) while a fast one on the same resource keeps receiving every
 * event. The fast stream is checked against the sim's own watch over the same RV range.
 */
Test(proxy, slow_reader_ended_fast_reader_keeps_up, .timeout = 180)
{
    enum { MAXEV = 60000 };
    struct srv sim, px;
    struct watch *fast, *ref;
    uint64_t p0 = 0, s0 = 0, lo, hi, t0;
    size_t got, i, j, i0;
    enum drain_end how;
    int fd, big = 1 << 20;
    static uint64_t fr[MAXEV], sr[MAXEV];
    size_t nf = 0, ns = 0;

    /* Sim bookmarks far apart: this test is about the proxy's laggard rule alone. */
    sim_up(&sim, ARGS("--objects", "50", "--namespaces", "2", "--churn", "500",
                      "--bookmark-interval", "10m"));
    /* 1000 events of history: the fast reader may pause ~2 s on a loaded machine and still
     * be served; the slow one stalls 20 s (~10000 events) and must be ended. */
    proxy_up(&px, sim.url,
             ARGS("--resources", "pods", "--history-min", "1000", "--history-max", "1000",
                  "--history-window", "0"));

    /* Reference: the sim's own watch; then the proxy's fast watcher. Both from rv=0 with the
     * end bookmark, which gives the RV their live parts start after. */
    ref =
        api_watch(sim.url, "/api/v1/pods?watch=1&resourceVersion=0&allowWatchBookmarks=true", 200);
    fast =
        api_watch(px.url, "/api/v1/pods?watch=1&resourceVersion=0&allowWatchBookmarks=true", 200);
    fd = raw_get(px.url, 4096, "/api/v1/pods?watch=1&resourceVersion=0");

    t0 = http_now_ms();
    nap(20000); /* the slow reader reads nothing while ~10000 events go by */
    cr_assert_not(watch_ended(fast, NULL, NULL), "the fast watcher is still streaming");

    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
    how = drain(fd, NULL, 0, 60000, &got);
    close(fd);
    cr_assert(how == DRAIN_EOF || how == DRAIN_ERROR,
              "the slow reader was not ended: still streaming after %" PRIu64
              " ms (20 s stalled, then 60 s draining %zu bytes)",
              http_now_ms() - t0, got);
    cr_log_info("slow reader: %s after %" PRIu64 " ms (20 s stalled), %zu bytes drained",
                how == DRAIN_EOF ? "EOF" : "reset", http_now_ms() - t0, got);
    cr_assert_not(watch_ended(fast, NULL, NULL), "the fast watcher outlives the slow one");
    wait_metric(&px, "kwp_watches_open", "pods", 1, REQ_MS);

    /* Compare the live parts over the common RV range. */
    for (i = 0; i < watch_line_count(fast) && nf < MAXEV; i++) {
        const char *l = watch_line(fast, i, NULL);
        struct api_ev e;

        api_ev_parse(l, &e);
        if (strcmp(e.type, "BOOKMARK") == 0) {
            cr_assert(p0 == 0 && strstr(l, "initial-events-end"), "unexpected bookmark: %s", l);
            p0 = e.rv;
        } else if (p0 != 0) {
            fr[nf++] = e.rv;
        }
        api_ev_free(&e);
    }
    for (i = 0; i < watch_line_count(ref) && ns < MAXEV; i++) {
        const char *l = watch_line(ref, i, NULL);
        struct api_ev e;

        api_ev_parse(l, &e);
        if (strcmp(e.type, "BOOKMARK") == 0) {
            s0 = s0 == 0 ? e.rv : s0;
        } else if (s0 != 0) {
            sr[ns++] = e.rv;
        }
        api_ev_free(&e);
    }
    watch_close(fast);
    watch_close(ref);
    cr_assert(p0 != 0 && s0 != 0, "both streams sent their initial-events-end bookmark");
    cr_assert_gt(nf, 1000u, "the fast watcher received %zu live events", nf);
    lo = p0 > s0 ? p0 : s0;
    hi = fr[nf - 1] < sr[ns - 1] ? fr[nf - 1] : sr[ns - 1];
    for (i = 0; i < nf && fr[i] <= lo; i++) {
    }
    for (j = 0; j < ns && sr[j] <= lo; j++) {
    }
    i0 = i;
    for (; i < nf && j < ns && fr[i] <= hi && sr[j] <= hi; i++, j++) {
        cr_assert_eq(fr[i], sr[j],
                     "fast watcher: rv %" PRIu64 " where the sim sent %" PRIu64
                     " (lost, duplicated or reordered)",
                     fr[i], sr[j]);
    }
    cr_log_info("fast watcher: %zu live events, %zu compared with the sim's", nf, i - i0);
    cr_assert((i == nf || fr[i] > hi) && (j == ns || sr[j] > hi),
              "the streams hold different events up to rv %" PRIu64, hi);
    stop_both(&px, &sim);
}

/* Reads what <fd> still holds up to the response's end (kept alive: idle ends the read),
 * closes it, asserts the terminating chunk and a whole last event, and de-chunks into <body>. */
static void read_clean_end(int fd, struct bytes *raw, struct bytes *body)
{
    size_t got = 0;

    cr_assert_eq(drain(fd, raw, 3000, 60000, &got), DRAIN_IDLE);
    close(fd);
    cr_assert(raw->len > 5 && memcmp(raw->d + raw->len - 5, "0\r\n\r\n", 5) == 0,
              "the stream did not end with the terminating chunk: ...%.40s",
              raw->d + (raw->len > 40 ? raw->len - 40 : 0));
    dechunk(raw, body);
    cr_assert(body->len > 0 && body->d[body->len - 1] == '\n', "the last event is whole");
}

/*
 * Reads <fd> slowly into <raw> (at most <chunk> bytes, then a <pause_ms> nap: a byte always
 * moves, so the stall timeout never applies) until the proxy's
 * kwp_terminated_watchers_total{pods} is above 0 or <limit_ms> passed. Returns the counter.
 */
static uint64_t read_slowly_until_ended(struct srv *px, int fd, struct bytes *raw, size_t chunk,
                                        int pause_ms, uint64_t limit_ms)
{
    uint64_t t0 = http_now_ms(), polled = t0, v = 0;
    char buf[4096];

    cr_assert_leq(chunk, sizeof(buf));
    while (http_now_ms() - t0 < limit_ms) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        ssize_t k = poll(&pf, 1, 20) > 0 ? recv(fd, buf, chunk, 0) : 0;

        cr_assert_geq(k, 0, "slow reader: %s", strerror(errno));
        bytes_add(raw, buf, (size_t)k);
        nap(pause_ms);
        if (http_now_ms() - polled >= 500) {
            polled = http_now_ms();
            if (metric_try(px, "kwp_terminated_watchers_total", "pods", &v) && v > 0) {
                break;
            }
        }
    }
    return v;
}

/*
 * Issue 5 "no watcher starved, max lag bounded" / SEMANTICS 2.11: a client that keeps reading,
 * but slower than its events arrive, is not caught by the stall timeout; --watch-max-lag ends
 * its watch cleanly (terminating chunk, no ERROR event) once its next event has waited that
 * long, with events in order up to there and a re-watch from its last resourceVersion served.
 * The fast watcher on the same resource is left alone.
 */
Test(proxy, lagging_reader_ended_cleanly_by_max_lag, .timeout = 180)
{
    enum { MAXEV = 200000 };
    static struct tv ev[MAXEV];
    struct srv sim, px;
    struct watch *fast, *again;
    struct bytes raw = {0}, body = {0};
    uint64_t t0, v = 0, last = 0;
    size_t n, i;
    char path[160];
    bool ok;
    int fd;

    /* ~1.4 MB/s of ~4.5 KB pods; history large enough that the window never ends the watch */
    sim_up(&sim, ARGS("--objects", "20", "--namespaces", "1", "--churn", "300", "--object-bytes",
                      "4096", "--bookmark-interval", "10m"));
    proxy_up(&px, sim.url,
             ARGS("--resources", "pods", "--watch-max-lag", "2s", "--history-min", "100000",
                  "--history-max", "100000", "--history-window", "0"));
    fast = api_watch(px.url, "/api/v1/pods?watch=1&resourceVersion=0", 200);
    /* from a live rv: every event is live, so they come in rv order */
    last = sim_stat(&sim, "revision");
    WAIT_FOR(ok, metric_try(&px, "kwp_resource_version", "pods", &v) && v >= last, REQ_MS);
    cr_assert(ok, "the proxy reached rv %" PRIu64, last);
    v = 0;
    snprintf(path, sizeof(path), "/api/v1/pods?watch=1&resourceVersion=%" PRIu64, last);
    fd = raw_get(px.url, 4096, path);

    /* read ~100 KB/s: a byte always moves, so only the lag rule can end this watch */
    t0 = http_now_ms();
    v = read_slowly_until_ended(&px, fd, &raw, 2048, 20, 90000);
    cr_assert_eq(v, 1u,
                 "kwp_terminated_watchers_total is %" PRIu64 " after %" PRIu64 " ms of "
                 "slow reading (%zu bytes)",
                 v, http_now_ms() - t0, raw.len);
    cr_log_info("lagging reader ended after %" PRIu64 " ms, %zu bytes read slowly",
                http_now_ms() - t0, raw.len);

    /* what the socket still holds, then the response's end: kept alive, so idle ends it */
    read_clean_end(fd, &raw, &body);
    n = body_events(&body, ev, MAXEV);
    cr_assert_gt(n, 20u, "%zu events before the end", n);
    for (i = 0; i < n; i++) {
        cr_assert_neq(ev[i].type, 'E', "an ERROR event at %zu: the end must be clean", i);
        cr_assert_gt(ev[i].rv, last, "event %zu: rv %" PRIu64 " after %" PRIu64, i, ev[i].rv, last);
        last = ev[i].rv;
    }

    /* the client re-watches from its last rv: served from history, the next event follows */
    snprintf(path, sizeof(path), "/api/v1/pods?watch=1&resourceVersion=%" PRIu64, last);
    again = api_watch(px.url, path, 200);
    cr_assert_eq(watch_wait_lines(again, 1, REQ_MS), 0, "the re-watch got no event");
    {
        struct api_ev e;

        api_ev_parse(watch_line(again, 0, NULL), &e);
        cr_assert_str_neq(e.type, "ERROR", "re-watch from %" PRIu64 ": %s", last,
                          watch_line(again, 0, NULL));
        cr_assert_gt(e.rv, last);
        api_ev_free(&e);
    }
    watch_close(again);
    cr_assert_not(watch_ended(fast, NULL, NULL), "the fast watcher is still streaming");
    cr_assert_eq(metric(&px, "kwp_terminated_watchers_total", "pods"), 1u,
                 "only the lagging watch was ended");
    cr_assert(proc_log_has(px.p, "Forcing pods watcher close due to unresponsiveness"),
              "no log line for the ended watch");
    watch_close(fast);
    free(raw.d);
    free(body.d);
    stop_both(&px, &sim);
}

/*
 * SEMANTICS 2.11 during initial events: kube-apiserver ends a watcher whose input fills while
 * it is still sending its initial events. A reader that takes an rv=0 watch's ADDED events
 * slower than they could go, while writes continue, is ended by --watch-max-lag once the
 * oldest live event waiting behind them is that old: cleanly, no ERROR event.
 */
Test(proxy, slow_initial_events_reader_ended_by_max_lag, .timeout = 180)
{
    struct srv sim, px;
    struct bytes raw = {0}, body = {0};
    uint64_t t0, v = 0;
    size_t added = 0;
    int fd;

    /* ~1.3 MB of initial events (300 pods of ~4.5 KB) and 100 writes/s behind them */
    sim_up(&sim, ARGS("--objects", "300", "--namespaces", "1", "--churn", "100", "--object-bytes",
                      "4096", "--bookmark-interval", "10m"));
    proxy_up(&px, sim.url,
             ARGS("--resources", "pods", "--watch-max-lag", "2s", "--history-min", "100000",
                  "--history-max", "100000", "--history-window", "0"));
    fd = raw_get(px.url, 4096, "/api/v1/pods?watch=1&resourceVersion=0");

    /* ~20 KB/s: the initial events alone would take a minute */
    t0 = http_now_ms();
    v = read_slowly_until_ended(&px, fd, &raw, 1024, 50, 60000);
    cr_assert_eq(v, 1u,
                 "kwp_terminated_watchers_total is %" PRIu64 " after %" PRIu64 " ms of "
                 "slow reading of initial events (%zu bytes)",
                 v, http_now_ms() - t0, raw.len);
    cr_log_info("slow initial-events reader ended after %" PRIu64 " ms, %zu bytes read",
                http_now_ms() - t0, raw.len);
    cr_assert(proc_log_has(px.p, "due to unresponsiveness"), "the ending is logged");

    read_clean_end(fd, &raw, &body);
    cr_assert(memmem(body.d, body.len, "\"type\":\"ERROR\"", 14) == NULL, "no ERROR event");
    /* ended while still sending its initial events, not after them */
    for (const char *p = body.d;
         (p = memmem(p, body.len - (size_t)(p - body.d), "{\"type\":\"ADDED\"", 15)) != NULL; p++) {
        added++;
    }
    cr_assert(added > 0 && added < 300, "%zu of the 300 initial ADDED events before the end",
              added);
    free(raw.d);
    free(body.d);
    stop_both(&px, &sim);
}

/* ====================================================================================== */
/* bad input, unavailable upstreams, shutdown                                             */
/* ====================================================================================== */

/* Issue 3 "Bad input" / SEMANTICS 1.1, 2.1, 5: kube-apiserver's Status for bad requests. */
Test(proxy, bad_query_parameters_get_kube_status, .timeout = 180)
{
    static const char *const bad_rv_list =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"invalid resource version: resourceVersion: Invalid value: \\\"abc\\\": "
        "strconv.ParseUint: parsing \\\"abc\\\": invalid syntax\",\"reason\":\"BadRequest\","
        "\"code\":400}";
    static const char *const bad_rv_watch =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"resourceVersion: Invalid value: \\\"abc\\\": strconv.ParseUint: parsing "
        "\\\"abc\\\": invalid syntax\",\"code\":500}";
    static const char *const bad_selector =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"found '==', expected: !, identifier, or 'end of string'\","
        "\"reason\":\"BadRequest\",\"code\":400}";
    static const char *const bad_field =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"field label not supported: spec.foo\",\"reason\":\"BadRequest\","
        "\"code\":400}";
    static const char *const continue_rv =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"specifying resource version is not allowed when using continue\","
        "\"reason\":\"BadRequest\",\"code\":400}";
    static const char *const rvm_no_rv =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"ListOptions.meta.k8s.io \\\"\\\" is invalid: resourceVersionMatch: "
        "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided\","
        "\"reason\":\"Invalid\",\"details\":{\"group\":\"meta.k8s.io\",\"kind\":\"ListOptions\","
        "\"causes\":[{\"reason\":\"FieldValueForbidden\",\"message\":\"Forbidden: "
        "resourceVersionMatch is forbidden unless resourceVersion is provided\","
        "\"field\":\"resourceVersionMatch\"}]},\"code\":422}";
    /* Requests whose answer must be the sim's (the reference apiserver) byte for byte. */
    static const char *const same_as_sim[] = {
        "/api/v1/namespaces/default/pods?resourceVersion=0&resourceVersionMatch=Exact",
        "/api/v1/namespaces/default/pods?resourceVersion=1&resourceVersionMatch=Foo",
        "/api/v1/namespaces/default/pods?sendInitialEvents=true",
        "/api/v1/namespaces/default/pods?watch=1&sendInitialEvents=true",
        "/api/v1/namespaces/default/"
        "pods?watch=1&resourceVersion=1&resourceVersionMatch=NotOlderThan",
        "/api/v1/namespaces/default/pods?continue=garbage!!",
        "/api/v1/namespaces/default/pods?limit=abc",
        "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=abc",
        "/api/v1/namespaces/default/pods?fieldSelector=metadata.name",
        "/api/v1/namespaces/default/pods/p?resourceVersion=abc",
        "/api/v1/namespaces/default/pods/zzz?resourceVersion=0",
        "/api/v1/namespaces/default/configmaps?fieldSelector=spec.foo%3Dbar",
        NULL,
    };
    struct srv sim, px;
    struct http_resp r, s;
    char path[1024];
    cJSON *j;

    sim_up(&sim, ARGS("--objects", "6", "--namespaces", "1", "--churn", "0"));
    proxy_up(&px, sim.url, ARGS("--resources", "pods,configmaps"));

    get(px.url, "/api/v1/namespaces/default/pods?resourceVersion=abc", &r);
    expect_exact(&r, 400, bad_rv_list);
    http_resp_free(&r);
    get(px.url, "/api/v1/namespaces/default/pods?watch=1&resourceVersion=abc", &r);
    expect_exact(&r, 500, bad_rv_watch);
    http_resp_free(&r);
    get(px.url, "/api/v1/namespaces/default/pods?labelSelector=%3D%3Dx", &r);
    expect_exact(&r, 400, bad_selector);
    http_resp_free(&r);
    get(px.url, "/api/v1/namespaces/default/pods?watch=1&labelSelector=%3D%3Dx", &r);
    expect_exact(&r, 400, bad_selector);
    http_resp_free(&r);
    get(px.url, "/api/v1/namespaces/default/pods?resourceVersion=0&fieldSelector=spec.foo%3Dbar",
        &r);
    expect_exact(&r, 400, bad_field);
    http_resp_free(&r);
    get(px.url, "/api/v1/namespaces/default/pods?resourceVersionMatch=Exact", &r);
    expect_exact(&r, 422, rvm_no_rv);
    http_resp_free(&r);

    /* continue together with an rv (vector 14): a real token from a paginated LIST. */
    get(sim.url, "/api/v1/namespaces/default/pods?limit=2", &s);
    j = json_body(&s);
    cr_assert_str_neq(json_txt(j, "metadata.continue"), "(absent)", "a continue token");
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/default/pods?limit=2&continue=%s&resourceVersion=%" PRIu64,
             json_txt(j, "metadata.continue"), json_rv(j));
    get(px.url, path, &r);
    expect_exact(&r, 400, continue_rv);
    http_resp_free(&r);
    cJSON_Delete(j);
    http_resp_free(&s);

    for (size_t i = 0; same_as_sim[i]; i++) {
        get(px.url, same_as_sim[i], &r);
        get(sim.url, same_as_sim[i], &s);
        cr_assert_geq(s.code, 400, "%s is an error at the sim (HTTP %ld)", same_as_sim[i], s.code);
        cr_assert_eq(r.code, s.code, "%s: proxy HTTP %ld, sim HTTP %ld\nproxy: %s\n  sim: %s",
                     same_as_sim[i], r.code, s.code, r.body, s.body);
        cr_assert(r.body_len == s.body_len && memcmp(r.body, s.body, s.body_len) == 0,
                  "%s: proxy and sim bodies differ\nproxy: %s\n  sim: %s", same_as_sim[i], r.body,
                  s.body);
        http_resp_free(&r);
        http_resp_free(&s);
    }

    /* Still serving. */
    cr_assert_eq(get_code(px.url, "/api/v1/pods?resourceVersion=0"), 200);
    stop_both(&px, &sim);
}

/* sim + proxy caching pods, pod default/a created and seen by the proxy; returns its RV. */
static uint64_t pod_a_up(struct srv *sim, struct srv *px)
{
    uint64_t rv;
    bool ok;

    sim_up(sim, ARGS("--objects", "0", "--namespaces", "1", "--churn", "0"));
    proxy_up(px, sim->url, ARGS("--resources", "pods"));
    rv = api_pod_create(sim->url, "default", "a", NULL);
    WAIT_FOR(ok, get_code(px->url, "/api/v1/namespaces/default/pods/a?resourceVersion=0") == 200,
             REQ_MS);
    cr_assert(ok, "the proxy never saw pod a");
    return rv;
}

/* Asserts a 200 single-object answer for pod <name>: the object, not a watch stream. */
static void expect_pod_object(const struct http_resp *r, const char *name, const char *what)
{
    cJSON *j;

    cr_assert_eq(r->code, 200, "%s: HTTP %ld: %s", what, r->code, r->body);
    j = json_body(r);
    cr_assert_str_eq(json_txt(j, "kind"), "Pod", "%s: not the object: %s", what, r->body);
    cr_assert_str_eq(json_txt(j, "metadata.name"), name, "%s", what);
    cJSON_Delete(j);
}

/* installer.go routes a GET of .../pods/NAME to GetResource, which reads resourceVersion only
 * (?watch= does nothing there), and only /watch/.../pods/NAME to ListResource, which checks
 * every option like a collection's (get.go) instead of answering as a GET. */
Test(proxy, get_by_name_ignores_watch_and_named_watch_checks_options, .timeout = 180)
{
    static const char *const limit_abc =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"strconv.ParseInt: parsing \\\"abc\\\": invalid syntax\","
        "\"reason\":\"BadRequest\",\"code\":400}";
    struct srv sim, px;
    struct http_resp r;
    struct watch *w;
    uint64_t rv = pod_a_up(&sim, &px);

    get(px.url, "/api/v1/namespaces/default/pods/a?watch=1&resourceVersion=0", &r);
    expect_pod_object(&r, "a", "GET by name with watch=1 (cache)");
    http_resp_free(&r);
    get(px.url, "/api/v1/namespaces/default/pods/a?watch=true", &r);
    expect_pod_object(&r, "a", "GET by name with watch=true (upstream)");
    http_resp_free(&r);
    get(px.url, "/api/v1/watch/namespaces/default/pods/a?limit=abc", &r);
    expect_exact(&r, 400, limit_abc);
    http_resp_free(&r);

    w = api_watch(px.url, "/api/v1/watch/namespaces/default/pods/a?resourceVersion=0", 200);
    api_expect_ev(w, 0, "ADDED", "a", rv);
    watch_close(w);
    stop_both(&px, &sim);
}

/* get.go ListResource: a watch of /watch/.../pods/NAME takes no field selector but one whose
 * metadata.name term equals NAME. */
Test(proxy, named_watch_field_selector_must_pin_the_name, .timeout = 180)
{
    static const char *const name_mismatch =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"fieldSelector metadata.name doesn't match requested name\","
        "\"reason\":\"BadRequest\",\"code\":400}";
    static const char *const bad[] = {
        "/api/v1/watch/namespaces/default/pods/a?fieldSelector=metadata.name%3Db",
        "/api/v1/watch/namespaces/default/pods/a?resourceVersion=0"
        "&fieldSelector=status.phase%3DRunning",
        "/api/v1/watch/namespaces/default/pods/a?resourceVersion=0"
        "&fieldSelector=metadata.name!%3Da",
        NULL,
    };
    struct srv sim, px;
    struct http_resp r;
    struct watch *w;
    uint64_t rv = pod_a_up(&sim, &px);

    for (size_t i = 0; bad[i]; i++) {
        get(px.url, bad[i], &r);
        expect_exact(&r, 400, name_mismatch);
        http_resp_free(&r);
    }
    w = api_watch(px.url,
                  "/api/v1/watch/namespaces/default/pods/a?resourceVersion=0"
                  "&fieldSelector=metadata.name%3Da",
                  200);
    api_expect_ev(w, 0, "ADDED", "a", rv);
    watch_close(w);
    stop_both(&px, &sim);
}

/* SEMANTICS 1.6: continue with resourceVersion=0 is accepted (a plain continue), and the
 * cache's computeListLimit drops the limit for rv "0": the rest of the list in one page, no
 * continue and no remainingItemCount. */
Test(proxy, continue_with_rv0_ignores_limit, .timeout = 180)
{
    struct srv sim, px;
    struct http_resp r;
    char path[1024];
    cJSON *j, *k;
    uint64_t rv = pod_a_up(&sim, &px);

    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof(name), "b%d", i);
        rv = api_pod_create(sim.url, "default", name, NULL);
    }
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/default/pods?resourceVersion=%" PRIu64
             "&resourceVersionMatch=NotOlderThan&limit=2",
             rv);
    get(px.url, path, &r);
    cr_assert_eq(r.code, 200, "first page: HTTP %ld %s", r.code, r.body);
    j = json_body(&r);
    http_resp_free(&r);
    cr_assert_str_neq(json_txt(j, "metadata.continue"), "(absent)", "a continue token");
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/default/pods?continue=%s&resourceVersion=0&limit=1",
             json_txt(j, "metadata.continue"));
    get(px.url, path, &r);
    cr_assert_eq(r.code, 200, "continue with rv=0: HTTP %ld %s", r.code, r.body);
    k = json_body(&r);
    cr_assert_eq(cJSON_GetArraySize(json_at(k, "items")), 3, "the rest in one page: %s", r.body);
    cr_assert_str_eq(json_txt(k, "metadata.continue"), "(absent)", "%s", r.body);
    cr_assert_str_eq(json_txt(k, "metadata.remainingItemCount"), "(absent)", "%s", r.body);
    cr_assert_str_eq(json_txt(k, "metadata.resourceVersion"),
                     json_txt(j, "metadata.resourceVersion"), "the page is at the token's rv");
    cJSON_Delete(k);
    cJSON_Delete(j);
    http_resp_free(&r);
    stop_both(&px, &sim);
}

/* get.go: timeoutSeconds<0 gives context.WithTimeout an expired deadline: 200, then the
 * stream ends at once (not the 30-60 min default that 0 picks). */
Test(proxy, negative_timeout_seconds_ends_the_watch_at_once, .timeout = 180)
{
    struct srv sim, px;
    struct watch *w;
    char path[256];
    uint64_t rv = pod_a_up(&sim, &px);

    snprintf(path, sizeof(path),
             "/api/v1/namespaces/default/pods?watch=1&resourceVersion=%" PRIu64
             "&timeoutSeconds=-5",
             rv);
    w = api_watch(px.url, path, 200);
    expect_clean_end(w, REQ_MS, "timeoutSeconds=-5");
    cr_assert_eq(watch_line_count(w), 0, "timeoutSeconds=-5: %zu events", watch_line_count(w));
    watch_close(w);
    stop_both(&px, &sim);
}

/* A query is read as kube-apiserver reads it (Go's url.ParseQuery, errors ignored): a pair
 * with a bad %-escape or a raw ';' is dropped, not parsed literally into a 400. */
Test(proxy, bad_query_escapes_are_dropped_as_kube_apiserver_does, .timeout = 180)
{
    static const struct {
        const char *query;
        int items;
    } cases[] = {
        {"resourceVersion=0&labelSelector=%zz", 1},                /* selector dropped: all */
        {"resourceVersion=0&labelSelector=app%3Dnone;x", 1},       /* ';': dropped */
        {"resourceVersion=0&labelSelector=app%3Dnone&limit=%", 0}, /* limit dropped */
        {"resourceVersion=%&labelSelector=app%3Dnone", 0},         /* rv dropped: upstream */
        {"resourceVersion=0&labelSelector=app+in+%28none%29", 0},  /* '+' is a space */
    };
    struct srv sim, px;

    pod_a_up(&sim, &px);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[256];
        cJSON *j, *items;

        snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods?%s", cases[i].query);
        j = get_json(px.url, path);
        items = cJSON_GetObjectItemCaseSensitive(j, "items");
        cr_expect_eq(cJSON_GetArraySize(items), cases[i].items, "%s: %d items", cases[i].query,
                     cJSON_GetArraySize(items));
        cJSON_Delete(j);
    }
    stop_both(&px, &sim);
}

/* Issue 3 "Bad input": an oversized body is 413, an over-long URL 414/431/400; the proxy
 * keeps serving. */
Test(proxy, oversized_body_and_url_rejected, .timeout = 180)
{
    struct srv sim, px;
    struct http_resp r;
    size_t n, body_size = 4u << 20, url_size = 256u << 10;
    char *body = malloc(body_size + 256);
    char *url = malloc(url_size + 512);
    uint64_t before;
    int rc;

    cr_assert(body && url);
    sim_up(&sim, ARGS("--objects", "0", "--churn", "0"));
    proxy_up(&px, sim.url, ARGS("--resources", "configmaps"));
    api_make_ns(px.url, "big");
    before = sim_stat(&sim, "revision");

    n = (size_t)snprintf(body, 256,
                         "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                         "{\"name\":\"huge\"},\"data\":{\"k\":\"");
    memset(body + n, 'z', body_size);
    snprintf(body + n + body_size, 16, "\"}}");
    req(px.url, "POST", "/api/v1/namespaces/big/configmaps", "application/json", body, &r);
    cr_assert_eq(r.code, 413, "4 MiB body with --max-body 3Mi: HTTP %ld %.300s", r.code, r.body);
    http_resp_free(&r);
    cr_assert_eq(sim_stat(&sim, "revision"), before, "nothing was written upstream");

    n = (size_t)snprintf(url, 512, "%s/api/v1/namespaces/big/configmaps?labelSelector=a%%3D",
                         px.url);
    memset(url + n, 'x', url_size);
    url[n + url_size] = '\0';
    rc = http_do("GET", url, NULL, NULL, NULL, REQ_MS, &r);
    cr_assert_eq(rc, 0, "over-long URL: the proxy must answer (%d)", rc);
    cr_assert(r.code == 414 || r.code == 431 || r.code == 400, "over-long URL: HTTP %ld", r.code);
    http_resp_free(&r);

    /* A write of normal size through the proxy still works. */
    cr_assert_gt(api_cm_create(px.url, "big", "small", NULL, "ok", NULL), before);
    free(body);
    free(url);
    stop_both(&px, &sim);
}

/* Issue 3 / SEMANTICS 3.5: an upstream that refuses connections: not ready, still up, and
 * cached requests get the 429 "storage is (re)initializing". */
Test(proxy, refused_upstream_not_ready_429, .timeout = 180)
{
    struct srv px;
    struct http_resp r;

    srv_spawn(&px, "proxy", ARGS("--upstream", "http://127.0.0.1:1", "--resources", "pods"), NULL);
    for (int i = 0; i < 10; i++) {
        cr_assert_eq(get_code(px.url, "/readyz"), 503, "readyz while upstream refuses");
        cr_assert_eq(get_code(px.url, "/healthz"), 200, "the process is up");
        nap(200);
    }
    cr_assert_eq(proc_kill(px.p, 0), 0, "the proxy is still running");
    get(px.url, "/api/v1/pods?resourceVersion=0", &r);
    expect_exact(&r, 429, NOT_READY_BODY);
    api_expect_header(&r, "Retry-After", "1");
    http_resp_free(&r);
    get(px.url, "/api/v1/namespaces/default/pods?watch=1", &r);
    expect_exact(&r, 429, NOT_READY_BODY);
    api_expect_header(&r, "Retry-After", "1");
    http_resp_free(&r);
    get(px.url, "/api/v1/pods?labelSelector=a%3Db&limit=5&resourceVersion=0", &r);
    expect_exact(&r, 429, NOT_READY_BODY);
    http_resp_free(&r);
    srv_stop(&px, "kwp proxy");
}

/* ready.go starts a cache Pending at creation, and util.go's Retry-After grows with the time
 * since that state change: int(min(30, max(1, e^(0.06 t)))) is 2 from t = 11.55 s on, also
 * for a cache that was never ready. */
Test(proxy, never_ready_retry_after_counts_from_creation, .timeout = 180)
{
    struct srv px;
    struct http_resp r;
    char ra[32];
    cJSON *j;
    long secs;
    bool up;

    srv_spawn(&px, "proxy", ARGS("--upstream", "http://127.0.0.1:1", "--resources", "pods"), NULL);
    WAIT_FOR(up, get_code(px.url, "/healthz") == 200, READY_MS);
    cr_assert(up, "the proxy answers");
    nap(12500); /* the pods cache exists since before /healthz answered */
    get(px.url, "/api/v1/namespaces/default/pods?watch=1", &r);
    cr_assert_eq(r.code, 429, "HTTP %ld: %s", r.code, r.body);
    cr_assert(http_resp_header(&r, "Retry-After", ra, sizeof(ra)), "a Retry-After header");
    secs = strtol(ra, NULL, 10);
    cr_assert(secs >= 2 && secs <= 30, "Retry-After %s after 12.5 s unready, expected >= 2", ra);
    j = json_body(&r);
    cr_assert_eq(json_at(j, "details.retryAfterSeconds")->valueint, (int)secs, "%s", r.body);
    cJSON_Delete(j);
    http_resp_free(&r);
    srv_stop(&px, "kwp proxy");
}

/* Issue 3: an upstream that hangs from the start (frozen sim): not ready, cached requests
 * get the 429 at once, and SIGTERM still exits 0 with an upstream request in flight. */
Test(proxy, hung_upstream_at_start_not_ready_429, .timeout = 180)
{
    struct srv sim, px;
    struct http_resp r;

    const char *argv[10] = {proc_kwp_bin(), "proxy",       "--listen", "127.0.0.1:0", "--upstream",
                            NULL,           "--resources", "pods",     NULL};

    sim_up(&sim, ARGS("--objects", "3", "--churn", "0"));
    cr_assert_eq(proc_kill(sim.p, SIGSTOP), 0);
    argv[5] = sim.url;
    memset(&px, 0, sizeof(px));
    px.p = proc_spawn(argv, px.url, sizeof(px.url));
    if (px.p == NULL) {
        proc_kill(sim.p, SIGCONT);
    }
    cr_assert_not_null(px.p,
                       "the proxy did not accept connections within %d ms while its "
                       "upstream hangs (it must serve /readyz 503 and the 429 meanwhile)",
                       PROC_READY_TIMEOUT_MS);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(get_code(px.url, "/readyz"), 503, "readyz while upstream hangs");
        nap(200);
    }
    get(px.url, "/api/v1/pods?resourceVersion=0", &r);
    expect_exact(&r, 429, NOT_READY_BODY);
    http_resp_free(&r);
    srv_stop(&px, "kwp proxy");
    cr_assert_eq(proc_kill(sim.p, SIGCONT), 0);
    srv_stop(&sim, "kwp sim");
}

/* Issue 3: an upstream that goes away after the sync: rv=0 still served, /readyz 503. */
Test(proxy, upstream_gone_after_sync_serves_rv0_not_ready, .timeout = 180)
{
    struct srv sim, px;
    struct relay *rl;
    struct http_resp r, s;
    cJSON *pj, *sj;
    bool ok;

    sim_up(&sim, ARGS("--objects", "8", "--namespaces", "1", "--churn", "0"));
    rl = relay_new(sim.url);
    proxy_up(&px, relay_url(rl), ARGS("--resources", "pods"));
    get(sim.url, "/api/v1/pods?resourceVersion=0", &s);
    relay_refuse(rl, true);
    relay_cut(rl);
    WAIT_FOR(ok, get_code(px.url, "/readyz") == 503, 20000);
    cr_assert(ok, "/readyz 503 once the upstream is gone");
    get(px.url, "/api/v1/pods?resourceVersion=0", &r);
    cr_assert_eq(r.code, 200, "rv=0 from the cache while upstream is gone: HTTP %ld %s", r.code,
                 r.body);
    pj = json_body(&r);
    sj = json_body(&s);
    expect_same_items(pj, sj, "rv=0 LIST with the upstream gone");
    cJSON_Delete(pj);
    cJSON_Delete(sj);
    http_resp_free(&r);
    http_resp_free(&s);

    /* Upstream back: ready again. */
    relay_refuse(rl, false);
    srv_wait_ready(&px, READY_MS);
    srv_stop(&px, "kwp proxy");
    relay_free(rl);
    srv_stop(&sim, "kwp sim");
}

/* Issue 3 (nice to have): an upstream that hangs after the sync (frozen sim): rv=0 still
 * served, and the proxy notices and reports not-ready. */
Test(proxy, frozen_upstream_after_sync_serves_rv0_not_ready, .timeout = 180)
{
    struct srv sim, px;
    struct http_resp r;
    bool ok;

    sim_up(&sim, ARGS("--objects", "8", "--namespaces", "1", "--churn", "0", "--bookmark-interval",
                      "1s"));
    proxy_up(&px, sim.url, ARGS("--resources", "pods"));
    cr_assert_eq(proc_kill(sim.p, SIGSTOP), 0);
    get(px.url, "/api/v1/pods?resourceVersion=0", &r);
    cr_assert_eq(r.code, 200, "rv=0 while the upstream hangs: HTTP %ld", r.code);
    http_resp_free(&r);
    WAIT_FOR(ok, get_code(px.url, "/readyz") == 503, 30000);
    cr_assert_eq(proc_kill(sim.p, SIGCONT), 0);
    cr_assert(ok, "/readyz still 200 after 30 s with the upstream frozen (SIGSTOP)");
    stop_both(&px, &sim);
}

/* Issue 3: SIGTERM with open watches: every watch ends cleanly and the exit status is 0
 * within 5 s. */
Test(proxy, sigterm_with_open_watches_exits_0, .timeout = 180)
{
    enum { N = 12 };
    struct srv sim, px;
    struct watch *w[N];
    uint64_t t0, dt;
    int st;

    sim_up(&sim, ARGS("--objects", "20", "--namespaces", "2", "--churn", "20"));
    proxy_up(&px, sim.url, ARGS("--resources", "pods,configmaps"));
    for (int i = 0; i < N; i++) {
        static const char *const paths[] = {
            "/api/v1/pods?watch=1&resourceVersion=0",
            "/api/v1/pods?watch=1&allowWatchBookmarks=true",
            "/api/v1/namespaces/default/configmaps?watch=1",
            "/api/v1/namespaces/ns-1/pods?watch=1&labelSelector=app%3Dapi",
        };

        w[i] = api_watch(px.url, paths[i % 4], 200);
    }
    wait_metric(&px, "kwp_watches_open", "pods", 9, REQ_MS);
    t0 = http_now_ms();
    st = proc_stop(px.p);
    dt = http_now_ms() - t0;
    px.p = NULL;
    cr_assert_eq(st, 0, "exit status %d after SIGTERM with %d watches open", st, N);
    cr_assert_lt(dt, 5000u, "exited after %" PRIu64 " ms", dt);
    for (int i = 0; i < N; i++) {
        expect_clean_end(w[i], 5000, "a watch at shutdown");
        expect_no_error_event(w[i], "a watch at shutdown");
        watch_close(w[i]);
    }
    srv_stop(&sim, "kwp sim");
}
