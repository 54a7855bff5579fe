/*
 * rv.c - resourceVersion parsing and formatting (see rv.h).
 *
 * rv_parse mirrors Go's strconv.ParseUint(s, 10, 64) byte for byte, including which error
 * wins when a string has both a bad byte and an overflow (the first one met, left to right),
 * so the messages built by rv_parse_error are the ones kube-apiserver returns (the input is
 * quoted with gotext_quote, Go's %q).
 * Pure functions: any thread, no locks.
 */
#include "cache/rv.h"

#include <errno.h>
#include <string.h>

#include "cache/gotext.h"
#include "cache/sbuf.h"

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

void rv_parse_error(const char *s, int err, char *buf, size_t buf_len)
{
    const char *what = err == -ERANGE ? ": value out of range" : ": invalid syntax";
    struct sbuf sb;

    if (buf == NULL || buf_len == 0) {
        return;
    }
    s = s != NULL ? s : "";
    sbuf_init_fixed(&sb, buf, buf_len);
    sbuf_str(&sb, "strconv.ParseUint: parsing ");
    gotext_quote(&sb, s, strlen(s));
    sbuf_str(&sb, what);
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
