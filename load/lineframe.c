/*
 * lineframe.c - zero-copy line splitting with a per-line cap (see lineframe.h).
 */
#include "load/lineframe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache/bug.h"

void lineframe_init(struct lineframe *lf, size_t max)
{
    memset(lf, 0, sizeof(*lf));
    lf->max = max;
}

void lineframe_fini(struct lineframe *lf)
{
    free(lf->buf);
    lf->buf = NULL;
    lf->len = 0;
    lf->cap = 0;
}

size_t lineframe_pending(const struct lineframe *lf)
{
    return lf->len;
}

/* Appends to the partial line, growing geometrically up to max + 1. */
static int pending_append(struct lineframe *lf, const char *p, size_t n)
{
    if (n == 0) {
        return 0; /* nothing to keep; memcpy into a NULL buffer would be undefined */
    }
    if (lf->len + n > lf->max) {
        lineframe_fini(lf);
        return -E2BIG;
    }
    if (lf->len + n > lf->cap) {
        size_t cap = lf->cap ? lf->cap : 256;
        while (cap < lf->len + n) {
            cap *= 2;
        }
        if (cap > lf->max + 1) {
            cap = lf->max + 1;
        }
        lf->buf = xrealloc(lf->buf, cap);
        lf->cap = cap;
    }
    memcpy(lf->buf + lf->len, p, n);
    lf->len += n;
    return 0;
}

ssize_t lineframe_feed(struct lineframe *lf, char *data, size_t len, lineframe_fn *fn, void *ctx)
{
    size_t pos = 0;
    int rc;

    while (pos < len) {
        char *nl = memchr(data + pos, '\n', len - pos);
        size_t n;

        if (!nl) {
            rc = pending_append(lf, data + pos, len - pos);
            return rc < 0 ? rc : (ssize_t)len;
        }
        n = (size_t)(nl - (data + pos));
        if (lf->len > 0) {
            /* the line started in an earlier feed: complete it, hand it over, free it */
            char *line;
            size_t line_len;
            rc = pending_append(lf, data + pos, n);
            if (rc < 0) {
                return rc;
            }
            line = lf->buf;
            line_len = lf->len;
            lf->buf = NULL;
            lf->len = 0;
            lf->cap = 0;
            rc = fn(ctx, line, line_len);
            free(line);
        } else {
            if (n > lf->max) {
                return -E2BIG;
            }
            rc = fn(ctx, data + pos, n);
        }
        pos += n + 1;
        if (rc != 0) {
            return rc < 0 ? rc : (ssize_t)pos;
        }
    }
    return (ssize_t)pos;
}
