/*
 * review_cache.h - the cache in front of TokenReviews and SubjectAccessReviews: bounded,
 * TTL'd, shared by the HTTP worker threads, with single flight (concurrent misses for one key
 * send one review; the others wait for its answer).
 *
 * Keys are SHA-256 digests (OpenSSL EVP) of a per-cache random salt and a length-prefixed
 * encoding of everything the answer depends on, so a token is never stored, and no two
 * different inputs share an encoding. Values are opaque bytes, copied in and out.
 *
 *   lookup --HIT----------------------------------> value (a copy the caller frees)
 *          --SEND (flight, caller is the sender)--> send the review, then publish or abandon
 *          --WAIT (flight, someone else sends)----> review_cache_wait -> value, or
 *                                                   -ECANCELED (abandoned) / -ETIMEDOUT
 *
 * Entries expire after the TTL of their outcome (allowed or denied); at max_entries the
 * oldest entry is evicted. Threads: every function may be called from any thread; one mutex
 * guards the table, the age list, the flights and the counters, and is never held while a
 * review is sent. The injected clock is called under that mutex.
 */
#ifndef KWP_PROXY_REVIEW_CACHE_H
#define KWP_PROXY_REVIEW_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REVIEW_CACHE_KEY_LEN 32 /* SHA-256 */
#define REVIEW_CACHE_DEFAULT_MAX_ENTRIES 4096
#define REVIEW_CACHE_DEFAULT_MAX_FLIGHTS 1024
#define REVIEW_CACHE_MAX_VALUE (64 * 1024) /* larger values are answered, not cached */

struct review_cache;
struct review_flight;

struct review_cache_key {
    unsigned char d[REVIEW_CACHE_KEY_LEN];
};

/* Which TTL an answer gets. Authentication uses ALLOWED for "authenticated" and DENIED for
 * "not authenticated" (both --authn-cache-ttl); authorization --authz-cache-ttl and
 * --authz-denied-cache-ttl. */
enum review_outcome { REVIEW_OUTCOME_ALLOWED = 0, REVIEW_OUTCOME_DENIED };

/* Milliseconds on a monotonic clock. */
typedef int64_t review_cache_clock_fn(void *ctx);

struct review_cache_opts {
    int64_t ttl_allowed_ms; /* 0 = not cached (single flight still applies) */
    int64_t ttl_denied_ms;
    size_t max_entries;           /* 0 = REVIEW_CACHE_DEFAULT_MAX_ENTRIES */
    size_t max_flights;           /* concurrent flights; past it misses send without sharing;
                                     0 = REVIEW_CACHE_DEFAULT_MAX_FLIGHTS */
    review_cache_clock_fn *clock; /* NULL = CLOCK_MONOTONIC */
    void *clock_ctx;
};

#define REVIEW_CACHE_VAL_INLINE 256 /* values up to this size are copied without malloc */

/* A value out of the cache: <data> is a copy the caller releases with review_cache_val_fini
 * (NULL when len is 0): in <small> when it fits, so that a hit allocates nothing and holds
 * the lock only for a memcpy, else on the heap. While it points into <small> the struct must
 * not be copied by assignment; pass it by pointer. */
struct review_cache_val {
    enum review_outcome outcome;
    unsigned char *data;
    size_t len;
    unsigned char small[REVIEW_CACHE_VAL_INLINE]; /* private */
};

/* Counters since creation (for /metrics). */
struct review_cache_stats {
    uint64_t hits;      /* lookups answered from the cache */
    uint64_t misses;    /* lookups that made the caller the sender */
    uint64_t waits;     /* lookups that joined another thread's flight */
    uint64_t reviews;   /* flights published (reviews answered) */
    uint64_t abandoned; /* flights abandoned (reviews that failed) */
    uint64_t evictions; /* live entries dropped for room */
    uint64_t entries;   /* entries held now */
};

enum review_cache_result { REVIEW_CACHE_HIT = 0, REVIEW_CACHE_SEND, REVIEW_CACHE_WAIT };

/* A new cache (caller owns it; review_cache_free). Draws the key salt from OpenSSL's
 * RAND_bytes and fetches SHA-256 once. Returns NULL when either fails. */
struct review_cache *review_cache_new(const struct review_cache_opts *opts);

/* Frees the cache and its entries. No flight may be outstanding. NULL-safe. */
void review_cache_free(struct review_cache *c);

/*
 * Looks <key> up. Returns:
 *  - REVIEW_CACHE_HIT: <out> holds a copy of the value; *flight is NULL.
 *  - REVIEW_CACHE_SEND: no live entry and nobody is reviewing it: the caller must send the
 *    review and then call exactly one of review_cache_publish / review_cache_abandon with
 *    *flight, on every path (other threads wait for it).
 *  - REVIEW_CACHE_WAIT: another thread is sending it: the caller must call review_cache_wait
 *    with *flight (which releases it).
 * Expired entries found on the way are dropped.
 */
enum review_cache_result review_cache_lookup(struct review_cache *c,
                                             const struct review_cache_key *key,
                                             struct review_cache_val *out,
                                             struct review_flight **flight);

/*
 * Looks <key> up without joining or starting a flight: true with <out> filled (and a hit
 * counted) when a live entry is there, false otherwise (nothing counted, nothing changes).
 * For a caller that must not block (an HTTP worker): on false it hands the work to a
 * thread that may send or wait (review_cache_lookup).
 */
bool review_cache_peek(struct review_cache *c, const struct review_cache_key *key,
                       struct review_cache_val *out);

/*
 * Waits at most <timeout_ms> (real monotonic time, not the injected clock) for <flight>
 * (from a WAIT lookup) and releases it. Returns 0 with <out> filled when the sender
 * published, -ECANCELED when it abandoned (the caller may look up once more, which may make
 * it the sender, or fail closed), -ETIMEDOUT.
 */
int review_cache_wait(struct review_cache *c, struct review_flight *flight, int64_t timeout_ms,
                      struct review_cache_val *out);

/*
 * The sender's answer: stores a copy of data[0..len) under the flight's key with the TTL of
 * <outcome> (replacing any entry there, evicting the oldest at max_entries), hands a copy to
 * every waiter, and releases <flight>. A TTL of 0 or len > REVIEW_CACHE_MAX_VALUE only skips
 * the store. Returns 0, or -E2BIG when the value was too large to store.
 */
int review_cache_publish(struct review_cache *c, struct review_flight *flight,
                         enum review_outcome outcome, const void *data, size_t len);

/* The sender could not get an answer (the reviewer is down, the answer was malformed):
 * nothing is stored, waiters get -ECANCELED, <flight> is released. */
void review_cache_abandon(struct review_cache *c, struct review_flight *flight);

/* Drops every entry (flights continue). */
void review_cache_clear(struct review_cache *c);

void review_cache_stats(struct review_cache *c, struct review_cache_stats *out);

/* Frees out->data (unless it is out->small) and empties <out>. */
void review_cache_val_fini(struct review_cache_val *out);

/* ---- keys ------------------------------------------------------------------------------ */

#define REVIEW_CACHE_HASH_BUF 512 /* key bytes gathered before they go through SHA-256 */

/* A key being built. Private; on the caller's stack between _begin and _end. The encoded
 * fields are gathered in <buf> and digested in one go (one SHA-256 update for a typical key,
 * on a digest context each thread keeps for reuse); a key longer than <buf> is fed piece by
 * piece. _end wipes <buf>, which may hold a token. */
struct review_cache_hash {
    const void *sha256; /* the cache's fetched EVP_MD */
    void *md;           /* EVP_MD_CTX (the thread's idle one), once started; else NULL */
    int err;            /* first OpenSSL failure */
    size_t len;         /* bytes in buf */
    unsigned char buf[REVIEW_CACHE_HASH_BUF];
};

/* Starts a key: the cache's salt, then <domain> (what kind of review, e.g. "tokenreview/v1",
 * so that keys of different reviews never meet). Allocates nothing for a key that fits in
 * <buf>. Returns 0, or -ENOMEM / -EIO when a long domain had to go to OpenSSL and that failed
 * (then _end still must be called, and fails the same way). */
int review_cache_hash_begin(struct review_cache_hash *h, const struct review_cache *c,
                            const char *domain);

/* Adds data[0..len) preceded by its length (8 bytes, big-endian): a field boundary can
 * never move, so ("a", "bc") and ("ab", "c") hash differently. */
void review_cache_hash_bytes(struct review_cache_hash *h, const void *data, size_t len);

/* review_cache_hash_bytes of a C string. */
void review_cache_hash_str(struct review_cache_hash *h, const char *s);

/* Adds an integer (8 bytes, big-endian): a count, a tag, a flag. */
void review_cache_hash_u64(struct review_cache_hash *h, uint64_t v);

/* Finishes the digest into <out> and frees the context. Returns 0 or -EIO when any OpenSSL
 * step failed (the caller must then not use the cache). */
int review_cache_hash_end(struct review_cache_hash *h, struct review_cache_key *out);

#endif
