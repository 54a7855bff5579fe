/*
 * gen.c - deterministic generators of realistic objects (seeding a simulated cluster) and the
 * churn updates applied to them (see gen.h).
 *
 * Generators draw from a splitmix64 stream seeded by (seed, resource, namespace, name), so a
 * seed reproduces a whole simulated cluster; every integer they write is small (cJSON prints
 * numbers through double). They build objects as a client would send them: the write rules
 * (objects.c) and defaults (defaults.c) run on them afterwards. This file may include
 * sim/objects.h (the kinds table), sim/proto.h (base64) and sim/tree.h, nothing of the
 * server. Pure functions: any thread, no locks.
 */
#include "sim/gen.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "proxy/apires.h"
#include "sim/objects.h"
#include "sim/proto.h"
#include "sim/tree.h"

/* splitmix64: tiny, fast, and every seed gives a full-period stream. */
struct rng {
    uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
    r->s += 0x9e3779b97f4a7c15ULL;
    return tree_mix64(r->s);
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

static const char *const apps[] = {"web",    "api",     "cache",    "worker", "auth",
                                   "search", "billing", "frontend", "ingest", "metrics"};
static const char *const tiers[] = {"frontend", "backend", "data"};
static const char *const images[] = {"registry.k8s.io/nginx-slim:0.27",
                                     "docker.io/library/redis:7.2.4",
                                     "quay.io/prometheus/node-exporter:v1.8.1",
                                     "ghcr.io/example/app:v2.14.3", "registry.k8s.io/pause:3.10"};
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
    cJSON *obj = tree_must(cJSON_CreateObject());

    tree_add_str(obj, "kind", kind);
    if (api_version != NULL) {
        tree_add_str(obj, "apiVersion", api_version);
    }
    *meta = tree_add_obj(obj, "metadata");
    tree_add_str(*meta, "name", name);
    if (ns != NULL && ns[0] != '\0') {
        tree_add_str(*meta, "namespace", ns);
    }
    return obj;
}

static void add_container(struct rng *r, cJSON *containers, const char *app, bool full)
{
    cJSON *c = tree_push_obj(containers);
    cJSON *port;
    cJSON *res;
    cJSON *req;

    tree_add_str(c, "name", app);
    tree_add_str(c, "image", PICK(r, images));
    port = tree_push_obj(tree_add_arr(c, "ports"));
    tree_add_str(port, "name", "http");
    tree_add_num(port, "containerPort", 8080);
    tree_add_str(port, "protocol", "TCP");
    res = tree_add_obj(c, "resources");
    req = tree_add_obj(res, "requests");
    tree_add_str(req, "cpu", rng_below(r, 2) ? "100m" : "250m");
    tree_add_str(req, "memory", rng_below(r, 2) ? "128Mi" : "256Mi");
    tree_add_str(tree_add_obj(res, "limits"), "memory", "512Mi");
    if (full) {
        /* what defaulting adds in a stored pod (the template keeps what a client sent) */
        tree_add_str(c, "imagePullPolicy", "IfNotPresent");
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
    cJSON *labels = tree_add_obj(meta, "labels");
    cJSON *spec = tree_add_obj(obj, "spec");
    cJSON *status;
    cJSON *cond;
    cJSON *cs;

    rng_hex(r, hash, 10);
    tree_add_str(labels, "app", app);
    tree_add_str(labels, "pod-template-hash", hash);
    tree_add_str(labels, "tier", PICK(r, tiers));

    add_container(r, tree_add_arr(spec, "containers"), app, true);
    tree_add_str(spec, "restartPolicy", "Always");
    tree_add_num(spec, "terminationGracePeriodSeconds", 30);
    tree_add_str(spec, "dnsPolicy", "ClusterFirst");
    tree_add_str(spec, "serviceAccountName", "default");
    snprintf(node, sizeof(node), "node-%02u", rng_below(r, 50));
    tree_add_str(spec, "nodeName", node);
    tree_add_str(spec, "schedulerName", "default-scheduler");
    tree_add_num(spec, "priority", 0);

    status = tree_add_obj(obj, "status");
    tree_add_str(status, "phase", rng_below(r, 10) == 0 ? "Pending" : "Running");
    cond = tree_push_obj(tree_add_arr(status, "conditions"));
    tree_add_str(cond, "type", "Ready");
    tree_add_str(cond, "status", "True");
    fake_time(buf, sizeof(buf), rng_below(r, 86400));
    tree_add_str(cond, "lastTransitionTime", buf);
    snprintf(ip, sizeof(ip), "10.0.%u.%u", rng_below(r, 50), 1 + rng_below(r, 254));
    tree_add_str(status, "hostIP", ip);
    snprintf(ip, sizeof(ip), "10.244.%u.%u", rng_below(r, 50), 2 + rng_below(r, 250));
    tree_add_str(status, "podIP", ip);
    tree_add_str(status, "startTime", buf);
    cs = tree_push_obj(tree_add_arr(status, "containerStatuses"));
    tree_add_str(cs, "name", app);
    tree_add_str(tree_add_obj(tree_add_obj(cs, "state"), "running"), "startedAt", buf);
    cJSON_AddItemToObject(cs, "ready", tree_must(cJSON_CreateTrue()));
    tree_add_num(cs, "restartCount", 0);
    {
        /* image and imageID are always set by the kubelet; typed clients require them */
        const cJSON *c0 =
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
                                   cJSON_GetObjectItemCaseSensitive(obj, "spec"), "containers"),
                               0);
        const cJSON *img = cJSON_GetObjectItemCaseSensitive(c0, "image");
        char id[160];
        rng_hex(r, hash, 10);
        tree_add_str(cs, "image",
                     cJSON_IsString(img) ? img->valuestring : "registry.k8s.io/pause:3.10");
        snprintf(id, sizeof(id), "%s@sha256:%s%s%s%s%s%s",
                 cJSON_IsString(img) ? img->valuestring : "pause", hash, hash, hash, hash, hash,
                 hash);
        tree_add_str(cs, "imageID", id);
    }
    rng_hex(r, hash, 10);
    snprintf(buf, sizeof(buf), "containerd://%s", hash);
    tree_add_str(cs, "containerID", buf);
    tree_add_str(status, "qosClass", "Burstable");
    return obj;
}

static cJSON *gen_configmap(struct rng *r, const char *ns, const char *name)
{
    cJSON *meta;
    cJSON *obj = new_object("ConfigMap", "v1", ns, name, &meta);
    cJSON *data;
    char buf[96];

    tree_add_str(tree_add_obj(meta, "labels"), "app", app_for(r, name));
    data = tree_add_obj(obj, "data");
    tree_add_str(data, "LOG_LEVEL", rng_below(r, 4) == 0 ? "debug" : "info");
    snprintf(buf, sizeof(buf), "listen=:8080\nworkers=%u\ncache.ttl=%us\n", 1 + rng_below(r, 16),
             30 * (1 + rng_below(r, 10)));
    tree_add_str(data, "app.properties", buf);
    return obj;
}

static cJSON *gen_secret(struct rng *r, const char *ns, const char *name)
{
    cJSON *meta;
    cJSON *obj = new_object("Secret", "v1", ns, name, &meta);
    cJSON *data;
    char pw[25];
    char *b64;

    tree_add_str(tree_add_obj(meta, "labels"), "app", app_for(r, name));
    data = tree_add_obj(obj, "data");
    tree_add_str(data, "username", "YWRtaW4="); /* "admin" */
    rng_hex(r, pw, 24);
    b64 = proto_base64_new(pw, strlen(pw));
    tree_add_str(data, "password", b64);
    free(b64);
    tree_add_str(obj, "type", "Opaque");
    return obj;
}

/* default/kubernetes as kube-apiserver keeps it: the first address of the service range, https
 * to the apiserver's port, no selector (its endpoints are written by the apiserver). */
static cJSON *gen_kubernetes_service(const char *ns)
{
    cJSON *meta;
    cJSON *obj = new_object("Service", "v1", ns, "kubernetes", &meta);
    cJSON *labels = tree_add_obj(meta, "labels");
    cJSON *spec = tree_add_obj(obj, "spec");
    cJSON *port = tree_push_obj(tree_add_arr(spec, "ports"));

    tree_add_str(labels, "component", "apiserver");
    tree_add_str(labels, "provider", "kubernetes");
    tree_add_str(port, "name", "https");
    tree_add_str(port, "protocol", "TCP");
    tree_add_num(port, "port", 443);
    tree_add_num(port, "targetPort", 6443);
    tree_add_str(spec, "clusterIP", "10.96.0.1");
    tree_add_str(spec, "type", "ClusterIP");
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
    spec = tree_add_obj(obj, "spec");
    port = tree_push_obj(tree_add_arr(spec, "ports"));

    tree_add_str(tree_add_obj(meta, "labels"), "app", app);
    tree_add_str(port, "name", "http");
    tree_add_str(port, "protocol", "TCP");
    tree_add_num(port, "port", 80);
    tree_add_num(port, "targetPort", 8080);
    tree_add_str(tree_add_obj(spec, "selector"), "app", app);
    snprintf(ip, sizeof(ip), "10.96.%u.%u", rng_below(r, 256), 1 + rng_below(r, 254));
    tree_add_str(spec, "clusterIP", ip);
    cJSON_AddItemToArray(tree_add_arr(spec, "clusterIPs"), tree_must(cJSON_CreateString(ip)));
    tree_add_str(spec, "type", "ClusterIP");
    tree_add_str(spec, "sessionAffinity", "None");
    tree_add_obj(tree_add_obj(obj, "status"), "loadBalancer");
    return obj;
}

static cJSON *gen_node(struct rng *r, const char *name)
{
    cJSON *meta;
    cJSON *obj = new_object("Node", "v1", NULL, name, &meta);
    cJSON *labels = tree_add_obj(meta, "labels");
    cJSON *spec = tree_add_obj(obj, "spec");
    cJSON *status = tree_add_obj(obj, "status");
    cJSON *cap = tree_add_obj(status, "capacity");
    cJSON *cond;
    cJSON *addrs;
    cJSON *a;
    unsigned idx = rng_below(r, 250);
    char buf[64];

    tree_add_str(labels, "kubernetes.io/hostname", name);
    tree_add_str(labels, "kubernetes.io/os", "linux");
    tree_add_str(labels, "kubernetes.io/arch", "amd64");
    tree_add_str(labels, "node.kubernetes.io/instance-type",
                 rng_below(r, 2) ? "m5.large" : "m5.xlarge");
    snprintf(buf, sizeof(buf), "10.244.%u.0/24", idx);
    tree_add_str(spec, "podCIDR", buf);
    tree_add_str(cap, "cpu", "4");
    tree_add_str(cap, "memory", "16374584Ki");
    tree_add_str(cap, "pods", "110");
    cond = tree_push_obj(tree_add_arr(status, "conditions"));
    tree_add_str(cond, "type", "Ready");
    tree_add_str(cond, "status", "True");
    fake_time(buf, sizeof(buf), rng_below(r, 86400));
    tree_add_str(cond, "lastHeartbeatTime", buf);
    tree_add_str(cond, "reason", "KubeletReady");
    tree_add_str(cond, "message", "kubelet is posting ready status");
    addrs = tree_add_arr(status, "addresses");
    a = tree_push_obj(addrs);
    tree_add_str(a, "type", "InternalIP");
    snprintf(buf, sizeof(buf), "10.0.%u.%u", idx / 5, 1 + rng_below(r, 254));
    tree_add_str(a, "address", buf);
    a = tree_push_obj(addrs);
    tree_add_str(a, "type", "Hostname");
    tree_add_str(a, "address", name);
    a = tree_add_obj(status, "nodeInfo");
    tree_add_str(a, "kubeletVersion", "v1.32.4");
    tree_add_str(a, "containerRuntimeVersion", "containerd://1.7.24");
    tree_add_str(a, "osImage", "Debian GNU/Linux 12 (bookworm)");
    return obj;
}

static cJSON *gen_namespace(const char *name)
{
    cJSON *meta;
    cJSON *obj = new_object("Namespace", "v1", NULL, name, &meta);

    tree_add_str(tree_add_obj(meta, "labels"), "kubernetes.io/metadata.name", name);
    cJSON_AddItemToArray(tree_add_arr(tree_add_obj(obj, "spec"), "finalizers"),
                         tree_must(cJSON_CreateString("kubernetes")));
    tree_add_str(tree_add_obj(obj, "status"), "phase", "Active");
    return obj;
}

static cJSON *gen_event(struct rng *r, const char *ns, const char *name)
{
    const char *app = app_for(r, name);
    const char *reason = PICK(r, reasons);
    cJSON *meta;
    cJSON *obj = new_object("Event", "v1", ns, name, &meta);
    cJSON *io = tree_add_obj(obj, "involvedObject");
    cJSON *src;
    char suffix[6];
    char node[32];
    char buf[128];

    tree_add_str(io, "kind", "Pod");
    tree_add_str(io, "namespace", ns != NULL ? ns : "default");
    rng_hex(r, suffix, 5);
    snprintf(node, sizeof(node), "%s-%s", app, suffix);
    tree_add_str(io, "name", node);
    tree_add_str(io, "apiVersion", "v1");
    snprintf(buf, sizeof(buf), "spec.containers{%s}", app);
    tree_add_str(io, "fieldPath", buf);
    tree_add_str(obj, "reason", reason);
    snprintf(buf, sizeof(buf), "%s container %s", reason, app);
    tree_add_str(obj, "message", buf);
    src = tree_add_obj(obj, "source");
    tree_add_str(src, "component", "kubelet");
    snprintf(node, sizeof(node), "node-%02u", rng_below(r, 50));
    tree_add_str(src, "host", node);
    fake_time(buf, sizeof(buf), rng_below(r, 86400));
    tree_add_str(obj, "firstTimestamp", buf);
    tree_add_str(obj, "lastTimestamp", buf);
    tree_add_num(obj, "count", 1);
    tree_add_str(obj, "type", strcmp(reason, "Killing") == 0 ? "Warning" : "Normal");
    tree_add_str(obj, "reportingComponent", "kubelet");
    tree_add_str(obj, "reportingInstance", node);
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
    cJSON *labels = tree_add_obj(meta, "labels");
    cJSON *spec = tree_add_obj(obj, "spec");
    cJSON *match;
    cJSON *tmpl;
    cJSON *tlabels;
    cJSON *status;
    char hash[11];

    tree_add_num(spec, "replicas", replicas);
    match = tree_add_obj(tree_add_obj(spec, "selector"), "matchLabels");
    tmpl = tree_add_obj(spec, "template");
    tlabels = tree_add_obj(tree_add_obj(tmpl, "metadata"), "labels");

    rng_hex(r, hash, 10);
    tree_add_str(labels, "app", app);
    tree_add_str(match, "app", app);
    tree_add_str(tlabels, "app", app);
    if (rs) {
        tree_add_str(labels, "pod-template-hash", hash);
        tree_add_str(match, "pod-template-hash", hash);
        tree_add_str(tlabels, "pod-template-hash", hash);
    }
    add_container(r, tree_add_arr(tree_add_obj(tmpl, "spec"), "containers"), app, false);
    if (!rs) {
        cJSON *strategy = tree_add_obj(spec, "strategy");
        cJSON *ru;
        tree_add_str(strategy, "type", "RollingUpdate");
        ru = tree_add_obj(strategy, "rollingUpdate");
        tree_add_str(ru, "maxUnavailable", "25%");
        tree_add_str(ru, "maxSurge", "25%");
        tree_add_num(spec, "revisionHistoryLimit", 10);
        tree_add_num(spec, "progressDeadlineSeconds", 600);
    }
    status = tree_add_obj(obj, "status");
    tree_add_num(status, "observedGeneration", 1);
    tree_add_num(status, "replicas", replicas);
    if (!rs) {
        tree_add_num(status, "updatedReplicas", replicas);
    } else {
        tree_add_num(status, "fullyLabeledReplicas", replicas);
    }
    tree_add_num(status, "readyReplicas", replicas);
    tree_add_num(status, "availableReplicas", replicas);
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
    tree_add_str(tree_add_obj(meta, "labels"), "app", app_for(r, name));
    spec = tree_add_obj(obj, "spec");
    tree_add_num(spec, "replicas", 1 + rng_below(r, 3));
    tree_add_str(spec, "message", "generated by kwp sim");
    tree_add_num(tree_add_obj(obj, "status"), "observedGeneration", 1);
    return obj;
}

cJSON *gen_object_new(const char *resource, const char *ns, const char *name, unsigned seed)
{
    struct rng r;
    const struct apires_kind *t = objects_type(resource);

    r.s = tree_hash_str(tree_hash_str(tree_hash_str(TREE_HASH_INIT ^ seed, resource), ns), name);
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

int gen_mutate(cJSON *obj, unsigned seed)
{
    const char *kind = tree_str(obj, "kind");
    cJSON *meta;
    cJSON *status;
    cJSON *item;
    char buf[64];

    if (!cJSON_IsObject(obj)) {
        return -EINVAL;
    }
    meta = tree_child_obj(obj, "metadata");
    if (seed & 1) {
        snprintf(buf, sizeof(buf), "b%u", seed % 4);
        tree_set_str(tree_child_obj(meta, "labels"), "churn", buf);
    } else {
        snprintf(buf, sizeof(buf), "%u", seed);
        tree_set_str(tree_child_obj(meta, "annotations"), "kwp.io/churn", buf);
    }

    if (strcmp(kind, "ConfigMap") == 0 || strcmp(kind, "Secret") == 0) {
        snprintf(buf, sizeof(buf), "%u", seed);
        if (kind[0] == 'S') {
            char *b64 = proto_base64_new(buf, strlen(buf));
            tree_set_str(tree_child_obj(obj, "data"), "rev", b64);
            free(b64);
        } else {
            tree_set_str(tree_child_obj(obj, "data"), "rev", buf);
        }
        return 0;
    }
    if (strcmp(kind, "Event") == 0) {
        item = cJSON_GetObjectItemCaseSensitive(obj, "count");
        tree_set_num(obj, "count", (cJSON_IsNumber(item) ? item->valuedouble : 0) + 1);
        fake_time(buf, sizeof(buf), seed);
        tree_set_str(obj, "lastTimestamp", buf);
        return 0;
    }

    status = cJSON_GetObjectItemCaseSensitive(obj, "status");
    if (!cJSON_IsObject(status)) {
        status = strcmp(kind, "Namespace") == 0 || strcmp(kind, "Service") == 0
                     ? NULL
                     : tree_child_obj(obj, "status");
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
            tree_set_num(cs, "restartCount", (cJSON_IsNumber(item) ? item->valuedouble : 0) + 1);
            tree_set(cs, "ready", tree_must(cJSON_CreateBool(ready)));
        }
        if (cond != NULL) {
            tree_set_str(cond, "status", ready ? "True" : "False");
            fake_time(buf, sizeof(buf), seed);
            tree_set_str(cond, "lastTransitionTime", buf);
        }
    } else if (strcmp(kind, "Deployment") == 0 || strcmp(kind, "ReplicaSet") == 0) {
        const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
        const cJSON *rep = cJSON_GetObjectItemCaseSensitive(spec, "replicas");
        unsigned replicas = cJSON_IsNumber(rep) && rep->valueint > 0 ? (unsigned)rep->valueint : 1;
        unsigned ready = seed % (replicas + 1);
        tree_set_num(status, "readyReplicas", ready);
        tree_set_num(status, "availableReplicas", ready);
    } else if (strcmp(kind, "Node") == 0) {
        cJSON *cond = first_obj(status, "conditions");
        fake_time(buf, sizeof(buf), seed);
        if (cond != NULL) {
            tree_set_str(cond, "lastHeartbeatTime", buf);
        } else {
            tree_set_str(status, "churn", buf);
        }
    } else if (strcmp(kind, "Namespace") != 0 && strcmp(kind, "Service") != 0) {
        /* Namespace and Service have no status field a churn would plausibly move. */
        tree_set_num(status, "churn", seed % 100000);
    }
    return 0;
}
