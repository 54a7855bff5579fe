/*
 * test_objects.c - sim/objects: create/update preparation with kube-apiserver's messages,
 * RFC 7386 merge patch (the RFC's own examples), the kinds table, the generators
 * (valid, deterministic, realistic sizes) and churn mutations, kube-apiserver's defaults for
 * the workload kinds, and Service cluster IP and node port allocation (uniqueness, ranges,
 * kube's 422 messages).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "sim/objects.h"

#define CREATED "2025-01-01T00:00:00Z"

static cJSON *parse(const char *json)
{
    cJSON *obj = cJSON_Parse(json);

    cr_assert(obj != NULL, "bad test JSON: %s", json);
    return obj;
}

/* Prints compactly and frees <obj>; the caller frees the string. */
static char *print_free(cJSON *obj)
{
    char *s = cJSON_PrintUnformatted(obj);

    cJSON_Delete(obj);
    return s;
}

static const char *meta_str(const cJSON *obj, const char *key)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Runs objects_prepare_create on <json>; returns rc, the result in *out (caller frees). */
static int create(const char *json, const char *resource, const char *ns, const char *url_name,
                  uint64_t rv, char **out, char *err, size_t err_len)
{
    cJSON *obj = parse(json);
    int rc = objects_prepare_create(obj, resource, ns, url_name, rv, "u-1", CREATED, err,
                                    err_len);

    *out = print_free(obj);
    return rc;
}

/* ---- kinds --------------------------------------------------------------------------------- */

Test(objects, kind_table)
{
    cr_assert_str_eq(objects_kind("pods"), "Pod");
    cr_assert_str_eq(objects_kind("configmaps"), "ConfigMap");
    cr_assert_str_eq(objects_kind("deployments"), "Deployment");
    cr_assert_str_eq(objects_kind("namespaces"), "Namespace");
    cr_assert_null(objects_kind("widgets"));
    cr_assert_null(objects_kind(NULL));
    cr_assert_str_eq(objects_type("deployments")->group, "apps");
    cr_assert_str_eq(objects_type("pods")->list_kind, "PodList");
    cr_assert(!objects_type("nodes")->namespaced);
}

/* ---- create ------------------------------------------------------------------------------- */

Test(objects, create_sets_system_fields_in_go_order)
{
    char *out;
    char err[256];

    cr_assert_eq(create("{\"spec\":{\"containers\":[]},\"metadata\":{\"labels\":{\"a\":\"b\"},"
                        "\"name\":\"p1\",\"uid\":\"forged\",\"generation\":9,\"selfLink\":\"x\"},"
                        "\"apiVersion\":\"v1\",\"kind\":\"Pod\"}",
                        "pods", "default", NULL, 42, &out, err, sizeof(err)),
                 0, "%s", err);
    cr_assert_str_eq(out, "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p1\","
                          "\"namespace\":\"default\",\"uid\":\"u-1\",\"resourceVersion\":\"42\","
                          "\"generation\":1,\"creationTimestamp\":\"" CREATED "\",\"labels\":{"
                          "\"a\":\"b\"}},\"spec\":{\"containers\":[]}}");
    free(out);
}

Test(objects, create_fills_kind_and_drops_generation_without_spec)
{
    char *out;

    cr_assert_eq(create("{\"metadata\":{\"name\":\"c\",\"generation\":3},\"data\":{}}",
                        "configmaps", "ns1", NULL, 7, &out, NULL, 0),
                 0);
    cr_assert_str_eq(out, "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
                          "\"c\",\"namespace\":\"ns1\",\"uid\":\"u-1\",\"resourceVersion\":\"7\","
                          "\"creationTimestamp\":\"" CREATED "\"},\"data\":{}}");
    free(out);
    cr_assert_eq(create("{\"metadata\":{\"name\":\"d\"},\"spec\":{}}", "deployments", "ns1", NULL,
                        7, &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "\"apiVersion\":\"apps/v1\"") != NULL, "%s", out);
    cr_assert(strstr(out, "\"generation\":1") != NULL, "%s", out);
    free(out);
    /* Namespace, Node and Service have a spec but no generation. */
    cr_assert_eq(create("{\"metadata\":{\"name\":\"n\"},\"spec\":{}}", "namespaces", NULL, NULL, 7,
                        &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "generation") == NULL, "%s", out);
    free(out);
}

Test(objects, create_namespace_rules)
{
    char *out;
    char err[256];

    cr_assert_eq(create("{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\",\"namespace\":"
                        "\"other\"}}",
                        "configmaps", "default", NULL, 1, &out, err, sizeof(err)),
                 -EINVAL);
    cr_assert_str_eq(err, "the namespace of the provided object does not match the namespace "
                          "sent on the request");
    free(out);
    cr_assert_eq(create("{\"metadata\":{\"name\":\"c\",\"namespace\":\"default\"}}", "configmaps",
                        "default", NULL, 1, &out, NULL, 0),
                 0);
    free(out);
    /* cluster-scoped: a namespace in the body is dropped */
    cr_assert_eq(create("{\"metadata\":{\"name\":\"n1\",\"namespace\":\"x\"}}", "nodes", NULL, NULL,
                        1, &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "namespace") == NULL, "%s", out);
    free(out);
    /* ... also when the caller passes a namespace for a built-in cluster-scoped resource */
    cr_assert_eq(create("{\"metadata\":{\"name\":\"n1\",\"namespace\":\"x\"}}", "nodes", "x", NULL,
                        1, &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "namespace") == NULL, "%s", out);
    free(out);
}

Test(objects, create_generate_name)
{
    char err[256];
    const char *name;
    cJSON *a = parse("{\"metadata\":{\"generateName\":\"web-\"}}");
    cJSON *b = parse("{\"metadata\":{\"generateName\":\"web-\"}}");
    cJSON *c = parse("{\"metadata\":{\"generateName\":\"web-\"}}");

    cr_assert_eq(objects_prepare_create(a, "pods", "default", NULL, 5, "u-1", CREATED, err,
                                        sizeof(err)),
                 0, "%s", err);
    name = meta_str(a, "name");
    cr_assert_eq(strlen(name), 4 + OBJECTS_GENERATE_SUFFIX_LEN);
    cr_assert_eq(strncmp(name, "web-", 4), 0);
    for (size_t i = 4; name[i] != '\0'; i++) {
        cr_assert(strchr("bcdfghjklmnpqrstvwxz2456789", name[i]) != NULL, "%s", name);
    }
    cr_assert_str_eq(meta_str(a, "generateName"), "web-");
    /* reproducible from (uid, rv), different for another rv */
    objects_prepare_create(b, "pods", "default", NULL, 5, "u-1", CREATED, NULL, 0);
    objects_prepare_create(c, "pods", "default", NULL, 6, "u-2", CREATED, NULL, 0);
    cr_assert_str_eq(meta_str(b, "name"), name);
    cr_assert_str_neq(meta_str(c, "name"), name);
    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_Delete(c);
}

Test(objects, create_generate_name_cuts_a_long_prefix_to_58)
{
    char prefix[71];
    char json[128];
    cJSON *obj;

    memset(prefix, 'a', 70);
    prefix[70] = '\0';
    snprintf(json, sizeof(json), "{\"metadata\":{\"generateName\":\"%s\"}}", prefix);
    obj = parse(json);
    cr_assert_eq(objects_prepare_create(obj, "configmaps", "default", NULL, 1, "u", CREATED, NULL,
                                        0),
                 0);
    cr_assert_eq(strlen(meta_str(obj, "name")), 63);
    cr_assert_eq(strncmp(meta_str(obj, "name"), prefix, 58), 0);
    cJSON_Delete(obj);
}

Test(objects, create_without_name_is_invalid)
{
    char *out;
    char err[256];

    cr_assert_eq(create("{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{}}",
                        "configmaps", "default", NULL, 1, &out, err, sizeof(err)),
                 -EDOM);
    cr_assert_str_eq(err, "ConfigMap \"\" is invalid: metadata.name: Required value: name or "
                          "generateName is required");
    free(out);
    cr_assert_eq(create("{}", "deployments", "default", NULL, 1, &out, err, sizeof(err)), -EDOM);
    cr_assert_str_eq(err, "Deployment.apps \"\" is invalid: metadata.name: Required value: name "
                          "or generateName is required");
    free(out);
}

Test(objects, create_with_resource_version_is_refused_like_storage)
{
    char *out;
    char err[256];

    cr_assert_eq(create("{\"metadata\":{\"name\":\"c\",\"resourceVersion\":\"12\"}}", "configmaps",
                        "default", NULL, 13, &out, err, sizeof(err)),
                 -EIO);
    cr_assert_str_eq(err, "resourceVersion should not be set on objects to be created");
    free(out);
    /* "0" parses as zero, anything unparseable is ignored: both are overwritten */
    cr_assert_eq(create("{\"metadata\":{\"name\":\"c\",\"resourceVersion\":\"0\"}}", "configmaps",
                        "default", NULL, 13, &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "\"resourceVersion\":\"13\"") != NULL, "%s", out);
    free(out);
}

Test(objects, create_decode_errors)
{
    char *out;
    char err[256];
    cJSON *arr = parse("[]");

    cr_assert_eq(create("{\"kind\":\"Secret\",\"metadata\":{\"name\":\"c\"}}", "configmaps",
                        "default", NULL, 1, &out, err, sizeof(err)),
                 -EINVAL);
    cr_assert_str_eq(err, "the object provided is unrecognized (must be of type ConfigMap)");
    free(out);
    cr_assert_eq(create("{\"metadata\":\"c\"}", "configmaps", "default", NULL, 1, &out, NULL, 0),
                 -EINVAL);
    free(out);
    cr_assert_eq(objects_prepare_create(arr, "pods", "default", NULL, 1, "u", CREATED, NULL, 0),
                 -EINVAL);
    cJSON_Delete(arr);
    /* custom resources must say what they are */
    cr_assert_eq(create("{\"metadata\":{\"name\":\"w\"}}", "widgets", "default", NULL, 1, &out,
                        NULL, 0),
                 -EINVAL);
    free(out);
    cr_assert_eq(create("{\"kind\":\"Widget\",\"apiVersion\":\"example.com/v1\",\"metadata\":{"
                        "\"name\":\"w\"},\"spec\":{}}",
                        "widgets", "default", NULL, 1, &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "\"generation\":1") != NULL, "%s", out);
    free(out);
}

Test(objects, create_with_url_name_checks_it)
{
    char *out;
    char err[256];

    cr_assert_eq(create("{\"metadata\":{\"name\":\"b\"}}", "configmaps", "default", "a", 1, &out,
                        err, sizeof(err)),
                 -EINVAL);
    cr_assert_str_eq(err, "the name of the object (b) does not match the name on the URL (a)");
    free(out);
    cr_assert_eq(create("{\"metadata\":{\"name\":\"a\"}}", "configmaps", "default", "a", 1, &out,
                        NULL, 0),
                 0);
    free(out);
}

Test(objects, create_namespace_as_its_strategy_does)
{
    char *out;

    /* the body kubectl create namespace sends (tests/data/kubectl-create-namespace.pb) */
    cr_assert_eq(create("{\"kind\":\"Namespace\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
                        "\"ns1\"},\"spec\":{},\"status\":{}}",
                        "namespaces", NULL, NULL, 3, &out, NULL, 0),
                 0);
    cr_assert_str_eq(out, "{\"kind\":\"Namespace\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
                          "\"ns1\",\"uid\":\"u-1\",\"resourceVersion\":\"3\",\"creationTimestamp\":"
                          "\"" CREATED "\",\"labels\":{\"kubernetes.io/metadata.name\":\"ns1\"}},"
                          "\"spec\":{\"finalizers\":[\"kubernetes\"]},\"status\":{\"phase\":"
                          "\"Active\"}}");
    free(out);
    /* an existing kubernetes finalizer is not repeated, others are kept */
    cr_assert_eq(create("{\"metadata\":{\"name\":\"n\"},\"spec\":{\"finalizers\":[\"x\","
                        "\"kubernetes\"]}}",
                        "namespaces", NULL, NULL, 3, &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "\"finalizers\":[\"x\",\"kubernetes\"]") != NULL, "%s", out);
    free(out);
}

Test(objects, create_secret_folds_string_data)
{
    char *out;

    cr_assert_eq(create("{\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"},\"data\":{\"a\":"
                        "\"YQ==\",\"k\":\"old\"},\"stringData\":{\"k\":\"v\"},\"type\":\"Opaque\"}",
                        "secrets", "default", NULL, 1, &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "\"data\":{\"a\":\"YQ==\",\"k\":\"dg==\"}") != NULL, "%s", out);
    cr_assert(strstr(out, "stringData") == NULL, "%s", out);
    free(out);
}

/* ---- update -------------------------------------------------------------------------------- */

#define OLD_POD                                                                                    \
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\",\"namespace\":"          \
    "\"default\",\"uid\":\"u-old\",\"resourceVersion\":\"5\",\"generation\":1,"                    \
    "\"creationTimestamp\":\"2024-06-01T00:00:00Z\"},\"spec\":{\"nodeName\":\"n1\"}}"

/* Updates OLD_POD with <json>; returns rc and the result in *out. */
static int update(const char *old_json, const char *json, const char *resource, const char *ns,
                  const char *name, char **out, char *err, size_t err_len)
{
    cJSON *old = parse(old_json);
    cJSON *obj = parse(json);
    int rc = objects_prepare_update(obj, old, resource, ns, name, 6, err, err_len);

    cJSON_Delete(old);
    *out = print_free(obj);
    return rc;
}

Test(objects, update_with_a_stale_resource_version_conflicts)
{
    char *out;
    char err[256];

    cr_assert_eq(update(OLD_POD, "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"4\"}}",
                        "pods", "default", "a", &out, err, sizeof(err)),
                 -EBUSY);
    cr_assert_str_eq(err, "Operation cannot be fulfilled on pods \"a\": the object has been "
                          "modified; please apply your changes to the latest version and try "
                          "again");
    free(out);
    cr_assert_eq(update("{\"metadata\":{\"name\":\"d\",\"resourceVersion\":\"5\"}}",
                        "{\"metadata\":{\"name\":\"d\",\"resourceVersion\":\"x\"}}",
                        "deployments", "ns", "d", &out, err, sizeof(err)),
                 -EBUSY);
    cr_assert(strncmp(err, "Operation cannot be fulfilled on deployments.apps \"d\":", 54) == 0,
              "%s", err);
    free(out);
}

Test(objects, update_keeps_identity_and_bumps_generation_on_spec_change)
{
    char *out;
    char err[256];

    cr_assert_eq(update(OLD_POD,
                        "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"5\",\"uid\":\"forged\","
                        "\"creationTimestamp\":\"1999-01-01T00:00:00Z\",\"generation\":40},"
                        "\"spec\":{\"nodeName\":\"n2\"}}",
                        "pods", "default", "a", &out, err, sizeof(err)),
                 0, "%s", err);
    cr_assert_str_eq(out, "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\","
                          "\"namespace\":\"default\",\"uid\":\"u-old\",\"resourceVersion\":\"6\","
                          "\"generation\":2,\"creationTimestamp\":\"2024-06-01T00:00:00Z\"},"
                          "\"spec\":{\"nodeName\":\"n2\"}}");
    free(out);
    /* unconditional (no resourceVersion), label-only change: generation stays */
    cr_assert_eq(update(OLD_POD,
                        "{\"metadata\":{\"name\":\"a\",\"labels\":{\"x\":\"y\"}},\"spec\":{"
                        "\"nodeName\":\"n1\"}}",
                        "pods", NULL, NULL, &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "\"generation\":1,") != NULL, "%s", out);
    cr_assert(strstr(out, "\"resourceVersion\":\"6\"") != NULL, "%s", out);
    cr_assert(strstr(out, "\"namespace\":\"default\"") != NULL, "ns NULL keeps it: %s", out);
    free(out);
    /* a ConfigMap has no generation to keep */
    cr_assert_eq(update("{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\",\"resourceVersion\":"
                        "\"5\"}}",
                        "{\"metadata\":{\"name\":\"c\",\"generation\":3},\"data\":{}}",
                        "configmaps", "default", "c", &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "generation") == NULL, "%s", out);
    cr_assert(strstr(out, "\"kind\":\"ConfigMap\"") != NULL, "%s", out);
    free(out);
}

Test(objects, update_checks_name_namespace_and_kind)
{
    char *out;
    char err[256];

    cr_assert_eq(update(OLD_POD, "{\"metadata\":{\"name\":\"b\"}}", "pods", "default", "a", &out,
                        err, sizeof(err)),
                 -EINVAL);
    cr_assert_str_eq(err, "the name of the object (b) does not match the name on the URL (a)");
    free(out);
    cr_assert_eq(update(OLD_POD, "{\"metadata\":{}}", "pods", "default", "a", &out, err,
                        sizeof(err)),
                 -EINVAL);
    cr_assert_str_eq(err, "the name of the object (a based on URL) was undeterminable: name "
                          "must be provided");
    free(out);
    cr_assert_eq(update(OLD_POD, "{\"metadata\":{\"name\":\"a\",\"namespace\":\"other\"}}", "pods",
                        "default", "a", &out, err, sizeof(err)),
                 -EINVAL);
    cr_assert_str_eq(err, "the namespace of the object (other) does not match the namespace on "
                          "the request (default)");
    free(out);
    cr_assert_eq(update(OLD_POD, "{\"kind\":\"Node\",\"metadata\":{\"name\":\"a\"}}", "pods",
                        "default", "a", &out, err, sizeof(err)),
                 -EINVAL);
    cr_assert_str_eq(err, "the object provided is unrecognized (must be of type Pod)");
    free(out);
}

Test(objects, update_secret_folds_string_data)
{
    char *out;

    cr_assert_eq(update("{\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"},\"data\":{}}",
                        "{\"metadata\":{\"name\":\"s\"},\"stringData\":{\"p\":\"foobar\"}}",
                        "secrets", "default", "s", &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "\"data\":{\"p\":\"Zm9vYmFy\"}") != NULL, "%s", out);
    free(out);
}

/* Found by tests/fuzz/fuzz_objects (corpus/objects/crash-repeated-string-data): cJSON keeps
 * repeated keys and finds the first, so the second stringData survived into the stored Secret.
 * Go's decoder keeps the last value; so does the simulator now, at every level. */
Test(objects, repeated_keys_keep_their_last_value)
{
    char *out;

    cr_assert_eq(create("{\"metadata\":{\"name\":\"s\"},\"stringData\":{\"k\":\"v\"},"
                        "\"stringData\":{\"k2\":\"w\"},\"data\":{\"a\":\"YQ==\"},"
                        "\"data\":{\"x\":\"eA==\"}}",
                        "secrets", "default", NULL, 1, &out, NULL, 0),
                 0);
    cr_expect(strstr(out, "stringData") == NULL, "%s", out);
    cr_expect(strstr(out, "\"data\":{\"x\":\"eA==\",\"k2\":\"dw==\"}") != NULL, "%s", out);
    cr_expect(strstr(out, "YQ==") == NULL, "%s", out);
    free(out);

    /* Two metadata members: the system fields land in the one that is kept, the last. */
    cr_assert_eq(create("{\"metadata\":{\"name\":\"first\"},\"metadata\":{\"name\":\"p\","
                        "\"labels\":{\"a\":\"1\",\"a\":\"2\"}}}",
                        "pods", "default", NULL, 7, &out, NULL, 0),
                 0);
    cr_expect_str_eq(out, "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p\","
                          "\"namespace\":\"default\",\"uid\":\"u-1\",\"resourceVersion\":\"7\","
                          "\"creationTimestamp\":\"" CREATED "\",\"labels\":{\"a\":\"2\"}}}");
    free(out);

    cr_assert_eq(update(OLD_POD, "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"},"
                                 "\"metadata\":{\"name\":\"a\"},\"spec\":{},\"spec\":{\"nodeName\":\"n1\"}}",
                        "pods", "default", "a", &out, NULL, 0),
                 0, "the stale resourceVersion was in the dropped copy");
    cr_expect(strstr(out, "\"generation\":1,") != NULL, "spec unchanged: %s", out);
    cr_expect(strstr(out, "\"spec\":{\"nodeName\":\"n1\"}}") != NULL, "%s", out);
    free(out);
}

/* ---- merge patch ------------------------------------------------------------------------------ */

/* RFC 7386 appendix A, the examples with an object target and an object patch. */
Test(objects, merge_patch_rfc7386_examples)
{
    static const char *const cases[][3] = {
        {"{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
        {"{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}"},
        {"{\"a\":\"b\"}", "{\"a\":null}", "{}"},
        {"{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}"},
        {"{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
        {"{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}"},
        {"{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}"},
        {"{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}"},
        {"{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}"},
        {"{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}"},
        /* a non-object member is replaced by {} before merging into it */
        {"{\"a\":\"x\"}", "{\"a\":{\"b\":\"c\",\"d\":null}}", "{\"a\":{\"b\":\"c\"}}"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *target = parse(cases[i][0]);
        cJSON *patch = parse(cases[i][1]);
        cJSON *want = parse(cases[i][2]);
        cr_assert_eq(objects_merge_patch(target, patch), 0);
        char *got = cJSON_PrintUnformatted(target);
        cr_assert(cJSON_Compare(target, want, true), "case %zu: got %s want %s", i, got,
                  cases[i][2]);
        free(got);
        cJSON_Delete(target);
        cJSON_Delete(patch);
        cJSON_Delete(want);
    }
}

Test(objects, merge_patch_needs_objects)
{
    cJSON *obj = parse("{\"a\":1}");
    cJSON *arr = parse("[\"c\"]");
    cJSON *null = parse("null");

    cr_assert_eq(objects_merge_patch(obj, arr), -EINVAL);
    cr_assert_eq(objects_merge_patch(obj, null), -EINVAL);
    cr_assert_eq(objects_merge_patch(arr, obj), -EINVAL);
    cJSON_Delete(obj);
    cJSON_Delete(arr);
    cJSON_Delete(null);
}

Test(objects, merge_patch_then_update_detects_a_stale_patch)
{
    /* A PATCH carrying an old resourceVersion conflicts, as kube's does. */
    cJSON *old = parse(OLD_POD);
    cJSON *copy = cJSON_Duplicate(old, true);
    cJSON *patch = parse("{\"metadata\":{\"resourceVersion\":\"3\",\"labels\":{\"x\":\"y\"}}}");

    cr_assert_eq(objects_merge_patch(copy, patch), 0);
    cr_assert_eq(objects_prepare_update(copy, old, "pods", "default", "a", 6, NULL, 0), -EBUSY);
    cJSON_Delete(copy);
    cJSON_Delete(patch);
    cJSON_Delete(old);
}

/* ---- generators ----------------------------------------------------------------------------- */

static const char *const generated[] = {"pods", "configmaps", "secrets", "services",
                                        "nodes", "namespaces", "events", "deployments",
                                        "replicasets", "widgets"};

Test(objects, generated_objects_are_valid_and_deterministic)
{
    for (size_t i = 0; i < sizeof(generated) / sizeof(generated[0]); i++) {
        const char *res = generated[i];
        const struct apires_kind *t = objects_type(res);
        cJSON *obj = objects_generate(res, "team-a", "web-1", 7);
        const cJSON *labels;
        char *a;
        char *b;
        cJSON *again;

        cr_assert(cJSON_IsObject(obj), "%s", res);
        cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(obj, "kind")->valuestring,
                         t != NULL ? t->kind : "Widget");
        cr_assert_str_eq(meta_str(obj, "name"), "web-1");
        if (t == NULL || t->namespaced) {
            cr_assert_str_eq(meta_str(obj, "namespace"), "team-a", "%s", res);
        } else {
            cr_assert_null(meta_str(obj, "namespace"), "%s", res);
        }
        labels = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "labels");
        if (strcmp(res, "events") != 0) { /* real Events carry no labels */
            cr_assert(cJSON_IsObject(labels) && labels->child != NULL, "%s has no labels", res);
        }

        a = print_free(obj);
        again = cJSON_Parse(a);
        cr_assert(again != NULL, "%s: %s", res, a);
        b = print_free(objects_generate(res, "team-a", "web-1", 7));
        cr_assert_str_eq(a, b, "%s is not deterministic", res);
        free(b);
        /* and the generated object is a valid create */
        cr_assert_eq(objects_prepare_create(again, res, "team-a", NULL, 10, "u", CREATED, NULL, 0),
                     t == NULL ? -EINVAL : 0, "%s", res); /* no apiVersion for a custom kind */
        cJSON_Delete(again);
        free(a);
    }
}

Test(objects, generated_pods_look_real_and_weigh_about_1kb)
{
    size_t min = SIZE_MAX;
    size_t max = 0;
    size_t total = 0;

    for (unsigned seed = 0; seed < 200; seed++) {
        char name[32];
        cJSON *pod;
        const cJSON *spec;
        const cJSON *status;
        char *s;
        size_t n;

        snprintf(name, sizeof(name), "api-%u", seed);
        pod = objects_generate("pods", "default", name, seed);
        spec = cJSON_GetObjectItemCaseSensitive(pod, "spec");
        status = cJSON_GetObjectItemCaseSensitive(pod, "status");
        cr_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(spec, "nodeName")));
        cr_assert(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(spec, "containers")));
        cr_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(status, "phase")));
        cr_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(status, "podIP")));
        cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(
                             cJSON_GetObjectItemCaseSensitive(
                                 cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "labels"),
                             "app")
                             ->valuestring,
                         "api");
        cr_assert_eq(objects_prepare_create(pod, "pods", "default", NULL, 123456, 
                                            "6f0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d", CREATED, NULL,
                                            0),
                     0);
        s = print_free(pod);
        n = strlen(s);
        min = n < min ? n : min;
        max = n > max ? n : max;
        total += n;
        free(s);
    }
    /* ~1 KB, as the fan-out benchmarks want; containerStatuses carry image and imageID */
    cr_assert(min >= 900 && max <= 1400, "stored pod sizes %zu..%zu bytes", min, max);
    cr_assert(total / 200 >= 1000 && total / 200 <= 1350, "mean %zu", total / 200);
}

Test(objects, different_seeds_give_different_objects)
{
    char *a = print_free(objects_generate("pods", "default", "web-1", 1));
    char *b = print_free(objects_generate("pods", "default", "web-1", 2));

    cr_assert_str_neq(a, b);
    free(a);
    free(b);
}

Test(objects, generic_kind_comes_from_the_plural)
{
    cJSON *obj = objects_generate("widgets", NULL, "w", 1);

    cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(obj, "kind")->valuestring, "Widget");
    cr_assert_null(cJSON_GetObjectItemCaseSensitive(obj, "apiVersion"));
    cr_assert_null(meta_str(obj, "namespace"));
    cJSON_Delete(obj);
}

/* ---- churn ---------------------------------------------------------------------------------- */

static const cJSON *path(const cJSON *obj, const char *a, const char *b)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, a), b);
}

Test(objects, mutate_pod_changes_label_or_annotation_and_status)
{
    cJSON *pod = objects_generate("pods", "default", "web-1", 3);
    const cJSON *cs;

    cr_assert_eq(objects_mutate(pod, 5), 0);
    cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(path(pod, "metadata", "labels"), "churn")
                         ->valuestring,
                     "b1");
    cs = cJSON_GetArrayItem(path(pod, "status", "containerStatuses"), 0);
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(cs, "restartCount")->valueint, 1);
    cr_assert_eq(objects_mutate(pod, 8), 0);
    cr_assert_str_eq(
        cJSON_GetObjectItemCaseSensitive(path(pod, "metadata", "annotations"), "kwp.io/churn")
            ->valuestring,
        "8");
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(cs, "restartCount")->valueint, 2);
    cJSON_Delete(pod);
}

Test(objects, mutate_every_kind_changes_it)
{
    for (size_t i = 0; i < sizeof(generated) / sizeof(generated[0]); i++) {
        cJSON *obj = objects_generate(generated[i], "ns", "web-1", 1);
        char *before = cJSON_PrintUnformatted(obj);
        char *after;

        cr_assert_eq(objects_mutate(obj, 10), 0);
        after = cJSON_PrintUnformatted(obj);
        cr_assert_str_neq(before, after, "%s", generated[i]);
        free(before);
        free(after);
        /* the mutated object is a valid update of the original */
        cJSON_Delete(obj);
    }
    cJSON *arr = parse("[]");
    cr_assert_eq(objects_mutate(arr, 1), -EINVAL);
    cJSON_Delete(arr);
}

Test(objects, mutate_workload_and_configmap_status_fields)
{
    cJSON *dep = objects_generate("deployments", "ns", "web", 1);
    cJSON *cm = objects_generate("configmaps", "ns", "web", 1);
    cJSON *sec = objects_generate("secrets", "ns", "web", 1);
    int replicas = path(dep, "spec", "replicas")->valueint;

    cr_assert_eq(objects_mutate(dep, 0), 0);
    cr_assert_eq(path(dep, "status", "readyReplicas")->valueint, 0);
    cr_assert_eq(objects_mutate(dep, (unsigned)replicas), 0);
    cr_assert_eq(path(dep, "status", "readyReplicas")->valueint, replicas);
    cr_assert_eq(objects_mutate(cm, 42), 0);
    cr_assert_str_eq(path(cm, "data", "rev")->valuestring, "42");
    cr_assert_eq(objects_mutate(sec, 42), 0);
    cr_assert_str_eq(path(sec, "data", "rev")->valuestring, "NDI=");
    cJSON_Delete(dep);
    cJSON_Delete(cm);
    cJSON_Delete(sec);
}

/* ---- kube-apiserver's defaulting of the workload kinds ------------------------------------ */

/* obj[k1][k2]...: the keys end with NULL; NULL when any is missing. */
static cJSON *at(const cJSON *obj, ...)
{
    va_list ap;
    const char *k;

    va_start(ap, obj);
    while (obj != NULL && (k = va_arg(ap, const char *)) != NULL) {
        obj = cJSON_GetObjectItemCaseSensitive(obj, k);
    }
    va_end(ap);
    return (cJSON *)obj;
}

/* The string at obj[k1]...[kn] (keys end with NULL), "" when absent. */
#define AT_STR(...) (cJSON_IsString(at(__VA_ARGS__)) ? at(__VA_ARGS__)->valuestring : "")
/* The number at obj[k1]...[kn], -1 when absent. */
#define AT_NUM(...) (cJSON_IsNumber(at(__VA_ARGS__)) ? at(__VA_ARGS__)->valuedouble : -1)
/* Member <key> of a Service's spec.ports[<i>]. */
#define PORT(svc, i, key) cJSON_GetArrayItem(at(svc, "spec", "ports", NULL), i), key, NULL

/* The JSON sim/proto makes of `kubectl create deployment d1 --image=nginx` (test_proto). */
#define KUBECTL_DEPLOYMENT                                                                         \
    "{\"kind\":\"Deployment\",\"apiVersion\":\"apps/v1\",\"metadata\":{\"name\":\"d1\","          \
    "\"labels\":{\"app\":\"d1\"}},\"spec\":{\"replicas\":1,\"selector\":{\"matchLabels\":{"       \
    "\"app\":\"d1\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"d1\"}},\"spec\":{"        \
    "\"containers\":[{\"name\":\"nginx\",\"image\":\"nginx\",\"resources\":{}}]}},"               \
    "\"strategy\":{}},\"status\":{}}"

#define DEFAULTED_POD_SPEC_TAIL                                                                    \
    "\"restartPolicy\":\"Always\",\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":"             \
    "\"ClusterFirst\",\"securityContext\":{},\"schedulerName\":\"default-scheduler\""

#define DEFAULTED_CONTAINER_TAIL                                                                   \
    "\"terminationMessagePath\":\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\""

Test(objects, deployment_gets_kube_defaults_in_go_order)
{
    char *out;

    cr_assert_eq(create(KUBECTL_DEPLOYMENT, "deployments", "default", NULL, 7, &out, NULL, 0), 0);
    cr_assert_str_eq(
        out,
        "{\"kind\":\"Deployment\",\"apiVersion\":\"apps/v1\",\"metadata\":{\"name\":\"d1\","
        "\"namespace\":\"default\",\"uid\":\"u-1\",\"resourceVersion\":\"7\",\"generation\":1,"
        "\"creationTimestamp\":\"" CREATED "\",\"labels\":{\"app\":\"d1\"}},\"spec\":{"
        "\"replicas\":1,\"selector\":{\"matchLabels\":{\"app\":\"d1\"}},\"template\":{"
        "\"metadata\":{\"labels\":{\"app\":\"d1\"}},\"spec\":{\"containers\":[{\"name\":"
        "\"nginx\",\"image\":\"nginx\",\"resources\":{}," DEFAULTED_CONTAINER_TAIL ","
        "\"imagePullPolicy\":\"Always\"}]," DEFAULTED_POD_SPEC_TAIL "}},\"strategy\":{\"type\":"
        "\"RollingUpdate\",\"rollingUpdate\":{\"maxUnavailable\":\"25%\",\"maxSurge\":\"25%\"}},"
        "\"revisionHistoryLimit\":10,\"progressDeadlineSeconds\":600},\"status\":{}}");
    free(out);
}

Test(objects, deployment_keeps_what_the_client_set)
{
    char *out;

    /* replicas and revisionHistoryLimit are pointers: 0 is a value; Recreate gets no
     * rollingUpdate; a status sent on create is kept (see objects.h) */
    cr_assert_eq(create("{\"metadata\":{\"name\":\"d\"},\"status\":{\"readyReplicas\":2},"
                        "\"spec\":{\"replicas\":0,\"revisionHistoryLimit\":0,\"strategy\":{"
                        "\"type\":\"Recreate\"},\"template\":{\"spec\":{\"restartPolicy\":"
                        "\"OnFailure\",\"containers\":[{\"name\":\"c\",\"image\":\"x\","
                        "\"imagePullPolicy\":\"Never\"}]}}}}",
                        "deployments", "ns", NULL, 3, &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "\"spec\":{\"replicas\":0,\"template\":{\"metadata\":{},\"spec\":{"
                          "\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{},"
                          DEFAULTED_CONTAINER_TAIL ",\"imagePullPolicy\":\"Never\"}],"
                          "\"restartPolicy\":\"OnFailure\",") != NULL,
              "%s", out);
    cr_assert(strstr(out, "\"strategy\":{\"type\":\"Recreate\"},\"revisionHistoryLimit\":0,"
                          "\"progressDeadlineSeconds\":600},\"status\":{\"readyReplicas\":2}}") !=
                  NULL,
              "%s", out);
    free(out);
}

/* SetDefaults_Container's pull policy follows parsers.ParseImageName's tag. */
Test(objects, image_pull_policy_follows_the_tag)
{
    static const struct {
        const char *image;
        const char *policy;
    } cases[] = {
        {"nginx", "Always"},
        {"nginx:latest", "Always"},
        {"nginx:1.27", "IfNotPresent"},
        {"localhost:5000/nginx", "Always"},
        {"localhost:5000/team/nginx:v1", "IfNotPresent"},
        {"nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
         "IfNotPresent"},
        {"nginx:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
         "Always"},
        {"Registry.Example.com/nginx", "Always"},
        {"Nginx", "IfNotPresent"}, /* does not parse: no tag */
        {"", "IfNotPresent"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char json[512];
        cJSON *obj;
        const cJSON *c;

        snprintf(json, sizeof(json),
                 "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"template\":{\"spec\":{"
                 "\"containers\":[{\"name\":\"c\",\"image\":\"%s\"}]}}}}",
                 cases[i].image);
        obj = parse(json);
        cr_assert_eq(objects_prepare_create(obj, "deployments", "ns", NULL, 1, "u", CREATED, NULL,
                                            0),
                     0);
        c = cJSON_GetArrayItem(at(obj, "spec", "template", "spec", "containers", NULL), 0);
        cr_assert_str_eq(cJSON_GetObjectItem(c, "imagePullPolicy")->valuestring, cases[i].policy,
                         "%s", cases[i].image);
        cJSON_Delete(obj);
    }
}

/* What SetDefaults_PodSpec and the nested defaulters add inside a template. */
Test(objects, pod_template_nested_defaults)
{
    cJSON *obj = parse(
        "{\"metadata\":{\"name\":\"r\"},\"spec\":{\"template\":{\"spec\":{"
        "\"initContainers\":[{\"name\":\"i\",\"image\":\"busybox:1.36\"}],"
        "\"containers\":[{\"name\":\"c\",\"image\":\"app:v2\",\"ports\":[{\"containerPort\":80},"
        "{\"containerPort\":53,\"protocol\":\"UDP\"}],\"env\":[{\"name\":\"N\",\"valueFrom\":{"
        "\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}},{\"name\":\"C\",\"valueFrom\":{"
        "\"resourceFieldRef\":{\"resource\":\"limits.cpu\"}}}],\"livenessProbe\":{\"httpGet\":{"
        "\"port\":8080}},\"readinessProbe\":{\"tcpSocket\":{\"port\":80},\"periodSeconds\":5},"
        "\"lifecycle\":{\"preStop\":{\"httpGet\":{\"port\":80,\"path\":\"/stop\"}}}}],"
        "\"volumes\":[{\"name\":\"none\"},{\"name\":\"s\",\"secret\":{\"secretName\":\"x\"}},"
        "{\"name\":\"h\",\"hostPath\":{\"path\":\"/tmp\"}},{\"name\":\"p\",\"projected\":{"
        "\"sources\":[{\"serviceAccountToken\":{\"path\":\"t\"}},{\"downwardAPI\":{\"items\":[{"
        "\"path\":\"n\",\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}]}}]}},{\"name\":\"e\","
        "\"ephemeral\":{\"volumeClaimTemplate\":{\"spec\":{\"accessModes\":[\"ReadWriteOnce\"]}}}},"
        "{\"name\":\"m\",\"configMap\":{\"name\":\"cm\",\"defaultMode\":256}}]}}}}");
    const cJSON *spec;
    const cJSON *c;
    const cJSON *v;

    cr_assert_eq(objects_prepare_create(obj, "replicasets", "ns", NULL, 1, "u", CREATED, NULL, 0),
                 0);
    spec = at(obj, "spec", "template", "spec", NULL);
    c = cJSON_GetArrayItem(at(spec, "containers", NULL), 0);
    cr_assert_str_eq(AT_STR(cJSON_GetArrayItem(at(spec, "initContainers", NULL), 0),
                            "imagePullPolicy", NULL),
                     "IfNotPresent");
    cr_assert_str_eq(AT_STR(cJSON_GetArrayItem(at(c, "ports", NULL), 0), "protocol", NULL), "TCP");
    cr_assert_str_eq(AT_STR(cJSON_GetArrayItem(at(c, "ports", NULL), 1), "protocol", NULL), "UDP");
    cr_assert_str_eq(AT_STR(cJSON_GetArrayItem(at(c, "env", NULL), 0), "valueFrom", "fieldRef",
                            "apiVersion", NULL),
                     "v1");
    cr_assert_str_eq(AT_STR(cJSON_GetArrayItem(at(c, "env", NULL), 1), "valueFrom",
                            "resourceFieldRef", "divisor", NULL),
                     "0");
    cr_assert_str_eq(AT_STR(c, "livenessProbe", "httpGet", "path", NULL), "/");
    cr_assert_str_eq(AT_STR(c, "livenessProbe", "httpGet", "scheme", NULL), "HTTP");
    cr_assert_eq(AT_NUM(c, "livenessProbe", "timeoutSeconds", NULL), 1);
    cr_assert_eq(AT_NUM(c, "livenessProbe", "periodSeconds", NULL), 10);
    cr_assert_eq(AT_NUM(c, "livenessProbe", "successThreshold", NULL), 1);
    cr_assert_eq(AT_NUM(c, "livenessProbe", "failureThreshold", NULL), 3);
    cr_assert_eq(AT_NUM(c, "readinessProbe", "periodSeconds", NULL), 5);
    cr_assert_str_eq(AT_STR(c, "lifecycle", "preStop", "httpGet", "path", NULL), "/stop");
    cr_assert_str_eq(AT_STR(c, "lifecycle", "preStop", "httpGet", "scheme", NULL), "HTTP");
    v = at(spec, "volumes", NULL);
    cr_assert(cJSON_IsObject(at(cJSON_GetArrayItem(v, 0), "emptyDir", NULL)));
    cr_assert_eq(AT_NUM(cJSON_GetArrayItem(v, 1), "secret", "defaultMode", NULL), 420);
    cr_assert(cJSON_IsString(at(cJSON_GetArrayItem(v, 2), "hostPath", "type", NULL)));
    cr_assert_str_eq(AT_STR(cJSON_GetArrayItem(v, 2), "hostPath", "type", NULL), "");
    cr_assert_eq(AT_NUM(cJSON_GetArrayItem(v, 3), "projected", "defaultMode", NULL), 420);
    cr_assert_eq(AT_NUM(cJSON_GetArrayItem(at(cJSON_GetArrayItem(v, 3), "projected", "sources",
                                              NULL),
                                           0),
                        "serviceAccountToken", "expirationSeconds", NULL),
                 3600);
    cr_assert_str_eq(
        AT_STR(cJSON_GetArrayItem(at(cJSON_GetArrayItem(at(cJSON_GetArrayItem(v, 3), "projected",
                                                           "sources", NULL),
                                                        1),
                                     "downwardAPI", "items", NULL),
                                  0),
               "fieldRef", "apiVersion", NULL),
        "v1");
    cr_assert_str_eq(AT_STR(cJSON_GetArrayItem(v, 4), "ephemeral", "volumeClaimTemplate", "spec",
                            "volumeMode", NULL),
                     "Filesystem");
    cr_assert_eq(AT_NUM(cJSON_GetArrayItem(v, 5), "configMap", "defaultMode", NULL), 256);
    /* a ReplicaSet: replicas 1, status {"replicas":0} */
    cr_assert_eq(AT_NUM(obj, "spec", "replicas", NULL), 1);
    cr_assert_eq(AT_NUM(obj, "status", "replicas", NULL), 0);
    cJSON_Delete(obj);
}

/* The JSON sim/proto makes of `kubectl create job j1 --image=busybox`. */
#define KUBECTL_JOB                                                                                \
    "{\"kind\":\"Job\",\"apiVersion\":\"batch/v1\",\"metadata\":{\"name\":\"j1\"},\"spec\":{"     \
    "\"template\":{\"metadata\":{},\"spec\":{\"containers\":[{\"name\":\"j1\",\"image\":"         \
    "\"busybox\",\"resources\":{}}],\"restartPolicy\":\"Never\"}}},\"status\":{}}"

Test(objects, job_gets_defaults_selector_and_labels)
{
    char *out;

    cr_assert_eq(create(KUBECTL_JOB, "jobs", "default", NULL, 9, &out, NULL, 0), 0);
    cr_assert_str_eq(
        out,
        "{\"kind\":\"Job\",\"apiVersion\":\"batch/v1\",\"metadata\":{\"name\":\"j1\","
        "\"namespace\":\"default\",\"uid\":\"u-1\",\"resourceVersion\":\"9\",\"generation\":1,"
        "\"creationTimestamp\":\"" CREATED "\",\"labels\":{\"batch.kubernetes.io/controller-uid\":"
        "\"u-1\",\"batch.kubernetes.io/job-name\":\"j1\",\"controller-uid\":\"u-1\","
        "\"job-name\":\"j1\"}},\"spec\":{\"parallelism\":1,\"completions\":1,\"backoffLimit\":6,"
        "\"selector\":{\"matchLabels\":{\"batch.kubernetes.io/controller-uid\":\"u-1\"}},"
        "\"manualSelector\":false,\"template\":{\"metadata\":{\"labels\":{"
        "\"batch.kubernetes.io/controller-uid\":\"u-1\",\"batch.kubernetes.io/job-name\":"
        "\"j1\",\"controller-uid\":\"u-1\",\"job-name\":\"j1\"}},\"spec\":{\"containers\":[{"
        "\"name\":\"j1\",\"image\":\"busybox\",\"resources\":{}," DEFAULTED_CONTAINER_TAIL ","
        "\"imagePullPolicy\":\"Always\"}],\"restartPolicy\":\"Never\","
        "\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":\"ClusterFirst\","
        "\"securityContext\":{},\"schedulerName\":\"default-scheduler\"}},\"completionMode\":"
        "\"NonIndexed\",\"suspend\":false,\"podReplacementPolicy\":\"TerminatingOrFailed\"},"
        "\"status\":{}}");
    free(out);
}

Test(objects, job_defaults_respect_what_was_sent)
{
    cJSON *obj;

    /* completions alone: parallelism 1, completions kept; per-index backoff: MaxInt32; a
     * pod failure policy: Failed and pattern status True; own labels kept; a sent selector
     * (kube would refuse it without manualSelector) is kept and nothing is generated */
    obj = parse("{\"metadata\":{\"name\":\"j\",\"labels\":{\"team\":\"a\"}},\"spec\":{"
                "\"completions\":4,\"backoffLimitPerIndex\":1,\"completionMode\":\"Indexed\","
                "\"podFailurePolicy\":{\"rules\":[{\"action\":\"Ignore\",\"onPodConditions\":[{"
                "\"type\":\"DisruptionTarget\"}]}]},\"selector\":{\"matchLabels\":{\"x\":\"y\"}},"
                "\"template\":{\"metadata\":{\"labels\":{\"x\":\"y\"}},\"spec\":{"
                "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":"
                "\"b\"}]}}}}");
    cr_assert_eq(objects_prepare_create(obj, "jobs", "ns", NULL, 1, "uid-9", CREATED, NULL, 0), 0);
    cr_assert_eq(AT_NUM(obj, "spec", "completions", NULL), 4);
    cr_assert_eq(AT_NUM(obj, "spec", "parallelism", NULL), 1);
    cr_assert_eq(AT_NUM(obj, "spec", "backoffLimit", NULL), 2147483647);
    cr_assert_str_eq(AT_STR(obj, "spec", "completionMode", NULL), "Indexed");
    cr_assert_str_eq(AT_STR(obj, "spec", "podReplacementPolicy", NULL), "Failed");
    cr_assert_str_eq(AT_STR(cJSON_GetArrayItem(at(cJSON_GetArrayItem(at(obj, "spec",
                                                                        "podFailurePolicy",
                                                                        "rules", NULL),
                                                                     0),
                                                  "onPodConditions", NULL),
                                               0),
                            "status", NULL),
                     "True");
    cr_assert_eq(cJSON_GetArraySize(at(obj, "spec", "selector", "matchLabels", NULL)), 1);
    cr_assert_eq(cJSON_GetArraySize(at(obj, "spec", "template", "metadata", "labels", NULL)), 1);
    cr_assert_eq(cJSON_GetArraySize(at(obj, "metadata", "labels", NULL)), 1);
    cr_assert_str_eq(AT_STR(obj, "metadata", "labels", "team", NULL), "a");
    cJSON_Delete(obj);

    /* parallelism alone: no completions; manualSelector true: no generated selector */
    obj = parse("{\"metadata\":{\"name\":\"j\"},\"spec\":{\"parallelism\":3,\"manualSelector\":"
                "true,\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
                "\"b\"}]}}}}");
    cr_assert_eq(objects_prepare_create(obj, "jobs", "ns", NULL, 1, "uid-9", CREATED, NULL, 0), 0);
    cr_assert_null(at(obj, "spec", "completions", NULL));
    cr_assert_null(at(obj, "spec", "selector", NULL));
    cr_assert_null(at(obj, "spec", "template", "metadata", "labels", NULL));
    cr_assert_null(at(obj, "metadata", "labels", NULL));
    cJSON_Delete(obj);
}

Test(objects, replicationcontroller_selector_and_labels_from_the_template)
{
    char *out;

    cr_assert_eq(create("{\"metadata\":{\"name\":\"rc\"},\"spec\":{\"template\":{\"metadata\":{"
                        "\"labels\":{\"b\":\"2\",\"a\":\"1\"}},\"spec\":{\"containers\":[{"
                        "\"name\":\"c\",\"image\":\"x:1\"}]}}}}",
                        "replicationcontrollers", "ns", NULL, 2, &out, NULL, 0),
                 0);
    cr_assert(strstr(out, "\"labels\":{\"a\":\"1\",\"b\":\"2\"}},\"spec\":{\"replicas\":1,"
                          "\"selector\":{\"a\":\"1\",\"b\":\"2\"},\"template\":{\"metadata\":{"
                          "\"labels\":{\"a\":\"1\",\"b\":\"2\"}},") != NULL,
              "%s", out);
    cr_assert(strstr(out, "\"status\":{\"replicas\":0}}") != NULL, "%s", out);
    free(out);
}

Test(objects, serviceaccount_secret_references_keep_only_the_name)
{
    char *out;

    cr_assert_eq(create("{\"metadata\":{\"name\":\"sa\"},\"secrets\":[{\"kind\":\"Secret\","
                        "\"name\":\"tok\",\"uid\":\"x\"},{\"namespace\":\"other\"}]}",
                        "serviceaccounts", "ns", NULL, 2, &out, NULL, 0),
                 0);
    cr_assert_str_eq(out, "{\"kind\":\"ServiceAccount\",\"apiVersion\":\"v1\",\"metadata\":{"
                          "\"name\":\"sa\",\"namespace\":\"ns\",\"uid\":\"u-1\","
                          "\"resourceVersion\":\"2\",\"creationTimestamp\":\"" CREATED "\"},"
                          "\"secrets\":[{\"name\":\"tok\"},{}]}");
    free(out);
}

/* ---- Services ------------------------------------------------------------------------------- */

/* prepare_create + objects_service_allocate of <json> (uid <uid>) against <used>. */
static int create_service(const char *json, const char *uid, struct objects_svc_used *used,
                          cJSON **out, struct objects_invalid *inv)
{
    cJSON *obj = parse(json);

    cr_assert_eq(objects_prepare_create(obj, "services", "default", NULL, 1, uid, CREATED, NULL,
                                        0),
                 0);
    *out = obj;
    return objects_service_allocate(obj, used, inv);
}

/* The decimal IPv4 address as a number (host order), 0 when not one. */
static uint32_t ipv4(const char *s)
{
    unsigned a, b, c, d;
    char tail;

    if (sscanf(s, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) != 4 || a > 255 || b > 255 ||
        c > 255 || d > 255) {
        return 0;
    }
    return a << 24 | b << 16 | c << 8 | d;
}

Test(objects, service_from_kubectl_gets_ip_families_and_defaults)
{
    struct objects_svc_used *used = objects_svc_used_new();
    struct objects_invalid inv;
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
    objects_svc_used_free(used);
}

Test(objects, service_defaults_by_type)
{
    struct objects_svc_used *used = objects_svc_used_new();
    struct objects_invalid inv;
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
    objects_svc_used_free(used);
}

Test(objects, service_ips_and_ports_in_use_or_out_of_range_are_422)
{
    struct objects_svc_used *used = objects_svc_used_new();
    struct objects_invalid inv;
    cJSON *held = parse("{\"spec\":{\"clusterIP\":\"10.96.0.10\",\"clusterIPs\":[\"10.96.0.10\"],"
                        "\"ports\":[{\"port\":80,\"nodePort\":30080}]}}");
    cJSON *svc;

    objects_svc_used_add(used, held);
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
        snprintf(json, sizeof(json), "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"clusterIP\":"
                                     "\"%s\"}}", out_of_range[i]);
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
    objects_svc_used_free(used);
}

/* Ports with the same number share a node port (53/TCP and 53/UDP); one asked for by a later
 * port is claimed for the earlier one. */
Test(objects, service_ports_with_one_number_share_a_node_port)
{
    struct objects_svc_used *used = objects_svc_used_new();
    struct objects_invalid inv;
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
    objects_svc_used_free(used);
}

/* Allocations never repeat while the used set grows (the simulator rebuilds it from the
 * store for each create). */
Test(objects, service_allocations_are_unique)
{
    struct objects_svc_used *used = objects_svc_used_new();
    struct objects_invalid inv;
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
        objects_svc_used_add(used, svc);
        cJSON_Delete(svc);
    }
    objects_svc_used_free(used);
}

/* When the dynamic part of the node port range is used up, the low band is used, then the
 * create fails with a 422, never loops. */
Test(objects, node_port_range_exhaustion_is_422)
{
    struct objects_svc_used *used = objects_svc_used_new();
    struct objects_invalid inv;
    int n = 0;
    int rc = 0;

    while (rc == 0 && n < 3000) {
        cJSON *svc;
        rc = create_service("{\"metadata\":{\"name\":\"s\"},\"spec\":{\"type\":\"NodePort\","
                            "\"ports\":[{\"port\":80}]}}",
                            "u", used, &svc, &inv);
        if (rc == 0) {
            objects_svc_used_add(used, svc);
            n++;
        }
        cJSON_Delete(svc);
    }
    cr_assert_eq(n, 2768, "allocated %d node ports", n);
    cr_assert_eq(rc, -EDOM);
    cr_assert(strstr(inv.message, "failed to allocate a nodePort: range is full") != NULL, "%s",
              inv.message);
    objects_svc_used_free(used);
}
