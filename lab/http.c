/*
 * http.c - the lab's client side on libcurl: one-shot requests with a capped body, watch
 * streams read event by event in a thread, /metrics and /_sim/stats figures, and the writer
 * (its own configmaps at a paced rate, every write's RV logged).
 *
 * A watch's thread owns its curl handle and appends parsed events to an array (capped) under
 * the watch's mutex; the experiment's thread takes them in order with lab_watch_next. The
 * writer's thread owns its handle and appends to its log under the writer's mutex.
 */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "lab/lab_int.h"

#define WATCH_EVENTS_MAX (4u << 20) /* events kept per watch */
#define WATCH_LINE_MAX (4u << 20)   /* longest event line */
/* The writer's log is one mapping reserved at start (pages are committed as they are written), so
 * entries never move while the writer appends: readers may hold the pointer. */
#define WRITER_LOG_MAX (4u << 20)
#define REQ_TIMEOUT_MS 10000

/* ---- requests ------------------------------------------------------------------------ */

struct buf {
    char *data;
    size_t len, cap, max;
    bool truncated;
};

static int buf_add(struct buf *b, const char *p, size_t n)
{
    if (b->len + n > b->max) {
        b->truncated = true;
        n = b->max - b->len;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        char *d;

        while (cap < b->len + n + 1) {
            cap *= 2;
        }
        d = realloc(b->data, cap);
        if (!d) {
            return -1;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
    return buf_add(ctx, p, size * n) == 0 ? size * n : 0;
}

struct hdrs {
    char retry_after[16];
};

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
    struct hdrs *h = ctx;
    size_t len = size * n;
    static const char name[] = "retry-after:";

    if (len > sizeof(name) && strncasecmp(p, name, sizeof(name) - 1) == 0) {
        size_t i = sizeof(name) - 1, j = 0;

        while (i < len && p[i] == ' ') {
            i++;
        }
        while (i < len && p[i] != '\r' && p[i] != '\n' && j + 1 < sizeof(h->retry_after)) {
            h->retry_after[j++] = p[i++];
        }
        h->retry_after[j] = '\0';
    }
    return len;
}

static void url_join(char *out, size_t cap, const char *base, const char *path)
{
    size_t bl = strlen(base);

    while (bl > 0 && base[bl - 1] == '/') {
        bl--;
    }
    snprintf(out, cap, "%.*s%s", (int)bl, base, path);
}

int lab_http(const char *method, const char *base, const char *path, const char *body,
             long timeout_ms, struct lab_resp *r)
{
    char url[2048];
    struct buf b = {.max = LAB_BODY_MAX};
    struct hdrs h = {{0}};
    struct curl_slist *hl = NULL;
    CURLcode rc;
    CURL *c;

    memset(r, 0, sizeof(*r));
    url_join(url, sizeof(url), base, path);
    c = curl_easy_init();
    if (!c) {
        r->body = strdup("curl_easy_init failed");
        return -1;
    }
    hl = curl_slist_append(hl, "Accept: application/json");
    hl = curl_slist_append(hl, "User-Agent: kwp-lab/1");
    if (body) {
        hl = curl_slist_append(hl, "Content-Type: application/json");
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->code);
    curl_easy_getinfo(c, CURLINFO_TOTAL_TIME, &r->seconds);
    curl_easy_cleanup(c);
    curl_slist_free_all(hl);
    snprintf(r->retry_after, sizeof(r->retry_after), "%s", h.retry_after);
    r->truncated = b.truncated;
    if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && b.truncated)) {
        free(b.data);
        r->body = strdup(curl_easy_strerror(rc));
        r->len = r->body ? strlen(r->body) : 0;
        r->code = 0;
        return -1;
    }
    r->body = b.data ? b.data : strdup("");
    r->len = b.len;
    return 0;
}

void lab_resp_free(struct lab_resp *r)
{
    if (r) {
        free(r->body);
        memset(r, 0, sizeof(*r));
    }
}

cJSON *lab_get_json(const char *base, const char *path, long timeout_ms, long *code)
{
    struct lab_resp r;
    cJSON *j = NULL;

    if (lab_http("GET", base, path, NULL, timeout_ms, &r) == 0) {
        j = cJSON_ParseWithLength(r.body, r.len);
    }
    if (code) {
        *code = r.code;
    }
    lab_resp_free(&r);
    return j;
}

uint64_t lab_json_rv(const cJSON *obj)
{
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "resourceVersion");
    char *end;
    unsigned long long v;

    if (!cJSON_IsString(rv) || !rv->valuestring[0]) {
        return 0;
    }
    errno = 0;
    v = strtoull(rv->valuestring, &end, 10);
    return (errno || *end) ? 0 : (uint64_t)v;
}

double lab_metric(const char *base, const char *name, const char *labels)
{
    struct lab_resp r;
    double sum = 0;
    bool found = false;
    size_t nl = strlen(name);

    if (lab_http("GET", base, "/metrics", NULL, REQ_TIMEOUT_MS, &r) != 0 || r.code != 200) {
        lab_resp_free(&r);
        return -1;
    }
    for (char *line = r.body; line && *line;) {
        char *next = strchr(line, '\n');

        if (next) {
            *next++ = '\0';
        }
        if (line[0] != '#' && strncmp(line, name, nl) == 0 &&
            (line[nl] == ' ' || line[nl] == '{')) {
            char *sp = strrchr(line, ' ');
            char *end;
            double v;

            if (sp && (!labels || !labels[0] || strstr(line, labels))) {
                v = strtod(sp + 1, &end);
                if (end != sp + 1) {
                    sum += v;
                    found = true;
                }
            }
        }
        line = next;
    }
    lab_resp_free(&r);
    return found ? sum : -1;
}

double lab_sim_stat(const char *sim_base, const char *resource, const char *field)
{
    cJSON *j = lab_get_json(sim_base, "/_sim/stats", REQ_TIMEOUT_MS, NULL);
    const cJSON *obj = j, *v;
    double out = -1;

    if (resource) {
        obj = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "resources"),
                                               resource);
    }
    v = cJSON_GetObjectItemCaseSensitive(obj, field);
    if (cJSON_IsNumber(v)) {
        out = v->valuedouble;
    }
    cJSON_Delete(j);
    return out;
}

int lab_ns_ensure(struct lab *lab, const char *url)
{
    char body[256];
    struct lab_resp r;

    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}",
             lab->ns);
    if (lab_http("POST", url, "/api/v1/namespaces", body, REQ_TIMEOUT_MS, &r) != 0 ||
        (r.code != 201 && r.code != 200 && r.code != 409)) {
        lab_note(lab, "lab: creating namespace %s on %s: HTTP %ld %.200s", lab->ns, url, r.code,
                 r.body);
        lab_resp_free(&r);
        return -1;
    }
    if (r.code != 409 && !lab->ns_server[0]) {
        snprintf(lab->ns_server, sizeof(lab->ns_server), "%s", url);
    }
    lab_resp_free(&r);
    return 0;
}

/* ---- watch streams ------------------------------------------------------------------- */

struct lab_watch {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    char url[2048];
    long timeout_ms;
    struct buf line; /* the partial line (watch thread only) */
    struct lab_event *evs;
    size_t n, cap, next; /* next: the first event lab_watch_next has not returned */
    long status;
    bool ended;
    atomic_bool abort; /* set by lab_watch_close; the watch thread looks every 50 ms */
};

static enum lab_ev_type ev_type(const char *t)
{
    static const char *const names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

    for (int i = 0; i < 5; i++) {
        if (strcmp(t, names[i]) == 0) {
            return (enum lab_ev_type)i;
        }
    }
    return LAB_EV_ERROR;
}

static void watch_line(struct lab_watch *w, const char *line, size_t len)
{
    cJSON *j = cJSON_ParseWithLength(line, len);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "type");
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, "object");
    struct lab_event ev = {.at_ms = lab_now_ms()};

    if (!cJSON_IsString(t)) {
        ev.type = LAB_EV_ERROR;
        snprintf(ev.message, sizeof(ev.message), "unparsable event: %.200s", line);
    } else {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(o, "metadata"), "name");
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(o, "code");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(o, "message");

        ev.type = ev_type(t->valuestring);
        ev.rv = lab_json_rv(o);
        if (cJSON_IsString(name)) {
            snprintf(ev.name, sizeof(ev.name), "%s", name->valuestring);
        }
        if (ev.type == LAB_EV_ERROR) {
            ev.code = cJSON_IsNumber(code) ? code->valueint : 0;
            if (cJSON_IsString(msg)) {
                snprintf(ev.message, sizeof(ev.message), "%s", msg->valuestring);
            }
        }
    }
    cJSON_Delete(j);
    pthread_mutex_lock(&w->mu);
    if (w->n < WATCH_EVENTS_MAX) {
        if (w->n == w->cap) {
            size_t cap = w->cap ? w->cap * 2 : 256;
            struct lab_event *e = realloc(w->evs, cap * sizeof(*e));

            if (e) {
                w->evs = e;
                w->cap = cap;
            }
        }
        if (w->n < w->cap) {
            w->evs[w->n++] = ev;
        }
    }
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mu);
}

static size_t watch_body(char *p, size_t size, size_t n, void *ctx)
{
    struct lab_watch *w = ctx;
    size_t len = size * n;

    if (w->status == 0) {
        pthread_mutex_lock(&w->mu);
        w->status = 200; /* refined from CURLINFO after the transfer; body means headers came */
        pthread_mutex_unlock(&w->mu);
    }
    for (size_t i = 0; i < len; i++) {
        if (p[i] == '\n') {
            if (w->line.len > 0) {
                watch_line(w, w->line.data, w->line.len);
            }
            w->line.len = 0;
        } else if (buf_add(&w->line, p + i, 1) != 0 || w->line.truncated) {
            return 0; /* a line beyond WATCH_LINE_MAX: stop the stream */
        }
    }
    return len;
}

/* Runs <c> on a multi handle until it is done or w->abort (seen within 50 ms). */
static void watch_perform(struct lab_watch *w, CURL *c)
{
    CURLM *m = curl_multi_init();
    int running = 1;

    if (!m || curl_multi_add_handle(m, c) != CURLM_OK) {
        curl_multi_cleanup(m);
        return;
    }
    while (running && !w->abort) {
        if (curl_multi_perform(m, &running) != CURLM_OK ||
            (running && curl_multi_poll(m, NULL, 0, 50, NULL) != CURLM_OK)) {
            break;
        }
    }
    curl_multi_remove_handle(m, c);
    curl_multi_cleanup(m);
}

static void *watch_main(void *arg)
{
    struct lab_watch *w = arg;
    struct curl_slist *hl = curl_slist_append(NULL, "Accept: application/json");
    CURL *c = curl_easy_init();
    long code = 0;

    hl = curl_slist_append(hl, "User-Agent: kwp-lab/1");
    if (c) {
        curl_easy_setopt(c, CURLOPT_URL, w->url);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, watch_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, w);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, w->timeout_ms);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
        watch_perform(w, c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_cleanup(c);
    }
    curl_slist_free_all(hl);
    if (w->line.len > 0 && !w->line.truncated) {
        watch_line(w, w->line.data, w->line.len);
    }
    pthread_mutex_lock(&w->mu);
    w->status = code;
    w->ended = true;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

struct lab_watch *lab_watch_open(const char *base, const char *path, long timeout_ms)
{
    struct lab_watch *w = calloc(1, sizeof(*w));

    if (!w) {
        return NULL;
    }
    url_join(w->url, sizeof(w->url), base, path);
    w->timeout_ms = timeout_ms;
    w->line.max = WATCH_LINE_MAX;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cond, NULL);
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cond);
        free(w);
        return NULL;
    }
    return w;
}

static void deadline_ts(struct timespec *ts, long ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

int lab_watch_next(struct lab_watch *w, struct lab_event *ev, long timeout_ms)
{
    struct timespec ts;
    int rc;

    deadline_ts(&ts, timeout_ms);
    pthread_mutex_lock(&w->mu);
    while (w->next >= w->n && !w->ended) {
        if (pthread_cond_timedwait(&w->cond, &w->mu, &ts) == ETIMEDOUT) {
            break;
        }
    }
    if (w->next < w->n) {
        *ev = w->evs[w->next++];
        rc = 1;
    } else {
        rc = w->ended ? 0 : -1;
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

long lab_watch_status(struct lab_watch *w)
{
    long s;

    pthread_mutex_lock(&w->mu);
    s = w->status;
    pthread_mutex_unlock(&w->mu);
    return s;
}

void lab_watch_close(struct lab_watch *w)
{
    if (!w) {
        return;
    }
    w->abort = true;
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cond);
    free(w->line.data);
    free(w->evs);
    free(w);
}

/* ---- writes -------------------------------------------------------------------------- */

/* One configmap write on <c> (create when <create>, else an unconditional PUT). Returns the
 * new RV or 0 on failure. */
static uint64_t write_method(CURL *c, const char *base, const char *ns, const char *method,
                             const char *name, uint64_t seq)
{
    bool create = strcmp(method, "POST") == 0;
    char url[1024], body[512];
    struct buf b = {.max = 1 << 20};
    struct curl_slist *hl = curl_slist_append(NULL, "Content-Type: application/json");
    long code = 0;
    uint64_t rv = 0;

    hl = curl_slist_append(hl, "Accept: application/json");
    if (create) {
        snprintf(url, sizeof(url), "%s/api/v1/namespaces/%s/configmaps", base, ns);
    } else {
        snprintf(url, sizeof(url), "%s/api/v1/namespaces/%s/configmaps/%s", base, ns, name);
    }
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"%s\"},\"data\":{\"seq\":\"%" PRIu64 "\"}}",
             name, ns, seq);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, strcmp(method, "DELETE") == 0 ? "" : body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)REQ_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    if (curl_easy_perform(c) == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    }
    if (code >= 200 && code < 300 && b.data) {
        cJSON *j = cJSON_ParseWithLength(b.data, b.len);

        rv = lab_json_rv(j);
        cJSON_Delete(j);
        if (rv == 0) {
            rv = 1; /* a DELETE answered with a Status: done, RV unknown */
        }
    }
    curl_slist_free_all(hl);
    free(b.data);
    return rv;
}

static uint64_t write_one(CURL *c, const char *base, const char *ns, const char *name, uint64_t seq,
                          bool create)
{
    return write_method(c, base, ns, create ? "POST" : "PUT", name, seq);
}

uint64_t lab_write(struct lab *lab, const char *base, const char *method, const char *name,
                   uint64_t seq)
{
    CURL *c = curl_easy_init();
    uint64_t rv = c ? write_method(c, base, lab->ns, method, name, seq) : 0;

    curl_easy_cleanup(c);
    return rv;
}

struct lab_writer {
    struct lab *lab;
    pthread_t thread;
    pthread_mutex_t mu;
    char base[LAB_URL_MAX];
    char ns[64];
    double rate;
    int objects;
    struct lab_write *log;
    size_t n, cap, errors;
    atomic_bool stop;
    bool joined;
};

static void log_write(struct lab_writer *w, uint64_t rv, const char *name)
{
    pthread_mutex_lock(&w->mu);
    if (rv == 0) {
        w->errors++;
    } else {
        if (w->n < w->cap) {
            struct lab_write *e = &w->log[w->n++];

            e->rv = rv;
            e->at_ms = lab_now_ms();
            snprintf(e->name, sizeof(e->name), "%s", name);
        }
    }
    pthread_mutex_unlock(&w->mu);
}

static void *writer_main(void *arg)
{
    struct lab_writer *w = arg;
    CURL *c = curl_easy_init();
    uint64_t start = lab_now_ms();

    for (uint64_t i = 0; c && !w->stop; i++) {
        char name[32];
        uint64_t due = start + (uint64_t)((double)i * 1000.0 / w->rate);
        uint64_t now = lab_now_ms();

        if (due > now) {
            lab_sleep_ms(due - now > 50 ? 50 : due - now);
            i--; /* not yet: come back to the same write (checks stop every 50 ms) */
            continue;
        }
        snprintf(name, sizeof(name), "lab-w-%" PRIu64, i % (uint64_t)w->objects);
        log_write(w, write_one(c, w->base, w->ns, name, i, i < (uint64_t)w->objects), name);
    }
    curl_easy_cleanup(c);
    return NULL;
}

struct lab_writer *lab_writer_start(struct lab *lab, const char *base, double rate, int objects)
{
    struct lab_writer *w = calloc(1, sizeof(*w));

    if (!w) {
        return NULL;
    }
    w->lab = lab;
    snprintf(w->base, sizeof(w->base), "%s", base);
    snprintf(w->ns, sizeof(w->ns), "%s", lab->ns);
    w->rate = rate < 1 ? 1 : rate > 100000 ? 100000 : rate;
    w->objects = objects < 1 ? 1 : objects;
    w->log = mmap(NULL, WRITER_LOG_MAX * sizeof(*w->log), PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (w->log == MAP_FAILED) {
        free(w);
        return NULL;
    }
    w->cap = WRITER_LOG_MAX;
    pthread_mutex_init(&w->mu, NULL);
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
        pthread_mutex_destroy(&w->mu);
        munmap(w->log, WRITER_LOG_MAX * sizeof(*w->log));
        free(w);
        return NULL;
    }
    return w;
}

/* Reads *<field> of <w> under its lock. */
static size_t writer_read(struct lab_writer *w, const size_t *field)
{
    size_t n;

    pthread_mutex_lock(&w->mu);
    n = *field;
    pthread_mutex_unlock(&w->mu);
    return n;
}

size_t lab_writer_count(struct lab_writer *w)
{
    return writer_read(w, &w->n);
}

size_t lab_writer_errors(struct lab_writer *w)
{
    return writer_read(w, &w->errors);
}

const struct lab_write *lab_writer_log(struct lab_writer *w, size_t *n)
{
    const struct lab_write *l;

    pthread_mutex_lock(&w->mu);
    *n = w->n;
    l = w->log;
    pthread_mutex_unlock(&w->mu);
    return l;
}

void lab_writer_stop(struct lab_writer *w)
{
    if (w && !w->joined) {
        w->stop = true;
        pthread_join(w->thread, NULL);
        w->joined = true;
    }
}

void lab_writer_free(struct lab_writer *w)
{
    if (w) {
        lab_writer_stop(w);
        pthread_mutex_destroy(&w->mu);
        munmap(w->log, WRITER_LOG_MAX * sizeof(*w->log));
        free(w);
    }
}

size_t lab_write_burst(struct lab *lab, const char *base, size_t n, int objects, uint64_t *last_rv)
{
    CURL *c = curl_easy_init();
    size_t ok = 0;
    uint64_t rv = 0;

    objects = objects < 1 ? 1 : objects;
    for (size_t i = 0; c && i < n; i++) {
        char name[32];
        uint64_t r;

        snprintf(name, sizeof(name), "lab-b-%zu", i % (size_t)objects);
        r = write_one(c, base, lab->ns, name, i, false);
        if (r == 0) {
            r = write_one(c, base, lab->ns, name, i, true); /* first time: it did not exist */
        }
        if (r) {
            rv = r;
            ok++;
        }
    }
    curl_easy_cleanup(c);
    if (last_rv) {
        *last_rv = rv;
    }
    return ok;
}
