/*
 * test_negotiation.c - content negotiation of cached LIST/WATCH/GET answers (SEMANTICS 1.7,
 * 2.6, 2.9, 8): the Accept matrix and the 406 body, PartialObjectMetadata[List] built from the
 * stored metadata bytes, meta.k8s.io Tables, gzip above 128 KiB, and pretty printing.
 *
 * Each Test runs the real binary: `kwp sim` on port 0 (proc_spawn reads the bound URL), and
 * for the proxy cases `kwp proxy` in front of it, ready when /readyz answers 200. Expected
 * bytes are built from the plain JSON the same server returns: a PartialObjectMetadata must
 * carry the exact bytes of the object's "metadata" member, a gzip body must inflate to the
 * uncompressed one, and a pretty body must equal Python's json.dumps(indent=2), which for
 * these inputs is the layout of Go's json.Indent (2 spaces, "key": value, {} and [] kept,
 * no trailing newline). Watches end by timeoutSeconds, so whole streams are read with one
 * request; nothing sleeps to wait for state.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>
#include <criterion/criterion.h>
#include <curl/curl.h>

#include "tests/support/api.h"
#include "tests/support/http.h"
#include "tests/support/json.h"
#include "tests/support/srv.h"

/* One value for every Test (Criterion's runner leaks under ASan when they differ). */
#define NEG_TEST_TIMEOUT_S 120
#define NEG_REQ_MS 15000L
#define NEG_READY_MS 10000L
#define NEG_URL_CAP 2048

#define ACCEPT_KUBECTL                                                                             \
    "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"    \
    "g=meta.k8s.io,application/json"
#define ACCEPT_POML "Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
#define ACCEPT_POM "Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
#define NOT_ACCEPTABLE_406                                                                         \
    "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"status\": "   \
    "\"Failure\",\n  \"message\": \"only the following media types are accepted: "                 \
    "application/json\",\n  \"reason\": \"NotAcceptable\",\n  \"code\": 406\n}"

/* ---- servers ----------------------------------------------------------------------------- */

/* kwp sim with <objects> seeded pods in 2 namespaces, no churn, plus <extra> arguments
 * (NULL-terminated, may be NULL). */
static void sim_up_with(struct srv *k, const char *objects, const char *const *extra)
{
    srv_spawn(k, "sim",
              ARGS("--objects", objects, "--namespaces", "2", "--seed", "7", "--churn", "0"),
              extra);
}

static void sim_up(struct srv *k, const char *objects)
{
    sim_up_with(k, objects, NULL);
}

/* ---- requests ---------------------------------------------------------------------------- */

/* GET <base><path> with extra header lines (NULL-terminated list, may be NULL). */
static void fetch(const char *base, const char *path, const char *const *hdrs, struct http_resp *r)
{
    api_req(base, "GET", path, NULL, NULL, hdrs, r);
}

static void send_json(const char *base, const char *method, const char *path, const char *body)
{
    struct http_resp r;

    api_req(base, method, path, "application/json", body, NULL, &r);
    cr_assert(r.code == 200 || r.code == 201, "%s %s: HTTP %ld %s", method, path, r.code, r.body);
    http_resp_free(&r);
}

static void expect_code(const struct http_resp *r, long code)
{
    cr_assert_eq(r->code, code, "HTTP %ld, expected %ld: %.600s", r->code, code, r->body);
}

static void expect_bytes(const char *got, size_t got_len, const char *want, size_t want_len,
                         const char *what)
{
    size_t i = 0;

    while (i < got_len && i < want_len && got[i] == want[i]) {
        i++;
    }
    cr_assert(got_len == want_len && i == want_len,
              "%s differs at byte %zu (got %zu bytes, want %zu)\n got: ...%.200s\nwant: ...%.200s",
              what, i, got_len, want_len, got + (i > 40 ? i - 40 : 0),
              want + (i > 40 ? i - 40 : 0));
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void expect_str(const struct http_resp *r, const char *want, const char *what)
{
    expect_bytes(r->body, r->body_len, want, strlen(want), what);
}

/* ---- byte spans of JSON values, without re-encoding -------------------------------------- */

/* Index just past the JSON value starting at s[i] (strings, objects and arrays nest). */
static size_t skip_value(const char *s, size_t i)
{
    int depth = 0;
    bool in_str = false;

    for (; s[i]; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\') {
                i++;
            } else if (c == '"') {
                in_str = false;
                if (depth == 0) {
                    return i + 1;
                }
            }
        } else if (c == '"') {
            in_str = true;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (--depth == 0) {
                return i + 1;
            }
        } else if (depth == 0 && (c == ',' || c == '}' || c == ']')) {
            return i;
        }
    }
    return i;
}

/* The span of top-level member "metadata" of the object at obj (compact JSON). */
static void metadata_span(const char *obj, const char **p, size_t *n)
{
    const char *m = strstr(obj, "\"metadata\":");

    cr_assert_not_null(m, "no metadata in %.200s", obj);
    *p = m + strlen("\"metadata\":");
    *n = skip_value(*p, 0);
}

/* Calls fn for each element span of the "items" array of a compact list body. */
static size_t each_item(const char *body, void (*fn)(const char *p, size_t n, void *ctx), void *ctx)
{
    const char *items = strstr(body, "\"items\":[");
    size_t i, count = 0;

    cr_assert_not_null(items, "no items in %.200s", body);
    i = (size_t)(items - body) + strlen("\"items\":[");
    while (body[i] != ']') {
        size_t end = skip_value(body, i);
        fn(body + i, end - i, ctx);
        count++;
        i = body[end] == ',' ? end + 1 : end;
    }
    return count;
}

/* A growable string. */
struct str {
    char *p;
    size_t len;
};

static void str_add(struct str *s, const char *p, size_t n)
{
    s->p = realloc(s->p, s->len + n + 1);
    cr_assert_not_null(s->p);
    memcpy(s->p + s->len, p, n);
    s->len += n;
    s->p[s->len] = '\0';
}

static void str_adds(struct str *s, const char *p)
{
    str_add(s, p, strlen(p));
}

/* Appends {"kind":"PartialObjectMetadata",...,"metadata":<span of the item>} to a list. */
static void add_pom_item(const char *p, size_t n, void *ctx)
{
    struct str *s = ctx;
    const char *m;
    size_t mn;
    char *item = strndup(p, n);

    metadata_span(item, &m, &mn);
    if (s->p[s->len - 1] != '[') {
        str_adds(s, ",");
    }
    str_adds(s, "{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\","
                "\"metadata\":");
    str_add(s, m, mn);
    str_adds(s, "}");
    free(item);
}

/* The list's metadata.resourceVersion. */
static char *list_rv(const char *body)
{
    cJSON *j = json_parse(body, strlen(body));
    const char *rv = json_str(j, "metadata.resourceVersion");
    char *out;

    cr_assert_not_null(rv, "no metadata.resourceVersion in %.200s", body);
    out = strdup(rv);
    cJSON_Delete(j);
    return out;
}

/* ---- the Accept matrix and the 406 --------------------------------------------------------- */

Test(negotiation, accept_matrix_and_406_body, .timeout = NEG_TEST_TIMEOUT_S)
{
    static const char *const json_ok[] = {
        NULL, /* no Accept header at all */
        "Accept: */*",
        "Accept: application/*",
        "Accept: application/json",
        "Accept: application/json;charset=utf-8",
        "Accept: application/json, */*",
        "Accept: application/vnd.kubernetes.protobuf, application/json",
        "Accept: application/vnd.kubernetes.protobuf;q=1, */*;q=0.1",
        "Accept: application/yaml, application/json",
    };
    static const char *const refused[] = {
        "Accept: application/vnd.kubernetes.protobuf",
        "Accept: application/yaml",
        "Accept: text/plain",
        "Accept: application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io",
        "Accept: application/json;as=Table;v=v1",
        "Accept: application/json;as=Foo;v=v1;g=meta.k8s.io",
    };
    static const char *const paths[] = {
        "/api/v1/pods?resourceVersion=0",
        "/api/v1/namespaces/default/pods?watch=true&resourceVersion=0&timeoutSeconds=1",
        "/api/v1/namespaces/default/pods/pod-000000?resourceVersion=0",
        "/api/v1/pods?resourceVersion=0&limit=bogus", /* 406 before the 400 of the options */
    };
    struct srv sim;
    struct http_resp plain, r;

    sim_up(&sim, "6");
    fetch(sim.url, "/api/v1/pods?resourceVersion=0", NULL, &plain);
    expect_code(&plain, 200);
    for (size_t i = 0; i < sizeof(json_ok) / sizeof(json_ok[0]); i++) {
        const char *hdrs[] = {json_ok[i] ? json_ok[i] : "Accept:", NULL};
        fetch(sim.url, "/api/v1/pods?resourceVersion=0", hdrs, &r);
        expect_code(&r, 200);
        api_expect_header(&r, "Content-Type", "application/json");
        expect_bytes(r.body, r.body_len, plain.body, plain.body_len, json_ok[i] ? json_ok[i] : "-");
        http_resp_free(&r);
    }
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        for (size_t k = 0; k < sizeof(paths) / sizeof(paths[0]); k++) {
            const char *hdrs[] = {refused[i], NULL};
            fetch(sim.url, paths[k], hdrs, &r);
            expect_code(&r, 406);
            api_expect_header(&r, "Content-Type", "application/json");
            /* WriteRawJSON: json.MarshalIndent, no trailing newline */
            expect_bytes(r.body, r.body_len, NOT_ACCEPTABLE_406, strlen(NOT_ACCEPTABLE_406),
                         refused[i]);
            http_resp_free(&r);
        }
    }
    http_resp_free(&plain);
    srv_stop(&sim, "kwp sim");
}

/* ---- PartialObjectMetadata ------------------------------------------------------------------ */

Test(negotiation, partial_object_metadata_from_stored_bytes, .timeout = NEG_TEST_TIMEOUT_S)
{
    const char *poml[] = {ACCEPT_POML, NULL};
    const char *poml_b[] = {"Accept: application/json;as=PartialObjectMetadataList;"
                            "g=meta.k8s.io;v=v1beta1",
                            NULL};
    const char *pom[] = {ACCEPT_POM, NULL};
    const char *client_go[] = {"Accept: application/vnd.kubernetes.protobuf;as="
                               "PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;"
                               "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
                               NULL};
    struct srv sim;
    struct http_resp plain, r;
    struct str want = {0};
    char *rv, *item;
    size_t n, mn;
    const char *m;

    sim_up(&sim, "8");
    fetch(sim.url, "/api/v1/namespaces/ns-1/pods?resourceVersion=0", NULL, &plain);
    expect_code(&plain, 200);
    rv = list_rv(plain.body);
    str_adds(&want, "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"meta.k8s.io/v1\","
                    "\"metadata\":{\"resourceVersion\":\"");
    str_adds(&want, rv);
    str_adds(&want, "\"},\"items\":[");
    n = each_item(plain.body, add_pom_item, &want);
    cr_assert_eq(n, 4u);
    str_adds(&want, "]}\n");
    fetch(sim.url, "/api/v1/namespaces/ns-1/pods?resourceVersion=0", poml, &r);
    expect_code(&r, 200);
    expect_bytes(r.body, r.body_len, want.p, want.len, "PartialObjectMetadataList");
    http_resp_free(&r);
    fetch(sim.url, "/api/v1/namespaces/ns-1/pods?resourceVersion=0", client_go, &r);
    expect_bytes(r.body, r.body_len, want.p, want.len, "client-go metadata Accept");
    http_resp_free(&r);

    /* v1beta1: the list and its items say meta.k8s.io/v1beta1 */
    fetch(sim.url, "/api/v1/namespaces/ns-1/pods?resourceVersion=0", poml_b, &r);
    expect_code(&r, 200);
    cr_assert(starts_with(r.body, "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":"
                                  "\"meta.k8s.io/v1beta1\""),
              "%.120s", r.body);
    cr_assert_not_null(strstr(r.body, "{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":"
                                      "\"meta.k8s.io/v1beta1\",\"metadata\":"));
    cr_assert_eq(r.body_len, want.len + (1 + n) * strlen("beta1"), "v1beta1 in list + items");
    http_resp_free(&r);

    /* an empty list: asPartialObjectMetadataList leaves items nil */
    fetch(sim.url, "/api/v1/namespaces/empty/pods?resourceVersion=0", poml, &r);
    {
        char e[256];
        char *erv = list_rv(r.body);
        snprintf(e, sizeof(e),
                 "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":"
                 "\"meta.k8s.io/v1\",\"metadata\":{\"resourceVersion\":\"%s\"},\"items\":null}\n",
                 erv);
        expect_bytes(r.body, r.body_len, e, strlen(e), "empty PartialObjectMetadataList");
        free(erv);
    }
    http_resp_free(&r);

    /* GET: one PartialObjectMetadata, the metadata bytes of the object */
    fetch(sim.url, "/api/v1/namespaces/ns-1/pods/pod-000001?resourceVersion=0", NULL, &r);
    item = strndup(r.body, r.body_len);
    metadata_span(item, &m, &mn);
    free(want.p);
    memset(&want, 0, sizeof(want));
    str_adds(&want, "{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\","
                    "\"metadata\":");
    str_add(&want, m, mn);
    str_adds(&want, "}\n");
    free(item); /* m points into item: copied into want above */
    http_resp_free(&r);
    fetch(sim.url, "/api/v1/namespaces/ns-1/pods/pod-000001?resourceVersion=0", pom, &r);
    expect_code(&r, 200);
    expect_bytes(r.body, r.body_len, want.p, want.len, "PartialObjectMetadata GET");
    http_resp_free(&r);

    /* the transforms that do not fit: response.go's messages (Status written raw: no plain
     * JSON clause in the Accept) */
    fetch(sim.url, "/api/v1/namespaces/ns-1/pods/pod-000001?resourceVersion=0", poml, &r);
    expect_code(&r, 406);
    cr_assert_not_null(strstr(r.body, "\"message\": \"you requested PartialObjectMetadataList, "
                                      "but the requested object is not a list (*core.Pod)\""),
                       "%s", r.body);
    http_resp_free(&r);
    fetch(sim.url, "/api/v1/namespaces/ns-1/pods?resourceVersion=0", pom, &r);
    expect_code(&r, 406);
    cr_assert_not_null(strstr(r.body, "\"message\": \"you requested PartialObjectMetadata, but "
                                      "the requested object is a list (*core.PodList)\""),
                       "%s", r.body);
    http_resp_free(&r);

    /* WATCH: every event object, and the watch-list end bookmark (SEMANTICS 2.6) */
    fetch(sim.url,
          "/api/v1/namespaces/ns-1/pods?watch=true&sendInitialEvents=true&allowWatchBookmarks="
          "true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1",
          pom, &r);
    expect_code(&r, 200);
    {
        char line[256];
        const char *ev = strstr(r.body, "{\"type\":\"ADDED\",\"object\":{\"kind\":"
                                        "\"PartialObjectMetadata\",\"apiVersion\":"
                                        "\"meta.k8s.io/v1\",\"metadata\":");
        cr_assert_eq(ev, r.body, "%.300s", r.body);
        snprintf(line, sizeof(line),
                 "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"PartialObjectMetadata\","
                 "\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":{\"resourceVersion\":\"%s\","
                 "\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}\n",
                 rv);
        cr_assert_not_null(strstr(r.body, line), "no end bookmark %s in:\n%s", line, r.body);
        /* each ADDED object is the metadata of the stored object */
        want.p[want.len - 2] = '\0'; /* drop "}\n": the event adds "}}\n" */
        cr_assert_not_null(strstr(r.body, want.p), "pod-000001's metadata bytes in:\n%s", r.body);
    }
    http_resp_free(&r);

    free(want.p);
    free(rv);
    http_resp_free(&plain);
    srv_stop(&sim, "kwp sim");
}

/* ---- Tables ------------------------------------------------------------------------------- */

static const cJSON *jpath(const cJSON *o, const char *a, const char *b)
{
    o = cJSON_GetObjectItem(o, a);
    return b ? cJSON_GetObjectItem(o, b) : o;
}

Test(negotiation, tables_for_pods_and_configmaps, .timeout = NEG_TEST_TIMEOUT_S)
{
    const char *kubectl[] = {ACCEPT_KUBECTL, NULL};
    struct srv sim;
    struct http_resp r, plain;
    cJSON *j, *cols, *rows, *row;
    static const char *const names[] = {"Name", "Ready", "Status",         "Restarts",       "Age",
                                        "IP",   "Node",  "Nominated Node", "Readiness Gates"};
    const char *m;
    size_t mn;

    sim_up(&sim, "4");
    fetch(sim.url, "/api/v1/namespaces/default/pods?resourceVersion=0", kubectl, &r);
    expect_code(&r, 200);
    j = cJSON_ParseWithLength(r.body, r.body_len);
    cr_assert_str_eq(cJSON_GetObjectItem(j, "kind")->valuestring, "Table");
    cr_assert_str_eq(cJSON_GetObjectItem(j, "apiVersion")->valuestring, "meta.k8s.io/v1");
    cols = cJSON_GetObjectItem(j, "columnDefinitions");
    cr_assert_eq(cJSON_GetArraySize(cols), 9);
    for (int i = 0; i < 9; i++) {
        const cJSON *c = cJSON_GetArrayItem(cols, i);
        cr_assert_str_eq(cJSON_GetObjectItem(c, "name")->valuestring, names[i]);
        cr_assert_eq(cJSON_GetObjectItem(c, "priority")->valueint, i < 5 ? 0 : 1);
    }
    rows = cJSON_GetObjectItem(j, "rows");
    cr_assert_eq(cJSON_GetArraySize(rows), 2);
    row = cJSON_GetArrayItem(rows, 0);
    cr_assert_str_eq(cJSON_GetArrayItem(json_at(row, "cells"), 0)->valuestring, "pod-000000");
    cr_assert_eq(cJSON_GetArraySize(json_at(row, "cells")), 9);
    cr_assert_str_eq(json_txt(row, "object.kind"), "PartialObjectMetadata");
    cJSON_Delete(j);
    /* the row object carries the stored metadata bytes */
    fetch(sim.url, "/api/v1/namespaces/default/pods/pod-000000?resourceVersion=0", NULL, &plain);
    {
        char *obj = strndup(plain.body, plain.body_len);
        struct str w = {0};
        metadata_span(obj, &m, &mn);
        str_adds(&w, "\"object\":{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":"
                     "\"meta.k8s.io/v1\",\"metadata\":");
        str_add(&w, m, mn);
        str_adds(&w, "}}");
        cr_assert_not_null(strstr(r.body, w.p), "row object is not %s", w.p);
        free(w.p);
        free(obj);
    }
    http_resp_free(&plain);
    http_resp_free(&r);

    /* watch: one-row Tables, column definitions on the first event only */
    fetch(sim.url, "/api/v1/namespaces/default/pods?watch=true&resourceVersion=0&timeoutSeconds=1",
          kubectl, &r);
    expect_code(&r, 200);
    {
        char *save = NULL, *line = strtok_r(r.body, "\n", &save);
        int k = 0;
        for (; line; line = strtok_r(NULL, "\n", &save), k++) {
            cJSON *ev = cJSON_Parse(line);
            const cJSON *t = cJSON_GetObjectItem(ev, "object");
            cr_assert_str_eq(cJSON_GetObjectItem(ev, "type")->valuestring, "ADDED");
            cr_assert_str_eq(cJSON_GetObjectItem(t, "kind")->valuestring, "Table");
            cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(t, "rows")), 1);
            if (k == 0) {
                cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(t, "columnDefinitions")), 9);
            } else {
                cr_assert(cJSON_IsNull(cJSON_GetObjectItem(t, "columnDefinitions")), "%s", line);
            }
            cr_assert(cJSON_IsString(json_at(t, "metadata.resourceVersion")));
            cJSON_Delete(ev);
        }
        cr_assert_eq(k, 2, "two initial events");
    }
    http_resp_free(&r);

    /* includeObject */
    fetch(sim.url, "/api/v1/namespaces/default/pods?resourceVersion=0&includeObject=None", kubectl,
          &r);
    cr_assert_not_null(strstr(r.body, "\"object\":null}"), "%.300s", r.body);
    http_resp_free(&r);
    fetch(sim.url,
          "/api/v1/namespaces/default/pods/pod-000000?resourceVersion=0&includeObject="
          "Object",
          kubectl, &r);
    cr_assert_not_null(strstr(r.body, "\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
                                      "\"metadata\":"),
                       "%.300s", r.body);
    http_resp_free(&r);
    fetch(sim.url, "/api/v1/namespaces/default/pods?resourceVersion=0&includeObject=x", kubectl,
          &r);
    expect_code(&r, 400);
    expect_str(&r,
               "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
               "\"message\":\"Unable to convert to Table as requested: includeObject: Invalid "
               "value: \\\"x\\\": must be 'Metadata', 'Object', 'None', or empty\",\"reason\":"
               "\"BadRequest\",\"code\":400}\n",
               "includeObject=x");
    http_resp_free(&r);

    /* configmaps have their printer: NAME DATA AGE, DATA an int64 cell */
    send_json(sim.url, "POST", "/api/v1/namespaces/default/configmaps",
              "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm1\"},"
              "\"data\":{\"a\":\"1\"}}");
    fetch(sim.url, "/api/v1/namespaces/default/configmaps?resourceVersion=0", kubectl, &r);
    j = cJSON_ParseWithLength(r.body, r.body_len);
    cr_assert_str_eq(cJSON_GetObjectItem(j, "kind")->valuestring, "Table", "%.100s", r.body);
    cols = cJSON_GetObjectItem(j, "columnDefinitions");
    cr_assert_eq(cJSON_GetArraySize(cols), 3);
    cr_assert_str_eq(jpath(cJSON_GetArrayItem(cols, 1), "name", NULL)->valuestring, "Data");
    row = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "rows"), 0);
    cr_assert_str_eq(cJSON_GetArrayItem(jpath(row, "cells", NULL), 0)->valuestring, "cm1");
    cr_assert_eq(cJSON_GetArrayItem(jpath(row, "cells", NULL), 1)->valueint, 1);
    cJSON_Delete(j);
    http_resp_free(&r);
    fetch(sim.url, "/api/v1/namespaces/empty/configmaps?resourceVersion=0", kubectl, &r);
    cr_assert_not_null(strstr(r.body, "}],\"rows\":[]}\n"), "printers make an empty slice: %s",
                       r.body);
    http_resp_free(&r);
    srv_stop(&sim, "kwp sim");
}

/* A custom resource without additionalPrinterColumns: the simulator answers the CRD
 * convertor's defaulted columns, Name and Age (type date, HumanDuration since creation),
 * and an empty list has "rows":[] (MetaToTableRow makes an empty slice). */
Test(negotiation, crd_default_table_for_custom_resources, .timeout = NEG_TEST_TIMEOUT_S)
{
    const char *kubectl[] = {ACCEPT_KUBECTL, NULL};
    const char *extra[] = {"--resource", "example.com/v1/widgets", NULL};
    struct srv sim;
    struct http_resp r;
    cJSON *j, *cols, *row;
    const char *age;

    sim_up_with(&sim, "0", extra);
    send_json(sim.url, "POST", "/apis/example.com/v1/namespaces/default/widgets",
              "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":"
              "\"w1\"}}");
    fetch(sim.url, "/apis/example.com/v1/namespaces/default/widgets?resourceVersion=0", kubectl,
          &r);
    j = cJSON_ParseWithLength(r.body, r.body_len);
    cols = cJSON_GetObjectItem(j, "columnDefinitions");
    cr_assert_eq(cJSON_GetArraySize(cols), 2, "%.300s", r.body);
    cr_assert_str_eq(jpath(cJSON_GetArrayItem(cols, 0), "format", NULL)->valuestring, "name");
    cr_assert_str_eq(jpath(cJSON_GetArrayItem(cols, 1), "name", NULL)->valuestring, "Age");
    cr_assert_str_eq(jpath(cJSON_GetArrayItem(cols, 1), "type", NULL)->valuestring, "date");
    cr_assert_not_null(strstr(jpath(cJSON_GetArrayItem(cols, 1), "description", NULL)->valuestring,
                              "CreationTimestamp is a timestamp"));
    row = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "rows"), 0);
    cr_assert_str_eq(cJSON_GetArrayItem(jpath(row, "cells", NULL), 0)->valuestring, "w1");
    age = cJSON_GetArrayItem(jpath(row, "cells", NULL), 1)->valuestring;
    cr_assert(age && strlen(age) >= 2 && age[strlen(age) - 1] == 's', "age %s", age ? age : "-");
    cJSON_Delete(j);
    http_resp_free(&r);
    fetch(sim.url, "/apis/example.com/v1/namespaces/empty/widgets?resourceVersion=0", kubectl, &r);
    cr_assert_not_null(strstr(r.body, "}],\"rows\":[]}\n"), "%s", r.body);
    http_resp_free(&r);
    srv_stop(&sim, "kwp sim");
}

/* ---- gzip -------------------------------------------------------------------------------- */

/* Sets configmap <name>'s data so that the namespace's LIST body is exactly <target> bytes. */
static void size_list(const char *base, const char *ns, size_t target)
{
    char path[256], list_path[256];
    size_t pad = 1000;

    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps", ns);
    snprintf(list_path, sizeof(list_path), "/api/v1/namespaces/%s/configmaps?resourceVersion=0",
             ns);
    for (int round = 0; round < 6; round++) {
        struct http_resp r;
        struct str body = {0};
        char *fill = malloc(pad + 1);
        memset(fill, 'x', pad);
        fill[pad] = '\0';
        str_adds(&body, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                        "\"big\"},\"data\":{\"k\":\"");
        str_adds(&body, fill);
        str_adds(&body, "\"}}");
        if (round == 0) {
            send_json(base, "POST", path, body.p);
        } else {
            char one[300];
            snprintf(one, sizeof(one), "%s/big", path);
            send_json(base, "PUT", one, body.p);
        }
        free(body.p);
        free(fill);
        fetch(base, list_path, NULL, &r);
        if (r.body_len == target) {
            http_resp_free(&r);
            return;
        }
        pad = pad + target - r.body_len;
        http_resp_free(&r);
    }
    cr_assert_fail("could not size the list of %s to %zu bytes", ns, target);
}

static size_t collect(char *ptr, size_t size, size_t nmemb, void *ud)
{
    str_add(ud, ptr, size * nmemb);
    return size * nmemb;
}

/* GET decoded by libcurl's own gzip support (CURLOPT_ACCEPT_ENCODING). */
static char *get_decoded(const char *url, size_t *len)
{
    CURL *e = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "User-Agent: kwp-it/1");
    struct str out = {0};

    str_adds(&out, "");
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "gzip");
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &out);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, NEG_REQ_MS);
    cr_assert_eq(curl_easy_perform(e), CURLE_OK);
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    *len = out.len;
    return out.p;
}

Test(negotiation, gzip_above_128_kib_only, .timeout = NEG_TEST_TIMEOUT_S)
{
    const char *gz[] = {"Accept-Encoding: gzip", NULL};
    const char *gzq[] = {"Accept-Encoding: gzip;q=1", NULL};
    const char *gz2[] = {"Accept-Encoding: deflate, gzip", NULL};
    struct srv sim;
    struct http_resp plain, r;
    char url[NEG_URL_CAP];
    char *dec;
    size_t dec_len;

    sim_up(&sim, "0");
    send_json(
        sim.url, "POST", "/api/v1/namespaces",
        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"at-limit\"}}");
    send_json(
        sim.url, "POST", "/api/v1/namespaces",
        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"over-limit\"}}");
    size_list(sim.url, "at-limit", 128 * 1024);
    size_list(sim.url, "over-limit", 128 * 1024 + 1);

    /* exactly 128 KiB: not above the threshold, sent as is */
    fetch(sim.url, "/api/v1/namespaces/at-limit/configmaps?resourceVersion=0", NULL, &plain);
    fetch(sim.url, "/api/v1/namespaces/at-limit/configmaps?resourceVersion=0", gz, &r);
    expect_code(&r, 200);
    api_expect_header(&r, "Content-Encoding", NULL);
    api_expect_header(&r, "Content-Length", "131072");
    expect_bytes(r.body, r.body_len, plain.body, plain.body_len, "128 KiB body");
    http_resp_free(&r);
    http_resp_free(&plain);

    /* one byte more: gzip, streamed (chunked), level-1 deflate in a gzip member */
    fetch(sim.url, "/api/v1/namespaces/over-limit/configmaps?resourceVersion=0", NULL, &plain);
    cr_assert_eq(plain.body_len, 128 * 1024 + 1);
    for (int k = 0; k < 2; k++) {
        fetch(sim.url, "/api/v1/namespaces/over-limit/configmaps?resourceVersion=0", k ? gz2 : gz,
              &r);
        expect_code(&r, 200);
        api_expect_header(&r, "Content-Encoding", "gzip");
        api_expect_header(&r, "Vary", "Accept-Encoding");
        api_expect_header(&r, "Content-Type", "application/json");
        api_expect_header(&r, "Content-Length", NULL);
        cr_assert(r.body_len > 18 && (unsigned char)r.body[0] == 0x1f &&
                      (unsigned char)r.body[1] == 0x8b,
                  "not gzip");
        cr_assert_lt(r.body_len, plain.body_len / 10, "the x padding compresses");
        http_resp_free(&r);
    }
    snprintf(url, sizeof(url), "%s/api/v1/namespaces/over-limit/configmaps?resourceVersion=0",
             sim.url);
    dec = get_decoded(url, &dec_len);
    expect_bytes(dec, dec_len, plain.body, plain.body_len, "inflated body");
    free(dec);

    /* "gzip;q=1" is not the token gzip; watches are never compressed */
    fetch(sim.url, "/api/v1/namespaces/over-limit/configmaps?resourceVersion=0", gzq, &r);
    api_expect_header(&r, "Content-Encoding", NULL);
    expect_bytes(r.body, r.body_len, plain.body, plain.body_len, "gzip;q=1");
    http_resp_free(&r);
    fetch(sim.url, "/api/v1/namespaces/over-limit/configmaps?watch=true&timeoutSeconds=1", gz, &r);
    expect_code(&r, 200);
    api_expect_header(&r, "Content-Encoding", NULL);
    cr_assert(starts_with(r.body, "{\"type\":\"ADDED\""), "%.100s", r.body);
    http_resp_free(&r);
    http_resp_free(&plain);
    srv_stop(&sim, "kwp sim");
}

/* ---- pretty printing ----------------------------------------------------------------------- */

/* Python's json.dumps(json.loads(in), indent=2, ensure_ascii=False), no trailing newline. */
static char *python_indent(const char *in, size_t n, size_t *out_len)
{
    char dir[] = "/tmp/kwp-neg-XXXXXX", in_path[64], out_path[64], cmd[512];
    struct str out = {0};
    char buf[65536];
    size_t k;
    FILE *f;

    cr_assert_not_null(mkdtemp(dir));
    snprintf(in_path, sizeof(in_path), "%s/in.json", dir);
    snprintf(out_path, sizeof(out_path), "%s/out.json", dir);
    f = fopen(in_path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(in, 1, n, f), n);
    fclose(f);
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
             "open(sys.argv[2],\"w\").write(json.dumps(d, indent=2, ensure_ascii=False))' "
             "%s %s",
             in_path, out_path);
    cr_assert_eq(system(cmd), 0, "python3 failed");
    f = fopen(out_path, "rb");
    cr_assert_not_null(f);
    str_adds(&out, "");
    while ((k = fread(buf, 1, sizeof(buf), f)) > 0) {
        str_add(&out, buf, k);
    }
    fclose(f);
    unlink(in_path);
    unlink(out_path);
    rmdir(dir);
    *out_len = out.len;
    return out.p;
}

Test(negotiation, pretty_bodies_as_go_json_indent, .timeout = NEG_TEST_TIMEOUT_S)
{
    const char *curl_ua[] = {"User-Agent: curl/8.0", NULL};
    const char *wget_ua[] = {"User-Agent: Wget/1.21", NULL};
    const char *moz_ua[] = {"User-Agent: Mozilla/5.0 (X11)", NULL};
    const char *pretty_param[] = {"Accept: application/json;pretty=1", NULL};
    const char *curl_gz[] = {"User-Agent: curl/8.0", "Accept-Encoding: gzip", NULL};
    const char *curl_table[] = {"User-Agent: curl/8.0", ACCEPT_KUBECTL, NULL};
    const char *curl_406[] = {"User-Agent: curl/8.0", "Accept: application/yaml", NULL};
    struct srv sim;
    struct http_resp plain, r;
    char *want;
    size_t want_len;

    sim_up(&sim, "40");
    fetch(sim.url, "/api/v1/pods?resourceVersion=0", NULL, &plain);
    want = python_indent(plain.body, plain.body_len, &want_len);
    cr_assert_gt(want_len, plain.body_len);
    {
        const char *const *variants[] = {curl_ua, wget_ua, moz_ua, pretty_param};
        for (size_t i = 0; i < 4; i++) {
            fetch(sim.url, "/api/v1/pods?resourceVersion=0", variants[i], &r);
            expect_code(&r, 200);
            api_expect_header(&r, "Content-Type", "application/json");
            expect_bytes(r.body, r.body_len, want, want_len, variants[i][0]);
            http_resp_free(&r);
        }
    }
    fetch(sim.url, "/api/v1/pods?resourceVersion=0&pretty=true", NULL, &r);
    expect_bytes(r.body, r.body_len, want, want_len, "?pretty=true");
    http_resp_free(&r);
    /* ?pretty=false (or anything ParseBool rejects) wins over the User-Agent */
    fetch(sim.url, "/api/v1/pods?resourceVersion=0&pretty=false", curl_ua, &r);
    expect_bytes(r.body, r.body_len, plain.body, plain.body_len, "curl + pretty=false");
    http_resp_free(&r);
    fetch(sim.url, "/api/v1/pods?resourceVersion=0&pretty=maybe", curl_ua, &r);
    expect_bytes(r.body, r.body_len, plain.body, plain.body_len, "curl + pretty=maybe");
    http_resp_free(&r);
    /* pretty and gzip compose (the pretty body is what is measured and compressed) */
    {
        char url[NEG_URL_CAP];
        size_t n;
        char *dec;
        fetch(sim.url, "/api/v1/pods?resourceVersion=0", curl_gz, &r);
        api_expect_header(&r, "Content-Encoding", want_len > 128 * 1024 ? "gzip" : NULL);
        http_resp_free(&r);
        snprintf(url, sizeof(url), "%s/api/v1/pods?resourceVersion=0&pretty=1", sim.url);
        dec = get_decoded(url, &n);
        expect_bytes(dec, n, want, want_len, "pretty + gzip, inflated");
        free(dec);
    }
    free(want);
    http_resp_free(&plain);

    /* GET and a Table, pretty; a watch never */
    fetch(sim.url, "/api/v1/namespaces/default/pods/pod-000000?resourceVersion=0", NULL, &plain);
    want = python_indent(plain.body, plain.body_len, &want_len);
    fetch(sim.url, "/api/v1/namespaces/default/pods/pod-000000?resourceVersion=0", curl_ua, &r);
    expect_bytes(r.body, r.body_len, want, want_len, "GET pretty");
    http_resp_free(&r);
    free(want);
    http_resp_free(&plain);
    fetch(sim.url, "/api/v1/namespaces/default/pods?resourceVersion=0", curl_table, &r);
    {
        const char *p = "{\n  \"kind\": \"Table\",\n  \"apiVersion\": \"meta.k8s.io/v1\",\n";
        cr_assert(starts_with(r.body, p), "%.200s", r.body);
    }
    cr_assert_neq(r.body[r.body_len - 1], '\n');
    http_resp_free(&r);
    fetch(sim.url, "/api/v1/namespaces/default/pods?watch=true&resourceVersion=0&timeoutSeconds=1",
          curl_ua, &r);
    cr_assert(starts_with(r.body, "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\""), "%.100s",
              r.body);
    http_resp_free(&r);

    /* Status bodies: the pretty serializer (curl), and the 406's WriteRawJSON */
    fetch(sim.url, "/api/v1/namespaces/default/pods/nope?resourceVersion=0", curl_ua, &r);
    expect_code(&r, 404);
    expect_str(&r,
               "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n"
               "  \"status\": \"Failure\",\n  \"message\": \"pods \\\"nope\\\" not found\",\n"
               "  \"reason\": \"NotFound\",\n  \"details\": {\n    \"name\": \"nope\",\n"
               "    \"kind\": \"pods\"\n  },\n  \"code\": 404\n}",
               "404 pretty");
    http_resp_free(&r);
    fetch(sim.url, "/api/v1/pods?resourceVersion=0", curl_406, &r);
    expect_bytes(r.body, r.body_len, NOT_ACCEPTABLE_406, strlen(NOT_ACCEPTABLE_406), "406 curl");
    http_resp_free(&r);
    srv_stop(&sim, "kwp sim");
}

/* ---- through the proxy ----------------------------------------------------------------- */

Test(negotiation, proxy_serves_transforms_from_its_cache, .timeout = NEG_TEST_TIMEOUT_S)
{
    const char *poml[] = {ACCEPT_POML, NULL};
    const char *kubectl[] = {ACCEPT_KUBECTL, NULL};
    const char *proto[] = {"Accept: application/vnd.kubernetes.protobuf", NULL};
    const char *table_only[] = {"Accept: application/json;as=Table;v=v1;g=meta.k8s.io", NULL};
    struct srv sim, px;
    struct http_resp a, b;
    char *rv;

    sim_up(&sim, "6");
    srv_spawn(&px, "proxy", ARGS("--upstream", sim.url, "--resources", "pods,configmaps"), NULL);
    srv_wait_ready(&px, NEG_READY_MS);

    /* the same bytes from the proxy's cache as from the simulator */
    fetch(sim.url, "/api/v1/namespaces/default/pods?resourceVersion=0", poml, &a);
    rv = list_rv(a.body);
    {
        char path[256];
        snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods?resourceVersion=%s", rv);
        fetch(px.url, path, poml, &b);
    }
    expect_code(&b, 200);
    expect_bytes(b.body, b.body_len, a.body, a.body_len, "proxy PartialObjectMetadataList");
    http_resp_free(&a);
    http_resp_free(&b);

    /* Table watch from the proxy's history */
    api_pod_create(sim.url, "default", "late", "{\"app\":\"neg\"}");
    {
        char path[256];
        bool seen = false;
        for (int i = 0; i < 50 && !seen; i++) {
            snprintf(
                path, sizeof(path),
                "/api/v1/namespaces/default/pods?watch=true&resourceVersion=%s&timeoutSeconds=1",
                rv);
            fetch(px.url, path, kubectl, &b);
            expect_code(&b, 200);
            seen = strstr(b.body, "\"cells\":[\"late\",\"0/1\"") != NULL;
            if (seen) {
                cr_assert(starts_with(b.body, "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Table\","
                                              "\"apiVersion\":\"meta.k8s.io/v1\""),
                          "%.200s", b.body);
                cr_assert_not_null(strstr(b.body, "\"columnDefinitions\":[{\"name\":\"Name\""));
            }
            http_resp_free(&b);
        }
        cr_assert(seen, "the proxy's watch never showed the new pod as a Table row");
    }

    /* what the proxy cannot encode goes upstream, whose answer it relays */
    fetch(sim.url, "/api/v1/pods?resourceVersion=0", proto, &a);
    fetch(px.url, "/api/v1/pods?resourceVersion=0", proto, &b);
    expect_code(&b, 406);
    expect_bytes(b.body, b.body_len, a.body, a.body_len, "forwarded 406");
    http_resp_free(&a);
    http_resp_free(&b);
    fetch(px.url, "/api/v1/namespaces/default/configmaps?resourceVersion=0", table_only, &b);
    expect_code(&b, 200);
    cr_assert_not_null(strstr(b.body, "\"columnDefinitions\":[{\"name\":\"Name\""), "%.300s",
                       b.body);
    cr_assert_not_null(strstr(b.body, "{\"name\":\"Data\",\"type\":\"string\""), "%.300s", b.body);
    http_resp_free(&b);

    free(rv);
    srv_stop(&px, "kwp proxy");
    srv_stop(&sim, "kwp sim");
}

/* ---- a printer per built-in kind, and what the proxy forwards ------------------------------ */

/* A counter of resource <q> ("configmaps", "jobs.batch") in the simulator's /_sim/stats. */
static long sim_stat(const char *sim_url, const char *q, const char *counter)
{
    struct http_resp r;
    cJSON *j;
    const cJSON *v;
    long out;

    fetch(sim_url, "/_sim/stats", NULL, &r);
    j = cJSON_ParseWithLength(r.body, r.body_len);
    v = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "resources"), q), counter);
    cr_assert(cJSON_IsNumber(v), "no %s.%s in /_sim/stats: %.300s", q, counter, r.body);
    out = (long)v->valuedouble;
    cJSON_Delete(j);
    http_resp_free(&r);
    return out;
}

/* One object per kind, the columns kubectl prints for it, and the row printers.go makes
 * (null: an age, which moves with the clock; any non-empty string is accepted). */
static const struct kind_case {
    const char *q;          /* /_sim/stats name */
    const char *collection; /* the collection path */
    const char *name;
    const char *body;
    const char *columns;
    const char *cells;
} kinds[] = {
    {"configmaps", "/api/v1/namespaces/default/configmaps", "cm1",
     "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm1\"},\"data\":{"
     "\"a\":\"1\",\"b\":\"2\"}}",
     "Name,Data,Age", "[\"cm1\",2,null]"},
    {"secrets", "/api/v1/namespaces/default/secrets", "s1",
     "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"s1\"},\"type\":"
     "\"kubernetes.io/basic-auth\",\"data\":{\"username\":\"dQ==\"}}",
     "Name,Type,Data,Age", "[\"s1\",\"kubernetes.io/basic-auth\",1,null]"},
    {"services", "/api/v1/namespaces/default/services", "svc1",
     "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"svc1\"},\"spec\":{"
     "\"type\":\"NodePort\",\"clusterIP\":\"10.96.0.10\",\"clusterIPs\":[\"10.96.0.10\"],"
     "\"ports\":[{\"port\":80,\"nodePort\":30080,\"protocol\":\"TCP\"}],\"selector\":{"
     "\"app\":\"web\"}}}",
     "Name,Type,Cluster-IP,External-IP,Port(s),Age,Selector",
     "[\"svc1\",\"NodePort\",\"10.96.0.10\",\"<none>\",\"80:30080/TCP\",null,\"app=web\"]"},
    {"namespaces", "/api/v1/namespaces", "ns1",
     "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"ns1\"}}",
     "Name,Status,Age", "[\"ns1\",\"Active\",null]"},
    {"nodes", "/api/v1/nodes", "n1",
     "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"labels\":{"
     "\"node-role.kubernetes.io/control-plane\":\"\"}},\"status\":{\"conditions\":[{\"type\":"
     "\"Ready\",\"status\":\"True\"}],\"addresses\":[{\"type\":\"InternalIP\",\"address\":"
     "\"10.0.0.5\"}],\"nodeInfo\":{\"kubeletVersion\":\"v1.34.0\",\"osImage\":\"Debian GNU/Linux "
     "12 (bookworm)\",\"kernelVersion\":\"6.1.0-18-amd64\",\"containerRuntimeVersion\":"
     "\"containerd://1.7.13\"}}}",
     "Name,Status,Roles,Age,Version,Internal-IP,External-IP,OS-Image,Kernel-Version,"
     "Container-Runtime",
     "[\"n1\",\"Ready\",\"control-plane\",null,\"v1.34.0\",\"10.0.0.5\",\"<none>\","
     "\"Debian GNU/Linux 12 (bookworm)\",\"6.1.0-18-amd64\",\"containerd://1.7.13\"]"},
    {"events", "/api/v1/namespaces/default/events", "ev1",
     "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"ev1\"},"
     "\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p1\",\"fieldPath\":\"spec.containers{c}\"},"
     "\"reason\":\"Started\",\"message\":\"hello\\n\",\"type\":\"Normal\",\"source\":{"
     "\"component\":\"kubelet\",\"host\":\"n1\"},\"count\":3,\"firstTimestamp\":"
     "\"2024-01-01T00:00:00Z\",\"lastTimestamp\":\"2024-01-02T00:00:00Z\"}",
     "Last Seen,Type,Reason,Object,Subobject,Source,Message,First Seen,Count,Name",
     "[null,\"Normal\",\"Started\",\"pod/p1\",\"spec.containers{c}\",\"kubelet, n1\","
     "\"hello\",null,3,\"ev1\"]"},
    {"serviceaccounts", "/api/v1/namespaces/default/serviceaccounts", "sa1",
     "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\"metadata\":{\"name\":\"sa1\"},"
     "\"secrets\":[{\"name\":\"tok\"}]}",
     "Name,Secrets,Age", "[\"sa1\",1,null]"},
    {"replicationcontrollers", "/api/v1/namespaces/default/replicationcontrollers", "rc1",
     "{\"apiVersion\":\"v1\",\"kind\":\"ReplicationController\",\"metadata\":{\"name\":"
     "\"rc1\"},\"spec\":{\"replicas\":2,\"selector\":{\"app\":\"a\"},\"template\":{"
     "\"metadata\":{\"labels\":{\"app\":\"a\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
     "\"image\":\"nginx\"}]}}}}",
     "Name,Desired,Current,Ready,Age,Containers,Images,Selector",
     "[\"rc1\",2,0,0,null,\"c\",\"nginx\",\"app=a\"]"},
    {"jobs.batch", "/apis/batch/v1/namespaces/default/jobs", "job1",
     "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"job1\"},\"spec\":"
     "{\"completions\":2,\"parallelism\":1,\"selector\":{\"matchLabels\":{\"job\":\"j1\"}},"
     "\"template\":{\"metadata\":{\"labels\":{\"job\":\"j1\"}},\"spec\":{\"restartPolicy\":"
     "\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}},\"status\":{"
     "\"succeeded\":1,\"startTime\":\"2024-01-01T00:00:00Z\",\"completionTime\":"
     "\"2024-01-01T00:01:30Z\",\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\"}]}}",
     "Name,Status,Completions,Duration,Age,Containers,Images,Selector",
     "[\"job1\",\"Complete\",\"1/2\",\"90s\",null,\"c\",\"busybox\",\"job=j1\"]"},
    {"certificatesigningrequests.certificates.k8s.io",
     "/apis/certificates.k8s.io/v1/certificatesigningrequests", "csr1",
     "{\"apiVersion\":\"certificates.k8s.io/v1\",\"kind\":\"CertificateSigningRequest\","
     "\"metadata\":{\"name\":\"csr1\"},\"spec\":{\"request\":\"AAAA\",\"signerName\":"
     "\"example.com/s\",\"usages\":[\"client auth\"],\"username\":\"alice\","
     "\"expirationSeconds\":3600}}",
     "Name,Age,SignerName,Requestor,RequestedDuration,Condition",
     "[\"csr1\",null,\"example.com/s\",\"alice\",\"60m\",\"Pending\"]"},
    {"deployments.apps", "/apis/apps/v1/namespaces/default/deployments", "d1",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d1\"},"
     "\"spec\":{\"replicas\":3,\"selector\":{\"matchLabels\":{\"app\":\"d\"}},\"template\":{"
     "\"metadata\":{\"labels\":{\"app\":\"d\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
     "\"image\":\"nginx\"},{\"name\":\"side\",\"image\":\"busybox\"}]}}},\"status\":{"
     "\"readyReplicas\":2,\"updatedReplicas\":3,\"availableReplicas\":2}}",
     "Name,Ready,Up-to-date,Available,Age,Containers,Images,Selector",
     "[\"d1\",\"2/3\",3,2,null,\"c,side\",\"nginx,busybox\",\"app=d\"]"},
    {"replicasets.apps", "/apis/apps/v1/namespaces/default/replicasets", "rs1",
     "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"rs1\"},"
     "\"spec\":{\"replicas\":2,\"selector\":{\"matchLabels\":{\"app\":\"r\"},"
     "\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"b\",\"a\"]}]},"
     "\"template\":{\"metadata\":{\"labels\":{\"app\":\"r\",\"tier\":\"a\"}},\"spec\":{"
     "\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"}]}}},\"status\":{\"replicas\":2,"
     "\"readyReplicas\":1}}",
     "Name,Desired,Current,Ready,Age,Containers,Images,Selector",
     "[\"rs1\",2,2,1,null,\"c\",\"nginx\",\"app=r,tier in (a,b)\"]"},
};

/* Asserts that a one-object Table (GET <collection>/<name>) has k's columns and row. */
static void expect_kind_table(const char *base, const struct kind_case *k, const char *what)
{
    const char *kubectl[] = {ACCEPT_KUBECTL, NULL};
    struct http_resp r;
    char path[512], names[512] = "";
    cJSON *j, *want = cJSON_Parse(k->cells);
    const cJSON *c, *cells;
    size_t len = 0;
    int i = 0;

    snprintf(path, sizeof(path), "%s/%s?resourceVersion=0", k->collection, k->name);
    fetch(base, path, kubectl, &r);
    expect_code(&r, 200);
    j = cJSON_ParseWithLength(r.body, r.body_len);
    cr_assert_str_eq(cJSON_GetObjectItem(j, "kind")->valuestring, "Table", "%s %s", what, path);
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "columnDefinitions"))
    {
        len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", i++ ? "," : "",
                                cJSON_GetObjectItem(c, "name")->valuestring);
        cr_assert_lt(len, sizeof(names));
    }
    cr_assert_str_eq(names, k->columns, "%s %s", what, path);
    cells = jpath(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "rows"), 0), "cells", NULL);
    cr_assert_eq(cJSON_GetArraySize(cells), cJSON_GetArraySize(want), "%s %s: %.600s", what, path,
                 r.body);
    for (i = 0; i < cJSON_GetArraySize(want); i++) {
        const cJSON *w = cJSON_GetArrayItem(want, i), *g = cJSON_GetArrayItem(cells, i);
        if (cJSON_IsNull(w)) {
            cr_assert(cJSON_IsString(g) && g->valuestring[0], "%s %s cell %d: %.600s", what, path,
                      i, r.body);
        } else {
            cr_assert(cJSON_Compare(w, g, true), "%s %s cell %d: %.600s", what, path, i, r.body);
        }
    }
    cJSON_Delete(want);
    cJSON_Delete(j);
    http_resp_free(&r);
}

/* Every built-in kind kwp knows gets kube-apiserver's printer, from the simulator and from
 * the proxy's cache (the simulator serves no GET for them meanwhile); a watch carries
 * column definitions on its first event only. */
Test(negotiation, printers_for_every_builtin_kind, .timeout = NEG_TEST_TIMEOUT_S)
{
    const char *kubectl[] = {ACCEPT_KUBECTL, NULL};
    const char *extra[] = {"--resource", "batch/v1/jobs",
                           "--resource", "certificates.k8s.io/v1/certificatesigningrequests",
                           "--resource", "v1/replicationcontrollers",
                           NULL};
    const size_t n = sizeof(kinds) / sizeof(kinds[0]);
    long gets[sizeof(kinds) / sizeof(kinds[0])];
    struct srv sim, px;
    struct http_resp r;

    sim_up_with(&sim, "0", extra);
    for (size_t i = 0; i < n; i++) {
        send_json(sim.url, "POST", kinds[i].collection, kinds[i].body);
        expect_kind_table(sim.url, &kinds[i], "kwp sim");
    }
    srv_spawn(&px, "proxy",
              ARGS("--upstream", sim.url, "--cache-events", "--resources",
                   "configmaps,secrets,services,namespaces,nodes,events,serviceaccounts,"
                   "replicationcontrollers,batch/v1/jobs,"
                   "certificates.k8s.io/v1/certificatesigningrequests,"
                   "apps/v1/deployments,apps/v1/replicasets"),
              NULL);
    srv_wait_ready(&px, NEG_READY_MS);
    for (size_t i = 0; i < n; i++) {
        gets[i] = sim_stat(sim.url, kinds[i].q, "gets");
    }
    for (size_t i = 0; i < n; i++) {
        expect_kind_table(px.url, &kinds[i], "kwp proxy");
    }
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(sim_stat(sim.url, kinds[i].q, "gets"), gets[i],
                     "the proxy forwarded the %s GET", kinds[i].q);
    }

    /* a Table watch of deployments from the proxy: 8 columns, then null */
    send_json(sim.url, "POST", "/apis/apps/v1/namespaces/default/deployments",
              "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":"
              "\"d2\"},\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"d\"}}}}");
    for (int tries = 0; tries < 50; tries++) {
        bool both;
        fetch(px.url,
              "/apis/apps/v1/namespaces/default/deployments?watch=true&resourceVersion=0&"
              "timeoutSeconds=1",
              kubectl, &r);
        expect_code(&r, 200);
        both = strstr(r.body, "\"cells\":[\"d2\",\"0/1\",0,0,") != NULL;
        if (both) {
            char *save = NULL, *line = strtok_r(r.body, "\n", &save);
            for (int k = 0; line; line = strtok_r(NULL, "\n", &save), k++) {
                cJSON *ev = cJSON_Parse(line);
                const cJSON *cd =
                    jpath(cJSON_GetObjectItem(ev, "object"), "columnDefinitions", NULL);
                if (k == 0) {
                    cr_assert_eq(cJSON_GetArraySize(cd), 8, "%s", line);
                } else {
                    cr_assert(cJSON_IsNull(cd), "%s", line);
                }
                cJSON_Delete(ev);
            }
        }
        http_resp_free(&r);
        if (both) {
            break;
        }
        cr_assert(tries < 49, "the proxy's watch never showed d2");
    }
    srv_stop(&px, "kwp proxy");
    srv_stop(&sim, "kwp sim");
}

/* A Table for a kind the proxy has no printer for (a custom resource: its columns come from
 * the CRD) goes upstream for LIST, GET and WATCH, and the upstream's answer is relayed;
 * plain JSON for the same resource is still served from the cache. */
Test(negotiation, proxy_forwards_tables_it_cannot_print, .timeout = NEG_TEST_TIMEOUT_S)
{
    const char *kubectl[] = {ACCEPT_KUBECTL, NULL};
    const char *json[] = {"Accept: application/json", NULL};
    const char *extra[] = {"--resource", "example.com/v1/widgets", NULL};
    const char *coll = "/apis/example.com/v1/namespaces/default/widgets";
    const char *q = "widgets.example.com";
    struct srv sim, px;
    struct http_resp a, b;
    char path[256];
    long lists, gets, watches;

    sim_up_with(&sim, "0", extra);
    send_json(sim.url, "POST", coll,
              "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":"
              "\"w1\"}}");
    srv_spawn(&px, "proxy", ARGS("--upstream", sim.url, "--resources", "example.com/v1/widgets"),
              NULL);
    srv_wait_ready(&px, NEG_READY_MS);
    lists = sim_stat(sim.url, q, "lists");
    gets = sim_stat(sim.url, q, "gets");
    watches = sim_stat(sim.url, q, "watches");

    snprintf(path, sizeof(path), "%s?resourceVersion=0", coll);
    fetch(px.url, path, json, &b);
    expect_code(&b, 200);
    cr_assert(starts_with(b.body, "{\"kind\":\"WidgetList\""), "%.200s", b.body);
    http_resp_free(&b);
    cr_assert_eq(sim_stat(sim.url, q, "lists"), lists, "plain JSON is served from the cache");

    fetch(sim.url, path, kubectl, &a);
    fetch(px.url, path, kubectl, &b);
    expect_code(&b, 200);
    expect_bytes(b.body, b.body_len, a.body, a.body_len, "forwarded Table LIST");
    http_resp_free(&a);
    http_resp_free(&b);
    cr_assert_eq(sim_stat(sim.url, q, "lists"), lists + 2, "the Table LIST went upstream");

    snprintf(path, sizeof(path), "%s/w1?resourceVersion=0", coll);
    fetch(px.url, path, kubectl, &b);
    expect_code(&b, 200);
    cr_assert(starts_with(b.body, "{\"kind\":\"Table\""), "%.200s", b.body);
    http_resp_free(&b);
    cr_assert_eq(sim_stat(sim.url, q, "gets"), gets + 1, "the Table GET went upstream");

    snprintf(path, sizeof(path), "%s?watch=true&resourceVersion=0&timeoutSeconds=1", coll);
    fetch(px.url, path, kubectl, &b);
    expect_code(&b, 200);
    cr_assert(starts_with(b.body, "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Table\""), "%.200s",
              b.body);
    cr_assert_not_null(strstr(b.body, "\"cells\":[\"w1\","), "%.300s", b.body);
    http_resp_free(&b);
    cr_assert_eq(sim_stat(sim.url, q, "watches"), watches + 1, "the Table WATCH went upstream");

    srv_stop(&px, "kwp proxy");
    srv_stop(&sim, "kwp sim");
}
