/*
 * test_registry.c - proxy/registry, black-box through registry.h: lookups by
 * group/version/plural, -EEXIST and -ENOSPC leave the entry with the caller, entries stay
 * published while another thread appends, and the tick thread calls its hook until stopped.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cache/ring.h"
#include "proxy/apires.h"
#include "proxy/registry.h"

static const struct ring_opts ro = {.min_cap = 16, .max_cap = 64, .fresh_ms = 0};

static struct apires *builtin(const char *group, const char *version, const char *plural)
{
    const struct apires_kind *k = apires_builtin(group, version, plural);

    cr_assert_not_null(k, "%s/%s/%s is built in", group, version, plural);
    return apires_new(k, NULL, &ro);
}

/* A runtime-described resource group/version/plural (namespaced). */
static struct apires *custom(const char *spec)
{
    struct apires_kind k;
    char *owned = NULL;

    cr_assert_eq(apires_parse_spec(spec, &k, &owned), 0, "%s", spec);
    return apires_new(&k, owned, &ro);
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

Test(registry, find_returns_the_entry_of_group_version_plural)
{
    struct registry *r = registry_new(4);
    struct apires *pods = builtin("", "v1", "pods");
    struct apires *deps = builtin("apps", "v1", "deployments");

    cr_assert_eq(registry_len(r), 0);
    cr_assert_null(registry_find(r, "", "v1", "pods"));
    cr_assert_eq(registry_add(r, pods), 0);
    cr_assert_eq(registry_add(r, deps), 0);
    cr_assert_eq(registry_len(r), 2);
    cr_assert_eq(registry_at(r, 0), pods);
    cr_assert_eq(registry_at(r, 1), deps);
    cr_assert_eq(registry_find(r, "", "v1", "pods"), pods);
    cr_assert_eq(registry_find(r, "apps", "v1", "deployments"), deps);
    cr_assert_null(registry_find(r, "apps", "v1", "pods"));
    cr_assert_null(registry_find(r, "", "v2", "pods"));
    cr_assert_null(registry_find(r, "", "v1", "deployments"));
    registry_free(r);
}

Test(registry, duplicate_is_eexist_and_the_caller_keeps_it)
{
    struct registry *r = registry_new(4);
    struct apires *a = builtin("", "v1", "pods");
    struct apires *b = builtin("", "v1", "pods");

    cr_assert_eq(registry_add(r, a), 0);
    cr_assert_eq(registry_add(r, b), -EEXIST);
    cr_assert_eq(registry_len(r), 1);
    cr_assert_eq(registry_find(r, "", "v1", "pods"), a);
    apires_free(b);
    registry_free(r);
}

Test(registry, full_is_enospc_and_the_caller_keeps_it)
{
    struct registry *r = registry_new(1);
    struct apires *a = builtin("", "v1", "pods");
    struct apires *b = builtin("", "v1", "configmaps");

    cr_assert_eq(registry_add(r, a), 0);
    cr_assert_eq(registry_add(r, b), -ENOSPC);
    cr_assert_eq(registry_len(r), 1);
    cr_assert_null(registry_find(r, "", "v1", "configmaps"));
    apires_free(b);
    registry_free(r);
}

Test(registry, free_of_null_is_a_no_op)
{
    registry_free(NULL);
}

#define APPENDS 200

static void *appender(void *arg)
{
    struct registry *r = arg;

    for (int i = 0; i < APPENDS; i++) {
        char spec[64];
        snprintf(spec, sizeof(spec), "example.com/v1/things%d", i);
        cr_assert_eq(registry_add(r, custom(spec)), 0);
    }
    return NULL;
}

Test(registry, readers_see_every_published_entry_while_another_thread_appends)
{
    struct registry *r = registry_new(APPENDS);
    pthread_t t;
    size_t n = 0;

    cr_assert_eq(pthread_create(&t, NULL, appender, r), 0);
    while (n < APPENDS) {
        n = registry_len(r);
        for (size_t i = 0; i < n; i++) {
            const struct apires *ar = registry_at(r, i);
            char plural[32];
            snprintf(plural, sizeof(plural), "things%zu", i);
            cr_assert_str_eq(ar->kind.plural, plural);
            cr_assert_eq(registry_find(r, "example.com", "v1", plural), ar);
        }
    }
    pthread_join(t, NULL);
    registry_free(r);
}

static void count_tick(void *ctx, int64_t now_ms)
{
    atomic_int *ticks = ctx;

    cr_assert_gt(now_ms, 0);
    atomic_fetch_add(ticks, 1);
}

Test(registry, tick_calls_the_hook_until_stopped, .timeout = 10)
{
    struct registry *r = registry_new(2);
    atomic_int ticks = 0;
    int seen;

    cr_assert_eq(registry_add(r, builtin("", "v1", "pods")), 0);
    cr_assert_eq(registry_tick_start(r, count_tick, &ticks), 0);
    for (int i = 0; i < 500 && atomic_load(&ticks) < 3; i++) {
        nap_ms(10);
    }
    cr_assert_geq(atomic_load(&ticks), 3, "about one tick per %d ms", REGISTRY_TICK_MS);
    registry_tick_stop(r);
    seen = atomic_load(&ticks);
    nap_ms(3 * REGISTRY_TICK_MS);
    cr_assert_eq(atomic_load(&ticks), seen, "no tick after registry_tick_stop");
    registry_tick_stop(r); /* a second stop is a no-op */
    registry_free(r);
}

Test(registry, free_stops_a_running_tick, .timeout = 10)
{
    struct registry *r = registry_new(1);

    cr_assert_eq(registry_tick_start(r, NULL, NULL), 0);
    nap_ms(REGISTRY_TICK_MS);
    registry_free(r);
}
