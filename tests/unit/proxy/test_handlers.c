/*
 * test_handlers.c - proxy/handlers through its headers: the one serve-or-forward decision
 * (handlers_route) for both faces, and the WATCH frame writer driven through bare watches
 * (handlers_watch.h): a resource's watchers share one frame per event, byte for byte the
 * object as a GET shows it. The rooms' own helpers are tested in test_negotiate.c,
 * test_body.c, test_transforms.c and test_handlers_watch.c.
 */
#include "proxy/handlers.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cache/blob.h"
#include "cache/resource.h"
#include "cache/ring.h"
#include "cache/sbuf.h"
#include "proxy/apires.h"
#include "proxy/handlers_watch.h"
#include "proxy/kube_meta.h"

/* ---- serve or forward -------------------------------------------------------------------- */

static void forward_nothing(void *app, struct http_req *req)
{
    (void)app;
    (void)req;
}

static const enum handlers_why all_whys[] = {
    HANDLERS_WHY_NOT_RESOURCE, HANDLERS_WHY_UNCACHED,      HANDLERS_WHY_SCOPE,
    HANDLERS_WHY_ENCODING,     HANDLERS_WHY_TABLE_DEFAULT, HANDLERS_WHY_FIELD_LABEL,
    HANDLERS_WHY_CONSISTENT,   HANDLERS_WHY_NOT_READY,     HANDLERS_WHY_CONTINUE_LATEST,
    HANDLERS_WHY_WINDOW,       HANDLERS_WHY_NOT_FRESH,
};

/* The proxy (an upstream) forwards whatever stands in the way; the 3 s rule only with
 * --too-large-rv=upstream. Nothing in the way: served. */
Test(handlers, route_proxy_forwards_what_the_cache_cannot_answer)
{
    struct handlers_opts o = {.authoritative = false, .forward = forward_nothing};

    cr_assert_eq(handlers_route(&o, HANDLERS_WHY_CACHED), HANDLERS_SERVE);
    for (size_t i = 0; i < sizeof(all_whys) / sizeof(all_whys[0]); i++) {
        cr_assert_eq(handlers_route(&o, all_whys[i]), HANDLERS_FORWARD, "why %d", all_whys[i]);
    }
    o.local_too_large = true;
    cr_assert_eq(handlers_route(&o, HANDLERS_WHY_NOT_FRESH), HANDLERS_SERVE);
    cr_assert_eq(handlers_route(&o, HANDLERS_WHY_WINDOW), HANDLERS_FORWARD);
}

/* The simulator (authoritative, nothing to forward to) answers everything itself. */
Test(handlers, route_simulator_serves_everything)
{
    struct handlers_opts sim = {.authoritative = true, .local_too_large = true};
    struct handlers_opts no_upstream = {.authoritative = false};

    for (size_t i = 0; i < sizeof(all_whys) / sizeof(all_whys[0]); i++) {
        cr_assert_eq(handlers_route(&sim, all_whys[i]), HANDLERS_SERVE, "why %d", all_whys[i]);
        cr_assert_eq(handlers_route(&no_upstream, all_whys[i]), HANDLERS_SERVE);
    }
}

/* proxy_handle's path-level reasons: a resource not cached, a namespace on a cluster-scoped
 * one (namespaces/NAME itself is fine). */
Test(handlers, why_resource_scope_rules)
{
    const struct ring_opts ring = {.min_cap = 16, .max_cap = 16};
    struct apires *nodes = apires_new(apires_builtin("", "v1", "nodes"), NULL, &ring);
    struct apires *pods = apires_new(apires_builtin("", "v1", "pods"), NULL, &ring);
    struct k8s_path p;

    cr_assert_eq(k8s_path_parse("/api/v1/namespaces/ns1/nodes", &p), 0);
    cr_assert_eq(handlers_why_resource(nodes, &p), HANDLERS_WHY_SCOPE);
    cr_assert_eq(handlers_why_resource(NULL, &p), HANDLERS_WHY_UNCACHED);
    cr_assert_eq(k8s_path_parse("/api/v1/nodes", &p), 0);
    cr_assert_eq(handlers_why_resource(nodes, &p), HANDLERS_WHY_CACHED);
    cr_assert_eq(k8s_path_parse("/api/v1/namespaces/ns1/pods", &p), 0);
    cr_assert_eq(handlers_why_resource(pods, &p), HANDLERS_WHY_CACHED);
    apires_free(nodes);
    apires_free(pods);
}

/* ---- watch frames shared by a resource's watchers ---------------------------------------- */

/* {"type":"<type>","object":<the object as a GET shows it>}\n, built without any watch code. */
static char *expected_frame(const struct apires *ar, const char *type, const struct blob *b)
{
    size_t len;
    char *obj = handlers_object_json(ar, b, &len);
    struct sbuf sb = {0};

    sbuf_printf(&sb, "{\"type\":\"%s\",\"object\":", type);
    sbuf_put(&sb, obj, len - 1); /* without its newline */
    sbuf_str(&sb, "}\n");
    free(obj);
    return sb.p;
}

/* Emits <ev> for <h> into a fresh buffer; returns the frame (NUL-terminated). */
static char *emit_one(struct hreq *h, const struct ring_event *ev)
{
    static char buf[8192];
    size_t n = 0;

    cr_assert_eq(handlers_watch_bare_emit(h, buf, sizeof(buf) - 1, &n, ev), 0);
    cr_assert_not(handlers_watch_bare_overflowed(h));
    buf[n] = '\0';
    return strdup(buf);
}

/*
 * Two plain watchers and one with a label selector on the same resource, through ADDED,
 * MODIFIED (which brings the object into the selector: ADDED for that watcher) and DELETED:
 * the first plain watcher attaches a shared frame, the second sends that same frame, and
 * every frame equals, byte for byte, the one built from the object as a GET shows it, for a
 * built-in (typemeta prepended) and a custom resource (stored with its own kind).
 */
static void shared_frames_equal_built_ones(struct apires *ar, const char *const objs[3])
{
    static const char *const types[] = {"ADDED", "MODIFIED", "DELETED"};
    char err[128] = "";
    struct hreq *a = handlers_watch_bare_new(ar, NULL, err, sizeof(err));
    struct hreq *b = handlers_watch_bare_new(ar, NULL, err, sizeof(err));
    struct hreq *sel = handlers_watch_bare_new(ar, "app=x", err, sizeof(err));
    struct watcher *wa, *wb, *ws;
    struct ring_event ev[3], evb[3], evs[3];
    struct blob *blobs[3];

    cr_assert(a && b, "%s", err);
    cr_assert_not_null(sel, "%s", err);
    wa = handlers_watch_bare_watcher(a);
    wb = handlers_watch_bare_watcher(b);
    ws = handlers_watch_bare_watcher(sel);
    cr_assert_eq(resource_replace(ar->res, NULL, 0, 1, 0), 0);
    cr_assert_eq(resource_watch_from(ar->res, wa, 1, NULL), 0);
    cr_assert_eq(resource_watch_from(ar->res, wb, 1, NULL), 0);
    cr_assert_eq(resource_watch_from(ar->res, ws, 1, NULL), 0);
    for (int i = 0; i < 3; i++) {
        blobs[i] = kube_meta_blob(objs[i], strlen(objs[i]), ar->kind.fields);
        cr_assert_not_null(blobs[i]);
        cr_assert_eq(resource_apply(ar->res, (enum watch_type)i, blobs[i], (uint64_t)i + 2, 0), 0);
    }
    cr_assert_eq(resource_watch_next(ar->res, wa, ev, 3), 3);
    cr_assert_eq(resource_watch_next(ar->res, wb, evb, 3), 3);
    cr_assert_eq(resource_watch_next(ar->res, ws, evs, 3), 3);
    for (int i = 0; i < 3; i++) {
        char *want = expected_frame(ar, types[i], blobs[i]);
        char *got_a, *got_b;
        const void *shared;

        cr_assert_null(ring_aux(&ev[i]), "nothing shared before a watcher sends it");
        got_a = emit_one(a, &ev[i]);
        shared = ring_aux(&ev[i]);
        cr_assert_not_null(shared, "%s: the first plain watcher attaches its frame", types[i]);
        got_b = emit_one(b, &evb[i]);
        cr_assert_eq(ring_aux(&evb[i]), shared, "the second one reuses it");
        cr_assert_str_eq(got_a, want);
        cr_assert_str_eq(got_b, want);
        free(got_a);
        free(got_b);
        free(want);
    }
    /* the selector's view: nothing for the ADDED (no label), ADDED for the MODIFIED that
     * brings the label, DELETED: never the shared MODIFIED frame for its ADDED */
    {
        char buf[16];
        size_t n = 0;
        char *added, *deleted, *want_added = expected_frame(ar, "ADDED", blobs[1]);
        char *want_deleted = expected_frame(ar, "DELETED", blobs[2]);

        cr_assert_eq(handlers_watch_bare_emit(sel, buf, sizeof(buf), &n, &evs[0]), 0);
        cr_assert_eq(n, 0u);
        added = emit_one(sel, &evs[1]);
        deleted = emit_one(sel, &evs[2]);
        cr_assert_str_eq(added, want_added);
        cr_assert_str_eq(deleted, want_deleted);
        free(added);
        free(deleted);
        free(want_added);
        free(want_deleted);
    }
    for (int i = 0; i < 3; i++) {
        blob_unref(blobs[i]);
    }
    cr_assert_eq(handlers_watch_bare_frames(a), 3u);
    cr_assert_eq(handlers_watch_bare_frames(a), 0u, "counted once");
    cr_assert_eq(handlers_watch_bare_frames(sel), 2u);
    handlers_watch_bare_free(a);
    handlers_watch_bare_free(b);
    handlers_watch_bare_free(sel);
}

Test(handlers, shared_watch_frames_equal_built_ones_builtin)
{
    const struct ring_opts ring = {.min_cap = 16, .max_cap = 16};
    struct apires *ar = apires_new(apires_builtin("", "v1", "pods"), NULL, &ring);
    const char *const objs[3] = {
        "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"resourceVersion\":\"2\"},"
        "\"spec\":{\"nodeName\":\"n1\"}}",
        "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"resourceVersion\":\"3\","
        "\"labels\":{\"app\":\"x\"}},\"spec\":{\"nodeName\":\"n1\"}}",
        "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"resourceVersion\":\"4\","
        "\"labels\":{\"app\":\"x\"}},\"spec\":{\"nodeName\":\"n1\"},\"status\":{}}",
    };

    shared_frames_equal_built_ones(ar, objs);
    apires_free(ar);
}

Test(handlers, shared_watch_frames_equal_built_ones_custom_resource)
{
    const struct ring_opts ring = {.min_cap = 16, .max_cap = 16};
    struct apires_kind kind;
    char *owned = NULL;
    struct apires *ar;
    const char *const objs[3] = {
        "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\","
        "\"namespace\":\"ns\",\"resourceVersion\":\"2\"},\"spec\":{}}",
        "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\","
        "\"namespace\":\"ns\",\"resourceVersion\":\"3\",\"labels\":{\"app\":\"x\"}},\"spec\":{}}",
        "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\","
        "\"namespace\":\"ns\",\"resourceVersion\":\"4\",\"labels\":{\"app\":\"x\"}}}",
    };

    cr_assert_eq(apires_parse_spec("example.com/v1/widgets", &kind, &owned), 0);
    ar = apires_new(&kind, owned, &ring);
    cr_assert_not(ar->kind.builtin);
    shared_frames_equal_built_ones(ar, objs);
    apires_free(ar);
}
