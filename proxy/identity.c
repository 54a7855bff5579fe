/*
 * identity.c - user.Info values (see identity.h): construction with caps, the
 * system:authenticated rule, and a length-prefixed binary encoding for the review cache.
 */
#include "proxy/identity.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/bug.h"
#include "cache/sbuf.h"

struct identity *identity_new(const char *user)
{
    struct identity *id;

    if (strlen(user) > IDENTITY_MAX_STR) {
        return NULL;
    }
    id = xcalloc(1, sizeof(*id));
    id->user = xstrdup(user);
    id->uid = xstrdup("");
    return id;
}

struct identity *identity_anonymous_new(void)
{
    struct identity *id = identity_new(IDENTITY_ANONYMOUS);

    (void)identity_add_group(id, IDENTITY_UNAUTHENTICATED); /* cannot exceed a cap */
    return id;
}

void identity_free(struct identity *id)
{
    if (id == NULL) {
        return;
    }
    for (size_t i = 0; i < id->n_groups; i++) {
        free(id->groups[i]);
    }
    for (size_t i = 0; i < id->n_extra; i++) {
        for (size_t j = 0; j < id->extra[i].n_values; j++) {
            free(id->extra[i].values[j]);
        }
        free(id->extra[i].values);
        free(id->extra[i].key);
    }
    free(id->groups);
    free(id->extra);
    free(id->uid);
    free(id->user);
    free(id);
}

struct identity *identity_dup(const struct identity *id)
{
    struct sbuf sb = {0};
    struct identity *copy;

    identity_encode(id, &sb);
    copy = identity_decode(sb.p, sb.len);
    sbuf_free(&sb);
    BUG_ON(copy == NULL); /* an identity always decodes from its own encoding */
    return copy;
}

int identity_set_uid(struct identity *id, const char *uid)
{
    if (strlen(uid) > IDENTITY_MAX_STR) {
        return -ENAMETOOLONG;
    }
    free(id->uid);
    id->uid = xstrdup(uid);
    return 0;
}

int identity_add_group(struct identity *id, const char *g)
{
    if (strlen(g) > IDENTITY_MAX_STR) {
        return -ENAMETOOLONG;
    }
    if (id->n_groups >= IDENTITY_MAX_GROUPS) {
        return -E2BIG;
    }
    id->groups = xrealloc(id->groups, (id->n_groups + 1) * sizeof(*id->groups));
    id->groups[id->n_groups++] = xstrdup(g);
    return 0;
}

/* The slot of <key>: its index when present (*found), else where it belongs. */
static size_t extra_find(const struct identity *id, const char *key, bool *found)
{
    size_t lo = 0, hi = id->n_extra;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(id->extra[mid].key, key);

        if (cmp == 0) {
            *found = true;
            return mid;
        }
        if (cmp < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *found = false;
    return lo;
}

/* The index of <key>, inserted when absent. Returns the index or -E2BIG. */
static int extra_slot(struct identity *id, const char *key)
{
    bool found;
    size_t at = extra_find(id, key, &found);

    if (found) {
        return (int)at;
    }
    if (id->n_extra >= IDENTITY_MAX_EXTRA_KEYS) {
        return -E2BIG;
    }
    id->extra = xrealloc(id->extra, (id->n_extra + 1) * sizeof(*id->extra));
    memmove(id->extra + at + 1, id->extra + at, (id->n_extra - at) * sizeof(*id->extra));
    id->extra[at].key = xstrdup(key);
    id->extra[at].values = NULL;
    id->extra[at].n_values = 0;
    id->n_extra++;
    return (int)at;
}

int identity_add_extra_key(struct identity *id, const char *key)
{
    int at;

    if (strlen(key) > IDENTITY_MAX_STR) {
        return -ENAMETOOLONG;
    }
    at = extra_slot(id, key);
    return at < 0 ? at : 0;
}

int identity_add_extra(struct identity *id, const char *key, const char *value)
{
    struct identity_extra *e;
    int at;

    if (strlen(key) > IDENTITY_MAX_STR || strlen(value) > IDENTITY_MAX_STR) {
        return -ENAMETOOLONG;
    }
    if (id->n_extra_values >= IDENTITY_MAX_EXTRA_VALUES) {
        return -E2BIG;
    }
    at = extra_slot(id, key);
    if (at < 0) {
        return at;
    }
    e = &id->extra[at];
    e->values = xrealloc(e->values, (e->n_values + 1) * sizeof(*e->values));
    e->values[e->n_values++] = xstrdup(value);
    id->n_extra_values++;
    return 0;
}

bool identity_has_group(const struct identity *id, const char *g)
{
    for (size_t i = 0; i < id->n_groups; i++) {
        if (strcmp(id->groups[i], g) == 0) {
            return true;
        }
    }
    return false;
}

int identity_add_authenticated(struct identity *id)
{
    if (strcmp(id->user, IDENTITY_ANONYMOUS) == 0 ||
        identity_has_group(id, IDENTITY_AUTHENTICATED) ||
        identity_has_group(id, IDENTITY_UNAUTHENTICATED)) {
        return 0;
    }
    return identity_add_group(id, IDENTITY_AUTHENTICATED);
}

/* ---- encoding ------------------------------------------------------------------------ */

static void enc_u32(struct sbuf *out, size_t v)
{
    char b[4] = {(char)(v >> 24), (char)(v >> 16), (char)(v >> 8), (char)v};

    sbuf_put(out, b, sizeof(b));
}

static void enc_str(struct sbuf *out, const char *s)
{
    size_t n = strlen(s);

    enc_u32(out, n);
    sbuf_put(out, s, n);
}

void identity_encode(const struct identity *id, struct sbuf *out)
{
    enc_str(out, id->user);
    enc_str(out, id->uid);
    enc_u32(out, id->n_groups);
    for (size_t i = 0; i < id->n_groups; i++) {
        enc_str(out, id->groups[i]);
    }
    enc_u32(out, id->n_extra);
    for (size_t i = 0; i < id->n_extra; i++) {
        enc_str(out, id->extra[i].key);
        enc_u32(out, id->extra[i].n_values);
        for (size_t j = 0; j < id->extra[i].n_values; j++) {
            enc_str(out, id->extra[i].values[j]);
        }
    }
}

/* A cursor over an encoding. */
struct dec {
    const unsigned char *p;
    size_t left;
};

static int dec_u32(struct dec *d, size_t *v)
{
    if (d->left < 4) {
        return -EPROTO;
    }
    *v = (size_t)d->p[0] << 24 | (size_t)d->p[1] << 16 | (size_t)d->p[2] << 8 | d->p[3];
    d->p += 4;
    d->left -= 4;
    return 0;
}

/* Reads one string, as a new NUL-terminated copy (the caller owns it), or NULL when it is
 * malformed; an embedded NUL could not round-trip, so it is refused. */
static char *dec_str(struct dec *d)
{
    size_t n;
    char *s;

    if (dec_u32(d, &n) != 0 || n > IDENTITY_MAX_STR || n > d->left ||
        memchr(d->p, '\0', n) != NULL) {
        return NULL;
    }
    s = xmalloc(n + 1);
    memcpy(s, d->p, n);
    s[n] = '\0';
    d->p += n;
    d->left -= n;
    return s;
}

static int dec_extra(struct dec *d, struct identity *id)
{
    size_t n_keys, n_values;
    char *key = NULL, *value = NULL;
    int rc = -EPROTO;

    if (dec_u32(d, &n_keys) != 0 || n_keys > IDENTITY_MAX_EXTRA_KEYS) {
        return -EPROTO;
    }
    for (size_t i = 0; i < n_keys; i++) {
        key = dec_str(d);
        /* keys must come sorted and unique, as identity_encode writes them */
        if (key == NULL || (i > 0 && strcmp(id->extra[id->n_extra - 1].key, key) >= 0) ||
            identity_add_extra_key(id, key) != 0 || dec_u32(d, &n_values) != 0) {
            goto out;
        }
        for (size_t j = 0; j < n_values; j++) {
            value = dec_str(d);
            if (value == NULL || identity_add_extra(id, key, value) != 0) {
                goto out;
            }
            free(value);
            value = NULL;
        }
        free(key);
        key = NULL;
    }
    rc = 0;
out:
    free(key);
    free(value);
    return rc;
}

struct identity *identity_decode(const void *data, size_t len)
{
    struct dec d = {data, len};
    struct identity *id = xcalloc(1, sizeof(*id));
    size_t n_groups;

    /* built field by field: every string is capped by dec_str, the group count here */
    id->user = dec_str(&d);
    id->uid = id->user != NULL ? dec_str(&d) : NULL;
    if (id->uid == NULL || dec_u32(&d, &n_groups) != 0 || n_groups > IDENTITY_MAX_GROUPS) {
        goto err;
    }
    if (n_groups > 0) {
        id->groups = xmalloc(n_groups * sizeof(*id->groups));
    }
    for (size_t i = 0; i < n_groups; i++) {
        char *g = dec_str(&d);

        if (g == NULL) {
            goto err;
        }
        id->groups[id->n_groups++] = g;
    }
    if (dec_extra(&d, id) != 0 || d.left != 0) {
        goto err;
    }
    return id;
err:
    identity_free(id);
    return NULL;
}
