/*
 * alloc.c - the Service cluster-IP and node-port allocator of a simulated single-stack IPv4
 * cluster (see alloc.h), as kube-apiserver's Service REST create runs it with
 * --service-cluster-ip-range 10.96.0.0/12 and --service-node-port-range 30000-32767.
 *
 * What is taken lives in a struct alloc_used the caller builds from the stored Services for
 * each create (sim.c does, under its resource lock); this file never keeps state, so two
 * creates can only collide if the caller lets them. It may include sim/proto.h (Go member
 * order), sim/tree.h and cache/bug.h, nothing of the server. Pure functions: any thread.
 */
#include "sim/alloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cache/bug.h"
#include "sim/proto.h"
#include "sim/tree.h"

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

struct alloc_used {
    uint8_t ips[SVC_SIZE / 8];              /* bit i: SVC_NET + i is held */
    uint8_t ports[NODE_PORT_COUNT / 8 + 1]; /* bit i: NODE_PORT_MIN + i is held */
};

struct alloc_used *alloc_used_new(void)
{
    return xcalloc(1, sizeof(struct alloc_used));
}

void alloc_used_free(struct alloc_used *u)
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

void alloc_used_add(struct alloc_used *u, const cJSON *svc)
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
__attribute__((format(printf, 5, 6))) static int svc_invalid(struct alloc_invalid *inv,
                                                             const char *name, const char *field,
                                                             const char *reason, const char *fmt,
                                                             ...)
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
static int svc_families(cJSON *spec, const char *name, bool headless, struct alloc_invalid *inv)
{
    const cJSON *selector = cJSON_GetObjectItemCaseSensitive(spec, "selector");
    bool selectorless = !(cJSON_IsObject(selector) && selector->child != NULL);
    cJSON *families = cJSON_GetObjectItemCaseSensitive(spec, "ipFamilies");
    const char *policy;

    if (!tree_is_set(spec, "ipFamilyPolicy")) {
        tree_set_str(spec, "ipFamilyPolicy",
                     headless && selectorless ? "RequireDualStack" : "SingleStack");
    }
    policy = tree_str(spec, "ipFamilyPolicy");
    if (!cJSON_IsArray(families) || families->child == NULL) {
        families = tree_set(spec, "ipFamilies", tree_must(cJSON_CreateArray()));
        cJSON_AddItemToArray(families, tree_must(cJSON_CreateString("IPv4")));
        if (headless && selectorless && strcmp(policy, "SingleStack") != 0) {
            cJSON_AddItemToArray(families, tree_must(cJSON_CreateString("IPv6")));
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
static int svc_cluster_ip(cJSON *spec, const char *name, const struct alloc_used *used,
                          uint64_t seed, struct alloc_invalid *inv)
{
    const char *want = tree_str(spec, "clusterIP");
    char buf[16];
    uint32_t ip;
    int64_t off;
    cJSON *ips;

    if (want[0] != '\0') {
        if (!parse_ipv4(want, &ip)) {
            return svc_invalid(inv, name, "spec.clusterIPs[0]", "FieldValueInvalid",
                               "Invalid value: \"%s\": must be a valid IP address, (e.g. "
                               "10.9.8.7 or 2001:db8::ffff)",
                               want);
        }
        off = ip_offset(ip);
        if (off < 0) {
            return svc_invalid(inv, name, "spec.clusterIPs", "FieldValueInvalid",
                               "Invalid value: []string{\"%s\"}: failed to allocate IP %s: the "
                               "provided IP (%s) is not in the valid range. The range of valid "
                               "IPs is " SVC_CIDR,
                               want, want, want);
        }
        if (bit_get(used->ips, (uint32_t)off)) {
            return svc_invalid(inv, name, "spec.clusterIPs", "FieldValueInvalid",
                               "Invalid value: []string{\"%s\"}: failed to allocate IP %s: "
                               "provided IP is already allocated",
                               want, want);
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
    tree_set_str(spec, "clusterIP", buf);
    ips = tree_set(spec, "clusterIPs", tree_must(cJSON_CreateArray()));
    cJSON_AddItemToArray(ips, tree_must(cJSON_CreateString(buf)));
    return 0;
}

/* Claims node port <p> (sent, or 0 for any) into *out; <taken> is the used bitmap plus the
 * ports this service already took. */
static int svc_node_port(uint8_t *taken, double p, uint64_t seed, const char *name,
                         const char *field, struct alloc_invalid *inv, double *out)
{
    int64_t off;

    if (p != 0) {
        if (p < NODE_PORT_MIN || p > NODE_PORT_MAX || p != (double)(int64_t)p) {
            return svc_invalid(inv, name, field, "FieldValueInvalid",
                               "Invalid value: %.0f: provided port is not in the valid range. "
                               "The range of valid ports is %u-%u",
                               p, NODE_PORT_MIN, NODE_PORT_MAX);
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
            n->valuedouble != number->valuedouble || !cJSON_IsNumber(np) || np->valuedouble == 0) {
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
static int svc_node_ports(cJSON *spec, const char *name, const struct alloc_used *used,
                          uint64_t seed, struct alloc_invalid *inv)
{
    const char *type = tree_str(spec, "type");
    bool lb = strcmp(type, "LoadBalancer") == 0;
    bool allocate =
        strcmp(type, "NodePort") == 0 ||
        (lb &&
         !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(spec, "allocateLoadBalancerNodePorts")));
    const cJSON *ports = cJSON_GetObjectItemCaseSensitive(spec, "ports");
    uint8_t taken[sizeof(used->ports)];
    char field[64];
    cJSON *port;
    double np = 0; /* (the analyzer cannot see that svc_node_port sets it whenever it returns 0) */
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
            tree_set_num(port, "nodePort", shared);
            continue;
        }
        rc = svc_node_port(taken, p != 0 ? p : -shared, seed + (uint64_t)i * 7919, name, field, inv,
                           &np);
        if (rc != 0) {
            return rc;
        }
        tree_set_num(port, "nodePort", np);
    }
    if (lb && strcmp(tree_str(spec, "externalTrafficPolicy"), "Local") == 0) {
        const cJSON *sent = cJSON_GetObjectItemCaseSensitive(spec, "healthCheckNodePort");
        rc = svc_node_port(taken, cJSON_IsNumber(sent) ? sent->valuedouble : 0, seed ^ 0x5bd1e995u,
                           name, "spec.healthCheckNodePort", inv, &np);
        if (rc != 0) {
            return rc;
        }
        tree_set_num(spec, "healthCheckNodePort", np);
    }
    return 0;
}

int alloc_service(cJSON *svc, const struct alloc_used *used, struct alloc_invalid *inv)
{
    cJSON *spec = tree_obj_at(svc, "spec");
    const char *name = tree_str(cJSON_GetObjectItemCaseSensitive(svc, "metadata"), "name");
    const char *uid = tree_str(cJSON_GetObjectItemCaseSensitive(svc, "metadata"), "uid");
    uint64_t seed = tree_mix64(tree_hash_str(TREE_HASH_INIT, uid));
    const cJSON *ips;
    bool headless;
    int rc;

    memset(inv, 0, sizeof(*inv));
    if (spec == NULL || strcmp(tree_str(spec, "type"), "ExternalName") == 0) {
        return 0; /* ExternalName services get no IPs, families or ports */
    }
    /* NormalizeClusterIPs: clusterIP and clusterIPs[0] say the same */
    ips = cJSON_GetObjectItemCaseSensitive(spec, "clusterIPs");
    if (!tree_is_set(spec, "clusterIP") && cJSON_IsString(cJSON_GetArrayItem(ips, 0))) {
        tree_set_str(spec, "clusterIP", cJSON_GetArrayItem(ips, 0)->valuestring);
    }
    headless = strcmp(tree_str(spec, "clusterIP"), "None") == 0;
    rc = svc_families(spec, name, headless, inv);
    if (rc != 0) {
        return rc;
    }
    if (headless) {
        cJSON *none = tree_set(spec, "clusterIPs", tree_must(cJSON_CreateArray()));
        cJSON_AddItemToArray(none, tree_must(cJSON_CreateString("None")));
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
