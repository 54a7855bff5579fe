/*
 * debugres.h - GET /debug/resources: per resource the history window (oldest/newest rv held,
 * capacity, events, the 410 boundary, the seconds covered), the relist/410/504 counters and
 * the downstream watchers with their lag, as one JSON document (README, "/debug/resources").
 * Written once here; kwp proxy and kwp sim both serve it behind their auth (gate, guard).
 *
 * Reads the registry without its lock (registry.h) and each resource under its own lock
 * (resource_stats, resource_watcher_lags), one resource at a time; nothing is locked while
 * the reply is built or sent. Includes cache/ and proxy/ headers only (and cJSON).
 */
#ifndef KWP_PROXY_DEBUGRES_H
#define KWP_PROXY_DEBUGRES_H

#include <stdint.h>

struct cJSON;
struct http_req;
struct registry;

#define DEBUGRES_PATH "/debug/resources"
#define DEBUGRES_MAX_WATCHERS 100 /* "items" per resource: the largest lags */

/*
 * The document for every resource of <reg>, <server> ("proxy" or "sim") as its "server";
 * <mono_ms> is clock_mono_ms() (the writers' clock, for ages) and <wall_ms> clock_wall_ms()
 * (for "time"). Pure apart from reading the registry. Returns a new cJSON tree (caller
 * deletes), or NULL when out of memory.
 */
struct cJSON *debugres_build(const struct registry *reg, const char *server, int64_t mono_ms,
                             int64_t wall_ms);

/* Answers <req> (already admitted): 200 with the document for GET, 405 Status otherwise, 500
 * Status when the document cannot be built. Any MHD thread. */
void debugres_serve(struct http_req *req, const struct registry *reg, const char *server);

#endif
