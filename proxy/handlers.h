/*
 * handlers.h - LIST, WATCH and GET answered from a cache resource with kube-apiserver's
 * semantics (SEMANTICS 1-4). Used by both faces: the proxy (objects from the reflector,
 * anything the cache cannot answer is handed to <forward>) and the simulator (authoritative:
 * it answers everything itself, including Exact/continue from the history).
 *
 * One room per job: handlers.c (this API: the entry, GET, the per-request state, the
 * tick), handlers_list.c (LIST), handlers_watch.c (the WATCH
 * stream), with negotiate.c (Accept and friends), transforms.c (PartialObjectMetadata,
 * Table), scope.c (what a request sees) and body.c (pretty and gzip bodies) under them.
 *
 * Threads: handlers_serve runs on MHD threads; handlers_tick on the 1 s tick thread.
 */
#ifndef KWP_PROXY_HANDLERS_H
#define KWP_PROXY_HANDLERS_H

#include <stdbool.h>
#include <stdint.h>

#include "proxy/apires.h"
#include "proxy/http_server.h"
#include "proxy/k8s_path.h"

/* Hands a request to upstream (proxy passthrough). */
typedef void handlers_forward_fn(void *app, struct http_req *req);

/* --watch-max-lag's default: kube-apiserver's bound is tighter (its per-watcher buffer of
 * 10-1000 events plus a 100 ms budget, SEMANTICS 2.11); 10 s keeps a busy shared machine from
 * ending watches that merely ran behind for a moment. */
#define HANDLERS_MAX_LAG_DEFAULT_MS 10000

struct handlers_opts {
    bool authoritative;              /* the simulator: rv unset/Exact/continue served here */
    handlers_forward_fn *forward;    /* NULL: nothing to forward to */
    void *app;
    int64_t bookmark_interval_ms;    /* default 60000 */
    int64_t min_request_timeout_s;   /* watch timeout without timeoutSeconds: [t, 2t) */
    int64_t too_large_wait_ms;       /* the 3 s rule (3000) */
    int64_t freshness_wait_ms;       /* proxy: wait this long for rv N, then forward */
    bool local_too_large;            /* wait too_large_wait_ms and answer 504 ourselves */
    int64_t watch_stall_s;           /* end a watch whose client accepts no byte this long
                                        while events wait for it (default 10 s) */
    int64_t watch_max_lag_ms;        /* end a watch whose next event has waited longer than
                                        this (SEMANTICS 2.11); 0 = only the history window */
};

/* ---- serving ----------------------------------------------------------------------------- */

/*
 * Serves a GET on a resource path <p> of <ar> (LIST, WATCH, GET by name). Called from the app's
 * handle function, and again on resume (the request state remembers where it was).
 * Replies, suspends, or calls opts->forward.
 */
void handlers_serve(struct http_req *req, struct apires *ar, const struct k8s_path *p,
                    const struct handlers_opts *opts);

/* The 1 s tick for one resource: wakes watches due a bookmark or past their deadline and ends
 * watches whose peer disconnected while idle (MSG_PEEK sweep). */
void handlers_tick(struct apires *ar, int64_t now_ms);

/* Writes the body of a single object as a GET returns it (kind/apiVersion in front for
 * built-ins) into a new buffer; returns it (caller frees) and its length. */
char *handlers_object_json(const struct apires *ar, const struct blob *b, size_t *len);

/* Checks a parsed field selector against the kind's selectable fields. Returns 0 or -EINVAL
 * with the 400 Status in <st>. */
int handlers_check_fields(const struct apires *ar, const struct selector *fsel,
                          struct kstatus *st);

#endif
