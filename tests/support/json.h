/*
 * json.h - cJSON helpers for integration tests: parse a body, reach a member by a dotted path,
 * read strings and resourceVersions.
 *
 * Every helper that can meet bad input asserts with Criterion (cr_assert), so a test fails with
 * the offending text instead of crashing; call them from a Test's thread. Returned cJSON trees
 * are owned by the caller (cJSON_Delete); returned members and strings are lent from the tree.
 */
#ifndef KWP_SUPPORT_JSON_H
#define KWP_SUPPORT_JSON_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "tests/support/http.h"

/* Parses <n> bytes at <p>; asserts they are JSON. Returns a new tree the caller owns. */
cJSON *json_parse(const char *p, size_t n);

/* json_parse of a response body. */
cJSON *json_body(const struct http_resp *r);

/* The member at a dotted <path> ("metadata.resourceVersion"); NULL when absent. */
const cJSON *json_at(const cJSON *o, const char *path);

/* The string at <path>, NULL when absent or not a string. */
const char *json_str(const cJSON *o, const char *path);

/* The string at <path>, or "(absent)" so that a comparison fails readably; never NULL. */
const char *json_txt(const cJSON *o, const char *path);

/* The number at <path> as a uint64; asserts it is a number. */
uint64_t json_num(const cJSON *o, const char *path);

/* A decimal uint64 (an RV); asserts <s> is one (NULL included). */
uint64_t json_u64(const char *s);

/* metadata.resourceVersion of <o> as a number; asserts it is present and decimal. */
uint64_t json_rv(const cJSON *o);

#endif
