/*
 * test_lab.c - `kwp lab`: the list, an unknown name, and each experiment with --quick --json,
 * checked against what must hold (SEMANTICS.md): the 410 exactly past the boundary with the
 * exact message, the 504 after the ~3 s wait, no upstream LIST through kwp for readers at rv 0,
 * the measured window boundary within 20 % of window / R; and one experiment against a
 * separately started `kwp sim` through --upstream.
 *
 * Each run is the built binary as a child (stdout and stderr to files in a mkdtemp
 * directory), waited for with a deadline and killed past it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "tests/support/http.h"
#include "tests/support/json.h"
#include "tests/support/nap.h"
#include "tests/support/proc.h"
#include "tests/support/srv.h"

#define T_TIMEOUT 120 /* one value per file (Criterion leaks under ASan otherwise) */
#define RUN_DEADLINE_MS 90000

struct lab_run {
    char dir[64];
    char json_path[128];
    char out_path[128];
    char err_path[128];
    int status;  /* exit code, 128 + signal, -1 when killed at the deadline */
    cJSON *json; /* the --json file, NULL when absent */
    char *out;   /* stdout */
    char *err;   /* stderr */
};

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = calloc(1, 1 << 20);
    size_t n = 0;

    cr_assert_not_null(buf);
    if (f) {
        n = fread(buf, 1, (1 << 20) - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
    return buf;
}

/* Runs `kwp lab <args...>` (with --json when <json>) to the end. */
static void lab_run(struct lab_run *r, bool json, const char *const *args)
{
    const char *argv[32];
    size_t n = 0;
    uint64_t end = http_now_ms() + RUN_DEADLINE_MS;
    pid_t pid, w = 0;
    int st = 0;

    memset(r, 0, sizeof(*r));
    snprintf(r->dir, sizeof(r->dir), "/tmp/kwp-it-lab-XXXXXX");
    cr_assert_not_null(mkdtemp(r->dir));
    snprintf(r->json_path, sizeof(r->json_path), "%s/lab.json", r->dir);
    snprintf(r->out_path, sizeof(r->out_path), "%s/stdout.log", r->dir);
    snprintf(r->err_path, sizeof(r->err_path), "%s/stderr.log", r->dir);
    argv[n++] = proc_kwp_bin();
    argv[n++] = "lab";
    for (size_t i = 0; args[i]; i++) {
        cr_assert_lt(n, 28u);
        argv[n++] = args[i];
    }
    if (json) {
        argv[n++] = "--json";
        argv[n++] = r->json_path;
    }
    argv[n] = NULL;
    pid = fork();
    cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
    if (pid == 0) {
        int fo = open(r->out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        int fe = open(r->err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (fo == -1 || fe == -1 || dup2(fo, 1) == -1 || dup2(fe, 2) == -1) {
            _exit(126);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    while ((w = waitpid(pid, &st, WNOHANG)) == 0 && http_now_ms() < end) {
        nap(50);
    }
    if (w == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        r->status = -1;
    } else {
        r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    r->out = slurp(r->out_path);
    r->err = slurp(r->err_path);
    if (json) {
        char *text = slurp(r->json_path);

        r->json = cJSON_Parse(text);
        free(text);
    }
    if (json && (r->status != 0 || !r->json)) {
        fprintf(stderr, "---- kwp lab stdout\n%s\n---- stderr\n%s\n", r->out, r->err);
    }
}

static void lab_run_free(struct lab_run *r)
{
    cJSON_Delete(r->json);
    free(r->out);
    free(r->err);
    unlink(r->json_path);
    unlink(r->out_path);
    unlink(r->err_path);
    rmdir(r->dir);
}

static double num(const cJSON *o, const char *path)
{
    const cJSON *v = json_at(o, path);

    cr_assert(cJSON_IsNumber(v), "no number at %s", path);
    return v->valuedouble;
}

/* Every run: exit 0, a conclusion, the experiment's name. */
static void expect_ran(const struct lab_run *r, const char *name)
{
    cr_assert_eq(r->status, 0, "kwp lab run %s exited %d", name, r->status);
    cr_assert_not_null(r->json, "no JSON written");
    cr_expect_str_eq(json_txt(r->json, "experiment"), name);
    cr_assert_not_null(json_str(r->json, "conclusion"), "no conclusion in the JSON");
    cr_expect_not_null(strstr(r->out, "conclusion: "), "no conclusion line on stdout");
}

Test(lab, list_names_every_experiment, .timeout = T_TIMEOUT)
{
    static const char *const names[] = {"too-old", "too-large", "rv-semantics", "window"};
    struct lab_run r;

    lab_run(&r, false, ARGS("list"));
    cr_assert_eq(r.status, 0);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char line[64];

        snprintf(line, sizeof(line), "%s ", names[i]);
        cr_expect_not_null(strstr(r.out, line), "%s missing from:\n%s", names[i], r.out);
    }
    lab_run_free(&r);
}

Test(lab, unknown_experiment_is_an_error, .timeout = T_TIMEOUT)
{
    struct lab_run r;

    lab_run(&r, false, ARGS("run", "no-such-experiment", "--quick"));
    cr_expect_neq(r.status, 0);
    cr_expect_not_null(strstr(r.err, "unknown experiment \"no-such-experiment\""), "stderr: %s",
                       r.err);
    cr_expect_not_null(strstr(r.err, "too-old"), "the experiments are not listed: %s", r.err);
    lab_run_free(&r);
    lab_run(&r, false, ARGS("run", "too-old", "--no-such-flag"));
    cr_expect_neq(r.status, 0);
    cr_expect_not_null(strstr(r.err, "unknown flag --no-such-flag"), "stderr: %s", r.err);
    lab_run_free(&r);
}

/* The 410 exactly past the boundary, with the exact message; the strategies' outcomes. */
static void expect_too_old(const struct lab_run *r)
{
    char msg[128];
    double b = num(r->json, "boundary.boundary");
    const cJSON *st = json_at(r->json, "strategies");

    snprintf(msg, sizeof(msg), "too old resource version: %.0f (%.0f)", b - 1, b);
    cr_expect(cJSON_IsTrue(json_at(r->json, "boundary.atBoundaryOk")), "a watch at B was refused");
    cr_expect(cJSON_IsTrue(json_at(r->json, "boundary.belowBoundary410")), "B-1 was not a 410");
    cr_expect(cJSON_IsTrue(json_at(r->json, "boundary.debugResources.boundaryMatches")),
              "/debug/resources names the boundary the 410 named");
    cr_expect_str_eq(json_txt(r->json, "boundary.belowBoundaryMessage"), msg);
    cr_assert_eq(cJSON_GetArraySize(st), 3);
    /* retrying the same RV never converges and meets only 410s */
    cr_expect(!cJSON_IsTrue(json_at(cJSON_GetArrayItem(st, 0), "converged")));
    cr_expect_eq(num(cJSON_GetArrayItem(st, 0), "errors410"),
                 num(cJSON_GetArrayItem(st, 0), "requests"));
    /* rv "" keeps the objects deleted during the gap */
    cr_expect_gt(num(cJSON_GetArrayItem(st, 1), "deletedKept"), 0);
    /* re-list then re-watch converges with two requests */
    cr_expect(cJSON_IsTrue(json_at(cJSON_GetArrayItem(st, 2), "converged")));
    cr_expect_eq(num(cJSON_GetArrayItem(st, 2), "requests"), 2);
}

Test(lab, too_old, .timeout = T_TIMEOUT)
{
    struct lab_run r;

    lab_run(&r, true, ARGS("run", "too-old", "--quick"));
    expect_ran(&r, "too-old");
    expect_too_old(&r);
    lab_run_free(&r);
}

Test(lab, too_large, .timeout = T_TIMEOUT)
{
    struct lab_run r;
    const cJSON *row;

    lab_run(&r, true, ARGS("run", "too-large", "--quick"));
    expect_ran(&r, "too-large");
    cJSON_ArrayForEach(row, json_at(r.json, "ahead"))
    {
        const char *req = json_txt(row, "request");
        double wait = num(row, "waitSeconds");

        if (strcmp(req, "WATCH rv=N") == 0) {
            cr_expect_eq(num(row, "code"), 200, "%s via %s", req, json_txt(row, "via"));
            continue;
        }
        cr_expect_eq(num(row, "code"), 504, "%s via %s", req, json_txt(row, "via"));
        cr_expect(wait >= 2.5 && wait <= 6.0, "%s via %s: the 504 after %.2f s", req,
                  json_txt(row, "via"), wait);
        cr_expect_not_null(strstr(json_txt(row, "answer"), "Too large resource version"));
    }
    cr_expect_eq(cJSON_GetArraySize(json_at(r.json, "ahead")), 9);
    cr_expect_gt(num(r.json, "pingpong.wentBack"), 0);
    cr_expect_eq(num(r.json, "pingpong.listAtRvAOnBCode"), 504);
    lab_run_free(&r);
}

Test(lab, rv_semantics, .timeout = T_TIMEOUT)
{
    struct lab_run r;
    const cJSON *row;
    int seen = 0;

    lab_run(&r, true, ARGS("run", "rv-semantics", "--quick"));
    expect_ran(&r, "rv-semantics");
    cJSON_ArrayForEach(row, json_at(r.json, "lists"))
    {
        const char *via = json_txt(row, "via"), *rv = json_txt(row, "rv");
        double n = num(row, "lists"), up = num(row, "upstreamRequests");

        if (strcmp(via, "server") == 0 || strcmp(rv, "") == 0) {
            cr_expect_eq(up, n, "%s rv=\"%s\": %g upstream LISTs for %g", via, rv, up, n);
        } else {
            /* the cache answers: no upstream LIST for the readers at rv 0 or N */
            cr_expect_eq(up, 0, "kwp rv=%s: %g upstream LISTs for %g readers", rv, up, n);
            seen++;
        }
    }
    cr_expect_eq(seen, 2);
    /* and the proxy's own: the one initial LIST */
    cr_expect_eq(num(r.json, "proxyUpstreamLists"), 1);
    lab_run_free(&r);
}

Test(lab, window, .timeout = T_TIMEOUT)
{
    struct lab_run r;
    const cJSON *row;
    int n = 0;

    lab_run(&r, true, ARGS("run", "window", "--quick"));
    expect_ran(&r, "window");
    cJSON_ArrayForEach(row, json_at(cJSON_GetArrayItem(json_at(r.json, "windows"), 0), "rates"))
    {
        double comp = num(row, "computedBoundarySeconds");
        double meas = num(row, "measuredBoundarySeconds");

        cr_expect(meas >= 0.8 * comp && meas <= 1.2 * comp,
                  "R=%g: measured boundary %.2f s, computed %.2f s", num(row, "rate"), meas, comp);
        n++;
    }
    cr_expect_geq(n, 3);
    lab_run_free(&r);
}

/* --upstream against a separately started simulator: rv-semantics needs only the API; the
 * namespace it made is gone afterwards. */
Test(lab, upstream_sim, .timeout = T_TIMEOUT)
{
    struct lab_run r;
    struct http_resp resp;
    const cJSON *ns;
    struct srv s;

    srv_spawn(&s, "sim", ARGS("--objects", "0", "--churn", "0"), NULL);
    lab_run(&r, true, ARGS("run", "rv-semantics", "--quick", "--upstream", s.url));
    expect_ran(&r, "rv-semantics");
    cr_expect_str_eq(json_txt(r.json, "upstream"), s.url);
    cJSON_ArrayForEach(ns, json_at(r.json, "lists"))
    {
        if (strcmp(json_txt(ns, "via"), "kwp") == 0 && strcmp(json_txt(ns, "rv"), "0") == 0) {
            cr_expect_eq(num(ns, "upstreamRequests"), 0, "kwp rv=0 went upstream");
        }
    }
    {
        char url[512];

        snprintf(url, sizeof(url), "%s/api/v1/namespaces", s.url);
        cr_assert_eq(http_get(url, 5000, &resp), 0);
        cr_expect_null(strstr(resp.body, "\"kwp-lab-"), "the lab's namespace is left: %s",
                       resp.body);
        http_resp_free(&resp);
    }
    lab_run_free(&r);
    srv_stop(&s, "kwp sim");
}
