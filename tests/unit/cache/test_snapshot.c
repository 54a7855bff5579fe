/*
 * test_snapshot.c - a version of the store: it pins its blobs until the last unref, keeps
 * its state while the store it was forked from changes, and seek/next/rank/at agree with
 * the key order.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "cache/blob.h"
#include "cache/snapshot.h"
#include "cache/store.h"

static struct blob *mk(const char *name, size_t len)
{
    static const char pad[32] = {0};

    return blob_new(pad, len, &(struct blob_meta){.ns = "ns", .name = name});
}

Test(snapshot, pins_blobs_and_counts_bytes)
{
    struct store *st = store_new();
    struct blob *a = mk("a", 3);
    struct blob *b = mk("b", 4);
    struct snapshot *s;

    store_put(st, a, NULL);
    store_put(st, b, NULL);
    s = snapshot_new(store_fork(st), 77);
    cr_assert_eq(s->rv, 77);
    cr_assert_eq(s->len, 2);
    cr_assert_eq(s->bytes, 7);
    store_free(st); /* the snapshot alone keeps the version */
    cr_assert_eq(atomic_load(&a->ref), 2);
    cr_assert_eq(snapshot_at(s, 0), a);
    cr_assert_eq(snapshot_at(s, 1), b);
    cr_assert_eq(snapshot_ref(s), s);
    snapshot_unref(s);
    cr_assert_eq(atomic_load(&a->ref), 2);
    snapshot_unref(s);
    cr_assert_eq(atomic_load(&a->ref), 1);
    cr_assert_eq(atomic_load(&b->ref), 1);
    snapshot_unref(NULL);
    cr_assert_null(snapshot_ref(NULL));
    blob_unref(a);
    blob_unref(b);
}

Test(snapshot, keeps_its_state_while_the_store_changes)
{
    struct store *st = store_new();
    struct blob *bs[6];
    struct snapshot *s;
    struct store_iter it;
    size_t n = 0;

    for (int i = 0; i < 6; i++) {
        char name[8];

        snprintf(name, sizeof(name), "k%d", i);
        bs[i] = mk(name, 1);
        if (i < 4) {
            store_put(st, bs[i], NULL);
        }
    }
    s = snapshot_new(store_fork(st), 1);
    store_del(st, "ns/k0", NULL);
    store_put(st, bs[4], NULL);
    store_put(st, bs[5], NULL);
    store_put(st, bs[1], NULL); /* same key, same blob: still a write */
    cr_assert_eq(store_len(st), 5);
    cr_assert_eq(s->len, 4);
    for (struct blob *b = snapshot_seek(s, NULL, &it); b != NULL; b = snapshot_next(&it)) {
        cr_assert_eq(b, bs[n], "item %zu", n);
        n++;
    }
    cr_assert_eq(n, 4);
    snapshot_unref(s);
    store_free(st);
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(atomic_load(&bs[i]->ref), 1);
        blob_unref(bs[i]);
    }
}

Test(snapshot, seek_rank_and_at_agree)
{
    const char *names[] = {"a", "b", "b-1", "c", "d"};
    const char *probes[] = {"", "ns/", "ns/a", "ns/a0", "ns/b", "ns/b-", "ns/c", "ns/d", "nt"};
    struct store *st = store_new();
    struct store *empty = store_new();
    struct snapshot *s;
    struct snapshot *e;
    struct store_iter it;

    for (int i = 0; i < 5; i++) {
        struct blob *b = mk(names[i], 1);

        store_put(st, b, NULL);
        blob_unref(b);
    }
    s = snapshot_new(st, 1);
    e = snapshot_new(empty, 1);
    cr_assert_eq(snapshot_rank(s, NULL), 0);
    cr_assert_str_eq(snapshot_seek(s, NULL, &it)->key, "ns/a");
    for (size_t p = 0; p < sizeof(probes) / sizeof(probes[0]); p++) {
        size_t want = 0;
        struct blob *b;

        while (want < s->len && strcmp(snapshot_at(s, want)->key, probes[p]) <= 0) {
            want++;
        }
        cr_assert_eq(snapshot_rank(s, probes[p]), want, "probe %s", probes[p]);
        b = snapshot_seek(s, probes[p], &it);
        cr_assert_eq(b, snapshot_at(s, want), "probe %s", probes[p]);
    }
    cr_assert_eq(snapshot_rank(s, "ns/b"), 2);
    cr_assert_eq(snapshot_rank(s, "ns/d"), 5);
    cr_assert_null(snapshot_at(s, 5));
    cr_assert_eq(snapshot_rank(e, "x"), 0);
    cr_assert_null(snapshot_seek(e, NULL, &it));
    cr_assert_null(snapshot_at(e, 0));
    snapshot_unref(s);
    snapshot_unref(e);
}
