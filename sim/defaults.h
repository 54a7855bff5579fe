/*
 * defaults.h - what kube-apiserver's v1 defaulting and create strategies add to a new object
 * of the built-in workload kinds, and a Namespace's create strategy, for the simulator's
 * creates (objects_prepare_create calls it once the generic rules have passed).
 *
 * Works on a cJSON tree the caller owns; pure (no globals, no I/O): any thread, no locks.
 * Update never defaults (a PATCH applies to the object as it was defaulted on create).
 */
#ifndef KWP_SIM_DEFAULTS_H
#define KWP_SIM_DEFAULTS_H

#include <stdbool.h>

#include <cJSON.h>

/*
 * Adds kube's create-time defaults to <obj>, an object whose kind, metadata.name and
 * metadata.uid are settled (<uid> is that uid; <builtin> says the resource is in proxy/apires.c's
 * table: only built-in kinds are defaulted, a custom resource of kind Deployment is not).
 *
 * A Namespace (built in or not) gets what its strategy does: status {"phase":"Active"}, the
 * "kubernetes" spec finalizer and the label kubernetes.io/metadata.name=<name>.
 * Built-in Deployments, ReplicaSets, ReplicationControllers, Jobs, Services and
 * ServiceAccounts get what kube-apiserver's v1 defaulting and create strategies add (every one
 * but a ServiceAccount then has a spec): replicas 1, the RollingUpdate strategy (25%/25%),
 * revisionHistoryLimit 10, progressDeadlineSeconds 600; a pod template's restartPolicy Always,
 * terminationGracePeriodSeconds 30, dnsPolicy ClusterFirst, securityContext {}, schedulerName
 * default-scheduler, and per container imagePullPolicy (Always for :latest or no tag, else
 * IfNotPresent), terminationMessagePath/Policy, resources {}, port protocol TCP, probe
 * timings, HTTP probe path and scheme, volume defaultMode 420 and the other volume defaults;
 * a Job's completions/parallelism 1, backoffLimit 6, completionMode NonIndexed, suspend
 * false, podReplacementPolicy, manualSelector false and, unless manualSelector is true or a
 * selector was sent (which kube-apiserver would refuse), the generated selector on
 * batch.kubernetes.io/controller-uid=<uid> with the job-name and controller-uid template
 * labels (legacy and batch.kubernetes.io/ forms), copied to the Job's labels when it has none;
 * a ReplicationController's selector and labels from its template; a Service's
 * sessionAffinity None (ClientIP: timeout 10800), type ClusterIP, port protocol TCP,
 * targetPort = port, externalTrafficPolicy Cluster when externally reachable,
 * internalTrafficPolicy Cluster, allocateLoadBalancerNodePorts true and status.loadBalancer
 * {} (its IPs and node ports come from alloc_service); a ServiceAccount's secret references
 * reduced to their names; a DaemonSet's RollingUpdate strategy (maxUnavailable 1, maxSurge 0),
 * revisionHistoryLimit 10, the deprecated.daemonset.template.generation "1" annotation and its
 * status counts; a PodDisruptionBudget's status counts; a (Cluster)RoleBinding's User and
 * Group subjects' apiGroup rbac.authorization.k8s.io; a (Cluster)Role's rules null when absent.
 * A pod template on the host network gets hostPort = containerPort for each port without one.
 * Unlike kube-apiserver, whose strategies clear a status sent on create, the simulator keeps it (it
 * has no controllers: tests and demos create objects in the state they want to see); an empty one
 * is printed as Go prints it. Members are added where they fall; the caller puts the object in Go's
 * member order. Returns true when <obj> was one of those kinds (the caller orders it with
 * proto_order), false otherwise (a Namespace included). Any thread.
 */
bool defaults_apply(cJSON *obj, bool builtin, const char *uid);

#endif
