/*
 * test_gen.c - sim/gen: the generators (valid, deterministic, realistic sizes, each kind) and
 * the churn mutations (labels in and out of selectors, the status fields of each kind).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "proxy/apires.h"
#include "sim/gen.h"
#include "tests/unit/sim/objects_fixture.h"

/* ---- generators ----------------------------------------------------------------------------- */

static const char *const generated[] = {"pods",        "configmaps", "secrets", "services",
                                        "nodes",       "namespaces", "events",  "deployments",
                                        "replicasets", "widgets"};

Test(gen, generated_objects_are_valid_and_deterministic)
{
    for (size_t i = 0; i < sizeof(generated) / sizeof(generated[0]); i++) {
        const char *res = generated[i];
        const struct apires_kind *t = objects_type(res);
        cJSON *obj = gen_object_new(res, "team-a", "web-1", 7);
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
        labels = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                                  "labels");
        if (strcmp(res, "events") != 0) { /* real Events carry no labels */
            cr_assert(cJSON_IsObject(labels) && labels->child != NULL, "%s has no labels", res);
        }

        a = print_free(obj);
        again = cJSON_Parse(a);
        cr_assert(again != NULL, "%s: %s", res, a);
        b = print_free(gen_object_new(res, "team-a", "web-1", 7));
        cr_assert_str_eq(a, b, "%s is not deterministic", res);
        free(b);
        /* and the generated object is a valid create */
        cr_assert_eq(objects_prepare_create(again, res, "team-a", NULL, 10, "u", CREATED, NULL, 0),
                     t == NULL ? -EINVAL : 0, "%s", res); /* no apiVersion for a custom kind */
        cJSON_Delete(again);
        free(a);
    }
}

Test(gen, generated_pods_look_real_and_weigh_about_1kb)
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
        pod = gen_object_new("pods", "default", name, seed);
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

Test(gen, different_seeds_give_different_objects)
{
    char *a = print_free(gen_object_new("pods", "default", "web-1", 1));
    char *b = print_free(gen_object_new("pods", "default", "web-1", 2));

    cr_assert_str_neq(a, b);
    free(a);
    free(b);
}

Test(gen, generic_kind_comes_from_the_plural)
{
    cJSON *obj = gen_object_new("widgets", NULL, "w", 1);

    cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(obj, "kind")->valuestring, "Widget");
    cr_assert_null(cJSON_GetObjectItemCaseSensitive(obj, "apiVersion"));
    cr_assert_null(meta_str(obj, "namespace"));
    cJSON_Delete(obj);
}

/* ---- churn ---------------------------------------------------------------------------------- */

Test(gen, mutate_pod_changes_label_or_annotation_and_status)
{
    cJSON *pod = gen_object_new("pods", "default", "web-1", 3);
    const cJSON *cs;

    cr_assert_eq(gen_mutate(pod, 5), 0);
    cr_assert_str_eq(
        cJSON_GetObjectItemCaseSensitive(path(pod, "metadata", "labels"), "churn")->valuestring,
        "b1");
    cs = cJSON_GetArrayItem(path(pod, "status", "containerStatuses"), 0);
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(cs, "restartCount")->valueint, 1);
    cr_assert_eq(gen_mutate(pod, 8), 0);
    cr_assert_str_eq(
        cJSON_GetObjectItemCaseSensitive(path(pod, "metadata", "annotations"), "kwp.io/churn")
            ->valuestring,
        "8");
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(cs, "restartCount")->valueint, 2);
    cJSON_Delete(pod);
}

Test(gen, mutate_every_kind_changes_it)
{
    for (size_t i = 0; i < sizeof(generated) / sizeof(generated[0]); i++) {
        cJSON *obj = gen_object_new(generated[i], "ns", "web-1", 1);
        char *before = cJSON_PrintUnformatted(obj);
        char *after;

        cr_assert_eq(gen_mutate(obj, 10), 0);
        after = cJSON_PrintUnformatted(obj);
        cr_assert_str_neq(before, after, "%s", generated[i]);
        free(before);
        free(after);
        /* the mutated object is a valid update of the original */
        cJSON_Delete(obj);
    }
    cJSON *arr = parse("[]");
    cr_assert_eq(gen_mutate(arr, 1), -EINVAL);
    cJSON_Delete(arr);
}

Test(gen, mutate_workload_and_configmap_status_fields)
{
    cJSON *dep = gen_object_new("deployments", "ns", "web", 1);
    cJSON *cm = gen_object_new("configmaps", "ns", "web", 1);
    cJSON *sec = gen_object_new("secrets", "ns", "web", 1);
    int replicas = path(dep, "spec", "replicas")->valueint;

    cr_assert_eq(gen_mutate(dep, 0), 0);
    cr_assert_eq(path(dep, "status", "readyReplicas")->valueint, 0);
    cr_assert_eq(gen_mutate(dep, (unsigned)replicas), 0);
    cr_assert_eq(path(dep, "status", "readyReplicas")->valueint, replicas);
    cr_assert_eq(gen_mutate(cm, 42), 0);
    cr_assert_str_eq(path(cm, "data", "rev")->valuestring, "42");
    cr_assert_eq(gen_mutate(sec, 42), 0);
    cr_assert_str_eq(path(sec, "data", "rev")->valuestring, "NDI=");
    cJSON_Delete(dep);
    cJSON_Delete(cm);
    cJSON_Delete(sec);
}
