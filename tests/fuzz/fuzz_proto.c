/*
 * fuzz_proto.c - libFuzzer harness for sim/proto.c
 * (bash scripts/fuzz.sh proto; ctest fuzz_proto replays corpus/proto/).
 *
 * Seeded with the captured kubectl bodies; inputs without the "k8s\0" magic are given it, so
 * the fuzzer spends its time inside the envelope. Checked: no crash, leak or UB; the return
 * code is 0, -ENOTSUP or -EPROTO; the tree exists exactly on success, is an object with kind
 * and apiVersion first, and prints to JSON that cJSON parses back to an equal tree; the error
 * text is NUL-terminated inside its buffer and non-empty exactly on failure.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "sim/proto.h"
#include "tests/fuzz/fuzz.h"

static void check(const uint8_t *body, size_t len)
{
    char err[128];
    cJSON *obj = (cJSON *)&err; /* proto_decode must overwrite it */
    int rc;

    memset(err, 'x', sizeof(err));
    rc = proto_decode(body, len, &obj, err, sizeof(err));
    if (memchr(err, '\0', sizeof(err)) == NULL) {
        abort();
    }
    if (rc != 0) {
        if ((rc != -EPROTO && rc != -ENOTSUP) || obj != NULL || err[0] == '\0') {
            abort();
        }
        return;
    }
    if (!cJSON_IsObject(obj) || err[0] != '\0' || obj->child == NULL ||
        strcmp(obj->child->string, "kind") != 0 || obj->child->next == NULL ||
        strcmp(obj->child->next->string, "apiVersion") != 0) {
        abort();
    }
    char *json = cJSON_PrintUnformatted(obj);
    cJSON *back = json != NULL ? cJSON_Parse(json) : NULL;
    if (back == NULL || !cJSON_Compare(obj, back, 1)) {
        abort();
    }
    /* proto_order only relinks members: the same object (cJSON_Compare looks object members
     * up by key, so order does not count), kind still first, and a second pass changes
     * nothing */
    (void)proto_order(back);
    if (!cJSON_Compare(obj, back, 1) || strcmp(back->child->string, "kind") != 0) {
        abort();
    }
    char *once = cJSON_PrintUnformatted(back);
    (void)proto_order(back);
    char *twice = cJSON_PrintUnformatted(back);
    if (once == NULL || twice == NULL || strcmp(once, twice) != 0) {
        abort();
    }
    free(once);
    free(twice);
    cJSON_Delete(back);
    free(json);
    cJSON_Delete(obj);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *body;

    if (size >= 4 && memcmp(data, "k8s\0", 4) == 0) {
        /* An exact-size copy, so ASan catches any read past the end. */
        body = malloc(size ? size : 1);
        memcpy(body, data, size);
        check(body, size);
    } else {
        body = malloc(size + 4);
        memcpy(body, "k8s\0", 4);
        memcpy(body + 4, data, size);
        check(body, size + 4);
    }
    free(body);
    return 0;
}
