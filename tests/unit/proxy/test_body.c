/*
 * test_body.c - the reply body pipeline of proxy/body.c: Go's json.Indent as a streaming
 * state machine (its static helpers tested directly, the h2o way: the .c is included), its
 * count mode, and the gzip content reader through body_new/body_read (inflated back), plain
 * and pretty, in small reads.
 *
 * Expected bytes come from encoding/json's indent.go.
 */
#include "proxy/body.c"

#include <criterion/criterion.h>

#include "cache/sbuf.h"

/* ---- helpers ----------------------------------------------------------------------------- */

/* Indents <in> in one call. */
static char *indent_all(const char *in)
{
    size_t n;

    return indent_dup(in, strlen(in), &n);
}

/* Indents <in> fed in <in_chunk>-byte pieces into <out_chunk>-byte buffers. */
static char *indent_chunked(const char *in, size_t in_chunk, size_t out_chunk)
{
    struct indent st;
    struct sbuf sb = {0};
    size_t len = strlen(in), pos = 0;
    char buf[64];

    cr_assert_leq(out_chunk, sizeof(buf));
    indent_init(&st);
    for (;;) {
        size_t take = len - pos < in_chunk ? len - pos : in_chunk, used = 0;
        size_t o = indent_run(&st, in + pos, take, &used, buf, out_chunk);
        sbuf_put(&sb, buf, o);
        pos += used;
        if (pos == len && o == 0) {
            break;
        }
    }
    return sb.p ? sb.p : strdup("");
}

/* ---- json.Indent ------------------------------------------------------------------------- */

Test(body, indent_matches_go_json_indent)
{
    static const struct {
        const char *in;
        const char *out;
    } cases[] = {
        {"{}", "{}"},
        {"[]", "[]"},
        {"{\"a\":1}", "{\n  \"a\": 1\n}"},
        {"[1,2]", "[\n  1,\n  2\n]"},
        {"{\"a\":[1,{\"b\":null}],\"c\":{},\"d\":[],\"e\":{\"f\":true}}\n",
         "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"c\": {},\n  \"d\": "
         "[],\n"
         "  \"e\": {\n    \"f\": true\n  }\n}"},
        /* punctuation and escapes inside strings are copied, whitespace outside dropped */
        {"{ \"k\" : \"a,b:{c}[d] \\\"q\\\" \\\\\" ,\"x\":\"\\u003c\" }\n",
         "{\n  \"k\": \"a,b:{c}[d] \\\"q\\\" \\\\\",\n  \"x\": \"\\u003c\"\n}"},
        {"\"s\"", "\"s\""},
        {"[[[]]]", "[\n  [\n    []\n  ]\n]"},
        {"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
         "\"message\":\"m\",\"reason\":\"NotAcceptable\",\"code\":406}",
         "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n"
         "  \"status\": \"Failure\",\n  \"message\": \"m\",\n  \"reason\": \"NotAcceptable\",\n"
         "  \"code\": 406\n}"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = indent_all(cases[i].in);
        cr_assert_str_eq(got, cases[i].out, "case %zu", i);
        free(got);
    }
}

Test(body, indent_streams_through_any_buffer_sizes)
{
    const char *in = "{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"a\\\"},{\","
                     "\"labels\":{\"x\":\"[y]\"}},\"spec\":{\"containers\":[{\"n\":1},{}]}},{}]}\n";
    char *want = indent_all(in);

    for (size_t ic = 1; ic <= 9; ic += 2) {
        for (size_t oc = 1; oc <= 40; oc += 13) {
            char *got = indent_chunked(in, ic, oc);
            cr_assert_str_eq(got, want, "input chunks %zu, output chunks %zu", ic, oc);
            free(got);
        }
    }
    free(want);
}

Test(body, indent_count_mode_equals_output_length)
{
    struct iovec iov[3] = {
        {(void *)"{\"a\":[1,", 8}, {(void *)"2],\"b\":{\"c\":\"d\"}", 16}, {(void *)"}\n", 2}};
    char *full = indent_all("{\"a\":[1,2],\"b\":{\"c\":\"d\"}}\n");

    cr_assert_eq(pretty_length(iov, 3, SIZE_MAX), strlen(full));
    cr_assert_lt(pretty_length(iov, 3, 3), strlen(full), "stops early past the limit");
    free(full);
}

/* ---- the gzip content reader ------------------------------------------------------------- */

static char *inflate_all(const char *in, size_t n, size_t *out_len)
{
    z_stream z;
    size_t cap = 1 << 20;
    char *out = malloc(cap);

    memset(&z, 0, sizeof(z));
    cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK);
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)n;
    z.next_out = (Bytef *)out;
    z.avail_out = (uInt)cap;
    cr_assert_eq(inflate(&z, Z_FINISH), Z_STREAM_END, "not one complete gzip member");
    *out_len = cap - z.avail_out;
    inflateEnd(&z);
    return out;
}

static char *read_gzip_body(struct iovec *iov, size_t n, bool pretty, size_t chunk, size_t *len)
{
    struct body *b = body_new(iov, n, pretty, true, NULL, NULL);
    struct sbuf sb = {0};
    char buf[4096];
    ssize_t r;

    while ((r = body_read(b, buf, chunk)) > 0) {
        sbuf_put(&sb, buf, (size_t)r);
    }
    cr_assert_eq(r, HTTP_STREAM_END);
    body_free(b);
    *len = sb.len;
    return sb.p;
}

Test(body, gzip_reader_round_trips_in_small_reads)
{
    size_t n_items = 3000, zlen, plain_len;
    struct iovec *iov = malloc(sizeof(*iov) * (2 * n_items + 2));
    struct sbuf plain = {0};
    char item[128];
    size_t k = 0;

    iov[k++] = (struct iovec){(void *)"{\"items\":[", 10};
    sbuf_str(&plain, "{\"items\":[");
    for (size_t i = 0; i < n_items; i++) {
        int w = snprintf(item, sizeof(item), "%s{\"metadata\":{\"name\":\"obj-%06zu\"}}",
                         i ? "," : "", i);
        char *copy = strdup(item);
        iov[k++] = (struct iovec){copy, (size_t)w};
        sbuf_put(&plain, item, (size_t)w);
    }
    iov[k++] = (struct iovec){(void *)"]}\n", 3};
    sbuf_str(&plain, "]}\n");

    char *z = read_gzip_body(iov, k, false, 100, &zlen);
    cr_assert_eq((unsigned char)z[0], 0x1f);
    cr_assert_eq((unsigned char)z[1], 0x8b, "a gzip member");
    char *back = inflate_all(z, zlen, &plain_len);
    cr_assert_eq(plain_len, plain.len);
    cr_assert(memcmp(back, plain.p, plain_len) == 0, "inflated body differs");
    free(back);
    free(z);

    z = read_gzip_body(iov, k, true, 777, &zlen);
    back = inflate_all(z, zlen, &plain_len);
    char *pretty = indent_all(plain.p);
    cr_assert_eq(plain_len, strlen(pretty));
    cr_assert(memcmp(back, pretty, plain_len) == 0, "inflated pretty body differs");
    free(pretty);
    free(back);
    free(z);

    for (size_t i = 1; i + 1 < k; i++) {
        free(iov[i].iov_base);
    }
    free(iov);
    sbuf_free(&plain);
}

/* ---- the plain pretty reader ------------------------------------------------------------- */

static int done_calls;

static void count_done(void *ctx)
{
    (void)ctx;
    done_calls++;
}

Test(body, pretty_reader_in_small_reads_then_done_once)
{
    const char *parts[3] = {"{\"items\":[{\"a\":", "1},{}", "]}\n"};
    struct iovec iov[3];
    char *want = indent_all("{\"items\":[{\"a\":1},{}]}\n");
    struct body *b;
    struct sbuf sb = {0};
    char buf[8];
    ssize_t r;

    for (int i = 0; i < 3; i++) {
        iov[i] = (struct iovec){(void *)parts[i], strlen(parts[i])};
    }
    b = body_new(iov, 3, true, false, count_done, NULL);
    done_calls = 0;
    while ((r = body_read(b, buf, 1 + sb.len % sizeof(buf))) > 0) {
        sbuf_put(&sb, buf, (size_t)r);
    }
    cr_assert_eq(r, HTTP_STREAM_END);
    cr_assert_str_eq(sb.p, want);
    cr_assert_eq(done_calls, 0, "the pieces are lent until body_free");
    body_free(b);
    cr_assert_eq(done_calls, 1);
    body_free(NULL);
    sbuf_free(&sb);
    free(want);
}
