/*
 * reqlog.c - the rate-limited request log (see reqlog.h). The bucket's critical section is a
 * few arithmetic operations under a trylock; the record itself is written after it.
 */
#include "proxy/reqlog.h"

#include <stdio.h>
#include <time.h>

#include "cache/resource.h"
#include "proxy/apires.h"
#include "proxy/gate.h"
#include "proxy/identity.h"
#include "proxy/k8s_path.h"
#include "proxy/log.h"
#include "proxy/registry.h"
#include "proxy/reqinfo.h"
#include "proxy/reqstats.h"

static struct reqlog_bucket process_bucket = {
    .mu = PTHREAD_MUTEX_INITIALIZER, .rate = REQLOG_RATE_DEFAULT, .tokens = REQLOG_RATE_DEFAULT};

void reqlog_bucket_init(struct reqlog_bucket *b, unsigned per_second)
{
    pthread_mutex_init(&b->mu, NULL);
    b->rate = per_second;
    b->tokens = per_second;
    b->last_ns = 0;
    b->refused = 0;
    atomic_init(&b->busy, 0);
}

void reqlog_bucket_fini(struct reqlog_bucket *b)
{
    pthread_mutex_destroy(&b->mu);
}

bool reqlog_bucket_take(struct reqlog_bucket *b, int64_t now_ns, uint64_t *suppressed)
{
    bool ok;

    if (pthread_mutex_trylock(&b->mu) != 0) {
        atomic_fetch_add_explicit(&b->busy, 1, memory_order_relaxed);
        return false;
    }
    if (b->last_ns != 0 && now_ns > b->last_ns) {
        b->tokens += (double)(now_ns - b->last_ns) / 1e9 * b->rate;
        if (b->tokens > b->rate) {
            b->tokens = b->rate; /* a burst of one second's worth */
        }
    }
    if (b->last_ns == 0 || now_ns > b->last_ns) {
        b->last_ns = now_ns;
    }
    ok = b->tokens >= 1.0;
    if (ok) {
        b->tokens -= 1.0;
        *suppressed = b->refused + atomic_exchange(&b->busy, 0);
        b->refused = 0;
    } else {
        b->refused++;
    }
    pthread_mutex_unlock(&b->mu);
    return ok;
}

void reqlog_set_rate(unsigned per_second)
{
    pthread_mutex_lock(&process_bucket.mu);
    process_bucket.rate = per_second;
    process_bucket.tokens = per_second;
    pthread_mutex_unlock(&process_bucket.mu);
}

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static const char *str_or_empty(const char *s)
{
    return s ? s : "";
}

void reqlog_request(const struct reqlog_entry *e)
{
    uint64_t suppressed = 0;
    char code[16], n[24];

    if (!reqlog_bucket_take(&process_bucket, now_ns(), &suppressed)) {
        return;
    }
    if (suppressed > 0) {
        struct log_field s = {"suppressed", n};
        snprintf(n, sizeof(n), "%llu", (unsigned long long)suppressed);
        log_fields(LOG_LEVEL_WARN, "request", &s, 1,
                   "request log lines suppressed (--log-request-rate)");
    }
    snprintf(code, sizeof(code), "%d", e->code);
    const struct log_field f[] = {
        {"user", str_or_empty(e->user)},
        {"verb", str_or_empty(e->verb)},
        {"resource", str_or_empty(e->resource)},
        {"namespace", str_or_empty(e->ns)},
        {"code", code},
        {"reason", str_or_empty(e->reason)},
    };
    log_fields(LOG_LEVEL_WARN, "request", f, sizeof(f) / sizeof(f[0]), str_or_empty(e->msg));
}

/* The request record of a request that was noted or failed (reqlog_done). */
static void log_done(struct http_req *req, int code, const char *user, const char *reason,
                     enum reqstats_verb verb)
{
    const struct identity *id = gate_identity(req);
    const struct k8s_query_kv *q;
    struct reqinfo ri = {0};
    char res[256];
    bool parsed;
    size_t n;

    q = http_req_query(req, &n);
    parsed = reqinfo_parse(http_req_method(req), http_req_path(req), q, n, &ri) == 0;
    if (!parsed) {
        snprintf(res, sizeof(res), "%s", http_req_path(req));
    } else if (!ri.is_resource) {
        snprintf(res, sizeof(res), "%s", ri.path);
    } else if (ri.subresource[0]) {
        snprintf(res, sizeof(res), "%s/%s", ri.resource, ri.subresource);
    } else {
        snprintf(res, sizeof(res), "%s", ri.resource);
    }
    struct reqlog_entry e = {
        .user = user != NULL && user[0] ? user
                : id != NULL            ? id->user
                                        : "",
        .verb = parsed ? ri.verb : "",
        .resource = res,
        .ns = parsed ? ri.ns : "",
        .code = code,
        .reason = reason,
        .msg = code == 401 || code == 403              ? "request denied"
               : verb == REQSTATS_WATCH && code == 200 ? "watch ended early"
                                                       : "request failed",
    };
    reqlog_request(&e);
    reqinfo_fini(&ri);
}

void reqlog_done(const struct registry *reg, struct http_req *req, enum http_end how)
{
    struct k8s_path kp;
    const struct apires *ar;
    const char *label = reqstats_none, *user = NULL, *reason;
    int code = http_req_code(req);
    bool resource = k8s_path_parse(http_req_path(req), &kp) == 0;
    enum reqstats_verb verb = reqstats_verb_of_request(req, resource ? &kp : NULL);
    char why[64];

    if (resource) {
        ar = registry_find(reg, kp.group, kp.version, kp.resource);
        label = ar != NULL ? resource_name(ar->res) : reqstats_other;
    }
    if (code > 0) {
        reqstats_request(verb, label, code, now_ns() - http_req_start_ns(req));
    }
    reason = http_req_note_reason(req, &user);
    if (reason == NULL && code >= 500 && http_req_is_taken_over(req)) {
        snprintf(why, sizeof(why), "upstream answered %d", code);
        reason = why;
    }
    if (reason == NULL && how == HTTP_END_TIMEOUT && code == 200 && verb == REQSTATS_WATCH) {
        reason = "client stalled: it read nothing for --watch-stall-timeout while events waited";
    }
    if (reason != NULL) {
        log_done(req, code, user, reason, verb);
    }
}
