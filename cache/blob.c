/*
 * blob.c - one immutable, refcounted object version in a single allocation (see blob.h).
 *
 * Layout, in this order: struct blob, the label refs then the field refs (struct kv_ref,
 * each sorted by key), padding to 16, data + NUL, key (name is its tail), ns (unless
 * interned), rv_str, then the label and field strings not interned or shared (in sorted
 * order). Every offset a ref holds is below 2 GiB (REF_POOL): blob_new refuses a bigger
 * blob, which a JSON object of at most KUBE_JSON_MAX_INPUT (1 GiB) never makes. Everything
 * except <ref> is written before blob_new returns and never again.
 *
 * The intern tables (one for keys, one for values and namespaces): open addressing over a
 * static pool, no heap. Slots and pool bytes are only ever added, under the table's lock; a
 * slot is published with a release store after its bytes are written, so lookups run
 * without the lock (acquire loads) and a string, once published, is valid and unchanged
 * until exit. Both are bounded (BLOB_INTERN_*): once full, strings are copied into each
 * blob, so whatever upstream sends only costs memory per blob, never unbounded shared
 * memory. A key is taken on first sight (a kind has few). A value is taken on its second
 * sight, remembered in a bitmap of hashes, so values unique to one object (a pod's IP) do
 * not fill the table before the repeated ones arrive; a hash collision only admits a value
 * early, which costs a slot, never correctness.
 */
#include "cache/blob.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache/bug.h"
#include "cache/rv.h"

#define BLOB_INTERN_KEY_SLOTS 1024       /* power of two; at most 3/4 are filled */
#define BLOB_INTERN_KEY_POOL (32 * 1024) /* bytes of interned keys, NULs included */
#define BLOB_INTERN_VAL_SLOTS 4096       /* values: node names, phases, namespaces, ... */
#define BLOB_INTERN_VAL_POOL (64 * 1024) /* bytes of interned values, NULs included */
#define BLOB_INTERN_MAX 63               /* longer strings are copied per blob (label limit) */
#define BLOB_SEEN_BITS (1u << 17)        /* the values' second-sight filter: 16 KiB */

/* A ref: REF_POOL set = offset into the table's pool, else offset from the blob's start.
 * Both pools are far below 2 GiB, and blob_new refuses a blob of 2 GiB or more, so one bit
 * tells them apart. */
#define REF_POOL 0x80000000u

/* One label or field: references to its key (key table) and value (value table). */
struct kv_ref {
    uint32_t key;
    uint32_t val;
};

/* One intern table. The pointers and sizes are fixed at compile time. */
struct intern {
    pthread_mutex_t lock;         /* serialises additions; lookups take no lock */
    _Atomic(const char *) *slots; /* NULL = empty; set once under lock, then immutable */
    char *pool;                   /* the strings, append-only under lock */
    size_t n_slots;               /* power of two */
    size_t pool_cap;              /* bytes */
    size_t used;                  /* pool bytes taken; under lock */
    size_t count;                 /* slots taken; under lock */
    _Atomic uint64_t *seen;       /* second-sight bitmap (relaxed), or NULL: first sight */
};

static _Atomic(const char *) key_slots[BLOB_INTERN_KEY_SLOTS];
static char key_pool[BLOB_INTERN_KEY_POOL];
static _Atomic(const char *) val_slots[BLOB_INTERN_VAL_SLOTS];
/* Byte 0 stays NUL: the empty value, which every blob shares, is REF_POOL | 0. */
static char val_pool[BLOB_INTERN_VAL_POOL];
static _Atomic uint64_t val_seen[BLOB_SEEN_BITS / 64];

static struct intern keys = {.lock = PTHREAD_MUTEX_INITIALIZER,
                             .slots = key_slots,
                             .pool = key_pool,
                             .n_slots = BLOB_INTERN_KEY_SLOTS,
                             .pool_cap = sizeof(key_pool)};
static struct intern vals = {.lock = PTHREAD_MUTEX_INITIALIZER,
                             .slots = val_slots,
                             .pool = val_pool,
                             .n_slots = BLOB_INTERN_VAL_SLOTS,
                             .pool_cap = sizeof(val_pool),
                             .used = 1, /* the shared "" */
                             .seen = val_seen};

/* FNV-1a: strings are short; the tables need spread, not resistance to attack (a flood of
 * colliding strings only fills a bounded table, after which they are copied). */
static uint32_t intern_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < n; i++) {
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    }
    return h;
}

/* Probes <t> for <s>: returns the interned copy, or NULL with *<empty> = the first empty
 * slot (n_slots when none: cannot happen below 3/4 full, but stays safe). */
static const char *intern_probe(struct intern *t, const char *s, uint32_t h, size_t *empty)
{
    for (size_t i = 0; i < t->n_slots; i++) {
        size_t slot = (h + i) & (t->n_slots - 1);
        const char *p = atomic_load_explicit(&t->slots[slot], memory_order_acquire);

        if (p == NULL) {
            *empty = slot;
            return NULL;
        }
        if (strcmp(p, s) == 0) {
            return p;
        }
    }
    *empty = t->n_slots;
    return NULL;
}

/* The interned copy of <s> in <t>, or NULL; adds it when <admit> and there is room (for the
 * value table: from its second sight on). Once in, a string stays; once the table refuses
 * for lack of room it always will, since it only fills up. Any thread. */
static const char *intern(struct intern *t, const char *s, bool admit)
{
    size_t n = strlen(s);
    size_t empty = t->n_slots;
    uint32_t h;
    const char *p;

    if (n > BLOB_INTERN_MAX) {
        return NULL;
    }
    h = intern_hash(s, n);
    p = intern_probe(t, s, h, &empty);
    if (p != NULL || !admit) {
        return p;
    }
    if (t->seen != NULL) {
        uint64_t bit = (uint64_t)1 << (h % 64);
        _Atomic uint64_t *word = &t->seen[(h / 64) % (BLOB_SEEN_BITS / 64)];

        /* Relaxed: the bitmap only decides when to intern, never what a blob holds. */
        if ((atomic_fetch_or_explicit(word, bit, memory_order_relaxed) & bit) == 0) {
            return NULL;
        }
    }
    pthread_mutex_lock(&t->lock);
    p = intern_probe(t, s, h, &empty);
    if (p == NULL && empty < t->n_slots && t->count < t->n_slots / 4 * 3 &&
        t->used + n + 1 <= t->pool_cap) {
        char *dst = t->pool + t->used;

        memcpy(dst, s, n + 1);
        t->used += n + 1;
        t->count++;
        atomic_store_explicit(&t->slots[empty], dst, memory_order_release);
        p = dst;
    }
    pthread_mutex_unlock(&t->lock);
    return p;
}

static const char *key_str(const struct blob *b, uint32_t r)
{
    return (r & REF_POOL) != 0 ? key_pool + (r & ~REF_POOL) : (const char *)b + r;
}

static const char *val_str(const struct blob *b, uint32_t r)
{
    return (r & REF_POOL) != 0 ? val_pool + (r & ~REF_POOL) : (const char *)b + r;
}

/* The ref of <p>: a string of <pool> or one inside the blob <b> being built. */
static uint32_t ref_of(const struct blob *b, const char *p, const char *pool, size_t pool_cap)
{
    if (p >= pool && p < pool + pool_cap) {
        return REF_POOL | (uint32_t)(p - pool);
    }
    BUG_ON(p < (const char *)b || (size_t)(p - (const char *)b) >= REF_POOL);
    return (uint32_t)(p - (const char *)b);
}

static int kv_cmp(const void *a, const void *b)
{
    const struct blob_kv *x = a;
    const struct blob_kv *y = b;

    return strcmp(x->key, y->key);
}

/* A value that needs no copy: "" (the value pool's first byte), the namespace, the name, or
 * an interned value; NULL when it must be copied. <ns>/<name> are the blob's strings in
 * pass 2, the caller's in pass 1. Pass 1 may admit <val> to the value table; pass 2 only
 * looks (see blob_new). */
static const char *shared_val(const char *val, const char *ns, const char *name, bool admit)
{
    if (val[0] == '\0') {
        return val_pool;
    }
    if (strcmp(val, name) == 0) {
        return name;
    }
    if (strcmp(val, ns) == 0) {
        return ns;
    }
    return intern(&vals, val, admit);
}

/* Bytes needed by the strings of <n> pairs that are not interned or shared; SIZE_MAX when a
 * key is NULL. Interns on the way (so blob_new's second pass finds them). */
static size_t kv_strings_size(const struct blob_kv *kv, size_t n, const char *ns, const char *name)
{
    size_t sum = 0;

    for (size_t i = 0; i < n; i++) {
        const char *val = kv[i].val != NULL ? kv[i].val : "";

        if (kv[i].key == NULL) {
            return SIZE_MAX;
        }
        if (intern(&keys, kv[i].key, true) == NULL) {
            sum += strlen(kv[i].key) + 1;
        }
        if (shared_val(val, ns, name, true) == NULL) {
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

/*
 * Pass 2 of blob_new: sorts <tmp> (the caller's pairs; sorted in place) and fills <refs>
 * with references to interned keys, shared values, or copies made at *<cur> inside <b>. It
 * only looks strings up, never interns: pass 1 did, so a string pass 1 sized as interned is
 * found here. <tmp> is scratch the caller owns: the pointer pairs never land in the blob.
 */
static void kv_store_sorted(struct blob *b, struct kv_ref *refs, struct blob_kv *tmp, size_t n,
                            char **cur)
{
    qsort(tmp, n, sizeof(*tmp), kv_cmp);
    for (size_t i = 0; i < n; i++) {
        const char *val = tmp[i].val != NULL ? tmp[i].val : "";
        const char *key = intern(&keys, tmp[i].key, false);
        const char *sval = shared_val(val, b->ns, b->name, false);

        if (key == NULL) {
            key = copy_str(cur, tmp[i].key, strlen(tmp[i].key));
        }
        if (sval == NULL) {
            sval = copy_str(cur, val, strlen(val));
        }
        refs[i].key = ref_of(b, key, key_pool, sizeof(key_pool));
        refs[i].val = ref_of(b, sval, val_pool, sizeof(val_pool));
    }
}

/* Sorts and stores one of meta's pair arrays through a scratch copy (stack when small). */
static void kv_store(struct blob *b, struct kv_ref *refs, const struct blob_kv *kv, size_t n,
                     char **cur)
{
    struct blob_kv small[16];
    struct blob_kv *tmp = n <= 16 ? small : xmalloc(n * sizeof(*tmp));

    if (n > 0) {
        memcpy(tmp, kv, n * sizeof(*tmp));
    }
    kv_store_sorted(b, refs, tmp, n, cur);
    if (tmp != small) {
        free(tmp);
    }
}

/* Where the data starts: after the header and <n> refs, 16-byte aligned like malloc's block
 * (a misaligned source halves memcpy's speed here, and every LIST copies these bytes). */
static size_t data_off(size_t n)
{
    return (sizeof(struct blob) + n * sizeof(struct kv_ref) + 15) & ~(size_t)15;
}

struct blob *blob_new(const char *data, size_t len, const struct blob_meta *meta)
{
    const char *ns;
    const char *ins;
    const char *rv_str;
    size_t ns_len, name_len, rv_str_len, key_len;
    size_t lab_size, fld_size, total;
    struct kv_ref *refs;
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
    /* Every offset a ref holds is below REF_POOL (2 GiB), so the whole blob is: checked on
     * the counts before the pairs are read, then on the total once the strings are sized. */
    if (len >= REF_POOL || meta->n_labels > BLOB_MAX_KV || meta->n_fields > BLOB_MAX_KV ||
        meta->n_labels + meta->n_fields > BLOB_MAX_KV ||
        data_off(meta->n_labels + meta->n_fields) + len >= REF_POOL) {
        return NULL;
    }
    /* An rv span outside the data would make a later rewrite scribble past the blob. */
    if (meta->rv_len > 0 && (meta->rv_off > len || meta->rv_len > len - meta->rv_off)) {
        return NULL;
    }
    ns = meta->ns != NULL ? meta->ns : "";
    /* An interned namespace is shared; an empty one is the static "". */
    ins = ns[0] != '\0' ? intern(&vals, ns, true) : "";
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

    /* One allocation: the object is freed with a single free() on the last unref; a
     * selector reads the header and the refs right after it, a LIST the header and data. */
    total = data_off(meta->n_labels + meta->n_fields) + len + 1;
    if (key_len >= REF_POOL || rv_str_len >= REF_POOL || lab_size >= REF_POOL ||
        fld_size >= REF_POOL) {
        return NULL;
    }
    total += key_len + 1 + (ins == NULL ? ns_len + 1 : 0) + rv_str_len + 1 + lab_size + fld_size;
    if (total >= REF_POOL) {
        return NULL;
    }

    b = xmalloc(total);
    refs = (struct kv_ref *)(b + 1);
    cur = (char *)b + data_off(meta->n_labels + meta->n_fields);
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
    b->ns = ins != NULL ? ins : copy_str(&cur, ns, ns_len);
    b->rv_str = copy_str(&cur, rv_str, rv_str_len);
    /* Unparsable rvs order as 0; the string itself is still echoed verbatim. */
    if (rv_parse(rv_str, &rv) != 0) {
        rv = 0;
    }
    b->rv = rv;
    b->rv_off = meta->rv_len > 0 ? (uint32_t)meta->rv_off : 0;
    b->rv_len = (uint32_t)meta->rv_len;
    b->n_labels = (uint32_t)meta->n_labels;
    b->n_fields = (uint32_t)meta->n_fields;

    kv_store(b, refs, meta->labels, meta->n_labels, &cur);
    kv_store(b, refs + meta->n_labels, meta->fields, meta->n_fields, &cur);
    /* Pass 2 finds interned at least what pass 1 did (tables never drop a string), and may
     * find more (another thread admitted it meanwhile): it never needs more room. */
    BUG_ON(cur > (char *)b + total);
    b->size = (uint32_t)total;
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

/* The labels' refs; the fields' follow them. Only called on a blob that has some (a blob
 * with none may be a bare header, like selector.c's empty object). */
static const struct kv_ref *refs_of(const struct blob *b)
{
    return (const struct kv_ref *)(b + 1);
}

/* Binary search over a key-sorted ref array (sorted once in blob_new). */
static const char *kv_find(const struct blob *b, const struct kv_ref *kv, size_t n, const char *key)
{
    size_t lo = 0;
    size_t hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(key_str(b, kv[mid].key), key);

        if (c == 0) {
            return val_str(b, kv[mid].val);
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
    return b->n_labels > 0 ? kv_find(b, refs_of(b), b->n_labels, key) : NULL;
}

const char *blob_field(const struct blob *b, const char *key)
{
    return b->n_fields > 0 ? kv_find(b, refs_of(b) + b->n_labels, b->n_fields, key) : NULL;
}

/* The <i>-th of the <n> pairs from index <first> on. */
static bool kv_at(const struct blob *b, size_t first, size_t n, size_t i, struct blob_kv *out)
{
    const struct kv_ref *r;

    if (i >= n) {
        return false;
    }
    r = refs_of(b) + first + i;
    out->key = key_str(b, r->key);
    out->val = val_str(b, r->val);
    return true;
}

bool blob_label_at(const struct blob *b, size_t i, struct blob_kv *kv)
{
    return kv_at(b, 0, b->n_labels, i, kv);
}

bool blob_field_at(const struct blob *b, size_t i, struct blob_kv *kv)
{
    return kv_at(b, b->n_labels, b->n_fields, i, kv);
}

size_t blob_footprint(const struct blob *b)
{
    return b->size;
}
