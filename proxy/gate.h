/*
 * gate.h - the auth gate in front of every request kwp answers (--auth delegated): who the
 * caller is (client certificate, bearer token by TokenReview, or anonymous), whom it acts as
 * (its own Impersonate-* headers, each authorized for it), and whether that identity may do
 * what reqinfo says the request asks (SubjectAccessReview); the answer when not: 401, 403 or
 * the 500 of a review that could not be made (never an allow).
 *
 * Threads: gate_check runs on an MHD worker. When every answer it needs is in auth's caches
 * it decides there (no thread hop); otherwise it suspends the request and hands it to the
 * gate's small pool, whose threads run the reviews (blocking on them) and resume the request,
 * after which the handle function calls gate_check again and gets the verdict. The per-
 * request state lives in the request's auth slot (http_req_set_auth) and dies with it.
 * Depends on auth.h, authz_status.h, identity.h, impersonate.h, reqinfo.h, http_server.h.
 */
#ifndef KWP_PROXY_GATE_H
#define KWP_PROXY_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/auth.h"
#include "proxy/http_server.h"
#include "proxy/identity.h"

struct sbuf;

struct gate;
struct upstream;

#define GATE_DEFAULT_THREADS 4 /* review threads: each blocks on one review at a time */
#define GATE_MAX_QUEUE 4096    /* requests waiting for a review thread; more get 429 */

struct gate_stats {
    uint64_t authn_ok;        /* requests authenticated (token or certificate) */
    uint64_t authn_anonymous; /* requests without credentials let in as system:anonymous */
    uint64_t authn_failed;    /* 401: no/bad credentials, or a TokenReview that failed */
    uint64_t authz_allowed;   /* requests allowed */
    uint64_t authz_denied;    /* 403 (the request, or a caller's impersonation) */
    uint64_t authz_errors;    /* 500: a SubjectAccessReview that could not be made */
    uint64_t fast;            /* decided on the worker from the caches */
    uint64_t slow;            /* handed to a review thread */
};

struct gate_opts {
    struct auth *auth; /* borrowed; must outlive the gate */
    bool anonymous;    /* --anonymous-auth: no credentials = system:anonymous */
    unsigned threads;  /* 0 = GATE_DEFAULT_THREADS */
};

/* Starts the review threads. Returns NULL with a message in <err>. Main thread. */
struct gate *gate_new(const struct gate_opts *o, char *err, size_t err_len);

/*
 * Stops the review threads: requests still queued are answered 500 (fail closed) and
 * resumed; a review in progress finishes first. Call before http_server_stop, after the
 * server stopped accepting. NULL-safe. Main thread.
 */
void gate_free(struct gate *g);

enum gate_verdict {
    GATE_ALLOW = 0, /* go on: the request is authorized (gate_identity says as whom) */
    GATE_DONE,      /* the gate replied (401/403/500/...) or suspended the request */
};

/* Decides <req> (see above): call first thing in the handle function, on every call. */
enum gate_verdict gate_check(struct gate *g, struct http_req *req);

/* The identity an allowed request acts as (impersonated when it asked to), borrowed from the
 * request; NULL when the gate did not run for it. Any thread that owns the request. */
const struct identity *gate_identity(const struct http_req *req);

void gate_stats(const struct gate *g, struct gate_stats *out);

/* Upper bounds (seconds) of the review latency histogram's buckets; +Inf follows. */
#define GATE_LATENCY_BUCKETS 11
extern const double gate_latency_bounds[GATE_LATENCY_BUCKETS];

enum gate_review_kind { GATE_REVIEW_TOKEN = 0, GATE_REVIEW_SAR, GATE_REVIEW_KINDS };

/* Reviews gate_upstream_send made, per kind, since the process started (process-wide: kwp has
 * one upstream). bucket[i] counts reviews at most gate_latency_bounds[i] s (cumulative, as
 * Prometheus wants), bucket[GATE_LATENCY_BUCKETS] all of them; failed = no answer. */
struct gate_review_stats {
    uint64_t bucket[GATE_LATENCY_BUCKETS + 1];
    double sum_s;
    uint64_t failed;
};

void gate_review_stats(enum gate_review_kind k, struct gate_review_stats *out);

/*
 * An auth_send_fn that POSTs to the upstream kube-apiserver on kwp's own credentials
 * (upstream_post, which it times), ctx = struct upstream *. Blocks up to
 * UPSTREAM_POST_TIMEOUT_MS. Counted in gate_review_stats.
 */
int gate_upstream_send(void *ctx, const char *path, const char *body, size_t len, struct sbuf *resp,
                       long *code, char *err, size_t err_len);

/* True when <listen> ("HOST:PORT") names a loopback address (127.0.0.0/8, localhost). */
bool gate_listen_is_loopback(const char *listen);

#endif
