/*
 * proto.c - a table-driven, bounds-checked decoder for the Kubernetes protobuf envelope and
 * the few core/v1 messages kubectl POSTs (see proto.h).
 *
 * Each message is a table of fields in Go struct order (which is the JSON key order); the
 * decoder walks the wire once, keeps the latest value per field in a slot (maps and repeated
 * fields accumulate), then emits the slots in table order. Every read goes through struct
 * pbuf, which never moves past its end; lengths are checked against what remains before use.
 * Only known sub-messages are entered, so nesting is bounded by the schema, and by
 * PROTO_MAX_DEPTH as a guard.
 */
#include "sim/proto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cJSON.h>

#include "cache/bug.h"

#define PROTO_MAGIC "k8s\0"
#define PROTO_MAGIC_LEN 4
#define PMSG_MAX_FIELDS 16

/* protobuf wire types */
enum wire_type { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

/* A read cursor over p[0..len); off never exceeds len. */
struct pbuf {
    const uint8_t *p;
    size_t len;
    size_t off;
};

/* Per-call state: where errors go and how many items the body has used. */
struct pctx {
    char *err;
    size_t err_len;
    size_t items;
};

enum pf_type {
    PF_STRING = 0, /* string -> JSON string, UTF-8 repaired */
    PF_BOOL,       /* *bool -> true/false whenever present */
    PF_INT64,      /* int64 -> number */
    PF_TIME,       /* metav1.Time -> RFC 3339 string, zero time omitted */
    PF_MSG,        /* embedded message -> object */
    PF_RAWJSON,    /* FieldsV1 {1 raw bytes} -> the JSON value those bytes hold */
    PF_MAP_STRING, /* map<string,string> -> object */
    PF_MAP_BYTES,  /* map<string,bytes> -> object of base64 strings */
    PF_REP_STRING, /* repeated string -> array */
    PF_REP_MSG,    /* repeated message -> array of objects */
};

/* Go prints the zero value: the field has no omitempty (e.g. OwnerReference.name). */
#define PF_KEEP_EMPTY 1u

struct pmsg;

struct pfield {
    uint32_t num;            /* protobuf field number */
    const char *json;        /* JSON member name */
    enum pf_type type;
    const struct pmsg *msg;  /* PF_MSG / PF_REP_MSG element type */
    unsigned flags;
};

struct pmsg {
    const char *name;        /* for error messages */
    const struct pfield *fields;
    size_t n_fields;
};

#define PMSG(var, label, ...)                                                                      \
    static const struct pfield var##_fields[] = {__VA_ARGS__};                                     \
    static const struct pmsg var = {label, var##_fields,                                           \
                                    sizeof(var##_fields) / sizeof(var##_fields[0])}

/* ---- schema (field numbers from the generated.proto files; order = Go struct order) ---- */

/* k8s.io/apimachinery/pkg/runtime TypeMeta: note apiVersion=1, kind=2 (meta/v1's is swapped). */
PMSG(m_typemeta, "TypeMeta",
     {1, "apiVersion", PF_STRING, NULL, 0},
     {2, "kind", PF_STRING, NULL, 0});

PMSG(m_owner_ref, "OwnerReference",
     {5, "apiVersion", PF_STRING, NULL, PF_KEEP_EMPTY},
     {1, "kind", PF_STRING, NULL, PF_KEEP_EMPTY},
     {3, "name", PF_STRING, NULL, PF_KEEP_EMPTY},
     {4, "uid", PF_STRING, NULL, PF_KEEP_EMPTY},
     {6, "controller", PF_BOOL, NULL, 0},
     {7, "blockOwnerDeletion", PF_BOOL, NULL, 0});

PMSG(m_managed_fields, "ManagedFieldsEntry",
     {1, "manager", PF_STRING, NULL, 0},
     {2, "operation", PF_STRING, NULL, 0},
     {3, "apiVersion", PF_STRING, NULL, 0},
     {4, "time", PF_TIME, NULL, 0},
     {6, "fieldsType", PF_STRING, NULL, 0},
     {7, "fieldsV1", PF_RAWJSON, NULL, 0},
     {8, "subresource", PF_STRING, NULL, 0});

PMSG(m_object_meta, "ObjectMeta",
     {1, "name", PF_STRING, NULL, 0},
     {2, "generateName", PF_STRING, NULL, 0},
     {3, "namespace", PF_STRING, NULL, 0},
     {4, "selfLink", PF_STRING, NULL, 0},
     {5, "uid", PF_STRING, NULL, 0},
     {6, "resourceVersion", PF_STRING, NULL, 0},
     {7, "generation", PF_INT64, NULL, 0},
     {8, "creationTimestamp", PF_TIME, NULL, 0},
     {9, "deletionTimestamp", PF_TIME, NULL, 0},
     {10, "deletionGracePeriodSeconds", PF_INT64, NULL, PF_KEEP_EMPTY},
     {11, "labels", PF_MAP_STRING, NULL, 0},
     {12, "annotations", PF_MAP_STRING, NULL, 0},
     {13, "ownerReferences", PF_REP_MSG, &m_owner_ref, 0},
     {14, "finalizers", PF_REP_STRING, NULL, 0},
     {17, "managedFields", PF_REP_MSG, &m_managed_fields, 0});

PMSG(m_configmap, "ConfigMap",
     {1, "metadata", PF_MSG, &m_object_meta, 0},
     {4, "immutable", PF_BOOL, NULL, 0},
     {2, "data", PF_MAP_STRING, NULL, 0},
     {3, "binaryData", PF_MAP_BYTES, NULL, 0});

PMSG(m_secret, "Secret",
     {1, "metadata", PF_MSG, &m_object_meta, 0},
     {5, "immutable", PF_BOOL, NULL, 0},
     {2, "data", PF_MAP_BYTES, NULL, 0},
     {4, "stringData", PF_MAP_STRING, NULL, 0},
     {3, "type", PF_STRING, NULL, 0});

PMSG(m_ns_spec, "NamespaceSpec",
     {1, "finalizers", PF_REP_STRING, NULL, 0});

PMSG(m_ns_condition, "NamespaceCondition",
     {1, "type", PF_STRING, NULL, PF_KEEP_EMPTY},
     {2, "status", PF_STRING, NULL, PF_KEEP_EMPTY},
     {4, "lastTransitionTime", PF_TIME, NULL, 0},
     {5, "reason", PF_STRING, NULL, 0},
     {6, "message", PF_STRING, NULL, 0});

PMSG(m_ns_status, "NamespaceStatus",
     {1, "phase", PF_STRING, NULL, 0},
     {2, "conditions", PF_REP_MSG, &m_ns_condition, 0});

PMSG(m_namespace, "Namespace",
     {1, "metadata", PF_MSG, &m_object_meta, 0},
     {2, "spec", PF_MSG, &m_ns_spec, 0},
     {3, "status", PF_MSG, &m_ns_status, 0});

static const struct {
    const char *api_version;
    const char *kind;
    const struct pmsg *msg;
} proto_kinds[] = {
    {"v1", "ConfigMap", &m_configmap},
    {"v1", "Secret", &m_secret},
    {"v1", "Namespace", &m_namespace},
};

/* ---- errors and allocation ----------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static int fail(struct pctx *c, int rc, const char *fmt,
                                                      ...)
{
    va_list ap;

    if (c->err != NULL && c->err_len > 0) {
        va_start(ap, fmt);
        vsnprintf(c->err, c->err_len, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* cJSON allocates with malloc; like xmalloc, running out of memory is fatal (STYLE OOM). */
static cJSON *cj(cJSON *item)
{
    if (item == NULL) {
        fputs("proto: out of memory building a cJSON tree\n", stderr);
        abort();
    }
    return item;
}

/* ---- wire primitives ------------------------------------------------------------------- */

static int rd_varint(struct pbuf *b, uint64_t *v)
{
    uint64_t x = 0;

    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (b->off >= b->len) {
            return -EPROTO;
        }
        uint8_t byte = b->p[b->off++];
        /* The tenth byte may only carry the top bit of a 64-bit value. */
        if (shift == 63 && byte > 1) {
            return -EPROTO;
        }
        x |= (uint64_t)(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) {
            *v = x;
            return 0;
        }
    }
    return -EPROTO;
}

/* Reads a length prefix and lends the span that follows; the span is inside the buffer. */
static int rd_bytes(struct pbuf *b, const uint8_t **data, size_t *n)
{
    uint64_t l;

    if (rd_varint(b, &l) != 0 || l > b->len - b->off) {
        return -EPROTO;
    }
    *data = b->p + b->off;
    *n = (size_t)l;
    b->off += (size_t)l;
    return 0;
}

static int rd_tag(struct pbuf *b, uint32_t *num, unsigned *wt)
{
    uint64_t t;

    if (rd_varint(b, &t) != 0 || t > UINT32_MAX || (t >> 3) == 0) {
        return -EPROTO;
    }
    *num = (uint32_t)(t >> 3);
    *wt = (unsigned)(t & 7);
    return 0;
}

static int skip_field(struct pbuf *b, unsigned wt)
{
    uint64_t v;
    const uint8_t *d;
    size_t n;

    switch (wt) {
    case WT_VARINT:
        return rd_varint(b, &v);
    case WT_I64:
        n = 8;
        break;
    case WT_I32:
        n = 4;
        break;
    case WT_LEN:
        return rd_bytes(b, &d, &n);
    default:
        /* Groups are deprecated and never produced by Kubernetes; 6 and 7 do not exist. */
        return -EPROTO;
    }
    if (n > b->len - b->off) {
        return -EPROTO;
    }
    b->off += n;
    return 0;
}

/* ---- value conversion ------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s[0..n), or 0 if it is not one (Go's rules: no
 * overlongs, no surrogates, nothing above U+10FFFF). */
static size_t utf8_seq(const uint8_t *s, size_t n)
{
    uint8_t c = s[0];
    size_t need;
    uint8_t lo = 0x80;
    uint8_t hi = 0xbf;

    if (c < 0x80) {
        return 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
        need = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 3;
        if (c == 0xe0) {
            lo = 0xa0;
        } else if (c == 0xed) {
            hi = 0x9f;
        }
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 4;
        if (c == 0xf0) {
            lo = 0x90;
        } else if (c == 0xf4) {
            hi = 0x8f;
        }
    } else {
        return 0;
    }
    if (need > n || s[1] < lo || s[1] > hi) {
        return 0;
    }
    for (size_t i = 2; i < need; i++) {
        if (s[i] < 0x80 || s[i] > 0xbf) {
            return 0;
        }
    }
    return need;
}

/* A cJSON string from wire bytes: NUL is refused, each invalid byte becomes U+FFFD. */
static int make_string(struct pctx *c, const uint8_t *s, size_t n, const char *what,
                       cJSON **out)
{
    char *buf;
    size_t o = 0;

    if (memchr(s, 0, n) != NULL) {
        return fail(c, -EPROTO, "%s: NUL byte in a string field is not supported", what);
    }
    buf = xmalloc(n * 3 + 1); /* worst case: every byte invalid -> 3-byte U+FFFD */
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(s + i, n - i);
        if (k == 0) {
            memcpy(buf + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        } else {
            memcpy(buf + o, s + i, k);
            o += k;
            i += k;
        }
    }
    buf[o] = '\0';
    *out = cj(cJSON_CreateString(buf));
    free(buf);
    return 0;
}

char *proto_base64_new(const void *data, size_t len)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const uint8_t *s = data;
    char *out = xmalloc((len + 2) / 3 * 4 + 1);
    size_t o = 0;
    size_t i = 0;

    for (; i + 3 <= len; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        out[o++] = tbl[v >> 18];
        out[o++] = tbl[(v >> 12) & 63];
        out[o++] = tbl[(v >> 6) & 63];
        out[o++] = tbl[v & 63];
    }
    if (len - i == 1) {
        uint32_t v = (uint32_t)s[i] << 16;
        out[o++] = tbl[v >> 18];
        out[o++] = tbl[(v >> 12) & 63];
        out[o++] = '=';
        out[o++] = '=';
    } else if (len - i == 2) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
        out[o++] = tbl[v >> 18];
        out[o++] = tbl[(v >> 12) & 63];
        out[o++] = tbl[(v >> 6) & 63];
        out[o++] = '=';
    }
    out[o] = '\0';
    return out;
}

static cJSON *make_base64(const uint8_t *s, size_t n)
{
    char *b64 = proto_base64_new(s, n);
    cJSON *item = cj(cJSON_CreateString(b64));

    free(b64);
    return item;
}

/* metav1.Time {1 int64 seconds, 2 int32 nanos}. Sets *out to NULL for the zero time. */
static int make_time(struct pctx *c, const uint8_t *d, size_t n, const char *what, cJSON **out)
{
    /* 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, the range RFC 3339 can print. */
    const int64_t min_s = -62135596800LL;
    const int64_t max_s = 253402300799LL;
    struct pbuf b = {d, n, 0};
    int64_t secs = 0;
    int64_t nanos = 0;
    uint32_t num;
    unsigned wt;
    uint64_t v;
    struct tm tm;
    time_t t;
    char buf[80]; /* room for any int the compiler imagines in struct tm */

    while (b.off < b.len) {
        if (rd_tag(&b, &num, &wt) != 0) {
            return fail(c, -EPROTO, "%s: malformed Time", what);
        }
        if ((num == 1 || num == 2) && wt == WT_VARINT) {
            if (rd_varint(&b, &v) != 0) {
                return fail(c, -EPROTO, "%s: truncated Time", what);
            }
            if (num == 1) {
                secs = (int64_t)v;
            } else {
                nanos = (int32_t)(uint32_t)v;
            }
        } else if (skip_field(&b, wt) != 0) {
            return fail(c, -EPROTO, "%s: malformed Time", what);
        }
    }
    *out = NULL;
    /* apimachinery decodes {0,0} as the zero time, which JSON prints as null: omit it. */
    if (secs == 0 && nanos == 0) {
        return 0;
    }
    if (secs < min_s || secs > max_s) {
        return fail(c, -EPROTO, "%s: time %lld is outside years 1..9999", what, (long long)secs);
    }
    t = (time_t)secs;
    if (gmtime_r(&t, &tm) == NULL) {
        return fail(c, -EPROTO, "%s: unrepresentable time", what);
    }
    snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    *out = cj(cJSON_CreateString(buf));
    return 0;
}

/* FieldsV1 {1 bytes raw}: raw is a JSON document, embedded as a value. */
static int make_rawjson(struct pctx *c, const uint8_t *d, size_t n, const char *what,
                        cJSON **out)
{
    struct pbuf b = {d, n, 0};
    const uint8_t *raw = NULL;
    size_t raw_len = 0;
    uint32_t num;
    unsigned wt;

    while (b.off < b.len) {
        if (rd_tag(&b, &num, &wt) != 0) {
            return fail(c, -EPROTO, "%s: malformed FieldsV1", what);
        }
        if (num == 1 && wt == WT_LEN) {
            if (rd_bytes(&b, &raw, &raw_len) != 0) {
                return fail(c, -EPROTO, "%s: truncated FieldsV1", what);
            }
        } else if (skip_field(&b, wt) != 0) {
            return fail(c, -EPROTO, "%s: malformed FieldsV1", what);
        }
    }
    *out = NULL;
    if (raw == NULL || raw_len == 0) {
        return 0;
    }
    /* cJSON stops at raw_len (ParseWithLength); require_null_terminated=0 since the span
     * is not NUL-terminated, so check the end ourselves. */
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts((const char *)raw, raw_len, &end, 0);
    if (v == NULL || end == NULL || (size_t)(end - (const char *)raw) != raw_len) {
        cJSON_Delete(v);
        return fail(c, -EPROTO, "%s: fieldsV1 is not a JSON document", what);
    }
    *out = v;
    return 0;
}

/* ---- messages ---------------------------------------------------------------------------- */

static int decode_msg(struct pctx *c, const uint8_t *data, size_t len, const struct pmsg *m,
                      int depth, cJSON **out);

/* Sets key=val in a map object, replacing an earlier value (Go map semantics). */
static void map_set(cJSON *map, const char *key, cJSON *val)
{
    cJSON *old = cJSON_GetObjectItemCaseSensitive(map, key);

    if (old != NULL) {
        /* (ReplaceItemViaPointer would leave val without its key.) */
        cJSON_ReplaceItemInObjectCaseSensitive(map, key, val);
    } else {
        cJSON_AddItemToObject(map, key, val);
    }
}

/* One map entry message {1 key string, 2 value string|bytes}; absent parts are "". */
static int decode_map_entry(struct pctx *c, const uint8_t *d, size_t n, const struct pmsg *m,
                            const struct pfield *f, cJSON *map)
{
    struct pbuf b = {d, n, 0};
    const uint8_t *key = (const uint8_t *)"";
    size_t key_len = 0;
    const uint8_t *val = (const uint8_t *)"";
    size_t val_len = 0;
    cJSON *k = NULL;
    cJSON *v = NULL;
    uint32_t num;
    unsigned wt;
    int rc;

    while (b.off < b.len) {
        if (rd_tag(&b, &num, &wt) != 0) {
            return fail(c, -EPROTO, "%s.%s: malformed map entry", m->name, f->json);
        }
        if ((num == 1 || num == 2) && wt == WT_LEN) {
            rc = num == 1 ? rd_bytes(&b, &key, &key_len) : rd_bytes(&b, &val, &val_len);
        } else {
            rc = skip_field(&b, wt);
        }
        if (rc != 0) {
            return fail(c, -EPROTO, "%s.%s: truncated map entry", m->name, f->json);
        }
    }
    rc = make_string(c, key, key_len, f->json, &k);
    if (rc != 0) {
        return rc;
    }
    if (f->type == PF_MAP_BYTES) {
        v = make_base64(val, val_len);
    } else {
        rc = make_string(c, val, val_len, f->json, &v);
        if (rc != 0) {
            cJSON_Delete(k);
            return rc;
        }
    }
    map_set(map, k->valuestring, v);
    cJSON_Delete(k);
    return 0;
}

/* Decodes one field occurrence of wire type <wt> into <slot> (replacing or appending). */
static int decode_field(struct pctx *c, struct pbuf *b, unsigned wt, const struct pmsg *m,
                        const struct pfield *f, int depth, cJSON **slot)
{
    bool varint = f->type == PF_BOOL || f->type == PF_INT64;
    bool is_map = f->type == PF_MAP_STRING || f->type == PF_MAP_BYTES;
    bool is_list = f->type == PF_REP_STRING || f->type == PF_REP_MSG;
    const uint8_t *d = NULL;
    size_t n = 0;
    uint64_t v = 0;
    cJSON *item = NULL;
    int rc;

    if (wt != (varint ? WT_VARINT : WT_LEN)) {
        return fail(c, -EPROTO, "%s.%s: wire type %u does not match the schema", m->name,
                    f->json, wt);
    }
    rc = varint ? rd_varint(b, &v) : rd_bytes(b, &d, &n);
    if (rc != 0) {
        return fail(c, -EPROTO, "%s.%s: truncated field", m->name, f->json);
    }
    if (is_map || is_list) {
        if (++c->items > PROTO_MAX_ITEMS) {
            return fail(c, -EPROTO, "more than %u map entries and list elements",
                        PROTO_MAX_ITEMS);
        }
        if (*slot == NULL) {
            *slot = cj(is_map ? cJSON_CreateObject() : cJSON_CreateArray());
        }
    }

    switch (f->type) {
    case PF_STRING:
        rc = make_string(c, d, n, f->json, &item);
        if (rc == 0 && n == 0 && !(f->flags & PF_KEEP_EMPTY)) {
            cJSON_Delete(item);
            item = NULL;
        }
        break;
    case PF_BOOL:
        item = cj(cJSON_CreateBool(v != 0));
        break;
    case PF_INT64:
        if (v != 0 || (f->flags & PF_KEEP_EMPTY)) {
            item = cj(cJSON_CreateNumber((double)(int64_t)v));
        }
        break;
    case PF_TIME:
        rc = make_time(c, d, n, f->json, &item);
        break;
    case PF_RAWJSON:
        rc = make_rawjson(c, d, n, f->json, &item);
        break;
    case PF_MSG:
        rc = decode_msg(c, d, n, f->msg, depth + 1, &item);
        break;
    case PF_MAP_STRING:
    case PF_MAP_BYTES:
        return decode_map_entry(c, d, n, m, f, *slot);
    case PF_REP_STRING:
        rc = make_string(c, d, n, f->json, &item);
        if (rc == 0) {
            cJSON_AddItemToArray(*slot, item);
        }
        return rc;
    case PF_REP_MSG:
        rc = decode_msg(c, d, n, f->msg, depth + 1, &item);
        if (rc == 0) {
            cJSON_AddItemToArray(*slot, item);
        }
        return rc;
    }
    if (rc != 0) {
        return rc;
    }
    /* A scalar or message seen again replaces the earlier one: last one wins. (protobuf
     * would merge a repeated embedded message; Kubernetes encoders never repeat one.) */
    cJSON_Delete(*slot);
    *slot = item;
    return 0;
}

static int decode_msg(struct pctx *c, const uint8_t *data, size_t len, const struct pmsg *m,
                      int depth, cJSON **out)
{
    struct pbuf b = {data, len, 0};
    cJSON *slot[PMSG_MAX_FIELDS] = {NULL};
    cJSON *obj = NULL;
    uint32_t num;
    unsigned wt;
    int rc = 0;

    BUG_ON(m->n_fields > PMSG_MAX_FIELDS);
    *out = NULL;
    if (depth > PROTO_MAX_DEPTH) {
        return fail(c, -EPROTO, "%s: nested deeper than %d messages", m->name, PROTO_MAX_DEPTH);
    }
    while (b.off < b.len) {
        size_t i;

        if (rd_tag(&b, &num, &wt) != 0) {
            rc = fail(c, -EPROTO, "%s: malformed field tag", m->name);
            goto out;
        }
        for (i = 0; i < m->n_fields && m->fields[i].num != num; i++) {
        }
        if (i == m->n_fields) {
            if (skip_field(&b, wt) != 0) {
                rc = fail(c, -EPROTO, "%s: malformed unknown field %u", m->name, num);
                goto out;
            }
            continue;
        }
        rc = decode_field(c, &b, wt, m, &m->fields[i], depth, &slot[i]);
        if (rc != 0) {
            goto out;
        }
    }
    obj = cj(cJSON_CreateObject());
    for (size_t i = 0; i < m->n_fields; i++) {
        if (slot[i] != NULL) {
            cJSON_AddItemToObject(obj, m->fields[i].json, slot[i]);
            slot[i] = NULL;
        }
    }
    *out = obj;
out:
    for (size_t i = 0; i < PMSG_MAX_FIELDS; i++) {
        cJSON_Delete(slot[i]);
    }
    return rc;
}

/* ---- envelope -------------------------------------------------------------------------- */

bool proto_is_content_type(const char *content_type)
{
    size_t n = strlen(PROTO_CONTENT_TYPE);

    if (content_type == NULL) {
        return false;
    }
    while (*content_type == ' ' || *content_type == '\t') {
        content_type++;
    }
    if (strncasecmp(content_type, PROTO_CONTENT_TYPE, n) != 0) {
        return false;
    }
    content_type += n;
    while (*content_type == ' ' || *content_type == '\t') {
        content_type++;
    }
    return *content_type == '\0' || *content_type == ';';
}

/* The string value of member <key> of a decoded object, "" when absent. */
static const char *member_str(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(v) ? v->valuestring : "";
}

int proto_decode(const void *body, size_t len, cJSON **out, char *err, size_t err_len)
{
    struct pctx c = {err, err_len, 0};
    struct pbuf b = {body, len, 0};
    const uint8_t *tm = NULL;
    size_t tm_len = 0;
    const uint8_t *raw = NULL;
    size_t raw_len = 0;
    const uint8_t *enc = NULL;
    size_t enc_len = 0;
    const uint8_t *ctype = NULL;
    size_t ctype_len = 0;
    const struct pmsg *m = NULL;
    cJSON *type_meta = NULL;
    cJSON *obj = NULL;
    cJSON *root = NULL;
    const char *api_version;
    const char *kind;
    uint32_t num;
    unsigned wt;
    int rc = -EPROTO;

    *out = NULL;
    if (err != NULL && err_len > 0) {
        err[0] = '\0';
    }
    if (len > PROTO_MAX_BODY) {
        return fail(&c, -EPROTO, "protobuf body of %zu bytes exceeds %u", len, PROTO_MAX_BODY);
    }
    if (len < PROTO_MAGIC_LEN || memcmp(body, PROTO_MAGIC, PROTO_MAGIC_LEN) != 0) {
        return fail(&c, -EPROTO, "protobuf body does not start with the k8s magic");
    }
    b.off = PROTO_MAGIC_LEN;

    /* runtime.Unknown: keep the last occurrence of each field, skip unknown ones. */
    while (b.off < b.len) {
        const uint8_t **dp = NULL;
        size_t *np = NULL;

        if (rd_tag(&b, &num, &wt) != 0) {
            return fail(&c, -EPROTO, "Unknown: malformed field tag");
        }
        switch (num) {
        case 1:
            dp = &tm;
            np = &tm_len;
            break;
        case 2:
            dp = &raw;
            np = &raw_len;
            break;
        case 3:
            dp = &enc;
            np = &enc_len;
            break;
        case 4:
            dp = &ctype;
            np = &ctype_len;
            break;
        default:
            break;
        }
        if (dp == NULL) {
            if (skip_field(&b, wt) != 0) {
                return fail(&c, -EPROTO, "Unknown: malformed unknown field %u", num);
            }
            continue;
        }
        if (wt != WT_LEN || rd_bytes(&b, dp, np) != 0) {
            return fail(&c, -EPROTO, "Unknown: malformed field %u", num);
        }
    }

    if (enc_len > 0) {
        return fail(&c, -ENOTSUP, "protobuf contentEncoding \"%.*s\" is not supported",
                    (int)(enc_len > 64 ? 64 : enc_len), (const char *)enc);
    }
    if (ctype_len > 0 && !(ctype_len == strlen(PROTO_CONTENT_TYPE) &&
                           memcmp(ctype, PROTO_CONTENT_TYPE, ctype_len) == 0)) {
        return fail(&c, -ENOTSUP, "protobuf contentType \"%.*s\" is not supported",
                    (int)(ctype_len > 64 ? 64 : ctype_len), (const char *)ctype);
    }
    rc = decode_msg(&c, tm, tm_len, &m_typemeta, 1, &type_meta);
    if (rc != 0) {
        goto out;
    }
    api_version = member_str(type_meta, "apiVersion");
    kind = member_str(type_meta, "kind");
    for (size_t i = 0; i < sizeof(proto_kinds) / sizeof(proto_kinds[0]); i++) {
        if (strcmp(proto_kinds[i].api_version, api_version) == 0 &&
            strcmp(proto_kinds[i].kind, kind) == 0) {
            m = proto_kinds[i].msg;
        }
    }
    if (m == NULL) {
        rc = fail(&c, -ENOTSUP, "no protobuf decoder for apiVersion \"%.64s\" kind \"%.64s\"",
                  api_version, kind);
        goto out;
    }
    rc = decode_msg(&c, raw, raw_len, m, 1, &obj);
    if (rc != 0) {
        goto out;
    }
    root = cj(cJSON_CreateObject());
    cJSON_AddItemToObject(root, "kind", cj(cJSON_CreateString(kind)));
    cJSON_AddItemToObject(root, "apiVersion", cj(cJSON_CreateString(api_version)));
    while (obj->child != NULL) {
        cJSON *item = cJSON_DetachItemViaPointer(obj, obj->child);
        cJSON_AddItemToObject(root, item->string, item);
    }
    *out = root;
    rc = 0;
out:
    cJSON_Delete(type_meta);
    cJSON_Delete(obj);
    return rc;
}
