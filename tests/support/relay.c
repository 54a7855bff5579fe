/*
 * relay.c - the fault-injecting TCP relay (see relay.h). One acceptor thread; one detached
 * thread per connection pair, counted in <live> so relay_free can wait for them. Every mode
 * flag and the generation are read and written under <mu>; the sockets of a pair belong to
 * its thread. In HTTP mode a pair reads one request head, then answers, blackholes or
 * forwards it; a forwarded WATCH response goes through a small chunked-body parser (struct
 * rsp) that counts body bytes and lines for the one-shot cut and injection.
 */
#define _GNU_SOURCE /* accept4, memmem, strcasestr */
#include "tests/support/relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tests/support/http.h"
#include "tests/support/nap.h"
#include "tests/support/sock.h"

#define RELAY_POLL_MS 20
#define RELAY_STOP_WAIT_S 5
#define RELAY_HEAD_MAX 65536 /* a request or response head */
#define RELAY_REQS_MAX 4096  /* requests remembered */
#define RELAY_INJECT_MAX (4u << 20)

struct relay {
    int lfd;
    char url[64];
    struct sockaddr_in up;
    pthread_t acceptor;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool hold;           /* stop reading from the upstream: its bytes stay in flight (mu) */
    bool reset;          /* reset new connections at once (mu) */
    bool stop;           /* (mu) */
    unsigned gen;        /* relay_cut bumps it; pairs of an older generation are reset (mu) */
    int live;            /* pair threads running (mu) */
    int latency_ms;      /* (mu) */
    uint64_t next_id;    /* serial of the next pair (mu) */
    uint64_t hold_below; /* relay_hold_open: pairs with a smaller serial are held; 0 = none */
    /* HTTP mode (mu) */
    bool http;
    int answer[RELAY_ANY + 1];      /* status to answer with, 0 = forward */
    int retry_after[RELAY_ANY + 1]; /* -1 = no Retry-After */
    bool blackhole[RELAY_ANY + 1];
    size_t cut_after; /* one-shot, 0 = none */
    char *inject;     /* one-shot, NULL = none */
    size_t inject_len;
    unsigned inject_after;
    unsigned fired;
    bool midline;
    uint64_t req_ms[RELAY_REQS_MAX];
    enum relay_kind req_kind[RELAY_REQS_MAX];
    size_t n_req;
};

struct pair {
    struct relay *r;
    int a; /* client side */
    int b; /* upstream side */
    unsigned gen;
    uint64_t id; /* serial, from 1 */
};

static bool pump(int from, int to)
{
    char buf[65536];
    ssize_t k = recv(from, buf, sizeof(buf), 0);

    return k > 0 && sock_send_all(to, buf, (size_t)k);
}

static int relay_latency_now(struct relay *r)
{
    int ms;

    pthread_mutex_lock(&r->mu);
    ms = r->latency_ms;
    pthread_mutex_unlock(&r->mu);
    return ms;
}

static void pair_end(struct pair *p)
{
    struct relay *r = p->r;

    sock_reset(p->a);
    sock_reset(p->b);
    pthread_mutex_lock(&r->mu);
    r->live--;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    free(p);
}

static void http_pair(struct pair *p);

static void *pair_main(void *arg)
{
    struct pair *p = arg;
    struct relay *r = p->r;
    bool http;

    pthread_mutex_lock(&r->mu);
    http = r->http;
    pthread_mutex_unlock(&r->mu);
    if (http) {
        http_pair(p);
        pair_end(p);
        return NULL;
    }
    for (;;) {
        struct pollfd pf[2];
        bool hold, cut;
        int n;

        pthread_mutex_lock(&r->mu);
        hold = r->hold || p->id < r->hold_below;
        cut = r->stop || r->gen != p->gen;
        pthread_mutex_unlock(&r->mu);
        if (cut) {
            break;
        }
        pf[0] = (struct pollfd){.fd = p->a, .events = POLLIN};
        pf[1] = (struct pollfd){.fd = hold ? -1 : p->b, .events = POLLIN};
        n = poll(pf, 2, RELAY_POLL_MS);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 || (pf[0].revents && !pump(p->a, p->b))) {
            break;
        }
        if (pf[1].revents) {
            bool ok = true;

            int lat = relay_latency_now(r);

            if (lat > 0) {
                nap(lat);
            }
            /* Under the lock, so that once relay_hold returns nothing more is passed. */
            pthread_mutex_lock(&r->mu);
            if (!r->hold && p->id >= r->hold_below && r->gen == p->gen) {
                ok = pump(p->b, p->a);
            }
            pthread_mutex_unlock(&r->mu);
            if (!ok) {
                break;
            }
        }
    }
    pair_end(p);
    return NULL;
}

/* ---- HTTP mode ------------------------------------------------------------------------- */

/* Whether the pair must end: relay_cut or relay_free since it started. */
static bool pair_cut(struct pair *p)
{
    bool cut;

    pthread_mutex_lock(&p->r->mu);
    cut = p->r->stop || p->r->gen != p->gen;
    pthread_mutex_unlock(&p->r->mu);
    return cut;
}

/* Reads from <fd> into buf (cap) until it holds "\r\n\r\n"; returns the head's length
 * (the bytes after it are kept in buf, *len in all), or 0 when the peer went away or the
 * pair was cut. */
static size_t read_head(struct pair *p, int fd, char *buf, size_t cap, size_t *len)
{
    for (;;) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        char *end;
        ssize_t k;

        buf[*len] = '\0';
        end = strstr(buf, "\r\n\r\n");
        if (end != NULL) {
            return (size_t)(end - buf) + 4;
        }
        if (*len + 1 >= cap || pair_cut(p)) {
            return 0;
        }
        if (poll(&pf, 1, RELAY_POLL_MS) <= 0) {
            continue;
        }
        k = recv(fd, buf + *len, cap - 1 - *len, 0);
        if (k <= 0) {
            return 0;
        }
        *len += (size_t)k;
    }
}

static enum relay_kind kind_of(const char *head)
{
    const char *sp = strchr(head, ' ');
    const char *eol = strstr(head, "\r\n");
    char line[2048];
    size_t n = eol != NULL ? (size_t)(eol - head) : strlen(head);

    if (sp == NULL || strncmp(head, "GET ", 4) != 0) {
        return RELAY_OTHER;
    }
    snprintf(line, sizeof(line), "%.*s", (int)n, head);
    if (strstr(line, "watch=true") || strstr(line, "watch=1")) {
        return RELAY_WATCH;
    }
    return strstr(line, "limit=") != NULL ? RELAY_LIST : RELAY_OTHER;
}

static const char *reason_of(int status)
{
    switch (status) {
    case 401:
        return "Unauthorized";
    case 429:
        return "TooManyRequests";
    case 503:
        return "ServiceUnavailable";
    default:
        return "InternalError";
    }
}

/* Answers on <fd> with <status>, a kube Status body and Connection: close. */
static void answer(int fd, int status, int retry_after)
{
    char body[512], head[1024], ra[64] = "";
    int bn, hn;

    bn = snprintf(body, sizeof(body),
                  "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                  "\"Failure\",\"message\":\"relay fault: %d\",\"reason\":\"%s\",\"code\":%d}",
                  status, reason_of(status), status);
    if (retry_after >= 0) {
        snprintf(ra, sizeof(ra), "Retry-After: %d\r\n", retry_after);
    }
    hn = snprintf(head, sizeof(head),
                  "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n%sContent-Length: "
                  "%d\r\nConnection: close\r\n\r\n",
                  status, reason_of(status), ra, bn);
    if (sock_send_all(fd, head, (size_t)hn) && sock_send_all(fd, body, (size_t)bn)) {
        shutdown(fd, SHUT_WR);
        /* let the client read it before the reset */
        for (int i = 0; i < 50; i++) {
            struct pollfd pf = {.fd = fd, .events = POLLIN};
            char c[512];

            if (poll(&pf, 1, RELAY_POLL_MS) > 0 && recv(fd, c, sizeof(c), 0) <= 0) {
                break;
            }
        }
    }
}

/* The request head without Accept-Encoding and Connection, with "Connection: close". */
static size_t rewrite_head(const char *head, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    const char *p = head, *end = head + n - 2; /* before the final CRLF */

    while (p < end) {
        const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
        size_t l = eol != NULL ? (size_t)(eol - p) + 2 : (size_t)(end - p);

        if (strncasecmp(p, "Accept-Encoding:", 16) != 0 && strncasecmp(p, "Connection:", 11) != 0 &&
            o + l < cap) {
            memcpy(out + o, p, l);
            o += l;
        }
        p += l;
    }
    o += (size_t)snprintf(out + o, cap - o, "Connection: close\r\n\r\n");
    return o;
}

/* A forwarded WATCH response, parsed as it passes (chunked body): for relay_cut_after and
 * relay_inject. */
struct rsp {
    int st; /* 0 head, 1 chunk-size line, 2 chunk data, 3 CRLF after data, 4 raw */
    char acc[RELAY_HEAD_MAX];
    size_t acc_len;
    size_t left;  /* data bytes left in the chunk; CRLF bytes left in st 3 */
    size_t body;  /* chunk data bytes passed */
    size_t lines; /* '\n' in them */
    bool last_nl;
    size_t cut_after;
    char *inject;
    size_t inject_len;
    unsigned inject_after;
};

struct outbuf {
    char *d;
    size_t len, cap;
};

static void out_put(struct outbuf *o, const char *p, size_t n)
{
    if (o->len + n > o->cap) {
        o->cap = (o->len + n) * 2;
        o->d = realloc(o->d, o->cap);
        cr_assert_not_null(o->d);
    }
    memcpy(o->d + o->len, p, n);
    o->len += n;
}

static void fired(struct relay *r, bool midline)
{
    pthread_mutex_lock(&r->mu);
    r->fired++;
    r->midline = midline;
    pthread_mutex_unlock(&r->mu);
}

/* Passes in[0..n) through <x> into <o>; returns false once the stream must be cut now. */
static bool rsp_feed(struct relay *r, struct rsp *x, const char *in, size_t n, struct outbuf *o)
{
    for (size_t i = 0; i < n;) {
        switch (x->st) {
        case 0:
        case 1:
            x->acc[x->acc_len++] = in[i++];
            x->acc[x->acc_len] = '\0';
            if (x->st == 0 && strstr(x->acc, "\r\n\r\n") != NULL) {
                out_put(o, x->acc, x->acc_len);
                x->st = strncmp(x->acc, "HTTP/1.1 200", 12) == 0 &&
                                strcasestr(x->acc, "Transfer-Encoding: chunked") != NULL
                            ? 1
                            : 4;
                x->acc_len = 0;
            } else if (x->st == 1 && x->acc_len >= 2 && x->acc[x->acc_len - 2] == '\r' &&
                       x->acc[x->acc_len - 1] == '\n') {
                out_put(o, x->acc, x->acc_len);
                x->left = strtoul(x->acc, NULL, 16);
                x->st = x->left == 0 ? 4 : 2;
                x->acc_len = 0;
            } else if (x->acc_len + 2 >= sizeof(x->acc)) {
                x->st = 4;
                out_put(o, x->acc, x->acc_len);
            }
            break;
        case 2: {
            size_t take = n - i < x->left ? n - i : x->left;

            if (x->cut_after > 0 && x->body + take >= x->cut_after) {
                take = x->cut_after - x->body;
                out_put(o, in + i, take);
                fired(r, take > 0 ? in[i + take - 1] != '\n' : !x->last_nl);
                return false;
            }
            out_put(o, in + i, take);
            for (size_t j = 0; j < take; j++) {
                x->lines += in[i + j] == '\n';
            }
            if (take > 0) {
                x->last_nl = in[i + take - 1] == '\n';
            }
            x->body += take;
            x->left -= take;
            i += take;
            if (x->left == 0) {
                x->st = 3;
                x->left = 2;
            }
            break;
        }
        case 3:
            out_put(o, in + i, 1);
            i++;
            if (--x->left == 0) {
                x->st = 1;
                if (x->inject != NULL && x->last_nl && x->lines >= x->inject_after) {
                    char sz[32];
                    int k = snprintf(sz, sizeof(sz), "%zx\r\n", x->inject_len);

                    out_put(o, sz, (size_t)k);
                    out_put(o, x->inject, x->inject_len);
                    out_put(o, "\r\n", 2);
                    free(x->inject);
                    x->inject = NULL;
                    fired(r, false);
                }
            }
            break;
        default:
            out_put(o, in + i, n - i);
            i = n;
        }
    }
    return true;
}

static void http_pair(struct pair *p)
{
    struct relay *r = p->r;
    static __thread char head[RELAY_HEAD_MAX], fwd[RELAY_HEAD_MAX + 64];
    size_t len = 0, hl, fl;
    enum relay_kind kind;
    int status = 0, ra = -1;
    bool hole;
    struct rsp *x = NULL;
    struct outbuf o = {0};

    hl = read_head(p, p->a, head, sizeof(head), &len);
    if (hl == 0) {
        return;
    }
    kind = kind_of(head);
    pthread_mutex_lock(&r->mu);
    if (r->n_req < RELAY_REQS_MAX) {
        r->req_ms[r->n_req] = http_now_ms();
        r->req_kind[r->n_req] = kind;
        r->n_req++;
    }
    if (r->answer[RELAY_ANY] != 0) {
        status = r->answer[RELAY_ANY];
        ra = r->retry_after[RELAY_ANY];
    } else if (r->answer[kind] != 0) {
        status = r->answer[kind];
        ra = r->retry_after[kind];
    }
    hole = r->blackhole[kind] || r->blackhole[RELAY_ANY];
    pthread_mutex_unlock(&r->mu);
    if (status == 0 && !hole && kind == RELAY_WATCH) {
        x = calloc(1, sizeof(*x));
        cr_assert_not_null(x);
    }
    if (status != 0) {
        answer(p->a, status, ra);
        return;
    }
    if (hole) {
        char c[4096];

        while (!pair_cut(p)) {
            struct pollfd pf = {.fd = p->a, .events = POLLIN};

            if (poll(&pf, 1, RELAY_POLL_MS) > 0 && recv(p->a, c, sizeof(c), 0) <= 0) {
                return;
            }
        }
        return;
    }
    fl = rewrite_head(head, hl, fwd, sizeof(fwd));
    if (!sock_send_all(p->b, fwd, fl) || !sock_send_all(p->b, head + hl, len - hl)) {
        goto out;
    }
    for (;;) {
        struct pollfd pf[2] = {{.fd = p->a, .events = POLLIN}, {.fd = p->b, .events = POLLIN}};
        char buf[65536];
        ssize_t k;
        int n;

        if (pair_cut(p)) {
            break;
        }
        n = poll(pf, 2, RELAY_POLL_MS);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 || (pf[0].revents && !pump(p->a, p->b))) {
            break;
        }
        if (!pf[1].revents) {
            continue;
        }
        k = recv(p->b, buf, sizeof(buf), 0);
        if (k <= 0) {
            /* the upstream closed: pass that on as a clean close */
            shutdown(p->a, SHUT_WR);
            nap(RELAY_POLL_MS);
            break;
        }
        if (relay_latency_now(r) > 0) {
            nap(relay_latency_now(r));
        }
        if (x == NULL) {
            if (!sock_send_all(p->a, buf, (size_t)k)) {
                break;
            }
            continue;
        }
        /* one-shot faults armed meanwhile apply to this stream from here on */
        pthread_mutex_lock(&r->mu);
        if (x->cut_after == 0 && r->cut_after > 0) {
            x->cut_after = x->body + r->cut_after;
            r->cut_after = 0;
        }
        if (x->inject == NULL && r->inject != NULL) {
            x->inject = r->inject;
            x->inject_len = r->inject_len;
            x->inject_after = (unsigned)x->lines + r->inject_after;
            r->inject = NULL;
        }
        pthread_mutex_unlock(&r->mu);
        o.len = 0;
        bool go_on = rsp_feed(r, x, buf, (size_t)k, &o);
        if (!sock_send_all(p->a, o.d, o.len) || !go_on) {
            break;
        }
    }
out:
    if (x != NULL) {
        free(x->inject);
        free(x);
    }
    free(o.d);
}

static void relay_take(struct relay *r, int c)
{
    struct sockaddr_in up;
    struct pair *p;
    pthread_t t;
    int u;

    pthread_mutex_lock(&r->mu);
    if (r->reset) {
        pthread_mutex_unlock(&r->mu);
        sock_reset(c);
        return;
    }
    up = r->up;
    pthread_mutex_unlock(&r->mu);
    u = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (u < 0 || connect(u, (struct sockaddr *)&up, sizeof(up)) != 0) {
        if (u >= 0) {
            sock_reset(u);
        }
        sock_reset(c);
        return;
    }
    p = calloc(1, sizeof(*p));
    cr_assert_not_null(p);
    p->r = r;
    p->a = c;
    p->b = u;
    pthread_mutex_lock(&r->mu);
    p->gen = r->gen;
    p->id = ++r->next_id;
    r->live++;
    pthread_mutex_unlock(&r->mu);
    cr_assert_eq(pthread_create(&t, NULL, pair_main, p), 0);
    pthread_detach(t);
}

static void *relay_main(void *arg)
{
    struct relay *r = arg;

    for (;;) {
        struct pollfd pf = {.fd = r->lfd, .events = POLLIN};
        bool stop;
        int c;

        pthread_mutex_lock(&r->mu);
        stop = r->stop;
        pthread_mutex_unlock(&r->mu);
        if (stop) {
            return NULL;
        }
        if (poll(&pf, 1, RELAY_POLL_MS) <= 0) {
            continue;
        }
        c = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c >= 0) {
            relay_take(r, c);
        }
    }
}

struct relay *relay_new(const char *upstream_url)
{
    struct relay *r = calloc(1, sizeof(*r));
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof(sa);

    cr_assert_not_null(r);
    sock_addr_of(upstream_url, &r->up);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(r->lfd, 0);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(r->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0, "relay bind: %s",
                 strerror(errno));
    cr_assert_eq(listen(r->lfd, 128), 0);
    cr_assert_eq(getsockname(r->lfd, (struct sockaddr *)&sa, &len), 0);
    snprintf(r->url, sizeof(r->url), "http://127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
    cr_assert_eq(pthread_create(&r->acceptor, NULL, relay_main, r), 0);
    return r;
}

const char *relay_url(const struct relay *r)
{
    return r->url;
}

void relay_hold(struct relay *r, bool on)
{
    pthread_mutex_lock(&r->mu);
    r->hold = on;
    pthread_mutex_unlock(&r->mu);
}

void relay_hold_open(struct relay *r, bool on)
{
    pthread_mutex_lock(&r->mu);
    r->hold_below = on ? r->next_id + 1 : 0;
    pthread_mutex_unlock(&r->mu);
}

void relay_refuse(struct relay *r, bool on)
{
    pthread_mutex_lock(&r->mu);
    r->reset = on;
    pthread_mutex_unlock(&r->mu);
}

void relay_cut(struct relay *r)
{
    pthread_mutex_lock(&r->mu);
    r->gen++;
    r->hold = false;
    pthread_mutex_unlock(&r->mu);
}

void relay_retarget(struct relay *r, const char *upstream_url)
{
    struct sockaddr_in sa;

    sock_addr_of(upstream_url, &sa);
    pthread_mutex_lock(&r->mu);
    r->up = sa;
    pthread_mutex_unlock(&r->mu);
}

void relay_latency(struct relay *r, int ms)
{
    pthread_mutex_lock(&r->mu);
    r->latency_ms = ms;
    pthread_mutex_unlock(&r->mu);
}

void relay_http(struct relay *r, bool on)
{
    pthread_mutex_lock(&r->mu);
    r->http = on;
    pthread_mutex_unlock(&r->mu);
}

void relay_answer(struct relay *r, enum relay_kind kind, int status, int retry_after_s)
{
    pthread_mutex_lock(&r->mu);
    r->answer[kind] = status;
    r->retry_after[kind] = retry_after_s;
    pthread_mutex_unlock(&r->mu);
}

void relay_blackhole(struct relay *r, enum relay_kind kind, bool on)
{
    pthread_mutex_lock(&r->mu);
    r->blackhole[kind] = on;
    pthread_mutex_unlock(&r->mu);
}

void relay_cut_after(struct relay *r, size_t k)
{
    pthread_mutex_lock(&r->mu);
    r->cut_after = k;
    pthread_mutex_unlock(&r->mu);
}

void relay_inject(struct relay *r, const char *data, size_t n, unsigned after_lines)
{
    char *d;

    cr_assert(n > 0 && n <= RELAY_INJECT_MAX);
    d = malloc(n);
    cr_assert_not_null(d);
    memcpy(d, data, n);
    pthread_mutex_lock(&r->mu);
    free(r->inject);
    r->inject = d;
    r->inject_len = n;
    r->inject_after = after_lines;
    pthread_mutex_unlock(&r->mu);
}

unsigned relay_fired(struct relay *r, bool *midline)
{
    unsigned n;

    pthread_mutex_lock(&r->mu);
    n = r->fired;
    if (midline != NULL) {
        *midline = r->midline;
    }
    pthread_mutex_unlock(&r->mu);
    return n;
}

size_t relay_requests(struct relay *r, enum relay_kind kind, uint64_t *ms, size_t cap)
{
    size_t n = 0;

    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->n_req; i++) {
        if (kind == RELAY_ANY || r->req_kind[i] == kind) {
            if (n < cap) {
                ms[n] = r->req_ms[i];
            }
            n++;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return n;
}

void relay_free(struct relay *r)
{
    struct timespec dl;

    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->acceptor, NULL);
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += RELAY_STOP_WAIT_S;
    pthread_mutex_lock(&r->mu);
    while (r->live > 0 && pthread_cond_timedwait(&r->cv, &r->mu, &dl) == 0) {
    }
    cr_assert_eq(r->live, 0, "relay threads still running");
    pthread_mutex_unlock(&r->mu);
    close(r->lfd);
    free(r->inject);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}
