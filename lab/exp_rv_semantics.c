/*
 * exp_rv_semantics.c - experiment 3, `rv-semantics`: LIST with resourceVersion "" (most
 * recent: a consistent read), "0" (any: whatever the cache holds) and N (not older than N)
 * while the writer makes R writes/s, directly on the server and through kwp proxy.
 *
 * For each mode K LISTs of the namespace: latency (p50, max), the upstream requests they
 * caused (the simulator's /_sim/stats LIST counter, or with --upstream the proxy's
 * kwp_upstream_list_requests_total + kwp_forwarded_total), and staleness: how many of the
 * writer's writes (its own log) had been answered before the LIST was sent but are newer than
 * the list's RV.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab.h"

#define OBJECTS 50

struct mode_result {
    double p50_ms, max_ms;
    double upstream; /* upstream requests for the K LISTs, -1 when unknown */
    double behind_avg;
    size_t behind_max;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* Writes in the log that were done at <sent_ms> (answered before the LIST left) with an RV
 * newer than <rv>. */
static size_t behind(struct lab_writer *w, uint64_t sent_ms, uint64_t rv)
{
    size_t n, k = 0;
    const struct lab_write *log = lab_writer_log(w, &n);

    for (size_t i = n; i-- > 0;) {
        if (log[i].at_ms <= sent_ms && log[i].rv > rv) {
            k++;
        }
        if (log[i].rv <= rv) {
            break; /* the log is in RV order */
        }
    }
    return k;
}

/* Upstream requests so far, as seen from the simulator or the proxy's metrics. */
static double upstream_count(const char *sim, const char *proxy, bool via)
{
    if (sim) {
        return lab_sim_stat(sim, "configmaps", "lists");
    }
    if (via) {
        double l = lab_metric(proxy, "kwp_upstream_list_requests_total", NULL);
        double f = lab_metric(proxy, "kwp_forwarded_total", "configmaps");

        return l < 0 ? -1 : l + (f < 0 ? 0 : f);
    }
    return -1;
}

static void run_mode(const char *url, const char *ns, const char *rv, int k, struct lab_writer *w,
                     const char *sim, const char *proxy, bool via, struct mode_result *m)
{
    double *lat = calloc((size_t)k, sizeof(double));
    double before = upstream_count(sim, proxy, via), after, sum = 0;
    char path[256];

    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps%s%s", ns,
             rv ? "?resourceVersion=" : "", rv ? rv : "");
    memset(m, 0, sizeof(*m));
    for (int i = 0; lat && i < k; i++) {
        uint64_t sent = lab_now_ms();
        struct lab_resp r;
        cJSON *j;
        size_t b;

        lab_http("GET", url, path, NULL, 10000, &r);
        lat[i] = r.seconds * 1000.0;
        j = cJSON_ParseWithLength(r.body, r.len);
        b = behind(w, sent, lab_json_rv(j));
        cJSON_Delete(j);
        lab_resp_free(&r);
        sum += (double)b;
        m->behind_max = b > m->behind_max ? b : m->behind_max;
        lab_sleep_ms(20);
    }
    after = upstream_count(sim, proxy, via);
    m->upstream = before < 0 || after < 0 ? -1 : after - before;
    if (lat && k > 0) {
        qsort(lat, (size_t)k, sizeof(double), cmp_double);
        m->p50_ms = lat[k / 2];
        m->max_ms = lat[k - 1];
        m->behind_avg = sum / k;
    }
    free(lat);
}

static int run(struct lab *lab)
{
    struct lab_proc *simp, *proxy;
    const char *base = lab_server(lab, NULL, &simp);
    const char *sim = simp ? lab_proc_url(simp) : NULL;
    const char *cols[] = {"via",
                          "rv",
                          "LISTs",
                          "p50 ms",
                          "max ms",
                          "upstream requests",
                          "writes behind avg",
                          "writes behind max"};
    double rate = lab_quick(lab) ? 50 : 200;
    int k = lab_quick(lab) ? 40 : 200;
    struct lab_writer *w;
    struct lab_table *t;
    uint64_t first = 0;
    char rvn[32];
    cJSON *arr;
    struct mode_result res[2][3];

    if (!base) {
        return -1;
    }
    if (lab_ns_ensure(lab, base) != 0 || lab_write_burst(lab, base, 1, 1, &first) != 1) {
        return lab_fail(lab, "cannot write in namespace %s on %s", lab_ns(lab), base);
    }
    proxy = lab_proxy(lab, base, NULL);
    if (!proxy) {
        return lab_fail(lab, "kwp proxy did not start");
    }
    w = lab_writer_start(lab, base, rate, OBJECTS);
    if (!w) {
        return lab_fail(lab, "the writer did not start");
    }
    lab_sleep_ms(1000); /* the churn is on and the proxy's cache is in sync */
    snprintf(rvn, sizeof(rvn), "%" PRIu64, first);
    {
        const char *rvs[] = {NULL, "0", rvn};
        const char *names[] = {"\"\"", "0", "N"};

        for (int v = 0; v < 2; v++) {
            for (int i = 0; i < 3; i++) {
                lab_progress(lab, "%s rv=%s", v ? "kwp" : "server", names[i]);
                run_mode(v ? lab_proc_url(proxy) : base, lab_ns(lab), rvs[i], k, w, sim,
                         lab_proc_url(proxy), v == 1, &res[v][i]);
            }
        }
        lab_writer_stop(w);
        t = lab_table_new(lab, "lists", "LIST under churn: latency, upstream requests, staleness",
                          cols, sizeof(cols) / sizeof(cols[0]));
        arr = cJSON_AddArrayToObject(lab_results(lab), "lists");
        for (int v = 0; v < 2; v++) {
            for (int i = 0; i < 3; i++) {
                const struct mode_result *m = &res[v][i];
                cJSON *j = cJSON_CreateObject();

                lab_table_cell(t, "%s", v ? "kwp" : "server");
                lab_table_cell(t, "%s", names[i]);
                lab_table_cell(t, "%d", k);
                lab_table_cell(t, "%.2f", m->p50_ms);
                lab_table_cell(t, "%.2f", m->max_ms);
                if (m->upstream < 0) {
                    lab_table_cell(t, "%s", "?");
                } else {
                    lab_table_cell(t, "%.0f", m->upstream);
                }
                lab_table_cell(t, "%.1f", m->behind_avg);
                lab_table_cell(t, "%zu", m->behind_max);
                cJSON_AddStringToObject(j, "via", v ? "kwp" : "server");
                cJSON_AddStringToObject(j, "rv", rvs[i] ? rvs[i] : "");
                cJSON_AddNumberToObject(j, "lists", k);
                cJSON_AddNumberToObject(j, "p50Ms", m->p50_ms);
                cJSON_AddNumberToObject(j, "maxMs", m->max_ms);
                if (m->upstream < 0) {
                    cJSON_AddNullToObject(j, "upstreamRequests");
                } else {
                    cJSON_AddNumberToObject(j, "upstreamRequests", m->upstream);
                }
                cJSON_AddNumberToObject(j, "writesBehindAvg", m->behind_avg);
                cJSON_AddNumberToObject(j, "writesBehindMax", (double)m->behind_max);
                cJSON_AddItemToArray(arr, j);
            }
        }
        lab_table_end(t);
        {
            /* one row per rv: p50 and upstream requests, on the server and through kwp */
            char data[512];
            size_t dl = 0;

            for (int i = 0; i < 3 && dl < sizeof(data); i++) {
                dl += (size_t)snprintf(data + dl, sizeof(data) - dl, "%s %.3f %.3f %.0f %.0f\n",
                                       i == 0 ? "unset" : names[i], res[0][i].p50_ms,
                                       res[1][i].p50_ms,
                                       res[0][i].upstream < 0 ? 0 : res[0][i].upstream,
                                       res[1][i].upstream < 0 ? 0 : res[1][i].upstream);
            }
            lab_plot(lab, data,
                     "set multiplot layout 1,2 title 'LIST under churn: rv \"\" vs 0 vs N'\n"
                     "set style data histograms\nset style histogram clustered gap 1\n"
                     "set style fill solid 0.7 border -1\nset grid ytics\nset key below\nset "
                     "yrange [0:*]\n"
                     "set xlabel 'resourceVersion'\nset ylabel 'p50 latency (ms)'\n"
                     "plot $DAT using 2:xtic(1) title 'server', '' using 3 title 'through kwp'\n"
                     "set ylabel 'upstream requests'\n"
                     "plot $DAT using 4:xtic(1) title 'server', '' using 5 title 'through kwp'\n"
                     "unset multiplot\n");
        }
    }
    cJSON_AddNumberToObject(lab_results(lab), "writesPerSecond", rate);
    cJSON_AddNumberToObject(lab_results(lab), "writes", (double)lab_writer_count(w));
    cJSON_AddNumberToObject(lab_results(lab), "writeErrors", (double)lab_writer_errors(w));
    cJSON_AddNumberToObject(
        lab_results(lab), "proxyUpstreamLists",
        lab_metric(lab_proc_url(proxy), "kwp_upstream_list_requests_total", NULL));
    lab_conclude(lab,
                 "under %.0f writes/s, %d LISTs each: rv \"\" costs the server %.0f requests "
                 "directly and %.0f through kwp (answers %.1f writes behind); rv 0 through kwp "
                 "costs %.0f upstream requests (the cache answers, %.1f writes behind on average, "
                 "p50 %.2f ms vs %.2f ms direct); rv N (not older than N) is served from the "
                 "cache as well, %.1f writes behind",
                 rate, k, res[0][0].upstream, res[1][0].upstream, res[1][0].behind_avg,
                 res[1][1].upstream, res[1][1].behind_avg, res[1][1].p50_ms, res[0][1].p50_ms,
                 res[1][2].behind_avg);
    lab_writer_free(w);
    return 0;
}

const struct lab_experiment lab_exp_rv_semantics = {
    .name = "rv-semantics",
    .summary = "LIST rv \"\" vs \"0\" vs N under churn: latency, upstream requests, staleness, "
               "direct and through kwp",
    .needs = LAB_NEEDS_API,
    .run = run,
};
