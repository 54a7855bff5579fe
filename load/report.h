/*
 * report.h - what `kwp load` prints: a one-line progress record per second (stderr), a human
 * summary at the end (stdout), and the whole run as JSON (--json FILE) so runs can be compared.
 *
 * JSON layout (times in milliseconds, rates per second of the measured window):
 *   { "tool", "params":{...}, "elapsed_s", "measured_s", "interrupted",
 *     "watch":{ watchers, watchers_opened, watches_open_max, watches_open_end,
 *               states_at_end:{watching, connecting, list_pending, list_body, watch_pending,
 *               waiting}, events,
 *               events_per_s, bytes, bytes_per_s, event_bytes, warmup_events, initial_events,
 *               bookmarks, deleted, unstamped, lists, relists, reconnects, gone_410,
 *               watch_requests, latency_ms:{count,min,mean,p50,p90,p99,p999,max},
 *               per_watcher_events:{min,median,max,zero} },
 *     "errors":{ total, http:{"<status>":n}, error_events:{"<code>":n}, transport:{name:n} },
 *     "list":{ per_s, concurrency, query, requests, ok, missed, bytes, mb_per_s, latency_ms },
 *     "processes":[{ name, pid, cpu_s, cpu_pct, rss_max_kb }],
 *     "series":[{ t, watches_open, events, bytes, lists, list_bytes, errors, gone_410, relists,
 *                 reconnects, latency_count, p50_ms, p99_ms, max_ms, cpu_pct:[..], rss_kb:[..] }] }
 * Main thread only.
 */
#ifndef KWP_LOAD_REPORT_H
#define KWP_LOAD_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "load/client.h"

/* The run's parameters as the user gave them (strings lent by the caller; NULL = unset). */
struct report_params {
    const char *target;
    const char *resource;
    const char *path;
    const char *ns; /* --namespace */
    const char *selector;
    const char *field_selector;
    int64_t watchers;
    int64_t duration_ms;
    int64_t ramp_per_s;
    int64_t warmup_ms;
    bool warmup_after_open; /* --warmup counts from the moment every watcher is open */
    const char *initial;    /* "list" or "watchlist" */
    const char *start_rv;
    int64_t lists_per_s;
    const char *list_query;
    int64_t list_concurrency;
};

/* One progress line for sample <s> to <f>. */
void report_progress(FILE *f, const struct client_sample *s, const struct client_stats *st,
                     int64_t watchers);

/* The human summary of a finished run. */
void report_summary(FILE *f, const struct report_params *p, const struct client_stats *st);

/* Writes the JSON document (one line plus '\n') to <f>. Returns 0 or -EIO. */
int report_json(FILE *f, const struct report_params *p, const struct client_stats *st);

/* Formats <ns> for people ("850us", "12.3ms", "1.25s") into <buf>; returns <buf>. */
const char *report_fmt_ns(uint64_t ns, char *buf, size_t cap);

#endif
