/*
 * snapshot.h - an immutable, refcounted, key-ordered list of blobs: the state of one
 * resource at one rv, shared by every LIST (and initial watch events) served from it.
 *
 *   items: [ blob a ][ blob b ][ blob c ] ...   each entry holds one blob reference
 *
 * A LIST response is an iovec over the items plus envelope and comma literals; the response
 * holds one snapshot reference and drops it when done (MHD free callback).
 */
#ifndef KWP_CACHE_SNAPSHOT_H
#define KWP_CACHE_SNAPSHOT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct blob;

struct snapshot {
    /* public, read-only */
    uint64_t rv;         /* state as of this rv */
    size_t len;          /* number of items */
    struct blob **items; /* key-ordered */
    size_t bytes;        /* sum of items' len */
    /* private */
    size_t cap;          /* slots allocated in items (grows while appending) */
    atomic_uint ref;
};

/* Empty snapshot with room for <cap> items; one reference owned by the caller. */
struct snapshot *snapshot_new(size_t cap, uint64_t rv);

/* Appends <b> (takes a new reference). Only before publishing. Grows as needed. */
void snapshot_append(struct snapshot *s, struct blob *b);

struct snapshot *snapshot_ref(struct snapshot *s);
void snapshot_unref(struct snapshot *s); /* NULL-safe; frees on the last reference */

/* Index of the first item whose key is strictly greater than <after> (binary search);
 * returns len when none. NULL/"" -> 0. */
size_t snapshot_seek(const struct snapshot *s, const char *after);

#endif
