/*
 * test_reqinfo.c - reqinfo_parse and reqinfo_attrs, black-box through proxy/reqinfo.h.
 *
 * The tables are k8s.io/apiserver pkg/endpoints/request/requestinfo_test.go's
 * (TestGetAPIRequestInfo, TestGetNonAPIRequestInfo, TestFieldSelectorParsing), row for row;
 * the rest covers requestinfo.go's branches those tables leave out (DecodeParameters
 * failures, path.IsValidPathSegmentName, special verbs without a resource, odd methods).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proxy/reqinfo.h"

#define MAX_KV 16

/* A request target "PATH[?QUERY]" split like kwp's server: the query on '&' and the first
 * '=' (tests write decoded bytes). */
struct target {
    char buf[1024];
    const char *path;
    struct k8s_query_kv kv[MAX_KV];
    size_t n;
};

static void target_init(struct target *t, const char *url)
{
    char *q, *p;

    cr_assert_lt(strlen(url), sizeof(t->buf));
    memcpy(t->buf, url, strlen(url) + 1);
    t->path = t->buf;
    t->n = 0;
    q = strchr(t->buf, '?');
    if (q == NULL) {
        return;
    }
    *q++ = '\0';
    for (p = strtok(q, "&"); p != NULL; p = strtok(NULL, "&")) {
        char *eq = strchr(p, '=');

        cr_assert_lt(t->n, MAX_KV);
        if (eq != NULL) {
            *eq = '\0';
        }
        t->kv[t->n].key = p;
        t->kv[t->n].value = eq != NULL ? eq + 1 : NULL;
        t->n++;
    }
}

static int parse(const char *method, const char *url, struct reqinfo *ri)
{
    struct target t;

    target_init(&t, url);
    return reqinfo_parse(method, t.path, t.kv, t.n, ri);
}

/* ---- TestGetAPIRequestInfo ------------------------------------------------------------- */

struct row {
    const char *method, *url, *verb, *prefix, *group, *version, *ns, *resource, *sub, *name;
    size_t n_parts;
};

static const struct row success_cases[] = {
    /* resource paths */
    {"GET", "/api/v1/namespaces", "list", "api", "", "v1", "", "namespaces", "", "", 1},
    {"GET", "/api/v1/namespaces/other", "get", "api", "", "v1", "other", "namespaces", "", "other",
     2},
    {"GET", "/api/v1/namespaces/other/pods", "list", "api", "", "v1", "other", "pods", "", "", 1},
    {"GET", "/api/v1/namespaces/other/pods/foo", "get", "api", "", "v1", "other", "pods", "", "foo",
     2},
    {"HEAD", "/api/v1/namespaces/other/pods/foo", "get", "api", "", "v1", "other", "pods", "",
     "foo", 2},
    {"GET", "/api/v1/pods", "list", "api", "", "v1", "", "pods", "", "", 1},
    {"HEAD", "/api/v1/pods", "list", "api", "", "v1", "", "pods", "", "", 1},
    {"GET", "/api/v1/namespaces/other/pods/foo", "get", "api", "", "v1", "other", "pods", "", "foo",
     2},
    {"GET", "/api/v1/namespaces/other/pods", "list", "api", "", "v1", "other", "pods", "", "", 1},
    {"PATCH", "/api/v1/namespaces/new-namespace", "patch", "api", "", "v1", "new-namespace",
     "namespaces", "", "new-namespace", 2},
    /* special verbs */
    {"GET", "/api/v1/proxy/namespaces/other/pods/foo", "proxy", "api", "", "v1", "other", "pods",
     "", "foo", 2},
    {"GET", "/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource", "proxy", "api", "",
     "v1", "other", "pods", "", "foo", 6},
    {"GET", "/api/v1/watch/pods", "watch", "api", "", "v1", "", "pods", "", "", 1},
    {"GET", "/api/v1/pods?watch=true", "watch", "api", "", "v1", "", "pods", "", "", 1},
    {"GET", "/api/v1/pods?watch=false", "list", "api", "", "v1", "", "pods", "", "", 1},
    {"GET", "/api/v1/watch/namespaces/other/pods", "watch", "api", "", "v1", "other", "pods", "",
     "", 1},
    {"GET", "/api/v1/namespaces/other/pods?watch=1", "watch", "api", "", "v1", "other", "pods", "",
     "", 1},
    {"GET", "/api/v1/namespaces/other/pods?watch=0", "list", "api", "", "v1", "other", "pods", "",
     "", 1},
    /* subresource identification */
    {"GET", "/api/v1/namespaces/other/pods/foo/status", "get", "api", "", "v1", "other", "pods",
     "status", "foo", 3},
    {"GET", "/api/v1/namespaces/other/pods/foo/proxy/subpath", "get", "api", "", "v1", "other",
     "pods", "proxy", "foo", 4},
    {"PUT", "/api/v1/namespaces/other/finalize", "update", "api", "", "v1", "other", "namespaces",
     "finalize", "other", 3},
    {"PUT", "/api/v1/namespaces/other/status", "update", "api", "", "v1", "other", "namespaces",
     "status", "other", 3},
    /* verb identification */
    {"PATCH", "/api/v1/namespaces/other/pods/foo", "patch", "api", "", "v1", "other", "pods", "",
     "foo", 2},
    {"DELETE", "/api/v1/namespaces/other/pods/foo", "delete", "api", "", "v1", "other", "pods", "",
     "foo", 2},
    {"POST", "/api/v1/namespaces/other/pods", "create", "api", "", "v1", "other", "pods", "", "",
     1},
    /* deletecollection verb identification */
    {"DELETE", "/api/v1/nodes", "deletecollection", "api", "", "v1", "", "nodes", "", "", 1},
    {"DELETE", "/api/v1/namespaces", "deletecollection", "api", "", "v1", "", "namespaces", "", "",
     1},
    {"DELETE", "/api/v1/namespaces/other/pods", "deletecollection", "api", "", "v1", "other",
     "pods", "", "", 1},
    {"DELETE", "/apis/extensions/v1/namespaces/other/pods", "deletecollection", "apis",
     "extensions", "v1", "other", "pods", "", "", 1},
    /* api group identification */
    {"POST", "/apis/extensions/v1/namespaces/other/pods", "create", "apis", "extensions", "v1",
     "other", "pods", "", "", 1},
    /* api version identification */
    {"POST", "/apis/extensions/v1beta3/namespaces/other/pods", "create", "apis", "extensions",
     "v1beta3", "other", "pods", "", "", 1},
};

Test(reqinfo, get_api_request_info_table)
{
    for (size_t i = 0; i < sizeof(success_cases) / sizeof(success_cases[0]); i++) {
        const struct row *c = &success_cases[i];
        struct reqinfo ri;

        cr_assert_eq(parse(c->method, c->url, &ri), 0, "%s", c->url);
        cr_expect(ri.is_resource, "%s", c->url);
        cr_expect_str_eq(ri.verb, c->verb, "%s %s", c->method, c->url);
        /* the Go table says "api" for every row; the prefix it means is the path's */
        cr_expect_str_eq(ri.api_prefix, c->prefix, "%s", c->url);
        cr_expect_str_eq(ri.group, c->group, "%s", c->url);
        cr_expect_str_eq(ri.version, c->version, "%s", c->url);
        cr_expect_str_eq(ri.ns, c->ns, "%s", c->url);
        cr_expect_str_eq(ri.resource, c->resource, "%s", c->url);
        cr_expect_str_eq(ri.subresource, c->sub, "%s", c->url);
        cr_expect_str_eq(ri.name, c->name, "%s", c->url);
        cr_expect_eq(ri.n_parts, c->n_parts, "%s", c->url);
        reqinfo_fini(&ri);
    }
}

Test(reqinfo, error_cases_are_non_resource)
{
    static const char *const urls[] = {
        "/",
        "/api/version/",
        "/apis/group/version/",
        "/badprefix/version/resource",
        "/apis/version/resource",
    };

    for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
        struct reqinfo ri;

        cr_assert_eq(parse("GET", urls[i], &ri), 0);
        cr_expect_not(ri.is_resource, "%s", urls[i]);
        cr_expect_str_eq(ri.verb, "get", "%s", urls[i]);
        cr_expect_str_eq(ri.path, urls[i]);
        reqinfo_fini(&ri);
    }
}

/* ---- TestGetNonAPIRequestInfo ---------------------------------------------------------- */

Test(reqinfo, non_api_request_info_table)
{
    static const struct {
        const char *url;
        bool resource;
    } cases[] = {
        {"/api/version/resource", true},
        {"/apis/group/version/resource/name/subresource", true},
        {"/api/version/resource/name/subresource", true},
        {"/apis/batch/v1/job", true},
        {"/apis/batch/v1/job/foo", true},
        {"/apis/batch/v1/job/foo/scale", true},
        {"/not-api/version/resource", false},
        {"/apis/extensions/v1beta1", false},
        {"/apis/extensions/v1beta1/", false},
        {"/api/version", false},
        {"/api", false},
        {"/", false},
        {"", false},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct reqinfo ri;

        cr_assert_eq(parse("GET", cases[i].url, &ri), 0);
        cr_expect_eq(ri.is_resource, cases[i].resource, "%s", cases[i].url);
        reqinfo_fini(&ri);
    }
}

/* ---- GET rows: a URL, the name and the verb it yields (NULL = not checked) ------------- */

struct get_row {
    const char *url, *name, *verb;
};

static void expect_get_rows(const struct get_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct reqinfo ri;

        cr_assert_eq(parse("GET", rows[i].url, &ri), 0, "%s", rows[i].url);
        if (rows[i].name != NULL) {
            cr_expect_str_eq(ri.name, rows[i].name, "%s", rows[i].url);
        }
        if (rows[i].verb != NULL) {
            cr_expect_str_eq(ri.verb, rows[i].verb, "%s", rows[i].url);
        }
        reqinfo_fini(&ri);
    }
}

#define EXPECT_GET_ROWS(rows) expect_get_rows(rows, sizeof(rows) / sizeof(rows[0]))

/* TestFieldSelectorParsing */
Test(reqinfo, field_selector_parsing_table)
{
    static const struct get_row rows[] = {
        {"/apis/group/version/resource", "", "list"},
        {"/apis/group/version/resource?fieldSelector=metadata.name=name1", "name1", "list"},
        {"/apis/group/version/resource?watch=true&fieldSelector=metadata.name=name1", "name1",
         "watch"},
        {"/apis/group/version/resource?fieldSelector=foo=bar", "", "list"},
        {"/apis/group/version/resource?fieldSelector=metadata.name=name1,foo", "", "list"},
        {"/apis/group/version/resource?fieldSelector=metadata.name=name1,foo&watch=true", "",
         "watch"},
        {"/apis/group/version/resource?fieldSelector=metadata.name=name1,foo&watch=false", "",
         "list"},
    };

    EXPECT_GET_ROWS(rows);
}

/* ---- branches beyond the Go tables ----------------------------------------------------- */

Test(reqinfo, field_selector_name_rules)
{
    static const struct get_row rows[] = {
        /* RequiresExactMatch: == counts, != does not, the first term in sorted order wins */
        {"/api/v1/pods?fieldSelector=metadata.name==x", "x", "list"},
        {"/api/v1/pods?fieldSelector=metadata.name!=x", "", "list"},
        {"/api/v1/pods?fieldSelector=spec.nodeName=n,metadata.name=x", "x", NULL},
        {"/api/v1/pods?fieldSelector=metadata.name=b,metadata.name=a", "a", NULL},
        /* IsValidPathSegmentName */
        {"/api/v1/pods?fieldSelector=metadata.name=..", "", NULL},
        {"/api/v1/pods?fieldSelector=metadata.name=a%b", "", NULL},
        {"/api/v1/pods?fieldSelector=metadata.name=a/b", "", NULL},
        /* escapes are undone by the field selector parser */
        {"/api/v1/pods?fieldSelector=metadata.name=a\\,b", "a,b", NULL},
        /* DecodeParameters fails on another parameter: no name */
        {"/api/v1/pods?fieldSelector=metadata.name=x&limit=abc", "", "list"},
        {"/api/v1/pods?fieldSelector=metadata.name=x&timeoutSeconds=1.5", "", NULL},
        {"/api/v1/pods?fieldSelector=metadata.name=x&labelSelector=a in", "", NULL},
        {"/api/v1/pods?fieldSelector=metadata.name=x&limit=-9223372036854775808", "x", NULL},
        {"/api/v1/pods?fieldSelector=metadata.name=x&limit=9223372036854775808", "", NULL},
        {"/api/v1/pods?fieldSelector=metadata.name=x&limit=", "", NULL},
        {"/api/v1/pods?fieldSelector=metadata.name=x&limit=+007", "x", NULL},
        /* the first fieldSelector counts (url.Values.Get) */
        {"/api/v1/pods?fieldSelector=metadata.name=x&fieldSelector=metadata.name=y", "x", NULL},
        /* a legacy /watch/ path is not a "get": no selector lookup */
        {"/api/v1/watch/pods?fieldSelector=metadata.name=x", "", "watch"},
        /* a name in the path wins and is kept */
        {"/api/v1/namespaces/a/pods/p?fieldSelector=metadata.name=x", "p", "get"},
    };

    EXPECT_GET_ROWS(rows);
}

Test(reqinfo, watch_values)
{
    static const struct get_row rows[] = {
        {"/api/v1/pods?watch", NULL, "watch"}, /* no '=': "" is true */
        {"/api/v1/pods?watch=", NULL, "watch"},
        {"/api/v1/pods?watch=FALSE", NULL, "list"},
        {"/api/v1/pods?watch=no", NULL, "watch"},
        {"/api/v1/pods?watch=0&watch=1", NULL, "list"},
        /* EqualFold folds U+017F to 's' when the options decode ... */
        {"/api/v1/pods?watch=fal\xc5\xbf"
         "e",
         NULL, "list"},
        /* ... ToLower, in the fallback, does not */
        {"/api/v1/pods?watch=fal\xc5\xbf"
         "e&limit=x",
         NULL, "watch"},
        {"/api/v1/pods?watch=false&limit=x", NULL, "list"},
        {"/api/v1/pods?watch=true&limit=x", NULL, "watch"},
    };

    EXPECT_GET_ROWS(rows);
}

Test(reqinfo, special_verb_without_resource_is_an_error)
{
    struct reqinfo ri;

    cr_expect_eq(parse("GET", "/api/v1/watch", &ri), -EINVAL);
    cr_expect(ri.is_resource);
    cr_expect_str_eq(ri.verb, "get");
    reqinfo_fini(&ri);
    cr_expect_eq(parse("GET", "/apis/apps/v1/proxy/", &ri), -EINVAL);
    reqinfo_fini(&ri);
    /* a proxy path with a name never has a subresource */
    cr_assert_eq(parse("GET", "/api/v1/proxy/nodes/n1/stats", &ri), 0);
    cr_expect_str_eq(ri.verb, "proxy");
    cr_expect_str_eq(ri.name, "n1");
    cr_expect_str_eq(ri.subresource, "");
    reqinfo_fini(&ri);
}

Test(reqinfo, methods_and_paths)
{
    struct reqinfo ri;

    /* an unknown method on a resource has verb "" */
    cr_assert_eq(parse("OPTIONS", "/api/v1/pods", &ri), 0);
    cr_expect_str_eq(ri.verb, "");
    reqinfo_fini(&ri);
    /* methods are case-sensitive there, lowercased for non-resource paths */
    cr_assert_eq(parse("get", "/api/v1/pods", &ri), 0);
    cr_expect_str_eq(ri.verb, "");
    reqinfo_fini(&ri);
    cr_assert_eq(parse("POST", "/metrics", &ri), 0);
    cr_expect_not(ri.is_resource);
    cr_expect_str_eq(ri.verb, "post");
    cr_expect_str_eq(ri.path, "/metrics");
    reqinfo_fini(&ri);
    /* slashes: trimmed at the ends, empty segments kept inside */
    cr_assert_eq(parse("GET", "//api/v1/pods//", &ri), 0);
    cr_expect_str_eq(ri.resource, "pods");
    cr_expect_str_eq(ri.verb, "list");
    cr_expect_str_eq(ri.path, "//api/v1/pods//");
    reqinfo_fini(&ri);
    cr_assert_eq(parse("GET", "/api/v1/pods//log", &ri), 0);
    cr_expect_str_eq(ri.name, "");
    cr_expect_str_eq(ri.subresource, "log");
    cr_expect_str_eq(ri.verb, "list");
    reqinfo_fini(&ri);
    /* a namespace subresource vs a namespaced resource */
    cr_assert_eq(parse("GET", "/api/v1/namespaces/b/pods/x/log", &ri), 0);
    cr_expect_str_eq(ri.ns, "b");
    cr_expect_str_eq(ri.resource, "pods");
    cr_expect_str_eq(ri.subresource, "log");
    cr_expect_str_eq(ri.name, "x");
    reqinfo_fini(&ri);
    /* a long path is counted, not stored */
    cr_assert_eq(parse("GET", "/api/v1/namespaces/b/pods/x/proxy/a/b/c/d/e/f/g/h/i/j", &ri), 0);
    cr_expect_eq(ri.n_parts, 13);
    cr_expect_str_eq(ri.subresource, "proxy");
    reqinfo_fini(&ri);
    /* fini twice is harmless */
    reqinfo_fini(&ri);
}

Test(reqinfo, attrs_of_resource_and_non_resource)
{
    struct reqinfo ri;
    struct review_attrs a;

    cr_assert_eq(parse("GET", "/apis/apps/v1/namespaces/b/deployments/d/scale", &ri), 0);
    reqinfo_attrs(&ri, &a);
    cr_expect(a.is_resource);
    cr_expect_str_eq(a.verb, "get");
    cr_expect_str_eq(a.ns, "b");
    cr_expect_str_eq(a.group, "apps");
    cr_expect_str_eq(a.version, "v1");
    cr_expect_str_eq(a.resource, "deployments");
    cr_expect_str_eq(a.subresource, "scale");
    cr_expect_str_eq(a.name, "d");
    cr_expect_null(a.path);
    reqinfo_fini(&ri);

    cr_assert_eq(parse("GET", "/version", &ri), 0);
    reqinfo_attrs(&ri, &a);
    cr_expect_not(a.is_resource);
    cr_expect_str_eq(a.verb, "get");
    cr_expect_str_eq(a.path, "/version");
    cr_expect_null(a.resource);
    reqinfo_fini(&ri);
}
