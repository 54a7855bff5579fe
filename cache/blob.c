/*
 * blob.c - one immutable, refcounted object version in a single allocation (see blob.h).
 *
 * Layout, in this order: struct blob, data + NUL, key (name is its tail), ns, rv_str, the
 * label and field strings not shared (in sorted order), padding, then the label array and
 * the field array. The arrays come last so blob_footprint is simply "end of the field array
 * minus start of the blob". Everything except <ref> is written before blob_new returns and
 * never again.
 *
 * The key intern table: open addressing over a static pool, no heap. Slots and pool bytes are
 * only ever added, under intern_lock; a slot is published with a release store after its
 * bytes are written, so lookups run without the lock (acquire loads) and a string, once
 * published, is valid and unchanged until exit. It is bounded (BLOB_INTERN_*): once full,
 * keys are copied into each blob as values are, so whatever upstream sends only costs
 * memory per blob, never unbounded shared memory.
 */
#include "cache/blob.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "cache/bug.h"
#include "cache/rv.h"

#define BLOB_INTERN_SLOTS 1024      /* power of two; at most 3/4 are filled */
#define BLOB_INTERN_POOL (32 * 1024) /* bytes of interned strings, NULs included */
#define BLOB_INTERN_KEY_MAX 63      /* longer keys are copied per blob */

static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(const char *) intern_slots[BLOB_INTERN_SLOTS]; /* NULL = empty; then immutable */
static char intern_pool[BLOB_INTERN_POOL];                     /* append-only, under the lock */
static size_t intern_used;                                     /* under intern_lock */
static size_t intern_count;                                    /* under intern_lock */

/* FNV-1a: keys are short and few; the table needs spread, not resistance to attack (a
 * flood of colliding keys only fills the bounded table, after which keys are copied). */
static uint32_t intern_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < n; i++) {
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    }
    return h;
}

/* Probes for <s>: returns the interned copy, or NULL with *<empty> = the first empty slot
 * (BLOB_INTERN_SLOTS when none: cannot happen below 3/4 full, but stays safe). */
static const char *intern_probe(const char *s, size_t n, uint32_t h, size_t *empty)
{
    for (size_t i = 0; i < BLOB_INTERN_SLOTS; i++) {
        size_t slot = (h + i) & (BLOB_INTERN_SLOTS - 1);
        const char *p = atomic_load_explicit(&intern_slots[slot], memory_order_acquire);

        if (p == NULL) {
            *empty = slot;
            return NULL;
        }
        if (memcmp(p, s, n + 1) == 0) {
            return p;
        }
    }
    *empty = BLOB_INTERN_SLOTS;
    return NULL;
}

/* The interned copy of <s>, adding it when there is room; NULL when <s> is too long or the
 * table is full (the caller copies it then). The answer for a string never changes: once in,
 * it stays; once refused, there is never more room, since the table only fills up. blob_new's
 * two passes (size, then copy) rely on that, and BUG_ON checks it. Any thread. */
static const char *intern(const char *s)
{
    size_t n = strlen(s);
    size_t empty = BLOB_INTERN_SLOTS;
    uint32_t h;
    const char *p;

    if (n > BLOB_INTERN_KEY_MAX) {
        return NULL;
    }
    h = intern_hash(s, n);
    p = intern_probe(s, n, h, &empty);
    if (p != NULL) {
        return p;
    }
    pthread_mutex_lock(&intern_lock);
    p = intern_probe(s, n, h, &empty);
    if (p == NULL && empty < BLOB_INTERN_SLOTS && intern_count < BLOB_INTERN_SLOTS / 4 * 3 &&
        intern_used + n + 1 <= sizeof(intern_pool)) {
        char *dst = intern_pool + intern_used;

        memcpy(dst, s, n + 1);
        intern_used += n + 1;
        intern_count++;
        atomic_store_explicit(&intern_slots[empty], dst, memory_order_release);
        p = dst;
    }
    pthread_mutex_unlock(&intern_lock);
    return p;
}

static int kv_cmp(const void *a, const void *b)
{
    const struct blob_kv *x = a;
    const struct blob_kv *y = b;

    return strcmp(x->key, y->key);
}

/* A value equal to the namespace or the name shares their copy: NULL when it must be
 * copied. <ns>/<name> are the blob's copies in pass 2, the caller's strings in pass 1. */
static const char *shared_val(const char *val, const char *ns, const char *name)
{
    if (val[0] == '\0') {
        return ""; /* a static empty string: nothing to copy */
    }
    if (strcmp(val, name) == 0) {
        return name;
    }
    if (strcmp(val, ns) == 0) {
        return ns;
    }
    return NULL;
}

/* Bytes needed by the strings of <n> pairs that are not interned or shared; SIZE_MAX when a
 * key is NULL. Interns the keys on the way (so blob_new's second pass finds them). */
static size_t kv_strings_size(const struct blob_kv *kv, size_t n, const char *ns,
                              const char *name)
{
    size_t sum = 0;

    for (size_t i = 0; i < n; i++) {
        const char *val = kv[i].val != NULL ? kv[i].val : "";

        if (kv[i].key == NULL) {
            return SIZE_MAX;
        }
        if (intern(kv[i].key) == NULL) {
            sum += strlen(kv[i].key) + 1;
        }
        if (shared_val(val, ns, name) == NULL) {
            sum += strlen(val) + 1;
        }
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

/* Sorts <arr> (already holding the caller's pointers) and repoints it at interned keys,
 * shared values, or copies in *<cur>. */
static void kv_copy_sorted(struct blob_kv *arr, size_t n, char **cur, const char *ns,
                           const char *name)
{
    qsort(arr, n, sizeof(*arr), kv_cmp);
    for (size_t i = 0; i < n; i++) {
        const char *val = arr[i].val != NULL ? arr[i].val : "";
        const char *key = intern(arr[i].key);
        const char *sval = shared_val(val, ns, name);

        arr[i].key = key != NULL ? key : copy_str(cur, arr[i].key, strlen(arr[i].key));
        arr[i].val = sval != NULL ? sval : copy_str(cur, val, strlen(val));
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
    /* The header keeps offsets and counts in 32 bits. */
    if (len >= UINT32_MAX || meta->n_labels >= UINT32_MAX || meta->n_fields >= UINT32_MAX) {
        return NULL;
    }
    /* An rv span outside the data would make a later rewrite scribble past the blob. */
    if (meta->rv_len > 0 && (meta->rv_off > len || meta->rv_len > len - meta->rv_off)) {
        return NULL;
    }
    ns = meta->ns != NULL ? meta->ns : "";
    rv_str = meta->rv_str != NULL ? meta->rv_str : "";
    lab_size = kv_strings_size(meta->labels, meta->n_labels, ns, meta->name);
    fld_size = kv_strings_size(meta->fields, meta->n_fields, ns, meta->name);
    if (lab_size == SIZE_MAX || fld_size == SIZE_MAX) {
        return NULL;
    }

    ns_len = strlen(ns);
    name_len = strlen(meta->name);
    rv_str_len = strlen(rv_str);
    key_len = ns_len > 0 ? ns_len + 1 + name_len : name_len;

    /* One allocation: the object is freed with a single free() on the last unref, and its
     * bytes sit next to its metadata for the framing writers. An empty ns is the static "". */
    total = sizeof(*b) + len + 1 + key_len + 1 + (ns_len > 0 ? ns_len + 1 : 0) + rv_str_len +
            1 + lab_size + fld_size;
    arr_off = (total + alignof(struct blob_kv) - 1) & ~(alignof(struct blob_kv) - 1);
    total = arr_off + (meta->n_labels + meta->n_fields) * sizeof(struct blob_kv);

    b = xmalloc(total);
    cur = (char *)(b + 1);
    labels = (struct blob_kv *)((char *)b + arr_off);
    fields = labels + meta->n_labels;

    b->data = copy_str(&cur, len > 0 ? data : "", len);
    b->len = len;
    /* key = "ns/name", built in place; name is its tail. */
    b->key = cur;
    if (ns_len > 0) {
        memcpy(cur, ns, ns_len);
        cur[ns_len] = '/';
        memcpy(cur + ns_len + 1, meta->name, name_len);
    } else {
        memcpy(cur, meta->name, name_len);
    }
    cur[key_len] = '\0';
    b->name = cur + key_len - name_len;
    cur += key_len + 1;
    b->ns = ns_len > 0 ? copy_str(&cur, ns, ns_len) : "";
    b->rv_str = copy_str(&cur, rv_str, rv_str_len);
    /* Unparsable rvs order as 0; the string itself is still echoed verbatim. */
    if (rv_parse(rv_str, &rv) != 0) {
        rv = 0;
    }
    b->rv = rv;
    b->rv_off = meta->rv_len > 0 ? (uint32_t)meta->rv_off : 0;
    b->rv_len = (uint32_t)meta->rv_len;

    if (meta->n_labels > 0) {
        memcpy(labels, meta->labels, meta->n_labels * sizeof(*labels));
    }
    if (meta->n_fields > 0) {
        memcpy(fields, meta->fields, meta->n_fields * sizeof(*fields));
    }
    kv_copy_sorted(labels, meta->n_labels, &cur, b->ns, b->name);
    kv_copy_sorted(fields, meta->n_fields, &cur, b->ns, b->name);
    /* Pass 2 can only intern or share what pass 1 did (see intern), never less. */
    BUG_ON(cur > (char *)labels);
    b->labels = labels;
    b->n_labels = (uint32_t)meta->n_labels;
    b->fields = fields;
    b->n_fields = (uint32_t)meta->n_fields;
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
