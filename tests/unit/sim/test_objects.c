/*
 * test_objects.c - sim/objects: the write rules. Create and update preparation with
 * kube-apiserver's messages, repeated keys, RFC 7386 merge patch (the RFC's own examples)
 * and the kinds table. kube's defaults are test_defaults.c's, Service allocation
 * test_alloc.c's, generators test_gen.c's.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "tests/unit/sim/objects_fixture.h"

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

    cr_assert_eq(
        objects_prepare_create(a, "pods", "default", NULL, 5, "u-1", CREATED, err, sizeof(err)), 0,
        "%s", err);
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
    cr_assert_eq(
        objects_prepare_create(obj, "configmaps", "default", NULL, 1, "u", CREATED, NULL, 0), 0);
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
    cr_assert_eq(
        create("{\"metadata\":{\"name\":\"w\"}}", "widgets", "default", NULL, 1, &out, NULL, 0),
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
    cr_assert_eq(
        create("{\"metadata\":{\"name\":\"a\"}}", "configmaps", "default", "a", 1, &out, NULL, 0),
        0);
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
                        "{\"metadata\":{\"name\":\"d\",\"resourceVersion\":\"x\"}}", "deployments",
                        "ns", "d", &out, err, sizeof(err)),
                 -EBUSY);
    cr_assert(strncmp(err, "Operation cannot be fulfilled on deployments.apps \"d\":", 54) == 0,
              "%s", err);
    free(out);
}

Test(objects, update_keeps_identity_and_bumps_generation_on_spec_change)
{
    char *out;
    char err[256];

    cr_assert_eq(
        update(OLD_POD,
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
    cr_assert_eq(
        update(OLD_POD, "{\"metadata\":{}}", "pods", "default", "a", &out, err, sizeof(err)),
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

    cr_assert_eq(update(OLD_POD,
                        "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"},"
                        "\"metadata\":{\"name\":\"a\"},\"spec\":{},\"spec\":{\"nodeName\":\"n1\"}}",
                        "pods", "default", "a", &out, NULL, 0),
                 0, "the stale resourceVersion was in the dropped copy");
    cr_expect(strstr(out, "\"generation\":1,") != NULL, "spec unchanged: %s", out);
    cr_expect(strstr(out, "\"spec\":{\"nodeName\":\"n1\"}}") != NULL, "%s", out);
    free(out);
}

/* ---- merge patch ------------------------------------------------------------------------------
 */

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
