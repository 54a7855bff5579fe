/*
 * gen.h - deterministic generators of realistic objects for seeding the simulator, and the
 * churn updates its writers apply to them.
 *
 * Works on cJSON trees the caller owns; pure (no globals, no I/O): any thread, no locks. The
 * same arguments always give the same object, so a seed reproduces a whole simulated
 * cluster. Every integer written is small: cJSON prints numbers through double, which is
 * exact below 2^53.
 */
#ifndef KWP_SIM_GEN_H
#define KWP_SIM_GEN_H

#include <cJSON.h>

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
cJSON *gen_object_new(const char *resource, const char *ns, const char *name, unsigned seed);

/*
 * A churn update of a generated (or any) object, deterministic in <seed>: an odd seed sets
 * label "churn" = "b<seed % 4>" (which moves the object in and out of label selectors), an
 * even seed sets annotation "kwp.io/churn" = "<seed>"; and one status-like field changes:
 * Pod restartCount and Ready condition, Deployment/ReplicaSet ready and available replica
 * counts, Node heartbeat time, Event count and lastTimestamp, ConfigMap/Secret data "rev",
 * Namespace and Service nothing more, other kinds status.churn. Returns 0, or -EINVAL when
 * <obj> is not an object. Any thread.
 */
int gen_mutate(cJSON *obj, unsigned seed);

#endif
