/*
 * test_auth.c - proxy/auth.h over a scripted transport: what each answer becomes (identity,
 * 401, allow, 403 reason, 500), what is cached and for how long (fake clock), that failures
 * are never cached and never allow, single flight across threads, and bearertoken.go's
 * Authorization parsing.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/sbuf.h"
#include "proxy/auth.h"

/* ---- a scripted kube-apiserver ------------------------------------------------------- */

struct fake {
    const char *body; /* the answer to every POST */
    long code;
    int fail; /* send returns this (negative) instead */
    atomic_int calls;
    char last_path[128];
    char last_body[2048];
    atomic_int hold_for; /* the send waits until this many requests wait on its flight */
    struct auth *a;
};

static int64_t fake_now = 1000;

static int64_t fake_clock(void *ctx)
{
    (void)ctx;
    return fake_now;
}

static int fake_send(void *ctx, const char *path, const char *body, size_t len, struct sbuf *resp,
                     long *code, char *err, size_t err_len)
{
    struct fake *f = ctx;
    int hold = atomic_load(&f->hold_for);

    atomic_fetch_add(&f->calls, 1);
    snprintf(f->last_path, sizeof(f->last_path), "%s", path);
    snprintf(f->last_body, sizeof(f->last_body), "%.*s", (int)len, body);
    for (int i = 0; hold > 0 && i < 5000; i++) {
        struct review_cache_stats n, z;
        struct timespec nap = {0, 1000000};

        auth_stats(f->a, &n, &z);
        if ((int)(n.waits + z.waits) >= hold) {
            break;
        }
        nanosleep(&nap, NULL);
    }
    if (f->fail != 0) {
        snprintf(err, err_len, "connection refused");
        return f->fail;
    }
    *code = f->code;
    sbuf_str(resp, f->body);
    return 0;
}

static const char *const auds[] = {"kwp"};

static struct auth *new_auth(struct fake *f)
{
    struct auth_opts o = {
        .audiences = auds,
        .n_audiences = 1,
        .authn_ttl_ms = 10000,
        .authz_ttl_ms = 10000,
        .authz_denied_ttl_ms = 2000,
        .send = fake_send,
        .send_ctx = f,
        .clock = fake_clock,
    };

    f->code = f->code != 0 ? f->code : 201;
    f->a = auth_new(&o);
    cr_assert_not_null(f->a);
    return f->a;
}

#define TR_OK                                                                                      \
    "{\"kind\":\"TokenReview\",\"apiVersion\":\"authentication.k8s.io/v1\",\"status\":{"           \
    "\"authenticated\":true,\"user\":{\"username\":\"alice\",\"uid\":\"42\",\"groups\":[\"devs\"]" \
    ","                                                                                            \
    "\"extra\":{\"k\":[\"v\"]}},\"audiences\":[\"kwp\"]}}"

/* ---- authentication ------------------------------------------------------------------ */

Test(auth, token_authenticated_and_cached)
{
    struct fake f = {.body = TR_OK};
    struct auth *a = new_auth(&f);
    struct identity *id;
    char err[256];

    cr_assert_eq(auth_token(a, "tok", 3, &id, err, sizeof(err)), 0);
    cr_expect_str_eq(f.last_path, "/apis/authentication.k8s.io/v1/tokenreviews");
    cr_expect_str_eq(f.last_body, "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":"
                                  "\"TokenReview\",\"spec\":{\"token\":\"tok\",\"audiences\":"
                                  "[\"kwp\"]}}");
    cr_expect_str_eq(id->user, "alice");
    cr_assert_eq(id->n_groups, 2);
    cr_expect_str_eq(id->groups[1], "system:authenticated");
    identity_free(id);
    fake_now += 9999;
    cr_assert_eq(auth_token(a, "tok", 3, &id, err, sizeof(err)), 0);
    cr_expect_eq(atomic_load(&f.calls), 1);
    cr_expect_str_eq(id->groups[1], "system:authenticated");
    identity_free(id);
    fake_now += 1;
    cr_assert_eq(auth_token(a, "tok", 3, &id, err, sizeof(err)), 0);
    cr_expect_eq(atomic_load(&f.calls), 2);
    identity_free(id);
    /* another token is another key */
    cr_assert_eq(auth_token(a, "tok2", 4, &id, err, sizeof(err)), 0);
    cr_expect_eq(atomic_load(&f.calls), 3);
    identity_free(id);
    auth_free(a);
}

Test(auth, token_not_authenticated)
{
    struct fake f = {.body = "{\"status\":{\"user\":{}}}"};
    struct auth *a = new_auth(&f);
    struct identity *id;
    char err[256];

    cr_expect_eq(auth_token(a, "t", 1, &id, err, sizeof(err)), -EACCES);
    cr_expect_null(id);
    cr_expect_eq(auth_token(a, "t", 1, &id, err, sizeof(err)), -EACCES);
    cr_expect_eq(atomic_load(&f.calls), 1); /* a plain "no" is cached */
    cr_expect_str_eq(err, "token not authenticated");
    /* an answer with status.error is not */
    f.body = "{\"status\":{\"user\":{},\"error\":\"token expired\"}}";
    cr_expect_eq(auth_token(a, "u", 1, &id, err, sizeof(err)), -EACCES);
    cr_expect_str_eq(err, "token expired");
    cr_expect_eq(auth_token(a, "u", 1, &id, err, sizeof(err)), -EACCES);
    cr_expect_eq(atomic_load(&f.calls), 3);
    /* audiences that are not kwp's */
    f.body = "{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"x\"},"
             "\"audiences\":[\"other\"]}}";
    cr_expect_eq(auth_token(a, "v", 1, &id, err, sizeof(err)), -EACCES);
    cr_expect_eq(auth_token(a, "", 0, &id, err, sizeof(err)), -EACCES);
    auth_free(a);
}

Test(auth, token_review_failures_are_401_and_not_cached)
{
    struct fake f = {.body = TR_OK, .fail = -ECONNREFUSED};
    struct auth *a = new_auth(&f);
    struct identity *id;
    char err[256];

    cr_expect_eq(auth_token(a, "t", 1, &id, err, sizeof(err)), -EIO);
    cr_expect_str_eq(err, "review request failed: connection refused");
    cr_expect_null(id);
    f.fail = 0;
    f.code = 403;
    cr_expect_eq(auth_token(a, "t", 1, &id, err, sizeof(err)), -EIO);
    cr_expect_str_eq(err, "review request answered HTTP 403");
    f.code = 201;
    f.body = "{\"status\":{\"authenticated\":\"yes\"}}";
    cr_expect_eq(auth_token(a, "t", 1, &id, err, sizeof(err)), -EIO);
    cr_expect_str_eq(err, "malformed TokenReview response");
    cr_expect_eq(atomic_load(&f.calls), 3);
    f.body = TR_OK;
    cr_expect_eq(auth_token(a, "t", 1, &id, err, sizeof(err)), 0);
    identity_free(id);
    auth_free(a);
}

/* ---- authorization ------------------------------------------------------------------- */

static const struct review_attrs get_pod = {
    .is_resource = true,
    .verb = "get",
    .ns = "b",
    .group = "",
    .version = "v1",
    .resource = "pods",
    .subresource = "",
    .name = "x",
};

Test(auth, sar_allowed_denied_and_ttls)
{
    struct fake f = {.body = "{\"status\":{\"allowed\":true,\"reason\":\"RBAC: ok\"}}"};
    struct auth *a = new_auth(&f);
    struct identity *id = identity_new("alice");
    struct review_attrs other = get_pod;
    char err[256], *reason;
    bool allowed;

    cr_assert_eq(auth_check(a, id, &get_pod, &allowed, &reason, err, sizeof(err)), 0);
    cr_expect(allowed);
    cr_expect_str_eq(reason, "RBAC: ok");
    free(reason);
    cr_expect_str_eq(f.last_path, "/apis/authorization.k8s.io/v1/subjectaccessreviews");
    cr_expect_not_null(strstr(f.last_body, "\"name\":\"x\"},\"user\":\"alice\"}}"));

    f.body = "{\"status\":{\"allowed\":false,\"reason\":\"no rule\"}}";
    other.name = "y";
    cr_assert_eq(auth_check(a, id, &other, &allowed, &reason, err, sizeof(err)), 0);
    cr_expect_not(allowed);
    cr_expect_str_eq(reason, "no rule");
    free(reason);
    cr_expect_eq(atomic_load(&f.calls), 2);

    /* the denied answer lives 2 s, the allowed one 10 s */
    fake_now += 2000;
    cr_assert_eq(auth_check(a, id, &get_pod, &allowed, &reason, err, sizeof(err)), 0);
    cr_expect(allowed);
    free(reason);
    cr_expect_eq(atomic_load(&f.calls), 2);
    cr_assert_eq(auth_check(a, id, &other, &allowed, &reason, err, sizeof(err)), 0);
    free(reason);
    cr_expect_eq(atomic_load(&f.calls), 3);
    identity_free(id);
    auth_free(a);
}

Test(auth, sar_failures_are_500_never_allow)
{
    struct fake f = {.body = "{\"status\":{\"allowed\":true,\"denied\":true}}"};
    struct auth *a = new_auth(&f);
    struct identity *id = identity_new("alice");
    char err[256], *reason;
    bool allowed = true;

    cr_expect_eq(auth_check(a, id, &get_pod, &allowed, &reason, err, sizeof(err)), -EIO);
    cr_expect_not(allowed);
    cr_expect_null(reason);
    cr_expect_str_eq(err, "webhook subject access review returned both allow and deny response");
    f.body = "{\"status\":{\"allowed\":\"true\"}}";
    cr_expect_eq(auth_check(a, id, &get_pod, &allowed, &reason, err, sizeof(err)), -EIO);
    cr_expect_str_eq(err, "malformed SubjectAccessReview response");
    f.fail = -ETIMEDOUT;
    cr_expect_eq(auth_check(a, id, &get_pod, &allowed, &reason, err, sizeof(err)), -EIO);
    cr_expect_not(allowed);
    cr_expect_eq(atomic_load(&f.calls), 3);
    identity_free(id);
    auth_free(a);
}

/* ---- single flight ------------------------------------------------------------------- */

#define THREADS 6

struct flight {
    struct fake *f;
    struct identity *id;
    atomic_int allowed;
};

static void *check_worker(void *arg)
{
    struct flight *t = arg;
    char err[256], *reason = NULL;
    bool allowed = false;

    if (auth_check(t->f->a, t->id, &get_pod, &allowed, &reason, err, sizeof(err)) == 0 && allowed) {
        atomic_fetch_add(&t->allowed, 1);
    }
    free(reason);
    return NULL;
}

Test(auth, concurrent_checks_send_one_review, .timeout = 60)
{
    struct fake f = {.body = "{\"status\":{\"allowed\":true}}", .hold_for = THREADS - 1};
    struct flight t = {.f = &f};
    pthread_t th[THREADS];

    new_auth(&f);
    t.id = identity_new("alice");
    for (int i = 0; i < THREADS; i++) {
        cr_assert_eq(pthread_create(&th[i], NULL, check_worker, &t), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
    }
    cr_expect_eq(atomic_load(&f.calls), 1);
    cr_expect_eq(atomic_load(&t.allowed), THREADS);
    identity_free(t.id);
    auth_free(f.a);
}

/* ---- Authorization header ------------------------------------------------------------ */

Test(auth, bearer_token_parsing)
{
    static const struct {
        const char *header, *token;
    } cases[] = {
        {"Bearer abc", "abc"},
        {"bearer abc", "abc"},
        {"BEARER abc", "abc"},
        {"  Bearer abc \t", "abc"},
        {"Bearer abc def", "abc"},
        {"Bearer  abc", NULL}, /* SplitN(" "): the token is the empty part */
        {"Bearer", NULL},
        {"Bearer ", NULL},
        {"Bearer\tabc", NULL},
        {"Basic YWxpY2U6cHc=", NULL},
        {"", NULL},
        {"Bearerx abc", NULL},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *tok;
        size_t len;
        bool ok = auth_bearer_token(cases[i].header, &tok, &len);

        cr_expect_eq(ok, cases[i].token != NULL, "%s", cases[i].header);
        if (ok && cases[i].token != NULL) {
            cr_expect_eq(len, strlen(cases[i].token));
            cr_expect_eq(strncmp(tok, cases[i].token, len), 0, "%s", cases[i].header);
        }
    }
    cr_expect_not(auth_bearer_token(NULL, &(const char *){NULL}, &(size_t){0}));
}

Test(auth, options_checked)
{
    struct auth_opts o = {0};

    cr_expect_null(auth_new(&o)); /* no transport */
    auth_free(NULL);
}
