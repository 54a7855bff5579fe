/*
 * reqinfo.c - RequestInfoFactory.NewRequestInfo with APIPrefixes {api, apis} and
 * GrouplessAPIPrefixes {api}, as kube-apiserver configures it (see reqinfo.h).
 *
 * The path is split as splitPath does (leading and trailing '/' trimmed, then split on '/',
 * empty segments inside kept). Only the first SEGS_MAX segments are ever looked at (prefix,
 * group, version, special verb, "namespaces", namespace, resource, name, subresource), so
 * longer paths are counted, not stored.
 */
#include "proxy/reqinfo.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/bug.h"
#include "cache/gotext.h"
#include "cache/selector.h"

#define SEGS_MAX 12

static const char empty[] = "";

/* The first value of <key> in the query (url.Values.Get), or NULL when absent. */
static const char *query_first(const struct k8s_query_kv *q, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (q[i].key != NULL && strcmp(q[i].key, key) == 0) {
            return q[i].value != NULL ? q[i].value : empty;
        }
    }
    return NULL;
}

/*
 * Whether a watch= value means false. DecodeParameters (Convert_Slice_string_To_bool) takes
 * "0" or strings.EqualFold(v, "false"), where U+017F (long s) folds to 's'; requestinfo.go's
 * fallback takes strings.ToLower(v) == "false" or "0", which for these letters is ASCII case
 * folding only (<long_s> false).
 */
static bool watch_is_false(const char *v, bool long_s)
{
    static const char word[] = "false";
    const unsigned char *p = (const unsigned char *)v;

    if (strcmp(v, "0") == 0) {
        return true;
    }
    for (size_t i = 0; word[i] != '\0'; i++) {
        if (*p != '\0' && (*p | 0x20) == word[i]) {
            p++;
        } else if (long_s && word[i] == 's' && p[0] == 0xc5 && p[1] == 0xbf) {
            p += 2;
        } else {
            return false;
        }
    }
    return *p == '\0';
}

/* strconv.ParseInt(v, 10, 64) succeeds. */
static bool int64_ok(const char *v)
{
    int64_t n;

    return gotext_parse_int64(v, strlen(v), &n) == 0;
}

/* A selector parsed as Convert_string_To_*_Selector would: NULL *out and true for "" or a
 * selector that selects everything; false on a parse error. */
static bool parse_sel(const char *v, bool fields, struct selector **out)
{
    char err[256];

    *out = NULL;
    if (v == NULL || v[0] == '\0') {
        return true;
    }
    err[0] = '\0';
    *out = fields ? selector_parse_fields(v, err, sizeof(err))
                  : selector_parse_labels(v, err, sizeof(err));
    return *out != NULL || err[0] == '\0';
}

/* path.IsValidPathSegmentName. */
static bool valid_segment_name(const char *s)
{
    return strcmp(s, ".") != 0 && strcmp(s, "..") != 0 && strpbrk(s, "/%") == NULL;
}

/*
 * The list/watch branch: the verb from watch=, and the name from an exact metadata.name
 * field requirement (fields.Selector.RequiresExactMatch: the first such term in Go's sorted
 * order), copied into <name_buf>, which has room for the fieldSelector value.
 */
static void list_or_watch(struct reqinfo *ri, const struct k8s_query_kv *q, size_t n,
                          char *name_buf)
{
    const char *watch = query_first(q, n, "watch");
    const char *to = query_first(q, n, "timeoutSeconds");
    const char *limit = query_first(q, n, "limit");
    struct selector *labels = NULL, *fields = NULL;
    bool decoded;

    /* DecodeParameters: the selectors convert, and the two ints parse */
    decoded = parse_sel(query_first(q, n, "labelSelector"), false, &labels) &&
              parse_sel(query_first(q, n, "fieldSelector"), true, &fields) &&
              (to == NULL || int64_ok(to)) && (limit == NULL || int64_ok(limit));
    selector_free(labels);
    ri->verb = watch != NULL && !watch_is_false(watch, decoded) ? "watch" : "list";
    for (size_t i = 0; decoded && i < selector_count(fields); i++) {
        const char *v = selector_value(fields, i);

        if (selector_negated(fields, i) || strcmp(selector_field(fields, i), "metadata.name")) {
            continue;
        }
        if (valid_segment_name(v)) {
            memcpy(name_buf, v, strlen(v) + 1);
            ri->name = name_buf;
        }
        break;
    }
    selector_free(fields);
}

static const char *method_verb(const char *method)
{
    static const char *const map[][2] = {
        {"POST", "create"}, {"GET", "get"},     {"HEAD", "get"},
        {"PUT", "update"},  {"PATCH", "patch"}, {"DELETE", "delete"},
    };

    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (strcmp(method, map[i][0]) == 0) {
            return map[i][1];
        }
    }
    return empty;
}

/* Splits <s> in place (see the file comment) into at most SEGS_MAX <seg>; returns the count
 * of all segments. */
static size_t split_path(char *s, char **seg)
{
    char *end = s + strlen(s);
    size_t n = 0;

    while (*s == '/') {
        s++;
    }
    while (end > s && end[-1] == '/') {
        end--;
    }
    if (end == s) {
        return 0;
    }
    *end = '\0';
    for (;;) {
        char *slash = strchr(s, '/');

        if (n < SEGS_MAX) {
            seg[n] = s;
        }
        n++;
        if (slash == NULL) {
            return n;
        }
        *slash = '\0';
        s = slash + 1;
    }
}

/* Lays out the arena: the path twice (one to keep, one to split), the lowercased method, and
 * room for a fieldSelector name. Returns the copy to split. */
static char *arena_init(struct reqinfo *ri, const char *method, const char *path, const char *fsel,
                        char **name_buf)
{
    size_t plen = strlen(path), mlen = strlen(method), flen = fsel ? strlen(fsel) : 0;
    char *p = xmalloc(2 * (plen + 1) + mlen + 1 + flen + 1);
    char *verb;

    ri->arena = p;
    memcpy(p, path, plen + 1);
    ri->path = p;
    p += plen + 1;
    memcpy(p, path, plen + 1);
    verb = p + plen + 1;
    for (size_t i = 0; i <= mlen; i++) {
        char c = method[i];

        verb[i] = c >= 'A' && c <= 'Z' ? (char)(c | 0x20) : c;
    }
    ri->verb = verb;
    *name_buf = verb + mlen + 1;
    return p;
}

int reqinfo_parse(const char *method, const char *path, const struct k8s_query_kv *q, size_t n,
                  struct reqinfo *out)
{
    char *seg[SEGS_MAX];
    char *name_buf;
    size_t total, cur = 0;

    memset(out, 0, sizeof(*out));
    out->api_prefix = out->group = out->version = out->ns = empty;
    out->resource = out->subresource = out->name = empty;
    total = split_path(arena_init(out, method, path, query_first(q, n, "fieldSelector"), &name_buf),
                       seg);
    if (total < 3 || (strcmp(seg[0], "api") != 0 && strcmp(seg[0], "apis") != 0)) {
        return 0;
    }
    out->api_prefix = seg[cur++];
    if (strcmp(out->api_prefix, "apis") == 0) {
        if (total - cur < 3) {
            return 0;
        }
        out->group = seg[cur++];
    }
    out->is_resource = true;
    out->version = seg[cur++];

    if (strcmp(seg[cur], "proxy") == 0 || strcmp(seg[cur], "watch") == 0) {
        if (total - cur < 2) {
            return -EINVAL;
        }
        out->verb = seg[cur++];
        out->verb_via_path = true;
    } else {
        out->verb = method_verb(method);
    }

    if (strcmp(seg[cur], "namespaces") == 0) {
        if (total - cur > 1) {
            out->ns = seg[cur + 1];
            if (total - cur > 2 && strcmp(seg[cur + 2], "status") != 0 &&
                strcmp(seg[cur + 2], "finalize") != 0) {
                cur += 2;
            }
        }
    }
    out->n_parts = total - cur;
    if (out->n_parts >= 3 && strcmp(out->verb, "proxy") != 0) {
        out->subresource = seg[cur + 2];
    }
    if (out->n_parts >= 2) {
        out->name = seg[cur + 1];
    }
    out->resource = seg[cur];

    if (out->name[0] == '\0' && strcmp(out->verb, "get") == 0) {
        list_or_watch(out, q, n, name_buf);
    }
    if (out->name[0] == '\0' && strcmp(out->verb, "delete") == 0) {
        out->verb = "deletecollection";
    }
    return 0;
}

void reqinfo_fini(struct reqinfo *ri)
{
    free(ri->arena);
    memset(ri, 0, sizeof(*ri));
}

void reqinfo_attrs(const struct reqinfo *ri, struct review_attrs *out)
{
    memset(out, 0, sizeof(*out));
    out->is_resource = ri->is_resource;
    out->verb = ri->verb;
    if (!ri->is_resource) {
        out->path = ri->path;
    } else {
        out->ns = ri->ns;
        out->group = ri->group;
        out->version = ri->version;
        out->resource = ri->resource;
        out->subresource = ri->subresource;
        out->name = ri->name;
    }
}
