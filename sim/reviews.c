/*
 * reviews.c - TokenReview and SubjectAccessReview as the server reads and answers them
 * (reviews.h).
 *
 * The body is parsed once with review_parse_doc (the client side's strict reader) into a
 * cJSON tree that lives only inside the read function; the spec's bytes are located with
 * kube_json_member and copied for the echo. Type errors carry the text of Go's
 * json.UnmarshalTypeError inside kube-apiserver's decode error:
 *   TokenReview in version "v1" cannot be handled as a TokenReview: json: cannot unmarshal
 *   number into Go struct field TokenReviewSpec.spec.token of type string
 */
#include "sim/reviews.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cache/bug.h"
#include "cache/gotext.h"
#include "cache/sbuf.h"
#include "proxy/kube_json.h"

#define TR_KIND "TokenReview"
#define TR_GV "authentication.k8s.io/v1"
#define SAR_KIND "SubjectAccessReview"
#define SAR_GROUP "authorization.k8s.io"
#define SAR_GV SAR_GROUP "/v1"

/* One decode: which kind is read (for the error text) and where the error goes. */
struct dec {
    const char *kind;
    struct reviews_error *e;
};

static const char *json_type(const cJSON *v)
{
    if (cJSON_IsNumber(v)) {
        return "number";
    }
    if (cJSON_IsString(v)) {
        return "string";
    }
    if (cJSON_IsBool(v)) {
        return "bool";
    }
    if (cJSON_IsArray(v)) {
        return "array";
    }
    return "object";
}

static int bad_request(struct dec *d, const char *msg)
{
    kstatus_set(&d->e->st, 400, "BadRequest", "%s", msg);
    return -EINVAL;
}

/* The decode error for member <field> (a dotted path) of struct <strct>. */
static int type_error(struct dec *d, const cJSON *v, const char *strct, const char *field,
                      const char *go_type)
{
    kstatus_set(&d->e->st, 400, "BadRequest",
                "%s in version \"v1\" cannot be handled as a %s: json: cannot unmarshal %s into "
                "Go struct field %s.%s of type %s",
                d->kind, d->kind, json_type(v), strct, field, go_type);
    return -EINVAL;
}

/* The member <key> of <obj> when it is neither absent nor null. */
static const cJSON *present(const cJSON *obj, const char *key)
{
    const cJSON *m = obj != NULL ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;

    return m != NULL && !cJSON_IsNull(m) ? m : NULL;
}

/* A string member: its value, "" when absent or null. */
static int get_str(struct dec *d, const cJSON *obj, const char *key, const char *strct,
                   const char *path, const char **out)
{
    const cJSON *m = present(obj, key);
    char field[96];

    *out = "";
    if (m == NULL) {
        return 0;
    }
    if (!cJSON_IsString(m)) {
        snprintf(field, sizeof(field), "%s.%s", path, key);
        return type_error(d, m, strct, field, "string");
    }
    *out = m->valuestring;
    return 0;
}

/* A []string member (or a map's []string value): checks every element is a string or null. */
static int check_strs(struct dec *d, const cJSON *m, const char *strct, const char *field,
                      const char *go_type)
{
    const cJSON *e;

    if (!cJSON_IsArray(m)) {
        return type_error(d, m, strct, field, go_type);
    }
    cJSON_ArrayForEach(e, m)
    {
        if (!cJSON_IsString(e) && !cJSON_IsNull(e)) {
            return type_error(d, e, strct, field, "string");
        }
    }
    return 0;
}

static const char *elem_str(const cJSON *e)
{
    return cJSON_IsString(e) ? e->valuestring : "";
}

/* An object member (the spec, the attributes): NULL when absent or null. */
static int get_obj(struct dec *d, const cJSON *obj, const char *key, const char *strct,
                   const char *field, const char *go_type, const cJSON **out)
{
    const cJSON *m = present(obj, key);

    *out = NULL;
    if (m != NULL && !cJSON_IsObject(m)) {
        return type_error(d, m, strct, field, go_type);
    }
    *out = m;
    return 0;
}

/* Parses the body and copies the raw spec ("{}" when absent or null). */
static int read_doc(struct dec *d, const char *body, size_t len, cJSON **root, char **spec)
{
    size_t off = 0, vlen = 0;

    *root = review_parse_doc(body, len);
    *spec = NULL;
    if (*root == NULL) {
        return bad_request(d, len == 0 ? "couldn't get version/kind; json parse error: unexpected "
                                         "end of JSON input"
                                       : "couldn't get version/kind; json parse error: the body "
                                         "is not a single JSON object");
    }
    if (present(*root, "spec") != NULL && kube_json_member(body, len, "spec", &off, &vlen) == 0) {
        *spec = xstrndup(body + off, vlen);
    } else {
        *spec = xstrdup("{}");
    }
    return 0;
}

/* ---- TokenReview ----------------------------------------------------------------------- */

int reviews_token_read(const char *body, size_t len, struct reviews_token *out,
                       struct reviews_error *e)
{
    struct dec d = {TR_KIND, e};
    const cJSON *spec, *auds, *a;
    const char *token = "";
    cJSON *root = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    rc = read_doc(&d, body, len, &root, &out->spec);
    if (rc == 0) {
        rc = get_obj(&d, root, "spec", TR_KIND, "spec", "v1.TokenReviewSpec", &spec);
    }
    if (rc == 0) {
        rc = get_str(&d, spec, "token", "TokenReviewSpec", "spec", &token);
    }
    auds = rc == 0 ? present(spec, "audiences") : NULL;
    if (auds != NULL) {
        rc = check_strs(&d, auds, "TokenReviewSpec", "spec.audiences", "[]string");
    }
    if (rc == 0 && token[0] == '\0') {
        rc = bad_request(&d, "token is required for TokenReview in authentication");
    }
    if (rc == 0) {
        out->token = xstrdup(token);
        out->n_audiences = (size_t)cJSON_GetArraySize(auds);
        out->audiences = xcalloc(out->n_audiences + 1, sizeof(*out->audiences));
        out->n_audiences = 0;
        cJSON_ArrayForEach(a, auds)
        {
            out->audiences[out->n_audiences++] = xstrdup(elem_str(a));
        }
    }
    cJSON_Delete(root);
    return rc;
}

void reviews_token_fini(struct reviews_token *t)
{
    for (size_t i = 0; i < t->n_audiences; i++) {
        free(t->audiences[i]);
    }
    free(t->audiences);
    free(t->token);
    free(t->spec);
    memset(t, 0, sizeof(*t));
}

static void put_key(struct sbuf *sb, bool *first, const char *key)
{
    sbuf_str(sb, *first ? "\"" : ",\"");
    sbuf_str(sb, key);
    sbuf_str(sb, "\":");
    *first = false;
}

static void put_qstr(struct sbuf *sb, const char *s)
{
    gotext_json_quote(sb, s, strlen(s));
}

static void put_strs(struct sbuf *sb, char *const *v, size_t n)
{
    sbuf_str(sb, "[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            sbuf_str(sb, ",");
        }
        put_qstr(sb, v[i]);
    }
    sbuf_str(sb, "]");
}

/* authentication/v1 UserInfo, every member omitempty. */
static void put_user(struct sbuf *sb, const struct identity *id)
{
    bool first = true;

    sbuf_str(sb, "{");
    if (id->user[0] != '\0') {
        put_key(sb, &first, "username");
        put_qstr(sb, id->user);
    }
    if (id->uid[0] != '\0') {
        put_key(sb, &first, "uid");
        put_qstr(sb, id->uid);
    }
    if (id->n_groups > 0) {
        put_key(sb, &first, "groups");
        put_strs(sb, id->groups, id->n_groups);
    }
    if (id->n_extra > 0) {
        put_key(sb, &first, "extra");
        sbuf_str(sb, "{");
        for (size_t i = 0; i < id->n_extra; i++) {
            if (i > 0) {
                sbuf_str(sb, ",");
            }
            put_qstr(sb, id->extra[i].key);
            sbuf_str(sb, ":");
            put_strs(sb, id->extra[i].values, id->extra[i].n_values);
        }
        sbuf_str(sb, "}");
    }
    sbuf_str(sb, "}");
}

static void put_head(struct sbuf *sb, const char *kind, const char *gv, const char *spec)
{
    sbuf_str(sb, "{\"kind\":\"");
    sbuf_str(sb, kind);
    sbuf_str(sb, "\",\"apiVersion\":\"");
    sbuf_str(sb, gv);
    sbuf_str(sb, "\",\"metadata\":{\"creationTimestamp\":null},\"spec\":");
    sbuf_str(sb, spec);
    sbuf_str(sb, ",\"status\":{");
}

void reviews_token_answer(const struct reviews_token *t, const struct identity *id,
                          const char *error, struct sbuf *out)
{
    put_head(out, TR_KIND, TR_GV, t->spec);
    if (id != NULL) {
        sbuf_str(out, "\"authenticated\":true,\"user\":");
        put_user(out, id);
        if (t->n_audiences > 0) {
            sbuf_str(out, ",\"audiences\":");
            put_strs(out, t->audiences, t->n_audiences);
        }
    } else {
        sbuf_str(out, "\"user\":{}");
        if (error != NULL && error[0] != '\0') {
            sbuf_str(out, ",\"error\":");
            put_qstr(out, error);
        }
    }
    sbuf_str(out, "}}\n");
}

/* ---- SubjectAccessReview --------------------------------------------------------------- */

/* Which of reviews_sar.strs holds which attribute. */
enum { S_NS = 0, S_VERB, S_GROUP, S_VERSION, S_RESOURCE, S_SUB, S_NAME };

static int read_resource_attrs(struct dec *d, const cJSON *ra, struct reviews_sar *out)
{
    static const char *const keys[] = {"namespace", "verb",        "group", "version",
                                       "resource",  "subresource", "name"};
    const char *v[7];
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < 7; i++) {
        rc = get_str(d, ra, keys[i], "ResourceAttributes", "spec.resourceAttributes", &v[i]);
    }
    if (rc != 0) {
        return rc;
    }
    for (size_t i = 0; i < 7; i++) {
        out->strs[i] = xstrdup(v[i]);
    }
    out->a.is_resource = true;
    out->a.ns = out->strs[S_NS];
    out->a.verb = out->strs[S_VERB];
    out->a.group = out->strs[S_GROUP];
    out->a.version = out->strs[S_VERSION];
    out->a.resource = out->strs[S_RESOURCE];
    out->a.subresource = out->strs[S_SUB];
    out->a.name = out->strs[S_NAME];
    return 0;
}

static int read_nonresource_attrs(struct dec *d, const cJSON *nra, struct reviews_sar *out)
{
    const char *path, *verb;
    int rc = get_str(d, nra, "path", "NonResourceAttributes", "spec.nonResourceAttributes", &path);

    if (rc == 0) {
        rc = get_str(d, nra, "verb", "NonResourceAttributes", "spec.nonResourceAttributes", &verb);
    }
    if (rc != 0) {
        return rc;
    }
    out->strs[0] = xstrdup(path);
    out->strs[1] = xstrdup(verb);
    out->a.is_resource = false;
    out->a.path = out->strs[0];
    out->a.verb = out->strs[1];
    return 0;
}

/* identity.h's cap errors as a 400. */
static int cap_error(struct dec *d, int rc)
{
    return rc == 0 ? 0 : bad_request(d, "the SubjectAccessReview's user exceeds kwp's limits");
}

static int read_subject(struct dec *d, const cJSON *spec, struct reviews_sar *out)
{
    const char *user, *uid;
    const cJSON *groups, *extra, *kv, *e;
    int rc = get_str(d, spec, "user", "SubjectAccessReviewSpec", "spec", &user);

    if (rc == 0) {
        rc = get_str(d, spec, "uid", "SubjectAccessReviewSpec", "spec", &uid);
    }
    groups = rc == 0 ? present(spec, "groups") : NULL;
    if (groups != NULL) {
        rc = check_strs(d, groups, "SubjectAccessReviewSpec", "spec.groups", "[]string");
    }
    extra = rc == 0 ? present(spec, "extra") : NULL;
    if (extra != NULL && !cJSON_IsObject(extra)) {
        rc = type_error(d, extra, "SubjectAccessReviewSpec", "spec.extra",
                        "map[string]v1.ExtraValue");
    }
    cJSON_ArrayForEach(kv, extra)
    {
        if (rc == 0 && !cJSON_IsNull(kv)) {
            rc = check_strs(d, kv, "SubjectAccessReviewSpec", "spec.extra", "v1.ExtraValue");
        }
    }
    if (rc != 0) {
        return rc;
    }
    out->id = identity_new(user);
    if (out->id == NULL) {
        return cap_error(d, -ENAMETOOLONG);
    }
    rc = identity_set_uid(out->id, uid);
    cJSON_ArrayForEach(e, groups)
    {
        if (rc == 0) {
            rc = identity_add_group(out->id, elem_str(e));
        }
    }
    cJSON_ArrayForEach(kv, extra)
    {
        const cJSON *vals = cJSON_IsArray(kv) ? kv : NULL;

        if (rc == 0) {
            rc = identity_add_extra_key(out->id, kv->string);
        }
        cJSON_ArrayForEach(e, vals)
        {
            if (rc == 0) {
                rc = identity_add_extra(out->id, kv->string, elem_str(e));
            }
        }
    }
    return cap_error(d, rc);
}

/* ValidateSubjectAccessReviewSpec's field errors, as apierrors.NewInvalid reports them. */
static int invalid(struct dec *d, const cJSON *ra, const cJSON *nra, const struct reviews_sar *r)
{
    struct reviews_error *e = d->e;
    const char *field[3], *msgs[3];
    size_t n = 0;
    struct sbuf sb = {0};

    if (ra != NULL && nra != NULL) {
        /* both: <r> holds the resource attributes; %#v prints the others (strings: their
         * types were checked) */
        const cJSON *p = present(nra, "path"), *v = present(nra, "verb");
        const char *ps = cJSON_IsString(p) ? p->valuestring : "";
        const char *vs = cJSON_IsString(v) ? v->valuestring : "";
        struct sbuf m = {0};

        sbuf_str(&m, "Invalid value: authorization.NonResourceAttributes{Path:");
        gotext_quote(&m, ps, strlen(ps));
        sbuf_str(&m, ", Verb:");
        gotext_quote(&m, vs, strlen(vs));
        sbuf_str(&m, "}: cannot be specified in combination with resourceAttributes");
        snprintf(e->cause_msg[n], REVIEWS_MAX_CAUSE, "%s", m.p);
        sbuf_free(&m);
        field[n++] = "spec.nonResourceAttributes";
    }
    if (ra == NULL && nra == NULL) {
        snprintf(e->cause_msg[n], REVIEWS_MAX_CAUSE,
                 "Invalid value: \"null\": exactly one of nonResourceAttributes or "
                 "resourceAttributes must be specified");
        field[n++] = "spec.resourceAttributes";
    }
    if (r->id->user[0] == '\0' && r->id->n_groups == 0) {
        snprintf(e->cause_msg[n], REVIEWS_MAX_CAUSE,
                 "Invalid value: \"\": at least one of user or group must be specified");
        field[n++] = "spec.user";
    }
    if (n == 0) {
        return 0;
    }
    /* field.ErrorList.ToAggregate: one error alone, several as [a, b] */
    sbuf_str(&sb, SAR_KIND "." SAR_GROUP " \"\" is invalid: ");
    sbuf_str(&sb, n > 1 ? "[" : "");
    for (size_t i = 0; i < n; i++) {
        msgs[i] = e->cause_msg[i];
        sbuf_str(&sb, i > 0 ? ", " : "");
        sbuf_str(&sb, field[i]);
        sbuf_str(&sb, ": ");
        sbuf_str(&sb, msgs[i]);
    }
    sbuf_str(&sb, n > 1 ? "]" : "");
    kstatus_set(&e->st, 422, "Invalid", "%s", sb.p);
    sbuf_free(&sb);
    e->st.group = SAR_GROUP;
    e->st.kind = SAR_KIND;
    for (size_t i = 0; i < n; i++) {
        e->st.causes[i].reason = "FieldValueInvalid";
        e->st.causes[i].message = msgs[i];
        e->st.causes[i].field = field[i];
    }
    e->st.n_causes = n;
    return -EDOM;
}

int reviews_sar_read(const char *body, size_t len, struct reviews_sar *out, struct reviews_error *e)
{
    struct dec d = {SAR_KIND, e};
    const cJSON *spec = NULL, *ra = NULL, *nra = NULL;
    cJSON *root = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    rc = read_doc(&d, body, len, &root, &out->spec);
    if (rc == 0) {
        rc = get_obj(&d, root, "spec", SAR_KIND, "spec", "v1.SubjectAccessReviewSpec", &spec);
    }
    if (rc == 0) {
        rc = get_obj(&d, spec, "resourceAttributes", "SubjectAccessReviewSpec",
                     "spec.resourceAttributes", "v1.ResourceAttributes", &ra);
    }
    if (rc == 0) {
        rc = get_obj(&d, spec, "nonResourceAttributes", "SubjectAccessReviewSpec",
                     "spec.nonResourceAttributes", "v1.NonResourceAttributes", &nra);
    }
    if (rc == 0 && nra != NULL) {
        /* decoded (types checked) even when the 422 below refuses both kinds together */
        struct reviews_sar tmp = {0};

        rc = read_nonresource_attrs(&d, nra, ra != NULL ? &tmp : out);
        reviews_sar_fini(&tmp);
    }
    if (rc == 0 && ra != NULL) {
        rc = read_resource_attrs(&d, ra, out);
    }
    if (rc == 0) {
        rc = read_subject(&d, spec, out);
    }
    if (rc == 0) {
        rc = invalid(&d, ra, nra, out);
    }
    cJSON_Delete(root);
    return rc;
}

void reviews_sar_fini(struct reviews_sar *r)
{
    identity_free(r->id);
    for (size_t i = 0; i < sizeof(r->strs) / sizeof(r->strs[0]); i++) {
        free(r->strs[i]);
    }
    free(r->spec);
    memset(r, 0, sizeof(*r));
}

void reviews_sar_answer(const struct reviews_sar *r, enum review_decision d, const char *reason,
                        struct sbuf *out)
{
    put_head(out, SAR_KIND, SAR_GV, r->spec);
    sbuf_str(out, d == REVIEW_ALLOW ? "\"allowed\":true,\"reason\":"
                                    : "\"allowed\":false,"
                                      "\"reason\":");
    put_qstr(out, reason != NULL ? reason : "");
    if (d != REVIEW_ALLOW) {
        sbuf_str(out, d == REVIEW_DENY ? ",\"denied\":true" : ",\"denied\":false");
    }
    sbuf_str(out, "}}\n");
}
