/*
 * body.c - the reply body pipeline (see body.h): source pieces -> [json.Indent] -> [gzip]
 * -> libmicrohttpd, each stage pulled by the next, so nothing holds more than a stage.
 *
 * The indenter is a byte-level state machine that can stop anywhere: what one input byte
 * produces (at most a newline, 2*depth spaces and two bytes) is staged in <pend> and drained
 * before the next byte is read. Its count mode (no output buffer) sizes a pretty body
 * without writing it, which decides gzip as kube-apiserver does (on the bytes sent).
 */
#include "proxy/body.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "cache/bug.h"
#include "proxy/http_server.h"
#include "proxy/kstatus.h"
#include "proxy/kube_json.h"
#include "proxy/log.h"

#define GZIP_STAGE 16384                           /* indented bytes staged for deflate */
#define INDENT_MAX_DEPTH (KUBE_JSON_MAX_DEPTH + 8) /* stored objects plus our envelopes */

/* Go's json.Indent(dst, src, "", "  ") as a byte-level state machine that can stop anywhere:
 * what one input byte produces (at most a newline, 2*depth spaces and two bytes) is staged
 * in <pend> and drained before the next byte is read. */
struct indent {
    int depth;
    bool need_indent; /* a '{' or '[' was written: indent before the next value, unless it
                         closes at once ({} and [] stay on one line) */
    bool in_str;
    bool esc;
    size_t pend_len;
    size_t pend_off;
    char pend[2 * INDENT_MAX_DEPTH + 8];
};

/* A reply body read by MHD in pieces: the gathered source, then optional indent and gzip. */
struct body {
    struct iovec *iov; /* the source pieces (array owned, bytes lent until <done>) */
    size_t n;
    size_t idx;
    size_t off;
    body_done_fn *done;
    void *ctx;
    bool pretty;
    bool gz;
    bool src_done; /* gzip: every source byte was handed to deflate */
    bool z_ready;
    bool z_end;
    z_stream z;
    char *stage; /* pretty + gzip: indented bytes for deflate */
    struct indent ind;
};

/* ---- pretty printing: Go's json.Indent over bytes ---------------------------------------- */

static void indent_init(struct indent *st)
{
    memset(st, 0, sizeof(*st));
}

static size_t indent_nl(char *p, size_t pl, int depth)
{
    int d = depth < 0 ? 0 : depth > INDENT_MAX_DEPTH ? INDENT_MAX_DEPTH : depth;

    p[pl++] = '\n';
    memset(p + pl, ' ', (size_t)d * 2);
    return pl + (size_t)d * 2;
}

/*
 * Re-indents in[0..in_len) into out[0..cap) as json.Indent(dst, src, "", "  ") would: every
 * byte inside strings is copied, whitespace outside strings is dropped (so the trailing "\n"
 * of a compact body disappears, as MarshalIndent has none), and newlines plus two spaces per
 * level go after '{' '[' ',' and before '}' ']' ({} and [] stay empty). ':' gets one space.
 * <out> NULL counts without writing. Sets *used to the input bytes consumed; returns the
 * bytes produced. Stops when out is full; bytes already produced wait in st->pend.
 */
static size_t indent_run(struct indent *st, const char *in, size_t in_len, size_t *used, char *out,
                         size_t cap)
{
    size_t o = 0, i = 0;

    for (;;) {
        if (st->pend_off < st->pend_len) {
            size_t k = st->pend_len - st->pend_off;
            if (out) {
                k = k < cap - o ? k : cap - o;
                memcpy(out + o, st->pend + st->pend_off, k);
            }
            o += k;
            st->pend_off += k;
            if (st->pend_off < st->pend_len) {
                break;
            }
            st->pend_off = st->pend_len = 0;
        }
        if (i == in_len || (out && o == cap)) {
            break;
        }
        char c = in[i++];
        if (st->in_str) {
            if (st->esc) {
                st->esc = false;
            } else if (c == '\\') {
                st->esc = true;
            } else if (c == '"') {
                st->in_str = false;
            }
            if (out) {
                out[o] = c;
            }
            o++;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            continue;
        }
        size_t pl = 0;
        char *p = st->pend;
        if (st->need_indent && c != '}' && c != ']') {
            st->need_indent = false;
            st->depth++;
            pl = indent_nl(p, pl, st->depth);
        }
        switch (c) {
        case '{':
        case '[':
            st->need_indent = true;
            p[pl++] = c;
            break;
        case ',':
            p[pl++] = c;
            pl = indent_nl(p, pl, st->depth);
            break;
        case ':':
            p[pl++] = c;
            p[pl++] = ' ';
            break;
        case '}':
        case ']':
            if (st->need_indent) {
                st->need_indent = false;
            } else {
                st->depth--;
                pl = indent_nl(p, pl, st->depth);
            }
            p[pl++] = c;
            break;
        case '"':
            st->in_str = true;
            p[pl++] = c;
            break;
        default:
            p[pl++] = c;
            break;
        }
        st->pend_len = pl;
        st->pend_off = 0;
    }
    *used = i;
    return o;
}

/* Indents a whole buffer into a new one (caller frees); *out_len gets its length. */
static char *indent_dup(const char *in, size_t len, size_t *out_len)
{
    struct indent *st = xmalloc(sizeof(*st));
    size_t used, n;
    char *out;

    indent_init(st);
    n = indent_run(st, in, len, &used, NULL, 0);
    out = xmalloc(n + 1);
    indent_init(st);
    *out_len = indent_run(st, in, len, &used, out, n);
    out[*out_len] = '\0';
    free(st);
    return out;
}

/* ---- reply bodies: source pieces -> [indent] -> [gzip] -> MHD ---------------------------- */

/* The next unread source bytes (NULL once everything was read). */
static const char *src_peek(struct body *b, size_t *len)
{
    while (b->idx < b->n && b->off == b->iov[b->idx].iov_len) {
        b->idx++;
        b->off = 0;
    }
    if (b->idx == b->n) {
        return NULL;
    }
    *len = b->iov[b->idx].iov_len - b->off;
    return (const char *)b->iov[b->idx].iov_base + b->off;
}

/* Fills out[0..cap) with indented bytes; returns how many (0 only when all were written). */
static size_t pretty_fill(struct body *b, char *out, size_t cap)
{
    size_t o = 0;

    while (o < cap) {
        size_t len = 0, used = 0;
        const char *p = src_peek(b, &len);
        o += indent_run(&b->ind, p ? p : "", p ? len : 0, &used, out + o, cap - o);
        if (!p) {
            break; /* the source is over; o < cap means nothing is pending either */
        }
        b->off += used;
    }
    return o;
}

/* Counts the indented length of <iov>, stopping once it exceeds <limit>. */
static size_t pretty_length(const struct iovec *iov, size_t n, size_t limit)
{
    struct indent *st = xmalloc(sizeof(*st));
    size_t total = 0, used;

    indent_init(st);
    for (size_t i = 0; i < n && total <= limit; i++) {
        total += indent_run(st, iov[i].iov_base, iov[i].iov_len, &used, NULL, 0);
    }
    free(st);
    return total;
}

/* deflate (gzip wrapper, level 1) as MHD pulls: only z_stream's window and one stage are
 * held, whatever the body size. */
static ssize_t gzip_fill(struct body *b, char *buf, size_t max)
{
    size_t n;

    if (!b->z_ready) {
        if (deflateInit2(&b->z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
            log_error("http", "msg=\"deflateInit2 failed\"");
            return HTTP_STREAM_ABORT;
        }
        b->z_ready = true;
    }
    if (b->z_end) {
        return HTTP_STREAM_END;
    }
    b->z.next_out = (Bytef *)buf;
    b->z.avail_out = (uInt)(max > UINT_MAX ? UINT_MAX : max);
    while (b->z.avail_out > 0) {
        int rc;
        if (b->z.avail_in == 0 && !b->src_done) {
            if (b->pretty) {
                size_t k = pretty_fill(b, b->stage, GZIP_STAGE);
                b->src_done = k == 0;
                b->z.next_in = (Bytef *)b->stage;
                b->z.avail_in = (uInt)k;
            } else {
                size_t len = 0;
                const char *p = src_peek(b, &len);
                b->src_done = p == NULL;
                len = len > UINT_MAX ? UINT_MAX : len;
                b->z.next_in = (Bytef *)p; /* lent: the pieces live until <done> */
                b->z.avail_in = (uInt)len;
                b->off += len;
            }
        }
        rc = deflate(&b->z, b->src_done && b->z.avail_in == 0 ? Z_FINISH : Z_NO_FLUSH);
        if (rc == Z_STREAM_END) {
            b->z_end = true;
            break;
        }
        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            log_error("http", "rc=%d msg=\"deflate failed\"", rc);
            return HTTP_STREAM_ABORT;
        }
    }
    n = max - b->z.avail_out;
    return n > 0 ? (ssize_t)n : HTTP_STREAM_END;
}

ssize_t body_read(void *ctx, char *buf, size_t max)
{
    struct body *b = ctx;
    size_t n;

    if (b->gz) {
        return gzip_fill(b, buf, max);
    }
    n = pretty_fill(b, buf, max);
    return n > 0 ? (ssize_t)n : HTTP_STREAM_END;
}

struct body *body_new(const struct iovec *iov, size_t n, bool pretty, bool gzip, body_done_fn *done,
                      void *ctx)
{
    struct body *b = xcalloc(1, sizeof(*b));

    b->iov = xmalloc(sizeof(*iov) * (n ? n : 1));
    memcpy(b->iov, iov, sizeof(*iov) * n);
    b->n = n;
    b->done = done;
    b->ctx = ctx;
    b->pretty = pretty;
    if (pretty) {
        indent_init(&b->ind);
    }
    b->gz = gzip;
    if (gzip && pretty) {
        b->stage = xmalloc(GZIP_STAGE);
    }
    return b;
}

void body_free(struct body *b)
{
    if (!b) {
        return;
    }
    if (b->z_ready) {
        deflateEnd(&b->z);
    }
    if (b->done) {
        b->done(b->ctx);
    }
    free(b->stage);
    free(b->iov);
    free(b);
}

void body_reply(struct http_req *req, const struct iovec *iov, size_t n, bool pretty,
                bool gzip_offered, body_done_fn *done, void *ctx, struct body **owner)
{
    struct body *b;
    size_t total = 0;
    bool gz;

    *owner = NULL;
    for (size_t i = 0; i < n; i++) {
        total += iov[i].iov_len;
    }
    if (!pretty && !(gzip_offered && total > BODY_GZIP_THRESHOLD)) {
        http_reply_iov(req, 200, "application/json", iov, n, done, ctx);
        return;
    }
    if (pretty) {
        /* what gets sent */
        total = gzip_offered ? pretty_length(iov, n, BODY_GZIP_THRESHOLD) : 0;
    }
    gz = gzip_offered && total > BODY_GZIP_THRESHOLD;
    b = body_new(iov, n, pretty, gz, done, ctx);
    if (gz) {
        http_req_add_header(req, "Content-Encoding", "gzip");
        http_req_add_header(req, "Vary", "Accept-Encoding");
    }
    *owner = b;
    http_reply_stream(req, 200, "application/json", body_read, b);
}

/* ---- Status bodies ----------------------------------------------------------------------- */

void body_reply_status(struct http_req *req, bool indent, const struct kstatus *st)
{
    char small[2048];
    char *buf = small, *out;
    size_t need, out_len;

    if (!indent) {
        http_reply_status(req, st);
        return;
    }
    need = kstatus_json(st, small, sizeof(small));
    if (need >= sizeof(small)) {
        buf = xmalloc(need + 1);
        kstatus_json(st, buf, need + 1);
    }
    out = indent_dup(buf, need, &out_len);
    if (st->retry_after > 0) {
        char ra[16];
        snprintf(ra, sizeof(ra), "%d", st->retry_after);
        http_req_add_header(req, "Retry-After", ra);
    }
    http_reply(req, st->code, "application/json", out, out_len);
    free(out);
    if (buf != small) {
        free(buf);
    }
}
