/*
 * evscan.c - a cursor over JSON bytes that reads a few members and skips the rest (see
 * evscan.h). Running out of input is -EAGAIN inside this file: evscan_list_rv passes it on
 * (the caller may have more bytes), evscan_event turns it into -EPROTO (a line is complete).
 */
#include "load/evscan.h"

#include <errno.h>
#include <string.h>

struct cursor {
    const char *s;
    size_t pos;
    size_t len;
};

static void skip_ws(struct cursor *c)
{
    while (c->pos < c->len) {
        char ch = c->s[c->pos];
        if (ch != ' ' && ch != '\t' && ch != '\r' && ch != '\n') {
            break;
        }
        c->pos++;
    }
}

/* At a '"': sets the span of the string's raw bytes and moves past the closing quote. */
static int string_span(struct cursor *c, size_t *off, size_t *n)
{
    size_t start = c->pos + 1;
    size_t p = start;

    for (;;) {
        const char *q = p < c->len ? memchr(c->s + p, '"', c->len - p) : NULL;
        size_t back = 0;
        if (!q) {
            return -EAGAIN;
        }
        /* a quote is escaped when an odd run of backslashes precedes it */
        while ((size_t)(q - c->s) - back > start && q[-1 - (ptrdiff_t)back] == '\\') {
            back++;
        }
        p = (size_t)(q - c->s) + 1;
        if (back % 2 == 0) {
            *off = start;
            *n = (size_t)(q - c->s) - start;
            c->pos = p;
            return 0;
        }
    }
}

/* Skips one value of any type (not validated beyond bracket and string structure). */
static int skip_value(struct cursor *c)
{
    size_t off, n;
    size_t depth = 0;
    char ch;

    skip_ws(c);
    if (c->pos >= c->len) {
        return -EAGAIN;
    }
    ch = c->s[c->pos];
    if (ch == '"') {
        return string_span(c, &off, &n);
    }
    if (ch != '{' && ch != '[') {
        size_t start = c->pos;
        if (!(ch == '-' || (ch >= '0' && ch <= '9') || ch == 't' || ch == 'f' || ch == 'n')) {
            return -EPROTO;
        }
        while (c->pos < c->len && !strchr(",}] \t\r\n", c->s[c->pos])) {
            c->pos++;
        }
        return c->pos > start ? 0 : -EPROTO;
    }
    while (c->pos < c->len) {
        ch = c->s[c->pos];
        if (ch == '"') {
            int rc = string_span(c, &off, &n);
            if (rc != 0) {
                return rc;
            }
            continue;
        }
        if (ch == '{' || ch == '[') {
            depth++;
        } else if (ch == '}' || ch == ']') {
            if (--depth == 0) {
                c->pos++;
                return 0;
            }
        }
        c->pos++;
    }
    return -EAGAIN;
}

/* Expects '{' (after blanks) and moves past it. */
static int object_begin(struct cursor *c)
{
    skip_ws(c);
    if (c->pos >= c->len) {
        return -EAGAIN;
    }
    if (c->s[c->pos] != '{') {
        return -EPROTO;
    }
    c->pos++;
    return 0;
}

/*
 * Moves to the next member of the object being read. Returns 1 with the key's raw bytes in
 * <koff>/<klen> and the cursor on the value, 0 after the closing brace, or an error. <seen>
 * counts the members so far (start at 0).
 */
static int object_next(struct cursor *c, size_t *seen, size_t *koff, size_t *klen)
{
    int rc;

    skip_ws(c);
    if (c->pos >= c->len) {
        return -EAGAIN;
    }
    if (c->s[c->pos] == '}') {
        c->pos++;
        return 0;
    }
    if (*seen > 0) {
        if (c->s[c->pos] != ',') {
            return -EPROTO;
        }
        c->pos++;
        skip_ws(c);
        if (c->pos >= c->len) {
            return -EAGAIN;
        }
    }
    if (c->s[c->pos] != '"') {
        return -EPROTO;
    }
    rc = string_span(c, koff, klen);
    if (rc != 0) {
        return rc;
    }
    skip_ws(c);
    if (c->pos >= c->len) {
        return -EAGAIN;
    }
    if (c->s[c->pos] != ':') {
        return -EPROTO;
    }
    c->pos++;
    skip_ws(c);
    if (c->pos >= c->len) {
        return -EAGAIN;
    }
    (*seen)++;
    return 1;
}

static bool span_is(const struct cursor *c, size_t off, size_t n, const char *want)
{
    return n == strlen(want) && memcmp(c->s + off, want, n) == 0;
}

static bool at(const struct cursor *c, char ch)
{
    return c->pos < c->len && c->s[c->pos] == ch;
}

/* Reads a string value if one is here (else skips the value and leaves *n at 0). */
static int string_value(struct cursor *c, size_t *off, size_t *n)
{
    *n = 0;
    if (!at(c, '"')) {
        return skip_value(c);
    }
    return string_span(c, off, n);
}

/* Decimal digits only, within int64 (wall-clock ns have 19 digits); else -1. */
static int64_t parse_stamp(const char *p, size_t n)
{
    int64_t v = 0;

    if (n == 0 || n > 19) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        int d = p[i] - '0';
        if (d < 0 || d > 9 || v > (INT64_MAX - d) / 10) {
            return -1;
        }
        v = v * 10 + d;
    }
    return v;
}

static int scan_annotations(struct cursor *c, struct evscan_event *ev)
{
    size_t seen = 0, koff, klen, voff = 0, vlen = 0;
    int rc;

    if (!at(c, '{')) {
        return skip_value(c);
    }
    rc = object_begin(c);
    while (rc == 0 && (rc = object_next(c, &seen, &koff, &klen)) == 1) {
        if (span_is(c, koff, klen, EVSCAN_STAMP_KEY)) {
            rc = string_value(c, &voff, &vlen);
            if (rc == 0 && vlen > 0) {
                ev->stamp_ns = parse_stamp(c->s + voff, vlen);
            }
        } else if (span_is(c, koff, klen, EVSCAN_INITIAL_END_KEY)) {
            rc = string_value(c, &voff, &vlen);
            ev->initial_end = rc == 0 && span_is(c, voff, vlen, "true");
        } else {
            rc = skip_value(c);
        }
    }
    return rc;
}

static int scan_metadata(struct cursor *c, struct evscan_event *ev)
{
    size_t seen = 0, koff, klen;
    int rc;

    if (!at(c, '{')) {
        return skip_value(c);
    }
    rc = object_begin(c);
    while (rc == 0 && (rc = object_next(c, &seen, &koff, &klen)) == 1) {
        if (span_is(c, koff, klen, "resourceVersion")) {
            rc = string_value(c, &ev->rv_off, &ev->rv_len);
        } else if (span_is(c, koff, klen, "annotations")) {
            rc = scan_annotations(c, ev);
        } else {
            rc = skip_value(c);
        }
    }
    return rc;
}

/* A Status "code": an integer, kept when it fits an HTTP-like range. */
static int scan_code(struct cursor *c, struct evscan_event *ev)
{
    size_t start = c->pos;
    int v = 0;
    int rc = skip_value(c);

    if (rc != 0) {
        return rc;
    }
    for (size_t i = start; i < c->pos; i++) {
        char ch = c->s[i];
        if (ch < '0' || ch > '9' || v > 99999) {
            return 0; /* not a small non-negative integer: leave code at 0 */
        }
        v = v * 10 + (ch - '0');
    }
    ev->code = v;
    return 0;
}

/*
 * Reads "object". Sets *done when the line needs no more reading: the type is known, it is not
 * an ERROR, and the metadata has been read.
 */
static int scan_object(struct cursor *c, struct evscan_event *ev, bool type_known, bool *done)
{
    size_t seen = 0, koff, klen;
    int rc;

    if (!at(c, '{')) {
        return -EPROTO;
    }
    rc = object_begin(c);
    while (rc == 0 && (rc = object_next(c, &seen, &koff, &klen)) == 1) {
        if (span_is(c, koff, klen, "metadata")) {
            rc = scan_metadata(c, ev);
            if (rc == 0 && type_known && ev->type != EVSCAN_ERROR) {
                *done = true;
                return 0;
            }
        } else if (span_is(c, koff, klen, "code")) {
            rc = scan_code(c, ev);
        } else {
            rc = skip_value(c);
        }
    }
    return rc;
}

static int watch_type_of(const struct cursor *c, size_t off, size_t n, enum evscan_type *t)
{
    static const char *const names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (span_is(c, off, n, names[i])) {
            *t = (enum evscan_type)i;
            return 0;
        }
    }
    return -EPROTO;
}

int evscan_event(const char *line, size_t len, struct evscan_event *ev)
{
    struct cursor c = {line, 0, len};
    size_t seen = 0, koff, klen, voff, vlen;
    bool have_type = false, have_object = false, done = false;
    int rc;

    memset(ev, 0, sizeof(*ev));
    ev->stamp_ns = -1;
    rc = object_begin(&c);
    while (rc == 0 && !done && (rc = object_next(&c, &seen, &koff, &klen)) == 1) {
        if (span_is(&c, koff, klen, "type")) {
            if (!at(&c, '"')) {
                return -EPROTO;
            }
            rc = string_span(&c, &voff, &vlen);
            if (rc == 0) {
                rc = watch_type_of(&c, voff, vlen, &ev->type);
                have_type = rc == 0;
            }
        } else if (span_is(&c, koff, klen, "object")) {
            ev->rv_len = 0;
            rc = scan_object(&c, ev, have_type, &done);
            have_object = rc == 0;
        } else {
            rc = skip_value(&c);
        }
    }
    if (rc < 0 || !have_type || !have_object) {
        return -EPROTO;
    }
    if (ev->type != EVSCAN_ERROR) {
        ev->code = 0;
    }
    return 0;
}

int evscan_list_rv(const char *data, size_t len, size_t *off, size_t *rv_len)
{
    struct cursor c = {data, 0, len};
    size_t seen = 0, koff, klen;
    int rc;

    rc = object_begin(&c);
    while (rc == 0 && (rc = object_next(&c, &seen, &koff, &klen)) == 1) {
        size_t mseen = 0;
        if (!span_is(&c, koff, klen, "metadata") || !at(&c, '{')) {
            rc = skip_value(&c);
            continue;
        }
        rc = object_begin(&c);
        while (rc == 0 && (rc = object_next(&c, &mseen, &koff, &klen)) == 1) {
            if (span_is(&c, koff, klen, "resourceVersion") && at(&c, '"')) {
                return string_span(&c, off, rv_len);
            }
            rc = skip_value(&c);
        }
        return rc < 0 ? rc : -ENOENT;
    }
    return rc < 0 ? rc : -ENOENT;
}
