/*
 * review.c - TokenReview and SubjectAccessReview bodies, parsers and cache keys (review.h).
 *
 * The parsers read responses as Go's encoding/json would decode them into the typed
 * structs: absent or null members are zero values, a member of the wrong type is an error
 * (the webhook client then fails, which fails closed). Where cJSON is laxer than Go, the
 * body is refused before it is parsed (body_ok: invalid UTF-8, control bytes, a \u0000 escape
 * that cJSON would cut "alice\u0000x" short at), and so are trailing bytes after the
 * document.
 */
#include "proxy/review.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cache/bug.h"
#include "cache/gotext.h"
#include "cache/sbuf.h"

#define REVIEW_KEY_ID_BUF 512 /* stack bytes for the identity part of a SAR key */

static const char *str_or_empty(const char *s)
{
    return s != NULL ? s : "";
}

/* ,"key":"value" (no comma when <first>). */
static void put_member(struct sbuf *sb, bool first, const char *key, const char *val)
{
    val = str_or_empty(val);
    sbuf_str(sb, first ? "\"" : ",\"");
    sbuf_str(sb, key);
    sbuf_str(sb, "\":");
    gotext_json_quote(sb, val, strlen(val));
}

/* ["a","b"] */
static void put_str_array(struct sbuf *sb, char *const *v, size_t n)
{
    sbuf_str(sb, "[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            sbuf_str(sb, ",");
        }
        gotext_json_quote(sb, v[i], strlen(v[i]));
    }
    sbuf_str(sb, "]");
}

/* ---- parsing helpers ------------------------------------------------------------------- */

/*
 * Whether data[0..len) could come from Go's encoder: valid UTF-8 (Go would read an invalid
 * byte as U+FFFD, cJSON keeps it), no control bytes but \t \n \r between tokens and none inside
 * strings (cJSON skips any byte up to ' ' as space and takes raw controls in strings; Go
 * refuses both), and no \u0000 escape (cJSON would end the C string there). A backslash
 * always starts a two-byte escape in valid JSON, so skipping the escaped byte keeps
 * "\\u0000" (an escaped backslash, then text) from matching.
 */
static bool body_ok(const char *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    bool in_str = false;

    for (size_t i = 0; i < len; i++) {
        unsigned char c = p[i];

        if (c >= 0x80) {
            uint32_t r;
            size_t n = gotext_decode_rune(data + i, len - i, &r);

            if (n == 1 && r == GOTEXT_RUNE_ERROR) {
                return false;
            }
            i += n - 1;
        } else if (c < 0x20) {
            if (in_str || (c != '\t' && c != '\n' && c != '\r')) {
                return false;
            }
        } else if (c == '"') {
            in_str = !in_str;
        } else if (c == '\\' && in_str && i + 1 < len) {
            if (p[i + 1] == 'u' && i + 6 <= len && memcmp(p + i + 2, "0000", 4) == 0) {
                return false;
            }
            i++;
        }
    }
    return true;
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Parses one JSON object spanning all of data[0..len), or NULL. */
static cJSON *parse_doc(const char *data, size_t len)
{
    const char *end = NULL;
    cJSON *root;

    if (data == NULL || len == 0 || len > REVIEW_MAX_BODY || !body_ok(data, len)) {
        return NULL;
    }
    root = cJSON_ParseWithLengthOpts(data, len, &end, 0);
    if (root == NULL) {
        return NULL;
    }
    while (end != NULL && end < data + len && is_ws(*end)) {
        end++;
    }
    if (end != data + len || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

cJSON *review_parse_doc(const char *data, size_t len)
{
    return parse_doc(data, len);
}

/* Member <key> of <obj> as Go decodes it into a typed field: absent or null -> *out NULL and
 * 0; present with another type than <want> -> -EPROTO. */
static int member(const cJSON *obj, const char *key, cJSON_bool (*want)(const cJSON *),
                  const cJSON **out)
{
    const cJSON *m = obj != NULL ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;

    *out = NULL;
    if (m == NULL || cJSON_IsNull(m)) {
        return 0;
    }
    if (!want(m)) {
        return -EPROTO;
    }
    *out = m;
    return 0;
}

static int member_str(const cJSON *obj, const char *key, const char **out)
{
    const cJSON *m;
    int rc = member(obj, key, cJSON_IsString, &m);

    *out = m != NULL ? m->valuestring : "";
    return rc;
}

static int member_bool(const cJSON *obj, const char *key, bool *out)
{
    const cJSON *m;
    int rc = member(obj, key, cJSON_IsBool, &m);

    *out = m != NULL && cJSON_IsTrue(m);
    return rc;
}

/* An element of a []string: a string, or null (Go leaves "" there). */
static int elem_str(const cJSON *e, const char **out)
{
    if (cJSON_IsNull(e)) {
        *out = "";
        return 0;
    }
    if (!cJSON_IsString(e)) {
        return -EPROTO;
    }
    *out = e->valuestring;
    return 0;
}

/* Maps identity.h's cap errors to review_token_parse's vocabulary. */
static int cap_rc(int rc)
{
    return rc == -ENAMETOOLONG ? -E2BIG : rc;
}

/* ---- TokenReview ----------------------------------------------------------------------- */

int review_token_request(const char *token, size_t token_len, const char *const *auds,
                         size_t n_auds, struct sbuf *out)
{
    if (token_len == 0) {
        return -EINVAL;
    }
    if (token_len > REVIEW_MAX_TOKEN || n_auds > REVIEW_MAX_AUDIENCES) {
        return -E2BIG;
    }
    sbuf_str(out, "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\","
                  "\"spec\":{\"token\":");
    gotext_json_quote(out, token, token_len);
    if (n_auds > 0) {
        sbuf_str(out, ",\"audiences\":");
        put_str_array(out, (char *const *)auds, n_auds);
    }
    sbuf_str(out, "}}");
    return 0;
}

static int parse_groups(const cJSON *user, struct identity *id)
{
    const cJSON *groups, *e;
    int rc = member(user, "groups", cJSON_IsArray, &groups);

    cJSON_ArrayForEach(e, groups)
    {
        const char *g;

        if (rc == 0) {
            rc = elem_str(e, &g);
        }
        if (rc == 0) {
            rc = cap_rc(identity_add_group(id, g));
        }
    }
    return rc;
}

static int parse_extra(const cJSON *user, struct identity *id)
{
    const cJSON *extra, *kv;
    int rc = member(user, "extra", cJSON_IsObject, &extra);

    cJSON_ArrayForEach(kv, extra)
    {
        const cJSON *vals = cJSON_IsArray(kv) ? kv : NULL;
        const cJSON *e;

        if (rc == 0 && vals == NULL && !cJSON_IsNull(kv)) {
            rc = -EPROTO;
        }
        if (rc == 0) {
            rc = cap_rc(identity_add_extra_key(id, kv->string));
        }
        cJSON_ArrayForEach(e, vals)
        {
            const char *v;

            if (rc == 0) {
                rc = elem_str(e, &v);
            }
            if (rc == 0) {
                rc = cap_rc(identity_add_extra(id, kv->string, v));
            }
        }
    }
    return rc;
}

/* status.user -> a new identity in *out. */
static int parse_user(const cJSON *status, struct identity **out)
{
    const cJSON *user;
    const char *name, *uid;
    struct identity *id = NULL;
    int rc;

    *out = NULL;
    rc = member(status, "user", cJSON_IsObject, &user);
    if (rc == 0) {
        rc = member_str(user, "username", &name);
    }
    if (rc == 0) {
        rc = member_str(user, "uid", &uid);
    }
    if (rc != 0) {
        return rc;
    }
    id = identity_new(name);
    if (id == NULL) {
        return -E2BIG;
    }
    rc = cap_rc(identity_set_uid(id, uid));
    if (rc == 0) {
        rc = parse_groups(user, id);
    }
    if (rc == 0) {
        rc = parse_extra(user, id);
    }
    if (rc != 0) {
        identity_free(id);
        return rc;
    }
    *out = id;
    return 0;
}

/* The webhook authenticator's audience rule (see review.h). */
static int audiences_ok(const cJSON *status, const char *const *auds, size_t n_auds, bool *ok)
{
    const cJSON *got, *e;
    int rc = member(status, "audiences", cJSON_IsArray, &got);

    *ok = n_auds == 0 || cJSON_GetArraySize(got) == 0;
    cJSON_ArrayForEach(e, got)
    {
        const char *a;

        if (rc == 0) {
            rc = elem_str(e, &a);
        }
        for (size_t i = 0; rc == 0 && i < n_auds; i++) {
            *ok = *ok || strcmp(a, auds[i]) == 0;
        }
    }
    return rc;
}

int review_token_parse(const char *body, size_t len, const char *const *auds, size_t n_auds,
                       struct review_token_result *out)
{
    cJSON *root = parse_doc(body, len);
    const cJSON *status;
    const char *err = "";
    bool authenticated = false, aud_ok = false;
    int rc = -EPROTO;

    memset(out, 0, sizeof(*out));
    if (root == NULL) {
        goto out;
    }
    rc = member(root, "status", cJSON_IsObject, &status);
    if (rc == 0) {
        rc = member_bool(status, "authenticated", &authenticated);
    }
    if (rc == 0) {
        rc = member_str(status, "error", &err);
    }
    if (rc == 0) {
        rc = audiences_ok(status, auds, n_auds, &aud_ok);
    }
    if (rc == 0 && authenticated && aud_ok) {
        rc = parse_user(status, &out->id);
        out->authenticated = rc == 0;
    }
out:
    out->error = xstrndup(rc == 0 ? err : "", REVIEW_MAX_TEXT);
    cJSON_Delete(root);
    return rc;
}

void review_token_result_fini(struct review_token_result *r)
{
    identity_free(r->id);
    free(r->error);
    memset(r, 0, sizeof(*r));
}

int review_token_key(const struct review_cache *c, const char *token, size_t token_len,
                     const char *const *auds, size_t n_auds, struct review_cache_key *out)
{
    struct review_cache_hash h;

    (void)review_cache_hash_begin(&h, c, "tokenreview/v1");
    review_cache_hash_bytes(&h, token, token_len);
    review_cache_hash_u64(&h, n_auds);
    for (size_t i = 0; i < n_auds; i++) {
        review_cache_hash_str(&h, auds[i]);
    }
    return review_cache_hash_end(&h, out);
}

/* ---- SubjectAccessReview --------------------------------------------------------------- */

static void put_extra(struct sbuf *sb, const struct identity *id)
{
    sbuf_str(sb, ",\"extra\":{");
    for (size_t i = 0; i < id->n_extra; i++) {
        const struct identity_extra *e = &id->extra[i];

        if (i > 0) {
            sbuf_str(sb, ",");
        }
        gotext_json_quote(sb, e->key, strlen(e->key));
        sbuf_str(sb, ":");
        put_str_array(sb, e->values, e->n_values);
    }
    sbuf_str(sb, "}");
}

void review_sar_request(const struct identity *id, const struct review_attrs *a, struct sbuf *out)
{
    sbuf_str(out, "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SubjectAccessReview\","
                  "\"spec\":{");
    if (a->is_resource) {
        sbuf_str(out, "\"resourceAttributes\":{");
        put_member(out, true, "namespace", a->ns);
        put_member(out, false, "verb", a->verb);
        put_member(out, false, "group", a->group);
        put_member(out, false, "version", a->version);
        put_member(out, false, "resource", a->resource);
        put_member(out, false, "subresource", a->subresource);
        put_member(out, false, "name", a->name);
    } else {
        sbuf_str(out, "\"nonResourceAttributes\":{");
        put_member(out, true, "path", a->path);
        put_member(out, false, "verb", a->verb);
    }
    sbuf_str(out, "}");
    if (id->user[0] != '\0') {
        put_member(out, false, "user", id->user);
    }
    if (id->n_groups > 0) {
        sbuf_str(out, ",\"groups\":");
        put_str_array(out, id->groups, id->n_groups);
    }
    if (id->n_extra > 0) {
        put_extra(out, id);
    }
    if (id->uid[0] != '\0') {
        put_member(out, false, "uid", id->uid);
    }
    sbuf_str(out, "}}");
}

int review_sar_parse(const char *body, size_t len, struct review_sar_result *out)
{
    cJSON *root = parse_doc(body, len);
    const cJSON *status;
    const char *reason = "", *eval = "";
    int rc = -EPROTO;

    memset(out, 0, sizeof(*out));
    if (root != NULL) {
        rc = member(root, "status", cJSON_IsObject, &status);
    }
    if (rc == 0) {
        rc = member_bool(status, "allowed", &out->allowed);
    }
    if (rc == 0) {
        rc = member_bool(status, "denied", &out->denied);
    }
    if (rc == 0) {
        rc = member_str(status, "reason", &reason);
    }
    if (rc == 0) {
        rc = member_str(status, "evaluationError", &eval);
    }
    if (rc != 0) {
        out->allowed = false;
        out->denied = false;
        reason = "";
        eval = "";
    }
    out->reason = xstrndup(reason, REVIEW_MAX_TEXT);
    out->evaluation_error = xstrndup(eval, REVIEW_MAX_TEXT);
    cJSON_Delete(root);
    return rc;
}

void review_sar_result_fini(struct review_sar_result *r)
{
    free(r->reason);
    free(r->evaluation_error);
    memset(r, 0, sizeof(*r));
}

int review_sar_decision(const struct review_sar_result *r, enum review_decision *d)
{
    if (r->allowed && r->denied) {
        *d = REVIEW_DENY;
        return -EPROTO;
    }
    *d = r->denied ? REVIEW_DENY : r->allowed ? REVIEW_ALLOW : REVIEW_NO_OPINION;
    return 0;
}

int review_sar_key(const struct review_cache *c, const struct identity *id,
                   const struct review_attrs *a, struct review_cache_key *out)
{
    struct review_cache_hash h;
    char small[REVIEW_KEY_ID_BUF];
    struct sbuf enc;
    const char *fields[] = {a->verb,     a->ns,          a->group, a->version,
                            a->resource, a->subresource, a->name,  a->path};

    /* a typical identity encodes into <small>; a larger one into the heap */
    sbuf_init_fixed(&enc, small, sizeof(small));
    identity_encode(id, &enc);
    if (sbuf_error(&enc) != 0) {
        sbuf_init(&enc, 0);
        identity_encode(id, &enc);
    }
    (void)review_cache_hash_begin(&h, c, "subjectaccessreview/v1");
    review_cache_hash_bytes(&h, enc.p, enc.len);
    review_cache_hash_u64(&h, a->is_resource ? 1 : 0);
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        review_cache_hash_str(&h, str_or_empty(fields[i]));
    }
    sbuf_free(&enc);
    return review_cache_hash_end(&h, out);
}

void review_sar_encode(enum review_decision d, const char *reason, struct sbuf *out)
{
    char tag = (char)('0' + (int)d);

    reason = str_or_empty(reason);
    sbuf_put(out, &tag, 1);
    sbuf_put(out, reason, strnlen(reason, REVIEW_MAX_TEXT));
}

int review_sar_decode(const void *data, size_t len, enum review_decision *d, char **reason)
{
    const char *p = data;

    *reason = NULL;
    if (len == 0 || len > REVIEW_MAX_TEXT + 1 || p[0] < '0' + REVIEW_NO_OPINION ||
        p[0] > '0' + REVIEW_DENY || memchr(p + 1, '\0', len - 1) != NULL) {
        return -EPROTO;
    }
    *d = (enum review_decision)(p[0] - '0');
    /* the cached bytes are not NUL-terminated: copy exactly len - 1 of them */
    *reason = xmalloc(len);
    memcpy(*reason, p + 1, len - 1);
    (*reason)[len - 1] = '\0';
    return 0;
}
