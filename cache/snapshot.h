/*
 * snapshot.h - the state of one resource at one rv: an immutable, refcounted version of the
 * store, shared by every LIST page (and initial watch events) served from it.
 *
 *   snapshot{rv, len, bytes} ──> frozen store fork ──> root ──> nodes shared with the live
 *                                                              store and other versions
 *
 * Taking one costs O(1) (see store.h); it stays exactly its state while the writer goes on.
 * Readers seek and iterate instead of indexing:
 *
 *   snapshot_seek(s, after)   first item with key > after      O(log n)
 *   snapshot_next(it)         the following item               O(1) amortised
 *   snapshot_rank(s, after)   how many items have key <= after O(log n)
 *   snapshot_at(s, i)         the i-th item                    O(log n)
 *
 * so a LIST page costs O(log n + page) and remainingItemCount is a difference of two ranks.
 * A LIST response holds one snapshot reference and drops it when done (MHD free callback);
 * its iovec points straight at the blobs the snapshot pins, so nothing is copied.
 * Thread safety: after snapshot_new only the refcount changes; any thread may read it, and
 * the last unref (any thread) releases the version.
 */
#ifndef KWP_CACHE_SNAPSHOT_H
#define KWP_CACHE_SNAPSHOT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/store.h"

struct blob;

struct snapshot {
    /* public, read-only */
    uint64_t rv;  /* state as of this rv */
    size_t len;   /* number of items */
    size_t bytes; /* sum of items' len */
    /* private */
    struct store *st; /* a frozen fork, owned: never written again */
    atomic_uint ref;
};

/*
 * Wraps <frozen> (a store nobody writes any more, typically a store_fork) labelled <rv>;
 * takes ownership of <frozen>. Returns the snapshot with one reference owned by the caller.
 */
struct snapshot *snapshot_new(struct store *frozen, uint64_t rv);

struct snapshot *snapshot_ref(struct snapshot *s);
void snapshot_unref(struct snapshot *s); /* NULL-safe; frees on the last reference */

/* Positions <it> at the first item whose key is strictly greater than <after> (NULL/"" =
 * the first item). Returns that blob (lent while <s> lives) or NULL at the end. */
struct blob *snapshot_seek(const struct snapshot *s, const char *after, struct store_iter *it);

/* Advances <it>; returns the next blob (lent while the snapshot lives) or NULL at the end. */
struct blob *snapshot_next(struct store_iter *it);

/* Number of items whose key is <= <after> (NULL/"" = 0): the index snapshot_seek lands on. */
size_t snapshot_rank(const struct snapshot *s, const char *after);

/* The blob at index <i> in key order (lent while <s> lives), or NULL when i >= len. */
struct blob *snapshot_at(const struct snapshot *s, size_t i);

#endif
