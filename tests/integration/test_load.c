/*
 * test_load.c - `kwp load` against real servers: `kwp sim --stamp` directly, and `kwp proxy`
 * in front of it, each on 127.0.0.1:0 (proc_spawn, readiness = the "listening on" line).
 *
 * `kwp load` is not a server: each test runs it to completion as a child with its stdout and
 * stderr in a mkdtemp directory and checks the JSON it wrote with --json: the counts (watchers
 * opened, events, 410s, relists, errors) and the shape of the latency percentiles. Nothing
 * here asserts a duration or a rate; the machine may be slow. Children are bounded by a
 * deadline and killed (by PID) past it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "tests/support/http.h"
#include "tests/support/nap.h"
#include "tests/support/proc.h"

#define T_TIMEOUT 90 /* one value per file (Criterion leaks under ASan otherwise) */
#define LOAD_DEADLINE_MS 45000
#define POLL_MS 20
#define READY_MS 15000
#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

struct srv {
    struct proc *p;
    char url[256];
};

/* A finished `kwp load` run. */
struct run {
    char dir[64];
    char json_path[128];
    pid_t pid;
    int status;  /* exit code, 128 + signal, or -1 when it had to be killed */
    cJSON *json; /* parsed --json file, NULL when absent */
};

static void srv_start(struct srv *s, const char *cmd, const char *const *args)
{
    memset(s, 0, sizeof(*s));
    s->p = proc_spawn_kwp(cmd, args, NULL, s->url, sizeof(s->url));
    cr_assert_not_null(s->p, "could not start kwp %s", cmd);
}

static void srv_stop(struct srv *s, const char *what)
{
    int st = proc_stop(s->p);

    s->p = NULL;
    cr_assert_eq(st, 0, "%s exited with status %d (0 expected after SIGTERM)", what, st);
}

/* ---- running kwp load ------------------------------------------------------------------ */

/* Starts `kwp load --target <target> --json <dir>/load.json --quiet <args...>`. */
static void load_start(struct run *r, const char *target, const char *const *args)
{
    const char *argv[64];
    size_t n = 0;
    char out[128], err[128];
    pid_t pid;

    memset(r, 0, sizeof(*r));
    snprintf(r->dir, sizeof(r->dir), "/tmp/kwp-load-XXXXXX");
    cr_assert_not_null(mkdtemp(r->dir));
    snprintf(r->json_path, sizeof(r->json_path), "%s/load.json", r->dir);
    snprintf(out, sizeof(out), "%s/stdout.log", r->dir);
    snprintf(err, sizeof(err), "%s/stderr.log", r->dir);
    argv[n++] = proc_kwp_bin();
    argv[n++] = "load";
    argv[n++] = "--target";
    argv[n++] = target;
    argv[n++] = "--json";
    argv[n++] = r->json_path;
    for (size_t i = 0; args && args[i]; i++) {
        cr_assert_lt(n, 62u);
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    pid = fork();
    cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
    if (pid == 0) {
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (fo == -1 || fe == -1 || dup2(fo, 1) == -1 || dup2(fe, 2) == -1) {
            _exit(126);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    r->pid = pid;
}

static void print_file(const char *dir, const char *name)
{
    char path[160], buf[4096];
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "r");
    if (!f) {
        return;
    }
    fprintf(stderr, "---- %s\n", path);
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        fwrite(buf, 1, n, stderr);
    }
    fclose(f);
}

/* Waits for the run to end (killing it past the deadline) and parses its JSON. */
static void load_wait(struct run *r)
{
    uint64_t end = http_now_ms() + LOAD_DEADLINE_MS;
    int st = 0;
    pid_t w;
    FILE *f;

    while ((w = waitpid(r->pid, &st, WNOHANG)) == 0 && http_now_ms() < end) {
        nap(POLL_MS);
    }
    if (w == 0) {
        kill(r->pid, SIGKILL);
        waitpid(r->pid, &st, 0);
        r->status = -1;
    } else {
        r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    f = fopen(r->json_path, "r");
    if (f) {
        static char text[4 << 20];
        size_t n = fread(text, 1, sizeof(text) - 1, f);
        text[n] = '\0';
        fclose(f);
        r->json = cJSON_Parse(text);
    }
    if (r->status != 0 || !r->json) {
        print_file(r->dir, "stdout.log");
        print_file(r->dir, "stderr.log");
    }
}

static void load_run(struct run *r, const char *target, const char *const *args)
{
    load_start(r, target, args);
    load_wait(r);
}

static void run_free(struct run *r)
{
    char path[160];

    cJSON_Delete(r->json);
    r->json = NULL;
    for (size_t i = 0; i < 3; i++) {
        static const char *const names[] = {"load.json", "stdout.log", "stderr.log"};
        snprintf(path, sizeof(path), "%s/%s", r->dir, names[i]);
        unlink(path);
    }
    rmdir(r->dir);
}

/* Number at a dotted path of the run's JSON; fails the test when absent. */
static double jnum(const struct run *r, const char *path)
{
    const cJSON *o = r->json;
    char key[128];
    const char *p = path;

    cr_assert_not_null(o, "no JSON report in %s", r->dir);
    while (o && *p) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        cr_assert_lt(len, sizeof(key));
        memcpy(key, p, len);
        key[len] = '\0';
        o = cJSON_GetObjectItemCaseSensitive(o, key);
        p += len + (dot ? 1 : 0);
    }
    cr_assert(cJSON_IsNumber(o), "%s missing from the JSON report", path);
    return o->valuedouble;
}

/* Asserts a healthy run of <n> watchers: all opened, each got events, no error, and
 * ordered latency percentiles. */
static void expect_healthy_watch(const struct run *r, double n)
{
    cr_assert_eq(r->status, 0, "kwp load exited %d", r->status);
    cr_assert_eq(jnum(r, "watch.watchers_opened"), n);
    cr_assert_eq(jnum(r, "watch.states_at_end.watching"), n, "every watch open at the end");
    cr_assert_gt(jnum(r, "watch.events"), 0);
    cr_assert_gt(jnum(r, "watch.per_watcher_events.min"), 0, "a watcher received nothing");
    cr_assert_eq(jnum(r, "watch.per_watcher_events.zero"), 0);
    cr_assert_eq(jnum(r, "errors.total"), 0, "errors in the run");
    cr_assert_gt(jnum(r, "watch.latency_ms.count"), 0);
    cr_assert_leq(jnum(r, "watch.latency_ms.min"), jnum(r, "watch.latency_ms.p50"));
    cr_assert_leq(jnum(r, "watch.latency_ms.p50"), jnum(r, "watch.latency_ms.p90"));
    cr_assert_leq(jnum(r, "watch.latency_ms.p90"), jnum(r, "watch.latency_ms.p99"));
    cr_assert_leq(jnum(r, "watch.latency_ms.p99"), jnum(r, "watch.latency_ms.p999"));
    cr_assert_leq(jnum(r, "watch.latency_ms.p999"), jnum(r, "watch.latency_ms.max"));
    cr_assert_eq(jnum(r, "watch.gone_410"), 0);
    cr_assert_gt(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r->json, "series")), 0);
}

/* A value from the simulator's /_sim/stats (dotted path), -1 when unavailable. */
static double sim_stat(const struct srv *sim, const char *path)
{
    struct http_resp resp;
    char url[300];
    double v = -1;

    snprintf(url, sizeof(url), "%s/_sim/stats", sim->url);
    if (http_get(url, 5000, &resp) == 0 && resp.code == 200) {
        cJSON *j = cJSON_Parse(resp.body);
        const cJSON *o = j;
        char key[64];
        const char *p = path;
        while (o && *p) {
            const char *dot = strchr(p, '.');
            size_t len = dot ? (size_t)(dot - p) : strlen(p);
            snprintf(key, sizeof(key), "%.*s", (int)len, p);
            o = cJSON_GetObjectItemCaseSensitive(o, key);
            p += len + (dot ? 1 : 0);
        }
        if (cJSON_IsNumber(o)) {
            v = o->valuedouble;
        }
        cJSON_Delete(j);
    }
    http_resp_free(&resp);
    return v;
}

/* ---- tests ------------------------------------------------------------------------------ */

Test(load, fifty_watchers_on_a_stamping_sim, .timeout = T_TIMEOUT)
{
    struct srv sim;
    struct run r;

    srv_start(&sim, "sim", ARGS("--stamp", "--churn", "200"));
    load_run(&r, sim.url, ARGS("--watchers", "50", "--duration", "3s", "--quiet"));
    expect_healthy_watch(&r, 50);
    cr_assert_eq(jnum(&r, "watch.lists"), 50, "one LIST per watcher");
    cr_assert_eq(jnum(&r, "watch.relists"), 0);
    cr_assert_gt(jnum(&r, "watch.bytes"), 0);
    cr_assert_eq(jnum(&r, "params.watchers"), 50);
    run_free(&r);
    srv_stop(&sim, "kwp sim");
}

/* --warmup-after-open: the measured window starts --warmup after the last watcher opened (here
 * no earlier than 1.9 s + 1 s: 20 watchers at 10/s), so a ramp's replays are not measured. */
Test(load, warmup_after_open_measures_the_steady_state, .timeout = T_TIMEOUT)
{
    struct srv sim;
    struct run r;

    srv_start(&sim, "sim", ARGS("--stamp", "--churn", "200"));
    load_run(&r, sim.url,
             ARGS("--watchers", "20", "--ramp", "10", "--duration", "6s", "--warmup", "1s",
                  "--warmup-after-open", "--quiet"));
    expect_healthy_watch(&r, 20);
    cr_assert_geq(jnum(&r, "watch.measured_from_s"), 2.9, "measured before every watcher opened");
    cr_assert_lt(jnum(&r, "watch.measured_from_s"), 6.0);
    cr_assert_gt(jnum(&r, "watch.warmup_events"), 0, "the ramp's events are counted apart");
    run_free(&r);
    /* without it, the window starts at --warmup from the start */
    load_run(
        &r, sim.url,
        ARGS("--watchers", "20", "--ramp", "10", "--duration", "3s", "--warmup", "1s", "--quiet"));
    cr_assert_eq(r.status, 0);
    cr_assert_float_eq(jnum(&r, "watch.measured_from_s"), 1.0, 0.001);
    run_free(&r);
    srv_stop(&sim, "kwp sim");
}

Test(load, too_old_rv_counts_410s_and_relists, .timeout = T_TIMEOUT)
{
    struct srv sim;
    struct run r;
    struct http_resp resp;
    char url[300];
    uint64_t end = http_now_ms() + READY_MS;

    /* a short history, compacted past revision 1: a WATCH from rv 1 gets the 410 ERROR */
    srv_start(&sim, "sim", ARGS("--stamp", "--churn", "200", "--history-events", "20"));
    while (sim_stat(&sim, "revision") < 100 && http_now_ms() < end) {
        nap(POLL_MS);
    }
    cr_assert_geq(sim_stat(&sim, "revision"), 100, "churn did not advance the revision");
    snprintf(url, sizeof(url), "%s/_sim/compact", sim.url);
    cr_assert_eq(http_do("POST", url, NULL, NULL, NULL, 5000, &resp), 0);
    cr_assert_eq(resp.code, 200, "compact: HTTP %ld %s", resp.code, resp.body);
    http_resp_free(&resp);
    cr_assert_gt(sim_stat(&sim, "compacted"), 1);

    load_run(&r, sim.url,
             ARGS("--watchers", "10", "--duration", "3s", "--start-rv", "1", "--backoff", "50ms",
                  "--backoff-max", "200ms", "--quiet"));
    cr_assert_eq(r.status, 0);
    cr_assert_geq(jnum(&r, "watch.gone_410"), 10, "every watcher's first watch is too old");
    cr_assert_eq(jnum(&r, "errors.error_events.410"), jnum(&r, "watch.gone_410"));
    cr_assert_geq(jnum(&r, "watch.relists"), 10, "each relisted at rv 0");
    cr_assert_eq(jnum(&r, "watch.relists"), jnum(&r, "watch.lists"));
    cr_assert_eq(jnum(&r, "watch.watchers_opened"), 10);
    cr_assert_gt(jnum(&r, "watch.events"), 0, "watching again after the relist");
    cr_assert_geq(jnum(&r, "watch.reconnects"), 10);
    run_free(&r);
    srv_stop(&sim, "kwp sim");
}

Test(load, watch_list_initial_events_are_not_deliveries, .timeout = T_TIMEOUT)
{
    struct srv sim;
    struct run r;

    srv_start(&sim, "sim", ARGS("--stamp", "--churn", "100", "--objects", "30"));
    load_run(&r, sim.url,
             ARGS("--watchers", "5", "--duration", "2s", "--initial", "watchlist", "--quiet"));
    expect_healthy_watch(&r, 5);
    cr_assert_geq(jnum(&r, "watch.initial_events"), 5 * 30 * 0.5,
                  "each watcher starts with the current pods as initial events");
    cr_assert_eq(jnum(&r, "watch.lists"), 5, "the initial-events-end bookmark ends each list");
    cr_assert_geq(jnum(&r, "watch.bookmarks"), 5);
    run_free(&r);
    srv_stop(&sim, "kwp sim");
}

Test(load, list_mode_measures_lists, .timeout = T_TIMEOUT)
{
    struct srv sim;
    struct run r;

    srv_start(&sim, "sim", ARGS("--objects", "200"));
    load_run(&r, sim.url,
             ARGS("--watchers", "0", "--lists", "20", "--list-concurrency", "2", "--duration", "2s",
                  "--list-query", "resourceVersion=0", "--namespace", "default", "--quiet"));
    cr_assert_eq(r.status, 0);
    cr_assert_gt(jnum(&r, "list.ok"), 0);
    cr_assert_eq(jnum(&r, "list.ok"), jnum(&r, "list.requests"), "every LIST sent completed");
    cr_assert_gt(jnum(&r, "list.bytes"), 0);
    cr_assert_leq(jnum(&r, "list.latency_ms.p50"), jnum(&r, "list.latency_ms.p99"));
    cr_assert_leq(jnum(&r, "list.latency_ms.p99"), jnum(&r, "list.latency_ms.max"));
    cr_assert_eq(jnum(&r, "errors.total"), 0);
    cr_assert_geq(sim_stat(&sim, "resources.pods.lists"), jnum(&r, "list.ok"));
    run_free(&r);
    srv_stop(&sim, "kwp sim");
}

Test(load, sigint_stops_early_and_still_reports, .timeout = T_TIMEOUT)
{
    struct srv sim;
    struct run r;
    uint64_t end = http_now_ms() + READY_MS;

    srv_start(&sim, "sim", ARGS("--stamp", "--churn", "100"));
    load_start(&r, sim.url, ARGS("--watchers", "8", "--duration", "10m", "--quiet"));
    while (sim_stat(&sim, "resources.pods.watches_open") < 8 && http_now_ms() < end) {
        nap(POLL_MS);
    }
    cr_assert_geq(sim_stat(&sim, "resources.pods.watches_open"), 8);
    cr_assert_eq(kill(r.pid, SIGINT), 0);
    load_wait(&r);
    cr_assert_eq(r.status, 0);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r.json, "interrupted")));
    cr_assert_eq(jnum(&r, "watch.watchers_opened"), 8);
    run_free(&r);
    srv_stop(&sim, "kwp sim");
}

Test(load, unreachable_target_counts_connect_errors, .timeout = T_TIMEOUT)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    char target[64];
    struct run r;

    /* a bound port nobody listens on: connections are refused */
    cr_assert_neq(fd, -1);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    snprintf(target, sizeof(target), "http://127.0.0.1:%d", ntohs(a.sin_port));
    load_run(&r, target,
             ARGS("--watchers", "3", "--duration", "1s", "--backoff", "50ms", "--quiet"));
    cr_assert_eq(r.status, 0, "a failing target is measured, not a setup failure");
    cr_assert_eq(jnum(&r, "watch.watchers_opened"), 0);
    cr_assert_geq(jnum(&r, "errors.transport.connect"), 3);
    cr_assert_eq(jnum(&r, "watch.events"), 0);
    run_free(&r);
    close(fd);
}

Test(load, setup_failures_exit_non_zero, .timeout = T_TIMEOUT)
{
    struct run r;

    load_run(&r, "https://127.0.0.1:1", ARGS("--watchers", "1", "--duration", "1s"));
    cr_assert_eq(r.status, 1, "https is refused at setup");
    run_free(&r);
    load_run(&r, "http://127.0.0.1:1", ARGS("--watchers", "x"));
    cr_assert_eq(r.status, 2, "a bad flag value");
    run_free(&r);
    load_run(&r, "http://127.0.0.1:1", ARGS("--resource", "a/b/c/d", "--duration", "1s"));
    cr_assert_eq(r.status, 1, "a bad resource");
    run_free(&r);
    load_run(&r, "http://127.0.0.1:1", ARGS("--watchers", "0", "--duration", "1s"));
    cr_assert_eq(r.status, 1, "nothing to do");
    run_free(&r);
}

Test(load, through_kwp_proxy_one_upstream_watch, .timeout = T_TIMEOUT)
{
    struct srv sim, px;
    struct run r;
    struct http_resp resp;
    char url[300];
    uint64_t end = http_now_ms() + READY_MS;
    long code = 0;

    srv_start(&sim, "sim", ARGS("--stamp", "--churn", "200"));
    srv_start(&px, "proxy", ARGS("--upstream", sim.url, "--resources", "pods"));
    snprintf(url, sizeof(url), "%s/readyz", px.url);
    while (code != 200 && http_now_ms() < end) {
        if (http_get(url, 2000, &resp) == 0) {
            code = resp.code;
        }
        http_resp_free(&resp);
        if (code != 200) {
            nap(POLL_MS);
        }
    }
    cr_assert_eq(code, 200, "proxy not ready");
    load_run(&r, px.url, ARGS("--watchers", "40", "--duration", "3s", "--quiet"));
    expect_healthy_watch(&r, 40);
    cr_assert_leq(sim_stat(&sim, "resources.pods.watches"), 2,
                  "the proxy fans one upstream watch out to 40 watchers");
    run_free(&r);
    srv_stop(&px, "kwp proxy");
    srv_stop(&sim, "kwp sim");
}

/* ---- --source-ips ------------------------------------------------------------------------ */

/* True when the run's stderr holds <needle>. */
static bool stderr_has(const struct run *r, const char *needle)
{
    char path[160], buf[8192];
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "%s/stderr.log", r->dir);
    f = fopen(path, "r");
    if (!f) {
        return false;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

/* A listener on 127.0.0.1:0 that never answers: it only sees who connects. */
static int mute_listener(char *target, size_t cap)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

    cr_assert_neq(fd, -1);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(fd, 64), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    snprintf(target, cap, "http://127.0.0.1:%d", ntohs(a.sin_port));
    return fd;
}

Test(load, source_ips_range_spreads_connections_round_robin, .timeout = T_TIMEOUT)
{
    char target[64], peer[INET_ADDRSTRLEN];
    int lfd = mute_listener(target, sizeof(target)), conns[16], per[3] = {0, 0, 0};
    size_t n = 0;
    uint64_t end = http_now_ms() + 10000;
    struct run r;

    load_start(&r, target,
               ARGS("--watchers", "6", "--duration", "2s", "--source-ips", "127.0.0.2-127.0.0.4",
                    "--quiet"));
    while (n < 6 && http_now_ms() < end) {
        struct pollfd p = {lfd, POLLIN, 0};
        struct sockaddr_in a;
        socklen_t len = sizeof(a);
        int c;

        if (poll(&p, 1, 100) <= 0) {
            continue;
        }
        c = accept(lfd, (struct sockaddr *)&a, &len);
        if (c == -1) {
            continue;
        }
        conns[n++] = c;
        inet_ntop(AF_INET, &a.sin_addr, peer, sizeof(peer));
        cr_assert(strncmp(peer, "127.0.0.", 8) == 0 && peer[8] >= '2' && peer[8] <= '4' &&
                      peer[9] == '\0',
                  "a connection from %s, outside --source-ips 127.0.0.2-127.0.0.4", peer);
        per[peer[8] - '2']++;
    }
    load_wait(&r);
    cr_assert_eq(n, 6u, "6 watchers connected (%zu seen)", n);
    cr_assert(per[0] == 2 && per[1] == 2 && per[2] == 2,
              "round-robin over the 3 addresses: %d/%d/%d", per[0], per[1], per[2]);
    cr_assert_eq(r.status, 0);
    cr_assert_eq(jnum(&r, "watch.watchers_opened"), 0, "the listener never answers");
    for (size_t i = 0; i < n; i++) {
        close(conns[i]);
    }
    close(lfd);
    run_free(&r);
}

Test(load, source_ips_count_runs_healthy_against_the_sim, .timeout = T_TIMEOUT)
{
    struct srv sim;
    struct run r;

    srv_start(&sim, "sim", ARGS("--stamp", "--churn", "200"));
    load_run(&r, sim.url,
             ARGS("--watchers", "20", "--duration", "3s", "--source-ips", "3", "--quiet"));
    expect_healthy_watch(&r, 20);
    run_free(&r);
    srv_stop(&sim, "kwp sim");
}

Test(load, source_ips_errors_stop_at_setup, .timeout = T_TIMEOUT)
{
    static const struct {
        const char *value, *says;
    } bad[] = {
        {"192.0.2.1", "cannot use source address 192.0.2.1"}, /* TEST-NET: not ours */
        {"127.0.0.9-127.0.0.2", "bad range"},
        {"nowhere", "not an address"},
    };
    struct run r;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        load_run(&r, "http://127.0.0.1:1",
                 ARGS("--watchers", "2", "--duration", "1s", "--source-ips", bad[i].value));
        cr_assert_eq(r.status, 1, "--source-ips %s: exit %d, want 1", bad[i].value, r.status);
        cr_assert(stderr_has(&r, bad[i].says), "--source-ips %s: no \"%s\" on stderr", bad[i].value,
                  bad[i].says);
        run_free(&r);
    }
}
