/*
 * fuzz_review.c - proxy/review.c's response parsers (what kube-apiserver answers to a
 * TokenReview and a SubjectAccessReview) and what kwp builds from their results.
 *
 * An input is one response body, parsed as both kinds. Invariants:
 *  - review_token_parse returns 0, -EPROTO or -E2BIG; on error nothing is authenticated and
 *    the error text is ""; authenticated exactly when an identity came out; configuring an
 *    audience can only take authentication away, never give it.
 *  - an identity that came out respects identity.h (sorted unique extra keys, caps), encodes
 *    and decodes to the same bytes, and the SubjectAccessReview kwp would send for it is JSON
 *    that cJSON reads back with the same user and group count; its 403 body is JSON too.
 *  - review_sar_parse returns 0 or -EPROTO, an error never allows, texts stay within
 *    REVIEW_MAX_TEXT, the decision agrees with allowed/denied, and the cached form of the
 *    answer decodes to the same decision and reason.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cache/sbuf.h"
#include "proxy/authz_status.h"
#include "proxy/identity.h"
#include "proxy/review.h"
#include "tests/fuzz/fuzz.h"

static void check_identity(const struct identity *id)
{
    static const struct review_attrs attrs = {
        .is_resource = true,
        .verb = "list",
        .ns = "b",
        .group = "",
        .version = "v1",
        .resource = "pods",
        .subresource = "",
        .name = "",
    };
    struct sbuf enc = {0}, enc2 = {0}, sar = {0};
    struct identity *back;
    struct kstatus st;
    char body[8192];
    cJSON *doc;
    const cJSON *spec, *user, *groups;

    CHECK(id->n_groups <= IDENTITY_MAX_GROUPS && id->n_extra <= IDENTITY_MAX_EXTRA_KEYS);
    CHECK(id->n_extra_values <= IDENTITY_MAX_EXTRA_VALUES);
    for (size_t i = 1; i < id->n_extra; i++) {
        CHECK(strcmp(id->extra[i - 1].key, id->extra[i].key) < 0);
    }
    identity_encode(id, &enc);
    back = identity_decode(enc.p, enc.len);
    CHECK(back != NULL);
    identity_encode(back, &enc2);
    CHECK(enc.len == enc2.len && memcmp(enc.p, enc2.p, enc.len) == 0);

    review_sar_request(id, &attrs, &sar);
    doc = cJSON_ParseWithLength(sar.p, sar.len);
    CHECK(doc != NULL);
    spec = cJSON_GetObjectItemCaseSensitive(doc, "spec");
    user = cJSON_GetObjectItemCaseSensitive(spec, "user");
    groups = cJSON_GetObjectItemCaseSensitive(spec, "groups");
    CHECK(id->user[0] == '\0' ? user == NULL
                              : (cJSON_IsString(user) && strcmp(user->valuestring, id->user) == 0));
    CHECK((size_t)cJSON_GetArraySize(groups) == id->n_groups);
    cJSON_Delete(doc);

    authz_status_forbidden(&st, id->user, &attrs, id->uid);
    CHECK(kstatus_json(&st, body, sizeof(body)) < sizeof(body));
    doc = cJSON_Parse(body);
    CHECK(doc != NULL);
    cJSON_Delete(doc);

    identity_free(back);
    sbuf_free(&enc);
    sbuf_free(&enc2);
    sbuf_free(&sar);
}

static void check_token(const char *data, size_t size)
{
    static const char *const auds[] = {"kwp"};
    struct review_token_result any, mine;
    int rc_any = review_token_parse(data, size, NULL, 0, &any);
    int rc_mine = review_token_parse(data, size, auds, 1, &mine);

    CHECK(rc_any == 0 || rc_any == -EPROTO || rc_any == -E2BIG);
    CHECK(rc_mine == 0 || rc_mine == -EPROTO || rc_mine == -E2BIG);
    CHECK(any.error != NULL && mine.error != NULL);
    CHECK(strlen(any.error) <= REVIEW_MAX_TEXT);
    if (rc_any != 0) {
        CHECK(!any.authenticated && any.id == NULL && any.error[0] == '\0');
    }
    CHECK(any.authenticated == (any.id != NULL));
    CHECK(mine.authenticated == (mine.id != NULL));
    CHECK(!mine.authenticated || any.authenticated);
    if (any.id != NULL) {
        check_identity(any.id);
    }
    review_token_result_fini(&any);
    review_token_result_fini(&mine);
}

static void check_sar(const char *data, size_t size)
{
    struct review_sar_result r;
    enum review_decision d, d2;
    struct sbuf enc = {0};
    char *reason = NULL;
    int rc = review_sar_parse(data, size, &r);

    CHECK(rc == 0 || rc == -EPROTO);
    CHECK(r.reason != NULL && r.evaluation_error != NULL);
    CHECK(strlen(r.reason) <= REVIEW_MAX_TEXT && strlen(r.evaluation_error) <= REVIEW_MAX_TEXT);
    if (rc != 0) {
        CHECK(!r.allowed && !r.denied && r.reason[0] == '\0');
    }
    rc = review_sar_decision(&r, &d);
    CHECK(rc == 0 ? (d == REVIEW_ALLOW) == (r.allowed && !r.denied) : (r.allowed && r.denied));
    CHECK(d != REVIEW_ALLOW || r.allowed);
    review_sar_encode(d, r.reason, &enc);
    CHECK(review_sar_decode(enc.p, enc.len, &d2, &reason) == 0);
    CHECK(d2 == d && strcmp(reason, r.reason) == 0);
    free(reason);
    sbuf_free(&enc);
    review_sar_result_fini(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size > 0 ? size : 1);

    CHECK(buf != NULL);
    if (size > 0) {
        memcpy(buf, data, size);
    }
    check_token(buf, size);
    check_sar(buf, size);
    free(buf);
    return 0;
}
