/*
 * fuzz_impersonate.c - proxy/impersonate.c both ways.
 *
 * An input is request headers, one "Name:value" a line (no ':' = an empty value), at most
 * MAX_HDRS of them. Invariants:
 *  - impersonate_parse returns 0, -EINVAL (groups, extra or uid without a user: the error
 *    text is Go's "requested [...]") or -E2BIG (a cap: nothing comes out); the error text is
 * terminated.
 *  - on an impersonation: one check per user, group header, extra value and non-empty uid,
 *    every one verb "impersonate" on a resource kube-apiserver knows for it, the first on the
 *    user (or its service account); the identity holds exactly one of system:authenticated /
 *    system:unauthenticated or is anonymous with the latter.
 *  - impersonate_headers of that identity either refuses (-EINVAL, nothing emitted) or emits
 *    header lines which, parsed again, give the same identity byte for byte whenever no extra
 *    key holds an upper-case letter (kube-apiserver lowercases header keys, client-go does
 *    not escape them: such keys are lowercased on the way, as they would be by client-go).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/sbuf.h"
#include "proxy/identity.h"
#include "proxy/impersonate.h"
#include "tests/fuzz/fuzz.h"

#define MAX_HDRS 64

/* The headers impersonate_headers emitted, kept for a second parse. */
struct emitted {
    struct impersonate_hdr h[IDENTITY_MAX_GROUPS + IDENTITY_MAX_EXTRA_VALUES + 2];
    size_t n;
};

static int keep(void *ctx, const char *name, const char *value)
{
    struct emitted *e = ctx;

    CHECK(e->n < sizeof(e->h) / sizeof(e->h[0]));
    e->h[e->n].name = strdup(name);
    e->h[e->n].value = value; /* borrowed from the identity, which outlives the check */
    CHECK(e->h[e->n].name != NULL);
    e->n++;
    return 0;
}

static bool keys_lowercase(const struct identity *id)
{
    for (size_t i = 0; i < id->n_extra; i++) {
        for (const char *p = id->extra[i].key; *p != '\0'; p++) {
            if (*p >= 'A' && *p <= 'Z') {
                return false;
            }
        }
    }
    return true;
}

static void check_round_trip(const struct identity *id)
{
    struct emitted *e = calloc(1, sizeof(*e));
    struct impersonate_req again;
    struct sbuf a = {0}, b = {0};
    char err[256];
    int rc;

    CHECK(e != NULL);
    rc = impersonate_headers(id, keep, e);
    CHECK(rc == 0 || rc == -EINVAL);
    CHECK(rc == 0 || e->n == 0);
    if (rc == 0) {
        CHECK(e->n >= 1 && strcmp(e->h[0].name, IMPERSONATE_USER) == 0);
        rc = impersonate_parse(e->h, e->n, &again, err, sizeof(err));
        /* escaping can grow a key threefold past IMPERSONATE_MAX_HEADER_BYTES */
        CHECK(rc == 0 || rc == -E2BIG);
        if (rc == 0 && keys_lowercase(id)) {
            CHECK(again.as != NULL);
            identity_encode(id, &a);
            identity_encode(again.as, &b);
            CHECK(a.len == b.len && memcmp(a.p, b.p, a.len) == 0);
        }
        impersonate_req_fini(&again);
    }
    for (size_t i = 0; i < e->n; i++) {
        free((char *)e->h[i].name);
    }
    free(e);
    sbuf_free(&a);
    sbuf_free(&b);
}

static void check_result(const struct impersonate_req *r)
{
    const struct identity *id = r->as;
    bool anon = strcmp(id->user, IDENTITY_ANONYMOUS) == 0;
    bool authd = identity_has_group(id, IDENTITY_AUTHENTICATED);
    bool unauthd = identity_has_group(id, IDENTITY_UNAUTHENTICATED);

    CHECK(r->n_checks >= 1);
    CHECK(strcmp(r->checks[0].resource, "users") == 0 ||
          strcmp(r->checks[0].resource, "serviceaccounts") == 0);
    for (size_t i = 0; i < r->n_checks; i++) {
        const struct review_attrs *a = &r->checks[i];
        bool authn = strcmp(a->group, "authentication.k8s.io") == 0;

        CHECK(a->is_resource && strcmp(a->verb, "impersonate") == 0);
        CHECK(a->name != NULL && a->ns != NULL && a->subresource != NULL);
        CHECK(authn ==
              (strcmp(a->resource, "uids") == 0 || strcmp(a->resource, "userextras") == 0));
        CHECK(i == 0 || strcmp(a->resource, "groups") == 0 || authn);
    }
    CHECK(anon ? unauthd : (authd || unauthd));
    check_round_trip(id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    struct impersonate_hdr h[MAX_HDRS];
    struct impersonate_req r;
    char err[512];
    size_t n = 0;
    char *p;
    int rc;

    CHECK(buf != NULL);
    memcpy(buf, data, size);
    buf[size] = '\0';
    for (p = buf; n < MAX_HDRS && *p != '\0';) {
        char *nl = strchr(p, '\n');
        char *colon;

        if (nl != NULL) {
            *nl = '\0';
        }
        colon = strchr(p, ':');
        if (colon != NULL) {
            *colon = '\0';
        }
        h[n].name = p;
        h[n].value = colon != NULL ? colon + 1 : "";
        n++;
        if (nl == NULL) {
            break;
        }
        p = nl + 1;
    }
    rc = impersonate_parse(h, n, &r, err, sizeof(err));
    CHECK(rc == 0 || rc == -EINVAL || rc == -E2BIG);
    CHECK(memchr(err, '\0', sizeof(err)) != NULL);
    if (rc == -EINVAL) {
        CHECK(r.as == NULL && strncmp(err, "requested [", 11) == 0);
    } else if (rc == -E2BIG) {
        CHECK(r.as == NULL && err[0] != '\0');
    } else if (r.as != NULL) {
        check_result(&r);
    } else {
        CHECK(r.n_checks == 0);
    }
    impersonate_req_fini(&r);
    free(buf);
    return 0;
}
