/*
 * alloc.h - Service cluster IPs and node ports for the simulator: which ones the stored
 * Services hold, and what a new Service gets, as kube-apiserver allocates them on a
 * single-stack IPv4 cluster (--service-cluster-ip-range 10.96.0.0/12,
 * --service-node-port-range 30000-32767), with its 422 messages.
 *
 * Works on cJSON trees the caller owns and keeps no state of its own: any thread, no locks
 * (the caller serialises the creates that share one struct alloc_used).
 */
#ifndef KWP_SIM_ALLOC_H
#define KWP_SIM_ALLOC_H

#include <cJSON.h>

/* A 422 Invalid with one cause, as kube-apiserver's field.Error makes it. */
struct alloc_invalid {
    char message[640]; /* Service "s1" is invalid: <field>: <detail> */
    char field[64];    /* spec.clusterIPs, spec.ports[0].nodePort, ... */
    char reason[32];   /* FieldValueInvalid, FieldValueForbidden */
    char detail[512];  /* Invalid value: 30080: provided port is already allocated */
};

/* The cluster IPs and node ports the existing Services hold: an opaque bitmap of the
 * 10.96.0.0/12 range and of ports 30000-32767 (about 128 KiB). _new never returns NULL
 * (aborts on OOM); the caller frees it with alloc_used_free (NULL is a no-op). */
struct alloc_used;
struct alloc_used *alloc_used_new(void);
void alloc_used_free(struct alloc_used *used);

/* Records the IPv4 cluster IPs in range, node ports and health check port of <svc>. */
void alloc_used_add(struct alloc_used *used, const cJSON *svc);

/*
 * Completes a Service <svc> that objects_prepare_create prepared (its metadata.uid seeds the
 * choices) as kube-apiserver's Service REST create does:
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
int alloc_service(cJSON *svc, const struct alloc_used *used, struct alloc_invalid *inv);

#endif
