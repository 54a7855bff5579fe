/*
 * test_blob.c - blob_new copies everything into one allocation, derives key and rv, sorts
 * labels and fields for binary search, and counts references.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdint.h>
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
        cr_assert(inside(b, b->labels[i].val, strlen(b->labels[i].val) + 1));
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
    size_t min = sizeof(struct blob) + b->len + 1 + strlen("ns1/p1") + 1 + 4 + 3 + 3 + 4 +
                 sizeof(struct blob_kv);

    cr_assert_geq(blob_footprint(b), min);
    cr_assert_lt(blob_footprint(b), min + 16);
    blob_unref(b);
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
