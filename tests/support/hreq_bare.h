/*
 * hreq_bare.h - a watch's request state without a connection, for code that includes
 * proxy/handlers.c to drive its static watch path directly (tests/unit/proxy/test_handlers.c,
 * bench/emit.c). Include it right after proxy/handlers.c: it builds that file's struct hreq.
 * The fields are the ones hreq_new sets from a path with no namespace and no name; the
 * caller attaches h->w itself and frees the result with free() after detaching.
 */
#ifndef KWP_SUPPORT_HREQ_BARE_H
#define KWP_SUPPORT_HREQ_BARE_H

static void hreq_bare_wake(void *ctx)
{
    (void)ctx;
}

static struct hreq *hreq_bare_new(struct apires *ar)
{
    char tm[400] = "";
    size_t tm_len = 0;
    struct hreq *h;

    if (ar->kind.builtin) {
        tm_len = (size_t)snprintf(tm, sizeof(tm), "{\"kind\":\"%s\",\"apiVersion\":\"%s\"",
                                  ar->kind.kind, ar->api_version);
    }
    h = xcalloc(1, sizeof(*h) + tm_len + 3);
    h->ns = h->strs;
    h->name = h->strs + 1;
    memcpy(h->strs + 2, tm, tm_len + 1);
    h->typemeta = h->strs + 2;
    h->typemeta_len = tm_len;
    h->ar = ar;
    h->fd = -1;
    h->w.wake = hreq_bare_wake;
    h->w.kind = WATCHER_STREAM;
    return h;
}

#endif
