/*
 * test_store.c - the ordered key -> blob map: strcmp order, seek/next against a sorted
 * reference on 10k random keys, 100k keys in and out, reference counting and byte totals,
 * and the persistent tree: versions forked along 30k random puts/dels each still equal to
 * their own state at the end (iteration, rank, select, get, bytes), with the AVL, size and
 * refcount invariants checked white-box on every version (hence store.c is included).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/blob.h"
#include "cache/store.c" /* white-box: the node invariants of every version */

static struct blob *mk(const char *ns, const char *name, size_t len)
{
    static const char pad[64] = {0};

    return blob_new(pad, len % sizeof(pad), &(struct blob_meta){.ns = ns, .name = name});
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Index of the first reference key strictly greater than <after>. */
static size_t ref_upper(char **keys, size_t n, const char *after)
{
    size_t i = 0;

    while (i < n && strcmp(keys[i], after) <= 0) {
        i++;
    }
    return i;
}

Test(store, empty)
{
    struct store *st = store_new();
    struct store_iter it;
    struct blob *old = (struct blob *)1;

    cr_assert_eq(store_len(st), 0);
    cr_assert_eq(store_bytes(st), 0);
    cr_assert_null(store_seek(st, NULL, &it));
    cr_assert_null(store_next(&it));
    cr_assert_null(store_get(st, "a"));
    cr_assert_eq(store_del(st, "a", &old), -ENOENT);
    cr_assert_null(old);
    store_free(st);
    store_free(NULL);
}

Test(store, put_replace_del_and_refs)
{
    struct store *st = store_new();
    struct blob *a1 = mk("ns", "a", 10);
    struct blob *a2 = mk("ns", "a", 20);
    struct blob *old = NULL;

    store_put(st, a1, &old);
    cr_assert_null(old);
    cr_assert_eq(atomic_load(&a1->ref), 2);
    cr_assert_eq(store_bytes(st), 10);
    store_put(st, a2, &old);
    cr_assert_eq(old, a1); /* the store's reference moved to us */
    cr_assert_eq(atomic_load(&a1->ref), 2);
    blob_unref(old);
    cr_assert_eq(store_len(st), 1);
    cr_assert_eq(store_bytes(st), 20);
    cr_assert_eq(store_get(st, "ns/a"), a2);
    store_put(st, a1, NULL); /* replaced blob unref'd by the store */
    cr_assert_eq(atomic_load(&a2->ref), 1);
    cr_assert_eq(store_del(st, "ns/a", NULL), 0);
    cr_assert_eq(atomic_load(&a1->ref), 1);
    cr_assert_eq(store_len(st), 0);
    cr_assert_eq(store_bytes(st), 0);
    store_put(st, a1, NULL);
    store_free(st);
    cr_assert_eq(atomic_load(&a1->ref), 1);
    blob_unref(a1);
    blob_unref(a2);
}

Test(store, strcmp_byte_order)
{
    const char *names[] = {"b", "a-1", "a", "A", "a/b", "aa", "a0"};
    struct store *st = store_new();
    struct store_iter it;
    const char *prev = NULL;
    size_t n = 0;

    for (size_t i = 0; i < 7; i++) {
        struct blob *b = mk("", names[i], 1);

        store_put(st, b, NULL);
        blob_unref(b);
    }
    for (struct blob *b = store_seek(st, "", &it); b != NULL; b = store_next(&it)) {
        if (prev != NULL) {
            cr_assert_lt(strcmp(prev, b->key), 0, "%s !< %s", prev, b->key);
        }
        prev = b->key;
        n++;
    }
    cr_assert_eq(n, 7);
    cr_assert_str_eq(store_seek(st, NULL, &it)->key, "A");
    cr_assert_str_eq(store_seek(st, "a", &it)->key, "a-1");
    cr_assert_str_eq(store_seek(st, "a/", &it)->key, "a/b");
    cr_assert_null(store_seek(st, "b", &it));
    cr_assert_null(store_seek(st, "zzz", &it));
    store_free(st);
}

Test(store, random_10k_matches_sorted_reference)
{
    enum { N = 10000 };
    char **keys = calloc(N, sizeof(*keys));
    char **live = calloc(N, sizeof(*live));
    bool *gone = calloc(N, sizeof(*gone));
    struct store *st = store_new();
    struct store_iter it;
    size_t n_live = 0;
    size_t bytes = 0;

    srand(1234);
    for (size_t i = 0; i < N; i++) {
        char ns[8];
        char name[24];
        struct blob *b;

        snprintf(ns, sizeof(ns), "ns%d", rand() % 5);
        snprintf(name, sizeof(name), "p-%08x-%zu", (unsigned)rand(), i);
        b = mk(ns, name, i);
        keys[i] = strdup(b->key);
        store_put(st, b, NULL);
        blob_unref(b);
    }
    /* Delete a random third. */
    for (size_t i = 0; i < N; i++) {
        if (rand() % 3 == 0) {
            cr_assert_eq(store_del(st, keys[i], NULL), 0);
            gone[i] = true;
        } else {
            live[n_live++] = keys[i];
            bytes += i % 64;
        }
    }
    qsort(live, n_live, sizeof(*live), cmp_str);
    cr_assert_eq(store_len(st), n_live);
    cr_assert_eq(store_bytes(st), bytes);

    /* Full iteration equals the sorted reference. */
    {
        size_t i = 0;

        for (struct blob *b = store_seek(st, NULL, &it); b != NULL; b = store_next(&it)) {
            cr_assert_lt(i, n_live);
            cr_assert_str_eq(b->key, live[i]);
            i++;
        }
        cr_assert_eq(i, n_live);
    }
    /* Seek from existing, deleted and made-up keys; then read a page of 50. */
    for (int probe = 0; probe < 2000; probe++) {
        char made[32];
        const char *after;
        size_t want;
        struct blob *b;

        switch (probe % 3) {
        case 0:
            after = keys[rand() % N];
            break;
        case 1:
            snprintf(made, sizeof(made), "ns%d/p-%08x", rand() % 6, (unsigned)rand());
            after = made;
            break;
        default:
            snprintf(made, sizeof(made), "ns%d", rand() % 6);
            after = made;
            break;
        }
        want = ref_upper(live, n_live, after);
        b = store_seek(st, after, &it);
        for (int k = 0; k < 50; k++) {
            if (want + (size_t)k >= n_live) {
                cr_assert_null(b, "after %s", after);
                break;
            }
            cr_assert_not_null(b);
            cr_assert_str_eq(b->key, live[want + (size_t)k]);
            b = store_next(&it);
        }
    }
    for (size_t i = 0; i < N; i++) {
        cr_assert_eq(store_get(st, keys[i]) == NULL, gone[i]);
        free(keys[i]);
    }
    store_free(st);
    free(keys);
    free(live);
    free(gone);
}

Test(store, handles_100k_keys_in_and_out)
{
    enum { N = 100000 };
    struct blob **bs = malloc(N * sizeof(*bs));
    size_t *order = malloc(N * sizeof(*order));
    struct store *st = store_new();
    struct store_iter it;
    const char *prev = NULL;
    size_t n = 0;

    srand(99);
    for (size_t i = 0; i < N; i++) {
        char name[16];

        snprintf(name, sizeof(name), "o%07zu", (i * 7919) % N);
        bs[i] = mk("default", name, 1);
        order[i] = i;
        store_put(st, bs[i], NULL);
    }
    cr_assert_eq(store_len(st), N);
    for (struct blob *b = store_seek(st, NULL, &it); b != NULL; b = store_next(&it)) {
        if (prev != NULL) {
            cr_assert_lt(strcmp(prev, b->key), 0);
        }
        prev = b->key;
        n++;
    }
    cr_assert_eq(n, N);
    /* Shuffle, then delete everything in that order. */
    for (size_t i = N - 1; i > 0; i--) {
        size_t j = (size_t)rand() % (i + 1);
        size_t t = order[i];

        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < N; i++) {
        struct blob *old = NULL;

        cr_assert_eq(store_del(st, bs[order[i]]->key, &old), 0);
        cr_assert_eq(old, bs[order[i]]);
        blob_unref(old);
        if (i % 10007 == 0) {
            cr_assert_eq(store_len(st), N - i - 1);
            cr_assert_null(store_get(st, bs[order[i]]->key));
        }
    }
    cr_assert_eq(store_len(st), 0);
    cr_assert_null(store_seek(st, NULL, &it));
    store_free(st);
    for (size_t i = 0; i < N; i++) {
        cr_assert_eq(atomic_load(&bs[i]->ref), 1);
        blob_unref(bs[i]);
    }
    free(bs);
    free(order);
}

Test(store, clear_drops_everything)
{
    struct store *st = store_new();
    struct blob *a = mk("x", "a", 3);
    struct blob *b = mk("x", "b", 4);
    struct store_iter it;

    store_put(st, a, NULL);
    store_put(st, b, NULL);
    store_clear(st);
    cr_assert_eq(store_len(st), 0);
    cr_assert_eq(store_bytes(st), 0);
    cr_assert_null(store_seek(st, NULL, &it));
    cr_assert_eq(atomic_load(&a->ref), 1);
    cr_assert_eq(atomic_load(&b->ref), 1);
    store_put(st, b, NULL); /* still usable */
    cr_assert_eq(store_get(st, "x/b"), b);
    store_free(st);
    blob_unref(a);
    blob_unref(b);
}

/* Sorted inserts degenerate an unbalanced tree into a 200k-deep list: quadratic time and a
 * recursion deep enough to overflow the stack. A balanced tree does this in milliseconds. */
Test(store, sorted_inserts_stay_balanced, .timeout = 20)
{
    enum { N = 200000 };
    struct store *st = store_new();
    struct store_iter it;
    size_t n = 0;

    for (size_t i = 0; i < N; i++) {
        char name[16];
        struct blob *b;

        snprintf(name, sizeof(name), "k%08zu", i);
        b = mk("", name, 0);
        store_put(st, b, NULL);
        blob_unref(b);
    }
    for (struct blob *b = store_seek(st, "k00100000", &it); b != NULL; b = store_next(&it)) {
        n++;
    }
    cr_assert_eq(n, N - 100001);
    for (size_t i = 0; i < N; i += 2) {
        char key[16];

        snprintf(key, sizeof(key), "k%08zu", i);
        cr_assert_eq(store_del(st, key, NULL), 0);
    }
    cr_assert_eq(store_len(st), N / 2);
    cr_assert_str_eq(store_seek(st, NULL, &it)->key, "k00000001");
    store_free(st);
}

/* ---- persistence ------------------------------------------------------------------------- */

/*
 * Walks one version: keys strictly between <lo> and <hi> (NULL = unbounded), heights and
 * sizes as stored, |balance| <= 1, every refcount >= 1. Returns the height; adds the nodes
 * to *<count>.
 */
static int check_tree(const struct store_node *n, const char *lo, const char *hi, size_t *count)
{
    int hl, hr;

    if (n == NULL) {
        return 0;
    }
    cr_assert_geq(atomic_load(&n->ref), 1);
    cr_assert(lo == NULL || strcmp(lo, n->b->key) < 0, "order: %s !< %s", lo, n->b->key);
    cr_assert(hi == NULL || strcmp(n->b->key, hi) < 0, "order: %s !< %s", n->b->key, hi);
    hl = check_tree(n->left, lo, n->b->key, count);
    hr = check_tree(n->right, n->b->key, hi, count);
    cr_assert_leq(abs(hl - hr), 1, "unbalanced at %s", n->b->key);
    cr_assert_eq(n->height, (hl > hr ? hl : hr) + 1, "height at %s", n->b->key);
    cr_assert_eq(n->size, size(n->left) + size(n->right) + 1, "size at %s", n->b->key);
    (*count)++;
    return n->height;
}

enum { PKEYS = 3000, POPS = 30000, PEVERY = 250, PVERSIONS = POPS / PEVERY + 1 };

/* Key i sorts at position i: "nNN/oNNNNN". */
static void pkey(int i, char *ns, char *name)
{
    snprintf(ns, 8, "n%02d", i / 300);
    snprintf(name, 16, "o%05d", i);
}

struct pversion {
    struct store *st;
    struct blob **row; /* the expected blob per key index, NULL = absent */
    size_t bytes;
};

/* <st> holds exactly <row>: by iteration, index, rank, lookup and seek, and is a valid tree. */
static void check_version(const struct store *st, struct blob *const *row, size_t bytes)
{
    struct store_iter it, probe;
    struct blob *b = store_seek(st, NULL, &it);
    size_t j = 0, nodes = 0;

    check_tree(st->root, NULL, NULL, &nodes);
    cr_assert_eq(nodes, store_len(st));
    for (int i = 0; i < PKEYS; i++) {
        char ns[8], name[16], key[32];

        pkey(i, ns, name);
        snprintf(key, sizeof(key), "%s/%s", ns, name);
        cr_assert_eq(store_get(st, key), row[i], "get %s", key);
        cr_assert_eq(store_rank(st, key), j + (row[i] != NULL), "rank %s", key);
        if (row[i] == NULL) {
            /* seeking from an absent key lands on the next present one */
            cr_assert_eq(store_seek(st, key, &probe), store_at(st, j), "seek %s", key);
            continue;
        }
        cr_assert_eq(b, row[i], "iteration at %s", key);
        cr_assert_eq(store_at(st, j), row[i], "select %zu", j);
        b = store_next(&it);
        j++;
    }
    cr_assert_null(b);
    cr_assert_eq(j, store_len(st));
    cr_assert_null(store_at(st, j));
    cr_assert_eq(store_bytes(st), bytes);
}

static void pversion_drop(struct pversion *v)
{
    store_free(v->st);
    free(v->row);
    v->st = NULL;
    v->row = NULL;
}

Test(store, versions_keep_their_state_under_random_writes, .timeout = 120)
{
    struct blob **cur = calloc(PKEYS, sizeof(*cur));
    struct blob **made = calloc(POPS, sizeof(*made));
    struct pversion *vs = calloc(PVERSIONS, sizeof(*vs));
    struct store *st = store_new();
    size_t n_made = 0, n_vs = 0, bytes = 0;

    srand(4242);
    for (int op = 1; op <= POPS; op++) {
        int i = rand() % PKEYS;
        char ns[8], name[16], key[32];

        pkey(i, ns, name);
        if (rand() % 5 < 3) {
            struct blob *b = mk(ns, name, (size_t)rand());
            struct blob *old = NULL;

            made[n_made++] = b;
            store_put(st, b, &old);
            cr_assert_eq(old, cur[i]);
            blob_unref(old);
            bytes = bytes + b->len - (cur[i] != NULL ? cur[i]->len : 0);
            cur[i] = b;
        } else {
            snprintf(key, sizeof(key), "%s/%s", ns, name);
            cr_assert_eq(store_del(st, key, NULL), cur[i] != NULL ? 0 : -ENOENT);
            bytes -= cur[i] != NULL ? cur[i]->len : 0;
            cur[i] = NULL;
        }
        if (op % PEVERY != 0) {
            continue;
        }
        /* Fork a version of the state now; now and then check and drop an older one, so
         * versions die in the middle of the chain too. */
        check_version(st, cur, bytes);
        vs[n_vs].st = store_fork(st);
        vs[n_vs].row = malloc(PKEYS * sizeof(*cur));
        memcpy(vs[n_vs].row, cur, PKEYS * sizeof(*cur));
        vs[n_vs].bytes = bytes;
        n_vs++;
        if (rand() % 3 == 0) {
            struct pversion *v = &vs[(size_t)rand() % n_vs];

            if (v->st != NULL) {
                check_version(v->st, v->row, v->bytes);
                pversion_drop(v);
            }
        }
    }
    cr_assert_eq(n_vs, POPS / PEVERY);
    for (size_t k = 0; k < n_vs; k++) {
        if (vs[k].st != NULL) {
            check_version(vs[k].st, vs[k].row, vs[k].bytes);
            pversion_drop(&vs[k]);
        }
    }
    check_version(st, cur, bytes);
    store_free(st);
    for (size_t k = 0; k < n_made; k++) {
        cr_assert_eq(atomic_load(&made[k]->ref), 1, "blob %zu leaked or over-released", k);
        blob_unref(made[k]);
    }
    free(vs);
    free(made);
    free(cur);
}

/* A fork costs no copy: the first write after it copies only its path, and writes to a
 * store nobody shares copy nothing. */
Test(store, fork_is_o1_and_writes_copy_only_their_path)
{
    enum { N = 4096 };
    struct store *st = store_new();
    struct store *f;
    struct blob *b;
    const struct store_node *before;
    size_t nodes = 0;

    for (size_t i = 0; i < N; i++) {
        char name[16];

        snprintf(name, sizeof(name), "o%05zu", i);
        b = mk("d", name, 1);
        store_put(st, b, NULL);
        blob_unref(b);
    }
    before = st->root;
    b = mk("d", "o00000", 2);
    store_put(st, b, NULL); /* unshared: in place */
    cr_assert_eq(st->root, before);
    f = store_fork(st);
    cr_assert_eq(f->root, st->root);
    cr_assert_eq(atomic_load(&st->root->ref), 2);
    store_put(st, b, NULL); /* shared: the path to o00000 is copied, nothing else */
    cr_assert_neq(st->root, f->root);
    cr_assert_eq(atomic_load(&f->root->ref), 1);
    /* the right subtree of the root is off the path: still one node, shared */
    cr_assert_eq(st->root->right, f->root->right);
    cr_assert_eq(atomic_load(&f->root->right->ref), 2);
    check_tree(f->root, NULL, NULL, &nodes);
    cr_assert_eq(nodes, N);
    blob_unref(b);
    store_free(f);
    cr_assert_eq(atomic_load(&st->root->right->ref), 1);
    store_free(st);
}
