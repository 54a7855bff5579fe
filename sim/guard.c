/*
 * guard.c - the simulator's authentication, impersonation and authorization (guard.h).
 *
 * Each step answers the request itself when it says no, with authz_status.h's bodies. The
 * requesting identity and the impersonated one live only inside guard_admit. Credentials are
 * tried as kube-apiserver's union authenticator tries them: x509 first, then the bearer
 * token; one success is enough, and only when neither was presented can the request be
 * anonymous (FailOnError around the anonymous authenticator).
 */
#include "sim/guard.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cache/bug.h"
#include "cache/sbuf.h"
#include "proxy/auth.h"
#include "proxy/authz_status.h"
#include "proxy/http_server.h"
#include "proxy/identity.h"
#include "proxy/impersonate.h"
#include "proxy/reqinfo.h"
#include "sim/rbac.h"
#include "sim/reviews.h"
#include "sim/tokenfile.h"

#define GUARD_INVALID_TOKEN "invalid bearer token" /* bearertoken.go's invalidToken */
/* Impersonate-* lines looked at (their bytes are capped by impersonate.h) */
#define GUARD_MAX_IMPERSONATE_HDRS 1024

struct guard {
    char *token;             /* --token, or NULL */
    struct tokenfile *users; /* --token-auth-file, or NULL */
    struct rbac *rules;      /* --authorization-rules, or NULL: allow everything */
    bool client_certs;
    bool anonymous;
    bool open; /* no authentication and no rules: admit everything untouched */
    atomic_uint_least64_t tokenreviews;
    atomic_uint_least64_t sars;
};

struct guard *guard_new(const struct guard_opts *o, char *err, size_t err_len)
{
    struct guard *g = xcalloc(1, sizeof(*g));

    if (o->token != NULL && o->token[0] != '\0') {
        g->token = xstrdup(o->token);
    }
    if (o->token_auth_file != NULL && o->token_auth_file[0] != '\0') {
        g->users = tokenfile_load(o->token_auth_file, err, err_len);
        if (g->users == NULL) {
            guard_free(g);
            return NULL;
        }
    }
    if (o->rules_file != NULL && o->rules_file[0] != '\0') {
        g->rules = rbac_load(o->rules_file, err, err_len);
        if (g->rules == NULL) {
            guard_free(g);
            return NULL;
        }
    }
    g->client_certs = o->client_certs;
    g->anonymous = o->anonymous;
    g->open = g->token == NULL && g->users == NULL && g->rules == NULL && !g->client_certs;
    return g;
}

void guard_free(struct guard *g)
{
    if (g == NULL) {
        return;
    }
    free(g->token);
    tokenfile_free(g->users);
    rbac_free(g->rules);
    free(g);
}

void guard_stats(const struct guard *g, uint64_t *tokenreviews, uint64_t *subjectaccessreviews)
{
    *tokenreviews = atomic_load(&g->tokenreviews);
    *subjectaccessreviews = atomic_load(&g->sars);
}

/* ---- answers --------------------------------------------------------------------------- */

static void reply_forbidden(struct http_req *req, const char *user, const struct review_attrs *a,
                            const char *reason)
{
    struct kstatus st;

    /* http_server adds X-Content-Type-Options: nosniff to every answer >= 400 */
    authz_status_forbidden(&st, user, a, reason);
    http_reply_status(req, &st);
}

static void reply_unauthorized(struct http_req *req)
{
    struct kstatus st;

    authz_status_unauthorized(&st);
    http_reply_status(req, &st);
}

/* responsewriters.InternalError: the plain-text 500. */
static void reply_internal(struct http_req *req, const char *text)
{
    size_t len = authz_status_internal_error(http_req_uri(req), text, NULL, 0);
    char *body = xmalloc(len + 1);

    authz_status_internal_error(http_req_uri(req), text, body, len + 1);
    http_reply(req, 500, AUTHZ_STATUS_TEXT_TYPE, body, len);
    free(body);
}

/* ---- authorization --------------------------------------------------------------------- */

/* The decision for <id> doing <a>; *reason is owned by the caller. */
static enum review_decision decide(const struct guard *g, const struct identity *id,
                                   const struct review_attrs *a, char **reason)
{
    if (g->rules == NULL) {
        *reason = xstrdup("");
        return REVIEW_ALLOW; /* --authorization-mode=AlwaysAllow */
    }
    return rbac_authorize(g->rules, id, a, reason);
}

/* Authorizes <a> for <id>; on a refusal answers the 403 for <id> and returns false. */
static bool allowed_or_403(const struct guard *g, struct http_req *req, const struct identity *id,
                           const struct review_attrs *a)
{
    char *reason = NULL;
    bool ok = decide(g, id, a, &reason) == REVIEW_ALLOW;

    if (!ok) {
        reply_forbidden(req, id->user, a, reason);
    }
    free(reason);
    return ok;
}

/* ---- authentication -------------------------------------------------------------------- */

/* The identity of bearer token tok[0..len) (a new one, system:authenticated not added yet), or
 * NULL when no token user has it. */
static struct identity *token_identity(const struct guard *g, const char *tok, size_t len)
{
    const struct identity *u;
    struct identity *id;

    if (g->token != NULL && strlen(g->token) == len && memcmp(g->token, tok, len) == 0) {
        id = identity_new(GUARD_TOKEN_USER);
        (void)identity_add_group(id, GUARD_TOKEN_GROUP);
        return id;
    }
    u = g->users != NULL ? tokenfile_lookup(g->users, tok, len) : NULL;
    return u != NULL ? identity_dup(u) : NULL;
}

/* Who the request is: a new identity, or NULL after answering 401. */
static struct identity *authenticate(const struct guard *g, struct http_req *req)
{
    struct identity *id = NULL;
    const char *tok;
    size_t tok_len;
    /* the x509 authenticator (proxy/tls.c): 0 verified, -ENOENT none, -EACCES refused */
    int cert = g->client_certs ? http_req_client_identity(req, &id) : -ENOENT;
    bool has_token = auth_bearer_token(http_req_header(req, "Authorization"), &tok, &tok_len);

    if (cert != 0 && has_token) {
        id = token_identity(g, tok, tok_len);
    }
    if (id == NULL && cert == -ENOENT && !has_token && g->anonymous) {
        return identity_anonymous_new();
    }
    if (id == NULL || identity_add_authenticated(id) != 0) {
        identity_free(id);
        reply_unauthorized(req);
        return NULL;
    }
    return id;
}

/* ---- impersonation --------------------------------------------------------------------- */

struct hdr_list {
    struct impersonate_hdr *h;
    size_t n, cap;
};

static bool collect_impersonate(void *ctx, const char *name, const char *value)
{
    struct hdr_list *l = ctx;

    if (!impersonate_is_header(name)) {
        return true;
    }
    if (l->n == l->cap) {
        if (l->cap >= GUARD_MAX_IMPERSONATE_HDRS) {
            return false;
        }
        l->cap = l->cap ? l->cap * 2 : 8;
        l->h = xrealloc(l->h, l->cap * sizeof(*l->h));
    }
    l->h[l->n].name = name;
    l->h[l->n].value = value;
    l->n++;
    return true;
}

/*
 * WithImpersonation: NULL with *as unchanged when nothing is impersonated; otherwise every
 * check authorized for <caller>, then *as becomes the impersonated identity (a new one).
 * Returns false after answering the refusal.
 */
static bool impersonate(const struct guard *g, struct http_req *req, const struct identity *caller,
                        struct identity **as)
{
    struct hdr_list l = {0};
    struct impersonate_req ir;
    char err[512];
    bool ok = true;
    int rc;

    http_req_headers(req, collect_impersonate, &l);
    rc = impersonate_parse(l.h, l.n, &ir, err, sizeof(err));
    if (rc == -EINVAL) {
        reply_internal(req, err);
        ok = false;
    } else if (rc != 0) {
        struct kstatus st;

        kstatus_set(&st, 400, "BadRequest", "%s", err);
        http_reply_status(req, &st);
        ok = false;
    }
    for (size_t i = 0; ok && ir.as != NULL && i < ir.n_checks; i++) {
        ok = allowed_or_403(g, req, caller, &ir.checks[i]);
    }
    if (ok && ir.as != NULL) {
        *as = ir.as;
        ir.as = NULL;
    }
    impersonate_req_fini(&ir);
    free(l.h);
    return ok;
}

/* ---- the chain ------------------------------------------------------------------------- */

bool guard_admit(struct guard *g, struct http_req *req)
{
    struct reqinfo ri;
    struct review_attrs attrs;
    struct identity *caller = NULL, *as = NULL;
    const struct k8s_query_kv *q;
    size_t nq;
    bool ok = false;

    if (g->open) {
        return true;
    }
    q = http_req_query(req, &nq);
    if (reqinfo_parse(http_req_method(req), http_req_path(req), q, nq, &ri) != 0) {
        struct sbuf text = {0};

        sbuf_str(&text, "failed to create RequestInfo: " REQINFO_ERR_NO_KIND);
        sbuf_str(&text, http_req_uri(req));
        reply_internal(req, text.p);
        sbuf_free(&text);
        goto out;
    }
    caller = authenticate(g, req);
    if (caller == NULL) {
        goto out;
    }
    if (!impersonate(g, req, caller, &as)) {
        goto out;
    }
    reqinfo_attrs(&ri, &attrs);
    ok = allowed_or_403(g, req, as != NULL ? as : caller, &attrs);
out:
    identity_free(as);
    identity_free(caller);
    reqinfo_fini(&ri);
    return ok;
}

/* ---- the review APIs ------------------------------------------------------------------- */

static void reply_sbuf(struct http_req *req, int code, struct sbuf *sb)
{
    http_reply(req, code, "application/json", sb->p, sb->len);
    sbuf_free(sb);
}

void guard_serve_tokenreview(struct guard *g, struct http_req *req)
{
    struct reviews_token t;
    struct reviews_error e;
    struct identity *id = NULL;
    struct sbuf out = {0};
    size_t len;
    const char *body = http_req_body(req, &len);

    if (reviews_token_read(body, len, &t, &e) != 0) {
        http_reply_status(req, &e.st);
        reviews_token_fini(&t);
        return;
    }
    id = token_identity(g, t.token, strlen(t.token));
    if (id != NULL && identity_add_authenticated(id) != 0) {
        identity_free(id);
        id = NULL;
    }
    reviews_token_answer(&t, id, id != NULL ? "" : GUARD_INVALID_TOKEN, &out);
    atomic_fetch_add(&g->tokenreviews, 1);
    reply_sbuf(req, 201, &out);
    identity_free(id);
    reviews_token_fini(&t);
}

void guard_serve_sar(struct guard *g, struct http_req *req)
{
    struct reviews_sar r;
    struct reviews_error e;
    struct sbuf out = {0};
    enum review_decision d;
    char *reason = NULL;
    size_t len;
    const char *body = http_req_body(req, &len);

    if (reviews_sar_read(body, len, &r, &e) != 0) {
        http_reply_status(req, &e.st);
        reviews_sar_fini(&r);
        return;
    }
    d = decide(g, r.id, &r.a, &reason);
    reviews_sar_answer(&r, d, reason, &out);
    atomic_fetch_add(&g->sars, 1);
    reply_sbuf(req, 201, &out);
    free(reason);
    reviews_sar_fini(&r);
}
