/*
 * test_credentials.c - `kwp proxy` finding and using its upstream credentials (issue 12):
 * kubeconfig files (--kubeconfig, $KUBECONFIG lists, --context), tokens, token files
 * rewritten while it runs, exec plugins (tests/data/execcred/file-token.sh) that expire, fail
 * and recover, TLS (certificate-authority and -data, a wrong CA, insecure-skip-tls-verify,
 * tls-server-name), the in-cluster service account, auth-provider users, and the resolution
 * order. The upstream is `kwp sim --token T` and/or `kwp sim --tls-cert-file/--tls-key-file`
 * with certificates made here with the openssl binary; both run on 127.0.0.1 port 0.
 *
 * kwp sim cannot require client certificates, so those are tested in
 * tests/unit/proxy/test_upstream.c against an OpenSSL origin that does.
 *
 * Each Test runs in its own process (Criterion), so it sets HOME, KUBECONFIG and the
 * in-cluster variables for its children freely; files live in a mkdtemp directory. Waiting
 * is a bounded poll of /readyz, never a sleep.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tests/support/http.h"
#include "tests/support/nap.h"
#include "tests/support/proc.h"
#include "tests/support/srv.h"

#define KC_TIMEOUT_S 120 /* one for every Test (Criterion 2.4.1 leaks with mixed timeouts) */
#define WAIT_MS 30000    /* for /readyz to say what a test expects */
#define TOKEN "s3cret-token"

/* ---- files -------------------------------------------------------------------------- */

static char dir[256]; /* this test's directory */

static void setup(void)
{
    snprintf(dir, sizeof(dir), "%s/kwp-kc-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
    /* nothing from the machine running the tests: no kubeconfig, not in a cluster */
    setenv("HOME", dir, 1);
    unsetenv("KUBECONFIG");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    unsetenv("KWP_INCLUSTER_ROOT");
    unsetenv("KWP_KUBECONFIG");
    unsetenv("KWP_CONTEXT");
}

static void teardown(void)
{
    char cmd[300];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    (void)!system(cmd);
}

TestSuite(credentials, .init = setup, .fini = teardown, .timeout = KC_TIMEOUT_S);

/* <dir>/<name> into <out>. */
static const char *at(const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", dir, name);
    return out;
}

static void write_text(const char *name, const char *text)
{
    char path[600], tmp[620];
    FILE *f;

    /* a new file renamed into place, as kubelet and editors do: never a half-written one */
    at(name, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "w");
    cr_assert_not_null(f, "%s: %s", tmp, strerror(errno));
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(rename(tmp, path), 0, "%s: %s", path, strerror(errno));
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = calloc(1, 1 << 16);
    size_t n;

    cr_assert(f != NULL && buf != NULL, "%s: %s", path, strerror(errno));
    n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Runs a shell command (openssl, base64) and asserts it worked. */
static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    cr_assert_eq(system(cmd), 0, "failed: %s", cmd);
}

/* A self-signed certificate <name>.crt / <name>.key for subjectAltName <san>, and its base64
 * (certificate-authority-data) as <name>.b64. */
static void make_cert(const char *name, const char *san)
{
    sh("cd '%s' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
       "-keyout %s.key -out %s.crt -days 2 -subj /CN=kwp-test -addext subjectAltName=%s "
       ">/dev/null 2>&1 && base64 -w0 %s.crt >%s.b64",
       dir, name, name, san, name, name);
}

/* The base64 of <name>.crt (static buffer). */
static const char *b64(const char *name)
{
    static char buf[8192];
    char path[600], file[64];
    char *t;

    snprintf(file, sizeof(file), "%s.b64", name);
    t = read_text(at(file, path, sizeof(path)));
    snprintf(buf, sizeof(buf), "%s", t);
    free(t);
    return buf;
}

/* tests/data/execcred, from $KWP_SRC (set by CTest) or from this file's path. */
static const char *plugins_dir(void)
{
    static char path[1024];
    const char *src = getenv("KWP_SRC");
    const char *here = __FILE__;
    const char *cut = strstr(here, "tests/integration/");

    if (src) {
        snprintf(path, sizeof(path), "%s/tests/data/execcred", src);
    } else {
        cr_assert(cut != NULL);
        snprintf(path, sizeof(path), "%.*stests/data/execcred", (int)(cut - here), here);
    }
    return path;
}

/* Lines in <dir>/<name>: how often the plugin ran. */
static int runs(const char *name)
{
    char path[600], line[64];
    int n = 0;
    FILE *f = fopen(at(name, path, sizeof(path)), "r");

    if (!f) {
        return 0;
    }
    while (fgets(line, sizeof(line), f)) {
        n++;
    }
    fclose(f);
    return n;
}

/* A kubeconfig <name> with one cluster c (<cluster>: the mapping's fields), one user u
 * (<user>: its fields, YAML block lines indented by 4) and one context x, current. */
static void kubeconfig(const char *name, const char *cluster, const char *user)
{
    char yaml[16384];

    snprintf(yaml, sizeof(yaml),
             "apiVersion: v1\nkind: Config\n"
             "clusters:\n- name: c\n  cluster: {%s}\n"
             "users:\n- name: u\n  user:\n%s"
             "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
             "current-context: x\n",
             cluster, user);
    write_text(name, yaml);
}

/* ---- processes ---------------------------------------------------------------------- */

static void sim_up(struct srv *s, const char *const *args)
{
    srv_spawn(s, "sim", ARGS("--objects", "3", "--churn", "0"), args);
}

/* Proxy first: its shutdown must not depend on the upstream. */
static void stop_both(struct srv *px, struct srv *sim)
{
    srv_stop(px, "kwp proxy");
    srv_stop(sim, "kwp sim");
}

/* GET <base><path>: the status, and the body in <body> (cap bytes) when not NULL. */
static long get(const char *base, const char *path, char *body, size_t cap)
{
    struct http_resp r;
    char url[600];
    long code = 0;

    snprintf(url, sizeof(url), "%s%s", base, path);
    if (body) {
        body[0] = '\0';
    }
    if (http_do("GET", url, NULL, NULL, NULL, 5000, &r) == 0) {
        code = r.code;
        if (body) {
            snprintf(body, cap, "%s", r.body);
        }
    }
    http_resp_free(&r);
    return code;
}

/* Polls /readyz until it answers <code> with a body that contains <needle>; asserts. */
static void wait_readyz(const struct srv *px, long code, const char *needle)
{
    uint64_t end = http_now_ms() + WAIT_MS;
    char body[4096] = "";
    long got = 0;

    while (http_now_ms() < end) {
        got = get(px->url, "/readyz", body, sizeof(body));
        if (got == code && strstr(body, needle) != NULL) {
            return;
        }
        nap(50);
    }
    proc_dump_log(px->p, 8192);
    cr_assert_fail("/readyz: %ld \"%s\", expected %ld with \"%s\"", got, body, code, needle);
}

static void wait_ready(const struct srv *px)
{
    wait_readyz(px, 200, "ok");
}

/* The proxy serves the cached pods (rv=0 LIST) and forwards /version: both need upstream
 * credentials (the reflector's and the passthrough's). */
static void expect_serves(const struct srv *px)
{
    char body[8192];

    cr_assert_eq(get(px->url, "/api/v1/pods?resourceVersion=0", body, sizeof(body)), 200, "%s",
                 body);
    cr_assert(strstr(body, "\"kind\":\"PodList\"") != NULL, "%s", body);
    cr_assert_eq(get(px->url, "/version", body, sizeof(body)), 200, "%s", body);
}

/* kwp proxy with <args>, fast probes, pods cached from the start. */
static void proxy_up(struct srv *px, const char *const *args)
{
    srv_spawn(px, "proxy", ARGS("--upstream-probe-interval", "200ms", "--resources", "pods"), args);
}

/*
 * Runs `kwp proxy --listen 127.0.0.1:0 <args>` that must exit by itself within 10 s: returns
 * its exit status and its stderr in <err> (cap bytes).
 */
static int run_to_exit(const char *const *args, char *err, size_t cap)
{
    const char *argv[32];
    char path[600];
    size_t n = 0;
    uint64_t end = http_now_ms() + 10000;
    pid_t pid, w;
    int st = 0;
    char *text;

    argv[n++] = proc_kwp_bin();
    argv[n++] = "proxy";
    argv[n++] = "--listen";
    argv[n++] = "127.0.0.1:0";
    for (size_t i = 0; args[i]; i++) {
        cr_assert_lt(n, 31u);
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    at("exit.stderr", path, sizeof(path));
    pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int fe = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        int fo = open("/dev/null", O_WRONLY | O_CLOEXEC);

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (fe == -1 || fo == -1 || dup2(fo, 1) == -1 || dup2(fe, 2) == -1) {
            _exit(126);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    while ((w = waitpid(pid, &st, WNOHANG)) == 0 && http_now_ms() < end) {
        nap(20);
    }
    if (w == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        cr_assert_fail("kwp proxy %s ... did not exit", args[0]);
    }
    text = read_text(path);
    snprintf(err, cap, "%s", text);
    free(text);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- tokens ------------------------------------------------------------------------- */

Test(credentials, a_token_user_reaches_a_sim_that_requires_it)
{
    struct srv sim, px;
    char cluster[512], kc[600];

    sim_up(&sim, ARGS("--token", TOKEN));
    snprintf(cluster, sizeof(cluster), "server: '%s'", sim.url);
    kubeconfig("kc", cluster, "    token: " TOKEN "\n");
    proxy_up(&px, ARGS("--kubeconfig", at("kc", kc, sizeof(kc))));
    wait_ready(&px);
    expect_serves(&px);
    cr_assert(proc_log_has(px.p, "context=x cluster=c user=u"), "the log names the context");
    stop_both(&px, &sim);
}

Test(credentials, a_refused_token_is_a_503_reason_and_a_log_line_saying_what_to_fix)
{
    struct srv sim, px;
    char cluster[512], kc[600], body[4096];

    sim_up(&sim, ARGS("--token", TOKEN));
    snprintf(cluster, sizeof(cluster), "server: '%s'", sim.url);
    kubeconfig("kc", cluster, "    token: revoked\n");
    proxy_up(&px, ARGS("--kubeconfig", at("kc", kc, sizeof(kc))));
    wait_readyz(&px, 503, "not ready: upstream: 401 Unauthorized: the token was refused\n");
    cr_assert(proc_log_has(px.p, "renew the token"), "the log says what to fix");
    /* nothing pretends to be fresh: a consistent LIST goes upstream and gets its 401 */
    cr_assert_eq(get(px.url, "/api/v1/pods", body, sizeof(body)), 401, "%s", body);
    stop_both(&px, &sim);
}

Test(credentials, a_token_file_rewritten_while_running_is_picked_up)
{
    struct srv sim, px;
    char cluster[512], user[700], kc[600], tok[600];

    sim_up(&sim, ARGS("--token", TOKEN));
    write_text("token", "expired-one\n");
    snprintf(cluster, sizeof(cluster), "server: '%s'", sim.url);
    snprintf(user, sizeof(user), "    tokenFile: %s\n", at("token", tok, sizeof(tok)));
    kubeconfig("kc", cluster, user);
    proxy_up(&px, ARGS("--kubeconfig", at("kc", kc, sizeof(kc))));
    wait_readyz(&px, 503, "401 Unauthorized: the token from the token file was refused");
    write_text("token", TOKEN "\n");
    wait_ready(&px); /* discovery, the probe and the pods reflector all took the new token */
    expect_serves(&px);
    stop_both(&px, &sim);
}

/* ---- exec plugins ------------------------------------------------------------------- */

/* A kubeconfig "kc" for <server> whose user runs file-token.sh with its files in <dir>, and
 * KWP_TTL <ttl> ("" for none). */
static void exec_kubeconfig(const char *server, const char *ttl)
{
    char cluster[512], user[4096];

    snprintf(cluster, sizeof(cluster), "server: '%s'", server);
    snprintf(user, sizeof(user),
             "    exec:\n"
             "      apiVersion: client.authentication.k8s.io/v1\n"
             "      interactiveMode: Never\n"
             "      command: %s/file-token.sh\n"
             "      installHint: 'see tests/data/execcred/README'\n"
             "      env:\n"
             "      - {name: KWP_COUNTER, value: '%s/runs'}\n"
             "      - {name: KWP_FAIL, value: '%s/fail'}\n"
             "      - {name: KWP_TOKEN, value: '%s/exec-token'}\n"
             "%s%s%s",
             plugins_dir(), dir, dir, dir, ttl[0] ? "      - {name: KWP_TTL, value: '" : "", ttl,
             ttl[0] ? "'}\n" : "");
    kubeconfig("kc", cluster, user);
}

Test(credentials, an_exec_token_that_expires_is_fetched_again)
{
    struct srv sim, px;
    char kc[600];
    uint64_t end;
    int first;

    sim_up(&sim, ARGS("--token", TOKEN));
    write_text("exec-token", TOKEN);
    exec_kubeconfig(sim.url, "2");
    proxy_up(&px, ARGS("--kubeconfig", at("kc", kc, sizeof(kc))));
    wait_ready(&px);
    expect_serves(&px);
    first = runs("runs");
    cr_assert_geq(first, 1);
    /* a 2 s credential (1 to 2 s left when issued): new runs while requests go on, and the
     * proxy stays ready throughout */
    end = http_now_ms() + 5000;
    while (http_now_ms() < end) {
        cr_assert_eq(get(px.url, "/readyz", NULL, 0), 200);
        nap(100);
    }
    cr_assert_geq(runs("runs"), first + 2, "runs %d then %d", first, runs("runs"));
    cr_assert_leq(runs("runs"), first + 12, "one run per expiry, not per request: %d",
                  runs("runs"));
    stop_both(&px, &sim);
}

Test(credentials, a_refused_exec_token_runs_the_plugin_again)
{
    struct srv sim, px;
    char kc[600];

    sim_up(&sim, ARGS("--token", TOKEN));
    write_text("exec-token", "not-yet");
    exec_kubeconfig(sim.url, "");
    proxy_up(&px, ARGS("--kubeconfig", at("kc", kc, sizeof(kc))));
    wait_readyz(&px, 503, "401 Unauthorized: the exec plugin's token was refused");
    /* the identity provider now hands out the right token: the next 401 reruns the plugin */
    write_text("exec-token", TOKEN);
    wait_ready(&px);
    expect_serves(&px);
    stop_both(&px, &sim);
}

Test(credentials, a_failing_plugin_is_a_503_with_its_stderr_until_it_works)
{
    struct srv sim, px;
    char kc[600], body[4096];
    int n;

    sim_up(&sim, ARGS("--token", TOKEN));
    write_text("exec-token", TOKEN);
    write_text("fail", "error: the token service is down\n");
    exec_kubeconfig(sim.url, "");
    proxy_up(&px, ARGS("--kubeconfig", at("kc", kc, sizeof(kc))));
    wait_readyz(&px, 503, "not ready: upstream: exec plugin failed: exec: executable ");
    cr_assert_eq(get(px.url, "/readyz", body, sizeof(body)), 503);
    cr_assert(strstr(body, "file-token.sh failed with exit code 1; stderr: error: the token "
                           "service is down; see tests/data/execcred/README") != NULL,
              "%s", body);
    cr_assert(proc_log_has(px.p, "msg=\"exec credential plugin failed\""));
    /* requests needing the upstream get a 503 meanwhile, not an unauthenticated try */
    cr_assert_eq(get(px.url, "/version", body, sizeof(body)), 503, "%s", body);
    n = runs("runs");
    nap(1500);
    cr_assert_leq(runs("runs"), n + 2, "backoff: %d runs after %d", runs("runs"), n);
    cr_assert_eq(unlink(at("fail", kc, sizeof(kc))), 0);
    wait_ready(&px);
    expect_serves(&px);
    cr_assert(proc_log_has(px.p, "exec credential plugin recovered"));
    stop_both(&px, &sim);
}

/* ---- TLS ---------------------------------------------------------------------------- */

/* kwp sim serving https with <name>.crt, requiring TOKEN. */
static void tls_sim_up(struct srv *sim, const char *name)
{
    char crt[600], key[600], f[64];

    snprintf(f, sizeof(f), "%s.crt", name);
    at(f, crt, sizeof(crt));
    snprintf(f, sizeof(f), "%s.key", name);
    at(f, key, sizeof(key));
    sim_up(sim, ARGS("--token", TOKEN, "--tls-cert-file", crt, "--tls-key-file", key));
    cr_assert(strncmp(sim->url, "https://127.0.0.1:", 18) == 0, "%s", sim->url);
}

Test(credentials, https_with_certificate_authority_data_or_file)
{
    struct srv sim, px;
    char cluster[9000], kc[600];

    make_cert("srv", "IP:127.0.0.1");
    tls_sim_up(&sim, "srv");
    snprintf(cluster, sizeof(cluster), "server: '%s', certificate-authority-data: %s", sim.url,
             b64("srv"));
    kubeconfig("kc", cluster, "    token: " TOKEN "\n");
    proxy_up(&px, ARGS("--kubeconfig", at("kc", kc, sizeof(kc))));
    wait_ready(&px);
    expect_serves(&px);
    srv_stop(&px, "kwp proxy");
    /* a relative certificate-authority is resolved against the kubeconfig's directory */
    snprintf(cluster, sizeof(cluster), "server: '%s', certificate-authority: srv.crt", sim.url);
    kubeconfig("kc", cluster, "    token: " TOKEN "\n");
    proxy_up(&px, ARGS("--kubeconfig", kc));
    wait_ready(&px);
    stop_both(&px, &sim);
}

Test(credentials, a_wrong_ca_is_a_503_naming_the_tls_error_and_insecure_skips_it)
{
    struct srv sim, px;
    char cluster[9000], kc[600];

    make_cert("srv", "IP:127.0.0.1");
    make_cert("other", "IP:127.0.0.1");
    tls_sim_up(&sim, "srv");
    snprintf(cluster, sizeof(cluster), "server: '%s', certificate-authority-data: %s", sim.url,
             b64("other"));
    kubeconfig("kc", cluster, "    token: " TOKEN "\n");
    proxy_up(&px, ARGS("--kubeconfig", at("kc", kc, sizeof(kc))));
    wait_readyz(&px, 503,
                "not ready: upstream: TLS certificate verify failed: SSL certificate problem: ");
    cr_assert(proc_log_has(px.p, "certificate-authority"), "the log says what to fix");
    srv_stop(&px, "kwp proxy");
    snprintf(cluster, sizeof(cluster), "server: '%s', insecure-skip-tls-verify: true", sim.url);
    kubeconfig("kc", cluster, "    token: " TOKEN "\n");
    proxy_up(&px, ARGS("--kubeconfig", kc));
    wait_ready(&px);
    expect_serves(&px);
    stop_both(&px, &sim);
}

Test(credentials, tls_server_name_verifies_a_certificate_that_names_only_it)
{
    struct srv sim, px;
    char cluster[9000], kc[600];

    make_cert("srv", "DNS:kwp-upstream.test"); /* not 127.0.0.1 */
    tls_sim_up(&sim, "srv");
    snprintf(cluster, sizeof(cluster), "server: '%s', certificate-authority-data: %s", sim.url,
             b64("srv"));
    kubeconfig("kc", cluster, "    token: " TOKEN "\n");
    proxy_up(&px, ARGS("--kubeconfig", at("kc", kc, sizeof(kc))));
    wait_readyz(&px, 503, "upstream: TLS certificate verify failed: ");
    srv_stop(&px, "kwp proxy");
    snprintf(cluster, sizeof(cluster),
             "server: '%s', certificate-authority-data: %s, tls-server-name: kwp-upstream.test",
             sim.url, b64("srv"));
    kubeconfig("kc", cluster, "    token: " TOKEN "\n");
    proxy_up(&px, ARGS("--kubeconfig", kc));
    wait_ready(&px);
    expect_serves(&px);
    stop_both(&px, &sim);
}

/* ---- finding the kubeconfig --------------------------------------------------------- */

/* Two files for $KUBECONFIG: the first file's entries and current-context win. */
static void two_files(const char *server)
{
    char yaml[4096];

    snprintf(yaml, sizeof(yaml),
             "clusters:\n- name: c\n  cluster: {server: '%s'}\n"
             "users:\n- name: u\n  user: {token: " TOKEN "}\n"
             "contexts:\n- name: a\n  context: {cluster: c, user: u}\n"
             "current-context: a\n",
             server);
    write_text("one", yaml);
    write_text("two", "clusters:\n- name: c\n  cluster: {server: 'http://127.0.0.1:1'}\n"
                      "users:\n- name: u\n  user: {token: shadowed}\n"
                      "- name: v\n  user: {token: wrong}\n"
                      "contexts:\n- name: b\n  context: {cluster: c, user: v}\n"
                      "- name: d\n  context: {cluster: c, user: u}\n"
                      "current-context: b\n");
}

Test(credentials, kubeconfig_lists_merge_as_kubectl_merges_them_and_context_picks_one)
{
    struct srv sim, px;
    char list[2048], one[600], two[600];

    sim_up(&sim, ARGS("--token", TOKEN));
    two_files(sim.url);
    snprintf(list, sizeof(list), "%s:%s/missing:%s", at("one", one, sizeof(one)), dir,
             at("two", two, sizeof(two)));
    setenv("KUBECONFIG", list, 1);
    proxy_up(&px, NULL); /* current-context a, from the first file */
    wait_ready(&px);
    srv_stop(&px, "kwp proxy");
    proxy_up(&px, ARGS("--context", "b")); /* cluster c from the first file, user v */
    wait_readyz(&px, 503, "401 Unauthorized: the token was refused");
    srv_stop(&px, "kwp proxy");
    proxy_up(&px, ARGS("--context", "d")); /* user u from the first file, not "shadowed" */
    wait_ready(&px);
    stop_both(&px, &sim);
}

Test(credentials, bad_configurations_exit_non_zero_with_a_clear_message)
{
    char kc[600], err[4096];
    int st;

    kubeconfig("ap", "server: 'https://127.0.0.1:1'", "    auth-provider: {name: oidc}\n");
    st = run_to_exit(ARGS("--kubeconfig", at("ap", kc, sizeof(kc))), err, sizeof(err));
    cr_assert_eq(st, 1, "exit %d: %s", st, err);
    cr_assert(strstr(err, "kwp proxy: user \"u\" uses auth-provider \"oidc\", which client-go "
                          "removed in v1.26") != NULL,
              "%s", err);
    kubeconfig("kc", "server: 'http://127.0.0.1:1'", "    token: t\n");
    st = run_to_exit(ARGS("--kubeconfig", at("kc", kc, sizeof(kc)), "--context", "nope"), err,
                     sizeof(err));
    cr_assert_eq(st, 1, "exit %d: %s", st, err);
    cr_assert(strstr(err, "nope") != NULL, "the message names the context: %s", err);
    st = run_to_exit(ARGS("--kubeconfig", at("absent", kc, sizeof(kc))), err, sizeof(err));
    cr_assert_eq(st, 1, "exit %d: %s", st, err);
    cr_assert(strstr(err, kc) != NULL, "the message names the file: %s", err);
    write_text("broken", "clusters: [\n");
    st = run_to_exit(ARGS("--kubeconfig", at("broken", kc, sizeof(kc))), err, sizeof(err));
    cr_assert_eq(st, 1, "exit %d: %s", st, err);
    cr_assert(strstr(err, kc) != NULL, "the message names the file: %s", err);
}

Test(credentials, the_resolution_order_is_upstream_kubeconfig_env_incluster_home)
{
    struct srv sim, tsim, px;
    char cluster[512], good[600], bad[600], home_kc[600], sa[600], p[600];
    const char *port;

    sim_up(&sim, ARGS("--token", TOKEN));
    snprintf(cluster, sizeof(cluster), "server: '%s'", sim.url);
    kubeconfig("good", cluster, "    token: " TOKEN "\n");
    kubeconfig("bad", "server: 'https://127.0.0.1:1'", "    auth-provider: {name: gcp}\n");
    at("good", good, sizeof(good));
    at("bad", bad, sizeof(bad));

    /* --upstream wins over --kubeconfig (a kubeconfig that would not even load) */
    proxy_up(&px, ARGS("--upstream", sim.url, "--token", TOKEN, "--kubeconfig", bad));
    wait_ready(&px);
    srv_stop(&px, "kwp proxy");
    /* --kubeconfig wins over $KUBECONFIG */
    setenv("KUBECONFIG", bad, 1);
    proxy_up(&px, ARGS("--kubeconfig", good));
    wait_ready(&px);
    srv_stop(&px, "kwp proxy");
    /* $KUBECONFIG wins over ~/.kube/config */
    sh("mkdir -p '%s/.kube' && cp '%s' '%s/.kube/config'", dir, bad, dir);
    setenv("KUBECONFIG", good, 1);
    proxy_up(&px, NULL);
    wait_ready(&px);
    srv_stop(&px, "kwp proxy");
    unsetenv("KUBECONFIG");

    /* the in-cluster service account goes before ~/.kube/config (still the bad one) */
    make_cert("srv", "IP:127.0.0.1");
    tls_sim_up(&tsim, "srv");
    port = strrchr(tsim.url, ':') + 1;
    snprintf(sa, sizeof(sa), "%s/root/var/run/secrets/kubernetes.io/serviceaccount", dir);
    sh("mkdir -p '%s' && cp '%s/srv.crt' '%s/ca.crt' && printf 'old' >'%s/token'", sa, dir, sa, sa);
    snprintf(p, sizeof(p), "%s/root", dir);
    setenv("KWP_INCLUSTER_ROOT", p, 1);
    setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", port, 1);
    proxy_up(&px, NULL);
    wait_readyz(&px, 503, "401 Unauthorized: the token from the token file was refused");
    cr_assert(proc_log_has(px.p, "using the in-cluster service account"));
    /* the kubelet rotates the token: a new file swapped in */
    sh("printf '%s' >'%s/token.new' && mv '%s/token.new' '%s/token'", TOKEN, sa, sa, sa);
    wait_ready(&px);
    expect_serves(&px);
    srv_stop(&px, "kwp proxy");
    srv_stop(&tsim, "kwp sim (https)");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");

    /* ~/.kube/config is used when nothing comes before it */
    sh("cp '%s' '%s/.kube/config'", good, dir);
    at(".kube/config", home_kc, sizeof(home_kc));
    proxy_up(&px, NULL);
    wait_ready(&px);
    cr_assert(proc_log_has(px.p, home_kc), "the log names the file");
    stop_both(&px, &sim);
}
