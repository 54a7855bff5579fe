/*
 * fuzz_accept.c - proxy/negotiate.c's content negotiation: goautoneg's Accept parsing, the
 * choice of media type and transform (Table, PartialObjectMetadata[List]) for a kind, and the
 * Accept-Encoding gzip token. These parsers are static, so the .c is included (STYLE: "#include
 * the .c, sparingly"); tests/unit/proxy/test_negotiate.c tests them through negotiate.h.
 *
 * Input: byte 0 picks the kind (pods, configmaps, a kind without a printer, a custom resource)
 * and whether isPrettyPrint said yes; the rest, cut at its first NUL, is the Accept header, and
 * also goes through accepts_gzip as an Accept-Encoding header and, with negotiate_request, as
 * all three headers at once.
 * Checked: accept_parse never returns more clauses than asked for, every span it returns lies
 * inside the header (q is whatever strconv.ParseFloat gives, NaN and Inf included); neg_accept
 * answers 0 or -ENOTSUP; on 0 the transform is one kwp can write (a Table has a printer, and
 * table_default exactly when the kind has no kube printer); the choice does not depend on
 * anything but the input (a second call agrees); negotiate_request agrees with neg_accept.
 */
#include "proxy/negotiate.c"

#include "tests/fuzz/fuzz.h"

static bool span_inside(struct span s, const char *hdr, size_t len)
{
    return s.n == 0 || (s.p >= hdr && s.p + s.n <= hdr + len);
}

/* A literal the parser may point a span at instead of the header ("*" for a bare type). */
static bool span_ok(struct span s, const char *hdr, size_t len)
{
    return span_inside(s, hdr, len) || (s.n == 1 && s.p[0] == '*');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const plurals[] = {"pods", "configmaps", "componentstatuses", NULL};
    struct accept_clause cl[4];
    struct apires_kind kind;
    struct negotiate a, b, c;
    struct negotiate_in in;
    char *hdr, *owned = NULL;
    size_t len, n;
    int rc;

    if (size == 0) {
        return 0;
    }
    hdr = malloc(size); /* exact size: the header is data[1..], NUL-terminated in place */
    memcpy(hdr, data + 1, size - 1);
    hdr[size - 1] = '\0';
    len = strlen(hdr);

    memset(&kind, 0, sizeof(kind));
    if (plurals[data[0] & 3] != NULL) {
        const struct apires_kind *k = apires_builtin("", "v1", plurals[data[0] & 3]);
        if (k != NULL) {
            kind = *k;
        } else {
            kind.builtin = true;
            kind.group = "";
            kind.plural = plurals[data[0] & 3];
        }
    } else {
        CHECK(apires_parse_spec("example.com/v1/widgets", &kind, &owned) == 0);
    }

    n = accept_parse(hdr, cl, sizeof(cl) / sizeof(cl[0]));
    CHECK(n <= sizeof(cl) / sizeof(cl[0]));
    for (size_t i = 0; i < n; i++) {
        CHECK(span_ok(cl[i].type, hdr, len) && span_ok(cl[i].subtype, hdr, len));
        CHECK(span_inside(cl[i].as, hdr, len) && span_inside(cl[i].g, hdr, len) &&
              span_inside(cl[i].v, hdr, len) && span_inside(cl[i].stream, hdr, len) &&
              span_inside(cl[i].sv, hdr, len) && span_inside(cl[i].pretty, hdr, len));
    }

    rc = neg_accept(hdr, (data[0] & 4) != 0, &kind, &a);
    CHECK(rc == 0 || rc == -ENOTSUP);
    if (rc == 0) {
        CHECK(a.as == NEGOTIATE_AS_NONE || a.as == NEGOTIATE_AS_TABLE || a.as == NEGOTIATE_AS_POM ||
              a.as == NEGOTIATE_AS_POML);
        CHECK(a.as != NEGOTIATE_AS_TABLE || a.printer != NULL);
        CHECK(a.as != NEGOTIATE_AS_TABLE || a.table_default == (table_printer(&kind) == NULL));
        CHECK(a.as == NEGOTIATE_AS_TABLE || !a.table_default);
        CHECK(a.as != NEGOTIATE_AS_NONE || !a.v1beta1);
    }
    CHECK(neg_accept(hdr, (data[0] & 4) != 0, &kind, &b) == rc);
    CHECK(memcmp(&a, &b, sizeof(a)) == 0);
    (void)accepts_gzip(hdr);

    memset(&in, 0, sizeof(in));
    in.accept = hdr;
    in.accept_encoding = hdr;
    in.user_agent = hdr;
    rc = negotiate_request(&in, &kind, &c);
    CHECK(rc == neg_accept(hdr, is_pretty_print(NULL, hdr), &kind, &b));
    CHECK(c.gzip == accepts_gzip(hdr) && c.incl == NEGOTIATE_INCL_METADATA);

    free(owned);
    free(hdr);
    return 0;
}
