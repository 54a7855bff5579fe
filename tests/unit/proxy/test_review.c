/*
 * test_review.c - proxy/review.h: TokenReview and SubjectAccessReview request bytes (AUTH.md
 * 3 and 4, key order exact), response parsing as Go's typed decode reads it (absent and null
 * members, wrong types, the audience rule, NUL refusals, caps), the SAR decision, the cache
 * keys and the cached form of a SAR answer.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/sbuf.h"
#include "proxy/review.h"

/* ---- TokenReview requests ------------------------------------------------------------ */

Test(review, token_request_bytes)
{
    static const char *const auds[] = {"A"};
    struct sbuf sb = {0};

    cr_assert_eq(review_token_request("T", 1, auds, 1, &sb), 0);
    cr_expect_str_eq(sb.p, "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\","
                           "\"spec\":{\"token\":\"T\",\"audiences\":[\"A\"]}}");
    sbuf_free(&sb);
    cr_assert_eq(review_token_request("a<b>&\"c", 7, NULL, 0, &sb), 0);
    cr_expect_str_eq(sb.p, "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\","
                           "\"spec\":{\"token\":\"a\\u003cb\\u003e\\u0026\\\"c\"}}");
    sbuf_free(&sb);
}

Test(review, token_request_limits)
{
    static char big[REVIEW_MAX_TOKEN + 1];
    const char *auds[REVIEW_MAX_AUDIENCES + 1];
    struct sbuf sb = {0};

    for (size_t i = 0; i <= REVIEW_MAX_AUDIENCES; i++) {
        auds[i] = "a";
    }
    cr_expect_eq(review_token_request("", 0, NULL, 0, &sb), -EINVAL);
    cr_expect_eq(review_token_request(big, sizeof(big), NULL, 0, &sb), -E2BIG);
    cr_expect_eq(review_token_request("t", 1, auds, REVIEW_MAX_AUDIENCES + 1, &sb), -E2BIG);
    cr_expect_null(sb.p);
}

/* ---- TokenReview responses ----------------------------------------------------------- */

#define TR_HEAD                                                                                    \
    "{\"kind\":\"TokenReview\",\"apiVersion\":\"authentication.k8s.io/v1\","                       \
    "\"metadata\":{\"creationTimestamp\":null},\"spec\":{\"token\":\"T\"},"

static const char tr_ok[] =
    TR_HEAD "\"status\":{\"authenticated\":true,\"user\":{\"username\":\"alice\",\"uid\":\"42\","
            "\"groups\":[\"devs\",\"system:authenticated\"],\"extra\":{\"k\":[\"v\"]}},"
            "\"audiences\":[\"A\"]}}\n";

static int token_parse(const char *body, const char *const *auds, size_t n,
                       struct review_token_result *r)
{
    return review_token_parse(body, strlen(body), auds, n, r);
}

Test(review, token_response_authenticated)
{
    static const char *const auds[] = {"B", "A"};
    struct review_token_result r;

    cr_assert_eq(token_parse(tr_ok, auds, 2, &r), 0);
    cr_assert(r.authenticated);
    cr_assert_not_null(r.id);
    cr_expect_str_eq(r.id->user, "alice");
    cr_expect_str_eq(r.id->uid, "42");
    cr_assert_eq(r.id->n_groups, 2);
    cr_expect_str_eq(r.id->groups[0], "devs");
    cr_expect_str_eq(r.id->groups[1], "system:authenticated");
    cr_assert_eq(r.id->n_extra, 1);
    cr_expect_str_eq(r.id->extra[0].key, "k");
    cr_expect_str_eq(r.id->extra[0].values[0], "v");
    cr_expect_str_eq(r.error, "");
    review_token_result_fini(&r);
    /* no audiences configured: no audience check */
    cr_assert_eq(token_parse(tr_ok, NULL, 0, &r), 0);
    cr_expect(r.authenticated);
    review_token_result_fini(&r);
}

Test(review, token_response_denied)
{
    struct review_token_result r;

    cr_assert_eq(
        token_parse(TR_HEAD "\"status\":{\"user\":{},\"error\":\"token expired\"}}", NULL, 0, &r),
        0);
    cr_expect_not(r.authenticated);
    cr_expect_null(r.id);
    cr_expect_str_eq(r.error, "token expired");
    review_token_result_fini(&r);
    cr_assert_eq(token_parse(TR_HEAD "\"status\":{}}", NULL, 0, &r), 0);
    cr_expect_not(r.authenticated);
    review_token_result_fini(&r);
    cr_assert_eq(token_parse("{}", NULL, 0, &r), 0);
    cr_expect_not(r.authenticated);
    review_token_result_fini(&r);
}

Test(review, token_response_audiences)
{
    static const char *const mine[] = {"kwp"};
    static const char no_auds[] =
        TR_HEAD "\"status\":{\"authenticated\":true,\"user\":{\"username\":\"alice\"}}}";
    static const char other[] =
        TR_HEAD "\"status\":{\"authenticated\":true,\"user\":{\"username\":\"alice\"},"
                "\"audiences\":[\"other\",\"x\"]}}";
    struct review_token_result r;

    /* no status.audiences: the implicit ones (the configured ones) intersect */
    cr_assert_eq(token_parse(no_auds, mine, 1, &r), 0);
    cr_expect(r.authenticated);
    review_token_result_fini(&r);
    /* disjoint status.audiences: not authenticated, and no error */
    cr_assert_eq(token_parse(other, mine, 1, &r), 0);
    cr_expect_not(r.authenticated);
    cr_expect_null(r.id);
    review_token_result_fini(&r);
    cr_assert_eq(token_parse(other, NULL, 0, &r), 0);
    cr_expect(r.authenticated);
    review_token_result_fini(&r);
}

Test(review, token_response_nulls_are_zero_values)
{
    static const char body[] =
        "{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"u\",\"uid\":null,"
        "\"groups\":[\"a\",null],\"extra\":{\"k\":null,\"j\":[null]}},\"audiences\":null,"
        "\"error\":null}}";
    struct review_token_result r;

    cr_assert_eq(token_parse(body, NULL, 0, &r), 0);
    cr_assert(r.authenticated);
    cr_expect_str_eq(r.id->uid, "");
    cr_assert_eq(r.id->n_groups, 2);
    cr_expect_str_eq(r.id->groups[1], "");
    cr_assert_eq(r.id->n_extra, 2);
    cr_expect_str_eq(r.id->extra[0].key, "j");
    cr_expect_eq(r.id->extra[0].n_values, 1);
    cr_expect_eq(r.id->extra[1].n_values, 0);
    review_token_result_fini(&r);
}

Test(review, token_response_malformed)
{
    static const char *const bad[] = {
        "",
        "[]",
        "{",
        "{} x",
        "{\"status\":[]}",
        "{\"status\":{\"authenticated\":\"true\"}}",
        "{\"status\":{\"authenticated\":true,\"user\":{\"username\":1}}}",
        "{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"u\",\"groups\":\"g\"}}}",
        "{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"u\",\"groups\":[1]}}}",
        "{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"u\",\"extra\":[]}}}",
        "{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"u\",\"extra\":{\"k\":\"v\"}}}"
        "}",
        "{\"status\":{\"error\":5}}",
        "{\"status\":{\"audiences\":[3]}}",
        /* where cJSON is laxer than Go's decoder */
        "{\"status\":{\"error\":\"\xff\"}}",         /* invalid UTF-8 */
        "{\"status\":{\"error\":\"\xed\xa0\x80\"}}", /* a surrogate */
        "{\"status\":{\"error\":\"\xc0\xaf\"}}",     /* overlong */
        "{\x16\"status\":{}}",                       /* a control byte as space */
        "{\"status\":{\"error\":\"a\nb\"}}",         /* a raw control in a string */
        /* cJSON would read "alice" here */
        "{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"alice\\u0000x\"}}}",
    };
    struct review_token_result r;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_expect_eq(token_parse(bad[i], NULL, 0, &r), -EPROTO, "%s", bad[i]);
        cr_expect_not(r.authenticated);
        cr_expect_null(r.id);
        cr_expect_str_eq(r.error, "");
        review_token_result_fini(&r);
    }
    /* a raw NUL byte */
    cr_expect_eq(review_token_parse("{\"a\":\"\0\"}", 9, NULL, 0, &r), -EPROTO);
    review_token_result_fini(&r);
    /* JSON whitespace and multi-byte UTF-8 are fine */
    cr_expect_eq(
        token_parse("{\r\n\t\"status\" : {\"error\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}}\n",
                    NULL, 0, &r),
        0);
    cr_expect_str_eq(r.error, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    review_token_result_fini(&r);
    /* an escaped backslash followed by u0000 is text, not a NUL */
    cr_expect_eq(token_parse("{\"status\":{\"error\":\"\\\\u0000\"}}", NULL, 0, &r), 0);
    cr_expect_str_eq(r.error, "\\u0000");
    review_token_result_fini(&r);
}

Test(review, token_response_caps)
{
    struct sbuf body = {0};
    struct review_token_result r;

    sbuf_str(&body,
             "{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"u\",\"groups\":[");
    for (int i = 0; i <= IDENTITY_MAX_GROUPS; i++) {
        sbuf_str(&body, i > 0 ? ",\"g\"" : "\"g\"");
    }
    sbuf_str(&body, "]}}}");
    cr_expect_eq(review_token_parse(body.p, body.len, NULL, 0, &r), -E2BIG);
    cr_expect_not(r.authenticated);
    review_token_result_fini(&r);
    sbuf_free(&body);
}

Test(review, token_keys)
{
    static const char *const a[] = {"A"}, *const b[] = {"B"}, *const ab[] = {"A", "B"};
    struct review_cache_opts o = {.ttl_allowed_ms = 1};
    struct review_cache *c = review_cache_new(&o);
    struct review_cache_key k[5];

    cr_assert_eq(review_token_key(c, "tok", 3, a, 1, &k[0]), 0);
    cr_assert_eq(review_token_key(c, "tok", 3, b, 1, &k[1]), 0);
    cr_assert_eq(review_token_key(c, "tok", 3, ab, 2, &k[2]), 0);
    cr_assert_eq(review_token_key(c, "tok", 3, NULL, 0, &k[3]), 0);
    cr_assert_eq(review_token_key(c, "tok", 3, a, 1, &k[4]), 0);
    for (int i = 0; i < 4; i++) {
        for (int j = i + 1; j < 4; j++) {
            cr_expect_neq(memcmp(k[i].d, k[j].d, sizeof(k[i].d)), 0, "%d %d", i, j);
        }
    }
    cr_expect_eq(memcmp(k[0].d, k[4].d, sizeof(k[0].d)), 0);
    review_cache_free(c);
}

/* ---- SubjectAccessReview requests ---------------------------------------------------- */

static struct identity *alice(void)
{
    struct identity *id = identity_new("alice");

    cr_assert_eq(identity_set_uid(id, "42"), 0);
    cr_assert_eq(identity_add_group(id, "devs"), 0);
    cr_assert_eq(identity_add_group(id, "system:authenticated"), 0);
    cr_assert_eq(identity_add_extra(id, "k", "v"), 0);
    return id;
}

static const struct review_attrs list_pods_b = {
    .is_resource = true,
    .verb = "list",
    .ns = "b",
    .group = "",
    .version = "v1",
    .resource = "pods",
    .subresource = "",
    .name = "",
};

Test(review, sar_request_bytes_as_auth_md)
{
    struct identity *id = alice();
    struct sbuf sb = {0};

    review_sar_request(id, &list_pods_b, &sb);
    cr_expect_str_eq(sb.p,
                     "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SubjectAccessReview\","
                     "\"spec\":{\"resourceAttributes\":{\"namespace\":\"b\",\"verb\":\"list\","
                     "\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\",\"subresource\":\"\","
                     "\"name\":\"\"},\"user\":\"alice\",\"groups\":[\"devs\","
                     "\"system:authenticated\"],\"extra\":{\"k\":[\"v\"]},\"uid\":\"42\"}}");
    sbuf_free(&sb);
    identity_free(id);
}

Test(review, sar_request_non_resource_and_omitempty)
{
    struct identity *id = identity_new("system:anonymous");
    const struct review_attrs metrics = {.verb = "get", .path = "/metrics"};
    const struct review_attrs nulls = {.is_resource = true, .verb = "get"};
    struct sbuf sb = {0};

    review_sar_request(id, &metrics, &sb);
    cr_expect_str_eq(sb.p,
                     "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SubjectAccessReview\","
                     "\"spec\":{\"nonResourceAttributes\":{\"path\":\"/metrics\",\"verb\":\"get\"},"
                     "\"user\":\"system:anonymous\"}}");
    sbuf_free(&sb);
    review_sar_request(id, &nulls, &sb);
    cr_expect_str_eq(sb.p,
                     "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SubjectAccessReview\","
                     "\"spec\":{\"resourceAttributes\":{\"namespace\":\"\",\"verb\":\"get\","
                     "\"group\":\"\",\"version\":\"\",\"resource\":\"\",\"subresource\":\"\","
                     "\"name\":\"\"},\"user\":\"system:anonymous\"}}");
    sbuf_free(&sb);
    identity_free(id);
}

Test(review, sar_request_extra_sorted_and_escaped)
{
    struct identity *id = identity_new("a&b");
    struct sbuf sb = {0};

    cr_assert_eq(identity_add_extra(id, "zz", "1"), 0);
    cr_assert_eq(identity_add_extra(id, "aa", "<2>"), 0);
    cr_assert_eq(identity_add_extra(id, "aa", "3"), 0);
    cr_assert_eq(identity_add_extra_key(id, "mm"), 0);
    review_sar_request(id, &list_pods_b, &sb);
    cr_expect_not_null(strstr(sb.p, "\"user\":\"a\\u0026b\",\"extra\":{\"aa\":[\"\\u003c2\\u003e\","
                                    "\"3\"],\"mm\":[],\"zz\":[\"1\"]}}}"),
                       "%s", sb.p);
    sbuf_free(&sb);
    identity_free(id);
}

/* ---- SubjectAccessReview responses --------------------------------------------------- */

#define SAR_HEAD                                                                                   \
    "{\"kind\":\"SubjectAccessReview\",\"apiVersion\":\"authorization.k8s.io/v1\","                \
    "\"metadata\":{\"creationTimestamp\":null},\"spec\":{},"

static int sar_parse(const char *body, struct review_sar_result *r)
{
    return review_sar_parse(body, strlen(body), r);
}

Test(review, sar_responses)
{
    struct review_sar_result r;
    enum review_decision d;

    cr_assert_eq(sar_parse(SAR_HEAD "\"status\":{\"allowed\":true,\"reason\":\"RBAC: allowed by "
                                    "ClusterRoleBinding \\\"x\\\"\"}}",
                           &r),
                 0);
    cr_expect(r.allowed);
    cr_expect_not(r.denied);
    cr_expect_str_eq(r.reason, "RBAC: allowed by ClusterRoleBinding \"x\"");
    cr_expect_str_eq(r.evaluation_error, "");
    cr_assert_eq(review_sar_decision(&r, &d), 0);
    cr_expect_eq(d, REVIEW_ALLOW);
    review_sar_result_fini(&r);

    cr_assert_eq(
        sar_parse(SAR_HEAD "\"status\":{\"allowed\":false,\"reason\":\"\",\"denied\":false}}", &r),
        0);
    cr_assert_eq(review_sar_decision(&r, &d), 0);
    cr_expect_eq(d, REVIEW_NO_OPINION);
    review_sar_result_fini(&r);

    cr_assert_eq(sar_parse(SAR_HEAD "\"status\":{\"allowed\":false,\"denied\":true,"
                                    "\"reason\":\"no\",\"evaluationError\":\"boom\"}}",
                           &r),
                 0);
    cr_assert_eq(review_sar_decision(&r, &d), 0);
    cr_expect_eq(d, REVIEW_DENY);
    cr_expect_str_eq(r.reason, "no");
    cr_expect_str_eq(r.evaluation_error, "boom");
    review_sar_result_fini(&r);

    cr_assert_eq(sar_parse("{\"status\":{\"allowed\":true,\"denied\":true}}", &r), 0);
    cr_expect_eq(review_sar_decision(&r, &d), -EPROTO);
    review_sar_result_fini(&r);

    cr_assert_eq(sar_parse("{}", &r), 0);
    cr_assert_eq(review_sar_decision(&r, &d), 0);
    cr_expect_eq(d, REVIEW_NO_OPINION);
    review_sar_result_fini(&r);
}

Test(review, sar_response_malformed_never_allows)
{
    static const char *const bad[] = {
        "{\"status\":{\"allowed\":1}}",
        "{\"status\":{\"allowed\":true,\"reason\":7}}",
        "{\"status\":{\"allowed\":true,\"denied\":\"no\"}}",
        "{\"status\":{\"allowed\":true}} {}",
        "{\"status\":{\"allowed\":true,\"evaluationError\":[]}}",
        "{\"status\":\"ok\"}",
        "null",
    };
    struct review_sar_result r;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_expect_eq(sar_parse(bad[i], &r), -EPROTO, "%s", bad[i]);
        cr_expect_not(r.allowed);
        review_sar_result_fini(&r);
    }
}

Test(review, sar_keys_depend_on_everything)
{
    struct review_cache_opts o = {.ttl_allowed_ms = 1};
    struct review_cache *c = review_cache_new(&o);
    struct identity *a_bc = identity_new("a"), *ab_c = identity_new("ab");
    struct review_attrs cluster = list_pods_b, res_path = {0}, nonres = {0};
    struct review_cache_key k[6];

    cr_assert_eq(identity_add_group(a_bc, "bc"), 0);
    cr_assert_eq(identity_add_group(ab_c, "c"), 0);
    cluster.ns = "";
    res_path.is_resource = true;
    res_path.verb = "get";
    res_path.resource = "/metrics";
    nonres.verb = "get";
    nonres.path = "/metrics";
    cr_assert_eq(review_sar_key(c, a_bc, &list_pods_b, &k[0]), 0);
    cr_assert_eq(review_sar_key(c, ab_c, &list_pods_b, &k[1]), 0);
    cr_assert_eq(review_sar_key(c, a_bc, &cluster, &k[2]), 0);
    cr_assert_eq(review_sar_key(c, a_bc, &res_path, &k[3]), 0);
    cr_assert_eq(review_sar_key(c, a_bc, &nonres, &k[4]), 0);
    cr_assert_eq(review_sar_key(c, a_bc, &list_pods_b, &k[5]), 0);
    for (int i = 0; i < 5; i++) {
        for (int j = i + 1; j < 5; j++) {
            cr_expect_neq(memcmp(k[i].d, k[j].d, sizeof(k[i].d)), 0, "%d %d", i, j);
        }
    }
    cr_expect_eq(memcmp(k[0].d, k[5].d, sizeof(k[0].d)), 0);
    identity_free(a_bc);
    identity_free(ab_c);
    review_cache_free(c);
}

Test(review, sar_cached_form_round_trips)
{
    struct sbuf sb = {0};
    enum review_decision d;
    char *reason;

    review_sar_encode(REVIEW_DENY, "RBAC: nope", &sb);
    cr_assert_eq(review_sar_decode(sb.p, sb.len, &d, &reason), 0);
    cr_expect_eq(d, REVIEW_DENY);
    cr_expect_str_eq(reason, "RBAC: nope");
    free(reason);
    sbuf_free(&sb);
    review_sar_encode(REVIEW_ALLOW, NULL, &sb);
    cr_assert_eq(review_sar_decode(sb.p, sb.len, &d, &reason), 0);
    cr_expect_eq(d, REVIEW_ALLOW);
    cr_expect_str_eq(reason, "");
    free(reason);
    sbuf_free(&sb);
    cr_expect_eq(review_sar_decode("", 0, &d, &reason), -EPROTO);
    cr_expect_eq(review_sar_decode("9x", 2, &d, &reason), -EPROTO);
    cr_expect_eq(review_sar_decode("1a\0b", 4, &d, &reason), -EPROTO);
    cr_expect_null(reason);
}
