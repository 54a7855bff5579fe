/*
 * guard.h - kwp sim as an authenticating, authorizing kube-apiserver (AUTH.md 3-5): every
 * request passes kube-apiserver's filter chain here (below) before it is routed, and the
 * simulator's TokenReview and SubjectAccessReview APIs answer from the same users and rules.
 * The guard is open (guard_admit lets everything through, as the simulator always did) when
 * no authentication flag and no rule file is given.
 * Built before the server starts, then only read; the review counters are atomic. guard_* run
 * on MHD threads; no locks. Depends on proxy/ (http_server, which hands over the verified
 * client certificate through tls.c, identity, reqinfo, impersonate, authz_status, review) and
 * sim/ (tokenfile, rbac, reviews).
 */
#ifndef KWP_SIM_GUARD_H
#define KWP_SIM_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct guard;
struct http_req;

/*
 * The chain, in kube-apiserver's order:
 *   RequestInfo (500 when the path cannot be read)
 *   -> authentication: a verified client certificate (CN user, every O a group), else a bearer
 *      token (--token: kubernetes-admin in system:masters; --token-auth-file users), else
 *      anonymous with --anonymous-auth; a credential that fails is a 401, never anonymous;
 *      every authenticated user gets system:authenticated
 *   -> impersonation (Impersonate-* headers, each check authorized for the caller with verb
 *      impersonate; a refusal is the 403 naming the caller)
 *   -> authorization of the request's attributes for the (impersonated) user: the
 *      --authorization-rules (rbac.h), or everything when there are none
 */

/* The user and group of the --token credential. */
#define GUARD_TOKEN_USER "kubernetes-admin"
#define GUARD_TOKEN_GROUP "system:masters"

struct guard_opts {
    const char *token;           /* --token: this bearer token is GUARD_TOKEN_USER (NULL/""=no) */
    const char *token_auth_file; /* --token-auth-file (tokenfile.h) */
    bool client_certs;           /* --client-ca-file: the server asks for and the guard verifies
                                    client certificates */
    const char *rules_file;      /* --authorization-rules (rbac.h) */
    bool anonymous;              /* --anonymous-auth */
};

/* Loads the token file and the rule file. Returns a new guard (the caller owns it: guard_free)
 * or NULL with the file's error (naming the line) in <err>. */
struct guard *guard_new(const struct guard_opts *o, char *err, size_t err_len);

/* Frees <g>. No guard_* call may be running. NULL-safe. */
void guard_free(struct guard *g);

/*
 * Runs the chain above for <req>. Returns true when the request may be served; false when the
 * guard answered it (401, 403, 400 for impersonation
 * headers past impersonate.h's caps, the plain-text 500). Call once per request, before
 * routing. MHD thread.
 */
bool guard_admit(struct guard *g, struct http_req *req);

/*
 * POST /apis/authentication.k8s.io/v1/tokenreviews (a JSON body; the caller checked method
 * and Content-Type): 201 with the review of spec.token against the simulator's token users
 * ("invalid bearer token" for any other), or the 400 of reviews.h. MHD thread.
 */
void guard_serve_tokenreview(struct guard *g, struct http_req *req);

/*
 * POST /apis/authorization.k8s.io/v1/subjectaccessreviews: 201 with the decision of the
 * rules (or allowed, with none) for the spec's user and attributes, or the 400/422 of
 * reviews.h. MHD thread.
 */
void guard_serve_sar(struct guard *g, struct http_req *req);

/* Reviews answered 201 so far (for /_sim/stats). Any thread. */
void guard_stats(const struct guard *g, uint64_t *tokenreviews, uint64_t *subjectaccessreviews);

#endif
