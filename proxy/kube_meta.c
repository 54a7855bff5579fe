/*
 * kube_meta.c - what the cache needs to know about one object, read as kube-apiserver reads
 * it (see kube_meta.h).
 *
 * The bytes are validated once by the strict scanner (kube_json_check_object: strict JSON,
 * our depth cap), then read as raw spans, without a tree (kube_json_object_next_valid): one pass
 * over the top-level members picks metadata and the first segment of every field path, one
 * pass over metadata picks name, namespace, resourceVersion and labels, and each field path
 * walks on from its first segment. Keys and strings are read as Go's decoder reads them: a
 * repeated key keeps its last value, escapes and invalid UTF-8 decode as Go unquotes them
 * (gotext_json_unescape), and an escaped NUL, which a C string cannot hold, reads U+0001 (so
 * it never equals a valid name, key or RV). Strings are decoded into one arena sized by a
 * counting pass. Pure functions: any thread, no locks, no globals.
 */
#include "proxy/kube_meta.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/bug.h"
#include "cache/gotext.h"
#include "proxy/kube_json.h"

const char *const kube_meta_member_order[] = {"name",
                                              "generateName",
                                              "namespace",
                                              "selfLink",
                                              "uid",
                                              "resourceVersion",
                                              "generation",
                                              "creationTimestamp",
                                              "deletionTimestamp",
                                              "deletionGracePeriodSeconds",
                                              "labels",
                                              "annotations",
                                              "ownerReferences",
                                              "finalizers",
                                              "managedFields",
                                              NULL};

/* Two-pass string arena: with base == NULL it only counts. */
struct arena {
    char *base;
    size_t used;
};

static const char *arena_put(struct arena *a, const char *s, size_t n)
{
    char *dst = a->base != NULL ? a->base + a->used : NULL;

    if (dst != NULL) {
        memcpy(dst, s, n);
        dst[n] = '\0';
    }
    a->used += n + 1;
    return dst;
}

/* The raw bytes of one JSON value inside the object; p == NULL when absent. */
struct span {
    const char *p;
    size_t n;
};

static bool span_is(struct span v, char first)
{
    return v.p != NULL && v.n > 0 && v.p[0] == first;
}

static bool span_is_lit(struct span v, const char *lit)
{
    return v.p != NULL && v.n == strlen(lit) && memcmp(v.p, lit, v.n) == 0;
}

/*
 * Puts the JSON string <v> (with its quotes) decoded as Go unquotes it, an escaped NUL as
 * U+0001. Returns the decoded copy (NULL while counting).
 */
static const char *arena_put_json(struct arena *a, struct span v)
{
    const char *p = v.p + 1;
    const char *end = v.p + v.n - 1;
    char *dst = a->base != NULL ? a->base + a->used : NULL;
    size_t o = 0;

    while (p < end) {
        char u[4];
        size_t k;

        if ((unsigned char)*p < 0x80 && *p != '\\') {
            if (dst != NULL) {
                dst[o] = *p;
            }
            o++;
            p++;
            continue;
        }
        k = gotext_json_unescape(&p, end, u);
        if (k == 1 && u[0] == '\0') {
            u[0] = '\x01';
        }
        if (dst != NULL) {
            memcpy(dst + o, u, k);
        }
        o += k;
    }
    if (dst != NULL) {
        dst[o] = '\0';
    }
    a->used += o + 1;
    return dst;
}

/* Up to this many distinct first segments of field paths (and second segments under them)
 * are picked in one pass over their object; any others are looked up alone. */
#define META_PICK_MAX 16

/* Members picked in one pass over their object: a name and what the pass found. */
struct picks {
    size_t n;
    const char *key[META_PICK_MAX];
    size_t key_len[META_PICK_MAX];
    struct span val[META_PICK_MAX];
};

/* What the object is read through: top-level members ([0] is metadata) and, under each, the
 * second segments of the field paths that start there. */
struct tops {
    struct picks top;
    struct picks sub[META_PICK_MAX];
};

/* The value of member key[0..klen) of the object <obj> as Go's decoder picks it (the last of
 * repeated keys); absent when missing or <obj> is no object. */
static struct span member_of(struct span obj, const char *key, size_t klen)
{
    struct span found = {NULL, 0};
    struct kube_json_kv kv;
    size_t pos = 0;

    if (!span_is(obj, '{')) {
        return found;
    }
    while (kube_json_object_next_valid(obj.p, obj.n, &pos, &kv) == 1) {
        if (kube_json_key_eq(obj.p, &kv, key, klen)) {
            found = (struct span){obj.p + kv.val_off, kv.val_len};
        }
    }
    return found;
}

/* Element <idx> of the array <arr>; absent when out of range. */
static struct span element_of(struct span arr, long idx)
{
    size_t pos = 0, off = 0, len = 0;

    for (long i = 0; i <= idx; i++) {
        if (kube_json_array_next(arr.p, arr.n, &pos, &off, &len) != 1) {
            return (struct span){NULL, 0};
        }
    }
    return (struct span){arr.p + off, len};
}

/* The index of the pick of key[0..klen) in <p>, or -1. */
static int picks_index(const struct picks *p, const char *key, size_t klen)
{
    for (size_t i = 0; i < p->n; i++) {
        if (p->key_len[i] == klen && memcmp(p->key[i], key, klen) == 0) {
            return (int)i;
        }
    }
    return -1;
}

/* Adds key[0..klen) to <p> unless it is there or <p> is full. Returns its index, or -1. */
static int picks_want(struct picks *p, const char *key, size_t klen)
{
    int i = picks_index(p, key, klen);

    if (i >= 0 || p->n == META_PICK_MAX) {
        return i;
    }
    p->key[p->n] = key;
    p->key_len[p->n] = klen;
    p->val[p->n] = (struct span){NULL, 0};
    return (int)p->n++;
}

/* Wants the first two segments of the dotted path[0..n) picked. */
static void tops_want(struct tops *t, const char *path, size_t n)
{
    const char *dot = memchr(path, '.', n);
    int i = picks_want(&t->top, path, dot != NULL ? (size_t)(dot - path) : n);

    if (i >= 0 && dot != NULL) {
        const char *rest = dot + 1;
        const char *dot2 = memchr(rest, '.', (size_t)(path + n - rest));

        (void)picks_want(&t->sub[i], rest,
                         dot2 != NULL ? (size_t)(dot2 - rest) : (size_t)(path + n - rest));
    }
}

/* The alternatives of one field spec "key:path1|path2|=default" (or "path"), and through
 * <klen> the length of its key. */
static const char *spec_alts(const char *spec, size_t *klen)
{
    const char *colon = strchr(spec, ':');

    *klen = colon ? (size_t)(colon - spec) : strlen(spec);
    return colon ? colon + 1 : spec;
}

/* One pass over the object <obj>: fills every pick's value (the last of repeated keys). */
static void picks_fill(struct picks *p, struct span obj)
{
    struct kube_json_kv kv;
    size_t pos = 0;

    if (p->n == 0 || !span_is(obj, '{')) {
        return;
    }
    while (kube_json_object_next_valid(obj.p, obj.n, &pos, &kv) == 1) {
        for (size_t i = 0; i < p->n; i++) {
            if (kube_json_key_eq(obj.p, &kv, p->key[i], p->key_len[i])) {
                p->val[i] = (struct span){obj.p + kv.val_off, kv.val_len};
            }
        }
    }
}

/* One pass over the top-level members, then one over each picked member with picks under it. */
static void tops_pick(struct tops *t, struct span root)
{
    picks_fill(&t->top, root);
    for (size_t i = 0; i < t->top.n; i++) {
        picks_fill(&t->sub[i], t->top.val[i]);
    }
}

/* Follows the dotted path[0..n) from the top level; absent when a segment is missing or too
 * long, or a value on the way is neither an object nor an array. */
static struct span path_of(const struct tops *t, struct span root, const char *path, size_t n)
{
    const char *end = path + n;
    const struct picks *picked = &t->top; /* the picks of the object at hand, if any */
    struct span cur = root;

    for (;;) {
        const char *dot = memchr(path, '.', (size_t)(end - path));
        size_t sn = dot != NULL ? (size_t)(dot - path) : (size_t)(end - path);
        char seg[KUBE_META_MAX_PATH];

        if (sn >= sizeof(seg) || !(span_is(cur, '{') || span_is(cur, '['))) {
            return (struct span){NULL, 0};
        }
        memcpy(seg, path, sn);
        seg[sn] = '\0';
        if (span_is(cur, '[')) { /* a numeric segment indexes an array: status.podIPs.0.ip */
            char *e = NULL;
            long idx = strtol(seg, &e, 10);

            if (sn == 0 || *e != '\0' || idx < 0 || idx > 65535) {
                return (struct span){NULL, 0};
            }
            cur = element_of(cur, idx);
            picked = NULL;
        } else {
            int i = picked != NULL ? picks_index(picked, seg, sn) : -1;

            cur = i >= 0 ? picked->val[i] : member_of(cur, seg, sn);
            picked = i >= 0 && picked == &t->top ? &t->sub[i] : NULL;
        }
        if (dot == NULL || cur.p == NULL) {
            return cur;
        }
        path = dot + 1;
    }
}

/* Whether the JSON number <v> is a double holding an exact integer that fits int64 (as read
 * by strtod, the way a float64 decoder reads it); then its decimal text goes to <num>. */
static bool number_text(struct span v, char *num, size_t num_cap)
{
    char small[64];
    char *copy = v.n < sizeof(small) ? small : xmalloc(v.n + 1);
    double d;
    bool ok;

    memcpy(copy, v.p, v.n);
    copy[v.n] = '\0';
    d = strtod(copy, NULL);
    if (copy != small) {
        free(copy);
    }
    ok = isfinite(d) && d == trunc(d) && fabs(d) < 9.2e18;
    if (ok) {
        snprintf(num, num_cap, "%" PRId64, (int64_t)d);
    }
    return ok;
}

/* The value of one field spec: a JSON string to decode, or text as it is (a default, a
 * boolean, or an exact integer in num); neither when no alternative gave one. */
struct fval {
    struct span str;
    const char *text;
    size_t text_n;
    char num[32];
};

/* Resolves the spec "key:path1|path2|=default" (or "path"): the first path whose value is a
 * string, a boolean or an exact integer wins, else the literal after "=". */
static void field_resolve(const struct tops *t, struct span root, const char *spec, struct fval *f)
{
    size_t klen;
    const char *alt = spec_alts(spec, &klen);

    memset(f, 0, sizeof(*f));
    while (*alt != '\0') {
        const char *bar = strchr(alt, '|');
        size_t alen = bar ? (size_t)(bar - alt) : strlen(alt);

        if (alt[0] == '=') {
            f->text = alt + 1;
            f->text_n = alen - 1;
            return;
        }
        if (alen < KUBE_META_MAX_PATH) {
            struct span v = path_of(t, root, alt, alen);

            if (span_is(v, '"')) {
                f->str = v;
                return;
            }
            if (span_is_lit(v, "true") || span_is_lit(v, "false")) {
                f->text = v.p;
                f->text_n = v.n;
                return;
            }
            if (v.p != NULL && (v.p[0] == '-' || gotext_is_digit(v.p[0])) &&
                number_text(v, f->num, sizeof(f->num))) {
                f->text = f->num;
                f->text_n = strlen(f->num);
                return;
            }
        }
        alt += alen + (bar ? 1 : 0);
    }
}

/*
 * Orders labels by key, then by insertion order, so the last duplicate can win (Go's map
 * decoding). The arena is filled in insertion order, so key addresses encode it and survive
 * qsort moving the pairs around.
 */
static int kv_pos_cmp(const void *a, const void *b)
{
    const struct blob_kv *x = a;
    const struct blob_kv *y = b;
    int c = strcmp(x->key, y->key);

    if (c != 0) {
        return c;
    }
    return x->key < y->key ? -1 : (x->key > y->key);
}

/* Sorts labels and keeps the last of each run of equal keys; returns the new count. */
static size_t labels_dedup(struct blob_kv *kv, size_t n)
{
    size_t o = 0;

    qsort(kv, n, sizeof(*kv), kv_pos_cmp);
    for (size_t i = 0; i < n; i++) {
        if (o > 0 && strcmp(kv[o - 1].key, kv[i].key) == 0) {
            kv[o - 1] = kv[i];
        } else {
            kv[o++] = kv[i];
        }
    }
    return o;
}

/* What the passes over metadata found. */
struct md_spans {
    struct span name, ns, rv, labels;
};

static void md_pick(struct span md, struct md_spans *m)
{
    struct kube_json_kv kv;
    size_t pos = 0;

    memset(m, 0, sizeof(*m));
    while (kube_json_object_next_valid(md.p, md.n, &pos, &kv) == 1) {
        struct span v = {md.p + kv.val_off, kv.val_len};

        if (kube_json_key_eq(md.p, &kv, "name", 4)) {
            m->name = v;
        } else if (kube_json_key_eq(md.p, &kv, "namespace", 9)) {
            m->ns = v;
        } else if (kube_json_key_eq(md.p, &kv, "resourceVersion", 15)) {
            m->rv = v;
        } else if (kube_json_key_eq(md.p, &kv, "labels", 6)) {
            m->labels = v;
        }
    }
}

/*
 * Fills <out> from the spans. Runs twice: first with a->base == NULL to size the arena and
 * count pairs, then for real. <fv> holds each field spec's value (its first path present).
 */
static void meta_collect(const struct md_spans *md, const char *const *field_paths,
                         const struct fval *fv, struct arena *a, struct kube_meta *out)
{
    size_t n = 0;

    out->meta.name = arena_put_json(a, md->name);
    out->meta.ns = span_is(md->ns, '"') ? arena_put_json(a, md->ns) : NULL;
    out->meta.rv_str = span_is(md->rv, '"') ? arena_put_json(a, md->rv) : arena_put(a, "", 0);
    if (span_is(md->labels, '{')) {
        struct kube_json_kv kv;
        size_t pos = 0;

        while (kube_json_object_next_valid(md->labels.p, md->labels.n, &pos, &kv) == 1) {
            struct span key = {md->labels.p + kv.key_off - 1, kv.key_len + 2};
            struct span v = {md->labels.p + kv.val_off, kv.val_len};

            if (span_is(v, '"')) {
                const char *k = arena_put_json(a, key);
                const char *val = arena_put_json(a, v);

                if (out->kv != NULL) {
                    out->kv[n] = (struct blob_kv){k, val};
                }
                n++;
            }
        }
    }
    out->meta.n_labels = n;
    for (size_t i = 0; field_paths != NULL && field_paths[i] != NULL; i++) {
        const char *spec = field_paths[i];
        size_t klen;
        const char *text, *k;

        if (fv[i].str.p != NULL) {
            text = arena_put_json(a, fv[i].str);
        } else if (fv[i].text != NULL) {
            text = arena_put(a, fv[i].text, fv[i].text_n);
        } else {
            continue;
        }
        (void)spec_alts(spec, &klen);
        k = arena_put(a, spec, klen);
        if (out->kv != NULL) {
            out->kv[n] = (struct blob_kv){k, text};
        }
        n++;
    }
    out->meta.n_fields = n - out->meta.n_labels;
}

/* Field specs resolved on the stack; more go to the heap. */
#define META_FIELDS_STACK 16

/* kube_meta_parse; with <valid>, for bytes a strict scan accepted already. */
static int meta_parse(const char *data, size_t len, const char *const *field_paths,
                      struct kube_meta *out, bool valid)
{
    struct span root = {data, len};
    struct fval stack_fv[META_FIELDS_STACK];
    struct fval *fv = stack_fv;
    struct arena a = {NULL, 0};
    struct md_spans md;
    struct tops t;
    size_t nf = 0, n_labels;

    memset(out, 0, sizeof(*out));
    /* Strict validation with our depth cap; from here every span is well formed. */
    if (valid ? len == 0 || len > KUBE_JSON_MAX_INPUT : kube_json_check_object(data, len) != 0) {
        return -EPROTO;
    }
    while (root.n > 0 && gotext_is_json_space(root.p[0])) {
        root.p++;
        root.n--;
    }
    while (root.n > 0 && gotext_is_json_space(root.p[root.n - 1])) {
        root.n--;
    }
    t.top.n = 0;
    for (size_t i = 0; i < META_PICK_MAX; i++) {
        t.sub[i].n = 0;
    }
    tops_want(&t, "metadata", 8);
    for (; field_paths != NULL && field_paths[nf] != NULL; nf++) {
        size_t klen;
        const char *alt = spec_alts(field_paths[nf], &klen);

        while (*alt != '\0') {
            size_t alen = strcspn(alt, "|");

            if (alt[0] != '=') {
                tops_want(&t, alt, alen);
            }
            alt += alen + (alt[alen] == '|' ? 1 : 0);
        }
    }
    tops_pick(&t, root);
    if (!span_is(t.top.val[0], '{')) {
        return -EPROTO;
    }
    md_pick(t.top.val[0], &md);
    if (!span_is(md.name, '"') || md.name.n == 2 ||
        !(md.ns.p == NULL || span_is_lit(md.ns, "null") || span_is(md.ns, '"')) ||
        !(md.rv.p == NULL || span_is_lit(md.rv, "null") || span_is(md.rv, '"'))) {
        return -EPROTO;
    }
    if (nf > META_FIELDS_STACK) {
        fv = xcalloc(nf, sizeof(*fv));
    }
    for (size_t i = 0; i < nf; i++) {
        field_resolve(&t, root, field_paths[i], &fv[i]);
    }

    meta_collect(&md, field_paths, fv, &a, out);
    out->arena = xmalloc(a.used);
    out->kv = xcalloc(out->meta.n_labels + out->meta.n_fields, sizeof(*out->kv));
    a = (struct arena){out->arena, 0};
    meta_collect(&md, field_paths, fv, &a, out);
    if (fv != stack_fv) {
        free(fv);
    }

    n_labels = labels_dedup(out->kv, out->meta.n_labels);
    memmove(out->kv + n_labels, out->kv + out->meta.n_labels,
            out->meta.n_fields * sizeof(*out->kv));
    out->meta.n_labels = n_labels;
    out->meta.labels = out->kv;
    out->meta.fields = out->kv + n_labels;
    /* The span is only trusted when its bytes are the decoded value (no escapes, nothing
     * that decodes to other bytes). */
    if (span_is(md.rv, '"') && md.rv.n > 2 && md.rv.n - 2 == strlen(out->meta.rv_str) &&
        memcmp(md.rv.p + 1, out->meta.rv_str, md.rv.n - 2) == 0) {
        out->meta.rv_off = (size_t)(md.rv.p + 1 - data);
        out->meta.rv_len = md.rv.n - 2;
    }
    return 0;
}

int kube_meta_parse(const char *data, size_t len, const char *const *field_paths,
                    struct kube_meta *out)
{
    return meta_parse(data, len, field_paths, out, false);
}

void kube_meta_fini(struct kube_meta *m)
{
    if (m == NULL) {
        return;
    }
    free(m->kv);
    free(m->arena);
    memset(m, 0, sizeof(*m));
}

static struct blob *meta_blob(const char *data, size_t len, const char *const *field_paths,
                              bool valid)
{
    struct kube_meta m;
    struct blob *b;

    if (meta_parse(data, len, field_paths, &m, valid) != 0) {
        return NULL;
    }
    b = blob_new(data, len, &m.meta);
    kube_meta_fini(&m);
    return b;
}

struct blob *kube_meta_blob(const char *data, size_t len, const char *const *field_paths)
{
    return meta_blob(data, len, field_paths, false);
}

struct blob *kube_meta_blob_valid(const char *data, size_t len, const char *const *field_paths)
{
    return meta_blob(data, len, field_paths, true);
}
