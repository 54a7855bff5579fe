/*
 * test_selector.c - label and field selectors through cache/selector.h.
 *
 * Expected error texts are kube-apiserver's, built from apimachinery's
 * pkg/labels/selector.go, pkg/fields/selector.go, pkg/api/validate/content (IsLabelKey,
 * IsLabelValue, RegexError, MaxLenError) and pkg/util/validation/field/errors.go.
 * Blobs are built with blob_new, as the store holds them.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/blob.h"
#include "cache/selector.h"

#define KEY_RE                                                                                     \
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "    \
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "         \
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
#define VALUE_RE                                                                                   \
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "    \
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "             \
    "'my_value',  or '12345', regex used for validation is "                                       \
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
#define DNS_RE                                                                                     \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "   \
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "  \
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define REQ "unable to parse requirement: "
#define INT_ERR "for 'Gt', 'Lt' operators, the value must be an integer"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* --- label sets (sorted by key, strcmp order) --- */

static const struct blob_kv kv_web[] = {
    {"app", "web"}, {"env", "prod"}, {"tier", "frontend"}, {"version", "3"}};
static const struct blob_kv kv_db[] = {
    {"app", "db"}, {"env", ""}, {"example.com/team", "infra"}, {"replicas", "10"}};
static const struct blob_kv kv_kw[] = {{"in", "in"}, {"notin", "x"}, {"num", "-5"}};
static const struct blob_kv kv_int[] = {
    {"bad", "abc"}, {"n", "9223372036854775807"}, {"zero", "0"}};

static struct blob *lbl(const struct blob_kv *kv, size_t n)
{
    struct blob *b =
        blob_new("{}", 2, &(struct blob_meta){.name = "x", .labels = kv, .n_labels = n});

    cr_assert_not_null(b);
    return b;
}

enum set { S_NONE = 0, S_WEB, S_DB, S_KW, S_INT };

static struct blob *label_blob(enum set s)
{
    switch (s) {
    case S_WEB:
        return lbl(kv_web, N(kv_web));
    case S_DB:
        return lbl(kv_db, N(kv_db));
    case S_KW:
        return lbl(kv_kw, N(kv_kw));
    case S_INT:
        return lbl(kv_int, N(kv_int));
    default:
        return lbl(NULL, 0);
    }
}

struct match_case {
    const char *sel;
    enum set set;
    bool want;
};

static const struct match_case label_cases[] = {
    {"", S_NONE, true},
    {"", S_WEB, true},
    {"   ", S_WEB, true},
    {"app=web", S_WEB, true},
    {"app=web", S_DB, false},
    {"app=web", S_NONE, false},
    {"app==web", S_WEB, true},
    {"app!=web", S_WEB, false},
    {"app!=web", S_DB, true},
    {"app!=web", S_NONE, true},
    {"app", S_WEB, true},
    {"app", S_NONE, false},
    {"!app", S_NONE, true},
    {"!app", S_WEB, false},
    {"app in (web,db)", S_WEB, true},
    {"app in (web,db)", S_DB, true},
    {"app in (api)", S_WEB, false},
    {"app in (web)", S_NONE, false},
    {"app in (web,web,web)", S_WEB, true},
    {"app notin (web)", S_WEB, false},
    {"app notin (web)", S_DB, true},
    {"app notin (web)", S_NONE, true},
    {"env=", S_DB, true},
    {"env=", S_WEB, false},
    {"env!=", S_DB, false},
    {"env in ()", S_DB, true},
    {"env in ()", S_NONE, false},
    {"env notin ()", S_DB, false},
    {"env notin ()", S_WEB, true},
    {"env in (,prod)", S_WEB, true},
    {"env in (,prod)", S_DB, true},
    {"env in (prod,)", S_DB, true},
    {"env in (a,,b)", S_DB, true},
    {"version>2", S_WEB, true},
    {"version>3", S_WEB, false},
    {"version<4", S_WEB, true},
    {"version<3", S_WEB, false},
    {"version>02", S_WEB, true},
    {"version=03", S_WEB, false},
    {"version in (3)", S_WEB, true},
    {"version>2", S_NONE, false},
    {"replicas>9", S_DB, true},
    {"replicas<10", S_DB, false},
    {"num<0", S_KW, true},
    {"num>0", S_KW, false},
    {"bad>0", S_INT, false},
    {"bad<0", S_INT, false},
    {"n>9223372036854775806", S_INT, true},
    {"n<9223372036854775807", S_INT, false},
    {"zero<1", S_INT, true},
    {"zero>0", S_INT, false},
    {"app=web,env=prod", S_WEB, true},
    {"app=web,env=dev", S_WEB, false},
    {"app=web, tier in (frontend, backend), !legacy", S_WEB, true},
    {"  app  =  web  ", S_WEB, true},
    {"\tapp\n==\rweb", S_WEB, true},
    {"app in(web)", S_WEB, true},
    {"example.com/team=infra", S_DB, true},
    {"example.com/team", S_WEB, false},
    {"in in (in)", S_KW, true},
    {"notin notin (a,b)", S_KW, true},
    {"in=in,notin=x", S_KW, true},
    {"!in", S_KW, false},
    {"app in (web),app notin (db)", S_WEB, true},
    {"app,!app", S_WEB, false},
    {"tier=Frontend", S_WEB, false},
    {"APP=web", S_WEB, false},
    {"aaa", S_WEB, false},
    {"zzz", S_WEB, false},
};

Test(selector, label_match_table)
{
    char err[512];

    cr_assert_geq(N(label_cases), 40);
    for (size_t i = 0; i < N(label_cases); i++) {
        const struct match_case *c = &label_cases[i];
        struct selector *sel = selector_parse_labels(c->sel, err, sizeof(err));
        struct blob *b = label_blob(c->set);

        cr_assert_not_null(sel, "case %zu '%s': %s", i, c->sel, err);
        cr_expect_str_empty(err, "case %zu", i);
        cr_expect_eq(selector_match(sel, b), c->want, "case %zu '%s' on set %d: want %d", i, c->sel,
                     c->set, c->want);
        selector_free(sel);
        blob_unref(b);
    }
}

struct err_case {
    const char *sel;
    const char *want;
};

static const struct err_case label_errors[] = {
    {"a,", "found '', expected: identifier after ','"},
    {"a in (x),,b", "found ',', expected: identifier after ','"},
    {"a=b)", "found ')', expected: ',' or 'end of string'"},
    {"a=b c", "found 'c', expected: ',' or 'end of string'"},
    {"!a=b", "found '=', expected: ',' or 'end of string'"},
    {"=a", "found '=', expected: !, identifier, or 'end of string'"},
    {",", "found ',', expected: !, identifier, or 'end of string'"},
    {"!", REQ "found '', expected: identifier"},
    {"!!a", REQ "found '!', expected: identifier"},
    {"a b", REQ "found 'b', expected: in, notin, =, ==, !=, gt, lt"},
    {"a!", REQ "found '!', expected: in, notin, =, ==, !=, gt, lt"},
    {"a)", REQ "found ')', expected: in, notin, =, ==, !=, gt, lt"},
    {"a in b", REQ "found 'b' expected: '('"},
    {"a notin", REQ "found '' expected: '('"},
    {"a in (", REQ "found '', expected: ',', ')' or identifier"},
    {"a in (=)", REQ "found '=', expected: ',', ')' or identifier"},
    {"a in (b c)", REQ "found 'c', expected: ',' or ')'"},
    {"a in (b", REQ "found '', expected: ',' or ')'"},
    {"a in (b,,)", REQ "found ')', expected: ',', or identifier"},
    {"a in (b,=)", REQ "found '=', expected: ',', or identifier"},
    {"a=(", REQ "found '(', expected: identifier"},
    {"a===b", REQ "found '=', expected: identifier"},
    {"a<=1", REQ "found '=', expected: identifier"},
    {"app=x#y", REQ "values[0][app]: Invalid value: \"x#y\": " VALUE_RE},
    {"a>b", REQ "values[0]: Invalid value: \"b\": " INT_ERR},
    {"a>", REQ "values[0]: Invalid value: \"\": " INT_ERR},
    {"a<99999999999999999999", REQ "values[0]: Invalid value: \"99999999999999999999\": " INT_ERR},
    {"a>-1", REQ "values[0][a]: Invalid value: \"-1\": " VALUE_RE},
    {"a>b#", REQ "[values[0]: Invalid value: \"b#\": " INT_ERR
                 ", values[0][a]: Invalid value: \"b#\": " VALUE_RE "]"},
    {"x in (b#,a#,b#)", REQ "[values[0][x]: Invalid value: \"a#\": " VALUE_RE
                            ", values[1][x]: Invalid value: \"b#\": " VALUE_RE "]"},
    {"a/b/c", REQ "<nil>: Invalid value: \"a/b/c\": a valid label key " KEY_RE
                  " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"},
    {"Foo.com/a", REQ "<nil>: Invalid value: \"Foo.com/a\": prefix part " DNS_RE},
    {"a..b/c", REQ "<nil>: Invalid value: \"a..b/c\": prefix part " DNS_RE},
    {"/a", REQ "<nil>: Invalid value: \"/a\": prefix part must be non-empty"},
    {"a/", REQ "<nil>: Invalid value: \"a/\": name part must be non-empty; name part " KEY_RE},
    {"-a", REQ "<nil>: Invalid value: \"-a\": name part " KEY_RE},
    {"!a.", REQ "<nil>: Invalid value: \"a.\": name part " KEY_RE},
    {"a:b=c", REQ "<nil>: Invalid value: \"a:b\": name part " KEY_RE},
    /* Go's %q escaping of the bad value */
    {"a=\"q\\", REQ "values[0][a]: Invalid value: \"\\\"q\\\\\": " VALUE_RE},
    {"a=\x01", REQ "values[0][a]: Invalid value: \"\\x01\": " VALUE_RE},
    {"a=\x7f", REQ "values[0][a]: Invalid value: \"\\x7f\": " VALUE_RE},
    {"a=\xff", REQ "values[0][a]: Invalid value: \"\\xff\": " VALUE_RE},
    {"a=\xc3\xa9", REQ "values[0][a]: Invalid value: \"\xc3\xa9\": " VALUE_RE},
    {"a=\xc2\xa0", REQ "values[0][a]: Invalid value: \"\\u00a0\": " VALUE_RE},
    {"a=\xe2\x80\x8b", REQ "values[0][a]: Invalid value: \"\\u200b\": " VALUE_RE},
    {"a=\xf0\x9f\x98\x80", REQ "values[0][a]: Invalid value: \"\xf0\x9f\x98\x80\": " VALUE_RE},
    {"a=\xed\xa0\x80", REQ "values[0][a]: Invalid value: \"\\xed\\xa0\\x80\": " VALUE_RE},
    /* selector.c's own IsPrint table called these printable; Go's does not */
    {"a=\xef\xb7\x90", REQ "values[0][a]: Invalid value: \"\\ufdd0\": " VALUE_RE}, /* U+FDD0 */
    {"a=\xcd\xb8", REQ "values[0][a]: Invalid value: \"\\u0378\": " VALUE_RE},     /* U+0378 */
};

Test(selector, label_error_table)
{
    char err[2048];

    cr_assert_geq(N(label_errors), 15);
    for (size_t i = 0; i < N(label_errors); i++) {
        const struct err_case *c = &label_errors[i];
        struct selector *sel = selector_parse_labels(c->sel, err, sizeof(err));

        cr_expect_null(sel, "case %zu '%s' parsed", i, c->sel);
        cr_expect_str_eq(err, c->want, "case %zu '%s'", i, c->sel);
        selector_free(sel);
    }
}

static char *repeat(char c, size_t n)
{
    char *s = malloc(n + 1);

    memset(s, c, n);
    s[n] = '\0';
    return s;
}

Test(selector, label_length_limits)
{
    char err[2048];
    char sel_text[600];
    char want[1024];
    char *k63 = repeat('k', 63);
    char *k64 = repeat('k', 64);
    char *v64 = repeat('v', 64);
    char *p253 = repeat('p', 253);
    char *p254 = repeat('p', 254);
    struct selector *sel;

    /* exactly at the limits: fine */
    snprintf(sel_text, sizeof(sel_text), "%s/%s=%s", p253, k63, k63);
    sel = selector_parse_labels(sel_text, err, sizeof(err));
    cr_assert_not_null(sel, "%s", err);
    selector_free(sel);

    snprintf(sel_text, sizeof(sel_text), "%s", k64);
    cr_assert_null(selector_parse_labels(sel_text, err, sizeof(err)));
    snprintf(want, sizeof(want),
             REQ "<nil>: Invalid value: \"%s\": name part must be no more than 63 bytes", k64);
    cr_expect_str_eq(err, want);

    snprintf(sel_text, sizeof(sel_text), "a=%s", v64);
    cr_assert_null(selector_parse_labels(sel_text, err, sizeof(err)));
    snprintf(want, sizeof(want),
             REQ "values[0][a]: Invalid value: \"%s\": must be no more than 63 bytes", v64);
    cr_expect_str_eq(err, want);

    /* both messages of IsLabelValue, joined with "; " */
    snprintf(sel_text, sizeof(sel_text), "a=-%s", k63);
    cr_assert_null(selector_parse_labels(sel_text, err, sizeof(err)));
    snprintf(want, sizeof(want),
             REQ "values[0][a]: Invalid value: \"-%s\": must be no more than 63 bytes; " VALUE_RE,
             k63);
    cr_expect_str_eq(err, want);

    snprintf(sel_text, sizeof(sel_text), "%s/a", p254);
    cr_assert_null(selector_parse_labels(sel_text, err, sizeof(err)));
    snprintf(want, sizeof(want),
             REQ "<nil>: Invalid value: \"%s/a\": prefix part must be no more than 253 bytes",
             p254);
    cr_expect_str_eq(err, want);

    free(k63);
    free(k64);
    free(v64);
    free(p253);
    free(p254);
}

Test(selector, max_len_is_enforced)
{
    char err[256];
    size_t n = SELECTOR_MAX_LEN;
    char *s = malloc(n + 2);
    struct selector *sel;

    /* "a,a,...,a " is exactly SELECTOR_MAX_LEN bytes: accepted */
    for (size_t i = 0; i < n - 1; i++) {
        s[i] = i % 2 ? ',' : 'a';
    }
    s[n - 1] = ' ';
    s[n] = '\0';
    sel = selector_parse_labels(s, err, sizeof(err));
    cr_assert_not_null(sel, "%s", err);
    cr_expect_eq(selector_count(sel), n / 2);
    selector_free(sel);

    s[n] = 'a';
    s[n + 1] = '\0';
    cr_expect_null(selector_parse_labels(s, err, sizeof(err)));
    cr_expect_str_eq(err, "selector is too long: 16385 bytes, the limit is 16384");
    cr_expect_null(selector_parse_fields(s, err, sizeof(err)));
    cr_expect_str_eq(err, "selector is too long: 16385 bytes, the limit is 16384");
    free(s);
}

Test(selector, big_in_list_is_sorted_and_deduplicated)
{
    char err[256];
    size_t cap = SELECTOR_MAX_LEN;
    char *s = malloc(cap + 1);
    size_t len = 0;
    struct selector *sel;
    struct blob *b = label_blob(S_INT);

    len += (size_t)snprintf(s, cap, "zero in (");
    for (unsigned i = 3000; i > 0 && len + 16 < cap; i--) {
        len += (size_t)snprintf(s + len, cap - len, "%u,%u,", i, i);
    }
    len += (size_t)snprintf(s + len, cap - len, "0)");
    sel = selector_parse_labels(s, err, sizeof(err));
    cr_assert_not_null(sel, "%s", err);
    cr_expect(selector_match(sel, b));
    cr_expect_str_eq(selector_value(sel, 0), "0"); /* the smallest after sorting */
    selector_free(sel);
    blob_unref(b);
    free(s);
}

Test(selector, label_accessors)
{
    char err[256];
    struct selector *sel =
        selector_parse_labels("b in (y,x),a,!c,d!=1,e notin (q),f>5", err, sizeof(err));

    cr_assert_not_null(sel, "%s", err);
    cr_expect_not(selector_is_empty(sel));
    cr_assert_eq(selector_count(sel), 6);
    /* sorted by key, like labels.Parse */
    cr_expect_str_eq(selector_field(sel, 0), "a");
    cr_expect_str_eq(selector_value(sel, 0), "");
    cr_expect_not(selector_negated(sel, 0));
    cr_expect_str_eq(selector_field(sel, 1), "b");
    cr_expect_str_eq(selector_value(sel, 1), "x");
    cr_expect_not(selector_negated(sel, 1));
    cr_expect_str_eq(selector_field(sel, 2), "c");
    cr_expect(selector_negated(sel, 2));
    cr_expect_str_eq(selector_field(sel, 3), "d");
    cr_expect_str_eq(selector_value(sel, 3), "1");
    cr_expect(selector_negated(sel, 3));
    cr_expect_str_eq(selector_field(sel, 4), "e");
    cr_expect(selector_negated(sel, 4));
    cr_expect_str_eq(selector_field(sel, 5), "f");
    cr_expect_str_eq(selector_value(sel, 5), "5");
    cr_expect_not(selector_negated(sel, 5));
    cr_expect_null(selector_field(sel, 6));
    cr_expect_null(selector_value(sel, 6));
    cr_expect_not(selector_negated(sel, 6));
    selector_free(sel);
}

Test(selector, null_and_empty)
{
    char err[64] = "junk";
    struct selector *sel;
    struct blob *b = label_blob(S_WEB);

    cr_expect(selector_is_empty(NULL));
    cr_expect(selector_match(NULL, b));
    cr_expect_eq(selector_count(NULL), 0);
    cr_expect_null(selector_field(NULL, 0));
    cr_expect_null(selector_value(NULL, 0));
    cr_expect_not(selector_negated(NULL, 0));
    selector_free(NULL);

    const char *empties[] = {NULL, "", " \t\r\n "};
    for (size_t i = 0; i < N(empties); i++) {
        sel = selector_parse_labels(empties[i], err, sizeof(err));
        cr_assert_not_null(sel);
        cr_expect_str_empty(err); /* cleared on success */
        cr_expect(selector_is_empty(sel));
        cr_expect(selector_match(sel, b));
        selector_free(sel);
    }
    const char *field_empties[] = {NULL, "", ",", ",,,"};
    for (size_t i = 0; i < N(field_empties); i++) {
        sel = selector_parse_fields(field_empties[i], err, sizeof(err));
        cr_assert_not_null(sel);
        cr_expect(selector_is_empty(sel));
        cr_expect(selector_match(sel, b));
        selector_free(sel);
    }
    /* a NULL blob is an object without labels or fields */
    sel = selector_parse_labels("!app", err, sizeof(err));
    cr_expect(selector_match(sel, NULL));
    selector_free(sel);
    blob_unref(b);
}

Test(selector, error_buffer_is_bounded)
{
    char err[8];
    char big[4];

    memset(err, 'X', sizeof(err));
    cr_expect_null(selector_parse_labels("a b", err, sizeof(err)));
    cr_expect_str_eq(err, "unable "); /* truncated, NUL-terminated */
    cr_expect_null(selector_parse_labels("a b", NULL, 0));
    cr_expect_null(selector_parse_fields("abc", NULL, 0));
    memset(big, 'X', sizeof(big));
    cr_expect_null(selector_parse_fields("abc", big, 1));
    cr_expect_eq(big[0], '\0');
    cr_expect_eq(big[1], 'X');
}

/* --- field selectors --- */

static const struct blob_kv kv_pod[] = {
    {"spec.nodeName", "n1"}, {"spec.x", "a,b=c\\d"}, {"status.phase", "Running"}};

static struct blob *pod_blob(void)
{
    struct blob_meta m = {.ns = "default", .name = "pod1", .fields = kv_pod, .n_fields = N(kv_pod)};
    struct blob *b = blob_new("{}", 2, &m);

    cr_assert_not_null(b);
    return b;
}

static struct blob *node_blob(void)
{
    struct blob *b = blob_new("{}", 2, &(struct blob_meta){.name = "node1"});

    cr_assert_not_null(b);
    return b;
}

struct field_case {
    const char *sel;
    bool pod; /* match against the pod, else the node */
    bool want;
};

static const struct field_case field_cases[] = {
    {"", true, true},
    {"metadata.name=pod1", true, true},
    {"metadata.name=pod2", true, false},
    {"metadata.name!=pod2", true, true},
    {"metadata.name==pod1", true, true},
    {"metadata.namespace=default", true, true},
    {"metadata.namespace=", false, true},
    {"metadata.namespace==", true, false},
    {"metadata.namespace!=", false, false},
    {"spec.nodeName==n1", true, true},
    {"spec.nodeName=n1,status.phase=Running", true, true},
    {"spec.nodeName=n1,status.phase!=Running", true, false},
    {"status.phase=", false, true},
    {"status.phase!=", false, false},
    {"status.phase!=", true, true},
    {"spec.x=a\\,b\\=c\\\\d", true, true},
    {"spec.x!=a\\,b\\=c\\\\d", true, false},
    {"spec.x=a", true, false},
    {",,metadata.name=pod1,,", true, true},
    {"metadata.name=pod1,metadata.name=pod1", true, true},
    {" metadata.name=pod1", true, false},
    {"metadata.name= pod1", true, false},
    {"metadata.name=node1,metadata.namespace=", false, true},
};

Test(selector, field_match_table)
{
    char err[512];

    for (size_t i = 0; i < N(field_cases); i++) {
        const struct field_case *c = &field_cases[i];
        struct selector *sel = selector_parse_fields(c->sel, err, sizeof(err));
        struct blob *b = c->pod ? pod_blob() : node_blob();

        cr_assert_not_null(sel, "case %zu '%s': %s", i, c->sel, err);
        cr_expect_eq(selector_match(sel, b), c->want, "case %zu '%s'", i, c->sel);
        selector_free(sel);
        blob_unref(b);
    }
}

static const struct err_case field_errors[] = {
    {"abc", "invalid selector: 'abc'; can't understand 'abc'"},
    {"a!", "invalid selector: 'a!'; can't understand 'a!'"},
    {"zzz,a=b", "invalid selector: 'zzz,a=b'; can't understand 'zzz'"},
    {"b=1,yyy,xxx", "invalid selector: 'b=1,yyy,xxx'; can't understand 'xxx'"},
    {"a=b=c", "invalid field selector: unescaped character in value: 61"},
    {"a==b=c", "invalid field selector: unescaped character in value: 61"},
    {"a===b", "invalid field selector: unescaped character in value: 61"},
    {"a!=b==c", "invalid field selector: unescaped character in value: 61"},
    {"a!==b", "invalid field selector: unescaped character in value: 61"}, /* "!=" then "=b" */
    /* terms are sorted first: "a=b=c" comes before "zzz" */
    {"zzz,a=b=c", "invalid field selector: unescaped character in value: 61"},
    {"a=b\\x", "invalid field selector: invalid escape sequence: \\x"},
    {"a=b\\", "invalid field selector: invalid escape sequence: \\"},
    {"a=\\\xc3\xa9", "invalid field selector: invalid escape sequence: \\\xc3\xa9"},
    {"a=\\\xff", "invalid field selector: invalid escape sequence: \\\xef\xbf\xbd"},
};

Test(selector, field_error_table)
{
    char err[512];

    for (size_t i = 0; i < N(field_errors); i++) {
        const struct err_case *c = &field_errors[i];

        cr_expect_null(selector_parse_fields(c->sel, err, sizeof(err)), "case %zu", i);
        cr_expect_str_eq(err, c->want, "case %zu '%s'", i, c->sel);
    }
}

struct field_parse_case {
    const char *sel;
    size_t i;
    const char *field;
    const char *value;
    bool negated;
};

static const struct field_parse_case field_parses[] = {
    {"a!b=c", 0, "a!b", "c", false},
    {"a!=b", 0, "a", "b", true},
    {"a==b", 0, "a", "b", false},
    {"a=", 0, "a", "", false},
    {"=x", 0, "", "x", false},
    {"a=\\\\", 0, "a", "\\", false},
    {"a=\xff", 0, "a", "\xff", false},               /* no escapes: bytes kept */
    {"a=\xff\\\\", 0, "a", "\xef\xbf\xbd\\", false}, /* rebuilt: U+FFFD */
    {"a=b\\,c,d=e", 0, "a", "b,c", false},
    {"a=b\\,c,d=e", 1, "d", "e", false},
    {"z=1,b!=2,a=3", 0, "a", "3", false},
    {"z=1,b!=2,a=3", 1, "b", "2", true},
    {"z=1,b!=2,a=3", 2, "z", "1", false},
    {"spec.nodeName=n\\=1", 0, "spec.nodeName", "n=1", false},
};

Test(selector, field_parse_and_accessors)
{
    char err[256];

    for (size_t i = 0; i < N(field_parses); i++) {
        const struct field_parse_case *c = &field_parses[i];
        struct selector *sel = selector_parse_fields(c->sel, err, sizeof(err));

        cr_assert_not_null(sel, "case %zu '%s': %s", i, c->sel, err);
        cr_expect_str_eq(selector_field(sel, c->i), c->field, "case %zu", i);
        cr_expect_str_eq(selector_value(sel, c->i), c->value, "case %zu", i);
        cr_expect_eq(selector_negated(sel, c->i), c->negated, "case %zu", i);
        selector_free(sel);
    }
}

Test(selector, field_count)
{
    char err[256];
    struct selector *sel = selector_parse_fields("a=1,,b=2,c!=3", err, sizeof(err));

    cr_assert_not_null(sel, "%s", err);
    cr_expect_eq(selector_count(sel), 3);
    cr_expect_null(selector_field(sel, 3));
    selector_free(sel);
}
