/*
 * k8s_path.h - parses a request URL path and its query into what kube-apiserver's handlers
 * see: the group/version/resource/namespace/name, the verb, and validated ListOptions with
 * the exact error Statuses of SEMANTICS 1.1 and 2.1. Pure functions; any thread.
 *
 * The query checks run in kube-apiserver's order (get.go ListResource), so that the error a
 * client sees is the one the apiserver would pick when several apply:
 *   1. DecodeParameters: url.Values -> v1.ListOptions (timeoutSeconds, limit: 400
 *      `strconv.ParseInt: ...`), then v1 -> internal (labelSelector, fieldSelector: 400 with
 *      the selector parser's text, verbatim)
 *   2. SetListOptionsDefaults (WatchList gate on, 1.34+; watch=true only)
 *   3. ValidateListOptions: 422 Invalid ListOptions.meta.k8s.io with causes
 *   4. field label conversion: the caller's k8s_fields_check_fn (it knows the kind)
 *   5. storage: LIST continue decode / continue+rv / rv parse (400); WATCH rv parse (500)
 */
#ifndef KWP_PROXY_K8S_PATH_H
#define KWP_PROXY_K8S_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/kstatus.h"

#define K8S_NAME_MAX 254
#define K8S_SEG_MAX 128

struct sbuf;
struct selector;

/* A resource path. Examples:
 *   /api/v1/pods                              -> core, v1, pods (all namespaces)
 *   /api/v1/namespaces/ns1/pods/p1/log        -> ns1, pods, name p1, subresource log
 *   /apis/apps/v1/namespaces/ns1/deployments  -> group apps
 *   /api/v1/watch/namespaces/ns1/pods         -> legacy watch prefix
 *   /api/v1/namespaces/ns1                    -> resource namespaces, name ns1
 *   /api/v1/namespaces/ns1/status             -> namespaces ns1, subresource status */
struct k8s_path {
    char group[K8S_SEG_MAX]; /* "" for the core group */
    char version[K8S_SEG_MAX];
    char ns[K8S_NAME_MAX]; /* "" = not namespace-scoped in the URL */
    char resource[K8S_SEG_MAX];
    char name[K8S_NAME_MAX]; /* "" = collection */
    char subresource[K8S_SEG_MAX];
    bool legacy_watch; /* /watch/ prefix */
};

/*
 * Parses <path> (no query). Returns 0 for a resource path, -ENOENT for anything else
 * (discovery, /version, /healthz, unknown: the caller forwards or 404s), -EINVAL for a
 * malformed resource path (empty segment, over-long segment).
 * Details: trailing slashes are ignored, as go-restful >= 3.11 does (TrimRightSlashEnabled);
 * "." and ".." segments are -EINVAL; /api/v1/namespaces/{n}[/status|/finalize] is the
 * cluster-scoped namespaces resource (ns stays ""); segments after a subresource (pods/x/proxy/
 * a/b) are ignored; a legacy /watch/ path with a subresource is -ENOENT (no such route).
 * Whether the resource exists or is namespaced is the caller's business. <out> is zeroed
 * first and only meaningful on 0.
 */
int k8s_path_parse(const char *path, struct k8s_path *out);

/* One decoded query parameter; value NULL when the key had no "=". */
struct k8s_query_kv {
    const char *key;
    const char *value;
};

enum k8s_rvm { RVM_UNSET = 0, RVM_EXACT, RVM_NOT_OLDER_THAN };

/* ListOptions as the apiserver decodes them. Strings point into the query (borrowed).
 * Booleans decode like apimachinery's Convert_Slice_string_To_bool, NOT strconv.ParseBool:
 * "0" and any case of "false" are false, everything else ("", "yes", "maybe") is true. */
struct k8s_list_opts {
    bool watch;         /* watch=<true> or legacy prefix */
    bool has_rv;        /* resourceVersion present (even empty) */
    const char *rv_str; /* "" when absent */
    uint64_t rv;        /* parsed (0 for "" / "0"); valid when rv_ok */
    bool rv_ok;         /* rv_str parsed as uint64 */
    enum k8s_rvm rvm;
    int64_t limit;              /* 0 = none (negative values are kept; <= 0 means none) */
    const char *continue_tok;   /* NULL = none */
    const char *label_selector; /* NULL = none */
    const char *field_selector; /* NULL = none */
    bool allow_bookmarks;
    int send_initial_events;     /* -1 unset, 0 false, 1 true (after defaulting, see below) */
    bool send_initial_defaulted; /* set by the 1.34+ defaulting of legacy watches */
    int64_t timeout_seconds;     /* 0 = not given (as in the apiserver: 0 picks the default);
                                    negative is accepted and ends a watch at once */
    int pretty;                  /* -1 unset or empty, 0 false (or not a ParseBool value), 1 true */
};

/*
 * Decodes and validates the query for a LIST (watch false) or WATCH request (watch=true in the
 * query, or <legacy_watch>). Applies the 1.34+ defaulting (watch with rv "" or "0", no
 * sendInitialEvents and no resourceVersionMatch -> sendInitialEvents=true, NotOlderThan;
 * not for the legacy prefix). Returns 0, or a negative errno with <st> filled exactly as
 * kube-apiserver answers (400 bad int/selector syntax, 422 Invalid ListOptions with
 * causes, 400 invalid resource version for LIST / 500 for WATCH, 400 continue + rv).
 * Selector syntax is checked here by parsing with cache/selector.h.
 * <q>: n decoded pairs, first occurrence of a key wins (url.Values.Get); a NULL value is "".
 * Like the apiserver, step 3 uses the LIST rules on the legacy prefix unless the query also
 * says watch=true (get.go validates opts.Watch, not forceWatch), and a LIST decodes the
 * continue token but does not parse resourceVersion when a continue token is given.
 * On error: every error is -EINVAL and st->code (400, 422, 500) is authoritative. A cause
 * message that depends on the input (NotSupported) lives in st->message after the main
 * message's NUL, so <st> is self-contained while it stays where it was filled (do not copy
 * it by value). Long inputs are truncated to fit st->message, never overflowed.
 * Any thread; no locks.
 */
int k8s_list_opts_parse(const struct k8s_query_kv *q, size_t n, bool legacy_watch,
                        struct k8s_list_opts *o, struct kstatus *st);

/*
 * Step 4 of SEMANTICS 1.1 (field label conversion, scope.Convertor.ConvertFieldLabel), which
 * only the caller can do because it depends on the kind. Called once after ListOptions
 * validation and before the storage-level checks, with the parsed field selector (NULL or
 * empty = everything; borrowed for the call). Returns 0, or a negative errno with <st> filled
 * (e.g. 400 `field label not supported: spec.foo`, or 400 `fieldSelector metadata.name
 * doesn't match requested name` for a named watch), which k8s_list_opts_parse_ex returns.
 */
typedef int k8s_fields_check_fn(void *ctx, const struct selector *fields, struct kstatus *st);

/* k8s_list_opts_parse with the step-4 hook (<check> may be NULL: skipped). */
int k8s_list_opts_parse_ex(const struct k8s_query_kv *q, size_t n, bool legacy_watch,
                           k8s_fields_check_fn *check, void *check_ctx, struct k8s_list_opts *o,
                           struct kstatus *st);

/* Called by k8s_query_parse for each pair kept; returning false stops the parse. */
typedef bool k8s_query_pair_fn(void *ctx, const char *key, const char *value);

/*
 * Splits and decodes a raw query string (the bytes after '?') in place, as Go's
 * url.ParseQuery does, which is how kube-apiserver reads a request's query
 * (req.URL.Query(), errors ignored): pairs are split on '&'; an empty pair, a pair that
 * holds ';', and a pair whose key or value has a bad %-escape are dropped; '+' is a space.
 * A key without '=' gets a NULL value (Go: ""), so that a forwarded query keeps its bytes
 * (k8s_query_kv readers take NULL as ""). One more difference: %00 stays the three characters
 * "%00", since a C string ends at NUL (Go keeps the NUL byte; either way no valid value
 * holds one). Calls <fn> for each pair kept, in order. Returns the number of pairs passed.
 */
size_t k8s_query_parse(char *raw, k8s_query_pair_fn *fn, void *ctx);

#endif
