/*
 * kube_meta.h - the metadata of one object (name, namespace, resourceVersion and its byte
 * span, labels, selectable fields), extracted once when its bytes enter the cache, as
 * kube-apiserver's decoder would read them. Everything blob_new needs.
 * Pure functions; any thread.
 */
#ifndef KWP_PROXY_KUBE_META_H
#define KWP_PROXY_KUBE_META_H

#include <stddef.h>

#include "cache/blob.h"

#define KUBE_META_MAX_PATH 256 /* bytes of one field-path segment */

/*
 * metav1.ObjectMeta's JSON members in struct order (the order Go's encoder writes them),
 * NULL-terminated: the simulator writes metadata in it, the PartialObjectMetadata transform
 * re-encodes a custom resource's metadata in it.
 */
extern const char *const kube_meta_member_order[];

/*
 * Everything blob_new needs, extracted from one object. Strings point into <arena>, owned by
 * this struct; release with kube_meta_fini.
 */
struct kube_meta {
    struct blob_meta meta;
    struct blob_kv *kv; /* labels then fields, both arrays inside */
    char *arena;
};

/*
 * Reads object JSON (strictly validated, then read as byte spans without a tree) and fills
 * <out>: namespace, name, resourceVersion (string and byte span in data), labels, and each
 * field named in <field_paths> (dotted paths like "spec.nodeName", or
 * "key:path1|path2|=default" for fields kube-apiserver computes: the first path whose value
 * is usable wins, else the literal after "="; the field is stored under <key>;
 * NULL-terminated list, may be NULL): strings decoded, booleans "true"/"false", numbers in
 * decimal only when the float64 is an exact integer; absent paths and other types are
 * omitted. Labels keep string values only. Keys and strings are read as Go reads them: a
 * repeated key keeps its last value (as kube_json_member), escapes, lone surrogates and
 * invalid UTF-8 decode as Go unquotes them (gotext_json_unescape), and an escaped NUL, which
 * a C string cannot hold, reads U+0001 there, so it never equals a valid name, key or RV.
 * meta.ns is NULL when absent, meta.rv_str "" when absent; meta.rv_off/rv_len locate the rv
 * string's bytes in <data> only when it is written without escapes (else 0/0). <out> is
 * zeroed on error and needs no fini then.
 * Returns 0, -EPROTO (not an object / no metadata.name / nesting or size limits).
 */
int kube_meta_parse(const char *data, size_t len, const char *const *field_paths,
                    struct kube_meta *out);

/* Frees what kube_meta_parse allocated and zeroes <m>; NULL is a no-op. */
void kube_meta_fini(struct kube_meta *m);

/* Convenience: kube_meta_parse + blob_new over the same bytes (copied into the blob).
 * Returns a blob (one reference, the caller's) or NULL on -EPROTO. */
struct blob *kube_meta_blob(const char *data, size_t len, const char *const *field_paths);

/* As kube_meta_blob, for an object a strict scan accepted already (the "object" of
 * kube_json_event_parse, an element of kube_json_array_next, the output of
 * kube_json_strip_type_meta): it is not validated again. Never pass other bytes. */
struct blob *kube_meta_blob_valid(const char *data, size_t len, const char *const *field_paths);

#endif
