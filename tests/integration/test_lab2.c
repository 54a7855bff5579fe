/*
 * test_lab2.c - `kwp lab` experiments 5-8 (bookmarks, timeouts, relist-storm, compaction), each
 * run with --quick --json and its figures checked against what must hold: one upstream LIST
 * through kwp for N informers against N directly, the exact 410 bodies of an Exact and a
 * continue LIST at a compacted RV (the latter with a fresh "rv":-1 token), bookmarks moving a
 * quiet watcher's RV forward (and the 410 every re-watch gets after a restart), timeouts'
 * counts against the run's compressed hours.
 */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "tests/support/nap.h"
#include "tests/support/proc.h"

#define T_TIMEOUT 150
#define RUN_WAIT_STEPS 2400 /* x 50 ms: 120 s */

/* Runs `kwp lab run <name> --quick --json F` and returns the parsed JSON (asserts exit 0). */
static cJSON *run_quick(const char *name)
{
    char dir[] = "/tmp/kwp-it-lab2-XXXXXX", json[96], out[96];
    const char *argv[] = {proc_kwp_bin(), "lab", "run", name, "--quick", "--json", json, NULL};
    int st = 0, steps = 0;
    pid_t pid;
    FILE *f;
    char *text;
    long len;
    cJSON *j;

    cr_assert_not_null(mkdtemp(dir));
    snprintf(json, sizeof(json), "%s/r.json", dir);
    snprintf(out, sizeof(out), "%s/out.log", dir);
    pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (fd == -1 || dup2(fd, 1) == -1 || dup2(fd, 2) == -1) {
            _exit(126);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (++steps > RUN_WAIT_STEPS) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            cr_assert_fail("kwp lab run %s did not end in 120 s (output in %s)", name, out);
        }
        nap(50);
    }
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "kwp lab run %s failed (output in %s)", name,
              out);
    f = fopen(json, "r");
    cr_assert_not_null(f, "no --json file");
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    rewind(f);
    text = calloc(1, (size_t)len + 1);
    cr_assert_not_null(text);
    cr_assert_eq(fread(text, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    j = cJSON_Parse(text);
    free(text);
    cr_assert_not_null(j, "the --json file does not parse");
    unlink(json);
    unlink(out);
    rmdir(dir);
    return j;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

    cr_assert(cJSON_IsNumber(v), "%s is not a number", k);
    return v->valuedouble;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

    cr_assert(cJSON_IsString(v), "%s is not a string", k);
    return v->valuestring;
}

Test(lab2, relist_storm_one_upstream_list_through_kwp, .timeout = T_TIMEOUT)
{
    cJSON *j = run_quick("relist-storm"), *r;
    int direct = 0, kwp = 0;

    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(j, "runs"))
    {
        double n = num(r, "informers");

        cr_assert_eq(num(r, "converged"), n, "every informer converges");
        if (strcmp(str(r, "path"), "kwp") == 0) {
            cr_assert_eq(num(r, "upstreamLists"), 1, "through kwp: one upstream LIST for %g", n);
            cr_assert_eq(num(r, "clientLists"), 0, "kwp's clients keep their watches");
            kwp++;
        } else {
            cr_assert_eq(num(r, "upstreamLists"), n, "direct: one LIST per informer");
            cr_assert_eq(num(r, "gone410"), n, "direct: every informer's re-watch gets 410");
            direct++;
        }
    }
    cr_assert(direct >= 2 && kwp >= 2);
    cJSON_Delete(j);
}

Test(lab2, compaction_exact_and_continue_410, .timeout = T_TIMEOUT)
{
    cJSON *j = run_quick("compaction");
    const char *cont = str(j, "newContinue");

    cr_assert_str_eq(str(j, "exactMessage"),
                     "The resourceVersion for the provided list is too old.");
    cr_assert(strncmp(str(j, "continueMessage"),
                      "The provided continue parameter is too old to display a consistent list "
                      "result. You can start a new list without the continue parameter, or use "
                      "the continue token in this response",
                      160) == 0,
              "continue 410 message: %s", str(j, "continueMessage"));
    cr_assert(cont[0] && strcmp(cont, str(j, "oldContinue")) != 0, "a fresh continue token");
    /* base64url of {"v":"meta.k8s.io/v1","rv":-1,...}: the prefix has a fixed length, so ,"rv":-1,
     * encodes as LCJydiI6LTEs */
    cr_assert_not_null(strstr(cont, "LCJydiI6LTEs"), "the new token has rv -1: %s", cont);
    cr_assert_eq(num(j, "followCode"), 200);
    cr_assert_eq(num(j, "followItems"), 20, "the remainder after the first page of 10 of 30");
    cJSON *r;
    int n410 = 0;

    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(j, "requests"))
    {
        if (strcmp(str(r, "path"), "direct") == 0 && num(r, "codeBefore") == 200) {
            cr_assert_eq(num(r, "codeAfter"), 410, "%s", str(r, "request"));
            n410++;
        }
    }
    cr_assert_eq(n410, 2);
    cJSON_Delete(j);
}

Test(lab2, bookmarks_drop_and_restart, .timeout = T_TIMEOUT)
{
    cJSON *j = run_quick("bookmarks"), *m;
    double behind[2][2] = {{0}};
    int rows = 0;

    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(j, "modes"))
    {
        int restart = strcmp(str(m, "disconnect"), "restart") == 0;
        int kwp = strcmp(str(m, "path"), "kwp") == 0;
        int bm = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "allowWatchBookmarks"));

        rows++;
        cr_assert_eq(num(m, "trials"), 3);
        cr_assert_eq(num(m, "relists"), num(m, "gone410"));
        if (!bm) {
            cr_assert_eq(num(m, "bookmarks"), 0, "no bookmark unless asked for");
        } else if (!restart) {
            cr_assert_gt(num(m, "bookmarks"), 0, "bookmarks arrive on a quiet watch");
        }
        if (!restart) {
            /* the history keeps a quiet resource's last event as its boundary: no 410 */
            cr_assert_eq(num(m, "gone410"), 0, "connection drop, %s", str(m, "path"));
            behind[kwp][bm] = num(m, "revisionsBehind");
        } else if (!kwp && !bm) {
            /* the restarted history starts at the revision, far past the quiet RV */
            cr_assert_eq(num(m, "gone410"), 3, "apiserver restart, direct, no bookmarks");
        }
    }
    cr_assert_eq(rows, 8);
    cr_assert_lt(behind[0][1], behind[0][0], "bookmarks: a fresher RV directly");
    cr_assert_lt(behind[1][1], behind[1][0], "bookmarks: a fresher RV through kwp");
    cJSON_Delete(j);
}

Test(lab2, timeouts_counts_match_the_compressed_hours, .timeout = T_TIMEOUT)
{
    cJSON *j = run_quick("timeouts"), *m;
    double run_s = num(j, "runSeconds"), hours = num(j, "compressedHours");
    int rows = 0;

    cr_assert_eq(num(j, "compression"), 300);
    cr_assert(hours >= run_s * 300 / 3600 && hours < run_s * 300 / 3600 * 1.2,
              "%g compressed hours for %g s", hours, run_s);
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(j, "modes"))
    {
        double t = num(m, "timeoutSecondsCompressed"), away = num(m, "awaySecondsCompressed");
        double lists = num(m, "lists"), watches = num(m, "watches"), gone = num(m, "gone410");

        rows++;
        cr_assert_eq(num(m, "timeoutSecondsReal"), t * 300);
        /* a LIST at the start and one per 410 (but the last 410 may come as the run ends) */
        cr_assert(lists <= 1 + gone + num(m, "errors") && lists >= gone + num(m, "errors"),
                  "%g LISTs for %g 410s", lists, gone);
        cr_assert(fabs(num(m, "requestsPerHour") - (lists + watches) / hours) < 0.01);
        if (t == 0) {
            cr_assert_eq(watches, 1 + gone, "no timeout: one stream the whole run");
            cr_assert_eq(gone, 0);
        } else if (away == 0) {
            /* one WATCH per T, re-watched at once from the last RV: inside the history */
            cr_assert(watches >= run_s / t * 0.5 && watches <= run_s / t * 1.5 + 1,
                      "%g watches in %g s with T=%g", watches, run_s, t);
            cr_assert_eq(gone, 0, "an immediate re-watch is not too old");
        } else {
            /* away longer than the history holds (200 revisions at 100 writes/s: 2 s) */
            cr_assert_geq(gone, 1, "away %g s: the re-watch is too old", away);
        }
    }
    cr_assert_eq(rows, 6);
    cJSON_Delete(j);
}
