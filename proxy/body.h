/*
 * body.h - success and Status bodies as negotiated: the gathered source pieces, then
 * optionally re-indented as Go's json.Indent(dst, src, "", "  ") does (bytes, no tree), then
 * optionally gzip-compressed (zlib) as libmicrohttpd pulls. Memory is bounded whatever the
 * body size: one indent state, a 16 KiB stage and zlib's window.
 *
 * A plain body goes out with Content-Length (http_reply_iov, the pieces never copied); a
 * pretty or gzip one is a streamed body owned by the caller's request state.
 * Threads: the MHD thread of the request. May include http_server.h, kube_json.h (Status
 * bodies), log.h and zlib.
 */
#ifndef KWP_PROXY_BODY_H
#define KWP_PROXY_BODY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

struct http_req;
struct kstatus;

/* A streamed body (opaque). */
struct body;

/* Runs once the source pieces are no longer needed. */
typedef void body_done_fn(void *ctx);

/* gzip bodies above this (kube-apiserver's defaultGzipThresholdBytes) when offered. */
#define BODY_GZIP_THRESHOLD (128 * 1024)

/*
 * A body read from <iov> (the array is copied, the bytes are lent until <done>(<ctx>) runs
 * in body_free), indented when <pretty>, compressed into one gzip member when <gzip> (the
 * caller decided: no threshold here). Returns it; the caller frees it with body_free.
 */
struct body *body_new(const struct iovec *iov, size_t n, bool pretty, bool gzip, body_done_fn *done,
                      void *ctx);

/* The body's content reader (an http_stream_fn; <b> is the struct body): writes up to <max>
 * bytes into <buf>; returns their count, HTTP_STREAM_END when all were written, or
 * HTTP_STREAM_ABORT when zlib fails (logged). */
ssize_t body_read(void *b, char *buf, size_t max);

/* Ends zlib, runs <done> and frees <b> (NULL: nothing). */
void body_free(struct body *b);

/*
 * Replies 200 application/json with the body gathered from <iov> (copied array, lent bytes
 * until <done>(<ctx>) runs, which also happens when the reply fails). Plain bodies keep
 * Content-Length and *owner is set to NULL; <pretty> ones are re-indented as they are read;
 * those above BODY_GZIP_THRESHOLD (as sent) are compressed when <gzip_offered>, with
 * Content-Encoding and Vary as kube-apiserver sets them. A streamed body is stored in *owner
 * before the reply is queued; the caller frees it with body_free at completion.
 */
void body_reply(struct http_req *req, const struct iovec *iov, size_t n, bool pretty,
                bool gzip_offered, body_done_fn *done, void *ctx, struct body **owner);

/*
 * Writes Status <st> the way ErrorNegotiated does: compact JSON and "\n" (http_reply_status),
 * or with <indent> re-indented without the newline (the pretty serializer, or WriteRawJSON's
 * MarshalIndent when no plain JSON clause was acceptable), Retry-After either way.
 */
void body_reply_status(struct http_req *req, bool indent, const struct kstatus *st);

#endif
