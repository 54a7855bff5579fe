/*
 * auth.h - delegated authentication and authorization as k8s.io/apiserver's delegating
 * authenticator and authorizer do them, over an injected transport: the policy in one place
 * (what is cached and for how long, single flight, retry once after a failed flight, fail
 * closed), with reviews built and read by review.h and cached by review_cache.h.
 *
 *   token  -> auth_token  -> identity (+ system:authenticated) | -EACCES (401) | -EIO (401)
 *   id+attrs -> auth_check -> allowed / denied + reason (403) | -EIO (500 InternalError)
 *
 * Caching, as the apiserver's webhooks: an authenticated token for --authn-cache-ttl, an
 * unauthenticated one too (but not one the reviewer answered with status.error: the cached
 * token authenticator keeps no errors); an allowed SAR for --authz-cache-ttl, a denied or
 * no-opinion one for --authz-denied-cache-ttl; nothing when the review failed.
 * Threads: auth_token and auth_check may run on any number of threads at once; a call that
 * misses the cache runs <send> on its own thread (blocking it for one review), or waits up
 * to wait_ms for the thread already sending the same review. No lock is held across <send>.
 */
#ifndef KWP_PROXY_AUTH_H
#define KWP_PROXY_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/identity.h"
#include "proxy/review.h"
#include "proxy/review_cache.h"

struct auth;
struct sbuf;

#define AUTH_DEFAULT_TTL_MS                                                                        \
    10000 /* --authn-cache-ttl, --authz-cache-ttl, --authz-denied-cache-ttl */
#define AUTH_DEFAULT_WAIT_MS 10000 /* the webhooks' request timeout */

/*
 * POSTs <body> (len bytes, JSON) to <path> on kube-apiserver with kwp's own credentials and
 * appends the response body to <resp>, its HTTP status to *code. Returns 0, or a negative
 * errno when no response came (with a short reason in <err>, e.g. "connection refused").
 * Called from auth_token / auth_check's thread.
 */
typedef int auth_send_fn(void *ctx, const char *path, const char *body, size_t len,
                         struct sbuf *resp, long *code, char *err, size_t err_len);

struct auth_opts {
    const char *const *audiences; /* --authentication-audiences (borrowed for auth's life) */
    size_t n_audiences;
    int64_t authn_ttl_ms; /* each TTL: 0 = not cached */
    int64_t authz_ttl_ms;
    int64_t authz_denied_ttl_ms;
    size_t max_entries; /* per cache; 0 = REVIEW_CACHE_DEFAULT_MAX_ENTRIES */
    int64_t wait_ms;    /* for another thread's review; 0 = AUTH_DEFAULT_WAIT_MS */
    auth_send_fn *send;
    void *send_ctx;
    review_cache_clock_fn *clock; /* NULL = CLOCK_MONOTONIC (tests inject one) */
    void *clock_ctx;
};

/* A new engine (caller owns it; auth_free). NULL when a cache cannot be created or the
 * options are out of range (too many audiences, no send). */
struct auth *auth_new(const struct auth_opts *opts);

/* Frees the engine. No auth_token / auth_check may be running. NULL-safe. */
void auth_free(struct auth *a);

/*
 * The bearer token of an Authorization header as bearertoken.go reads it: surrounding white
 * space trimmed, the scheme "Bearer" in any case, the token up to the next space. Returns
 * true with the token's span in <header>; false when there is none (no header, another
 * scheme, an empty token), which is "no credentials", not a failure.
 */
bool auth_bearer_token(const char *header, const char **token, size_t *len);

/*
 * Authenticates a bearer token with a TokenReview. Returns 0 with *out (owned by the caller,
 * system:authenticated added as AuthenticatedGroupAdder does); -EACCES when the reviewer said
 * it is not authenticated (or not for kwp's audiences); -EIO when no valid answer came (down,
 * non-2xx, malformed: never a success); -E2BIG for a token or identity past the caps. Every
 * error is a 401 for the caller (with --anonymous-auth too: a token that fails is never
 * anonymous); <err> says why, for the log.
 */
int auth_token(struct auth *a, const char *token, size_t len, struct identity **out, char *err,
               size_t err_len);

/*
 * Authorizes <id> for <attrs> with a SubjectAccessReview. Returns 0 with *allowed and
 * *reason (owned, "" when none; the 403's ": REASON"), or -EIO when the review could not be
 * made or its answer was unusable (both allowed and denied included), with the text for
 * authz_status_internal_error in <err>: the 500, never an allow.
 */
int auth_check(struct auth *a, const struct identity *id, const struct review_attrs *attrs,
               bool *allowed, char **reason, char *err, size_t err_len);

/*
 * auth_token and auth_check answered from the cache alone, for a thread that must not block
 * (an HTTP worker): the same returns, or -EAGAIN when the answer is not cached (nothing is
 * sent or waited for; call auth_token / auth_check from a thread that may block). Cheap: two
 * hashes and one lock.
 */
int auth_token_cached(struct auth *a, const char *token, size_t len, struct identity **out,
                      char *err, size_t err_len);
int auth_check_cached(struct auth *a, const struct identity *id, const struct review_attrs *attrs,
                      bool *allowed, char **reason, char *err, size_t err_len);

/* The caches' counters (authentication, authorization), for /metrics. */
void auth_stats(struct auth *a, struct review_cache_stats *authn, struct review_cache_stats *authz);

#endif
