/*
 * pieces.h - a reply element as the iovec of its pieces, and an arena for the computed ones.
 *
 * A piece is either lent (stable bytes: a blob, a literal) or temporary: built in <sb>,
 * recorded by offset, and resolved to a pointer with pieces_resolve once building is over
 * (sb may move while it grows). A LIST body copies the temporary bytes of each item into an
 * arena (blocks that never move), so that its iovec can point at them until MHD is done.
 *
 * The appenders are inline: a watch frame or a list item takes several, per watcher.
 * No locks; the caller owns both structures. May include sbuf.h and cache/bug.h only.
 */
#ifndef KWP_PROXY_PIECES_H
#define KWP_PROXY_PIECES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "cache/bug.h"
#include "cache/sbuf.h"

#define PIECES_MAX 16

/* Embedded by its user; zero-initialise it ({0}) and sbuf_free(&pc->sb) when done. */
struct pieces {
    struct iovec iov[PIECES_MAX];
    size_t tmp_off[PIECES_MAX]; /* offset in sb, or SIZE_MAX for a lent piece */
    size_t n;
    struct sbuf sb;
};

/* Adds the lent piece p[0..n) (it must outlive the use of pc->iov). */
static inline void pieces_lent(struct pieces *pc, const char *p, size_t n)
{
    BUG_ON(pc->n >= PIECES_MAX);
    pc->iov[pc->n].iov_base = (void *)p;
    pc->iov[pc->n].iov_len = n;
    pc->tmp_off[pc->n++] = SIZE_MAX;
}

/* Adds the literal <s> as a lent piece. */
static inline void pieces_lit(struct pieces *pc, const char *s)
{
    pieces_lent(pc, s, strlen(s));
}

/* Starts a temporary piece: what is appended to pc->sb until pieces_end belongs to it. */
static inline void pieces_begin(struct pieces *pc)
{
    BUG_ON(pc->n >= PIECES_MAX);
    pc->tmp_off[pc->n] = pc->sb.len;
    pc->iov[pc->n].iov_base = NULL;
}

/* Ends the temporary piece pieces_begin started. */
static inline void pieces_end(struct pieces *pc)
{
    pc->iov[pc->n].iov_len = pc->sb.len - pc->tmp_off[pc->n];
    pc->n++;
}

/* Points the temporary pieces at <base> (pc->sb.p, or a copy of pc->sb's bytes). */
void pieces_resolve(struct pieces *pc, const char *base);

/* The byte count of all pieces. */
size_t pieces_total(const struct pieces *pc);

/* Stable storage for the computed pieces of one LIST body (rows, reordered metadata). */
struct pieces_arena;

/* Copies s[0..n) into the arena at *head (NULL: none yet; a block is added as needed) and
 * returns the copy, which stays put until pieces_arena_free. */
char *pieces_arena_copy(struct pieces_arena **head, const char *s, size_t n);

/* Frees every block of the arena (NULL: nothing). */
void pieces_arena_free(struct pieces_arena *a);

#endif
