/*
 * kube_json.h - the JSON the proxy must read and write exactly like kube-apiserver.
 *
 * Reading: byte-level spans (the exact bytes of "object" in a watch line, of a member of a
 * top-level object) so the data path never re-encodes objects; cJSON is used only to pull
 * metadata fields out, and every tree is freed in the function that parsed it.
 * Writing: metav1.Status bodies (SEMANTICS 5), Go encoding/json string escaping, continue
 * tokens (SEMANTICS 1.6). Pure functions; any thread.
 */
#ifndef KWP_PROXY_KUBE_JSON_H
#define KWP_PROXY_KUBE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/blob.h"
#include "cache/ring.h"

/* Limits on untrusted input (anything beyond is -EPROTO / -EINVAL). */
#define KUBE_JSON_MAX_INPUT ((size_t)1 << 30) /* bytes of one JSON document */
#define KUBE_JSON_MAX_DEPTH 512               /* nesting of objects and arrays */
#define KUBE_JSON_CONTINUE_MAX 4096           /* bytes of one continue token */
#define KUBE_META_MAX_PATH 256                /* bytes of one field-path segment */

/* ---- Status bodies ------------------------------------------------------------------- */

struct kstatus_cause {
    const char *reason;  /* "FieldValueForbidden", "ResourceVersionTooLarge", ... */
    const char *message;
    const char *field;   /* NULL = omitted */
};

#define KSTATUS_MAX_CAUSES 8

/* A metav1.Status. NULL or empty strings and zero numbers are omitted as Go's omitempty would;
 * "details" appears when name, group or kind is non-NULL, or there are causes or a retry.
 * The const char * members are borrowed: they must outlive every kube_json_status call. */
struct kstatus {
    int code;                /* HTTP code, also "code" in the body */
    const char *reason;      /* NULL = no "reason" member (the 500 invalid-rv case) */
    char message[1024];      /* "message" */
    const char *continue_tok;/* metadata.continue, NULL = metadata is {} */
    /* details: present when any of these is set */
    const char *name;
    const char *group;
    const char *kind;
    const char *uid;
    struct kstatus_cause causes[KSTATUS_MAX_CAUSES];
    size_t n_causes;
    int retry_after;         /* details.retryAfterSeconds (and the Retry-After header); 0 = none */
};

/* Clears <st> and fills code, reason and message (printf-style, truncated to fit). */
void kstatus_set(struct kstatus *st, int code, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * Writes the Status as compact JSON with key order kind, apiVersion, metadata, status,
 * message, reason, details, code (no trailing newline). "status" is "Failure" for code >= 400,
 * else "Success". Returns the length that the full body needs; writes at most cap-1 bytes plus
 * a NUL (snprintf semantics).
 */
size_t kube_json_status(const struct kstatus *st, char *buf, size_t cap);

/* Ready-made bodies from SEMANTICS: */
/* 504 Too large resource version (with cause and retryAfterSeconds 1). */
void kstatus_too_large_rv(struct kstatus *st, uint64_t requested, uint64_t current);
/* 410 watch too old: "too old resource version: <rv> (<boundary>)", reason Expired. */
void kstatus_too_old(struct kstatus *st, uint64_t rv, uint64_t boundary);
/* 404: `<plural>[.<group>] "<name>" not found` (name quoted like Go's %q) with details name,
 * group, kind=<plural>. <st> borrows <group>, <plural> and <name>. */
void kstatus_not_found(struct kstatus *st, const char *group, const char *plural,
                       const char *name);
/* 429 storage is (re)initializing, retryAfter from seconds since the state changed
 * (int(min(30, max(1, e^(0.06 t))))). */
void kstatus_not_ready(struct kstatus *st, double seconds_unready);

/* ---- strings ------------------------------------------------------------------------- */

/*
 * Appends <s> (len bytes) as a JSON string literal with quotes, escaped like Go's
 * encoding/json (HTML-safe: < > & as \u003c \u003e \u0026; U+2028/U+2029 escaped; invalid
 * UTF-8 as \ufffd; \b \f \n \r \t short escapes as Go >= 1.22 writes them, other controls
 * as \u00xx; '/' is not escaped). Returns the bytes needed; writes at most cap-1 plus NUL.
 */
size_t kube_json_quote(const char *s, size_t len, char *buf, size_t cap);

/*
 * Writes <s> (len bytes) quoted as Go's strconv.Quote, which is what fmt's %q prints for a
 * string (the names in kube-apiserver's error messages): \" \\ \a..\r short escapes, other
 * controls and invalid UTF-8 bytes as \xNN, non-printable runes as \uNNNN / \UNNNNNNNN.
 * Returns the bytes needed; writes at most cap-1 plus NUL (snprintf semantics).
 */
size_t kube_json_go_quote(const char *s, size_t len, char *buf, size_t cap);

/* ---- reading spans ------------------------------------------------------------------- */

/*
 * Finds top-level member <key> of the JSON object in data[0..len) by scanning bytes (no tree).
 * Sets *off and *vlen to the span of its raw value (for a string: including the quotes); keys
 * are compared after unescaping, and a repeated key yields its last value (as Go's decoder).
 * The whole input is validated (strict JSON, depth <= KUBE_JSON_MAX_DEPTH).
 * Returns 0, -ENOENT when absent, -EPROTO when data is not a well-formed object.
 */
int kube_json_member(const char *data, size_t len, const char *key, size_t *off, size_t *vlen);

/*
 * Iterates the elements of the JSON array in arr[0..len) (an array value's raw span, e.g. the
 * "items" member of a list; surrounding whitespace allowed) without building a tree. Start
 * with *pos = 0. Each call returns 1 and sets *e_off and *e_len to the next raw element span
 * (relative to arr), 0 after the closing bracket (and on every later call), or -EPROTO when
 * the array is malformed (elements validated strictly, depth <= KUBE_JSON_MAX_DEPTH).
 */
int kube_json_array_next(const char *arr, size_t len, size_t *pos, size_t *e_off, size_t *e_len);

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

/* ---- object metadata ----------------------------------------------------------------- */

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
 * Parses object JSON (cJSON, tree freed before return) and fills <out>: namespace, name,
 * resourceVersion (string and byte span in data), labels, and each field named in
 * <field_paths> (dotted paths like "spec.nodeName", or "key:path1|path2|=default" for fields
 * kube-apiserver computes: the first path present wins, else the literal after "="; the field
 * is stored under <key>; NULL-terminated list, may be NULL):
 * strings as-is, booleans "true"/"false", integers in decimal (only when the double is an
 * exact integer); absent paths and other types are omitted. Labels keep string values only.
 * Keys are read as Go reads them: a repeated key keeps its last value (as kube_json_member),
 * and a string holding an escaped NUL, which cJSON would cut short, reads U+0001 there, so it
 * never equals a valid name, key or RV. meta.ns is NULL when absent, meta.rv_str "" when
 * absent; meta.rv_off/rv_len locate the rv string's bytes in <data> only when it is written
 * without escapes (else 0/0). <out> is zeroed on error and needs no fini then.
 * Returns 0, -EPROTO (not an object / no metadata.name / nesting or size limits).
 */
int kube_meta_parse(const char *data, size_t len, const char *const *field_paths,
                    struct kube_meta *out);
void kube_meta_fini(struct kube_meta *m);

/* Convenience: parse + blob_new. Returns a blob (one reference) or NULL on -EPROTO. */
struct blob *kube_json_blob(const char *data, size_t len, const char *const *field_paths);

/* ---- continue tokens (SEMANTICS 1.6) ------------------------------------------------- */

/* Encodes base64url-no-padding({"v":"meta.k8s.io/v1","rv":<rv>,"start":"<start_key>\u0000"}),
 * the key escaped as Go's json.Marshal does. Returns the token length (snprintf semantics). */
size_t kube_json_continue_encode(int64_t rv, const char *start_key, char *out, size_t cap);

/*
 * Decodes a token as kube-apiserver's DecodeContinue does (accepts a leading "/" or not,
 * path.Clean). Sets *rv and the start key with the trailing \0 removed and no leading "/"
 * (<start>, at most start_cap-1 bytes). On error returns -EINVAL and the exact text after
 * "invalid continue token: " in <err>, e.g. "continue key is not valid: ...". Error texts are
 * Go's, including base64 ("illegal base64 data at input byte 7") and encoding/json syntax and
 * type errors. Differences from the apiserver: tokens longer than KUBE_JSON_CONTINUE_MAX are
 * refused; the start key ends at its first NUL (callers treat it as exclusive, which equals
 * apiserver's ">= key\0" for NUL-free keys; only a hand-made token without the \0 differs);
 * a NUL inside echoed token text truncates <err>; a key that does not fit <start> is -EINVAL
 * (start_cap >= 3 * KUBE_JSON_CONTINUE_MAX always suffices: invalid UTF-8 widens to U+FFFD).
 */
int kube_json_continue_decode(const char *tok, int64_t *rv, char *start, size_t start_cap,
                              char *err, size_t err_len);

#endif
