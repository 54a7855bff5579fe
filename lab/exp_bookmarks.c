/*
 * exp_bookmarks.c - experiment 5, `bookmarks`: a quiet resource while others churn. The
 * simulator's pods churn (each write advances the global revision) and its compaction keeps
 * only the last --history-events revisions; the lab's configmaps get one write per trial and
 * then stay quiet. Four watches from that write's RV, directly and through kwp proxy, with
 * and without allowWatchBookmarks, stay open for the quiet period, are cut, and re-watch
 * from the last RV they saw (the write's, or the last BOOKMARK's). Two disconnects: the
 * client's connection drops (the server keeps its history), or the apiserver restarts (the
 * simulator's reset-history + drop-watches for configmaps: the history starts again at the
 * current revision). Measured: 410s on the re-watch (each one a relist), bookmarks received,
 * and how far behind the revision the RV they re-watched from was.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab.h"

#define MODES 4
#define KINDS 2

static const char *const kinds[KINDS] = {"connection drop", "apiserver restart"};
#define REWATCH_WAIT_MS 1500

struct mode {
    const char *path;
    bool bookmarks;
    const char *base;
    size_t gone, trials, bookmarks_seen, ended_early;
    double behind_sum; /* revisions between the re-watch RV and the revision */
};

static void watch_path(char *out, size_t cap, const char *ns, uint64_t rv, bool bm)
{
    snprintf(out, cap, "/api/v1/namespaces/%s/configmaps?watch=1&resourceVersion=%" PRIu64 "%s", ns,
             rv, bm ? "&allowWatchBookmarks=true" : "");
}

static int run(struct lab *lab)
{
    const char *sim_args[] = {"--objects",
                              "50",
                              "--churn",
                              "100",
                              "--history-events",
                              "200",
                              "--compaction-interval",
                              "1s",
                              "--bookmark-interval",
                              "1s",
                              NULL};
    const char *proxy_args[] = {"--bookmark-interval", "1s", NULL};
    const char *cols[] = {"disconnect",      "path",       "allowWatchBookmarks", "trials",
                          "bookmarks/trial", "RVs behind", "re-watch 410s",       "relists",
                          "410 rate"};
    struct mode mm[KINDS][MODES] = {{{"direct", false, NULL, 0, 0, 0, 0, 0},
                                     {"direct", true, NULL, 0, 0, 0, 0, 0},
                                     {"kwp", false, NULL, 0, 0, 0, 0, 0},
                                     {"kwp", true, NULL, 0, 0, 0, 0, 0}},
                                    {{"direct", false, NULL, 0, 0, 0, 0, 0},
                                     {"direct", true, NULL, 0, 0, 0, 0, 0},
                                     {"kwp", false, NULL, 0, 0, 0, 0, 0},
                                     {"kwp", true, NULL, 0, 0, 0, 0, 0}}};
    struct mode *m;
    int trials = lab_quick(lab) ? 3 : 6;
    uint64_t quiet_ms = lab_quick(lab) ? 3000 : 8000;
    struct lab_proc *sim_p, *proxy;
    const char *sim = lab_server(lab, sim_args, &sim_p);
    struct lab_table *t;
    cJSON *arr;
    char data[2048];
    size_t dl = 0;

    if (!sim) {
        return -1;
    }
    if (lab_ns_ensure(lab, sim) != 0) {
        return lab_fail(lab, "cannot create namespace %s", lab_ns(lab));
    }
    proxy = lab_proxy(lab, sim, proxy_args);
    if (!proxy) {
        return lab_fail(lab, "kwp proxy did not start");
    }
    for (int k = 0; k < KINDS; k++) {
        for (int i = 0; i < MODES; i++) {
            mm[k][i].base = i < 2 ? sim : lab_proc_url(proxy);
        }
    }
    for (int trial = 0; trial < KINDS * trials; trial++) {
        int kind = trial / trials; /* every drop first: a restart changes the history */
        struct lab_watch *w[MODES];
        uint64_t last[MODES], x = 0, end;
        char path[512];
        double rev;

        m = mm[kind];
        lab_progress(lab, "trial %d/%d (%s): quiet for %.0f s", trial + 1, KINDS * trials,
                     kinds[kind], (double)quiet_ms / 1000.0);
        if (lab_write_burst(lab, sim, 1, 1, &x) != 1) {
            return lab_fail(lab, "the configmap write failed");
        }
        lab_sleep_ms(200); /* the proxy has the write */
        for (int i = 0; i < MODES; i++) {
            last[i] = x;
            watch_path(path, sizeof(path), lab_ns(lab), x, m[i].bookmarks);
            w[i] = lab_watch_open(m[i].base, path, (long)quiet_ms + 5000);
        }
        end = lab_now_ms() + quiet_ms;
        while (lab_now_ms() < end) {
            for (int i = 0; i < MODES; i++) {
                struct lab_event ev;
                int rc = -1;

                while (w[i] && (rc = lab_watch_next(w[i], &ev, 0)) == 1) {
                    if (ev.type != LAB_EV_ERROR && ev.rv > last[i]) {
                        last[i] = ev.rv;
                    }
                    m[i].bookmarks_seen += ev.type == LAB_EV_BOOKMARK;
                }
                if (w[i] && rc == 0) {
                    m[i].ended_early++; /* the server ended it: re-watch now, as a client does */
                    lab_watch_close(w[i]);
                    w[i] = NULL;
                }
            }
            lab_sleep_ms(50);
        }
        if (kind == 1) {
            struct lab_resp r1, r2;
            int bad = lab_http("POST", sim, "/_sim/reset-history?resource=configmaps", NULL, 5000,
                               &r1) != 0 ||
                      r1.code != 200 ||
                      lab_http("POST", sim, "/_sim/drop-watches?resource=configmaps", NULL, 5000,
                               &r2) != 0 ||
                      r2.code != 200;

            lab_resp_free(&r1);
            lab_resp_free(&r2);
            if (bad) {
                return lab_fail(lab, "POST /_sim/reset-history or /_sim/drop-watches failed");
            }
            lab_sleep_ms(300); /* kwp has relisted */
        }
        for (int i = 0; i < MODES; i++) {
            struct lab_event ev;

            while (w[i] && lab_watch_next(w[i], &ev, 0) == 1) { /* a last BOOKMARK, if any */
                if (ev.type != LAB_EV_ERROR && ev.rv > last[i]) {
                    last[i] = ev.rv;
                }
            }
            lab_watch_close(w[i]); /* the disconnect */
        }
        rev = lab_sim_stat(sim, NULL, "revision");
        for (int i = 0; i < MODES; i++) {
            watch_path(path, sizeof(path), lab_ns(lab), last[i], m[i].bookmarks);
            w[i] = lab_watch_open(m[i].base, path, REWATCH_WAIT_MS + 2000);
            m[i].behind_sum += rev - (double)last[i];
        }
        for (int i = 0; i < MODES; i++) {
            struct lab_event ev;
            uint64_t until = lab_now_ms() + REWATCH_WAIT_MS;

            while (lab_now_ms() < until && lab_watch_next(w[i], &ev, 100) != 0) {
                if (ev.type == LAB_EV_ERROR) {
                    m[i].gone += ev.code == 410;
                    break;
                }
            }
            m[i].trials++;
            lab_watch_close(w[i]);
        }
    }
    t = lab_table_new(lab, "rewatch", "re-watch after a quiet period while other resources churn",
                      cols, 9);
    arr = cJSON_AddArrayToObject(lab_results(lab), "modes");
    dl += (size_t)snprintf(data + dl, sizeof(data) - dl, "# mode label rate410\n");
    for (int x = 0; x < KINDS * MODES; x++) {
        int i = x % MODES;

        m = mm[x / MODES];
        double rate = m[i].trials ? (double)m[i].gone / (double)m[i].trials : 0;
        cJSON *j = cJSON_CreateObject();

        lab_table_cell(t, "%s", kinds[x / MODES]);
        lab_table_cell(t, "%s", m[i].path);
        lab_table_cell(t, "%s", m[i].bookmarks ? "true" : "false");
        lab_table_cell(t, "%zu", m[i].trials);
        lab_table_cell(t, "%.1f", (double)m[i].bookmarks_seen / (double)trials);
        lab_table_cell(t, "%.0f", m[i].behind_sum / (double)trials);
        lab_table_cell(t, "%zu", m[i].gone);
        lab_table_cell(t, "%zu", m[i].gone);
        lab_table_cell(t, "%.2f", rate);
        cJSON_AddStringToObject(j, "disconnect", x / MODES ? "restart" : "drop");
        cJSON_AddStringToObject(j, "path", m[i].path);
        cJSON_AddBoolToObject(j, "allowWatchBookmarks", m[i].bookmarks);
        cJSON_AddNumberToObject(j, "trials", (double)m[i].trials);
        cJSON_AddNumberToObject(j, "bookmarks", (double)m[i].bookmarks_seen);
        cJSON_AddNumberToObject(j, "revisionsBehind", m[i].behind_sum / (double)trials);
        cJSON_AddNumberToObject(j, "gone410", (double)m[i].gone);
        cJSON_AddNumberToObject(j, "relists", (double)m[i].gone);
        cJSON_AddNumberToObject(j, "endedEarly", (double)m[i].ended_early);
        cJSON_AddNumberToObject(j, "rate410", rate);
        cJSON_AddItemToArray(arr, j);
        dl += (size_t)snprintf(data + dl, sizeof(data) - dl, "%d \"%s %s%s\" %.3f\n", x,
                               x / MODES ? "restart" : "drop", m[i].path,
                               m[i].bookmarks ? "+bm" : "", rate);
    }
    lab_table_end(t);
    cJSON_AddNumberToObject(lab_results(lab), "quietSeconds", (double)quiet_ms / 1000.0);
    cJSON_AddNumberToObject(lab_results(lab), "churnPerSecond", 100);
    cJSON_AddNumberToObject(lab_results(lab), "historyEvents", 200);
    lab_plot(lab, data,
             "set title 'bookmarks: 410 rate of the re-watch after a quiet period'\n"
             "set style fill solid 0.8\nset boxwidth 0.6\nset yrange [0:1.1]\n"
             "set ylabel 'fraction of re-watches that got 410'\nset grid y\n"
             "plot $DAT using 1:3:xtic(2) with boxes notitle\n");
    m = mm[1];
    lab_conclude(lab,
                 "a resource quiet for %.0f s while others churn (100 writes/s, 200 revisions "
                 "kept): after a connection drop no re-watch got 410 (%zu, %zu, %zu, %zu); "
                 "after an apiserver restart directly %zu/%zu without bookmarks and %zu/%zu "
                 "with them, through kwp %zu/%zu and %zu/%zu",
                 (double)quiet_ms / 1000.0, mm[0][0].gone, mm[0][1].gone, mm[0][2].gone,
                 mm[0][3].gone, m[0].gone, m[0].trials, m[1].gone, m[1].trials, m[2].gone,
                 m[2].trials, m[3].gone, m[3].trials);
    return 0;
}

const struct lab_experiment lab_exp_bookmarks = {
    .name = "bookmarks",
    .summary = "a quiet resource while others churn: re-watch after a disconnect with and "
               "without allowWatchBookmarks, direct and through kwp",
    .needs = LAB_NEEDS_SIM,
    .run = run,
};
