/*
 * defaults.c - what kube-apiserver adds to an object on create beyond the generic registry's
 * rules (see defaults.h): the v1 defaulting functions (pkg/apis/core/v1, apps/v1, batch/v1
 * defaults.go and the declarative +default markers) that apply to the workload kinds, plus
 * the create strategies' additions that `get` and the printers show (a Namespace's phase,
 * finalizer and name label; a Job's generated selector).
 *
 * A Go "if x == nil" default fills an absent or null member; an "if x == \"\"" or "== 0"
 * one also replaces an empty string or a zero. Service IPs and node ports are alloc.c's.
 * This file may include sim/tree.h and cJSON, nothing of the server.
 * Pure functions: any thread, no locks.
 */
#include "sim/defaults.h"

#include <stdbool.h>
#include <string.h>

#include <cJSON.h>

#include "sim/tree.h"

/* namespaceStrategy.PrepareForCreate: phase Active, the "kubernetes" finalizer, and the
 * kubernetes.io/metadata.name label (1.21+), whatever the client sent. */
static void prepare_namespace(cJSON *obj, cJSON *meta)
{
    cJSON *spec = tree_child_obj(obj, "spec");
    cJSON *fin = cJSON_GetObjectItemCaseSensitive(spec, "finalizers");
    const cJSON *f;
    cJSON *status = tree_must(cJSON_CreateObject());

    tree_set_str(tree_child_obj(meta, "labels"), "kubernetes.io/metadata.name",
                 tree_str(meta, "name"));
    if (!cJSON_IsArray(fin)) {
        fin = tree_set(spec, "finalizers", tree_must(cJSON_CreateArray()));
    }
    for (f = fin->child; f != NULL; f = f->next) {
        if (cJSON_IsString(f) && strcmp(f->valuestring, "kubernetes") == 0) {
            break;
        }
    }
    if (f == NULL) {
        cJSON_AddItemToArray(fin, tree_must(cJSON_CreateString("kubernetes")));
    }
    tree_add_str(status, "phase", "Active");
    tree_set(obj, "status", status);
}

static void default_str(cJSON *obj, const char *key, const char *value)
{
    if (!tree_is_set(obj, key)) {
        tree_set_str(obj, key, value);
    }
}

/* A pointer field's default: only when absent or null. */
static void default_num(cJSON *obj, const char *key, double value)
{
    if (!tree_is_set(obj, key)) {
        tree_set_num(obj, key, value);
    }
}

/* A plain int field's default ("if x == 0"). */
static void default_nonzero(cJSON *obj, const char *key, double value)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!cJSON_IsNumber(v) || v->valuedouble == 0) {
        tree_set_num(obj, key, value);
    }
}

static void default_bool(cJSON *obj, const char *key, bool value)
{
    if (!tree_is_set(obj, key)) {
        tree_set(obj, key, tree_must(cJSON_CreateBool(value)));
    }
}

/* A struct field Go always prints: {} when absent or null. */
static cJSON *default_obj(cJSON *obj, const char *key)
{
    return tree_child_obj(obj, key);
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
    default_http_get(tree_obj_at(probe, "httpGet"));
}

/* ObjectFieldSelector apiVersion "v1"; ResourceFieldSelector.divisor is a struct: "0". */
static void default_field_refs(cJSON *holder)
{
    cJSON *ref = tree_obj_at(holder, "fieldRef");

    if (ref != NULL) {
        default_str(ref, "apiVersion", "v1");
    }
    ref = tree_obj_at(holder, "resourceFieldRef");
    if (ref != NULL) {
        default_str(ref, "divisor", "0");
    }
}

/* SetDefaults_Container, the declarative ContainerPort protocol and the nested defaults. */
static void default_container(cJSON *c)
{
    const char *image = tree_str(c, "image");
    cJSON *e;
    cJSON *lifecycle = tree_obj_at(c, "lifecycle");

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
        default_field_refs(tree_obj_at(e, "valueFrom"));
    }
    default_probe(tree_obj_at(c, "livenessProbe"));
    default_probe(tree_obj_at(c, "readinessProbe"));
    default_probe(tree_obj_at(c, "startupProbe"));
    if (lifecycle != NULL) {
        default_http_get(tree_obj_at(tree_obj_at(lifecycle, "postStart"), "httpGet"));
        default_http_get(tree_obj_at(tree_obj_at(lifecycle, "preStop"), "httpGet"));
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
        tree_set(v, "emptyDir", tree_must(cJSON_CreateObject()));
    }
    if ((src = tree_obj_at(v, "hostPath")) != NULL && !tree_is_set(src, "type")) {
        tree_set_str(src, "type", "");
    }
    if ((src = tree_obj_at(v, "secret")) != NULL) {
        default_num(src, "defaultMode", 420);
    }
    if ((src = tree_obj_at(v, "configMap")) != NULL) {
        default_num(src, "defaultMode", 420);
    }
    if ((src = tree_obj_at(v, "downwardAPI")) != NULL) {
        default_num(src, "defaultMode", 420);
        default_downward_items(src);
    }
    if ((src = tree_obj_at(v, "projected")) != NULL) {
        default_num(src, "defaultMode", 420);
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(src, "sources"))
        {
            cJSON *token = tree_obj_at(e, "serviceAccountToken");
            if (token != NULL) {
                default_num(token, "expirationSeconds", 3600);
            }
            default_downward_items(tree_obj_at(e, "downwardAPI"));
        }
    }
    src = tree_obj_at(tree_obj_at(tree_obj_at(v, "ephemeral"), "volumeClaimTemplate"), "spec");
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

/* defaultHostNetworkPorts: on the host's network a container port is also its host port. */
static void default_host_ports(cJSON *spec, const char *key)
{
    cJSON *c;
    cJSON *port;

    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, key))
    {
        cJSON_ArrayForEach(port, cJSON_GetObjectItemCaseSensitive(c, "ports"))
        {
            const cJSON *cp = cJSON_GetObjectItemCaseSensitive(port, "containerPort");
            if (cJSON_IsObject(port) && cJSON_IsNumber(cp)) {
                default_nonzero(port, "hostPort", cp->valuedouble);
            }
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
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(spec, "hostNetwork"))) {
        default_host_ports(spec, "containers");
        default_host_ports(spec, "initContainers");
    }
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
    if (strcmp(tree_str(strategy, "type"), "RollingUpdate") == 0) {
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
        tree_set(obj, key, tree_must(cJSON_Duplicate(labels, true)));
    }
}

/* v1 SetDefaults_ReplicationController: selector and labels from the template's labels. */
static void default_rc(cJSON *obj)
{
    cJSON *spec = default_obj(obj, "spec");
    cJSON *tmpl = tree_obj_at(spec, "template");
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(tree_obj_at(tmpl, "metadata"), "labels");

    default_labels_from(spec, "selector", labels);
    default_labels_from(tree_child_obj(obj, "metadata"), "labels", labels);
    default_num(spec, "replicas", 1);
    default_pod_template(tmpl); /* a pointer: only when sent */
    default_num(default_obj(obj, "status"), "replicas", 0);
}

/* Status counts without omitempty (NULL-ended <keys>): 0 when absent. */
static void default_zeros(cJSON *status, const char *const *keys)
{
    for (size_t i = 0; keys[i] != NULL; i++) {
        default_num(status, keys[i], 0);
    }
}

/* apps/v1 SetDefaults_DaemonSet (RollingUpdate with maxUnavailable 1 and maxSurge 0,
 * revisionHistoryLimit 10), the strategy's templateGeneration 1, which apps/v1 carries as the
 * deprecated.daemonset.template.generation annotation, and the status Go prints for an empty
 * DaemonSetStatus (its four counts have no omitempty). */
static void default_daemonset(cJSON *obj)
{
    static const char *const ds_counts[] = {"currentNumberScheduled", "numberMisscheduled",
                                            "desiredNumberScheduled", "numberReady", NULL};
    cJSON *spec = default_obj(obj, "spec");
    cJSON *strategy = default_obj(spec, "updateStrategy");
    cJSON *annotations = tree_child_obj(tree_child_obj(obj, "metadata"), "annotations");

    default_str(strategy, "type", "RollingUpdate");
    if (strcmp(tree_str(strategy, "type"), "RollingUpdate") == 0) {
        cJSON *ru = default_obj(strategy, "rollingUpdate");
        default_num(ru, "maxUnavailable", 1);
        default_num(ru, "maxSurge", 0);
    }
    default_num(spec, "revisionHistoryLimit", 10);
    default_pod_template(default_obj(spec, "template"));
    default_str(annotations, "deprecated.daemonset.template.generation", "1");
    default_zeros(default_obj(obj, "status"), ds_counts);
}

/* policy/v1 has no defaulting; an empty PodDisruptionBudgetStatus prints four counts. */
static void default_pdb(cJSON *obj)
{
    static const char *const counts[] = {"disruptionsAllowed", "currentHealthy", "desiredHealthy",
                                         "expectedPods", NULL};

    default_obj(obj, "spec");
    default_zeros(default_obj(obj, "status"), counts);
}

/* rbac/v1 SetDefaults_Subject: a User's or Group's empty apiGroup is rbac.authorization.k8s.io
 * (a ServiceAccount's stays ""). */
static void default_subjects(cJSON *obj)
{
    cJSON *sub;

    cJSON_ArrayForEach(sub, cJSON_GetObjectItemCaseSensitive(obj, "subjects"))
    {
        const char *kind = tree_str(sub, "kind");
        if (cJSON_IsObject(sub) && tree_str(sub, "apiGroup")[0] == '\0' &&
            (strcmp(kind, "User") == 0 || strcmp(kind, "Group") == 0)) {
            tree_set_str(sub, "apiGroup", "rbac.authorization.k8s.io");
        }
    }
}

/* A (Cluster)Role's rules have no omitempty: absent, Go prints null. */
static void default_rules(cJSON *obj)
{
    if (cJSON_GetObjectItemCaseSensitive(obj, "rules") == NULL) {
        tree_set(obj, "rules", tree_must(cJSON_CreateNull()));
    }
}

/* Sets labels[key] = value unless the key is there. */
static void label_if_absent(cJSON *labels, const char *key, const char *value)
{
    if (cJSON_GetObjectItemCaseSensitive(labels, key) == NULL) {
        tree_add_str(labels, key, value);
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
    cJSON *pfp = tree_obj_at(spec, "podFailurePolicy");
    cJSON *rule;

    if (!tree_is_set(spec, "completions") && !tree_is_set(spec, "parallelism")) {
        tree_set_num(spec, "completions", 1);
    }
    default_num(spec, "parallelism", 1);
    default_num(spec, "backoffLimit", tree_is_set(spec, "backoffLimitPerIndex") ? 2147483647 : 6);
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
        !tree_is_set(spec, "selector")) {
        cJSON *labels = tree_child_obj(tree_child_obj(tmpl, "metadata"), "labels");
        label_if_absent(labels, "job-name", name);
        label_if_absent(labels, "batch.kubernetes.io/job-name", name);
        label_if_absent(labels, "controller-uid", uid);
        label_if_absent(labels, "batch.kubernetes.io/controller-uid", uid);
        tree_add_str(tree_child_obj(tree_child_obj(spec, "selector"), "matchLabels"),
                     "batch.kubernetes.io/controller-uid", uid);
    }
    default_labels_from(tree_child_obj(obj, "metadata"), "labels",
                        cJSON_GetObjectItemCaseSensitive(tree_obj_at(tmpl, "metadata"), "labels"));
    default_obj(obj, "status");
}

/* v1 SetDefaults_Service and the declarative ServicePort protocol. The cluster IPs, IP
 * families and node ports come from alloc_service. */
static void default_service(cJSON *obj)
{
    cJSON *spec = default_obj(obj, "spec");
    const char *type;
    const char *affinity;
    const cJSON *external_ips;
    cJSON *port;

    default_str(spec, "sessionAffinity", "None");
    affinity = tree_str(spec, "sessionAffinity");
    if (strcmp(affinity, "None") == 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "sessionAffinityConfig");
    } else if (strcmp(affinity, "ClientIP") == 0) {
        cJSON *cfg = tree_obj_at(tree_obj_at(spec, "sessionAffinityConfig"), "clientIP");
        if (cfg == NULL || !tree_is_set(cfg, "timeoutSeconds")) {
            cJSON *fresh = tree_must(cJSON_CreateObject());
            tree_set_num(tree_add_obj(fresh, "clientIP"), "timeoutSeconds", 10800);
            tree_set(spec, "sessionAffinityConfig", fresh);
        }
    }
    default_str(spec, "type", "ClusterIP");
    type = tree_str(spec, "type");
    cJSON_ArrayForEach(port, cJSON_GetObjectItemCaseSensitive(spec, "ports"))
    {
        const cJSON *target = cJSON_GetObjectItemCaseSensitive(port, "targetPort");
        const cJSON *number = cJSON_GetObjectItemCaseSensitive(port, "port");
        if (!cJSON_IsObject(port)) {
            continue;
        }
        default_str(port, "protocol", "TCP");
        if (!tree_is_set(port, "targetPort") || (cJSON_IsNumber(target) && target->valueint == 0)) {
            tree_set_num(port, "targetPort", cJSON_IsNumber(number) ? number->valuedouble : 0);
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

bool defaults_apply(cJSON *obj, bool builtin, const char *uid)
{
    const char *kind = tree_str(obj, "kind");
    cJSON *meta = tree_child_obj(obj, "metadata");

    if (strcmp(kind, "Namespace") == 0) {
        prepare_namespace(obj, meta); /* any Namespace, built in or not */
        return false;
    }
    if (!builtin) {
        return false;
    }
    if (strcmp(kind, "Deployment") == 0) {
        default_deployment(obj);
    } else if (strcmp(kind, "ReplicaSet") == 0) {
        default_replicaset(obj);
    } else if (strcmp(kind, "ReplicationController") == 0) {
        default_rc(obj);
    } else if (strcmp(kind, "Job") == 0) {
        default_job(obj, tree_str(meta, "name"), uid);
    } else if (strcmp(kind, "Service") == 0) {
        default_service(obj);
    } else if (strcmp(kind, "ServiceAccount") == 0) {
        default_service_account(obj);
    } else if (strcmp(kind, "DaemonSet") == 0) {
        default_daemonset(obj);
    } else if (strcmp(kind, "PodDisruptionBudget") == 0) {
        default_pdb(obj);
    } else if (strcmp(kind, "ClusterRoleBinding") == 0 || strcmp(kind, "RoleBinding") == 0) {
        default_subjects(obj);
    } else if (strcmp(kind, "ClusterRole") == 0 || strcmp(kind, "Role") == 0) {
        default_rules(obj);
    } else {
        return false;
    }
    return true;
}
