/*
 * registry.c - the served resources and their tick thread (see registry.h).
 *
 * lock serialises writers (registry_add) only; readers load len with acquire order and read
 * items[0..len), which a writer filled before its release store of len. The tick thread reads
 * the same way and stops when <stop> is set.
 */
#include "proxy/registry.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/bug.h"
#include "cache/resource.h"
#include "proxy/apires.h"
#include "proxy/handlers.h"
#include "proxy/log.h"

struct registry {
    pthread_mutex_t lock;  /* serialises registry_add */
    struct apires **items; /* cap slots; items[0..len) published, written under lock */
    size_t cap;
    _Atomic size_t len; /* stored with release after items[len-1] is written */
    registry_tick_fn *hook;
    void *hook_ctx;
    pthread_t tick;
    bool tick_started; /* owner's thread only */
    atomic_bool stop;  /* ends the tick thread */
};

struct registry *registry_new(size_t cap)
{
    struct registry *r = xcalloc(1, sizeof(*r));

    r->cap = cap;
    r->items = xcalloc(cap, sizeof(*r->items));
    pthread_mutex_init(&r->lock, NULL);
    return r;
}

void registry_free(struct registry *r)
{
    size_t n;

    if (!r) {
        return;
    }
    registry_tick_stop(r);
    n = registry_len(r);
    for (size_t i = 0; i < n; i++) {
        apires_free(r->items[i]);
    }
    free(r->items);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

struct apires *registry_find(const struct registry *r, const char *group, const char *version,
                             const char *plural)
{
    size_t n = registry_len(r);

    for (size_t i = 0; i < n; i++) {
        struct apires *ar = r->items[i];
        if (strcmp(ar->kind.group, group) == 0 && strcmp(ar->kind.version, version) == 0 &&
            strcmp(ar->kind.plural, plural) == 0) {
            return ar;
        }
    }
    return NULL;
}

int registry_add(struct registry *r, struct apires *ar)
{
    int rc = 0;
    size_t n;

    pthread_mutex_lock(&r->lock);
    n = atomic_load_explicit(&r->len, memory_order_relaxed);
    if (registry_find(r, ar->kind.group, ar->kind.version, ar->kind.plural)) {
        rc = -EEXIST;
    } else if (n >= r->cap) {
        rc = -ENOSPC;
    } else {
        r->items[n] = ar;
        atomic_store_explicit(&r->len, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

size_t registry_len(const struct registry *r)
{
    return atomic_load_explicit(&r->len, memory_order_acquire);
}

struct apires *registry_at(const struct registry *r, size_t i)
{
    BUG_ON(i >= registry_len(r));
    return r->items[i];
}

static void *tick_main(void *arg)
{
    struct registry *r = arg;
    int64_t next_sweep = 0;

    while (!atomic_load(&r->stop)) {
        struct timespec ts = {0, REGISTRY_TICK_MS * 1000000L};
        int64_t now = clock_mono_ms();
        bool sweep = now >= next_sweep;
        size_t n = registry_len(r);
        for (size_t i = 0; i < n; i++) {
            if (sweep) {
                handlers_tick(r->items[i], now);
            } else {
                (void)resource_tick(r->items[i]->res, now, NULL, NULL);
            }
        }
        if (sweep) {
            next_sweep = now + REGISTRY_SWEEP_MS;
        }
        if (r->hook) {
            r->hook(r->hook_ctx, now);
        }
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int registry_tick_start(struct registry *r, registry_tick_fn *hook, void *ctx)
{
    BUG_ON(r->tick_started);
    r->hook = hook;
    r->hook_ctx = ctx;
    atomic_store(&r->stop, false);
    if (pthread_create(&r->tick, NULL, tick_main, r) != 0) {
        return -EAGAIN;
    }
    r->tick_started = true;
    return 0;
}

void registry_tick_stop(struct registry *r)
{
    if (!r->tick_started) {
        return;
    }
    atomic_store(&r->stop, true);
    pthread_join(r->tick, NULL);
    r->tick_started = false;
}
