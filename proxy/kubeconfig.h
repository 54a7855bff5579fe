/*
 * kubeconfig.h - where the upstream is and who kwp is there, as kubectl finds it: kubeconfig
 * files merged by clientcmd's rules, or the pod's service account (AUTH.md section 1).
 *
 * A struct kubeconfig is the merge of files added in order: for clusters, users and contexts
 * (maps by name) the first file that names an entry wins, whole; current-context comes from
 * the first file that sets one. Every file is parsed with libyaml and checked whole when it is
 * added (a name twice in one file, a wrong type, bad base64 are errors with file and line); a
 * failed add leaves the merge as it was. kubeconfig_resolve() then picks one context and
 * returns a struct kubeconfig_target: plain owned data, every relative path already resolved
 * against the directory of the file that named it, every -data field decoded to PEM bytes.
 * Caps (KUBECONFIG_MAX_*) bound everything read from disk: past one, a clear error.
 * No threads: a struct kubeconfig belongs to its caller; targets are immutable once returned.
 * Reads files only (no exec: proxy/execcred.h runs plugins); logs nothing.
 */
#ifndef KWP_PROXY_KUBECONFIG_H
#define KWP_PROXY_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define KUBECONFIG_MAX_FILE_BYTES ((size_t)8 << 20) /* one kubeconfig file */
#define KUBECONFIG_MAX_STRING ((size_t)1 << 20)     /* one scalar (a -data field, a token) */
#define KUBECONFIG_MAX_COPIED ((size_t)16 << 20)    /* all strings taken from one file */
#define KUBECONFIG_MAX_NODES 500000                 /* YAML nodes in one file */
#define KUBECONFIG_MAX_DEPTH 64                     /* YAML nesting */
#define KUBECONFIG_MAX_ENTRIES 4096                 /* clusters, users or contexts, merged */
#define KUBECONFIG_MAX_ARGS 1024                    /* exec args, exec env */
#define KUBECONFIG_MAX_FILES 64                     /* in a $KUBECONFIG list */
#define KUBECONFIG_MAX_EXTENSION ((size_t)64 << 10) /* the exec extension, as JSON */

/* The exec plugin's client.authentication.k8s.io/exec cluster extension is sent as
 * spec.cluster.config (KUBERNETES_EXEC_INFO) when provideClusterInfo is set. */
#define KUBECONFIG_EXEC_EXTENSION "client.authentication.k8s.io/exec"

struct kubeconfig;

enum kubeconfig_interactive {
    KUBECONFIG_INTERACTIVE_IF_AVAILABLE = 0, /* v1beta1's default */
    KUBECONFIG_INTERACTIVE_NEVER,
    KUBECONFIG_INTERACTIVE_ALWAYS, /* kwp has no terminal: execcred_new refuses it */
};

struct kubeconfig_exec_env {
    char *name;  /* never empty */
    char *value; /* "" when the kubeconfig gives none */
};

/* users[].user.exec, checked as clientcmd's validation does. All fields read-only. */
struct kubeconfig_exec {
    char *api_version; /* client.authentication.k8s.io/v1 or .../v1beta1 */
    char *command;     /* a bare name (PATH lookup when run) or a path (a relative one with a
                        * slash was resolved against the kubeconfig's directory) */
    char **args;       /* args_len strings */
    size_t args_len;
    struct kubeconfig_exec_env *env; /* added to the process environment, in order */
    size_t env_len;
    char *install_hint;        /* or NULL */
    bool provide_cluster_info; /* send the cluster in KUBERNETES_EXEC_INFO */
    enum kubeconfig_interactive interactive;
};

/*
 * Everything needed to reach one cluster as one user. Owned by whoever got it from
 * kubeconfig_resolve / kubeconfig_incluster / kubeconfig_target_load; freed with
 * kubeconfig_target_free. Strings are NUL-terminated; NULL means "not set". -data fields are
 * decoded bytes (PEM) with their length, NUL-terminated as well.
 */
struct kubeconfig_target {
    /* public, read-only: where it came from, for logs */
    char *source;  /* the file the context came from, or "in-cluster" */
    char *context; /* context, cluster and user names (NULL in-cluster) */
    char *cluster;
    char *user;
    char *warning; /* something the caller should log once, or NULL */

    /* the cluster */
    char *server;  /* http(s)://host[:port][/prefix]; a server without a scheme got
                    * https:// when TLS settings are present, else http:// (client-go) */
    char *ca_file; /* certificate-authority (absolute path) */
    char *ca_data; /* certificate-authority-data, decoded; excludes ca_file */
    size_t ca_data_len;
    bool insecure; /* insecure-skip-tls-verify */
    char *tls_server_name;
    char *proxy_url; /* http://, https:// or socks5:// (Go dials socks5 with remote DNS:
                      * libcurl's socks5h://) */
    bool disable_compression;
    char *exec_cluster_config; /* the cluster's exec extension as compact JSON, or NULL */

    /* the user: token and client certificate may both be set (both are sent) */
    char *token;            /* bearer token */
    char *token_file;       /* only when token is empty: re-read as it changes */
    char *client_cert_file; /* client-certificate (absolute path) */
    char *client_key_file;  /* client-key (absolute path) */
    char *client_cert_data; /* client-certificate-data, decoded; excludes the file */
    size_t client_cert_data_len;
    char *client_key_data; /* client-key-data, decoded; excludes the file */
    size_t client_key_data_len;
    char *username; /* basic auth; never together with token */
    char *password;
    struct kubeconfig_exec *exec; /* or NULL; its credentials apply to requests that carry no
                                   * other Authorization (client-go's exec round tripper) */
};

/* How kwp finds its upstream, in kubectl's order (see kubeconfig_target_load). Every field
 * may be NULL or ""; the caller passes the flag values and getenv() results. */
struct kubeconfig_load_opts {
    const char *path;           /* --kubeconfig: one file that must exist; wins over env */
    const char *env_list;       /* $KUBECONFIG: ':'-separated, missing files skipped */
    const char *home;           /* $HOME: $HOME/.kube/config when neither is given */
    const char *context;        /* --context, or NULL for current-context */
    const char *incluster_root; /* prefix of /var/run/secrets/... ("" in production) */
    const char *service_host;   /* $KUBERNETES_SERVICE_HOST */
    const char *service_port;   /* $KUBERNETES_SERVICE_PORT */
};

/* An empty merge. Never NULL (aborts on OOM). */
struct kubeconfig *kubeconfig_new(void);

/* Frees <kc> and everything in it. NULL-safe. */
void kubeconfig_free(struct kubeconfig *kc);

/*
 * Parses <buf>[0..<len>) as one kubeconfig file named <origin> (used for messages, and its
 * directory for relative paths; a relative <origin> is taken from the working directory) and
 * merges it into <kc> behind the files already added. The bytes need no NUL.
 * Returns 0; -EINVAL for invalid YAML or content (message "ORIGIN:LINE: ..." in <err>), -EFBIG
 * past a cap, -ENOMEM if libyaml runs out. On error <kc> is unchanged.
 */
int kubeconfig_add_buffer(struct kubeconfig *kc, const char *buf, size_t len, const char *origin,
                          char *err, size_t err_len);

/*
 * Reads <path> (at most KUBECONFIG_MAX_FILE_BYTES) and adds it as kubeconfig_add_buffer does.
 * A file that does not exist is skipped (returns 0) when <skip_missing>, else -ENOENT; other
 * read errors are -errno. Messages name the file.
 */
int kubeconfig_add_file(struct kubeconfig *kc, const char *path, bool skip_missing, char *err,
                        size_t err_len);

/*
 * Adds every file of the ':'-separated <list> in order ($KUBECONFIG: empty elements and
 * repeats are ignored, missing files skipped). Returns 0 or the first file's error; -E2BIG for
 * more than KUBECONFIG_MAX_FILES names. Files added before a failing one stay added.
 */
int kubeconfig_add_list(struct kubeconfig *kc, const char *list, char *err, size_t err_len);

/* True when nothing was merged (no cluster, user, context or current-context): kubectl then
 * falls back to in-cluster. */
bool kubeconfig_is_empty(const struct kubeconfig *kc);

/* The merged current-context, or NULL. Lent: valid until <kc> changes or is freed. */
const char *kubeconfig_current_context(const struct kubeconfig *kc);

/*
 * Selects <context> (or current-context when <context> is NULL or "") and builds its target:
 * the context, its cluster and its user must exist; the cluster needs a server; CA and client
 * certificate files must be readable; a file and its -data twin together, token with
 * username/password, a client certificate without a key, exec without command or apiVersion,
 * auth-provider and impersonation (as, as-groups, ...) are errors, each with a message.
 * Returns 0 and a new target in *<out>, or -ENOENT (no such context/cluster/user, or no context
 * chosen) / -EINVAL (unusable entry) / -errno (unreadable file) with a message in <err>.
 */
int kubeconfig_resolve(const struct kubeconfig *kc, const char *context,
                       struct kubeconfig_target **out, char *err, size_t err_len);

/*
 * The pod's own credentials, as client-go's rest.InClusterConfig: server
 * https://<host>:<port> (an IPv6 <host> in brackets), token_file
 * <root>/var/run/secrets/kubernetes.io/serviceaccount/token (must be readable; the caller
 * re-reads it as the kubelet rotates it), ca_file .../ca.crt when it is readable (else a
 * warning and the system trust store, as client-go). <root> is "" or NULL in production.
 * Returns 0 and a new target, -ENOENT when <host> or <port> is empty or the token cannot be
 * read, -EINVAL for a bad host or port; a message in <err>.
 */
int kubeconfig_incluster(const char *root, const char *host, const char *port,
                         struct kubeconfig_target **out, char *err, size_t err_len);

/*
 * kubectl's whole lookup: <o>->path (must exist) or else <o>->env_list or else
 * <o>->home/.kube/config (skipped when missing); merged, then resolved for <o>->context.
 * When that merge is empty and no context was asked for, the in-cluster config when
 * service_host and service_port are set. Returns 0 and a new target in *<out>, or -errno and a
 * message (which names the file, or says no configuration was found).
 */
int kubeconfig_target_load(const struct kubeconfig_load_opts *o, struct kubeconfig_target **out,
                           char *err, size_t err_len);

/* Frees <t> and every string in it. NULL-safe. */
void kubeconfig_target_free(struct kubeconfig_target *t);

#endif
