/*
 * test_debugres.c - the /debug/resources document (proxy/debugres.h) built from a registry
 * whose resources are driven directly: every field of one resource with watchers lagging,
 * null oldest/newest for an empty history, the item cap with truncated, the time format.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "cache/blob.h"
#include "cache/resource.h"
#include "proxy/apires.h"
#include "proxy/debugres.h"
#include "proxy/registry.h"

static const struct ring_opts ro = {.min_cap = 256, .max_cap = 256, .fresh_ms = 0};

/* 2026-12-02T14:00:00.123Z */
#define WALL_MS 1796220000123LL

static struct apires *builtin(const char *group, const char *version, const char *plural)
{
    const struct apires_kind *k = apires_builtin(group, version, plural);

    cr_assert_not_null(k);
    return apires_new(k, NULL, &ro);
}

static void put(struct resource *res, const char *name, uint64_t rv, int64_t t_ms)
{
    char rvs[24];
    struct blob *b;

    snprintf(rvs, sizeof(rvs), "%llu", (unsigned long long)rv);
    b = blob_new(rvs, strlen(rvs), &(struct blob_meta){.ns = "ns", .name = name, .rv_str = rvs});
    cr_assert_eq(resource_apply(res, WATCH_ADDED, b, rv, t_ms), 0);
    blob_unref(b);
}

static void nop_wake(void *ctx)
{
    (void)ctx;
}

static const cJSON *at(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

    cr_assert_not_null(v, "no member %s", k);
    return v;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = at(o, k);

    cr_assert(cJSON_IsNumber(v), "%s is not a number", k);
    return v->valuedouble;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = at(o, k);

    cr_assert(cJSON_IsString(v), "%s is not a string", k);
    return v->valuestring;
}

static bool boolean(const cJSON *o, const char *k)
{
    const cJSON *v = at(o, k);

    cr_assert(cJSON_IsBool(v), "%s is not a bool", k);
    return cJSON_IsTrue(v);
}

#define N_WATCHERS (DEBUGRES_MAX_WATCHERS + 2)

Test(debugres, document_of_a_registry)
{
    struct registry *reg = registry_new(4);
    struct apires *pods = builtin("", "v1", "pods");
    struct apires *deps = builtin("apps", "v1", "deployments");
    static struct watcher w[N_WATCHERS];
    const cJSON *list, *p, *d, *h, *ws, *items, *it;
    cJSON *doc;
    double prev = 1e18;

    cr_assert_eq(registry_add(reg, pods), 0);
    cr_assert_eq(registry_add(reg, deps), 0);
    cr_assert_eq(resource_replace(pods->res, NULL, 0, 10, 0), 0);
    put(pods->res, "a", 11, 1000);
    put(pods->res, "b", 12, 2000);
    put(pods->res, "c", 13, 3000);
    atomic_store(&pods->ctr.too_old, 5);
    atomic_store(&pods->ctr.too_large, 1);
    atomic_store(&pods->ctr.relists, 2);
    atomic_store(&pods->ctr.relists_kept, 1);
    /* watcher i from rv 10 + i % 4: 3, 2, 1 or 0 events pending */
    for (int i = 0; i < N_WATCHERS; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].wake = nop_wake;
        w[i].kind = WATCHER_STREAM;
        cr_assert_eq(resource_watch_from(pods->res, &w[i], 10 + (uint64_t)(i % 4), NULL), 0);
    }

    doc = debugres_build(reg, "proxy", 5500, WALL_MS);
    cr_assert_not_null(doc);
    cr_assert_str_eq(str(doc, "kind"), "DebugResources");
    cr_assert_str_eq(str(doc, "server"), "proxy");
    cr_assert_str_eq(str(doc, "time"), "2026-12-02T14:00:00.123Z");
    list = at(doc, "resources");
    cr_assert(cJSON_IsArray(list));
    cr_assert_eq(cJSON_GetArraySize(list), 2);

    p = cJSON_GetArrayItem(list, 0);
    cr_assert_str_eq(str(p, "resource"), "pods");
    cr_assert_str_eq(str(p, "group"), "");
    cr_assert_str_eq(str(p, "version"), "v1");
    cr_assert(boolean(p, "ready"));
    cr_assert_eq(num(p, "resourceVersion"), 13);
    cr_assert_eq(num(p, "objects"), 3);
    cr_assert_eq(num(p, "objectBytes"), 6, "three 2-byte bodies");
    cr_assert_eq(num(p, "relists"), 2);
    cr_assert_eq(num(p, "relistsKept"), 1);
    cr_assert_eq(num(p, "tooOld"), 5);
    cr_assert_eq(num(p, "tooLarge"), 1);
    h = at(p, "history");
    cr_assert_eq(num(h, "capacity"), 256);
    cr_assert_eq(num(h, "events"), 3);
    cr_assert_eq(num(h, "oldest"), 11);
    cr_assert_eq(num(h, "newest"), 13);
    cr_assert_eq(num(h, "boundary"), 10);
    cr_assert(fabs(num(h, "secondsCovered") - 4.5) < 1e-9, "now 5.5 s, oldest at 1 s");
    ws = at(p, "watchers");
    cr_assert_eq(num(ws, "count"), N_WATCHERS);
    cr_assert_eq(num(ws, "maxLagEvents"), 3);
    cr_assert(fabs(num(ws, "maxLagSeconds") - 4.5) < 1e-9);
    cr_assert(boolean(ws, "truncated"));
    items = at(ws, "items");
    cr_assert_eq(cJSON_GetArraySize(items), DEBUGRES_MAX_WATCHERS);
    cJSON_ArrayForEach(it, items)
    {
        double ev = num(it, "lagEvents"), s = num(it, "lagSeconds");

        cr_assert_leq(ev, prev, "largest first");
        prev = ev;
        /* 3 pending: since rv 11 (1 s); 2: rv 12 (2 s); 1: rv 13 (3 s); 0: caught up */
        cr_assert(fabs(s - (ev > 0 ? 5.5 - (4 - ev) : 0.0)) < 1e-9, "%g events, %g s", ev, s);
    }
    cr_assert_eq(num(cJSON_GetArrayItem(items, 0), "lagEvents"), 3);

    d = cJSON_GetArrayItem(list, 1);
    cr_assert_str_eq(str(d, "resource"), "deployments.apps");
    cr_assert_str_eq(str(d, "group"), "apps");
    cr_assert_not(boolean(d, "ready"), "never listed");
    h = at(d, "history");
    cr_assert_eq(num(h, "events"), 0);
    cr_assert(cJSON_IsNull(at(h, "oldest")));
    cr_assert(cJSON_IsNull(at(h, "newest")));
    cr_assert_eq(num(h, "secondsCovered"), 0);
    ws = at(d, "watchers");
    cr_assert_eq(num(ws, "count"), 0);
    cr_assert_eq(cJSON_GetArraySize(at(ws, "items")), 0);
    cr_assert_not(boolean(ws, "truncated"));
    cJSON_Delete(doc);

    for (int i = 0; i < N_WATCHERS; i++) {
        resource_watch_detach(pods->res, &w[i]);
    }
    doc = debugres_build(reg, "sim", 5500, 0);
    cr_assert_str_eq(str(doc, "server"), "sim");
    cr_assert_str_eq(str(doc, "time"), "1970-01-01T00:00:00.000Z");
    ws = at(cJSON_GetArrayItem(at(doc, "resources"), 0), "watchers");
    cr_assert_eq(num(ws, "count"), 0);
    cr_assert_not(boolean(ws, "truncated"));
    cJSON_Delete(doc);
    registry_free(reg);
}
