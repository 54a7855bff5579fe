/*
 * reflector.h - keeps cache resources in sync with the upstream kube-apiserver.
 *
 * For each added resource: a paginated LIST (rv unset: a consistent read) replaces the cache
 * at the list RV, then a WATCH from that RV applies each event to the cache, the upstream
 * bytes copied once into a blob (never re-encoded). An established stream that ends, cleanly
 * or cut, is re-watched from the last RV at once; a watch refused or answered non-200 after a
 * backoff (or the answer's Retry-After); a 410 or malformed data relists, which ends
 * every downstream watch and resets the history (SEMANTICS 2.12), as kube-apiserver's cacher.
 * After a broken connection, upstream's RV is checked before the re-watch: lower than ours
 * (restored from a backup), it relists too.
 *
 * Threads: one reflector thread drives one libcurl multi handle for ALL resources and is the
 * only writer of their cache state; reflector_add and reflector_all_synced may be called from
 * any thread. The process must have called curl_global_init before reflector_new.
 */
#ifndef KWP_PROXY_REFLECTOR_H
#define KWP_PROXY_REFLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct apires;
struct reflector;
struct upstream;

#define REFLECTOR_PAGE_SIZE_DEFAULT 500
#define REFLECTOR_MAX_LINE_DEFAULT ((size_t)16 << 20)
#define REFLECTOR_MAX_LIST_DEFAULT ((size_t)1 << 30)
#define REFLECTOR_WATCH_TIMEOUT_MIN_S_DEFAULT 1800
#define REFLECTOR_BACKOFF_MIN_MS_DEFAULT 800
#define REFLECTOR_BACKOFF_MAX_MS_DEFAULT 30000
#define REFLECTOR_BACKOFF_RESET_MS_DEFAULT 120000

/* Limits and timings; a zero field takes its default. */
struct reflector_opts {
    int64_t page_size;           /* LIST ?limit= per page (500) */
    size_t max_line_bytes;       /* a longer watch line is a protocol error (16 MiB) */
    size_t max_list_bytes;       /* a longer LIST page body is a failed list (1 GiB) */
    int64_t watch_timeout_min_s; /* each watch asks timeoutSeconds in [min, 2*min) (1800) */
    int64_t backoff_min_ms;      /* first retry delay after a failure (800) */
    int64_t backoff_max_ms;      /* cap of the doubling delay (30000) */
    int64_t backoff_reset_ms;    /* a watch open this long forgets past failures (120000) */
    size_t max_resource_bytes;   /* a list whose objects' JSON is larger: the resource is not
                                    cached (ar->too_large set, its watches ended); 0 = no cap */
};

/*
 * Creates the reflector and starts its thread. <up> is lent and must outlive the reflector;
 * <o> is copied (NULL = all defaults). Returns NULL with a message in <err> when an option is
 * invalid (negative, or backoff_min > backoff_max) or libcurl or the thread cannot start.
 * Any thread.
 */
struct reflector *reflector_new(struct upstream *up, const struct reflector_opts *o, char *err,
                                size_t err_len);

/*
 * Starts syncing <ar> (lent: it must outlive the reflector; add each apires at most once)
 * from its cluster-wide path, /api/v1/<plural> or /apis/<group>/<version>/<plural>.
 * The reflector thread then owns the writer side of ar->res and updates ar->ctr: up_lists
 * (per page), up_watches, up_watch_open, up_events (ADDED/MODIFIED/DELETED applied),
 * up_bookmarks, relists (per completed list) and up_errors (failed requests, malformed
 * data). Any thread; takes the reflector's queue lock briefly.
 */
void reflector_add(struct reflector *r, struct apires *ar);

/*
 * Fills <ar>'s cache before its first request (state_load): returns the rv of the state it
 * loaded, or 0 when it loaded nothing. Called once, on the reflector thread.
 */
typedef uint64_t reflector_load_fn(void *ctx, struct apires *ar);

/*
 * As reflector_add, but <load> (if not NULL) runs first on the reflector thread, so the
 * server answers meanwhile (the resource is not ready: 429s). When it returns an rv > 0 the
 * first request is a WATCH from that rv instead of a LIST, and ar->ctr.up_stale is 1 (the
 * resource does not count as synced) until that watch has caught up: its first bookmark, or
 * REFLECTOR_WARM_SETTLE_MS after its 200 (the backlog after rv comes right after the
 * headers). A 410 relists as usual. Loads of several resources run one after the other.
 */
void reflector_add_loading(struct reflector *r, struct apires *ar, reflector_load_fn *load,
                           void *ctx);

/*
 * Whether every added resource has completed its first list (for /readyz); true when none
 * was added. A later relist does not make it false again: the cache's own ready flag tells
 * that. Any thread, lock-free.
 */
bool reflector_all_synced(struct reflector *r);

/*
 * Stops the thread (a flag and curl_multi_wakeup), joins it, ends the transfers and frees
 * the handles. Does not free the apires or their resources; leaves up_watch_open at 0.
 * NULL-safe. Call from the thread that owns <r>, never from the reflector thread.
 */
void reflector_free(struct reflector *r);

#endif
