/*
 * chunked.h - an incremental, in-place decoder for HTTP/1.1 chunked transfer coding.
 *
 * The load client reads into one shared buffer and decodes there: chunk-size lines, extensions,
 * chunk CRLFs and trailers are skipped and each run of payload bytes is handed on where it lies
 * (chunked_each), or slid to the front of the same buffer (chunked_decode), so no connection
 * needs a buffer of its own and no payload byte is copied on the way. Input may be split
 * anywhere (inside a hex size, between CR and LF); the state below carries over between calls.
 *
 *   in : "1a;x=y\r\n" <26 bytes> "\r\n" "0\r\n" "Trailer: v\r\n" "\r\n" [next response...]
 *   out: <26 bytes>                                  done=true, consumed stops before [next]
 *
 * A line ending may be CRLF or a bare LF (RFC 9112 lets recipients accept LF). Sizes above
 * CHUNKED_MAX_SIZE or more than 16 hex digits are -EPROTO.
 * The struct is embedded in a connection; one owner, no locking.
 */
#ifndef KWP_LOAD_CHUNKED_H
#define KWP_LOAD_CHUNKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CHUNKED_MAX_SIZE ((uint64_t)1 << 40) /* one chunk; anything larger is malformed */

struct chunked {
    /* private */
    uint64_t left;  /* payload bytes still due in the current chunk (state DATA) */
    uint8_t state;  /* enum in chunked.c */
    uint8_t digits; /* hex digits seen in the current size line */
    /* public, read-only */
    bool done; /* the last chunk and trailers were read: the body is complete */
};

/* Resets <c> for a new body. */
void chunked_init(struct chunked *c);

/*
 * Decodes buf[0..len) in place. The payload found is moved to buf[0..return value). Sets
 * *<consumed> to the input bytes used: len, or fewer when the body ended (c->done) and bytes of
 * whatever follows are left at buf[*consumed..len) (they are not touched by the move, since the
 * payload never outgrows the input before it).
 * Returns the payload length (0 is normal: framing only), or -EPROTO on malformed framing (then
 * the connection is unusable). Calling after done returns 0 and consumes nothing.
 */
ssize_t chunked_decode(struct chunked *c, char *buf, size_t len, size_t *consumed);

/* Takes payload bytes buf[0..n), n > 0, where they lie; non-zero stops the decoding there. */
typedef int chunked_run_fn(void *arg, char *p, size_t n);

/*
 * Decodes buf[0..len) like chunked_decode, but hands each run of payload to <fn> in place
 * instead of moving it. When <fn> returns non-zero the call returns at once, with *<consumed>
 * just past that run. Returns the payload bytes handed on, or -EPROTO.
 */
ssize_t chunked_each(struct chunked *c, char *buf, size_t len, size_t *consumed, chunked_run_fn *fn,
                     void *arg);

#endif
