/*
 * rv.h - resourceVersion helpers.
 *
 * RVs are ordered by their uint64 value (as the apiserver's watch cache does) but echoed
 * back to clients as the exact upstream string. Parsing follows Go's strconv.ParseUint so
 * the error texts match kube-apiserver's.
 */
#ifndef KWP_CACHE_RV_H
#define KWP_CACHE_RV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Parses <s> (NUL-terminated) as a decimal uint64 exactly like Go's strconv.ParseUint(s,10,64).
 * "" parses to 0 (kube treats unset and "0" alike). Returns 0 on success, -EINVAL for syntax
 * ("invalid syntax") and -ERANGE for overflow ("value out of range").
 */
int rv_parse(const char *s, uint64_t *out);

/* Writes Go's error text for a failed rv_parse of <s> into <buf>, e.g.
 * `strconv.ParseUint: parsing "abc": invalid syntax` (quoted as Go's %q would). */
void rv_parse_error(const char *s, int err, char *buf, size_t buf_len);

/* Formats <rv> in decimal into <buf> (at least 21 bytes); returns the length. */
size_t rv_format(uint64_t rv, char *buf);

#endif
