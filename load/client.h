/*
 * client.h - the load engine: N watch streams plus a LIST schedule, all driven by one epoll
 * loop on the calling thread (never a thread per watch).
 *
 * Each watcher behaves like a client-go reflector:
 *
 *   LIST ?resourceVersion=0 ──200──> WATCH ?resourceVersion=<list rv>&allowWatchBookmarks=true
 *     ^                                 │ events: count, latency = now - kwp.io/stamp-ns
 *     │ after backoff                   │ stream ends cleanly ──> re-WATCH from the last rv
 *     └──── 410 (ERROR event or HTTP) <─┤ other ERROR / non-200 / broken connection
 *                                       └──> backoff (800ms..30s, x2, jitter), re-WATCH
 *
 * (--initial watchlist replaces the LIST by a WATCH with sendInitialEvents=true; its events up
 * to the k8s.io/initial-events-end bookmark count as initial, not as deliveries.)
 * Sockets are non-blocking HTTP/1.1 with keep-alive; a response body is decoded (chunked or
 * Content-Length) in place in one shared read buffer, and watch lines are framed with a cap
 * per connection, so an idle watcher costs its struct and its socket only.
 *
 * Threads: client_run owns everything it allocates and returns with all of it freed except
 * the stats, which the caller releases with client_stats_fini.
 */
#ifndef KWP_LOAD_CLIENT_H
#define KWP_LOAD_CLIENT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "load/histogram.h"

#define CLIENT_MAX_PIDS 8         /* other processes sampled each second (--pid) */
#define CLIENT_RV_MAX 64          /* longest resourceVersion kept, bytes incl. NUL */
#define CLIENT_STATUS_MAX 600     /* status and Status.code counters: 0..599 (others at 599) */
#define CLIENT_HEAD_LINE_MAX 8192 /* one response header line */
#define CLIENT_HEAD_LINES_MAX 128 /* header lines per response */
#define CLIENT_LIST_PREFIX 8192   /* bytes of a reflector LIST body kept to find its rv */
#define CLIENT_REQ_MAX 16384      /* one request head: path, query, Host and token included */
#define CLIENT_REQ_SLACK 512      /* bytes of a request head besides those five strings */

enum client_initial { CLIENT_INITIAL_LIST = 0, CLIENT_INITIAL_WATCHLIST };

/* Transport-level failures (no HTTP status to count them under). */
enum client_terr {
    CLIENT_TERR_CONNECT = 0,   /* connect() failed or was refused */
    CLIENT_TERR_RESET,         /* read/write error on an established connection */
    CLIENT_TERR_EOF,           /* the peer closed before the response was complete */
    CLIENT_TERR_PROTOCOL,      /* malformed status line, headers, chunking; LIST without rv */
    CLIENT_TERR_LINE_TOO_LONG, /* a watch line above --max-line */
    CLIENT_TERR_BAD_EVENT,     /* a watch line that is not an event */
    CLIENT_TERR_COUNT,
};

/* Name of a transport error for reports ("connect", "reset", ...). */
const char *client_terr_name(enum client_terr t);

struct client_stats;

/* One second of the run. Counters are deltas over that second; gauges are at its end. */
struct client_sample {
    double t_s;            /* seconds since the start, at the end of this interval */
    uint32_t watches_open; /* gauge */
    uint64_t events;       /* live events delivered (after warmup) */
    uint64_t bytes;        /* bytes read on watcher connections */
    uint64_t lists;        /* LIST-mode responses completed */
    uint64_t list_bytes;
    uint64_t errors; /* non-200 + ERROR events + transport errors */
    uint64_t gone;   /* 410s */
    uint64_t relists;
    uint64_t reconnects;
    uint64_t lat_count; /* latency samples this second, and their p50/p99/max */
    uint64_t p50_ns, p99_ns, max_ns;
    double cpu_pct[1 + CLIENT_MAX_PIDS]; /* [0] = this process, then --pid order; -1 unknown */
    uint64_t rss_kb[1 + CLIENT_MAX_PIDS];
};

/* Called once per second on the engine thread with the sample just taken. */
typedef void client_progress_fn(void *ctx, const struct client_sample *s,
                                const struct client_stats *st);

struct client_opts {
    struct sockaddr_storage addr; /* target address */
    socklen_t addr_len;
    const char *host_header;                /* "host:port" for the Host header */
    const char *path;                       /* collection path, any URL prefix included */
    const char *selectors;                  /* encoded "labelSelector=..&fieldSelector=.." or "" */
    const char *token;                      /* bearer token or NULL */
    const struct sockaddr_storage *sources; /* local addresses to bind round-robin, or NULL */
    size_t n_sources;

    int64_t watchers;  /* watch streams (0 = LIST mode only) */
    double ramp_per_s; /* watchers started per second (0 = all at once) */
    enum client_initial initial;
    const char *start_rv;   /* first WATCH from this rv without a LIST (NULL = LIST) */
    int64_t duration_ms;    /* the run (ramp included) */
    int64_t warmup_ms;      /* events before this are counted apart, not measured */
    bool warmup_after_open; /* warmup_ms counts from when every watcher is open (at the
                               latest from half the run, if they never all open) */
    int64_t drain_ms;       /* after duration: time granted to LISTs in flight */
    int64_t backoff_ms;     /* first retry delay; doubles up to backoff_max_ms */
    int64_t backoff_max_ms;
    size_t max_line; /* longest watch line */

    double lists_per_s;       /* LIST mode: request rate (0 = off) */
    int64_t list_concurrency; /* LISTs in flight at most */
    const char *list_query;   /* query for LIST mode, without '?' (selectors appended) */

    const int *pids; /* processes to sample (CPU, RSS) each second */
    size_t n_pids;

    client_progress_fn *progress; /* may be NULL */
    void *progress_ctx;
    volatile sig_atomic_t *stop; /* set asynchronously (SIGINT) to end the run early */
};

/* Resource use of one sampled process over the run. */
struct client_proc {
    int pid;
    bool seen;           /* at least one sample was read */
    double cpu_s;        /* CPU seconds spent during the run */
    uint64_t rss_max_kb; /* largest RSS sampled */
};

/* Everything measured. Filled by client_run; the caller owns it (client_stats_fini). */
struct client_stats {
    double elapsed_s;       /* start to stop (drain excluded) */
    double measured_s;      /* the window rates are computed over: warmup end to stop */
    double measured_from_s; /* where that window began, from the start */
    bool interrupted;       /* stopped by *stop before the duration */
    /* watches */
    uint64_t watchers_opened; /* watchers that had at least one watch answered 200 */
    uint64_t watch_requests;
    uint64_t events;         /* ADDED/MODIFIED/DELETED delivered after warmup */
    uint64_t warmup_events;  /* ... before warmup ended */
    uint64_t initial_events; /* watch-list initial ADDED events */
    uint64_t bookmarks;
    uint64_t unstamped;   /* ADDED/MODIFIED without a usable stamp (no latency) */
    uint64_t deleted;     /* DELETED events (their object carries the last write's
                           * stamp, so no latency is taken from them) */
    uint64_t bytes;       /* read on watcher connections (LISTs included), after warmup */
    uint64_t event_bytes; /* event lines' bytes, after warmup */
    uint64_t lists;       /* reflector LISTs answered with their rv */
    uint64_t relists;     /* of which after a 410 */
    uint64_t reconnects;  /* watches started again after an open watch ended */
    uint64_t gone;        /* 410s: ERROR events with code 410 plus HTTP 410 */
    uint32_t watches_open_max;
    uint32_t watches_open_end; /* open when the duration ran out */
    /* where each watcher was when the duration ran out: shows why watches are missing */
    uint32_t end_watching;      /* stream open (200 received) */
    uint32_t end_connecting;    /* TCP connect or request write not done */
    uint32_t end_list_pending;  /* LIST sent, no response head yet */
    uint32_t end_list_body;     /* LIST answered 200, body still arriving */
    uint32_t end_watch_pending; /* WATCH sent, no response head yet */
    uint32_t end_waiting;       /* in backoff, or not started by the ramp yet */
    struct histogram *latency;  /* ns, stamped ADDED/MODIFIED after warmup */
    uint64_t *per_watcher;      /* events delivered to each watcher (n_watchers) */
    size_t n_watchers;
    /* errors */
    uint64_t http_status[CLIENT_STATUS_MAX];  /* non-200 responses by status */
    uint64_t error_events[CLIENT_STATUS_MAX]; /* ERROR watch events by Status code */
    uint64_t transport[CLIENT_TERR_COUNT];
    /* LIST mode */
    uint64_t list_requests;
    uint64_t list_ok;
    uint64_t list_missed;           /* due while all --list-concurrency slots were busy */
    uint64_t list_bytes;            /* body bytes of 200 responses */
    struct histogram *list_latency; /* ns, request start to last body byte (200 only) */
    /* processes: [0] this one, then --pid order */
    struct client_proc procs[1 + CLIENT_MAX_PIDS];
    size_t n_procs;
    /* one sample per second */
    struct client_sample *series;
    size_t n_series;
};

/*
 * Runs the load described by <o> until o->duration_ms has passed (plus the LIST drain) or
 * *o->stop is set, filling <st> (zeroed first). Returns 0 when the run took place (failures
 * during it are counted in <st>, not returned), or -errno when it could not start (epoll).
 * Call client_stats_fini(<st>) in both cases.
 */
int client_run(const struct client_opts *o, struct client_stats *st);

/* Total errors: non-200 responses, ERROR events and transport errors. */
uint64_t client_stats_errors(const struct client_stats *st);

/* Frees what <st> holds. */
void client_stats_fini(struct client_stats *st);

#endif
