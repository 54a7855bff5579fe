/*
 * store.h - the current objects of one resource, ordered by key.
 *
 * key ("ns/name", or "name" when cluster-scoped) -> blob, in strcmp byte order, which is
 * the storage-key order kube-apiserver lists in. Ordered iteration from any start key costs
 * O(log n) to seek plus O(1) per item, so a page of a big list costs work proportional to
 * the page. The store holds one reference to each blob it contains.
 * Not thread-safe by itself: struct resource guards it with its mutex.
 */
#ifndef KWP_CACHE_STORE_H
#define KWP_CACHE_STORE_H

#include <stdbool.h>
#include <stddef.h>

struct blob;
struct store;

/* An iterator position; valid until the next store_put/store_del/store_clear. */
struct store_iter {
    /* private */
    void *node;
    const struct store *st;
};

struct store *store_new(void);

/* Frees the store and drops its blob references. NULL-safe. */
void store_free(struct store *st);

/*
 * Inserts or replaces the blob at <b>->key. Takes a new reference to <b> (the caller keeps
 * its own). If a blob was there, it is returned through <old> (the caller now owns that
 * reference) or unref'd when <old> is NULL.
 */
void store_put(struct store *st, struct blob *b, struct blob **old);

/* Removes <key>. Returns 0 and the removed blob through <old> (owned by the caller; unref'd
 * when <old> is NULL), or -ENOENT. */
int store_del(struct store *st, const char *key, struct blob **old);

/* Returns the blob at <key> (lent, no reference taken) or NULL. */
struct blob *store_get(const struct store *st, const char *key);

size_t store_len(const struct store *st);

/* Sum of the blobs' len (the JSON bytes held). */
size_t store_bytes(const struct store *st);

/* Drops every blob. */
void store_clear(struct store *st);

/*
 * Positions <it> at the first key strictly greater than <after> (NULL or "" = the first
 * key). Returns the blob there (lent) or NULL at the end.
 */
struct blob *store_seek(const struct store *st, const char *after, struct store_iter *it);

/* Advances <it>; returns the next blob (lent) or NULL at the end. */
struct blob *store_next(struct store_iter *it);

#endif
