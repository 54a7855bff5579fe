/* upstream.c - upstream connection settings applied to curl handles (see upstream.h). */
#include "proxy/upstream.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cache/bug.h"

#define UPSTREAM_TOKEN_MAX 16384

struct upstream {
    char *url;
    char *token_file;
    char *ca_file;
    char *ca_data;
    char *client_cert;
    char *client_key;
    char *client_cert_data;
    char *client_key_data;
    bool insecure;
    pthread_mutex_t lock; /* guards token and token_mtime */
    char *token;
    struct timespec token_mtime;
};

static char *dup_or_null(const char *s)
{
    return s && s[0] ? xstrdup(s) : NULL;
}

/* Reads the token file into up->token if it changed. Under up->lock. */
static int reload_token(struct upstream *up)
{
    struct stat st;
    FILE *f;
    char *buf;
    size_t n;

    if (!up->token_file) {
        return 0;
    }
    if (stat(up->token_file, &st) == -1) {
        return -errno;
    }
    if (up->token && st.st_mtim.tv_sec == up->token_mtime.tv_sec &&
        st.st_mtim.tv_nsec == up->token_mtime.tv_nsec) {
        return 0;
    }
    f = fopen(up->token_file, "r");
    if (!f) {
        return -errno;
    }
    buf = xmalloc(UPSTREAM_TOKEN_MAX + 1);
    n = fread(buf, 1, UPSTREAM_TOKEN_MAX, f);
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) {
        n--;
    }
    buf[n] = '\0';
    free(up->token);
    up->token = buf;
    up->token_mtime = st.st_mtim;
    return 0;
}

struct upstream *upstream_new(const struct upstream_opts *o, char *err, size_t err_len)
{
    struct upstream *up;
    size_t n;

    if (!o->url || (strncmp(o->url, "http://", 7) != 0 && strncmp(o->url, "https://", 8) != 0)) {
        snprintf(err, err_len, "upstream URL %s: must start with http:// or https://",
                 o->url ? o->url : "(none)");
        return NULL;
    }
    up = xcalloc(1, sizeof(*up));
    up->url = xstrdup(o->url);
    n = strlen(up->url);
    while (n > 0 && up->url[n - 1] == '/') {
        up->url[--n] = '\0';
    }
    up->token = dup_or_null(o->token);
    up->token_file = dup_or_null(o->token_file);
    up->ca_file = dup_or_null(o->ca_file);
    up->ca_data = dup_or_null(o->ca_data);
    up->client_cert = dup_or_null(o->client_cert);
    up->client_key = dup_or_null(o->client_key);
    up->client_cert_data = dup_or_null(o->client_cert_data);
    up->client_key_data = dup_or_null(o->client_key_data);
    up->insecure = o->insecure;
    pthread_mutex_init(&up->lock, NULL);
    if (up->token_file && reload_token(up) != 0) {
        snprintf(err, err_len, "cannot read token file %s", up->token_file);
        upstream_free(up);
        return NULL;
    }
    return up;
}

void upstream_free(struct upstream *up)
{
    if (!up) {
        return;
    }
    pthread_mutex_destroy(&up->lock);
    free(up->url);
    free(up->token);
    free(up->token_file);
    free(up->ca_file);
    free(up->ca_data);
    free(up->client_cert);
    free(up->client_key);
    free(up->client_cert_data);
    free(up->client_key_data);
    free(up);
}

const char *upstream_url(const struct upstream *up)
{
    return up->url;
}

static void set_blob(CURL *e, CURLoption opt, const char *pem)
{
    struct curl_blob b = {.data = (void *)pem, .len = strlen(pem), .flags = CURL_BLOB_COPY};
    curl_easy_setopt(e, opt, &b);
}

int upstream_setup(struct upstream *up, CURL *e, const char *path_and_query,
                   struct curl_slist **headers)
{
    size_t len = strlen(up->url) + strlen(path_and_query) + 1;
    char *url = xmalloc(len);
    struct curl_slist *h;

    snprintf(url, len, "%s%s", up->url, path_and_query);
    curl_easy_setopt(e, CURLOPT_URL, url);
    free(url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 10L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    if (strncmp(up->url, "https://", 8) == 0) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, up->insecure ? 0L : 1L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, up->insecure ? 0L : 2L);
        if (up->ca_file) {
            curl_easy_setopt(e, CURLOPT_CAINFO, up->ca_file);
        }
        if (up->ca_data) {
            set_blob(e, CURLOPT_CAINFO_BLOB, up->ca_data);
        }
        if (up->client_cert) {
            curl_easy_setopt(e, CURLOPT_SSLCERT, up->client_cert);
            curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
        }
        if (up->client_key) {
            curl_easy_setopt(e, CURLOPT_SSLKEY, up->client_key);
            curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
        }
        if (up->client_cert_data) {
            set_blob(e, CURLOPT_SSLCERT_BLOB, up->client_cert_data);
            curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
        }
        if (up->client_key_data) {
            set_blob(e, CURLOPT_SSLKEY_BLOB, up->client_key_data);
            curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
        }
    }
    pthread_mutex_lock(&up->lock);
    (void)reload_token(up); /* keep the last good token if the file is briefly missing */
    if (up->token && up->token[0]) {
        size_t hl = strlen(up->token) + 32;
        char *hdr = xmalloc(hl);
        snprintf(hdr, hl, "Authorization: Bearer %s", up->token);
        h = curl_slist_append(*headers, hdr);
        free(hdr);
        if (!h) {
            pthread_mutex_unlock(&up->lock);
            return -ENOMEM;
        }
        *headers = h;
    }
    pthread_mutex_unlock(&up->lock);
    return 0;
}
