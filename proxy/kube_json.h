/*
 * kube_json.h - reading kube-apiserver JSON as byte spans: the exact bytes of "object" in a
 * watch line, of a member of a top-level object, of each element of an array, so the data
 * path never re-encodes objects (README rule 2). A strict scanner validates as it goes; no
 * tree is built. Status bodies are kstatus.h, object metadata kube_meta.h, continue tokens
 * continue_token.h, Go string escaping cache/gotext.h.
 * Pure functions; any thread.
 */
#ifndef KWP_PROXY_KUBE_JSON_H
#define KWP_PROXY_KUBE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/ring.h"

/* Limits on untrusted input (anything beyond is -EPROTO / -EINVAL). */
#define KUBE_JSON_MAX_INPUT ((size_t)1 << 30) /* bytes of one JSON document */
#define KUBE_JSON_MAX_DEPTH 512               /* nesting of objects and arrays */

/*
 * Finds top-level member <key> of the JSON object in data[0..len) by scanning bytes (no tree).
 * Sets *off and *vlen to the span of its raw value (for a string: including the quotes); keys
 * are compared after unescaping, and a repeated key yields its last value (as Go's decoder).
 * The whole input is validated (strict JSON, depth <= KUBE_JSON_MAX_DEPTH).
 * Returns 0, -ENOENT when absent, -EPROTO when data is not a well-formed object.
 */
int kube_json_member(const char *data, size_t len, const char *key, size_t *off, size_t *vlen);

/* Validates data[0..len) as one strict JSON object (surrounding whitespace allowed, at most
 * KUBE_JSON_MAX_INPUT bytes, depth <= KUBE_JSON_MAX_DEPTH). Returns 0 or -EPROTO. */
int kube_json_check_object(const char *data, size_t len);

/*
 * Iterates the elements of the JSON array in arr[0..len) (an array value's raw span, e.g. the
 * "items" member of a list; surrounding whitespace allowed) without building a tree. Start
 * with *pos = 0. Each call returns 1 and sets *e_off and *e_len to the next raw element span
 * (relative to arr), 0 after the closing bracket (and on every later call), or -EPROTO when
 * the array is malformed (elements validated strictly, depth <= KUBE_JSON_MAX_DEPTH).
 */
int kube_json_array_next(const char *arr, size_t len, size_t *pos, size_t *e_off, size_t *e_len);

/* One member of an object, as offsets into the object's bytes (see kube_json_object_next). */
struct kube_json_kv {
    size_t key_off; /* the key's first byte after its opening quote */
    size_t key_len; /* raw bytes between the quotes */
    bool key_esc;   /* the raw key holds a backslash (compare with kube_json_key_is) */
    size_t val_off; /* the raw value's span (a string with its quotes) */
    size_t val_len;
};

/*
 * Iterates the members of the JSON object in obj[0..len) (a raw object span, surrounding
 * whitespace allowed) in document order, without building a tree, as kube_json_array_next
 * does for arrays: start with *pos = 0; each call returns 1 with the next member in <kv>, 0
 * after the closing brace (and on every later call), or -EPROTO when the object is malformed
 * (values validated strictly, depth <= KUBE_JSON_MAX_DEPTH). Repeated keys all come out: a
 * caller that wants Go's reading keeps the last.
 */
int kube_json_object_next(const char *obj, size_t len, size_t *pos, struct kube_json_kv *kv);

/*
 * As kube_json_object_next, for an object inside bytes that kube_json_check_object (or
 * another strict scan) accepted already: values are skipped by their brackets and quotes, not
 * checked again, so a pass costs a fraction of a validating one. On bytes that were not
 * validated it still never reads outside obj[0..len), but may return wrong spans.
 */
int kube_json_object_next_valid(const char *obj, size_t len, size_t *pos, struct kube_json_kv *kv);

/* Whether member <kv> of <obj> has key key[0..key_len) once unescaped as Go does. */
bool kube_json_key_eq(const char *obj, const struct kube_json_kv *kv, const char *key,
                      size_t key_len);

/* A parsed watch event line. */
struct kube_event {
    enum watch_type type;
    size_t obj_off; /* span of "object" inside the line */
    size_t obj_len;
};

/* Parses {"type":"...","object":{...}} (members in any order, others ignored, last repeat
 * wins). "type" must be one of the five watch types and "object" an object. Returns 0 or
 * -EPROTO. */
int kube_json_event_parse(const char *line, size_t len, struct kube_event *ev);

/*
 * Copies the object in data[0..len) to a new heap buffer without its top-level "kind" and
 * "apiVersion" members (the form built-in list items have); every other byte, whitespace
 * included, is kept and the result stays valid JSON ({"kind":"Pod"} -> {}). Returns the
 * NUL-terminated buffer (caller frees) and its length through <out_len>, or NULL with
 * -EPROTO semantics on malformed input.
 */
char *kube_json_strip_type_meta(const char *data, size_t len, size_t *out_len);

/* As kube_json_strip_type_meta, for an object a strict scan accepted already (the "object"
 * of kube_json_event_parse, an element of kube_json_array_next): nothing is checked again.
 * On bytes that were not validated it never reads outside data[0..len) but may cut wrongly. */
char *kube_json_strip_type_meta_valid(const char *data, size_t len, size_t *out_len);

#endif
