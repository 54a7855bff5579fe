/*
 * tokenfile.c - the static token file (tokenfile.h).
 *
 * The CSV reader is a port of Go's encoding/csv readRecord with the Reader's defaults (comma
 * ',', no comment character, LazyQuotes and TrimLeadingSpace off), so that a file kube-apiserver
 * refuses is refused here with the same "parse error on line L, column C" text. It works on a
 * private copy of the file, which it normalises line by line as readLine does (CRLF -> LF).
 * Records are kept sorted by token for lookups; the last record of a repeated token wins.
 */
#include "sim/tokenfile.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/bug.h"
#include "sim/filebuf.h"

#define CSV_BARE_QUOTE "bare \" in non-quoted-field"
#define CSV_QUOTE "extraneous or missing \" in quoted-field"
#define CSV_KEEP_FIELDS 4 /* token, user, uid, groups; more fields are counted, not kept */

struct tokenfile_entry {
    char *token;
    size_t token_len;
    size_t seq; /* record number: the later of two equal tokens wins */
    struct identity *id;
};

struct tokenfile {
    struct tokenfile_entry *e; /* sorted by token, unique */
    size_t n;
};

/* ---- Go's csv.Reader ------------------------------------------------------------------- */

struct csv_reader {
    char *buf; /* private copy of the input */
    size_t len, off;
    int num_line; /* lines read so far (Reader.numLine) */
};

/* One record's fields, copied (quotes undone) into <out>, each NUL-terminated. */
struct csv_record {
    char *out; /* room for the whole input plus one NUL per byte */
    size_t out_len;
    size_t field[CSV_KEEP_FIELDS]; /* offsets into out */
    size_t n_fields;               /* all fields, kept or not */
    int line;                      /* the line the record starts on */
};

/* lengthNL: 1 when <line> ends with '\n'. */
static size_t length_nl(const char *line, size_t n)
{
    return n > 0 && line[n - 1] == '\n' ? 1 : 0;
}

/* Reader.readLine: the next line with its '\n' (none at the end of the input), CRLF made LF,
 * a '\r' right before the end of the input dropped. False at the end of the input. */
static bool csv_read_line(struct csv_reader *r, char **line, size_t *n)
{
    char *s = r->buf + r->off, *nl;
    size_t sz;

    *line = s;
    *n = 0;
    if (r->off >= r->len) {
        return false;
    }
    nl = memchr(s, '\n', r->len - r->off);
    sz = nl != NULL ? (size_t)(nl - s) + 1 : r->len - r->off;
    r->off += sz;
    if (nl == NULL && s[sz - 1] == '\r') {
        sz--;
    }
    r->num_line++;
    if (sz >= 2 && s[sz - 2] == '\r' && s[sz - 1] == '\n') {
        s[sz - 2] = '\n';
        sz--;
    }
    *n = sz;
    return true;
}

static void rec_field_begin(struct csv_record *rec)
{
    if (rec->n_fields < CSV_KEEP_FIELDS) {
        rec->field[rec->n_fields] = rec->out_len;
    }
}

static void rec_field_append(struct csv_record *rec, const char *s, size_t n)
{
    if (rec->n_fields < CSV_KEEP_FIELDS) {
        memcpy(rec->out + rec->out_len, s, n);
        rec->out_len += n;
    }
}

static void rec_field_end(struct csv_record *rec)
{
    if (rec->n_fields < CSV_KEEP_FIELDS) {
        rec->out[rec->out_len++] = '\0';
    }
    rec->n_fields++;
}

static const char *rec_at(const struct csv_record *rec, size_t i)
{
    return rec->out + rec->field[i];
}

/* csv.ParseError's text. */
static void parse_error(char *err, size_t err_len, const char *name, int start_line, int line,
                        size_t col, const char *what)
{
    if (start_line != line) {
        snprintf(err, err_len,
                 "token file '%s': record on line %d; parse error on line %d, "
                 "column %zu: %s",
                 name, start_line, line, col, what);
    } else {
        snprintf(err, err_len, "token file '%s': parse error on line %d, column %zu: %s", name,
                 line, col, what);
    }
}

/* A quoted field, after its opening quote (readRecord's quoted branch). Returns 1 when more
 * fields follow on the line, 0 at the end of the record, -EINVAL on a quote error. */
static int csv_quoted(struct csv_reader *r, struct csv_record *rec, char **linep, size_t *np,
                      size_t *colp, const char *name, char *err, size_t err_len)
{
    char *line = *linep;
    size_t n = *np, col = *colp;
    int pos_line = r->num_line;

    rec_field_begin(rec);
    for (;;) {
        char *q = memchr(line, '"', n);

        if (q != NULL) {
            size_t i = (size_t)(q - line);

            rec_field_append(rec, line, i);
            line += i + 1;
            n -= i + 1;
            col += i + 1;
            if (n > 0 && line[0] == '"') { /* "" is one quote */
                rec_field_append(rec, "\"", 1);
                line++;
                n--;
                col++;
            } else if (n > 0 && line[0] == ',') {
                rec_field_end(rec);
                *linep = line + 1;
                *np = n - 1;
                *colp = col + 1;
                return 1;
            } else if (length_nl(line, n) == n) {
                rec_field_end(rec);
                return 0;
            } else {
                parse_error(err, err_len, name, rec->line, r->num_line, col - 1, CSV_QUOTE);
                return -EINVAL;
            }
        } else if (n > 0) {
            /* the field goes on on the next line */
            rec_field_append(rec, line, n);
            col += n;
            (void)csv_read_line(r, &line, &n);
            if (n > 0) {
                pos_line++;
                col = 1;
            }
        } else {
            parse_error(err, err_len, name, rec->line, pos_line, col, CSV_QUOTE);
            return -EINVAL;
        }
    }
}

/* Reader.Read: the next record into <rec>. Returns 1, 0 at the end of the input, or -EINVAL
 * with the parse error in <err>. */
static int csv_read_record(struct csv_reader *r, struct csv_record *rec, const char *name,
                           char *err, size_t err_len)
{
    char *line;
    size_t n, col = 1;

    for (;;) {
        if (!csv_read_line(r, &line, &n)) {
            return 0;
        }
        if (n != length_nl(line, n)) {
            break; /* blank lines are skipped */
        }
    }
    rec->out_len = 0;
    rec->n_fields = 0;
    rec->line = r->num_line;
    for (;;) {
        if (n == 0 || line[0] != '"') {
            char *comma = memchr(line, ',', n);
            size_t flen = comma != NULL ? (size_t)(comma - line) : n - length_nl(line, n);
            char *q = memchr(line, '"', flen);

            if (q != NULL) {
                parse_error(err, err_len, name, rec->line, r->num_line, col + (size_t)(q - line),
                            CSV_BARE_QUOTE);
                return -EINVAL;
            }
            rec_field_begin(rec);
            rec_field_append(rec, line, flen);
            rec_field_end(rec);
            if (comma == NULL) {
                return 1;
            }
            line += flen + 1;
            n -= flen + 1;
            col += flen + 1;
        } else {
            int rc;

            line++;
            n--;
            col++;
            rc = csv_quoted(r, rec, &line, &n, &col, name, err, err_len);
            if (rc <= 0) {
                return rc < 0 ? rc : 1;
            }
        }
    }
}

/* ---- the table ------------------------------------------------------------------------- */

static void entries_free(struct tokenfile_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(e[i].token);
        identity_free(e[i].id);
    }
    free(e);
}

void tokenfile_free(struct tokenfile *tf)
{
    if (tf == NULL) {
        return;
    }
    entries_free(tf->e, tf->n);
    free(tf);
}

static int token_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);

    if (c != 0) {
        return c;
    }
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

static int entry_cmp(const void *pa, const void *pb)
{
    const struct tokenfile_entry *a = pa, *b = pb;
    int c = token_cmp(a->token, a->token_len, b->token, b->token_len);

    if (c != 0) {
        return c;
    }
    return a->seq < b->seq ? -1 : a->seq > b->seq ? 1 : 0;
}

/* The identity of one record (user, uid, groups split on ','). */
static int record_identity(const struct csv_record *rec, struct identity **out)
{
    struct identity *id = identity_new(rec_at(rec, 1));
    int rc;

    *out = NULL;
    if (id == NULL) {
        return -ENAMETOOLONG;
    }
    rc = identity_set_uid(id, rec_at(rec, 2));
    if (rc == 0 && rec->n_fields >= 4) {
        const char *g = rec_at(rec, 3);

        for (;;) {
            const char *comma = strchr(g, ',');
            size_t glen = comma != NULL ? (size_t)(comma - g) : strlen(g);
            char *one = xstrndup(g, glen);

            rc = glen > IDENTITY_MAX_STR ? -ENAMETOOLONG : identity_add_group(id, one);
            free(one);
            if (rc != 0 || comma == NULL) {
                break;
            }
            g = comma + 1;
        }
    }
    if (rc != 0) {
        identity_free(id);
        return rc;
    }
    *out = id;
    return 0;
}

/* Sorts and collapses repeated tokens to their last record. */
static void entries_finish(struct tokenfile *tf)
{
    size_t w = 0;

    if (tf->n > 1) {
        qsort(tf->e, tf->n, sizeof(*tf->e), entry_cmp);
    }
    for (size_t i = 0; i < tf->n; i++) {
        if (i + 1 < tf->n && token_cmp(tf->e[i].token, tf->e[i].token_len, tf->e[i + 1].token,
                                       tf->e[i + 1].token_len) == 0) {
            free(tf->e[i].token);
            identity_free(tf->e[i].id);
            continue;
        }
        tf->e[w++] = tf->e[i];
    }
    tf->n = w;
}

/* Checks one record and appends its entry. Returns 0 or -EINVAL with <err> set. */
static int add_record(struct tokenfile *tf, size_t *cap, const struct csv_record *rec,
                      const char *name, char *err, size_t err_len)
{
    const char *tok = rec_at(rec, 0);
    size_t tok_len = strlen(tok);
    struct identity *id;
    int rc;

    if (tok_len == 0) {
        return 0; /* tokenfile.go skips it with a warning */
    }
    if (tf->n >= TOKENFILE_MAX_ENTRIES) {
        snprintf(err, err_len, "token file '%s' line %d: more than %d tokens", name, rec->line,
                 TOKENFILE_MAX_ENTRIES);
        return -EINVAL;
    }
    if (tok_len > TOKENFILE_MAX_TOKEN) {
        snprintf(err, err_len, "token file '%s' line %d: token longer than %d bytes", name,
                 rec->line, TOKENFILE_MAX_TOKEN);
        return -EINVAL;
    }
    rc = record_identity(rec, &id);
    if (rc != 0) {
        if (rc == -E2BIG) {
            snprintf(err, err_len, "token file '%s' line %d: more than %d groups", name, rec->line,
                     IDENTITY_MAX_GROUPS);
        } else {
            snprintf(err, err_len,
                     "token file '%s' line %d: a user name, uid or group longer than %d bytes",
                     name, rec->line, IDENTITY_MAX_STR);
        }
        return -EINVAL;
    }
    if (tf->n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        tf->e = xrealloc(tf->e, *cap * sizeof(*tf->e));
    }
    tf->e[tf->n].token = xstrndup(tok, tok_len);
    tf->e[tf->n].token_len = tok_len;
    tf->e[tf->n].seq = tf->n;
    tf->e[tf->n].id = id;
    tf->n++;
    return 0;
}

/* The 1-based line of byte <off> in data. */
static int line_of(const char *data, size_t off)
{
    int line = 1;

    for (size_t i = 0; i < off; i++) {
        line += data[i] == '\n';
    }
    return line;
}

struct tokenfile *tokenfile_parse(const char *data, size_t len, const char *name, char *err,
                                  size_t err_len)
{
    struct tokenfile *tf = NULL;
    struct csv_reader r = {0};
    struct csv_record rec = {0};
    const char *nul;
    size_t cap = 0;
    int rc = -EINVAL;

    if (len > TOKENFILE_MAX_BYTES) {
        snprintf(err, err_len, "token file '%s' is larger than %d bytes", name,
                 TOKENFILE_MAX_BYTES);
        return NULL;
    }
    nul = len > 0 ? memchr(data, '\0', len) : NULL;
    if (nul != NULL) {
        snprintf(err, err_len, "token file '%s' line %d: a NUL byte", name,
                 line_of(data, (size_t)(nul - data)));
        return NULL;
    }
    tf = xcalloc(1, sizeof(*tf));
    r.buf = xmalloc(len + 1);
    if (len > 0) {
        memcpy(r.buf, data, len);
    }
    r.len = len;
    rec.out = xmalloc(2 * len + 2);
    for (;;) {
        rc = csv_read_record(&r, &rec, name, err, err_len);
        if (rc <= 0) {
            break;
        }
        if (rec.n_fields < 3) {
            snprintf(err, err_len,
                     "token file '%s' must have at least 3 columns (token, user "
                     "name, user uid), found %zu (line %d)",
                     name, rec.n_fields, rec.line);
            rc = -EINVAL;
            break;
        }
        rc = add_record(tf, &cap, &rec, name, err, err_len);
        if (rc != 0) {
            break;
        }
    }
    free(r.buf);
    free(rec.out);
    if (rc != 0) {
        tokenfile_free(tf);
        return NULL;
    }
    entries_finish(tf);
    return tf;
}

struct tokenfile *tokenfile_load(const char *path, char *err, size_t err_len)
{
    size_t n;
    char *buf = filebuf_read(path, TOKENFILE_MAX_BYTES, &n, err, err_len);
    struct tokenfile *tf;

    if (buf == NULL) {
        return NULL;
    }
    tf = tokenfile_parse(buf, n, path, err, err_len);
    free(buf);
    return tf;
}

size_t tokenfile_len(const struct tokenfile *tf)
{
    return tf->n;
}

const struct identity *tokenfile_lookup(const struct tokenfile *tf, const char *tok, size_t len)
{
    size_t lo = 0, hi = tf->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = token_cmp(tf->e[mid].token, tf->e[mid].token_len, tok, len);

        if (c == 0) {
            return tf->e[mid].id;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}
