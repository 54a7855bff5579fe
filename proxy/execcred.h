/*
 * execcred.h - exec credential plugins (client.authentication.k8s.io v1 and v1beta1) as
 * client-go runs them (AUTH.md section 2), and a cache that runs one only when needed.
 *
 * A plugin runs without a shell (PATH lookup for a bare name), stdin /dev/null, the process
 * environment plus the kubeconfig's env and KUBERNETES_EXEC_INFO, in its own process group;
 * stdout and stderr are read with caps under a deadline, after which the group is killed and
 * the child always reaped. Its ExecCredential gives a token and/or a client certificate and
 * key, kept until expirationTimestamp (refreshed shortly before) or until
 * execcred_invalidate() after a 401. A failing plugin is retried with exponential backoff.
 * Thread-safe: one mutex guards the cached credential; the plugin runs outside it while other
 * callers either use the still-valid credential or wait for that one run (never a second).
 * Logs (proxy/log.h, src=execcred) a failing run with its stderr, never while locked.
 */
#ifndef KWP_PROXY_EXECCRED_H
#define KWP_PROXY_EXECCRED_H

#include <stddef.h>
#include <stdint.h>

#include "proxy/kubeconfig.h"

#define EXECCRED_TIMEOUT_MS_DEFAULT 30000        /* one run, start to reaped */
#define EXECCRED_MAX_STDOUT_DEFAULT (1u << 20)   /* more is an error */
#define EXECCRED_MAX_STDERR_DEFAULT 4096u        /* kept for the message; the rest is drained */
#define EXECCRED_REFRESH_EARLY_MS_DEFAULT 1000   /* at most; a quarter of a short lifetime */
#define EXECCRED_BACKOFF_INITIAL_MS_DEFAULT 1000 /* after the first failure, doubling ... */
#define EXECCRED_BACKOFF_MAX_MS_DEFAULT 30000    /* ... up to this */
#define EXECCRED_MAX_CA_BYTES (1u << 20)         /* a CA file sent in KUBERNETES_EXEC_INFO */

struct execcred;

/* Limits and timing; a zero field takes its default. */
struct execcred_opts {
    int64_t timeout_ms;
    size_t max_stdout;
    size_t max_stderr;
    int64_t refresh_early_ms;
    int64_t backoff_initial_ms;
    int64_t backoff_max_ms;
};

/* One credential, owned by whoever holds the struct (execcred_cred_fini frees the strings). */
struct execcred_cred {
    char *token;    /* bearer token, or NULL */
    char *cert_pem; /* client certificate chain (PEM) and its key, or both NULL */
    char *key_pem;
    int64_t expiry_ms;   /* expirationTimestamp, wall clock ms since the epoch; 0: none */
    uint64_t generation; /* which successful run produced it: 1, 2, ... (for invalidate) */
};

/*
 * A credential cache for the exec plugin of <t> (t->exec must be set). Copies what it needs
 * from <t>: the plugin spec, and with provideClusterInfo the cluster for KUBERNETES_EXEC_INFO
 * (a CA file is read now, at most EXECCRED_MAX_CA_BYTES). <o> may be NULL (defaults).
 * Runs nothing yet. Returns NULL with a message in <err> when t->exec is NULL, interactiveMode
 * is Always (kwp never has a terminal), the apiVersion is not v1/v1beta1, or the CA file
 * cannot be read.
 */
struct execcred *execcred_new(const struct kubeconfig_target *t, const struct execcred_opts *o,
                              char *err, size_t err_len);

/* Frees <ec>. No other call on <ec> may be running. NULL-safe. */
void execcred_free(struct execcred *ec);

/*
 * Fills <out> with a copy of the current credential, running the plugin first when there is
 * none, it expires within the refresh margin, or it was invalidated; concurrent callers share
 * that one run. During the backoff after a failed run it does not run the plugin: it returns
 * the still-unexpired credential if there is one, else the failure again. Blocks for at most
 * about one run's timeout. Returns 0 (the caller owns <out>: execcred_cred_fini), or -ENOENT
 * (command not found), -ETIMEDOUT, -EIO (non-zero exit or killed), -EPROTO (bad output),
 * -EFBIG (output past the cap), -errno (spawn) with a message in <err>; <out> is then zeroed.
 * Any thread.
 */
int execcred_get(struct execcred *ec, struct execcred_cred *out, char *err, size_t err_len);

/*
 * After a 401 answered to a request made with credential <generation>: the next
 * execcred_get runs the plugin again. A generation older than the current one is ignored,
 * so any number of 401s for the same credential cause one run. Any thread; never blocks on a
 * running plugin.
 */
void execcred_invalidate(struct execcred *ec, uint64_t generation);

/* Successful and failed plugin runs so far (for metrics and tests). Any thread. */
uint64_t execcred_runs(struct execcred *ec);

/* Frees the strings of <c> and zeroes it. NULL-safe. */
void execcred_cred_fini(struct execcred_cred *c);

/*
 * Parses a plugin's stdout <buf>[0..<len>) as an ExecCredential of <api_version> (apiVersion
 * must equal it, kind ExecCredential, status with a token and/or clientCertificateData plus
 * clientKeyData, which must parse as PEM and match; expirationTimestamp RFC 3339 or absent).
 * Returns 0 and fills <out> (generation 0), or -EPROTO with a message in <err>.
 */
int execcred_parse(const char *buf, size_t len, const char *api_version, struct execcred_cred *out,
                   char *err, size_t err_len);

#endif
