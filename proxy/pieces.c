/*
 * pieces.c - resolving and counting a reply element's pieces, and the block arena that
 * keeps computed pieces in place for as long as a LIST body is sent (see pieces.h).
 * Blocks are 64 KiB (or one piece, when larger) and are only freed all together.
 */
#include "proxy/pieces.h"

#include <stdlib.h>

struct pieces_arena {
    struct pieces_arena *next;
    size_t len;
    size_t cap;
    char data[];
};

#define ARENA_BLOCK (64 * 1024)

void pieces_resolve(struct pieces *pc, const char *base)
{
    for (size_t i = 0; i < pc->n; i++) {
        if (pc->tmp_off[i] != SIZE_MAX) {
            pc->iov[i].iov_base = (void *)(base + pc->tmp_off[i]);
        }
    }
}

size_t pieces_total(const struct pieces *pc)
{
    size_t t = 0;

    for (size_t i = 0; i < pc->n; i++) {
        t += pc->iov[i].iov_len;
    }
    return t;
}

char *pieces_arena_copy(struct pieces_arena **head, const char *s, size_t n)
{
    struct pieces_arena *b = *head;
    char *out;

    if (!b || b->cap - b->len < n) {
        size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
        b = xmalloc(sizeof(*b) + cap);
        b->len = 0;
        b->cap = cap;
        b->next = *head;
        *head = b;
    }
    out = b->data + b->len;
    memcpy(out, s, n);
    b->len += n;
    return out;
}

void pieces_arena_free(struct pieces_arena *a)
{
    while (a) {
        struct pieces_arena *next = a->next;
        free(a);
        a = next;
    }
}
