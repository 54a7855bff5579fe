/*
 * proxy.c - the kwp proxy application (see proxy.h): the registry of cached resources,
 * request routing (serve from the cache or forward upstream), and the lifecycle (flags,
 * upstream resolution, start, signals, shutdown). Discovery lives in discovery.c, /metrics in
 * metrics.c, the registry and its tick thread in registry.c.
 *
 * Registry: entries are added by --resources at start and on first use of a resource that
 * discovery lists with list and watch; add_lock makes one request at a time create (so a
 * resource is built and its reflector started once); lookups take no lock. Entries are never
 * removed before shutdown, so a pointer returned by the registry stays valid for the life of
 * the process. Includes cache/ and proxy/ headers only (never sim/, load/ or cmd/).
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include "proxy/proxy.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "cache/bug.h"
#include "cache/gotext.h"
#include "cache/resource.h"
#include "cache/sbuf.h"
#include "proxy/apires.h"
#include "proxy/auth.h"
#include "proxy/config.h"
#include "proxy/debugres.h"
#include "proxy/discovery.h"
#include "proxy/execcred.h"
#include "proxy/gate.h"
#include "proxy/handlers.h"
#include "proxy/http_server.h"
#include "proxy/k8s_path.h"
#include "proxy/kubeconfig.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/passthrough.h"
#include "proxy/reflector.h"
#include "proxy/registry.h"
#include "proxy/reqlog.h"
#include "proxy/state.h"
#include "proxy/upstream.h"

#define PROXY_START_TIMEOUT_MS 2000 /* discovery at start must not delay listening */
#define PROXY_MAX_RESOURCES 1024
#define PROXY_MAX_FLAGS 64 /* the proxy's flags, the upstream flags and a command's own */
#define PROXY_WHY_MAX 1024 /* a /readyz reason */

/* Shutdown: the default --shutdown-delay (kube-apiserver's --shutdown-delay-duration, for
 * kwp); after it, how long watches get to end before they are dropped; how long requests in
 * flight then get in proxy_stop (less after a drain, which already gave them time). */
#define PROXY_SHUTDOWN_DELAY_MS 5000
#define PROXY_DRAIN_MS 2000
#define PROXY_SETTLE_MS 3000
#define PROXY_DRAIN_SETTLE_MS 500

struct proxy_opts {
    const char *listen;
    const char *upstream;
    const char *kubeconfig;
    const char *context;
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
    bool watch_direct;
    int64_t threads;
    int64_t max_connections;
    int64_t conn_memory;
    int64_t max_body;
    int64_t page_size;
    int64_t max_line;
    int64_t max_resource_bytes;
    int64_t probe_interval_ms;
    bool cache_events;
    const char *tls_cert_file;
    const char *tls_key_file;
    const char *client_ca_file;
    const char *auth; /* "none", "delegated", "" = by --listen */
    bool anonymous_auth;
    struct config_list audiences; /* --authentication-audiences */
    int64_t authn_ttl_ms;
    int64_t authz_ttl_ms;
    int64_t authz_denied_ttl_ms;
    const char *metrics_listen;
    int64_t shutdown_delay_ms;
    const char *state_dir;     /* --state-dir, or NULL */
    int64_t state_interval_ms; /* --state-interval; 0 = only at shutdown */
    const char *log_format;    /* --log-format: text, json */
    int64_t log_request_rate;  /* --log-request-rate: request log records per second */
};

struct proxy {
    struct proxy_opts o;
    struct upstream *up;
    struct reflector *rf;
    struct passthrough *pt;
    struct http_server *srv;
    struct handlers_opts hopts;
    struct registry *reg;
    pthread_mutex_t add_lock; /* held while a resource is created on first use */
    struct discovery *disc;
    struct auth *auth;               /* NULL with --auth none */
    struct gate *gate;               /* NULL with --auth none */
    struct http_server *metrics_srv; /* --metrics-listen, or NULL */
    atomic_bool shutting_down;       /* a SIGTERM/SIGINT came: /readyz fails */
    struct state_saver *saver;       /* --state-dir, or NULL */
    char state_id[STATE_ID_MAX];     /* --state-dir: whose state the files are */
};

/* ---- registry -------------------------------------------------------------------------- */

/* Events are served from etcd by kube-apiserver (no watch cache): pass them through. */
static bool never_cached(const struct proxy *p, const char *group, const char *plural)
{
    if (p->o.cache_events) {
        return false;
    }
    return strcmp(plural, "events") == 0 &&
           (group[0] == '\0' || strcmp(group, "events.k8s.io") == 0);
}

static struct ring_opts ring_opts_of(const struct proxy *p)
{
    struct ring_opts ro = {.min_cap = (size_t)p->o.history_min,
                           .max_cap = (size_t)p->o.history_max,
                           .fresh_ms = p->o.history_window_ms};
    return ro;
}

/* reflector_load_fn: <ar>'s saved state from --state-dir, on the reflector thread. */
static uint64_t state_of(void *ctx, struct apires *ar)
{
    struct proxy *p = ctx;

    return state_load(ar, p->o.state_dir, p->state_id);
}

/* Starts syncing <ar>: from its saved state when --state-dir has one, else with a LIST. */
static void reg_start(struct proxy *p, struct apires *ar)
{
    reflector_add_loading(p->rf, ar, p->o.state_dir ? state_of : NULL, p);
}

/*
 * Returns the cached resource for group/version/plural, creating it (and starting its
 * reflector) when discovery lists it with list+watch. NULL: not cacheable (forward).
 */
static struct apires *reg_ensure(struct proxy *p, const char *g, const char *v, const char *plural)
{
    struct ring_opts ro = ring_opts_of(p);
    struct apires *ar;
    bool created = false;
    int rc = 0;

    if (never_cached(p, g, plural)) {
        return NULL;
    }
    ar = registry_find(p->reg, g, v, plural);
    if (ar) {
        return ar;
    }
    pthread_mutex_lock(&p->add_lock);
    ar = registry_find(p->reg, g, v, plural);
    if (!ar) {
        rc = discovery_apires_new(p->disc, g, v, plural, true, &ro, &ar);
        if (rc == 0 && registry_add(p->reg, ar) == 0) {
            created = true;
        } else if (rc == 0) {
            apires_free(ar); /* the registry is full */
            ar = NULL;
        }
    }
    pthread_mutex_unlock(&p->add_lock);
    if (created) {
        log_info("proxy", "resource=%s msg=\"caching resource on first use\"",
                 resource_name(ar->res));
        reg_start(p, ar);
    }
    if (rc == -EAGAIN) {
        discovery_poke(p->disc);
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
    struct apires *ar = NULL;

    if (!strchr(spec, '/')) {
        snprintf(full, sizeof(full), "v1/%s", spec);
    } else {
        snprintf(full, sizeof(full), "%s", spec);
    }
    if (apires_parse_spec(full, &k, &owned) != 0) {
        fprintf(stderr, "kwp proxy: invalid --resources entry %s\n", spec);
        return -EINVAL;
    }
    /* discovery knows the real kind and scope of custom resources */
    if (!apires_builtin(k.group, k.version, k.plural) &&
        discovery_apires_new(p->disc, k.group, k.version, k.plural, false, &ro, &ar) == 0) {
        free(owned);
    } else {
        if (!apires_builtin(k.group, k.version, k.plural)) {
            k.builtin = discovery_is_builtin_group(k.group);
        }
        ar = apires_new(&k, owned, &ro);
    }
    if (registry_add(p->reg, ar) != 0) {
        apires_free(ar); /* listed twice, or the registry is full */
        return 0;
    }
    reg_start(p, ar);
    return 0;
}

/* ---- health ---------------------------------------------------------------------------- */

/* Ready: the upstream takes kwp's credentials, discovery is loaded, the upstream answers,
 * every cached resource is synced with its upstream watch open. The first that fails is the
 * reason (a credential or TLS problem first: it explains the others). */
static bool ready(struct proxy *p, char *why, size_t why_len)
{
    size_t n = registry_len(p->reg);

    if (atomic_load(&p->shutting_down)) {
        snprintf(why, why_len, "shutting down");
        return false;
    }
    if (upstream_problem(p->up, why, why_len)) {
        return false;
    }
    if (!discovery_is_loaded(p->disc)) {
        snprintf(why, why_len, "upstream discovery not loaded");
        return false;
    }
    if (!discovery_upstream_ok(p->disc)) {
        snprintf(why, why_len, "upstream does not answer GET /version");
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        const struct apires *ar = registry_at(p->reg, i);
        if (atomic_load(&ar->ctr.not_cached) != 0) {
            continue; /* not cached, forwarded: logged, and kwp_not_cached says 1 */
        }
        if (!resource_is_ready(ar->res, NULL)) {
            snprintf(why, why_len, "%s not synced", resource_name(ar->res));
            return false;
        }
        if (atomic_load(&ar->ctr.up_stale) != 0) {
            snprintf(why, why_len, "%s loaded from --state-dir, not yet fresh",
                     resource_name(ar->res));
            return false;
        }
        if (atomic_load(&ar->ctr.up_watch_open) == 0) {
            snprintf(why, why_len, "%s upstream watch not open", resource_name(ar->res));
            return false;
        }
    }
    return true;
}

/* ---- routing --------------------------------------------------------------------------- */

static void forward(void *app, struct http_req *req)
{
    struct proxy *p = app;
    passthrough_forward_as(p->pt, req, gate_identity(req));
}

static void forward_counted(void *app, struct http_req *req)
{
    struct proxy *p = app;
    struct k8s_path kp;

    if (k8s_path_parse(http_req_path(req), &kp) == 0) {
        struct apires *ar = registry_find(p->reg, kp.group, kp.version, kp.resource);
        if (ar) {
            atomic_fetch_add(&ar->ctr.forwarded, 1);
        }
    }
    passthrough_forward_as(p->pt, req, gate_identity(req));
}

/* Each request of the main server as it completes: its histogram and request log record. */
static void request_done(void *app, struct http_req *req, enum http_end how)
{
    struct proxy *p = app;
    reqlog_done(p->reg, req, how);
}

/* --metrics-listen: /metrics without auth, nothing else. */
static void metrics_handle(void *app, struct http_req *req)
{
    struct proxy *p = app;
    char why[256];
    struct kstatus st;

    if (strcmp(http_req_path(req), "/metrics") == 0) {
        metrics_serve_auth(req, p->reg, p->pt, ready(p, why, sizeof(why)), p->gate, p->auth);
        return;
    }
    kstatus_set(&st, 404, "NotFound", "the server could not find the requested resource");
    http_reply_status(req, &st);
}

static void proxy_handle(void *app, struct http_req *req)
{
    struct proxy *p = app;
    const char *path = http_req_path(req);
    const char *method = http_req_method(req);
    struct k8s_path kp;
    struct apires *ar;
    enum handlers_why cause;
    char why[PROXY_WHY_MAX];

    if (strcmp(path, "/healthz") == 0 || strcmp(path, "/livez") == 0) {
        http_reply(req, 200, "text/plain; charset=utf-8", "ok", 2);
        return;
    }
    if (strcmp(path, "/readyz") == 0) {
        if (ready(p, why, sizeof(why))) {
            http_reply(req, 200, "text/plain; charset=utf-8", "ok", 2);
        } else {
            char msg[PROXY_WHY_MAX + 16];
            int n = snprintf(msg, sizeof(msg), "not ready: %s\n", why);
            http_reply(req, 503, "text/plain; charset=utf-8", msg,
                       n < (int)sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
        }
        return;
    }
    if (p->gate != NULL && gate_check(p->gate, req) != GATE_ALLOW) {
        return; /* answered (401/403/500) or waiting for a review */
    }
    if (strcmp(path, "/metrics") == 0) {
        metrics_serve_auth(req, p->reg, p->pt, ready(p, why, sizeof(why)), p->gate, p->auth);
        return;
    }
    if (strcmp(path, DEBUGRES_PATH) == 0) {
        debugres_serve(req, p->reg, "proxy");
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
    o->watch_direct = true;
    o->threads = cores_available();
    o->max_connections = HTTP_DEFAULT_MAX_CONNECTIONS;
    o->conn_memory = HTTP_DEFAULT_CONN_MEMORY;
    o->max_body = HTTP_DEFAULT_MAX_BODY;
    o->page_size = 500;
    o->max_line = 16 * 1024 * 1024;
    o->probe_interval_ms = 10000;
    o->log_format = "text";
    o->log_request_rate = REQLOG_RATE_DEFAULT;
    o->auth = "";
    o->authn_ttl_ms = AUTH_DEFAULT_TTL_MS;
    o->authz_ttl_ms = AUTH_DEFAULT_TTL_MS;
    o->authz_denied_ttl_ms = AUTH_DEFAULT_TTL_MS;
}

/* Stops and frees everything; requests still in flight get up to <settle_ms> to finish
 * before the server closes their connections. */
static void proxy_stop(struct proxy *p, int64_t settle_ms)
{
    size_t n;

    if (p->srv) {
        http_server_quiesce(p->srv);
    }
    if (p->metrics_srv) {
        http_server_quiesce(p->metrics_srv);
    }
    gate_free(p->gate); /* queued requests are answered and resumed while MHD runs */
    p->gate = NULL;
    if (p->disc) {
        discovery_stop(p->disc);
    }
    registry_tick_stop(p->reg);
    reflector_free(p->rf);
    p->rf = NULL;
    n = registry_len(p->reg);
    for (size_t i = 0; i < n; i++) {
        resource_close_all(registry_at(p->reg, i)->res);
    }
    state_saver_final(p->saver); /* the reflector has stopped: the last state */
    passthrough_free(p->pt);
    p->pt = NULL;
    for (int64_t i = 0; p->srv && i < settle_ms / 10 && http_server_active(p->srv) > 0; i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    http_server_stop(p->srv);
    p->srv = NULL;
    http_server_stop(p->metrics_srv);
    p->metrics_srv = NULL;
    auth_free(p->auth);
    state_saver_free(p->saver);
    registry_free(p->reg);
    discovery_free(p->disc);
    upstream_free(p->up);
    pthread_mutex_destroy(&p->add_lock);
    free(p);
}

/* ---- graceful shutdown ------------------------------------------------------------------ */

/* Waits up to <ms> for SIGTERM/SIGINT (blocked in every thread). Returns the signal, or 0
 * when none came. Main thread. */
static int signal_wait(const sigset_t *set, int64_t ms)
{
    int64_t end = clock_mono_ms() + ms;

    for (;;) {
        int64_t left = end - clock_mono_ms();
        struct timespec ts;
        int sig;

        if (left <= 0) {
            return 0;
        }
        ts.tv_sec = (time_t)(left / 1000);
        ts.tv_nsec = (long)(left % 1000) * 1000000L;
        sig = sigtimedwait(set, NULL, &ts);
        if (sig > 0) {
            return sig;
        }
        if (errno != EINTR) {
            return 0; /* EAGAIN: the time is up */
        }
    }
}

/* Downstream watches served from the cache and open now, over every resource. */
static unsigned long long watches_open(const struct proxy *p)
{
    size_t n = registry_len(p->reg);
    unsigned long long total = 0;

    for (size_t i = 0; i < n; i++) {
        total += atomic_load(&registry_at(p->reg, i)->ctr.watches_open);
    }
    return total;
}

/* Drains the resources from index *<done> on, up to those registered now. */
static void drain_from(struct proxy *p, size_t *done)
{
    size_t n = registry_len(p->reg);

    for (; *done < n; (*done)++) {
        resource_drain_watches(registry_at(p->reg, *done)->res);
    }
}

/*
 * The graceful part of a SIGTERM/SIGINT, before proxy_stop (README "Rolling updates"):
 * /readyz fails at once and everything is served as before for --shutdown-delay, so that the
 * endpoints controller takes this replica out of its Service first (kube-apiserver's
 * --shutdown-delay-duration); a second signal ends the delay early. Then no new connection is
 * accepted and every cached watch is drained on its own MHD thread (resource_drain_watches
 * wakes the suspended ones): what was appended before goes out, then one last BOOKMARK where
 * the watch allows bookmarks, then the clean end of its chunked stream (a resource first used
 * meanwhile is drained as it appears). Whatever is still open after PROXY_DRAIN_MS (a client
 * that does not read) is left to proxy_stop, which drops it. Forwarded watches are not
 * drained: proxy_stop ends them. Main thread.
 */
static void proxy_drain(struct proxy *p, const sigset_t *set)
{
    size_t drained = 0;
    unsigned long long left;
    int64_t start, end;
    int sig;

    atomic_store(&p->shutting_down, true);
    if (p->o.shutdown_delay_ms > 0) {
        log_info("proxy",
                 "delay_ms=%lld msg=\"/readyz fails from now; serving on for the shutdown "
                 "delay\"",
                 (long long)p->o.shutdown_delay_ms);
        sig = signal_wait(set, p->o.shutdown_delay_ms);
        if (sig != 0) {
            log_info("proxy", "signal=%d msg=\"second signal: shutdown delay cut short\"", sig);
        }
    }
    http_server_quiesce(p->srv);
    start = clock_mono_ms();
    log_info("proxy",
             "watches=%llu msg=\"not accepting connections; ending every watch (a BOOKMARK first "
             "where the watch allows bookmarks)\"",
             watches_open(p));
    drain_from(p, &drained);
    end = start + PROXY_DRAIN_MS;
    while ((left = watches_open(p)) > 0 && clock_mono_ms() < end) {
        sig = signal_wait(set, 10);
        drain_from(p, &drained);
        if (sig != 0) {
            log_info("proxy",
                     "signal=%d watches=%llu msg=\"another signal: not waiting for the "
                     "watches\"",
                     sig, left);
            return;
        }
    }
    if (left > 0) {
        log_warn("proxy",
                 "watches=%llu waited_ms=%lld msg=\"watches still open after the drain (clients "
                 "not reading?): dropping them\"",
                 left, (long long)(clock_mono_ms() - start));
    } else {
        log_info("proxy", "waited_ms=%lld msg=\"every watch ended\"",
                 (long long)(clock_mono_ms() - start));
    }
}

/* <s> as a JSON string literal for a log value, cut to <cap>. */
static void quote(const char *s, char *out, size_t cap)
{
    struct sbuf sb;

    sbuf_init_fixed(&sb, out, cap);
    gotext_json_quote(&sb, s, strlen(s));
}

/* Starts the proxy in front of <up> (taken over, also on error). */
static struct proxy *proxy_start(const struct proxy_opts *o, struct upstream *up, char *err,
                                 size_t err_len)
{
    struct proxy *p = xcalloc(1, sizeof(*p));
    const char *up_url = upstream_url(up);
    char why[PROXY_WHY_MAX], q[PROXY_WHY_MAX + 64];
    struct reflector_opts ro = {0};
    struct passthrough_opts po = {.stall_timeout_s = (unsigned)((o->watch_stall_ms + 999) / 1000)};
    struct http_server_opts hso = {0};

    p->o = *o;
    pthread_mutex_init(&p->add_lock, NULL);
    p->reg = registry_new(PROXY_MAX_RESOURCES);
    p->up = up;
    p->disc = discovery_new(p->up, o->probe_interval_ms);
    ro.page_size = o->page_size;
    ro.max_line_bytes = (size_t)o->max_line;
    ro.max_resource_bytes = (size_t)o->max_resource_bytes;
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
    if (discovery_load(p->disc, PROXY_START_TIMEOUT_MS) == 0) {
        log_info("proxy", "upstream=%s resources=%zu msg=\"upstream discovery loaded\"", up_url,
                 discovery_len(p->disc));
    } else if (upstream_problem(up, why, sizeof(why))) {
        quote(why, q, sizeof(q));
        log_warn("proxy",
                 "upstream=%s err=%s msg=\"upstream refuses kwp at start; serving what can be "
                 "served and retrying\"",
                 up_url, q);
    } else {
        log_warn("proxy",
                 "upstream=%s msg=\"upstream unreachable at start; serving what can be "
                 "served and retrying\"",
                 up_url);
    }
    if (o->state_dir) {
        const char *ca_file, *ca_data;
        bool insecure;

        upstream_trust(up, &ca_file, &ca_data, &insecure);
        state_upstream_id(up_url, ca_file, ca_data, insecure, p->state_id);
        p->saver = state_saver_start(o->state_dir, o->state_interval_ms, p->state_id, p->reg, err,
                                     err_len);
        if (!p->saver) {
            goto fail;
        }
    }
    for (size_t i = 0; i < o->resources.len; i++) {
        if (reg_add_spec(p, o->resources.items[i]) != 0) {
            snprintf(err, err_len, "invalid --resources entry %s", o->resources.items[i]);
            goto fail;
        }
    }
    if (strcmp(o->auth, "delegated") == 0) {
        struct auth_opts ao = {
            .audiences = (const char *const *)o->audiences.items,
            .n_audiences = o->audiences.len,
            .authn_ttl_ms = o->authn_ttl_ms,
            .authz_ttl_ms = o->authz_ttl_ms,
            .authz_denied_ttl_ms = o->authz_denied_ttl_ms,
            .send = gate_upstream_send,
            .send_ctx = p->up,
        };
        struct gate_opts go = {.anonymous = o->anonymous_auth};

        p->auth = auth_new(&ao);
        if (!p->auth) {
            snprintf(err, err_len, "cannot set up delegated auth (too many audiences?)");
            goto fail;
        }
        go.auth = p->auth;
        p->gate = gate_new(&go, err, err_len);
        if (!p->gate) {
            goto fail;
        }
    }
    hso.listen = o->listen;
    hso.threads = (unsigned)o->threads;
    hso.max_connections = (unsigned)o->max_connections;
    hso.conn_memory = (size_t)o->conn_memory;
    hso.max_body = (size_t)o->max_body;
    hso.resume_interval_ms = o->watch_wake_ms;
    hso.stream_writers = o->watch_direct;
    hso.tls_cert_file = o->tls_cert_file;
    hso.tls_key_file = o->tls_key_file;
    hso.client_ca_file = o->client_ca_file;
    hso.done = request_done;
    p->srv = http_server_start(&hso, proxy_handle, p, err, err_len);
    if (!p->srv) {
        goto fail;
    }
    if (o->metrics_listen) {
        struct http_server_opts mo = {
            .listen = o->metrics_listen, .threads = 1, .max_connections = 64};
        p->metrics_srv = http_server_start(&mo, metrics_handle, p, err, err_len);
        if (!p->metrics_srv) {
            goto fail;
        }
        log_info("proxy", "metrics_url=%s msg=\"serving /metrics without auth\"",
                 http_server_url(p->metrics_srv));
    }
    if (registry_tick_start(p->reg, NULL, NULL) != 0 || discovery_start(p->disc) != 0) {
        snprintf(err, err_len, "cannot start threads");
        goto fail;
    }
    return p;
fail:
    proxy_stop(p, PROXY_SETTLE_MS);
    return NULL;
}

static bool is_set(const char *s)
{
    return s && s[0];
}

/* The credential flags, when given, override what a kubeconfig or the service account says
 * (kubectl's --token, --certificate-authority, ... do the same). */
static void flags_override(struct upstream_opts *uo, const struct proxy_opts *o)
{
    if (is_set(o->token)) {
        uo->token = o->token;
        uo->token_file = NULL;
    }
    if (is_set(o->token_file)) {
        uo->token_file = o->token_file;
    }
    if (is_set(o->ca_file)) {
        uo->ca_file = o->ca_file;
        uo->ca_data = NULL;
    }
    if (is_set(o->client_cert)) {
        uo->client_cert = o->client_cert;
        uo->client_cert_data = NULL;
    }
    if (is_set(o->client_key)) {
        uo->client_key = o->client_key;
        uo->client_key_data = NULL;
    }
    if (o->insecure) {
        uo->insecure = true;
    }
}

/* The upstream of kubeconfig target <t> with the flag overrides; an exec user gets its
 * credential cache here (nothing runs yet). NULL with a message in <err>. */
static struct upstream *upstream_of_target(const struct proxy_opts *o,
                                           const struct kubeconfig_target *t, char *err,
                                           size_t err_len)
{
    struct upstream_opts uo;
    struct upstream *up;

    upstream_opts_from_target(&uo, t);
    flags_override(&uo, o);
    if (t->exec) {
        uo.exec = execcred_new(t, NULL, err, err_len);
        if (!uo.exec) {
            return NULL;
        }
    }
    up = upstream_new(&uo, err, err_len);
    if (!up) {
        execcred_free(uo.exec);
    }
    return up;
}

/*
 * The upstream, in README's order: --upstream URL (with the credential flags), --kubeconfig
 * PATH (wins over $KUBECONFIG, as in kubectl), the $KUBECONFIG list merged as kubectl merges
 * it, the in-cluster service account (KUBERNETES_SERVICE_HOST/PORT, its token re-read as the
 * kubelet rotates it, its CA), ~/.kube/config. Returns 0 and the upstream in *<out>, or 0 and
 * NULL when none of them is there (the embedded upstream then), or -errno with a message that
 * says what to fix in <err> (an unreadable or invalid kubeconfig, an unknown --context, an
 * auth-provider user, a missing service account token, ...).
 */
static int resolve_upstream(const struct proxy_opts *o, struct upstream **out, char *err,
                            size_t err_len)
{
    struct kubeconfig_load_opts lo = {0};
    struct kubeconfig_target *t = NULL;
    const char *env = getenv("KUBECONFIG");
    const char *home = getenv("HOME");
    bool in_cluster;
    char path[4096];
    struct stat st;
    int rc;

    *out = NULL;
    if (is_set(o->upstream)) {
        struct upstream_opts uo = {.url = o->upstream};

        flags_override(&uo, o);
        *out = upstream_new(&uo, err, err_len);
        return *out ? 0 : -EINVAL;
    }
    lo.service_host = getenv("KUBERNETES_SERVICE_HOST");
    lo.service_port = getenv("KUBERNETES_SERVICE_PORT");
    in_cluster = is_set(lo.service_host) && is_set(lo.service_port);
    snprintf(path, sizeof(path), "%s/.kube/config", is_set(home) ? home : "");
    if (!is_set(o->kubeconfig) && !is_set(env) && !is_set(o->context) && !in_cluster &&
        (!is_set(home) || stat(path, &st) == -1)) {
        return 0;
    }
    lo.path = o->kubeconfig;
    lo.env_list = env;
    lo.home = in_cluster ? NULL : home; /* the service account goes before ~/.kube/config */
    lo.context = o->context;
    lo.incluster_root = getenv("KWP_INCLUSTER_ROOT"); /* tests: a fake /var/run/secrets */
    rc = kubeconfig_target_load(&lo, &t, err, err_len);
    if (rc != 0) {
        return rc;
    }
    if (t->warning) {
        char q[1024];

        quote(t->warning, q, sizeof(q));
        log_warn("proxy", "source=%s msg=%s", t->source, q);
    }
    if (t->context) {
        log_info("proxy",
                 "kubeconfig=%s context=%s cluster=%s user=%s upstream=%s msg=\"using the "
                 "kubeconfig\"",
                 t->source, t->context, t->cluster ? t->cluster : "", t->user ? t->user : "",
                 t->server);
    } else {
        log_info("proxy", "upstream=%s msg=\"using the in-cluster service account\"", t->server);
    }
    *out = upstream_of_target(o, t, err, err_len);
    rc = *out ? 0 : -EINVAL;
    kubeconfig_target_free(t);
    return rc;
}

static int run(struct proxy_opts *o, const struct proxy_cmd *cmd)
{
    char err[2048];
    const char *url = NULL;
    const struct proxy_embedded *emb = &cmd->embedded;
    bool embedded = false;
    struct upstream *up = NULL;
    struct proxy *p;
    sigset_t set;
    int sig = 0;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);

    if (!cmd->embedded_only && resolve_upstream(o, &up, err, sizeof(err)) != 0) {
        fprintf(stderr, "kwp proxy: %s\n", err);
        curl_global_cleanup();
        return 1;
    }
    if (!up && !emb->start) {
        fprintf(stderr, "kwp proxy: no upstream configured: pass --upstream URL\n");
        curl_global_cleanup();
        return 1;
    }
    if (!up) {
        struct upstream_opts uo = {0};
        struct proxy_embedded_start es = {
            .bookmark_interval_ms = o->bookmark_interval_ms,
            .watch_max_lag_ms = o->watch_max_lag_ms,
            .delegated = strcmp(o->auth, "delegated") == 0,
            .downstream_tls =
                is_set(o->tls_cert_file) || is_set(o->tls_key_file) || is_set(o->client_ca_file),
        };

        if (emb->start(emb->ctx, &es, err, sizeof(err)) != 0) {
            fprintf(stderr, "kwp: cannot start the embedded %s: %s\n", emb->name, err);
            curl_global_cleanup();
            return 1;
        }
        embedded = true;
        uo.url = es.url;
        uo.token = es.token;
        if (!es.downstream_tls) {
            o->tls_cert_file = es.tls_cert_file;
            o->tls_key_file = es.tls_key_file;
            o->client_ca_file = es.client_ca_file;
        }
        log_info("proxy",
                 "upstream=%s msg=\"no upstream configured: started the embedded "
                 "%s\"",
                 uo.url, emb->name);
        up = upstream_new(&uo, err, sizeof(err));
        BUG_ON(!up); /* the embedded upstream's URL is http://HOST:PORT */
    }
    url = upstream_url(up);
    p = proxy_start(o, up, err, sizeof(err));
    if (!p) {
        fprintf(stderr, "kwp proxy: %s\n", err);
        if (embedded) {
            emb->stop(emb->ctx);
        }
        curl_global_cleanup();
        return 1;
    }
    printf("listening on %s\n", http_server_url(p->srv));
    if (embedded && emb->ready) {
        emb->ready(emb->ctx, http_server_url(p->srv));
    }
    fflush(stdout);
    log_info("proxy", "url=%s upstream=%s auth=%s threads=%lld msg=\"proxy ready\"",
             http_server_url(p->srv), url, o->auth, (long long)o->threads);
    sigwait(&set, &sig);
    log_info("proxy", "signal=%d msg=\"shutting down\"", sig);
    proxy_drain(p, &set);
    proxy_stop(p, PROXY_DRAIN_SETTLE_MS);
    log_info("proxy", "msg=\"stopped\"");
    if (embedded) {
        emb->stop(emb->ctx);
    }
    curl_global_cleanup();
    return 0;
}

/*
 * Checks --auth and --metrics-listen and picks the default mode: delegated unless --listen
 * is loopback. `none` on an address others can reach is allowed, loudly. Returns 0 or
 * -EINVAL after printing why.
 */
static int auth_mode_resolve(struct proxy_opts *o)
{
    bool loopback = gate_listen_is_loopback(o->listen);

    if (o->auth[0] == '\0') {
        o->auth = loopback ? "none" : "delegated";
    }
    if (strcmp(o->auth, "none") != 0 && strcmp(o->auth, "delegated") != 0) {
        fprintf(stderr, "kwp proxy: --auth must be none or delegated\n");
        return -EINVAL;
    }
    if (o->metrics_listen && !gate_listen_is_loopback(o->metrics_listen)) {
        fprintf(stderr, "kwp proxy: --metrics-listen must be a loopback address (it has no "
                        "auth)\n");
        return -EINVAL;
    }
    if (strcmp(o->auth, "none") == 0 && !loopback) {
        log_warn("proxy",
                 "listen=%s msg=\"WARNING: --auth none on a non-loopback address: anyone who "
                 "can reach it reads everything kwp's own credentials can read\"",
                 o->listen);
    }
    return 0;
}

/* Fills the --resources list from a comma-separated default. */
static void resources_default(struct config_list *l, const char *dflt)
{
    for (const char *q = dflt; *q;) {
        const char *c = strchr(q, ',');
        size_t n = c ? (size_t)(c - q) : strlen(q);
        l->items = xrealloc(l->items, sizeof(char *) * (l->len + 1));
        l->items[l->len++] = xstrndup(q, n);
        q += n + (c ? 1 : 0);
    }
}

int proxy_main(int argc, char **argv, const struct proxy_cmd *cmd)
{
    struct proxy_opts o;
    struct config_opt opts[PROXY_MAX_FLAGS];
    size_t n_opts = 0;
    int rc;

    opts_defaults(&o);
    /* `kwp demo` has no Service in front of it to take it out of rotation */
    o.shutdown_delay_ms = cmd->embedded_only ? 0 : PROXY_SHUTDOWN_DELAY_MS;
    const struct config_opt proxy_flags[] = {
        {"listen", CFG_STR, &o.listen, 0, 0,
         "address to serve on, HOST:PORT (port 0 = any free port; default 127.0.0.1:8080)"},
        {"resources", CFG_LIST, &o.resources, 0, 0,
         "resources to cache from the start: pods,configmaps,apps/v1/deployments (others are "
         "cached on first use)"},
        {"freshness-wait", CFG_DURATION, &o.freshness_wait_ms, 0, 60000,
         "LIST/GET at an rv newer than the cache: wait this long, then forward upstream (default "
         "250ms)"},
        {"too-large-rv", CFG_STR, &o.too_large_rv, 0, 0,
         "forward (default) or local: wait 3 s and answer the 504 Too large resource version here"},
        {"history-min", CFG_INT, &o.history_min, 1, 100000000,
         "history window: minimum events per resource (default 100)"},
        {"history-max", CFG_INT, &o.history_max, 1, 100000000,
         "history window: maximum events per resource (default 102400)"},
        {"history-window", CFG_DURATION, &o.history_window_ms, 0, 0,
         "history window: keep events this young before shrinking; 0 = fixed size (default 75s)"},
        {"bookmark-interval", CFG_DURATION, &o.bookmark_interval_ms, 1000, 3600000,
         "BOOKMARK period for allowWatchBookmarks watches (default 60s)"},
        {"watch-stall-timeout", CFG_DURATION, &o.watch_stall_ms, 1000, 3600000,
         "end a watch whose client reads nothing this long while events wait for it (default 10s)"},
        {"watch-max-lag", CFG_DURATION, &o.watch_max_lag_ms, 0, 3600000,
         "end a watch whose next event has waited this long (it re-watches from its last "
         "resourceVersion); 0 = only when it leaves the history window (default 10s)"},
        {"watch-wake-interval", CFG_DURATION, &o.watch_wake_ms, 0, 1000,
         "with 512+ watches on the writers (2048+ requests in flight for https watches), wake "
         "watches at most once per interval, so that the "
         "events of an interval go out in one write per watch (default 10ms; 0 = at once)"},
        {"watch-direct-write", CFG_BOOL, &o.watch_direct, 0, 0,
         "plain-HTTP watches are written by watch writer threads straight from the shared "
         "frames, one send per watch and batch (default true; false: through libmicrohttpd's "
         "buffers, as https watches are)"},
        {"threads", CFG_INT, &o.threads, 1, 64,
         "HTTP worker threads (default: one per core it may run on, at most 64)"},
        {"max-connections", CFG_INT, &o.max_connections, 16, 1000000,
         "downstream connection limit (default 60000, capped by the open-file limit)"},
        {"conn-memory", CFG_SIZE, &o.conn_memory, 4096, 16777216,
         "per-connection memory pool: headers and write buffer (default 32Ki)"},
        {"max-body", CFG_SIZE, &o.max_body, 1, INT64_MAX,
         "largest request body accepted (default 3Mi)"},
        {"page-size", CFG_INT, &o.page_size, 1, 100000, "upstream LIST page size (default 500)"},
        {"max-line", CFG_SIZE, &o.max_line, 1024, INT64_MAX,
         "longest upstream watch line accepted; longer is a protocol error and a relist (default "
         "16Mi)"},
        {"max-resource-bytes", CFG_SIZE, &o.max_resource_bytes, 0, INT64_MAX,
         "a resource whose upstream list holds more bytes of objects is not cached: its "
         "requests are forwarded upstream (default 0: no cap)"},
        {"upstream-probe-interval", CFG_DURATION, &o.probe_interval_ms, 200, 3600000,
         "probe upstream (GET /version) this often; a failed probe makes /readyz fail (default "
         "10s)"},
        {"cache-events", CFG_BOOL, &o.cache_events, 0, 0,
         "cache events too (kube-apiserver serves them from etcd; default false: passed through)"},
        {"tls-cert-file", CFG_STR, &o.tls_cert_file, 0, 0,
         "serve https downstream with this PEM certificate (with --tls-key-file)"},
        {"tls-key-file", CFG_STR, &o.tls_key_file, 0, 0, "PEM private key for --tls-cert-file"},
        {"client-ca-file", CFG_STR, &o.client_ca_file, 0, 0,
         "https: request client certificates and accept those these PEM CAs sign (user = CN, "
         "groups = O; wins over a bearer token)"},
        {"auth", CFG_STR, &o.auth, 0, 0,
         "none or delegated: authenticate every request with a TokenReview and authorize it with "
         "a SubjectAccessReview upstream (default: none when --listen is loopback, else "
         "delegated)"},
        {"anonymous-auth", CFG_BOOL, &o.anonymous_auth, 0, 0,
         "--auth delegated: requests without credentials act as system:anonymous (default "
         "false: 401)"},
        {"authentication-audiences", CFG_LIST, &o.audiences, 0, 0,
         "--auth delegated: audiences the TokenReviews ask for (default: the apiserver's)"},
        {"authn-cache-ttl", CFG_DURATION, &o.authn_ttl_ms, 0, 3600000,
         "how long a TokenReview answer is cached (default 10s; 0 = not cached)"},
        {"authz-cache-ttl", CFG_DURATION, &o.authz_ttl_ms, 0, 3600000,
         "how long an allowing SubjectAccessReview is cached (default 10s)"},
        {"authz-denied-cache-ttl", CFG_DURATION, &o.authz_denied_ttl_ms, 0, 3600000,
         "how long a denying SubjectAccessReview is cached (default 10s)"},
        {"metrics-listen", CFG_STR, &o.metrics_listen, 0, 0,
         "also serve /metrics without auth on this loopback HOST:PORT"},
        {"shutdown-delay", CFG_DURATION, &o.shutdown_delay_ms, 0, 3600000,
         "on SIGTERM/SIGINT: fail /readyz and keep serving this long, then end every watch (a "
         "BOOKMARK first where allowed) and exit; a second signal cuts it short (default 5s; kwp "
         "demo: 0)"},
        {"state-dir", CFG_STR, &o.state_dir, 0, 0,
         "warm restart: save each cached resource's state here at shutdown, and start from it "
         "(watch from its resourceVersion instead of listing)"},
        {"state-interval", CFG_DURATION, &o.state_interval_ms, 0, 86400000,
         "with --state-dir: also save a checkpoint this often while running, so a crash restarts "
         "warm too (default 0: only at shutdown)"},
        {"log-format", CFG_STR, &o.log_format, 0, 0,
         "text (logfmt, the default) or json: one JSON object per log line"},
        {"log-request-rate", CFG_INT, &o.log_request_rate, 0, 100000,
         "most request log records (denied, failed upstream, watch ended early) per second; "
         "0 = none (default 10)"},
    };
    const struct config_opt upstream_flags[] = {
        {"upstream", CFG_STR, &o.upstream, 0, 0, "upstream kube-apiserver URL (http or https)"},
        {"kubeconfig", CFG_STR, &o.kubeconfig, 0, 0,
         "kubeconfig file (wins over $KUBECONFIG; the credential flags override it)"},
        {"context", CFG_STR, &o.context, 0, 0,
         "kubeconfig context to use (default: its current-context)"},
        {"token", CFG_STR, &o.token, 0, 0, "bearer token for the upstream"},
        {"token-file", CFG_STR, &o.token_file, 0, 0,
         "file holding the bearer token (re-read when it changes)"},
        {"ca-file", CFG_STR, &o.ca_file, 0, 0, "PEM CA bundle to verify the upstream"},
        {"client-cert", CFG_STR, &o.client_cert, 0, 0, "PEM client certificate for the upstream"},
        {"client-key", CFG_STR, &o.client_key, 0, 0, "PEM client key for the upstream"},
        {"insecure-skip-tls-verify", CFG_BOOL, &o.insecure, 0, 0,
         "do not verify the upstream's certificate"},
    };
    const size_t n_proxy = sizeof(proxy_flags) / sizeof(proxy_flags[0]);
    const size_t n_upstream =
        cmd->embedded_only ? 0 : sizeof(upstream_flags) / sizeof(upstream_flags[0]);

    BUG_ON(n_proxy + n_upstream + cmd->n_flags > PROXY_MAX_FLAGS);
    memcpy(opts, proxy_flags, sizeof(proxy_flags));
    n_opts += n_proxy;
    memcpy(opts + n_opts, upstream_flags, n_upstream * sizeof(opts[0]));
    n_opts += n_upstream;
    if (cmd->n_flags > 0) {
        memcpy(opts + n_opts, cmd->flags, cmd->n_flags * sizeof(opts[0]));
        n_opts += cmd->n_flags;
    }
    rc = config_parse(opts, n_opts, argc, argv, cmd->usage, cmd->description);
    /* `kwp demo` has never checked --too-large-rv (anything but "local" forwards there) */
    if (rc == 0 && !cmd->embedded_only && strcmp(o.too_large_rv, "forward") != 0 &&
        strcmp(o.too_large_rv, "local") != 0) {
        fprintf(stderr, "kwp proxy: --too-large-rv must be forward or local\n");
        rc = -EINVAL;
    }
    if (rc == 0 && o.state_dir && o.state_dir[0] == '\0') {
        o.state_dir = NULL;
    }
    if (rc == 0 && o.state_interval_ms > 0 && !o.state_dir) {
        fprintf(stderr, "kwp proxy: --state-interval needs --state-dir\n");
        rc = -EINVAL;
    }
    if (rc == 0) {
        enum log_format lf;
        if (log_parse_format(o.log_format, &lf) != 0) {
            fprintf(stderr, "kwp proxy: --log-format must be text or json\n");
            rc = -EINVAL;
        } else {
            log_set_format(lf);
            reqlog_set_rate((unsigned)o.log_request_rate);
        }
    }
    if (rc == 0 && auth_mode_resolve(&o) != 0) {
        rc = -EINVAL;
    }
    if (rc != 0) {
        config_list_free(&o.resources);
        config_list_free(&o.audiences);
        return rc > 0 ? 0 : 2;
    }
    if (o.resources.len == 0 && cmd->default_resources) {
        resources_default(&o.resources, cmd->default_resources);
    }
    rc = run(&o, cmd);
    config_list_free(&o.resources);
    config_list_free(&o.audiences);
    return rc;
}
