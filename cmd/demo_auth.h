/*
 * demo_auth.h - what `kwp demo --auth delegated` hands the embedded simulator and the proxy:
 * demo users with random static tokens (kube-apiserver's token file), the simulator's rule
 * file (sim/rbac.h's format) that lets alice read pods and configmaps in namespace default,
 * denies bob everything but discovery and makes admin a system:masters member, kwp's own
 * token on the simulator (allowed what AUTH.md 6 lists: reads, the two review APIs and
 * impersonation), and, unless the proxy was given its own TLS flags, a CA made at start with
 * OpenSSL (its key never written anywhere), the proxy's serving certificate for 127.0.0.1 and
 * localhost and a client certificate for carol (O=viewers: pods in every namespace).
 *
 * Everything lives in a private directory (mkdtemp, 0700; files 0600, created exclusively)
 * that demo_auth_free removes. A struct demo_auth belongs to the main thread.
 */
#ifndef KWP_CMD_DEMO_AUTH_H
#define KWP_CMD_DEMO_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct demo_auth;

/*
 * Makes the directory and writes the token file and rule file into it; with <pki> also
 * ca.crt, server.crt/.key and carol.crt/.key. Returns a new struct demo_auth (the caller owns
 * it: demo_auth_free), or NULL with a message in <err> (nothing left behind).
 */
struct demo_auth *demo_auth_new(bool pki, char *err, size_t err_len);

/* Removes every file written and the directory, frees <a>. NULL-safe. */
void demo_auth_free(struct demo_auth *a);

/* Paths in the directory, lent while <a> lives: the simulator's --token-auth-file and
 * --authorization-rules. */
const char *demo_auth_token_file(const struct demo_auth *a);
const char *demo_auth_rules_file(const struct demo_auth *a);

/* kwp's own bearer token on the simulator (lent). */
const char *demo_auth_proxy_token(const struct demo_auth *a);

/* The proxy's downstream TLS: serving certificate and key, the client CA; NULL without pki. */
const char *demo_auth_tls_cert_file(const struct demo_auth *a);
const char *demo_auth_tls_key_file(const struct demo_auth *a);
const char *demo_auth_client_ca_file(const struct demo_auth *a);

/*
 * Writes <dir>/kubeconfig for the proxy at <url> (one context per user) and prints to <out>
 * the users, their tokens and certificate, and kubectl and curl commands to paste: allowed,
 * Forbidden, and without credentials (401). A kubeconfig that cannot be written is reported
 * in the text and left out of the commands.
 */
void demo_auth_banner(struct demo_auth *a, FILE *out, const char *url);

#endif
