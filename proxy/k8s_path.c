/*
 * k8s_path.c - request paths and ListOptions, decoded the way kube-apiserver decodes them.
 *
 * Paths follow the apiserver's RequestInfoFactory and go-restful CurlyRouter routes:
 * /api/{v}/... and /apis/{g}/{v}/..., the namespaces special case and the legacy /watch/
 * prefix. Queries follow get.go ListResource: DecodeParameters (url.Values -> v1 -> internal),
 * SetListOptionsDefaults, ValidateListOptions, the caller's field-label hook, then the
 * storage-level checks (storage.ValidateListOptions for LIST, Cacher.Watch's rv parse for
 * WATCH). Every text produced here is the apiserver's, character for character; the Go
 * source each one comes from is named next to it.
 *
 * Pure functions of their arguments: no globals, no locks, any thread.
 */
#include "proxy/k8s_path.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/bug.h"
#include "cache/gotext.h"
#include "cache/rv.h"
#include "cache/sbuf.h"
#include "cache/selector.h"
#include "proxy/continue_token.h"

/* Size of a Status message; every text built here is cut to fit it. */
#define STATUS_MSG_CAP sizeof(((struct kstatus *)0)->message)

/* Appends strconv.Quote(s) (what %q prints) for a C string. */
static void sb_quote(struct sbuf *sb, const char *s)
{
    gotext_quote(sb, s, strlen(s));
}

/* ---- paths --------------------------------------------------------------------------- */

/* Longest resource path we interpret: apis g v watch namespaces ns res name sub. Anything
 * after the subresource (pods/p/proxy/a/b) is looked at only for empty segments. */
#define PATH_MAX_SEGS 9

struct seg {
    const char *p;
    size_t len;
};

static bool seg_is(const struct seg *s, const char *lit)
{
    return s->len == strlen(lit) && memcmp(s->p, lit, s->len) == 0;
}

/* Copies a segment into a fixed field; -EINVAL when it does not fit with its NUL, or when it
 * is "." or ".." (path.IsValidPathSegmentName rejects them; a proxy must not pass them on). */
static int seg_copy(const struct seg *s, char *dst, size_t cap)
{
    if (s->len >= cap || seg_is(s, ".") || seg_is(s, "..")) {
        return -EINVAL;
    }
    memcpy(dst, s->p, s->len);
    dst[s->len] = '\0';
    return 0;
}

/*
 * Splits <path> (leading '/', trailing slashes already ignored) into at most PATH_MAX_SEGS
 * segments; *more is set when there are further ones. Returns -EINVAL on an empty segment
 * anywhere ("//").
 */
static int path_split(const char *path, size_t len, struct seg *segs, size_t *n, bool *more)
{
    size_t i = 1;

    *n = 0;
    *more = false;
    while (i <= len) {
        size_t j = i;

        while (j < len && path[j] != '/') {
            j++;
        }
        if (j == i) {
            return -EINVAL;
        }
        if (*n < PATH_MAX_SEGS) {
            segs[*n].p = path + i;
            segs[*n].len = j - i;
            (*n)++;
        } else {
            *more = true;
        }
        i = j + 1;
    }
    return 0;
}

/* Fills resource [name [subresource]] from rest[0..n); n >= 1. */
static int path_fill_object(const struct seg *rest, size_t n, struct k8s_path *out)
{
    int rc = seg_copy(&rest[0], out->resource, sizeof(out->resource));

    if (rc == 0 && n >= 2) {
        rc = seg_copy(&rest[1], out->name, sizeof(out->name));
    }
    if (rc == 0 && n >= 3) {
        rc = seg_copy(&rest[2], out->subresource, sizeof(out->subresource));
    }
    return rc;
}

int k8s_path_parse(const char *path, struct k8s_path *out)
{
    struct seg segs[PATH_MAX_SEGS];
    const struct seg *rest;
    size_t len, n = 0, nrest;
    bool more = false;
    int rc;

    memset(out, 0, sizeof(*out));
    if (path == NULL || path[0] != '/') {
        return -ENOENT;
    }
    len = strlen(path);
    while (len > 1 && path[len - 1] == '/') {
        len--; /* go-restful >= 3.11 trims trailing slashes before routing */
    }
    /* Classify before validating: a malformed non-resource path is simply not ours. */
    if (len >= 4 && memcmp(path, "/api", 4) == 0 && (len == 4 || path[4] == '/')) {
        rc = path_split(path, len, segs, &n, &more);
        if (rc == 0 && n < 3) {
            return -ENOENT; /* /api, /api/v1: discovery */
        }
        if (rc == 0) {
            rc = seg_copy(&segs[1], out->version, sizeof(out->version));
        }
        rest = segs + 2;
        nrest = n - 2;
    } else if (len >= 5 && memcmp(path, "/apis", 5) == 0 && (len == 5 || path[5] == '/')) {
        rc = path_split(path, len, segs, &n, &more);
        if (rc == 0 && n < 4) {
            return -ENOENT; /* /apis, /apis/apps, /apis/apps/v1 */
        }
        if (rc == 0) {
            rc = seg_copy(&segs[1], out->group, sizeof(out->group));
        }
        if (rc == 0) {
            rc = seg_copy(&segs[2], out->version, sizeof(out->version));
        }
        rest = segs + 3;
        nrest = n - 3;
    } else {
        return -ENOENT;
    }
    if (rc != 0) {
        goto out;
    }

    if (seg_is(&rest[0], "watch")) {
        out->legacy_watch = true;
        rest++;
        nrest--;
        if (nrest == 0) {
            rc = -ENOENT;
            goto out;
        }
    }

    if (seg_is(&rest[0], "namespaces") &&
        (nrest <= 2 || seg_is(&rest[2], "status") || seg_is(&rest[2], "finalize"))) {
        /* The Namespace object itself (RequestInfoFactory: namespaceSubresources). */
        if (out->legacy_watch && (nrest > 2 || more)) {
            rc = -ENOENT;
            goto out;
        }
        rc = path_fill_object(rest, nrest, out);
    } else if (seg_is(&rest[0], "namespaces")) {
        rc = seg_copy(&rest[1], out->ns, sizeof(out->ns));
        if (rc == 0 && out->legacy_watch && (nrest > 4 || more)) {
            rc = -ENOENT; /* watch routes stop at {name} */
        }
        if (rc == 0) {
            rc = path_fill_object(rest + 2, nrest - 2, out);
        }
    } else {
        if (out->legacy_watch && (nrest > 2 || more)) {
            rc = -ENOENT;
            goto out;
        }
        rc = path_fill_object(rest, nrest, out);
    }

out:
    if (rc != 0) {
        memset(out, 0, sizeof(*out));
    }
    return rc;
}

/* ---- query values -------------------------------------------------------------------- */

/* url.Values.Get: the first value of <key>; *found tells absent from "". */
static const char *query_get(const struct k8s_query_kv *q, size_t n, const char *key, bool *found)
{
    for (size_t i = 0; i < n; i++) {
        if (q[i].key != NULL && strcmp(q[i].key, key) == 0) {
            *found = true;
            return q[i].value != NULL ? q[i].value : "";
        }
    }
    *found = false;
    return "";
}

/*
 * runtime.Convert_Slice_string_To_bool: "0" or strings.EqualFold(v, "false") is false, any
 * other value is true. EqualFold's Unicode folding only matters for 's', which U+017F (long
 * s, "\xc5\xbf") also folds to.
 */
static bool query_bool(const char *v)
{
    static const char word[] = "false";
    const char *p = v;

    if (strcmp(v, "0") == 0) {
        return false;
    }
    for (size_t i = 0; word[i] != '\0'; i++) {
        if ((*p | 0x20) == word[i] && *p != '\0') {
            p++;
        } else if (word[i] == 's' && (unsigned char)p[0] == 0xc5 && (unsigned char)p[1] == 0xbf) {
            p += 2;
        } else {
            return true;
        }
    }
    return *p != '\0';
}

/* Decodes an int64 parameter; on error fills the 400 DecodeParameters answers with:
 * NewBadRequest(err.Error()) of a *strconv.NumError (verified against #101350's capture). */
static int decode_int(const char *v, int64_t *out, struct kstatus *st)
{
    char text[STATUS_MSG_CAP];
    struct sbuf sb;
    int rc = gotext_parse_int64(v, strlen(v), out);

    if (rc == 0) {
        return 0;
    }
    sbuf_init_fixed(&sb, text, sizeof(text));
    sbuf_str(&sb, "strconv.ParseInt: parsing ");
    sb_quote(&sb, v);
    sbuf_str(&sb, rc == -ERANGE ? ": value out of range" : ": invalid syntax");
    kstatus_set(st, 400, "BadRequest", "%s", text);
    return -EINVAL;
}

/* ---- 422 Invalid (errors.NewInvalid over a field.ErrorList) ------------------------- */

#define FIELD_ERRS_MAX 5

/* One field.Error: Error() is "<field>: <body>", the cause message is <body> (ErrorBody). */
struct field_err {
    const char *field;
    const char *type; /* cause reason: field.ErrorType */
    char body[512];
};

struct field_errs {
    struct field_err e[FIELD_ERRS_MAX];
    size_t n;
};

/* Appends an error of <type> on <field>; <sb> is set up to write its body. */
static void err_add(struct field_errs *fe, const char *field, const char *type, struct sbuf *sb)
{
    struct field_err *e = &fe->e[fe->n++];

    BUG_ON(fe->n > FIELD_ERRS_MAX);
    e->field = field;
    e->type = type;
    sbuf_init_fixed(sb, e->body, sizeof(e->body));
}

/* field.Forbidden(path, detail): body "Forbidden: <detail>" (the value is never printed). */
static void err_forbidden(struct field_errs *fe, const char *field, const char *detail)
{
    struct sbuf sb;

    err_add(fe, field, "FieldValueForbidden", &sb);
    sbuf_str(&sb, "Forbidden: ");
    sbuf_str(&sb, detail);
}

/* field.NotSupported(path, value, valid): body `Unsupported value: <%q value>: supported
 * values: "<a>", "<b>"` (each valid value through strconv.Quote, joined by ", "). */
static void err_not_supported(struct field_errs *fe, const char *field, const char *value,
                              const char *const *valid, size_t nvalid)
{
    struct sbuf sb;

    err_add(fe, field, "FieldValueNotSupported", &sb);
    sbuf_str(&sb, "Unsupported value: ");
    sb_quote(&sb, value);
    sbuf_str(&sb, ": supported values: ");
    for (size_t i = 0; i < nvalid; i++) {
        if (i > 0) {
            sbuf_str(&sb, ", ");
        }
        sb_quote(&sb, valid[i]);
    }
}

/*
 * errors.NewInvalid(GroupKind{"meta.k8s.io","ListOptions"}, "", errs): message
 * `ListOptions.meta.k8s.io "" is invalid: <aggregate>` where the aggregate is the one error or
 * "[e1, e2]"; details group/kind and one cause per error. The errors we produce are always
 * distinct, so ToAggregate's de-duplication never applies. Cause messages are stored in
 * st->message after the main message's NUL (see k8s_path.h).
 */
static int fail_invalid(const struct field_errs *fe, struct kstatus *st)
{
    char text[STATUS_MSG_CAP];
    struct sbuf sb;
    size_t off;

    sbuf_init_fixed(&sb, text, sizeof(text));
    sbuf_str(&sb, "ListOptions.meta.k8s.io \"\" is invalid: ");
    if (fe->n > 1) {
        sbuf_putc(&sb, '[');
    }
    for (size_t i = 0; i < fe->n; i++) {
        if (i > 0) {
            sbuf_str(&sb, ", ");
        }
        sbuf_str(&sb, fe->e[i].field);
        sbuf_str(&sb, ": ");
        sbuf_str(&sb, fe->e[i].body);
    }
    if (fe->n > 1) {
        sbuf_putc(&sb, ']');
    }
    kstatus_set(st, 422, "Invalid", "%s", text);
    st->group = "meta.k8s.io";
    st->kind = "ListOptions";
    st->n_causes = 0;
    off = strlen(st->message) + 1;
    for (size_t i = 0; i < fe->n && i < KSTATUS_MAX_CAUSES; i++) {
        struct kstatus_cause *c = &st->causes[st->n_causes++];
        size_t len = strlen(fe->e[i].body);

        c->reason = fe->e[i].type;
        c->field = fe->e[i].field;
        if (off >= sizeof(st->message)) {
            c->message = ""; /* no room left: an empty message beats a dangling one */
            continue;
        }
        if (len > sizeof(st->message) - off - 1) {
            len = sizeof(st->message) - off - 1;
        }
        memcpy(st->message + off, fe->e[i].body, len);
        st->message[off + len] = '\0';
        c->message = st->message + off;
        off += len + 1;
    }
    return -EINVAL;
}

/* ---- ListOptions --------------------------------------------------------------------- */

/* The raw query, after DecodeParameters' url.Values -> v1.ListOptions step. */
struct raw_opts {
    bool watch;      /* opts.Watch (the query only, not the legacy prefix) */
    const char *rvm; /* "" = unset */
    bool has_sie;    /* sendInitialEvents present (the *bool is non-nil) */
    bool sie;
};

/* Step 1: url.Values -> v1.ListOptions (zz_generated.conversion.go field order: labelSelector,
 * fieldSelector, watch, allowWatchBookmarks, resourceVersion, resourceVersionMatch,
 * timeoutSeconds, limit, continue, sendInitialEvents; only the two ints can fail). */
static int decode_query(const struct k8s_query_kv *q, size_t n, struct k8s_list_opts *o,
                        struct raw_opts *raw, struct kstatus *st)
{
    const char *v;
    bool found;

    v = query_get(q, n, "labelSelector", &found);
    o->label_selector = v[0] != '\0' ? v : NULL;
    v = query_get(q, n, "fieldSelector", &found);
    o->field_selector = v[0] != '\0' ? v : NULL;
    v = query_get(q, n, "watch", &found);
    raw->watch = found && query_bool(v);
    v = query_get(q, n, "allowWatchBookmarks", &found);
    o->allow_bookmarks = found && query_bool(v);
    o->rv_str = query_get(q, n, "resourceVersion", &o->has_rv);
    raw->rvm = query_get(q, n, "resourceVersionMatch", &found);
    v = query_get(q, n, "timeoutSeconds", &found);
    if (found && decode_int(v, &o->timeout_seconds, st) != 0) {
        return -EINVAL;
    }
    v = query_get(q, n, "limit", &found);
    if (found && decode_int(v, &o->limit, st) != 0) {
        return -EINVAL;
    }
    v = query_get(q, n, "continue", &found);
    o->continue_tok = v[0] != '\0' ? v : NULL;
    v = query_get(q, n, "sendInitialEvents", &raw->has_sie);
    raw->sie = raw->has_sie && query_bool(v);

    /* Not a ListOptions field: isPrettyPrint reads it with strconv.ParseBool, errors = false. */
    v = query_get(q, n, "pretty", &found);
    if (v[0] != '\0') {
        bool pretty = false;

        (void)gotext_parse_bool(v, &pretty);
        o->pretty = pretty ? 1 : 0;
    }
    return 0;
}

/* Step 1 continued: v1 -> internal converts labelSelector, then fieldSelector
 * (Convert_string_To_labels_Selector / _fields_Selector return the parser's error as is).
 * On success the field selector is handed to the caller (NULL = everything). */
static int decode_selectors(const struct k8s_list_opts *o, struct selector **fields,
                            struct kstatus *st)
{
    char err[STATUS_MSG_CAP];
    struct selector *sel;

    err[0] = '\0';
    sel = selector_parse_labels(o->label_selector, err, sizeof(err));
    if (sel == NULL && err[0] != '\0') {
        kstatus_set(st, 400, "BadRequest", "%s", err);
        return -EINVAL;
    }
    selector_free(sel);

    err[0] = '\0';
    sel = selector_parse_fields(o->field_selector, err, sizeof(err));
    if (sel == NULL && err[0] != '\0') {
        kstatus_set(st, 400, "BadRequest", "%s", err);
        return -EINVAL;
    }
    *fields = sel;
    return 0;
}

/* Step 3: validation.ValidateListOptions(opts, WatchList enabled), watch or list rules. */
static int validate(const struct k8s_list_opts *o, const struct raw_opts *raw, struct kstatus *st)
{
    static const char *const list_rvm[] = {"Exact", "NotOlderThan", ""};
    static const char *const watch_rvm[] = {"NotOlderThan"};
    struct field_errs fe;
    const char *rvm = raw->rvm;
    bool has_cont = o->continue_tok != NULL;

    fe.n = 0;
    if (raw->watch) {
        /* validateWatchOptions; the WatchList gate is on, so its second check never fires. */
        if (raw->has_sie && strcmp(rvm, "NotOlderThan") != 0) {
            err_forbidden(&fe, "resourceVersionMatch",
                          "sendInitialEvents requires setting resourceVersionMatch to "
                          "NotOlderThan");
        }
        if (rvm[0] != '\0') {
            if (!raw->has_sie) {
                err_forbidden(&fe, "resourceVersionMatch",
                              "resourceVersionMatch is forbidden for watch unless "
                              "sendInitialEvents is provided");
            }
            if (strcmp(rvm, "NotOlderThan") != 0) {
                err_not_supported(&fe, "resourceVersionMatch", rvm, watch_rvm, 1);
            }
            if (has_cont) {
                err_forbidden(&fe, "resourceVersionMatch",
                              "resourceVersionMatch is forbidden when continue is provided");
            }
        }
    } else {
        if (rvm[0] != '\0') {
            if (o->rv_str[0] == '\0') {
                err_forbidden(&fe, "resourceVersionMatch",
                              "resourceVersionMatch is forbidden unless resourceVersion is "
                              "provided");
            }
            if (has_cont) {
                err_forbidden(&fe, "resourceVersionMatch",
                              "resourceVersionMatch is forbidden when continue is provided");
            }
            if (strcmp(rvm, "Exact") != 0 && strcmp(rvm, "NotOlderThan") != 0) {
                err_not_supported(&fe, "resourceVersionMatch", rvm, list_rvm, 3);
            }
            if (strcmp(rvm, "Exact") == 0 && strcmp(o->rv_str, "0") == 0) {
                err_forbidden(&fe, "resourceVersionMatch",
                              "resourceVersionMatch \"exact\" is forbidden for resourceVersion "
                              "\"0\"");
            }
        }
        if (raw->has_sie) {
            err_forbidden(&fe, "sendInitialEvents", "sendInitialEvents is forbidden for list");
        }
    }
    return fe.n > 0 ? fail_invalid(&fe, st) : 0;
}

/* The versioner's InvalidError text: field.Invalid("resourceVersion", rv, <ParseUint error>). */
static void rv_invalid_text(const char *rv, int err, struct sbuf *sb)
{
    char detail[STATUS_MSG_CAP];

    rv_parse_error(rv, err, detail, sizeof(detail));
    sbuf_str(sb, "resourceVersion: Invalid value: ");
    sb_quote(sb, rv);
    sbuf_str(sb, ": ");
    sbuf_str(sb, detail);
}

/* Step 5 for WATCH: Cacher.Watch returns ParseResourceVersion's error unwrapped, which
 * ErrorToAPIStatus turns into a 500 with no reason (SEMANTICS 2.1; issues #113939, #139485). */
static int storage_watch(struct k8s_list_opts *o, struct kstatus *st)
{
    char text[STATUS_MSG_CAP];
    struct sbuf sb;
    int err = rv_parse(o->rv_str, &o->rv);

    if (err == 0) {
        o->rv_ok = true;
        return 0;
    }
    o->rv = 0;
    sbuf_init_fixed(&sb, text, sizeof(text));
    rv_invalid_text(o->rv_str, err, &sb);
    kstatus_set(st, 500, NULL, "%s", text);
    return -EINVAL;
}

/* Step 5 for LIST: storage.ValidateListOptions. A continue token is decoded first; with one,
 * resourceVersion may only be "" or "0" and is not parsed at all. */
static int storage_list(struct k8s_list_opts *o, struct kstatus *st)
{
    char text[STATUS_MSG_CAP];
    struct sbuf sb;
    int err = rv_parse(o->rv_str, &o->rv);

    o->rv_ok = err == 0;
    if (err != 0) {
        o->rv = 0;
    }
    if (o->continue_tok != NULL) {
        size_t cap = strlen(o->continue_tok) + 1; /* the start key is shorter than its base64 */
        char *start = xmalloc(cap);
        int64_t crv = 0;
        int rc;

        text[0] = '\0';
        rc = continue_token_decode(o->continue_tok, &crv, start, cap, text, sizeof(text));
        free(start);
        if (rc != 0) {
            kstatus_set(st, 400, "BadRequest", "invalid continue token: %s", text);
            return -EINVAL;
        }
        if (o->rv_str[0] != '\0' && strcmp(o->rv_str, "0") != 0) {
            kstatus_set(st, 400, "BadRequest",
                        "specifying resource version is not allowed when using continue");
            return -EINVAL;
        }
        return 0;
    }
    if (err != 0) {
        sbuf_init_fixed(&sb, text, sizeof(text));
        sbuf_str(&sb, "invalid resource version: ");
        rv_invalid_text(o->rv_str, err, &sb);
        kstatus_set(st, 400, "BadRequest", "%s", text);
        return -EINVAL;
    }
    return 0;
}

int k8s_list_opts_parse_ex(const struct k8s_query_kv *q, size_t n, bool legacy_watch,
                           k8s_fields_check_fn *check, void *check_ctx, struct k8s_list_opts *o,
                           struct kstatus *st)
{
    struct selector *fields = NULL;
    struct raw_opts raw;
    int rc;

    memset(o, 0, sizeof(*o));
    memset(st, 0, sizeof(*st));
    memset(&raw, 0, sizeof(raw));
    o->rv_str = "";
    o->send_initial_events = -1;
    o->pretty = -1;

    rc = decode_query(q, n, o, &raw, st);
    if (rc == 0) {
        rc = decode_selectors(o, &fields, st);
    }
    if (rc != 0) {
        goto out;
    }

    /* Step 2: SetListOptionsDefaults with the WatchList gate on (defaults.go). */
    if (raw.watch && !raw.has_sie && raw.rvm[0] == '\0' &&
        (o->rv_str[0] == '\0' || strcmp(o->rv_str, "0") == 0)) {
        raw.has_sie = true;
        raw.sie = true;
        raw.rvm = "NotOlderThan";
        o->send_initial_defaulted = true;
    }

    rc = validate(o, &raw, st);
    if (rc == 0 && check != NULL) {
        rc = check(check_ctx, fields, st);
    }
    if (rc != 0) {
        goto out;
    }

    o->watch = raw.watch || legacy_watch;
    o->send_initial_events = raw.has_sie ? (raw.sie ? 1 : 0) : -1;
    if (strcmp(raw.rvm, "Exact") == 0) {
        o->rvm = RVM_EXACT;
    } else if (strcmp(raw.rvm, "NotOlderThan") == 0) {
        o->rvm = RVM_NOT_OLDER_THAN;
    }
    rc = o->watch ? storage_watch(o, st) : storage_list(o, st);

out:
    selector_free(fields);
    return rc;
}

int k8s_list_opts_parse(const struct k8s_query_kv *q, size_t n, bool legacy_watch,
                        struct k8s_list_opts *o, struct kstatus *st)
{
    return k8s_list_opts_parse_ex(q, n, legacy_watch, NULL, NULL, o, st);
}

/* The value of hex digit <c>, or -1. */
static int hex_val(char c)
{
    char lower = (char)(c | 0x20);

    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    return lower >= 'a' && lower <= 'f' ? lower - 'a' + 10 : -1;
}

/* Go's url.QueryUnescape on s[0..len), in place (the result is never longer); NUL-terminates.
 * False on a '%' not followed by two hex digits. */
static bool query_unescape(char *s, size_t len)
{
    size_t r = 0, w = 0;

    for (size_t i = 0; i < len; i++) {
        if (s[i] == '%' && (i + 2 >= len || hex_val(s[i + 1]) < 0 || hex_val(s[i + 2]) < 0)) {
            return false;
        }
    }
    while (r < len) {
        char c = s[r];
        if (c == '%') {
            int v = hex_val(s[r + 1]) * 16 + hex_val(s[r + 2]);
            if (v == 0) {
                memmove(s + w, s + r, 3); /* "%00" kept as is: see k8s_query_parse */
                w += 3;
            } else {
                s[w++] = (char)v;
            }
            r += 3;
        } else {
            s[w++] = c == '+' ? ' ' : c;
            r++;
        }
    }
    s[w] = '\0';
    return true;
}

size_t k8s_query_parse(char *raw, k8s_query_pair_fn *fn, void *ctx)
{
    size_t kept = 0;
    char *p = raw;

    while (*p != '\0') {
        size_t plen = strcspn(p, "&");
        char *next = p[plen] == '&' ? p + plen + 1 : p + plen;
        char *eq = memchr(p, '=', plen);
        size_t klen = eq ? (size_t)(eq - p) : plen;
        char *val = eq ? eq + 1 : p + plen;
        size_t vlen = eq ? plen - klen - 1 : 0;

        if (plen > 0 && memchr(p, ';', plen) == NULL && query_unescape(p, klen) &&
            (!eq || query_unescape(val, vlen))) {
            kept++;
            if (!fn(ctx, p, eq ? val : NULL)) {
                break;
            }
        }
        p = next;
    }
    return kept;
}
