/*
 * test_lineframe.c - load/lineframe.h: the same lines come out whatever the read boundaries,
 * the per-line cap holds inside one feed and across feeds, and a callback can stop or fail.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "load/lineframe.h"

#define T_TIMEOUT 30

static uint64_t rng_state = 0xfeedface12345678ULL;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Collected lines, concatenated with their lengths. */
struct sink {
    char *data;
    size_t len, cap;
    size_t lines;
    size_t stop_after; /* return 1 after this many lines (0 = never) */
    int fail_at;       /* return -EBADMSG at this line number (1-based; 0 = never) */
};

static int collect(void *ctx, char *line, size_t len)
{
    struct sink *s = ctx;

    if (s->len + len + 1 > s->cap) {
        s->cap = (s->len + len + 1) * 2;
        s->data = realloc(s->data, s->cap);
    }
    memcpy(s->data + s->len, line, len);
    s->len += len;
    s->data[s->len++] = '|';
    s->lines++;
    if (s->fail_at && (int)s->lines == s->fail_at) {
        return -EBADMSG;
    }
    return s->stop_after && s->lines == s->stop_after ? 1 : 0;
}

Test(lineframe, same_lines_whatever_the_splits, .timeout = T_TIMEOUT)
{
    for (int round = 0; round < 200; round++) {
        size_t nlines = rnd() % 60, len = 0, max_line = 0;
        char *stream = malloc(nlines * 3001 + 1);
        char *expect = malloc(nlines * 3001 + 1);
        struct lineframe lf;
        struct sink s = {0};
        size_t pos = 0;

        for (size_t i = 0; i < nlines; i++) {
            size_t l = rnd() % 3 == 0 ? 0 : rnd() % 3000;
            for (size_t k = 0; k < l; k++) {
                char ch = (char)(' ' + rnd() % 90);
                stream[len + k] = ch;
                expect[len + k] = ch;
            }
            stream[len + l] = '\n';
            expect[len + l] = '|';
            len += l + 1;
            if (l > max_line) {
                max_line = l;
            }
        }
        lineframe_init(&lf, max_line);
        while (pos < len) {
            size_t n = 1 + rnd() % (rnd() % 2 ? 7 : 4000);
            char *piece;
            ssize_t r;
            if (n > len - pos) {
                n = len - pos;
            }
            piece = malloc(n);
            memcpy(piece, stream + pos, n);
            r = lineframe_feed(&lf, piece, n, collect, &s);
            cr_assert_eq(r, (ssize_t)n, "round %d: feed returned %zd", round, r);
            free(piece);
            pos += n;
        }
        cr_assert_eq(lineframe_pending(&lf), 0);
        cr_assert_eq(s.lines, nlines);
        cr_assert_eq(s.len, len);
        cr_assert(len == 0 || memcmp(s.data, expect, len) == 0, "round %d: lines differ", round);
        lineframe_fini(&lf);
        free(s.data);
        free(stream);
        free(expect);
    }
}

Test(lineframe, keeps_a_partial_line_until_its_newline, .timeout = T_TIMEOUT)
{
    struct lineframe lf;
    struct sink s = {0};
    char a[] = "one\ntw", b[] = "o", c[] = "\nthree";

    lineframe_init(&lf, 100);
    cr_assert_eq(lineframe_feed(&lf, a, strlen(a), collect, &s), (ssize_t)strlen(a));
    cr_assert_eq(s.lines, 1);
    cr_assert_eq(lineframe_pending(&lf), 2);
    cr_assert_eq(lineframe_feed(&lf, b, 1, collect, &s), 1);
    cr_assert_eq(lineframe_pending(&lf), 3);
    cr_assert_eq(lineframe_feed(&lf, c, strlen(c), collect, &s), (ssize_t)strlen(c));
    cr_assert_eq(s.lines, 2);
    cr_assert_eq(lineframe_pending(&lf), 5);
    cr_assert_eq(memcmp(s.data, "one|two|", 8), 0);
    lineframe_fini(&lf);
    cr_assert_eq(lineframe_pending(&lf), 0);
    free(s.data);
}

Test(lineframe, cap_is_enforced_in_one_feed_and_across_feeds, .timeout = T_TIMEOUT)
{
    struct lineframe lf;
    struct sink s = {0};
    char ok[] = "12345678\n";
    char big[] = "123456789\n";
    char p1[] = "12345", p2[] = "6789", p3[] = "\n";

    lineframe_init(&lf, 8);
    cr_assert_eq(lineframe_feed(&lf, ok, strlen(ok), collect, &s), (ssize_t)strlen(ok));
    cr_assert_eq(lineframe_feed(&lf, big, strlen(big), collect, &s), -E2BIG);
    lineframe_fini(&lf);
    cr_assert_eq(lineframe_feed(&lf, p1, strlen(p1), collect, &s), (ssize_t)strlen(p1));
    cr_assert_eq(lineframe_feed(&lf, p2, strlen(p2), collect, &s), -E2BIG);
    cr_assert_eq(lineframe_pending(&lf), 0);
    /* an unterminated line longer than the cap is refused before its newline arrives */
    lineframe_fini(&lf);
    cr_assert_eq(lineframe_feed(&lf, big, 9, collect, &s), -E2BIG);
    lineframe_fini(&lf);
    cr_assert_eq(lineframe_feed(&lf, p3, 1, collect, &s), 1);
    cr_assert_eq(s.lines, 2); /* "12345678" and the empty line */
    lineframe_fini(&lf);
    free(s.data);
}

Test(lineframe, callback_can_stop_after_a_line, .timeout = T_TIMEOUT)
{
    struct lineframe lf;
    struct sink s = {.stop_after = 2};
    char in[] = "head1\r\n\r\nbody bytes";

    lineframe_init(&lf, 64);
    cr_assert_eq(lineframe_feed(&lf, in, strlen(in), collect, &s), 9);
    cr_assert_eq(lineframe_pending(&lf), 0);
    cr_assert_eq(memcmp(s.data, "head1\r|\r|", 9), 0);
    lineframe_fini(&lf);
    free(s.data);
}

Test(lineframe, callback_error_is_returned, .timeout = T_TIMEOUT)
{
    struct lineframe lf;
    struct sink s = {.fail_at = 2};
    char a[] = "x", b[] = "y\nz\nw\n";

    lineframe_init(&lf, 64);
    cr_assert_eq(lineframe_feed(&lf, a, 1, collect, &s), 1);
    cr_assert_eq(lineframe_feed(&lf, b, strlen(b), collect, &s), -EBADMSG);
    cr_assert_eq(s.lines, 2);
    lineframe_fini(&lf);
    free(s.data);
}
