/*
 * continue_token.h - LIST continue tokens (SEMANTICS 1.6): the opaque "metadata.continue" of
 * a LIST page, made and checked byte for byte as kube-apiserver's storage layer does, so a
 * token from kwp works against the apiserver and back, and a bad one gets the apiserver's
 * error text. Pure functions; any thread.
 */
#ifndef KWP_PROXY_CONTINUE_TOKEN_H
#define KWP_PROXY_CONTINUE_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#define CONTINUE_TOKEN_MAX 4096 /* bytes of one continue token */

/* Encodes base64url-no-padding({"v":"meta.k8s.io/v1","rv":<rv>,"start":"<start_key>\u0000"}),
 * the key escaped as Go's json.Marshal does. Returns the token length (snprintf semantics;
 * <out> may be NULL when cap is 0). */
size_t continue_token_encode(int64_t rv, const char *start_key, char *out, size_t cap);

/*
 * Decodes a token as kube-apiserver's DecodeContinue does (accepts a leading "/" or not,
 * path.Clean). Sets *rv and the start key with the trailing \0 removed and no leading "/"
 * (<start>, at most start_cap-1 bytes). On error returns -EINVAL and the exact text after
 * "invalid continue token: " in <err>, e.g. "continue key is not valid: ...". Error texts are
 * Go's, including base64 ("illegal base64 data at input byte 7") and encoding/json syntax and
 * type errors. Differences from the apiserver: tokens longer than CONTINUE_TOKEN_MAX are
 * refused; the start key ends at its first NUL (callers treat it as exclusive, which equals
 * apiserver's ">= key\0" for NUL-free keys; only a hand-made token without the \0 differs);
 * a NUL inside echoed token text truncates <err>; a key that does not fit <start> is -EINVAL
 * (start_cap >= 3 * CONTINUE_TOKEN_MAX always suffices: invalid UTF-8 widens to U+FFFD).
 */
int continue_token_decode(const char *tok, int64_t *rv, char *start, size_t start_cap, char *err,
                          size_t err_len);

#endif
