/*
 * test_blob.c - blob_new copies everything into one allocation (keys interned, values equal
 * to the namespace or name shared), derives key and rv, sorts labels and fields for binary
 * search, and counts references.
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
    for (size_t i = 1; i < b->n_labels; i++) {
        cr_assert_lt(strcmp(b->labels[i - 1].key, b->labels[i].key), 0);
    }
    for (size_t i = 1; i < b->n_fields; i++) {
        cr_assert_lt(strcmp(b->fields[i - 1].key, b->fields[i].key), 0);
    }
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
        cr_assert(inside(b, &b->labels[i], sizeof(b->labels[i])));
        /* values are copied, except "" (one static string) */
        cr_assert(b->labels[i].val[0] == '\0' ||
                  inside(b, b->labels[i].val, strlen(b->labels[i].val) + 1));
    }
    cr_assert(inside(b, &b->fields[2], sizeof(b->fields[2])));
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
    /* header, data + NUL, "ns1/p1", "ns1", "42", the value "v" (the key is interned), array */
    size_t min = sizeof(struct blob) + b->len + 1 + strlen("ns1/p1") + 1 + 4 + 3 + 2 +
                 sizeof(struct blob_kv);

    cr_assert_eq(sizeof(struct blob), 96);
    cr_assert_geq(blob_footprint(b), min);
    cr_assert_lt(blob_footprint(b), min + 16);
    blob_unref(b);
}

/* What the store pays per pod beyond its JSON: keys are shared by every blob, the values
 * equal to the namespace or name are not copied again. */
Test(blob, keys_interned_and_values_shared)
{
    char key[] = "spec.serviceAccountName";
    struct blob_kv fields[] = {{key, "ns1"}, {"spec.nodeName", "n1"}, {"metadata.name", "p1"}};
    struct blob_kv labels[] = {{"app", "web"}, {"empty", ""}};
    struct blob_meta m = {.ns = "ns1", .name = "p1", .labels = labels, .n_labels = 2,
                          .fields = fields, .n_fields = 3};
    struct blob *a = blob_new("{}", 2, &m);
    struct blob *b;

    memset(key, 'x', sizeof(key) - 1); /* the blob must hold its own (interned) key */
    m.name = "p2";
    fields[2].val = "p2";
    fields[0].key = "spec.serviceAccountName";
    b = blob_new("{}", 2, &m);
    cr_assert_str_eq(blob_field(a, "spec.serviceAccountName"), "ns1");
    cr_assert_str_eq(blob_field(b, "spec.serviceAccountName"), "ns1");
    cr_assert_str_eq(blob_field(b, "metadata.name"), "p2");
    cr_assert_str_eq(blob_label(a, "empty"), "");
    cr_assert_eq(blob_field(a, "spec.serviceAccountName"), a->ns);
    cr_assert_eq(blob_field(a, "metadata.name"), a->name);
    cr_assert_eq(blob_field(b, "metadata.name"), b->name);
    cr_assert_str_eq(a->name, "p1");
    cr_assert(inside(a, a->name, 3));
    for (size_t i = 0; i < a->n_fields; i++) {
        cr_assert_eq(a->fields[i].key, b->fields[i].key);
        cr_assert_not(inside(a, a->fields[i].key, 1));
    }
    cr_assert_eq(a->labels[0].key, b->labels[0].key);
    cr_assert(inside(a, blob_label(a, "app"), 4)); /* values stay per blob */
    cr_assert_neq(blob_label(a, "app"), blob_label(b, "app"));
    blob_unref(a);
    blob_unref(b);
}

/* Keys the table does not take (too long, or once it is full: 768 keys or 32 KiB) are copied
 * into the blob and still found; nothing upstream sends grows shared memory without bound. */
Test(blob, keys_beyond_the_intern_table_are_copied)
{
    char long_key[200];
    struct blob_kv kv[1];
    struct blob *first = NULL;
    struct blob *b;

    memset(long_key, 'k', sizeof(long_key) - 1);
    long_key[sizeof(long_key) - 1] = '\0';
    kv[0] = (struct blob_kv){long_key, "v"};
    b = blob_new("{}", 2, &(struct blob_meta){.name = "a", .labels = kv, .n_labels = 1});
    cr_assert(inside(b, b->labels[0].key, sizeof(long_key)));
    cr_assert_str_eq(blob_label(b, long_key), "v");
    blob_unref(b);

    for (int i = 0; i < 2000; i++) {
        char key[32];
        char val[32];

        snprintf(key, sizeof(key), "label-%04d", i);
        snprintf(val, sizeof(val), "v%d", i);
        kv[0] = (struct blob_kv){key, val};
        b = blob_new("{}", 2, &(struct blob_meta){.name = "a", .labels = kv, .n_labels = 1});
        cr_assert_not_null(b);
        cr_assert_str_eq(blob_label(b, key), val);
        if (i == 0) {
            first = b;
            cr_assert_not(inside(b, b->labels[0].key, 1));
            continue;
        }
        /* the last keys no longer fit: copied into their blob */
        if (i == 1999) {
            cr_assert(inside(b, b->labels[0].key, strlen(key) + 1));
        }
        blob_unref(b);
    }
    cr_assert_str_eq(blob_label(first, "label-0000"), "v0");
    blob_unref(first);
}

#define RACE_THREADS 4
#define RACE_BLOBS 500

static void *race_new(void *arg)
{
    struct blob **out = arg;
    struct blob_kv fields[] = {{"race.a", "1"}, {"race.b", "2"}, {"race.c", "3"}};

    for (int i = 0; i < RACE_BLOBS; i++) {
        out[i] = blob_new("{}", 2,
                          &(struct blob_meta){.name = "r", .fields = fields, .n_fields = 3});
    }
    return NULL;
}

/* Threads interning the same new keys at once all end up with one copy of each. */
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
                cr_assert_eq(b->fields[k].key, got[0][0]->fields[k].key);
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
    cr_assert_null(blob_new("{}", 2, &(struct blob_meta){.name = "a", .labels = kv,
                                                         .n_labels = (size_t)UINT32_MAX + 1}));
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
