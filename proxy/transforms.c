/*
 * transforms.c - objects and list envelopes as negotiated (see transforms.h): kube-apiserver's
 * transformObject for PartialObjectMetadata[List] and Table, written from the stored bytes.
 * A built-in's metadata span is sent as stored (both sides encode the same metav1.ObjectMeta);
 * a custom resource's is re-ordered as AsPartialObjectMetadata re-encodes it; only Table cells
 * are computed (printers.c). Pieces are lent from the object, literals, or built in pc->sb.
 */
#include "proxy/transforms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "cache/gotext.h"
#include "proxy/apires.h"
#include "proxy/kube_json.h"
#include "proxy/kube_meta.h"
#include "proxy/negotiate.h"
#include "proxy/printers.h"

/* ---- the object as stored ---------------------------------------------------------------- */

size_t transforms_typemeta(const struct apires *ar, char *out, size_t cap)
{
    int w;

    out[0] = '\0';
    if (!ar->kind.builtin) {
        return 0;
    }
    w = snprintf(out, cap, "{\"kind\":\"%s\",\"apiVersion\":\"%s\"", ar->kind.kind,
                 ar->api_version);
    if (w > 0 && (size_t)w < cap) {
        return (size_t)w;
    }
    out[0] = '\0';
    return 0;
}

static bool json_empty_object(const char *data, size_t len)
{
    for (size_t i = 1; i < len; i++) {
        char c = data[i];
        if (c == '}') {
            return true;
        }
        if (c != ' ' && c != '\n' && c != '\t' && c != '\r') {
            return false;
        }
    }
    return false;
}

size_t transforms_object_iov(const char *typemeta, size_t typemeta_len,
                             const struct transforms_obj *ov, struct iovec *iov, size_t *total)
{
    size_t n = 0, start = 0;
    bool over =
        ov->override && ov->rv_len > 0 && ov->rv_off > 0 && ov->rv_off + ov->rv_len <= ov->len;

    if (typemeta_len > 0 && ov->len >= 2 && ov->data[0] == '{') {
        iov[n].iov_base = (void *)typemeta;
        iov[n++].iov_len = typemeta_len;
        if (json_empty_object(ov->data, ov->len)) {
            iov[n].iov_base = (void *)"}";
            iov[n++].iov_len = 1;
            goto done;
        }
        iov[n].iov_base = (void *)",";
        iov[n++].iov_len = 1;
        start = 1;
    }
    if (over) {
        iov[n].iov_base = (void *)(ov->data + start);
        iov[n++].iov_len = ov->rv_off - start;
        iov[n].iov_base = (void *)ov->rv;
        iov[n++].iov_len = strlen(ov->rv);
        iov[n].iov_base = (void *)(ov->data + ov->rv_off + ov->rv_len);
        iov[n++].iov_len = ov->len - ov->rv_off - ov->rv_len;
    } else {
        iov[n].iov_base = (void *)(ov->data + start);
        iov[n++].iov_len = ov->len - start;
    }
done:
    *total = 0;
    for (size_t i = 0; i < n; i++) {
        *total += iov[i].iov_len;
    }
    return n;
}

/* ---- PartialObjectMetadata (handlers/response.go) ---------------------------------------- */

#define POM_PREFIX_V1                                                                              \
    "{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":"
#define POM_PREFIX_V1BETA1                                                                         \
    "{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1beta1\",\"metadata\":"

static const char *meta_gv(const struct negotiate *neg)
{
    return neg->v1beta1 ? "meta.k8s.io/v1beta1" : "meta.k8s.io/v1";
}

/* null, "", {} or [] (the values omitempty drops), whitespace allowed. */
static bool json_blank(const char *v, size_t n)
{
    size_t a = 0, b = n, k = 0;

    while (a < b && (v[a] == ' ' || v[a] == '\t' || v[a] == '\n' || v[a] == '\r')) {
        a++;
    }
    while (b > a && (v[b - 1] == ' ' || v[b - 1] == '\t' || v[b - 1] == '\n' || v[b - 1] == '\r')) {
        b--;
    }
    if (b - a == 4 && memcmp(v + a, "null", 4) == 0) {
        return true;
    }
    if (b - a < 2 || !((v[a] == '"' && v[b - 1] == '"') || (v[a] == '{' && v[b - 1] == '}') ||
                       (v[a] == '[' && v[b - 1] == ']'))) {
        return false;
    }
    for (k = a + 1; k < b - 1; k++) {
        if (v[k] != ' ' && v[k] != '\t' && v[k] != '\n' && v[k] != '\r') {
            return false;
        }
    }
    return v[a] != '"' || b - a == 2;
}

static const char *const owner_ref_order[] = {
    "apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion", NULL};
static const char *const managed_order[] = {"manager",    "operation", "apiVersion",  "time",
                                            "fieldsType", "fieldsV1",  "subresource", NULL};

static void sb_member_key(struct sbuf *sb, bool *first, const char *key)
{
    if (!*first) {
        sbuf_put(sb, ",", 1);
    }
    *first = false;
    gotext_json_quote(sb, key, strlen(key));
    sbuf_put(sb, ":", 1);
}

/* The elements of an ownerReferences or managedFields array in struct field order. */
static void meta_reorder_array(const char *v, size_t n, const char *const *order, bool owners,
                               struct sbuf *sb)
{
    size_t pos = 0, eoff, elen;
    bool first = true;

    sbuf_put(sb, "[", 1);
    while (kube_json_array_next(v, n, &pos, &eoff, &elen) == 1) {
        const char *e = v + eoff;
        bool efirst = true;
        if (e[0] != '{') {
            continue;
        }
        sbuf_put(sb, first ? "{" : ",{", first ? 1 : 2);
        first = false;
        for (size_t i = 0; order[i]; i++) {
            size_t off, len;
            bool found = kube_json_member(e, elen, order[i], &off, &len) == 0;
            if (owners && i < 4) { /* apiVersion, kind, name, uid: no omitempty */
                sb_member_key(sb, &efirst, order[i]);
                if (found && e[off] == '"') {
                    sbuf_put(sb, e + off, len);
                } else {
                    sbuf_put(sb, "\"\"", 2);
                }
            } else if (owners) { /* *bool: kept when a boolean */
                if (found && (e[off] == 't' || e[off] == 'f')) {
                    sb_member_key(sb, &efirst, order[i]);
                    sbuf_put(sb, e + off, len);
                }
            } else if (found && !(len == 4 && memcmp(e + off, "null", 4) == 0) &&
                       !(len == 2 && memcmp(e + off, "\"\"", 2) == 0)) {
                sb_member_key(sb, &efirst, order[i]);
                sbuf_put(sb, e + off, len);
            }
        }
        sbuf_put(sb, "}", 1);
    }
    sbuf_put(sb, "]", 1);
}

/*
 * A custom resource's metadata as kube-apiserver re-encodes it for PartialObjectMetadata:
 * meta.AsPartialObjectMetadata copies the unstructured accessors into metav1.ObjectMeta, so
 * members come out in struct order, empty ones dropped (omitempty), unknown ones gone, and
 * ownerReferences / managedFields entries in their struct order. Values stay verbatim
 * (maps were key-sorted by the upstream's encoder and still are).
 */
static void meta_reorder(const char *m, size_t n, const char *rv_override, struct sbuf *sb)
{
    const char *const *order = kube_meta_member_order;
    bool first = true;

    sbuf_put(sb, "{", 1);
    for (size_t i = 0; order[i]; i++) {
        size_t off, len;
        const char *k = order[i];
        if (kube_json_member(m, n, k, &off, &len) != 0 || json_blank(m + off, len)) {
            continue;
        }
        if (strcmp(k, "generation") == 0 && len == 1 && m[off] == '0') {
            continue;
        }
        sb_member_key(sb, &first, k);
        if (rv_override && strcmp(k, "resourceVersion") == 0) {
            gotext_json_quote(sb, rv_override, strlen(rv_override));
        } else if (strcmp(k, "ownerReferences") == 0 && m[off] == '[') {
            meta_reorder_array(m + off, len, owner_ref_order, true, sb);
        } else if (strcmp(k, "managedFields") == 0 && m[off] == '[') {
            meta_reorder_array(m + off, len, managed_order, false, sb);
        } else {
            sbuf_put(sb, m + off, len);
        }
    }
    sbuf_put(sb, "}", 1);
}

/* The object's metadata as AsPartialObjectMetadata encodes it. Built-ins: the stored span
 * itself (the same metav1.ObjectMeta encoded both), the rv override spliced in. */
static void pc_metadata(struct pieces *pc, const struct apires *ar, const struct transforms_obj *ov)
{
    size_t off = 0, len = 0;

    if (kube_json_member(ov->data, ov->len, "metadata", &off, &len) != 0) {
        pieces_lit(pc, "{}");
        return;
    }
    if (!ar->kind.builtin) {
        pieces_begin(pc);
        meta_reorder(ov->data + off, len, ov->override ? ov->rv : NULL, &pc->sb);
        pieces_end(pc);
    } else if (ov->override && ov->rv_len > 0 && ov->rv_off >= off &&
               ov->rv_off + ov->rv_len <= off + len) {
        pieces_lent(pc, ov->data + off, ov->rv_off - off);
        pieces_lit(pc, ov->rv);
        pieces_lent(pc, ov->data + ov->rv_off + ov->rv_len, off + len - ov->rv_off - ov->rv_len);
    } else {
        pieces_lent(pc, ov->data + off, len);
    }
}

void transforms_pom(struct pieces *pc, const struct transforms_ctx *tc,
                    const struct transforms_obj *ov)
{
    pieces_lit(pc, tc->neg->v1beta1 ? POM_PREFIX_V1BETA1 : POM_PREFIX_V1);
    pc_metadata(pc, tc->ar, ov);
    pieces_lit(pc, "}");
}

/* ---- Tables (columns and cells: printers.c) ---------------------------------------------- */

int64_t transforms_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The cells come from one cJSON parse of the object, freed here. */
void transforms_table_row(struct pieces *pc, const struct transforms_ctx *tc,
                          const struct transforms_obj *ov, int64_t now_ns)
{
    cJSON *obj = cJSON_ParseWithLength(ov->data, ov->len);
    size_t len;
    char *cells = printers_cells_new(tc->neg->printer, obj, now_ns, &len);

    cJSON_Delete(obj);
    pieces_begin(pc);
    sbuf_put(&pc->sb, "{", 1);
    sbuf_put(&pc->sb, cells, len);
    free(cells);
    sbuf_str(&pc->sb, ",\"object\":");
    pieces_end(pc);
    if (tc->neg->incl == NEGOTIATE_INCL_NONE) {
        pieces_lit(pc, "null");
    } else if (tc->neg->incl == NEGOTIATE_INCL_OBJECT) {
        struct iovec tmp[TRANSFORMS_OBJECT_IOV];
        size_t total, n = transforms_object_iov(tc->typemeta, tc->typemeta_len, ov, tmp, &total);
        for (size_t i = 0; i < n; i++) {
            pieces_lent(pc, tmp[i].iov_base, tmp[i].iov_len);
        }
    } else {
        transforms_pom(pc, tc, ov);
    }
    pieces_lit(pc, "}");
}

void transforms_table_single(struct pieces *pc, const struct transforms_ctx *tc,
                             const struct transforms_obj *ov, bool headers)
{
    pieces_begin(pc);
    sbuf_printf(&pc->sb,
                "{\"kind\":\"Table\",\"apiVersion\":\"%s\",\"metadata\":", meta_gv(tc->neg));
    if (ov->rv[0]) {
        sbuf_str(&pc->sb, "{\"resourceVersion\":");
        gotext_json_quote(&pc->sb, ov->rv, strlen(ov->rv));
        sbuf_str(&pc->sb, "}");
    } else {
        sbuf_str(&pc->sb, "{}");
    }
    sbuf_str(&pc->sb, ",\"columnDefinitions\":");
    pieces_end(pc);
    pieces_lit(pc, headers ? printers_columns(tc->neg->printer) : "null");
    pieces_lit(pc, ",\"rows\":[");
    transforms_table_row(pc, tc, ov, transforms_now_ns());
    pieces_lit(pc, "]}");
}

/* ---- LIST envelopes ---------------------------------------------------------------------- */

const char *transforms_list_head(struct sbuf *head, const struct transforms_ctx *tc,
                                 const char *meta, size_t matched)
{
    const struct negotiate *neg = tc->neg;
    const struct apires *ar = tc->ar;

    if (neg->as == NEGOTIATE_AS_TABLE) {
        /* printers and the CRD convertor (metatable.MetaToTableRow) make an empty slice
         * ("rows":[]); rest's default convertor appends to a nil one ("rows":null) */
        bool nil_rows = matched == 0 && neg->printer == printers_default();

        sbuf_printf(head,
                    "{\"kind\":\"Table\",\"apiVersion\":\"%s\",\"metadata\":%s,"
                    "\"columnDefinitions\":",
                    meta_gv(neg), meta);
        sbuf_str(head, printers_columns(neg->printer));
        sbuf_str(head, nil_rows ? ",\"rows\":null" : ",\"rows\":[");
        return nil_rows ? "}\n" : "]}\n";
    }
    if (neg->as == NEGOTIATE_AS_POML) {
        /* asPartialObjectMetadataList appends to a nil slice: "items":null when empty */
        sbuf_printf(head,
                    "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"%s\","
                    "\"metadata\":%s,\"items\":%s",
                    meta_gv(neg), meta, matched == 0 ? "null" : "[");
        return matched == 0 ? "}\n" : "]}\n";
    }
    sbuf_str(head, "{\"kind\":");
    gotext_json_quote(head, ar->kind.list_kind, strlen(ar->kind.list_kind));
    sbuf_str(head, ",\"apiVersion\":");
    gotext_json_quote(head, ar->api_version, strlen(ar->api_version));
    sbuf_str(head, ",\"metadata\":");
    sbuf_str(head, meta);
    sbuf_str(head, ",\"items\":[");
    return "]}\n";
}

/* ---- errNotAcceptable -------------------------------------------------------------------- */

void transforms_internal_type(const struct apires_kind *kind, bool list, char *out, size_t cap)
{
    const char *g = kind->group;
    char pkg[64];
    size_t n;

    if (!kind->builtin) {
        snprintf(out, cap, "*unstructured.Unstructured%s", list ? "List" : "");
        return;
    }
    if (g[0] == '\0' || strcmp(g, "events.k8s.io") == 0) {
        snprintf(pkg, sizeof(pkg), "core");
    } else if (strcmp(g, "internal.apiserver.k8s.io") == 0) {
        snprintf(pkg, sizeof(pkg), "apiserverinternal");
    } else {
        n = strcspn(g, ".");
        snprintf(pkg, sizeof(pkg), "%.*s", (int)(n < sizeof(pkg) ? n : sizeof(pkg) - 1), g);
    }
    snprintf(out, cap, "*%s.%s", pkg, list ? kind->list_kind : kind->kind);
}
