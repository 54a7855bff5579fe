/*
 * kube_json.c - the JSON kwp reads and writes byte-exactly like kube-apiserver (see kube_json.h).
 *
 * Four independent parts:
 *  - a writer (struct wbuf, snprintf semantics) with Go encoding/json string escaping, used for
 *    metav1.Status bodies and continue tokens;
 *  - a strict byte scanner (struct scan) that validates JSON and yields the raw spans of the
 *    members of one object without building a tree; it is the only code that walks untrusted
 *    bytes on the data path, so every read is bounds-checked and nesting is capped at
 *    KUBE_JSON_MAX_DEPTH;
 *  - kube_meta_parse, which pulls metadata out with cJSON (tree freed before return) and
 *    locates the resourceVersion bytes with the scanner;
 *  - continue tokens: base64url + a re-implementation of Go's JSON scanner and of
 *    json.Unmarshal into storage.continueToken, so every error text matches DecodeContinue.
 * Everything is a pure function of its arguments: any thread, no locks, no globals.
 */
#include "proxy/kube_json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <cJSON.h>

#include "cache/bug.h"

static const char hexdig[] = "0123456789abcdef";

/* ---- UTF-8 ----------------------------------------------------------------------------- */

/*
 * Decodes one UTF-8 sequence like Go's utf8.DecodeRune: returns its length (1-4) and the rune,
 * or 0 when p[0] does not start a valid sequence (overlong, surrogate, > U+10FFFF, truncated);
 * Go then consumes exactly one byte as RuneError.
 */
static size_t utf8_next(const unsigned char *p, size_t avail, uint32_t *r)
{
    unsigned char c = p[0];
    unsigned char lo = 0x80;
    unsigned char hi = 0xBF;
    size_t need;
    uint32_t v;

    if (c < 0x80) {
        *r = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        need = 2;
        v = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        v = c & 0x0F;
        lo = c == 0xE0 ? 0xA0 : 0x80; /* no overlongs */
        hi = c == 0xED ? 0x9F : 0xBF; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        v = c & 0x07;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF; /* <= U+10FFFF */
    } else {
        return 0;
    }
    if (avail < need || p[1] < lo || p[1] > hi) {
        return 0;
    }
    v = (v << 6) | (p[1] & 0x3F);
    for (size_t i = 2; i < need; i++) {
        if ((p[i] & 0xC0) != 0x80) {
            return 0;
        }
        v = (v << 6) | (p[i] & 0x3F);
    }
    *r = v;
    return need;
}

/* Encodes <r> (a valid scalar value) as UTF-8 into out[0..4); returns the length. */
static size_t utf8_put(uint32_t r, char *out)
{
    if (r < 0x80) {
        out[0] = (char)r;
        return 1;
    }
    if (r < 0x800) {
        out[0] = (char)(0xC0 | (r >> 6));
        out[1] = (char)(0x80 | (r & 0x3F));
        return 2;
    }
    if (r < 0x10000) {
        out[0] = (char)(0xE0 | (r >> 12));
        out[1] = (char)(0x80 | ((r >> 6) & 0x3F));
        out[2] = (char)(0x80 | (r & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (r >> 18));
    out[1] = (char)(0x80 | ((r >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((r >> 6) & 0x3F));
    out[3] = (char)(0x80 | (r & 0x3F));
    return 4;
}

/* ---- writer ---------------------------------------------------------------------------- */

/* snprintf-style sink: <len> counts every byte asked for, at most cap-1 are stored. */
struct wbuf {
    char *buf;
    size_t cap;
    size_t len;
};

static void wb_put(struct wbuf *w, const char *s, size_t n)
{
    if (w->cap > 0 && w->len < w->cap - 1) {
        size_t room = w->cap - 1 - w->len;

        memcpy(w->buf + w->len, s, n < room ? n : room);
    }
    w->len += n;
}

static void wb_str(struct wbuf *w, const char *s)
{
    wb_put(w, s, strlen(s));
}

static void wb_fmt(struct wbuf *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void wb_fmt(struct wbuf *w, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    BUG_ON(n < 0 || (size_t)n >= sizeof(tmp)); /* only used for numbers */
    wb_put(w, tmp, (size_t)n);
}

/* NUL-terminates what was stored and returns the full length. */
static size_t wb_finish(struct wbuf *w)
{
    if (w->cap > 0) {
        w->buf[w->len < w->cap - 1 ? w->len : w->cap - 1] = '\0';
    }
    return w->len;
}

/*
 * The inside of a JSON string as Go's encoding/json (escapeHTML=true) writes it. Go >= 1.22
 * writes \b and \f as short escapes (kube-apiserver 1.36 is built with a newer Go); other
 * controls are \u00xx with lower-case hex; DEL and '/' stay raw.
 */
static void wb_json_body(struct wbuf *w, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t start = 0;
    size_t i = 0;

    while (i < n) {
        unsigned char c = u[i];
        char esc[6] = {'\\', 'u', '0', '0', 0, 0};
        uint32_t r = 0;
        size_t sz;

        if (c < 0x80) {
            if (c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&') {
                i++;
                continue;
            }
            wb_put(w, s + start, i - start);
            switch (c) {
            case '"': wb_put(w, "\\\"", 2); break;
            case '\\': wb_put(w, "\\\\", 2); break;
            case '\b': wb_put(w, "\\b", 2); break;
            case '\f': wb_put(w, "\\f", 2); break;
            case '\n': wb_put(w, "\\n", 2); break;
            case '\r': wb_put(w, "\\r", 2); break;
            case '\t': wb_put(w, "\\t", 2); break;
            default:
                esc[4] = hexdig[c >> 4];
                esc[5] = hexdig[c & 0xF];
                wb_put(w, esc, 6);
                break;
            }
            start = ++i;
            continue;
        }
        sz = utf8_next(u + i, n - i, &r);
        if (sz == 0) {
            wb_put(w, s + start, i - start);
            wb_put(w, "\\ufffd", 6);
            start = ++i;
            continue;
        }
        if (r == 0x2028 || r == 0x2029) {
            wb_put(w, s + start, i - start);
            wb_put(w, r == 0x2028 ? "\\u2028" : "\\u2029", 6);
            start = i + sz;
        }
        i += sz;
    }
    wb_put(w, s + start, n - start);
}

static void wb_json_str(struct wbuf *w, const char *s, size_t n)
{
    wb_put(w, "\"", 1);
    wb_json_body(w, s, n);
    wb_put(w, "\"", 1);
}

/*
 * Go's unicode.IsPrint for runes >= U+0080, approximated by the ranges that matter for names
 * in URLs: controls, format characters, separators other than ' ', private use and
 * noncharacters are not printable; unassigned code points count as printable.
 */
static bool rune_is_print(uint32_t r)
{
    static const uint32_t nonprint[][2] = {
        {0x0080, 0x00A0}, {0x00AD, 0x00AD}, {0x0600, 0x0605}, {0x061C, 0x061C},
        {0x06DD, 0x06DD}, {0x070F, 0x070F}, {0x1680, 0x1680}, {0x180E, 0x180E},
        {0x2000, 0x200F}, {0x2028, 0x202F}, {0x205F, 0x206F}, {0x3000, 0x3000},
        {0xE000, 0xF8FF}, {0xFDD0, 0xFDEF}, {0xFEFF, 0xFEFF}, {0xFFF9, 0xFFFB},
        {0xE0000, 0xE007F}, {0xF0000, 0x10FFFF},
    };

    for (size_t i = 0; i < sizeof(nonprint) / sizeof(nonprint[0]); i++) {
        if (r >= nonprint[i][0] && r <= nonprint[i][1]) {
            return false;
        }
    }
    return (r & 0xFFFE) != 0xFFFE;
}

/* Go's strconv.Quote (what fmt's %q prints for a string). */
static void wb_go_quote(struct wbuf *w, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;

    wb_put(w, "\"", 1);
    while (i < n) {
        static const char short_esc[] = "abtnvfr"; /* \a=7 ... \r=13 */
        uint32_t r = 0;
        size_t sz = utf8_next(u + i, n - i, &r);

        if (sz == 0) {
            wb_fmt(w, "\\x%02x", u[i]);
            i++;
            continue;
        }
        if (r == '"' || r == '\\') {
            wb_put(w, "\\", 1);
            wb_put(w, s + i, 1);
        } else if (r >= 7 && r <= 13) {
            char esc[2] = {'\\', short_esc[r - 7]};

            wb_put(w, esc, 2);
        } else if (r < 0x20 || r == 0x7F) {
            wb_fmt(w, "\\x%02x", (unsigned)r);
        } else if (r < 0x80 || rune_is_print(r)) {
            wb_put(w, s + i, sz);
        } else if (r < 0x10000) {
            wb_fmt(w, "\\u%04x", (unsigned)r);
        } else {
            wb_fmt(w, "\\U%08x", (unsigned)r);
        }
        i += sz;
    }
    wb_put(w, "\"", 1);
}

size_t kube_json_quote(const char *s, size_t len, char *buf, size_t cap)
{
    struct wbuf w = {buf, cap, 0};

    wb_json_str(&w, s != NULL ? s : "", s != NULL ? len : 0);
    return wb_finish(&w);
}

size_t kube_json_go_quote(const char *s, size_t len, char *buf, size_t cap)
{
    struct wbuf w = {buf, cap, 0};

    wb_go_quote(&w, s != NULL ? s : "", s != NULL ? len : 0);
    return wb_finish(&w);
}

/* ---- Status bodies --------------------------------------------------------------------- */

void kstatus_set(struct kstatus *st, int code, const char *reason, const char *fmt, ...)
{
    va_list ap;

    memset(st, 0, sizeof(*st));
    st->code = code;
    st->reason = reason;
    va_start(ap, fmt);
    vsnprintf(st->message, sizeof(st->message), fmt, ap);
    va_end(ap);
}

static bool str_set(const char *s)
{
    return s != NULL && s[0] != '\0';
}

/* Appends ,"<key>":<quoted val> (or without the comma for the first member) if val is set. */
static void wb_member_str(struct wbuf *w, bool *first, const char *key, const char *val)
{
    if (!str_set(val)) {
        return;
    }
    wb_str(w, *first ? "\"" : ",\"");
    wb_str(w, key);
    wb_str(w, "\":");
    wb_json_str(w, val, strlen(val));
    *first = false;
}

static void wb_details(struct wbuf *w, const struct kstatus *st)
{
    size_t n_causes = st->n_causes < KSTATUS_MAX_CAUSES ? st->n_causes : KSTATUS_MAX_CAUSES;
    bool first = true;

    wb_str(w, ",\"details\":{");
    wb_member_str(w, &first, "name", st->name);
    wb_member_str(w, &first, "group", st->group);
    wb_member_str(w, &first, "kind", st->kind);
    wb_member_str(w, &first, "uid", st->uid);
    if (n_causes > 0) {
        wb_str(w, first ? "\"causes\":[" : ",\"causes\":[");
        for (size_t i = 0; i < n_causes; i++) {
            bool cfirst = true;

            wb_str(w, i == 0 ? "{" : ",{");
            wb_member_str(w, &cfirst, "reason", st->causes[i].reason);
            wb_member_str(w, &cfirst, "message", st->causes[i].message);
            wb_member_str(w, &cfirst, "field", st->causes[i].field);
            wb_str(w, "}");
        }
        wb_str(w, "]");
        first = false;
    }
    if (st->retry_after != 0) {
        wb_str(w, first ? "" : ",");
        wb_fmt(w, "\"retryAfterSeconds\":%d", st->retry_after);
    }
    wb_str(w, "}");
}

size_t kube_json_status(const struct kstatus *st, char *buf, size_t cap)
{
    struct wbuf w = {buf, cap, 0};
    bool first = true;

    wb_str(&w, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{");
    wb_member_str(&w, &first, "continue", st->continue_tok);
    wb_str(&w, st->code >= 400 ? "},\"status\":\"Failure\"" : "},\"status\":\"Success\"");
    first = false;
    if (st->message[0] != '\0') {
        wb_str(&w, ",\"message\":");
        wb_json_str(&w, st->message, strnlen(st->message, sizeof(st->message)));
    }
    wb_member_str(&w, &first, "reason", st->reason);
    if (st->name != NULL || st->group != NULL || st->kind != NULL || st->uid != NULL ||
        st->n_causes > 0 || st->retry_after != 0) {
        wb_details(&w, st);
    }
    if (st->code != 0) {
        wb_fmt(&w, ",\"code\":%d", st->code);
    }
    wb_str(&w, "}");
    return wb_finish(&w);
}

void kstatus_too_large_rv(struct kstatus *st, uint64_t requested, uint64_t current)
{
    kstatus_set(st, 504, "Timeout", "Timeout: Too large resource version: %" PRIu64
                ", current: %" PRIu64, requested, current);
    st->causes[0].reason = "ResourceVersionTooLarge";
    st->causes[0].message = "Too large resource version";
    st->n_causes = 1;
    st->retry_after = 1;
}

void kstatus_too_old(struct kstatus *st, uint64_t rv, uint64_t boundary)
{
    kstatus_set(st, 410, "Expired", "too old resource version: %" PRIu64 " (%" PRIu64 ")", rv,
                boundary);
}

void kstatus_not_found(struct kstatus *st, const char *group, const char *plural,
                       const char *name)
{
    char quoted[sizeof(st->message)];
    struct wbuf w = {quoted, sizeof(quoted), 0};

    name = name != NULL ? name : "";
    plural = plural != NULL ? plural : "";
    /* apimachinery NewNotFound: fmt.Sprintf("%s %q not found", qualifiedResource, name). */
    wb_go_quote(&w, name, strlen(name));
    wb_finish(&w);
    if (str_set(group)) {
        kstatus_set(st, 404, "NotFound", "%s.%s %s not found", plural, group, quoted);
    } else {
        kstatus_set(st, 404, "NotFound", "%s %s not found", plural, quoted);
    }
    st->name = name;
    st->group = str_set(group) ? group : NULL;
    st->kind = plural;
}

void kstatus_not_ready(struct kstatus *st, double seconds_unready)
{
    /* cacher/util.go calculateRetryAfterForUnreadyCache; fmax/fmin also absorb NaN. */
    double ra = fmin(30.0, fmax(1.0, exp(0.06 * seconds_unready)));

    kstatus_set(st, 429, "TooManyRequests", "storage is (re)initializing");
    st->retry_after = (int)ra;
}

/* ---- strict byte scanner --------------------------------------------------------------- */

/* A cursor over untrusted bytes; p never passes end. */
struct scan {
    const char *p;
    const char *end;
};

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Value of four hex digits at p (already checked with is_hex). */
static uint32_t hex4(const char *p)
{
    uint32_t v = 0;

    for (int i = 0; i < 4; i++) {
        char c = p[i];

        v = v << 4 | (uint32_t)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
}

static void scan_ws(struct scan *s)
{
    while (s->p < s->end && is_ws(*s->p)) {
        s->p++;
    }
}

/* At '"': consumes the string literal; sets *esc when it contains a backslash. */
static int scan_string(struct scan *s, bool *esc)
{
    s->p++;
    while (s->p < s->end) {
        unsigned char c = (unsigned char)*s->p++;

        if (c == '"') {
            return 0;
        }
        if (c < 0x20) {
            return -EPROTO;
        }
        if (c != '\\') {
            continue;
        }
        if (s->p >= s->end) {
            return -EPROTO;
        }
        *esc = true;
        c = (unsigned char)*s->p++;
        if (c == 'u') {
            if (s->end - s->p < 4 || !is_hex(s->p[0]) || !is_hex(s->p[1]) || !is_hex(s->p[2]) ||
                !is_hex(s->p[3])) {
                return -EPROTO;
            }
            s->p += 4;
        } else if (strchr("\"\\/bfnrt", c) == NULL || c == '\0') {
            return -EPROTO;
        }
    }
    return -EPROTO;
}

static void scan_digits(struct scan *s)
{
    while (s->p < s->end && is_digit(*s->p)) {
        s->p++;
    }
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int scan_number(struct scan *s)
{
    if (*s->p == '-') {
        s->p++;
    }
    if (s->p >= s->end || !is_digit(*s->p)) {
        return -EPROTO;
    }
    if (*s->p++ != '0') {
        scan_digits(s);
    }
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if (s->p >= s->end || !is_digit(*s->p)) {
            return -EPROTO;
        }
        scan_digits(s);
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-')) {
            s->p++;
        }
        if (s->p >= s->end || !is_digit(*s->p)) {
            return -EPROTO;
        }
        scan_digits(s);
    }
    return 0;
}

static int scan_literal(struct scan *s, const char *lit)
{
    size_t n = strlen(lit);

    if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0) {
        return -EPROTO;
    }
    s->p += n;
    return 0;
}

static int scan_value(struct scan *s, int depth);

/* At '{' or '[': consumes the container up to its closing bracket. */
static int scan_container(struct scan *s, int depth)
{
    char close = *s->p == '{' ? '}' : ']';
    bool esc = false;
    int rc;

    if (depth > KUBE_JSON_MAX_DEPTH) {
        return -EPROTO;
    }
    s->p++;
    scan_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return 0;
    }
    for (;;) {
        if (close == '}') {
            if (s->p >= s->end || *s->p != '"') {
                return -EPROTO;
            }
            rc = scan_string(s, &esc);
            if (rc != 0) {
                return rc;
            }
            scan_ws(s);
            if (s->p >= s->end || *s->p != ':') {
                return -EPROTO;
            }
            s->p++;
            scan_ws(s);
        }
        rc = scan_value(s, depth);
        if (rc != 0) {
            return rc;
        }
        scan_ws(s);
        if (s->p >= s->end) {
            return -EPROTO;
        }
        if (*s->p == close) {
            s->p++;
            return 0;
        }
        if (*s->p != ',') {
            return -EPROTO;
        }
        s->p++;
        scan_ws(s);
    }
}

/* At the first byte of a value (whitespace already skipped); <depth> = enclosing containers. */
static int scan_value(struct scan *s, int depth)
{
    bool esc = false;

    if (s->p >= s->end) {
        return -EPROTO;
    }
    switch (*s->p) {
    case '{':
    case '[':
        return scan_container(s, depth + 1);
    case '"':
        return scan_string(s, &esc);
    case 't':
        return scan_literal(s, "true");
    case 'f':
        return scan_literal(s, "false");
    case 'n':
        return scan_literal(s, "null");
    default:
        return (*s->p == '-' || is_digit(*s->p)) ? scan_number(s) : -EPROTO;
    }
}

/*
 * Go's unquote of one character of a validated string body at *pp: writes its UTF-8 to out
 * (<= 4 bytes) and advances. Invalid UTF-8 and unpaired surrogates become U+FFFD.
 */
static size_t unquote_next(const char **pp, const char *end, char *out)
{
    const unsigned char *p = (const unsigned char *)*pp;
    uint32_t r = 0xFFFD;
    size_t sz;

    if (*p != '\\') {
        sz = utf8_next(p, (size_t)(end - *pp), &r);
        if (sz == 0) {
            *pp += 1;
            return utf8_put(0xFFFD, out);
        }
        memcpy(out, p, sz);
        *pp += sz;
        return sz;
    }
    if (end - *pp < 2) {
        *pp = end;
        return utf8_put(0xFFFD, out);
    }
    *pp += 2;
    switch (p[1]) {
    case 'b': out[0] = '\b'; return 1;
    case 'f': out[0] = '\f'; return 1;
    case 'n': out[0] = '\n'; return 1;
    case 'r': out[0] = '\r'; return 1;
    case 't': out[0] = '\t'; return 1;
    case 'u': break;
    default: out[0] = (char)p[1]; return 1;
    }
    if (end - *pp < 4 || !is_hex((*pp)[0]) || !is_hex((*pp)[1]) || !is_hex((*pp)[2]) ||
        !is_hex((*pp)[3])) {
        *pp = end;
        return utf8_put(0xFFFD, out);
    }
    r = hex4(*pp);
    *pp += 4;
    if (r >= 0xD800 && r < 0xE000) {
        /* Go: a high surrogate followed by \u-low combines; anything else is U+FFFD. */
        const char *q = *pp;
        uint32_t r2 = 0;

        if (r < 0xDC00 && end - q >= 6 && q[0] == '\\' && q[1] == 'u' && is_hex(q[2]) &&
            is_hex(q[3]) && is_hex(q[4]) && is_hex(q[5])) {
            r2 = hex4(q + 2);
        }
        if (r2 >= 0xDC00 && r2 < 0xE000) {
            r = 0x10000 + ((r - 0xD800) << 10) + (r2 - 0xDC00);
            *pp += 6;
        } else {
            r = 0xFFFD;
        }
    }
    return utf8_put(r, out);
}

/* Whether the raw string body raw[0..n) decodes (Go unquote) to exactly <key>. */
static bool raw_equals(const char *raw, size_t n, bool esc, const char *key)
{
    const char *end = raw + n;
    size_t klen = strlen(key);
    size_t k = 0;

    if (!esc) {
        return n == klen && memcmp(raw, key, n) == 0;
    }
    while (raw < end) {
        char u[4];
        size_t un = unquote_next(&raw, end, u);

        if (k + un > klen || memcmp(key + k, u, un) != 0) {
            return false;
        }
        k += un;
    }
    return k == klen;
}

/* One member of an object, as offsets into the scanned buffer. */
struct member {
    size_t key_off; /* the key's opening quote */
    size_t key_len; /* raw bytes between the quotes */
    bool key_esc;
    size_t val_off;
    size_t val_len;
};

/* Walks the members of one object that spans the whole buffer (surrounding ws allowed). */
struct obj_iter {
    struct scan s;
    const char *base;
    size_t n;
    bool done;
    int rc; /* once done: 0 after the closing brace, or -EPROTO (sticky) */
};

static int obj_iter_begin(struct obj_iter *it, const char *data, size_t len)
{
    if (data == NULL || len == 0 || len > KUBE_JSON_MAX_INPUT) {
        return -EPROTO;
    }
    it->base = data;
    it->s.p = data;
    it->s.end = data + len;
    it->n = 0;
    it->done = false;
    it->rc = 0;
    scan_ws(&it->s);
    if (it->s.p >= it->s.end || *it->s.p != '{') {
        return -EPROTO;
    }
    it->s.p++;
    return 0;
}

/*
 * Advances to the next member: true with it in <m>; false after the closing brace (*rc = 0)
 * or on malformed input (*rc = -EPROTO).
 */
static bool obj_iter_next(struct obj_iter *it, struct member *m, int *rc)
{
    struct scan *s = &it->s;

    if (it->done) {
        *rc = it->rc;
        return false;
    }
    scan_ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        scan_ws(s);
        it->done = true;
        it->rc = s->p == s->end ? 0 : -EPROTO;
        *rc = it->rc;
        return false;
    }
    if (it->n > 0) {
        if (s->p >= s->end || *s->p != ',') {
            goto bad;
        }
        s->p++;
        scan_ws(s);
    }
    if (s->p >= s->end || *s->p != '"') {
        goto bad;
    }
    m->key_off = (size_t)(s->p - it->base);
    m->key_esc = false;
    if (scan_string(s, &m->key_esc) != 0) {
        goto bad;
    }
    m->key_len = (size_t)(s->p - it->base) - m->key_off - 2;
    scan_ws(s);
    if (s->p >= s->end || *s->p != ':') {
        goto bad;
    }
    s->p++;
    scan_ws(s);
    m->val_off = (size_t)(s->p - it->base);
    if (scan_value(s, 1) != 0) {
        goto bad;
    }
    m->val_len = (size_t)(s->p - it->base) - m->val_off;
    it->n++;
    *rc = 0;
    return true;
bad:
    it->done = true;
    it->rc = -EPROTO;
    *rc = it->rc;
    return false;
}

static bool member_is(const struct obj_iter *it, const struct member *m, const char *key)
{
    return raw_equals(it->base + m->key_off + 1, m->key_len, m->key_esc, key);
}

int kube_json_member(const char *data, size_t len, const char *key, size_t *off, size_t *vlen)
{
    struct obj_iter it;
    struct member m;
    bool found = false;
    int rc;

    rc = obj_iter_begin(&it, data, len);
    /* Validate to the end: a repeated key resolves to its last value, as in Go. */
    while (rc == 0 && obj_iter_next(&it, &m, &rc)) {
        if (member_is(&it, &m, key)) {
            *off = m.val_off;
            *vlen = m.val_len;
            found = true;
        }
    }
    if (rc != 0) {
        return rc;
    }
    return found ? 0 : -ENOENT;
}

int kube_json_array_next(const char *arr, size_t len, size_t *pos, size_t *e_off, size_t *e_len)
{
    bool first = *pos == 0;
    struct scan s;
    int rc;

    if (*pos == SIZE_MAX) {
        return 0;
    }
    if (arr == NULL || len == 0 || len > KUBE_JSON_MAX_INPUT || *pos > len) {
        return -EPROTO;
    }
    s.p = arr + *pos;
    s.end = arr + len;
    if (first) {
        scan_ws(&s);
        if (s.p >= s.end || *s.p != '[') {
            return -EPROTO;
        }
        s.p++;
    }
    scan_ws(&s);
    if (s.p < s.end && *s.p == ']') {
        s.p++;
        scan_ws(&s);
        if (s.p != s.end) {
            return -EPROTO;
        }
        *pos = SIZE_MAX;
        return 0;
    }
    /* *pos rests after an element between calls, so only the first element has no comma. */
    if (!first) {
        if (s.p >= s.end || *s.p != ',') {
            return -EPROTO;
        }
        s.p++;
        scan_ws(&s);
    }
    *e_off = (size_t)(s.p - arr);
    rc = scan_value(&s, 1);
    if (rc != 0) {
        return rc;
    }
    *e_len = (size_t)(s.p - arr) - *e_off;
    *pos = (size_t)(s.p - arr);
    return 1;
}

int kube_json_event_parse(const char *line, size_t len, struct kube_event *ev)
{
    static const char *const types[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};
    static const enum watch_type tvals[] = {WATCH_ADDED, WATCH_MODIFIED, WATCH_DELETED,
                                            WATCH_BOOKMARK, WATCH_ERROR};
    struct obj_iter it;
    struct member m;
    int type = -1;
    bool have_obj = false;
    int rc;

    rc = obj_iter_begin(&it, line, len);
    while (rc == 0 && obj_iter_next(&it, &m, &rc)) {
        const char *v = line + m.val_off;

        if (member_is(&it, &m, "type")) {
            type = -1;
            for (size_t i = 0; i < 5 && v[0] == '"'; i++) {
                if (raw_equals(v + 1, m.val_len - 2, memchr(v, '\\', m.val_len) != NULL,
                               types[i])) {
                    type = (int)i;
                }
            }
        } else if (member_is(&it, &m, "object")) {
            have_obj = v[0] == '{';
            ev->obj_off = m.val_off;
            ev->obj_len = m.val_len;
        }
    }
    if (rc != 0 || type < 0 || !have_obj) {
        return -EPROTO;
    }
    ev->type = tvals[type];
    return 0;
}

/* Copies data[from, to) to out at *o. */
static void copy_range(char *out, size_t *o, const char *data, size_t from, size_t to)
{
    if (to > from) {
        memcpy(out + *o, data + from, to - from);
        *o += to - from;
    }
}

char *kube_json_strip_type_meta(const char *data, size_t len, size_t *out_len)
{
    struct obj_iter it;
    struct member m;
    size_t n_members = 0;
    size_t last_kept = SIZE_MAX;  /* index of the last member that stays */
    size_t last_kept_end = 0;     /* offset just after its value */
    size_t last_end = 0;          /* offset just after the last member's value */
    size_t copy_from = 0;
    bool skip_to_next = false;
    char *out;
    size_t o = 0;
    int rc;

    /* Pass 1: validate and learn where the kept members end. */
    rc = obj_iter_begin(&it, data, len);
    while (rc == 0 && obj_iter_next(&it, &m, &rc)) {
        if (!member_is(&it, &m, "kind") && !member_is(&it, &m, "apiVersion")) {
            last_kept = n_members;
            last_kept_end = m.val_off + m.val_len;
        }
        last_end = m.val_off + m.val_len;
        n_members++;
    }
    if (rc != 0) {
        return NULL;
    }

    /*
     * Pass 2: a removed member followed by a kept one is cut from its key to the next key
     * (taking its trailing comma); the removed tail after the last kept member is cut from the
     * end of that member's value, so no dangling comma remains. Other bytes are untouched.
     */
    out = xmalloc(len + 1);
    obj_iter_begin(&it, data, len);
    for (size_t i = 0; obj_iter_next(&it, &m, &rc); i++) {
        if (skip_to_next) {
            copy_from = m.key_off;
            skip_to_next = false;
        }
        if (member_is(&it, &m, "kind") || member_is(&it, &m, "apiVersion")) {
            if (last_kept != SIZE_MAX && i < last_kept) {
                copy_range(out, &o, data, copy_from, m.key_off);
                skip_to_next = true;
            } else {
                copy_range(out, &o, data, copy_from,
                           last_kept == SIZE_MAX ? m.key_off : last_kept_end);
                copy_from = last_end;
                break;
            }
        }
    }
    copy_range(out, &o, data, copy_from, len);
    out[o] = '\0';
    *out_len = o;
    return out;
}

/* ---- object metadata ------------------------------------------------------------------- */

/* Two-pass string arena: with base == NULL it only counts. */
struct arena {
    char *base;
    size_t used;
};

static const char *arena_put(struct arena *a, const char *s, size_t n)
{
    char *dst = a->base != NULL ? a->base + a->used : NULL;

    if (dst != NULL) {
        memcpy(dst, s, n);
        dst[n] = '\0';
    }
    a->used += n + 1;
    return dst;
}

/*
 * The member <key> of object <obj> as Go's decoder picks it: the last of repeated keys
 * (cJSON_GetObjectItemCaseSensitive finds the first). NULL when absent or <obj> is no object.
 */
static const cJSON *member_last(const cJSON *obj, const char *key)
{
    const cJSON *found = NULL;
    const cJSON *c;

    if (!cJSON_IsObject(obj)) {
        return NULL;
    }
    cJSON_ArrayForEach(c, obj)
    {
        if (c->string != NULL && strcmp(c->string, key) == 0) {
            found = c;
        }
    }
    return found;
}

/*
 * cJSON ends a string at an escaped NUL, so a key "metadata\u0000" would read as "metadata" and
 * a resourceVersion "5\u0000" as 5, where Go sees other strings. Returns a copy of data[0..len)
 * in which every \u0000 escape reads \u0001 (caller frees), or NULL when there is none. Both
 * characters are invalid in every Kubernetes name, key and resourceVersion, so the lifted
 * string stays invalid but can no longer alias a valid one. <data> is valid JSON, where a
 * backslash only ever starts an escape, so skipping each escaped character suffices.
 */
static char *lift_nul_escapes(const char *data, size_t len)
{
    const char *p = data;
    const char *end = data + len;
    char *copy = NULL;

    while (p < end) {
        const char *bs = memchr(p, '\\', (size_t)(end - p));

        if (bs == NULL) {
            break;
        }
        if (end - bs >= 6 && memcmp(bs + 1, "u0000", 5) == 0) {
            if (copy == NULL) {
                copy = xmalloc(len);
                memcpy(copy, data, len);
            }
            copy[bs - data + 5] = '1';
        }
        p = bs + 2;
    }
    return copy;
}

/* Follows a dotted path from <root>; NULL when a segment is missing or too long. */
static const cJSON *json_path(const cJSON *root, const char *path)
{
    const cJSON *cur = root;
    char seg[KUBE_META_MAX_PATH];

    while (cur != NULL) {
        const char *dot = strchr(path, '.');
        size_t n = dot != NULL ? (size_t)(dot - path) : strlen(path);

        if (n >= sizeof(seg) || (!cJSON_IsObject(cur) && !cJSON_IsArray(cur))) {
            return NULL;
        }
        memcpy(seg, path, n);
        seg[n] = '\0';
        if (cJSON_IsArray(cur)) { /* a numeric segment indexes an array: status.podIPs.0.ip */
            char *end = NULL;
            long idx = strtol(seg, &end, 10);
            if (n == 0 || *end != '\0' || idx < 0 || idx > 65535) {
                return NULL;
            }
            cur = cJSON_GetArrayItem(cur, (int)idx);
        } else {
            cur = member_last(cur, seg);
        }
        if (dot == NULL) {
            return cur;
        }
        path = dot + 1;
    }
    return NULL;
}

/* Text of a selectable field value: strings as-is, booleans, exact integers; NULL = omit. */
static const char *field_text(const cJSON *v, char *num, size_t num_cap)
{
    if (cJSON_IsString(v)) {
        return v->valuestring;
    }
    if (cJSON_IsTrue(v)) {
        return "true";
    }
    if (cJSON_IsFalse(v)) {
        return "false";
    }
    if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble == trunc(v->valuedouble) &&
        fabs(v->valuedouble) < 9.2e18) {
        snprintf(num, num_cap, "%" PRId64, (int64_t)v->valuedouble);
        return num;
    }
    return NULL;
}

/*
 * Orders labels by key, then by insertion order, so the last duplicate can win (Go's map
 * decoding). The arena is filled in insertion order, so key addresses encode it and survive
 * qsort moving the pairs around.
 */
static int kv_pos_cmp(const void *a, const void *b)
{
    const struct blob_kv *x = a;
    const struct blob_kv *y = b;
    int c = strcmp(x->key, y->key);

    if (c != 0) {
        return c;
    }
    return x->key < y->key ? -1 : (x->key > y->key);
}

/* Sorts labels and keeps the last of each run of equal keys; returns the new count. */
static size_t labels_dedup(struct blob_kv *kv, size_t n)
{
    size_t o = 0;

    qsort(kv, n, sizeof(*kv), kv_pos_cmp);
    for (size_t i = 0; i < n; i++) {
        if (o > 0 && strcmp(kv[o - 1].key, kv[i].key) == 0) {
            kv[o - 1] = kv[i];
        } else {
            kv[o++] = kv[i];
        }
    }
    return o;
}

/*
 * Fills <out> from the parsed tree. Runs twice: first with out->arena == NULL to size the
 * arena and count pairs, then for real.
 */
static void meta_collect(const cJSON *md, const cJSON *root, const char *const *field_paths,
                         struct arena *a, struct kube_meta *out)
{
    const cJSON *name = member_last(md, "name");
    const cJSON *ns = member_last(md, "namespace");
    const cJSON *rv = member_last(md, "resourceVersion");
    const cJSON *labels = member_last(md, "labels");
    const cJSON *lab_obj = cJSON_IsObject(labels) ? labels : NULL;
    const cJSON *l;
    size_t n = 0;

    out->meta.name = arena_put(a, name->valuestring, strlen(name->valuestring));
    out->meta.ns = cJSON_IsString(ns) ? arena_put(a, ns->valuestring, strlen(ns->valuestring))
                                      : NULL;
    out->meta.rv_str = cJSON_IsString(rv)
                           ? arena_put(a, rv->valuestring, strlen(rv->valuestring))
                           : arena_put(a, "", 0);
    cJSON_ArrayForEach(l, lab_obj)
    {
        if (cJSON_IsString(l) && l->string != NULL) {
            const char *k = arena_put(a, l->string, strlen(l->string));
            const char *v = arena_put(a, l->valuestring, strlen(l->valuestring));

            if (out->kv != NULL) {
                out->kv[n] = (struct blob_kv){k, v};
            }
            n++;
        }
    }
    out->meta.n_labels = n;
    for (size_t i = 0; field_paths != NULL && field_paths[i] != NULL; i++) {
        char num[32];
        const char *spec = field_paths[i];
        const char *colon = strchr(spec, ':');
        size_t klen = colon ? (size_t)(colon - spec) : strlen(spec);
        const char *alt = colon ? colon + 1 : spec;
        const char *text = NULL;
        size_t tlen = 0;

        /* "key:path1|path2|=default": the first path present wins, else the literal */
        while (text == NULL && *alt != '\0') {
            const char *bar = strchr(alt, '|');
            size_t alen = bar ? (size_t)(bar - alt) : strlen(alt);
            char path[KUBE_META_MAX_PATH];
            if (alt[0] == '=') {
                text = alt + 1;
                tlen = alen - 1;
            } else if (alen < sizeof(path)) {
                memcpy(path, alt, alen);
                path[alen] = '\0';
                text = field_text(json_path(root, path), num, sizeof(num));
                tlen = text != NULL ? strlen(text) : 0;
            }
            alt += alen + (bar ? 1 : 0);
        }
        if (text != NULL) {
            const char *k = arena_put(a, spec, klen);
            const char *v = arena_put(a, text, tlen);

            if (out->kv != NULL) {
                out->kv[n] = (struct blob_kv){k, v};
            }
            n++;
        }
    }
    out->meta.n_fields = n - out->meta.n_labels;
}

/* The byte span of metadata.resourceVersion's content, or -ENOENT (absent / escaped). */
static int rv_span(const char *data, size_t len, size_t *off, size_t *rlen)
{
    size_t md_off, md_len, v_off, v_len;

    if (kube_json_member(data, len, "metadata", &md_off, &md_len) != 0 ||
        kube_json_member(data + md_off, md_len, "resourceVersion", &v_off, &v_len) != 0) {
        return -ENOENT;
    }
    if (v_len < 2 || data[md_off + v_off] != '"' ||
        memchr(data + md_off + v_off, '\\', v_len) != NULL) {
        return -ENOENT;
    }
    *off = md_off + v_off + 1;
    *rlen = v_len - 2;
    return 0;
}

int kube_meta_parse(const char *data, size_t len, const char *const *field_paths,
                    struct kube_meta *out)
{
    struct scan s = {data, data + len};
    struct arena a = {NULL, 0};
    const cJSON *md, *name, *ns, *rv;
    const char *end = NULL;
    const char *base;
    char *lifted = NULL;
    cJSON *root = NULL;
    size_t off = 0, rlen = 0, n_labels;
    int rc = -EPROTO;

    memset(out, 0, sizeof(*out));
    if (data == NULL || len == 0 || len > KUBE_JSON_MAX_INPUT) {
        return -EPROTO;
    }
    /* Strict validation with our depth cap before cJSON recurses over it. */
    scan_ws(&s);
    if (s.p >= s.end || *s.p != '{' || scan_value(&s, 0) != 0) {
        return -EPROTO;
    }
    scan_ws(&s);
    if (s.p != s.end) {
        return -EPROTO;
    }
    lifted = lift_nul_escapes(data, len);
    base = lifted != NULL ? lifted : data;
    root = cJSON_ParseWithLengthOpts(base, len, &end, 0);
    if (root == NULL || end == NULL || end < base || end > base + len) {
        goto out;
    }
    s.p = data + (end - base);
    scan_ws(&s);
    md = member_last(root, "metadata");
    name = member_last(md, "name");
    ns = member_last(md, "namespace");
    rv = member_last(md, "resourceVersion");
    if (s.p != s.end || !cJSON_IsObject(md) || !cJSON_IsString(name) ||
        name->valuestring[0] == '\0' || !(ns == NULL || cJSON_IsNull(ns) || cJSON_IsString(ns)) ||
        !(rv == NULL || cJSON_IsNull(rv) || cJSON_IsString(rv))) {
        goto out;
    }

    meta_collect(md, root, field_paths, &a, out);
    out->arena = xmalloc(a.used);
    out->kv = xcalloc(out->meta.n_labels + out->meta.n_fields, sizeof(*out->kv));
    a = (struct arena){out->arena, 0};
    meta_collect(md, root, field_paths, &a, out);

    n_labels = labels_dedup(out->kv, out->meta.n_labels);
    memmove(out->kv + n_labels, out->kv + out->meta.n_labels,
            out->meta.n_fields * sizeof(*out->kv));
    out->meta.n_labels = n_labels;
    out->meta.labels = out->kv;
    out->meta.fields = out->kv + n_labels;
    /* The span is only trusted when its bytes are the value cJSON saw (no escapes; a
     * repeated key is the last copy on both sides). */
    if (rv_span(data, len, &off, &rlen) == 0 && rlen == strlen(out->meta.rv_str) &&
        memcmp(data + off, out->meta.rv_str, rlen) == 0 && rlen > 0) {
        out->meta.rv_off = off;
        out->meta.rv_len = rlen;
    }
    rc = 0;
out:
    cJSON_Delete(root);
    free(lifted);
    return rc;
}

void kube_meta_fini(struct kube_meta *m)
{
    if (m == NULL) {
        return;
    }
    free(m->kv);
    free(m->arena);
    memset(m, 0, sizeof(*m));
}

struct blob *kube_json_blob(const char *data, size_t len, const char *const *field_paths)
{
    struct kube_meta m;
    struct blob *b;

    if (kube_meta_parse(data, len, field_paths, &m) != 0) {
        return NULL;
    }
    b = blob_new(data, len, &m.meta);
    kube_meta_fini(&m);
    return b;
}

/* ---- continue tokens ------------------------------------------------------------------- */

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static int b64url_val(unsigned char c)
{
    const char *p = c != '\0' ? strchr(b64url, c) : NULL;

    return p != NULL ? (int)(p - b64url) : -1;
}

size_t kube_json_continue_encode(int64_t rv, const char *start_key, char *out, size_t cap)
{
    struct wbuf js = {NULL, 0, 0};
    struct wbuf w = {out, cap, 0};
    const unsigned char *u;
    size_t n;

    start_key = start_key != NULL ? start_key : "";
    /* json.Marshal(continueToken{...}) with the key's trailing NUL, then RawURLEncoding. */
    for (int pass = 0; pass < 2; pass++) {
        js.len = 0;
        wb_str(&js, "{\"v\":\"meta.k8s.io/v1\",\"rv\":");
        wb_fmt(&js, "%" PRId64, rv);
        wb_str(&js, ",\"start\":\"");
        wb_json_body(&js, start_key, strlen(start_key));
        wb_str(&js, "\\u0000\"}");
        if (pass == 0) {
            js.cap = js.len + 1;
            js.buf = xmalloc(js.cap);
        }
    }
    u = (const unsigned char *)js.buf;
    n = js.len;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)u[i] << 16;
        size_t chunk = n - i < 3 ? n - i : 3;
        char q[4];

        v |= chunk > 1 ? (uint32_t)u[i + 1] << 8 : 0;
        v |= chunk > 2 ? u[i + 2] : 0;
        q[0] = b64url[(v >> 18) & 63];
        q[1] = b64url[(v >> 12) & 63];
        q[2] = b64url[(v >> 6) & 63];
        q[3] = b64url[v & 63];
        wb_put(&w, q, chunk + 1);
    }
    free(js.buf);
    return wb_finish(&w);
}

/*
 * base64.RawURLEncoding.DecodeString, including Go's quirks: '\r' and '\n' are skipped, a
 * final group of 2 or 3 symbols is accepted without checking its unused bits, and errors name
 * the byte Go's decodeQuantum names. Returns the decoded length, or -1 with *bad set.
 */
static ssize_t b64url_decode(const char *src, size_t n, unsigned char *dst, size_t *bad)
{
    size_t si = 0;
    size_t o = 0;

    while (si < n) {
        uint32_t dbuf[4] = {0, 0, 0, 0};
        int dlen = 4;
        uint32_t val;

        for (int j = 0; j < 4; j++) {
            unsigned char in;
            int v;

            if (si == n) {
                if (j == 0) {
                    return (ssize_t)o;
                }
                if (j == 1) {
                    *bad = si - 1;
                    return -1;
                }
                dlen = j;
                break;
            }
            in = (unsigned char)src[si++];
            v = b64url_val(in);
            if (v >= 0) {
                dbuf[j] = (uint32_t)v;
                continue;
            }
            if (in == '\n' || in == '\r') {
                j--;
                continue;
            }
            *bad = si - 1;
            return -1;
        }
        val = dbuf[0] << 18 | dbuf[1] << 12 | dbuf[2] << 6 | dbuf[3];
        dst[o++] = (unsigned char)(val >> 16);
        if (dlen > 2) {
            dst[o++] = (unsigned char)(val >> 8);
        }
        if (dlen > 3) {
            dst[o++] = (unsigned char)val;
        }
    }
    return (ssize_t)o;
}

/* Go's encoding/json scanner (scanner.go), step for step, for its exact error texts. */
enum gs_state {
    GS_BEGIN_VALUE_OR_EMPTY = 0, GS_BEGIN_VALUE, GS_BEGIN_STRING_OR_EMPTY, GS_BEGIN_STRING,
    GS_END_VALUE, GS_END_TOP, GS_IN_STRING, GS_IN_STRING_ESC, GS_ESC_U, GS_ESC_U1, GS_ESC_U12,
    GS_ESC_U123, GS_NEG, GS_1, GS_0, GS_DOT, GS_DOT0, GS_E, GS_ESIGN, GS_E0, GS_LIT, GS_ERROR
};

enum gs_parse { GS_PARSE_OBJ_KEY = 0, GS_PARSE_OBJ_VALUE, GS_PARSE_ARR_VALUE };

struct gscan {
    enum gs_state step;
    bool end_top;
    const char *lit;       /* GS_LIT: the rest of "true"/"false"/"null" still expected */
    const char *lit_name;  /* which literal, for the error text */
    unsigned char *stack;  /* enum gs_parse per open container */
    size_t depth;
    char err[128];
};

/* scanner.quoteChar: the byte as a one-rune Go string, in single quotes. */
static void go_quote_char(unsigned char c, char *out, size_t cap)
{
    struct wbuf w = {out, cap, 0};
    char u[4];

    if (c == '\'') {
        wb_str(&w, "'\\''");
    } else if (c == '"') {
        wb_str(&w, "'\"'");
    } else {
        /* Go's string(c) turns the byte into the rune U+00XX: bytes >= 0x80 quote as Latin-1. */
        char tmp[16];
        struct wbuf q = {tmp, sizeof(tmp), 0};

        wb_go_quote(&q, u, utf8_put(c, u));
        wb_finish(&q);
        wb_str(&w, "'");
        wb_put(&w, tmp + 1, strlen(tmp) - 2);
        wb_str(&w, "'");
    }
    wb_finish(&w);
}

static void gs_error(struct gscan *g, unsigned char c, const char *context)
{
    char qc[16];

    go_quote_char(c, qc, sizeof(qc));
    snprintf(g->err, sizeof(g->err), "invalid character %s %s", qc, context);
    g->step = GS_ERROR;
}

static void gs_pop(struct gscan *g)
{
    g->depth--;
    if (g->depth == 0) {
        g->step = GS_END_TOP;
        g->end_top = true;
    } else {
        g->step = GS_END_VALUE;
    }
}

static void gs_begin_value(struct gscan *g, unsigned char c)
{
    static const char *const lits[] = {"true", "false", "null"};

    switch (c) {
    case '{':
    case '[':
        /* Go caps depth at 10000; a capped token (KUBE_JSON_CONTINUE_MAX) cannot reach it. */
        g->step = c == '{' ? GS_BEGIN_STRING_OR_EMPTY : GS_BEGIN_VALUE_OR_EMPTY;
        g->stack[g->depth++] = c == '{' ? GS_PARSE_OBJ_KEY : GS_PARSE_ARR_VALUE;
        return;
    case '"': g->step = GS_IN_STRING; return;
    case '-': g->step = GS_NEG; return;
    case '0': g->step = GS_0; return;
    case 't':
    case 'f':
    case 'n':
        g->lit_name = lits[c == 't' ? 0 : c == 'f' ? 1 : 2];
        g->lit = g->lit_name + 1;
        g->step = GS_LIT;
        return;
    default:
        if (c >= '1' && c <= '9') {
            g->step = GS_1;
            return;
        }
        gs_error(g, c, "looking for beginning of value");
    }
}

/* One scanner step; states that "return stateX(s, c)" in Go loop with the same byte. */
static void gs_step(struct gscan *g, unsigned char c)
{
    char ctx[64];

    for (;;) {
        switch (g->step) {
        case GS_BEGIN_VALUE_OR_EMPTY:
            if (is_ws((char)c)) {
                return;
            }
            g->step = c == ']' ? GS_END_VALUE : GS_BEGIN_VALUE;
            continue;
        case GS_BEGIN_VALUE:
            if (!is_ws((char)c)) {
                gs_begin_value(g, c);
            }
            return;
        case GS_BEGIN_STRING_OR_EMPTY:
            if (is_ws((char)c)) {
                return;
            }
            if (c == '}') {
                g->stack[g->depth - 1] = GS_PARSE_OBJ_VALUE;
                g->step = GS_END_VALUE;
            } else {
                g->step = GS_BEGIN_STRING;
            }
            continue;
        case GS_BEGIN_STRING:
            if (is_ws((char)c)) {
                return;
            }
            if (c == '"') {
                g->step = GS_IN_STRING;
            } else {
                gs_error(g, c, "looking for beginning of object key string");
            }
            return;
        case GS_END_VALUE:
            if (g->depth == 0) {
                g->step = GS_END_TOP;
                g->end_top = true;
                continue;
            }
            if (is_ws((char)c)) {
                return;
            }
            switch (g->stack[g->depth - 1]) {
            case GS_PARSE_OBJ_KEY:
                if (c == ':') {
                    g->stack[g->depth - 1] = GS_PARSE_OBJ_VALUE;
                    g->step = GS_BEGIN_VALUE;
                } else {
                    gs_error(g, c, "after object key");
                }
                return;
            case GS_PARSE_OBJ_VALUE:
                if (c == ',') {
                    g->stack[g->depth - 1] = GS_PARSE_OBJ_KEY;
                    g->step = GS_BEGIN_STRING;
                } else if (c == '}') {
                    gs_pop(g);
                } else {
                    gs_error(g, c, "after object key:value pair");
                }
                return;
            default:
                if (c == ',') {
                    g->step = GS_BEGIN_VALUE;
                } else if (c == ']') {
                    gs_pop(g);
                } else {
                    gs_error(g, c, "after array element");
                }
                return;
            }
        case GS_END_TOP:
            if (!is_ws((char)c)) {
                gs_error(g, c, "after top-level value");
            }
            return;
        case GS_IN_STRING:
            if (c == '"') {
                g->step = GS_END_VALUE;
            } else if (c == '\\') {
                g->step = GS_IN_STRING_ESC;
            } else if (c < 0x20) {
                gs_error(g, c, "in string literal");
            }
            return;
        case GS_IN_STRING_ESC:
            if (c != '\0' && strchr("bfnrt\\/\"", c) != NULL) {
                g->step = GS_IN_STRING;
            } else if (c == 'u') {
                g->step = GS_ESC_U;
            } else {
                gs_error(g, c, "in string escape code");
            }
            return;
        case GS_ESC_U:
        case GS_ESC_U1:
        case GS_ESC_U12:
        case GS_ESC_U123:
            if (is_hex((char)c)) {
                g->step = g->step == GS_ESC_U123 ? GS_IN_STRING : g->step + 1;
            } else {
                gs_error(g, c, "in \\u hexadecimal character escape");
            }
            return;
        case GS_NEG:
            if (c == '0') {
                g->step = GS_0;
            } else if (c >= '1' && c <= '9') {
                g->step = GS_1;
            } else {
                gs_error(g, c, "in numeric literal");
            }
            return;
        case GS_1:
        case GS_DOT0:
        case GS_E0:
            /* Inside the digits of a number: more digits, or the next part, or its end. */
            if (is_digit((char)c)) {
                return;
            }
            if (g->step == GS_1) {
                g->step = GS_0;
                continue;
            }
            if (g->step == GS_DOT0 && (c == 'e' || c == 'E')) {
                g->step = GS_E;
                return;
            }
            g->step = GS_END_VALUE;
            continue;
        case GS_0:
            if (c == '.') {
                g->step = GS_DOT;
                return;
            }
            if (c == 'e' || c == 'E') {
                g->step = GS_E;
                return;
            }
            g->step = GS_END_VALUE;
            continue;
        case GS_DOT:
        case GS_ESIGN:
            /* A digit is required after '.' and after the exponent's sign. */
            if (is_digit((char)c)) {
                g->step = g->step == GS_DOT ? GS_DOT0 : GS_E0;
            } else {
                gs_error(g, c, g->step == GS_DOT ? "after decimal point in numeric literal"
                                                 : "in exponent of numeric literal");
            }
            return;
        case GS_E:
            g->step = GS_ESIGN;
            if (c == '+' || c == '-') {
                return;
            }
            continue;
        case GS_LIT:
            if (c == (unsigned char)*g->lit) {
                g->lit++;
                if (*g->lit == '\0') {
                    g->step = GS_END_VALUE;
                }
                return;
            }
            snprintf(ctx, sizeof(ctx), "in literal %s (expecting '%c')", g->lit_name, *g->lit);
            gs_error(g, c, ctx);
            return;
        case GS_ERROR:
            return;
        }
    }
}

/* checkValid: 0, or -1 with Go's SyntaxError text in g->err. */
static int gs_check(struct gscan *g, const unsigned char *d, size_t n)
{
    for (size_t i = 0; i < n && g->step != GS_ERROR; i++) {
        gs_step(g, d[i]);
    }
    if (g->step == GS_ERROR) {
        return -1;
    }
    if (g->end_top) {
        return 0;
    }
    /* scanner.eof: one more space may end a number; anything else is an error. */
    gs_step(g, ' ');
    if (g->end_top) {
        return 0;
    }
    if (g->step != GS_ERROR) {
        snprintf(g->err, sizeof(g->err), "unexpected end of JSON input");
    }
    return -1;
}

/* Skips one value of already validated JSON at *pp (no depth limit: Go has none below 10000). */
static void skip_valid_value(const char **pp, const char *end)
{
    const char *p = *pp;
    size_t depth = 0;

    do {
        while (p < end && is_ws(*p)) {
            p++;
        }
        if (p >= end) {
            break;
        }
        if (*p == '"') {
            for (p++; p < end && *p != '"'; p++) {
                if (*p == '\\' && end - p > 1) {
                    p++;
                }
            }
            p += p < end;
        } else if (*p == '{' || *p == '[') {
            depth++;
            p++;
        } else if (*p == '}' || *p == ']') {
            depth--;
            p++;
        } else if (*p == ',' || *p == ':') {
            p++;
        } else {
            while (p < end && strchr(",:]} \t\r\n", *p) == NULL) {
                p++;
            }
        }
    } while (depth > 0);
    *pp = p < end ? p : end;
}

/* Go's unquote of the validated string literal at *pp into out (>= 3x its raw length). */
static size_t unquote_valid(const char **pp, const char *end, char *out)
{
    const char *p = *pp + 1;
    const char *q = p;
    size_t o = 0;

    while (q < end && *q != '"') {
        q += *q == '\\' ? 2 : 1;
    }
    q = q < end ? q : end;
    while (p < q) {
        o += unquote_next(&p, q, out + o);
    }
    *pp = q < end ? q + 1 : end;
    return o;
}

/* The decoded token, the way json.Unmarshal fills storage.continueToken. */
struct ctoken {
    char *v;
    size_t v_len;
    int64_t rv;
    char *start;
    size_t start_len;
    char err[KUBE_JSON_CONTINUE_MAX + 128]; /* Go's savedError (first type error) or "" */
};

/* Records an UnmarshalTypeError for <field>; <lit> is the number literal for "number <lit>". */
static void ctoken_type_error(struct ctoken *c, const char *value, const char *lit,
                              size_t lit_len, const char *field, const char *type)
{
    if (c->err[0] == '\0') {
        snprintf(c->err, sizeof(c->err),
                 "json: cannot unmarshal %s%s%.*s into Go struct field continueToken.%s of type %s",
                 value, lit_len > 0 ? " " : "", (int)lit_len, lit, field, type);
    }
}

/* What Go calls the JSON value starting with <c> in an UnmarshalTypeError. */
static const char *json_kind(char c)
{
    switch (c) {
    case '{': return "object";
    case '[': return "array";
    case '"': return "string";
    case 't':
    case 'f': return "bool";
    default: return "number";
    }
}

/* strconv.ParseInt(lit, 10, 64) for a JSON number literal. */
static bool parse_int64(const char *lit, size_t n, int64_t *out)
{
    bool neg = n > 0 && lit[0] == '-';
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t v = 0;
    size_t i = neg;

    if (i >= n) {
        return false;
    }
    for (; i < n; i++) {
        if (!is_digit(lit[i]) || v > (limit - (uint64_t)(lit[i] - '0')) / 10) {
            return false;
        }
        v = v * 10 + (uint64_t)(lit[i] - '0');
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/* encoding/json field matching: exact name, else ASCII case folding plus U+017F (long s). */
static bool field_match(const char *key, size_t n, const char *name)
{
    size_t i = 0;

    for (; *name != '\0'; name++) {
        char c = *name;

        if (i < n && (key[i] == c || key[i] == c - 32)) {
            i++;
        } else if (c == 's' && n - i >= 2 && (unsigned char)key[i] == 0xC5 &&
                   (unsigned char)key[i + 1] == 0xBF) {
            i += 2;
        } else {
            return false;
        }
    }
    return i == n;
}

/* d.object(&continueToken{}) over the validated object at *pp. */
static void ctoken_object(struct ctoken *c, const char *p, const char *end, char *scratch)
{
    p++; /* '{' */
    for (;;) {
        const char *vstart;
        char *key = scratch;
        size_t klen;
        int field = -1;

        while (p < end && (is_ws(*p) || *p == ',')) {
            p++;
        }
        if (p >= end || *p == '}') {
            return;
        }
        klen = unquote_valid(&p, end, key);
        if (field_match(key, klen, "v")) {
            field = 0;
        } else if (field_match(key, klen, "rv")) {
            field = 1;
        } else if (field_match(key, klen, "start")) {
            field = 2;
        }
        while (p < end && (is_ws(*p) || *p == ':')) {
            p++;
        }
        if (p >= end) {
            return;
        }
        vstart = p;
        if (field < 0 || *p == 'n') {
            skip_valid_value(&p, end); /* unknown member, or null: left as it is */
        } else if (field == 1 && (*p == '-' || is_digit(*p))) {
            skip_valid_value(&p, end);
            if (!parse_int64(vstart, (size_t)(p - vstart), &c->rv)) {
                ctoken_type_error(c, "number", vstart, (size_t)(p - vstart), "rv", "int64");
            }
        } else if (field != 1 && *p == '"') {
            char *dst = field == 0 ? c->v : c->start;
            size_t n = unquote_valid(&p, end, dst);

            *(field == 0 ? &c->v_len : &c->start_len) = n;
        } else {
            skip_valid_value(&p, end);
            ctoken_type_error(c, json_kind(*vstart), "", 0,
                              field == 0 ? "v" : field == 1 ? "rv" : "start",
                              field == 1 ? "int64" : "string");
        }
    }
}

static void cont_err(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void cont_err(char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || err_len == 0) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

/* path.Clean(key) == key for a key that starts with '/'. */
static bool path_is_clean(const char *key, size_t n)
{
    size_t i = 1;

    if (n == 1) {
        return true;
    }
    while (i <= n) {
        const char *seg = key + i;
        const char *slash = memchr(seg, '/', n - i);
        size_t len = slash != NULL ? (size_t)(slash - seg) : n - i;

        if (len == 0 || (len == 1 && seg[0] == '.') ||
            (len == 2 && seg[0] == '.' && seg[1] == '.')) {
            return false;
        }
        i += len + 1;
    }
    return true;
}

int kube_json_continue_decode(const char *tok, int64_t *rv, char *start, size_t start_cap,
                              char *err, size_t err_len)
{
    static const char pfx[] = "continue key is not valid";
    unsigned char data[KUBE_JSON_CONTINUE_MAX];
    unsigned char stack[KUBE_JSON_CONTINUE_MAX];
    struct gscan g = {.step = GS_BEGIN_VALUE, .stack = stack};
    struct ctoken c = {0};
    const char *p, *end;
    char *scratch = NULL;
    char *key = NULL;
    size_t tok_len, bad = 0, key_len, start_len;
    bool had_slash;
    ssize_t n;
    int rc = -EINVAL;

    *rv = 0;
    if (start != NULL && start_cap > 0) {
        start[0] = '\0';
    }
    cont_err(err, err_len, "%s", "");
    tok_len = tok != NULL ? strnlen(tok, KUBE_JSON_CONTINUE_MAX + 1) : 0;
    if (tok_len > KUBE_JSON_CONTINUE_MAX) {
        cont_err(err, err_len, "%s: longer than %d bytes", pfx, KUBE_JSON_CONTINUE_MAX);
        return -EINVAL;
    }
    n = b64url_decode(tok != NULL ? tok : "", tok_len, data, &bad);
    if (n < 0) {
        cont_err(err, err_len, "%s: illegal base64 data at input byte %zu", pfx, bad);
        return -EINVAL;
    }
    if (gs_check(&g, data, (size_t)n) != 0) {
        cont_err(err, err_len, "%s: %s", pfx, g.err);
        return -EINVAL;
    }

    /* Unquoting may triple a string (each bad byte becomes U+FFFD), plus the '/' we add. */
    scratch = xmalloc(3 * (size_t)n + 1);
    c.v = xmalloc(3 * (size_t)n + 1);
    key = xmalloc(3 * (size_t)n + 2);
    c.start = key + 1;
    p = (const char *)data;
    end = p + n;
    while (p < end && is_ws(*p)) {
        p++;
    }
    if (*p == '{') {
        ctoken_object(&c, p, end, scratch);
    } else if (*p != 'n') {
        snprintf(c.err, sizeof(c.err),
                 "json: cannot unmarshal %s into Go value of type storage.continueToken",
                 json_kind(*p));
    }
    if (c.err[0] != '\0') {
        cont_err(err, err_len, "%s: %s", pfx, c.err);
        goto out;
    }
    if (c.v_len != strlen("meta.k8s.io/v1") || memcmp(c.v, "meta.k8s.io/v1", c.v_len) != 0) {
        cont_err(err, err_len, "%s: server does not recognize this encoded version %.*s", pfx,
                 (int)c.v_len, c.v);
        goto out;
    }
    if (c.rv == 0) {
        cont_err(err, err_len, "%s: incorrect encoded start resourceVersion (version "
                 "meta.k8s.io/v1)", pfx);
        goto out;
    }
    if (c.start_len == 0) {
        cont_err(err, err_len, "%s: encoded start key empty (version meta.k8s.io/v1)", pfx);
        goto out;
    }
    /* DecodeContinue: prepend "/" if missing, then refuse anything path.Clean would change. */
    had_slash = c.start[0] == '/';
    if (had_slash) {
        memmove(key, c.start, c.start_len);
        key_len = c.start_len;
    } else {
        key[0] = '/';
        key_len = c.start_len + 1;
    }
    if (!path_is_clean(key, key_len)) {
        cont_err(err, err_len, "%s: %.*s", pfx, (int)c.start_len, had_slash ? key : c.start);
        goto out;
    }
    /* The key ends at its first NUL: for NUL-free store keys, "> that prefix" is exactly
     * apiserver's ">= key\0..." range start. */
    start_len = strnlen(key + 1, key_len - 1);
    if (start == NULL || start_len >= start_cap) {
        cont_err(err, err_len, "%s: start key longer than %zu bytes", pfx,
                 start_cap > 0 ? start_cap - 1 : 0);
        goto out;
    }
    memcpy(start, key + 1, start_len);
    start[start_len] = '\0';
    *rv = c.rv;
    rc = 0;
out:
    free(scratch);
    free(c.v);
    free(key);
    return rc;
}
