/*
 * tls.h - the downstream TLS pieces http_server.c hands libmicrohttpd (GnuTLS): the serving
 * certificate, re-read when its files change without dropping a connection, and the
 * identity of a verified x509 client certificate (AUTH.md 3: CN = user, every O = a group;
 * read as Go's pkix.Name is: the last CN of the subject, the Os in order).
 *
 * The certificate is handed per handshake through MHD_OPTION_HTTPS_CERT_CALLBACK (GnuTLS's
 * retrieve function has no context pointer, so the one serving certificate is a process-wide
 * slot: one https listener per process, which is what kwp runs). The files' mtimes and sizes
 * are checked at most once a second; a new pair that does not load is logged and the old one
 * kept. Certificates once handed out are kept until tls_certs_free (a handshake in progress
 * may still use them), so each rotation costs one certificate's memory.
 * Threads: the callback runs on MHD threads; tls_certs_* are thread-safe (one mutex, never
 * held across I/O other than reading the two files). Depends on GnuTLS and OpenSSL.
 */
#ifndef KWP_PROXY_TLS_H
#define KWP_PROXY_TLS_H

#include <stddef.h>

struct identity;
struct tls_certs;

#define TLS_RELOAD_CHECK_MS 1000 /* how often the files are looked at */

/*
 * Loads <cert_file> and <key_file> (PEM) and makes them the process's serving certificate.
 * Returns NULL with a message in <err> when they do not load or another is installed.
 */
struct tls_certs *tls_certs_new(const char *cert_file, const char *key_file, char *err,
                                size_t err_len);

/* Uninstalls and frees (the daemon using it must be stopped). NULL-safe. */
void tls_certs_free(struct tls_certs *c);

/* The gnutls_certificate_retrieve_function2 to pass as MHD_OPTION_HTTPS_CERT_CALLBACK. */
void *tls_certs_callback(void);

/* How many times a changed pair was loaded (for tests and logs). */
unsigned tls_certs_reloads(struct tls_certs *c);

/*
 * The identity of the verified client certificate of the TLS session <session> (a
 * gnutls_session_t): 0 with *out (caller owns it: user = the last Subject CN, groups =
 * every Subject O in order, plus system:authenticated); -ENOENT when the client sent none; -EACCES
 * when it does not verify against the server's trust list (MHD_OPTION_HTTPS_MEM_TRUST) or has no
 * CN.
 */
int tls_client_identity(void *session, struct identity **out);

#endif
