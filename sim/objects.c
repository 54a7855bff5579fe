/*
 * objects.c - create/update preparation, JSON merge patch and the seed/churn generators of
 * the simulator (see objects.h).
 *
 * The write helpers follow kube-apiserver's generic registry in the order it checks:
 * handlers' checkName, rest.BeforeCreate/BeforeUpdate (namespace, generateName, system
 * fields), validation (422), then the storage layer's resourceVersion rules. Generators draw
 * from a splitmix64 stream seeded by (seed, resource, namespace, name), so a seed reproduces a
 * whole simulated cluster. Everything here is a pure function of its arguments.
 */
#include "sim/objects.h"

#include <arpa/inet.h>
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
#include "sim/proto.h"

/* kube's utilrand alphabet: no vowels (no words), no 0/1/3 (confusable). */
#define GEN_ALPHABET "bcdfghjklmnpqrstvwxz2456789"

/* ---- small cJSON helpers ----------------------------------------------------------------- */

/* cJSON allocates with malloc; like xmalloc, running out of memory is fatal (STYLE OOM). */
static cJSON *cj(cJSON *item)
{
    if (item == NULL) {
        fputs("objects: out of memory building a cJSON tree\n", stderr);
        abort();
    }
    return item;
}

/* Sets obj[key] = item, replacing an existing member; takes ownership of <item>. */
static cJSON *set_item(cJSON *obj, const char *key, cJSON *item)
{
    cJSON *old = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (old != NULL) {
        /* (ReplaceItemViaPointer would leave item without its key.) */
        cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item);
    } else {
        cJSON_AddItemToObject(obj, key, item);
    }
    return item;
}

static void set_str(cJSON *obj, const char *key, const char *s)
{
    set_item(obj, key, cj(cJSON_CreateString(s)));
}

static void set_num(cJSON *obj, const char *key, double v)
{
    set_item(obj, key, cj(cJSON_CreateNumber(v)));
}

/* The object member <key>, created (or replacing a non-object) when needed. */
static cJSON *child_obj(cJSON *obj, const char *key)
{
    cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (cJSON_IsObject(c)) {
        return c;
    }
    return set_item(obj, key, cj(cJSON_CreateObject()));
}

/* The string member <key>, or "" when absent or not a string. */
static const char *str_of(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(v) ? v->valuestring : "";
}

/* Adds a new string/number/object member (for building fresh objects: no replace scan). */
static void add_str(cJSON *obj, const char *key, const char *s)
{
    cJSON_AddItemToObject(obj, key, cj(cJSON_CreateString(s)));
}

static void add_num(cJSON *obj, const char *key, double v)
{
    cJSON_AddItemToObject(obj, key, cj(cJSON_CreateNumber(v)));
}

static cJSON *add_obj(cJSON *obj, const char *key)
{
    cJSON *c = cj(cJSON_CreateObject());

    cJSON_AddItemToObject(obj, key, c);
    return c;
}

static cJSON *add_arr(cJSON *obj, const char *key)
{
    cJSON *c = cj(cJSON_CreateArray());

    cJSON_AddItemToObject(obj, key, c);
    return c;
}

static cJSON *push_obj(cJSON *arr)
{
    cJSON *c = cj(cJSON_CreateObject());

    cJSON_AddItemToArray(arr, c);
    return c;
}

/*
 * Moves the members named in <keys> (NULL-terminated) to the front of <obj>, in that order,
 * so printed objects read like the apiserver's (Go struct order). Relinks, never copies.
 */
static void order_members(cJSON *obj, const char *const *keys)
{
    cJSON *tmp = cj(cJSON_CreateObject());

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
static const char *const meta_order[] = {
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields", NULL};

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
        if (str_of(obj, "apiVersion")[0] == '\0') {
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
    set_str(obj, "kind", t->kind);
    if (str_of(obj, "apiVersion")[0] == '\0') {
        api_version_of(t, api_version, sizeof(api_version));
        set_str(obj, "apiVersion", api_version);
    }
    return 0;
}

/* metadata, created when absent; NULL (with -EINVAL in err) when it is not an object. */
static cJSON *meta_of(cJSON *obj, const char *kind, char *err, size_t err_len)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");

    if (meta == NULL) {
        return add_obj(obj, "metadata");
    }
    if (!cJSON_IsObject(meta)) {
        fail(err, err_len, -EINVAL,
             "the object provided is unrecognized (must be of type %s): metadata is not an "
             "object", kind);
        return NULL;
    }
    return meta;
}

/* handlers/rest.go checkName: the URL's name (and namespace) against the body's. */
static int check_name(const cJSON *meta, const char *url_name, const char *ns, char *err,
                      size_t err_len)
{
    const char *name = str_of(meta, "name");
    const char *obj_ns = str_of(meta, "namespace");

    if (name[0] == '\0') {
        return fail(err, err_len, -EINVAL,
                    "the name of the object (%s based on URL) was undeterminable: name must be "
                    "provided", url_name);
    }
    if (strcmp(name, url_name) != 0) {
        return fail(err, err_len, -EINVAL,
                    "the name of the object (%s) does not match the name on the URL (%s)", name,
                    url_name);
    }
    if (ns != NULL && ns[0] != '\0' && obj_ns[0] != '\0' && strcmp(obj_ns, ns) != 0) {
        return fail(err, err_len, -EINVAL,
                    "the namespace of the object (%s) does not match the namespace on the "
                    "request (%s)", obj_ns, ns);
    }
    return 0;
}

/* rest.BeforeCreate/BeforeUpdate: default an empty namespace, clear it when cluster-scoped. */
static int apply_namespace(cJSON *meta, const char *ns, char *err, size_t err_len)
{
    const char *obj_ns = str_of(meta, "namespace");

    if (ns == NULL || ns[0] == '\0') {
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "namespace");
        return 0;
    }
    if (obj_ns[0] != '\0' && strcmp(obj_ns, ns) != 0) {
        return fail(err, err_len, -EINVAL,
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request");
    }
    set_str(meta, "namespace", ns);
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

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t hash_str(uint64_t h, const char *s)
{
    /* FNV-1a, then a separator so ("ab","c") and ("a","bc") differ. */
    for (; s != NULL && *s != '\0'; s++) {
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    }
    return (h ^ 0xff) * 0x100000001b3ULL;
}

/* names.SimpleNameGenerator: prefix cut to 58 bytes, plus 5 characters of the alphabet. */
static void generate_name(cJSON *meta, const char *prefix, const char *uid, uint64_t rv)
{
    char name[OBJECTS_GENERATE_PREFIX_MAX + OBJECTS_GENERATE_SUFFIX_LEN + 1];
    size_t n = strlen(prefix);
    uint64_t h = mix64(hash_str(0xcbf29ce484222325ULL, uid) ^ rv);

    if (n > OBJECTS_GENERATE_PREFIX_MAX) {
        n = OBJECTS_GENERATE_PREFIX_MAX;
    }
    memcpy(name, prefix, n);
    for (size_t i = 0; i < OBJECTS_GENERATE_SUFFIX_LEN; i++) {
        name[n++] = GEN_ALPHABET[h % (sizeof(GEN_ALPHABET) - 1)];
        h /= sizeof(GEN_ALPHABET) - 1;
    }
    name[n] = '\0';
    set_str(meta, "name", name);
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
            size_t i = (size_t)hash_str(0xcbf29ce484222325ULL, key) & mask;

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
        data = child_obj(obj, "data");
        for (const cJSON *e = sd->child; e != NULL; e = e->next) {
            if (cJSON_IsString(e)) {
                char *b64 = proto_base64_new(e->valuestring, strlen(e->valuestring));
                set_str(data, e->string, b64);
                free(b64);
            }
        }
    }
    cJSON_Delete(sd);
}

/* namespaceStrategy.PrepareForCreate: phase Active, the "kubernetes" finalizer, and the
 * kubernetes.io/metadata.name label (1.21+), whatever the client sent. */
static void prepare_namespace(cJSON *obj, cJSON *meta)
{
    cJSON *spec = child_obj(obj, "spec");
    cJSON *fin = cJSON_GetObjectItemCaseSensitive(spec, "finalizers");
    const cJSON *f;
    cJSON *status = cj(cJSON_CreateObject());

    set_str(child_obj(meta, "labels"), "kubernetes.io/metadata.name", str_of(meta, "name"));
    if (!cJSON_IsArray(fin)) {
        fin = set_item(spec, "finalizers", cj(cJSON_CreateArray()));
    }
    for (f = fin->child; f != NULL; f = f->next) {
        if (cJSON_IsString(f) && strcmp(f->valuestring, "kubernetes") == 0) {
            break;
        }
    }
    if (f == NULL) {
        cJSON_AddItemToArray(fin, cj(cJSON_CreateString("kubernetes")));
    }
    add_str(status, "phase", "Active");
    set_item(obj, "status", status);
}

/* Kinds whose registry strategies never set metadata.generation although they have a spec. */
static bool kind_has_generation(const cJSON *obj)
{
    const char *kind = str_of(obj, "kind");

    return cJSON_GetObjectItemCaseSensitive(obj, "spec") != NULL &&
           strcmp(kind, "Namespace") != 0 && strcmp(kind, "Node") != 0 &&
           strcmp(kind, "Service") != 0;
}

/* "Deployment.apps" for the group "apps", "ConfigMap" for the core group. */
static void group_kind(const cJSON *obj, char *buf, size_t cap)
{
    const char *api_version = str_of(obj, "apiVersion");
    const char *slash = strchr(api_version, '/');

    if (slash != NULL) {
        snprintf(buf, cap, "%s.%.*s", str_of(obj, "kind"), (int)(slash - api_version),
                 api_version);
    } else {
        snprintf(buf, cap, "%s", str_of(obj, "kind"));
    }
}

/* ---- what kube-apiserver's defaulting and registry strategies add on create ---------------
 *
 * The v1 defaulting functions (pkg/apis/core/v1, apps/v1, batch/v1 defaults.go and the
 * declarative +default markers) that apply to the workload kinds, plus the create strategies'
 * additions that `get` and the printers show. A Go "if x == nil" default fills an absent or
 * null member; an "if x == \"\"" or "== 0" one also replaces an empty string or a zero. */

/* True when <obj> has member <key> and it is neither null nor "". */
static bool is_set(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return v != NULL && !cJSON_IsNull(v) && !(cJSON_IsString(v) && v->valuestring[0] == '\0');
}

/* The object member <key> of <obj>, NULL when absent or not an object. */
static cJSON *obj_at(cJSON *obj, const char *key)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsObject(v) ? v : NULL;
}

static void default_str(cJSON *obj, const char *key, const char *value)
{
    if (!is_set(obj, key)) {
        set_str(obj, key, value);
    }
}

/* A pointer field's default: only when absent or null. */
static void default_num(cJSON *obj, const char *key, double value)
{
    if (!is_set(obj, key)) {
        set_num(obj, key, value);
    }
}

/* A plain int field's default ("if x == 0"). */
static void default_nonzero(cJSON *obj, const char *key, double value)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!cJSON_IsNumber(v) || v->valuedouble == 0) {
        set_num(obj, key, value);
    }
}

static void default_bool(cJSON *obj, const char *key, bool value)
{
    if (!is_set(obj, key)) {
        set_item(obj, key, cj(cJSON_CreateBool(value)));
    }
}

/* A struct field Go always prints: {} when absent or null. */
static cJSON *default_obj(cJSON *obj, const char *key)
{
    return child_obj(obj, key);
}

/* parsers.ParseImageName's tag: after the last ':' of the last path segment, before any
 * "@digest"; "latest" when there is neither tag nor digest. A reference that does not parse
 * (empty, or upper case in the repository) has no tag. */
static bool image_is_latest(const char *image)
{
    const char *slash = strrchr(image, '/');
    const char *name = slash != NULL ? slash + 1 : image;
    const char *at = strchr(name, '@');
    const char *colon = strchr(name, ':');

    if (image[0] == '\0') {
        return false;
    }
    for (const char *p = image; *p != '\0' && *p != ':' && *p != '@'; p++) {
        /* upper case is allowed only in a registry host (before the first '/') */
        if (*p >= 'A' && *p <= 'Z' && strchr(p, '/') == NULL) {
            return false;
        }
    }
    if (colon != NULL && (at == NULL || colon < at)) {
        size_t n = at != NULL ? (size_t)(at - colon - 1) : strlen(colon + 1);
        return n == 6 && strncmp(colon + 1, "latest", 6) == 0;
    }
    return at == NULL;
}

static void default_http_get(cJSON *http_get)
{
    if (http_get != NULL) {
        default_str(http_get, "path", "/");
        default_str(http_get, "scheme", "HTTP");
    }
}

static void default_probe(cJSON *probe)
{
    if (probe == NULL) {
        return;
    }
    default_nonzero(probe, "timeoutSeconds", 1);
    default_nonzero(probe, "periodSeconds", 10);
    default_nonzero(probe, "successThreshold", 1);
    default_nonzero(probe, "failureThreshold", 3);
    default_http_get(obj_at(probe, "httpGet"));
}

/* ObjectFieldSelector apiVersion "v1"; ResourceFieldSelector.divisor is a struct: "0". */
static void default_field_refs(cJSON *holder)
{
    cJSON *ref = obj_at(holder, "fieldRef");

    if (ref != NULL) {
        default_str(ref, "apiVersion", "v1");
    }
    ref = obj_at(holder, "resourceFieldRef");
    if (ref != NULL) {
        default_str(ref, "divisor", "0");
    }
}

/* SetDefaults_Container, the declarative ContainerPort protocol and the nested defaults. */
static void default_container(cJSON *c)
{
    const char *image = str_of(c, "image");
    cJSON *e;
    cJSON *lifecycle = obj_at(c, "lifecycle");

    default_str(c, "imagePullPolicy", image_is_latest(image) ? "Always" : "IfNotPresent");
    default_str(c, "terminationMessagePath", "/dev/termination-log");
    default_str(c, "terminationMessagePolicy", "File");
    default_obj(c, "resources");
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(c, "ports"))
    {
        if (cJSON_IsObject(e)) {
            default_str(e, "protocol", "TCP");
        }
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(c, "env"))
    {
        default_field_refs(obj_at(e, "valueFrom"));
    }
    default_probe(obj_at(c, "livenessProbe"));
    default_probe(obj_at(c, "readinessProbe"));
    default_probe(obj_at(c, "startupProbe"));
    if (lifecycle != NULL) {
        default_http_get(obj_at(obj_at(lifecycle, "postStart"), "httpGet"));
        default_http_get(obj_at(obj_at(lifecycle, "preStop"), "httpGet"));
    }
}

static void default_downward_items(cJSON *src)
{
    cJSON *e;

    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(src, "items"))
    {
        if (cJSON_IsObject(e)) {
            default_field_refs(e);
        }
    }
}

/* SetDefaults_Volume and the volume sources' defaults (mode 0644 = 420, hostPath type "",
 * an hour's token, a Filesystem claim). A volume with no source gets an emptyDir. */
static void default_volume(cJSON *v)
{
    cJSON *src;
    cJSON *e;
    bool any = false;

    for (const cJSON *m = v->child; m != NULL; m = m->next) {
        any = any || (strcmp(m->string, "name") != 0 && !cJSON_IsNull(m));
    }
    if (!any) {
        set_item(v, "emptyDir", cj(cJSON_CreateObject()));
    }
    if ((src = obj_at(v, "hostPath")) != NULL && !is_set(src, "type")) {
        set_str(src, "type", "");
    }
    if ((src = obj_at(v, "secret")) != NULL) {
        default_num(src, "defaultMode", 420);
    }
    if ((src = obj_at(v, "configMap")) != NULL) {
        default_num(src, "defaultMode", 420);
    }
    if ((src = obj_at(v, "downwardAPI")) != NULL) {
        default_num(src, "defaultMode", 420);
        default_downward_items(src);
    }
    if ((src = obj_at(v, "projected")) != NULL) {
        default_num(src, "defaultMode", 420);
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(src, "sources"))
        {
            cJSON *token = obj_at(e, "serviceAccountToken");
            if (token != NULL) {
                default_num(token, "expirationSeconds", 3600);
            }
            default_downward_items(obj_at(e, "downwardAPI"));
        }
    }
    src = obj_at(obj_at(obj_at(v, "ephemeral"), "volumeClaimTemplate"), "spec");
    if (src != NULL) {
        default_str(src, "volumeMode", "Filesystem");
    }
}

static void default_containers(cJSON *spec, const char *key)
{
    cJSON *e;

    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(spec, key))
    {
        if (cJSON_IsObject(e)) {
            default_container(e);
        }
    }
}

/* SetDefaults_PodSpec and everything below it; a PodTemplateSpec's metadata and spec are
 * structs, printed even when empty. (SetDefaults_Pod's extras apply to Pods, not templates.) */
static void default_pod_template(cJSON *tmpl)
{
    cJSON *spec;
    cJSON *e;

    if (tmpl == NULL) {
        return;
    }
    default_obj(tmpl, "metadata");
    spec = default_obj(tmpl, "spec");
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(spec, "volumes"))
    {
        if (cJSON_IsObject(e)) {
            default_volume(e);
        }
    }
    default_containers(spec, "initContainers");
    default_containers(spec, "containers");
    default_containers(spec, "ephemeralContainers");
    default_str(spec, "restartPolicy", "Always");
    default_num(spec, "terminationGracePeriodSeconds", 30);
    default_str(spec, "dnsPolicy", "ClusterFirst");
    default_obj(spec, "securityContext");
    default_str(spec, "schedulerName", "default-scheduler");
}

/* apps/v1 SetDefaults_Deployment; the strategy keeps a status sent on create (see
 * objects_prepare_create) and prints an empty one as {}. */
static void default_deployment(cJSON *obj)
{
    cJSON *spec = default_obj(obj, "spec");
    cJSON *strategy = default_obj(spec, "strategy");

    default_num(spec, "replicas", 1);
    default_str(strategy, "type", "RollingUpdate");
    if (strcmp(str_of(strategy, "type"), "RollingUpdate") == 0) {
        cJSON *ru = default_obj(strategy, "rollingUpdate");
        default_str(ru, "maxUnavailable", "25%");
        default_str(ru, "maxSurge", "25%");
    }
    default_num(spec, "revisionHistoryLimit", 10);
    default_num(spec, "progressDeadlineSeconds", 600);
    default_pod_template(default_obj(spec, "template"));
    default_obj(obj, "status");
}

/* apps/v1 SetDefaults_ReplicaSet; ReplicaSetStatus.replicas has no omitempty. */
static void default_replicaset(cJSON *obj)
{
    cJSON *spec = default_obj(obj, "spec");

    default_num(spec, "replicas", 1);
    default_pod_template(default_obj(spec, "template"));
    default_num(default_obj(obj, "status"), "replicas", 0);
}

/* A copy of the template's labels when <obj>'s <key> map is absent or empty. */
static void default_labels_from(cJSON *obj, const char *key, const cJSON *labels)
{
    const cJSON *have = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (cJSON_IsObject(labels) && labels->child != NULL &&
        !(cJSON_IsObject(have) && have->child != NULL)) {
        set_item(obj, key, cj(cJSON_Duplicate(labels, true)));
    }
}

/* v1 SetDefaults_ReplicationController: selector and labels from the template's labels. */
static void default_rc(cJSON *obj)
{
    cJSON *spec = default_obj(obj, "spec");
    cJSON *tmpl = obj_at(spec, "template");
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(obj_at(tmpl, "metadata"), "labels");

    default_labels_from(spec, "selector", labels);
    default_labels_from(child_obj(obj, "metadata"), "labels", labels);
    default_num(spec, "replicas", 1);
    default_pod_template(tmpl); /* a pointer: only when sent */
    default_num(default_obj(obj, "status"), "replicas", 0);
}

/* Sets labels[key] = value unless the key is there. */
static void label_if_absent(cJSON *labels, const char *key, const char *value)
{
    if (cJSON_GetObjectItemCaseSensitive(labels, key) == NULL) {
        add_str(labels, key, value);
    }
}

/* batch/v1 SetDefaults_Job, then the job strategy's generateSelector (for manualSelector
 * false): the template gets job-name and controller-uid labels, legacy and
 * batch.kubernetes.io/ forms, and the selector matches the new uid. The apiserver rejects a
 * Job that sends its own selector without manualSelector (422 "`selector` not
 * auto-generated"); the simulator, which does not validate, keeps such a selector as sent.
 * The metadata labels default to the template's (defaulting runs again when the stored object
 * is read, by which time the template has the generated labels: every read shows them). */
static void default_job(cJSON *obj, const char *name, const char *uid)
{
    cJSON *spec = default_obj(obj, "spec");
    cJSON *tmpl = default_obj(spec, "template");
    cJSON *pfp = obj_at(spec, "podFailurePolicy");
    cJSON *rule;

    if (!is_set(spec, "completions") && !is_set(spec, "parallelism")) {
        set_num(spec, "completions", 1);
    }
    default_num(spec, "parallelism", 1);
    default_num(spec, "backoffLimit", is_set(spec, "backoffLimitPerIndex") ? 2147483647 : 6);
    default_str(spec, "completionMode", "NonIndexed");
    default_bool(spec, "suspend", false);
    default_str(spec, "podReplacementPolicy", pfp != NULL ? "Failed" : "TerminatingOrFailed");
    default_bool(spec, "manualSelector", false);
    cJSON_ArrayForEach(rule, cJSON_GetObjectItemCaseSensitive(pfp, "rules"))
    {
        cJSON *pattern;
        cJSON_ArrayForEach(pattern, cJSON_GetObjectItemCaseSensitive(rule, "onPodConditions"))
        {
            if (cJSON_IsObject(pattern)) {
                default_str(pattern, "status", "True");
            }
        }
    }
    default_pod_template(tmpl);
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(spec, "manualSelector")) &&
        !is_set(spec, "selector")) {
        cJSON *labels = child_obj(child_obj(tmpl, "metadata"), "labels");
        label_if_absent(labels, "job-name", name);
        label_if_absent(labels, "batch.kubernetes.io/job-name", name);
        label_if_absent(labels, "controller-uid", uid);
        label_if_absent(labels, "batch.kubernetes.io/controller-uid", uid);
        add_str(child_obj(child_obj(spec, "selector"), "matchLabels"),
                "batch.kubernetes.io/controller-uid", uid);
    }
    default_labels_from(child_obj(obj, "metadata"), "labels",
                        cJSON_GetObjectItemCaseSensitive(obj_at(tmpl, "metadata"), "labels"));
    default_obj(obj, "status");
}

/* v1 SetDefaults_Service and the declarative ServicePort protocol. The cluster IPs, IP
 * families and node ports come from objects_service_allocate. */
static void default_service(cJSON *obj)
{
    cJSON *spec = default_obj(obj, "spec");
    const char *type;
    const char *affinity;
    const cJSON *external_ips;
    cJSON *port;

    default_str(spec, "sessionAffinity", "None");
    affinity = str_of(spec, "sessionAffinity");
    if (strcmp(affinity, "None") == 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "sessionAffinityConfig");
    } else if (strcmp(affinity, "ClientIP") == 0) {
        cJSON *cfg = obj_at(obj_at(spec, "sessionAffinityConfig"), "clientIP");
        if (cfg == NULL || !is_set(cfg, "timeoutSeconds")) {
            cJSON *fresh = cj(cJSON_CreateObject());
            set_num(add_obj(fresh, "clientIP"), "timeoutSeconds", 10800);
            set_item(spec, "sessionAffinityConfig", fresh);
        }
    }
    default_str(spec, "type", "ClusterIP");
    type = str_of(spec, "type");
    cJSON_ArrayForEach(port, cJSON_GetObjectItemCaseSensitive(spec, "ports"))
    {
        const cJSON *target = cJSON_GetObjectItemCaseSensitive(port, "targetPort");
        const cJSON *number = cJSON_GetObjectItemCaseSensitive(port, "port");
        if (!cJSON_IsObject(port)) {
            continue;
        }
        default_str(port, "protocol", "TCP");
        if (!is_set(port, "targetPort") || (cJSON_IsNumber(target) && target->valueint == 0)) {
            set_num(port, "targetPort", cJSON_IsNumber(number) ? number->valuedouble : 0);
        }
    }
    /* service.ExternallyAccessible */
    external_ips = cJSON_GetObjectItemCaseSensitive(spec, "externalIPs");
    if (strcmp(type, "LoadBalancer") == 0 || strcmp(type, "NodePort") == 0 ||
        (strcmp(type, "ClusterIP") == 0 && cJSON_GetArraySize(external_ips) > 0)) {
        default_str(spec, "externalTrafficPolicy", "Cluster");
    }
    if (strcmp(type, "NodePort") == 0 || strcmp(type, "LoadBalancer") == 0 ||
        strcmp(type, "ClusterIP") == 0) {
        default_str(spec, "internalTrafficPolicy", "Cluster");
    }
    if (strcmp(type, "LoadBalancer") == 0) {
        default_bool(spec, "allocateLoadBalancerNodePorts", true);
    }
    /* the strategy clears status; LoadBalancerStatus is a struct Go always prints */
    default_obj(default_obj(obj, "status"), "loadBalancer");
}

/* serviceaccount strategy's cleanSecretReferences: a secret reference keeps only its name. */
static void default_service_account(cJSON *obj)
{
    cJSON *ref;

    cJSON_ArrayForEach(ref, cJSON_GetObjectItemCaseSensitive(obj, "secrets"))
    {
        cJSON *name;
        if (!cJSON_IsObject(ref)) {
            continue;
        }
        name = cJSON_DetachItemFromObjectCaseSensitive(ref, "name");
        while (ref->child != NULL) {
            cJSON_Delete(cJSON_DetachItemViaPointer(ref, ref->child));
        }
        if (name != NULL) {
            cJSON_AddItemToObject(ref, "name", name);
        }
    }
}

/* The kinds this file defaults; returns true when <obj> was one (and got Go's key order). */
static bool default_workload(cJSON *obj, const char *name, const char *uid)
{
    const char *kind = str_of(obj, "kind");

    if (strcmp(kind, "Deployment") == 0) {
        default_deployment(obj);
    } else if (strcmp(kind, "ReplicaSet") == 0) {
        default_replicaset(obj);
    } else if (strcmp(kind, "ReplicationController") == 0) {
        default_rc(obj);
    } else if (strcmp(kind, "Job") == 0) {
        default_job(obj, name, uid);
    } else if (strcmp(kind, "Service") == 0) {
        default_service(obj);
    } else if (strcmp(kind, "ServiceAccount") == 0) {
        default_service_account(obj);
    } else {
        return false;
    }
    return proto_order(obj);
}

/* ---- Service cluster IPs and node ports ------------------------------------------------- */

/* --service-cluster-ip-range 10.96.0.0/12 and --service-node-port-range 30000-32767. The
 * allocators hand out the upper part of each range first, keeping a low band for addresses
 * and ports users pick (ServiceIPStaticSubrange: min(max(16, size/16), 256) addresses;
 * ports: min(max(16, size/32), 128)). */
#define SVC_NET 0x0a600000u /* 10.96.0.0 */
#define SVC_PREFIX 12
#define SVC_SIZE (1u << (32 - SVC_PREFIX))
#define SVC_STATIC_BAND 256u
#define SVC_CIDR "10.96.0.0/12"
#define NODE_PORT_MIN 30000u
#define NODE_PORT_MAX 32767u
#define NODE_PORT_COUNT (NODE_PORT_MAX - NODE_PORT_MIN + 1)
#define NODE_PORT_STATIC_BAND 86u

struct objects_svc_used {
    uint8_t ips[SVC_SIZE / 8];           /* bit i: SVC_NET + i is held */
    uint8_t ports[NODE_PORT_COUNT / 8 + 1]; /* bit i: NODE_PORT_MIN + i is held */
};

struct objects_svc_used *objects_svc_used_new(void)
{
    return xcalloc(1, sizeof(struct objects_svc_used));
}

void objects_svc_used_free(struct objects_svc_used *u)
{
    free(u);
}

static bool bit_get(const uint8_t *bits, uint32_t i)
{
    return (bits[i / 8] >> (i % 8)) & 1;
}

static void bit_set(uint8_t *bits, uint32_t i)
{
    bits[i / 8] |= (uint8_t)(1u << (i % 8));
}

/* A dotted-quad IPv4 address (inet_pton's strict form) in host order. */
static bool parse_ipv4(const char *s, uint32_t *out)
{
    struct in_addr a;

    if (inet_pton(AF_INET, s, &a) != 1) {
        return false;
    }
    *out = ntohl(a.s_addr);
    return true;
}

/* The offset of <ip> in the range when it is allocatable (not the network address or the
 * broadcast one), else -1. */
static int64_t ip_offset(uint32_t ip)
{
    uint32_t off = ip - SVC_NET;

    if ((ip & ~(SVC_SIZE - 1)) != SVC_NET || off == 0 || off == SVC_SIZE - 1) {
        return -1;
    }
    return off;
}

static void ip_string(uint32_t ip, char *buf, size_t cap)
{
    snprintf(buf, cap, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

void objects_svc_used_add(struct objects_svc_used *u, const cJSON *svc)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(svc, "spec");
    const cJSON *e;
    uint32_t ip;

    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(spec, "clusterIPs"))
    {
        if (cJSON_IsString(e) && parse_ipv4(e->valuestring, &ip) && ip_offset(ip) > 0) {
            bit_set(u->ips, (uint32_t)ip_offset(ip));
        }
    }
    e = cJSON_GetObjectItemCaseSensitive(spec, "clusterIP");
    if (cJSON_IsString(e) && parse_ipv4(e->valuestring, &ip) && ip_offset(ip) > 0) {
        bit_set(u->ips, (uint32_t)ip_offset(ip));
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(spec, "ports"))
    {
        const cJSON *np = cJSON_GetObjectItemCaseSensitive(e, "nodePort");
        if (cJSON_IsNumber(np) && np->valuedouble >= NODE_PORT_MIN &&
            np->valuedouble <= NODE_PORT_MAX) {
            bit_set(u->ports, (uint32_t)np->valuedouble - NODE_PORT_MIN);
        }
    }
    e = cJSON_GetObjectItemCaseSensitive(spec, "healthCheckNodePort");
    if (cJSON_IsNumber(e) && e->valuedouble >= NODE_PORT_MIN && e->valuedouble <= NODE_PORT_MAX) {
        bit_set(u->ports, (uint32_t)e->valuedouble - NODE_PORT_MIN);
    }
}

/* Fills <inv> for a field.Invalid / Forbidden of Service <name>; returns -EDOM. */
__attribute__((format(printf, 5, 6))) static int svc_invalid(struct objects_invalid *inv,
                                                             const char *name,
                                                             const char *field,
                                                             const char *reason,
                                                             const char *fmt, ...)
{
    va_list ap;

    snprintf(inv->field, sizeof(inv->field), "%s", field);
    snprintf(inv->reason, sizeof(inv->reason), "%s", reason);
    va_start(ap, fmt);
    vsnprintf(inv->detail, sizeof(inv->detail), fmt, ap);
    va_end(ap);
    snprintf(inv->message, sizeof(inv->message), "Service \"%s\" is invalid: %s: %s", name, field,
             inv->detail);
    return -EDOM;
}

/* A free slot of <bits> in [0, n): the upper part [band, n) from a seed-derived start, then
 * the band; -1 when full. <skip_ends> leaves out offset 0 and n - 1 (an IP range's network
 * and broadcast addresses). */
static int64_t pick_free(const uint8_t *bits, uint32_t n, uint32_t band, uint64_t seed,
                         bool skip_ends)
{
    uint32_t lo = skip_ends ? 1 : 0;
    uint32_t hi = skip_ends ? n - 1 : n; /* exclusive */
    uint32_t upper = hi - band - lo;

    for (uint32_t i = 0; i < upper; i++) {
        uint32_t off = lo + band + (uint32_t)((seed + i) % upper);
        if (!bit_get(bits, off)) {
            return off;
        }
    }
    for (uint32_t off = lo; off < lo + band; off++) {
        if (!bit_get(bits, off)) {
            return off;
        }
    }
    return -1;
}

/* initIPFamilyFields for a single-stack IPv4 cluster: clusterIP and clusterIPs agree, the
 * policy defaults to SingleStack (RequireDualStack for a headless service without selector),
 * the families follow the IPs, then IPv4. */
static int svc_families(cJSON *spec, const char *name, bool headless,
                        struct objects_invalid *inv)
{
    const cJSON *selector = cJSON_GetObjectItemCaseSensitive(spec, "selector");
    bool selectorless = !(cJSON_IsObject(selector) && selector->child != NULL);
    cJSON *families = cJSON_GetObjectItemCaseSensitive(spec, "ipFamilies");
    const char *policy;

    if (!is_set(spec, "ipFamilyPolicy")) {
        set_str(spec, "ipFamilyPolicy",
                headless && selectorless ? "RequireDualStack" : "SingleStack");
    }
    policy = str_of(spec, "ipFamilyPolicy");
    if (!cJSON_IsArray(families) || families->child == NULL) {
        families = set_item(spec, "ipFamilies", cj(cJSON_CreateArray()));
        cJSON_AddItemToArray(families, cj(cJSON_CreateString("IPv4")));
        if (headless && selectorless && strcmp(policy, "SingleStack") != 0) {
            cJSON_AddItemToArray(families, cj(cJSON_CreateString("IPv6")));
        }
    }
    if (headless && selectorless) {
        return 0;
    }
    if (strcmp(policy, "RequireDualStack") == 0) {
        return svc_invalid(inv, name, "spec.ipFamilyPolicy", "FieldValueInvalid",
                           "Invalid value: \"RequireDualStack\": this cluster is not configured "
                           "for dual-stack services");
    }
    for (int i = 0; i < cJSON_GetArraySize(families); i++) {
        const cJSON *f = cJSON_GetArrayItem(families, i);
        if (!cJSON_IsString(f) || strcmp(f->valuestring, "IPv4") != 0) {
            char field[48];
            snprintf(field, sizeof(field), "spec.ipFamilies[%d]", i);
            return svc_invalid(inv, name, field, "FieldValueInvalid",
                               "Invalid value: \"%s\": not configured on this cluster",
                               cJSON_IsString(f) ? f->valuestring : "");
        }
    }
    return 0;
}

/* The cluster IP: the one sent, if in range and free, else a free one. */
static int svc_cluster_ip(cJSON *spec, const char *name, const struct objects_svc_used *used,
                          uint64_t seed, struct objects_invalid *inv)
{
    const char *want = str_of(spec, "clusterIP");
    char buf[16];
    uint32_t ip;
    int64_t off;
    cJSON *ips;

    if (want[0] != '\0') {
        if (!parse_ipv4(want, &ip)) {
            return svc_invalid(inv, name, "spec.clusterIPs[0]", "FieldValueInvalid",
                               "Invalid value: \"%s\": must be a valid IP address, (e.g. "
                               "10.9.8.7 or 2001:db8::ffff)", want);
        }
        off = ip_offset(ip);
        if (off < 0) {
            return svc_invalid(inv, name, "spec.clusterIPs", "FieldValueInvalid",
                               "Invalid value: []string{\"%s\"}: failed to allocate IP %s: the "
                               "provided IP (%s) is not in the valid range. The range of valid "
                               "IPs is " SVC_CIDR, want, want, want);
        }
        if (bit_get(used->ips, (uint32_t)off)) {
            return svc_invalid(inv, name, "spec.clusterIPs", "FieldValueInvalid",
                               "Invalid value: []string{\"%s\"}: failed to allocate IP %s: "
                               "provided IP is already allocated", want, want);
        }
        ip_string(ip, buf, sizeof(buf)); /* the canonical spelling */
    } else {
        off = pick_free(used->ips, SVC_SIZE, SVC_STATIC_BAND, seed, true);
        if (off < 0) {
            return svc_invalid(inv, name, "spec.clusterIPs", "FieldValueInvalid",
                               "Internal error occurred: failed to allocate a serviceIP: range "
                               "is full");
        }
        ip_string(SVC_NET + (uint32_t)off, buf, sizeof(buf));
    }
    set_str(spec, "clusterIP", buf);
    ips = set_item(spec, "clusterIPs", cj(cJSON_CreateArray()));
    cJSON_AddItemToArray(ips, cj(cJSON_CreateString(buf)));
    return 0;
}

/* Claims node port <p> (sent, or 0 for any) into *out; <taken> is the used bitmap plus the
 * ports this service already took. */
static int svc_node_port(uint8_t *taken, double p, uint64_t seed, const char *name,
                         const char *field, struct objects_invalid *inv, double *out)
{
    int64_t off;

    if (p != 0) {
        if (p < NODE_PORT_MIN || p > NODE_PORT_MAX || p != (double)(int64_t)p) {
            return svc_invalid(inv, name, field, "FieldValueInvalid",
                               "Invalid value: %.0f: provided port is not in the valid range. "
                               "The range of valid ports is %u-%u", p, NODE_PORT_MIN,
                               NODE_PORT_MAX);
        }
        if (bit_get(taken, (uint32_t)p - NODE_PORT_MIN)) {
            return svc_invalid(inv, name, field, "FieldValueInvalid",
                               "Invalid value: %.0f: provided port is already allocated", p);
        }
        off = (int64_t)p - NODE_PORT_MIN;
    } else {
        off = pick_free(taken, NODE_PORT_COUNT, NODE_PORT_STATIC_BAND, seed, false);
        if (off < 0) {
            return svc_invalid(inv, name, field, "FieldValueInvalid",
                               "Internal error occurred: failed to allocate a nodePort: range "
                               "is full");
        }
    }
    bit_set(taken, (uint32_t)off);
    *out = (double)(NODE_PORT_MIN + (uint32_t)off);
    return 0;
}

/* The node port an earlier port of this service with the same port number got (they share
 * one, as 53/TCP and 53/UDP do), or the first one a later such port asks for; 0 if none. */
static double shared_node_port(const cJSON *ports, const cJSON *port)
{
    const cJSON *number = cJSON_GetObjectItemCaseSensitive(port, "port");
    bool later = false;
    double asked = 0;
    const cJSON *e;

    cJSON_ArrayForEach(e, ports)
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "port");
        const cJSON *np = cJSON_GetObjectItemCaseSensitive(e, "nodePort");
        if (e == port) {
            later = true;
        }
        if (!cJSON_IsNumber(n) || !cJSON_IsNumber(number) ||
            n->valuedouble != number->valuedouble || !cJSON_IsNumber(np) ||
            np->valuedouble == 0) {
            continue;
        }
        if (!later) {
            return np->valuedouble; /* already claimed by an earlier port */
        }
        if (asked == 0) {
            asked = np->valuedouble;
        }
    }
    return -asked; /* negative: still to be claimed */
}

/* initNodePorts: node ports for NodePort services and LoadBalancer ones (unless
 * allocateLoadBalancerNodePorts is false; a port asked for is honoured anyway), and a health
 * check port for a LoadBalancer with externalTrafficPolicy Local. A ClusterIP service may not
 * ask for one. */
static int svc_node_ports(cJSON *spec, const char *name, const struct objects_svc_used *used,
                          uint64_t seed, struct objects_invalid *inv)
{
    const char *type = str_of(spec, "type");
    bool lb = strcmp(type, "LoadBalancer") == 0;
    bool allocate = strcmp(type, "NodePort") == 0 ||
                    (lb && !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(
                               spec, "allocateLoadBalancerNodePorts")));
    const cJSON *ports = cJSON_GetObjectItemCaseSensitive(spec, "ports");
    uint8_t taken[sizeof(used->ports)];
    char field[64];
    cJSON *port;
    double np;
    int i = -1;
    int rc;

    memcpy(taken, used->ports, sizeof(taken));
    cJSON_ArrayForEach(port, ports)
    {
        const cJSON *sent = cJSON_GetObjectItemCaseSensitive(port, "nodePort");
        double p = cJSON_IsNumber(sent) ? sent->valuedouble : 0;
        double shared;

        i++;
        snprintf(field, sizeof(field), "spec.ports[%d].nodePort", i);
        if (p != 0 && strcmp(type, "ClusterIP") == 0) {
            return svc_invalid(inv, name, field, "FieldValueForbidden",
                               "Forbidden: may not be used when `type` is 'ClusterIP'");
        }
        if (!cJSON_IsObject(port) || (p == 0 && !allocate) || (!allocate && !lb)) {
            continue;
        }
        shared = shared_node_port(ports, port);
        if (shared > 0 && (p == 0 || p == shared)) {
            set_num(port, "nodePort", shared);
            continue;
        }
        rc = svc_node_port(taken, p != 0 ? p : -shared, seed + (uint64_t)i * 7919, name, field,
                           inv, &np);
        if (rc != 0) {
            return rc;
        }
        set_num(port, "nodePort", np);
    }
    if (lb && strcmp(str_of(spec, "externalTrafficPolicy"), "Local") == 0) {
        const cJSON *sent = cJSON_GetObjectItemCaseSensitive(spec, "healthCheckNodePort");
        rc = svc_node_port(taken, cJSON_IsNumber(sent) ? sent->valuedouble : 0,
                           seed ^ 0x5bd1e995u, name, "spec.healthCheckNodePort", inv, &np);
        if (rc != 0) {
            return rc;
        }
        set_num(spec, "healthCheckNodePort", np);
    }
    return 0;
}

int objects_service_allocate(cJSON *svc, const struct objects_svc_used *used,
                             struct objects_invalid *inv)
{
    cJSON *spec = obj_at(svc, "spec");
    const char *name = str_of(cJSON_GetObjectItemCaseSensitive(svc, "metadata"), "name");
    const char *uid = str_of(cJSON_GetObjectItemCaseSensitive(svc, "metadata"), "uid");
    uint64_t seed = mix64(hash_str(0xcbf29ce484222325ULL, uid));
    const cJSON *ips;
    bool headless;
    int rc;

    memset(inv, 0, sizeof(*inv));
    if (spec == NULL || strcmp(str_of(spec, "type"), "ExternalName") == 0) {
        return 0; /* ExternalName services get no IPs, families or ports */
    }
    /* NormalizeClusterIPs: clusterIP and clusterIPs[0] say the same */
    ips = cJSON_GetObjectItemCaseSensitive(spec, "clusterIPs");
    if (!is_set(spec, "clusterIP") && cJSON_IsString(cJSON_GetArrayItem(ips, 0))) {
        set_str(spec, "clusterIP", cJSON_GetArrayItem(ips, 0)->valuestring);
    }
    headless = strcmp(str_of(spec, "clusterIP"), "None") == 0;
    rc = svc_families(spec, name, headless, inv);
    if (rc != 0) {
        return rc;
    }
    if (headless) {
        cJSON *none = set_item(spec, "clusterIPs", cj(cJSON_CreateArray()));
        cJSON_AddItemToArray(none, cj(cJSON_CreateString("None")));
    } else {
        rc = svc_cluster_ip(spec, name, used, seed, inv);
        if (rc != 0) {
            return rc;
        }
    }
    rc = svc_node_ports(spec, name, used, seed >> 20, inv);
    if (rc != 0) {
        return rc;
    }
    proto_order(svc);
    return 0;
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
    meta = meta_of(obj, str_of(obj, "kind"), err, err_len);
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
    if (str_of(meta, "name")[0] == '\0') {
        const char *prefix = str_of(meta, "generateName");
        if (prefix[0] == '\0') {
            group_kind(obj, buf, sizeof(buf));
            return fail(err, err_len, -EDOM,
                        "%s \"\" is invalid: metadata.name: Required value: name or "
                        "generateName is required", buf);
        }
        generate_name(meta, prefix, uid, rv);
    }
    /* etcd3 store Create: a parseable non-zero resourceVersion is refused (a plain error,
     * hence 500); anything else is overwritten. */
    if (parse_rv(str_of(meta, "resourceVersion"), &sent_rv) && sent_rv != 0) {
        return fail(err, err_len, -EIO,
                    "resourceVersion should not be set on objects to be created");
    }

    set_str(meta, "uid", uid);
    set_str(meta, "creationTimestamp", created);
    snprintf(buf, sizeof(buf), "%" PRIu64, rv);
    set_str(meta, "resourceVersion", buf);
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "deletionTimestamp");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "deletionGracePeriodSeconds");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "selfLink");
    if (kind_has_generation(obj)) {
        set_num(meta, "generation", 1);
    } else {
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "generation");
    }
    if (strcmp(str_of(obj, "kind"), "Secret") == 0) {
        fold_string_data(obj);
    } else if (strcmp(str_of(obj, "kind"), "Namespace") == 0) {
        prepare_namespace(obj, meta);
    } else if (t != NULL && default_workload(obj, str_of(meta, "name"), uid)) {
        return 0; /* defaulted and in Go's order */
    }
    order_members(meta, meta_order);
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
        set_item(to, key, cj(cJSON_Duplicate(v, true)));
    }
}

int objects_prepare_update(cJSON *new_obj, const cJSON *old_obj, const char *resource,
                           const char *ns, const char *name, uint64_t rv, char *err,
                           size_t err_len)
{
    const struct apires_kind *t = objects_type(resource);
    const cJSON *old_meta = cJSON_GetObjectItemCaseSensitive(old_obj, "metadata");
    const cJSON *gen;
    const char *old_kind = str_of(old_obj, "kind");
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
        name = str_of(old_meta, "name");
    }
    if (ns == NULL) {
        ns = str_of(old_meta, "namespace"); /* "" for a cluster-scoped object */
    }

    /* kind/apiVersion default to the stored object's; another kind cannot decode. */
    sent = str_of(new_obj, "kind");
    if (sent[0] != '\0' && old_kind[0] != '\0' && strcmp(sent, old_kind) != 0) {
        return fail(err, err_len, -EINVAL,
                    "the object provided is unrecognized (must be of type %s)", old_kind);
    }
    if (sent[0] == '\0') {
        copy_member(new_obj, old_obj, "kind");
    }
    if (str_of(new_obj, "apiVersion")[0] == '\0') {
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
    sent = str_of(meta, "resourceVersion");
    if (sent[0] != '\0' && !(parse_rv(sent, &sent_rv) && sent_rv == 0)) {
        if (!parse_rv(str_of(old_meta, "resourceVersion"), &old_rv) ||
            !parse_rv(sent, &sent_rv) || sent_rv != old_rv) {
            return fail(err, err_len, -EBUSY,
                        "Operation cannot be fulfilled on %s \"%s\": the object has been "
                        "modified; please apply your changes to the latest version and try "
                        "again", qualified, name);
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
        bool changed = !(old_spec == NULL && new_spec == NULL) &&
                       (old_spec == NULL || new_spec == NULL ||
                        !cJSON_Compare(old_spec, new_spec, true));
        set_num(meta, "generation", gen->valuedouble + (changed ? 1 : 0));
    } else {
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "generation");
    }
    snprintf(buf, sizeof(buf), "%" PRIu64, rv);
    set_str(meta, "resourceVersion", buf);
    if (strcmp(str_of(new_obj, "kind"), "Secret") == 0) {
        fold_string_data(new_obj);
    }
    order_members(meta, meta_order);
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
                t = set_item(target, p->string, cj(cJSON_CreateObject()));
            }
            merge_object(t, p);
        } else {
            set_item(target, p->string, cj(cJSON_Duplicate(p, true)));
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

/* ---- generators ---------------------------------------------------------------------------- */

/* splitmix64: tiny, fast, and every seed gives a full-period stream. */
struct rng {
    uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
    r->s += 0x9e3779b97f4a7c15ULL;
    return mix64(r->s);
}

static unsigned rng_below(struct rng *r, unsigned n)
{
    return (unsigned)(rng_next(r) % n);
}

static const char *rng_pick(struct rng *r, const char *const *v, size_t n)
{
    return v[rng_below(r, (unsigned)n)];
}

#define PICK(r, arr) rng_pick((r), (arr), sizeof(arr) / sizeof((arr)[0]))

static const char *const apps[] = {"web", "api", "cache", "worker", "auth",
                                   "search", "billing", "frontend", "ingest", "metrics"};
static const char *const tiers[] = {"frontend", "backend", "data"};
static const char *const images[] = {
    "registry.k8s.io/nginx-slim:0.27", "docker.io/library/redis:7.2.4",
    "quay.io/prometheus/node-exporter:v1.8.1", "ghcr.io/example/app:v2.14.3",
    "registry.k8s.io/pause:3.10"};
static const char *const reasons[] = {"Scheduled", "Pulled", "Created", "Started", "Killing"};

/* Synthetic times: a fixed day plus an offset, so generated objects are reproducible. */
static void fake_time(char *buf, size_t cap, unsigned offset_s)
{
    offset_s %= 86400;
    snprintf(buf, cap, "2025-01-01T%02u:%02u:%02uZ", offset_s / 3600, offset_s / 60 % 60,
             offset_s % 60);
}

/* Hex string of <n> pseudo-random digits (container IDs, hashes). */
static void rng_hex(struct rng *r, char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        buf[i] = "0123456789abcdef"[rng_next(r) & 15];
    }
    buf[n] = '\0';
}

/* The app a name belongs to: the first apps[] entry it starts with, else a random one. */
static const char *app_for(struct rng *r, const char *name)
{
    for (size_t i = 0; i < sizeof(apps) / sizeof(apps[0]); i++) {
        if (strncmp(name, apps[i], strlen(apps[i])) == 0) {
            return apps[i];
        }
    }
    return PICK(r, apps);
}

static cJSON *new_object(const char *kind, const char *api_version, const char *ns,
                         const char *name, cJSON **meta)
{
    cJSON *obj = cj(cJSON_CreateObject());

    add_str(obj, "kind", kind);
    if (api_version != NULL) {
        add_str(obj, "apiVersion", api_version);
    }
    *meta = add_obj(obj, "metadata");
    add_str(*meta, "name", name);
    if (ns != NULL && ns[0] != '\0') {
        add_str(*meta, "namespace", ns);
    }
    return obj;
}

static void add_container(struct rng *r, cJSON *containers, const char *app, bool full)
{
    cJSON *c = push_obj(containers);
    cJSON *port;
    cJSON *res;
    cJSON *req;

    add_str(c, "name", app);
    add_str(c, "image", PICK(r, images));
    port = push_obj(add_arr(c, "ports"));
    add_str(port, "name", "http");
    add_num(port, "containerPort", 8080);
    add_str(port, "protocol", "TCP");
    res = add_obj(c, "resources");
    req = add_obj(res, "requests");
    add_str(req, "cpu", rng_below(r, 2) ? "100m" : "250m");
    add_str(req, "memory", rng_below(r, 2) ? "128Mi" : "256Mi");
    add_str(add_obj(res, "limits"), "memory", "512Mi");
    if (full) {
        /* what defaulting adds in a stored pod (the template keeps what a client sent) */
        add_str(c, "imagePullPolicy", "IfNotPresent");
    }
}

static cJSON *gen_pod(struct rng *r, const char *ns, const char *name)
{
    const char *app = app_for(r, name);
    char hash[11];
    char buf[64];
    char ip[32];
    char node[32];
    cJSON *meta;
    cJSON *obj = new_object("Pod", "v1", ns, name, &meta);
    cJSON *labels = add_obj(meta, "labels");
    cJSON *spec = add_obj(obj, "spec");
    cJSON *status;
    cJSON *cond;
    cJSON *cs;

    rng_hex(r, hash, 10);
    add_str(labels, "app", app);
    add_str(labels, "pod-template-hash", hash);
    add_str(labels, "tier", PICK(r, tiers));

    add_container(r, add_arr(spec, "containers"), app, true);
    add_str(spec, "restartPolicy", "Always");
    add_num(spec, "terminationGracePeriodSeconds", 30);
    add_str(spec, "dnsPolicy", "ClusterFirst");
    add_str(spec, "serviceAccountName", "default");
    snprintf(node, sizeof(node), "node-%02u", rng_below(r, 50));
    add_str(spec, "nodeName", node);
    add_str(spec, "schedulerName", "default-scheduler");
    add_num(spec, "priority", 0);

    status = add_obj(obj, "status");
    add_str(status, "phase", rng_below(r, 10) == 0 ? "Pending" : "Running");
    cond = push_obj(add_arr(status, "conditions"));
    add_str(cond, "type", "Ready");
    add_str(cond, "status", "True");
    fake_time(buf, sizeof(buf), rng_below(r, 86400));
    add_str(cond, "lastTransitionTime", buf);
    snprintf(ip, sizeof(ip), "10.0.%u.%u", rng_below(r, 50), 1 + rng_below(r, 254));
    add_str(status, "hostIP", ip);
    snprintf(ip, sizeof(ip), "10.244.%u.%u", rng_below(r, 50), 2 + rng_below(r, 250));
    add_str(status, "podIP", ip);
    add_str(status, "startTime", buf);
    cs = push_obj(add_arr(status, "containerStatuses"));
    add_str(cs, "name", app);
    add_str(add_obj(add_obj(cs, "state"), "running"), "startedAt", buf);
    cJSON_AddItemToObject(cs, "ready", cj(cJSON_CreateTrue()));
    add_num(cs, "restartCount", 0);
    {
        /* image and imageID are always set by the kubelet; typed clients require them */
        const cJSON *c0 = cJSON_GetArrayItem(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "spec"),
                                             "containers"),
            0);
        const cJSON *img = cJSON_GetObjectItemCaseSensitive(c0, "image");
        char id[160];
        rng_hex(r, hash, 10);
        add_str(cs, "image", cJSON_IsString(img) ? img->valuestring : "registry.k8s.io/pause:3.10");
        snprintf(id, sizeof(id), "%s@sha256:%s%s%s%s%s%s", cJSON_IsString(img) ? img->valuestring
                                                                            : "pause",
                 hash, hash, hash, hash, hash, hash);
        add_str(cs, "imageID", id);
    }
    rng_hex(r, hash, 10);
    snprintf(buf, sizeof(buf), "containerd://%s", hash);
    add_str(cs, "containerID", buf);
    add_str(status, "qosClass", "Burstable");
    return obj;
}

static cJSON *gen_configmap(struct rng *r, const char *ns, const char *name)
{
    cJSON *meta;
    cJSON *obj = new_object("ConfigMap", "v1", ns, name, &meta);
    cJSON *data;
    char buf[96];

    add_str(add_obj(meta, "labels"), "app", app_for(r, name));
    data = add_obj(obj, "data");
    add_str(data, "LOG_LEVEL", rng_below(r, 4) == 0 ? "debug" : "info");
    snprintf(buf, sizeof(buf), "listen=:8080\nworkers=%u\ncache.ttl=%us\n", 1 + rng_below(r, 16),
             30 * (1 + rng_below(r, 10)));
    add_str(data, "app.properties", buf);
    return obj;
}

static cJSON *gen_secret(struct rng *r, const char *ns, const char *name)
{
    cJSON *meta;
    cJSON *obj = new_object("Secret", "v1", ns, name, &meta);
    cJSON *data;
    char pw[25];
    char *b64;

    add_str(add_obj(meta, "labels"), "app", app_for(r, name));
    data = add_obj(obj, "data");
    add_str(data, "username", "YWRtaW4="); /* "admin" */
    rng_hex(r, pw, 24);
    b64 = proto_base64_new(pw, strlen(pw));
    add_str(data, "password", b64);
    free(b64);
    add_str(obj, "type", "Opaque");
    return obj;
}

/* default/kubernetes as kube-apiserver keeps it: the first address of the service range, https
 * to the apiserver's port, no selector (its endpoints are written by the apiserver). */
static cJSON *gen_kubernetes_service(const char *ns)
{
    cJSON *meta;
    cJSON *obj = new_object("Service", "v1", ns, "kubernetes", &meta);
    cJSON *labels = add_obj(meta, "labels");
    cJSON *spec = add_obj(obj, "spec");
    cJSON *port = push_obj(add_arr(spec, "ports"));

    add_str(labels, "component", "apiserver");
    add_str(labels, "provider", "kubernetes");
    add_str(port, "name", "https");
    add_str(port, "protocol", "TCP");
    add_num(port, "port", 443);
    add_num(port, "targetPort", 6443);
    add_str(spec, "clusterIP", "10.96.0.1");
    add_str(spec, "type", "ClusterIP");
    return obj;
}

static cJSON *gen_service(struct rng *r, const char *ns, const char *name)
{
    const char *app = app_for(r, name);
    cJSON *meta;
    cJSON *obj;
    cJSON *spec;
    cJSON *port;
    char ip[32];

    if (strcmp(name, "kubernetes") == 0 && ns != NULL && strcmp(ns, "default") == 0) {
        return gen_kubernetes_service(ns);
    }
    obj = new_object("Service", "v1", ns, name, &meta);
    spec = add_obj(obj, "spec");
    port = push_obj(add_arr(spec, "ports"));

    add_str(add_obj(meta, "labels"), "app", app);
    add_str(port, "name", "http");
    add_str(port, "protocol", "TCP");
    add_num(port, "port", 80);
    add_num(port, "targetPort", 8080);
    add_str(add_obj(spec, "selector"), "app", app);
    snprintf(ip, sizeof(ip), "10.96.%u.%u", rng_below(r, 256), 1 + rng_below(r, 254));
    add_str(spec, "clusterIP", ip);
    cJSON_AddItemToArray(add_arr(spec, "clusterIPs"), cj(cJSON_CreateString(ip)));
    add_str(spec, "type", "ClusterIP");
    add_str(spec, "sessionAffinity", "None");
    add_obj(add_obj(obj, "status"), "loadBalancer");
    return obj;
}

static cJSON *gen_node(struct rng *r, const char *name)
{
    cJSON *meta;
    cJSON *obj = new_object("Node", "v1", NULL, name, &meta);
    cJSON *labels = add_obj(meta, "labels");
    cJSON *spec = add_obj(obj, "spec");
    cJSON *status = add_obj(obj, "status");
    cJSON *cap = add_obj(status, "capacity");
    cJSON *cond;
    cJSON *addrs;
    cJSON *a;
    unsigned idx = rng_below(r, 250);
    char buf[64];

    add_str(labels, "kubernetes.io/hostname", name);
    add_str(labels, "kubernetes.io/os", "linux");
    add_str(labels, "kubernetes.io/arch", "amd64");
    add_str(labels, "node.kubernetes.io/instance-type", rng_below(r, 2) ? "m5.large" : "m5.xlarge");
    snprintf(buf, sizeof(buf), "10.244.%u.0/24", idx);
    add_str(spec, "podCIDR", buf);
    add_str(cap, "cpu", "4");
    add_str(cap, "memory", "16374584Ki");
    add_str(cap, "pods", "110");
    cond = push_obj(add_arr(status, "conditions"));
    add_str(cond, "type", "Ready");
    add_str(cond, "status", "True");
    fake_time(buf, sizeof(buf), rng_below(r, 86400));
    add_str(cond, "lastHeartbeatTime", buf);
    add_str(cond, "reason", "KubeletReady");
    add_str(cond, "message", "kubelet is posting ready status");
    addrs = add_arr(status, "addresses");
    a = push_obj(addrs);
    add_str(a, "type", "InternalIP");
    snprintf(buf, sizeof(buf), "10.0.%u.%u", idx / 5, 1 + rng_below(r, 254));
    add_str(a, "address", buf);
    a = push_obj(addrs);
    add_str(a, "type", "Hostname");
    add_str(a, "address", name);
    a = add_obj(status, "nodeInfo");
    add_str(a, "kubeletVersion", "v1.32.4");
    add_str(a, "containerRuntimeVersion", "containerd://1.7.24");
    add_str(a, "osImage", "Debian GNU/Linux 12 (bookworm)");
    return obj;
}

static cJSON *gen_namespace(const char *name)
{
    cJSON *meta;
    cJSON *obj = new_object("Namespace", "v1", NULL, name, &meta);

    add_str(add_obj(meta, "labels"), "kubernetes.io/metadata.name", name);
    cJSON_AddItemToArray(add_arr(add_obj(obj, "spec"), "finalizers"),
                         cj(cJSON_CreateString("kubernetes")));
    add_str(add_obj(obj, "status"), "phase", "Active");
    return obj;
}

static cJSON *gen_event(struct rng *r, const char *ns, const char *name)
{
    const char *app = app_for(r, name);
    const char *reason = PICK(r, reasons);
    cJSON *meta;
    cJSON *obj = new_object("Event", "v1", ns, name, &meta);
    cJSON *io = add_obj(obj, "involvedObject");
    cJSON *src;
    char suffix[6];
    char node[32];
    char buf[128];

    add_str(io, "kind", "Pod");
    add_str(io, "namespace", ns != NULL ? ns : "default");
    rng_hex(r, suffix, 5);
    snprintf(node, sizeof(node), "%s-%s", app, suffix);
    add_str(io, "name", node);
    add_str(io, "apiVersion", "v1");
    snprintf(buf, sizeof(buf), "spec.containers{%s}", app);
    add_str(io, "fieldPath", buf);
    add_str(obj, "reason", reason);
    snprintf(buf, sizeof(buf), "%s container %s", reason, app);
    add_str(obj, "message", buf);
    src = add_obj(obj, "source");
    add_str(src, "component", "kubelet");
    snprintf(node, sizeof(node), "node-%02u", rng_below(r, 50));
    add_str(src, "host", node);
    fake_time(buf, sizeof(buf), rng_below(r, 86400));
    add_str(obj, "firstTimestamp", buf);
    add_str(obj, "lastTimestamp", buf);
    add_num(obj, "count", 1);
    add_str(obj, "type", strcmp(reason, "Killing") == 0 ? "Warning" : "Normal");
    add_str(obj, "reportingComponent", "kubelet");
    add_str(obj, "reportingInstance", node);
    return obj;
}

/* Deployment and ReplicaSet share the workload shape: selector, replicas, pod template. */
static cJSON *gen_workload(struct rng *r, const char *kind, const char *ns, const char *name)
{
    const char *app = app_for(r, name);
    unsigned replicas = 1 + rng_below(r, 5);
    bool rs = strcmp(kind, "ReplicaSet") == 0;
    cJSON *meta;
    cJSON *obj = new_object(kind, "apps/v1", ns, name, &meta);
    cJSON *labels = add_obj(meta, "labels");
    cJSON *spec = add_obj(obj, "spec");
    cJSON *match;
    cJSON *tmpl;
    cJSON *tlabels;
    cJSON *status;
    char hash[11];

    add_num(spec, "replicas", replicas);
    match = add_obj(add_obj(spec, "selector"), "matchLabels");
    tmpl = add_obj(spec, "template");
    tlabels = add_obj(add_obj(tmpl, "metadata"), "labels");

    rng_hex(r, hash, 10);
    add_str(labels, "app", app);
    add_str(match, "app", app);
    add_str(tlabels, "app", app);
    if (rs) {
        add_str(labels, "pod-template-hash", hash);
        add_str(match, "pod-template-hash", hash);
        add_str(tlabels, "pod-template-hash", hash);
    }
    add_container(r, add_arr(add_obj(tmpl, "spec"), "containers"), app, false);
    if (!rs) {
        cJSON *strategy = add_obj(spec, "strategy");
        cJSON *ru;
        add_str(strategy, "type", "RollingUpdate");
        ru = add_obj(strategy, "rollingUpdate");
        add_str(ru, "maxUnavailable", "25%");
        add_str(ru, "maxSurge", "25%");
        add_num(spec, "revisionHistoryLimit", 10);
        add_num(spec, "progressDeadlineSeconds", 600);
    }
    status = add_obj(obj, "status");
    add_num(status, "observedGeneration", 1);
    add_num(status, "replicas", replicas);
    if (!rs) {
        add_num(status, "updatedReplicas", replicas);
    } else {
        add_num(status, "fullyLabeledReplicas", replicas);
    }
    add_num(status, "readyReplicas", replicas);
    add_num(status, "availableReplicas", replicas);
    return obj;
}

/* Kind for a resource outside the table: CamelCase(plural minus a trailing "s"). */
static cJSON *gen_generic(struct rng *r, const char *resource, const char *ns, const char *name)
{
    char kind[128];
    size_t n = strlen(resource);
    cJSON *meta;
    cJSON *obj;
    cJSON *spec;

    if (n > 1 && resource[n - 1] == 's') {
        n--;
    }
    if (n >= sizeof(kind)) {
        n = sizeof(kind) - 1;
    }
    memcpy(kind, resource, n);
    kind[n] = '\0';
    if (kind[0] >= 'a' && kind[0] <= 'z') {
        kind[0] = (char)(kind[0] - 'a' + 'A');
    }
    obj = new_object(kind, NULL, ns, name, &meta);
    add_str(add_obj(meta, "labels"), "app", app_for(r, name));
    spec = add_obj(obj, "spec");
    add_num(spec, "replicas", 1 + rng_below(r, 3));
    add_str(spec, "message", "generated by kwp sim");
    add_num(add_obj(obj, "status"), "observedGeneration", 1);
    return obj;
}

cJSON *objects_generate(const char *resource, const char *ns, const char *name, unsigned seed)
{
    struct rng r;
    const struct apires_kind *t = objects_type(resource);

    r.s = hash_str(hash_str(hash_str(0xcbf29ce484222325ULL ^ seed, resource), ns), name);
    if (t != NULL && !t->namespaced) {
        ns = NULL;
    }
    if (strcmp(resource, "pods") == 0) {
        return gen_pod(&r, ns, name);
    } else if (strcmp(resource, "configmaps") == 0) {
        return gen_configmap(&r, ns, name);
    } else if (strcmp(resource, "secrets") == 0) {
        return gen_secret(&r, ns, name);
    } else if (strcmp(resource, "services") == 0) {
        return gen_service(&r, ns, name);
    } else if (strcmp(resource, "nodes") == 0) {
        return gen_node(&r, name);
    } else if (strcmp(resource, "namespaces") == 0) {
        return gen_namespace(name);
    } else if (strcmp(resource, "events") == 0) {
        return gen_event(&r, ns, name);
    } else if (strcmp(resource, "deployments") == 0) {
        return gen_workload(&r, "Deployment", ns, name);
    } else if (strcmp(resource, "replicasets") == 0) {
        return gen_workload(&r, "ReplicaSet", ns, name);
    }
    return gen_generic(&r, resource, ns, name);
}

/* The first element of array member <key> of <obj> that is an object, or NULL. */
static cJSON *first_obj(cJSON *obj, const char *key)
{
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!cJSON_IsArray(arr) || !cJSON_IsObject(arr->child)) {
        return NULL;
    }
    return arr->child;
}

int objects_mutate(cJSON *obj, unsigned seed)
{
    const char *kind = str_of(obj, "kind");
    cJSON *meta;
    cJSON *status;
    cJSON *item;
    char buf[64];

    if (!cJSON_IsObject(obj)) {
        return -EINVAL;
    }
    meta = child_obj(obj, "metadata");
    if (seed & 1) {
        snprintf(buf, sizeof(buf), "b%u", seed % 4);
        set_str(child_obj(meta, "labels"), "churn", buf);
    } else {
        snprintf(buf, sizeof(buf), "%u", seed);
        set_str(child_obj(meta, "annotations"), "kwp.io/churn", buf);
    }

    if (strcmp(kind, "ConfigMap") == 0 || strcmp(kind, "Secret") == 0) {
        snprintf(buf, sizeof(buf), "%u", seed);
        if (kind[0] == 'S') {
            char *b64 = proto_base64_new(buf, strlen(buf));
            set_str(child_obj(obj, "data"), "rev", b64);
            free(b64);
        } else {
            set_str(child_obj(obj, "data"), "rev", buf);
        }
        return 0;
    }
    if (strcmp(kind, "Event") == 0) {
        item = cJSON_GetObjectItemCaseSensitive(obj, "count");
        set_num(obj, "count", (cJSON_IsNumber(item) ? item->valuedouble : 0) + 1);
        fake_time(buf, sizeof(buf), seed);
        set_str(obj, "lastTimestamp", buf);
        return 0;
    }

    status = cJSON_GetObjectItemCaseSensitive(obj, "status");
    if (!cJSON_IsObject(status)) {
        status = strcmp(kind, "Namespace") == 0 || strcmp(kind, "Service") == 0
                     ? NULL
                     : child_obj(obj, "status");
    }
    if (status == NULL) {
        return 0;
    }
    if (strcmp(kind, "Pod") == 0) {
        cJSON *cs = first_obj(status, "containerStatuses");
        cJSON *cond = first_obj(status, "conditions");
        bool ready = (seed / 2) % 4 != 0;
        if (cs != NULL) {
            item = cJSON_GetObjectItemCaseSensitive(cs, "restartCount");
            set_num(cs, "restartCount", (cJSON_IsNumber(item) ? item->valuedouble : 0) + 1);
            set_item(cs, "ready", cj(cJSON_CreateBool(ready)));
        }
        if (cond != NULL) {
            set_str(cond, "status", ready ? "True" : "False");
            fake_time(buf, sizeof(buf), seed);
            set_str(cond, "lastTransitionTime", buf);
        }
    } else if (strcmp(kind, "Deployment") == 0 || strcmp(kind, "ReplicaSet") == 0) {
        const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
        const cJSON *rep = cJSON_GetObjectItemCaseSensitive(spec, "replicas");
        unsigned replicas = cJSON_IsNumber(rep) && rep->valueint > 0 ? (unsigned)rep->valueint : 1;
        unsigned ready = seed % (replicas + 1);
        set_num(status, "readyReplicas", ready);
        set_num(status, "availableReplicas", ready);
    } else if (strcmp(kind, "Node") == 0) {
        cJSON *cond = first_obj(status, "conditions");
        fake_time(buf, sizeof(buf), seed);
        if (cond != NULL) {
            set_str(cond, "lastHeartbeatTime", buf);
        } else {
            set_str(status, "churn", buf);
        }
    } else if (strcmp(kind, "Namespace") != 0 && strcmp(kind, "Service") != 0) {
        /* Namespace and Service have no status field a churn would plausibly move. */
        set_num(status, "churn", seed % 100000);
    }
    return 0;
}
