/*
 * metrics.h - GET /metrics: the Prometheus text exposition of the proxy's counters, per
 * cached resource (upstream and downstream request counts, history window, objects) and for
 * the passthrough, plus kwp_ready.
 *
 * Reads the registry without its lock (registry.h) and each resource's stats under that
 * resource's lock (resource_stats); nothing is locked while the reply is built or sent.
 * Runs on MHD threads. Includes cache/ and proxy/ headers only.
 */
#ifndef KWP_PROXY_METRICS_H
#define KWP_PROXY_METRICS_H

#include <stdbool.h>

struct http_req;
struct passthrough;
struct registry;

/* Replies 200 to <req> with the metrics of every resource in <reg> and of <pt>; kwp_ready
 * is <ready> (the proxy's /readyz verdict). */
void metrics_serve(struct http_req *req, const struct registry *reg, struct passthrough *pt,
                   bool ready);

struct auth;
struct gate;

/* metrics_serve plus the auth families of --auth delegated (<g> and <a> NULL: none):
 * authentications by result, authorizations by decision and by cache hit/miss, reviews
 * sent upstream and their latency histogram. Same thread as metrics_serve. */
void metrics_serve_auth(struct http_req *req, const struct registry *reg, struct passthrough *pt,
                        bool ready, const struct gate *g, struct auth *a);

#endif
