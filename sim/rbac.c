/*
 * rbac.c - the rule file and its evaluation (rbac.h).
 *
 * Each rule keeps its lists as arrays of owned strings; matching follows
 * k8s.io/component-helpers/auth/rbac/validation (VerbMatches, APIGroupMatches,
 * ResourceMatches, ResourceNameMatches, NonResourceURLMatches) and RBAC's RuleAllows, which
 * takes a resource request to the resource rules and a non-resource one to the URL rules.
 */
#include "sim/rbac.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/bug.h"
#include "sim/filebuf.h"

#define RBAC_ALL "*"

enum rbac_field {
    RF_USERS = 0,
    RF_GROUPS,
    RF_VERBS,
    RF_API_GROUPS,
    RF_RESOURCES,
    RF_RESOURCE_NAMES,
    RF_NAMESPACES,
    RF_URLS,
    RF_COUNT
};

/* The keys of a rule line, indexed by enum rbac_field; whether '*' is meaningful there. */
static const struct {
    const char *key;
    bool star;
} rbac_keys[RF_COUNT] = {
    [RF_USERS] = {"users", false},
    [RF_GROUPS] = {"groups", false},
    [RF_VERBS] = {"verbs", true},
    [RF_API_GROUPS] = {"apiGroups", true},
    [RF_RESOURCES] = {"resources", true},
    [RF_RESOURCE_NAMES] = {"resourceNames", false},
    [RF_NAMESPACES] = {"namespaces", false},
    [RF_URLS] = {"nonResourceURLs", true},
};

struct rbac_list {
    char **v;
    size_t n;
    bool set; /* the key was given */
};

struct rbac_rule {
    char *name;
    bool deny;
    struct rbac_list f[RF_COUNT];
};

struct rbac {
    struct rbac_rule *rules;
    size_t n;
};

/* ---- evaluation ------------------------------------------------------------------------ */

static bool list_has(const struct rbac_list *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++) {
        if (strcmp(l->v[i], s) == 0) {
            return true;
        }
    }
    return false;
}

/* VerbMatches / APIGroupMatches: '*' or the exact value. */
static bool list_matches(const struct rbac_list *l, const char *s)
{
    return list_has(l, RBAC_ALL) || list_has(l, s);
}

/* ResourceMatches: '*', "res" or "res/sub" exactly, or "*" "/sub". */
static bool resource_matches(const struct rbac_list *l, const char *res, const char *sub)
{
    size_t sub_len = strlen(sub);

    for (size_t i = 0; i < l->n; i++) {
        const char *r = l->v[i];
        size_t rlen = strlen(r), res_len = strlen(res);

        if (strcmp(r, RBAC_ALL) == 0) {
            return true;
        }
        if (sub_len == 0) {
            if (strcmp(r, res) == 0) {
                return true;
            }
            continue;
        }
        if (rlen == res_len + 1 + sub_len && strncmp(r, res, res_len) == 0 && r[res_len] == '/' &&
            strcmp(r + res_len + 1, sub) == 0) {
            return true;
        }
        if (rlen == sub_len + 2 && strncmp(r, "*/", 2) == 0 && strcmp(r + 2, sub) == 0) {
            return true;
        }
    }
    return false;
}

/* NonResourceURLMatches. */
static bool url_matches(const struct rbac_list *l, const char *path)
{
    for (size_t i = 0; i < l->n; i++) {
        const char *u = l->v[i];
        size_t ulen = strlen(u);

        if (strcmp(u, RBAC_ALL) == 0 || strcmp(u, path) == 0) {
            return true;
        }
        if (ulen > 0 && u[ulen - 1] == '*' && strncmp(path, u, ulen - 1) == 0) {
            return true;
        }
    }
    return false;
}

static bool rule_allows(const struct rbac_rule *r, const struct review_attrs *a)
{
    const char *verb = a->verb != NULL ? a->verb : "";

    if (!list_matches(&r->f[RF_VERBS], verb)) {
        return false;
    }
    if (!a->is_resource) {
        return r->f[RF_URLS].n > 0 && !r->f[RF_NAMESPACES].set &&
               url_matches(&r->f[RF_URLS], a->path != NULL ? a->path : "");
    }
    if (r->f[RF_RESOURCES].n == 0) {
        return false;
    }
    if (r->f[RF_NAMESPACES].set && !list_has(&r->f[RF_NAMESPACES], a->ns != NULL ? a->ns : "")) {
        return false;
    }
    if (!list_matches(&r->f[RF_API_GROUPS], a->group != NULL ? a->group : "")) {
        return false;
    }
    if (!resource_matches(&r->f[RF_RESOURCES], a->resource != NULL ? a->resource : "",
                          a->subresource != NULL ? a->subresource : "")) {
        return false;
    }
    return r->f[RF_RESOURCE_NAMES].n == 0 ||
           list_has(&r->f[RF_RESOURCE_NAMES], a->name != NULL ? a->name : "");
}

/* The subject of <r> that <id> is, as RBAC's reason names it ("User \"alice\""), or false. */
static bool rule_subject(const struct rbac_rule *r, const struct identity *id, char **subject)
{
    size_t n;

    if (list_has(&r->f[RF_USERS], id->user)) {
        n = strlen(id->user) + 8;
        *subject = xmalloc(n);
        snprintf(*subject, n, "User \"%s\"", id->user);
        return true;
    }
    for (size_t i = 0; i < id->n_groups; i++) {
        if (list_has(&r->f[RF_GROUPS], id->groups[i])) {
            n = strlen(id->groups[i]) + 9;
            *subject = xmalloc(n);
            snprintf(*subject, n, "Group \"%s\"", id->groups[i]);
            return true;
        }
    }
    return false;
}

/* The first rule of kind <deny> that applies to <id> and <a>, or NULL; its subject text. */
static const struct rbac_rule *first_match(const struct rbac *r, bool deny,
                                           const struct identity *id, const struct review_attrs *a,
                                           char **subject)
{
    for (size_t i = 0; i < r->n; i++) {
        const struct rbac_rule *rule = &r->rules[i];

        if (rule->deny != deny || !rule_allows(rule, a)) {
            continue;
        }
        if (rule_subject(rule, id, subject)) {
            return rule;
        }
    }
    return NULL;
}

enum review_decision rbac_authorize(const struct rbac *r, const struct identity *id,
                                    const struct review_attrs *a, char **reason)
{
    const struct rbac_rule *rule;
    char *subject = NULL;
    size_t n;

    if (identity_has_group(id, RBAC_PRIVILEGED_GROUP)) {
        *reason = xstrdup("");
        return REVIEW_ALLOW;
    }
    rule = first_match(r, true, id, a, &subject);
    if (rule != NULL) {
        n = strlen(rule->name) + 20;
        *reason = xmalloc(n);
        snprintf(*reason, n, "denied by rule \"%s\"", rule->name);
        free(subject);
        return REVIEW_DENY;
    }
    rule = first_match(r, false, id, a, &subject);
    if (rule != NULL) {
        n = strlen(rule->name) + strlen(subject) + 32;
        *reason = xmalloc(n);
        snprintf(*reason, n, "RBAC: allowed by rule \"%s\" to %s", rule->name, subject);
        free(subject);
        return REVIEW_ALLOW;
    }
    *reason = xstrdup("");
    return REVIEW_NO_OPINION;
}

/* ---- parsing --------------------------------------------------------------------------- */

static void list_free(struct rbac_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i]);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static void rule_fini(struct rbac_rule *r)
{
    free(r->name);
    for (size_t i = 0; i < RF_COUNT; i++) {
        list_free(&r->f[i]);
    }
}

void rbac_free(struct rbac *r)
{
    if (r == NULL) {
        return;
    }
    for (size_t i = 0; i < r->n; i++) {
        rule_fini(&r->rules[i]);
    }
    free(r->rules);
    free(r);
}

size_t rbac_len(const struct rbac *r)
{
    return r->n;
}

/* Where an error is reported: the file and line. */
struct rbac_where {
    const char *name;
    int line;
    char *err;
    size_t err_len;
};

/* Writes "NAME:LINE: <formatted text>" to the error buffer; returns -EINVAL. */
__attribute__((format(printf, 2, 3))) static int fail(const struct rbac_where *w, const char *fmt,
                                                      ...)
{
    char what[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    snprintf(w->err, w->err_len, "%s:%d: %s", w->name, w->line, what);
    return -EINVAL;
}

/* Splits VALUE (NUL-terminated, no blanks) into <l>. */
static int parse_list(const struct rbac_where *w, const char *key, bool star, char *value,
                      struct rbac_list *l)
{
    char *item = value;

    l->set = true;
    for (;;) {
        char *comma = strchr(item, ',');

        if (comma != NULL) {
            *comma = '\0';
        }
        if (item[0] == '\0') {
            return fail(w, "%s: an empty list item (write \"\" for the empty string)", key);
        }
        if (strchr(item, '"') != NULL && strcmp(item, "\"\"") != 0) {
            return fail(w, "%s: a '\"' other than the empty string \"\"", key);
        }
        if (!star && strcmp(item, RBAC_ALL) == 0) {
            return fail(w, "%s: '*' matches nothing here", key);
        }
        if (l->n >= RBAC_MAX_VALUES) {
            return fail(w, "%s: more than %d values", key, RBAC_MAX_VALUES);
        }
        l->v = xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
        l->v[l->n++] = xstrdup(strcmp(item, "\"\"") == 0 ? "" : item);
        if (comma == NULL) {
            return 0;
        }
        item = comma + 1;
    }
}

/* One KEY=VALUE field of a rule. */
static int parse_field(const struct rbac_where *w, char *tok, struct rbac_rule *r)
{
    char *eq = strchr(tok, '=');

    if (eq == NULL) {
        return fail(w, "'%s' is not KEY=VALUE", tok);
    }
    *eq = '\0';
    if (strcmp(tok, "name") == 0) {
        if (r->name != NULL) {
            return fail(w, "%s given twice", tok);
        }
        if (eq[1] == '\0' || strchr(eq + 1, ',') != NULL) {
            return fail(w, "%s needs one value", tok);
        }
        r->name = xstrdup(eq + 1);
        return 0;
    }
    for (size_t i = 0; i < RF_COUNT; i++) {
        if (strcmp(tok, rbac_keys[i].key) != 0) {
            continue;
        }
        if (r->f[i].set) {
            return fail(w, "%s given twice", tok);
        }
        return parse_list(w, rbac_keys[i].key, rbac_keys[i].star, eq + 1, &r->f[i]);
    }
    return fail(w,
                "unknown key '%s' (users, groups, verbs, apiGroups, resources, "
                "resourceNames, namespaces, nonResourceURLs, name)",
                tok);
}

/* RBAC's validation of a whole rule. */
static int check_rule(const struct rbac_where *w, const struct rbac_rule *r)
{
    if (r->f[RF_USERS].n == 0 && r->f[RF_GROUPS].n == 0) {
        return fail(w, "a rule needs users or groups");
    }
    if (r->f[RF_VERBS].n == 0) {
        return fail(w, "a rule needs verbs");
    }
    if (r->f[RF_RESOURCES].n == 0 && r->f[RF_URLS].n == 0) {
        return fail(w, "a rule needs resources or nonResourceURLs");
    }
    if (r->f[RF_RESOURCES].n > 0 && r->f[RF_API_GROUPS].n == 0) {
        return fail(w, "resource rules must supply at least one api group (apiGroups)");
    }
    if (r->f[RF_API_GROUPS].n > 0 && r->f[RF_RESOURCES].n == 0) {
        return fail(w, "apiGroups without resources");
    }
    if (r->f[RF_RESOURCE_NAMES].n > 0 && r->f[RF_RESOURCES].n == 0) {
        return fail(w, "resourceNames without resources");
    }
    if (r->f[RF_NAMESPACES].set && r->f[RF_URLS].n > 0) {
        return fail(w, "namespaced rules cannot apply to non-resource URLs");
    }
    return 0;
}

/* One rule line (NUL-terminated, modified in place) into <r>. */
static int parse_rule(const struct rbac_where *w, char *line, struct rbac_rule *r)
{
    char *save = NULL, *tok = strtok_r(line, " \t", &save);
    char dflt[32];
    int rc;

    memset(r, 0, sizeof(*r));
    if (strcmp(tok, "allow") != 0 && strcmp(tok, "deny") != 0) {
        return fail(w, "'%s': a rule starts with allow or deny", tok);
    }
    r->deny = tok[0] == 'd';
    while ((tok = strtok_r(NULL, " \t", &save)) != NULL) {
        rc = parse_field(w, tok, r);
        if (rc != 0) {
            return rc;
        }
    }
    rc = check_rule(w, r);
    if (rc != 0) {
        return rc;
    }
    if (r->name == NULL) {
        snprintf(dflt, sizeof(dflt), "line-%d", w->line);
        r->name = xstrdup(dflt);
    }
    return 0;
}

/* Whether the line holds nothing but blanks, or a comment. */
static bool line_is_empty(const char *s)
{
    s += strspn(s, " \t\r");
    return s[0] == '\0' || s[0] == '#';
}

struct rbac *rbac_parse(const char *data, size_t len, const char *name, char *err, size_t err_len)
{
    struct rbac *r = xcalloc(1, sizeof(*r));
    struct rbac_where w = {name, 0, err, err_len};
    char *line = xmalloc(RBAC_MAX_LINE + 1);
    size_t off = 0, cap = 0;
    int rc = 0;

    if (len > RBAC_MAX_BYTES) {
        snprintf(err, err_len, "%s: larger than %d bytes", name, RBAC_MAX_BYTES);
        rc = -EINVAL;
    }
    while (rc == 0 && off < len) {
        const char *nl = memchr(data + off, '\n', len - off);
        size_t n = nl != NULL ? (size_t)(nl - (data + off)) : len - off;

        w.line++;
        if (n > RBAC_MAX_LINE) {
            rc = fail(&w, "a line longer than %d bytes", RBAC_MAX_LINE);
            break;
        }
        memcpy(line, data + off, n);
        line[n] = '\0';
        off += n + (nl != NULL);
        if (n > 0 && line[n - 1] == '\r') {
            line[--n] = '\0';
        }
        if (strlen(line) != n) {
            rc = fail(&w, "a NUL byte");
            break;
        }
        if (line_is_empty(line)) {
            continue;
        }
        if (r->n >= RBAC_MAX_RULES) {
            rc = fail(&w, "more than %d rules", RBAC_MAX_RULES);
            break;
        }
        if (r->n == cap) {
            cap = cap ? cap * 2 : 16;
            r->rules = xrealloc(r->rules, cap * sizeof(*r->rules));
        }
        rc = parse_rule(&w, line, &r->rules[r->n]);
        if (rc != 0) {
            rule_fini(&r->rules[r->n]);
            break;
        }
        r->n++;
    }
    free(line);
    if (rc != 0) {
        rbac_free(r);
        return NULL;
    }
    return r;
}

struct rbac *rbac_load(const char *path, char *err, size_t err_len)
{
    size_t n;
    char *buf = filebuf_read(path, RBAC_MAX_BYTES, &n, err, err_len);
    struct rbac *r;

    if (buf == NULL) {
        return NULL;
    }
    r = rbac_parse(buf, n, path, err, err_len);
    free(buf);
    return r;
}
