/*
 * fuzz_chunked.c - load/chunked.c (in-place chunked decoding) and load/lineframe.c (line
 * framing with a cap), the first two stages of `kwp load`'s reader.
 *
 * Raw pass: the input is a response body as it comes off the socket. It is decoded in one
 * call and again in pieces (sizes taken from the input itself, down to one byte), and each
 * decoded piece is fed to a lineframe (cap 64 bytes). Both runs must agree: the same payload
 * bytes, the same error (-EPROTO) or end (done, same bytes consumed), the same lines and the
 * same -E2BIG. The pieces are decoded a third time with chunked_each, whose runs must lie
 * inside the piece, leave it untouched and add up to what chunked_decode moved. Per call:
 * payload <= consumed <= input, a call that is not done consumes everything, a call after
 * done consumes nothing, and a pending line never exceeds the cap.
 *
 * Round trip: the input is also taken as a payload, framed as chunks (sizes, hex case, chunk
 * extensions, bare LF, trailers chosen by the input bytes) and followed by the start of the
 * next response; decoding that in pieces must give the payload back, end exactly where the
 * framing ends and leave the next response untouched.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load/chunked.h"
#include "load/lineframe.h"
#include "tests/fuzz/fuzz.h"

#define LINE_MAX_BYTES 64
#define NEXT_RESPONSE "HTTP/1.1 200 OK\r\n"

/* What a decode run produced. */
struct run {
    char *payload; /* everything decoded, in order */
    size_t payload_len;
    size_t consumed; /* input bytes used in total */
    bool done;
    bool proto_err;     /* chunked_decode said -EPROTO */
    uint64_t lines_sum; /* FNV-1a over every line and its length, in order */
    size_t lines;
    bool too_big; /* lineframe said -E2BIG (the framing stops there) */
    size_t pending;
};

static int on_line(void *ctx, char *line, size_t len)
{
    struct run *r = ctx;

    CHECK(len <= LINE_MAX_BYTES);
    CHECK(memchr(line, '\n', len) == NULL);
    for (size_t i = 0; i < len; i++) {
        r->lines_sum = (r->lines_sum ^ (unsigned char)line[i]) * 0x100000001b3ULL;
    }
    r->lines_sum = (r->lines_sum ^ len) * 0x100000001b3ULL;
    r->lines++;
    return 0;
}

/* The size of piece number <k> when splitting with <pattern> (0: one piece). */
static size_t piece_size(const uint8_t *pattern, size_t plen, size_t k)
{
    if (plen == 0) {
        return SIZE_MAX;
    }
    return (size_t)(pattern[k % plen] % 17) + 1;
}

/* Where decoded payload goes: the run's copy and its lineframe. */
struct sink {
    struct run *r;
    struct lineframe *lf;
    const char *buf; /* the piece being decoded: chunked_each's runs must lie inside it */
    size_t buf_len;
};

static int take(void *arg, char *p, size_t n)
{
    struct sink *k = arg;
    struct run *r = k->r;

    CHECK(n > 0 && p >= k->buf && p + n <= k->buf + k->buf_len);
    memcpy(r->payload + r->payload_len, p, n);
    r->payload_len += n;
    if (!r->too_big) {
        ssize_t fr = lineframe_feed(k->lf, p, n, on_line, r);

        CHECK(fr == (ssize_t)n || fr == -E2BIG);
        r->too_big = fr == -E2BIG;
        CHECK(lineframe_pending(k->lf) <= LINE_MAX_BYTES);
    }
    return 0;
}

/* Decodes in[0..len) in pieces, with chunked_each (runs in place) or chunked_decode (payload
 * moved to the front); fills <r> (caller frees r->payload). */
static void decode(const char *in, size_t len, const uint8_t *pattern, size_t plen, bool each,
                   struct run *r)
{
    struct chunked c;
    struct lineframe lf;
    char *buf = malloc(len ? len : 1);
    struct sink k = {r, &lf, buf, 0};
    size_t pos = 0;

    memset(r, 0, sizeof(*r));
    r->lines_sum = 0xcbf29ce484222325ULL;
    r->payload = malloc(len ? len : 1);
    chunked_init(&c);
    lineframe_init(&lf, LINE_MAX_BYTES);
    for (size_t i = 0; pos < len; i++) {
        size_t n = piece_size(pattern, plen, i), used = 0, before = r->payload_len;
        ssize_t got;

        if (n > len - pos) {
            n = len - pos;
        }
        memcpy(buf, in + pos, n);
        k.buf_len = n;
        got = each ? chunked_each(&c, buf, n, &used, take, &k) : chunked_decode(&c, buf, n, &used);
        if (got < 0) {
            CHECK(got == -EPROTO);
            r->proto_err = true;
            break;
        }
        CHECK((size_t)got <= used && used <= n);
        CHECK(c.done || used == n);
        if (each) {
            CHECK(r->payload_len - before == (size_t)got);
            CHECK(memcmp(buf, in + pos, n) == 0); /* in place: the input is not touched */
        } else if (got > 0) {
            take(&k, buf, (size_t)got);
        }
        pos += used;
        if (c.done) {
            size_t again = 7;

            CHECK(chunked_decode(&c, buf, n - used, &again) == 0 && again == 0);
            r->done = true;
            break;
        }
    }
    r->consumed = pos;
    r->pending = r->too_big ? 0 : lineframe_pending(&lf);
    lineframe_fini(&lf);
    free(buf);
}

static void check_split_invariance(const char *in, size_t len, const uint8_t *pat, size_t plen)
{
    struct run whole, parts, each;

    decode(in, len, NULL, 0, false, &whole);
    decode(in, len, pat, plen, false, &parts);
    decode(in, len, pat, plen, true, &each);
    /* in place or moved, the same pieces give the same result */
    CHECK(each.proto_err == parts.proto_err && each.done == parts.done);
    CHECK(each.consumed == parts.consumed && each.payload_len >= parts.payload_len);
    CHECK(memcmp(each.payload, parts.payload, parts.payload_len) == 0);
    if (!parts.proto_err) { /* on an error, runs before the bad byte were already handed on */
        CHECK(each.payload_len == parts.payload_len && each.too_big == parts.too_big);
        CHECK(each.lines == parts.lines && each.lines_sum == parts.lines_sum);
        CHECK(each.pending == parts.pending);
    }
    free(each.payload);
    CHECK(whole.proto_err == parts.proto_err);
    CHECK(whole.done == parts.done);
    CHECK(!whole.done || whole.consumed == parts.consumed);
    if (!whole.proto_err) {
        CHECK(whole.payload_len == parts.payload_len);
        CHECK(memcmp(whole.payload, parts.payload, whole.payload_len) == 0);
        CHECK(whole.too_big == parts.too_big);
        if (!whole.too_big) {
            CHECK(whole.lines == parts.lines && whole.lines_sum == parts.lines_sum);
            CHECK(whole.pending == parts.pending);
        }
    } else {
        /* Before the bad byte both saw the same payload: one is a prefix of the other. */
        size_t n = whole.payload_len < parts.payload_len ? whole.payload_len : parts.payload_len;

        CHECK(memcmp(whole.payload, parts.payload, n) == 0);
    }
    free(whole.payload);
    free(parts.payload);
}

/* Frames <p> as a chunked body chosen by its own bytes, then appends NEXT_RESPONSE. */
static char *frame(const uint8_t *p, size_t len, size_t *out_len, size_t *body_len)
{
    size_t cap = len * 40 + 128, o = 0, i = 0;
    char *out = malloc(cap);
    uint8_t sel = len > 0 ? p[0] : 0;

    while (i < len) {
        size_t n = (size_t)(p[i] % 23) + 1;
        uint8_t f = p[i];
        const char *eol = f & 0x40 ? "\n" : "\r\n";

        if (n > len - i) {
            n = len - i;
        }
        o += (size_t)snprintf(out + o, cap - o, f & 0x20 ? "%s%zX" : "%s%zx", f & 0x10 ? "000" : "",
                              n);
        if (f & 0x80) {
            o += (size_t)snprintf(out + o, cap - o, " ;name=\"v;a\\\"l\"");
        }
        o += (size_t)snprintf(out + o, cap - o, "%s", eol);
        memcpy(out + o, p + i, n);
        o += n;
        o += (size_t)snprintf(out + o, cap - o, "%s", f & 0x08 ? "\n" : "\r\n");
        i += n;
    }
    o += (size_t)snprintf(out + o, cap - o, "0%s", sel & 0x04 ? ";last" : "");
    o += (size_t)snprintf(out + o, cap - o, "\r\n%s\r\n",
                          sel & 0x02 ? "Trailer-A: 1\r\nTrailer-B: x\ny: 2\r\n" : "");
    *body_len = o;
    o += (size_t)snprintf(out + o, cap - o, "%s", NEXT_RESPONSE);
    *out_len = o;
    return out;
}

static void check_round_trip(const uint8_t *p, size_t len)
{
    size_t flen, blen;
    char *framed = frame(p, len, &flen, &blen);
    struct run r;

    decode(framed, flen, p, len, len > 0 && (p[0] & 1), &r);
    CHECK(!r.proto_err && r.done);
    CHECK(r.consumed == blen);
    CHECK(r.payload_len == len && memcmp(r.payload, p, len) == 0);
    CHECK(memcmp(framed + blen, NEXT_RESPONSE, flen - blen) == 0);
    free(r.payload);
    free(framed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = malloc(size ? size : 1);

    memcpy(in, data, size);
    check_split_invariance(in, size, data, size);
    check_split_invariance(in, size, (const uint8_t *)"\x00", 1); /* one byte at a time */
    check_round_trip(data, size);
    free(in);
    return 0;
}
