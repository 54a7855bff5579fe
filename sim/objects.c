/*
 * objects.c - the simulator's write rules: create and update preparation and JSON merge
 * patch (see objects.h), in the order kube-apiserver's generic registry checks: handlers'
 * checkName, rest.BeforeCreate/BeforeUpdate (namespace, generateName, system fields),
 * validation (422), then the storage layer's resourceVersion rules.
 *
 * What kube's defaulting adds on create is defaults.c's; Service IPs and ports are alloc.c's
 * (sim.c calls it after a create); generated objects are gen.c's. This file may include
 * proxy/apires.h (the kinds table), sim/defaults.h, sim/proto.h (base64, Go member order)
 * and sim/tree.h, and nothing of the server. Everything here is a pure function of its
 * arguments: any thread, no locks.
 */
#include "sim/objects.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cache/bug.h"
#include "proxy/apires.h"
#include "proxy/kube_meta.h"
#include "sim/defaults.h"
#include "sim/proto.h"
#include "sim/tree.h"

/* kube's utilrand alphabet: no vowels (no words), no 0/1/3 (confusable). */
#define GEN_ALPHABET "bcdfghjklmnpqrstvwxz2456789"

/*
 * Moves the members named in <keys> (NULL-terminated) to the front of <obj>, in that order,
 * so printed objects read like the apiserver's (Go struct order). Relinks, never copies.
 */
static void order_members(cJSON *obj, const char *const *keys)
{
    cJSON *tmp = tree_must(cJSON_CreateObject());

    for (size_t i = 0; keys[i] != NULL; i++) {
        cJSON *item = cJSON_DetachItemFromObjectCaseSensitive(obj, keys[i]);
        if (item != NULL) {
            cJSON_AddItemToArray(tmp, item); /* keeps item->string */
        }
    }
    while (obj->child != NULL) {
        cJSON_AddItemToArray(tmp, cJSON_DetachItemViaPointer(obj, obj->child));
    }
    while (tmp->child != NULL) {
        cJSON_AddItemToArray(obj, cJSON_DetachItemViaPointer(tmp, tmp->child));
    }
    cJSON_Delete(tmp);
}

static const char *const top_order[] = {"kind", "apiVersion", "metadata", NULL};

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t err_len, int rc,
                                                      const char *fmt, ...)
{
    va_list ap;

    if (err != NULL && err_len > 0) {
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* ---- kinds ----------------------------------------------------------------------------- */

const struct apires_kind *objects_type(const char *plural)
{
    size_t n = 0;
    const struct apires_kind *t = apires_builtin_table(&n);

    if (plural == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(t[i].plural, plural) == 0) {
            return &t[i];
        }
    }
    return NULL;
}

const char *objects_kind(const char *plural)
{
    const struct apires_kind *t = objects_type(plural);

    return t != NULL ? t->kind : NULL;
}

/* ---- write preparation ------------------------------------------------------------------- */

/* "v1" for the core group, else "group/version". */
static void api_version_of(const struct apires_kind *t, char *buf, size_t cap)
{
    if (t->group[0] == '\0') {
        snprintf(buf, cap, "%s", t->version);
    } else {
        snprintf(buf, cap, "%s/%s", t->group, t->version);
    }
}

/* Kind and apiVersion: filled from the table when absent; a different kind is a decode error. */
static int check_kind(cJSON *obj, const struct apires_kind *t, char *err, size_t err_len)
{
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    char api_version[160];

    if (t == NULL) {
        /* Custom resources are decoded as unstructured, which needs both. */
        if (!cJSON_IsString(kind) || kind->valuestring[0] == '\0') {
            return fail(err, err_len, -EINVAL, "Object 'Kind' is missing in the request body");
        }
        if (tree_str(obj, "apiVersion")[0] == '\0') {
            return fail(err, err_len, -EINVAL,
                        "Object 'apiVersion' is missing in the request body");
        }
        return 0;
    }
    if (kind != NULL && !(cJSON_IsString(kind) && (kind->valuestring[0] == '\0' ||
                                                   strcmp(kind->valuestring, t->kind) == 0))) {
        return fail(err, err_len, -EINVAL,
                    "the object provided is unrecognized (must be of type %s)", t->kind);
    }
    tree_set_str(obj, "kind", t->kind);
    if (tree_str(obj, "apiVersion")[0] == '\0') {
        api_version_of(t, api_version, sizeof(api_version));
        tree_set_str(obj, "apiVersion", api_version);
    }
    return 0;
}

/* metadata, created when absent; NULL (with -EINVAL in err) when it is not an object. */
static cJSON *meta_of(cJSON *obj, const char *kind, char *err, size_t err_len)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");

    if (meta == NULL) {
        return tree_add_obj(obj, "metadata");
    }
    if (!cJSON_IsObject(meta)) {
        fail(err, err_len, -EINVAL,
             "the object provided is unrecognized (must be of type %s): metadata is not an "
             "object",
             kind);
        return NULL;
    }
    return meta;
}

/* handlers/rest.go checkName: the URL's name (and namespace) against the body's. */
static int check_name(const cJSON *meta, const char *url_name, const char *ns, char *err,
                      size_t err_len)
{
    const char *name = tree_str(meta, "name");
    const char *obj_ns = tree_str(meta, "namespace");

    if (name[0] == '\0') {
        return fail(err, err_len, -EINVAL,
                    "the name of the object (%s based on URL) was undeterminable: name must be "
                    "provided",
                    url_name);
    }
    if (strcmp(name, url_name) != 0) {
        return fail(err, err_len, -EINVAL,
                    "the name of the object (%s) does not match the name on the URL (%s)", name,
                    url_name);
    }
    if (ns != NULL && ns[0] != '\0' && obj_ns[0] != '\0' && strcmp(obj_ns, ns) != 0) {
        return fail(err, err_len, -EINVAL,
                    "the namespace of the object (%s) does not match the namespace on the "
                    "request (%s)",
                    obj_ns, ns);
    }
    return 0;
}

/* rest.BeforeCreate/BeforeUpdate: default an empty namespace, clear it when cluster-scoped. */
static int apply_namespace(cJSON *meta, const char *ns, char *err, size_t err_len)
{
    const char *obj_ns = tree_str(meta, "namespace");

    if (ns == NULL || ns[0] == '\0') {
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "namespace");
        return 0;
    }
    if (obj_ns[0] != '\0' && strcmp(obj_ns, ns) != 0) {
        return fail(err, err_len, -EINVAL,
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request");
    }
    tree_set_str(meta, "namespace", ns);
    return 0;
}

/* Parses a resourceVersion string as the storage versioner does; false when it is not one. */
static bool parse_rv(const char *s, uint64_t *rv)
{
    char *end = NULL;

    if (s[0] < '0' || s[0] > '9') {
        return false;
    }
    errno = 0;
    *rv = strtoull(s, &end, 10);
    return errno == 0 && *end == '\0';
}

/* names.SimpleNameGenerator: prefix cut to 58 bytes, plus 5 characters of the alphabet. */
static void generate_name(cJSON *meta, const char *prefix, const char *uid, uint64_t rv)
{
    char name[OBJECTS_GENERATE_PREFIX_MAX + OBJECTS_GENERATE_SUFFIX_LEN + 1];
    size_t n = strlen(prefix);
    uint64_t h = tree_mix64(tree_hash_str(TREE_HASH_INIT, uid) ^ rv);

    if (n > OBJECTS_GENERATE_PREFIX_MAX) {
        n = OBJECTS_GENERATE_PREFIX_MAX;
    }
    memcpy(name, prefix, n);
    for (size_t i = 0; i < OBJECTS_GENERATE_SUFFIX_LEN; i++) {
        name[n++] = GEN_ALPHABET[h % (sizeof(GEN_ALPHABET) - 1)];
        h /= sizeof(GEN_ALPHABET) - 1;
    }
    name[n] = '\0';
    tree_set_str(meta, "name", name);
}

/*
 * Keeps only the last member of each repeated key, in every object of <v>. cJSON keeps them
 * all and its lookups find the first, while Go's decoder (and kwp's proxy) take the last: a
 * body with {"stringData":..,"stringData":..} would otherwise keep a write-only field, and
 * one with two "metadata" would be stored with the system fields in the copy clients ignore.
 * (Go merges repeated typed sub-objects such as metadata; that is not modelled.) A hash set
 * per object keeps this linear in the number of members.
 */
static void dedupe_keys(cJSON *v)
{
    const cJSON **slots;
    size_t n = 0, mask = 1;
    cJSON *c, *prev;

    for (c = v->child; c != NULL; c = c->next) {
        n++;
    }
    if (cJSON_IsObject(v) && n > 1) {
        while (mask < 2 * n) {
            mask <<= 1;
        }
        slots = xcalloc(mask, sizeof(*slots));
        mask--;
        /* Walk backwards (the first child's prev is the last): the last occurrence wins. */
        for (c = v->child->prev; c != NULL; c = prev) {
            const char *key = c->string != NULL ? c->string : "";
            size_t i = (size_t)tree_hash_str(TREE_HASH_INIT, key) & mask;

            prev = c == v->child ? NULL : c->prev;
            while (slots[i] != NULL && strcmp(slots[i]->string, key) != 0) {
                i = (i + 1) & mask;
            }
            if (slots[i] != NULL) {
                cJSON_Delete(cJSON_DetachItemViaPointer(v, c));
            } else {
                slots[i] = c;
            }
        }
        free(slots);
    }
    for (c = v->child; c != NULL; c = c->next) {
        dedupe_keys(c);
    }
}

/* Secret stringData is write-only: its values are merged into data, base64, then dropped. */
static void fold_string_data(cJSON *obj)
{
    cJSON *sd = cJSON_DetachItemFromObjectCaseSensitive(obj, "stringData");
    cJSON *data;

    if (sd == NULL) {
        return;
    }
    if (cJSON_IsObject(sd) && sd->child != NULL) {
        data = tree_child_obj(obj, "data");
        for (const cJSON *e = sd->child; e != NULL; e = e->next) {
            if (cJSON_IsString(e)) {
                char *b64 = proto_base64_new(e->valuestring, strlen(e->valuestring));
                tree_set_str(data, e->string, b64);
                free(b64);
            }
        }
    }
    cJSON_Delete(sd);
}

/* Kinds whose registry strategies never set metadata.generation although they have a spec. */
static bool kind_has_generation(const cJSON *obj)
{
    const char *kind = tree_str(obj, "kind");

    return cJSON_GetObjectItemCaseSensitive(obj, "spec") != NULL &&
           strcmp(kind, "Namespace") != 0 && strcmp(kind, "Node") != 0 &&
           strcmp(kind, "Service") != 0;
}

/* "Deployment.apps" for the group "apps", "ConfigMap" for the core group. */
static void group_kind(const cJSON *obj, char *buf, size_t cap)
{
    const char *api_version = tree_str(obj, "apiVersion");
    const char *slash = strchr(api_version, '/');

    if (slash != NULL) {
        snprintf(buf, cap, "%s.%.*s", tree_str(obj, "kind"), (int)(slash - api_version),
                 api_version);
    } else {
        snprintf(buf, cap, "%s", tree_str(obj, "kind"));
    }
}

int objects_prepare_create(cJSON *obj, const char *resource, const char *ns,
                           const char *name_from_url, uint64_t rv, const char *uid,
                           const char *created, char *err, size_t err_len)
{
    const struct apires_kind *t = objects_type(resource);
    const char *kind = t != NULL ? t->kind : resource;
    char buf[256];
    cJSON *meta;
    uint64_t sent_rv = 0;
    bool workload = false;
    int rc;

    if (t != NULL && !t->namespaced) {
        ns = NULL; /* the strategy is not namespace-scoped whatever the caller says */
    }
    if (!cJSON_IsObject(obj)) {
        return fail(err, err_len, -EINVAL,
                    "the object provided is unrecognized (must be of type %s)", kind);
    }
    dedupe_keys(obj);
    rc = check_kind(obj, t, err, err_len);
    if (rc != 0) {
        return rc;
    }
    meta = meta_of(obj, tree_str(obj, "kind"), err, err_len);
    if (meta == NULL) {
        return -EINVAL;
    }
    if (name_from_url != NULL) {
        rc = check_name(meta, name_from_url, ns, err, err_len);
        if (rc != 0) {
            return rc;
        }
    }
    rc = apply_namespace(meta, ns, err, err_len);
    if (rc != 0) {
        return rc;
    }
    if (tree_str(meta, "name")[0] == '\0') {
        const char *prefix = tree_str(meta, "generateName");
        if (prefix[0] == '\0') {
            group_kind(obj, buf, sizeof(buf));
            return fail(err, err_len, -EDOM,
                        "%s \"\" is invalid: metadata.name: Required value: name or "
                        "generateName is required",
                        buf);
        }
        generate_name(meta, prefix, uid, rv);
    }
    /* etcd3 store Create: a parseable non-zero resourceVersion is refused (a plain error,
     * hence 500); anything else is overwritten. */
    if (parse_rv(tree_str(meta, "resourceVersion"), &sent_rv) && sent_rv != 0) {
        return fail(err, err_len, -EIO,
                    "resourceVersion should not be set on objects to be created");
    }

    tree_set_str(meta, "uid", uid);
    tree_set_str(meta, "creationTimestamp", created);
    snprintf(buf, sizeof(buf), "%" PRIu64, rv);
    tree_set_str(meta, "resourceVersion", buf);
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "deletionTimestamp");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "deletionGracePeriodSeconds");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "selfLink");
    if (strcmp(tree_str(obj, "kind"), "Secret") == 0) {
        fold_string_data(obj);
    } else {
        workload = defaults_apply(obj, t != NULL, uid);
    }
    /* After the defaults, which give every workload a spec: their strategies set generation 1
     * even when the body had no spec. */
    if (kind_has_generation(obj)) {
        tree_set_num(meta, "generation", 1);
    } else {
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "generation");
    }
    if (workload && proto_order(obj)) {
        return 0; /* defaulted and in Go's order */
    }
    order_members(meta, kube_meta_member_order);
    order_members(obj, top_order);
    return 0;
}

/* Copies member <key> of <from> into <to>, or deletes it from <to> when <from> has none. */
static void copy_member(cJSON *to, const cJSON *from, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(from, key);

    if (v == NULL) {
        cJSON_DeleteItemFromObjectCaseSensitive(to, key);
    } else {
        tree_set(to, key, tree_must(cJSON_Duplicate(v, true)));
    }
}

int objects_prepare_update(cJSON *new_obj, const cJSON *old_obj, const char *resource,
                           const char *ns, const char *name, uint64_t rv, char *err, size_t err_len)
{
    const struct apires_kind *t = objects_type(resource);
    const cJSON *old_meta = cJSON_GetObjectItemCaseSensitive(old_obj, "metadata");
    const cJSON *gen;
    const char *old_kind = tree_str(old_obj, "kind");
    const char *sent;
    char qualified[256];
    char buf[32];
    cJSON *meta;
    uint64_t sent_rv = 0;
    uint64_t old_rv = 0;
    int rc;

    if (!cJSON_IsObject(new_obj) || !cJSON_IsObject(old_obj)) {
        return fail(err, err_len, -EINVAL,
                    "the object provided is unrecognized (must be of type %s)",
                    old_kind[0] != '\0' ? old_kind : resource);
    }
    dedupe_keys(new_obj);
    if (t != NULL && !t->namespaced) {
        ns = "";
    }
    if (t != NULL && t->group[0] != '\0') {
        snprintf(qualified, sizeof(qualified), "%s.%s", resource, t->group);
    } else {
        snprintf(qualified, sizeof(qualified), "%s", resource);
    }
    if (name == NULL) {
        name = tree_str(old_meta, "name");
    }
    if (ns == NULL) {
        ns = tree_str(old_meta, "namespace"); /* "" for a cluster-scoped object */
    }

    /* kind/apiVersion default to the stored object's; another kind cannot decode. */
    sent = tree_str(new_obj, "kind");
    if (sent[0] != '\0' && old_kind[0] != '\0' && strcmp(sent, old_kind) != 0) {
        return fail(err, err_len, -EINVAL,
                    "the object provided is unrecognized (must be of type %s)", old_kind);
    }
    if (sent[0] == '\0') {
        copy_member(new_obj, old_obj, "kind");
    }
    if (tree_str(new_obj, "apiVersion")[0] == '\0') {
        copy_member(new_obj, old_obj, "apiVersion");
    }
    meta = meta_of(new_obj, old_kind, err, err_len);
    if (meta == NULL) {
        return -EINVAL;
    }
    rc = check_name(meta, name, ns, err, err_len);
    if (rc != 0) {
        return rc;
    }

    /* Store.Update: a set resourceVersion is a precondition, checked before anything else
     * (a non-numeric one can never match, so it conflicts). "" and "0" are unconditional. */
    sent = tree_str(meta, "resourceVersion");
    if (sent[0] != '\0' && !(parse_rv(sent, &sent_rv) && sent_rv == 0)) {
        if (!parse_rv(tree_str(old_meta, "resourceVersion"), &old_rv) ||
            !parse_rv(sent, &sent_rv) || sent_rv != old_rv) {
            return fail(err, err_len, -EBUSY,
                        "Operation cannot be fulfilled on %s \"%s\": the object has been "
                        "modified; please apply your changes to the latest version and try "
                        "again",
                        qualified, name);
        }
    }
    rc = apply_namespace(meta, ns, err, err_len);
    if (rc != 0) {
        return rc;
    }

    copy_member(meta, old_meta, "uid");
    copy_member(meta, old_meta, "creationTimestamp");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "selfLink");
    gen = cJSON_GetObjectItemCaseSensitive(old_meta, "generation");
    if (cJSON_IsNumber(gen)) {
        const cJSON *old_spec = cJSON_GetObjectItemCaseSensitive(old_obj, "spec");
        const cJSON *new_spec = cJSON_GetObjectItemCaseSensitive(new_obj, "spec");
        bool changed =
            !(old_spec == NULL && new_spec == NULL) &&
            (old_spec == NULL || new_spec == NULL || !cJSON_Compare(old_spec, new_spec, true));
        tree_set_num(meta, "generation", gen->valuedouble + (changed ? 1 : 0));
    } else {
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "generation");
    }
    snprintf(buf, sizeof(buf), "%" PRIu64, rv);
    tree_set_str(meta, "resourceVersion", buf);
    if (strcmp(tree_str(new_obj, "kind"), "Secret") == 0) {
        fold_string_data(new_obj);
    }
    order_members(meta, kube_meta_member_order);
    order_members(new_obj, top_order);
    return 0;
}

/* RFC 7386 MergePatch(target, patch) for an object patch; <target> is an object. */
static void merge_object(cJSON *target, const cJSON *patch)
{
    for (const cJSON *p = patch->child; p != NULL; p = p->next) {
        cJSON *t = cJSON_GetObjectItemCaseSensitive(target, p->string);

        if (cJSON_IsNull(p)) {
            cJSON_DeleteItemFromObjectCaseSensitive(target, p->string);
        } else if (cJSON_IsObject(p)) {
            if (!cJSON_IsObject(t)) {
                t = tree_set(target, p->string, tree_must(cJSON_CreateObject()));
            }
            merge_object(t, p);
        } else {
            tree_set(target, p->string, tree_must(cJSON_Duplicate(p, true)));
        }
    }
}

int objects_merge_patch(cJSON *target, const cJSON *patch)
{
    if (!cJSON_IsObject(target) || !cJSON_IsObject(patch)) {
        return -EINVAL;
    }
    merge_object(target, patch);
    return 0;
}
