/*
 * review.h - the bodies kwp exchanges with kube-apiserver to authenticate and authorize its
 * callers (AUTH.md 3 and 4): TokenReview and SubjectAccessReview requests (compact JSON, keys
 * in the order AUTH.md shows, strings escaped as Go's encoding/json), their responses (cJSON,
 * the tree freed before return), the cache keys of both and the cached form of an answer.
 *
 * A review_attrs is kube-apiserver's authorizer.Attributes minus the user: what a request
 * (reqinfo.h) or an impersonation check (impersonate.h) asks to do. Its strings are borrowed.
 * Pure functions; any thread; no locks. Depends on identity, review_cache (keys), sbuf and
 * kube_json (escaping), cJSON.
 */
#ifndef KWP_PROXY_REVIEW_H
#define KWP_PROXY_REVIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "proxy/identity.h"
#include "proxy/review_cache.h"

struct cJSON;
struct sbuf;

#define REVIEW_TOKENREVIEW_PATH "/apis/authentication.k8s.io/v1/tokenreviews"
#define REVIEW_SAR_PATH "/apis/authorization.k8s.io/v1/subjectaccessreviews"

#define REVIEW_MAX_TOKEN 65536        /* bytes of a bearer token kwp will review */
#define REVIEW_MAX_AUDIENCES 16       /* --authentication-audiences entries */
#define REVIEW_MAX_BODY (1024 * 1024) /* bytes of a review response kwp will parse */
#define REVIEW_MAX_TEXT 4096          /* bytes kept of a reason / error text */

/* What is asked (authorizer.AttributesRecord without User). NULL strings read as "". */
struct review_attrs {
    bool is_resource;
    const char *verb; /* list, watch, get, impersonate, ... or the lowercased method */
    /* resource requests */
    const char *ns;    /* "" = cluster scope */
    const char *group; /* "" = core */
    const char *version;
    const char *resource;
    const char *subresource;
    const char *name;
    /* non-resource requests */
    const char *path;
};

/*
 * Parses data[0..len) as one JSON object the way the review parsers do (for the server side of
 * a review, kwp sim's): NULL when it is not exactly one object, is over REVIEW_MAX_BODY, or
 * holds what cJSON would read more laxly than Go's decoder (invalid UTF-8, control bytes, an
 * escaped NUL). The caller owns the tree (cJSON_Delete).
 */
struct cJSON *review_parse_doc(const char *data, size_t len);

/* ---- TokenReview (AUTH.md 3) --------------------------------------------------------- */

/*
 * Appends {"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":T,
 * "audiences":[..]}} to <out> ("audiences" only when n_auds > 0). Returns 0, -EINVAL for an
 * empty token, -E2BIG past REVIEW_MAX_TOKEN or REVIEW_MAX_AUDIENCES.
 */
int review_token_request(const char *token, size_t token_len, const char *const *auds,
                         size_t n_auds, struct sbuf *out);

struct review_token_result {
    bool authenticated;  /* status.authenticated and the audience check passed */
    struct identity *id; /* owned; non-NULL exactly when authenticated; as the reviewer
                            gave it (system:authenticated is the caller's: identity.h) */
    char *error;         /* owned; status.error or "" */
};

/*
 * Parses a TokenReview response (HTTP 201 body). The audience check is the webhook token
 * authenticator's: with <auds> configured, status.audiences (when the reviewer sent any)
 * must share one with them, or the token is not authenticated. Returns 0 (see
 * out->authenticated), -EPROTO when the body is not a TokenReview (bad JSON, wrong types,
 * an escaped NUL in a string, over REVIEW_MAX_BODY), -E2BIG when the user exceeds
 * identity.h's caps. Both errors are review failures (401, never cached). <out> needs
 * review_token_result_fini on every return.
 */
int review_token_parse(const char *body, size_t len, const char *const *auds, size_t n_auds,
                       struct review_token_result *out);

void review_token_result_fini(struct review_token_result *r);

/*
 * The cache key of a token review: the token and the audiences, in order (the token itself
 * only ever enters SHA-256). Returns 0 or review_cache_hash_end's error.
 */
int review_token_key(const struct review_cache *c, const char *token, size_t token_len,
                     const char *const *auds, size_t n_auds, struct review_cache_key *out);

/* ---- SubjectAccessReview (AUTH.md 4) ------------------------------------------------- */

/*
 * Appends {"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{
 * "resourceAttributes":{"namespace","verb","group","version","resource","subresource",
 * "name"} | "nonResourceAttributes":{"path","verb"}, "user", "groups", "extra", "uid"}} to
 * <out>. The seven resource keys are always written; user, groups, extra and uid only when
 * set (Go's omitempty); extra keys sorted, as json.Marshal writes a map.
 */
void review_sar_request(const struct identity *id, const struct review_attrs *a, struct sbuf *out);

enum review_decision { REVIEW_NO_OPINION = 0, REVIEW_ALLOW, REVIEW_DENY };

struct review_sar_result {
    bool allowed;           /* status.allowed */
    bool denied;            /* status.denied (an explicit deny) */
    char *reason;           /* owned; status.reason or "" (cut at REVIEW_MAX_TEXT) */
    char *evaluation_error; /* owned; status.evaluationError or "" (informational: the
                               webhook authorizer decides on allowed/denied alone) */
};

/* Parses a SubjectAccessReview response. Returns 0, or -EPROTO as review_token_parse.
 * <out> needs review_sar_result_fini on every return. */
int review_sar_parse(const char *body, size_t len, struct review_sar_result *out);

void review_sar_result_fini(struct review_sar_result *r);

/*
 * The webhook authorizer's decision: DENY when denied, ALLOW when allowed, else NO_OPINION
 * (which kwp answers 403 like a deny). Returns 0, or -EPROTO when both allowed and denied
 * are set, which kube-apiserver answers 500 ("webhook subject access review returned both
 * allow and deny response") after a deny.
 */
int review_sar_decision(const struct review_sar_result *r, enum review_decision *d);

/* The text of that -EPROTO, for the 500 body. */
#define REVIEW_SAR_BOTH_TEXT "webhook subject access review returned both allow and deny response"

/* The cache key of a SAR: every field of <id> (groups in order) and of <a> (which kind of
 * attributes, then each of its strings). Returns 0 or review_cache_hash_end's error. */
int review_sar_key(const struct review_cache *c, const struct identity *id,
                   const struct review_attrs *a, struct review_cache_key *out);

/* The cached form of a SAR answer (decision and reason) and back. Decode returns 0 or
 * -EPROTO; on 0 <reason> is an owned copy. */
void review_sar_encode(enum review_decision d, const char *reason, struct sbuf *out);
int review_sar_decode(const void *data, size_t len, enum review_decision *d, char **reason);

#endif
