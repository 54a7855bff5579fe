/*
 * exp_window.c - experiment 4, `window`: write rate R x disconnect time t -> the probability
 * that the re-watch gets 410.
 *
 * kwp proxy holds the history (kube-apiserver's watch-cache rules: a fixed window of W events
 * with --history-window 0 --history-min W --history-max W, or the default 75 s /
 * 100..102400-event window). For each R the writer writes at R/s; once it has written longer
 * than the largest t, each round probes, for every t of the grid, a watch from the RV the
 * writer had t seconds ago (what a client disconnected for t comes back with): 410 or not.
 * P(410) per cell = the share of rounds that got it. The measured boundary is the age of the
 * first write after the boundary a 410 names (`too old resource version: N (B)`), next to the
 * computed W / R (R as achieved by the writer). A heat map (gnuplot pm3d) of P over R x t.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab.h"

#define T_MAX 32
#define R_MAX 8
#define OBJECTS 20

struct window_cfg {
    const char *name; /* "fixed 200 events" ... */
    int events;       /* W, 0 = the watch cache's dynamic window */
    double rates[R_MAX];
    size_t n_rates;
    double t[T_MAX];
    size_t n_t;
    int rounds;
};

/* The RV of the last write done at or before <at_ms>; 0 when none. */
static uint64_t rv_at(const struct lab_write *log, size_t n, uint64_t at_ms)
{
    uint64_t rv = 0;

    for (size_t i = 0; i < n && log[i].at_ms <= at_ms; i++) {
        rv = log[i].rv;
    }
    return rv;
}

/* Watch from <rv>: 1 when the answer is a 410 (boundary in *b), 0 otherwise. */
static int probe(const char *url, const char *ns, uint64_t rv, uint64_t *b)
{
    char path[256];
    struct lab_event ev;
    struct lab_watch *w;
    int rc, got = 0;

    snprintf(path, sizeof(path),
             "/api/v1/namespaces/%s/configmaps?watch=1&resourceVersion=%" PRIu64, ns, rv);
    w = lab_watch_open(url, path, 5000);
    rc = w ? lab_watch_next(w, &ev, 2000) : 0;
    if (rc == 1 && ev.type == LAB_EV_ERROR && ev.code == 410) {
        const char *p = strchr(ev.message, '(');

        got = 1;
        *b = p ? strtoull(p + 1, NULL, 10) : 0;
    }
    lab_watch_close(w);
    return got;
}

/* Achieved writes/s over the last <ms> of the log. */
static double achieved_rate(const struct lab_write *log, size_t n, uint64_t ms)
{
    uint64_t end = n ? log[n - 1].at_ms : 0;
    size_t k = 0;

    for (size_t i = n; i-- > 0 && log[i].at_ms + ms > end;) {
        k++;
    }
    return (double)k * 1000.0 / (double)ms;
}

/* Runs one window configuration; appends heat-map rows to <dat> and a table. */
static int run_cfg(struct lab *lab, const char *base, const struct window_cfg *c, char *dat,
                   size_t dat_cap, size_t *dat_len, cJSON *out)
{
    char wv[32];
    const char *fixed[] = {"--history-window", "0", "--history-min", wv, "--history-max", wv, NULL};
    struct lab_proc *proxy;
    const char *cols[] = {"R writes/s", "achieved", "computed s",
                          "measured s", "error %",  "t with P(410)=1 from"};
    struct lab_table *t;
    char title[160];
    cJSON *cj = cJSON_CreateObject(), *rows;

    snprintf(wv, sizeof(wv), "%d", c->events);
    proxy = lab_proxy(lab, base, c->events ? fixed : NULL);
    if (!proxy) {
        cJSON_Delete(cj);
        return lab_fail(lab, "kwp proxy did not start");
    }
    snprintf(title, sizeof(title), "window: %s (kwp proxy), re-watch after a disconnect of t",
             c->name);
    t = lab_table_new(lab, c->events ? "fixed" : "dynamic", title, cols, 6);
    cJSON_AddStringToObject(cj, "window", c->name);
    cJSON_AddNumberToObject(cj, "events", c->events);
    rows = cJSON_AddArrayToObject(cj, "rates");
    for (size_t ri = 0; ri < c->n_rates; ri++) {
        double r = c->rates[ri], p[T_MAX] = {0}, rate, computed, measured = -1;
        struct lab_writer *w = lab_writer_start(lab, base, r, OBJECTS);
        uint64_t run_ms = (uint64_t)(c->t[c->n_t - 1] * 1000.0) + 1500, start = lab_now_ms();
        const struct lab_write *log;
        cJSON *rj = cJSON_CreateObject(), *pj;
        size_t n;
        double first_one = -1;

        if (!w) {
            cJSON_Delete(cj);
            cJSON_Delete(rj);
            lab_table_end(t);
            return lab_fail(lab, "the writer did not start");
        }
        while (lab_now_ms() - start < run_ms) {
            lab_progress(lab, "%s, R=%.0f/s: writing (%zu writes)", c->name, r,
                         lab_writer_count(w));
            lab_sleep_ms(200);
        }
        for (int round = 0; round < c->rounds; round++) {
            uint64_t b = 0;

            lab_progress(lab, "%s, R=%.0f/s: probing, round %d of %d", c->name, r, round + 1,
                         c->rounds);
            for (size_t ti = 0; ti < c->n_t; ti++) {
                uint64_t ms = (uint64_t)(c->t[ti] * 1000.0), now = lab_now_ms();

                log = lab_writer_log(w, &n); /* entries never move (lab.h) */
                uint64_t rv = rv_at(log, n, now > ms ? now - ms : 0);

                if (rv && probe(lab_proc_url(proxy), lab_ns(lab), rv, &b)) {
                    p[ti] += 1.0 / c->rounds;
                    if (measured < 0 && b) {
                        /* the boundary's age: the first write after B was held, B not */
                        for (size_t i = 0; i < n; i++) {
                            if (log[i].rv > b) {
                                measured = (double)(now - log[i].at_ms) / 1000.0;
                                break;
                            }
                        }
                    }
                }
            }
            lab_sleep_ms(300);
        }
        lab_writer_stop(w);
        log = lab_writer_log(w, &n);
        rate = achieved_rate(log, n, 3000);
        computed = c->events ? (double)c->events / rate : 75.0;
        for (size_t ti = c->n_t; ti-- > 0;) {
            if (p[ti] >= 1.0) {
                first_one = c->t[ti];
            } else {
                break;
            }
        }
        lab_table_cell(t, "%.0f", r);
        lab_table_cell(t, "%.1f", rate);
        lab_table_cell(t, c->events ? "%.2f" : ">= %.0f", computed);
        if (measured < 0) {
            lab_table_cell(t, "> %.1f", c->t[c->n_t - 1]);
            lab_table_cell(t, "%s", "-");
        } else {
            lab_table_cell(t, "%.2f", measured);
            lab_table_cell(t, "%.1f", 100.0 * (measured - computed) / computed);
        }
        if (first_one < 0) {
            lab_table_cell(t, "%s", "never");
        } else {
            lab_table_cell(t, "%.2f", first_one);
        }
        cJSON_AddNumberToObject(rj, "rate", r);
        cJSON_AddNumberToObject(rj, "achievedRate", rate);
        cJSON_AddNumberToObject(rj, "computedBoundarySeconds", computed);
        if (measured < 0) {
            cJSON_AddNullToObject(rj, "measuredBoundarySeconds");
        } else {
            cJSON_AddNumberToObject(rj, "measuredBoundarySeconds", measured);
        }
        cJSON_AddNumberToObject(rj, "writes", (double)n);
        pj = cJSON_AddArrayToObject(rj, "p410");
        for (size_t ti = 0; ti < c->n_t; ti++) {
            cJSON *cell = cJSON_CreateObject();

            cJSON_AddNumberToObject(cell, "t", c->t[ti]);
            cJSON_AddNumberToObject(cell, "p", p[ti]);
            cJSON_AddItemToArray(pj, cell);
            if (*dat_len < dat_cap) {
                *dat_len += (size_t)snprintf(dat + *dat_len, dat_cap - *dat_len, "%g %zu %g %g\n",
                                             c->t[ti], ri, p[ti], r);
            }
        }
        if (*dat_len < dat_cap) {
            *dat_len += (size_t)snprintf(dat + *dat_len, dat_cap - *dat_len, "\n");
        }
        cJSON_AddItemToArray(rows, rj);
        lab_writer_free(w);
    }
    lab_table_end(t);
    cJSON_AddItemToArray(out, cj);
    lab_proc_stop(proxy);
    return 0;
}

static void grid(struct window_cfg *c, double step, size_t n)
{
    c->n_t = n < T_MAX ? n : T_MAX;
    for (size_t i = 0; i < c->n_t; i++) {
        c->t[i] = step * (double)(i + 1);
    }
}

static int run(struct lab *lab)
{
    struct window_cfg cfgs[2] = {{0}};
    size_t n_cfgs, dat_len = 0, dat_cap = 1 << 16;
    const char *base = lab_server(lab, NULL, NULL);
    char *dat = calloc(1, dat_cap);
    cJSON *out = cJSON_AddArrayToObject(lab_results(lab), "windows");
    const cJSON *rates;
    double worst = 0;
    int n_meas = 0;

    if (!base || !dat) {
        free(dat);
        return base ? lab_fail(lab, "out of memory") : -1;
    }
    if (lab_ns_ensure(lab, base) != 0) {
        free(dat);
        return lab_fail(lab, "cannot create namespace %s on %s", lab_ns(lab), base);
    }
    if (lab_quick(lab)) {
        cfgs[0] = (struct window_cfg){.name = "fixed 200 events",
                                      .events = 200,
                                      .rates = {50, 100, 200, 400},
                                      .n_rates = 4,
                                      .rounds = 2};
        grid(&cfgs[0], 0.5, 12);
        n_cfgs = 1;
    } else {
        cfgs[0] = (struct window_cfg){.name = "fixed 1000 events",
                                      .events = 1000,
                                      .rates = {50, 100, 200, 500},
                                      .n_rates = 4,
                                      .rounds = 3};
        grid(&cfgs[0], 1.0, 25);
        cfgs[1] = (struct window_cfg){.name = "watch cache 75 s, 100..102400 events",
                                      .events = 0,
                                      .rates = {200},
                                      .n_rates = 1,
                                      .rounds = 2};
        grid(&cfgs[1], 10.0, 9);
        n_cfgs = 2;
    }
    for (size_t i = 0; i < n_cfgs; i++) {
        if (run_cfg(lab, base, &cfgs[i], dat, i == 0 ? dat_cap : 0, &dat_len, out) != 0) {
            free(dat);
            return -1;
        }
    }
    {
        /* one row per rate (evenly spaced, labelled with the rate), one column per t */
        char script[2048], tics[512] = "";
        size_t tl = 0;

        for (size_t i = 0; i < cfgs[0].n_rates && tl < sizeof(tics); i++) {
            tl += (size_t)snprintf(tics + tl, sizeof(tics) - tl, "%s\"%g\" %zu", i ? ", " : "",
                                   cfgs[0].rates[i], i);
        }
        snprintf(script, sizeof(script),
                 "set title 'P(re-watch gets 410): disconnect t x write rate R, window of %d "
                 "events (computed boundary %d / R)'\n"
                 "set xlabel 'disconnect t (s)'\nset ylabel 'writes/s R'\nset ytics (%s)\n"
                 "set cblabel 'P(410)'\nset cbrange [0:1]\n"
                 "set palette defined (0 'white', 1 'red')\n"
                 "plot $DAT using 1:2:3 with image notitle, \\\n"
                 "     $DAT using ($4 > 0 ? %d.0 / $4 : 1/0):2 with points pt 7 lc 'black' "
                 "title 'window / R'\n",
                 cfgs[0].events, cfgs[0].events, tics, cfgs[0].events);
        lab_plot(lab, dat, script);
    }
    free(dat);
    rates = cJSON_GetObjectItem(cJSON_GetArrayItem(out, 0), "rates");
    for (const cJSON *r = rates ? rates->child : NULL; r; r = r->next) {
        const cJSON *m = cJSON_GetObjectItem(r, "measuredBoundarySeconds");
        double comp = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "computedBoundarySeconds"));

        if (cJSON_IsNumber(m) && comp > 0) {
            double e = (m->valuedouble - comp) / comp;

            worst = e * e > worst * worst ? e : worst;
            n_meas++;
        }
    }
    {
        char dyn[200] = "";

        if (n_cfgs > 1) {
            const cJSON *d =
                cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(out, 1), "rates"), 0);
            const cJSON *m = cJSON_GetObjectItem(d, "measuredBoundarySeconds");

            if (cJSON_IsNumber(m)) {
                snprintf(dyn, sizeof(dyn),
                         "; with the watch cache's 75 s window at %.0f writes/s the re-watch got "
                         "410 after %.1f s",
                         cJSON_GetNumberValue(cJSON_GetObjectItem(d, "rate")), m->valuedouble);
            } else {
                snprintf(dyn, sizeof(dyn),
                         "; with the watch cache's 75 s window at %.0f writes/s no re-watch "
                         "got 410 for disconnects up to %.0f s (the window grows to hold 75 s)",
                         cJSON_GetNumberValue(cJSON_GetObjectItem(d, "rate")),
                         cfgs[1].t[cfgs[1].n_t - 1]);
            }
        }
        lab_conclude(lab,
                     "with a fixed window of %d events the re-watch gets 410 once the disconnect "
                     "exceeds window/R: measured boundary within %.0f %% of the computed one for "
                     "%d of %zu rates%s",
                     cfgs[0].events, 100.0 * (worst < 0 ? -worst : worst), n_meas, cfgs[0].n_rates,
                     dyn);
    }
    return 0;
}

const struct lab_experiment lab_exp_window = {
    .name = "window",
    .summary = "write rate x disconnect time -> P(re-watch gets 410), fixed and 75 s windows, "
               "measured vs computed boundary, heat map",
    .needs = LAB_NEEDS_API,
    .run = run,
};
