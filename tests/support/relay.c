/*
 * relay.c - the fault-injecting TCP relay (see relay.h). One acceptor thread; one detached
 * thread per connection pair, counted in <live> so relay_free can wait for them. Every mode
 * flag and the generation are read and written under <mu>; the sockets of a pair belong to
 * its thread.
 */
#define _GNU_SOURCE /* accept4 */
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tests/support/sock.h"

#define RELAY_POLL_MS 20
#define RELAY_STOP_WAIT_S 5

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
    uint64_t next_id;    /* serial of the next pair (mu) */
    uint64_t hold_below; /* relay_hold_open: pairs with a smaller serial are held; 0 = none */
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

static void *pair_main(void *arg)
{
    struct pair *p = arg;
    struct relay *r = p->r;

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
    sock_reset(p->a);
    sock_reset(p->b);
    pthread_mutex_lock(&r->mu);
    r->live--;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    free(p);
    return NULL;
}

static void relay_take(struct relay *r, int c)
{
    struct pair *p;
    pthread_t t;
    int u;

    pthread_mutex_lock(&r->mu);
    if (r->reset) {
        pthread_mutex_unlock(&r->mu);
        sock_reset(c);
        return;
    }
    pthread_mutex_unlock(&r->mu);
    u = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (u < 0 || connect(u, (struct sockaddr *)&r->up, sizeof(r->up)) != 0) {
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
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}
