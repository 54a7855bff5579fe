/*
 * test_gate.c - the auth gate behind a real http_server on 127.0.0.1:0, with auth.h's engine
 * over a fake transport (a scripted TokenReview/SubjectAccessReview answerer that counts
 * reviews, can be slow, and can be down): the exact 401/403/500 answers, the caches, single
 * flight, the fast path, impersonation, and that a slow review never holds an MHD worker.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <curl/curl.h>

#include "cache/sbuf.h"
#include "proxy/gate.h"
#include "proxy/http_server.h"
#include "proxy/passthrough.h"
#include "proxy/upstream.h"

/* ---- the fake reviewer ------------------------------------------------------------------ */

struct fake {
    atomic_int tokenreviews;
    atomic_int sars;
    atomic_bool down;
    int delay_ms;
};

static struct fake fk;

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static const char *str_at(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* alice (token "good"): list/watch pods in b, get /metrics; bob ("bob"): impersonate user
 * carol and group g1; carol: get pods in b; system:anonymous: nothing. */
static bool sar_allows(const cJSON *spec)
{
    const char *user = str_at(spec, "user");
    const cJSON *ra = cJSON_GetObjectItemCaseSensitive(spec, "resourceAttributes");
    const cJSON *nra = cJSON_GetObjectItemCaseSensitive(spec, "nonResourceAttributes");
    const char *verb = str_at(ra ? ra : nra, "verb");

    if (user[0] == '\0') {
        return true; /* token "blank": a reviewer that names nobody */
    }
    if (nra != NULL) {
        return strcmp(user, "alice") == 0 && strcmp(str_at(nra, "path"), "/metrics") == 0;
    }
    if (strcmp(user, "alice") == 0) {
        return strcmp(str_at(ra, "resource"), "pods") == 0 &&
               strcmp(str_at(ra, "namespace"), "b") == 0 &&
               (strcmp(verb, "list") == 0 || strcmp(verb, "watch") == 0);
    }
    if (strcmp(user, "bob") == 0 && strcmp(verb, "impersonate") == 0) {
        return (strcmp(str_at(ra, "resource"), "users") == 0 &&
                strcmp(str_at(ra, "name"), "carol") == 0) ||
               (strcmp(str_at(ra, "resource"), "groups") == 0 &&
                strcmp(str_at(ra, "name"), "g1") == 0);
    }
    if (strcmp(user, "carol") == 0) {
        return strcmp(verb, "get") == 0 && strcmp(str_at(ra, "resource"), "pods") == 0;
    }
    return false;
}

static int fake_send(void *ctx, const char *path, const char *body, size_t len, struct sbuf *resp,
                     long *code, char *err, size_t err_len)
{
    cJSON *req = cJSON_ParseWithLength(body, len);
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(req, "spec");

    (void)ctx;
    if (fk.delay_ms > 0) {
        nap_ms(fk.delay_ms);
    }
    if (atomic_load(&fk.down)) {
        cJSON_Delete(req);
        snprintf(err, err_len, "connection refused");
        return -ECONNREFUSED;
    }
    *code = 201;
    if (strstr(path, "tokenreviews")) {
        const char *tok = str_at(spec, "token");
        atomic_fetch_add(&fk.tokenreviews, 1);
        if (strcmp(tok, "blank") == 0) {
            sbuf_str(resp, "{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"\"}}}");
        } else if (strcmp(tok, "good") == 0 || strcmp(tok, "bob") == 0) {
            sbuf_printf(resp,
                        "{\"kind\":\"TokenReview\",\"apiVersion\":\"authentication.k8s.io/v1\","
                        "\"status\":{\"authenticated\":true,\"user\":{\"username\":\"%s\","
                        "\"uid\":\"42\",\"groups\":[\"devs\"]}}}",
                        strcmp(tok, "good") == 0 ? "alice" : "bob");
        } else {
            sbuf_str(resp, "{\"kind\":\"TokenReview\",\"apiVersion\":\"authentication.k8s.io/v1\","
                           "\"status\":{\"user\":{}}}");
        }
    } else {
        atomic_fetch_add(&fk.sars, 1);
        sbuf_printf(resp,
                    "{\"kind\":\"SubjectAccessReview\",\"apiVersion\":\"authorization.k8s.io/v1\","
                    "\"status\":{\"allowed\":%s}}",
                    sar_allows(spec) ? "true" : "false");
    }
    cJSON_Delete(req);
    return 0;
}

/* ---- the server ------------------------------------------------------------------------ */

static struct gate *g_gate;

static void handle(void *app, struct http_req *req)
{
    const struct identity *id;
    struct sbuf b = {0};

    (void)app;
    if (strcmp(http_req_path(req), "/nogate") == 0) {
        http_reply(req, 200, "text/plain", "ok", 2);
        return;
    }
    if (gate_check(g_gate, req) != GATE_ALLOW) {
        return;
    }
    id = gate_identity(req);
    cr_assert_not_null(id);
    sbuf_str(&b, id->user);
    for (size_t i = 0; i < id->n_groups; i++) {
        sbuf_printf(&b, ",%s", id->groups[i]);
    }
    http_reply(req, 200, "text/plain", b.p, b.len);
    sbuf_free(&b);
}

struct env {
    struct auth *auth;
    struct gate *gate;
    struct http_server *srv;
};

static void env_start(struct env *e, bool anonymous, unsigned mhd_threads)
{
    struct auth_opts ao = {.authn_ttl_ms = 10000,
                           .authz_ttl_ms = 10000,
                           .authz_denied_ttl_ms = 10000,
                           .send = fake_send};
    struct gate_opts go = {.anonymous = anonymous};
    struct http_server_opts so = {
        .listen = "127.0.0.1:0", .threads = mhd_threads, .max_connections = 64};
    char err[256];

    memset(&fk, 0, sizeof(fk));
    e->auth = auth_new(&ao);
    cr_assert_not_null(e->auth);
    go.auth = e->auth;
    e->gate = gate_new(&go, err, sizeof(err));
    cr_assert_not_null(e->gate, "%s", err);
    g_gate = e->gate;
    e->srv = http_server_start(&so, handle, NULL, err, sizeof(err));
    cr_assert_not_null(e->srv, "%s", err);
}

static void env_stop(struct env *e)
{
    http_server_quiesce(e->srv);
    gate_free(e->gate);
    http_server_stop(e->srv);
    auth_free(e->auth);
}

struct resp {
    long code;
    struct sbuf body;
    struct sbuf headers;
};

static size_t on_body(char *d, size_t s, size_t n, void *ud)
{
    sbuf_put(ud, d, s * n);
    return s * n;
}

/* GET <path> with <token> (NULL: none) and extra header lines (NULL-terminated or NULL). */
static void get(const struct env *e, const char *path, const char *token, const char *const *hdrs,
                struct resp *r)
{
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    char url[512], line[256];

    memset(r, 0, sizeof(*r));
    snprintf(url, sizeof(url), "%s%s", http_server_url(e->srv), path);
    if (token) {
        snprintf(line, sizeof(line), "Authorization: Bearer %s", token);
        h = curl_slist_append(h, line);
    }
    for (size_t i = 0; hdrs && hdrs[i]; i++) {
        h = curl_slist_append(h, hdrs[i]);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r->body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r->headers);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
    cr_assert_eq(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->code);
    sbuf_put(&r->body, "", 0);
    sbuf_put(&r->headers, "", 0);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

static void resp_free(struct resp *r)
{
    sbuf_free(&r->body);
    sbuf_free(&r->headers);
}

static void expect(const struct resp *r, long code, const char *body)
{
    cr_assert_eq(r->code, code, "code %ld, want %ld: %s", r->code, code, r->body.p);
    cr_assert_str_eq(r->body.p, body);
}

#define UNAUTHORIZED                                                                               \
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","           \
    "\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}\n"

/* ---- tests ----------------------------------------------------------------------------- */

Test(gate, no_token_is_401_without_a_review, .timeout = 30)
{
    struct env e;
    struct resp r;

    env_start(&e, false, 1);
    get(&e, "/api/v1/namespaces/b/pods", NULL, NULL, &r);
    expect(&r, 401, UNAUTHORIZED);
    cr_assert(strstr(r.headers.p, "application/json") != NULL);
    resp_free(&r);
    get(&e, "/api/v1/namespaces/b/pods", NULL,
        (const char *const[]){"Authorization: Basic eDp5", NULL}, &r);
    expect(&r, 401, UNAUTHORIZED);
    resp_free(&r);
    cr_assert_eq(atomic_load(&fk.tokenreviews), 0);
    env_stop(&e);
}

Test(gate, bad_token_is_401_and_cached, .timeout = 30)
{
    struct env e;
    struct resp r;

    env_start(&e, true, 1); /* a token that fails is never anonymous */
    for (int i = 0; i < 3; i++) {
        get(&e, "/api/v1/namespaces/b/pods", "nope", NULL, &r);
        expect(&r, 401, UNAUTHORIZED);
        resp_free(&r);
    }
    cr_assert_eq(atomic_load(&fk.tokenreviews), 1);
    cr_assert_eq(atomic_load(&fk.sars), 0);
    env_stop(&e);
}

Test(gate, allowed_requests_review_once_then_stay_on_the_worker, .timeout = 30)
{
    struct env e;
    struct resp r;
    struct gate_stats st;

    env_start(&e, false, 1);
    for (int i = 0; i < 5; i++) {
        get(&e, "/api/v1/namespaces/b/pods?limit=5", "good", NULL, &r);
        expect(&r, 200, "alice,devs,system:authenticated");
        resp_free(&r);
    }
    cr_assert_eq(atomic_load(&fk.tokenreviews), 1);
    cr_assert_eq(atomic_load(&fk.sars), 1);
    gate_stats(e.gate, &st);
    cr_assert_eq(st.slow, 1);
    cr_assert_eq(st.fast, 4);
    cr_assert_eq(st.authz_allowed, 5);
    env_stop(&e);
}

Test(gate, denied_get_and_watch_are_the_exact_403, .timeout = 30)
{
    struct env e;
    struct resp r;

    env_start(&e, false, 1);
    get(&e, "/api/v1/namespaces/b/pods/x", "good", NULL, &r);
    expect(&r, 403,
           "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
           "\"message\":\"pods \\\"x\\\" is forbidden: User \\\"alice\\\" cannot get resource "
           "\\\"pods\\\" in API group \\\"\\\" in the namespace \\\"b\\\"\",\"reason\":"
           "\"Forbidden\",\"details\":{\"name\":\"x\",\"kind\":\"pods\"},\"code\":403}\n");
    cr_assert(strstr(r.headers.p, "X-Content-Type-Options: nosniff") != NULL);
    resp_free(&r);
    get(&e, "/api/v1/pods?watch=1", "good", NULL, &r);
    expect(&r, 403,
           "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
           "\"message\":\"pods is forbidden: User \\\"alice\\\" cannot watch resource \\\"pods\\\" "
           "in API group \\\"\\\" at the cluster scope\",\"reason\":\"Forbidden\",\"details\":"
           "{\"kind\":\"pods\"},\"code\":403}\n");
    resp_free(&r);
    get(&e, "/metrics", "good", NULL, &r);
    expect(&r, 200, "alice,devs,system:authenticated");
    resp_free(&r);
    get(&e, "/metrics", "bob", NULL, &r);
    expect(&r, 403,
           "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
           "\"message\":\"forbidden: User \\\"bob\\\" cannot get path \\\"/metrics\\\"\","
           "\"reason\":\"Forbidden\",\"details\":{},\"code\":403}\n");
    resp_free(&r);
    /* denied answers are cached too */
    get(&e, "/api/v1/namespaces/b/pods/x", "good", NULL, &r);
    cr_assert_eq(r.code, 403);
    resp_free(&r);
    cr_assert_eq(atomic_load(&fk.sars), 4);
    env_stop(&e);
}

Test(gate, anonymous_when_allowed, .timeout = 30)
{
    struct env e;
    struct resp r;

    env_start(&e, true, 1);
    get(&e, "/api/v1/namespaces/b/pods", NULL, NULL, &r);
    expect(&r, 403,
           "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
           "\"message\":\"pods is forbidden: User \\\"system:anonymous\\\" cannot list resource "
           "\\\"pods\\\" in API group \\\"\\\" in the namespace \\\"b\\\"\",\"reason\":"
           "\"Forbidden\",\"details\":{\"kind\":\"pods\"},\"code\":403}\n");
    resp_free(&r);
    cr_assert_eq(atomic_load(&fk.tokenreviews), 0);
    env_stop(&e);
}

Test(gate, reviewer_down_is_401_or_500_never_allow, .timeout = 60)
{
    struct env e;
    struct resp r;

    env_start(&e, true, 1);
    atomic_store(&fk.down, true);
    get(&e, "/api/v1/namespaces/b/pods", "good", NULL, &r);
    expect(&r, 401, UNAUTHORIZED);
    resp_free(&r);
    /* authenticated from the cache, then the SAR cannot be made: 500 */
    atomic_store(&fk.down, false);
    get(&e, "/api/v1/namespaces/b/pods/y", "good", NULL, &r);
    cr_assert_eq(r.code, 403);
    resp_free(&r);
    atomic_store(&fk.down, true);
    get(&e, "/api/v1/namespaces/b/pods?x=%3C1%3E", "good", NULL, &r);
    expect(&r, 500,
           "Internal Server Error: \"/api/v1/namespaces/b/pods?x=%3C1%3E\": review request "
           "failed: connection refused\n");
    cr_assert(strstr(r.headers.p, "text/plain; charset=utf-8") != NULL);
    cr_assert(strstr(r.headers.p, "X-Content-Type-Options: nosniff") != NULL);
    resp_free(&r);
    env_stop(&e);
}

Test(gate, impersonation_is_authorized_for_the_caller, .timeout = 30)
{
    struct env e;
    struct resp r;

    env_start(&e, false, 1);
    get(&e, "/api/v1/namespaces/b/pods/p", "bob",
        (const char *const[]){"Impersonate-User: carol", "Impersonate-Group: g1", NULL}, &r);
    expect(&r, 200, "carol,g1,system:authenticated");
    resp_free(&r);
    get(&e, "/api/v1/namespaces/b/pods/p", "bob",
        (const char *const[]){"Impersonate-User: dave", NULL}, &r);
    expect(&r, 403,
           "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
           "\"message\":\"users \\\"dave\\\" is forbidden: User \\\"bob\\\" cannot impersonate "
           "resource \\\"users\\\" in API group \\\"\\\" at the cluster scope\",\"reason\":"
           "\"Forbidden\",\"details\":{\"name\":\"dave\",\"kind\":\"users\"},\"code\":403}\n");
    resp_free(&r);
    get(&e, "/api/v1/namespaces/b/pods/p", "bob",
        (const char *const[]){"Impersonate-User: carol", "Impersonate-Group: g2", NULL}, &r);
    cr_assert_eq(r.code, 403);
    cr_assert(strstr(r.body.p, "groups \\\"g2\\\" is forbidden: User \\\"bob\\\"") != NULL, "%s",
              r.body.p);
    resp_free(&r);
    get(&e, "/api/v1/namespaces/b/pods/p", "bob",
        (const char *const[]){"Impersonate-Group: g1", NULL}, &r);
    cr_assert_eq(r.code, 500);
    cr_assert(strstr(r.body.p, "without impersonating a user") != NULL, "%s", r.body.p);
    resp_free(&r);
    env_stop(&e);
}

struct par {
    const struct env *e;
    long code;
};

static void *par_get(void *arg)
{
    struct par *p = arg;
    struct resp r;

    get(p->e, "/api/v1/namespaces/b/pods", "good", NULL, &r);
    p->code = r.code;
    resp_free(&r);
    return NULL;
}

Test(gate, single_flight_and_the_worker_stays_free, .timeout = 60)
{
    struct env e;
    struct par ps[8];
    pthread_t th[8];
    struct resp r;
    struct timespec t0, t1;

    env_start(&e, false, 1); /* one MHD worker: a blocking review would stall /nogate */
    fk.delay_ms = 400;
    for (int i = 0; i < 8; i++) {
        ps[i].e = &e;
        pthread_create(&th[i], NULL, par_get, &ps[i]);
    }
    nap_ms(100);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    get(&e, "/nogate", NULL, NULL, &r);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert_eq(r.code, 200);
    resp_free(&r);
    cr_assert_lt((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000, 250);
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(ps[i].code, 200);
    }
    cr_assert_eq(atomic_load(&fk.tokenreviews), 1);
    cr_assert_eq(atomic_load(&fk.sars), 1);
    env_stop(&e);
}

Test(gate, loopback_listen_addresses)
{
    cr_assert(gate_listen_is_loopback("127.0.0.1:8080"));
    cr_assert(gate_listen_is_loopback("127.3.0.1:0"));
    cr_assert(gate_listen_is_loopback("localhost:1"));
    cr_assert_not(gate_listen_is_loopback("0.0.0.0:8080"));
    cr_assert_not(gate_listen_is_loopback(":8080"));
    cr_assert_not(gate_listen_is_loopback("10.0.0.1:8080"));
}

/* ---- forwarding as the caller (passthrough_forward_as behind the gate) ------------------ */

static struct passthrough *g_pt;

/* The fake apiserver: answers with the identity headers it received, one per line. */
static bool echo_header(void *ctx, const char *name, const char *value)
{
    if (strcasecmp(name, "Authorization") == 0 || strncasecmp(name, "Impersonate-", 12) == 0) {
        sbuf_printf(ctx, "%s: %s\n", name, value);
    }
    return true;
}

static void upstream_handle(void *app, struct http_req *req)
{
    struct sbuf b = {0};

    (void)app;
    http_req_headers(req, echo_header, &b);
    sbuf_put(&b, "", 0);
    http_reply(req, 200, "text/plain", b.p, b.len);
    sbuf_free(&b);
}

static void front_handle(void *app, struct http_req *req)
{
    (void)app;
    if (gate_check(g_gate, req) != GATE_ALLOW) {
        return;
    }
    passthrough_forward_as(g_pt, req, gate_identity(req));
}

Test(gate, forwarded_requests_carry_the_callers_identity_never_its_credentials, .timeout = 60)
{
    struct env e;
    struct http_server_opts uo = {.listen = "127.0.0.1:0", .max_connections = 64};
    struct http_server *ups, *front;
    struct upstream_opts upo = {0};
    struct upstream *up;
    struct resp r;
    char err[256];

    env_start(&e, false, 1);
    ups = http_server_start(&uo, upstream_handle, NULL, err, sizeof(err));
    cr_assert_not_null(ups, "%s", err);
    upo.url = http_server_url(ups);
    upo.token = "kwp-own";
    up = upstream_new(&upo, err, sizeof(err));
    cr_assert_not_null(up, "%s", err);
    g_pt = passthrough_new(up, NULL, err, sizeof(err));
    cr_assert_not_null(g_pt, "%s", err);
    front = http_server_start(&uo, front_handle, NULL, err, sizeof(err));
    cr_assert_not_null(front, "%s", err);
    http_server_stop(e.srv);
    e.srv = front; /* get() talks to the forwarding front */

    get(&e, "/api/v1/namespaces/b/pods", "good", NULL, &r);
    expect(&r, 200,
           "Impersonate-User: alice\nImpersonate-Uid: 42\nImpersonate-Group: devs\n"
           "Impersonate-Group: system:authenticated\nAuthorization: Bearer kwp-own\n");
    resp_free(&r);
    /* the caller's own impersonation, allowed: the impersonated identity goes upstream */
    get(&e, "/api/v1/namespaces/b/pods/p", "bob",
        (const char *const[]){"Impersonate-User: carol", "Impersonate-Group: g1", NULL}, &r);
    expect(&r, 200,
           "Impersonate-User: carol\nImpersonate-Group: g1\n"
           "Impersonate-Group: system:authenticated\nAuthorization: Bearer kwp-own\n");
    resp_free(&r);
    /* an identity that cannot arrive intact is not forwarded */
    get(&e, "/api/v1/namespaces/b/pods", "blank", NULL, &r);
    expect(&r, 500,
           "Internal Server Error: \"/api/v1/namespaces/b/pods\": cannot carry the caller's "
           "identity upstream as impersonation headers\n");
    resp_free(&r);

    http_server_quiesce(front);
    passthrough_free(g_pt);
    env_stop(&e);
    http_server_stop(ups);
    upstream_free(up);
}
