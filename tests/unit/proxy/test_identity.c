/*
 * test_identity.c - proxy/identity.h: construction, the system:authenticated rule of
 * AuthenticatedGroupAdder, caps with their errors, sorted extra, and the encoding the review
 * cache keys and stores (round trip, unambiguous, strict decode).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/sbuf.h"
#include "proxy/identity.h"

static bool encodings_equal(const struct identity *a, const struct identity *b)
{
    struct sbuf x = {0}, y = {0};
    bool eq;

    identity_encode(a, &x);
    identity_encode(b, &y);
    eq = x.len == y.len && memcmp(x.p, y.p, x.len) == 0;
    sbuf_free(&x);
    sbuf_free(&y);
    return eq;
}

Test(identity, new_and_anonymous)
{
    struct identity *id = identity_new("alice");
    struct identity *anon = identity_anonymous_new();

    cr_assert_not_null(id);
    cr_expect_str_eq(id->user, "alice");
    cr_expect_str_eq(id->uid, "");
    cr_expect_eq(id->n_groups, 0);
    cr_expect_eq(id->n_extra, 0);
    cr_expect_str_eq(anon->user, "system:anonymous");
    cr_assert_eq(anon->n_groups, 1);
    cr_expect_str_eq(anon->groups[0], "system:unauthenticated");
    identity_free(id);
    identity_free(anon);
    identity_free(NULL);
}

Test(identity, authenticated_group_adder)
{
    struct identity *id = identity_new("alice");
    struct identity *anon = identity_anonymous_new();
    struct identity *unauth = identity_new("bob");

    cr_assert_eq(identity_add_group(id, "devs"), 0);
    cr_assert_eq(identity_add_authenticated(id), 0);
    cr_assert_eq(id->n_groups, 2);
    cr_expect_str_eq(id->groups[1], "system:authenticated");
    cr_assert_eq(identity_add_authenticated(id), 0); /* already there: unchanged */
    cr_expect_eq(id->n_groups, 2);
    cr_assert_eq(identity_add_authenticated(anon), 0);
    cr_expect_eq(anon->n_groups, 1);
    cr_assert_eq(identity_add_group(unauth, "system:unauthenticated"), 0);
    cr_assert_eq(identity_add_authenticated(unauth), 0);
    cr_expect_eq(unauth->n_groups, 1);
    cr_expect(identity_has_group(id, "devs"));
    cr_expect_not(identity_has_group(id, "dev"));
    identity_free(id);
    identity_free(anon);
    identity_free(unauth);
}

Test(identity, extra_is_sorted_and_merged)
{
    struct identity *id = identity_new("alice");

    cr_assert_eq(identity_add_extra(id, "zeta", "1"), 0);
    cr_assert_eq(identity_add_extra(id, "alpha", "2"), 0);
    cr_assert_eq(identity_add_extra(id, "zeta", "3"), 0);
    cr_assert_eq(identity_add_extra_key(id, "mid"), 0);
    cr_assert_eq(identity_add_extra_key(id, "alpha"), 0);
    cr_assert_eq(id->n_extra, 3);
    cr_expect_str_eq(id->extra[0].key, "alpha");
    cr_expect_str_eq(id->extra[1].key, "mid");
    cr_expect_eq(id->extra[1].n_values, 0);
    cr_expect_str_eq(id->extra[2].key, "zeta");
    cr_assert_eq(id->extra[2].n_values, 2);
    cr_expect_str_eq(id->extra[2].values[0], "1");
    cr_expect_str_eq(id->extra[2].values[1], "3");
    cr_expect_eq(id->n_extra_values, 3);
    identity_free(id);
}

Test(identity, caps)
{
    static char long_str[IDENTITY_MAX_STR + 2];
    struct identity *id = identity_new("alice");
    char name[32];

    memset(long_str, 'x', IDENTITY_MAX_STR + 1);
    cr_expect_null(identity_new(long_str));
    cr_expect_eq(identity_add_group(id, long_str), -ENAMETOOLONG);
    cr_expect_eq(identity_set_uid(id, long_str), -ENAMETOOLONG);
    cr_expect_eq(identity_add_extra(id, "k", long_str), -ENAMETOOLONG);
    cr_expect_eq(identity_add_extra(id, long_str, "v"), -ENAMETOOLONG);
    long_str[IDENTITY_MAX_STR] = '\0';
    cr_expect_eq(identity_add_group(id, long_str), 0); /* exactly the cap fits */
    for (int i = 1; i < IDENTITY_MAX_GROUPS; i++) {
        cr_assert_eq(identity_add_group(id, "g"), 0);
    }
    cr_expect_eq(identity_add_group(id, "one-too-many"), -E2BIG);
    cr_expect_eq(identity_add_authenticated(id), -E2BIG);
    cr_expect_eq(id->n_groups, IDENTITY_MAX_GROUPS);
    for (int i = 0; i < IDENTITY_MAX_EXTRA_KEYS; i++) {
        snprintf(name, sizeof(name), "k%03d", i);
        cr_assert_eq(identity_add_extra(id, name, "v"), 0);
    }
    cr_expect_eq(identity_add_extra(id, "new-key", "v"), -E2BIG);
    cr_expect_eq(identity_add_extra_key(id, "new-key"), -E2BIG);
    for (int i = IDENTITY_MAX_EXTRA_KEYS; i < IDENTITY_MAX_EXTRA_VALUES; i++) {
        cr_assert_eq(identity_add_extra(id, "k000", "more"), 0);
    }
    cr_expect_eq(identity_add_extra(id, "k000", "one-too-many"), -E2BIG);
    cr_expect_eq(id->n_extra_values, IDENTITY_MAX_EXTRA_VALUES);
    identity_free(id);
}

Test(identity, encode_round_trip_and_dup)
{
    struct identity *id = identity_new("alice");
    struct identity *copy, *decoded;
    struct sbuf enc = {0};

    cr_assert_eq(identity_set_uid(id, "42"), 0);
    cr_assert_eq(identity_add_group(id, "devs"), 0);
    cr_assert_eq(identity_add_group(id, ""), 0);
    cr_assert_eq(identity_add_extra(id, "k", "v"), 0);
    cr_assert_eq(identity_add_extra(id, "k", "w"), 0);
    cr_assert_eq(identity_add_extra_key(id, "empty"), 0);
    identity_encode(id, &enc);
    decoded = identity_decode(enc.p, enc.len);
    cr_assert_not_null(decoded);
    cr_expect(encodings_equal(id, decoded));
    cr_expect_str_eq(decoded->uid, "42");
    cr_expect_str_eq(decoded->extra[1].values[1], "w");
    copy = identity_dup(id);
    cr_expect(encodings_equal(id, copy));
    cr_expect_neq(copy->user, id->user);
    identity_free(copy);
    identity_free(decoded);
    identity_free(id);
    sbuf_free(&enc);
}

Test(identity, encoding_is_unambiguous)
{
    struct identity *a = identity_new("a");
    struct identity *b = identity_new("ab");
    struct identity *c = identity_new("a");
    struct identity *d = identity_new("a");

    cr_assert_eq(identity_add_group(a, "bc"), 0);
    cr_assert_eq(identity_add_group(b, "c"), 0);
    cr_expect_not(encodings_equal(a, b));
    /* a group vs an extra key of the same text */
    cr_assert_eq(identity_add_group(c, "x"), 0);
    cr_assert_eq(identity_add_extra_key(d, "x"), 0);
    cr_expect_not(encodings_equal(c, d));
    /* group order is part of the identity (a SAR spec is keyed by it) */
    cr_assert_eq(identity_add_group(a, "z"), 0);
    identity_free(c);
    c = identity_new("a");
    cr_assert_eq(identity_add_group(c, "z"), 0);
    cr_assert_eq(identity_add_group(c, "bc"), 0);
    cr_expect_not(encodings_equal(a, c));
    identity_free(a);
    identity_free(b);
    identity_free(c);
    identity_free(d);
}

Test(identity, decode_is_strict)
{
    struct identity *id = identity_new("alice");
    struct sbuf enc = {0};
    char *bad;

    cr_assert_eq(identity_add_extra(id, "a", "1"), 0);
    cr_assert_eq(identity_add_extra(id, "b", "2"), 0);
    identity_encode(id, &enc);
    for (size_t cut = 0; cut < enc.len; cut++) {
        cr_expect_null(identity_decode(enc.p, cut), "prefix %zu", cut);
    }
    sbuf_put(&enc, "x", 1); /* trailing byte */
    cr_expect_null(identity_decode(enc.p, enc.len));
    enc.len--;
    bad = malloc(enc.len);
    memcpy(bad, enc.p, enc.len);
    /* keys out of order: swap "a" and "b" (both one byte, same layout) */
    for (size_t i = 0; i + 5 < enc.len; i++) {
        if (memcmp(bad + i, "\0\0\0\1a", 5) == 0) {
            bad[i + 4] = 'c';
        }
    }
    cr_expect_null(identity_decode(bad, enc.len));
    /* an embedded NUL in the user */
    memcpy(bad, enc.p, enc.len);
    bad[5] = '\0';
    cr_expect_null(identity_decode(bad, enc.len));
    free(bad);
    sbuf_free(&enc);
    identity_free(id);
}
