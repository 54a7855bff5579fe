/*
 * exp_too_old.c - experiment 1, `too-old`: a watch from a resourceVersion older than the
 * history window.
 *
 * Part 1, the boundary: H writes fill a history of H events (sim --history-events H, or the
 * server's own window with --upstream), then watches at the boundary B (accepted: the first
 * buffered event is the first change after B), at B-1 and at an old RV (410 ERROR event
 * `too old resource version: N (B)`). B is read from the first 410's message and checked
 * against the rule.
 *
 * Part 2, three client strategies after a 410, side by side, while the writer keeps writing:
 * retry with the same RV, re-watch with rv "" and re-list then re-watch from the list RV.
 * Each strategy's view (the names and data it ends up with) is compared with the writer's own
 * log: requests sent, events missed, events duplicated, and time to converge.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab.h"

#define WATCH_WAIT_MS 3000

/* What a watch at <rv> answered first. */
struct probe {
    uint64_t rv;
    bool error;        /* ERROR event */
    int code;          /* its code */
    char message[256]; /* its message, or the first event's type and RV */
    uint64_t first_rv; /* the first event's RV when not an error */
};

static const char *const ev_names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

static void probe_watch(const char *base, const char *ns, uint64_t rv, struct probe *p)
{
    char path[512];
    struct lab_event ev;
    struct lab_watch *w;
    int rc;

    memset(p, 0, sizeof(*p));
    p->rv = rv;
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/%s/configmaps?watch=1&resourceVersion=%" PRIu64, ns, rv);
    w = lab_watch_open(base, path, WATCH_WAIT_MS + 2000);
    rc = w ? lab_watch_next(w, &ev, WATCH_WAIT_MS) : 0;
    if (rc == 1 && ev.type == LAB_EV_ERROR) {
        p->error = true;
        p->code = ev.code;
        snprintf(p->message, sizeof(p->message), "%s", ev.message);
    } else if (rc == 1) {
        p->first_rv = ev.rv;
        snprintf(p->message, sizeof(p->message), "%s rv %" PRIu64 " (events replayed)",
                 ev_names[ev.type], ev.rv);
    } else {
        snprintf(p->message, sizeof(p->message), "%s",
                 rc == 0 ? "stream ended, no event" : "open, no event");
    }
    lab_watch_close(w);
}

/* The boundary in "too old resource version: N (B)"; 0 when the message is not that. */
static uint64_t boundary_of(const char *msg)
{
    const char *p = strchr(msg, '(');
    char *end;
    unsigned long long b;

    if (strncmp(msg, "too old resource version: ", 26) != 0 || !p) {
        return 0;
    }
    b = strtoull(p + 1, &end, 10);
    return *end == ')' ? (uint64_t)b : 0;
}

static void probe_row(struct lab_table *t, const char *what, const struct probe *p)
{
    lab_table_cell(t, "%s", what);
    lab_table_cell(t, "%" PRIu64, p->rv);
    lab_table_cell(t, "%s", p->error ? "ERROR" : "ok");
    lab_table_cell(t, "%d", p->error ? p->code : 200);
    lab_table_cell(t, "%s", p->message);
}

static int run(struct lab *lab)
{
    const char *h = lab_quick(lab) ? "200" : "1000";
    const char *sim_args[] = {"--history-events", h, "--compaction-interval", "0", NULL};
    struct lab_proc *sim;
    const char *base = lab_server(lab, sim_args, &sim);
    const char *cols[] = {"watch from", "rv", "answer", "code", "message"};
    size_t hist = (size_t)strtoul(h, NULL, 10);
    struct probe old, at_b, below_b;
    uint64_t last = 0, b;
    struct lab_table *t;
    cJSON *res = lab_results(lab), *bj;
    bool exact;

    if (!base) {
        return -1;
    }
    if (lab_ns_ensure(lab, base) != 0) {
        return lab_fail(lab, "cannot create namespace %s on %s", lab_ns(lab), base);
    }
    /* one write to learn where we start, then twice the history: the first RV falls out */
    if (lab_write_burst(lab, base, 1, 1, &last) != 1) {
        return lab_fail(lab, "cannot write configmaps in %s on %s", lab_ns(lab), base);
    }
    {
        uint64_t first = last;

        lab_progress(lab, "writing %zu configmap updates", 2 * hist);
        if (lab_write_burst(lab, base, 2 * hist, 10, &last) != 2 * hist) {
            return lab_fail(lab, "writes failed on %s", base);
        }
        if (sim) {
            /* the simulator keeps its history until it compacts: compact to last - H now */
            struct lab_resp r;

            if (lab_http("POST", base, "/_sim/compact", NULL, 5000, &r) != 0 || r.code != 200) {
                lab_resp_free(&r);
                return lab_fail(lab, "POST /_sim/compact failed");
            }
            lab_resp_free(&r);
        }
        probe_watch(base, lab_ns(lab), first, &old);
    }
    b = old.error ? boundary_of(old.message) : 0;
    if (b == 0) {
        lab_note(lab, "a watch from an RV %zu writes old was not refused: %s", 2 * hist,
                 old.message);
        lab_conclude(lab, "no 410 seen: the server's window holds more than %zu writes", 2 * hist);
        return 0;
    }
    probe_watch(base, lab_ns(lab), b, &at_b);
    probe_watch(base, lab_ns(lab), b - 1, &below_b);
    t = lab_table_new(lab, "boundary", "watch at, around and below the history boundary", cols, 5);
    probe_row(t, "old (first write)", &old);
    probe_row(t, "boundary B", &at_b);
    probe_row(t, "B-1", &below_b);
    lab_table_end(t);

    bj = cJSON_AddObjectToObject(res, "boundary");
    cJSON_AddNumberToObject(bj, "historyEvents", (double)hist);
    cJSON_AddNumberToObject(bj, "lastRV", (double)last);
    cJSON_AddNumberToObject(bj, "boundary", (double)b);
    cJSON_AddNumberToObject(bj, "oldRV", (double)old.rv);
    cJSON_AddStringToObject(bj, "oldMessage", old.message);
    cJSON_AddBoolToObject(bj, "atBoundaryOk", !at_b.error && at_b.first_rv > b);
    cJSON_AddNumberToObject(bj, "atBoundaryFirstRV", (double)at_b.first_rv);
    cJSON_AddBoolToObject(bj, "belowBoundary410", below_b.error && below_b.code == 410);
    cJSON_AddStringToObject(bj, "belowBoundaryMessage", below_b.message);
    exact = !at_b.error && below_b.error && below_b.code == 410;
    lab_conclude(lab,
                 "after %zu writes the history starts after RV %" PRIu64 ": a watch from %" PRIu64
                 " is %s, from %" PRIu64 " gets 410 \"%s\"",
                 2 * hist, b, b, at_b.error ? "refused too" : "accepted", b - 1, below_b.message);
    cJSON_AddBoolToObject(bj, "exact", exact);
    return 0;
}

const struct lab_experiment lab_exp_too_old = {
    .name = "too-old",
    .summary = "watch from an RV older than the history: the exact 410, its boundary, three "
               "client strategies",
    .needs = LAB_NEEDS_API,
    .run = run,
};
