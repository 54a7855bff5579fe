/*
 * transforms.h - an object, or a list envelope, as a request negotiated to see it
 * (handlers/response.go, printers.go), assembled from pieces of the stored bytes:
 *   - as stored: the kind's typemeta in front for built-ins, the resourceVersion spliced
 *     in when overridden (a DELETED after a selector change);
 *   - a PartialObjectMetadata: a fixed prefix plus the exact span of the object's
 *     "metadata" member (custom resources: re-ordered into metav1.ObjectMeta order);
 *   - a Table: column definitions and cells from printers.c (one cJSON parse per row, tree
 *     freed at once) and the row's object as includeObject says.
 * Nothing here touches the cache, a request or a lock: any thread. May include apires.h,
 * negotiate.h, pieces.h, printers.h, kube_json.h and cJSON.
 */
#ifndef KWP_PROXY_TRANSFORMS_H
#define KWP_PROXY_TRANSFORMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "cache/blob.h"
#include "proxy/pieces.h"

struct apires;
struct apires_kind;
struct negotiate;

/* One object as a transform sees it: stored bytes plus the resourceVersion to show. */
struct transforms_obj {
    const char *data; /* the stored JSON (built-ins: without kind/apiVersion) */
    size_t len;
    size_t rv_off; /* the rv string's bytes inside data (0/0: unknown) */
    size_t rv_len;
    const char *rv; /* the resourceVersion shown ("" for none) */
    bool override;  /* <rv> replaces the stored one (DELETED after a selector change) */
};

/* The view of blob <b> (lent), showing <rv_override> instead of its rv when not NULL.
 * Inline: it is taken per event and watcher. */
static inline struct transforms_obj transforms_obj_of(const struct blob *b, const char *rv_override)
{
    struct transforms_obj ov = {b->data,
                                b->len,
                                b->rv_off,
                                b->rv_len,
                                rv_override ? rv_override : b->rv_str,
                                rv_override != NULL};
    return ov;
}

/* How one request shows objects; all lent, set once per request. */
struct transforms_ctx {
    const struct apires *ar;     /* the kind and its api_version */
    const struct negotiate *neg; /* the transform, its version, printer and includeObject */
    const char *typemeta;        /* {"kind":"Pod","apiVersion":"v1" for built-ins, else "" */
    size_t typemeta_len;
};

/* Most iovecs transforms_object_iov fills. */
#define TRANSFORMS_OBJECT_IOV 5

/* Writes the typemeta prefix of <ar> ({"kind":"Pod","apiVersion":"v1", built-ins only) into
 * out[0..cap); returns its length (0 for custom resources, or when it does not fit). */
size_t transforms_typemeta(const struct apires *ar, char *out, size_t cap);

/*
 * Splits the JSON of <ov> as a watch event or GET shows it into at most TRANSFORMS_OBJECT_IOV
 * pieces: the typemeta prefix (built-ins), the body, with the resourceVersion string replaced
 * when <ov> overrides it. Returns the number of pieces; *total gets the byte count. The
 * pieces point into <typemeta>, ov->data, ov->rv and literals.
 */
size_t transforms_object_iov(const char *typemeta, size_t typemeta_len,
                             const struct transforms_obj *ov, struct iovec *iov, size_t *total);

/* Adds {"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{...}} of
 * <ov> to <pc> (at most 5 pieces). */
void transforms_pom(struct pieces *pc, const struct transforms_ctx *tc,
                    const struct transforms_obj *ov);

/* Adds one Table row of <ov> to <pc>: {"cells":[...][,"conditions":[...]],"object":<o>}
 * where <o> follows includeObject (PartialObjectMetadata by default, the object, or null);
 * ages count from <now_ns> (transforms_now_ns). At most 8 pieces. */
void transforms_table_row(struct pieces *pc, const struct transforms_ctx *tc,
                          const struct transforms_obj *ov, int64_t now_ns);

/* Adds a one-object Table (GET, watch events): metadata.resourceVersion is the object's,
 * columnDefinitions null unless <headers> (a watch sends them on its first event only,
 * watchEmbeddedEncoder's NoHeaders). At most 12 pieces. */
void transforms_table_single(struct pieces *pc, const struct transforms_ctx *tc,
                             const struct transforms_obj *ov, bool headers);

/*
 * Appends to <head> the envelope of a LIST body up to its first item, with list metadata
 * <meta> (a JSON object), for <matched> items: the kind's List, a PartialObjectMetadataList
 * or a Table. Returns the literal that closes the body after the items ("]}\n", or "}\n"
 * when an empty transformed list says null instead of []).
 */
const char *transforms_list_head(struct sbuf *head, const struct transforms_ctx *tc,
                                 const char *meta, size_t matched);

/* The "%T" of the object kube-apiserver's transform sees (internal types, or unstructured),
 * for errNotAcceptable messages: "*core.Pod", "*apps.DeploymentList". */
void transforms_internal_type(const struct apires_kind *kind, bool list, char *out, size_t cap);

/* Now on the clock a Table's ages count from (CLOCK_REALTIME, ns). */
int64_t transforms_now_ns(void);

#endif
