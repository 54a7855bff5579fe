/*
 * exp_too_large.c - experiment 2, `too-large`: LIST and WATCH at an RV ahead of the cache.
 *
 * Part 1: requests at the current RV + 1000, directly on the server and through kwp proxy with
 * --too-large-rv forward and local: LIST (the wait, then 504 `Too large resource version`),
 * a watch-list (sendInitialEvents=true: the wait, then an ERROR event 504) and a plain watch
 * (accepted, silent until an event newer than the RV). Each answer's code and measured wait.
 *
 * Part 2, ping-pong: two proxy replicas of one server, A in front of it, B behind a tier C that
 * is frozen (SIGSTOP) once B is in sync, so B stays behind while writes go on. A client
 * alternating between them (as behind a load balancer) sees the RV of its rv=0 LISTs jump
 * back and forth, and B answers a LIST at the RV it got from A with the 504 after the wait.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "lab/lab.h"

#define AHEAD 1000
#define ASK_TIMEOUT_MS 15000

struct ask {
    long code;     /* HTTP status, or the ERROR event's code for watches */
    double wait_s; /* until the answer (for a silent watch: how long it stayed silent) */
    char what[320];
};

static void ask_list(const char *base, const char *query, struct ask *a)
{
    char path[512];
    struct lab_resp r;
    cJSON *j, *msg;

    snprintf(path, sizeof(path), "/api/v1/configmaps?%s", query);
    lab_http("GET", base, path, NULL, ASK_TIMEOUT_MS, &r);
    a->code = r.code;
    a->wait_s = r.seconds;
    j = cJSON_ParseWithLength(r.body, r.len);
    msg = cJSON_GetObjectItemCaseSensitive(j, "message");
    if (cJSON_IsString(msg)) {
        snprintf(a->what, sizeof(a->what), "%s%s%s", msg->valuestring,
                 r.retry_after[0] ? "; Retry-After: " : "", r.retry_after);
    } else {
        snprintf(a->what, sizeof(a->what), "list at RV %" PRIu64, lab_json_rv(j));
    }
    cJSON_Delete(j);
    lab_resp_free(&r);
}

/* A watch: its first event within <silent_ms>, or silence. */
static void ask_watch(const char *base, const char *query, long silent_ms, struct ask *a)
{
    char path[512];
    struct lab_event ev;
    uint64_t t0 = lab_now_ms();
    struct lab_watch *w;
    int rc;

    snprintf(path, sizeof(path), "/api/v1/configmaps?watch=1&%s", query);
    w = lab_watch_open(base, path, silent_ms + 5000);
    rc = w ? lab_watch_next(w, &ev, silent_ms) : 0;
    a->wait_s = (double)(lab_now_ms() - t0) / 1000.0;
    a->code = w ? lab_watch_status(w) : 0;
    if (rc == 1 && ev.type == LAB_EV_ERROR) {
        a->code = ev.code;
        snprintf(a->what, sizeof(a->what), "ERROR event: %s", ev.message);
    } else if (rc == 1) {
        snprintf(a->what, sizeof(a->what), "event rv %" PRIu64, ev.rv);
    } else if (rc == -1) {
        a->code = 200;
        snprintf(a->what, sizeof(a->what), "accepted, silent for %.1f s", a->wait_s);
    } else {
        snprintf(a->what, sizeof(a->what), "stream ended without an event");
    }
    lab_watch_close(w);
}

static void row(struct lab *lab, struct lab_table *t, cJSON *arr, const char *via, const char *req,
                const struct ask *a)
{
    cJSON *j = cJSON_CreateObject();

    lab_table_cell(t, "%s", via);
    lab_table_cell(t, "%s", req);
    lab_table_cell(t, "%ld", a->code);
    lab_table_cell(t, "%.2f", a->wait_s);
    lab_table_cell(t, "%s", a->what);
    cJSON_AddStringToObject(j, "via", via);
    cJSON_AddStringToObject(j, "request", req);
    cJSON_AddNumberToObject(j, "code", (double)a->code);
    cJSON_AddNumberToObject(j, "waitSeconds", a->wait_s);
    cJSON_AddStringToObject(j, "answer", a->what);
    cJSON_AddItemToArray(arr, j);
}

/* The RV of a LIST rv=0 at <base>. */
static uint64_t list0_rv(const char *base, const char *ns)
{
    char path[256];
    cJSON *j;
    uint64_t rv;

    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps?resourceVersion=0", ns);
    j = lab_get_json(base, path, 10000, NULL);
    rv = lab_json_rv(j);
    cJSON_Delete(j);
    return rv;
}

/* Waits (bounded) until <base>'s rv=0 LIST has reached <rv>. */
static bool wait_rv(const char *base, const char *ns, uint64_t rv)
{
    for (uint64_t end = lab_now_ms() + 10000; lab_now_ms() < end; lab_sleep_ms(20)) {
        if (list0_rv(base, ns) >= rv) {
            return true;
        }
    }
    return false;
}

static int pingpong(struct lab *lab, const char *base)
{
    const char *local[] = {"--too-large-rv", "local", NULL};
    struct lab_proc *a = lab_proxy(lab, base, NULL);
    struct lab_proc *c = lab_proxy(lab, base, NULL);
    struct lab_proc *b = c ? lab_proxy(lab, lab_proc_url(c), local) : NULL;
    const char *cols[] = {"step", "replica", "LIST rv=0 answered RV", "went back"};
    const char *ns = lab_ns(lab);
    int rounds = lab_quick(lab) ? 3 : 10, back = 0;
    uint64_t rv1 = 0, rv2 = 0, prev = 0;
    struct lab_table *t;
    char q[128];
    struct ask ask;
    cJSON *pj, *steps;

    if (!a || !b) {
        return lab_fail(lab, "the proxies did not start");
    }
    lab_write_burst(lab, base, 10, 5, &rv1);
    if (!wait_rv(lab_proc_url(a), ns, rv1) || !wait_rv(lab_proc_url(b), ns, rv1)) {
        return lab_fail(lab, "the replicas did not reach RV %" PRIu64, rv1);
    }
    lab_proc_signal(c, SIGSTOP); /* B's upstream is frozen: B stays at rv1 */
    lab_write_burst(lab, base, 10, 5, &rv2);
    if (!wait_rv(lab_proc_url(a), ns, rv2)) {
        lab_proc_signal(c, SIGCONT);
        return lab_fail(lab, "replica A did not reach RV %" PRIu64, rv2);
    }
    t = lab_table_new(lab, "pingpong",
                      "ping-pong: a client alternating between replica A (current) and B (behind)",
                      cols, 4);
    pj = cJSON_AddObjectToObject(lab_results(lab), "pingpong");
    steps = cJSON_AddArrayToObject(pj, "steps");
    for (int i = 0; i < 2 * rounds; i++) {
        const struct lab_proc *p = i % 2 ? b : a;
        uint64_t rv = list0_rv(lab_proc_url(p), ns);
        cJSON *s = cJSON_CreateObject();

        back += i > 0 && rv < prev;
        lab_table_cell(t, "%d", i + 1);
        lab_table_cell(t, "%s", i % 2 ? "B" : "A");
        lab_table_cell(t, "%" PRIu64, rv);
        lab_table_cell(t, "%s", i > 0 && rv < prev ? "yes" : "");
        cJSON_AddStringToObject(s, "replica", i % 2 ? "B" : "A");
        cJSON_AddNumberToObject(s, "rv", (double)rv);
        cJSON_AddItemToArray(steps, s);
        prev = rv;
    }
    lab_table_end(t);
    /* the client's next LIST at the RV it got from A, on B: the wait, then 504 */
    snprintf(q, sizeof(q), "resourceVersion=%" PRIu64, rv2);
    ask_list(lab_proc_url(b), q, &ask);
    lab_proc_signal(c, SIGCONT);
    cJSON_AddNumberToObject(pj, "rvA", (double)rv2);
    cJSON_AddNumberToObject(pj, "rvB", (double)rv1);
    cJSON_AddNumberToObject(pj, "wentBack", back);
    cJSON_AddNumberToObject(pj, "listAtRvAOnBCode", (double)ask.code);
    cJSON_AddNumberToObject(pj, "listAtRvAOnBWaitSeconds", ask.wait_s);
    cJSON_AddStringToObject(pj, "listAtRvAOnB", ask.what);
    lab_note(lab, "LIST rv=%" PRIu64 " (A's RV) on B: HTTP %ld after %.2f s: %s", rv2, ask.code,
             ask.wait_s, ask.what);
    return 0;
}

static int run(struct lab *lab)
{
    const char *fwd[] = {"--too-large-rv", "forward", NULL};
    const char *loc[] = {"--too-large-rv", "local", NULL};
    const char *cols[] = {"via", "request", "code", "wait s", "answer"};
    const char *base = lab_server(lab, NULL, NULL);
    struct lab_proc *pf, *pl;
    struct lab_table *t;
    uint64_t cur = 0;
    struct ask list_direct, a;
    cJSON *arr;
    char q[256];

    if (!base) {
        return -1;
    }
    if (lab_ns_ensure(lab, base) != 0 || lab_write_burst(lab, base, 1, 1, &cur) != 1) {
        return lab_fail(lab, "cannot write in namespace %s on %s", lab_ns(lab), base);
    }
    pf = lab_proxy(lab, base, fwd);
    pl = lab_proxy(lab, base, loc);
    if (!pf || !pl) {
        return lab_fail(lab, "kwp proxy did not start");
    }
    if (!wait_rv(lab_proc_url(pf), lab_ns(lab), cur) ||
        !wait_rv(lab_proc_url(pl), lab_ns(lab), cur)) {
        return lab_fail(lab, "the proxies did not reach RV %" PRIu64, cur);
    }
    t = lab_table_new(lab, "ahead", "requests at an RV 1000 ahead of the server", cols, 5);
    arr = cJSON_AddArrayToObject(lab_results(lab), "ahead");
    cJSON_AddNumberToObject(lab_results(lab), "currentRV", (double)cur);
    {
        const char *vias[] = {"server", "kwp forward", "kwp local"};
        const char *urls[] = {base, lab_proc_url(pf), lab_proc_url(pl)};

        for (int i = 0; i < 3; i++) {
            lab_progress(lab, "%s: LIST ahead", vias[i]);
            snprintf(q, sizeof(q), "resourceVersion=%" PRIu64, cur + AHEAD);
            ask_list(urls[i], q, &a);
            if (i == 0) {
                list_direct = a;
            }
            row(lab, t, arr, vias[i], "LIST rv=N", &a);
            lab_progress(lab, "%s: watch-list ahead", vias[i]);
            snprintf(q, sizeof(q),
                     "resourceVersion=%" PRIu64
                     "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                     "&allowWatchBookmarks=true",
                     cur + AHEAD);
            ask_watch(urls[i], q, 8000, &a);
            row(lab, t, arr, vias[i], "WATCH rv=N sendInitialEvents", &a);
            lab_progress(lab, "%s: watch ahead", vias[i]);
            snprintf(q, sizeof(q), "resourceVersion=%" PRIu64, cur + AHEAD);
            ask_watch(urls[i], q, lab_quick(lab) ? 1000 : 5000, &a);
            row(lab, t, arr, vias[i], "WATCH rv=N", &a);
        }
    }
    lab_table_end(t);
    {
        /* the wait per request kind (rows) and path (columns), from the rows just recorded */
        const char *kinds[] = {"LIST", "watch-list", "watch"};
        char data[512];
        size_t dl = 0;

        for (int r = 0; r < 3 && dl < sizeof(data); r++) {
            dl += (size_t)snprintf(data + dl, sizeof(data) - dl, "%s", kinds[r]);
            for (int i = 0; i < 3 && dl < sizeof(data); i++) {
                const cJSON *j = cJSON_GetArrayItem(arr, i * 3 + r);
                dl += (size_t)snprintf(
                    data + dl, sizeof(data) - dl, " %.3f",
                    cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(j, "waitSeconds")));
            }
            if (dl < sizeof(data)) {
                dl += (size_t)snprintf(data + dl, sizeof(data) - dl, "\n");
            }
        }
        lab_plot(
            lab, data,
            "set title 'requests at an RV ahead of the server: seconds until the answer "
            "(a watch: how long it stayed silent)'\n"
            "set style data histograms\nset style histogram clustered gap 1\n"
            "set style fill solid 0.7 border -1\nset grid ytics\nset key below\nset yrange [0:*]\n"
            "set ylabel 'seconds'\n"
            "plot $DAT using 2:xtic(1) title 'server', '' using 3 title 'kwp forward', "
            "'' using 4 title 'kwp local'\n");
    }
    lab_proc_stop(pf);
    lab_proc_stop(pl);
    if (pingpong(lab, base) != 0) {
        return -1;
    }
    {
        const cJSON *pj = cJSON_GetObjectItemCaseSensitive(lab_results(lab), "pingpong");

        lab_conclude(
            lab,
            "a LIST at an RV ahead of the server waits %.1f s and gets %ld (\"%s\"); a plain "
            "watch there is accepted and silent; through kwp the same with --too-large-rv "
            "local, forwarded with forward; a client alternating between two replicas %d RVs "
            "apart saw its RV go back %d times and got %d after %.1f s asking the lagging one "
            "for the RV it had",
            list_direct.wait_s, list_direct.code, list_direct.what,
            (int)(cJSON_GetNumberValue(cJSON_GetObjectItem(pj, "rvA")) -
                  cJSON_GetNumberValue(cJSON_GetObjectItem(pj, "rvB"))),
            (int)cJSON_GetNumberValue(cJSON_GetObjectItem(pj, "wentBack")),
            (int)cJSON_GetNumberValue(cJSON_GetObjectItem(pj, "listAtRvAOnBCode")),
            cJSON_GetNumberValue(cJSON_GetObjectItem(pj, "listAtRvAOnBWaitSeconds")));
    }
    return 0;
}

const struct lab_experiment lab_exp_too_large = {
    .name = "too-large",
    .summary = "LIST/WATCH at an RV ahead of the cache: the 3 s wait and the 504, forward vs "
               "local, two replicas ping-pong",
    .needs = LAB_NEEDS_API,
    .run = run,
};
