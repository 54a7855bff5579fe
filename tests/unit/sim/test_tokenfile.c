/*
 * test_tokenfile.c - sim/tokenfile: kube-apiserver's static token CSV as Go's encoding/csv
 * reads it (quotes, CRLF, blank lines, multi-line quoted fields), tokenfile.go's rules (three
 * columns at least, empty tokens skipped, the last of a repeated token wins, groups split on
 * ','), the error texts with their line numbers, and the caps.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "sim/tokenfile.h"

static char err[512];

static struct tokenfile *parse(const char *text)
{
    err[0] = '\0';
    return tokenfile_parse(text, strlen(text), "t.csv", err, sizeof(err));
}

/* Parses <text>, asserts it fails with exactly <want>. */
static void expect_error(const char *text, const char *want)
{
    struct tokenfile *tf = parse(text);

    cr_assert_null(tf, "parsed: %s", text);
    cr_assert_str_eq(err, want);
}

static const struct identity *lookup(const struct tokenfile *tf, const char *tok)
{
    return tokenfile_lookup(tf, tok, strlen(tok));
}

Test(tokenfile, kube_format_with_groups)
{
    struct tokenfile *tf = parse("tok-a,alice,42,\"devs,ops\"\ntok-b,bob,43\n");
    const struct identity *a, *b;

    cr_assert_not_null(tf, "%s", err);
    cr_assert_eq(tokenfile_len(tf), 2);
    a = lookup(tf, "tok-a");
    cr_assert_not_null(a);
    cr_assert_str_eq(a->user, "alice");
    cr_assert_str_eq(a->uid, "42");
    cr_assert_eq(a->n_groups, 2);
    cr_assert_str_eq(a->groups[0], "devs");
    cr_assert_str_eq(a->groups[1], "ops");
    b = lookup(tf, "tok-b");
    cr_assert_not_null(b);
    cr_assert_str_eq(b->user, "bob");
    cr_assert_eq(b->n_groups, 0, "three columns: no groups");
    cr_assert_null(lookup(tf, "tok-c"));
    cr_assert_null(lookup(tf, "tok-"), "a prefix is not the token");
    cr_assert_null(tokenfile_lookup(tf, "tok-a", 4));
    tokenfile_free(tf);
}

Test(tokenfile, csv_quoting_crlf_blank_lines_and_extra_columns)
{
    struct tokenfile *tf = parse("\r\n\"t,1\",\"a \"\"q\"\" b\",\"\",g1,ignored\r\n\n"
                                 "t2,\"multi\nline\",7,\"\"\n"
                                 "t3,c,8");
    const struct identity *a, *b, *c;

    cr_assert_not_null(tf, "%s", err);
    a = lookup(tf, "t,1");
    cr_assert_not_null(a);
    cr_assert_str_eq(a->user, "a \"q\" b");
    cr_assert_str_eq(a->uid, "");
    cr_assert_eq(a->n_groups, 1);
    cr_assert_str_eq(a->groups[0], "g1");
    b = lookup(tf, "t2");
    cr_assert_not_null(b);
    cr_assert_str_eq(b->user, "multi\nline");
    /* strings.Split("", ",") is [""]: an empty fourth column is one empty group */
    cr_assert_eq(b->n_groups, 1);
    cr_assert_str_eq(b->groups[0], "");
    c = lookup(tf, "t3");
    cr_assert_not_null(c, "a last line without newline counts");
    cr_assert_str_eq(c->uid, "8");
    tokenfile_free(tf);
}

Test(tokenfile, empty_token_skipped_last_duplicate_wins)
{
    struct tokenfile *tf = parse(",nobody,1\ndup,first,1\nother,o,2\ndup,second,3\n");

    cr_assert_not_null(tf, "%s", err);
    cr_assert_eq(tokenfile_len(tf), 2);
    cr_assert_str_eq(lookup(tf, "dup")->user, "second");
    cr_assert_null(tokenfile_lookup(tf, "", 0));
    tokenfile_free(tf);
}

Test(tokenfile, empty_file_has_no_users)
{
    struct tokenfile *tf = parse("");

    cr_assert_not_null(tf);
    cr_assert_eq(tokenfile_len(tf), 0);
    cr_assert_null(lookup(tf, "x"));
    tokenfile_free(tf);
}

Test(tokenfile, too_few_columns_names_the_line)
{
    expect_error("a,b,c\n\nd,e\n", "token file 't.csv' must have at least 3 columns (token, "
                                   "user name, user uid), found 2 (line 3)");
    expect_error(" \n", "token file 't.csv' must have at least 3 columns (token, user name, "
                        "user uid), found 1 (line 1)");
}

Test(tokenfile, go_csv_parse_errors)
{
    expect_error(
        "ok,u,1\nt,a\"b,1\n",
        "token file 't.csv': parse error on line 2, column 4: bare \" in non-quoted-field");
    expect_error("\"t\"x,u,1\n", "token file 't.csv': parse error on line 1, column 3: "
                                 "extraneous or missing \" in quoted-field");
    expect_error("ok,u,1\n\"open,u,1\nmore\n", "token file 't.csv': record on line 2; parse "
                                               "error on line 3, column 6: extraneous or "
                                               "missing \" in quoted-field");
}

Test(tokenfile, nul_byte_refused_with_line)
{
    static const char text[] = "a,b,c\nd,e\0,f\n";
    struct tokenfile *tf = tokenfile_parse(text, sizeof(text) - 1, "t.csv", err, sizeof(err));

    cr_assert_null(tf);
    cr_assert_str_eq(err, "token file 't.csv' line 2: a NUL byte");
}

Test(tokenfile, caps)
{
    size_t n = TOKENFILE_MAX_BYTES + 1;
    char *big = malloc(n + 1);
    char *line;
    struct tokenfile *tf;
    size_t len = 0, cap = (TOKENFILE_MAX_ENTRIES + 1) * 16 + 1;

    memset(big, 'x', n);
    big[n] = '\0';
    tf = tokenfile_parse(big, n, "t.csv", err, sizeof(err));
    cr_assert_null(tf);
    cr_assert_str_eq(err, "token file 't.csv' is larger than 1048576 bytes");
    free(big);

    big = malloc(cap);
    for (int i = 0; i <= TOKENFILE_MAX_ENTRIES; i++) {
        len += (size_t)snprintf(big + len, cap - len, "t%d,u,1\n", i);
    }
    tf = tokenfile_parse(big, len, "t.csv", err, sizeof(err));
    cr_assert_null(tf);
    cr_assert_str_eq(err, "token file 't.csv' line 10001: more than 10000 tokens");
    free(big);

    line = malloc(IDENTITY_MAX_STR + 32);
    memset(line, 'u', IDENTITY_MAX_STR + 1);
    memcpy(line + IDENTITY_MAX_STR + 1, ",1\n", 4);
    big = malloc(IDENTITY_MAX_STR + 64);
    snprintf(big, IDENTITY_MAX_STR + 64, "ok,u,1\nt,%s", line);
    expect_error(big, "token file 't.csv' line 2: a user name, uid or group longer than 4096 "
                      "bytes");
    free(big);
    free(line);
}

Test(tokenfile, load_reads_the_file_and_names_a_missing_one)
{
    char dir[] = "/tmp/kwp-tokenfile-XXXXXX";
    char path[64];
    FILE *f;
    struct tokenfile *tf;

    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/tokens.csv", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("s3cret,alice,1,\"a,b\"\n", f);
    fclose(f);
    tf = tokenfile_load(path, err, sizeof(err));
    cr_assert_not_null(tf, "%s", err);
    cr_assert_str_eq(lookup(tf, "s3cret")->groups[1], "b");
    tokenfile_free(tf);
    unlink(path);
    tf = tokenfile_load(path, err, sizeof(err));
    cr_assert_null(tf);
    cr_assert(strstr(err, "No such file") != NULL, "%s", err);
    rmdir(dir);
}
