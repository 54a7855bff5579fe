/*
 * report.c - progress lines, the summary and the JSON document of a load run (see report.h).
 *
 * cJSON builds the report tree here: it is not on the data path, and every number in it is a
 * count or a duration far below 2^53, so printing through double changes nothing.
 */
#include "load/report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cache/bug.h"

#define NS_PER_MS 1e6
#define MB 1e6

const char *report_fmt_ns(uint64_t ns, char *buf, size_t cap)
{
    if (ns < 1000000) {
        snprintf(buf, cap, "%.0fus", (double)ns / 1e3);
    } else if (ns < 1000000000) {
        snprintf(buf, cap, "%.3gms", (double)ns / 1e6);
    } else {
        snprintf(buf, cap, "%.3gs", (double)ns / 1e9);
    }
    return buf;
}

static double per_s(uint64_t n, double secs)
{
    return secs > 0 ? (double)n / secs : 0;
}

/* min, median, max of the per-watcher event counts, and how many watchers got none. */
struct spread {
    uint64_t min, median, max, zero;
};

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static struct spread spread_of(const struct client_stats *st)
{
    struct spread s = {0, 0, 0, 0};
    uint64_t *v;

    if (st->n_watchers == 0) {
        return s;
    }
    v = xmalloc(st->n_watchers * sizeof(uint64_t));
    memcpy(v, st->per_watcher, st->n_watchers * sizeof(uint64_t));
    qsort(v, st->n_watchers, sizeof(uint64_t), cmp_u64);
    s.min = v[0];
    s.median = v[st->n_watchers / 2];
    s.max = v[st->n_watchers - 1];
    for (size_t i = 0; i < st->n_watchers && v[i] == 0; i++) {
        s.zero++;
    }
    free(v);
    return s;
}

static const char *proc_name(const struct client_stats *st, size_t i, char *buf, size_t cap)
{
    if (i == 0) {
        return "kwp load";
    }
    snprintf(buf, cap, "pid %d", st->procs[i].pid);
    return buf;
}

void report_progress(FILE *f, const struct client_sample *s, const struct client_stats *st,
                     int64_t watchers)
{
    char p50[32], p99[32], line[512];
    size_t n;

    n = (size_t)snprintf(line, sizeof(line),
                         "kwp load: t=%.0fs open=%u/%lld ev/s=%llu MB/s=%.1f p50=%s p99=%s "
                         "err=%llu 410=%llu relists=%llu reconnects=%llu",
                         s->t_s, s->watches_open, (long long)watchers,
                         (unsigned long long)s->events, (double)s->bytes / MB,
                         s->lat_count ? report_fmt_ns(s->p50_ns, p50, sizeof(p50)) : "-",
                         s->lat_count ? report_fmt_ns(s->p99_ns, p99, sizeof(p99)) : "-",
                         (unsigned long long)s->errors, (unsigned long long)s->gone,
                         (unsigned long long)s->relists, (unsigned long long)s->reconnects);
    if (s->lists > 0 && n < sizeof(line)) {
        n += (size_t)snprintf(line + n, sizeof(line) - n, " lists=%llu",
                              (unsigned long long)s->lists);
    }
    for (size_t i = 0; i < st->n_procs && n < sizeof(line); i++) {
        char name[32];
        if (s->cpu_pct[i] < 0) {
            continue;
        }
        n += (size_t)snprintf(line + n, sizeof(line) - n, " cpu[%s]=%.0f%%",
                              proc_name(st, i, name, sizeof(name)), s->cpu_pct[i]);
    }
    fprintf(f, "%s\n", line);
    fflush(f);
}

static void print_latency(FILE *f, const char *label, const struct histogram *h)
{
    char a[32], b[32], c[32], d[32], e[32];

    if (histogram_count(h) == 0) {
        fprintf(f, "  %-10s no samples\n", label);
        return;
    }
    fprintf(f, "  %-10s p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  (%llu samples)\n", label,
            report_fmt_ns(histogram_percentile(h, 50), a, sizeof(a)),
            report_fmt_ns(histogram_percentile(h, 90), b, sizeof(b)),
            report_fmt_ns(histogram_percentile(h, 99), c, sizeof(c)),
            report_fmt_ns(histogram_percentile(h, 99.9), d, sizeof(d)),
            report_fmt_ns(histogram_max(h), e, sizeof(e)), (unsigned long long)histogram_count(h));
}

static void print_errors(FILE *f, const struct client_stats *st)
{
    const char *sep = "";

    if (client_stats_errors(st) == 0) {
        fprintf(f, "  %-10s none\n", "errors");
        return;
    }
    fprintf(f, "  %-10s ", "errors");
    for (size_t i = 0; i < CLIENT_STATUS_MAX; i++) {
        if (st->http_status[i]) {
            fprintf(f, "%sHTTP %zu: %llu", sep, i, (unsigned long long)st->http_status[i]);
            sep = ", ";
        }
    }
    for (size_t i = 0; i < CLIENT_STATUS_MAX; i++) {
        if (st->error_events[i]) {
            fprintf(f, "%sERROR event %zu: %llu", sep, i, (unsigned long long)st->error_events[i]);
            sep = ", ";
        }
    }
    for (size_t i = 0; i < CLIENT_TERR_COUNT; i++) {
        if (st->transport[i]) {
            fprintf(f, "%s%s: %llu", sep, client_terr_name((enum client_terr)i),
                    (unsigned long long)st->transport[i]);
            sep = ", ";
        }
    }
    fprintf(f, "\n");
}

void report_summary(FILE *f, const struct report_params *p, const struct client_stats *st)
{
    double secs = st->measured_s;
    struct spread sp = spread_of(st);

    if (p->watchers > 0) {
        fprintf(f, "kwp load: %lld watchers on %s%s for %.1fs (ramp %lld/s, initial %s%s%s)%s\n",
                (long long)p->watchers, p->target, p->path, st->elapsed_s, (long long)p->ramp_per_s,
                p->initial,
                p->warmup_after_open ? ", measured once every watcher was open"
                : p->warmup_ms > 0   ? ", warmup excluded"
                                     : "",
                p->start_rv ? ", from a given rv" : "", st->interrupted ? " INTERRUPTED" : "");
    } else {
        fprintf(f, "kwp load: LISTs on %s%s for %.1fs%s\n", p->target, p->path, st->elapsed_s,
                st->interrupted ? " INTERRUPTED" : "");
    }
    if (p->watchers > 0) {
        fprintf(f, "  %-10s opened %llu/%lld, open at end %u, most open %u\n", "watches",
                (unsigned long long)st->watchers_opened, (long long)p->watchers,
                st->watches_open_end, st->watches_open_max);
        if (st->end_watching < (uint64_t)p->watchers) {
            fprintf(f,
                    "  %-10s not watching at the end: %u connecting, %u awaiting a LIST answer, "
                    "%u reading a LIST body, %u awaiting a WATCH answer, %u backing off or not "
                    "started\n",
                    "", st->end_connecting, st->end_list_pending, st->end_list_body,
                    st->end_watch_pending, st->end_waiting);
        }
        fprintf(f,
                "  %-10s %llu delivered in %.1fs = %.0f/s, %.2f MB/s read (%llu bookmarks, "
                "%llu initial, %llu in warmup)\n",
                "events", (unsigned long long)st->events, secs, per_s(st->events, secs),
                per_s(st->bytes, secs) / MB, (unsigned long long)st->bookmarks,
                (unsigned long long)st->initial_events, (unsigned long long)st->warmup_events);
        print_latency(f, "latency", st->latency);
        if (st->deleted || st->unstamped) {
            fprintf(f, "  %-10s %llu DELETED and %llu unstamped events carry no latency\n", "",
                    (unsigned long long)st->deleted, (unsigned long long)st->unstamped);
        }
        fprintf(f, "  %-10s events per watcher min %llu median %llu max %llu; %llu got none\n",
                "fairness", (unsigned long long)sp.min, (unsigned long long)sp.median,
                (unsigned long long)sp.max, (unsigned long long)sp.zero);
        fprintf(f,
                "  %-10s lists %llu, relists %llu, 410s %llu, reconnects %llu, watch "
                "requests %llu\n",
                "reflector", (unsigned long long)st->lists, (unsigned long long)st->relists,
                (unsigned long long)st->gone, (unsigned long long)st->reconnects,
                (unsigned long long)st->watch_requests);
    }
    if (p->lists_per_s > 0) {
        fprintf(f,
                "  %-10s %llu of %llu ok, %llu not sent (all %lld in flight), %.2f MB/s, "
                "?%s\n",
                "LIST", (unsigned long long)st->list_ok, (unsigned long long)st->list_requests,
                (unsigned long long)st->list_missed, (long long)p->list_concurrency,
                per_s(st->list_bytes, st->elapsed_s) / MB, p->list_query);
        print_latency(f, "LIST lat", st->list_latency);
    }
    print_errors(f, st);
    for (size_t i = 0; i < st->n_procs; i++) {
        char name[32];
        if (!st->procs[i].seen) {
            continue;
        }
        fprintf(f, "  %-10s %s: %.2f CPU s (%.0f%% of %.1fs), RSS max %.1f MB\n", "cpu",
                proc_name(st, i, name, sizeof(name)), st->procs[i].cpu_s,
                st->elapsed_s > 0 ? 100.0 * st->procs[i].cpu_s / st->elapsed_s : 0, st->elapsed_s,
                (double)st->procs[i].rss_max_kb / 1024.0);
    }
}

/* ---- JSON -------------------------------------------------------------------------------- */

static double ms(uint64_t ns)
{
    return (double)ns / NS_PER_MS;
}

static void add_str(cJSON *o, const char *k, const char *v)
{
    if (v) {
        cJSON_AddStringToObject(o, k, v);
    } else {
        cJSON_AddNullToObject(o, k);
    }
}

static void add_num(cJSON *o, const char *k, double v)
{
    cJSON_AddNumberToObject(o, k, v);
}

static void add_latency(cJSON *o, const char *k, const struct histogram *h)
{
    cJSON *l = cJSON_AddObjectToObject(o, k);

    add_num(l, "count", (double)histogram_count(h));
    if (histogram_count(h) == 0) {
        return;
    }
    add_num(l, "min", ms(histogram_min(h)));
    add_num(l, "mean", histogram_mean(h) / NS_PER_MS);
    add_num(l, "p50", ms(histogram_percentile(h, 50)));
    add_num(l, "p90", ms(histogram_percentile(h, 90)));
    add_num(l, "p99", ms(histogram_percentile(h, 99)));
    add_num(l, "p999", ms(histogram_percentile(h, 99.9)));
    add_num(l, "max", ms(histogram_max(h)));
}

static void add_counts(cJSON *o, const char *k, const uint64_t *v, size_t n)
{
    cJSON *c = cJSON_AddObjectToObject(o, k);
    char key[16];

    for (size_t i = 0; i < n; i++) {
        if (v[i]) {
            snprintf(key, sizeof(key), "%zu", i);
            add_num(c, key, (double)v[i]);
        }
    }
}

static void add_params(cJSON *root, const struct report_params *p)
{
    cJSON *o = cJSON_AddObjectToObject(root, "params");

    add_str(o, "target", p->target);
    add_str(o, "resource", p->resource);
    add_str(o, "path", p->path);
    add_str(o, "namespace", p->ns);
    add_str(o, "selector", p->selector);
    add_str(o, "field_selector", p->field_selector);
    add_num(o, "watchers", (double)p->watchers);
    add_num(o, "duration_s", (double)p->duration_ms / 1000.0);
    add_num(o, "ramp_per_s", (double)p->ramp_per_s);
    add_num(o, "warmup_s", (double)p->warmup_ms / 1000.0);
    cJSON_AddBoolToObject(o, "warmup_after_open", p->warmup_after_open);
    add_str(o, "initial", p->initial);
    add_str(o, "start_rv", p->start_rv);
    add_num(o, "lists_per_s", (double)p->lists_per_s);
    add_str(o, "list_query", p->list_query);
    add_num(o, "list_concurrency", (double)p->list_concurrency);
}

static void add_watch(cJSON *root, const struct report_params *p, const struct client_stats *st)
{
    cJSON *o = cJSON_AddObjectToObject(root, "watch");
    cJSON *w, *e;
    struct spread sp = spread_of(st);

    add_num(o, "watchers", (double)p->watchers);
    add_num(o, "watchers_opened", (double)st->watchers_opened);
    add_num(o, "watches_open_max", st->watches_open_max);
    add_num(o, "watches_open_end", st->watches_open_end);
    e = cJSON_AddObjectToObject(o, "states_at_end");
    add_num(e, "watching", st->end_watching);
    add_num(e, "connecting", st->end_connecting);
    add_num(e, "list_pending", st->end_list_pending);
    add_num(e, "list_body", st->end_list_body);
    add_num(e, "watch_pending", st->end_watch_pending);
    add_num(e, "waiting", st->end_waiting);
    add_num(o, "events", (double)st->events);
    add_num(o, "events_per_s", per_s(st->events, st->measured_s));
    add_num(o, "measured_from_s", st->measured_from_s);
    add_num(o, "bytes", (double)st->bytes);
    add_num(o, "bytes_per_s", per_s(st->bytes, st->measured_s));
    add_num(o, "event_bytes", (double)st->event_bytes);
    add_num(o, "warmup_events", (double)st->warmup_events);
    add_num(o, "initial_events", (double)st->initial_events);
    add_num(o, "bookmarks", (double)st->bookmarks);
    add_num(o, "deleted", (double)st->deleted);
    add_num(o, "unstamped", (double)st->unstamped);
    add_num(o, "lists", (double)st->lists);
    add_num(o, "relists", (double)st->relists);
    add_num(o, "reconnects", (double)st->reconnects);
    add_num(o, "gone_410", (double)st->gone);
    add_num(o, "watch_requests", (double)st->watch_requests);
    add_latency(o, "latency_ms", st->latency);
    w = cJSON_AddObjectToObject(o, "per_watcher_events");
    add_num(w, "min", (double)sp.min);
    add_num(w, "median", (double)sp.median);
    add_num(w, "max", (double)sp.max);
    add_num(w, "zero", (double)sp.zero);
}

static void add_errors(cJSON *root, const struct client_stats *st)
{
    cJSON *o = cJSON_AddObjectToObject(root, "errors");
    cJSON *t;

    add_num(o, "total", (double)client_stats_errors(st));
    add_counts(o, "http", st->http_status, CLIENT_STATUS_MAX);
    add_counts(o, "error_events", st->error_events, CLIENT_STATUS_MAX);
    t = cJSON_AddObjectToObject(o, "transport");
    for (size_t i = 0; i < CLIENT_TERR_COUNT; i++) {
        add_num(t, client_terr_name((enum client_terr)i), (double)st->transport[i]);
    }
}

static void add_list(cJSON *root, const struct report_params *p, const struct client_stats *st)
{
    cJSON *o = cJSON_AddObjectToObject(root, "list");

    add_num(o, "per_s", (double)p->lists_per_s);
    add_num(o, "concurrency", (double)p->list_concurrency);
    add_str(o, "query", p->list_query);
    add_num(o, "requests", (double)st->list_requests);
    add_num(o, "ok", (double)st->list_ok);
    add_num(o, "missed", (double)st->list_missed);
    add_num(o, "bytes", (double)st->list_bytes);
    add_num(o, "mb_per_s", per_s(st->list_bytes, st->elapsed_s) / MB);
    add_latency(o, "latency_ms", st->list_latency);
}

static void add_procs(cJSON *root, const struct client_stats *st)
{
    cJSON *a = cJSON_AddArrayToObject(root, "processes");

    for (size_t i = 0; i < st->n_procs; i++) {
        cJSON *o = cJSON_CreateObject();
        char name[32];
        add_str(o, "name", proc_name(st, i, name, sizeof(name)));
        add_num(o, "pid", st->procs[i].pid);
        cJSON_AddBoolToObject(o, "sampled", st->procs[i].seen);
        add_num(o, "cpu_s", st->procs[i].cpu_s);
        add_num(o, "cpu_pct", st->elapsed_s > 0 ? 100.0 * st->procs[i].cpu_s / st->elapsed_s : 0);
        add_num(o, "rss_max_kb", (double)st->procs[i].rss_max_kb);
        cJSON_AddItemToArray(a, o);
    }
}

static void add_series(cJSON *root, const struct client_stats *st)
{
    cJSON *a = cJSON_AddArrayToObject(root, "series");

    for (size_t i = 0; i < st->n_series; i++) {
        const struct client_sample *s = &st->series[i];
        cJSON *o = cJSON_CreateObject();
        cJSON *cpu = cJSON_CreateArray();
        cJSON *rss = cJSON_CreateArray();
        add_num(o, "t", s->t_s);
        add_num(o, "watches_open", s->watches_open);
        add_num(o, "events", (double)s->events);
        add_num(o, "bytes", (double)s->bytes);
        add_num(o, "lists", (double)s->lists);
        add_num(o, "list_bytes", (double)s->list_bytes);
        add_num(o, "errors", (double)s->errors);
        add_num(o, "gone_410", (double)s->gone);
        add_num(o, "relists", (double)s->relists);
        add_num(o, "reconnects", (double)s->reconnects);
        add_num(o, "latency_count", (double)s->lat_count);
        add_num(o, "p50_ms", ms(s->p50_ns));
        add_num(o, "p99_ms", ms(s->p99_ns));
        add_num(o, "max_ms", ms(s->max_ns));
        for (size_t j = 0; j < st->n_procs; j++) {
            cJSON_AddItemToArray(cpu, cJSON_CreateNumber(s->cpu_pct[j]));
            cJSON_AddItemToArray(rss, cJSON_CreateNumber((double)s->rss_kb[j]));
        }
        cJSON_AddItemToObject(o, "cpu_pct", cpu);
        cJSON_AddItemToObject(o, "rss_kb", rss);
        cJSON_AddItemToArray(a, o);
    }
}

int report_json(FILE *f, const struct report_params *p, const struct client_stats *st)
{
    cJSON *root = cJSON_CreateObject();
    char *text;
    int rc = 0;

    add_str(root, "tool", "kwp load");
    add_params(root, p);
    add_num(root, "elapsed_s", st->elapsed_s);
    add_num(root, "measured_s", st->measured_s);
    cJSON_AddBoolToObject(root, "interrupted", st->interrupted);
    add_watch(root, p, st);
    add_errors(root, st);
    add_list(root, p, st);
    add_procs(root, st);
    add_series(root, st);
    text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text) {
        return -EIO;
    }
    if (fputs(text, f) == EOF || fputc('\n', f) == EOF || fflush(f) != 0) {
        rc = -EIO;
    }
    free(text);
    return rc;
}
