/*
 * fuzz_kube_json.c - libFuzzer harness for the JSON readers and writers split out of the old
 * kube_json.c: the byte scanner (proxy/kube_json.c), object metadata (proxy/kube_meta.c),
 * continue tokens (proxy/continue_token.c) and JSON string escaping (cache/gotext.c)
 * (bash scripts/fuzz.sh kube_json; ctest fuzz_kube_json replays corpus/kube_json/).
 *
 * Every input goes, as an exact-size buffer, through the byte scanner (member, array,
 * event, strip), kube_meta_parse/kube_meta_blob and continue_token_decode, and checks
 * invariants: spans lie inside the input, stripped output is a valid object without
 * kind/apiVersion, metadata as kube_meta_parse reads it is the metadata kube_json_member finds
 * (name, namespace, resourceVersion; unescaped values decoded as Go does), quoted output is valid
 * JSON, a decoded continue token re-encodes to a token that decodes to the same rv and key.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/blob.h"
#include "cache/gotext.h"
#include "cache/sbuf.h"
#include "proxy/continue_token.h"
#include "proxy/kube_json.h"
#include "proxy/kube_meta.h"
#include "tests/fuzz/fuzz.h"

/* The string member <key> of the object at d[0..n) as the byte scanner finds it equals <want>
 * (when written without escapes; NULL <want>: absent or not a string). */
static void check_str_member(const char *d, size_t n, const char *key, const char *want)
{
    size_t off, len;
    int rc = kube_json_member(d, n, key, &off, &len);

    if (rc != 0 || d[off] != '"') {
        CHECK(want == NULL); /* absent or not a string for kube_meta_parse too */
        return;
    }
    if (memchr(d + off, '\\', len) == NULL) {
        /* no escapes: the raw bytes, each invalid UTF-8 byte read as U+FFFD (Go's reading) */
        const char *p = d + off + 1, *end = d + off + len - 1;
        size_t w = 0;

        CHECK(want != NULL);
        while (p < end) {
            uint32_t r;
            size_t k = gotext_decode_rune(p, (size_t)(end - p), &r);

            if (r == GOTEXT_RUNE_ERROR && k == 1) {
                CHECK(memcmp(want + w, "\xef\xbf\xbd", 3) == 0);
                w += 3;
            } else {
                CHECK(memcmp(want + w, p, k) == 0);
                w += k;
            }
            p += k;
        }
        CHECK(want[w] == '\0');
    }
}

/* kube_meta_parse (one pass per object) and kube_json_member (a lookup per key) see the same
 * members. */
static void check_meta_as_scanned(const char *d, size_t n, const struct kube_meta *m)
{
    size_t off, len;

    CHECK(kube_json_member(d, n, "metadata", &off, &len) == 0 && d[off] == '{');
    check_str_member(d + off, len, "name", m->meta.name);
    check_str_member(d + off, len, "namespace", m->meta.ns);
    if (m->meta.rv_str[0] != '\0') {
        check_str_member(d + off, len, "resourceVersion", m->meta.rv_str);
    }
}

/* On validated bytes the skipping iterator yields what the validating one does; on any bytes
 * its spans stay inside the input. */
static void check_object_iterators(const char *d, size_t n)
{
    bool valid = kube_json_check_object(d, n) == 0;
    size_t p1 = 0, p2 = 0;

    for (size_t k = 0; k < 100000; k++) {
        struct kube_json_kv a, b;
        int r2 = kube_json_object_next_valid(d, n, &p2, &b);

        CHECK(r2 <= 1);
        if (r2 == 1) {
            CHECK(b.key_off <= n && b.key_len <= n - b.key_off);
            CHECK(b.val_off < n && b.val_len > 0 && b.val_len <= n - b.val_off);
            CHECK(b.val_off + b.val_len == p2);
        }
        if (!valid) {
            if (r2 != 1) {
                break;
            }
            continue;
        }
        CHECK(kube_json_object_next(d, n, &p1, &a) == r2);
        if (r2 != 1) {
            break;
        }
        CHECK(a.key_off == b.key_off && a.key_len == b.key_len && a.key_esc == b.key_esc);
        CHECK(a.val_off == b.val_off && a.val_len == b.val_len && p1 == p2);
    }
}

/* On validated bytes the variants that skip validation read what the checking ones read. */
static void check_valid_twins(const char *d, size_t n, const char *const *fields,
                              const struct blob *b)
{
    struct blob *v = kube_meta_blob_valid(d, n, fields);
    size_t l1 = 0, l2 = 0;
    char *s1 = kube_json_strip_type_meta(d, n, &l1);
    char *s2 = kube_json_strip_type_meta_valid(d, n, &l2);

    CHECK(v != NULL && strcmp(v->key, b->key) == 0 && strcmp(v->rv_str, b->rv_str) == 0);
    CHECK(v->rv_off == b->rv_off && v->rv_len == b->rv_len);
    CHECK(v->n_labels == b->n_labels && v->n_fields == b->n_fields);
    for (size_t i = 0; i < b->n_labels + b->n_fields; i++) {
        struct blob_kv x, y;
        bool lab = i < b->n_labels;
        size_t j = lab ? i : i - b->n_labels;

        CHECK(lab ? blob_label_at(b, j, &x) && blob_label_at(v, j, &y)
                  : blob_field_at(b, j, &x) && blob_field_at(v, j, &y));
        CHECK(strcmp(x.key, y.key) == 0 && strcmp(x.val, y.val) == 0);
    }
    CHECK((s1 == NULL) == (s2 == NULL));
    if (s1 != NULL) {
        CHECK(l1 == l2 && memcmp(s1, s2, l1) == 0);
    }
    free(s1);
    free(s2);
    blob_unref(v);
}

static void fuzz_spans(const char *d, size_t n)
{
    static const char *const fields[] = {"spec.nodeName", "status.phase", "a.b.c", NULL};
    struct kube_event ev;
    struct kube_meta m;
    size_t off = 0, len = 0;
    struct blob *b;
    char *s;

    if (kube_json_member(d, n, "metadata", &off, &len) == 0) {
        CHECK(off < n && len > 0 && len <= n - off);
        if (d[off] == '{') {
            check_object_iterators(d + off, len);
        }
    }
    check_object_iterators(d, n);
    if (kube_json_event_parse(d, n, &ev) == 0) {
        CHECK(ev.obj_off < n && ev.obj_len >= 2 && ev.obj_len <= n - ev.obj_off);
        CHECK(d[ev.obj_off] == '{' && d[ev.obj_off + ev.obj_len - 1] == '}');
    }
    for (size_t pos = 0, k = 0; k < 100000; k++) {
        int rc = kube_json_array_next(d, n, &pos, &off, &len);

        CHECK(rc <= 1);
        if (rc != 1) {
            break;
        }
        CHECK(off < n && len > 0 && len <= n - off && off + len == pos);
    }
    s = kube_json_strip_type_meta(d, n, &len);
    if (s != NULL) {
        CHECK(len <= n && strlen(s) == len);
        CHECK(kube_json_member(s, len, "kind", &off, &len) == -ENOENT);
        CHECK(kube_json_member(s, len, "apiVersion", &off, &len) == -ENOENT);
        free(s);
    }
    if (kube_meta_parse(d, n, fields, &m) == 0) {
        CHECK(m.meta.name != NULL && m.meta.name[0] != '\0');
        check_meta_as_scanned(d, n, &m);
        if (m.meta.rv_len > 0) {
            CHECK(m.meta.rv_off < n && m.meta.rv_len <= n - m.meta.rv_off);
            CHECK(memcmp(d + m.meta.rv_off, m.meta.rv_str, m.meta.rv_len) == 0);
        }
        kube_meta_fini(&m);
        b = kube_meta_blob(d, n, fields);
        CHECK(b != NULL);
        check_valid_twins(d, n, fields, b);
        blob_unref(b);
    }
}

static void fuzz_quote(const char *d, size_t n)
{
    struct sbuf sb = {0};
    size_t need, off, len;

    sbuf_str(&sb, "{\"a\":");
    gotext_json_quote(&sb, d, n);
    need = sb.len - 5;
    sbuf_str(&sb, "}");
    CHECK(sbuf_error(&sb) == 0);
    CHECK(kube_json_member(sb.p, sb.len, "a", &off, &len) == 0 && len == need);
    sbuf_free(&sb);
}

static void fuzz_continue_tok(const char *tok)
{
    char start[CONTINUE_TOKEN_MAX], start2[CONTINUE_TOKEN_MAX], err[256];
    char *enc;
    int64_t rv = 0, rv2 = 0;
    size_t elen;

    if (continue_token_decode(tok, &rv, start, sizeof(start), err, sizeof(err)) != 0) {
        CHECK(strncmp(err, "continue key is not valid", 25) == 0);
        return;
    }
    CHECK(rv != 0);
    elen = continue_token_encode(rv, start, NULL, 0);
    enc = malloc(elen + 1);
    continue_token_encode(rv, start, enc, elen + 1);
    if (elen <= CONTINUE_TOKEN_MAX) {
        /* An empty key ("/" token) re-encodes as "\0", which decodes back to "". */
        CHECK(continue_token_decode(enc, &rv2, start2, sizeof(start2), err, sizeof(err)) == 0);
        CHECK(rv2 == rv && strcmp(start, start2) == 0);
    }
    free(enc);
}

static void fuzz_continue(const char *d, size_t n)
{
    char tok[CONTINUE_TOKEN_MAX + 1];

    if (n > CONTINUE_TOKEN_MAX) {
        n = CONTINUE_TOKEN_MAX;
    }
    memcpy(tok, d, n);
    tok[n] = '\0';
    fuzz_continue_tok(tok);
    if (n <= CONTINUE_TOKEN_MAX / 4 * 3) {
        /* raw bytes as a token, so the Go JSON scanner and decoder see fuzzed JSON */
        struct sbuf sb;

        sbuf_init_fixed(&sb, tok, sizeof(tok));
        gotext_base64_encode(&sb, GOTEXT_BASE64_RAW_URL, d, n);
        CHECK(sbuf_error(&sb) == 0);
        fuzz_continue_tok(tok);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy so ASan flags any read past the end. */
    char *d = malloc(size ? size : 1);

    memcpy(d, data, size);
    fuzz_spans(d, size);
    fuzz_quote(d, size);
    fuzz_continue(d, size);
    free(d);
    return 0;
}
