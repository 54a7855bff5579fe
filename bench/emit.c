/*
 * emit.c - kwp_bench_emit: the user-space CPU of delivering watch events, without sockets.
 *
 * <watchers> plain watches of one cached resource (pods of ~<bytes> each) are served by
 * <threads> threads (libmicrohttpd's workers), each doing per watch what its content reader
 * does: take batches of up to 32 events after the cursor and write every event's frame into
 * a 32 KiB buffer (the connection's write buffer; a full buffer counts as sent and starts
 * over). Between two delivery rounds the main thread applies <events> writes. It prints the
 * delivering threads' CPU (CLOCK_THREAD_CPUTIME_ID) per delivered frame, and what one tick
 * (resource_tick, no sweep) costs with every watch running and due in a minute.
 *
 * The kernel's socket copies, scheduling and the load generator are left out on purpose:
 * on a shared machine they make end-to-end CPU per event too noisy to see a change of the
 * watch path. The watches are bare watches (proxy/handlers_watch.h): the stream's own frame
 * writer, driven one event at a time, without a connection. To compare two trees, build
 * this program in each and run the binaries in turn:
 *
 *   build/bench/kwp_bench_emit [watchers] [events per round] [rounds] [threads] [bytes]
 *
 * Bounded: rounds x events writes; every thread joins before the program exits.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/blob.h"
#include "cache/bug.h"
#include "cache/resource.h"
#include "proxy/apires.h"
#include "proxy/handlers_watch.h"
#include "proxy/kube_meta.h"

#define BENCH_BUF (32 * 1024)

struct bench {
    struct apires *ar;
    struct hreq **hs;
    size_t n_watchers;
    size_t n_threads;
    pthread_barrier_t start;
    pthread_barrier_t done;
    bool stop;        /* set before the last start barrier */
    double cpu_s[16]; /* per thread, delivery rounds only */
    uint64_t frames[16];
};

struct worker {
    struct bench *b;
    size_t id;
};

static double thread_cpu_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One delivery round for the watches of worker <id>: everything pending, in batches. */
static void deliver(struct bench *b, size_t id, char *buf, struct ring_event *pend)
{
    for (size_t i = id; i < b->n_watchers; i += b->n_threads) {
        struct hreq *h = b->hs[i];
        struct watcher *w = handlers_watch_bare_watcher(h);
        size_t n = 0;
        ssize_t got;

        while ((got = resource_watch_take(b->ar->res, w, pend, HANDLERS_WATCH_BATCH)) > 0) {
            for (ssize_t k = 0; k < got; k++) {
                if (handlers_watch_bare_emit(h, buf, BENCH_BUF, &n, &pend[k]) == -ENOSPC) {
                    n = 0; /* sent */
                    BUG_ON(handlers_watch_bare_emit(h, buf, BENCH_BUF, &n, &pend[k]) != 0);
                }
            }
        }
        BUG_ON(got < 0 || handlers_watch_bare_overflowed(h));
        b->frames[id] += handlers_watch_bare_frames(h);
    }
}

static void *worker_main(void *arg)
{
    struct worker *wk = arg;
    struct bench *b = wk->b;
    char *buf = xmalloc(BENCH_BUF);
    struct ring_event *pend = xmalloc(HANDLERS_WATCH_BATCH * sizeof(*pend));

    for (;;) {
        double t0;

        pthread_barrier_wait(&b->start);
        if (b->stop) {
            break;
        }
        t0 = thread_cpu_s();
        deliver(b, wk->id, buf, pend);
        b->cpu_s[wk->id] += thread_cpu_s() - t0;
        pthread_barrier_wait(&b->done);
    }
    free(pend);
    free(buf);
    return NULL;
}

/* Applies a MODIFIED of pod p<k % 100> at <rv>, padded to about <bytes>. */
static void write_pod(struct apires *ar, uint64_t rv, size_t bytes)
{
    char pad[8192];
    char json[9000];
    size_t pad_len = bytes > 200 ? bytes - 200 : 1;
    unsigned k = (unsigned)(rv % 100);
    struct blob *bl;
    int len;

    if (pad_len >= sizeof(pad)) {
        pad_len = sizeof(pad) - 1;
    }
    memset(pad, 'x', pad_len);
    pad[pad_len] = '\0';
    len = snprintf(json, sizeof(json),
                   "{\"metadata\":{\"name\":\"p%u\",\"namespace\":\"default\","
                   "\"resourceVersion\":\"%llu\",\"labels\":{\"app\":\"a%u\"}},"
                   "\"spec\":{\"nodeName\":\"n%u\",\"pad\":\"%s\"},\"status\":{}}",
                   k, (unsigned long long)rv, k % 7, k % 13, pad);
    bl = kube_meta_blob(json, (size_t)len, ar->kind.fields);
    BUG_ON(bl == NULL);
    BUG_ON(resource_apply(ar->res, WATCH_MODIFIED, bl, rv, 0) != 0);
    blob_unref(bl);
}

static unsigned long arg_or(int argc, char **argv, int i, unsigned long dflt)
{
    char *end;
    unsigned long v;

    if (argc <= i) {
        return dflt;
    }
    v = strtoul(argv[i], &end, 10);
    if (*end != '\0' || v == 0) {
        fprintf(stderr, "usage: kwp_bench_emit [watchers] [events] [rounds] [threads] [bytes]\n");
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    const struct ring_opts ring = {.min_cap = 102400, .max_cap = 102400};
    struct bench b;
    struct worker wk[16];
    pthread_t th[16];
    size_t events = arg_or(argc, argv, 2, 100), rounds = arg_or(argc, argv, 3, 50);
    size_t bytes = arg_or(argc, argv, 5, 1024);
    uint64_t rv = 1, frames = 0;
    double cpu = 0, tick_t0, tick_s;
    struct timespec ts;

    memset(&b, 0, sizeof(b));
    b.n_watchers = arg_or(argc, argv, 1, 2000);
    b.n_threads = arg_or(argc, argv, 4, 2);
    if (b.n_threads > 16 || events > 30000) {
        fprintf(stderr, "at most 16 threads and 30000 events per round\n");
        return 2;
    }
    b.ar = apires_new(apires_builtin("", "v1", "pods"), NULL, &ring);
    BUG_ON(resource_replace(b.ar->res, NULL, 0, rv, 0) != 0);
    b.hs = xcalloc(b.n_watchers, sizeof(*b.hs));
    for (size_t i = 0; i < b.n_watchers; i++) {
        struct watcher *w;

        b.hs[i] = handlers_watch_bare_new(b.ar, NULL, NULL, 0);
        w = handlers_watch_bare_watcher(b.hs[i]);
        BUG_ON(resource_watch_from(b.ar->res, w, rv, NULL) != 0);
        resource_watch_set_due(b.ar->res, w, 60000);
    }
    pthread_barrier_init(&b.start, NULL, (unsigned)b.n_threads + 1);
    pthread_barrier_init(&b.done, NULL, (unsigned)b.n_threads + 1);
    for (size_t t = 0; t < b.n_threads; t++) {
        wk[t] = (struct worker){&b, t};
        pthread_create(&th[t], NULL, worker_main, &wk[t]);
    }
    for (size_t r = 0; r < rounds; r++) {
        for (size_t e = 0; e < events; e++) {
            write_pod(b.ar, ++rv, bytes);
        }
        pthread_barrier_wait(&b.start);
        pthread_barrier_wait(&b.done);
    }
    b.stop = true;
    pthread_barrier_wait(&b.start);
    for (size_t t = 0; t < b.n_threads; t++) {
        pthread_join(th[t], NULL);
        cpu += b.cpu_s[t];
        frames += b.frames[t];
    }
    /* the tick, every watch running (none suspended) and due in a minute */
    tick_t0 = thread_cpu_s();
    for (int i = 0; i < 1000; i++) {
        (void)resource_tick(b.ar->res, 1000, NULL, NULL);
    }
    tick_s = thread_cpu_s() - tick_t0;
    clock_gettime(CLOCK_REALTIME, &ts);
    printf("watchers %zu, threads %zu, %zu rounds of %zu writes of ~%zu B: %llu frames, "
           "%.1f ns CPU per frame; tick with %zu running watches: %.2f us\n",
           b.n_watchers, b.n_threads, rounds, events, bytes, (unsigned long long)frames,
           frames ? cpu * 1e9 / (double)frames : 0.0, b.n_watchers, tick_s * 1e6 / 1000);
    for (size_t i = 0; i < b.n_watchers; i++) {
        handlers_watch_bare_free(b.hs[i]);
    }
    free(b.hs);
    pthread_barrier_destroy(&b.start);
    pthread_barrier_destroy(&b.done);
    apires_free(b.ar);
    return frames == (unsigned long long)b.n_watchers * rounds * events ? 0 : 1;
}
