/*
 * reviews.h - the server side of TokenReview and SubjectAccessReview (AUTH.md 3 and 4): the
 * request bodies kwp sim reads at POST /apis/authentication.k8s.io/v1/tokenreviews and
 * /apis/authorization.k8s.io/v1/subjectaccessreviews, and the 201 bodies it answers:
 *
 *   {"kind":K,"apiVersion":GV,"metadata":{"creationTimestamp":null},"spec":<as sent>,
 *    "status":{...}}
 *
 * The spec is echoed as sent (AUTH.md: "the same"), compact as the client wrote it.
 * Reading follows Go's decoder into the typed structs: an absent or null member is its zero
 * value, a member of another type is a 400 BadRequest with the decoder's text, and the
 * SubjectAccessReview validation's 422 Invalid (ValidateSubjectAccessReviewSpec) comes after.
 * Pure functions; any thread. Depends on identity.h, review.h (attributes, the document
 * parser), kstatus.h (Status), kube_json.h (spans), gotext.h (quoting) and sbuf.h.
 */
#ifndef KWP_SIM_REVIEWS_H
#define KWP_SIM_REVIEWS_H

#include <stdbool.h>
#include <stddef.h>

#include "proxy/identity.h"
#include "proxy/kstatus.h"
#include "proxy/review.h"

struct sbuf;

#define REVIEWS_MAX_CAUSE 512 /* bytes of one 422 cause message */

/* A refusal to answer a review: the Status to send and the texts it borrows. */
struct reviews_error {
    struct kstatus st;
    char cause_msg[3][REVIEWS_MAX_CAUSE];
};

/* A TokenReview request. Owned strings (reviews_token_fini). */
struct reviews_token {
    char *token; /* spec.token ("" when absent) */
    char **audiences;
    size_t n_audiences;
    char *spec; /* the spec as sent ("{}" when absent or null) */
};

/*
 * Reads a TokenReview request body. Returns 0, or -EINVAL with the 400 in <e>: not a JSON
 * object, a member of the wrong type, or an empty spec.token ("token is required for
 * TokenReview in authentication"). <out> needs reviews_token_fini on every return.
 */
int reviews_token_read(const char *body, size_t len, struct reviews_token *out,
                       struct reviews_error *e);

void reviews_token_fini(struct reviews_token *t);

/*
 * Appends the 201 body (with "\n") for <t>: authenticated as <id> (NULL: not) with
 * status.audiences = the requested audiences when there are any; when not authenticated,
 * "status":{"user":{},"error":<error>} ("error" omitted when <error> is "").
 */
void reviews_token_answer(const struct reviews_token *t, const struct identity *id,
                          const char *error, struct sbuf *out);

/* A SubjectAccessReview request. All memory owned (reviews_sar_fini). */
struct reviews_sar {
    struct identity *id;   /* spec.user, groups, extra, uid as given (nothing added) */
    struct review_attrs a; /* spec.resourceAttributes or nonResourceAttributes */
    char *strs[7];         /* private: the strings <a> points to */
    char *spec;            /* the spec as sent */
};

/*
 * Reads a SubjectAccessReview request body. Returns 0, -EINVAL with a 400 in <e> (not a JSON
 * object, wrong types, past identity.h's caps), or -EDOM with the 422 of
 * ValidateSubjectAccessReviewSpec in <e> (both or neither attribute kinds, no user and no
 * groups). <out> needs reviews_sar_fini on every return.
 */
int reviews_sar_read(const char *body, size_t len, struct reviews_sar *out,
                     struct reviews_error *e);

void reviews_sar_fini(struct reviews_sar *r);

/*
 * Appends the 201 body (with "\n") for <r> decided <d> with <reason>:
 * "status":{"allowed":true,"reason":R} or {"allowed":false,"reason":R,"denied":D} (D true
 * only for REVIEW_DENY).
 */
void reviews_sar_answer(const struct reviews_sar *r, enum review_decision d, const char *reason,
                        struct sbuf *out);

#endif
