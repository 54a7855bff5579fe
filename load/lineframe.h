/*
 * lineframe.h - splits a byte stream into '\n'-terminated lines with a cap on line length.
 *
 * Complete lines inside the fed data are handed to the callback where they lie (no copy). Only
 * a line cut by the end of a read is copied, into a heap buffer that lives just until that line
 * completes, so an idle connection holds no buffer at all:
 *
 *   feed 1: |ev1\n|ev2\n|ev3 par|          ev1, ev2 in place; "ev3 par" kept (buf)
 *   feed 2: |tial\n|ev4\n|                  "ev3 partial" from buf (then freed), ev4 in place
 *
 * A line longer than <max> bytes (without its '\n') is -E2BIG as soon as that is known, like
 * curl's dynbuf "toobig". The struct is embedded in a connection: one owner, no locking.
 */
#ifndef KWP_LOAD_LINEFRAME_H
#define KWP_LOAD_LINEFRAME_H

#include <stddef.h>
#include <sys/types.h>

struct lineframe {
    /* public */
    size_t max; /* longest line accepted, in bytes without the '\n' (may change between feeds) */
    /* private */
    char *buf; /* the partial line, NULL when none */
    size_t len;
    size_t cap;
};

/*
 * Called once per complete line, without its '\n' (a '\r' before it is left in place). <line>
 * is writable and valid only during the call. Return 0 to go on, 1 to stop after this line,
 * or a negative errno to stop with that error.
 */
typedef int lineframe_fn(void *ctx, char *line, size_t len);

/* Prepares <lf> with cap <max>. */
void lineframe_init(struct lineframe *lf, size_t max);

/* Drops the partial line and frees its buffer. lf->max is kept, so <lf> can be fed again. */
void lineframe_fini(struct lineframe *lf);

/*
 * Feeds data[0..len) (the bytes may be modified in place by the callback). Calls <fn> for each
 * complete line. Returns the bytes consumed: len, or fewer when <fn> returned 1 (the bytes after
 * that line's '\n' are not looked at); or -E2BIG when a line exceeds lf->max, or <fn>'s negative
 * return. After an error the partial line is dropped. If <fn> returns an error the bytes it had
 * seen are consumed, the rest are not.
 */
ssize_t lineframe_feed(struct lineframe *lf, char *data, size_t len, lineframe_fn *fn, void *ctx);

/* Bytes of the pending partial line. */
size_t lineframe_pending(const struct lineframe *lf);

#endif
