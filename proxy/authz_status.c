/*
 * authz_status.c - 401/403 Status bodies and the plain-text 500 (see authz_status.h).
 * Texts are assembled in an sbuf, then copied into the kstatus or the caller's buffer.
 */
#include "proxy/authz_status.h"

#include <string.h>

#include "cache/gotext.h"
#include "cache/sbuf.h"

static const char *str_or_empty(const char *s)
{
    return s != NULL ? s : "";
}

/* Appends strconv.Quote(s). */
static void put_goquote(struct sbuf *sb, const char *s)
{
    gotext_quote(sb, s, strlen(s));
}

/* Appends s[0..n) through responsewriters' sanitizer (strings.NewReplacer(`&`, "&amp;",
 * `<`, "&lt;", `>`, "&gt;")). */
static void put_sanitized(struct sbuf *sb, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '&':
            sbuf_str(sb, "&amp;");
            break;
        case '<':
            sbuf_str(sb, "&lt;");
            break;
        case '>':
            sbuf_str(sb, "&gt;");
            break;
        default:
            sbuf_put(sb, s + i, 1);
        }
    }
}

/* responsewriters.forbiddenMessage. */
static void forbidden_sentence(struct sbuf *sb, const char *user, const struct review_attrs *a)
{
    const char *ns = str_or_empty(a->ns);
    const char *sub = str_or_empty(a->subresource);

    sbuf_str(sb, "User ");
    put_goquote(sb, str_or_empty(user));
    sbuf_str(sb, " cannot ");
    sbuf_str(sb, str_or_empty(a->verb));
    if (!a->is_resource) {
        sbuf_str(sb, " path ");
        put_goquote(sb, str_or_empty(a->path));
        return;
    }
    sbuf_str(sb, " resource ");
    if (sub[0] != '\0') {
        struct sbuf res = {0};

        sbuf_str(&res, str_or_empty(a->resource));
        sbuf_str(&res, "/");
        sbuf_str(&res, sub);
        put_goquote(sb, res.p);
        sbuf_free(&res);
    } else {
        put_goquote(sb, str_or_empty(a->resource));
    }
    sbuf_str(sb, " in API group ");
    put_goquote(sb, str_or_empty(a->group));
    if (ns[0] != '\0') {
        sbuf_str(sb, " in the namespace ");
        put_goquote(sb, ns);
    } else {
        sbuf_str(sb, " at the cluster scope");
    }
}

void authz_status_unauthorized(struct kstatus *st)
{
    kstatus_set(st, 401, "Unauthorized", "Unauthorized");
}

void authz_status_forbidden(struct kstatus *st, const char *user, const struct review_attrs *a,
                            const char *reason)
{
    const char *group = a->is_resource ? str_or_empty(a->group) : "";
    const char *resource = a->is_resource ? str_or_empty(a->resource) : "";
    const char *name = a->is_resource ? str_or_empty(a->name) : "";
    struct sbuf sentence = {0}, msg = {0};

    /* apierrors.NewForbidden(GroupResource{group, resource}, name, err) */
    if (group[0] != '\0' || resource[0] != '\0') {
        sbuf_str(&msg, resource);
        if (group[0] != '\0') {
            sbuf_str(&msg, ".");
            sbuf_str(&msg, group);
        }
        if (name[0] != '\0') {
            sbuf_str(&msg, " ");
            put_goquote(&msg, name);
        }
        sbuf_str(&msg, " is ");
    }
    sbuf_str(&msg, "forbidden: ");
    forbidden_sentence(&sentence, user, a);
    put_sanitized(&msg, sentence.p, sentence.len);
    if (reason != NULL && reason[0] != '\0') {
        sbuf_str(&msg, ": ");
        sbuf_str(&msg, reason);
    }
    kstatus_set(st, 403, "Forbidden", "%s", msg.p);
    sbuf_free(&sentence);
    sbuf_free(&msg);
    /* StatusDetails{Name, Group, Kind}: all omitempty, so a non-resource answer has {} */
    st->name = name[0] != '\0' ? a->name : NULL;
    st->group = group[0] != '\0' ? a->group : NULL;
    st->kind = resource[0] != '\0' ? a->resource : "";
}

size_t authz_status_internal_error(const char *request_uri, const char *err, char *buf, size_t cap)
{
    struct sbuf text = {0}, body = {0};
    size_t len;

    sbuf_str(&text, "Internal Server Error: ");
    put_goquote(&text, str_or_empty(request_uri));
    sbuf_str(&text, ": ");
    sbuf_str(&text, str_or_empty(err));
    put_sanitized(&body, text.p, text.len);
    sbuf_str(&body, "\n");
    len = body.len;
    if (cap > 0) {
        size_t n = len < cap - 1 ? len : cap - 1;

        memcpy(buf, body.p, n);
        buf[n] = '\0';
    }
    sbuf_free(&text);
    sbuf_free(&body);
    return len;
}
