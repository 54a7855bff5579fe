/*
 * handlers.c - LIST, WATCH and GET from the cache (see handlers.h).
 *
 * Per-request state (struct hreq) is created on the first call and freed by the server's
 * completion callback, which detaches the watcher: the one teardown path.
 *
 * A WATCH is a content reader over the watcher's cursor: it writes the synthetic ADDED events
 * of the initial snapshot, the end bookmark, then events taken from the ring in batches,
 * whole frames only (a frame larger than MHD's buffer goes through an overflow buffer that
 * is drained at UTF-8 boundaries, so no chunk ever splits a character). When nothing is
 * pending it suspends; the resource wakes it after the next append, the tick when a bookmark
 * or the deadline is due, or when the sweep finds the peer gone.
 *
 * Waiting for an RV (the 3 s rule, or the proxy's short freshness wait) happens before any
 * reply: the request is suspended with an RVWAIT watcher and re-enters handlers_serve.
 *
 * Content negotiation (SEMANTICS 8) runs first, as in get.go: the Accept header picks JSON
 * and at most one transform (meta.k8s.io Table, PartialObjectMetadata[List]). Transforms are
 * assembled from pieces of the stored bytes: a PartialObjectMetadata is a fixed prefix plus
 * the exact span of the object's "metadata" member; only Table cells are computed (cJSON,
 * tree freed at once). Pretty printing (re-indenting bytes, no tree) and gzip (zlib,
 * compressing as MHD pulls) are stages of one content reader with bounded memory.
 */
#include "proxy/handlers.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>
#include <zlib.h>

#include "cache/blob.h"
#include "cache/bug.h"
#include "cache/resource.h"
#include "cache/rv.h"
#include "cache/selector.h"
#include "cache/snapshot.h"
#include "proxy/log.h"
#include "proxy/printers.h"
#include "proxy/sbuf.h"

#define HANDLERS_BATCH 32
_Static_assert(HANDLERS_BATCH <= RING_SEG, "a short batch must mean nothing more was pending");
#define HANDLERS_BOOKMARK_DEFAULT_MS 60000
#define HANDLERS_MIN_TIMEOUT_DEFAULT_S 1800
#define HANDLERS_TOO_LARGE_DEFAULT_MS 3000
#define HANDLERS_RELEASE_IDLE_MS 5000 /* a watch quiet this long gives back its write buffer */
#define INITIAL_EVENTS_END_ANNOTATION "\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}"

enum hphase { PH_NEW = 0, PH_WAIT_FRESH, PH_STREAM, PH_DONE };

#define NEG_MAX_CLAUSES 32          /* Accept clauses considered (the rest are ignored) */
#define GZIP_THRESHOLD (128 * 1024) /* defaultGzipThresholdBytes: gzip bodies above it */
#define GZIP_STAGE 16384            /* indented bytes staged for deflate */
#define INDENT_MAX_DEPTH (KUBE_JSON_MAX_DEPTH + 8) /* stored objects plus our envelopes */
#define META_GROUP "meta.k8s.io"

/* The transform a request negotiated (targetEncodingForTransform). */
enum neg_as { NEG_AS_NONE = 0, NEG_AS_TABLE, NEG_AS_POM, NEG_AS_POML };

/* Table rows' "object" (TableOptions.includeObject). */
enum neg_incl { INCL_METADATA = 0, INCL_NONE, INCL_OBJECT, INCL_INVALID };

/* What one request negotiated; recomputed on every entry (pure function of the request). */
struct neg {
    enum neg_as as;
    bool v1beta1;       /* the transform's version is meta.k8s.io/v1beta1 (else v1) */
    bool table_default; /* Table without a kube printer kwp knows (the proxy forwards it) */
    bool pretty;        /* success bodies indented (never watches) */
    bool status_indent; /* Status bodies indented: pretty, or WriteRawJSON when no plain JSON
                           clause is acceptable for an error */
    bool gzip;          /* Accept-Encoding carries the exact token gzip */
    enum neg_incl incl; /* ?includeObject= (Table only) */

    const struct printer *printer; /* Table: the kind's printer, or rest's default convertor */
};

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
struct hbody {
    struct iovec *iov; /* the source pieces (array owned, bytes lent until <done>) */
    size_t n;
    size_t idx;
    size_t off;
    void (*done)(void *ctx);
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

struct hreq {
    struct watcher w; /* first member: the sweep maps a watcher back to its hreq */
    int fd;
    bool peer_gone; /* set by the sweep (under the resource lock) */
    struct http_req *req;
    struct apires *ar;
    const struct handlers_opts *opts;
    enum hphase phase;
    int64_t fresh_deadline_ms;
    uint64_t fresh_rv;
    struct selector *lsel;
    struct selector *fsel;
    const char *name;     /* single-object scope ("" = collection); into strs */
    const char *ns;       /* namespace scope ("" = all); into strs */
    const char *typemeta; /* {"kind":"Pod","apiVersion":"v1" for built-ins, else ""; into strs */
    size_t typemeta_len;
    /* watch */
    bool counted_open;
    struct snapshot *initial;
    const char *init_after; /* key of the last initial item handled (lent from <initial>) */
    bool end_bookmark;
    uint64_t init_rv;
    uint64_t watermark; /* only events with rv > watermark are sent */
    uint64_t last_rv;   /* rv of the last event or bookmark sent */
    bool bookmarks;
    int64_t deadline_ms;
    int64_t next_bm_ms; /* 0 = no more bookmarks */
    struct ring_event *pend; /* HANDLERS_BATCH slots while events are in hand, else NULL */
    size_t pend_n;
    size_t pend_i;
    char *over; /* a frame that did not fit MHD's buffer */
    size_t over_len;
    size_t over_off;
    bool ending;
    int64_t due_ms;       /* the due time last given to the resource (0 = none) */
    char *wbuf;           /* the server's write buffer as last lent to watch_read */
    size_t wbuf_dirty;    /* bytes at its start that may hold resident pages */
    int64_t last_data_ms; /* when watch_read last returned bytes */
    int64_t live_ms;      /* when live events began (after any initial events): lag counts
                             from here, so a resumed watch may replay old events */
    bool released;        /* the write buffer was released once (watch_quiet) */
    uint64_t frames;      /* frames written, not yet added to ar->ctr.frames */
    /* negotiation and bodies */
    struct neg neg;
    bool table_hdr_sent; /* watch Tables: columnDefinitions only on the first event */
    struct hbody *body;  /* a streamed LIST/GET body (pretty or gzip), freed with the request */
    char strs[];         /* ns, name and typemeta: a watch holds its state for hours */
};

/* One object as a transform sees it: stored bytes plus the resourceVersion to show. */
struct objview {
    const char *data; /* the stored JSON (built-ins: without kind/apiVersion) */
    size_t len;
    size_t rv_off; /* the rv string's bytes inside data (0/0: unknown) */
    size_t rv_len;
    const char *rv; /* the resourceVersion shown ("" for none) */
    bool override;  /* <rv> replaces the stored one (DELETED after a selector change) */
};

static struct objview ov_of(const struct blob *b, const char *rv_override)
{
    struct objview ov = {b->data,
                         b->len,
                         b->rv_off,
                         b->rv_len,
                         rv_override ? rv_override : b->rv_str,
                         rv_override != NULL};
    return ov;
}

/* ---- growable strings and a block arena ------------------------------------------------ */

/* Stable storage for the computed pieces of one LIST body (rows, reordered metadata). */
struct arena_blk {
    struct arena_blk *next;
    size_t len;
    size_t cap;
    char data[];
};

#define ARENA_BLOCK (64 * 1024)

static char *arena_copy(struct arena_blk **head, const char *s, size_t n)
{
    struct arena_blk *b = *head;
    char *out;

    if (!b || b->cap - b->len < n) {
        size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
        b = xmalloc(sizeof(*b) + cap);
        b->len = 0;
        b->cap = cap;
        b->next = *head;
        *head = b;
    }
    out = b->data + b->len;
    memcpy(out, s, n);
    b->len += n;
    return out;
}

static void arena_free(struct arena_blk *b)
{
    while (b) {
        struct arena_blk *next = b->next;
        free(b);
        b = next;
    }
}

/*
 * The pieces of one reply element, in order. A piece is either lent (stable bytes: a blob,
 * a literal) or temporary: built in <sb>, recorded by offset, and resolved to a pointer with
 * pieces_resolve once building is over (sb may move while it grows).
 */
#define PIECES_MAX 16

struct pieces {
    struct iovec iov[PIECES_MAX];
    size_t tmp_off[PIECES_MAX]; /* offset in sb, or SIZE_MAX for a lent piece */
    size_t n;
    struct sbuf sb;
};

static void pc_lent(struct pieces *pc, const char *p, size_t n)
{
    BUG_ON(pc->n >= PIECES_MAX);
    pc->iov[pc->n].iov_base = (void *)p;
    pc->iov[pc->n].iov_len = n;
    pc->tmp_off[pc->n++] = SIZE_MAX;
}

static void pc_lit(struct pieces *pc, const char *s)
{
    pc_lent(pc, s, strlen(s));
}

/* Starts a temporary piece: what is appended to pc->sb until pc_end belongs to it. */
static void pc_begin(struct pieces *pc)
{
    BUG_ON(pc->n >= PIECES_MAX);
    pc->tmp_off[pc->n] = pc->sb.len;
    pc->iov[pc->n].iov_base = NULL;
}

static void pc_end(struct pieces *pc)
{
    pc->iov[pc->n].iov_len = pc->sb.len - pc->tmp_off[pc->n];
    pc->n++;
}

/* Points the temporary pieces at <base> (pc->sb.p, or a copy of pc->sb's bytes). */
static void pieces_resolve(struct pieces *pc, const char *base)
{
    for (size_t i = 0; i < pc->n; i++) {
        if (pc->tmp_off[i] != SIZE_MAX) {
            pc->iov[i].iov_base = (void *)(base + pc->tmp_off[i]);
        }
    }
}

static size_t pieces_total(const struct pieces *pc)
{
    size_t t = 0;

    for (size_t i = 0; i < pc->n; i++) {
        t += pc->iov[i].iov_len;
    }
    return t;
}

/* ---- pretty printing: Go's json.Indent over bytes -------------------------------------- */

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

/* ---- reply bodies: source pieces -> [indent] -> [gzip] -> MHD --------------------------- */

static void hbody_free(struct hbody *b)
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

/* The next unread source bytes (NULL once everything was read). */
static const char *src_peek(struct hbody *b, size_t *len)
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
static size_t pretty_fill(struct hbody *b, char *out, size_t cap)
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
static ssize_t gzip_fill(struct hbody *b, char *buf, size_t max)
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

static ssize_t body_read(void *ctx, char *buf, size_t max)
{
    struct hreq *h = ctx;
    struct hbody *b = h->body;
    size_t n;

    if (b->gz) {
        return gzip_fill(b, buf, max);
    }
    n = pretty_fill(b, buf, max);
    return n > 0 ? (ssize_t)n : HTTP_STREAM_END;
}

/*
 * Replies 200 with the body gathered from <iov> (the array is copied, the bytes are lent
 * until <done>(<ctx>) runs, which also happens when this fails). Plain bodies keep
 * Content-Length; pretty ones are re-indented as they are read; bodies above 128 KiB get
 * gzip when the client offered it (Content-Encoding and Vary as kube-apiserver sets them).
 */
static void reply_body(struct hreq *h, const struct iovec *iov, size_t n, void (*done)(void *),
                       void *ctx)
{
    struct hbody *b;
    size_t total = 0;

    for (size_t i = 0; i < n; i++) {
        total += iov[i].iov_len;
    }
    h->phase = PH_DONE;
    if (!h->neg.pretty && !(h->neg.gzip && total > GZIP_THRESHOLD)) {
        http_reply_iov(h->req, 200, "application/json", iov, n, done, ctx);
        return;
    }
    b = xcalloc(1, sizeof(*b));
    b->iov = xmalloc(sizeof(*iov) * (n ? n : 1));
    memcpy(b->iov, iov, sizeof(*iov) * n);
    b->n = n;
    b->done = done;
    b->ctx = ctx;
    b->pretty = h->neg.pretty;
    if (b->pretty) {
        indent_init(&b->ind);
        total = h->neg.gzip ? pretty_length(iov, n, GZIP_THRESHOLD) : 0; /* what gets sent */
    }
    b->gz = h->neg.gzip && total > GZIP_THRESHOLD;
    if (b->gz) {
        http_req_add_header(h->req, "Content-Encoding", "gzip");
        http_req_add_header(h->req, "Vary", "Accept-Encoding");
        if (b->pretty) {
            b->stage = xmalloc(GZIP_STAGE);
        }
    }
    h->body = b;
    http_reply_stream(h->req, 200, "application/json", body_read, h);
}

/* ---- content negotiation (negotiation.NegotiateOutputMediaType, goautoneg) -------------- */

struct span {
    const char *p;
    size_t n;
};

/* One clause of an Accept header as goautoneg.ParseAccept keeps it. */
struct accept_clause {
    struct span type;
    struct span subtype;
    float q;
    bool has_as; /* "as", "g", "v" present (even empty): a conversion was asked for */
    bool has_g;
    bool has_v;
    struct span as;
    struct span g;
    struct span v;
    struct span stream;
    struct span sv;
    struct span pretty;
};

static bool span_eq(struct span s, const char *lit)
{
    return s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0;
}

/* strings.Trim(s, " "): spaces only, not tabs. */
static struct span span_trim(const char *p, size_t n)
{
    while (n > 0 && p[0] == ' ') {
        p++;
        n--;
    }
    while (n > 0 && p[n - 1] == ' ') {
        n--;
    }
    return (struct span){p, n};
}

/* strconv.ParseFloat(s, 32) as goautoneg uses it: a syntax error gives 0. */
static float parse_q(const char *p, size_t n)
{
    char tmp[64];
    char *end = NULL;
    double d;

    if (n == 0 || n >= sizeof(tmp) || p[0] == ' ' || p[0] == '\t') {
        return 0.0f;
    }
    memcpy(tmp, p, n);
    tmp[n] = '\0';
    d = strtod(tmp, &end);
    if (end != tmp + n) {
        return 0.0f;
    }
    return (float)d;
}

static const char *memchr_or_end(const char *p, const char *end, char c)
{
    const char *q = memchr(p, c, (size_t)(end - p));
    return q ? q : end;
}

/* Parses one comma-separated part; false when goautoneg skips it. */
static bool accept_clause_parse(const char *p, size_t n, struct accept_clause *c)
{
    struct span part = span_trim(p, n);
    const char *end = part.p + part.n;
    const char *semi = memchr_or_end(part.p, end, ';');
    const char *slash = memchr_or_end(part.p, semi, '/');
    const char *q;

    memset(c, 0, sizeof(*c));
    c->q = 1.0f;
    c->type = span_trim(part.p, (size_t)(slash - part.p));
    if (slash == semi) {
        if (!span_eq(c->type, "*")) {
            return false;
        }
        c->subtype = (struct span){"*", 1};
    } else {
        if (memchr(slash + 1, '/', (size_t)(semi - slash - 1))) {
            return false; /* more than one '/' */
        }
        c->subtype = span_trim(slash + 1, (size_t)(semi - slash - 1));
    }
    for (q = semi; q < end;) {
        const char *ps = q + 1;
        const char *pe = memchr_or_end(ps, end, ';');
        const char *eq = memchr_or_end(ps, pe, '=');
        q = pe;
        if (eq == pe) {
            continue; /* no '=': skipped */
        }
        struct span key = span_trim(ps, (size_t)(eq - ps));
        struct span val = span_trim(eq + 1, (size_t)(pe - eq - 1));
        if (span_eq(key, "q")) {
            c->q = parse_q(eq + 1, (size_t)(pe - eq - 1)); /* untrimmed, as goautoneg */
        } else if (span_eq(key, "as")) {
            c->has_as = true;
            c->as = val;
        } else if (span_eq(key, "g")) {
            c->has_g = true;
            c->g = val;
        } else if (span_eq(key, "v")) {
            c->has_v = true;
            c->v = val;
        } else if (span_eq(key, "stream")) {
            c->stream = val;
        } else if (span_eq(key, "sv")) {
            c->sv = val;
        } else if (span_eq(key, "pretty")) {
            c->pretty = val;
        }
    }
    return true;
}

/* goautoneg's accept_slice.Less. */
static bool accept_less(const struct accept_clause *a, const struct accept_clause *b)
{
    if (a->q > b->q) {
        return true;
    }
    if (!span_eq(a->type, "*") && span_eq(b->type, "*")) {
        return true;
    }
    return !span_eq(a->subtype, "*") && span_eq(b->subtype, "*");
}

/* goautoneg.ParseAccept: parts in order, then sort.Sort (an insertion sort below 13 items,
 * which is what Go runs for any real header). Returns the number of clauses. */
static size_t accept_parse(const char *hdr, struct accept_clause *out, size_t cap)
{
    const char *p = hdr, *end = hdr + strlen(hdr);
    size_t n = 0;

    while (n < cap) {
        const char *comma = memchr_or_end(p, end, ',');
        if (accept_clause_parse(p, (size_t)(comma - p), &out[n])) {
            n++;
        }
        if (comma == end) {
            break;
        }
        p = comma + 1;
    }
    for (size_t i = 1; i < n; i++) {
        for (size_t j = i; j > 0 && accept_less(&out[j], &out[j - 1]); j--) {
            struct accept_clause t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    }
    return n;
}

/* kube-apiserver's server-side printer for <ar> (printers.go), or NULL: custom resources
 * (the CRD's additionalPrinterColumns, which kwp does not read) and unlisted built-ins. */
static const struct printer *table_printer(const struct apires *ar)
{
    return ar->kind.builtin ? printers_find(ar->kind.group, ar->kind.plural) : NULL;
}

/*
 * acceptMediaTypeOptions for the JSON serializer: RequestScope's restrictions, or with
 * <status> DefaultEndpointRestrictions (how errors are written: no transforms, no sv).
 * as=Table is accepted for every kind; one without a printer gets rest's default convertor
 * (out->table_default), which the proxy forwards instead (handlers_serve).
 */
static bool neg_clause(const struct accept_clause *c, bool status, const struct apires *ar,
                       struct neg *out)
{
    bool json = span_eq(c->type, "application") &&
                (span_eq(c->subtype, "json") || span_eq(c->subtype, "*"));

    if (!json && !(span_eq(c->type, "*") && span_eq(c->subtype, "*"))) {
        return false;
    }
    if (c->stream.n > 0 && !span_eq(c->stream, "watch")) {
        return false;
    }
    if (c->sv.n > 0 && (status || !span_eq(c->sv, "v1"))) {
        return false;
    }
    out->as = NEG_AS_NONE;
    out->v1beta1 = false;
    out->table_default = false;
    out->printer = NULL;
    out->pretty = span_eq(c->pretty, "1");
    if (!c->has_as && !c->has_g && !c->has_v) {
        return true;
    }
    if (status || !span_eq(c->g, META_GROUP)) {
        return false;
    }
    if (span_eq(c->v, "v1beta1")) {
        out->v1beta1 = true;
    } else if (!span_eq(c->v, "v1")) {
        return false;
    }
    if (span_eq(c->as, "PartialObjectMetadata")) {
        out->as = NEG_AS_POM;
        return true;
    }
    if (span_eq(c->as, "PartialObjectMetadataList")) {
        out->as = NEG_AS_POML;
        return true;
    }
    if (span_eq(c->as, "Table")) {
        out->as = NEG_AS_TABLE;
        out->printer = table_printer(ar);
        out->table_default = out->printer == NULL;
        if (out->table_default) {
            /* built-ins: rest's default convertor; custom resources: the CRD convertor's
             * defaulted columns (what a CRD without additionalPrinterColumns prints) */
            out->printer = ar->kind.builtin ? printers_default() : printers_custom();
        }
        return true;
    }
    return false;
}

/* negotiation.isPrettyPrint: ?pretty= (strconv.ParseBool, errors false) decides when
 * non-empty, else a curl, Wget or browser User-Agent. */
static bool is_pretty_print(const struct http_req *req)
{
    const char *pp = http_req_arg(req, "pretty");
    const char *ua;
    bool v = false;

    if (pp && pp[0]) {
        (void)k8s_parse_bool(pp, &v);
        return v;
    }
    ua = http_req_header(req, "User-Agent");
    return ua && (strncmp(ua, "curl", 4) == 0 || strncmp(ua, "Wget", 4) == 0 ||
                  strncmp(ua, "Mozilla/5.0", 11) == 0);
}

/* responsewriters.negotiateContentEncoding: a comma-split token equal to "gzip" after
 * strings.TrimSpace ("gzip;q=1" is not one). */
static bool accepts_gzip(const char *ae)
{
    const char *p, *end;

    if (!ae) {
        return false;
    }
    end = ae + strlen(ae);
    for (p = ae;;) {
        const char *comma = memchr_or_end(p, end, ',');
        const char *a = p, *b = comma;
        while (a < b && strchr(" \t\n\v\f\r", *a)) {
            a++;
        }
        while (b > a && strchr(" \t\n\v\f\r", b[-1])) {
            b--;
        }
        if (b - a == 4 && memcmp(a, "gzip", 4) == 0) {
            return true;
        }
        if (comma == end) {
            return false;
        }
        p = comma + 1;
    }
}

static enum neg_incl parse_incl(const struct http_req *req)
{
    const char *v = http_req_arg(req, "includeObject");

    if (!v || !v[0] || strcmp(v, "Metadata") == 0) {
        return INCL_METADATA;
    }
    if (strcmp(v, "None") == 0) {
        return INCL_NONE;
    }
    return strcmp(v, "Object") == 0 ? INCL_OBJECT : INCL_INVALID;
}

/*
 * Negotiates an Accept header (NULL or "" = none) for <ar>; <pretty_print> is isPrettyPrint.
 * Fills everything but gzip and incl. Returns 0, or -ENOTSUP when no clause names something
 * kwp can produce (the 406; *out still says how to write that Status).
 */
static int neg_accept(const char *accept, bool pretty_print, const struct apires *ar,
                      struct neg *out)
{
    struct accept_clause cl[NEG_MAX_CLAUSES];
    struct neg tmp;
    bool found = false;
    size_t n;

    memset(out, 0, sizeof(*out));
    if (!accept || !accept[0]) {
        out->pretty = out->status_indent = pretty_print;
        return 0;
    }
    n = accept_parse(accept, cl, NEG_MAX_CLAUSES);
    for (size_t i = 0; i < n && !found; i++) {
        found = neg_clause(&cl[i], false, ar, &tmp);
    }
    if (found) {
        out->as = tmp.as;
        out->v1beta1 = tmp.v1beta1;
        out->table_default = tmp.table_default;
        out->printer = tmp.printer;
        out->pretty = tmp.pretty || pretty_print;
    }
    out->status_indent = true; /* WriteRawJSON unless a plain JSON clause is acceptable */
    for (size_t i = 0; i < n; i++) {
        if (neg_clause(&cl[i], true, ar, &tmp)) {
            out->status_indent = tmp.pretty || pretty_print;
            break;
        }
    }
    return found ? 0 : -ENOTSUP;
}

/* neg_accept for a request, plus its Accept-Encoding and includeObject. */
static int neg_compute(const struct http_req *req, const struct apires *ar, struct neg *out)
{
    int rc = neg_accept(http_req_header(req, "Accept"), is_pretty_print(req), ar, out);

    out->gzip = accepts_gzip(http_req_header(req, "Accept-Encoding"));
    out->incl = parse_incl(req);
    return rc;
}

/*
 * Writes a Status the way ErrorNegotiated does for this request: compact JSON and "\n", or
 * indented without the newline (the pretty serializer, or WriteRawJSON's MarshalIndent when
 * no plain JSON clause was acceptable).
 */
static void reply_status(struct http_req *req, const struct neg *neg, const struct kstatus *st)
{
    char small[2048];
    char *buf = small, *out;
    size_t need, out_len;

    if (!neg->status_indent) {
        http_reply_status(req, st);
        return;
    }
    need = kube_json_status(st, small, sizeof(small));
    if (need >= sizeof(small)) {
        buf = xmalloc(need + 1);
        kube_json_status(st, buf, need + 1);
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

/* The 406 of NegotiateOutputMediaType, listing what kwp serves. */
static void reply_not_acceptable(struct http_req *req, const struct neg *neg)
{
    struct kstatus st;

    kstatus_set(&st, 406, "NotAcceptable",
                "only the following media types are accepted: application/json");
    reply_status(req, neg, &st);
}

/* ---- helpers --------------------------------------------------------------------------- */

static int64_t opt_or(int64_t v, int64_t dflt)
{
    return v > 0 ? v : dflt;
}

static void hreq_free(void *state)
{
    struct hreq *h = state;

    if (!h) {
        return;
    }
    resource_watch_detach(h->ar->res, &h->w);
    if (h->counted_open) {
        atomic_fetch_sub(&h->ar->ctr.watches_open, 1);
    }
    if (h->frames > 0) {
        atomic_fetch_add(&h->ar->ctr.frames, h->frames);
    }
    free(h->pend); /* its events were lent: the detach above gave them back */
    snapshot_unref(h->initial);
    selector_free(h->lsel);
    selector_free(h->fsel);
    free(h->over);
    hbody_free(h->body);
    free(h);
}

static void hreq_wake(void *ctx)
{
    struct hreq *h = ctx;

    if (h->w.kind == WATCHER_STREAM) {
        http_resume_batched(h->req); /* several events per write when many watches wake */
    } else {
        http_resume(h->req);
    }
}

static bool scope_match(const struct hreq *h, const struct blob *b)
{
    if (h->ns[0] && strcmp(b->ns, h->ns) != 0) {
        return false;
    }
    if (h->name[0] && strcmp(b->name, h->name) != 0) {
        return false;
    }
    return selector_match(h->lsel, b) && selector_match(h->fsel, b);
}

static bool json_empty_object(const char *data, size_t len)
{
    for (size_t i = 1; i < len; i++) {
        char c = data[i];
        if (c == '}') {
            return true;
        }
        if (c != ' ' && c != '\n' && c != '\t' && c != '\r') {
            return false;
        }
    }
    return false;
}

/*
 * Splits the JSON of <ov> as a watch event or GET shows it into at most 5 pieces: typemeta
 * prefix (built-ins), the body, with the resourceVersion string replaced when <ov> overrides
 * it. Returns the number of pieces; *total gets the byte count.
 */
static size_t object_pieces(const char *typemeta, size_t typemeta_len, const struct objview *ov,
                            struct iovec *iov, size_t *total)
{
    size_t n = 0, start = 0;
    bool over =
        ov->override && ov->rv_len > 0 && ov->rv_off > 0 && ov->rv_off + ov->rv_len <= ov->len;

    if (typemeta_len > 0 && ov->len >= 2 && ov->data[0] == '{') {
        iov[n].iov_base = (void *)typemeta;
        iov[n++].iov_len = typemeta_len;
        if (json_empty_object(ov->data, ov->len)) {
            iov[n].iov_base = (void *)"}";
            iov[n++].iov_len = 1;
            goto done;
        }
        iov[n].iov_base = (void *)",";
        iov[n++].iov_len = 1;
        start = 1;
    }
    if (over) {
        iov[n].iov_base = (void *)(ov->data + start);
        iov[n++].iov_len = ov->rv_off - start;
        iov[n].iov_base = (void *)ov->rv;
        iov[n++].iov_len = strlen(ov->rv);
        iov[n].iov_base = (void *)(ov->data + ov->rv_off + ov->rv_len);
        iov[n++].iov_len = ov->len - ov->rv_off - ov->rv_len;
    } else {
        iov[n].iov_base = (void *)(ov->data + start);
        iov[n++].iov_len = ov->len - start;
    }
done:
    *total = 0;
    for (size_t i = 0; i < n; i++) {
        *total += iov[i].iov_len;
    }
    return n;
}

/* The request state with its scope strings and typemeta prefix in the same allocation. */
static struct hreq *hreq_new(struct http_req *req, struct apires *ar,
                             const struct handlers_opts *opts, const struct k8s_path *p)
{
    char tm[400];
    size_t ns_len = strlen(p->ns) + 1, name_len = strlen(p->name) + 1, tm_len = 0;
    struct hreq *h;
    char *s;

    if (ar->kind.builtin) {
        int w = snprintf(tm, sizeof(tm), "{\"kind\":\"%s\",\"apiVersion\":\"%s\"",
                         ar->kind.kind, ar->api_version);
        tm_len = w > 0 && (size_t)w < sizeof(tm) ? (size_t)w : 0;
    }
    h = xcalloc(1, sizeof(*h) + ns_len + name_len + tm_len + 1);
    s = h->strs;
    memcpy(s, p->ns, ns_len);
    h->ns = s;
    s += ns_len;
    memcpy(s, p->name, name_len);
    h->name = s;
    s += name_len;
    memcpy(s, tm, tm_len);
    s[tm_len] = '\0';
    h->typemeta = s;
    h->typemeta_len = tm_len;
    h->req = req;
    h->ar = ar;
    h->opts = opts;
    h->fd = http_req_fd(req);
    return h;
}

char *handlers_object_json(const struct apires *ar, const struct blob *b, size_t *len)
{
    char typemeta[400] = "";
    size_t tlen = 0, total, n, off = 0;
    struct iovec iov[6];
    char *out;

    if (ar->kind.builtin) {
        int w = snprintf(typemeta, sizeof(typemeta), "{\"kind\":\"%s\",\"apiVersion\":\"%s\"",
                         ar->kind.kind, ar->api_version);
        tlen = w > 0 && (size_t)w < sizeof(typemeta) ? (size_t)w : 0;
    }
    struct objview ov = ov_of(b, NULL);

    n = object_pieces(typemeta, tlen, &ov, iov, &total);
    out = xmalloc(total + 2);
    for (size_t i = 0; i < n; i++) {
        memcpy(out + off, iov[i].iov_base, iov[i].iov_len);
        off += iov[i].iov_len;
    }
    out[off++] = '\n';
    out[off] = '\0';
    *len = off;
    return out;
}

int handlers_check_fields(const struct apires *ar, const struct selector *fsel, struct kstatus *st)
{
    size_t n = selector_count(fsel);
    bool custom = ar->kind.fields[0] != NULL;

    for (size_t i = 0; i < n; i++) {
        const char *f = selector_field(fsel, i);
        bool ok = strcmp(f, "metadata.name") == 0 ||
                  (strcmp(f, "metadata.namespace") == 0 && (ar->kind.namespaced || !custom));
        for (size_t j = 0; !ok && j < APIRES_MAX_FIELDS && ar->kind.fields[j]; j++) {
            const char *k = ar->kind.fields[j]; /* "key" or "key:paths" (kube_meta_parse) */
            const char *colon = strchr(k, ':');
            size_t klen = colon ? (size_t)(colon - k) : strlen(k);
            ok = strlen(f) == klen && strncmp(f, k, klen) == 0;
        }
        if (!ok && strcmp(ar->kind.plural, "pods") == 0 && strcmp(f, "spec.host") == 0) {
            ok = true; /* legacy alias of spec.nodeName */
        }
        if (!ok) {
            if (custom && ar->kind.field_reject_kind != NULL) {
                kstatus_set(st, 400, "BadRequest", "field label \"%s\" not supported for %s", f,
                            ar->kind.field_reject_kind);
            } else if (custom) {
                kstatus_set(st, 400, "BadRequest", "field label not supported: %s", f);
            } else {
                kstatus_set(st, 400, "BadRequest",
                            "\"%s\" is not a known field selector: only \"metadata.name\", "
                            "\"metadata.namespace\"",
                            f);
            }
            return -EINVAL;
        }
    }
    return 0;
}

/* ---- transforms: PartialObjectMetadata and Table (handlers/response.go, printers.go) ---- */

#define POM_PREFIX_V1                                                                              \
    "{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":"
#define POM_PREFIX_V1BETA1                                                                         \
    "{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1beta1\",\"metadata\":"

static const char *meta_gv(const struct neg *neg)
{
    return neg->v1beta1 ? "meta.k8s.io/v1beta1" : "meta.k8s.io/v1";
}

/* null, "", {} or [] (the values omitempty drops), whitespace allowed. */
static bool json_blank(const char *v, size_t n)
{
    size_t a = 0, b = n, k = 0;

    while (a < b && (v[a] == ' ' || v[a] == '\t' || v[a] == '\n' || v[a] == '\r')) {
        a++;
    }
    while (b > a && (v[b - 1] == ' ' || v[b - 1] == '\t' || v[b - 1] == '\n' || v[b - 1] == '\r')) {
        b--;
    }
    if (b - a == 4 && memcmp(v + a, "null", 4) == 0) {
        return true;
    }
    if (b - a < 2 || !((v[a] == '"' && v[b - 1] == '"') || (v[a] == '{' && v[b - 1] == '}') ||
                       (v[a] == '[' && v[b - 1] == ']'))) {
        return false;
    }
    for (k = a + 1; k < b - 1; k++) {
        if (v[k] != ' ' && v[k] != '\t' && v[k] != '\n' && v[k] != '\r') {
            return false;
        }
    }
    return v[a] != '"' || b - a == 2;
}

static const char *const owner_ref_order[] = {
    "apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion", NULL};
static const char *const managed_order[] = {"manager",    "operation", "apiVersion",  "time",
                                            "fieldsType", "fieldsV1",  "subresource", NULL};

static void sb_member_key(struct sbuf *sb, bool *first, const char *key)
{
    if (!*first) {
        sbuf_put(sb, ",", 1);
    }
    *first = false;
    sbuf_quote(sb, key, strlen(key));
    sbuf_put(sb, ":", 1);
}

/* The elements of an ownerReferences or managedFields array in struct field order. */
static void meta_reorder_array(const char *v, size_t n, const char *const *order, bool owners,
                               struct sbuf *sb)
{
    size_t pos = 0, eoff, elen;
    bool first = true;

    sbuf_put(sb, "[", 1);
    while (kube_json_array_next(v, n, &pos, &eoff, &elen) == 1) {
        const char *e = v + eoff;
        bool efirst = true;
        if (e[0] != '{') {
            continue;
        }
        sbuf_put(sb, first ? "{" : ",{", first ? 1 : 2);
        first = false;
        for (size_t i = 0; order[i]; i++) {
            size_t off, len;
            bool found = kube_json_member(e, elen, order[i], &off, &len) == 0;
            if (owners && i < 4) { /* apiVersion, kind, name, uid: no omitempty */
                sb_member_key(sb, &efirst, order[i]);
                if (found && e[off] == '"') {
                    sbuf_put(sb, e + off, len);
                } else {
                    sbuf_put(sb, "\"\"", 2);
                }
            } else if (owners) { /* *bool: kept when a boolean */
                if (found && (e[off] == 't' || e[off] == 'f')) {
                    sb_member_key(sb, &efirst, order[i]);
                    sbuf_put(sb, e + off, len);
                }
            } else if (found && !(len == 4 && memcmp(e + off, "null", 4) == 0) &&
                       !(len == 2 && memcmp(e + off, "\"\"", 2) == 0)) {
                sb_member_key(sb, &efirst, order[i]);
                sbuf_put(sb, e + off, len);
            }
        }
        sbuf_put(sb, "}", 1);
    }
    sbuf_put(sb, "]", 1);
}

/*
 * A custom resource's metadata as kube-apiserver re-encodes it for PartialObjectMetadata:
 * meta.AsPartialObjectMetadata copies the unstructured accessors into metav1.ObjectMeta, so
 * members come out in struct order, empty ones dropped (omitempty), unknown ones gone, and
 * ownerReferences / managedFields entries in their struct order. Values stay verbatim
 * (maps were key-sorted by the upstream's encoder and still are).
 */
static void meta_reorder(const char *m, size_t n, const char *rv_override, struct sbuf *sb)
{
    static const char *const order[] = {"name",
                                        "generateName",
                                        "namespace",
                                        "selfLink",
                                        "uid",
                                        "resourceVersion",
                                        "generation",
                                        "creationTimestamp",
                                        "deletionTimestamp",
                                        "deletionGracePeriodSeconds",
                                        "labels",
                                        "annotations",
                                        "ownerReferences",
                                        "finalizers",
                                        "managedFields",
                                        NULL};
    bool first = true;

    sbuf_put(sb, "{", 1);
    for (size_t i = 0; order[i]; i++) {
        size_t off, len;
        const char *k = order[i];
        if (kube_json_member(m, n, k, &off, &len) != 0 || json_blank(m + off, len)) {
            continue;
        }
        if (strcmp(k, "generation") == 0 && len == 1 && m[off] == '0') {
            continue;
        }
        sb_member_key(sb, &first, k);
        if (rv_override && strcmp(k, "resourceVersion") == 0) {
            sbuf_quote(sb, rv_override, strlen(rv_override));
        } else if (strcmp(k, "ownerReferences") == 0 && m[off] == '[') {
            meta_reorder_array(m + off, len, owner_ref_order, true, sb);
        } else if (strcmp(k, "managedFields") == 0 && m[off] == '[') {
            meta_reorder_array(m + off, len, managed_order, false, sb);
        } else {
            sbuf_put(sb, m + off, len);
        }
    }
    sbuf_put(sb, "}", 1);
}

/* The object's metadata as AsPartialObjectMetadata encodes it. Built-ins: the stored span
 * itself (the same metav1.ObjectMeta encoded both), the rv override spliced in. */
static void pc_metadata(struct pieces *pc, const struct apires *ar, const struct objview *ov)
{
    size_t off = 0, len = 0;

    if (kube_json_member(ov->data, ov->len, "metadata", &off, &len) != 0) {
        pc_lit(pc, "{}");
        return;
    }
    if (!ar->kind.builtin) {
        pc_begin(pc);
        meta_reorder(ov->data + off, len, ov->override ? ov->rv : NULL, &pc->sb);
        pc_end(pc);
    } else if (ov->override && ov->rv_len > 0 && ov->rv_off >= off &&
               ov->rv_off + ov->rv_len <= off + len) {
        pc_lent(pc, ov->data + off, ov->rv_off - off);
        pc_lit(pc, ov->rv);
        pc_lent(pc, ov->data + ov->rv_off + ov->rv_len, off + len - ov->rv_off - ov->rv_len);
    } else {
        pc_lent(pc, ov->data + off, len);
    }
}

/* {"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{...}} */
static void pc_pom(struct pieces *pc, const struct apires *ar, const struct neg *neg,
                   const struct objview *ov)
{
    pc_lit(pc, neg->v1beta1 ? POM_PREFIX_V1BETA1 : POM_PREFIX_V1);
    pc_metadata(pc, ar, ov);
    pc_lit(pc, "}");
}

/* ---- Tables (columns and cells: printers.c) --------------------------------------------- */

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static const char *table_columns(const struct neg *neg)
{
    return printers_columns(neg->printer);
}

/*
 * Adds one Table row of <ov>: {"cells":[...][,"conditions":[...]],"object":<o>} where <o>
 * follows includeObject (PartialObjectMetadata by default, the object, or null). The cells
 * come from one cJSON parse of the object, freed here.
 */
static void pc_table_row(struct pieces *pc, const struct hreq *h, const struct objview *ov,
                         int64_t now)
{
    cJSON *obj = cJSON_ParseWithLength(ov->data, ov->len);
    size_t len;
    char *cells = printers_cells_new(h->neg.printer, obj, now, &len);

    cJSON_Delete(obj);
    pc_begin(pc);
    sbuf_put(&pc->sb, "{", 1);
    sbuf_put(&pc->sb, cells, len);
    free(cells);
    sbuf_str(&pc->sb, ",\"object\":");
    pc_end(pc);
    if (h->neg.incl == INCL_NONE) {
        pc_lit(pc, "null");
    } else if (h->neg.incl == INCL_OBJECT) {
        struct iovec tmp[6];
        size_t total, n = object_pieces(h->typemeta, h->typemeta_len, ov, tmp, &total);
        for (size_t i = 0; i < n; i++) {
            pc_lent(pc, tmp[i].iov_base, tmp[i].iov_len);
        }
    } else {
        pc_pom(pc, h->ar, &h->neg, ov);
    }
    pc_lit(pc, "}");
}

/* A one-object Table (GET, watch events): metadata.resourceVersion is the object's,
 * columnDefinitions null once a watch has sent them (watchEmbeddedEncoder's NoHeaders). */
static void pc_table_single(struct pieces *pc, const struct hreq *h, const struct objview *ov,
                            bool headers)
{
    pc_begin(pc);
    sbuf_printf(&pc->sb, "{\"kind\":\"Table\",\"apiVersion\":\"%s\",\"metadata\":", meta_gv(&h->neg));
    if (ov->rv[0]) {
        sbuf_str(&pc->sb, "{\"resourceVersion\":");
        sbuf_quote(&pc->sb, ov->rv, strlen(ov->rv));
        sbuf_str(&pc->sb, "}");
    } else {
        sbuf_str(&pc->sb, "{}");
    }
    sbuf_str(&pc->sb, ",\"columnDefinitions\":");
    pc_end(pc);
    pc_lit(pc, headers ? table_columns(&h->neg) : "null");
    pc_lit(pc, ",\"rows\":[");
    pc_table_row(pc, h, ov, now_ns());
    pc_lit(pc, "]}");
}

/* The "%T" of the object kube-apiserver's transform sees (internal types, or unstructured). */
static void internal_type(const struct apires *ar, bool list, char *out, size_t cap)
{
    const char *g = ar->kind.group;
    char pkg[64];
    size_t n;

    if (!ar->kind.builtin) {
        snprintf(out, cap, "*unstructured.Unstructured%s", list ? "List" : "");
        return;
    }
    if (g[0] == '\0' || strcmp(g, "events.k8s.io") == 0) {
        snprintf(pkg, sizeof(pkg), "core");
    } else if (strcmp(g, "internal.apiserver.k8s.io") == 0) {
        snprintf(pkg, sizeof(pkg), "apiserverinternal");
    } else {
        n = strcspn(g, ".");
        snprintf(pkg, sizeof(pkg), "%.*s", (int)(n < sizeof(pkg) ? n : sizeof(pkg) - 1), g);
    }
    snprintf(out, cap, "*%s.%s", pkg, list ? ar->kind.list_kind : ar->kind.kind);
}

/* response.go's errNotAcceptable for a transform that does not fit the result. */
static void reply_transform_mismatch(struct hreq *h, bool list)
{
    struct kstatus st;
    char type[200];

    internal_type(h->ar, list, type, sizeof(type));
    if (list) {
        kstatus_set(&st, 406, "NotAcceptable",
                    "you requested PartialObjectMetadata, but the requested object is a list (%s)",
                    type);
    } else {
        kstatus_set(&st, 406, "NotAcceptable",
                    "you requested PartialObjectMetadataList, but the requested object is not a "
                    "list (%s)",
                    type);
    }
    h->phase = PH_DONE;
    reply_status(h->req, &h->neg, &st);
}

/* optionsForTransform: an invalid includeObject is a 400 once the object is at hand.
 * Returns true when it replied. */
static bool reply_bad_table_options(struct hreq *h)
{
    struct kstatus st;
    struct sbuf q = {0};
    const char *v = http_req_arg(h->req, "includeObject");

    if (h->neg.as != NEG_AS_TABLE || h->neg.incl != INCL_INVALID) {
        return false;
    }
    sbuf_quote(&q, v, strlen(v));
    kstatus_set(&st, 400, "BadRequest",
                "Unable to convert to Table as requested: includeObject: Invalid value: %s: must "
                "be 'Metadata', 'Object', 'None', or empty",
                q.p);
    sbuf_free(&q);
    h->phase = PH_DONE;
    reply_status(h->req, &h->neg, &st);
    return true;
}

static void reply_too_large(struct hreq *h, uint64_t want)
{
    struct kstatus st;

    kstatus_too_large_rv(&st, want, resource_rv(h->ar->res));
    atomic_fetch_add(&h->ar->ctr.too_large, 1);
    /* a LIST or GET answered here, if with an error, is one served (as WATCH counts) */
    atomic_fetch_add(h->name[0] ? &h->ar->ctr.gets : &h->ar->ctr.lists, 1);
    reply_status(h->req, &h->neg, &st);
}

static void reply_not_ready(struct hreq *h)
{
    struct kstatus st;
    int64_t since = 0;

    (void)resource_is_ready(h->ar->res, &since);
    if (since <= 0) {
        since = h->ar->created_ms; /* never ready yet: unready since the cache was made */
    }
    kstatus_not_ready(&st, since > 0 ? (double)(clock_mono_ms() - since) / 1000.0 : 0.0);
    atomic_fetch_add(&h->ar->ctr.not_ready, 1);
    reply_status(h->req, &h->neg, &st);
}

/*
 * The freshness wait. Returns 1 when the resource has reached h->fresh_rv, 0 when the request
 * was suspended (handlers_serve runs again on wake), -ETIMEDOUT when the deadline passed.
 */
static int wait_fresh(struct hreq *h)
{
    int rc;

    if (h->phase == PH_WAIT_FRESH) {
        resource_watch_detach(h->ar->res, &h->w);
    }
    if (resource_rv(h->ar->res) >= h->fresh_rv) {
        h->phase = PH_NEW;
        return 1;
    }
    if (h->peer_gone || clock_mono_ms() >= h->fresh_deadline_ms) {
        h->phase = PH_NEW;
        return -ETIMEDOUT;
    }
    memset(&h->w, 0, sizeof(h->w));
    h->w.wake = hreq_wake;
    h->w.wake_ctx = h;
    h->w.kind = WATCHER_RVWAIT;
    rc = resource_wait_rv(h->ar->res, &h->w, h->fresh_rv, h->fresh_deadline_ms);
    if (rc == 0) {
        h->phase = PH_NEW;
        return 1;
    }
    h->phase = PH_WAIT_FRESH;
    http_suspend(h->req);
    return 0;
}

static void start_fresh_wait(struct hreq *h, uint64_t rv, int64_t wait_ms)
{
    h->fresh_rv = rv;
    h->fresh_deadline_ms = clock_mono_ms() + wait_ms;
}

/* ---- LIST ------------------------------------------------------------------------------ */

struct listbody {
    struct snapshot *snap;
    char *head;
    struct iovec *iov;
    struct arena_blk *arena; /* computed pieces of transformed items (rows, metadata) */
};

static void listbody_done(void *ctx)
{
    struct listbody *lb = ctx;
    snapshot_unref(lb->snap);
    free(lb->head);
    free(lb->iov);
    arena_free(lb->arena);
    free(lb);
}

/* Largest number of pieces one list item takes (a Table row with an object override). */
#define LIST_ITEM_PIECES 10

/*
 * Appends the pieces of item <b> to lb->iov at *n_iov, as negotiated: the stored bytes, a
 * PartialObjectMetadata, or a Table row. Computed bytes are copied into lb->arena.
 */
static void list_item(const struct hreq *h, struct listbody *lb, const struct blob *b,
                      size_t *n_iov, int64_t now)
{
    struct pieces pc = {0};
    struct objview ov;
    const char *base;

    if (h->neg.as == NEG_AS_NONE) {
        lb->iov[*n_iov].iov_base = (void *)b->data; /* the common case: the blob itself */
        lb->iov[(*n_iov)++].iov_len = b->len;
        return;
    }
    ov = ov_of(b, NULL);
    if (h->neg.as == NEG_AS_POML) {
        pc_pom(&pc, h->ar, &h->neg, &ov);
    } else {
        pc_table_row(&pc, h, &ov, now);
    }
    BUG_ON(pc.n > LIST_ITEM_PIECES);
    base = pc.sb.len ? arena_copy(&lb->arena, pc.sb.p, pc.sb.len) : NULL;
    pieces_resolve(&pc, base);
    memcpy(lb->iov + *n_iov, pc.iov, sizeof(pc.iov[0]) * pc.n);
    *n_iov += pc.n;
    sbuf_free(&pc.sb);
}

/*
 * Positions <it> at the first item in scope after <after_key> (full store key, NULL for the
 * start): the namespace's first key, or the key after the token's. Returns it (lent) or NULL.
 */
static const struct blob *scope_start(const struct hreq *h, const struct snapshot *s,
                                      const char *after_key, struct store_iter *it)
{
    char prefix[K8S_NAME_MAX + 2];
    const char *after = after_key;

    if (h->ns[0]) {
        /* every key of the namespace is > "ns/" and they are contiguous */
        snprintf(prefix, sizeof(prefix), "%s/", h->ns);
        if (after == NULL || strcmp(after, prefix) < 0) {
            after = prefix;
        }
    }
    return snapshot_seek(s, after, it);
}

/*
 * How many keys in scope sort after <key> (NULL = all of them), in O(log n): the namespace
 * ends before "ns0", since '0' follows '/' and every key of a namespaced resource has one.
 */
static size_t scope_count_after(const struct hreq *h, const struct snapshot *s, const char *key)
{
    char end[K8S_NAME_MAX + 2];
    size_t upto = s->len;
    size_t from;

    if (h->ns[0]) {
        snprintf(end, sizeof(end), "%s0", h->ns);
        upto = snapshot_rank(s, end);
        snprintf(end, sizeof(end), "%s/", h->ns);
        if (key == NULL || strcmp(key, end) < 0) {
            key = end;
        }
    }
    from = snapshot_rank(s, key);
    return upto > from ? upto - from : 0;
}

static bool in_scope_key(const struct hreq *h, const struct blob *b)
{
    return !h->ns[0] || strcmp(b->ns, h->ns) == 0;
}

/*
 * Replies with the list of <s> (served at <list_rv>), items after <after_key> (full store
 * key, NULL for the start), at most <limit> (0 = all), minting continue tokens with
 * <token_rv>. Takes ownership of one reference to <s>. Costs O(log n) plus the items it
 * visits: a page does not walk the rest of the list.
 */
static void reply_list(struct hreq *h, struct snapshot *s, uint64_t list_rv, const char *after_key,
                       int64_t limit, int64_t token_rv)
{
    struct listbody *lb;
    struct store_iter it;
    const struct blob *b, *lastb = NULL;
    size_t n_iov = 1, matched = 0;
    bool more = false, empty_pred = selector_is_empty(h->lsel) && selector_is_empty(h->fsel);
    size_t remaining = 0, cand;
    char rvbuf[24], tok[1024] = "", meta[1200];
    const char *tail = "]}\n";
    struct sbuf head = {0};
    int64_t now = now_ns();

    if (h->neg.as == NEG_AS_POM || reply_bad_table_options(h)) {
        if (h->neg.as == NEG_AS_POM) {
            reply_transform_mismatch(h, true);
        }
        snapshot_unref(s);
        return;
    }
    /* at most <limit> items go out, however many are in scope */
    cand = scope_count_after(h, s, after_key);
    if (limit > 0 && (uint64_t)limit < cand) {
        cand = (size_t)limit;
    }
    lb = xcalloc(1, sizeof(*lb));
    lb->snap = s;
    /* a plain item is one piece (the blob) after its comma; a Table row or metadata item up
     * to LIST_ITEM_PIECES */
    lb->iov = xmalloc(sizeof(struct iovec) *
                      ((1 + (h->neg.as == NEG_AS_NONE ? 1 : LIST_ITEM_PIECES)) * cand + 4));
    n_iov = 1; /* slot 0 = head, filled last */
    for (b = scope_start(h, s, after_key, &it); b != NULL; b = snapshot_next(&it)) {
        if (!in_scope_key(h, b)) {
            break; /* keys of one namespace are contiguous */
        }
        if (limit > 0 && (int64_t)matched == limit) {
            more = true;
            break;
        }
        if (!scope_match(h, b)) {
            continue;
        }
        if (matched > 0) {
            lb->iov[n_iov].iov_base = (void *)",";
            lb->iov[n_iov++].iov_len = 1;
        }
        list_item(h, lb, b, &n_iov, now);
        matched++;
        lastb = b;
    }
    if (more) {
        /* remainingItemCount: candidates after the last returned item, only without selectors */
        remaining = scope_count_after(h, s, lastb->key);
        kube_json_continue_encode(token_rv, h->ns[0] ? lastb->name : lastb->key, tok, sizeof(tok));
    }
    rv_format(list_rv, rvbuf);
    if (more && empty_pred) {
        snprintf(meta, sizeof(meta),
                 "{\"resourceVersion\":\"%s\",\"continue\":\"%s\",\"remainingItemCount\":%zu}",
                 rvbuf, tok, remaining);
    } else if (more) {
        snprintf(meta, sizeof(meta), "{\"resourceVersion\":\"%s\",\"continue\":\"%s\"}", rvbuf,
                 tok);
    } else {
        snprintf(meta, sizeof(meta), "{\"resourceVersion\":\"%s\"}", rvbuf);
    }
    if (h->neg.as == NEG_AS_TABLE) {
        /* printers and the CRD convertor (metatable.MetaToTableRow) make an empty slice
         * ("rows":[]); rest's default convertor appends to a nil one ("rows":null) */
        sbuf_printf(&head,
                  "{\"kind\":\"Table\",\"apiVersion\":\"%s\",\"metadata\":%s,"
                  "\"columnDefinitions\":",
                  meta_gv(&h->neg), meta);
        sbuf_str(&head, table_columns(&h->neg));
        bool nil_rows = matched == 0 && h->neg.printer == printers_default();
        sbuf_str(&head, nil_rows ? ",\"rows\":null" : ",\"rows\":[");
        tail = nil_rows ? "}\n" : tail;
    } else if (h->neg.as == NEG_AS_POML) {
        /* asPartialObjectMetadataList appends to a nil slice: "items":null when empty */
        sbuf_printf(&head,
                  "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"%s\","
                  "\"metadata\":%s,\"items\":%s",
                  meta_gv(&h->neg), meta, matched == 0 ? "null" : "[");
        tail = matched == 0 ? "}\n" : tail;
    } else {
        sbuf_str(&head, "{\"kind\":");
        sbuf_quote(&head, h->ar->kind.list_kind, strlen(h->ar->kind.list_kind));
        sbuf_str(&head, ",\"apiVersion\":");
        sbuf_quote(&head, h->ar->api_version, strlen(h->ar->api_version));
        sbuf_str(&head, ",\"metadata\":");
        sbuf_str(&head, meta);
        sbuf_str(&head, ",\"items\":[");
    }
    lb->head = head.p;
    lb->iov[0].iov_base = lb->head;
    lb->iov[0].iov_len = head.len;
    lb->iov[n_iov].iov_base = (void *)tail;
    lb->iov[n_iov++].iov_len = strlen(tail);
    atomic_fetch_add(&h->ar->ctr.lists, 1);
    reply_body(h, lb->iov, n_iov, listbody_done, lb);
}

static void reply_expired(struct hreq *h, const char *message, const char *continue_tok)
{
    struct kstatus st;

    kstatus_set(&st, 410, "Expired", "%s", message);
    st.continue_tok = continue_tok;
    atomic_fetch_add(&h->ar->ctr.lists, 1);
    h->phase = PH_DONE;
    reply_status(h->req, &h->neg, &st);
}

#define CONTINUE_TOO_OLD_MSG                                                                       \
    "The provided continue parameter is too old to display a consistent list result. You can "     \
    "start a new list without the continue parameter, or use the continue token in this "          \
    "response to retrieve the remainder of the results. Continuing with the provided token "       \
    "results in an inconsistent list - objects that were created, modified, or deleted between "   \
    "the time the first chunk was returned and now may show up in the list."

/*
 * The rule for LIST and GET at an rv newer than the cache (SEMANTICS 1.4): wait for events in
 * flight (the proxy: --freshness-wait, then forward; local: 3 s, then the 504). Returns true
 * when the cache reached <rv> and the caller goes on; false when the request was suspended,
 * forwarded or answered.
 */
static bool await_rv(struct hreq *h, uint64_t rv)
{
    const struct handlers_opts *o = h->opts;
    bool fwd = o->forward && !o->local_too_large;
    int rc;

    if (h->phase != PH_WAIT_FRESH) {
        start_fresh_wait(h, rv,
                         fwd ? opt_or(o->freshness_wait_ms, 250)
                             : opt_or(o->too_large_wait_ms, HANDLERS_TOO_LARGE_DEFAULT_MS));
    }
    rc = wait_fresh(h);
    if (rc > 0) {
        return true;
    }
    if (rc < 0) {
        if (fwd) {
            o->forward(o->app, h->req);
        } else {
            h->phase = PH_DONE;
            reply_too_large(h, rv);
        }
    }
    return false;
}

static void serve_list(struct hreq *h, const struct k8s_list_opts *lo)
{
    const struct handlers_opts *o = h->opts;
    struct resource *res = h->ar->res;
    struct snapshot *s = NULL;
    uint64_t rv = 0;
    int rc;

    if (lo->continue_tok && lo->continue_tok[0]) {
        int64_t trv = 0;
        /* cacher.go computeListLimit: resourceVersion "0" (accepted with continue) drops the
         * limit, so the snapshot gives the rest of the list in one page (SEMANTICS 1.6) */
        int64_t limit = lo->has_rv && strcmp(lo->rv_str, "0") == 0 ? 0 : lo->limit;
        char start[K8S_NAME_MAX * 2 + 2], full[K8S_NAME_MAX * 4], err[256];
        if (kube_json_continue_decode(lo->continue_tok, &trv, start, sizeof(start), err,
                                      sizeof(err)) != 0) {
            struct kstatus st;
            kstatus_set(&st, 400, "BadRequest", "invalid continue token: %s", err);
            reply_status(h->req, &h->neg, &st);
            return;
        }
        if (h->ns[0]) {
            snprintf(full, sizeof(full), "%s/%s", h->ns, start);
        } else {
            snprintf(full, sizeof(full), "%s", start);
        }
        if (trv < 0) { /* "continue at the latest revision": a consistent read */
            if (!o->authoritative) {
                o->forward(o->app, h->req);
                return;
            }
            s = resource_snapshot(res, &rv);
            reply_list(h, s, rv, full, limit, (int64_t)rv);
            return;
        }
        rc = resource_snapshot_at(res, (uint64_t)trv, &s);
        if (rc != 0 && !o->authoritative) {
            /* outside the window (or ahead of the cache): upstream answers, possibly with
             * its 410 and a fresh "rv":-1 token */
            o->forward(o->app, h->req);
            return;
        }
        if (rc == -ESTALE) {
            char tok[1024];
            kube_json_continue_encode(-1, start, tok, sizeof(tok));
            reply_expired(h, CONTINUE_TOO_OLD_MSG, tok);
            return;
        }
        if (rc != 0) {
            reply_too_large(h, (uint64_t)trv);
            return;
        }
        reply_list(h, s, (uint64_t)trv, full, limit, trv);
        return;
    }

    bool rv_unset = !lo->has_rv || lo->rv_str[0] == '\0';
    bool rv_zero = !rv_unset && lo->rv == 0;
    bool exact =
        lo->rvm == RVM_EXACT || (!rv_unset && !rv_zero && lo->limit > 0 && lo->rvm == RVM_UNSET);

    if (rv_unset && !o->authoritative) {
        o->forward(o->app, h->req);
        return;
    }
    if (!rv_unset && !rv_zero && lo->rv > resource_rv(res)) {
        if (!await_rv(h, lo->rv)) {
            return;
        }
    }
    if (exact) {
        rc = resource_snapshot_at(res, lo->rv, &s);
        if (rc != 0 && !o->authoritative) {
            o->forward(o->app, h->req); /* not in the window: upstream's answer */
            return;
        }
        if (rc == -ESTALE) {
            reply_expired(h, "The resourceVersion for the provided list is too old.", NULL);
            return;
        }
        if (rc != 0) {
            reply_too_large(h, lo->rv);
            return;
        }
        reply_list(h, s, lo->rv, NULL, lo->limit, (int64_t)lo->rv);
        return;
    }
    s = resource_snapshot(res, &rv);
    reply_list(h, s, rv, NULL, rv_zero ? 0 : lo->limit, (int64_t)rv);
}

/* ---- GET ------------------------------------------------------------------------------- */

/* A GET body: the pieces of one object, pinned by its blob until MHD is done. */
struct getbody {
    struct blob *b;
    struct pieces pc;
};

static void getbody_done(void *ctx)
{
    struct getbody *gb = ctx;

    blob_unref(gb->b);
    sbuf_free(&gb->pc.sb);
    free(gb);
}

/* Replies with object <b> (takes the reference) as negotiated: the object with its kind and
 * apiVersion, a PartialObjectMetadata or a one-row Table, then "\n". */
static void reply_object(struct hreq *h, struct blob *b)
{
    struct getbody *gb;
    struct objview ov = ov_of(b, NULL);

    if (h->neg.as == NEG_AS_POML || reply_bad_table_options(h)) {
        if (h->neg.as == NEG_AS_POML) {
            reply_transform_mismatch(h, false);
        }
        blob_unref(b);
        return;
    }
    gb = xcalloc(1, sizeof(*gb));
    gb->b = b;
    if (h->neg.as == NEG_AS_POM) {
        pc_pom(&gb->pc, h->ar, &h->neg, &ov);
    } else if (h->neg.as == NEG_AS_TABLE) {
        pc_table_single(&gb->pc, h, &ov, true);
    } else {
        size_t total;
        gb->pc.n = object_pieces(h->typemeta, h->typemeta_len, &ov, gb->pc.iov, &total);
        for (size_t i = 0; i < gb->pc.n; i++) {
            gb->pc.tmp_off[i] = SIZE_MAX;
        }
    }
    pc_lit(&gb->pc, "\n");
    pieces_resolve(&gb->pc, gb->pc.sb.p);
    reply_body(h, gb->pc.iov, gb->pc.n, getbody_done, gb);
}

static void serve_get(struct hreq *h, const struct k8s_list_opts *lo)
{
    const struct handlers_opts *o = h->opts;
    struct resource *res = h->ar->res;
    char key[K8S_NAME_MAX * 2 + 2];
    struct blob *b;
    bool rv_unset = !lo->has_rv || lo->rv_str[0] == '\0';

    if (rv_unset && !o->authoritative) {
        o->forward(o->app, h->req);
        return;
    }
    if (!rv_unset && lo->rv > 0 && lo->rv > resource_rv(res)) {
        if (!await_rv(h, lo->rv)) {
            return;
        }
    }
    if (h->ns[0]) {
        snprintf(key, sizeof(key), "%s/%s", h->ns, h->name);
    } else {
        snprintf(key, sizeof(key), "%s", h->name);
    }
    atomic_fetch_add(&h->ar->ctr.gets, 1);
    h->phase = PH_DONE;
    b = resource_get(res, key);
    if (!b) {
        struct kstatus st;
        kstatus_not_found(&st, h->ar->kind.group, h->ar->kind.plural, h->name);
        reply_status(h->req, &h->neg, &st);
        return;
    }
    reply_object(h, b);
}

/* ---- WATCH ----------------------------------------------------------------------------- */

/* Copies as much of the overflow frame as fits, cutting only at UTF-8 character starts. */
static size_t drain_over(struct hreq *h, char *buf, size_t max)
{
    size_t left = h->over_len - h->over_off, n = left < max ? left : max;

    if (n < left) {
        while (n > 0 && ((unsigned char)h->over[h->over_off + n] & 0xC0) == 0x80) {
            n--;
        }
    }
    memcpy(buf, h->over + h->over_off, n);
    h->over_off += n;
    if (h->over_off == h->over_len) {
        free(h->over);
        h->over = NULL;
        h->over_len = h->over_off = 0;
    }
    return n;
}

enum emit_rc { EMIT_OK = 0, EMIT_FULL };

/*
 * Writes the frame made of <iov> pieces into buf at *n if it fits; if it does not and nothing
 * has been written in this call, stages it in the overflow buffer and writes what fits.
 */
static enum emit_rc emit_pieces(struct hreq *h, char *buf, size_t max, size_t *n,
                                const struct iovec *iov, size_t cnt, size_t total)
{
    char *dst;

    if (total <= max - *n) {
        dst = buf + *n;
        for (size_t i = 0; i < cnt; i++) {
            memcpy(dst, iov[i].iov_base, iov[i].iov_len);
            dst += iov[i].iov_len;
        }
        *n += total;
        h->frames++;
        return EMIT_OK;
    }
    if (*n > 0) {
        return EMIT_FULL;
    }
    h->over = xmalloc(total);
    h->over_len = total;
    h->over_off = 0;
    dst = h->over;
    for (size_t i = 0; i < cnt; i++) {
        memcpy(dst, iov[i].iov_base, iov[i].iov_len);
        dst += iov[i].iov_len;
    }
    h->frames++;
    *n += drain_over(h, buf, max);
    return EMIT_OK;
}

/* The event object as negotiated when it is transformed: a PartialObjectMetadata, or a
 * one-row Table with column definitions on the first event only. (emit_view gathers the
 * plain object itself.) */
static void pc_event_object(struct pieces *pc, struct hreq *h, const struct objview *ov)
{
    if (h->neg.as == NEG_AS_POM) {
        pc_pom(pc, h->ar, &h->neg, ov);
    } else {
        pc_table_single(pc, h, ov, !h->table_hdr_sent);
        h->table_hdr_sent = true;
    }
}

#define FRAME_HEAD_MAX 48

/* Writes {"type":"<type>","object": into <head> (FRAME_HEAD_MAX bytes); returns its length.
 * Per frame and per watcher: memcpy, not snprintf (it showed in profiles). */
static size_t frame_head(const char *type, char *head)
{
    static const char pre[] = "{\"type\":\"", post[] = "\",\"object\":";
    size_t tl = strlen(type), w = 0;

    BUG_ON(tl > FRAME_HEAD_MAX - sizeof(pre) - sizeof(post));
    memcpy(head, pre, sizeof(pre) - 1);
    w += sizeof(pre) - 1;
    memcpy(head + w, type, tl);
    w += tl;
    memcpy(head + w, post, sizeof(post) - 1);
    return w + sizeof(post) - 1;
}

/* A frame whose object is not transformed (most watches; also PartialObjectMetadataList,
 * which cannot transform one object, so watchEmbeddedEncoder sends it untransformed). */
static bool frame_is_plain(const struct hreq *h)
{
    return h->neg.as != NEG_AS_POM && h->neg.as != NEG_AS_TABLE;
}

/* The plain frame: <head> (w bytes), the object's pieces, "}\n", as at most 8 iovecs.
 * Returns their count; *total gets the frame's length. */
static size_t plain_frame_iov(const struct hreq *h, const char *head, size_t w,
                              const struct objview *ov, struct iovec *iov, size_t *total)
{
    size_t cnt, len;

    iov[0].iov_base = (void *)head;
    iov[0].iov_len = w;
    cnt = 1 + object_pieces(h->typemeta, h->typemeta_len, ov, iov + 1, &len);
    iov[cnt].iov_base = (void *)"}\n";
    iov[cnt++].iov_len = 2;
    *total = w + len + 2;
    return cnt;
}

/* Frames {"type":T,"object":O}\n around the object or pc_event_object. */
static enum emit_rc emit_view(struct hreq *h, char *buf, size_t max, size_t *n, const char *type,
                              const struct objview *ov)
{
    struct pieces pc;
    char head[FRAME_HEAD_MAX];
    enum emit_rc rc;
    size_t w = frame_head(type, head);

    if (frame_is_plain(h)) {
        /* gathered straight into the buffer, without a struct pieces per event and watcher */
        struct iovec iov[8];
        size_t total, cnt = plain_frame_iov(h, head, w, ov, iov, &total);

        return emit_pieces(h, buf, max, n, iov, cnt, total);
    }
    memset(&pc, 0, sizeof(pc));
    pc_lent(&pc, head, w);
    pc_event_object(&pc, h, ov);
    pc_lit(&pc, "}\n");
    pieces_resolve(&pc, pc.sb.p);
    rc = emit_pieces(h, buf, max, n, pc.iov, pc.n, pieces_total(&pc));
    sbuf_free(&pc.sb);
    return rc;
}

static enum emit_rc emit_object(struct hreq *h, char *buf, size_t max, size_t *n, const char *type,
                                const struct blob *b, const char *rv_override)
{
    struct objview ov = ov_of(b, rv_override);

    return emit_view(h, buf, max, n, type, &ov);
}

/* A BOOKMARK: an empty object of the kind carrying only the resourceVersion (and the
 * watch-list annotation), encoded and transformed like any event object. */
static enum emit_rc emit_bookmark(struct hreq *h, char *buf, size_t max, size_t *n, uint64_t rv,
                                  bool initial_end)
{
    char obj[1024];
    char rvbuf[24];
    struct objview ov;
    int w;

    rv_format(rv, rvbuf);
    w = snprintf(obj, sizeof(obj), "{\"metadata\":{\"resourceVersion\":\"%s\"%s%s}%s}", rvbuf,
                 initial_end ? "," : "", initial_end ? INITIAL_EVENTS_END_ANNOTATION : "",
                 h->ar->kind.bookmark_body);
    if (w <= 0 || (size_t)w >= sizeof(obj)) {
        return EMIT_OK; /* cannot happen with the static table; skip rather than truncate */
    }
    if (h->typemeta_len == 0) {
        /* custom resources store kind and apiVersion in the object: so does their bookmark */
        char full[1400];
        w = snprintf(full, sizeof(full), "{\"kind\":\"%s\",\"apiVersion\":\"%s\",%s",
                     h->ar->kind.kind, h->ar->api_version, obj + 1);
        if (w <= 0 || (size_t)w >= sizeof(full)) {
            return EMIT_OK;
        }
        ov = (struct objview){full, (size_t)w, 0, 0, rvbuf, false};
        return emit_view(h, buf, max, n, "BOOKMARK", &ov);
    }
    ov = (struct objview){obj, (size_t)w, 0, 0, rvbuf, false};
    return emit_view(h, buf, max, n, "BOOKMARK", &ov);
}

static enum emit_rc emit_status(struct hreq *h, char *buf, size_t max, size_t *n,
                                const struct kstatus *st)
{
    char body[2048];
    struct iovec iov[3];
    size_t len = kube_json_status(st, body, sizeof(body));

    if (len >= sizeof(body)) {
        len = sizeof(body) - 1;
    }
    iov[0].iov_base = (void *)"{\"type\":\"ERROR\",\"object\":";
    iov[0].iov_len = strlen(iov[0].iov_base);
    iov[1].iov_base = body;
    iov[1].iov_len = len;
    iov[2].iov_base = (void *)"}\n";
    iov[2].iov_len = 2;
    return emit_pieces(h, buf, max, n, iov, 3, iov[0].iov_len + len + 2);
}

/*
 * The frame of an event as stored (its own type, its object, the resource's typemeta) is the
 * same bytes for every plain watcher of the resource: the first one to send the event builds
 * it and attaches it to the event in the ring (ring_aux_attach, freed by the ring), and the
 * others copy it in one piece instead of gathering it again. Valid while the event's batch
 * is lent (resource_watch_next).
 */
struct shared_frame {
    const struct apires *ar; /* the resource whose typemeta it carries */
    size_t len;
    char data[];
};

static struct shared_frame *shared_frame_new(const struct hreq *h, const char *type,
                                             const struct blob *b)
{
    char head[FRAME_HEAD_MAX];
    struct iovec iov[8];
    struct objview ov = ov_of(b, NULL);
    size_t total, cnt = plain_frame_iov(h, head, frame_head(type, head), &ov, iov, &total);
    struct shared_frame *f = xmalloc(sizeof(*f) + total);
    char *dst = f->data;

    f->ar = h->ar;
    f->len = total;
    for (size_t i = 0; i < cnt; i++) {
        memcpy(dst, iov[i].iov_base, iov[i].iov_len);
        dst += iov[i].iov_len;
    }
    return f;
}

/* Emits <ev> as <type> with its own object: from the shared frame when this watcher's frame
 * is the stored one (plain, and <type> is the event's own), else built for this watcher. */
static enum emit_rc emit_stored(struct hreq *h, char *buf, size_t max, size_t *n,
                                const struct ring_event *ev, enum watch_type type)
{
    static const char *const names[] = {"ADDED", "MODIFIED", "DELETED"};
    const struct shared_frame *f = NULL;
    struct iovec iov;

    BUG_ON(type > WATCH_DELETED);
    if (type == ev->type && ev->aux != NULL && frame_is_plain(h)) {
        f = ring_aux(ev);
        if (f == NULL) {
            struct shared_frame *mine = shared_frame_new(h, names[type], ev->obj);

            f = ring_aux_attach(ev, mine);
            if (f != mine) {
                free(mine);
            }
        }
    }
    if (f == NULL || f->ar != h->ar) {
        return emit_object(h, buf, max, n, names[type], ev->obj, NULL);
    }
    iov.iov_base = (void *)f->data;
    iov.iov_len = f->len;
    return emit_pieces(h, buf, max, n, &iov, 1, f->len);
}

/* SEMANTICS 2.10: the event as this watcher sees it through its filter. */
static enum emit_rc emit_event(struct hreq *h, char *buf, size_t max, size_t *n,
                               const struct ring_event *ev)
{
    bool cur, old;
    enum emit_rc rc = EMIT_OK;

    if (ev->rv <= h->watermark) {
        return EMIT_OK;
    }
    if (ev->type == WATCH_DELETED) {
        if (scope_match(h, ev->prev ? ev->prev : ev->obj)) {
            rc = emit_stored(h, buf, max, n, ev, WATCH_DELETED);
        }
    } else {
        cur = scope_match(h, ev->obj);
        old = ev->prev && scope_match(h, ev->prev);
        if (cur && !old) {
            rc = emit_stored(h, buf, max, n, ev, WATCH_ADDED);
        } else if (cur && old) {
            rc = emit_stored(h, buf, max, n, ev, WATCH_MODIFIED);
        } else if (!cur && old) {
            rc = emit_object(h, buf, max, n, "DELETED", ev->prev, ev->obj->rv_str);
        }
    }
    if (rc == EMIT_OK) {
        h->last_rv = ev->rv;
    }
    return rc;
}

/*
 * Tells the resource when the tick must wake this watch: the next bookmark, the deadline, or
 * the moment its write buffer may be released. A busy watch would move that last moment at
 * every suspend, a locked call each time: an earlier wake already armed is kept instead (it
 * costs one spare wake-up, after which watch_quiet arms the right moment).
 */
static void watch_set_due(struct hreq *h, int64_t now)
{
    int64_t due = h->next_bm_ms && h->next_bm_ms < h->deadline_ms ? h->next_bm_ms
                                                                  : h->deadline_ms;

    if (h->wbuf_dirty > 0 && h->last_data_ms + HANDLERS_RELEASE_IDLE_MS < due) {
        due = h->last_data_ms + HANDLERS_RELEASE_IDLE_MS;
    }
    if (h->due_ms > now && h->due_ms < due && h->wbuf_dirty > 0) {
        return;
    }
    if (due != h->due_ms) {
        h->due_ms = due;
        resource_watch_set_due(h->ar->res, &h->w, due);
    }
}

/*
 * A watch about to suspend. The server's write buffer (most of the connection's memory
 * pool) stays resident once written (libmicrohttpd also zeroes the whole pool between two
 * requests of a connection), although an idle watch needs none of it: at its first suspend,
 * and later when nothing was sent for HANDLERS_RELEASE_IDLE_MS, its whole pages go back to
 * the kernel
 * (MADV_DONTNEED: they read as zeros, and are faulted in again by the next write). The
 * bytes are ours to overwrite until we return, and we return 0, so nothing is lost; the tick
 * wakes the watch at that moment when no event does sooner.
 */
static void watch_quiet(struct hreq *h, int64_t now)
{
    if (h->wbuf_dirty == 0) {
        return;
    }
    if (!h->released || now - h->last_data_ms >= HANDLERS_RELEASE_IDLE_MS) {
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t lo = ((uintptr_t)h->wbuf + page - 1) & ~(page - 1);
        uintptr_t hi = ((uintptr_t)h->wbuf + h->wbuf_dirty) & ~(page - 1);
        if (hi > lo) {
            (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
        }
        h->wbuf_dirty = 0;
        h->released = true;
    }
    watch_set_due(h, now);
}

static void schedule_bookmark(struct hreq *h, int64_t now)
{
    int64_t interval = opt_or(h->opts->bookmark_interval_ms, HANDLERS_BOOKMARK_DEFAULT_MS);
    int64_t next = now + interval;

    if (!h->bookmarks) {
        h->next_bm_ms = 0;
    } else if (h->deadline_ms - 2000 < next) {
        next = h->deadline_ms - 2000;
        h->next_bm_ms = next > now ? next : 0;
    } else {
        h->next_bm_ms = next;
    }
    watch_set_due(h, now);
}

/* A watch's kernel send buffer (SO_SNDBUF; the kernel doubles it): a slow reader parks at
 * most this much there, so --watch-max-lag sees its lag (instead of up to 4 MiB absorbing
 * it) and the writer is called again once a third of it drained. Ample for one watch: 100
 * events/s of 1 KiB need 100 KiB/s. */
#define HANDLERS_WATCH_SNDBUF (128 * 1024)

/*
 * SEMANTICS 2.11: kube-apiserver ends a watcher whose buffer stays full past its dispatch
 * budget; kwp holds no per-watcher buffer (a cursor into the shared history), so the bound is
 * on time instead: a watch whose next event has waited longer than --watch-max-lag, counted
 * from the event's arrival or the start of the live phase, is ended cleanly (no ERROR event)
 * and the client re-watches from its last resourceVersion. Its memory never grew meanwhile.
 * A watch still sending its initial events is checked once per call on the oldest live event
 * waiting behind them (counted from its arrival); after them the backlog counts from the end
 * of the initial events.
 */
static bool watch_lagging(struct hreq *h, int64_t t_ms, int64_t now)
{
    int64_t since = t_ms > h->live_ms ? t_ms : h->live_ms;

    if (h->opts->watch_max_lag_ms <= 0 || now - since <= h->opts->watch_max_lag_ms) {
        return false;
    }
    static struct log_ratelimit rl;
    log_ratelimited(&rl, 1000, LOG_LEVEL_INFO, "watch",
                    "resource=%s namespace=\"%s\" lag_ms=%lld last_rv=%llu msg=\"Forcing %s watcher "
                    "close due to unresponsiveness\"",
                    resource_name(h->ar->res), h->ns, (long long)(now - since),
                    (unsigned long long)h->last_rv, resource_name(h->ar->res));
    atomic_fetch_add(&h->ar->ctr.terminated, 1);
    h->ending = true;
    return true;
}

/*
 * Batch arrays (HANDLERS_BATCH events, ~1.8 KB) are held only while a watch has events in
 * hand, so an idle watch costs none; a watch woken for one event mallocs one and frees it.
 * No spare is kept per thread to save that pair: with one, and so no malloc/free pair at a
 * new watch's first wake-up, glibc carved the long-lived allocations of new watches out of
 * the holes their LISTs' reply blocks had left (malloc_trim then found ~4,000 holes instead
 * of ~60 and left their edge pages resident), and memory per idle watch rose from 6.9 to
 * 8.6-10.8 KB (5,000 watches on 100 1 KiB pods; bench/README, "Memory per idle watch").
 */
static struct ring_event *batch_take(void)
{
    return xmalloc(HANDLERS_BATCH * sizeof(struct ring_event));
}

static void batch_give(struct ring_event *b)
{
    free(b);
}

static ssize_t watch_fill(struct hreq *h, char *buf, size_t max, int64_t now)
{
    size_t n = 0;
    bool drained = false; /* the last batch taken was short: it emptied the history */

    if (h->over) {
        n = drain_over(h, buf, max);
        if (h->over || n > 0) {
            return (ssize_t)n;
        }
    }
    if (h->ending) {
        return HTTP_STREAM_END;
    }
    if (now >= h->deadline_ms) {
        h->ending = true;
        return HTTP_STREAM_END;
    }
    for (;;) {
        if (h->initial) {
            /* one O(log n) seek per call, then in key order within the namespace */
            struct store_iter it;
            const struct blob *b;
            int64_t oldest;

            /* the live events wait meanwhile: one that waited too long ends the watch here,
             * as kube-apiserver ends a watcher whose input fills during its initial events */
            if (h->opts->watch_max_lag_ms > 0 &&
                resource_watch_oldest_ms(h->ar->res, &h->w, &oldest) &&
                watch_lagging(h, oldest, now)) {
                return n > 0 ? (ssize_t)n : HTTP_STREAM_END;
            }
            b = scope_start(h, h->initial, h->init_after, &it);
            for (; b != NULL && in_scope_key(h, b); b = snapshot_next(&it)) {
                if (scope_match(h, b) &&
                    emit_object(h, buf, max, &n, "ADDED", b, NULL) == EMIT_FULL) {
                    return (ssize_t)n;
                }
                h->init_after = b->key;
                if (h->over) {
                    return (ssize_t)n;
                }
            }
            snapshot_unref(h->initial);
            h->initial = NULL;
            h->live_ms = now;
        }
        if (h->end_bookmark) {
            if (emit_bookmark(h, buf, max, &n, h->init_rv, true) == EMIT_FULL) {
                return (ssize_t)n;
            }
            h->end_bookmark = false;
            if (h->init_rv > h->last_rv) {
                h->last_rv = h->init_rv;
            }
            if (h->over) {
                return (ssize_t)n;
            }
        }
        while (h->pend_i < h->pend_n) {
            if (watch_lagging(h, h->pend[h->pend_i].t_ms, now)) {
                return n > 0 ? (ssize_t)n : HTTP_STREAM_END;
            }
            if (emit_event(h, buf, max, &n, &h->pend[h->pend_i]) == EMIT_FULL) {
                return (ssize_t)n;
            }
            h->pend_i++;
            if (h->over) {
                return (ssize_t)n;
            }
        }
        h->pend_i = h->pend_n = 0;
        uint64_t bm_rv = 0;
        /* a bookmark waits until the events appended before it were taken: its rv is read
         * under the lock that says nothing is pending, so it never overtakes an event */
        if (h->next_bm_ms && now >= h->next_bm_ms &&
            resource_watch_idle_rv(h->ar->res, &h->w, &bm_rv)) {
            if (bm_rv > h->last_rv && bm_rv > h->watermark) {
                if (emit_bookmark(h, buf, max, &n, bm_rv, false) == EMIT_FULL) {
                    return (ssize_t)n;
                }
                h->last_rv = bm_rv;
            }
            schedule_bookmark(h, now);
            if (h->over) {
                return (ssize_t)n;
            }
        }
        /* with bytes in hand this call will not suspend: take without arming the suspended
         * flag, or a writer could resume (wake) a connection that is not suspended. The
         * events are lent until the next take or the detach (no reference per blob). */
        if (n > 0 && drained) {
            return (ssize_t)n; /* rather than lock again to find nothing: the next call looks */
        }
        if (!h->pend) {
            h->pend = batch_take();
        }
        ssize_t got = n > 0 ? resource_watch_take(h->ar->res, &h->w, h->pend, HANDLERS_BATCH)
                            : resource_watch_next(h->ar->res, &h->w, h->pend, HANDLERS_BATCH);
        if (got > 0) {
            h->pend_n = (size_t)got;
            drained = got < HANDLERS_BATCH; /* HANDLERS_BATCH <= RING_SEG */
            continue;
        }
        if (got == 0 && n > 0) {
            return (ssize_t)n; /* MHD calls again once this is sent; we suspend then */
        }
        batch_give(h->pend); /* an idle watch holds no batch array */
        h->pend = NULL;
        if (got < 0) {
            h->ending = true;
            return n > 0 ? (ssize_t)n : HTTP_STREAM_END;
        }
        http_stream_suspend(h->req);
        watch_quiet(h, now);
        return 0;
    }
}

static ssize_t watch_read(void *ctx, char *buf, size_t max)
{
    struct hreq *h = ctx;
    int64_t now = clock_mono_ms();
    ssize_t got;

    if (buf != h->wbuf) { /* a new buffer (the first call): assume every page was touched */
        h->wbuf = buf;
        h->wbuf_dirty = max;
        h->last_data_ms = now;
    }
    got = watch_fill(h, buf, max, now);
    if (h->frames > 0) { /* one shared-counter update per call, not per frame */
        atomic_fetch_add(&h->ar->ctr.frames, h->frames);
        h->frames = 0;
    }
    if (got > 0) {
        h->last_data_ms = now;
        if ((size_t)got > h->wbuf_dirty) {
            h->wbuf_dirty = (size_t)got;
        }
    }
    return got;
}

/* A watch answered 200 whose stream is a single ERROR event (410 too old, 504 too large). */
static ssize_t error_stream_read(void *ctx, char *buf, size_t max)
{
    struct hreq *h = ctx;

    if (h->frames > 0) {
        atomic_fetch_add(&h->ar->ctr.frames, h->frames);
        h->frames = 0;
    }
    if (h->over) {
        return (ssize_t)drain_over(h, buf, max);
    }
    return HTTP_STREAM_END;
}

static void reply_watch_error(struct hreq *h, const struct kstatus *st)
{
    char tmp[16];
    size_t n = 0;

    /* stage the whole frame in the overflow buffer (max 0 forces staging) */
    (void)emit_status(h, tmp, 0, &n, st);
    h->phase = PH_DONE;
    h->ending = true;
    http_reply_stream(h->req, 200, "application/json", error_stream_read, h);
}

static void start_stream(struct hreq *h)
{
    int64_t now = clock_mono_ms();

    h->phase = PH_STREAM;
    h->live_ms = now;
    h->counted_open = true;
    atomic_fetch_add(&h->ar->ctr.watches_open, 1);
    schedule_bookmark(h, now);
    http_req_set_stall_timeout(h->req, (unsigned)opt_or(h->opts->watch_stall_s, 10));
    http_req_set_send_buffer(h->req, HANDLERS_WATCH_SNDBUF);
    http_reply_stream(h->req, 200, "application/json", watch_read, h);
}

static void serve_watch(struct hreq *h, const struct k8s_list_opts *lo)
{
    const struct handlers_opts *o = h->opts;
    struct resource *res = h->ar->res;
    bool rv_unset = !lo->has_rv || lo->rv_str[0] == '\0';
    bool rv_zero = !rv_unset && lo->rv == 0;
    int64_t now = clock_mono_ms();
    uint64_t boundary = 0, rv = 0;
    int rc;

    if (h->phase == PH_NEW) {
        int64_t t = lo->timeout_seconds;
        if (t < 0) {
            t = 0; /* get.go: context.WithTimeout with a negative timeout: ends at once */
        } else if (t == 0) {
            int64_t min = opt_or(o->min_request_timeout_s, HANDLERS_MIN_TIMEOUT_DEFAULT_S);
            t = min + (int64_t)((uint64_t)rand() % (uint64_t)min);
        }
        h->deadline_ms = now + t * 1000;
        h->bookmarks = lo->allow_bookmarks;
    }
    if (!resource_is_ready(res, NULL)) {
        h->phase = PH_DONE;
        reply_not_ready(h);
        return;
    }
    if (reply_bad_table_options(h)) {
        return; /* serveWatchHandler's optionsForTransform, before the first event */
    }
    if (lo->send_initial_events == 1 && !rv_unset && !rv_zero && lo->rv > resource_rv(res)) {
        if (h->phase != PH_WAIT_FRESH) {
            start_fresh_wait(h, lo->rv,
                             opt_or(o->too_large_wait_ms, HANDLERS_TOO_LARGE_DEFAULT_MS));
        }
        rc = wait_fresh(h);
        if (rc == 0) {
            return;
        }
        if (rc < 0) {
            struct kstatus st;
            kstatus_too_large_rv(&st, lo->rv, resource_rv(res));
            atomic_fetch_add(&h->ar->ctr.too_large, 1);
            atomic_fetch_add(&h->ar->ctr.watches, 1);
            reply_watch_error(h, &st);
            return;
        }
    }
    memset(&h->w, 0, sizeof(h->w));
    h->w.wake = hreq_wake;
    h->w.wake_ctx = h;
    h->w.kind = WATCHER_STREAM;
    h->w.ns = h->ns[0] ? h->ns : NULL;
    /* pods watches with fieldSelector spec.nodeName=X wait in the X dispatch bucket, so an
     * event visits only its node's watchers (SEMANTICS 3.6) */
    for (size_t i = 0; i < selector_count(h->fsel); i++) {
        if (!selector_negated(h->fsel, i) &&
            strcmp(selector_field(h->fsel, i), "spec.nodeName") == 0) {
            h->w.trigger = selector_value(h->fsel, i);
        }
    }
    atomic_fetch_add(&h->ar->ctr.watches, 1);

    if (lo->send_initial_events == 1 || (lo->send_initial_events == -1 && (rv_unset || rv_zero))) {
        rc = resource_watch_now(res, &h->w, &h->initial, &rv);
        if (rc != 0) {
            h->phase = PH_DONE;
            reply_not_ready(h);
            return;
        }
        h->init_rv = rv;
        h->watermark = rv;
        h->last_rv = 0;
        h->end_bookmark = lo->send_initial_events == 1 && lo->allow_bookmarks;
        start_stream(h);
        return;
    }
    if (rv_unset || rv_zero) { /* sendInitialEvents=false: from now, no initial state */
        rc = resource_watch_now(res, &h->w, NULL, &rv);
        if (rc != 0) {
            h->phase = PH_DONE;
            reply_not_ready(h);
            return;
        }
        h->watermark = rv;
        h->last_rv = rv;
        start_stream(h);
        return;
    }
    rc = resource_watch_from(res, &h->w, lo->rv, &boundary);
    if (rc == -ESTALE) {
        struct kstatus st;
        kstatus_too_old(&st, lo->rv, boundary);
        atomic_fetch_add(&h->ar->ctr.too_old, 1);
        reply_watch_error(h, &st);
        return;
    }
    if (rc != 0) {
        h->phase = PH_DONE;
        reply_not_ready(h);
        return;
    }
    h->watermark = lo->rv;
    h->last_rv = lo->rv;
    start_stream(h);
}

/* ---- entry points ---------------------------------------------------------------------- */

struct fields_hook {
    const struct apires *ar;
    bool forward_unknown; /* the proxy: upstream gives the exact answer for labels we lack */
    const char *name;     /* the name of a legacy /watch/.../NAME path, else NULL */
};

/* fields.Selector.RequiresExactMatch("metadata.name") == name: the first non-negated
 * metadata.name term decides. */
static bool fields_select_name(const struct selector *fields, const char *name)
{
    for (size_t i = 0; i < selector_count(fields); i++) {
        if (!selector_negated(fields, i) &&
            strcmp(selector_field(fields, i), "metadata.name") == 0) {
            return strcmp(selector_value(fields, i), name) == 0;
        }
    }
    return false;
}

/* Step 4 of the apiserver's order (field label conversion), between validation and storage,
 * then ListResource's check of a named watch's field selector against its name. */
static int check_fields_hook(void *ctx, const struct selector *fields, struct kstatus *st)
{
    const struct fields_hook *fh = ctx;

    if (handlers_check_fields(fh->ar, fields, st) != 0) {
        return fh->forward_unknown ? -EXDEV : -EINVAL;
    }
    if (fh->name && fields && !selector_is_empty(fields) && !fields_select_name(fields, fh->name)) {
        kstatus_set(st, 400, "BadRequest",
                    "fieldSelector metadata.name doesn't match requested name");
        return -EINVAL;
    }
    return 0;
}

void handlers_serve(struct http_req *req, struct apires *ar, const struct k8s_path *p,
                    const struct handlers_opts *opts)
{
    struct hreq *h = http_req_state(req);
    struct k8s_list_opts lo;
    struct kstatus st;
    const struct k8s_query_kv *q;
    size_t nq;
    char err[512];

    struct fields_hook fh = {ar, !opts->authoritative && opts->forward,
                             p->legacy_watch && p->name[0] ? p->name : NULL};
    struct neg neg;
    bool can_forward = !opts->authoritative && opts->forward;
    /* installer.go routes only /watch/.../NAME to ListResource; GET .../NAME is GetResource,
     * which reads resourceVersion alone: ?watch= and the other list options do not apply. */
    bool get_named = p->name[0] && !p->legacy_watch;
    int prc;

    /* get.go negotiates before it decodes any option. The proxy hands what it cannot encode
     * (protobuf, YAML, a Table for a kind it has no printer for, such as a custom resource
     * whose CRD names additionalPrinterColumns) to the upstream, which can. */
    prc = neg_compute(req, ar, &neg);
    if (can_forward && (prc != 0 || (neg.as == NEG_AS_TABLE && neg.table_default))) {
        opts->forward(opts->app, req);
        return;
    }
    if (prc != 0) {
        if (h) {
            h->phase = PH_DONE;
        }
        reply_not_acceptable(req, &neg);
        return;
    }
    if (h) {
        h->neg = neg;
    }
    q = http_req_query(req, &nq);
    prc = k8s_list_opts_parse_ex(q, nq, p->legacy_watch, check_fields_hook, &fh, &lo, &st);
    if (prc == -EXDEV) {
        opts->forward(opts->app, req);
        return;
    }
    if (get_named) {
        lo.watch = false;
    }
    if (prc != 0) {
        /* A GET by name only reads resourceVersion: other list options do not apply. */
        if (!get_named || st.code == 500) {
            reply_status(req, &neg, &st);
            return;
        }
        if (st.code == 400 && strncmp(st.message, "invalid resource version: ", 26) == 0) {
            /* GET reports a bad rv like WATCH: 500 without reason and without the prefix */
            memmove(st.message, st.message + 26, strlen(st.message + 26) + 1);
            st.code = 500;
            st.reason = NULL;
            reply_status(req, &neg, &st);
            return;
        }
    }
    if (!h) {
        h = hreq_new(req, ar, opts, p);
        h->neg = neg;
        http_req_set_state(req, h, hreq_free);
        if (lo.label_selector && lo.label_selector[0]) {
            h->lsel = selector_parse_labels(lo.label_selector, err, sizeof(err));
            if (!h->lsel) {
                kstatus_set(&st, 400, "BadRequest", "%s", err);
                reply_status(req, &neg, &st);
                return;
            }
        }
        if (lo.field_selector && lo.field_selector[0]) {
            h->fsel = selector_parse_fields(lo.field_selector, err, sizeof(err));
            if (!h->fsel) {
                kstatus_set(&st, 400, "BadRequest", "%s", err);
                reply_status(req, &neg, &st);
                return;
            }
        }
    }
    if (!opts->authoritative && opts->forward && !lo.watch &&
        (!lo.has_rv || lo.rv_str[0] == '\0') && !(lo.continue_tok && lo.continue_tok[0])) {
        opts->forward(opts->app, req); /* consistent reads go upstream, ready or not */
        return;
    }
    if (!resource_is_ready(ar->res, NULL) && !lo.watch) {
        /* SEMANTICS 3.5: a LIST with a limit and no selector, and GETs, go upstream */
        bool fwd = opts->forward &&
                   (p->name[0] || (lo.limit > 0 && !lo.label_selector && !lo.field_selector));
        if (fwd) {
            opts->forward(opts->app, req);
        } else {
            h->phase = PH_DONE;
            reply_not_ready(h);
        }
        return;
    }
    if (lo.watch) {
        serve_watch(h, &lo);
    } else if (p->name[0]) {
        serve_get(h, &lo);
    } else {
        serve_list(h, &lo);
    }
}

static bool peer_dead(struct watcher *w, void *ctx)
{
    struct hreq *h = (struct hreq *)((char *)w - offsetof(struct hreq, w));
    char c;
    ssize_t r;

    if (h->fd < 0) {
        return false;
    }
    r = recv(h->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r == 0 || (r == -1 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        h->peer_gone = true;
        return true;
    }
    return false;
}

void handlers_tick(struct apires *ar, int64_t now_ms)
{
    (void)resource_tick(ar->res, now_ms, peer_dead, NULL);
}
