/*
 * chunked.c - in-place chunked transfer decoding (see chunked.h).
 *
 * A byte-at-a-time state machine for the framing; each run of payload goes to a callback where
 * it lies (chunked_each), or slides to the front of the buffer (chunked_decode, one memmove per
 * run).
 */
#include "load/chunked.h"

#include <errno.h>
#include <string.h>

enum chunked_state {
    CK_SIZE = 0, /* hex digits of a chunk size */
    CK_SIZE_WS,  /* blanks after the digits, before ';' or the line end */
    CK_EXT,      /* ";ext=val" up to the line end */
    CK_SIZE_LF,  /* CR seen at the end of the size line */
    CK_DATA,     /* <left> payload bytes */
    CK_DATA_CR,  /* the CRLF after the payload */
    CK_DATA_LF,
    CK_TRAILER, /* start of a trailer line after the last chunk (empty line = end) */
    CK_TRAILER_LINE,
    CK_TRAILER_LF, /* CR seen: LF ends a trailer field (or the body, if the line was empty) */
    CK_END_LF,     /* CR of the final empty line seen */
    CK_DONE,
};

void chunked_init(struct chunked *c)
{
    memset(c, 0, sizeof(*c));
    c->state = CK_SIZE;
}

static int hex_value(char ch)
{
    if (ch >= '0' && ch <= '9') {
        return ch - '0';
    }
    if (ch >= 'a' && ch <= 'f') {
        return ch - 'a' + 10;
    }
    if (ch >= 'A' && ch <= 'F') {
        return ch - 'A' + 10;
    }
    return -1;
}

/* The size line ended: go to the payload, or to the trailers after the last chunk. */
static int size_line_end(struct chunked *c)
{
    if (c->digits == 0) {
        return -EPROTO;
    }
    c->state = c->left == 0 ? CK_TRAILER : CK_DATA;
    return 0;
}

ssize_t chunked_each(struct chunked *c, char *buf, size_t len, size_t *consumed, chunked_run_fn *fn,
                     void *arg)
{
    size_t r = 0, w = 0;

    while (r < len && c->state != CK_DONE) {
        char ch = buf[r];
        int v;

        switch ((enum chunked_state)c->state) {
        case CK_DATA: {
            size_t n = len - r;
            if ((uint64_t)n > c->left) {
                n = (size_t)c->left;
            }
            w += n;
            r += n;
            c->left -= n;
            if (c->left == 0) {
                c->state = CK_DATA_CR;
            }
            if (n > 0 && fn(arg, buf + r - n, n) != 0) {
                *consumed = r; /* the owner is done with this body */
                return (ssize_t)w;
            }
            continue;
        }
        case CK_SIZE:
            v = hex_value(ch);
            if (v >= 0) {
                if (c->digits >= 16 || c->left > (CHUNKED_MAX_SIZE >> 4)) {
                    return -EPROTO;
                }
                c->left = (c->left << 4) | (uint64_t)v;
                c->digits++;
                if (c->left > CHUNKED_MAX_SIZE) {
                    return -EPROTO;
                }
                break;
            }
            /* the first non-digit ends the number */
            __attribute__((fallthrough));
        case CK_SIZE_WS:
            if (ch == ' ' || ch == '\t') {
                c->state = CK_SIZE_WS;
            } else if (ch == ';') {
                c->state = CK_EXT;
            } else if (ch == '\r') {
                c->state = CK_SIZE_LF;
            } else if (ch == '\n') {
                if (size_line_end(c) != 0) {
                    return -EPROTO;
                }
            } else {
                return -EPROTO;
            }
            if (c->digits == 0) {
                return -EPROTO;
            }
            break;
        case CK_EXT:
            if (ch == '\r') {
                c->state = CK_SIZE_LF;
            } else if (ch == '\n') {
                if (size_line_end(c) != 0) {
                    return -EPROTO;
                }
            }
            break;
        case CK_SIZE_LF:
            if (ch != '\n' || size_line_end(c) != 0) {
                return -EPROTO;
            }
            break;
        case CK_DATA_CR:
            if (ch == '\r') {
                c->state = CK_DATA_LF;
            } else if (ch == '\n') {
                c->state = CK_SIZE;
                c->digits = 0;
            } else {
                return -EPROTO;
            }
            break;
        case CK_DATA_LF:
            if (ch != '\n') {
                return -EPROTO;
            }
            c->state = CK_SIZE;
            c->digits = 0;
            break;
        case CK_TRAILER:
            if (ch == '\r') {
                c->state = CK_END_LF;
            } else if (ch == '\n') {
                c->state = CK_DONE;
            } else {
                c->state = CK_TRAILER_LINE;
            }
            break;
        case CK_TRAILER_LINE:
            if (ch == '\r') {
                c->state = CK_TRAILER_LF;
            } else if (ch == '\n') {
                c->state = CK_TRAILER;
            }
            break;
        case CK_TRAILER_LF:
            if (ch != '\n') {
                return -EPROTO;
            }
            c->state = CK_TRAILER;
            break;
        case CK_END_LF:
            if (ch != '\n') {
                return -EPROTO;
            }
            c->state = CK_DONE;
            break;
        case CK_DONE:
            break;
        }
        r++;
    }
    if (c->state == CK_DONE) {
        c->done = true;
    }
    *consumed = r;
    return (ssize_t)w;
}

struct slide {
    char *dst;
};

static int slide_run(void *arg, char *p, size_t n)
{
    struct slide *s = arg;

    if (s->dst != p) {
        memmove(s->dst, p, n);
    }
    s->dst += n;
    return 0;
}

ssize_t chunked_decode(struct chunked *c, char *buf, size_t len, size_t *consumed)
{
    struct slide s = {buf};

    return chunked_each(c, buf, len, consumed, slide_run, &s);
}
