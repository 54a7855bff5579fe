/*
 * test_handlers.c - the static helpers of proxy/handlers.c that content negotiation is built
 * from, tested directly (the h2o way: the .c is included): goautoneg's Accept parsing and
 * kube-apiserver's choice, the gzip token, Go's json.Indent as a streaming state machine,
 * the gzip content reader (inflated back) and a custom resource's metadata re-ordered into
 * metav1.ObjectMeta order (the printers' own tests are in test_printers.c).
 *
 * Expected bytes come from the Go sources named in each test (encoding/json indent.go,
 * negotiate.go).
 */
#include "proxy/handlers.c"
#include "tests/support/hreq_bare.h"

#include <criterion/criterion.h>
#include <malloc.h>
#include <zlib.h>

/* ---- helpers --------------------------------------------------------------------------- */

/* A core/v1 built-in resource description (no cache behind it). */
static struct apires core_ar(const char *plural)
{
    struct apires ar;

    memset(&ar, 0, sizeof(ar));
    ar.kind = *apires_builtin("", "v1", plural);
    snprintf(ar.api_version, sizeof(ar.api_version), "v1");
    return ar;
}

/* Indents <in> in one call. */
static char *indent_all(const char *in)
{
    size_t n;

    return indent_dup(in, strlen(in), &n);
}

/* Indents <in> fed in <in_chunk>-byte pieces into <out_chunk>-byte buffers. */
static char *indent_chunked(const char *in, size_t in_chunk, size_t out_chunk)
{
    struct indent st;
    struct sbuf sb = {0};
    size_t len = strlen(in), pos = 0;
    char buf[64];

    cr_assert_leq(out_chunk, sizeof(buf));
    indent_init(&st);
    for (;;) {
        size_t take = len - pos < in_chunk ? len - pos : in_chunk, used = 0;
        size_t o = indent_run(&st, in + pos, take, &used, buf, out_chunk);
        sbuf_put(&sb, buf, o);
        pos += used;
        if (pos == len && o == 0) {
            break;
        }
    }
    return sb.p ? sb.p : strdup("");
}

/* ---- json.Indent -------------------------------------------------------------------------- */

Test(handlers, indent_matches_go_json_indent)
{
    static const struct {
        const char *in;
        const char *out;
    } cases[] = {
        {"{}", "{}"},
        {"[]", "[]"},
        {"{\"a\":1}", "{\n  \"a\": 1\n}"},
        {"[1,2]", "[\n  1,\n  2\n]"},
        {"{\"a\":[1,{\"b\":null}],\"c\":{},\"d\":[],\"e\":{\"f\":true}}\n",
         "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"c\": {},\n  \"d\": "
         "[],\n"
         "  \"e\": {\n    \"f\": true\n  }\n}"},
        /* punctuation and escapes inside strings are copied, whitespace outside dropped */
        {"{ \"k\" : \"a,b:{c}[d] \\\"q\\\" \\\\\" ,\"x\":\"\\u003c\" }\n",
         "{\n  \"k\": \"a,b:{c}[d] \\\"q\\\" \\\\\",\n  \"x\": \"\\u003c\"\n}"},
        {"\"s\"", "\"s\""},
        {"[[[]]]", "[\n  [\n    []\n  ]\n]"},
        {"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
         "\"message\":\"m\",\"reason\":\"NotAcceptable\",\"code\":406}",
         "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n"
         "  \"status\": \"Failure\",\n  \"message\": \"m\",\n  \"reason\": \"NotAcceptable\",\n"
         "  \"code\": 406\n}"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = indent_all(cases[i].in);
        cr_assert_str_eq(got, cases[i].out, "case %zu", i);
        free(got);
    }
}

Test(handlers, indent_streams_through_any_buffer_sizes)
{
    const char *in = "{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"a\\\"},{\","
                     "\"labels\":{\"x\":\"[y]\"}},\"spec\":{\"containers\":[{\"n\":1},{}]}},{}]}\n";
    char *want = indent_all(in);

    for (size_t ic = 1; ic <= 9; ic += 2) {
        for (size_t oc = 1; oc <= 40; oc += 13) {
            char *got = indent_chunked(in, ic, oc);
            cr_assert_str_eq(got, want, "input chunks %zu, output chunks %zu", ic, oc);
            free(got);
        }
    }
    free(want);
}

Test(handlers, indent_count_mode_equals_output_length)
{
    struct iovec iov[3] = {
        {(void *)"{\"a\":[1,", 8}, {(void *)"2],\"b\":{\"c\":\"d\"}", 16}, {(void *)"}\n", 2}};
    char *full = indent_all("{\"a\":[1,2],\"b\":{\"c\":\"d\"}}\n");

    cr_assert_eq(pretty_length(iov, 3, SIZE_MAX), strlen(full));
    cr_assert_lt(pretty_length(iov, 3, 3), strlen(full), "stops early past the limit");
    free(full);
}

/* ---- Accept negotiation ----------------------------------------------------------------- */

struct neg_case {
    const char *accept;
    int rc;
    enum neg_as as;
    bool v1beta1;
    bool pretty;
    bool status_indent;
};

static void check_neg(const struct apires *ar, const struct neg_case *c)
{
    struct neg n;
    int rc = neg_accept(c->accept, false, ar, &n);

    cr_assert_eq(rc, c->rc, "Accept \"%s\": rc %d, expected %d", c->accept ? c->accept : "(none)",
                 rc, c->rc);
    if (rc == 0) {
        cr_assert_eq(n.as, c->as, "Accept \"%s\": as %d, expected %d", c->accept, n.as, c->as);
        cr_assert_eq(n.v1beta1, c->v1beta1, "Accept \"%s\": v1beta1", c->accept);
        cr_assert_eq(n.pretty, c->pretty, "Accept \"%s\": pretty", c->accept);
    }
    cr_assert_eq(n.status_indent, c->status_indent, "Accept \"%s\": status_indent",
                 c->accept ? c->accept : "(none)");
}

#define KUBECTL_TABLE                                                                              \
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s." \
    "io,application/json"

Test(handlers, accept_matrix_for_pods)
{
    struct apires ar = core_ar("pods");
    static const struct neg_case cases[] = {
        {NULL, 0, NEG_AS_NONE, false, false, false},
        {"", 0, NEG_AS_NONE, false, false, false},
        {"*/*", 0, NEG_AS_NONE, false, false, false},
        {"*", 0, NEG_AS_NONE, false, false, false},
        {"application/*", 0, NEG_AS_NONE, false, false, false},
        {"application/json", 0, NEG_AS_NONE, false, false, false},
        {"application/json; charset=utf-8", 0, NEG_AS_NONE, false, false, false},
        {"application/json, */*", 0, NEG_AS_NONE, false, false, false},
        {"text/html, application/json;q=0.9", 0, NEG_AS_NONE, false, false, false},
        {"application/json;q=0", 0, NEG_AS_NONE, false, false, false}, /* q only orders */
        {"application/json;pretty=1", 0, NEG_AS_NONE, false, true, true},
        {"application/json;stream=watch", 0, NEG_AS_NONE, false, false, false},
        {"application/json;stream=other", -ENOTSUP, NEG_AS_NONE, false, false, true},
        {"application/json;sv=v1", 0, NEG_AS_NONE, false, false, true},
        {"application/vnd.kubernetes.protobuf,application/json", 0, NEG_AS_NONE, false, false,
         false},
        {"application/vnd.kubernetes.protobuf, */*", 0, NEG_AS_NONE, false, false, false},
        {"application/vnd.kubernetes.protobuf", -ENOTSUP, NEG_AS_NONE, false, false, true},
        {"application/yaml", -ENOTSUP, NEG_AS_NONE, false, false, true},
        {"text/plain", -ENOTSUP, NEG_AS_NONE, false, false, true},
        {"application", -ENOTSUP, NEG_AS_NONE, false, false, true},
        {"application/json/x", -ENOTSUP, NEG_AS_NONE, false, false, true},
        {"Application/JSON", -ENOTSUP, NEG_AS_NONE, false, false, true}, /* case-sensitive */
        {KUBECTL_TABLE, 0, NEG_AS_TABLE, false, false, false},
        {"application/json;as=Table;v=v1beta1;g=meta.k8s.io", 0, NEG_AS_TABLE, true, false, true},
        {"application/json;as=Table;v=v2;g=meta.k8s.io", -ENOTSUP, NEG_AS_NONE, false, false, true},
        {"application/json;as=Table;v=v1", -ENOTSUP, NEG_AS_NONE, false, false, true},
        {"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", 0, NEG_AS_POML, false,
         false, true},
        {"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1", 0, NEG_AS_POML,
         true, false, true},
        {"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
         "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
         0, NEG_AS_POML, false, false, false},
        {"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", 0, NEG_AS_POM, false,
         false, true},
        {"application/json;as=Foo;g=meta.k8s.io;v=v1,application/json", 0, NEG_AS_NONE, false,
         false, false},
        /* a higher q wins whatever the order */
        {"application/json;q=0.5,application/json;as=Table;v=v1;g=meta.k8s.io", 0, NEG_AS_TABLE,
         false, false, false},
        /* equal q: a concrete subtype sorts before a wildcard */
        {"*/*;as=Table;g=meta.k8s.io;v=v1,application/json", 0, NEG_AS_NONE, false, false, false},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        check_neg(&ar, &cases[i]);
    }
}

/* as=Table picks the kind's printer; a kind without one (a custom resource, a built-in kwp
 * has no printer for) is marked table_default, which the proxy forwards upstream
 * (handlers_serve), and gets the convertor the simulator serves. */
Test(handlers, table_negotiates_the_kinds_printer_or_the_default_convertor)
{
    struct apires cm = core_ar("configmaps"), cr, ds;
    struct neg n;
    char *owned = NULL;

    memset(&cr, 0, sizeof(cr));
    cr_assert_eq(apires_parse_spec("example.com/v1/widgets", &cr.kind, &owned), 0);
    ds = cr;
    ds.kind.group = "apps";
    ds.kind.plural = "daemonsets";
    ds.kind.builtin = true;
    cr_assert_eq(neg_accept(KUBECTL_TABLE, false, &cm, &n), 0);
    cr_assert_eq(n.as, NEG_AS_TABLE);
    cr_assert_not(n.table_default);
    cr_assert_eq(n.printer, printers_find("", "configmaps"));
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(neg_accept(KUBECTL_TABLE, false, i ? &ds : &cr, &n), 0);
        cr_assert_eq(n.as, NEG_AS_TABLE);
        cr_assert(n.table_default, "no kube printer: the proxy forwards");
        /* the simulator's answer: the CRD convertor (Name, Age) for a custom resource, rest's
         * default convertor (Name, Created At) for a built-in */
        cr_assert_eq(n.printer, i ? printers_default() : printers_custom());
    }
    free(owned);
}

Test(handlers, pretty_print_user_agents_and_status_indent)
{
    struct apires ar = core_ar("pods");
    struct neg n;

    cr_assert_eq(neg_accept("application/json", true, &ar, &n), 0);
    cr_assert(n.pretty && n.status_indent);
    cr_assert_eq(neg_accept(NULL, true, &ar, &n), 0);
    cr_assert(n.pretty && n.status_indent);
}

Test(handlers, gzip_token_is_exact)
{
    cr_assert(accepts_gzip("gzip"));
    cr_assert(accepts_gzip("gzip, deflate"));
    cr_assert(accepts_gzip("deflate ,  gzip "));
    cr_assert_not(accepts_gzip("gzip;q=1"));
    cr_assert_not(accepts_gzip("x-gzip"));
    cr_assert_not(accepts_gzip("GZIP"));
    cr_assert_not(accepts_gzip("identity"));
    cr_assert_not(accepts_gzip(""));
    cr_assert_not(accepts_gzip(NULL));
}

/* ---- the gzip content reader ------------------------------------------------------------ */

static char *inflate_all(const char *in, size_t n, size_t *out_len)
{
    z_stream z;
    size_t cap = 1 << 20;
    char *out = malloc(cap);

    memset(&z, 0, sizeof(z));
    cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK);
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)n;
    z.next_out = (Bytef *)out;
    z.avail_out = (uInt)cap;
    cr_assert_eq(inflate(&z, Z_FINISH), Z_STREAM_END, "not one complete gzip member");
    *out_len = cap - z.avail_out;
    inflateEnd(&z);
    return out;
}

static char *read_gzip_body(struct iovec *iov, size_t n, bool pretty, size_t chunk, size_t *len)
{
    struct hbody *b = xcalloc(1, sizeof(*b));
    struct sbuf sb = {0};
    char buf[4096];
    ssize_t r;

    b->iov = xmalloc(sizeof(*iov) * n);
    memcpy(b->iov, iov, sizeof(*iov) * n);
    b->n = n;
    b->gz = true;
    b->pretty = pretty;
    if (pretty) {
        indent_init(&b->ind);
        b->stage = xmalloc(GZIP_STAGE);
    }
    while ((r = gzip_fill(b, buf, chunk)) > 0) {
        sbuf_put(&sb, buf, (size_t)r);
    }
    cr_assert_eq(r, HTTP_STREAM_END);
    hbody_free(b);
    *len = sb.len;
    return sb.p;
}

Test(handlers, gzip_reader_round_trips_in_small_reads)
{
    size_t n_items = 3000, zlen, plain_len;
    struct iovec *iov = malloc(sizeof(*iov) * (2 * n_items + 2));
    struct sbuf plain = {0};
    char item[128];
    size_t k = 0;

    iov[k++] = (struct iovec){(void *)"{\"items\":[", 10};
    sbuf_str(&plain, "{\"items\":[");
    for (size_t i = 0; i < n_items; i++) {
        int w = snprintf(item, sizeof(item), "%s{\"metadata\":{\"name\":\"obj-%06zu\"}}",
                         i ? "," : "", i);
        char *copy = strdup(item);
        iov[k++] = (struct iovec){copy, (size_t)w};
        sbuf_put(&plain, item, (size_t)w);
    }
    iov[k++] = (struct iovec){(void *)"]}\n", 3};
    sbuf_str(&plain, "]}\n");

    char *z = read_gzip_body(iov, k, false, 100, &zlen);
    cr_assert_eq((unsigned char)z[0], 0x1f);
    cr_assert_eq((unsigned char)z[1], 0x8b, "a gzip member");
    char *back = inflate_all(z, zlen, &plain_len);
    cr_assert_eq(plain_len, plain.len);
    cr_assert(memcmp(back, plain.p, plain_len) == 0, "inflated body differs");
    free(back);
    free(z);

    z = read_gzip_body(iov, k, true, 777, &zlen);
    back = inflate_all(z, zlen, &plain_len);
    char *pretty = indent_all(plain.p);
    cr_assert_eq(plain_len, strlen(pretty));
    cr_assert(memcmp(back, pretty, plain_len) == 0, "inflated pretty body differs");
    free(pretty);
    free(back);
    free(z);

    for (size_t i = 1; i + 1 < k; i++) {
        free(iov[i].iov_base);
    }
    free(iov);
    sbuf_free(&plain);
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

Test(handlers, pom_of_a_builtin_is_its_metadata_span)
{
    struct apires ar = core_ar("pods");
    struct neg neg = {.as = NEG_AS_POM};
    const char *obj = "{\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"12\",\"labels\":"
                      "{\"a\":\"b\"}},\"spec\":{}}";
    const char *rv = strstr(obj, "12");
    struct objview ov = {obj, strlen(obj), (size_t)(rv - obj), 2, "15", true};
    struct pieces pc = {0};
    char *got;

    pc_pom(&pc, &ar, &neg, &ov);
    pieces_resolve(&pc, pc.sb.p);
    got = joined(&pc);
    cr_assert_str_eq(got, "{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\","
                          "\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"15\",\"labels\":"
                          "{\"a\":\"b\"}}}");
    cr_assert_eq(pc.sb.len, 0u, "no byte of a built-in's metadata is rebuilt");
    free(got);
    sbuf_free(&pc.sb);
}

Test(handlers, pom_of_a_custom_resource_follows_object_meta_order)
{
    struct apires ar = core_ar("configmaps");
    struct neg neg = {.as = NEG_AS_POM, .v1beta1 = true};
    const char *obj =
        "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"annotations\":{},"
        "\"creationTimestamp\":\"2024-01-01T00:00:00Z\",\"extra\":1,\"generation\":1,"
        "\"labels\":{\"a\":\"b\"},\"managedFields\":[{\"apiVersion\":\"example.com/v1\","
        "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{},\"manager\":\"m\",\"operation\":\"Update\","
        "\"time\":null}],\"name\":\"w\",\"namespace\":\"ns\",\"ownerReferences\":[{"
        "\"blockOwnerDeletion\":true,\"kind\":\"K\",\"name\":\"o\",\"uid\":\"u\"}],"
        "\"resourceVersion\":\"9\",\"uid\":\"x\"},\"spec\":{}}";
    struct objview ov = {obj, strlen(obj), 0, 0, "9", false};
    struct pieces pc = {0};
    char *got;

    ar.kind.builtin = false;
    pc_pom(&pc, &ar, &neg, &ov);
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

Test(handlers, internal_type_names)
{
    struct apires ar = core_ar("pods");
    char t[128];

    internal_type(&ar, false, t, sizeof(t));
    cr_assert_str_eq(t, "*core.Pod");
    internal_type(&ar, true, t, sizeof(t));
    cr_assert_str_eq(t, "*core.PodList");
    ar.kind = *apires_builtin("apps", "v1", "deployments");
    internal_type(&ar, true, t, sizeof(t));
    cr_assert_str_eq(t, "*apps.DeploymentList");
    ar.kind.builtin = false;
    internal_type(&ar, false, t, sizeof(t));
    cr_assert_str_eq(t, "*unstructured.Unstructured");
}

/* ---- watch frames shared by a resource's watchers --------------------------------------- */

/* {"type":"<type>","object":<the object as a GET shows it>}\n, built without any watch code. */
static char *expected_frame(const struct apires *ar, const char *type, const struct blob *b)
{
    size_t len;
    char *obj = handlers_object_json(ar, b, &len);
    struct sbuf sb = {0};

    sbuf_printf(&sb, "{\"type\":\"%s\",\"object\":", type);
    sbuf_put(&sb, obj, len - 1); /* without its newline */
    sbuf_str(&sb, "}\n");
    free(obj);
    return sb.p;
}

/* Emits <ev> for <h> into a fresh buffer; returns the frame (NUL-terminated). */
static char *emit_one(struct hreq *h, const struct ring_event *ev)
{
    static char buf[8192];
    size_t n = 0;

    cr_assert_eq(emit_event(h, buf, sizeof(buf) - 1, &n, ev), EMIT_OK);
    cr_assert_null(h->over);
    buf[n] = '\0';
    return strdup(buf);
}

/*
 * Two plain watchers and one with a label selector on the same resource, through ADDED,
 * MODIFIED (which brings the object into the selector: ADDED for that watcher) and DELETED:
 * the first plain watcher attaches a shared frame, the second sends that same frame, and
 * every frame equals, byte for byte, the one built from the object as a GET shows it, for a
 * built-in (typemeta prepended) and a custom resource (stored with its own kind).
 */
static void shared_frames_equal_built_ones(struct apires *ar, const char *const objs[3])
{
    static const char *const types[] = {"ADDED", "MODIFIED", "DELETED"};
    struct hreq *a = hreq_bare_new(ar), *b = hreq_bare_new(ar), *sel = hreq_bare_new(ar);
    struct ring_event ev[3], evb[3], evs[3];
    struct blob *blobs[3];
    char err[128];

    cr_assert_eq(resource_replace(ar->res, NULL, 0, 1, 0), 0);
    sel->lsel = selector_parse_labels("app=x", err, sizeof(err));
    cr_assert_not_null(sel->lsel, "%s", err);
    cr_assert_eq(resource_watch_from(ar->res, &a->w, 1, NULL), 0);
    cr_assert_eq(resource_watch_from(ar->res, &b->w, 1, NULL), 0);
    cr_assert_eq(resource_watch_from(ar->res, &sel->w, 1, NULL), 0);
    for (int i = 0; i < 3; i++) {
        blobs[i] = kube_json_blob(objs[i], strlen(objs[i]), ar->kind.fields);
        cr_assert_not_null(blobs[i]);
        cr_assert_eq(resource_apply(ar->res, (enum watch_type)i, blobs[i], (uint64_t)i + 2, 0), 0);
    }
    cr_assert_eq(resource_watch_next(ar->res, &a->w, ev, 3), 3);
    cr_assert_eq(resource_watch_next(ar->res, &b->w, evb, 3), 3);
    cr_assert_eq(resource_watch_next(ar->res, &sel->w, evs, 3), 3);
    for (int i = 0; i < 3; i++) {
        char *want = expected_frame(ar, types[i], blobs[i]);
        char *got_a, *got_b;
        const void *shared;

        cr_assert_null(ring_aux(&ev[i]), "nothing shared before a watcher sends it");
        got_a = emit_one(a, &ev[i]);
        shared = ring_aux(&ev[i]);
        cr_assert_not_null(shared, "%s: the first plain watcher attaches its frame", types[i]);
        got_b = emit_one(b, &evb[i]);
        cr_assert_eq(ring_aux(&evb[i]), shared, "the second one reuses it");
        cr_assert_str_eq(got_a, want);
        cr_assert_str_eq(got_b, want);
        free(got_a);
        free(got_b);
        free(want);
    }
    /* the selector's view: nothing for the ADDED (no label), ADDED for the MODIFIED that
     * brings the label, DELETED: never the shared MODIFIED frame for its ADDED */
    {
        char buf[16];
        size_t n = 0;
        char *added, *deleted, *want_added = expected_frame(ar, "ADDED", blobs[1]);
        char *want_deleted = expected_frame(ar, "DELETED", blobs[2]);

        cr_assert_eq(emit_event(sel, buf, sizeof(buf), &n, &evs[0]), EMIT_OK);
        cr_assert_eq(n, 0u);
        added = emit_one(sel, &evs[1]);
        deleted = emit_one(sel, &evs[2]);
        cr_assert_str_eq(added, want_added);
        cr_assert_str_eq(deleted, want_deleted);
        free(added);
        free(deleted);
        free(want_added);
        free(want_deleted);
    }
    for (int i = 0; i < 3; i++) {
        blob_unref(blobs[i]);
    }
    resource_watch_detach(ar->res, &a->w);
    resource_watch_detach(ar->res, &b->w);
    resource_watch_detach(ar->res, &sel->w);
    selector_free(sel->lsel);
    free(a);
    free(b);
    free(sel);
}

Test(handlers, shared_watch_frames_equal_built_ones_builtin)
{
    const struct ring_opts ring = {.min_cap = 16, .max_cap = 16};
    struct apires *ar = apires_new(apires_builtin("", "v1", "pods"), NULL, &ring);
    const char *const objs[3] = {
        "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"resourceVersion\":\"2\"},"
        "\"spec\":{\"nodeName\":\"n1\"}}",
        "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"resourceVersion\":\"3\","
        "\"labels\":{\"app\":\"x\"}},\"spec\":{\"nodeName\":\"n1\"}}",
        "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"resourceVersion\":\"4\","
        "\"labels\":{\"app\":\"x\"}},\"spec\":{\"nodeName\":\"n1\"},\"status\":{}}",
    };

    shared_frames_equal_built_ones(ar, objs);
    apires_free(ar);
}

Test(handlers, shared_watch_frames_equal_built_ones_custom_resource)
{
    const struct ring_opts ring = {.min_cap = 16, .max_cap = 16};
    struct apires_kind kind;
    char *owned = NULL;
    struct apires *ar;
    const char *const objs[3] = {
        "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\","
        "\"namespace\":\"ns\",\"resourceVersion\":\"2\"},\"spec\":{}}",
        "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\","
        "\"namespace\":\"ns\",\"resourceVersion\":\"3\",\"labels\":{\"app\":\"x\"}},\"spec\":{}}",
        "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\","
        "\"namespace\":\"ns\",\"resourceVersion\":\"4\",\"labels\":{\"app\":\"x\"}}}",
    };

    cr_assert_eq(apires_parse_spec("example.com/v1/widgets", &kind, &owned), 0);
    ar = apires_new(&kind, owned, &ring);
    cr_assert_not(ar->kind.builtin);
    shared_frames_equal_built_ones(ar, objs);
    apires_free(ar);
}

/*
 * A watch that goes idle gives its batch array back to malloc, and its thread keeps none:
 * a spare kept per thread changed where glibc placed the next watches' allocations and
 * raised the memory per idle watch by up to 4 KB (bench/README, "Memory per idle watch").
 * mallinfo2 counts the calling thread's arena (the main one here): what a take and a give
 * leave allocated must be nothing.
 */
Test(handlers, idle_watch_batch_arrays_go_back_to_malloc)
{
    size_t before, held;
    struct ring_event *a, *b;

    batch_give(batch_take()); /* anything malloc sets up on first use, outside the count */
    before = mallinfo2().uordblks;
    a = batch_take();
    b = batch_take();
    held = mallinfo2().uordblks;
    cr_assert_neq(a, b);
    if (held == before) {
        batch_give(a);
        batch_give(b);
        cr_skip_test("this allocator's mallinfo2 counts nothing (a sanitizer's malloc)");
    }
    cr_assert_geq(held - before, 2 * HANDLERS_BATCH * sizeof(*a));
    batch_give(a);
    batch_give(b);
    cr_assert_eq(mallinfo2().uordblks, before, "%zu bytes still allocated after both were given back",
                 mallinfo2().uordblks - before);
}
