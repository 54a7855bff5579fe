/*
 * snapshot.c - an immutable, refcounted, key-ordered array of blob references
 * (see snapshot.h).
 *
 * Built by one thread (under the resource lock) with snapshot_append, then published: after
 * that only the refcount changes, so any number of LIST responses on any threads may read it.
 */
#include "cache/snapshot.h"

#include <stdlib.h>
#include <string.h>

#include "cache/blob.h"
#include "cache/bug.h"

struct snapshot *snapshot_new(size_t cap, uint64_t rv)
{
    struct snapshot *s = xcalloc(1, sizeof(*s));

    s->rv = rv;
    s->items = xmalloc((cap > 0 ? cap : 1) * sizeof(*s->items));
    /* The array's capacity hides in the allocation; remember it for append. */
    s->cap = cap > 0 ? cap : 1;
    atomic_init(&s->ref, 1);
    return s;
}

void snapshot_append(struct snapshot *s, struct blob *b)
{
    if (s->len == s->cap) {
        s->cap *= 2;
        s->items = xrealloc(s->items, s->cap * sizeof(*s->items));
    }
    s->items[s->len++] = blob_ref(b);
    s->bytes += b->len;
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
    for (size_t i = 0; i < s->len; i++) {
        blob_unref(s->items[i]);
    }
    free(s->items);
    free(s);
}

/* Upper bound by strcmp, the order the items were appended in (a continue token resumes
 * after its key). */
size_t snapshot_seek(const struct snapshot *s, const char *after)
{
    size_t lo = 0;
    size_t hi = s->len;

    if (after == NULL || after[0] == '\0') {
        return 0;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (strcmp(s->items[mid]->key, after) <= 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}
