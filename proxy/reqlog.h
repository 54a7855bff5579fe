/*
 * reqlog.h - the request log: one record (src=request, level warn) for every request that was
 * denied (401/403), forwarded and failed upstream (5xx, no connection, a cut stream), or a
 * watch kwp ended early (too slow, fell out of the history, relist, shutdown, stalled), with
 * user, verb, resource, namespace, code and reason, at most --log-request-rate records a second.
 *
 * The limit is a token bucket (REQLOG rate per second, a burst of one second's worth). Records
 * over it are counted and reported by one "request log lines suppressed" record (field
 * suppressed=N) ahead of the next record that gets through. Taking a token never waits: a
 * thread that finds the bucket busy counts its record as suppressed. Any thread.
 */
#ifndef KWP_PROXY_REQLOG_H
#define KWP_PROXY_REQLOG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "proxy/http_server.h"

#define REQLOG_RATE_DEFAULT 10

/* A token bucket. Fields private; initialise with reqlog_bucket_init. */
struct reqlog_bucket {
    pthread_mutex_t mu;
    double rate;        /* tokens per second (0: every record is refused) */
    double tokens;      /* under mu */
    int64_t last_ns;    /* under mu: the last refill */
    uint64_t refused;   /* under mu: refused since the last record that went out */
    atomic_ullong busy; /* refused because another thread held mu */
};

/* Sets up <b> full, for <per_second> records a second. */
void reqlog_bucket_init(struct reqlog_bucket *b, unsigned per_second);
void reqlog_bucket_fini(struct reqlog_bucket *b);

/*
 * Takes a token at <now_ns> (monotonic): true when a record may go out, and *<suppressed> gets
 * how many were refused since the last one that went out (then forgotten); false when refused
 * (counted). Never blocks.
 */
bool reqlog_bucket_take(struct reqlog_bucket *b, int64_t now_ns, uint64_t *suppressed);

/* The process's request log rate (--log-request-rate; default REQLOG_RATE_DEFAULT; 0 = off). */
void reqlog_set_rate(unsigned per_second);

/* One request log record. Strings may be NULL (written as ""). */
struct reqlog_entry {
    const char *user;
    const char *verb; /* RequestInfo's verb: list, watch, get, create, ... */
    const char *resource;
    const char *ns;
    int code; /* 0: no response */
    const char *reason;
    const char *msg; /* "request denied", "upstream request failed", "watch ended early" */
};

/* Writes <e> (as log_fields, src=request, level warn) if the process's bucket allows. */
void reqlog_request(const struct reqlog_entry *e);

struct http_req;
struct registry;

/*
 * The proxy's look at each request as it completes (its http_done_fn): observes
 * kwp_request_duration_seconds (resource label from <reg>) and writes the request record when
 * the request was noted (http_req_note: denied, upstream failure, watch ended), was forwarded
 * and got a 5xx, or was a watch closed for stalling. The user is the one noted, else the
 * identity the gate allowed. MHD thread.
 */
void reqlog_done(const struct registry *reg, struct http_req *req, enum http_end how);

#endif
