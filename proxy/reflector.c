/*
 * reflector.c - LIST then WATCH each resource upstream and feed the cache (DESIGN "Data flow").
 *
 * Per resource a state machine (struct rsync): IDLE until <due_ms>, then one transfer, LISTING
 * (one page; pages chain) or WATCHING (one stream). When it ends, rsync_done picks the next
 * step: more pages -> next page now; last page -> resource_replace, WATCH from the list RV;
 * list failure -> LIST again after backoff; a watch that was established (200) and then ends,
 * cleanly or cut mid-stream -> WATCH from the last RV now, as client-go's reflector does (it
 * counts a failure only when the watch lasted under a second with no event); non-200, refused,
 * ERROR other than 410 -> WATCH after backoff; 410 -> relist now, at most one relist start per
 * second (kube-apiserver's cacher restarts its list-and-watch within a second); malformed or
 * over-long line, RV going backwards -> unready and relist (at once, then with backoff while
 * failures repeat). Backoff doubles from backoff_min to backoff_max with jitter; a
 * Retry-After on the answer (429, 503) sets the delay instead. A watch that stayed open
 * backoff_reset_ms forgets the failures (client-go's DelayWithReset). A watch unanswered
 * REFLECTOR_WATCH_HEADERS_MS is abandoned (a failure). After a broken connection the next
 * watch is preceded by a check of upstream's RV (a LIST of one item): below ours, upstream
 * went backwards (restored from a backup) and we relist; a list whose RV is below the
 * cache's is logged as that too. A list over max_resource_bytes gives the resource up: not
 * cached, forwarded (rsync_give_up).
 *
 * Every request takes its credentials from upstream_begin and hands its outcome to
 * upstream_done (a 401 makes an exec credential stale, so the next request of any resource
 * runs the plugin once; a plugin that fails is a retry after backoff).
 *
 * Threads: all on the reflector thread (curl callbacks too) but reflector_add/all_synced/free;
 * one lock, <qlock>, for the add queue; none is held while logging or calling curl.
 */
#include "proxy/reflector.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>
#include <curl/curl.h>

#include "cache/blob.h"
#include "cache/bug.h"
#include "cache/gotext.h"
#include "cache/resource.h"
#include "cache/rv.h"
#include "cache/sbuf.h"
#include "proxy/apires.h"
#include "proxy/kube_json.h"
#include "proxy/kube_meta.h"
#include "proxy/log.h"
#include "proxy/reqstats.h"
#include "proxy/upstream.h"

#define REFLECTOR_POLL_MS 1000           /* longest curl_multi_poll wait */
#define REFLECTOR_ERR_BODY_MAX 65536     /* bytes of a non-200 body kept for the log */
#define REFLECTOR_LINE_KEEP 65536        /* line buffer capacity kept between lines */
#define REFLECTOR_SHORT_WATCH_MS 1000    /* a watch ending this fast with no event is a failure */
#define REFLECTOR_WATCH_GRACE_MS 60000   /* open this long past timeoutSeconds: wedged */
#define REFLECTOR_WATCH_HEADERS_MS 10000 /* a watch unanswered this long: abandoned, backoff */
#define REFLECTOR_LIST_STALL_S 120L      /* a LIST receiving nothing this long is abandoned */
#define REFLECTOR_RV_MAX 64              /* bytes of an RV string we echo back (digits) */
#define REFLECTOR_FAILS_MAX 64       /* failure count saturates (the delay is capped long before) */
#define REFLECTOR_LOG_MS 1000        /* one re-watch record per resource per interval */
#define REFLECTOR_RELIST_GAP_MS 1000 /* 410 relists of one resource start this far apart */
#define REFLECTOR_RETRY_AFTER_MAX_S 600 /* a longer Retry-After is taken as this */
#define REFLECTOR_WARM_SETTLE_MS 1000   /* a resumed watch open this long has caught up */

enum rsync_state { RSYNC_IDLE = 0, RSYNC_LISTING, RSYNC_WATCHING };

/* What the running transfer's callbacks decided; acted upon when it ends. */
enum rsync_verdict {
    VERDICT_NONE = 0, /* decide from the curl result and the HTTP status */
    VERDICT_EXPIRED,  /* a 410 ERROR event: already logged */
    VERDICT_RELIST,   /* bad upstream data: already logged */
    VERDICT_BACKOFF,  /* retry the same step after backoff: already logged */
};

/* One resource being synced. All fields: reflector thread only (after the add queue). */
struct rsync {
    struct reflector *r;
    struct apires *ar;         /* lent by reflector_add's caller */
    char *path;                /* /api/v1/pods or /apis/g/v/plural */
    CURL *easy;                /* reused for every request of this resource */
    struct curl_slist *hdrs;   /* of the running transfer */
    struct upstream_call call; /* of the running transfer: its credential, curl's error */
    enum rsync_state state;
    bool next_is_watch; /* IDLE: what starts at due_ms */
    bool verify;        /* before the next watch, check upstream's RV has not gone backwards */
    bool checking;      /* the running LIST is that check (limit=1) */
    int64_t due_ms;
    unsigned fails;         /* consecutive failures, for backoff */
    int64_t list_start_ms;  /* when the last LIST (page 1) was sent; 0 = never */
    int64_t req_start_ms;   /* when the running transfer was sent */
    int64_t retry_after_ms; /* Retry-After of the running transfer's answer; 0 = none */
    bool synced;            /* the first list completed */
    bool
        parked; /* never listed, upstream refuses (403/404): forwarded meanwhile, counted settled */
    bool warm;  /* resumed from a loaded state, not yet fresh (state.h) */
    reflector_load_fn *load; /* run once before the first request (reflector_add_loading) */
    void *load_ctx;
    long http_code; /* of the running transfer, once its headers are in */
    enum rsync_verdict verdict;
    struct sbuf body; /* LIST page body (max_list_bytes), or a non-200 body (capped) */
    /* LIST in progress */
    struct blob **items; /* one reference each */
    size_t n_items;
    size_t cap_items;
    size_t items_bytes; /* JSON bytes of items[] */
    char *cont;         /* continue token of the next page; NULL = first page */
    unsigned pages;
    uint64_t list_rv;
    char list_rv_str[REFLECTOR_RV_MAX];
    /* WATCH */
    uint64_t rv; /* last RV seen: list RV, then events and bookmarks */
    char rv_str[REFLECTOR_RV_MAX];
    struct sbuf line;       /* partial watch line, at most max_line_bytes */
    int64_t watch_start_ms; /* when the request was sent */
    int64_t watch_open_ms;  /* when 200 headers arrived; 0 = not open */
    int64_t watch_deadline_ms;
    uint64_t watch_events; /* lines processed on this stream */
    struct log_ratelimit rl;
    struct rsync *next;
};

struct reflector {
    struct upstream *up; /* lent */
    struct reflector_opts o;
    CURLM *multi;
    pthread_t thread;
    atomic_bool stop;       /* any thread: set by reflector_free */
    atomic_size_t n_added;  /* any thread: reflector_add calls */
    atomic_size_t n_synced; /* written by the thread: resources past their first list */
    pthread_mutex_t qlock;
    struct rsync *queue; /* under qlock: added, not yet taken by the thread */
    struct rsync *syncs; /* reflector thread only */
    uint64_t rng;        /* reflector thread only */
};

/* ---- small helpers ----------------------------------------------------------------------- */

/* xorshift64*: jitter and watch timeouts need spread, not secrecy. */
static uint64_t rng_next(struct reflector *r)
{
    r->rng ^= r->rng >> 12;
    r->rng ^= r->rng << 25;
    r->rng ^= r->rng >> 27;
    return r->rng * 2685821657736338717ULL;
}

/* Delay before retry number <n> (>= 1): d = min * 2^(n-1) capped at max, uniform in
 * [d, min(2d, max)]. */
static int64_t backoff_ms(struct reflector *r, unsigned n)
{
    int64_t d = r->o.backoff_min_ms;
    int64_t hi;

    for (unsigned i = 1; i < n && d < r->o.backoff_max_ms; i++) {
        d *= 2;
    }
    if (d > r->o.backoff_max_ms) {
        d = r->o.backoff_max_ms;
    }
    hi = d * 2 < r->o.backoff_max_ms ? d * 2 : r->o.backoff_max_ms;
    return d + (int64_t)(rng_next(r) % (uint64_t)(hi - d + 1));
}

static const char *rsync_name(const struct rsync *s)
{
    return resource_name(s->ar->res);
}

static void rsync_schedule(struct rsync *s, bool watch, int64_t due_ms)
{
    s->state = RSYNC_IDLE;
    s->next_is_watch = watch;
    s->due_ms = due_ms;
}

/*
 * The first sync: the first list completed, or a watch resumed from a loaded state has caught
 * up (<how> says which, for the log). /readyz counts it; a warm cache stops being "not fresh".
 */
static void rsync_synced(struct rsync *s, const char *how)
{
    if (s->warm) {
        s->warm = false;
        atomic_store(&s->ar->ctr.up_stale, 0);
        log_info("reflector", "resource=%s rv=%s how=%s msg=\"%s\"", resource_name(s->ar->res),
                 s->rv_str, how,
                 strcmp(how, "list") == 0 ? "loaded state replaced by a relist"
                                          : "resumed watch caught up: fresh");
    }
    if (!s->synced) {
        s->synced = true;
        if (!s->parked) { /* a parked resource was counted settled when it was parked */
            atomic_fetch_add(&s->r->n_synced, 1);
        }
    }
}

/*
 * The first LIST of <s> was refused with 403 (kwp's identity may not list it) or 404 (upstream
 * does not serve it): until a list succeeds the resource is not cached (its requests are
 * forwarded as the caller, kwp_not_cached 1) and holds nobody's readiness, since one request
 * from any allowed caller for a resource kwp may not read must not take every replica out of
 * its Service. The list is retried with the usual backoff: an RBAC binding applied a moment
 * after kwp started is picked up.
 */
static void rsync_park(struct rsync *s)
{
    if (s->parked) {
        return;
    }
    s->parked = true;
    log_warn("reflector",
             "resource=%s code=%ld msg=\"upstream refuses to list it: not cached, its requests are "
             "forwarded upstream until a list succeeds (grant kwp get/list/watch on it)\"",
             rsync_name(s), s->http_code);
    atomic_store(&s->ar->ctr.not_cached, 1);
    atomic_fetch_add(&s->r->n_synced, 1);
}

/* A state loaded at <rv> (> 0): watch from it instead of listing; a 410 relists as usual. */
static void rsync_resume(struct rsync *s, uint64_t rv)
{
    s->rv = rv;
    rv_format(rv, s->rv_str);
    s->warm = true;
    atomic_store(&s->ar->ctr.up_stale, 1);
    rsync_schedule(s, true, 0);
}

static void items_drop(struct rsync *s)
{
    for (size_t i = 0; i < s->n_items; i++) {
        blob_unref(s->items[i]);
    }
    s->n_items = 0;
    s->items_bytes = 0;
    free(s->cont);
    s->cont = NULL;
    s->pages = 0;
}

/* Whether the JSON string literal q[0..n) holds a \u0000 escape (walks escapes in pairs, so
 * an escaped backslash followed by "u0000" is not one). */
static bool has_escaped_nul(const char *q, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        if (q[i] != '\\') {
            continue;
        }
        if (q[i + 1] == 'u' && i + 5 < n && memcmp(q + i + 2, "0000", 4) == 0) {
            return true;
        }
        i++; /* skip the escaped character */
    }
    return false;
}

/*
 * The string member <key> of the JSON object data[0..len), unescaped (cJSON on the small
 * value span only). Returns 0 with a heap copy in *out (caller frees), -ENOENT when absent or
 * null, -EPROTO when malformed, not a string or longer than <max>.
 */
static int json_str_member(const char *data, size_t len, const char *key, size_t max, char **out)
{
    size_t off, vlen;
    cJSON *v = NULL;
    int rc;

    *out = NULL;
    rc = kube_json_member(data, len, key, &off, &vlen);
    if (rc != 0) {
        return rc;
    }
    if (vlen == 4 && memcmp(data + off, "null", 4) == 0) {
        return -ENOENT;
    }
    if (data[off] != '"' || vlen > max + 2) {
        return -EPROTO;
    }
    if (memchr(data + off, '\\', vlen) == NULL) {
        /* Not xstrndup: data is not NUL-terminated and strict string checks would object. */
        *out = xmalloc(vlen - 1);
        memcpy(*out, data + off + 1, vlen - 2);
        (*out)[vlen - 2] = '\0';
        return 0;
    }
    if (has_escaped_nul(data + off, vlen)) {
        return -EPROTO; /* cJSON would cut the string there: "12\u0000" must not read as 12 */
    }
    v = cJSON_ParseWithLength(data + off, vlen);
    rc = cJSON_IsString(v) ? 0 : -EPROTO;
    if (rc == 0) {
        *out = xstrdup(v->valuestring);
    }
    cJSON_Delete(v);
    return rc;
}

/* metadata.resourceVersion of the object data[0..len): a non-zero RV (Go ParseUint syntax).
 * Returns 0 with *rv and <rv_str> filled, or -EPROTO. */
static int meta_rv(const char *data, size_t len, uint64_t *rv, char rv_str[REFLECTOR_RV_MAX])
{
    size_t off, mlen;
    char *s = NULL;
    int rc;

    if (kube_json_member(data, len, "metadata", &off, &mlen) != 0 || data[off] != '{' ||
        json_str_member(data + off, mlen, "resourceVersion", REFLECTOR_RV_MAX - 1, &s) != 0) {
        return -EPROTO;
    }
    rc = rv_parse(s, rv) == 0 && *rv > 0 ? 0 : -EPROTO;
    if (rc == 0) {
        snprintf(rv_str, REFLECTOR_RV_MAX, "%s", s);
    }
    free(s);
    return rc;
}

/* The "message" of a Status body (quoted for a log line) into <out>; "" when there is none. */
static void status_message(const char *body, size_t len, char *out, size_t cap)
{
    char *msg = NULL;
    struct sbuf q;

    sbuf_init_fixed(&q, out, cap);
    if (len > 0 && json_str_member(body, len, "message", 1024, &msg) == 0) {
        gotext_json_quote(&q, msg, strlen(msg));
    }
    free(msg);
    if (out[0] == '\0') {
        snprintf(out, cap, "\"\"");
    }
}

/* Logs a failure of <s> at most once per REFLECTOR_LOG_MS (reconnect storms). */
#define RSYNC_WARN(s, fmt, ...)                                                                    \
    log_ratelimited(&(s)->rl, REFLECTOR_LOG_MS, LOG_LEVEL_WARN, "reflector",                       \
                    "resource=%s rv=%s " fmt, rsync_name(s), (s)->rv_str, __VA_ARGS__)

/* ---- next steps ---------------------------------------------------------------------------- */

/*
 * Relists <s>: the cache goes unready until the list completes (as the cacher's Pending).
 * <expired> (a 410: upstream compacted past our RV, nothing is wrong with it) relists now,
 * REFLECTOR_RELIST_GAP_MS after the previous list at the earliest, without counting a failure;
 * bad upstream data counts one and backs off while it repeats.
 */
static void rsync_relist(struct rsync *s, int64_t now, bool expired)
{
    int64_t delay;

    if (expired) {
        int64_t next = s->list_start_ms + REFLECTOR_RELIST_GAP_MS;

        delay = s->list_start_ms != 0 && next > now ? next - now : 0;
    } else {
        s->fails += s->fails < REFLECTOR_FAILS_MAX;
        delay = s->fails <= 1 ? 0 : backoff_ms(s->r, s->fails - 1);
    }
    resource_set_unready(s->ar->res, now);
    items_drop(s);
    rsync_schedule(s, false, now + delay);
}

/*
 * Retries the same step (<watch> or LIST from page 1) after backoff, or after the answer's
 * Retry-After when it had one (client-go's rest client waits exactly that long), counting an
 * upstream error; logs "<what> failed" with <code> and the quoted <detail> unless <what> is
 * NULL (the callback already logged). Every failure is logged: the backoff bounds their rate.
 */
static void rsync_retry(struct rsync *s, bool watch, int64_t now, const char *what, int code,
                        const char *detail)
{
    int64_t delay;

    s->fails += s->fails < REFLECTOR_FAILS_MAX;
    delay = s->retry_after_ms > 0 ? s->retry_after_ms : backoff_ms(s->r, s->fails);
    atomic_fetch_add(&s->ar->ctr.up_errors, 1);
    if (!watch) {
        items_drop(s);
    }
    if (what != NULL) {
        log_warn("reflector",
                 "resource=%s rv=%s code=%d delay_ms=%lld%s err=%s msg=\"%s failed, backing off\"",
                 rsync_name(s), s->rv_str, code, (long long)delay,
                 s->retry_after_ms > 0 ? " retry_after=true" : "", detail, what);
    }
    rsync_schedule(s, watch, now + delay);
}

/* ---- watch lines --------------------------------------------------------------------------- */

/* A protocol error on the stream: one log line, then the transfer is aborted and relists. */
static int watch_bad(struct rsync *s, const char *why)
{
    atomic_fetch_add(&s->ar->ctr.up_errors, 1);
    log_warn("reflector", "resource=%s rv=%s err=\"%s\" msg=\"bad watch data, relisting\"",
             rsync_name(s), s->rv_str, why);
    s->verdict = VERDICT_RELIST;
    return -EPROTO;
}

static int watch_object(struct rsync *s, enum watch_type type, const char *obj, size_t len)
{
    struct blob *b;
    char *stripped = NULL;
    size_t slen = 0;
    int rc;

    /* Built-in list items carry no kind/apiVersion: store the event object in that form. */
    if (s->ar->kind.builtin) {
        stripped = kube_json_strip_type_meta_valid(obj, len, &slen);
        if (stripped == NULL) {
            return watch_bad(s, "malformed object");
        }
        obj = stripped;
        len = slen;
    }
    b = kube_meta_blob_valid(obj, len, s->ar->kind.fields); /* event_parse validated it */
    free(stripped);
    if (b == NULL) {
        return watch_bad(s, "object without metadata.name");
    }
    if (b->rv == 0) {
        blob_unref(b);
        return watch_bad(s, "object without a valid resourceVersion");
    }
    if (b->rv <= s->rv) {
        blob_unref(b);
        return watch_bad(s, "resourceVersion not increasing");
    }
    /* Counters move before the cache does, so whoever sees the new state sees them too. */
    atomic_fetch_add(&s->ar->ctr.up_events, 1);
    rc = resource_apply(s->ar->res, type, b, b->rv, clock_mono_ms());
    if (rc == 0) {
        s->rv = b->rv;
        /* Echo upstream's string; only an absurdly zero-padded one is re-formatted. */
        if (strlen(b->rv_str) < sizeof(s->rv_str)) {
            memcpy(s->rv_str, b->rv_str, strlen(b->rv_str) + 1);
        } else {
            rv_format(b->rv, s->rv_str);
        }
    }
    blob_unref(b);
    return rc == 0 ? 0 : watch_bad(s, "resourceVersion not increasing");
}

static int watch_bookmark(struct rsync *s, const char *obj, size_t len)
{
    char rv_str[REFLECTOR_RV_MAX];
    uint64_t rv;

    if (meta_rv(obj, len, &rv, rv_str) != 0) {
        return watch_bad(s, "bookmark without a valid resourceVersion");
    }
    if (rv < s->rv) {
        return watch_bad(s, "bookmark resourceVersion going backwards");
    }
    atomic_fetch_add(&s->ar->ctr.up_bookmarks, 1);
    resource_progress(s->ar->res, rv);
    s->rv = rv;
    memcpy(s->rv_str, rv_str, sizeof(rv_str));
    if (s->warm) {
        rsync_synced(s, "bookmark"); /* upstream's rv as of now: everything before it is in */
    }
    return 0;
}

/* An ERROR event ends the stream: 410 relists, anything else re-watches after backoff (which
 * counts the error). */
static int watch_error(struct rsync *s, const char *obj, size_t len)
{
    char msg[512];
    size_t off, vlen;
    long code = 0;
    char *reason = NULL;

    if (kube_json_member(obj, len, "code", &off, &vlen) == 0) {
        /* Not strtol: the line is not NUL-terminated. Kubernetes codes are small integers. */
        for (size_t i = 0; i < vlen && i < 6 && obj[off + i] >= '0' && obj[off + i] <= '9'; i++) {
            code = code * 10 + (obj[off + i] - '0');
        }
    }
    (void)json_str_member(obj, len, "reason", 64, &reason);
    status_message(obj, len, msg, sizeof(msg));
    if (code == 410 ||
        (reason != NULL && (!strcmp(reason, "Expired") || !strcmp(reason, "Gone")))) {
        log_warn("reflector", "resource=%s rv=%s code=%ld err=%s msg=\"watch expired, relisting\"",
                 rsync_name(s), s->rv_str, code, msg);
        s->verdict = VERDICT_EXPIRED;
    } else {
        log_warn("reflector",
                 "resource=%s rv=%s code=%ld err=%s msg=\"watch error event, re-watching after "
                 "backoff\"",
                 rsync_name(s), s->rv_str, code, msg);
        s->verdict = VERDICT_BACKOFF;
    }
    free(reason);
    return -ECANCELED;
}

/* One complete line (without its '\n'). Returns 0 to go on, <0 to end the stream. */
static int watch_line(struct rsync *s, const char *line, size_t len)
{
    struct kube_event ev;
    size_t i = 0;

    while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) {
        i++;
    }
    if (i == len) {
        return 0; /* a blank keep-alive line */
    }
    if (kube_json_event_parse(line, len, &ev) != 0) {
        return watch_bad(s, "malformed watch event");
    }
    s->watch_events++;
    switch (ev.type) {
    case WATCH_ADDED:
    case WATCH_MODIFIED:
    case WATCH_DELETED:
        return watch_object(s, ev.type, line + ev.obj_off, ev.obj_len);
    case WATCH_BOOKMARK:
        return watch_bookmark(s, line + ev.obj_off, ev.obj_len);
    default:
        return watch_error(s, line + ev.obj_off, ev.obj_len);
    }
}

/*
 * Frames curl's arbitrary chunks into lines. A line wholly inside the chunk is parsed in place;
 * only a line split across chunks is copied, into a buffer capped at max_line_bytes.
 */
static int watch_feed(struct rsync *s, const char *p, size_t n)
{
    size_t max = s->r->o.max_line_bytes;
    int rc = 0;

    while (n > 0 && rc == 0) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl != NULL ? (size_t)(nl - p) : n;

        if (s->line.len + take > max) {
            return watch_bad(s, "watch line too long");
        }
        if (nl != NULL && s->line.len == 0) {
            rc = watch_line(s, p, take);
        } else {
            sbuf_put(&s->line, p, take);
            if (nl != NULL) {
                rc = watch_line(s, s->line.p, s->line.len);
                sbuf_clear(&s->line, REFLECTOR_LINE_KEEP);
            }
        }
        if (nl == NULL) {
            break;
        }
        p = nl + 1;
        n -= take + 1;
    }
    return rc;
}

/* ---- curl callbacks ------------------------------------------------------------------------ */

/*
 * A Retry-After header value (after the colon, not NUL-terminated) in ms: delay-seconds as
 * kube-apiserver sends them (client-go's checkWait reads only that form); an HTTP-date or
 * anything else is 0 (our own backoff then). Capped at REFLECTOR_RETRY_AFTER_MAX_S.
 */
static int64_t retry_after_ms(const char *v, size_t n)
{
    int64_t secs = 0;
    size_t i = 0, digits = 0;

    while (i < n && (v[i] == ' ' || v[i] == '\t')) {
        i++;
    }
    for (; i < n && v[i] >= '0' && v[i] <= '9'; i++, digits++) {
        if (secs < REFLECTOR_RETRY_AFTER_MAX_S) {
            secs = secs * 10 + (v[i] - '0');
        }
    }
    while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == '\r' || v[i] == '\n')) {
        i++;
    }
    if (digits == 0 || i != n) {
        return 0;
    }
    return (secs < REFLECTOR_RETRY_AFTER_MAX_S ? secs : REFLECTOR_RETRY_AFTER_MAX_S) * 1000;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
    struct rsync *s = ud;
    size_t n = size * nmemb;
    long code = 0;

    if (n > 12 && strncasecmp(p, "Retry-After:", 12) == 0) {
        s->retry_after_ms = retry_after_ms(p + 12, n - 12);
    }
    /* The blank line ending a header block; 1xx blocks are followed by the real one. */
    if (n <= 2 && n > 0 && (p[0] == '\r' || p[0] == '\n')) {
        curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &code);
        if (code >= 200) {
            s->http_code = code;
            if (s->state == RSYNC_WATCHING && code == 200) {
                s->watch_open_ms = clock_mono_ms();
                atomic_store(&s->ar->ctr.up_watch_open, 1);
            }
        }
    }
    return n;
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *ud)
{
    struct rsync *s = ud;
    size_t n = size * nmemb;

    if (s->http_code == 0) {
        curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->http_code);
    }
    if (s->http_code != 200) {
        /* Keep the head of an error body for the log; drop the rest. */
        size_t room = REFLECTOR_ERR_BODY_MAX - s->body.len;

        sbuf_put(&s->body, p, n < room ? n : room);
        return n;
    }
    if (s->state == RSYNC_LISTING) {
        if (n > s->r->o.max_list_bytes - s->body.len) {
            RSYNC_WARN(s, "max_list_bytes=%zu msg=\"list page too large, backing off\"",
                       s->r->o.max_list_bytes);
            s->verdict = VERDICT_BACKOFF;
            return 0;
        }
        sbuf_put(&s->body, p, n);
        return n;
    }
    return watch_feed(s, p, n) == 0 ? n : 0;
}

/* ---- starting a request -------------------------------------------------------------------- */

static int rsync_start(struct rsync *s, int64_t now)
{
    struct reflector *r = s->r;
    char query[REFLECTOR_RV_MAX + 128];
    char *pq = NULL;
    char *esc = NULL;
    size_t pq_len;
    struct curl_slist *h;
    int rc = -ENOMEM;

    s->checking = s->next_is_watch && s->verify;
    if (s->checking) {
        /* A consistent LIST of one item: its RV is upstream's current one. */
        s->next_is_watch = false;
        snprintf(query, sizeof(query), "limit=1");
    } else if (s->next_is_watch) {
        int64_t t =
            r->o.watch_timeout_min_s + (int64_t)(rng_next(r) % (uint64_t)r->o.watch_timeout_min_s);

        snprintf(query, sizeof(query),
                 "allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%lld&watch=true",
                 s->rv_str, (long long)t);
        s->watch_start_ms = now;
        s->watch_open_ms = 0;
        s->watch_deadline_ms = now + t * 1000 + REFLECTOR_WATCH_GRACE_MS;
        s->watch_events = 0;
        sbuf_clear(&s->line, REFLECTOR_LINE_KEEP);
    } else {
        if (s->cont != NULL) {
            esc = curl_easy_escape(s->easy, s->cont, 0);
            if (esc == NULL) {
                goto out;
            }
        }
        snprintf(query, sizeof(query), "limit=%lld", (long long)r->o.page_size);
    }
    /* Keys sorted as Go's url.Values.Encode writes them: continue, limit. */
    pq_len = strlen(s->path) + strlen(query) + (esc != NULL ? strlen(esc) + 16 : 0) + 2;
    pq = xmalloc(pq_len);
    snprintf(pq, pq_len, "%s?%s%s%s%s", s->path, esc != NULL ? "continue=" : "",
             esc != NULL ? esc : "", esc != NULL ? "&" : "", query);

    curl_easy_reset(s->easy);
    s->hdrs = NULL;
    rc = upstream_begin(r->up, s->easy, pq, UPSTREAM_DECODE, &s->hdrs, &s->call);
    if (rc != 0) {
        goto out;
    }
    h = curl_slist_append(s->hdrs, "Accept: application/json");
    if (h == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    s->hdrs = h;
    curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, s->hdrs);
    curl_easy_setopt(s->easy, CURLOPT_USERAGENT, "kwp-reflector");
    curl_easy_setopt(s->easy, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(s->easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(s->easy, CURLOPT_HEADERDATA, s);
    curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
    if (!s->next_is_watch) {
        /* Never on watches: an idle healthy watch is silent between bookmarks; its end is
         * bounded by timeoutSeconds plus REFLECTOR_WATCH_GRACE_MS instead. */
        curl_easy_setopt(s->easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(s->easy, CURLOPT_LOW_SPEED_TIME, REFLECTOR_LIST_STALL_S);
    }
    s->http_code = 0;
    s->retry_after_ms = 0;
    s->verdict = VERDICT_NONE;
    if (!s->next_is_watch && s->cont == NULL && !s->checking) {
        s->list_start_ms = now;
    }
    s->req_start_ms = now;
    sbuf_clear(&s->body, REFLECTOR_ERR_BODY_MAX);
    if (curl_multi_add_handle(r->multi, s->easy) != CURLM_OK) {
        rc = -ENOMEM;
        goto out;
    }
    s->state = s->next_is_watch ? RSYNC_WATCHING : RSYNC_LISTING;
    atomic_fetch_add(s->next_is_watch ? &s->ar->ctr.up_watches : &s->ar->ctr.up_lists, 1);
    rc = 0;
out:
    if (rc != 0) {
        curl_slist_free_all(s->hdrs);
        s->hdrs = NULL;
    }
    curl_free(esc);
    free(pq);
    return rc;
}

/* ---- ending a request ---------------------------------------------------------------------- */

/* Parses one LIST page body into s->items; the first page sets the list RV. */
static int list_page(struct rsync *s, const char **why)
{
    const char *body = s->body.p;
    size_t len = s->body.len;
    size_t md_off, md_len, it_off, it_len, pos = 0, e_off, e_len;
    char *rv = NULL;
    int rc;

    *why = "malformed list body";
    if (len == 0 || kube_json_member(body, len, "metadata", &md_off, &md_len) != 0 ||
        body[md_off] != '{' || kube_json_member(body, len, "items", &it_off, &it_len) != 0) {
        return -EPROTO;
    }
    if (s->pages == 0) {
        *why = "list without a valid resourceVersion";
        if (json_str_member(body + md_off, md_len, "resourceVersion", REFLECTOR_RV_MAX - 1, &rv) !=
                0 ||
            rv_parse(rv, &s->list_rv) != 0 || s->list_rv == 0) {
            free(rv);
            return -EPROTO;
        }
        snprintf(s->list_rv_str, sizeof(s->list_rv_str), "%s", rv);
        free(rv);
    }
    free(s->cont);
    s->cont = NULL;
    *why = "malformed continue token";
    rc = json_str_member(body + md_off, md_len, "continue", 1 << 20, &s->cont);
    if (rc == -EPROTO) {
        return rc;
    }
    if (s->cont != NULL && s->cont[0] == '\0') {
        free(s->cont);
        s->cont = NULL;
    }
    if (it_len == 4 && memcmp(body + it_off, "null", 4) == 0) {
        it_len = 0;
    }
    *why = "list item is not an object with metadata.name";
    rc = 0;
    while (it_len > 0) {
        struct blob *b;

        rc = kube_json_array_next(body + it_off, it_len, &pos, &e_off, &e_len);
        if (rc != 1) {
            break;
        }
        b = kube_meta_blob_valid(body + it_off + e_off, e_len, s->ar->kind.fields); /* validated */
        if (b == NULL) {
            return -EPROTO;
        }
        if (s->n_items == s->cap_items) {
            s->cap_items = s->cap_items ? s->cap_items * 2 : 64;
            s->items = xrealloc(s->items, s->cap_items * sizeof(*s->items));
        }
        s->items[s->n_items++] = b;
        s->items_bytes += b->len;
    }
    if (rc != 0) {
        *why = "malformed list items";
        return -EPROTO;
    }
    s->pages++;
    return 0;
}

/* Why a transfer failed, quoted for a log line: curl's error, else the Status message. */
static void transfer_error(const struct rsync *s, CURLcode cc, char *msg, size_t cap)
{
    const char *e = s->call.errbuf[0] ? s->call.errbuf : curl_easy_strerror(cc);
    struct sbuf q;

    if (cc != CURLE_OK) {
        sbuf_init_fixed(&q, msg, cap);
        gotext_json_quote(&q, e, strlen(e));
    } else {
        status_message(s->body.p, s->body.len, msg, cap);
    }
}

/*
 * The end of the check before a re-watch (s->checking): upstream's RV below ours means its
 * history went backwards (etcd restored from a backup, or another cluster behind the same
 * address); a watch from our RV would be accepted and stay silent until upstream passes it,
 * losing every change until then. So relist, which resets the history and ends every
 * downstream watch, as kube-apiserver's cacher after a restart. A check that fails is retried
 * after backoff, as the watch it stands for.
 */
static void check_done(struct rsync *s, CURLcode cc, int64_t now)
{
    char msg[512], rv_str[REFLECTOR_RV_MAX];
    size_t md_off, md_len;
    char *rv = NULL;
    uint64_t up_rv = 0;
    bool ok;

    s->checking = false;
    if (s->verdict == VERDICT_BACKOFF) {
        rsync_retry(s, true, now, NULL, 0, NULL);
        return;
    }
    if (cc != CURLE_OK || s->http_code != 200) {
        transfer_error(s, cc, msg, sizeof(msg));
        rsync_retry(s, true, now, "resourceVersion check", (int)s->http_code, msg);
        return;
    }
    ok = kube_json_member(s->body.p, s->body.len, "metadata", &md_off, &md_len) == 0 &&
         s->body.p[md_off] == '{' &&
         json_str_member(s->body.p + md_off, md_len, "resourceVersion", REFLECTOR_RV_MAX - 1,
                         &rv) == 0 &&
         rv_parse(rv, &up_rv) == 0 && up_rv > 0;
    snprintf(rv_str, sizeof(rv_str), "%s", ok ? rv : "");
    free(rv);
    if (!ok) {
        rsync_retry(s, true, now, "resourceVersion check", 200,
                    "\"list without a valid resourceVersion\"");
        return;
    }
    s->verify = false;
    if (up_rv < s->rv) {
        atomic_fetch_add(&s->ar->ctr.up_errors, 1);
        log_warn("reflector",
                 "resource=%s rv=%s upstream_rv=%s msg=\"upstream resourceVersion went backwards "
                 "(restored from a backup?), relisting and resetting the history\"",
                 rsync_name(s), s->rv_str, rv_str);
        rsync_relist(s, now, true);
        return;
    }
    rsync_schedule(s, true, now);
}

/*
 * The list of <s> went over max_resource_bytes: the resource is not cached from now on. Its
 * requests are forwarded upstream (handlers_why_resource), its downstream watches are ended
 * (their clients re-watch, forwarded), and it no longer holds /readyz back. Its cache stays
 * empty and unready; nothing more is asked upstream for it.
 */
static void rsync_give_up(struct rsync *s)
{
    log_warn("reflector",
             "resource=%s rv=%s objects=%zu bytes=%zu max_resource_bytes=%zu msg=\"too large to "
             "cache: not cached, its requests are forwarded upstream\"",
             rsync_name(s), s->rv_str, s->n_items, s->items_bytes, s->r->o.max_resource_bytes);
    atomic_store(&s->ar->ctr.not_cached, 1);
    items_drop(s);
    resource_set_unready(s->ar->res, clock_mono_ms());
    resource_end_watches(s->ar->res);
    if (!s->synced) {
        s->synced = true; /* counted as settled: it holds nobody's readiness */
        atomic_fetch_add(&s->r->n_synced, 1);
    }
    rsync_schedule(s, false, INT64_MAX);
}

static void list_done(struct rsync *s, CURLcode cc, int64_t now)
{
    char msg[512];
    const char *why = NULL;
    bool kept;
    size_t n;

    if (s->checking) {
        check_done(s, cc, now);
        return;
    }
    if (s->verdict == VERDICT_BACKOFF) {
        rsync_retry(s, false, now, NULL, 0, NULL);
        return;
    }
    if (cc != CURLE_OK || s->http_code != 200) {
        if (cc == CURLE_OK && !s->synced && !s->warm &&
            (s->http_code == 403 || s->http_code == 404)) {
            rsync_park(s);
        }
        transfer_error(s, cc, msg, sizeof(msg));
        rsync_retry(s, false, now, "list", (int)s->http_code, msg);
        return;
    }
    if (list_page(s, &why) != 0) {
        snprintf(msg, sizeof(msg), "\"%s\"", why);
        rsync_retry(s, false, now, "list", 200, msg);
        return;
    }
    if (s->r->o.max_resource_bytes > 0 && s->items_bytes > s->r->o.max_resource_bytes) {
        rsync_give_up(s);
        return;
    }
    if (s->cont != NULL) {
        rsync_schedule(s, false, now);
        return;
    }
    n = s->n_items;
    if (s->synced && s->list_rv < resource_rv(s->ar->res)) {
        /* resource_replace resets the history whatever the RV: nothing from before is kept */
        log_warn("reflector",
                 "resource=%s rv=%s list_rv=%s msg=\"upstream resourceVersion went backwards "
                 "(restored from a backup?), history reset\"",
                 rsync_name(s), s->rv_str, s->list_rv_str);
    }
    s->verify = false;
    atomic_fetch_add(&s->ar->ctr.relists, 1);
    /* A relist that finds what the cache holds lost nothing: downstream watches go on (a
     * tier in front of this one sees no relist). Otherwise every watch ends (vector 39). */
    kept = s->synced && resource_relist(s->ar->res, s->items, n, s->list_rv, now) == 1;
    if (kept) {
        atomic_fetch_add(&s->ar->ctr.relists_kept, 1);
    } else if (!s->synced) {
        resource_replace(s->ar->res, s->items, n, s->list_rv, now);
    }
    if (s->parked) { /* listed at last: cached from now on */
        atomic_store(&s->ar->ctr.not_cached, 0);
        log_info("reflector", "resource=%s msg=\"listed at last: cached from now on\"",
                 rsync_name(s));
    }
    /* After the replace: /readyz must not report a cache that is not ready yet. */
    rsync_synced(s, "list");
    for (size_t i = 0; i < n; i++) {
        blob_unref(s->items[i]);
    }
    s->n_items = 0;
    s->rv = s->list_rv;
    memcpy(s->rv_str, s->list_rv_str, sizeof(s->rv_str));
    log_info("reflector", "resource=%s rv=%s objects=%zu pages=%u msg=\"%s\"", rsync_name(s),
             s->rv_str, n, s->pages,
             kept ? "relisted, state unchanged: history and watches kept"
                  : (atomic_load(&s->ar->ctr.relists) > 1 ? "relisted" : "synced"));
    s->pages = 0;
    rsync_schedule(s, true, now);
}

static void watch_done(struct rsync *s, CURLcode cc, int64_t now)
{
    char msg[512];
    bool established;

    atomic_store(&s->ar->ctr.up_watch_open, 0);
    sbuf_clear(&s->line, REFLECTOR_LINE_KEEP);
    if (s->verdict == VERDICT_RELIST || s->verdict == VERDICT_EXPIRED) {
        rsync_relist(s, now, s->verdict == VERDICT_EXPIRED);
        return;
    }
    if (s->verdict == VERDICT_BACKOFF) {
        rsync_retry(s, true, now, NULL, 0, NULL);
        return;
    }
    if (s->http_code == 410) {
        status_message(s->body.p, s->body.len, msg, sizeof(msg));
        log_warn("reflector", "resource=%s rv=%s code=410 err=%s msg=\"watch expired, relisting\"",
                 rsync_name(s), s->rv_str, msg);
        rsync_relist(s, now, true);
        return;
    }
    established = s->watch_open_ms != 0 && s->http_code == 200;
    /* The connection broke or failed: upstream may have restarted, perhaps from a backup. */
    if (cc != CURLE_OK) {
        s->verify = true;
    }
    if (!established) {
        /* refused, reset before the answer, non-200: the server is in trouble, back off */
        transfer_error(s, cc, msg, sizeof(msg));
        rsync_retry(s, true, now, "watch", (int)s->http_code, msg);
        return;
    }
    if (s->watch_events == 0 && now - s->watch_start_ms < REFLECTOR_SHORT_WATCH_MS) {
        /* client-go's VeryShortWatchError: re-watching at once would spin. */
        if (cc != CURLE_OK) {
            transfer_error(s, cc, msg, sizeof(msg));
        } else {
            snprintf(msg, sizeof(msg), "\"closed at once with no event\"");
        }
        rsync_retry(s, true, now, "watch", 200, msg);
        return;
    }
    /* An established watch that ended: what it delivered is applied; go on from there now. */
    s->fails = 0;
    if (cc != CURLE_OK) {
        transfer_error(s, cc, msg, sizeof(msg));
        RSYNC_WARN(s, "events=%llu err=%s msg=\"watch stream broken, re-watching\"",
                   (unsigned long long)s->watch_events, msg);
    } else {
        log_debug("reflector", "resource=%s rv=%s events=%llu msg=\"watch closed, re-watching\"",
                  rsync_name(s), s->rv_str, (unsigned long long)s->watch_events);
    }
    rsync_schedule(s, true, now);
}

/* Ends the transfer of <s> (finished, or abandoned with <cc>) and picks the next step. */
static void rsync_done(struct rsync *s, CURLcode cc, int64_t now)
{
    curl_multi_remove_handle(s->r->multi, s->easy);
    curl_slist_free_all(s->hdrs);
    s->hdrs = NULL;
    if (s->http_code == 0) {
        curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->http_code);
    }
    upstream_observe(s->easy, s->state == RSYNC_LISTING ? REQSTATS_LIST : REQSTATS_WATCH,
                     s->http_code);
    /* a 401 makes the exec credential stale: the next request (any resource's) gets a new one */
    upstream_done(s->r->up, &s->call, cc, s->http_code);
    if (s->state == RSYNC_LISTING) {
        list_done(s, cc, now);
    } else {
        watch_done(s, cc, now);
    }
    sbuf_clear(&s->body, REFLECTOR_ERR_BODY_MAX);
}

/* ---- the thread ---------------------------------------------------------------------------- */

static void rsync_free(struct rsync *s)
{
    if (s->state != RSYNC_IDLE) {
        curl_multi_remove_handle(s->r->multi, s->easy);
        atomic_store(&s->ar->ctr.up_watch_open, 0);
    }
    curl_easy_cleanup(s->easy);
    curl_slist_free_all(s->hdrs);
    items_drop(s);
    free(s->items);
    sbuf_free(&s->body);
    sbuf_free(&s->line);
    free(s->path);
    free(s);
}

/* Starts due steps, applies per-watch timers; returns the ms until the next due step. */
static int64_t reflector_timers(struct reflector *r, int64_t now)
{
    int64_t wait = REFLECTOR_POLL_MS;

    for (struct rsync *s = r->syncs; s != NULL; s = s->next) {
        if (s->load != NULL) {
            /* before its first request; the server already answers (429 until loaded) */
            uint64_t rv = s->load(s->load_ctx, s->ar);

            s->load = NULL;
            if (rv > 0) {
                rsync_resume(s, rv);
            }
            now = clock_mono_ms();
        }
        if (s->state == RSYNC_IDLE && s->due_ms <= now) {
            int rc = rsync_start(s, now);

            if (rc == -EACCES) {
                /* no credential (the exec plugin failed): execcred logged why */
                rsync_retry(s, s->next_is_watch, now, NULL, 0, NULL);
            } else if (rc != 0) {
                rsync_retry(s, s->next_is_watch, now, "request setup", 0, "\"out of memory\"");
            }
        }
        if (s->state == RSYNC_WATCHING) {
            if (s->watch_open_ms != 0 && now - s->watch_open_ms >= r->o.backoff_reset_ms) {
                s->fails = 0;
            }
            /* kube-apiserver sends a resumed watch's backlog right after the headers */
            if (s->warm && s->watch_open_ms != 0 &&
                now - s->watch_open_ms >= REFLECTOR_WARM_SETTLE_MS) {
                rsync_synced(s, "settled");
            }
            if (now >= s->watch_deadline_ms ||
                (s->http_code == 0 && now - s->req_start_ms >= REFLECTOR_WATCH_HEADERS_MS)) {
                /* wedged, or accepted and never answered */
                snprintf(s->call.errbuf, sizeof(s->call.errbuf), "%s",
                         s->http_code == 0 ? "no answer to the watch request"
                                           : "watch open past its timeout");
                rsync_done(s, CURLE_OPERATION_TIMEDOUT, now);
            }
        }
        if (s->state == RSYNC_IDLE && s->due_ms - now < wait) {
            wait = s->due_ms > now ? s->due_ms - now : 0;
        }
    }
    return wait;
}

static void *reflector_main(void *arg)
{
    struct reflector *r = arg;
    struct rsync *added;
    struct CURLMsg *m;
    int64_t wait;
    int running, left;

    while (!atomic_load(&r->stop)) {
        pthread_mutex_lock(&r->qlock);
        added = r->queue;
        r->queue = NULL;
        pthread_mutex_unlock(&r->qlock);
        while (added != NULL) {
            struct rsync *s = added;

            added = s->next;
            s->next = r->syncs;
            r->syncs = s;
        }
        wait = reflector_timers(r, clock_mono_ms());
        curl_multi_perform(r->multi, &running);
        for (;;) {
            char *priv = NULL;

            m = curl_multi_info_read(r->multi, &left);
            if (m == NULL) {
                break;
            }
            if (m->msg != CURLMSG_DONE) {
                continue;
            }
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
            BUG_ON(priv == NULL);
            rsync_done((struct rsync *)priv, m->data.result, clock_mono_ms());
            wait = 0; /* a next step may be due now */
        }
        curl_multi_poll(r->multi, NULL, 0, (int)wait, NULL);
    }
    while (r->syncs != NULL) {
        struct rsync *s = r->syncs;

        r->syncs = s->next;
        rsync_free(s);
    }
    return NULL;
}

/* ---- API ----------------------------------------------------------------------------------- */

struct reflector *reflector_new(struct upstream *up, const struct reflector_opts *o, char *err,
                                size_t err_len)
{
    struct reflector_opts d = {0};
    struct reflector *r;
    int prc;

    if (o != NULL) {
        d = *o;
    }
    if (d.page_size < 0 || d.watch_timeout_min_s < 0 || d.backoff_min_ms < 0 ||
        d.backoff_max_ms < 0 || d.backoff_reset_ms < 0) {
        snprintf(err, err_len, "reflector options must not be negative");
        return NULL;
    }
    d.page_size = d.page_size ? d.page_size : REFLECTOR_PAGE_SIZE_DEFAULT;
    d.max_line_bytes = d.max_line_bytes ? d.max_line_bytes : REFLECTOR_MAX_LINE_DEFAULT;
    d.max_list_bytes = d.max_list_bytes ? d.max_list_bytes : REFLECTOR_MAX_LIST_DEFAULT;
    d.watch_timeout_min_s =
        d.watch_timeout_min_s ? d.watch_timeout_min_s : REFLECTOR_WATCH_TIMEOUT_MIN_S_DEFAULT;
    d.backoff_min_ms = d.backoff_min_ms ? d.backoff_min_ms : REFLECTOR_BACKOFF_MIN_MS_DEFAULT;
    d.backoff_max_ms = d.backoff_max_ms ? d.backoff_max_ms : REFLECTOR_BACKOFF_MAX_MS_DEFAULT;
    d.backoff_reset_ms =
        d.backoff_reset_ms ? d.backoff_reset_ms : REFLECTOR_BACKOFF_RESET_MS_DEFAULT;
    if (d.backoff_min_ms > d.backoff_max_ms) {
        snprintf(err, err_len, "reflector backoff_min_ms %lld exceeds backoff_max_ms %lld",
                 (long long)d.backoff_min_ms, (long long)d.backoff_max_ms);
        return NULL;
    }
    r = xcalloc(1, sizeof(*r));
    r->up = up;
    r->o = d;
    r->rng = (uint64_t)clock_wall_ms() ^ ((uint64_t)(uintptr_t)r << 16) ^ 0x9e3779b97f4a7c15ULL;
    pthread_mutex_init(&r->qlock, NULL);
    r->multi = curl_multi_init();
    if (r->multi == NULL) {
        snprintf(err, err_len, "curl_multi_init failed");
        goto err_free;
    }
    prc = pthread_create(&r->thread, NULL, reflector_main, r);
    if (prc != 0) {
        snprintf(err, err_len, "cannot start the reflector thread: %s", strerror(prc));
        goto err_multi;
    }
    return r;

err_multi:
    curl_multi_cleanup(r->multi);
err_free:
    pthread_mutex_destroy(&r->qlock);
    free(r);
    return NULL;
}

void reflector_add(struct reflector *r, struct apires *ar)
{
    reflector_add_loading(r, ar, NULL, NULL);
}

void reflector_add_loading(struct reflector *r, struct apires *ar, reflector_load_fn *load,
                           void *ctx)
{
    struct rsync *s = xcalloc(1, sizeof(*s));
    const struct apires_kind *k = &ar->kind;
    size_t len = strlen(k->group) + strlen(k->version) + strlen(k->plural) + 16;

    s->r = r;
    s->ar = ar;
    sbuf_init(&s->body, r->o.max_list_bytes > REFLECTOR_ERR_BODY_MAX ? r->o.max_list_bytes
                                                                     : REFLECTOR_ERR_BODY_MAX);
    sbuf_init(&s->line, r->o.max_line_bytes);
    s->path = xmalloc(len);
    if (k->group[0] != '\0') {
        snprintf(s->path, len, "/apis/%s/%s/%s", k->group, k->version, k->plural);
    } else {
        snprintf(s->path, len, "/api/%s/%s", k->version, k->plural);
    }
    s->easy = curl_easy_init();
    BUG_ON(s->easy == NULL); /* only fails on OOM, which we treat as fatal */
    snprintf(s->rv_str, sizeof(s->rv_str), "0");
    rsync_schedule(s, false, 0);
    s->load = load;
    s->load_ctx = ctx;
    atomic_fetch_add(&r->n_added, 1);
    pthread_mutex_lock(&r->qlock);
    s->next = r->queue;
    r->queue = s;
    pthread_mutex_unlock(&r->qlock);
    curl_multi_wakeup(r->multi);
}

bool reflector_all_synced(struct reflector *r)
{
    return atomic_load(&r->n_synced) == atomic_load(&r->n_added);
}

void reflector_free(struct reflector *r)
{
    if (r == NULL) {
        return;
    }
    atomic_store(&r->stop, true);
    curl_multi_wakeup(r->multi);
    pthread_join(r->thread, NULL);
    /* Added after the thread's last look at the queue: never started. */
    while (r->queue != NULL) {
        struct rsync *s = r->queue;

        r->queue = s->next;
        rsync_free(s);
    }
    curl_multi_cleanup(r->multi);
    pthread_mutex_destroy(&r->qlock);
    free(r);
}
