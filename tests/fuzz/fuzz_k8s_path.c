/*
 * fuzz_k8s_path.c - proxy/k8s_path.c: request paths, ListOptions and query escaping.
 *
 * An input is a request target, "PATH[?QUERY]", decoded the way kwp does: the path as
 * libmicrohttpd hands it (%XX escapes), the query by k8s_query_parse (Go's url.ParseQuery, as
 * http_server.c's req_new does), at most 64 pairs (HTTP_MAX_QUERY). Then:
 *  - k8s_query_parse: every key and value lies inside the query's buffer; escaping a pair with
 *    gotext_query_escape_to and parsing it again gives back exactly that pair.
 *  - k8s_path_parse: the result is 0, -ENOENT or -EINVAL; on error the struct is zeroed; on 0
 *    every field is a NUL-terminated segment (no '/', not "." or ".."), resource and version
 *    are set, a legacy watch has no subresource, and the path rebuilt from the fields (with or
 *    without trailing slashes) parses to the same struct.
 *  - k8s_list_opts_parse_ex, with the real field-label hook (handlers_check_fields over the
 *    built-in kind of the path, or a kind without selectable fields) and once with a hook that
 *    answers -EXDEV: the hook runs at most once and its answer is returned as is; every
 *    failure is -EINVAL with a 400/422/500 Status whose message is non-empty, terminated inside
 *    its buffer and whose causes' texts are too; the Status body is the JSON the length says
 *    and carries that message; texts that echo an int or an rv unquote (Go rules) to the
 *    query's value. Every success agrees with the query: watch, rv (parsed like
 *    strconv.ParseUint), limit/timeoutSeconds (strtoll), selectors, the 1.34 defaulting, and
 *    a continue token decodes, re-encodes and decodes to the same rv and key.
 *  - gotext_query_escape_to of every value: percent-decoding the output gives the value back, and a
 *    short buffer gets a terminated prefix.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>

#include "cache/gotext.h"
#include "cache/rv.h"
#include "cache/selector.h"
#include "proxy/apires.h"
#include "proxy/continue_token.h"
#include "proxy/handlers.h"
#include "proxy/k8s_path.h"
#include "proxy/kstatus.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/goquote.h"

#define MAX_QUERY 64 /* http_server.c's HTTP_MAX_QUERY */

/* In-place %XX decoding (a bad escape stays as written); '+' is a space when <plus>. A decoded
 * NUL ends the C string, as it does for libmicrohttpd's callers. */
static void pct_decode(char *s, bool plus)
{
    char *w = s;

    for (const char *r = s; *r != '\0'; r++) {
        if (*r == '%' && goquote_hexval(r[1]) >= 0 && goquote_hexval(r[2]) >= 0) {
            *w++ = (char)(goquote_hexval(r[1]) * 16 + goquote_hexval(r[2]));
            r += 2;
        } else if (*r == '+' && plus) {
            *w++ = ' ';
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

/* ---- paths --------------------------------------------------------------------------- */

static void check_segment(const char *f, size_t cap, bool must_be_set)
{
    size_t n = strnlen(f, cap);

    CHECK(n < cap);
    CHECK(!must_be_set || n > 0);
    CHECK(strchr(f, '/') == NULL);
    CHECK(strcmp(f, ".") != 0 && strcmp(f, "..") != 0);
}

static void append(char *buf, size_t cap, const char *a, const char *b)
{
    size_t n = strlen(buf);

    CHECK(n + strlen(a) + strlen(b) < cap);
    memcpy(buf + n, a, strlen(a));
    memcpy(buf + n + strlen(a), b, strlen(b) + 1);
}

static void check_path(const char *path)
{
    static const struct k8s_path zero;
    struct k8s_path p, again;
    char rebuilt[2048];
    int rc = k8s_path_parse(path, &p);

    CHECK(rc == 0 || rc == -ENOENT || rc == -EINVAL);
    if (rc != 0) {
        CHECK(memcmp(&p, &zero, sizeof(p)) == 0);
        return;
    }
    check_segment(p.group, sizeof(p.group), false);
    check_segment(p.version, sizeof(p.version), true);
    check_segment(p.ns, sizeof(p.ns), false);
    check_segment(p.resource, sizeof(p.resource), true);
    check_segment(p.name, sizeof(p.name), false);
    check_segment(p.subresource, sizeof(p.subresource), false);
    CHECK(!p.legacy_watch || p.subresource[0] == '\0');
    CHECK(p.subresource[0] == '\0' || p.name[0] != '\0');

    rebuilt[0] = '\0';
    append(rebuilt, sizeof(rebuilt), p.group[0] != '\0' ? "/apis/" : "/api", p.group);
    append(rebuilt, sizeof(rebuilt), "/", p.version);
    if (p.legacy_watch) {
        append(rebuilt, sizeof(rebuilt), "/watch", "");
    }
    if (p.ns[0] != '\0') {
        append(rebuilt, sizeof(rebuilt), "/namespaces/", p.ns);
    }
    append(rebuilt, sizeof(rebuilt), "/", p.resource);
    if (p.name[0] != '\0') {
        append(rebuilt, sizeof(rebuilt), "/", p.name);
    }
    if (p.subresource[0] != '\0') {
        append(rebuilt, sizeof(rebuilt), "/", p.subresource);
    }
    CHECK(k8s_path_parse(rebuilt, &again) == 0);
    CHECK(memcmp(&p, &again, sizeof(p)) == 0);
    append(rebuilt, sizeof(rebuilt), "//", "");
    CHECK(k8s_path_parse(rebuilt, &again) == 0);
    CHECK(memcmp(&p, &again, sizeof(p)) == 0);
}

/* ---- ListOptions --------------------------------------------------------------------- */

struct hook {
    const struct apires *ar;
    bool exdev; /* answer -EXDEV (the proxy's "forward unknown fields") instead */
    int calls;
    int rc;       /* what it answered */
    size_t count; /* selector_count of what it was handed */
};

static int hook_fn(void *ctx, const struct selector *fields, struct kstatus *st)
{
    struct hook *h = ctx;

    h->calls++;
    h->count = selector_count(fields);
    h->rc = handlers_check_fields(h->ar, fields, st);
    if (h->rc != 0) {
        CHECK(h->rc == -EINVAL && st->code == 400 && st->message[0] != '\0');
        h->rc = h->exdev ? -EXDEV : -EINVAL;
    }
    return h->rc;
}

static const char *qget(const struct k8s_query_kv *q, size_t n, const char *key, bool *found)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(q[i].key, key) == 0) {
            *found = true;
            return q[i].value != NULL ? q[i].value : "";
        }
    }
    *found = false;
    return "";
}

/* If <msg> starts with <prefix> followed by a Go-quoted string, that string unquotes to
 * <want>. Texts cut at the Status message cap are not checked. */
static void check_quoted(const char *msg, const char *prefix, const char *want)
{
    size_t plen = strlen(prefix), n;
    char *bytes;

    if (strncmp(msg, prefix, plen) != 0 ||
        strlen(msg) + 1 >= sizeof(((struct kstatus *)0)->message)) {
        return;
    }
    bytes = malloc(strlen(msg) + 1);
    CHECK(goquote_unquote(msg + plen, bytes, &n) != NULL);
    CHECK(n == strlen(want) && memcmp(bytes, want, n) == 0);
    free(bytes);
}

static void check_status(const struct kstatus *st)
{
    size_t need, len;
    char *body;
    cJSON *j, *m;

    CHECK(memchr(st->message, '\0', sizeof(st->message)) != NULL);
    CHECK(st->message[0] != '\0');
    CHECK(st->code == 400 || st->code == 422 || st->code == 500);
    CHECK((st->reason == NULL) == (st->code == 500));
    CHECK(st->n_causes <= KSTATUS_MAX_CAUSES);
    for (size_t i = 0; i < st->n_causes; i++) {
        const char *cm = st->causes[i].message;

        CHECK(cm != NULL && st->causes[i].reason != NULL);
        if (cm[0] != '\0') {
            CHECK(cm > st->message && cm < st->message + sizeof(st->message));
            CHECK(memchr(cm, '\0', (size_t)(st->message + sizeof(st->message) - cm)) != NULL);
        }
    }
    need = kstatus_json(st, NULL, 0);
    body = malloc(need + 1);
    len = kstatus_json(st, body, need + 1);
    CHECK(len == need && strlen(body) == need);
    j = cJSON_ParseWithLength(body, need);
    CHECK(j != NULL);
    m = cJSON_GetObjectItemCaseSensitive(j, "message");
    CHECK(cJSON_IsString(m));
    CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(j, "code")));
    CHECK(cJSON_GetObjectItemCaseSensitive(j, "code")->valueint == st->code);
    cJSON_Delete(j);
    free(body);
}

static void check_continue(const char *tok)
{
    size_t cap = 3 * CONTINUE_TOKEN_MAX + 1, elen;
    char *start = malloc(cap), *start2 = malloc(cap), *enc;
    char err[512];
    int64_t rv = 0, rv2 = 0;

    CHECK(continue_token_decode(tok, &rv, start, cap, err, sizeof(err)) == 0);
    elen = continue_token_encode(rv, start, NULL, 0);
    enc = malloc(elen + 1);
    CHECK(continue_token_encode(rv, start, enc, elen + 1) == elen && strlen(enc) == elen);
    if (elen <= CONTINUE_TOKEN_MAX) {
        CHECK(continue_token_decode(enc, &rv2, start2, cap, err, sizeof(err)) == 0);
        CHECK(rv2 == rv && strcmp(start, start2) == 0);
    }
    free(enc);
    free(start2);
    free(start);
}

/* strconv.ParseInt(s, 10, 64), independently of k8s_path.c. Returns 0 or -1. */
static int ref_int64(const char *s, int64_t *out)
{
    __int128 v = 0;
    bool neg = *s == '-';

    s += *s == '-' || *s == '+';
    if (*s == '\0') {
        return -1;
    }
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9') {
            return -1;
        }
        v = v * 10 + (*s - '0');
        if (v > (__int128)INT64_MAX + 1) {
            return -1;
        }
    }
    v = neg ? -v : v;
    if (v > INT64_MAX) {
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

/* Convert_Slice_string_To_bool's "false": "0" or an ASCII case fold of "false" (the U+017F
 * fold is left to the unit tests). */
static bool ref_bool(const char *v)
{
    return !(strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0);
}

static void check_success(const struct k8s_query_kv *q, size_t n, bool legacy,
                          const struct k8s_list_opts *o)
{
    bool found;
    const char *v;
    uint64_t rv = 0;
    int64_t i64 = 0;

    v = qget(q, n, "watch", &found);
    CHECK(o->watch == ((found && ref_bool(v)) || legacy) || strstr(v, "\xc5\xbf") != NULL);
    v = qget(q, n, "resourceVersion", &found);
    CHECK(o->has_rv == found && strcmp(o->rv_str, v) == 0);
    if (o->rv_ok) {
        CHECK(rv_parse(o->rv_str, &rv) == 0 && rv == o->rv);
    }
    CHECK(o->rv_ok || (!o->watch && o->continue_tok != NULL));
    v = qget(q, n, "limit", &found);
    CHECK(!found || (ref_int64(v, &i64) == 0 && o->limit == i64));
    v = qget(q, n, "timeoutSeconds", &found);
    CHECK(!found || (ref_int64(v, &i64) == 0 && o->timeout_seconds == i64));
    v = qget(q, n, "labelSelector", &found);
    CHECK((o->label_selector != NULL) == (v[0] != '\0'));
    v = qget(q, n, "fieldSelector", &found);
    CHECK((o->field_selector != NULL) == (v[0] != '\0'));
    CHECK(o->send_initial_events >= -1 && o->send_initial_events <= 1);
    CHECK(o->pretty >= -1 && o->pretty <= 1);
    if (o->send_initial_defaulted) {
        CHECK(o->watch && o->send_initial_events == 1 && o->rvm == RVM_NOT_OLDER_THAN);
        CHECK(o->rv_str[0] == '\0' || strcmp(o->rv_str, "0") == 0);
    }
    if (o->rvm == RVM_EXACT) {
        CHECK(o->rv_str[0] != '\0' && strcmp(o->rv_str, "0") != 0 && o->continue_tok == NULL);
    }
    if (!o->watch) {
        CHECK(o->send_initial_events == -1);
        if (o->continue_tok != NULL) {
            CHECK(o->rv_str[0] == '\0' || strcmp(o->rv_str, "0") == 0);
            check_continue(o->continue_tok);
        }
    }
}

static void check_failure(const struct k8s_query_kv *q, size_t n, const struct kstatus *st)
{
    bool to_found, found;
    const char *to = qget(q, n, "timeoutSeconds", &to_found);
    const char *lim = qget(q, n, "limit", &found);
    const char *rvs = qget(q, n, "resourceVersion", &found);
    int64_t i64;

    check_status(st);
    /* timeoutSeconds is decoded before limit: its error wins when both are bad. */
    check_quoted(st->message, "strconv.ParseInt: parsing ",
                 to_found && ref_int64(to, &i64) != 0 ? to : lim);
    check_quoted(st->message, "invalid resource version: resourceVersion: Invalid value: ", rvs);
    check_quoted(st->message, "resourceVersion: Invalid value: ", rvs);
}

static void check_list_opts(const struct k8s_query_kv *q, size_t n, const struct k8s_path *p,
                            bool exdev)
{
    static const struct apires_kind plain = {
        .group = "", .version = "v1", .plural = "things", .kind = "Thing", .fields = {NULL}};
    const struct apires_kind *kind = apires_builtin(p->group, p->version, p->resource);
    struct apires ar;
    struct hook h;
    struct k8s_list_opts o, o2;
    struct kstatus st, st2;
    int rc, rc2;

    memset(&ar, 0, sizeof(ar));
    ar.kind = kind != NULL ? *kind : plain;
    memset(&h, 0, sizeof(h));
    h.ar = &ar;
    h.exdev = exdev;
    rc = k8s_list_opts_parse_ex(q, n, p->legacy_watch, hook_fn, &h, &o, &st);
    CHECK(h.calls <= 1);
    if (h.calls == 1 && h.rc != 0) {
        CHECK(rc == h.rc);
        check_status(&st);
        return;
    }
    CHECK(rc == 0 || rc == -EINVAL);
    if (rc == 0) {
        struct selector *f = selector_parse_fields(o.field_selector, NULL, 0);

        CHECK(h.calls == 1 && h.count == selector_count(f));
        selector_free(f);
        check_success(q, n, p->legacy_watch, &o);
    } else {
        check_failure(q, n, &st);
    }
    /* Without the hook: the same answer whenever the hook let it through. */
    rc2 = k8s_list_opts_parse(q, n, p->legacy_watch, &o2, &st2);
    CHECK(rc2 == rc);
    CHECK(rc != 0 || (o2.rv == o.rv && o2.watch == o.watch && o2.limit == o.limit));
    CHECK(rc == 0 || (st2.code == st.code && strcmp(st2.message, st.message) == 0));
}

static void check_escape(const char *v)
{
    size_t need = gotext_query_escape_to(v, NULL, 0);
    char *out = malloc(need + 1);
    char tiny[7];

    CHECK(gotext_query_escape_to(v, out, need + 1) == need && strlen(out) == need);
    CHECK(strspn(out, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~%+") ==
          need);
    pct_decode(out, true);
    CHECK(strcmp(out, v) == 0);
    memset(tiny, 'X', sizeof(tiny));
    CHECK(gotext_query_escape_to(v, tiny, sizeof(tiny)) == need);
    CHECK(strlen(tiny) == (need < sizeof(tiny) ? need : sizeof(tiny) - 1));
    free(out);
}

struct pairs {
    struct k8s_query_kv q[MAX_QUERY];
    size_t n;
    const char *lo, *hi; /* the query's buffer */
};

static bool one_pair(void *ctx, const char *key, const char *value)
{
    const char **want = ctx;

    CHECK(want[0] != NULL && strcmp(key, want[0]) == 0);
    CHECK(want[1] == NULL ? value == NULL : value != NULL && strcmp(value, want[1]) == 0);
    want[0] = NULL; /* a second pair would fail the check above */
    return true;
}

/* esc(key)=esc(value), or esc(key) for a NULL value, parses back to exactly (key, value). */
static void check_pair_round_trip(const char *key, const char *value)
{
    size_t kn = gotext_query_escape_to(key, NULL, 0);
    size_t vn = value ? gotext_query_escape_to(value, NULL, 0) : 0;
    char *raw = malloc(kn + vn + 2);
    const char *want[2] = {key, value};

    gotext_query_escape_to(key, raw, kn + 1);
    if (value != NULL) {
        raw[kn] = '=';
        gotext_query_escape_to(value, raw + kn + 1, vn + 1);
    }
    CHECK(k8s_query_parse(raw, one_pair, (void *)want) == 1 && want[0] == NULL);
    free(raw);
}

static bool collect_pair(void *ctx, const char *key, const char *value)
{
    struct pairs *c = ctx;

    CHECK(key >= c->lo && key < c->hi && (value == NULL || (value >= c->lo && value < c->hi)));
    check_pair_round_trip(key, value);
    if (c->n == MAX_QUERY) {
        return false;
    }
    c->q[c->n].key = key;
    c->q[c->n].value = value;
    c->n++;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct pairs c; /* 64 pairs: off the stack */
    struct k8s_path p;
    char *s = malloc(size + 1);
    char *query;

    memcpy(s, data, size);
    s[size] = '\0';
    query = strchr(s, '?');
    if (query != NULL) {
        *query++ = '\0';
    }
    pct_decode(s, false);
    check_path(s);

    c.n = 0;
    if (query != NULL) {
        c.lo = query;
        c.hi = query + strlen(query) + 1;
        (void)k8s_query_parse(query, collect_pair, &c);
    }
    (void)k8s_path_parse(s, &p); /* zeroed when not a resource path: core, no watch prefix */
    check_list_opts(c.q, c.n, &p, false);
    check_list_opts(c.q, c.n, &p, true);
    for (size_t i = 0; i < c.n; i++) {
        check_escape(c.q[i].value != NULL ? c.q[i].value : "");
    }
    free(s);
    return 0;
}
