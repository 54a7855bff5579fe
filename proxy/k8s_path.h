/*
 * k8s_path.h - parses a request URL path and its query into what kube-apiserver's handlers
 * see: the group/version/resource/namespace/name, the verb, and validated ListOptions with
 * the exact error Statuses of SEMANTICS 1.1 and 2.1. Pure functions; any thread.
 */
#ifndef KWP_PROXY_K8S_PATH_H
#define KWP_PROXY_K8S_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/kube_json.h"

#define K8S_NAME_MAX 254
#define K8S_SEG_MAX 128

/* A resource path. Examples:
 *   /api/v1/pods                              -> core, v1, pods (all namespaces)
 *   /api/v1/namespaces/ns1/pods/p1/log        -> ns1, pods, name p1, subresource log
 *   /apis/apps/v1/namespaces/ns1/deployments  -> group apps
 *   /api/v1/watch/namespaces/ns1/pods         -> legacy watch prefix
 *   /api/v1/namespaces/ns1                    -> resource namespaces, name ns1
 *   /api/v1/namespaces/ns1/status             -> namespaces ns1, subresource status */
struct k8s_path {
    char group[K8S_SEG_MAX];    /* "" for the core group */
    char version[K8S_SEG_MAX];
    char ns[K8S_NAME_MAX];      /* "" = not namespace-scoped in the URL */
    char resource[K8S_SEG_MAX];
    char name[K8S_NAME_MAX];    /* "" = collection */
    char subresource[K8S_SEG_MAX];
    bool legacy_watch;          /* /watch/ prefix */
};

/*
 * Parses <path> (no query). Returns 0 for a resource path, -ENOENT for anything else
 * (discovery, /version, /healthz, unknown: the caller forwards or 404s), -EINVAL for a
 * malformed resource path (empty segment, over-long segment).
 */
int k8s_path_parse(const char *path, struct k8s_path *out);

/* One decoded query parameter; value NULL when the key had no "=". */
struct k8s_query_kv {
    const char *key;
    const char *value;
};

enum k8s_rvm { RVM_UNSET = 0, RVM_EXACT, RVM_NOT_OLDER_THAN };

/* ListOptions as the apiserver decodes them. Strings point into the query (borrowed). */
struct k8s_list_opts {
    bool watch;                 /* watch=<true> or legacy prefix */
    bool has_rv;                /* resourceVersion present (even empty) */
    const char *rv_str;         /* "" when absent */
    uint64_t rv;                /* parsed (0 for "" / "0"); valid when rv_ok */
    bool rv_ok;                 /* rv_str parsed as uint64 */
    enum k8s_rvm rvm;
    int64_t limit;              /* 0 = none */
    const char *continue_tok;   /* NULL = none */
    const char *label_selector; /* NULL = none */
    const char *field_selector; /* NULL = none */
    bool allow_bookmarks;
    int send_initial_events;    /* -1 unset, 0 false, 1 true (after defaulting, see below) */
    bool send_initial_defaulted;/* set by the 1.34+ defaulting of legacy watches */
    int64_t timeout_seconds;    /* 0 = not given */
    int pretty;                 /* -1 unset, 0 false, 1 true */
};

/*
 * Go's strconv.ParseBool: 1 t T TRUE true True / 0 f F FALSE false False.
 * Returns 0 or -EINVAL.
 */
int k8s_parse_bool(const char *s, bool *out);

/*
 * Decodes and validates the query for a LIST (watch false) or WATCH request (watch=true in the
 * query, or <legacy_watch>). Applies the 1.34+ defaulting (watch with rv "" or "0", no
 * sendInitialEvents and no resourceVersionMatch -> sendInitialEvents=true, NotOlderThan;
 * not for the legacy prefix). Returns 0, or a negative errno with <st> filled exactly as
 * kube-apiserver answers (400 bad bool/int/selector syntax, 422 Invalid ListOptions with
 * causes, 400 invalid resource version for LIST / 500 for WATCH, 400 continue + rv).
 * Selector syntax is checked here by parsing with cache/selector.h.
 */
int k8s_list_opts_parse(const struct k8s_query_kv *q, size_t n, bool legacy_watch,
                        struct k8s_list_opts *o, struct kstatus *st);

/* Percent-encodes <s> for a query value into <out> (snprintf semantics). */
size_t k8s_query_escape(const char *s, char *out, size_t cap);

#endif
