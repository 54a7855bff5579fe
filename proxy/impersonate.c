/*
 * impersonate.c - Impersonate-* headers in (WithImpersonation's buildImpersonationRequests
 * and the identity it builds) and out (client-go's impersonatingRoundTripper); impersonate.h.
 *
 * Parsing walks the headers twice: once to find the user and measure (caps, the no-user
 * error), once to build the identity and the checks in kube-apiserver's order. Extra values
 * are taken in header order (Go walks a map there, so its order is random; only the first
 * refusal's text can differ).
 */
#include "proxy/impersonate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cache/bug.h"
#include "cache/sbuf.h"

#define SA_PREFIX "system:serviceaccount:"
#define SA_GROUP_ALL "system:serviceaccounts"
#define AUTHN_V1 "authentication.k8s.io/v1"
#define EXTRA_PREFIX_LEN (sizeof(IMPERSONATE_EXTRA_PREFIX) - 1)

enum hdr_kind { HDR_OTHER = 0, HDR_USER, HDR_GROUP, HDR_UID, HDR_EXTRA };

static enum hdr_kind hdr_kind(const char *name)
{
    if (strcasecmp(name, IMPERSONATE_USER) == 0) {
        return HDR_USER;
    }
    if (strcasecmp(name, IMPERSONATE_GROUP) == 0) {
        return HDR_GROUP;
    }
    if (strcasecmp(name, IMPERSONATE_UID) == 0) {
        return HDR_UID;
    }
    if (strncasecmp(name, IMPERSONATE_EXTRA_PREFIX, EXTRA_PREFIX_LEN) == 0) {
        return HDR_EXTRA;
    }
    return HDR_OTHER;
}

bool impersonate_is_header(const char *name)
{
    return hdr_kind(name) != HDR_OTHER;
}

static void set_err(char *err, size_t err_len, const char *text)
{
    if (err_len > 0) {
        snprintf(err, err_len, "%s", text);
    }
}

static int hex_val(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/*
 * unescapeExtraKey(strings.ToLower(suffix)) into <out> (room for strlen(suffix) + 1):
 * lowercase, then url.PathUnescape, or the lowercased text when an escape is malformed.
 */
static void extra_key(const char *suffix, char *out)
{
    size_t n = strlen(suffix), r = 0, w = 0;

    for (size_t i = 0; i <= n; i++) {
        char c = suffix[i];

        out[i] = c >= 'A' && c <= 'Z' ? (char)(c | 0x20) : c;
    }
    for (size_t i = 0; i < n; i++) {
        if (out[i] == '%' && (i + 2 >= n || hex_val(out[i + 1]) < 0 || hex_val(out[i + 2]) < 0)) {
            return;
        }
    }
    while (r < n) {
        int v = out[r] == '%' ? hex_val(out[r + 1]) * 16 + hex_val(out[r + 2]) : -1;

        if (v < 0) {
            out[w++] = out[r++];
            continue;
        }
        if (v == 0) {
            memmove(out + w, out + r, 3); /* "%00" kept (see impersonate.h) */
            w += 3;
        } else {
            out[w++] = (char)v;
        }
        r += 3;
    }
    out[w] = '\0';
}

/* One DNS-1123 label's characters: [a-z0-9]([-a-z0-9]*[a-z0-9])? (length checked apart). */
static bool dns_label(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bool alnum = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9');

        if (!alnum && (s[i] != '-' || i == 0 || i + 1 == n)) {
            return false;
        }
    }
    return n > 0;
}

/* ValidateNamespaceName: a DNS-1123 label of at most 63 bytes. */
static bool valid_namespace(const char *s, size_t n)
{
    return n <= 63 && dns_label(s, n);
}

/* ValidateServiceAccountName: a DNS-1123 subdomain (labels joined by '.') of at most 253. */
static bool valid_sa_name(const char *s)
{
    size_t n = strlen(s);

    if (n > 253) {
        return false;
    }
    for (;;) {
        const char *dot = memchr(s, '.', n);
        size_t len = dot != NULL ? (size_t)(dot - s) : n;

        if (!dns_label(s, len)) {
            return false;
        }
        if (dot == NULL) {
            return true;
        }
        n -= len + 1;
        s = dot + 1;
    }
}

/* serviceaccount.SplitUsername: sets the namespace and name spans of a valid SA user. */
static bool sa_split(const char *user, const char **ns, size_t *ns_len, const char **name)
{
    const char *rest, *colon;

    if (strncmp(user, SA_PREFIX, sizeof(SA_PREFIX) - 1) != 0) {
        return false;
    }
    rest = user + sizeof(SA_PREFIX) - 1;
    colon = strchr(rest, ':');
    if (colon == NULL || strchr(colon + 1, ':') != NULL) {
        return false;
    }
    *ns = rest;
    *ns_len = (size_t)(colon - rest);
    *name = colon + 1;
    return valid_namespace(rest, *ns_len) && valid_sa_name(colon + 1);
}

/* ---- pass 1: measure ------------------------------------------------------------------- */

struct scan {
    const char *user; /* first Impersonate-User */
    const char *uid;  /* first Impersonate-Uid */
    size_t n_groups;
    size_t n_extra; /* values */
    size_t bytes;
    size_t max_str; /* longest value or extra key */
};

static int scan_headers(const struct impersonate_hdr *h, size_t n, struct scan *s, char *err,
                        size_t err_len)
{
    char text[128];

    memset(s, 0, sizeof(*s));
    for (size_t i = 0; i < n; i++) {
        enum hdr_kind k = hdr_kind(h[i].name);
        const char *v = h[i].value != NULL ? h[i].value : "";
        size_t vlen = strlen(v);

        if (k == HDR_OTHER) {
            continue;
        }
        s->bytes += strlen(h[i].name) + vlen;
        if (vlen > s->max_str) {
            s->max_str = vlen;
        }
        if (k == HDR_USER && s->user == NULL) {
            s->user = v;
        } else if (k == HDR_UID && s->uid == NULL) {
            s->uid = v;
        } else if (k == HDR_GROUP) {
            s->n_groups++;
        } else if (k == HDR_EXTRA) {
            size_t klen = strlen(h[i].name) - EXTRA_PREFIX_LEN;

            s->max_str = klen > s->max_str ? klen : s->max_str;
            s->n_extra++;
        }
    }
    if (s->bytes > IMPERSONATE_MAX_HEADER_BYTES) {
        snprintf(text, sizeof(text), "Impersonate-* headers exceed %d bytes",
                 IMPERSONATE_MAX_HEADER_BYTES);
    } else if (s->n_groups > IDENTITY_MAX_GROUPS) {
        snprintf(text, sizeof(text), "too many Impersonate-Group headers (limit %d)",
                 IDENTITY_MAX_GROUPS);
    } else if (s->n_extra > IDENTITY_MAX_EXTRA_VALUES) {
        snprintf(text, sizeof(text), "too many Impersonate-Extra-* values (limit %d)",
                 IDENTITY_MAX_EXTRA_VALUES);
    } else if (s->max_str > IDENTITY_MAX_STR) {
        snprintf(text, sizeof(text), "an Impersonate-* value or key is longer than %d bytes",
                 IDENTITY_MAX_STR);
    } else {
        return 0;
    }
    set_err(err, err_len, text);
    return -E2BIG;
}

/*
 * The no-user error: fmt.Errorf("requested %v without impersonating a user", refs) where
 * %v prints each v1.ObjectReference as {Kind Namespace Name UID APIVersion ResourceVersion
 * FieldPath}.
 */
static void no_user_error(const struct impersonate_hdr *h, size_t n, const struct scan *s,
                          char *err, size_t err_len)
{
    struct sbuf sb = {0};
    char *key = xmalloc(s->max_str + 1);
    bool first = true;

    sbuf_str(&sb, "requested [");
    for (size_t pass = 0; pass < 2; pass++) {
        enum hdr_kind want = pass == 0 ? HDR_GROUP : HDR_EXTRA;

        for (size_t i = 0; i < n; i++) {
            const char *v = h[i].value != NULL ? h[i].value : "";

            if (hdr_kind(h[i].name) != want) {
                continue;
            }
            sbuf_str(&sb, first ? "{" : " {");
            first = false;
            if (want == HDR_GROUP) {
                sbuf_str(&sb, "Group  ");
                sbuf_str(&sb, v);
                sbuf_str(&sb, "    }");
                continue;
            }
            extra_key(h[i].name + EXTRA_PREFIX_LEN, key);
            sbuf_str(&sb, "UserExtra  ");
            sbuf_str(&sb, v);
            sbuf_str(&sb, "  " AUTHN_V1 "  ");
            sbuf_str(&sb, key);
            sbuf_str(&sb, "}");
        }
    }
    if (s->uid != NULL && s->uid[0] != '\0') {
        sbuf_str(&sb, first ? "{UID  " : " {UID  ");
        sbuf_str(&sb, s->uid);
        sbuf_str(&sb, "  " AUTHN_V1 "  }");
    }
    sbuf_str(&sb, "] without impersonating a user");
    set_err(err, err_len, sb.p);
    sbuf_free(&sb);
    free(key);
}

/* ---- pass 2: build --------------------------------------------------------------------- */

static struct review_attrs *check_add(struct impersonate_req *r, const char *resource,
                                      const char *name)
{
    struct review_attrs *a = &r->checks[r->n_checks++];

    memset(a, 0, sizeof(*a));
    a->is_resource = true;
    a->verb = "impersonate";
    a->ns = a->group = a->version = a->subresource = "";
    a->resource = resource;
    a->name = name;
    return a;
}

/* The user or service account: identity and first check. */
static int build_user(struct impersonate_req *r, const struct scan *s, bool *is_sa)
{
    const char *ns, *name;
    size_t ns_len;
    char *p;

    r->as = identity_new(s->user);
    if (r->as == NULL) {
        return -E2BIG;
    }
    *is_sa = sa_split(s->user, &ns, &ns_len, &name);
    if (!*is_sa) {
        check_add(r, "users", r->as->user);
        return 0;
    }
    /* arena: "NS\0NAME\0" */
    p = r->arena = xmalloc(ns_len + strlen(name) + 2);
    memcpy(p, ns, ns_len);
    p[ns_len] = '\0';
    memcpy(p + ns_len + 1, name, strlen(name) + 1);
    check_add(r, "serviceaccounts", p + ns_len + 1)->ns = p;
    return 0;
}

/* The extra entry of <key> in <id> (present: the caller just added to it). */
static const struct identity_extra *extra_of(const struct identity *id, const char *key)
{
    for (size_t i = 0; i < id->n_extra; i++) {
        if (strcmp(id->extra[i].key, key) == 0) {
            return &id->extra[i];
        }
    }
    return NULL;
}

static int build_groups_extra(struct impersonate_req *r, const struct impersonate_hdr *h, size_t n,
                              char *key)
{
    struct identity *id = r->as;
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (hdr_kind(h[i].name) == HDR_GROUP) {
            rc = identity_add_group(id, h[i].value != NULL ? h[i].value : "");
            if (rc == 0) {
                check_add(r, "groups", id->groups[id->n_groups - 1]);
            }
        }
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const struct identity_extra *e;
        struct review_attrs *a;

        if (hdr_kind(h[i].name) != HDR_EXTRA) {
            continue;
        }
        extra_key(h[i].name + EXTRA_PREFIX_LEN, key);
        rc = identity_add_extra(id, key, h[i].value != NULL ? h[i].value : "");
        if (rc == 0) {
            e = extra_of(id, key);
            a = check_add(r, "userextras", e->values[e->n_values - 1]);
            a->group = "authentication.k8s.io";
            a->version = "v1";
            a->subresource = e->key;
        }
    }
    return rc;
}

/* WithImpersonation's group defaults after the checks are known. */
static int build_groups_default(struct identity *id, bool is_sa, const char *sa_ns,
                                size_t n_groups_given)
{
    int rc = 0;

    if (is_sa && n_groups_given == 0) {
        struct sbuf g = {0};

        sbuf_str(&g, SA_GROUP_ALL ":");
        sbuf_str(&g, sa_ns);
        rc = identity_add_group(id, SA_GROUP_ALL);
        if (rc == 0) {
            rc = identity_add_group(id, g.p);
        }
        sbuf_free(&g);
    }
    if (rc != 0) {
        return rc;
    }
    if (strcmp(id->user, IDENTITY_ANONYMOUS) != 0) {
        return identity_add_authenticated(id);
    }
    return identity_has_group(id, IDENTITY_UNAUTHENTICATED)
               ? 0
               : identity_add_group(id, IDENTITY_UNAUTHENTICATED);
}

int impersonate_parse(const struct impersonate_hdr *h, size_t n, struct impersonate_req *out,
                      char *err, size_t err_len)
{
    struct scan s;
    bool has_uid, is_sa = false;
    char *key = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    set_err(err, err_len, "");
    rc = scan_headers(h, n, &s, err, err_len);
    if (rc != 0) {
        return rc;
    }
    has_uid = s.uid != NULL && s.uid[0] != '\0';
    if (s.user == NULL || s.user[0] == '\0') {
        if (s.n_groups == 0 && s.n_extra == 0 && !has_uid) {
            return 0;
        }
        no_user_error(h, n, &s, err, err_len);
        return -EINVAL;
    }
    out->checks = xcalloc(1 + s.n_groups + s.n_extra + 1, sizeof(*out->checks));
    key = xmalloc(s.max_str + 1);
    rc = build_user(out, &s, &is_sa);
    if (rc == 0) {
        rc = build_groups_extra(out, h, n, key);
    }
    if (rc == 0 && has_uid) {
        rc = identity_set_uid(out->as, s.uid);
        if (rc == 0) {
            struct review_attrs *a = check_add(out, "uids", out->as->uid);

            a->group = "authentication.k8s.io";
            a->version = "v1";
        }
    }
    if (rc == 0) {
        rc = build_groups_default(out->as, is_sa, out->arena, s.n_groups);
    }
    free(key);
    if (rc != 0) {
        /* only the caps can fail here: scan_headers let the counts through, so this is a
         * key count past IDENTITY_MAX_EXTRA_KEYS or a full group list */
        set_err(err, err_len, "impersonated identity exceeds kwp's identity limits");
        impersonate_req_fini(out);
        return -E2BIG;
    }
    return 0;
}

void impersonate_req_fini(struct impersonate_req *r)
{
    identity_free(r->as);
    free(r->checks);
    free(r->arena);
    memset(r, 0, sizeof(*r));
}

/* ---- out ------------------------------------------------------------------------------- */

/* Whether <v> reaches kube-apiserver byte for byte as a header value (see impersonate.h). */
static bool value_ok(const char *v)
{
    size_t n = strlen(v);

    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];

        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            return false;
        }
    }
    return n == 0 || (v[0] != ' ' && v[0] != '\t' && v[n - 1] != ' ' && v[n - 1] != '\t');
}

static bool identity_sendable(const struct identity *id)
{
    if (id->user[0] == '\0' || !value_ok(id->user) || !value_ok(id->uid)) {
        return false;
    }
    for (size_t i = 0; i < id->n_groups; i++) {
        if (!value_ok(id->groups[i])) {
            return false;
        }
    }
    for (size_t i = 0; i < id->n_extra; i++) {
        for (size_t j = 0; j < id->extra[i].n_values; j++) {
            if (!value_ok(id->extra[i].values[j])) {
                return false;
            }
        }
    }
    return true;
}

/* net/http's token bytes (client-go legalHeaderKeyBytes) minus '%'. */
static bool key_byte_plain(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c != '\0' && strchr("!#$&'*+-.^_`|~", c) != NULL);
}

/* IMPERSONATE_EXTRA_PREFIX + headerKeyEscape(key) into <out> (room: prefix + 3 * len + 1). */
static void extra_header_name(const char *key, char *out)
{
    static const char hex[] = "0123456789ABCDEF";
    char *w = out + EXTRA_PREFIX_LEN;

    memcpy(out, IMPERSONATE_EXTRA_PREFIX, EXTRA_PREFIX_LEN);
    for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++) {
        if (key_byte_plain(*p)) {
            *w++ = (char)*p;
        } else {
            *w++ = '%';
            *w++ = hex[*p >> 4];
            *w++ = hex[*p & 15];
        }
    }
    *w = '\0';
}

int impersonate_headers(const struct identity *id, impersonate_emit_fn *emit, void *ctx)
{
    char *name;
    int rc;

    if (!identity_sendable(id)) {
        return -EINVAL;
    }
    rc = emit(ctx, IMPERSONATE_USER, id->user);
    if (rc == 0 && id->uid[0] != '\0') {
        rc = emit(ctx, IMPERSONATE_UID, id->uid);
    }
    for (size_t i = 0; rc == 0 && i < id->n_groups; i++) {
        rc = emit(ctx, IMPERSONATE_GROUP, id->groups[i]);
    }
    name = xmalloc(EXTRA_PREFIX_LEN + 3 * IDENTITY_MAX_STR + 1);
    for (size_t i = 0; rc == 0 && i < id->n_extra; i++) {
        extra_header_name(id->extra[i].key, name);
        for (size_t j = 0; rc == 0 && j < id->extra[i].n_values; j++) {
            rc = emit(ctx, name, id->extra[i].values[j]);
        }
    }
    free(name);
    return rc;
}
