/*
 * client.c - the epoll load engine (see client.h for the reflector state machine).
 *
 * One thread, one epoll set, level-triggered: each ready socket gets one read() of at most
 * CLIENT_RBUF bytes per loop turn, which keeps thousands of busy streams fair. All reads land
 * in one shared buffer; chunked decoding and line framing work there, and only a line cut by
 * the end of a read is copied (lineframe.c).
 *
 * A connection walks IDLE -> CONNECTING -> SENDING -> HEAD -> BODY and back to IDLE: with its
 * socket kept (keep-alive, the next request goes out at once) or closed (the next request
 * waits in the timer heap: now for a clean re-watch, later for a backoff). Every failure goes
 * through conn_fail(), which counts it once, closes, and schedules the retry.
 *
 * Clocks: CLOCK_MONOTONIC for scheduling and LIST latency; CLOCK_REALTIME, read once per
 * read(), for event latency against the simulator's wall-clock stamp.
 */
#include "load/client.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "cache/bug.h"
#include "cache/sbuf.h"
#include "load/chunked.h"
#include "load/evscan.h"
#include "load/lineframe.h"
#include "load/procstat.h"

#define CLIENT_RBUF (256 * 1024) /* shared read buffer: one read() per ready socket */
#define EPOLL_BATCH 1024
#define START_BATCH 512  /* ramp connects per loop turn (catching up after a stall) */
#define TIMER_BATCH 1024 /* timers fired per loop turn */
#define NS_PER_S 1000000000LL
#define NS_PER_MS 1000000LL
#define MIN_WATCH_TIMEOUT_S 300 /* client-go: timeoutSeconds = 300 * (1 + rand) */

enum conn_kind { KIND_WATCHER = 0, KIND_LISTER };
enum conn_state { ST_IDLE = 0, ST_CONNECTING, ST_SENDING, ST_HEAD, ST_BODY };
enum req_kind { REQ_NONE = 0, REQ_LIST, REQ_WATCH, REQ_BENCH };

struct conn {
    int fd;           /* -1 when closed */
    uint32_t idx;     /* watcher index or lister slot */
    uint32_t ev_mask; /* events registered with epoll (0 = not registered) */
    uint8_t kind;     /* enum conn_kind */
    uint8_t state;    /* enum conn_state */
    uint8_t req;      /* enum req_kind of the request in progress */
    bool reused;      /* request sent on a kept-alive socket (may be retried once) */
    bool got_bytes;   /* a byte of the current response arrived */
    bool keepalive;   /* the response allows another request on this socket */
    bool is_chunked;
    bool has_length;
    bool head_done;
    bool counted_open;  /* this watch is counted in open_now */
    bool opened_once;   /* this watcher had a watch answered 200 */
    bool need_list;     /* the next request is a (re)LIST */
    bool relisting;     /* the pending LIST follows a 410 */
    bool watchlist_req; /* the watch asked for sendInitialEvents */
    bool in_initial;    /* watch-list: before the initial-events-end bookmark */
    bool abort;         /* set by a line callback: close once the feed returns */
    uint16_t head_lines;
    int status;
    uint64_t content_left; /* body bytes still due when has_length */
    struct chunked ck;
    struct lineframe lf; /* header lines, then watch lines */
    char *out;           /* unsent request bytes after a short write */
    size_t out_len, out_off;
    char *prefix; /* first bytes of a reflector LIST body */
    size_t prefix_len;
    int64_t due_ns; /* timer, valid while heap_pos != SIZE_MAX */
    size_t heap_pos;
    int64_t backoff_ms;     /* last backoff step, 0 after a success */
    int64_t started_ns;     /* LIST mode: request start */
    uint64_t resp_bytes;    /* LIST mode: body bytes of this response */
    char rv[CLIENT_RV_MAX]; /* last resourceVersion seen, "" = none */
};

/* Totals at the previous tick, to turn counters into per-second deltas. */
struct totals {
    uint64_t events, bytes, lists, list_bytes, errors, gone, relists, reconnects;
    double cpu_s[1 + CLIENT_MAX_PIDS];
};

struct engine {
    const struct client_opts *o;
    struct client_stats *st;
    int ep;
    char *rbuf;
    struct conn *watchers;
    size_t n_watchers;
    struct conn *listers;
    size_t n_listers;
    struct conn **heap; /* min-heap on due_ns */
    size_t heap_len, heap_cap;
    size_t started;  /* watchers the ramp has started */
    int64_t now_ns;  /* monotonic, refreshed each loop turn */
    int64_t wall_ns; /* realtime, refreshed per read() */
    int64_t t0_ns, end_ns, warm_ns, stop_ns, drain_end_ns;
    int64_t next_tick_ns, next_list_ns;
    uint32_t open_now;
    uint64_t lists_in_flight;
    bool stopping;
    uint64_t rng;
    struct histogram *lat_sec; /* this second's latency samples */
    struct totals prev;
    int64_t prev_tick_ns;
};

/* The engine and the connection a line callback works for. */
struct line_ctx {
    struct engine *e;
    struct conn *c;
};

static const char *const terr_names[CLIENT_TERR_COUNT] = {
    "connect", "reset", "eof", "protocol", "line_too_long", "bad_event",
};

const char *client_terr_name(enum client_terr t)
{
    return (unsigned)t < CLIENT_TERR_COUNT ? terr_names[t] : "unknown";
}

uint64_t client_stats_errors(const struct client_stats *st)
{
    uint64_t n = 0;

    for (size_t i = 0; i < CLIENT_STATUS_MAX; i++) {
        n += st->http_status[i] + st->error_events[i];
    }
    for (size_t i = 0; i < CLIENT_TERR_COUNT; i++) {
        n += st->transport[i];
    }
    return n;
}

void client_stats_fini(struct client_stats *st)
{
    histogram_free(st->latency);
    histogram_free(st->list_latency);
    free(st->per_watcher);
    free(st->series);
    st->latency = NULL;
    st->list_latency = NULL;
    st->per_watcher = NULL;
    st->series = NULL;
    st->n_series = 0;
}

static int64_t clock_ns(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* xorshift64*: jitter and watch timeouts only. */
static double rand_unit(struct engine *e)
{
    e->rng ^= e->rng >> 12;
    e->rng ^= e->rng << 25;
    e->rng ^= e->rng >> 27;
    return (double)((e->rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static size_t status_slot(int code)
{
    return code < 0 ? 0 : code >= CLIENT_STATUS_MAX ? CLIENT_STATUS_MAX - 1 : (size_t)code;
}

/* ---- timer heap ------------------------------------------------------------------------ */

static void heap_swap(struct engine *e, size_t a, size_t b)
{
    struct conn *t = e->heap[a];

    e->heap[a] = e->heap[b];
    e->heap[b] = t;
    e->heap[a]->heap_pos = a;
    e->heap[b]->heap_pos = b;
}

static void heap_push(struct engine *e, struct conn *c, int64_t due_ns)
{
    size_t i;

    BUG_ON(c->heap_pos != SIZE_MAX);
    if (e->heap_len == e->heap_cap) {
        e->heap_cap = e->heap_cap ? e->heap_cap * 2 : 64;
        e->heap = xrealloc(e->heap, e->heap_cap * sizeof(*e->heap));
    }
    c->due_ns = due_ns;
    i = e->heap_len++;
    e->heap[i] = c;
    c->heap_pos = i;
    while (i > 0 && e->heap[(i - 1) / 2]->due_ns > e->heap[i]->due_ns) {
        heap_swap(e, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static struct conn *heap_pop(struct engine *e)
{
    struct conn *top = e->heap[0];
    size_t i = 0;

    e->heap_len--;
    if (e->heap_len > 0) {
        e->heap[0] = e->heap[e->heap_len];
        e->heap[0]->heap_pos = 0;
    }
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < e->heap_len && e->heap[l]->due_ns < e->heap[m]->due_ns) {
            m = l;
        }
        if (r < e->heap_len && e->heap[r]->due_ns < e->heap[m]->due_ns) {
            m = r;
        }
        if (m == i) {
            break;
        }
        heap_swap(e, i, m);
        i = m;
    }
    top->heap_pos = SIZE_MAX;
    return top;
}

/* ---- socket plumbing ------------------------------------------------------------------- */

static void conn_epoll(struct engine *e, struct conn *c, uint32_t mask)
{
    struct epoll_event ev = {.events = mask, .data.ptr = c};

    if (c->ev_mask == mask) {
        return;
    }
    /* cannot fail for a socket we own and an epoll set we created, short of ENOMEM */
    BUG_ON(epoll_ctl(e->ep, c->ev_mask ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev) == -1 &&
           errno != ENOMEM);
    c->ev_mask = mask;
}

static void watch_closed(struct engine *e, struct conn *c)
{
    if (c->counted_open) {
        c->counted_open = false;
        e->open_now--;
    }
}

/* Closes the socket and drops per-response state; the connection becomes IDLE. */
static void conn_close(struct engine *e, struct conn *c)
{
    watch_closed(e, c);
    if (c->fd >= 0) {
        close(c->fd); /* also leaves the epoll set */
        c->fd = -1;
    }
    c->ev_mask = 0;
    c->state = ST_IDLE;
    free(c->out);
    c->out = NULL;
    c->out_len = c->out_off = 0;
    free(c->prefix);
    c->prefix = NULL;
    c->prefix_len = 0;
    lineframe_fini(&c->lf);
}

static bool measuring(const struct engine *e)
{
    return e->now_ns >= e->warm_ns;
}

/* Next delay of the client-go style backoff: x2 from backoff_ms up to the max, jitter 1.0. */
static int64_t backoff_next_ns(struct engine *e, struct conn *c)
{
    int64_t step = c->backoff_ms ? c->backoff_ms * 2 : e->o->backoff_ms;

    if (step > e->o->backoff_max_ms) {
        step = e->o->backoff_max_ms;
    }
    c->backoff_ms = step;
    return (int64_t)((double)step * NS_PER_MS * (1.0 + rand_unit(e)));
}

static void lister_done(struct engine *e, struct conn *c)
{
    if (c->req == REQ_BENCH) {
        e->lists_in_flight--;
    }
    c->req = REQ_NONE;
}

/* Schedules a watcher's next request <delay_ns> from now (or forgets it when stopping). */
static void watcher_schedule(struct engine *e, struct conn *c, int64_t delay_ns)
{
    if (e->stopping || c->heap_pos != SIZE_MAX) {
        return;
    }
    heap_push(e, c, e->now_ns + delay_ns);
}

/* Counts a failure once, closes, and schedules the retry after a backoff. */
static void conn_fail(struct engine *e, struct conn *c, enum client_terr terr)
{
    e->st->transport[terr]++;
    if (c->kind == KIND_WATCHER && c->counted_open && !e->stopping) {
        e->st->reconnects++;
    }
    conn_close(e, c);
    if (c->kind == KIND_LISTER) {
        lister_done(e, c);
        return;
    }
    watcher_schedule(e, c, backoff_next_ns(e, c));
}

/* ---- requests -------------------------------------------------------------------------- */

/* Appends "?k=v" or "&k=v" style query parts. */
static void sb_query(struct sbuf *b, bool *first, const char *part)
{
    if (!part || !*part) {
        return;
    }
    sbuf_printf(b, "%c%s", *first ? '?' : '&', part);
    *first = false;
}

/* Writes the request head for <c>'s next request into <buf>. Returns its length or 0. */
static size_t build_request(struct engine *e, struct conn *c, char *buf, size_t cap)
{
    const struct client_opts *o = e->o;
    struct sbuf b;
    bool first = true;
    char part[CLIENT_RV_MAX + 64];

    sbuf_init_fixed(&b, buf, cap);
    sbuf_printf(&b, "GET %s", o->path);
    switch ((enum req_kind)c->req) {
    case REQ_LIST:
        sb_query(&b, &first, "limit=500&resourceVersion=0");
        break;
    case REQ_WATCH:
        sb_query(&b, &first, "allowWatchBookmarks=true");
        if (c->watchlist_req) {
            sb_query(&b, &first, "resourceVersionMatch=NotOlderThan&sendInitialEvents=true");
        } else {
            snprintf(part, sizeof(part), "resourceVersion=%s", c->rv);
            sb_query(&b, &first, part);
        }
        snprintf(part, sizeof(part), "timeoutSeconds=%d",
                 (int)(MIN_WATCH_TIMEOUT_S * (1.0 + rand_unit(e))));
        sb_query(&b, &first, part);
        sb_query(&b, &first, "watch=true");
        break;
    case REQ_BENCH:
        sb_query(&b, &first, o->list_query);
        break;
    case REQ_NONE:
        return 0;
    }
    sb_query(&b, &first, o->selectors);
    sbuf_printf(&b,
                " HTTP/1.1\r\nHost: %s\r\nUser-Agent: kwp-load/1\r\nAccept: application/json\r\n",
                o->host_header);
    if (o->token && *o->token) {
        sbuf_printf(&b, "Authorization: Bearer %s\r\n", o->token);
    }
    sbuf_printf(&b, "\r\n");
    return sbuf_error(&b) != 0 ? 0 : b.len; /* a head that does not fit is not sent */
}

/* Prepares response parsing after the request is fully written. */
static void expect_response(struct engine *e, struct conn *c)
{
    c->state = ST_HEAD;
    c->status = 0;
    c->head_lines = 0;
    c->head_done = false;
    c->got_bytes = false;
    c->keepalive = true;
    c->is_chunked = false;
    c->has_length = false;
    c->content_left = 0;
    lineframe_fini(&c->lf);
    c->lf.max = CLIENT_HEAD_LINE_MAX;
    conn_epoll(e, c, EPOLLIN);
}

static void conn_start(struct engine *e, struct conn *c);

/* A kept-alive socket failed before any byte of the answer: the server had closed it. Go's
 * transport retries such a request on a new connection, uncounted, and so do we. */
static void conn_retry_fresh(struct engine *e, struct conn *c)
{
    conn_close(e, c);
    conn_start(e, c);
}

/* Writes what is left of the request. */
static void conn_flush(struct engine *e, struct conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n == -1) {
            int err = errno;
            if (err == EAGAIN || err == EINTR) {
                c->state = ST_SENDING;
                conn_epoll(e, c, EPOLLOUT);
                return;
            }
            if (c->reused) {
                conn_retry_fresh(e, c);
            } else {
                conn_fail(e, c, CLIENT_TERR_RESET);
            }
            return;
        }
        c->out_off += (size_t)n;
    }
    free(c->out);
    c->out = NULL;
    c->out_len = c->out_off = 0;
    expect_response(e, c);
}

static void conn_send(struct engine *e, struct conn *c)
{
    char buf[CLIENT_REQ_MAX];
    size_t len = build_request(e, c, buf, sizeof(buf));

    if (len == 0) { /* checked at setup: a request always fits; keep the loop bounded anyway */
        conn_fail(e, c, CLIENT_TERR_PROTOCOL);
        return;
    }
    if (c->req == REQ_WATCH) {
        e->st->watch_requests++;
    }
    c->out = xmalloc(len);
    memcpy(c->out, buf, len);
    c->out_len = len;
    c->out_off = 0;
    conn_flush(e, c);
}

static int conn_open(struct engine *e, struct conn *c)
{
    const struct client_opts *o = e->o;
    int one = 1;
    int fd, err;

    fd = socket(o->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd == -1) {
        return -errno;
    }
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (o->n_sources > 0) {
        const struct sockaddr_storage *src = &o->sources[c->idx % o->n_sources];
        socklen_t len =
            src->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
#ifdef IP_BIND_ADDRESS_NO_PORT
        /* pick the port at connect(), per destination: more than 28k sockets per source */
        (void)setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
#endif
        if (bind(fd, (const struct sockaddr *)src, len) == -1) {
            err = errno;
            close(fd);
            return -err;
        }
    }
    if (connect(fd, (const struct sockaddr *)&o->addr, o->addr_len) == -1 && errno != EINPROGRESS) {
        err = errno;
        close(fd);
        return -err;
    }
    c->fd = fd;
    c->ev_mask = 0;
    c->state = ST_CONNECTING;
    conn_epoll(e, c, EPOLLOUT);
    return 0;
}

/* Starts <c>'s next request: on its kept-alive socket, or on a new connection. */
static void conn_start(struct engine *e, struct conn *c)
{
    if (c->kind == KIND_WATCHER) {
        if (c->need_list && e->o->initial == CLIENT_INITIAL_WATCHLIST) {
            c->need_list = false; /* a watch-list is the list: sendInitialEvents from "" */
            c->rv[0] = '\0';
        }
        if (c->need_list) {
            c->req = REQ_LIST;
        } else {
            c->req = REQ_WATCH;
            c->watchlist_req = e->o->initial == CLIENT_INITIAL_WATCHLIST && c->rv[0] == '\0';
        }
    } else {
        c->req = REQ_BENCH;
        c->started_ns = e->now_ns;
        c->resp_bytes = 0;
    }
    if (c->fd >= 0) {
        c->reused = true;
        conn_send(e, c);
        return;
    }
    c->reused = false;
    if (conn_open(e, c) != 0) {
        conn_fail(e, c, CLIENT_TERR_CONNECT);
    }
}

/* ---- responses ------------------------------------------------------------------------- */

static bool header_is(const char *line, size_t len, const char *name, const char **value,
                      size_t *vlen)
{
    size_t n = strlen(name);

    if (len <= n || line[n] != ':' || strncasecmp(line, name, n) != 0) {
        return false;
    }
    line += n + 1;
    len -= n + 1;
    while (len > 0 && (*line == ' ' || *line == '\t')) {
        line++;
        len--;
    }
    while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\t')) {
        len--;
    }
    *value = line;
    *vlen = len;
    return true;
}

static bool token_has(const char *v, size_t vlen, const char *tok)
{
    size_t n = strlen(tok);

    for (size_t i = 0; i + n <= vlen; i++) {
        if (strncasecmp(v + i, tok, n) == 0 && (i == 0 || v[i - 1] == ',' || v[i - 1] == ' ') &&
            (i + n == vlen || v[i + n] == ',' || v[i + n] == ' ' || v[i + n] == ';')) {
            return true;
        }
    }
    return false;
}

/* One line of the response head. Returns 1 after the empty line that ends it. */
static int head_line(void *ctx, char *line, size_t len)
{
    struct conn *c = ((struct line_ctx *)ctx)->c;
    const char *v;
    size_t vlen;

    if (len > 0 && line[len - 1] == '\r') {
        len--;
    }
    if (++c->head_lines > CLIENT_HEAD_LINES_MAX) {
        return -EPROTO;
    }
    if (c->head_lines == 1) {
        /* HTTP/1.x SSS reason */
        if (len < 12 || strncmp(line, "HTTP/1.", 7) != 0 || line[8] != ' ' || line[9] < '1' ||
            line[9] > '5' || line[10] < '0' || line[10] > '9' || line[11] < '0' || line[11] > '9' ||
            (len > 12 && line[12] != ' ')) {
            return -EPROTO;
        }
        c->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
        c->keepalive = line[7] == '1';
        return 0;
    }
    if (len == 0) {
        if (c->status < 200) { /* 1xx interim answers are not expected for a GET */
            return -EPROTO;
        }
        c->head_done = true;
        return 1;
    }
    if (header_is(line, len, "Transfer-Encoding", &v, &vlen)) {
        c->is_chunked = token_has(v, vlen, "chunked");
    } else if (header_is(line, len, "Content-Length", &v, &vlen)) {
        uint64_t n = 0;
        if (vlen == 0 || vlen > 18) {
            return -EPROTO;
        }
        for (size_t i = 0; i < vlen; i++) {
            if (v[i] < '0' || v[i] > '9') {
                return -EPROTO;
            }
            n = n * 10 + (uint64_t)(v[i] - '0');
        }
        c->has_length = true;
        c->content_left = n;
    } else if (header_is(line, len, "Connection", &v, &vlen)) {
        if (token_has(v, vlen, "close")) {
            c->keepalive = false;
        } else if (token_has(v, vlen, "keep-alive")) {
            c->keepalive = true;
        }
    }
    return 0;
}

static void set_rv(struct conn *c, const char *line, size_t off, size_t len)
{
    if (len == 0 || len >= sizeof(c->rv)) {
        return;
    }
    memcpy(c->rv, line + off, len);
    c->rv[len] = '\0';
}

static void record_latency(struct engine *e, int64_t stamp_ns)
{
    int64_t lat = e->wall_ns - stamp_ns;

    if (lat < 0) { /* clocks of two hosts, or a stamp from the future: count as 0 */
        lat = 0;
    }
    histogram_record(e->st->latency, (uint64_t)lat);
    histogram_record(e->lat_sec, (uint64_t)lat);
}

/* One watch line. Returns 1 (with c->abort) when the stream must be dropped after it. */
static int event_line(void *ctx, char *line, size_t len)
{
    struct engine *e = ((struct line_ctx *)ctx)->e;
    struct conn *c = ((struct line_ctx *)ctx)->c;
    struct client_stats *st = e->st;
    struct evscan_event ev;

    if (len == 0 || (len == 1 && line[0] == '\r')) {
        return 0; /* a "\n" heartbeat */
    }
    if (evscan_event(line, len, &ev) != 0) {
        return -EPROTO;
    }
    switch (ev.type) {
    case EVSCAN_ADDED:
    case EVSCAN_MODIFIED:
    case EVSCAN_DELETED:
        set_rv(c, line, ev.rv_off, ev.rv_len);
        if (c->in_initial) {
            st->initial_events++;
            return 0;
        }
        if (!measuring(e)) {
            st->warmup_events++;
            return 0;
        }
        st->events++;
        st->event_bytes += len + 1;
        st->per_watcher[c->idx]++;
        if (ev.type == EVSCAN_DELETED) {
            st->deleted++;
        } else if (ev.stamp_ns >= 0) {
            record_latency(e, ev.stamp_ns);
        } else {
            st->unstamped++;
        }
        return 0;
    case EVSCAN_BOOKMARK:
        set_rv(c, line, ev.rv_off, ev.rv_len);
        st->bookmarks++;
        if (ev.initial_end && c->in_initial) {
            c->in_initial = false;
            st->lists++; /* a watch-list's initial state is complete */
            if (c->relisting) {
                st->relists++;
                c->relisting = false;
            }
        }
        return 0;
    case EVSCAN_ERROR:
        st->error_events[status_slot(ev.code)]++;
        if (ev.code == 410) {
            st->gone++;
            c->need_list = true;
            c->relisting = true;
            c->rv[0] = '\0';
        }
        c->abort = true;
        return 1;
    }
    return -EPROTO;
}

/* The watcher's next step after its response ended well: at once, on the same socket if the
 * server allows it. */
static void watcher_next(struct engine *e, struct conn *c)
{
    if (e->stopping) {
        conn_close(e, c);
        return;
    }
    if (c->keepalive) {
        c->state = ST_IDLE;
        conn_start(e, c);
        return;
    }
    conn_close(e, c);
    watcher_schedule(e, c, 0);
}

static void response_done(struct engine *e, struct conn *c)
{
    struct client_stats *st = e->st;
    size_t off, len;

    switch ((enum req_kind)c->req) {
    case REQ_WATCH:
        /* the server ended the stream (timeoutSeconds, shutdown): re-watch from the rv */
        watch_closed(e, c);
        if (!e->stopping) {
            st->reconnects++;
        }
        if (c->in_initial) { /* cut before the initial events were complete: start over */
            c->rv[0] = '\0';
            c->in_initial = false;
        }
        watcher_next(e, c);
        return;
    case REQ_LIST:
        if (!c->prefix || evscan_list_rv(c->prefix, c->prefix_len, &off, &len) != 0 || len == 0 ||
            len >= sizeof(c->rv)) {
            conn_fail(e, c, CLIENT_TERR_PROTOCOL);
            return;
        }
        set_rv(c, c->prefix, off, len);
        free(c->prefix);
        c->prefix = NULL;
        c->prefix_len = 0;
        st->lists++;
        if (c->relisting) {
            st->relists++;
            c->relisting = false;
        }
        c->need_list = false;
        watcher_next(e, c);
        return;
    case REQ_BENCH:
        histogram_record(st->list_latency, (uint64_t)(clock_ns(CLOCK_MONOTONIC) - c->started_ns));
        st->list_ok++;
        st->list_bytes += c->resp_bytes;
        lister_done(e, c);
        if (c->keepalive && !e->stopping) {
            c->state = ST_IDLE; /* the socket waits for the next scheduled LIST */
        } else {
            conn_close(e, c);
        }
        return;
    case REQ_NONE:
        break;
    }
    conn_close(e, c);
}

/* The head is complete. Returns 0 when the body follows, -1 when the connection was handed
 * on (closed, retried or finished). */
static int on_head(struct engine *e, struct conn *c)
{
    struct client_stats *st = e->st;

    if (c->status != 200) {
        st->http_status[status_slot(c->status)]++;
        if (c->status == 410) {
            st->gone++;
            if (c->kind == KIND_WATCHER) {
                c->need_list = true;
                c->relisting = true;
                c->rv[0] = '\0';
            }
        }
        /* the body (a Status) is not needed: drop the connection rather than read it */
        conn_close(e, c);
        if (c->kind == KIND_LISTER) {
            lister_done(e, c);
        } else {
            watcher_schedule(e, c, backoff_next_ns(e, c));
        }
        return -1;
    }
    c->backoff_ms = 0;
    c->state = ST_BODY;
    if (c->is_chunked) {
        chunked_init(&c->ck);
        c->has_length = false;
    } else if (!c->has_length) {
        c->keepalive = false; /* the body ends at EOF */
    }
    if (c->req == REQ_WATCH) {
        if (!c->opened_once) {
            c->opened_once = true;
            st->watchers_opened++;
            if (e->o->warmup_after_open && st->watchers_opened == (uint64_t)e->o->watchers &&
                e->now_ns + e->o->warmup_ms * NS_PER_MS < e->warm_ns) {
                e->warm_ns = e->now_ns + e->o->warmup_ms * NS_PER_MS; /* later than now */
            }
        }
        c->counted_open = true;
        e->open_now++;
        if (e->open_now > st->watches_open_max) {
            st->watches_open_max = e->open_now;
        }
        c->in_initial = c->watchlist_req;
        c->lf.max = e->o->max_line;
    }
    if (c->has_length && c->content_left == 0) {
        response_done(e, c);
        return -1;
    }
    return 0;
}

/* Payload bytes of a 200 response. */
static void body_payload(struct engine *e, struct conn *c, char *p, size_t n)
{
    struct line_ctx lc = {e, c};
    ssize_t r;

    switch ((enum req_kind)c->req) {
    case REQ_WATCH:
        r = lineframe_feed(&c->lf, p, n, event_line, &lc);
        if (c->abort) {
            c->abort = false;
            if (!e->stopping) {
                e->st->reconnects++;
            }
            conn_close(e, c);
            watcher_schedule(e, c, backoff_next_ns(e, c));
        } else if (r < 0) {
            conn_fail(e, c, r == -E2BIG ? CLIENT_TERR_LINE_TOO_LONG : CLIENT_TERR_BAD_EVENT);
        }
        return;
    case REQ_LIST:
        if (c->prefix_len < CLIENT_LIST_PREFIX) {
            size_t take = CLIENT_LIST_PREFIX - c->prefix_len;
            if (take > n) {
                take = n;
            }
            if (!c->prefix) {
                c->prefix = xmalloc(CLIENT_LIST_PREFIX);
            }
            memcpy(c->prefix + c->prefix_len, p, take);
            c->prefix_len += take;
        }
        return;
    case REQ_BENCH:
        c->resp_bytes += n;
        return;
    case REQ_NONE:
        return;
    }
}

/* One run of chunked payload, where it lies in the read buffer; stops once the body is over. */
static int chunk_run(void *arg, char *p, size_t n)
{
    struct line_ctx *lc = arg;

    body_payload(lc->e, lc->c, p, n);
    return lc->c->state != ST_BODY;
}

static void chunked_input(struct engine *e, struct conn *c, char *p, size_t n)
{
    struct line_ctx lc = {e, c};
    size_t used = n;

    if (chunked_each(&c->ck, p, n, &used, chunk_run, &lc) < 0) {
        conn_fail(e, c, CLIENT_TERR_PROTOCOL);
        return;
    }
    if (c->state != ST_BODY) {
        return; /* closed or handed on by an event */
    }
    if (used < n) {
        c->keepalive = false; /* bytes nobody asked for: do not trust this socket again */
    }
    if (c->ck.done) {
        response_done(e, c);
    }
}

static void body_input(struct engine *e, struct conn *c, char *p, size_t n)
{
    size_t used = n, payload = n;
    bool complete = false;

    if (c->is_chunked) {
        chunked_input(e, c, p, n);
        return;
    }
    if (c->has_length) {
        if ((uint64_t)payload > c->content_left) {
            payload = (size_t)c->content_left;
        }
        used = payload;
        c->content_left -= payload;
        complete = c->content_left == 0;
    }
    if (used < n) {
        c->keepalive = false; /* bytes nobody asked for: do not trust this socket again */
    }
    if (payload > 0) {
        body_payload(e, c, p, payload);
        if (c->state != ST_BODY) {
            return; /* closed or handed on by an event */
        }
    }
    if (complete) {
        response_done(e, c);
    }
}

static void conn_input(struct engine *e, struct conn *c, char *p, size_t n)
{
    if (c->state == ST_HEAD) {
        struct line_ctx lc = {e, c};
        ssize_t r = lineframe_feed(&c->lf, p, n, head_line, &lc);
        if (r < 0) {
            conn_fail(e, c, CLIENT_TERR_PROTOCOL);
            return;
        }
        if (!c->head_done) {
            return;
        }
        p += r;
        n -= (size_t)r;
        if (on_head(e, c) != 0) {
            return;
        }
    }
    if (c->state == ST_BODY && n > 0) {
        body_input(e, c, p, n);
    }
}

static void conn_eof(struct engine *e, struct conn *c)
{
    if (c->state == ST_BODY && !c->is_chunked && !c->has_length) {
        c->keepalive = false;
        response_done(e, c); /* a body delimited by the end of the connection */
    } else if (c->state == ST_IDLE) {
        conn_close(e, c); /* the server closed an idle kept-alive socket */
    } else if (c->state == ST_HEAD && c->reused && !c->got_bytes) {
        conn_retry_fresh(e, c);
    } else {
        conn_fail(e, c, CLIENT_TERR_EOF);
    }
}

static void conn_readable(struct engine *e, struct conn *c)
{
    ssize_t n = read(c->fd, e->rbuf, CLIENT_RBUF);

    if (n == -1) {
        int err = errno;
        if (err == EAGAIN || err == EINTR) {
            return;
        }
        if (c->state == ST_IDLE) {
            conn_close(e, c);
        } else if (c->state == ST_HEAD && c->reused && !c->got_bytes) {
            conn_retry_fresh(e, c);
        } else {
            conn_fail(e, c, CLIENT_TERR_RESET);
        }
        return;
    }
    if (n == 0) {
        conn_eof(e, c);
        return;
    }
    if (c->state == ST_IDLE) { /* nothing was asked on this socket */
        conn_close(e, c);
        return;
    }
    c->got_bytes = true;
    if (c->kind == KIND_WATCHER && measuring(e)) {
        e->st->bytes += (uint64_t)n;
    }
    e->wall_ns = clock_ns(CLOCK_REALTIME);
    conn_input(e, c, e->rbuf, (size_t)n);
}

static void conn_event(struct engine *e, struct conn *c, uint32_t events)
{
    int err = 0;
    socklen_t len = sizeof(err);

    switch ((enum conn_state)c->state) {
    case ST_CONNECTING:
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1 || err != 0) {
            conn_fail(e, c, CLIENT_TERR_CONNECT);
            return;
        }
        conn_send(e, c);
        return;
    case ST_SENDING:
        conn_flush(e, c);
        return;
    case ST_HEAD:
    case ST_BODY:
    case ST_IDLE:
        if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
            conn_readable(e, c);
        }
        return;
    }
}

/* ---- schedule and sampling --------------------------------------------------------------- */

static void ramp(struct engine *e)
{
    size_t n = 0;

    while (e->started < e->n_watchers && n < START_BATCH) {
        if (e->o->ramp_per_s > 0) {
            int64_t due = e->t0_ns + (int64_t)((double)e->started * NS_PER_S / e->o->ramp_per_s);
            if (due > e->now_ns) {
                break;
            }
        }
        conn_start(e, &e->watchers[e->started++]);
        n++;
    }
}

static void fire_timers(struct engine *e)
{
    for (size_t n = 0; n < TIMER_BATCH && e->heap_len > 0 && e->heap[0]->due_ns <= e->now_ns; n++) {
        conn_start(e, heap_pop(e));
    }
}

static void schedule_lists(struct engine *e)
{
    const struct client_opts *o = e->o;
    int64_t period;

    if (o->lists_per_s <= 0 || e->n_listers == 0) {
        return;
    }
    period = (int64_t)(NS_PER_S / o->lists_per_s);
    if (period < 1) {
        period = 1;
    }
    /* more than a second behind (a stall): count the lost slots, do not burst */
    if (e->now_ns - e->next_list_ns > NS_PER_S) {
        int64_t lost = (e->now_ns - e->next_list_ns) / period;
        e->st->list_missed += (uint64_t)lost;
        e->next_list_ns += lost * period;
    }
    while (e->next_list_ns <= e->now_ns) {
        struct conn *slot = NULL;
        for (size_t i = 0; i < e->n_listers; i++) {
            if (e->listers[i].req == REQ_NONE) {
                slot = &e->listers[i];
                break;
            }
        }
        e->next_list_ns += period;
        if (!slot) {
            e->st->list_missed++;
            continue;
        }
        e->st->list_requests++;
        e->lists_in_flight++;
        conn_start(e, slot);
    }
}

static void totals_now(const struct engine *e, struct totals *t)
{
    const struct client_stats *st = e->st;

    t->events = st->events;
    t->bytes = st->bytes;
    t->lists = st->list_ok;
    t->list_bytes = st->list_bytes;
    t->errors = client_stats_errors(st);
    t->gone = st->gone;
    t->relists = st->relists;
    t->reconnects = st->reconnects;
}

/* Reads CPU and RSS of this process and the --pid ones into <s>, and the run's totals. */
static void sample_procs(struct engine *e, struct client_sample *s, double dt_s, bool first)
{
    struct client_stats *st = e->st;

    for (size_t i = 0; i < st->n_procs; i++) {
        struct client_proc *p = &st->procs[i];
        struct procstat ps;
        s->cpu_pct[i] = -1;
        s->rss_kb[i] = 0;
        if (procstat_read(p->pid, &ps) != 0) {
            continue;
        }
        if (!first && p->seen && dt_s > 0) {
            s->cpu_pct[i] = 100.0 * (ps.cpu_s - e->prev.cpu_s[i]) / dt_s;
            p->cpu_s += ps.cpu_s - e->prev.cpu_s[i];
        }
        e->prev.cpu_s[i] = ps.cpu_s;
        p->seen = true;
        s->rss_kb[i] = ps.rss_kb;
        if (ps.rss_kb > p->rss_max_kb) {
            p->rss_max_kb = ps.rss_kb;
        }
    }
}

static void tick(struct engine *e)
{
    struct client_stats *st = e->st;
    struct client_sample s;
    struct totals t;
    double dt_s = (double)(e->now_ns - e->prev_tick_ns) / NS_PER_S;

    memset(&s, 0, sizeof(s));
    s.t_s = (double)(e->now_ns - e->t0_ns) / NS_PER_S;
    s.watches_open = e->open_now;
    totals_now(e, &t);
    s.events = t.events - e->prev.events;
    s.bytes = t.bytes - e->prev.bytes;
    s.lists = t.lists - e->prev.lists;
    s.list_bytes = t.list_bytes - e->prev.list_bytes;
    s.errors = t.errors - e->prev.errors;
    s.gone = t.gone - e->prev.gone;
    s.relists = t.relists - e->prev.relists;
    s.reconnects = t.reconnects - e->prev.reconnects;
    s.lat_count = histogram_count(e->lat_sec);
    s.p50_ns = histogram_percentile(e->lat_sec, 50);
    s.p99_ns = histogram_percentile(e->lat_sec, 99);
    s.max_ns = histogram_max(e->lat_sec);
    histogram_reset(e->lat_sec);
    sample_procs(e, &s, dt_s, false);
    memcpy(t.cpu_s, e->prev.cpu_s, sizeof(t.cpu_s));
    e->prev = t;
    e->prev_tick_ns = e->now_ns;

    st->series = xrealloc(st->series, (st->n_series + 1) * sizeof(*st->series));
    st->series[st->n_series++] = s;
    if (e->o->progress) {
        e->o->progress(e->o->progress_ctx, &s, st);
    }
}

/* Counts where each watcher is (the stats' end_* fields). */
static void count_states(struct engine *e)
{
    struct client_stats *st = e->st;

    for (size_t i = 0; i < e->n_watchers; i++) {
        const struct conn *c = &e->watchers[i];
        switch ((enum conn_state)c->state) {
        case ST_IDLE:
            st->end_waiting++;
            break;
        case ST_CONNECTING:
        case ST_SENDING:
            st->end_connecting++;
            break;
        case ST_HEAD:
        case ST_BODY:
            if (c->counted_open) {
                st->end_watching++;
            } else if (c->req == REQ_LIST && c->state == ST_BODY) {
                st->end_list_body++;
            } else if (c->req == REQ_LIST) {
                st->end_list_pending++;
            } else {
                st->end_watch_pending++;
            }
            break;
        }
    }
}

/* The duration ran out (or *stop was set): end every watch, let LISTs in flight drain. */
static void begin_stop(struct engine *e)
{
    e->stopping = true;
    e->stop_ns = e->now_ns;
    e->drain_end_ns = e->now_ns + e->o->drain_ms * NS_PER_MS;
    e->st->watches_open_end = e->open_now;
    count_states(e);
    for (size_t i = 0; i < e->n_watchers; i++) {
        conn_close(e, &e->watchers[i]);
    }
    for (size_t i = 0; i < e->n_listers; i++) {
        if (e->listers[i].req == REQ_NONE) {
            conn_close(e, &e->listers[i]);
        }
    }
    e->heap_len = 0;
    for (size_t i = 0; i < e->n_watchers; i++) {
        e->watchers[i].heap_pos = SIZE_MAX;
    }
}

static int poll_timeout_ms(const struct engine *e)
{
    int64_t next = e->next_tick_ns;

    if (!e->stopping) {
        if (e->end_ns < next) {
            next = e->end_ns;
        }
        if (e->heap_len > 0 && e->heap[0]->due_ns < next) {
            next = e->heap[0]->due_ns;
        }
        if (e->started < e->n_watchers) {
            int64_t due =
                e->o->ramp_per_s > 0
                    ? e->t0_ns + (int64_t)((double)e->started * NS_PER_S / e->o->ramp_per_s)
                    : e->now_ns;
            if (due < next) {
                next = due;
            }
        }
        if (e->o->lists_per_s > 0 && e->next_list_ns < next) {
            next = e->next_list_ns;
        }
    } else if (e->drain_end_ns < next) {
        next = e->drain_end_ns;
    }
    if (next <= e->now_ns) {
        return 0;
    }
    return (int)((next - e->now_ns + NS_PER_MS - 1) / NS_PER_MS);
}

static void conn_init(struct conn *c, enum conn_kind kind, uint32_t idx,
                      const struct client_opts *o)
{
    memset(c, 0, sizeof(*c));
    c->fd = -1;
    c->idx = idx;
    c->kind = (uint8_t)kind;
    c->heap_pos = SIZE_MAX;
    lineframe_init(&c->lf, o->max_line);
    if (kind == KIND_WATCHER) {
        if (o->start_rv && *o->start_rv && strlen(o->start_rv) < sizeof(c->rv)) {
            memcpy(c->rv, o->start_rv, strlen(o->start_rv) + 1);
        }
        /* LIST first unless told where to watch from (watch-list mode: conn_start turns the
         * LIST into a sendInitialEvents watch) */
        c->need_list = c->rv[0] == '\0';
    }
}

static void engine_loop(struct engine *e)
{
    struct epoll_event evs[EPOLL_BATCH];

    for (;;) {
        int n, timeout;

        e->now_ns = clock_ns(CLOCK_MONOTONIC);
        if (e->now_ns >= e->next_tick_ns) { /* before a stop, so the last second sees it */
            tick(e);
            e->next_tick_ns += NS_PER_S;
            if (e->next_tick_ns <= e->now_ns) { /* stalled for seconds: do not replay ticks */
                e->next_tick_ns = e->now_ns + NS_PER_S;
            }
        }
        if (!e->stopping && (e->now_ns >= e->end_ns || (e->o->stop && *e->o->stop))) {
            e->st->interrupted = e->now_ns < e->end_ns;
            begin_stop(e);
        }
        if (e->stopping && (e->lists_in_flight == 0 || e->now_ns >= e->drain_end_ns ||
                            (e->o->stop && *e->o->stop))) {
            break;
        }
        if (!e->stopping) {
            ramp(e);
            fire_timers(e);
            schedule_lists(e);
        }
        timeout = poll_timeout_ms(e);
        n = epoll_wait(e->ep, evs, EPOLL_BATCH, timeout);
        if (n == -1) {
            if (errno == EINTR) {
                continue; /* a signal: the loop head checks *stop */
            }
            if (!e->stopping) {
                begin_stop(e);
            }
            break;
        }
        e->now_ns = clock_ns(CLOCK_MONOTONIC);
        for (int i = 0; i < n; i++) {
            conn_event(e, evs[i].data.ptr, evs[i].events);
        }
    }
}

int client_run(const struct client_opts *o, struct client_stats *st)
{
    struct engine e;

    memset(st, 0, sizeof(*st));
    st->latency = histogram_new();
    st->list_latency = histogram_new();
    st->n_watchers = (size_t)(o->watchers > 0 ? o->watchers : 0);
    st->per_watcher = xcalloc(st->n_watchers ? st->n_watchers : 1, sizeof(uint64_t));
    st->procs[0].pid = (int)getpid();
    st->n_procs = 1;
    for (size_t i = 0; i < o->n_pids && i < CLIENT_MAX_PIDS; i++) {
        st->procs[st->n_procs++].pid = o->pids[i];
    }

    memset(&e, 0, sizeof(e));
    e.o = o;
    e.st = st;
    e.ep = epoll_create1(EPOLL_CLOEXEC);
    if (e.ep == -1) {
        return -errno;
    }
    e.rbuf = xmalloc(CLIENT_RBUF);
    e.lat_sec = histogram_new();
    e.n_watchers = st->n_watchers;
    e.watchers = xcalloc(e.n_watchers ? e.n_watchers : 1, sizeof(struct conn));
    for (size_t i = 0; i < e.n_watchers; i++) {
        conn_init(&e.watchers[i], KIND_WATCHER, (uint32_t)i, o);
    }
    e.n_listers = o->lists_per_s > 0 ? (size_t)o->list_concurrency : 0;
    e.listers = xcalloc(e.n_listers ? e.n_listers : 1, sizeof(struct conn));
    for (size_t i = 0; i < e.n_listers; i++) {
        conn_init(&e.listers[i], KIND_LISTER, (uint32_t)i, o);
    }
    e.rng = (uint64_t)clock_ns(CLOCK_REALTIME) ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ULL;
    if (e.rng == 0) {
        e.rng = 1;
    }

    e.now_ns = clock_ns(CLOCK_MONOTONIC);
    e.t0_ns = e.now_ns;
    e.end_ns = e.t0_ns + o->duration_ms * NS_PER_MS;
    e.warm_ns = e.t0_ns + o->warmup_ms * NS_PER_MS;
    if (o->warmup_after_open && o->watchers > 0 && o->duration_ms / 2 > o->warmup_ms) {
        e.warm_ns = e.t0_ns + o->duration_ms / 2 * NS_PER_MS; /* until every watcher is open */
    }
    e.next_tick_ns = e.t0_ns + NS_PER_S;
    e.next_list_ns = e.t0_ns;
    e.prev_tick_ns = e.t0_ns;
    {
        struct client_sample first;
        sample_procs(&e, &first, 0, true); /* CPU baselines */
    }

    engine_loop(&e);

    /* the final partial second, when it holds anything */
    e.now_ns = clock_ns(CLOCK_MONOTONIC);
    if (e.now_ns - e.prev_tick_ns > 100 * NS_PER_MS) {
        tick(&e);
    }
    st->elapsed_s = (double)(e.stop_ns - e.t0_ns) / NS_PER_S;
    st->measured_s = e.stop_ns > e.warm_ns ? (double)(e.stop_ns - e.warm_ns) / NS_PER_S : 0;
    st->measured_from_s = (double)(e.warm_ns - e.t0_ns) / NS_PER_S;

    for (size_t i = 0; i < e.n_watchers; i++) {
        conn_close(&e, &e.watchers[i]);
    }
    for (size_t i = 0; i < e.n_listers; i++) {
        conn_close(&e, &e.listers[i]);
    }
    free(e.watchers);
    free(e.listers);
    free(e.heap);
    free(e.rbuf);
    histogram_free(e.lat_sec);
    close(e.ep);
    return 0;
}
