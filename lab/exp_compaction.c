/*
 * exp_compaction.c - experiment 8, `compaction`: etcd compaction (the simulator's
 * --compaction-interval, 5 minutes by default; seconds here) against Exact and paged
 * LISTs. At RV R0 (after 30 configmaps), an Exact LIST at R0 and a first page (limit 10) are
 * answered; then more writes than the history keeps, and the simulator's own compaction
 * timer runs. Measured: how long after the writes the Exact LIST at R0 turns into 410 (the
 * compaction interval at work), the exact 410 bodies of the Exact LIST and of the continue
 * LIST, the fresh continue token the latter carries and what following it gives (the
 * inconsistent remainder: objects newer than R0). The same two requests through kwp proxy.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab.h"

#define N_OBJECTS 30
#define PAGE 10

struct answer {
    long code;
    char message[640];
    char cont[512];   /* metadata.continue */
    int items, newer; /* items, and items with an RV above R0 */
};

static void get(const char *base, const char *path, uint64_t r0, struct answer *a)
{
    long code = 0;
    cJSON *j = lab_get_json(base, path, 10000, &code);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "metadata");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "continue");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(j, "message");
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(j, "items"), *it;

    memset(a, 0, sizeof(*a));
    a->code = code;
    if (cJSON_IsString(msg)) {
        snprintf(a->message, sizeof(a->message), "%s", msg->valuestring);
    }
    if (cJSON_IsString(c)) {
        snprintf(a->cont, sizeof(a->cont), "%s", c->valuestring);
    }
    cJSON_ArrayForEach(it, items)
    {
        a->items++;
        a->newer += lab_json_rv(it) > r0;
    }
    cJSON_Delete(j);
}

static void row(struct lab_table *t, cJSON *arr, const char *path, const char *req,
                const struct answer *before, const struct answer *after)
{
    cJSON *j = cJSON_CreateObject();

    lab_table_cell(t, "%s", path);
    lab_table_cell(t, "%s", req);
    lab_table_cell(t, "%ld", before->code);
    lab_table_cell(t, "%ld", after->code);
    if (after->code == 200) {
        lab_table_cell(t, "%d items", after->items);
    } else {
        lab_table_cell(t, "%.60s%s", after->message, strlen(after->message) > 60 ? "..." : "");
    }
    lab_table_cell(t, "%s", after->cont[0] ? "yes" : "no");
    cJSON_AddStringToObject(j, "path", path);
    cJSON_AddStringToObject(j, "request", req);
    cJSON_AddNumberToObject(j, "codeBefore", (double)before->code);
    cJSON_AddNumberToObject(j, "codeAfter", (double)after->code);
    cJSON_AddStringToObject(j, "messageAfter", after->message);
    cJSON_AddStringToObject(j, "continueAfter", after->cont);
    cJSON_AddNumberToObject(j, "itemsAfter", after->items);
    cJSON_AddNumberToObject(j, "itemsNewerThanR0", after->newer);
    cJSON_AddItemToArray(arr, j);
}

static int run(struct lab *lab)
{
    const char *interval = lab_quick(lab) ? "2s" : "10s";
    const char *sim_args[] = {"--compaction-interval", interval, "--history-events", "50", NULL};
    const char *cols[] = {"path",     "request", "before", "after", "message after compaction",
                          "new token"};
    struct lab_proc *sim_p, *proxy;
    const char *sim = lab_server(lab, sim_args, &sim_p);
    char coll[200], path[1200], exact[300], data[8192];
    struct answer e_before, e_after, p1, c_after, follow, k_e_before, k_e_after, k_p1, k_c_after;
    uint64_t r0 = 0, t_writes, waited_ms = 0, deadline, interval_ms;
    struct lab_table *t;
    cJSON *res = lab_results(lab), *arr;
    size_t dl = 0;
    cJSON *list;

    if (!sim) {
        return -1;
    }
    interval_ms = lab_quick(lab) ? 2000 : 10000;
    if (lab_ns_ensure(lab, sim) != 0) {
        return lab_fail(lab, "cannot create namespace %s", lab_ns(lab));
    }
    if (lab_write_burst(lab, sim, N_OBJECTS, N_OBJECTS, NULL) != N_OBJECTS) {
        return lab_fail(lab, "writes failed");
    }
    proxy = lab_proxy(lab, sim, NULL);
    if (!proxy) {
        return lab_fail(lab, "kwp proxy did not start");
    }
    snprintf(coll, sizeof(coll), "/api/v1/namespaces/%s/configmaps", lab_ns(lab));
    list = lab_get_json(sim, coll, 10000, NULL);
    r0 = lab_json_rv(list);
    cJSON_Delete(list);
    if (!r0) {
        return lab_fail(lab, "LIST gave no resourceVersion");
    }
    lab_sleep_ms(500); /* the proxy has caught up with R0 */
    snprintf(exact, sizeof(exact), "%s?resourceVersion=%" PRIu64 "&resourceVersionMatch=Exact",
             coll, r0);
    get(sim, exact, r0, &e_before);
    get(lab_proc_url(proxy), exact, r0, &k_e_before);
    snprintf(path, sizeof(path), "%s?limit=%d", coll, PAGE);
    get(sim, path, r0, &p1);
    get(lab_proc_url(proxy), path, r0, &k_p1);
    if (!p1.cont[0]) {
        return lab_fail(lab, "the first page (limit %d) carried no continue token", PAGE);
    }
    /* more writes than the history keeps, then the compaction timer */
    lab_progress(lab, "writing 200 updates, waiting for the %s compaction", interval);
    if (lab_write_burst(lab, sim, 200, N_OBJECTS, NULL) != 200) {
        return lab_fail(lab, "writes failed");
    }
    t_writes = lab_now_ms();
    deadline = t_writes + 3 * interval_ms + 5000;
    do {
        get(sim, exact, r0, &e_after);
        if (e_after.code != 200) {
            waited_ms = lab_now_ms() - t_writes;
            break;
        }
        lab_sleep_ms(100);
    } while (lab_now_ms() < deadline);
    snprintf(path, sizeof(path), "%s?limit=%d&continue=%s", coll, PAGE, p1.cont);
    get(sim, path, r0, &c_after);
    memset(&follow, 0, sizeof(follow));
    if (c_after.cont[0]) {
        snprintf(path, sizeof(path), "%s?limit=%d&continue=%s", coll, 1000, c_after.cont);
        get(sim, path, r0, &follow);
    }
    lab_sleep_ms(500);
    get(lab_proc_url(proxy), exact, r0, &k_e_after);
    memset(&k_c_after, 0, sizeof(k_c_after));
    if (k_p1.cont[0]) {
        snprintf(path, sizeof(path), "%s?limit=%d&continue=%s", coll, PAGE, k_p1.cont);
        get(lab_proc_url(proxy), path, r0, &k_c_after);
    }

    t = lab_table_new(lab, "lists", "Exact and continue LISTs at R0, before and after compaction",
                      cols, 6);
    arr = cJSON_AddArrayToObject(res, "requests");
    row(t, arr, "direct", "Exact LIST at R0", &e_before, &e_after);
    row(t, arr, "direct", "continue (page 2)", &p1, &c_after);
    if (c_after.cont[0]) {
        row(t, arr, "direct", "follow the 410's token", &c_after, &follow);
    }
    row(t, arr, "kwp", "Exact LIST at R0", &k_e_before, &k_e_after);
    row(t, arr, "kwp", "continue (page 2)", &k_p1, &k_c_after);
    lab_table_end(t);

    cJSON_AddNumberToObject(res, "r0", (double)r0);
    cJSON_AddStringToObject(res, "compactionInterval", interval);
    cJSON_AddNumberToObject(res, "historyEvents", 50);
    cJSON_AddNumberToObject(res, "secondsUntil410", (double)waited_ms / 1000.0);
    cJSON_AddStringToObject(res, "exactMessage", e_after.message);
    cJSON_AddStringToObject(res, "continueMessage", c_after.message);
    cJSON_AddStringToObject(res, "oldContinue", p1.cont);
    cJSON_AddStringToObject(res, "newContinue", c_after.cont);
    cJSON_AddNumberToObject(res, "followCode", (double)follow.code);
    cJSON_AddNumberToObject(res, "followItems", follow.items);
    cJSON_AddNumberToObject(res, "followItemsNewerThanR0", follow.newer);
    lab_note(lab, "old continue token: %s", p1.cont);
    lab_note(lab, "new continue token (in the 410): %s", c_after.cont[0] ? c_after.cont : "none");
    lab_note(lab,
             "following it: HTTP %ld, %d items, %d of them newer than R0=%" PRIu64
             " (the inconsistent remainder)",
             follow.code, follow.items, follow.newer, r0);
    dl += (size_t)snprintf(data + dl, sizeof(data) - dl,
                           "# request direct_before direct_after kwp_before kwp_after\n"
                           "0 %ld %ld %ld %ld\n1 %ld %ld %ld %ld\n",
                           e_before.code, e_after.code, k_e_before.code, k_e_after.code, p1.code,
                           c_after.code, k_p1.code, k_c_after.code);
    lab_plot(lab, data,
             "set title 'compaction: HTTP status of LISTs at R0 before and after'\n"
             "set style data histograms\nset style histogram clustered\n"
             "set style fill solid 0.8\nset yrange [0:450]\nset ylabel 'HTTP status'\n"
             "set xtics ('Exact LIST at R0' 0, 'continue page 2' 1)\nset key top left\n"
             "plot $DAT using 2 title 'direct before', '' using 3 title 'direct after', "
             "'' using 4 title 'kwp before', '' using 5 title 'kwp after'\n");
    lab_conclude(lab,
                 "%.1f s after the writes (interval %s) the Exact LIST at R0 got %ld \"%s\"; "
                 "the continue LIST got %ld with %s; following it gave %d items, %d newer than "
                 "R0; through kwp: Exact %ld, continue %ld",
                 (double)waited_ms / 1000.0, interval, e_after.code, e_after.message, c_after.code,
                 c_after.cont[0] ? "a fresh continue token" : "no token", follow.items,
                 follow.newer, k_e_after.code, k_c_after.code);
    return 0;
}

const struct lab_experiment lab_exp_compaction = {
    .name = "compaction",
    .summary = "etcd compaction against Exact and continue LISTs: the 410s, their fresh "
               "continue token, direct and through kwp",
    .needs = LAB_NEEDS_SIM,
    .run = run,
};
