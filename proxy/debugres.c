/*
 * debugres.c - the /debug/resources document (see debugres.h).
 *
 * One object per resource of the registry, in registry order; its stats and its watchers'
 * lags are each read in one critical section of that resource (two in all: the document is
 * not one atomic view, each part is). Watcher items: at most DEBUGRES_MAX_WATCHERS, the
 * largest lags first, from a bounded array on the stack of this MHD thread.
 */
#include "proxy/debugres.h"

#include <cJSON.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/resource.h"
#include "proxy/apires.h"
#include "proxy/http_server.h"
#include "proxy/kstatus.h"
#include "proxy/log.h"
#include "proxy/registry.h"

/* "2026-12-02T14:00:00.123Z" */
static void format_time(int64_t wall_ms, char *out, size_t cap)
{
    time_t sec = (time_t)(wall_ms / 1000);
    struct tm tm;
    size_t n;

    if (gmtime_r(&sec, &tm) == NULL || (n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm)) == 0) {
        snprintf(out, cap, "1970-01-01T00:00:00.000Z");
        return;
    }
    snprintf(out + n, cap - n, ".%03dZ", (int)(wall_ms % 1000));
}

static double seconds(int64_t ms)
{
    return ms > 0 ? (double)ms / 1000.0 : 0.0;
}

/* cJSON_Add* return NULL when out of memory; one flag collects that for the whole document. */
static void add_num(cJSON *o, const char *k, double v, bool *ok)
{
    if (cJSON_AddNumberToObject(o, k, v) == NULL) {
        *ok = false;
    }
}

/* Adds <child> (NULL: it could not be built) to <o>, or deletes it. */
static void add_child(cJSON *o, const char *k, cJSON *child, bool *ok)
{
    if (child == NULL || !cJSON_AddItemToObject(o, k, child)) {
        cJSON_Delete(child);
        *ok = false;
    }
}

static cJSON *history(const struct resource_stats *st, int64_t mono_ms, bool *ok)
{
    cJSON *h = cJSON_CreateObject();
    bool held = st->history_len > 0;

    if (h == NULL) {
        *ok = false;
        return NULL;
    }
    add_num(h, "capacity", (double)st->history_cap, ok);
    add_num(h, "events", (double)st->history_len, ok);
    if (held) {
        add_num(h, "oldest", (double)st->history_oldest_rv, ok);
        add_num(h, "newest", (double)st->history_newest_rv, ok);
    } else if (cJSON_AddNullToObject(h, "oldest") == NULL ||
               cJSON_AddNullToObject(h, "newest") == NULL) {
        *ok = false;
    }
    add_num(h, "boundary", (double)st->history_boundary, ok);
    add_num(h, "secondsCovered", held ? seconds(mono_ms - st->history_oldest_ms) : 0.0, ok);
    return h;
}

static cJSON *watchers(struct resource *res, int64_t mono_ms, bool *ok)
{
    struct watcher_lag lags[DEBUGRES_MAX_WATCHERS];
    struct watcher_lags sum;
    cJSON *w = cJSON_CreateObject();
    cJSON *items;

    if (w == NULL) {
        *ok = false;
        return NULL;
    }
    resource_watcher_lags(res, mono_ms, lags, DEBUGRES_MAX_WATCHERS, &sum);
    add_num(w, "count", (double)sum.count, ok);
    add_num(w, "maxLagEvents", (double)sum.max_events, ok);
    add_num(w, "maxLagSeconds", seconds(sum.max_age_ms), ok);
    items = cJSON_AddArrayToObject(w, "items");
    for (size_t i = 0; items != NULL && i < sum.n; i++) {
        cJSON *it = cJSON_CreateObject();

        if (it == NULL || !cJSON_AddItemToArray(items, it)) {
            cJSON_Delete(it);
            *ok = false;
            break;
        }
        add_num(it, "lagEvents", (double)lags[i].events, ok);
        add_num(it, "lagSeconds", seconds(lags[i].age_ms), ok);
    }
    if (items == NULL || cJSON_AddBoolToObject(w, "truncated", sum.count > sum.n) == NULL) {
        *ok = false;
    }
    return w;
}

static cJSON *one(struct apires *ar, int64_t mono_ms, bool *ok)
{
    struct resource_stats st;
    cJSON *r = cJSON_CreateObject();

    if (r == NULL) {
        *ok = false;
        return NULL;
    }
    resource_stats(ar->res, &st);
    if (cJSON_AddStringToObject(r, "resource", resource_name(ar->res)) == NULL ||
        cJSON_AddStringToObject(r, "group", ar->kind.group) == NULL ||
        cJSON_AddStringToObject(r, "version", ar->kind.version) == NULL ||
        cJSON_AddBoolToObject(r, "ready", st.ready) == NULL) {
        *ok = false;
    }
    add_num(r, "resourceVersion", (double)st.rv, ok);
    add_num(r, "objects", (double)st.objects, ok);
    add_num(r, "objectBytes", (double)st.object_bytes, ok);
    add_child(r, "history", history(&st, mono_ms, ok), ok);
    add_num(r, "relists", (double)atomic_load(&ar->ctr.relists), ok);
    add_num(r, "relistsKept", (double)atomic_load(&ar->ctr.relists_kept), ok);
    add_num(r, "tooOld", (double)atomic_load(&ar->ctr.too_old), ok);
    add_num(r, "tooLarge", (double)atomic_load(&ar->ctr.too_large), ok);
    add_child(r, "watchers", watchers(ar->res, mono_ms, ok), ok);
    return r;
}

struct cJSON *debugres_build(const struct registry *reg, const char *server, int64_t mono_ms,
                             int64_t wall_ms)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *list;
    char ts[40];
    bool ok = root != NULL;
    size_t n = registry_len(reg);

    if (!ok) {
        return NULL;
    }
    format_time(wall_ms, ts, sizeof(ts));
    if (cJSON_AddStringToObject(root, "kind", "DebugResources") == NULL ||
        cJSON_AddStringToObject(root, "server", server) == NULL ||
        cJSON_AddStringToObject(root, "time", ts) == NULL ||
        (list = cJSON_AddArrayToObject(root, "resources")) == NULL) {
        cJSON_Delete(root);
        return NULL;
    }
    for (size_t i = 0; ok && i < n; i++) {
        cJSON *r = one(registry_at(reg, i), mono_ms, &ok);

        if (r == NULL || !cJSON_AddItemToArray(list, r)) {
            cJSON_Delete(r);
            ok = false;
        }
    }
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

void debugres_serve(struct http_req *req, const struct registry *reg, const char *server)
{
    struct kstatus st;
    cJSON *doc;
    char *txt = NULL;

    if (strcmp(http_req_method(req), "GET") != 0) {
        kstatus_set(&st, 405, "MethodNotAllowed",
                    "the server does not allow this method on the requested resource");
        http_reply_status(req, &st);
        return;
    }
    doc = debugres_build(reg, server, clock_mono_ms(), clock_wall_ms());
    if (doc != NULL) {
        txt = cJSON_PrintUnformatted(doc);
        cJSON_Delete(doc);
    }
    if (txt == NULL) {
        kstatus_set(&st, 500, "InternalError", "out of memory building %s", DEBUGRES_PATH);
        http_reply_status(req, &st);
        return;
    }
    http_reply(req, 200, "application/json", txt, strlen(txt));
    cJSON_free(txt);
}
