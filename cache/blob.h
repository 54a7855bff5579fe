/*
 * blob.h - one immutable, refcounted version of one object.
 *
 * A blob holds the exact JSON bytes of an object as upstream sent them (never re-encoded)
 * plus the metadata the cache needs to order, filter and frame it, all in ONE allocation:
 *
 *   +-------------+----------------+-----+-----------------------+-------+------+--------+-----+
 *   | struct blob | label, field   | pad | data[len] '\0' (JSON) | key\0 | ns\0 | rv_str | kv  |
 *   |  (80 B)     | refs, 8 B each | /16 |                       |       |      |        | strs|
 *   +-------------+----------------+-----+-----------------------+-------+------+--------+-----+
 *                                                                  ^ name = the key's last segment
 *
 * Each label or field is two 32-bit references (an offset into this allocation, or into one
 * of two bounded process-wide intern tables), not two pointers. Keys ("app",
 * "spec.nodeName") repeat in every object of a kind: they are interned on first sight.
 * Values and namespaces that repeat across objects ("Running", a node's name, "default")
 * are interned on their second sight, so a value unique to one object does not take a
 * slot. What a table refuses (too long, or the table is full) is copied into the blob; a
 * value equal to the namespace or the name points at that copy. Per object the store
 * therefore pays the JSON, an 80-byte header, 8 B per label and field (padded to 16), the
 * values seen only once, key, namespace (unless interned) and rv, and a 40-byte tree node
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
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most labels and fields one blob holds, together: their 8-byte references and the strings
 * after them must sit below 2 GiB inside the blob. Unreachable from a JSON object of at most
 * KUBE_JSON_MAX_INPUT bytes (a pair takes at least 6). */
#define BLOB_MAX_KV (((size_t)1 << 28) - 16)

/* A key/value pair as the caller hands it to blob_new (a label, or a selectable field:
 * "spec.nodeName" -> "n1"), and as blob_label_at/blob_field_at lend it back. */
struct blob_kv {
    const char *key;
    const char *val;
};

/* What the caller extracted from the JSON (proxy/kube_json does it), copied by blob_new. */
struct blob_meta {
    const char *ns;               /* metadata.namespace, "" or NULL when cluster-scoped */
    const char *name;             /* metadata.name, required, non-empty */
    const char *rv_str;           /* metadata.resourceVersion exactly as in the JSON */
    size_t rv_off;                /* offset of the rv string's first byte inside data, or 0 */
    size_t rv_len;                /* its length (0 when absent) */
    const struct blob_kv *labels; /* metadata.labels, any order */
    size_t n_labels;
    const struct blob_kv *fields; /* selectable fields, any order */
    size_t n_fields;
};

/* 80 bytes on LP64: counts and offsets are 32-bit (an object is at most KUBE_JSON_MAX_INPUT,
 * far below 2 GiB), and the label and field references sit right after it (a selector reads
 * the two together), so it needs no pointer to them: it is paid once per object held. */
struct blob {
    /* public, read-only after blob_new */
    const char *data;   /* the object JSON, NUL-terminated (not counted in len) */
    size_t len;         /* bytes of JSON */
    const char *key;    /* store key: "ns/name", or "name" when ns is empty */
    const char *ns;     /* "" when cluster-scoped; may be an interned string */
    const char *name;   /* inside key */
    const char *rv_str; /* resourceVersion as upstream wrote it */
    uint64_t rv;        /* rv_str parsed (0 if it did not parse) */
    uint32_t rv_off;    /* where rv_str's bytes sit inside data (for RV rewrites), 0 if none */
    uint32_t rv_len;    /* 0 when unknown */
    uint32_t n_labels;  /* labels held (read them with blob_label, blob_label_at) */
    uint32_t n_fields;  /* selectable fields held (blob_field, blob_field_at) */
    /* private */
    atomic_uint ref;
    uint32_t size; /* bytes allocated */
};

/*
 * Creates a blob from <data>/<len> and <meta>; copies everything it does not intern (one
 * allocation): the blob never points into the caller's memory. Returns the blob with one
 * reference owned by the caller, or NULL if <meta> is invalid (NULL name or empty name, a
 * NULL label/field key, an rv span outside <data>, more than BLOB_MAX_KV labels and fields,
 * or a blob of 2 GiB or more); the pairs are not read when there are too many. A NULL
 * label/field value is stored as "".
 * Any thread.
 */
struct blob *blob_new(const char *data, size_t len, const struct blob_meta *meta);

/* Takes one more reference; returns <b>. NULL-safe. */
struct blob *blob_ref(struct blob *b);

/* Drops one reference; frees on the last one. NULL-safe. BUG_ON underflow. */
void blob_unref(struct blob *b);

/* Looks up label <key>; returns its value (NUL-terminated, lent for the blob's lifetime) or
 * NULL when absent. Binary search. */
const char *blob_label(const struct blob *b, const char *key);

/* Looks up selectable field <key>; returns its value or NULL when absent, as blob_label. */
const char *blob_field(const struct blob *b, const char *key);

/* The <i>-th label (or field) in strcmp order of keys, into <kv> (strings lent for the
 * blob's lifetime). Returns false, <kv> untouched, when i >= n_labels (n_fields). */
bool blob_label_at(const struct blob *b, size_t i, struct blob_kv *kv);
bool blob_field_at(const struct blob *b, size_t i, struct blob_kv *kv);

/* Bytes of this blob's own allocation (interned strings are shared, so not counted). */
size_t blob_footprint(const struct blob *b);

#endif
