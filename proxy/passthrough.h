/*
 * passthrough.h - forwards a downstream request to the upstream kube-apiserver and streams
 * the answer back: everything the cache does not answer (discovery, /version, /openapi,
 * writes, LIST with rv unset, watches the cache cannot serve, unknown paths).
 *
 * One thread drives one curl multi handle for all transfers. A transfer is shared by two
 * sides and refcounted: the MHD side (the request, taken over with http_req_take_over) and
 * the curl side (the easy handle, added and removed on the curl thread only). Either side
 * may end first: a client that goes away aborts the upstream transfer; an upstream that fails
 * ends the downstream answer (503 Status before any header, a cut stream after).
 *
 * Bytes flow through a bounded per-transfer buffer: the curl write callback appends and
 * pauses the transfer when the buffer is full; the downstream reader drains it, suspends the
 * request when it is empty, and asks the curl thread to unpause. Whoever clears a transfer's
 * `suspended` flag (under the transfer's mutex) owns the one http_resume call.
 *
 * Upstream bytes are never re-encoded: status, body and the copied headers reach the client
 * as the apiserver sent them (gzip included).
 */
#ifndef KWP_PROXY_PASSTHROUGH_H
#define KWP_PROXY_PASSTHROUGH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/http_server.h"
#include "proxy/identity.h"
#include "proxy/upstream.h"

struct passthrough;

#define PASSTHROUGH_DEFAULT_BUFFER (256 * 1024) /* bytes buffered per transfer */
#define PASSTHROUGH_MIN_BUFFER (16 * 1024)      /* CURL_MAX_WRITE_SIZE: one curl chunk */
#define PASSTHROUGH_DEFAULT_CONNECT_MS 10000
#define PASSTHROUGH_DEFAULT_SHUTDOWN_MS 5000
#define PASSTHROUGH_DEFAULT_SWEEP_MS 1000
#define PASSTHROUGH_DEFAULT_MAX_TRANSFERS 10000

/* Every field: 0 picks the default. */
struct passthrough_opts {
    size_t buffer_bytes;        /* response bytes buffered per transfer (min 16 KiB) */
    int64_t connect_timeout_ms; /* upstream TCP+TLS connect; there is no total timeout */
    int64_t shutdown_wait_ms;   /* passthrough_free's bound on waiting for requests to end */
    int64_t sweep_interval_ms;  /* how often suspended requests are checked for a gone peer */
    unsigned max_transfers;     /* transfers in flight; beyond it requests get 429 */
    unsigned stall_timeout_s;   /* close a client that reads nothing this long while body
                                   bytes wait for it (http_req_set_stall_timeout); 0 = never */
    bool http2;                 /* allow HTTP/2 upstream (multiplexed); default HTTP/1.1 */
};

/* Counters since passthrough_new (relaxed atomics: each is exact, the set is not a snapshot). */
struct passthrough_stats {
    uint64_t requests;        /* requests forwarded (upstream transfers started) */
    uint64_t active;          /* transfers not yet freed (either side still holds them) */
    uint64_t bytes_upstream;  /* response body bytes received from upstream */
    uint64_t bytes_client;    /* response body bytes handed to the downstream connection */
    uint64_t upstream_errors; /* transfers that failed before a response: answered 503 */
    uint64_t stream_errors;   /* transfers that failed after the headers: stream cut */
    uint64_t client_aborts;   /* downstream requests that ended before the transfer */
    uint64_t rejected;        /* requests refused with 429 (max_transfers) */
    uint64_t pauses;          /* times a full buffer paused an upstream transfer */
};

/*
 * Starts the passthrough thread for upstream <up>, which is borrowed and must outlive the
 * passthrough. <o> may be NULL (all defaults). Returns NULL with a message in <err> when the
 * curl multi handle or the thread cannot be created. Any thread.
 */
struct passthrough *passthrough_new(struct upstream *up, const struct passthrough_opts *o,
                                    char *err, size_t err_len);

/*
 * Stops the passthrough and frees it; NULL-safe. The caller first stops new requests
 * (http_server_quiesce) and must still run the HTTP server (it is stopped after this call).
 * Every transfer still running is aborted and every request suspended in the passthrough is
 * resumed, so it ends: a request still waiting for upstream headers gets 503, a stream is cut
 * (HTTP_STREAM_ABORT). Waits up to shutdown_wait_ms for those requests to complete; a request
 * that does not complete in time (a client that reads nothing) keeps its transfer, and the
 * memory is released when MHD completes it (at the latest in http_server_stop). Main thread,
 * never an MHD thread.
 */
void passthrough_free(struct passthrough *pt);

/*
 * Forwards <req> upstream: same method, path and query, the request body, and an allowlist
 * of request headers (Accept, Accept-Encoding, Content-Type, User-Agent, Audit-ID,
 * Kubectl-Command, Kubectl-Session, If-None-Match, ...); never Authorization (the proxy uses
 * its own credentials from upstream_begin) or hop-by-hop headers. Takes the request over
 * (http_req_take_over) and suspends it until the upstream answers; the request then gets the
 * upstream status, its body streamed, and the copied headers (Content-Type, Content-Encoding,
 * Retry-After, Warning, Audit-Id, X-Kubernetes-Pf-*, Location, Vary, ETag, Cache-Control,
 * Expires, Last-Modified). An upstream that cannot be reached gets a 503 ServiceUnavailable
 * Status, and so does a request for which the exec plugin gave no credential; too many
 * transfers in flight a 429 TooManyRequests Status. Each outcome goes to upstream_done (a 401
 * makes the credential stale).
 * Called from the app's handle function on an MHD thread; the handler must not reply or touch
 * <req> afterwards. No lock held.
 */
void passthrough_forward(struct passthrough *pt, struct http_req *req);

/*
 * passthrough_forward on behalf of <as> (NULL: exactly passthrough_forward): the upstream
 * request, made on the proxy's own credentials, also carries Impersonate-User, -Uid, one
 * Impersonate-Group per group and Impersonate-Extra-* (impersonate_headers), so that
 * kube-apiserver acts as the caller. The caller's own Authorization and Impersonate-*
 * headers are never forwarded (they are not in the allowlist). An identity that cannot be
 * sent intact gets the plain-text 500 of authz_status_internal_error and is not forwarded.
 * <as> is only read during the call. Same threads as passthrough_forward.
 */
void passthrough_forward_as(struct passthrough *pt, struct http_req *req,
                            const struct identity *as);

/* Reads the counters into <out>. Any thread; while <pt> is alive. */
void passthrough_stats(const struct passthrough *pt, struct passthrough_stats *out);

#endif
