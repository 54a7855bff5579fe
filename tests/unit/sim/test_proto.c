/*
 * test_proto.c - sim/proto: the bodies real kubectl 1.32 POSTs (tests/data/kubectl-create-*.pb,
 * captured by tests/support/capture_kubectl.py), every field of the supported messages built
 * with a small encoder below, and malformed input: every prefix and byte flip of the
 * captures, bad varints, lengths, wire types and the PROTO_MAX_* limits.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "sim/proto.h"

/* ---- fixtures ---------------------------------------------------------------------------- */

/* Reads tests/data/<name> (found from $KWP_SRC or from this file's own path). */
static uint8_t *read_data(const char *name, size_t *len)
{
    char path[4096];
    const char *src = getenv("KWP_SRC");
    const char *here = __FILE__;
    const char *cut = strstr(here, "tests/unit/sim/");
    FILE *f;
    uint8_t *buf;
    long n;

    if (src != NULL) {
        snprintf(path, sizeof(path), "%s/tests/data/%s", src, name);
    } else {
        cr_assert(cut != NULL);
        snprintf(path, sizeof(path), "%.*stests/data/%s", (int)(cut - here), here, name);
    }
    f = fopen(path, "rb");
    cr_assert(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    cr_assert(fread(buf, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Decodes and prints compactly; returns rc and sets *json (caller frees) on success. */
static int decode_print(const void *body, size_t len, char **json, char *err, size_t err_len)
{
    cJSON *obj = NULL;
    int rc = proto_decode(body, len, &obj, err, err_len);

    *json = NULL;
    if (rc == 0) {
        cr_assert(obj != NULL);
        *json = cJSON_PrintUnformatted(obj);
        cJSON_Delete(obj);
    } else {
        cr_assert(obj == NULL);
    }
    return rc;
}

/* ---- a tiny protobuf encoder ----------------------------------------------------------------- */

struct enc {
    uint8_t *b;
    size_t n;
    size_t cap;
};

static void e_init(struct enc *e)
{
    e->cap = 256;
    e->n = 0;
    e->b = malloc(e->cap);
}

static void e_raw(struct enc *e, const void *d, size_t n)
{
    while (e->n + n > e->cap) {
        e->cap *= 2;
        e->b = realloc(e->b, e->cap);
    }
    memcpy(e->b + e->n, d, n);
    e->n += n;
}

static void e_varint(struct enc *e, uint64_t v)
{
    uint8_t c;

    do {
        c = v & 0x7f;
        v >>= 7;
        if (v != 0) {
            c |= 0x80;
        }
        e_raw(e, &c, 1);
    } while (v != 0);
}

static void e_tag(struct enc *e, uint32_t num, unsigned wt)
{
    e_varint(e, (uint64_t)num << 3 | wt);
}

static void e_bytes(struct enc *e, uint32_t num, const void *d, size_t n)
{
    e_tag(e, num, 2);
    e_varint(e, n);
    e_raw(e, d, n);
}

static void e_str(struct enc *e, uint32_t num, const char *s)
{
    e_bytes(e, num, s, strlen(s));
}

static void e_msg(struct enc *e, uint32_t num, struct enc *sub)
{
    e_bytes(e, num, sub->b, sub->n);
    free(sub->b);
}

static void e_uint(struct enc *e, uint32_t num, uint64_t v)
{
    e_tag(e, num, 0);
    e_varint(e, v);
}

static void e_map(struct enc *e, uint32_t num, const char *k, const void *v, size_t vlen)
{
    struct enc m;

    e_init(&m);
    e_str(&m, 1, k);
    e_bytes(&m, 2, v, vlen);
    e_msg(e, num, &m);
}

/* "k8s\0" + Unknown{typeMeta, raw, contentEncoding, contentType}; consumes <raw>. */
static void envelope(struct enc *out, const char *api_version, const char *kind,
                     struct enc *raw, const char *cenc, const char *ctype)
{
    struct enc tm;

    e_init(out);
    e_raw(out, "k8s\0", 4);
    e_init(&tm);
    e_str(&tm, 1, api_version);
    e_str(&tm, 2, kind);
    e_msg(out, 1, &tm);
    e_msg(out, 2, raw);
    e_str(out, 3, cenc);
    e_str(out, 4, ctype);
}

static int decode_env(const char *api_version, const char *kind, struct enc *raw, char **json,
                      char *err, size_t err_len)
{
    struct enc env;
    int rc;

    envelope(&env, api_version, kind, raw, "", "");
    rc = decode_print(env.b, env.n, json, err, err_len);
    free(env.b);
    return rc;
}

/* ---- the captured kubectl bodies ------------------------------------------------------------ */

static void check_capture(const char *file, const char *want)
{
    size_t len;
    uint8_t *body = read_data(file, &len);
    char err[256];
    char *json;

    cr_assert_eq(decode_print(body, len, &json, err, sizeof(err)), 0, "%s: %s", file, err);
    cr_assert_str_eq(json, want);
    free(json);
    free(body);
}

Test(proto, kubectl_create_configmap)
{
    check_capture("kubectl-create-configmap.pb",
                  "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"cm1\"},"
                  "\"data\":{\"a\":\"b\",\"c\":\"d\"}}");
}

Test(proto, kubectl_create_secret_base64s_data)
{
    check_capture("kubectl-create-secret.pb",
                  "{\"kind\":\"Secret\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"s1\"},"
                  "\"data\":{\"k\":\"dg==\"}}");
}

Test(proto, kubectl_create_namespace_keeps_empty_spec_and_status)
{
    check_capture("kubectl-create-namespace.pb",
                  "{\"kind\":\"Namespace\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"ns1\"},"
                  "\"spec\":{},\"status\":{}}");
}

static const char *const captures[] = {"kubectl-create-configmap.pb", "kubectl-create-secret.pb",
                                       "kubectl-create-namespace.pb"};

Test(proto, every_prefix_of_a_capture_is_rejected_or_decoded)
{
    for (size_t f = 0; f < 3; f++) {
        size_t len;
        uint8_t *body = read_data(captures[f], &len);
        size_t rejected = 0;

        for (size_t n = 0; n < len; n++) {
            /* A fresh copy of exactly n bytes, so ASan sees any read past the end. */
            uint8_t *cut = malloc(n ? n : 1);
            char *json;
            memcpy(cut, body, n);
            int rc = decode_print(cut, n, &json, NULL, 0);
            /* (a cut before the kind leaves an empty one: -ENOTSUP) */
            cr_assert(rc == 0 || rc == -EPROTO || rc == -ENOTSUP, "%s prefix %zu: rc %d",
                      captures[f], n, rc);
            rejected += rc == -EPROTO;
            free(json);
            free(cut);
        }
        /* Most cuts land inside a length-delimited field; only field boundaries decode. */
        cr_assert_gt(rejected, len / 2);
        free(body);
    }
}

Test(proto, every_byte_of_a_capture_mutated_is_safe)
{
    static const uint8_t vals[] = {0x00, 0x01, 0x02, 0x07, 0x7f, 0x80, 0xff};

    for (size_t f = 0; f < 3; f++) {
        size_t len;
        uint8_t *body = read_data(captures[f], &len);

        for (size_t i = 0; i < len; i++) {
            for (size_t v = 0; v < sizeof(vals); v++) {
                uint8_t *copy = malloc(len);
                char *json;
                memcpy(copy, body, len);
                copy[i] = vals[v];
                int rc = decode_print(copy, len, &json, NULL, 0);
                cr_assert(rc == 0 || rc == -EPROTO || rc == -ENOTSUP);
                free(json);
                free(copy);
            }
        }
        free(body);
    }
}

/* ---- every field ------------------------------------------------------------------------ */

static void object_meta(struct enc *meta)
{
    struct enc ts;
    struct enc owner;

    e_init(meta);
    e_str(meta, 1, "n");
    e_str(meta, 2, "g-");
    e_str(meta, 3, "ns");
    e_str(meta, 5, "u1");
    e_str(meta, 6, "7");
    e_uint(meta, 7, 3);
    e_init(&ts);
    e_uint(&ts, 1, 1700000000);
    e_msg(meta, 8, &ts);
    e_map(meta, 11, "app", "web", 3);
    e_map(meta, 12, "x", "y", 1);
    e_init(&owner);
    e_str(&owner, 1, "ReplicaSet");
    e_str(&owner, 3, "rs");
    e_str(&owner, 4, "u2");
    e_str(&owner, 5, "apps/v1");
    e_uint(&owner, 6, 1);
    e_msg(meta, 13, &owner);
    e_str(meta, 14, "f1");
    e_str(meta, 14, "f2");
}

Test(proto, configmap_every_field_in_go_order)
{
    struct enc raw;
    struct enc meta;
    char *json;

    e_init(&raw);
    /* Wire order deliberately differs from Go's field order. */
    e_map(&raw, 3, "bin", "\x00\x01\xff", 3);
    e_uint(&raw, 4, 1);
    e_map(&raw, 2, "k", "v", 1);
    object_meta(&meta);
    e_msg(&raw, 1, &meta);
    cr_assert_eq(decode_env("v1", "ConfigMap", &raw, &json, NULL, 0), 0);
    cr_assert_str_eq(
        json,
        "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n\","
        "\"generateName\":\"g-\",\"namespace\":\"ns\",\"uid\":\"u1\",\"resourceVersion\":\"7\","
        "\"generation\":3,\"creationTimestamp\":\"2023-11-14T22:13:20Z\",\"labels\":{\"app\":"
        "\"web\"},\"annotations\":{\"x\":\"y\"},\"ownerReferences\":[{\"apiVersion\":\"apps/v1\","
        "\"kind\":\"ReplicaSet\",\"name\":\"rs\",\"uid\":\"u2\",\"controller\":true}],"
        "\"finalizers\":[\"f1\",\"f2\"]},\"immutable\":true,\"data\":{\"k\":\"v\"},"
        "\"binaryData\":{\"bin\":\"AAH/\"}}");
    free(json);
}

Test(proto, secret_type_string_data_and_binary_data)
{
    struct enc raw;
    struct enc meta;
    char *json;

    e_init(&raw);
    e_init(&meta);
    e_str(&meta, 1, "s");
    e_msg(&raw, 1, &meta);
    e_map(&raw, 2, "x", "\x00", 1);
    e_str(&raw, 3, "Opaque");
    e_map(&raw, 4, "a", "b", 1);
    e_uint(&raw, 5, 0);
    cr_assert_eq(decode_env("v1", "Secret", &raw, &json, NULL, 0), 0);
    cr_assert_str_eq(json, "{\"kind\":\"Secret\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"s\"},"
                           "\"immutable\":false,\"data\":{\"x\":\"AA==\"},\"stringData\":{\"a\":"
                           "\"b\"},\"type\":\"Opaque\"}");
    free(json);
}

Test(proto, namespace_finalizers_phase_and_conditions)
{
    struct enc raw;
    struct enc meta;
    struct enc spec;
    struct enc status;
    struct enc cond;
    char *json;

    e_init(&raw);
    e_init(&meta);
    e_str(&meta, 1, "team-a");
    e_msg(&raw, 1, &meta);
    e_init(&spec);
    e_str(&spec, 1, "kubernetes");
    e_msg(&raw, 2, &spec);
    e_init(&status);
    e_str(&status, 1, "Active");
    e_init(&cond);
    e_str(&cond, 1, "NamespaceDeletionDiscoveryFailure");
    e_str(&cond, 2, "False");
    e_msg(&status, 2, &cond);
    e_msg(&raw, 3, &status);
    cr_assert_eq(decode_env("v1", "Namespace", &raw, &json, NULL, 0), 0);
    cr_assert_str_eq(json,
                     "{\"kind\":\"Namespace\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
                     "\"team-a\"},\"spec\":{\"finalizers\":[\"kubernetes\"]},\"status\":{\"phase\":"
                     "\"Active\",\"conditions\":[{\"type\":\"NamespaceDeletionDiscoveryFailure\","
                     "\"status\":\"False\"}]}}");
    free(json);
}

Test(proto, managed_fields_embed_fields_v1_json)
{
    struct enc raw;
    struct enc meta;
    struct enc mf;
    struct enc fv1;
    char *json;

    e_init(&raw);
    e_init(&meta);
    e_str(&meta, 1, "c");
    e_init(&mf);
    e_str(&mf, 1, "kubectl-create");
    e_str(&mf, 2, "Update");
    e_str(&mf, 6, "FieldsV1");
    e_init(&fv1);
    e_str(&fv1, 1, "{\"f:data\":{\".\":{}}}");
    e_msg(&mf, 7, &fv1);
    e_msg(&meta, 17, &mf);
    e_msg(&raw, 1, &meta);
    cr_assert_eq(decode_env("v1", "ConfigMap", &raw, &json, NULL, 0), 0);
    cr_assert_str_eq(json, "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
                           "\"c\",\"managedFields\":[{\"manager\":\"kubectl-create\",\"operation\":"
                           "\"Update\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:data\":{\".\":"
                           "{}}}}]}}");
    free(json);
}

Test(proto, fields_v1_that_is_not_json_is_eproto)
{
    struct enc raw;
    struct enc meta;
    struct enc mf;
    struct enc fv1;
    char *json;
    char err[128];

    e_init(&raw);
    e_init(&meta);
    e_init(&mf);
    e_init(&fv1);
    e_str(&fv1, 1, "{\"f:data\":} trailing");
    e_msg(&mf, 7, &fv1);
    e_msg(&meta, 17, &mf);
    e_msg(&raw, 1, &meta);
    cr_assert_eq(decode_env("v1", "ConfigMap", &raw, &json, err, sizeof(err)), -EPROTO);
    cr_assert(strstr(err, "fieldsV1") != NULL, "%s", err);
}

Test(proto, repeated_key_and_scalar_keep_the_last_value_unknown_fields_skipped)
{
    struct enc raw;
    struct enc meta;
    char *json;

    e_init(&raw);
    e_init(&meta);
    e_str(&meta, 1, "first");
    e_str(&meta, 1, "second");
    e_uint(&meta, 99, 5);                     /* unknown varint */
    e_tag(&meta, 98, 1);                      /* unknown fixed64 */
    e_raw(&meta, "12345678", 8);
    e_tag(&meta, 97, 5);                      /* unknown fixed32 */
    e_raw(&meta, "1234", 4);
    e_str(&meta, 96, "unknown bytes");
    e_msg(&raw, 1, &meta);
    e_map(&raw, 2, "k", "1", 1);
    e_map(&raw, 2, "k", "2", 1);
    e_map(&raw, 2, "", "empty key", 9);
    cr_assert_eq(decode_env("v1", "ConfigMap", &raw, &json, NULL, 0), 0);
    cr_assert_str_eq(json, "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
                           "\"second\"},\"data\":{\"k\":\"2\",\"\":\"empty key\"}}");
    free(json);
}

Test(proto, invalid_utf8_becomes_replacement_character)
{
    struct enc raw;
    struct enc meta;
    char *json;

    e_init(&raw);
    e_init(&meta);
    e_str(&meta, 1, "ok");
    e_msg(&raw, 1, &meta);
    /* a lone 0xff, an overlong "/" (c0 af), a surrogate (ed a0 80), and valid "é" (c3 a9) */
    e_map(&raw, 2, "k", "a\xff" "b\xc0\xaf" "c\xed\xa0\x80" "d\xc3\xa9", 12);
    cr_assert_eq(decode_env("v1", "ConfigMap", &raw, &json, NULL, 0), 0);
    cr_assert_str_eq(json, "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
                           "\"ok\"},\"data\":{\"k\":\"a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd"
                           "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "d\xc3\xa9\"}}");
    free(json);
}

Test(proto, nul_in_a_string_is_eproto)
{
    struct enc raw;
    char *json;
    char err[128];

    e_init(&raw);
    e_map(&raw, 2, "k", "a\0b", 3);
    cr_assert_eq(decode_env("v1", "ConfigMap", &raw, &json, err, sizeof(err)), -EPROTO);
    cr_assert(strstr(err, "NUL") != NULL, "%s", err);
}

Test(proto, zero_time_is_omitted_and_out_of_range_time_is_eproto)
{
    struct enc raw;
    struct enc meta;
    struct enc ts;
    char *json;

    e_init(&raw);
    e_init(&meta);
    e_str(&meta, 1, "t");
    e_init(&ts); /* empty Time: the zero time */
    e_msg(&meta, 8, &ts);
    e_init(&ts); /* deletionTimestamp at 0001-01-01T00:00:00Z, the lowest printable */
    e_uint(&ts, 1, (uint64_t)-62135596800LL);
    e_msg(&meta, 9, &ts);
    e_msg(&raw, 1, &meta);
    cr_assert_eq(decode_env("v1", "ConfigMap", &raw, &json, NULL, 0), 0);
    cr_assert_str_eq(json, "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
                           "\"t\",\"deletionTimestamp\":\"0001-01-01T00:00:00Z\"}}");
    free(json);

    e_init(&raw);
    e_init(&meta);
    e_init(&ts);
    e_uint(&ts, 1, 253402300800ULL); /* year 10000 */
    e_msg(&meta, 8, &ts);
    e_msg(&raw, 1, &meta);
    cr_assert_eq(decode_env("v1", "ConfigMap", &raw, &json, NULL, 0), -EPROTO);
}

Test(proto, negative_int64_and_kept_zero_grace_period)
{
    struct enc raw;
    struct enc meta;
    char *json;

    e_init(&raw);
    e_init(&meta);
    e_str(&meta, 1, "g");
    e_uint(&meta, 7, (uint64_t)-2LL);
    e_uint(&meta, 10, 0);
    e_msg(&raw, 1, &meta);
    cr_assert_eq(decode_env("v1", "ConfigMap", &raw, &json, NULL, 0), 0);
    cr_assert_str_eq(json, "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
                           "\"g\",\"generation\":-2,\"deletionGracePeriodSeconds\":0}}");
    free(json);
}

/* ---- what it refuses ------------------------------------------------------------------------ */

Test(proto, other_kinds_and_versions_are_enotsup)
{
    struct enc raw;
    char *json;
    char err[128];

    e_init(&raw);
    cr_assert_eq(decode_env("apps/v1", "Deployment", &raw, &json, err, sizeof(err)), -ENOTSUP);
    cr_assert_str_eq(err, "no protobuf decoder for apiVersion \"apps/v1\" kind \"Deployment\"");
    e_init(&raw);
    cr_assert_eq(decode_env("v1", "Pod", &raw, &json, NULL, 0), -ENOTSUP);
    e_init(&raw);
    cr_assert_eq(decode_env("v2", "ConfigMap", &raw, &json, NULL, 0), -ENOTSUP);
}

Test(proto, content_encoding_and_foreign_content_type_are_enotsup)
{
    struct enc raw;
    struct enc env;
    char *json;

    e_init(&raw);
    envelope(&env, "v1", "ConfigMap", &raw, "gzip", "");
    cr_assert_eq(decode_print(env.b, env.n, &json, NULL, 0), -ENOTSUP);
    free(env.b);
    e_init(&raw);
    envelope(&env, "v1", "ConfigMap", &raw, "", "application/json");
    cr_assert_eq(decode_print(env.b, env.n, &json, NULL, 0), -ENOTSUP);
    free(env.b);
    e_init(&raw);
    envelope(&env, "v1", "ConfigMap", &raw, "", PROTO_CONTENT_TYPE);
    cr_assert_eq(decode_print(env.b, env.n, &json, NULL, 0), 0);
    cr_assert_str_eq(json, "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\"}");
    free(json);
    free(env.b);
}

static int decode_bytes(const char *b, size_t n)
{
    char *json;
    uint8_t *copy = malloc(n ? n : 1);
    int rc;

    memcpy(copy, b, n);
    rc = decode_print(copy, n, &json, NULL, 0);
    free(json);
    free(copy);
    return rc;
}

Test(proto, malformed_envelopes_are_eproto)
{
    char err[128];
    cJSON *obj = (cJSON *)1;

    cr_assert_eq(proto_decode("", 0, &obj, err, sizeof(err)), -EPROTO);
    cr_assert(obj == NULL);
    cr_assert_str_eq(err, "protobuf body does not start with the k8s magic");
    cr_assert_eq(decode_bytes("k8s", 3), -EPROTO);
    cr_assert_eq(decode_bytes("{\"kind\":\"ConfigMap\"}", 20), -EPROTO);
    /* magic alone: an empty Unknown has no kind */
    cr_assert_eq(decode_bytes("k8s\0", 4), -ENOTSUP);
    /* truncated varint tag */
    cr_assert_eq(decode_bytes("k8s\0\x80", 5), -EPROTO);
    /* varint of 11 bytes (in unknown field 5) */
    cr_assert_eq(decode_bytes("k8s\0\x28\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 16),
                 -EPROTO);
    /* tenth byte above 1 overflows 64 bits */
    cr_assert_eq(decode_bytes("k8s\0\x28\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 15), -EPROTO);
    /* ... while the largest valid one, 2^64-1, is read (and skipped) */
    cr_assert_eq(decode_bytes("k8s\0\x28\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 15),
                 -ENOTSUP);
    /* length past the end */
    cr_assert_eq(decode_bytes("k8s\0\x0a\x05\x0a\x02v1", 10), -EPROTO);
    /* field number 0 */
    cr_assert_eq(decode_bytes("k8s\0\x02\x00", 6), -EPROTO);
    /* group wire types, and the nonexistent 6/7 */
    cr_assert_eq(decode_bytes("k8s\0\x2b", 5), -EPROTO);
    cr_assert_eq(decode_bytes("k8s\0\x2e", 5), -EPROTO);
    cr_assert_eq(decode_bytes("k8s\0\x2f", 5), -EPROTO);
    /* typeMeta sent as a varint */
    cr_assert_eq(decode_bytes("k8s\0\x08\x01", 6), -EPROTO);
    /* fixed64 cut short in an unknown Unknown field */
    cr_assert_eq(decode_bytes("k8s\0\x29\x01\x02", 7), -EPROTO);
    /* and err may be NULL */
    cr_assert_eq(proto_decode("x", 1, &obj, NULL, 0), -EPROTO);
}

Test(proto, schema_wire_type_mismatch_is_eproto)
{
    struct enc raw;
    char *json;
    char err[128];

    e_init(&raw);
    e_uint(&raw, 1, 5); /* metadata as a varint */
    cr_assert_eq(decode_env("v1", "ConfigMap", &raw, &json, err, sizeof(err)), -EPROTO);
    cr_assert_str_eq(err, "ConfigMap.metadata: wire type 0 does not match the schema");
    e_init(&raw);
    e_str(&raw, 4, "yes"); /* immutable as bytes */
    cr_assert_eq(decode_env("v1", "ConfigMap", &raw, &json, NULL, 0), -EPROTO);
}

Test(proto, item_limit_is_eproto)
{
    struct enc raw;
    char *json;
    char err[128];

    e_init(&raw);
    for (unsigned i = 0; i <= PROTO_MAX_ITEMS; i++) {
        e_map(&raw, 2, "", "", 0);
    }
    cr_assert_eq(decode_env("v1", "ConfigMap", &raw, &json, err, sizeof(err)), -EPROTO);
    cr_assert(strstr(err, "map entries") != NULL, "%s", err);

    e_init(&raw);
    for (unsigned i = 0; i < PROTO_MAX_ITEMS; i++) {
        e_map(&raw, 2, "", "", 0);
    }
    cr_assert_eq(decode_env("v1", "ConfigMap", &raw, &json, NULL, 0), 0);
    free(json);
}

Test(proto, body_over_the_limit_is_eproto_without_reading_it)
{
    size_t n = PROTO_MAX_BODY + 1;
    uint8_t *big = calloc(1, n);
    cJSON *obj;

    memcpy(big, "k8s\0", 4);
    cr_assert_eq(proto_decode(big, n, &obj, NULL, 0), -EPROTO);
    free(big);
}

/* ---- helpers ------------------------------------------------------------------------------ */

Test(proto, content_type_matching)
{
    cr_assert(proto_is_content_type("application/vnd.kubernetes.protobuf"));
    cr_assert(proto_is_content_type("Application/VND.Kubernetes.Protobuf; charset=binary"));
    cr_assert(proto_is_content_type(" application/vnd.kubernetes.protobuf ;x=y"));
    cr_assert(proto_is_content_type("application/vnd.kubernetes.protobuf;stream=watch"));
    cr_assert(!proto_is_content_type("application/json"));
    cr_assert(!proto_is_content_type("application/vnd.kubernetes.protobufx"));
    cr_assert(!proto_is_content_type(""));
    cr_assert(!proto_is_content_type(NULL));
}

Test(proto, base64_rfc4648_vectors)
{
    static const char *const in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const out[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=",
                                      "Zm9vYmFy"};

    for (size_t i = 0; i < 7; i++) {
        char *b = proto_base64_new(in[i], strlen(in[i]));
        cr_assert_str_eq(b, out[i]);
        free(b);
    }
}
