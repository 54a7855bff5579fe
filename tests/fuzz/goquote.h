/*
 * goquote.h - the inverse of Go's strconv.Quote, for harnesses that check quoted text in
 * error messages (rv.c, k8s_path.c and selector.c print client input with %q).
 */
#ifndef KWP_TESTS_FUZZ_GOQUOTE_H
#define KWP_TESTS_FUZZ_GOQUOTE_H

#include <stddef.h>

/*
 * Decodes the Go double-quoted literal that starts at <s> (which must be '"'), reading at most
 * to the NUL. Understands what strconv.Quote writes: raw bytes, \a \b \f \n \r \t \v \\ \",
 * \xNN (one byte), \uNNNN and \UNNNNNNNN (a rune, written as UTF-8). Writes the bytes to
 * <out> (room for strlen(s) bytes always suffices) and their count to *out_len. Returns a
 * pointer just past the closing quote, or NULL when the literal is malformed or unterminated.
 */
/* The value of hex digit <c> (either case), or -1. */
int goquote_hexval(char c);

const char *goquote_unquote(const char *s, char *out, size_t *out_len);

#endif
