/*
 * handlers.h - LIST, WATCH and GET answered from a cache resource with kube-apiserver's
 * semantics (SEMANTICS 1-4). Used by both faces: the proxy (objects from the reflector,
 * anything the cache cannot answer is handed to <forward>) and the simulator (authoritative:
 * it answers everything itself, including Exact/continue from the history).
 *
 * One room per job: handlers.c (this API: the entry, the serve-or-forward decision, GET,
 * the per-request state, the tick), handlers_list.c (LIST), handlers_watch.c (the WATCH
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
    bool authoritative;           /* the simulator: rv unset/Exact/continue served here */
    handlers_forward_fn *forward; /* NULL: nothing to forward to */
    void *app;
    int64_t bookmark_interval_ms;  /* default 60000 */
    int64_t min_request_timeout_s; /* watch timeout without timeoutSeconds: [t, 2t) */
    int64_t too_large_wait_ms;     /* the 3 s rule (3000) */
    int64_t freshness_wait_ms;     /* proxy: wait this long for rv N, then forward */
    bool local_too_large;          /* wait too_large_wait_ms and answer 504 ourselves */
    int64_t watch_stall_s;         /* end a watch whose client accepts no byte this long
                                      while events wait for it (default 10 s) */
    int64_t watch_max_lag_ms;      /* end a watch whose next event has waited longer than
                                      this (SEMANTICS 2.11); 0 = only the history window */
};

/* ---- serve or forward -------------------------------------------------------------------- */

/* What stands between a request and an answer from the cache: the input of handlers_route.
 * The caller finds the condition where its data is; handlers_route alone decides. */
enum handlers_why {
    HANDLERS_WHY_CACHED = 0, /* nothing: the cache answers */
    /* before a resource is at hand (proxy_handle): nothing to serve from */
    HANDLERS_WHY_NOT_RESOURCE, /* not a GET of a resource path, or a subresource */
    HANDLERS_WHY_UNCACHED,     /* a resource the cache does not hold */
    HANDLERS_WHY_SCOPE,        /* a namespace in the path of a cluster-scoped resource */
    /* handlers_serve, before the cache is read */
    HANDLERS_WHY_ENCODING,      /* no Accept clause kwp can encode (protobuf, YAML) */
    HANDLERS_WHY_TABLE_DEFAULT, /* a Table of a kind kwp has no kube printer for */
    HANDLERS_WHY_FIELD_LABEL,   /* a field selector label the kind does not list */
    HANDLERS_WHY_CONSISTENT,    /* resourceVersion unset: a consistent read */
    HANDLERS_WHY_NOT_READY,     /* a GET, or a LIST with a limit and no selector, before the
                                   cache synced (SEMANTICS 3.5) */
    /* LIST and GET, against the cache */
    HANDLERS_WHY_CONTINUE_LATEST, /* a continue token minted at "the latest revision" */
    HANDLERS_WHY_WINDOW,          /* an Exact rv or a continue token outside the history */
    HANDLERS_WHY_NOT_FRESH,       /* an rv newer than the cache (the freshness wait) */
    /* WATCH */
    HANDLERS_WHY_BEFORE_CACHE, /* an rv older than this cache's whole history: it started
                                  after the client's rv (another replica's), upstream may
                                  still have the events */
};

enum handlers_route { HANDLERS_SERVE = 0, HANDLERS_FORWARD };

/*
 * The one decision "serve from the cache or forward upstream" for a request facing <why>
 * under <opts>: HANDLERS_FORWARD whenever there is an upstream (not authoritative, a forward
 * function set) and something stands in the way, except a too new rv with local_too_large
 * (wait, then our own 504); HANDLERS_SERVE otherwise, which means answering here, with the
 * data or with the error kube-apiserver would give (406, 400, 410, 429, 504; for the
 * path-level reasons a face without upstream answers 404 itself). A pure function; any thread.
 */
enum handlers_route handlers_route(const struct handlers_opts *opts, enum handlers_why why);

/* The path-level reason for resource <ar> (NULL: not cached) at path <p>: UNCACHED, SCOPE
 * (a namespace on a cluster-scoped resource other than namespaces), or CACHED. */
enum handlers_why handlers_why_resource(const struct apires *ar, const struct k8s_path *p);

/* ---- serving ----------------------------------------------------------------------------- */

/*
 * Serves a GET on a resource path <p> of <ar> (LIST, WATCH, GET by name). Called from the app's
 * handle function, and again on resume (the request state remembers where it was).
 * Replies, suspends, or calls opts->forward (where handlers_route says so).
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
int handlers_check_fields(const struct apires *ar, const struct selector *fsel, struct kstatus *st);

#endif
