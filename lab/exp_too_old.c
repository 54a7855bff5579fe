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

/*
 * What the server says of its own history (GET /debug/resources, kwp sim and kwp proxy; a real
 * apiserver has no such endpoint): configmaps' boundary, oldest and newest RV, capacity and
 * events held, next to the boundary the 410 named, into <bj>.debugResources.
 */
static void debug_boundary(struct lab *lab, const char *base, uint64_t b, cJSON *bj)
{
    long code = 0;
    cJSON *doc = lab_get_json(base, "/debug/resources", 10000, &code);
    cJSON *rs = cJSON_GetObjectItemCaseSensitive(doc, "resources");
    const cJSON *r;
    cJSON *dj;

    if (!cJSON_IsArray(rs)) {
        lab_note(lab, "GET /debug/resources: HTTP %ld, no history figures from the server", code);
        cJSON_Delete(doc);
        return;
    }
    cJSON_ArrayForEach(r, rs)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(r, "resource");
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(r, "history");
        const cJSON *hb = cJSON_GetObjectItemCaseSensitive(h, "boundary");

        if (!cJSON_IsString(name) || strcmp(name->valuestring, "configmaps") != 0 ||
            !cJSON_IsNumber(hb)) {
            continue;
        }
        dj = cJSON_AddObjectToObject(bj, "debugResources");
        cJSON_AddItemToObject(dj, "history", cJSON_Duplicate(h, true));
        cJSON_AddBoolToObject(dj, "boundaryMatches", (uint64_t)hb->valuedouble == b);
        lab_note(lab,
                 "/debug/resources: configmaps' history boundary %.0f (the 410 said %" PRIu64 ")",
                 hb->valuedouble, b);
        break;
    }
    cJSON_Delete(doc);
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

/* ---- part 2: three client strategies -------------------------------------------------- */

#define STORE_MAX 256
#define SEED_OBJECTS 20
#define QUIET_MS 500

/* A client's cache: object name -> RV. */
struct store {
    char name[STORE_MAX][128];
    uint64_t rv[STORE_MAX];
    size_t n;
};

static long store_find(const struct store *st, const char *name)
{
    for (size_t i = 0; i < st->n; i++) {
        if (strcmp(st->name[i], name) == 0) {
            return (long)i;
        }
    }
    return -1;
}

/* Applies one event; true when it told the store nothing new (same object at the same RV). */
static bool store_apply(struct store *st, const struct lab_event *ev)
{
    long i = store_find(st, ev->name);

    if (ev->type == LAB_EV_DELETED) {
        if (i >= 0) {
            st->n--;
            memmove(st->name[i], st->name[st->n], sizeof(st->name[0]));
            st->rv[i] = st->rv[st->n];
        }
        return i < 0;
    }
    if (i >= 0) {
        bool dup = st->rv[i] == ev->rv;

        st->rv[i] = ev->rv;
        return dup;
    }
    if (st->n < STORE_MAX) {
        snprintf(st->name[st->n], sizeof(st->name[0]), "%s", ev->name);
        st->rv[st->n++] = ev->rv;
    }
    return false;
}

/* LIST into <st> (replacing it); the list RV, 0 on failure. */
static uint64_t store_list(struct store *st, const char *base, const char *ns)
{
    char path[256];
    cJSON *j, *item;
    uint64_t rv;

    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps", ns);
    j = lab_get_json(base, path, 10000, NULL);
    rv = lab_json_rv(j);
    st->n = 0;
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(j, "items"))
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(item, "metadata"), "name");

        if (cJSON_IsString(name) && st->n < STORE_MAX) {
            snprintf(st->name[st->n], sizeof(st->name[0]), "%s", name->valuestring);
            st->rv[st->n++] = lab_json_rv(item);
        }
    }
    cJSON_Delete(j);
    return rv;
}

/* Objects that differ between <a> and <truth>: missing, extra (deleted upstream), other RV.
 * *extra gets the ones <a> holds that <truth> does not. */
static size_t store_diff(const struct store *a, const struct store *truth, size_t *extra)
{
    size_t d = 0;

    *extra = 0;
    for (size_t i = 0; i < truth->n; i++) {
        long j = store_find(a, truth->name[i]);

        d += j < 0 || a->rv[j] != truth->rv[i];
    }
    for (size_t i = 0; i < a->n; i++) {
        if (store_find(truth, a->name[i]) < 0) {
            (*extra)++;
            d++;
        }
    }
    return d;
}

/* One write of the gap, as the writer logged it. */
struct gap_write {
    char name[32];
    uint64_t rv;
    bool deleted;
    bool seen; /* per strategy: the client got an event for it */
};

struct outcome {
    const char *name;
    int requests;
    int events;
    int duplicates;
    size_t missed; /* gap writes the client never got an event for */
    size_t wrong;  /* objects that differ from the server at the end */
    size_t kept_deleted;
    bool converged;
    uint64_t ms; /* to converge, or the time spent */
    int errors410;
};

/* Reads a watch until QUIET_MS without an event or the stream ends; applies events. Returns
 * the milliseconds spent waiting out the quiet period (not part of converging). */
static uint64_t drain(struct lab_watch *w, struct store *st, struct gap_write *gap, size_t n_gap,
                      struct outcome *o)
{
    struct lab_event ev;
    int rc;

    while ((rc = lab_watch_next(w, &ev, QUIET_MS)) == 1) {
        if (ev.type == LAB_EV_ERROR) {
            o->errors410 += ev.code == 410;
            continue;
        }
        if (ev.type == LAB_EV_BOOKMARK) {
            continue;
        }
        o->events++;
        o->duplicates += store_apply(st, &ev);
        for (size_t i = 0; i < n_gap; i++) {
            if (strcmp(gap[i].name, ev.name) == 0 &&
                (gap[i].deleted ? ev.type == LAB_EV_DELETED : gap[i].rv == ev.rv)) {
                gap[i].seen = true;
            }
        }
    }
    return rc == -1 ? QUIET_MS : 0;
}

enum strategy { SAME_RV, RV_EMPTY, RELIST };

static void run_strategy(struct lab *lab, const char *base, enum strategy s, uint64_t list_rv,
                         const struct store *seed, const struct store *truth, struct gap_write *gap,
                         size_t n_gap, int retries, struct outcome *o)
{
    char path[512];
    struct store st = *seed;
    uint64_t t0 = lab_now_ms(), quiet = 0;
    const char *ns = lab_ns(lab);
    for (size_t i = 0; i < n_gap; i++) {
        gap[i].seen = false;
    }
    if (s == SAME_RV) {
        /* what a client that ignores the 410 does: the same RV again, with a short pause */
        for (int i = 0; i < retries; i++) {
            struct lab_watch *w;

            snprintf(path, sizeof(path),
                     "/api/v1/namespaces/%s/configmaps?watch=1&resourceVersion=%" PRIu64, ns,
                     list_rv);
            w = lab_watch_open(base, path, 5000);
            o->requests++;
            if (w) {
                quiet += drain(w, &st, gap, n_gap, o);
            }
            lab_watch_close(w);
            lab_sleep_ms(100);
        }
    } else {
        struct lab_watch *w;
        uint64_t rv = 0;

        if (s == RELIST) {
            rv = store_list(&st, base, ns);
            o->requests++;
        }
        if (s == RV_EMPTY) {
            snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps?watch=1", ns);
        } else {
            snprintf(path, sizeof(path),
                     "/api/v1/namespaces/%s/configmaps?watch=1&resourceVersion=%" PRIu64, ns, rv);
        }
        w = lab_watch_open(base, path, 5000);
        o->requests++;
        if (w) {
            quiet += drain(w, &st, gap, n_gap, o);
        }
        lab_watch_close(w);
    }
    o->wrong = store_diff(&st, truth, &o->kept_deleted);
    o->converged = o->wrong == 0;
    /* the quiet period that ends each read is not part of converging */
    o->ms = lab_now_ms() - t0;
    o->ms = o->ms > quiet ? o->ms - quiet : 0;
    o->missed = 0;
    for (size_t i = 0; i < n_gap; i++) {
        o->missed += !gap[i].seen;
    }
}

/* Seeds objects, lists them (the client's state), makes the gap writes (updates past the
 * history, deletes, creates), compacts, and runs each strategy from the stale list RV. */
static int strategies(struct lab *lab, const char *base, bool sim, size_t hist)
{
    static const char *const names[] = {"retry same RV", "re-watch rv \"\"", "re-list, re-watch"};
    const char *cols[] = {"strategy",     "requests",   "events", "duplicates",
                          "410s",         "gap writes", "missed", "wrong objs",
                          "deleted kept", "converged",  "ms"};
    size_t n_gap = 0, cap = 3 * hist + 2 * SEED_OBJECTS;
    struct gap_write *gap = calloc(cap, sizeof(*gap));
    struct store seed = {0}, truth = {0};
    struct outcome o[3];
    struct lab_table *t;
    uint64_t list_rv;
    cJSON *arr;

    if (!gap) {
        return lab_fail(lab, "out of memory");
    }
    for (int i = 0; i < SEED_OBJECTS; i++) {
        char name[32];

        snprintf(name, sizeof(name), "lab-s-%d", i);
        if (!lab_write(lab, base, "POST", name, 0)) {
            free(gap);
            return lab_fail(lab, "cannot create %s", name);
        }
    }
    /* the strategies compare only the lab-s-* objects: the client's list is of everything in
     * the namespace, so the boundary part's objects are part of its state too */
    list_rv = store_list(&seed, base, lab_ns(lab));
    lab_progress(lab, "gap: %zu updates, deletes and creates", 2 * hist);
    for (size_t i = 0; i < 2 * hist && n_gap < cap; i++) {
        struct gap_write *g = &gap[n_gap];

        snprintf(g->name, sizeof(g->name), "lab-s-%zu", i % (SEED_OBJECTS / 2));
        if ((g->rv = lab_write(lab, base, "PUT", g->name, i + 1))) {
            n_gap++;
        }
    }
    for (int i = SEED_OBJECTS / 2; i < SEED_OBJECTS && n_gap + 2 <= cap; i++) {
        struct gap_write *g = &gap[n_gap];

        snprintf(g->name, sizeof(g->name), "lab-s-%d", i);
        g->deleted = true;
        n_gap += lab_write(lab, base, "DELETE", g->name, 0) != 0;
        g = &gap[n_gap];
        snprintf(g->name, sizeof(g->name), "lab-n-%d", i);
        if ((g->rv = lab_write(lab, base, "POST", g->name, 0))) {
            n_gap++;
        }
    }
    if (sim) {
        struct lab_resp r;

        lab_http("POST", base, "/_sim/compact", NULL, 5000, &r);
        lab_resp_free(&r);
    }
    store_list(&truth, base, lab_ns(lab));
    memset(o, 0, sizeof(o));
    for (int s = 0; s < 3; s++) {
        lab_progress(lab, "strategy: %s", names[s]);
        o[s].name = names[s];
        run_strategy(lab, base, (enum strategy)s, list_rv, &seed, &truth, gap, n_gap,
                     lab_quick(lab) ? 5 : 20, &o[s]);
    }
    t = lab_table_new(lab, "strategies",
                      "after a 410: three client strategies (gap writes compared with the "
                      "writer's log)",
                      cols, sizeof(cols) / sizeof(cols[0]));
    arr = cJSON_AddArrayToObject(lab_results(lab), "strategies");
    for (int s = 0; s < 3; s++) {
        cJSON *j = cJSON_CreateObject();

        lab_table_cell(t, "%s", o[s].name);
        lab_table_cell(t, "%d", o[s].requests);
        lab_table_cell(t, "%d", o[s].events);
        lab_table_cell(t, "%d", o[s].duplicates);
        lab_table_cell(t, "%d", o[s].errors410);
        lab_table_cell(t, "%zu", n_gap);
        lab_table_cell(t, "%zu", o[s].missed);
        lab_table_cell(t, "%zu", o[s].wrong);
        lab_table_cell(t, "%zu", o[s].kept_deleted);
        lab_table_cell(t, "%s", o[s].converged ? "yes" : "no");
        lab_table_cell(t, "%" PRIu64, o[s].ms);
        cJSON_AddStringToObject(j, "strategy", o[s].name);
        cJSON_AddNumberToObject(j, "requests", o[s].requests);
        cJSON_AddNumberToObject(j, "events", o[s].events);
        cJSON_AddNumberToObject(j, "duplicates", o[s].duplicates);
        cJSON_AddNumberToObject(j, "errors410", o[s].errors410);
        cJSON_AddNumberToObject(j, "gapWrites", (double)n_gap);
        cJSON_AddNumberToObject(j, "missedWrites", (double)o[s].missed);
        cJSON_AddNumberToObject(j, "wrongObjects", (double)o[s].wrong);
        cJSON_AddNumberToObject(j, "deletedKept", (double)o[s].kept_deleted);
        cJSON_AddBoolToObject(j, "converged", o[s].converged);
        cJSON_AddNumberToObject(j, "ms", (double)o[s].ms);
        cJSON_AddItemToArray(arr, j);
    }
    lab_table_end(t);
    free(gap);
    return 0;
}

static int num(const cJSON *o, const char *key)
{
    return (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static const char *conv(const cJSON *o)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "converged")) ? "converges"
                                                                          : "does not converge";
}

static void conclude(struct lab *lab, uint64_t b, const struct probe *at_b,
                     const struct probe *below_b)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(lab_results(lab), "strategies");
    const cJSON *same = cJSON_GetArrayItem(st, 0), *empty = cJSON_GetArrayItem(st, 1);
    const cJSON *relist = cJSON_GetArrayItem(st, 2);

    lab_conclude(lab,
                 "a watch from the boundary %" PRIu64 " is %s, from %" PRIu64
                 " gets 410 \"%s\"; after a 410, retrying the same RV %s (%d requests, %d "
                 "410s), re-watching with rv \"\" %s (%d objects wrong, %d deleted ones kept, "
                 "%d of %d gap writes missed), re-listing then re-watching %s in %d requests",
                 b, at_b->error ? "refused too" : "accepted", b - 1, below_b->message, conv(same),
                 num(same, "requests"), num(same, "errors410"), conv(empty),
                 num(empty, "wrongObjects"), num(empty, "deletedKept"), num(empty, "missedWrites"),
                 num(empty, "gapWrites"), conv(relist), num(relist, "requests"));
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
    cJSON_AddBoolToObject(bj, "exact", exact);
    debug_boundary(lab, base, b, bj);
    if (strategies(lab, base, sim != NULL, hist) != 0) {
        return -1;
    }
    conclude(lab, b, &at_b, &below_b);
    return 0;
}

const struct lab_experiment lab_exp_too_old = {
    .name = "too-old",
    .summary = "watch from an RV older than the history: the exact 410, its boundary, three "
               "client strategies",
    .needs = LAB_NEEDS_API,
    .run = run,
};
