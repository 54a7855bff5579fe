/*
 * test_chunked.c - load/chunked.h: in-place decoding of chunked bodies fed in random splits,
 * bytes after the body left alone, and malformed framing refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load/chunked.h"

#define T_TIMEOUT 30

static uint64_t rng_state = 0x1234567890abcdefULL;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Decodes <in> fed in pieces of the given sizes (0 = random), each piece in its own buffer as
 * the client reads do. Returns the payload (malloc'd, *out_len) and the bytes left after the
 * body in *rest (count). Fails the test on a decode error. */
static char *decode_split(const char *in, size_t len, size_t piece, size_t *out_len, size_t *rest,
                          bool *done)
{
    struct chunked c;
    char *out = malloc(len + 1);
    size_t o = 0, pos = 0;

    chunked_init(&c);
    *rest = 0;
    while (pos < len) {
        size_t n = piece ? piece : 1 + rnd() % 40;
        char buf[64];
        size_t used;
        ssize_t w;
        if (n > len - pos) {
            n = len - pos;
        }
        cr_assert_leq(n, sizeof(buf));
        memcpy(buf, in + pos, n);
        w = chunked_decode(&c, buf, n, &used);
        cr_assert_geq(w, 0, "decode error at offset %zu", pos);
        cr_assert_leq((size_t)w, used);
        memcpy(out + o, buf, (size_t)w);
        o += (size_t)w;
        if (c.done) {
            *rest += n - used + (len - pos - n);
            cr_assert_eq(memcmp(buf + used, in + pos + used, n - used), 0,
                         "bytes after the body were modified");
            break;
        }
        cr_assert_eq(used, n);
        pos += n;
    }
    *done = c.done;
    *out_len = o;
    return out;
}

/* Builds a chunked encoding of payload[0..len) with random chunk sizes, extensions, hex case
 * and trailers, followed by <after>. */
static char *encode_random(const char *payload, size_t len, const char *after, size_t *enc_len)
{
    size_t cap = len * 2 + 4096, n = 0, pos = 0;
    char *e = malloc(cap);

    while (pos < len) {
        size_t k = 1 + rnd() % 300;
        if (k > len - pos) {
            k = len - pos;
        }
        n += (size_t)snprintf(e + n, cap - n, rnd() % 2 ? "%zx" : "%zX", k);
        if (rnd() % 4 == 0) {
            n += (size_t)snprintf(e + n, cap - n, ";name=\"v;a\"");
        }
        n += (size_t)snprintf(e + n, cap - n, "\r\n");
        memcpy(e + n, payload + pos, k);
        n += k;
        pos += k;
        n += (size_t)snprintf(e + n, cap - n, "\r\n");
    }
    n += (size_t)snprintf(e + n, cap - n, "0\r\n");
    if (rnd() % 2) {
        n += (size_t)snprintf(e + n, cap - n, "X-Trailer: 1\r\nOther: two\r\n");
    }
    n += (size_t)snprintf(e + n, cap - n, "\r\n%s", after);
    *enc_len = n;
    return e;
}

Test(chunked, decodes_a_simple_body, .timeout = T_TIMEOUT)
{
    char in[] = "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n";
    struct chunked c;
    size_t used;
    ssize_t w;

    chunked_init(&c);
    w = chunked_decode(&c, in, strlen(in), &used);
    cr_assert_eq(w, 12);
    cr_assert_eq(memcmp(in, "hello, world", 12), 0);
    cr_assert(c.done);
    cr_assert_eq(used, strlen("5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n"));
    /* after the end nothing more is consumed */
    cr_assert_eq(chunked_decode(&c, in, 3, &used), 0);
    cr_assert_eq(used, 0);
}

Test(chunked, random_bodies_in_random_splits, .timeout = T_TIMEOUT)
{
    for (int round = 0; round < 300; round++) {
        size_t len = rnd() % 5000, enc_len, out_len, rest;
        char *payload = malloc(len + 1);
        char *enc, *out;
        bool done;
        for (size_t i = 0; i < len; i++) {
            payload[i] = (char)(rnd() & 0xff); /* any byte, CR and LF included */
        }
        enc = encode_random(payload, len, round % 3 == 0 ? "HTTP/1.1 200 OK\r\n" : "", &enc_len);
        for (size_t piece = 0; piece <= 3; piece++) {
            out = decode_split(enc, enc_len, piece, &out_len, &rest, &done);
            cr_assert(done, "round %d piece %zu: body not complete", round, piece);
            cr_assert_eq(out_len, len);
            cr_assert_eq(memcmp(out, payload, len), 0, "round %d: payload differs", round);
            cr_assert_eq(rest, round % 3 == 0 ? strlen("HTTP/1.1 200 OK\r\n") : 0);
            free(out);
        }
        free(enc);
        free(payload);
    }
}

Test(chunked, accepts_bare_lf_line_ends, .timeout = T_TIMEOUT)
{
    char in[] = "3\nabc\n0\n\n";
    struct chunked c;
    size_t used;

    chunked_init(&c);
    cr_assert_eq(chunked_decode(&c, in, strlen(in), &used), 3);
    cr_assert(c.done);
    cr_assert_eq(memcmp(in, "abc", 3), 0);
}

Test(chunked, stops_waiting_mid_body, .timeout = T_TIMEOUT)
{
    char in[] = "a\r\n01234";
    struct chunked c;
    size_t used;

    chunked_init(&c);
    cr_assert_eq(chunked_decode(&c, in, strlen(in), &used), 5);
    cr_assert_not(c.done);
    cr_assert_eq(used, strlen(in));
}

Test(chunked, refuses_malformed_framing, .timeout = T_TIMEOUT)
{
    static const char *const bad[] = {
        "\r\n",                  /* no size */
        "g\r\n",                 /* not hex */
        "3\r\nabcX",             /* no CRLF after the data */
        "3\r\nabc\rX",           /* CR without LF */
        "12345678901234567\r\n", /* 17 hex digits */
        "20000000000\r\n",       /* above CHUNKED_MAX_SIZE */
        "3 x\r\n",               /* junk after the size */
        ";ext\r\n",              /* extension without a size */
        "0\r\n\rX",              /* bad final CRLF */
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct chunked c;
        char buf[64];
        size_t used;
        snprintf(buf, sizeof(buf), "%s", bad[i]);
        chunked_init(&c);
        cr_assert_eq(chunked_decode(&c, buf, strlen(buf), &used), -EPROTO, "accepted %s", bad[i]);
    }
}

Test(chunked, size_line_with_blanks_and_extension, .timeout = T_TIMEOUT)
{
    char in[] = "4 \t;a=b;c\r\nwxyz\r\n0;last\r\n\r\n";
    struct chunked c;
    size_t used;

    chunked_init(&c);
    cr_assert_eq(chunked_decode(&c, in, strlen(in), &used), 4);
    cr_assert_eq(memcmp(in, "wxyz", 4), 0);
    cr_assert(c.done);
}

/* What chunked_each handed on: each run checked to lie inside the input, in order. */
struct runs {
    const char *in;
    size_t in_len;
    const char *last_end; /* runs never go backwards or overlap */
    char out[256];
    size_t out_len;
    size_t calls;
    size_t stop_after; /* 0: never stop */
};

static int take_run(void *arg, char *p, size_t n)
{
    struct runs *r = arg;

    cr_assert_gt(n, 0);
    cr_assert(p >= r->in && p + n <= r->in + r->in_len, "a run outside the input");
    cr_assert(r->last_end == NULL || p >= r->last_end, "runs out of order");
    r->last_end = p + n;
    cr_assert_leq(r->out_len + n, sizeof(r->out));
    memcpy(r->out + r->out_len, p, n);
    r->out_len += n;
    r->calls++;
    return r->stop_after != 0 && r->calls == r->stop_after;
}

Test(chunked, each_hands_runs_on_where_they_lie, .timeout = T_TIMEOUT)
{
    char in[] = "5\r\nhello\r\n7;x=1\r\n, world\r\n0\r\nT: v\r\n\r\nHTTP/1.1";
    const char *body_end = strstr(in, "HTTP/1.1");
    struct runs r = {.in = in, .in_len = strlen(in)};
    struct chunked c;
    size_t used;

    chunked_init(&c);
    cr_assert_eq(chunked_each(&c, in, strlen(in), &used, take_run, &r), 12);
    cr_assert_eq(r.calls, 2);
    cr_assert_eq(r.out_len, 12);
    cr_assert_eq(memcmp(r.out, "hello, world", 12), 0);
    cr_assert_eq(memcmp(in, "5\r\nhello\r\n", 10), 0, "the input was modified");
    cr_assert(c.done);
    cr_assert_eq(used, (size_t)(body_end - in));
}

Test(chunked, each_stops_when_the_owner_says_so, .timeout = T_TIMEOUT)
{
    char in[] = "3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n";
    struct runs r = {.in = in, .in_len = strlen(in), .stop_after = 1};
    struct chunked c;
    size_t used;

    chunked_init(&c);
    cr_assert_eq(chunked_each(&c, in, strlen(in), &used, take_run, &r), 3);
    cr_assert_eq(used, strlen("3\r\nabc"));
    cr_assert_not(c.done);
    /* the state carries on from there if the owner comes back */
    r.stop_after = 0;
    cr_assert_eq(chunked_each(&c, in + used, strlen(in) - used, &used, take_run, &r), 3);
    cr_assert_eq(memcmp(r.out, "abcdef", 6), 0);
    cr_assert(c.done);
}
