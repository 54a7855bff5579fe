/*
 * goquote.c - strconv.Unquote for the escapes strconv.Quote produces (see goquote.h).
 * Independent of the quoting code under test on purpose: a round trip through both must give
 * the original bytes back.
 */
#include "tests/fuzz/goquote.h"

#include <stdint.h>

int goquote_hexval(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Reads <n> hex digits at <s>; returns the value or -1. */
static int64_t hexn(const char *s, int n)
{
    int64_t v = 0;

    for (int i = 0; i < n; i++) {
        int d = goquote_hexval(s[i]); /* a NUL is not a digit, so this never reads past it */

        if (d < 0) {
            return -1;
        }
        v = v * 16 + d;
    }
    return v;
}

/* Appends rune <r> as UTF-8; returns the bytes written. */
static size_t put_utf8(uint32_t r, char *out)
{
    if (r < 0x80) {
        out[0] = (char)r;
        return 1;
    }
    if (r < 0x800) {
        out[0] = (char)(0xc0 | (r >> 6));
        out[1] = (char)(0x80 | (r & 0x3f));
        return 2;
    }
    if (r < 0x10000) {
        out[0] = (char)(0xe0 | (r >> 12));
        out[1] = (char)(0x80 | ((r >> 6) & 0x3f));
        out[2] = (char)(0x80 | (r & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (r >> 18));
    out[1] = (char)(0x80 | ((r >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((r >> 6) & 0x3f));
    out[3] = (char)(0x80 | (r & 0x3f));
    return 4;
}

const char *goquote_unquote(const char *s, char *out, size_t *out_len)
{
    static const char shorts[] = "a\ab\bf\fn\nr\rt\tv\v\\\\\"\"";
    size_t o = 0;

    *out_len = 0;
    if (*s++ != '"') {
        return NULL;
    }
    for (;;) {
        char c = *s++;
        int64_t v;
        size_t i;
        int n;

        if (c == '\0') {
            return NULL;
        }
        if (c == '"') {
            break;
        }
        if (c != '\\') {
            out[o++] = c;
            continue;
        }
        c = *s++;
        for (i = 0; shorts[i] != '\0' && shorts[i] != c; i += 2) {
        }
        if (c != '\0' && shorts[i] != '\0') {
            out[o++] = shorts[i + 1];
            continue;
        }
        if (c != 'x' && c != 'u' && c != 'U') {
            return NULL;
        }
        n = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        v = hexn(s, n);
        if (v < 0 || v > 0x10ffff) {
            return NULL;
        }
        if (c == 'x') {
            out[o++] = (char)v;
        } else {
            o += put_utf8((uint32_t)v, out + o);
        }
        s += n;
    }
    *out_len = o;
    return s;
}
