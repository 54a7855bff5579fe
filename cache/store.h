/*
 * store.h - the objects of one resource ordered by key, as a persistent tree.
 *
 * key ("ns/name", or "name" when cluster-scoped) -> blob, in strcmp byte order, which is the
 * storage-key order kube-apiserver lists in. The tree is a persistent (path-copying) AVL tree
 * whose nodes are refcounted and shared between versions:
 *
 *   store (live) ──> r' ─┬─> a' ──> ...        a put/del copies the O(log n) nodes on its
 *                        └──────┐               path that another version still shares and
 *   fork (frozen) ──> r ──> a   v               mutates in place the ones only it holds;
 *                     └───────> b (shared)      every other node stays shared
 *
 * store_fork() takes a version in O(1) (one reference on the root). A fork is never written
 * to again; it stays exactly the state it was taken at while the live store goes on, and it
 * may be read and freed on any thread without the resource lock: node refcounts are atomic,
 * and the writer only mutates a node it holds the sole reference to (reached from its own
 * root through nodes it also holds alone), which no fork can reach.
 * Each node keeps its subtree size, so rank (how many keys sort before a key) and select
 * (the i-th key) are O(log n); seek is O(log n) and next O(1) amortised.
 *
 * Not thread-safe by itself: the live store is guarded by the resource mutex; forks are
 * immutable and need no lock.
 */
#ifndef KWP_CACHE_STORE_H
#define KWP_CACHE_STORE_H

#include <stdbool.h>
#include <stddef.h>

struct blob;
struct store;
struct store_node;

/*
 * The tallest AVL tree store_iter can walk: a tree of height h holds at least fib(h+2)-1
 * nodes, so 48 levels need more than 2^32 nodes, which the 32-bit subtree sizes forbid.
 */
#define STORE_MAX_HEIGHT 48

/*
 * An iterator: the path of nodes still to visit. Valid while the store it walks is
 * unchanged: for a fork, as long as the fork lives; for the live store, until its next
 * put/del/clear. Holds no references.
 */
struct store_iter {
    /* private */
    const struct store_node *stack[STORE_MAX_HEIGHT];
    unsigned depth;
};

struct store *store_new(void);

/* Frees the store (live or fork) and drops its root reference; nodes and blobs still shared
 * with other versions stay. NULL-safe; any thread for a fork. */
void store_free(struct store *st);

/*
 * Returns a new store holding the same version as <st>, in O(1); the caller owns it (free
 * with store_free). Meant to be frozen: nothing forbids writing to it, and a write only
 * copies paths, but a fork that is read on other threads must not be written.
 */
struct store *store_fork(const struct store *st);

/*
 * Inserts or replaces the blob at <b>->key. Takes a new reference to <b> (the caller keeps
 * its own). If a blob was there, it is returned through <old> (the caller now owns that
 * reference) or unref'd when <old> is NULL. O(log n).
 */
void store_put(struct store *st, struct blob *b, struct blob **old);

/* Removes <key>. Returns 0 and the removed blob through <old> (owned by the caller; unref'd
 * when <old> is NULL), or -ENOENT (nothing copied). O(log n). */
int store_del(struct store *st, const char *key, struct blob **old);

/* Returns the blob at <key> (lent, no reference taken) or NULL. */
struct blob *store_get(const struct store *st, const char *key);

size_t store_len(const struct store *st);

/* Sum of the blobs' len (the JSON bytes held). */
size_t store_bytes(const struct store *st);

/* Drops every blob (the nodes other versions share stay theirs). */
void store_clear(struct store *st);

/*
 * Positions <it> at the first key strictly greater than <after> (NULL or "" = the first
 * key). Returns the blob there (lent) or NULL at the end. O(log n).
 */
struct blob *store_seek(const struct store *st, const char *after, struct store_iter *it);

/* Advances <it>; returns the next blob (lent) or NULL at the end. O(1) amortised. */
struct blob *store_next(struct store_iter *it);

/*
 * Number of keys less than or equal to <after> (NULL or "" = 0): the index store_seek(after)
 * lands on. O(log n).
 */
size_t store_rank(const struct store *st, const char *after);

/* The blob of index <i> in key order (lent), or NULL when i >= store_len. O(log n). */
struct blob *store_at(const struct store *st, size_t i);

#endif
