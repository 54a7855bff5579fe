/*
 * handlers.c - LIST, WATCH and GET from the cache (see handlers.h).
 *
 * Per-request state (struct hreq) is created on the first call and freed by the server's
 * completion callback, which detaches the watcher: the one teardown path.
 *
 * A WATCH is a content reader over the watcher's cursor: it writes the synthetic ADDED events
 * of the initial snapshot, the end bookmark, then events taken from the ring in batches,
 * whole frames only (a frame larger than MHD's buffer goes through an overflow buffer that
 * is drained at UTF-8 boundaries, so no chunk ever splits a character). When nothing is
 * pending it suspends; the resource wakes it after the next append, the tick when a bookmark
 * or the deadline is due, or when the sweep finds the peer gone.
 *
 * Waiting for an RV (the 3 s rule, or the proxy's short freshness wait) happens before any
 * reply: the request is suspended with an RVWAIT watcher and re-enters handlers_serve.
 */
#include "proxy/handlers.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "cache/blob.h"
#include "cache/bug.h"
#include "cache/resource.h"
#include "cache/rv.h"
#include "cache/selector.h"
#include "cache/snapshot.h"
#include "proxy/log.h"

#define HANDLERS_BATCH 32
#define HANDLERS_BOOKMARK_DEFAULT_MS 60000
#define HANDLERS_MIN_TIMEOUT_DEFAULT_S 1800
#define HANDLERS_TOO_LARGE_DEFAULT_MS 3000
#define INITIAL_EVENTS_END_ANNOTATION "\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}"

enum hphase { PH_NEW = 0, PH_WAIT_FRESH, PH_STREAM, PH_DONE };

struct hreq {
    struct watcher w; /* first member: the sweep maps a watcher back to its hreq */
    int fd;
    bool peer_gone; /* set by the sweep (under the resource lock) */
    struct http_req *req;
    struct apires *ar;
    const struct handlers_opts *opts;
    enum hphase phase;
    int64_t fresh_deadline_ms;
    uint64_t fresh_rv;
    struct selector *lsel;
    struct selector *fsel;
    char name[K8S_NAME_MAX];  /* single-object scope ("" = collection) */
    char ns[K8S_NAME_MAX];    /* namespace scope ("" = all) */
    char typemeta[400];       /* {"kind":"Pod","apiVersion":"v1" for built-ins, else "" */
    size_t typemeta_len;
    /* watch */
    bool counted_open;
    struct snapshot *initial;
    size_t init_pos;
    bool end_bookmark;
    uint64_t init_rv;
    uint64_t watermark; /* only events with rv > watermark are sent */
    uint64_t last_rv;   /* rv of the last event or bookmark sent */
    bool bookmarks;
    int64_t deadline_ms;
    int64_t next_bm_ms; /* 0 = no more bookmarks */
    struct ring_event pend[HANDLERS_BATCH];
    size_t pend_n;
    size_t pend_i;
    char *over; /* a frame that did not fit MHD's buffer */
    size_t over_len;
    size_t over_off;
    bool ending;
};

/* ---- helpers --------------------------------------------------------------------------- */

static int64_t opt_or(int64_t v, int64_t dflt)
{
    return v > 0 ? v : dflt;
}

static void hreq_free(void *state)
{
    struct hreq *h = state;

    if (!h) {
        return;
    }
    resource_watch_detach(h->ar->res, &h->w);
    if (h->counted_open) {
        atomic_fetch_sub(&h->ar->ctr.watches_open, 1);
    }
    ring_event_release(h->pend + h->pend_i, h->pend_n - h->pend_i);
    snapshot_unref(h->initial);
    selector_free(h->lsel);
    selector_free(h->fsel);
    free(h->over);
    free(h);
}

static void hreq_wake(void *ctx)
{
    struct hreq *h = ctx;
    http_resume(h->req);
}

static bool scope_match(const struct hreq *h, const struct blob *b)
{
    if (h->ns[0] && strcmp(b->ns, h->ns) != 0) {
        return false;
    }
    if (h->name[0] && strcmp(b->name, h->name) != 0) {
        return false;
    }
    return selector_match(h->lsel, b) && selector_match(h->fsel, b);
}

static bool json_empty_object(const struct blob *b)
{
    for (size_t i = 1; i < b->len; i++) {
        char c = b->data[i];
        if (c == '}') {
            return true;
        }
        if (c != ' ' && c != '\n' && c != '\t' && c != '\r') {
            return false;
        }
    }
    return false;
}

/*
 * Splits the JSON of <b> as a watch event or GET shows it into at most 5 pieces: typemeta
 * prefix (built-ins), the body, with the resourceVersion string replaced by <rv_override>
 * when given. Returns the number of pieces; *total gets the byte count.
 */
static size_t object_pieces(const char *typemeta, size_t typemeta_len, const struct blob *b,
                            const char *rv_override, struct iovec *iov, size_t *total)
{
    size_t n = 0, start = 0;
    bool over = rv_override && b->rv_len > 0 && b->rv_off > 0 && b->rv_off + b->rv_len <= b->len;

    if (typemeta_len > 0 && b->len >= 2 && b->data[0] == '{') {
        iov[n].iov_base = (void *)typemeta;
        iov[n++].iov_len = typemeta_len;
        if (json_empty_object(b)) {
            iov[n].iov_base = (void *)"}";
            iov[n++].iov_len = 1;
            goto done;
        }
        iov[n].iov_base = (void *)",";
        iov[n++].iov_len = 1;
        start = 1;
    }
    if (over) {
        iov[n].iov_base = (void *)(b->data + start);
        iov[n++].iov_len = b->rv_off - start;
        iov[n].iov_base = (void *)rv_override;
        iov[n++].iov_len = strlen(rv_override);
        iov[n].iov_base = (void *)(b->data + b->rv_off + b->rv_len);
        iov[n++].iov_len = b->len - b->rv_off - b->rv_len;
    } else {
        iov[n].iov_base = (void *)(b->data + start);
        iov[n++].iov_len = b->len - start;
    }
done:
    *total = 0;
    for (size_t i = 0; i < n; i++) {
        *total += iov[i].iov_len;
    }
    return n;
}

static void set_typemeta(struct hreq *h)
{
    if (h->ar->kind.builtin) {
        int w = snprintf(h->typemeta, sizeof(h->typemeta), "{\"kind\":\"%s\",\"apiVersion\":\"%s\"",
                         h->ar->kind.kind, h->ar->api_version);
        h->typemeta_len = w > 0 && (size_t)w < sizeof(h->typemeta) ? (size_t)w : 0;
    }
}

char *handlers_object_json(const struct apires *ar, const struct blob *b, size_t *len)
{
    char typemeta[400] = "";
    size_t tlen = 0, total, n, off = 0;
    struct iovec iov[6];
    char *out;

    if (ar->kind.builtin) {
        int w = snprintf(typemeta, sizeof(typemeta), "{\"kind\":\"%s\",\"apiVersion\":\"%s\"",
                         ar->kind.kind, ar->api_version);
        tlen = w > 0 && (size_t)w < sizeof(typemeta) ? (size_t)w : 0;
    }
    n = object_pieces(typemeta, tlen, b, NULL, iov, &total);
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

int handlers_check_fields(const struct apires *ar, const struct selector *fsel,
                          struct kstatus *st)
{
    size_t n = selector_count(fsel);
    bool custom = ar->kind.fields[0] != NULL;

    for (size_t i = 0; i < n; i++) {
        const char *f = selector_field(fsel, i);
        bool ok = strcmp(f, "metadata.name") == 0 ||
                  (strcmp(f, "metadata.namespace") == 0 &&
                   (ar->kind.namespaced || !custom));
        for (size_t j = 0; !ok && j < APIRES_MAX_FIELDS && ar->kind.fields[j]; j++) {
            ok = strcmp(f, ar->kind.fields[j]) == 0;
        }
        if (!ok && strcmp(ar->kind.plural, "pods") == 0 && strcmp(f, "spec.host") == 0) {
            ok = true; /* legacy alias of spec.nodeName */
        }
        if (!ok) {
            if (custom) {
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

static void reply_too_large(struct http_req *req, struct apires *ar, uint64_t want, bool get)
{
    struct kstatus st;

    kstatus_too_large_rv(&st, want, resource_rv(ar->res));
    atomic_fetch_add(&ar->ctr.too_large, 1);
    /* a LIST or GET answered here, if with an error, is one served (as WATCH counts) */
    atomic_fetch_add(get ? &ar->ctr.gets : &ar->ctr.lists, 1);
    http_reply_status(req, &st);
}

static void reply_not_ready(struct http_req *req, struct apires *ar)
{
    struct kstatus st;
    int64_t since = 0;

    (void)resource_is_ready(ar->res, &since);
    kstatus_not_ready(&st, since > 0 ? (double)(clock_mono_ms() - since) / 1000.0 : 0.0);
    atomic_fetch_add(&ar->ctr.not_ready, 1);
    http_reply_status(req, &st);
}

/*
 * The freshness wait. Returns 1 when the resource has reached h->fresh_rv, 0 when the request
 * was suspended (handlers_serve runs again on wake), -ETIMEDOUT when the deadline passed.
 */
static int wait_fresh(struct hreq *h)
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
    h->w.wake = hreq_wake;
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

static void start_fresh_wait(struct hreq *h, uint64_t rv, int64_t wait_ms)
{
    h->fresh_rv = rv;
    h->fresh_deadline_ms = clock_mono_ms() + wait_ms;
}

/* ---- LIST ------------------------------------------------------------------------------ */

struct listbody {
    struct snapshot *snap;
    char *head;
    struct iovec *iov;
};

static void listbody_done(void *ctx)
{
    struct listbody *lb = ctx;
    snapshot_unref(lb->snap);
    free(lb->head);
    free(lb->iov);
    free(lb);
}

/* Index of the first item in scope (the namespace's first key) after <after_key>. */
static size_t scope_start(const struct hreq *h, const struct snapshot *s, const char *after_key)
{
    size_t i = 0;

    if (h->ns[0]) {
        char prefix[K8S_NAME_MAX + 2];
        /* "ns/" sorts after "ns" keys but "ns." < "ns/" ... seek to the last key < "ns/" */
        snprintf(prefix, sizeof(prefix), "%s/", h->ns);
        /* every key of the namespace is > "ns/" and they are contiguous */
        i = snapshot_seek(s, prefix);
    }
    if (after_key && after_key[0]) {
        size_t j = snapshot_seek(s, after_key);
        if (j > i) {
            i = j;
        }
    }
    return i;
}

static bool in_scope_key(const struct hreq *h, const struct blob *b)
{
    return !h->ns[0] || strcmp(b->ns, h->ns) == 0;
}

/*
 * Replies with the list of <s> (served at <list_rv>), items after <after_key> (full store
 * key, NULL for the start), at most <limit> (0 = all), minting continue tokens with
 * <token_rv>. Takes ownership of one reference to <s>.
 */
static void reply_list(struct hreq *h, struct snapshot *s, uint64_t list_rv, const char *after_key,
                       int64_t limit, int64_t token_rv)
{
    struct listbody *lb = xcalloc(1, sizeof(*lb));
    size_t i = scope_start(h, s, after_key), n_iov = 1, matched = 0, last = 0;
    bool more = false, empty_pred = selector_is_empty(h->lsel) && selector_is_empty(h->fsel);
    size_t remaining = 0, head_len;
    char rvbuf[24], tok[1024] = "", meta[1200];
    const char *tail = "]}\n";

    lb->snap = s;
    lb->iov = xmalloc(sizeof(struct iovec) * (2 + 2 * (s->len - (i < s->len ? i : s->len))) +
                      sizeof(struct iovec) * 2);
    n_iov = 1; /* slot 0 = head, filled last */
    for (; i < s->len; i++) {
        const struct blob *b = s->items[i];
        if (!in_scope_key(h, b)) {
            break; /* keys of one namespace are contiguous */
        }
        if (limit > 0 && (int64_t)matched == limit) {
            more = true;
            break;
        }
        if (!scope_match(h, b)) {
            continue;
        }
        if (matched > 0) {
            lb->iov[n_iov].iov_base = (void *)",";
            lb->iov[n_iov++].iov_len = 1;
        }
        lb->iov[n_iov].iov_base = (void *)b->data;
        lb->iov[n_iov++].iov_len = b->len;
        matched++;
        last = i;
    }
    if (more) {
        /* remainingItemCount: candidates after the last returned item, only without selectors */
        for (size_t j = last + 1; j < s->len && in_scope_key(h, s->items[j]); j++) {
            remaining++;
        }
        const struct blob *lastb = s->items[last];
        kube_json_continue_encode(token_rv, h->ns[0] ? lastb->name : lastb->key, tok, sizeof(tok));
    }
    rv_format(list_rv, rvbuf);
    if (more && empty_pred) {
        snprintf(meta, sizeof(meta),
                 "{\"resourceVersion\":\"%s\",\"continue\":\"%s\",\"remainingItemCount\":%zu}",
                 rvbuf, tok, remaining);
    } else if (more) {
        snprintf(meta, sizeof(meta), "{\"resourceVersion\":\"%s\",\"continue\":\"%s\"}", rvbuf,
                 tok);
    } else {
        snprintf(meta, sizeof(meta), "{\"resourceVersion\":\"%s\"}", rvbuf);
    }
    head_len = strlen(h->ar->kind.list_kind) + strlen(h->ar->api_version) + strlen(meta) + 64;
    lb->head = xmalloc(head_len);
    snprintf(lb->head, head_len, "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":%s,\"items\":[",
             h->ar->kind.list_kind, h->ar->api_version, meta);
    lb->iov[0].iov_base = lb->head;
    lb->iov[0].iov_len = strlen(lb->head);
    lb->iov[n_iov].iov_base = (void *)tail;
    lb->iov[n_iov++].iov_len = strlen(tail);
    atomic_fetch_add(&h->ar->ctr.lists, 1);
    h->phase = PH_DONE;
    http_reply_iov(h->req, 200, "application/json", lb->iov, n_iov, listbody_done, lb);
}

static void reply_expired(struct hreq *h, const char *message, const char *continue_tok)
{
    struct kstatus st;

    kstatus_set(&st, 410, "Expired", "%s", message);
    st.continue_tok = continue_tok;
    atomic_fetch_add(&h->ar->ctr.lists, 1);
    h->phase = PH_DONE;
    http_reply_status(h->req, &st);
}

#define CONTINUE_TOO_OLD_MSG                                                                       \
    "The provided continue parameter is too old to display a consistent list result. You can "     \
    "start a new list without the continue parameter, or use the continue token in this "         \
    "response to retrieve the remainder of the results. Continuing with the provided token "      \
    "results in an inconsistent list - objects that were created, modified, or deleted between "  \
    "the time the first chunk was returned and now may show up in the list."

static void serve_list(struct hreq *h, const struct k8s_list_opts *lo)
{
    const struct handlers_opts *o = h->opts;
    struct resource *res = h->ar->res;
    struct snapshot *s = NULL;
    uint64_t rv = 0;
    int rc;

    if (lo->continue_tok && lo->continue_tok[0]) {
        int64_t trv = 0;
        char start[K8S_NAME_MAX * 2 + 2], full[K8S_NAME_MAX * 4], err[256];
        if (kube_json_continue_decode(lo->continue_tok, &trv, start, sizeof(start), err,
                                      sizeof(err)) != 0) {
            struct kstatus st;
            kstatus_set(&st, 400, "BadRequest", "invalid continue token: %s", err);
            http_reply_status(h->req, &st);
            return;
        }
        if (h->ns[0]) {
            snprintf(full, sizeof(full), "%s/%s", h->ns, start);
        } else {
            snprintf(full, sizeof(full), "%s", start);
        }
        if (trv < 0) { /* "continue at the latest revision": a consistent read */
            if (!o->authoritative) {
                o->forward(o->app, h->req);
                return;
            }
            s = resource_snapshot(res, &rv);
            reply_list(h, s, rv, full, lo->limit, (int64_t)rv);
            return;
        }
        rc = resource_snapshot_at(res, (uint64_t)trv, &s);
        if (rc != 0 && !o->authoritative) {
            /* outside the window (or ahead of the cache): upstream answers, possibly with
             * its 410 and a fresh "rv":-1 token */
            o->forward(o->app, h->req);
            return;
        }
        if (rc == -ESTALE) {
            char tok[1024];
            kube_json_continue_encode(-1, start, tok, sizeof(tok));
            reply_expired(h, CONTINUE_TOO_OLD_MSG, tok);
            return;
        }
        if (rc != 0) {
            reply_too_large(h->req, h->ar, (uint64_t)trv, h->name[0] != '\0');
            return;
        }
        reply_list(h, s, (uint64_t)trv, full, lo->limit, trv);
        return;
    }

    bool rv_unset = !lo->has_rv || lo->rv_str[0] == '\0';
    bool rv_zero = !rv_unset && lo->rv == 0;
    bool exact = lo->rvm == RVM_EXACT ||
                 (!rv_unset && !rv_zero && lo->limit > 0 && lo->rvm == RVM_UNSET);

    if (rv_unset && !o->authoritative) {
        o->forward(o->app, h->req);
        return;
    }
    if (!rv_unset && !rv_zero && lo->rv > resource_rv(res)) {
        if (h->phase != PH_WAIT_FRESH) {
            bool fwd = o->forward && !o->local_too_large;
            start_fresh_wait(h, lo->rv,
                             fwd ? opt_or(o->freshness_wait_ms, 250)
                                 : opt_or(o->too_large_wait_ms, HANDLERS_TOO_LARGE_DEFAULT_MS));
        }
        rc = wait_fresh(h);
        if (rc == 0) {
            return;
        }
        if (rc < 0) {
            if (o->forward && !o->local_too_large) {
                o->forward(o->app, h->req);
            } else {
                h->phase = PH_DONE;
                reply_too_large(h->req, h->ar, lo->rv, h->name[0] != '\0');
            }
            return;
        }
    }
    if (exact) {
        rc = resource_snapshot_at(res, lo->rv, &s);
        if (rc != 0 && !o->authoritative) {
            o->forward(o->app, h->req); /* not in the window: upstream's answer */
            return;
        }
        if (rc == -ESTALE) {
            reply_expired(h, "The resourceVersion for the provided list is too old.", NULL);
            return;
        }
        if (rc != 0) {
            reply_too_large(h->req, h->ar, lo->rv, h->name[0] != '\0');
            return;
        }
        reply_list(h, s, lo->rv, NULL, lo->limit, (int64_t)lo->rv);
        return;
    }
    s = resource_snapshot(res, &rv);
    reply_list(h, s, rv, NULL, rv_zero ? 0 : lo->limit, (int64_t)rv);
}

/* ---- GET ------------------------------------------------------------------------------- */

static void serve_get(struct hreq *h, const struct k8s_list_opts *lo)
{
    const struct handlers_opts *o = h->opts;
    struct resource *res = h->ar->res;
    char key[K8S_NAME_MAX * 2 + 2];
    struct blob *b;
    bool rv_unset = !lo->has_rv || lo->rv_str[0] == '\0';
    int rc;

    if (rv_unset && !o->authoritative) {
        o->forward(o->app, h->req);
        return;
    }
    if (!rv_unset && lo->rv > 0 && lo->rv > resource_rv(res)) {
        if (h->phase != PH_WAIT_FRESH) {
            bool fwd = o->forward && !o->local_too_large;
            start_fresh_wait(h, lo->rv,
                             fwd ? opt_or(o->freshness_wait_ms, 250)
                                 : opt_or(o->too_large_wait_ms, HANDLERS_TOO_LARGE_DEFAULT_MS));
        }
        rc = wait_fresh(h);
        if (rc == 0) {
            return;
        }
        if (rc < 0) {
            if (o->forward && !o->local_too_large) {
                o->forward(o->app, h->req);
            } else {
                h->phase = PH_DONE;
                reply_too_large(h->req, h->ar, lo->rv, h->name[0] != '\0');
            }
            return;
        }
    }
    if (h->ns[0]) {
        snprintf(key, sizeof(key), "%s/%s", h->ns, h->name);
    } else {
        snprintf(key, sizeof(key), "%s", h->name);
    }
    atomic_fetch_add(&h->ar->ctr.gets, 1);
    h->phase = PH_DONE;
    b = resource_get(res, key);
    if (!b) {
        struct kstatus st;
        kstatus_not_found(&st, h->ar->kind.group, h->ar->kind.plural, h->name);
        http_reply_status(h->req, &st);
        return;
    }
    size_t len;
    char *body = handlers_object_json(h->ar, b, &len);
    blob_unref(b);
    http_reply(h->req, 200, "application/json", body, len);
    free(body);
}

/* ---- WATCH ----------------------------------------------------------------------------- */

/* Copies as much of the overflow frame as fits, cutting only at UTF-8 character starts. */
static size_t drain_over(struct hreq *h, char *buf, size_t max)
{
    size_t left = h->over_len - h->over_off, n = left < max ? left : max;

    if (n < left) {
        while (n > 0 && ((unsigned char)h->over[h->over_off + n] & 0xC0) == 0x80) {
            n--;
        }
    }
    memcpy(buf, h->over + h->over_off, n);
    h->over_off += n;
    if (h->over_off == h->over_len) {
        free(h->over);
        h->over = NULL;
        h->over_len = h->over_off = 0;
    }
    return n;
}

enum emit_rc { EMIT_OK = 0, EMIT_FULL };

/*
 * Writes the frame made of <iov> pieces into buf at *n if it fits; if it does not and nothing
 * has been written in this call, stages it in the overflow buffer and writes what fits.
 */
static enum emit_rc emit_pieces(struct hreq *h, char *buf, size_t max, size_t *n,
                                const struct iovec *iov, size_t cnt, size_t total)
{
    char *dst;

    if (total <= max - *n) {
        dst = buf + *n;
        for (size_t i = 0; i < cnt; i++) {
            memcpy(dst, iov[i].iov_base, iov[i].iov_len);
            dst += iov[i].iov_len;
        }
        *n += total;
        atomic_fetch_add(&h->ar->ctr.frames, 1);
        return EMIT_OK;
    }
    if (*n > 0) {
        return EMIT_FULL;
    }
    h->over = xmalloc(total);
    h->over_len = total;
    h->over_off = 0;
    dst = h->over;
    for (size_t i = 0; i < cnt; i++) {
        memcpy(dst, iov[i].iov_base, iov[i].iov_len);
        dst += iov[i].iov_len;
    }
    atomic_fetch_add(&h->ar->ctr.frames, 1);
    *n += drain_over(h, buf, max);
    return EMIT_OK;
}

static enum emit_rc emit_object(struct hreq *h, char *buf, size_t max, size_t *n,
                                const char *type, const struct blob *b, const char *rv_override)
{
    struct iovec iov[8];
    char head[48];
    size_t cnt, objlen;
    int w = snprintf(head, sizeof(head), "{\"type\":\"%s\",\"object\":", type);

    iov[0].iov_base = head;
    iov[0].iov_len = (size_t)w;
    cnt = 1 + object_pieces(h->typemeta, h->typemeta_len, b, rv_override, iov + 1, &objlen);
    iov[cnt].iov_base = (void *)"}\n";
    iov[cnt++].iov_len = 2;
    return emit_pieces(h, buf, max, n, iov, cnt, (size_t)w + objlen + 2);
}

static enum emit_rc emit_bookmark(struct hreq *h, char *buf, size_t max, size_t *n, uint64_t rv,
                                  bool initial_end)
{
    char frame[1024];
    char rvbuf[24];
    struct iovec iov[1];
    int w;

    rv_format(rv, rvbuf);
    w = snprintf(frame, sizeof(frame),
                 "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"%s\",\"apiVersion\":\"%s\","
                 "\"metadata\":{\"resourceVersion\":\"%s\"%s%s}%s}}\n",
                 h->ar->kind.kind, h->ar->api_version, rvbuf, initial_end ? "," : "",
                 initial_end ? INITIAL_EVENTS_END_ANNOTATION : "", h->ar->kind.bookmark_body);
    if (w <= 0 || (size_t)w >= sizeof(frame)) {
        return EMIT_OK; /* cannot happen with the static table; skip rather than truncate */
    }
    iov[0].iov_base = frame;
    iov[0].iov_len = (size_t)w;
    return emit_pieces(h, buf, max, n, iov, 1, (size_t)w);
}

static enum emit_rc emit_status(struct hreq *h, char *buf, size_t max, size_t *n,
                                const struct kstatus *st)
{
    char body[2048];
    struct iovec iov[3];
    size_t len = kube_json_status(st, body, sizeof(body));

    if (len >= sizeof(body)) {
        len = sizeof(body) - 1;
    }
    iov[0].iov_base = (void *)"{\"type\":\"ERROR\",\"object\":";
    iov[0].iov_len = strlen(iov[0].iov_base);
    iov[1].iov_base = body;
    iov[1].iov_len = len;
    iov[2].iov_base = (void *)"}\n";
    iov[2].iov_len = 2;
    return emit_pieces(h, buf, max, n, iov, 3, iov[0].iov_len + len + 2);
}

/* SEMANTICS 2.10: the event as this watcher sees it through its filter. */
static enum emit_rc emit_event(struct hreq *h, char *buf, size_t max, size_t *n,
                               const struct ring_event *ev)
{
    bool cur, old;
    enum emit_rc rc = EMIT_OK;

    if (ev->rv <= h->watermark) {
        return EMIT_OK;
    }
    if (ev->type == WATCH_DELETED) {
        if (scope_match(h, ev->prev ? ev->prev : ev->obj)) {
            rc = emit_object(h, buf, max, n, "DELETED", ev->obj, NULL);
        }
    } else {
        cur = scope_match(h, ev->obj);
        old = ev->prev && scope_match(h, ev->prev);
        if (cur && !old) {
            rc = emit_object(h, buf, max, n, "ADDED", ev->obj, NULL);
        } else if (cur && old) {
            rc = emit_object(h, buf, max, n, "MODIFIED", ev->obj, NULL);
        } else if (!cur && old) {
            rc = emit_object(h, buf, max, n, "DELETED", ev->prev, ev->obj->rv_str);
        }
    }
    if (rc == EMIT_OK) {
        h->last_rv = ev->rv;
    }
    return rc;
}

static void schedule_bookmark(struct hreq *h, int64_t now)
{
    int64_t interval = opt_or(h->opts->bookmark_interval_ms, HANDLERS_BOOKMARK_DEFAULT_MS);
    int64_t next = now + interval;

    if (!h->bookmarks) {
        h->next_bm_ms = 0;
    } else if (h->deadline_ms - 2000 < next) {
        next = h->deadline_ms - 2000;
        h->next_bm_ms = next > now ? next : 0;
    } else {
        h->next_bm_ms = next;
    }
    resource_watch_set_due(h->ar->res, &h->w,
                           h->next_bm_ms && h->next_bm_ms < h->deadline_ms ? h->next_bm_ms
                                                                         : h->deadline_ms);
}

static ssize_t watch_read(void *ctx, char *buf, size_t max)
{
    struct hreq *h = ctx;
    size_t n = 0;
    int64_t now;

    if (h->over) {
        n = drain_over(h, buf, max);
        if (h->over || n > 0) {
            return (ssize_t)n;
        }
    }
    if (h->ending) {
        return HTTP_STREAM_END;
    }
    now = clock_mono_ms();
    if (now >= h->deadline_ms) {
        h->ending = true;
        return HTTP_STREAM_END;
    }
    for (;;) {
        while (h->initial && h->init_pos < h->initial->len) {
            const struct blob *b = h->initial->items[h->init_pos];
            if (scope_match(h, b) && emit_object(h, buf, max, &n, "ADDED", b, NULL) == EMIT_FULL) {
                return (ssize_t)n;
            }
            h->init_pos++;
            if (h->over) {
                return (ssize_t)n;
            }
        }
        if (h->initial) {
            snapshot_unref(h->initial);
            h->initial = NULL;
        }
        if (h->end_bookmark) {
            if (emit_bookmark(h, buf, max, &n, h->init_rv, true) == EMIT_FULL) {
                return (ssize_t)n;
            }
            h->end_bookmark = false;
            if (h->init_rv > h->last_rv) {
                h->last_rv = h->init_rv;
            }
            if (h->over) {
                return (ssize_t)n;
            }
        }
        while (h->pend_i < h->pend_n) {
            if (emit_event(h, buf, max, &n, &h->pend[h->pend_i]) == EMIT_FULL) {
                return (ssize_t)n;
            }
            ring_event_release(&h->pend[h->pend_i], 1);
            h->pend_i++;
            if (h->over) {
                return (ssize_t)n;
            }
        }
        h->pend_i = h->pend_n = 0;
        uint64_t bm_rv = 0;
        /* a bookmark waits until the events appended before it were taken: its rv is read
         * under the lock that says nothing is pending, so it never overtakes an event */
        if (h->next_bm_ms && now >= h->next_bm_ms &&
            resource_watch_idle_rv(h->ar->res, &h->w, &bm_rv)) {
            if (bm_rv > h->last_rv && bm_rv > h->watermark) {
                if (emit_bookmark(h, buf, max, &n, bm_rv, false) == EMIT_FULL) {
                    return (ssize_t)n;
                }
                h->last_rv = bm_rv;
            }
            schedule_bookmark(h, now);
            if (h->over) {
                return (ssize_t)n;
            }
        }
        /* with bytes in hand this call will not suspend: take without arming the suspended
         * flag, or a writer could resume (wake) a connection that is not suspended */
        ssize_t got = n > 0 ? resource_watch_take(h->ar->res, &h->w, h->pend, HANDLERS_BATCH)
                            : resource_watch_next(h->ar->res, &h->w, h->pend, HANDLERS_BATCH);
        if (got > 0) {
            h->pend_n = (size_t)got;
            continue;
        }
        if (got < 0) {
            h->ending = true;
            return n > 0 ? (ssize_t)n : HTTP_STREAM_END;
        }
        if (n > 0) {
            return (ssize_t)n; /* MHD calls again once this is sent; we suspend then */
        }
        http_stream_suspend(h->req);
        return 0;
    }
}

/* A watch answered 200 whose stream is a single ERROR event (410 too old, 504 too large). */
static ssize_t error_stream_read(void *ctx, char *buf, size_t max)
{
    struct hreq *h = ctx;

    if (h->over) {
        return (ssize_t)drain_over(h, buf, max);
    }
    return HTTP_STREAM_END;
}

static void reply_watch_error(struct hreq *h, const struct kstatus *st)
{
    char tmp[16];
    size_t n = 0;

    /* stage the whole frame in the overflow buffer (max 0 forces staging) */
    (void)emit_status(h, tmp, 0, &n, st);
    h->phase = PH_DONE;
    h->ending = true;
    http_reply_stream(h->req, 200, "application/json", error_stream_read, h);
}

static void start_stream(struct hreq *h)
{
    int64_t now = clock_mono_ms();

    h->phase = PH_STREAM;
    h->counted_open = true;
    atomic_fetch_add(&h->ar->ctr.watches_open, 1);
    schedule_bookmark(h, now);
    http_req_set_stall_timeout(h->req, (unsigned)opt_or(h->opts->watch_stall_s, 10));
    http_reply_stream(h->req, 200, "application/json", watch_read, h);
}

static void serve_watch(struct hreq *h, const struct k8s_list_opts *lo)
{
    const struct handlers_opts *o = h->opts;
    struct resource *res = h->ar->res;
    bool rv_unset = !lo->has_rv || lo->rv_str[0] == '\0';
    bool rv_zero = !rv_unset && lo->rv == 0;
    int64_t now = clock_mono_ms();
    uint64_t boundary = 0, rv = 0;
    int rc;

    if (h->phase == PH_NEW) {
        int64_t t = lo->timeout_seconds;
        if (t <= 0) {
            int64_t min = opt_or(o->min_request_timeout_s, HANDLERS_MIN_TIMEOUT_DEFAULT_S);
            t = min + (int64_t)((uint64_t)rand() % (uint64_t)min);
        }
        h->deadline_ms = now + t * 1000;
        h->bookmarks = lo->allow_bookmarks;
    }
    if (!resource_is_ready(res, NULL)) {
        h->phase = PH_DONE;
        reply_not_ready(h->req, h->ar);
        return;
    }
    if (lo->send_initial_events == 1 && !rv_unset && !rv_zero && lo->rv > resource_rv(res)) {
        if (h->phase != PH_WAIT_FRESH) {
            start_fresh_wait(h, lo->rv, opt_or(o->too_large_wait_ms, HANDLERS_TOO_LARGE_DEFAULT_MS));
        }
        rc = wait_fresh(h);
        if (rc == 0) {
            return;
        }
        if (rc < 0) {
            struct kstatus st;
            kstatus_too_large_rv(&st, lo->rv, resource_rv(res));
            atomic_fetch_add(&h->ar->ctr.too_large, 1);
            atomic_fetch_add(&h->ar->ctr.watches, 1);
            reply_watch_error(h, &st);
            return;
        }
    }
    memset(&h->w, 0, sizeof(h->w));
    h->w.wake = hreq_wake;
    h->w.wake_ctx = h;
    h->w.kind = WATCHER_STREAM;
    h->w.ns = h->ns[0] ? h->ns : NULL;
    atomic_fetch_add(&h->ar->ctr.watches, 1);

    if (lo->send_initial_events == 1 || (lo->send_initial_events == -1 && (rv_unset || rv_zero))) {
        rc = resource_watch_now(res, &h->w, &h->initial, &rv);
        if (rc != 0) {
            h->phase = PH_DONE;
            reply_not_ready(h->req, h->ar);
            return;
        }
        h->init_rv = rv;
        h->watermark = rv;
        h->last_rv = 0;
        h->end_bookmark = lo->send_initial_events == 1 && lo->allow_bookmarks;
        start_stream(h);
        return;
    }
    if (rv_unset || rv_zero) { /* sendInitialEvents=false: from now, no initial state */
        rc = resource_watch_now(res, &h->w, NULL, &rv);
        if (rc != 0) {
            h->phase = PH_DONE;
            reply_not_ready(h->req, h->ar);
            return;
        }
        h->watermark = rv;
        h->last_rv = rv;
        start_stream(h);
        return;
    }
    rc = resource_watch_from(res, &h->w, lo->rv, &boundary);
    if (rc == -ESTALE) {
        struct kstatus st;
        kstatus_too_old(&st, lo->rv, boundary);
        atomic_fetch_add(&h->ar->ctr.too_old, 1);
        reply_watch_error(h, &st);
        return;
    }
    if (rc != 0) {
        h->phase = PH_DONE;
        reply_not_ready(h->req, h->ar);
        return;
    }
    h->watermark = lo->rv;
    h->last_rv = lo->rv;
    start_stream(h);
}

/* ---- entry points ---------------------------------------------------------------------- */

struct fields_hook {
    const struct apires *ar;
    bool forward_unknown; /* the proxy: upstream gives the exact answer for labels we lack */
};

/* Step 4 of the apiserver's order (field label conversion), between validation and storage. */
static int check_fields_hook(void *ctx, const struct selector *fields, struct kstatus *st)
{
    const struct fields_hook *fh = ctx;

    if (handlers_check_fields(fh->ar, fields, st) == 0) {
        return 0;
    }
    return fh->forward_unknown ? -EXDEV : -EINVAL;
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

    struct fields_hook fh = {ar, !opts->authoritative && opts->forward};
    int prc;

    q = http_req_query(req, &nq);
    prc = k8s_list_opts_parse_ex(q, nq, p->legacy_watch, check_fields_hook, &fh, &lo, &st);
    if (prc == -EXDEV) {
        opts->forward(opts->app, req);
        return;
    }
    if (prc != 0) {
        bool get_named = p->name[0] && !lo.watch;
        /* A GET by name only reads resourceVersion: other list options do not apply. */
        if (!get_named || st.code == 500) {
            http_reply_status(req, &st);
            return;
        }
        if (st.code == 400 && strncmp(st.message, "invalid resource version: ", 26) == 0) {
            /* GET reports a bad rv like WATCH: 500 without reason and without the prefix */
            memmove(st.message, st.message + 26, strlen(st.message + 26) + 1);
            st.code = 500;
            st.reason = NULL;
            http_reply_status(req, &st);
            return;
        }
    }
    if (!h) {
        h = xcalloc(1, sizeof(*h));
        h->req = req;
        h->ar = ar;
        h->opts = opts;
        h->fd = http_req_fd(req);
        snprintf(h->ns, sizeof(h->ns), "%s", p->ns);
        snprintf(h->name, sizeof(h->name), "%s", p->name);
        set_typemeta(h);
        http_req_set_state(req, h, hreq_free);
        if (lo.label_selector && lo.label_selector[0]) {
            h->lsel = selector_parse_labels(lo.label_selector, err, sizeof(err));
            if (!h->lsel) {
                kstatus_set(&st, 400, "BadRequest", "%s", err);
                http_reply_status(req, &st);
                return;
            }
        }
        if (lo.field_selector && lo.field_selector[0]) {
            h->fsel = selector_parse_fields(lo.field_selector, err, sizeof(err));
            if (!h->fsel) {
                kstatus_set(&st, 400, "BadRequest", "%s", err);
                http_reply_status(req, &st);
                return;
            }
        }
    }
    if (!opts->authoritative && opts->forward && !lo.watch &&
        (!lo.has_rv || lo.rv_str[0] == '\0') && !(lo.continue_tok && lo.continue_tok[0])) {
        opts->forward(opts->app, req); /* consistent reads go upstream, ready or not */
        return;
    }
    if (!resource_is_ready(ar->res, NULL) && !lo.watch) {
        /* SEMANTICS 3.5: a LIST with a limit and no selector, and GETs, go upstream */
        bool fwd = opts->forward &&
                   (p->name[0] || (lo.limit > 0 && !lo.label_selector && !lo.field_selector));
        if (fwd) {
            opts->forward(opts->app, req);
        } else {
            h->phase = PH_DONE;
            reply_not_ready(req, ar);
        }
        return;
    }
    if (lo.watch) {
        serve_watch(h, &lo);
    } else if (p->name[0]) {
        serve_get(h, &lo);
    } else {
        serve_list(h, &lo);
    }
}

static bool peer_dead(struct watcher *w, void *ctx)
{
    struct hreq *h = (struct hreq *)((char *)w - offsetof(struct hreq, w));
    char c;
    ssize_t r;

    if (h->fd < 0) {
        return false;
    }
    r = recv(h->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r == 0 || (r == -1 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        h->peer_gone = true;
        return true;
    }
    return false;
}

void handlers_tick(struct apires *ar, int64_t now_ms)
{
    (void)resource_tick(ar->res, now_ms, peer_dead, NULL);
}
