/*
 * test_reviews.c - sim/reviews: TokenReview and SubjectAccessReview requests read as the
 * apiserver reads them and the 201 bodies of AUTH.md 3 and 4 byte for byte (the spec echoed
 * as sent), the decoder's 400s and ValidateSubjectAccessReviewSpec's 422s.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cache/sbuf.h"
#include "sim/reviews.h"

/* AUTH.md 3's TokenReview request and 4's SubjectAccessReview request. */
#define TR_REQ                                                                                     \
    "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\",\"spec\":{\"token\":"   \
    "\"T\",\"audiences\":[\"A\"]}}"
#define SAR_SPEC                                                                                   \
    "{\"resourceAttributes\":{\"namespace\":\"b\",\"verb\":\"list\",\"group\":\"\",\"version\":"   \
    "\"v1\",\"resource\":\"pods\",\"subresource\":\"\",\"name\":\"\"},\"user\":\"alice\","         \
    "\"groups\":[\"devs\",\"system:authenticated\"],\"extra\":{\"k\":[\"v\"]},\"uid\":\"42\"}"
#define SAR_REQ                                                                                    \
    "{\"apiVersion\":\"authorization.k8s.io/"                                                      \
    "v1\",\"kind\":\"SubjectAccessReview\",\"spec\":" SAR_SPEC "}"
#define SAR_HEAD                                                                                   \
    "{\"kind\":\"SubjectAccessReview\",\"apiVersion\":\"authorization.k8s.io/v1\",\"metadata\":"   \
    "{\"creationTimestamp\":null},\"spec\":"

/* The Status of <e> as JSON. */
static const char *status_json(const struct reviews_error *e)
{
    static char buf[2048];

    kstatus_json(&e->st, buf, sizeof(buf));
    return buf;
}

Test(reviews, token_review_round_trip_as_auth_md)
{
    struct reviews_token t;
    struct reviews_error e;
    struct identity *id = identity_new("alice");
    struct sbuf out = {0};

    cr_assert_eq(reviews_token_read(TR_REQ, strlen(TR_REQ), &t, &e), 0);
    cr_assert_str_eq(t.token, "T");
    cr_assert_eq(t.n_audiences, 1);
    cr_assert_str_eq(t.audiences[0], "A");
    cr_assert_eq(identity_set_uid(id, "42"), 0);
    cr_assert_eq(identity_add_group(id, "devs"), 0);
    cr_assert_eq(identity_add_group(id, "system:authenticated"), 0);
    cr_assert_eq(identity_add_extra(id, "k", "v"), 0);
    reviews_token_answer(&t, id, "", &out);
    cr_assert_str_eq(out.p, "{\"kind\":\"TokenReview\",\"apiVersion\":\"authentication.k8s.io/v1\","
                            "\"metadata\":{\"creationTimestamp\":null},\"spec\":{\"token\":\"T\","
                            "\"audiences\":[\"A\"]},\"status\":{\"authenticated\":true,\"user\":{"
                            "\"username\":\"alice\",\"uid\":\"42\",\"groups\":[\"devs\","
                            "\"system:authenticated\"],\"extra\":{\"k\":[\"v\"]}},\"audiences\":"
                            "[\"A\"]}}\n");
    sbuf_free(&out);
    reviews_token_answer(&t, NULL, "invalid bearer token", &out);
    cr_assert_str_eq(out.p,
                     "{\"kind\":\"TokenReview\",\"apiVersion\":\"authentication.k8s.io/v1\","
                     "\"metadata\":{\"creationTimestamp\":null},\"spec\":{\"token\":\"T\","
                     "\"audiences\":[\"A\"]},\"status\":{\"user\":{},\"error\":\"invalid bearer "
                     "token\"}}\n");
    sbuf_free(&out);
    identity_free(id);
    reviews_token_fini(&t);
}

Test(reviews, token_review_without_audiences_omits_them)
{
    static const char req[] = "{\"spec\":{\"token\":\"x<y\"}}";
    struct reviews_token t;
    struct reviews_error e;
    struct identity *id = identity_new("bob");
    struct sbuf out = {0};

    cr_assert_eq(reviews_token_read(req, strlen(req), &t, &e), 0);
    cr_assert_str_eq(t.token, "x<y");
    reviews_token_answer(&t, id, "", &out);
    cr_assert(strstr(out.p, "\"spec\":{\"token\":\"x<y\"},\"status\":{\"authenticated\":true,"
                            "\"user\":{\"username\":\"bob\"}}}\n") != NULL,
              "%s", out.p);
    sbuf_free(&out);
    identity_free(id);
    reviews_token_fini(&t);
}

Test(reviews, token_review_bad_requests)
{
    struct reviews_token t;
    struct reviews_error e;
    static const char *const no_token[] = {"{}", "{\"spec\":null}", "{\"spec\":{\"token\":\"\"}}"};

    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(reviews_token_read(no_token[i], strlen(no_token[i]), &t, &e), -EINVAL);
        cr_assert_str_eq(status_json(&e),
                         "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                         "\"Failure\",\"message\":\"token is required for TokenReview in "
                         "authentication\",\"reason\":\"BadRequest\",\"code\":400}");
        reviews_token_fini(&t);
    }
    cr_assert_eq(reviews_token_read("{\"spec\":{\"token\":5}}", 20, &t, &e), -EINVAL);
    cr_assert_str_eq(e.st.message, "TokenReview in version \"v1\" cannot be handled as a "
                                   "TokenReview: json: cannot unmarshal number into Go struct "
                                   "field TokenReviewSpec.spec.token of type string");
    reviews_token_fini(&t);
    cr_assert_eq(reviews_token_read("{\"spec\":{\"token\":\"t\",\"audiences\":[1]}}", 38, &t, &e),
                 -EINVAL);
    cr_assert_str_eq(e.st.message, "TokenReview in version \"v1\" cannot be handled as a "
                                   "TokenReview: json: cannot unmarshal number into Go struct "
                                   "field TokenReviewSpec.spec.audiences of type string");
    reviews_token_fini(&t);
    cr_assert_eq(reviews_token_read("{\"spec\":[]}", 11, &t, &e), -EINVAL);
    cr_assert_str_eq(e.st.message, "TokenReview in version \"v1\" cannot be handled as a "
                                   "TokenReview: json: cannot unmarshal array into Go struct "
                                   "field TokenReview.spec of type v1.TokenReviewSpec");
    reviews_token_fini(&t);
    /* an escaped NUL would cut the token short in a C string: refused */
    cr_assert_eq(reviews_token_read("{\"spec\":{\"token\":\"a\\u0000b\"}}", 29, &t, &e), -EINVAL);
    cr_assert_eq(e.st.code, 400);
    reviews_token_fini(&t);
    cr_assert_eq(reviews_token_read("", 0, &t, &e), -EINVAL);
    cr_assert_eq(e.st.code, 400);
    reviews_token_fini(&t);
}

Test(reviews, sar_round_trip_as_auth_md)
{
    struct reviews_sar r;
    struct reviews_error e;
    struct sbuf out = {0};

    cr_assert_eq(reviews_sar_read(SAR_REQ, strlen(SAR_REQ), &r, &e), 0);
    cr_assert(r.a.is_resource);
    cr_assert_str_eq(r.a.ns, "b");
    cr_assert_str_eq(r.a.verb, "list");
    cr_assert_str_eq(r.a.group, "");
    cr_assert_str_eq(r.a.version, "v1");
    cr_assert_str_eq(r.a.resource, "pods");
    cr_assert_str_eq(r.id->user, "alice");
    cr_assert_str_eq(r.id->uid, "42");
    cr_assert_eq(r.id->n_groups, 2);
    cr_assert_eq(r.id->n_extra, 1);
    cr_assert_str_eq(r.id->extra[0].values[0], "v");
    reviews_sar_answer(&r, REVIEW_ALLOW, "RBAC: allowed by rule \"x\" to User \"alice\"", &out);
    cr_assert_str_eq(out.p,
                     SAR_HEAD SAR_SPEC ",\"status\":{\"allowed\":true,\"reason\":\"RBAC: "
                                       "allowed by rule \\\"x\\\" to User \\\"alice\\\"\"}}\n");
    sbuf_free(&out);
    reviews_sar_answer(&r, REVIEW_NO_OPINION, "", &out);
    cr_assert_str_eq(out.p, SAR_HEAD SAR_SPEC
                     ",\"status\":{\"allowed\":false,\"reason\":\"\",\"denied\":false}}\n");
    sbuf_free(&out);
    reviews_sar_answer(&r, REVIEW_DENY, "denied by rule \"d\"", &out);
    cr_assert_str_eq(out.p, SAR_HEAD SAR_SPEC ",\"status\":{\"allowed\":false,\"reason\":\"denied "
                                              "by rule \\\"d\\\"\",\"denied\":true}}\n");
    sbuf_free(&out);
    reviews_sar_fini(&r);
}

Test(reviews, sar_non_resource)
{
    static const char req[] = "{\"spec\":{\"nonResourceAttributes\":{\"path\":\"/metrics\","
                              "\"verb\":\"get\"},\"groups\":[\"g\"]}}";
    struct reviews_sar r;
    struct reviews_error e;

    cr_assert_eq(reviews_sar_read(req, strlen(req), &r, &e), 0);
    cr_assert_not(r.a.is_resource);
    cr_assert_str_eq(r.a.path, "/metrics");
    cr_assert_str_eq(r.a.verb, "get");
    cr_assert_str_eq(r.id->user, "");
    cr_assert_str_eq(r.id->groups[0], "g");
    reviews_sar_fini(&r);
}

Test(reviews, sar_validation_422s)
{
    static const char neither[] = "{\"spec\":{\"user\":\"a\"}}";
    static const char both_nobody[] = "{\"spec\":{\"resourceAttributes\":{},"
                                      "\"nonResourceAttributes\":{\"path\":\"/x\"}}}";
    struct reviews_sar r;
    struct reviews_error e;

    cr_assert_eq(reviews_sar_read(neither, strlen(neither), &r, &e), -EDOM);
    cr_assert_str_eq(status_json(&e),
                     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                     "\"Failure\",\"message\":\"SubjectAccessReview.authorization.k8s.io \\\"\\\" "
                     "is invalid: spec.resourceAttributes: Invalid value: \\\"null\\\": exactly "
                     "one of nonResourceAttributes or resourceAttributes must be specified\","
                     "\"reason\":\"Invalid\",\"details\":{\"group\":\"authorization.k8s.io\","
                     "\"kind\":\"SubjectAccessReview\",\"causes\":[{\"reason\":"
                     "\"FieldValueInvalid\",\"message\":\"Invalid value: \\\"null\\\": exactly "
                     "one of nonResourceAttributes or resourceAttributes must be specified\","
                     "\"field\":\"spec.resourceAttributes\"}]},\"code\":422}");
    reviews_sar_fini(&r);
    cr_assert_eq(reviews_sar_read(both_nobody, strlen(both_nobody), &r, &e), -EDOM);
    cr_assert_str_eq(e.st.message,
                     "SubjectAccessReview.authorization.k8s.io \"\" is invalid: "
                     "[spec.nonResourceAttributes: Invalid value: "
                     "authorization.NonResourceAttributes{Path:\"/x\", Verb:\"\"}: cannot be "
                     "specified in combination with resourceAttributes, spec.user: Invalid "
                     "value: \"\": at least one of user or group must be specified]");
    cr_assert_eq(e.st.n_causes, 2);
    cr_assert_str_eq(e.st.causes[1].field, "spec.user");
    reviews_sar_fini(&r);
}

Test(reviews, sar_type_errors_are_400s)
{
    static const char *const bodies[] = {
        "{\"spec\":{\"user\":5,\"nonResourceAttributes\":{}}}",
        "{\"spec\":{\"user\":\"a\",\"groups\":\"g\",\"nonResourceAttributes\":{}}}",
        "{\"spec\":{\"user\":\"a\",\"extra\":{\"k\":\"v\"},\"nonResourceAttributes\":{}}}",
        "{\"spec\":{\"user\":\"a\",\"resourceAttributes\":{\"verb\":true}}}",
        "{\"spec\":{\"user\":\"a\",\"resourceAttributes\":[]}}",
        "not json",
    };
    static const char *const want[] = {
        "cannot unmarshal number into Go struct field SubjectAccessReviewSpec.spec.user of type "
        "string",
        "cannot unmarshal string into Go struct field SubjectAccessReviewSpec.spec.groups of "
        "type []string",
        "cannot unmarshal string into Go struct field SubjectAccessReviewSpec.spec.extra of type "
        "v1.ExtraValue",
        "cannot unmarshal bool into Go struct field ResourceAttributes.spec.resourceAttributes."
        "verb of type string",
        "cannot unmarshal array into Go struct field SubjectAccessReviewSpec."
        "spec.resourceAttributes of type v1.ResourceAttributes",
        "couldn't get version/kind; json parse error",
    };
    struct reviews_sar r;
    struct reviews_error e;

    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        cr_assert_eq(reviews_sar_read(bodies[i], strlen(bodies[i]), &r, &e), -EINVAL, "%s",
                     bodies[i]);
        cr_assert_eq(e.st.code, 400);
        cr_assert(strstr(e.st.message, want[i]) != NULL, "%s\n%s", bodies[i], e.st.message);
        reviews_sar_fini(&r);
    }
}
