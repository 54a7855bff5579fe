/*
 * handlers_watch.h - the WATCH stream (see handlers_watch.c): for handlers.c, the entry
 * point and the teardown of a request's watch state; for bench/emit.c and the unit tests, a
 * bare watch, which is a watch's state without a connection, driven one event at a time
 * through the same frame writer a stream uses (no copy of the code, no private struct
 * rebuilt outside this room).
 *
 * Threads: handlers_watch_serve runs on the request's MHD thread. A bare watch belongs to
 * the thread that drives it; the resource calls take the resource lock themselves.
 */
#ifndef KWP_PROXY_HANDLERS_WATCH_H
#define KWP_PROXY_HANDLERS_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct apires;
struct hreq;
struct k8s_list_opts;
struct ring_event;
struct watcher;

/* Events a watch takes from the resource per batch (<= RING_SEG: a short batch means the
 * history was drained). */
#define HANDLERS_WATCH_BATCH 32

/*
 * Serves the WATCH of request <h> with options <lo>: the deadline, the 3 s rule for
 * sendInitialEvents at a future rv, the initial events or the start rv, then the stream
 * (which suspends when idle and is woken by the resource). Replies once, or suspends.
 */
void handlers_watch_serve(struct hreq *h, const struct k8s_list_opts *lo);

/* Releases what the watch of <h> holds (batch, initial snapshot, overflow frame) and adds
 * its counts to the resource's counters. Call after the watcher was detached. */
void handlers_watch_fini(struct hreq *h);

/*
 * The tick's lag check (every REGISTRY_SWEEP_MS): a running watch of <ar> whose next event
 * has waited longer than --watch-max-lag is closed and its connection shut down, even when
 * libmicrohttpd is not calling its writer (a client that reads, slowly); counted in
 * ctr.terminated and logged once per call. The tick thread.
 */
void handlers_watch_tick(struct apires *ar, int64_t now_ms);

/* ---- bare watches: bench and tests ------------------------------------------------------- */

/*
 * A plain watch of <ar> over all namespaces, as a request of that resource without a
 * namespace, a name or an Accept header would get, filtered by <label_selector> (NULL =
 * none). Its watcher is not attached: attach it with resource_watch_from/_now and
 * handlers_watch_bare_watcher. Returns it, or NULL with the selector's error in <err>.
 * Free it with handlers_watch_bare_free.
 */
struct hreq *handlers_watch_bare_new(struct apires *ar, const char *label_selector, char *err,
                                     size_t err_len);

/* The watcher of <h>, to attach and to take events for (lent). */
struct watcher *handlers_watch_bare_watcher(struct hreq *h);

/*
 * Writes event <ev> (lent by resource_watch_next/_take) as <h> sends it into buf at *n,
 * filtered by its scope, from the resource's shared frame when there is one: what the
 * stream's content reader does per event. Returns 0 (written, or filtered out), or -ENOSPC
 * when the frame does not fit after *n bytes (nothing written). A frame larger than all of
 * <max> at *n == 0 is staged and the part that fits written (handlers_watch_bare_overflowed).
 */
int handlers_watch_bare_emit(struct hreq *h, char *buf, size_t max, size_t *n,
                             const struct ring_event *ev);

/* Frames written since the last call (the stream adds them to the resource's counter). */
uint64_t handlers_watch_bare_frames(struct hreq *h);

/* Whether a staged frame is still waiting (a stream would drain it on its next call). */
bool handlers_watch_bare_overflowed(const struct hreq *h);

/* Detaches the watcher and frees <h> (NULL: nothing). */
void handlers_watch_bare_free(struct hreq *h);

#endif
