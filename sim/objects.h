/*
 * objects.h - what the simulator does to an object on a write, as kube-apiserver's generic
 * registry does it, plus deterministic generators of realistic objects for seeding and churn.
 *
 * All functions work on cJSON trees the caller owns and are pure (no globals, no I/O): any
 * thread, no locks. The simulator keeps the printed bytes, never the tree (STYLE: cJSON trees
 * are temporary). cJSON holds numbers as double and prints them with %1.15g/%1.17g, so an
 * integer above 2^53 or an unusual number format would change in a round trip; the
 * simulator accepts that for the objects it writes itself, and the generators keep every
 * integer small.
 *
 * Error codes of the write helpers, and the Status the caller answers with:
 *   -EINVAL  400 BadRequest   (namespace or name mismatch, wrong kind, not an object)
 *   -EDOM    422 Invalid      (validation: missing name and generateName)
 *   -EBUSY   409 Conflict     (stale metadata.resourceVersion on update)
 *   -EIO     500 InternalError, no reason (metadata.resourceVersion set on create: the
 *            apiserver's storage layer refuses it with a plain error)
 * The exact message (the Status "message") is written to <err>.
 */
#ifndef KWP_SIM_OBJECTS_H
#define KWP_SIM_OBJECTS_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "proxy/apires.h"

/* Length of the random suffix a generateName gets, and the longest prefix kept (63 - 5). */
#define OBJECTS_GENERATE_SUFFIX_LEN 5
#define OBJECTS_GENERATE_PREFIX_MAX 58

/* ---- kinds --------------------------------------------------------------------------- */

/*
 * The built-in description (group, version, kind, list kind, scope) of the resource with
 * plural <plural> in any group, from proxy/apires.c's table; NULL when it is not built in.
 */
const struct apires_kind *objects_type(const char *plural);

/* The kind of <plural> ("pods" -> "Pod", "deployments" -> "Deployment"); NULL when unknown.
 * The list kind is objects_type(plural)->list_kind. */
const char *objects_kind(const char *plural);

/* ---- writes ---------------------------------------------------------------------------- */

/*
 * Prepares <obj>, the body of a create of <resource> (a plural), for storage, in the order
 * kube-apiserver checks: the kind (filled in when absent for a built-in resource; another
 * kind is -EINVAL "the object provided is unrecognized (must be of type <Kind>)"), the
 * namespace (<ns> NULL or "", or a built-in cluster-scoped resource, clears metadata.namespace;
 * otherwise
 * an empty one is set to <ns> and a different one is -EINVAL "the namespace of the provided
 * object does not match the namespace sent on the request"), the name (<name_from_url>,
 * when not NULL, must equal metadata.name: -EINVAL "the name of the object (<a>) does not
 * match the name on the URL (<b>)"; with no name a metadata.generateName gets
 * OBJECTS_GENERATE_SUFFIX_LEN characters of kube's alphabet "bcdfghjklmnpqrstvwxz2456789",
 * derived from <uid> and <rv> so a run is reproducible; with neither it is -EDOM
 * "<Kind>[.<group>] "" is invalid: metadata.name: Required value: name or generateName is
 * required"), then a set metadata.resourceVersion (-EIO "resourceVersion should not be set
 * on objects to be created").
 * On success it sets metadata.uid=<uid>, creationTimestamp=<created> (RFC 3339),
 * resourceVersion=<rv> as a decimal string, removes deletionTimestamp,
 * deletionGracePeriodSeconds and selfLink, sets generation 1 when the object has a "spec"
 * (except Namespace, Node and Service, whose strategies never set it; others drop any
 * generation sent), folds a Secret's stringData into data (base64) as the apiserver does,
 * and gives a Namespace what its strategy does: status {"phase":"Active"}, the "kubernetes"
 * spec finalizer and the label kubernetes.io/metadata.name=<name>.
 * A key repeated in the body keeps its last value, at every level (Go's rule for maps and
 * unstructured objects; Go merges a repeated typed sub-object such as metadata, this does
 * not), so the stored object never has two members of one name.
 * Built-in Deployments, ReplicaSets, ReplicationControllers, Jobs, Services and
 * ServiceAccounts get what kube-apiserver's v1 defaulting and create strategies add, then
 * Go's member order (proto_order): replicas 1, the RollingUpdate strategy (25%/25%),
 * revisionHistoryLimit 10, progressDeadlineSeconds 600; a pod template's restartPolicy
 * Always, terminationGracePeriodSeconds 30, dnsPolicy ClusterFirst, securityContext {},
 * schedulerName default-scheduler, and per container imagePullPolicy (Always for :latest or
 * no tag, else IfNotPresent), terminationMessagePath/Policy, resources {}, port protocol TCP,
 * probe timings, HTTP probe path and scheme, volume defaultMode 420 and the other volume
 * defaults; a Job's completions/parallelism 1, backoffLimit 6, completionMode NonIndexed,
 * suspend false, podReplacementPolicy, manualSelector false and, unless manualSelector is
 * true or a selector was sent (which kube-apiserver would refuse), the generated selector on
 * batch.kubernetes.io/controller-uid=<uid> with the job-name and controller-uid template
 * labels (legacy and batch.kubernetes.io/ forms), copied to the Job's labels when it has
 * none; a ReplicationController's selector and labels from its template; a Service's
 * sessionAffinity None (ClientIP: timeout 10800), type ClusterIP, port protocol TCP,
 * targetPort = port, externalTrafficPolicy Cluster when externally reachable,
 * internalTrafficPolicy Cluster, allocateLoadBalancerNodePorts true and status.loadBalancer
 * {} (its IPs and node ports come from objects_service_allocate); a ServiceAccount's secret
 * references reduced to their names. Unlike kube-apiserver, whose strategies clear a status
 * sent on create, the simulator keeps it (it has no controllers: tests and demos create
 * objects in the state they want to see); an empty one is printed as Go prints it.
 * Update does none of this (a PATCH applies to the defaulted object).
 * Returns 0 or a code from the table above with the message in <err> (err_len bytes, may
 * be 0). <obj> may be partly modified on error. Any thread.
 */
int objects_prepare_create(cJSON *obj, const char *resource, const char *ns,
                           const char *name_from_url, uint64_t rv, const char *uid,
                           const char *created, char *err, size_t err_len);

/* ---- Services: cluster IPs and node ports ----------------------------------------------- */

/* A 422 Invalid with one cause, as kube-apiserver's field.Error makes it. */
struct objects_invalid {
    char message[640]; /* Service "s1" is invalid: <field>: <detail> */
    char field[64];    /* spec.clusterIPs, spec.ports[0].nodePort, ... */
    char reason[32];   /* FieldValueInvalid, FieldValueForbidden */
    char detail[512];  /* Invalid value: 30080: provided port is already allocated */
};

/* The cluster IPs and node ports the existing Services hold: an opaque bitmap of the
 * 10.96.0.0/12 range and of ports 30000-32767 (about 128 KiB). _new never returns NULL
 * (aborts on OOM); the caller frees it with objects_svc_used_free (NULL is a no-op). */
struct objects_svc_used;
struct objects_svc_used *objects_svc_used_new(void);
void objects_svc_used_free(struct objects_svc_used *used);

/* Records the IPv4 cluster IPs in range, node ports and health check port of <svc>. */
void objects_svc_used_add(struct objects_svc_used *used, const cJSON *svc);

/*
 * Completes a Service <svc> that objects_prepare_create prepared (its metadata.uid seeds the
 * choices) as kube-apiserver's Service REST create does on a single-stack IPv4 cluster with
 * --service-cluster-ip-range 10.96.0.0/12 and --service-node-port-range 30000-32767:
 * ExternalName services get nothing; clusterIP and clusterIPs[0] are made to agree;
 * ipFamilyPolicy defaults to SingleStack (RequireDualStack for a headless service without
 * a selector) and ipFamilies to ["IPv4"] (["IPv4","IPv6"] for that headless case); a headless
 * service (clusterIP "None") gets clusterIPs ["None"]; others keep the IP they ask for if it
 * is in range and not in <used>, else get a free one from the upper part of the range
 * (addresses below 10.96.1.1 are left for users to pick); NodePort and LoadBalancer services
 * (unless allocateLoadBalancerNodePorts is false) get a node port per port, ports with the
 * same number sharing one; a LoadBalancer with externalTrafficPolicy Local gets a
 * healthCheckNodePort. Members end in Go's order (proto_order).
 * Returns 0, or -EDOM with <inv> filled (422 Invalid): an IP or port out of range or
 * already allocated, a node port on a ClusterIP service, RequireDualStack or an IPv6
 * family. <svc> may be partly changed on error. Any thread; <used> is only read.
 */
int objects_service_allocate(cJSON *svc, const struct objects_svc_used *used,
                             struct objects_invalid *inv);

/*
 * Prepares <new_obj>, the body of an update (PUT, or a patched copy of <old_obj>) of the
 * stored <old_obj>, for storage. <resource> is named as kube names it in errors: the plural,
 * with ".<group>" added from objects_type() for built-in resources outside the core group
 * (pass "widgets.example.com" for others). <ns> and <name> are the request's (NULL: taken
 * from <old_obj>; <ns> "" or a built-in cluster-scoped resource: none); a different
 * metadata.name is -EINVAL "the name of the object (<a>) does not match the name on the URL
 * (<b>)" (an empty one "...(<b> based on URL) was undeterminable: name must be provided"),
 * a different metadata.namespace -EINVAL "the namespace of the object (<a>) does not match
 * the namespace on the request (<b>)" (handlers' checkName); an empty one is filled in.
 * A metadata.resourceVersion that is set and differs from <old_obj>'s is -EBUSY "Operation
 * cannot be fulfilled on <resource> "<name>": the object has been modified; please apply
 * your changes to the latest version and try again" (a non-numeric one always differs);
 * an unset or "0" one is an unconditional update. kind and apiVersion absent are taken from
 * <old_obj>; uid and creationTimestamp are always <old_obj>'s; generation is <old_obj>'s,
 * plus one when "spec" changed (none when <old_obj> has none); resourceVersion becomes
 * <rv>; a Secret's stringData is folded into data. "status" is kept from the request: the
 * simulator has no status subresource, and its churn writes status through here.
 * Repeated keys in <new_obj> keep their last value, as for objects_prepare_create.
 * Returns 0, -EINVAL, -EBUSY, with the message in <err>. Any thread.
 */
int objects_prepare_update(cJSON *new_obj, const cJSON *old_obj, const char *resource,
                           const char *ns, const char *name, uint64_t rv, char *err,
                           size_t err_len);

/*
 * Applies <patch> to <target> in place as an RFC 7386 JSON merge patch: a null member
 * deletes, an object member merges recursively (into {} when the target member is not an
 * object), any other value replaces. Both must be objects (a non-object patch would replace
 * the whole object, which no Kubernetes PATCH allows): -EINVAL. The simulator also applies
 * strategic merge patches (application/strategic-merge-patch+json) with this function;
 * that differs from kube only for lists with a patch merge key (containers, env, ...), which
 * kube merges by key and this replaces, and for $patch/$retainKeys directives, which are
 * kept as ordinary members. Returns 0 or -EINVAL. Any thread.
 */
int objects_merge_patch(cJSON *target, const cJSON *patch);

/* ---- generators ------------------------------------------------------------------------ */

/*
 * Builds a realistic object of <resource> named <name> in namespace <ns> (ignored for
 * cluster-scoped kinds, may be NULL), as a client would create it, plus a plausible status:
 * pods (~1 KB: labels app=<app> and pod-template-hash, one container, spec.nodeName,
 * status.phase, podIP, conditions, containerStatuses), configmaps, secrets, services (and
 * default/kubernetes as kube-apiserver keeps it: 10.96.0.1, https 443 -> 6443),
 * nodes, namespaces, events, deployments, replicasets; any other resource gets kind
 * CamelCase(plural minus a trailing "s") (apires_parse_spec's rule), labels, a small spec and
 * status, and no apiVersion (the caller knows the group). No uid, resourceVersion or
 * creationTimestamp: objects_prepare_create adds those. The same arguments always give the
 * same object. Returns a new tree the caller owns (cJSON_Delete); never NULL (aborts on
 * OOM). Any thread.
 */
cJSON *objects_generate(const char *resource, const char *ns, const char *name, unsigned seed);

/*
 * A churn update of a generated (or any) object, deterministic in <seed>: an odd seed sets
 * label "churn" = "b<seed % 4>" (which moves the object in and out of label selectors), an
 * even seed sets annotation "kwp.io/churn" = "<seed>"; and one status-like field changes:
 * Pod restartCount and Ready condition, Deployment/ReplicaSet ready and available replica
 * counts, Node heartbeat time, Event count and lastTimestamp, ConfigMap/Secret data "rev",
 * Namespace and Service nothing more, other kinds status.churn. Returns 0, or -EINVAL when
 * <obj> is not an object. Any thread.
 */
int objects_mutate(cJSON *obj, unsigned seed);

#endif
