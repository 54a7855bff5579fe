/*
 * selector.h - label and field selectors, parsed once, matched against a blob's
 * precomputed label and field sets.
 *
 * Label grammar and error texts: SEMANTICS 7.2 (apimachinery labels.Parse): =, ==, !=, in,
 * notin, exists, !key, > and < (integers). Field grammar: SEMANTICS 7.1 (fields.ParseSelector):
 * comma-separated field=value, field==value, field!=value with \ escapes; a field absent from
 * the object's set compares as "".
 * A parsed selector is immutable and may be shared by threads.
 */
#ifndef KWP_CACHE_SELECTOR_H
#define KWP_CACHE_SELECTOR_H

#include <stdbool.h>
#include <stddef.h>

struct blob;
struct selector;

/* Hard cap on a selector string (bytes); longer input is rejected with an error. */
#define SELECTOR_MAX_LEN 16384

/*
 * Parses a label selector. "" or NULL = everything. Returns the selector (owned by the
 * caller, release with selector_free) or NULL with kube-apiserver's message in <err>, e.g.
 * `unable to parse requirement: ...` or `found ')', expected: ',' or 'end of string'`
 * (the caller wraps it as the 400 body). <err> (may be NULL when <err_len> is 0) is always
 * NUL-terminated, truncated to <err_len>, and "" on success. Input longer than
 * SELECTOR_MAX_LEN fails with `selector is too long: <n> bytes, the limit is 16384`.
 * Any thread; no locks.
 */
struct selector *selector_parse_labels(const char *s, char *err, size_t err_len);

/*
 * Parses a field selector. "" or NULL = everything. Returns the selector or NULL with
 * `invalid selector: '<s>'; can't understand '<term>'`-style text in <err>, or
 * fields.UnescapeValue's `invalid field selector: ...`. <err> as for selector_parse_labels.
 */
struct selector *selector_parse_fields(const char *s, char *err, size_t err_len);

void selector_free(struct selector *sel); /* NULL-safe */

/* True when the selector selects everything (no requirements). NULL-safe (true). */
bool selector_is_empty(const struct selector *sel);

/* Label selectors match against the blob's labels (blob_label); field selectors against its
 * fields (blob_field) plus "metadata.name" (b->name) and "metadata.namespace" (b->ns).
 * NULL sel matches all; a NULL blob has no labels, no fields, and "" for name and ns. */
bool selector_match(const struct selector *sel, const struct blob *b);

/* Number of field requirements, and the i-th one's field name (to check field labels are
 * supported for the resource), its value and whether it is negated (!=). Requirements are
 * in Go's order (sorted by term for fields, by key for labels). On a label selector they
 * report the key, the first of the sorted values ("" for exists / !key) and whether the
 * operator is !=, notin or !key. Out of range <i>: NULL / false. Strings are lent: valid
 * until selector_free. */
size_t selector_count(const struct selector *sel);
const char *selector_field(const struct selector *sel, size_t i);
const char *selector_value(const struct selector *sel, size_t i);
bool selector_negated(const struct selector *sel, size_t i);

#endif
