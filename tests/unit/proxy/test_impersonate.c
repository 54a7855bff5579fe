/*
 * test_impersonate.c - proxy/impersonate.h both ways: the identity and the ordered
 * "impersonate" checks kube-apiserver's WithImpersonation derives from a request's headers
 * (users, service accounts, groups, uids, userextras; the group defaults; the 500 without a
 * user; caps), and the headers kwp sets upstream (client-go's key escaping, refusals of
 * values that would not arrive intact).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cache/sbuf.h"
#include "proxy/impersonate.h"

#define HDRS(...) ((const struct impersonate_hdr[]){__VA_ARGS__})
#define N(...) (sizeof(HDRS(__VA_ARGS__)) / sizeof(struct impersonate_hdr))
#define PARSE(out, err, ...)                                                                       \
    impersonate_parse(HDRS(__VA_ARGS__), N(__VA_ARGS__), out, err, sizeof(err))

static void expect_check(const struct review_attrs *a, const char *group, const char *version,
                         const char *resource, const char *sub, const char *ns, const char *name)
{
    cr_expect(a->is_resource);
    cr_expect_str_eq(a->verb, "impersonate");
    cr_expect_str_eq(a->group, group);
    cr_expect_str_eq(a->version, version);
    cr_expect_str_eq(a->resource, resource);
    cr_expect_str_eq(a->subresource, sub);
    cr_expect_str_eq(a->ns, ns);
    cr_expect_str_eq(a->name, name);
}

static void expect_groups(const struct identity *id, const char *const *want, size_t n)
{
    cr_assert_eq(id->n_groups, n);
    for (size_t i = 0; i < n; i++) {
        cr_expect_str_eq(id->groups[i], want[i]);
    }
}

Test(impersonate, no_headers_no_impersonation)
{
    struct impersonate_req r;
    char err[256];

    cr_assert_eq(PARSE(&r, err, {"Accept", "application/json"}, {"Impersonate-User", ""}), 0);
    cr_expect_null(r.as);
    cr_expect_eq(r.n_checks, 0);
    cr_expect_str_eq(err, "");
    impersonate_req_fini(&r);
    cr_assert_eq(impersonate_parse(NULL, 0, &r, err, sizeof(err)), 0);
    cr_expect_null(r.as);
    impersonate_req_fini(&r);
}

Test(impersonate, user_groups_extra_uid)
{
    static const char *const groups[] = {"devs", "ops", "system:authenticated"};
    struct impersonate_req r;
    char err[256];

    cr_assert_eq(PARSE(&r, err, {"impersonate-user", "carol"}, {"Impersonate-Group", "devs"},
                       {"Impersonate-Extra-Scopes", "view"}, {"Impersonate-Uid", "u-1"},
                       {"IMPERSONATE-GROUP", "ops"}, {"Impersonate-Extra-scopes", "edit"},
                       {"Impersonate-User", "ignored"}, {"Impersonate-Uid", "ignored"}),
                 0);
    cr_assert_not_null(r.as);
    cr_expect_str_eq(r.as->user, "carol");
    cr_expect_str_eq(r.as->uid, "u-1");
    expect_groups(r.as, groups, 3);
    cr_assert_eq(r.as->n_extra, 1);
    cr_expect_str_eq(r.as->extra[0].key, "scopes");
    cr_assert_eq(r.as->extra[0].n_values, 2);
    cr_expect_str_eq(r.as->extra[0].values[0], "view");
    cr_expect_str_eq(r.as->extra[0].values[1], "edit");
    /* kube-apiserver's order: user, groups, extra values, uid */
    cr_assert_eq(r.n_checks, 6);
    expect_check(&r.checks[0], "", "", "users", "", "", "carol");
    expect_check(&r.checks[1], "", "", "groups", "", "", "devs");
    expect_check(&r.checks[2], "", "", "groups", "", "", "ops");
    expect_check(&r.checks[3], "authentication.k8s.io", "v1", "userextras", "scopes", "", "view");
    expect_check(&r.checks[4], "authentication.k8s.io", "v1", "userextras", "scopes", "", "edit");
    expect_check(&r.checks[5], "authentication.k8s.io", "v1", "uids", "", "", "u-1");
    impersonate_req_fini(&r);
}

Test(impersonate, service_account)
{
    static const char *const defaults[] = {"system:serviceaccounts", "system:serviceaccounts:ns1",
                                           "system:authenticated"};
    static const char *const given[] = {"g", "system:authenticated"};
    struct impersonate_req r;
    char err[256];

    cr_assert_eq(PARSE(&r, err, {"Impersonate-User", "system:serviceaccount:ns1:builder.v2"}), 0);
    cr_expect_str_eq(r.as->user, "system:serviceaccount:ns1:builder.v2");
    expect_groups(r.as, defaults, 3);
    cr_assert_eq(r.n_checks, 1);
    expect_check(&r.checks[0], "", "", "serviceaccounts", "", "ns1", "builder.v2");
    impersonate_req_fini(&r);
    /* groups given: no service-account defaults */
    cr_assert_eq(PARSE(&r, err, {"Impersonate-User", "system:serviceaccount:ns1:b"},
                       {"Impersonate-Group", "g"}),
                 0);
    expect_groups(r.as, given, 2);
    impersonate_req_fini(&r);
}

Test(impersonate, invalid_service_account_names_are_users)
{
    static const char *const users[] = {
        "system:serviceaccount:ns1",     "system:serviceaccount:ns1:a:b",
        "system:serviceaccount:NS:a",    "system:serviceaccount::a",
        "system:serviceaccount:ns:",     "system:serviceaccount:ns:-a",
        "system:serviceaccount:ns:a..b", "system:serviceaccount:ns.x:a",
        "system:serviceaccount:a-:b",
    };
    struct impersonate_req r;
    char err[256];

    for (size_t i = 0; i < sizeof(users) / sizeof(users[0]); i++) {
        cr_assert_eq(PARSE(&r, err, {"Impersonate-User", users[i]}), 0);
        cr_assert_eq(r.n_checks, 1);
        expect_check(&r.checks[0], "", "", "users", "", "", users[i]);
        cr_expect_eq(r.as->n_groups, 1, "%s", users[i]); /* system:authenticated only */
        impersonate_req_fini(&r);
    }
}

Test(impersonate, anonymous_and_explicit_authentication_groups)
{
    static const char *const anon[] = {"system:unauthenticated"};
    static const char *const anon_g[] = {"g", "system:unauthenticated"};
    static const char *const unauth[] = {"system:unauthenticated"};
    static const char *const auth[] = {"x", "system:authenticated"};
    struct impersonate_req r;
    char err[256];

    cr_assert_eq(PARSE(&r, err, {"Impersonate-User", "system:anonymous"}), 0);
    expect_groups(r.as, anon, 1);
    impersonate_req_fini(&r);
    cr_assert_eq(
        PARSE(&r, err, {"Impersonate-User", "system:anonymous"}, {"Impersonate-Group", "g"}), 0);
    expect_groups(r.as, anon_g, 2);
    impersonate_req_fini(&r);
    cr_assert_eq(PARSE(&r, err, {"Impersonate-User", "bob"},
                       {"Impersonate-Group", "system:unauthenticated"}),
                 0);
    expect_groups(r.as, unauth, 1);
    impersonate_req_fini(&r);
    cr_assert_eq(PARSE(&r, err, {"Impersonate-User", "bob"}, {"Impersonate-Group", "x"},
                       {"Impersonate-Group", "system:authenticated"}),
                 0);
    expect_groups(r.as, auth, 2);
    impersonate_req_fini(&r);
}

Test(impersonate, extra_keys_lowercased_then_unescaped)
{
    static const struct {
        const char *header, *key;
    } cases[] = {
        {"Impersonate-Extra-Foo", "foo"},
        {"Impersonate-Extra-a%2Fb", "a/b"},
        {"Impersonate-Extra-%41", "A"},     /* decoded after lowercasing */
        {"Impersonate-Extra-a+b", "a+b"},   /* PathUnescape keeps '+' */
        {"Impersonate-Extra-a%zz", "a%zz"}, /* malformed: kept as text */
        {"Impersonate-Extra-a%2", "a%2"},
        {"Impersonate-Extra-x%00y", "x%00y"}, /* kept: a C string cannot hold the NUL */
        {"Impersonate-Extra-", ""},
    };
    struct impersonate_req r;
    char err[256];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cr_assert_eq(PARSE(&r, err, {"Impersonate-User", "u"}, {cases[i].header, "v"}), 0);
        cr_assert_eq(r.as->n_extra, 1);
        cr_expect_str_eq(r.as->extra[0].key, cases[i].key, "%s", cases[i].header);
        cr_expect_str_eq(r.checks[1].subresource, cases[i].key);
        impersonate_req_fini(&r);
    }
    /* two spellings of one key merge */
    cr_assert_eq(PARSE(&r, err, {"Impersonate-User", "u"}, {"Impersonate-Extra-a%2fb", "1"},
                       {"impersonate-extra-A/B", "2"}),
                 0);
    cr_assert_eq(r.as->n_extra, 1);
    cr_expect_eq(r.as->extra[0].n_values, 2);
    impersonate_req_fini(&r);
}

Test(impersonate, groups_extra_uid_without_user_is_500)
{
    struct impersonate_req r;
    char err[512];

    cr_expect_eq(PARSE(&r, err, {"Impersonate-Uid", "u-1"}, {"Impersonate-Group", "devs"},
                       {"Impersonate-Extra-Scopes", "view"}, {"Impersonate-Group", ""}),
                 -EINVAL);
    cr_expect_null(r.as);
    cr_expect_str_eq(err, "requested [{Group  devs    } {Group      } {UserExtra  view  "
                          "authentication.k8s.io/v1  scopes} {UID  u-1  authentication.k8s.io/v1  "
                          "}] without impersonating a user");
    impersonate_req_fini(&r);
    cr_expect_eq(PARSE(&r, err, {"Impersonate-User", ""}, {"Impersonate-Uid", "u"}), -EINVAL);
    cr_expect_str_eq(err, "requested [{UID  u  authentication.k8s.io/v1  }] without "
                          "impersonating a user");
    impersonate_req_fini(&r);
    /* an empty uid alone is no request at all */
    cr_expect_eq(PARSE(&r, err, {"Impersonate-Uid", ""}), 0);
    impersonate_req_fini(&r);
}

Test(impersonate, caps)
{
    static char long_value[IDENTITY_MAX_STR + 2];
    static char huge[IMPERSONATE_MAX_HEADER_BYTES];
    struct impersonate_hdr h[IDENTITY_MAX_GROUPS + 2];
    struct impersonate_req r;
    char err[256];

    memset(long_value, 'v', IDENTITY_MAX_STR + 1);
    cr_expect_eq(PARSE(&r, err, {"Impersonate-User", long_value}), -E2BIG);
    cr_expect_str_eq(err, "an Impersonate-* value or key is longer than 4096 bytes");
    impersonate_req_fini(&r);

    memset(huge, 'g', sizeof(huge) - 1);
    cr_expect_eq(PARSE(&r, err, {"Impersonate-User", "u"}, {"Impersonate-Group", huge}), -E2BIG);
    cr_expect_str_eq(err, "Impersonate-* headers exceed 16384 bytes");
    impersonate_req_fini(&r);

    h[0] = (struct impersonate_hdr){"Impersonate-User", "u"};
    for (size_t i = 1; i < IDENTITY_MAX_GROUPS + 2; i++) {
        h[i] = (struct impersonate_hdr){"Impersonate-Group", "g"};
    }
    cr_expect_eq(impersonate_parse(h, IDENTITY_MAX_GROUPS + 2, &r, err, sizeof(err)), -E2BIG);
    cr_expect_str_eq(err, "too many Impersonate-Group headers (limit 256)");
    impersonate_req_fini(&r);
    /* exactly the cap of given groups leaves no room for system:authenticated */
    cr_expect_eq(impersonate_parse(h, IDENTITY_MAX_GROUPS + 1, &r, err, sizeof(err)), -E2BIG);
    cr_expect_null(r.as);
    impersonate_req_fini(&r);
    /* one below it works */
    cr_expect_eq(impersonate_parse(h, IDENTITY_MAX_GROUPS, &r, err, sizeof(err)), 0);
    cr_expect_eq(r.as->n_groups, IDENTITY_MAX_GROUPS);
    impersonate_req_fini(&r);
}

Test(impersonate, is_header)
{
    cr_expect(impersonate_is_header("Impersonate-User"));
    cr_expect(impersonate_is_header("impersonate-group"));
    cr_expect(impersonate_is_header("IMPERSONATE-UID"));
    cr_expect(impersonate_is_header("Impersonate-Extra-x"));
    cr_expect(impersonate_is_header("Impersonate-Extra-"));
    cr_expect_not(impersonate_is_header("Impersonate-Users"));
    cr_expect_not(impersonate_is_header("Authorization"));
}

/* ---- out ----------------------------------------------------------------------------- */

static int collect(void *ctx, const char *name, const char *value)
{
    struct sbuf *sb = ctx;

    sbuf_str(sb, name);
    sbuf_str(sb, ": ");
    sbuf_str(sb, value);
    sbuf_str(sb, "\n");
    return 0;
}

static int stop_at_group(void *ctx, const char *name, const char *value)
{
    (void)value;
    return strcmp(name, IMPERSONATE_GROUP) == 0 ? -ECANCELED : collect(ctx, name, value);
}

Test(impersonate, headers_upstream)
{
    struct identity *id = identity_new("alice");
    struct sbuf sb = {0};

    cr_assert_eq(identity_set_uid(id, "42"), 0);
    cr_assert_eq(identity_add_group(id, "devs"), 0);
    cr_assert_eq(identity_add_group(id, "system:authenticated"), 0);
    cr_assert_eq(identity_add_extra(id, "scopes", "a b"), 0);
    cr_assert_eq(identity_add_extra(id, "scopes", "c"), 0);
    cr_assert_eq(identity_add_extra(id, "example.org/key%1 \xc3\xa9", "v"), 0);
    cr_assert_eq(impersonate_headers(id, collect, &sb), 0);
    cr_expect_str_eq(sb.p, "Impersonate-User: alice\n"
                           "Impersonate-Uid: 42\n"
                           "Impersonate-Group: devs\n"
                           "Impersonate-Group: system:authenticated\n"
                           "Impersonate-Extra-example.org%2Fkey%251%20%C3%A9: v\n"
                           "Impersonate-Extra-scopes: a b\n"
                           "Impersonate-Extra-scopes: c\n");
    sbuf_free(&sb);
    cr_expect_eq(impersonate_headers(id, stop_at_group, &sb), -ECANCELED);
    cr_expect_str_eq(sb.p, "Impersonate-User: alice\nImpersonate-Uid: 42\n");
    sbuf_free(&sb);
    identity_free(id);
}

Test(impersonate, headers_round_trip_through_parse)
{
    struct identity *id = identity_new("alice");
    struct impersonate_hdr h[8];
    char names[8][64], values[8][64];
    struct sbuf sb = {0};
    struct impersonate_req r;
    char err[256], *line, *save = NULL;
    size_t n = 0;

    cr_assert_eq(identity_add_group(id, "devs"), 0);
    cr_assert_eq(identity_add_group(id, "system:authenticated"), 0);
    cr_assert_eq(identity_add_extra(id, "a/b:c", "v"), 0);
    cr_assert_eq(impersonate_headers(id, collect, &sb), 0);
    for (line = strtok_r(sb.p, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *colon = strstr(line, ": ");

        *colon = '\0';
        snprintf(names[n], sizeof(names[n]), "%s", line);
        snprintf(values[n], sizeof(values[n]), "%s", colon + 2);
        h[n] = (struct impersonate_hdr){names[n], values[n]};
        n++;
    }
    cr_assert_eq(impersonate_parse(h, n, &r, err, sizeof(err)), 0);
    cr_expect_str_eq(r.as->user, "alice");
    cr_expect_eq(r.as->n_groups, 2);
    cr_expect_str_eq(r.as->extra[0].key, "a/b:c");
    impersonate_req_fini(&r);
    sbuf_free(&sb);
    identity_free(id);
}

Test(impersonate, headers_refuse_values_that_would_change)
{
    static const char *const bad[] = {"a\r\nX-Evil: 1", "a\n",     "\x01",
                                      " lead",          "trail\t", "del\x7f"};
    struct sbuf sb = {0};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct identity *u = identity_new(bad[i]);
        struct identity *g = identity_new("ok");
        struct identity *e = identity_new("ok");

        cr_assert_eq(identity_add_group(g, bad[i]), 0);
        cr_assert_eq(identity_add_extra(e, "k", bad[i]), 0);
        cr_expect_eq(impersonate_headers(u, collect, &sb), -EINVAL, "%zu", i);
        cr_expect_eq(impersonate_headers(g, collect, &sb), -EINVAL, "%zu", i);
        cr_expect_eq(impersonate_headers(e, collect, &sb), -EINVAL, "%zu", i);
        cr_expect_null(sb.p); /* nothing emitted */
        identity_free(u);
        identity_free(g);
        identity_free(e);
    }
    {
        struct identity *empty = identity_new("");
        struct identity *inner = identity_new("a\tb c");

        cr_expect_eq(impersonate_headers(empty, collect, &sb), -EINVAL);
        cr_assert_eq(identity_add_group(inner, ""), 0);
        cr_expect_eq(impersonate_headers(inner, collect, &sb), 0);
        cr_expect_str_eq(sb.p, "Impersonate-User: a\tb c\nImpersonate-Group: \n");
        sbuf_free(&sb);
        identity_free(empty);
        identity_free(inner);
    }
}
