/*
 * apires.c - the built-in kinds table and runtime-described resources (see apires.h).
 *
 * Bookmark bodies are what Go's encoding/json prints for an empty object of each type in
 * 1.34+ (creationTimestamp is omitzero): a field without omitempty still appears (nil
 * slices as null, structs as {}). Kinds not listed get metadata only, which is exact for
 * custom resources (unstructured) and a close approximation for the rest.
 */
#include "proxy/apires.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/bug.h"
#include "cache/resource.h"
#include "proxy/log.h"

#define POD_TEMPLATE "\"template\":{\"metadata\":{},\"spec\":{\"containers\":null}}"

/* One row per kind, in the field order of struct apires_kind; kept as rows by hand. */
/* clang-format off */
static const struct apires_kind builtin_kinds[] = {
    {"", "v1", "pods", "pod", "Pod", "PodList", true, true, "po",
     ",\"spec\":{\"containers\":null},\"status\":{}",
     {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
      "spec.hostNetwork:spec.hostNetwork|=false", "status.phase",
      "status.podIP:status.podIP|status.podIPs.0.ip", "status.nominatedNodeName", NULL}, NULL},
    {"", "v1", "configmaps", "configmap", "ConfigMap", "ConfigMapList", true, true, "cm", "",
     {NULL}, NULL},
    {"", "v1", "secrets", "secret", "Secret", "SecretList", true, true, "", "", {"type", NULL}, NULL},
    {"", "v1", "services", "service", "Service", "ServiceList", true, true, "svc",
     ",\"spec\":{},\"status\":{\"loadBalancer\":{}}", {"spec.clusterIP", "spec.type", NULL}, NULL},
    {"", "v1", "namespaces", "namespace", "Namespace", "NamespaceList", false, true, "ns",
     ",\"spec\":{},\"status\":{}", {"status.phase", NULL}, NULL},
    {"", "v1", "nodes", "node", "Node", "NodeList", false, true, "no",
     ",\"spec\":{},\"status\":{\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":0}},"
     "\"nodeInfo\":{\"machineID\":\"\",\"systemUUID\":\"\",\"bootID\":\"\",\"kernelVersion\":\"\","
     "\"osImage\":\"\",\"containerRuntimeVersion\":\"\",\"kubeletVersion\":\"\","
     "\"kubeProxyVersion\":\"\",\"operatingSystem\":\"\",\"architecture\":\"\"}}",
     {"spec.unschedulable:spec.unschedulable|=false", NULL}, NULL},
    {"", "v1", "events", "event", "Event", "EventList", true, true, "ev",
     ",\"involvedObject\":{},\"source\":{},\"firstTimestamp\":null,\"lastTimestamp\":null,"
     "\"eventTime\":null,\"reportingComponent\":\"\",\"reportingInstance\":\"\"",
     {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
      "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
      "involvedObject.fieldPath", "reason", "reportingComponent",
      "source:source.component|reportingComponent", "type", NULL}, NULL},
    {"", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", "ServiceAccountList", true,
     true, "sa", "", {NULL}, NULL},
    {"", "v1", "replicationcontrollers", "replicationcontroller", "ReplicationController",
     "ReplicationControllerList", true, true, "rc", ",\"spec\":{},\"status\":{\"replicas\":0}",
     {"status.replicas:status.replicas|=0", NULL}, NULL},
    {"batch", "v1", "jobs", "job", "Job", "JobList", true, true, "",
     ",\"spec\":{" POD_TEMPLATE "},\"status\":{}", {"status.successful:status.succeeded|=0", NULL},
     "Job"},
    {"certificates.k8s.io", "v1", "certificatesigningrequests", "certificatesigningrequest",
     "CertificateSigningRequest", "CertificateSigningRequestList", false, true, "csr",
     ",\"spec\":{\"request\":null,\"signerName\":\"\"},\"status\":{}", {"spec.signerName", NULL}, NULL},
    {"apps", "v1", "deployments", "deployment", "Deployment", "DeploymentList", true, true,
     "deploy",
     ",\"spec\":{\"selector\":null," POD_TEMPLATE ",\"strategy\":{}},\"status\":{}", {NULL}, NULL},
    {"apps", "v1", "replicasets", "replicaset", "ReplicaSet", "ReplicaSetList", true, true, "rs",
     ",\"spec\":{\"selector\":null," POD_TEMPLATE "},\"status\":{\"replicas\":0}",
     {"status.replicas:status.replicas|=0", NULL}, NULL},
    {"apps", "v1", "daemonsets", "daemonset", "DaemonSet", "DaemonSetList", true, true, "ds",
     ",\"spec\":{\"selector\":null," POD_TEMPLATE ",\"updateStrategy\":{}},\"status\":{"
     "\"currentNumberScheduled\":0,\"numberMisscheduled\":0,\"desiredNumberScheduled\":0,"
     "\"numberReady\":0}", {NULL}, NULL},
    {"policy", "v1", "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget",
     "PodDisruptionBudgetList", true, true, "pdb",
     ",\"spec\":{},\"status\":{\"disruptionsAllowed\":0,\"currentHealthy\":0,"
     "\"desiredHealthy\":0,\"expectedPods\":0}", {NULL}, NULL},
    {"rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole", "ClusterRole",
     "ClusterRoleList", false, true, "", ",\"rules\":null", {NULL}, NULL},
    {"rbac.authorization.k8s.io", "v1", "clusterrolebindings", "clusterrolebinding",
     "ClusterRoleBinding", "ClusterRoleBindingList", false, true, "",
     ",\"roleRef\":{\"apiGroup\":\"\",\"kind\":\"\",\"name\":\"\"}", {NULL}, NULL},
    {"rbac.authorization.k8s.io", "v1", "roles", "role", "Role", "RoleList", true, true, "",
     ",\"rules\":null", {NULL}, NULL},
    {"rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding",
     "RoleBindingList", true, true, "",
     ",\"roleRef\":{\"apiGroup\":\"\",\"kind\":\"\",\"name\":\"\"}", {NULL}, NULL},
};
/* clang-format on */

#define N_BUILTIN (sizeof(builtin_kinds) / sizeof(builtin_kinds[0]))

const struct apires_kind *apires_builtin_table(size_t *n)
{
    *n = N_BUILTIN;
    return builtin_kinds;
}

const struct apires_kind *apires_builtin(const char *group, const char *version, const char *plural)
{
    for (size_t i = 0; i < N_BUILTIN; i++) {
        const struct apires_kind *k = &builtin_kinds[i];
        if (strcmp(k->group, group) == 0 && strcmp(k->version, version) == 0 &&
            strcmp(k->plural, plural) == 0) {
            return k;
        }
    }
    return NULL;
}

static bool valid_segment(const char *s, size_t len)
{
    if (len == 0 || len > 63) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(islower(c) || isdigit(c) || c == '-' || c == '.')) {
            return false;
        }
    }
    return true;
}

/* A Kind as Go names it: an upper-case letter, then letters and digits, at most 63. */
static bool valid_kind(const char *s)
{
    size_t len = strlen(s);

    if (len == 0 || len > 63 || !isupper((unsigned char)s[0])) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        if (!isalnum((unsigned char)s[i])) {
            return false;
        }
    }
    return true;
}

int apires_parse_spec(const char *spec, struct apires_kind *out, char **owned)
{
    char group[128], version[64], plural[64], scope[16] = "", kind[64] = "";
    const char *s1, *s2, *colon, *kcolon;
    const struct apires_kind *b;
    size_t glen, vlen, plen, singlen, klen;
    char *buf, *p;

    *owned = NULL;
    if (spec[0] == '/') {
        spec++;
    }
    s1 = strchr(spec, '/');
    if (!s1) {
        return -EINVAL;
    }
    s2 = strchr(s1 + 1, '/');
    if (s2) {
        glen = (size_t)(s1 - spec);
        vlen = (size_t)(s2 - s1 - 1);
    } else { /* "v1/pods": core */
        glen = 0;
        vlen = (size_t)(s1 - spec);
        s2 = s1;
        s1 = spec - 1;
    }
    colon = strchr(s2 + 1, ':');
    plen = colon ? (size_t)(colon - s2 - 1) : strlen(s2 + 1);
    if (glen >= sizeof(group) || vlen == 0 || vlen >= sizeof(version) || plen == 0 ||
        plen >= sizeof(plural) || !valid_segment(s2 + 1, plen) ||
        (glen && !valid_segment(spec, glen)) || !valid_segment(s1 + 1, vlen)) {
        return -EINVAL;
    }
    memcpy(group, spec, glen);
    group[glen] = '\0';
    memcpy(version, s1 + 1, vlen);
    version[vlen] = '\0';
    memcpy(plural, s2 + 1, plen);
    plural[plen] = '\0';
    if (colon) {
        size_t slen;
        kcolon = strchr(colon + 1, ':');
        slen = kcolon ? (size_t)(kcolon - colon - 1) : strlen(colon + 1);
        if (slen >= sizeof(scope) || (kcolon && strlen(kcolon + 1) >= sizeof(kind))) {
            return -EINVAL;
        }
        memcpy(scope, colon + 1, slen);
        scope[slen] = '\0';
        if (strcmp(scope, "namespaced") != 0 && strcmp(scope, "cluster") != 0) {
            return -EINVAL;
        }
        if (kcolon) {
            memcpy(kind, kcolon + 1, strlen(kcolon + 1) + 1);
            if (!valid_kind(kind)) {
                return -EINVAL;
            }
        }
    }
    b = apires_builtin(group, version, plural);
    if (b) {
        *out = *b;
        return 0;
    }
    /* group, version, plural, singular, kind, listKind in one buffer; a Kind given is the
     * CRD's, whose singular defaults to it in lower case */
    singlen = plen > 1 && plural[plen - 1] == 's' ? plen - 1 : plen;
    klen = kind[0] ? strlen(kind) : singlen;
    buf = xmalloc(glen + vlen + plen + singlen + 3 * klen + 16);
    p = buf;
    memcpy(p, group, glen + 1);
    out->group = p;
    p += glen + 1;
    memcpy(p, version, vlen + 1);
    out->version = p;
    p += vlen + 1;
    memcpy(p, plural, plen + 1);
    out->plural = p;
    p += plen + 1;
    out->singular = p;
    if (kind[0]) {
        for (size_t i = 0; i < klen; i++) {
            *p++ = (char)tolower((unsigned char)kind[i]);
        }
        *p++ = '\0';
        out->kind = p;
        memcpy(p, kind, klen);
        p += klen;
        singlen = 0; /* the loop below has nothing to add */
    } else {
        memcpy(p, plural, singlen);
        p[singlen] = '\0';
        p += singlen + 1;
        out->kind = p;
    }
    /* Kind: CamelCase of the singular, dashes and dots dropped */
    for (size_t i = 0, up = 1; i < singlen; i++) {
        char c = plural[i];
        if (c == '-' || c == '.') {
            up = 1;
            continue;
        }
        *p++ = up ? (char)toupper((unsigned char)c) : c;
        up = 0;
    }
    *p++ = '\0';
    out->list_kind = p;
    memcpy((char *)out->list_kind, out->kind, strlen(out->kind));
    memcpy((char *)out->list_kind + strlen(out->kind), "List", 5);
    out->namespaced = strcmp(scope, "cluster") != 0;
    out->builtin = false;
    out->short_names = "";
    out->bookmark_body = "";
    out->fields[0] = NULL;
    out->field_reject_kind = NULL;
    *owned = buf;
    return 0;
}

struct apires *apires_new(const struct apires_kind *kind, char *owned, const struct ring_opts *ring)
{
    struct apires *ar = xcalloc(1, sizeof(*ar));
    char name[256];

    ar->kind = *kind;
    ar->owned = owned;
    if (kind->group[0]) {
        snprintf(ar->api_version, sizeof(ar->api_version), "%s/%s", kind->group, kind->version);
        snprintf(name, sizeof(name), "%s.%s", kind->plural, kind->group);
    } else {
        snprintf(ar->api_version, sizeof(ar->api_version), "%s", kind->version);
        snprintf(name, sizeof(name), "%s", kind->plural);
    }
    ar->res = resource_new(name, ring);
    ar->created_ms = clock_mono_ms();
    resource_set_user(ar->res, ar);
    /* SEMANTICS 3.6: pods are dispatched by spec.nodeName (kubelets watch their node's pods) */
    if (kind->group[0] == '\0' && strcmp(kind->plural, "pods") == 0) {
        resource_set_trigger(ar->res, "spec.nodeName");
    }
    return ar;
}

void apires_free(struct apires *ar)
{
    if (!ar) {
        return;
    }
    resource_free(ar->res);
    free(ar->owned);
    free(ar);
}
