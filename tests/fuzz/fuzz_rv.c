/*
 * fuzz_rv.c - cache/rv.c: resourceVersion parsing (Go's strconv.ParseUint), its error text and
 * formatting. Each input, cut at its first NUL, is an rv as a client or upstream sends it.
 *
 * Checked against a reference written here with 128-bit arithmetic: the result and the error
 * (the first problem met left to right wins, as in Go); a parsed value formats back to the
 * input without leading zeros and parses again to itself; the error text, at any buffer size,
 * is NUL-terminated, a prefix of the full text, and the full text is
 * `strconv.ParseUint: parsing <%q of the input>: invalid syntax|value out of range` where the
 * quoted part unquotes (Go's rules) to exactly the input bytes. The input's first 8 bytes
 * also go through rv_format -> rv_parse as a uint64.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/rv.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/goquote.h"

/* ParseUint(s, 10, 64) with kube's "" = 0, computed independently of rv.c. */
static int ref_parse(const char *s, uint64_t *out)
{
    unsigned __int128 v = 0;

    *out = 0;
    for (const char *p = s; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') {
            return -EINVAL;
        }
        v = v * 10 + (unsigned)(*p - '0');
        if (v > UINT64_MAX) {
            *out = UINT64_MAX;
            return -ERANGE;
        }
    }
    *out = (uint64_t)v;
    return 0;
}

static void check_error_text(const char *s, int err)
{
    static const char prefix[] = "strconv.ParseUint: parsing ";
    static const size_t caps[] = {1, 2, 17, 40};
    const char *suffix = err == -ERANGE ? ": value out of range" : ": invalid syntax";
    size_t full_cap = 64 + 10 * strlen(s); /* \U0010ffff is 10 bytes for a 4-byte rune */
    char *full = malloc(full_cap);
    char *bytes = malloc(strlen(s) + 1);
    char small[40];
    const char *end;
    size_t n, flen;

    memset(full, 'X', full_cap);
    rv_parse_error(s, err, full, full_cap);
    CHECK(memchr(full, '\0', full_cap) != NULL);
    flen = strlen(full);
    CHECK(flen + 1 < full_cap); /* the cap above is enough: nothing was cut */
    CHECK(strncmp(full, prefix, sizeof(prefix) - 1) == 0);
    end = goquote_unquote(full + sizeof(prefix) - 1, bytes, &n);
    CHECK(end != NULL);
    CHECK(n == strlen(s) && memcmp(bytes, s, n) == 0);
    CHECK(strcmp(end, suffix) == 0);
    for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
        memset(small, 'X', sizeof(small));
        rv_parse_error(s, err, small, caps[i]);
        CHECK(memchr(small, '\0', caps[i]) != NULL);
        CHECK(strncmp(small, full, strlen(small)) == 0);
        CHECK(strlen(small) == (flen < caps[i] - 1 ? flen : caps[i] - 1));
    }
    rv_parse_error(s, err, NULL, 0); /* must not write */
    free(bytes);
    free(full);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    char buf[21];
    uint64_t got = 1, want = 1, u = 0, back = 0;
    const char *digits;
    int rc, ref;

    memcpy(s, data, size);
    s[size] = '\0';

    rc = rv_parse(s, &got);
    ref = ref_parse(s, &want);
    CHECK(rc == ref);
    CHECK(got == want);
    if (rc == 0) {
        digits = s;
        while (digits[0] == '0' && digits[1] != '\0') {
            digits++;
        }
        CHECK(rv_format(got, buf) == strlen(buf));
        CHECK(strcmp(buf, digits[0] != '\0' ? digits : "0") == 0);
    } else {
        check_error_text(s, rc);
    }

    memcpy(&u, data, size < sizeof(u) ? size : sizeof(u));
    CHECK(rv_format(u, buf) == strlen(buf) && strlen(buf) <= 20);
    CHECK(rv_parse(buf, &back) == 0 && back == u);
    free(s);
    return 0;
}
