/*
 * negotiate.c - negotiation.NegotiateOutputMediaType and goautoneg in C (see negotiate.h):
 * the Accept header parsed and sorted as goautoneg does, each clause checked against what the
 * JSON serializer accepts (RequestScope's restrictions, or DefaultEndpointRestrictions for
 * errors), isPrettyPrint, negotiateContentEncoding's gzip token and TableOptions'
 * includeObject. Nothing here holds state: every call starts from its inputs.
 */
#include "proxy/negotiate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache/gotext.h"
#include "proxy/apires.h"
#include "proxy/printers.h"

#define NEG_MAX_CLAUSES 32 /* Accept clauses considered (the rest are ignored) */
#define META_GROUP "meta.k8s.io"

/* ---- goautoneg.ParseAccept --------------------------------------------------------------- */

struct span {
    const char *p;
    size_t n;
};

/* One clause of an Accept header as goautoneg.ParseAccept keeps it. */
struct accept_clause {
    struct span type;
    struct span subtype;
    float q;
    bool has_as; /* "as", "g", "v" present (even empty): a conversion was asked for */
    bool has_g;
    bool has_v;
    struct span as;
    struct span g;
    struct span v;
    struct span stream;
    struct span sv;
    struct span pretty;
};

static bool span_eq(struct span s, const char *lit)
{
    return s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0;
}

/* strings.Trim(s, " "): spaces only, not tabs. */
static struct span span_trim(const char *p, size_t n)
{
    while (n > 0 && p[0] == ' ') {
        p++;
        n--;
    }
    while (n > 0 && p[n - 1] == ' ') {
        n--;
    }
    return (struct span){p, n};
}

/* strconv.ParseFloat(s, 32) as goautoneg uses it: a syntax error gives 0. */
static float parse_q(const char *p, size_t n)
{
    char tmp[64];
    char *end = NULL;
    double d;

    if (n == 0 || n >= sizeof(tmp) || p[0] == ' ' || p[0] == '\t') {
        return 0.0f;
    }
    memcpy(tmp, p, n);
    tmp[n] = '\0';
    d = strtod(tmp, &end);
    if (end != tmp + n) {
        return 0.0f;
    }
    return (float)d;
}

static const char *memchr_or_end(const char *p, const char *end, char c)
{
    const char *q = memchr(p, c, (size_t)(end - p));
    return q ? q : end;
}

/* Parses one comma-separated part; false when goautoneg skips it. */
static bool accept_clause_parse(const char *p, size_t n, struct accept_clause *c)
{
    struct span part = span_trim(p, n);
    const char *end = part.p + part.n;
    const char *semi = memchr_or_end(part.p, end, ';');
    const char *slash = memchr_or_end(part.p, semi, '/');
    const char *q;

    memset(c, 0, sizeof(*c));
    c->q = 1.0f;
    c->type = span_trim(part.p, (size_t)(slash - part.p));
    if (slash == semi) {
        if (!span_eq(c->type, "*")) {
            return false;
        }
        c->subtype = (struct span){"*", 1};
    } else {
        if (memchr(slash + 1, '/', (size_t)(semi - slash - 1))) {
            return false; /* more than one '/' */
        }
        c->subtype = span_trim(slash + 1, (size_t)(semi - slash - 1));
    }
    for (q = semi; q < end;) {
        const char *ps = q + 1;
        const char *pe = memchr_or_end(ps, end, ';');
        const char *eq = memchr_or_end(ps, pe, '=');
        q = pe;
        if (eq == pe) {
            continue; /* no '=': skipped */
        }
        struct span key = span_trim(ps, (size_t)(eq - ps));
        struct span val = span_trim(eq + 1, (size_t)(pe - eq - 1));
        if (span_eq(key, "q")) {
            c->q = parse_q(eq + 1, (size_t)(pe - eq - 1)); /* untrimmed, as goautoneg */
        } else if (span_eq(key, "as")) {
            c->has_as = true;
            c->as = val;
        } else if (span_eq(key, "g")) {
            c->has_g = true;
            c->g = val;
        } else if (span_eq(key, "v")) {
            c->has_v = true;
            c->v = val;
        } else if (span_eq(key, "stream")) {
            c->stream = val;
        } else if (span_eq(key, "sv")) {
            c->sv = val;
        } else if (span_eq(key, "pretty")) {
            c->pretty = val;
        }
    }
    return true;
}

/* goautoneg's accept_slice.Less. */
static bool accept_less(const struct accept_clause *a, const struct accept_clause *b)
{
    if (a->q > b->q) {
        return true;
    }
    if (!span_eq(a->type, "*") && span_eq(b->type, "*")) {
        return true;
    }
    return !span_eq(a->subtype, "*") && span_eq(b->subtype, "*");
}

/* goautoneg.ParseAccept: parts in order, then sort.Sort (an insertion sort below 13 items,
 * which is what Go runs for any real header). Returns the number of clauses. */
static size_t accept_parse(const char *hdr, struct accept_clause *out, size_t cap)
{
    const char *p = hdr, *end = hdr + strlen(hdr);
    size_t n = 0;

    while (n < cap) {
        const char *comma = memchr_or_end(p, end, ',');
        if (accept_clause_parse(p, (size_t)(comma - p), &out[n])) {
            n++;
        }
        if (comma == end) {
            break;
        }
        p = comma + 1;
    }
    for (size_t i = 1; i < n; i++) {
        for (size_t j = i; j > 0 && accept_less(&out[j], &out[j - 1]); j--) {
            struct accept_clause t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    }
    return n;
}

/* ---- the serializer's choice (NegotiateOutputMediaType) ---------------------------------- */

/* kube-apiserver's server-side printer for <kind> (printers.go), or NULL: custom resources
 * (the CRD's additionalPrinterColumns, which kwp does not read) and unlisted built-ins. */
static const struct printer *table_printer(const struct apires_kind *kind)
{
    return kind->builtin ? printers_find(kind->group, kind->plural) : NULL;
}

/*
 * acceptMediaTypeOptions for the JSON serializer: RequestScope's restrictions, or with
 * <status> DefaultEndpointRestrictions (how errors are written: no transforms, no sv).
 * as=Table is accepted for every kind; one without a printer gets rest's default convertor
 * (out->table_default), which the proxy forwards instead (handlers_route).
 */
static bool neg_clause(const struct accept_clause *c, bool status, const struct apires_kind *kind,
                       struct negotiate *out)
{
    bool json = span_eq(c->type, "application") &&
                (span_eq(c->subtype, "json") || span_eq(c->subtype, "*"));

    if (!json && !(span_eq(c->type, "*") && span_eq(c->subtype, "*"))) {
        return false;
    }
    if (c->stream.n > 0 && !span_eq(c->stream, "watch")) {
        return false;
    }
    if (c->sv.n > 0 && (status || !span_eq(c->sv, "v1"))) {
        return false;
    }
    out->as = NEGOTIATE_AS_NONE;
    out->v1beta1 = false;
    out->table_default = false;
    out->printer = NULL;
    out->pretty = span_eq(c->pretty, "1");
    if (!c->has_as && !c->has_g && !c->has_v) {
        return true;
    }
    if (status || !span_eq(c->g, META_GROUP)) {
        return false;
    }
    if (span_eq(c->v, "v1beta1")) {
        out->v1beta1 = true;
    } else if (!span_eq(c->v, "v1")) {
        return false;
    }
    if (span_eq(c->as, "PartialObjectMetadata")) {
        out->as = NEGOTIATE_AS_POM;
        return true;
    }
    if (span_eq(c->as, "PartialObjectMetadataList")) {
        out->as = NEGOTIATE_AS_POML;
        return true;
    }
    if (span_eq(c->as, "Table")) {
        out->as = NEGOTIATE_AS_TABLE;
        out->printer = table_printer(kind);
        out->table_default = out->printer == NULL;
        if (out->table_default) {
            /* built-ins: rest's default convertor; custom resources: the CRD convertor's
             * defaulted columns (what a CRD without additionalPrinterColumns prints) */
            out->printer = kind->builtin ? printers_default() : printers_custom();
        }
        return true;
    }
    return false;
}

/* The first value of query key <key> as the server reads it (NULL if absent, "" without
 * "="). */
static const char *query_arg(const struct negotiate_in *in, const char *key)
{
    for (size_t i = 0; i < in->n_query; i++) {
        if (strcmp(in->query[i].key, key) == 0) {
            return in->query[i].value ? in->query[i].value : "";
        }
    }
    return NULL;
}

/* negotiation.isPrettyPrint: ?pretty= (strconv.ParseBool, errors false) decides when
 * non-empty, else a curl, Wget or browser User-Agent. */
static bool is_pretty_print(const char *pp, const char *ua)
{
    bool v = false;

    if (pp && pp[0]) {
        (void)gotext_parse_bool(pp, &v);
        return v;
    }
    return ua && (strncmp(ua, "curl", 4) == 0 || strncmp(ua, "Wget", 4) == 0 ||
                  strncmp(ua, "Mozilla/5.0", 11) == 0);
}

/* responsewriters.negotiateContentEncoding: a comma-split token equal to "gzip" after
 * strings.TrimSpace ("gzip;q=1" is not one). */
static bool accepts_gzip(const char *ae)
{
    const char *p, *end;

    if (!ae) {
        return false;
    }
    end = ae + strlen(ae);
    for (p = ae;;) {
        const char *comma = memchr_or_end(p, end, ',');
        const char *a = p, *b = comma;
        while (a < b && strchr(" \t\n\v\f\r", *a)) {
            a++;
        }
        while (b > a && strchr(" \t\n\v\f\r", b[-1])) {
            b--;
        }
        if (b - a == 4 && memcmp(a, "gzip", 4) == 0) {
            return true;
        }
        if (comma == end) {
            return false;
        }
        p = comma + 1;
    }
}

static enum negotiate_incl parse_incl(const char *v)
{
    if (!v || !v[0] || strcmp(v, "Metadata") == 0) {
        return NEGOTIATE_INCL_METADATA;
    }
    if (strcmp(v, "None") == 0) {
        return NEGOTIATE_INCL_NONE;
    }
    return strcmp(v, "Object") == 0 ? NEGOTIATE_INCL_OBJECT : NEGOTIATE_INCL_INVALID;
}

/*
 * Negotiates an Accept header (NULL or "" = none) for <kind>; <pretty_print> is isPrettyPrint.
 * Fills everything but gzip and incl. Returns 0, or -ENOTSUP when no clause names something
 * kwp can produce (the 406; *out still says how to write that Status).
 */
static int neg_accept(const char *accept, bool pretty_print, const struct apires_kind *kind,
                      struct negotiate *out)
{
    struct accept_clause cl[NEG_MAX_CLAUSES];
    struct negotiate tmp;
    bool found = false;
    size_t n;

    memset(out, 0, sizeof(*out));
    if (!accept || !accept[0]) {
        out->pretty = out->status_indent = pretty_print;
        return 0;
    }
    n = accept_parse(accept, cl, NEG_MAX_CLAUSES);
    for (size_t i = 0; i < n && !found; i++) {
        found = neg_clause(&cl[i], false, kind, &tmp);
    }
    if (found) {
        out->as = tmp.as;
        out->v1beta1 = tmp.v1beta1;
        out->table_default = tmp.table_default;
        out->printer = tmp.printer;
        out->pretty = tmp.pretty || pretty_print;
    }
    out->status_indent = true; /* WriteRawJSON unless a plain JSON clause is acceptable */
    for (size_t i = 0; i < n; i++) {
        if (neg_clause(&cl[i], true, kind, &tmp)) {
            out->status_indent = tmp.pretty || pretty_print;
            break;
        }
    }
    return found ? 0 : -ENOTSUP;
}

int negotiate_request(const struct negotiate_in *in, const struct apires_kind *kind,
                      struct negotiate *out)
{
    bool pretty_print = is_pretty_print(query_arg(in, "pretty"), in->user_agent);
    int rc = neg_accept(in->accept, pretty_print, kind, out);

    out->gzip = accepts_gzip(in->accept_encoding);
    out->incl = parse_incl(query_arg(in, "includeObject"));
    return rc;
}
