/*
 * fuzz_printers.c - proxy/printers.c, the server-side Table printers kwp runs over objects it
 * got from upstream (a hostile upstream: any type in any field, any value).
 *
 * Every input that parses as JSON (object or not) is printed by every built-in printer, the
 * default convertor and the custom-resource one, at a fixed "now", and must give:
 *  - a NUL-terminated row whose length is the one returned;
 *  - valid JSON once wrapped in braces, with "cells" an array of exactly one cell per column
 *    definition and "conditions", when present, an array;
 *  - the same bytes when printed again (printers keep no state between rows).
 * Each printer's column definitions parse as a JSON array (they are built once, on first use).
 * Seeds (corpus/printers/) are real objects of every kind the table covers, as the simulator
 * stores them, plus finished and crash-looping pods and an object of wrong types.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "proxy/printers.h"
#include "tests/fuzz/fuzz.h"

/* 2024-01-01T01:00:00Z, after every timestamp in the seeds. */
#define FUZZ_NOW_NS (1704070800LL * 1000000000LL)

static const char *const kinds[][2] = {
    {"", "pods"},
    {"", "configmaps"},
    {"", "secrets"},
    {"", "services"},
    {"", "namespaces"},
    {"", "nodes"},
    {"", "events"},
    {"", "serviceaccounts"},
    {"", "replicationcontrollers"},
    {"batch", "jobs"},
    {"apps", "deployments"},
    {"apps", "replicasets"},
    {"certificates.k8s.io", "certificatesigningrequests"},
};

static void check(const struct printer *p, const cJSON *obj)
{
    size_t len = 0;
    size_t again_len = 0;
    char *raw;
    char *again;
    char *wrapped;
    cJSON *row;
    cJSON *cols;
    const cJSON *conditions;

    CHECK(p != NULL);
    raw = printers_cells_new(p, obj, FUZZ_NOW_NS, &len);
    CHECK(raw != NULL);
    CHECK(strlen(raw) == len);
    again = printers_cells_new(p, obj, FUZZ_NOW_NS, &again_len);
    CHECK(again != NULL && again_len == len && memcmp(raw, again, len) == 0);
    free(again);

    wrapped = malloc(len + 3);
    CHECK(wrapped != NULL);
    wrapped[0] = '{';
    memcpy(wrapped + 1, raw, len);
    memcpy(wrapped + 1 + len, "}", 2);
    row = cJSON_Parse(wrapped);
    cols = cJSON_Parse(printers_columns(p));
    CHECK(row != NULL);
    CHECK(cJSON_IsArray(cols));
    CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(row, "cells")));
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(row, "cells")) ==
          cJSON_GetArraySize(cols));
    conditions = cJSON_GetObjectItemCaseSensitive(row, "conditions");
    CHECK(conditions == NULL || cJSON_IsArray(conditions));
    cJSON_Delete(row);
    cJSON_Delete(cols);
    free(wrapped);
    free(raw);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size ? size : 1);
    cJSON *obj;

    CHECK(copy != NULL);
    memcpy(copy, data, size); /* exact size: a read past the input is an ASan report */
    obj = cJSON_ParseWithLength(copy, size);
    if (obj != NULL) {
        for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
            check(printers_find(kinds[i][0], kinds[i][1]), obj);
        }
        check(printers_default(), obj);
        check(printers_custom(), obj);
        cJSON_Delete(obj);
    }
    free(copy);
    return 0;
}
