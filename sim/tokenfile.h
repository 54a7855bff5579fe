/*
 * tokenfile.h - kube-apiserver's static token file (--token-auth-file, k8s.io/apiserver
 * pkg/authentication/token/tokenfile): CSV records `token,user,uid[,"group1,group2"]` read as
 * Go's encoding/csv reads them (quoted fields with "" for a quote, records of any length, no
 * comments, blank lines skipped, CRLF taken as LF), at least three fields per record.
 * An empty token is skipped; a repeated token: the last record wins (both as tokenfile.go,
 * which only warns). The fourth field is split on ',' as strings.Split does ("" is one empty
 * group).
 *
 * A struct tokenfile is built once, then only read: any number of threads may look tokens up.
 * Depends on identity.h; libc otherwise.
 */
#ifndef KWP_SIM_TOKENFILE_H
#define KWP_SIM_TOKENFILE_H

#include <stddef.h>

#include "proxy/identity.h"

struct tokenfile;

#define TOKENFILE_MAX_BYTES (1024 * 1024) /* a larger file is refused */
#define TOKENFILE_MAX_ENTRIES 10000       /* records with a token */
#define TOKENFILE_MAX_TOKEN 4096          /* bytes of one token */

/*
 * Parses the CSV text data[0..len). <name> names the file in errors. Returns a new table (the
 * caller owns it: tokenfile_free), or NULL with a message naming the line in <err>: a CSV
 * syntax error (Go's csv.ParseError text: "parse error on line 3, column 7: bare \" in
 * non-quoted-field"), a record with fewer than three fields, a NUL byte, a field past
 * identity.h's caps or TOKENFILE_MAX_TOKEN, more than TOKENFILE_MAX_ENTRIES records or more
 * than TOKENFILE_MAX_BYTES.
 */
struct tokenfile *tokenfile_parse(const char *data, size_t len, const char *name, char *err,
                                  size_t err_len);

/* Reads and parses file <path> (tokenfile_parse's contract; an unreadable file is an error
 * too). */
struct tokenfile *tokenfile_load(const char *path, char *err, size_t err_len);

/* Frees <tf>. NULL-safe. */
void tokenfile_free(struct tokenfile *tf);

/* Records with a token (after duplicates collapsed). */
size_t tokenfile_len(const struct tokenfile *tf);

/* The user of token tok[0..len), or NULL. Lent: valid while <tf> lives. The identity is the
 * record's (name, uid, groups): the caller adds system:authenticated to its own copy. */
const struct identity *tokenfile_lookup(const struct tokenfile *tf, const char *tok, size_t len);

#endif
