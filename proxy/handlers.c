/*
 * handlers.c - LIST, WATCH and GET from the cache (see handlers.h): the entry point, the
 * decision to serve or forward (handlers_route, the one place that makes it), GET, the
 * per-request state and its teardown, the replies the three verbs share, the freshness
 * wait, and the 1 s tick's sweep. LIST is handlers_list.c, the WATCH stream
 * handlers_watch.c, both over the state of handlers_int.h.
 *
 * Per-request state (struct hreq) is created on the first call and freed by the server's
 * completion callback, which detaches the watcher: the one teardown path.
 *
 * Content negotiation (negotiate.c) runs first, as in get.go; then the query (k8s_path.c),
 * then the cache. Waiting for an RV (the 3 s rule, or the proxy's short freshness wait)
 * happens before any reply: the request is suspended with an RVWAIT watcher and re-enters
 * handlers_serve. Bodies are assembled by transforms.c and sent by body.c.
 */
#include "proxy/handlers.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cache/blob.h"
#include "cache/bug.h"
#include "cache/gotext.h"
#include "cache/resource.h"
#include "cache/sbuf.h"
#include "cache/selector.h"
#include "proxy/body.h"
#include "proxy/handlers_int.h"
#include "proxy/handlers_list.h"
#include "proxy/handlers_watch.h"
#include "proxy/log.h"
#include "proxy/negotiate.h"
#include "proxy/pieces.h"
#include "proxy/scope.h"
#include "proxy/transforms.h"

/* ---- the request state ------------------------------------------------------------------- */

/* The scope strings and the typemeta prefix live in the same allocation. */
struct hreq *handlers_hreq_new(struct http_req *req, struct apires *ar,
                               const struct handlers_opts *opts, const char *ns, const char *name)
{
    char tm[400];
    size_t ns_len = strlen(ns) + 1, name_len = strlen(name) + 1;
    size_t tm_len = transforms_typemeta(ar, tm, sizeof(tm));
    struct hreq *h;
    char *s;

    h = xcalloc(1, sizeof(*h) + ns_len + name_len + tm_len + 1);
    s = h->strs;
    memcpy(s, ns, ns_len);
    h->sc.ns = s;
    s += ns_len;
    memcpy(s, name, name_len);
    h->sc.name = s;
    s += name_len;
    memcpy(s, tm, tm_len);
    s[tm_len] = '\0';
    h->typemeta = s;
    h->typemeta_len = (uint32_t)tm_len;
    h->req = req;
    h->ar = ar;
    h->opts = opts;
    h->fc.fd = req ? http_req_fd(req) : -1;
    return h;
}

void handlers_hreq_free(void *state)
{
    struct hreq *h = state;

    if (!h) {
        return;
    }
    resource_watch_detach(h->ar->res, &h->w);
    handlers_watch_fini(h); /* after the detach: its batch's events were lent until then */
    scope_fini(&h->sc);
    body_free(h->body);
    free(h);
}

void handlers_wake(void *ctx)
{
    struct hreq *h = ctx;

    /* h->dw was set before the watcher was armed and is cleared only while it is not:
     * the resource lock that armed it, and cleared its flag for this wake, orders them */
    if (h->dw) {
        fanout_kick(&h->fc); /* the writers' stream: one pass per writer turn */
    } else if (h->w.kind == WATCHER_STREAM) {
        http_resume_batched(h->req); /* several events per write when many watches wake */
    } else {
        http_resume(h->req);
    }
}

char *handlers_object_json(const struct apires *ar, const struct blob *b, size_t *len)
{
    char typemeta[400];
    size_t tlen = transforms_typemeta(ar, typemeta, sizeof(typemeta)), total, n, off = 0;
    struct iovec iov[TRANSFORMS_OBJECT_IOV];
    struct transforms_obj ov = transforms_obj_of(b, NULL);
    char *out;

    n = transforms_object_iov(typemeta, tlen, &ov, iov, &total);
    out = xmalloc(total + 2);
    for (size_t i = 0; i < n; i++) {
        memcpy(out + off, iov[i].iov_base, iov[i].iov_len);
        off += iov[i].iov_len;
    }
    out[off++] = '\n';
    out[off] = '\0';
    *len = off;
    return out;
}

int handlers_check_fields(const struct apires *ar, const struct selector *fsel, struct kstatus *st)
{
    size_t n = selector_count(fsel);
    bool custom = ar->kind.fields[0] != NULL;

    for (size_t i = 0; i < n; i++) {
        const char *f = selector_field(fsel, i);
        bool ok = strcmp(f, "metadata.name") == 0 ||
                  (strcmp(f, "metadata.namespace") == 0 && (ar->kind.namespaced || !custom));
        for (size_t j = 0; !ok && j < APIRES_MAX_FIELDS && ar->kind.fields[j]; j++) {
            const char *k = ar->kind.fields[j]; /* "key" or "key:paths" (kube_meta_parse) */
            const char *colon = strchr(k, ':');
            size_t klen = colon ? (size_t)(colon - k) : strlen(k);
            ok = strlen(f) == klen && strncmp(f, k, klen) == 0;
        }
        if (!ok && strcmp(ar->kind.plural, "pods") == 0 && strcmp(f, "spec.host") == 0) {
            ok = true; /* legacy alias of spec.nodeName */
        }
        if (!ok) {
            if (custom && ar->kind.field_reject_kind != NULL) {
                kstatus_set(st, 400, "BadRequest", "field label \"%s\" not supported for %s", f,
                            ar->kind.field_reject_kind);
            } else if (custom) {
                kstatus_set(st, 400, "BadRequest", "field label not supported: %s", f);
            } else {
                kstatus_set(st, 400, "BadRequest",
                            "\"%s\" is not a known field selector: only \"metadata.name\", "
                            "\"metadata.namespace\"",
                            f);
            }
            return -EINVAL;
        }
    }
    return 0;
}

/* ---- replies ----------------------------------------------------------------------------- */

void handlers_reply_status(struct hreq *h, const struct kstatus *st)
{
    body_reply_status(h->req, h->neg.status_indent, st);
}

void handlers_reply_body(struct hreq *h, const struct iovec *iov, size_t n, body_done_fn *done,
                         void *ctx)
{
    h->phase = PH_DONE;
    body_reply(h->req, iov, n, h->neg.pretty, h->neg.gzip, done, ctx, &h->body);
}

/* The 406 of NegotiateOutputMediaType, listing what kwp serves. */
static void reply_not_acceptable(struct http_req *req, const struct negotiate *neg)
{
    struct kstatus st;

    kstatus_set(&st, 406, "NotAcceptable",
                "only the following media types are accepted: application/json");
    body_reply_status(req, neg->status_indent, &st);
}

void handlers_reply_transform_mismatch(struct hreq *h, bool list)
{
    struct kstatus st;
    char type[200];

    transforms_internal_type(&h->ar->kind, list, type, sizeof(type));
    if (list) {
        kstatus_set(&st, 406, "NotAcceptable",
                    "you requested PartialObjectMetadata, but the requested object is a list (%s)",
                    type);
    } else {
        kstatus_set(&st, 406, "NotAcceptable",
                    "you requested PartialObjectMetadataList, but the requested object is not a "
                    "list (%s)",
                    type);
    }
    h->phase = PH_DONE;
    handlers_reply_status(h, &st);
}

bool handlers_reply_bad_table_options(struct hreq *h)
{
    struct kstatus st;
    struct sbuf q = {0};
    const char *v = http_req_arg(h->req, "includeObject");

    if (h->neg.as != NEGOTIATE_AS_TABLE || h->neg.incl != NEGOTIATE_INCL_INVALID) {
        return false;
    }
    gotext_json_quote(&q, v, strlen(v));
    kstatus_set(&st, 400, "BadRequest",
                "Unable to convert to Table as requested: includeObject: Invalid value: %s: must "
                "be 'Metadata', 'Object', 'None', or empty",
                q.p);
    sbuf_free(&q);
    h->phase = PH_DONE;
    handlers_reply_status(h, &st);
    return true;
}

void handlers_reply_too_large(struct hreq *h, uint64_t want)
{
    struct kstatus st;

    kstatus_too_large_rv(&st, want, resource_rv(h->ar->res));
    atomic_fetch_add(&h->ar->ctr.too_large, 1);
    /* a LIST or GET answered here, if with an error, is one served (as WATCH counts) */
    atomic_fetch_add(h->sc.name[0] ? &h->ar->ctr.gets : &h->ar->ctr.lists, 1);
    handlers_reply_status(h, &st);
}

void handlers_reply_not_ready(struct hreq *h)
{
    struct kstatus st;
    int64_t since = 0;

    (void)resource_is_ready(h->ar->res, &since);
    if (since <= 0) {
        since = h->ar->created_ms; /* never ready yet: unready since the cache was made */
    }
    kstatus_not_ready(&st, since > 0 ? (double)(clock_mono_ms() - since) / 1000.0 : 0.0);
    atomic_fetch_add(&h->ar->ctr.not_ready, 1);
    handlers_reply_status(h, &st);
}

/* ---- the freshness wait ------------------------------------------------------------------ */

int handlers_wait_fresh(struct hreq *h)
{
    int rc;

    if (h->phase == PH_WAIT_FRESH) {
        resource_watch_detach(h->ar->res, &h->w);
    }
    if (resource_rv(h->ar->res) >= h->fresh_rv) {
        h->phase = PH_NEW;
        return 1;
    }
    if (h->peer_gone || clock_mono_ms() >= h->fresh_deadline_ms) {
        h->phase = PH_NEW;
        return -ETIMEDOUT;
    }
    memset(&h->w, 0, sizeof(h->w));
    h->w.wake = handlers_wake;
    h->w.wake_ctx = h;
    h->w.kind = WATCHER_RVWAIT;
    rc = resource_wait_rv(h->ar->res, &h->w, h->fresh_rv, h->fresh_deadline_ms);
    if (rc == 0) {
        h->phase = PH_NEW;
        return 1;
    }
    h->phase = PH_WAIT_FRESH;
    http_suspend(h->req);
    return 0;
}

void handlers_start_fresh_wait(struct hreq *h, uint64_t rv, int64_t wait_ms)
{
    h->fresh_rv = rv;
    h->fresh_deadline_ms = clock_mono_ms() + wait_ms;
}

bool handlers_await_rv(struct hreq *h, uint64_t rv)
{
    const struct handlers_opts *o = h->opts;
    bool fwd = handlers_route(o, HANDLERS_WHY_NOT_FRESH) == HANDLERS_FORWARD;
    int rc;

    if (h->phase != PH_WAIT_FRESH) {
        handlers_start_fresh_wait(
            h, rv,
            fwd ? handlers_opt_or(o->freshness_wait_ms, 250)
                : handlers_opt_or(o->too_large_wait_ms, HANDLERS_TOO_LARGE_DEFAULT_MS));
    }
    rc = handlers_wait_fresh(h);
    if (rc > 0) {
        return true;
    }
    if (rc < 0) {
        if (fwd) {
            o->forward(o->app, h->req);
        } else {
            h->phase = PH_DONE;
            handlers_reply_too_large(h, rv);
        }
    }
    return false;
}

/* ---- serve or forward -------------------------------------------------------------------- */

enum handlers_route handlers_route(const struct handlers_opts *opts, enum handlers_why why)
{
    /* the simulator is the storage (authoritative) and has nothing to forward to */
    bool upstream = !opts->authoritative && opts->forward != NULL;

    if (why == HANDLERS_WHY_CACHED || !upstream) {
        return HANDLERS_SERVE;
    }
    if (why == HANDLERS_WHY_NOT_FRESH && opts->local_too_large) {
        return HANDLERS_SERVE; /* --too-large-rv=local: wait 3 s, then our own 504 */
    }
    return HANDLERS_FORWARD;
}

enum handlers_why handlers_why_resource(const struct apires *ar, const struct k8s_path *p)
{
    if (!ar || atomic_load(&ar->ctr.not_cached) != 0) {
        return HANDLERS_WHY_UNCACHED; /* too large: over --max-resource-bytes */
    }
    if (!ar->kind.namespaced && p->ns[0] && strcmp(p->resource, "namespaces") != 0) {
        return HANDLERS_WHY_SCOPE;
    }
    return HANDLERS_WHY_CACHED;
}

/* ---- GET --------------------------------------------------------------------------------- */

/* A GET body: the pieces of one object, pinned by its blob until MHD is done. */
struct getbody {
    struct blob *b;
    struct pieces pc;
};

static void getbody_done(void *ctx)
{
    struct getbody *gb = ctx;

    blob_unref(gb->b);
    sbuf_free(&gb->pc.sb);
    free(gb);
}

/* Replies with object <b> (takes the reference) as negotiated: the object with its kind and
 * apiVersion, a PartialObjectMetadata or a one-row Table, then "\n". */
static void reply_object(struct hreq *h, struct blob *b)
{
    struct getbody *gb;
    struct transforms_obj ov = transforms_obj_of(b, NULL);
    struct transforms_ctx tc = handlers_tc(h);

    if (h->neg.as == NEGOTIATE_AS_POML || handlers_reply_bad_table_options(h)) {
        if (h->neg.as == NEGOTIATE_AS_POML) {
            handlers_reply_transform_mismatch(h, false);
        }
        blob_unref(b);
        return;
    }
    gb = xcalloc(1, sizeof(*gb));
    gb->b = b;
    if (h->neg.as == NEGOTIATE_AS_POM) {
        transforms_pom(&gb->pc, &tc, &ov);
    } else if (h->neg.as == NEGOTIATE_AS_TABLE) {
        transforms_table_single(&gb->pc, &tc, &ov, true);
    } else {
        size_t total;
        gb->pc.n = transforms_object_iov(h->typemeta, h->typemeta_len, &ov, gb->pc.iov, &total);
        for (size_t i = 0; i < gb->pc.n; i++) {
            gb->pc.tmp_off[i] = SIZE_MAX;
        }
    }
    pieces_lit(&gb->pc, "\n");
    pieces_resolve(&gb->pc, gb->pc.sb.p);
    handlers_reply_body(h, gb->pc.iov, gb->pc.n, getbody_done, gb);
}

static void serve_get(struct hreq *h, const struct k8s_list_opts *lo)
{
    const struct handlers_opts *o = h->opts;
    struct resource *res = h->ar->res;
    char key[K8S_NAME_MAX * 2 + 2];
    struct blob *b;
    bool rv_unset = !lo->has_rv || lo->rv_str[0] == '\0';

    if (rv_unset && handlers_route(o, HANDLERS_WHY_CONSISTENT) == HANDLERS_FORWARD) {
        o->forward(o->app, h->req);
        return;
    }
    if (!rv_unset && lo->rv > 0 && lo->rv > resource_rv(res)) {
        if (!handlers_await_rv(h, lo->rv)) {
            return;
        }
    }
    if (h->sc.ns[0]) {
        snprintf(key, sizeof(key), "%s/%s", h->sc.ns, h->sc.name);
    } else {
        snprintf(key, sizeof(key), "%s", h->sc.name);
    }
    atomic_fetch_add(&h->ar->ctr.gets, 1);
    h->phase = PH_DONE;
    b = resource_get(res, key);
    if (!b) {
        struct kstatus st;
        kstatus_not_found(&st, h->ar->kind.group, h->ar->kind.plural, h->sc.name);
        handlers_reply_status(h, &st);
        return;
    }
    reply_object(h, b);
}

/* ---- entry points ------------------------------------------------------------------------ */

struct fields_hook {
    const struct apires *ar;
    bool forward_unknown; /* the proxy: upstream gives the exact answer for labels we lack */
    const char *name;     /* the name of a legacy /watch/.../NAME path, else NULL */
};

/* fields.Selector.RequiresExactMatch("metadata.name") == name: the first non-negated
 * metadata.name term decides. */
static bool fields_select_name(const struct selector *fields, const char *name)
{
    for (size_t i = 0; i < selector_count(fields); i++) {
        if (!selector_negated(fields, i) &&
            strcmp(selector_field(fields, i), "metadata.name") == 0) {
            return strcmp(selector_value(fields, i), name) == 0;
        }
    }
    return false;
}

/* Step 4 of the apiserver's order (field label conversion), between validation and storage,
 * then ListResource's check of a named watch's field selector against its name. */
static int check_fields_hook(void *ctx, const struct selector *fields, struct kstatus *st)
{
    const struct fields_hook *fh = ctx;

    if (handlers_check_fields(fh->ar, fields, st) != 0) {
        return fh->forward_unknown ? -EXDEV : -EINVAL;
    }
    if (fh->name && fields && !selector_is_empty(fields) && !fields_select_name(fields, fh->name)) {
        kstatus_set(st, 400, "BadRequest",
                    "fieldSelector metadata.name doesn't match requested name");
        return -EINVAL;
    }
    return 0;
}

void handlers_serve(struct http_req *req, struct apires *ar, const struct k8s_path *p,
                    const struct handlers_opts *opts)
{
    struct hreq *h = http_req_state(req);
    struct k8s_list_opts lo;
    struct kstatus st;
    const struct k8s_query_kv *q;
    size_t nq;
    char err[512];

    struct fields_hook fh = {ar, handlers_route(opts, HANDLERS_WHY_FIELD_LABEL) == HANDLERS_FORWARD,
                             p->legacy_watch && p->name[0] ? p->name : NULL};
    struct negotiate_in nin;
    struct negotiate neg;
    enum handlers_why why;
    /* installer.go routes only /watch/.../NAME to ListResource; GET .../NAME is GetResource,
     * which reads resourceVersion alone: ?watch= and the other list options do not apply. */
    bool get_named = p->name[0] && !p->legacy_watch;
    int prc;

    /* get.go negotiates before it decodes any option. The proxy hands what it cannot encode
     * (protobuf, YAML, a Table for a kind it has no printer for, such as a custom resource
     * whose CRD names additionalPrinterColumns) to the upstream, which can. */
    q = http_req_query(req, &nq);
    nin.accept = http_req_header(req, "Accept");
    nin.accept_encoding = http_req_header(req, "Accept-Encoding");
    nin.user_agent = http_req_header(req, "User-Agent");
    nin.query = q;
    nin.n_query = nq;
    prc = negotiate_request(&nin, &ar->kind, &neg);
    why = HANDLERS_WHY_CACHED;
    if (prc != 0) {
        why = HANDLERS_WHY_ENCODING;
    } else if (neg.as == NEGOTIATE_AS_TABLE && neg.table_default) {
        why = HANDLERS_WHY_TABLE_DEFAULT;
    }
    if (handlers_route(opts, why) == HANDLERS_FORWARD) {
        opts->forward(opts->app, req);
        return;
    }
    if (prc != 0) {
        if (h) {
            h->phase = PH_DONE;
        }
        reply_not_acceptable(req, &neg);
        return;
    }
    if (h) {
        h->neg = neg;
    }
    prc = k8s_list_opts_parse_ex(q, nq, p->legacy_watch, check_fields_hook, &fh, &lo, &st);
    if (prc == -EXDEV) {
        opts->forward(opts->app, req);
        return;
    }
    if (get_named) {
        lo.watch = false;
    }
    if (prc != 0) {
        /* A GET by name only reads resourceVersion: other list options do not apply. */
        if (!get_named || st.code == 500) {
            body_reply_status(req, neg.status_indent, &st);
            return;
        }
        if (st.code == 400 && strncmp(st.message, "invalid resource version: ", 26) == 0) {
            /* GET reports a bad rv like WATCH: 500 without reason and without the prefix */
            memmove(st.message, st.message + 26, strlen(st.message + 26) + 1);
            st.code = 500;
            st.reason = NULL;
            body_reply_status(req, neg.status_indent, &st);
            return;
        }
    }
    if (!h) {
        h = handlers_hreq_new(req, ar, opts, p->ns, p->name);
        h->neg = neg;
        http_req_set_state(req, h, handlers_hreq_free);
        if (lo.label_selector && lo.label_selector[0]) {
            h->sc.lsel = selector_parse_labels(lo.label_selector, err, sizeof(err));
            if (!h->sc.lsel) {
                kstatus_set(&st, 400, "BadRequest", "%s", err);
                body_reply_status(req, neg.status_indent, &st);
                return;
            }
        }
        if (lo.field_selector && lo.field_selector[0]) {
            h->sc.fsel = selector_parse_fields(lo.field_selector, err, sizeof(err));
            if (!h->sc.fsel) {
                kstatus_set(&st, 400, "BadRequest", "%s", err);
                body_reply_status(req, neg.status_indent, &st);
                return;
            }
        }
    }
    if (!lo.watch && (!lo.has_rv || lo.rv_str[0] == '\0') &&
        !(lo.continue_tok && lo.continue_tok[0]) &&
        handlers_route(opts, HANDLERS_WHY_CONSISTENT) == HANDLERS_FORWARD) {
        opts->forward(opts->app, req); /* consistent reads go upstream, ready or not */
        return;
    }
    if (!resource_is_ready(ar->res, NULL) && !lo.watch) {
        /* SEMANTICS 3.5: a LIST with a limit and no selector, and GETs, go upstream */
        bool paged = p->name[0] || (lo.limit > 0 && !lo.label_selector && !lo.field_selector);
        if (paged && handlers_route(opts, HANDLERS_WHY_NOT_READY) == HANDLERS_FORWARD) {
            opts->forward(opts->app, req);
        } else {
            h->phase = PH_DONE;
            handlers_reply_not_ready(h);
        }
        return;
    }
    if (lo.watch) {
        handlers_watch_serve(h, &lo);
    } else if (p->name[0]) {
        serve_get(h, &lo);
    } else {
        handlers_list_serve(h, &lo);
    }
}

/* ---- the tick ---------------------------------------------------------------------------- */

static bool peer_dead(struct watcher *w, void *ctx)
{
    struct hreq *h = (struct hreq *)((char *)w - offsetof(struct hreq, w));
    char c;
    ssize_t r;

    if (h->fc.fd < 0) {
        return false;
    }
    r = recv(h->fc.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r == 0 || (r == -1 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        h->peer_gone = true;
        return true;
    }
    return false;
}

void handlers_tick(struct apires *ar, int64_t now_ms)
{
    (void)resource_tick(ar->res, now_ms, peer_dead, NULL);
    handlers_watch_tick(ar, now_ms);
}
