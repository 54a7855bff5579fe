/*
 * sbuf.h - a growable, always NUL-terminated byte string for building small texts: one Table
 * row, one column set, one Status, one header. It grows without a cap, so callers feed it only
 * bounded input (one object's fields, one request's parts).
 *
 *   struct sbuf sb = {0};
 *   sbuf_str(&sb, "{\"name\":");
 *   sbuf_quote(&sb, name, strlen(name));   -> {"name":"x"}
 *   ... use sb.p / sb.len ...
 *   sbuf_free(&sb);
 */
#ifndef KWP_PROXY_SBUF_H
#define KWP_PROXY_SBUF_H

#include <stddef.h>

struct sbuf {
    char *p;    /* NULL until the first append; then NUL-terminated */
    size_t len; /* bytes before the NUL */
    size_t cap; /* bytes allocated */
};

/* Makes room for <n> more bytes plus the NUL (doubling, from 256). */
void sbuf_reserve(struct sbuf *sb, size_t n);

void sbuf_put(struct sbuf *sb, const char *s, size_t n);
void sbuf_str(struct sbuf *sb, const char *s);

/* Appends at most 255 formatted bytes (longer output is cut there). */
void sbuf_printf(struct sbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends s[0..n) as a JSON string literal, escaped as Go's encoding/json does. */
void sbuf_quote(struct sbuf *sb, const char *s, size_t n);

/* Frees the bytes and zeroes <sb>. */
void sbuf_free(struct sbuf *sb);

#endif
