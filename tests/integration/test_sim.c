/*
 * test_sim.c - black-box tests of `kwp sim` over HTTP, written to SEMANTICS.md.
 *
 * Each Test starts its own `kwp sim --listen 127.0.0.1:0 --objects 0 --churn 0 ...` through
 * proc_spawn (readiness = the "listening on" line), talks to it with libcurl and stops it
 * with proc_stop, asserting exit status 0. Objects live in a namespace private to the test.
 * Status bodies are compared byte for byte where SEMANTICS gives them (one trailing "\n",
 * which Go's encoder writes, is ignored there and checked once in its own test); where a
 * value varies (RVs, tokens) it is read from the response, checked, and spliced into the
 * expected bytes. Timing assertions have deadlines, never sleeps.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "tests/support/api.h"
#include "tests/support/http.h"
#include "tests/support/json.h"
#include "tests/support/nap.h"
#include "tests/support/proc.h"
#include "tests/support/srv.h"

/* One timeout for every Test: Criterion 2.4.1's runner leaks (LeakSanitizer) when the tests
 * of one binary have different .timeout values. */
#define SIM_TEST_TIMEOUT_S 90

/* ---- the simulator under test ------------------------------------------------------ */

/* Starts kwp sim with the deterministic defaults plus <extra> (NULL-terminated, may be NULL). */
static void sim_start(struct srv *s, const char *const *extra)
{
    srv_spawn(s, "sim", ARGS("--objects", "0", "--churn", "0"), extra);
}

/* Starts kwp sim with exactly <argv_tail> after "--listen 127.0.0.1:0" (no defaults). */
static void sim_start_raw(struct srv *s, const char *const *argv_tail)
{
    srv_spawn(s, "sim", argv_tail, NULL);
}

static void sim_stop(struct srv *s)
{
    srv_stop(s, "kwp sim");
}

/* ---- requests ------------------------------------------------------------------------ */

/* Performs a request and asserts that a response arrived. */
static void req(const struct srv *s, const char *method, const char *path, const char *ctype,
                const char *body, struct http_resp *r)
{
    api_req(s->url, method, path, ctype, body, NULL, r);
}

static void get(const struct srv *s, const char *path, struct http_resp *r)
{
    req(s, "GET", path, NULL, NULL, r);
}

/* Body without the one trailing newline Go's encoder writes. */
static size_t body_len_trimmed(const struct http_resp *r)
{
    size_t n = r->body_len;

    if (n > 0 && r->body[n - 1] == '\n') {
        n--;
    }
    return n;
}

static void expect_body(const struct http_resp *r, const char *expected)
{
    size_t n = body_len_trimmed(r);

    cr_assert(n == strlen(expected) && memcmp(r->body, expected, n) == 0,
              "body mismatch\nexpected: %s\n     got: %.*s", expected, (int)n, r->body);
}

/* Asserts the exact status code and body. */
static void expect_status(const struct http_resp *r, long code, const char *expected)
{
    cr_assert_eq(r->code, code, "HTTP %ld, expected %ld; body: %s", r->code, code, r->body);
    expect_body(r, expected);
}

/* ---- JSON ---------------------------------------------------------------------------- */

static int jint(const cJSON *o, const char *path, int dflt)
{
    const cJSON *v = json_at(o, path);

    return cJSON_IsNumber(v) ? v->valueint : dflt;
}

/* Asserts the list's items have exactly the names in <names> (NULL-terminated), in order. */
static void expect_item_names(const cJSON *list, const char *const *names)
{
    const cJSON *items = json_at(list, "items");
    size_t i = 0;
    const cJSON *it;

    cr_assert(cJSON_IsArray(items), "no items array");
    cJSON_ArrayForEach(it, items)
    {
        const char *nm = json_str(it, "metadata.name");

        cr_assert_not_null(names[i], "extra item %s at %zu", nm ? nm : "?", i);
        cr_assert_str_eq(nm ? nm : "", names[i], "item %zu: expected %s, got %s", i, names[i],
                         nm ? nm : "(none)");
        i++;
    }
    cr_assert_null(names[i], "missing item %s at %zu", names[i], i);
}

/* ---- base64url (continue tokens) ----------------------------------------------------- */

static int b64url_val(int c)
{
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    if (c == '-') {
        return 62;
    }
    if (c == '_') {
        return 63;
    }
    return -1;
}

/* Decodes RawURLEncoding (no padding) into a NUL-terminated buffer; asserts validity. */
static size_t b64url_decode(const char *in, char *out, size_t cap)
{
    uint32_t acc = 0;
    int bits = 0;
    size_t n = 0;
    const char *p;

    for (p = in; *p; p++) {
        int v = b64url_val((unsigned char)*p);

        cr_assert(v >= 0, "continue token is not RawURL base64 (char '%c'): %s", *p, in);
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            cr_assert(n + 1 < cap, "token too long");
            out[n++] = (char)((acc >> bits) & 0xff);
        }
    }
    out[n] = '\0';
    return n;
}

struct token {
    char v[64];
    int64_t rv;
    char start[512]; /* with the trailing \0 removed and one leading "/" removed */
    bool had_nul;
};

static void token_decode(const char *tok, struct token *t)
{
    char raw[1024];
    size_t n = b64url_decode(tok, raw, sizeof(raw));
    cJSON *j = json_parse(raw, n);
    const char *v = json_str(j, "v");
    const cJSON *rv = json_at(j, "rv");
    const char *start = json_str(j, "start");
    size_t sl;

    memset(t, 0, sizeof(*t));
    cr_assert_not_null(v, "token without v: %s", raw);
    cr_assert(cJSON_IsNumber(rv), "token without numeric rv: %s", raw);
    cr_assert_not_null(start, "token without start: %s", raw);
    snprintf(t->v, sizeof(t->v), "%s", v);
    t->rv = (int64_t)rv->valuedouble;
    sl = strlen(start); /* cJSON stops at the embedded \0: check the raw text instead */
    t->had_nul = strstr(raw, "\\u0000\"") != NULL;
    if (start[0] == '/') {
        start++;
        sl--;
    }
    cr_assert(sl < sizeof(t->start), "start too long");
    memcpy(t->start, start, sl);
    t->start[sl] = '\0';
    cJSON_Delete(j);
}

/* ---- objects ------------------------------------------------------------------------- */

static void compact_now(const struct srv *s)
{
    struct http_resp r;

    req(s, "POST", "/_sim/compact", NULL, NULL, &r);
    cr_assert(r.code >= 200 && r.code < 300, "POST /_sim/compact: HTTP %ld %s", r.code, r.body);
    http_resp_free(&r);
}

/* ---- watch events -------------------------------------------------------------------- */

/* Asserts line <i> is a <type> event for object <name> at <rv>, with kind/apiVersion. */
static void expect_event(struct watch *w, size_t i, const char *type, const char *name, uint64_t rv,
                         const char *kind)
{
    struct api_ev e;

    api_expect_ev(w, i, type, name, rv);
    api_ev_parse(api_wline(w, i), &e);
    cr_assert_str_eq(json_txt(e.obj, "kind"), kind, "line %zu: watch objects carry kind %s: %s", i,
                     kind, watch_line(w, i, NULL));
    cr_assert_str_eq(json_txt(e.obj, "apiVersion"), "v1",
                     "line %zu: watch objects carry apiVersion: %s", i, watch_line(w, i, NULL));
    api_ev_free(&e);
}

/* Asserts lines first.. are ADDED events for <names> at <rvs> (an initial-events block). */
static void expect_added(struct watch *w, size_t first, const char *const *names,
                         const uint64_t *rvs)
{
    size_t i;

    for (i = 0; names[i]; i++) {
        expect_event(w, first + i, "ADDED", names[i], rvs[i], "ConfigMap");
    }
}

static void expect_count(struct watch *w, size_t n)
{
    size_t have = watch_line_count(w);

    cr_assert_eq(have, n, "expected exactly %zu lines, have %zu; line %zu: %s", n, have,
                 have > n ? n : 0, have > n ? watch_line(w, n, NULL) : "");
}

#define NOT_FOUND_FMT                                                                              \
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","           \
    "\"message\":\"%s \\\"%s\\\" not found\",\"reason\":\"NotFound\","                             \
    "\"details\":{\"name\":\"%s\",\"kind\":\"%s\"},\"code\":404}"

/* ====================================================================================== */
/* lifecycle and discovery                                                                */
/* ====================================================================================== */

Test(sim, starts_on_port_0_and_exits_0_on_sigterm, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct http_resp r;
    cJSON *j;

    sim_start(&s, NULL);
    cr_assert(strncmp(s.url, "http://127.0.0.1:", 17) == 0, "url %s", s.url);
    cr_assert_neq(strcmp(s.url, "http://127.0.0.1:0"), 0, "printed port 0, not the bound port");
    get(&s, "/version", &r);
    cr_assert_eq(r.code, 200);
    j = json_body(&r);
    cr_assert_not_null(json_str(j, "gitVersion"), "/version has gitVersion: %s", r.body);
    cr_assert_not_null(json_str(j, "major"));
    cr_assert_not_null(json_str(j, "minor"));
    cJSON_Delete(j);
    http_resp_free(&r);
    sim_stop(&s);
}

static bool array_has_name(const cJSON *arr, const char *key, const char *val)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, arr)
    {
        const char *v = cJSON_IsString(it) ? it->valuestring : json_str(it, key);

        if (v && strcmp(v, val) == 0) {
            return true;
        }
    }
    return false;
}

Test(sim, discovery_documents, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct http_resp r;
    cJSON *j;
    const cJSON *it;
    bool pods_ok = false;

    sim_start(&s, NULL);
    get(&s, "/api", &r);
    cr_assert_eq(r.code, 200, "/api: %ld", r.code);
    j = json_body(&r);
    cr_assert_str_eq(json_txt(j, "kind"), "APIVersions");
    cr_assert(array_has_name(json_at(j, "versions"), "", "v1"), "/api lists v1: %s", r.body);
    cJSON_Delete(j);
    http_resp_free(&r);

    get(&s, "/api/v1", &r);
    cr_assert_eq(r.code, 200, "/api/v1: %ld", r.code);
    j = json_body(&r);
    cr_assert_str_eq(json_txt(j, "kind"), "APIResourceList");
    cr_assert_str_eq(json_txt(j, "groupVersion"), "v1");
    cJSON_ArrayForEach(it, json_at(j, "resources"))
    {
        if (json_str(it, "name") && strcmp(json_str(it, "name"), "pods") == 0) {
            cr_assert_str_eq(json_txt(it, "kind"), "Pod");
            cr_assert(cJSON_IsTrue(json_at(it, "namespaced")));
            cr_assert(array_has_name(json_at(it, "verbs"), "", "watch"), "pods verbs: watch");
            cr_assert(array_has_name(json_at(it, "verbs"), "", "list"), "pods verbs: list");
            pods_ok = true;
        }
    }
    cr_assert(pods_ok, "/api/v1 lists pods: %s", r.body);
    cr_assert(array_has_name(json_at(j, "resources"), "name", "configmaps"));
    cr_assert(array_has_name(json_at(j, "resources"), "name", "namespaces"));
    cr_assert(array_has_name(json_at(j, "resources"), "name", "nodes"));
    cJSON_Delete(j);
    http_resp_free(&r);

    get(&s, "/apis", &r);
    cr_assert_eq(r.code, 200, "/apis: %ld", r.code);
    j = json_body(&r);
    cr_assert_str_eq(json_txt(j, "kind"), "APIGroupList");
    cr_assert(array_has_name(json_at(j, "groups"), "name", "apps"), "/apis lists apps: %s", r.body);
    cJSON_Delete(j);
    http_resp_free(&r);

    get(&s, "/apis/apps/v1", &r);
    cr_assert_eq(r.code, 200, "/apis/apps/v1: %ld", r.code);
    j = json_body(&r);
    cr_assert_str_eq(json_txt(j, "groupVersion"), "apps/v1");
    cr_assert(array_has_name(json_at(j, "resources"), "name", "deployments"));
    cr_assert(array_has_name(json_at(j, "resources"), "name", "replicasets"));
    cJSON_Delete(j);
    http_resp_free(&r);
    sim_stop(&s);
}

/* ====================================================================================== */
/* writes                                                                                 */
/* ====================================================================================== */

Test(sim, create_get_update_patch_delete_configmap, .timeout = SIM_TEST_TIMEOUT_S)
{
    static const char *const conflict =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"Operation cannot be fulfilled on configmaps \\\"c1\\\": the object has "
        "been modified; please apply your changes to the latest version and try again\","
        "\"reason\":\"Conflict\",\"details\":{\"name\":\"c1\",\"kind\":\"configmaps\"},"
        "\"code\":409}";
    static const char *const exists =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"configmaps \\\"c1\\\" already exists\",\"reason\":\"AlreadyExists\","
        "\"details\":{\"name\":\"c1\",\"kind\":\"configmaps\"},\"code\":409}";
    const char *path = "/api/v1/namespaces/crud/configmaps/c1";
    struct srv s;
    struct http_resp r;
    cJSON *created = NULL;
    cJSON *j;
    char body[1024];
    char nf[512];
    char ctype[128];
    uint64_t rv1, rv2, rv3, rv4, rvdel;
    const char *ts;

    sim_start(&s, NULL);
    api_make_ns(s.url, "crud");
    rv1 = api_cm_create(s.url, "crud", "c1", "{\"app\":\"x\"}", "v1", &created);
    cr_assert_gt(rv1, 0);
    cr_assert_str_eq(json_txt(created, "kind"), "ConfigMap");
    cr_assert_str_eq(json_txt(created, "apiVersion"), "v1");
    cr_assert_str_eq(json_txt(created, "metadata.name"), "c1");
    cr_assert_str_eq(json_txt(created, "metadata.namespace"), "crud");
    cr_assert_str_eq(json_txt(created, "metadata.labels.app"), "x");
    cr_assert_str_eq(json_txt(created, "data.k"), "v1");
    cr_assert(json_str(created, "metadata.uid") && strlen(json_str(created, "metadata.uid")) > 0,
              "uid set");
    ts = json_str(created, "metadata.creationTimestamp");
    cr_assert(ts && strlen(ts) == 20 && ts[4] == '-' && ts[10] == 'T' && ts[19] == 'Z',
              "creationTimestamp RFC 3339 UTC seconds: %s", ts ? ts : "(none)");
    cr_assert_eq(rv1, api_sim_stat(s.url, "revision"), "create RV is the global revision");

    /* GET returns the stored object. */
    get(&s, path, &r);
    cr_assert_eq(r.code, 200);
    cr_assert(http_resp_header(&r, "Content-Type", ctype, sizeof(ctype)));
    cr_assert_str_eq(ctype, "application/json");
    j = json_body(&r);
    cr_assert(cJSON_Compare(j, created, true), "GET differs from create response\n%s\n%s", r.body,
              cJSON_PrintUnformatted(created));
    cJSON_Delete(j);
    http_resp_free(&r);

    /* Create again: 409 AlreadyExists. */
    req(&s, "POST", "/api/v1/namespaces/crud/configmaps", "application/json",
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c1\"}}", &r);
    expect_status(&r, 409, exists);
    http_resp_free(&r);

    /* PUT with the current RV. */
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c1\","
             "\"namespace\":\"crud\",\"resourceVersion\":\"%" PRIu64 "\",\"labels\":{\"app\":"
             "\"x\"}},\"data\":{\"k\":\"v2\"}}",
             rv1);
    req(&s, "PUT", path, "application/json", body, &r);
    rv2 = api_written_rv(&r, 200, "update", &j);
    cr_assert_gt(rv2, rv1);
    cr_assert_str_eq(json_txt(j, "data.k"), "v2");
    cr_assert_str_eq(json_txt(j, "metadata.uid"), json_str(created, "metadata.uid"), "uid kept");
    cr_assert_str_eq(json_txt(j, "metadata.creationTimestamp"),
                     json_str(created, "metadata.creationTimestamp"));
    cJSON_Delete(j);

    /* PUT with the stale RV: 409 Conflict, nothing written. */
    req(&s, "PUT", path, "application/json", body, &r);
    expect_status(&r, 409, conflict);
    http_resp_free(&r);
    cr_assert_eq(api_sim_stat(s.url, "revision"), rv2,
                 "a rejected update does not bump the revision");

    /* PATCH (merge): add a label and a key. */
    rv3 = api_cm_patch(s.url, "crud", "c1",
                       "{\"metadata\":{\"labels\":{\"tier\":\"db\"}},"
                       "\"data\":{\"k2\":\"z\"}}",
                       &j);
    cr_assert_gt(rv3, rv2);
    cr_assert_str_eq(json_txt(j, "metadata.labels.app"), "x");
    cr_assert_str_eq(json_txt(j, "metadata.labels.tier"), "db");
    cr_assert_str_eq(json_txt(j, "data.k"), "v2");
    cr_assert_str_eq(json_txt(j, "data.k2"), "z");
    cJSON_Delete(j);

    /* PATCH with null removes (RFC 7386). */
    rv4 = api_cm_patch(s.url, "crud", "c1", "{\"metadata\":{\"labels\":{\"tier\":null}}}", &j);
    cr_assert_gt(rv4, rv3);
    cr_assert_null(json_at(j, "metadata.labels.tier"), "tier removed: %s",
                   cJSON_PrintUnformatted(j));
    cJSON_Delete(j);

    /* A PATCH that changes nothing writes nothing (etcd3 GuaranteedUpdate): same RV, same
     * revision, the stored object answered. */
    req(&s, "PATCH", path, "application/merge-patch+json", "{\"data\":{\"k2\":\"z\"}}", &r);
    cr_assert_eq(api_written_rv(&r, 200, "no-op patch", &j), rv4, "a no-op patch keeps the RV");
    cJSON_Delete(j);
    cr_assert_eq(api_sim_stat(s.url, "revision"), rv4, "a no-op patch does not bump the revision");

    /* Strategic merge patch is accepted (treated as a merge patch). */
    req(&s, "PATCH", path, "application/strategic-merge-patch+json", "{\"data\":{\"k3\":\"s\"}}",
        &r);
    cr_assert_eq(r.code, 200, "strategic merge patch: %ld %s", r.code, r.body);
    http_resp_free(&r);

    /* DELETE of a kind without ReturnDeletedObject answers a Success Status naming the object
     * (genericregistry Store.finalizeDelete: details name, group, kind=resource, uid). */
    req(&s, "DELETE", path, NULL, NULL, &r);
    snprintf(body, sizeof(body),
             "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
             "\"Success\",\"details\":{\"name\":\"c1\",\"kind\":\"configmaps\",\"uid\":"
             "\"%s\"}}",
             json_txt(created, "metadata.uid"));
    expect_status(&r, 200, body);
    http_resp_free(&r);
    rvdel = api_sim_stat(s.url, "revision");
    cr_assert_gt(rvdel, rv4, "the delete is a new revision");

    snprintf(nf, sizeof(nf), NOT_FOUND_FMT, "configmaps", "c1", "c1", "configmaps");
    get(&s, path, &r);
    expect_status(&r, 404, nf);
    http_resp_free(&r);
    req(&s, "DELETE", path, NULL, NULL, &r);
    expect_status(&r, 404, nf);
    http_resp_free(&r);
    req(&s, "PATCH", path, "application/merge-patch+json", "{\"data\":{\"a\":\"b\"}}", &r);
    expect_status(&r, 404, nf);
    http_resp_free(&r);

    cJSON_Delete(created);
    sim_stop(&s);
}

Test(sim, cluster_scoped_namespaces_and_nodes, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct http_resp r;
    cJSON *j;
    char nf[512];

    sim_start(&s, NULL);
    req(&s, "POST", "/api/v1/namespaces", "application/json",
        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"it-ns1\"}}", &r);
    api_written_rv(&r, 201, "create namespace", &j);
    cr_assert_str_eq(json_txt(j, "kind"), "Namespace");
    cr_assert_null(json_at(j, "metadata.namespace"), "cluster-scoped: no metadata.namespace");
    cJSON_Delete(j);

    get(&s, "/api/v1/namespaces/it-ns1", &r);
    api_written_rv(&r, 200, "get namespace", &j);
    cr_assert_str_eq(json_txt(j, "metadata.name"), "it-ns1");
    cJSON_Delete(j);

    get(&s, "/api/v1/namespaces", &r);
    cr_assert_eq(r.code, 200);
    j = json_body(&r);
    cr_assert_str_eq(json_txt(j, "kind"), "NamespaceList");
    cr_assert(array_has_name(json_at(j, "items"), "metadata.name", "it-ns1"));
    cJSON_Delete(j);
    http_resp_free(&r);

    get(&s, "/api/v1/nodes", &r);
    cr_assert_eq(r.code, 200);
    j = json_body(&r);
    cr_assert_str_eq(json_txt(j, "kind"), "NodeList");
    cr_assert_str_eq(json_txt(j, "apiVersion"), "v1");
    cJSON_Delete(j);
    http_resp_free(&r);

    snprintf(nf, sizeof(nf), NOT_FOUND_FMT, "namespaces", "nope", "nope", "namespaces");
    get(&s, "/api/v1/namespaces/nope", &r);
    expect_status(&r, 404, nf);
    http_resp_free(&r);
    sim_stop(&s);
}

/* SEMANTICS 4: non-core groups name the group in the message and in details. */
Test(sim, not_found_in_a_named_group, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct http_resp r;

    sim_start(&s, NULL);
    api_make_ns(s.url, "grp");
    get(&s, "/apis/apps/v1/namespaces/grp/deployments/zzz", &r);
    expect_status(&r, 404,
                  "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                  "\"Failure\",\"message\":\"deployments.apps \\\"zzz\\\" not found\","
                  "\"reason\":\"NotFound\",\"details\":{\"name\":\"zzz\",\"group\":\"apps\","
                  "\"kind\":\"deployments\"},\"code\":404}");
    http_resp_free(&r);
    sim_stop(&s);
}

/* go-restful route errors are apierrors.NewGenericServerResponse: details is {} (captured
 * from kube-apiserver: "...requested resource","reason":"NotFound","details":{},"code":404). */
Test(sim, route_errors_carry_empty_details, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct http_resp r;

    sim_start(&s, NULL);
    get(&s, "/api/v1/namespaces/default/foos", &r);
    expect_status(&r, 404,
                  "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                  "\"Failure\",\"message\":\"the server could not find the requested resource\","
                  "\"reason\":\"NotFound\",\"details\":{},\"code\":404}");
    http_resp_free(&r);
    req(&s, "PUT", "/api/v1/namespaces/default/configmaps", "application/json", "{}", &r);
    expect_status(&r, 405,
                  "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                  "\"Failure\",\"message\":\"the server does not allow this method on the "
                  "requested resource\",\"reason\":\"MethodNotAllowed\",\"details\":{},"
                  "\"code\":405}");
    http_resp_free(&r);
    sim_stop(&s);
}

Test(sim, custom_resource_from_flag, .timeout = SIM_TEST_TIMEOUT_S)
{
    const char *const extra[] = {"--resource", "example.com/v1/widgets:namespaced", "--resource",
                                 "example.com/v1/gizmos:cluster", NULL};
    struct srv s;
    struct http_resp r;
    cJSON *j;
    const cJSON *item;

    sim_start(&s, extra);
    api_make_ns(s.url, "cr");
    req(&s, "POST", "/apis/example.com/v1/namespaces/cr/widgets", "application/json",
        "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w1\"},"
        "\"spec\":{\"size\":3}}",
        &r);
    api_written_rv(&r, 201, "create widget", &j);
    cr_assert_str_eq(json_txt(j, "metadata.namespace"), "cr");
    cJSON_Delete(j);

    get(&s, "/apis/example.com/v1/namespaces/cr/widgets", &r);
    cr_assert_eq(r.code, 200);
    j = json_body(&r);
    cr_assert_str_eq(json_txt(j, "kind"), "WidgetList");
    cr_assert_str_eq(json_txt(j, "apiVersion"), "example.com/v1");
    item = cJSON_GetArrayItem(json_at(j, "items"), 0);
    cr_assert_not_null(item, "one item: %s", r.body);
    cr_assert_str_eq(json_txt(item, "kind"), "Widget", "custom resource list items keep kind");
    cr_assert_str_eq(json_txt(item, "apiVersion"), "example.com/v1");
    cr_assert_eq(jint(item, "spec.size", -1), 3);
    cJSON_Delete(j);
    http_resp_free(&r);

    get(&s, "/apis/example.com/v1/namespaces/cr/widgets/zz", &r);
    expect_status(&r, 404,
                  "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                  "\"Failure\",\"message\":\"widgets.example.com \\\"zz\\\" not found\","
                  "\"reason\":\"NotFound\",\"details\":{\"name\":\"zz\",\"group\":"
                  "\"example.com\",\"kind\":\"widgets\"},\"code\":404}");
    http_resp_free(&r);

    req(&s, "POST", "/apis/example.com/v1/gizmos", "application/json",
        "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Gizmo\",\"metadata\":{\"name\":\"g1\"}}",
        &r);
    api_written_rv(&r, 201, "create gizmo", &j);
    cr_assert_null(json_at(j, "metadata.namespace"));
    cJSON_Delete(j);
    get(&s, "/apis/example.com/v1/gizmos/g1", &r);
    api_written_rv(&r, 200, "get gizmo", NULL);

    get(&s, "/apis/example.com/v1", &r);
    cr_assert_eq(r.code, 200, "discovery for the custom group: %ld", r.code);
    j = json_body(&r);
    cr_assert(array_has_name(json_at(j, "resources"), "name", "widgets"));
    cJSON_Delete(j);
    http_resp_free(&r);
    sim_stop(&s);
}

/* ====================================================================================== */
/* LIST                                                                                   */
/* ====================================================================================== */

Test(sim, list_rv_unset_zero_and_not_older_than, .timeout = SIM_TEST_TIMEOUT_S)
{
    static const char *const abc[] = {"a", "b", "c", NULL};
    struct srv s;
    struct http_resp r;
    cJSON *j;
    const cJSON *it;
    char path[256];
    char ctype[128];
    char want[32];
    uint64_t rv_c, rv_a, rv_b;

    sim_start(&s, NULL);
    api_make_ns(s.url, "lst");
    rv_c = api_cm_create(s.url, "lst", "c", NULL, "1", NULL);
    rv_a = api_cm_create(s.url, "lst", "a", NULL, "1", NULL);
    rv_b = api_cm_create(s.url, "lst", "b", NULL, "1", NULL);
    snprintf(want, sizeof(want), "%" PRIu64, rv_b);

    /* rv unset: consistent read, key order, list RV = current revision. */
    get(&s, "/api/v1/namespaces/lst/configmaps", &r);
    cr_assert_eq(r.code, 200);
    cr_assert(http_resp_header(&r, "Content-Type", ctype, sizeof(ctype)));
    cr_assert_str_eq(ctype, "application/json");
    j = json_body(&r);
    cr_assert_str_eq(json_txt(j, "kind"), "ConfigMapList");
    cr_assert_str_eq(json_txt(j, "apiVersion"), "v1");
    cr_assert_str_eq(json_txt(j, "metadata.resourceVersion"), want);
    cr_assert_null(json_at(j, "metadata.continue"));
    cr_assert_null(json_at(j, "metadata.remainingItemCount"));
    expect_item_names(j, abc);
    cJSON_ArrayForEach(it, json_at(j, "items"))
    {
        const char *nm = json_str(it, "metadata.name");
        uint64_t want_rv = nm[0] == 'a' ? rv_a : nm[0] == 'b' ? rv_b : rv_c;

        cr_assert_null(json_at(it, "kind"), "built-in list items carry no kind (SEMANTICS 1.7)");
        cr_assert_null(json_at(it, "apiVersion"), "built-in list items carry no apiVersion");
        cr_assert_eq(json_rv(it), want_rv, "item %s keeps its own RV", nm);
    }
    cJSON_Delete(j);
    http_resp_free(&r);

    /* rv=0 ignores limit: everything, no continue, no remainingItemCount (vector 2). */
    get(&s, "/api/v1/namespaces/lst/configmaps?resourceVersion=0&limit=2", &r);
    cr_assert_eq(r.code, 200);
    j = json_body(&r);
    expect_item_names(j, abc);
    cr_assert_null(json_at(j, "metadata.continue"), "rv=0 ignores limit: %s", r.body);
    cr_assert_null(json_at(j, "metadata.remainingItemCount"));
    cr_assert_str_eq(json_txt(j, "metadata.resourceVersion"), want);
    cJSON_Delete(j);
    http_resp_free(&r);

    /* rv=N older than now: NotOlderThan, current state and RV (vector 3). */
    snprintf(path, sizeof(path), "/api/v1/namespaces/lst/configmaps?resourceVersion=%" PRIu64,
             rv_c);
    get(&s, path, &r);
    cr_assert_eq(r.code, 200);
    j = json_body(&r);
    expect_item_names(j, abc);
    cr_assert_str_eq(json_txt(j, "metadata.resourceVersion"), want);
    cJSON_Delete(j);
    http_resp_free(&r);

    /* NotOlderThan with limit pages with remainingItemCount (vector 9). */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/lst/configmaps?resourceVersion=%" PRIu64
             "&resourceVersionMatch=NotOlderThan&limit=2",
             rv_c);
    get(&s, path, &r);
    cr_assert_eq(r.code, 200);
    j = json_body(&r);
    {
        static const char *const ab[] = {"a", "b", NULL};
        struct token t;

        expect_item_names(j, ab);
        cr_assert_str_eq(json_txt(j, "metadata.resourceVersion"), want);
        cr_assert_eq(jint(j, "metadata.remainingItemCount", -1), 1);
        cr_assert_not_null(json_str(j, "metadata.continue"));
        token_decode(json_str(j, "metadata.continue"), &t);
        cr_assert_eq(t.rv, (int64_t)rv_b, "token rv = list RV");
    }
    cJSON_Delete(j);
    http_resp_free(&r);

    /* Empty result: "items":[] (never null). */
    api_make_ns(s.url, "empty");
    get(&s, "/api/v1/namespaces/empty/configmaps", &r);
    cr_assert_eq(r.code, 200);
    j = json_body(&r);
    cr_assert(cJSON_IsArray(json_at(j, "items")) && cJSON_GetArraySize(json_at(j, "items")) == 0,
              "empty list has items: []: %s", r.body);
    cJSON_Delete(j);
    http_resp_free(&r);
    sim_stop(&s);
}

/* Vector 4 / 44: a future RV waits 3 s, then 504 with Retry-After: 1 and the exact body. */
Test(sim, list_and_get_future_rv_504_after_3s, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct http_resp r;
    char path[256];
    char expected[1024];
    uint64_t rv1, t0, el;

    sim_start(&s, NULL);
    api_make_ns(s.url, "fut");
    rv1 = api_cm_create(s.url, "fut", "c1", NULL, "1", NULL);
    snprintf(expected, sizeof(expected), API_TOO_LARGE_FMT, rv1 + 50, rv1);

    snprintf(path, sizeof(path), "/api/v1/namespaces/fut/configmaps?resourceVersion=%" PRIu64,
             rv1 + 50);
    t0 = http_now_ms();
    get(&s, path, &r);
    el = http_now_ms() - t0;
    cr_assert_geq(el, 3000, "504 only after the 3 s wait (took %" PRIu64 " ms)", el);
    cr_assert_lt(el, 8000, "504 after about 3 s (took %" PRIu64 " ms)", el);
    expect_status(&r, 504, expected);
    api_expect_header(&r, "Retry-After", "1");
    http_resp_free(&r);

    snprintf(path, sizeof(path), "/api/v1/namespaces/fut/configmaps/c1?resourceVersion=%" PRIu64,
             rv1 + 50);
    t0 = http_now_ms();
    get(&s, path, &r);
    el = http_now_ms() - t0;
    cr_assert_geq(el, 3000, "GET 504 only after 3 s (took %" PRIu64 " ms)", el);
    expect_status(&r, 504, expected);
    api_expect_header(&r, "Retry-After", "1");
    http_resp_free(&r);

    /* Exact at a future RV waits the same way. */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/fut/configmaps?resourceVersion=%" PRIu64
             "&resourceVersionMatch=Exact",
             rv1 + 50);
    t0 = http_now_ms();
    get(&s, path, &r);
    el = http_now_ms() - t0;
    cr_assert_geq(el, 3000, "Exact future: 504 after 3 s (took %" PRIu64 " ms)", el);
    expect_status(&r, 504, expected);
    http_resp_free(&r);
    sim_stop(&s);
}

/* The freshness wait ends as soon as the RV is reached (no 504, no full 3 s). */
Test(sim, list_future_rv_answered_when_a_write_reaches_it, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct watch *lw;
    char path[256];
    uint64_t rv1, rv2, t_end;
    cJSON *j;
    struct http_resp dummy;

    sim_start(&s, NULL);
    api_make_ns(s.url, "wait");
    rv1 = api_cm_create(s.url, "wait", "c1", NULL, "1", NULL);
    snprintf(path, sizeof(path), "/api/v1/namespaces/wait/configmaps?resourceVersion=%" PRIu64,
             rv1 + 1);
    /* The collector gives an asynchronous GET: its status arrives only when answered. */
    {
        char url[API_URL_CAP];

        api_url(s.url, path, url, sizeof(url));
        lw = watch_open(url, 20000);
        cr_assert_not_null(lw);
    }
    /* Make sure the LIST is parked in the wait: it must not have been answered yet. */
    get(&s, "/_sim/stats", &dummy);
    http_resp_free(&dummy);
    rv2 = api_cm_create(s.url, "wait", "c2", NULL, "1", NULL);
    cr_assert_eq(rv2, rv1 + 1, "with no churn the next write is rv1+1");
    cr_assert_eq(watch_wait_end(lw, 5000), 0, "LIST answered once the RV is reached");
    cr_assert(watch_ended(lw, &t_end, NULL));
    cr_assert_eq(watch_status(lw), 200, "HTTP %ld: %s", watch_status(lw),
                 watch_line_count(lw) ? watch_line(lw, 0, NULL) : "");
    cr_assert_lt(t_end - watch_opened_ms(lw), 2900, "answered before the 3 s timeout");
    j = json_parse(watch_line(lw, 0, NULL), strlen(watch_line(lw, 0, NULL)));
    cr_assert_eq(json_rv(j), rv2);
    cr_assert_eq(cJSON_GetArraySize(json_at(j, "items")), 2);
    cJSON_Delete(j);
    watch_close(lw);
    sim_stop(&s);
}

Test(sim, list_exact_and_legacy_exact_from_history, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct http_resp r;
    cJSON *j;
    const cJSON *items;
    char path[1024];
    char want[32];
    uint64_t r1, r2, r3, r4, r5;
    struct token t;
    char tok[512];

    sim_start(&s, NULL);
    api_make_ns(s.url, "ex");
    r1 = api_cm_create(s.url, "ex", "a", NULL, "a1", NULL);
    r2 = api_cm_create(s.url, "ex", "b", NULL, "b1", NULL);
    r3 = api_cm_patch(s.url, "ex", "a", "{\"data\":{\"k\":\"a2\"}}", NULL);
    r4 = api_cm_delete(s.url, "ex", "b", NULL);
    r5 = api_cm_create(s.url, "ex", "c", NULL, "c1", NULL);
    cr_assert(r1 < r2 && r2 < r3 && r3 < r4 && r4 < r5);

    /* Exact at r2: a@r1 (a1), b@r2; list RV exactly r2 (vector 5). */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/ex/configmaps?resourceVersion=%" PRIu64
             "&resourceVersionMatch=Exact",
             r2);
    get(&s, path, &r);
    cr_assert_eq(r.code, 200, "Exact r2: %ld %s", r.code, r.body);
    j = json_body(&r);
    snprintf(want, sizeof(want), "%" PRIu64, r2);
    cr_assert_str_eq(json_txt(j, "metadata.resourceVersion"), want);
    items = json_at(j, "items");
    cr_assert_eq(cJSON_GetArraySize(items), 2, "state at r2: %s", r.body);
    cr_assert_str_eq(json_txt(cJSON_GetArrayItem(items, 0), "metadata.name"), "a");
    cr_assert_eq(json_rv(cJSON_GetArrayItem(items, 0)), r1);
    cr_assert_str_eq(json_txt(cJSON_GetArrayItem(items, 0), "data.k"), "a1");
    cr_assert_str_eq(json_txt(cJSON_GetArrayItem(items, 1), "metadata.name"), "b");
    cr_assert_eq(json_rv(cJSON_GetArrayItem(items, 1)), r2);
    cJSON_Delete(j);
    http_resp_free(&r);

    /* Exact at r4 (after b's deletion): only a@r3. */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/ex/configmaps?resourceVersion=%" PRIu64
             "&resourceVersionMatch=Exact",
             r4);
    get(&s, path, &r);
    cr_assert_eq(r.code, 200);
    j = json_body(&r);
    items = json_at(j, "items");
    cr_assert_eq(cJSON_GetArraySize(items), 1, "state at r4: %s", r.body);
    cr_assert_str_eq(json_txt(cJSON_GetArrayItem(items, 0), "data.k"), "a2");
    cr_assert_eq(json_rv(cJSON_GetArrayItem(items, 0)), r3);
    cJSON_Delete(j);
    http_resp_free(&r);

    /* Legacy exact: limit + rv=r2 (vector 6). */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/ex/configmaps?resourceVersion=%" PRIu64 "&limit=1", r2);
    get(&s, path, &r);
    cr_assert_eq(r.code, 200);
    j = json_body(&r);
    {
        static const char *const a[] = {"a", NULL};

        expect_item_names(j, a);
    }
    cr_assert_str_eq(json_txt(j, "metadata.resourceVersion"), want);
    cr_assert_eq(jint(j, "metadata.remainingItemCount", -1), 1);
    cr_assert_not_null(json_str(j, "metadata.continue"), "continue: %s", r.body);
    snprintf(tok, sizeof(tok), "%s", json_str(j, "metadata.continue"));
    token_decode(tok, &t);
    cr_assert_str_eq(t.v, "meta.k8s.io/v1");
    cr_assert_eq(t.rv, (int64_t)r2);
    cr_assert_str_eq(t.start, "a",
                     "start key = last item's key without the namespace "
                     "prefix (SEMANTICS 1.6)");
    cr_assert(t.had_nul, "start ends with \\u0000");
    cJSON_Delete(j);
    http_resp_free(&r);

    /* The continue page is at r2 too: b@r2, no more. */
    snprintf(path, sizeof(path), "/api/v1/namespaces/ex/configmaps?limit=1&continue=%s", tok);
    get(&s, path, &r);
    cr_assert_eq(r.code, 200, "continue: %ld %s", r.code, r.body);
    j = json_body(&r);
    {
        static const char *const b[] = {"b", NULL};

        expect_item_names(j, b);
    }
    cr_assert_str_eq(json_txt(j, "metadata.resourceVersion"), want);
    cr_assert_null(json_at(j, "metadata.continue"), "last page: %s", r.body);
    cr_assert_null(json_at(j, "metadata.remainingItemCount"));
    cJSON_Delete(j);
    http_resp_free(&r);

    /* resourceVersion=0 with continue is accepted as a plain continue (SEMANTICS 1.1). */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/ex/configmaps?limit=1&resourceVersion=0&continue=%s", tok);
    get(&s, path, &r);
    cr_assert_eq(r.code, 200, "continue + rv=0: %ld %s", r.code, r.body);
    http_resp_free(&r);
    sim_stop(&s);
}

#define PAGE_OBJECTS 1000
#define PAGE_LIMIT 37

Test(sim, limit_continue_over_1000_objects, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct http_resp r;
    char path[1024];
    char name[32];
    char tok[1024] = "";
    char list_rv[32] = "";
    int seen = 0;
    int pages = 0;
    int i;
    cJSON *j;

    sim_start(&s, NULL);
    api_make_ns(s.url, "page");
    /* Created in a scrambled order (389 is coprime with 1000) to prove key ordering. */
    for (i = 0; i < PAGE_OBJECTS; i++) {
        snprintf(name, sizeof(name), "cm-%04d", (i * 389) % PAGE_OBJECTS);
        api_cm_create(s.url, "page", name, NULL, "x", NULL);
    }
    for (;;) {
        const cJSON *it;
        const char *cont;
        int n = 0;

        if (pages == 0) {
            snprintf(path, sizeof(path), "/api/v1/namespaces/page/configmaps?limit=%d", PAGE_LIMIT);
        } else {
            snprintf(path, sizeof(path), "/api/v1/namespaces/page/configmaps?limit=%d&continue=%s",
                     PAGE_LIMIT, tok);
        }
        get(&s, path, &r);
        cr_assert_eq(r.code, 200, "page %d: %ld %s", pages, r.code, r.body);
        j = json_body(&r);
        if (pages == 0) {
            snprintf(list_rv, sizeof(list_rv), "%s", json_str(j, "metadata.resourceVersion"));
            /* Writes after the first page must not show up in later pages. */
            api_cm_create(s.url, "page", "cm-0500x", NULL, "late", NULL);
            api_cm_delete(s.url, "page", "cm-0999", NULL);
        } else {
            cr_assert_str_eq(json_txt(j, "metadata.resourceVersion"), list_rv,
                             "every page has the first page's RV");
        }
        cJSON_ArrayForEach(it, json_at(j, "items"))
        {
            snprintf(name, sizeof(name), "cm-%04d", seen);
            cr_assert_str_eq(json_txt(it, "metadata.name"), name, "page %d item %d", pages, n);
            seen++;
            n++;
        }
        cont = json_str(j, "metadata.continue");
        if (seen < PAGE_OBJECTS) {
            struct token t;

            cr_assert_eq(n, PAGE_LIMIT, "full pages until the end");
            cr_assert_not_null(cont, "continue while items remain (page %d)", pages);
            cr_assert_eq(jint(j, "metadata.remainingItemCount", -1), PAGE_OBJECTS - seen,
                         "remainingItemCount after %d items", seen);
            token_decode(cont, &t);
            cr_assert_eq(t.rv, (int64_t)json_u64(list_rv), "token rv = first page's RV");
            cr_assert_str_eq(t.start, name, "token start = last returned key");
            snprintf(tok, sizeof(tok), "%s", cont);
        } else {
            cr_assert_null(cont, "no continue on the last page");
            cr_assert_null(json_at(j, "metadata.remainingItemCount"));
        }
        cJSON_Delete(j);
        http_resp_free(&r);
        pages++;
        if (seen >= PAGE_OBJECTS || pages > PAGE_OBJECTS) {
            break;
        }
    }
    cr_assert_eq(seen, PAGE_OBJECTS, "every object exactly once");
    cr_assert_eq(pages, (PAGE_OBJECTS + PAGE_LIMIT - 1) / PAGE_LIMIT);

    /* A new list sees the later writes. */
    get(&s, "/api/v1/namespaces/page/configmaps", &r);
    j = json_body(&r);
    cr_assert_eq(cJSON_GetArraySize(json_at(j, "items")), PAGE_OBJECTS);
    cr_assert(array_has_name(json_at(j, "items"), "metadata.name", "cm-0500x"));
    cr_assert(!array_has_name(json_at(j, "items"), "metadata.name", "cm-0999"));
    cJSON_Delete(j);
    http_resp_free(&r);
    sim_stop(&s);
}

/* Vectors 8 and 11: Exact list and continue token below the compaction -> 410 Expired. */
Test(sim, exact_and_continue_below_compaction_410, .timeout = SIM_TEST_TIMEOUT_S)
{
    static const char *const long_msg =
        "The provided continue parameter is too old to display a consistent list result. You "
        "can start a new list without the continue parameter, or use the continue token in "
        "this response to retrieve the remainder of the results. Continuing with the provided "
        "token results in an inconsistent list - objects that were created, modified, or "
        "deleted between the time the first chunk was returned and now may show up in the "
        "list.";
    const char *const extra[] = {"--history-events", "1", NULL};
    struct srv s;
    struct http_resp r;
    char path[1024];
    char tok[512];
    char expected[2048];
    struct token t0, t1;
    uint64_t r1, r3, rnow;
    cJSON *j;
    cJSON *st;

    sim_start(&s, extra);
    api_make_ns(s.url, "cmp");
    r1 = api_cm_create(s.url, "cmp", "a", NULL, "1", NULL);
    api_cm_create(s.url, "cmp", "b", NULL, "1", NULL);
    r3 = api_cm_create(s.url, "cmp", "c", NULL, "1", NULL);

    /* First page at r3. */
    get(&s, "/api/v1/namespaces/cmp/configmaps?limit=1", &r);
    cr_assert_eq(r.code, 200);
    j = json_body(&r);
    cr_assert_eq(json_rv(j), r3);
    cr_assert_not_null(json_str(j, "metadata.continue"));
    snprintf(tok, sizeof(tok), "%s", json_str(j, "metadata.continue"));
    token_decode(tok, &t0);
    cJSON_Delete(j);
    http_resp_free(&r);

    api_cm_patch(s.url, "cmp", "a", "{\"data\":{\"k\":\"2\"}}", NULL);
    rnow = api_cm_patch(s.url, "cmp", "a", "{\"data\":{\"k\":\"3\"}}", NULL);
    compact_now(&s);
    st = api_sim_stats(s.url);
    cr_assert_gt(json_num(st, "compacted"), r3,
                 "with --history-events 1, POST /_sim/compact compacts past r3");
    cJSON_Delete(st);

    /* Exact list at r1: 410 with etcd's message. */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/cmp/configmaps?resourceVersion=%" PRIu64
             "&resourceVersionMatch=Exact",
             r1);
    get(&s, path, &r);
    expect_status(&r, 410,
                  "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                  "\"Failure\",\"message\":\"The resourceVersion for the provided list is too "
                  "old.\",\"reason\":\"Expired\",\"code\":410}");
    http_resp_free(&r);

    /* Legacy exact (limit + rv) below the compaction: the same 410. */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/cmp/configmaps?resourceVersion=%" PRIu64 "&limit=1", r1);
    get(&s, path, &r);
    cr_assert_eq(r.code, 410, "legacy exact below compaction: %ld %s", r.code, r.body);
    http_resp_free(&r);

    /* Exact at the current revision still works. */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/cmp/configmaps?resourceVersion=%" PRIu64
             "&resourceVersionMatch=Exact",
             rnow);
    get(&s, path, &r);
    cr_assert_eq(r.code, 200, "Exact at the current revision: %ld %s", r.code, r.body);
    http_resp_free(&r);

    /* The continue token from r3: 410, long message, metadata.continue = rv -1 token. */
    snprintf(path, sizeof(path), "/api/v1/namespaces/cmp/configmaps?limit=1&continue=%s", tok);
    get(&s, path, &r);
    cr_assert_eq(r.code, 410, "compacted continue: %ld %s", r.code, r.body);
    j = json_body(&r);
    cr_assert_not_null(json_str(j, "metadata.continue"), "410 carries a fresh token: %s", r.body);
    snprintf(tok, sizeof(tok), "%s", json_str(j, "metadata.continue"));
    cJSON_Delete(j);
    token_decode(tok, &t1);
    cr_assert_eq(t1.rv, -1, "the 410's token has rv -1");
    cr_assert_str_eq(t1.start, t0.start, "same start key");
    cr_assert_str_eq(t1.v, "meta.k8s.io/v1");
    snprintf(expected, sizeof(expected),
             "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{\"continue\":\"%s\"},"
             "\"status\":\"Failure\",\"message\":\"%s\",\"reason\":\"Expired\",\"code\":410}",
             tok, long_msg);
    expect_body(&r, expected);
    http_resp_free(&r);

    /* The rv -1 token continues at the latest revision. */
    snprintf(path, sizeof(path), "/api/v1/namespaces/cmp/configmaps?limit=1&continue=%s", tok);
    get(&s, path, &r);
    cr_assert_eq(r.code, 200, "rv -1 token: %ld %s", r.code, r.body);
    j = json_body(&r);
    cr_assert_eq(json_rv(j), rnow, "consistent read at the latest revision");
    {
        static const char *const b[] = {"b", NULL};

        expect_item_names(j, b);
    }
    cJSON_Delete(j);
    http_resp_free(&r);
    sim_stop(&s);
}

Test(sim, field_selectors_on_pods, .timeout = SIM_TEST_TIMEOUT_S)
{
#define POD_FMT                                                                                    \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\"},\"spec\":"             \
    "{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}"
    struct srv s;
    struct http_resp r;
    char body[512];
    cJSON *j;
    static const char *const pods[][2] = {{"p1", "n1"}, {"p2", "n1"}, {"p3", "n2"}};
    size_t i;

    sim_start(&s, NULL);
    api_make_ns(s.url, "fs");
    for (i = 0; i < 3; i++) {
        snprintf(body, sizeof(body), POD_FMT, pods[i][0], pods[i][1]);
        req(&s, "POST", "/api/v1/namespaces/fs/pods", "application/json", body, &r);
        api_written_rv(&r, 201, "create pod", NULL);
    }
    get(&s, "/api/v1/namespaces/fs/pods?fieldSelector=spec.nodeName%3Dn1", &r);
    cr_assert_eq(r.code, 200, "%ld %s", r.code, r.body);
    j = json_body(&r);
    {
        static const char *const want[] = {"p1", "p2", NULL};

        expect_item_names(j, want);
    }
    cJSON_Delete(j);
    http_resp_free(&r);

    get(&s, "/api/v1/namespaces/fs/pods?fieldSelector=spec.nodeName%3Dn1,metadata.name!%3Dp2", &r);
    cr_assert_eq(r.code, 200, "%ld %s", r.code, r.body);
    j = json_body(&r);
    {
        static const char *const want[] = {"p1", NULL};

        expect_item_names(j, want);
    }
    cJSON_Delete(j);
    http_resp_free(&r);

    get(&s, "/api/v1/pods?fieldSelector=spec.nodeName!%3Dn1", &r);
    cr_assert_eq(r.code, 200, "%ld %s", r.code, r.body);
    j = json_body(&r);
    {
        static const char *const want[] = {"p3", NULL};

        expect_item_names(j, want);
    }
    cJSON_Delete(j);
    http_resp_free(&r);

    get(&s, "/api/v1/pods?fieldSelector=metadata.namespace%3Dfs&labelSelector=nope", &r);
    cr_assert_eq(r.code, 200, "%ld %s", r.code, r.body);
    j = json_body(&r);
    cr_assert_eq(cJSON_GetArraySize(json_at(j, "items")), 0);
    cJSON_Delete(j);
    http_resp_free(&r);
    sim_stop(&s);
}

/* ====================================================================================== */
/* WATCH                                                                                  */
/* ====================================================================================== */

Test(sim, watch_replays_history_from_rv, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct watch *w, *wl, *wnow;
    char path[256];
    char hv[128];
    uint64_t r1, r2, r3, r4, r5, r6, r7, r8;
    cJSON *upd = NULL;
    struct api_ev e;
    size_t i;

    sim_start(&s, NULL);
    api_make_ns(s.url, "wr");
    r1 = api_cm_create(s.url, "wr", "a", NULL, "1", NULL);
    r2 = api_cm_create(s.url, "wr", "b", NULL, "1", NULL);
    r3 = api_cm_patch(s.url, "wr", "a", "{\"data\":{\"k\":\"2\"}}", &upd);
    r4 = api_cm_patch(s.url, "wr", "b", "{\"data\":{\"k\":\"2\"}}", NULL);
    r5 = api_cm_delete(s.url, "wr", "a", NULL);
    r6 = api_cm_create(s.url, "wr", "c", NULL, "1", NULL);
    r7 = api_cm_patch(s.url, "wr", "c", "{\"data\":{\"k\":\"2\"}}", NULL);
    cr_assert(r1 < r2 && r2 < r3 && r3 < r4 && r4 < r5 && r5 < r6 && r6 < r7);

    snprintf(path, sizeof(path),
             "/api/v1/namespaces/wr/configmaps?watch=1&resourceVersion=%" PRIu64, r2);
    w = api_watch(s.url, path, 200);
    cr_assert(http_header_get(watch_headers(w), "Content-Type", hv, sizeof(hv)));
    cr_assert_str_eq(hv, "application/json", "watch Content-Type (SEMANTICS 2.9)");
    cr_assert(http_header_get(watch_headers(w), "Transfer-Encoding", hv, sizeof(hv)),
              "watch is chunked");
    cr_assert_str_eq(hv, "chunked");
    cr_assert(!http_header_get(watch_headers(w), "Content-Length", hv, sizeof(hv)));
    snprintf(path, sizeof(path), "/api/v1/watch/namespaces/wr/configmaps?resourceVersion=%" PRIu64,
             r2);
    wl = api_watch(s.url, path, 200);
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/wr/configmaps?watch=1&resourceVersion=%" PRIu64, r7);
    wnow = api_watch(s.url, path, 200);

    expect_event(w, 0, "MODIFIED", "a", r3, "ConfigMap");
    expect_event(w, 1, "MODIFIED", "b", r4, "ConfigMap");
    expect_event(w, 2, "DELETED", "a", r5, "ConfigMap");
    expect_event(w, 3, "ADDED", "c", r6, "ConfigMap");
    expect_event(w, 4, "MODIFIED", "c", r7, "ConfigMap");
    /* The replayed MODIFIED carries the object exactly as written. */
    api_ev_parse(watch_line(w, 0, NULL), &e);
    cr_assert(cJSON_Compare(e.obj, upd, true), "replayed object = update response\n%s\n%s",
              watch_line(w, 0, NULL), cJSON_PrintUnformatted(upd));
    api_ev_free(&e);
    /* The DELETED object is the last state, stamped with the deletion RV. */
    api_ev_parse(watch_line(w, 2, NULL), &e);
    cr_assert_str_eq(json_txt(e.obj, "data.k"), "2");
    api_ev_free(&e);

    /* A live write arrives after the replay, and nothing else came in between. */
    r8 = api_cm_create(s.url, "wr", "d", NULL, "1", NULL);
    expect_event(w, 5, "ADDED", "d", r8, "ConfigMap");
    expect_count(w, 6);
    expect_event(wnow, 0, "ADDED", "d", r8, "ConfigMap");
    expect_count(wnow, 1);
    /* The legacy /watch/ prefix serves the same stream. */
    api_wline(wl, 5);
    for (i = 0; i < 6; i++) {
        cr_assert_str_eq(watch_line(wl, i, NULL), watch_line(w, i, NULL), "legacy line %zu", i);
    }
    cr_assert(!watch_ended(w, NULL, NULL), "the watch stays open");
    watch_close(w);
    watch_close(wl);
    watch_close(wnow);
    cJSON_Delete(upd);
    sim_stop(&s);
}

/* Vector 24 after POST /_sim/compact; the boundary Y is checked from both sides. */
Test(sim, watch_below_compaction_gets_410_error_event, .timeout = SIM_TEST_TIMEOUT_S)
{
    static const char *const prefix =
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
        "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version: ";
    const char *const extra[] = {"--history-events", "1", NULL};
    struct srv s;
    struct watch *w;
    char path[256];
    char expected[512];
    const char *line;
    uint64_t r1, rnow, y, r_new;
    size_t i;
    char *end = NULL;

    sim_start(&s, extra);
    api_make_ns(s.url, "wc");
    r1 = api_cm_create(s.url, "wc", "a", NULL, "0", NULL);
    rnow = r1;
    for (i = 1; i <= 4; i++) {
        char patch[64];

        snprintf(patch, sizeof(patch), "{\"data\":{\"k\":\"%zu\"}}", i);
        rnow = api_cm_patch(s.url, "wc", "a", patch, NULL);
    }
    compact_now(&s);

    snprintf(path, sizeof(path),
             "/api/v1/namespaces/wc/configmaps?watch=1&resourceVersion=%" PRIu64, r1);
    w = api_watch(s.url, path, 200);
    line = api_wline(w, 0);
    cr_assert_eq(watch_wait_end(w, 5000), 0, "the stream ends after the ERROR event");
    expect_count(w, 1);
    snprintf(expected, sizeof(expected), "%s%" PRIu64 " (", prefix, r1);
    cr_assert(strncmp(line, expected, strlen(expected)) == 0,
              "ERROR line\nexpected: %s...\n"
              "     got: %s",
              expected, line);
    y = strtoull(line + strlen(expected), &end, 10);
    snprintf(expected, sizeof(expected),
             "%s%" PRIu64 " (%" PRIu64 ")\",\"reason\":\"Expired\",\"code\":410}}", prefix, r1, y);
    cr_assert_str_eq(line, expected, "exact ERROR line\nexpected: %s\n     got: %s", expected,
                     line);
    cr_assert(y > r1 && y <= rnow, "boundary %" PRIu64 " in (%" PRIu64 ", %" PRIu64 "]", y, r1,
              rnow);
    watch_close(w);

    /* rv = Y-1 is too old, with the same boundary. */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/wc/configmaps?watch=1&resourceVersion=%" PRIu64, y - 1);
    w = api_watch(s.url, path, 200);
    snprintf(expected, sizeof(expected),
             "%s%" PRIu64 " (%" PRIu64 ")\",\"reason\":\"Expired\",\"code\":410}}", prefix, y - 1,
             y);
    api_expect_line(w, 0, expected);
    cr_assert_eq(watch_wait_end(w, 5000), 0);
    watch_close(w);

    /* rv = Y (oldest-1) is accepted: events after Y, no ERROR. */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/wc/configmaps?watch=1&resourceVersion=%" PRIu64, y);
    w = api_watch(s.url, path, 200);
    r_new = api_cm_patch(s.url, "wc", "a", "{\"data\":{\"k\":\"new\"}}", NULL);
    for (i = 0;; i++) {
        struct api_ev e;

        api_ev_parse(api_wline(w, i), &e);
        cr_assert_str_neq(e.type, "ERROR", "rv=Y is accepted: %s", watch_line(w, i, NULL));
        cr_assert_gt(e.rv, y);
        if (e.rv == r_new) {
            api_ev_free(&e);
            break;
        }
        api_ev_free(&e);
    }
    watch_close(w);

    /* Vector 30: a watch-list below the compaction is not too old. */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/wc/configmaps?watch=1&sendInitialEvents=true&"
             "resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=%" PRIu64,
             r1);
    w = api_watch(s.url, path, 200);
    expect_event(w, 0, "ADDED", "a", r_new, "ConfigMap");
    snprintf(expected, sizeof(expected), API_CM_END_BOOKMARK_FMT, r_new);
    api_expect_line(w, 1, expected);
    watch_close(w);
    sim_stop(&s);
}

/* Vectors 27, 28 and the 1.34+ defaulting of rv unset. */
Test(sim, watch_rv0_and_unset_start_with_synthetic_added_in_key_order,
     .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    static const char *const abc[] = {"a", "b", "c", NULL};
    struct watch *w0, *w0b, *wu;
    char bm[512];
    uint64_t rc_, ra, rb, rc2, rd;

    sim_start(&s, NULL);
    api_make_ns(s.url, "w0");
    rc_ = api_cm_create(s.url, "w0", "c", NULL, "1", NULL);
    ra = api_cm_create(s.url, "w0", "a", NULL, "1", NULL);
    rb = api_cm_create(s.url, "w0", "b", NULL, "1", NULL);
    rc2 = api_cm_patch(s.url, "w0", "c", "{\"data\":{\"k\":\"2\"}}", NULL);
    cr_assert_gt(rc2, rc_);

    w0 = api_watch(s.url, "/api/v1/namespaces/w0/configmaps?watch=1&resourceVersion=0", 200);
    w0b = api_watch(s.url,
                    "/api/v1/namespaces/w0/configmaps?watch=1&resourceVersion=0&"
                    "allowWatchBookmarks=true",
                    200);
    wu = api_watch(s.url, "/api/v1/namespaces/w0/configmaps?watch=true", 200);
    {
        const uint64_t rvs[] = {ra, rb, rc2};

        expect_added(w0, 0, abc, rvs);
        expect_added(w0b, 0, abc, rvs);
        expect_added(wu, 0, abc, rvs);
    }
    snprintf(bm, sizeof(bm), API_CM_END_BOOKMARK_FMT, rc2);
    api_expect_line(w0b, 3, bm);

    rd = api_cm_create(s.url, "w0", "d", NULL, "1", NULL);
    expect_event(w0, 3, "ADDED", "d", rd, "ConfigMap");
    expect_count(w0, 4);
    expect_event(w0b, 4, "ADDED", "d", rd, "ConfigMap");
    expect_count(w0b, 5);
    expect_event(wu, 3, "ADDED", "d", rd, "ConfigMap");
    expect_count(wu, 4);
    watch_close(w0);
    watch_close(w0b);
    watch_close(wu);
    sim_stop(&s);
}

/* Vector 29 and the same without allowWatchBookmarks (no end bookmark). */
Test(sim, watch_list_send_initial_events_end_bookmark, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct watch *w, *wnb;
    char bm[512];
    uint64_t rb, ra, rc;

    sim_start(&s, NULL);
    api_make_ns(s.url, "si");
    rb = api_cm_create(s.url, "si", "b", NULL, "1", NULL);
    ra = api_cm_create(s.url, "si", "a", NULL, "1", NULL);

    w = api_watch(s.url,
                  "/api/v1/namespaces/si/configmaps?watch=1&sendInitialEvents=true&"
                  "resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&"
                  "resourceVersion=",
                  200);
    wnb = api_watch(s.url,
                    "/api/v1/namespaces/si/configmaps?watch=1&sendInitialEvents=true&"
                    "resourceVersionMatch=NotOlderThan&resourceVersion=0",
                    200);
    {
        static const char *const ab[] = {"a", "b", NULL};
        const uint64_t rvs[] = {ra, rb};

        expect_added(w, 0, ab, rvs);
        expect_added(wnb, 0, ab, rvs);
    }
    snprintf(bm, sizeof(bm), API_CM_END_BOOKMARK_FMT, ra);
    api_expect_line(w, 2, bm);

    rc = api_cm_create(s.url, "si", "c", NULL, "1", NULL);
    expect_event(w, 3, "ADDED", "c", rc, "ConfigMap");
    expect_count(w, 4);
    expect_event(wnb, 2, "ADDED", "c", rc, "ConfigMap");
    expect_count(wnb, 3);
    watch_close(w);
    watch_close(wnb);
    sim_stop(&s);
}

/* Vector 31: a watch-list at a future RV: 200, then after 3 s one 504 ERROR event, end. */
Test(sim, watch_list_future_rv_error_event_after_3s, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct watch *w;
    char path[512];
    char expected[1024];
    char status[900];
    uint64_t r1, at;

    sim_start(&s, NULL);
    api_make_ns(s.url, "wf");
    r1 = api_cm_create(s.url, "wf", "a", NULL, "1", NULL);
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/wf/configmaps?watch=1&sendInitialEvents=true&"
             "resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=%" PRIu64,
             r1 + 100);
    w = api_watch(s.url, path, 200);
    snprintf(status, sizeof(status), API_TOO_LARGE_FMT, r1 + 100, r1);
    snprintf(expected, sizeof(expected), "{\"type\":\"ERROR\",\"object\":%s}", status);
    api_expect_line(w, 0, expected);
    watch_line(w, 0, &at);
    cr_assert_geq(at - watch_opened_ms(w), 3000, "ERROR only after the 3 s wait (%" PRIu64 " ms)",
                  at - watch_opened_ms(w));
    cr_assert_eq(watch_wait_end(w, 5000), 0, "stream ends after the ERROR event");
    expect_count(w, 1);
    watch_close(w);
    sim_stop(&s);
}

/* Vector 26: a plain watch from a future RV is silent until RVs pass it; no error. */
Test(sim, watch_future_rv_waits_silently, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct watch *w;
    char path[256];
    char name[16];
    uint64_t r1, rv[6];
    int i;

    sim_start(&s, NULL);
    api_make_ns(s.url, "wfu");
    r1 = api_cm_create(s.url, "wfu", "a", NULL, "1", NULL);
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/wfu/configmaps?watch=1&resourceVersion=%" PRIu64, r1 + 3);
    w = api_watch(s.url, path, 200);
    for (i = 0; i < 6; i++) {
        snprintf(name, sizeof(name), "x%d", i);
        rv[i] = api_cm_create(s.url, "wfu", name, NULL, "1", NULL);
    }
    cr_assert_eq(rv[2], r1 + 3);
    expect_event(w, 0, "ADDED", "x3", rv[3], "ConfigMap");
    expect_event(w, 1, "ADDED", "x4", rv[4], "ConfigMap");
    expect_event(w, 2, "ADDED", "x5", rv[5], "ConfigMap");
    expect_count(w, 3);
    watch_close(w);
    sim_stop(&s);
}

/* Bookmarks with --bookmark-interval 1s: only with allowWatchBookmarks, only on RV progress
 * (SEMANTICS 2.6; vector 36's "other namespace" write), never repeating an RV. */
Test(sim, bookmarks_with_short_interval, .timeout = SIM_TEST_TIMEOUT_S)
{
    const char *const extra[] = {"--bookmark-interval", "1s", NULL};
    struct srv s;
    struct watch *w, *wplain, *wquiet;
    char path[256];
    char bm[256], prev[256];
    uint64_t r1, r2, r3, r4, r5, r6;
    size_t i;

    sim_start(&s, extra);
    api_make_ns(s.url, "bm");
    api_make_ns(s.url, "bm-other");
    r1 = api_cm_create(s.url, "bm", "a", NULL, "1", NULL);
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/bm/configmaps?watch=1&resourceVersion=%" PRIu64
             "&allowWatchBookmarks=true",
             r1);
    w = api_watch(s.url, path, 200);
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/bm/configmaps?watch=1&resourceVersion=%" PRIu64, r1);
    wplain = api_watch(s.url, path, 200);

    /* Each bookmark carries the rv of its moment, once that is above the watch's watermark
     * (r1), whether or not an event went out at it: kube-apiserver's cacheWatcher keeps
     * the watermark of its interval, so a bookmark also repeats at an rv already sent. */
    r2 = api_cm_create(s.url, "bm-other", "x", NULL, "1", NULL);
    snprintf(bm, sizeof(bm), API_CM_BOOKMARK_FMT, r2);
    api_expect_line(w, 0, bm);
    r3 = api_cm_patch(s.url, "bm-other", "x", "{\"data\":{\"k\":\"2\"}}", NULL);
    memcpy(prev, bm, sizeof(bm));
    snprintf(bm, sizeof(bm), API_CM_BOOKMARK_FMT, r3);
    i = api_skip_line(w, 1, prev);
    api_expect_line(w, i, bm);
    r4 = api_cm_create(s.url, "bm", "b", NULL, "1", NULL);
    i = api_skip_line(w, i + 1, bm);
    expect_event(w, i, "ADDED", "b", r4, "ConfigMap");
    r5 = api_cm_create(s.url, "bm-other", "y", NULL, "1", NULL);
    snprintf(prev, sizeof(prev), API_CM_BOOKMARK_FMT, r4); /* a tick between the two */
    snprintf(bm, sizeof(bm), API_CM_BOOKMARK_FMT, r5);
    i = api_skip_line(w, i + 1, prev);
    api_expect_line(w, i, bm);
    r6 = api_cm_create(s.url, "bm", "c", NULL, "1", NULL);
    i = api_skip_line(w, i + 1, bm);
    expect_event(w, i, "ADDED", "c", r6, "ConfigMap");
    /* A watch from the rv of now: its watermark is never passed, so it gets none. */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/bm/configmaps?watch=1&resourceVersion=%" PRIu64
             "&allowWatchBookmarks=true",
             r6);
    wquiet = api_watch(s.url, path, 200);
    nap(3500);
    snprintf(bm, sizeof(bm), API_CM_BOOKMARK_FMT, r6);
    api_expect_repeats(w, i + 1, 2, bm); /* the rv stays: one per interval */
    expect_count(wquiet, 0);
    /* Without allowWatchBookmarks: only the two events. */
    expect_event(wplain, 0, "ADDED", "b", r4, "ConfigMap");
    expect_event(wplain, 1, "ADDED", "c", r6, "ConfigMap");
    expect_count(wplain, 2);
    watch_close(w);
    watch_close(wplain);
    watch_close(wquiet);
    sim_stop(&s);
}

/* Vectors 36 and 37: timeoutSeconds ends the stream with no final event; a bookmark comes
 * about 2 s before the deadline when the RV moved, none when it did not. */
Test(sim, timeout_seconds_ends_stream_with_pre_deadline_bookmark, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct watch *w, *wq;
    char path[256];
    char bm[256];
    uint64_t r1, r2, at, end;
    int crc = -1;

    sim_start(&s, NULL);
    api_make_ns(s.url, "to");
    api_make_ns(s.url, "to-other");
    r1 = api_cm_create(s.url, "to", "a", NULL, "1", NULL);
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/to/configmaps?watch=1&resourceVersion=%" PRIu64
             "&allowWatchBookmarks=true&timeoutSeconds=5",
             r1);
    w = api_watch(s.url, path, 200);
    r2 = api_cm_create(s.url, "to-other", "x", NULL, "1", NULL);
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/to/configmaps?watch=1&resourceVersion=%" PRIu64
             "&allowWatchBookmarks=true&timeoutSeconds=2",
             r2);
    wq = api_watch(s.url, path, 200);

    snprintf(bm, sizeof(bm), API_CM_BOOKMARK_FMT, r2);
    api_expect_line(w, 0, bm);
    watch_line(w, 0, &at);
    cr_assert_geq(at - watch_opened_ms(w), 2000,
                  "default 60 s period: the bookmark is the pre-deadline one (%" PRIu64 " ms)",
                  at - watch_opened_ms(w));
    cr_assert_eq(watch_wait_end(w, 8000), 0, "timeoutSeconds=5 ends the stream");
    cr_assert(watch_ended(w, &end, &crc));
    cr_assert_eq(crc, 0, "clean end of the chunked body (curl rc %d)", crc);
    cr_assert_geq(end - watch_opened_ms(w), 4800, "ended after %" PRIu64 " ms",
                  end - watch_opened_ms(w));
    cr_assert_lt(end - watch_opened_ms(w), 7500, "ended after %" PRIu64 " ms",
                 end - watch_opened_ms(w));
    expect_count(w, 1);

    cr_assert_eq(watch_wait_end(wq, 5000), 0, "timeoutSeconds=2 ends the stream");
    cr_assert(watch_ended(wq, &end, &crc));
    cr_assert_eq(crc, 0);
    cr_assert_geq(end - watch_opened_ms(wq), 1800, "ended after %" PRIu64 " ms",
                  end - watch_opened_ms(wq));
    expect_count(wq, 0);
    watch_close(w);
    watch_close(wq);
    sim_stop(&s);
}

/* Vector 35: label selector transitions become ADDED/DELETED (SEMANTICS 2.10), live and
 * in a replay of the same window. */
Test(sim, label_selector_transitions, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct watch *w, *wr;
    char path[256];
    cJSON *a0 = NULL, *b1 = NULL;
    uint64_t r0, r1, r2, r3, r4, r6, r7;
    struct api_ev e;
    size_t i;

    sim_start(&s, NULL);
    api_make_ns(s.url, "sel");
    api_cm_create(s.url, "sel", "a", "{\"app\":\"x\"}", "1", &a0);
    api_cm_create(s.url, "sel", "b", "{\"app\":\"x\"}", "1", NULL);
    r0 = api_cm_create(s.url, "sel", "d", NULL, "1", NULL);
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/sel/configmaps?watch=1&resourceVersion=%" PRIu64
             "&labelSelector=app%%3Dx",
             r0);
    w = api_watch(s.url, path, 200);

    r1 = api_cm_patch(s.url, "sel", "a", "{\"metadata\":{\"labels\":{\"app\":\"y\"}}}", NULL);
    r2 = api_cm_patch(s.url, "sel", "a", "{\"metadata\":{\"labels\":{\"app\":\"x\"}}}", NULL);
    r3 = api_cm_patch(s.url, "sel", "d", "{\"metadata\":{\"labels\":{\"app\":\"x\"}}}", NULL);
    r4 = api_cm_patch(s.url, "sel", "b", "{\"data\":{\"k\":\"2\"}}", &b1);
    api_cm_create(s.url, "sel", "e", NULL, "1", NULL); /* never matches: no event */
    r6 = api_cm_delete(s.url, "sel", "b", NULL);
    r7 = api_cm_create(s.url, "sel", "f", "{\"app\":\"x\"}", "1", NULL);

    expect_event(w, 0, "DELETED", "a", r1, "ConfigMap");
    expect_event(w, 1, "ADDED", "a", r2, "ConfigMap");
    expect_event(w, 2, "ADDED", "d", r3, "ConfigMap");
    expect_event(w, 3, "MODIFIED", "b", r4, "ConfigMap");
    expect_event(w, 4, "DELETED", "b", r6, "ConfigMap");
    expect_event(w, 5, "ADDED", "f", r7, "ConfigMap");
    expect_count(w, 6);

    /* DELETED on a transition carries the previous object with the event's RV. */
    api_ev_parse(watch_line(w, 0, NULL), &e);
    cr_assert_str_eq(json_txt(e.obj, "metadata.labels.app"), "x", "old content: %s",
                     watch_line(w, 0, NULL));
    {
        char rvs[32];

        snprintf(rvs, sizeof(rvs), "%" PRIu64, r1);
        cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(a0, "metadata"),
                                               "resourceVersion", cJSON_CreateString(rvs));
        cr_assert(cJSON_Compare(e.obj, a0, true),
                  "DELETED = previous object with RV overwritten\nexpected: %s\n     got: %s",
                  cJSON_PrintUnformatted(a0), watch_line(w, 0, NULL));
    }
    api_ev_free(&e);
    api_ev_parse(watch_line(w, 4, NULL), &e);
    cr_assert_str_eq(json_txt(e.obj, "data.k"), "2", "deleted b: last content");
    api_ev_free(&e);

    /* A replay of the same window gives the same lines. */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/sel/configmaps?watch=1&resourceVersion=%" PRIu64
             "&labelSelector=app%%3Dx",
             r0);
    wr = api_watch(s.url, path, 200);
    api_wline(wr, 5);
    for (i = 0; i < 6; i++) {
        cr_assert_str_eq(watch_line(wr, i, NULL), watch_line(w, i, NULL), "replay line %zu", i);
    }
    expect_count(wr, 6);
    watch_close(w);
    watch_close(wr);
    cJSON_Delete(a0);
    cJSON_Delete(b1);
    sim_stop(&s);
}

/* ====================================================================================== */
/* bad input (SEMANTICS 1.1, 2.1, 5 and vectors 13-21, 32-34)                             */
/* ====================================================================================== */

#define INVALID_FMT                                                                                \
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","           \
    "\"message\":\"ListOptions.meta.k8s.io \\\"\\\" is invalid: %s: %s\",\"reason\":"              \
    "\"Invalid\",\"details\":{\"group\":\"meta.k8s.io\",\"kind\":\"ListOptions\","                 \
    "\"causes\":[{\"reason\":\"%s\",\"message\":\"%s\",\"field\":\"%s\"}]},\"code\":422}"

static void expect_invalid(const struct srv *s, const char *path, const char *field,
                           const char *cause_reason, const char *body_text)
{
    struct http_resp r;
    char expected[2048];

    snprintf(expected, sizeof(expected), INVALID_FMT, field, body_text, cause_reason, body_text,
             field);
    get(s, path, &r);
    expect_status(&r, 422, expected);
    http_resp_free(&r);
}

static void expect_bad_request(const struct srv *s, const char *path, const char *msg)
{
    struct http_resp r;
    char expected[2048];

    snprintf(expected, sizeof(expected),
             "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
             "\"Failure\",\"message\":\"%s\",\"reason\":\"BadRequest\",\"code\":400}",
             msg);
    get(s, path, &r);
    expect_status(&r, 400, expected);
    http_resp_free(&r);
}

/* A Status with this code and reason; the message is not compared. */
static void expect_status_shape(const struct http_resp *r, long code, const char *reason)
{
    cJSON *j;

    cr_assert_eq(r->code, code, "HTTP %ld, expected %ld: %s", r->code, code, r->body);
    j = json_body(r);
    cr_assert_str_eq(json_txt(j, "kind") ? json_str(j, "kind") : "", "Status", "%s", r->body);
    cr_assert_str_eq(json_txt(j, "apiVersion") ? json_str(j, "apiVersion") : "", "v1");
    cr_assert_str_eq(json_txt(j, "status") ? json_str(j, "status") : "", "Failure");
    cr_assert_str_eq(json_txt(j, "reason") ? json_str(j, "reason") : "", reason, "%s", r->body);
    cr_assert_eq(jint(j, "code", 0), (int)code);
    cr_assert_not_null(json_str(j, "message"));
    cJSON_Delete(j);
}

Test(sim, list_bad_continue_token_400, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct http_resp r;
    cJSON *j;
    const char *msg;

    sim_start(&s, NULL);
    api_make_ns(s.url, "bad");
    get(&s, "/api/v1/namespaces/bad/configmaps?continue=garbage!!", &r);
    expect_status_shape(&r, 400, "BadRequest");
    j = json_body(&r);
    msg = json_str(j, "message");
    cr_assert(strncmp(msg, "invalid continue token: continue key is not valid:", 50) == 0,
              "message: %s", msg);
    cJSON_Delete(j);
    http_resp_free(&r);
    sim_stop(&s);
}

Test(sim, list_continue_with_resource_version_400, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct http_resp r;
    cJSON *j;
    char path[1024];

    sim_start(&s, NULL);
    api_make_ns(s.url, "bad");
    api_cm_create(s.url, "bad", "a", NULL, "1", NULL);
    api_cm_create(s.url, "bad", "b", NULL, "1", NULL);
    get(&s, "/api/v1/namespaces/bad/configmaps?limit=1", &r);
    j = json_body(&r);
    cr_assert_not_null(json_str(j, "metadata.continue"));
    snprintf(path, sizeof(path), "/api/v1/namespaces/bad/configmaps?continue=%s&resourceVersion=%s",
             json_str(j, "metadata.continue"), json_str(j, "metadata.resourceVersion"));
    cJSON_Delete(j);
    http_resp_free(&r);
    expect_bad_request(&s, path, "specifying resource version is not allowed when using continue");
    sim_stop(&s);
}

Test(sim, list_invalid_list_options_422, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;

    sim_start(&s, NULL);
    api_make_ns(s.url, "bad");
    /* vector 15 */
    expect_invalid(&s, "/api/v1/namespaces/bad/configmaps?resourceVersionMatch=Exact",
                   "resourceVersionMatch", "FieldValueForbidden",
                   "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is "
                   "provided");
    /* vector 16 */
    expect_invalid(&s,
                   "/api/v1/namespaces/bad/configmaps?resourceVersion=0&resourceVersionMatch="
                   "Exact",
                   "resourceVersionMatch", "FieldValueForbidden",
                   "Forbidden: resourceVersionMatch \\\"exact\\\" is forbidden for "
                   "resourceVersion \\\"0\\\"");
    /* vector 17 */
    expect_invalid(&s,
                   "/api/v1/namespaces/bad/configmaps?resourceVersion=1&resourceVersionMatch=Foo",
                   "resourceVersionMatch", "FieldValueNotSupported",
                   "Unsupported value: \\\"Foo\\\": supported values: \\\"Exact\\\", "
                   "\\\"NotOlderThan\\\", \\\"\\\"");
    /* vector 21 */
    expect_invalid(&s, "/api/v1/namespaces/bad/configmaps?sendInitialEvents=true",
                   "sendInitialEvents", "FieldValueForbidden",
                   "Forbidden: sendInitialEvents is forbidden for list");
    sim_stop(&s);
}

Test(sim, watch_invalid_options_422, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;

    sim_start(&s, NULL);
    api_make_ns(s.url, "bad");
    /* vector 32 */
    expect_invalid(&s, "/api/v1/namespaces/bad/configmaps?watch=1&sendInitialEvents=true",
                   "resourceVersionMatch", "FieldValueForbidden",
                   "Forbidden: sendInitialEvents requires setting resourceVersionMatch to "
                   "NotOlderThan");
    /* vector 33 */
    expect_invalid(&s,
                   "/api/v1/namespaces/bad/configmaps?watch=1&resourceVersion=150&"
                   "resourceVersionMatch=NotOlderThan",
                   "resourceVersionMatch", "FieldValueForbidden",
                   "Forbidden: resourceVersionMatch is forbidden for watch unless "
                   "sendInitialEvents is provided");
    sim_stop(&s);
}

/* Vectors 18 and 34: a bad RV is 400 on LIST, 500 without a reason on WATCH and GET. */
Test(sim, invalid_resource_version, .timeout = SIM_TEST_TIMEOUT_S)
{
    static const char *const watch500 =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"resourceVersion: Invalid value: \\\"abc\\\": strconv.ParseUint: parsing "
        "\\\"abc\\\": invalid syntax\",\"code\":500}";
    struct srv s;
    struct http_resp r;

    sim_start(&s, NULL);
    api_make_ns(s.url, "bad");
    api_cm_create(s.url, "bad", "a", NULL, "1", NULL);
    expect_bad_request(&s, "/api/v1/namespaces/bad/configmaps?resourceVersion=abc",
                       "invalid resource version: resourceVersion: Invalid value: \\\"abc\\\": "
                       "strconv.ParseUint: parsing \\\"abc\\\": invalid syntax");
    get(&s, "/api/v1/namespaces/bad/configmaps?watch=1&resourceVersion=abc", &r);
    cr_assert_eq(r.code, 500, "WATCH rv=abc");
    expect_body(&r, watch500);
    http_resp_free(&r);
    /* SEMANTICS 4: GET with an invalid rv is the same 500 */
    get(&s, "/api/v1/namespaces/bad/configmaps/a?resourceVersion=abc", &r);
    cr_assert_eq(r.code, 500, "GET rv=abc");
    expect_body(&r, watch500);
    http_resp_free(&r);
    sim_stop(&s);
}

/* Vector 19 and SEMANTICS 1.1 item 4: both converter flavours. */
Test(sim, unknown_field_selector_400, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;

    sim_start(&s, NULL);
    api_make_ns(s.url, "bad");
    expect_bad_request(&s, "/api/v1/namespaces/bad/pods?fieldSelector=spec.foo%3Dbar",
                       "field label not supported: spec.foo");
    expect_bad_request(&s, "/api/v1/namespaces/bad/configmaps?fieldSelector=spec.foo%3Dbar",
                       "\\\"spec.foo\\\" is not a known field selector: only "
                       "\\\"metadata.name\\\", \\\"metadata.namespace\\\"");
    sim_stop(&s);
}

/* Kinds whose selectable fields are computed, and batch's own rejection text. */
Test(sim, computed_field_selectors_and_job_converter_text, .timeout = SIM_TEST_TIMEOUT_S)
{
    static const char *const extra[] = {"--resource", "batch/v1/jobs", NULL};
    struct srv s;
    struct http_resp r = {0};
    cJSON *l;

    sim_start(&s, extra);
    req(&s, "POST", "/apis/batch/v1/namespaces/default/jobs", "application/json",
        "{\"metadata\":{\"name\":\"j1\"},\"spec\":{\"template\":{\"spec\":{\"containers\":"
        "[{\"name\":\"c\",\"image\":\"x\"}]}}}}",
        &r);
    cr_assert_eq(r.code, 201, "%s", r.body);
    http_resp_free(&r);
    expect_bad_request(&s, "/apis/batch/v1/jobs?fieldSelector=spec.x%3D1",
                       "field label \\\"spec.x\\\" not supported for Job");
    /* status.successful reads status.succeeded, 0 when absent */
    get(&s, "/apis/batch/v1/jobs?fieldSelector=status.successful%3D0", &r);
    l = json_body(&r);
    cr_assert_eq(cJSON_GetArraySize(json_at(l, "items")), 1, "%s", r.body);
    cJSON_Delete(l);
    http_resp_free(&r);
    get(&s, "/apis/batch/v1/jobs?fieldSelector=status.successful%3D1", &r);
    l = json_body(&r);
    cr_assert_eq(cJSON_GetArraySize(json_at(l, "items")), 0, "%s", r.body);
    cJSON_Delete(l);
    http_resp_free(&r);
    /* pods: spec.hostNetwork is "false" when the pod does not set it */
    req(&s, "POST", "/api/v1/namespaces/default/pods", "application/json",
        "{\"metadata\":{\"name\":\"p1\"},\"spec\":{\"containers\":[{\"name\":\"c\","
        "\"image\":\"x\"}]}}",
        &r);
    cr_assert_eq(r.code, 201, "%s", r.body);
    http_resp_free(&r);
    get(&s, "/api/v1/pods?resourceVersion=0&fieldSelector=spec.hostNetwork%3Dfalse", &r);
    l = json_body(&r);
    cr_assert_eq(cJSON_GetArraySize(json_at(l, "items")), 1, "%s", r.body);
    cJSON_Delete(l);
    http_resp_free(&r);
    get(&s, "/api/v1/pods?resourceVersion=0&fieldSelector=spec.hostNetwork%3Dtrue", &r);
    l = json_body(&r);
    cr_assert_eq(cJSON_GetArraySize(json_at(l, "items")), 0, "%s", r.body);
    cJSON_Delete(l);
    http_resp_free(&r);
    sim_stop(&s);
}

Test(sim, malformed_query_values_400, .timeout = SIM_TEST_TIMEOUT_S)
{
    static const char *const paths[] = {
        /* not "a in ()": labels.Parse reads "()" as the value set {""}, which is valid */
        "/api/v1/namespaces/bad/configmaps?labelSelector=a%20in%20(b",
        "/api/v1/namespaces/bad/configmaps?labelSelector=a%3Db%3Dc",
        "/api/v1/namespaces/bad/configmaps?labelSelector=a%20notin",
        "/api/v1/namespaces/bad/configmaps?labelSelector=%3D%3Dx",
        "/api/v1/namespaces/bad/configmaps?fieldSelector=metadata.name",
        "/api/v1/namespaces/bad/configmaps?limit=abc",
        "/api/v1/namespaces/bad/configmaps?watch=1&timeoutSeconds=abc",
        NULL,
    };
    struct srv s;
    struct http_resp r;
    size_t i;

    sim_start(&s, NULL);
    api_make_ns(s.url, "bad");
    char failures[4096] = "";
    size_t used = 0;

    /* Try every input, then report all that were not a 400 BadRequest Status. */
    for (i = 0; paths[i]; i++) {
        cJSON *j;

        get(&s, paths[i], &r);
        j = cJSON_ParseWithLength(r.body, r.body_len);
        if (r.code != 400 || !j || strcmp(json_txt(j, "kind"), "Status") != 0 ||
            strcmp(json_txt(j, "reason"), "BadRequest") != 0) {
            used += (size_t)snprintf(failures + used, sizeof(failures) - used,
                                     "\n  %s -> HTTP %ld %.200s", paths[i], r.code, r.body);
            if (used >= sizeof(failures)) {
                used = sizeof(failures) - 1;
            }
        }
        cJSON_Delete(j);
        http_resp_free(&r);
    }
    cr_assert_eq(used, 0, "expected 400 BadRequest Status for:%s", failures);
    sim_stop(&s);
}

Test(sim, bad_bodies_and_unknown_resources, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct http_resp r;
    char ctype[128];

    sim_start(&s, NULL);
    api_make_ns(s.url, "bad");
    req(&s, "POST", "/api/v1/namespaces/bad/configmaps", "application/json", "{not json", &r);
    expect_status_shape(&r, 400, "BadRequest");
    http_resp_free(&r);
    req(&s, "POST", "/api/v1/namespaces/bad/configmaps", "application/json", "[1,2]", &r);
    cr_assert(r.code == 400 || r.code == 422, "array body: HTTP %ld %s", r.code, r.body);
    http_resp_free(&r);
    req(&s, "PUT", "/api/v1/namespaces/bad/configmaps/x", "application/json", "{\"a\":", &r);
    cr_assert(r.code == 400 || r.code == 404, "truncated PUT body: HTTP %ld %s", r.code, r.body);
    http_resp_free(&r);
    req(&s, "POST", "/api/v1/namespaces/bad/configmaps", "application/x-foo", "{}", &r);
    expect_status_shape(&r, 415, "UnsupportedMediaType");
    http_resp_free(&r);
    req(&s, "POST", "/api/v1/namespaces/bad/configmaps", "application/vnd.kubernetes.protobuf",
        "\x6b\x38\x73", &r);
    cr_assert(r.code == 400 || r.code == 415, "truncated protobuf: HTTP %ld %s", r.code, r.body);
    http_resp_free(&r);

    get(&s, "/api/v1/namespaces/bad/foos", &r);
    expect_status_shape(&r, 404, "NotFound");
    cr_assert(http_resp_header(&r, "Content-Type", ctype, sizeof(ctype)));
    cr_assert_str_eq(ctype, "application/json");
    http_resp_free(&r);
    get(&s, "/apis/nope.example.com/v1/things", &r);
    expect_status_shape(&r, 404, "NotFound");
    http_resp_free(&r);

    /* The server is still healthy. */
    get(&s, "/version", &r);
    cr_assert_eq(r.code, 200);
    http_resp_free(&r);
    sim_stop(&s);
}

Test(sim, oversized_url_header_and_body_rejected, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct http_resp r;
    size_t big = 256 * 1024;
    size_t body_size = 8 * 1024 * 1024;
    char *url = malloc(big + 512);
    char *hdr = malloc(big + 64);
    char *body = malloc(body_size + 256);
    const char *extra[2] = {NULL, NULL};
    size_t n;
    int rc;

    cr_assert(url && hdr && body);
    sim_start(&s, NULL);
    api_make_ns(s.url, "big");

    n = (size_t)snprintf(url, 512, "%s/api/v1/namespaces/big/configmaps?labelSelector=a%%3D",
                         s.url);
    memset(url + n, 'x', big);
    url[n + big] = '\0';
    rc = http_do("GET", url, NULL, NULL, NULL, API_REQ_MS, &r);
    cr_assert_eq(rc, 0, "over-long URL: no response (%d): the server must answer, not drop", rc);
    cr_assert(r.code == 414 || r.code == 431 || r.code == 400, "over-long URL: HTTP %ld", r.code);
    http_resp_free(&r);

    n = (size_t)snprintf(hdr, 64, "X-Big: ");
    memset(hdr + n, 'y', big);
    hdr[n + big] = '\0';
    extra[0] = hdr;
    snprintf(url, 512, "%s/api/v1/namespaces/big/configmaps", s.url);
    rc = http_do("GET", url, NULL, NULL, extra, API_REQ_MS, &r);
    cr_assert_eq(rc, 0, "over-long header: no response (%d)", rc);
    cr_assert(r.code == 431 || r.code == 400 || r.code == 413, "over-long header: HTTP %ld",
              r.code);
    http_resp_free(&r);

    n = (size_t)snprintf(body, 256,
                         "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                         "\"huge\"},\"data\":{\"k\":\"");
    memset(body + n, 'z', body_size);
    snprintf(body + n + body_size, 16, "\"}}");
    rc = http_do("POST", url, "application/json", body, NULL, API_REQ_MS, &r);
    cr_assert_eq(rc, 0, "oversized body: no response (%d)", rc);
    cr_assert_eq(r.code, 413, "oversized body: HTTP %ld %s", r.code, r.body);
    http_resp_free(&r);

    snprintf(url, 512, "%s/version", s.url);
    rc = http_do("GET", url, NULL, NULL, NULL, API_REQ_MS, &r);
    cr_assert_eq(rc, 0);
    cr_assert_eq(r.code, 200, "still serving after the oversized requests");
    http_resp_free(&r);
    free(url);
    free(hdr);
    free(body);
    sim_stop(&s);
}

/* SEMANTICS 1.7: bodies come from Go's json.Encoder.Encode, which ends them with "\n". */
Test(sim, json_bodies_end_with_newline, .timeout = SIM_TEST_TIMEOUT_S)
{
    struct srv s;
    struct http_resp r;

    sim_start(&s, NULL);
    api_make_ns(s.url, "nl");
    api_cm_create(s.url, "nl", "a", NULL, "1", NULL);
    get(&s, "/api/v1/namespaces/nl/configmaps", &r);
    cr_assert(r.body_len > 0 && r.body[r.body_len - 1] == '\n', "LIST body ends with \\n");
    http_resp_free(&r);
    get(&s, "/api/v1/namespaces/nl/configmaps/a", &r);
    cr_assert(r.body_len > 0 && r.body[r.body_len - 1] == '\n', "GET body ends with \\n");
    http_resp_free(&r);
    get(&s, "/api/v1/namespaces/nl/configmaps/zz", &r);
    cr_assert_eq(r.code, 404);
    cr_assert(r.body_len > 0 && r.body[r.body_len - 1] == '\n', "Status body ends with \\n");
    http_resp_free(&r);
    sim_stop(&s);
}

/* ====================================================================================== */
/* /_sim/stats, churn, seeds                                                              */
/* ====================================================================================== */

Test(sim, stats_counters_move, .timeout = SIM_TEST_TIMEOUT_S)
{
    const char *const extra[] = {"--history-events", "1", NULL};
    struct srv s;
    struct http_resp r;
    struct watch *w;
    cJSON *st0, *st1;
    uint64_t rv, deadline;
    char path[256];

    sim_start(&s, extra);
    api_make_ns(s.url, "st");
    rv = api_cm_create(s.url, "st", "a", NULL, "1", NULL);
    st0 = api_sim_stats(s.url);
    cr_assert_eq(json_num(st0, "revision"), rv);
    cr_assert(cJSON_IsObject(json_at(st0, "resources.pods")), "stats for pods");
    cr_assert_eq(json_num(st0, "resources.configmaps.watches_open"), 0);

    get(&s, "/api/v1/namespaces/st/configmaps", &r);
    http_resp_free(&r);
    get(&s, "/api/v1/namespaces/st/configmaps/a", &r);
    http_resp_free(&r);
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/st/configmaps?watch=1&resourceVersion=%" PRIu64
             "&timeoutSeconds=1",
             rv);
    w = api_watch(s.url, path, 200);
    st1 = api_sim_stats(s.url);
    cr_assert_eq(json_num(st1, "resources.configmaps.lists"),
                 json_num(st0, "resources.configmaps.lists") + 1);
    cr_assert_eq(json_num(st1, "resources.configmaps.gets"),
                 json_num(st0, "resources.configmaps.gets") + 1);
    cr_assert_eq(json_num(st1, "resources.configmaps.watches"),
                 json_num(st0, "resources.configmaps.watches") + 1);
    cr_assert_eq(json_num(st1, "resources.configmaps.watches_open"), 1);
    cr_assert_eq(json_num(st1, "resources.pods.lists"), json_num(st0, "resources.pods.lists"));
    cJSON_Delete(st1);

    /* After the server ends the watch, watches_open drops back (bounded wait). */
    cr_assert_eq(watch_wait_end(w, 5000), 0);
    watch_close(w);
    deadline = http_now_ms() + 3000;
    for (;;) {
        uint64_t open;

        st1 = api_sim_stats(s.url);
        open = json_num(st1, "resources.configmaps.watches_open");
        cJSON_Delete(st1);
        if (open == 0) {
            break;
        }
        nap(20);
        cr_assert_lt(http_now_ms(), deadline,
                     "watches_open still %" PRIu64 " 3 s after the "
                     "stream ended",
                     open);
    }

    api_cm_patch(s.url, "st", "a", "{\"data\":{\"k\":\"2\"}}", NULL);
    rv = api_cm_patch(s.url, "st", "a", "{\"data\":{\"k\":\"3\"}}", NULL);
    compact_now(&s);
    st1 = api_sim_stats(s.url);
    cr_assert_eq(json_num(st1, "revision"), rv);
    cr_assert_gt(json_num(st1, "compacted"), json_num(st0, "compacted"));
    cr_assert_leq(json_num(st1, "compacted"), rv);
    cJSON_Delete(st1);
    cJSON_Delete(st0);
    sim_stop(&s);
}

struct kv {
    char key[300];
    uint64_t rv;
};

static int kv_find(struct kv *set, size_t n, const char *key)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (strcmp(set[i].key, key) == 0) {
            return (int)i;
        }
    }
    return -1;
}

static void obj_key(const cJSON *o, char *out, size_t cap)
{
    const char *ns = json_str(o, "metadata.namespace");

    snprintf(out, cap, "%s/%s", ns ? ns : "", json_str(o, "metadata.name"));
}

/* Churn: a LIST at R0 plus the watch from R0 replays to exactly the Exact LIST at the last
 * event's RV; RVs strictly increase; event types agree with the state. */
Test(sim, churn_watch_is_consistent_with_exact_lists, .timeout = SIM_TEST_TIMEOUT_S)
{
    const char *const argv_tail[] = {"--objects", "200",    "--namespaces", "4", "--churn",
                                     "200",       "--seed", "42",           NULL};
    enum { CAP = 4096 };
    struct srv s;
    struct http_resp r;
    struct watch *w;
    struct kv *set = calloc(CAP, sizeof(*set));
    size_t n = 0;
    size_t i;
    uint64_t r0, last = 0;
    char path[256];
    char key[300];
    const cJSON *it;
    cJSON *j;

    cr_assert_not_null(set);
    sim_start_raw(&s, argv_tail);
    get(&s, "/api/v1/pods", &r);
    cr_assert_eq(r.code, 200);
    j = json_body(&r);
    r0 = json_rv(j);
    cJSON_ArrayForEach(it, json_at(j, "items"))
    {
        cr_assert_lt(n, CAP);
        obj_key(it, set[n].key, sizeof(set[n].key));
        set[n].rv = json_rv(it);
        cr_assert_leq(set[n].rv, r0, "item RV <= list RV");
        if (n > 0) {
            cr_assert_lt(strcmp(set[n - 1].key, set[n].key), 0, "key order");
        }
        n++;
    }
    cJSON_Delete(j);
    http_resp_free(&r);
    cr_assert_gt(n, 0, "--objects seeds pods");

    snprintf(path, sizeof(path), "/api/v1/pods?watch=1&resourceVersion=%" PRIu64, r0);
    w = api_watch(s.url, path, 200);
    cr_assert_eq(watch_wait_lines(w, 60, 15000), 0, "churn 200/s produces pod events");
    for (i = 0; i < 60; i++) {
        struct api_ev e;
        int at;

        api_ev_parse(watch_line(w, i, NULL), &e);
        cr_assert_gt(e.rv, last, "RVs strictly increase: %s", watch_line(w, i, NULL));
        last = e.rv;
        obj_key(e.obj, key, sizeof(key));
        at = kv_find(set, n, key);
        if (strcmp(e.type, "ADDED") == 0) {
            cr_assert_lt(at, 0, "ADDED for a key already present: %s", key);
            cr_assert_lt(n, CAP);
            snprintf(set[n].key, sizeof(set[n].key), "%s", key);
            set[n].rv = e.rv;
            n++;
        } else if (strcmp(e.type, "MODIFIED") == 0) {
            cr_assert_geq(at, 0, "MODIFIED for an unknown key: %s", key);
            set[at].rv = e.rv;
        } else if (strcmp(e.type, "DELETED") == 0) {
            cr_assert_geq(at, 0, "DELETED for an unknown key: %s", key);
            set[at] = set[n - 1];
            n--;
        } else {
            cr_assert_fail("unexpected event type %s", e.type);
        }
        api_ev_free(&e);
    }
    watch_close(w);

    snprintf(path, sizeof(path),
             "/api/v1/pods?resourceVersion=%" PRIu64 "&resourceVersionMatch=Exact", last);
    get(&s, path, &r);
    cr_assert_eq(r.code, 200, "Exact at the last event: %ld %s", r.code, r.body);
    j = json_body(&r);
    cr_assert_eq(json_rv(j), last);
    cr_assert_eq((size_t)cJSON_GetArraySize(json_at(j, "items")), n,
                 "LIST@R0 + events = Exact LIST@last (count)");
    cJSON_ArrayForEach(it, json_at(j, "items"))
    {
        int at;

        obj_key(it, key, sizeof(key));
        at = kv_find(set, n, key);
        cr_assert_geq(at, 0, "%s in the Exact list but not in the replayed state", key);
        cr_assert_eq(set[at].rv, json_rv(it), "%s: rv", key);
    }
    cJSON_Delete(j);
    http_resp_free(&r);
    cr_assert_gt(api_sim_stat(s.url, "revision"), r0, "the revision moves under churn");
    free(set);
    sim_stop(&s);
}

/* --churn R writes R pods a second: over 2 s at 20/s the revision moves by about 40 (bounds
 * wide enough for a loaded machine; a pacing more than 3 x too fast or 4 x too slow fails). */
Test(sim, churn_writes_at_its_rate, .timeout = SIM_TEST_TIMEOUT_S)
{
    const char *const argv_tail[] = {"--objects", "10", "--churn", "20", NULL};
    struct srv s;
    uint64_t r0, r1, r2, t1, t2;
    bool ok;

    sim_start_raw(&s, argv_tail);
    r0 = api_sim_stat(s.url, "revision");
    WAIT_FOR(ok, api_sim_stat(s.url, "revision") >= r0 + 3, 10000);
    cr_assert(ok, "churn 20/s writes: revision %" PRIu64 " -> %" PRIu64, r0,
              api_sim_stat(s.url, "revision"));
    t1 = http_now_ms();
    r1 = api_sim_stat(s.url, "revision");
    nap(2000);
    r2 = api_sim_stat(s.url, "revision");
    t2 = http_now_ms();
    cr_assert(r2 - r1 >= 10 && r2 - r1 <= 120,
              "churn 20/s: %" PRIu64 " writes in %" PRIu64 " ms (about 40 expected)", r2 - r1,
              t2 - t1);
    sim_stop(&s);
}

Test(sim, seed_makes_initial_objects_reproducible, .timeout = SIM_TEST_TIMEOUT_S)
{
    const char *const argv_tail[] = {
        "--objects", "30", "--namespaces", "3", "--churn", "0", "--seed", "7", NULL};
    struct srv a, b;
    struct http_resp ra, rb;
    cJSON *ja, *jb;
    const cJSON *ia, *ib;
    char ka[300], kb[300];

    sim_start_raw(&a, argv_tail);
    sim_start_raw(&b, argv_tail);
    get(&a, "/api/v1/pods", &ra);
    get(&b, "/api/v1/pods", &rb);
    ja = json_body(&ra);
    jb = json_body(&rb);
    cr_assert_gt(cJSON_GetArraySize(json_at(ja, "items")), 0, "seeded pods");
    cr_assert_eq(cJSON_GetArraySize(json_at(ja, "items")),
                 cJSON_GetArraySize(json_at(jb, "items")));
    ib = json_at(jb, "items")->child;
    cJSON_ArrayForEach(ia, json_at(ja, "items"))
    {
        obj_key(ia, ka, sizeof(ka));
        obj_key(ib, kb, sizeof(kb));
        cr_assert_str_eq(ka, kb, "same seed, same objects");
        ib = ib->next;
    }
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    http_resp_free(&ra);
    http_resp_free(&rb);
    sim_stop(&a);
    sim_stop(&b);
}
