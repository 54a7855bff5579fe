/*
 * continue_token.c - LIST continue tokens exactly as kube-apiserver's storage makes and reads
 * them (see continue_token.h; SEMANTICS 1.6).
 *
 * A token is base64url (no padding) of json.Marshal(storage.continueToken). Decoding
 * re-implements, step for step, what DecodeContinue runs: base64.RawURLEncoding, Go's
 * encoding/json scanner (scanner.go: the state machine below, for its exact SyntaxError
 * texts), json.Unmarshal into the struct (case-insensitive field match, first type error
 * wins, null leaves a field alone), then the version, rv, key and path.Clean checks. Inputs
 * are capped at CONTINUE_TOKEN_MAX bytes, so the scanner's stack is a fixed array.
 * Pure functions: any thread, no locks, no globals.
 */
#include "proxy/continue_token.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "cache/bug.h"
#include "cache/gotext.h"
#include "cache/sbuf.h"

size_t continue_token_encode(int64_t rv, const char *start_key, char *out, size_t cap)
{
    struct sbuf js = {0};
    struct sbuf w;

    start_key = start_key != NULL ? start_key : "";
    /* json.Marshal(continueToken{...}) with the key's trailing NUL (quoted as \u0000), then
     * RawURLEncoding. */
    sbuf_printf(&js, "{\"v\":\"meta.k8s.io/v1\",\"rv\":%" PRId64 ",\"start\":", rv);
    gotext_json_quote(&js, start_key, strlen(start_key) + 1);
    sbuf_str(&js, "}");
    sbuf_init_fixed(&w, out, cap);
    gotext_base64_encode(&w, GOTEXT_BASE64_RAW_URL, js.p, js.len);
    sbuf_free(&js);
    return sbuf_need(&w);
}

/* Go's encoding/json scanner (scanner.go), step for step, for its exact error texts. */
enum gs_state {
    GS_BEGIN_VALUE_OR_EMPTY = 0,
    GS_BEGIN_VALUE,
    GS_BEGIN_STRING_OR_EMPTY,
    GS_BEGIN_STRING,
    GS_END_VALUE,
    GS_END_TOP,
    GS_IN_STRING,
    GS_IN_STRING_ESC,
    GS_ESC_U,
    GS_ESC_U1,
    GS_ESC_U12,
    GS_ESC_U123,
    GS_NEG,
    GS_1,
    GS_0,
    GS_DOT,
    GS_DOT0,
    GS_E,
    GS_ESIGN,
    GS_E0,
    GS_LIT,
    GS_ERROR
};

enum gs_parse { GS_PARSE_OBJ_KEY = 0, GS_PARSE_OBJ_VALUE, GS_PARSE_ARR_VALUE };

struct gscan {
    enum gs_state step;
    bool end_top;
    const char *lit;      /* GS_LIT: the rest of "true"/"false"/"null" still expected */
    const char *lit_name; /* which literal, for the error text */
    unsigned char *stack; /* enum gs_parse per open container */
    size_t depth;
    char err[128];
};

/* scanner.quoteChar: the byte as a one-rune Go string, in single quotes. */
static void go_quote_char(unsigned char c, char *out, size_t cap)
{
    struct sbuf w;
    struct sbuf q = {0};
    char u[GOTEXT_UTF_MAX];

    sbuf_init_fixed(&w, out, cap);
    if (c == '\'') {
        sbuf_str(&w, "'\\''");
    } else if (c == '"') {
        sbuf_str(&w, "'\"'");
    } else {
        /* Go's string(c) turns the byte into the rune U+00XX: bytes >= 0x80 quote as Latin-1. */
        gotext_quote(&q, u, gotext_encode_rune(c, u));
        sbuf_str(&w, "'");
        sbuf_put(&w, q.p + 1, q.len - 2);
        sbuf_str(&w, "'");
        sbuf_free(&q);
    }
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
        /* Go caps depth at 10000; a capped token (CONTINUE_TOKEN_MAX) cannot reach it. */
        g->step = c == '{' ? GS_BEGIN_STRING_OR_EMPTY : GS_BEGIN_VALUE_OR_EMPTY;
        g->stack[g->depth++] = c == '{' ? GS_PARSE_OBJ_KEY : GS_PARSE_ARR_VALUE;
        return;
    case '"':
        g->step = GS_IN_STRING;
        return;
    case '-':
        g->step = GS_NEG;
        return;
    case '0':
        g->step = GS_0;
        return;
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
            if (gotext_is_json_space((char)c)) {
                return;
            }
            g->step = c == ']' ? GS_END_VALUE : GS_BEGIN_VALUE;
            continue;
        case GS_BEGIN_VALUE:
            if (!gotext_is_json_space((char)c)) {
                gs_begin_value(g, c);
            }
            return;
        case GS_BEGIN_STRING_OR_EMPTY:
            if (gotext_is_json_space((char)c)) {
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
            if (gotext_is_json_space((char)c)) {
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
            if (gotext_is_json_space((char)c)) {
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
            if (!gotext_is_json_space((char)c)) {
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
            if (gotext_is_hex((char)c)) {
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
            if (gotext_is_digit((char)c)) {
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
            if (gotext_is_digit((char)c)) {
                g->step = g->step == GS_DOT ? GS_DOT0 : GS_E0;
            } else {
                gs_error(g, c,
                         g->step == GS_DOT ? "after decimal point in numeric literal"
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
        while (p < end && gotext_is_json_space(*p)) {
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
        o += gotext_json_unescape(&p, q, out + o);
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
    char err[CONTINUE_TOKEN_MAX + 128]; /* Go's savedError (first type error) or "" */
};

/* Records an UnmarshalTypeError for <field>; <lit> is the number literal for "number <lit>". */
static void ctoken_type_error(struct ctoken *c, const char *value, const char *lit, size_t lit_len,
                              const char *field, const char *type)
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
    case '{':
        return "object";
    case '[':
        return "array";
    case '"':
        return "string";
    case 't':
    case 'f':
        return "bool";
    default:
        return "number";
    }
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

        while (p < end && (gotext_is_json_space(*p) || *p == ',')) {
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
        while (p < end && (gotext_is_json_space(*p) || *p == ':')) {
            p++;
        }
        if (p >= end) {
            return;
        }
        vstart = p;
        if (field < 0 || *p == 'n') {
            skip_valid_value(&p, end); /* unknown member, or null: left as it is */
        } else if (field == 1 && (*p == '-' || gotext_is_digit(*p))) {
            skip_valid_value(&p, end);
            if (gotext_parse_int64(vstart, (size_t)(p - vstart), &c->rv) != 0) {
                ctoken_type_error(c, "number", vstart, (size_t)(p - vstart), "rv", "int64");
            }
        } else if (field != 1 && *p == '"') {
            char *dst = field == 0 ? c->v : c->start;
            size_t n = unquote_valid(&p, end, dst);

            *(field == 0 ? &c->v_len : &c->start_len) = n;
        } else {
            skip_valid_value(&p, end);
            ctoken_type_error(c, json_kind(*vstart), "", 0,
                              field == 0   ? "v"
                              : field == 1 ? "rv"
                                           : "start",
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

int continue_token_decode(const char *tok, int64_t *rv, char *start, size_t start_cap, char *err,
                          size_t err_len)
{
    static const char pfx[] = "continue key is not valid";
    unsigned char data[CONTINUE_TOKEN_MAX];
    unsigned char stack[CONTINUE_TOKEN_MAX];
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
    tok_len = tok != NULL ? strnlen(tok, CONTINUE_TOKEN_MAX + 1) : 0;
    if (tok_len > CONTINUE_TOKEN_MAX) {
        cont_err(err, err_len, "%s: longer than %d bytes", pfx, CONTINUE_TOKEN_MAX);
        return -EINVAL;
    }
    n = gotext_base64url_decode(tok != NULL ? tok : "", tok_len, data, &bad);
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
    while (p < end && gotext_is_json_space(*p)) {
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
        cont_err(err, err_len,
                 "%s: incorrect encoded start resourceVersion (version "
                 "meta.k8s.io/v1)",
                 pfx);
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
