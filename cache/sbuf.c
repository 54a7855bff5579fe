/*
 * sbuf.c - capped text buffers over the heap or the caller's storage (see sbuf.h).
 *
 * Invariants: len < cap whenever p != NULL, p[len] == '\0', len <= max for the heap and
 * len <= cap - 1 for fixed storage; once err is set nothing more is stored (so the bytes are
 * always a prefix of what was appended). Growth doubles from 256 bytes and never allocates
 * more than max + 1. Single owner, no locks.
 */
#include "cache/sbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/bug.h"

#define SBUF_FIRST_CAP 256

void sbuf_init(struct sbuf *sb, size_t max)
{
    memset(sb, 0, sizeof(*sb));
    sb->max = max < SIZE_MAX / 2 ? max : SIZE_MAX / 2; /* so max + 1 never wraps */
}

void sbuf_init_fixed(struct sbuf *sb, char *buf, size_t cap)
{
    memset(sb, 0, sizeof(*sb));
    sb->fixed = true;
    sb->p = cap > 0 ? buf : NULL;
    sb->cap = cap > 0 ? cap : 0;
    sb->max = cap > 0 ? cap - 1 : 0;
    if (sb->p != NULL) {
        sb->p[0] = '\0';
    }
}

static size_t heap_max(const struct sbuf *sb)
{
    return sb->max != 0 ? sb->max : SBUF_MAX_DEFAULT;
}

/*
 * How many of <n> more bytes can be stored, growing a heap buffer to hold them (and at least
 * allocating, even for n == 0, so that p is set after any append, as callers expect).
 */
static size_t room_for(struct sbuf *sb, size_t n)
{
    size_t max = sb->fixed ? sb->max : heap_max(sb);
    size_t fit = max - sb->len < n ? max - sb->len : n;
    size_t want;
    size_t cap;

    if (sb->fixed) {
        return sb->p != NULL ? fit : 0;
    }
    want = sb->len + fit + 1;
    if (want > sb->cap) {
        cap = sb->cap != 0 ? sb->cap : SBUF_FIRST_CAP < max + 1 ? SBUF_FIRST_CAP : max + 1;
        while (cap < want) {
            cap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
        }
        sb->p = xrealloc(sb->p, cap);
        sb->cap = cap;
    }
    return fit;
}

void sbuf_put(struct sbuf *sb, const char *s, size_t n)
{
    size_t fit;

    sb->need += n;
    if (sb->err != 0) {
        return;
    }
    fit = room_for(sb, n);
    if (fit < n) {
        sb->err = -ENOBUFS;
    }
    if (sb->p == NULL) {
        return; /* fixed storage of size 0: counting only */
    }
    if (fit > 0) {
        memcpy(sb->p + sb->len, s, fit);
        sb->len += fit;
    }
    sb->p[sb->len] = '\0';
}

void sbuf_str(struct sbuf *sb, const char *s)
{
    sbuf_put(sb, s, strlen(s));
}

void sbuf_putc(struct sbuf *sb, char c)
{
    sbuf_put(sb, &c, 1);
}

void sbuf_printf(struct sbuf *sb, const char *fmt, ...)
{
    char small[256];
    char *big = NULL;
    va_list ap;
    int w;

    va_start(ap, fmt);
    w = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    BUG_ON(w < 0); /* only an invalid format or wide character fails */
    if ((size_t)w < sizeof(small)) {
        sbuf_put(sb, small, (size_t)w);
        return;
    }
    big = xmalloc((size_t)w + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)w + 1, fmt, ap);
    va_end(ap);
    sbuf_put(sb, big, (size_t)w);
    free(big);
}

int sbuf_error(const struct sbuf *sb)
{
    return sb->err;
}

size_t sbuf_need(const struct sbuf *sb)
{
    return sb->need;
}

void sbuf_clear(struct sbuf *sb, size_t keep)
{
    sb->len = 0;
    sb->need = 0;
    sb->err = 0;
    if (!sb->fixed && sb->cap > keep) {
        free(sb->p);
        sb->p = NULL;
        sb->cap = 0;
    }
    if (sb->p != NULL) {
        sb->p[0] = '\0';
    }
}

char *sbuf_take(struct sbuf *sb)
{
    char *p;

    BUG_ON(sb->fixed);
    if (sb->p == NULL) {
        sbuf_put(sb, "", 0);
    }
    p = sb->p;
    sbuf_init(sb, sb->max);
    return p;
}

void sbuf_free(struct sbuf *sb)
{
    if (!sb->fixed) {
        free(sb->p);
    }
    memset(sb, 0, sizeof(*sb));
}
