/*
 * handlers_list.c - LIST from the cache (SEMANTICS 1): a snapshot of the resource at the
 * rv the request names (latest, Exact from the history, or a continue token's), paged in
 * key order, each item as negotiated, answered as an iovec over the snapshot's blobs
 * (MHD copies the array, never the bytes; the snapshot reference drops when MHD is done).
 *
 * What this room decides is which snapshot answers; whether the cache answers at all is
 * handlers_route's. It uses the request state (handlers_int.h), scope.h to walk the
 * snapshot, transforms.h for transformed items and envelopes, and handlers.c's replies.
 * Threads: the request's MHD thread; the cache takes its own locks.
 */
#include "proxy/handlers_list.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/bug.h"
#include "cache/resource.h"
#include "cache/rv.h"
#include "cache/sbuf.h"
#include "cache/selector.h"
#include "cache/snapshot.h"
#include "proxy/continue_token.h"
#include "proxy/handlers_int.h"
#include "proxy/kstatus.h"
#include "proxy/pieces.h"

struct listbody {
    struct snapshot *snap;
    char *head;
    struct iovec *iov;
    struct pieces_arena *arena; /* computed pieces of transformed items (rows, metadata) */
};

static void listbody_done(void *ctx)
{
    struct listbody *lb = ctx;
    snapshot_unref(lb->snap);
    free(lb->head);
    free(lb->iov);
    pieces_arena_free(lb->arena);
    free(lb);
}

/* Largest number of pieces one list item takes (a Table row with an object override). */
#define LIST_ITEM_PIECES 10

/*
 * Appends the pieces of item <b> to lb->iov at *n_iov, as negotiated: the stored bytes, a
 * PartialObjectMetadata, or a Table row. Computed bytes are copied into lb->arena.
 */
static void list_item(const struct hreq *h, struct listbody *lb, const struct blob *b,
                      size_t *n_iov, int64_t now)
{
    struct transforms_ctx tc = handlers_tc(h);
    struct pieces pc = {0};
    struct transforms_obj ov;
    const char *base;

    if (h->neg.as == NEGOTIATE_AS_NONE) {
        lb->iov[*n_iov].iov_base = (void *)b->data; /* the common case: the blob itself */
        lb->iov[(*n_iov)++].iov_len = b->len;
        return;
    }
    ov = transforms_obj_of(b, NULL);
    if (h->neg.as == NEGOTIATE_AS_POML) {
        transforms_pom(&pc, &tc, &ov);
    } else {
        transforms_table_row(&pc, &tc, &ov, now);
    }
    BUG_ON(pc.n > LIST_ITEM_PIECES);
    base = pc.sb.len ? pieces_arena_copy(&lb->arena, pc.sb.p, pc.sb.len) : NULL;
    pieces_resolve(&pc, base);
    memcpy(lb->iov + *n_iov, pc.iov, sizeof(pc.iov[0]) * pc.n);
    *n_iov += pc.n;
    sbuf_free(&pc.sb);
}

/*
 * Replies with the list of <s> (served at <list_rv>), items after <after_key> (full store
 * key, NULL for the start), at most <limit> (0 = all), minting continue tokens with
 * <token_rv>. Takes ownership of one reference to <s>. Costs O(log n) plus the items it
 * visits: a page does not walk the rest of the list.
 */
static void reply_list(struct hreq *h, struct snapshot *s, uint64_t list_rv, const char *after_key,
                       int64_t limit, int64_t token_rv)
{
    struct listbody *lb;
    struct store_iter it;
    const struct blob *b, *lastb = NULL;
    size_t n_iov = 1, matched = 0;
    bool more = false;
    bool empty_pred = selector_is_empty(h->sc.lsel) && selector_is_empty(h->sc.fsel);
    size_t remaining = 0, cand;
    char rvbuf[24], tok[1024] = "", meta[1200];
    const char *tail;
    struct transforms_ctx tc = handlers_tc(h);
    struct sbuf head = {0};
    int64_t now = transforms_now_ns();

    if (h->neg.as == NEGOTIATE_AS_POM || handlers_reply_bad_table_options(h)) {
        if (h->neg.as == NEGOTIATE_AS_POM) {
            handlers_reply_transform_mismatch(h, true);
        }
        snapshot_unref(s);
        return;
    }
    /* at most <limit> items go out, however many are in scope */
    cand = scope_count_after(&h->sc, s, after_key);
    if (limit > 0 && (uint64_t)limit < cand) {
        cand = (size_t)limit;
    }
    lb = xcalloc(1, sizeof(*lb));
    lb->snap = s;
    /* a plain item is one piece (the blob) after its comma; a Table row or metadata item up
     * to LIST_ITEM_PIECES */
    lb->iov = xmalloc(sizeof(struct iovec) *
                      ((1 + (h->neg.as == NEGOTIATE_AS_NONE ? 1 : LIST_ITEM_PIECES)) * cand + 4));
    n_iov = 1; /* slot 0 = head, filled last */
    for (b = scope_start(&h->sc, s, after_key, &it); b != NULL; b = snapshot_next(&it)) {
        if (!scope_in_ns(&h->sc, b)) {
            break; /* keys of one namespace are contiguous */
        }
        if (limit > 0 && (int64_t)matched == limit) {
            more = true;
            break;
        }
        if (!scope_match(&h->sc, b)) {
            continue;
        }
        if (matched > 0) {
            lb->iov[n_iov].iov_base = (void *)",";
            lb->iov[n_iov++].iov_len = 1;
        }
        list_item(h, lb, b, &n_iov, now);
        matched++;
        lastb = b;
    }
    if (more) {
        /* remainingItemCount: candidates after the last returned item, only without selectors */
        remaining = scope_count_after(&h->sc, s, lastb->key);
        continue_token_encode(token_rv, h->sc.ns[0] ? lastb->name : lastb->key, tok, sizeof(tok));
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
    tail = transforms_list_head(&head, &tc, meta, matched);
    lb->head = head.p;
    lb->iov[0].iov_base = lb->head;
    lb->iov[0].iov_len = head.len;
    lb->iov[n_iov].iov_base = (void *)tail;
    lb->iov[n_iov++].iov_len = strlen(tail);
    atomic_fetch_add(&h->ar->ctr.lists, 1);
    handlers_reply_body(h, lb->iov, n_iov, listbody_done, lb);
}

static void reply_expired(struct hreq *h, const char *message, const char *continue_tok)
{
    struct kstatus st;

    kstatus_set(&st, 410, "Expired", "%s", message);
    st.continue_tok = continue_tok;
    atomic_fetch_add(&h->ar->ctr.lists, 1);
    h->phase = PH_DONE;
    handlers_reply_status(h, &st);
}

#define CONTINUE_TOO_OLD_MSG                                                                       \
    "The provided continue parameter is too old to display a consistent list result. You can "     \
    "start a new list without the continue parameter, or use the continue token in this "          \
    "response to retrieve the remainder of the results. Continuing with the provided token "       \
    "results in an inconsistent list - objects that were created, modified, or deleted between "   \
    "the time the first chunk was returned and now may show up in the list."

void handlers_list_serve(struct hreq *h, const struct k8s_list_opts *lo)
{
    const struct handlers_opts *o = h->opts;
    struct resource *res = h->ar->res;
    struct snapshot *s = NULL;
    uint64_t rv = 0;
    int rc;

    if (lo->continue_tok && lo->continue_tok[0]) {
        int64_t trv = 0;
        /* cacher.go computeListLimit: resourceVersion "0" (accepted with continue) drops the
         * limit, so the snapshot gives the rest of the list in one page (SEMANTICS 1.6) */
        int64_t limit = lo->has_rv && strcmp(lo->rv_str, "0") == 0 ? 0 : lo->limit;
        char start[K8S_NAME_MAX * 2 + 2], full[K8S_NAME_MAX * 4], err[256];
        if (continue_token_decode(lo->continue_tok, &trv, start, sizeof(start), err, sizeof(err)) !=
            0) {
            struct kstatus st;
            kstatus_set(&st, 400, "BadRequest", "invalid continue token: %s", err);
            handlers_reply_status(h, &st);
            return;
        }
        if (h->sc.ns[0]) {
            snprintf(full, sizeof(full), "%s/%s", h->sc.ns, start);
        } else {
            snprintf(full, sizeof(full), "%s", start);
        }
        if (trv < 0) { /* "continue at the latest revision": a consistent read */
            if (handlers_route(o, HANDLERS_WHY_CONTINUE_LATEST) == HANDLERS_FORWARD) {
                o->forward(o->app, h->req);
                return;
            }
            s = resource_snapshot(res, &rv);
            reply_list(h, s, rv, full, limit, (int64_t)rv);
            return;
        }
        rc = resource_snapshot_at(res, (uint64_t)trv, &s);
        if (rc != 0 && handlers_route(o, HANDLERS_WHY_WINDOW) == HANDLERS_FORWARD) {
            /* outside the window (or ahead of the cache): upstream answers, possibly with
             * its 410 and a fresh "rv":-1 token */
            o->forward(o->app, h->req);
            return;
        }
        if (rc == -ESTALE) {
            char tok[1024];
            continue_token_encode(-1, start, tok, sizeof(tok));
            reply_expired(h, CONTINUE_TOO_OLD_MSG, tok);
            return;
        }
        if (rc != 0) {
            handlers_reply_too_large(h, (uint64_t)trv);
            return;
        }
        reply_list(h, s, (uint64_t)trv, full, limit, trv);
        return;
    }

    bool rv_unset = !lo->has_rv || lo->rv_str[0] == '\0';
    bool rv_zero = !rv_unset && lo->rv == 0;
    bool exact =
        lo->rvm == RVM_EXACT || (!rv_unset && !rv_zero && lo->limit > 0 && lo->rvm == RVM_UNSET);

    if (rv_unset && handlers_route(o, HANDLERS_WHY_CONSISTENT) == HANDLERS_FORWARD) {
        o->forward(o->app, h->req);
        return;
    }
    if (!rv_unset && !rv_zero && lo->rv > resource_rv(res)) {
        if (!handlers_await_rv(h, lo->rv)) {
            return;
        }
    }
    if (exact) {
        rc = resource_snapshot_at(res, lo->rv, &s);
        if (rc != 0 && handlers_route(o, HANDLERS_WHY_WINDOW) == HANDLERS_FORWARD) {
            o->forward(o->app, h->req); /* not in the window: upstream's answer */
            return;
        }
        if (rc == -ESTALE) {
            reply_expired(h, "The resourceVersion for the provided list is too old.", NULL);
            return;
        }
        if (rc != 0) {
            handlers_reply_too_large(h, lo->rv);
            return;
        }
        reply_list(h, s, lo->rv, NULL, lo->limit, (int64_t)lo->rv);
        return;
    }
    s = resource_snapshot(res, &rv);
    reply_list(h, s, rv, NULL, rv_zero ? 0 : lo->limit, (int64_t)rv);
}
