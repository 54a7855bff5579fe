/*
 * fanout.h - watch writers: threads that write plain-TCP watch streams to their sockets
 * themselves, the way bench/floor.c does (one sendmsg per stream and pass, gathered straight
 * from frames shared by every watcher), instead of copying each frame into libmicrohttpd's
 * per-connection buffer and passing each connection through its state machine.
 *
 * A stream is handed over while its libmicrohttpd connection is suspended with nothing
 * buffered (fanout_attach, from the stream's content reader); from then on only the writer
 * thread it landed on runs its pass function, until the pass gives it back (fanout_detach,
 * then the caller resumes the connection: libmicrohttpd writes the rest of the response).
 * Wakes (fanout_kick, any thread, lock-free) are gathered per writer and served in one pass
 * over the streams that asked, so one event waking 10,000 watches costs one eventfd write
 * per writer, not one resume per watch. A stream whose socket is full waits for EPOLLOUT in
 * the writer's epoll set; one that stays full past its stall timeout is given
 * FANOUT_EV_STALL. Each writer owns its streams' list: only it links and unlinks them.
 *
 * Threads: fanout_new/fanout_free on the owner's thread; fanout_attach and fanout_kick on any
 * thread; the pass and fanout_detach on the writer's thread only.
 */
#ifndef KWP_PROXY_FANOUT_H
#define KWP_PROXY_FANOUT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct fanout;
struct fanout_worker;
struct fanout_conn;

/* Why a pass runs (a mask). */
enum fanout_ev {
    FANOUT_EV_KICK = 1,     /* fanout_kick, or the attach */
    FANOUT_EV_WRITABLE = 2, /* EPOLLOUT (or EPOLLERR/EPOLLHUP: the next write says which) */
    FANOUT_EV_STALL = 4,    /* blocked (fanout_blocked) longer than its stall timeout */
    FANOUT_EV_STOP = 8,     /* the writers stop: give the stream back now */
};

/* A stream's pass: writes what it can and returns; it may call fanout_detach on <c>. */
typedef void fanout_pass_fn(struct fanout_conn *c, unsigned events);

/* Embedded in the stream's state (64 bytes: every idle watch holds one). */
struct fanout_conn {
    /* public: set before fanout_attach */
    int fd;
    uint32_t stall_ms; /* FANOUT_EV_STALL after this long blocked (0: never) */
    /* private */
    uint32_t blocked_ms;             /* the writer's 32-bit ms clock when its socket filled (0:
                                        not blocked); compared by unsigned difference */
    atomic_bool queued;              /* in the wake queue (cleared when popped) */
    bool added;                      /* in the epoll set and the owned list */
    bool listed;                     /* in this turn's run list */
    uint8_t revents;                 /* FANOUT_EV_* gathered for this turn */
    fanout_pass_fn *pass;            /* public: set before fanout_attach */
    struct fanout_worker *wk;        /* while attached */
    struct fanout_conn *qnext;       /* in the worker's wake queue */
    struct fanout_conn *prev, *next; /* the worker's owned list */
    struct fanout_conn *run_next;    /* this turn's run list */
};

/*
 * <threads> writers (at least 1). While they own at least <round_min_streams> streams in
 * all, a writer takes its kicks at most once per <round_ms> (0: each at once), so that one
 * turn serves the kicks of a whole interval and each stream sends the interval's events in
 * one sendmsg; the first turn after a quiet interval starts at once, and a stream whose
 * socket became writable is served at once in any case. NULL when a thread or
 * epoll set cannot be made.
 */
struct fanout *fanout_new(unsigned threads, int64_t round_ms, unsigned round_min_streams);

/*
 * Gives every stream back (their passes get FANOUT_EV_STOP until each has called
 * fanout_detach, at most ~2 s), stops the writers and frees <f>. NULL: nothing. Later
 * fanout_attach calls fail; fanout_kick on a stream that was given back is the caller's bug.
 */
void fanout_free(struct fanout *f);

/*
 * Hands <c> (fd, pass and stall_ms set) to a writer: its pass runs there with
 * FANOUT_EV_KICK soon. The caller must not touch the stream's state afterwards (the pass
 * may already be running). Returns false when the writers are stopping (the caller keeps
 * the stream).
 */
bool fanout_attach(struct fanout *f, struct fanout_conn *c);

/* Asks for a pass of attached <c> (coalesced: at most one pending). Any thread, no lock. */
void fanout_kick(struct fanout_conn *c);

/*
 * From <c>'s pass: <c> is no longer the writers' (its fd leaves the epoll set and its
 * writer forgets it), and the caller may resume the connection elsewhere; the pass must not
 * touch <c> after that. Returns false, changing nothing, while a kick of <c> is still
 * queued (the queue holds <c>): its pass then runs again soon and may detach it then. A
 * stream that is not armed to be woken cannot be kicked, so it is detached at that pass.
 */
bool fanout_detach(struct fanout_conn *c);

/* Process-wide counts, for the metrics: streams the writers own now, and handovers
 * (successful fanout_attach calls) since start. Any thread. */
struct fanout_totals {
    uint64_t streams;
    uint64_t attaches;
};
void fanout_totals(struct fanout_totals *t);

/* From <c>'s pass: its socket is full (true: from now, unless already) or drained (false). */
void fanout_blocked(struct fanout_conn *c, bool blocked, int64_t now_ms);

#endif
