/*
 * registry.h - the resources one server answers for (the proxy's cache, the simulator's
 * storage), looked up by group/version/plural, and the tick thread that keeps their watches
 * moving. Written once here; proxy.c and sim/sim.c each own one registry.
 *
 * A registry is a fixed-capacity array of struct apires. Entries are appended under the
 * registry's lock and published by a release store of the count; they are never removed
 * before registry_free, so readers walk the array without a lock and a pointer the registry
 * returns stays valid until registry_free.
 *
 * The tick thread, every REGISTRY_TICK_MS, moves each resource's clock (watch deadlines and
 * bookmarks: resource_tick); every REGISTRY_SWEEP_MS it runs handlers_tick instead (also the
 * idle-peer sweep); then it calls the owner's hook (the simulator compacts there).
 * Includes cache/ and proxy/ headers only.
 */
#ifndef KWP_PROXY_REGISTRY_H
#define KWP_PROXY_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

struct apires;
struct registry;

#define REGISTRY_TICK_MS 100
#define REGISTRY_SWEEP_MS 1000

/* Called on the tick thread once per tick, after the resources, with clock_mono_ms(). */
typedef void registry_tick_fn(void *ctx, int64_t now_ms);

/* An empty registry for at most <cap> resources (cap >= 1). Never NULL (xmalloc). */
struct registry *registry_new(size_t cap);

/* Stops the tick thread if it runs, then frees every entry (apires_free) and the registry.
 * NULL is a no-op. Call it only when no other thread uses an entry any more. */
void registry_free(struct registry *r);

/*
 * Appends <ar>. Takes ownership of <ar> on success; on error the caller still owns it:
 * -EEXIST when an entry for the same group/version/plural is there already, -ENOSPC when the
 * registry is full. Any thread.
 */
int registry_add(struct registry *r, struct apires *ar);

/* The entry for group/version/plural, or NULL. Lent until registry_free. Any thread, no lock. */
struct apires *registry_find(const struct registry *r, const char *group, const char *version,
                             const char *plural);

/* How many entries are published; entries 0..len-1 stay valid. Any thread, no lock. */
size_t registry_len(const struct registry *r);

/* Entry <i>, for i < registry_len(). Lent until registry_free. Any thread, no lock. */
struct apires *registry_at(const struct registry *r, size_t i);

/* Starts the tick thread; <hook> (may be NULL) runs on it with <ctx> each tick.
 * Returns 0, or -EAGAIN when the thread cannot be created (the hook is then never called). */
int registry_tick_start(struct registry *r, registry_tick_fn *hook, void *ctx);

/* Stops and joins the tick thread (no-op when it is not running). Call from the owner's
 * thread, never from the hook. */
void registry_tick_stop(struct registry *r);

#endif
