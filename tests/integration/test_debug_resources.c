/*
 * test_debug_resources.c - GET /debug/resources on real binaries on port 0 (README,
 * "/debug/resources"): on kwp sim after N writes (newest == rv, events, objects), an open
 * watch counted; the same through kwp proxy (its cache's view, server "proxy"); POST gets
 * 405; and behind --auth delegated (proxy) and the token file (sim), the RBAC rule on the
 * non-resource URL decides: 401 without credentials, 403 without the rule, 200 with it.
 * Every wait is a bounded poll.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "tests/support/api.h"
#include "tests/support/http.h"
#include "tests/support/json.h"
#include "tests/support/nap.h"
#include "tests/support/srv.h"

#define T_TIMEOUT 120 /* one value per file (Criterion leaks under ASan otherwise) */
#define N_WRITES 5
#define POLL_MS 10000

#define FORBID_DEBUGRES_BOB                                                                        \
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","           \
    "\"message\":\"forbidden: User \\\"bob\\\" cannot get path \\\"/debug/resources\\\"\","        \
    "\"reason\":\"Forbidden\",\"details\":{},\"code\":403}"

/* GET /debug/resources with <hdrs> (may be NULL); asserts 200 and JSON; the caller frees. */
static cJSON *debugres(const char *base, const char *const *hdrs)
{
    struct http_resp r;
    cJSON *doc;

    api_req(base, "GET", "/debug/resources", NULL, NULL, hdrs, &r);
    cr_assert_eq(r.code, 200, "HTTP %ld: %s", r.code, r.body);
    api_expect_header(&r, "Content-Type", "application/json");
    doc = json_body(&r);
    http_resp_free(&r);
    cr_assert_str_eq(json_txt(doc, "kind"), "DebugResources");
    return doc;
}

/* The entry of resource <name> in <doc>; asserts it is there. Lent from <doc>. */
static const cJSON *entry(const cJSON *doc, const char *name)
{
    const cJSON *list = json_at(doc, "resources");
    const cJSON *it;

    cr_assert(cJSON_IsArray(list), "no resources array");
    cJSON_ArrayForEach(it, list)
    {
        if (strcmp(json_txt(it, "resource"), name) == 0) {
            return it;
        }
    }
    cr_assert_fail("no resource %s", name);
    return NULL;
}

/* Polls <base> until resource <name> reports <n> watchers and resourceVersion >= <rv>. */
static cJSON *wait_for(const char *base, const char *name, uint64_t n, uint64_t rv)
{
    for (int i = 0;; i++) {
        cJSON *doc = debugres(base, NULL);
        const cJSON *e = entry(doc, name);

        if (json_num(e, "watchers.count") == n && json_num(e, "resourceVersion") >= rv) {
            return doc;
        }
        cr_assert_lt(i, POLL_MS / 50, "%s: watchers %llu (want %llu), rv %llu (want %llu)", name,
                     (unsigned long long)json_num(e, "watchers.count"), (unsigned long long)n,
                     (unsigned long long)json_num(e, "resourceVersion"), (unsigned long long)rv);
        cJSON_Delete(doc);
        nap(50);
    }
}

/* What configmaps held before the writes (the simulator may hold some already). */
struct base {
    uint64_t objects, events;
};

/* Makes namespace <ns> on <sim>, waits until <base> has seen it, and returns the counts of
 * configmaps there before any write of the test. */
static struct base before(const char *sim, const char *base, const char *ns)
{
    struct base b;
    cJSON *doc;

    const cJSON *newest;
    uint64_t want = 0;

    api_make_ns(sim, ns);
    /* the proxy's cache moves only with configmap events: wait for the newest there is */
    doc = debugres(sim, NULL);
    newest = json_at(entry(doc, "configmaps"), "history.newest");
    if (cJSON_IsNumber(newest)) {
        want = json_num(entry(doc, "configmaps"), "history.newest");
    }
    cJSON_Delete(doc);
    doc = wait_for(base, "configmaps", 0, want);
    b.objects = json_num(entry(doc, "configmaps"), "objects");
    b.events = json_num(entry(doc, "configmaps"), "history.events");
    cJSON_Delete(doc);
    return b;
}

/* Creates N_WRITES ConfigMaps in <ns> on <sim>; returns the last one's rv. */
static uint64_t write_cms(const char *sim, const char *ns)
{
    uint64_t rv = 0;
    char name[32];

    for (int i = 0; i < N_WRITES; i++) {
        snprintf(name, sizeof(name), "cm%d", i);
        rv = api_cm_create(sim, ns, name, NULL, NULL, NULL);
    }
    return rv;
}

/* The checks both servers must pass for configmaps after write_cms. */
static void expect_configmaps(const cJSON *doc, const char *server, const struct base *b,
                              uint64_t rv, uint64_t watchers)
{
    const cJSON *e = entry(doc, "configmaps");
    const cJSON *items = json_at(e, "watchers.items");

    cr_assert_str_eq(json_txt(doc, "server"), server);
    cr_assert_not_null(json_str(doc, "time"));
    cr_assert_str_eq(json_txt(e, "group"), "");
    cr_assert_str_eq(json_txt(e, "version"), "v1");
    cr_assert(cJSON_IsTrue(json_at(e, "ready")));
    cr_assert_eq(json_num(e, "resourceVersion"), rv);
    cr_assert_eq(json_num(e, "objects"), b->objects + N_WRITES);
    cr_assert_gt(json_num(e, "objectBytes"), 0);
    cr_assert_eq(json_num(e, "history.newest"), rv, "the last write is the newest event");
    cr_assert_eq(json_num(e, "history.events"), b->events + N_WRITES);
    cr_assert_lt(json_num(e, "history.oldest"), rv);
    cr_assert_geq(json_num(e, "history.capacity"), b->events + N_WRITES);
    cr_assert_lt(json_num(e, "history.boundary"), json_num(e, "history.oldest"));
    cr_assert(cJSON_IsNumber(json_at(e, "history.secondsCovered")));
    cr_assert_eq(json_num(e, "tooOld"), 0);
    cr_assert_eq(json_num(e, "tooLarge"), 0);
    cr_assert(cJSON_IsNumber(json_at(e, "relists")));
    cr_assert(cJSON_IsNumber(json_at(e, "relistsKept")));
    cr_assert_eq(json_num(e, "watchers.count"), watchers);
    cr_assert(cJSON_IsArray(items));
    cr_assert_eq((uint64_t)cJSON_GetArraySize(items), watchers);
    cr_assert(cJSON_IsFalse(json_at(e, "watchers.truncated")));
    cr_assert(cJSON_IsNumber(json_at(e, "watchers.maxLagEvents")));
    cr_assert(cJSON_IsNumber(json_at(e, "watchers.maxLagSeconds")));
}

static void expect_405(const char *base)
{
    struct http_resp r;

    api_req(base, "POST", "/debug/resources", "application/json", "{}", NULL, &r);
    cr_assert_eq(r.code, 405, "HTTP %ld: %s", r.code, r.body);
    cr_assert(strstr(r.body, "\"reason\":\"MethodNotAllowed\"") != NULL, "%s", r.body);
    http_resp_free(&r);
}

Test(debug_resources, sim_reports_history_and_an_open_watch, .timeout = T_TIMEOUT)
{
    struct srv s;
    struct watch *w;
    struct base b;
    cJSON *doc;
    uint64_t rv;
    char path[128];

    srv_spawn(&s, "sim", ARGS("--objects", "0", "--churn", "0"), NULL);
    b = before(s.url, s.url, "dr");
    rv = write_cms(s.url, "dr");
    doc = wait_for(s.url, "configmaps", 0, rv);
    expect_configmaps(doc, "sim", &b, rv, 0);
    cJSON_Delete(doc);
    /* a watch from the first write: caught up once it has read its 4 events */
    snprintf(path, sizeof(path), "/api/v1/configmaps?watch=1&resourceVersion=%llu",
             (unsigned long long)(rv - N_WRITES + 1));
    w = api_watch(s.url, path, 200);
    for (size_t i = 0; i < N_WRITES - 1; i++) {
        (void)api_wline(w, i);
    }
    doc = wait_for(s.url, "configmaps", 1, rv);
    expect_configmaps(doc, "sim", &b, rv, 1);
    cJSON_Delete(doc);
    watch_close(w);
    doc = wait_for(s.url, "configmaps", 0, rv);
    cJSON_Delete(doc);
    expect_405(s.url);
    srv_stop(&s, "kwp sim");
}

Test(debug_resources, proxy_reports_its_cache_and_its_watches, .timeout = T_TIMEOUT)
{
    struct srv s, px;
    struct watch *w;
    struct base b;
    cJSON *doc;
    uint64_t rv;

    srv_spawn(&s, "sim", ARGS("--objects", "0", "--churn", "0"), NULL);
    srv_spawn(&px, "proxy", ARGS("--upstream", s.url, "--resources", "configmaps"), NULL);
    srv_wait_ready(&px, 20000);
    b = before(s.url, px.url, "dr");
    rv = write_cms(s.url, "dr");
    doc = wait_for(px.url, "configmaps", 0, rv);
    expect_configmaps(doc, "proxy", &b, rv, 0);
    cr_assert_eq(cJSON_GetArraySize(json_at(doc, "resources")), 1, "only what it caches");
    cr_assert_geq(json_num(entry(doc, "configmaps"), "relists"), 1, "its first list");
    cJSON_Delete(doc);
    /* the sim sees the proxy's own upstream watch */
    doc = wait_for(s.url, "configmaps", 1, rv);
    cr_assert_str_eq(json_txt(doc, "server"), "sim");
    cJSON_Delete(doc);
    w = api_watch(px.url, "/api/v1/configmaps?watch=1", 200);
    doc = wait_for(px.url, "configmaps", 1, rv);
    expect_configmaps(doc, "proxy", &b, rv, 1);
    cr_assert_eq(json_num(entry(doc, "configmaps"), "watchers.maxLagEvents"), 0, "idle");
    cJSON_Delete(doc);
    watch_close(w);
    doc = wait_for(px.url, "configmaps", 0, rv);
    cJSON_Delete(doc);
    expect_405(px.url);
    srv_stop(&px, "kwp proxy");
    srv_stop(&s, "kwp sim");
}

static void write_file(const char *dir, const char *name, const char *text, char *out, size_t cap)
{
    FILE *f;

    snprintf(out, cap, "%s/%s", dir, name);
    f = fopen(out, "w");
    cr_assert_not_null(f, "%s: %s", out, strerror(errno));
    cr_assert_geq(fputs(text, f), 0);
    cr_assert_eq(fclose(f), 0);
}

/* GET /debug/resources on <base> as the holder of <tok> (NULL: none); asserts <code> (and the
 * body when <body> is not NULL, ignoring one trailing newline). */
static void expect_as(const char *base, const char *tok, long code, const char *body)
{
    struct http_resp r;
    char auth[128];
    const char *hdrs[2] = {NULL, NULL};

    if (tok != NULL) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", tok);
        hdrs[0] = auth;
    }
    api_req(base, "GET", "/debug/resources", NULL, NULL, hdrs, &r);
    cr_assert_eq(r.code, code, "%s as %s: HTTP %ld, want %ld: %s", base, tok ? tok : "nobody",
                 r.code, code, r.body);
    if (body != NULL) {
        size_t n = r.body_len > 0 && r.body[r.body_len - 1] == '\n' ? r.body_len - 1 : r.body_len;

        cr_assert(n == strlen(body) && memcmp(r.body, body, n) == 0, "got %s", r.body);
    }
    if (code == 200) {
        cJSON *doc = json_body(&r);

        cr_assert_str_eq(json_txt(doc, "kind"), "DebugResources");
        cJSON_Delete(doc);
    }
    http_resp_free(&r);
}

Test(debug_resources, rbac_on_the_non_resource_url_decides, .timeout = T_TIMEOUT)
{
    struct srv s, px;
    char dir[] = "/tmp/kwp-debugres-XXXXXX", tokens[64], rules[64];

    cr_assert_not_null(mkdtemp(dir));
    write_file(dir, "tokens.csv", "tok-alice,alice,42\ntok-bob,bob,43\ntok-proxy,kwp-proxy,99\n",
               tokens, sizeof(tokens));
    write_file(dir, "rules",
               "allow users=alice verbs=get nonResourceURLs=/debug/resources\n"
               "allow users=kwp-proxy verbs=get nonResourceURLs=/api*,/version\n"
               "allow users=kwp-proxy verbs=get,list,watch apiGroups=\"\" resources=pods\n"
               "allow users=kwp-proxy verbs=create "
               "apiGroups=authentication.k8s.io,authorization.k8s.io "
               "resources=tokenreviews,subjectaccessreviews\n",
               rules, sizeof(rules));
    srv_spawn(&s, "sim",
              ARGS("--objects", "0", "--churn", "0", "--token-auth-file", tokens,
                   "--authorization-rules", rules),
              NULL);
    srv_spawn(&px, "proxy",
              ARGS("--upstream", s.url, "--token", "tok-proxy", "--resources", "pods", "--auth",
                   "delegated"),
              NULL);
    srv_wait_ready(&px, 20000);
    for (int k = 0; k < 2; k++) {
        const char *base = k == 0 ? px.url : s.url;

        expect_as(base, NULL, 401, NULL);
        expect_as(base, "tok-bob", 403, FORBID_DEBUGRES_BOB);
        expect_as(base, "tok-alice", 200, NULL);
    }
    srv_stop(&px, "kwp proxy");
    srv_stop(&s, "kwp sim");
    unlink(tokens);
    unlink(rules);
    rmdir(dir);
}
