/*
 * test_fanout.c - the watch writers (proxy/fanout.c) on socketpairs: a handed-over stream's
 * pass runs on a writer thread, kicks are never lost and coalesce, a give-back is refused
 * while a kick is queued, a full socket gets its writable edge and its stall, rounds gather
 * kicks but not writable edges, and stopping the writers gives every stream back.
 */
#include "proxy/fanout.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/tsan_boxfort.h"

struct tconn {
    struct fanout_conn fc; /* first: the pass maps back */
    int peer;              /* the test's end */
    atomic_int passes, kicks, writable, stalls, stops;
    atomic_bool on_writer; /* the pass ran on a thread other than the test's */
    pthread_t test_thread;
    /* behaviour of the next passes */
    atomic_int kick_self_then_detach; /* 1: kick itself, try a detach (must fail), then 2 */
    atomic_int detach_result;         /* -1 none, 0 refused, 1 done */
    atomic_bool fill;                 /* fill the socket and report it blocked */
    atomic_bool detach_on_stop;
    atomic_bool detached;
};

static void tpass(struct fanout_conn *c, unsigned ev)
{
    struct tconn *t = (struct tconn *)c;
    int mode;

    atomic_fetch_add(&t->passes, 1);
    if (!pthread_equal(pthread_self(), t->test_thread)) {
        atomic_store(&t->on_writer, true);
    }
    if (ev & FANOUT_EV_KICK) {
        atomic_fetch_add(&t->kicks, 1);
    }
    if (ev & FANOUT_EV_WRITABLE) {
        atomic_fetch_add(&t->writable, 1);
    }
    if (ev & FANOUT_EV_STALL) {
        atomic_fetch_add(&t->stalls, 1);
    }
    if (ev & FANOUT_EV_STOP) {
        atomic_fetch_add(&t->stops, 1);
        if (atomic_load(&t->detach_on_stop) && fanout_detach(c)) {
            atomic_store(&t->detached, true);
        }
        return;
    }
    mode = atomic_load(&t->kick_self_then_detach);
    if (mode == 1) {
        fanout_kick(c); /* queued again: the give-back must wait for that pass */
        atomic_store(&t->detach_result, fanout_detach(c) ? 1 : 0);
        atomic_store(&t->kick_self_then_detach, 2);
        return;
    }
    if (mode == 2) {
        if (fanout_detach(c)) {
            atomic_store(&t->detached, true);
        }
        atomic_store(&t->kick_self_then_detach, 0);
        return;
    }
    if (atomic_load(&t->fill)) {
        static char junk[65536];
        for (int i = 0; i < 4096; i++) {
            ssize_t k = send(c->fd, junk, sizeof(junk), MSG_DONTWAIT | MSG_NOSIGNAL);
            if (k == -1) {
                fanout_blocked(c, errno == EAGAIN || errno == EWOULDBLOCK, 1);
                break;
            }
        }
    }
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits up to <ms> for *<v> >= <want>. */
static bool wait_ge(atomic_int *v, int want, int ms)
{
    for (int64_t end = mono_ms() + ms; mono_ms() < end;) {
        if (atomic_load(v) >= want) {
            return true;
        }
        usleep(2000);
    }
    return atomic_load(v) >= want;
}

static void tconn_init(struct tconn *t, uint32_t stall_ms)
{
    int sv[2];

    memset(t, 0, sizeof(*t));
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    (void)fcntl(sv[0], F_SETFL, O_NONBLOCK);
    t->fc.fd = sv[0];
    t->fc.pass = tpass;
    t->fc.stall_ms = stall_ms;
    t->peer = sv[1];
    t->test_thread = pthread_self();
    atomic_store(&t->detach_result, -1);
}

static void tconn_fini(struct tconn *t)
{
    close(t->fc.fd);
    close(t->peer);
}

Test(fanout, an_attached_stream_runs_its_pass_on_a_writer_and_kicks_are_never_lost)
{
    struct fanout *f = fanout_new(2, 0, 0);
    struct tconn t;
    struct fanout_totals tot;

    cr_assert_not_null(f);
    tconn_init(&t, 0);
    cr_assert(fanout_attach(f, &t.fc));
    cr_assert(wait_ge(&t.kicks, 1, 2000), "the attach's pass");
    cr_assert(atomic_load(&t.on_writer), "the pass runs on a writer thread");
    fanout_totals(&tot);
    cr_assert_geq(tot.streams, 1);
    cr_assert_geq(tot.attaches, 1);
    /* one kick after each pass: every one is served */
    for (int i = 0; i < 50; i++) {
        int before = atomic_load(&t.kicks);
        fanout_kick(&t.fc);
        cr_assert(wait_ge(&t.kicks, before + 1, 2000), "kick %d was lost", i);
    }
    /* a burst coalesces: at least one pass, far fewer than kicks */
    {
        int before = atomic_load(&t.kicks);
        for (int i = 0; i < 10000; i++) {
            fanout_kick(&t.fc);
        }
        cr_assert(wait_ge(&t.kicks, before + 1, 2000));
        usleep(50000);
        cr_assert_lt(atomic_load(&t.kicks) - before, 10000);
    }
    atomic_store(&t.detach_on_stop, true);
    fanout_free(f);
    cr_assert(atomic_load(&t.detached), "stopping gave the stream back");
    tconn_fini(&t);
}

Test(fanout, a_give_back_waits_while_a_kick_is_queued)
{
    struct fanout *f = fanout_new(1, 0, 0);
    struct tconn t;

    tconn_init(&t, 0);
    cr_assert(fanout_attach(f, &t.fc));
    cr_assert(wait_ge(&t.kicks, 1, 2000));
    atomic_store(&t.kick_self_then_detach, 1);
    fanout_kick(&t.fc);
    for (int i = 0; i < 1000 && !atomic_load(&t.detached); i++) {
        usleep(2000);
    }
    cr_assert_eq(atomic_load(&t.detach_result), 0, "refused while its kick was queued");
    cr_assert(atomic_load(&t.detached), "given back at the queued kick's pass");
    fanout_free(f); /* nothing left to give back */
    cr_assert_eq(atomic_load(&t.stops), 0, "a stream given back gets no STOP");
    tconn_fini(&t);
}

Test(fanout, a_full_socket_gets_its_writable_edge_and_its_stall, .timeout = 20)
{
    struct fanout *f = fanout_new(1, 0, 0);
    struct tconn t;
    char buf[65536];
    int w0;

    tconn_init(&t, 300);
    atomic_store(&t.fill, true);
    cr_assert(fanout_attach(f, &t.fc));
    cr_assert(wait_ge(&t.kicks, 1, 2000));
    /* nobody reads: the stall check (once a second) reports it after 300 ms */
    cr_assert(wait_ge(&t.stalls, 1, 4000), "no stall reported");
    /* reading makes room: the edge-triggered EPOLLOUT gives a writable pass */
    atomic_store(&t.fill, false);
    w0 = atomic_load(&t.writable);
    for (int i = 0; i < 64; i++) {
        if (recv(t.peer, buf, sizeof(buf), MSG_DONTWAIT) <= 0) {
            break;
        }
    }
    cr_assert(wait_ge(&t.writable, w0 + 1, 2000), "no writable pass after the peer read");
    atomic_store(&t.detach_on_stop, true);
    fanout_free(f);
    cr_assert(atomic_load(&t.detached));
    tconn_fini(&t);
}

Test(fanout, stopping_gives_every_stream_back_and_refuses_none_it_holds)
{
    struct fanout *f = fanout_new(2, 0, 0);
    struct tconn t[16];
    struct fanout_totals tot;

    for (int i = 0; i < 16; i++) {
        tconn_init(&t[i], 0);
        atomic_store(&t[i].detach_on_stop, true);
        cr_assert(fanout_attach(f, &t[i].fc));
    }
    for (int i = 0; i < 16; i++) {
        cr_assert(wait_ge(&t[i].kicks, 1, 2000));
    }
    fanout_free(f);
    for (int i = 0; i < 16; i++) {
        cr_assert(atomic_load(&t[i].detached), "stream %d not given back", i);
        cr_assert_geq(atomic_load(&t[i].stops), 1);
        tconn_fini(&t[i]);
    }
    fanout_totals(&tot);
    cr_assert_eq(tot.streams, 0, "%llu streams still counted", (unsigned long long)tot.streams);
}

/* With rounds, a writer serves a burst of kicks spread over an interval in one turn. */
Test(fanout, rounds_gather_the_kicks_of_an_interval)
{
    struct fanout *f = fanout_new(1, 100, 1);
    struct tconn t;
    int before;

    tconn_init(&t, 0);
    cr_assert(fanout_attach(f, &t.fc));
    cr_assert(wait_ge(&t.kicks, 1, 2000));
    usleep(150000); /* a quiet interval: the next kick is served at once */
    before = atomic_load(&t.kicks);
    for (int i = 0; i < 40; i++) { /* 40 kicks over ~200 ms */
        fanout_kick(&t.fc);
        usleep(5000);
    }
    cr_assert(wait_ge(&t.kicks, before + 1, 2000));
    usleep(150000);
    /* ~200 ms at one turn per 100 ms: 2-4 passes, far fewer than the 40 without rounds */
    cr_assert_leq(atomic_load(&t.kicks) - before, 6, "%d passes for 40 kicks in 200 ms",
                  atomic_load(&t.kicks) - before);
    atomic_store(&t.detach_on_stop, true);
    fanout_free(f);
    cr_assert(atomic_load(&t.detached));
    tconn_fini(&t);
}

/* With rounds, a socket that becomes writable is served at once, not at the next round: its
 * client is waiting for bytes (the kicks, new events, are what a round gathers). */
Test(fanout, rounds_do_not_hold_back_a_writable_edge)
{
    struct fanout *f = fanout_new(1, 3000, 1);
    struct tconn t;
    static char buf[65536];
    int w0;

    tconn_init(&t, 0);
    atomic_store(&t.fill, true);
    cr_assert(fanout_attach(f, &t.fc));
    cr_assert(wait_ge(&t.passes, 1, 2000)); /* the first turn, at once: it fills the socket */
    atomic_store(&t.fill, false);
    usleep(50000);
    w0 = atomic_load(&t.writable);
    while (recv(t.peer, buf, sizeof(buf), MSG_DONTWAIT) > 0) {
    }
    /* the next round is ~3 s after the first turn */
    cr_assert(wait_ge(&t.writable, w0 + 1, 1500), "the writable edge waited for the round");
    atomic_store(&t.detach_on_stop, true);
    fanout_free(f);
    cr_assert(atomic_load(&t.detached));
    tconn_fini(&t);
}
