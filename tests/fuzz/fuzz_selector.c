/*
 * fuzz_selector.c - libFuzzer harness for cache/selector.c
 * (bash scripts/fuzz.sh selector; ctest fuzz_selector replays corpus/selector/).
 *
 * Each input is parsed as a label and as a field selector. Checked: no crash, leak or UB;
 * the error text is NUL-terminated inside its buffer and non-empty exactly on failure; a
 * parsed selector answers every accessor and matches a few fixed objects.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/blob.h"
#include "cache/selector.h"
#include "tests/fuzz/fuzz.h"

static const struct blob_kv labels[] = {{"app", "web"}, {"env", ""}, {"example.com/team", "infra"},
                                        {"in", "in"},   {"n", "-5"}, {"version", "3"}};
static const struct blob_kv fields[] = {{"spec.nodeName", "n1"}, {"status.phase", "Running"}};

static void check_err(const struct selector *sel, const char *err, size_t err_len)
{
    if (memchr(err, '\0', err_len) == NULL) {
        abort(); /* not terminated inside the buffer */
    }
    if ((sel == NULL) != (err[0] != '\0')) {
        abort(); /* an error must say something, a success must say nothing */
    }
}

static void exercise(const struct selector *sel)
{
    struct blob_meta m = {.ns = "default",
                          .name = "pod1",
                          .labels = labels,
                          .n_labels = sizeof(labels) / sizeof(labels[0]),
                          .fields = fields,
                          .n_fields = sizeof(fields) / sizeof(fields[0])};
    struct blob *b = blob_new("{}", 2, &m);
    size_t n = selector_count(sel);

    if (b == NULL) {
        abort();
    }
    (void)selector_match(sel, b);
    (void)selector_match(sel, NULL);
    blob_unref(b);
    if (selector_is_empty(sel) != (n == 0)) {
        abort();
    }
    for (size_t i = 0; i <= n; i++) {
        const char *f = selector_field(sel, i);
        const char *v = selector_value(sel, i);

        if ((f == NULL) != (i == n) || (v == NULL) != (i == n)) {
            abort();
        }
        if (f != NULL) {
            (void)strlen(f);
            (void)strlen(v);
        }
        (void)selector_negated(sel, i);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    char tiny[5];
    char *s = malloc(size + 1);
    struct selector *sel;

    memcpy(s, data, size);
    s[size] = '\0'; /* an embedded NUL just ends the selector early */

    memset(err, 'X', sizeof(err));
    sel = selector_parse_labels(s, err, sizeof(err));
    check_err(sel, err, sizeof(err));
    exercise(sel);
    selector_free(sel);

    memset(err, 'X', sizeof(err));
    sel = selector_parse_fields(s, err, sizeof(err));
    check_err(sel, err, sizeof(err));
    exercise(sel);
    selector_free(sel);

    /* truncation paths */
    sel = selector_parse_labels(s, tiny, sizeof(tiny));
    check_err(sel, tiny, sizeof(tiny));
    selector_free(sel);
    selector_free(selector_parse_fields(s, NULL, 0));

    free(s);
    return 0;
}
