/*
 * json.c - cJSON helpers for integration tests (see json.h). Stateless; each assertion names
 * the text it could not read.
 */
#include "tests/support/json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

cJSON *json_parse(const char *p, size_t n)
{
    cJSON *j = cJSON_ParseWithLength(p, n);

    cr_assert_not_null(j, "not JSON: %.*s", (int)(n > 2000 ? 2000 : n), p);
    return j;
}

cJSON *json_body(const struct http_resp *r)
{
    return json_parse(r->body, r->body_len);
}

const cJSON *json_at(const cJSON *o, const char *path)
{
    char key[128];

    while (o != NULL && *path != '\0') {
        const char *dot = strchr(path, '.');
        size_t len = dot ? (size_t)(dot - path) : strlen(path);

        cr_assert_lt(len, sizeof(key), "JSON path member too long: %s", path);
        memcpy(key, path, len);
        key[len] = '\0';
        o = cJSON_GetObjectItemCaseSensitive(o, key);
        path += len + (dot ? 1 : 0);
    }
    return o;
}

const char *json_str(const cJSON *o, const char *path)
{
    const cJSON *v = json_at(o, path);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

const char *json_txt(const cJSON *o, const char *path)
{
    const char *s = json_str(o, path);

    return s ? s : "(absent)";
}

uint64_t json_num(const cJSON *o, const char *path)
{
    const cJSON *v = json_at(o, path);
    char *text;

    if (!cJSON_IsNumber(v)) {
        text = cJSON_PrintUnformatted(o);
        cr_assert_fail("no number at %s in %.1500s", path, text ? text : "(unprintable)");
    }
    return (uint64_t)v->valuedouble;
}

uint64_t json_u64(const char *s)
{
    char *end = NULL;
    unsigned long long v;

    cr_assert_not_null(s, "missing number");
    errno = 0;
    v = strtoull(s, &end, 10);
    cr_assert(errno == 0 && end != s && *end == '\0', "not a uint64: \"%s\"", s);
    return (uint64_t)v;
}

uint64_t json_rv(const cJSON *o)
{
    const char *s = json_str(o, "metadata.resourceVersion");
    char *text;

    if (s == NULL) {
        text = cJSON_PrintUnformatted(o);
        cr_assert_fail("no metadata.resourceVersion in %.1500s", text ? text : "(unprintable)");
    }
    return json_u64(s);
}
