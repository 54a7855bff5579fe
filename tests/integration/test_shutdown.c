/*
 * test_shutdown.c - rolling updates without relists (issue 13): what `kwp proxy` does on
 * SIGTERM. /readyz turns 503 at once while everything is still served for --shutdown-delay;
 * then every cached watch gets what was appended before, a last BOOKMARK when it allows
 * bookmarks, and a clean end of its chunked stream; the process exits 0 soon after. The
 * informer-like client that lists and watches replica A, is cut off by A's SIGTERM, and
 * re-watches replica B from the bookmark's resourceVersion gets no 410 and neither loses nor
 * repeats an event.
 *
 * One `kwp sim --churn` writes pods all along; a watch on the simulator itself, opened at the
 * client's list RV, is the reference event log the client's events are compared with (type,
 * namespace/name, RV, in order). Processes on 127.0.0.1:0; every wait is a bounded poll.
 * proc_spawn (and CTest) set KWP_SHUTDOWN_DELAY=0 for every proxy; the proxies here pass
 * --shutdown-delay themselves (flags win over the environment).
 */
#define _GNU_SOURCE /* strcasestr */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "tests/support/api.h"
#include "tests/support/http.h"
#include "tests/support/json.h"
#include "tests/support/nap.h"
#include "tests/support/proc.h"
#include "tests/support/sock.h"
#include "tests/support/srv.h"

#define READY_MS 30000L
#define POLL_MS 10L
/* --shutdown-delay of the replica that is terminated (the checks made during it need a margin
 * on a loaded machine) */
#define DELAY_MS 2000L
#define EXIT_MS 2000L /* it exits within the delay plus this */
#define MAX_EVENTS 4096

/* ---- fixture ---------------------------------------------------------------------------- */

struct fixture {
    struct srv sim, a, b;
    uint64_t list_rv;  /* the client's LIST from A */
    struct watch *ref; /* the simulator's own events from list_rv */
};

/* The simulator writing pods continuously (<sim_args> added to its flags, may be NULL),
 * replica A terminating with <a_delay>, replica B, all ready; then the client's LIST from A
 * and the reference watch from its RV. */
static void fixture_up(struct fixture *f, const char *a_delay, const char *const *sim_args)
{
    struct http_resp r;
    cJSON *list;
    char path[256];

    memset(f, 0, sizeof(*f));
    srv_spawn(&f->sim, "sim", ARGS("--objects", "20", "--churn", "40"), sim_args);
    srv_spawn(&f->a, "proxy",
              ARGS("--upstream", f->sim.url, "--resources", "pods", "--shutdown-delay", a_delay),
              NULL);
    srv_spawn(&f->b, "proxy",
              ARGS("--upstream", f->sim.url, "--resources", "pods", "--shutdown-delay", "0"), NULL);
    srv_wait_ready(&f->a, READY_MS);
    srv_wait_ready(&f->b, READY_MS);
    api_req(f->a.url, "GET", "/api/v1/pods?resourceVersion=0", NULL, NULL, NULL, &r);
    cr_assert_eq(r.code, 200, "LIST from A: HTTP %ld %s", r.code, r.body);
    list = json_body(&r);
    f->list_rv = json_rv(list);
    cJSON_Delete(list);
    http_resp_free(&r);
    snprintf(path, sizeof(path), "/api/v1/pods?watch=1&resourceVersion=%" PRIu64, f->list_rv);
    f->ref = api_watch(f->sim.url, path, 200);
}

static void fixture_down(struct fixture *f)
{
    watch_close(f->ref);
    srv_stop(&f->a, "kwp proxy A");
    srv_stop(&f->b, "kwp proxy B");
    srv_stop(&f->sim, "kwp sim");
}

/* The client's watch on <base> from <rv>, with or without allowWatchBookmarks. */
static struct watch *client_watch(const char *base, uint64_t rv, bool bookmarks)
{
    char path[256];

    snprintf(path, sizeof(path), "/api/v1/pods?watch=1&resourceVersion=%" PRIu64 "%s", rv,
             bookmarks ? "&allowWatchBookmarks=true" : "");
    return api_watch(base, path, 200);
}

/* GET <base>/readyz within 1 s: its status (0 when nothing answered), its body in <body>. */
static long readyz(const char *base, char *body, size_t cap)
{
    struct http_resp r;
    char url[300];
    long code = 0;

    snprintf(url, sizeof(url), "%s/readyz", base);
    body[0] = '\0';
    if (http_do("GET", url, NULL, NULL, NULL, 1000, &r) == 0) {
        code = r.code;
        snprintf(body, cap, "%s", r.body);
    }
    http_resp_free(&r);
    return code;
}

/* Polls A's /readyz until it answers 503 "not ready: shutting down" (asserted within 500 ms
 * of the signal at <t0>). */
static void expect_not_ready(const struct srv *a, uint64_t t0)
{
    char body[512];
    long code;

    do {
        code = readyz(a->url, body, sizeof(body));
    } while (code != 503 && http_now_ms() < t0 + 500 && (nap(POLL_MS), true));
    cr_assert_eq(code, 503, "/readyz during the shutdown delay: HTTP %ld %s", code, body);
    cr_assert_str_eq(body, "not ready: shutting down\n");
}

/* ---- event logs ----------------------------------------------------------------------------- */

/* A watch's events as "TYPE ns/name rv", bookmarks apart. */
struct evlog {
    size_t n;
    char e[MAX_EVENTS][128];
    uint64_t rv[MAX_EVENTS];
};

/* Appends the events of lines [<from>, <to>) of <w> with rv <= <upto> to <l>; returns how
 * many BOOKMARK lines there were and the RV of the last one in *<bm_rv>. Asserts there is
 * no ERROR event. */
static size_t evlog_add(struct evlog *l, struct watch *w, size_t from, size_t to, uint64_t upto,
                        uint64_t *bm_rv)
{
    size_t bookmarks = 0;

    for (size_t i = from; i < to; i++) {
        const char *line = watch_line(w, i, NULL);
        struct api_ev e;

        cr_assert_not_null(line, "line %zu", i);
        api_ev_parse(line, &e);
        cr_assert_str_neq(e.type, "ERROR", "line %zu: %.300s", i, line);
        if (strcmp(e.type, "BOOKMARK") == 0) {
            bookmarks++;
            *bm_rv = e.rv;
        } else if (e.rv <= upto) {
            cr_assert_lt(l->n, (size_t)MAX_EVENTS);
            snprintf(l->e[l->n], sizeof(l->e[0]), "%s %s/%s %" PRIu64, e.type,
                     json_txt(e.obj, "metadata.namespace"), e.name, e.rv);
            l->rv[l->n++] = e.rv;
        }
        api_ev_free(&e);
    }
    return bookmarks;
}

/* Waits until the reference watch has an event with rv >= <rv>; returns its line count. */
static size_t ref_reach(struct watch *ref, uint64_t rv)
{
    uint64_t end = http_now_ms() + 15000;
    size_t n = 0;

    for (;;) {
        n = watch_line_count(ref);
        if (n > 0) {
            struct api_ev e;

            api_ev_parse(watch_line(ref, n - 1, NULL), &e);
            if (e.rv >= rv) {
                api_ev_free(&e);
                return n;
            }
            api_ev_free(&e);
        }
        cr_assert_lt(http_now_ms(), end, "the simulator's watch never reached rv %" PRIu64, rv);
        nap(POLL_MS);
    }
}

/* Asserts <got> is exactly the reference's events up to rv <upto>: none lost, none twice. */
static void expect_same_events(const struct evlog *got, struct watch *ref, uint64_t upto)
{
    static struct evlog want; /* large: not on the stack */
    uint64_t none = 0;

    want.n = 0;
    evlog_add(&want, ref, 0, ref_reach(ref, upto), upto, &none);
    cr_assert_gt(want.n, 0);
    for (size_t i = 0; i < want.n && i < got->n; i++) {
        cr_assert_str_eq(got->e[i], want.e[i], "event %zu of %zu (reference has %zu)", i, got->n,
                         want.n);
    }
    cr_assert_eq(got->n, want.n,
                 "the client saw %zu events up to rv %" PRIu64 ", the simulator %zu", got->n, upto,
                 want.n);
}

/*
 * Terminates A (SIGTERM at *<t0>) while <w> is open on it and checks the delay: /readyz 503
 * at once, and the watch still receives events and is not ended while the delay runs.
 */
static void terminate_and_check_delay(struct fixture *f, struct watch *w, uint64_t *t0)
{
    struct http_resp r;
    size_t n1;
    uint64_t end;

    cr_assert_eq(watch_wait_lines(w, 5, 10000), 0, "no events from A before the signal");
    *t0 = http_now_ms();
    cr_assert_eq(proc_kill(f->a.p, SIGTERM), 0);
    expect_not_ready(&f->a, *t0);
    n1 = watch_line_count(w);
    end = *t0 + DELAY_MS - 150;
    while (watch_line_count(w) <= n1 && http_now_ms() < end) {
        nap(POLL_MS);
    }
    cr_assert_gt(watch_line_count(w), n1, "no event on A's watch during the shutdown delay");
    /* still served: a LIST, and /readyz still failing */
    api_req(f->a.url, "GET", "/api/v1/pods?resourceVersion=0", NULL, NULL, NULL, &r);
    cr_assert_eq(r.code, 200, "LIST from A during the delay: HTTP %ld", r.code);
    http_resp_free(&r);
    expect_not_ready(&f->a, *t0);
    cr_assert_lt(http_now_ms(), *t0 + DELAY_MS - 50, "the checks took longer than the delay");
    cr_assert_not(watch_ended(w, NULL, NULL), "A's watch ended during the shutdown delay");
}

/* Waits for <w> to end cleanly (a terminal chunk, not a reset) at or after <not_before>. */
static void expect_clean_end(struct watch *w, uint64_t not_before)
{
    uint64_t at = 0;
    int crc = -1;

    cr_assert_eq(watch_wait_end(w, DELAY_MS + EXIT_MS + 1000), 0, "A's watch did not end");
    cr_assert(watch_ended(w, &at, &crc));
    cr_assert_eq(crc, 0, "A's watch did not end cleanly (curl error %d)", crc);
    cr_assert_geq(at, not_before, "A's watch ended %" PRIu64 " ms early", not_before - at);
}

/* Waits for A to exit by itself, with status 0, by <deadline>. */
static void expect_exit_0(struct fixture *f, uint64_t deadline)
{
    uint64_t now = http_now_ms();
    int st = proc_wait(f->a.p, now < deadline ? (int)(deadline - now) : 1);

    cr_assert_neq(st, -ETIMEDOUT, "A did not exit in time");
    f->a.p = NULL;
    cr_assert_eq(st, 0, "A exited with status %d", st);
}

/* Asserts the last line of the ended <w> is a BOOKMARK; returns the line count. */
static size_t expect_last_bookmark(struct watch *w)
{
    size_t n = watch_line_count(w);
    struct api_ev last;

    cr_assert_gt(n, 0);
    api_ev_parse(watch_line(w, n - 1, NULL), &last);
    cr_assert_str_eq(last.type, "BOOKMARK", "A's last line: %.300s", watch_line(w, n - 1, NULL));
    api_ev_free(&last);
    return n;
}

/* ---- tests -------------------------------------------------------------------------------- */

/*
 * What the two delay tests share: the fixture, the client's watch on A from its list RV (with
 * or without allowWatchBookmarks), A's SIGTERM with the delay checked, the watch's clean end
 * after the delay, A's exit 0 in time. The watch's events go to <got>; returns how many
 * BOOKMARKs it had, the last one's RV in *<bm_rv>.
 */
static size_t watch_through_shutdown(struct fixture *f, bool bookmarks, struct evlog *got,
                                     uint64_t *bm_rv)
{
    static struct evlog late_got;
    struct watch *wa, *late;
    uint64_t t0, late_bm = 0;
    size_t n;

    fixture_up(f, "2s", NULL);
    wa = client_watch(f->a.url, f->list_rv, bookmarks);
    terminate_and_check_delay(f, wa, &t0);
    /* a watch a Service still routes here during the delay is served, and drained alike */
    late = client_watch(f->a.url, f->list_rv, bookmarks);
    expect_clean_end(wa, t0 + DELAY_MS);
    expect_clean_end(late, t0 + DELAY_MS);
    expect_exit_0(f, t0 + DELAY_MS + EXIT_MS);
    if (bookmarks) {
        (void)expect_last_bookmark(wa);
        (void)expect_last_bookmark(late);
    }
    got->n = 0;
    n = evlog_add(got, wa, 0, watch_line_count(wa), UINT64_MAX, bm_rv);
    cr_assert_gt(got->n, 0);
    late_got.n = 0;
    cr_assert_eq(evlog_add(&late_got, late, 0, watch_line_count(late), UINT64_MAX, &late_bm), n);
    cr_assert_eq(late_bm, *bm_rv);
    cr_assert_eq(late_got.n, got->n, "the two watches from rv %" PRIu64 " ended apart", f->list_rv);
    for (size_t i = 0; i < got->n; i++) {
        cr_assert_str_eq(late_got.e[i], got->e[i], "event %zu", i);
    }
    watch_close(late);
    watch_close(wa);
    return n;
}

Test(shutdown, informer_resumes_on_the_other_replica_from_the_bookmark, .timeout = 90)
{
    static struct evlog got; /* large: not on the stack */
    struct fixture f;
    struct watch *wb;
    struct api_ev e;
    uint64_t bm_rv = 0, none = 0, upto;
    size_t na;

    /* A's stream ends with its one BOOKMARK, at or past every event it carried */
    cr_assert_eq(watch_through_shutdown(&f, true, &got, &bm_rv), 1);
    cr_assert_geq(bm_rv, got.rv[got.n - 1]);

    /* the informer re-watches B from the bookmark: no 410, and it picks up where A ended */
    wb = client_watch(f.b.url, bm_rv, true);
    cr_assert_eq(watch_wait_lines(wb, 10, 15000), 0, "too few events from B");
    api_ev_parse(watch_line(wb, 9, NULL), &e);
    upto = e.rv;
    api_ev_free(&e);
    cr_assert_gt(upto, bm_rv);
    na = got.n;
    evlog_add(&got, wb, 0, 10, upto, &none);
    cr_assert_gt(got.rv[na], bm_rv, "B's first event is not newer than the bookmark");
    expect_same_events(&got, f.ref, upto);
    watch_close(wb);
    fixture_down(&f);
}

Test(shutdown, without_bookmarks_the_watch_ends_cleanly_with_none, .timeout = 90)
{
    static struct evlog got;
    struct fixture f;
    uint64_t bm_rv = 0;

    cr_assert_eq(watch_through_shutdown(&f, false, &got, &bm_rv), 0, "a BOOKMARK was sent");
    /* what it got is the simulator's events, in order, without a gap, up to its last */
    expect_same_events(&got, f.ref, got.rv[got.n - 1]);
    fixture_down(&f);
}

Test(shutdown, a_second_signal_cuts_the_delay_short, .timeout = 90)
{
    static struct evlog got;
    struct fixture f;
    struct watch *wa;
    uint64_t t0, t1, bm_rv = 0;
    size_t na;

    fixture_up(&f, "60s", NULL);
    wa = client_watch(f.a.url, f.list_rv, true);
    cr_assert_eq(watch_wait_lines(wa, 5, 10000), 0);
    t0 = http_now_ms();
    cr_assert_eq(proc_kill(f.a.p, SIGTERM), 0);
    expect_not_ready(&f.a, t0);
    t1 = http_now_ms();
    cr_assert_eq(proc_kill(f.a.p, SIGTERM), 0);
    expect_clean_end(wa, t1);
    expect_exit_0(&f, t1 + EXIT_MS);
    na = expect_last_bookmark(wa);
    got.n = 0;
    cr_assert_eq(evlog_add(&got, wa, 0, na, UINT64_MAX, &bm_rv), 1);
    cr_assert_geq(bm_rv, got.rv[got.n - 1]);
    expect_same_events(&got, f.ref, got.rv[got.n - 1]);
    watch_close(wa);
    fixture_down(&f);
}

/* "kwp_watches_open{...} N" summed over the proxy's /metrics. */
static unsigned long watches_open(const char *base)
{
    struct http_resp r;
    unsigned long total = 0;
    const char *p;

    api_req(base, "GET", "/metrics", NULL, NULL, NULL, &r);
    cr_assert_eq(r.code, 200);
    for (p = strstr(r.body, "\nkwp_watches_open{"); p != NULL;
         p = strstr(p + 1, "\nkwp_watches_open{")) {
        const char *sp = strchr(p, ' ');

        cr_assert_not_null(sp);
        total += strtoul(sp + 1, NULL, 10);
    }
    http_resp_free(&r);
    return total;
}

Test(shutdown, a_client_that_does_not_read_is_dropped_in_time, .timeout = 90)
{
    static const char req[] = "GET /api/v1/pods?watch=1&resourceVersion=0&allowWatchBookmarks=true "
                              "HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    struct fixture f;
    struct watch *wa;
    uint64_t t0, end;
    int fd;

    /* 300 pods of ~4 KB: the initial events of a watch from rv 0 are 1.2 MB, far more than
     * the proxy's send buffer and a 4 KiB receive window hold */
    fixture_up(&f, "1s", ARGS("--objects", "300", "--object-bytes", "4000"));
    fd = sock_connect(f.a.url, 4096);
    cr_assert(sock_send_all(fd, req, strlen(req)));
    wa = client_watch(f.a.url, f.list_rv, true);
    end = http_now_ms() + 10000;
    while (watches_open(f.a.url) < 2 && http_now_ms() < end) {
        nap(POLL_MS);
    }
    cr_assert_eq(watches_open(f.a.url), 2, "both watches open on A");
    cr_assert_eq(watch_wait_lines(wa, 3, 10000), 0);
    t0 = http_now_ms();
    cr_assert_eq(proc_kill(f.a.p, SIGTERM), 0);
    /* the reader is not held up by the other: its stream ends after the delay, a BOOKMARK
     * last; the one that does not read is dropped and A still exits 0 within 2 s of drain,
     * 0.5 s of settling and its teardown */
    expect_clean_end(wa, t0 + 1000);
    (void)expect_last_bookmark(wa);
    expect_exit_0(&f, t0 + 1000 + 4000);
    close(fd);
    watch_close(wa);
    fixture_down(&f);
}

/* Reads from <fd> into <buf> (at most <cap> - 1 bytes, NUL-terminated) until <needle> is in
 * it (NULL: until the peer closes) or <ms> passed. Returns true when that happened. */
static bool read_until(int fd, char *buf, size_t cap, size_t *len, const char *needle, long ms)
{
    uint64_t end = http_now_ms() + (uint64_t)ms;

    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        uint64_t now = http_now_ms();
        ssize_t got;

        buf[*len] = '\0';
        if (needle != NULL && strstr(buf, needle) != NULL) {
            return true;
        }
        if (now >= end || *len + 1 >= cap) {
            return false;
        }
        if (poll(&pfd, 1, (int)(end - now)) <= 0) {
            continue;
        }
        got = recv(fd, buf + *len, cap - 1 - *len, 0);
        if (got == 0) {
            return needle == NULL;
        }
        if (got < 0) {
            return false;
        }
        *len += (size_t)got;
    }
}

Test(shutdown, a_kept_alive_connection_closes_after_its_next_request, .timeout = 90)
{
    static char buf[4 << 20];
    static const char list[] =
        "GET /api/v1/pods?resourceVersion=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    struct fixture f;
    char req[256];
    const char *end, *last, *next;
    size_t len = 0;
    int fd;

    fixture_up(&f, "1s", NULL);
    fd = sock_connect(f.a.url, 0);
    snprintf(req, sizeof(req),
             "GET /api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=%" PRIu64
             " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
             f.list_rv);
    cr_assert(sock_send_all(fd, req, strlen(req)));
    cr_assert(read_until(fd, buf, sizeof(buf), &len, "\r\n\r\n", 10000), "no watch headers");
    cr_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0, "%.200s", buf);
    cr_assert_null(strcasestr(buf, "Connection: close"), "%.400s", buf);
    /* the client's next request is already there (pipelined) when the watch ends, so it
     * reaches kwp during the drain whatever the timing of this process */
    cr_assert(sock_send_all(fd, list, strlen(list)));
    cr_assert_eq(proc_kill(f.a.p, SIGTERM), 0);
    cr_assert(read_until(fd, buf, sizeof(buf), &len, NULL, DELAY_MS + 5000),
              "the connection stayed open: %.300s", len > 300 ? buf + len - 300 : buf);
    /* the watch ends with its terminal chunk, the BOOKMARK the last frame before it */
    end = strstr(buf, "\r\n0\r\n\r\n");
    cr_assert_not_null(end, "no end of the chunked watch: %.300s",
                       len > 300 ? buf + len - 300 : buf);
    last = NULL;
    for (const char *p = strstr(buf, "{\"type\":"); p != NULL && p < end;
         p = strstr(p + 1, "{\"type\":")) {
        last = p;
    }
    cr_assert(last != NULL && strncmp(last, "{\"type\":\"BOOKMARK\"", 18) == 0, "last: %.200s",
              last ? last : "(none)");
    /* then the next request is answered, with Connection: close, and the connection closes */
    next = end + strlen("\r\n0\r\n\r\n");
    cr_assert(strncmp(next, "HTTP/1.1 200", 12) == 0, "after the watch: %.200s", next);
    cr_assert_not_null(strcasestr(next, "\r\nConnection: close\r\n"), "%.400s", next);
    close(fd);
    expect_exit_0(&f, http_now_ms() + EXIT_MS);
    fixture_down(&f);
}
