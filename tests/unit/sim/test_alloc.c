/*
 * test_alloc.c - sim/alloc: Service cluster IP and node port allocation (uniqueness, ranges,
 * shared ports, exhaustion) with kube-apiserver's 422 messages, on Services prepared by
 * objects_prepare_create.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "sim/alloc.h"
#include "tests/unit/sim/objects_fixture.h"

/* ---- Services ------------------------------------------------------------------------------- */

/* prepare_create + alloc_service of <json> (uid <uid>) against <used>. */
static int create_service(const char *json, const char *uid, struct alloc_used *used, cJSON **out,
                          struct alloc_invalid *inv)
{
    cJSON *obj = parse(json);

    cr_assert_eq(objects_prepare_create(obj, "services", "default", NULL, 1, uid, CREATED, NULL, 0),
                 0);
    *out = obj;
    return alloc_service(obj, used, inv);
}

/* The decimal IPv4 address as a number (host order), 0 when not one. */
static uint32_t ipv4(const char *s)
{
    unsigned a, b, c, d;
    char tail;

    if (sscanf(s, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) != 4 || a > 255 || b > 255 || c > 255 ||
        d > 255) {
        return 0;
    }
    return a << 24 | b << 16 | c << 8 | d;
}

Test(alloc, service_from_kubectl_gets_ip_families_and_defaults)
{
    struct alloc_used *used = alloc_used_new();
    struct alloc_invalid inv;
    cJSON *svc;
    char *out;
    uint32_t ip;
    char want[2048];

    cr_assert_eq(create_service("{\"kind\":\"Service\",\"apiVersion\":\"v1\",\"metadata\":{"
                                "\"name\":\"s1\",\"labels\":{\"app\":\"s1\"}},\"spec\":{"
                                "\"ports\":[{\"name\":\"80-8080\",\"protocol\":\"TCP\","
                                "\"port\":80,\"targetPort\":8080}],\"selector\":{\"app\":"
                                "\"s1\"},\"type\":\"ClusterIP\"},\"status\":{\"loadBalancer\":"
                                "{}}}",
                                "u-1", used, &svc, &inv),
                 0);
    ip = ipv4(AT_STR(svc, "spec", "clusterIP", NULL));
    /* dynamic addresses come from 10.96.1.1 .. 10.111.255.254 */
    cr_assert(ip > 0x0a600100u && ip < 0x0a6fffffu, "%s", AT_STR(svc, "spec", "clusterIP", NULL));
    snprintf(want, sizeof(want),
             "{\"kind\":\"Service\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"s1\","
             "\"namespace\":\"default\",\"uid\":\"u-1\",\"resourceVersion\":\"1\","
             "\"creationTimestamp\":\"" CREATED "\",\"labels\":{\"app\":\"s1\"}},\"spec\":{"
             "\"ports\":[{\"name\":\"80-8080\",\"protocol\":\"TCP\",\"port\":80,\"targetPort\":"
             "8080}],\"selector\":{\"app\":\"s1\"},\"clusterIP\":\"%s\",\"clusterIPs\":[\"%s\"],"
             "\"type\":\"ClusterIP\",\"sessionAffinity\":\"None\",\"ipFamilies\":[\"IPv4\"],"
             "\"ipFamilyPolicy\":\"SingleStack\",\"internalTrafficPolicy\":\"Cluster\"},"
             "\"status\":{\"loadBalancer\":{}}}",
             AT_STR(svc, "spec", "clusterIP", NULL), AT_STR(svc, "spec", "clusterIP", NULL));
    out = print_free(svc);
    cr_assert_str_eq(out, want);
    free(out);
    alloc_used_free(used);
}

Test(alloc, service_defaults_by_type)
{
    struct alloc_used *used = alloc_used_new();
    struct alloc_invalid inv;
    cJSON *svc;

    /* no type: ClusterIP; targetPort from port; ClientIP affinity gets its timeout */
    cr_assert_eq(create_service("{\"metadata\":{\"name\":\"a\"},\"spec\":{\"sessionAffinity\":"
                                "\"ClientIP\",\"ports\":[{\"port\":81}]}}",
                                "u-a", used, &svc, &inv),
                 0);
    cr_assert_str_eq(AT_STR(svc, "spec", "type", NULL), "ClusterIP");
    cr_assert_eq(AT_NUM(PORT(svc, 0, "targetPort")), 81);
    cr_assert_eq(AT_NUM(svc, "spec", "sessionAffinityConfig", "clientIP", "timeoutSeconds", NULL),
                 10800);
    cr_assert_null(at(svc, "spec", "externalTrafficPolicy", NULL));
    cJSON_Delete(svc);

    /* LoadBalancer: node port, externalTrafficPolicy Cluster, allocateLoadBalancerNodePorts */
    cr_assert_eq(create_service("{\"metadata\":{\"name\":\"lb\"},\"spec\":{\"type\":"
                                "\"LoadBalancer\",\"ports\":[{\"port\":443,\"targetPort\":"
                                "\"https\"}]}}",
                                "u-lb", used, &svc, &inv),
                 0);
    cr_assert_str_eq(AT_STR(svc, "spec", "externalTrafficPolicy", NULL), "Cluster");
    cr_assert(cJSON_IsTrue(at(svc, "spec", "allocateLoadBalancerNodePorts", NULL)));
    cr_assert_geq(AT_NUM(PORT(svc, 0, "nodePort")), 30086);
    cr_assert_leq(AT_NUM(PORT(svc, 0, "nodePort")), 32767);
    cr_assert_str_eq(AT_STR(PORT(svc, 0, "targetPort")), "https");
    cr_assert_null(at(svc, "spec", "healthCheckNodePort", NULL));
    cJSON_Delete(svc);

    /* LoadBalancer without node ports, and Local traffic: a health check port only */
    cr_assert_eq(create_service("{\"metadata\":{\"name\":\"lb2\"},\"spec\":{\"type\":"
                                "\"LoadBalancer\",\"allocateLoadBalancerNodePorts\":false,"
                                "\"externalTrafficPolicy\":\"Local\",\"ports\":[{\"port\":443}]}}",
                                "u-lb2", used, &svc, &inv),
                 0);
    cr_assert_null(at(PORT(svc, 0, "nodePort")));
    cr_assert_geq(AT_NUM(svc, "spec", "healthCheckNodePort", NULL), 30000);
    cJSON_Delete(svc);

    /* ExternalName: no IPs, families or internal traffic policy */
    cr_assert_eq(create_service("{\"metadata\":{\"name\":\"ext\"},\"spec\":{\"type\":"
                                "\"ExternalName\",\"externalName\":\"db.example.com\"}}",
                                "u-ext", used, &svc, &inv),
                 0);
    cr_assert_null(at(svc, "spec", "clusterIP", NULL));
    cr_assert_null(at(svc, "spec", "ipFamilies", NULL));
    cr_assert_null(at(svc, "spec", "internalTrafficPolicy", NULL));
    cJSON_Delete(svc);

    /* headless with a selector: single stack; without one: RequireDualStack, both families */
    cr_assert_eq(create_service("{\"metadata\":{\"name\":\"h1\"},\"spec\":{\"clusterIP\":\"None\","
                                "\"selector\":{\"app\":\"h\"}}}",
                                "u-h1", used, &svc, &inv),
                 0);
    cr_assert_str_eq(AT_STR(svc, "spec", "ipFamilyPolicy", NULL), "SingleStack");
    cr_assert_eq(cJSON_GetArraySize(at(svc, "spec", "ipFamilies", NULL)), 1);
    cr_assert_str_eq(cJSON_GetArrayItem(at(svc, "spec", "clusterIPs", NULL), 0)->valuestring,
                     "None");
    cJSON_Delete(svc);
    cr_assert_eq(create_service("{\"metadata\":{\"name\":\"h2\"},\"spec\":{\"clusterIPs\":["
                                "\"None\"]}}",
                                "u-h2", used, &svc, &inv),
                 0);
    cr_assert_str_eq(AT_STR(svc, "spec", "clusterIP", NULL), "None");
    cr_assert_str_eq(AT_STR(svc, "spec", "ipFamilyPolicy", NULL), "RequireDualStack");
    cr_assert_str_eq(cJSON_GetArrayItem(at(svc, "spec", "ipFamilies", NULL), 1)->valuestring,
                     "IPv6");
    cJSON_Delete(svc);
    alloc_used_free(used);
}

Test(alloc, service_ips_and_ports_in_use_or_out_of_range_are_422)
{
    struct alloc_used *used = alloc_used_new();
    struct alloc_invalid inv;
    cJSON *held = parse("{\"spec\":{\"clusterIP\":\"10.96.0.10\",\"clusterIPs\":[\"10.96.0.10\"],"
                        "\"ports\":[{\"port\":80,\"nodePort\":30080}]}}");
    cJSON *svc;

    alloc_used_add(used, held);
    cJSON_Delete(held);
    cr_assert_eq(create_service("{\"metadata\":{\"name\":\"s\"},\"spec\":{\"clusterIP\":"
                                "\"10.96.0.10\"}}",
                                "u", used, &svc, &inv),
                 -EDOM);
    cr_assert_str_eq(inv.message, "Service \"s\" is invalid: spec.clusterIPs: Invalid value: "
                                  "[]string{\"10.96.0.10\"}: failed to allocate IP 10.96.0.10: "
                                  "provided IP is already allocated");
    cr_assert_str_eq(inv.field, "spec.clusterIPs");
    cr_assert_str_eq(inv.reason, "FieldValueInvalid");
    cr_assert_str_eq(inv.detail, "Invalid value: []string{\"10.96.0.10\"}: failed to allocate IP "
                                 "10.96.0.10: provided IP is already allocated");
    cJSON_Delete(svc);

    static const char *const out_of_range[] = {"10.0.0.1", "10.96.0.0", "10.111.255.255",
                                               "10.112.0.1"};
    for (size_t i = 0; i < 4; i++) {
        char json[256];
        char want[512];
        snprintf(json, sizeof(json),
                 "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"clusterIP\":"
                 "\"%s\"}}",
                 out_of_range[i]);
        cr_assert_eq(create_service(json, "u", used, &svc, &inv), -EDOM, "%s", out_of_range[i]);
        snprintf(want, sizeof(want),
                 "Service \"s\" is invalid: spec.clusterIPs: Invalid value: []string{\"%s\"}: "
                 "failed to allocate IP %s: the provided IP (%s) is not in the valid range. The "
                 "range of valid IPs is 10.96.0.0/12",
                 out_of_range[i], out_of_range[i], out_of_range[i]);
        cr_assert_str_eq(inv.message, want);
        cJSON_Delete(svc);
    }
    cr_assert_eq(create_service("{\"metadata\":{\"name\":\"s\"},\"spec\":{\"clusterIP\":"
                                "\"10.96.0.300\"}}",
                                "u", used, &svc, &inv),
                 -EDOM);
    cr_assert_str_eq(inv.message, "Service \"s\" is invalid: spec.clusterIPs[0]: Invalid value: "
                                  "\"10.96.0.300\": must be a valid IP address, (e.g. 10.9.8.7 or "
                                  "2001:db8::ffff)");
    cJSON_Delete(svc);
    /* the low band is free for users to pick */
    cr_assert_eq(create_service("{\"metadata\":{\"name\":\"s\"},\"spec\":{\"clusterIP\":"
                                "\"10.96.0.11\"}}",
                                "u", used, &svc, &inv),
                 0);
    cr_assert_str_eq(AT_STR(svc, "spec", "clusterIP", NULL), "10.96.0.11");
    cJSON_Delete(svc);

    cr_assert_eq(create_service("{\"metadata\":{\"name\":\"np\"},\"spec\":{\"type\":\"NodePort\","
                                "\"ports\":[{\"port\":80,\"nodePort\":30080}]}}",
                                "u", used, &svc, &inv),
                 -EDOM);
    cr_assert_str_eq(inv.message, "Service \"np\" is invalid: spec.ports[0].nodePort: Invalid "
                                  "value: 30080: provided port is already allocated");
    cJSON_Delete(svc);
    cr_assert_eq(create_service("{\"metadata\":{\"name\":\"np\"},\"spec\":{\"type\":\"NodePort\","
                                "\"ports\":[{\"port\":80},{\"port\":81,\"nodePort\":80}]}}",
                                "u", used, &svc, &inv),
                 -EDOM);
    cr_assert_str_eq(inv.message, "Service \"np\" is invalid: spec.ports[1].nodePort: Invalid "
                                  "value: 80: provided port is not in the valid range. The range "
                                  "of valid ports is 30000-32767");
    cJSON_Delete(svc);
    cr_assert_eq(create_service("{\"metadata\":{\"name\":\"c\"},\"spec\":{\"ports\":[{\"port\":"
                                "80,\"nodePort\":30001}]}}",
                                "u", used, &svc, &inv),
                 -EDOM);
    cr_assert_str_eq(inv.message, "Service \"c\" is invalid: spec.ports[0].nodePort: Forbidden: "
                                  "may not be used when `type` is 'ClusterIP'");
    cr_assert_str_eq(inv.reason, "FieldValueForbidden");
    cJSON_Delete(svc);
    /* a single-stack IPv4 cluster */
    cr_assert_eq(create_service("{\"metadata\":{\"name\":\"d\"},\"spec\":{\"ipFamilyPolicy\":"
                                "\"RequireDualStack\"}}",
                                "u", used, &svc, &inv),
                 -EDOM);
    cr_assert_str_eq(inv.message, "Service \"d\" is invalid: spec.ipFamilyPolicy: Invalid value: "
                                  "\"RequireDualStack\": this cluster is not configured for "
                                  "dual-stack services");
    cJSON_Delete(svc);
    cr_assert_eq(create_service("{\"metadata\":{\"name\":\"d\"},\"spec\":{\"ipFamilies\":["
                                "\"IPv6\"]}}",
                                "u", used, &svc, &inv),
                 -EDOM);
    cr_assert_str_eq(inv.message, "Service \"d\" is invalid: spec.ipFamilies[0]: Invalid value: "
                                  "\"IPv6\": not configured on this cluster");
    cJSON_Delete(svc);
    alloc_used_free(used);
}

/* Ports with the same number share a node port (53/TCP and 53/UDP); one asked for by a later
 * port is claimed for the earlier one. */
Test(alloc, service_ports_with_one_number_share_a_node_port)
{
    struct alloc_used *used = alloc_used_new();
    struct alloc_invalid inv;
    const cJSON *ports;
    cJSON *svc;

    cr_assert_eq(create_service("{\"metadata\":{\"name\":\"dns\"},\"spec\":{\"type\":"
                                "\"NodePort\",\"ports\":[{\"name\":\"t\",\"port\":53},{\"name\":"
                                "\"u\",\"port\":53,\"protocol\":\"UDP\",\"nodePort\":31053},{"
                                "\"name\":\"m\",\"port\":9153}]}}",
                                "u", used, &svc, &inv),
                 0, "%s", inv.message);
    ports = at(svc, "spec", "ports", NULL);
    cr_assert_eq(AT_NUM(cJSON_GetArrayItem(ports, 0), "nodePort", NULL), 31053);
    cr_assert_eq(AT_NUM(cJSON_GetArrayItem(ports, 1), "nodePort", NULL), 31053);
    cr_assert_neq(AT_NUM(cJSON_GetArrayItem(ports, 2), "nodePort", NULL), 31053);
    cJSON_Delete(svc);
    alloc_used_free(used);
}

/* Allocations never repeat while the used set grows (the simulator rebuilds it from the
 * store for each create). */
Test(alloc, service_allocations_are_unique)
{
    struct alloc_used *used = alloc_used_new();
    struct alloc_invalid inv;
    static uint32_t ips[400];
    static double node_ports[400];

    for (int i = 0; i < 400; i++) {
        char uid[32];
        cJSON *svc;
        snprintf(uid, sizeof(uid), "uid-%d", i % 7); /* colliding seeds must still differ */
        cr_assert_eq(create_service("{\"metadata\":{\"name\":\"s\"},\"spec\":{\"type\":"
                                    "\"NodePort\",\"ports\":[{\"port\":80}]}}",
                                    uid, used, &svc, &inv),
                     0, "%s", inv.message);
        ips[i] = ipv4(AT_STR(svc, "spec", "clusterIP", NULL));
        node_ports[i] = AT_NUM(PORT(svc, 0, "nodePort"));
        for (int j = 0; j < i; j++) {
            cr_assert_neq(ips[i], ips[j], "service %d got service %d's IP", i, j);
            cr_assert_neq(node_ports[i], node_ports[j], "service %d got %d's node port", i, j);
        }
        alloc_used_add(used, svc);
        cJSON_Delete(svc);
    }
    alloc_used_free(used);
}

/* When the dynamic part of the node port range is used up, the low band is used, then the
 * create fails with a 422, never loops. */
Test(alloc, node_port_range_exhaustion_is_422)
{
    struct alloc_used *used = alloc_used_new();
    struct alloc_invalid inv;
    int n = 0;
    int rc = 0;

    while (rc == 0 && n < 3000) {
        cJSON *svc;
        rc = create_service("{\"metadata\":{\"name\":\"s\"},\"spec\":{\"type\":\"NodePort\","
                            "\"ports\":[{\"port\":80}]}}",
                            "u", used, &svc, &inv);
        if (rc == 0) {
            alloc_used_add(used, svc);
            n++;
        }
        cJSON_Delete(svc);
    }
    cr_assert_eq(n, 2768, "allocated %d node ports", n);
    cr_assert_eq(rc, -EDOM);
    cr_assert(strstr(inv.message, "failed to allocate a nodePort: range is full") != NULL, "%s",
              inv.message);
    alloc_used_free(used);
}
