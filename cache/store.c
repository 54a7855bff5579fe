/*
 * store.c - key -> blob, ordered by strcmp (see store.h).
 *
 * An AVL tree with parent pointers: insert, delete and seek are O(log n) (height stays
 * below 1.45 log2(n+2), so the recursion is shallow even at millions of keys) and store_next
 * walks to the in-order successor through the parent links, O(1) amortised. Each node holds
 * one blob reference; the blob's own key is the node's key, so no key is copied.
 * Invariants: every child's parent pointer names its parent; |height(l) - height(r)| <= 1.
 * Not thread-safe: the owning resource's mutex guards every call.
 */
#include "cache/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache/blob.h"
#include "cache/bug.h"

struct store_node {
    struct blob *b; /* one reference; b->key is the node's key */
    struct store_node *left, *right, *parent;
    int height; /* 1 for a leaf */
};

struct store {
    struct store_node *root;
    size_t len;   /* nodes */
    size_t bytes; /* sum of b->len */
};

struct store *store_new(void)
{
    return xcalloc(1, sizeof(struct store));
}

/* Post-order; the recursion depth is the tree height, a few dozen at most. */
static void nodes_free(struct store_node *n)
{
    if (n == NULL) {
        return;
    }
    nodes_free(n->left);
    nodes_free(n->right);
    blob_unref(n->b);
    free(n);
}

void store_free(struct store *st)
{
    if (st == NULL) {
        return;
    }
    nodes_free(st->root);
    free(st);
}

void store_clear(struct store *st)
{
    nodes_free(st->root);
    st->root = NULL;
    st->len = 0;
    st->bytes = 0;
}

/* ---- AVL balancing ----------------------------------------------------------------------- */

static int height(const struct store_node *n)
{
    return n != NULL ? n->height : 0;
}

static void fix_height(struct store_node *n)
{
    int hl = height(n->left);
    int hr = height(n->right);

    n->height = (hl > hr ? hl : hr) + 1;
}

/* Rotations return the new subtree root; the caller sets that root's parent. */
static struct store_node *rotate_right(struct store_node *y)
{
    struct store_node *x = y->left;

    y->left = x->right;
    if (y->left != NULL) {
        y->left->parent = y;
    }
    x->right = y;
    y->parent = x;
    fix_height(y);
    fix_height(x);
    return x;
}

static struct store_node *rotate_left(struct store_node *x)
{
    struct store_node *y = x->right;

    x->right = y->left;
    if (x->right != NULL) {
        x->right->parent = x;
    }
    y->left = x;
    x->parent = y;
    fix_height(x);
    fix_height(y);
    return y;
}

/*
 * Restores the AVL property at <n> after one of its subtrees changed height by one; a
 * double rotation handles the zig-zag case. Returns the subtree's new root.
 */
static struct store_node *rebalance(struct store_node *n)
{
    int bal;

    fix_height(n);
    bal = height(n->left) - height(n->right);
    if (bal > 1) {
        if (height(n->left->left) < height(n->left->right)) {
            n->left = rotate_left(n->left);
            n->left->parent = n;
        }
        return rotate_right(n);
    }
    if (bal < -1) {
        if (height(n->right->right) < height(n->right->left)) {
            n->right = rotate_right(n->right);
            n->right->parent = n;
        }
        return rotate_left(n);
    }
    return n;
}

/* ---- insert / delete --------------------------------------------------------------------- */

/* Recursive insert; each level re-links the child's parent pointer on the way back up. */
static struct store_node *node_insert(struct store *st, struct store_node *n, struct blob *b,
                                      struct blob **old)
{
    int c;

    if (n == NULL) {
        n = xcalloc(1, sizeof(*n));
        n->b = blob_ref(b);
        n->height = 1;
        st->len++;
        st->bytes += b->len;
        return n;
    }
    c = strcmp(b->key, n->b->key);
    if (c == 0) {
        /* Replacing in place keeps the shape: no rebalancing needed. */
        *old = n->b;
        st->bytes = st->bytes - n->b->len + b->len;
        n->b = blob_ref(b);
        return n;
    }
    if (c < 0) {
        n->left = node_insert(st, n->left, b, old);
        n->left->parent = n;
    } else {
        n->right = node_insert(st, n->right, b, old);
        n->right->parent = n;
    }
    return rebalance(n);
}

void store_put(struct store *st, struct blob *b, struct blob **old)
{
    struct blob *prev = NULL;

    st->root = node_insert(st, st->root, b, &prev);
    st->root->parent = NULL;
    if (old != NULL) {
        *old = prev;
    } else {
        blob_unref(prev);
    }
}

/* Unlinks the smallest node of subtree <n>, handing its blob reference to *<b>. */
static struct store_node *node_delete_min(struct store_node *n, struct blob **b)
{
    struct store_node *r;

    if (n->left == NULL) {
        *b = n->b;
        r = n->right;
        free(n);
        return r;
    }
    n->left = node_delete_min(n->left, b);
    if (n->left != NULL) {
        n->left->parent = n;
    }
    return rebalance(n);
}

/* Recursive delete; hands the removed blob's reference to *<out> (NULL when absent). */
static struct store_node *node_delete(struct store_node *n, const char *key, struct blob **out)
{
    int c;

    if (n == NULL) {
        return NULL;
    }
    c = strcmp(key, n->b->key);
    if (c < 0) {
        n->left = node_delete(n->left, key, out);
        if (n->left != NULL) {
            n->left->parent = n;
        }
    } else if (c > 0) {
        n->right = node_delete(n->right, key, out);
        if (n->right != NULL) {
            n->right->parent = n;
        }
    } else {
        *out = n->b;
        if (n->left == NULL || n->right == NULL) {
            struct store_node *child = n->left != NULL ? n->left : n->right;

            free(n);
            return child;
        }
        /* Two children: the successor's blob moves into this node. */
        n->right = node_delete_min(n->right, &n->b);
        if (n->right != NULL) {
            n->right->parent = n;
        }
    }
    return rebalance(n);
}

int store_del(struct store *st, const char *key, struct blob **old)
{
    struct blob *gone = NULL;

    st->root = node_delete(st->root, key, &gone);
    if (st->root != NULL) {
        st->root->parent = NULL;
    }
    if (gone == NULL) {
        if (old != NULL) {
            *old = NULL;
        }
        return -ENOENT;
    }
    st->len--;
    st->bytes -= gone->len;
    if (old != NULL) {
        *old = gone;
    } else {
        blob_unref(gone);
    }
    return 0;
}

/* ---- lookup and iteration ---------------------------------------------------------------- */

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

size_t store_len(const struct store *st)
{
    return st->len;
}

size_t store_bytes(const struct store *st)
{
    return st->bytes;
}

struct blob *store_seek(const struct store *st, const char *after, struct store_iter *it)
{
    struct store_node *n = st->root;
    struct store_node *best = NULL;

    it->st = st;
    if (after == NULL || after[0] == '\0') {
        /* "" sorts before every key (names are non-empty), so this is the minimum. */
        while (n != NULL && n->left != NULL) {
            n = n->left;
        }
        it->node = n;
        return n != NULL ? n->b : NULL;
    }
    while (n != NULL) {
        if (strcmp(n->b->key, after) > 0) {
            best = n;
            n = n->left;
        } else {
            n = n->right;
        }
    }
    it->node = best;
    return best != NULL ? best->b : NULL;
}

/* In-order successor: leftmost of the right subtree, or the first ancestor we are left of. */
struct blob *store_next(struct store_iter *it)
{
    struct store_node *n = it->node;

    if (n == NULL) {
        return NULL;
    }
    if (n->right != NULL) {
        n = n->right;
        while (n->left != NULL) {
            n = n->left;
        }
    } else {
        while (n->parent != NULL && n == n->parent->right) {
            n = n->parent;
        }
        n = n->parent;
    }
    it->node = n;
    return n != NULL ? n->b : NULL;
}
