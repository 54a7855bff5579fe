/*
 * kube_json.c - the strict byte scanner: raw spans of JSON members, array elements and watch
 * events, and type-meta stripping, without building a tree (see kube_json.h).
 *
 * It is the only code that walks untrusted upstream bytes on the data path, so every read is
 * bounds-checked against the end of the input (struct scan's p never passes end) and nesting
 * is capped at KUBE_JSON_MAX_DEPTH; nothing recurses deeper than that. Keys are compared after
 * Go's unquoting (gotext_json_unescape). Pure functions: any thread, no locks, no globals.
 * Includes only libc and cache/ (blob-free: spans are offsets into the caller's bytes).
 */
#include "proxy/kube_json.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "cache/bug.h"
#include "cache/gotext.h"

/* A cursor over untrusted bytes; p never passes end. */
struct scan {
    const char *p;
    const char *end;
};

static void scan_ws(struct scan *s)
{
    while (s->p < s->end && gotext_is_json_space(*s->p)) {
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
            if (s->end - s->p < 4 || !gotext_is_hex(s->p[0]) || !gotext_is_hex(s->p[1]) ||
                !gotext_is_hex(s->p[2]) || !gotext_is_hex(s->p[3])) {
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
    while (s->p < s->end && gotext_is_digit(*s->p)) {
        s->p++;
    }
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int scan_number(struct scan *s)
{
    if (*s->p == '-') {
        s->p++;
    }
    if (s->p >= s->end || !gotext_is_digit(*s->p)) {
        return -EPROTO;
    }
    if (*s->p++ != '0') {
        scan_digits(s);
    }
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if (s->p >= s->end || !gotext_is_digit(*s->p)) {
            return -EPROTO;
        }
        scan_digits(s);
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-')) {
            s->p++;
        }
        if (s->p >= s->end || !gotext_is_digit(*s->p)) {
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
        return (*s->p == '-' || gotext_is_digit(*s->p)) ? scan_number(s) : -EPROTO;
    }
}

/*
 * For bytes a strict scan has validated already: skips the string at '"' (setting *esc when
 * it holds a backslash) without checking it. Bounds are still checked: on bytes that were
 * not validated it stops at <end> and reads nothing beyond.
 */
static void skip_string(struct scan *s, bool *esc)
{
    s->p++;
    while (s->p < s->end) {
        const char *q = memchr(s->p, '"', (size_t)(s->end - s->p));
        const char *bs;

        if (q == NULL) {
            s->p = s->end;
            return;
        }
        bs = memchr(s->p, '\\', (size_t)(q - s->p));
        if (bs == NULL) {
            s->p = q + 1;
            return;
        }
        *esc = true;
        s->p = bs + 2 <= s->end ? bs + 2 : s->end; /* the escaped byte cannot end the string */
    }
}

/* As skip_string, for any value: containers by their brackets, outside strings. */
static void skip_value(struct scan *s)
{
    long depth = 0;
    bool esc = false;

    do {
        if (s->p >= s->end) {
            return;
        }
        switch (*s->p) {
        case '"':
            skip_string(s, &esc);
            break;
        case '{':
        case '[':
            depth++;
            s->p++;
            break;
        case '}':
        case ']':
            depth--;
            s->p++;
            break;
        default:
            if (depth == 0) { /* a scalar: up to the next delimiter */
                while (s->p < s->end && strchr(",}] \t\r\n", *s->p) == NULL) {
                    s->p++;
                }
                return;
            }
            s->p++;
        }
    } while (depth > 0);
}

int kube_json_check_object(const char *data, size_t len)
{
    struct scan s = {data, data + len};

    if (data == NULL || len == 0 || len > KUBE_JSON_MAX_INPUT) {
        return -EPROTO;
    }
    scan_ws(&s);
    if (s.p >= s.end || *s.p != '{' || scan_value(&s, 0) != 0) {
        return -EPROTO;
    }
    scan_ws(&s);
    return s.p == s.end ? 0 : -EPROTO;
}

/* Whether the raw string body raw[0..n) decodes (Go unquote) to exactly key[0..klen). */
static bool raw_equals_n(const char *raw, size_t n, bool esc, const char *key, size_t klen)
{
    const char *end = raw + n;
    size_t k = 0;

    if (!esc) {
        return n == klen && memcmp(raw, key, n) == 0;
    }
    while (raw < end) {
        char u[4];
        size_t un = gotext_json_unescape(&raw, end, u);

        if (k + un > klen || memcmp(key + k, u, un) != 0) {
            return false;
        }
        k += un;
    }
    return k == klen;
}

/* Whether the raw string body raw[0..n) decodes (Go unquote) to exactly <key>. */
static bool raw_equals(const char *raw, size_t n, bool esc, const char *key)
{
    return raw_equals_n(raw, n, esc, key, strlen(key));
}

/* One member of an object, as offsets into the scanned buffer. */
struct member {
    size_t key_off; /* the key's opening quote */
    size_t key_len; /* raw bytes between the quotes */
    bool key_esc;
    size_t val_off;
    size_t val_len;
};

static int object_next(const char *obj, size_t len, size_t *pos, struct kube_json_kv *kv,
                       bool valid);

/* Walks the members of one object that spans the whole buffer (surrounding ws allowed): the
 * member iterator (object_next) with its state, for the readers below. */
struct obj_iter {
    const char *base;
    size_t len;
    size_t pos;
    bool valid; /* the bytes were validated already: skip values (skip_value) */
    int rc;     /* once done: 0 after the closing brace, or -EPROTO (sticky) */
    bool done;
};

static int obj_iter_begin(struct obj_iter *it, const char *data, size_t len)
{
    const char *p = data;

    if (data == NULL || len == 0 || len > KUBE_JSON_MAX_INPUT) {
        return -EPROTO;
    }
    while (p < data + len && gotext_is_json_space(*p)) {
        p++;
    }
    if (p == data + len || *p != '{') {
        return -EPROTO;
    }
    *it = (struct obj_iter){.base = data, .len = len};
    return 0;
}

/*
 * Advances to the next member: true with it in <m>; false after the closing brace (*rc = 0)
 * or on malformed input (*rc = -EPROTO).
 */
static bool obj_iter_next(struct obj_iter *it, struct member *m, int *rc)
{
    struct kube_json_kv kv;
    int r;

    if (it->done) {
        *rc = it->rc;
        return false;
    }
    r = object_next(it->base, it->len, &it->pos, &kv, it->valid);
    if (r != 1) {
        it->done = true;
        it->rc = r == 0 ? 0 : -EPROTO;
        *rc = it->rc;
        return false;
    }
    *m = (struct member){.key_off = kv.key_off - 1,
                         .key_len = kv.key_len,
                         .key_esc = kv.key_esc,
                         .val_off = kv.val_off,
                         .val_len = kv.val_len};
    *rc = 0;
    return true;
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

/*
 * The common step of kube_json_array_next and kube_json_object_next over the container
 * buf[0..len) opened by <open> and closed by <close>: 1 with <s> at the next element (its
 * comma consumed), 0 once closed (*pos = SIZE_MAX), or -EPROTO. *pos rests after an element
 * between calls, so only the first element has no comma.
 */
static int next_begin(const char *buf, size_t len, size_t *pos, char open, char close,
                      struct scan *s)
{
    bool first = *pos == 0;

    if (*pos == SIZE_MAX) {
        return 0;
    }
    if (buf == NULL || len == 0 || len > KUBE_JSON_MAX_INPUT || *pos > len) {
        return -EPROTO;
    }
    s->p = buf + *pos;
    s->end = buf + len;
    if (first) {
        scan_ws(s);
        if (s->p >= s->end || *s->p != open) {
            return -EPROTO;
        }
        s->p++;
    }
    scan_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        scan_ws(s);
        if (s->p != s->end) {
            return -EPROTO;
        }
        *pos = SIZE_MAX;
        return 0;
    }
    if (!first) {
        if (s->p >= s->end || *s->p != ',') {
            return -EPROTO;
        }
        s->p++;
        scan_ws(s);
    }
    return 1;
}

int kube_json_array_next(const char *arr, size_t len, size_t *pos, size_t *e_off, size_t *e_len)
{
    struct scan s;
    int rc = next_begin(arr, len, pos, '[', ']', &s);

    if (rc != 1) {
        return rc;
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

/* kube_json_object_next; with <valid>, for bytes validated already (values skipped). */
static int object_next(const char *obj, size_t len, size_t *pos, struct kube_json_kv *kv,
                       bool valid)
{
    struct scan s;
    int rc = next_begin(obj, len, pos, '{', '}', &s);

    if (rc != 1) {
        return rc;
    }
    if (s.p >= s.end || *s.p != '"') {
        return -EPROTO;
    }
    kv->key_off = (size_t)(s.p - obj) + 1;
    kv->key_esc = false;
    if (valid) {
        skip_string(&s, &kv->key_esc);
    } else if (scan_string(&s, &kv->key_esc) != 0) {
        return -EPROTO;
    }
    if (s.p <= obj + kv->key_off) {
        return -EPROTO; /* unterminated (bytes that were not validated after all) */
    }
    kv->key_len = (size_t)(s.p - obj) - kv->key_off - 1;
    scan_ws(&s);
    if (s.p >= s.end || *s.p != ':') {
        return -EPROTO;
    }
    s.p++;
    scan_ws(&s);
    kv->val_off = (size_t)(s.p - obj);
    if (valid) {
        skip_value(&s);
    } else if (scan_value(&s, 1) != 0) {
        return -EPROTO;
    }
    kv->val_len = (size_t)(s.p - obj) - kv->val_off;
    if (kv->val_len == 0) {
        return -EPROTO;
    }
    *pos = (size_t)(s.p - obj);
    return 1;
}

int kube_json_object_next(const char *obj, size_t len, size_t *pos, struct kube_json_kv *kv)
{
    return object_next(obj, len, pos, kv, false);
}

int kube_json_object_next_valid(const char *obj, size_t len, size_t *pos, struct kube_json_kv *kv)
{
    return object_next(obj, len, pos, kv, true);
}

bool kube_json_key_eq(const char *obj, const struct kube_json_kv *kv, const char *key,
                      size_t key_len)
{
    return raw_equals_n(obj + kv->key_off, kv->key_len, kv->key_esc, key, key_len);
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

/* kube_json_strip_type_meta; with <valid>, for bytes validated already (no pass checks). */
static char *strip_type_meta(const char *data, size_t len, size_t *out_len, bool valid)
{
    struct obj_iter it;
    struct member m;
    size_t n_members = 0;
    size_t last_kept = SIZE_MAX; /* index of the last member that stays */
    size_t last_kept_end = 0;    /* offset just after its value */
    size_t last_end = 0;         /* offset just after the last member's value */
    size_t copy_from = 0;
    bool skip_to_next = false;
    char *out;
    size_t o = 0;
    int rc;

    /* Pass 1: validate (unless done) and learn where the kept members end. */
    rc = obj_iter_begin(&it, data, len);
    it.valid = valid;
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
    it.valid = true; /* pass 1 validated every byte */
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

char *kube_json_strip_type_meta(const char *data, size_t len, size_t *out_len)
{
    return strip_type_meta(data, len, out_len, false);
}

char *kube_json_strip_type_meta_valid(const char *data, size_t len, size_t *out_len)
{
    return strip_type_meta(data, len, out_len, true);
}
