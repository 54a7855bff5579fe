/*
 * fanout.c - watch writers (see fanout.h).
 *
 * Each writer is one thread with one epoll set (edge-triggered EPOLLOUT of the streams it
 * owns, plus an eventfd) and one wake queue: a lock-free stack that kicks push onto (the
 * first push onto an empty stack writes the eventfd) and the writer takes whole. A turn:
 * epoll_wait, gather the streams that became writable, the queue (reversed: first kicked,
 * first served), the stalled ones (checked once a second) and, when stopping, all of them,
 * into one run list of distinct streams; then run each pass once. A stream is in the epoll
 * set and the owned list from its first turn until fanout_detach; fanout_detach refuses
 * while the stream is queued, so no pointer to a stream survives it in the writer.
 */
#include "proxy/fanout.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "cache/bug.h"
#include "proxy/log.h"

#define FANOUT_EVENTS 256      /* epoll events per turn */
#define FANOUT_TURN_MS 1000    /* epoll_wait's timeout: the stall check's period */
#define FANOUT_STOP_MS 2000    /* fanout_free waits this long for streams to be given back */
#define FANOUT_STOP_TURN_MS 10 /* ... looking again this often */

struct fanout_worker {
    struct fanout *f;
    pthread_t thread;
    bool started;
    int ep;                              /* epoll set: the owned streams' fds */
    int efd;                             /* eventfd: the queue went non-empty, or stop */
    _Atomic(struct fanout_conn *) queue; /* kicked streams, newest first */
    struct fanout_conn owned;            /* sentinel of the owned list (writer only) */
    size_t n_owned;                      /* writer only */
    atomic_bool stop;
    int64_t last_stall_ms; /* writer only */
    int64_t last_turn_ms;  /* writer only: when its last turn started */
};

struct fanout {
    pthread_mutex_t mu; /* fanout_attach against fanout_free */
    bool closed;        /* under mu */
    int64_t round_ms;   /* read-only: see fanout_new */
    unsigned round_min; /* read-only */
    atomic_uint owned;  /* streams all writers own */
    unsigned n;
    struct fanout_worker wk[];
};

static atomic_long g_streams;   /* owned by some writer now */
static atomic_ulong g_attaches; /* fanout_attach calls that succeeded */

void fanout_totals(struct fanout_totals *t)
{
    long n = atomic_load(&g_streams);

    t->streams = n > 0 ? (uint64_t)n : 0;
    t->attaches = atomic_load(&g_attaches);
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void push(struct fanout_worker *wk, struct fanout_conn *c)
{
    struct fanout_conn *old = atomic_load_explicit(&wk->queue, memory_order_relaxed);
    uint64_t one = 1;

    do {
        c->qnext = old;
    } while (!atomic_compare_exchange_weak_explicit(&wk->queue, &old, c, memory_order_release,
                                                    memory_order_relaxed));
    if (old == NULL) {
        (void)!write(wk->efd, &one, sizeof(one)); /* EAGAIN: a wake is pending anyway */
    }
}

void fanout_kick(struct fanout_conn *c)
{
    if (atomic_exchange_explicit(&c->queued, true, memory_order_acq_rel)) {
        return; /* a pass is already due */
    }
    push(c->wk, c);
}

bool fanout_attach(struct fanout *f, struct fanout_conn *c)
{
    bool ok = false;

    pthread_mutex_lock(&f->mu);
    if (!f->closed) {
        c->wk = &f->wk[(unsigned)c->fd % f->n]; /* the same writer each time it comes back */
        c->added = false;
        c->listed = false;
        c->revents = 0;
        c->blocked_ms = 0;
        atomic_store(&c->queued, true);
        push(c->wk, c);
        atomic_fetch_add(&g_attaches, 1);
        ok = true;
    }
    pthread_mutex_unlock(&f->mu);
    return ok;
}

bool fanout_detach(struct fanout_conn *c)
{
    struct fanout_worker *wk = c->wk;

    if (atomic_load_explicit(&c->queued, memory_order_acquire)) {
        return false; /* the queue holds it: its pass runs again once popped */
    }
    if (c->added) {
        (void)epoll_ctl(wk->ep, EPOLL_CTL_DEL, c->fd, NULL);
        c->prev->next = c->next;
        c->next->prev = c->prev;
        c->prev = c->next = NULL;
        c->added = false;
        wk->n_owned--;
        atomic_fetch_sub(&g_streams, 1);
        atomic_fetch_sub(&wk->f->owned, 1);
    }
    c->blocked_ms = 0;
    c->wk = NULL;
    return true;
}

/* The 32-bit ms clock of blocked_ms: wraps every 49 days, so only differences are taken. */
static uint32_t ms32(int64_t ms)
{
    uint32_t v = (uint32_t)ms;

    return v != 0 ? v : 1; /* 0 means "not blocked" */
}

void fanout_blocked(struct fanout_conn *c, bool blocked, int64_t now)
{
    if (!blocked) {
        c->blocked_ms = 0;
    } else if (c->blocked_ms == 0) {
        c->blocked_ms = ms32(now);
    }
}

/* This turn's run list: each stream once, in the order first added. */
struct run {
    struct fanout_conn *head;
    struct fanout_conn **tail;
};

/* Adds <c> to <r> with <ev> (once per turn). */
static void run_add(struct run *r, struct fanout_conn *c, unsigned ev)
{
    c->revents |= (uint8_t)ev;
    if (!c->listed) {
        c->listed = true;
        c->run_next = NULL;
        *r->tail = c;
        r->tail = &c->run_next;
    }
}

/* The streams kicked since the last turn, first kicked first; new ones join the epoll set. */
static void take_queue(struct fanout_worker *wk, struct run *r)
{
    struct fanout_conn *c = atomic_exchange_explicit(&wk->queue, NULL, memory_order_acquire);
    struct fanout_conn *rev = NULL;

    while (c != NULL) { /* the stack is newest first */
        struct fanout_conn *next = c->qnext;

        c->qnext = rev;
        rev = c;
        c = next;
    }
    for (c = rev; c != NULL;) {
        struct fanout_conn *next = c->qnext;

        /* qnext is the pushers' once queued is clear: a kick may link <c> again right after
         * the store (TSan found the write of NULL here racing with such a push, which would
         * have cut off the streams pushed before it) */
        c->qnext = NULL;
        atomic_store_explicit(&c->queued, false, memory_order_release);
        if (!c->added) {
            struct epoll_event ee = {.events = EPOLLOUT | EPOLLET, .data.ptr = c};

            if (epoll_ctl(wk->ep, EPOLL_CTL_ADD, c->fd, &ee) == -1) {
                int e = errno;
                /* cannot watch its socket: it still gets passes from kicks; a full socket
                 * then waits for the next kick or the stall check */
                log_warn("fanout", "fd=%d msg=\"epoll_ctl add: %s\"", c->fd, strerror(e));
            }
            c->next = wk->owned.next;
            c->prev = &wk->owned;
            wk->owned.next->prev = c;
            wk->owned.next = c;
            c->added = true;
            wk->n_owned++;
            atomic_fetch_add(&g_streams, 1);
            atomic_fetch_add(&wk->f->owned, 1);
        }
        run_add(r, c, FANOUT_EV_KICK);
        c = next;
    }
}

/* Whether the kicks wait for the next round: rounds are on (enough streams) and the last
 * round began less than an interval ago. */
static bool round_later(const struct fanout_worker *wk, int64_t now)
{
    const struct fanout *f = wk->f;

    return f->round_ms > 0 && atomic_load(&f->owned) >= f->round_min &&
           now - wk->last_turn_ms < f->round_ms;
}

static void *worker_main(void *arg)
{
    struct fanout_worker *wk = arg;
    struct epoll_event evs[FANOUT_EVENTS];
    int64_t stop_from = 0;
    bool kicked = false; /* the eventfd was read and the queue not taken since */

    for (;;) {
        bool stopping = atomic_load(&wk->stop);
        int timeout = stopping ? FANOUT_STOP_TURN_MS : FANOUT_TURN_MS;
        struct run r = {NULL, &r.head};
        struct fanout_conn *c;
        int64_t now;
        int n;

        if (kicked && !stopping) { /* the kicks wait for their round, the edges do not */
            int64_t left = wk->last_turn_ms + wk->f->round_ms - now_ms();

            timeout = left <= 0 ? 0 : left < timeout ? (int)left : timeout;
        }
        n = epoll_wait(wk->ep, evs, FANOUT_EVENTS, timeout);
        now = now_ms();
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == NULL) {
                uint64_t v;
                (void)!read(wk->efd, &v, sizeof(v));
                kicked = true;
            } else {
                run_add(&r, evs[i].data.ptr, FANOUT_EV_WRITABLE);
            }
        }
        /* rounds: with many streams, one turn serves the kicks of an interval, so each
         * stream sends the interval's events at once; a socket that became writable is
         * served at once all the same (its client is waiting for bytes) */
        if (stopping || (kicked && !round_later(wk, now))) {
            wk->last_turn_ms = now;
            kicked = false;
            take_queue(wk, &r);
        }
        if (stopping || now - wk->last_stall_ms >= FANOUT_TURN_MS) {
            wk->last_stall_ms = now;
            for (c = wk->owned.next; c != &wk->owned; c = c->next) {
                if (stopping) {
                    run_add(&r, c, FANOUT_EV_STOP);
                } else if (c->blocked_ms != 0 && c->stall_ms > 0 &&
                           ms32(now) - c->blocked_ms > c->stall_ms) {
                    run_add(&r, c, FANOUT_EV_STALL);
                }
            }
        }
        for (c = r.head; c != NULL;) {
            struct fanout_conn *next = c->run_next; /* the pass may give <c> back */
            unsigned ev = c->revents;

            c->revents = 0;
            c->listed = false;
            c->pass(c, ev);
            c = next;
        }
        if (stopping) {
            if (stop_from == 0) {
                stop_from = now;
            }
            if (wk->n_owned == 0 && atomic_load(&wk->queue) == NULL) {
                break;
            }
            if (now - stop_from > FANOUT_STOP_MS) {
                log_warn("fanout", "streams=%zu msg=\"watch streams not given back at stop\"",
                         wk->n_owned);
                break;
            }
        }
    }
    return NULL;
}

struct fanout *fanout_new(unsigned threads, int64_t round_ms, unsigned round_min_streams)
{
    struct fanout *f;

    if (threads == 0) {
        threads = 1;
    }
    f = xcalloc(1, sizeof(*f) + threads * sizeof(f->wk[0]));
    pthread_mutex_init(&f->mu, NULL);
    f->n = threads;
    f->round_ms = round_ms > 0 ? round_ms : 0;
    f->round_min = round_min_streams;
    for (unsigned i = 0; i < threads; i++) {
        struct fanout_worker *wk = &f->wk[i];

        wk->f = f;
        wk->owned.next = wk->owned.prev = &wk->owned;
        wk->ep = epoll_create1(EPOLL_CLOEXEC);
        wk->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    }
    for (unsigned i = 0; i < threads; i++) {
        struct fanout_worker *wk = &f->wk[i];
        struct epoll_event ee = {.events = EPOLLIN, .data.ptr = NULL};

        if (wk->ep < 0 || wk->efd < 0 || epoll_ctl(wk->ep, EPOLL_CTL_ADD, wk->efd, &ee) == -1 ||
            pthread_create(&wk->thread, NULL, worker_main, wk) != 0) {
            fanout_free(f);
            return NULL;
        }
        wk->started = true;
    }
    return f;
}

void fanout_free(struct fanout *f)
{
    uint64_t one = 1;

    if (f == NULL) {
        return;
    }
    pthread_mutex_lock(&f->mu);
    f->closed = true; /* no attach from now on */
    pthread_mutex_unlock(&f->mu);
    for (unsigned i = 0; i < f->n; i++) {
        atomic_store(&f->wk[i].stop, true);
        if (f->wk[i].efd >= 0) {
            (void)!write(f->wk[i].efd, &one, sizeof(one));
        }
    }
    for (unsigned i = 0; i < f->n; i++) {
        struct fanout_worker *wk = &f->wk[i];

        if (wk->started) {
            pthread_join(wk->thread, NULL);
        }
        if (wk->ep >= 0) {
            close(wk->ep);
        }
        if (wk->efd >= 0) {
            close(wk->efd);
        }
    }
    pthread_mutex_destroy(&f->mu);
    free(f);
}
