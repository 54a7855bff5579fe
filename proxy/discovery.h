/*
 * discovery.h - what the upstream serves: its discovery documents (/api/v1, /apis,
 * /apis/GROUP/VERSION) read into a list of resources, and whether it answers at all (GET
 * /version). The proxy caches a resource on first use only when this list has it with list
 * and watch, and builds its description (kind, scope) from here.
 *
 * One thread (discovery_start) retries discovery until it works, then refreshes it every
 * 5 minutes, and probes the upstream every probe interval; discovery_poke wakes it early.
 * The list is replaced whole under the discovery's lock, which is held only to swap or read
 * it, never while calling curl or the logger. Includes cache/ and proxy/ headers only.
 */
#ifndef KWP_PROXY_DISCOVERY_H
#define KWP_PROXY_DISCOVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct apires;
struct discovery;
struct ring_opts;
struct upstream;

/* A discovery of upstream <up> (lent: it must outlive the discovery), probing it every
 * <probe_interval_ms> once the thread runs. Never NULL (xmalloc). Nothing is fetched yet. */
struct discovery *discovery_new(struct upstream *up, int64_t probe_interval_ms);

/* Stops the thread if it runs and frees everything. NULL is a no-op. */
void discovery_free(struct discovery *d);

/*
 * The start-up fetch, on the caller's thread: reads the whole discovery tree with a
 * <timeout_ms> per request. Returns 0 (the list is loaded and the upstream counts as
 * answering), or -EAGAIN when a document could not be read.
 */
int discovery_load(struct discovery *d, long timeout_ms);

/* Starts the discovery thread. Returns 0 or -EAGAIN (no thread). */
int discovery_start(struct discovery *d);

/* Aborts the thread's transfer in progress and joins it (no-op when it is not running).
 * Owner's thread only. */
void discovery_stop(struct discovery *d);

/* Asks the thread to retry a failed discovery now. Any thread. */
void discovery_poke(struct discovery *d);

/* True once a discovery succeeded (a later failed refresh keeps the last list). Any thread. */
bool discovery_is_loaded(struct discovery *d);

/* Resources in the loaded list (0 before). Any thread. */
size_t discovery_len(struct discovery *d);

/* The last probe (or the start-up fetch) of the upstream succeeded. Any thread. */
bool discovery_upstream_ok(const struct discovery *d);

/*
 * Builds an apires for group/version/plural as discovery describes it (its kind and scope;
 * a built-in kind keeps its built-in table entry), with history options <ro>. With
 * <need_listwatch> only a resource that supports list and watch counts.
 * Returns 0 and sets <*out> (the caller owns it: apires_free), -EAGAIN when no discovery has
 * succeeded yet, or -ENOENT when the list does not have it (with list and watch). Any thread.
 */
int discovery_apires_new(struct discovery *d, const char *group, const char *version,
                         const char *plural, bool need_listwatch, const struct ring_opts *ro,
                         struct apires **out);

/* True for the groups compiled into kube-apiserver, whose list items carry no
 * kind/apiVersion; anything else is served as a custom resource (unstructured). */
bool discovery_is_builtin_group(const char *group);

#endif
