/*
 * http.c - libcurl one-shot requests and a threaded line collector for watch streams.
 *
 * http_do() runs one easy handle synchronously. A watch owns a multi handle driven by its
 * own thread (curl_multi_poll, woken by curl_multi_wakeup on close), so closing never waits
 * for a poll interval. Lines are appended under the watch's mutex and announced on its
 * condition variable (CLOCK_MONOTONIC), which the test thread waits on with deadlines.
 */
#include "tests/support/http.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

uint64_t http_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A growable byte buffer with a cap, always NUL-terminated once non-empty. */
struct buf {
    char *data;
    size_t len;
    size_t cap;
    bool too_big;
};

static int buf_append(struct buf *b, const char *p, size_t n)
{
    if (b->len + n + 1 > HTTP_BODY_MAX) {
        b->too_big = true;
        return -EFBIG;
    }
    if (b->len + n + 1 > b->cap) {
        size_t ncap = b->cap ? b->cap : 1024;
        char *nd;

        while (ncap < b->len + n + 1) {
            ncap *= 2;
        }
        nd = realloc(b->data, ncap);
        if (!nd) {
            return -ENOMEM;
        }
        b->data = nd;
        b->cap = ncap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

static size_t body_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct buf *b = ud;
    size_t n = size * nmemb;

    return buf_append(b, ptr, n) == 0 ? n : 0;
}

/* Keeps only the header block of the last response (a 100 Continue precedes the real one). */
static size_t header_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct buf *b = ud;
    size_t n = size * nmemb;

    if (n >= 5 && strncmp(ptr, "HTTP/", 5) == 0) {
        b->len = 0;
        if (b->data) {
            b->data[0] = '\0';
        }
    }
    return buf_append(b, ptr, n) == 0 ? n : 0;
}

static bool has_header(const char *const *extra, const char *name)
{
    size_t nl = strlen(name);
    size_t i;

    for (i = 0; extra && extra[i]; i++) {
        if (strncasecmp(extra[i], name, nl) == 0 && extra[i][nl] == ':') {
            return true;
        }
    }
    return false;
}

static struct curl_slist *build_headers(const char *content_type, const char *const *extra)
{
    struct curl_slist *h = NULL;
    char line[512];
    size_t i;

    if (!has_header(extra, "User-Agent")) {
        h = curl_slist_append(h, "User-Agent: " HTTP_USER_AGENT);
    }
    if (!has_header(extra, "Accept")) {
        h = curl_slist_append(h, "Accept: application/json");
    }
    if (content_type) {
        snprintf(line, sizeof(line), "Content-Type: %s", content_type);
        h = curl_slist_append(h, line);
    }
    for (i = 0; extra && extra[i]; i++) {
        h = curl_slist_append(h, extra[i]);
    }
    return h;
}

static const char *g_ca_file; /* http_set_ca_file */

void http_set_ca_file(const char *path)
{
    g_ca_file = path;
}

static void common_opts(CURL *e, const char *url, struct curl_slist *hdrs, long timeout_ms)
{
    if (g_ca_file != NULL) {
        curl_easy_setopt(e, CURLOPT_CAINFO, g_ca_file);
    }
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    if (timeout_ms > 0) {
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 5000 ? timeout_ms : 5000L);
    }
}

static int map_curl_rc(CURLcode rc, bool too_big)
{
    if (too_big) {
        return -EFBIG;
    }
    switch (rc) {
    case CURLE_OK:
        return 0;
    case CURLE_OPERATION_TIMEDOUT:
        return -ETIMEDOUT;
    case CURLE_COULDNT_CONNECT:
        return -ECONNREFUSED;
    default:
        return -EIO;
    }
}

int http_do(const char *method, const char *url, const char *content_type, const char *body,
            const char *const *extra_headers, long timeout_ms, struct http_resp *out)
{
    struct buf b = {0};
    struct buf h = {0};
    struct curl_slist *hdrs = NULL;
    char errbuf[CURL_ERROR_SIZE] = "";
    CURL *e = NULL;
    CURLcode crc;
    int rc = -ENOMEM;

    pthread_once(&curl_once, curl_init_once);
    memset(out, 0, sizeof(*out));
    e = curl_easy_init();
    if (!e) {
        goto out;
    }
    hdrs = build_headers(content_type, extra_headers);
    common_opts(e, url, hdrs, timeout_ms);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, body_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &h);
    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    }
    if (body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    }
    crc = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &out->code);
    rc = map_curl_rc(crc, b.too_big || h.too_big);
    if (rc != 0) {
        fprintf(stderr, "http_do: %s %.200s: %s (%s); HTTP %ld, %zu body bytes so far\n", method,
                url, curl_easy_strerror(crc), errbuf, out->code, b.len);
    }
    /* Even on error, hand over what arrived (a truncated body helps the diagnosis). */
    if (!b.data && buf_append(&b, "", 0) != 0) {
        rc = -ENOMEM;
        goto out;
    }
    if (!h.data && buf_append(&h, "", 0) != 0) {
        rc = -ENOMEM;
        goto out;
    }
    out->body = b.data;
    out->body_len = b.len;
    out->headers = h.data;
    b.data = NULL;
    h.data = NULL;
out:
    free(b.data);
    free(h.data);
    curl_slist_free_all(hdrs);
    if (e) {
        curl_easy_cleanup(e);
    }
    return rc;
}

int http_get(const char *url, long timeout_ms, struct http_resp *out)
{
    return http_do("GET", url, NULL, NULL, NULL, timeout_ms, out);
}

void http_resp_free(struct http_resp *r)
{
    if (!r) {
        return;
    }
    free(r->body);
    free(r->headers);
    memset(r, 0, sizeof(*r));
}

bool http_header_get(const char *headers, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    const char *p = headers;

    if (cap > 0) {
        out[0] = '\0';
    }
    while (p && *p) {
        const char *eol = strchr(p, '\n');
        size_t ll = eol ? (size_t)(eol - p) : strlen(p);

        if (ll > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            const char *end = p + ll;
            size_t vl;

            while (v < end && (*v == ' ' || *v == '\t')) {
                v++;
            }
            while (end > v && isspace((unsigned char)end[-1])) {
                end--;
            }
            vl = (size_t)(end - v);
            if (cap > 0) {
                if (vl >= cap) {
                    vl = cap - 1;
                }
                memcpy(out, v, vl);
                out[vl] = '\0';
            }
            return true;
        }
        p = eol ? eol + 1 : NULL;
    }
    return false;
}

bool http_resp_header(const struct http_resp *r, const char *name, char *out, size_t cap)
{
    return http_header_get(r->headers, name, out, cap);
}

/* ---- watch collector ------------------------------------------------------------------ */

struct watch_line {
    char *text;
    uint64_t at_ms;
};

struct watch {
    pthread_mutex_t mu;
    pthread_cond_t cv;        /* signalled on status, each line, and the end */
    struct watch_line *lines; /* under mu; entries never move their text */
    size_t n_lines;           /* under mu */
    size_t cap_lines;         /* under mu */
    struct buf partial;       /* curl thread only */
    size_t total_bytes;       /* curl thread only */
    struct buf hdr;           /* curl thread; published by headers_done */
    long status;              /* under mu */
    bool headers_done;        /* under mu */
    bool ended;               /* under mu */
    uint64_t end_ms;          /* under mu */
    int curl_rc;              /* under mu */
    uint64_t opened_ms;       /* immutable */
    atomic_bool stop;         /* set by watch_close */
    CURLM *multi;
    CURL *easy;
    struct curl_slist *hdrs;
    pthread_t thread;
};

static void watch_push_line(struct watch *w, const char *p, size_t n)
{
    char *t = malloc(n + 1);

    if (!t) {
        return;
    }
    memcpy(t, p, n);
    t[n] = '\0';
    pthread_mutex_lock(&w->mu);
    if (w->n_lines == w->cap_lines) {
        size_t nc = w->cap_lines ? w->cap_lines * 2 : 64;
        struct watch_line *nl = realloc(w->lines, nc * sizeof(*nl));

        if (!nl) {
            pthread_mutex_unlock(&w->mu);
            free(t);
            return;
        }
        w->lines = nl;
        w->cap_lines = nc;
    }
    w->lines[w->n_lines].text = t;
    w->lines[w->n_lines].at_ms = http_now_ms();
    w->n_lines++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static size_t watch_body_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct watch *w = ud;
    size_t n = size * nmemb;
    size_t i;
    size_t start = 0;

    w->total_bytes += n;
    if (w->total_bytes > HTTP_BODY_MAX) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (ptr[i] != '\n') {
            continue;
        }
        if (w->partial.len > 0) {
            if (buf_append(&w->partial, ptr + start, i - start) != 0) {
                return 0;
            }
            watch_push_line(w, w->partial.data, w->partial.len);
            w->partial.len = 0;
        } else {
            watch_push_line(w, ptr + start, i - start);
        }
        start = i + 1;
    }
    if (start < n && buf_append(&w->partial, ptr + start, n - start) != 0) {
        return 0;
    }
    return n;
}

static size_t watch_header_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct watch *w = ud;
    size_t n = size * nmemb;

    if (header_cb(ptr, size, nmemb, &w->hdr) != n) {
        return 0;
    }
    if ((n == 2 && ptr[0] == '\r' && ptr[1] == '\n') || (n == 1 && ptr[0] == '\n')) {
        long code = 0;

        curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &code);
        if (code >= 200) {
            pthread_mutex_lock(&w->mu);
            w->status = code;
            w->headers_done = true;
            pthread_cond_broadcast(&w->cv);
            pthread_mutex_unlock(&w->mu);
        }
    }
    return n;
}

static void *watch_main(void *arg)
{
    struct watch *w = arg;
    CURLcode result = CURLE_OK;
    bool done = false;
    int running = 1;

    while (!done && !atomic_load(&w->stop)) {
        CURLMsg *m;
        int left;

        curl_multi_perform(w->multi, &running);
        while ((m = curl_multi_info_read(w->multi, &left))) {
            if (m->msg == CURLMSG_DONE) {
                result = m->data.result;
                done = true;
            }
        }
        if (done || running == 0) {
            break;
        }
        curl_multi_poll(w->multi, NULL, 0, 1000, NULL);
    }
    if (w->partial.len > 0) {
        watch_push_line(w, w->partial.data, w->partial.len);
        w->partial.len = 0;
    }
    pthread_mutex_lock(&w->mu);
    if (!w->headers_done) {
        long code = 0;

        curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &code);
        w->status = code;
        w->headers_done = true;
    }
    w->ended = true;
    w->end_ms = http_now_ms();
    w->curl_rc = done ? (int)result : -1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

struct watch *watch_open(const char *url, long timeout_ms)
{
    pthread_condattr_t ca;
    struct watch *w;

    pthread_once(&curl_once, curl_init_once);
    w = calloc(1, sizeof(*w));
    if (!w) {
        return NULL;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&w->stop, false);
    w->opened_ms = http_now_ms();
    w->multi = curl_multi_init();
    w->easy = curl_easy_init();
    if (!w->multi || !w->easy) {
        goto fail;
    }
    w->hdrs = build_headers(NULL, NULL);
    common_opts(w->easy, url, w->hdrs, timeout_ms);
    curl_easy_setopt(w->easy, CURLOPT_WRITEFUNCTION, watch_body_cb);
    curl_easy_setopt(w->easy, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(w->easy, CURLOPT_HEADERFUNCTION, watch_header_cb);
    curl_easy_setopt(w->easy, CURLOPT_HEADERDATA, w);
    curl_multi_add_handle(w->multi, w->easy);
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        curl_multi_remove_handle(w->multi, w->easy);
        goto fail;
    }
    return w;

fail:
    if (w->easy) {
        curl_easy_cleanup(w->easy);
    }
    if (w->multi) {
        curl_multi_cleanup(w->multi);
    }
    curl_slist_free_all(w->hdrs);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    return NULL;
}

static struct timespec deadline_ts(long timeout_ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

long watch_wait_status(struct watch *w, long timeout_ms)
{
    struct timespec ts = deadline_ts(timeout_ms);
    long code;

    pthread_mutex_lock(&w->mu);
    while (!w->headers_done && !w->ended) {
        if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT) {
            break;
        }
    }
    code = w->headers_done ? w->status : 0;
    pthread_mutex_unlock(&w->mu);
    return code;
}

int watch_wait_lines(struct watch *w, size_t n, long timeout_ms)
{
    struct timespec ts = deadline_ts(timeout_ms);
    int rc = 0;

    pthread_mutex_lock(&w->mu);
    while (w->n_lines < n) {
        if (w->ended) {
            rc = -EPIPE;
            break;
        }
        if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT) {
            rc = w->n_lines >= n ? 0 : -ETIMEDOUT;
            break;
        }
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int watch_wait_end(struct watch *w, long timeout_ms)
{
    struct timespec ts = deadline_ts(timeout_ms);
    int rc = 0;

    pthread_mutex_lock(&w->mu);
    while (!w->ended) {
        if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT) {
            rc = w->ended ? 0 : -ETIMEDOUT;
            break;
        }
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

size_t watch_line_count(struct watch *w)
{
    size_t n;

    pthread_mutex_lock(&w->mu);
    n = w->n_lines;
    pthread_mutex_unlock(&w->mu);
    return n;
}

const char *watch_line(struct watch *w, size_t i, uint64_t *at_ms)
{
    const char *t = NULL;

    pthread_mutex_lock(&w->mu);
    if (i < w->n_lines) {
        t = w->lines[i].text;
        if (at_ms) {
            *at_ms = w->lines[i].at_ms;
        }
    }
    pthread_mutex_unlock(&w->mu);
    return t;
}

long watch_status(struct watch *w)
{
    long code;

    pthread_mutex_lock(&w->mu);
    code = w->headers_done ? w->status : 0;
    pthread_mutex_unlock(&w->mu);
    return code;
}

uint64_t watch_opened_ms(struct watch *w)
{
    return w->opened_ms;
}

bool watch_ended(struct watch *w, uint64_t *at_ms, int *curl_rc)
{
    bool ended;

    pthread_mutex_lock(&w->mu);
    ended = w->ended;
    if (ended && at_ms) {
        *at_ms = w->end_ms;
    }
    if (ended && curl_rc) {
        *curl_rc = w->curl_rc;
    }
    pthread_mutex_unlock(&w->mu);
    return ended;
}

const char *watch_headers(struct watch *w)
{
    const char *h;

    pthread_mutex_lock(&w->mu);
    h = (w->headers_done && w->hdr.data) ? w->hdr.data : "";
    pthread_mutex_unlock(&w->mu);
    return h;
}

void watch_close(struct watch *w)
{
    size_t i;

    if (!w) {
        return;
    }
    atomic_store(&w->stop, true);
    curl_multi_wakeup(w->multi);
    pthread_join(w->thread, NULL);
    curl_multi_remove_handle(w->multi, w->easy);
    curl_easy_cleanup(w->easy);
    curl_multi_cleanup(w->multi);
    curl_slist_free_all(w->hdrs);
    for (i = 0; i < w->n_lines; i++) {
        free(w->lines[i].text);
    }
    free(w->lines);
    free(w->partial.data);
    free(w->hdr.data);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
