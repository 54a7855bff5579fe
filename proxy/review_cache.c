/*
 * review_cache.c - TTL cache with single flight for auth reviews (see review_cache.h).
 *
 * Layout: a chained hash table of entries (buckets indexed by the digest's first 8 bytes:
 * SHA-256 output is uniform, so no further hashing), a doubly linked age list of the same
 * entries (oldest first: the eviction order), and a second small chained table of flights.
 * A flight is refcounted (its sender plus each waiter) and outlives its table slot: publish
 * and abandon unlink it at once, so later lookups start afresh, while waiters still read its
 * answer. Everything is guarded by c->mu; each flight has its own condition variable.
 */
#include "proxy/review_cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "cache/bug.h"

#define SALT_LEN 32
#define FLIGHT_BUCKETS 256

struct rc_entry {
    struct review_cache_key key;
    struct rc_entry *hnext; /* bucket chain */
    struct rc_entry *older; /* age list */
    struct rc_entry *newer;
    int64_t expires_ms; /* injected clock */
    enum review_outcome outcome;
    size_t len;
    unsigned char data[];
};

enum flight_state { FLIGHT_PENDING = 0, FLIGHT_DONE, FLIGHT_ABANDONED };

struct review_flight {
    struct review_cache_key key;
    struct review_flight *hnext; /* flight chain, while registered */
    unsigned refs;               /* the sender's + one per waiter; under c->mu */
    enum flight_state state;     /* under c->mu */
    bool registered;             /* in c->flights (false past max_flights) */
    pthread_cond_t cond;         /* signalled once, when state leaves PENDING */
    enum review_outcome outcome; /* DONE: the answer, for waiters */
    unsigned char *data;
    size_t len;
};

struct review_cache {
    pthread_mutex_t mu;
    struct review_cache_opts opts;                 /* immutable */
    unsigned char salt[SALT_LEN];                  /* immutable */
    EVP_MD *sha256;                                /* immutable: fetched once, not per key */
    struct rc_entry **buckets;                     /* under mu */
    size_t n_buckets;                              /* power of two, immutable */
    struct review_flight *flights[FLIGHT_BUCKETS]; /* under mu */
    struct rc_entry *oldest;                       /* under mu */
    struct rc_entry *newest;                       /* under mu */
    size_t n_entries;                              /* under mu */
    size_t n_flights;                              /* registered ones; under mu */
    struct review_cache_stats stats;               /* under mu */
};

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t now_ms(const struct review_cache *c)
{
    return c->opts.clock != NULL ? c->opts.clock(c->opts.clock_ctx) : mono_ms();
}

static uint64_t key_hash(const struct review_cache_key *k)
{
    uint64_t h;

    memcpy(&h, k->d, sizeof(h));
    return h;
}

static bool key_eq(const struct review_cache_key *a, const struct review_cache_key *b)
{
    return memcmp(a->d, b->d, sizeof(a->d)) == 0;
}

struct review_cache *review_cache_new(const struct review_cache_opts *opts)
{
    struct review_cache *c = xcalloc(1, sizeof(*c));
    size_t want;

    c->opts = *opts;
    if (c->opts.max_entries == 0) {
        c->opts.max_entries = REVIEW_CACHE_DEFAULT_MAX_ENTRIES;
    }
    if (c->opts.max_flights == 0) {
        c->opts.max_flights = REVIEW_CACHE_DEFAULT_MAX_FLIGHTS;
    }
    c->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    if (c->sha256 == NULL || RAND_bytes(c->salt, sizeof(c->salt)) != 1) {
        EVP_MD_free(c->sha256); /* NULL-safe */
        free(c);
        return NULL;
    }
    want = c->opts.max_entries;
    c->n_buckets = 16;
    while (c->n_buckets < want && c->n_buckets < ((size_t)1 << 24)) {
        c->n_buckets *= 2;
    }
    c->buckets = xcalloc(c->n_buckets, sizeof(*c->buckets));
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

/* ---- entries (under c->mu) ----------------------------------------------------------- */

static struct rc_entry **entry_slot(struct review_cache *c, const struct review_cache_key *key)
{
    struct rc_entry **pp = &c->buckets[key_hash(key) & (c->n_buckets - 1)];

    while (*pp != NULL && !key_eq(&(*pp)->key, key)) {
        pp = &(*pp)->hnext;
    }
    return pp;
}

static void entry_remove(struct review_cache *c, struct rc_entry *e)
{
    struct rc_entry **pp = entry_slot(c, &e->key);

    BUG_ON(*pp != e);
    *pp = e->hnext;
    if (e->older != NULL) {
        e->older->newer = e->newer;
    } else {
        c->oldest = e->newer;
    }
    if (e->newer != NULL) {
        e->newer->older = e->older;
    } else {
        c->newest = e->older;
    }
    c->n_entries--;
    free(e);
}

static void entry_insert(struct review_cache *c, const struct review_cache_key *key,
                         enum review_outcome outcome, const void *data, size_t len, int64_t now)
{
    int64_t ttl =
        outcome == REVIEW_OUTCOME_ALLOWED ? c->opts.ttl_allowed_ms : c->opts.ttl_denied_ms;
    struct rc_entry **pp = entry_slot(c, key);
    struct rc_entry *e;

    if (*pp != NULL) {
        entry_remove(c, *pp);
    }
    while (c->n_entries >= c->opts.max_entries && c->oldest != NULL) {
        if (c->oldest->expires_ms > now) {
            c->stats.evictions++;
        }
        entry_remove(c, c->oldest);
    }
    e = xmalloc(sizeof(*e) + len);
    e->key = *key;
    e->expires_ms = now + ttl;
    e->outcome = outcome;
    e->len = len;
    if (len > 0) {
        memcpy(e->data, data, len);
    }
    pp = entry_slot(c, key);
    e->hnext = *pp;
    *pp = e;
    e->older = c->newest;
    e->newer = NULL;
    if (c->newest != NULL) {
        c->newest->newer = e;
    } else {
        c->oldest = e;
    }
    c->newest = e;
    c->n_entries++;
}

static void val_reset(struct review_cache_val *out)
{
    out->outcome = REVIEW_OUTCOME_ALLOWED;
    out->data = NULL;
    out->len = 0;
}

static void val_copy(struct review_cache_val *out, enum review_outcome outcome,
                     const unsigned char *data, size_t len)
{
    out->outcome = outcome;
    out->len = len;
    out->data = NULL;
    if (len > 0) {
        out->data = len <= sizeof(out->small) ? out->small : xmalloc(len);
        memcpy(out->data, data, len);
    }
}

/* ---- flights (under c->mu) ----------------------------------------------------------- */

static struct review_flight **flight_slot(struct review_cache *c,
                                          const struct review_cache_key *key)
{
    struct review_flight **pp = &c->flights[key_hash(key) % FLIGHT_BUCKETS];

    while (*pp != NULL && !key_eq(&(*pp)->key, key)) {
        pp = &(*pp)->hnext;
    }
    return pp;
}

static struct review_flight *flight_new(struct review_cache *c, const struct review_cache_key *key)
{
    struct review_flight *f = xcalloc(1, sizeof(*f));
    pthread_condattr_t attr;

    f->key = *key;
    f->refs = 1;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&f->cond, &attr);
    pthread_condattr_destroy(&attr);
    if (c->n_flights < c->opts.max_flights) {
        struct review_flight **pp = flight_slot(c, key);

        f->hnext = *pp;
        *pp = f;
        f->registered = true;
        c->n_flights++;
    }
    return f;
}

/* Ends a pending flight: out of the table (later lookups start afresh), waiters woken. */
static void flight_finish(struct review_cache *c, struct review_flight *f, enum flight_state state)
{
    BUG_ON(f->state != FLIGHT_PENDING);
    if (f->registered) {
        struct review_flight **pp = flight_slot(c, &f->key);

        BUG_ON(*pp != f);
        *pp = f->hnext;
        f->registered = false;
        c->n_flights--;
    }
    f->state = state;
    pthread_cond_broadcast(&f->cond);
}

static void flight_unref(struct review_flight *f)
{
    BUG_ON(f->refs == 0);
    if (--f->refs > 0) {
        return;
    }
    pthread_cond_destroy(&f->cond);
    free(f->data);
    free(f);
}

/* ---- API ----------------------------------------------------------------------------- */

/* A live <e> (NULL: none) copied to <out> and counted as a hit. Under c->mu. */
static bool hit_locked(struct review_cache *c, const struct rc_entry *e,
                       struct review_cache_val *out)
{
    if (e == NULL || e->expires_ms <= now_ms(c)) {
        return false;
    }
    val_copy(out, e->outcome, e->data, e->len);
    c->stats.hits++;
    return true;
}

enum review_cache_result review_cache_lookup(struct review_cache *c,
                                             const struct review_cache_key *key,
                                             struct review_cache_val *out,
                                             struct review_flight **flight)
{
    enum review_cache_result res;
    struct rc_entry *e;
    struct review_flight *f;

    val_reset(out);
    *flight = NULL;
    pthread_mutex_lock(&c->mu);
    e = *entry_slot(c, key);
    if (hit_locked(c, e, out)) {
        res = REVIEW_CACHE_HIT;
        goto out;
    }
    if (e != NULL) {
        entry_remove(c, e);
    }
    f = *flight_slot(c, key);
    if (f != NULL) {
        f->refs++;
        c->stats.waits++;
        *flight = f;
        res = REVIEW_CACHE_WAIT;
        goto out;
    }
    *flight = flight_new(c, key);
    c->stats.misses++;
    res = REVIEW_CACHE_SEND;
out:
    pthread_mutex_unlock(&c->mu);
    return res;
}

bool review_cache_peek(struct review_cache *c, const struct review_cache_key *key,
                       struct review_cache_val *out)
{
    struct rc_entry *e;
    bool hit = false;

    val_reset(out);
    pthread_mutex_lock(&c->mu);
    e = *entry_slot(c, key);
    hit = hit_locked(c, e, out);
    pthread_mutex_unlock(&c->mu);
    return hit;
}

int review_cache_wait(struct review_cache *c, struct review_flight *flight, int64_t timeout_ms,
                      struct review_cache_val *out)
{
    struct timespec deadline;
    int64_t ns;
    int rc;

    val_reset(out);
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    ns = deadline.tv_nsec + (timeout_ms > 0 ? timeout_ms % 1000 : 0) * 1000000;
    deadline.tv_sec += (timeout_ms > 0 ? timeout_ms / 1000 : 0) + ns / 1000000000;
    deadline.tv_nsec = ns % 1000000000;
    pthread_mutex_lock(&c->mu);
    while (flight->state == FLIGHT_PENDING) {
        if (pthread_cond_timedwait(&flight->cond, &c->mu, &deadline) == ETIMEDOUT) {
            break;
        }
    }
    if (flight->state == FLIGHT_DONE) {
        val_copy(out, flight->outcome, flight->data, flight->len);
        rc = 0;
    } else {
        rc = flight->state == FLIGHT_ABANDONED ? -ECANCELED : -ETIMEDOUT;
    }
    flight_unref(flight);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int review_cache_publish(struct review_cache *c, struct review_flight *flight,
                         enum review_outcome outcome, const void *data, size_t len)
{
    int64_t ttl =
        outcome == REVIEW_OUTCOME_ALLOWED ? c->opts.ttl_allowed_ms : c->opts.ttl_denied_ms;
    int rc = 0;

    pthread_mutex_lock(&c->mu);
    if (flight->refs > 1) {
        /* waiters read the answer from the flight: the entry may be gone by then */
        flight->outcome = outcome;
        flight->len = len;
        if (len > 0) {
            flight->data = xmalloc(len);
            memcpy(flight->data, data, len);
        }
    }
    if (len > REVIEW_CACHE_MAX_VALUE) {
        rc = -E2BIG;
    } else if (ttl > 0) {
        entry_insert(c, &flight->key, outcome, data, len, now_ms(c));
    }
    c->stats.reviews++;
    flight_finish(c, flight, FLIGHT_DONE);
    flight_unref(flight);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

void review_cache_abandon(struct review_cache *c, struct review_flight *flight)
{
    pthread_mutex_lock(&c->mu);
    c->stats.abandoned++;
    flight_finish(c, flight, FLIGHT_ABANDONED);
    flight_unref(flight);
    pthread_mutex_unlock(&c->mu);
}

void review_cache_clear(struct review_cache *c)
{
    pthread_mutex_lock(&c->mu);
    for (struct rc_entry *e = c->oldest, *next; e != NULL; e = next) {
        next = e->newer; /* read before entry_remove frees e */
        entry_remove(c, e);
    }
    pthread_mutex_unlock(&c->mu);
}

void review_cache_stats(struct review_cache *c, struct review_cache_stats *out)
{
    pthread_mutex_lock(&c->mu);
    *out = c->stats;
    out->entries = c->n_entries;
    pthread_mutex_unlock(&c->mu);
}

void review_cache_free(struct review_cache *c)
{
    if (c == NULL) {
        return;
    }
    review_cache_clear(c);
    BUG_ON(c->n_flights != 0);
    pthread_mutex_destroy(&c->mu);
    EVP_MD_free(c->sha256);
    free(c->buckets);
    free(c);
}

void review_cache_val_fini(struct review_cache_val *out)
{
    if (out->data != out->small) {
        free(out->data);
    }
    val_reset(out);
}

/* ---- keys ---------------------------------------------------------------------------- */

/*
 * One idle digest context per thread (a pthread key, freed when the thread exits): a key
 * reuses it instead of the new context EVP_Digest makes and frees every time, and without a
 * lock the HTTP workers would share. Taken out of the slot while in use, so a key started
 * inside another on the same thread gets a context of its own.
 */
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static pthread_key_t ctx_key;
static bool ctx_key_ok;

static void ctx_destroy(void *x)
{
    EVP_MD_CTX_free(x);
}

static void ctx_key_init(void)
{
    ctx_key_ok = pthread_key_create(&ctx_key, ctx_destroy) == 0;
}

/* This thread's idle context, or a new one (NULL when OpenSSL cannot allocate it). */
static EVP_MD_CTX *ctx_get(void)
{
    EVP_MD_CTX *x = NULL;

    pthread_once(&ctx_once, ctx_key_init);
    if (ctx_key_ok) {
        x = pthread_getspecific(ctx_key);
        if (x != NULL) {
            (void)pthread_setspecific(ctx_key, NULL);
        }
    }
    return x != NULL ? x : EVP_MD_CTX_new();
}

/* Gives <x> back to this thread's slot after a digest that succeeded; a failed digest's
 * context (pass <ok> false), or one the slot has no room for, is freed. NULL-safe. */
static void ctx_put(EVP_MD_CTX *x, bool ok)
{
    if (x != NULL && ok && ctx_key_ok && pthread_getspecific(ctx_key) == NULL &&
        pthread_setspecific(ctx_key, x) == 0) {
        return;
    }
    EVP_MD_CTX_free(x); /* NULL-safe */
}

/* Feeds buf[0..len) to a digest context (started on first use). Returns 0 or an errno. */
static int hash_flush(struct review_cache_hash *h)
{
    if (h->md == NULL) {
        h->md = ctx_get();
        if (h->md == NULL) {
            return -ENOMEM;
        }
        if (EVP_DigestInit_ex(h->md, h->sha256, NULL) != 1) {
            return -EIO;
        }
    }
    if (h->len > 0 && EVP_DigestUpdate(h->md, h->buf, h->len) != 1) {
        return -EIO;
    }
    OPENSSL_cleanse(h->buf, h->len);
    h->len = 0;
    return 0;
}

static void hash_raw(struct review_cache_hash *h, const void *data, size_t len)
{
    if (h->err != 0 || len == 0) {
        return;
    }
    if (len > sizeof(h->buf) - h->len) {
        h->err = hash_flush(h);
        if (h->err == 0 && len > sizeof(h->buf) &&
            EVP_DigestUpdate(h->md, data, len) != 1) { /* a long field goes straight in */
            h->err = -EIO;
        }
        if (h->err != 0 || len > sizeof(h->buf)) {
            return;
        }
    }
    memcpy(h->buf + h->len, data, len);
    h->len += len;
}

int review_cache_hash_begin(struct review_cache_hash *h, const struct review_cache *c,
                            const char *domain)
{
    h->sha256 = c->sha256;
    h->md = NULL;
    h->err = 0;
    h->len = 0;
    hash_raw(h, c->salt, sizeof(c->salt));
    review_cache_hash_str(h, domain);
    return h->err;
}

void review_cache_hash_u64(struct review_cache_hash *h, uint64_t v)
{
    unsigned char b[8];

    for (int i = 0; i < 8; i++) {
        b[i] = (unsigned char)(v >> (56 - 8 * i));
    }
    hash_raw(h, b, sizeof(b));
}

void review_cache_hash_bytes(struct review_cache_hash *h, const void *data, size_t len)
{
    review_cache_hash_u64(h, len);
    hash_raw(h, data, len);
}

void review_cache_hash_str(struct review_cache_hash *h, const char *s)
{
    review_cache_hash_bytes(h, s, strlen(s));
}

int review_cache_hash_end(struct review_cache_hash *h, struct review_cache_key *out)
{
    unsigned int n = 0;
    int rc = h->err;

    /* a key that fitted in buf is digested here in one update; a longer one is flushed */
    if (rc == 0) {
        rc = hash_flush(h);
    }
    if (rc == 0 && (EVP_DigestFinal_ex(h->md, out->d, &n) != 1 || n != sizeof(out->d))) {
        rc = -EIO;
    }
    OPENSSL_cleanse(h->buf, h->len);
    h->len = 0;
    ctx_put(h->md, rc == 0);
    h->md = NULL;
    if (rc != 0) {
        memset(out, 0, sizeof(*out));
    }
    return rc;
}
