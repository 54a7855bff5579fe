/*
 * test_transforms.c - objects as negotiated (proxy/transforms.h): a built-in's
 * PartialObjectMetadata is its stored metadata span (rv override spliced in), a custom
 * resource's metadata re-ordered into metav1.ObjectMeta order, the object as a GET shows it,
 * list envelopes, and the internal type names of errNotAcceptable (the printers' own tests
 * are in test_printers.c). Black-box.
 */
#include "proxy/transforms.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/sbuf.h"
#include "proxy/apires.h"
#include "proxy/negotiate.h"
#include "proxy/printers.h"

/* ---- helpers ----------------------------------------------------------------------------- */

/* A core/v1 built-in resource description (no cache behind it). */
static struct apires core_ar(const char *plural)
{
    struct apires ar;

    memset(&ar, 0, sizeof(ar));
    ar.kind = *apires_builtin("", "v1", plural);
    snprintf(ar.api_version, sizeof(ar.api_version), "v1");
    return ar;
}

/* ---- PartialObjectMetadata --------------------------------------------------------------- */

static char *joined(const struct pieces *pc)
{
    struct sbuf sb = {0};

    for (size_t i = 0; i < pc->n; i++) {
        sbuf_put(&sb, pc->iov[i].iov_base, pc->iov[i].iov_len);
    }
    return sb.p;
}

Test(transforms, pom_of_a_builtin_is_its_metadata_span)
{
    struct apires ar = core_ar("pods");
    struct negotiate neg = {.as = NEGOTIATE_AS_POM};
    const char *obj = "{\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"12\",\"labels\":"
                      "{\"a\":\"b\"}},\"spec\":{}}";
    const char *rv = strstr(obj, "12");
    struct transforms_obj ov = {obj, strlen(obj), (size_t)(rv - obj), 2, "15", true};
    struct transforms_ctx tc = {&ar, &neg, "", 0};
    struct pieces pc = {0};
    char *got;

    transforms_pom(&pc, &tc, &ov);
    pieces_resolve(&pc, pc.sb.p);
    got = joined(&pc);
    cr_assert_str_eq(got, "{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\","
                          "\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"15\",\"labels\":"
                          "{\"a\":\"b\"}}}");
    cr_assert_eq(pc.sb.len, 0u, "no byte of a built-in's metadata is rebuilt");
    free(got);
    sbuf_free(&pc.sb);
}

Test(transforms, pom_of_a_custom_resource_follows_object_meta_order)
{
    struct apires ar = core_ar("configmaps");
    struct negotiate neg = {.as = NEGOTIATE_AS_POM, .v1beta1 = true};
    const char *obj =
        "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"annotations\":{},"
        "\"creationTimestamp\":\"2024-01-01T00:00:00Z\",\"extra\":1,\"generation\":1,"
        "\"labels\":{\"a\":\"b\"},\"managedFields\":[{\"apiVersion\":\"example.com/v1\","
        "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{},\"manager\":\"m\",\"operation\":\"Update\","
        "\"time\":null}],\"name\":\"w\",\"namespace\":\"ns\",\"ownerReferences\":[{"
        "\"blockOwnerDeletion\":true,\"kind\":\"K\",\"name\":\"o\",\"uid\":\"u\"}],"
        "\"resourceVersion\":\"9\",\"uid\":\"x\"},\"spec\":{}}";
    struct transforms_obj ov = {obj, strlen(obj), 0, 0, "9", false};
    struct transforms_ctx tc = {&ar, &neg, "", 0};
    struct pieces pc = {0};
    char *got;

    ar.kind.builtin = false;
    transforms_pom(&pc, &tc, &ov);
    pieces_resolve(&pc, pc.sb.p);
    got = joined(&pc);
    cr_assert_str_eq(got,
                     "{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1beta1\","
                     "\"metadata\":{\"name\":\"w\",\"namespace\":\"ns\",\"uid\":\"x\","
                     "\"resourceVersion\":\"9\",\"generation\":1,\"creationTimestamp\":"
                     "\"2024-01-01T00:00:00Z\",\"labels\":{\"a\":\"b\"},\"ownerReferences\":[{"
                     "\"apiVersion\":\"\",\"kind\":\"K\",\"name\":\"o\",\"uid\":\"u\","
                     "\"blockOwnerDeletion\":true}],\"managedFields\":[{\"manager\":\"m\","
                     "\"operation\":\"Update\",\"apiVersion\":\"example.com/v1\",\"fieldsType\":"
                     "\"FieldsV1\",\"fieldsV1\":{}}]}}");
    free(got);
    sbuf_free(&pc.sb);
}

Test(transforms, internal_type_names)
{
    struct apires ar = core_ar("pods");
    char t[128];

    transforms_internal_type(&ar.kind, false, t, sizeof(t));
    cr_assert_str_eq(t, "*core.Pod");
    transforms_internal_type(&ar.kind, true, t, sizeof(t));
    cr_assert_str_eq(t, "*core.PodList");
    ar.kind = *apires_builtin("apps", "v1", "deployments");
    transforms_internal_type(&ar.kind, true, t, sizeof(t));
    cr_assert_str_eq(t, "*apps.DeploymentList");
    ar.kind.builtin = false;
    transforms_internal_type(&ar.kind, false, t, sizeof(t));
    cr_assert_str_eq(t, "*unstructured.Unstructured");
}

/* ---- the object as stored, and list envelopes -------------------------------------------- */

static char *joined_iov(const struct iovec *iov, size_t n)
{
    struct sbuf sb = {0};

    for (size_t i = 0; i < n; i++) {
        sbuf_put(&sb, iov[i].iov_base, iov[i].iov_len);
    }
    return sb.p ? sb.p : strdup("");
}

/* Built-ins get their typemeta in front ({} stays one object); the rv override replaces the
 * stored resourceVersion's bytes; custom resources are sent as stored. */
Test(transforms, object_as_a_get_shows_it)
{
    struct apires ar = core_ar("pods");
    char tm[400];
    size_t tm_len = transforms_typemeta(&ar, tm, sizeof(tm)), total, n;
    const char *obj = "{\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"12\"}}";
    struct transforms_obj ov = {obj, strlen(obj), (size_t)(strstr(obj, "12") - obj), 2, "15", true};
    struct transforms_obj empty = {"{ }", 3, 0, 0, "", false};
    struct iovec iov[TRANSFORMS_OBJECT_IOV];
    char *got;

    cr_assert_str_eq(tm, "{\"kind\":\"Pod\",\"apiVersion\":\"v1\"");
    cr_assert_eq(tm_len, strlen(tm));
    n = transforms_object_iov(tm, tm_len, &ov, iov, &total);
    got = joined_iov(iov, n);
    cr_assert_str_eq(got, "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p\","
                          "\"resourceVersion\":\"15\"}}");
    cr_assert_eq(total, strlen(got));
    free(got);
    n = transforms_object_iov(tm, tm_len, &empty, iov, &total);
    got = joined_iov(iov, n);
    cr_assert_str_eq(got, "{\"kind\":\"Pod\",\"apiVersion\":\"v1\"}");
    free(got);
    ar.kind.builtin = false;
    cr_assert_eq(transforms_typemeta(&ar, tm, sizeof(tm)), 0u);
    cr_assert_str_eq(tm, "");
    ov.override = false;
    n = transforms_object_iov(tm, 0, &ov, iov, &total);
    got = joined_iov(iov, n);
    cr_assert_str_eq(got, obj);
    free(got);
}

/* The envelope up to the first item, and what closes it: an empty transformed list says
 * null (asPartialObjectMetadataList and rest's default convertor append to nil slices). */
Test(transforms, list_envelopes)
{
    struct apires ar = core_ar("pods");
    struct negotiate neg = {.as = NEGOTIATE_AS_NONE};
    struct transforms_ctx tc = {&ar, &neg, "", 0};
    const char *meta = "{\"resourceVersion\":\"7\"}";
    struct sbuf sb = {0};
    const char *tail;

    tail = transforms_list_head(&sb, &tc, meta, 0);
    cr_assert_str_eq(sb.p, "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":"
                           "{\"resourceVersion\":\"7\"},\"items\":[");
    cr_assert_str_eq(tail, "]}\n");
    sbuf_free(&sb);

    neg.as = NEGOTIATE_AS_POML;
    neg.v1beta1 = true;
    tail = transforms_list_head(&sb, &tc, meta, 0);
    cr_assert_str_eq(sb.p, "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":"
                           "\"meta.k8s.io/v1beta1\",\"metadata\":{\"resourceVersion\":\"7\"},"
                           "\"items\":null");
    cr_assert_str_eq(tail, "}\n");
    sbuf_free(&sb);
    tail = transforms_list_head(&sb, &tc, meta, 2);
    cr_assert(sb.len > 0 && sb.p[sb.len - 1] == '[');
    cr_assert_str_eq(tail, "]}\n");
    sbuf_free(&sb);

    neg.as = NEGOTIATE_AS_TABLE;
    neg.v1beta1 = false;
    neg.printer = printers_default();
    tail = transforms_list_head(&sb, &tc, meta, 0);
    cr_assert(strstr(sb.p, "{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":"
                           "{\"resourceVersion\":\"7\"},\"columnDefinitions\":") == sb.p);
    cr_assert(strstr(sb.p, ",\"rows\":null") != NULL, "rest's default convertor: nil rows");
    cr_assert_str_eq(tail, "}\n");
    sbuf_free(&sb);
    neg.printer = printers_find("", "pods");
    tail = transforms_list_head(&sb, &tc, meta, 0);
    cr_assert(sb.len > 0 && sb.p[sb.len - 1] == '[', "a kube printer: an empty slice");
    cr_assert_str_eq(tail, "]}\n");
    sbuf_free(&sb);
}
