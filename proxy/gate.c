/*
 * gate.c - the auth gate (see gate.h): one decision function run twice at most, first on the
 * MHD worker with the caches alone (cached_only: any miss is -EAGAIN, nothing kept), then, on
 * a miss, on a review thread that may block; the same order as kube-apiserver's filters:
 * RequestInfo, authentication, impersonation, authorization.
 *
 * A request handed to the pool is suspended first; the review thread fills its gate_req and
 * resumes it (the one resume of that suspension), so the request, its headers (MHD's
 * strings, which live until completion) and its gate_req stay valid while queued. The queue
 * is guarded by g->mu; a gate_req is touched by one thread at a time (worker, then review
 * thread, then worker again).
 */
#include "proxy/gate.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cache/bug.h"
#include "cache/sbuf.h"
#include "proxy/authz_status.h"
#include "proxy/impersonate.h"
#include "proxy/kstatus.h"
#include "proxy/log.h"
#include "proxy/reqinfo.h"
#include "proxy/upstream.h"

#define GATE_MAX_IMP_HEADERS 256 /* Impersonate-* lines kept; more are a 400 */
#define GATE_ERR_LEN 512

struct gate_req {
    struct gate *g;
    struct http_req *req;
    bool decided;
    int code;   /* when decided: 0 = allowed, else the HTTP answer */
    char *body; /* the answer's body (owned) */
    size_t body_len;
    const char *ctype;           /* its Content-Type */
    struct identity *id;         /* allowed: whom the request acts as (owned) */
    struct identity *cert_id;    /* the verified client certificate's (owned), or NULL */
    int cert_rc;                 /* http_req_client_identity's answer */
    const char *authorization;   /* MHD's string, or NULL */
    struct impersonate_hdr *imp; /* MHD's strings; n_imp of them */
    size_t n_imp;
    bool too_many_imp;
    struct gate_req *next; /* under g->mu: the queue */
};

struct gate {
    struct gate_opts o;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct gate_req *head, *tail; /* under mu */
    size_t queued;                /* under mu */
    bool stop;                    /* under mu */
    pthread_t *threads;
    unsigned n_threads;
    atomic_ullong authn_ok, authn_anonymous, authn_failed;
    atomic_ullong authz_allowed, authz_denied, authz_errors, fast, slow;
};

/* ---- answers --------------------------------------------------------------------------- */

static void answer_status(struct gate_req *gr, const struct kstatus *st)
{
    size_t need = kstatus_json(st, NULL, 0);

    gr->body = xmalloc(need + 2);
    kstatus_json(st, gr->body, need + 1);
    gr->body[need] = '\n';
    gr->body_len = need + 1;
    gr->ctype = "application/json";
    gr->code = st->code;
}

/* <why> is for the request log only: the answer is the same 401 whatever failed. */
static void answer_unauthorized(struct gate_req *gr, const char *why)
{
    struct kstatus st;

    http_req_note(gr->req, "", "Unauthorized: %s", why);
    authz_status_unauthorized(&st);
    answer_status(gr, &st);
    atomic_fetch_add(&gr->g->authn_failed, 1);
}

static void answer_forbidden(struct gate_req *gr, const char *user, const struct review_attrs *a,
                             const char *reason)
{
    struct kstatus st;

    http_req_note(gr->req, user, "Forbidden: %s", reason && reason[0] ? reason : "not allowed");
    authz_status_forbidden(&st, user, a, reason);
    answer_status(gr, &st);
    atomic_fetch_add(&gr->g->authz_denied, 1);
}

static void answer_internal(struct gate_req *gr, const char *err)
{
    const char *uri = http_req_uri(gr->req);
    size_t need = authz_status_internal_error(uri, err, NULL, 0);

    http_req_note(gr->req, NULL, "authorization failed: %s", err);
    gr->body = xmalloc(need + 1);
    authz_status_internal_error(uri, err, gr->body, need + 1);
    gr->body_len = need;
    gr->ctype = AUTHZ_STATUS_TEXT_TYPE;
    gr->code = 500;
}

/* ---- the decision ---------------------------------------------------------------------- */

/* Who the caller is. 0 with *id, 1 when answered (401), -EAGAIN (cached_only, not cached). */
static int authenticate(struct gate_req *gr, bool cached_only, struct identity **id)
{
    struct gate *g = gr->g;
    const char *token;
    size_t len;
    char err[GATE_ERR_LEN];
    int rc;

    *id = NULL;
    if (gr->cert_rc == 0) {
        *id = identity_dup(gr->cert_id); /* a client certificate wins over a token */
        atomic_fetch_add(&g->authn_ok, 1);
        return 0;
    }
    if (gr->cert_rc == -EACCES) {
        log_debug("gate", "path=%s msg=\"unauthorized: client certificate does not verify\"",
                  http_req_path(gr->req));
        answer_unauthorized(gr, "client certificate does not verify");
        return 1;
    }
    if (auth_bearer_token(gr->authorization, &token, &len)) {
        rc = cached_only ? auth_token_cached(g->o.auth, token, len, id, err, sizeof(err))
                         : auth_token(g->o.auth, token, len, id, err, sizeof(err));
        if (rc == -EAGAIN) {
            return rc;
        }
        if (rc != 0) {
            log_debug("gate", "path=%s msg=\"unauthorized: %s\"", http_req_path(gr->req), err);
            answer_unauthorized(gr, err);
            return 1;
        }
        atomic_fetch_add(&g->authn_ok, 1);
        return 0;
    }
    if (!g->o.anonymous) {
        answer_unauthorized(gr, "no credentials");
        return 1;
    }
    *id = identity_anonymous_new();
    atomic_fetch_add(&g->authn_anonymous, 1);
    return 0;
}

/*
 * Authorizes <id> for <a> (from the cache alone when <cached_only>): 0 when allowed; 1 when
 * answered (403 for <id>, or the 500 of a review that could not be made); -EAGAIN.
 */
static int authorize(struct gate_req *gr, bool cached_only, const struct identity *id,
                     const struct review_attrs *a)
{
    struct auth *au = gr->g->o.auth;
    bool allowed = false;
    char *reason = NULL;
    char err[GATE_ERR_LEN];
    int rc = cached_only ? auth_check_cached(au, id, a, &allowed, &reason, err, sizeof(err))
                         : auth_check(au, id, a, &allowed, &reason, err, sizeof(err));

    if (rc == -EAGAIN) {
        return rc;
    }
    if (rc != 0) {
        atomic_fetch_add(&gr->g->authz_errors, 1);
        answer_internal(gr, err);
    } else if (!allowed) {
        answer_forbidden(gr, id->user, a, reason);
    }
    free(reason);
    return rc != 0 || !allowed ? 1 : 0;
}

/*
 * The caller's Impersonate-* headers: every check allowed for <*id>, which then becomes the
 * impersonated identity. 0 (go on), 1 (answered), -EAGAIN.
 */
static int impersonate(struct gate_req *gr, bool cached_only, struct identity **id)
{
    struct impersonate_req ir = {0};
    char err[GATE_ERR_LEN];
    int rc;

    if (gr->n_imp == 0 && !gr->too_many_imp) {
        return 0;
    }
    rc = gr->too_many_imp ? -E2BIG : impersonate_parse(gr->imp, gr->n_imp, &ir, err, sizeof(err));
    if (rc == -EINVAL) {
        answer_internal(gr, err);
        goto out;
    }
    if (rc != 0) {
        struct kstatus st;
        kstatus_set(&st, 400, "BadRequest", "impersonation headers: %s",
                    gr->too_many_imp ? "too many" : err);
        answer_status(gr, &st);
        goto out;
    }
    for (size_t i = 0; i < ir.n_checks; i++) {
        rc = authorize(gr, cached_only, *id, &ir.checks[i]);
        if (rc != 0) {
            goto out;
        }
    }
    identity_free(*id);
    *id = ir.as;
    ir.as = NULL; /* the checks are done with its strings */
out:
    impersonate_req_fini(&ir);
    if (rc == -EAGAIN) {
        return rc;
    }
    return gr->code != 0 ? 1 : 0;
}

/* Fills gr's verdict. 0 when decided, -EAGAIN (cached_only) when a review is not cached. */
static int decide(struct gate_req *gr, bool cached_only)
{
    struct gate *g = gr->g;
    struct http_req *req = gr->req;
    struct reqinfo ri = {0};
    struct review_attrs a;
    struct identity *id = NULL;
    const struct k8s_query_kv *q;
    size_t n;
    char err[GATE_ERR_LEN];
    int rc;

    q = http_req_query(req, &n);
    rc = reqinfo_parse(http_req_method(req), http_req_path(req), q, n, &ri);
    if (rc != 0) {
        snprintf(err, sizeof(err), "failed to create RequestInfo: %s%s", REQINFO_ERR_NO_KIND,
                 http_req_uri(req));
        answer_internal(gr, err);
        rc = 0;
        goto out;
    }
    rc = authenticate(gr, cached_only, &id);
    if (rc == 0) {
        rc = impersonate(gr, cached_only, &id);
    }
    if (rc != 0) {
        rc = rc == 1 ? 0 : rc;
        goto out;
    }
    reqinfo_attrs(&ri, &a);
    rc = authorize(gr, cached_only, id, &a);
    if (rc == -EAGAIN) {
        goto out;
    }
    if (rc == 0) {
        atomic_fetch_add(&g->authz_allowed, 1);
        gr->id = id;
        id = NULL;
    }
    rc = 0;
out:
    identity_free(id);
    reqinfo_fini(&ri);
    if (rc == 0) {
        gr->decided = true;
    } else {
        free(gr->body); /* a partial answer of the cached pass is not kept */
        gr->body = NULL;
        gr->code = 0;
    }
    return rc;
}

/* ---- per request ----------------------------------------------------------------------- */

static void gate_req_free(void *p)
{
    struct gate_req *gr = p;

    identity_free(gr->id);
    identity_free(gr->cert_id);
    free(gr->body);
    free(gr->imp);
    free(gr);
}

static bool collect_header(void *ctx, const char *name, const char *value)
{
    struct gate_req *gr = ctx;

    if (strcasecmp(name, "Authorization") == 0) {
        if (gr->authorization == NULL) {
            gr->authorization = value; /* Go's Header.Get: the first */
        }
        return true;
    }
    if (!impersonate_is_header(name)) {
        return true;
    }
    if (gr->n_imp == GATE_MAX_IMP_HEADERS) {
        gr->too_many_imp = true;
        return false;
    }
    if (gr->imp == NULL) {
        gr->imp = xcalloc(GATE_MAX_IMP_HEADERS, sizeof(*gr->imp));
    }
    gr->imp[gr->n_imp].name = name;
    gr->imp[gr->n_imp].value = value;
    gr->n_imp++;
    return true;
}

/* Replies the verdict of a decided request that was not allowed. */
static void reply(struct gate_req *gr)
{
    if (gr->code == 429) {
        http_req_add_header(gr->req, "Retry-After", "1");
    }
    http_reply(gr->req, gr->code, gr->ctype, gr->body, gr->body_len);
}

enum gate_verdict gate_check(struct gate *g, struct http_req *req)
{
    struct gate_req *gr = http_req_auth(req);

    if (gr != NULL && !gr->decided) {
        log_error("gate", "path=%s msg=\"resumed before its review finished\"", http_req_path(req));
        BUG_ON(true);
    }
    if (gr != NULL) {
        /* resumed: after the pool decided it, or later (a suspended LIST) when allowed */
        if (gr->code == 0) {
            return GATE_ALLOW;
        }
        if (gr->body != NULL) {
            reply(gr);
            free(gr->body);
            gr->body = NULL;
        }
        return GATE_DONE;
    }
    gr = xcalloc(1, sizeof(*gr));
    gr->g = g;
    gr->req = req;
    http_req_set_auth(req, gr, gate_req_free);
    http_req_headers(req, collect_header, gr);
    gr->cert_rc = http_req_client_identity(req, &gr->cert_id);
    if (decide(gr, true) == 0) {
        atomic_fetch_add(&g->fast, 1);
        return gate_check(g, req);
    }
    atomic_fetch_add(&g->slow, 1);
    pthread_mutex_lock(&g->mu);
    if (g->stop || g->queued >= GATE_MAX_QUEUE) {
        bool stopping = g->stop;
        pthread_mutex_unlock(&g->mu);
        if (stopping) {
            answer_internal(gr, "the server is shutting down");
        } else {
            struct kstatus st;
            kstatus_set(&st, 429, "TooManyRequests",
                        "Too many requests waiting for auth "
                        "reviews, please try again later.");
            st.retry_after = 1;
            answer_status(gr, &st);
        }
        gr->decided = true;
        return gate_check(g, req);
    }
    http_suspend(req); /* before the queue: a review thread may resume it at once */
    if (g->tail != NULL) {
        g->tail->next = gr;
    } else {
        g->head = gr;
    }
    g->tail = gr;
    g->queued++;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    return GATE_DONE;
}

const struct identity *gate_identity(const struct http_req *req)
{
    const struct gate_req *gr = http_req_auth(req);

    return gr != NULL && gr->decided && gr->code == 0 ? gr->id : NULL;
}

/* ---- the review threads ---------------------------------------------------------------- */

static void *review_main(void *arg)
{
    struct gate *g = arg;

    pthread_mutex_lock(&g->mu);
    for (;;) {
        struct gate_req *gr = g->head;
        bool stopping = g->stop;

        if (gr == NULL && stopping) {
            break;
        }
        if (gr == NULL) {
            pthread_cond_wait(&g->cv, &g->mu);
            continue;
        }
        g->head = gr->next;
        if (g->head == NULL) {
            g->tail = NULL;
        }
        g->queued--;
        gr->next = NULL;
        pthread_mutex_unlock(&g->mu);
        if (stopping) {
            answer_internal(gr, "the server is shutting down");
            gr->decided = true;
        } else {
            (void)decide(gr, false);
        }
        http_resume(gr->req); /* the last touch of <gr> on this thread */
        pthread_mutex_lock(&g->mu);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

struct gate *gate_new(const struct gate_opts *o, char *err, size_t err_len)
{
    struct gate *g = xcalloc(1, sizeof(*g));
    unsigned n = o->threads ? o->threads : GATE_DEFAULT_THREADS;

    g->o = *o;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->threads = xcalloc(n, sizeof(*g->threads));
    for (unsigned i = 0; i < n; i++) {
        if (pthread_create(&g->threads[i], NULL, review_main, g) != 0) {
            snprintf(err, err_len, "cannot start the auth review threads");
            gate_free(g);
            return NULL;
        }
        g->n_threads++;
    }
    return g;
}

void gate_free(struct gate *g)
{
    if (g == NULL) {
        return;
    }
    pthread_mutex_lock(&g->mu);
    g->stop = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    for (unsigned i = 0; i < g->n_threads; i++) {
        pthread_join(g->threads[i], NULL);
    }
    BUG_ON(g->head != NULL);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g->threads);
    free(g);
}

void gate_stats(const struct gate *g, struct gate_stats *out)
{
    struct gate *m = (struct gate *)g; /* atomics are read, not changed */

    out->authn_ok = atomic_load(&m->authn_ok);
    out->authn_anonymous = atomic_load(&m->authn_anonymous);
    out->authn_failed = atomic_load(&m->authn_failed);
    out->authz_allowed = atomic_load(&m->authz_allowed);
    out->authz_denied = atomic_load(&m->authz_denied);
    out->authz_errors = atomic_load(&m->authz_errors);
    out->fast = atomic_load(&m->fast);
    out->slow = atomic_load(&m->slow);
}

/* ---- the upstream transport ------------------------------------------------------------ */

const double gate_latency_bounds[GATE_LATENCY_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                          0.5,   1,    2.5,   5,    10};

/* Process-wide, relaxed atomics: each counter is exact, the set is not a snapshot. */
static struct {
    atomic_ullong bucket[GATE_LATENCY_BUCKETS + 1]; /* not cumulative: bucket i alone */
    atomic_ullong sum_us;
    atomic_ullong failed;
} review_hist[GATE_REVIEW_KINDS];

static void review_observe(enum gate_review_kind k, int64_t us, bool ok)
{
    double s_ = (double)us / 1e6;
    size_t i = 0;

    if (!ok) {
        atomic_fetch_add_explicit(&review_hist[k].failed, 1, memory_order_relaxed);
    }
    while (i < GATE_LATENCY_BUCKETS && s_ > gate_latency_bounds[i]) {
        i++;
    }
    atomic_fetch_add_explicit(&review_hist[k].bucket[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&review_hist[k].sum_us, (unsigned long long)us, memory_order_relaxed);
}

void gate_review_stats(enum gate_review_kind k, struct gate_review_stats *out)
{
    uint64_t run = 0;

    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i <= GATE_LATENCY_BUCKETS; i++) {
        run += atomic_load_explicit(&review_hist[k].bucket[i], memory_order_relaxed);
        out->bucket[i] = run;
    }
    out->sum_s = (double)atomic_load_explicit(&review_hist[k].sum_us, memory_order_relaxed) / 1e6;
    out->failed = atomic_load_explicit(&review_hist[k].failed, memory_order_relaxed);
}

static int64_t mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int gate_upstream_send(void *ctx, const char *path, const char *body, size_t len, struct sbuf *resp,
                       long *code, char *err, size_t err_len)
{
    int64_t t0 = mono_us();
    enum gate_review_kind kind =
        strstr(path, "tokenreviews") != NULL ? GATE_REVIEW_TOKEN : GATE_REVIEW_SAR;
    int rc;

    *code = 0;
    rc = upstream_post(ctx, path, body, len, resp, code, err, err_len);
    review_observe(kind, mono_us() - t0, rc == 0 && *code >= 200 && *code <= 299);
    return rc;
}

bool gate_listen_is_loopback(const char *listen)
{
    const char *colon = strrchr(listen, ':');
    char host[64];
    struct in_addr a;
    size_t n = colon ? (size_t)(colon - listen) : strlen(listen);

    if (n == 0 || n >= sizeof(host)) {
        return false;
    }
    memcpy(host, listen, n);
    host[n] = '\0';
    if (strcmp(host, "localhost") == 0) {
        return true;
    }
    return inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}
