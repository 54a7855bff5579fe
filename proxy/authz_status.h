/*
 * authz_status.h - the answers kube-apiserver gives when authentication or authorization says
 * no (AUTH.md 3-5): the 401 and 403 Status bodies, byte for byte, and the plain-text 500 of
 * responsewriters.InternalError (a review that could not be made, impersonation headers
 * without Impersonate-User, a request path RequestInfo cannot read).
 *
 * The 403 message is built as responsewriters.Forbidden and apierrors.NewForbidden build it:
 *   [<resource>[.<group>] [%q name] is ]forbidden: User %q cannot <verb> resource %q in API
 *   group %q {in the namespace %q | at the cluster scope}[: <reason>]
 *   (non-resource: "forbidden: User %q cannot <verb> path %q")
 * where only the "User ..." sentence has & < > replaced by &amp; &lt; &gt; (the resource name,
 * the prefix and the reason are not), %q is Go's strconv.Quote, and a subresource shows as
 * "pods/log" in the sentence while details.kind stays the resource.
 * Pure functions; any thread. Depends on kstatus.h (Status builder), review.h.
 */
#ifndef KWP_PROXY_AUTHZ_STATUS_H
#define KWP_PROXY_AUTHZ_STATUS_H

#include <stddef.h>

#include "proxy/kstatus.h"
#include "proxy/review.h"

/* The response headers of these answers. */
#define AUTHZ_STATUS_NOSNIFF_HEADER "X-Content-Type-Options"
#define AUTHZ_STATUS_NOSNIFF_VALUE "nosniff"               /* on the 403 and the 500 */
#define AUTHZ_STATUS_TEXT_TYPE "text/plain; charset=utf-8" /* the 500's Content-Type */

/* 401 {"kind":"Status",...,"message":"Unauthorized","reason":"Unauthorized","code":401}. */
void authz_status_unauthorized(struct kstatus *st);

/*
 * 403 Forbidden for <user> asking <a> (a request's attributes, or an impersonation check's
 * with verb "impersonate"), with the reviewer's <reason> (NULL or "" = none) appended as
 * ": <reason>". details: name, group and kind=<resource>; {} for a non-resource request.
 * <st> borrows a->name, a->group and a->resource: they must outlive kstatus_json.
 * A message longer than struct kstatus holds is cut there (kstatus.message's size).
 * Send it with AUTHZ_STATUS_NOSNIFF_*; a WATCH gets it as its HTTP answer, not an event.
 */
void authz_status_forbidden(struct kstatus *st, const char *user, const struct review_attrs *a,
                            const char *reason);

/*
 * The 500 body of responsewriters.InternalError: Internal Server Error: %q: <err>, with
 * %q of <request_uri> (path and raw query as the client sent them) and & < > replaced as in
 * the 403, plus "\n" (http.Error). Send it with code 500, AUTHZ_STATUS_TEXT_TYPE and
 * AUTHZ_STATUS_NOSNIFF_*. Returns the body length; writes at most cap-1 bytes plus a NUL
 * (snprintf semantics).
 */
size_t authz_status_internal_error(const char *request_uri, const char *err, char *buf, size_t cap);

#endif
