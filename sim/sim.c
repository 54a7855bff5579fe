/*
 * sim.c - the simulated kube-apiserver (see sim.h).
 *
 * Storage model: one global revision (like etcd's), bumped by every write; each resource
 * is a cache/ resource whose RV is advanced to the global revision after every write (as an
 * apiserver cache does with etcd progress notifications), so list and bookmark RVs are
 * global revisions and per-resource RVs are not contiguous. Compaction drops history at or
 * below a revision: watches and Exact/continue lists older than that get kube's 410s.
 * Objects of built-in kinds are stored without kind/apiVersion (the form list items have);
 * custom resources keep them.
 */
#include "sim/sim.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "cache/blob.h"
#include "cache/bug.h"
#include "cache/resource.h"
#include "cache/rv.h"
#include "cache/snapshot.h"
#include "proxy/apires.h"
#include "proxy/debugres.h"
#include "proxy/handlers.h"
#include "proxy/http_server.h"
#include "proxy/k8s_path.h"
#include "proxy/kstatus.h"
#include "proxy/kube_meta.h"
#include "proxy/log.h"
#include "proxy/registry.h"
#include "proxy/review.h"
#include "sim/alloc.h"
#include "sim/gen.h"
#include "sim/guard.h"
#include "sim/objects.h"
#include "sim/proto.h"

#define SIM_VERSION_MINOR "34"
#define SIM_HISTORY_CAP (1u << 20) /* events per resource between compactions */

struct sim {
    struct sim_opts o;
    pthread_mutex_t lock; /* serialises writes: revision, uids, rng, compaction */
    _Atomic uint64_t revision;
    _Atomic uint64_t compacted;
    uint64_t rng;         /* under lock */
    uint64_t uid_seq;     /* under lock */
    struct registry *reg; /* the served resources, all added before the server starts */
    struct http_server *srv;
    struct guard *guard; /* authn, impersonation, authz, reviews: read-only once started */
    struct handlers_opts hopts;
    pthread_t churn;
    bool churn_started;
    atomic_bool stop;
    int64_t created_ms;
    int64_t next_compact_ms; /* tick thread only once it runs; 0 = never */
};

/* ---- helpers --------------------------------------------------------------------------- */

static uint64_t sim_rand(struct sim *s)
{
    uint64_t x = s->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s->rng = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static void rfc3339_now(char out[32])
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* A uuid derived from the sequence (unique within a run, stable given the seed). */
static void make_uid(struct sim *s, char out[37])
{
    uint64_t a = sim_rand(s), b = ++s->uid_seq;
    snprintf(out, 37, "%08" PRIx32 "-%04" PRIx32 "-4%03" PRIx32 "-8%03" PRIx32 "-%012" PRIx64,
             (uint32_t)(a >> 32), (uint32_t)(a >> 16) & 0xffff, (uint32_t)a & 0xfff,
             (uint32_t)(b >> 48) & 0xfff, (uint64_t)(b & 0xffffffffffffull));
}

static void reply_json(struct http_req *req, int code, const char *json)
{
    http_reply(req, code, "application/json", json, strlen(json));
}

static void reply_cjson(struct http_req *req, int code, cJSON *j)
{
    char *txt = cJSON_PrintUnformatted(j);
    size_t len = strlen(txt);
    char *body = xmalloc(len + 2);

    memcpy(body, txt, len);
    body[len] = '\n';
    http_reply(req, code, "application/json", body, len + 1);
    free(body);
    cJSON_free(txt);
}

static void reply_status(struct http_req *req, int code, const char *reason, const char *msg)
{
    struct kstatus st;
    kstatus_set(&st, code, reason, "%s", msg);
    http_reply_status(req, &st);
}

/* go-restful's route errors (no such path: 404, no such method: 405) go through
 * apierrors.NewGenericServerResponse, whose StatusDetails is non-nil and empty:
 * "details":{} (an empty kind is set only to make kstatus_json write it). */
static void reply_route_error(struct http_req *req, int code, const char *reason, const char *msg)
{
    struct kstatus st;
    kstatus_set(&st, code, reason, "%s", msg);
    st.kind = "";
    http_reply_status(req, &st);
}

static void reply_not_found_path(struct http_req *req)
{
    reply_route_error(req, 404, "NotFound", "the server could not find the requested resource");
}

/* "pods" or "deployments.apps" as kube-apiserver names a resource in messages. */
static void qualified(const struct apires *ar, char *out, size_t cap)
{
    if (ar->kind.group[0]) {
        snprintf(out, cap, "%s.%s", ar->kind.plural, ar->kind.group);
    } else {
        snprintf(out, cap, "%s", ar->kind.plural);
    }
}

static void store_key(const struct apires *ar, const char *ns, const char *name, char *out,
                      size_t cap)
{
    if (ar->kind.namespaced && ns && ns[0]) {
        snprintf(out, cap, "%s/%s", ns, name);
    } else {
        snprintf(out, cap, "%s", name);
    }
}

/*
 * Serialises <obj> in storage form (built-ins without kind/apiVersion) and makes a blob.
 * Returns NULL if the object cannot be indexed (no name).
 */
static struct blob *to_blob(const struct apires *ar, cJSON *obj)
{
    cJSON *kind = NULL, *apiv = NULL;
    struct blob *b;
    char *txt;

    if (ar->kind.builtin) {
        kind = cJSON_DetachItemFromObjectCaseSensitive(obj, "kind");
        apiv = cJSON_DetachItemFromObjectCaseSensitive(obj, "apiVersion");
    } else {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "kind");
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "apiVersion");
        /* custom resources keep them, first, as the apiserver writes them */
        kind = cJSON_CreateString(ar->kind.kind);
        apiv = cJSON_CreateString(ar->api_version);
        cJSON_AddItemToObject(obj, "kind", kind);
        cJSON_AddItemToObject(obj, "apiVersion", apiv);
        kind = apiv = NULL;
    }
    txt = cJSON_PrintUnformatted(obj);
    b = kube_meta_blob(txt, strlen(txt), ar->kind.fields);
    cJSON_free(txt);
    if (kind) {
        cJSON_AddItemToObject(obj, "kind", kind);
    }
    if (apiv) {
        cJSON_AddItemToObject(obj, "apiVersion", apiv);
    }
    return b;
}

/* Parses the stored JSON of <b> back into a tree with kind/apiVersion set. */
static cJSON *from_blob(const struct apires *ar, const struct blob *b)
{
    cJSON *obj = cJSON_ParseWithLength(b->data, b->len);

    if (obj && ar->kind.builtin) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "kind");
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "apiVersion");
        cJSON_AddStringToObject(obj, "kind", ar->kind.kind);
        cJSON_AddStringToObject(obj, "apiVersion", ar->api_version);
    }
    return obj;
}

/* Commits <rev> as the new global revision: every resource's RV moves to it. Under lock. */
static void commit_revision(struct sim *s, uint64_t rev)
{
    atomic_store(&s->revision, rev);
    for (size_t i = 0; i < registry_len(s->reg); i++) {
        resource_progress(registry_at(s->reg, i)->res, rev);
    }
}

/* Applies one write to the cache at the next revision. Under lock. Takes ownership of b. */
static int apply_write(struct sim *s, struct apires *ar, enum watch_type type, struct blob *b,
                       uint64_t rev)
{
    int rc = resource_apply(ar->res, type, b, rev, clock_mono_ms());
    blob_unref(b);
    if (rc == 0) {
        commit_revision(s, rev);
    }
    return rc;
}

/* Adds the --stamp annotation (wall clock ns) used by `kwp load` to measure latency. */
static void stamp(struct sim *s, cJSON *obj)
{
    struct timespec ts;
    char v[32];
    cJSON *meta, *ann;

    if (!s->o.stamp) {
        return;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(v, sizeof(v), "%lld", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    if (!cJSON_IsObject(meta)) {
        return;
    }
    ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
    if (!cJSON_IsObject(ann)) {
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "annotations");
        ann = cJSON_AddObjectToObject(meta, "annotations");
    }
    cJSON_DeleteItemFromObjectCaseSensitive(ann, "kwp.io/stamp-ns");
    cJSON_AddStringToObject(ann, "kwp.io/stamp-ns", v);
}

/* Pads a generated object with annotation kwp.io/pad so it prints to about --object-bytes. */
static void pad(struct sim *s, cJSON *obj)
{
    cJSON *meta, *ann;
    char *txt;
    size_t len;

    if (s->o.object_bytes <= 0) {
        return;
    }
    txt = cJSON_PrintUnformatted(obj);
    len = strlen(txt);
    cJSON_free(txt);
    if ((int64_t)len + 32 >= s->o.object_bytes) {
        return;
    }
    meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    if (!cJSON_IsObject(meta)) {
        return;
    }
    ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
    if (!cJSON_IsObject(ann)) {
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "annotations");
        ann = cJSON_AddObjectToObject(meta, "annotations");
    }
    size_t n = (size_t)s->o.object_bytes - len - 32;
    char *v = xmalloc(n + 1);
    memset(v, 'x', n);
    v[n] = '\0';
    cJSON_AddStringToObject(ann, "kwp.io/pad", v);
    free(v);
}

/* ---- request bodies -------------------------------------------------------------------- */

static bool ctype_is(const char *ct, const char *want)
{
    size_t n = strlen(want);
    return ct && strncasecmp(ct, want, n) == 0 && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static void reply_unsupported_body(struct http_req *req)
{
    reply_status(req, 415, "UnsupportedMediaType",
                 "the body of the request was in an unknown format - accepted media types "
                 "include: application/json, application/vnd.kubernetes.protobuf");
}

/* Decodes the request body into a tree; on failure replies and returns NULL. */
static cJSON *decode_body(struct http_req *req)
{
    const char *ct = http_req_header(req, "Content-Type");
    size_t len;
    const char *body = http_req_body(req, &len);
    char err[256];
    cJSON *obj = NULL;
    const char *end = NULL;

    if (ctype_is(ct, "application/vnd.kubernetes.protobuf")) {
        int rc = proto_decode(body, len, &obj, err, sizeof(err));
        if (rc == -ENOTSUP) {
            reply_status(req, 415, "UnsupportedMediaType", err);
            return NULL;
        }
        if (rc != 0) {
            char msg[400];
            snprintf(msg, sizeof(msg), "the body of the request could not be decoded: %s", err);
            reply_status(req, 400, "BadRequest", msg);
            return NULL;
        }
        return obj;
    }
    if (ct && !ctype_is(ct, "application/json") && !ctype_is(ct, "*/*")) {
        reply_unsupported_body(req);
        return NULL;
    }
    obj = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!obj) {
        reply_status(req, 400, "BadRequest",
                     len == 0 ? "couldn't get version/kind; json parse error: unexpected end of "
                                "JSON input"
                              : "couldn't get version/kind; json parse error: invalid character "
                                "in JSON body");
        return NULL;
    }
    while (end && end < body + len &&
           (*end == ' ' || *end == '\n' || *end == '\r' || *end == '\t')) {
        end++;
    }
    if (!cJSON_IsObject(obj) || (end && end != body + len)) {
        cJSON_Delete(obj);
        reply_status(req, 400, "BadRequest",
                     "couldn't get version/kind; json parse error: the body is not a single JSON "
                     "object");
        return NULL;
    }
    return obj;
}

static const char *obj_name(const cJSON *obj)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(meta, "name");
    return cJSON_IsString(name) ? name->valuestring : NULL;
}

/* ---- writes ---------------------------------------------------------------------------- */

static void reply_object(struct http_req *req, int code, const struct apires *ar,
                         const struct blob *b)
{
    size_t len;
    char *body = handlers_object_json(ar, b, &len);
    http_reply(req, code, "application/json", body, len);
    free(body);
}

static bool namespace_exists(struct sim *s, const char *ns)
{
    struct apires *nsr = registry_find(s->reg, "", "v1", "namespaces");
    struct blob *b;

    if (!nsr) {
        return true;
    }
    b = resource_get(nsr->res, ns);
    blob_unref(b);
    return b != NULL;
}

/* Maps an objects_prepare_* error (objects.h's table) to the apiserver's Status. */
static void create_error(struct kstatus *st, const struct apires *ar, int rc, const char *err)
{
    if (rc == -EINVAL) {
        kstatus_set(st, 400, "BadRequest", "%s", err);
    } else if (rc == -EDOM) {
        kstatus_set(st, 422, "Invalid", "%s", err);
        st->group = ar->kind.group[0] ? ar->kind.group : NULL;
        st->kind = ar->kind.kind;
        st->causes[0].reason = "FieldValueRequired";
        st->causes[0].message = "Required value: name or generateName is required";
        st->causes[0].field = "metadata.name";
        st->n_causes = 1;
    } else if (rc == -EBUSY) {
        kstatus_set(st, 409, "Conflict", "%s", err);
    } else {
        kstatus_set(st, 500, NULL, "%s", err);
    }
}

/* Gives the Service <obj> its cluster IP and node ports, unique among the stored Services
 * (alloc_service); -EDOM with a 422 in <st> otherwise. Under the lock, which
 * serialises allocations. The used set is rebuilt from the store each time, so the store is
 * the only record (deletes and updates need no bookkeeping); it costs a parse per stored
 * Service (measured: a create takes 0.4 ms with 100 Services, 19 ms with 3000), and
 * simulated clusters hold few. */
static int allocate_service(struct apires *ar, cJSON *obj, struct kstatus *st)
{
    /* <st> borrows its cause strings: they live here until this thread's next failed Service
     * create, which can only come after the reply that uses them (one request at a time per
     * thread). */
    static _Thread_local struct alloc_invalid inv;
    struct alloc_used *used = alloc_used_new();
    struct snapshot *snap;
    uint64_t snap_rv;
    int rc;

    snap = resource_snapshot(ar->res, &snap_rv);
    for (size_t i = 0; i < snap->len; i++) {
        const struct blob *b = snapshot_at(snap, i);
        cJSON *svc = cJSON_ParseWithLength(b->data, b->len);
        if (svc != NULL) {
            alloc_used_add(used, svc);
            cJSON_Delete(svc);
        }
    }
    snapshot_unref(snap);
    rc = alloc_service(obj, used, &inv);
    alloc_used_free(used);
    if (rc != 0) {
        kstatus_set(st, 422, "Invalid", "%s", inv.message);
        st->name = obj_name(obj);
        st->kind = "Service";
        st->causes[0].reason = inv.reason;
        st->causes[0].message = inv.detail;
        st->causes[0].field = inv.field;
        st->n_causes = 1;
    }
    return rc;
}

/* Creates <obj> (taken over) in <ar>; on success returns the stored blob (a reference) and
 * 0, else a negative errno with <st> filled. */
static int do_create(struct sim *s, struct apires *ar, const char *ns, cJSON *obj,
                     struct blob **out, struct kstatus *st)
{
    char uid[37], now[32], err[512], key[K8S_NAME_MAX * 2 + 2], q[200];
    uint64_t rev;
    struct blob *b, *existing;
    int rc;

    rfc3339_now(now);
    pthread_mutex_lock(&s->lock);
    rev = atomic_load(&s->revision) + 1;
    make_uid(s, uid);
    qualified(ar, q, sizeof(q));
    rc = objects_prepare_create(obj, ar->kind.builtin ? ar->kind.plural : q,
                                ar->kind.namespaced ? ns : NULL, NULL, rev, uid, now, err,
                                sizeof(err));
    if (rc != 0) {
        pthread_mutex_unlock(&s->lock);
        create_error(st, ar, rc, err);
        return rc;
    }
    if (ar->kind.builtin && strcmp(ar->kind.plural, "services") == 0) {
        rc = allocate_service(ar, obj, st);
        if (rc != 0) {
            pthread_mutex_unlock(&s->lock);
            return rc;
        }
    }
    stamp(s, obj);
    store_key(ar, ns, obj_name(obj), key, sizeof(key));
    existing = resource_get(ar->res, key);
    if (existing) {
        blob_unref(existing);
        pthread_mutex_unlock(&s->lock);
        kstatus_set(st, 409, "AlreadyExists", "%s \"%s\" already exists", q, obj_name(obj));
        st->name = NULL;
        return -EEXIST;
    }
    if (ar->kind.namespaced && !namespace_exists(s, ns)) {
        pthread_mutex_unlock(&s->lock);
        kstatus_not_found(st, "", "namespaces", ns);
        return -ENOENT;
    }
    b = to_blob(ar, obj);
    if (!b) {
        pthread_mutex_unlock(&s->lock);
        kstatus_set(st, 500, "InternalError", "Internal error occurred: cannot index object");
        return -EPROTO;
    }
    blob_ref(b);
    rc = apply_write(s, ar, WATCH_ADDED, b, rev);
    pthread_mutex_unlock(&s->lock);
    if (rc != 0) {
        blob_unref(b);
        kstatus_set(st, 500, "InternalError", "Internal error occurred: apply failed");
        return rc;
    }
    *out = b;
    return 0;
}

static void sim_create(struct sim *s, struct http_req *req, struct apires *ar,
                       const struct k8s_path *p)
{
    struct kstatus st;
    struct blob *b = NULL;
    cJSON *obj = decode_body(req);

    if (!obj) {
        return;
    }
    if (do_create(s, ar, p->ns, obj, &b, &st) != 0) {
        /* AlreadyExists carries details name/kind like the apiserver's */
        if (st.code == 409) {
            st.name = obj_name(obj);
            st.group = ar->kind.group[0] ? ar->kind.group : NULL;
            st.kind = ar->kind.plural;
        }
        http_reply_status(req, &st);
        cJSON_Delete(obj);
        return;
    }
    cJSON_Delete(obj);
    reply_object(req, 201, ar, b);
    blob_unref(b);
}

/*
 * True when <obj>, at <old>'s resourceVersion, prints exactly as <old>: an update that changes
 * nothing, which etcd3's GuaranteedUpdate answers with the stored object and no write (same
 * resourceVersion, no watch event; kubectl apply's no-op patches, e.g. the replace-strategy
 * selector of a PodDisruptionBudget it always sends). Leaves <obj> as it was. Under lock.
 */
static bool update_is_noop(const struct apires *ar, cJSON *obj, const struct blob *old)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    cJSON *rv = cJSON_DetachItemFromObjectCaseSensitive(meta, "resourceVersion");
    struct blob *b = NULL;
    bool same = false;

    if (rv == NULL) {
        return false;
    }
    cJSON_AddItemToObject(meta, "resourceVersion", cJSON_CreateString(old->rv_str));
    b = to_blob(ar, obj);
    same = b != NULL && b->len == old->len && memcmp(b->data, old->data, b->len) == 0;
    blob_unref(b);
    cJSON_ReplaceItemInObjectCaseSensitive(meta, "resourceVersion", rv);
    return same;
}

/* Replaces the object at <key> with <obj> (PUT, PATCH). */
static void finish_update(struct sim *s, struct http_req *req, struct apires *ar,
                          const struct k8s_path *p, cJSON *obj, const struct blob *old,
                          uint64_t rev)
{
    struct blob *b;
    int rc;

    if (!s->o.stamp && update_is_noop(ar, obj, old)) {
        pthread_mutex_unlock(&s->lock);
        reply_object(req, 200, ar, old);
        return;
    }
    stamp(s, obj);
    b = to_blob(ar, obj);
    if (!b) {
        pthread_mutex_unlock(&s->lock);
        reply_status(req, 500, "InternalError", "Internal error occurred: cannot index object");
        return;
    }
    blob_ref(b);
    rc = apply_write(s, ar, WATCH_MODIFIED, b, rev);
    pthread_mutex_unlock(&s->lock);
    if (rc != 0) {
        blob_unref(b);
        reply_status(req, 500, "InternalError", "Internal error occurred: apply failed");
        return;
    }
    reply_object(req, 200, ar, b);
    blob_unref(b);
    (void)old;
    (void)p;
}

static void sim_update(struct sim *s, struct http_req *req, struct apires *ar,
                       const struct k8s_path *p, bool patch)
{
    char key[K8S_NAME_MAX * 2 + 2], q[200], err[512];
    cJSON *in = NULL, *cur = NULL;
    struct blob *old;
    uint64_t rev;
    int rc;

    qualified(ar, q, sizeof(q));
    if (patch) {
        const char *ct = http_req_header(req, "Content-Type");
        size_t len;
        const char *body = http_req_body(req, &len);
        if (!ctype_is(ct, "application/merge-patch+json") &&
            !ctype_is(ct, "application/strategic-merge-patch+json")) {
            reply_status(req, 415, "UnsupportedMediaType",
                         "the body of the request was in an unknown format - accepted media "
                         "types include: application/merge-patch+json, "
                         "application/strategic-merge-patch+json");
            return;
        }
        in = cJSON_ParseWithLength(body, len);
        if (!cJSON_IsObject(in)) {
            cJSON_Delete(in);
            reply_status(req, 400, "BadRequest", "error decoding patch: invalid JSON");
            return;
        }
    } else {
        in = decode_body(req);
        if (!in) {
            return;
        }
        if (!obj_name(in) || strcmp(obj_name(in), p->name) != 0) {
            char msg[600];
            snprintf(msg, sizeof(msg),
                     "the name of the object (%s) does not match the name on the URL (%s)",
                     obj_name(in) ? obj_name(in) : "", p->name);
            cJSON_Delete(in);
            reply_status(req, 400, "BadRequest", msg);
            return;
        }
    }
    store_key(ar, p->ns, p->name, key, sizeof(key));
    pthread_mutex_lock(&s->lock);
    old = resource_get(ar->res, key);
    if (!old) {
        struct kstatus st;
        pthread_mutex_unlock(&s->lock);
        cJSON_Delete(in);
        kstatus_not_found(&st, ar->kind.group, ar->kind.plural, p->name);
        http_reply_status(req, &st);
        return;
    }
    rev = atomic_load(&s->revision) + 1;
    cur = from_blob(ar, old);
    if (patch) {
        if (objects_merge_patch(cur, in) != 0) {
            pthread_mutex_unlock(&s->lock);
            blob_unref(old);
            cJSON_Delete(in);
            cJSON_Delete(cur);
            reply_status(req, 400, "BadRequest", "error decoding patch: not a JSON object");
            return;
        }
        cJSON_Delete(in);
        in = cur;
        cur = from_blob(ar, old);
    }
    rc =
        objects_prepare_update(in, cur, q, p->ns[0] ? p->ns : NULL, p->name, rev, err, sizeof(err));
    cJSON_Delete(cur);
    if (rc == -EBUSY) {
        struct kstatus st;
        pthread_mutex_unlock(&s->lock);
        blob_unref(old);
        cJSON_Delete(in);
        kstatus_set(&st, 409, "Conflict", "%s", err);
        st.name = p->name;
        st.group = ar->kind.group[0] ? ar->kind.group : NULL;
        st.kind = ar->kind.plural;
        http_reply_status(req, &st);
        return;
    }
    if (rc != 0) {
        struct kstatus st;
        pthread_mutex_unlock(&s->lock);
        blob_unref(old);
        cJSON_Delete(in);
        create_error(&st, ar, rc, err);
        http_reply_status(req, &st);
        return;
    }
    finish_update(s, req, ar, p, in, old, rev); /* unlocks */
    blob_unref(old);
    cJSON_Delete(in);
}

/* Returns a copy of <b> whose resourceVersion is <rev> (the object a DELETED event carries). */
static struct blob *with_rv(const struct apires *ar, const struct blob *b, uint64_t rev)
{
    cJSON *obj = cJSON_ParseWithLength(b->data, b->len);
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    char rv[24];
    struct blob *out;
    char *txt;

    rv_format(rev, rv);
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "resourceVersion");
    cJSON_AddStringToObject(meta, "resourceVersion", rv);
    txt = cJSON_PrintUnformatted(obj);
    out = kube_meta_blob(txt, strlen(txt), ar->kind.fields);
    cJSON_free(txt);
    cJSON_Delete(obj);
    return out;
}

/* Deletes <key>; returns the last stored blob (a reference) or NULL when absent. Under no
 * lock; takes the lock. */
static struct blob *do_delete(struct sim *s, struct apires *ar, const char *key)
{
    struct blob *old, *gone;
    uint64_t rev;

    pthread_mutex_lock(&s->lock);
    old = resource_get(ar->res, key);
    if (!old) {
        pthread_mutex_unlock(&s->lock);
        return NULL;
    }
    rev = atomic_load(&s->revision) + 1;
    gone = with_rv(ar, old, rev);
    if (!gone || apply_write(s, ar, WATCH_DELETED, gone, rev) != 0) {
        pthread_mutex_unlock(&s->lock);
        blob_unref(old);
        return NULL;
    }
    pthread_mutex_unlock(&s->lock);
    return old;
}

static void sim_delete(struct sim *s, struct http_req *req, struct apires *ar,
                       const struct k8s_path *p)
{
    char key[K8S_NAME_MAX * 2 + 2];
    struct blob *old;

    store_key(ar, p->ns, p->name, key, sizeof(key));
    old = do_delete(s, ar, key);
    if (!old) {
        struct kstatus st;
        kstatus_not_found(&st, ar->kind.group, ar->kind.plural, p->name);
        http_reply_status(req, &st);
        return;
    }
    /* Stores with ReturnDeletedObject (pods, serviceaccounts; custom resources; namespaces,
     * whose REST returns the object) answer with it; the others with a Success Status. */
    if (strcmp(ar->kind.plural, "pods") == 0 || !ar->kind.builtin ||
        strcmp(ar->kind.plural, "namespaces") == 0 ||
        strcmp(ar->kind.plural, "serviceaccounts") == 0) {
        reply_object(req, 200, ar, old);
    } else {
        struct kstatus st;
        kstatus_set(&st, 200, NULL, "%s", "");
        st.code = 0;
        st.name = p->name;
        cJSON *o = cJSON_ParseWithLength(old->data, old->len);
        const cJSON *uid = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(o, "metadata"), "uid");
        st.uid = cJSON_IsString(uid) ? uid->valuestring : NULL;
        st.group = ar->kind.group[0] ? ar->kind.group : NULL;
        st.kind = ar->kind.plural;
        char body[1024];
        size_t n = kstatus_json(&st, body, sizeof(body) - 1);
        if (n >= sizeof(body) - 1) {
            n = sizeof(body) - 2;
        }
        body[n++] = '\n';
        http_reply(req, 200, "application/json", body, n);
        cJSON_Delete(o);
    }
    blob_unref(old);
}

/* ---- discovery ------------------------------------------------------------------------- */

/* The review APIs (sim/guard.h), v1 and cluster-scoped, listed beside the registry's kinds. */
static const struct review_api {
    const char *group, *plural, *singular, *kind;
} review_apis[] = {
    {"authentication.k8s.io", "tokenreviews", "tokenreview", "TokenReview"},
    {"authorization.k8s.io", "subjectaccessreviews", "subjectaccessreview", "SubjectAccessReview"},
};
#define N_REVIEW_APIS (sizeof(review_apis) / sizeof(review_apis[0]))

static const struct review_api *review_api_of(const char *group)
{
    for (size_t i = 0; i < N_REVIEW_APIS; i++) {
        if (strcmp(review_apis[i].group, group) == 0) {
            return &review_apis[i];
        }
    }
    return NULL;
}

/* One APIResource entry of resource_list_json. */
static cJSON *api_resource_json(const char *plural, const char *singular, bool namespaced,
                                const char *kind, const char *const *verbs, size_t n_verbs)
{
    cJSON *r = cJSON_CreateObject(), *v;

    cJSON_AddStringToObject(r, "name", plural);
    cJSON_AddStringToObject(r, "singularName", singular);
    cJSON_AddBoolToObject(r, "namespaced", namespaced);
    cJSON_AddStringToObject(r, "kind", kind);
    v = cJSON_AddArrayToObject(r, "verbs");
    for (size_t j = 0; j < n_verbs; j++) {
        cJSON_AddItemToArray(v, cJSON_CreateString(verbs[j]));
    }
    return r;
}

static cJSON *resource_list_json(struct sim *s, const char *group, const char *version)
{
    cJSON *root = cJSON_CreateObject(), *arr;
    char gv[160];

    if (group[0]) {
        snprintf(gv, sizeof(gv), "%s/%s", group, version);
    } else {
        snprintf(gv, sizeof(gv), "%s", version);
    }
    cJSON_AddStringToObject(root, "kind", "APIResourceList");
    cJSON_AddStringToObject(root, "apiVersion", "v1");
    cJSON_AddStringToObject(root, "groupVersion", gv);
    arr = cJSON_AddArrayToObject(root, "resources");
    for (size_t i = 0; i < registry_len(s->reg); i++) {
        const struct apires_kind *k = &registry_at(s->reg, i)->kind;
        static const char *const verbs[] = {"create", "delete", "get",  "list",
                                            "patch",  "update", "watch"};
        cJSON *r;
        if (strcmp(k->group, group) != 0 || strcmp(k->version, version) != 0) {
            continue;
        }
        r = api_resource_json(k->plural, k->singular, k->namespaced, k->kind, verbs,
                              sizeof(verbs) / sizeof(verbs[0]));
        if (k->short_names[0]) {
            cJSON *sn = cJSON_AddArrayToObject(r, "shortNames");
            char buf[64];
            snprintf(buf, sizeof(buf), "%s", k->short_names);
            for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
                 t = strtok_r(NULL, ",", &save)) {
                cJSON_AddItemToArray(sn, cJSON_CreateString(t));
            }
        }
        cJSON_AddItemToArray(arr, r);
    }
    if (review_api_of(group) && strcmp(version, "v1") == 0) {
        static const char *const create[] = {"create"};
        const struct review_api *ra = review_api_of(group);
        cJSON_AddItemToArray(
            arr, api_resource_json(ra->plural, ra->singular, false, ra->kind, create, 1));
    }
    return root;
}

static bool group_known(struct sim *s, const char *group, const char *version)
{
    if (review_api_of(group) && (!version || strcmp(version, "v1") == 0)) {
        return true;
    }
    for (size_t i = 0; i < registry_len(s->reg); i++) {
        const struct apires_kind *k = &registry_at(s->reg, i)->kind;
        if (strcmp(k->group, group) == 0 && (!version || strcmp(k->version, version) == 0)) {
            return true;
        }
    }
    return false;
}

static cJSON *group_json(struct sim *s, const char *group)
{
    cJSON *g = cJSON_CreateObject(), *versions, *pref = NULL;

    cJSON_AddStringToObject(g, "name", group);
    versions = cJSON_AddArrayToObject(g, "versions");
    for (size_t i = 0; i < registry_len(s->reg); i++) {
        const struct apires_kind *k = &registry_at(s->reg, i)->kind;
        bool seen = false;
        char gv[160];
        if (strcmp(k->group, group) != 0) {
            continue;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(registry_at(s->reg, j)->kind.group, group) == 0 &&
                strcmp(registry_at(s->reg, j)->kind.version, k->version) == 0) {
                seen = true;
            }
        }
        if (seen) {
            continue;
        }
        snprintf(gv, sizeof(gv), "%s/%s", group, k->version);
        cJSON *v = cJSON_CreateObject();
        cJSON_AddStringToObject(v, "groupVersion", gv);
        cJSON_AddStringToObject(v, "version", k->version);
        cJSON_AddItemToArray(versions, v);
        if (!pref) {
            pref = cJSON_Duplicate(v, 1);
        }
    }
    if (!pref && review_api_of(group)) {
        char gv[160];
        cJSON *v = cJSON_CreateObject();
        snprintf(gv, sizeof(gv), "%s/v1", group);
        cJSON_AddStringToObject(v, "groupVersion", gv);
        cJSON_AddStringToObject(v, "version", "v1");
        cJSON_AddItemToArray(versions, v);
        pref = cJSON_Duplicate(v, 1);
    }
    if (pref) {
        cJSON_AddItemToObject(g, "preferredVersion", pref);
    }
    return g;
}

/* Answers discovery and the non-resource endpoints; returns false when <path> is not one. */
static bool serve_discovery(struct sim *s, struct http_req *req, const char *path)
{
    char group[K8S_SEG_MAX], version[K8S_SEG_MAX];
    cJSON *root;

    if (strcmp(path, "/version") == 0 || strcmp(path, "/version/") == 0) {
        reply_json(
            req, 200,
            "{\"major\":\"1\",\"minor\":\"" SIM_VERSION_MINOR "\",\"emulationMajor\":\"1\","
            "\"emulationMinor\":\"" SIM_VERSION_MINOR "\",\"minCompatibilityMajor\":\"1\","
            "\"minCompatibilityMinor\":\"33\",\"gitVersion\":\"v1." SIM_VERSION_MINOR
            ".0-kwp-sim\",\"gitCommit\":\"0000000000000000000000000000000000000000\","
            "\"gitTreeState\":\"clean\",\"buildDate\":\"2026-01-01T00:00:00Z\","
            "\"goVersion\":\"go1.24.0\",\"compiler\":\"gc\",\"platform\":\"linux/amd64\"}\n");
        return true;
    }
    if (strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0 ||
        strcmp(path, "/livez") == 0) {
        http_reply(req, 200, "text/plain; charset=utf-8", "ok", 2);
        return true;
    }
    if (strcmp(path, "/api") == 0 || strcmp(path, "/api/") == 0) {
        reply_json(req, 200,
                   "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],\"serverAddressByClientCIDRs\":"
                   "[{\"clientCIDR\":\"0.0.0.0/0\",\"serverAddress\":\"127.0.0.1:6443\"}]}\n");
        return true;
    }
    if (strcmp(path, "/api/v1") == 0 || strcmp(path, "/api/v1/") == 0) {
        root = resource_list_json(s, "", "v1");
        reply_cjson(req, 200, root);
        cJSON_Delete(root);
        return true;
    }
    if (strcmp(path, "/apis") == 0 || strcmp(path, "/apis/") == 0) {
        cJSON *groups;
        root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "kind", "APIGroupList");
        cJSON_AddStringToObject(root, "apiVersion", "v1");
        groups = cJSON_AddArrayToObject(root, "groups");
        for (size_t i = 0; i < registry_len(s->reg); i++) {
            const char *g = registry_at(s->reg, i)->kind.group;
            bool seen = false;
            if (!g[0]) {
                continue;
            }
            for (size_t j = 0; j < i; j++) {
                seen = seen || strcmp(registry_at(s->reg, j)->kind.group, g) == 0;
            }
            if (!seen) {
                cJSON_AddItemToArray(groups, group_json(s, g));
            }
        }
        for (size_t i = 0; i < N_REVIEW_APIS; i++) {
            cJSON_AddItemToArray(groups, group_json(s, review_apis[i].group));
        }
        reply_cjson(req, 200, root);
        cJSON_Delete(root);
        return true;
    }
    if (strncmp(path, "/apis/", 6) == 0) {
        const char *g = path + 6, *slash = strchr(g, '/');
        size_t glen = slash ? (size_t)(slash - g) : strlen(g);
        if (glen == 0 || glen >= sizeof(group)) {
            return false;
        }
        memcpy(group, g, glen);
        group[glen] = '\0';
        if (!slash || slash[1] == '\0') {
            if (!group_known(s, group, NULL)) {
                return false;
            }
            root = group_json(s, group);
            cJSON_AddStringToObject(root, "kind", "APIGroup");
            cJSON_AddStringToObject(root, "apiVersion", "v1");
            reply_cjson(req, 200, root);
            cJSON_Delete(root);
            return true;
        }
        const char *v = slash + 1, *vs = strchr(v, '/');
        size_t vlen = vs ? (size_t)(vs - v) : strlen(v);
        if (vlen == 0 || vlen >= sizeof(version) || (vs && vs[1] != '\0')) {
            return false;
        }
        memcpy(version, v, vlen);
        version[vlen] = '\0';
        if (!group_known(s, group, version)) {
            return false;
        }
        root = resource_list_json(s, group, version);
        reply_cjson(req, 200, root);
        cJSON_Delete(root);
        return true;
    }
    return false;
}

/* ---- /_sim endpoints ------------------------------------------------------------------- */

static void compact_to(struct sim *s, uint64_t rev)
{
    pthread_mutex_lock(&s->lock);
    if (rev > atomic_load(&s->revision)) {
        rev = atomic_load(&s->revision);
    }
    if (rev > atomic_load(&s->compacted)) {
        atomic_store(&s->compacted, rev);
        for (size_t i = 0; i < registry_len(s->reg); i++) {
            resource_compact(registry_at(s->reg, i)->res, rev);
        }
    }
    pthread_mutex_unlock(&s->lock);
}

/* A restarted kube-apiserver's watch cache: the history of each resource (all, or <only>)
 * starts again at the current revision, so watches below it get 410 too old, and its
 * watches end; the objects stay. Returns how many resources. */
static size_t reset_history(struct sim *s, const char *only)
{
    size_t n = 0;

    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < registry_len(s->reg); i++) {
        struct apires *ar = registry_at(s->reg, i);
        struct snapshot *snap;
        struct store_iter it;
        struct blob **items;
        size_t k = 0;
        char q[200];

        qualified(ar, q, sizeof(q));
        if (only && only[0] && strcmp(only, q) != 0) {
            continue;
        }
        snap = resource_snapshot(ar->res, NULL);
        items = xmalloc((snap->len + 1) * sizeof(*items));
        for (struct blob *b = snapshot_seek(snap, NULL, &it); b != NULL; b = snapshot_next(&it)) {
            items[k++] = b; /* lent by the snapshot; resource_replace takes its own */
        }
        resource_replace(ar->res, items, k, atomic_load(&s->revision), clock_mono_ms());
        free(items);
        snapshot_unref(snap);
        n++;
    }
    pthread_mutex_unlock(&s->lock);
    return n;
}

static uint64_t default_compaction_target(struct sim *s)
{
    uint64_t cur = atomic_load(&s->revision);
    uint64_t keep = (uint64_t)s->o.history_events;
    return cur > keep ? cur - keep : 0;
}

static void serve_sim(struct sim *s, struct http_req *req, const char *path)
{
    const char *method = http_req_method(req);

    if (strcmp(path, "/_sim/stats") == 0 && strcmp(method, "GET") == 0) {
        cJSON *root = cJSON_CreateObject(), *rs;
        uint64_t n_tr, n_sar;
        cJSON_AddNumberToObject(root, "revision", (double)atomic_load(&s->revision));
        cJSON_AddNumberToObject(root, "compacted", (double)atomic_load(&s->compacted));
        guard_stats(s->guard, &n_tr, &n_sar);
        cJSON_AddNumberToObject(root, "tokenreviews", (double)n_tr);
        cJSON_AddNumberToObject(root, "subjectaccessreviews", (double)n_sar);
        rs = cJSON_AddObjectToObject(root, "resources");
        for (size_t i = 0; i < registry_len(s->reg); i++) {
            struct apires *ar = registry_at(s->reg, i);
            struct resource_stats st;
            char q[200];
            cJSON *r = cJSON_CreateObject();
            qualified(ar, q, sizeof(q));
            resource_stats(ar->res, &st);
            cJSON_AddNumberToObject(r, "lists", (double)atomic_load(&ar->ctr.lists));
            cJSON_AddNumberToObject(r, "watches", (double)atomic_load(&ar->ctr.watches));
            cJSON_AddNumberToObject(r, "watches_open", (double)atomic_load(&ar->ctr.watches_open));
            cJSON_AddNumberToObject(r, "gets", (double)atomic_load(&ar->ctr.gets));
            cJSON_AddNumberToObject(r, "objects", (double)st.objects);
            cJSON_AddNumberToObject(r, "history", (double)st.history_len);
            cJSON_AddNumberToObject(r, "history_boundary", (double)st.history_boundary);
            cJSON_AddItemToObject(rs, q, r);
        }
        reply_cjson(req, 200, root);
        cJSON_Delete(root);
        return;
    }
    if (strcmp(path, "/_sim/compact") == 0 && strcmp(method, "POST") == 0) {
        const char *r = http_req_arg(req, "revision");
        uint64_t target = default_compaction_target(s);
        char body[128];
        if (r && r[0]) {
            if (rv_parse(r, &target) != 0) {
                reply_status(req, 400, "BadRequest", "revision must be an unsigned integer");
                return;
            }
        }
        compact_to(s, target);
        snprintf(body, sizeof(body), "{\"revision\":%" PRIu64 ",\"compacted\":%" PRIu64 "}\n",
                 atomic_load(&s->revision), atomic_load(&s->compacted));
        reply_json(req, 200, body);
        return;
    }
    if (strcmp(path, "/_sim/reset-history") == 0 && strcmp(method, "POST") == 0) {
        char body[64];
        snprintf(body, sizeof(body), "{\"resources\":%zu}\n",
                 reset_history(s, http_req_arg(req, "resource")));
        reply_json(req, 200, body);
        return;
    }
    if (strcmp(path, "/_sim/drop-watches") == 0 && strcmp(method, "POST") == 0) {
        const char *only = http_req_arg(req, "resource");
        size_t n = 0;
        char body[64];
        for (size_t i = 0; i < registry_len(s->reg); i++) {
            char q[200];
            qualified(registry_at(s->reg, i), q, sizeof(q));
            if (!only || !only[0] || strcmp(only, q) == 0) {
                resource_end_watches(registry_at(s->reg, i)->res);
                n++;
            }
        }
        snprintf(body, sizeof(body), "{\"resources\":%zu}\n", n);
        reply_json(req, 200, body);
        return;
    }
    reply_not_found_path(req);
}

/* ---- routing --------------------------------------------------------------------------- */

/* POST tokenreviews / subjectaccessreviews (create is their only verb). */
static void serve_review(struct sim *s, struct http_req *req, const char *path)
{
    const char *ct = http_req_header(req, "Content-Type");

    if (strcmp(http_req_method(req), "POST") != 0) {
        reply_route_error(req, 405, "MethodNotAllowed",
                          "the server does not allow this method on the requested resource");
        return;
    }
    if (ct && !ctype_is(ct, "application/json") && !ctype_is(ct, "*/*")) {
        reply_unsupported_body(req);
        return;
    }
    if (strcmp(path, REVIEW_TOKENREVIEW_PATH) == 0) {
        guard_serve_tokenreview(s->guard, req);
    } else {
        guard_serve_sar(s->guard, req);
    }
}

static void sim_handle(void *app, struct http_req *req)
{
    struct sim *s = app;
    const char *path = http_req_path(req);
    const char *method = http_req_method(req);
    struct k8s_path p;
    struct apires *ar;
    int rc;

    /* once per request (a LIST waiting for a fresh rv comes back with handlers' state); the
     * health endpoints stay open, as --token always left them */
    if (http_req_state(req) == NULL && strcmp(path, "/healthz") != 0 &&
        strcmp(path, "/livez") != 0 && strcmp(path, "/readyz") != 0 &&
        !guard_admit(s->guard, req)) {
        return;
    }
    if (strcmp(path, REVIEW_TOKENREVIEW_PATH) == 0 || strcmp(path, REVIEW_SAR_PATH) == 0) {
        serve_review(s, req, path);
        return;
    }
    if (strncmp(path, "/_sim/", 6) == 0) {
        serve_sim(s, req, path);
        return;
    }
    if (strcmp(path, DEBUGRES_PATH) == 0) {
        debugres_serve(req, s->reg, "sim");
        return;
    }
    rc = k8s_path_parse(path, &p);
    if (rc == -ENOENT) {
        if (strcmp(method, "GET") == 0 && serve_discovery(s, req, path)) {
            return;
        }
        http_reply(req, 404, "text/plain; charset=utf-8", "404 page not found\n", 19);
        return;
    }
    if (rc != 0) {
        reply_not_found_path(req);
        return;
    }
    ar = registry_find(s->reg, p.group, p.version, p.resource);
    if (!ar || (!ar->kind.namespaced && p.ns[0] && strcmp(p.resource, "namespaces") != 0) ||
        (p.subresource[0] && strcmp(p.subresource, "status") != 0)) {
        reply_not_found_path(req);
        return;
    }
    if (strcmp(method, "GET") == 0) {
        handlers_serve(req, ar, &p, &s->hopts);
    } else if (strcmp(method, "POST") == 0 && !p.name[0]) {
        sim_create(s, req, ar, &p);
    } else if (strcmp(method, "PUT") == 0 && p.name[0]) {
        sim_update(s, req, ar, &p, false);
    } else if (strcmp(method, "PATCH") == 0 && p.name[0]) {
        sim_update(s, req, ar, &p, true);
    } else if (strcmp(method, "DELETE") == 0 && p.name[0]) {
        sim_delete(s, req, ar, &p);
    } else {
        reply_route_error(req, 405, "MethodNotAllowed",
                          "the server does not allow this method on the requested resource");
    }
}

/* ---- seeding and churn ----------------------------------------------------------------- */

static void seed_one(struct sim *s, const char *plural, const char *ns, const char *name)
{
    struct apires *ar = NULL;
    struct kstatus st;
    struct blob *b = NULL;
    cJSON *obj;

    for (size_t i = 0; i < registry_len(s->reg); i++) {
        struct apires *cand = registry_at(s->reg, i);
        if (strcmp(cand->kind.plural, plural) == 0 && cand->kind.builtin) {
            ar = cand;
        }
    }
    if (!ar) {
        return;
    }
    pthread_mutex_lock(&s->lock);
    unsigned seed = (unsigned)sim_rand(s);
    pthread_mutex_unlock(&s->lock);
    obj = gen_object_new(plural, ns, name, seed);
    if (!obj) {
        return;
    }
    pad(s, obj);
    if (do_create(s, ar, ns, obj, &b, &st) == 0) {
        blob_unref(b);
    } else {
        log_warn("sim", "resource=%s ns=%s name=%s code=%d msg=\"seed write failed: %s\"", plural,
                 ns ? ns : "", name, st.code, st.message);
    }
    cJSON_Delete(obj);
}

static void seed(struct sim *s)
{
    char name[64], ns[64];
    int64_t nns = s->o.namespaces > 0 ? s->o.namespaces : 1;
    int64_t nodes = s->o.objects / 10 + 1;

    seed_one(s, "namespaces", NULL, "default");
    seed_one(s, "namespaces", NULL, "kube-system");
    for (int64_t i = 1; i < nns; i++) {
        snprintf(name, sizeof(name), "ns-%" PRId64, i);
        seed_one(s, "namespaces", NULL, name);
    }
    for (int64_t i = 0; i < nodes && i < 1000; i++) {
        snprintf(name, sizeof(name), "node-%" PRId64, i);
        seed_one(s, "nodes", NULL, name);
    }
    seed_one(s, "configmaps", "default", "kube-root-ca.crt");
    seed_one(s, "services", "default", "kubernetes");
    for (int64_t i = 0; i < s->o.objects; i++) {
        if (i % nns == 0) {
            snprintf(ns, sizeof(ns), "default");
        } else {
            snprintf(ns, sizeof(ns), "ns-%" PRId64, i % nns);
        }
        snprintf(name, sizeof(name), "pod-%06" PRId64, i);
        seed_one(s, "pods", ns, name);
    }
}

/* One churn write on pods: update 60 %, create 20 %, delete 20 % (creates refill deletes so the
 * population stays near --objects). */
static void churn_once(struct sim *s, uint64_t *next_id)
{
    struct apires *pods = registry_find(s->reg, "", "v1", "pods");
    struct snapshot *snap;
    uint64_t rv, r;
    unsigned seed;
    size_t count;

    if (!pods) {
        return;
    }
    pthread_mutex_lock(&s->lock);
    r = sim_rand(s) % 100;
    seed = (unsigned)sim_rand(s);
    pthread_mutex_unlock(&s->lock);
    snap = resource_snapshot(pods->res, &rv);
    count = snap->len;
    if (count == 0 || r < 20 || (r < 40 && (int64_t)count < s->o.objects)) {
        char name[64], ns[64];
        int64_t nns = s->o.namespaces > 0 ? s->o.namespaces : 1;
        uint64_t id = (*next_id)++;
        if ((int64_t)(id % (uint64_t)nns) == 0) {
            snprintf(ns, sizeof(ns), "default");
        } else {
            snprintf(ns, sizeof(ns), "ns-%" PRIu64, id % (uint64_t)nns);
        }
        snprintf(name, sizeof(name), "churn-%08" PRIu64, id);
        snapshot_unref(snap);
        seed_one(s, "pods", ns, name);
        return;
    }
    struct blob *victim = blob_ref(snapshot_at(snap, seed % count)); /* O(log n) */
    snapshot_unref(snap);
    if (r < 40) {
        struct blob *old = do_delete(s, pods, victim->key);
        blob_unref(old);
    } else {
        cJSON *obj = from_blob(pods, victim);
        pthread_mutex_lock(&s->lock);
        struct blob *cur = resource_get(pods->res, victim->key);
        cJSON *old = cur ? from_blob(pods, cur) : NULL;
        if (cur && obj && old) {
            uint64_t rev = atomic_load(&s->revision) + 1;
            char err[256];
            gen_mutate(obj, seed);
            if (objects_prepare_update(obj, old, "pods", NULL, NULL, rev, err, sizeof(err)) == 0) {
                stamp(s, obj);
                struct blob *b = to_blob(pods, obj);
                if (b) {
                    (void)apply_write(s, pods, WATCH_MODIFIED, b, rev);
                }
            }
        }
        pthread_mutex_unlock(&s->lock);
        blob_unref(cur);
        cJSON_Delete(old);
        cJSON_Delete(obj);
    }
    blob_unref(victim);
}

/* Nanoseconds on CLOCK_MONOTONIC. */
static int64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#define CHURN_MAX_SLEEP_NS (50 * 1000000L) /* the stop flag is seen within this */

/*
 * --churn R: write number k is due at start + k/R s. The thread sleeps until the next one is
 * due (an absolute deadline, at most CHURN_MAX_SLEEP_NS): it wakes R times a second, not on
 * a fixed tick that would wake it (and preempt whatever shares its core) more often than it
 * writes.
 */
static void *churn_main(void *arg)
{
    struct sim *s = arg;
    uint64_t next_id = 0;
    const int64_t start = mono_ns();
    const int64_t rate = s->o.churn;
    uint64_t done = 0;

    while (!atomic_load(&s->stop)) {
        int64_t now = mono_ns();
        uint64_t due = (uint64_t)((now - start) / 1000 * rate / 1000000);
        if (done < due) {
            /* catch up at most one second's worth at once */
            uint64_t burst = due - done;
            if (burst > (uint64_t)rate) {
                done = due - (uint64_t)rate;
                burst = (uint64_t)rate;
            }
            for (uint64_t i = 0; i < burst && !atomic_load(&s->stop); i++) {
                churn_once(s, &next_id);
                done++;
            }
            continue;
        }
        /* the first microsecond at which due exceeds done: start + (done + 1) / R s */
        uint64_t us = ((done + 1) * 1000000 + (uint64_t)rate - 1) / (uint64_t)rate;
        int64_t at = start + (int64_t)us * 1000;
        if (at - now > CHURN_MAX_SLEEP_NS) {
            at = now + CHURN_MAX_SLEEP_NS;
        }
        struct timespec ts = {(time_t)(at / 1000000000), (long)(at % 1000000000)};
        (void)clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
    return NULL;
}

/* The registry's tick hook: periodic compaction (--compaction-interval). Tick thread. */
static void sim_tick(void *ctx, int64_t now)
{
    struct sim *s = ctx;

    if (s->next_compact_ms && now >= s->next_compact_ms) {
        compact_to(s, default_compaction_target(s));
        s->next_compact_ms = now + s->o.compaction_interval_ms;
    }
}

/* ---- lifecycle ------------------------------------------------------------------------- */

void sim_opts_defaults(struct sim_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->listen = "127.0.0.1:0";
    o->objects = 50;
    o->namespaces = 3;
    o->seed = 1;
    o->compaction_interval_ms = 5 * 60 * 1000;
    o->history_events = 10000;
    o->bookmark_interval_ms = 60000;
    o->watch_max_lag_ms = HANDLERS_MAX_LAG_DEFAULT_MS;
    o->threads = 1;
    o->watch_direct = true;
    o->max_body = HTTP_DEFAULT_MAX_BODY;
}

static int add_resource(struct sim *s, const char *spec, char *err, size_t err_len)
{
    struct apires_kind k;
    struct apires *ar;
    char *owned = NULL;
    /* etcd keeps every revision until compaction: the ring only grows (to a hard cap) and
     * compaction trims it */
    struct ring_opts ro = {.min_cap = 1024, .max_cap = SIM_HISTORY_CAP, .fresh_ms = 0};

    if (apires_parse_spec(spec, &k, &owned) != 0) {
        snprintf(err, err_len,
                 "invalid --resource %s: want group/version/plural[:namespaced|:cluster[:Kind]]",
                 spec);
        return -EINVAL;
    }
    if (registry_find(s->reg, k.group, k.version, k.plural)) {
        free(owned);
        return 0;
    }
    ar = apires_new(&k, owned, &ro);
    if (registry_add(s->reg, ar) != 0) {
        apires_free(ar); /* cannot happen: the registry is sized for every spec */
    }
    return 0;
}

struct sim *sim_start(const struct sim_opts *o, char *err, size_t err_len)
{
    /* every kind of proxy/apires.c's built-in table */
    static const char *const builtins[] = {"v1/namespaces",
                                           "v1/nodes",
                                           "v1/pods",
                                           "v1/configmaps",
                                           "v1/secrets",
                                           "v1/services",
                                           "v1/events",
                                           "v1/serviceaccounts",
                                           "v1/replicationcontrollers",
                                           "batch/v1/jobs",
                                           "certificates.k8s.io/v1/certificatesigningrequests",
                                           "apps/v1/deployments",
                                           "apps/v1/replicasets",
                                           "apps/v1/daemonsets",
                                           "policy/v1/poddisruptionbudgets",
                                           "rbac.authorization.k8s.io/v1/clusterroles",
                                           "rbac.authorization.k8s.io/v1/clusterrolebindings",
                                           "rbac.authorization.k8s.io/v1/roles",
                                           "rbac.authorization.k8s.io/v1/rolebindings"};
    struct sim *s = xcalloc(1, sizeof(*s));
    struct http_server_opts hso = {0};

    s->o = *o;
    s->rng = (uint64_t)o->seed * 0x9E3779B97F4A7C15ull + 1;
    pthread_mutex_init(&s->lock, NULL);
    s->reg = registry_new(sizeof(builtins) / sizeof(builtins[0]) + o->resources.len);
    for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++) {
        (void)add_resource(s, builtins[i], err, err_len);
    }
    for (size_t i = 0; i < o->resources.len; i++) {
        if (add_resource(s, o->resources.items[i], err, err_len) != 0) {
            sim_stop(s);
            return NULL;
        }
    }
    /* every resource starts synced at revision 1, like a freshly listed cache */
    atomic_store(&s->revision, 1);
    for (size_t i = 0; i < registry_len(s->reg); i++) {
        resource_replace(registry_at(s->reg, i)->res, NULL, 0, 1, clock_mono_ms());
    }
    s->hopts.authoritative = true;
    s->hopts.bookmark_interval_ms = o->bookmark_interval_ms;
    s->hopts.watch_max_lag_ms = o->watch_max_lag_ms;
    s->hopts.local_too_large = true;
    seed(s);
    {
        struct guard_opts go = {o->token, o->token_auth_file, o->client_ca_file != NULL,
                                o->authorization_rules, o->anonymous_auth};
        s->guard = guard_new(&go, err, err_len);
        if (!s->guard) {
            sim_stop(s);
            return NULL;
        }
    }
    hso.listen = o->listen;
    hso.threads = (unsigned)o->threads;
    hso.stream_writers = o->watch_direct;
    hso.max_body = (size_t)o->max_body;
    hso.tls_cert_file = o->tls_cert_file;
    hso.tls_key_file = o->tls_key_file;
    hso.client_ca_file = o->client_ca_file;
    s->srv = http_server_start(&hso, sim_handle, s, err, err_len);
    if (!s->srv) {
        sim_stop(s);
        return NULL;
    }
    if (o->compaction_interval_ms > 0) {
        s->next_compact_ms = clock_mono_ms() + o->compaction_interval_ms;
    }
    if (registry_tick_start(s->reg, sim_tick, s) != 0) {
        snprintf(err, err_len, "cannot start the tick thread");
        sim_stop(s);
        return NULL;
    }
    if (o->churn > 0) {
        if (pthread_create(&s->churn, NULL, churn_main, s) == 0) {
            s->churn_started = true;
        }
    }
    s->created_ms = clock_mono_ms();
    return s;
}

const char *sim_url(const struct sim *s)
{
    return http_server_url(s->srv);
}

void sim_stop(struct sim *s)
{
    if (!s) {
        return;
    }
    atomic_store(&s->stop, true);
    if (s->churn_started) {
        pthread_join(s->churn, NULL);
    }
    if (s->srv) {
        http_server_quiesce(s->srv);
        registry_tick_stop(s->reg);
        for (size_t i = 0; i < registry_len(s->reg); i++) {
            resource_close_all(registry_at(s->reg, i)->res);
        }
        /* let woken watches finish their last chunk (bounded) */
        for (int i = 0; i < 200 && http_server_active(s->srv) > 0; i++) {
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
        http_server_stop(s->srv);
    }
    guard_free(s->guard);
    registry_free(s->reg);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

int sim_main(int argc, char **argv)
{
    struct sim_opts o;
    struct sim *s;
    char err[512];
    sigset_t set;
    int sig = 0, rc;

    sim_opts_defaults(&o);
    const struct config_opt opts[] = {
        {"listen", CFG_STR, &o.listen, 0, 0,
         "address to serve on, HOST:PORT (port 0 = any free port)"},
        {"objects", CFG_INT, &o.objects, 0, 10000000, "seed pods (default 50)"},
        {"namespaces", CFG_INT, &o.namespaces, 1, 100000,
         "seed namespaces: default, ns-1, ... (default 3)"},
        {"churn", CFG_INT, &o.churn, 0, 1000000,
         "pod writes per second: 60% update, 20% create, 20% delete (default 0)"},
        {"seed", CFG_INT, &o.seed, 0, INT64_MAX, "random seed for generated objects (default 1)"},
        {"compaction-interval", CFG_DURATION, &o.compaction_interval_ms, 0, 0,
         "compact history this often, 0 = never (default 5m)"},
        {"history-events", CFG_INT, &o.history_events, 1, 100000000,
         "revisions kept by compaction and per-resource history (default 10000)"},
        {"bookmark-interval", CFG_DURATION, &o.bookmark_interval_ms, 0, 0,
         "BOOKMARK period for allowWatchBookmarks watches (default 60s)"},
        {"watch-max-lag", CFG_DURATION, &o.watch_max_lag_ms, 0, 3600000,
         "end a watch whose next event has waited this long; 0 = only when it leaves the history "
         "(default 10s)"},
        {"resource", CFG_LIST, &o.resources, 0, 0,
         "serve one more resource group/version/plural[:namespaced|:cluster[:Kind]] (repeatable)"},
        {"stamp", CFG_BOOL, &o.stamp, 0, 0,
         "annotate every change with kwp.io/stamp-ns (wall clock ns) for kwp load"},
        {"object-bytes", CFG_SIZE, &o.object_bytes, 0, 16 * 1024 * 1024,
         "pad generated objects to about this size with a kwp.io/pad annotation (default: no "
         "padding, pods ~1.1 KB)"},
        {"threads", CFG_INT, &o.threads, 1, 64, "HTTP worker threads (default 1)"},
        {"watch-direct-write", CFG_BOOL, &o.watch_direct, 0, 0,
         "plain-HTTP watches are written by watch writer threads straight from the shared "
         "frames (default true; false: through libmicrohttpd's buffers)"},
        {"max-body", CFG_SIZE, &o.max_body, 1, INT64_MAX,
         "largest request body accepted (default 3Mi)"},
        {"token", CFG_STR, &o.token, 0, 0,
         "require Authorization: Bearer TOKEN (401 Unauthorized otherwise)"},
        {"tls-cert-file", CFG_STR, &o.tls_cert_file, 0, 0,
         "serve https with this PEM certificate (with --tls-key-file)"},
        {"tls-key-file", CFG_STR, &o.tls_key_file, 0, 0, "PEM private key for --tls-cert-file"},
        {"token-auth-file", CFG_STR, &o.token_auth_file, 0, 0,
         "static token users, one CSV record each: token,user,uid[,\"group1,group2\"] "
         "(kube-apiserver's format)"},
        {"client-ca-file", CFG_STR, &o.client_ca_file, 0, 0,
         "ask https clients for a certificate and verify it against this PEM CA: user = CN, groups "
         "= every O"},
        {"authorization-rules", CFG_STR, &o.authorization_rules, 0, 0,
         "authorize every request with this RBAC-like rule file (README: kwp sim); without it "
         "everything is allowed"},
        {"anonymous-auth", CFG_BOOL, &o.anonymous_auth, 0, 0,
         "with authentication on, serve unauthenticated requests as system:anonymous (401 "
         "otherwise)"},
    };

    rc = config_parse(
        opts, sizeof(opts) / sizeof(opts[0]), argc, argv, "kwp sim [flags]",
        "A simulated kube-apiserver: global revisions, compaction, churn, LIST/WATCH/GET\n"
        "with kube-apiserver semantics, writes, discovery, /_sim/stats and /_sim/compact.\n"
        "Serves the built-in kinds v1 namespaces, nodes, pods, configmaps, secrets,\n"
        "services, events, serviceaccounts, replicationcontrollers, batch/v1 jobs,\n"
        "certificates.k8s.io/v1 certificatesigningrequests, apps/v1 deployments and\n"
        "replicasets, plus each --resource.");
    if (rc != 0) {
        config_list_free(&o.resources);
        return rc > 0 ? 0 : 2;
    }
    /* signals are taken by sigwait in this thread only */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    s = sim_start(&o, err, sizeof(err));
    if (!s) {
        fprintf(stderr, "kwp sim: %s\n", err);
        config_list_free(&o.resources);
        return 1;
    }
    printf("listening on %s\n", sim_url(s));
    fflush(stdout);
    log_info("sim", "url=%s objects=%lld churn=%lld msg=\"simulator ready\"", sim_url(s),
             (long long)o.objects, (long long)o.churn);
    sigwait(&set, &sig);
    log_info("sim", "signal=%d msg=\"shutting down\"", sig);
    sim_stop(s);
    config_list_free(&o.resources);
    return 0;
}
