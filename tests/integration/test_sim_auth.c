/*
 * test_sim_auth.c - `kwp sim` as an authenticating, authorizing kube-apiserver (AUTH.md 3-5):
 * static token users (--token-auth-file), client certificates over https (--client-ca-file),
 * the rule file (--authorization-rules), impersonation, the TokenReview and
 * SubjectAccessReview APIs and their counts in /_sim/stats, and kubectl against all of it.
 *
 * Each Test writes its token file, rule file and (for TLS) a CA and certificates made with the
 * openssl binary into its own mkdtemp directory, starts `kwp sim --listen 127.0.0.1:0`
 * (readiness = the "listening on" line) and stops it asserting exit status 0. The 401 and 403
 * bodies are compared byte for byte with AUTH.md's examples. Child commands (openssl, kubectl,
 * a sim that must refuse its flags) run to completion under a deadline, killed by PID past it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>
#include <criterion/criterion.h>
#include <curl/curl.h>

#include "tests/support/api.h"
#include "tests/support/http.h"
#include "tests/support/json.h"
#include "tests/support/nap.h"
#include "tests/support/proc.h"
#include "tests/support/srv.h"

#define T_TIMEOUT 120 /* one value per file (Criterion leaks under ASan otherwise) */
#define CMD_DEADLINE_MS 60000
#define ADMIN "Authorization: Bearer admin-secret" /* --token: kubernetes-admin */

/* AUTH.md 3's 401 and 4's 403 examples (user alice, namespace b). */
#define BODY_401                                                                                   \
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","           \
    "\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}"
#define FORBID_HEAD                                                                                \
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
#define FORBID_LIST_PODS_B                                                                         \
    FORBID_HEAD "\"message\":\"pods is forbidden: User \\\"alice\\\" cannot list resource "        \
                "\\\"pods\\\" in API group \\\"\\\" in the namespace \\\"b\\\"\",\"reason\":"      \
                "\"Forbidden\",\"details\":{\"kind\":\"pods\"},\"code\":403}"
#define FORBID_WATCH_PODS                                                                          \
    FORBID_HEAD "\"message\":\"pods is forbidden: User \\\"alice\\\" cannot watch resource "       \
                "\\\"pods\\\" in API group \\\"\\\" at the cluster scope\",\"reason\":"            \
                "\"Forbidden\",\"details\":{\"kind\":\"pods\"},\"code\":403}"
#define FORBID_GET_POD_X                                                                           \
    FORBID_HEAD "\"message\":\"pods \\\"x\\\" is forbidden: User \\\"alice\\\" cannot get "        \
                "resource \\\"pods\\\" in API group \\\"\\\" in the namespace \\\"b\\\"\","        \
                "\"reason\":\"Forbidden\",\"details\":{\"name\":\"x\",\"kind\":\"pods\"},"         \
                "\"code\":403}"
#define FORBID_LIST_DEPLOY_B                                                                       \
    FORBID_HEAD "\"message\":\"deployments.apps is forbidden: User \\\"alice\\\" cannot list "     \
                "resource \\\"deployments\\\" in API group \\\"apps\\\" in the namespace "         \
                "\\\"b\\\"\",\"reason\":\"Forbidden\",\"details\":{\"group\":\"apps\",\"kind\":"   \
                "\"deployments\"},\"code\":403}"
#define FORBID_METRICS                                                                             \
    FORBID_HEAD "\"message\":\"forbidden: User \\\"alice\\\" cannot get path \\\"/metrics\\\"\","  \
                "\"reason\":\"Forbidden\",\"details\":{},\"code\":403}"
#define FORBID_IMPERSONATE_CAROL                                                                   \
    FORBID_HEAD "\"message\":\"users \\\"carol\\\" is forbidden: User \\\"alice\\\" cannot "       \
                "impersonate resource \\\"users\\\" in API group \\\"\\\" at the cluster "         \
                "scope\",\"reason\":\"Forbidden\",\"details\":{\"name\":\"carol\",\"kind\":"       \
                "\"users\"},\"code\":403}"

static const char tokens_csv[] = "tok-alice,alice,42,\"devs\"\n"
                                 "tok-bob,bob,43\n"
                                 "tok-carol,carol,44,\"ops\"\n"
                                 "tok-proxy,kwp-proxy,99\n";

static const char rules_txt[] =
    "# discovery for every authenticated user (system:discovery)\n"
    "allow name=discovery groups=system:authenticated verbs=get nonResourceURLs=/api*,/version\n"
    "allow name=devs-read groups=devs verbs=get,list,watch apiGroups=\"\" resources=pods "
    "namespaces=default\n"
    "allow name=certs-read groups=certs verbs=get,list,watch apiGroups=\"\" resources=pods "
    "namespaces=default\n"
    "allow name=carol-as-bob users=carol verbs=impersonate apiGroups=\"\" resources=users "
    "resourceNames=bob\n"
    "allow name=auth-delegator users=carol verbs=create "
    "apiGroups=authentication.k8s.io,authorization.k8s.io "
    "resources=tokenreviews,subjectaccessreviews\n"
    "# a kwp proxy in front (AUTH.md 6): what it caches, reviews, impersonation\n"
    "allow name=proxy-reads users=kwp-proxy verbs=get,list,watch apiGroups=\"\" resources=pods\n"
    "allow name=proxy-delegates users=kwp-proxy verbs=create "
    "apiGroups=authentication.k8s.io,authorization.k8s.io "
    "resources=tokenreviews,subjectaccessreviews\n"
    "allow name=proxy-impersonates users=kwp-proxy verbs=impersonate apiGroups=* resources=*\n";

/* ---- files and child commands -------------------------------------------------------- */

struct tdir {
    char path[64];
};

static void tdir_make(struct tdir *d)
{
    snprintf(d->path, sizeof(d->path), "/tmp/kwp-simauth-XXXXXX");
    cr_assert_not_null(mkdtemp(d->path), "mkdtemp: %s", strerror(errno));
}

/* <dir>/<name> into <out>. */
static const char *tpath(const struct tdir *d, const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", d->path, name);
    return out;
}

static void write_file(const struct tdir *d, const char *name, const char *text)
{
    char p[128];
    FILE *f = fopen(tpath(d, name, p, sizeof(p)), "w");

    cr_assert_not_null(f, "%s: %s", p, strerror(errno));
    cr_assert_eq(fputs(text, f) >= 0, 1);
    cr_assert_eq(fclose(f), 0);
}

/* Removes the directory and what the tests wrote into it. */
static void tdir_remove(struct tdir *d)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->path);
    cr_assert_eq(system(cmd), 0);
}

/*
 * Runs argv to completion (stdin /dev/null, stdout and stderr into <out_path>, env <env> added
 * when not NULL) within CMD_DEADLINE_MS, killing it by PID past that. Returns the exit code,
 * 128 + signal, or -1 when it had to be killed.
 */
static int run(const char *const *argv, const char *out_path, const char *env)
{
    uint64_t end = http_now_ms() + CMD_DEADLINE_MS;
    pid_t pid, w;
    int st = 0;

    pid = fork();
    cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int in = open("/dev/null", O_RDONLY);

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (fd < 0 || in < 0) {
            _exit(126);
        }
        dup2(in, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        if (env != NULL) {
            putenv((char *)env);
        }
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    while ((w = waitpid(pid, &st, WNOHANG)) == 0 && http_now_ms() < end) {
        nap(20);
    }
    if (w == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return -1;
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The text of file <path> (caller frees). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = calloc(1, 1 << 20);
    size_t n;

    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* ---- the simulator ------------------------------------------------------------------- */

/* Starts kwp sim with the test's token file and rules (and --token admin-secret) plus <extra>. */
static void sim_auth_start(struct srv *s, const struct tdir *d, const char *const *extra)
{
    static char tok[128], rules[128];

    write_file(d, "tokens.csv", tokens_csv);
    write_file(d, "rules", rules_txt);
    tpath(d, "tokens.csv", tok, sizeof(tok));
    tpath(d, "rules", rules, sizeof(rules));
    srv_spawn(s, "sim",
              ARGS("--objects", "3", "--churn", "0", "--token", "admin-secret", "--token-auth-file",
                   tok, "--authorization-rules", rules),
              extra);
}

/* A request as the holder of bearer token <tok> (NULL: none), with <more> headers. */
static void as(const struct srv *s, const char *tok, const char *method, const char *path,
               const char *body, const char *more, struct http_resp *r)
{
    char auth[128];
    const char *hdrs[3] = {NULL, NULL, NULL};
    size_t n = 0;

    if (tok != NULL) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", tok);
        hdrs[n++] = auth;
    }
    if (more != NULL) {
        hdrs[n++] = more;
    }
    api_req(s->url, method, path, body != NULL ? "application/json" : NULL, body, hdrs, r);
}

/* Body without the one trailing newline Go's encoder writes. */
static void expect(const struct http_resp *r, long code, const char *body)
{
    size_t n = r->body_len;

    cr_assert_eq(r->code, code, "HTTP %ld, expected %ld: %s", r->code, code, r->body);
    cr_assert(n > 0 && r->body[n - 1] == '\n', "no trailing newline: %s", r->body);
    n--;
    cr_assert(n == strlen(body) && memcmp(r->body, body, n) == 0,
              "body mismatch\nexpected: %s\n     got: %.*s", body, (int)n, r->body);
}

/* GET <path> as <tok> with <more> answers <code> and exactly <body>. */
static void expect_get(const struct srv *s, const char *tok, const char *path, const char *more,
                       long code, const char *body)
{
    struct http_resp r;

    as(s, tok, "GET", path, NULL, more, &r);
    expect(&r, code, body);
    http_resp_free(&r);
}

static void expect_code(const struct srv *s, const char *tok, const char *path, long code)
{
    struct http_resp r;

    as(s, tok, "GET", path, NULL, NULL, &r);
    cr_assert_eq(r.code, code, "GET %s as %s: HTTP %ld, expected %ld: %.300s", path,
                 tok ? tok : "(nobody)", r.code, code, r.body);
    http_resp_free(&r);
}

static uint64_t stat_as_admin(const struct srv *s, const char *key)
{
    struct http_resp r;
    cJSON *j;
    uint64_t n;

    api_req(s->url, "GET", "/_sim/stats", NULL, NULL, ARGS(ADMIN), &r);
    cr_assert_eq(r.code, 200, "/_sim/stats: HTTP %ld %s", r.code, r.body);
    j = json_body(&r);
    n = json_num(j, key);
    cJSON_Delete(j);
    http_resp_free(&r);
    return n;
}

/* ---- authentication ------------------------------------------------------------------ */

Test(sim_auth, unauthenticated_requests_get_auth_md_401, .timeout = T_TIMEOUT)
{
    struct tdir d;
    struct srv s;

    tdir_make(&d);
    sim_auth_start(&s, &d, NULL);
    expect_get(&s, NULL, "/api/v1/namespaces/default/pods", NULL, 401, BODY_401);
    expect_get(&s, "wrong", "/api/v1/namespaces/default/pods", NULL, 401, BODY_401);
    expect_get(&s, NULL, "/api/v1/namespaces/default/pods", "Authorization: Basic YTpi", 401,
               BODY_401);
    /* the review APIs and the simulator's own endpoints too; the health checks stay open */
    expect_get(&s, NULL, "/_sim/stats", NULL, 401, BODY_401);
    expect_code(&s, NULL, "/healthz", 200);
    expect_code(&s, NULL, "/readyz", 200);
    /* --token is the privileged admin, a token-file user is checked against the rules */
    expect_code(&s, "admin-secret", "/api/v1/namespaces/b/secrets", 200);
    expect_code(&s, "tok-alice", "/api/v1/namespaces/default/pods", 200);
    srv_stop(&s, "kwp sim");
    tdir_remove(&d);
}

Test(sim_auth, anonymous_auth_makes_system_anonymous, .timeout = T_TIMEOUT)
{
    struct tdir d;
    struct srv s;

    tdir_make(&d);
    sim_auth_start(&s, &d, ARGS("--anonymous-auth"));
    expect_get(&s, NULL, "/api/v1/namespaces/default/pods", NULL, 403,
               FORBID_HEAD "\"message\":\"pods is forbidden: User \\\"system:anonymous\\\" cannot "
                           "list resource \\\"pods\\\" in API group \\\"\\\" in the namespace "
                           "\\\"default\\\"\",\"reason\":\"Forbidden\",\"details\":{\"kind\":"
                           "\"pods\"},\"code\":403}");
    /* system:unauthenticated is not system:authenticated: no discovery either */
    expect_code(&s, NULL, "/version", 403);
    /* a token that fails is a 401, never anonymous */
    expect_get(&s, "wrong", "/version", NULL, 401, BODY_401);
    srv_stop(&s, "kwp sim");
    tdir_remove(&d);
}

Test(sim_auth, without_rules_every_authenticated_user_may_do_anything, .timeout = T_TIMEOUT)
{
    struct tdir d;
    struct srv s;
    char tok[128];

    tdir_make(&d);
    write_file(&d, "tokens.csv", tokens_csv);
    srv_spawn(
        &s, "sim",
        ARGS("--objects", "3", "--token-auth-file", tpath(&d, "tokens.csv", tok, sizeof(tok))),
        NULL);
    expect_code(&s, "tok-bob", "/api/v1/namespaces/b/secrets", 200);
    expect_code(&s, "tok-bob", "/_sim/stats", 200);
    expect_code(&s, NULL, "/api/v1/pods", 401);
    srv_stop(&s, "kwp sim");
    tdir_remove(&d);
}

/* ---- authorization ------------------------------------------------------------------- */

Test(sim_auth, token_user_allowed_list_watch_get, .timeout = T_TIMEOUT)
{
    struct tdir d;
    struct srv s;
    struct http_resp r;
    char url[512];
    cJSON *j;
    const char *name;

    tdir_make(&d);
    sim_auth_start(&s, &d, NULL);
    as(&s, "tok-alice", "GET", "/api/v1/namespaces/default/pods", NULL, NULL, &r);
    cr_assert_eq(r.code, 200, "LIST: %ld %s", r.code, r.body);
    j = cJSON_Parse(r.body);
    name = json_str(cJSON_GetArrayItem(json_at(j, "items"), 0), "metadata.name");
    cr_assert_not_null(name, "a seeded pod in default: %s", r.body);
    snprintf(url, sizeof(url), "/api/v1/namespaces/default/pods/%s", name);
    http_resp_free(&r);
    expect_code(&s, "tok-alice", url, 200);
    cJSON_Delete(j);
    /* a WATCH is authorized once, when it starts; timeoutSeconds ends it so that one bounded
     * request reads it (the watch collector sends no Authorization header) */
    as(&s, "tok-alice", "GET",
       "/api/v1/namespaces/default/pods?watch=1&resourceVersion=0&timeoutSeconds=1", NULL, NULL,
       &r);
    cr_assert_eq(r.code, 200, "WATCH: %ld %s", r.code, r.body);
    cr_assert(strstr(r.body, "{\"type\":\"ADDED\"") == r.body, "events: %.300s", r.body);
    http_resp_free(&r);
    srv_stop(&s, "kwp sim");
    tdir_remove(&d);
}

Test(sim_auth, forbidden_bodies_are_auth_md_examples, .timeout = T_TIMEOUT)
{
    struct tdir d;
    struct srv s;
    struct http_resp r;

    tdir_make(&d);
    sim_auth_start(&s, &d, NULL);
    as(&s, "tok-alice", "GET", "/api/v1/namespaces/b/pods", NULL, NULL, &r);
    expect(&r, 403, FORBID_LIST_PODS_B);
    api_expect_header(&r, "X-Content-Type-Options", "nosniff");
    api_expect_header(&r, "Content-Type", "application/json");
    http_resp_free(&r);
    /* a WATCH refused is an HTTP 403, not an ERROR event */
    expect_get(&s, "tok-alice", "/api/v1/pods?watch=true", NULL, 403, FORBID_WATCH_PODS);
    expect_get(&s, "tok-alice", "/api/v1/watch/pods", NULL, 403, FORBID_WATCH_PODS);
    expect_get(&s, "tok-alice", "/api/v1/namespaces/b/pods/x", NULL, 403, FORBID_GET_POD_X);
    /* a list with fieldSelector=metadata.name=x is authorized as that name */
    as(&s, "tok-alice", "GET", "/api/v1/namespaces/b/pods?fieldSelector=metadata.name%3Dx", NULL,
       NULL, &r);
    cr_assert_eq(r.code, 403);
    cr_assert(strstr(r.body, "pods \\\"x\\\" is forbidden: User \\\"alice\\\" cannot list") != NULL,
              "%s", r.body);
    http_resp_free(&r);
    expect_get(&s, "tok-alice", "/apis/apps/v1/namespaces/b/deployments", NULL, 403,
               FORBID_LIST_DEPLOY_B);
    expect_get(&s, "tok-alice", "/metrics", NULL, 403, FORBID_METRICS);
    /* a subresource shows as pods/log, details.kind stays pods */
    expect_get(&s, "tok-alice", "/api/v1/namespaces/default/pods/x/log", NULL, 403,
               FORBID_HEAD
               "\"message\":\"pods \\\"x\\\" is forbidden: User \\\"alice\\\" cannot get "
               "resource \\\"pods/log\\\" in API group \\\"\\\" in the namespace "
               "\\\"default\\\"\",\"reason\":\"Forbidden\",\"details\":{\"name\":\"x\","
               "\"kind\":\"pods\"},\"code\":403}");
    /* writes are verbs the rules did not grant */
    as(&s, "tok-alice", "POST", "/api/v1/namespaces/default/pods", "{}", NULL, &r);
    cr_assert_eq(r.code, 403, "create: %ld %s", r.code, r.body);
    cr_assert(strstr(r.body, "cannot create resource \\\"pods\\\"") != NULL, "%s", r.body);
    http_resp_free(&r);
    /* bob is authenticated (discovery) but holds no pod rule */
    expect_code(&s, "tok-bob", "/api", 200);
    expect_code(&s, "tok-bob", "/apis/apps/v1", 200);
    expect_code(&s, "tok-bob", "/version", 200);
    expect_code(&s, "tok-bob", "/api/v1/namespaces/default/pods", 403);
    srv_stop(&s, "kwp sim");
    tdir_remove(&d);
}

Test(sim_auth, impersonation_allowed_and_refused, .timeout = T_TIMEOUT)
{
    struct tdir d;
    struct srv s;
    struct http_resp r;

    tdir_make(&d);
    sim_auth_start(&s, &d, NULL);
    /* alice may not act as carol: the 403 names the caller and the check */
    expect_get(&s, "tok-alice", "/api/v1/namespaces/default/pods", "Impersonate-User: carol", 403,
               FORBID_IMPERSONATE_CAROL);
    /* carol may act as bob: the request then is bob's, checked against the rules */
    as(&s, "tok-carol", "GET", "/version", NULL, "Impersonate-User: bob", &r);
    cr_assert_eq(r.code, 200, "as bob: %ld %s", r.code, r.body);
    http_resp_free(&r);
    expect_get(&s, "tok-carol", "/api/v1/namespaces/default/pods", "Impersonate-User: bob", 403,
               FORBID_HEAD
               "\"message\":\"pods is forbidden: User \\\"bob\\\" cannot list resource "
               "\\\"pods\\\" in API group \\\"\\\" in the namespace \\\"default\\\"\","
               "\"reason\":\"Forbidden\",\"details\":{\"kind\":\"pods\"},\"code\":403}");
    /* the admin may impersonate anyone, groups too: alice's group grants the list */
    {
        const char *hdrs[] = {ADMIN, "Impersonate-User: someone", "Impersonate-Group: devs", NULL};

        api_req(s.url, "GET", "/api/v1/namespaces/default/pods", NULL, NULL, hdrs, &r);
        cr_assert_eq(r.code, 200, "as someone in devs: %ld %s", r.code, r.body);
        http_resp_free(&r);
    }
    /* carol may not add a group to bob */
    {
        const char *hdrs[] = {"Authorization: Bearer tok-carol", "Impersonate-User: bob",
                              "Impersonate-Group: devs", NULL};

        api_req(s.url, "GET", "/version", NULL, NULL, hdrs, &r);
        expect(&r, 403,
               FORBID_HEAD "\"message\":\"groups \\\"devs\\\" is forbidden: User \\\"carol\\\" "
                           "cannot impersonate resource \\\"groups\\\" in API group \\\"\\\" at "
                           "the cluster scope\",\"reason\":\"Forbidden\",\"details\":{\"name\":"
                           "\"devs\",\"kind\":\"groups\"},\"code\":403}");
        http_resp_free(&r);
    }
    /* a group without a user: the plain-text 500 */
    as(&s, "tok-carol", "GET", "/version", NULL, "Impersonate-Group: devs", &r);
    cr_assert_eq(r.code, 500);
    cr_assert_str_eq(r.body, "Internal Server Error: \"/version\": requested [{Group  devs    }] "
                             "without impersonating a user\n");
    api_expect_header(&r, "Content-Type", "text/plain; charset=utf-8");
    api_expect_header(&r, "X-Content-Type-Options", "nosniff");
    http_resp_free(&r);
    srv_stop(&s, "kwp sim");
    tdir_remove(&d);
}

/* ---- the review APIs ----------------------------------------------------------------- */

Test(sim_auth, tokenreview_round_trip, .timeout = T_TIMEOUT)
{
    static const char req[] = "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":"
                              "\"TokenReview\",\"spec\":{\"token\":\"tok-alice\",\"audiences\":"
                              "[\"A\"]}}";
    static const char bad[] = "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":"
                              "\"TokenReview\",\"spec\":{\"token\":\"nope\"}}";
    struct tdir d;
    struct srv s;
    struct http_resp r;

    tdir_make(&d);
    sim_auth_start(&s, &d, NULL);
    cr_assert_eq(stat_as_admin(&s, "tokenreviews"), 0);
    as(&s, "tok-carol", "POST", "/apis/authentication.k8s.io/v1/tokenreviews", req, NULL, &r);
    expect(&r, 201,
           "{\"kind\":\"TokenReview\",\"apiVersion\":\"authentication.k8s.io/v1\",\"metadata\":"
           "{\"creationTimestamp\":null},\"spec\":{\"token\":\"tok-alice\",\"audiences\":[\"A\"]},"
           "\"status\":{\"authenticated\":true,\"user\":{\"username\":\"alice\",\"uid\":\"42\","
           "\"groups\":[\"devs\",\"system:authenticated\"]},\"audiences\":[\"A\"]}}");
    http_resp_free(&r);
    as(&s, "tok-carol", "POST", "/apis/authentication.k8s.io/v1/tokenreviews", bad, NULL, &r);
    expect(&r, 201,
           "{\"kind\":\"TokenReview\",\"apiVersion\":\"authentication.k8s.io/v1\",\"metadata\":"
           "{\"creationTimestamp\":null},\"spec\":{\"token\":\"nope\"},\"status\":{\"user\":{},"
           "\"error\":\"invalid bearer token\"}}");
    http_resp_free(&r);
    cr_assert_eq(stat_as_admin(&s, "tokenreviews"), 2);
    /* creating a review is itself authorized */
    as(&s, "tok-bob", "POST", "/apis/authentication.k8s.io/v1/tokenreviews", req, NULL, &r);
    expect(&r, 403,
           FORBID_HEAD "\"message\":\"tokenreviews.authentication.k8s.io is forbidden: User "
                       "\\\"bob\\\" cannot create resource \\\"tokenreviews\\\" in API group "
                       "\\\"authentication.k8s.io\\\" at the cluster scope\",\"reason\":"
                       "\"Forbidden\",\"details\":{\"group\":\"authentication.k8s.io\",\"kind\":"
                       "\"tokenreviews\"},\"code\":403}");
    http_resp_free(&r);
    as(&s, "tok-carol", "GET", "/apis/authentication.k8s.io/v1/tokenreviews", NULL, NULL, &r);
    cr_assert_eq(r.code, 403, "GET tokenreviews is a list carol may not do: %ld", r.code);
    http_resp_free(&r);
    cr_assert_eq(stat_as_admin(&s, "tokenreviews"), 2, "refused reviews are not counted");
    srv_stop(&s, "kwp sim");
    tdir_remove(&d);
}

Test(sim_auth, subjectaccessreview_round_trip, .timeout = T_TIMEOUT)
{
#define SAR_SPEC(NS)                                                                               \
    "{\"resourceAttributes\":{\"namespace\":\"" NS "\",\"verb\":\"list\",\"group\":\"\","          \
    "\"version\":\"v1\",\"resource\":\"pods\",\"subresource\":\"\",\"name\":\"\"},\"user\":"       \
    "\"alice\",\"groups\":[\"devs\",\"system:authenticated\"],\"extra\":{\"k\":[\"v\"]},"          \
    "\"uid\":\"42\"}"
#define SAR_REQ(NS)                                                                                \
    "{\"apiVersion\":\"authorization.k8s.io/"                                                      \
    "v1\",\"kind\":\"SubjectAccessReview\",\"spec\":" SAR_SPEC(NS) "}"
#define SAR_HEAD                                                                                   \
    "{\"kind\":\"SubjectAccessReview\",\"apiVersion\":\"authorization.k8s.io/v1\","                \
    "\"metadata\":{\"creationTimestamp\":null},\"spec\":"
    static const char metrics[] = "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":"
                                  "\"SubjectAccessReview\",\"spec\":{\"nonResourceAttributes\":"
                                  "{\"path\":\"/api/v1\",\"verb\":\"get\"},\"groups\":"
                                  "[\"system:authenticated\"]}}";
    struct tdir d;
    struct srv s;
    struct http_resp r;

    tdir_make(&d);
    sim_auth_start(&s, &d, NULL);
    as(&s, "tok-carol", "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", SAR_REQ("b"),
       NULL, &r);
    expect(&r, 201,
           SAR_HEAD SAR_SPEC("b") ",\"status\":{\"allowed\":false,\"reason\":\"\",\"denied\":"
                                  "false}}");
    http_resp_free(&r);
    as(&s, "tok-carol", "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
       SAR_REQ("default"), NULL, &r);
    expect(&r, 201,
           SAR_HEAD SAR_SPEC("default") ",\"status\":{\"allowed\":true,\"reason\":\"RBAC: "
                                        "allowed by rule \\\"devs-read\\\" to Group "
                                        "\\\"devs\\\"\"}}");
    http_resp_free(&r);
    as(&s, "tok-carol", "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", metrics, NULL,
       &r);
    cr_assert_eq(r.code, 201, "%s", r.body);
    cr_assert(strstr(r.body,
                     ",\"status\":{\"allowed\":true,\"reason\":\"RBAC: allowed by rule "
                     "\\\"discovery\\\" to Group \\\"system:authenticated\\\"\"}}\n") != NULL,
              "%s", r.body);
    http_resp_free(&r);
    cr_assert_eq(stat_as_admin(&s, "subjectaccessreviews"), 3);
    /* 422 for a review that names no subject */
    as(&s, "tok-carol", "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
       "{\"spec\":{\"nonResourceAttributes\":{\"path\":\"/x\",\"verb\":\"get\"}}}", NULL, &r);
    cr_assert_eq(r.code, 422, "%s", r.body);
    http_resp_free(&r);
    as(&s, "tok-alice", "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", SAR_REQ("b"),
       NULL, &r);
    cr_assert_eq(r.code, 403, "alice may not create reviews: %ld", r.code);
    http_resp_free(&r);
    cr_assert_eq(stat_as_admin(&s, "subjectaccessreviews"), 3);
    srv_stop(&s, "kwp sim");
    tdir_remove(&d);
}

Test(sim_auth, review_apis_in_discovery_and_without_auth_flags, .timeout = T_TIMEOUT)
{
    struct srv s;
    struct http_resp r;

    srv_spawn(&s, "sim", ARGS("--objects", "0"), NULL);
    api_req(s.url, "GET", "/apis/authentication.k8s.io/v1", NULL, NULL, NULL, &r);
    expect(&r, 200,
           "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\",\"groupVersion\":"
           "\"authentication.k8s.io/v1\",\"resources\":[{\"name\":\"tokenreviews\","
           "\"singularName\":\"tokenreview\",\"namespaced\":false,\"kind\":\"TokenReview\","
           "\"verbs\":[\"create\"]}]}");
    http_resp_free(&r);
    api_req(s.url, "GET", "/apis/authorization.k8s.io", NULL, NULL, NULL, &r);
    cr_assert_eq(r.code, 200);
    cr_assert(strstr(r.body, "\"preferredVersion\":{\"groupVersion\":\"authorization.k8s.io/v1\","
                             "\"version\":\"v1\"}") != NULL,
              "%s", r.body);
    http_resp_free(&r);
    api_req(s.url, "GET", "/apis", NULL, NULL, NULL, &r);
    cr_assert(strstr(r.body, "{\"name\":\"authentication.k8s.io\",") != NULL, "%s", r.body);
    cr_assert(strstr(r.body, "{\"name\":\"authorization.k8s.io\",") != NULL, "%s", r.body);
    http_resp_free(&r);
    /* no authentication configured: no token is anybody's, every SAR is allowed */
    api_req(s.url, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", "application/json",
            "{\"spec\":{\"token\":\"t\"}}", NULL, &r);
    cr_assert_eq(r.code, 201);
    cr_assert(strstr(r.body, "\"status\":{\"user\":{},\"error\":\"invalid bearer token\"}}") !=
                  NULL,
              "%s", r.body);
    http_resp_free(&r);
    api_req(s.url, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "application/json",
            "{\"spec\":{\"nonResourceAttributes\":{\"path\":\"/x\",\"verb\":\"get\"},\"user\":"
            "\"u\"}}",
            NULL, &r);
    cr_assert_eq(r.code, 201);
    cr_assert(strstr(r.body, "\"status\":{\"allowed\":true,\"reason\":\"\"}}") != NULL, "%s",
              r.body);
    http_resp_free(&r);
    api_req(s.url, "PUT", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "application/json",
            "{}", NULL, &r);
    cr_assert_eq(r.code, 405);
    http_resp_free(&r);
    cr_assert_eq(api_sim_stat(s.url, "tokenreviews"), 1);
    cr_assert_eq(api_sim_stat(s.url, "subjectaccessreviews"), 1);
    srv_stop(&s, "kwp sim");
}

Test(sim_auth, bad_rule_or_token_file_refused_at_start, .timeout = T_TIMEOUT)
{
    struct tdir d;
    char rules[128], tok[128], out[128];
    char *text;
    int rc;

    tdir_make(&d);
    write_file(&d, "rules", "allow users=a verbs=get nonResourceURLs=/x\nallow users=b\n");
    write_file(&d, "tokens.csv", "a,b,c\nd,e\n");
    rc = run(ARGS(proc_kwp_bin(), "sim", "--listen", "127.0.0.1:0", "--authorization-rules",
                  tpath(&d, "rules", rules, sizeof(rules))),
             tpath(&d, "out", out, sizeof(out)), NULL);
    cr_assert_eq(rc, 1);
    text = slurp(out);
    cr_assert(strstr(text, "kwp sim: ") != NULL && strstr(text, "/rules:2: a rule needs verbs"),
              "%s", text);
    free(text);
    rc = run(ARGS(proc_kwp_bin(), "sim", "--listen", "127.0.0.1:0", "--token-auth-file",
                  tpath(&d, "tokens.csv", tok, sizeof(tok))),
             out, NULL);
    cr_assert_eq(rc, 1);
    text = slurp(out);
    cr_assert(strstr(text, "must have at least 3 columns (token, user name, user uid), found 2 "
                           "(line 2)") != NULL,
              "%s", text);
    free(text);
    tdir_remove(&d);
}

/* ---- the whole chain: kwp proxy --auth delegated before the sim ---------------------- */

Test(sim_auth, proxy_delegates_to_the_sim, .timeout = T_TIMEOUT)
{
    struct tdir d;
    struct srv s, px;

    tdir_make(&d);
    sim_auth_start(&s, &d, NULL);
    srv_spawn(&px, "proxy",
              ARGS("--upstream", s.url, "--token", "tok-proxy", "--resources", "pods", "--auth",
                   "delegated"),
              NULL);
    srv_wait_ready(&px, 20000);
    /* from the cache, authorized by a SubjectAccessReview the sim answers from its rules */
    expect_code(&px, "tok-alice", "/api/v1/namespaces/default/pods", 200);
    expect_get(&px, "tok-alice", "/api/v1/namespaces/b/pods", NULL, 403, FORBID_LIST_PODS_B);
    expect_get(&px, "tok-alice", "/api/v1/pods?watch=1", NULL, 403, FORBID_WATCH_PODS);
    /* a token the sim's TokenReview does not know; none at all */
    expect_get(&px, "wrong", "/api/v1/namespaces/default/pods", NULL, 401, BODY_401);
    expect_get(&px, NULL, "/api/v1/namespaces/default/pods", NULL, 401, BODY_401);
    /* forwarded as alice: the proxy impersonates her on its own token, the sim checks both */
    expect_code(&px, "tok-alice", "/version", 200);
    expect_code(&px, "tok-bob", "/apis", 200);
    cr_assert_geq(stat_as_admin(&s, "tokenreviews"), 3, "alice, wrong and bob reviewed");
    cr_assert_geq(stat_as_admin(&s, "subjectaccessreviews"), 4);
    srv_stop(&px, "kwp proxy");
    srv_stop(&s, "kwp sim");
    tdir_remove(&d);
}

/* ---- client certificates and kubectl ------------------------------------------------- */

/* Makes ca.pem/ca.key, server.pem/.key (IP 127.0.0.1) and client certificates signed by the CA
 * for /O=certs/CN=dave (dave.*), /CN=erin (erin.*), a server-only one (/CN=srvonly, no client
 * auth usage) and a self-signed /O=system:masters/CN=evil (evil.*). */
static void make_pki(const struct tdir *d)
{
    static const struct {
        const char *name, *subj, *ext;
    } certs[] = {
        {"server", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"},
        {"dave", "/O=certs/O=more/CN=dave", "extendedKeyUsage=clientAuth\n"},
        {"erin", "/CN=erin", "extendedKeyUsage=clientAuth\n"},
        {"srvonly", "/O=certs/CN=srvonly", "extendedKeyUsage=serverAuth\n"},
    };
    char ca[128], cakey[128], out[128], key[128], csr[128], crt[128], ext[128], extname[32];

    tpath(d, "ca.pem", ca, sizeof(ca));
    tpath(d, "ca.key", cakey, sizeof(cakey));
    tpath(d, "openssl.log", out, sizeof(out));
    cr_assert_eq(run(ARGS("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                          cakey, "-out", ca, "-days", "2", "-subj", "/CN=kwp-test-ca"),
                     out, NULL),
                 0, "openssl CA");
    for (size_t i = 0; i < sizeof(certs) / sizeof(certs[0]); i++) {
        char name[32];

        snprintf(name, sizeof(name), "%s.key", certs[i].name);
        tpath(d, name, key, sizeof(key));
        snprintf(name, sizeof(name), "%s.csr", certs[i].name);
        tpath(d, name, csr, sizeof(csr));
        snprintf(name, sizeof(name), "%s.pem", certs[i].name);
        tpath(d, name, crt, sizeof(crt));
        snprintf(extname, sizeof(extname), "%s.ext", certs[i].name);
        write_file(d, extname, certs[i].ext);
        tpath(d, extname, ext, sizeof(ext));
        cr_assert_eq(run(ARGS("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                              "-out", csr, "-subj", certs[i].subj),
                         out, NULL),
                     0, "openssl csr %s", certs[i].name);
        cr_assert_eq(run(ARGS("openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", cakey,
                              "-CAcreateserial", "-out", crt, "-days", "2", "-extfile", ext),
                         out, NULL),
                     0, "openssl sign %s", certs[i].name);
    }
    tpath(d, "evil.key", key, sizeof(key));
    tpath(d, "evil.pem", crt, sizeof(crt));
    cr_assert_eq(run(ARGS("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                          key, "-out", crt, "-days", "2", "-subj", "/O=system:masters/CN=evil"),
                     out, NULL),
                 0, "openssl self-signed");
}

static size_t tls_body(char *p, size_t size, size_t n, void *ctx)
{
    struct http_resp *r = ctx;
    size_t add = size * n;

    r->body = realloc(r->body, r->body_len + add + 1);
    memcpy(r->body + r->body_len, p, add);
    r->body_len += add;
    r->body[r->body_len] = '\0';
    return add;
}

/* GET <path> over https verified with ca.pem, presenting certificate <who> (NULL: none) and
 * bearer token <tok> (NULL: none). Asserts a response came. */
static void tls_get(const struct srv *s, const struct tdir *d, const char *who, const char *tok,
                    const char *path, struct http_resp *r)
{
    char url[512], ca[128], crt[128], key[128], name[32], auth[128];
    struct curl_slist *h = NULL;
    CURL *c = curl_easy_init();
    CURLcode rc;

    memset(r, 0, sizeof(*r));
    snprintf(url, sizeof(url), "%s%s", s->url, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CAINFO, tpath(d, "ca.pem", ca, sizeof(ca)));
    if (who != NULL) {
        snprintf(name, sizeof(name), "%s.pem", who);
        curl_easy_setopt(c, CURLOPT_SSLCERT, tpath(d, name, crt, sizeof(crt)));
        snprintf(name, sizeof(name), "%s.key", who);
        curl_easy_setopt(c, CURLOPT_SSLKEY, tpath(d, name, key, sizeof(key)));
    }
    h = curl_slist_append(h, "User-Agent: " HTTP_USER_AGENT);
    h = curl_slist_append(h, "Accept: application/json");
    if (tok != NULL) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", tok);
        h = curl_slist_append(h, auth);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, tls_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, API_REQ_MS);
    rc = curl_easy_perform(c);
    cr_assert_eq(rc, CURLE_OK, "GET %s as %s: %s", url, who ? who : "(no cert)",
                 curl_easy_strerror(rc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->code);
    if (r->body == NULL) {
        r->body = calloc(1, 1);
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

/* Starts the simulator over https with client certificates (make_pki first). */
static void sim_tls_start(struct srv *s, const struct tdir *d)
{
    static char ca[128], crt[128], key[128];

    sim_auth_start(s, d,
                   ARGS("--tls-cert-file", tpath(d, "server.pem", crt, sizeof(crt)),
                        "--tls-key-file", tpath(d, "server.key", key, sizeof(key)),
                        "--client-ca-file", tpath(d, "ca.pem", ca, sizeof(ca))));
    cr_assert(strncmp(s->url, "https://", 8) == 0, "%s", s->url);
}

Test(sim_auth, client_certificate_users_over_tls, .timeout = T_TIMEOUT)
{
    struct tdir d;
    struct srv s;
    struct http_resp r;

    tdir_make(&d);
    make_pki(&d);
    sim_tls_start(&s, &d);
    tls_get(&s, &d, "dave", NULL, "/api/v1/namespaces/default/pods", &r);
    cr_assert_eq(r.code, 200, "dave (O=certs) lists default: %ld %s", r.code, r.body);
    http_resp_free(&r);
    tls_get(&s, &d, "dave", NULL, "/api/v1/namespaces/b/pods", &r);
    expect(&r, 403,
           FORBID_HEAD "\"message\":\"pods is forbidden: User \\\"dave\\\" cannot list resource "
                       "\\\"pods\\\" in API group \\\"\\\" in the namespace \\\"b\\\"\",\"reason\":"
                       "\"Forbidden\",\"details\":{\"kind\":\"pods\"},\"code\":403}");
    http_resp_free(&r);
    /* no certificate and no token; an untrusted one (whatever its O); one not for clients */
    tls_get(&s, &d, NULL, NULL, "/api/v1/namespaces/default/pods", &r);
    expect(&r, 401, BODY_401);
    http_resp_free(&r);
    tls_get(&s, &d, "evil", NULL, "/api/v1/namespaces/default/pods", &r);
    expect(&r, 401, BODY_401);
    http_resp_free(&r);
    tls_get(&s, &d, "srvonly", NULL, "/api/v1/namespaces/default/pods", &r);
    expect(&r, 401, BODY_401);
    http_resp_free(&r);
    /* a certificate wins over a token; a token still works beside a certificate that fails */
    tls_get(&s, &d, "dave", "tok-bob", "/api/v1/namespaces/default/pods", &r);
    cr_assert_eq(r.code, 200, "dave's certificate, bob's token: %ld %s", r.code, r.body);
    http_resp_free(&r);
    tls_get(&s, &d, "erin", "tok-alice", "/api/v1/namespaces/default/pods", &r);
    cr_assert_eq(r.code, 403);
    cr_assert(strstr(r.body, "User \\\"erin\\\"") != NULL, "%s", r.body);
    http_resp_free(&r);
    tls_get(&s, &d, "evil", "tok-alice", "/api/v1/namespaces/default/pods", &r);
    cr_assert_eq(r.code, 200, "alice's token beside an untrusted certificate: %ld %s", r.code,
                 r.body);
    http_resp_free(&r);
    srv_stop(&s, "kwp sim");
    tdir_remove(&d);
}

/* Runs `kubectl --kubeconfig K --context <ctx> get pods [-n ns]`; returns its exit code and
 * its output (caller frees) in *text. */
static int kubectl_get_pods(const struct tdir *d, const char *ctx, const char *ns, char **text)
{
    const char *kubectl = getenv("KUBECTL") ? getenv("KUBECTL") : "/usr/bin/kubectl";
    char kc[128], cache[128], out[128], name[32];
    int rc;

    snprintf(name, sizeof(name), "kubectl-%s.out", ctx);
    tpath(d, name, out, sizeof(out));
    snprintf(name, sizeof(name), "cache-%s", ctx);
    tpath(d, name, cache, sizeof(cache));
    tpath(d, "kubeconfig", kc, sizeof(kc));
    if (ns != NULL) {
        rc = run(ARGS(kubectl, "--kubeconfig", kc, "--context", ctx, "--cache-dir", cache,
                      "--request-timeout=20s", "get", "pods", "-n", ns),
                 out, NULL);
    } else {
        rc = run(ARGS(kubectl, "--kubeconfig", kc, "--context", ctx, "--cache-dir", cache,
                      "--request-timeout=20s", "get", "pods"),
                 out, NULL);
    }
    *text = slurp(out);
    return rc;
}

Test(sim_auth, kubectl_with_token_and_certificate_users, .timeout = T_TIMEOUT)
{
    struct tdir d;
    struct srv s;
    char kc[4096], ca[128], dcrt[128], dkey[128], ecrt[128], ekey[128];
    char *text;

    if (access(getenv("KUBECTL") ? getenv("KUBECTL") : "/usr/bin/kubectl", X_OK) != 0) {
        cr_skip_test("no kubectl");
    }
    tdir_make(&d);
    make_pki(&d);
    sim_tls_start(&s, &d);
    snprintf(kc, sizeof(kc),
             "apiVersion: v1\nkind: Config\n"
             "clusters:\n- name: sim\n  cluster: {server: \"%s\", certificate-authority: %s}\n"
             "contexts:\n"
             "- {name: alice, context: {cluster: sim, user: alice, namespace: default}}\n"
             "- {name: bob, context: {cluster: sim, user: bob, namespace: default}}\n"
             "- {name: dave, context: {cluster: sim, user: dave, namespace: default}}\n"
             "- {name: erin, context: {cluster: sim, user: erin, namespace: default}}\n"
             "current-context: alice\n"
             "users:\n"
             "- {name: alice, user: {token: tok-alice}}\n"
             "- {name: bob, user: {token: tok-bob}}\n"
             "- {name: dave, user: {client-certificate: %s, client-key: %s}}\n"
             "- {name: erin, user: {client-certificate: %s, client-key: %s}}\n",
             s.url, tpath(&d, "ca.pem", ca, sizeof(ca)), tpath(&d, "dave.pem", dcrt, sizeof(dcrt)),
             tpath(&d, "dave.key", dkey, sizeof(dkey)), tpath(&d, "erin.pem", ecrt, sizeof(ecrt)),
             tpath(&d, "erin.key", ekey, sizeof(ekey)));
    write_file(&d, "kubeconfig", kc);

    cr_assert_eq(kubectl_get_pods(&d, "alice", NULL, &text), 0, "alice: %s", text);
    cr_assert(strstr(text, "NAME") == text && strstr(text, "pod-") != NULL, "%s", text);
    free(text);
    cr_assert_eq(kubectl_get_pods(&d, "dave", NULL, &text), 0, "dave: %s", text);
    cr_assert(strstr(text, "pod-") != NULL, "%s", text);
    free(text);
    cr_assert_eq(kubectl_get_pods(&d, "bob", NULL, &text), 1, "bob: %s", text);
    cr_assert(strstr(text, "Error from server (Forbidden): pods is forbidden: User \"bob\" cannot "
                           "list resource \"pods\" in API group \"\" in the namespace "
                           "\"default\"\n") != NULL,
              "%s", text);
    free(text);
    cr_assert_eq(kubectl_get_pods(&d, "erin", NULL, &text), 1, "erin: %s", text);
    cr_assert(strstr(text, "Error from server (Forbidden): pods is forbidden: User \"erin\" "
                           "cannot list resource \"pods\" in API group \"\" in the namespace "
                           "\"default\"\n") != NULL,
              "%s", text);
    free(text);
    cr_assert_eq(kubectl_get_pods(&d, "dave", "b", &text), 1, "dave -n b: %s", text);
    cr_assert(strstr(text,
                     "Error from server (Forbidden): pods is forbidden: User \"dave\" cannot "
                     "list resource \"pods\" in API group \"\" in the namespace \"b\"\n") != NULL,
              "%s", text);
    free(text);
    srv_stop(&s, "kwp sim");
    tdir_remove(&d);
}
