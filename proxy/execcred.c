/*
 * execcred.c - running exec credential plugins and caching what they print (see execcred.h).
 *
 * The cache is one mutex and one condition variable around a struct execcred_cred. A caller
 * that finds no usable credential and no run in flight becomes the runner: it marks
 * `running`, unlocks, spawns and reads the plugin, parses, locks again, publishes the result
 * (or the error and the next retry time) and broadcasts; callers that arrive meanwhile wait on
 * the condition unless the old credential is still valid. Everything the runner reads outside
 * the lock (spec, argv, the KUBERNETES_EXEC_INFO text) is immutable after execcred_new.
 * Includes cJSON (the protocol), OpenSSL (base64, PEM checks) and proxy/log.h.
 */
#define _GNU_SOURCE /* pipe2, posix_spawn_file_actions_addclosefrom_np */
#include "proxy/execcred.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "cache/bug.h"
#include "proxy/log.h"

extern char **environ;

#define EXECCRED_INFO_ENV "KUBERNETES_EXEC_INFO"
#define EXECCRED_V1 "client.authentication.k8s.io/v1"
#define EXECCRED_V1BETA1 "client.authentication.k8s.io/v1beta1"
#define EXECCRED_ERR_MAX 1024 /* the kept message of the last failure */

struct execcred {
    /* immutable after execcred_new */
    char *api_version;
    char *command;
    char **argv;      /* command, args..., NULL */
    char **extra_env; /* "NAME=value" for each kubeconfig env entry, then KUBERNETES_EXEC_INFO */
    size_t extra_env_len;
    char *install_hint; /* or NULL */
    struct execcred_opts o;

    pthread_mutex_t mu;
    pthread_cond_t done;             /* broadcast when a run ends */
    bool running;                    /* under mu: a runner is between unlock and publish */
    struct execcred_cred cur;        /* under mu: valid when have */
    bool have;                       /* under mu */
    bool stale;                      /* under mu: cur was invalidated after a 401 */
    int64_t obtained_ms;             /* under mu: wall clock when cur arrived */
    uint64_t generation;             /* under mu: of cur; counts successful runs */
    uint64_t runs;                   /* under mu */
    int last_rc;                     /* under mu: 0, or the last run's error */
    char last_err[EXECCRED_ERR_MAX]; /* under mu */
    int64_t retry_at_ms;             /* under mu: monotonic; no run before it after a failure */
    int64_t backoff_ms;              /* under mu: the next failure's wait */
};

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

void execcred_cred_fini(struct execcred_cred *c)
{
    if (!c) {
        return;
    }
    free(c->token);
    free(c->cert_pem);
    free(c->key_pem);
    memset(c, 0, sizeof(*c));
}

static void cred_copy(struct execcred_cred *dst, const struct execcred_cred *src)
{
    dst->token = dup_or_null(src->token);
    dst->cert_pem = dup_or_null(src->cert_pem);
    dst->key_pem = dup_or_null(src->key_pem);
    dst->expiry_ms = src->expiry_ms;
    dst->generation = src->generation;
}

/* ---- the ExecCredential ------------------------------------------------------------------- */

static bool is_leap(long y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Reads exactly <n> digits at *<p>. */
static bool digits(const char **p, int n, long *out)
{
    long v = 0;

    for (int i = 0; i < n; i++) {
        if ((*p)[i] < '0' || (*p)[i] > '9') {
            return false;
        }
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return true;
}

/* Go's time.Parse(time.RFC3339, s) (fractional seconds allowed) to ms since the epoch. */
static bool parse_rfc3339(const char *s, int64_t *out_ms)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const char *p = s;
    long y, mo, d, h, mi, sec, oh = 0, om = 0;
    int64_t frac_ms = 0;
    int64_t days;
    int sign = 0;

    if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
        !digits(&p, 2, &d) || *p++ != 'T' || !digits(&p, 2, &h) || *p++ != ':' ||
        !digits(&p, 2, &mi) || *p++ != ':' || !digits(&p, 2, &sec)) {
        return false;
    }
    if (*p == '.') {
        int64_t scale = 100;

        p++;
        if (*p < '0' || *p > '9') {
            return false;
        }
        while (*p >= '0' && *p <= '9') {
            frac_ms += (*p - '0') * scale;
            scale /= 10;
            p++;
        }
    }
    if (*p == 'Z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p == '+' ? 1 : -1;
        p++;
        if (!digits(&p, 2, &oh) || *p++ != ':' || !digits(&p, 2, &om) || oh > 23 || om > 59) {
            return false;
        }
    } else {
        return false;
    }
    if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && is_leap(y)) ||
        h > 23 || mi > 59 || sec > 59) {
        return false;
    }
    /* days from 1970-01-01 to y-mo-d (proleptic Gregorian; Howard Hinnant's algorithm) */
    {
        long yy = mo <= 2 ? y - 1 : y;
        long era = (yy >= 0 ? yy : yy - 399) / 400;
        long yoe = yy - era * 400;
        long doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
        long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

        days = (int64_t)era * 146097 + doe - 719468;
    }
    *out_ms =
        ((days * 86400 + h * 3600 + mi * 60 + sec) - sign * (oh * 3600 + om * 60)) * 1000 + frac_ms;
    return true;
}

/* A string member of <obj>: NULL when absent, null or "" (Go's zero value); -EPROTO when it
 * is another type. */
static int json_str(const cJSON *obj, const char *key, const char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    *out = NULL;
    if (!v || cJSON_IsNull(v)) {
        return 0;
    }
    if (!cJSON_IsString(v)) {
        return -EPROTO;
    }
    *out = v->valuestring[0] ? v->valuestring : NULL;
    return 0;
}

/* tls.X509KeyPair's checks: both parse as PEM and the key belongs to the certificate. */
static bool key_pair_ok(const char *cert_pem, const char *key_pem)
{
    BIO *cb = BIO_new_mem_buf(cert_pem, -1);
    BIO *kb = BIO_new_mem_buf(key_pem, -1);
    X509 *cert = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
    EVP_PKEY *key = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
    bool ok = cert && key && X509_check_private_key(cert, key) == 1;

    EVP_PKEY_free(key);
    X509_free(cert);
    BIO_free(kb);
    BIO_free(cb);
    return ok;
}

int execcred_parse(const char *buf, size_t len, const char *api_version, struct execcred_cred *out,
                   char *err, size_t err_len)
{
    cJSON *root = cJSON_ParseWithLength(buf, len);
    const cJSON *status;
    const char *kind = NULL;
    const char *version = NULL;
    const char *token = NULL;
    const char *cert = NULL;
    const char *key = NULL;
    const char *exp = NULL;
    int64_t expiry = 0;
    int rc = -EPROTO;

    memset(out, 0, sizeof(*out));
    if (!cJSON_IsObject(root)) {
        snprintf(err, err_len, "exec plugin: decoding stdout: not a JSON object");
        goto out;
    }
    if (json_str(root, "kind", &kind) != 0 || json_str(root, "apiVersion", &version) != 0) {
        snprintf(err, err_len, "exec plugin: decoding stdout: kind and apiVersion must be strings");
        goto out;
    }
    if (!version || strcmp(version, api_version) != 0) {
        snprintf(err, err_len,
                 "exec plugin is configured to use API version %s, plugin returned version %.100s",
                 api_version, version ? version : "(none)");
        goto out;
    }
    if (!kind || strcmp(kind, "ExecCredential") != 0) {
        snprintf(err, err_len,
                 "exec plugin: decoding stdout: kind is \"%.100s\", not ExecCredential",
                 kind ? kind : "");
        goto out;
    }
    status = cJSON_GetObjectItemCaseSensitive(root, "status");
    if (!status || cJSON_IsNull(status)) {
        snprintf(err, err_len, "exec plugin didn't return a status field");
        goto out;
    }
    if (!cJSON_IsObject(status) || json_str(status, "token", &token) != 0 ||
        json_str(status, "clientCertificateData", &cert) != 0 ||
        json_str(status, "clientKeyData", &key) != 0 ||
        json_str(status, "expirationTimestamp", &exp) != 0) {
        snprintf(err, err_len, "exec plugin: decoding stdout: status fields must be strings");
        goto out;
    }
    if (!token && !cert && !key) {
        snprintf(err, err_len, "exec plugin didn't return a token or cert/key pair");
        goto out;
    }
    if (!cert != !key) {
        snprintf(err, err_len, "exec plugin returned only certificate or key, not both");
        goto out;
    }
    if (cert && !key_pair_ok(cert, key)) {
        snprintf(err, err_len,
                 "exec plugin: failed parsing client key/certificate: not a PEM certificate and "
                 "its private key");
        goto out;
    }
    if (exp && !parse_rfc3339(exp, &expiry)) {
        snprintf(err, err_len,
                 "exec plugin: decoding stdout: expirationTimestamp \"%.64s\" is not RFC 3339",
                 exp);
        goto out;
    }
    if (exp && expiry == 0) {
        expiry = 1; /* 0 means "never"; the epoch itself is simply expired */
    }
    out->token = dup_or_null(token);
    out->cert_pem = dup_or_null(cert);
    out->key_pem = dup_or_null(key);
    out->expiry_ms = expiry;
    rc = 0;
out:
    cJSON_Delete(root);
    return rc;
}

/* ---- KUBERNETES_EXEC_INFO ----------------------------------------------------------------- */

static char *b64_encode(const char *data, size_t len)
{
    char *out = xmalloc(4 * ((len + 2) / 3) + 1);

    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)data, (int)len);
    return out;
}

/* Reads a whole small file (the CA) into memory; -EFBIG past <cap>. */
static int read_small_file(const char *path, size_t cap, char **out, size_t *out_len)
{
    char *buf = xmalloc(cap + 1);
    size_t len = 0;
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int e;

    if (fd == -1) {
        e = errno;
        free(buf);
        return -e;
    }
    while (len <= cap) {
        n = read(fd, buf + len, cap + 1 - len);
        if (n == -1) {
            e = errno;
            if (e == EINTR) {
                continue;
            }
            close(fd);
            free(buf);
            return -e;
        }
        if (n == 0) {
            break;
        }
        len += (size_t)n;
    }
    close(fd);
    if (len > cap) {
        free(buf);
        return -EFBIG;
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return 0;
}

/*
 * The ExecCredential client-go passes in KUBERNETES_EXEC_INFO, members in Go's order:
 * {"kind","apiVersion","spec":{["cluster":{server, tls-server-name, insecure-skip-tls-verify,
 * certificate-authority-data, proxy-url, disable-compression, config}],"interactive":false}}
 * with omitempty fields left out and config null when the cluster has no exec extension.
 */
static int exec_info(const struct kubeconfig_target *t, char **out, char *err, size_t err_len)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *spec = cJSON_CreateObject();
    char *ca = NULL;
    size_t ca_len = 0;
    int rc = 0;

    cJSON_AddStringToObject(root, "kind", "ExecCredential");
    cJSON_AddStringToObject(root, "apiVersion", t->exec->api_version);
    cJSON_AddItemToObject(root, "spec", spec);
    if (t->exec->provide_cluster_info) {
        cJSON *cl = cJSON_CreateObject();

        cJSON_AddItemToObject(spec, "cluster", cl);
        cJSON_AddStringToObject(cl, "server", t->server ? t->server : "");
        if (t->tls_server_name) {
            cJSON_AddStringToObject(cl, "tls-server-name", t->tls_server_name);
        }
        if (t->insecure) {
            cJSON_AddTrueToObject(cl, "insecure-skip-tls-verify");
        }
        if (t->ca_data && t->ca_data_len > 0) {
            ca = b64_encode(t->ca_data, t->ca_data_len);
        } else if (t->ca_file) {
            char *pem = NULL;

            rc = read_small_file(t->ca_file, EXECCRED_MAX_CA_BYTES, &pem, &ca_len);
            if (rc != 0) {
                snprintf(err, err_len, "exec plugin: cannot read certificate-authority %s: %s",
                         t->ca_file, strerror(-rc));
                goto out;
            }
            ca = ca_len > 0 ? b64_encode(pem, ca_len) : NULL;
            free(pem);
        }
        if (ca) {
            cJSON_AddStringToObject(cl, "certificate-authority-data", ca);
        }
        if (t->proxy_url) {
            cJSON_AddStringToObject(cl, "proxy-url", t->proxy_url);
        }
        if (t->disable_compression) {
            cJSON_AddTrueToObject(cl, "disable-compression");
        }
        cJSON_AddItemToObject(cl, "config",
                              t->exec_cluster_config ? cJSON_CreateRaw(t->exec_cluster_config)
                                                     : cJSON_CreateNull());
    }
    cJSON_AddFalseToObject(spec, "interactive");
    *out = cJSON_PrintUnformatted(root);
    if (!*out) {
        rc = -ENOMEM;
        snprintf(err, err_len, "exec plugin: out of memory");
    }
out:
    free(ca);
    cJSON_Delete(root);
    return rc;
}

/* ---- construction ------------------------------------------------------------------------- */

static char *env_entry(const char *name, const char *value)
{
    size_t len = strlen(name) + strlen(value) + 2;
    char *e = xmalloc(len);

    snprintf(e, len, "%s=%s", name, value);
    return e;
}

struct execcred *execcred_new(const struct kubeconfig_target *t, const struct execcred_opts *o,
                              char *err, size_t err_len)
{
    const struct kubeconfig_exec *x = t->exec;
    struct execcred *ec;
    char *info = NULL;
    pthread_condattr_t ca;

    if (!x) {
        snprintf(err, err_len, "user \"%s\" has no exec plugin", t->user ? t->user : "");
        return NULL;
    }
    if (x->interactive == KUBECONFIG_INTERACTIVE_ALWAYS) {
        snprintf(err, err_len,
                 "exec plugin %s: interactiveMode Always needs a terminal, and kwp never has one "
                 "(use Never or IfAvailable)",
                 x->command);
        return NULL;
    }
    if (!x->api_version || (strcmp(x->api_version, EXECCRED_V1) != 0 &&
                            strcmp(x->api_version, EXECCRED_V1BETA1) != 0)) {
        snprintf(err, err_len, "exec plugin: invalid apiVersion \"%s\"",
                 x->api_version ? x->api_version : "");
        return NULL;
    }
    if (exec_info(t, &info, err, err_len) != 0) {
        return NULL;
    }
    ec = xcalloc(1, sizeof(*ec));
    ec->api_version = xstrdup(x->api_version);
    ec->command = xstrdup(x->command);
    ec->argv = xcalloc(x->args_len + 2, sizeof(*ec->argv));
    ec->argv[0] = xstrdup(x->command);
    for (size_t i = 0; i < x->args_len; i++) {
        ec->argv[i + 1] = xstrdup(x->args[i]);
    }
    ec->extra_env = xcalloc(x->env_len + 1, sizeof(*ec->extra_env));
    for (size_t i = 0; i < x->env_len; i++) {
        ec->extra_env[i] = env_entry(x->env[i].name, x->env[i].value);
    }
    ec->extra_env[x->env_len] = env_entry(EXECCRED_INFO_ENV, info);
    ec->extra_env_len = x->env_len + 1;
    free(info);
    ec->install_hint = dup_or_null(x->install_hint);
    if (o) {
        ec->o = *o;
    }
    ec->o.timeout_ms = ec->o.timeout_ms > 0 ? ec->o.timeout_ms : EXECCRED_TIMEOUT_MS_DEFAULT;
    ec->o.max_stdout = ec->o.max_stdout > 0 ? ec->o.max_stdout : EXECCRED_MAX_STDOUT_DEFAULT;
    ec->o.max_stderr = ec->o.max_stderr > 0 ? ec->o.max_stderr : EXECCRED_MAX_STDERR_DEFAULT;
    ec->o.refresh_early_ms =
        ec->o.refresh_early_ms > 0 ? ec->o.refresh_early_ms : EXECCRED_REFRESH_EARLY_MS_DEFAULT;
    ec->o.backoff_initial_ms = ec->o.backoff_initial_ms > 0 ? ec->o.backoff_initial_ms
                                                            : EXECCRED_BACKOFF_INITIAL_MS_DEFAULT;
    ec->o.backoff_max_ms =
        ec->o.backoff_max_ms > 0 ? ec->o.backoff_max_ms : EXECCRED_BACKOFF_MAX_MS_DEFAULT;
    ec->backoff_ms = ec->o.backoff_initial_ms;
    BUG_ON(pthread_mutex_init(&ec->mu, NULL) != 0);
    BUG_ON(pthread_condattr_init(&ca) != 0);
    BUG_ON(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0);
    BUG_ON(pthread_cond_init(&ec->done, &ca) != 0);
    pthread_condattr_destroy(&ca);
    return ec;
}

void execcred_free(struct execcred *ec)
{
    if (!ec) {
        return;
    }
    BUG_ON(ec->running);
    pthread_cond_destroy(&ec->done);
    pthread_mutex_destroy(&ec->mu);
    execcred_cred_fini(&ec->cur);
    for (size_t i = 0; ec->argv[i]; i++) {
        free(ec->argv[i]);
    }
    free(ec->argv);
    for (size_t i = 0; i < ec->extra_env_len; i++) {
        free(ec->extra_env[i]);
    }
    free(ec->extra_env);
    free(ec->api_version);
    free(ec->command);
    free(ec->install_hint);
    free(ec);
}

/* ---- running the plugin ------------------------------------------------------------------- */

/* A bounded capture buffer: bytes past <cap> are counted, not kept. */
struct capture {
    char *p;
    size_t len;
    size_t cap;
    bool overflow;
};

/* The environment for the child: ours without the names <ec> sets, then <ec>'s (Go's
 * exec.Cmd keeps the last of duplicate names, so the kubeconfig's env wins). */
static char **child_env(const struct execcred *ec)
{
    size_t n = 0;
    size_t w = 0;
    char **envp;

    while (environ && environ[n]) {
        n++;
    }
    envp = xcalloc(n + ec->extra_env_len + 1, sizeof(*envp));
    for (size_t i = 0; i < n; i++) {
        bool overridden = false;

        for (size_t j = 0; j < ec->extra_env_len && !overridden; j++) {
            size_t nl = (size_t)(strchr(ec->extra_env[j], '=') - ec->extra_env[j]);

            overridden = strncmp(environ[i], ec->extra_env[j], nl + 1) == 0;
        }
        if (!overridden) {
            envp[w++] = environ[i];
        }
    }
    for (size_t j = 0; j < ec->extra_env_len; j++) {
        envp[w++] = ec->extra_env[j];
    }
    envp[w] = NULL;
    return envp;
}

/* Drains fd into <c>; returns false at EOF or on a read error. */
static bool drain(int fd, struct capture *c)
{
    char tmp[4096];
    ssize_t n = read(fd, tmp, sizeof(tmp));

    if (n == -1) {
        return errno == EINTR || errno == EAGAIN;
    }
    if (n == 0) {
        return false;
    }
    if (c->len < c->cap) {
        size_t take = (size_t)n < c->cap - c->len ? (size_t)n : c->cap - c->len;

        memcpy(c->p + c->len, tmp, take);
        c->len += take;
        c->overflow = c->overflow || take < (size_t)n;
    } else {
        c->overflow = true;
    }
    return true;
}

static void kill_group(pid_t pid)
{
    (void)kill(-pid, SIGKILL); /* the plugin's process group: children of a script too */
    (void)kill(pid, SIGKILL);
}

/* waitpid without EINTR; <flags> 0 or WNOHANG. Returns the pid, 0, or -1. */
static pid_t reap(pid_t pid, int *status, int flags)
{
    pid_t r;

    do {
        r = waitpid(pid, status, flags);
    } while (r == -1 && errno == EINTR);
    return r;
}

/*
 * Spawns the plugin and collects stdout and stderr until it exits, the deadline passes (the
 * group is killed) or stdout overflows (killed). The child is reaped on every path.
 * Returns 0 with its wait status in *<status>, or -errno (spawn), -ETIMEDOUT, -EFBIG.
 */
static int run_plugin(const struct execcred *ec, struct capture *out, struct capture *errc,
                      int *status)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int out_pipe[2] = {-1, -1};
    int err_pipe[2] = {-1, -1};
    char **envp = NULL;
    sigset_t none;
    sigset_t all;
    pid_t pid = -1;
    int64_t deadline = clock_mono_ms() + ec->o.timeout_ms;
    bool out_open = true;
    bool err_open = true;
    int rc;

    if (pipe2(out_pipe, O_CLOEXEC) == -1 || pipe2(err_pipe, O_CLOEXEC) == -1) {
        rc = -errno;
        goto out;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, err_pipe[1], STDERR_FILENO);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    posix_spawn_file_actions_addclosefrom_np(&fa, 3); /* fds someone opened without CLOEXEC */
#endif
    posix_spawnattr_init(&attr);
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                        POSIX_SPAWN_SETPGROUP);
    envp = child_env(ec);
    /* a bare name is looked up in our PATH (Go's exec.LookPath), never through a shell */
    rc = strchr(ec->command, '/') ? posix_spawn(&pid, ec->command, &fa, &attr, ec->argv, envp)
                                  : posix_spawnp(&pid, ec->command, &fa, &attr, ec->argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(out_pipe[1]);
    close(err_pipe[1]);
    out_pipe[1] = err_pipe[1] = -1;
    if (rc != 0) {
        rc = -rc;
        pid = -1;
        goto out;
    }
    /* until both pipes are at EOF and the child is reaped (the break below) */
    for (;;) {
        struct pollfd pfd[2];
        nfds_t nfds = 0;
        int64_t left = deadline - clock_mono_ms();
        int pr;

        if (left <= 0) {
            rc = -ETIMEDOUT;
            goto out;
        }
        if (!out_open && !err_open) {
            /* both pipes closed: wait for the exit itself, still under the deadline */
            pid_t r = reap(pid, status, WNOHANG);

            if (r == pid) {
                pid = -1;
                break;
            }
            if (r == -1) {
                rc = -errno;
                goto out;
            }
            poll(NULL, 0, left < 10 ? (int)left : 10);
            continue;
        }
        if (out_open) {
            pfd[nfds++] = (struct pollfd){.fd = out_pipe[0], .events = POLLIN};
        }
        if (err_open) {
            pfd[nfds++] = (struct pollfd){.fd = err_pipe[0], .events = POLLIN};
        }
        pr = poll(pfd, nfds, left > 1000 ? 1000 : (int)left);
        if (pr == -1 && errno != EINTR) {
            rc = -errno;
            goto out;
        }
        for (nfds_t i = 0; pr > 0 && i < nfds; i++) {
            if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                continue;
            }
            if (pfd[i].fd == out_pipe[0]) {
                out_open = drain(out_pipe[0], out);
                if (out->overflow) {
                    rc = -EFBIG;
                    goto out;
                }
            } else {
                err_open = drain(err_pipe[0], errc);
            }
        }
    }
    rc = 0;
out:
    if (pid > 0) {
        int ignored;

        kill_group(pid);
        (void)reap(pid, &ignored, 0); /* SIGKILL cannot be caught: this returns */
    }
    free(envp);
    for (int i = 0; i < 2; i++) {
        if (out_pipe[i] != -1) {
            close(out_pipe[i]);
        }
        if (err_pipe[i] != -1) {
            close(err_pipe[i]);
        }
    }
    return rc;
}

/* The plugin's stderr as one line for a message: trailing space cut, controls as spaces. */
static void one_line(char *s, size_t len)
{
    while (len > 0 &&
           (s[len - 1] == '\n' || s[len - 1] == '\r' || s[len - 1] == ' ' || s[len - 1] == '\t')) {
        len--;
    }
    s[len] = '\0';
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
            s[i] = ' ';
        }
    }
}

/* One run, start to parsed credential. */
static int run_once(const struct execcred *ec, struct execcred_cred *cred, char *err,
                    size_t err_len)
{
    struct capture out = {.p = xmalloc(ec->o.max_stdout + 1), .cap = ec->o.max_stdout};
    struct capture errc = {.p = xmalloc(ec->o.max_stderr + 1), .cap = ec->o.max_stderr};
    const char *hint = ec->install_hint ? ec->install_hint : "";
    const char *sep = ec->install_hint ? "; " : "";
    int status = 0;
    int rc;

    rc = run_plugin(ec, &out, &errc, &status);
    one_line(errc.p, errc.len);
    if (rc == -ENOENT) {
        snprintf(err, err_len, "exec: executable %s not found%s%s", ec->command,
                 ec->install_hint ? ": " : "", hint);
        rc = -ENOENT;
    } else if (rc == -ETIMEDOUT) {
        snprintf(err, err_len, "exec: executable %s timed out after %lld ms and was killed%s%s",
                 ec->command, (long long)ec->o.timeout_ms, errc.p[0] ? "; stderr: " : "", errc.p);
    } else if (rc == -EFBIG) {
        snprintf(err, err_len, "exec: executable %s wrote more than %zu bytes to stdout",
                 ec->command, ec->o.max_stdout);
    } else if (rc != 0) {
        snprintf(err, err_len, "exec: running %s: %s", ec->command, strerror(-rc));
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        snprintf(err, err_len, "exec: executable %s failed with exit code %d%s%s%s%s", ec->command,
                 WEXITSTATUS(status), errc.p[0] ? "; stderr: " : "", errc.p, sep, hint);
        rc = -EIO;
    } else if (WIFSIGNALED(status)) {
        snprintf(err, err_len, "exec: executable %s was killed by signal %d%s%s", ec->command,
                 WTERMSIG(status), errc.p[0] ? "; stderr: " : "", errc.p);
        rc = -EIO;
    } else {
        rc = execcred_parse(out.p, out.len, ec->api_version, cred, err, err_len);
    }
    free(out.p);
    free(errc.p);
    return rc;
}

/* ---- the cache ---------------------------------------------------------------------------- */

/* True when cur may still be handed out (not invalidated, not past its expiry). Under mu. */
static bool cur_valid(const struct execcred *ec, int64_t now)
{
    return ec->have && !ec->stale && (ec->cur.expiry_ms == 0 || now < ec->cur.expiry_ms);
}

/* True when cur is valid and not within the refresh margin of its expiry. Under mu. */
static bool cur_fresh(const struct execcred *ec, int64_t now)
{
    int64_t margin;

    if (!cur_valid(ec, now)) {
        return false;
    }
    if (ec->cur.expiry_ms == 0) {
        return true;
    }
    /* a second early at most; a quarter of the lifetime for tokens that live seconds */
    margin = (ec->cur.expiry_ms - ec->obtained_ms) / 4;
    margin = margin < 0 ? 0 : margin;
    margin = margin < ec->o.refresh_early_ms ? margin : ec->o.refresh_early_ms;
    return now < ec->cur.expiry_ms - margin;
}

/* Escapes '"' and '\' for a quoted log value. */
static void log_quote(const char *in, char *out, size_t out_len)
{
    size_t w = 0;

    for (const char *p = in; *p && w + 2 < out_len; p++) {
        if (*p == '"' || *p == '\\') {
            out[w++] = '\\';
        }
        out[w++] = *p;
    }
    out[w] = '\0';
}

int execcred_get(struct execcred *ec, struct execcred_cred *out, char *err, size_t err_len)
{
    struct execcred_cred fresh = {0};
    char run_err[EXECCRED_ERR_MAX];
    bool recovered;
    int64_t wait_ms = 0;
    uint64_t runs;
    int rc;

    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&ec->mu);
    for (;;) {
        int64_t now = clock_wall_ms();

        if (cur_fresh(ec, now) || (ec->running && cur_valid(ec, now))) {
            cred_copy(out, &ec->cur);
            pthread_mutex_unlock(&ec->mu);
            return 0;
        }
        if (ec->running) {
            uint64_t seen = ec->runs;

            while (ec->running) {
                pthread_cond_wait(&ec->done, &ec->mu);
            }
            /* that run's credential is the answer even if it is already expired: a waiter
             * never starts a second run for the same need */
            if (ec->runs != seen && ec->last_rc == 0 && ec->have && !ec->stale) {
                cred_copy(out, &ec->cur);
                pthread_mutex_unlock(&ec->mu);
                return 0;
            }
            continue;
        }
        if (ec->last_rc != 0 && clock_mono_ms() < ec->retry_at_ms) {
            if (cur_valid(ec, now)) {
                cred_copy(out, &ec->cur);
                rc = 0;
            } else {
                rc = ec->last_rc;
                snprintf(err, err_len, "%s (next try in %lld ms)", ec->last_err,
                         (long long)(ec->retry_at_ms - clock_mono_ms()));
            }
            pthread_mutex_unlock(&ec->mu);
            return rc;
        }
        break;
    }
    ec->running = true;
    pthread_mutex_unlock(&ec->mu);

    run_err[0] = '\0';
    rc = run_once(ec, &fresh, run_err, sizeof(run_err));
    if (rc != 0 && run_err[0] == '\0') {
        snprintf(run_err, sizeof(run_err), "exec: %s: %s", ec->command, strerror(-rc));
    }

    pthread_mutex_lock(&ec->mu);
    ec->running = false;
    ec->runs++;
    runs = ec->runs;
    recovered = rc == 0 && ec->last_rc != 0;
    if (rc == 0) {
        execcred_cred_fini(&ec->cur);
        ec->cur = fresh;
        ec->cur.generation = ++ec->generation;
        ec->have = true;
        ec->stale = false;
        ec->obtained_ms = clock_wall_ms();
        ec->last_rc = 0;
        ec->last_err[0] = '\0';
        ec->backoff_ms = ec->o.backoff_initial_ms;
        cred_copy(out, &ec->cur);
    } else {
        ec->last_rc = rc;
        snprintf(ec->last_err, sizeof(ec->last_err), "%s", run_err);
        wait_ms = ec->backoff_ms;
        ec->retry_at_ms = clock_mono_ms() + wait_ms;
        ec->backoff_ms =
            ec->backoff_ms * 2 < ec->o.backoff_max_ms ? ec->backoff_ms * 2 : ec->o.backoff_max_ms;
        if (cur_valid(ec, clock_wall_ms())) {
            cred_copy(out, &ec->cur); /* the refresh failed early: the old one still works */
            rc = 0;
        }
    }
    pthread_cond_broadcast(&ec->done);
    pthread_mutex_unlock(&ec->mu);

    if (wait_ms > 0) {
        char q[EXECCRED_ERR_MAX + 64];

        log_quote(run_err, q, sizeof(q));
        log_warn("execcred",
                 "command=%s runs=%llu backoff_ms=%lld err=\"%s\" "
                 "msg=\"exec credential plugin failed\"",
                 ec->command, (unsigned long long)runs, (long long)wait_ms, q);
        if (rc != 0) {
            snprintf(err, err_len, "%s", run_err);
        }
    } else if (recovered) {
        log_info("execcred", "command=%s runs=%llu msg=\"exec credential plugin recovered\"",
                 ec->command, (unsigned long long)runs);
    }
    return rc;
}

void execcred_invalidate(struct execcred *ec, uint64_t generation)
{
    pthread_mutex_lock(&ec->mu);
    if (ec->have && generation == ec->generation) {
        ec->stale = true;
    }
    pthread_mutex_unlock(&ec->mu);
}

uint64_t execcred_runs(struct execcred *ec)
{
    uint64_t n;

    pthread_mutex_lock(&ec->mu);
    n = ec->runs;
    pthread_mutex_unlock(&ec->mu);
    return n;
}
