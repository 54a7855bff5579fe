/*
 * exp_relist_storm.c - experiment 7, `relist-storm`: an apiserver restart (the simulator's
 * /_sim/reset-history + /_sim/drop-watches: the history starts again at the current
 * revision and every stream is cut) with N informers, directly on the simulator and through
 * kwp proxy. The simulator's pods churn, so the informers' last configmap RV is behind the
 * global revision and their re-watch after the restart gets 410: each one relists.
 *
 * Measured per path: upstream LISTs of configmaps during the restart (the simulator's
 * /_sim/stats counter), LISTs the informers sent and their bytes, 410s, and the time until
 * every informer has seen a configmap write made right after the restart.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab.h"

#define INF_MAX 64
#define CONVERGE_MS 30000

struct storm {
    const char *path_name;
    int n;
    double upstream_lists;
    size_t lists, gone;
    uint64_t bytes;
    double converge_s; /* -1: not converged */
    int converged;
};

static double cm_lists(const char *sim)
{
    return lab_sim_stat(sim, "configmaps", "lists");
}

static int post(const char *base, const char *path)
{
    struct lab_resp r;
    int rc = lab_http("POST", base, path, NULL, 5000, &r) == 0 && r.code == 200 ? 0 : -1;

    lab_resp_free(&r);
    return rc;
}

/* Runs the storm against <target> (the simulator or the proxy) with <n> informers. */
static int storm(struct lab *lab, const char *sim, const char *target, int n, struct storm *out)
{
    struct lab_informer *inf[INF_MAX] = {0};
    struct lab_inf_stats before[INF_MAX], st;
    char path[256];
    uint64_t target_rv = 0, t0, deadline;
    double lists0;
    int rc = 0;

    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps", lab_ns(lab));
    for (int i = 0; i < n; i++) {
        inf[i] = lab_informer_start(target, path, 0, false, 0);
    }
    /* wait until every informer has listed and is watching */
    deadline = lab_now_ms() + CONVERGE_MS;
    for (int ready = 0; ready < n && lab_now_ms() < deadline;) {
        ready = 0;
        for (int i = 0; i < n; i++) {
            lab_informer_stats(inf[i], &st);
            ready += st.lists_ok > 0 && st.watches > 0;
        }
        lab_sleep_ms(50);
    }
    lab_sleep_ms(1500); /* the pods churn on: the informers' configmap RV falls behind */
    for (int i = 0; i < n; i++) {
        lab_informer_stats(inf[i], &before[i]);
    }
    lists0 = cm_lists(sim);
    /* the restart */
    t0 = lab_now_ms();
    if (post(sim, "/_sim/reset-history") != 0 || post(sim, "/_sim/drop-watches") != 0) {
        rc = lab_fail(lab, "POST /_sim/reset-history or /_sim/drop-watches failed");
        goto out;
    }
    if (lab_write_burst(lab, sim, 1, 1, &target_rv) != 1) {
        rc = lab_fail(lab, "the write after the restart failed");
        goto out;
    }
    deadline = t0 + CONVERGE_MS;
    out->converged = 0;
    while (lab_now_ms() < deadline) {
        int c = 0;

        for (int i = 0; i < n; i++) {
            lab_informer_stats(inf[i], &st);
            c += st.rv >= target_rv;
        }
        out->converged = c;
        if (c == n) {
            break;
        }
        lab_sleep_ms(10);
    }
    out->converge_s = out->converged == n ? (double)(lab_now_ms() - t0) / 1000.0 : -1;
    lab_sleep_ms(1000); /* late relists count too */
    out->upstream_lists = cm_lists(sim) - lists0;
    out->n = n;
    out->lists = out->gone = 0;
    out->bytes = 0;
    for (int i = 0; i < n; i++) {
        lab_informer_stats(inf[i], &st);
        out->lists += st.lists - before[i].lists;
        out->gone += st.gone - before[i].gone;
        out->bytes += st.list_bytes - before[i].list_bytes;
    }
out:
    for (int i = 0; i < n; i++) {
        lab_informer_free(inf[i]);
    }
    return rc;
}

static int run(struct lab *lab)
{
    const char *sim_args[] = {
        "--objects",           "50", "--churn", "50", "--compaction-interval", "0",
        "--bookmark-interval", "0",  NULL};
    /* one page: the relist is one LIST request (kwp's default 500 a page would be 2 here) */
    const char *proxy_args[] = {"--page-size", "10000", NULL};
    static const int ns_quick[] = {1, 10}, ns_full[] = {1, 10, 30, 60};
    const int *ns = lab_quick(lab) ? ns_quick : ns_full;
    size_t nn = lab_quick(lab) ? 2 : 4;
    int objects = lab_quick(lab) ? 200 : 1000;
    const char *cols[] = {"informers", "path",           "upstream LISTs", "client LISTs",
                          "410s",      "client LIST MB", "converged",      "seconds"};
    struct storm res[2][4];
    struct lab_proc *sim_p, *proxy = NULL;
    const char *sim = lab_server(lab, sim_args, &sim_p);
    cJSON *arr, *j;
    struct lab_table *t;
    char data[4096];
    size_t dl = 0;

    if (!sim) {
        return -1;
    }
    if (lab_ns_ensure(lab, sim) != 0) {
        return lab_fail(lab, "cannot create namespace %s", lab_ns(lab));
    }
    lab_progress(lab, "writing %d configmaps", objects);
    if (lab_write_burst(lab, sim, (size_t)objects, objects, NULL) != (size_t)objects) {
        return lab_fail(lab, "writes failed");
    }
    for (size_t k = 0; k < nn; k++) {
        for (int via = 0; via < 2; via++) {
            struct storm *s = &res[via][k];

            memset(s, 0, sizeof(*s));
            s->path_name = via ? "kwp" : "direct";
            lab_progress(lab, "%d informers %s", ns[k], s->path_name);
            /* a proxy of its own per run: the direct runs see no proxy's relist */
            proxy = via ? lab_proxy(lab, sim, proxy_args) : NULL;
            if (via && !proxy) {
                return lab_fail(lab, "kwp proxy did not start");
            }
            if (storm(lab, sim, via ? lab_proc_url(proxy) : sim, ns[k], s) != 0) {
                return -1;
            }
            lab_proc_stop(proxy);
        }
    }
    t = lab_table_new(lab, "storm",
                      "an apiserver restart (history reset, streams cut) with N informers", cols,
                      8);
    arr = cJSON_AddArrayToObject(lab_results(lab), "runs");
    dl += (size_t)snprintf(data + dl, sizeof(data) - dl, "# informers direct_lists kwp_lists\n");
    for (size_t k = 0; k < nn; k++) {
        for (int via = 0; via < 2; via++) {
            struct storm *s = &res[via][k];

            lab_table_cell(t, "%d", s->n);
            lab_table_cell(t, "%s", s->path_name);
            lab_table_cell(t, "%.0f", s->upstream_lists);
            lab_table_cell(t, "%zu", s->lists);
            lab_table_cell(t, "%zu", s->gone);
            lab_table_cell(t, "%.3f", (double)s->bytes / 1e6);
            lab_table_cell(t, "%d/%d", s->converged, s->n);
            lab_table_cell(t, "%.3f", s->converge_s);
            j = cJSON_CreateObject();
            cJSON_AddNumberToObject(j, "informers", s->n);
            cJSON_AddStringToObject(j, "path", s->path_name);
            cJSON_AddNumberToObject(j, "upstreamLists", s->upstream_lists);
            cJSON_AddNumberToObject(j, "clientLists", (double)s->lists);
            cJSON_AddNumberToObject(j, "gone410", (double)s->gone);
            cJSON_AddNumberToObject(j, "clientListBytes", (double)s->bytes);
            cJSON_AddNumberToObject(j, "converged", s->converged);
            cJSON_AddNumberToObject(j, "convergeSeconds", s->converge_s);
            cJSON_AddItemToArray(arr, j);
        }
        dl += (size_t)snprintf(data + dl, sizeof(data) - dl, "%d %.0f %.0f\n", res[0][k].n,
                               res[0][k].upstream_lists, res[1][k].upstream_lists);
    }
    lab_table_end(t);
    cJSON_AddNumberToObject(lab_results(lab), "objects", objects);
    lab_plot(lab, data,
             "set title 'relist storm: upstream LISTs after an apiserver restart'\n"
             "set xlabel 'informers'\nset ylabel 'upstream LISTs of configmaps'\n"
             "set key left top\nset grid\nset style data linespoints\n"
             "plot $DAT using 1:2 title 'direct' lw 2, $DAT using 1:3 title 'through kwp' lw 2\n");
    {
        const struct storm *d = &res[0][nn - 1], *k = &res[1][nn - 1];

        lab_conclude(lab,
                     "after a restart, %d informers cost %.0f upstream LISTs (%.1f MB) directly "
                     "and %.0f through kwp, which relists once for all of them; all converged "
                     "in %.2f s direct, %.2f s through kwp",
                     d->n, d->upstream_lists, (double)d->bytes / 1e6, k->upstream_lists,
                     d->converge_s, k->converge_s);
    }
    return 0;
}

const struct lab_experiment lab_exp_relist_storm = {
    .name = "relist-storm",
    .summary = "an apiserver restart with N informers, direct and through kwp: upstream LISTs, "
               "bytes, time to converge",
    .needs = LAB_NEEDS_SIM,
    .run = run,
};
