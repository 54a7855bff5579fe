/*
 * discovery.c - the upstream's discovery documents and liveness probe (see discovery.h).
 *
 * lock guards disc, n_disc and loaded: discover() builds a new list without it and swaps it
 * in, so a reader holds it only to look an entry up or copy one out. mu/cv/wanted wake the
 * thread early (discovery_poke); stop aborts a blocking transfer within a second (libcurl's
 * progress callback) and ends the thread. Log records keep src=proxy.
 */
#include "proxy/discovery.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>
#include <curl/curl.h>

#include "cache/bug.h"
#include "cache/ring.h"
#include "cache/sbuf.h"
#include "proxy/apires.h"
#include "proxy/log.h"
#include "proxy/upstream.h"

#define DISCOVERY_MAX_BYTES (16 * 1024 * 1024)
#define DISCOVERY_REFRESH_MS (5 * 60 * 1000)
#define DISCOVERY_RETRY_MS 5000
#define DISCOVERY_REQUEST_TIMEOUT_MS 10000

/* What upstream discovery says about one resource. */
struct disc_entry {
    char *group;
    char *version;
    char *plural;
    char *kind;
    bool namespaced;
    bool listwatch;
};

struct discovery {
    struct upstream *up; /* lent by the owner */
    int64_t probe_interval_ms;
    pthread_mutex_t lock; /* guards disc, n_disc, loaded */
    struct disc_entry *disc;
    size_t n_disc;
    bool loaded;
    atomic_bool upstream_ok; /* the last probe (or discovery) of upstream succeeded */
    atomic_bool stop;
    pthread_t thread;
    bool started;       /* owner's thread only */
    pthread_mutex_t mu; /* with cv: wakes the discovery thread early */
    pthread_cond_t cv;
    bool wanted; /* under mu */
};

/* libcurl write callback: the body into a capped sbuf (DISCOVERY_MAX_BYTES); past the cap the
 * transfer is aborted. */
static size_t body_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct sbuf *b = ud;
    size_t n = size * nmemb;

    sbuf_put(b, ptr, n);
    return sbuf_error(b) == 0 ? n : 0;
}

/* Aborts a blocking transfer of the upstream thread as soon as shutdown starts (libcurl
 * calls this at least once a second, also while waiting on a hung server). */
static int abort_on_stop(void *clientp, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                         curl_off_t ulnow)
{
    const struct discovery *d = clientp;
    return atomic_load(&d->stop) ? 1 : 0;
}

/* Blocking GET for discovery documents (discovery thread and start-up only). */
static cJSON *get_json(struct discovery *d, const char *path, long *code, long timeout_ms)
{
    CURL *e = curl_easy_init();
    struct curl_slist *h = NULL;
    struct sbuf b;
    struct upstream_call call;
    cJSON *j = NULL;
    CURLcode rc;

    *code = 0;
    sbuf_init(&b, DISCOVERY_MAX_BYTES);
    if (!e) {
        return NULL;
    }
    h = curl_slist_append(h, "Accept: application/json");
    if (upstream_begin(d->up, e, path, UPSTREAM_DECODE, &h, &call) != 0) {
        goto out; /* no credential (the exec plugin failed): /readyz says why */
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, body_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "kwp-proxy/discovery");
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, abort_on_stop);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, d);
    rc = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, code);
    upstream_done(d->up, &call, rc, *code); /* a 401 makes an exec credential stale */
    if (rc != CURLE_OK) {
        *code = 0;
    } else if (*code == 200 && b.p != NULL) {
        j = cJSON_ParseWithLength(b.p, b.len);
    }
out:
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    sbuf_free(&b);
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

/* Fetches the whole discovery tree; replaces the list on success. */
static int discover(struct discovery *d, long timeout_ms)
{
    struct disc_entry *list = NULL, *old;
    size_t n = 0, n_old;
    long code;
    cJSON *core, *apis, *g;

    core = get_json(d, "/api/v1", &code, timeout_ms);
    if (!core) {
        return -EAGAIN;
    }
    disc_add_list(&list, &n, "", "v1", core);
    cJSON_Delete(core);
    apis = get_json(d, "/apis", &code, timeout_ms);
    if (!apis) {
        disc_free(list, n);
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
            cJSON *doc;
            if (!cJSON_IsString(name) || !cJSON_IsString(gv) || !cJSON_IsString(ver)) {
                continue;
            }
            snprintf(path, sizeof(path), "/apis/%s", gv->valuestring);
            doc = get_json(d, path, &code, timeout_ms);
            if (doc) {
                disc_add_list(&list, &n, name->valuestring, ver->valuestring, doc);
                cJSON_Delete(doc);
            }
        }
    }
    cJSON_Delete(apis);
    pthread_mutex_lock(&d->lock);
    old = d->disc;
    n_old = d->n_disc;
    d->disc = list;
    d->n_disc = n;
    d->loaded = true;
    pthread_mutex_unlock(&d->lock);
    disc_free(old, n_old);
    return 0;
}

/* Upstream liveness: GET /version answered 200. A frozen or unreachable upstream makes
 * /readyz fail while the cache keeps serving what it has. */
static bool probe(struct discovery *d)
{
    long code = 0;
    cJSON *j = get_json(d, "/version", &code, DISCOVERY_REQUEST_TIMEOUT_MS / 2);

    cJSON_Delete(j);
    return code == 200;
}

/* The upstream thread: discovery (retried until it works, then refreshed) and the probe. */
static void *disc_main(void *arg)
{
    struct discovery *d = arg;
    struct log_ratelimit rl = {0};
    int64_t next_disc = 0, next_probe = 0;
    bool disc_ok;

    pthread_mutex_lock(&d->lock);
    disc_ok = d->loaded; /* discovery_load tried once already */
    pthread_mutex_unlock(&d->lock);
    if (disc_ok) {
        next_disc = clock_mono_ms() + DISCOVERY_REFRESH_MS;
    }
    while (!atomic_load(&d->stop)) {
        struct timespec ts;
        int64_t now = clock_mono_ms();
        bool wanted;

        if (now >= next_disc) {
            int rc = discover(d, DISCOVERY_REQUEST_TIMEOUT_MS);
            if (rc == 0 && !disc_ok) {
                log_info("proxy", "resources=%zu msg=\"upstream discovery loaded\"",
                         discovery_len(d));
            } else if (rc != 0) {
                log_ratelimited(&rl, 60000, LOG_LEVEL_WARN, "proxy",
                                "upstream=%s msg=\"upstream discovery failed, retrying\"",
                                upstream_url(d->up));
            }
            disc_ok = rc == 0;
            next_disc = clock_mono_ms() + (disc_ok ? DISCOVERY_REFRESH_MS : DISCOVERY_RETRY_MS);
        }
        if (now >= next_probe) {
            bool ok = probe(d);
            if (ok != atomic_load(&d->upstream_ok)) {
                if (ok) {
                    log_info("proxy", "upstream=%s msg=\"upstream answers\"", upstream_url(d->up));
                } else {
                    log_warn("proxy",
                             "upstream=%s msg=\"upstream does not answer: not ready, "
                             "serving from the cache\"",
                             upstream_url(d->up));
                }
            }
            atomic_store(&d->upstream_ok, ok);
            next_probe = clock_mono_ms() + d->probe_interval_ms;
        }
        pthread_mutex_lock(&d->mu);
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (!d->wanted && !atomic_load(&d->stop)) {
            (void)pthread_cond_timedwait(&d->cv, &d->mu, &ts);
        }
        wanted = d->wanted;
        d->wanted = false;
        pthread_mutex_unlock(&d->mu);
        if (wanted && !disc_ok) {
            next_disc = 0;
        }
    }
    return NULL;
}

void discovery_poke(struct discovery *d)
{
    pthread_mutex_lock(&d->mu);
    d->wanted = true;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

bool discovery_is_builtin_group(const char *g)
{
    static const char *const groups[] = {"",
                                         "apps",
                                         "batch",
                                         "autoscaling",
                                         "policy",
                                         "rbac.authorization.k8s.io",
                                         "networking.k8s.io",
                                         "storage.k8s.io",
                                         "coordination.k8s.io",
                                         "discovery.k8s.io",
                                         "events.k8s.io",
                                         "node.k8s.io",
                                         "scheduling.k8s.io",
                                         "certificates.k8s.io",
                                         "admissionregistration.k8s.io",
                                         "apiextensions.k8s.io",
                                         "apiregistration.k8s.io",
                                         "flowcontrol.apiserver.k8s.io",
                                         "resource.k8s.io",
                                         "storagemigration.k8s.io",
                                         "internal.apiserver.k8s.io",
                                         "authentication.k8s.io",
                                         "authorization.k8s.io"};
    for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
        if (strcmp(g, groups[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* Builds an apires for a discovered resource (copying its strings into one buffer). */
static struct apires *apires_from_disc(const struct disc_entry *d, const struct ring_opts *ro)
{
    const struct apires_kind *b = apires_builtin(d->group, d->version, d->plural);
    struct apires_kind k = {0};
    size_t len;
    char *buf, *w;

    if (b) {
        return apires_new(b, NULL, ro);
    }
    len = strlen(d->group) + strlen(d->version) + 2 * strlen(d->plural) + 2 * strlen(d->kind) + 16;
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
    k.builtin = discovery_is_builtin_group(d->group);
    k.short_names = "";
    k.bookmark_body = "";
    k.fields[0] = NULL;
    return apires_new(&k, buf, ro);
}

int discovery_apires_new(struct discovery *d, const char *group, const char *version,
                         const char *plural, bool need_listwatch, const struct ring_opts *ro,
                         struct apires **out)
{
    int rc = -ENOENT;

    *out = NULL;
    pthread_mutex_lock(&d->lock);
    if (!d->loaded) {
        rc = -EAGAIN;
    }
    for (size_t i = 0; rc == -ENOENT && i < d->n_disc; i++) {
        const struct disc_entry *e = &d->disc[i];
        if (strcmp(e->group, group) == 0 && strcmp(e->version, version) == 0 &&
            strcmp(e->plural, plural) == 0) {
            if (e->listwatch || !need_listwatch) {
                *out = apires_from_disc(e, ro);
                rc = 0;
            }
            break;
        }
    }
    pthread_mutex_unlock(&d->lock);
    return rc;
}

struct discovery *discovery_new(struct upstream *up, int64_t probe_interval_ms)
{
    struct discovery *d = xcalloc(1, sizeof(*d));

    d->up = up;
    d->probe_interval_ms = probe_interval_ms;
    pthread_mutex_init(&d->lock, NULL);
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    return d;
}

int discovery_load(struct discovery *d, long timeout_ms)
{
    int rc = discover(d, timeout_ms);

    if (rc == 0) {
        atomic_store(&d->upstream_ok, true);
    }
    return rc;
}

int discovery_start(struct discovery *d)
{
    if (pthread_create(&d->thread, NULL, disc_main, d) != 0) {
        return -EAGAIN;
    }
    d->started = true;
    return 0;
}

void discovery_stop(struct discovery *d)
{
    atomic_store(&d->stop, true);
    if (!d->started) {
        return;
    }
    discovery_poke(d);
    pthread_join(d->thread, NULL);
    d->started = false;
}

void discovery_free(struct discovery *d)
{
    if (!d) {
        return;
    }
    discovery_stop(d);
    disc_free(d->disc, d->n_disc);
    pthread_mutex_destroy(&d->lock);
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    free(d);
}

bool discovery_is_loaded(struct discovery *d)
{
    bool loaded;

    pthread_mutex_lock(&d->lock);
    loaded = d->loaded;
    pthread_mutex_unlock(&d->lock);
    return loaded;
}

size_t discovery_len(struct discovery *d)
{
    size_t n;

    pthread_mutex_lock(&d->lock);
    n = d->n_disc;
    pthread_mutex_unlock(&d->lock);
    return n;
}

bool discovery_upstream_ok(const struct discovery *d)
{
    return atomic_load(&d->upstream_ok);
}
