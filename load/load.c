/*
 * load.c - `kwp load` (see load.h): flags, target, limits, signals, then client_run and the
 * report. Everything here happens before or after the run; nothing here is on the data path.
 * Of proxy/ it uses two public headers: config.h (the flag table every command shares) and
 * k8s_path.h (K8S_SEG_MAX, the path segment the proxy accepts); of cache/, gotext.h (Go's
 * url.QueryEscape, for the selectors).
 */
#include "load/load.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cache/bug.h"
#include "cache/gotext.h"
#include "load/client.h"
#include "load/report.h"
#include "proxy/config.h"
#include "proxy/k8s_path.h"

#define LOAD_FD_SLACK 64 /* descriptors besides the sockets: stdio, epoll, /proc reads */
#define LOAD_HOST_MAX 256
#define LOAD_PATH_MAX 2048
#define LOAD_SELECTORS_MAX 8192

static volatile sig_atomic_t load_stop;

static void on_signal(int sig)
{
    (void)sig;
    load_stop = 1;
}

/* A path segment of a resource or namespace: DNS label characters and dots. */
static bool segment_ok(const char *s, size_t n)
{
    if (n == 0 || n > K8S_SEG_MAX) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
              (c >= 'A' && c <= 'Z'))) {
            return false;
        }
    }
    return true;
}

int load_resource_path(const char *prefix, const char *resource, const char *ns, char *out,
                       size_t cap)
{
    const char *seg[3];
    size_t len[3], n = 0;
    const char *p = resource;
    char api[LOAD_PATH_MAX], nsp[K8S_SEG_MAX + 16] = "";
    int w;

    if (!resource) {
        return -EINVAL;
    }
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t l = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 3 || !segment_ok(p, l)) {
            return -EINVAL;
        }
        seg[n] = p;
        len[n++] = l;
        if (!slash) {
            break;
        }
        p = slash + 1;
    }
    if (n == 1) {
        snprintf(api, sizeof(api), "/api/v1");
    } else if (n == 2) { /* version/plural: the core group */
        snprintf(api, sizeof(api), "/api/%.*s", (int)len[0], seg[0]);
    } else {
        snprintf(api, sizeof(api), "/apis/%.*s/%.*s", (int)len[0], seg[0], (int)len[1], seg[1]);
    }
    if (ns && *ns) {
        if (!segment_ok(ns, strlen(ns))) {
            return -EINVAL;
        }
        snprintf(nsp, sizeof(nsp), "/namespaces/%s", ns);
    }
    w = snprintf(out, cap, "%s%s%s/%.*s", prefix ? prefix : "", api, nsp, (int)len[n - 1],
                 seg[n - 1]);
    return w < 0 || (size_t)w >= cap ? -EINVAL : 0;
}

/* Splits http://HOST[:PORT][/prefix] into host, port and path prefix (no trailing '/'). */
static int parse_target(const char *url, char *host, size_t host_cap, char *port, size_t port_cap,
                        char *prefix, size_t prefix_cap)
{
    const char *p, *hend, *slash;
    size_t hlen;

    if (strncmp(url, "http://", 7) != 0) {
        return -EINVAL;
    }
    p = url + 7;
    slash = strchr(p, '/');
    if (*p == '[') { /* [v6]:port */
        hend = strchr(p, ']');
        if (!hend || (slash && hend > slash)) {
            return -EINVAL;
        }
        hlen = (size_t)(hend - p - 1);
        p++;
        hend++;
    } else {
        hend = p + strcspn(p, ":/");
        hlen = (size_t)(hend - p);
    }
    if (hlen == 0 || hlen >= host_cap) {
        return -EINVAL;
    }
    memcpy(host, p, hlen);
    host[hlen] = '\0';
    if (*hend == ':') {
        size_t plen = strcspn(hend + 1, "/");
        if (plen == 0 || plen >= port_cap) {
            return -EINVAL;
        }
        memcpy(port, hend + 1, plen);
        port[plen] = '\0';
    } else {
        snprintf(port, port_cap, "80");
    }
    if (slash) {
        size_t l = strlen(slash);
        while (l > 0 && slash[l - 1] == '/') {
            l--;
        }
        if (l >= prefix_cap || strpbrk(slash, "?# ")) {
            return -EINVAL;
        }
        memcpy(prefix, slash, l);
        prefix[l] = '\0';
    } else {
        prefix[0] = '\0';
    }
    return 0;
}

static int resolve(const char *host, const char *port, struct sockaddr_storage *out, socklen_t *len)
{
    struct addrinfo hints, *res = NULL;
    int rc;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0 || !res) {
        fprintf(stderr, "kwp load: cannot resolve %s:%s: %s\n", host, port, gai_strerror(rc));
        return -ENOENT;
    }
    memcpy(out, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

/* Raises the soft open-file limit to the hard one; fails when <need> does not fit. */
static int raise_nofile(uint64_t need)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) == -1) {
        return -errno;
    }
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
        (void)getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur != RLIM_INFINITY && need > (uint64_t)rl.rlim_cur) {
        fprintf(stderr,
                "kwp load: %llu descriptors needed, the open-file limit is %llu "
                "(raise the hard limit: ulimit -Hn)\n",
                (unsigned long long)need, (unsigned long long)rl.rlim_cur);
        return -EMFILE;
    }
    return 0;
}

/* Encodes labelSelector/fieldSelector into "labelSelector=..&fieldSelector=..". */
static int build_selectors(const char *label, const char *field, char *out, size_t cap)
{
    char enc[LOAD_SELECTORS_MAX];
    size_t n = 0;

    out[0] = '\0';
    if (label && *label) {
        if (gotext_query_escape_to(label, enc, sizeof(enc)) >= sizeof(enc)) {
            return -EINVAL;
        }
        n = (size_t)snprintf(out, cap, "labelSelector=%s", enc);
    }
    if (field && *field && n < cap) {
        if (gotext_query_escape_to(field, enc, sizeof(enc)) >= sizeof(enc)) {
            return -EINVAL;
        }
        n += (size_t)snprintf(out + n, cap - n, "%sfieldSelector=%s", n ? "&" : "", enc);
    }
    return n < cap ? 0 : -EINVAL;
}

/* An IPv4 address as a host-order number, or -1. */
static int64_t ipv4_parse(const char *s, size_t len)
{
    char buf[INET_ADDRSTRLEN];
    struct in_addr a;

    if (len == 0 || len >= sizeof(buf)) {
        return -1;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (inet_pton(AF_INET, buf, &a) != 1) {
        return -1;
    }
    return (int64_t)ntohl(a.s_addr);
}

static void sa_ipv4(struct sockaddr_storage *ss, uint32_t host_order)
{
    struct sockaddr_in *sin = (struct sockaddr_in *)ss;

    memset(ss, 0, sizeof(*ss));
    sin->sin_family = AF_INET;
    sin->sin_addr.s_addr = htonl(host_order);
}

static bool target_is_loopback4(const struct sockaddr_storage *t)
{
    const struct sockaddr_in *sin = (const struct sockaddr_in *)t;

    return t->ss_family == AF_INET && (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
}

/* Appends the inclusive range [lo, hi] of IPv4 addresses. */
static int add_range(uint32_t lo, uint32_t hi, struct sockaddr_storage *out, size_t cap, size_t *n,
                     char *err, size_t err_len)
{
    if ((uint64_t)hi - lo + 1 > cap - *n) {
        snprintf(err, err_len, "--source-ips: more than %zu addresses", cap);
        return -EINVAL;
    }
    for (uint64_t a = lo; a <= hi; a++) {
        sa_ipv4(&out[(*n)++], (uint32_t)a);
    }
    return 0;
}

/* One list item: an address of any family, or an IPv4 range A-B. */
static int add_item(const char *item, const struct sockaddr_storage *target,
                    struct sockaddr_storage *out, size_t cap, size_t *n, char *err, size_t err_len)
{
    const char *dash = strchr(item, '-');
    struct in6_addr a6;

    if (dash) {
        int64_t lo = ipv4_parse(item, (size_t)(dash - item));
        int64_t hi = ipv4_parse(dash + 1, strlen(dash + 1));
        if (lo < 0 || hi < 0 || hi < lo) {
            snprintf(err, err_len, "--source-ips: bad range %s (want 127.0.0.1-127.0.0.8)", item);
            return -EINVAL;
        }
        if (target->ss_family != AF_INET) {
            snprintf(err, err_len, "--source-ips: %s is IPv4, the target is not", item);
            return -EINVAL;
        }
        return add_range((uint32_t)lo, (uint32_t)hi, out, cap, n, err, err_len);
    }
    if (*n >= cap) {
        snprintf(err, err_len, "--source-ips: more than %zu addresses", cap);
        return -EINVAL;
    }
    if (ipv4_parse(item, strlen(item)) >= 0) {
        if (target->ss_family != AF_INET) {
            snprintf(err, err_len, "--source-ips: %s is IPv4, the target is not", item);
            return -EINVAL;
        }
        sa_ipv4(&out[(*n)++], (uint32_t)ipv4_parse(item, strlen(item)));
        return 0;
    }
    if (inet_pton(AF_INET6, item, &a6) == 1) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&out[*n];
        if (target->ss_family != AF_INET6) {
            snprintf(err, err_len, "--source-ips: %s is IPv6, the target is not", item);
            return -EINVAL;
        }
        memset(&out[*n], 0, sizeof(out[*n]));
        sin6->sin6_family = AF_INET6;
        sin6->sin6_addr = a6;
        (*n)++;
        return 0;
    }
    snprintf(err, err_len,
             "--source-ips: %s is not an address, a range A-B, a count or auto (numeric "
             "addresses only)",
             item);
    return -EINVAL;
}

int load_sources_parse(const char *const *items, size_t n, const struct sockaddr_storage *target,
                       uint64_t conns, uint64_t ports, struct sockaddr_storage *out, size_t cap,
                       char *err, size_t err_len)
{
    size_t got = 0;
    uint64_t count = 0;
    bool is_count =
        n == 1 && items[0][0] != '\0' && strspn(items[0], "0123456789") == strlen(items[0]);

    if (n == 1 && (strcmp(items[0], "auto") == 0 || is_count)) {
        if (!target_is_loopback4(target)) {
            snprintf(err, err_len, "--source-ips %s: needs an IPv4 loopback target (127.x.x.x)",
                     items[0]);
            return -EINVAL;
        }
        if (is_count) {
            count = strtoull(items[0], NULL, 10);
        } else {
            count = ports > 0 && conns > ports ? (conns + ports - 1) / ports : 1;
        }
        if (count == 0 || count > cap || count > 0xFFFFFE) {
            snprintf(err, err_len, "--source-ips: a count from 1 to %zu", cap);
            return -EINVAL;
        }
        /* 127.0.0.1 ... : the loopback /8 answers on every address (Linux) */
        return add_range(0x7F000001u, 0x7F000001u + (uint32_t)count - 1, out, cap, &got, err,
                         err_len) == 0
                   ? (int)got
                   : -EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        if (add_item(items[i], target, out, cap, &got, err, err_len) != 0) {
            return -EINVAL;
        }
    }
    return (int)got;
}

/*
 * Connections one source address should carry to one destination: the ephemeral range
 * (ip_local_port_range) has room for all of its ports, but Linux's connect() tries ports of
 * one parity first and, once those are taken, scans every one of them on each connect
 * (__inet_hash_connect): measured here, 19,000 connections from 127.0.0.1 spent 75 % of the
 * load's CPU in that scan and stalled the ramp. So a source gets 40 % of the range.
 */
static uint64_t source_share(void)
{
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    unsigned lo = 32768, hi = 60999;

    if (f) {
        if (fscanf(f, "%u %u", &lo, &hi) != 2 || hi < lo) {
            lo = 32768;
            hi = 60999;
        }
        fclose(f);
    }
    return ((uint64_t)hi - lo + 1) * 2 / 5;
}

/* Binds a socket to each source once, so a missing address is one clear error up front. */
static int check_sources(const struct sockaddr_storage *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        socklen_t len =
            src[i].ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
        int fd = socket(src[i].ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int err = 0;
        char name[INET6_ADDRSTRLEN] = "?";

        if (fd == -1 || bind(fd, (const struct sockaddr *)&src[i], len) == -1) {
            err = errno;
        }
        if (fd != -1) {
            close(fd);
        }
        if (err != 0) {
            const void *a = src[i].ss_family == AF_INET6
                                ? (const void *)&((const struct sockaddr_in6 *)&src[i])->sin6_addr
                                : (const void *)&((const struct sockaddr_in *)&src[i])->sin_addr;
            inet_ntop(src[i].ss_family, a, name, sizeof(name));
            fprintf(stderr, "kwp load: cannot use source address %s: %s\n", name, strerror(err));
            return -err;
        }
    }
    return 0;
}

/* --source-ips, or "auto" when one address cannot hold every connection to a loopback target. */
static int setup_sources(const struct config_list *l, const struct sockaddr_storage *target,
                         uint64_t conns, struct sockaddr_storage **out, size_t *n_out)
{
    uint64_t ports = source_share();
    const char *autov[] = {"auto"};
    const char *const *items = (const char *const *)l->items;
    size_t n_items = l->len;
    char err[256];
    int n;

    *out = NULL;
    *n_out = 0;
    if (n_items == 0 && conns <= ports) {
        return 0;
    }
    if (n_items == 0 && !target_is_loopback4(target)) {
        fprintf(stderr,
                "kwp load: note: %llu connections to one address from one source address (more "
                "than %llu makes connect() slow, then fail): spread them with --source-ips\n",
                (unsigned long long)conns, (unsigned long long)ports);
        return 0;
    }
    if (n_items == 0) {
        items = autov;
        n_items = 1;
    }
    *out = xcalloc(LOAD_SOURCES_MAX, sizeof(**out));
    n = load_sources_parse(items, n_items, target, conns, ports, *out, LOAD_SOURCES_MAX, err,
                           sizeof(err));
    if (n < 0) {
        fprintf(stderr, "kwp load: %s\n", err);
        return -EINVAL;
    }
    *n_out = (size_t)n;
    if (check_sources(*out, *n_out) != 0) {
        return -EINVAL;
    }
    if (l->len == 0) {
        fprintf(stderr,
                "kwp load: note: %llu connections: connecting from %zu loopback "
                "addresses (--source-ips auto)\n",
                (unsigned long long)conns, *n_out);
    } else if (conns > ports * *n_out) {
        fprintf(stderr,
                "kwp load: note: %llu connections over %zu source addresses (more than %llu "
                "each makes connect() slow, then fail): add addresses to --source-ips\n",
                (unsigned long long)conns, *n_out, (unsigned long long)ports);
    }
    return 0;
}

static int parse_pids(const struct config_list *l, int *pids, size_t *n)
{
    *n = 0;
    if (l->len > CLIENT_MAX_PIDS) {
        fprintf(stderr, "kwp load: at most %d --pid values\n", CLIENT_MAX_PIDS);
        return -EINVAL;
    }
    for (size_t i = 0; i < l->len; i++) {
        char *end;
        long v;
        errno = 0;
        v = strtol(l->items[i], &end, 10);
        if (end == l->items[i] || *end != '\0' || errno != 0 || v <= 0 || v > 0x3fffffff) {
            fprintf(stderr, "kwp load: invalid --pid %s\n", l->items[i]);
            return -EINVAL;
        }
        pids[(*n)++] = (int)v;
    }
    return 0;
}

struct progress_ctx {
    int64_t watchers;
    bool quiet;
};

static void progress(void *ctx, const struct client_sample *s, const struct client_stats *st)
{
    const struct progress_ctx *pc = ctx;

    if (!pc->quiet) {
        report_progress(stderr, s, st, pc->watchers);
    }
}

/* Flag values; those the report shows live in <p>, so flags write straight into it. One
 * instance, on load_main's stack. */
struct load_cfg {
    struct report_params p;
    const char *json, *token;
    int64_t drain_ms, backoff_ms, backoff_max_ms, max_line;
    bool quiet;
    struct config_list sources, pids;
};

static void cfg_defaults(struct load_cfg *c)
{
    memset(c, 0, sizeof(*c));
    c->p.target = "http://127.0.0.1:8080";
    c->p.resource = "pods";
    c->p.initial = "list";
    c->p.list_query = "resourceVersion=0&limit=500";
    c->p.watchers = 100;
    c->p.duration_ms = 10000;
    c->p.ramp_per_s = 1000;
    c->drain_ms = 2000;
    c->backoff_ms = 800;
    c->backoff_max_ms = 30000;
    c->p.list_concurrency = 1;
    c->max_line = 16 * 1024 * 1024;
}

/* Everything between the flags and the run: 0, or 1 after printing why. */
static int setup(struct load_cfg *cfg, struct client_opts *o, char *host_hdr, size_t host_cap,
                 char *path, size_t path_cap, char *selectors, size_t sel_cap, int *pids,
                 struct sockaddr_storage **sources)
{
    char host[LOAD_HOST_MAX], port[16], prefix[LOAD_PATH_MAX];
    size_t n_pids;

    if (cfg->p.watchers == 0 && cfg->p.lists_per_s == 0) {
        fprintf(stderr, "kwp load: nothing to do: --watchers 0 and --lists 0\n");
        return 1;
    }
    if (strcmp(cfg->p.initial, "list") != 0 && strcmp(cfg->p.initial, "watchlist") != 0) {
        fprintf(stderr, "kwp load: --initial must be list or watchlist\n");
        return 1;
    }
    if (parse_target(cfg->p.target, host, sizeof(host), port, sizeof(port), prefix,
                     sizeof(prefix)) != 0) {
        fprintf(stderr, "kwp load: --target must be http://HOST[:PORT][/PREFIX], got %s%s\n",
                cfg->p.target,
                strncmp(cfg->p.target, "https://", 8) == 0
                    ? " (https is not supported yet: point it at a kwp proxy)"
                    : "");
        return 1;
    }
    if (load_resource_path(prefix, cfg->p.resource, cfg->p.ns, path, path_cap) != 0) {
        fprintf(stderr,
                "kwp load: bad --resource %s or --namespace (want plural, v1/plural "
                "or group/version/plural)\n",
                cfg->p.resource);
        return 1;
    }
    if (build_selectors(cfg->p.selector, cfg->p.field_selector, selectors, sel_cap) != 0) {
        fprintf(stderr, "kwp load: selectors too long\n");
        return 1;
    }
    if (cfg->p.start_rv && strlen(cfg->p.start_rv) >= CLIENT_RV_MAX) {
        fprintf(stderr, "kwp load: --start-rv too long\n");
        return 1;
    }
    if (cfg->p.list_query[0] == '?') {
        cfg->p.list_query++;
    }
    if (strlen(path) + strlen(selectors) + strlen(cfg->p.list_query) + strlen(cfg->p.target) +
            (cfg->token ? strlen(cfg->token) : 0) + CLIENT_REQ_SLACK >
        CLIENT_REQ_MAX) {
        fprintf(stderr, "kwp load: request too long (path, query, selectors, token)\n");
        return 1;
    }
    if (resolve(host, port, &o->addr, &o->addr_len) != 0) {
        return 1;
    }
    snprintf(host_hdr, host_cap, "%s%s%s:%s", strchr(host, ':') ? "[" : "", host,
             strchr(host, ':') ? "]" : "", port);
    if (setup_sources(&cfg->sources, &o->addr,
                      (uint64_t)cfg->p.watchers + (uint64_t)cfg->p.list_concurrency, sources,
                      &o->n_sources) != 0) {
        return 1;
    }
    if (parse_pids(&cfg->pids, pids, &n_pids) != 0) {
        return 1;
    }
    if (raise_nofile((uint64_t)cfg->p.watchers + (uint64_t)cfg->p.list_concurrency +
                     LOAD_FD_SLACK) != 0) {
        return 1;
    }
    o->host_header = host_hdr;
    o->path = path;
    o->selectors = selectors;
    o->token = cfg->token;
    o->sources = *sources;
    o->watchers = cfg->p.watchers;
    o->ramp_per_s = (double)cfg->p.ramp_per_s;
    o->initial =
        strcmp(cfg->p.initial, "watchlist") == 0 ? CLIENT_INITIAL_WATCHLIST : CLIENT_INITIAL_LIST;
    o->start_rv = cfg->p.start_rv && *cfg->p.start_rv ? cfg->p.start_rv : NULL;
    o->duration_ms = cfg->p.duration_ms;
    o->warmup_ms = cfg->p.warmup_ms;
    o->warmup_after_open = cfg->p.warmup_after_open;
    o->drain_ms = cfg->drain_ms;
    o->backoff_ms = cfg->backoff_ms;
    o->backoff_max_ms =
        cfg->backoff_max_ms < cfg->backoff_ms ? cfg->backoff_ms : cfg->backoff_max_ms;
    o->max_line = (size_t)cfg->max_line;
    o->lists_per_s = (double)cfg->p.lists_per_s;
    o->list_concurrency = cfg->p.list_concurrency;
    o->list_query = cfg->p.list_query;
    o->pids = pids;
    o->n_pids = n_pids;
    o->stop = &load_stop;
    return 0;
}

int load_main(int argc, char **argv)
{
    struct load_cfg cfg;
    struct client_opts o;
    struct client_stats st;
    struct progress_ctx pc;
    struct sigaction sa;
    struct sockaddr_storage *sources = NULL;
    char host_hdr[LOAD_HOST_MAX + 32], path[LOAD_PATH_MAX], selectors[LOAD_SELECTORS_MAX * 2];
    int pids[CLIENT_MAX_PIDS];
    FILE *json = NULL;
    int rc;

    cfg_defaults(&cfg);
    /* clang-format off: one flag per line reads better than the wrapped form */
    const struct config_opt opts[] = {
        {"target", CFG_STR, &cfg.p.target, 0, 0,
         "server URL, http://HOST:PORT[/PREFIX] (default http://127.0.0.1:8080)"},
        {"resource", CFG_STR, &cfg.p.resource, 0, 0,
         "plural, v1/plural or group/version/plural (default pods)"},
        {"namespace", CFG_STR, &cfg.p.ns, 0, 0, "namespace to watch (default: all)"},
        {"selector", CFG_STR, &cfg.p.selector, 0, 0, "labelSelector for every LIST and WATCH"},
        {"field-selector", CFG_STR, &cfg.p.field_selector, 0, 0,
         "fieldSelector for every LIST and WATCH"},
        {"watchers", CFG_INT, &cfg.p.watchers, 0, 1000000, "watch streams to hold (default 100)"},
        {"duration", CFG_DURATION, &cfg.p.duration_ms, 1, 86400000,
         "length of the run, ramp included (default 10s)"},
        {"ramp", CFG_INT, &cfg.p.ramp_per_s, 0, 10000000,
         "watchers started per second, 0 = all at once (default 1000)"},
        {"warmup", CFG_DURATION, &cfg.p.warmup_ms, 0, 86400000,
         "events before this are not measured (default 0)"},
        {"warmup-after-open", CFG_BOOL, &cfg.p.warmup_after_open, 0, 0,
         "--warmup counts from the moment every watcher is open (steady state: no ramp, no "
         "initial LISTs in the figures); at the latest from half the run"},
        {"initial", CFG_STR, &cfg.p.initial, 0, 0,
         "list (LIST rv=0, then WATCH) or watchlist (sendInitialEvents) (default list)"},
        {"start-rv", CFG_STR, &cfg.p.start_rv, 0, 0,
         "first WATCH from this resourceVersion, no LIST (410 lab)"},
        {"json", CFG_STR, &cfg.json, 0, 0, "write the report as JSON to this file"},
        {"lists", CFG_INT, &cfg.p.lists_per_s, 0, 1000000,
         "LIST mode: LIST requests per second (default 0 = off)"},
        {"list-query", CFG_STR, &cfg.p.list_query, 0, 0,
         "query of LIST mode requests (default resourceVersion=0&limit=500)"},
        {"list-concurrency", CFG_INT, &cfg.p.list_concurrency, 1, 10000,
         "LIST mode: requests in flight at most (default 1)"},
        {"max-line", CFG_SIZE, &cfg.max_line, 1024, 1073741824,
         "longest watch line accepted (default 16Mi)"},
        {"backoff", CFG_DURATION, &cfg.backoff_ms, 1, 3600000,
         "first retry delay after an error, doubling (default 800ms)"},
        {"backoff-max", CFG_DURATION, &cfg.backoff_max_ms, 1, 3600000,
         "largest retry delay (default 30s)"},
        {"drain", CFG_DURATION, &cfg.drain_ms, 0, 600000,
         "after --duration, time granted to LISTs in flight (default 2s)"},
        {"token", CFG_STR, &cfg.token, 0, 0, "bearer token sent with every request"},
        {"source-ips", CFG_LIST, &cfg.sources, 0, 0,
         "local addresses to connect from, round-robin, for more sockets to one target than "
         "one address has local ports: a list, ranges 127.0.0.1-127.0.0.4, a count N "
         "(127.0.0.1..N) or auto (default: auto for a loopback target when needed)"},
        {"pid", CFG_LIST, &cfg.pids, 0, 0,
         "also sample CPU and RSS of these processes each second (repeatable)"},
        {"quiet", CFG_BOOL, &cfg.quiet, 0, 0, "no progress line each second"},
    };
    /* clang-format on */

    rc = config_parse(
        opts, sizeof(opts) / sizeof(opts[0]), argc, argv, "kwp load [flags]",
        "Opens --watchers watch streams (one epoll thread) that behave like client-go\n"
        "reflectors, and/or LISTs at --lists per second; measures delivery latency from\n"
        "the kwp.io/stamp-ns annotation (kwp sim --stamp), throughput, errors, 410s,\n"
        "relists and reconnects; prints a summary and optionally writes JSON.");
    if (rc != 0) {
        config_list_free(&cfg.sources);
        config_list_free(&cfg.pids);
        return rc > 0 ? 0 : 2;
    }
    memset(&o, 0, sizeof(o));
    rc = setup(&cfg, &o, host_hdr, sizeof(host_hdr), path, sizeof(path), selectors,
               sizeof(selectors), pids, &sources);
    if (rc == 0 && cfg.json) {
        json = fopen(cfg.json, "w");
        if (!json) {
            fprintf(stderr, "kwp load: cannot write --json %s: %s\n", cfg.json, strerror(errno));
            rc = 1;
        }
    }
    if (rc != 0) {
        free(sources);
        config_list_free(&cfg.sources);
        config_list_free(&cfg.pids);
        return rc;
    }

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal; /* no SA_RESTART: epoll_wait returns EINTR at once */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    pc.watchers = cfg.p.watchers;
    pc.quiet = cfg.quiet;
    o.progress = progress;
    o.progress_ctx = &pc;
    rc = client_run(&o, &st);
    if (rc != 0) {
        fprintf(stderr, "kwp load: cannot run: %s\n", strerror(-rc));
        rc = 1;
    } else {
        cfg.p.path = path;
        cfg.p.start_rv = o.start_rv;
        report_summary(stdout, &cfg.p, &st);
        fflush(stdout);
        if (json && report_json(json, &cfg.p, &st) != 0) {
            fprintf(stderr, "kwp load: writing --json %s failed\n", cfg.json);
        }
    }
    if (json) {
        fclose(json);
    }
    client_stats_fini(&st);
    free(sources);
    config_list_free(&cfg.sources);
    config_list_free(&cfg.pids);
    return rc;
}
