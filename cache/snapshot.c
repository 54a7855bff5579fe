/*
 * snapshot.c - an immutable, refcounted version of a resource's store (see snapshot.h).
 *
 * Built under the resource lock from a store fork, then published: after that only the
 * refcount changes, so any number of LIST responses on any threads may read it. The reads
 * are the store's own (seek/next/rank/at) on the frozen fork.
 */
#include "cache/snapshot.h"

#include <stdlib.h>

#include "cache/bug.h"

struct snapshot *snapshot_new(struct store *frozen, uint64_t rv)
{
    struct snapshot *s = xcalloc(1, sizeof(*s));

    s->rv = rv;
    s->st = frozen;
    s->len = store_len(frozen);
    s->bytes = store_bytes(frozen);
    atomic_init(&s->ref, 1);
    return s;
}

struct snapshot *snapshot_ref(struct snapshot *s)
{
    if (s != NULL) {
        atomic_fetch_add_explicit(&s->ref, 1, memory_order_relaxed);
    }
    return s;
}

void snapshot_unref(struct snapshot *s)
{
    unsigned old;

    if (s == NULL) {
        return;
    }
    old = atomic_fetch_sub_explicit(&s->ref, 1, memory_order_acq_rel);
    BUG_ON(old == 0);
    if (old != 1) {
        return;
    }
    store_free(s->st);
    free(s);
}

struct blob *snapshot_seek(const struct snapshot *s, const char *after, struct store_iter *it)
{
    return store_seek(s->st, after, it);
}

struct blob *snapshot_next(struct store_iter *it)
{
    return store_next(it);
}

size_t snapshot_rank(const struct snapshot *s, const char *after)
{
    return store_rank(s->st, after);
}

struct blob *snapshot_at(const struct snapshot *s, size_t i)
{
    return store_at(s->st, i);
}
