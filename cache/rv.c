/*
 * rv.c - resourceVersion parsing and formatting (see rv.h).
 *
 * rv_parse mirrors Go's strconv.ParseUint(s, 10, 64) byte for byte, including which error
 * wins when a string has both a bad byte and an overflow (the first one met, left to right),
 * so the messages built by rv_parse_error are the ones kube-apiserver returns.
 * Pure functions: any thread, no locks.
 */
#include "cache/rv.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int rv_parse(const char *s, uint64_t *out)
{
    uint64_t n = 0;
    const unsigned char *p = (const unsigned char *)s;

    /* kube treats an unset rv and "0" alike; Go itself would say "invalid syntax" here. */
    if (p == NULL || *p == '\0') {
        *out = 0;
        return 0;
    }
    for (; *p != '\0'; p++) {
        unsigned d;

        if (*p < '0' || *p > '9') {
            *out = 0;
            return -EINVAL;
        }
        d = (unsigned)(*p - '0');
        /* Same two overflow checks as Go: n*10 first, then n+d. */
        if (n > UINT64_MAX / 10 || n * 10 > UINT64_MAX - d) {
            *out = UINT64_MAX;
            return -ERANGE;
        }
        n = n * 10 + d;
    }
    *out = n;
    return 0;
}

/*
 * Decodes one UTF-8 sequence at <p> (<avail> bytes). Returns its length and the rune through
 * <r>, or 0 when the bytes are not valid UTF-8 (overlong, surrogate, > U+10FFFF, truncated),
 * which Go's Quote prints as \xNN per byte.
 */
static size_t utf8_decode(const unsigned char *p, size_t avail, uint32_t *r)
{
    size_t need;
    uint32_t v;
    uint32_t min;

    if (p[0] < 0x80) {
        *r = p[0];
        return 1;
    }
    if (p[0] >= 0xC2 && p[0] <= 0xDF) {
        need = 2;
        v = p[0] & 0x1F;
        min = 0x80;
    } else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
        need = 3;
        v = p[0] & 0x0F;
        min = 0x800;
    } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
        need = 4;
        v = p[0] & 0x07;
        min = 0x10000;
    } else {
        return 0;
    }
    if (avail < need) {
        return 0;
    }
    for (size_t i = 1; i < need; i++) {
        if ((p[i] & 0xC0) != 0x80) {
            return 0;
        }
        v = (v << 6) | (p[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        return 0;
    }
    *r = v;
    return need;
}

/*
 * Go's unicode.IsPrint for runes >= U+0080, approximated: control, format, separator,
 * private-use and noncharacter ranges are not printable; unassigned code points are treated
 * as printable (Go would escape them). Good enough for an echoed query parameter.
 */
static int rune_is_print(uint32_t r)
{
    /* clang-format off */
    static const uint32_t np[][2] = {
        {0x0080, 0x00A0}, {0x00AD, 0x00AD}, {0x0600, 0x0605}, {0x061C, 0x061C},
        {0x06DD, 0x06DD}, {0x070F, 0x070F}, {0x1680, 0x1680}, {0x180E, 0x180E},
        {0x2000, 0x200F}, {0x2028, 0x202F}, {0x205F, 0x206F}, {0x3000, 0x3000},
        {0xD800, 0xF8FF}, {0xFDD0, 0xFDEF}, {0xFEFF, 0xFEFF}, {0xFFF0, 0xFFFB},
        {0xFFFE, 0xFFFF}, {0xE0000, 0xE007F}, {0xF0000, 0x10FFFF},
    };
    /* clang-format on */

    for (size_t i = 0; i < sizeof(np) / sizeof(np[0]); i++) {
        if (r >= np[i][0] && r <= np[i][1]) {
            return 0;
        }
    }
    /* Every plane's last two code points are noncharacters. */
    return (r & 0xFFFE) != 0xFFFE;
}

/* Go's two-character escapes (\a \b \f \n \r \t \v \" \\), or NULL. */
static const char *short_escape(uint32_t r)
{
    static const char *const tab[] = {
        ['\a'] = "\\a", ['\b'] = "\\b", ['\f'] = "\\f", ['\n'] = "\\n",
        ['\r'] = "\\r", ['\t'] = "\\t", ['\v'] = "\\v",
    };

    if (r == '"') {
        return "\\\"";
    }
    if (r == '\\') {
        return "\\\\";
    }
    return r < sizeof(tab) / sizeof(tab[0]) ? tab[r] : NULL;
}

/* Appends <src> to <buf> at *<pos>, truncating at the buffer's end (always NUL-terminated). */
static void put(char *buf, size_t buf_len, size_t *pos, const char *src, size_t n)
{
    for (size_t i = 0; i < n && *pos + 1 < buf_len; i++) {
        buf[(*pos)++] = src[i];
    }
    buf[*pos] = '\0';
}

/* Writes strconv.Quote(<s>) into <buf> at *<pos>. */
static void quote(const char *s, char *buf, size_t buf_len, size_t *pos)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t left = strlen(s);
    char tmp[16];

    put(buf, buf_len, pos, "\"", 1);
    while (left > 0) {
        uint32_t r = 0;
        size_t n = utf8_decode(p, left, &r);
        const char *esc = NULL;
        int tn;

        if (n == 0) {
            tn = snprintf(tmp, sizeof(tmp), "\\x%02x", p[0]);
            put(buf, buf_len, pos, tmp, (size_t)tn);
            p++;
            left--;
            continue;
        }
        esc = short_escape(r);
        if (esc != NULL) {
            put(buf, buf_len, pos, esc, 2);
        } else if (r < 0x20 || r == 0x7F) {
            tn = snprintf(tmp, sizeof(tmp), "\\x%02x", (unsigned)r);
            put(buf, buf_len, pos, tmp, (size_t)tn);
        } else if (r < 0x80 || rune_is_print(r)) {
            put(buf, buf_len, pos, (const char *)p, n);
        } else if (r < 0x10000) {
            tn = snprintf(tmp, sizeof(tmp), "\\u%04x", (unsigned)r);
            put(buf, buf_len, pos, tmp, (size_t)tn);
        } else {
            tn = snprintf(tmp, sizeof(tmp), "\\U%08x", (unsigned)r);
            put(buf, buf_len, pos, tmp, (size_t)tn);
        }
        p += n;
        left -= n;
    }
    put(buf, buf_len, pos, "\"", 1);
}

void rv_parse_error(const char *s, int err, char *buf, size_t buf_len)
{
    static const char prefix[] = "strconv.ParseUint: parsing ";
    const char *what = err == -ERANGE ? ": value out of range" : ": invalid syntax";
    size_t pos = 0;

    if (buf == NULL || buf_len == 0) {
        return;
    }
    buf[0] = '\0';
    put(buf, buf_len, &pos, prefix, sizeof(prefix) - 1);
    quote(s != NULL ? s : "", buf, buf_len, &pos);
    put(buf, buf_len, &pos, what, strlen(what));
}

size_t rv_format(uint64_t rv, char *buf)
{
    char tmp[21];
    size_t n = 0;

    /* Digits come out backwards; 20 is enough for UINT64_MAX. */
    do {
        tmp[n++] = (char)('0' + rv % 10);
        rv /= 10;
    } while (rv != 0);
    for (size_t i = 0; i < n; i++) {
        buf[i] = tmp[n - 1 - i];
    }
    buf[n] = '\0';
    return n;
}
