/*
 * test_k8s_path.c - k8s_path_parse, k8s_list_opts_parse(_ex), k8s_parse_bool,
 * k8s_query_escape and k8s_query_parse, black-box through proxy/k8s_path.h.
 *
 * Expected texts are kube-apiserver's: SEMANTICS.md section 10 vectors 13-21 and 32-34, the
 * apimachinery sources named next to each table (validation.go, runtime/conversion.go,
 * zz_generated.conversion.go, defaults.go, negotiation isPrettyPrint) and the captures in
 * kubernetes issues #101350 (timeoutSeconds=0.1s) and #113939 (legacy watch, bad rv).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/selector.h"
#include "proxy/k8s_path.h"
#include "proxy/kstatus.h"

/* A continue token as the apiserver mints it: {"v":"meta.k8s.io/v1","rv":150,"start":"a\u0000"} */
#define TOKEN_RV150 "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTUwLCJzdGFydCI6ImFcdTAwMDAifQ"

/* ---- helpers ------------------------------------------------------------------------- */

#define MAX_KV 32

/* A query split on '&' and the first '=' (already "decoded": tests write the bytes they
 * mean). "key" without '=' gives a NULL value, as the header allows. */
struct query {
    char buf[20000];
    struct k8s_query_kv kv[MAX_KV];
    size_t n;
};

static void query_init(struct query *q, const char *s)
{
    char *p;

    cr_assert_lt(strlen(s), sizeof(q->buf));
    memcpy(q->buf, s, strlen(s) + 1);
    q->n = 0;
    p = q->buf;
    while (*p != '\0') {
        char *amp = strchr(p, '&');
        char *eq;

        if (amp != NULL) {
            *amp = '\0';
        }
        eq = strchr(p, '=');
        if (eq != NULL) {
            *eq = '\0';
        }
        cr_assert_lt(q->n, MAX_KV);
        q->kv[q->n].key = p;
        q->kv[q->n].value = eq != NULL ? eq + 1 : NULL;
        q->n++;
        if (amp == NULL) {
            break;
        }
        p = amp + 1;
    }
}

/* Criterion's string comparisons must not see NULL. */
static const char *nz(const char *s)
{
    return s != NULL ? s : "(null)";
}

static int parse(const char *qs, bool legacy, struct query *q, struct k8s_list_opts *o,
                 struct kstatus *st)
{
    query_init(q, qs);
    return k8s_list_opts_parse(q->kv, q->n, legacy, o, st);
}

/* Expects a plain error Status (no details). reason NULL = must be absent. */
static void expect_status(const char *qs, bool legacy, int code, const char *reason,
                          const char *message)
{
    struct query q;
    struct k8s_list_opts o;
    struct kstatus st;
    int rc = parse(qs, legacy, &q, &o, &st);

    cr_expect_eq(rc, -EINVAL, "%s: rc %d", qs, rc);
    cr_expect_eq(st.code, code, "%s: code %d", qs, st.code);
    if (reason == NULL) {
        cr_expect_null(st.reason, "%s: reason %s", qs, nz(st.reason));
    } else {
        cr_expect_not_null(st.reason, "%s", qs);
        if (st.reason != NULL) {
            cr_expect_str_eq(st.reason, reason, "%s", qs);
        }
    }
    cr_expect_str_eq(st.message, message, "%s", qs);
    cr_expect_eq(st.n_causes, 0, "%s", qs);
    cr_expect_null(st.group, "%s", qs);
}

struct cause {
    const char *reason;
    const char *message;
    const char *field;
};

/* Expects a 422 Invalid ListOptions with exactly these causes. */
static void expect_invalid(const char *qs, bool legacy, const char *message,
                           const struct cause *causes, size_t n)
{
    struct query q;
    struct k8s_list_opts o;
    struct kstatus st;
    int rc = parse(qs, legacy, &q, &o, &st);

    cr_expect_eq(rc, -EINVAL, "%s", qs);
    cr_expect_eq(st.code, 422, "%s: code %d", qs, st.code);
    cr_expect_str_eq(nz(st.reason), "Invalid", "%s", qs);
    cr_expect_str_eq(st.message, message, "%s", qs);
    cr_expect_str_eq(nz(st.group), "meta.k8s.io", "%s", qs);
    cr_expect_str_eq(nz(st.kind), "ListOptions", "%s", qs);
    cr_expect_null(st.name, "%s", qs);
    cr_expect_eq(st.n_causes, n, "%s: %zu causes", qs, st.n_causes);
    for (size_t i = 0; i < n && i < st.n_causes; i++) {
        cr_expect_str_eq(nz(st.causes[i].reason), causes[i].reason, "%s #%zu", qs, i);
        cr_expect_str_eq(nz(st.causes[i].message), causes[i].message, "%s #%zu", qs, i);
        cr_expect_str_eq(nz(st.causes[i].field), causes[i].field, "%s #%zu", qs, i);
    }
}

static void expect_ok(const char *qs, bool legacy, struct query *q, struct k8s_list_opts *o)
{
    struct kstatus st;
    int rc = parse(qs, legacy, q, o, &st);

    cr_assert_eq(rc, 0, "%s: rc %d, %d %s", qs, rc, st.code, st.message);
}

/* ---- paths --------------------------------------------------------------------------- */

struct path_case {
    const char *path;
    int rc;
    const char *group, *version, *ns, *resource, *name, *sub;
    bool legacy;
};

static const struct path_case path_cases[] = {
    /* core collections, namespaced and cluster-wide */
    {"/api/v1/pods", 0, "", "v1", "", "pods", "", "", false},
    {"/api/v1/nodes", 0, "", "v1", "", "nodes", "", "", false},
    {"/api/v1/namespaces/ns1/pods", 0, "", "v1", "ns1", "pods", "", "", false},
    {"/api/v1/namespaces/ns1/pods/p1", 0, "", "v1", "ns1", "pods", "p1", "", false},
    {"/api/v1/namespaces/ns1/pods/p1/log", 0, "", "v1", "ns1", "pods", "p1", "log", false},
    {"/api/v1/namespaces/ns1/pods/p1/status", 0, "", "v1", "ns1", "pods", "p1", "status", false},
    {"/api/v1/nodes/n1", 0, "", "v1", "", "nodes", "n1", "", false},
    {"/api/v1/nodes/n1/status", 0, "", "v1", "", "nodes", "n1", "status", false},
    /* segments after a subresource are not ours to interpret */
    {"/api/v1/namespaces/ns1/pods/p1/proxy/a/b/c", 0, "", "v1", "ns1", "pods", "p1", "proxy",
     false},
    /* the Namespace object itself */
    {"/api/v1/namespaces", 0, "", "v1", "", "namespaces", "", "", false},
    {"/api/v1/namespaces/ns1", 0, "", "v1", "", "namespaces", "ns1", "", false},
    {"/api/v1/namespaces/ns1/status", 0, "", "v1", "", "namespaces", "ns1", "status", false},
    {"/api/v1/namespaces/ns1/finalize", 0, "", "v1", "", "namespaces", "ns1", "finalize", false},
    /* named groups */
    {"/apis/apps/v1/deployments", 0, "apps", "v1", "", "deployments", "", "", false},
    {"/apis/apps/v1/namespaces/ns1/deployments", 0, "apps", "v1", "ns1", "deployments", "", "",
     false},
    {"/apis/apps/v1/namespaces/ns1/deployments/d1/scale", 0, "apps", "v1", "ns1", "deployments",
     "d1", "scale", false},
    {"/apis/example.com/v1alpha1/namespaces/x/widgets/w", 0, "example.com", "v1alpha1", "x",
     "widgets", "w", "", false},
    {"/apis/rbac.authorization.k8s.io/v1/clusterroles/admin", 0, "rbac.authorization.k8s.io", "v1",
     "", "clusterroles", "admin", "", false},
    /* legacy watch prefix */
    {"/api/v1/watch/pods", 0, "", "v1", "", "pods", "", "", true},
    {"/api/v1/watch/namespaces/ns1/pods", 0, "", "v1", "ns1", "pods", "", "", true},
    {"/api/v1/watch/namespaces/ns1/pods/p1", 0, "", "v1", "ns1", "pods", "p1", "", true},
    {"/api/v1/watch/namespaces", 0, "", "v1", "", "namespaces", "", "", true},
    {"/api/v1/watch/namespaces/ns1", 0, "", "v1", "", "namespaces", "ns1", "", true},
    {"/api/v1/watch/nodes/n1", 0, "", "v1", "", "nodes", "n1", "", true},
    {"/apis/apps/v1/watch/namespaces/ns1/deployments", 0, "apps", "v1", "ns1", "deployments", "",
     "", true},
    /* trailing slashes are trimmed like go-restful >= 3.11 */
    {"/api/v1/pods/", 0, "", "v1", "", "pods", "", "", false},
    {"/api/v1/namespaces/ns1/pods/p1//", 0, "", "v1", "ns1", "pods", "p1", "", false},
    /* not resource paths */
    {"/", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"api/v1/pods", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/api", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/api/", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/api/v1", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/api/v1/", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/apis", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/apis/apps", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/apis/apps/v1", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/apis/apps/v1/", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/version", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/healthz", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/readyz", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/metrics", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/openapi/v2", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/openapi/v3/apis/apps/v1", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/_sim/stats", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/apiz/v1/pods", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/apis2/g/v1/pods", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"//api/v1/pods", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/api/v1/watch", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/api/v1/watch/", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    /* watch routes stop at the name */
    {"/api/v1/watch/namespaces/ns1/pods/p1/status", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL,
     false},
    {"/api/v1/watch/nodes/n1/status", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/api/v1/watch/namespaces/ns1/status", -ENOENT, NULL, NULL, NULL, NULL, NULL, NULL, false},
    /* malformed resource paths */
    {"/api/v1//pods", -EINVAL, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/api//v1/pods", -EINVAL, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/api/v1/namespaces//pods", -EINVAL, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/apis/apps//deployments", -EINVAL, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/api/v1/namespaces/ns1/pods/p1/proxy//x", -EINVAL, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/api/v1/namespaces/../pods", -EINVAL, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/api/v1/namespaces/ns1/pods/.", -EINVAL, NULL, NULL, NULL, NULL, NULL, NULL, false},
    {"/api/v1/namespaces/..", -EINVAL, NULL, NULL, NULL, NULL, NULL, NULL, false},
};

Test(k8s_path, path_table)
{
    cr_assert_geq(sizeof(path_cases) / sizeof(path_cases[0]), 30);
    for (size_t i = 0; i < sizeof(path_cases) / sizeof(path_cases[0]); i++) {
        const struct path_case *c = &path_cases[i];
        struct k8s_path p;
        int rc;

        memset(&p, 0x5a, sizeof(p));
        rc = k8s_path_parse(c->path, &p);
        cr_expect_eq(rc, c->rc, "%s: rc %d, want %d", c->path, rc, c->rc);
        if (rc != 0 || c->rc != 0) {
            /* failures leave a zeroed struct */
            cr_expect_eq(p.resource[0], '\0', "%s", c->path);
            cr_expect_eq(p.legacy_watch, false, "%s", c->path);
            continue;
        }
        cr_expect_str_eq(p.group, c->group, "%s", c->path);
        cr_expect_str_eq(p.version, c->version, "%s", c->path);
        cr_expect_str_eq(p.ns, c->ns, "%s", c->path);
        cr_expect_str_eq(p.resource, c->resource, "%s", c->path);
        cr_expect_str_eq(p.name, c->name, "%s", c->path);
        cr_expect_str_eq(p.subresource, c->sub, "%s", c->path);
        cr_expect_eq(p.legacy_watch, c->legacy, "%s", c->path);
    }
}

Test(k8s_path, null_path_is_enoent)
{
    struct k8s_path p;

    cr_expect_eq(k8s_path_parse(NULL, &p), -ENOENT);
}

/* Builds "/api/v1/namespaces/<ns>/pods/<name>" with segments of the given lengths. */
static void long_path(char *buf, size_t cap, size_t ns_len, size_t name_len, size_t res_len)
{
    char ns[600], name[600], res[600];

    memset(ns, 'n', ns_len);
    ns[ns_len] = '\0';
    memset(name, 'm', name_len);
    name[name_len] = '\0';
    memset(res, 'r', res_len);
    res[res_len] = '\0';
    snprintf(buf, cap, "/api/v1/namespaces/%s/%s/%s", ns, res, name);
}

Test(k8s_path, segment_limits)
{
    char path[2048];
    struct k8s_path p;

    /* names and namespaces: 253 bytes fit (K8S_NAME_MAX - 1), 254 do not */
    long_path(path, sizeof(path), K8S_NAME_MAX - 1, K8S_NAME_MAX - 1, 4);
    cr_assert_eq(k8s_path_parse(path, &p), 0);
    cr_expect_eq(strlen(p.ns), K8S_NAME_MAX - 1);
    cr_expect_eq(strlen(p.name), K8S_NAME_MAX - 1);
    long_path(path, sizeof(path), K8S_NAME_MAX, 3, 4);
    cr_expect_eq(k8s_path_parse(path, &p), -EINVAL);
    long_path(path, sizeof(path), 3, K8S_NAME_MAX, 4);
    cr_expect_eq(k8s_path_parse(path, &p), -EINVAL);
    long_path(path, sizeof(path), 3, 500, 4);
    cr_expect_eq(k8s_path_parse(path, &p), -EINVAL);
    /* resource: K8S_SEG_MAX - 1 fit */
    long_path(path, sizeof(path), 3, 3, K8S_SEG_MAX - 1);
    cr_expect_eq(k8s_path_parse(path, &p), 0);
    long_path(path, sizeof(path), 3, 3, K8S_SEG_MAX);
    cr_expect_eq(k8s_path_parse(path, &p), -EINVAL);
}

Test(k8s_path, long_group_version_and_subresource)
{
    char path[4096], seg[400];
    struct k8s_path p;

    memset(seg, 'g', 300);
    seg[300] = '\0';
    snprintf(path, sizeof(path), "/apis/%s/v1/widgets", seg);
    cr_expect_eq(k8s_path_parse(path, &p), -EINVAL);
    snprintf(path, sizeof(path), "/apis/example.com/%s/widgets", seg);
    cr_expect_eq(k8s_path_parse(path, &p), -EINVAL);
    snprintf(path, sizeof(path), "/api/%s/pods", seg);
    cr_expect_eq(k8s_path_parse(path, &p), -EINVAL);
    snprintf(path, sizeof(path), "/api/v1/nodes/n1/%s", seg);
    cr_expect_eq(k8s_path_parse(path, &p), -EINVAL);
    /* a long tail after the subresource is not ours: accepted */
    snprintf(path, sizeof(path), "/api/v1/namespaces/a/pods/p/proxy/%s/%s", seg, seg);
    cr_expect_eq(k8s_path_parse(path, &p), 0);
    cr_expect_str_eq(p.subresource, "proxy");
    /* a non-resource path stays -ENOENT however long */
    snprintf(path, sizeof(path), "/openapi/%s", seg);
    cr_expect_eq(k8s_path_parse(path, &p), -ENOENT);
}

/* ---- ListOptions booleans (runtime.Convert_Slice_string_To_bool) ------------------- */

struct bool_case {
    const char *value; /* NULL: "watch" without '=' */
    bool want;
};

/* "0" and EqualFold(v, "false") are false; everything else, "" included, is true. Python
 * sends "True"; "yes" and "maybe" are not errors in kube-apiserver, they are true. */
static const struct bool_case bool_cases[] = {
    {"true", true},
    {"True", true},
    {"TRUE", true},
    {"1", true},
    {"t", true},
    {"yes", true},
    {"maybe", true},
    {"", true},
    {NULL, true},
    {"f", true},
    {"no", true},
    {"00", true},
    {"false ", true},
    {"falsey", true},
    {"fals", true},
    {"0", false},
    {"false", false},
    {"False", false},
    {"FALSE", false},
    {"fAlSe", false},
    {"fal\xc5\xbf"
     "e",
     false}, /* U+017F folds to 's' in strings.EqualFold */
};

Test(k8s_path, list_bools_follow_convert_slice_string_to_bool)
{
    for (size_t i = 0; i < sizeof(bool_cases) / sizeof(bool_cases[0]); i++) {
        const struct bool_case *c = &bool_cases[i];
        char qs[128];
        struct query q;
        struct k8s_list_opts o;

        /* watch (with resourceVersion=5 so that nothing is defaulted) */
        if (c->value == NULL) {
            snprintf(qs, sizeof(qs), "resourceVersion=5&watch");
        } else {
            snprintf(qs, sizeof(qs), "resourceVersion=5&watch=%s", c->value);
        }
        expect_ok(qs, false, &q, &o);
        cr_expect_eq(o.watch, c->want, "%s", qs);
        cr_expect_eq(o.send_initial_defaulted, false, "%s", qs);

        /* allowWatchBookmarks */
        if (c->value == NULL) {
            snprintf(qs, sizeof(qs), "allowWatchBookmarks");
        } else {
            snprintf(qs, sizeof(qs), "allowWatchBookmarks=%s", c->value);
        }
        expect_ok(qs, false, &q, &o);
        cr_expect_eq(o.allow_bookmarks, c->want, "%s", qs);

        /* sendInitialEvents (a *bool: present means set, to this value) */
        if (c->value == NULL) {
            snprintf(qs, sizeof(qs), "watch=1&resourceVersionMatch=NotOlderThan&sendInitialEvents");
        } else {
            snprintf(qs, sizeof(qs),
                     "watch=1&resourceVersionMatch=NotOlderThan&sendInitialEvents=%s", c->value);
        }
        expect_ok(qs, false, &q, &o);
        cr_expect_eq(o.send_initial_events, c->want ? 1 : 0, "%s", qs);
        cr_expect_eq(o.send_initial_defaulted, false, "%s", qs);
    }
}

Test(k8s_path, python_client_watch_true)
{
    struct query q;
    struct k8s_list_opts o;

    /* python3-kubernetes: watch=True&resourceVersion=<rv>&allowWatchBookmarks=True */
    expect_ok("watch=True&resourceVersion=101&allowWatchBookmarks=True", false, &q, &o);
    cr_expect(o.watch);
    cr_expect(o.allow_bookmarks);
    cr_expect(o.has_rv);
    cr_expect_str_eq(o.rv_str, "101");
    cr_expect(o.rv_ok);
    cr_expect_eq(o.rv, 101);
    cr_expect_eq(o.send_initial_events, -1);
    cr_expect_eq(o.rvm, RVM_UNSET);
}

/* ---- pretty (isPrettyPrint: strconv.ParseBool, errors mean false) ------------------- */

Test(k8s_path, pretty)
{
    static const struct {
        const char *qs;
        int want;
    } cases[] = {
        {"", -1},
        {"pretty", -1},
        {"pretty=", -1},
        {"pretty=true", 1},
        {"pretty=1", 1},
        {"pretty=T", 1},
        {"pretty=True", 1},
        {"pretty=false", 0},
        {"pretty=0", 0},
        {"pretty=one-armed", 0},
        {"pretty=yes", 0},
        {"pretty=tRuE", 0},
        {"pretty=1&pretty=0", 1},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct query q;
        struct k8s_list_opts o;

        expect_ok(cases[i].qs, false, &q, &o);
        cr_expect_eq(o.pretty, cases[i].want, "%s: %d", cases[i].qs, o.pretty);
    }
}

/* ---- plain decoding ------------------------------------------------------------------ */

Test(k8s_path, empty_query_is_a_plain_list)
{
    struct query q;
    struct k8s_list_opts o;

    expect_ok("", false, &q, &o);
    cr_expect_not(o.watch);
    cr_expect_not(o.has_rv);
    cr_expect_str_eq(o.rv_str, "");
    cr_expect(o.rv_ok);
    cr_expect_eq(o.rv, 0);
    cr_expect_eq(o.rvm, RVM_UNSET);
    cr_expect_eq(o.limit, 0);
    cr_expect_null(o.continue_tok);
    cr_expect_null(o.label_selector);
    cr_expect_null(o.field_selector);
    cr_expect_not(o.allow_bookmarks);
    cr_expect_eq(o.send_initial_events, -1);
    cr_expect_not(o.send_initial_defaulted);
    cr_expect_eq(o.timeout_seconds, 0);
    cr_expect_eq(o.pretty, -1);
}

Test(k8s_path, kubectl_and_client_go_queries)
{
    struct query q;
    struct k8s_list_opts o;

    /* kubectl get pods -w: list then watch from the list RV */
    expect_ok("limit=500", false, &q, &o);
    cr_expect_not(o.watch);
    cr_expect_eq(o.limit, 500);
    expect_ok("resourceVersion=12345&watch=true", false, &q, &o);
    cr_expect(o.watch);
    cr_expect_eq(o.rv, 12345);
    cr_expect_eq(o.send_initial_events, -1);
    /* client-go reflector, classic */
    expect_ok("limit=500&resourceVersion=0", false, &q, &o);
    cr_expect_eq(o.limit, 500);
    cr_expect(o.has_rv);
    cr_expect_eq(o.rv, 0);
    expect_ok("allowWatchBookmarks=true&resourceVersion=777&timeoutSeconds=431&watch=true", false,
              &q, &o);
    cr_expect(o.watch);
    cr_expect(o.allow_bookmarks);
    cr_expect_eq(o.timeout_seconds, 431);
    cr_expect_eq(o.rv, 777);
    /* client-go watch-list */
    expect_ok("allowWatchBookmarks=true&resourceVersion=&resourceVersionMatch=NotOlderThan&"
              "sendInitialEvents=true&timeoutSeconds=300&watch=true",
              false, &q, &o);
    cr_expect(o.watch);
    cr_expect(o.has_rv);
    cr_expect_str_eq(o.rv_str, "");
    cr_expect_eq(o.rvm, RVM_NOT_OLDER_THAN);
    cr_expect_eq(o.send_initial_events, 1);
    cr_expect_not(o.send_initial_defaulted);
    /* selectors and continue are borrowed from the query */
    expect_ok("labelSelector=app=x&fieldSelector=metadata.name=a&continue=" TOKEN_RV150, false, &q,
              &o);
    cr_expect_str_eq(o.label_selector, "app=x");
    cr_expect_str_eq(o.field_selector, "metadata.name=a");
    cr_expect_str_eq(o.continue_tok, TOKEN_RV150);
    cr_expect(o.continue_tok >= q.buf && o.continue_tok < q.buf + sizeof(q.buf));
}

Test(k8s_path, unknown_params_are_ignored)
{
    struct query q;
    struct k8s_list_opts o;

    expect_ok("timeout=32s&fieldManager=x&propagationPolicy=Foreground&dryRun=All&foo&"
              "Watch=true&LIMIT=abc&includeObject=Object",
              false, &q, &o);
    cr_expect_not(o.watch); /* keys are case-sensitive */
    cr_expect_eq(o.limit, 0);
}

Test(k8s_path, first_occurrence_wins)
{
    struct query q;
    struct k8s_list_opts o;

    expect_ok("limit=5&limit=abc", false, &q, &o);
    cr_expect_eq(o.limit, 5);
    expect_status("limit=abc&limit=5", false, 400, "BadRequest",
                  "strconv.ParseInt: parsing \"abc\": invalid syntax");
    expect_ok("watch=false&watch=true", false, &q, &o);
    cr_expect_not(o.watch);
    expect_ok("resourceVersion=7&resourceVersion=abc", false, &q, &o);
    cr_expect_eq(o.rv, 7);
    expect_ok("labelSelector=a=b&labelSelector=(((", false, &q, &o);
    cr_expect_str_eq(o.label_selector, "a=b");
    expect_ok("continue=&continue=garbage!!", false, &q, &o);
    cr_expect_null(o.continue_tok);
    expect_ok("resourceVersionMatch=&resourceVersionMatch=Foo", false, &q, &o);
    cr_expect_eq(o.rvm, RVM_UNSET);
}

/* ---- integers (strconv.ParseInt via runtime.Convert_Slice_string_To_int64) --------- */

Test(k8s_path, integers)
{
    static const struct {
        const char *qs;
        int64_t limit;
    } ok[] = {
        {"limit=0", 0},
        {"limit=-1", -1},
        {"limit=+5", 5},
        {"limit=007", 7},
        {"limit=9223372036854775807", INT64_MAX},
        {"limit=-9223372036854775808", INT64_MIN},
    };
    static const struct {
        const char *qs;
        const char *msg;
    } bad[] = {
        {"limit=abc", "strconv.ParseInt: parsing \"abc\": invalid syntax"},
        {"limit=", "strconv.ParseInt: parsing \"\": invalid syntax"},
        {"limit", "strconv.ParseInt: parsing \"\": invalid syntax"},
        {"limit=+", "strconv.ParseInt: parsing \"+\": invalid syntax"},
        {"limit=-", "strconv.ParseInt: parsing \"-\": invalid syntax"},
        {"limit=1_000", "strconv.ParseInt: parsing \"1_000\": invalid syntax"},
        {"limit=0x10", "strconv.ParseInt: parsing \"0x10\": invalid syntax"},
        {"limit= 5", "strconv.ParseInt: parsing \" 5\": invalid syntax"},
        {"limit=5.0", "strconv.ParseInt: parsing \"5.0\": invalid syntax"},
        {"limit=a\"b\\c", "strconv.ParseInt: parsing \"a\\\"b\\\\c\": invalid syntax"},
        {"limit=\t\x01\x7f", "strconv.ParseInt: parsing \"\\t\\x01\\x7f\": invalid syntax"},
        {"limit=\xff\xc3\xa9", "strconv.ParseInt: parsing \"\\xff\xc3\xa9\": invalid syntax"},
        {"limit=9223372036854775808",
         "strconv.ParseInt: parsing \"9223372036854775808\": value out of range"},
        {"limit=-9223372036854775809",
         "strconv.ParseInt: parsing \"-9223372036854775809\": value out of range"},
        {"limit=99999999999999999999999",
         "strconv.ParseInt: parsing \"99999999999999999999999\": value out of range"},
        /* Go reports the overflow it meets before the bad digit */
        {"limit=99999999999999999999x",
         "strconv.ParseInt: parsing \"99999999999999999999x\": value out of range"},
        {"limit=1x99999999999999999999",
         "strconv.ParseInt: parsing \"1x99999999999999999999\": invalid syntax"},
        /* the exact capture of kubernetes#101350 */
        {"timeoutSeconds=0.1s", "strconv.ParseInt: parsing \"0.1s\": invalid syntax"},
        /* k8s_path.c's own IsPrint called these printable; Go's escapes them */
        {"limit=\xef\xb7\x90", "strconv.ParseInt: parsing \"\\ufdd0\": invalid syntax"},
        {"limit=\xe0\xa3\xa2", "strconv.ParseInt: parsing \"\\u08e2\": invalid syntax"},
    };

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        struct query q;
        struct k8s_list_opts o;

        expect_ok(ok[i].qs, false, &q, &o);
        cr_expect_eq(o.limit, ok[i].limit, "%s", ok[i].qs);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        expect_status(bad[i].qs, false, 400, "BadRequest", bad[i].msg);
        expect_status(bad[i].qs, true, 400, "BadRequest", bad[i].msg);
    }
}

Test(k8s_path, timeout_seconds)
{
    struct query q;
    struct k8s_list_opts o;

    expect_ok("watch=1&resourceVersion=5&timeoutSeconds=10", false, &q, &o);
    cr_expect_eq(o.timeout_seconds, 10);
    /* negative: no validation in the apiserver, the watch just ends at once */
    expect_ok("watch=1&resourceVersion=5&timeoutSeconds=-5", false, &q, &o);
    cr_expect_eq(o.timeout_seconds, -5);
    expect_ok("timeoutSeconds=0", false, &q, &o);
    cr_expect_eq(o.timeout_seconds, 0);
}

/* ---- SEMANTICS section 10 vectors ---------------------------------------------------- */

Test(k8s_path, vector_13_garbage_continue)
{
    struct query q;
    struct k8s_list_opts o;
    struct kstatus st;
    static const char pfx[] = "invalid continue token: continue key is not valid:";

    cr_assert_eq(parse("continue=garbage!!", false, &q, &o, &st), -EINVAL);
    cr_expect_eq(st.code, 400);
    cr_expect_str_eq(nz(st.reason), "BadRequest");
    cr_expect_eq(strncmp(st.message, pfx, strlen(pfx)), 0, "%s", st.message);
    cr_expect_eq(st.n_causes, 0);
}

Test(k8s_path, vector_14_continue_with_rv)
{
    struct query q;
    struct k8s_list_opts o;

    expect_status("continue=" TOKEN_RV150 "&resourceVersion=150", false, 400, "BadRequest",
                  "specifying resource version is not allowed when using continue");
    /* "0" and "" are accepted with a continue token */
    expect_ok("limit=2&continue=" TOKEN_RV150 "&resourceVersion=0", false, &q, &o);
    cr_expect_str_eq(o.continue_tok, TOKEN_RV150);
    expect_ok("limit=2&continue=" TOKEN_RV150 "&resourceVersion=", false, &q, &o);
    /* with a continue token the rv is never parsed: "abc" is the continue+rv error */
    expect_status("continue=" TOKEN_RV150 "&resourceVersion=abc", false, 400, "BadRequest",
                  "specifying resource version is not allowed when using continue");
}

Test(k8s_path, vector_15_rvm_without_rv)
{
    static const struct cause c[] = {
        {"FieldValueForbidden",
         "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
         "resourceVersionMatch"},
    };

    expect_invalid("resourceVersionMatch=Exact", false,
                   "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: "
                   "resourceVersionMatch is forbidden unless resourceVersion is provided",
                   c, 1);
    /* resourceVersion= (present but empty) is still "not provided" */
    expect_invalid("resourceVersion=&resourceVersionMatch=NotOlderThan", false,
                   "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: "
                   "resourceVersionMatch is forbidden unless resourceVersion is provided",
                   c, 1);
}

Test(k8s_path, vector_15_full_body)
{
    static const char want[] =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"ListOptions.meta.k8s.io \\\"\\\" is invalid: resourceVersionMatch: "
        "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided\","
        "\"reason\":\"Invalid\",\"details\":{\"group\":\"meta.k8s.io\",\"kind\":\"ListOptions\","
        "\"causes\":[{\"reason\":\"FieldValueForbidden\",\"message\":\"Forbidden: "
        "resourceVersionMatch is forbidden unless resourceVersion is provided\",\"field\":"
        "\"resourceVersionMatch\"}]},\"code\":422}";
    struct query q;
    struct k8s_list_opts o;
    struct kstatus st;
    char body[2048];
    size_t len;

    cr_assert_eq(parse("resourceVersionMatch=Exact", false, &q, &o, &st), -EINVAL);
    len = kstatus_json(&st, body, sizeof(body));
    cr_expect_eq(len, strlen(want));
    cr_expect_str_eq(body, want);
}

Test(k8s_path, vector_16_exact_at_zero)
{
    static const struct cause c[] = {
        {"FieldValueForbidden",
         "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
         "resourceVersionMatch"},
    };

    expect_invalid("resourceVersion=0&resourceVersionMatch=Exact", false,
                   "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: "
                   "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                   c, 1);
}

Test(k8s_path, vector_17_unsupported_rvm)
{
    static const struct cause c[] = {
        {"FieldValueNotSupported",
         "Unsupported value: \"Foo\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
         "resourceVersionMatch"},
    };

    expect_invalid("resourceVersion=1&resourceVersionMatch=Foo", false,
                   "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Unsupported "
                   "value: \"Foo\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
                   c, 1);
}

Test(k8s_path, vector_17_full_body_keeps_cause)
{
    struct query q;
    struct k8s_list_opts o;
    struct kstatus st;
    char body[2048];

    cr_assert_eq(parse("resourceVersion=1&resourceVersionMatch=Foo", false, &q, &o, &st), -EINVAL);
    kstatus_json(&st, body, sizeof(body));
    cr_expect_not_null(strstr(body, "\"causes\":[{\"reason\":\"FieldValueNotSupported\","
                                    "\"message\":\"Unsupported value: \\\"Foo\\\": supported "
                                    "values: \\\"Exact\\\", \\\"NotOlderThan\\\", \\\"\\\"\","
                                    "\"field\":\"resourceVersionMatch\"}]"),
                       "%s", body);
}

Test(k8s_path, vector_18_invalid_rv_list)
{
    expect_status("resourceVersion=abc", false, 400, "BadRequest",
                  "invalid resource version: resourceVersion: Invalid value: \"abc\": "
                  "strconv.ParseUint: parsing \"abc\": invalid syntax");
    expect_status("resourceVersion=-1&limit=5", false, 400, "BadRequest",
                  "invalid resource version: resourceVersion: Invalid value: \"-1\": "
                  "strconv.ParseUint: parsing \"-1\": invalid syntax");
    expect_status("resourceVersion=18446744073709551616", false, 400, "BadRequest",
                  "invalid resource version: resourceVersion: Invalid value: "
                  "\"18446744073709551616\": strconv.ParseUint: parsing "
                  "\"18446744073709551616\": value out of range");
}

/* A field-label hook for pods (SEMANTICS 7.1; pkg/apis/core/v1/conversion.go). */
static int pods_fields(void *ctx, const struct selector *fields, struct kstatus *st)
{
    static const char *const known[] = {
        "metadata.name",
        "metadata.namespace",
        "spec.nodeName",
        "spec.host",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.podIPs",
        "status.nominatedNodeName",
    };
    int *calls = ctx;

    (*calls)++;
    for (size_t i = 0; i < selector_count(fields); i++) {
        const char *f = selector_field(fields, i);
        bool ok = false;

        for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++) {
            ok = ok || strcmp(f, known[k]) == 0;
        }
        if (!ok) {
            kstatus_set(st, 400, "BadRequest", "field label not supported: %s", f);
            return -EINVAL;
        }
    }
    return 0;
}

static int parse_pods(const char *qs, bool legacy, struct query *q, struct k8s_list_opts *o,
                      struct kstatus *st, int *calls)
{
    query_init(q, qs);
    return k8s_list_opts_parse_ex(q->kv, q->n, legacy, pods_fields, calls, o, st);
}

Test(k8s_path, vector_19_field_label_hook)
{
    struct query q;
    struct k8s_list_opts o;
    struct kstatus st;
    int calls = 0;

    cr_assert_eq(parse_pods("fieldSelector=spec.foo=bar", false, &q, &o, &st, &calls), -EINVAL);
    cr_expect_eq(calls, 1);
    cr_expect_eq(st.code, 400);
    cr_expect_str_eq(nz(st.reason), "BadRequest");
    cr_expect_str_eq(st.message, "field label not supported: spec.foo");
    /* without a hook the same query is fine here (the caller checks later, or forwards) */
    expect_ok("fieldSelector=spec.foo=bar", false, &q, &o);
}

Test(k8s_path, vector_20_two_field_terms)
{
    struct query q;
    struct k8s_list_opts o;
    struct kstatus st;
    int calls = 0;

    cr_assert_eq(parse_pods("fieldSelector=status.phase=Running,spec.nodeName=n1", false, &q, &o,
                            &st, &calls),
                 0, "%s", st.message);
    cr_expect_eq(calls, 1);
    cr_expect_str_eq(o.field_selector, "status.phase=Running,spec.nodeName=n1");
    /* the hook runs once even with no field selector */
    calls = 0;
    cr_assert_eq(parse_pods("", false, &q, &o, &st, &calls), 0);
    cr_expect_eq(calls, 1);
}

Test(k8s_path, vector_21_send_initial_events_on_list)
{
    static const struct cause c[] = {
        {"FieldValueForbidden", "Forbidden: sendInitialEvents is forbidden for list",
         "sendInitialEvents"},
    };

    expect_invalid("sendInitialEvents=true", false,
                   "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: "
                   "sendInitialEvents is forbidden for list",
                   c, 1);
    /* the pointer is set whatever the value */
    expect_invalid("sendInitialEvents=false", false,
                   "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: "
                   "sendInitialEvents is forbidden for list",
                   c, 1);
}

Test(k8s_path, vector_32_watch_sie_without_rvm)
{
    static const struct cause c[] = {
        {"FieldValueForbidden",
         "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
         "resourceVersionMatch"},
    };

    expect_invalid("watch=1&sendInitialEvents=true", false,
                   "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: "
                   "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                   c, 1);
}

Test(k8s_path, vector_33_watch_rvm_without_sie)
{
    static const struct cause c[] = {
        {"FieldValueForbidden",
         "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
         "provided",
         "resourceVersionMatch"},
    };

    expect_invalid("watch=1&resourceVersion=150&resourceVersionMatch=NotOlderThan", false,
                   "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: "
                   "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                   "provided",
                   c, 1);
}

Test(k8s_path, vector_34_invalid_rv_watch_is_500)
{
    expect_status("watch=1&resourceVersion=abc", false, 500, NULL,
                  "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": "
                  "invalid syntax");
    /* legacy prefix: kubernetes#113939's capture (pretty, limit and bookmarks play no part) */
    expect_status("pretty=one-armed&resourceVersion=cool&limit=58&allowWatchBookmarks=false", true,
                  500, NULL,
                  "resourceVersion: Invalid value: \"cool\": strconv.ParseUint: parsing "
                  "\"cool\": invalid syntax");
    /* a watch ignores continue: the rv is parsed, not the token */
    expect_status("watch=1&continue=garbage!!&resourceVersion=x", false, 500, NULL,
                  "resourceVersion: Invalid value: \"x\": strconv.ParseUint: parsing \"x\": "
                  "invalid syntax");
}

Test(k8s_path, vector_34_full_body_has_no_reason)
{
    static const char want[] =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"resourceVersion: Invalid value: \\\"abc\\\": strconv.ParseUint: parsing "
        "\\\"abc\\\": invalid syntax\",\"code\":500}";
    struct query q;
    struct k8s_list_opts o;
    struct kstatus st;
    char body[1024];

    cr_assert_eq(parse("watch=1&resourceVersion=abc", false, &q, &o, &st), -EINVAL);
    kstatus_json(&st, body, sizeof(body));
    cr_expect_str_eq(body, want);
}

/* ---- more ValidateListOptions (validation.go) ---------------------------------------- */

Test(k8s_path, list_validation_aggregates)
{
    static const struct cause c3[] = {
        {"FieldValueForbidden",
         "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
         "resourceVersionMatch"},
        {"FieldValueForbidden",
         "Forbidden: resourceVersionMatch is forbidden when continue is provided",
         "resourceVersionMatch"},
        {"FieldValueNotSupported",
         "Unsupported value: \"Foo\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
         "resourceVersionMatch"},
        {"FieldValueForbidden", "Forbidden: sendInitialEvents is forbidden for list",
         "sendInitialEvents"},
    };
    static const struct cause c2[] = {
        {"FieldValueForbidden",
         "Forbidden: resourceVersionMatch is forbidden when continue is provided",
         "resourceVersionMatch"},
        {"FieldValueForbidden",
         "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
         "resourceVersionMatch"},
    };

    expect_invalid("resourceVersionMatch=Foo&continue=x&sendInitialEvents=1", false,
                   "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: "
                   "resourceVersionMatch is forbidden unless resourceVersion is provided, "
                   "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when "
                   "continue is provided, resourceVersionMatch: Unsupported value: \"Foo\": "
                   "supported values: \"Exact\", \"NotOlderThan\", \"\", sendInitialEvents: "
                   "Forbidden: sendInitialEvents is forbidden for list]",
                   c3, 4);
    expect_invalid("resourceVersionMatch=Exact&resourceVersion=0&continue=x", false,
                   "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: "
                   "resourceVersionMatch is forbidden when continue is provided, "
                   "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is "
                   "forbidden for resourceVersion \"0\"]",
                   c2, 2);
}

Test(k8s_path, list_rvm_accepted)
{
    struct query q;
    struct k8s_list_opts o;

    expect_ok("resourceVersion=150&resourceVersionMatch=Exact", false, &q, &o);
    cr_expect_eq(o.rvm, RVM_EXACT);
    cr_expect_eq(o.rv, 150);
    expect_ok("resourceVersion=0&resourceVersionMatch=NotOlderThan&limit=2", false, &q, &o);
    cr_expect_eq(o.rvm, RVM_NOT_OLDER_THAN);
    cr_expect_eq(o.limit, 2);
    /* case matters */
    expect_invalid("resourceVersion=1&resourceVersionMatch=exact", false,
                   "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Unsupported "
                   "value: \"exact\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
                   (const struct cause[]){{"FieldValueNotSupported",
                                           "Unsupported value: \"exact\": supported values: "
                                           "\"Exact\", \"NotOlderThan\", \"\"",
                                           "resourceVersionMatch"}},
                   1);
}

Test(k8s_path, watch_validation)
{
    static const struct cause exact[] = {
        {"FieldValueForbidden",
         "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
         "resourceVersionMatch"},
        {"FieldValueNotSupported",
         "Unsupported value: \"Exact\": supported values: "
         "\"NotOlderThan\"",
         "resourceVersionMatch"},
    };
    static const struct cause cont[] = {
        {"FieldValueForbidden",
         "Forbidden: resourceVersionMatch is forbidden when continue is provided",
         "resourceVersionMatch"},
    };
    static const struct cause all[] = {
        {"FieldValueForbidden",
         "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
         "provided",
         "resourceVersionMatch"},
        {"FieldValueNotSupported",
         "Unsupported value: \"Exact\": supported values: "
         "\"NotOlderThan\"",
         "resourceVersionMatch"},
        {"FieldValueForbidden",
         "Forbidden: resourceVersionMatch is forbidden when continue is provided",
         "resourceVersionMatch"},
    };

    /* validation_test.go "watch-sendInitialEvents-with-exact-resourceversionmatch-forbidden" */
    expect_invalid("watch=true&sendInitialEvents=true&resourceVersionMatch=Exact&"
                   "allowWatchBookmarks=true",
                   false,
                   "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: "
                   "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, "
                   "resourceVersionMatch: Unsupported value: \"Exact\": supported values: "
                   "\"NotOlderThan\"]",
                   exact, 2);
    expect_invalid("watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&"
                   "continue=123",
                   false,
                   "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: "
                   "resourceVersionMatch is forbidden when continue is provided",
                   cont, 1);
    expect_invalid("watch=true&resourceVersion=5&resourceVersionMatch=Exact&continue=1", false,
                   "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: "
                   "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                   "provided, resourceVersionMatch: Unsupported value: \"Exact\": supported "
                   "values: \"NotOlderThan\", resourceVersionMatch: Forbidden: "
                   "resourceVersionMatch is forbidden when continue is provided]",
                   all, 3);
}

Test(k8s_path, watch_ignores_limit_and_continue)
{
    struct query q;
    struct k8s_list_opts o;

    expect_ok("watch=1&resourceVersion=5&limit=2&continue=garbage!!", false, &q, &o);
    cr_expect(o.watch);
    cr_expect_eq(o.limit, 2);
    cr_expect_str_eq(o.continue_tok, "garbage!!");
}

/* ---- defaulting (defaults.go SetListOptionsDefaults, WatchList on) ----------------- */

Test(k8s_path, watch_defaulting)
{
    static const struct {
        const char *qs;
        bool legacy;
        bool defaulted;
        int sie;
        enum k8s_rvm rvm;
    } cases[] = {
        {"watch=true", false, true, 1, RVM_NOT_OLDER_THAN},
        {"watch=true&resourceVersion=0", false, true, 1, RVM_NOT_OLDER_THAN},
        {"watch=true&resourceVersion=", false, true, 1, RVM_NOT_OLDER_THAN},
        {"watch=true&resourceVersion=0&allowWatchBookmarks=true", false, true, 1,
         RVM_NOT_OLDER_THAN},
        {"watch=true&resourceVersion=00", false, false, -1, RVM_UNSET},
        {"watch=true&resourceVersion=5", false, false, -1, RVM_UNSET},
        {"watch=true&sendInitialEvents=false&resourceVersionMatch=NotOlderThan", false, false, 0,
         RVM_NOT_OLDER_THAN},
        {"watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&"
         "resourceVersion=50",
         false, false, 1, RVM_NOT_OLDER_THAN},
        /* the legacy prefix sets forceWatch, not opts.Watch: no defaulting... */
        {"", true, false, -1, RVM_UNSET},
        {"resourceVersion=0", true, false, -1, RVM_UNSET},
        /* ...unless the query says watch=true too */
        {"watch=true", true, true, 1, RVM_NOT_OLDER_THAN},
        /* a LIST is never defaulted */
        {"resourceVersion=0", false, false, -1, RVM_UNSET},
        {"watch=false", false, false, -1, RVM_UNSET},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct query q;
        struct k8s_list_opts o;

        expect_ok(cases[i].qs, cases[i].legacy, &q, &o);
        cr_expect_eq(o.send_initial_defaulted, cases[i].defaulted, "%s", cases[i].qs);
        cr_expect_eq(o.send_initial_events, cases[i].sie, "%s", cases[i].qs);
        cr_expect_eq(o.rvm, cases[i].rvm, "%s", cases[i].qs);
        cr_expect_eq(o.allow_bookmarks, strstr(cases[i].qs, "allowWatchBookmarks") != NULL,
                     "%s: bookmarks are never defaulted", cases[i].qs);
    }
}

Test(k8s_path, legacy_watch_uses_list_rules)
{
    static const struct cause c[] = {
        {"FieldValueForbidden", "Forbidden: sendInitialEvents is forbidden for list",
         "sendInitialEvents"},
    };
    struct query q;
    struct k8s_list_opts o;

    expect_ok("resourceVersion=5", true, &q, &o);
    cr_expect(o.watch);
    cr_expect_eq(o.rv, 5);
    /* get.go validates opts.Watch (false here): the list rules apply */
    expect_invalid("sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=1",
                   true,
                   "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: "
                   "sendInitialEvents is forbidden for list",
                   c, 1);
    /* and a list-legal Exact passes through to the watch */
    expect_ok("resourceVersion=5&resourceVersionMatch=Exact", true, &q, &o);
    cr_expect(o.watch);
    cr_expect_eq(o.rvm, RVM_EXACT);
}

/* ---- which error wins ---------------------------------------------------------------- */

Test(k8s_path, order_decode_before_everything)
{
    /* url.Values -> v1 order: timeoutSeconds before limit */
    expect_status("limit=x&timeoutSeconds=y", false, 400, "BadRequest",
                  "strconv.ParseInt: parsing \"y\": invalid syntax");
    /* ints (url -> v1) before selectors (v1 -> internal) */
    expect_status("labelSelector=a=b)&limit=q", false, 400, "BadRequest",
                  "strconv.ParseInt: parsing \"q\": invalid syntax");
    /* decoding before validation and storage */
    expect_status("limit=abc&resourceVersionMatch=Foo&resourceVersion=x", false, 400, "BadRequest",
                  "strconv.ParseInt: parsing \"abc\": invalid syntax");
    expect_status("watch=1&limit=abc&resourceVersion=x", false, 400, "BadRequest",
                  "strconv.ParseInt: parsing \"abc\": invalid syntax");
}

Test(k8s_path, order_validation_before_storage)
{
    static const struct cause nos[] = {
        {"FieldValueNotSupported",
         "Unsupported value: \"Foo\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
         "resourceVersionMatch"},
    };
    static const struct cause cont[] = {
        {"FieldValueForbidden",
         "Forbidden: resourceVersionMatch is forbidden when continue is provided",
         "resourceVersionMatch"},
    };

    expect_invalid("resourceVersion=abc&resourceVersionMatch=Foo", false,
                   "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Unsupported "
                   "value: \"Foo\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
                   nos, 1);
    expect_invalid("continue=garbage!!&resourceVersion=5&resourceVersionMatch=Exact", false,
                   "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: "
                   "resourceVersionMatch is forbidden when continue is provided",
                   cont, 1);
}

Test(k8s_path, order_storage_list)
{
    /* a bad token wins over a bad rv */
    struct query q;
    struct k8s_list_opts o;
    struct kstatus st;

    cr_assert_eq(parse("continue=garbage!!&resourceVersion=abc", false, &q, &o, &st), -EINVAL);
    cr_expect_eq(strncmp(st.message, "invalid continue token: ", 24), 0, "%s", st.message);
}

Test(k8s_path, order_field_hook_between_validation_and_storage)
{
    struct query q;
    struct k8s_list_opts o;
    struct kstatus st;
    int calls = 0;

    /* the hook's 400 wins over storage errors */
    cr_assert_eq(
        parse_pods("fieldSelector=spec.foo=bar&resourceVersion=abc", false, &q, &o, &st, &calls),
        -EINVAL);
    cr_expect_str_eq(st.message, "field label not supported: spec.foo");
    cr_assert_eq(parse_pods("fieldSelector=spec.foo=bar&watch=1&resourceVersion=abc", false, &q, &o,
                            &st, &calls),
                 -EINVAL);
    cr_expect_eq(st.code, 400);
    /* but validation wins over the hook, which is then not called */
    calls = 0;
    cr_assert_eq(parse_pods("fieldSelector=spec.foo=bar&resourceVersionMatch=Exact", false, &q, &o,
                            &st, &calls),
                 -EINVAL);
    cr_expect_eq(st.code, 422);
    cr_expect_eq(calls, 0);
    /* and selector syntax wins over both */
    cr_assert_eq(
        parse_pods("fieldSelector=nonsense&resourceVersionMatch=Exact", false, &q, &o, &st, &calls),
        -EINVAL);
    cr_expect_eq(st.code, 400);
    cr_expect_eq(calls, 0);
}

/* ---- selectors (cache/selector.h texts, wrapped verbatim) ---------------------------- */

static void expect_selector_error(const char *param, const char *sel, bool labels)
{
    char qs[512], err[1024];
    struct selector *s;

    err[0] = '\0';
    s = labels ? selector_parse_labels(sel, err, sizeof(err))
               : selector_parse_fields(sel, err, sizeof(err));
    cr_assert_null(s, "%s must not parse", sel);
    snprintf(qs, sizeof(qs), "%s=%s", param, sel);
    expect_status(qs, false, 400, "BadRequest", err);
    expect_status(qs, true, 400, "BadRequest", err);
}

Test(k8s_path, selector_errors_are_400_verbatim)
{
    expect_selector_error("labelSelector", "a=b)", true);
    expect_selector_error("labelSelector", "a in (", true);
    expect_selector_error("labelSelector", "!", true);
    expect_selector_error("labelSelector", "a=b c", true);
    expect_selector_error("fieldSelector", "foo", false);
    expect_selector_error("fieldSelector", "a=b,c", false);
}

/* The apiserver's own texts (labels.Parse, fields.ParseSelector), end to end. */
Test(k8s_path, selector_errors_match_apiserver_text)
{
    expect_status("labelSelector=a=b)", false, 400, "BadRequest",
                  "found ')', expected: ',' or 'end of string'");
    expect_status("fieldSelector=foo", false, 400, "BadRequest",
                  "invalid selector: 'foo'; can't understand 'foo'");
    /* labels before fields */
    expect_status("fieldSelector=foo&labelSelector=a=b)", false, 400, "BadRequest",
                  "found ')', expected: ',' or 'end of string'");
}

Test(k8s_path, empty_selectors_are_none)
{
    struct query q;
    struct k8s_list_opts o;

    expect_ok("labelSelector=&fieldSelector=", false, &q, &o);
    cr_expect_null(o.label_selector);
    cr_expect_null(o.field_selector);
}

/* ---- %q of user input and long inputs ------------------------------------------------ */

Test(k8s_path, rvm_value_is_go_quoted)
{
    static const struct {
        const char *rvm;
        const char *quoted;
    } cases[] = {
        {"a\"b", "\"a\\\"b\""},
        {"a\\b", "\"a\\\\b\""},
        {"a\nb\tc", "\"a\\nb\\tc\""},
        {"\x01\x7f", "\"\\x01\\x7f\""},
        {"\xff", "\"\\xff\""},
        {"\xc3\xbc", "\"\xc3\xbc\""},                 /* ü prints */
        {"\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\""}, /* U+1F600 prints */
        {"\xc2\xa0", "\"\\u00a0\""},                  /* NBSP does not */
        {"\xe2\x80\x8b", "\"\\u200b\""},              /* zero-width space (Cf) */
        {"\xef\xbb\xbf", "\"\\ufeff\""},              /* BOM */
        {"\xed\xa0\x80", "\"\\xed\\xa0\\x80\""},      /* a UTF-8 surrogate is invalid */
        {"\xe2\x82", "\"\\xe2\\x82\""},               /* truncated sequence */
        {"\xf3\xa0\x80\x81", "\"\\U000e0001\""},      /* language tag (Cf) */
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char qs[128], msg[1024], cause[512];
        struct cause c = {"FieldValueNotSupported", cause, "resourceVersionMatch"};

        snprintf(qs, sizeof(qs), "resourceVersion=1&resourceVersionMatch=%s", cases[i].rvm);
        snprintf(cause, sizeof(cause),
                 "Unsupported value: %s: supported values: \"Exact\", \"NotOlderThan\", \"\"",
                 cases[i].quoted);
        snprintf(msg, sizeof(msg),
                 "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: %s", cause);
        expect_invalid(qs, false, msg, &c, 1);
    }
}

/* Returns "<prefix>" followed by <n> copies of <fill> (heap; the caller frees). */
static char *long_query(const char *prefix, char fill, size_t n)
{
    size_t plen = strlen(prefix);
    char *qs = malloc(plen + n + 1);

    cr_assert_not_null(qs);
    memcpy(qs, prefix, plen);
    memset(qs + plen, fill, n);
    qs[plen + n] = '\0';
    return qs;
}

/* Parses a long query that must fail with <code>; checks the message stays in bounds and
 * starts with <prefix>. */
static void expect_long_error(const char *prefix, char fill, size_t n, int code,
                              const char *msg_prefix, struct kstatus *st)
{
    static struct query q;
    struct k8s_list_opts o;
    char *qs = long_query(prefix, fill, n);

    cr_assert_eq(parse(qs, false, &q, &o, st), -EINVAL, "%s...", prefix);
    cr_expect_eq(st->code, code, "%s...: %d", prefix, st->code);
    cr_expect_lt(strlen(st->message), sizeof(st->message));
    cr_expect_eq(strncmp(st->message, msg_prefix, strlen(msg_prefix)), 0, "%s", st->message);
    free(qs);
}

Test(k8s_path, long_inputs_are_truncated_not_overflowed)
{
    struct kstatus st;

    /* a 10 KB resourceVersionMatch: message and cause both cut inside st->message */
    expect_long_error("resourceVersion=1&resourceVersionMatch=", 'x', 10000, 422,
                      "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: "
                      "Unsupported value: \"xxx",
                      &st);
    cr_expect_eq(st.n_causes, 1);
    cr_expect(st.causes[0].message >= st.message &&
              st.causes[0].message < st.message + sizeof(st.message));
    cr_expect_str_eq(nz(st.causes[0].field), "resourceVersionMatch");
    /* rv on a watch and on a list */
    expect_long_error("watch=1&resourceVersion=", '9', 10000, 500,
                      "resourceVersion: Invalid value: \"999", &st);
    expect_long_error("resourceVersion=", 'z', 10000, 400,
                      "invalid resource version: resourceVersion: Invalid value: \"zzz", &st);
    /* a 12 KB garbage continue token, a 10 KB limit and 10 KB selectors */
    expect_long_error("continue=", '!', 12000, 400, "invalid continue token: ", &st);
    expect_long_error("limit=", '1', 10000, 400, "strconv.ParseInt: parsing \"111", &st);
    expect_long_error("labelSelector=", '(', 10000, 400, "", &st);
    expect_long_error("fieldSelector=", 'x', 20000 - 100, 400, "", &st);
}

/* ---- k8s_query_escape (url.QueryEscape) ---------------------------------------------- */

/* ---- k8s_query_parse (url.ParseQuery, as kube-apiserver reads a query) ----------------- */

struct pairs_seen {
    char out[512];
    size_t calls;
    size_t stop_after; /* 0: never stop */
};

static bool collect_pair(void *ctx, const char *key, const char *value)
{
    struct pairs_seen *s = ctx;
    size_t len = strlen(s->out);

    snprintf(s->out + len, sizeof(s->out) - len, "%s[%s]=%s%s%s", len ? "|" : "", key,
             value ? "[" : "NULL", value ? value : "", value ? "]" : "");
    s->calls++;
    return s->stop_after == 0 || s->calls < s->stop_after;
}

Test(k8s_path, query_parse_decodes_and_drops_as_go_does)
{
    /* Go 1.17+ net/url parseQuery: a pair with ';' or a bad escape is skipped (the error is
     * recorded and the apiserver ignores it); empty pairs are skipped; '+' is a space; no '='
     * gives NULL (Go: ""). */
    static const struct {
        const char *raw;
        const char *pairs;
        size_t kept;
    } cases[] = {
        {"", "", 0},
        {"&", "", 0},
        {"a=1&b=2", "[a]=[1]|[b]=[2]", 2},
        {"a=1&&b=2&", "[a]=[1]|[b]=[2]", 2},
        {"labelSelector=%zz&limit=5", "[limit]=[5]", 1},
        {"resourceVersion=%", "", 0},
        {"resourceVersion=%4&watch=1", "[watch]=[1]", 1},
        {"k%zz=1&j=2", "[j]=[2]", 1},
        {"a=1;b=2&c=3", "[c]=[3]", 1},
        {"a;=1", "", 0},
        {"x=a+b%2Bc", "[x]=[a b+c]", 1},
        {"watch", "[watch]=NULL", 1},
        {"watch=", "[watch]=[]", 1},
        {"watch&limit=2", "[watch]=NULL|[limit]=[2]", 2},
        {"=v", "[]=[v]", 1},
        {"a=b=c", "[a]=[b=c]", 1},
        {"%61=%41%42", "[a]=[AB]", 1},
        {"v=%00x", "[v]=[%00x]", 1},
        {"labelSelector=app%3Dx%2Ctier+in+%28a%2Cb%29", "[labelSelector]=[app=x,tier in (a,b)]", 1},
        {"fieldSelector=metadata.name%3D%C3%A9", "[fieldSelector]=[metadata.name=\xc3\xa9]", 1},
        {"a=%2", "", 0},
        {"a=%%41", "", 0},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char raw[256];
        struct pairs_seen s = {.out = ""};
        size_t kept;

        snprintf(raw, sizeof(raw), "%s", cases[i].raw);
        kept = k8s_query_parse(raw, collect_pair, &s);
        cr_expect_str_eq(s.out, cases[i].pairs, "query \"%s\"", cases[i].raw);
        cr_expect_eq(kept, cases[i].kept, "query \"%s\": kept %zu", cases[i].raw, kept);
    }
}

Test(k8s_path, query_parse_stops_when_told)
{
    char raw[] = "a=1&b=2&c=3";
    struct pairs_seen s = {.out = "", .stop_after = 2};

    cr_expect_eq(k8s_query_parse(raw, collect_pair, &s), 2);
    cr_expect_str_eq(s.out, "[a]=[1]|[b]=[2]");
}
