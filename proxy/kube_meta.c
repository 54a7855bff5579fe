/*
 * kube_meta.c - what the cache needs to know about one object, read as kube-apiserver reads
 * it (see kube_meta.h).
 *
 * The bytes are validated by the strict scanner first (kube_json_check_object: our depth
 * cap, before cJSON recurses), then parsed with cJSON, read, and the tree freed before
 * returning (STYLE: cJSON trees are temporary). Go's decoder differs from cJSON in two ways
 * that matter here and both are undone: a repeated key keeps its last value (member_last),
 * and an escaped NUL does not end a string (lift_nul_escapes). Two passes over the tree: one
 * sizes the string arena, one fills it. Pure functions: any thread, no locks, no globals.
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

#include <cJSON.h>

#include "cache/bug.h"
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

/*
 * The member <key> of object <obj> as Go's decoder picks it: the last of repeated keys
 * (cJSON_GetObjectItemCaseSensitive finds the first). NULL when absent or <obj> is no object.
 */
static const cJSON *member_last(const cJSON *obj, const char *key)
{
    const cJSON *found = NULL;
    const cJSON *c;

    if (!cJSON_IsObject(obj)) {
        return NULL;
    }
    cJSON_ArrayForEach(c, obj)
    {
        if (c->string != NULL && strcmp(c->string, key) == 0) {
            found = c;
        }
    }
    return found;
}

/*
 * cJSON ends a string at an escaped NUL, so a key "metadata\u0000" would read as "metadata" and
 * a resourceVersion "5\u0000" as 5, where Go sees other strings. Returns a copy of data[0..len)
 * in which every \u0000 escape reads \u0001 (caller frees), or NULL when there is none. Both
 * characters are invalid in every Kubernetes name, key and resourceVersion, so the lifted
 * string stays invalid but can no longer alias a valid one. <data> is valid JSON, where a
 * backslash only ever starts an escape, so skipping each escaped character suffices.
 */
static char *lift_nul_escapes(const char *data, size_t len)
{
    const char *p = data;
    const char *end = data + len;
    char *copy = NULL;

    while (p < end) {
        const char *bs = memchr(p, '\\', (size_t)(end - p));

        if (bs == NULL) {
            break;
        }
        if (end - bs >= 6 && memcmp(bs + 1, "u0000", 5) == 0) {
            if (copy == NULL) {
                copy = xmalloc(len);
                memcpy(copy, data, len);
            }
            copy[bs - data + 5] = '1';
        }
        p = bs + 2;
    }
    return copy;
}

/* Follows a dotted path from <root>; NULL when a segment is missing or too long. */
static const cJSON *json_path(const cJSON *root, const char *path)
{
    const cJSON *cur = root;
    char seg[KUBE_META_MAX_PATH];

    while (cur != NULL) {
        const char *dot = strchr(path, '.');
        size_t n = dot != NULL ? (size_t)(dot - path) : strlen(path);

        if (n >= sizeof(seg) || (!cJSON_IsObject(cur) && !cJSON_IsArray(cur))) {
            return NULL;
        }
        memcpy(seg, path, n);
        seg[n] = '\0';
        if (cJSON_IsArray(cur)) { /* a numeric segment indexes an array: status.podIPs.0.ip */
            char *end = NULL;
            long idx = strtol(seg, &end, 10);
            if (n == 0 || *end != '\0' || idx < 0 || idx > 65535) {
                return NULL;
            }
            cur = cJSON_GetArrayItem(cur, (int)idx);
        } else {
            cur = member_last(cur, seg);
        }
        if (dot == NULL) {
            return cur;
        }
        path = dot + 1;
    }
    return NULL;
}

/* Text of a selectable field value: strings as-is, booleans, exact integers; NULL = omit. */
static const char *field_text(const cJSON *v, char *num, size_t num_cap)
{
    if (cJSON_IsString(v)) {
        return v->valuestring;
    }
    if (cJSON_IsTrue(v)) {
        return "true";
    }
    if (cJSON_IsFalse(v)) {
        return "false";
    }
    if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble == trunc(v->valuedouble) &&
        fabs(v->valuedouble) < 9.2e18) {
        snprintf(num, num_cap, "%" PRId64, (int64_t)v->valuedouble);
        return num;
    }
    return NULL;
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

/*
 * Fills <out> from the parsed tree. Runs twice: first with out->arena == NULL to size the
 * arena and count pairs, then for real.
 */
static void meta_collect(const cJSON *md, const cJSON *root, const char *const *field_paths,
                         struct arena *a, struct kube_meta *out)
{
    const cJSON *name = member_last(md, "name");
    const cJSON *ns = member_last(md, "namespace");
    const cJSON *rv = member_last(md, "resourceVersion");
    const cJSON *labels = member_last(md, "labels");
    const cJSON *lab_obj = cJSON_IsObject(labels) ? labels : NULL;
    const cJSON *l;
    size_t n = 0;

    out->meta.name = arena_put(a, name->valuestring, strlen(name->valuestring));
    out->meta.ns =
        cJSON_IsString(ns) ? arena_put(a, ns->valuestring, strlen(ns->valuestring)) : NULL;
    out->meta.rv_str = cJSON_IsString(rv) ? arena_put(a, rv->valuestring, strlen(rv->valuestring))
                                          : arena_put(a, "", 0);
    cJSON_ArrayForEach(l, lab_obj)
    {
        if (cJSON_IsString(l) && l->string != NULL) {
            const char *k = arena_put(a, l->string, strlen(l->string));
            const char *v = arena_put(a, l->valuestring, strlen(l->valuestring));

            if (out->kv != NULL) {
                out->kv[n] = (struct blob_kv){k, v};
            }
            n++;
        }
    }
    out->meta.n_labels = n;
    for (size_t i = 0; field_paths != NULL && field_paths[i] != NULL; i++) {
        char num[32];
        const char *spec = field_paths[i];
        const char *colon = strchr(spec, ':');
        size_t klen = colon ? (size_t)(colon - spec) : strlen(spec);
        const char *alt = colon ? colon + 1 : spec;
        const char *text = NULL;
        size_t tlen = 0;

        /* "key:path1|path2|=default": the first path present wins, else the literal */
        while (text == NULL && *alt != '\0') {
            const char *bar = strchr(alt, '|');
            size_t alen = bar ? (size_t)(bar - alt) : strlen(alt);
            char path[KUBE_META_MAX_PATH];
            if (alt[0] == '=') {
                text = alt + 1;
                tlen = alen - 1;
            } else if (alen < sizeof(path)) {
                memcpy(path, alt, alen);
                path[alen] = '\0';
                text = field_text(json_path(root, path), num, sizeof(num));
                tlen = text != NULL ? strlen(text) : 0;
            }
            alt += alen + (bar ? 1 : 0);
        }
        if (text != NULL) {
            const char *k = arena_put(a, spec, klen);
            const char *v = arena_put(a, text, tlen);

            if (out->kv != NULL) {
                out->kv[n] = (struct blob_kv){k, v};
            }
            n++;
        }
    }
    out->meta.n_fields = n - out->meta.n_labels;
}

/* The byte span of metadata.resourceVersion's content, or -ENOENT (absent / escaped). */
static int rv_span(const char *data, size_t len, size_t *off, size_t *rlen)
{
    size_t md_off, md_len, v_off, v_len;

    if (kube_json_member(data, len, "metadata", &md_off, &md_len) != 0 ||
        kube_json_member(data + md_off, md_len, "resourceVersion", &v_off, &v_len) != 0) {
        return -ENOENT;
    }
    if (v_len < 2 || data[md_off + v_off] != '"' ||
        memchr(data + md_off + v_off, '\\', v_len) != NULL) {
        return -ENOENT;
    }
    *off = md_off + v_off + 1;
    *rlen = v_len - 2;
    return 0;
}

/* Whether p[0..end) is JSON whitespace only: cJSON stopped where the object ends. */
static bool only_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) {
        p++;
    }
    return p == end;
}

int kube_meta_parse(const char *data, size_t len, const char *const *field_paths,
                    struct kube_meta *out)
{
    struct arena a = {NULL, 0};
    const cJSON *md, *name, *ns, *rv;
    const char *end = NULL;
    const char *base;
    char *lifted = NULL;
    cJSON *root = NULL;
    size_t off = 0, rlen = 0, n_labels;
    int rc = -EPROTO;

    memset(out, 0, sizeof(*out));
    /* Strict validation with our depth cap before cJSON recurses over it. */
    if (kube_json_check_object(data, len) != 0) {
        return -EPROTO;
    }
    lifted = lift_nul_escapes(data, len);
    base = lifted != NULL ? lifted : data;
    root = cJSON_ParseWithLengthOpts(base, len, &end, 0);
    if (root == NULL || end == NULL || end < base || end > base + len) {
        goto out;
    }
    md = member_last(root, "metadata");
    name = member_last(md, "name");
    ns = member_last(md, "namespace");
    rv = member_last(md, "resourceVersion");
    if (!only_ws(data + (end - base), data + len) || !cJSON_IsObject(md) || !cJSON_IsString(name) ||
        name->valuestring[0] == '\0' || !(ns == NULL || cJSON_IsNull(ns) || cJSON_IsString(ns)) ||
        !(rv == NULL || cJSON_IsNull(rv) || cJSON_IsString(rv))) {
        goto out;
    }

    meta_collect(md, root, field_paths, &a, out);
    out->arena = xmalloc(a.used);
    out->kv = xcalloc(out->meta.n_labels + out->meta.n_fields, sizeof(*out->kv));
    a = (struct arena){out->arena, 0};
    meta_collect(md, root, field_paths, &a, out);

    n_labels = labels_dedup(out->kv, out->meta.n_labels);
    memmove(out->kv + n_labels, out->kv + out->meta.n_labels,
            out->meta.n_fields * sizeof(*out->kv));
    out->meta.n_labels = n_labels;
    out->meta.labels = out->kv;
    out->meta.fields = out->kv + n_labels;
    /* The span is only trusted when its bytes are the value cJSON saw (no escapes; a
     * repeated key is the last copy on both sides). */
    if (rv_span(data, len, &off, &rlen) == 0 && rlen == strlen(out->meta.rv_str) &&
        memcmp(data + off, out->meta.rv_str, rlen) == 0 && rlen > 0) {
        out->meta.rv_off = off;
        out->meta.rv_len = rlen;
    }
    rc = 0;
out:
    cJSON_Delete(root);
    free(lifted);
    return rc;
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

struct blob *kube_meta_blob(const char *data, size_t len, const char *const *field_paths)
{
    struct kube_meta m;
    struct blob *b;

    if (kube_meta_parse(data, len, field_paths, &m) != 0) {
        return NULL;
    }
    b = blob_new(data, len, &m.meta);
    kube_meta_fini(&m);
    return b;
}
