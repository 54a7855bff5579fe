/*
 * identity.h - who a request acts as: kube-apiserver's user.Info (name, uid, groups, extra),
 * as authentication produced it (x509, TokenReview, anonymous) or impersonation replaced it.
 *
 * Invariants: every string is owned by the identity and NUL-terminated; extra keys are unique
 * and sorted bytewise (the order Go's json.Marshal writes a map in), values in the order
 * given; groups keep their order (a SubjectAccessReview is keyed by it). Caps below bound an
 * identity's size; an add past one fails and leaves the identity unchanged.
 * Threads: an identity is built by one thread, then only read (any number of threads may
 * read it). No locks. Depends on cache/bug.h and cache/sbuf.h only.
 */
#ifndef KWP_PROXY_IDENTITY_H
#define KWP_PROXY_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>

struct sbuf;

#define IDENTITY_MAX_STR 4096         /* bytes of one user name, uid, group, key or value */
#define IDENTITY_MAX_GROUPS 256       /* groups of one identity */
#define IDENTITY_MAX_EXTRA_KEYS 64    /* distinct extra keys */
#define IDENTITY_MAX_EXTRA_VALUES 256 /* extra values over all keys */

/* The names k8s.io/apiserver gives them (pkg/authentication/user). */
#define IDENTITY_ANONYMOUS "system:anonymous"
#define IDENTITY_AUTHENTICATED "system:authenticated"
#define IDENTITY_UNAUTHENTICATED "system:unauthenticated"

struct identity_extra {
    char *key;     /* read-only */
    char **values; /* read-only, n_values of them */
    size_t n_values;
};

/* Fields are public and read-only: change them only through the functions below. */
struct identity {
    char *user; /* never NULL (may be "" when a reviewer said so) */
    char *uid;  /* "" = none */
    char **groups;
    size_t n_groups;
    struct identity_extra *extra; /* sorted by key */
    size_t n_extra;
    size_t n_extra_values; /* sum of extra[i].n_values */
};

/* A new identity with user <user> (copied), no uid, groups or extra. NULL when <user> is
 * longer than IDENTITY_MAX_STR. The caller owns it (identity_free). */
struct identity *identity_new(const char *user);

/* The anonymous identity of --anonymous-auth: system:anonymous, [system:unauthenticated]. */
struct identity *identity_anonymous_new(void);

/* Frees <id> and its strings. NULL-safe. */
void identity_free(struct identity *id);

/* A deep copy (caller owns it). */
struct identity *identity_dup(const struct identity *id);

/* Sets the uid (copied; "" clears it). Returns 0 or -ENAMETOOLONG. */
int identity_set_uid(struct identity *id, const char *uid);

/* Appends group <g> (copied; duplicates are kept, as user.Info keeps them). Returns 0,
 * -ENAMETOOLONG, or -E2BIG past IDENTITY_MAX_GROUPS. */
int identity_add_group(struct identity *id, const char *g);

/* Appends <value> to extra key <key> (both copied), adding the key in sorted place when new.
 * Returns 0, -ENAMETOOLONG, or -E2BIG past IDENTITY_MAX_EXTRA_KEYS / _VALUES. */
int identity_add_extra(struct identity *id, const char *key, const char *value);

/* Adds the key with no values when absent (an "extra":{"k":[]} a reviewer sent). Same
 * returns as identity_add_extra. */
int identity_add_extra_key(struct identity *id, const char *key);

/* True when <id> has group <g>. */
bool identity_has_group(const struct identity *id, const char *g);

/*
 * k8s.io/apiserver's AuthenticatedGroupAdder, applied to every authenticated identity:
 * appends system:authenticated unless the user is system:anonymous or the groups already
 * hold system:authenticated or system:unauthenticated. Returns 0 or -E2BIG.
 */
int identity_add_authenticated(struct identity *id);

/*
 * Appends an unambiguous encoding of <id> to <out>: each string as a 4-byte big-endian
 * length and its bytes, each list as a 4-byte count and its items, in the order user, uid,
 * groups, extra (key, values). Two identities encode equal exactly when all fields are
 * equal. Used as a review cache key part and as the cached value of a TokenReview.
 */
void identity_encode(const struct identity *id, struct sbuf *out);

/* The inverse of identity_encode: a new identity, or NULL when <data> is not exactly one
 * encoding within the caps. */
struct identity *identity_decode(const void *data, size_t len);

#endif
