/*
 * log.c - one-line structured logging (see log.h). Thread-safe: one write(2) per record.
 * Text records are built in a stack buffer as before; JSON records in a capped heap sbuf
 * (LOG_JSON_MAX: a longer record has its members cut at a UTF-8 boundary, still valid JSON).
 */
#include "proxy/log.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/gotext.h"
#include "cache/sbuf.h"

#define LOG_LINE_MAX 2048
#define LOG_JSON_MAX 8192

static _Atomic int min_level = LOG_LEVEL_INFO;
static _Atomic int out_format = LOG_FORMAT_TEXT;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_set_level(enum log_level level)
{
    atomic_store(&min_level, (int)level);
}

int log_parse_level(const char *s, enum log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -EINVAL;
}

void log_set_format(enum log_format f)
{
    atomic_store(&out_format, (int)f);
}

int log_parse_format(const char *s, enum log_format *out)
{
    if (strcmp(s, "text") == 0) {
        *out = LOG_FORMAT_TEXT;
        return 0;
    }
    if (strcmp(s, "json") == 0) {
        *out = LOG_FORMAT_JSON;
        return 0;
    }
    return -EINVAL;
}

int64_t clock_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t clock_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "2026-11-29T20:30:05.123Z" into ts (at least 32 bytes). */
static void timestamp(char *ts, size_t cap)
{
    struct timespec now;
    struct tm tm;
    size_t n;

    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    n = strftime(ts, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + n, cap - n, ".%03ldZ", now.tv_nsec / 1000000);
}

/* ---- JSON ------------------------------------------------------------------------------ */

/* A key of a key=value pair: a bare word. */
static bool is_key_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-';
}

/* True when <p> starts " key=" (or is the end): where a quoted value may close. */
static bool at_pair_start(const char *p)
{
    const char *k;

    if (*p == '\0') {
        return true;
    }
    if (*p != ' ') {
        return false;
    }
    k = p + 1;
    while (is_key_char(*k)) {
        k++;
    }
    return k > p + 1 && *k == '=';
}

static void json_member(struct sbuf *b, const char *key, size_t klen, const char *v, size_t vlen)
{
    sbuf_putc(b, ',');
    gotext_json_quote(b, key, klen);
    sbuf_putc(b, ':');
    gotext_json_quote(b, v, vlen);
}

/*
 * Appends the key=value pairs of the logfmt text <s> as JSON members: a value in quotes
 * runs to the quote that ends the text or is followed by " key=" (the texts quote values
 * with %s, so a quote inside is left as it is). From the first word that is not a pair on,
 * the rest of the text is one "msg" member.
 */
static void json_logfmt(struct sbuf *b, const char *s)
{
    const char *p = s;

    while (*p == ' ') {
        p++;
    }
    while (*p) {
        const char *k = p, *v, *end;
        size_t klen;

        while (is_key_char(*p)) {
            p++;
        }
        if (p == k || *p != '=') {
            json_member(b, "msg", 3, k, strlen(k));
            return;
        }
        klen = (size_t)(p - k);
        p++;
        if (*p == '"') {
            v = ++p;
            end = NULL;
            for (; *p; p++) {
                if (*p == '"' && at_pair_start(p + 1)) {
                    end = p;
                    break;
                }
            }
            if (end == NULL) { /* unterminated: take the rest */
                end = p;
            } else {
                p = end + 1;
            }
        } else {
            v = p;
            while (*p && *p != ' ') {
                p++;
            }
            end = p;
        }
        json_member(b, k, klen, v, (size_t)(end - v));
        while (*p == ' ') {
            p++;
        }
    }
}

/* One JSON record: ts, level, src, then members(b, ctx). Written with one write(2). */
static void emit_json(enum log_level level, const char *src, void (*members)(struct sbuf *, void *),
                      void *ctx)
{
    char ts[40];
    struct sbuf b;

    timestamp(ts, sizeof(ts));
    sbuf_init(&b, LOG_JSON_MAX);
    sbuf_printf(&b, "{\"ts\":\"%s\",\"level\":\"%s\",\"src\":", ts, level_names[level]);
    gotext_json_quote(&b, src, strlen(src));
    members(&b, ctx);
    sbuf_str(&b, "}\n");
    if (sbuf_error(&b) != 0) {
        /* too long: the record says so and keeps its head, still one valid object */
        sbuf_clear(&b, LOG_JSON_MAX);
        sbuf_printf(&b,
                    "{\"ts\":\"%s\",\"level\":\"%s\",\"src\":\"%s\",\"msg\":\"record longer "
                    "than %d bytes dropped\"}\n",
                    ts, level_names[level], src, LOG_JSON_MAX);
    }
    (void)!write(STDERR_FILENO, b.p, b.len);
    sbuf_free(&b);
}

struct logfmt_ctx {
    const char *text;
    uint64_t suppressed;
};

static void logfmt_members(struct sbuf *b, void *ctx)
{
    struct logfmt_ctx *c = ctx;

    json_logfmt(b, c->text);
    if (c->suppressed > 0) {
        sbuf_printf(b, ",\"suppressed\":\"%llu\"", (unsigned long long)c->suppressed);
    }
}

/* ---- records --------------------------------------------------------------------------- */

static void vlog(enum log_level level, const char *src, uint64_t suppressed, const char *fmt,
                 va_list ap) __attribute__((format(printf, 4, 0)));

static void vlog(enum log_level level, const char *src, uint64_t suppressed, const char *fmt,
                 va_list ap)
{
    char line[LOG_LINE_MAX];
    char ts[40];
    size_t n;
    int w;

    if (atomic_load(&out_format) == LOG_FORMAT_JSON) {
        struct logfmt_ctx c = {line, suppressed};

        (void)vsnprintf(line, sizeof(line), fmt, ap);
        emit_json(level, src, logfmt_members, &c);
        return;
    }
    timestamp(ts, sizeof(ts));
    w = snprintf(line, sizeof(line), "ts=%s level=%s src=%s ", ts, level_names[level], src);
    n = w > 0 ? (size_t)w : 0;
    if (n < sizeof(line)) {
        w = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
        if (w > 0) {
            n += (size_t)w;
        }
    }
    if (suppressed > 0 && n < sizeof(line)) {
        w = snprintf(line + n, sizeof(line) - n, " suppressed=%llu",
                     (unsigned long long)suppressed);
        if (w > 0) {
            n += (size_t)w;
        }
    }
    if (n >= sizeof(line) - 1) {
        n = sizeof(line) - 2; /* truncated: keep one line */
    }
    line[n++] = '\n';
    (void)!write(STDERR_FILENO, line, n);
}

void log_msg(enum log_level level, const char *src, const char *fmt, ...)
{
    va_list ap;

    if ((int)level < atomic_load(&min_level)) {
        return;
    }
    va_start(ap, fmt);
    vlog(level, src, 0, fmt, ap);
    va_end(ap);
}

struct fields_ctx {
    const struct log_field *f;
    size_t n;
    const char *msg;
};

static void fields_members(struct sbuf *b, void *ctx)
{
    struct fields_ctx *c = ctx;

    for (size_t i = 0; i < c->n; i++) {
        json_member(b, c->f[i].key, strlen(c->f[i].key), c->f[i].value, strlen(c->f[i].value));
    }
    json_member(b, "msg", 3, c->msg, strlen(c->msg));
}

/* A text value needs quotes when it is empty or holds a blank, '"', '=' or a control. */
static bool needs_quotes(const char *v)
{
    if (*v == '\0') {
        return true;
    }
    for (; *v; v++) {
        if ((unsigned char)*v <= ' ' || *v == '"' || *v == '=' || *v == 0x7f) {
            return true;
        }
    }
    return false;
}

void log_fields(enum log_level level, const char *src, const struct log_field *f, size_t n,
                const char *msg)
{
    char buf[LOG_LINE_MAX];
    struct sbuf b;

    if ((int)level < atomic_load(&min_level)) {
        return;
    }
    if (atomic_load(&out_format) == LOG_FORMAT_JSON) {
        struct fields_ctx c = {f, n, msg};
        emit_json(level, src, fields_members, &c);
        return;
    }
    sbuf_init_fixed(&b, buf, sizeof(buf));
    for (size_t i = 0; i < n; i++) {
        sbuf_printf(&b, "%s=", f[i].key);
        if (needs_quotes(f[i].value)) {
            gotext_quote(&b, f[i].value, strlen(f[i].value));
        } else {
            sbuf_str(&b, f[i].value);
        }
        sbuf_putc(&b, ' ');
    }
    sbuf_str(&b, "msg=");
    gotext_quote(&b, msg, strlen(msg));
    log_msg(level, src, "%s", buf); /* a cut record stays one line (vlog truncates) */
}

void log_ratelimited(struct log_ratelimit *rl, int64_t interval_ms, enum log_level level,
                     const char *src, const char *fmt, ...)
{
    int64_t now = clock_mono_ms();
    uint64_t suppressed;
    va_list ap;

    if ((int)level < atomic_load(&min_level)) {
        return;
    }
    /* Benign race: two threads may both log once; counts stay approximate by design. */
    if (rl->last_ms != 0 && now - rl->last_ms < interval_ms) {
        rl->suppressed++;
        return;
    }
    suppressed = rl->suppressed;
    rl->suppressed = 0;
    rl->last_ms = now;
    va_start(ap, fmt);
    vlog(level, src, suppressed, fmt, ap);
    va_end(ap);
}
