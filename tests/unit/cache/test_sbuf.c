/*
 * test_sbuf.c - the capped text buffer: heap growth, the cap and its sticky error, fixed
 * storage with snprintf semantics (truncated prefix, full count, always NUL-terminated),
 * formatted appends of any length, clearing and handing over.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/sbuf.h"

Test(sbuf, zero_initialised_is_an_empty_heap_buffer)
{
    struct sbuf sb = {0};

    cr_expect_null(sb.p);
    sbuf_put(&sb, "", 0); /* any append gives it storage */
    cr_assert_not_null(sb.p);
    cr_expect_str_eq(sb.p, "");
    sbuf_str(&sb, "{\"a\":");
    sbuf_putc(&sb, '1');
    sbuf_put(&sb, "}xyz", 1);
    cr_expect_str_eq(sb.p, "{\"a\":1}");
    cr_expect_eq(sb.len, 7);
    cr_expect_eq(sbuf_need(&sb), 7);
    cr_expect_eq(sbuf_error(&sb), 0);
    sbuf_free(&sb);
    cr_expect_null(sb.p);
    cr_expect_eq(sb.len, 0);
}

Test(sbuf, grows_keeping_every_byte)
{
    struct sbuf sb;
    char chunk[97];

    sbuf_init(&sb, 0);
    for (size_t i = 0; i < sizeof(chunk); i++) {
        chunk[i] = (char)('a' + i % 26);
    }
    for (int i = 0; i < 1000; i++) {
        sbuf_put(&sb, chunk, sizeof(chunk));
    }
    cr_assert_eq(sb.len, 1000 * sizeof(chunk));
    cr_expect_eq(sb.p[sb.len], '\0');
    for (size_t i = 0; i < sb.len; i++) {
        cr_assert_eq(sb.p[i], chunk[i % sizeof(chunk)], "byte %zu", i);
    }
    cr_expect_eq(sbuf_error(&sb), 0);
    sbuf_free(&sb);
}

Test(sbuf, cap_reached_is_a_sticky_error_and_keeps_the_prefix)
{
    struct sbuf sb;

    sbuf_init(&sb, 10);
    sbuf_str(&sb, "0123456");
    cr_expect_eq(sbuf_error(&sb), 0);
    sbuf_str(&sb, "789AB"); /* 2 bytes over */
    cr_expect_eq(sbuf_error(&sb), -ENOBUFS);
    cr_expect_str_eq(sb.p, "0123456789");
    cr_expect_eq(sb.len, 10);
    cr_expect_eq(sbuf_need(&sb), 12);
    sbuf_str(&sb, ""); /* fits, but the error stays and nothing is stored after it */
    sbuf_putc(&sb, 'x');
    cr_expect_eq(sbuf_error(&sb), -ENOBUFS);
    cr_expect_str_eq(sb.p, "0123456789");
    cr_expect_eq(sbuf_need(&sb), 13);
    sbuf_clear(&sb, SIZE_MAX); /* forgets the error, keeps the cap */
    cr_expect_eq(sbuf_error(&sb), 0);
    cr_expect_eq(sb.len, 0);
    cr_expect_str_eq(sb.p, "");
    sbuf_str(&sb, "0123456789");
    cr_expect_eq(sbuf_error(&sb), 0);
    sbuf_putc(&sb, '!');
    cr_expect_eq(sbuf_error(&sb), -ENOBUFS);
    sbuf_free(&sb);
}

Test(sbuf, a_small_cap_allocates_no_more_than_it_needs)
{
    struct sbuf sb;

    sbuf_init(&sb, 3);
    sbuf_str(&sb, "abcdef");
    cr_expect_str_eq(sb.p, "abc");
    cr_expect_leq(sb.cap, 4);
    sbuf_free(&sb);
}

Test(sbuf, fixed_storage_truncates_like_snprintf)
{
    char buf[8];
    struct sbuf sb;

    memset(buf, 'X', sizeof(buf));
    sbuf_init_fixed(&sb, buf, sizeof(buf));
    cr_expect_str_eq(buf, "");
    sbuf_str(&sb, "hello");
    cr_expect_str_eq(buf, "hello");
    cr_expect_eq(sbuf_error(&sb), 0);
    sbuf_str(&sb, ", world");
    cr_expect_str_eq(buf, "hello, ");
    cr_expect_eq(sb.len, 7);
    cr_expect_eq(sbuf_need(&sb), 12);
    cr_expect_eq(sbuf_error(&sb), -ENOBUFS);
    sbuf_putc(&sb, '!');
    cr_expect_eq(sbuf_need(&sb), 13);
    cr_expect_str_eq(buf, "hello, ");
    sbuf_clear(&sb, 0); /* fixed storage is never freed */
    cr_expect_eq(sb.p, buf);
    sbuf_str(&sb, "again");
    cr_expect_str_eq(buf, "again");
    sbuf_free(&sb); /* a no-op for the caller's storage */
}

Test(sbuf, fixed_storage_of_size_zero_only_counts)
{
    struct sbuf sb;

    sbuf_init_fixed(&sb, NULL, 0);
    sbuf_str(&sb, "abc");
    sbuf_printf(&sb, "%d", 12345);
    cr_expect_eq(sbuf_need(&sb), 8);
    cr_expect_eq(sb.len, 0);
    cr_expect_null(sb.p);
}

Test(sbuf, fixed_storage_of_one_byte_holds_the_nul)
{
    char c = 'X';
    struct sbuf sb;

    sbuf_init_fixed(&sb, &c, 1);
    sbuf_str(&sb, "abc");
    cr_expect_eq(c, '\0');
    cr_expect_eq(sbuf_need(&sb), 3);
}

Test(sbuf, printf_has_no_length_limit)
{
    struct sbuf sb = {0};
    char big[1000];
    char small[16];
    struct sbuf fx;

    memset(big, 'q', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    sbuf_printf(&sb, "<%s|%d>", big, 42);
    cr_expect_eq(sb.len, 1 + 999 + 4);
    cr_expect_eq(sb.p[0], '<');
    cr_expect_str_eq(sb.p + 1000, "|42>");
    sbuf_free(&sb);

    sbuf_init_fixed(&fx, small, sizeof(small));
    sbuf_printf(&fx, "%s", big);
    cr_expect_eq(sbuf_need(&fx), 999);
    cr_expect_eq(strlen(small), 15);
    cr_expect_eq(sbuf_error(&fx), -ENOBUFS);
}

Test(sbuf, clear_keeps_or_frees_the_storage)
{
    struct sbuf sb = {0};
    char *before;

    sbuf_str(&sb, "some text");
    before = sb.p;
    sbuf_clear(&sb, 4096);
    cr_expect_eq(sb.p, before); /* 256 bytes allocated: kept */
    cr_expect_str_eq(sb.p, "");
    for (int i = 0; i < 100; i++) {
        sbuf_str(&sb, "0123456789");
    }
    sbuf_clear(&sb, 512);
    cr_expect_null(sb.p); /* 1 KiB allocated: freed */
    cr_expect_eq(sb.len, 0);
    sbuf_str(&sb, "x");
    cr_expect_str_eq(sb.p, "x");
    sbuf_free(&sb);
}

Test(sbuf, take_hands_over_the_bytes)
{
    struct sbuf sb;
    char *p;

    sbuf_init(&sb, 100);
    p = sbuf_take(&sb); /* nothing appended: still a string */
    cr_expect_str_eq(p, "");
    free(p);
    sbuf_str(&sb, "/api/v1/pods?limit=5");
    p = sbuf_take(&sb);
    cr_expect_str_eq(p, "/api/v1/pods?limit=5");
    cr_expect_null(sb.p);
    cr_expect_eq(sb.len, 0);
    free(p);
    sbuf_free(&sb);
}
