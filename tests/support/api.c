/*
 * api.c - Kubernetes API helpers for integration tests (see api.h): asserted requests,
 * writes that return their RV, /_sim/stats, and watch lines parsed as events.
 */
#include "tests/support/api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "tests/support/json.h"

void api_url(const char *base, const char *path, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s%s", base, path);

    cr_assert(n > 0 && (size_t)n < cap, "URL too long: %.300s", path);
}

void api_req(const char *base, const char *method, const char *path, const char *ctype,
             const char *body, const char *const *hdrs, struct http_resp *r)
{
    char url[API_URL_CAP];
    int rc;

    api_url(base, path, url, sizeof(url));
    rc = http_do(method, url, ctype, body, hdrs, API_REQ_MS, r);
    cr_assert_eq(rc, 0,
                 "%s %.300s: no complete response within %ld ms (%s): HTTP %ld, %zu body bytes "
                 "received, body starts: %.300s",
                 method, url, API_REQ_MS, rc == -ETIMEDOUT ? "timed out" : "transfer error",
                 r->code, r->body_len, r->body ? r->body : "");
}

void api_expect_header(const struct http_resp *r, const char *name, const char *value)
{
    char got[512];
    bool has = http_resp_header(r, name, got, sizeof(got));

    if (value == NULL) {
        cr_assert_not(has, "unexpected %s: %s", name, got);
        return;
    }
    cr_assert(has, "no %s header in:\n%s", name, r->headers);
    cr_assert_str_eq(got, value, "header %s: \"%s\", expected \"%s\"", name, got, value);
}

/* ---- writes ----------------------------------------------------------------------------- */

void api_make_ns(const char *base, const char *ns)
{
    char body[256];
    struct http_resp r;

    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ns);
    api_req(base, "POST", "/api/v1/namespaces", "application/json", body, NULL, &r);
    cr_assert(r.code == 201 || r.code == 409, "create namespace %s: HTTP %ld %s", ns, r.code,
              r.body);
    http_resp_free(&r);
}

uint64_t api_written_rv(struct http_resp *r, long want, const char *what, cJSON **out)
{
    cJSON *j;
    uint64_t rv;

    cr_assert_eq(r->code, want, "%s: HTTP %ld, expected %ld: %.500s", what, r->code, want, r->body);
    j = json_body(r);
    rv = json_rv(j);
    http_resp_free(r);
    if (out != NULL) {
        *out = j;
    } else {
        cJSON_Delete(j);
    }
    return rv;
}

uint64_t api_cm_create(const char *base, const char *ns, const char *name, const char *labels,
                       const char *val, cJSON **out)
{
    char path[256];
    size_t cap;
    char *body;
    struct http_resp r;

    val = val ? val : "v";
    cap = strlen(val) + strlen(name) + (labels ? strlen(labels) : 0) + 256;
    body = malloc(cap);
    cr_assert_not_null(body);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps", ns);
    snprintf(body, cap,
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"%s%s},"
             "\"data\":{\"k\":\"%s\"}}",
             name, labels ? ",\"labels\":" : "", labels ? labels : "", val);
    api_req(base, "POST", path, "application/json", body, NULL, &r);
    free(body);
    return api_written_rv(&r, 201, "create configmap", out);
}

uint64_t api_cm_patch(const char *base, const char *ns, const char *name, const char *patch,
                      cJSON **out)
{
    char path[256];
    struct http_resp r;

    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps/%s", ns, name);
    api_req(base, "PATCH", path, "application/merge-patch+json", patch, NULL, &r);
    return api_written_rv(&r, 200, "patch configmap", out);
}

uint64_t api_cm_delete(const char *sim, const char *ns, const char *name, cJSON **out)
{
    char path[256];
    struct http_resp r;

    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps/%s", ns, name);
    api_req(sim, "DELETE", path, NULL, NULL, NULL, &r);
    cr_assert_eq(r.code, 200, "delete %s/%s: HTTP %ld %s", ns, name, r.code, r.body);
    if (out != NULL) {
        *out = json_body(&r);
    }
    http_resp_free(&r);
    return api_sim_stat(sim, "revision");
}

uint64_t api_pod_create(const char *base, const char *ns, const char *name, const char *labels)
{
    char path[256];
    char body[1024];
    struct http_resp r;

    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", ns);
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\"%s%s},"
             "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}",
             name, labels ? ",\"labels\":" : "", labels ? labels : "");
    api_req(base, "POST", path, "application/json", body, NULL, &r);
    return api_written_rv(&r, 201, "create pod", NULL);
}

/* ---- /_sim/stats ---------------------------------------------------------------------- */

cJSON *api_sim_stats(const char *sim)
{
    struct http_resp r;
    cJSON *j;

    api_req(sim, "GET", "/_sim/stats", NULL, NULL, NULL, &r);
    cr_assert_eq(r.code, 200, "/_sim/stats: HTTP %ld %s", r.code, r.body);
    j = json_body(&r);
    http_resp_free(&r);
    return j;
}

uint64_t api_sim_stat(const char *sim, const char *path)
{
    cJSON *st = api_sim_stats(sim);
    uint64_t v = json_num(st, path);

    cJSON_Delete(st);
    return v;
}

/* ---- watches -------------------------------------------------------------------------- */

struct watch *api_watch(const char *base, const char *path, long want)
{
    char url[API_URL_CAP];
    struct watch *w;
    long code;

    api_url(base, path, url, sizeof(url));
    w = watch_open(url, API_STREAM_MS);
    cr_assert_not_null(w, "watch_open %s", url);
    code = watch_wait_status(w, API_REQ_MS);
    cr_assert_eq(code, want, "watch %s: HTTP %ld, expected %ld", url, code, want);
    return w;
}

const char *api_wline(struct watch *w, size_t i)
{
    int rc = watch_wait_lines(w, i + 1, API_LINE_MS);
    size_t have = watch_line_count(w);

    cr_assert_eq(rc, 0, "watch line %zu: %s (have %zu%s%.300s)", i,
                 rc == -EPIPE ? "stream ended" : "timed out", have, have ? ", last: " : "",
                 have ? watch_line(w, have - 1, NULL) : "");
    return watch_line(w, i, NULL);
}

void api_ev_parse(const char *line, struct api_ev *e)
{
    memset(e, 0, sizeof(*e));
    e->root = json_parse(line, strlen(line));
    e->type = json_str(e->root, "type");
    e->obj = json_at(e->root, "object");
    cr_assert_not_null(e->type, "event without type: %.300s", line);
    cr_assert(cJSON_IsObject(e->obj), "event without object: %.300s", line);
    e->name = json_txt(e->obj, "metadata.name");
    if (json_str(e->obj, "metadata.resourceVersion") != NULL) {
        e->rv = json_rv(e->obj);
    }
}

void api_ev_free(struct api_ev *e)
{
    cJSON_Delete(e->root);
    memset(e, 0, sizeof(*e));
}

void api_expect_ev(struct watch *w, size_t i, const char *type, const char *name, uint64_t rv)
{
    const char *line = api_wline(w, i);
    struct api_ev e;

    api_ev_parse(line, &e);
    cr_assert_str_eq(e.type, type, "line %zu: %s, expected %s: %.300s", i, e.type, type, line);
    if (name != NULL) {
        cr_assert_str_eq(e.name, name, "line %zu: object %s, expected %s: %.300s", i, e.name, name,
                         line);
    }
    cr_assert_eq(e.rv, rv, "line %zu: rv %" PRIu64 ", expected %" PRIu64 ": %.300s", i, e.rv, rv,
                 line);
    api_ev_free(&e);
}

void api_expect_line(struct watch *w, size_t i, const char *expected)
{
    const char *line = api_wline(w, i);

    cr_assert_str_eq(line, expected, "line %zu\nexpected: %s\n     got: %s", i, expected, line);
}

size_t api_skip_line(struct watch *w, size_t i, const char *line)
{
    size_t from = i;

    while (strcmp(api_wline(w, i), line) == 0) {
        cr_assert_lt(i - from, (size_t)API_REPEAT_MAX, "line %zu: %zu repeats of %s", i, i - from,
                     line);
        i++;
    }
    return i;
}

void api_expect_repeats(struct watch *w, size_t i, size_t min, const char *line)
{
    size_t have = watch_line_count(w);

    cr_assert_geq(have, i + min, "expected %zu lines from %zu on, have %zu: %s", min, i, have,
                  line);
    for (size_t j = i; j < have; j++) {
        cr_assert_str_eq(watch_line(w, j, NULL), line, "line %zu", j);
    }
}
