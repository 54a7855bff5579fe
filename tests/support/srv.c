/*
 * srv.c - a kwp server under test (see srv.h): argument assembly around proc_spawn, the
 * asserted stop, and the bounded /readyz poll.
 */
#include "tests/support/srv.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "tests/support/http.h"
#include "tests/support/nap.h"

#define SRV_ARGV_CAP 64
#define SRV_POLL_MS 20L

void srv_spawn(struct srv *s, const char *cmd, const char *const *a, const char *const *b)
{
    const char *const *lists[2] = {a, b};
    const char *argv[SRV_ARGV_CAP];
    size_t n = 0;

    argv[n++] = proc_kwp_bin();
    argv[n++] = cmd;
    argv[n++] = "--listen";
    argv[n++] = "127.0.0.1:0";
    for (size_t l = 0; l < 2; l++) {
        for (size_t i = 0; lists[l] && lists[l][i]; i++) {
            cr_assert_lt(n, (size_t)SRV_ARGV_CAP - 1, "too many arguments for kwp %s", cmd);
            argv[n++] = lists[l][i];
        }
    }
    argv[n] = NULL;
    memset(s, 0, sizeof(*s));
    s->p = proc_spawn(argv, s->url, sizeof(s->url));
    cr_assert_not_null(s->p, "could not start kwp %s", cmd);
}

void srv_stop(struct srv *s, const char *what)
{
    int st;

    if (s->p == NULL) {
        return;
    }
    st = proc_stop(s->p);
    s->p = NULL;
    cr_assert_eq(st, 0, "%s exited with status %d (0 expected after SIGTERM)", what, st);
}

/* True when GET <s>/readyz answers 200 within 3 s. */
static bool is_ready(const struct srv *s)
{
    struct http_resp r;
    char url[300];
    bool ok;

    snprintf(url, sizeof(url), "%s/readyz", s->url);
    ok = http_do("GET", url, NULL, NULL, NULL, 3000, &r) == 0 && r.code == 200;
    http_resp_free(&r);
    return ok;
}

void srv_wait_ready(const struct srv *s, long ms)
{
    uint64_t end = http_now_ms() + (uint64_t)ms;
    bool ok;

    for (;;) {
        ok = is_ready(s);
        if (ok || http_now_ms() >= end) {
            break;
        }
        nap(SRV_POLL_MS);
    }
    if (!ok) {
        proc_dump_log(s->p, 4000);
    }
    cr_assert(ok, "%s not ready within %ld ms", s->url, ms);
}
