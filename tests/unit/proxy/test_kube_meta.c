/*
 * test_kube_meta.c - metadata extraction as kube-apiserver's decoder reads it: name,
 * namespace, resourceVersion and its byte span, labels, selectable and computed fields,
 * repeated keys, escaped NULs, limits, and blobs whose values selectors match decoded.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/blob.h"
#include "cache/rv.h"
#include "cache/selector.h"
#include "proxy/kube_json.h"
#include "proxy/kube_meta.h"
#include "tests/unit/proxy/json_inputs.h"

/* ---- metadata -------------------------------------------------------------------------- */

static const char *const pod_fields[] = {"spec.nodeName", "status.phase",  "spec.hostNetwork",
                                         "spec.priority", "spec.x",        "spec.containers",
                                         "spec.missing",  "metadata.name", NULL};

static const char *kv_get(const struct blob_kv *kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(kv[i].key, key) == 0) {
            return kv[i].val;
        }
    }
    return NULL;
}

Test(kube_meta, meta_parse_pod)
{
    size_t n = strlen(pod);
    char *d = exact(pod, n);
    struct kube_meta m;

    cr_assert_eq(kube_meta_parse(d, n, pod_fields, &m), 0);
    cr_expect_str_eq(m.meta.name, "a");
    cr_expect_str_eq(m.meta.ns, "default");
    cr_expect_str_eq(m.meta.rv_str, "12345");
    cr_expect_eq(m.meta.rv_len, 5);
    cr_expect_eq(memcmp(d + m.meta.rv_off, "12345", 5), 0);
    cr_expect_eq(d[m.meta.rv_off - 1], '"');
    cr_expect_eq(m.meta.n_labels, 2);
    cr_expect_str_eq(kv_get(m.meta.labels, m.meta.n_labels, "app"), "x");
    cr_expect_str_eq(kv_get(m.meta.labels, m.meta.n_labels, "tier"), "web");
    cr_expect_eq(m.meta.n_fields, 5);
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "spec.nodeName"), "n1");
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "status.phase"), "Running");
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "spec.hostNetwork"), "true");
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "spec.priority"), "0");
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "metadata.name"), "a");
    cr_expect_null(kv_get(m.meta.fields, m.meta.n_fields, "spec.x"));
    cr_expect_null(kv_get(m.meta.fields, m.meta.n_fields, "spec.containers"));
    cr_expect_null(kv_get(m.meta.fields, m.meta.n_fields, "spec.missing"));
    kube_meta_fini(&m);
    free(d);
}

Test(kube_meta, meta_parse_optional_parts)
{
    static const char node[] = "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"a\":\"1\",\"b\":2,"
                               "\"a\":\"3\",\"c\":null}},\"spec\":{\"unschedulable\":false,"
                               "\"big\":9007199254740992,\"neg\":-42,\"s\":{\"t\":\"deep\"}}}";
    static const char *const fields[] = {"spec.unschedulable", "spec.big", "spec.neg", "spec.s.t",
                                         "spec.s.t.u",         "",         NULL};
    struct kube_meta m;

    cr_assert_eq(kube_meta_parse(node, strlen(node), fields, &m), 0);
    cr_expect_null(m.meta.ns);
    cr_expect_str_eq(m.meta.rv_str, "");
    cr_expect_eq(m.meta.rv_len, 0);
    cr_expect_eq(m.meta.rv_off, 0);
    /* Non-string label values are skipped; a repeated key keeps its last value. */
    cr_expect_eq(m.meta.n_labels, 1);
    cr_expect_str_eq(kv_get(m.meta.labels, m.meta.n_labels, "a"), "3");
    cr_expect_eq(m.meta.n_fields, 4);
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "spec.unschedulable"), "false");
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "spec.big"), "9007199254740992");
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "spec.neg"), "-42");
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "spec.s.t"), "deep");
    kube_meta_fini(&m);
    kube_meta_fini(&m); /* idempotent */
    kube_meta_fini(NULL);
}

Test(kube_meta, meta_parse_rv_span_only_when_unescaped)
{
    static const char esc[] = "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\\u0032\"}}";
    static const char dup[] = "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"},"
                              "\"metadata\":{\"name\":\"b\",\"resourceVersion\":\"2\"}}";
    static const char ws[] = " {\"metadata\" : { \"resourceVersion\" : \"77\" , \"name\":\"a\"}} ";
    struct kube_meta m;

    cr_assert_eq(kube_meta_parse(esc, strlen(esc), NULL, &m), 0);
    cr_expect_str_eq(m.meta.rv_str, "12");
    cr_expect_eq(m.meta.rv_len, 0);
    kube_meta_fini(&m);
    /* A repeated "metadata": the last one, as Go's decoder and the byte scanner read it. */
    cr_assert_eq(kube_meta_parse(dup, strlen(dup), NULL, &m), 0);
    cr_expect_str_eq(m.meta.name, "b");
    cr_expect_str_eq(m.meta.rv_str, "2");
    cr_expect_eq(m.meta.rv_len, 1);
    cr_expect_eq(dup[m.meta.rv_off], '2');
    kube_meta_fini(&m);
    cr_assert_eq(kube_meta_parse(ws, strlen(ws), NULL, &m), 0);
    cr_expect_eq(m.meta.rv_len, 2);
    cr_expect_eq(memcmp(ws + m.meta.rv_off, "77", 2), 0);
    kube_meta_fini(&m);
}

/* Found by tests/fuzz/fuzz_reflector (corpus/kube_json/escaped-nul-keys): cJSON ends a
 * string at an escaped NUL, so a member "metadata\u0000" was read as "metadata" although Go
 * (and kube_json_member) see another key, and a repeated key was read as its first copy while
 * Go keeps the last. kube_meta_parse now sees what a Go client sees. */
Test(kube_meta, meta_parse_reads_keys_as_go_does)
{
    static const char nul_key[] = "{\"metadata\\u0000\":{\"name\":\"fake\"}}";
    static const char nul_key2[] = "{\"metadata\":{\"name\\u0000\":\"fake\",\"name\":\"real\","
                                   "\"labels\":{\"app\\u0000\":\"x\"}}}";
    static const char nul_rv[] = "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"5\\u0000\"}}";
    static const char not_nul[] = "{\"metadata\":{\"name\":\"a\\\\u0000\"}}";
    static const char dup[] =
        "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n1\",\"name\":\"b\","
        "\"namespace\":\"n2\",\"labels\":{\"x\":\"1\"},\"labels\":{\"y\":\"2\"}},"
        "\"spec\":{\"nodeName\":\"n1\"},\"spec\":{\"nodeName\":\"n2\"}}";
    static const char *const fields[] = {"spec.nodeName", NULL};
    struct kube_meta m;
    uint64_t rv = 0;

    cr_expect_eq(kube_meta_parse(nul_key, strlen(nul_key), NULL, &m), -EPROTO, "no metadata");
    cr_assert_eq(kube_meta_parse(nul_key2, strlen(nul_key2), NULL, &m), 0);
    cr_expect_str_eq(m.meta.name, "real");
    cr_expect_null(kv_get(m.meta.labels, m.meta.n_labels, "app"), "\"app\\u0000\" is not app");
    kube_meta_fini(&m);
    cr_assert_eq(kube_meta_parse(nul_rv, strlen(nul_rv), NULL, &m), 0);
    cr_expect_neq(rv_parse(m.meta.rv_str, &rv), 0, "\"5\\u0000\" is not rv 5");
    kube_meta_fini(&m);
    cr_assert_eq(kube_meta_parse(not_nul, strlen(not_nul), NULL, &m), 0);
    cr_expect_str_eq(m.meta.name, "a\\u0000", "an escaped backslash, then text");
    kube_meta_fini(&m);
    cr_assert_eq(kube_meta_parse(dup, strlen(dup), fields, &m), 0);
    cr_expect_str_eq(m.meta.name, "b");
    cr_expect_str_eq(m.meta.ns, "n2");
    cr_expect_eq(m.meta.n_labels, 1);
    cr_expect_str_eq(kv_get(m.meta.labels, m.meta.n_labels, "y"), "2");
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "spec.nodeName"), "n2");
    kube_meta_fini(&m);
}

Test(kube_meta, meta_parse_rejects)
{
    static const char *const bad[] = {
        "{}",
        "{\"metadata\":null}",
        "{\"metadata\":[]}",
        "{\"metadata\":{}}",
        "{\"metadata\":{\"name\":\"\"}}",
        "{\"metadata\":{\"name\":1}}",
        "{\"metadata\":{\"Name\":\"a\"}}",
        "{\"metadata\":{\"name\":\"a\",\"namespace\":1}}",
        "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":5}}",
        "{\"metadata\":{\"name\":\"a\"}} x",
        "{\"metadata\":{\"name\":\"a\"}",
        "[{\"metadata\":{\"name\":\"a\"}}]",
    };
    struct kube_meta m;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t n = strlen(bad[i]);
        char *d = exact(bad[i], n);

        cr_expect_eq(kube_meta_parse(d, n, NULL, &m), -EPROTO, "%s", bad[i]);
        cr_expect_null(m.arena);
        cr_expect_null(m.kv);
        free(d);
    }
}

Test(kube_meta, meta_parse_depth_capped_before_cjson)
{
    char *deep = nested(KUBE_JSON_MAX_DEPTH);
    char *doc = malloc(strlen(deep) + 64);
    struct kube_meta m;

    /* {"metadata":{"name":"a"},"a":[[[...]]]} */
    snprintf(doc, strlen(deep) + 64, "{\"metadata\":{\"name\":\"a\"},%s", deep + 1);
    cr_expect_eq(kube_meta_parse(doc, strlen(doc), NULL, &m), -EPROTO);
    free(deep);
    free(doc);
}

Test(kube_meta, blob_from_object)
{
    struct blob *b = kube_meta_blob(pod, strlen(pod), pod_fields);

    cr_assert_not_null(b);
    cr_expect_eq(b->len, strlen(pod));
    cr_expect_eq(memcmp(b->data, pod, b->len), 0);
    cr_expect_str_eq(b->key, "default/a");
    cr_expect_str_eq(b->rv_str, "12345");
    cr_expect_eq(b->rv, 12345);
    cr_expect_eq(memcmp(b->data + b->rv_off, "12345", b->rv_len), 0);
    cr_expect_str_eq(blob_label(b, "app"), "x");
    cr_expect_str_eq(blob_field(b, "spec.nodeName"), "n1");
    blob_unref(b);
    cr_expect_null(kube_meta_blob("{\"metadata\":{}}", 15, NULL));
}

/*
 * Label and field values written with escapes reach the store decoded, and the selectors
 * compare the decoded text, whether the value is the blob's own copy (first sight) or a
 * shared interned string (from the second on).
 */
Test(kube_meta, escaped_values_are_stored_and_matched_decoded)
{
    static const char obj[] = "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\",\"labels\":{"
                              "\"q\":\"a\\\"b\\u00e9\\\\c\\/\",\"e\":\"\",\"u\":\"\\u0041pp\"}},"
                              "\"spec\":{\"nodeName\":\"n\\\"1\\u00e9,=\\\\\"}}";
    static const char *const paths[] = {"spec.nodeName", NULL};
    char err[256];
    struct selector *by_node =
        selector_parse_fields("spec.nodeName=n\"1\xc3\xa9\\,\\=\\\\", err, sizeof(err));
    struct selector *other_node = selector_parse_fields("spec.nodeName=n\"1", err, sizeof(err));
    struct selector *by_label = selector_parse_labels("u=App,e=,q,q notin (a)", err, sizeof(err));
    struct selector *no_q = selector_parse_labels("!q", err, sizeof(err));

    cr_assert_not_null(by_node);
    cr_assert_not_null(other_node);
    cr_assert_not_null(by_label, "%s", err);
    cr_assert_not_null(no_q);
    for (int i = 0; i < 3; i++) {
        struct blob *b = kube_meta_blob(obj, strlen(obj), paths);

        cr_assert_not_null(b);
        cr_expect_str_eq(blob_label(b, "q"), "a\"b\xc3\xa9\\c/", "round %d", i);
        cr_expect_str_eq(blob_label(b, "e"), "");
        cr_expect_str_eq(blob_label(b, "u"), "App");
        cr_expect_str_eq(blob_field(b, "spec.nodeName"), "n\"1\xc3\xa9,=\\");
        cr_expect(selector_match(by_node, b), "round %d", i);
        cr_expect_not(selector_match(other_node, b));
        cr_expect(selector_match(by_label, b), "round %d", i);
        cr_expect_not(selector_match(no_q, b));
        blob_unref(b);
    }
    selector_free(by_node);
    selector_free(other_node);
    selector_free(by_label);
    selector_free(no_q);
}

Test(kube_meta, computed_fields_first_path_then_default_and_array_index)
{
    static const char obj[] = "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},"
                              "\"spec\":{\"nodeName\":\"n1\"},"
                              "\"status\":{\"podIPs\":[{\"ip\":\"10.0.0.7\"}]}}";
    static const char *const paths[] = {"spec.hostNetwork:spec.hostNetwork|=false",
                                        "status.podIP:status.podIP|status.podIPs.0.ip",
                                        "spec.nodeName", "missing:a.b|c.d", NULL};
    struct blob *b = kube_meta_blob(obj, strlen(obj), paths);

    cr_assert_not_null(b);
    cr_assert_str_eq(blob_field(b, "spec.hostNetwork"), "false", "absent bool defaults");
    cr_assert_str_eq(blob_field(b, "status.podIP"), "10.0.0.7", "second path, array index");
    cr_assert_str_eq(blob_field(b, "spec.nodeName"), "n1");
    cr_assert_null(blob_field(b, "missing"), "no path and no default: absent");
    cr_assert_eq(b->n_fields, 3);
    blob_unref(b);
}

/*
 * Strings decode as Go's decoder reads them, not as a C JSON library would: a lone surrogate
 * anywhere in the object is U+FFFD (the object is kept; cJSON refused the whole object), and
 * so is each byte of invalid raw UTF-8 (cJSON kept the raw bytes).
 */
Test(kube_meta, strings_decode_as_go)
{
    static const char obj[] = "{\"metadata\":{\"name\":\"p\",\"labels\":{\"s\":\"\\ud800x\","
                              "\"r\":\"a\xff"
                              "b\",\"pair\":\"\\ud83d\\ude00\"},"
                              "\"annotations\":{\"z\":\"\\udfff\"}},"
                              "\"spec\":{\"nodeName\":\"\xc3\"}}";
    static const char *const paths[] = {"spec.nodeName", NULL};
    struct blob *b = kube_meta_blob(obj, strlen(obj), paths);

    cr_assert_not_null(b, "a lone surrogate does not make the object unreadable");
    cr_expect_str_eq(blob_label(b, "s"), "\xef\xbf\xbdx");
    cr_expect_str_eq(blob_label(b, "r"), "a\xef\xbf\xbd"
                                         "b");
    cr_expect_str_eq(blob_label(b, "pair"), "\xf0\x9f\x98\x80");
    cr_expect_str_eq(blob_field(b, "spec.nodeName"), "\xef\xbf\xbd");
    blob_unref(b);
}

/* Surrounding and inner whitespace, many field specs (more than fit on the stack) and many
 * distinct first segments (more than one pass picks), values that stop a path (a scalar on
 * the way, an index out of range) and a number longer than 63 bytes. */
Test(kube_meta, many_fields_and_paths)
{
    static const char obj[] =
        " \n{ \"metadata\" : { \"name\" : \"p\" , \"labels\" : { \"a\" : \"1\" } } ,"
        "\"s\":{\"n\":7,\"f\":\"str\",\"l\":[{\"ip\":\"x\"},{\"ip\":\"y\"}]},"
        "\"t0\":{\"v\":0},\"t1\":{\"v\":1},\"t2\":{\"v\":2},\"t3\":{\"v\":3},\"t4\":{\"v\":4},"
        "\"t5\":{\"v\":5},\"t6\":{\"v\":6},\"t7\":{\"v\":7},\"t8\":{\"v\":8},\"t9\":{\"v\":9},"
        "\"ta\":{\"v\":10},\"tb\":{\"v\":11},\"tc\":{\"v\":12},\"td\":{\"v\":13},"
        "\"te\":{\"v\":14},\"tf\":{\"v\":15},\"tg\":{\"v\":16},"
        "\"long\":1.0000000000000000000000000000000000000000000000000000000000000000000,"
        "\"big\":1e300,\"neg\":-2.0,\"frac\":0.5} \n";
    static const char *const paths[] = {"t0.v",  "t1.v",     "t2.v",
                                        "t3.v",  "t4.v",     "t5.v",
                                        "t6.v",  "t7.v",     "t8.v",
                                        "t9.v",  "ta.v",     "tb.v",
                                        "tc.v",  "td.v",     "te.v",
                                        "tf.v",  "tg.v",     "s.n",
                                        "s.f.x", "s.l.1.ip", "s.l.2.ip",
                                        "s.l.x", "long",     "big",
                                        "neg",   "frac",     "k:s.missing|s.l.0.ip",
                                        NULL};
    struct kube_meta m;
    char key[8], want[8];

    cr_assert_eq(kube_meta_parse(obj, strlen(obj), paths, &m), 0);
    cr_expect_str_eq(m.meta.name, "p");
    cr_expect_eq(m.meta.n_labels, 1);
    for (int i = 0; i < 17; i++) {
        snprintf(key, sizeof(key), "t%c.v", "0123456789abcdefg"[i]);
        snprintf(want, sizeof(want), "%d", i);
        cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, key), want, "%s", key);
    }
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "s.n"), "7");
    cr_expect_null(kv_get(m.meta.fields, m.meta.n_fields, "s.f.x"), "a string on the way");
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "s.l.1.ip"), "y");
    cr_expect_null(kv_get(m.meta.fields, m.meta.n_fields, "s.l.2.ip"), "out of range");
    cr_expect_null(kv_get(m.meta.fields, m.meta.n_fields, "s.l.x"), "not an index");
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "long"), "1");
    cr_expect_null(kv_get(m.meta.fields, m.meta.n_fields, "big"), "beyond int64");
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "neg"), "-2");
    cr_expect_null(kv_get(m.meta.fields, m.meta.n_fields, "frac"));
    cr_expect_str_eq(kv_get(m.meta.fields, m.meta.n_fields, "k"), "x");
    cr_expect_eq(m.meta.n_fields, 22);
    kube_meta_fini(&m);
}
