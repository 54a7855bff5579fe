/*
 * upstream.h - how to reach the upstream kube-apiserver: base URL, TLS and credentials,
 * applied to libcurl easy handles by the reflector and the passthrough.
 *
 * A token file is re-read when its mtime changes (bound service-account tokens rotate).
 * Thread safety: upstream_setup may be called from any thread (the token is guarded).
 */
#ifndef KWP_PROXY_UPSTREAM_H
#define KWP_PROXY_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>

#include <curl/curl.h>

struct upstream;

struct upstream_opts {
    const char *url;         /* http(s)://host:port[/prefix], required */
    const char *token;       /* bearer token, or NULL */
    const char *token_file;  /* file holding the bearer token, or NULL */
    const char *ca_file;     /* PEM CA bundle for https, or NULL (system store) */
    const char *ca_data;     /* PEM CA bundle in memory (kubeconfig certificate-authority-data) */
    const char *client_cert; /* PEM client certificate file, or NULL */
    const char *client_key;  /* PEM client key file, or NULL */
    const char *client_cert_data; /* in-memory PEM (kubeconfig client-certificate-data) */
    const char *client_key_data;
    bool insecure;           /* skip TLS verification */
};

/* Validates and copies <o>. Returns NULL with a message in <err>. */
struct upstream *upstream_new(const struct upstream_opts *o, char *err, size_t err_len);

void upstream_free(struct upstream *up); /* NULL-safe */

/* The base URL without a trailing slash. */
const char *upstream_url(const struct upstream *up);

/*
 * Prepares easy handle <e> for a request to <path_and_query> (starting with "/"): URL, TLS
 * options, Authorization header (appended to *<headers>, which the caller sets with
 * CURLOPT_HTTPHEADER and frees), TCP keepalive, no signals. Returns 0 or -ENOMEM.
 */
int upstream_setup(struct upstream *up, CURL *e, const char *path_and_query,
                   struct curl_slist **headers);

#endif
