/*
 * test_negotiate.c - content negotiation as a pure function of the request's strings
 * (proxy/negotiate.h): goautoneg's Accept parsing and kube-apiserver's choice of media type
 * and transform, isPrettyPrint (?pretty= over the User-Agent), the gzip token of
 * Accept-Encoding and ?includeObject=. Black-box: no request, no server.
 *
 * Expected values come from the Go sources named in each test (negotiate.go, goautoneg,
 * responsewriters/writers.go, printers' TableOptions).
 */
#include "proxy/negotiate.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/apires.h"
#include "proxy/printers.h"

/* ---- helpers ----------------------------------------------------------------------------- */

/* Negotiates <accept> (NULL = none) with User-Agent <ua> (NULL = none), no query. */
static int negotiate_accept(const char *accept, const char *ua, const struct apires_kind *kind,
                            struct negotiate *out)
{
    struct negotiate_in in = {.accept = accept, .user_agent = ua};

    return negotiate_request(&in, kind, out);
}

/* Negotiates with User-Agent <ua> and the query pairs <q> (n of them), no Accept. */
static struct negotiate negotiate_query(const char *ua, const struct k8s_query_kv *q, size_t n)
{
    struct negotiate_in in = {.user_agent = ua, .query = q, .n_query = n};
    struct negotiate out;

    cr_assert_eq(negotiate_request(&in, apires_builtin("", "v1", "pods"), &out), 0);
    return out;
}

/* ---- Accept negotiation ------------------------------------------------------------------ */

struct neg_case {
    const char *accept;
    int rc;
    enum negotiate_as as;
    bool v1beta1;
    bool pretty;
    bool status_indent;
};

static void check_neg(const struct apires_kind *kind, const struct neg_case *c)
{
    struct negotiate n;
    int rc = negotiate_accept(c->accept, NULL, kind, &n);

    cr_assert_eq(rc, c->rc, "Accept \"%s\": rc %d, expected %d", c->accept ? c->accept : "(none)",
                 rc, c->rc);
    if (rc == 0) {
        cr_assert_eq(n.as, c->as, "Accept \"%s\": as %d, expected %d", c->accept, n.as, c->as);
        cr_assert_eq(n.v1beta1, c->v1beta1, "Accept \"%s\": v1beta1", c->accept);
        cr_assert_eq(n.pretty, c->pretty, "Accept \"%s\": pretty", c->accept);
    }
    cr_assert_eq(n.status_indent, c->status_indent, "Accept \"%s\": status_indent",
                 c->accept ? c->accept : "(none)");
}

#define KUBECTL_TABLE                                                                              \
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s." \
    "io,application/json"

Test(negotiate, accept_matrix_for_pods)
{
    const struct apires_kind *pods = apires_builtin("", "v1", "pods");
    static const struct neg_case cases[] = {
        {NULL, 0, NEGOTIATE_AS_NONE, false, false, false},
        {"", 0, NEGOTIATE_AS_NONE, false, false, false},
        {"*/*", 0, NEGOTIATE_AS_NONE, false, false, false},
        {"*", 0, NEGOTIATE_AS_NONE, false, false, false},
        {"application/*", 0, NEGOTIATE_AS_NONE, false, false, false},
        {"application/json", 0, NEGOTIATE_AS_NONE, false, false, false},
        {"application/json; charset=utf-8", 0, NEGOTIATE_AS_NONE, false, false, false},
        {"application/json, */*", 0, NEGOTIATE_AS_NONE, false, false, false},
        {"text/html, application/json;q=0.9", 0, NEGOTIATE_AS_NONE, false, false, false},
        {"application/json;q=0", 0, NEGOTIATE_AS_NONE, false, false, false}, /* q only orders */
        {"application/json;pretty=1", 0, NEGOTIATE_AS_NONE, false, true, true},
        {"application/json;stream=watch", 0, NEGOTIATE_AS_NONE, false, false, false},
        {"application/json;stream=other", -ENOTSUP, NEGOTIATE_AS_NONE, false, false, true},
        {"application/json;sv=v1", 0, NEGOTIATE_AS_NONE, false, false, true},
        {"application/vnd.kubernetes.protobuf,application/json", 0, NEGOTIATE_AS_NONE, false, false,
         false},
        {"application/vnd.kubernetes.protobuf, */*", 0, NEGOTIATE_AS_NONE, false, false, false},
        {"application/vnd.kubernetes.protobuf", -ENOTSUP, NEGOTIATE_AS_NONE, false, false, true},
        {"application/yaml", -ENOTSUP, NEGOTIATE_AS_NONE, false, false, true},
        {"text/plain", -ENOTSUP, NEGOTIATE_AS_NONE, false, false, true},
        {"application", -ENOTSUP, NEGOTIATE_AS_NONE, false, false, true},
        {"application/json/x", -ENOTSUP, NEGOTIATE_AS_NONE, false, false, true},
        {"Application/JSON", -ENOTSUP, NEGOTIATE_AS_NONE, false, false, true}, /* case-sensitive */
        {KUBECTL_TABLE, 0, NEGOTIATE_AS_TABLE, false, false, false},
        {"application/json;as=Table;v=v1beta1;g=meta.k8s.io", 0, NEGOTIATE_AS_TABLE, true, false,
         true},
        {"application/json;as=Table;v=v2;g=meta.k8s.io", -ENOTSUP, NEGOTIATE_AS_NONE, false, false,
         true},
        {"application/json;as=Table;v=v1", -ENOTSUP, NEGOTIATE_AS_NONE, false, false, true},
        {"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", 0, NEGOTIATE_AS_POML,
         false, false, true},
        {"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1", 0,
         NEGOTIATE_AS_POML, true, false, true},
        {"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
         "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
         0, NEGOTIATE_AS_POML, false, false, false},
        {"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", 0, NEGOTIATE_AS_POM, false,
         false, true},
        {"application/json;as=Foo;g=meta.k8s.io;v=v1,application/json", 0, NEGOTIATE_AS_NONE, false,
         false, false},
        /* a higher q wins whatever the order */
        {"application/json;q=0.5,application/json;as=Table;v=v1;g=meta.k8s.io", 0,
         NEGOTIATE_AS_TABLE, false, false, false},
        /* equal q: a concrete subtype sorts before a wildcard */
        {"*/*;as=Table;g=meta.k8s.io;v=v1,application/json", 0, NEGOTIATE_AS_NONE, false, false,
         false},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        check_neg(pods, &cases[i]);
    }
}

/* as=Table picks the kind's printer; a kind without one (a custom resource, a built-in kwp
 * has no printer for) is marked table_default, which the proxy forwards upstream
 * (handlers_route), and gets the convertor the simulator serves. */
Test(negotiate, table_negotiates_the_kinds_printer_or_the_default_convertor)
{
    const struct apires_kind *cm = apires_builtin("", "v1", "configmaps");
    struct apires_kind cr, ds;
    struct negotiate n;
    char *owned = NULL;

    memset(&cr, 0, sizeof(cr));
    cr_assert_eq(apires_parse_spec("example.com/v1/widgets", &cr, &owned), 0);
    ds = cr;
    ds.group = "apps";
    ds.plural = "daemonsets";
    ds.builtin = true;
    cr_assert_eq(negotiate_accept(KUBECTL_TABLE, NULL, cm, &n), 0);
    cr_assert_eq(n.as, NEGOTIATE_AS_TABLE);
    cr_assert_not(n.table_default);
    cr_assert_eq(n.printer, printers_find("", "configmaps"));
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(negotiate_accept(KUBECTL_TABLE, NULL, i ? &ds : &cr, &n), 0);
        cr_assert_eq(n.as, NEGOTIATE_AS_TABLE);
        cr_assert(n.table_default, "no kube printer: the proxy forwards");
        /* the simulator's answer: the CRD convertor (Name, Age) for a custom resource, rest's
         * default convertor (Name, Created At) for a built-in */
        cr_assert_eq(n.printer, i ? printers_default() : printers_custom());
    }
    free(owned);
}

Test(negotiate, pretty_print_user_agents_and_status_indent)
{
    const struct apires_kind *pods = apires_builtin("", "v1", "pods");
    struct negotiate n;

    cr_assert_eq(negotiate_accept("application/json", "curl/8.5.0", pods, &n), 0);
    cr_assert(n.pretty && n.status_indent);
    cr_assert_eq(negotiate_accept(NULL, "curl/8.5.0", pods, &n), 0);
    cr_assert(n.pretty && n.status_indent);
}

/* responsewriters.negotiateContentEncoding: the exact token, comma-split and trimmed. */
Test(negotiate, gzip_token_is_exact)
{
    static const struct {
        const char *ae;
        bool gzip;
    } cases[] = {
        {"gzip", true},        {"gzip, deflate", true}, {"deflate ,  gzip ", true},
        {"br,\tgzip\t", true}, {"gzip;q=1", false},     {"x-gzip", false},
        {"GZIP", false},       {"identity", false},     {"", false},
        {NULL, false},
    };
    const struct apires_kind *pods = apires_builtin("", "v1", "pods");

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct negotiate_in in = {.accept_encoding = cases[i].ae};
        struct negotiate n;

        cr_assert_eq(negotiate_request(&in, pods, &n), 0);
        cr_assert_eq(n.gzip, cases[i].gzip, "Accept-Encoding \"%s\"",
                     cases[i].ae ? cases[i].ae : "(none)");
    }
}

/* ---- what needed a request before: ?pretty=, User-Agent, ?includeObject= ----------------- */

/* negotiation.isPrettyPrint: a non-empty ?pretty= decides through strconv.ParseBool (an error
 * is false), else the User-Agent: curl, Wget or a browser. */
Test(negotiate, pretty_query_decides_before_the_user_agent)
{
    static const struct {
        const char *pretty; /* ?pretty= value; "-" = absent, NULL = the key without "=" */
        const char *ua;
        bool want;
    } cases[] = {
        {"-", NULL, false},
        {"-", "kubectl/v1.30.0 (linux/amd64)", false},
        {"-", "curl/8.5.0", true},
        {"-", "Wget/1.21.3", true},
        {"-", "Mozilla/5.0 (X11; Linux x86_64)", true},
        {"-", "Mozilla/4.0", false},
        {"-", "xcurl/1", false},
        {"-", "Curl/8", false}, /* strings.HasPrefix: case matters */
        {"1", NULL, true},
        {"true", "kubectl/v1.30.0", true},
        {"T", NULL, true},
        {"0", "curl/8.5.0", false},
        {"false", "Mozilla/5.0", false},
        {"yes", "curl/8.5.0", false}, /* not a ParseBool value: false, the agent is not asked */
        {"", "curl/8.5.0", true},     /* empty: the agent decides */
        {"", NULL, false},
        {NULL, "Wget/1.21.3", true}, /* ?pretty without "=": empty too */
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct k8s_query_kv q[2] = {{"limit", "5"}, {"pretty", cases[i].pretty}};
        size_t nq = cases[i].pretty && strcmp(cases[i].pretty, "-") == 0 ? 1 : 2;
        struct negotiate n = negotiate_query(cases[i].ua, q, nq);

        cr_assert_eq(n.pretty, cases[i].want, "case %zu: pretty", i);
        cr_assert_eq(n.status_indent, cases[i].want, "case %zu: status_indent", i);
    }
}

/* url.Values.Get: the first ?pretty= wins. */
Test(negotiate, first_pretty_in_the_query_wins)
{
    struct k8s_query_kv q[2] = {{"pretty", "0"}, {"pretty", "1"}};
    struct negotiate n = negotiate_query("curl/8.5.0", q, 2);

    cr_assert_not(n.pretty);
    q[0].value = "1";
    q[1].value = "0";
    n = negotiate_query(NULL, q, 2);
    cr_assert(n.pretty);
}

/* The Accept clause's pretty=1 and isPrettyPrint add up: either one indents. */
Test(negotiate, accept_pretty_parameter_or_user_agent)
{
    const struct apires_kind *pods = apires_builtin("", "v1", "pods");
    struct k8s_query_kv q = {"pretty", "false"};
    struct negotiate_in in = {.accept = "application/json;pretty=1", .query = &q, .n_query = 1};
    struct negotiate n;

    cr_assert_eq(negotiate_request(&in, pods, &n), 0);
    cr_assert(n.pretty && n.status_indent, "the clause asks for it");
    in.accept = KUBECTL_TABLE;
    in.n_query = 0;
    in.user_agent = "curl/8.5.0";
    cr_assert_eq(negotiate_request(&in, pods, &n), 0);
    cr_assert_eq(n.as, NEGOTIATE_AS_TABLE);
    cr_assert(n.pretty, "a Table for curl is indented");
}

/* A 406 is still written as negotiated: indented for curl, compact for kubectl. */
Test(negotiate, not_acceptable_still_says_how_to_write_the_status)
{
    const struct apires_kind *pods = apires_builtin("", "v1", "pods");
    struct negotiate_in in = {.accept = "application/vnd.kubernetes.protobuf",
                              .accept_encoding = "gzip",
                              .user_agent = "curl/8.5.0"};
    struct negotiate n;

    cr_assert_eq(negotiate_request(&in, pods, &n), -ENOTSUP);
    cr_assert(n.status_indent);
    cr_assert(n.gzip, "Accept-Encoding is read whatever Accept says");
    in.accept = "application/json;as=Table;v=v1;g=meta.k8s.io;sv=v1,application/json";
    in.user_agent = "kubectl/v1.30.0";
    cr_assert_eq(negotiate_request(&in, pods, &n), 0);
    cr_assert_not(n.status_indent, "a plain JSON clause is acceptable for errors");
}

/* TableOptions.includeObject: empty or Metadata (the default), None, Object; anything else
 * waits for its 400 (handlers: once the object is at hand). */
Test(negotiate, include_object_values)
{
    static const struct {
        const char *v; /* NULL = absent */
        enum negotiate_incl want;
    } cases[] = {
        {NULL, NEGOTIATE_INCL_METADATA},       {"", NEGOTIATE_INCL_METADATA},
        {"Metadata", NEGOTIATE_INCL_METADATA}, {"None", NEGOTIATE_INCL_NONE},
        {"Object", NEGOTIATE_INCL_OBJECT},     {"object", NEGOTIATE_INCL_INVALID},
        {"All", NEGOTIATE_INCL_INVALID},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct k8s_query_kv q = {"includeObject", cases[i].v ? cases[i].v : ""};
        struct negotiate n = negotiate_query(NULL, &q, cases[i].v ? 1 : 0);

        cr_assert_eq(n.incl, cases[i].want, "includeObject=%s", cases[i].v ? cases[i].v : "-");
    }
}
