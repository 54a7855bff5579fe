/*
 * test_rbac.c - sim/rbac: the rule file (syntax, RBAC's validation, errors naming the line,
 * caps) and its evaluation as RBAC matches a PolicyRule (wildcards, subresources and
 * "*" "/sub", resourceNames, namespaces as a RoleBinding's reach, nonResourceURLs with a
 * trailing '*'), explicit denies, system:masters, and the reasons a SubjectAccessReview
 * carries.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "sim/rbac.h"

static char err[512];

static struct rbac *parse(const char *text)
{
    struct rbac *r;

    err[0] = '\0';
    r = rbac_parse(text, strlen(text), "rules", err, sizeof(err));
    cr_assert_not_null(r, "%s", err);
    return r;
}

static void expect_error(const char *text, const char *want)
{
    struct rbac *r = rbac_parse(text, strlen(text), "rules", err, sizeof(err));

    cr_assert_null(r, "parsed: %s", text);
    cr_assert_str_eq(err, want);
}

/* An identity: user then groups (NULL-terminated). */
static struct identity *who(const char *user, const char *const *groups)
{
    struct identity *id = identity_new(user);

    for (size_t i = 0; groups != NULL && groups[i] != NULL; i++) {
        cr_assert_eq(identity_add_group(id, groups[i]), 0);
    }
    return id;
}

#define GROUPS(...) ((const char *const[]){__VA_ARGS__, NULL})

static struct review_attrs res(const char *verb, const char *ns, const char *group,
                               const char *resource, const char *sub, const char *name)
{
    struct review_attrs a = {true, verb, ns, group, "v1", resource, sub, name, NULL};

    return a;
}

static struct review_attrs url(const char *verb, const char *path)
{
    struct review_attrs a = {false, verb, NULL, NULL, NULL, NULL, NULL, NULL, path};

    return a;
}

/* The decision for <id>/<a>, asserting the reason is <reason> (NULL: don't care). */
static enum review_decision decide(const struct rbac *r, const struct identity *id,
                                   struct review_attrs a, const char *reason)
{
    char *got = NULL;
    enum review_decision d = rbac_authorize(r, id, &a, &got);

    cr_assert_not_null(got);
    if (reason != NULL) {
        cr_assert_str_eq(got, reason);
    }
    free(got);
    return d;
}

static const char readers[] =
    "# devs read pods in default and b, and their logs\n"
    "allow name=devs-read groups=devs verbs=get,list,watch apiGroups=\"\" "
    "resources=pods,pods/log namespaces=default,b\n"
    "\n"
    "   allow users=alice verbs=get apiGroups=apps resources=deployments resourceNames=web\n"
    "allow groups=system:authenticated verbs=get nonResourceURLs=/api*,/version,/healthz\n"
    "allow users=ops verbs=* apiGroups=* resources=*/scale\n"
    "allow users=root verbs=* apiGroups=* resources=* nonResourceURLs=*\n";

Test(rbac, resource_rules_match_as_rbac)
{
    struct rbac *r = parse(readers);
    struct identity *bob = who("bob", GROUPS("devs", "system:authenticated"));
    struct identity *alice = who("alice", GROUPS("system:authenticated"));

    cr_assert_eq(rbac_len(r), 5);
    cr_assert_eq(decide(r, bob, res("list", "b", "", "pods", "", ""),
                        "RBAC: allowed by rule \"devs-read\" to Group \"devs\""),
                 REVIEW_ALLOW);
    cr_assert_eq(decide(r, bob, res("watch", "default", "", "pods", "", ""), NULL), REVIEW_ALLOW);
    cr_assert_eq(decide(r, bob, res("get", "b", "", "pods", "log", "x"), NULL), REVIEW_ALLOW);
    /* pods does not cover pods/exec, nor another namespace, nor the cluster scope */
    cr_assert_eq(decide(r, bob, res("get", "b", "", "pods", "exec", "x"), ""), REVIEW_NO_OPINION);
    cr_assert_eq(decide(r, bob, res("list", "c", "", "pods", "", ""), ""), REVIEW_NO_OPINION);
    cr_assert_eq(decide(r, bob, res("list", "", "", "pods", "", ""), ""), REVIEW_NO_OPINION);
    cr_assert_eq(decide(r, bob, res("delete", "b", "", "pods", "", "x"), ""), REVIEW_NO_OPINION);
    cr_assert_eq(decide(r, bob, res("list", "b", "apps", "pods", "", ""), ""), REVIEW_NO_OPINION);
    /* resourceNames: only that name; a list has none */
    cr_assert_eq(decide(r, alice, res("get", "x", "apps", "deployments", "", "web"),
                        "RBAC: allowed by rule \"line-4\" to User \"alice\""),
                 REVIEW_ALLOW);
    cr_assert_eq(decide(r, alice, res("get", "x", "apps", "deployments", "", "db"), ""),
                 REVIEW_NO_OPINION);
    cr_assert_eq(decide(r, alice, res("list", "x", "apps", "deployments", "", ""), ""),
                 REVIEW_NO_OPINION);
    identity_free(bob);
    identity_free(alice);
    rbac_free(r);
}

Test(rbac, wildcards_and_star_subresource)
{
    struct rbac *r = parse(readers);
    struct identity *ops = who("ops", NULL), *root = who("root", NULL);

    cr_assert_eq(decide(r, ops, res("update", "b", "apps", "deployments", "scale", "web"), NULL),
                 REVIEW_ALLOW);
    cr_assert_eq(decide(r, ops, res("update", "b", "apps", "deployments", "", "web"), ""),
                 REVIEW_NO_OPINION);
    cr_assert_eq(decide(r, ops, res("get", "b", "", "pods", "log", "x"), ""), REVIEW_NO_OPINION);
    cr_assert_eq(decide(r, root, res("impersonate", "", "", "users", "", "carol"), NULL),
                 REVIEW_ALLOW);
    cr_assert_eq(decide(r, root, res("get", "b", "", "pods", "log", "x"), NULL), REVIEW_ALLOW);
    cr_assert_eq(decide(r, root, url("post", "/anything"), NULL), REVIEW_ALLOW);
    identity_free(ops);
    identity_free(root);
    rbac_free(r);
}

Test(rbac, non_resource_urls_exact_and_prefix)
{
    struct rbac *r = parse(readers);
    struct identity *u = who("u", GROUPS("system:authenticated"));

    cr_assert_eq(decide(r, u, url("get", "/api"),
                        "RBAC: allowed by rule \"line-5\" to Group \"system:authenticated\""),
                 REVIEW_ALLOW);
    cr_assert_eq(decide(r, u, url("get", "/apis/apps/v1"), NULL), REVIEW_ALLOW);
    cr_assert_eq(decide(r, u, url("get", "/version"), NULL), REVIEW_ALLOW);
    cr_assert_eq(decide(r, u, url("get", "/version/"), ""), REVIEW_NO_OPINION);
    cr_assert_eq(decide(r, u, url("get", "/metrics"), ""), REVIEW_NO_OPINION);
    cr_assert_eq(decide(r, u, url("post", "/api"), ""), REVIEW_NO_OPINION);
    /* a URL rule says nothing about resources */
    cr_assert_eq(decide(r, u, res("get", "", "", "api", "", ""), ""), REVIEW_NO_OPINION);
    identity_free(u);
    rbac_free(r);
}

Test(rbac, deny_wins_and_masters_always_pass)
{
    struct rbac *r = parse("allow groups=devs verbs=* apiGroups=* resources=*\n"
                           "deny name=no-secrets users=mallory verbs=get,list apiGroups=\"\" "
                           "resources=secrets\n");
    struct identity *m = who("mallory", GROUPS("devs"));
    struct identity *admin = who("kubernetes-admin", GROUPS("system:masters"));
    struct identity *nobody = who("nobody", NULL);

    cr_assert_eq(
        decide(r, m, res("list", "b", "", "secrets", "", ""), "denied by rule \"no-secrets\""),
        REVIEW_DENY);
    cr_assert_eq(decide(r, m, res("list", "b", "", "pods", "", ""),
                        "RBAC: allowed by rule \"line-1\" to Group \"devs\""),
                 REVIEW_ALLOW);
    cr_assert_eq(decide(r, admin, url("delete", "/anything"), ""), REVIEW_ALLOW);
    cr_assert_eq(decide(r, nobody, url("get", "/version"), ""), REVIEW_NO_OPINION);
    identity_free(m);
    identity_free(admin);
    identity_free(nobody);
    rbac_free(r);
}

Test(rbac, empty_file_allows_nobody_but_masters)
{
    struct rbac *r = parse("# nothing\n\n   \t\n");
    struct identity *u = who("u", GROUPS("system:authenticated"));

    cr_assert_eq(rbac_len(r), 0);
    cr_assert_eq(decide(r, u, res("get", "b", "", "pods", "", "x"), ""), REVIEW_NO_OPINION);
    identity_free(u);
    rbac_free(r);
}

Test(rbac, parse_errors_name_the_line)
{
    expect_error("\nallow users=a verbs=get\n",
                 "rules:2: a rule needs resources or nonResourceURLs");
    expect_error("permit users=a\n", "rules:1: 'permit': a rule starts with allow or deny");
    expect_error("allow users=a verbs=get resources=pods\n",
                 "rules:1: resource rules must supply at least one api group (apiGroups)");
    expect_error("allow verbs=get apiGroups=\"\" resources=pods\n",
                 "rules:1: a rule needs users or groups");
    expect_error("allow users=a apiGroups=\"\" resources=pods\n", "rules:1: a rule needs verbs");
    expect_error("allow users=a verbs=get apiGroups= resources=pods\n",
                 "rules:1: apiGroups: an empty list item (write \"\" for the empty string)");
    expect_error("allow users=a verbs=get,,list apiGroups=\"\" resources=pods\n",
                 "rules:1: verbs: an empty list item (write \"\" for the empty string)");
    expect_error("allow users=a verbs=get colour=red\n",
                 "rules:1: unknown key 'colour' (users, groups, verbs, apiGroups, resources, "
                 "resourceNames, namespaces, nonResourceURLs, name)");
    expect_error("allow users=a users=b verbs=get nonResourceURLs=/x\n",
                 "rules:1: users given twice");
    expect_error("allow users=* verbs=get nonResourceURLs=/x\n",
                 "rules:1: users: '*' matches nothing here");
    expect_error("allow users=a verbs=get nonResourceURLs=/x namespaces=b\n",
                 "rules:1: namespaced rules cannot apply to non-resource URLs");
    expect_error("allow users=a verbs=get nonResourceURLs=/x resourceNames=n\n",
                 "rules:1: resourceNames without resources");
    expect_error("allow users=a verbs get nonResourceURLs=/x\n",
                 "rules:1: 'verbs' is not KEY=VALUE");
    expect_error("allow users=a verbs=get nonResourceURLs=/x name=a,b\n",
                 "rules:1: name needs one value");
    expect_error("allow users=a\"b verbs=get nonResourceURLs=/x\n",
                 "rules:1: users: a '\"' other than the empty string \"\"");
}

Test(rbac, nul_and_caps)
{
    static const char nul[] = "# ok\nallow users=a\0 verbs=get nonResourceURLs=/x\n";
    size_t n = RBAC_MAX_BYTES + 1, len = 0;
    char *big;
    struct rbac *r;

    r = rbac_parse(nul, sizeof(nul) - 1, "rules", err, sizeof(err));
    cr_assert_null(r);
    cr_assert_str_eq(err, "rules:2: a NUL byte");

    big = malloc(n + 1);
    memset(big, '#', n);
    r = rbac_parse(big, n, "rules", err, sizeof(err));
    cr_assert_null(r);
    cr_assert_str_eq(err, "rules: larger than 1048576 bytes");

    memset(big, 'x', RBAC_MAX_LINE + 1);
    big[RBAC_MAX_LINE + 1] = '\n';
    r = rbac_parse(big, RBAC_MAX_LINE + 2, "rules", err, sizeof(err));
    cr_assert_null(r);
    cr_assert_str_eq(err, "rules:1: a line longer than 8192 bytes");

    len = (size_t)snprintf(big, n, "allow users=a verbs=");
    for (int i = 0; i <= RBAC_MAX_VALUES; i++) {
        len += (size_t)snprintf(big + len, n - len, "%sv", i ? "," : "");
    }
    len += (size_t)snprintf(big + len, n - len, " nonResourceURLs=/x\n");
    r = rbac_parse(big, len, "rules", err, sizeof(err));
    cr_assert_null(r);
    cr_assert_str_eq(err, "rules:1: verbs: more than 1024 values");

    len = 0;
    for (int i = 0; i <= RBAC_MAX_RULES; i++) {
        len += (size_t)snprintf(big + len, n - len, "allow users=a verbs=get nonResourceURLs=/\n");
    }
    r = rbac_parse(big, len, "rules", err, sizeof(err));
    cr_assert_null(r);
    cr_assert_str_eq(err, "rules:10001: more than 10000 rules");
    free(big);
}

Test(rbac, crlf_lines_and_load)
{
    char dir[] = "/tmp/kwp-rbac-XXXXXX", path[64];
    struct identity *u = who("u", NULL);
    struct rbac *r;
    FILE *f;

    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/rules", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("allow users=u verbs=get nonResourceURLs=/x\r\n", f);
    fclose(f);
    r = rbac_load(path, err, sizeof(err));
    cr_assert_not_null(r, "%s", err);
    cr_assert_eq(decide(r, u, url("get", "/x"), NULL), REVIEW_ALLOW);
    rbac_free(r);
    remove(path);
    r = rbac_load(path, err, sizeof(err));
    cr_assert_null(r);
    cr_assert(strstr(err, "No such file") != NULL, "%s", err);
    remove(dir);
    identity_free(u);
}
