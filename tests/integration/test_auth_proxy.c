/*
 * test_auth_proxy.c - kwp proxy --auth delegated in front of a real upstream (kwp sim), real
 * binaries on port 0: what needs no credentials, the exact 401s, an upstream that cannot
 * review (fail closed: never an allow), --auth none by default on loopback, and
 * --metrics-listen. (Allowed/denied requests, review counts and impersonation against an
 * authenticating sim are in test_sim_auth.c; tests/unit/proxy/test_gate.c drives the gate
 * with a scripted reviewer.) Named _proxy: the unit test of auth.c already holds the
 * executable name test_auth.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tests/support/http.h"
#include "tests/support/nap.h"
#include "tests/support/proc.h"
#include "tests/support/srv.h"

#define UNAUTHORIZED                                                                               \
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","           \
    "\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}\n"

static void get_with(const char *base, const char *path, const char *token, struct http_resp *r)
{
    char url[512], line[256];
    const char *hdrs[2] = {NULL, NULL};

    snprintf(url, sizeof(url), "%s%s", base, path);
    if (token) {
        snprintf(line, sizeof(line), "Authorization: Bearer %s", token);
        hdrs[0] = line;
    }
    cr_assert_eq(http_do("GET", url, NULL, NULL, hdrs, 20000, r), 0, "GET %s", url);
}

static void expect(const struct http_resp *r, long code, const char *body)
{
    cr_assert_eq(r->code, code, "code %ld, want %ld: %s", r->code, code, r->body);
    if (body) {
        cr_assert_str_eq(r->body, body);
    }
}

/* The metrics URL the proxy logged (metrics_url=...), within 5 s. */
static void metrics_url(const struct proc *p, char *out, size_t cap)
{
    for (int i = 0; i < 50; i++) {
        FILE *f = fopen(proc_log_path(p), "r");
        char line[2048];

        while (f && fgets(line, sizeof(line), f)) {
            char *m = strstr(line, "metrics_url=");
            if (m) {
                size_t n = strcspn(m + 12, " \n");
                snprintf(out, cap, "%.*s", (int)n, m + 12);
                fclose(f);
                return;
            }
        }
        if (f) {
            fclose(f);
        }
        nap(100);
    }
    cr_assert_fail("no metrics_url in the proxy's log");
}

/* Writes <text> to <dir>/<name>; the path into <out>. */
static void write_file(const char *dir, const char *name, const char *text, char *out, size_t cap)
{
    FILE *f;

    snprintf(out, cap, "%s/%s", dir, name);
    f = fopen(out, "w");
    cr_assert_not_null(f, "%s: %s", out, strerror(errno));
    fputs(text, f);
    fclose(f);
}

Test(auth, delegated_fails_closed_when_upstream_cannot_review, .timeout = 120)
{
    struct srv sim, px;
    struct http_resp r;
    char murl[256], dir[] = "/tmp/kwp-authproxy-XXXXXX", tokens[64], rules[64];

    /* the upstream serves the review APIs but refuses them to the proxy's identity, which may
     * only read: every review fails (a 403), as one from an unreachable reviewer would */
    cr_assert_not_null(mkdtemp(dir));
    write_file(dir, "tokens.csv", "proxy-secret,kwp-proxy,1\n", tokens, sizeof(tokens));
    write_file(dir, "rules",
               "allow users=kwp-proxy verbs=get nonResourceURLs=/api*,/version\n"
               "allow users=kwp-proxy verbs=get,list,watch apiGroups=\"\" resources=pods\n",
               rules, sizeof(rules));
    srv_spawn(&sim, "sim",
              ARGS("--objects", "3", "--churn", "0", "--token-auth-file", tokens,
                   "--authorization-rules", rules),
              NULL);
    srv_spawn(&px, "proxy",
              ARGS("--upstream", sim.url, "--token", "proxy-secret", "--resources", "pods",
                   "--auth", "delegated", "--metrics-listen", "127.0.0.1:0"),
              NULL);
    srv_wait_ready(&px, 20000);
    /* no credentials, from the cache and forwarded */
    get_with(px.url, "/api/v1/pods", NULL, &r);
    expect(&r, 401, UNAUTHORIZED);
    http_resp_free(&r);
    get_with(px.url, "/version", NULL, &r);
    expect(&r, 401, UNAUTHORIZED);
    http_resp_free(&r);
    get_with(px.url, "/api/v1/pods?watch=1", NULL, &r);
    expect(&r, 401, UNAUTHORIZED);
    http_resp_free(&r);
    /* a token the upstream will not review for kwp: 401, never allow */
    get_with(px.url, "/api/v1/pods", "some-token", &r);
    expect(&r, 401, UNAUTHORIZED);
    http_resp_free(&r);
    /* /metrics needs an identity on the main port; the health endpoints need none */
    get_with(px.url, "/metrics", NULL, &r);
    expect(&r, 401, UNAUTHORIZED);
    http_resp_free(&r);
    get_with(px.url, "/healthz", NULL, &r);
    expect(&r, 200, "ok");
    http_resp_free(&r);
    get_with(px.url, "/livez", NULL, &r);
    expect(&r, 200, "ok");
    http_resp_free(&r);
    metrics_url(px.p, murl, sizeof(murl));
    get_with(murl, "/metrics", NULL, &r);
    expect(&r, 200, NULL);
    cr_assert(strstr(r.body, "kwp_ready") != NULL, "%s", r.body);
    /* four requests without credentials, one with a token nobody could review (one
     * TokenReview sent, failed: not cached), the /metrics request */
    cr_assert(strstr(r.body, "kwp_authentications_total{result=\"failure\"} 5\n") != NULL, "%s",
              r.body);
    cr_assert(strstr(r.body, "kwp_authorizations_total{decision=\"allowed\"} 0\n") != NULL);
    cr_assert(strstr(r.body, "kwp_auth_review_failures_total{review=\"tokenreview\"} 1\n") != NULL,
              "%s", r.body);
    cr_assert(strstr(r.body,
                     "kwp_auth_review_duration_seconds_count{review=\"tokenreview\"} 1\n") != NULL);
    cr_assert(strstr(r.body, "kwp_auth_review_duration_seconds_bucket{review=\"tokenreview\","
                             "le=\"+Inf\"} 1\n") != NULL);
    cr_assert(strstr(r.body,
                     "kwp_auth_review_duration_seconds_count{review=\"subjectaccessreview\"} "
                     "0\n") != NULL);
    cr_assert(strstr(r.body,
                     "kwp_auth_cache_lookups_total{cache=\"authentication\",result=\"miss\"} "
                     "1\n") != NULL,
              "%s", r.body);
    http_resp_free(&r);
    get_with(murl, "/api/v1/pods", NULL, &r);
    expect(&r, 404, NULL);
    http_resp_free(&r);
    srv_stop(&px, "kwp proxy");
    srv_stop(&sim, "kwp sim");
    unlink(tokens);
    unlink(rules);
    rmdir(dir);
}

Test(auth, none_by_default_on_loopback, .timeout = 120)
{
    struct srv sim, px;
    struct http_resp r;

    srv_spawn(&sim, "sim", ARGS("--objects", "3", "--churn", "0"), NULL);
    srv_spawn(&px, "proxy", ARGS("--upstream", sim.url, "--resources", "pods"), NULL);
    srv_wait_ready(&px, 20000);
    get_with(px.url, "/api/v1/pods", NULL, &r);
    expect(&r, 200, NULL);
    http_resp_free(&r);
    cr_assert(proc_log_has(px.p, "auth=none"));
    srv_stop(&px, "kwp proxy");
    srv_stop(&sim, "kwp sim");
}

Test(auth, bad_flags_are_refused, .timeout = 60)
{
    char url[256];
    const char *const bad[][3] = {{"--auth", "maybe", NULL},
                                  {"--metrics-listen", "0.0.0.0:0", NULL}};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct proc *p = proc_spawn_kwp("proxy", bad[i], ARGS("--upstream", "http://127.0.0.1:1"),
                                        url, sizeof(url));
        cr_assert_null(p, "%s %s was accepted", bad[i][0], bad[i][1]);
    }
}
