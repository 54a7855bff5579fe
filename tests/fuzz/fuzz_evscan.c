/*
 * fuzz_evscan.c - load/evscan.c, the tree-less scanner `kwp load` runs over every watch line
 * and the head of every list body.
 *
 * Raw pass (the input as a line and as a list body, in an exact-size buffer):
 *  - evscan_event: 0 or -EPROTO; on 0 a known type, the rv span inside the line and free of
 *    '"', stamp_ns -1 or a value of at most 19 digits, code 0 unless ERROR (then <= 999999);
 *  - evscan_list_rv: 0, -EAGAIN, -ENOENT or -EPROTO, the span inside the input; every prefix of
 *    the input answers -EAGAIN or exactly what the whole input answers, since the load client
 *    only calls again with more bytes after -EAGAIN.
 * Built pass: the input also supplies the values of a well-formed event line and list body
 * (type, rv digits, stamp, an ERROR code, names, an arbitrary annotation and spec string
 * escaped with gotext_json_quote, member order); evscan must find exactly those values, and
 * kube_json_event_parse must accept the same line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/gotext.h"
#include "cache/sbuf.h"
#include "load/evscan.h"
#include "proxy/kube_json.h"
#include "tests/fuzz/fuzz.h"

static const char *const type_names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

static void check_event_raw(const char *d, size_t n)
{
    struct evscan_event ev;
    int rc = evscan_event(d, n, &ev);

    CHECK(rc == 0 || rc == -EPROTO);
    if (rc != 0) {
        return;
    }
    CHECK((unsigned)ev.type <= EVSCAN_ERROR);
    CHECK(ev.rv_off <= n && ev.rv_len <= n - ev.rv_off);
    /* A span is a string's raw bytes: a quote on each side. */
    CHECK(ev.rv_len == 0 || (ev.rv_off > 0 && d[ev.rv_off - 1] == '"' &&
                             ev.rv_off + ev.rv_len < n && d[ev.rv_off + ev.rv_len] == '"'));
    CHECK(ev.stamp_ns >= -1);
    CHECK(ev.type == EVSCAN_ERROR ? ev.code >= 0 && ev.code <= 999999 : ev.code == 0);
}

static void check_list_raw(const char *d, size_t n, const uint8_t *sel, size_t sel_n)
{
    size_t off = 0, len = 0;
    int rc = evscan_list_rv(d, n, &off, &len);

    CHECK(rc == 0 || rc == -EAGAIN || rc == -ENOENT || rc == -EPROTO);
    if (rc == 0) {
        CHECK(off > 0 && off + len < n && d[off - 1] == '"' && d[off + len] == '"');
    }
    /* Every prefix when short, else a few chosen by the input. */
    for (size_t k = 0; k < (n <= 256 ? n : 24); k++) {
        size_t cut = n <= 256 ? k : ((sel_n ? sel[k % sel_n] : 0) * (size_t)257 + k * 131) % n;
        char *prefix = malloc(cut ? cut : 1);
        size_t poff = 0, plen = 0;
        int prc;

        memcpy(prefix, d, cut);
        prc = evscan_list_rv(prefix, cut, &poff, &plen);
        CHECK(prc == -EAGAIN || prc == rc);
        CHECK(prc != 0 || (poff == off && plen == len));
        free(prefix);
    }
}

/* ---- built inputs -------------------------------------------------------------------- */

struct gen {
    const uint8_t *d;
    size_t n;
    size_t pos;
};

static uint8_t gen_byte(struct gen *g)
{
    return g->pos < g->n ? g->d[g->pos++] : 0;
}

/* The next up-to-<max> input bytes, quoted as a JSON string (caller frees). */
static char *gen_string(struct gen *g, size_t max)
{
    size_t len = gen_byte(g) % (max + 1);
    struct sbuf q = {0};

    if (len > g->n - g->pos) {
        len = g->n - g->pos;
    }
    gotext_json_quote(&q, (const char *)g->d + g->pos, len);
    g->pos += len;
    return sbuf_take(&q);
}

static void check_built(const uint8_t *data, size_t size)
{
    struct gen g = {data, size, 0};
    uint8_t f = gen_byte(&g);
    enum evscan_type type = (enum evscan_type)(gen_byte(&g) % 5);
    uint64_t rv = ((uint64_t)gen_byte(&g) << 24 | (uint64_t)gen_byte(&g) << 8) + 1;
    int64_t stamp = (int64_t)gen_byte(&g) << 40 | (int64_t)gen_byte(&g) << 3;
    int code = gen_byte(&g) * 3;
    char *name = gen_string(&g, 16), *akey = gen_string(&g, 24), *aval = gen_string(&g, 24);
    char *spec = gen_string(&g, 200);
    char meta[2048], obj[4096], line[8192], list[8192];
    struct evscan_event ev;
    struct kube_event kev;
    size_t off = 0, len = 0;
    char rv_text[24];

    snprintf(rv_text, sizeof(rv_text), "%" PRIu64, rv);
    snprintf(meta, sizeof(meta),
             "{\"name\":%s,%s\"resourceVersion\":\"%s\",\"annotations\":{%s:%s,"
             "\"kwp.io/stamp-ns\":\"%" PRId64 "\"%s},\"labels\":{\"a\":[1,{\"}\":\"]\"}]}}",
             name, f & 1 ? "\"uid\":\"x\\\"y\"," : "", rv_text, akey, aval, stamp,
             f & 2 ? ",\"k8s.io/initial-events-end\":\"true\"" : "");
    if (f & 4) {
        snprintf(obj, sizeof(obj), "{\"kind\":\"Pod\",\"spec\":{\"s\":%s},\"metadata\":%s%s}", spec,
                 meta, type == EVSCAN_ERROR ? "" : ",\"status\":{}");
    } else {
        snprintf(obj, sizeof(obj), "{\"metadata\" : %s , \"spec\":[%s,-1.5e3,true,null]}", meta,
                 spec);
    }
    if (type == EVSCAN_ERROR) {
        snprintf(obj, sizeof(obj),
                 "{\"kind\":\"Status\",\"metadata\":{},\"message\":%s,"
                 "\"code\":%d}",
                 spec, code);
    }
    if (f & 8) {
        snprintf(line, sizeof(line), "{\"object\":%s,\"type\":\"%s\"}", obj, type_names[type]);
    } else {
        snprintf(line, sizeof(line), " {\"type\": \"%s\",\n\"object\":%s}\r", type_names[type],
                 obj);
    }
    CHECK(evscan_event(line, strlen(line), &ev) == 0);
    CHECK(ev.type == type);
    CHECK(kube_json_event_parse(line, strlen(line), &kev) == 0 && (int)kev.type == (int)type);
    if (type == EVSCAN_ERROR) {
        CHECK(ev.code == code && ev.rv_len == 0 && ev.stamp_ns == -1);
    } else {
        CHECK(ev.rv_len == strlen(rv_text) && memcmp(line + ev.rv_off, rv_text, ev.rv_len) == 0);
        CHECK(ev.stamp_ns == stamp && ev.code == 0);
        /* (unless the arbitrary annotation happens to be the initial-events-end one) */
        CHECK(ev.initial_end == ((f & 2) != 0) ||
              strcmp(akey, "\"" EVSCAN_INITIAL_END_KEY "\"") == 0);
    }

    snprintf(list, sizeof(list),
             "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"continue\":%s,"
             "\"resourceVersion\":\"%s\"},\"items\":[%s]}",
             aval, rv_text, type == EVSCAN_ERROR ? "" : obj);
    CHECK(evscan_list_rv(list, strlen(list), &off, &len) == 0);
    CHECK(len == strlen(rv_text) && memcmp(list + off, rv_text, len) == 0);
    check_list_raw(list, strlen(list), data, size);
    free(name);
    free(akey);
    free(aval);
    free(spec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *d = malloc(size ? size : 1);

    memcpy(d, data, size);
    check_event_raw(d, size);
    check_list_raw(d, size, data, size);
    free(d);
    check_built(data, size);
    return 0;
}
