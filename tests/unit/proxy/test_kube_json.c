/*
 * test_kube_json.c - the byte scanner: member spans, array iteration, watch events,
 * type-meta stripping, malformed and truncated input, the nesting cap. Inputs that could be
 * over-read are copied to exact-size heap buffers so ASan sees overreads.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/kube_json.h"
#include "proxy/kube_meta.h"
#include "tests/unit/proxy/json_inputs.h"

/* ---- helpers -------------------------------------------------------------------------- */

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
    "",
    " ",
    "{",
    "}",
    "[]",
    "[{}]",
    "\"a\"",
    "1",
    "null",
    "{\"a\"",
    "{\"a\":}",
    "{\"a\":1,}",
    "{,\"a\":1}",
    "{\"a\":1} x",
    "{\"a\":1}}",
    "{\"a\":tru}",
    "{\"a\":truex}",
    "{\"a\":01}",
    "{\"a\":1.}",
    "{\"a\":.5}",
    "{\"a\":1e}",
    "{\"a\":1e+}",
    "{\"a\":-}",
    "{\"a\":+1}",
    "{\"a\":\"\x01\"}",
    "{\"a\":\"\\x\"}",
    "{\"a\":\"\\u12\"}",
    "{\"a\":\"\\u12g4\"}",
    "{'a':1}",
    "{\"a\" 1}",
    "{\"a\":[1,]}",
    "{\"a\":[1 2]}",
    "{\"a\":\"abc}",
    "{\"a\":\"\\",
    "{\"a\":NaN}",
    "{a:1}",
    "{\"a\":1 \"b\":2}",
    "{\"a\":{\"b\":1}",
    "{\"a\":[}",
    "\xef\xbb\xbf{}",
};

Test(kube_json, member_rejects_malformed)
{
    char v[64];

    for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
        cr_expect_eq(member(malformed[i], "a", v, sizeof(v)), -EPROTO, "[%zu] %s", i, malformed[i]);
    }
    cr_expect_eq(kube_json_member(NULL, 0, "a", &(size_t){0}, &(size_t){0}), -EPROTO);
}

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
    static const char *const bad[] = {"",      "{}",   "[",     "[1",    "[1,", "[1,]",  "[,1]",
                                      "[1 2]", "[1]]", "[1] x", "[tru]", "[{]", "[\"a]", "1"};
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
