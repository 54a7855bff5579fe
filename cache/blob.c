/*
 * blob.c - one immutable, refcounted object version in a single allocation (see blob.h).
 *
 * Layout, in this order: struct blob, data + NUL, key, ns, name, rv_str, the label and field
 * strings (in sorted order), padding, then the label array and the field array. The arrays
 * come last so blob_footprint is simply "end of the field array minus start of the blob".
 * Everything except <ref> is written before blob_new returns and never again.
 */
#include "cache/blob.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "cache/bug.h"
#include "cache/rv.h"

static int kv_cmp(const void *a, const void *b)
{
    const struct blob_kv *x = a;
    const struct blob_kv *y = b;

    return strcmp(x->key, y->key);
}

/* Bytes needed by the strings of <n> pairs; -1 (as SIZE_MAX) when a key is NULL. */
static size_t kv_strings_size(const struct blob_kv *kv, size_t n)
{
    size_t sum = 0;

    for (size_t i = 0; i < n; i++) {
        if (kv[i].key == NULL) {
            return SIZE_MAX;
        }
        sum += strlen(kv[i].key) + 1 + (kv[i].val != NULL ? strlen(kv[i].val) : 0) + 1;
    }
    return sum;
}

/* Copies <s> (with its NUL) to *<cur>, advances *<cur>, returns where it landed. */
static const char *copy_str(char **cur, const char *s, size_t n)
{
    char *dst = *cur;

    memcpy(dst, s, n);
    dst[n] = '\0';
    *cur += n + 1;
    return dst;
}

/* Sorts <arr> (already holding the caller's pointers) and repoints it at copies in *<cur>. */
static void kv_copy_sorted(struct blob_kv *arr, size_t n, char **cur)
{
    qsort(arr, n, sizeof(*arr), kv_cmp);
    for (size_t i = 0; i < n; i++) {
        const char *val = arr[i].val != NULL ? arr[i].val : "";

        arr[i].key = copy_str(cur, arr[i].key, strlen(arr[i].key));
        arr[i].val = copy_str(cur, val, strlen(val));
    }
}

struct blob *blob_new(const char *data, size_t len, const struct blob_meta *meta)
{
    const char *ns;
    const char *rv_str;
    size_t ns_len, name_len, rv_str_len, key_len;
    size_t lab_size, fld_size, arr_off, total;
    struct blob_kv *labels;
    struct blob_kv *fields;
    struct blob *b;
    char *cur;
    uint64_t rv = 0;

    if (meta == NULL || meta->name == NULL || meta->name[0] == '\0') {
        return NULL;
    }
    if ((len > 0 && data == NULL) || (meta->n_labels > 0 && meta->labels == NULL) ||
        (meta->n_fields > 0 && meta->fields == NULL)) {
        return NULL;
    }
    /* An rv span outside the data would make a later rewrite scribble past the blob. */
    if (meta->rv_len > 0 && (meta->rv_off > len || meta->rv_len > len - meta->rv_off)) {
        return NULL;
    }
    lab_size = kv_strings_size(meta->labels, meta->n_labels);
    fld_size = kv_strings_size(meta->fields, meta->n_fields);
    if (lab_size == SIZE_MAX || fld_size == SIZE_MAX) {
        return NULL;
    }

    ns = meta->ns != NULL ? meta->ns : "";
    rv_str = meta->rv_str != NULL ? meta->rv_str : "";
    ns_len = strlen(ns);
    name_len = strlen(meta->name);
    rv_str_len = strlen(rv_str);
    key_len = ns_len > 0 ? ns_len + 1 + name_len : name_len;

    /* One allocation: the object is freed with a single free() on the last unref, and its
     * bytes sit next to its metadata for the framing writers. */
    total = sizeof(*b) + len + 1 + key_len + 1 + ns_len + 1 + name_len + 1 + rv_str_len + 1 +
            lab_size + fld_size;
    arr_off = (total + alignof(struct blob_kv) - 1) & ~(alignof(struct blob_kv) - 1);
    total = arr_off + (meta->n_labels + meta->n_fields) * sizeof(struct blob_kv);

    b = xmalloc(total);
    cur = (char *)(b + 1);
    labels = (struct blob_kv *)((char *)b + arr_off);
    fields = labels + meta->n_labels;

    b->data = copy_str(&cur, len > 0 ? data : "", len);
    b->len = len;
    /* key = "ns/name", built in place. */
    b->key = cur;
    if (ns_len > 0) {
        memcpy(cur, ns, ns_len);
        cur[ns_len] = '/';
        memcpy(cur + ns_len + 1, meta->name, name_len);
    } else {
        memcpy(cur, meta->name, name_len);
    }
    cur[key_len] = '\0';
    cur += key_len + 1;
    b->ns = copy_str(&cur, ns, ns_len);
    b->name = copy_str(&cur, meta->name, name_len);
    b->rv_str = copy_str(&cur, rv_str, rv_str_len);
    /* Unparsable rvs order as 0; the string itself is still echoed verbatim. */
    if (rv_parse(rv_str, &rv) != 0) {
        rv = 0;
    }
    b->rv = rv;
    b->rv_off = meta->rv_len > 0 ? meta->rv_off : 0;
    b->rv_len = meta->rv_len;

    if (meta->n_labels > 0) {
        memcpy(labels, meta->labels, meta->n_labels * sizeof(*labels));
    }
    if (meta->n_fields > 0) {
        memcpy(fields, meta->fields, meta->n_fields * sizeof(*fields));
    }
    kv_copy_sorted(labels, meta->n_labels, &cur);
    kv_copy_sorted(fields, meta->n_fields, &cur);
    BUG_ON(cur > (char *)labels);
    b->labels = labels;
    b->n_labels = meta->n_labels;
    b->fields = fields;
    b->n_fields = meta->n_fields;
    atomic_init(&b->ref, 1);
    return b;
}

struct blob *blob_ref(struct blob *b)
{
    if (b != NULL) {
        /* Relaxed: taking a reference needs no ordering, the caller already holds one. */
        atomic_fetch_add_explicit(&b->ref, 1, memory_order_relaxed);
    }
    return b;
}

void blob_unref(struct blob *b)
{
    unsigned old;

    if (b == NULL) {
        return;
    }
    /* acq_rel: the thread that frees must see every other holder's reads completed. */
    old = atomic_fetch_sub_explicit(&b->ref, 1, memory_order_acq_rel);
    BUG_ON(old == 0);
    if (old == 1) {
        free(b);
    }
}

/* Binary search over a key-sorted array (sorted once in blob_new). */
static const char *kv_find(const struct blob_kv *kv, size_t n, const char *key)
{
    size_t lo = 0;
    size_t hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(kv[mid].key, key);

        if (c == 0) {
            return kv[mid].val;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

const char *blob_label(const struct blob *b, const char *key)
{
    return kv_find(b->labels, b->n_labels, key);
}

const char *blob_field(const struct blob *b, const char *key)
{
    return kv_find(b->fields, b->n_fields, key);
}

size_t blob_footprint(const struct blob *b)
{
    /* The field array is the last thing in the allocation (see the layout above). */
    return (size_t)((const char *)(b->fields + b->n_fields) - (const char *)b);
}
