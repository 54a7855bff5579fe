/*
 * test_rv.c - rv_parse must accept and reject exactly what Go's strconv.ParseUint(s,10,64)
 * does, and rv_parse_error must print Go's message with Go's %q quoting.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/rv.h"

Test(rv, parses_plain_decimal)
{
    static const struct {
        const char *s;
        uint64_t v;
    } ok[] = {
        {"0", 0},
        {"1", 1},
        {"007", 7},
        {"12345", 12345},
        {"18446744073709551615", UINT64_MAX},
        {"00000000000000000000000000042", 42},
    };

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        uint64_t v = 99;

        cr_expect_eq(rv_parse(ok[i].s, &v), 0, "%s", ok[i].s);
        cr_expect_eq(v, ok[i].v, "%s -> %llu", ok[i].s, (unsigned long long)v);
    }
}

Test(rv, empty_string_is_zero)
{
    uint64_t v = 5;

    cr_assert_eq(rv_parse("", &v), 0);
    cr_assert_eq(v, 0);
}

Test(rv, rejects_anything_but_digits)
{
    static const char *bad[] = {"-1",  "+1", " 1",  "1 ",  "0x10", "1_000", "abc",   "1.5",
                                "1e3", "١",  "\t1", "12a", "a12",  "0b1",   "1,000", "\n"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint64_t v = 7;

        cr_expect_eq(rv_parse(bad[i], &v), -EINVAL, "%s", bad[i]);
    }
}

Test(rv, overflow_is_erange)
{
    uint64_t v = 0;

    cr_expect_eq(rv_parse("18446744073709551616", &v), -ERANGE);
    cr_expect_eq(rv_parse("99999999999999999999999", &v), -ERANGE);
    cr_expect_eq(rv_parse("184467440737095516150", &v), -ERANGE);
}

Test(rv, first_error_met_wins_like_go)
{
    uint64_t v;

    /* Go walks left to right: the overflow at digit 20 is met before the 'x'. */
    cr_expect_eq(rv_parse("99999999999999999999x", &v), -ERANGE);
    cr_expect_eq(rv_parse("9x9999999999999999999999", &v), -EINVAL);
}

Test(rv, error_text_matches_go)
{
    char buf[256];

    rv_parse_error("abc", -EINVAL, buf, sizeof(buf));
    cr_assert_str_eq(buf, "strconv.ParseUint: parsing \"abc\": invalid syntax");
    rv_parse_error("18446744073709551616", -ERANGE, buf, sizeof(buf));
    cr_assert_str_eq(buf,
                     "strconv.ParseUint: parsing \"18446744073709551616\": value out of range");
}

Test(rv, error_quotes_like_go_quote)
{
    static const struct {
        const char *in;
        const char *quoted;
    } cases[] = {
        {"a\"b", "\"a\\\"b\""},
        {"a\\b", "\"a\\\\b\""},
        {"1\n2\t3\r", "\"1\\n2\\t3\\r\""},
        {"\x01\x7f", "\"\\x01\\x7f\""},
        {"\a\b\f\v", "\"\\a\\b\\f\\v\""},
        {"caf\xc3\xa9", "\"caf\xc3\xa9\""}, /* printable UTF-8 stays as is */
        {"\xff"
         "1",
         "\"\\xff1\""},                          /* invalid UTF-8 byte */
        {"\xc2\xa0", "\"\\u00a0\""},             /* NBSP is not IsPrint */
        {"\xe2\x80\x8b", "\"\\u200b\""},         /* zero-width space */
        {"\xf3\xa0\x80\x81", "\"\\U000e0001\""}, /* tag character */
        {"\xc0\x80", "\"\\xc0\\x80\""},          /* overlong NUL */
        /* rv.c's own IsPrint table called these printable; Go's does not */
        {"\xe0\xa3\xa2", "\"\\u08e2\""}, /* U+08E2, a format character */
        {"\xcd\xb8", "\"\\u0378\""},     /* U+0378, unassigned */
    };
    char buf[256];
    char want[256];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rv_parse_error(cases[i].in, -EINVAL, buf, sizeof(buf));
        snprintf(want, sizeof(want), "strconv.ParseUint: parsing %s: invalid syntax",
                 cases[i].quoted);
        cr_expect_str_eq(buf, want, "case %zu", i);
    }
}

Test(rv, error_text_truncates_safely)
{
    char buf[10];

    memset(buf, 'X', sizeof(buf));
    rv_parse_error("abcdef", -EINVAL, buf, sizeof(buf));
    cr_assert_eq(strlen(buf), sizeof(buf) - 1);
    cr_assert_eq(strncmp(buf, "strconv.P", 9), 0);
    rv_parse_error("abc", -EINVAL, buf, 0); /* must not write */
}

Test(rv, format_round_trips)
{
    char buf[21];

    cr_assert_eq(rv_format(0, buf), 1);
    cr_assert_str_eq(buf, "0");
    cr_assert_eq(rv_format(UINT64_MAX, buf), 20);
    cr_assert_str_eq(buf, "18446744073709551615");
    srand(7);
    for (int i = 0; i < 10000; i++) {
        uint64_t v = ((uint64_t)rand() << 33) ^ ((uint64_t)rand() << 11) ^ (uint64_t)rand();
        uint64_t back = 0;
        size_t n = rv_format(v, buf);

        cr_assert_eq(n, strlen(buf));
        cr_assert_eq(rv_parse(buf, &back), 0);
        cr_assert_eq(back, v);
    }
}
