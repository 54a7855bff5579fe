/*
 * test_printers.c - kube-apiserver 1.34's Table printers through proxy/printers.h: the cells
 * of each kind's row (vectors from pkg/printers/internalversion/printers_test.go where it
 * has them, turned into the v1 JSON the apiserver holds and printed wide, as the server
 * prints), HumanDuration ages, RFC 3339 times, v1 defaulting, label and selector strings,
 * and the columnDefinitions bytes kubectl turns into headers.
 *
 * "now" is fixed at 2024-01-01T01:00:00Z. Most rows are compared as JSON values (a cell
 * that is an int64 in Go must be a number, a string a string); the encodings that matter
 * byte for byte ("<none>" as \u003cnone\u003e, pod row conditions) are compared as bytes.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "proxy/printers.h"

#define NOW_S 1704070800LL /* 2024-01-01T01:00:00Z */
#define NOW_NS (NOW_S * 1000000000LL)

/* ---- helpers ------------------------------------------------------------------------------ */

static const struct printer *must_find(const char *group, const char *resource)
{
    const struct printer *p = printers_find(group, resource);

    cr_assert_not_null(p, "no printer for %s/%s", group, resource);
    return p;
}

/* The raw row bytes printed for <json> (NULL json: a NULL object). */
static char *row_bytes(const struct printer *p, const char *json)
{
    cJSON *obj = json ? cJSON_Parse(json) : NULL;
    size_t len = 0;
    char *out;

    cr_assert(json == NULL || obj != NULL, "bad test JSON: %s", json);
    out = printers_cells_new(p, obj, NOW_NS, &len);
    cr_assert_eq(strlen(out), len);
    cJSON_Delete(obj);
    return out;
}

/* The row of <json> parsed back: {"cells":[...][,"conditions":[...]]}. */
static cJSON *row_of(const struct printer *p, const char *json)
{
    char *raw = row_bytes(p, json);
    size_t n = strlen(raw);
    char *wrapped = malloc(n + 3);
    cJSON *row;

    wrapped[0] = '{';
    memcpy(wrapped + 1, raw, n);
    memcpy(wrapped + 1 + n, "}", 2);
    row = cJSON_Parse(wrapped);
    cr_assert_not_null(row, "the row is not JSON: %s", raw);
    free(wrapped);
    free(raw);
    return row;
}

/* Asserts the cells of <json> equal the JSON array <want> (types included). */
static void expect_cells(const char *group, const char *resource, const char *json,
                         const char *want)
{
    cJSON *row = row_of(must_find(group, resource), json);
    cJSON *w = cJSON_Parse(want);
    char *got;

    cr_assert_not_null(w, "bad expected JSON: %s", want);
    got = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(row, "cells"));
    cr_assert(cJSON_Compare(cJSON_GetObjectItemCaseSensitive(row, "cells"), w, true),
              "%s/%s %s\n  got  %s\n  want %s", group, resource, json, got, want);
    free(got);
    cJSON_Delete(w);
    cJSON_Delete(row);
}

/* An RFC 3339 UTC time <ago> seconds before now. */
static void ts_ago(long long ago, char *out, size_t cap)
{
    time_t t = (time_t)(NOW_S - ago);
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The Name cells of a kind's columnDefinitions as "Name:priority,..." */
static char *column_names(const struct printer *p)
{
    cJSON *cols = cJSON_Parse(printers_columns(p)), *c;
    size_t cap = 1024, len = 0;
    char *out = calloc(1, cap);

    cr_assert_not_null(cols, "columnDefinitions are not JSON");
    cJSON_ArrayForEach(c, cols)
    {
        len += (size_t)snprintf(out + len, cap - len, "%s%s:%d", len ? "," : "",
                                cJSON_GetObjectItem(c, "name")->valuestring,
                                cJSON_GetObjectItem(c, "priority")->valueint);
        cr_assert_lt(len, cap);
    }
    cJSON_Delete(cols);
    return out;
}

#define META "\"metadata\":{\"name\":\"x\",\"creationTimestamp\":\"2024-01-01T00:00:00Z\"}"

/* ---- time: HumanDuration and RFC 3339 ------------------------------------------------------ */

Test(printers, ages_follow_human_duration)
{
    static const struct {
        long long ago;
        const char *age;
    } cases[] = {
        {-3, "<invalid>"},
        {-1, "0s"},
        {0, "0s"},
        {119, "119s"},
        {120, "2m"},
        {121, "2m1s"},
        {599, "9m59s"},
        {600, "10m"},
        {10799, "179m"},
        {10800, "3h"},
        {3 * 3600 + 60, "3h1m"},
        {8 * 3600, "8h"},
        {47 * 3600 + 3599, "47h"},
        {48 * 3600, "2d"},
        {49 * 3600, "2d1h"},
        {8 * 86400, "8d"},
        {730 * 86400, "2y"},
        {731 * 86400, "2y1d"},
        {8 * 365 * 86400, "8y"},
        {10 * 365 * 86400LL, "10y"},
    };
    char ts[40], json[160], want[96];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ts_ago(cases[i].ago, ts, sizeof(ts));
        snprintf(json, sizeof(json), "{\"metadata\":{\"name\":\"c\",\"creationTimestamp\":\"%s\"}}",
                 ts);
        snprintf(want, sizeof(want), "[\"c\",0,\"%s\"]", cases[i].age);
        expect_cells("", "configmaps", json, want);
    }
}

Test(printers, times_parse_as_go_rfc3339)
{
    /* 1.9 s in the future is int(-1.9) = -1 second: "0s", as printers_test.go's objects */
    expect_cells("", "configmaps",
                 "{\"metadata\":{\"name\":\"c\",\"creationTimestamp\":\"2024-01-01T01:00:01.9Z\"}}",
                 "[\"c\",0,\"0s\"]");
    expect_cells("", "configmaps",
                 "{\"metadata\":{\"name\":\"c\",\"creationTimestamp\":"
                 "\"2024-01-01T02:59:00+02:00\"}}",
                 "[\"c\",0,\"60s\"]");
    expect_cells("", "configmaps",
                 "{\"metadata\":{\"name\":\"c\",\"creationTimestamp\":"
                 "\"2023-12-31T16:30:00-05:30\"}}",
                 "[\"c\",0,\"3h\"]");
    expect_cells("", "configmaps",
                 "{\"metadata\":{\"name\":\"c\",\"creationTimestamp\":"
                 "\"2024-01-01T00:57:59.900000001Z\"}}",
                 "[\"c\",0,\"2m\"]");
    /* what Go's parser refuses, null, and the zero time all print as <unknown> */
    static const char *const unknown[] = {
        "\"2024-01-01 00:00:00Z\"",  "\"2024-01-01T00:00:00\"",
        "\"2024-02-30T00:00:00Z\"",  "\"2024-01-01t00:00:00z\"",
        "\"2024-01-01T00:00:00.Z\"", "null",
        "\"0001-01-01T00:00:00Z\"",  "42",
    };
    char json[160];
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
        snprintf(json, sizeof(json), "{\"metadata\":{\"name\":\"c\",\"creationTimestamp\":%s}}",
                 unknown[i]);
        expect_cells("", "configmaps", json, "[\"c\",0,\"<unknown>\"]");
    }
}

Test(printers, default_convertor_prints_name_and_utc_creation_time)
{
    char *got =
        row_bytes(printers_default(), "{\"metadata\":{\"name\":\"cm\",\"creationTimestamp\":"
                                      "\"2024-05-06T09:08:07.5+02:00\"}}");

    cr_assert_str_eq(got, "\"cells\":[\"cm\",\"2024-05-06T07:08:07Z\"]");
    free(got);
    got = row_bytes(printers_default(), "{\"metadata\":{\"name\":\"x\"}}");
    cr_assert_str_eq(got, "\"cells\":[\"x\",\"0001-01-01T00:00:00Z\"]");
    free(got);
    got = row_bytes(printers_default(), "{\"metadata\":{\"name\":\"y\",\"creationTimestamp\":"
                                        "\"0001-01-01T00:00:00Z\"}}");
    cr_assert_str_eq(got, "\"cells\":[\"y\",\"0001-01-01T00:00:00Z\"]");
    free(got);
}

/* apiextensions' convertor with a CRD's defaulted Age column (cellForJSONValue "date"). */
Test(printers, custom_resource_prints_name_and_age)
{
    static const struct {
        const char *ts, *cells;
    } cases[] = {
        {"\"2024-01-01T00:00:00Z\"", "\"cells\":[\"w\",\"AGE\"]"},
        {"\"\"", "\"cells\":[\"w\",\"\\u003cunknown\\u003e\"]"},
        {"\"yesterday\"", "\"cells\":[\"w\",\"\\u003cinvalid\\u003e\"]"},
        {"null", "\"cells\":[\"w\",null]"},
        {"5", "\"cells\":[\"w\",null]"},
    };
    char json[160], want[64];
    const char *cols = printers_columns(printers_custom());

    cr_assert_not_null(strstr(cols, "{\"name\":\"Age\",\"type\":\"date\",\"format\":\"\","
                                    "\"description\":\"CreationTimestamp is"),
                       "%s", cols);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got;
        snprintf(json, sizeof(json), "{\"metadata\":{\"name\":\"w\",\"creationTimestamp\":%s}}",
                 cases[i].ts);
        got = row_bytes(printers_custom(), json);
        if (strstr(cases[i].cells, "AGE")) {
            /* the same HumanDuration the Age of every built-in printer shows */
            char *cm = row_bytes(printers_find("", "configmaps"),
                                 "{\"metadata\":{\"name\":\"w\",\"creationTimestamp\":"
                                 "\"2024-01-01T00:00:00Z\"}}");
            char *age = strrchr(cm, ',');
            snprintf(want, sizeof(want), "\"cells\":[\"w\",%s", age + 1);
            free(cm);
        } else {
            snprintf(want, sizeof(want), "%s", cases[i].cells);
        }
        cr_assert_str_eq(got, want, "creationTimestamp %s", cases[i].ts);
        free(got);
    }
    char *got = row_bytes(printers_custom(), "{\"metadata\":{\"name\":\"w\"}}");
    cr_assert_str_eq(got, "\"cells\":[\"w\",null]");
    free(got);
}

/* ---- pods ------------------------------------------------------------------------------------ */

#define POD_META(extra)                                                                            \
    "\"metadata\":{\"name\":\"p\",\"creationTimestamp\":\"2024-01-01T00:00:00Z\"" extra "}"
#define NONE "\\u003cnone\\u003e"

Test(printers, pod_rows_follow_print_pod)
{
    static const struct {
        const char *pod;
        const char *row;
    } cases[] = {
        {"{" POD_META("") ",\"spec\":{\"containers\":[{},{}],\"nodeName\":\"n1\"},\"status\":{"
                          "\"phase\":\"Running\",\"podIP\":\"10.0.0.1\",\"containerStatuses\":[{"
                          "\"ready\":true,\"restartCount\":0,\"state\":{\"running\":{}}},{"
                          "\"ready\":false,\"restartCount\":2,\"state\":{\"waiting\":{\"reason\":"
                          "\"CrashLoopBackOff\"}},\"lastState\":{\"terminated\":{\"finishedAt\":"
                          "\"2024-01-01T00:55:00Z\"}}}]}}",
         "\"cells\":[\"p\",\"1/2\",\"CrashLoopBackOff\",\"2 (5m ago)\",\"60m\",\"10.0.0.1\","
         "\"n1\",\"" NONE "\",\"" NONE "\"]"},
        {"{" POD_META("") ",\"spec\":{\"containers\":[{}]},\"status\":{\"phase\":\"Pending\"}}",
         "\"cells\":[\"p\",\"0/1\",\"Pending\",\"0\",\"60m\",\"" NONE "\",\"" NONE "\",\"" NONE
         "\",\"" NONE "\"]"},
        {"{" POD_META("") ",\"spec\":{\"containers\":[{}]},\"status\":{\"phase\":\"Succeeded\","
                          "\"containerStatuses\":[{\"state\":{\"terminated\":{\"exitCode\":0,"
                          "\"reason\":\"Completed\"}}}]}}",
         "\"cells\":[\"p\",\"0/1\",\"Completed\",\"0\",\"60m\",\"" NONE "\",\"" NONE "\",\"" NONE
         "\",\"" NONE "\"],\"conditions\":[{\"type\":\"Completed\",\"status\":\"True\",\"reason\":"
         "\"Succeeded\",\"message\":\"The pod has completed successfully.\"}]"},
        {"{" POD_META("") ",\"spec\":{\"containers\":[{}]},\"status\":{\"phase\":\"Failed\","
                          "\"containerStatuses\":[{\"state\":{\"terminated\":{\"exitCode\":3}}}]}}",
         "\"cells\":[\"p\",\"0/1\",\"ExitCode:3\",\"0\",\"60m\",\"" NONE "\",\"" NONE "\",\"" NONE
         "\",\"" NONE "\"],\"conditions\":[{\"type\":\"Completed\",\"status\":\"True\",\"reason\":"
         "\"Failed\",\"message\":\"The pod failed.\"}]"},
        {"{" POD_META(",\"deletionTimestamp\":\"2024-01-01T00:59:00Z\"") ",\"spec\":{"
                                                                         "\"containers\":[{}]},"
                                                                         "\"status\":{\"phase\":"
                                                                         "\"Running\","
                                                                         "\"containerStatuses\":[{"
                                                                         "\"ready\":true,\"state\":"
                                                                         "{\"running\":{}}}]}}",
         "\"cells\":[\"p\",\"1/1\",\"Terminating\",\"0\",\"60m\",\"" NONE "\",\"" NONE "\",\"" NONE
         "\",\"" NONE "\"]"},
        {"{" POD_META("") ",\"spec\":{\"initContainers\":[{\"name\":\"i1\"},{\"name\":\"i2\"}],"
                          "\"containers\":[{}]},\"status\":{\"phase\":\"Pending\","
                          "\"initContainerStatuses\":[{\"name\":\"i1\",\"state\":{\"terminated\":{"
                          "\"exitCode\":0}}},{\"name\":\"i2\",\"state\":{\"running\":{}}}]}}",
         "\"cells\":[\"p\",\"0/1\",\"Init:1/2\",\"0\",\"60m\",\"" NONE "\",\"" NONE "\",\"" NONE
         "\",\"" NONE "\"]"},
        {"{" POD_META("") ",\"spec\":{\"initContainers\":[{\"name\":\"i1\"}],\"containers\":[{}]},"
                          "\"status\":{\"phase\":\"Pending\",\"initContainerStatuses\":[{\"name\":"
                          "\"i1\",\"state\":{\"terminated\":{\"exitCode\":1,\"signal\":9}}}]}}",
         "\"cells\":[\"p\",\"0/1\",\"Init:Signal:9\",\"0\",\"60m\",\"" NONE "\",\"" NONE
         "\",\"" NONE "\",\"" NONE "\"]"},
        {"{" POD_META("") ",\"spec\":{\"initContainers\":[{\"name\":\"side\",\"restartPolicy\":"
                          "\"Always\"}],\"containers\":[{}],\"readinessGates\":[{\"conditionType\":"
                          "\"g1\"}]},\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":"
                          "\"Initialized\",\"status\":\"True\"},{\"type\":\"g1\",\"status\":"
                          "\"True\"}],\"initContainerStatuses\":[{\"name\":\"side\",\"started\":"
                          "true,\"ready\":true,\"restartCount\":1,\"state\":{\"running\":{}}}],"
                          "\"containerStatuses\":[{\"ready\":true,\"state\":{\"running\":{}}}],"
                          "\"podIPs\":[{\"ip\":\"fd00::1\"}],\"nominatedNodeName\":\"n9\"}}",
         "\"cells\":[\"p\",\"2/2\",\"Running\",\"1\",\"60m\",\"fd00::1\",\"" NONE "\",\"n9\","
         "\"1/1\"]"},
        {"{" POD_META("") ",\"spec\":{\"containers\":[{}]},\"status\":{\"phase\":\"Pending\","
                          "\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
                          "\"reason\":\"SchedulingGated\"}]}}",
         "\"cells\":[\"p\",\"0/1\",\"SchedulingGated\",\"0\",\"60m\",\"" NONE "\",\"" NONE
         "\",\"" NONE "\",\"" NONE "\"]"},
        {"{\"metadata\":{\"resourceVersion\":\"7\"},\"spec\":{\"containers\":null},\"status\":{}}",
         "\"cells\":[\"\",\"0/0\",\"\",\"0\",\"\\u003cunknown\\u003e\",\"" NONE "\",\"" NONE
         "\",\"" NONE "\",\"" NONE "\"]"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = row_bytes(must_find("", "pods"), cases[i].pod);
        cr_assert_str_eq(got, cases[i].row, "case %zu: got %s", i, got);
        free(got);
    }
}

/* ---- core kinds -------------------------------------------------------------------------------
 */

Test(printers, configmaps_secrets_serviceaccounts_namespaces)
{
    expect_cells("", "configmaps",
                 "{" META ",\"data\":{\"a\":\"1\",\"b\":\"2\"},\"binaryData\":{\"c\":\"AA==\"}}",
                 "[\"x\",3,\"60m\"]");
    /* printers_test.go TestPrintSecret */
    expect_cells("", "secrets",
                 "{" META ",\"type\":\"kubernetes.io/service-account-token\",\"data\":{\"token\":"
                 "\"c2VjcmV0IGRhdGE=\"}}",
                 "[\"x\",\"kubernetes.io/service-account-token\",1,\"60m\"]");
    expect_cells("", "secrets", "{" META "}", "[\"x\",\"Opaque\",0,\"60m\"]"); /* defaulted */
    /* TestPrintServiceAccount */
    expect_cells("", "serviceaccounts",
                 "{" META ",\"secrets\":[{\"name\":\"Secret1\"},{\"name\":\"Secret2\"}]}",
                 "[\"x\",2,\"60m\"]");
    expect_cells("", "serviceaccounts", "{" META ",\"secrets\":[]}", "[\"x\",0,\"60m\"]");
    /* TestPrintNamespace; an empty phase reads Active after v1 defaulting */
    expect_cells("", "namespaces", "{" META ",\"status\":{\"phase\":\"FooStatus\"}}",
                 "[\"x\",\"FooStatus\",\"60m\"]");
    expect_cells("", "namespaces", "{\"metadata\":{\"name\":\"namespace2\"}}",
                 "[\"namespace2\",\"Active\",\"<unknown>\"]");
}

Test(printers, services_types_ports_and_external_ips)
{
    /* TestPrintService's shapes: CLUSTER-IP is clusterIPs[0], ports "port[:nodePort]/proto" */
    expect_cells("", "services",
                 "{" META ",\"spec\":{\"type\":\"ClusterIP\",\"clusterIP\":\"10.9.8.7\","
                 "\"clusterIPs\":[\"10.9.8.7\"],\"ports\":[{\"port\":2233,\"protocol\":\"TCP\"}],"
                 "\"selector\":{\"foo\":\"bar\",\"a-b\":\"c\"}}}",
                 "[\"x\",\"ClusterIP\",\"10.9.8.7\",\"<none>\",\"2233/TCP\",\"60m\","
                 "\"a-b=c,foo=bar\"]");
    expect_cells("", "services",
                 "{" META ",\"spec\":{\"type\":\"NodePort\",\"clusterIPs\":[\"10.9.8.7\"],"
                 "\"externalIPs\":[\"1.2.3.4\",\"5.6.7.8\"],\"ports\":[{\"port\":8888,"
                 "\"nodePort\":9999,\"protocol\":\"TCP\"},{\"port\":53,\"protocol\":\"UDP\"}]}}",
                 "[\"x\",\"NodePort\",\"10.9.8.7\",\"1.2.3.4,5.6.7.8\",\"8888:9999/TCP,53/UDP\","
                 "\"60m\",\"<none>\"]");
    expect_cells("", "services",
                 "{" META ",\"spec\":{\"type\":\"LoadBalancer\",\"clusterIPs\":[\"10.9.8.7\"],"
                 "\"ports\":[{\"port\":8888,\"nodePort\":9999,\"protocol\":\"TCP\"}]}}",
                 "[\"x\",\"LoadBalancer\",\"10.9.8.7\",\"<pending>\",\"8888:9999/TCP\",\"60m\","
                 "\"<none>\"]");
    /* the ingress set is sorted and deduplicated, not clipped (the server prints wide),
     * then externalIPs follow */
    expect_cells("", "services",
                 "{" META ",\"spec\":{\"type\":\"LoadBalancer\",\"clusterIPs\":[\"10.9.8.7\"],"
                 "\"externalIPs\":[\"9.9.9.9\"],\"ports\":[]},\"status\":{\"loadBalancer\":{"
                 "\"ingress\":[{\"ip\":\"3.4.5.6\"},{\"hostname\":\"lb.example.com\"},{\"ip\":"
                 "\"3.4.5.6\"},{\"ip\":\"2.3.4.5\"}]}}}",
                 "[\"x\",\"LoadBalancer\",\"10.9.8.7\","
                 "\"2.3.4.5,3.4.5.6,lb.example.com,9.9.9.9\",\"<none>\",\"60m\",\"<none>\"]");
    expect_cells("", "services",
                 "{" META ",\"spec\":{\"type\":\"ExternalName\",\"externalName\":\"my.db\"}}",
                 "[\"x\",\"ExternalName\",\"<none>\",\"my.db\",\"<none>\",\"60m\",\"<none>\"]");
    expect_cells("", "services", "{" META ",\"spec\":{\"type\":\"Other\"}}",
                 "[\"x\",\"Other\",\"<none>\",\"<unknown>\",\"<none>\",\"60m\",\"<none>\"]");
    /* v1 defaulting: type ClusterIP, protocol TCP */
    expect_cells("", "services",
                 "{" META ",\"spec\":{\"clusterIPs\":[\"None\"],\"ports\":[{\"port\":80}]}}",
                 "[\"x\",\"ClusterIP\",\"None\",\"<none>\",\"80/TCP\",\"60m\",\"<none>\"]");
}

Test(printers, nodes_status_roles_and_addresses)
{
    /* TestPrintNodeStatus, TestPrintNodeRole, TestPrintNode{Internal,External}IP, OSImage */
    static const struct {
        const char *node;
        const char *cells;
    } cases[] = {
        {"{\"metadata\":{\"name\":\"foo1\"},\"status\":{\"conditions\":[{\"type\":\"Ready\","
         "\"status\":\"True\"}]}}",
         "[\"foo1\",\"Ready\",\"<none>\",\"<unknown>\",\"\",\"<none>\",\"<none>\",\"<unknown>\","
         "\"<unknown>\",\"<unknown>\"]"},
        {"{\"metadata\":{\"name\":\"foo2\"},\"spec\":{\"unschedulable\":true},\"status\":{"
         "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
         "[\"foo2\",\"Ready,SchedulingDisabled\",\"<none>\",\"<unknown>\",\"\",\"<none>\","
         "\"<none>\",\"<unknown>\",\"<unknown>\",\"<unknown>\"]"},
        {"{\"metadata\":{\"name\":\"foo3\"},\"status\":{\"conditions\":[{\"type\":\"Ready\","
         "\"status\":\"False\"},{\"type\":\"Ready\",\"status\":\"True\"}]}}",
         "[\"foo3\",\"Ready\",\"<none>\",\"<unknown>\",\"\",\"<none>\",\"<none>\",\"<unknown>\","
         "\"<unknown>\",\"<unknown>\"]"},
        {"{\"metadata\":{\"name\":\"foo5\"},\"spec\":{\"unschedulable\":true},\"status\":{"
         "\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}",
         "[\"foo5\",\"NotReady,SchedulingDisabled\",\"<none>\",\"<unknown>\",\"\",\"<none>\","
         "\"<none>\",\"<unknown>\",\"<unknown>\",\"<unknown>\"]"},
        {"{\"metadata\":{\"name\":\"foo8\"},\"spec\":{\"unschedulable\":true},\"status\":{"
         "\"conditions\":[{\"type\":\"InvalidValue\",\"status\":\"True\"}]}}",
         "[\"foo8\",\"Unknown,SchedulingDisabled\",\"<none>\",\"<unknown>\",\"\",\"<none>\","
         "\"<none>\",\"<unknown>\",\"<unknown>\",\"<unknown>\"]"},
        {"{\"metadata\":{\"name\":\"foo10\",\"labels\":{\"node-role.kubernetes.io/master\":\"\","
         "\"node-role.kubernetes.io/control-plane\":\"\",\"node-role.kubernetes.io/proxy\":\"\","
         "\"kubernetes.io/role\":\"node\",\"node-role.kubernetes.io/\":\"x\"}}}",
         "[\"foo10\",\"Unknown\",\"control-plane,master,node,proxy\",\"<unknown>\",\"\","
         "\"<none>\",\"<none>\",\"<unknown>\",\"<unknown>\",\"<unknown>\"]"},
        {"{\"metadata\":{\"name\":\"foo3\",\"creationTimestamp\":\"2023-12-31T01:00:00Z\"},"
         "\"status\":{\"addresses\":[{\"type\":\"ExternalIP\",\"address\":\"2.2.2.2\"},{\"type\":"
         "\"InternalIP\",\"address\":\"3.3.3.3\"},{\"type\":\"ExternalIP\",\"address\":"
         "\"4.4.4.4\"}],\"nodeInfo\":{\"kubeletVersion\":\"v1.34.1\",\"osImage\":"
         "\"fake-os-image\",\"kernelVersion\":\"6.1.0\",\"containerRuntimeVersion\":"
         "\"foo://1.2.3\"}}}",
         "[\"foo3\",\"Unknown\",\"<none>\",\"24h\",\"v1.34.1\",\"3.3.3.3\",\"2.2.2.2\","
         "\"fake-os-image\",\"6.1.0\",\"foo://1.2.3\"]"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        expect_cells("", "nodes", cases[i].node, cases[i].cells);
    }
}

Test(printers, events_last_seen_source_and_count)
{
    /* TestPrintEvent (wide): timestamps 2 and 3 days before now */
    expect_cells("", "events",
                 "{\"metadata\":{\"name\":\"event2\"},\"involvedObject\":{\"kind\":\"Deployment\","
                 "\"name\":\"Deployment Name\",\"fieldPath\":\"spec.containers{foo}\"},\"reason\":"
                 "\"Event Reason\",\"message\":\"Message Data\",\"source\":{\"component\":"
                 "\"kubelet\",\"host\":\"Node1\"},\"firstTimestamp\":\"2023-12-29T01:00:00Z\","
                 "\"lastTimestamp\":\"2023-12-30T01:00:00Z\",\"count\":6,\"type\":\"Warning\"}",
                 "[\"2d\",\"Warning\",\"Event Reason\",\"deployment/Deployment Name\","
                 "\"spec.containers{foo}\",\"kubelet, Node1\",\"Message Data\",\"3d\",6,"
                 "\"event2\"]");
    /* no firstTimestamp: eventTime; no lastTimestamp: first seen */
    expect_cells("", "events",
                 "{\"metadata\":{\"name\":\"event5\"},\"involvedObject\":{\"kind\":\"Pod\"},"
                 "\"eventTime\":\"2023-12-29T01:00:00.000000Z\",\"count\":1,\"type\":\"Warning\","
                 "\"firstTimestamp\":null,\"lastTimestamp\":null}",
                 "[\"3d\",\"Warning\",\"\",\"pod\",\"\",\"\",\"\",\"3d\",1,\"event5\"]");
    /* a series: last observed time and its count */
    expect_cells("", "events",
                 "{\"metadata\":{\"name\":\"event6\"},\"involvedObject\":{\"kind\":\"Pod\","
                 "\"name\":\"p\"},\"series\":{\"count\":2,\"lastObservedTime\":"
                 "\"2023-12-30T01:00:00.000000Z\"},\"eventTime\":\"2023-12-29T01:00:00.000000Z\"}",
                 "[\"2d\",\"\",\"\",\"pod/p\",\"\",\"\",\"\",\"3d\",2,\"event6\"]");
    /* a singleton without count prints 1; the source falls back to reporting*; the message
     * is trimmed of Unicode white space */
    expect_cells("", "events",
                 "{\"metadata\":{\"name\":\"e\"},\"involvedObject\":{\"kind\":\"Node\",\"name\":"
                 "\"n\"},\"reportingComponent\":\"kubelet\",\"reportingInstance\":\"test\","
                 "\"message\":\" \\t\\u00a0hello world\\u3000\\n \",\"lastTimestamp\":"
                 "\"2024-01-01T00:59:30Z\",\"type\":\"Normal\",\"reason\":\"Started\"}",
                 "[\"30s\",\"Normal\",\"Started\",\"node/n\",\"\",\"kubelet, test\","
                 "\"hello world\",\"<unknown>\",1,\"e\"]");
}

Test(printers, replication_controllers_default_replicas_and_selector)
{
    expect_cells("", "replicationcontrollers",
                 "{" META ",\"spec\":{\"replicas\":5,\"selector\":{\"app\":\"a\"},\"template\":{"
                 "\"metadata\":{\"labels\":{\"app\":\"a\"}},\"spec\":{\"containers\":[{\"name\":"
                 "\"c1\",\"image\":\"i1\"},{\"name\":\"c2\",\"image\":\"i2\"}]}}},\"status\":{"
                 "\"replicas\":4,\"readyReplicas\":3}}",
                 "[\"x\",5,4,3,\"60m\",\"c1,c2\",\"i1,i2\",\"app=a\"]");
    /* SetDefaults_ReplicationController: replicas 1, the template's labels as selector */
    expect_cells("", "replicationcontrollers",
                 "{" META ",\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"z\":\"1\","
                 "\"app\":\"b\"}}}}}",
                 "[\"x\",1,0,0,\"60m\",\"\",\"\",\"app=b,z=1\"]");
    expect_cells("", "replicationcontrollers", "{" META "}",
                 "[\"x\",1,0,0,\"60m\",\"\",\"\",\"<none>\"]");
}

/* ---- apps, batch, certificates -----------------------------------------------------------------
 */

#define TEMPLATE                                                                                   \
    "\"template\":{\"spec\":{\"containers\":[{\"name\":\"fake-container1\",\"image\":"             \
    "\"fake-image1\"},{\"name\":\"fake-container2\",\"image\":\"fake-image2\"}]}}"

Test(printers, replicasets_and_deployments)
{
    /* TestPrintReplicaSet's shape, selector requirements sorted by key */
    expect_cells(
        "apps", "replicasets",
        "{" META ",\"spec\":{\"replicas\":5," TEMPLATE ",\"selector\":{\"matchLabels\":{"
        "\"tier\":\"web\"},\"matchExpressions\":[{\"key\":\"env\",\"operator\":\"In\","
        "\"values\":[\"prod\",\"dev\"]},{\"key\":\"zone\",\"operator\":\"DoesNotExist\"},"
        "{\"key\":\"app\",\"operator\":\"Exists\"},{\"key\":\"x\",\"operator\":\"NotIn\","
        "\"values\":[\"1\"]}]}},\"status\":{\"replicas\":5,\"readyReplicas\":2}}",
        "[\"x\",5,5,2,\"60m\",\"fake-container1,fake-container2\","
        "\"fake-image1,fake-image2\",\"app,env in (dev,prod),tier=web,x notin (1),!zone\"]");
    expect_cells("apps", "replicasets", "{" META ",\"spec\":{\"selector\":{}}}",
                 "[\"x\",1,0,0,\"60m\",\"\",\"\",\"<none>\"]");
    expect_cells("apps", "replicasets",
                 "{" META ",\"spec\":{\"selector\":{\"matchExpressions\":[{\"key\":\"a\","
                 "\"operator\":\"Bogus\"}]}}}",
                 "[\"x\",1,0,0,\"60m\",\"\",\"\",\"<error>\"]");
    expect_cells("apps", "replicasets",
                 "{" META ",\"spec\":{\"selector\":{\"matchExpressions\":[{\"key\":\"a\","
                 "\"operator\":\"In\",\"values\":[]}]}}}",
                 "[\"x\",1,0,0,\"60m\",\"\",\"\",\"<error>\"]");
    /* TestPrintDeployment: READY ready/desired, UP-TO-DATE and AVAILABLE are numbers */
    expect_cells("apps", "deployments",
                 "{" META ",\"spec\":{\"replicas\":5," TEMPLATE ",\"selector\":{\"matchLabels\":{"
                 "\"foo\":\"bar\"}}},\"status\":{\"replicas\":10,\"updatedReplicas\":2,"
                 "\"availableReplicas\":1,\"unavailableReplicas\":4,\"readyReplicas\":1}}",
                 "[\"x\",\"1/5\",2,1,\"60m\",\"fake-container1,fake-container2\","
                 "\"fake-image1,fake-image2\",\"foo=bar\"]");
    /* no selector prints "" (selector.String(), no <none>); a bad one "<invalid>" */
    expect_cells("apps", "deployments", "{" META "}", "[\"x\",\"0/1\",0,0,\"60m\",\"\",\"\",\"\"]");
    expect_cells("apps", "deployments",
                 "{" META ",\"spec\":{\"replicas\":0,\"selector\":{\"matchExpressions\":[{\"key\":"
                 "\"a\",\"operator\":\"Exists\",\"values\":[\"v\"]}]}}}",
                 "[\"x\",\"0/0\",0,0,\"60m\",\"\",\"\",\"<invalid>\"]");
}

Test(printers, jobs_status_completions_and_duration)
{
    /* TestPrintJob, printed wide */
    expect_cells("batch", "jobs",
                 "{" META ",\"spec\":{\"completions\":2," TEMPLATE ",\"selector\":{\"matchLabels\":"
                 "{\"job-label\":\"job-label-value\"}}},\"status\":{\"succeeded\":1}}",
                 "[\"x\",\"Running\",\"1/2\",\"\",\"60m\",\"fake-container1,fake-container2\","
                 "\"fake-image1,fake-image2\",\"job-label=job-label-value\"]");
    expect_cells("batch", "jobs",
                 "{\"metadata\":{\"name\":\"job3\",\"creationTimestamp\":\"2014-01-01T01:00:00Z\"},"
                 "\"status\":{\"startTime\":\"2024-01-01T01:01:00Z\",\"completionTime\":"
                 "\"2024-01-01T01:31:00Z\"}}",
                 "[\"job3\",\"Running\",\"0/1\",\"30m\",\"10y\",\"\",\"\",\"<none>\"]");
    expect_cells("batch", "jobs",
                 "{" META ",\"spec\":{\"parallelism\":3},\"status\":{\"succeeded\":2,"
                 "\"startTime\":\"2024-01-01T00:40:00Z\"}}",
                 "[\"x\",\"Running\",\"2/1 of 3\",\"20m\",\"60m\",\"\",\"\",\"<none>\"]");
    static const struct {
        const char *extra;
        const char *status;
    } st[] = {
        {"\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\"}]", "Complete"},
        {"\"conditions\":[{\"type\":\"Failed\",\"status\":\"True\"}]", "Failed"},
        {"\"conditions\":[{\"type\":\"Suspended\",\"status\":\"True\"}]", "Suspended"},
        {"\"conditions\":[{\"type\":\"FailureTarget\",\"status\":\"True\"}]", "FailureTarget"},
        {"\"conditions\":[{\"type\":\"Complete\",\"status\":\"False\"},{\"type\":\"Complete\","
         "\"status\":\"True\"}]",
         "Running"},
    };
    char json[400], want[160];
    for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
        snprintf(json, sizeof(json), "{" META ",\"status\":{%s}}", st[i].extra);
        snprintf(want, sizeof(want), "[\"x\",\"%s\",\"0/1\",\"\",\"60m\",\"\",\"\",\"<none>\"]",
                 st[i].status);
        expect_cells("batch", "jobs", json, want);
    }
    expect_cells("batch", "jobs",
                 "{\"metadata\":{\"name\":\"job9\",\"creationTimestamp\":\"2024-01-01T00:00:00Z\","
                 "\"deletionTimestamp\":\"2024-01-01T00:59:00Z\"}}",
                 "[\"job9\",\"Terminating\",\"0/1\",\"\",\"60m\",\"\",\"\",\"<none>\"]");
}

Test(printers, certificate_signing_requests)
{
    /* TestPrintCertificateSigningRequest */
    expect_cells("certificates.k8s.io", "certificatesigningrequests",
                 "{" META ",\"spec\":{\"signerName\":\"example.com/signer\",\"username\":"
                 "\"CSRRequestor\",\"expirationSeconds\":600},\"status\":{}}",
                 "[\"x\",\"60m\",\"example.com/signer\",\"CSRRequestor\",\"10m\",\"Pending\"]");
    expect_cells("certificates.k8s.io", "certificatesigningrequests",
                 "{" META ",\"spec\":{\"username\":\"CSRRequestor\",\"expirationSeconds\":86400},"
                 "\"status\":{\"conditions\":[{\"type\":\"Approved\"},{\"type\":\"Failed\"}],"
                 "\"certificate\":\"Y2VydA==\"}}",
                 "[\"x\",\"60m\",\"<none>\",\"CSRRequestor\",\"24h\",\"Approved,Failed,Issued\"]");
    expect_cells("certificates.k8s.io", "certificatesigningrequests",
                 "{" META ",\"status\":{\"conditions\":[{\"type\":\"Approved\"},{\"type\":"
                 "\"Denied\"}]}}",
                 "[\"x\",\"60m\",\"<none>\",\"\",\"<none>\",\"Denied\"]");
}

/* ---- columns and the table ----------------------------------------------------------------------
 */

Test(printers, column_names_and_wide_priorities)
{
    static const struct {
        const char *group, *resource, *cols;
    } cases[] = {
        {"", "pods",
         "Name:0,Ready:0,Status:0,Restarts:0,Age:0,IP:1,Node:1,Nominated Node:1,"
         "Readiness Gates:1"},
        {"", "configmaps", "Name:0,Data:0,Age:0"},
        {"", "secrets", "Name:0,Type:0,Data:0,Age:0"},
        {"", "services", "Name:0,Type:0,Cluster-IP:0,External-IP:0,Port(s):0,Age:0,Selector:1"},
        {"", "namespaces", "Name:0,Status:0,Age:0"},
        {"", "nodes",
         "Name:0,Status:0,Roles:0,Age:0,Version:0,Internal-IP:1,External-IP:1,"
         "OS-Image:1,Kernel-Version:1,Container-Runtime:1"},
        {"", "events",
         "Last Seen:0,Type:0,Reason:0,Object:0,Subobject:1,Source:1,Message:0,"
         "First Seen:1,Count:1,Name:1"},
        {"", "serviceaccounts", "Name:0,Secrets:0,Age:0"},
        {"", "replicationcontrollers",
         "Name:0,Desired:0,Current:0,Ready:0,Age:0,Containers:1,"
         "Images:1,Selector:1"},
        {"batch", "jobs",
         "Name:0,Status:0,Completions:0,Duration:0,Age:0,Containers:1,Images:1,"
         "Selector:1"},
        {"certificates.k8s.io", "certificatesigningrequests",
         "Name:0,Age:0,SignerName:0,Requestor:0,RequestedDuration:0,Condition:0"},
        {"apps", "deployments",
         "Name:0,Ready:0,Up-to-date:0,Available:0,Age:0,Containers:1,"
         "Images:1,Selector:1"},
        {"apps", "replicasets",
         "Name:0,Desired:0,Current:0,Ready:0,Age:0,Containers:1,Images:1,"
         "Selector:1"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct printer *p = must_find(cases[i].group, cases[i].resource);
        char *got = column_names(p);
        cJSON *row = row_of(p, NULL), *cols = cJSON_Parse(printers_columns(p));
        cr_assert_str_eq(got, cases[i].cols, "%s", cases[i].resource);
        /* every row has one cell per column, even for an object with nothing in it */
        cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(row, "cells")),
                     cJSON_GetArraySize(cols), "%s", cases[i].resource);
        free(got);
        cJSON_Delete(row);
        cJSON_Delete(cols);
    }
}

Test(printers, column_definitions_are_go_encoded)
{
    const char *pods = printers_columns(must_find("", "pods"));
    const char *def = printers_columns(printers_default());
    const char *ev = printers_columns(must_find("", "events"));

    /* the first column, whole: type, format, the ObjectMeta doc, priority */
    const char *first =
        "[{\"name\":\"Name\",\"type\":\"string\",\"format\":\"name\",\"description\":"
        "\"Name must be unique within a namespace. Is required when creating "
        "resources, although some resources may allow a client to request the "
        "generation of an appropriate name automatically. Name is primarily "
        "intended for creation idempotence and configuration definition. Cannot "
        "be updated. More info: https://kubernetes.io/docs/concepts/overview/"
        "working-with-objects/names#names\",\"priority\":0},";
    char *names;

    cr_assert(strncmp(pods, first, strlen(first)) == 0, "%.460s", pods);
    cr_assert_not_null(strstr(pods, "have status equal to \\\"True\\\" More info:"));
    cr_assert_not_null(strstr(def, "{\"name\":\"Created At\",\"type\":\"date\",\"format\":\"\","
                                   "\"description\":\"CreationTimestamp is a timestamp"));
    cr_assert_not_null(strstr(def, "is in UTC.\\n\\nPopulated by the system."));
    cr_assert_not_null(strstr(ev, "{\"name\":\"Name\",\"type\":\"string\",\"format\":\"name\","));
    cr_assert(def[strlen(def) - 1] == ']' && printers_columns(printers_default()) == def,
              "built once and kept");
    names = column_names(printers_default());
    cr_assert_str_eq(names, "Name:0,Created At:0");
    free(names);
}

Test(printers, printers_exist_only_for_the_kinds_kube_prints)
{
    static const char *const have[][2] = {
        {"", "pods"},
        {"", "configmaps"},
        {"", "secrets"},
        {"", "services"},
        {"", "namespaces"},
        {"", "nodes"},
        {"", "events"},
        {"", "serviceaccounts"},
        {"", "replicationcontrollers"},
        {"batch", "jobs"},
        {"apps", "deployments"},
        {"apps", "replicasets"},
        {"certificates.k8s.io", "certificatesigningrequests"},
    };
    for (size_t i = 0; i < sizeof(have) / sizeof(have[0]); i++) {
        cr_assert_not_null(printers_find(have[i][0], have[i][1]), "%s", have[i][1]);
    }
    cr_assert_null(printers_find("example.com", "widgets"));
    cr_assert_null(printers_find("apps", "daemonsets"));
    cr_assert_null(printers_find("events.k8s.io", "events"));
    cr_assert_null(printers_find("apps", "pods"));
}

Test(printers, mistyped_fields_read_as_zero_values)
{
    /* what a hostile upstream could send: wrong types everywhere, huge numbers */
    expect_cells("", "configmaps",
                 "{\"metadata\":{\"name\":7,\"creationTimestamp\":{}},\"data\":\"nope\"}",
                 "[\"\",0,\"<unknown>\"]");
    expect_cells("apps", "deployments",
                 "{\"metadata\":[],\"spec\":{\"replicas\":1e300,\"template\":{\"spec\":{"
                 "\"containers\":{\"name\":\"c\"}}},\"selector\":{\"matchLabels\":[1]}},\"status\":"
                 "{\"readyReplicas\":-1e300}}",
                 "[\"\",\"-2147483648/2147483647\",0,0,\"<unknown>\",\"\",\"\",\"\"]");
    expect_cells("", "services",
                 "{\"spec\":{\"ports\":\"x\",\"clusterIPs\":[1],\"externalIPs\":7,\"selector\":"
                 "{\"a\":1}}}",
                 "[\"\",\"ClusterIP\",\"<none>\",\"<none>\",\"<none>\",\"<unknown>\",\"a=\"]");
}
