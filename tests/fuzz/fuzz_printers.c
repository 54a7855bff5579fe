/*
 * fuzz_printers.c - libFuzzer harness for proxy/printers.c (not in the default build). Build
 * and run from the repository root:
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
 *     -I. -I/usr/include/cjson proxy/printers.c proxy/kube_json.c cache/blob.c cache/bug.c \
 *     cache/rv.c tests/fuzz/fuzz_printers.c -lcjson -lm -o /tmp/fuzz_printers
 *   mkdir -p /tmp/pr-corpus && /tmp/fuzz_printers -max_total_time=60 -max_len=4096 /tmp/pr-corpus
 *
 * Every input that parses as JSON is printed by every printer (an object from a hostile
 * upstream: any type in any field), at a fixed "now". Invariants: the row is valid JSON
 * once wrapped in braces, and it has exactly one cell per column definition.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "proxy/printers.h"

static const char *const kinds[][2] = {
    {"", "pods"},          {"", "configmaps"},      {"", "secrets"},
    {"", "services"},      {"", "namespaces"},      {"", "nodes"},
    {"", "events"},        {"", "serviceaccounts"}, {"", "replicationcontrollers"},
    {"batch", "jobs"},     {"apps", "deployments"}, {"apps", "replicasets"},
    {"certificates.k8s.io", "certificatesigningrequests"},
};

static void check(const struct printer *p, const cJSON *obj)
{
    size_t len = 0;
    char *raw = printers_cells_new(p, obj, 1704070800LL * 1000000000LL, &len);
    char *wrapped = malloc(len + 3);
    cJSON *row, *cols;

    if (!raw || !wrapped || strlen(raw) != len) {
        abort();
    }
    wrapped[0] = '{';
    memcpy(wrapped + 1, raw, len);
    memcpy(wrapped + 1 + len, "}", 2);
    row = cJSON_Parse(wrapped);
    cols = cJSON_Parse(printers_columns(p));
    if (!row || !cols ||
        cJSON_GetArraySize(cJSON_GetObjectItem(row, "cells")) != cJSON_GetArraySize(cols)) {
        abort();
    }
    cJSON_Delete(row);
    cJSON_Delete(cols);
    free(wrapped);
    free(raw);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *obj = cJSON_ParseWithLength((const char *)data, size);

    if (!obj) {
        return 0;
    }
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        check(printers_find(kinds[i][0], kinds[i][1]), obj);
    }
    check(printers_default(), obj);
    cJSON_Delete(obj);
    return 0;
}
