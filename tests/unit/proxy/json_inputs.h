/*
 * json_inputs.h - inputs shared by test_kube_json.c and test_kube_meta.c: exact-size heap
 * copies (so ASan sees any read past the end), a sample Pod, and nesting of a given depth.
 */
#ifndef KWP_TESTS_UNIT_PROXY_JSON_INPUTS_H
#define KWP_TESTS_UNIT_PROXY_JSON_INPUTS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An exact-size heap copy (no NUL after it) so a read past the end trips ASan. */
static inline char *exact(const char *s, size_t n)
{
    char *p = malloc(n ? n : 1);

    memcpy(p, s, n);
    return p;
}

static const char pod[] =
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\",\"namespace\":"
    "\"default\",\"resourceVersion\":\"12345\",\"labels\":{\"app\":\"x\",\"tier\":\"web\"}},"
    "\"spec\":{\"nodeName\":\"n1\",\"hostNetwork\":true,\"priority\":0,\"x\":1.5,"
    "\"containers\":[{\"name\":\"c\",\"image\":\"i:1\"}]},\"status\":{\"phase\":\"Running\"}}";

/* {"a":[[...]]} with <depth> nested arrays inside the object (caller frees). */
static inline char *nested(size_t depth)
{
    char *s = malloc(2 * depth + 16);
    size_t o = 0;

    o += (size_t)snprintf(s, 16, "{\"a\":");
    for (size_t i = 0; i < depth; i++) {
        s[o++] = '[';
    }
    for (size_t i = 0; i < depth; i++) {
        s[o++] = ']';
    }
    s[o++] = '}';
    s[o] = '\0';
    return s;
}

#endif
