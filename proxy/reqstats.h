/*
 * reqstats.h - the request-level histograms of /metrics:
 *
 *   kwp_request_duration_seconds{verb,resource,code}   downstream requests, arrival to the
 *       end of the response (as kube-apiserver's apiserver_request_duration_seconds: a WATCH
 *       is observed when it ends, so its value is the watch's lifetime)
 *   kwp_upstream_request_duration_seconds{verb,code}   requests kwp sent upstream (reflector
 *       LIST pages and WATCH, forwarded requests): to the end of the response, except a WATCH
 *       (upstream or forwarded), measured to its response headers
 *   kwp_watch_event_delivery_lag_seconds               per watch frame: from the event's
 *       arrival in the cache (or the start of the live stream, for a replayed backlog) to the
 *       copy of its write into the connection's buffer, in milliseconds of CLOCK_MONOTONIC;
 *       the frames of one write count with the lag of its oldest (so the per-frame cost is a
 *       compare, and one observation per write)
 *
 * Label values are bounded: verb is kube-apiserver's reported verb (reqstats_verb_of) or
 * "other"; resource is "<group/>plural" of a resource in the registry, "other" for any other
 * resource request, "" for a non-resource path; code is the numeric status ("<error>" upstream
 * when no response came, as client-go's rest_client metrics say). A series is allocated the
 * first time it is seen (at most REQSTATS_MAX_SERIES per family; past it, samples are counted
 * in kwp_metrics_series_dropped_total); after that an observation is two relaxed atomic adds.
 * The lag histogram is per thread (each writer touches only its own counters; the scrape sums
 * them). State is process-wide.
 */
#ifndef KWP_PROXY_REQSTATS_H
#define KWP_PROXY_REQSTATS_H

#include <stddef.h>
#include <stdint.h>

#include "proxy/k8s_path.h"

struct sbuf;

#define REQSTATS_MAX_SERIES 4096

enum reqstats_verb {
    REQSTATS_APPLY = 0,
    REQSTATS_CONNECT,
    REQSTATS_DELETE,
    REQSTATS_GET,
    REQSTATS_LIST,
    REQSTATS_PATCH,
    REQSTATS_POST,
    REQSTATS_PUT,
    REQSTATS_WATCH,
    REQSTATS_OTHER,
    REQSTATS_VERBS
};

/* "APPLY" ... "WATCH", "other". */
const char *reqstats_verb_name(enum reqstats_verb v);

/*
 * The verb kube-apiserver's endpoints/metrics reports for a request (CanonicalVerb, CleanVerb,
 * cleanVerb): GET/HEAD of a collection is LIST and of a named object GET; a watch (a /watch/
 * path, or watch= other than "0"/"false" on a GET) is WATCH; PATCH with Content-Type
 * application/apply-patch+yaml is APPLY; a log, exec, attach, portforward or proxy subresource
 * is CONNECT; other methods are themselves (POST, PUT, PATCH, DELETE), anything else "other".
 * <kp> is the request's parsed resource path (k8s_path_parse; NULL: not a resource path); <q>
 * its n query pairs; <content_type> may be NULL. Pure; any thread.
 */
enum reqstats_verb reqstats_verb_of(const char *method, const struct k8s_path *kp,
                                    const struct k8s_query_kv *q, size_t n,
                                    const char *content_type);

struct http_req;

/* reqstats_verb_of for <req> (method, query, Content-Type) at its resource path <kp>; NULL:
 * the path is parsed here. MHD thread that owns <req>. */
enum reqstats_verb reqstats_verb_of_request(const struct http_req *req, const struct k8s_path *kp);

/* The resource label of a resource request outside the registry, and of a non-resource
 * request: pass these very pointers (series are keyed by the label's address). */
extern const char reqstats_other[];
extern const char reqstats_none[];

/* Observes a downstream request of <verb> on <resource> (a label whose storage lives as long
 * as the process's registry: resource_name(), reqstats_other or reqstats_none) answered
 * <code> after <ns>. */
void reqstats_request(enum reqstats_verb verb, const char *resource, int code, int64_t ns);

/* Observes an upstream request of <verb> that got <code> (0: no response) after <ns>. */
void reqstats_upstream(enum reqstats_verb verb, int code, int64_t ns);

/*
 * Observes <frames> watch frames written in one go (one call of a watch's content reader)
 * whose oldest event waited <lag_ms>: each frame counts with the lag of the oldest frame of
 * its write. The calling thread's own counters, plain read-modify-writes (atomic only for the
 * scrape's reads): no shared cache line, no lock. Any thread.
 */
void reqstats_lag_ms(int64_t lag_ms, uint64_t frames);

/* Appends the three families (HELP, TYPE, every series) and
 * kwp_metrics_series_dropped_total to <b>. Any thread. */
void reqstats_write(struct sbuf *b);

#endif
