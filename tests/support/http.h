/*
 * http.h - libcurl helpers for integration tests: one-shot requests and a watch collector.
 *
 * Every request carries "User-Agent: kwp-it/1" (neutral: kube-apiserver pretty-prints for
 * curl/Wget/Mozilla agents, SEMANTICS 1.7) and "Accept: application/json" unless the caller
 * passes its own. Every call has a hard deadline; nothing here sleeps to wait for state.
 *
 * The watch collector runs one curl easy handle on a curl multi handle in its own thread,
 * splits the body into lines and records each line with its arrival time, the HTTP status,
 * and whether and when the stream ended. Test threads read it under the watch's mutex
 * through the functions below; lines, once recorded, never move or change.
 */
#ifndef KWP_SUPPORT_HTTP_H
#define KWP_SUPPORT_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_USER_AGENT "kwp-it/1"
#define HTTP_BODY_MAX (256u * 1024u * 1024u) /* larger bodies fail with -EFBIG */

/* One complete response. Owned by the caller; release with http_resp_free. */
struct http_resp {
    long code;  /* HTTP status, 0 when no response arrived */
    char *body; /* NUL-terminated (body_len bytes plus NUL), never NULL after success */
    size_t body_len;
    char *headers; /* raw header block of the final response ("Name: value\r\n"...) */
};

/* Monotonic milliseconds, for measuring elapsed time in tests. */
uint64_t http_now_ms(void);

/*
 * Performs one request. <method> "GET", "POST", "PUT", "PATCH", "DELETE"...; <content_type>
 * NULL for none; <body> NUL-terminated or NULL; <extra_headers> a NULL-terminated array of
 * "Name: value" lines or NULL (a header here overrides the default User-Agent/Accept);
 * <timeout_ms> bounds the whole transfer. Fills <out> (zeroed first); the caller frees it
 * with http_resp_free whatever the return value.
 * Returns 0 when a complete response was received (any status), else -ETIMEDOUT,
 * -ECONNREFUSED, -EFBIG (body over HTTP_BODY_MAX) or -EIO, with the curl error printed to
 * stderr; then <out> holds whatever arrived (code 0 if no status line), for diagnostics.
 */
int http_do(const char *method, const char *url, const char *content_type, const char *body,
            const char *const *extra_headers, long timeout_ms, struct http_resp *out);

/* Shorthand for http_do("GET", url, NULL, NULL, NULL, timeout_ms, out). */
int http_get(const char *url, long timeout_ms, struct http_resp *out);

/* Frees what <r> holds and zeroes it; NULL-safe. */
void http_resp_free(struct http_resp *r);

/*
 * Looks up header <name> (case-insensitive) in a raw header block. Copies its value,
 * trimmed, into <out> (capacity <cap>, always NUL-terminated). Returns true when found.
 */
bool http_header_get(const char *headers, const char *name, char *out, size_t cap);

/* Same on a response. */
bool http_resp_header(const struct http_resp *r, const char *name, char *out, size_t cap);

/* Trusts the PEM certificates in <path> (kept, not copied; NULL: the system's) for every
 * https request and watch made after this call: a test's own serving certificate. */
void http_set_ca_file(const char *path);

/* ---- watch collector ------------------------------------------------------------------ */

struct watch;

/*
 * Opens a GET stream on <url> in a new thread. <timeout_ms> is a hard bound on the whole
 * stream (the transfer is aborted after it; tests should normally end streams themselves).
 * Returns a new watch the caller owns (release with watch_close) or NULL.
 */
struct watch *watch_open(const char *url, long timeout_ms);

/*
 * Waits until the response status line and headers arrived (or the stream ended).
 * Returns the HTTP status, or 0 on timeout / no response.
 */
long watch_wait_status(struct watch *w, long timeout_ms);

/*
 * Waits until at least <n> lines were received. Returns 0, -EPIPE if the stream ended
 * with fewer lines, -ETIMEDOUT.
 */
int watch_wait_lines(struct watch *w, size_t n, long timeout_ms);

/* Waits until the stream ended. Returns 0 or -ETIMEDOUT. */
int watch_wait_end(struct watch *w, long timeout_ms);

/* Number of complete lines so far (a final unterminated line counts once the stream ended). */
size_t watch_line_count(struct watch *w);

/*
 * Line <i> (0-based) without its '\n', NUL-terminated; lent until watch_close. Sets
 * *<at_ms> (if not NULL) to its arrival time on the http_now_ms clock. NULL if i is past
 * the end.
 */
const char *watch_line(struct watch *w, size_t i, uint64_t *at_ms);

/* HTTP status (0 before headers). */
long watch_status(struct watch *w);

/* Time (http_now_ms clock) watch_open was called. */
uint64_t watch_opened_ms(struct watch *w);

/*
 * True when the stream has ended; sets *<at_ms> to when, and *<curl_rc> to the libcurl
 * result (0 = clean end of body; 28 = our timeout).
 */
bool watch_ended(struct watch *w, uint64_t *at_ms, int *curl_rc);

/* Raw header block of the response (lent, valid once the status is known). */
const char *watch_headers(struct watch *w);

/* Aborts the transfer if still running, joins the thread and frees everything. NULL-safe. */
void watch_close(struct watch *w);

#endif
