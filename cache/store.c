/*
 * store.c - key -> blob, a persistent AVL tree ordered by strcmp (see store.h).
 *
 * Ownership: a store holds one reference on its root; every node holds one reference on each
 * child and on its blob. Writers work on references they own ("owned" below): node_own()
 * turns an owned reference into a node held by nobody else, either the node itself when its
 * refcount is 1 or a fresh copy (which refs the children and the blob, then drops the owned
 * reference on the original). Insert, delete and the rotations then relink owned references
 * only, so one put/del allocates at most the O(log n) nodes on its path that other versions
 * share (none when no fork is outstanding) and never touches a shared node.
 *
 * Why the refcount-1 test is safe while forks are read and freed on other threads: the
 * writer tests only a node it reached through nodes it holds alone. Any other version that
 * reaches that node holds a reference on it (from its own parent, or as its root), so a count
 * of 1 means no other version can reach it, and what cannot be reached cannot be referenced
 * anew. Other threads only drop references, with release order; the writer's acquire load
 * then sees everything they read before letting go.
 *
 * Balance: |height(l) - height(r)| <= 1 at every node, so height <= 1.44 log2(n+2) and the
 * recursion (and store_iter's stack) stays shallow. size = nodes in the subtree (32 bits).
 */
#include "cache/store.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/blob.h"
#include "cache/bug.h"

struct store_node {
    struct blob *b;                  /* one reference; b->key is the node's key */
    struct store_node *left, *right; /* one reference each */
    atomic_uint ref;                 /* parents and stores holding this node */
    uint32_t size;                   /* nodes in this subtree */
    uint8_t height;                  /* 1 for a leaf */
};

struct store {
    struct store_node *root; /* one reference */
    size_t bytes;            /* sum of b->len over the version */
};

/* ---- nodes and references ---------------------------------------------------------------- */

static struct store_node *node_ref(struct store_node *n)
{
    if (n != NULL) {
        atomic_fetch_add_explicit(&n->ref, 1, memory_order_relaxed);
    }
    return n;
}

/* Drops one reference; the last one frees the node and drops its children and blob. The
 * recursion goes as deep as the tree is tall (a few dozen levels). Any thread. */
static void node_unref(struct store_node *n)
{
    unsigned old;

    if (n == NULL) {
        return;
    }
    old = atomic_fetch_sub_explicit(&n->ref, 1, memory_order_acq_rel);
    BUG_ON(old == 0);
    if (old != 1) {
        return;
    }
    node_unref(n->left);
    node_unref(n->right);
    blob_unref(n->b);
    free(n);
}

static uint32_t size(const struct store_node *n)
{
    return n != NULL ? n->size : 0;
}

static int height(const struct store_node *n)
{
    return n != NULL ? n->height : 0;
}

static void fix(struct store_node *n)
{
    int hl = height(n->left);
    int hr = height(n->right);

    n->height = (uint8_t)((hl > hr ? hl : hr) + 1);
    n->size = size(n->left) + size(n->right) + 1;
}

/* A leaf holding a new reference to <b>. */
static struct store_node *node_new(struct blob *b)
{
    struct store_node *n = xmalloc(sizeof(*n));

    n->b = blob_ref(b);
    n->left = NULL;
    n->right = NULL;
    atomic_init(&n->ref, 1);
    n->size = 1;
    n->height = 1;
    return n;
}

/*
 * Takes an owned reference to <n> (not NULL) and returns a node only the caller holds: <n>
 * itself when nobody else does, else a copy sharing n's children and blob.
 */
static struct store_node *node_own(struct store_node *n)
{
    struct store_node *c;

    if (atomic_load_explicit(&n->ref, memory_order_acquire) == 1) {
        return n;
    }
    c = xmalloc(sizeof(*c));
    c->b = blob_ref(n->b);
    c->left = node_ref(n->left);
    c->right = node_ref(n->right);
    atomic_init(&c->ref, 1);
    c->size = n->size;
    c->height = n->height;
    node_unref(n);
    return c;
}

/* ---- AVL balancing on owned nodes -------------------------------------------------------- */

/* <y> is held only by the caller; returns the new subtree root, also held only by it. */
static struct store_node *rotate_right(struct store_node *y)
{
    struct store_node *x = node_own(y->left);

    y->left = x->right;
    x->right = y;
    fix(y);
    fix(x);
    return x;
}

static struct store_node *rotate_left(struct store_node *x)
{
    struct store_node *y = node_own(x->right);

    x->right = y->left;
    y->left = x;
    fix(x);
    fix(y);
    return y;
}

/*
 * Restores the AVL property at <n> (held only by the caller) after one of its subtrees
 * changed height by one; a double rotation handles the zig-zag case. Returns the new root.
 */
static struct store_node *rebalance(struct store_node *n)
{
    int bal;

    fix(n);
    bal = height(n->left) - height(n->right);
    if (bal > 1) {
        if (height(n->left->left) < height(n->left->right)) {
            n->left = rotate_left(node_own(n->left));
        }
        return rotate_right(n);
    }
    if (bal < -1) {
        if (height(n->right->right) < height(n->right->left)) {
            n->right = rotate_right(node_own(n->right));
        }
        return rotate_left(n);
    }
    return n;
}

/* ---- insert / delete --------------------------------------------------------------------- */

/* Takes an owned reference to subtree <n> (may be NULL) and returns the new subtree. */
static struct store_node *node_insert(struct store_node *n, struct blob *b, struct blob **old)
{
    int c;

    if (n == NULL) {
        return node_new(b);
    }
    n = node_own(n);
    c = strcmp(b->key, n->b->key);
    if (c == 0) {
        /* Replacing the blob keeps the shape: no rebalancing needed. */
        *old = n->b;
        n->b = blob_ref(b);
        return n;
    }
    if (c < 0) {
        n->left = node_insert(n->left, b, old);
    } else {
        n->right = node_insert(n->right, b, old);
    }
    return rebalance(n);
}

void store_put(struct store *st, struct blob *b, struct blob **old)
{
    struct blob *prev = NULL;

    /* The 32-bit subtree sizes (and the iterator's stack) allow fewer than 2^32 keys. */
    BUG_ON(size(st->root) == UINT32_MAX);
    st->root = node_insert(st->root, b, &prev);
    st->bytes = st->bytes + b->len - (prev != NULL ? prev->len : 0);
    if (old != NULL) {
        *old = prev;
    } else {
        blob_unref(prev);
    }
}

/* Unlinks the smallest node of owned subtree <n>, handing its blob reference to *<b>. */
static struct store_node *node_delete_min(struct store_node *n, struct blob **b)
{
    struct store_node *r;

    n = node_own(n);
    if (n->left == NULL) {
        /* Held only by us: its references move out and it goes without a cascade. */
        *b = n->b;
        r = n->right;
        free(n);
        return r;
    }
    n->left = node_delete_min(n->left, b);
    return rebalance(n);
}

/* Takes an owned reference to subtree <n>, in which <key> is known to be; hands the removed
 * blob's reference to *<out> and returns the new subtree. */
static struct store_node *node_delete(struct store_node *n, const char *key, struct blob **out)
{
    int c;

    n = node_own(n);
    c = strcmp(key, n->b->key);
    if (c < 0) {
        n->left = node_delete(n->left, key, out);
    } else if (c > 0) {
        n->right = node_delete(n->right, key, out);
    } else {
        *out = n->b;
        if (n->left == NULL || n->right == NULL) {
            struct store_node *child = n->left != NULL ? n->left : n->right;

            free(n);
            return child;
        }
        /* Two children: the successor's blob moves into this node. */
        n->right = node_delete_min(n->right, &n->b);
    }
    return rebalance(n);
}

int store_del(struct store *st, const char *key, struct blob **old)
{
    struct blob *gone = NULL;

    if (old != NULL) {
        *old = NULL;
    }
    /* Look first: a miss must not copy the path out of the versions that share it. */
    if (store_get(st, key) == NULL) {
        return -ENOENT;
    }
    st->root = node_delete(st->root, key, &gone);
    st->bytes -= gone->len;
    if (old != NULL) {
        *old = gone;
    } else {
        blob_unref(gone);
    }
    return 0;
}

/* ---- stores and versions ----------------------------------------------------------------- */

struct store *store_new(void)
{
    return xcalloc(1, sizeof(struct store));
}

void store_free(struct store *st)
{
    if (st == NULL) {
        return;
    }
    node_unref(st->root);
    free(st);
}

struct store *store_fork(const struct store *st)
{
    struct store *f = xmalloc(sizeof(*f));

    f->root = node_ref(st->root);
    f->bytes = st->bytes;
    return f;
}

void store_clear(struct store *st)
{
    node_unref(st->root);
    st->root = NULL;
    st->bytes = 0;
}

size_t store_len(const struct store *st)
{
    return size(st->root);
}

size_t store_bytes(const struct store *st)
{
    return st->bytes;
}

/* ---- lookup, iteration, rank ------------------------------------------------------------- */

struct blob *store_get(const struct store *st, const char *key)
{
    const struct store_node *n = st->root;

    while (n != NULL) {
        int c = strcmp(key, n->b->key);

        if (c == 0) {
            return n->b;
        }
        n = c < 0 ? n->left : n->right;
    }
    return NULL;
}

static void push(struct store_iter *it, const struct store_node *n)
{
    BUG_ON(it->depth >= STORE_MAX_HEIGHT);
    it->stack[it->depth++] = n;
}

/*
 * The stack holds, top first, the next node to return and then the ancestors still to
 * return (those we went left from); a node's right subtree is pushed when it is left.
 */
struct blob *store_seek(const struct store *st, const char *after, struct store_iter *it)
{
    const struct store_node *n = st->root;
    bool all = after == NULL || after[0] == '\0'; /* "" sorts before every (non-empty) key */

    it->depth = 0;
    while (n != NULL) {
        if (all || strcmp(n->b->key, after) > 0) {
            push(it, n);
            n = n->left;
        } else {
            n = n->right;
        }
    }
    return it->depth > 0 ? it->stack[it->depth - 1]->b : NULL;
}

struct blob *store_next(struct store_iter *it)
{
    const struct store_node *n;

    if (it->depth == 0) {
        return NULL;
    }
    n = it->stack[--it->depth]->right;
    while (n != NULL) {
        push(it, n);
        n = n->left;
    }
    return it->depth > 0 ? it->stack[it->depth - 1]->b : NULL;
}

size_t store_rank(const struct store *st, const char *after)
{
    const struct store_node *n = st->root;
    size_t r = 0;

    if (after == NULL || after[0] == '\0') {
        return 0;
    }
    while (n != NULL) {
        if (strcmp(n->b->key, after) <= 0) {
            r += size(n->left) + 1;
            n = n->right;
        } else {
            n = n->left;
        }
    }
    return r;
}

struct blob *store_at(const struct store *st, size_t i)
{
    const struct store_node *n = st->root;

    while (n != NULL) {
        size_t l = size(n->left);

        if (i == l) {
            return n->b;
        }
        if (i < l) {
            n = n->left;
        } else {
            i -= l + 1;
            n = n->right;
        }
    }
    return NULL;
}
