/*
 * test_snapshot.c - the refcounted key-ordered list: append takes references, the last
 * unref drops them, the array grows past its initial capacity, seek is an upper bound.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "cache/blob.h"
#include "cache/snapshot.h"

static struct blob *mk(const char *name, size_t len)
{
    static const char pad[32] = {0};

    return blob_new(pad, len, &(struct blob_meta){.ns = "ns", .name = name});
}

Test(snapshot, append_takes_refs_and_counts_bytes)
{
    struct snapshot *s = snapshot_new(2, 77);
    struct blob *a = mk("a", 5);
    struct blob *b = mk("b", 7);

    cr_assert_eq(s->rv, 77);
    cr_assert_eq(s->len, 0);
    snapshot_append(s, a);
    snapshot_append(s, b);
    cr_assert_eq(s->len, 2);
    cr_assert_eq(s->bytes, 12);
    cr_assert_eq(s->items[0], a);
    cr_assert_eq(s->items[1], b);
    cr_assert_eq(atomic_load(&a->ref), 2);
    cr_assert_eq(snapshot_ref(s), s);
    snapshot_unref(s);
    cr_assert_eq(atomic_load(&a->ref), 2); /* one reference left on s */
    snapshot_unref(s);
    cr_assert_eq(atomic_load(&a->ref), 1);
    cr_assert_eq(atomic_load(&b->ref), 1);
    snapshot_unref(NULL);
    cr_assert_null(snapshot_ref(NULL));
    blob_unref(a);
    blob_unref(b);
}

Test(snapshot, grows_past_initial_cap)
{
    struct snapshot *s = snapshot_new(0, 1);
    struct blob *bs[100];

    for (size_t i = 0; i < 100; i++) {
        char name[8];

        snprintf(name, sizeof(name), "k%03zu", i);
        bs[i] = mk(name, i % 32);
        snapshot_append(s, bs[i]);
    }
    cr_assert_eq(s->len, 100);
    for (size_t i = 0; i < 100; i++) {
        cr_assert_eq(s->items[i], bs[i]);
        blob_unref(bs[i]);
    }
    snapshot_unref(s);
}

Test(snapshot, seek_is_first_key_greater)
{
    const char *names[] = {"a", "b", "bb", "c", "d"}; /* keys "ns/a" ... */
    struct snapshot *s = snapshot_new(5, 1);
    struct snapshot *e = snapshot_new(0, 1);
    const char *probes[] = {"",      "ns/",  "ns/a", "ns/a0", "ns/b", "ns/ba",
                            "ns/bb", "ns/c", "ns/d", "ns/e",  "a",    "zz"};

    for (size_t i = 0; i < 5; i++) {
        struct blob *b = mk(names[i], 1);

        snapshot_append(s, b);
        blob_unref(b);
    }
    cr_assert_eq(snapshot_seek(s, NULL), 0);
    for (size_t p = 0; p < sizeof(probes) / sizeof(probes[0]); p++) {
        size_t want = 0;

        while (want < s->len && strcmp(s->items[want]->key, probes[p]) <= 0) {
            want++;
        }
        cr_assert_eq(snapshot_seek(s, probes[p]), want, "probe %s", probes[p]);
    }
    cr_assert_eq(snapshot_seek(s, "ns/b"), 2);
    cr_assert_eq(snapshot_seek(s, "ns/d"), 5);
    cr_assert_eq(snapshot_seek(e, "x"), 0);
    snapshot_unref(s);
    snapshot_unref(e);
}
