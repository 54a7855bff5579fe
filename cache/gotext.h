/*
 * gotext.h - Go-compatible text: what Go's unicode/utf8, strconv, encoding/json and
 * encoding/base64 do to strings, byte for byte, for every place kwp must write or read text
 * exactly as kube-apiserver (a Go program) does.
 *
 * UTF-8 is decoded as utf8.DecodeRune does (an invalid sequence is U+FFFD of width 1);
 * gotext_is_print is strconv.IsPrint with Go 1.24's tables (Unicode 15.0.0, the version
 * Kubernetes 1.34 is built with). Writers append to a struct sbuf, so a caller chooses
 * between truncating fixed storage and a capped heap buffer (sbuf.h).
 * Pure functions: no globals, no locks, any thread. libc only.
 */
#ifndef KWP_CACHE_GOTEXT_H
#define KWP_CACHE_GOTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cache/sbuf.h"

#define GOTEXT_RUNE_ERROR 0xFFFDu /* utf8.RuneError */
#define GOTEXT_UTF_MAX 4          /* utf8.UTFMax: bytes of the longest encoding */

/* encoding/json's byte classes: isSpace (' ', '\t', '\n', '\r'), a decimal digit, a hex
 * digit of either case. */
static inline bool gotext_is_json_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static inline bool gotext_is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static inline bool gotext_is_hex(char c)
{
    return gotext_is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/*
 * utf8.DecodeRune of s[0..n): returns the width (1-4) and sets *r. An invalid sequence
 * (overlong, surrogate, above U+10FFFF, truncated, stray continuation byte) gives
 * *r = GOTEXT_RUNE_ERROR and width 1, as does a bare 0xFF; n == 0 gives width 0. Callers tell
 * an invalid byte from a real U+FFFD (width 3) by the width, as Go does.
 */
size_t gotext_decode_rune(const char *s, size_t n, uint32_t *r);

/* utf8.EncodeRune: writes <r> as UTF-8 into out[0..4) and returns the length; a surrogate
 * or a value above U+10FFFF is written as U+FFFD. */
size_t gotext_encode_rune(uint32_t r, char *out);

/* strconv.IsPrint(r) (equal to unicode.IsPrint): letters, marks, numbers, punctuation,
 * symbols and U+0020 are printable; any other rune, unassigned ones included, is not. */
bool gotext_is_print(uint32_t r);

/*
 * The length at which to cut s[0..avail) at or before <n> so that the cut never falls inside
 * a UTF-8 sequence: <n> backed off over at most 3 continuation bytes; <n> itself when
 * n >= avail (nothing follows the cut) or when only continuation bytes precede it (a cut
 * of 0 would make no progress).
 */
size_t gotext_utf8_cut(const char *s, size_t n, size_t avail);

/* strings.TrimSpace(s[0..n)): sets *off to where the text left after trimming starts and
 * returns its length. Space is unicode.IsSpace: '\t'..'\r', ' ', U+0085, U+00A0, U+1680,
 * U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000. */
size_t gotext_trim_space(const char *s, size_t n, size_t *off);

/* Appends strconv.Quote(s[0..n)) (what fmt's %q prints for a string): double quotes, \" \\
 * \a \b \f \n \r \t \v, other controls and each invalid byte as \xNN, non-printable runes as
 * \uNNNN or \UNNNNNNNN (lower-case hex), printable runes as they are. */
void gotext_quote(struct sbuf *sb, const char *s, size_t n);

/*
 * Appends s[0..n) as a JSON string literal, quotes included, as Go's encoding/json writes it
 * (escapeHTML on): < > & as \u003c \u003e \u0026, U+2028/U+2029 escaped, each invalid byte as
 * \ufffd, \b \f \n \r \t as short escapes (Go >= 1.22), other controls as \u00xx, '/' and DEL
 * raw. <s> may be NULL when n is 0.
 */
void gotext_json_quote(struct sbuf *sb, const char *s, size_t n);

/*
 * One character of the body of a JSON string that a strict scanner has validated, decoded as
 * Go's encoding/json unquote does: escapes (\uXXXX surrogate pairs combined, a lone
 * surrogate as U+FFFD), raw UTF-8 (each invalid byte as U+FFFD). Writes the UTF-8 to
 * out[0..4), advances *pp (never past <end>; *pp < end on entry) and returns the bytes written.
 */
size_t gotext_json_unescape(const char **pp, const char *end, char *out);

/*
 * strconv.ParseInt(s[0..n), 10, 64): an optional sign, then at least one decimal digit (no
 * blanks, no underscores). Returns 0 with *out set, -EINVAL ("invalid syntax") or -ERANGE
 * ("value out of range"); like Go, the first problem met left to right decides, so an
 * overflow before a bad digit is -ERANGE. *out is left alone on error.
 */
int gotext_parse_int64(const char *s, size_t n, int64_t *out);

/* encoding/base64 alphabets. */
enum gotext_base64 {
    GOTEXT_BASE64_STD = 0, /* StdEncoding: A-Z a-z 0-9 + /, '=' padding ([]byte in JSON) */
    GOTEXT_BASE64_RAW_URL, /* RawURLEncoding: A-Z a-z 0-9 - _, no padding (continue tokens) */
};

/* Appends data[0..n) encoded with <enc>. */
void gotext_base64_encode(struct sbuf *sb, enum gotext_base64 enc, const void *data, size_t n);

/*
 * base64.RawURLEncoding.DecodeString(src[0..n)) with Go's quirks: '\r' and '\n' are skipped
 * anywhere, a final group of 2 or 3 symbols is accepted without checking its unused bits.
 * Writes at most n * 3 / 4 bytes to <dst>. Returns the decoded length, or -1 with *bad set to
 * the input offset Go's CorruptInputError names ("illegal base64 data at input byte N").
 */
ssize_t gotext_base64url_decode(const char *src, size_t n, unsigned char *dst, size_t *bad);

/*
 * Go's strconv.ParseBool: 1 t T TRUE true True / 0 f F FALSE false False. Returns 0 or
 * -EINVAL (NULL, anything else; *out untouched). The apiserver uses it for ?pretty= (errors
 * there mean false) and kwp for boolean flags; ListOptions booleans do not go through it.
 */
int gotext_parse_bool(const char *s, bool *out);

/* Appends Go's url.QueryEscape(<s>) to <sb>: A-Z a-z 0-9 - _ . ~ kept, space as '+',
 * everything else %XX in upper case. */
void gotext_query_escape(struct sbuf *sb, const char *s);

/* The same into <out> with snprintf semantics: returns the length the whole encoding needs and
 * writes at most cap-1 bytes plus a NUL (nothing when cap is 0; <out> may then be NULL). */
size_t gotext_query_escape_to(const char *s, char *out, size_t cap);

#endif
