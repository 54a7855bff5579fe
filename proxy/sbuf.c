/*
 * sbuf.c - growable strings (see sbuf.h).
 */
#include "proxy/sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/bug.h"
#include "proxy/kube_json.h"

void sbuf_reserve(struct sbuf *sb, size_t n)
{
    if (sb->len + n + 1 > sb->cap) {
        size_t cap = sb->cap ? sb->cap : 256;
        while (cap < sb->len + n + 1) {
            cap *= 2;
        }
        sb->p = xrealloc(sb->p, cap);
        sb->cap = cap;
    }
}

void sbuf_put(struct sbuf *sb, const char *s, size_t n)
{
    sbuf_reserve(sb, n);
    memcpy(sb->p + sb->len, s, n);
    sb->len += n;
    sb->p[sb->len] = '\0';
}

void sbuf_str(struct sbuf *sb, const char *s)
{
    sbuf_put(sb, s, strlen(s));
}

void sbuf_printf(struct sbuf *sb, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    int w;

    va_start(ap, fmt);
    w = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (w > 0) {
        sbuf_put(sb, tmp, (size_t)w < sizeof(tmp) ? (size_t)w : sizeof(tmp) - 1);
    }
}

void sbuf_quote(struct sbuf *sb, const char *s, size_t n)
{
    size_t need = kube_json_quote(s, n, NULL, 0);

    sbuf_reserve(sb, need);
    kube_json_quote(s, n, sb->p + sb->len, need + 1);
    sb->len += need;
}

void sbuf_free(struct sbuf *sb)
{
    free(sb->p);
    memset(sb, 0, sizeof(*sb));
}
