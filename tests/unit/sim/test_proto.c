/*
 * test_proto.c - sim/proto: the bodies real kubectl 1.32 POSTs (tests/data/kubectl-create-*.pb,
 * captured by tests/support/capture_kubectl.py), every field of the supported messages built
 * with a small encoder below (and every value type of the workload schema: inline structs,
 * IntOrString, Quantity, int32, packed lists), malformed input: every prefix and byte flip of
 * the captures, bad varints, lengths, wire types, values Go refuses and the PROTO_MAX_*
 * limits; and proto_order's Go member order.
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
static void envelope(struct enc *out, const char *api_version, const char *kind, struct enc *raw,
                     const char *cenc, const char *ctype)
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

Test(proto, kubectl_create_deployment)
{
    check_capture("kubectl-create-deployment.pb",
                  "{\"kind\":\"Deployment\",\"apiVersion\":\"apps/v1\",\"metadata\":{"
                  "\"name\":\"d1\",\"labels\":{\"app\":\"d1\"}},\"spec\":{\"replicas\":1,"
                  "\"selector\":{\"matchLabels\":{\"app\":\"d1\"}},\"template\":{\"metadata\":{"
                  "\"labels\":{\"app\":\"d1\"}},\"spec\":{\"containers\":[{\"name\":\"nginx\","
                  "\"image\":\"nginx\",\"resources\":{}}]}},\"strategy\":{}},\"status\":{}}");
}

Test(proto, kubectl_create_deployment_replicas_port_two_images)
{
    check_capture("kubectl-create-deployment-full.pb",
                  "{\"kind\":\"Deployment\",\"apiVersion\":\"apps/v1\",\"metadata\":{"
                  "\"name\":\"d2\",\"labels\":{\"app\":\"d2\"}},\"spec\":{\"replicas\":3,"
                  "\"selector\":{\"matchLabels\":{\"app\":\"d2\"}},\"template\":{\"metadata\":{"
                  "\"labels\":{\"app\":\"d2\"}},\"spec\":{\"containers\":[{\"name\":\"nginx\","
                  "\"image\":\"nginx:1.27\",\"ports\":[{\"containerPort\":80}],\"resources\":{}},{"
                  "\"name\":\"busybox\",\"image\":\"busybox\",\"resources\":{}}]}},"
                  "\"strategy\":{}},\"status\":{}}");
}

Test(proto, kubectl_create_services)
{
    check_capture("kubectl-create-service-clusterip.pb",
                  "{\"kind\":\"Service\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"s1\","
                  "\"labels\":{\"app\":\"s1\"}},\"spec\":{\"ports\":[{\"name\":\"80-8080\","
                  "\"protocol\":\"TCP\",\"port\":80,\"targetPort\":8080},{\"name\":\"443\","
                  "\"protocol\":\"TCP\",\"port\":443,\"targetPort\":443}],\"selector\":{\"app\":"
                  "\"s1\"},\"type\":\"ClusterIP\"},\"status\":{\"loadBalancer\":{}}}");
    check_capture("kubectl-create-service-headless.pb",
                  "{\"kind\":\"Service\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"s5\","
                  "\"labels\":{\"app\":\"s5\"}},\"spec\":{\"selector\":{\"app\":\"s5\"},"
                  "\"clusterIP\":\"None\",\"type\":\"ClusterIP\"},\"status\":{"
                  "\"loadBalancer\":{}}}");
    check_capture("kubectl-create-service-nodeport.pb",
                  "{\"kind\":\"Service\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"s2\","
                  "\"labels\":{\"app\":\"s2\"}},\"spec\":{\"ports\":[{\"name\":\"80-8080\","
                  "\"protocol\":\"TCP\",\"port\":80,\"targetPort\":8080,\"nodePort\":30080}],"
                  "\"selector\":{\"app\":\"s2\"},\"type\":\"NodePort\"},\"status\":{"
                  "\"loadBalancer\":{}}}");
    /* --tcp=443:https: a named target port is an IntOrString of type 1 */
    check_capture("kubectl-create-service-loadbalancer.pb",
                  "{\"kind\":\"Service\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"s3\","
                  "\"labels\":{\"app\":\"s3\"}},\"spec\":{\"ports\":[{\"name\":\"443-https\","
                  "\"protocol\":\"TCP\",\"port\":443,\"targetPort\":\"https\"}],\"selector\":{"
                  "\"app\":\"s3\"},\"type\":\"LoadBalancer\"},\"status\":{\"loadBalancer\":{}}}");
    check_capture("kubectl-create-service-externalname.pb",
                  "{\"kind\":\"Service\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"s4\","
                  "\"labels\":{\"app\":\"s4\"}},\"spec\":{\"ports\":[{\"name\":\"5432\","
                  "\"protocol\":\"TCP\",\"port\":5432,\"targetPort\":5432}],\"selector\":{"
                  "\"app\":\"s4\"},\"type\":\"ExternalName\",\"externalName\":\"db.example.com\"},"
                  "\"status\":{\"loadBalancer\":{}}}");
}

Test(proto, kubectl_create_serviceaccount)
{
    check_capture("kubectl-create-serviceaccount.pb",
                  "{\"kind\":\"ServiceAccount\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
                  "\"sa1\"}}");
}

Test(proto, kubectl_create_job_and_job_with_command)
{
    check_capture("kubectl-create-job.pb",
                  "{\"kind\":\"Job\",\"apiVersion\":\"batch/v1\",\"metadata\":{\"name\":\"j1\"},"
                  "\"spec\":{\"template\":{\"metadata\":{},\"spec\":{\"containers\":[{\"name\":"
                  "\"j1\",\"image\":\"busybox\",\"resources\":{}}],\"restartPolicy\":\"Never\"}}},"
                  "\"status\":{}}");
    check_capture("kubectl-create-job-command.pb",
                  "{\"kind\":\"Job\",\"apiVersion\":\"batch/v1\",\"metadata\":{\"name\":\"j2\"},"
                  "\"spec\":{\"template\":{\"metadata\":{},\"spec\":{\"containers\":[{\"name\":"
                  "\"j2\",\"image\":\"busybox\",\"command\":[\"sh\",\"-c\",\"echo hi\"],"
                  "\"resources\":{}}],\"restartPolicy\":\"Never\"}}},\"status\":{}}");
}

static const char *const captures[] = {"kubectl-create-configmap.pb",
                                       "kubectl-create-secret.pb",
                                       "kubectl-create-namespace.pb",
                                       "kubectl-create-deployment.pb",
                                       "kubectl-create-deployment-full.pb",
                                       "kubectl-create-service-clusterip.pb",
                                       "kubectl-create-service-headless.pb",
                                       "kubectl-create-service-nodeport.pb",
                                       "kubectl-create-service-loadbalancer.pb",
                                       "kubectl-create-service-externalname.pb",
                                       "kubectl-create-serviceaccount.pb",
                                       "kubectl-create-job.pb",
                                       "kubectl-create-job-command.pb"};
#define N_CAPTURES (sizeof(captures) / sizeof(captures[0]))

Test(proto, every_prefix_of_a_capture_is_rejected_or_decoded)
{
    for (size_t f = 0; f < N_CAPTURES; f++) {
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

    for (size_t f = 0; f < N_CAPTURES; f++) {
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
    cr_assert_str_eq(json,
                     "{\"kind\":\"Secret\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"s\"},"
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
    e_uint(&meta, 99, 5); /* unknown varint */
    e_tag(&meta, 98, 1);  /* unknown fixed64 */
    e_raw(&meta, "12345678", 8);
    e_tag(&meta, 97, 5); /* unknown fixed32 */
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
    e_map(&raw, 2, "k",
          "a\xff"
          "b\xc0\xaf"
          "c\xed\xa0\x80"
          "d\xc3\xa9",
          12);
    cr_assert_eq(decode_env("v1", "ConfigMap", &raw, &json, NULL, 0), 0);
    cr_assert_str_eq(json, "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
                           "\"ok\"},\"data\":{\"k\":\"a\xef\xbf\xbd"
                           "b\xef\xbf\xbd\xef\xbf\xbd"
                           "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                           "d\xc3\xa9\"}}");
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

/* ---- the workload schema: inline structs, IntOrString, Quantity, int32, packed lists ------ */

/* IntOrString {1 type, 2 intVal, 3 strVal} as field <num> of <e>. */
static void e_intorstr(struct enc *e, uint32_t num, uint64_t type, uint64_t ival, const char *sval)
{
    struct enc v;

    e_init(&v);
    e_uint(&v, 1, type);
    if (sval != NULL) {
        e_str(&v, 3, sval);
    } else {
        e_uint(&v, 2, ival);
    }
    e_msg(e, num, &v);
}

/* map<string,Quantity> entry: {1 key, 2 Quantity{1 string}}. */
static void e_qty_entry(struct enc *e, uint32_t num, const char *key, const char *qty)
{
    struct enc entry;
    struct enc q;

    e_init(&entry);
    e_str(&entry, 1, key);
    e_init(&q);
    e_str(&q, 1, qty);
    e_msg(&entry, 2, &q);
    e_msg(e, num, &entry);
}

/* A message holding just field <num> = string <v> (LocalObjectReference {1 name}, ...). */
static void e_msg_str(struct enc *e, uint32_t num, uint32_t inner, const char *v)
{
    struct enc m;

    e_init(&m);
    e_str(&m, inner, v);
    e_msg(e, num, &m);
}

/* The container of the pod template below: env from inline key selectors, probes with an
 * inline handler, a Quantity map, a kept zero pointer and an omitempty bool. */
static void workload_container(struct enc *c)
{
    struct enc ef, sref, env, vf, cmk, res, probe, handler, http, tcp, sc;

    e_init(c);
    e_str(c, 1, "c");
    e_init(&env);
    e_str(&env, 1, "E");
    e_init(&vf);
    e_init(&cmk);
    e_msg_str(&cmk, 1, 1, "app-config"); /* inline LocalObjectReference */
    e_str(&cmk, 2, "k");
    e_msg(&vf, 3, &cmk);
    e_msg(&env, 3, &vf);
    e_msg(c, 7, &env);
    e_init(&ef);
    e_init(&sref);
    e_msg_str(&sref, 1, 1, "s");
    e_uint(&sref, 2, 0); /* *bool false: kept */
    e_msg(&ef, 3, &sref);
    e_msg(c, 19, &ef);
    e_init(&res);
    e_qty_entry(&res, 1, "cpu", "500m");
    e_qty_entry(&res, 1, "memory", "128Mi");
    e_msg(c, 8, &res);
    e_init(&probe);
    e_init(&handler);
    e_init(&http);
    e_str(&http, 1, "/healthz");
    e_intorstr(&http, 2, 1, 0, "http");
    e_msg(&handler, 2, &http);
    e_msg(&probe, 1, &handler); /* inline ProbeHandler */
    e_uint(&probe, 2, 3);
    e_uint(&probe, 3, 0); /* timeoutSeconds 0: omitempty */
    e_msg(c, 10, &probe);
    e_init(&probe);
    e_init(&handler);
    e_init(&tcp);
    e_intorstr(&tcp, 1, 0, 8080, NULL);
    e_msg(&handler, 3, &tcp);
    e_msg(&probe, 1, &handler);
    e_msg(c, 11, &probe);
    e_init(&sc);
    e_uint(&sc, 4, 0); /* *int64 runAsUser 0: kept */
    e_msg(c, 15, &sc);
    e_uint(c, 17, 0); /* stdinOnce false: left out */
    e_uint(c, 16, 1); /* stdin true */
}

/* A configMap volume (inline VolumeSource, inline LocalObjectReference) and an ephemeral one
 * whose claim template selector is the deepest message the schema has. */
static void workload_volumes(struct enc *spec)
{
    struct enc vol, src, cm, item, eph, tmpl, pvc, sel, req, vres;

    e_init(&vol);
    e_str(&vol, 1, "cfg");
    e_init(&src);
    e_init(&cm);
    e_msg_str(&cm, 1, 1, "app-config");
    e_init(&item);
    e_str(&item, 1, "k");
    e_str(&item, 2, "p");
    e_msg(&cm, 2, &item);
    e_uint(&cm, 3, 420);
    e_msg(&src, 19, &cm);
    e_msg(&vol, 2, &src);
    e_msg(spec, 1, &vol);

    e_init(&vol);
    e_str(&vol, 1, "eph");
    e_init(&src);
    e_init(&eph);
    e_init(&tmpl);
    e_init(&pvc);
    e_str(&pvc, 1, "ReadWriteOnce");
    e_init(&sel);
    e_init(&req);
    e_str(&req, 1, "tier");
    e_str(&req, 2, "In");
    e_str(&req, 3, "a");
    e_msg(&sel, 2, &req);
    e_msg(&pvc, 4, &sel);
    e_init(&vres);
    e_qty_entry(&vres, 2, "storage", "1Gi");
    e_msg(&pvc, 2, &vres);
    e_msg(&tmpl, 2, &pvc);
    e_msg(&eph, 1, &tmpl);
    e_msg(&src, 29, &eph);
    e_msg(&vol, 2, &src);
    e_msg(spec, 1, &vol);
}

Test(proto, deployment_pod_template_every_value_type)
{
    struct enc raw, meta, dspec, tmpl, pspec, c, psc, packed;
    char err[256];
    char *json;

    e_init(&raw);
    e_init(&meta);
    e_str(&meta, 1, "web");
    e_msg(&raw, 1, &meta);
    e_init(&dspec);
    e_uint(&dspec, 5, (uint64_t)-1LL);   /* int32 -1, sign-extended to 10 bytes */
    e_uint(&dspec, 1, (1ULL << 32) + 5); /* int32 keeps the low 32 bits: 5 */
    e_init(&tmpl);
    e_init(&pspec);
    workload_volumes(&pspec);
    workload_container(&c);
    e_msg(&pspec, 2, &c);
    e_uint(&pspec, 11, 0); /* hostNetwork false: left out */
    e_init(&psc);
    e_init(&packed);
    e_varint(&packed, 1000);
    e_varint(&packed, 2000);
    e_bytes(&psc, 4, packed.b, packed.n); /* packed repeated int64 */
    free(packed.b);
    e_uint(&psc, 4, 3000); /* and one more, unpacked */
    e_msg(&pspec, 14, &psc);
    e_msg(&tmpl, 2, &pspec);
    e_msg(&dspec, 3, &tmpl);
    e_msg(&raw, 2, &dspec);
    cr_assert_eq(decode_env("apps/v1", "Deployment", &raw, &json, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(
        json,
        "{\"kind\":\"Deployment\",\"apiVersion\":\"apps/v1\",\"metadata\":{\"name\":\"web\"},"
        "\"spec\":{\"replicas\":5,\"template\":{\"spec\":{\"volumes\":[{\"name\":\"cfg\","
        "\"configMap\":{\"name\":\"app-config\",\"items\":[{\"key\":\"k\",\"path\":\"p\"}],"
        "\"defaultMode\":420}},{\"name\":\"eph\",\"ephemeral\":{\"volumeClaimTemplate\":{"
        "\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"selector\":{\"matchExpressions\":[{"
        "\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"a\"]}]},\"resources\":{"
        "\"requests\":{\"storage\":\"1Gi\"}}}}}}],\"containers\":[{\"name\":\"c\",\"envFrom\":"
        "[{\"secretRef\":{\"name\":\"s\",\"optional\":false}}],\"env\":[{\"name\":\"E\","
        "\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"app-config\",\"key\":\"k\"}}}],"
        "\"resources\":{\"limits\":{\"cpu\":\"500m\",\"memory\":\"128Mi\"}},\"livenessProbe\":"
        "{\"httpGet\":{\"path\":\"/healthz\",\"port\":\"http\"},\"initialDelaySeconds\":3},"
        "\"readinessProbe\":{\"tcpSocket\":{\"port\":8080}},\"securityContext\":{"
        "\"runAsUser\":0},\"stdin\":true}],\"securityContext\":{\"supplementalGroups\":[1000,"
        "2000,3000]}}},\"minReadySeconds\":-1}}");
    free(json);
}

/* A Job whose container resource field selector holds a Quantity message with no string: Go
 * reads the zero Quantity and prints "0"; repeated int32 exit codes, packed. */
Test(proto, job_zero_quantity_and_packed_int32)
{
    struct enc raw, spec, pfp, rule, codes, packed, tmpl, pspec, c, env, vf, rf, q;
    char *json;

    e_init(&raw);
    e_init(&spec);
    e_init(&pfp);
    e_init(&rule);
    e_str(&rule, 1, "FailJob");
    e_init(&codes);
    e_str(&codes, 2, "In");
    e_init(&packed);
    e_varint(&packed, 42);
    e_varint(&packed, (uint64_t)-3LL);
    e_bytes(&codes, 3, packed.b, packed.n);
    free(packed.b);
    e_msg(&rule, 2, &codes);
    e_msg(&pfp, 1, &rule);
    e_msg(&spec, 11, &pfp);
    e_init(&tmpl);
    e_init(&pspec);
    e_init(&c);
    e_str(&c, 1, "c");
    e_init(&env);
    e_str(&env, 1, "CPU");
    e_init(&vf);
    e_init(&rf);
    e_str(&rf, 2, "limits.cpu");
    e_init(&q);
    e_msg(&rf, 3, &q);
    e_msg(&vf, 2, &rf);
    e_msg(&env, 3, &vf);
    e_msg(&c, 7, &env);
    e_msg(&pspec, 2, &c);
    e_msg(&tmpl, 2, &pspec);
    e_msg(&spec, 6, &tmpl);
    e_uint(&spec, 5, 1);
    e_msg(&raw, 2, &spec);
    cr_assert_eq(decode_env("batch/v1", "Job", &raw, &json, NULL, 0), 0);
    cr_assert_str_eq(json, "{\"kind\":\"Job\",\"apiVersion\":\"batch/v1\",\"spec\":{"
                           "\"podFailurePolicy\":{\"rules\":[{\"action\":\"FailJob\","
                           "\"onExitCodes\":{\"operator\":\"In\",\"values\":[42,-3]}}]},"
                           "\"manualSelector\":true,\"template\":{\"spec\":{\"containers\":[{"
                           "\"name\":\"c\",\"env\":[{\"name\":\"CPU\",\"valueFrom\":{"
                           "\"resourceFieldRef\":{\"resource\":\"limits.cpu\",\"divisor\":\"0\"}}"
                           "}]}]}}}}");
    free(json);
}

/* The ServiceAccount's lists, and a ReplicationController's map selector and kept zero
 * replicas (a pointer). */
Test(proto, serviceaccount_and_replicationcontroller)
{
    struct enc raw, ref, spec;
    char *json;

    e_init(&raw);
    e_init(&ref);
    e_str(&ref, 3, "tok");
    e_str(&ref, 1, "Secret");
    e_msg(&raw, 2, &ref);
    e_msg_str(&raw, 3, 1, "regcred");
    e_uint(&raw, 4, 0);
    cr_assert_eq(decode_env("v1", "ServiceAccount", &raw, &json, NULL, 0), 0);
    cr_assert_str_eq(json, "{\"kind\":\"ServiceAccount\",\"apiVersion\":\"v1\",\"secrets\":[{"
                           "\"kind\":\"Secret\",\"name\":\"tok\"}],\"imagePullSecrets\":[{"
                           "\"name\":\"regcred\"}],\"automountServiceAccountToken\":false}");
    free(json);

    e_init(&raw);
    e_init(&spec);
    e_map(&spec, 2, "app", "a", 1);
    e_uint(&spec, 1, 0);
    e_msg(&raw, 2, &spec);
    cr_assert_eq(decode_env("v1", "ReplicationController", &raw, &json, NULL, 0), 0);
    cr_assert_str_eq(json, "{\"kind\":\"ReplicationController\",\"apiVersion\":\"v1\",\"spec\":{"
                           "\"replicas\":0,\"selector\":{\"app\":\"a\"}}}");
    free(json);
}

/* <raw> = a workload whose spec field <template_num> (Deployment/ReplicaSet 3, Job 6) is a
 * pod template with spec <pod_spec>; consumes <pod_spec>. */
static void e_workload(struct enc *raw, uint32_t template_num, struct enc *pod_spec)
{
    struct enc tmpl;
    struct enc spec;

    e_init(&tmpl);
    e_msg(&tmpl, 2, pod_spec);
    e_init(&spec);
    e_msg(&spec, template_num, &tmpl);
    e_init(raw);
    e_msg(raw, 2, &spec);
}

/* A ReplicaSet whose pod spec asks for resources {<field>: {cpu: <qty>}}. */
static int decode_quantity(uint32_t field, const char *qty, char *err, size_t err_len)
{
    struct enc raw, pspec, res;
    char *json = NULL;
    int rc;

    e_init(&pspec);
    e_init(&res);
    e_qty_entry(&res, field, "cpu", qty);
    e_msg(&pspec, 40, &res); /* PodSpec.resources */
    e_workload(&raw, 3, &pspec);
    rc = decode_env("apps/v1", "ReplicaSet", &raw, &json, err, err_len);
    free(json);
    return rc;
}

/* Values Go's decoder or encoder refuses are 400s, with the field named. */
Test(proto, bad_quantity_intorstr_and_packed_list_are_eproto)
{
    static const char *const bad_quantities[] = {"", "abc", "1Xi", "1e", "1e+", "--1", ".", "1.5x"};
    static const char *const good_quantities[] = {"0",   "+1",   "-2.5", ".5",  "1.", "100m",
                                                  "1e3", "2E-2", "5Ki",  "1Ei", "3n"};
    struct enc raw, spec, port, packed, psc;
    char *json;
    char err[256];

    for (size_t i = 0; i < sizeof(bad_quantities) / sizeof(bad_quantities[0]); i++) {
        cr_assert_eq(decode_quantity(1, bad_quantities[i], err, sizeof(err)), -EPROTO, "%s",
                     bad_quantities[i]);
        cr_assert(strstr(err, "limits: quantities must match") != NULL, "%s", err);
    }
    for (size_t i = 0; i < sizeof(good_quantities) / sizeof(good_quantities[0]); i++) {
        cr_assert_eq(decode_quantity(2, good_quantities[i], err, sizeof(err)), 0, "%s: %s",
                     good_quantities[i], err);
    }

    /* IntOrString type 2 cannot be printed */
    e_init(&raw);
    e_init(&spec);
    e_init(&port);
    e_intorstr(&port, 4, 2, 80, NULL);
    e_msg(&spec, 1, &port);
    e_msg(&raw, 2, &spec);
    cr_assert_eq(decode_env("v1", "Service", &raw, &json, err, sizeof(err)), -EPROTO);
    cr_assert(strstr(err, "targetPort: IntOrString type 2") != NULL, "%s", err);

    /* a packed run cut inside a varint, and a repeated int as fixed32 */
    e_init(&spec);
    e_init(&psc);
    e_init(&packed);
    e_varint(&packed, 1000);
    e_raw(&packed, "\x80", 1);
    e_bytes(&psc, 4, packed.b, packed.n);
    free(packed.b);
    e_msg(&spec, 14, &psc);
    e_workload(&raw, 6, &spec);
    cr_assert_eq(decode_env("batch/v1", "Job", &raw, &json, err, sizeof(err)), -EPROTO);
    cr_assert_str_eq(err, "PodSecurityContext.supplementalGroups: truncated packed element");
    e_init(&psc);
    e_tag(&psc, 4, 5);
    e_raw(&psc, "1234", 4);
    e_init(&spec);
    e_msg(&spec, 14, &psc);
    e_workload(&raw, 6, &spec);
    cr_assert_eq(decode_env("batch/v1", "Job", &raw, &json, err, sizeof(err)), -EPROTO);
    cr_assert_str_eq(err, "PodSecurityContext.supplementalGroups: wire type 5 does not match the "
                          "schema");
}

/* Packed integers count toward PROTO_MAX_ITEMS like any list element. */
Test(proto, packed_integers_count_toward_the_item_limit)
{
    struct enc raw, spec, psc, packed;
    char *json;
    char err[256];

    e_init(&packed);
    for (unsigned i = 0; i <= PROTO_MAX_ITEMS; i++) {
        e_varint(&packed, i);
    }
    e_init(&psc);
    e_bytes(&psc, 4, packed.b, packed.n);
    free(packed.b);
    e_init(&spec);
    e_msg(&spec, 14, &psc);
    e_workload(&raw, 3, &spec);
    cr_assert_eq(decode_env("apps/v1", "Deployment", &raw, &json, err, sizeof(err)), -EPROTO);
    cr_assert(strstr(err, "map entries and list elements") != NULL, "%s", err);
}

/* ---- proto_order ---------------------------------------------------------------------------- */

Test(proto, order_puts_members_in_go_order_and_sorts_maps)
{
    cJSON *obj = cJSON_Parse(
        "{\"status\":{},\"extra\":1,\"spec\":{\"template\":{\"spec\":{\"volumes\":[{\"configMap\":"
        "{\"defaultMode\":420,\"name\":\"c\"},\"name\":\"v\"}],\"containers\":[{\"image\":\"i\","
        "\"livenessProbe\":{\"periodSeconds\":10,\"httpGet\":{\"port\":80,\"path\":\"/\"}},"
        "\"name\":\"c\",\"x-unknown\":true}]},\"metadata\":{\"labels\":{\"b\":\"2\",\"a\":"
        "\"1\",\"B\":\"0\"}}},\"replicas\":1},\"metadata\":{\"labels\":{\"z\":\"1\",\"a\":\"2\"},"
        "\"name\":\"d\"},\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\"}");
    char *json;

    cr_assert(proto_order(obj));
    json = cJSON_PrintUnformatted(obj);
    cr_assert_str_eq(
        json,
        "{\"kind\":\"Deployment\",\"apiVersion\":\"apps/v1\",\"metadata\":{\"name\":\"d\","
        "\"labels\":{\"a\":\"2\",\"z\":\"1\"}},\"spec\":{\"replicas\":1,\"template\":{"
        "\"metadata\":{\"labels\":{\"B\":\"0\",\"a\":\"1\",\"b\":\"2\"}},\"spec\":{\"volumes\":"
        "[{\"name\":\"v\",\"configMap\":{\"name\":\"c\",\"defaultMode\":420}}],\"containers\":[{"
        "\"name\":\"c\",\"image\":\"i\",\"livenessProbe\":{\"httpGet\":{\"path\":\"/\","
        "\"port\":80},\"periodSeconds\":10},\"x-unknown\":true}]}}},\"status\":{},\"extra\":1}");
    free(json);
    cJSON_Delete(obj);

    obj = cJSON_Parse("{\"kind\":\"StatefulSet\",\"apiVersion\":\"apps/v1\"}");
    cr_assert_not(proto_order(obj));
    cJSON_Delete(obj);
    obj = cJSON_Parse("{\"kind\":\"Deployment\"}");
    cr_assert_not(proto_order(obj));
    cJSON_Delete(obj);
    obj = cJSON_Parse("[1]");
    cr_assert_not(proto_order(obj));
    cJSON_Delete(obj);
}

/* ---- what it refuses ------------------------------------------------------------------------ */

Test(proto, other_kinds_and_versions_are_enotsup)
{
    struct enc raw;
    char *json;
    char err[128];

    e_init(&raw);
    cr_assert_eq(decode_env("apps/v1", "StatefulSet", &raw, &json, err, sizeof(err)), -ENOTSUP);
    cr_assert_str_eq(err, "no protobuf decoder for apiVersion \"apps/v1\" kind \"StatefulSet\"");
    e_init(&raw);
    cr_assert_eq(decode_env("v1", "Deployment", &raw, &json, NULL, 0), -ENOTSUP);
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
    cr_assert_eq(decode_bytes("k8s\0\x28\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 15), -ENOTSUP);
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
    static const char *const out[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
                                      "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};

    for (size_t i = 0; i < 7; i++) {
        char *b = proto_base64_new(in[i], strlen(in[i]));
        cr_assert_str_eq(b, out[i]);
        free(b);
    }
}
