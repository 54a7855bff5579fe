/*
 * test_blob.c - blob_new copies everything into one allocation (keys interned on first
 * sight, values and namespaces on their second, values equal to the namespace or name
 * shared), derives key and rv, sorts labels and fields for binary search, and counts
 * references. Each Test runs in its own process, so each starts with empty intern tables.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cache/blob.h"

static const char obj[] = "{\"metadata\":{\"name\":\"p1\",\"namespace\":\"ns1\","
                          "\"resourceVersion\":\"42\"}}";

/* True when [p, p+n) lies inside the blob's own allocation. */
static bool inside(const struct blob *b, const void *p, size_t n)
{
    const char *lo = (const char *)b;

    return (const char *)p >= lo && (const char *)p + n <= lo + blob_footprint(b);
}

static struct blob_kv label_at(const struct blob *b, size_t i)
{
    struct blob_kv kv = {NULL, NULL};

    cr_assert(blob_label_at(b, i, &kv), "label %zu of %u", i, b->n_labels);
    return kv;
}

static struct blob_kv field_at(const struct blob *b, size_t i)
{
    struct blob_kv kv = {NULL, NULL};

    cr_assert(blob_field_at(b, i, &kv), "field %zu of %u", i, b->n_fields);
    return kv;
}

/* A blob named "a" with the one label <key>=<val>. */
static struct blob *one_label(const char *key, const char *val)
{
    struct blob_kv kv[1] = {{key, val}};
    struct blob *b =
        blob_new("{}", 2, &(struct blob_meta){.name = "a", .labels = kv, .n_labels = 1});

    cr_assert_not_null(b);
    return b;
}

/* Fills <buf> with <cap> - 1 copies of <c> and a NUL. */
static char *repeat(char *buf, size_t cap, char c)
{
    memset(buf, c, cap - 1);
    buf[cap - 1] = '\0';
    return buf;
}

Test(blob, copies_data_and_derives_key)
{
    char data[sizeof(obj)];
    char ns[] = "ns1";
    char name[] = "p1";
    char rv[] = "42";
    const char *rvpos = strstr(obj, "42");
    struct blob_meta m = {
        .ns = ns, .name = name, .rv_str = rv, .rv_off = (size_t)(rvpos - obj), .rv_len = 2};
    struct blob *b;

    memcpy(data, obj, sizeof(obj));
    b = blob_new(data, sizeof(obj) - 1, &m);
    cr_assert_not_null(b);
    /* Scribble over every input: the blob must not point into them. */
    memset(data, 'x', sizeof(data));
    ns[0] = name[0] = rv[0] = 'Z';
    cr_assert_eq(b->len, sizeof(obj) - 1);
    cr_assert_str_eq(b->data, obj);
    cr_assert_eq(b->data[b->len], '\0');
    cr_assert_str_eq(b->key, "ns1/p1");
    cr_assert_str_eq(b->ns, "ns1");
    cr_assert_str_eq(b->name, "p1");
    cr_assert_str_eq(b->rv_str, "42");
    cr_assert_eq(b->rv, 42);
    cr_assert_eq(b->rv_len, 2);
    cr_assert_eq(strncmp(b->data + b->rv_off, "42", 2), 0);
    cr_assert(inside(b, b->data, b->len + 1));
    cr_assert(inside(b, b->key, strlen(b->key) + 1));
    cr_assert(inside(b, b->rv_str, strlen(b->rv_str) + 1));
    blob_unref(b);
}

Test(blob, cluster_scoped_key_is_name)
{
    struct blob *a = blob_new("{}", 2, &(struct blob_meta){.ns = NULL, .name = "n1"});
    struct blob *c = blob_new("{}", 2, &(struct blob_meta){.ns = "", .name = "n2"});

    cr_assert_str_eq(a->key, "n1");
    cr_assert_str_eq(a->ns, "");
    cr_assert_str_eq(c->key, "n2");
    cr_assert_str_eq(a->rv_str, "");
    cr_assert_eq(a->rv, 0);
    blob_unref(a);
    blob_unref(c);
}

Test(blob, invalid_meta_returns_null)
{
    struct blob_kv nokey[] = {{.key = NULL, .val = "v"}};

    cr_expect_null(blob_new("{}", 2, NULL));
    cr_expect_null(blob_new("{}", 2, &(struct blob_meta){.name = NULL}));
    cr_expect_null(blob_new("{}", 2, &(struct blob_meta){.name = ""}));
    cr_expect_null(blob_new("{}", 2, &(struct blob_meta){.name = "a", .rv_off = 1, .rv_len = 2}));
    cr_expect_null(
        blob_new("{}", 2, &(struct blob_meta){.name = "a", .labels = nokey, .n_labels = 1}));
    cr_expect_null(blob_new(NULL, 2, &(struct blob_meta){.name = "a"}));
}

Test(blob, unparsable_rv_is_zero_but_kept_verbatim)
{
    struct blob *b = blob_new("{}", 2, &(struct blob_meta){.name = "a", .rv_str = "12x"});

    cr_assert_eq(b->rv, 0);
    cr_assert_str_eq(b->rv_str, "12x");
    blob_unref(b);
}

Test(blob, labels_and_fields_sorted_and_found)
{
    struct blob_kv labels[] = {{"zeta", "1"}, {"app", "web"}, {"mid", NULL}, {"b", "2"}};
    struct blob_kv fields[] = {
        {"spec.nodeName", "n1"}, {"metadata.name", "p"}, {"status.phase", "Running"}};
    struct blob_meta m = {
        .name = "p", .labels = labels, .n_labels = 4, .fields = fields, .n_fields = 3};
    struct blob *b = blob_new("{}", 2, &m);

    cr_assert_eq(b->n_labels, 4);
    cr_assert_eq(b->n_fields, 3);
    for (size_t i = 1; i < b->n_labels; i++) {
        cr_assert_lt(strcmp(label_at(b, i - 1).key, label_at(b, i).key), 0);
    }
    for (size_t i = 1; i < b->n_fields; i++) {
        cr_assert_lt(strcmp(field_at(b, i - 1).key, field_at(b, i).key), 0);
    }
    cr_assert_str_eq(label_at(b, 0).key, "app");
    cr_assert_str_eq(label_at(b, 0).val, "web");
    cr_assert_str_eq(field_at(b, 2).key, "status.phase");
    cr_assert_str_eq(field_at(b, 2).val, "Running");
    cr_assert_str_eq(blob_label(b, "app"), "web");
    cr_assert_str_eq(blob_label(b, "zeta"), "1");
    cr_assert_str_eq(blob_label(b, "b"), "2");
    cr_assert_str_eq(blob_label(b, "mid"), "");
    cr_assert_null(blob_label(b, "nope"));
    cr_assert_null(blob_label(b, "spec.nodeName"));
    cr_assert_str_eq(blob_field(b, "spec.nodeName"), "n1");
    cr_assert_str_eq(blob_field(b, "status.phase"), "Running");
    cr_assert_null(blob_field(b, "app"));
    for (size_t i = 0; i < b->n_labels; i++) {
        const char *val = label_at(b, i).val;

        /* values seen once are copied, except "" (one shared string) */
        cr_assert(val[0] == '\0' || inside(b, val, strlen(val) + 1));
    }
    {
        struct blob_kv kv = {"untouched", "untouched"};

        cr_assert_not(blob_label_at(b, 4, &kv));
        cr_assert_not(blob_field_at(b, 3, &kv));
        cr_assert_str_eq(kv.key, "untouched");
    }
    /* Not pointing at the caller's strings. */
    cr_assert_neq(blob_label(b, "app"), labels[1].val);
    blob_unref(b);
}

Test(blob, no_labels_lookup_is_null)
{
    struct blob *b = blob_new("", 0, &(struct blob_meta){.name = "a"});

    cr_assert_null(blob_label(b, "x"));
    cr_assert_null(blob_field(b, "x"));
    cr_assert_str_eq(b->data, "");
    blob_unref(b);
}

Test(blob, footprint_covers_everything)
{
    struct blob_kv labels[] = {{"k", "v"}};
    struct blob *b =
        blob_new(obj, sizeof(obj) - 1,
                 &(struct blob_meta){
                     .ns = "ns1", .name = "p1", .rv_str = "42", .labels = labels, .n_labels = 1});
    /* header, one 8-byte pair of references (padded to 16), data + NUL, then "ns1/p1", "ns1"
     * and the value "v" (both seen for the first time, so copied; the key is interned), "42" */
    size_t want = 96 + b->len + 1 + strlen("ns1/p1") + 1 + 4 + 2 + 3;

    cr_assert_eq(sizeof(struct blob), 80);
    cr_assert_eq(blob_footprint(b), want);
    /* the JSON is as aligned as malloc's block: LISTs copy it */
    cr_assert_eq(b->data, (const char *)b + 96);
    cr_assert_eq((uintptr_t)b->data % 16, 0);
    cr_assert(inside(b, b->ns, 4));
    cr_assert(inside(b, blob_label(b, "k"), 2));
    blob_unref(b);
}

/* What the store pays per pod beyond its JSON: keys are shared by every blob; values and
 * the namespace are copied the first time they are seen and shared from the second on; values
 * equal to the namespace or name are not copied again. */
Test(blob, keys_interned_values_shared_from_second_sight)
{
    char key[] = "spec.serviceAccountName";
    char web[] = "web";
    char ns[] = "ns1";
    struct blob_kv fields[] = {{key, "ns1"}, {"spec.nodeName", "n1"}, {"metadata.name", "p1"}};
    struct blob_kv labels[] = {{"app", web}, {"empty", ""}};
    struct blob_meta m = {
        .ns = ns, .name = "p1", .labels = labels, .n_labels = 2, .fields = fields, .n_fields = 3};
    struct blob *a = blob_new("{}", 2, &m);
    struct blob *b;
    struct blob *c;

    m.name = "p2";
    fields[2].val = "p2";
    b = blob_new("{}", 2, &m);
    m.name = "p3";
    fields[2].val = "p3";
    c = blob_new("{}", 2, &m);
    /* the blobs must hold their own (interned or copied) strings */
    memset(key, 'x', sizeof(key) - 1);
    memset(web, 'x', sizeof(web) - 1);
    memset(ns, 'x', sizeof(ns) - 1);

    /* first sight: the namespace and the values are copied into a */
    cr_assert_str_eq(a->ns, "ns1");
    cr_assert(inside(a, a->ns, 4));
    cr_assert(inside(a, blob_label(a, "app"), 4));
    cr_assert(inside(a, blob_field(a, "spec.nodeName"), 3));
    /* second sight: shared, and the same string for every later blob */
    cr_assert_str_eq(b->ns, "ns1");
    cr_assert_not(inside(b, b->ns, 1));
    cr_assert_eq(c->ns, b->ns);
    cr_assert_str_eq(blob_label(b, "app"), "web");
    cr_assert_not(inside(b, blob_label(b, "app"), 1));
    cr_assert_eq(blob_label(c, "app"), blob_label(b, "app"));
    cr_assert_eq(blob_field(c, "spec.nodeName"), blob_field(b, "spec.nodeName"));
    cr_assert_str_eq(blob_field(c, "spec.nodeName"), "n1");
    /* a value equal to the namespace or the name is that string */
    cr_assert_eq(blob_field(a, "spec.serviceAccountName"), a->ns);
    cr_assert_eq(blob_field(b, "spec.serviceAccountName"), b->ns);
    cr_assert_str_eq(blob_field(b, "spec.serviceAccountName"), "ns1");
    cr_assert_eq(blob_field(a, "metadata.name"), a->name);
    cr_assert_eq(blob_field(c, "metadata.name"), c->name);
    cr_assert_str_eq(blob_field(c, "metadata.name"), "p3");
    cr_assert(inside(c, c->name, 3));
    /* "" is one string for everyone, and is not absent */
    cr_assert_str_eq(blob_label(a, "empty"), "");
    cr_assert_eq(blob_label(a, "empty"), blob_label(b, "empty"));
    cr_assert_not(inside(a, blob_label(a, "empty"), 1));
    /* keys: interned at first sight */
    for (size_t i = 0; i < a->n_fields; i++) {
        cr_assert_eq(field_at(a, i).key, field_at(b, i).key);
        cr_assert_not(inside(a, field_at(a, i).key, 1));
    }
    cr_assert_str_eq(field_at(a, 2).key, "spec.serviceAccountName");
    cr_assert_eq(label_at(a, 0).key, label_at(c, 0).key);
    blob_unref(a);
    blob_unref(b);
    blob_unref(c);
}

/* Keys the table does not take (too long, or once it is full: 768 keys or 32 KiB) are copied
 * into the blob and still found; nothing upstream sends grows shared memory without bound. */
Test(blob, keys_beyond_the_intern_table_are_copied)
{
    char long_key[200];
    struct blob *first = NULL;
    struct blob *b = one_label(repeat(long_key, sizeof(long_key), 'k'), "v");

    cr_assert(inside(b, label_at(b, 0).key, sizeof(long_key)));
    cr_assert_str_eq(blob_label(b, long_key), "v");
    blob_unref(b);

    for (int i = 0; i < 2000; i++) {
        char key[32];
        char val[32];

        snprintf(key, sizeof(key), "label-%04d", i);
        snprintf(val, sizeof(val), "v%d", i);
        b = one_label(key, val);
        cr_assert_str_eq(blob_label(b, key), val);
        if (i == 0) {
            first = b;
            cr_assert_not(inside(b, label_at(b, 0).key, 1));
            continue;
        }
        /* the last keys no longer fit: copied into their blob */
        if (i == 1999) {
            cr_assert(inside(b, label_at(b, 0).key, strlen(key) + 1));
        }
        blob_unref(b);
    }
    cr_assert_str_eq(blob_label(first, "label-0000"), "v0");
    blob_unref(first);
}

/* Values the table does not take (longer than 63 bytes, or once it is full: 3072 values or
 * 64 KiB) are copied into each blob, even when seen again, and still found. */
Test(blob, values_beyond_the_intern_table_are_copied)
{
    char long_val[65];
    const char *shared = NULL;
    struct blob *b;

    repeat(long_val, sizeof(long_val), 'v');
    for (int i = 0; i < 3; i++) {
        b = one_label("k", long_val);
        cr_assert(inside(b, blob_label(b, "k"), sizeof(long_val)), "round %d", i);
        cr_assert_str_eq(blob_label(b, "k"), long_val);
        blob_unref(b);
    }
    for (int i = 0; i < 5000; i++) {
        char val[32];

        snprintf(val, sizeof(val), "value-%04d", i);
        for (int sight = 0; sight < 2; sight++) {
            b = one_label("k", val);
            cr_assert_str_eq(blob_label(b, "k"), val);
            if (i == 0 && sight == 1) {
                shared = blob_label(b, "k");
                cr_assert_not(inside(b, shared, 1));
            }
            /* the table is full long before the last values come twice */
            if (i == 4999) {
                cr_assert(inside(b, blob_label(b, "k"), strlen(val) + 1));
            }
            blob_unref(b);
        }
    }
    /* what is in stays in */
    b = one_label("k", "value-0000");
    cr_assert_eq(blob_label(b, "k"), shared);
    blob_unref(b);
}

/* Counts past BLOB_MAX_KV are refused before the pairs are read (the arrays here hold one:
 * reading more would be caught by ASan). */
Test(blob, too_many_pairs_are_refused_unread)
{
    static const struct blob_kv one[1] = {{"k", "v"}};

    cr_assert_null(blob_new(
        "{}", 2, &(struct blob_meta){.name = "a", .labels = one, .n_labels = BLOB_MAX_KV + 1}));
    cr_assert_null(blob_new(
        "{}", 2, &(struct blob_meta){.name = "a", .fields = one, .n_fields = BLOB_MAX_KV + 1}));
    cr_assert_null(blob_new("{}", 2,
                            &(struct blob_meta){.name = "a",
                                                .labels = one,
                                                .n_labels = BLOB_MAX_KV / 2 + 1,
                                                .fields = one,
                                                .n_fields = BLOB_MAX_KV / 2 + 1}));
}

/* More pairs than any 16-bit count or offset holds, keys mostly beyond the key table: every
 * one is found, in order, with its own value. */
Test(blob, seventy_thousand_labels_and_fields)
{
    enum { N = 70000 };
    static char keys[2][N][24];
    static char vals[N][16];
    static struct blob_kv labels[N];
    static struct blob_kv fields[N];
    struct blob *b;

    for (int i = 0; i < N; i++) {
        /* reversed, so blob_new has to sort */
        snprintf(keys[0][i], sizeof(keys[0][i]), "l/%06d", N - 1 - i);
        snprintf(keys[1][i], sizeof(keys[1][i]), "f.%06d", N - 1 - i);
        snprintf(vals[i], sizeof(vals[i]), "%d", i % 3 == 0 ? 7 : i);
        labels[i] = (struct blob_kv){keys[0][i], vals[i]};
        fields[i] = (struct blob_kv){keys[1][i], i % 2 == 0 ? "" : vals[i]};
    }
    b = blob_new(
        "{}", 2,
        &(struct blob_meta){
            .name = "a", .labels = labels, .n_labels = N, .fields = fields, .n_fields = N});
    cr_assert_not_null(b);
    cr_assert_eq(b->n_labels, N);
    cr_assert_eq(b->n_fields, N);
    cr_assert_eq((uintptr_t)b->data % 16, 0);
    cr_assert_eq(b->data, (const char *)b + sizeof(struct blob) + 2 * N * 8);
    for (int i = 0; i < N; i++) {
        struct blob_kv l = label_at(b, (size_t)(N - 1 - i));
        struct blob_kv f = field_at(b, (size_t)(N - 1 - i));

        cr_assert_str_eq(l.key, keys[0][i]);
        cr_assert_str_eq(l.val, vals[i]);
        cr_assert_str_eq(f.key, keys[1][i]);
        cr_assert_str_eq(f.val, i % 2 == 0 ? "" : vals[i]);
        cr_assert_str_eq(blob_label(b, keys[0][i]), vals[i]);
        cr_assert_str_eq(blob_field(b, keys[1][i]), i % 2 == 0 ? "" : vals[i]);
    }
    cr_assert_null(blob_label(b, "f.000001"));
    cr_assert_null(blob_field(b, "l/000001"));
    blob_unref(b);
}

#define RACE_THREADS 4
#define RACE_BLOBS 500

static void *race_new(void *arg)
{
    struct blob **out = arg;
    struct blob_kv fields[] = {{"race.a", "1"}, {"race.b", "2"}, {"race.c", "3"}};

    for (int i = 0; i < RACE_BLOBS; i++) {
        out[i] =
            blob_new("{}", 2, &(struct blob_meta){.name = "r", .fields = fields, .n_fields = 3});
    }
    return NULL;
}

/* Threads interning the same new keys and values at once all end up with one copy of each. */
Test(blob, concurrent_interning_agrees)
{
    static struct blob *got[RACE_THREADS][RACE_BLOBS];
    pthread_t t[RACE_THREADS];

    for (int i = 0; i < RACE_THREADS; i++) {
        cr_assert_eq(pthread_create(&t[i], NULL, race_new, got[i]), 0);
    }
    for (int i = 0; i < RACE_THREADS; i++) {
        pthread_join(t[i], NULL);
    }
    for (int i = 0; i < RACE_THREADS; i++) {
        for (int j = 0; j < RACE_BLOBS; j++) {
            struct blob *b = got[i][j];

            cr_assert_str_eq(blob_field(b, "race.b"), "2");
            for (size_t k = 0; k < 3; k++) {
                struct blob_kv kv = field_at(b, k);
                struct blob_kv last = field_at(got[0][RACE_BLOBS - 1], k);

                cr_assert_eq(kv.key, last.key);
                /* a value is copied until its second sight, then one string for all */
                cr_assert(kv.val == last.val || inside(b, kv.val, 2));
            }
        }
    }
    for (int i = 0; i < RACE_THREADS; i++) {
        for (int j = 0; j < RACE_BLOBS; j++) {
            blob_unref(got[i][j]);
        }
    }
}

Test(blob, sizes_beyond_32_bits_are_refused)
{
    struct blob_kv kv[1] = {{"k", "v"}};

    /* rejected before the data or the labels are read */
    cr_assert_null(blob_new("{}", UINT32_MAX, &(struct blob_meta){.name = "a"}));
    cr_assert_null(blob_new(
        "{}", 2,
        &(struct blob_meta){.name = "a", .labels = kv, .n_labels = (size_t)UINT32_MAX + 1}));
    cr_assert_null(blob_new(
        "{}", 2, &(struct blob_meta){.name = "a", .fields = kv, .n_fields = (size_t)UINT32_MAX}));
}

Test(blob, refcount_counts)
{
    struct blob *b = blob_new("{}", 2, &(struct blob_meta){.name = "a"});

    cr_assert_eq(blob_ref(b), b);
    cr_assert_eq(atomic_load(&b->ref), 2);
    blob_unref(b);
    cr_assert_eq(atomic_load(&b->ref), 1);
    cr_assert_null(blob_ref(NULL));
    blob_unref(NULL);
    blob_unref(b);
}

Test(blob, unref_underflow_aborts, .signal = SIGABRT)
{
    struct blob *b = blob_new("{}", 2, &(struct blob_meta){.name = "a"});

    /* Simulate a reference dropped twice without touching freed memory. */
    atomic_store(&b->ref, 0);
    blob_unref(b);
}
