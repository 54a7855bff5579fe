/*
 * objects_fixture.h - what the unit tests of the simulator's object rooms share (test_objects,
 * test_defaults, test_alloc, test_gen): parsing test JSON, printing and freeing a tree, a
 * create through objects_prepare_create with a fixed uid and timestamp, and member lookups.
 *
 * Header only (static inline), because each unit test links its layer's library alone; every
 * helper asserts with Criterion, so call them from a Test's thread.
 */
#ifndef KWP_TESTS_UNIT_SIM_OBJECTS_FIXTURE_H
#define KWP_TESTS_UNIT_SIM_OBJECTS_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "sim/objects.h"

/* The creationTimestamp every fixture create stamps (its uid is "u-1"). */
#define CREATED "2025-01-01T00:00:00Z"

/* Parses <json>, asserting it is valid. The caller owns the tree. */
static inline cJSON *parse(const char *json)
{
    cJSON *obj = cJSON_Parse(json);

    cr_assert(obj != NULL, "bad test JSON: %s", json);
    return obj;
}

/* Prints compactly and frees <obj>; the caller frees the string. */
static inline char *print_free(cJSON *obj)
{
    char *s = cJSON_PrintUnformatted(obj);

    cJSON_Delete(obj);
    return s;
}

/* metadata.<key> of <obj> when it is a string, else NULL. Lent. */
static inline const char *meta_str(const cJSON *obj, const char *key)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Runs objects_prepare_create on <json>; returns rc, the result in *out (caller frees). */
static inline int create(const char *json, const char *resource, const char *ns,
                         const char *url_name, uint64_t rv, char **out, char *err, size_t err_len)
{
    cJSON *obj = parse(json);
    int rc = objects_prepare_create(obj, resource, ns, url_name, rv, "u-1", CREATED, err, err_len);

    *out = print_free(obj);
    return rc;
}

/* obj[a][b], NULL when either is missing. Lent. */
static inline const cJSON *path(const cJSON *obj, const char *a, const char *b)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, a), b);
}

/* obj[k1][k2]...: the keys end with NULL; NULL when any is missing. Lent. */
static inline cJSON *at(const cJSON *obj, ...)
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

#endif
