/*
 * bench/floor.c - the cheapest watch server we know how to write, to measure what the machine
 * itself allows for watch fan-out (the floor under any proxy's cost, the ceiling of its
 * throughput). No libmicrohttpd, no cache, no JSON parsing.
 *
 * One producer thread builds each event ONCE, at --rate events/s, as a complete kube watch frame
 * of exactly --event-bytes (`{"type":"MODIFIED","object":{...}}\n`, stamped with
 * kwp.io/stamp-ns for `kwp load`), into a ring of --ring frames laid back to back. It publishes
 * the ring's head (release) and wakes every worker through its eventfd.
 *
 * Each of --threads workers owns one epoll set, one SO_REUSEPORT listener and its connections
 * (edge-triggered). A connection reads its request head up to CRLFCRLF (16 KiB at most), gets a
 * 200 chunked stream for GET /api/v1/pods?...watch=true (404 otherwise) and from then on, on
 * each producer wake, one writev of everything pending: chunk header, frames straight from
 * the ring (no per-connection copy), CRLF. A short write parks it until EPOLLOUT.
 *
 *   ring:  [ f0 | f1 | f2 | ... | f(cap-1) ]   frame of seq s at (s & mask) * frame_len
 *            ^ conn->next_seq (readers)  ... head (producer, next to write)
 *
 * Frames are overwritten in place, so a reader may be at most `window` = cap - cap/4 events
 * behind the head; a connection further behind is closed (as a lagging watch). After each
 * writev the head is read again: had the producer lapped a frame while the kernel copied it,
 * the connection is closed and counted as torn (the guard makes that ~cap/4/rate seconds).
 * With --batch-ms N a worker's passes start at least N ms apart (more frames per writev).
 *
 * --sink URL turns the binary into a client (sink_run) that holds --conns watches and only
 * reads and counts: what the machine allows with no parsing on the receiving side.
 *
 * Loopback only; bounded by --duration (or SIGTERM/SIGINT), --max-conns, the ring size and
 * the 16 KiB head cap. Counters go to stderr at exit.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define FLOOR_HEAD_CAP 16384  /* request head, CRLFCRLF included: above this, drop */
#define FLOOR_HEAD_FIRST 1024 /* first allocation for a request head */
#define FLOOR_IOV 1024        /* iovec entries per writev (IOV_MAX on Linux) */
#define FLOOR_EPOLL_BATCH 512
#define FLOOR_ACCEPT_BATCH 256 /* accepts per listener wake (level-triggered: the rest later) */
#define FLOOR_MAX_THREADS 64
#define FLOOR_RING_MAX (1u << 22)         /* events */
#define FLOOR_RING_BYTES_MAX (4ULL << 30) /* ring memory */
#define FLOOR_EVENT_MAX (1u << 20)        /* one frame */
#define FLOOR_TICK_MAX_NS 100000000LL /* producer and workers look at the stop flag this often */
#define FLOOR_NAMES 100               /* objects named floor-0 .. floor-99, like a 100-pod sim */
#define NS_PER_S 1000000000LL
#define SINK_RBUF (256 * 1024) /* one read() per ready socket, as kwp load does */

_Static_assert(FLOOR_IOV <= IOV_MAX, "one writev takes at most IOV_MAX pieces");

#define FRAME_HEAD                                                                                 \
    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"     \
    "\"name\":\"floor-%u\",\"namespace\":\"default\",\"resourceVersion\":\"%llu\","                \
    "\"annotations\":{\"kwp.io/stamp-ns\":\"%lld\",\"kwp.io/pad\":\""
#define FRAME_TAIL "\"}}}}\n"

static const char RESP_200[] = "HTTP/1.1 200 OK\r\n"
                               "Content-Type: application/json\r\n"
                               "Cache-Control: no-cache, private\r\n"
                               "Transfer-Encoding: chunked\r\n"
                               "\r\n";
static const char RESP_404[] = "HTTP/1.1 404 Not Found\r\n"
                               "Content-Type: text/plain\r\n"
                               "Content-Length: 10\r\n"
                               "Connection: close\r\n"
                               "\r\n"
                               "not found\n";

enum conn_state { CONN_HEAD = 0, CONN_STREAM };

struct opts {
    unsigned port;
    long rate;        /* events per second */
    long event_bytes; /* one frame, "\n" included */
    long ring;        /* events, rounded up to a power of two */
    long threads;
    long max_conns; /* per process */
    int64_t duration_ns;
    bool coalesce;      /* one iovec for frames adjacent in the ring (default: one per frame) */
    long batch_ms;      /* a worker's passes start at least this far apart (0 = on every wake) */
    unsigned sink_port; /* --sink: be the client instead (0 = server mode) */
    long conns;         /* --sink: watch streams to hold */
    int64_t warmup_ns;  /* --sink: not counted, after every stream is open */
    bool sink_duration_set;    /* --duration given (the sink's default is 10 s) */
    const char *template_path; /* --template: every frame is this file's line, restamped */
};

/* The frames, back to back. Written by the producer only; read by the workers' writev. */
struct ring {
    char *buf; /* cap * frame_len bytes */
    size_t frame_len;
    uint64_t cap; /* events, a power of two */
    uint64_t mask;
    uint64_t window;       /* how far behind the head a reader may be: cap - cap / 4 */
    _Atomic uint64_t head; /* frames [0, head) are published (release/acquire) */
    char *tmpl;            /* --template: the frame (frame_len bytes), else NULL */
    size_t stamp_off;      /* where its 19 stamp digits start */
};

struct conn {
    int fd;
    uint32_t pos;  /* index in worker.conns */
    uint8_t state; /* enum conn_state */
    bool blocked;  /* the socket's buffer is full: wait for EPOLLOUT */
    uint8_t ck_hdr_len;
    char ck_hdr[16]; /* "%zx\r\n" of the chunk in progress */
    char *head;      /* request head while CONN_HEAD, else NULL */
    size_t head_len, head_cap;
    size_t resp_off;   /* bytes of RESP_200 already sent */
    uint64_t next_seq; /* first frame not yet sent whole; the chunk in progress starts here */
    uint32_t ck_n;     /* frames in the chunk in progress, 0 = none */
    size_t ck_total;   /* its bytes: header + frames + CRLF */
    size_t ck_sent;
};

struct worker_stats {
    uint64_t accepted, refused, not_found, dropped_head, streams, closed_peer, closed_error;
    uint64_t lagging, torn, writevs, short_writes, bytes, frames, wakes, passes;
};

struct worker {
    struct floor *f;
    pthread_t thread;
    int ep;
    int lfd; /* this worker's SO_REUSEPORT listener */
    int efd; /* the producer's wake */
    struct conn **conns;
    size_t n_conns, max_conns;
    struct worker_stats st;
    char tag_listen, tag_wake; /* epoll data.ptr for the two non-connection descriptors */
};

struct floor {
    struct opts o;
    struct ring ring;
    struct worker *workers;
    atomic_bool stop;
    uint64_t produced;      /* producer thread only; read after join */
    uint64_t behind_max_ns; /* producer: largest lateness of a tick */
    uint64_t eventfd_writes;
    double producer_cpu_s;
};

static volatile sig_atomic_t g_signalled;

static void on_signal(int sig)
{
    (void)sig;
    g_signalled = 1;
}

static int64_t clock_ns(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static bool stopping(struct floor *f)
{
    return g_signalled || atomic_load_explicit(&f->stop, memory_order_relaxed);
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);

    if (p == NULL) {
        fprintf(stderr, "floor: out of memory (%zu x %zu)\n", n, size);
        abort();
    }
    return p;
}

/* ---- ring and producer ----------------------------------------------------------------- */

static char *ring_slot(const struct ring *r, uint64_t seq)
{
    return r->buf + (size_t)(seq & r->mask) * r->frame_len;
}

/* Writes frame <seq> in place: fixed length, the pad absorbs the digits of rv and stamp. */
static void frame_build(struct ring *r, uint64_t seq)
{
    char *p = ring_slot(r, seq);

    if (r->tmpl != NULL) { /* the captured frame, with this moment's stamp (19 digits) */
        char digits[24];
        memcpy(p, r->tmpl, r->frame_len);
        snprintf(digits, sizeof(digits), "%019lld", (long long)clock_ns(CLOCK_REALTIME));
        memcpy(p + r->stamp_off, digits, 19);
        return;
    }

    size_t tail = sizeof(FRAME_TAIL) - 1;
    int n = snprintf(p, r->frame_len, FRAME_HEAD, (unsigned)(seq % FLOOR_NAMES),
                     (unsigned long long)(seq + 2), (long long)clock_ns(CLOCK_REALTIME));

    /* frame_len was checked against the longest head (20-digit rv, 19-digit stamp) */
    memset(p + n, 'x', r->frame_len - (size_t)n - tail);
    memcpy(p + r->frame_len - tail, FRAME_TAIL, tail);
}

static void wake_workers(struct floor *f)
{
    uint64_t one = 1;

    for (long i = 0; i < f->o.threads; i++) {
        ssize_t w = write(f->workers[i].efd, &one, sizeof(one));

        (void)w; /* a saturated counter (EAGAIN) still reads as a wake */
        f->eventfd_writes++;
    }
}

/*
 * Emits frame k at t0 + k / rate (stamped when built). A late tick (a busy machine) emits every
 * frame due by then, at most window / 2 per tick, so a stall cannot lap the readers at once.
 */
static void *producer_main(void *arg)
{
    struct floor *f = arg;
    struct ring *r = &f->ring;
    int64_t t0 = clock_ns(CLOCK_MONOTONIC);
    int64_t end = t0 + f->o.duration_ns;
    uint64_t seq = 0;
    struct timespec cpu;

    while (!stopping(f)) {
        int64_t now = clock_ns(CLOCK_MONOTONIC);
        int64_t next = t0 + (int64_t)((double)(seq + 1) * (double)NS_PER_S / (double)f->o.rate);
        uint64_t due = (uint64_t)((double)(now - t0) * (double)f->o.rate / (double)NS_PER_S);
        uint64_t n = 0;

        if (now >= end) {
            break;
        }
        if (next > now) {
            int64_t until = next - now < FLOOR_TICK_MAX_NS ? next : now + FLOOR_TICK_MAX_NS;
            struct timespec ts = {until / NS_PER_S, until % NS_PER_S};

            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
            continue;
        }
        if ((uint64_t)(now - next) > f->behind_max_ns) {
            f->behind_max_ns = (uint64_t)(now - next);
        }
        while (seq < due && n < r->window / 2) {
            frame_build(r, seq);
            seq++;
            n++;
        }
        atomic_store_explicit(&r->head, seq, memory_order_release);
        wake_workers(f);
    }
    f->produced = seq;
    atomic_store(&f->stop, true);
    wake_workers(f);
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0) {
        f->producer_cpu_s = (double)cpu.tv_sec + (double)cpu.tv_nsec / 1e9;
    }
    return NULL;
}

/* ---- connections ----------------------------------------------------------------------- */

static void conn_close(struct worker *w, struct conn *c)
{
    struct conn *last = w->conns[w->n_conns - 1];

    close(c->fd); /* also leaves the epoll set */
    last->pos = c->pos;
    w->conns[c->pos] = last;
    w->n_conns--;
    free(c->head);
    free(c);
}

/*
 * The iovec of the chunk in progress from byte ck_sent on: header, frames (one entry each, or
 * one per run adjacent in the ring with --coalesce), CRLF. Returns the entry count.
 */
static int chunk_iov(const struct floor *f, const struct conn *c, struct iovec *iov)
{
    const struct ring *r = &f->ring;
    size_t off = c->ck_sent;
    size_t frames_len = (size_t)c->ck_n * r->frame_len;
    int n = 0;

    if (off < c->ck_hdr_len) {
        iov[n++] = (struct iovec){(char *)c->ck_hdr + off, c->ck_hdr_len - off};
        off = 0;
    } else {
        off -= c->ck_hdr_len;
    }
    if (off < frames_len) {
        uint64_t s = c->next_seq + off / r->frame_len;
        uint64_t end = c->next_seq + c->ck_n;
        size_t in = off % r->frame_len;

        while (s < end) {
            uint64_t run = 1;

            if (f->o.coalesce) {
                run = end - s < r->cap - (s & r->mask) ? end - s : r->cap - (s & r->mask);
            }
            iov[n++] = (struct iovec){ring_slot(r, s) + in, (size_t)run * r->frame_len - in};
            s += run;
            in = 0;
        }
        off = 0;
    } else {
        off -= frames_len;
    }
    iov[n++] = (struct iovec){(char *)"\r\n" + off, 2 - off};
    return n;
}

/*
 * One writev of what <c> has pending. Returns 1 when more is pending and the socket took
 * everything (call again), 0 when caught up or parked until EPOLLOUT, -1 when <c> was closed.
 */
static int conn_flush(struct worker *w, struct conn *c)
{
    struct floor *f = w->f;
    struct ring *r = &f->ring;
    struct iovec iov[FLOOR_IOV];
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    size_t want = 0;
    ssize_t wr;
    int n = 0;

    if (head - c->next_seq > r->window) {
        w->st.lagging++;
        conn_close(w, c);
        return -1;
    }
    if (c->ck_n == 0 && head > c->next_seq) {
        uint64_t avail = head - c->next_seq;

        c->ck_n = avail < FLOOR_IOV - 3 ? (uint32_t)avail : FLOOR_IOV - 3;
        c->ck_sent = 0;
        c->ck_hdr_len = (uint8_t)snprintf(c->ck_hdr, sizeof(c->ck_hdr), "%zx\r\n",
                                          (size_t)c->ck_n * r->frame_len);
        c->ck_total = c->ck_hdr_len + (size_t)c->ck_n * r->frame_len + 2;
    }
    if (c->resp_off < sizeof(RESP_200) - 1) {
        iov[n++] =
            (struct iovec){(char *)RESP_200 + c->resp_off, sizeof(RESP_200) - 1 - c->resp_off};
    }
    if (c->ck_n > 0) {
        n += chunk_iov(f, c, iov + n);
    }
    if (n == 0) {
        return 0;
    }
    for (int i = 0; i < n; i++) {
        want += iov[i].iov_len;
    }
    wr = writev(c->fd, iov, n);
    if (wr == -1) {
        int e = errno;

        if (e == EAGAIN || e == EWOULDBLOCK) {
            c->blocked = true;
            return 0;
        }
        w->st.closed_error++;
        conn_close(w, c);
        return -1;
    }
    w->st.writevs++;
    w->st.bytes += (uint64_t)wr;
    if (c->ck_n > 0 &&
        atomic_load_explicit(&r->head, memory_order_acquire) - c->next_seq >= r->cap) {
        w->st.torn++; /* the producer lapped a frame during the copy: what went out is unsure */
        conn_close(w, c);
        return -1;
    }
    if ((size_t)wr < want) {
        c->blocked = true;
        w->st.short_writes++;
    }
    if (c->resp_off < sizeof(RESP_200) - 1) {
        size_t k = sizeof(RESP_200) - 1 - c->resp_off;

        k = (size_t)wr < k ? (size_t)wr : k;
        c->resp_off += k;
        wr -= (ssize_t)k;
    }
    c->ck_sent += (size_t)wr;
    if (c->ck_n > 0 && c->ck_sent == c->ck_total) {
        c->next_seq += c->ck_n;
        w->st.frames += c->ck_n;
        c->ck_n = 0;
        c->ck_sent = 0;
    }
    return !c->blocked && head > c->next_seq ? 1 : 0;
}

/* "watch=true" or "watch=1" among the query's parameters. */
static bool query_has_watch(const char *q, size_t len)
{
    size_t i = 0;

    while (i < len) {
        const char *amp = memchr(q + i, '&', len - i);
        size_t end = amp != NULL ? (size_t)(amp - q) : len;
        size_t plen = end - i;

        if ((plen == 10 && memcmp(q + i, "watch=true", 10) == 0) ||
            (plen == 7 && memcmp(q + i, "watch=1", 7) == 0)) {
            return true;
        }
        i = end + 1;
    }
    return false;
}

/* GET /api/v1/pods?...watch=true... HTTP/1.x */
static bool request_is_watch(const char *h, size_t len)
{
    static const char path[] = "/api/v1/pods";
    const char *sp, *q;
    size_t tlen;

    if (len < 4 || memcmp(h, "GET ", 4) != 0) {
        return false;
    }
    sp = memchr(h + 4, ' ', len - 4);
    if (sp == NULL) {
        return false;
    }
    tlen = (size_t)(sp - (h + 4));
    q = memchr(h + 4, '?', tlen);
    if (q == NULL || (size_t)(q - (h + 4)) != sizeof(path) - 1 ||
        memcmp(h + 4, path, sizeof(path) - 1) != 0) {
        return false;
    }
    return query_has_watch(q + 1, (size_t)(sp - q - 1));
}

/* The head is complete: answer it. Returns -1 when <c> was closed, else as conn_flush. */
static int conn_route(struct worker *w, struct conn *c)
{
    bool watch = request_is_watch(c->head, c->head_len);

    free(c->head);
    c->head = NULL;
    if (!watch) {
        ssize_t wr = write(c->fd, RESP_404, sizeof(RESP_404) - 1);

        (void)wr; /* a fresh socket takes 120 bytes; if not, the client sees a reset */
        w->st.not_found++;
        conn_close(w, c);
        return -1;
    }
    c->state = CONN_STREAM;
    c->next_seq = atomic_load_explicit(&w->f->ring.head, memory_order_acquire);
    w->st.streams++;
    return conn_flush(w, c);
}

/* Reads the request head (edge-triggered: until EAGAIN). Returns -1 when <c> was closed, 1
 * when it is answered and has frames pending, else 0. */
static int conn_read_head(struct worker *w, struct conn *c)
{
    for (;;) {
        size_t from = c->head_len > 3 ? c->head_len - 3 : 0;
        ssize_t rd;

        if (c->head_len == c->head_cap) {
            size_t cap = c->head_cap == 0 ? FLOOR_HEAD_FIRST : c->head_cap * 2;
            char *p;

            if (c->head_cap >= FLOOR_HEAD_CAP) {
                w->st.dropped_head++;
                conn_close(w, c);
                return -1;
            }
            p = realloc(c->head, cap);
            if (p == NULL) {
                fprintf(stderr, "floor: out of memory\n");
                abort();
            }
            c->head = p;
            c->head_cap = cap;
        }
        rd = read(c->fd, c->head + c->head_len, c->head_cap - c->head_len);
        if (rd == -1) {
            int e = errno;

            if (e == EAGAIN || e == EWOULDBLOCK) {
                return 0;
            }
            w->st.closed_error++;
            conn_close(w, c);
            return -1;
        }
        if (rd == 0) {
            w->st.closed_peer++;
            conn_close(w, c);
            return -1;
        }
        c->head_len += (size_t)rd;
        if (memmem(c->head + from, c->head_len - from, "\r\n\r\n", 4) != NULL) {
            return conn_route(w, c);
        }
    }
}

/* A streaming client sends nothing more: read and drop it, and notice EOF. */
static int conn_drain(struct worker *w, struct conn *c)
{
    char buf[4096];

    for (int i = 0; i < 64; i++) {
        ssize_t rd = read(c->fd, buf, sizeof(buf));

        if (rd > 0) {
            continue;
        }
        if (rd == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return 0;
        }
        if (rd == 0) {
            w->st.closed_peer++;
        } else {
            w->st.closed_error++;
        }
        conn_close(w, c);
        return -1;
    }
    return 0; /* more later: edge-triggered, so a flood of input is cut here and ignored */
}

/* Returns 1 when <c> still has frames pending after what it could write (see conn_flush). */
static int conn_event(struct worker *w, struct conn *c, uint32_t events)
{
    if (events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) {
        w->st.closed_peer++;
        conn_close(w, c);
        return 0;
    }
    if (events & EPOLLIN) {
        int rc = c->state == CONN_HEAD ? conn_read_head(w, c) : conn_drain(w, c);

        if (rc != 0) {
            return rc == 1 ? 1 : 0;
        }
    }
    if ((events & EPOLLOUT) && c->state == CONN_STREAM && c->blocked) {
        c->blocked = false;
        return conn_flush(w, c) == 1 ? 1 : 0;
    }
    return 0;
}

static void worker_accept(struct worker *w)
{
    for (int i = 0; i < FLOOR_ACCEPT_BATCH; i++) {
        int fd = accept4(w->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET};
        int one = 1;
        struct conn *c;

        if (fd == -1) {
            return; /* EAGAIN, or a transient error (EMFILE): the listener stays readable */
        }
        if (w->n_conns == w->max_conns) {
            w->st.refused++;
            close(fd);
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        c = xcalloc(1, sizeof(*c));
        c->fd = fd;
        c->pos = (uint32_t)w->n_conns;
        ev.data.ptr = c;
        if (epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev) == -1) {
            close(fd);
            free(c);
            continue;
        }
        w->conns[w->n_conns++] = c;
        w->st.accepted++;
    }
}

/* Every stream not parked gets one writev; a parked one too far behind is closed. Returns
 * true when some stream still has frames pending (another pass is due at once). */
static bool worker_pass(struct worker *w)
{
    uint64_t head = atomic_load_explicit(&w->f->ring.head, memory_order_acquire);
    bool more = false;
    size_t i = 0;

    w->st.passes++;
    while (i < w->n_conns) {
        struct conn *c = w->conns[i];
        int rc = 0;

        if (c->state == CONN_STREAM && !c->blocked) {
            rc = conn_flush(w, c);
        } else if (c->state == CONN_STREAM && head - c->next_seq > w->f->ring.window) {
            w->st.lagging++;
            conn_close(w, c);
            rc = -1;
        }
        if (rc == -1) {
            continue; /* the last connection moved into slot i */
        }
        more = more || rc == 1;
        i++;
    }
    return more;
}

/*
 * With --batch-ms B, a pass starts at most every B ms: the frames that arrive in between go out
 * together, fewer writevs for up to B ms of extra delay (0: a pass on every wake).
 */
static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct epoll_event evs[FLOOR_EPOLL_BATCH];
    int64_t batch_ns = w->f->o.batch_ms * 1000000LL;
    int64_t next_pass = 0;
    bool due = false; /* a wake or unsent frames wait for the next pass */

    while (!stopping(w->f)) {
        int64_t now = clock_ns(CLOCK_MONOTONIC);
        int timeout = 100;
        int n;

        if (due) {
            timeout = now >= next_pass ? 0 : (int)((next_pass - now + 999999) / 1000000);
        }
        n = epoll_wait(w->ep, evs, FLOOR_EPOLL_BATCH, timeout);
        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }
            perror("floor: epoll_wait");
            break;
        }
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;

            if (p == &w->tag_listen) {
                worker_accept(w);
            } else if (p == &w->tag_wake) {
                uint64_t v;
                ssize_t rd = read(w->efd, &v, sizeof(v));

                (void)rd;
                due = true;
                w->st.wakes++;
            } else if (conn_event(w, p, evs[i].events) == 1) {
                due = true;
            }
        }
        now = clock_ns(CLOCK_MONOTONIC);
        if (due && now >= next_pass) {
            next_pass = now + batch_ns;
            due = worker_pass(w);
        }
    }
    return NULL;
}

/* ---- setup ----------------------------------------------------------------------------- */

static int listener_open(unsigned *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)*port)};
    socklen_t alen = sizeof(a);
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd == -1) {
        return -1;
    }
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) == -1 ||
        bind(fd, (struct sockaddr *)&a, sizeof(a)) == -1 || listen(fd, 4096) == -1 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) == -1) {
        int e = errno;

        close(fd);
        errno = e;
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

static int worker_init(struct floor *f, struct worker *w, unsigned *port)
{
    struct epoll_event ev = {.events = EPOLLIN};

    w->f = f;
    w->max_conns = (size_t)f->o.max_conns;
    w->conns = xcalloc(w->max_conns, sizeof(*w->conns));
    w->ep = epoll_create1(EPOLL_CLOEXEC);
    w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    w->lfd = listener_open(port);
    if (w->ep == -1 || w->efd == -1 || w->lfd == -1) {
        return -1;
    }
    ev.data.ptr = &w->tag_listen;
    if (epoll_ctl(w->ep, EPOLL_CTL_ADD, w->lfd, &ev) == -1) {
        return -1;
    }
    ev.data.ptr = &w->tag_wake;
    return epoll_ctl(w->ep, EPOLL_CTL_ADD, w->efd, &ev);
}

static void worker_fini(struct worker *w)
{
    while (w->n_conns > 0) {
        conn_close(w, w->conns[w->n_conns - 1]);
    }
    free(w->conns);
    if (w->lfd >= 0) {
        close(w->lfd);
    }
    if (w->efd >= 0) {
        close(w->efd);
    }
    if (w->ep >= 0) {
        close(w->ep);
    }
}

/* ---- --sink: a client that reads and drops ----------------------------------------------- */

/*
 * Opens <conns> watches on 127.0.0.1:<sink_port> and reads them (one epoll thread,
 * level-triggered, one read() of up to SINK_RBUF per ready socket per turn, like kwp load)
 * without parsing anything: frames are counted as "\n{" pairs (every frame starts with '{'
 * right after the previous frame's '\n' or the chunk header's CRLF). It bounds what any client
 * on this machine can take in; it does not measure latency.
 */
static int sink_run(const struct opts *o)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->sink_port)};
    struct epoll_event evs[FLOOR_EPOLL_BATCH];
    char req[160];
    int req_len = snprintf(req, sizeof(req),
                           "GET /api/v1/pods?watch=true HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n"
                           "User-Agent: kwp-bench-floor-sink\r\n\r\n",
                           o->sink_port);
    int *fds = xcalloc((size_t)o->conns, sizeof(*fds));
    char *buf = xcalloc(1, SINK_RBUF);
    char *last = xcalloc((size_t)o->conns, 1); /* each stream's last byte: a '\n' cut off a '{' */
    uint64_t bytes = 0, frames = 0, closed = 0;
    int64_t t_start, t_end;
    struct timespec cpu0, cpu1;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    long open_n = 0;
    int rc = 1;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (long i = 0; i < o->conns; i++) {
        fds[i] = -1;
    }
    for (; open_n < o->conns && ep != -1 && !g_signalled; open_n++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)open_n};

        fds[open_n] = fd;
        if (fd == -1 || connect(fd, (struct sockaddr *)&a, sizeof(a)) == -1 ||
            write(fd, req, (size_t)req_len) != req_len ||
            epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == -1) {
            perror("kwp_bench_floor --sink: connect");
            goto out;
        }
    }
    for (long i = 0; i < open_n; i++) { /* blocking connect and write above; reads are not */
        int fl = fcntl(fds[i], F_GETFL);

        fcntl(fds[i], F_SETFL, fl | O_NONBLOCK);
    }
    t_start = clock_ns(CLOCK_MONOTONIC) + o->warmup_ns;
    t_end = t_start + o->duration_ns;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu0);
    for (;;) {
        int64_t now = clock_ns(CLOCK_MONOTONIC);
        int n;

        if (now >= t_end || g_signalled || closed == (uint64_t)open_n) {
            break;
        }
        n = epoll_wait(ep, evs, FLOOR_EPOLL_BATCH, 100);
        now = clock_ns(CLOCK_MONOTONIC);
        for (int i = 0; i < n; i++) {
            size_t k = (size_t)evs[i].data.u64;
            ssize_t rd = read(fds[k], buf, SINK_RBUF);
            const char *p = buf, *end;

            if (rd <= 0) {
                if (rd == 0 || (errno != EAGAIN && errno != EINTR)) {
                    epoll_ctl(ep, EPOLL_CTL_DEL, fds[k], NULL);
                    closed++;
                }
                continue;
            }
            end = buf + rd;
            if (now >= t_start) {
                bytes += (uint64_t)rd;
                frames += last[k] == '\n' && buf[0] == '{';
                for (; (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++) {
                    frames += p + 1 < end && p[1] == '{'; /* a '\n' at the end: next read */
                }
            }
            last[k] = end[-1];
        }
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu1);
    {
        double secs = (double)(clock_ns(CLOCK_MONOTONIC) - t_start) / 1e9;
        double cpu =
            (double)(cpu1.tv_sec - cpu0.tv_sec) + (double)(cpu1.tv_nsec - cpu0.tv_nsec) / 1e9;

        printf("sink: %ld streams (%llu closed), %.1f s measured: %.0f frames/s, %.1f MB/s read, "
               "%.2f CPU s (%.0f %% of a core)\n",
               open_n, (unsigned long long)closed, secs, (double)frames / secs,
               (double)bytes / 1e6 / secs, cpu, 100.0 * cpu / secs);
    }
    rc = 0;
out:
    for (long i = 0; i < o->conns; i++) {
        if (fds[i] >= 0) {
            close(fds[i]);
        }
    }
    if (ep != -1) {
        close(ep);
    }
    free(last);
    free(buf);
    free(fds);
    return rc;
}

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: kwp_bench_floor [--port N] [--rate N] [--event-bytes N] [--ring N]\n"
        "         [--threads N] [--max-conns N] [--duration D] [--coalesce] [--batch-ms N]\n"
        "The cheapest watch server: GET /api/v1/pods?watch=true on 127.0.0.1 gets a chunked\n"
        "stream of MODIFIED pod frames of --event-bytes (default 1024), --rate per second\n"
        "(default 100), stamped with kwp.io/stamp-ns for `kwp load`; anything else gets 404.\n"
        "  --ring N       frames kept (default 65536, a power of two); a stream further behind\n"
        "                 than 3/4 of it is closed\n"
        "  --threads N    epoll workers (default 1), each with a SO_REUSEPORT listener\n"
        "  --max-conns N  connections per worker (default 30000)\n"
        "  --duration D   run time: 16s, 500ms, 2m (default 600s); SIGTERM ends it sooner\n"
        "  --coalesce     one iovec per run of frames adjacent in the ring (default: per frame)\n"
        "  --template F   every frame is F's first line (a watch frame carrying a 19-digit\n"
        "                 kwp.io/stamp-ns), restamped; its length replaces --event-bytes\n"
        "  --batch-ms N   start a worker's passes at least N ms apart (default 0: on every\n"
        "                 wake): more frames per writev, up to N ms more delay\n"
        "Client mode, to bound what a client can take in (no parsing, no latency):\n"
        "  --sink http://127.0.0.1:PORT --conns N [--warmup D] [--duration D]\n"
        "                 hold N watches (default 1000), read and drop; after every stream is\n"
        "                 open and --warmup (default 1s), count frames and bytes for --duration\n"
        "                 (default 10s) and print them\n");
}

/* "16s", "500ms", "2m" or plain seconds. */
static int parse_duration(const char *s, int64_t *ns)
{
    char *end;
    double v = strtod(s, &end);
    double mul = 1e9;

    if (end == s || v <= 0) {
        return -EINVAL;
    }
    if (strcmp(end, "ms") == 0) {
        mul = 1e6;
    } else if (strcmp(end, "m") == 0) {
        mul = 60e9;
    } else if (*end != '\0' && strcmp(end, "s") != 0) {
        return -EINVAL;
    }
    if (v * mul > 86400e9) {
        return -EINVAL;
    }
    *ns = (int64_t)(v * mul);
    return 0;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        return -EINVAL;
    }
    *out = v;
    return 0;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long port = 0;
        int rc = -EINVAL;

        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strcmp(a, "--coalesce") == 0) {
            o->coalesce = true;
            continue;
        }
        if (v == NULL) {
            fprintf(stderr, "kwp_bench_floor: %s needs a value\n", a);
            usage(stderr);
            exit(2);
        }
        i++;
        if (strcmp(a, "--port") == 0) {
            rc = parse_long(v, 0, 65535, &port);
            o->port = (unsigned)port;
        } else if (strcmp(a, "--rate") == 0) {
            rc = parse_long(v, 1, 10000000, &o->rate);
        } else if (strcmp(a, "--event-bytes") == 0) {
            rc = parse_long(v, 1, FLOOR_EVENT_MAX, &o->event_bytes);
        } else if (strcmp(a, "--ring") == 0) {
            rc = parse_long(v, 16, FLOOR_RING_MAX, &o->ring);
        } else if (strcmp(a, "--threads") == 0) {
            rc = parse_long(v, 1, FLOOR_MAX_THREADS, &o->threads);
        } else if (strcmp(a, "--max-conns") == 0) {
            rc = parse_long(v, 1, 1000000, &o->max_conns);
        } else if (strcmp(a, "--duration") == 0) {
            rc = parse_duration(v, &o->duration_ns);
            o->sink_duration_set = true;
        } else if (strcmp(a, "--batch-ms") == 0) {
            rc = parse_long(v, 0, 1000, &o->batch_ms);
        } else if (strcmp(a, "--template") == 0) {
            o->template_path = v;
            rc = 0;
        } else if (strcmp(a, "--warmup") == 0) {
            rc = parse_duration(v, &o->warmup_ns);
        } else if (strcmp(a, "--conns") == 0) {
            rc = parse_long(v, 1, 1000000, &o->conns);
        } else if (strcmp(a, "--sink") == 0) {
            rc = strncmp(v, "http://127.0.0.1:", 17) == 0 ? parse_long(v + 17, 1, 65535, &port)
                                                          : -EINVAL;
            o->sink_port = (unsigned)port;
        }
        if (rc != 0) {
            fprintf(stderr, "kwp_bench_floor: bad %s %s\n", a, v);
            usage(stderr);
            exit(2);
        }
    }
}

/*
 * --template FILE: one watch frame, as a server sent it (its first line; "\n" added when it
 * has none), carrying "kwp.io/stamp-ns":"<19 digits>". Every frame is then these bytes with
 * the stamp rewritten, so the floor serves exactly what kwp serves and a client's cost per
 * event is the same on both sides. Sets r->tmpl, r->stamp_off and the frame length.
 */
static int template_load(struct ring *r, const char *path)
{
    static const char key[] = "\"kwp.io/stamp-ns\":\"";
    char *buf = malloc(FLOOR_EVENT_MAX + 2), *k, *nl;
    FILE *f = fopen(path, "r");
    size_t n;

    if (f == NULL || buf == NULL) {
        fprintf(stderr, "kwp_bench_floor: --template %s: %s\n", path, strerror(errno));
        if (f) {
            fclose(f);
        }
        free(buf);
        return -EINVAL;
    }
    n = fread(buf, 1, FLOOR_EVENT_MAX, f);
    fclose(f);
    buf[n] = '\0';
    nl = memchr(buf, '\n', n);
    n = nl ? (size_t)(nl - buf) : n;
    buf[n++] = '\n';
    k = strstr(buf, key);
    if (k == NULL || k + sizeof(key) - 1 + 19 > buf + n ||
        strspn(k + sizeof(key) - 1, "0123456789") != 19) {
        fprintf(stderr,
                "kwp_bench_floor: --template %s: no 19-digit kwp.io/stamp-ns in its first line\n",
                path);
        free(buf);
        return -EINVAL;
    }
    r->tmpl = buf;
    r->stamp_off = (size_t)(k - buf) + sizeof(key) - 1;
    r->frame_len = n;
    return 0;
}

static int ring_init(struct ring *r, const struct opts *o)
{
    /* the longest head: 2-digit name, 20-digit rv, 19-digit stamp; one pad byte at least */
    size_t min_len = (sizeof(FRAME_HEAD) - 1) - 10 + 2 + 20 + 19 + 1 + (sizeof(FRAME_TAIL) - 1);
    uint64_t cap = 16;

    while (cap < (uint64_t)o->ring) {
        cap *= 2;
    }
    if (o->template_path != NULL) {
        if (template_load(r, o->template_path) != 0) {
            return -EINVAL;
        }
    } else if ((size_t)o->event_bytes < min_len) {
        fprintf(stderr, "kwp_bench_floor: --event-bytes must be at least %zu\n", min_len);
        return -EINVAL;
    }
    if (o->template_path == NULL) {
        r->frame_len = (size_t)o->event_bytes;
    }
    if (cap * (uint64_t)r->frame_len > FLOOR_RING_BYTES_MAX) {
        fprintf(stderr, "kwp_bench_floor: ring of %llu x %zu bytes is above %llu\n",
                (unsigned long long)cap, r->frame_len, (unsigned long long)FLOOR_RING_BYTES_MAX);
        return -EINVAL;
    }
    r->cap = cap;
    r->mask = cap - 1;
    r->window = cap - cap / 4;
    r->buf = malloc((size_t)(cap * r->frame_len));
    if (r->buf == NULL) {
        return -ENOMEM;
    }
    atomic_init(&r->head, 0);
    return 0;
}

static void report(const struct floor *f, double wall_s)
{
    struct worker_stats t = {0};

    for (long i = 0; i < f->o.threads; i++) {
        const struct worker_stats *s = &f->workers[i].st;

        t.accepted += s->accepted;
        t.refused += s->refused;
        t.not_found += s->not_found;
        t.dropped_head += s->dropped_head;
        t.streams += s->streams;
        t.closed_peer += s->closed_peer;
        t.closed_error += s->closed_error;
        t.lagging += s->lagging;
        t.torn += s->torn;
        t.writevs += s->writevs;
        t.short_writes += s->short_writes;
        t.bytes += s->bytes;
        t.frames += s->frames;
        t.wakes += s->wakes;
        t.passes += s->passes;
    }
    fprintf(stderr,
            "floor: %.1f s, produced %llu events (%.0f/s), producer late by %.1f ms at most, "
            "producer CPU %.3f s, %llu eventfd writes\n"
            "floor: accepted %llu (refused %llu), streams %llu, 404 %llu, head dropped %llu, "
            "closed by peer %llu, by error %llu, lagging %llu, torn %llu\n"
            "floor: %llu frames in %llu writevs (%.2f frames each), %llu short, %.1f MB, "
            "%llu wakes, %llu passes\n",
            wall_s, (unsigned long long)f->produced, (double)f->produced / wall_s,
            (double)f->behind_max_ns / 1e6, f->producer_cpu_s,
            (unsigned long long)f->eventfd_writes, (unsigned long long)t.accepted,
            (unsigned long long)t.refused, (unsigned long long)t.streams,
            (unsigned long long)t.not_found, (unsigned long long)t.dropped_head,
            (unsigned long long)t.closed_peer, (unsigned long long)t.closed_error,
            (unsigned long long)t.lagging, (unsigned long long)t.torn, (unsigned long long)t.frames,
            (unsigned long long)t.writevs, t.writevs ? (double)t.frames / (double)t.writevs : 0.0,
            (unsigned long long)t.short_writes, (double)t.bytes / 1e6, (unsigned long long)t.wakes,
            (unsigned long long)t.passes);
}

int main(int argc, char **argv)
{
    struct floor f = {.o = {.rate = 100,
                            .event_bytes = 1024,
                            .ring = 65536,
                            .threads = 1,
                            .max_conns = 30000,
                            .duration_ns = 600 * NS_PER_S,
                            .conns = 1000,
                            .warmup_ns = NS_PER_S}};
    struct sigaction sa = {.sa_handler = on_signal};
    struct rlimit rl;
    pthread_t producer;
    unsigned port;
    long started = 0;
    int64_t t0;
    int rc = 1;

    parse_args(argc, argv, &f.o);
    signal(SIGPIPE, SIG_IGN);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max; /* one descriptor per watch */
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (f.o.sink_port != 0) {
        if (!f.o.sink_duration_set) {
            f.o.duration_ns = 10 * NS_PER_S;
        }
        return sink_run(&f.o);
    }
    atomic_init(&f.stop, false);
    if (ring_init(&f.ring, &f.o) != 0) {
        return 2;
    }
    f.workers = xcalloc((size_t)f.o.threads, sizeof(*f.workers));
    for (long i = 0; i < f.o.threads; i++) {
        f.workers[i].ep = f.workers[i].efd = f.workers[i].lfd = -1;
    }
    port = f.o.port;
    for (long i = 0; i < f.o.threads; i++) {
        if (worker_init(&f, &f.workers[i], &port) != 0) {
            perror("kwp_bench_floor: listen on 127.0.0.1");
            goto out;
        }
    }
    printf("listening on http://127.0.0.1:%u\n", port);
    fflush(stdout);
    t0 = clock_ns(CLOCK_MONOTONIC);
    for (; started < f.o.threads; started++) {
        if (pthread_create(&f.workers[started].thread, NULL, worker_main, &f.workers[started]) !=
            0) {
            atomic_store(&f.stop, true);
            goto join;
        }
    }
    if (pthread_create(&producer, NULL, producer_main, &f) != 0) {
        atomic_store(&f.stop, true);
        goto join;
    }
    pthread_join(producer, NULL);
    rc = 0;
join:
    for (long i = 0; i < started; i++) {
        pthread_join(f.workers[i].thread, NULL);
    }
    report(&f, (double)(clock_ns(CLOCK_MONOTONIC) - t0) / 1e9);
out:
    for (long i = 0; i < f.o.threads; i++) {
        worker_fini(&f.workers[i]);
    }
    free(f.workers);
    free(f.ring.buf);
    free(f.ring.tmpl);
    return rc;
}
