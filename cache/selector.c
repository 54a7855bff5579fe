/*
 * selector.c - label selectors (apimachinery labels.Parse) and field selectors
 * (fields.ParseSelector), parsed once into an immutable list of requirements (AND).
 *
 * The label parser mirrors pkg/labels/selector.go function by function (Lexer.Lex,
 * Parser.parse, parseRequirement, parseKeyAndInferOperator, parseOperator, parseValues,
 * parseIdentifiersList, parseExactValue, NewRequirement) so that the error texts come out
 * byte for byte like kube-apiserver's; validation texts come from
 * pkg/api/validate/content (IsLabelKey, IsLabelValue, IsDNS1123Subdomain, RegexError) and
 * field.Error formatting from pkg/util/validation/field/errors.go.
 * Nothing recurses, every allocation is bounded by the input length (<= SELECTOR_MAX_LEN),
 * and error texts are truncated to the caller's buffer.
 * Known difference from Go: the input is a C string, so an embedded NUL ends it (Go would
 * usually report an error). Values are quoted with gotext_quote (Go's %q, exactly).
 * Thread model: parsing touches only its arguments; a parsed selector is read-only.
 */
#include "cache/selector.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/blob.h"
#include "cache/bug.h"
#include "cache/gotext.h"
#include "cache/sbuf.h"

/* --- message texts (Kubernetes 1.36 apimachinery) ---------------------------------------- */

/* content.MaxLenError: "must be no more than %d bytes" (releases before the content package
 * said "characters"). */
#define MSG_MAXLEN_63 "must be no more than 63 bytes"
#define MSG_MAXLEN_253 "must be no more than 253 bytes"
#define MSG_EMPTY "must be non-empty"
/* RegexError(labelKeyErrMsg, labelKeyFmt, "MyName", "my.name", "123-abc"); RegexError puts
 * "', " after every example, hence the double spaces. */
#define MSG_KEY_RE                                                                                 \
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "    \
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "         \
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
/* RegexError(labelValueErrMsg, labelValueFmt, "MyValue", "my_value", "12345") */
#define MSG_VALUE_RE                                                                               \
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "    \
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "             \
    "'my_value',  or '12345', regex used for validation is "                                       \
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
/* RegexError(dns1123SubdomainErrorMsg, dns1123SubdomainFmt, "example.com") */
#define MSG_DNS_RE                                                                                 \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "   \
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "  \
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
/* strings.Join(binaryOperators, ", ") with selection.GreaterThan = "gt", LessThan = "lt" */
#define MSG_BINARY_OPS "in, notin, =, ==, !=, gt, lt"

#define LABEL_NAME_MAX 63
#define LABEL_VALUE_MAX 63
#define DNS1123_SUBDOMAIN_MAX 253

/* --- the parsed form ----------------------------------------------------------------------- */

/* Which matcher applies: labels read blob_label, fields blob_field plus name/ns. */
enum sel_kind {
    SEL_LABELS = 0,
    SEL_FIELDS,
};

/* selection.Operator. "=" and "==" stay distinct only so the accessors can tell what was
 * written; they match identically. */
enum sel_op {
    SEL_OP_NONE = 0, /* not decided yet (parser only) */
    SEL_OP_IN,
    SEL_OP_NOTIN,
    SEL_OP_EQ,  /* = */
    SEL_OP_DEQ, /* == */
    SEL_OP_NE,  /* != */
    SEL_OP_GT,
    SEL_OP_LT,
    SEL_OP_EXISTS,
    SEL_OP_NOT_EXISTS, /* !key */
};

/* One requirement (labels.Requirement, or a field hasTerm / notHasTerm). */
struct sel_req {
    char *key;     /* label key or field name, owned */
    char **vals;   /* sorted, unique (sets.String.List()), owned; NULL when n_vals == 0 */
    size_t n_vals; /* 1 for =, ==, !=, >, < and fields; >= 1 for in/notin; 0 for exists */
    int64_t num;   /* the integer of > and < */
    size_t seq;    /* position in the input, a tie-break that keeps sorting deterministic */
    enum sel_op op;
};

/* Immutable once returned by a parser; every requirement must hold (AND). */
struct selector {
    enum sel_kind kind;
    struct sel_req *reqs; /* Go's order: labels by key, fields by their raw term */
    size_t n_reqs;
    size_t cap_reqs; /* allocated slots; bounded by the input length */
};

/* A byte range of the input: tokens and values are sliced, not copied, until a requirement
 * is known to be valid. */
struct span {
    const char *p;
    size_t n;
};

/* --- bounded error text -------------------------------------------------------------------- */

/* Error texts go to the caller's buffer through a fixed-storage sbuf, silently truncated:
 * the caller's buffer bounds the text (identifiers may be 16 KB). Only the last error counts
 * (Go returns on the first one), so each starts afresh (sbuf_clear). */

/*
 * Joins messages with a separator, in one pass that either counts (eb == NULL) or writes.
 * Usage: if (join_next(&j)) { sbuf_str(j.eb, "..."); }
 * Counting first is how the writer knows whether Go would bracket an aggregate ("[a, b]"
 * for several errors, bare for one) without building the messages twice in memory.
 */
struct join {
    struct sbuf *eb; /* NULL: count only */
    const char *sep; /* "; " inside one field.Error detail, ", " between aggregated errors */
    size_t n;        /* messages so far */
};

static bool join_next(struct join *j)
{
    if (j->n++ > 0 && j->eb != NULL) {
        sbuf_str(j->eb, j->sep);
    }
    return j->eb != NULL;
}

/* Writes field.Invalid(<path>, <value>, ...)'s text up to the detail: `: Invalid value: "v": `
 * (the caller has written the path). */
static void eb_invalid(struct sbuf *eb, const char *v, size_t n)
{
    sbuf_str(eb, ": Invalid value: ");
    gotext_quote(eb, v, n);
    sbuf_str(eb, ": ");
}

/* --- character classes and validation ------------------------------------------------------ */

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] */
static bool is_label_name(const char *s, size_t n)
{
    if (n == 0 || !is_alnum(s[0]) || !is_alnum(s[n - 1])) {
        return false;
    }
    for (size_t i = 1; i + 1 < n; i++) {
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.') {
            return false;
        }
    }
    return true;
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)* */
static bool is_dns1123_subdomain(const char *s, size_t n)
{
    size_t i = 0;

    for (;;) {
        size_t start = i;

        while (i < n && s[i] != '.') {
            char c = s[i];
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
                return false;
            }
            i++;
        }
        if (i == start || s[start] == '-' || s[i - 1] == '-') {
            return false;
        }
        if (i == n) {
            return true;
        }
        i++; /* the dot; an empty label after it fails above */
    }
}

/*
 * content.IsLabelKey's messages joined with "; " (validateLabelKey). Counts when
 * <eb> is NULL. Returns the number of messages.
 */
static size_t label_key_errors(const char *k, size_t n, struct sbuf *eb)
{
    struct join j = {eb, "; ", 0};
    const char *slash = memchr(k, '/', n);
    const char *name = k;
    size_t name_len = n;

    if (slash != NULL) {
        size_t prefix_len = (size_t)(slash - k);

        name = slash + 1;
        name_len = n - prefix_len - 1;
        if (memchr(name, '/', name_len) != NULL) {
            if (join_next(&j)) {
                sbuf_str(eb, "a valid label key " MSG_KEY_RE " with an optional DNS subdomain "
                             "prefix and '/' (e.g. 'example.com/MyName')");
            }
            return j.n;
        }
        if (prefix_len == 0) {
            if (join_next(&j)) {
                sbuf_str(eb, "prefix part " MSG_EMPTY);
            }
        } else {
            if (prefix_len > DNS1123_SUBDOMAIN_MAX && join_next(&j)) {
                sbuf_str(eb, "prefix part " MSG_MAXLEN_253);
            }
            if (!is_dns1123_subdomain(k, prefix_len) && join_next(&j)) {
                sbuf_str(eb, "prefix part " MSG_DNS_RE);
            }
        }
    }
    if (name_len == 0) {
        if (join_next(&j)) {
            sbuf_str(eb, "name part " MSG_EMPTY);
        }
    } else if (name_len > LABEL_NAME_MAX && join_next(&j)) {
        sbuf_str(eb, "name part " MSG_MAXLEN_63);
    }
    if (!is_label_name(name, name_len) && join_next(&j)) {
        sbuf_str(eb, "name part " MSG_KEY_RE);
    }
    return j.n;
}

/* content.IsLabelValue's messages joined with "; ". Counts when <eb> is NULL. */
static size_t label_value_errors(const char *v, size_t n, struct sbuf *eb)
{
    struct join j = {eb, "; ", 0};

    if (n > LABEL_VALUE_MAX && join_next(&j)) {
        sbuf_str(eb, MSG_MAXLEN_63);
    }
    if (n > 0 && !is_label_name(v, n) && join_next(&j)) {
        sbuf_str(eb, MSG_VALUE_RE);
    }
    return j.n;
}

/* --- selector storage ---------------------------------------------------------------------- */

static struct selector *selector_alloc(enum sel_kind kind)
{
    struct selector *sel = xcalloc(1, sizeof(*sel));

    sel->kind = kind;
    return sel;
}

static void req_fini(struct sel_req *req)
{
    free(req->key);
    for (size_t i = 0; i < req->n_vals; i++) {
        free(req->vals[i]);
    }
    free(req->vals);
}

void selector_free(struct selector *sel)
{
    if (sel == NULL) {
        return;
    }
    for (size_t i = 0; i < sel->n_reqs; i++) {
        req_fini(&sel->reqs[i]);
    }
    free(sel->reqs);
    free(sel);
}

/* Appends a zeroed requirement; its slot is owned by <sel> from here on. */
static struct sel_req *selector_add(struct selector *sel)
{
    struct sel_req *req;

    if (sel->n_reqs == sel->cap_reqs) {
        sel->cap_reqs = sel->cap_reqs ? sel->cap_reqs * 2 : 4;
        sel->reqs = xrealloc(sel->reqs, sel->cap_reqs * sizeof(*sel->reqs));
    }
    req = &sel->reqs[sel->n_reqs];
    memset(req, 0, sizeof(*req));
    req->seq = sel->n_reqs++;
    return req;
}

static int req_cmp(const void *a, const void *b)
{
    const struct sel_req *x = a;
    const struct sel_req *y = b;
    int c = strcmp(x->key, y->key);

    if (c != 0) {
        return c;
    }
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Go string order: bytewise, a prefix sorts first. */
static int span_cmp(const void *a, const void *b)
{
    const struct span *x = a;
    const struct span *y = b;
    int c = memcmp(x->p, y->p, x->n < y->n ? x->n : y->n);

    if (c != 0) {
        return c;
    }
    return x->n < y->n ? -1 : x->n > y->n;
}

/* A growable array of spans (values of one requirement, or the terms of a field selector).
 * Each input byte yields at most two spans ("(,)" is two empty values), so the length is
 * bounded by the input length and doubling cannot run away. */
struct spans {
    struct span *v;
    size_t n;
    size_t cap;
};

static void spans_push(struct spans *sv, const char *p, size_t n)
{
    if (sv->n == sv->cap) {
        sv->cap = sv->cap ? sv->cap * 2 : 4;
        sv->v = xrealloc(sv->v, sv->cap * sizeof(*sv->v));
    }
    sv->v[sv->n].p = p;
    sv->v[sv->n].n = n;
    sv->n++;
}

/* Checks the length cap shared by both parsers; returns false with the error written. */
static bool check_len(size_t len, struct sbuf *eb)
{
    if (len <= SELECTOR_MAX_LEN) {
        return true;
    }
    sbuf_printf(eb, "selector is too long: %zu bytes, the limit is %d", len, SELECTOR_MAX_LEN);
    return false;
}

/* --- label selector lexer (labels.Lexer) --------------------------------------------------- */

enum tok {
    TOK_ERROR = 0, /* never produced: every special symbol alone is a token */
    TOK_EOS,
    TOK_CLOSE_PAR,
    TOK_COMMA,
    TOK_NOT,
    TOK_DEQ,
    TOK_EQ,
    TOK_GT,
    TOK_ID,
    TOK_IN,
    TOK_LT,
    TOK_NE,
    TOK_NOTIN,
    TOK_OPEN_PAR, /* the last one: sizes tables indexed by token */
};

struct token {
    enum tok t;
    const char *lit; /* the literal, "" for end of string */
    size_t len;
};

struct lexer {
    const char *s;
    size_t len;
    size_t pos;
};

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* isSpecialSymbol's characters, and the token each one is on its own. */
static const char specials[] = "=!(),><";
static const enum tok special_toks[] = {TOK_EQ,    TOK_NOT, TOK_OPEN_PAR, TOK_CLOSE_PAR,
                                        TOK_COMMA, TOK_GT,  TOK_LT};

static bool is_special(char c)
{
    return c != '\0' && strchr(specials, c) != NULL;
}

/* Lexer.Lex. scanSpecialSymbol extends a symbol while the longer text is still a token,
 * which in practice means "==" and "!="; "===" is "==" then "=". */
static struct token lex_next(struct lexer *lx)
{
    struct token tk = {TOK_EOS, "", 0};
    const char *s = lx->s;
    size_t start;

    while (lx->pos < lx->len && is_ws(s[lx->pos])) {
        lx->pos++;
    }
    if (lx->pos >= lx->len) {
        return tk;
    }
    start = lx->pos;
    tk.lit = s + start;
    if (is_special(s[start])) {
        if ((s[start] == '=' || s[start] == '!') && start + 1 < lx->len && s[start + 1] == '=') {
            tk.t = s[start] == '=' ? TOK_DEQ : TOK_NE;
            tk.len = 2;
        } else {
            tk.t = special_toks[strchr(specials, s[start]) - specials];
            tk.len = 1;
        }
        lx->pos += tk.len;
        return tk;
    }
    /* scanIDOrKeyword: anything up to a special symbol or blank, so keys and values may
     * hold any other byte here (validation rejects most of them later, with a message) */
    while (lx->pos < lx->len && !is_special(s[lx->pos]) && !is_ws(s[lx->pos])) {
        lx->pos++;
    }
    tk.len = lx->pos - start;
    if (tk.len == 2 && memcmp(tk.lit, "in", 2) == 0) {
        tk.t = TOK_IN;
    } else if (tk.len == 5 && memcmp(tk.lit, "notin", 5) == 0) {
        tk.t = TOK_NOTIN;
    } else {
        tk.t = TOK_ID;
    }
    return tk;
}

/* --- label selector parser (labels.Parser) ------------------------------------------------- */

/* ParserContext: in value position the keywords in/notin are plain identifiers. */
enum pctx {
    CTX_KEY_AND_OPERATOR = 0,
    CTX_VALUES,
};

/* Go lexes everything up front into scannedItems; lexing is context free, so one token of
 * lookahead lexed on demand is equivalent and needs no token array. */
struct parser {
    struct lexer lx;
    struct token cur; /* the lookahead token */
    struct sbuf *eb;
    bool in_req; /* errors get parse()'s "unable to parse requirement: " prefix */
};

static struct token lookahead(const struct parser *p, enum pctx ctx)
{
    struct token tk = p->cur;

    if (ctx == CTX_VALUES && (tk.t == TOK_IN || tk.t == TOK_NOTIN)) {
        tk.t = TOK_ID;
    }
    return tk;
}

/* Past the end the lexer keeps answering end-of-string; Go never consumes that far. */
static struct token consume(struct parser *p, enum pctx ctx)
{
    struct token tk = lookahead(p, ctx);

    p->cur = lex_next(&p->lx);
    return tk;
}

/* Starts an error message: clears the buffer and adds the requirement prefix if due. */
static struct sbuf *perr(struct parser *p)
{
    sbuf_clear(p->eb, 0);
    if (p->in_req) {
        sbuf_str(p->eb, "unable to parse requirement: ");
    }
    return p->eb;
}

/* Writes fmt.Errorf("found '%s'<rest>", lit) and returns -EINVAL. */
static int perr_found(struct parser *p, struct token tk, const char *rest)
{
    struct sbuf *eb = perr(p);

    sbuf_str(eb, "found '");
    sbuf_put(eb, tk.lit, tk.len);
    sbuf_putc(eb, '\'');
    sbuf_str(eb, rest);
    return -EINVAL;
}

/*
 * parseKeyAndInferOperator: [!] KEY; infers exists / does-not-exist. The key is validated
 * here, before the operator is read, so "Bad/key/x y" reports the key, not the 'y'.
 * "!key" is does-not-exist whatever follows; parse_selector then rejects a trailing "=v".
 */
static int parse_key(struct parser *p, struct token *key, enum sel_op *op)
{
    struct token tk = consume(p, CTX_VALUES);
    struct sbuf *eb;
    enum tok next;

    *op = SEL_OP_NONE;
    if (tk.t == TOK_NOT) {
        *op = SEL_OP_NOT_EXISTS;
        tk = consume(p, CTX_VALUES);
    }
    if (tk.t != TOK_ID) {
        return perr_found(p, tk, ", expected: identifier");
    }
    if (label_key_errors(tk.lit, tk.len, NULL) > 0) {
        /* validateLabelKey(literal, p.path) with a nil path: Go prints "<nil>" */
        eb = perr(p);
        sbuf_str(eb, "<nil>");
        eb_invalid(eb, tk.lit, tk.len);
        label_key_errors(tk.lit, tk.len, eb);
        return -EINVAL;
    }
    next = lookahead(p, CTX_VALUES).t;
    if ((next == TOK_EOS || next == TOK_COMMA) && *op != SEL_OP_NOT_EXISTS) {
        *op = SEL_OP_EXISTS;
    }
    *key = tk;
    return 0;
}

/* parseOperator: the binary operators, in KeyAndOperator context (in/notin are keywords). */
static int parse_operator(struct parser *p, enum sel_op *op)
{
    static const enum sel_op tok_ops[TOK_OPEN_PAR + 1] = {
        [TOK_IN] = SEL_OP_IN,   [TOK_NOTIN] = SEL_OP_NOTIN, [TOK_EQ] = SEL_OP_EQ,
        [TOK_DEQ] = SEL_OP_DEQ, [TOK_NE] = SEL_OP_NE,       [TOK_GT] = SEL_OP_GT,
        [TOK_LT] = SEL_OP_LT,
    };
    struct token tk = consume(p, CTX_KEY_AND_OPERATOR);

    *op = tok_ops[tk.t];
    if (*op == SEL_OP_NONE) {
        /* DoesNotExistToken lands here too: '!' is unary */
        return perr_found(p, tk, ", expected: " MSG_BINARY_OPS);
    }
    return 0;
}

/* parseIdentifiersList: a possibly empty list of possibly empty comma-separated values,
 * up to (not including) the closing parenthesis. Empty values are pushed as "". */
static int parse_identifiers_list(struct parser *p, struct spans *vals)
{
    for (;;) {
        struct token tk = consume(p, CTX_VALUES);
        struct token next;

        switch (tk.t) {
        case TOK_ID:
            spans_push(vals, tk.lit, tk.len);
            next = lookahead(p, CTX_VALUES);
            if (next.t == TOK_CLOSE_PAR) {
                return 0;
            }
            if (next.t != TOK_COMMA) {
                return perr_found(p, next, ", expected: ',' or ')'");
            }
            break;
        case TOK_COMMA: /* "(," ",)" and ",," all add the empty value */
            if (vals->n == 0) {
                spans_push(vals, "", 0);
            }
            next = lookahead(p, CTX_VALUES);
            if (next.t == TOK_CLOSE_PAR) {
                spans_push(vals, "", 0);
                return 0;
            }
            if (next.t == TOK_COMMA) {
                consume(p, CTX_VALUES);
                spans_push(vals, "", 0);
            }
            break;
        default:
            return perr_found(p, tk, ", expected: ',', or identifier");
        }
    }
}

/* parseValues: "(" values ")"; "()" is the set {""}. */
static int parse_values(struct parser *p, struct spans *vals)
{
    struct token tk = consume(p, CTX_VALUES);
    int rc;

    if (tk.t != TOK_OPEN_PAR) {
        return perr_found(p, tk, " expected: '('"); /* sic: no comma in Go's text */
    }
    tk = lookahead(p, CTX_VALUES);
    switch (tk.t) {
    case TOK_ID:
    case TOK_COMMA:
        rc = parse_identifiers_list(p, vals);
        if (rc != 0) {
            return rc;
        }
        /* parseIdentifiersList only returns with ')' ahead, so this cannot fail */
        if (consume(p, CTX_VALUES).t != TOK_CLOSE_PAR) {
            return perr_found(p, tk, ", expected: ')'");
        }
        return 0;
    case TOK_CLOSE_PAR:
        consume(p, CTX_VALUES);
        spans_push(vals, "", 0);
        return 0;
    default:
        return perr_found(p, tk, ", expected: ',', ')' or identifier");
    }
}

/* parseExactValue: one value, empty when the requirement ends right after the operator. */
static int parse_exact_value(struct parser *p, struct spans *vals)
{
    struct token tk = lookahead(p, CTX_VALUES);

    if (tk.t == TOK_EOS || tk.t == TOK_COMMA) {
        spans_push(vals, "", 0);
        return 0;
    }
    tk = consume(p, CTX_VALUES);
    if (tk.t != TOK_ID) {
        return perr_found(p, tk, ", expected: identifier");
    }
    spans_push(vals, tk.lit, tk.len);
    return 0;
}

/*
 * NewRequirement's validation of the (sorted, unique) values, as a field.ErrorList: one
 * pass counts (eb == NULL), the second writes the aggregate. The key was validated by
 * parse_key already, and the parser guarantees the value counts of =, ==, !=, >, <, exists.
 * Order matters for the text: first the operator checks (integers for > and <), then
 * every value's label-value check, exactly as Go appends them. ToAggregate also drops
 * repeated messages, which cannot happen here: each message names a distinct index.
 */
static size_t req_errors(const struct token *key, enum sel_op op, const struct spans *vals,
                         struct sbuf *eb)
{
    struct join j = {eb, ", ", 0};
    int64_t num;

    if ((op == SEL_OP_IN || op == SEL_OP_NOTIN) && vals->n == 0 && join_next(&j)) {
        /* unreachable from Parse ("()" is {""}); kept to mirror NewRequirement */
        sbuf_str(eb, "values: Invalid value: []: for 'in', 'notin' operators, values set can't be "
                     "empty");
    }
    if (op == SEL_OP_GT || op == SEL_OP_LT) {
        for (size_t i = 0; i < vals->n; i++) {
            if (gotext_parse_int64(vals->v[i].p, vals->v[i].n, &num) != 0 && join_next(&j)) {
                sbuf_str(eb, "values[");
                sbuf_printf(eb, "%zu", i);
                sbuf_putc(eb, ']');
                eb_invalid(eb, vals->v[i].p, vals->v[i].n);
                sbuf_str(eb, "for 'Gt', 'Lt' operators, the value must be an integer");
            }
        }
    }
    for (size_t i = 0; i < vals->n; i++) {
        if (label_value_errors(vals->v[i].p, vals->v[i].n, NULL) > 0 && join_next(&j)) {
            sbuf_str(eb, "values[");
            sbuf_printf(eb, "%zu", i);
            sbuf_str(eb, "][");
            sbuf_put(eb, key->lit, key->len);
            sbuf_putc(eb, ']');
            eb_invalid(eb, vals->v[i].p, vals->v[i].n);
            label_value_errors(vals->v[i].p, vals->v[i].n, eb);
        }
    }
    return j.n;
}

/* Sorts and dedups <vals> like sets.String.List(). The "values[i]" of an error message
 * counts in this order, so "x in (b#,a#)" blames a# as values[0]. */
static void spans_sort_unique(struct spans *vals)
{
    size_t out = 0;

    if (vals->n < 2) {
        return;
    }
    qsort(vals->v, vals->n, sizeof(*vals->v), span_cmp);
    for (size_t i = 1; i < vals->n; i++) {
        if (span_cmp(&vals->v[out], &vals->v[i]) != 0) {
            vals->v[++out] = vals->v[i];
        }
    }
    vals->n = out + 1;
}

/* NewRequirement: validates, then stores the requirement in <sel>. */
static int new_requirement(struct parser *p, struct selector *sel, const struct token *key,
                           enum sel_op op, struct spans *vals)
{
    struct sel_req *req;
    size_t n_errs;
    struct sbuf *eb;

    spans_sort_unique(vals);
    n_errs = req_errors(key, op, vals, NULL);
    if (n_errs > 0) {
        eb = perr(p);
        if (n_errs > 1) {
            sbuf_putc(eb, '['); /* utilerrors.aggregate with several messages */
        }
        req_errors(key, op, vals, eb);
        if (n_errs > 1) {
            sbuf_putc(eb, ']');
        }
        return -EINVAL;
    }
    req = selector_add(sel);
    req->op = op;
    req->key = xstrndup(key->lit, key->len);
    if (vals->n > 0) {
        req->vals = xmalloc(vals->n * sizeof(*req->vals));
        for (size_t i = 0; i < vals->n; i++) {
            req->vals[i] = xstrndup(vals->v[i].p, vals->v[i].n);
            req->n_vals++;
        }
    }
    if (op == SEL_OP_GT || op == SEL_OP_LT) {
        BUG_ON(gotext_parse_int64(vals->v[0].p, vals->v[0].n, &req->num) != 0);
    }
    return 0;
}

/* parseRequirement: every error below gets "unable to parse requirement: " (perr). */
static int parse_requirement(struct parser *p, struct selector *sel)
{
    struct spans vals = {NULL, 0, 0};
    struct token key;
    enum sel_op op;
    int rc;

    rc = parse_key(p, &key, &op);
    if (rc != 0) {
        return rc;
    }
    if (op == SEL_OP_EXISTS || op == SEL_OP_NOT_EXISTS) {
        /* "!a=b" stops here too: parse() then reports the '=' */
        return new_requirement(p, sel, &key, op, &vals);
    }
    rc = parse_operator(p, &op);
    if (rc != 0) {
        return rc;
    }
    if (op == SEL_OP_IN || op == SEL_OP_NOTIN) {
        rc = parse_values(p, &vals);
    } else {
        rc = parse_exact_value(p, &vals);
    }
    if (rc == 0) {
        rc = new_requirement(p, sel, &key, op, &vals);
    }
    free(vals.v);
    return rc;
}

/* Parser.parse: requirement ("," requirement)* */
static int parse_selector(struct parser *p, struct selector *sel)
{
    for (;;) {
        struct token tk = lookahead(p, CTX_VALUES);
        int rc;

        switch (tk.t) {
        case TOK_ID:
        case TOK_NOT:
            p->in_req = true;
            rc = parse_requirement(p, sel);
            p->in_req = false;
            if (rc != 0) {
                return rc;
            }
            tk = consume(p, CTX_VALUES);
            if (tk.t == TOK_EOS) {
                return 0;
            }
            if (tk.t != TOK_COMMA) {
                return perr_found(p, tk, ", expected: ',' or 'end of string'");
            }
            tk = lookahead(p, CTX_VALUES);
            if (tk.t != TOK_ID && tk.t != TOK_NOT) {
                return perr_found(p, tk, ", expected: identifier after ','");
            }
            break;
        case TOK_EOS:
            return 0;
        default:
            return perr_found(p, tk, ", expected: !, identifier, or 'end of string'");
        }
    }
}

/* labels.Parse. Requirements are sorted by key afterwards (sort.Sort(ByKey)). */
struct selector *selector_parse_labels(const char *s, char *err, size_t err_len)
{
    struct sbuf eb;
    struct selector *sel = NULL;
    struct parser p;
    size_t len = s != NULL ? strlen(s) : 0;

    sbuf_init_fixed(&eb, err, err != NULL ? err_len : 0);
    if (!check_len(len, &eb)) {
        return NULL;
    }
    sel = selector_alloc(SEL_LABELS);
    memset(&p, 0, sizeof(p));
    p.lx.s = s != NULL ? s : "";
    p.lx.len = len;
    p.eb = &eb;
    p.cur = lex_next(&p.lx);
    if (parse_selector(&p, sel) != 0) {
        selector_free(sel);
        return NULL;
    }
    if (sel->n_reqs > 1) {
        qsort(sel->reqs, sel->n_reqs, sizeof(*sel->reqs), req_cmp);
    }
    return sel;
}

/* --- field selectors (fields.ParseSelector) ------------------------------------------------ */

/* splitTerms: splits on commas not preceded by a backslash escape. Working on bytes is the
 * same as Go's rune loop: continuation bytes are never ',' or '\'. */
static void split_terms(const char *s, size_t len, struct spans *terms)
{
    size_t start = 0;
    bool in_slash = false;

    if (len == 0) {
        return;
    }
    for (size_t i = 0; i < len; i++) {
        if (in_slash) {
            in_slash = false;
        } else if (s[i] == '\\') {
            in_slash = true;
        } else if (s[i] == ',') {
            spans_push(terms, s + start, i - start);
            start = i + 1;
        }
    }
    spans_push(terms, s + start, len - start);
}

/* splitTerm: the first position holding "!=", "==" or "=" (tried in that order) splits the
 * term; the field name has no escaping. */
static bool split_term(struct span term, struct span *lhs, enum sel_op *op, struct span *rhs)
{
    for (size_t i = 0; i < term.n; i++) {
        size_t op_len = 0;

        if (term.p[i] == '!' && i + 1 < term.n && term.p[i + 1] == '=') {
            *op = SEL_OP_NE;
            op_len = 2;
        } else if (term.p[i] == '=' && i + 1 < term.n && term.p[i + 1] == '=') {
            *op = SEL_OP_DEQ;
            op_len = 2;
        } else if (term.p[i] == '=') {
            *op = SEL_OP_EQ;
            op_len = 1;
        }
        if (op_len > 0) {
            lhs->p = term.p;
            lhs->n = i;
            rhs->p = term.p + i + op_len;
            rhs->n = term.n - i - op_len;
            return true;
        }
    }
    return false;
}

/*
 * UnescapeValue: \\ \, \= are escapes; any other escape or a bare ',' or '=' is an error.
 * Go rebuilds such a value rune by rune, so invalid UTF-8 bytes become U+FFFD there; a
 * value without any of \ , = is kept byte for byte. Returns an owned string or NULL.
 */
static char *unescape_value(struct span v, struct sbuf *eb)
{
    static const char replacement[] = "\xEF\xBF\xBD";
    bool in_slash = false;
    size_t i = 0;
    size_t o = 0;
    char *out;

    if (memchr(v.p, '\\', v.n) == NULL && memchr(v.p, ',', v.n) == NULL &&
        memchr(v.p, '=', v.n) == NULL) {
        return xstrndup(v.p, v.n);
    }
    out = xmalloc(v.n * 3 + 1); /* each byte grows to at most one U+FFFD */
    while (i < v.n) {
        uint32_t r;
        size_t w = gotext_decode_rune(v.p + i, v.n - i, &r);
        bool invalid = w == 1 && r == GOTEXT_RUNE_ERROR;
        const char *bytes = invalid ? replacement : v.p + i;
        size_t n_bytes = invalid ? 3 : w;

        if (in_slash) {
            if (r != '\\' && r != ',' && r != '=') {
                sbuf_str(eb, "invalid field selector: invalid escape sequence: \\");
                sbuf_put(eb, bytes, n_bytes);
                free(out);
                return NULL;
            }
            in_slash = false;
        } else if (r == '\\') {
            in_slash = true;
            i += w;
            continue;
        } else if (r == ',' || r == '=') {
            sbuf_str(eb, "invalid field selector: unescaped character in value: ");
            sbuf_printf(eb, "%u", (unsigned)r); /* Go prints the rune with %v: a number */
            free(out);
            return NULL;
        }
        memcpy(out + o, bytes, n_bytes);
        o += n_bytes;
        i += w;
    }
    if (in_slash) {
        sbuf_str(eb, "invalid field selector: invalid escape sequence: \\");
        free(out);
        return NULL;
    }
    out[o] = '\0';
    return out;
}

/* fields.ParseSelector with the identity transform: split, sort, split each term at its
 * operator, unescape the value. The field name is taken as is (no trimming, no checks);
 * which names a resource supports is the caller's question (selector_field). */
struct selector *selector_parse_fields(const char *s, char *err, size_t err_len)
{
    struct sbuf eb;
    struct spans terms = {NULL, 0, 0};
    struct selector *sel = NULL;
    size_t len = s != NULL ? strlen(s) : 0;
    int rc = -EINVAL;

    sbuf_init_fixed(&eb, err, err != NULL ? err_len : 0);
    if (!check_len(len, &eb)) {
        return NULL;
    }
    sel = selector_alloc(SEL_FIELDS);
    split_terms(s, len, &terms);
    /* Go sorts the raw terms first, which decides both the order of the requirements and
     * which bad term an error names */
    if (terms.n > 1) {
        qsort(terms.v, terms.n, sizeof(*terms.v), span_cmp);
    }
    for (size_t i = 0; i < terms.n; i++) {
        struct span lhs;
        struct span rhs;
        enum sel_op op;
        struct sel_req *req;
        char *val;

        if (terms.v[i].n == 0) {
            continue; /* ",," and a leading or trailing comma add nothing */
        }
        if (!split_term(terms.v[i], &lhs, &op, &rhs)) {
            sbuf_str(&eb, "invalid selector: '");
            sbuf_str(&eb, s);
            sbuf_str(&eb, "'; can't understand '");
            sbuf_put(&eb, terms.v[i].p, terms.v[i].n);
            sbuf_putc(&eb, '\'');
            goto out;
        }
        val = unescape_value(rhs, &eb);
        if (val == NULL) {
            goto out;
        }
        req = selector_add(sel);
        req->op = op;
        req->key = xstrndup(lhs.p, lhs.n);
        req->vals = xmalloc(sizeof(*req->vals));
        req->vals[0] = val;
        req->n_vals = 1;
    }
    rc = 0;

out:
    free(terms.v);
    if (rc != 0) {
        selector_free(sel);
        sel = NULL;
    }
    return sel;
}

/* --- matching ------------------------------------------------------------------------------ */

static int str_cmp(const void *key, const void *elem)
{
    return strcmp(key, *(const char *const *)elem);
}

/* Requirement.hasValue; the values are sorted, so a binary search replaces Go's loop. */
static bool req_has_value(const struct sel_req *req, const char *v)
{
    return req->n_vals > 0 &&
           bsearch(v, req->vals, req->n_vals, sizeof(*req->vals), str_cmp) != NULL;
}

/* Requirement.Matches: =, ==, in need the key present with a listed value; !=, notin also
 * hold when it is absent; > and < need it present and an integer (else no match). */
static bool label_req_match(const struct sel_req *req, const struct blob *b)
{
    const char *v = blob_label(b, req->key);
    int64_t num;

    switch (req->op) {
    case SEL_OP_IN:
    case SEL_OP_EQ:
    case SEL_OP_DEQ:
        return v != NULL && req_has_value(req, v);
    case SEL_OP_NOTIN:
    case SEL_OP_NE:
        return v == NULL || !req_has_value(req, v);
    case SEL_OP_EXISTS:
        return v != NULL;
    case SEL_OP_NOT_EXISTS:
        return v == NULL;
    case SEL_OP_GT:
    case SEL_OP_LT:
        if (v == NULL || gotext_parse_int64(v, strlen(v), &num) != 0) {
            return false;
        }
        return req->op == SEL_OP_GT ? num > req->num : num < req->num;
    default:
        return false;
    }
}

/* hasTerm / notHasTerm: an absent field reads as "", so "f=" selects objects without f
 * and "f!=" those with a non-empty f. name and namespace come from the blob itself. */
static bool field_req_match(const struct sel_req *req, const struct blob *b)
{
    const char *v;

    if (strcmp(req->key, "metadata.name") == 0) {
        v = b->name;
    } else if (strcmp(req->key, "metadata.namespace") == 0) {
        v = b->ns;
    } else {
        v = blob_field(b, req->key);
    }
    if (v == NULL) {
        v = "";
    }
    return (strcmp(v, req->vals[0]) == 0) != (req->op == SEL_OP_NE);
}

bool selector_match(const struct selector *sel, const struct blob *b)
{
    static const struct blob nothing;

    if (sel == NULL) {
        return true;
    }
    if (b == NULL) {
        b = &nothing;
    }
    for (size_t i = 0; i < sel->n_reqs; i++) {
        const struct sel_req *req = &sel->reqs[i];
        bool ok = sel->kind == SEL_LABELS ? label_req_match(req, b) : field_req_match(req, b);

        if (!ok) {
            return false;
        }
    }
    return true;
}

/* --- introspection ------------------------------------------------------------------------- */

bool selector_is_empty(const struct selector *sel)
{
    return sel == NULL || sel->n_reqs == 0;
}

size_t selector_count(const struct selector *sel)
{
    return sel != NULL ? sel->n_reqs : 0;
}

const char *selector_field(const struct selector *sel, size_t i)
{
    if (sel == NULL || i >= sel->n_reqs) {
        return NULL;
    }
    return sel->reqs[i].key;
}

const char *selector_value(const struct selector *sel, size_t i)
{
    if (sel == NULL || i >= sel->n_reqs) {
        return NULL;
    }
    return sel->reqs[i].n_vals > 0 ? sel->reqs[i].vals[0] : "";
}

bool selector_negated(const struct selector *sel, size_t i)
{
    enum sel_op op;

    if (sel == NULL || i >= sel->n_reqs) {
        return false;
    }
    op = sel->reqs[i].op;
    return op == SEL_OP_NE || op == SEL_OP_NOTIN || op == SEL_OP_NOT_EXISTS;
}
