/*
 * test_warm_restart.c - `kwp proxy --state-dir` in front of `kwp sim` (issue 14, warm restart).
 *
 * SIGTERM writes each cached resource's state; a proxy started again with the same directory
 * loads it, resumes its upstream watch from the saved resourceVersion without a LIST (the
 * sim's /_sim/stats counts them), picks up what upstream wrote while it was down, and answers
 * a client's re-watch from before the restart with the replay from the loaded history: the
 * same events the sim itself replays from that rv, no 410, no gap; an rv older than the loaded
 * window still gets the exact 410 it got before. A corrupted or foreign file is logged and
 * relists. With --state-interval a SIGKILLed proxy restarts warm from its last checkpoint.
 * Every wait is a bounded poll.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "tests/support/api.h"
#include "tests/support/http.h"
#include "tests/support/nap.h"
#include "tests/support/proc.h"
#include "tests/support/srv.h"

#define READY_MS 30000L
#define POLL_MS 20L
#define LINE_MS 10000L

struct dir {
    char path[64];
    char file[128];
};

static void dir_make(struct dir *d)
{
    snprintf(d->path, sizeof(d->path), "/tmp/kwp-warm-XXXXXX");
    cr_assert(mkdtemp(d->path) != NULL);
    snprintf(d->file, sizeof(d->file), "%s/core_v1_pods.kwpstate", d->path);
}

static void dir_remove(struct dir *d)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->path);
    cr_assert_eq(system(cmd), 0);
}

static void proxy_up(struct srv *px, const char *up, const struct dir *d, const char *interval)
{
    if (interval != NULL) {
        srv_spawn(px, "proxy",
                  ARGS("--upstream", up, "--resources", "pods", "--state-dir", d->path,
                       "--state-interval", interval),
                  NULL);
    } else {
        srv_spawn(px, "proxy",
                  ARGS("--upstream", up, "--resources", "pods", "--state-dir", d->path), NULL);
    }
    srv_wait_ready(px, READY_MS);
}

static uint64_t pod_lists(const struct srv *sim)
{
    return api_sim_stat(sim->url, "resources.pods.lists");
}

static uint64_t pod_watches(const struct srv *sim)
{
    return api_sim_stat(sim->url, "resources.pods.watches");
}

/* The proxy's rv, from a LIST at rv 0 (served from its cache). */
static uint64_t list_rv(const char *base)
{
    struct http_resp r;
    cJSON *root, *rv;
    uint64_t v;

    api_req(base, "GET", "/api/v1/pods?resourceVersion=0", NULL, NULL, NULL, &r);
    cr_assert_eq(r.code, 200);
    root = cJSON_Parse(r.body);
    rv = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "metadata"), "resourceVersion");
    cr_assert(cJSON_IsString(rv));
    v = strtoull(rv->valuestring, NULL, 10);
    cJSON_Delete(root);
    http_resp_free(&r);
    return v;
}

/* Polls until the proxy's cache reached <rv>. */
static void wait_rv(const char *base, uint64_t rv)
{
    uint64_t end = http_now_ms() + LINE_MS;

    while (list_rv(base) < rv && http_now_ms() < end) {
        nap(POLL_MS);
    }
    cr_assert_geq(list_rv(base), rv, "the proxy never reached rv %llu", (unsigned long long)rv);
}

/* The first <n> lines of a watch on <base> from <rv>, asserting no ERROR among them. */
static char **watch_lines(const char *base, uint64_t rv, size_t n)
{
    char path[128];
    struct watch *w;
    char **out = calloc(n, sizeof(*out));

    snprintf(path, sizeof(path), "/api/v1/pods?watch=true&resourceVersion=%llu",
             (unsigned long long)rv);
    w = api_watch(base, path, 200);
    for (size_t i = 0; i < n; i++) {
        const char *l = api_wline(w, i);

        cr_assert(strncmp(l, "{\"type\":\"ERROR\"", 15) != 0, "line %zu from %s: %s", i, base, l);
        out[i] = strdup(l);
    }
    watch_close(w);
    return out;
}

static void lines_free(char **l, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(l[i]);
    }
    free(l);
}

/* The ERROR line of a watch from <rv> (a 410), as one string. */
static char *too_old_line(const char *base, uint64_t rv)
{
    char path[128];
    struct watch *w;
    char *l;

    snprintf(path, sizeof(path), "/api/v1/pods?watch=true&resourceVersion=%llu",
             (unsigned long long)rv);
    w = api_watch(base, path, 200);
    l = strdup(api_wline(w, 0));
    watch_close(w);
    cr_assert(strstr(l, "\"code\":410") != NULL, "expected a 410, got %s", l);
    return l;
}

/* A watch from <rv>, below the proxy's history that began at its first list: forwarded
 * upstream (README "Scaling out"), so its first line is the sim's first event after <rv>. */
static void first_event_below(const char *base, uint64_t rv)
{
    char path[128];
    struct watch *w;

    snprintf(path, sizeof(path), "/api/v1/pods?watch=true&resourceVersion=%llu",
             (unsigned long long)rv);
    w = api_watch(base, path, 200);
    cr_assert(strncmp(api_wline(w, 0), "{\"type\":\"ADDED\"", 15) == 0, "from rv %llu: %s",
              (unsigned long long)rv, watch_line(w, 0, NULL));
    watch_close(w);
}

/* Whether the proxy's /metrics has the line "<name>{resource="pods"} <want>". */
static bool pods_metric_is(const char *base, const char *name, unsigned want)
{
    struct http_resp r;
    char line[160];
    bool found;

    api_req(base, "GET", "/metrics", NULL, NULL, NULL, &r);
    snprintf(line, sizeof(line), "\n%s{resource=\"pods\"} %u\n", name, want);
    found = r.code == 200 && strstr(r.body, line) != NULL;
    http_resp_free(&r);
    return found;
}

static void flip_byte(const char *file, long off)
{
    FILE *f = fopen(file, "r+b");
    int c;

    cr_assert(f != NULL, "no state file %s", file);
    cr_assert_eq(fseek(f, off, SEEK_SET), 0);
    c = fgetc(f);
    cr_assert_eq(fseek(f, off, SEEK_SET), 0);
    fputc(c ^ 0x40, f);
    fclose(f);
}

Test(warm_restart, sigterm_then_restart_resumes_the_watch_and_replays_the_loaded_history,
     .timeout = 120)
{
    struct srv sim, px;
    struct dir d;
    uint64_t x, rvs[5], lists, watches, boundary_rv;
    char **via_proxy, **via_sim;
    char needle[128];

    dir_make(&d);
    srv_spawn(&sim, "sim", ARGS("--objects", "20", "--namespaces", "1", "--churn", "0"), NULL);
    proxy_up(&px, sim.url, &d, NULL);
    x = list_rv(px.url); /* the client's rv before anything happens */
    boundary_rv = x;     /* the proxy's history starts at its list */
    for (int i = 0; i < 3; i++) {
        char name[32];

        snprintf(name, sizeof(name), "before-%d", i);
        rvs[i] = api_pod_create(sim.url, "default", name, NULL);
    }
    wait_rv(px.url, rvs[2]);
    lines_free(watch_lines(px.url, x, 3), 3); /* the client at X saw them */
    /* below the history, which began at the proxy's first list: forwarded, not a 410 */
    first_event_below(px.url, boundary_rv - 1);
    cr_assert(pods_metric_is(px.url, "kwp_watches_before_cache_total", 1));
    lists = pod_lists(&sim);
    cr_assert_eq(lists, 1);

    srv_stop(&px, "kwp proxy (first)");
    cr_assert_eq(access(d.file, R_OK), 0, "SIGTERM wrote no state file");
    /* upstream moves on while the proxy is down */
    rvs[3] = api_pod_create(sim.url, "default", "while-down-0", NULL);
    rvs[4] = api_pod_create(sim.url, "default", "while-down-1", NULL);
    watches = pod_watches(&sim);

    proxy_up(&px, sim.url, &d, NULL);
    snprintf(needle, sizeof(needle), "rv=%llu boundary=%llu", (unsigned long long)rvs[2],
             (unsigned long long)boundary_rv);
    cr_assert(proc_log_has(px.p, needle), "no load at the saved rv (%s)", needle);
    cr_assert(proc_log_has(px.p, "resumed watch caught up: fresh"));
    wait_rv(px.url, rvs[4]);
    cr_assert_eq(pod_lists(&sim), lists, "the restarted proxy listed upstream");
    cr_assert_gt(pod_watches(&sim), watches, "the restarted proxy did not watch upstream");
    cr_assert(pods_metric_is(px.url, "kwp_upstream_list_requests_total", 0));
    cr_assert(pods_metric_is(px.url, "kwp_upstream_watch_requests_total", 1));
    cr_assert(pods_metric_is(px.url, "kwp_state_stale", 0));

    /* the client comes back at X: the replay, exactly what the sim replays from X */
    via_proxy = watch_lines(px.url, x, 5);
    via_sim = watch_lines(sim.url, x, 5);
    for (size_t i = 0; i < 5; i++) {
        cr_assert_str_eq(via_proxy[i], via_sim[i], "event %zu differs", i);
        snprintf(needle, sizeof(needle), "\"resourceVersion\":\"%llu\"",
                 (unsigned long long)rvs[i]);
        cr_assert(strstr(via_proxy[i], needle) != NULL, "event %zu is not rv %llu: %s", i,
                  (unsigned long long)rvs[i], via_proxy[i]);
    }
    /* older than the loaded window, which still begins at the first list's rv: forwarded as
     * before the restart (the watch from X itself was the loaded history's own) */
    first_event_below(px.url, boundary_rv - 1);
    cr_assert(pods_metric_is(px.url, "kwp_watches_before_cache_total", 1));
    lines_free(via_proxy, 5);
    lines_free(via_sim, 5);
    srv_stop(&px, "kwp proxy (second)");
    srv_stop(&sim, "kwp sim");
    dir_remove(&d);
}

Test(warm_restart, a_corrupted_or_foreign_state_file_is_logged_and_relists, .timeout = 120)
{
    struct srv sim, other, px;
    struct dir d;
    uint64_t rv;
    struct stat st;

    dir_make(&d);
    srv_spawn(&sim, "sim", ARGS("--objects", "20", "--namespaces", "1", "--churn", "0"), NULL);
    srv_spawn(&other, "sim", ARGS("--objects", "5", "--namespaces", "1", "--churn", "0"), NULL);
    proxy_up(&px, sim.url, &d, NULL);
    rv = api_pod_create(sim.url, "default", "p0", NULL);
    wait_rv(px.url, rv);
    srv_stop(&px, "kwp proxy (first)");
    cr_assert_eq(stat(d.file, &st), 0);
    flip_byte(d.file, (long)st.st_size / 2);

    proxy_up(&px, sim.url, &d, NULL);
    cr_assert(proc_log_has(px.p, "checksum mismatch (truncated or corrupted)"));
    cr_assert(proc_log_has(px.p, "saved state refused, ignored; listing"));
    cr_assert_eq(pod_lists(&sim), 2, "a corrupted file must relist");
    cr_assert_geq(list_rv(px.url), rv);
    srv_stop(&px, "kwp proxy (second)");

    /* the good file it just wrote, offered to a proxy in front of another upstream */
    proxy_up(&px, other.url, &d, NULL);
    cr_assert(proc_log_has(px.p, "written for another upstream or resource"));
    cr_assert_eq(api_sim_stat(other.url, "resources.pods.lists"), 1);
    srv_stop(&px, "kwp proxy (third)");
    srv_stop(&other, "kwp sim (other)");
    srv_stop(&sim, "kwp sim");
    dir_remove(&d);
}

Test(warm_restart, a_sigkilled_proxy_restarts_warm_from_its_last_checkpoint, .timeout = 120)
{
    struct srv sim, px;
    struct dir d;
    uint64_t rv, after, lists;
    char **via_proxy, **via_sim;
    struct stat st;
    uint64_t end;

    dir_make(&d);
    srv_spawn(&sim, "sim", ARGS("--objects", "20", "--namespaces", "1", "--churn", "0"), NULL);
    proxy_up(&px, sim.url, &d, "500ms");
    rv = api_pod_create(sim.url, "default", "p0", NULL);
    wait_rv(px.url, rv);
    /* two checkpoints after the write: the second holds it */
    end = http_now_ms() + LINE_MS;
    while (stat(d.file, &st) != 0 && http_now_ms() < end) {
        nap(POLL_MS);
    }
    nap(1200);
    cr_assert_eq(proc_kill(px.p, SIGKILL), 0);
    cr_assert_eq(proc_stop(px.p), 128 + SIGKILL);
    px.p = NULL;
    lists = pod_lists(&sim);
    after = api_pod_create(sim.url, "default", "after-kill", NULL);

    proxy_up(&px, sim.url, &d, "500ms");
    cr_assert(proc_log_has(px.p, "loaded saved state"));
    wait_rv(px.url, after);
    cr_assert_eq(pod_lists(&sim), lists, "the restarted proxy listed upstream");
    via_proxy = watch_lines(px.url, rv - 1, 2);
    via_sim = watch_lines(sim.url, rv - 1, 2);
    cr_assert_str_eq(via_proxy[0], via_sim[0]);
    cr_assert_str_eq(via_proxy[1], via_sim[1]);
    lines_free(via_proxy, 2);
    lines_free(via_sim, 2);
    srv_stop(&px, "kwp proxy (second)");
    srv_stop(&sim, "kwp sim");
    dir_remove(&d);
}

/* Runs `kwp proxy <args> 2>&1`; returns its exit status and the output (caller frees). */
static int kwp_run(const char *args, char **out)
{
    char cmd[1024];
    size_t cap = 65536, len = 0, n;
    FILE *f;
    int st;

    snprintf(cmd, sizeof(cmd), "'%s' proxy %s 2>&1", proc_kwp_bin(), args);
    f = popen(cmd, "r");
    cr_assert(f != NULL);
    *out = calloc(1, cap);
    while (len + 1 < cap && (n = fread(*out + len, 1, cap - 1 - len, f)) > 0) {
        len += n;
    }
    st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(warm_restart, the_flags_their_environment_twins_and_their_errors, .timeout = 60)
{
    struct srv sim, px;
    struct dir d;
    char *out = NULL;

    cr_assert_eq(kwp_run("--help", &out), 0);
    cr_assert(strstr(out, "--state-dir STR") != NULL && strstr(out, "[KWP_STATE_DIR]") != NULL);
    cr_assert(strstr(out, "--state-interval DURATION") != NULL &&
              strstr(out, "[KWP_STATE_INTERVAL]") != NULL);
    free(out);
    cr_assert_eq(kwp_run("--upstream http://127.0.0.1:1 --state-interval 1s", &out), 2);
    cr_assert(strstr(out, "--state-interval needs --state-dir") != NULL, "%s", out);
    free(out);
    cr_assert_eq(kwp_run("--upstream http://127.0.0.1:1 --listen 127.0.0.1:0 --state-dir "
                         "/nonexistent/kwp-state",
                         &out),
                 1);
    cr_assert(strstr(out, "--state-dir /nonexistent/kwp-state is not a writable directory") != NULL,
              "%s", out);
    free(out);

    /* KWP_STATE_DIR alone turns it on */
    dir_make(&d);
    srv_spawn(&sim, "sim", ARGS("--objects", "5", "--namespaces", "1", "--churn", "0"), NULL);
    cr_assert_eq(setenv("KWP_STATE_DIR", d.path, 1), 0);
    srv_spawn(&px, "proxy", ARGS("--upstream", sim.url, "--resources", "pods"), NULL);
    srv_wait_ready(&px, READY_MS);
    srv_stop(&px, "kwp proxy");
    cr_assert_eq(access(d.file, R_OK), 0, "KWP_STATE_DIR wrote no state file");
    unsetenv("KWP_STATE_DIR");
    srv_stop(&sim, "kwp sim");
    dir_remove(&d);
}

Test(warm_restart, upstream_compacted_meanwhile_answers_410_and_the_proxy_relists, .timeout = 120)
{
    struct srv sim, px;
    struct dir d;
    struct http_resp r;
    uint64_t x, rv, lists;
    char path[96];
    char *line;

    dir_make(&d);
    srv_spawn(
        &sim, "sim",
        ARGS("--objects", "20", "--namespaces", "1", "--churn", "0", "--compaction-interval", "0"),
        NULL);
    proxy_up(&px, sim.url, &d, NULL);
    x = list_rv(px.url);
    rv = api_pod_create(sim.url, "default", "p0", NULL);
    wait_rv(px.url, rv);
    srv_stop(&px, "kwp proxy (first)");
    lists = pod_lists(&sim);
    rv = api_pod_create(sim.url, "default", "p1", NULL);
    snprintf(path, sizeof(path), "/_sim/compact?revision=%llu", (unsigned long long)rv);
    api_req(sim.url, "POST", path, NULL, NULL, NULL, &r);
    cr_assert_eq(r.code, 200, "compact: %ld %s", r.code, r.body);
    http_resp_free(&r);

    proxy_up(&px, sim.url, &d, NULL);
    cr_assert(proc_log_has(px.p, "loaded saved state"));
    cr_assert(proc_log_has(px.p, "watch expired, relisting"));
    cr_assert(proc_log_has(px.p, "loaded state replaced by a relist"));
    cr_assert_eq(pod_lists(&sim), lists + 1, "the 410 must relist once");
    wait_rv(px.url, rv);
    /* the relist reset the history: X from before the restart is too old now */
    line = too_old_line(px.url, x);
    free(line);
    srv_stop(&px, "kwp proxy (second)");
    srv_stop(&sim, "kwp sim");
    dir_remove(&d);
}
