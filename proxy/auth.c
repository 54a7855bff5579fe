/*
 * auth.c - the delegating authenticator and authorizer over review_cache (see auth.h).
 *
 * Both paths share cached_review: look the key up; on a hit use the value; when another
 * thread is sending the same review, wait for it, and if that flight was abandoned try once
 * more (this thread may then be the sender); as the sender run the review and publish its
 * answer, or abandon the flight when it failed or must not be cached. Values are the cached
 * forms of review.h (identity_encode for a token, review_sar_encode for a SAR).
 */
#include "proxy/auth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cache/bug.h"
#include "cache/sbuf.h"

struct auth {
    struct auth_opts opts;      /* immutable */
    struct review_cache *authn; /* thread-safe by itself */
    struct review_cache *authz;
};

struct auth *auth_new(const struct auth_opts *opts)
{
    struct review_cache_opts co = {
        .max_entries = opts->max_entries,
        .clock = opts->clock,
        .clock_ctx = opts->clock_ctx,
    };
    struct auth *a;

    if (opts->send == NULL || opts->n_audiences > REVIEW_MAX_AUDIENCES) {
        return NULL;
    }
    a = xcalloc(1, sizeof(*a));
    a->opts = *opts;
    if (a->opts.wait_ms <= 0) {
        a->opts.wait_ms = AUTH_DEFAULT_WAIT_MS;
    }
    co.ttl_allowed_ms = opts->authn_ttl_ms;
    co.ttl_denied_ms = opts->authn_ttl_ms;
    a->authn = review_cache_new(&co);
    co.ttl_allowed_ms = opts->authz_ttl_ms;
    co.ttl_denied_ms = opts->authz_denied_ttl_ms;
    a->authz = review_cache_new(&co);
    if (a->authn == NULL || a->authz == NULL) {
        auth_free(a);
        return NULL;
    }
    return a;
}

void auth_free(struct auth *a)
{
    if (a == NULL) {
        return;
    }
    review_cache_free(a->authn);
    review_cache_free(a->authz);
    free(a);
}

void auth_stats(struct auth *a, struct review_cache_stats *authn, struct review_cache_stats *authz)
{
    review_cache_stats(a->authn, authn);
    review_cache_stats(a->authz, authz);
}

static void set_err(char *err, size_t err_len, const char *text)
{
    if (err_len > 0) {
        snprintf(err, err_len, "%s", text);
    }
}

/* No error (yet): on every request, so without snprintf. */
static void clear_err(char *err, size_t err_len)
{
    if (err_len > 0) {
        err[0] = '\0';
    }
}

bool auth_bearer_token(const char *header, const char **token, size_t *len)
{
    static const char ws[] = " \t\n\v\f\r";
    const char *p = header, *end, *tok, *tok_end;

    *token = NULL;
    *len = 0;
    if (p == NULL) {
        return false;
    }
    p += strspn(p, ws);
    end = p + strlen(p);
    while (end > p && strchr(ws, end[-1]) != NULL) {
        end--;
    }
    /* strings.SplitN(auth, " ", 3): the scheme, then the token up to the next space */
    if (end - p < 7 || strncasecmp(p, "bearer ", 7) != 0) {
        return false;
    }
    tok = p + 7;
    tok_end = memchr(tok, ' ', (size_t)(end - tok));
    if (tok_end == NULL) {
        tok_end = end;
    }
    if (tok_end == tok) {
        return false;
    }
    *token = tok;
    *len = (size_t)(tok_end - tok);
    return true;
}

/* ---- one review, cached ---------------------------------------------------------------- */

/*
 * Runs the review as the flight's sender: on 0 sets the outcome, appends the value to cache
 * to <val> and clears *store when the answer must not be cached. On error, <err> says why.
 */
typedef int review_run_fn(struct auth *a, const void *ctx, enum review_outcome *o, struct sbuf *val,
                          bool *store, char *err, size_t err_len);

static int cached_review(struct auth *a, struct review_cache *c, const struct review_cache_key *k,
                         review_run_fn *run, const void *ctx, bool cached_only,
                         struct review_cache_val *out, char *err, size_t err_len)
{
    if (cached_only) {
        return review_cache_peek(c, k, out) ? 0 : -EAGAIN;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        struct review_flight *f;
        struct sbuf val = {0};
        enum review_outcome o = REVIEW_OUTCOME_DENIED;
        bool store = true;
        int rc;

        switch (review_cache_lookup(c, k, out, &f)) {
        case REVIEW_CACHE_HIT:
            return 0;
        case REVIEW_CACHE_WAIT:
            rc = review_cache_wait(c, f, a->opts.wait_ms, out);
            if (rc == 0) {
                return 0;
            }
            if (rc == -ECANCELED) {
                continue; /* that sender failed: once more, perhaps as the sender */
            }
            set_err(err, err_len, "timed out waiting for another request's review");
            return -EIO;
        case REVIEW_CACHE_SEND:
            rc = run(a, ctx, &o, &val, &store, err, err_len);
            if (rc != 0 || !store) {
                review_cache_abandon(c, f);
            } else {
                (void)review_cache_publish(c, f, o, val.p, val.len); /* too large: not kept */
            }
            if (rc != 0) {
                sbuf_free(&val);
                return rc;
            }
            out->outcome = o;
            out->data = (unsigned char *)val.p; /* ownership moves to <out> */
            out->len = val.len;
            return 0;
        }
    }
    set_err(err, err_len, "the review failed in another request");
    return -EIO;
}

/* POSTs <req> and checks the status; 0 with the body in <resp>, or -EIO. */
static int post(struct auth *a, const char *path, const struct sbuf *req, struct sbuf *resp,
                char *err, size_t err_len)
{
    long code = 0;
    char why[256] = "";
    int rc = a->opts.send(a->opts.send_ctx, path, req->p, req->len, resp, &code, why, sizeof(why));

    if (rc != 0) {
        if (err_len > 0) {
            snprintf(err, err_len, "review request failed: %s", why[0] != '\0' ? why : "no answer");
        }
        return -EIO;
    }
    if (code < 200 || code > 299) {
        if (err_len > 0) {
            snprintf(err, err_len, "review request answered HTTP %ld", code);
        }
        return -EIO;
    }
    return 0;
}

/* ---- authentication -------------------------------------------------------------------- */

struct token_req {
    const char *token;
    size_t len;
};

static int run_token(struct auth *a, const void *ctx, enum review_outcome *o, struct sbuf *val,
                     bool *store, char *err, size_t err_len)
{
    const struct token_req *t = ctx;
    struct sbuf req = {0}, resp = {0};
    struct review_token_result r = {0};
    int rc = review_token_request(t->token, t->len, a->opts.audiences, a->opts.n_audiences, &req);

    if (rc != 0) {
        set_err(err, err_len, "token too long");
        goto out;
    }
    rc = post(a, REVIEW_TOKENREVIEW_PATH, &req, &resp, err, err_len);
    if (rc != 0) {
        goto out;
    }
    rc = review_token_parse(resp.p, resp.len, a->opts.audiences, a->opts.n_audiences, &r);
    if (rc == 0 && r.authenticated) {
        rc = identity_add_authenticated(r.id);
    }
    if (rc != 0) {
        set_err(err, err_len,
                rc == -E2BIG ? "the reviewed user exceeds kwp's identity limits"
                             : "malformed TokenReview response");
        rc = rc == -E2BIG ? -E2BIG : -EIO;
        goto out;
    }
    if (r.authenticated) {
        *o = REVIEW_OUTCOME_ALLOWED;
        identity_encode(r.id, val);
    } else {
        /* the cached token authenticator keeps no errors: an answer with status.error is
         * this request's only */
        *o = REVIEW_OUTCOME_DENIED;
        *store = r.error[0] == '\0';
        set_err(err, err_len, r.error[0] != '\0' ? r.error : "token not authenticated");
    }
out:
    review_token_result_fini(&r);
    sbuf_free(&req);
    sbuf_free(&resp);
    return rc;
}

static int token_review(struct auth *a, const char *token, size_t len, bool cached_only,
                        struct identity **out, char *err, size_t err_len)
{
    const struct token_req t = {token, len};
    struct review_cache_key key;
    struct review_cache_val v = {0};
    int rc;

    *out = NULL;
    clear_err(err, err_len);
    if (len == 0) {
        set_err(err, err_len, "empty token");
        return -EACCES;
    }
    if (len > REVIEW_MAX_TOKEN) {
        set_err(err, err_len, "token too long");
        return -E2BIG;
    }
    rc = review_token_key(a->authn, token, len, a->opts.audiences, a->opts.n_audiences, &key);
    if (rc != 0) {
        set_err(err, err_len, "cannot hash the token");
        return -EIO;
    }
    rc = cached_review(a, a->authn, &key, run_token, &t, cached_only, &v, err, err_len);
    if (rc != 0) {
        return rc;
    }
    if (v.outcome == REVIEW_OUTCOME_ALLOWED) {
        *out = identity_decode(v.data, v.len);
        BUG_ON(*out == NULL); /* only identity_encode output is cached here */
    } else {
        if (err_len > 0 && err[0] == '\0') {
            set_err(err, err_len, "token not authenticated");
        }
        rc = -EACCES;
    }
    review_cache_val_fini(&v);
    return rc;
}

int auth_token(struct auth *a, const char *token, size_t len, struct identity **out, char *err,
               size_t err_len)
{
    return token_review(a, token, len, false, out, err, err_len);
}

int auth_token_cached(struct auth *a, const char *token, size_t len, struct identity **out,
                      char *err, size_t err_len)
{
    return token_review(a, token, len, true, out, err, err_len);
}

/* ---- authorization --------------------------------------------------------------------- */

struct sar_req {
    const struct identity *id;
    const struct review_attrs *attrs;
};

static int run_sar(struct auth *a, const void *ctx, enum review_outcome *o, struct sbuf *val,
                   bool *store, char *err, size_t err_len)
{
    const struct sar_req *s = ctx;
    struct sbuf req = {0}, resp = {0};
    struct review_sar_result r = {0};
    enum review_decision d = REVIEW_NO_OPINION;
    int rc;

    (void)store;
    review_sar_request(s->id, s->attrs, &req);
    rc = post(a, REVIEW_SAR_PATH, &req, &resp, err, err_len);
    if (rc == 0 && review_sar_parse(resp.p, resp.len, &r) != 0) {
        set_err(err, err_len, "malformed SubjectAccessReview response");
        rc = -EIO;
    }
    if (rc == 0 && review_sar_decision(&r, &d) != 0) {
        set_err(err, err_len, REVIEW_SAR_BOTH_TEXT);
        rc = -EIO;
    }
    if (rc == 0) {
        *o = d == REVIEW_ALLOW ? REVIEW_OUTCOME_ALLOWED : REVIEW_OUTCOME_DENIED;
        review_sar_encode(d, r.reason, val);
    }
    review_sar_result_fini(&r);
    sbuf_free(&req);
    sbuf_free(&resp);
    return rc;
}

static int sar_review(struct auth *a, const struct identity *id, const struct review_attrs *attrs,
                      bool cached_only, bool *allowed, char **reason, char *err, size_t err_len)
{
    const struct sar_req s = {id, attrs};
    struct review_cache_key key;
    struct review_cache_val v = {0};
    enum review_decision d;
    int rc;

    *allowed = false;
    *reason = NULL;
    clear_err(err, err_len);
    rc = review_sar_key(a->authz, id, attrs, &key);
    if (rc != 0) {
        set_err(err, err_len, "cannot hash the review");
        return -EIO;
    }
    rc = cached_review(a, a->authz, &key, run_sar, &s, cached_only, &v, err, err_len);
    if (rc != 0) {
        return rc;
    }
    rc = review_sar_decode(v.data, v.len, &d, reason);
    BUG_ON(rc != 0); /* only review_sar_encode output is cached here */
    *allowed = d == REVIEW_ALLOW;
    review_cache_val_fini(&v);
    return 0;
}

int auth_check(struct auth *a, const struct identity *id, const struct review_attrs *attrs,
               bool *allowed, char **reason, char *err, size_t err_len)
{
    return sar_review(a, id, attrs, false, allowed, reason, err, err_len);
}

int auth_check_cached(struct auth *a, const struct identity *id, const struct review_attrs *attrs,
                      bool *allowed, char **reason, char *err, size_t err_len)
{
    return sar_review(a, id, attrs, true, allowed, reason, err, err_len);
}
