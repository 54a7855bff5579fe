/*
 * proxy.c - the kwp proxy application (see proxy.h).
 *
 * Registry: the cached resources, guarded by reg_lock (held only to find or add an entry;
 * never while calling MHD, curl or the logger). Entries are never removed before shutdown,
 * so a pointer returned by the registry stays valid for the life of the process.
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include "proxy/proxy.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>
#include <curl/curl.h>

#include "cache/bug.h"
#include "cache/resource.h"
#include "proxy/apires.h"
#include "proxy/config.h"
#include "proxy/handlers.h"
#include "proxy/http_server.h"
#include "proxy/k8s_path.h"
#include "proxy/kube_json.h"
#include "proxy/log.h"
#include "proxy/passthrough.h"
#include "proxy/reflector.h"
#include "proxy/upstream.h"
#include "sim/sim.h"

#define PROXY_TICK_MS 100
#define PROXY_SWEEP_MS 1000
#define PROXY_DISCOVERY_MAX_BYTES (16 * 1024 * 1024)
#define PROXY_DISCOVERY_REFRESH_MS (5 * 60 * 1000)
#define PROXY_DISCOVERY_RETRY_MS 5000
#define PROXY_START_TIMEOUT_MS 2000 /* discovery at start must not delay listening */
#define PROXY_REQUEST_TIMEOUT_MS 10000
#define PROXY_MAX_RESOURCES 1024

struct proxy_opts {
    const char *listen;
    const char *upstream;
    const char *kubeconfig;
    const char *token;
    const char *token_file;
    const char *ca_file;
    const char *client_cert;
    const char *client_key;
    bool insecure;
    struct config_list resources;
    int64_t freshness_wait_ms;
    const char *too_large_rv; /* "forward" or "local" */
    int64_t history_min;
    int64_t history_max;
    int64_t history_window_ms;
    int64_t bookmark_interval_ms;
    int64_t watch_stall_ms;
    int64_t watch_max_lag_ms;
    int64_t watch_wake_ms;
    int64_t threads;
    int64_t max_connections;
    int64_t conn_memory;
    int64_t max_body;
    int64_t page_size;
    int64_t max_line;
    int64_t probe_interval_ms;
    bool cache_events;
    const char *tls_cert_file;
    const char *tls_key_file;
};

/* What upstream discovery says about one resource. */
struct disc_entry {
    char *group;
    char *version;
    char *plural;
    char *kind;
    bool namespaced;
    bool listwatch;
};

struct proxy {
    struct proxy_opts o;
    struct upstream *up;
    struct reflector *rf;
    struct passthrough *pt;
    struct http_server *srv;
    struct handlers_opts hopts;
    pthread_mutex_t reg_lock; /* guards res, n_res, disc, n_disc, disc_loaded */
    struct apires *res[PROXY_MAX_RESOURCES];
    size_t n_res;
    struct disc_entry *disc;
    size_t n_disc;
    bool disc_loaded;
    atomic_bool stop;
    pthread_t tick;
    pthread_t disc_thread;
    bool threads_started;
    atomic_bool upstream_ok; /* the last probe (or discovery) of upstream succeeded */
    pthread_mutex_t disc_mu; /* with disc_cv: wakes the discovery thread early */
    pthread_cond_t disc_cv;
    bool disc_wanted;
};

/* ---- discovery ------------------------------------------------------------------------- */

struct body {
    char *data;
    size_t len;
    bool too_big;
};

static size_t body_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct body *b = ud;
    size_t n = size * nmemb;

    if (b->len + n > PROXY_DISCOVERY_MAX_BYTES) {
        b->too_big = true;
        return 0;
    }
    b->data = xrealloc(b->data, b->len + n + 1);
    memcpy(b->data + b->len, ptr, n);
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

/* Aborts a blocking transfer of the upstream thread as soon as shutdown starts (libcurl
 * calls this at least once a second, also while waiting on a hung server). */
static int abort_on_stop(void *clientp, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                         curl_off_t ulnow)
{
    const struct proxy *p = clientp;
    return atomic_load(&p->stop) ? 1 : 0;
}

/* Blocking GET for discovery documents (discovery thread and start-up only). */
static cJSON *get_json(struct proxy *p, const char *path, long *code, long timeout_ms)
{
    CURL *e = curl_easy_init();
    struct curl_slist *h = NULL;
    struct body b = {0};
    cJSON *j = NULL;
    CURLcode rc;

    *code = 0;
    if (!e) {
        return NULL;
    }
    h = curl_slist_append(h, "Accept: application/json");
    upstream_setup(p->up, e, path, &h);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, body_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "kwp-proxy/discovery");
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, abort_on_stop);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, p);
    rc = curl_easy_perform(e);
    if (rc == CURLE_OK) {
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, code);
        if (*code == 200 && b.data) {
            j = cJSON_ParseWithLength(b.data, b.len);
        }
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    free(b.data);
    return j;
}

static bool has_verb(const cJSON *r, const char *verb)
{
    const cJSON *verbs = cJSON_GetObjectItemCaseSensitive(r, "verbs"), *v;
    cJSON_ArrayForEach(v, verbs)
    {
        if (cJSON_IsString(v) && strcmp(v->valuestring, verb) == 0) {
            return true;
        }
    }
    return false;
}

static void disc_add_list(struct disc_entry **out, size_t *n, const char *group,
                          const char *version, const cJSON *list)
{
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(list, "resources"), *r;

    cJSON_ArrayForEach(r, rs)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(r, "name");
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(r, "kind");
        const cJSON *nsd = cJSON_GetObjectItemCaseSensitive(r, "namespaced");
        struct disc_entry *d;
        if (!cJSON_IsString(name) || !cJSON_IsString(kind) || strchr(name->valuestring, '/')) {
            continue; /* subresources */
        }
        *out = xrealloc(*out, sizeof(**out) * (*n + 1));
        d = &(*out)[(*n)++];
        d->group = xstrdup(group);
        d->version = xstrdup(version);
        d->plural = xstrdup(name->valuestring);
        d->kind = xstrdup(kind->valuestring);
        d->namespaced = cJSON_IsTrue(nsd);
        d->listwatch = has_verb(r, "list") && has_verb(r, "watch");
    }
}

static void disc_free(struct disc_entry *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(d[i].group);
        free(d[i].version);
        free(d[i].plural);
        free(d[i].kind);
    }
    free(d);
}

/* Fetches the whole discovery tree; replaces the registry's copy on success. */
static int discover(struct proxy *p, long timeout_ms)
{
    struct disc_entry *d = NULL, *old;
    size_t n = 0, n_old;
    long code;
    cJSON *core, *apis, *g;

    core = get_json(p, "/api/v1", &code, timeout_ms);
    if (!core) {
        return -EAGAIN;
    }
    disc_add_list(&d, &n, "", "v1", core);
    cJSON_Delete(core);
    apis = get_json(p, "/apis", &code, timeout_ms);
    if (!apis) {
        disc_free(d, n);
        return -EAGAIN;
    }
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(apis, "groups"))
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(g, "name"), *v;
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(g, "versions"))
        {
            const cJSON *gv = cJSON_GetObjectItemCaseSensitive(v, "groupVersion");
            const cJSON *ver = cJSON_GetObjectItemCaseSensitive(v, "version");
            char path[512];
            cJSON *list;
            if (!cJSON_IsString(name) || !cJSON_IsString(gv) || !cJSON_IsString(ver)) {
                continue;
            }
            snprintf(path, sizeof(path), "/apis/%s", gv->valuestring);
            list = get_json(p, path, &code, timeout_ms);
            if (list) {
                disc_add_list(&d, &n, name->valuestring, ver->valuestring, list);
                cJSON_Delete(list);
            }
        }
    }
    cJSON_Delete(apis);
    pthread_mutex_lock(&p->reg_lock);
    old = p->disc;
    n_old = p->n_disc;
    p->disc = d;
    p->n_disc = n;
    p->disc_loaded = true;
    pthread_mutex_unlock(&p->reg_lock);
    disc_free(old, n_old);
    return 0;
}

/* Upstream liveness: GET /version answered 200. A frozen or unreachable upstream makes
 * /readyz fail while the cache keeps serving what it has. */
static bool probe(struct proxy *p)
{
    long code = 0;
    cJSON *j = get_json(p, "/version", &code, PROXY_REQUEST_TIMEOUT_MS / 2);

    cJSON_Delete(j);
    return code == 200;
}

/* The upstream thread: discovery (retried until it works, then refreshed) and the probe. */
static void *disc_main(void *arg)
{
    struct proxy *p = arg;
    struct log_ratelimit rl = {0};
    int64_t next_disc = 0, next_probe = 0;
    bool disc_ok;

    pthread_mutex_lock(&p->reg_lock);
    disc_ok = p->disc_loaded; /* proxy_start tried once already */
    pthread_mutex_unlock(&p->reg_lock);
    if (disc_ok) {
        next_disc = clock_mono_ms() + PROXY_DISCOVERY_REFRESH_MS;
    }
    while (!atomic_load(&p->stop)) {
        struct timespec ts;
        int64_t now = clock_mono_ms();
        bool wanted;

        if (now >= next_disc) {
            int rc = discover(p, PROXY_REQUEST_TIMEOUT_MS);
            if (rc == 0 && !disc_ok) {
                log_info("proxy", "resources=%zu msg=\"upstream discovery loaded\"", p->n_disc);
            } else if (rc != 0) {
                log_ratelimited(&rl, 60000, LOG_LEVEL_WARN, "proxy",
                                "upstream=%s msg=\"upstream discovery failed, retrying\"",
                                upstream_url(p->up));
            }
            disc_ok = rc == 0;
            next_disc = clock_mono_ms() +
                        (disc_ok ? PROXY_DISCOVERY_REFRESH_MS : PROXY_DISCOVERY_RETRY_MS);
        }
        if (now >= next_probe) {
            bool ok = probe(p);
            if (ok != atomic_load(&p->upstream_ok)) {
                if (ok) {
                    log_info("proxy", "upstream=%s msg=\"upstream answers\"", upstream_url(p->up));
                } else {
                    log_warn("proxy", "upstream=%s msg=\"upstream does not answer: not ready, "
                             "serving from the cache\"", upstream_url(p->up));
                }
            }
            atomic_store(&p->upstream_ok, ok);
            next_probe = clock_mono_ms() + p->o.probe_interval_ms;
        }
        pthread_mutex_lock(&p->disc_mu);
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (!p->disc_wanted && !atomic_load(&p->stop)) {
            (void)pthread_cond_timedwait(&p->disc_cv, &p->disc_mu, &ts);
        }
        wanted = p->disc_wanted;
        p->disc_wanted = false;
        pthread_mutex_unlock(&p->disc_mu);
        if (wanted && !disc_ok) {
            next_disc = 0;
        }
    }
    return NULL;
}

static void disc_poke(struct proxy *p)
{
    pthread_mutex_lock(&p->disc_mu);
    p->disc_wanted = true;
    pthread_cond_signal(&p->disc_cv);
    pthread_mutex_unlock(&p->disc_mu);
}

/* ---- registry -------------------------------------------------------------------------- */

/* Groups whose resources are compiled into kube-apiserver: their list items carry no
 * kind/apiVersion. Anything else is served as a custom resource (unstructured). */
static bool builtin_group(const char *g)
{
    static const char *const groups[] = {
        "", "apps", "batch", "autoscaling", "policy", "rbac.authorization.k8s.io",
        "networking.k8s.io", "storage.k8s.io", "coordination.k8s.io", "discovery.k8s.io",
        "events.k8s.io", "node.k8s.io", "scheduling.k8s.io", "certificates.k8s.io",
        "admissionregistration.k8s.io", "apiextensions.k8s.io", "apiregistration.k8s.io",
        "flowcontrol.apiserver.k8s.io", "resource.k8s.io", "storagemigration.k8s.io",
        "internal.apiserver.k8s.io", "authentication.k8s.io", "authorization.k8s.io"};
    for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
        if (strcmp(g, groups[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* Events are served from etcd by kube-apiserver (no watch cache): pass them through. */
static bool never_cached(const struct proxy *p, const char *group, const char *plural)
{
    if (p->o.cache_events) {
        return false;
    }
    return strcmp(plural, "events") == 0 && (group[0] == '\0' || strcmp(group, "events.k8s.io") == 0);
}

static struct apires *reg_find(struct proxy *p, const char *g, const char *v, const char *plural)
{
    for (size_t i = 0; i < p->n_res; i++) {
        struct apires *ar = p->res[i];
        if (strcmp(ar->kind.group, g) == 0 && strcmp(ar->kind.version, v) == 0 &&
            strcmp(ar->kind.plural, plural) == 0) {
            return ar;
        }
    }
    return NULL;
}

static struct ring_opts ring_opts_of(const struct proxy *p)
{
    struct ring_opts ro = {.min_cap = (size_t)p->o.history_min,
                           .max_cap = (size_t)p->o.history_max,
                           .fresh_ms = p->o.history_window_ms};
    return ro;
}

/* Builds an apires for a discovered resource (copying its strings into one buffer). */
static struct apires *apires_from_disc(const struct proxy *p, const struct disc_entry *d)
{
    const struct apires_kind *b = apires_builtin(d->group, d->version, d->plural);
    struct apires_kind k = {0};
    struct ring_opts ro = ring_opts_of(p);
    size_t len;
    char *buf, *w;

    if (b) {
        return apires_new(b, NULL, &ro);
    }
    len = strlen(d->group) + strlen(d->version) + 2 * strlen(d->plural) + 2 * strlen(d->kind) +
          16;
    buf = xmalloc(len);
    w = buf;
#define PUT(field, s)                                                                              \
    do {                                                                                           \
        size_t l_ = strlen(s);                                                                     \
        memcpy(w, s, l_ + 1);                                                                      \
        k.field = w;                                                                               \
        w += l_ + 1;                                                                               \
    } while (0)
    PUT(group, d->group);
    PUT(version, d->version);
    PUT(plural, d->plural);
    PUT(singular, d->plural);
    PUT(kind, d->kind);
#undef PUT
    memcpy(w, d->kind, strlen(d->kind));
    memcpy(w + strlen(d->kind), "List", 5);
    k.list_kind = w;
    k.namespaced = d->namespaced;
    k.builtin = builtin_group(d->group);
    k.short_names = "";
    k.bookmark_body = "";
    k.fields[0] = NULL;
    return apires_new(&k, buf, &ro);
}

/*
 * Returns the cached resource for group/version/plural, creating it (and starting its
 * reflector) when discovery lists it with list+watch. NULL: not cacheable (forward).
 */
static struct apires *reg_ensure(struct proxy *p, const char *g, const char *v, const char *plural)
{
    struct apires *ar;
    bool created = false, want_disc = false;

    if (never_cached(p, g, plural)) {
        return NULL;
    }
    pthread_mutex_lock(&p->reg_lock);
    ar = reg_find(p, g, v, plural);
    if (!ar && p->disc_loaded && p->n_res < PROXY_MAX_RESOURCES) {
        for (size_t i = 0; i < p->n_disc; i++) {
            const struct disc_entry *d = &p->disc[i];
            if (strcmp(d->group, g) == 0 && strcmp(d->version, v) == 0 &&
                strcmp(d->plural, plural) == 0) {
                if (d->listwatch) {
                    ar = apires_from_disc(p, d);
                    p->res[p->n_res++] = ar;
                    created = true;
                }
                break;
            }
        }
    } else if (!ar && !p->disc_loaded) {
        want_disc = true;
    }
    pthread_mutex_unlock(&p->reg_lock);
    if (created) {
        log_info("proxy", "resource=%s msg=\"caching resource on first use\"",
                 resource_name(ar->res));
        reflector_add(p->rf, ar);
    }
    if (want_disc) {
        disc_poke(p);
    }
    return ar;
}

/* Adds a --resources entry: "pods", "v1/pods", "apps/v1/deployments", "g/v/plural:cluster". */
static int reg_add_spec(struct proxy *p, const char *spec)
{
    char full[256];
    struct apires_kind k;
    struct ring_opts ro = ring_opts_of(p);
    char *owned = NULL;
    struct apires *ar;

    if (!strchr(spec, '/')) {
        snprintf(full, sizeof(full), "v1/%s", spec);
    } else {
        snprintf(full, sizeof(full), "%s", spec);
    }
    if (apires_parse_spec(full, &k, &owned) != 0) {
        fprintf(stderr, "kwp proxy: invalid --resources entry %s\n", spec);
        return -EINVAL;
    }
    pthread_mutex_lock(&p->reg_lock);
    /* discovery knows the real kind and scope of custom resources */
    for (size_t i = 0; !apires_builtin(k.group, k.version, k.plural) && i < p->n_disc; i++) {
        const struct disc_entry *d = &p->disc[i];
        if (strcmp(d->group, k.group) == 0 && strcmp(d->version, k.version) == 0 &&
            strcmp(d->plural, k.plural) == 0) {
            pthread_mutex_unlock(&p->reg_lock);
            free(owned);
            ar = apires_from_disc(p, d);
            goto add;
        }
    }
    pthread_mutex_unlock(&p->reg_lock);
    if (!apires_builtin(k.group, k.version, k.plural)) {
        k.builtin = builtin_group(k.group);
    }
    ar = apires_new(&k, owned, &ro);
add:
    pthread_mutex_lock(&p->reg_lock);
    if (reg_find(p, ar->kind.group, ar->kind.version, ar->kind.plural) ||
        p->n_res >= PROXY_MAX_RESOURCES) {
        pthread_mutex_unlock(&p->reg_lock);
        apires_free(ar);
        return 0;
    }
    p->res[p->n_res++] = ar;
    pthread_mutex_unlock(&p->reg_lock);
    reflector_add(p->rf, ar);
    return 0;
}

/* A stable copy of the registry's entries (they are never freed before shutdown). */
static size_t reg_snapshot(struct proxy *p, struct apires **out, size_t cap)
{
    size_t n;
    pthread_mutex_lock(&p->reg_lock);
    n = p->n_res < cap ? p->n_res : cap;
    memcpy(out, p->res, n * sizeof(*out));
    pthread_mutex_unlock(&p->reg_lock);
    return n;
}

/* ---- health and metrics ---------------------------------------------------------------- */

struct sbuf {
    char *d;
    size_t len, cap;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(b->d ? b->d + b->len : NULL, b->d ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            return;
        }
        if (b->d && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        b->cap = (b->cap + (size_t)n + 1) * 2;
        b->d = xrealloc(b->d, b->cap);
    }
}

static bool ready(struct proxy *p, char *why, size_t why_len);

static void serve_metrics(struct proxy *p, struct http_req *req)
{
    struct apires *rs[PROXY_MAX_RESOURCES];
    size_t n = reg_snapshot(p, rs, PROXY_MAX_RESOURCES);
    struct sbuf b = {0};
    struct {
        const char *name, *type, *help;
        size_t off;
    } ctrs[] = {
        {"kwp_upstream_watches_open", "gauge", "Upstream watch streams open (1 per cached resource when healthy).", offsetof(struct apires_counters, up_watch_open)},
        {"kwp_upstream_watch_requests_total", "counter", "Upstream WATCH requests sent.", offsetof(struct apires_counters, up_watches)},
        {"kwp_upstream_list_requests_total", "counter", "Upstream LIST requests (pages) sent.", offsetof(struct apires_counters, up_lists)},
        {"kwp_upstream_events_total", "counter", "Watch events received from upstream.", offsetof(struct apires_counters, up_events)},
        {"kwp_upstream_bookmarks_total", "counter", "Bookmarks received from upstream.", offsetof(struct apires_counters, up_bookmarks)},
        {"kwp_upstream_errors_total", "counter", "Failed upstream requests and malformed upstream data.", offsetof(struct apires_counters, up_errors)},
        {"kwp_relists_total", "counter", "Relists of the resource (start, upstream 410, protocol errors).", offsetof(struct apires_counters, relists)},
        {"kwp_watches_open", "gauge", "Downstream watches open.", offsetof(struct apires_counters, watches_open)},
        {"kwp_watch_requests_total", "counter", "Downstream WATCH requests served from the cache.", offsetof(struct apires_counters, watches)},
        {"kwp_list_requests_total", "counter", "Downstream LIST requests served from the cache.", offsetof(struct apires_counters, lists)},
        {"kwp_get_requests_total", "counter", "Downstream GET requests served from the cache.", offsetof(struct apires_counters, gets)},
        {"kwp_frames_sent_total", "counter", "Watch events written to downstream watches.", offsetof(struct apires_counters, frames)},
        {"kwp_too_old_total", "counter", "410 too old resource version answers.", offsetof(struct apires_counters, too_old)},
        {"kwp_too_large_total", "counter", "504 Too large resource version answers.", offsetof(struct apires_counters, too_large)},
        {"kwp_terminated_watchers_total", "counter", "Watches ended because their next event waited longer than --watch-max-lag.", offsetof(struct apires_counters, terminated)},
        {"kwp_not_ready_total", "counter", "429 storage is (re)initializing answers.", offsetof(struct apires_counters, not_ready)},
        {"kwp_forwarded_total", "counter", "Requests for this resource passed upstream.", offsetof(struct apires_counters, forwarded)},
    };

    for (size_t c = 0; c < sizeof(ctrs) / sizeof(ctrs[0]); c++) {
        sb_printf(&b, "# HELP %s %s\n# TYPE %s %s\n", ctrs[c].name, ctrs[c].help, ctrs[c].name,
                  ctrs[c].type);
        for (size_t i = 0; i < n; i++) {
            atomic_ullong *v = (atomic_ullong *)((char *)&rs[i]->ctr + ctrs[c].off);
            sb_printf(&b, "%s{resource=\"%s\"} %llu\n", ctrs[c].name, resource_name(rs[i]->res),
                      (unsigned long long)atomic_load(v));
        }
    }
    sb_printf(&b, "# HELP kwp_resource_version Current resourceVersion of the cache.\n"
                  "# TYPE kwp_resource_version gauge\n");
    for (size_t i = 0; i < n; i++) {
        struct resource_stats st;
        resource_stats(rs[i]->res, &st);
        sb_printf(&b, "kwp_resource_version{resource=\"%s\"} %" PRIu64 "\n",
                  resource_name(rs[i]->res), st.rv);
    }
    sb_printf(&b, "# HELP kwp_history_events Events held in the history window.\n"
                  "# TYPE kwp_history_events gauge\n");
    for (size_t i = 0; i < n; i++) {
        struct resource_stats st;
        resource_stats(rs[i]->res, &st);
        sb_printf(&b, "kwp_history_events{resource=\"%s\"} %zu\n", resource_name(rs[i]->res),
                  st.history_len);
    }
    sb_printf(&b, "# HELP kwp_history_oldest_rv Smallest resourceVersion a watch may start from "
                  "(older gets 410).\n# TYPE kwp_history_oldest_rv gauge\n");
    for (size_t i = 0; i < n; i++) {
        struct resource_stats st;
        resource_stats(rs[i]->res, &st);
        sb_printf(&b, "kwp_history_oldest_rv{resource=\"%s\"} %" PRIu64 "\n",
                  resource_name(rs[i]->res), st.history_boundary);
    }
    sb_printf(&b, "# HELP kwp_objects Objects in the cache.\n# TYPE kwp_objects gauge\n");
    for (size_t i = 0; i < n; i++) {
        struct resource_stats st;
        resource_stats(rs[i]->res, &st);
        sb_printf(&b, "kwp_objects{resource=\"%s\"} %zu\n", resource_name(rs[i]->res),
                  st.objects);
    }
    sb_printf(&b, "# HELP kwp_object_bytes JSON bytes of the cached objects.\n"
                  "# TYPE kwp_object_bytes gauge\n");
    for (size_t i = 0; i < n; i++) {
        struct resource_stats st;
        resource_stats(rs[i]->res, &st);
        sb_printf(&b, "kwp_object_bytes{resource=\"%s\"} %zu\n", resource_name(rs[i]->res),
                  st.object_bytes);
    }
    {
        struct passthrough_stats ps;
        char why[256];
        passthrough_stats(p->pt, &ps);
        sb_printf(&b,
                  "# HELP kwp_passthrough_requests_total Requests forwarded upstream.\n"
                  "# TYPE kwp_passthrough_requests_total counter\n"
                  "kwp_passthrough_requests_total %" PRIu64 "\n"
                  "# HELP kwp_passthrough_active Forwarded requests in flight.\n"
                  "# TYPE kwp_passthrough_active gauge\n"
                  "kwp_passthrough_active %" PRIu64 "\n"
                  "# HELP kwp_passthrough_bytes_total Response bytes streamed from upstream.\n"
                  "# TYPE kwp_passthrough_bytes_total counter\n"
                  "kwp_passthrough_bytes_total %" PRIu64 "\n"
                  "# HELP kwp_passthrough_upstream_errors_total Forwarded requests that failed "
                  "before a response (answered 503).\n"
                  "# TYPE kwp_passthrough_upstream_errors_total counter\n"
                  "kwp_passthrough_upstream_errors_total %" PRIu64 "\n"
                  "# HELP kwp_passthrough_stream_errors_total Forwarded responses cut after the "
                  "headers.\n"
                  "# TYPE kwp_passthrough_stream_errors_total counter\n"
                  "kwp_passthrough_stream_errors_total %" PRIu64 "\n",
                  ps.requests, ps.active, ps.bytes_upstream, ps.upstream_errors,
                  ps.stream_errors);
        sb_printf(&b, "# HELP kwp_ready 1 when every cached resource is synced and streaming.\n"
                      "# TYPE kwp_ready gauge\nkwp_ready %d\n",
                  ready(p, why, sizeof(why)) ? 1 : 0);
    }
    http_reply(req, 200, "text/plain; version=0.0.4; charset=utf-8", b.d, b.len);
    free(b.d);
}

/* Ready: discovery loaded and every cached resource synced with its upstream watch open. */
static bool ready(struct proxy *p, char *why, size_t why_len)
{
    struct apires *rs[PROXY_MAX_RESOURCES];
    size_t n = reg_snapshot(p, rs, PROXY_MAX_RESOURCES);
    bool disc;

    pthread_mutex_lock(&p->reg_lock);
    disc = p->disc_loaded;
    pthread_mutex_unlock(&p->reg_lock);
    if (!disc) {
        snprintf(why, why_len, "upstream discovery not loaded");
        return false;
    }
    if (!atomic_load(&p->upstream_ok)) {
        snprintf(why, why_len, "upstream does not answer GET /version");
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!resource_is_ready(rs[i]->res, NULL)) {
            snprintf(why, why_len, "%s not synced", resource_name(rs[i]->res));
            return false;
        }
        if (atomic_load(&rs[i]->ctr.up_watch_open) == 0) {
            snprintf(why, why_len, "%s upstream watch not open", resource_name(rs[i]->res));
            return false;
        }
    }
    return true;
}

/* ---- routing --------------------------------------------------------------------------- */

static void forward(void *app, struct http_req *req)
{
    struct proxy *p = app;
    passthrough_forward(p->pt, req);
}

static void forward_counted(void *app, struct http_req *req)
{
    struct proxy *p = app;
    struct k8s_path kp;

    if (k8s_path_parse(http_req_path(req), &kp) == 0) {
        pthread_mutex_lock(&p->reg_lock);
        struct apires *ar = reg_find(p, kp.group, kp.version, kp.resource);
        pthread_mutex_unlock(&p->reg_lock);
        if (ar) {
            atomic_fetch_add(&ar->ctr.forwarded, 1);
        }
    }
    passthrough_forward(p->pt, req);
}

static void proxy_handle(void *app, struct http_req *req)
{
    struct proxy *p = app;
    const char *path = http_req_path(req);
    const char *method = http_req_method(req);
    struct k8s_path kp;
    struct apires *ar;
    enum handlers_why cause;
    char why[256];

    if (strcmp(path, "/healthz") == 0 || strcmp(path, "/livez") == 0) {
        http_reply(req, 200, "text/plain; charset=utf-8", "ok", 2);
        return;
    }
    if (strcmp(path, "/readyz") == 0) {
        if (ready(p, why, sizeof(why))) {
            http_reply(req, 200, "text/plain; charset=utf-8", "ok", 2);
        } else {
            char msg[300];
            int n = snprintf(msg, sizeof(msg), "not ready: %s\n", why);
            http_reply(req, 503, "text/plain; charset=utf-8", msg, (size_t)n);
        }
        return;
    }
    if (strcmp(path, "/metrics") == 0) {
        serve_metrics(p, req);
        return;
    }
    cause = HANDLERS_WHY_NOT_RESOURCE;
    ar = NULL;
    if (strcmp(method, "GET") == 0 && k8s_path_parse(path, &kp) == 0 && kp.subresource[0] == '\0') {
        ar = reg_ensure(p, kp.group, kp.version, kp.resource);
        cause = handlers_why_resource(ar, &kp);
    }
    if (handlers_route(&p->hopts, cause) == HANDLERS_FORWARD) {
        forward(p, req);
        return;
    }
    handlers_serve(req, ar, &kp, &p->hopts);
}

static void *tick_main(void *arg)
{
    struct proxy *p = arg;
    int64_t next_sweep = 0;
    struct apires *rs[PROXY_MAX_RESOURCES];

    while (!atomic_load(&p->stop)) {
        struct timespec ts = {0, PROXY_TICK_MS * 1000000L};
        int64_t now = clock_mono_ms();
        bool sweep = now >= next_sweep;
        size_t n = reg_snapshot(p, rs, PROXY_MAX_RESOURCES);
        for (size_t i = 0; i < n; i++) {
            if (sweep) {
                handlers_tick(rs[i], now);
            } else {
                (void)resource_tick(rs[i]->res, now, NULL, NULL);
            }
        }
        if (sweep) {
            next_sweep = now + PROXY_SWEEP_MS;
        }
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* ---- lifecycle ------------------------------------------------------------------------- */

/* One HTTP worker per core this process may run on (its affinity mask), 1 to 64. */
static int64_t cores_available(void)
{
    cpu_set_t set;
    int n;

    CPU_ZERO(&set);
    n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
    if (n <= 0) {
        n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    }
    return n < 1 ? 1 : n > 64 ? 64 : n;
}

static void opts_defaults(struct proxy_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->listen = "127.0.0.1:8080";
    o->freshness_wait_ms = 250;
    o->too_large_rv = "forward";
    o->history_min = RING_MIN_CAP_DEFAULT;
    o->history_max = RING_MAX_CAP_DEFAULT;
    o->history_window_ms = RING_FRESH_MS_DEFAULT;
    o->bookmark_interval_ms = 60000;
    o->watch_stall_ms = 10000;
    o->watch_max_lag_ms = HANDLERS_MAX_LAG_DEFAULT_MS;
    o->watch_wake_ms = HTTP_DEFAULT_RESUME_INTERVAL_MS;
    o->threads = cores_available();
    o->max_connections = HTTP_DEFAULT_MAX_CONNECTIONS;
    o->conn_memory = HTTP_DEFAULT_CONN_MEMORY;
    o->max_body = HTTP_DEFAULT_MAX_BODY;
    o->page_size = 500;
    o->max_line = 16 * 1024 * 1024;
    o->probe_interval_ms = 10000;
}

static void proxy_stop(struct proxy *p)
{
    struct apires *rs[PROXY_MAX_RESOURCES];
    size_t n;

    atomic_store(&p->stop, true);
    if (p->srv) {
        http_server_quiesce(p->srv);
    }
    if (p->threads_started) {
        disc_poke(p);
        pthread_join(p->disc_thread, NULL);
        pthread_join(p->tick, NULL);
    }
    reflector_free(p->rf);
    p->rf = NULL;
    n = reg_snapshot(p, rs, PROXY_MAX_RESOURCES);
    for (size_t i = 0; i < n; i++) {
        resource_close_all(rs[i]->res);
    }
    passthrough_free(p->pt);
    p->pt = NULL;
    for (int i = 0; p->srv && i < 300 && http_server_active(p->srv) > 0; i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    http_server_stop(p->srv);
    p->srv = NULL;
    for (size_t i = 0; i < p->n_res; i++) {
        apires_free(p->res[i]);
    }
    disc_free(p->disc, p->n_disc);
    upstream_free(p->up);
    pthread_mutex_destroy(&p->reg_lock);
    pthread_mutex_destroy(&p->disc_mu);
    pthread_cond_destroy(&p->disc_cv);
    free(p);
}

static struct proxy *proxy_start(const struct proxy_opts *o, const char *upstream_url,
                                 char *err, size_t err_len)
{
    struct proxy *p = xcalloc(1, sizeof(*p));
    struct upstream_opts uo = {0};
    struct reflector_opts ro = {0};
    struct passthrough_opts po = {.stall_timeout_s = (unsigned)((o->watch_stall_ms + 999) / 1000)};
    struct http_server_opts hso = {0};

    p->o = *o;
    pthread_mutex_init(&p->reg_lock, NULL);
    pthread_mutex_init(&p->disc_mu, NULL);
    pthread_cond_init(&p->disc_cv, NULL);
    uo.url = upstream_url;
    uo.token = o->token;
    uo.token_file = o->token_file;
    uo.ca_file = o->ca_file;
    uo.client_cert = o->client_cert;
    uo.client_key = o->client_key;
    uo.insecure = o->insecure;
    p->up = upstream_new(&uo, err, err_len);
    if (!p->up) {
        goto fail;
    }
    ro.page_size = o->page_size;
    ro.max_line_bytes = (size_t)o->max_line;
    p->rf = reflector_new(p->up, &ro, err, err_len);
    if (!p->rf) {
        goto fail;
    }
    p->pt = passthrough_new(p->up, &po, err, err_len);
    if (!p->pt) {
        goto fail;
    }
    p->hopts.authoritative = false;
    p->hopts.forward = forward_counted;
    p->hopts.app = p;
    p->hopts.bookmark_interval_ms = o->bookmark_interval_ms;
    p->hopts.freshness_wait_ms = o->freshness_wait_ms;
    p->hopts.watch_stall_s = (o->watch_stall_ms + 999) / 1000;
    p->hopts.watch_max_lag_ms = o->watch_max_lag_ms;
    p->hopts.local_too_large = strcmp(o->too_large_rv, "local") == 0;
    if (discover(p, PROXY_START_TIMEOUT_MS) == 0) {
        atomic_store(&p->upstream_ok, true);
    }
    if (p->disc_loaded) {
        log_info("proxy", "upstream=%s resources=%zu msg=\"upstream discovery loaded\"",
                 upstream_url, p->n_disc);
    } else {
        log_warn("proxy", "upstream=%s msg=\"upstream unreachable at start; serving what can be "
                 "served and retrying\"", upstream_url);
    }
    for (size_t i = 0; i < o->resources.len; i++) {
        if (reg_add_spec(p, o->resources.items[i]) != 0) {
            snprintf(err, err_len, "invalid --resources entry %s", o->resources.items[i]);
            goto fail;
        }
    }
    hso.listen = o->listen;
    hso.threads = (unsigned)o->threads;
    hso.max_connections = (unsigned)o->max_connections;
    hso.conn_memory = (size_t)o->conn_memory;
    hso.max_body = (size_t)o->max_body;
    hso.resume_interval_ms = o->watch_wake_ms;
    hso.tls_cert_file = o->tls_cert_file;
    hso.tls_key_file = o->tls_key_file;
    p->srv = http_server_start(&hso, proxy_handle, p, err, err_len);
    if (!p->srv) {
        goto fail;
    }
    if (pthread_create(&p->tick, NULL, tick_main, p) != 0 ||
        pthread_create(&p->disc_thread, NULL, disc_main, p) != 0) {
        snprintf(err, err_len, "cannot start threads");
        goto fail; /* cannot leave one thread running: abort below is acceptable */
    }
    p->threads_started = true;
    return p;
fail:
    proxy_stop(p);
    return NULL;
}

/* The upstream resolution order of DESIGN.md. Returns the URL to use, or NULL when none was
 * found (then the embedded simulator is started). */
static const char *resolve_upstream(const struct proxy_opts *o, char *err, size_t err_len,
                                    bool *fatal)
{
    const char *kc = o->kubeconfig ? o->kubeconfig : getenv("KUBECONFIG");
    const char *home = getenv("HOME");
    char msg[200];
    char path[256];
    struct stat st;

    *fatal = false;
    if (o->upstream && o->upstream[0]) {
        return o->upstream;
    }
    if (kc && kc[0]) {
        snprintf(err, err_len,
                 "kubeconfig %s: reading kubeconfig files is not supported yet; pass --upstream "
                 "URL with --token/--ca-file/--client-cert",
                 kc);
        *fatal = true;
        return NULL;
    }
    if (getenv("KUBERNETES_SERVICE_HOST") && getenv("KUBERNETES_SERVICE_PORT")) {
        static char url[300];
        snprintf(url, sizeof(url), "https://%s:%s", getenv("KUBERNETES_SERVICE_HOST"),
                 getenv("KUBERNETES_SERVICE_PORT"));
        return url;
    }
    if (home && strlen(home) < sizeof(path) - 16) {
        snprintf(path, sizeof(path), "%s/.kube/config", home);
        if (stat(path, &st) == 0) {
            snprintf(msg, sizeof(msg), "%.150s", path);
            snprintf(err, err_len,
                     "found %s but reading kubeconfig files is not supported yet; pass "
                     "--upstream URL",
                     msg);
            *fatal = true;
            return NULL;
        }
    }
    return NULL;
}

static int run(struct proxy_opts *o, bool demo, int64_t demo_objects, int64_t demo_churn)
{
    char err[512];
    const char *url;
    bool fatal = false;
    struct sim *s = NULL;
    struct proxy *p;
    sigset_t set;
    int sig = 0;
    bool in_cluster = false;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);

    url = demo ? NULL : resolve_upstream(o, err, sizeof(err), &fatal);
    if (fatal) {
        fprintf(stderr, "kwp proxy: %s\n", err);
        curl_global_cleanup();
        return 1;
    }
    if (!demo && url && !o->upstream && getenv("KUBERNETES_SERVICE_HOST")) {
        in_cluster = true;
        if (!o->token_file) {
            o->token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
        }
        if (!o->ca_file) {
            o->ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
        }
    }
    if (!url) {
        struct sim_opts so;
        sim_opts_defaults(&so);
        so.objects = demo_objects;
        so.churn = demo_churn;
        so.bookmark_interval_ms = o->bookmark_interval_ms;
        so.watch_max_lag_ms = o->watch_max_lag_ms;
        s = sim_start(&so, err, sizeof(err));
        if (!s) {
            fprintf(stderr, "kwp: cannot start the embedded simulator: %s\n", err);
            curl_global_cleanup();
            return 1;
        }
        url = sim_url(s);
        log_info("proxy", "upstream=%s msg=\"no upstream configured: started the embedded "
                 "simulator\"", url);
    } else if (in_cluster) {
        log_info("proxy", "upstream=%s msg=\"using the in-cluster service account\"", url);
    }
    p = proxy_start(o, url, err, sizeof(err));
    if (!p) {
        fprintf(stderr, "kwp proxy: %s\n", err);
        sim_stop(s);
        curl_global_cleanup();
        return 1;
    }
    printf("listening on %s\n", http_server_url(p->srv));
    if (demo) {
        printf("upstream (embedded simulator) on %s\n"
               "try:  kubectl --server %s get pods -A -w\n"
               "      curl -s '%s/api/v1/namespaces/default/pods?resourceVersion=0'\n"
               "      curl -s %s/metrics\n",
               url, http_server_url(p->srv), http_server_url(p->srv), http_server_url(p->srv));
    }
    fflush(stdout);
    log_info("proxy", "url=%s upstream=%s threads=%lld msg=\"proxy ready\"",
             http_server_url(p->srv), url, (long long)o->threads);
    sigwait(&set, &sig);
    log_info("proxy", "signal=%d msg=\"shutting down\"", sig);
    proxy_stop(p);
    sim_stop(s);
    curl_global_cleanup();
    return 0;
}

#define PROXY_FLAGS(o)                                                                             \
    {"listen", CFG_STR, &(o).listen, 0, 0, "address to serve on, HOST:PORT (port 0 = any free port; default 127.0.0.1:8080)"}, \
    {"resources", CFG_LIST, &(o).resources, 0, 0, "resources to cache from the start: pods,configmaps,apps/v1/deployments (others are cached on first use)"}, \
    {"freshness-wait", CFG_DURATION, &(o).freshness_wait_ms, 0, 60000, "LIST/GET at an rv newer than the cache: wait this long, then forward upstream (default 250ms)"}, \
    {"too-large-rv", CFG_STR, &(o).too_large_rv, 0, 0, "forward (default) or local: wait 3 s and answer the 504 Too large resource version here"}, \
    {"history-min", CFG_INT, &(o).history_min, 1, 100000000, "history window: minimum events per resource (default 100)"}, \
    {"history-max", CFG_INT, &(o).history_max, 1, 100000000, "history window: maximum events per resource (default 102400)"}, \
    {"history-window", CFG_DURATION, &(o).history_window_ms, 0, 0, "history window: keep events this young before shrinking; 0 = fixed size (default 75s)"}, \
    {"bookmark-interval", CFG_DURATION, &(o).bookmark_interval_ms, 1000, 3600000, "BOOKMARK period for allowWatchBookmarks watches (default 60s)"}, \
    {"watch-stall-timeout", CFG_DURATION, &(o).watch_stall_ms, 1000, 3600000, "end a watch whose client reads nothing this long while events wait for it (default 10s)"}, \
    {"watch-max-lag", CFG_DURATION, &(o).watch_max_lag_ms, 0, 3600000, "end a watch whose next event has waited this long (it re-watches from its last resourceVersion); 0 = only when it leaves the history window (default 10s)"}, \
    {"watch-wake-interval", CFG_DURATION, &(o).watch_wake_ms, 0, 1000, "with 2048+ requests in flight, wake watches at most once per interval, so that the events of an interval go out in one write per watch (default 10ms; 0 = at once)"}, \
    {"threads", CFG_INT, &(o).threads, 1, 64, "HTTP worker threads (default: one per core it may run on, at most 64)"}, \
    {"max-connections", CFG_INT, &(o).max_connections, 16, 1000000, "downstream connection limit (default 60000, capped by the open-file limit)"}, \
    {"conn-memory", CFG_SIZE, &(o).conn_memory, 4096, 16777216, "per-connection memory pool: headers and write buffer (default 32Ki)"}, \
    {"max-body", CFG_SIZE, &(o).max_body, 1, INT64_MAX, "largest request body accepted (default 3Mi)"}, \
    {"page-size", CFG_INT, &(o).page_size, 1, 100000, "upstream LIST page size (default 500)"}, \
    {"max-line", CFG_SIZE, &(o).max_line, 1024, INT64_MAX, "longest upstream watch line accepted; longer is a protocol error and a relist (default 16Mi)"}, \
    {"upstream-probe-interval", CFG_DURATION, &(o).probe_interval_ms, 200, 3600000, "probe upstream (GET /version) this often; a failed probe makes /readyz fail (default 10s)"}, \
    {"cache-events", CFG_BOOL, &(o).cache_events, 0, 0, "cache events too (kube-apiserver serves them from etcd; default false: passed through)"}, \
    {"tls-cert-file", CFG_STR, &(o).tls_cert_file, 0, 0, "serve https downstream with this PEM certificate (with --tls-key-file)"}, \
    {"tls-key-file", CFG_STR, &(o).tls_key_file, 0, 0, "PEM private key for --tls-cert-file"}

int proxy_main(int argc, char **argv)
{
    struct proxy_opts o;
    int rc;

    opts_defaults(&o);
    const struct config_opt opts[] = {
        PROXY_FLAGS(o),
        {"upstream", CFG_STR, &o.upstream, 0, 0, "upstream kube-apiserver URL (http or https)"},
        {"kubeconfig", CFG_STR, &o.kubeconfig, 0, 0, "kubeconfig file (not supported yet: use --upstream)"},
        {"token", CFG_STR, &o.token, 0, 0, "bearer token for the upstream"},
        {"token-file", CFG_STR, &o.token_file, 0, 0, "file holding the bearer token (re-read when it changes)"},
        {"ca-file", CFG_STR, &o.ca_file, 0, 0, "PEM CA bundle to verify the upstream"},
        {"client-cert", CFG_STR, &o.client_cert, 0, 0, "PEM client certificate for the upstream"},
        {"client-key", CFG_STR, &o.client_key, 0, 0, "PEM client key for the upstream"},
        {"insecure-skip-tls-verify", CFG_BOOL, &o.insecure, 0, 0, "do not verify the upstream's certificate"},
    };

    rc = config_parse(opts, sizeof(opts) / sizeof(opts[0]), argc, argv, "kwp proxy [flags]",
                      "The caching list/watch proxy. Upstream: --upstream, --kubeconfig, $KUBECONFIG,\n"
                      "the in-cluster service account, ~/.kube/config; with none, the embedded simulator.");
    if (rc == 0 && strcmp(o.too_large_rv, "forward") != 0 && strcmp(o.too_large_rv, "local") != 0) {
        fprintf(stderr, "kwp proxy: --too-large-rv must be forward or local\n");
        rc = -EINVAL;
    }
    if (rc != 0) {
        config_list_free(&o.resources);
        return rc > 0 ? 0 : 2;
    }
    rc = run(&o, false, 50, 2);
    config_list_free(&o.resources);
    return rc;
}

int proxy_demo_main(int argc, char **argv)
{
    struct proxy_opts o;
    int64_t objects = 50, churn = 2;
    int rc;

    opts_defaults(&o);
    const struct config_opt opts[] = {
        PROXY_FLAGS(o),
        {"objects", CFG_INT, &objects, 0, 1000000, "pods the simulator starts with (default 50)"},
        {"churn", CFG_INT, &churn, 0, 100000, "simulator pod writes per second (default 2)"},
    };

    rc = config_parse(opts, sizeof(opts) / sizeof(opts[0]), argc, argv, "kwp demo [flags]",
                      "The proxy in front of the embedded simulator, in one process: nothing else "
                      "needed.\nPoint kubectl at the printed URL.");
    if (rc != 0) {
        config_list_free(&o.resources);
        return rc > 0 ? 0 : 2;
    }
    if (o.resources.len == 0) {
        const char *dflt = "pods,configmaps,namespaces,nodes";
        for (const char *q = dflt; *q;) {
            const char *c = strchr(q, ',');
            size_t n = c ? (size_t)(c - q) : strlen(q);
            o.resources.items = xrealloc(o.resources.items, sizeof(char *) * (o.resources.len + 1));
            o.resources.items[o.resources.len++] = xstrndup(q, n);
            q += n + (c ? 1 : 0);
        }
    }
    rc = run(&o, true, objects, churn);
    config_list_free(&o.resources);
    return rc;
}
