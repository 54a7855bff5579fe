/*
 * test_execcred.c - proxy/execcred.h, black-box, with the small plugins of tests/data/execcred/
 * (token.sh, cert.sh, fail.sh, hang.sh, info.sh) run for real: the token kept until its expiry,
 * an expired one run again, certificate and key, a wrong apiVersion, a failing plugin's stderr
 * and install hint, a hanging one killed and reaped at the timeout, one rerun for any number
 * of concurrent callers after a 401, backoff after a failure, and KUBERNETES_EXEC_INFO, args,
 * env and stdin as the plugin saw them. execcred_parse gets the ExecCredential edge cases.
 * Targets come from kubeconfig text through proxy/kubeconfig.h; each test has its own mkdtemp.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proxy/execcred.h"
#include "proxy/kubeconfig.h"

static char dir[256];
static char err[2048];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/kwp-execcred-XXXXXX");
    cr_assert(mkdtemp(dir) != NULL);
    err[0] = '\0';
}

static void teardown(void)
{
    char cmd[300];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    (void)!system(cmd);
}

TestSuite(execcred, .init = setup, .fini = teardown, .timeout = 60);

/* tests/data/execcred, from $KWP_SRC or from this file's path. */
static const char *data_dir(void)
{
    static char path[1024];
    const char *src = getenv("KWP_SRC");
    const char *here = __FILE__;
    const char *cut = strstr(here, "tests/unit/proxy/");

    if (src) {
        snprintf(path, sizeof(path), "%s/tests/data/execcred", src);
    } else {
        cr_assert(cut != NULL);
        snprintf(path, sizeof(path), "%.*stests/data/execcred", (int)(cut - here), here);
    }
    return path;
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

    nanosleep(&ts, NULL);
}

/* Lines in <dir>/<name>: how often a plugin ran. */
static int count_runs(const char *name)
{
    char path[600];
    char line[64];
    int n = 0;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "r");
    if (!f) {
        return 0;
    }
    while (fgets(line, sizeof(line), f)) {
        n++;
    }
    fclose(f);
    return n;
}

static char *slurp(const char *suffix)
{
    static char buf[8192];
    char path[600];
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "%s/out%s", dir, suffix);
    f = fopen(path, "r");
    cr_assert(f != NULL, "plugin wrote no %s", path);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/*
 * A target whose user runs <command> with <args> (a YAML flow list) and <env> (extra YAML
 * list items, each "{name: N, value: V}"); <cluster> is the rest of the cluster mapping and
 * <exec_extra> more exec fields. The kubeconfig "lives" in tests/data/execcred, so
 * "./token.sh" resolves there. KWP_COUNTER is always <dir>/runs.
 */
static struct kubeconfig_target *target(const char *command, const char *args, const char *env,
                                        const char *cluster, const char *exec_extra)
{
    struct kubeconfig *kc = kubeconfig_new();
    struct kubeconfig_target *t = NULL;
    char origin[1200];
    char yaml[4096];
    int rc;

    snprintf(origin, sizeof(origin), "%s/kubeconfig", data_dir());
    snprintf(yaml, sizeof(yaml),
             "clusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:6443'%s%s}\n"
             "users:\n- name: u\n  user:\n    exec:\n"
             "      apiVersion: client.authentication.k8s.io/v1\n"
             "      interactiveMode: Never\n"
             "      command: %s\n      args: %s\n"
             "      env: [{name: KWP_COUNTER, value: '%s/runs'}%s%s]\n%s"
             "contexts:\n- name: x\n  context: {cluster: c, user: u}\n",
             cluster ? ", " : "", cluster ? cluster : "", command, args ? args : "[]", dir,
             env ? ", " : "", env ? env : "", exec_extra ? exec_extra : "");
    rc = kubeconfig_add_buffer(kc, yaml, strlen(yaml), origin, err, sizeof(err));
    cr_assert_eq(rc, 0, "kubeconfig: %s\n%s", err, yaml);
    rc = kubeconfig_resolve(kc, "x", &t, err, sizeof(err));
    cr_assert_eq(rc, 0, "resolve: %s", err);
    kubeconfig_free(kc);
    return t;
}

static struct execcred *cache(const struct kubeconfig_target *t, const struct execcred_opts *o)
{
    struct execcred *ec = execcred_new(t, o, err, sizeof(err));

    cr_assert(ec != NULL, "execcred_new: %s", err);
    return ec;
}

static void get_ok(struct execcred *ec, struct execcred_cred *c)
{
    int rc = execcred_get(ec, c, err, sizeof(err));

    cr_assert_eq(rc, 0, "execcred_get: %d %s", rc, err);
}

/* ---- tokens and expiry -------------------------------------------------------------------- */

Test(execcred, token_is_kept_until_it_expires)
{
    struct kubeconfig_target *t =
        target("./token.sh", NULL, "{name: KWP_TTL, value: '3600'}", NULL, NULL);
    struct execcred *ec = cache(t, NULL);
    struct execcred_cred c;
    time_t wall = time(NULL);

    for (int i = 0; i < 3; i++) {
        get_ok(ec, &c);
        cr_assert_str_eq(c.token, "tok-1");
        cr_assert_null(c.cert_pem);
        cr_assert_eq(c.generation, 1);
        cr_assert(c.expiry_ms / 1000 >= wall + 3600 - 5 && c.expiry_ms / 1000 <= wall + 3600 + 5,
                  "expiry %lld", (long long)c.expiry_ms);
        execcred_cred_fini(&c);
    }
    cr_assert_eq(count_runs("runs"), 1);
    cr_assert_eq(execcred_runs(ec), 1);
    execcred_free(ec);
    kubeconfig_target_free(t);
}

Test(execcred, no_expiry_means_forever)
{
    struct kubeconfig_target *t = target("./token.sh", NULL, NULL, NULL, NULL);
    struct execcred *ec = cache(t, NULL);
    struct execcred_cred c;

    get_ok(ec, &c);
    cr_assert_eq(c.expiry_ms, 0);
    execcred_cred_fini(&c);
    get_ok(ec, &c);
    execcred_cred_fini(&c);
    cr_assert_eq(count_runs("runs"), 1);
    execcred_free(ec);
    kubeconfig_target_free(t);
}

Test(execcred, expired_token_runs_again)
{
    struct kubeconfig_target *t =
        target("./token.sh", NULL, "{name: KWP_TTL, value: '-60'}", NULL, NULL);
    struct execcred *ec = cache(t, NULL);
    struct execcred_cred c;

    for (int i = 1; i <= 3; i++) {
        char want[16];

        get_ok(ec, &c);
        snprintf(want, sizeof(want), "tok-%d", i);
        cr_assert_str_eq(c.token, want); /* handed out once, as client-go does */
        cr_assert_eq(c.generation, (uint64_t)i);
        execcred_cred_fini(&c);
    }
    cr_assert_eq(count_runs("runs"), 3);
    execcred_free(ec);
    kubeconfig_target_free(t);
}

Test(execcred, short_lived_token_is_refreshed_shortly_before_expiry)
{
    struct kubeconfig_target *t =
        target("./token.sh", NULL, "{name: KWP_TTL, value: '3'}", NULL, NULL);
    struct execcred *ec = cache(t, NULL);
    struct execcred_cred c;
    int64_t expiry;

    get_ok(ec, &c);
    expiry = c.expiry_ms;
    execcred_cred_fini(&c);
    get_ok(ec, &c);
    cr_assert_str_eq(c.token, "tok-1");
    execcred_cred_fini(&c);
    /* 3 s of life (whole seconds: 2-3 s left now): the refresh margin is at most 1 s, so
     * well before the expiry it is still the same token, and after it a new one */
    while (time(NULL) * 1000 < expiry - 1500) {
        nap_ms(50);
    }
    get_ok(ec, &c);
    cr_assert_str_eq(c.token, "tok-1");
    execcred_cred_fini(&c);
    while (time(NULL) * 1000 < expiry + 50) {
        nap_ms(50);
    }
    get_ok(ec, &c);
    cr_assert_str_eq(c.token, "tok-2");
    execcred_cred_fini(&c);
    cr_assert_eq(count_runs("runs"), 2);
    execcred_free(ec);
    kubeconfig_target_free(t);
}

Test(execcred, client_certificate_and_key)
{
    struct kubeconfig_target *t;
    struct execcred *ec;
    struct execcred_cred c;
    char cmd[1200];

    snprintf(cmd, sizeof(cmd), "%s/cert.sh", data_dir()); /* absolute */
    t = target(cmd, NULL, NULL, NULL, NULL);
    free(t->exec->api_version);
    t->exec->api_version = strdup("client.authentication.k8s.io/v1beta1");
    ec = cache(t, NULL);
    get_ok(ec, &c);
    cr_assert_null(c.token);
    cr_assert(strncmp(c.cert_pem, "-----BEGIN CERTIFICATE-----\n", 28) == 0, "%s", c.cert_pem);
    cr_assert(strncmp(c.key_pem, "-----BEGIN PRIVATE KEY-----\n", 28) == 0, "%s", c.key_pem);
    cr_assert_eq(c.expiry_ms, 0);
    execcred_cred_fini(&c);
    execcred_free(ec);
    kubeconfig_target_free(t);
}

Test(execcred, wrong_api_version_is_an_error)
{
    struct kubeconfig_target *t =
        target("./token.sh", NULL, "{name: KWP_API, value: client.authentication.k8s.io/v1beta1}",
               NULL, NULL);
    struct execcred *ec = cache(t, NULL);
    struct execcred_cred c;

    cr_assert_eq(execcred_get(ec, &c, err, sizeof(err)), -EPROTO);
    cr_assert_str_eq(err, "exec plugin is configured to use API version "
                          "client.authentication.k8s.io/v1, plugin returned version "
                          "client.authentication.k8s.io/v1beta1");
    cr_assert_null(c.token);
    execcred_free(ec);
    kubeconfig_target_free(t);
}

/* ---- failures ----------------------------------------------------------------------------- */

Test(execcred, non_zero_exit_reports_stderr_and_install_hint)
{
    struct kubeconfig_target *t =
        target("./fail.sh", NULL, NULL, NULL, "      installHint: ask your admin for fail.sh\n");
    struct execcred *ec = cache(t, NULL);
    struct execcred_cred c;

    cr_assert_eq(execcred_get(ec, &c, err, sizeof(err)), -EIO);
    cr_assert(strstr(err, "/tests/data/execcred/fail.sh failed with exit code 3; stderr: boom: "
                          "the identity provider said no; ask your admin for fail.sh") != NULL,
              "%s", err);
    cr_assert_null(c.token); /* the stdout of a failed run is never used */
    execcred_free(ec);
    kubeconfig_target_free(t);
}

Test(execcred, command_not_found_gives_the_install_hint)
{
    struct kubeconfig_target *t =
        target("kwp-no-such-plugin", "[a]", NULL, NULL, "      installHint: brew install it\n");
    struct execcred *ec = cache(t, NULL);
    struct execcred_cred c;

    cr_assert_eq(execcred_get(ec, &c, err, sizeof(err)), -ENOENT);
    cr_assert_str_eq(err, "exec: executable kwp-no-such-plugin not found: brew install it");
    execcred_free(ec);
    kubeconfig_target_free(t);
}

Test(execcred, hanging_plugin_is_killed_and_reaped_at_the_timeout)
{
    struct kubeconfig_target *t;
    struct execcred_opts o = {.timeout_ms = 400};
    struct execcred *ec;
    struct execcred_cred c;
    char args[600];
    int64_t t0;
    long pid = 0;
    FILE *f;

    snprintf(args, sizeof(args), "['%s/pid']", dir);
    t = target("./hang.sh", args, NULL, NULL, NULL);
    ec = cache(t, &o);
    t0 = now_ms();
    cr_assert_eq(execcred_get(ec, &c, err, sizeof(err)), -ETIMEDOUT);
    cr_assert(now_ms() - t0 < 5000, "took %lld ms", (long long)(now_ms() - t0));
    cr_assert(strstr(err, "timed out after 400 ms and was killed") != NULL, "%s", err);
    snprintf(args, sizeof(args), "%s/pid", dir);
    f = fopen(args, "r");
    cr_assert(f != NULL);
    cr_assert_eq(fscanf(f, "%ld", &pid), 1);
    fclose(f);
    /* reaped, not a zombie: the pid is gone */
    cr_assert_eq(kill((pid_t)pid, 0), -1);
    cr_assert_eq(errno, ESRCH);
    execcred_free(ec);
    kubeconfig_target_free(t);
}

Test(execcred, output_caps)
{
    struct kubeconfig_target *t = target("./token.sh", NULL, NULL, NULL, NULL);
    struct execcred_opts small_out = {.max_stdout = 16};
    struct execcred_opts small_err = {.max_stderr = 4};
    struct execcred *ec = cache(t, &small_out);
    struct execcred_cred c;

    cr_assert_eq(execcred_get(ec, &c, err, sizeof(err)), -EFBIG);
    cr_assert(strstr(err, "wrote more than 16 bytes to stdout") != NULL, "%s", err);
    execcred_free(ec);
    kubeconfig_target_free(t);
    t = target("./fail.sh", NULL, NULL, NULL, NULL);
    ec = cache(t, &small_err);
    cr_assert_eq(execcred_get(ec, &c, err, sizeof(err)), -EIO);
    cr_assert(strstr(err, "exit code 3; stderr: boom") != NULL && !strstr(err, "boom:"), "%s", err);
    execcred_free(ec);
    kubeconfig_target_free(t);
}

Test(execcred, failure_backs_off_exponentially)
{
    struct kubeconfig_target *t = target("./fail.sh", NULL, NULL, NULL, NULL);
    struct execcred_opts o = {.backoff_initial_ms = 500, .backoff_max_ms = 1500};
    struct execcred *ec = cache(t, &o);
    struct execcred_cred c;
    int64_t t0 = now_ms();

    cr_assert_eq(execcred_get(ec, &c, err, sizeof(err)), -EIO);
    cr_assert_eq(count_runs("runs"), 1);
    /* within the first 500 ms: the same error, no run */
    cr_assert_eq(execcred_get(ec, &c, err, sizeof(err)), -EIO);
    cr_assert(strstr(err, "exit code 3") && strstr(err, "next try in"), "%s", err);
    cr_assert_eq(count_runs("runs"), 1);
    while (now_ms() - t0 < 550) {
        nap_ms(20);
    }
    cr_assert_eq(execcred_get(ec, &c, err, sizeof(err)), -EIO);
    cr_assert_eq(count_runs("runs"), 2);
    /* now 1000 ms (doubled) */
    t0 = now_ms();
    nap_ms(400);
    cr_assert_eq(execcred_get(ec, &c, err, sizeof(err)), -EIO);
    cr_assert_eq(count_runs("runs"), 2);
    while (now_ms() - t0 < 1050) {
        nap_ms(20);
    }
    cr_assert_eq(execcred_get(ec, &c, err, sizeof(err)), -EIO);
    cr_assert_eq(count_runs("runs"), 3);
    /* 2000 ms would be next: capped at 1500 */
    t0 = now_ms();
    while (now_ms() - t0 < 1550) {
        nap_ms(20);
    }
    cr_assert_eq(execcred_get(ec, &c, err, sizeof(err)), -EIO);
    cr_assert_eq(count_runs("runs"), 4);
    cr_assert_eq(execcred_runs(ec), 4);
    execcred_free(ec);
    kubeconfig_target_free(t);
}

/* ---- concurrency and invalidation --------------------------------------------------------- */

struct caller {
    struct execcred *ec;
    pthread_barrier_t *go;
    int rc;
    struct execcred_cred c;
};

static void *call_get(void *arg)
{
    struct caller *cl = arg;
    char e[256];

    pthread_barrier_wait(cl->go);
    cl->rc = execcred_get(cl->ec, &cl->c, e, sizeof(e));
    return NULL;
}

/* <n> threads call execcred_get at once; every one must get generation <gen>. */
static void concurrent_gets(struct execcred *ec, int n, uint64_t gen)
{
    pthread_t th[16];
    struct caller cl[16];
    pthread_barrier_t go;

    cr_assert(n <= 16);
    pthread_barrier_init(&go, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        cl[i] = (struct caller){.ec = ec, .go = &go};
        cr_assert_eq(pthread_create(&th[i], NULL, call_get, &cl[i]), 0);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(cl[i].rc, 0);
        cr_assert_eq(cl[i].c.generation, gen, "caller %d got generation %llu", i,
                     (unsigned long long)cl[i].c.generation);
        execcred_cred_fini(&cl[i].c);
    }
    pthread_barrier_destroy(&go);
}

static void *call_invalidate(void *arg)
{
    struct caller *cl = arg;

    pthread_barrier_wait(cl->go);
    execcred_invalidate(cl->ec, 1);
    return NULL;
}

Test(execcred, concurrent_callers_share_one_run)
{
    struct kubeconfig_target *t =
        target("./token.sh", NULL, "{name: KWP_SLEEP, value: '0.3'}", NULL, NULL);
    struct execcred *ec = cache(t, NULL);

    concurrent_gets(ec, 12, 1);
    cr_assert_eq(count_runs("runs"), 1);
    execcred_free(ec);
    kubeconfig_target_free(t);
}

Test(execcred, concurrent_callers_share_one_run_even_of_an_expired_token)
{
    struct kubeconfig_target *t =
        target("./token.sh", NULL, "{name: KWP_SLEEP, value: '0.5'}, {name: KWP_TTL, value: '-60'}",
               NULL, NULL);
    struct execcred *ec = cache(t, NULL);

    concurrent_gets(ec, 8, 1);
    cr_assert_eq(count_runs("runs"), 1);
    execcred_free(ec);
    kubeconfig_target_free(t);
}

Test(execcred, many_401s_for_one_credential_cause_one_rerun)
{
    struct kubeconfig_target *t =
        target("./token.sh", NULL, "{name: KWP_SLEEP, value: '0.2'}", NULL, NULL);
    struct execcred *ec = cache(t, NULL);
    struct execcred_cred c;
    pthread_t th[8];
    struct caller cl[8];
    pthread_barrier_t go;

    get_ok(ec, &c);
    cr_assert_eq(c.generation, 1);
    execcred_cred_fini(&c);
    /* eight 401s answered to requests made with generation 1, at once */
    pthread_barrier_init(&go, NULL, 8);
    for (int i = 0; i < 8; i++) {
        cl[i] = (struct caller){.ec = ec, .go = &go};
        pthread_create(&th[i], NULL, call_invalidate, &cl[i]);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
    }
    pthread_barrier_destroy(&go);
    concurrent_gets(ec, 10, 2);
    cr_assert_eq(count_runs("runs"), 2);
    /* a late 401 for generation 1 changes nothing now */
    execcred_invalidate(ec, 1);
    get_ok(ec, &c);
    cr_assert_eq(c.generation, 2);
    cr_assert_str_eq(c.token, "tok-2");
    execcred_cred_fini(&c);
    cr_assert_eq(count_runs("runs"), 2);
    /* and a 401 for generation 2 means one more run */
    execcred_invalidate(ec, 2);
    get_ok(ec, &c);
    cr_assert_eq(c.generation, 3);
    execcred_cred_fini(&c);
    cr_assert_eq(count_runs("runs"), 3);
    execcred_free(ec);
    kubeconfig_target_free(t);
}

/* ---- what the plugin sees ----------------------------------------------------------------- */

Test(execcred, exec_info_args_env_and_stdin)
{
    struct kubeconfig_target *t;
    struct execcred *ec;
    struct execcred_cred c;
    char args[700];

    setenv("KWP_BAR", "from-parent", 1);
    setenv("KWP_FOO", "overridden", 1);
    snprintf(args, sizeof(args), "['%s/out', --flag, 'two words', '']", dir);
    t = target("./info.sh", args, "{name: KWP_FOO, value: 'from kubeconfig'}", NULL, NULL);
    ec = cache(t, NULL);
    get_ok(ec, &c);
    cr_assert_str_eq(c.token, "info-token");
    execcred_cred_fini(&c);
    cr_assert_str_eq(slurp(".info"), "{\"kind\":\"ExecCredential\",\"apiVersion\":"
                                     "\"client.authentication.k8s.io/v1\",\"spec\":"
                                     "{\"interactive\":false}}");
    cr_assert_str_eq(slurp(".args"), "--flag\ntwo words\n\n");
    cr_assert_str_eq(slurp(".env"), "from kubeconfig|from-parent\n");
    cr_assert_str_eq(slurp(".stdin"), "0\n");
    execcred_free(ec);
    kubeconfig_target_free(t);
}

Test(execcred, exec_info_with_cluster_info)
{
    struct kubeconfig_target *t;
    struct execcred *ec;
    struct execcred_cred c;
    char args[700];

    snprintf(args, sizeof(args), "['%s/out']", dir);
    t = target("./info.sh", args, NULL,
               "certificate-authority-data: 'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCg==', "
               "tls-server-name: api.example, proxy-url: 'http://proxy:3128', "
               "disable-compression: true, extensions: [{name: client.authentication.k8s.io/exec, "
               "extension: {audience: kwp, n: 3}}]",
               "      provideClusterInfo: true\n");
    ec = cache(t, NULL);
    get_ok(ec, &c);
    execcred_cred_fini(&c);
    cr_assert_str_eq(slurp(".info"),
                     "{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/"
                     "v1\",\"spec\":{\"cluster\":{\"server\":\"https://127.0.0.1:6443\","
                     "\"tls-server-name\":\"api.example\",\"certificate-authority-data\":"
                     "\"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCg==\",\"proxy-url\":"
                     "\"http://proxy:3128\",\"disable-compression\":true,\"config\":"
                     "{\"audience\":\"kwp\",\"n\":3}},\"interactive\":false}}");
    execcred_free(ec);
    kubeconfig_target_free(t);
}

Test(execcred, exec_info_reads_a_ca_file_and_sends_config_null)
{
    struct kubeconfig_target *t;
    struct execcred *ec;
    struct execcred_cred c;
    char args[700];
    char ca[600];
    char cluster[800];
    FILE *f;

    snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
    f = fopen(ca, "w");
    fputs("CA\n", f);
    fclose(f);
    snprintf(args, sizeof(args), "['%s/out']", dir);
    snprintf(cluster, sizeof(cluster),
             "certificate-authority: '%s', insecure-skip-tls-verify: "
             "false",
             ca);
    t = target("./info.sh", args, NULL, cluster, "      provideClusterInfo: true\n");
    ec = cache(t, NULL);
    get_ok(ec, &c);
    execcred_cred_fini(&c);
    cr_assert_str_eq(slurp(".info"),
                     "{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/"
                     "v1\",\"spec\":{\"cluster\":{\"server\":\"https://127.0.0.1:6443\","
                     "\"certificate-authority-data\":\"Q0EK\",\"config\":null},"
                     "\"interactive\":false}}");
    execcred_free(ec);
    kubeconfig_target_free(t);
}

Test(execcred, always_interactive_is_refused)
{
    struct kubeconfig_target *t = target("./token.sh", NULL, NULL, NULL, NULL);

    t->exec->interactive = KUBECONFIG_INTERACTIVE_ALWAYS;
    cr_assert_null(execcred_new(t, NULL, err, sizeof(err)));
    cr_assert(strstr(err, "interactiveMode Always needs a terminal, and kwp never has one"), "%s",
              err);
    kubeconfig_target_free(t);
}

/* ---- the ExecCredential itself ------------------------------------------------------------ */

static const char *V1 = "client.authentication.k8s.io/v1";

static int parse(const char *json, struct execcred_cred *c)
{
    return execcred_parse(json, strlen(json), V1, c, err, sizeof(err));
}

Test(execcred, parse_timestamps)
{
    struct execcred_cred c;
    static const struct {
        const char *ts;
        int64_t ms;
    } ok[] = {
        {"1970-01-01T00:00:01Z", 1000},
        {"2026-12-01T20:00:00Z", 1796155200000},
        {"2026-12-01T21:30:00+01:30", 1796155200000},
        {"2026-12-01T18:00:00-02:00", 1796155200000},
        {"2026-12-01T20:00:00.250Z", 1796155200250},
        {"2026-12-01T20:00:00.999999999Z", 1796155200999},
        {"2024-02-29T00:00:00Z", 1709164800000},
        {"1969-12-31T23:59:59Z", -1000},
    };
    static const char *const bad[] = {
        "2026-12-01 20:00:00Z",
        "2026-12-01T20:00:00",
        "2026-13-01T20:00:00Z",
        "2025-02-29T00:00:00Z",
        "2026-12-01T24:00:00Z",
        "2026-12-01T20:00:60Z",
        "2026-12-01T20:00:00.Z",
        "2026-12-01T20:00:00+0100",
        "2026-12-01T20:00:00Zjunk",
        "26-12-01T20:00:00Z",
        "",
    };
    char json[512];

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        snprintf(json, sizeof(json),
                 "{\"kind\":\"ExecCredential\",\"apiVersion\":\"%s\",\"status\":{\"token\":\"t\","
                 "\"expirationTimestamp\":\"%s\"}}",
                 V1, ok[i].ts);
        cr_assert_eq(parse(json, &c), 0, "%s: %s", ok[i].ts, err);
        cr_assert_eq(c.expiry_ms, ok[i].ms, "%s: %lld", ok[i].ts, (long long)c.expiry_ms);
        execcred_cred_fini(&c);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(json, sizeof(json),
                 "{\"kind\":\"ExecCredential\",\"apiVersion\":\"%s\",\"status\":{\"token\":\"t\","
                 "\"expirationTimestamp\":\"%s\"}}",
                 V1, bad[i]);
        if (bad[i][0] == '\0') {
            cr_assert_eq(parse(json, &c), 0, "empty is absent"); /* Go: zero value */
            cr_assert_eq(c.expiry_ms, 0);
            execcred_cred_fini(&c);
            continue;
        }
        cr_assert_eq(parse(json, &c), -EPROTO, "%s accepted", bad[i]);
        cr_assert(strstr(err, "is not RFC 3339") != NULL, "%s", err);
    }
}

Test(execcred, parse_errors)
{
    struct execcred_cred c;
    static const struct {
        const char *json;
        const char *msg;
    } cases[] = {
        {"", "not a JSON object"},
        {"[1]", "not a JSON object"},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\"}",
         "exec plugin didn't return a status field"},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\","
         "\"status\":{}}",
         "exec plugin didn't return a token or cert/key pair"},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\","
         "\"status\":{\"clientCertificateData\":\"x\"}}",
         "exec plugin returned only certificate or key, not both"},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\","
         "\"status\":{\"clientCertificateData\":\"x\",\"clientKeyData\":\"y\"}}",
         "failed parsing client key/certificate"},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\","
         "\"status\":{\"token\":7}}",
         "status fields must be strings"},
        {"{\"kind\":\"Secret\",\"apiVersion\":\"client.authentication.k8s.io/v1\","
         "\"status\":{\"token\":\"t\"}}",
         "kind is \"Secret\", not ExecCredential"},
        {"{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}",
         "plugin returned version (none)"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cr_assert_eq(parse(cases[i].json, &c), -EPROTO, "%s", cases[i].json);
        cr_assert(strstr(err, cases[i].msg) != NULL, "want \"%s\" in \"%s\"", cases[i].msg, err);
        cr_assert_null(c.token);
    }
}

/* Reads tests/data/execcred/<name> as a JSON string body (newlines as \n). */
static void json_pem(const char *name, char *out, size_t out_len)
{
    char path[1200];
    size_t w = 0;
    FILE *f;
    int ch;

    snprintf(path, sizeof(path), "%s/%s", data_dir(), name);
    f = fopen(path, "r");
    cr_assert(f != NULL, "%s", path);
    while ((ch = fgetc(f)) != EOF && w + 3 < out_len) {
        if (ch == '\n') {
            out[w++] = '\\';
            out[w++] = 'n';
        } else {
            out[w++] = (char)ch;
        }
    }
    out[w] = '\0';
    fclose(f);
}

Test(execcred, parse_checks_that_the_key_matches_the_certificate)
{
    struct execcred_cred c;
    char cert[2048];
    char key[1024];
    char other[1024];
    char json[8192];

    json_pem("client.crt", cert, sizeof(cert));
    json_pem("client.key", key, sizeof(key));
    json_pem("other.key", other, sizeof(other));
    snprintf(json, sizeof(json),
             "{\"kind\":\"ExecCredential\",\"apiVersion\":\"%s\",\"status\":{"
             "\"clientCertificateData\":\"%s\",\"clientKeyData\":\"%s\",\"token\":\"both\"}}",
             V1, cert, key);
    cr_assert_eq(parse(json, &c), 0, "%s", err);
    cr_assert_str_eq(c.token, "both"); /* a token and a certificate: both are used */
    cr_assert_not_null(c.cert_pem);
    execcred_cred_fini(&c);
    snprintf(json, sizeof(json),
             "{\"kind\":\"ExecCredential\",\"apiVersion\":\"%s\",\"status\":{"
             "\"clientCertificateData\":\"%s\",\"clientKeyData\":\"%s\"}}",
             V1, cert, other);
    cr_assert_eq(parse(json, &c), -EPROTO);
    cr_assert(strstr(err, "failed parsing client key/certificate") != NULL, "%s", err);
}
