/*
 * test_reflector.c - the reflector against a scripted fake kube-apiserver (libmicrohttpd on
 * 127.0.0.1:0 in this process): paginated LIST, then watch streams whose every byte the test
 * pushes (events, bookmarks, ERROR 410, clean ends, malformed and over-long lines). The
 * assertions read the cache through cache/resource.h only: stored bytes equal upstream's
 * bytes, the history replays the exact event sequence, and the fake's request log shows what
 * the reflector asked for (limit/continue, the rv of each re-watch, how many lists).
 *
 * Fake model: each watch request gets a stream id in arrival order; the test pushes actions
 * (bytes, or a clean end) to a given stream, so a stream the reflector abandoned never
 * swallows bytes meant for its successor. Thread-per-connection is fine for a fake: its
 * content reader simply blocks until the test pushes. Every wait has a deadline.
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/blob.h"
#include "cache/resource.h"
#include "proxy/apires.h"
#include "proxy/log.h"
#include "proxy/reflector.h"
#include "proxy/upstream.h"

#define WAIT_MS 5000

/* ---- the fake apiserver ------------------------------------------------------------------ */

#define FAKE_MAX_REQ 128
#define FAKE_MAX_STREAMS 32
#define FAKE_MAX_ACTIONS 32
#define FAKE_MAX_PAGES 4
#define FAKE_MAX_PATHS 2

struct fake_req {
    bool watch;
    int stream; /* watch answered with a stream: its id; else -1 */
    char path[128];
    bool has_rv;
    char rv[64];
    char cont[128];
    char limit[32];
    char timeout[32];
    char bookmarks[16];
    char accept[128];
    int64_t at_ms; /* CLOCK_MONOTONIC when it arrived */
};

struct fake_action {
    char *data; /* NULL = end the stream: cleanly, or cut (no terminal chunk) with <cut> */
    size_t len;
    bool cut;
};

struct fake;

struct fake_stream {
    struct fake *f;
    struct fake_action act[FAKE_MAX_ACTIONS];
    size_t n_act;
    size_t cur; /* next action */
    size_t off; /* bytes of act[cur] already sent */
};

struct fake_list {
    char path[128];
    char *pages[FAKE_MAX_PAGES];  /* bodies */
    char *tokens[FAKE_MAX_PAGES]; /* continue token that asks for each page ("" = first) */
    size_t n;
};

struct fake {
    struct MHD_Daemon *d;
    unsigned port;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct fake_req reqs[FAKE_MAX_REQ];
    size_t n_reqs;
    struct fake_stream streams[FAKE_MAX_STREAMS];
    size_t n_streams;
    struct fake_list lists[FAKE_MAX_PATHS];
    size_t n_lists;
    int watch_code;    /* one-shot: answer the next watch with this status */
    int watch_code_n;  /* ... and as many after it */
    int list_code;     /* one-shot: answer the next list with this status */
    int list_code_n;   /* ... and as many after it */
    int retry_after;   /* with the one-shot codes: a Retry-After header (seconds) when > 0 */
    char check_rv[32]; /* the RV a limit=1 LIST (the reflector's check) answers; "" = huge */
    bool stopping;
};

static void copy_arg(struct MHD_Connection *c, const char *key, char *out, size_t cap)
{
    const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);

    snprintf(out, cap, "%s", v != NULL ? v : "");
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct fake_stream *st = cls;
    struct fake *f = st->f;
    ssize_t n = 0;

    (void)pos;
    pthread_mutex_lock(&f->mu);
    for (;;) {
        if (f->stopping) {
            n = MHD_CONTENT_READER_END_WITH_ERROR;
            break;
        }
        if (st->cur < st->n_act) {
            struct fake_action *a = &st->act[st->cur];
            size_t k;

            if (a->data == NULL) {
                n = a->cut ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
                break;
            }
            k = a->len - st->off < max ? a->len - st->off : max;
            memcpy(buf, a->data + st->off, k);
            st->off += k;
            if (st->off == a->len) {
                st->cur++;
                st->off = 0;
            }
            n = (ssize_t)k;
            break;
        }
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&f->cv, &f->mu, &ts);
    }
    pthread_mutex_unlock(&f->mu);
    return n;
}

static enum MHD_Result fake_reply(struct MHD_Connection *c, unsigned code, const char *body,
                                  int retry_after)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result ret;
    char ra[16];

    MHD_add_response_header(r, "Content-Type", "application/json");
    if (retry_after > 0) {
        snprintf(ra, sizeof(ra), "%d", retry_after);
        MHD_add_response_header(r, "Retry-After", ra);
    }
    ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

static const char *status_body(int code)
{
    switch (code) {
    case 410:
        return "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
               "\"message\":\"too old resource version: 1 (2)\",\"reason\":\"Expired\","
               "\"code\":410}";
    default:
        return "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
               "\"message\":\"boom\",\"reason\":\"InternalError\",\"code\":500}";
    }
}

static enum MHD_Result fake_handler(void *cls, struct MHD_Connection *c, const char *url,
                                    const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **req_cls)
{
    struct fake *f = cls;
    struct fake_req *q;
    struct fake_stream *st = NULL;
    const char *page = NULL;
    const char *v;
    int code = 0, retry_after = 0;

    (void)method, (void)version, (void)upload_data, (void)upload_data_size, (void)req_cls;
    pthread_mutex_lock(&f->mu);
    cr_assert_lt(f->n_reqs, FAKE_MAX_REQ);
    q = &f->reqs[f->n_reqs];
    memset(q, 0, sizeof(*q));
    q->stream = -1;
    q->at_ms = clock_mono_ms();
    snprintf(q->path, sizeof(q->path), "%s", url);
    q->watch = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch") != NULL;
    q->has_rv = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "resourceVersion") != NULL;
    copy_arg(c, "resourceVersion", q->rv, sizeof(q->rv));
    copy_arg(c, "continue", q->cont, sizeof(q->cont));
    copy_arg(c, "limit", q->limit, sizeof(q->limit));
    copy_arg(c, "timeoutSeconds", q->timeout, sizeof(q->timeout));
    copy_arg(c, "allowWatchBookmarks", q->bookmarks, sizeof(q->bookmarks));
    v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
    snprintf(q->accept, sizeof(q->accept), "%s", v != NULL ? v : "");
    if (q->watch && f->watch_code != 0) {
        code = f->watch_code;
        if (f->watch_code_n > 0) {
            f->watch_code_n--;
        } else {
            f->watch_code = 0;
        }
        retry_after = f->retry_after;
    } else if (q->watch) {
        cr_assert_lt(f->n_streams, FAKE_MAX_STREAMS);
        q->stream = (int)f->n_streams;
        st = &f->streams[f->n_streams++];
        st->f = f;
    } else if (strcmp(q->limit, "1") == 0) {
        /* the reflector's check of upstream's RV before a re-watch: not a LIST that counts */
        static __thread char chk[256];

        snprintf(chk, sizeof(chk),
                 "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{"
                 "\"resourceVersion\":\"%s\"},\"items\":[]}",
                 f->check_rv[0] ? f->check_rv : "999999999");
        page = chk;
    } else if (f->list_code != 0) {
        code = f->list_code;
        if (f->list_code_n > 0) {
            f->list_code_n--;
        } else {
            f->list_code = 0;
        }
        retry_after = f->retry_after;
    } else {
        code = 404;
        for (size_t i = 0; i < f->n_lists; i++) {
            struct fake_list *l = &f->lists[i];

            for (size_t p = 0; strcmp(l->path, url) == 0 && p < l->n; p++) {
                if (strcmp(l->tokens[p], q->cont) == 0) {
                    page = l->pages[p];
                }
            }
        }
    }
    f->n_reqs++;
    pthread_cond_broadcast(&f->cv);
    if (page != NULL) {
        enum MHD_Result ret = fake_reply(c, 200, page, 0);

        pthread_mutex_unlock(&f->mu);
        return ret;
    }
    pthread_mutex_unlock(&f->mu);
    if (st != NULL) {
        struct MHD_Response *r =
            MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_reader, st, NULL);
        enum MHD_Result ret;

        MHD_add_response_header(r, "Content-Type", "application/json");
        ret = MHD_queue_response(c, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        return ret;
    }
    return fake_reply(c, (unsigned)code, status_body(code), retry_after);
}

static void fake_start(struct fake *f)
{
    const union MHD_DaemonInfo *info;

    memset(f, 0, sizeof(*f));
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    f->d =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
                         NULL, fake_handler, f, MHD_OPTION_SOCK_ADDR, NULL, MHD_OPTION_END);
    cr_assert_not_null(f->d);
    info = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT);
    cr_assert_not_null(info);
    f->port = info->port;
    cr_assert_gt(f->port, 0);
}

static void fake_stop(struct fake *f)
{
    pthread_mutex_lock(&f->mu);
    f->stopping = true;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    MHD_stop_daemon(f->d);
    for (size_t i = 0; i < f->n_streams; i++) {
        for (size_t a = 0; a < f->streams[i].n_act; a++) {
            free(f->streams[i].act[a].data);
        }
    }
    for (size_t i = 0; i < f->n_lists; i++) {
        for (size_t p = 0; p < f->lists[i].n; p++) {
            free(f->lists[i].pages[p]);
            free(f->lists[i].tokens[p]);
        }
    }
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
}

/* Sets (replaces) the pages served for <path>: page i answers continue token tokens[i]. */
static void fake_set_list(struct fake *f, const char *path, const char *const *pages,
                          const char *const *tokens, size_t n)
{
    struct fake_list *l = NULL;

    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->n_lists; i++) {
        if (strcmp(f->lists[i].path, path) == 0) {
            l = &f->lists[i];
        }
    }
    if (l == NULL) {
        cr_assert_lt(f->n_lists, FAKE_MAX_PATHS);
        l = &f->lists[f->n_lists++];
        snprintf(l->path, sizeof(l->path), "%s", path);
    }
    for (size_t p = 0; p < l->n; p++) {
        free(l->pages[p]);
        free(l->tokens[p]);
    }
    for (size_t p = 0; p < n; p++) {
        l->pages[p] = strdup(pages[p]);
        l->tokens[p] = strdup(tokens[p]);
    }
    l->n = n;
    pthread_mutex_unlock(&f->mu);
}

static void fake_push_raw(struct fake *f, int stream, const char *data, size_t len)
{
    struct fake_stream *st;

    pthread_mutex_lock(&f->mu);
    cr_assert_lt((size_t)stream, f->n_streams);
    st = &f->streams[stream];
    cr_assert_lt(st->n_act, FAKE_MAX_ACTIONS);
    st->act[st->n_act].data = NULL;
    if (data != NULL) {
        st->act[st->n_act].data = malloc(len);
        memcpy(st->act[st->n_act].data, data, len);
    }
    st->act[st->n_act].len = len;
    st->n_act++;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void fake_push(struct fake *f, int stream, const char *s)
{
    fake_push_raw(f, stream, s, strlen(s));
}

static void fake_end(struct fake *f, int stream)
{
    fake_push_raw(f, stream, NULL, 0);
}

/* Cuts <stream> after what was pushed: the connection closes without the terminal chunk. */
static void fake_cut(struct fake *f, int stream)
{
    pthread_mutex_lock(&f->mu);
    cr_assert_lt((size_t)stream, f->n_streams);
    cr_assert_lt(f->streams[stream].n_act, FAKE_MAX_ACTIONS);
    f->streams[stream].act[f->streams[stream].n_act++] = (struct fake_action){NULL, 0, true};
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void fake_set_retry_after(struct fake *f, int seconds)
{
    pthread_mutex_lock(&f->mu);
    f->retry_after = seconds;
    pthread_mutex_unlock(&f->mu);
}

static void fake_set_watch_code(struct fake *f, int code)
{
    pthread_mutex_lock(&f->mu);
    f->watch_code = code;
    pthread_mutex_unlock(&f->mu);
}

/* Answers the next <n> watches with <code>. */
static void fake_set_watch_codes(struct fake *f, int code, int n)
{
    pthread_mutex_lock(&f->mu);
    f->watch_code = code;
    f->watch_code_n = n - 1;
    pthread_mutex_unlock(&f->mu);
}

/* Answers the next <n> lists with <code>. */
static void fake_set_list_codes(struct fake *f, int code, int n)
{
    pthread_mutex_lock(&f->mu);
    f->list_code = code;
    f->list_code_n = n - 1;
    pthread_mutex_unlock(&f->mu);
}

static void fake_set_list_code(struct fake *f, int code)
{
    pthread_mutex_lock(&f->mu);
    f->list_code = code;
    pthread_mutex_unlock(&f->mu);
}

static void deadline_in(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Waits up to <ms> for the <nth> (0-based) watch request on <path>; a copy in *out. */
static bool fake_watch_within(struct fake *f, const char *path, size_t nth, int ms,
                              struct fake_req *out)
{
    struct timespec ts;
    bool found = false;

    deadline_in(&ts, ms);
    pthread_mutex_lock(&f->mu);
    for (;;) {
        size_t k = 0;

        for (size_t i = 0; i < f->n_reqs && !found; i++) {
            if (f->reqs[i].watch && strcmp(f->reqs[i].path, path) == 0 && k++ == nth) {
                *out = f->reqs[i];
                found = true;
            }
        }
        if (found || pthread_cond_timedwait(&f->cv, &f->mu, &ts) == ETIMEDOUT) {
            break;
        }
    }
    pthread_mutex_unlock(&f->mu);
    return found;
}

/* Waits for the <nth> (0-based) watch request on <path>; returns a copy of it. */
static struct fake_req fake_wait_watch(struct fake *f, const char *path, size_t nth)
{
    struct fake_req out;

    cr_assert(fake_watch_within(f, path, nth, WAIT_MS, &out), "watch request #%zu on %s never came",
              nth, path);
    return out;
}

/* Number of LISTs started on <path> (first-page requests). */
static size_t fake_lists(struct fake *f, const char *path)
{
    size_t n = 0;

    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->n_reqs; i++) {
        n += !f->reqs[i].watch && strcmp(f->reqs[i].path, path) == 0 && f->reqs[i].cont[0] == 0 &&
             strcmp(f->reqs[i].limit, "1") != 0;
    }
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* When the <nth> (0-based) first-page LIST on <path> arrived; -1 if it has not. */
static int64_t fake_list_at(struct fake *f, const char *path, size_t nth)
{
    int64_t at = -1;
    size_t k = 0;

    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->n_reqs && at < 0; i++) {
        if (!f->reqs[i].watch && strcmp(f->reqs[i].path, path) == 0 && f->reqs[i].cont[0] == 0 &&
            strcmp(f->reqs[i].limit, "1") != 0 && k++ == nth) {
            at = f->reqs[i].at_ms;
        }
    }
    pthread_mutex_unlock(&f->mu);
    return at;
}

static struct fake_req fake_req_at(struct fake *f, size_t i)
{
    struct fake_req q;

    pthread_mutex_lock(&f->mu);
    cr_assert_lt(i, f->n_reqs);
    q = f->reqs[i];
    pthread_mutex_unlock(&f->mu);
    return q;
}

/* ---- harness ----------------------------------------------------------------------------- */

#define PODS "/api/v1/pods"
#define WIDGETS "/apis/example.com/v1/widgets"

/* Polls <cond> every 2 ms for up to WAIT_MS, then asserts it. */
#define WAIT_FOR(cond)                                                                             \
    do {                                                                                           \
        for (int waited_ = 0; !(cond) && waited_ < WAIT_MS; waited_ += 2) {                        \
            usleep(2000);                                                                          \
        }                                                                                          \
        cr_assert(cond, "timed out waiting for: %s", #cond);                                       \
    } while (0)

/* Items with bytes a re-encoder would change: spacing, a 20-digit integer, 1.50, escapes. */
static const char *const ITEM[] = {
    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns1\",\"resourceVersion\":\"90\","
    "\"labels\":{\"app\":\"x\"}},\"spec\":{\"nodeName\":\"n1\",\"big\":12345678901234567890},"
    "\"status\":{\"phase\":\"Running\"}}",
    "{ \"metadata\" : { \"name\":\"b\", \"namespace\":\"ns1\", \"resourceVersion\":\"91\" } ,"
    " \"spec\":{\"x\":1.50} }",
    "{\"metadata\":{\"name\":\"c\",\"namespace\":\"ns2\",\"resourceVersion\":\"92\"},"
    "\"spec\":{\"s\":\"\\u003cb\\u003e\"}}",
    "{\"metadata\":{\"name\":\"d\",\"namespace\":\"ns2\",\"resourceVersion\":\"93\"}}",
    "{\"metadata\":{\"name\":\"e\",\"namespace\":\"ns3\",\"resourceVersion\":\"99\"},"
    "\"spec\":{\"e\":[1, 2,3]}}",
};
static const char *const ITEM_KEY[] = {"ns1/a", "ns1/b", "ns2/c", "ns2/d", "ns3/e"};

/* A list page; <cont> NULL = no continue member. Caller frees. */
static char *page_json(const char *kind, const char *rv, const char *cont, const char *const *items,
                       size_t n)
{
    size_t cap = 512;
    char *out;
    size_t o;

    for (size_t i = 0; i < n; i++) {
        cap += strlen(items[i]) + 1;
    }
    out = malloc(cap);
    o = (size_t)snprintf(out, cap,
                         "{\"kind\":\"%s\",\"apiVersion\":\"v1\",\"metadata\":"
                         "{\"resourceVersion\":\"%s\"%s%s%s},\"items\":[",
                         kind, rv, cont ? ",\"continue\":\"" : "", cont ? cont : "",
                         cont ? "\"" : "");
    for (size_t i = 0; i < n; i++) {
        o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? "," : "", items[i]);
    }
    snprintf(out + o, cap - o, "]}");
    return out;
}

/* Serves ITEM[] as 3 pages of 2, 2 and 1 at rv 100 on PODS. */
static void serve_three_pages(struct fake *f)
{
    char *p[3] = {page_json("PodList", "100", "p1", ITEM, 2),
                  page_json("PodList", "100", "p2", ITEM + 2, 2),
                  page_json("PodList", "100", NULL, ITEM + 4, 1)};
    const char *const tok[3] = {"", "p1", "p2"};

    fake_set_list(f, PODS, (const char *const *)p, tok, 3);
    for (int i = 0; i < 3; i++) {
        free(p[i]);
    }
}

/* Serves one page with <items> at <rv> on <path>. */
static void serve_one_page(struct fake *f, const char *path, const char *kind, const char *rv,
                           const char *const *items, size_t n)
{
    char *p = page_json(kind, rv, NULL, items, n);
    const char *const tok[1] = {""};

    fake_set_list(f, path, (const char *const *)&p, tok, 1);
    free(p);
}

struct harness {
    struct fake f;
    struct upstream *up;
    struct reflector *r;
    struct apires *pods;
};

static struct reflector_opts test_opts(void)
{
    struct reflector_opts o = {.page_size = 2,
                               .max_line_bytes = 4096,
                               .watch_timeout_min_s = 300,
                               .backoff_min_ms = 10,
                               .backoff_max_ms = 40};
    return o;
}

/* Starts the fake and a reflector with <o>; the pods resource is added when <add> is set. */
static void h_start(struct harness *h, const struct reflector_opts *o, bool add)
{
    struct ring_opts ring = {RING_MIN_CAP_DEFAULT, RING_MAX_CAP_DEFAULT, 0};
    char url[64], err[256];
    struct upstream_opts uo = {0};

    curl_global_init(CURL_GLOBAL_DEFAULT);
    fake_start(&h->f);
    snprintf(url, sizeof(url), "http://127.0.0.1:%u", h->f.port);
    uo.url = url;
    h->up = upstream_new(&uo, err, sizeof(err));
    cr_assert_not_null(h->up, "%s", err);
    h->r = reflector_new(h->up, o, err, sizeof(err));
    cr_assert_not_null(h->r, "%s", err);
    h->pods = apires_new(apires_builtin("", "v1", "pods"), NULL, &ring);
    if (add) {
        reflector_add(h->r, h->pods);
    }
}

static void h_stop(struct harness *h)
{
    reflector_free(h->r);
    cr_expect_eq(atomic_load(&h->pods->ctr.up_watch_open), 0);
    fake_stop(&h->f);
    apires_free(h->pods);
    upstream_free(h->up);
    curl_global_cleanup();
}

/* Starts with the three-page list served and waits for the sync and the first watch. */
static void h_synced_opts(struct harness *h, const struct reflector_opts *o)
{
    h_start(h, o, false);
    serve_three_pages(&h->f);
    reflector_add(h->r, h->pods);
    cr_assert_eq(resource_wait_fresh(h->pods->res, 100, WAIT_MS, NULL), 0);
    WAIT_FOR(reflector_all_synced(h->r)); /* counted just after the cache is replaced */
    cr_assert_eq(fake_wait_watch(&h->f, PODS, 0).stream, 0);
}

static void h_synced(struct harness *h)
{
    struct reflector_opts o = test_opts();

    h_synced_opts(h, &o);
}

static char *event_line(const char *type, const char *obj)
{
    size_t cap = strlen(obj) + 64;
    char *s = malloc(cap);

    snprintf(s, cap, "{\"type\":\"%s\",\"object\":%s}\n", type, obj);
    return s;
}

static void push_event(struct harness *h, int stream, const char *type, const char *obj)
{
    char *s = event_line(type, obj);

    fake_push(&h->f, stream, s);
    free(s);
}

/* A pod as a watch event carries it (kind/apiVersion first), and the form the cache stores. */
static void pod_pair(const char *name, const char *rv, const char *extra, char *ev, char *stored,
                     size_t cap)
{
    snprintf(stored, cap,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns1\",\"resourceVersion\":\"%s\"}%s}",
             name, rv, extra);
    snprintf(ev, cap,
             "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"ns1\",\"resourceVersion\":\"%s\"}%s}",
             name, rv, extra);
}

/* h_synced, then ADDED ns1/f at rv 101 on stream 0, applied. */
static void h_synced_f101(struct harness *h)
{
    char e[256], s[256];

    h_synced(h);
    pod_pair("f", "101", "", e, s, 256);
    push_event(h, 0, "ADDED", e);
    cr_assert_eq(resource_wait_fresh(h->pods->res, 101, WAIT_MS, NULL), 0);
}

static void noop_wake(void *ctx)
{
    (void)ctx;
}

struct want_event {
    enum watch_type type;
    uint64_t rv;
    const char *data;
};

/* Replays the history after <from_rv> and compares it with <want> exactly. */
static void expect_history(struct resource *res, uint64_t from_rv, const struct want_event *want,
                           size_t n)
{
    struct watcher w = {.wake = noop_wake};
    struct ring_event ev[32];
    uint64_t boundary = 0;
    ssize_t got;

    cr_assert_eq(resource_watch_from(res, &w, from_rv, &boundary), 0);
    got = resource_watch_next(res, &w, ev, 32);
    cr_assert_eq(got, (ssize_t)n, "history has %zd events, want %zu", got, n);
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(ev[i].type, want[i].type, "event %zu type", i);
        cr_expect_eq(ev[i].rv, want[i].rv, "event %zu rv", i);
        cr_expect_eq(ev[i].obj->len, strlen(want[i].data), "event %zu length", i);
        cr_expect_str_eq(ev[i].obj->data, want[i].data, "event %zu bytes", i);
    }
    resource_watch_detach(res, &w);
}

static void expect_stored(struct resource *res, const char *key, const char *data)
{
    struct blob *b = resource_get(res, key);

    cr_assert_not_null(b, "%s not stored", key);
    cr_expect_eq(b->len, strlen(data), "%s length", key);
    cr_expect_eq(memcmp(b->data, data, b->len), 0, "%s bytes differ: %s", key, b->data);
    blob_unref(b);
}

/* ---- tests ------------------------------------------------------------------------------- */

Test(reflector, paginated_list_stores_upstream_bytes, .timeout = 30)
{
    struct harness h;
    struct resource_stats st;
    struct fake_req q;
    long t;

    h_synced(&h);
    resource_stats(h.pods->res, &st);
    cr_expect_eq(st.objects, 5);
    cr_expect_eq(st.rv, 100);
    cr_expect(st.ready);
    for (int i = 0; i < 5; i++) {
        expect_stored(h.pods->res, ITEM_KEY[i], ITEM[i]);
    }
    /* Requests: 3 pages (limit on each, continue on the 2nd and 3rd, rv unset), then a watch. */
    for (size_t i = 0; i < 3; i++) {
        q = fake_req_at(&h.f, i);
        cr_expect(!q.watch);
        cr_expect_str_eq(q.path, PODS);
        cr_expect_str_eq(q.limit, "2");
        cr_expect(!q.has_rv, "a consistent LIST leaves resourceVersion unset");
        cr_expect_str_eq(q.cont, i == 0 ? "" : i == 1 ? "p1" : "p2");
        cr_expect_str_eq(q.accept, "application/json");
    }
    q = fake_req_at(&h.f, 3);
    cr_expect(q.watch);
    cr_expect_str_eq(q.rv, "100");
    cr_expect_str_eq(q.bookmarks, "true");
    cr_expect_str_eq(q.accept, "application/json");
    t = strtol(q.timeout, NULL, 10);
    cr_expect(t >= 300 && t < 600, "timeoutSeconds %ld outside [300, 600)", t);
    cr_expect_eq(atomic_load(&h.pods->ctr.up_lists), 3);
    cr_expect_eq(atomic_load(&h.pods->ctr.relists), 1);
    WAIT_FOR(atomic_load(&h.pods->ctr.up_watch_open) == 1);
    cr_expect_eq(atomic_load(&h.pods->ctr.up_watches), 1);
    h_stop(&h);
}

Test(reflector, watch_events_stored_without_type_meta, .timeout = 30)
{
    struct harness h;
    char ev[3][256], stored[3][256];
    struct blob *gone;

    h_synced(&h);
    pod_pair("f", "101", ",\"spec\":{\"n\": 1}", ev[0], stored[0], 256);
    pod_pair("a", "105", ",\"spec\":{\"big\":98765432109876543210}", ev[1], stored[1], 256);
    pod_pair("b", "107", "", ev[2], stored[2], 256);
    push_event(&h, 0, "ADDED", ev[0]);
    push_event(&h, 0, "MODIFIED", ev[1]);
    push_event(&h, 0, "DELETED", ev[2]);
    cr_assert_eq(resource_wait_fresh(h.pods->res, 107, WAIT_MS, NULL), 0);
    {
        const struct want_event want[] = {{WATCH_ADDED, 101, stored[0]},
                                          {WATCH_MODIFIED, 105, stored[1]},
                                          {WATCH_DELETED, 107, stored[2]}};

        expect_history(h.pods->res, 100, want, 3);
    }
    expect_stored(h.pods->res, "ns1/f", stored[0]);
    expect_stored(h.pods->res, "ns1/a", stored[1]);
    gone = resource_get(h.pods->res, "ns1/b");
    cr_expect_null(gone);
    blob_unref(gone);
    cr_expect_eq(atomic_load(&h.pods->ctr.up_events), 3);
    h_stop(&h);
}

Test(reflector, lines_framed_across_chunks_and_batched, .timeout = 30)
{
    struct harness h;
    char ev[3][2048], stored[3][2048], pad[1800], extra[1900];
    char *l0, *l1, *l2, *both;

    h_synced(&h);
    memset(pad, 'x', sizeof(pad) - 1);
    pad[sizeof(pad) - 1] = '\0';
    snprintf(extra, sizeof(extra), ",\"spec\":{\"pad\":\"%s\"}", pad);
    pod_pair("g", "110", extra, ev[0], stored[0], 2048); /* ~1.9 KB, split in 3 chunks */
    pod_pair("h", "111", "", ev[1], stored[1], 2048);
    pod_pair("i", "112", "", ev[2], stored[2], 2048);
    l0 = event_line("ADDED", ev[0]);
    l1 = event_line("ADDED", ev[1]);
    l2 = event_line("ADDED", ev[2]);
    fake_push_raw(&h.f, 0, l0, 700);
    fake_push_raw(&h.f, 0, l0 + 700, 700);
    fake_push_raw(&h.f, 0, l0 + 1400, strlen(l0) - 1400);
    both = malloc(strlen(l1) + strlen(l2) + 1);
    snprintf(both, strlen(l1) + strlen(l2) + 1, "%s%s", l1, l2);
    fake_push(&h.f, 0, both); /* two lines in one chunk */
    fake_push(&h.f, 0, "\n"); /* a blank keep-alive line is ignored */
    cr_assert_eq(resource_wait_fresh(h.pods->res, 112, WAIT_MS, NULL), 0);
    expect_stored(h.pods->res, "ns1/g", stored[0]);
    expect_stored(h.pods->res, "ns1/h", stored[1]);
    expect_stored(h.pods->res, "ns1/i", stored[2]);
    cr_expect_eq(fake_lists(&h.f, PODS), 1);
    free(l0), free(l1), free(l2), free(both);
    h_stop(&h);
}

Test(reflector, bookmark_advances_rv_without_history, .timeout = 30)
{
    struct harness h;
    struct resource_stats st;

    h_synced(&h);
    push_event(&h, 0, "BOOKMARK",
               "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"150\","
               "\"creationTimestamp\":null},\"spec\":{\"containers\":null},\"status\":{}}");
    cr_assert_eq(resource_wait_fresh(h.pods->res, 150, WAIT_MS, NULL), 0);
    resource_stats(h.pods->res, &st);
    cr_expect_eq(st.rv, 150);
    cr_expect_eq(st.events, 0);
    cr_expect_eq(st.objects, 5);
    cr_expect_eq(atomic_load(&h.pods->ctr.up_bookmarks), 1);
    /* The re-watch after a clean end starts from the bookmark's rv. */
    fake_end(&h.f, 0);
    cr_expect_str_eq(fake_wait_watch(&h.f, PODS, 1).rv, "150");
    cr_expect_eq(fake_lists(&h.f, PODS), 1);
    h_stop(&h);
}

Test(reflector, closed_stream_rewatches_from_last_rv, .timeout = 30)
{
    struct harness h;
    char ev[4][256], stored[4][256];
    struct fake_req q;

    h_synced(&h);
    pod_pair("f", "101", "", ev[0], stored[0], 256);
    pod_pair("f", "102", ",\"v\":2", ev[1], stored[1], 256);
    pod_pair("f", "103", ",\"v\":2", ev[2], stored[2], 256);
    pod_pair("j", "104", "", ev[3], stored[3], 256);
    push_event(&h, 0, "ADDED", ev[0]);
    push_event(&h, 0, "MODIFIED", ev[1]);
    fake_end(&h.f, 0);
    q = fake_wait_watch(&h.f, PODS, 1);
    cr_assert_str_eq(q.rv, "102");
    push_event(&h, q.stream, "DELETED", ev[2]);
    fake_end(&h.f, q.stream);
    q = fake_wait_watch(&h.f, PODS, 2);
    cr_assert_str_eq(q.rv, "103");
    push_event(&h, q.stream, "ADDED", ev[3]);
    cr_assert_eq(resource_wait_fresh(h.pods->res, 104, WAIT_MS, NULL), 0);
    {
        const struct want_event want[] = {{WATCH_ADDED, 101, stored[0]},
                                          {WATCH_MODIFIED, 102, stored[1]},
                                          {WATCH_DELETED, 103, stored[2]},
                                          {WATCH_ADDED, 104, stored[3]}};

        expect_history(h.pods->res, 100, want, 4);
    }
    cr_expect_eq(fake_lists(&h.f, PODS), 1, "a clean end must not relist");
    cr_expect_eq(atomic_load(&h.pods->ctr.relists), 1);
    cr_expect_eq(atomic_load(&h.pods->ctr.up_watches), 3);
    h_stop(&h);
}

Test(reflector, error_410_relists_and_ends_downstream_watches, .timeout = 30)
{
    struct harness h;
    struct watcher w = {.wake = noop_wake};
    struct watcher w2 = {.wake = noop_wake};
    struct ring_event ev[8];
    struct resource_stats st;
    struct blob *old;
    uint64_t boundary = 0;
    ssize_t got = 0;
    const char *relist_items[] = {
        "{\"metadata\":{\"name\":\"z\",\"namespace\":\"ns9\",\"resourceVersion\":\"290\"}}"};

    h_synced_f101(&h);
    cr_assert_eq(resource_watch_from(h.pods->res, &w, 100, &boundary), 0);
    serve_one_page(&h.f, PODS, "PodList", "300", relist_items, 1);
    push_event(&h, 0, "ERROR",
               "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
               "\"message\":\"too old resource version: 100 (120)\",\"reason\":\"Expired\","
               "\"code\":410}");
    cr_assert_eq(resource_wait_fresh(h.pods->res, 300, WAIT_MS, NULL), 0);
    cr_expect_eq(fake_lists(&h.f, PODS), 2);
    cr_expect_str_eq(fake_wait_watch(&h.f, PODS, 1).rv, "300");
    /* The downstream watcher attached before the relist ends (after what it had pending). */
    for (int i = 0; i < 100 && got >= 0; i++) {
        got = resource_watch_next(h.pods->res, &w, ev, 8);
    }
    cr_expect_eq(got, -EPIPE);
    resource_watch_detach(h.pods->res, &w);
    /* The store is exactly the new list and the history starts at the list RV. */
    resource_stats(h.pods->res, &st);
    cr_expect_eq(st.objects, 1);
    cr_expect(st.ready);
    expect_stored(h.pods->res, "ns9/z", relist_items[0]);
    old = resource_get(h.pods->res, "ns1/a");
    cr_expect_null(old);
    blob_unref(old);
    cr_expect_eq(resource_watch_from(h.pods->res, &w2, 150, &boundary), -ESTALE);
    cr_expect_eq(atomic_load(&h.pods->ctr.relists), 2);
    h_stop(&h);
}

Test(reflector, http_410_on_watch_relists, .timeout = 30)
{
    struct harness h;

    h_synced_f101(&h);
    fake_set_watch_code(&h.f, 410);
    fake_end(&h.f, 0);
    WAIT_FOR(fake_lists(&h.f, PODS) == 2);
    cr_expect_eq(fake_wait_watch(&h.f, PODS, 1).stream, -1, "the 410 answer");
    cr_expect_str_eq(fake_wait_watch(&h.f, PODS, 1).rv, "101");
    /* The relist (same pages, rv 100) replaces the state; the next watch starts there. */
    cr_expect_str_eq(fake_wait_watch(&h.f, PODS, 2).rv, "100");
    WAIT_FOR(atomic_load(&h.pods->ctr.relists) == 2);
    cr_expect_eq(resource_rv(h.pods->res), 100);
    h_stop(&h);
}

Test(reflector, malformed_line_relists, .timeout = 30)
{
    struct harness h;
    const char *relist_items[] = {
        "{\"metadata\":{\"name\":\"y\",\"namespace\":\"ns1\",\"resourceVersion\":\"200\"}}"};

    h_synced(&h);
    serve_one_page(&h.f, PODS, "PodList", "200", relist_items, 1);
    fake_push(&h.f, 0, "{\"type\":\"ADDED\",\"object\":{bad}}\n");
    cr_assert_eq(resource_wait_fresh(h.pods->res, 200, WAIT_MS, NULL), 0);
    cr_expect_eq(fake_lists(&h.f, PODS), 2);
    cr_expect_str_eq(fake_wait_watch(&h.f, PODS, 1).rv, "200");
    WAIT_FOR(resource_is_ready(h.pods->res, NULL));
    cr_expect_geq(atomic_load(&h.pods->ctr.up_errors), 1);
    expect_stored(h.pods->res, "ns1/y", relist_items[0]);
    h_stop(&h);
}

/* "150\u0000" is not rv 150 (cJSON would cut the string at the NUL): the bookmark is
 * malformed, and the reflector relists instead of advancing. */
Test(reflector, bookmark_rv_with_escaped_nul_relists, .timeout = 30)
{
    struct harness h;
    struct resource_stats st;
    const char *relist_items[] = {
        "{\"metadata\":{\"name\":\"y\",\"namespace\":\"ns1\",\"resourceVersion\":\"200\"}}"};

    h_synced(&h);
    serve_one_page(&h.f, PODS, "PodList", "200", relist_items, 1);
    push_event(&h, 0, "BOOKMARK", "{\"metadata\":{\"resourceVersion\":\"150\\u0000\"}}");
    cr_assert_eq(resource_wait_fresh(h.pods->res, 200, WAIT_MS, NULL), 0);
    cr_expect_eq(fake_lists(&h.f, PODS), 2);
    cr_expect_eq(atomic_load(&h.pods->ctr.up_bookmarks), 0);
    resource_stats(h.pods->res, &st);
    cr_expect_eq(st.rv, 200);
    h_stop(&h);
}

Test(reflector, overlong_line_relists, .timeout = 30)
{
    struct harness h;
    static const char head[] = "{\"type\":\"ADDED\",\"object\":{\"pad\":\"";
    char chunk[1500];
    const char *relist_items[] = {
        "{\"metadata\":{\"name\":\"y\",\"namespace\":\"ns1\",\"resourceVersion\":\"200\"}}"};

    h_synced(&h);
    serve_one_page(&h.f, PODS, "PodList", "200", relist_items, 1);
    memset(chunk, 'x', sizeof(chunk));
    memcpy(chunk, head, strlen(head));
    /* 4 x 1500 bytes, no newline: over max_line_bytes (4096) without ever seeing an end. */
    for (int i = 0; i < 4; i++) {
        fake_push_raw(&h.f, 0, chunk, sizeof(chunk));
    }
    cr_assert_eq(resource_wait_fresh(h.pods->res, 200, WAIT_MS, NULL), 0);
    cr_expect_eq(fake_lists(&h.f, PODS), 2);
    cr_expect_str_eq(fake_wait_watch(&h.f, PODS, 1).rv, "200");
    h_stop(&h);
}

Test(reflector, rv_not_increasing_relists, .timeout = 30)
{
    struct harness h;
    char e[256], s[256];
    const char *relist_items[] = {
        "{\"metadata\":{\"name\":\"y\",\"namespace\":\"ns1\",\"resourceVersion\":\"200\"}}"};

    h_synced(&h);
    serve_one_page(&h.f, PODS, "PodList", "200", relist_items, 1);
    pod_pair("f", "100", "", e, s, 256); /* == the list rv */
    push_event(&h, 0, "ADDED", e);
    cr_assert_eq(resource_wait_fresh(h.pods->res, 200, WAIT_MS, NULL), 0);
    cr_expect_eq(fake_lists(&h.f, PODS), 2);
    cr_expect_null(resource_get(h.pods->res, "ns1/f"));
    h_stop(&h);
}

Test(reflector, error_event_other_than_410_rewatches_from_last_rv, .timeout = 30)
{
    struct harness h;

    h_synced_f101(&h);
    push_event(&h, 0, "ERROR",
               "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
               "\"message\":\"internal error\",\"reason\":\"InternalError\",\"code\":500}");
    cr_expect_str_eq(fake_wait_watch(&h.f, PODS, 1).rv, "101");
    cr_expect_eq(fake_lists(&h.f, PODS), 1);
    cr_expect_eq(atomic_load(&h.pods->ctr.up_errors), 1);
    cr_expect(resource_is_ready(h.pods->res, NULL));
    h_stop(&h);
}

Test(reflector, http_error_on_watch_backs_off_and_rewatches, .timeout = 30)
{
    struct harness h;

    h_synced_f101(&h);
    fake_set_watch_code(&h.f, 500);
    fake_end(&h.f, 0);
    cr_expect_eq(fake_wait_watch(&h.f, PODS, 1).stream, -1, "the 500 answer");
    cr_expect_str_eq(fake_wait_watch(&h.f, PODS, 2).rv, "101");
    cr_expect_eq(fake_lists(&h.f, PODS), 1);
    cr_expect_eq(atomic_load(&h.pods->ctr.up_errors), 1);
    h_stop(&h);
}

/*
 * Stream cuts (found by a real client): an established watch that breaks mid-stream is
 * re-watched from its last RV at once, as client-go's reflector does, not after a backoff;
 * the backoff here is 5-10 s, so a re-watch within 2 s can only be the prompt one. A watch cut
 * under a second after it opened with no event still backs off (it would spin otherwise).
 */
Test(reflector, cut_established_watch_rewatches_at_once, .timeout = 40)
{
    struct harness h;
    struct reflector_opts o = test_opts();
    struct fake_req q;
    char e[256], st[256];

    o.backoff_min_ms = 5000;
    o.backoff_max_ms = 10000;
    h_synced_opts(&h, &o);
    for (int cut = 0; cut < 3; cut++) { /* cuts in a row: each re-watch is as prompt */
        char rv[16];

        snprintf(rv, sizeof(rv), "%d", 101 + cut);
        pod_pair("f", rv, "", e, st, 256);
        push_event(&h, cut, cut == 0 ? "ADDED" : "MODIFIED", e);
        cr_assert_eq(resource_wait_fresh(h.pods->res, (uint64_t)(101 + cut), WAIT_MS, NULL), 0);
        fake_cut(&h.f, cut);
        cr_assert(fake_watch_within(&h.f, PODS, (size_t)cut + 1, 2000, &q),
                  "no re-watch within 2 s of cut %d", cut);
        cr_expect_str_eq(q.rv, rv);
    }
    cr_expect_eq(fake_lists(&h.f, PODS), 1, "a cut stream must not relist");
    cr_expect(resource_is_ready(h.pods->res, NULL));
    /* Opened, then cut at once with nothing delivered: that is a failure, backed off. */
    fake_cut(&h.f, 3);
    cr_expect(!fake_watch_within(&h.f, PODS, 4, 2000, &q), "a very short watch must back off");
    h_stop(&h);
}

/*
 * After a 410 the relist starts at once even when failures came before it (kube-apiserver's
 * cacher restarts within a second; kwp used to back off 9-12 s here), and a 410 right after a
 * relist waits only for the one-second gap between relist starts.
 */
Test(reflector, relist_after_410_is_prompt_and_paced, .timeout = 40)
{
    struct harness h;
    struct reflector_opts o = test_opts();
    struct fake_req q;
    int64_t l1, l2;

    o.backoff_min_ms = 1500;
    o.backoff_max_ms = 3000;
    h_synced_opts(&h, &o);
    fake_set_watch_code(&h.f, 500); /* one failure: the next watch is answered 500 */
    fake_end(&h.f, 0);
    cr_assert(fake_watch_within(&h.f, PODS, 1, WAIT_MS, &q));
    cr_assert_eq(q.stream, -1, "the 500 answer");
    fake_set_watch_codes(&h.f, 410, 2); /* the retry after backoff gets a 410, and the next */
    q = fake_wait_watch(&h.f, PODS, 2);
    cr_assert_eq(q.stream, -1, "the 410 answer");
    WAIT_FOR(fake_lists(&h.f, PODS) == 2);
    l1 = fake_list_at(&h.f, PODS, 1);
    cr_expect_lt(l1 - q.at_ms, 1000, "relist %lld ms after the 410", (long long)(l1 - q.at_ms));
    /* The watch after that relist is answered 410 too: the next relist keeps the gap. */
    WAIT_FOR(fake_lists(&h.f, PODS) == 3);
    l2 = fake_list_at(&h.f, PODS, 2);
    /* times are of arrival at the fake: a few ms after the reflector's send */
    cr_expect_geq(l2 - l1, 900, "relists %lld ms apart", (long long)(l2 - l1));
    cr_expect_lt(l2 - l1, 2500, "relists %lld ms apart", (long long)(l2 - l1));
    h_stop(&h);
}

/* 429 and 503 with Retry-After: the retry comes after exactly that, not after the backoff
 * (here 5-10 s). */
Test(reflector, retry_after_is_honoured_on_watch_and_list, .timeout = 40)
{
    struct harness h;
    struct reflector_opts o = test_opts();
    struct fake_req q, q2;
    int64_t l0, l1;

    o.backoff_min_ms = 5000;
    o.backoff_max_ms = 10000;
    h_synced_opts(&h, &o);
    fake_set_retry_after(&h.f, 1);
    fake_set_watch_code(&h.f, 429);
    push_event(&h, 0, "BOOKMARK", "{\"metadata\":{\"resourceVersion\":\"100\"}}");
    fake_end(&h.f, 0); /* an established watch with an event: re-watched at once, answered 429 */
    q = fake_wait_watch(&h.f, PODS, 1);
    cr_assert_eq(q.stream, -1, "the 429 answer");
    cr_assert(fake_watch_within(&h.f, PODS, 2, 4000, &q2), "no retry within 4 s");
    cr_expect_geq(q2.at_ms - q.at_ms, 950, "retried %lld ms after Retry-After: 1",
                  (long long)(q2.at_ms - q.at_ms));
    cr_expect_eq(atomic_load(&h.pods->ctr.up_errors), 1);
    h_stop(&h);

    h_start(&h, &o, false);
    serve_three_pages(&h.f);
    fake_set_retry_after(&h.f, 2);
    fake_set_list_code(&h.f, 503);
    reflector_add(h.r, h.pods);
    WAIT_FOR(fake_lists(&h.f, PODS) == 1);
    cr_assert_eq(resource_wait_fresh(h.pods->res, 100, 6000, NULL), 0);
    l0 = fake_list_at(&h.f, PODS, 0);
    l1 = fake_list_at(&h.f, PODS, 1);
    cr_expect_geq(l1 - l0, 1950, "list retried %lld ms after Retry-After: 2", (long long)(l1 - l0));
    cr_expect_lt(l1 - l0, 4500, "list retried %lld ms after Retry-After: 2", (long long)(l1 - l0));
    h_stop(&h);
}

Test(reflector, failed_list_is_retried, .timeout = 30)
{
    struct harness h;
    struct reflector_opts o = test_opts();

    h_start(&h, &o, false);
    serve_three_pages(&h.f);
    fake_set_list_code(&h.f, 500);
    reflector_add(h.r, h.pods);
    cr_assert_eq(resource_wait_fresh(h.pods->res, 100, WAIT_MS, NULL), 0);
    cr_expect_eq(fake_lists(&h.f, PODS), 2);
    cr_expect_eq(atomic_load(&h.pods->ctr.up_lists), 4);
    cr_expect_eq(atomic_load(&h.pods->ctr.up_errors), 1);
    cr_expect_eq(atomic_load(&h.pods->ctr.relists), 1);
    h_stop(&h);
}

Test(reflector, malformed_list_page_is_retried, .timeout = 30)
{
    struct harness h;
    struct reflector_opts o = test_opts();
    const char *bad[] = {
        "{\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[{\"metadata\":{}}]}"};
    const char *tok[] = {""};

    h_start(&h, &o, false);
    fake_set_list(&h.f, PODS, bad, tok, 1); /* an item without a name */
    reflector_add(h.r, h.pods);
    WAIT_FOR(fake_lists(&h.f, PODS) >= 2);
    cr_expect(!reflector_all_synced(h.r));
    cr_expect(!resource_is_ready(h.pods->res, NULL));
    serve_three_pages(&h.f);
    cr_assert_eq(resource_wait_fresh(h.pods->res, 100, WAIT_MS, NULL), 0);
    WAIT_FOR(reflector_all_synced(h.r));
    h_stop(&h);
}

Test(reflector, custom_resources_keep_type_meta_and_share_the_thread, .timeout = 30)
{
    struct harness h;
    struct reflector_opts o = test_opts();
    struct ring_opts ring = {RING_MIN_CAP_DEFAULT, RING_MAX_CAP_DEFAULT, 0};
    struct apires_kind kind;
    struct apires *wid;
    char *owned = NULL;
    struct fake_req q;
    const char *witems[] = {
        "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w1\","
        "\"namespace\":\"ns1\",\"resourceVersion\":\"40\"},\"spec\":{\"size\":3}}"};
    const char *wev = "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":"
                      "{\"name\":\"w2\",\"namespace\":\"ns1\",\"resourceVersion\":\"51\"}}";

    cr_assert_eq(apires_parse_spec("example.com/v1/widgets", &kind, &owned), 0);
    h_start(&h, &o, false);
    wid = apires_new(&kind, owned, &ring);
    serve_three_pages(&h.f);
    reflector_add(h.r, h.pods);
    reflector_add(h.r, wid);
    cr_assert_eq(resource_wait_fresh(h.pods->res, 100, WAIT_MS, NULL), 0);
    /* The widgets list 404s until served: parked (forwarded, not holding readiness). */
    WAIT_FOR(fake_lists(&h.f, WIDGETS) >= 1);
    WAIT_FOR(atomic_load(&wid->ctr.not_cached) == 1);
    cr_expect(!resource_is_ready(wid->res, NULL));
    serve_one_page(&h.f, WIDGETS, "WidgetList", "50", witems, 1);
    cr_assert_eq(resource_wait_fresh(wid->res, 50, WAIT_MS, NULL), 0);
    WAIT_FOR(reflector_all_synced(h.r) && atomic_load(&wid->ctr.not_cached) == 0);
    expect_stored(wid->res, "ns1/w1", witems[0]);
    q = fake_wait_watch(&h.f, WIDGETS, 0);
    cr_expect_str_eq(q.rv, "50");
    push_event(&h, q.stream, "ADDED", wev);
    cr_assert_eq(resource_wait_fresh(wid->res, 51, WAIT_MS, NULL), 0);
    expect_stored(wid->res, "ns1/w2", wev);
    h_stop(&h);
    cr_expect_eq(atomic_load(&wid->ctr.up_watch_open), 0);
    apires_free(wid);
}

Test(reflector, options_are_validated, .timeout = 30)
{
    struct upstream_opts uo = {.url = "http://127.0.0.1:1"};
    struct reflector_opts o = {.backoff_min_ms = 500, .backoff_max_ms = 100};
    struct reflector_opts neg = {.page_size = -1};
    char err[128] = "";
    struct upstream *up;
    struct reflector *r;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    up = upstream_new(&uo, err, sizeof(err));
    cr_assert_not_null(up);
    cr_expect_null(reflector_new(up, &o, err, sizeof(err)));
    cr_expect_neq(err[0], '\0');
    cr_expect_null(reflector_new(up, &neg, err, sizeof(err)));
    /* Defaults; nothing added: trivially synced; free with nothing running. */
    r = reflector_new(up, NULL, err, sizeof(err));
    cr_assert_not_null(r);
    cr_expect(reflector_all_synced(r));
    reflector_free(r);
    reflector_free(NULL);
    upstream_free(up);
    curl_global_cleanup();
}

Test(reflector, unreachable_upstream_backs_off_and_frees_promptly, .timeout = 30)
{
    struct harness h;
    struct reflector_opts o = test_opts();

    h_start(&h, &o, true);
    fake_set_list_codes(&h.f, 500, 1000); /* every list fails */
    WAIT_FOR(atomic_load(&h.pods->ctr.up_errors) >= 3);
    cr_expect(!reflector_all_synced(h.r));
    cr_expect(!resource_is_ready(h.pods->res, NULL));
    cr_expect_eq(atomic_load(&h.pods->ctr.not_cached), 0);
    h_stop(&h);
}

/*
 * A first LIST refused with 403 (kwp may not list it) or 404 (not served): the resource is
 * forwarded meanwhile (not_cached) and holds nobody's readiness, so one request for it cannot
 * take the proxy out of its Service; the list is retried, and once it succeeds the resource is
 * cached after all.
 */
Test(reflector, a_refused_first_list_parks_the_resource_until_a_list_succeeds, .timeout = 30)
{
    static const int codes[] = {403, 404};

    for (size_t i = 0; i < 2; i++) {
        struct harness h;
        struct reflector_opts o = test_opts();

        o.backoff_min_ms = 1500;
        o.backoff_max_ms = 3000;
        h_start(&h, &o, false);
        serve_three_pages(&h.f);
        fake_set_list_code(&h.f, codes[i]);
        reflector_add(h.r, h.pods);
        WAIT_FOR(atomic_load(&h.pods->ctr.not_cached) == 1);
        cr_expect(reflector_all_synced(h.r), "a parked resource holds /readyz back (%d)", codes[i]);
        cr_expect(!resource_is_ready(h.pods->res, NULL));
        /* the retry after backoff is served: cached from now on */
        cr_assert_eq(resource_wait_fresh(h.pods->res, 100, WAIT_MS, NULL), 0);
        WAIT_FOR(atomic_load(&h.pods->ctr.not_cached) == 0);
        cr_expect(reflector_all_synced(h.r));
        cr_expect_eq(fake_lists(&h.f, PODS), 2);
        cr_expect_str_eq(fake_wait_watch(&h.f, PODS, 0).rv, "100");
        h_stop(&h);
    }
}

Test(reflector, oversized_list_page_fails_without_growing, .timeout = 30)
{
    struct harness h;
    struct reflector_opts o = test_opts();

    o.max_list_bytes = 300; /* the first page is ~480 bytes */
    h_start(&h, &o, false);
    serve_three_pages(&h.f);
    reflector_add(h.r, h.pods);
    WAIT_FOR(atomic_load(&h.pods->ctr.up_errors) >= 2);
    cr_expect(!reflector_all_synced(h.r));
    cr_expect(!resource_is_ready(h.pods->res, NULL));
    pthread_mutex_lock(&h.f.mu);
    for (size_t i = 0; i < h.f.n_reqs; i++) {
        cr_expect_str_eq(h.f.reqs[i].cont, "", "every attempt restarts at page 1");
    }
    pthread_mutex_unlock(&h.f.mu);
    h_stop(&h);
}

static void fake_set_check_rv(struct fake *f, const char *rv)
{
    pthread_mutex_lock(&f->mu);
    snprintf(f->check_rv, sizeof(f->check_rv), "%s", rv);
    pthread_mutex_unlock(&f->mu);
}

/* Requests on <path> with limit=1: the reflector's RV checks. */
static size_t fake_checks(struct fake *f, const char *path)
{
    size_t n = 0;

    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->n_reqs; i++) {
        n += !f->reqs[i].watch && strcmp(f->reqs[i].path, path) == 0 &&
             strcmp(f->reqs[i].limit, "1") == 0;
    }
    pthread_mutex_unlock(&f->mu);
    return n;
}

/*
 * Issue 14 "resourceVersions go backwards": after a broken stream the upstream may be a
 * restarted one restored from a backup, whose RVs are behind ours. A watch from our RV would
 * be accepted and stay silent until upstream passed it (kube-apiserver accepts a future RV,
 * SEMANTICS 3.3), losing every change meanwhile; so before that re-watch the reflector reads
 * upstream's RV (a LIST of one item) and, finding it lower, relists: the history restarts at
 * the (lower) list RV and every downstream watch is ended. A check at or above our RV
 * re-watches as before.
 */
Test(reflector, upstream_rv_gone_backwards_is_detected_and_relists, .timeout = 40)
{
    struct harness h;
    struct watcher w = {.wake = noop_wake, .kind = WATCHER_STREAM};
    struct ring_event ev[4];
    struct fake_req q;

    h_synced_f101(&h); /* list rv 100, then f at 101 */
    cr_assert_eq(resource_watch_from(h.pods->res, &w, 101, NULL), 0);
    /* a cut with upstream ahead: checked, then re-watched from 101, no relist */
    fake_cut(&h.f, 0);
    cr_assert_eq(fake_wait_watch(&h.f, PODS, 1).stream, 1);
    cr_expect_str_eq(fake_wait_watch(&h.f, PODS, 1).rv, "101");
    cr_expect_eq(fake_checks(&h.f, PODS), 1, "one check before the re-watch");
    cr_expect_eq(fake_lists(&h.f, PODS), 1);
    /* upstream restored: its RV (50) is behind ours */
    fake_set_check_rv(&h.f, "50");
    char e[256], st[256];
    pod_pair("g", "102", "", e, st, 256);
    push_event(&h, 1, "ADDED", e);
    cr_assert_eq(resource_wait_fresh(h.pods->res, 102, WAIT_MS, NULL), 0);
    fake_cut(&h.f, 1);
    WAIT_FOR(fake_lists(&h.f, PODS) == 2);
    /* the list (rv 100, below the cache's 102) replaced everything: history reset */
    cr_assert_eq(fake_wait_watch(&h.f, PODS, 2).stream, 2);
    q = fake_wait_watch(&h.f, PODS, 2);
    cr_expect_str_eq(q.rv, "100", "re-watch from the new list's RV");
    cr_expect_eq(resource_rv(h.pods->res), 100);
    cr_expect(resource_get(h.pods->res, "ns1/g") == NULL, "g came from the old history");
    cr_expect_eq(resource_watch_next(h.pods->res, &w, ev, 4), -EPIPE,
                 "a downstream watch from before is ended");
    resource_watch_detach(h.pods->res, &w);
    h_stop(&h);
}

/* The backoff doubles from backoff_min and stops at backoff_max (10 ms doubling to 40 ms
 * here): watches answered 500 eight times in a row come 40 ms apart from the third retry on
 * (250 ms allowed for a loaded machine; uncapped, the last ones would be 1.3-5.1 s), and no
 * sooner than the doubling allows. */
Test(reflector, backoff_doubles_and_is_capped, .timeout = 30)
{
    struct harness h;
    int64_t at[10];

    h_synced(&h);
    fake_set_watch_codes(&h.f, 500, 8);
    fake_end(&h.f, 0);
    for (size_t i = 1; i <= 9; i++) {
        at[i] = fake_wait_watch(&h.f, PODS, i).at_ms;
    }
    for (size_t i = 2; i <= 9; i++) {
        int64_t gap = at[i] - at[i - 1];
        int64_t lo = i == 2 ? 20 : 40; /* the clean end of watch 0 at once was failure 1 */

        cr_expect(gap >= lo - 2 && gap <= 250, "retry %zu came %lld ms after the one before", i,
                  (long long)gap);
    }
    h_stop(&h);
}
