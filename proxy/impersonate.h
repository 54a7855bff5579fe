/*
 * impersonate.h - Impersonate-* headers both ways (AUTH.md 5).
 *
 * In: a caller's Impersonate-User / -Group / -Uid / -Extra-KEY headers become the identity it
 * asks to act as, plus the list of "impersonate" checks kube-apiserver's WithImpersonation
 * makes for the requesting user, in its order (user or service account, each group, each
 * extra value, the uid). Every check must be allowed before the identity is used; the first
 * refusal is the 403 (authz_status_forbidden with the check's attributes).
 * Out: the headers kwp sets on its own upstream requests to carry a caller's identity, as
 * client-go's impersonatingRoundTripper writes them.
 * Pure functions; any thread; no locks. Depends on identity.h and review.h.
 */
#ifndef KWP_PROXY_IMPERSONATE_H
#define KWP_PROXY_IMPERSONATE_H

#include <stdbool.h>
#include <stddef.h>

#include "proxy/identity.h"
#include "proxy/review.h"

#define IMPERSONATE_MAX_HEADER_BYTES 16384 /* names + values of all Impersonate-* headers */

#define IMPERSONATE_USER "Impersonate-User"
#define IMPERSONATE_GROUP "Impersonate-Group"
#define IMPERSONATE_UID "Impersonate-Uid"
#define IMPERSONATE_EXTRA_PREFIX "Impersonate-Extra-"

/* One request header, in the order received (repeated headers appear once per line). */
struct impersonate_hdr {
    const char *name;
    const char *value;
};

/* What a request asks to impersonate. All memory is owned (impersonate_req_fini). */
struct impersonate_req {
    struct identity *as;         /* NULL: no impersonation asked for */
    struct review_attrs *checks; /* n_checks, verb "impersonate"; strings point into <as>
                                    and <arena> */
    size_t n_checks;
    char *arena; /* private: the service account's namespace and name */
};

/*
 * Reads the Impersonate-* headers among <h> (names compared case-insensitively, as Go's
 * canonical header keys make them). Impersonate-User and Impersonate-Uid: the first value
 * counts, and an empty one is absent. Impersonate-Extra-KEY: KEY lowercased, then
 * percent-decoded (url.PathUnescape; a bad escape keeps the text; %00 stays "%00" because a
 * C string cannot hold the NUL); values of one key, also across spellings, are merged in
 * order. A user system:serviceaccount:NS:NAME with a valid namespace and name is that
 * service account (checked on "serviceaccounts" in NS); without any Impersonate-Group it
 * gets the groups system:serviceaccounts and system:serviceaccounts:NS. The identity then
 * gets system:authenticated unless it is system:anonymous (which gets
 * system:unauthenticated instead) or already holds one of the two.
 * Returns 0 (out->as NULL when nothing is impersonated), -EINVAL for groups, extra or uid
 * without a user, with `requested [...] without impersonating a user` in <err> (the 500 of
 * authz_status_internal_error), or -E2BIG past IMPERSONATE_MAX_HEADER_BYTES or identity.h's
 * caps, with the limit named in <err> (kwp answers 400). <err> is NUL-terminated, truncated
 * to <err_len>, "" on success. <out> needs impersonate_req_fini on every return.
 */
int impersonate_parse(const struct impersonate_hdr *h, size_t n, struct impersonate_req *out,
                      char *err, size_t err_len);

void impersonate_req_fini(struct impersonate_req *r);

/* True for a header kwp must not forward as the caller sent it: Impersonate-User, -Group,
 * -Uid, -Extra-* (case-insensitive). Authorization is the caller's to drop as well. */
bool impersonate_is_header(const char *name);

/* Receives one header to set upstream; <name> is valid only during the call, <value> is
 * borrowed from the identity. Returns 0 or a negative errno that stops the walk. */
typedef int impersonate_emit_fn(void *ctx, const char *name, const char *value);

/*
 * Emits the headers that make kube-apiserver act as <id>: Impersonate-User, Impersonate-Uid
 * (when set), one Impersonate-Group per group, one Impersonate-Extra-KEY per extra value,
 * KEY percent-encoded as client-go's headerKeyEscape does (bytes outside the RFC 7230 token
 * set, and '%', as %XX). Everything is checked before the first emit, and -EINVAL is
 * returned with nothing emitted when a value could not arrive intact: an empty user (the
 * apiserver would take it as no impersonation), a control byte (CR, LF, NUL, ... except
 * HTAB), or leading or trailing spaces or tabs (the server side trims them, so " g" would
 * arrive as "g"). Otherwise returns 0 or the first error <emit> returned.
 */
int impersonate_headers(const struct identity *id, impersonate_emit_fn *emit, void *ctx);

#endif
