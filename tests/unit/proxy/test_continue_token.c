/*
 * test_continue_token.c - continue tokens (SEMANTICS 1.6): encoding byte-identical to the
 * apiserver's, round trips, and DecodeContinue's error texts (base64, Go's JSON scanner and
 * decoder, version, rv, key, path traversal, limits).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/gotext.h"
#include "cache/sbuf.h"
#include "proxy/continue_token.h"

/* <in> as a RawURLEncoding token in <out> (gotext's encoder, tested in test_gotext.c). */
static void b64url(const char *in, size_t n, char *out, size_t cap)
{
    struct sbuf sb;

    sbuf_init_fixed(&sb, out, cap);
    gotext_base64_encode(&sb, GOTEXT_BASE64_RAW_URL, in, n);
    cr_assert_eq(sbuf_error(&sb), 0);
}

/* Decodes the token made of raw JSON <json>; returns rc, fills err/start. */
static int decode_json(const char *json, int64_t *rv, char *start, char *err)
{
    char tok[8192];

    b64url(json, strlen(json), tok, sizeof(tok));
    return continue_token_decode(tok, rv, start, CONTINUE_TOKEN_MAX, err, 512);
}

static void expect_json_token_error(const char *json, const char *want)
{
    char start[CONTINUE_TOKEN_MAX], err[512];
    int64_t rv = 7;

    cr_expect_eq(decode_json(json, &rv, start, err), -EINVAL, "%s", json);
    cr_expect_str_eq(err, want, "%s", json);
    cr_expect_eq(rv, 0);
}

/* ---- continue tokens ------------------------------------------------------------------- */

static const char sem_token[] =
    "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjAwLCJzdGFydCI6ImRlZmF1bHQvYlx1MDAwMCJ9";

Test(continue_token, continue_encode_matches_apiserver)
{
    char tok[256];

    cr_expect_eq(continue_token_encode(200, "default/b", tok, sizeof(tok)), strlen(sem_token));
    cr_expect_str_eq(tok, sem_token);
}

Test(continue_token, continue_encode_snprintf_semantics)
{
    char tok[8];

    cr_expect_eq(continue_token_encode(200, "default/b", tok, sizeof(tok)), strlen(sem_token));
    cr_expect_str_eq(tok, "eyJ2Ijo");
    cr_expect_eq(continue_token_encode(200, "default/b", NULL, 0), strlen(sem_token));
}

Test(continue_token, continue_decode_semantics_example)
{
    char start[CONTINUE_TOKEN_MAX], err[256];
    int64_t rv = 0;

    cr_assert_eq(continue_token_decode(sem_token, &rv, start, sizeof(start), err, sizeof(err)), 0,
                 "%s", err);
    cr_expect_eq(rv, 200);
    cr_expect_str_eq(start, "default/b");
    cr_expect_str_eq(err, "");
}

Test(continue_token, continue_round_trip)
{
    static const char *const keys[] = {
        "default/b", "b", "/default/b", "ns/a<b>&c\"d\\e", "caf\xc3\xa9/\xf0\x9f\x98\x80",
        "a.b-c_d",   "/"};
    static const char *const want[] = {
        "default/b", "b", "default/b", "ns/a<b>&c\"d\\e", "caf\xc3\xa9/\xf0\x9f\x98\x80",
        "a.b-c_d",   ""};
    static const int64_t rvs[] = {1, -1, INT64_MAX, INT64_MIN, 200};

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        for (size_t j = 0; j < sizeof(rvs) / sizeof(rvs[0]); j++) {
            char tok[1024], start[CONTINUE_TOKEN_MAX], err[256];
            int64_t rv = 0;

            continue_token_encode(rvs[j], keys[i], tok, sizeof(tok));
            cr_expect_eq(strspn(tok, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                     "0123456789-_"),
                         strlen(tok));
            cr_expect_eq(continue_token_decode(tok, &rv, start, sizeof(start), err, sizeof(err)), 0,
                         "%s: %s", keys[i], err);
            cr_expect_eq(rv, rvs[j]);
            cr_expect_str_eq(start, want[i]);
        }
    }
}

Test(continue_token, continue_decode_base64_errors)
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

        cr_expect_eq(
            continue_token_decode(cases[i].tok, &rv, start, sizeof(start), err, sizeof(err)),
            -EINVAL, "%s", cases[i].tok);
        cr_expect_str_eq(err, cases[i].err, "%s", cases[i].tok);
        cr_expect_eq(rv, 0);
        cr_expect_str_eq(start, "");
    }
}

Test(continue_token, continue_decode_skips_newlines_like_go)
{
    char tok[256], start[64], err[256];
    int64_t rv = 0;

    snprintf(tok, sizeof(tok), "%.10s\n%.10s\r\n%s", sem_token, sem_token + 10, sem_token + 20);
    cr_expect_eq(continue_token_decode(tok, &rv, start, sizeof(start), err, sizeof(err)), 0, "%s",
                 err);
    cr_expect_eq(rv, 200);
}

Test(continue_token, continue_decode_semantic_errors)
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

Test(continue_token, continue_decode_path_traversal)
{
    static const char *const bad[] = {"../x", "a/../../b", "a//b", "a/./b", "a/",
                                      "/..",  ".",         "//a",  "a/.",   "a/.."};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char json[128], want[128];

        snprintf(json, sizeof(json), "{\"v\":\"meta.k8s.io/v1\",\"rv\":5,\"start\":\"%s\"}",
                 bad[i]);
        snprintf(want, sizeof(want), "continue key is not valid: %s", bad[i]);
        expect_json_token_error(json, want);
    }
}

Test(continue_token, continue_decode_go_json_syntax_errors)
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

Test(continue_token, continue_decode_go_json_type_errors)
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

Test(continue_token, continue_decode_go_unmarshal_leniency)
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
        {"{\"v\":\"meta.k8s.io/v1\",\"rv\":5,\"start\":\"d\",\"start\":null,\"rv\":null}", 5, "d"},
        {"{\"v\":\"meta.k8s.io\\/v1\",\"rv\":-0,\"rv\":7,\"start\":\"ns\\/e\\u0000\"}", 7, "ns/e"},
        /* Without the trailing NUL the key is taken as is; a NUL ends it. */
        {"{\"v\":\"meta.k8s.io/v1\",\"rv\":5,\"start\":\"f\\u0000g\"}", 5, "f"},
        {" {\"v\":\"meta.k8s.io/v1\",\"rv\":5,\"start\":\"/h\"} \n", 5, "h"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char start[CONTINUE_TOKEN_MAX], err[512];
        int64_t rv = 0;

        cr_expect_eq(decode_json(cases[i].json, &rv, start, err), 0, "%s: %s", cases[i].json, err);
        cr_expect_eq(rv, cases[i].rv, "%s", cases[i].json);
        cr_expect_str_eq(start, cases[i].start, "%s", cases[i].json);
    }
}

Test(continue_token, continue_decode_limits)
{
    char *tok = malloc(CONTINUE_TOKEN_MAX + 2);
    char start[4], err[256];
    int64_t rv = 0;

    memset(tok, 'A', CONTINUE_TOKEN_MAX + 1);
    tok[CONTINUE_TOKEN_MAX + 1] = '\0';
    cr_expect_eq(continue_token_decode(tok, &rv, start, sizeof(start), err, sizeof(err)), -EINVAL);
    cr_expect_str_eq(err, "continue key is not valid: longer than 4096 bytes");
    free(tok);
    /* start_cap too small for "default/b". */
    cr_expect_eq(continue_token_decode(sem_token, &rv, start, sizeof(start), err, sizeof(err)),
                 -EINVAL);
    cr_expect_eq(rv, 0);
    /* err may be NULL or tiny. */
    cr_expect_eq(continue_token_decode("!", &rv, start, sizeof(start), NULL, 0), -EINVAL);
    cr_expect_eq(continue_token_decode("!", &rv, start, sizeof(start), err, 5), -EINVAL);
    cr_expect_str_eq(err, "cont");
}
