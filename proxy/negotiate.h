/*
 * negotiate.h - content negotiation as kube-apiserver does it (SEMANTICS 8): the Accept header
 * picks JSON and at most one transform (meta.k8s.io Table, PartialObjectMetadata[List]),
 * ?pretty= or the User-Agent picks indentation, Accept-Encoding offers gzip, and
 * ?includeObject= says what a Table row carries.
 *
 * A pure function of those strings and the kind: no request, no I/O, no locks; any thread.
 * It may include the kind's description (apires.h), the query pairs (k8s_path.h) and the
 * Table printers (printers.h), nothing that serves or caches.
 */
#ifndef KWP_PROXY_NEGOTIATE_H
#define KWP_PROXY_NEGOTIATE_H

#include <stdbool.h>
#include <stddef.h>

#include "proxy/k8s_path.h"

struct apires_kind;
struct printer;

/* The transform a request negotiated (targetEncodingForTransform). */
enum negotiate_as {
    NEGOTIATE_AS_NONE = 0,
    NEGOTIATE_AS_TABLE,
    NEGOTIATE_AS_POM,  /* PartialObjectMetadata */
    NEGOTIATE_AS_POML, /* PartialObjectMetadataList */
};

/* Table rows' "object" (TableOptions.includeObject). */
enum negotiate_incl {
    NEGOTIATE_INCL_METADATA = 0,
    NEGOTIATE_INCL_NONE,
    NEGOTIATE_INCL_OBJECT,
    NEGOTIATE_INCL_INVALID, /* a 400 once the object is at hand (optionsForTransform) */
};

/* What one request negotiated. */
struct negotiate {
    enum negotiate_as as;
    bool v1beta1;             /* the transform's version is meta.k8s.io/v1beta1 (else v1) */
    bool table_default;       /* Table without a kube printer kwp knows (the proxy forwards it) */
    bool pretty;              /* success bodies indented (never watches) */
    bool status_indent;       /* Status bodies indented: pretty, or WriteRawJSON when no plain JSON
                                 clause is acceptable for an error */
    bool gzip;                /* Accept-Encoding carries the exact token gzip */
    enum negotiate_incl incl; /* ?includeObject= (Table only) */

    const struct printer *printer; /* Table: the kind's printer, or rest's default convertor */
};

/* The request's inputs to negotiation, all borrowed for the call. */
struct negotiate_in {
    const char *accept;               /* Accept header; NULL or "" = none */
    const char *accept_encoding;      /* Accept-Encoding header; NULL = none */
    const char *user_agent;           /* User-Agent header; NULL = none */
    const struct k8s_query_kv *query; /* the decoded query (first occurrence of a key wins,
                                         a NULL value reads as ""), for pretty and
                                         includeObject */
    size_t n_query;
};

/*
 * Negotiates <in> for a resource of <kind> into <out> (always filled). as=Table is accepted
 * for every kind: one without a kube printer gets rest's default convertor (built-ins) or
 * the CRD convertor's defaulted columns (custom resources), with out->table_default set.
 * Returns 0, or -ENOTSUP when no Accept clause names something kwp can produce (the 406;
 * *out still says how to write that Status). Any thread.
 */
int negotiate_request(const struct negotiate_in *in, const struct apires_kind *kind,
                      struct negotiate *out);

#endif
