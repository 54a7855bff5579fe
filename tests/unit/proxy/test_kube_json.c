/*
 * test_kube_json.c - byte-exact Status bodies (SEMANTICS 1.4, 2.4, 3.5, 4, 5), Go encoding/json
 * string escaping, the byte scanner (spans, events, type-meta stripping, malformed and
 * truncated input), metadata extraction, and continue tokens with DecodeContinue's error texts.
 * Inputs that could be over-read are copied to exact-size heap buffers so ASan sees overreads.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/blob.h"
#include "cache/rv.h"
#include "cache/selector.h"
#include "proxy/kube_json.h"

/* ---- helpers -------------------------------------------------------------------------- */

static char *status_body(const struct kstatus *st)
{
    size_t need = kube_json_status(st, NULL, 0);
    char *buf = malloc(need + 1);

    cr_assert_eq(kube_json_status(st, buf, need + 1), need);
    cr_assert_eq(strlen(buf), need);
    return buf;
}

static void expect_status(const struct kstatus *st, const char *want)
{
    char *got = status_body(st);

    cr_expect_str_eq(got, want);
    free(got);
}

static char *quote(const char *s, size_t n)
{
    size_t need = kube_json_quote(s, n, NULL, 0);
    char *buf = malloc(need + 1);

    cr_assert_eq(kube_json_quote(s, n, buf, need + 1), need);
    return buf;
}

static void expect_quote(const char *s, size_t n, const char *want)
{
    char *got = quote(s, n);

    cr_expect_str_eq(got, want, "input %zu bytes", n);
    free(got);
}

/* An exact-size heap copy (no NUL after it) so a read past the end trips ASan. */
static char *exact(const char *s, size_t n)
{
    char *p = malloc(n ? n : 1);

    memcpy(p, s, n);
    return p;
}

static int member(const char *doc, const char *key, char *val, size_t cap)
{
    size_t n = strlen(doc);
    char *d = exact(doc, n);
    size_t off = 0, len = 0;
    int rc = kube_json_member(d, n, key, &off, &len);

    if (rc == 0) {
        cr_assert_leq(off + len, n);
        cr_assert_lt(len, cap);
        memcpy(val, d + off, len);
        val[len] = '\0';
    }
    free(d);
    return rc;
}

static char *strip(const char *doc)
{
    size_t n = strlen(doc);
    char *d = exact(doc, n);
    size_t out_len = 12345;
    char *out = kube_json_strip_type_meta(d, n, &out_len);

    free(d);
    if (out != NULL) {
        cr_assert_eq(strlen(out), out_len);
    }
    return out;
}

static void b64url(const char *in, size_t n, char *out)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const unsigned char *u = (const unsigned char *)in;
    size_t o = 0;

    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)u[i] << 16 | (i + 1 < n ? (uint32_t)u[i + 1] << 8 : 0) |
                     (i + 2 < n ? u[i + 2] : 0);
        size_t k = n - i >= 3 ? 4 : n - i + 1;

        for (size_t j = 0; j < k; j++) {
            out[o++] = a[(v >> (18 - 6 * j)) & 63];
        }
    }
    out[o] = '\0';
}

/* Decodes the token made of raw JSON <json>; returns rc, fills err/start. */
static int decode_json(const char *json, int64_t *rv, char *start, char *err)
{
    char tok[8192];

    b64url(json, strlen(json), tok);
    return kube_json_continue_decode(tok, rv, start, KUBE_JSON_CONTINUE_MAX, err, 512);
}

static void expect_json_token_error(const char *json, const char *want)
{
    char start[KUBE_JSON_CONTINUE_MAX], err[512];
    int64_t rv = 7;

    cr_expect_eq(decode_json(json, &rv, start, err), -EINVAL, "%s", json);
    cr_expect_str_eq(err, want, "%s", json);
    cr_expect_eq(rv, 0);
}

/* ---- Status bodies (SEMANTICS 1.4, 2.4, 3.5, 4, 5) -------------------------------------- */

Test(kube_json, status_504_too_large_rv)
{
    struct kstatus st;

    kstatus_too_large_rv(&st, 250, 200);
    cr_expect_eq(st.code, 504);
    cr_expect_eq(st.retry_after, 1);
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                       "\"Failure\",\"message\":\"Timeout: Too large resource version: 250, "
                       "current: 200\",\"reason\":\"Timeout\",\"details\":{\"causes\":[{"
                       "\"reason\":\"ResourceVersionTooLarge\",\"message\":\"Too large "
                       "resource version\"}],\"retryAfterSeconds\":1},\"code\":504}");
}

Test(kube_json, status_410_watch_too_old)
{
    struct kstatus st;

    kstatus_too_old(&st, 98, 99);
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                       "\"Failure\",\"message\":\"too old resource version: 98 (99)\","
                       "\"reason\":\"Expired\",\"code\":410}");
}

Test(kube_json, status_404_core_pods)
{
    struct kstatus st;

    kstatus_not_found(&st, "", "pods", "zzz");
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                       "\"Failure\",\"message\":\"pods \\\"zzz\\\" not found\",\"reason\":"
                       "\"NotFound\",\"details\":{\"name\":\"zzz\",\"kind\":\"pods\"},"
                       "\"code\":404}");
    kstatus_not_found(&st, NULL, "pods", "zzz");
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                       "\"Failure\",\"message\":\"pods \\\"zzz\\\" not found\",\"reason\":"
                       "\"NotFound\",\"details\":{\"name\":\"zzz\",\"kind\":\"pods\"},"
                       "\"code\":404}");
}

Test(kube_json, status_404_grouped_resource)
{
    struct kstatus st;

    kstatus_not_found(&st, "apps", "deployments", "x");
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                       "\"Failure\",\"message\":\"deployments.apps \\\"x\\\" not found\","
                       "\"reason\":\"NotFound\",\"details\":{\"name\":\"x\",\"group\":\"apps\","
                       "\"kind\":\"deployments\"},\"code\":404}");
}

Test(kube_json, status_404_name_quoted_like_go_percent_q)
{
    struct kstatus st;

    /* %q escapes quotes, backslashes and controls; JSON then escapes them again. */
    kstatus_not_found(&st, "", "pods", "a\"b\\c\x01\xff");
    cr_expect_str_eq(st.message, "pods \"a\\\"b\\\\c\\x01\\xff\" not found");
    kstatus_not_found(&st, "", "pods", "caf\xc3\xa9\xc2\xa0");
    cr_expect_str_eq(st.message, "pods \"caf\xc3\xa9\\u00a0\" not found");
}

Test(kube_json, status_429_not_ready)
{
    struct kstatus st;

    kstatus_not_ready(&st, 5.0);
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                       "\"Failure\",\"message\":\"storage is (re)initializing\",\"reason\":"
                       "\"TooManyRequests\",\"details\":{\"retryAfterSeconds\":1},"
                       "\"code\":429}");
}

Test(kube_json, not_ready_retry_after_curve)
{
    static const struct {
        double t;
        int want;
    } cases[] = {
        {0, 1},  {-5, 1},  {11.5, 1}, {11.6, 2}, {18.2, 2},  {18.4, 3},
        {23.0, 3}, {23.2, 4}, {56.6, 29}, {56.7, 30}, {60, 30}, {1e9, 30},
    };
    struct kstatus st;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        kstatus_not_ready(&st, cases[i].t);
        cr_expect_eq(st.retry_after, cases[i].want, "t=%g got %d", cases[i].t, st.retry_after);
    }
    kstatus_not_ready(&st, NAN);
    cr_expect_eq(st.retry_after, 1);
    kstatus_not_ready(&st, INFINITY);
    cr_expect_eq(st.retry_after, 30);
}

Test(kube_json, status_422_invalid_list_options)
{
    static const char msg[] = "Forbidden: resourceVersionMatch is forbidden unless "
                              "resourceVersion is provided";
    struct kstatus st;

    kstatus_set(&st, 422, "Invalid", "ListOptions.meta.k8s.io \"\" is invalid: "
                "resourceVersionMatch: %s", msg);
    st.group = "meta.k8s.io";
    st.kind = "ListOptions";
    st.causes[0] = (struct kstatus_cause){"FieldValueForbidden", msg, "resourceVersionMatch"};
    st.n_causes = 1;
    expect_status(&st,
                  "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                  "\"Failure\",\"message\":\"ListOptions.meta.k8s.io \\\"\\\" is invalid: "
                  "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
                  "resourceVersion is provided\",\"reason\":\"Invalid\",\"details\":{\"group\":"
                  "\"meta.k8s.io\",\"kind\":\"ListOptions\",\"causes\":[{\"reason\":"
                  "\"FieldValueForbidden\",\"message\":\"Forbidden: resourceVersionMatch is "
                  "forbidden unless resourceVersion is provided\",\"field\":"
                  "\"resourceVersionMatch\"}]},\"code\":422}");
}

Test(kube_json, status_500_invalid_rv_has_no_reason)
{
    struct kstatus st;

    kstatus_set(&st, 500, NULL, "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: "
                "parsing \"abc\": invalid syntax");
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                       "\"Failure\",\"message\":\"resourceVersion: Invalid value: \\\"abc\\\": "
                       "strconv.ParseUint: parsing \\\"abc\\\": invalid syntax\",\"code\":500}");
}

Test(kube_json, status_continue_in_metadata_and_omitempty)
{
    struct kstatus st;

    kstatus_set(&st, 410, "Expired", "The provided continue parameter is too old.");
    st.continue_tok = "eyJ2Ijo";
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{\"continue\":"
                       "\"eyJ2Ijo\"},\"status\":\"Failure\",\"message\":\"The provided continue "
                       "parameter is too old.\",\"reason\":\"Expired\",\"code\":410}");
    /* Empty strings, zero code and cause members are omitted; details {} when only "set". */
    kstatus_set(&st, 0, "", "%s", "");
    st.name = "";
    st.causes[0] = (struct kstatus_cause){"R", NULL, ""};
    st.n_causes = 1;
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                       "\"Success\",\"details\":{\"causes\":[{\"reason\":\"R\"}]}}");
}

Test(kube_json, status_escapes_every_string)
{
    struct kstatus st;

    kstatus_set(&st, 400, "Bad<Request>", "a&b\n");
    st.name = "n\"";
    st.continue_tok = "<";
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{\"continue\":"
                       "\"\\u003c\"},\"status\":\"Failure\",\"message\":\"a\\u0026b\\n\","
                       "\"reason\":\"Bad\\u003cRequest\\u003e\",\"details\":{\"name\":"
                       "\"n\\\"\"},\"code\":400}");
}

Test(kube_json, status_snprintf_semantics)
{
    struct kstatus st;
    char small[16];
    char *full;
    size_t need;

    kstatus_too_old(&st, 1, 2);
    full = status_body(&st);
    memset(small, 'X', sizeof(small));
    need = kube_json_status(&st, small, sizeof(small));
    cr_expect_eq(need, strlen(full));
    cr_expect_eq(small[15], '\0');
    cr_expect_eq(strncmp(small, full, 15), 0);
    cr_expect_eq(kube_json_status(&st, small, 0), need);
    free(full);
}

/* ---- Go string escaping ---------------------------------------------------------------- */

Test(kube_json, quote_short_escapes)
{
    expect_quote("a\"b\\c\nd\re\tf", 11, "\"a\\\"b\\\\c\\nd\\re\\tf\"");
    /* Go >= 1.22 writes \b and \f short. */
    expect_quote("\b\f", 2, "\"\\b\\f\"");
}

Test(kube_json, quote_controls_as_u00xx_and_del_raw)
{
    expect_quote("\x01\x1f\x0b", 3, "\"\\u0001\\u001f\\u000b\"");
    expect_quote("a\0b", 3, "\"a\\u0000b\"");
    expect_quote("\x7f", 1, "\"\x7f\"");
}

Test(kube_json, quote_html_safe_but_not_slash)
{
    expect_quote("<a href='/x'>&</a>", 18,
                 "\"\\u003ca href='/x'\\u003e\\u0026\\u003c/a\\u003e\"");
}

Test(kube_json, quote_line_separators)
{
    expect_quote("a\xe2\x80\xa8" "b\xe2\x80\xa9", 8, "\"a\\u2028b\\u2029\"");
    /* U+2027 and U+202A are left alone. */
    expect_quote("\xe2\x80\xa7\xe2\x80\xaa", 6, "\"\xe2\x80\xa7\xe2\x80\xaa\"");
}

Test(kube_json, quote_invalid_utf8_per_byte)
{
    expect_quote("\xff", 1, "\"\\ufffd\"");
    /* A truncated 3-byte sequence: each byte on its own (Go resyncs at the next byte). */
    expect_quote("\xe2\x82x", 3, "\"\\ufffd\\ufffdx\"");
    /* Surrogates and overlongs are invalid. */
    expect_quote("\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"");
    expect_quote("\xc0\x80", 2, "\"\\ufffd\\ufffd\"");
    expect_quote("\xf4\x90\x80\x80", 4, "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
    /* Valid multi-byte text, including a literal U+FFFD, passes through. */
    expect_quote("\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbd", 9,
                 "\"\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbd\"");
    /* A sequence cut by len is invalid even if more bytes follow in memory. */
    expect_quote("\xc3\xa9", 1, "\"\\ufffd\"");
}

Test(kube_json, quote_snprintf_semantics)
{
    char buf[4];

    cr_expect_eq(kube_json_quote("hello", 5, buf, sizeof(buf)), 7);
    cr_expect_str_eq(buf, "\"he");
    cr_expect_eq(kube_json_quote("", 0, buf, sizeof(buf)), 2);
    cr_expect_str_eq(buf, "\"\"");
    cr_expect_eq(kube_json_quote(NULL, 0, NULL, 0), 2);
}

/* ---- member spans ---------------------------------------------------------------------- */

Test(kube_json, member_spans)
{
    static const char doc[] = " {\"kind\" : \"Pod\", \"metadata\":{\"name\":\"a\",\"x\":[1,{}]},"
                              "\"n\":-1.5e+3,\"t\":true,\"z\":null} ";
    char v[128];

    cr_expect_eq(member(doc, "kind", v, sizeof(v)), 0);
    cr_expect_str_eq(v, "\"Pod\"");
    cr_expect_eq(member(doc, "metadata", v, sizeof(v)), 0);
    cr_expect_str_eq(v, "{\"name\":\"a\",\"x\":[1,{}]}");
    cr_expect_eq(member(doc, "n", v, sizeof(v)), 0);
    cr_expect_str_eq(v, "-1.5e+3");
    cr_expect_eq(member(doc, "t", v, sizeof(v)), 0);
    cr_expect_str_eq(v, "true");
    cr_expect_eq(member(doc, "z", v, sizeof(v)), 0);
    cr_expect_str_eq(v, "null");
    /* Only top-level members count. */
    cr_expect_eq(member(doc, "name", v, sizeof(v)), -ENOENT);
    cr_expect_eq(member("{}", "a", v, sizeof(v)), -ENOENT);
}

Test(kube_json, member_last_duplicate_wins_and_escaped_keys_match)
{
    char v[64];

    cr_expect_eq(member("{\"a\":1,\"a\":2}", "a", v, sizeof(v)), 0);
    cr_expect_str_eq(v, "2");
    cr_expect_eq(member("{\"\\u006bind\":\"x\"}", "kind", v, sizeof(v)), 0);
    cr_expect_str_eq(v, "\"x\"");
    cr_expect_eq(member("{\"k\\\"\":1}", "k\"", v, sizeof(v)), 0);
    cr_expect_eq(member("{\"\\ud83d\\ude00\":1}", "\xf0\x9f\x98\x80", v, sizeof(v)), 0);
    cr_expect_eq(member("{\"Kind\":1}", "kind", v, sizeof(v)), -ENOENT);
    cr_expect_eq(member("{\"kin\":1}", "kind", v, sizeof(v)), -ENOENT);
}

static const char *const malformed[] = {
    "", " ", "{", "}", "[]", "[{}]", "\"a\"", "1", "null", "{\"a\"", "{\"a\":}", "{\"a\":1,}",
    "{,\"a\":1}", "{\"a\":1} x", "{\"a\":1}}", "{\"a\":tru}", "{\"a\":truex}", "{\"a\":01}",
    "{\"a\":1.}", "{\"a\":.5}", "{\"a\":1e}", "{\"a\":1e+}", "{\"a\":-}", "{\"a\":+1}",
    "{\"a\":\"\x01\"}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}", "{\"a\":\"\\u12g4\"}",
    "{'a':1}", "{\"a\" 1}", "{\"a\":[1,]}", "{\"a\":[1 2]}", "{\"a\":\"abc}", "{\"a\":\"\\",
    "{\"a\":NaN}", "{a:1}", "{\"a\":1 \"b\":2}", "{\"a\":{\"b\":1}", "{\"a\":[}", "\xef\xbb\xbf{}",
};

Test(kube_json, member_rejects_malformed)
{
    char v[64];

    for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
        cr_expect_eq(member(malformed[i], "a", v, sizeof(v)), -EPROTO, "[%zu] %s", i,
                     malformed[i]);
    }
    cr_expect_eq(kube_json_member(NULL, 0, "a", &(size_t){0}, &(size_t){0}), -EPROTO);
}

static const char pod[] =
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\",\"namespace\":"
    "\"default\",\"resourceVersion\":\"12345\",\"labels\":{\"app\":\"x\",\"tier\":\"web\"}},"
    "\"spec\":{\"nodeName\":\"n1\",\"hostNetwork\":true,\"priority\":0,\"x\":1.5,"
    "\"containers\":[{\"name\":\"c\",\"image\":\"i:1\"}]},\"status\":{\"phase\":\"Running\"}}";

Test(kube_json, every_truncation_is_rejected_without_overread)
{
    size_t n = strlen(pod);

    for (size_t cut = 0; cut < n; cut++) {
        char *d = exact(pod, cut);
        size_t off, len;
        struct kube_event ev;
        struct kube_meta m;
        char *s;

        cr_expect_eq(kube_json_member(d, cut, "spec", &off, &len), -EPROTO, "cut %zu", cut);
        cr_expect_eq(kube_json_event_parse(d, cut, &ev), -EPROTO);
        s = kube_json_strip_type_meta(d, cut, &len);
        cr_expect_null(s);
        free(s);
        cr_expect_eq(kube_meta_parse(d, cut, NULL, &m), -EPROTO);
        free(d);
    }
}

static char *nested(size_t depth)
{
    char *s = malloc(2 * depth + 16);
    size_t o = 0;

    o += (size_t)snprintf(s, 16, "{\"a\":");
    for (size_t i = 0; i < depth; i++) {
        s[o++] = '[';
    }
    for (size_t i = 0; i < depth; i++) {
        s[o++] = ']';
    }
    s[o++] = '}';
    s[o] = '\0';
    return s;
}

Test(kube_json, nesting_is_capped)
{
    char *ok = nested(KUBE_JSON_MAX_DEPTH - 1);
    char *deep = nested(KUBE_JSON_MAX_DEPTH);
    char *huge = nested(100000);
    size_t off, len;

    cr_expect_eq(kube_json_member(ok, strlen(ok), "a", &off, &len), 0);
    cr_expect_eq(kube_json_member(deep, strlen(deep), "a", &off, &len), -EPROTO);
    cr_expect_eq(kube_json_member(huge, strlen(huge), "a", &off, &len), -EPROTO);
    free(ok);
    free(deep);
    free(huge);
}

/* ---- array iteration ------------------------------------------------------------------- */

/* Joins the element spans of <arr> with '|'; returns the last rc. */
static int array_walk(const char *arr, char *out, size_t cap)
{
    size_t n = strlen(arr);
    char *d = exact(arr, n);
    size_t pos = 0, off = 0, len = 0, o = 0;
    int rc;

    out[0] = '\0';
    for (;;) {
        rc = kube_json_array_next(d, n, &pos, &off, &len);
        if (rc != 1) {
            break;
        }
        cr_assert_leq(off + len, n);
        o += (size_t)snprintf(out + o, cap - o, "%s%.*s", o ? "|" : "", (int)len, d + off);
    }
    free(d);
    return rc;
}

Test(kube_json, array_next_walks_elements)
{
    char out[256];

    cr_expect_eq(array_walk("[{\"a\":[1,2]},\"x,y\",-1.5,true,null,[]]", out, sizeof(out)), 0);
    cr_expect_str_eq(out, "{\"a\":[1,2]}|\"x,y\"|-1.5|true|null|[]");
    cr_expect_eq(array_walk(" [ 1 , { } ] \n", out, sizeof(out)), 0);
    cr_expect_str_eq(out, "1|{ }");
    cr_expect_eq(array_walk("[]", out, sizeof(out)), 0);
    cr_expect_str_eq(out, "");
}

Test(kube_json, array_next_end_is_sticky)
{
    size_t pos = 0, off, len;

    cr_expect_eq(kube_json_array_next("[1]", 3, &pos, &off, &len), 1);
    cr_expect_eq(kube_json_array_next("[1]", 3, &pos, &off, &len), 0);
    cr_expect_eq(kube_json_array_next("[1]", 3, &pos, &off, &len), 0);
}

Test(kube_json, array_next_rejects_malformed)
{
    static const char *const bad[] = {"", "{}", "[", "[1", "[1,", "[1,]", "[,1]", "[1 2]",
                                      "[1]]", "[1] x", "[tru]", "[{]", "[\"a]", "1"};
    char out[256];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_expect_eq(array_walk(bad[i], out, sizeof(out)), -EPROTO, "%s", bad[i]);
    }
}

/* ---- watch events ---------------------------------------------------------------------- */

Test(kube_json, event_parse_spans_object)
{
    static const char line[] = "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"x\":[1]}}";
    struct kube_event ev;

    cr_assert_eq(kube_json_event_parse(line, strlen(line), &ev), 0);
    cr_expect_eq(ev.type, WATCH_MODIFIED);
    cr_expect_eq(ev.obj_len, strlen("{\"kind\":\"Pod\",\"x\":[1]}"));
    cr_expect_eq(memcmp(line + ev.obj_off, "{\"kind\":\"Pod\",\"x\":[1]}", ev.obj_len), 0);
}

Test(kube_json, event_parse_all_types_any_order)
{
    static const struct {
        const char *line;
        enum watch_type type;
    } cases[] = {
        {"{\"type\":\"ADDED\",\"object\":{}}", WATCH_ADDED},
        {"{\"object\":{},\"type\":\"DELETED\"}", WATCH_DELETED},
        {" { \"type\" : \"BOOKMARK\" , \"object\" : { } } \n", WATCH_BOOKMARK},
        {"{\"type\":\"ERROR\",\"extra\":[1,2],\"object\":{\"code\":410}}", WATCH_ERROR},
        {"{\"type\":\"\\u0041DDED\",\"object\":{}}", WATCH_ADDED},
        {"{\"type\":\"ADDED\",\"type\":\"MODIFIED\",\"object\":{}}", WATCH_MODIFIED},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct kube_event ev;
        size_t n = strlen(cases[i].line);
        char *d = exact(cases[i].line, n);

        cr_expect_eq(kube_json_event_parse(d, n, &ev), 0, "%s", cases[i].line);
        cr_expect_eq(ev.type, cases[i].type, "%s", cases[i].line);
        cr_expect_eq(d[ev.obj_off], '{');
        cr_expect_eq(d[ev.obj_off + ev.obj_len - 1], '}');
        free(d);
    }
}

Test(kube_json, event_parse_rejects)
{
    static const char *const bad[] = {
        "{\"type\":\"UPDATED\",\"object\":{}}",
        "{\"type\":\"added\",\"object\":{}}",
        "{\"type\":\"ADDED \",\"object\":{}}",
        "{\"type\":1,\"object\":{}}",
        "{\"type\":null,\"object\":{}}",
        "{\"type\":\"ADDED\",\"object\":\"{}\"}",
        "{\"type\":\"ADDED\",\"object\":[]}",
        "{\"type\":\"ADDED\",\"object\":null}",
        "{\"type\":\"ADDED\"}",
        "{\"object\":{}}",
        "{\"type\":\"ADDED\",\"object\":{}",
        "{\"type\":\"ADDED\",\"object\":{}}x",
        "[\"ADDED\"]",
        "",
    };
    struct kube_event ev;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t n = strlen(bad[i]);
        char *d = exact(bad[i], n);

        cr_expect_eq(kube_json_event_parse(d, n, &ev), -EPROTO, "%s", bad[i]);
        free(d);
    }
}

/* ---- type-meta stripping --------------------------------------------------------------- */

Test(kube_json, strip_type_meta_any_position)
{
    static const struct {
        const char *in;
        const char *out;
    } cases[] = {
        {"{\"kind\":\"Pod\"}", "{}"},
        {"{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}", "{}"},
        {"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\"}}",
         "{\"metadata\":{\"name\":\"a\"}}"},
        {"{\"metadata\":{},\"kind\":\"Pod\",\"spec\":{}}", "{\"metadata\":{},\"spec\":{}}"},
        {"{\"metadata\":{},\"kind\":\"Pod\"}", "{\"metadata\":{}}"},
        {"{\"a\":1,\"kind\":\"P\",\"apiVersion\":\"v1\"}", "{\"a\":1}"},
        {"{\"kind\":\"P\",\"a\":1,\"apiVersion\":\"v1\",\"b\":2}", "{\"a\":1,\"b\":2}"},
        {"{\"kind\":\"a\",\"kind\":\"b\",\"x\":1}", "{\"x\":1}"},
        {"{\"metadata\":{\"kind\":\"x\"},\"spec\":{\"apiVersion\":\"y\"}}",
         "{\"metadata\":{\"kind\":\"x\"},\"spec\":{\"apiVersion\":\"y\"}}"},
        {" { \"kind\" : \"P\" , \"a\" : 1 } \n", " { \"a\" : 1 } \n"},
        {"{ \"a\" : 1 , \"kind\" : \"P\" }", "{ \"a\" : 1 }"},
        {"{}", "{}"},
        {" {  } ", " {  } "},
        {"{\"Kind\":1,\"apiversion\":2}", "{\"Kind\":1,\"apiversion\":2}"},
        {"{\"\\u006bind\":\"P\",\"a\":\"\\u006bind\"}", "{\"a\":\"\\u006bind\"}"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *out = strip(cases[i].in);
        size_t off, len;

        cr_assert_not_null(out, "%s", cases[i].in);
        cr_expect_str_eq(out, cases[i].out, "%s", cases[i].in);
        /* Still a well-formed object without the members. */
        cr_expect_eq(kube_json_member(out, strlen(out), "kind", &off, &len), -ENOENT);
        free(out);
    }
}

Test(kube_json, strip_type_meta_rejects_malformed)
{
    for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
        char *out = strip(malformed[i]);

        cr_expect_null(out, "[%zu] %s", i, malformed[i]);
        free(out);
    }
}

/* ---- metadata -------------------------------------------------------------------------- */

static const char *const pod_fields[] = {"spec.nodeName", "status.phase", "spec.hostNetwork",
                                         "spec.priority", "spec.x", "spec.containers",
                                         "spec.missing", "metadata.name", NULL};

static const char *kv_get(const struct blob_kv *kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(kv[i].key, key) == 0) {
            return kv[i].val;
        }
    }
    return NULL;
}

Test(kube_json, meta_parse_pod)
{
    size_t n = strlen(pod);
    char *d = exact(pod, n);
    struct kube_meta m;

    cr_assert_eq(kube_meta_parse(d, n, pod_fields, &m), 0);
    cr_expect_str_eq(m.meta.name, "a");
    cr_expect_str_eq(m.meta.ns, "default");
    cr_expect_str_eq(m.meta.rv_str, "12345");
    cr_expect_eq(m.meta.rv_len, 5);
    cr_expect_eq(memcmp(d + m.meta.rv_off, "12345", 5), 0);
    cr_expect_eq(d[m.meta.rv_off - 1], '"');
    cr_expect_eq(m.meta.n_labels, 2);
    cr_expect_str_eq(kv_get(m.meta.labels, m.meta.n_labels, "app"), "x");
    cr_expect_str_eq(kv_get(m.meta.labels, m.meta.n_labels, "tier"), "web");
    cr_expect_eq(m.meta.n_fields, 5);
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "spec.nodeName"), "n1");
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "status.phase"), "Running");
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "spec.hostNetwork"), "true");
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "spec.priority"), "0");
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "metadata.name"), "a");
    cr_expect_null(kv_get(m.meta.fields, m.meta.n_fields, "spec.x"));
    cr_expect_null(kv_get(m.meta.fields, m.meta.n_fields, "spec.containers"));
    cr_expect_null(kv_get(m.meta.fields, m.meta.n_fields, "spec.missing"));
    kube_meta_fini(&m);
    free(d);
}

Test(kube_json, meta_parse_optional_parts)
{
    static const char node[] = "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"a\":\"1\",\"b\":2,"
                               "\"a\":\"3\",\"c\":null}},\"spec\":{\"unschedulable\":false,"
                               "\"big\":9007199254740992,\"neg\":-42,\"s\":{\"t\":\"deep\"}}}";
    static const char *const fields[] = {"spec.unschedulable", "spec.big", "spec.neg",
                                         "spec.s.t", "spec.s.t.u", "", NULL};
    struct kube_meta m;

    cr_assert_eq(kube_meta_parse(node, strlen(node), fields, &m), 0);
    cr_expect_null(m.meta.ns);
    cr_expect_str_eq(m.meta.rv_str, "");
    cr_expect_eq(m.meta.rv_len, 0);
    cr_expect_eq(m.meta.rv_off, 0);
    /* Non-string label values are skipped; a repeated key keeps its last value. */
    cr_expect_eq(m.meta.n_labels, 1);
    cr_expect_str_eq(kv_get(m.meta.labels, m.meta.n_labels, "a"), "3");
    cr_expect_eq(m.meta.n_fields, 4);
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "spec.unschedulable"), "false");
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "spec.big"), "9007199254740992");
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "spec.neg"), "-42");
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "spec.s.t"), "deep");
    kube_meta_fini(&m);
    kube_meta_fini(&m); /* idempotent */
    kube_meta_fini(NULL);
}

Test(kube_json, meta_parse_rv_span_only_when_unescaped)
{
    static const char esc[] = "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\\u0032\"}}";
    static const char dup[] = "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"},"
                              "\"metadata\":{\"name\":\"b\",\"resourceVersion\":\"2\"}}";
    static const char ws[] = " {\"metadata\" : { \"resourceVersion\" : \"77\" , \"name\":\"a\"}} ";
    struct kube_meta m;

    cr_assert_eq(kube_meta_parse(esc, strlen(esc), NULL, &m), 0);
    cr_expect_str_eq(m.meta.rv_str, "12");
    cr_expect_eq(m.meta.rv_len, 0);
    kube_meta_fini(&m);
    /* A repeated "metadata": the last one, as Go's decoder and the byte scanner read it. */
    cr_assert_eq(kube_meta_parse(dup, strlen(dup), NULL, &m), 0);
    cr_expect_str_eq(m.meta.name, "b");
    cr_expect_str_eq(m.meta.rv_str, "2");
    cr_expect_eq(m.meta.rv_len, 1);
    cr_expect_eq(dup[m.meta.rv_off], '2');
    kube_meta_fini(&m);
    cr_assert_eq(kube_meta_parse(ws, strlen(ws), NULL, &m), 0);
    cr_expect_eq(m.meta.rv_len, 2);
    cr_expect_eq(memcmp(ws + m.meta.rv_off, "77", 2), 0);
    kube_meta_fini(&m);
}

/* Found by tests/fuzz/fuzz_reflector (corpus/kube_json/escaped-nul-keys): cJSON ends a
 * string at an escaped NUL, so a member "metadata\u0000" was read as "metadata" although Go
 * (and kube_json_member) see another key, and a repeated key was read as its first copy while
 * Go keeps the last. kube_meta_parse now sees what a Go client sees. */
Test(kube_json, meta_parse_reads_keys_as_go_does)
{
    static const char nul_key[] = "{\"metadata\\u0000\":{\"name\":\"fake\"}}";
    static const char nul_key2[] = "{\"metadata\":{\"name\\u0000\":\"fake\",\"name\":\"real\","
                                   "\"labels\":{\"app\\u0000\":\"x\"}}}";
    static const char nul_rv[] = "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"5\\u0000\"}}";
    static const char not_nul[] = "{\"metadata\":{\"name\":\"a\\\\u0000\"}}";
    static const char dup[] = "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n1\",\"name\":\"b\","
                              "\"namespace\":\"n2\",\"labels\":{\"x\":\"1\"},\"labels\":{\"y\":\"2\"}},"
                              "\"spec\":{\"nodeName\":\"n1\"},\"spec\":{\"nodeName\":\"n2\"}}";
    static const char *const fields[] = {"spec.nodeName", NULL};
    struct kube_meta m;
    uint64_t rv = 0;

    cr_expect_eq(kube_meta_parse(nul_key, strlen(nul_key), NULL, &m), -EPROTO, "no metadata");
    cr_assert_eq(kube_meta_parse(nul_key2, strlen(nul_key2), NULL, &m), 0);
    cr_expect_str_eq(m.meta.name, "real");
    cr_expect_null(kv_get(m.meta.labels, m.meta.n_labels, "app"), "\"app\\u0000\" is not app");
    kube_meta_fini(&m);
    cr_assert_eq(kube_meta_parse(nul_rv, strlen(nul_rv), NULL, &m), 0);
    cr_expect_neq(rv_parse(m.meta.rv_str, &rv), 0, "\"5\\u0000\" is not rv 5");
    kube_meta_fini(&m);
    cr_assert_eq(kube_meta_parse(not_nul, strlen(not_nul), NULL, &m), 0);
    cr_expect_str_eq(m.meta.name, "a\\u0000", "an escaped backslash, then text");
    kube_meta_fini(&m);
    cr_assert_eq(kube_meta_parse(dup, strlen(dup), fields, &m), 0);
    cr_expect_str_eq(m.meta.name, "b");
    cr_expect_str_eq(m.meta.ns, "n2");
    cr_expect_eq(m.meta.n_labels, 1);
    cr_expect_str_eq(kv_get(m.meta.labels, m.meta.n_labels, "y"), "2");
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "spec.nodeName"), "n2");
    kube_meta_fini(&m);
}

Test(kube_json, meta_parse_rejects)
{
    static const char *const bad[] = {
        "{}",
        "{\"metadata\":null}",
        "{\"metadata\":[]}",
        "{\"metadata\":{}}",
        "{\"metadata\":{\"name\":\"\"}}",
        "{\"metadata\":{\"name\":1}}",
        "{\"metadata\":{\"Name\":\"a\"}}",
        "{\"metadata\":{\"name\":\"a\",\"namespace\":1}}",
        "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":5}}",
        "{\"metadata\":{\"name\":\"a\"}} x",
        "{\"metadata\":{\"name\":\"a\"}",
        "[{\"metadata\":{\"name\":\"a\"}}]",
    };
    struct kube_meta m;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t n = strlen(bad[i]);
        char *d = exact(bad[i], n);

        cr_expect_eq(kube_meta_parse(d, n, NULL, &m), -EPROTO, "%s", bad[i]);
        cr_expect_null(m.arena);
        cr_expect_null(m.kv);
        free(d);
    }
}

Test(kube_json, meta_parse_depth_capped_before_cjson)
{
    char *deep = nested(KUBE_JSON_MAX_DEPTH);
    char *doc = malloc(strlen(deep) + 64);
    struct kube_meta m;

    /* {"metadata":{"name":"a"},"a":[[[...]]]} */
    snprintf(doc, strlen(deep) + 64, "{\"metadata\":{\"name\":\"a\"},%s", deep + 1);
    cr_expect_eq(kube_meta_parse(doc, strlen(doc), NULL, &m), -EPROTO);
    free(deep);
    free(doc);
}

Test(kube_json, blob_from_object)
{
    struct blob *b = kube_json_blob(pod, strlen(pod), pod_fields);

    cr_assert_not_null(b);
    cr_expect_eq(b->len, strlen(pod));
    cr_expect_eq(memcmp(b->data, pod, b->len), 0);
    cr_expect_str_eq(b->key, "default/a");
    cr_expect_str_eq(b->rv_str, "12345");
    cr_expect_eq(b->rv, 12345);
    cr_expect_eq(memcmp(b->data + b->rv_off, "12345", b->rv_len), 0);
    cr_expect_str_eq(blob_label(b, "app"), "x");
    cr_expect_str_eq(blob_field(b, "spec.nodeName"), "n1");
    blob_unref(b);
    cr_expect_null(kube_json_blob("{\"metadata\":{}}", 15, NULL));
}

/* ---- continue tokens ------------------------------------------------------------------- */

static const char sem_token[] =
    "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjAwLCJzdGFydCI6ImRlZmF1bHQvYlx1MDAwMCJ9";

Test(kube_json, continue_encode_matches_apiserver)
{
    char tok[256];

    cr_expect_eq(kube_json_continue_encode(200, "default/b", tok, sizeof(tok)),
                 strlen(sem_token));
    cr_expect_str_eq(tok, sem_token);
}

Test(kube_json, continue_encode_snprintf_semantics)
{
    char tok[8];

    cr_expect_eq(kube_json_continue_encode(200, "default/b", tok, sizeof(tok)),
                 strlen(sem_token));
    cr_expect_str_eq(tok, "eyJ2Ijo");
    cr_expect_eq(kube_json_continue_encode(200, "default/b", NULL, 0), strlen(sem_token));
}

Test(kube_json, continue_decode_semantics_example)
{
    char start[KUBE_JSON_CONTINUE_MAX], err[256];
    int64_t rv = 0;

    cr_assert_eq(kube_json_continue_decode(sem_token, &rv, start, sizeof(start), err,
                                           sizeof(err)), 0, "%s", err);
    cr_expect_eq(rv, 200);
    cr_expect_str_eq(start, "default/b");
    cr_expect_str_eq(err, "");
}

Test(kube_json, continue_round_trip)
{
    static const char *const keys[] = {"default/b", "b", "/default/b", "ns/a<b>&c\"d\\e",
                                       "caf\xc3\xa9/\xf0\x9f\x98\x80", "a.b-c_d", "/"};
    static const char *const want[] = {"default/b", "b", "default/b", "ns/a<b>&c\"d\\e",
                                       "caf\xc3\xa9/\xf0\x9f\x98\x80", "a.b-c_d", ""};
    static const int64_t rvs[] = {1, -1, INT64_MAX, INT64_MIN, 200};

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        for (size_t j = 0; j < sizeof(rvs) / sizeof(rvs[0]); j++) {
            char tok[1024], start[KUBE_JSON_CONTINUE_MAX], err[256];
            int64_t rv = 0;

            kube_json_continue_encode(rvs[j], keys[i], tok, sizeof(tok));
            cr_expect_eq(strspn(tok, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                     "0123456789-_"), strlen(tok));
            cr_expect_eq(kube_json_continue_decode(tok, &rv, start, sizeof(start), err,
                                                   sizeof(err)), 0, "%s: %s", keys[i], err);
            cr_expect_eq(rv, rvs[j]);
            cr_expect_str_eq(start, want[i]);
        }
    }
}

Test(kube_json, continue_decode_base64_errors)
{
    static const struct {
        const char *tok;
        const char *err;
    } cases[] = {
        {"garbage!!", "continue key is not valid: illegal base64 data at input byte 7"},
        {"eyJ2I", "continue key is not valid: illegal base64 data at input byte 4"},
        {"e", "continue key is not valid: illegal base64 data at input byte 0"},
        {"eyJ2Ijo=", "continue key is not valid: illegal base64 data at input byte 7"},
        {"eyJ2Ij==", "continue key is not valid: illegal base64 data at input byte 6"},
        {"ab+d", "continue key is not valid: illegal base64 data at input byte 2"},
        {"abc/", "continue key is not valid: illegal base64 data at input byte 3"},
        {"ab d", "continue key is not valid: illegal base64 data at input byte 2"},
        {"", "continue key is not valid: unexpected end of JSON input"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char start[64] = "junk", err[256];
        int64_t rv = 9;

        cr_expect_eq(kube_json_continue_decode(cases[i].tok, &rv, start, sizeof(start), err,
                                               sizeof(err)), -EINVAL, "%s", cases[i].tok);
        cr_expect_str_eq(err, cases[i].err, "%s", cases[i].tok);
        cr_expect_eq(rv, 0);
        cr_expect_str_eq(start, "");
    }
}

Test(kube_json, continue_decode_skips_newlines_like_go)
{
    char tok[256], start[64], err[256];
    int64_t rv = 0;

    snprintf(tok, sizeof(tok), "%.10s\n%.10s\r\n%s", sem_token, sem_token + 10, sem_token + 20);
    cr_expect_eq(kube_json_continue_decode(tok, &rv, start, sizeof(start), err, sizeof(err)), 0,
                 "%s", err);
    cr_expect_eq(rv, 200);
}

Test(kube_json, continue_decode_semantic_errors)
{
    expect_json_token_error("{\"v\":\"meta.k8s.io/v1\",\"rv\":0,\"start\":\"a\\u0000\"}",
                            "continue key is not valid: incorrect encoded start resourceVersion "
                            "(version meta.k8s.io/v1)");
    expect_json_token_error("{\"v\":\"meta.k8s.io/v1\",\"start\":\"a\"}",
                            "continue key is not valid: incorrect encoded start resourceVersion "
                            "(version meta.k8s.io/v1)");
    expect_json_token_error("{\"v\":\"meta.k8s.io/v1\",\"rv\":5,\"start\":\"\"}",
                            "continue key is not valid: encoded start key empty (version "
                            "meta.k8s.io/v1)");
    expect_json_token_error("{\"v\":\"meta.k8s.io/v2\",\"rv\":5,\"start\":\"a\"}",
                            "continue key is not valid: server does not recognize this encoded "
                            "version meta.k8s.io/v2");
    expect_json_token_error("{\"rv\":5,\"start\":\"a\"}",
                            "continue key is not valid: server does not recognize this encoded "
                            "version ");
    expect_json_token_error("null", "continue key is not valid: server does not recognize "
                                    "this encoded version ");
}

Test(kube_json, continue_decode_path_traversal)
{
    static const char *const bad[] = {"../x", "a/../../b", "a//b", "a/./b", "a/", "/..", ".",
                                      "//a", "a/.", "a/.."};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char json[128], want[128];

        snprintf(json, sizeof(json), "{\"v\":\"meta.k8s.io/v1\",\"rv\":5,\"start\":\"%s\"}",
                 bad[i]);
        snprintf(want, sizeof(want), "continue key is not valid: %s", bad[i]);
        expect_json_token_error(json, want);
    }
}

Test(kube_json, continue_decode_go_json_syntax_errors)
{
    static const struct {
        const char *json;
        const char *err;
    } cases[] = {
        {"x", "invalid character 'x' looking for beginning of value"},
        {"{\"v\":\"meta.k8s.io/v1\"", "unexpected end of JSON input"},
        {"{\"a\":tx}", "invalid character 'x' in literal true (expecting 'r')"},
        {"{\"a\":fals}", "invalid character '}' in literal false (expecting 'e')"},
        {"{\"a\":nul", "invalid character ' ' in literal null (expecting 'l')"},
        {"{\"rv\":t", "invalid character ' ' in literal true (expecting 'r')"},
        {"{} x", "invalid character 'x' after top-level value"},
        {"{\"a\":1 \"b\":2}", "invalid character '\"' after object key:value pair"},
        {"{\"a\" 1}", "invalid character '1' after object key"},
        {"{1:1}", "invalid character '1' looking for beginning of object key string"},
        {"[1 2]", "invalid character '2' after array element"},
        {"{\"a\":\"\x01\"}", "invalid character '\\x01' in string literal"},
        {"{\"a\":\"\\q\"}", "invalid character 'q' in string escape code"},
        {"{\"a\":\"\\u12x4\"}", "invalid character 'x' in \\u hexadecimal character escape"},
        {"{\"a\":-x}", "invalid character 'x' in numeric literal"},
        {"{\"a\":1.x}", "invalid character 'x' after decimal point in numeric literal"},
        {"{\"a\":1ex}", "invalid character 'x' in exponent of numeric literal"},
        {"{\"a\":1.", "invalid character ' ' after decimal point in numeric literal"},
        {"{\"a\":\"\\", "invalid character ' ' in string escape code"},
        {"{'a':1}", "invalid character '\\'' looking for beginning of object key string"},
        {"{\"a\":\n\t}", "invalid character '}' looking for beginning of value"},
        {"\xff", "invalid character '\xc3\xbf' looking for beginning of value"},
        {"\x85", "invalid character '\\u0085' looking for beginning of value"},
        {"\\", "invalid character '\\\\' looking for beginning of value"},
        {"{\"a\":01}", "invalid character '1' after object key:value pair"},
        {"", "unexpected end of JSON input"},
        {"   ", "unexpected end of JSON input"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char want[256];

        snprintf(want, sizeof(want), "continue key is not valid: %s", cases[i].err);
        expect_json_token_error(cases[i].json, want);
    }
}

Test(kube_json, continue_decode_go_json_type_errors)
{
    static const struct {
        const char *json;
        const char *err;
    } cases[] = {
        {"[]", "json: cannot unmarshal array into Go value of type storage.continueToken"},
        {"\"x\"", "json: cannot unmarshal string into Go value of type storage.continueToken"},
        {"12", "json: cannot unmarshal number into Go value of type storage.continueToken"},
        {"true", "json: cannot unmarshal bool into Go value of type storage.continueToken"},
        {"{\"v\":1}",
         "json: cannot unmarshal number into Go struct field continueToken.v of type string"},
        {"{\"rv\":\"1\"}",
         "json: cannot unmarshal string into Go struct field continueToken.rv of type int64"},
        {"{\"rv\":1.5}",
         "json: cannot unmarshal number 1.5 into Go struct field continueToken.rv of type int64"},
        {"{\"rv\":1e3}",
         "json: cannot unmarshal number 1e3 into Go struct field continueToken.rv of type int64"},
        {"{\"rv\":9223372036854775808}", "json: cannot unmarshal number 9223372036854775808 "
                                         "into Go struct field continueToken.rv of type int64"},
        {"{\"start\":{}}",
         "json: cannot unmarshal object into Go struct field continueToken.start of type string"},
        {"{\"start\":[1]}",
         "json: cannot unmarshal array into Go struct field continueToken.start of type string"},
        {"{\"v\":true,\"rv\":\"x\"}",
         "json: cannot unmarshal bool into Go struct field continueToken.v of type string"},
        /* The first type error wins even when a later value is fine. */
        {"{\"rv\":\"x\",\"v\":\"meta.k8s.io/v1\",\"rv\":5,\"start\":\"a\"}",
         "json: cannot unmarshal string into Go struct field continueToken.rv of type int64"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char want[256];

        snprintf(want, sizeof(want), "continue key is not valid: %s", cases[i].err);
        expect_json_token_error(cases[i].json, want);
    }
}

Test(kube_json, continue_decode_go_unmarshal_leniency)
{
    static const struct {
        const char *json;
        int64_t rv;
        const char *start;
    } cases[] = {
        /* Case-insensitive field names, U+017F folds to 's', unknown fields ignored. */
        {"{\"V\":\"meta.k8s.io/v1\",\"RV\":5,\"START\":\"a\\u0000\"}", 5, "a"},
        {"{\"v\":\"meta.k8s.io/v1\",\"rv\":5,\"\xc5\xbftart\":\"b\\u0000\"}", 5, "b"},
        {"{\"v\":\"meta.k8s.io/v1\",\"rv\":-1,\"start\":\"c\\u0000\",\"rc\":3,\"x\":[{}]}", -1,
         "c"},
        /* null leaves a field alone; the last repeat wins; escapes are decoded. */
        {"{\"v\":\"meta.k8s.io/v1\",\"rv\":5,\"start\":\"d\",\"start\":null,\"rv\":null}", 5,
         "d"},
        {"{\"v\":\"meta.k8s.io\\/v1\",\"rv\":-0,\"rv\":7,\"start\":\"ns\\/e\\u0000\"}", 7,
         "ns/e"},
        /* Without the trailing NUL the key is taken as is; a NUL ends it. */
        {"{\"v\":\"meta.k8s.io/v1\",\"rv\":5,\"start\":\"f\\u0000g\"}", 5, "f"},
        {" {\"v\":\"meta.k8s.io/v1\",\"rv\":5,\"start\":\"/h\"} \n", 5, "h"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char start[KUBE_JSON_CONTINUE_MAX], err[512];
        int64_t rv = 0;

        cr_expect_eq(decode_json(cases[i].json, &rv, start, err), 0, "%s: %s", cases[i].json,
                     err);
        cr_expect_eq(rv, cases[i].rv, "%s", cases[i].json);
        cr_expect_str_eq(start, cases[i].start, "%s", cases[i].json);
    }
}

Test(kube_json, continue_decode_limits)
{
    char *tok = malloc(KUBE_JSON_CONTINUE_MAX + 2);
    char start[4], err[256];
    int64_t rv = 0;

    memset(tok, 'A', KUBE_JSON_CONTINUE_MAX + 1);
    tok[KUBE_JSON_CONTINUE_MAX + 1] = '\0';
    cr_expect_eq(kube_json_continue_decode(tok, &rv, start, sizeof(start), err, sizeof(err)),
                 -EINVAL);
    cr_expect_str_eq(err, "continue key is not valid: longer than 4096 bytes");
    free(tok);
    /* start_cap too small for "default/b". */
    cr_expect_eq(kube_json_continue_decode(sem_token, &rv, start, sizeof(start), err,
                                           sizeof(err)), -EINVAL);
    cr_expect_eq(rv, 0);
    /* err may be NULL or tiny. */
    cr_expect_eq(kube_json_continue_decode("!", &rv, start, sizeof(start), NULL, 0), -EINVAL);
    cr_expect_eq(kube_json_continue_decode("!", &rv, start, sizeof(start), err, 5), -EINVAL);
    cr_expect_str_eq(err, "cont");
}

/*
 * Label and field values written with escapes reach the store decoded, and the selectors
 * compare the decoded text, whether the value is the blob's own copy (first sight) or a
 * shared interned string (from the second on).
 */
Test(kube_json, escaped_values_are_stored_and_matched_decoded)
{
    static const char obj[] =
        "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\",\"labels\":{"
        "\"q\":\"a\\\"b\\u00e9\\\\c\\/\",\"e\":\"\",\"u\":\"\\u0041pp\"}},"
        "\"spec\":{\"nodeName\":\"n\\\"1\\u00e9,=\\\\\"}}";
    static const char *const paths[] = {"spec.nodeName", NULL};
    char err[256];
    struct selector *by_node =
        selector_parse_fields("spec.nodeName=n\"1\xc3\xa9\\,\\=\\\\", err, sizeof(err));
    struct selector *other_node = selector_parse_fields("spec.nodeName=n\"1", err, sizeof(err));
    struct selector *by_label = selector_parse_labels("u=App,e=,q,q notin (a)", err, sizeof(err));
    struct selector *no_q = selector_parse_labels("!q", err, sizeof(err));

    cr_assert_not_null(by_node);
    cr_assert_not_null(other_node);
    cr_assert_not_null(by_label, "%s", err);
    cr_assert_not_null(no_q);
    for (int i = 0; i < 3; i++) {
        struct blob *b = kube_json_blob(obj, strlen(obj), paths);

        cr_assert_not_null(b);
        cr_expect_str_eq(blob_label(b, "q"), "a\"b\xc3\xa9\\c/", "round %d", i);
        cr_expect_str_eq(blob_label(b, "e"), "");
        cr_expect_str_eq(blob_label(b, "u"), "App");
        cr_expect_str_eq(blob_field(b, "spec.nodeName"), "n\"1\xc3\xa9,=\\");
        cr_expect(selector_match(by_node, b), "round %d", i);
        cr_expect_not(selector_match(other_node, b));
        cr_expect(selector_match(by_label, b), "round %d", i);
        cr_expect_not(selector_match(no_q, b));
        blob_unref(b);
    }
    selector_free(by_node);
    selector_free(other_node);
    selector_free(by_label);
    selector_free(no_q);
}

Test(kube_json, computed_fields_first_path_then_default_and_array_index)
{
    static const char obj[] = "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},"
                              "\"spec\":{\"nodeName\":\"n1\"},"
                              "\"status\":{\"podIPs\":[{\"ip\":\"10.0.0.7\"}]}}";
    static const char *const paths[] = {"spec.hostNetwork:spec.hostNetwork|=false",
                                        "status.podIP:status.podIP|status.podIPs.0.ip",
                                        "spec.nodeName", "missing:a.b|c.d", NULL};
    struct blob *b = kube_json_blob(obj, strlen(obj), paths);

    cr_assert_not_null(b);
    cr_assert_str_eq(blob_field(b, "spec.hostNetwork"), "false", "absent bool defaults");
    cr_assert_str_eq(blob_field(b, "status.podIP"), "10.0.0.7", "second path, array index");
    cr_assert_str_eq(blob_field(b, "spec.nodeName"), "n1");
    cr_assert_null(blob_field(b, "missing"), "no path and no default: absent");
    cr_assert_eq(b->n_fields, 3);
    blob_unref(b);
}
