/*
 * blob.h - one immutable, refcounted version of one object.
 *
 * A blob holds the exact JSON bytes of an object as upstream sent them (never re-encoded)
 * plus the metadata the cache needs to order, filter and frame it, all in ONE allocation:
 *
 *   +-------------+---------------------------+-------+------+--------+-------------+--------+
 *   | struct blob | data[len] '\0' (the JSON) | key\0 | ns\0 | rv_str | kv strings  | kv arr |
 *   +-------------+---------------------------+-------+------+--------+-------------+--------+
 *                                               ^ name = the key's last segment
 *
 * Label and field keys ("app", "spec.nodeName") repeat in every object of a kind: they are
 * interned once in a bounded process-wide table and the blobs point there (copied into the
 * blob like the values when the table is full). A value equal to the namespace or the name
 * points at that copy. Per object the store therefore pays the JSON, a 96-byte header, 16 B
 * per label and field, their values, key, namespace and rv, and a 40-byte tree node
 * (bench/README.md, "LIST and store memory", measures it).
 *
 * Who holds references: the store (current version of a key), the ring (each event holds
 * its object and the previous object), snapshots (lists in flight) and writers that are
 * framing it. Once a blob is published (refcount may exceed 1) it is never written to.
 * Thread safety: refcount is atomic; every other field is read-only after blob_new; interned
 * strings are never written or freed once published.
 */
#ifndef KWP_CACHE_BLOB_H
#define KWP_CACHE_BLOB_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* A key/value pair: a label, or a selectable field ("spec.nodeName" -> "n1"). */
struct blob_kv {
    const char *key;
    const char *val;
};

/* What the caller extracted from the JSON (proxy/kube_json does it), copied by blob_new. */
struct blob_meta {
    const char *ns;            /* metadata.namespace, "" or NULL when cluster-scoped */
    const char *name;          /* metadata.name, required, non-empty */
    const char *rv_str;        /* metadata.resourceVersion exactly as in the JSON */
    size_t rv_off;             /* offset of the rv string's first byte inside data, or 0 */
    size_t rv_len;             /* its length (0 when absent) */
    const struct blob_kv *labels; /* metadata.labels, any order */
    size_t n_labels;
    const struct blob_kv *fields; /* selectable fields, any order */
    size_t n_fields;
};

/* 96 bytes on LP64: counts and offsets are 32-bit (an object is at most KUBE_JSON_MAX_INPUT,
 * far below 4 GiB), since this header is paid once per object held. */
struct blob {
    /* public, read-only after blob_new */
    const char *data;   /* the object JSON, NUL-terminated (not counted in len) */
    size_t len;         /* bytes of JSON */
    const char *key;    /* store key: "ns/name", or "name" when ns is empty */
    const char *ns;     /* "" when cluster-scoped */
    const char *name;   /* inside key */
    const char *rv_str; /* resourceVersion as upstream wrote it */
    uint64_t rv;        /* rv_str parsed (0 if it did not parse) */
    const struct blob_kv *labels; /* sorted by key */
    const struct blob_kv *fields; /* sorted by key */
    uint32_t rv_off;   /* where rv_str's bytes sit inside data (for RV rewrites), 0 if none */
    uint32_t rv_len;   /* 0 when unknown */
    uint32_t n_labels; /* entries of labels */
    uint32_t n_fields; /* entries of fields */
    /* private */
    atomic_uint ref;
};

/*
 * Creates a blob from <data>/<len> and <meta>; copies everything (one allocation), except
 * label and field keys, which it interns (see above): the blob never points into the
 * caller's memory. Returns the blob with one reference owned by the caller, or NULL if
 * <meta> is invalid (NULL name or empty name, a NULL label/field key, an rv span outside
 * <data>, <len> or a count of 4 GiB or more). A NULL label/field value is stored as "".
 * Any thread.
 */
struct blob *blob_new(const char *data, size_t len, const struct blob_meta *meta);

/* Takes one more reference; returns <b>. NULL-safe. */
struct blob *blob_ref(struct blob *b);

/* Drops one reference; frees on the last one. NULL-safe. BUG_ON underflow. */
void blob_unref(struct blob *b);

/* Looks up label <key>; returns its value or NULL when absent (binary search). */
const char *blob_label(const struct blob *b, const char *key);

/* Looks up selectable field <key>; returns its value or NULL when absent. */
const char *blob_field(const struct blob *b, const char *key);

/* Bytes of this blob's own allocation (interned keys are shared, so not counted). */
size_t blob_footprint(const struct blob *b);

#endif
