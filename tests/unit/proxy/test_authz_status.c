/*
 * test_authz_status.c - proxy/authz_status.h against AUTH.md's bodies byte for byte (the
 * 401, the five 403s, the impersonation refusal of section 5), plus the message forms
 * responsewriters.Forbidden and apierrors.NewForbidden make from other attributes: the
 * subresource, escaping (sanitizer, %q, then Go's HTML-safe JSON), the reason suffix, and
 * the plain-text 500 of InternalError.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "proxy/authz_status.h"

/* The body kwp sends: the Status JSON plus "\n" (as http_reply_status writes it). */
static const char *body_of(const struct kstatus *st)
{
    static char buf[4096];
    size_t n = kstatus_json(st, buf, sizeof(buf) - 1);

    cr_assert_lt(n + 1, sizeof(buf));
    buf[n] = '\n';
    buf[n + 1] = '\0';
    return buf;
}

static struct review_attrs res(const char *verb, const char *group, const char *resource,
                               const char *sub, const char *ns, const char *name)
{
    struct review_attrs a = {
        .is_resource = true,
        .verb = verb,
        .ns = ns,
        .group = group,
        .version = "v1",
        .resource = resource,
        .subresource = sub,
        .name = name,
    };

    return a;
}

static const char *forbidden(const char *user, struct review_attrs a, const char *reason)
{
    struct kstatus st;

    authz_status_forbidden(&st, user, &a, reason);
    cr_expect_eq(st.code, 403);
    return body_of(&st);
}

Test(authz_status, unauthorized_as_auth_md)
{
    struct kstatus st;

    authz_status_unauthorized(&st);
    cr_expect_eq(st.code, 401);
    cr_expect_str_eq(body_of(&st),
                     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                     "\"Failure\",\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\","
                     "\"code\":401}\n");
}

Test(authz_status, forbidden_as_auth_md)
{
    const struct review_attrs metrics = {.verb = "get", .path = "/metrics"};

    cr_expect_str_eq(
        forbidden("alice", res("list", "", "pods", "", "b", ""), ""),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"pods is forbidden: User \\\"alice\\\" cannot list resource \\\"pods\\\" in "
        "API group \\\"\\\" in the namespace \\\"b\\\"\",\"reason\":\"Forbidden\",\"details\":"
        "{\"kind\":\"pods\"},\"code\":403}\n");
    cr_expect_str_eq(
        forbidden("alice", res("watch", "", "pods", "", "", ""), NULL),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"pods is forbidden: User \\\"alice\\\" cannot watch resource \\\"pods\\\" in "
        "API group \\\"\\\" at the cluster scope\",\"reason\":\"Forbidden\",\"details\":"
        "{\"kind\":\"pods\"},\"code\":403}\n");
    cr_expect_str_eq(
        forbidden("alice", res("get", "", "pods", "", "b", "x"), ""),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"pods \\\"x\\\" is forbidden: User \\\"alice\\\" cannot get resource "
        "\\\"pods\\\" in API group \\\"\\\" in the namespace \\\"b\\\"\",\"reason\":\"Forbidden\","
        "\"details\":{\"name\":\"x\",\"kind\":\"pods\"},\"code\":403}\n");
    cr_expect_str_eq(
        forbidden("alice", res("list", "apps", "deployments", "", "b", ""), ""),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"deployments.apps is forbidden: User \\\"alice\\\" cannot list resource "
        "\\\"deployments\\\" in API group \\\"apps\\\" in the namespace \\\"b\\\"\",\"reason\":"
        "\"Forbidden\",\"details\":{\"group\":\"apps\",\"kind\":\"deployments\"},\"code\":403}\n");
    cr_expect_str_eq(
        forbidden("alice", metrics, ""),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"forbidden: User \\\"alice\\\" cannot get path \\\"/metrics\\\"\",\"reason\":"
        "\"Forbidden\",\"details\":{},\"code\":403}\n");
}

Test(authz_status, impersonation_refusal_as_auth_md)
{
    struct review_attrs a = res("impersonate", "", "users", "", "", "carol");

    a.version = "";
    cr_expect_str_eq(
        forbidden("alice", a, ""),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"users \\\"carol\\\" is forbidden: User \\\"alice\\\" cannot impersonate "
        "resource \\\"users\\\" in API group \\\"\\\" at the cluster scope\",\"reason\":"
        "\"Forbidden\",\"details\":{\"name\":\"carol\",\"kind\":\"users\"},\"code\":403}\n");
}

Test(authz_status, subresource_shows_in_sentence_not_in_kind)
{
    cr_expect_str_eq(
        forbidden("alice", res("get", "", "pods", "log", "b", "x"), ""),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"pods \\\"x\\\" is forbidden: User \\\"alice\\\" cannot get resource "
        "\\\"pods/log\\\" in API group \\\"\\\" in the namespace \\\"b\\\"\",\"reason\":"
        "\"Forbidden\",\"details\":{\"name\":\"x\",\"kind\":\"pods\"},\"code\":403}\n");
    cr_expect_str_eq(
        forbidden("bob", res("update", "apps", "deployments", "scale", "", "d"), ""),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"deployments.apps \\\"d\\\" is forbidden: User \\\"bob\\\" cannot update "
        "resource \\\"deployments/scale\\\" in API group \\\"apps\\\" at the cluster scope\","
        "\"reason\":\"Forbidden\",\"details\":{\"name\":\"d\",\"group\":\"apps\",\"kind\":"
        "\"deployments\"},\"code\":403}\n");
}

Test(authz_status, reason_suffix_and_escaping)
{
    /* the sentence is sanitized (&amp; ...) and then JSON-escaped (\u0026amp;); the reason
     * and the name prefix are only JSON-escaped; %q escapes the user's control bytes */
    cr_expect_str_eq(
        forbidden("a<b>&c\n", res("get", "", "pods", "", "n&s", "x<y"), "RBAC: <deny> & more"),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"pods \\\"x\\u003cy\\\" is forbidden: User \\\"a\\u0026lt;b\\u0026gt;"
        "\\u0026amp;c\\\\n\\\" cannot get resource \\\"pods\\\" in API group \\\"\\\" in the "
        "namespace \\\"n\\u0026amp;s\\\": RBAC: \\u003cdeny\\u003e \\u0026 more\",\"reason\":"
        "\"Forbidden\",\"details\":{\"name\":\"x\\u003cy\",\"kind\":\"pods\"},\"code\":403}\n");
    cr_expect_str_eq(
        forbidden("\xff", (struct review_attrs){.verb = "post", .path = "/\"q\""}, "r"),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"forbidden: User \\\"\\\\xff\\\" cannot post path \\\"/\\\\\\\"q\\\\\\\"\\\""
        ": r\",\"reason\":\"Forbidden\",\"details\":{},\"code\":403}\n");
}

Test(authz_status, internal_error_text)
{
    char buf[512];
    size_t n;

    n = authz_status_internal_error("/api/v1/pods?x=<1>&y",
                                    "requested [{Group  devs    }] without impersonating a user",
                                    buf, sizeof(buf));
    cr_expect_str_eq(buf, "Internal Server Error: \"/api/v1/pods?x=&lt;1&gt;&amp;y\": requested "
                          "[{Group  devs    }] without impersonating a user\n");
    cr_expect_eq(n, strlen(buf));
    /* snprintf semantics */
    n = authz_status_internal_error("/", "e", buf, 5);
    cr_expect_str_eq(buf, "Inte");
    cr_expect_eq(n, strlen("Internal Server Error: \"/\": e\n"));
    cr_expect_eq(authz_status_internal_error("/", "e", NULL, 0), n);
}

Test(authz_status, impersonation_refusals_of_other_kinds)
{
    struct review_attrs extra =
        res("impersonate", "authentication.k8s.io", "userextras", "scopes", "", "view");
    struct review_attrs sa = res("impersonate", "", "serviceaccounts", "", "ns1", "builder");

    cr_expect_str_eq(
        forbidden("alice", extra, ""),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"userextras.authentication.k8s.io \\\"view\\\" is forbidden: User "
        "\\\"alice\\\" cannot impersonate resource \\\"userextras/scopes\\\" in API group "
        "\\\"authentication.k8s.io\\\" at the cluster scope\",\"reason\":\"Forbidden\","
        "\"details\":{\"name\":\"view\",\"group\":\"authentication.k8s.io\",\"kind\":"
        "\"userextras\"},\"code\":403}\n");
    cr_expect_str_eq(
        forbidden("alice", sa, ""),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"serviceaccounts \\\"builder\\\" is forbidden: User \\\"alice\\\" cannot "
        "impersonate resource \\\"serviceaccounts\\\" in API group \\\"\\\" in the namespace "
        "\\\"ns1\\\"\",\"reason\":\"Forbidden\",\"details\":{\"name\":\"builder\",\"kind\":"
        "\"serviceaccounts\"},\"code\":403}\n");
}
