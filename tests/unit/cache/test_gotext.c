/*
 * test_gotext.c - Go-compatible text: strconv.IsPrint against the Unicode 15.0.0 database for
 * every rune (gotext_unicode15.h), utf8.DecodeRune on every malformed form, strconv.Quote,
 * encoding/json string escaping and unescaping, strconv.ParseInt's accept/reject and error
 * choice, and encoding/base64. Expected texts are what Go 1.24 prints.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/gotext.h"
#include "cache/sbuf.h"
#include "tests/unit/cache/gotext_unicode15.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* A straightforward IsPrint: binary search over the maximal printable runs. */
static bool ref_is_print(uint32_t r)
{
    size_t lo = 0;
    size_t hi = N_ELEMS(unicode_print_runs);

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (unicode_print_runs[mid][1] < r) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < N_ELEMS(unicode_print_runs) && unicode_print_runs[lo][0] <= r;
}

/* ---- IsPrint --------------------------------------------------------------------------- */

Test(gotext, is_print_at_every_edge_of_go_tables)
{
    for (size_t i = 0; i < N_ELEMS(go_table_edges); i++) {
        cr_expect_eq(gotext_is_print(go_table_edges[i].r), go_table_edges[i].print, "U+%04X",
                     (unsigned)go_table_edges[i].r);
    }
}

Test(gotext, is_print_equals_unicode_15_for_every_rune)
{
    size_t bad = 0;

    for (uint32_t r = 0; r <= 0x10FFFF; r++) {
        if (gotext_is_print(r) != ref_is_print(r) && bad++ < 20) {
            cr_expect_fail("U+%04X: gotext %d, Unicode 15.0.0 %d", (unsigned)r, gotext_is_print(r),
                           ref_is_print(r));
        }
    }
    cr_expect_eq(bad, 0);
    cr_expect_not(gotext_is_print(0x110000));
    cr_expect_not(gotext_is_print(UINT32_MAX));
}

/* The four old copies disagreed on these; Go is right. */
Test(gotext, is_print_cases_the_old_copies_got_wrong)
{
    /* U+FDD0..U+FDEF are noncharacters (selector.c called them printable) */
    cr_expect_not(gotext_is_print(0xFDD0));
    cr_expect_not(gotext_is_print(0xFDEF));
    cr_expect(gotext_is_print(0xFDCF));
    cr_expect(gotext_is_print(0xFDF0));
    /* U+08E2 ARABIC DISPUTED END OF AYAH is a format character (kube_json.c: printable) */
    cr_expect_not(gotext_is_print(0x08E2));
    cr_expect(gotext_is_print(0x08E1));
    cr_expect(gotext_is_print(0x08E3));
    /* unassigned code points are not printable (all four copies said they were) */
    cr_expect_not(gotext_is_print(0x0378));
    cr_expect_not(gotext_is_print(0x2FFC)); /* assigned only in Unicode 15.1 */
    cr_expect_not(gotext_is_print(0xE0080));
    /* U+FFF0..U+FFF8 are unassigned (rv.c listed them, k8s_path.c did not) */
    cr_expect_not(gotext_is_print(0xFFF0));
    cr_expect_not(gotext_is_print(0xFFF8));
    /* what stays the same */
    cr_expect(gotext_is_print(' '));
    cr_expect_not(gotext_is_print(0xA0));
    cr_expect_not(gotext_is_print(0xAD));
    cr_expect(gotext_is_print(0xFFFD));
    cr_expect(gotext_is_print(0x1F600));
    cr_expect(gotext_is_print(0x323AF)); /* CJK extension H, new in 15.0 */
    cr_expect(gotext_is_print(0xE0100));
    cr_expect_not(gotext_is_print(0xF0000));
}

/* ---- UTF-8 ----------------------------------------------------------------------------- */

static void expect_decode(const char *s, size_t n, uint32_t want_r, size_t want_w)
{
    char *d = malloc(n ? n : 1); /* exact size: ASan sees any read past n */
    uint32_t r = 12345;
    size_t w;

    memcpy(d, s, n);
    w = gotext_decode_rune(d, n, &r);
    cr_expect_eq(w, want_w, "width of %zu bytes", n);
    cr_expect_eq(r, want_r, "rune U+%04X", (unsigned)r);
    free(d);
}

Test(gotext, decode_rune_like_go)
{
    expect_decode("a", 1, 'a', 1);
    expect_decode("\xc3\xa9", 2, 0xE9, 2);
    expect_decode("\xe2\x82\xac", 3, 0x20AC, 3);
    expect_decode("\xf0\x9f\x98\x80", 4, 0x1F600, 4);
    expect_decode("\xf4\x8f\xbf\xbf", 4, 0x10FFFF, 4);
    expect_decode("\xef\xbf\xbd", 3, GOTEXT_RUNE_ERROR, 3); /* a real U+FFFD is width 3 */
    /* every invalid form is RuneError of width 1 */
    expect_decode("", 0, GOTEXT_RUNE_ERROR, 0);
    expect_decode("\x80", 1, GOTEXT_RUNE_ERROR, 1);     /* stray continuation */
    expect_decode("\xc0\x80", 2, GOTEXT_RUNE_ERROR, 1); /* overlong NUL */
    expect_decode("\xc1\xbf", 2, GOTEXT_RUNE_ERROR, 1); /* overlong */
    expect_decode("\xe0\x80\x80", 3, GOTEXT_RUNE_ERROR, 1);
    expect_decode("\xf0\x80\x80\x80", 4, GOTEXT_RUNE_ERROR, 1);
    expect_decode("\xed\xa0\x80", 3, GOTEXT_RUNE_ERROR, 1);     /* surrogate */
    expect_decode("\xf4\x90\x80\x80", 4, GOTEXT_RUNE_ERROR, 1); /* > U+10FFFF */
    expect_decode("\xf5\x80\x80\x80", 4, GOTEXT_RUNE_ERROR, 1);
    expect_decode("\xff", 1, GOTEXT_RUNE_ERROR, 1);
    expect_decode("\xe2\x82", 2, GOTEXT_RUNE_ERROR, 1);  /* truncated */
    expect_decode("\xe2\x82x", 3, GOTEXT_RUNE_ERROR, 1); /* bad third byte */
    expect_decode("\xc3\xa9", 1, GOTEXT_RUNE_ERROR, 1);  /* cut by n */
}

Test(gotext, encode_then_decode_every_rune)
{
    for (uint32_t r = 0; r <= 0x10FFFF; r++) {
        char buf[GOTEXT_UTF_MAX];
        size_t n = gotext_encode_rune(r, buf);
        uint32_t back = 0;
        bool surrogate = r >= 0xD800 && r <= 0xDFFF;

        if (surrogate) {
            cr_assert_eq(n, 3);
            cr_assert_eq(memcmp(buf, "\xef\xbf\xbd", 3), 0);
            continue;
        }
        cr_assert_eq(n, r < 0x80 ? 1u : r < 0x800 ? 2u : r < 0x10000 ? 3u : 4u);
        cr_assert_eq(gotext_decode_rune(buf, n, &back), n);
        cr_assert_eq(back, r);
    }
}

Test(gotext, utf8_cut_never_splits_a_character)
{
    const char *s = "ab\xe2\x82\xac"
                    "cd"; /* € at [2, 5) */

    cr_expect_eq(gotext_utf8_cut(s, 3, 7), 2); /* inside the euro sign: back to its start */
    cr_expect_eq(gotext_utf8_cut(s, 4, 7), 2);
    cr_expect_eq(gotext_utf8_cut(s, 5, 7), 5);
    cr_expect_eq(gotext_utf8_cut(s, 2, 7), 2);
    cr_expect_eq(gotext_utf8_cut(s, 7, 7), 7);                      /* nothing follows */
    cr_expect_eq(gotext_utf8_cut("\x80\x80\x80\x80\x80", 4, 5), 1); /* at most 3 back */
    cr_expect_eq(gotext_utf8_cut("\xe2\x82\xac", 1, 3), 1);         /* no progress otherwise */
}

static void expect_trim(const char *s, const char *want)
{
    size_t off = 99;
    size_t n = gotext_trim_space(s, strlen(s), &off);

    cr_expect_eq(n, strlen(want), "%s", s);
    cr_expect_eq(memcmp(s + off, want, n), 0, "%s", s);
}

Test(gotext, trim_space_like_strings)
{
    expect_trim("", "");
    expect_trim("  \t\n\v\f\r ", "");
    expect_trim(" a b ", "a b");
    expect_trim("\xc2\xa0x\xc2\x85", "x");                     /* U+00A0, U+0085 */
    expect_trim("\xe3\x80\x80x\xe2\x80\xa8\xe2\x80\x8a", "x"); /* U+3000, U+2028, U+200A */
    expect_trim("\xe1\x9a\x80x\xe2\x81\x9f\xe2\x80\xaf", "x"); /* U+1680, U+205F, U+202F */
    expect_trim("\xe2\x80\x8bx", "\xe2\x80\x8bx");             /* U+200B is no space */
    expect_trim("\xa0x\xa0", "\xa0x\xa0");                     /* nor a stray byte */
}

/* ---- strconv.Quote ------------------------------------------------------------------------- */

static void expect_go_quote(const char *s, size_t n, const char *want)
{
    struct sbuf sb = {0};

    gotext_quote(&sb, s, n);
    cr_expect_str_eq(sb.p, want, "input %zu bytes", n);
    cr_expect_eq(sb.len, strlen(want));
    sbuf_free(&sb);
}

Test(gotext, quote_like_strconv_quote)
{
    expect_go_quote("", 0, "\"\"");
    expect_go_quote("a\"b\\c", 5, "\"a\\\"b\\\\c\"");
    expect_go_quote("\a\b\f\n\r\t\v", 7, "\"\\a\\b\\f\\n\\r\\t\\v\"");
    expect_go_quote("\x00\x01\x1f\x7f", 4, "\"\\x00\\x01\\x1f\\x7f\"");
    expect_go_quote("'", 1, "\"'\"");
    expect_go_quote("caf\xc3\xa9 \xe2\x98\xba", 9, "\"caf\xc3\xa9 \xe2\x98\xba\"");
    expect_go_quote("\xff"
                    "1",
                    2, "\"\\xff1\"");
    expect_go_quote("\xc0\x80", 2, "\"\\xc0\\x80\"");
    expect_go_quote("\xef\xbf\xbd", 3, "\"\xef\xbf\xbd\""); /* a real U+FFFD prints */
    expect_go_quote("\xc2\xa0", 2, "\"\\u00a0\"");
    expect_go_quote("\xe2\x80\x8b", 3, "\"\\u200b\"");
    expect_go_quote("\xf3\xa0\x80\x81", 4, "\"\\U000e0001\"");
    expect_go_quote("\xf4\x8f\xbf\xbf", 4, "\"\\U0010ffff\"");
}

/* The runes the old copies quoted differently: Go escapes them all. */
Test(gotext, quote_escapes_what_go_does_not_print)
{
    expect_go_quote("\xef\xb7\x90", 3, "\"\\ufdd0\"");         /* U+FDD0, noncharacter */
    expect_go_quote("\xe0\xa3\xa2", 3, "\"\\u08e2\"");         /* U+08E2, format */
    expect_go_quote("\xcd\xb8", 2, "\"\\u0378\"");             /* U+0378, unassigned */
    expect_go_quote("\xef\xbf\xb0", 3, "\"\\ufff0\"");         /* U+FFF0, unassigned */
    expect_go_quote("\xf3\xa0\x82\x80", 4, "\"\\U000e0080\""); /* unassigned tag */
}

/* ---- encoding/json strings ----------------------------------------------------------------- */

static void expect_json(const char *s, size_t n, const char *want)
{
    struct sbuf sb = {0};
    char *d = malloc(n ? n : 1);

    memcpy(d, s, n);
    gotext_json_quote(&sb, d, n);
    cr_expect_str_eq(sb.p, want, "input %zu bytes", n);
    sbuf_free(&sb);
    free(d);
}

Test(gotext, json_short_escapes)
{
    expect_json("a\"b\\c\nd\re\tf", 11, "\"a\\\"b\\\\c\\nd\\re\\tf\"");
    /* Go >= 1.22 writes \b and \f short. */
    expect_json("\b\f", 2, "\"\\b\\f\"");
}

Test(gotext, json_controls_as_u00xx_and_del_raw)
{
    expect_json("\x01\x1f\x0b", 3, "\"\\u0001\\u001f\\u000b\"");
    expect_json("a\0b", 3, "\"a\\u0000b\"");
    expect_json("\x7f", 1, "\"\x7f\"");
}

Test(gotext, json_html_safe_but_not_slash)
{
    expect_json("<a href='/x'>&</a>", 18, "\"\\u003ca href='/x'\\u003e\\u0026\\u003c/a\\u003e\"");
}

Test(gotext, json_line_separators)
{
    expect_json("a\xe2\x80\xa8"
                "b\xe2\x80\xa9",
                8, "\"a\\u2028b\\u2029\"");
    /* U+2027 and U+202A are left alone. */
    expect_json("\xe2\x80\xa7\xe2\x80\xaa", 6, "\"\xe2\x80\xa7\xe2\x80\xaa\"");
}

Test(gotext, json_invalid_utf8_per_byte)
{
    expect_json("\xff", 1, "\"\\ufffd\"");
    /* A truncated 3-byte sequence: each byte on its own (Go resyncs at the next byte). */
    expect_json("\xe2\x82x", 3, "\"\\ufffd\\ufffdx\"");
    /* Surrogates and overlongs are invalid. */
    expect_json("\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"");
    expect_json("\xc0\x80", 2, "\"\\ufffd\\ufffd\"");
    expect_json("\xf4\x90\x80\x80", 4, "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
    /* Valid multi-byte text, including a literal U+FFFD, passes through. */
    expect_json("\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbd", 9,
                "\"\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbd\"");
    /* A sequence cut by the length is invalid even if more bytes follow in memory. */
    expect_json("\xc3\xa9", 1, "\"\\ufffd\"");
}

Test(gotext, json_into_fixed_storage_truncates_and_counts)
{
    char buf[4];
    struct sbuf sb;

    sbuf_init_fixed(&sb, buf, sizeof(buf));
    gotext_json_quote(&sb, "hello", 5);
    cr_expect_eq(sbuf_need(&sb), 7);
    cr_expect_str_eq(buf, "\"he");
    sbuf_init_fixed(&sb, buf, sizeof(buf));
    gotext_json_quote(&sb, NULL, 0);
    cr_expect_eq(sbuf_need(&sb), 2);
    cr_expect_str_eq(buf, "\"\"");
    sbuf_init_fixed(&sb, NULL, 0);
    gotext_json_quote(&sb, NULL, 0);
    cr_expect_eq(sbuf_need(&sb), 2);
}

static void expect_unescape(const char *body, const char *want, size_t want_len)
{
    size_t n = strlen(body);
    char *d = malloc(n ? n : 1);
    const char *p = d;
    char out[256];
    size_t o = 0;

    memcpy(d, body, n);
    while (p < d + n) {
        o += gotext_json_unescape(&p, d + n, out + o);
        cr_assert_leq(p, d + n);
    }
    cr_expect_eq(o, want_len, "%s", body);
    cr_expect_eq(memcmp(out, want, want_len), 0, "%s", body);
    free(d);
}

Test(gotext, json_unescape_like_go)
{
    expect_unescape("abc", "abc", 3);
    expect_unescape("\\\"\\\\\\/\\b\\f\\n\\r\\t", "\"\\/\b\f\n\r\t", 8);
    expect_unescape("\\u00e9\\u20AC", "\xc3\xa9\xe2\x82\xac", 5);
    expect_unescape("\\u0000", "\0", 1);
    expect_unescape("\\ud83d\\ude00", "\xf0\x9f\x98\x80", 4); /* a surrogate pair */
    expect_unescape("\\ud83dx", "\xef\xbf\xbdx", 4);          /* lone high */
    expect_unescape("\\ude00", "\xef\xbf\xbd", 3);            /* lone low */
    expect_unescape("\\ud83d\\u0041",
                    "\xef\xbf\xbd"
                    "A",
                    4); /* high + non-low */
    expect_unescape("\xff"
                    "a",
                    "\xef\xbf\xbd"
                    "a",
                    4); /* invalid UTF-8 */
    expect_unescape("\xe2\x82\xac", "\xe2\x82\xac", 3);
}

/* ---- strconv.ParseInt ---------------------------------------------------------------------- */

Test(gotext, parse_int64_like_strconv)
{
    static const struct {
        const char *s;
        int rc;
        int64_t v;
    } cases[] = {
        {"0", 0, 0},
        {"-0", 0, 0},
        {"+0", 0, 0},
        {"1", 0, 1},
        {"+1", 0, 1},
        {"-1", 0, -1},
        {"012345", 0, 12345},
        {"-012345", 0, -12345},
        {"9223372036854775807", 0, INT64_MAX},
        {"-9223372036854775808", 0, INT64_MIN},
        {"9223372036854775808", -ERANGE, 0},
        {"-9223372036854775809", -ERANGE, 0},
        {"18446744073709551615", -ERANGE, 0},
        {"18446744073709551616", -ERANGE, 0},
        {"", -EINVAL, 0},
        {"+", -EINVAL, 0},
        {"-", -EINVAL, 0},
        {"++1", -EINVAL, 0},
        {" 1", -EINVAL, 0},
        {"1 ", -EINVAL, 0},
        {"1_000", -EINVAL, 0},
        {"0x10", -EINVAL, 0},
        {"1e3", -EINVAL, 0},
        {"1.0", -EINVAL, 0},
        /* the first problem met decides: a uint64 overflow before a bad byte is a range
         * error, an int64 overflow is only found after the whole string */
        {"18446744073709551616x", -ERANGE, 0},
        {"x18446744073709551616", -EINVAL, 0},
        {"9223372036854775808x", -EINVAL, 0},
    };

    for (size_t i = 0; i < N_ELEMS(cases); i++) {
        int64_t v = 42;
        int rc = gotext_parse_int64(cases[i].s, strlen(cases[i].s), &v);

        cr_expect_eq(rc, cases[i].rc, "%s: %d", cases[i].s, rc);
        cr_expect_eq(v, rc == 0 ? cases[i].v : 42, "%s", cases[i].s);
    }
    /* the length bounds the text, not a NUL */
    {
        int64_t v = 0;

        cr_expect_eq(gotext_parse_int64("123x", 3, &v), 0);
        cr_expect_eq(v, 123);
    }
}

/* ---- encoding/base64 ----------------------------------------------------------------------- */

static void expect_b64(enum gotext_base64 enc, const char *in, size_t n, const char *want)
{
    struct sbuf sb = {0};

    gotext_base64_encode(&sb, enc, in, n);
    cr_expect_str_eq(sb.p != NULL ? sb.p : "", want, "%zu bytes", n);
    sbuf_free(&sb);
}

Test(gotext, base64_encode_std_and_raw_url)
{
    /* RFC 4648 section 10 */
    static const char *const std[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
                                      "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    static const char *const raw_url[] = {"", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE", "Zm9vYmFy"};

    for (size_t n = 0; n <= 6; n++) {
        expect_b64(GOTEXT_BASE64_STD, "foobar", n, std[n]);
        expect_b64(GOTEXT_BASE64_RAW_URL, "foobar", n, raw_url[n]);
    }
    expect_b64(GOTEXT_BASE64_STD, "\xfb\xff", 2, "+/8=");
    expect_b64(GOTEXT_BASE64_RAW_URL, "\xfb\xff", 2, "-_8");
}

Test(gotext, base64url_decode_like_go)
{
    unsigned char out[16];
    size_t bad = 99;

    cr_expect_eq(gotext_base64url_decode("Zm9vYmFy", 8, out, &bad), 6);
    cr_expect_eq(memcmp(out, "foobar", 6), 0);
    cr_expect_eq(gotext_base64url_decode("Zm9vYg", 6, out, &bad), 4);
    cr_expect_eq(memcmp(out, "foob", 4), 0);
    cr_expect_eq(gotext_base64url_decode("Zm\n9v\r", 6, out, &bad), 3); /* newlines skipped */
    cr_expect_eq(memcmp(out, "foo", 3), 0);
    cr_expect_eq(gotext_base64url_decode("-_8", 3, out, &bad), 2);
    cr_expect_eq(memcmp(out, "\xfb\xff", 2), 0);
    cr_expect_eq(gotext_base64url_decode("", 0, out, &bad), 0);
    /* CorruptInputError offsets */
    cr_expect_eq(gotext_base64url_decode("Zm9vY", 5, out, &bad), -1); /* one symbol left */
    cr_expect_eq(bad, 4);
    cr_expect_eq(gotext_base64url_decode("Zm9v+", 5, out, &bad), -1); /* std alphabet */
    cr_expect_eq(bad, 4);
    cr_expect_eq(gotext_base64url_decode("Zm8=", 4, out, &bad), -1); /* no padding */
    cr_expect_eq(bad, 3);
}

/* ---- ParseBool and url.QueryEscape ---------------------------------------------- */

Test(gotext, parse_bool_is_strconv_parsebool)
{
    static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
    static const char *const bad[] = {"",  "yes",   "no",    "tRUE", "fALSE", "on",
                                      "2", " true", "true ", "y",    "TrUe"};
    bool b;

    for (size_t i = 0; i < 6; i++) {
        b = false;
        cr_expect_eq(gotext_parse_bool(yes[i], &b), 0, "%s", yes[i]);
        cr_expect(b, "%s", yes[i]);
        b = true;
        cr_expect_eq(gotext_parse_bool(no[i], &b), 0, "%s", no[i]);
        cr_expect_not(b, "%s", no[i]);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        b = true;
        cr_expect_eq(gotext_parse_bool(bad[i], &b), -EINVAL, "%s", bad[i]);
        cr_expect(b, "%s: untouched", bad[i]);
    }
    cr_expect_eq(gotext_parse_bool(NULL, &b), -EINVAL);
}

Test(gotext, query_escape)
{
    static const struct {
        const char *in;
        const char *out;
    } cases[] = {
        {"", ""},
        {"abcXYZ019-_.~", "abcXYZ019-_.~"},
        {"a b", "a+b"},
        {"app=x,tier!=web", "app%3Dx%2Ctier%21%3Dweb"},
        {"$&+,/:;=?@", "%24%26%2B%2C%2F%3A%3B%3D%3F%40"},
        {"a%b#c", "a%25b%23c"},
        {"\xc3\xa9\xff\x01", "%C3%A9%FF%01"},
        {"in (a, b)", "in+%28a%2C+b%29"},
    };
    char out[128];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = gotext_query_escape_to(cases[i].in, out, sizeof(out));

        cr_expect_str_eq(out, cases[i].out, "%s", cases[i].in);
        cr_expect_eq(n, strlen(cases[i].out), "%s", cases[i].in);
    }
}

Test(gotext, query_escape_truncates_like_snprintf)
{
    char out[5];

    cr_expect_eq(gotext_query_escape_to("a b=c", out, sizeof(out)), 7); /* a+b%3Dc */
    cr_expect_str_eq(out, "a+b%");
    cr_expect_eq(gotext_query_escape_to("==", out, 0), 6);
    cr_expect_eq(gotext_query_escape_to("==", NULL, 0), 6);
    memset(out, 'q', sizeof(out));
    cr_expect_eq(gotext_query_escape_to("abc", out, 1), 3);
    cr_expect_eq(out[0], '\0');
}
