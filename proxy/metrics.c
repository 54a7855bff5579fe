/*
 * metrics.c - the /metrics exposition (see metrics.h).
 *
 * One family at a time: # HELP and # TYPE, then one sample per resource labelled
 * resource="<group/>plural". The text is built in a capped sbuf (METRICS_MAX_BYTES; past it a 500)
 * and copied once by http_reply.
 */
#include "proxy/metrics.h"

#include <inttypes.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "cache/resource.h"
#include "cache/sbuf.h"
#include "proxy/apires.h"
#include "proxy/auth.h"
#include "proxy/fanout.h"
#include "proxy/gate.h"
#include "proxy/http_server.h"
#include "proxy/kstatus.h"
#include "proxy/log.h"
#include "proxy/passthrough.h"
#include "proxy/procmetrics.h"
#include "proxy/promtext.h"
#include "proxy/registry.h"
#include "proxy/reqstats.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KWP_METRICS_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KWP_METRICS_SANITIZED 1
#endif

/* /metrics is a few lines per resource; far below this even with thousands of resources. */
#define METRICS_MAX_BYTES ((size_t)64 << 20)

/*
 * The heap as glibc's malloc sees it (mallinfo2, which walks every arena under its lock: a few
 * microseconds per scrape): the bytes in use tell a leak (they grow) from free memory glibc keeps
 * in its arenas (the resident size stays up while they come back). Not exported under a sanitizer,
 * whose allocator is not glibc's.
 */
static void heap_families(struct sbuf *b)
{
#if defined(__GLIBC__) && !defined(KWP_METRICS_SANITIZED)
    struct mallinfo2 mi = mallinfo2();

    promtext_family(b, "kwp_heap_inuse_bytes", "gauge",
                    "Bytes allocated by malloc and not yet freed (glibc mallinfo2 uordblks + "
                    "hblkhd).");
    promtext_sample(b, "kwp_heap_inuse_bytes", NULL, 0, (double)(mi.uordblks + mi.hblkhd));
    promtext_family(b, "kwp_heap_free_bytes", "gauge",
                    "Freed bytes in glibc's arenas, kept for reuse (mallinfo2 fordblks); "
                    "counted whether resident or not: malloc_trim gives their pages back.");
    promtext_sample(b, "kwp_heap_free_bytes", NULL, 0, (double)mi.fordblks);
#else
    (void)b;
#endif
}

/* The watch writers (fanout.h): how many plain-HTTP watch streams they write now. */
static void writer_families(struct sbuf *b)
{
    struct fanout_totals t;

    fanout_totals(&t);
    promtext_family(b, "kwp_watch_writer_streams", "gauge",
                    "Watch streams the watch writers own now (plain-HTTP watches between their "
                    "initial events and their end; https watches and bookmarks go through the "
                    "HTTP server's buffers).");
    promtext_sample(b, "kwp_watch_writer_streams", NULL, 0, (double)t.streams);
    promtext_family(b, "kwp_watch_writer_handovers_total", "counter",
                    "Times a watch stream was handed to the watch writers.");
    promtext_sample(b, "kwp_watch_writer_handovers_total", NULL, 0, (double)t.attaches);
}

/* The process families every Prometheus client exports (procmetrics.h); none when /proc cannot be
 * read (a partial set would mislead). */
static void process_families(struct sbuf *b)
{
    struct procmetrics ps;
    const struct {
        const char *name, *type, *help;
        const double *v;
    } fam[] = {
        {"process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.",
         &ps.cpu_seconds},
        {"process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
         &ps.resident_bytes},
        {"process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
         &ps.virtual_bytes},
        {"process_start_time_seconds", "gauge",
         "Start time of the process since unix epoch in seconds.", &ps.start_time_seconds},
        {"process_open_fds", "gauge", "Number of open file descriptors.", &ps.open_fds},
        {"process_max_fds", "gauge", "Maximum number of open file descriptors.", &ps.max_fds},
    };

    procmetrics_read(&ps);
    if (!ps.ok) {
        return;
    }
    for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++) {
        promtext_family(b, fam[i].name, fam[i].type, fam[i].help);
        promtext_sample(b, fam[i].name, NULL, 0, *fam[i].v);
    }
    promtext_family(b, "kwp_malloc_trims_total", "counter",
                    "Times the heap's free pages were given back to the kernel after a burst of "
                    "replies or after many connections closed.");
    promtext_sample(b, "kwp_malloc_trims_total", NULL, 0, (double)http_server_malloc_trims());
    heap_families(b);
    writer_families(b);
}

/* kwp_history_oldest_event_age_seconds: how far back each history reaches, in time. */
static void history_age_family(struct sbuf *b, const struct registry *reg)
{
    size_t n = registry_len(reg);
    int64_t now = clock_mono_ms();

    promtext_family(b, "kwp_history_oldest_event_age_seconds", "gauge",
                    "Age of the oldest event in the history window: the seconds of history "
                    "held (0 when it is empty).");
    for (size_t i = 0; i < n; i++) {
        const struct apires *ar = registry_at(reg, i);
        struct resource_stats st;
        struct promtext_label l = {"resource", resource_name(ar->res)};

        resource_stats(ar->res, &st);
        promtext_sample(b, "kwp_history_oldest_event_age_seconds", &l, 1,
                        st.history_oldest_ms > 0 && now > st.history_oldest_ms
                            ? (double)(now - st.history_oldest_ms) / 1000.0
                            : 0.0);
    }
}

/* The auth families (see metrics_serve_auth). */
static void auth_families(struct sbuf *b, const struct gate *g, struct auth *a)
{
    static const char *const kinds[GATE_REVIEW_KINDS] = {"tokenreview", "subjectaccessreview"};
    struct gate_stats gs;
    struct review_cache_stats an, az;

    gate_stats(g, &gs);
    auth_stats(a, &an, &az);
    sbuf_printf(b,
                "# HELP kwp_authentications_total Requests authenticated, by result.\n"
                "# TYPE kwp_authentications_total counter\n"
                "kwp_authentications_total{result=\"success\"} %" PRIu64 "\n"
                "kwp_authentications_total{result=\"anonymous\"} %" PRIu64 "\n"
                "kwp_authentications_total{result=\"failure\"} %" PRIu64 "\n"
                "# HELP kwp_authorizations_total Requests authorized, by decision (error: the "
                "review could not be made, answered 500).\n"
                "# TYPE kwp_authorizations_total counter\n"
                "kwp_authorizations_total{decision=\"allowed\"} %" PRIu64 "\n"
                "kwp_authorizations_total{decision=\"denied\"} %" PRIu64 "\n"
                "kwp_authorizations_total{decision=\"error\"} %" PRIu64 "\n"
                "# HELP kwp_auth_cache_lookups_total Review cache lookups, by cache and result "
                "(wait: joined another request's review).\n"
                "# TYPE kwp_auth_cache_lookups_total counter\n",
                gs.authn_ok, gs.authn_anonymous, gs.authn_failed, gs.authz_allowed, gs.authz_denied,
                gs.authz_errors);
    for (int c = 0; c < 2; c++) {
        const struct review_cache_stats *st = c == 0 ? &an : &az;
        const char *name = c == 0 ? "authentication" : "authorization";
        sbuf_printf(b,
                    "kwp_auth_cache_lookups_total{cache=\"%s\",result=\"hit\"} %" PRIu64 "\n"
                    "kwp_auth_cache_lookups_total{cache=\"%s\",result=\"miss\"} %" PRIu64 "\n"
                    "kwp_auth_cache_lookups_total{cache=\"%s\",result=\"wait\"} %" PRIu64 "\n",
                    name, st->hits, name, st->misses, name, st->waits);
    }
    sbuf_printf(b,
                "# HELP kwp_auth_cache_entries Review answers cached now.\n"
                "# TYPE kwp_auth_cache_entries gauge\n"
                "kwp_auth_cache_entries{cache=\"authentication\"} %" PRIu64 "\n"
                "kwp_auth_cache_entries{cache=\"authorization\"} %" PRIu64 "\n"
                "# HELP kwp_auth_requests_total Requests decided from the caches on the HTTP "
                "worker (fast) or after a review on the review pool (slow).\n"
                "# TYPE kwp_auth_requests_total counter\n"
                "kwp_auth_requests_total{path=\"fast\"} %" PRIu64 "\n"
                "kwp_auth_requests_total{path=\"slow\"} %" PRIu64 "\n",
                an.entries, az.entries, gs.fast, gs.slow);
    sbuf_printf(b, "# HELP kwp_auth_review_failures_total Reviews sent upstream that got no "
                   "2xx answer.\n# TYPE kwp_auth_review_failures_total counter\n");
    for (int k = 0; k < GATE_REVIEW_KINDS; k++) {
        struct gate_review_stats rs;
        gate_review_stats((enum gate_review_kind)k, &rs);
        sbuf_printf(b, "kwp_auth_review_failures_total{review=\"%s\"} %" PRIu64 "\n", kinds[k],
                    rs.failed);
    }
    sbuf_printf(b, "# HELP kwp_auth_review_duration_seconds Reviews sent upstream (TokenReview, "
                   "SubjectAccessReview) and how long each took.\n"
                   "# TYPE kwp_auth_review_duration_seconds histogram\n");
    for (int k = 0; k < GATE_REVIEW_KINDS; k++) {
        struct gate_review_stats rs;
        gate_review_stats((enum gate_review_kind)k, &rs);
        for (int i = 0; i < GATE_LATENCY_BUCKETS; i++) {
            sbuf_printf(
                b, "kwp_auth_review_duration_seconds_bucket{review=\"%s\",le=\"%g\"} %" PRIu64 "\n",
                kinds[k], gate_latency_bounds[i], rs.bucket[i]);
        }
        sbuf_printf(b,
                    "kwp_auth_review_duration_seconds_bucket{review=\"%s\",le=\"+Inf\"} %" PRIu64
                    "\n"
                    "kwp_auth_review_duration_seconds_sum{review=\"%s\"} %.6f\n"
                    "kwp_auth_review_duration_seconds_count{review=\"%s\"} %" PRIu64 "\n",
                    kinds[k], rs.bucket[GATE_LATENCY_BUCKETS], kinds[k], rs.sum_s, kinds[k],
                    rs.bucket[GATE_LATENCY_BUCKETS]);
    }
}

void metrics_serve(struct http_req *req, const struct registry *reg, struct passthrough *pt,
                   bool ready)
{
    metrics_serve_auth(req, reg, pt, ready, NULL, NULL);
}

void metrics_serve_auth(struct http_req *req, const struct registry *reg, struct passthrough *pt,
                        bool ready, const struct gate *g, struct auth *a)
{
    size_t n = registry_len(reg);
    struct sbuf b;
    struct {
        const char *name, *type, *help;
        size_t off;
    } ctrs[] = {
        {"kwp_upstream_watches_open", "gauge",
         "Upstream watch streams open (1 per cached resource when healthy).",
         offsetof(struct apires_counters, up_watch_open)},
        {"kwp_upstream_watch_requests_total", "counter", "Upstream WATCH requests sent.",
         offsetof(struct apires_counters, up_watches)},
        {"kwp_upstream_list_requests_total", "counter", "Upstream LIST requests (pages) sent.",
         offsetof(struct apires_counters, up_lists)},
        {"kwp_upstream_events_total", "counter", "Watch events received from upstream.",
         offsetof(struct apires_counters, up_events)},
        {"kwp_upstream_bookmarks_total", "counter", "Bookmarks received from upstream.",
         offsetof(struct apires_counters, up_bookmarks)},
        {"kwp_upstream_errors_total", "counter",
         "Failed upstream requests and malformed upstream data.",
         offsetof(struct apires_counters, up_errors)},
        {"kwp_state_stale", "gauge",
         "1 while the resource serves a state loaded from --state-dir that its resumed upstream "
         "watch has not caught up with yet.",
         offsetof(struct apires_counters, up_stale)},
        {"kwp_relists_total", "counter",
         "Relists of the resource (start, upstream 410, protocol errors).",
         offsetof(struct apires_counters, relists)},
        {"kwp_relists_kept_total", "counter",
         "Relists that found the state unchanged: history and downstream watches kept.",
         offsetof(struct apires_counters, relists_kept)},
        {"kwp_watches_open", "gauge", "Downstream watches open.",
         offsetof(struct apires_counters, watches_open)},
        {"kwp_watch_requests_total", "counter", "Downstream WATCH requests served from the cache.",
         offsetof(struct apires_counters, watches)},
        {"kwp_list_requests_total", "counter", "Downstream LIST requests served from the cache.",
         offsetof(struct apires_counters, lists)},
        {"kwp_get_requests_total", "counter", "Downstream GET requests served from the cache.",
         offsetof(struct apires_counters, gets)},
        {"kwp_frames_sent_total", "counter", "Watch events written to downstream watches.",
         offsetof(struct apires_counters, frames)},
        {"kwp_too_old_total", "counter", "410 too old resource version answers.",
         offsetof(struct apires_counters, too_old)},
        {"kwp_watches_before_cache_total", "counter",
         "Watches from a resourceVersion older than this cache's whole history (a client from "
         "an older replica), forwarded upstream instead of a 410.",
         offsetof(struct apires_counters, watches_before_cache)},
        {"kwp_too_large_total", "counter", "504 Too large resource version answers.",
         offsetof(struct apires_counters, too_large)},
        {"kwp_terminated_watchers_total", "counter",
         "Watches ended because their next event waited longer than --watch-max-lag.",
         offsetof(struct apires_counters, terminated)},
        {"kwp_not_ready_total", "counter", "429 storage is (re)initializing answers.",
         offsetof(struct apires_counters, not_ready)},
        {"kwp_forwarded_total", "counter", "Requests for this resource passed upstream.",
         offsetof(struct apires_counters, forwarded)},
        {"kwp_not_cached", "gauge",
         "1 when the resource's list went over --max-resource-bytes: forwarded, not cached.",
         offsetof(struct apires_counters, not_cached)},
    };

    sbuf_init(&b, METRICS_MAX_BYTES);
    for (size_t c = 0; c < sizeof(ctrs) / sizeof(ctrs[0]); c++) {
        sbuf_printf(&b, "# HELP %s %s\n# TYPE %s %s\n", ctrs[c].name, ctrs[c].help, ctrs[c].name,
                    ctrs[c].type);
        for (size_t i = 0; i < n; i++) {
            const struct apires *ar = registry_at(reg, i);
            const atomic_ullong *v = (const atomic_ullong *)((const char *)&ar->ctr + ctrs[c].off);
            sbuf_printf(&b, "%s{resource=\"%s\"} %llu\n", ctrs[c].name, resource_name(ar->res),
                        (unsigned long long)atomic_load(v));
        }
    }
    sbuf_printf(&b, "# HELP kwp_resource_version Current resourceVersion of the cache.\n"
                    "# TYPE kwp_resource_version gauge\n");
    for (size_t i = 0; i < n; i++) {
        const struct apires *ar = registry_at(reg, i);
        struct resource_stats st;
        resource_stats(ar->res, &st);
        sbuf_printf(&b, "kwp_resource_version{resource=\"%s\"} %" PRIu64 "\n",
                    resource_name(ar->res), st.rv);
    }
    sbuf_printf(&b, "# HELP kwp_history_events Events held in the history window.\n"
                    "# TYPE kwp_history_events gauge\n");
    for (size_t i = 0; i < n; i++) {
        const struct apires *ar = registry_at(reg, i);
        struct resource_stats st;
        resource_stats(ar->res, &st);
        sbuf_printf(&b, "kwp_history_events{resource=\"%s\"} %zu\n", resource_name(ar->res),
                    st.history_len);
    }
    sbuf_printf(&b, "# HELP kwp_history_oldest_rv Smallest resourceVersion a watch may start from "
                    "(older gets 410).\n# TYPE kwp_history_oldest_rv gauge\n");
    for (size_t i = 0; i < n; i++) {
        const struct apires *ar = registry_at(reg, i);
        struct resource_stats st;
        resource_stats(ar->res, &st);
        sbuf_printf(&b, "kwp_history_oldest_rv{resource=\"%s\"} %" PRIu64 "\n",
                    resource_name(ar->res), st.history_boundary);
    }
    sbuf_printf(&b, "# HELP kwp_objects Objects in the cache.\n# TYPE kwp_objects gauge\n");
    for (size_t i = 0; i < n; i++) {
        const struct apires *ar = registry_at(reg, i);
        struct resource_stats st;
        resource_stats(ar->res, &st);
        sbuf_printf(&b, "kwp_objects{resource=\"%s\"} %zu\n", resource_name(ar->res), st.objects);
    }
    sbuf_printf(&b, "# HELP kwp_object_bytes JSON bytes of the cached objects.\n"
                    "# TYPE kwp_object_bytes gauge\n");
    for (size_t i = 0; i < n; i++) {
        const struct apires *ar = registry_at(reg, i);
        struct resource_stats st;
        resource_stats(ar->res, &st);
        sbuf_printf(&b, "kwp_object_bytes{resource=\"%s\"} %zu\n", resource_name(ar->res),
                    st.object_bytes);
    }
    {
        struct passthrough_stats ps;
        passthrough_stats(pt, &ps);
        sbuf_printf(&b,
                    "# HELP kwp_passthrough_requests_total Requests forwarded upstream.\n"
                    "# TYPE kwp_passthrough_requests_total counter\n"
                    "kwp_passthrough_requests_total %" PRIu64 "\n"
                    "# HELP kwp_passthrough_active Forwarded requests in flight.\n"
                    "# TYPE kwp_passthrough_active gauge\n"
                    "kwp_passthrough_active %" PRIu64 "\n"
                    "# HELP kwp_passthrough_bytes_total Response bytes streamed from upstream.\n"
                    "# TYPE kwp_passthrough_bytes_total counter\n"
                    "kwp_passthrough_bytes_total %" PRIu64 "\n"
                    "# HELP kwp_passthrough_upstream_errors_total Forwarded requests that failed "
                    "before a response (answered 503).\n"
                    "# TYPE kwp_passthrough_upstream_errors_total counter\n"
                    "kwp_passthrough_upstream_errors_total %" PRIu64 "\n"
                    "# HELP kwp_passthrough_stream_errors_total Forwarded responses cut after the "
                    "headers.\n"
                    "# TYPE kwp_passthrough_stream_errors_total counter\n"
                    "kwp_passthrough_stream_errors_total %" PRIu64 "\n",
                    ps.requests, ps.active, ps.bytes_upstream, ps.upstream_errors,
                    ps.stream_errors);
        sbuf_printf(&b,
                    "# HELP kwp_ready 1 when every cached resource is synced and streaming.\n"
                    "# TYPE kwp_ready gauge\nkwp_ready %d\n",
                    ready ? 1 : 0);
    }
    if (g != NULL && a != NULL) {
        auth_families(&b, g, a);
    }
    history_age_family(&b, reg);
    reqstats_write(&b);
    process_families(&b);
    if (sbuf_error(&b) != 0) {
        struct kstatus st;

        kstatus_set(&st, 500, "InternalError", "metrics exceed %zu bytes", METRICS_MAX_BYTES);
        http_reply_status(req, &st);
    } else {
        http_reply(req, 200, "text/plain; version=0.0.4; charset=utf-8", b.p, b.len);
    }
    sbuf_free(&b);
}
