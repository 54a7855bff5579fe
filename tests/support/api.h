/*
 * api.h - Kubernetes API helpers for integration tests against a kwp sim or kwp proxy base URL
 * ("http://127.0.0.1:PORT"): requests that must be answered, namespace/ConfigMap/Pod writes
 * that return the written RV, /_sim/stats, and watch streams read event by event.
 *
 * Every helper asserts with Criterion (cr_assert) and never returns on failure: call them from
 * a Test's thread. Bounds: one request API_REQ_MS, one watch line API_LINE_MS, a whole watch
 * stream API_STREAM_MS (tests end their streams themselves well before).
 */
#ifndef KWP_SUPPORT_API_H
#define KWP_SUPPORT_API_H

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "tests/support/http.h"

#define API_REQ_MS 15000L     /* one request */
#define API_LINE_MS 15000L    /* one watch line */
#define API_STREAM_MS 240000L /* hard bound on any watch stream */
#define API_URL_CAP 4096

/* kube-apiserver answers both the sim and the proxy must give byte for byte (format strings). */
#define API_CM_BOOKMARK_FMT                                                                        \
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","             \
    "\"metadata\":{\"resourceVersion\":\"%" PRIu64 "\"}}}"
#define API_CM_END_BOOKMARK_FMT                                                                    \
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","             \
    "\"metadata\":{\"resourceVersion\":\"%" PRIu64 "\",\"annotations\":"                           \
    "{\"k8s.io/initial-events-end\":\"true\"}}}}"
#define API_TOO_LARGE_FMT                                                                          \
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","           \
    "\"message\":\"Timeout: Too large resource version: %" PRIu64 ", current: %" PRIu64            \
    "\",\"reason\":\"Timeout\",\"details\":{\"causes\":[{\"reason\":"                              \
    "\"ResourceVersionTooLarge\",\"message\":\"Too large resource version\"}],"                    \
    "\"retryAfterSeconds\":1},\"code\":504}"

/* ---- requests ------------------------------------------------------------------------- */

/* <base><path> into <out> (capacity <cap>); asserts it fits. */
void api_url(const char *base, const char *path, char *out, size_t cap);

/*
 * One request that must be answered (any status) within API_REQ_MS: <ctype> and <body> NULL
 * for none, <hdrs> extra "Name: value" lines (NULL-terminated) or NULL. Fills <r>, which the
 * caller frees with http_resp_free.
 */
void api_req(const char *base, const char *method, const char *path, const char *ctype,
             const char *body, const char *const *hdrs, struct http_resp *r);

/* Asserts header <name> of <r> is <value>, or absent when <value> is NULL. */
void api_expect_header(const struct http_resp *r, const char *name, const char *value);

/* ---- writes --------------------------------------------------------------------------- */

/* Creates namespace <ns> (201, or 409 when it exists). */
void api_make_ns(const char *base, const char *ns);

/*
 * Asserts <r> has status <want> (<what> names the write) and returns its object's RV; hands
 * the parsed object to *<out> when <out> is not NULL (caller frees), and frees <r>.
 */
uint64_t api_written_rv(struct http_resp *r, long want, const char *what, cJSON **out);

/* POSTs ConfigMap <ns>/<name> with <labels> (a JSON object's text, or NULL) and data
 * k=<val> (NULL: "v"); 201. Returns its RV; the object through <out> as api_written_rv. */
uint64_t api_cm_create(const char *base, const char *ns, const char *name, const char *labels,
                       const char *val, cJSON **out);

/* Merge-patches ConfigMap <ns>/<name> with <patch>; 200. Returns its RV (and <out>). */
uint64_t api_cm_patch(const char *base, const char *ns, const char *name, const char *patch,
                      cJSON **out);

/* DELETEs ConfigMap <ns>/<name> on the simulator at <sim>; 200. Returns the simulator's
 * revision right after, the deletion's RV when nothing else writes (--churn 0); the answer's
 * object through <out> when not NULL (caller frees). */
uint64_t api_cm_delete(const char *sim, const char *ns, const char *name, cJSON **out);

/* POSTs a one-container Pod <ns>/<name> with <labels> (JSON object text, or NULL); 201.
 * Returns its RV. */
uint64_t api_pod_create(const char *base, const char *ns, const char *name, const char *labels);

/* ---- the simulator's /_sim/stats ------------------------------------------------------ */

/* GET /_sim/stats, parsed (the caller frees it). */
cJSON *api_sim_stats(const char *sim);

/* One number of /_sim/stats at a dotted <path> ("revision", "resources.pods.watches"). */
uint64_t api_sim_stat(const char *sim, const char *path);

/* ---- watches -------------------------------------------------------------------------- */

/* Opens a watch on <base><path> (bounded by API_STREAM_MS) and asserts its HTTP status is
 * <want>. Returns a watch the caller closes with watch_close. */
struct watch *api_watch(const char *base, const char *path, long want);

/* Line <i> of <w>, waiting up to API_LINE_MS for it; asserts it arrived. Lent until
 * watch_close. */
const char *api_wline(struct watch *w, size_t i);

/* A parsed watch event: <root> owned (api_ev_free), the rest lent from it. */
struct api_ev {
    cJSON *root;
    const char *type; /* "ADDED", ..., "ERROR" */
    const cJSON *obj; /* the "object" member */
    const char *name; /* its metadata.name, or "(absent)" */
    uint64_t rv;      /* its metadata.resourceVersion, 0 when it has none (an ERROR Status) */
};

/* Parses one watch line; asserts it is {"type":...,"object":{...}}. */
void api_ev_parse(const char *line, struct api_ev *e);

void api_ev_free(struct api_ev *e);

/* Asserts line <i> is a <type> event of <name> (NULL: any) at <rv>. */
void api_expect_ev(struct watch *w, size_t i, const char *type, const char *name, uint64_t rv);

/* Asserts line <i> is exactly <expected>. */
void api_expect_line(struct watch *w, size_t i, const char *expected);

/* Lines <i>.. of <w> that are exactly <line> (a periodic BOOKMARK repeats at each
 * --bookmark-interval while its rv stays, SEMANTICS 2.6): waits for the first other line
 * (API_LINE_MS each) and returns its index. Asserts at most API_REPEAT_MAX repeats. */
#define API_REPEAT_MAX 100
size_t api_skip_line(struct watch *w, size_t i, const char *line);

/* Asserts that <w> has at least <min> lines from <i> on, each exactly <line>. */
void api_expect_repeats(struct watch *w, size_t i, size_t min, const char *line);

#endif
