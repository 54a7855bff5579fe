/*
 * tls.c - the serving certificate slot and client certificate identities (see tls.h).
 *
 * A struct tls_pair is one loaded certificate chain and key in GnuTLS's pcert form; pairs
 * are chained on the slot newest first and freed only with the slot, since GnuTLS reads the
 * pair it was handed during the handshake after the callback returned.
 */
#include "proxy/tls.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <openssl/objects.h>
#include <openssl/x509.h>

#include "cache/bug.h"
#include "proxy/identity.h"
#include "proxy/log.h"

#define TLS_MAX_CHAIN 16

struct tls_pair {
    gnutls_pcert_st pcert[TLS_MAX_CHAIN];
    unsigned n_pcert;
    gnutls_privkey_t key;
    struct tls_pair *older;
};

struct tls_certs {
    char *cert_file;
    char *key_file;
    pthread_mutex_t mu;
    struct tls_pair *cur;                  /* under mu */
    struct timespec cert_mtime, key_mtime; /* under mu: of the files <cur> came from */
    off_t cert_size, key_size;             /* under mu */
    int64_t checked_ms;                    /* under mu */
    unsigned reloads;                      /* under mu */
};

static pthread_mutex_t slot_mu = PTHREAD_MUTEX_INITIALIZER;
static struct tls_certs *slot; /* under slot_mu: the installed certificates */

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void pair_free(struct tls_pair *p)
{
    while (p != NULL) {
        struct tls_pair *older = p->older;
        for (unsigned i = 0; i < p->n_pcert; i++) {
            gnutls_pcert_deinit(&p->pcert[i]);
        }
        if (p->key != NULL) {
            gnutls_privkey_deinit(p->key);
        }
        free(p);
        p = older;
    }
}

/* Loads the pair from the files. NULL with a message in <err>. */
static struct tls_pair *pair_load(const char *cert_file, const char *key_file, char *err,
                                  size_t err_len)
{
    struct tls_pair *p = xcalloc(1, sizeof(*p));
    gnutls_datum_t cert = {NULL, 0}, key = {NULL, 0};
    unsigned n = TLS_MAX_CHAIN;
    int rc;

    rc = gnutls_load_file(cert_file, &cert);
    if (rc == 0) {
        rc = gnutls_pcert_list_import_x509_raw(p->pcert, &n, &cert, GNUTLS_X509_FMT_PEM, 0);
        if (rc == 0) {
            p->n_pcert = n;
        }
    }
    if (rc < 0) {
        snprintf(err, err_len, "%s: %s", cert_file, gnutls_strerror(rc));
        goto fail;
    }
    rc = gnutls_load_file(key_file, &key);
    if (rc == 0) {
        rc = gnutls_privkey_init(&p->key);
    }
    if (rc == 0) {
        rc = gnutls_privkey_import_x509_raw(p->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
    }
    if (rc < 0) {
        snprintf(err, err_len, "%s: %s", key_file, gnutls_strerror(rc));
        goto fail;
    }
    gnutls_free(cert.data);
    gnutls_free(key.data);
    return p;
fail:
    gnutls_free(cert.data);
    gnutls_free(key.data);
    pair_free(p);
    return NULL;
}

static bool file_stat(const char *path, struct timespec *mtime, off_t *size)
{
    struct stat st;

    if (stat(path, &st) == -1) {
        return false;
    }
    *mtime = st.st_mtim;
    *size = st.st_size;
    return true;
}

/* Reloads the pair when a file changed (at most once per TLS_RELOAD_CHECK_MS). Under c->mu. */
static void maybe_reload(struct tls_certs *c)
{
    struct timespec cm, km;
    off_t cs, ks;
    int64_t now = mono_ms();
    struct tls_pair *p;
    char err[256];

    if (now - c->checked_ms < TLS_RELOAD_CHECK_MS) {
        return;
    }
    c->checked_ms = now;
    if (!file_stat(c->cert_file, &cm, &cs) || !file_stat(c->key_file, &km, &ks)) {
        return; /* being replaced: keep serving the old pair */
    }
    if (cm.tv_sec == c->cert_mtime.tv_sec && cm.tv_nsec == c->cert_mtime.tv_nsec &&
        km.tv_sec == c->key_mtime.tv_sec && km.tv_nsec == c->key_mtime.tv_nsec &&
        cs == c->cert_size && ks == c->key_size) {
        return;
    }
    p = pair_load(c->cert_file, c->key_file, err, sizeof(err));
    c->cert_mtime = cm;
    c->key_mtime = km;
    c->cert_size = cs;
    c->key_size = ks;
    if (p == NULL) {
        log_warn("tls", "msg=\"changed certificate does not load, keeping the old one: %s\"", err);
        return;
    }
    p->older = c->cur;
    c->cur = p;
    c->reloads++;
    log_info("tls", "cert=%s msg=\"serving certificate reloaded\"", c->cert_file);
}

static int retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                    const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                    gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *key)
{
    struct tls_certs *c;

    (void)session, (void)req_ca_rdn, (void)nreqs, (void)pk_algos, (void)pk_algos_length;
    pthread_mutex_lock(&slot_mu);
    c = slot;
    pthread_mutex_unlock(&slot_mu);
    if (c == NULL) {
        return -1;
    }
    pthread_mutex_lock(&c->mu);
    maybe_reload(c);
    *pcert = c->cur->pcert;
    *pcert_length = c->cur->n_pcert;
    *key = c->cur->key;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

void *tls_certs_callback(void)
{
    gnutls_certificate_retrieve_function2 *fn = retrieve;
    return (void *)fn;
}

struct tls_certs *tls_certs_new(const char *cert_file, const char *key_file, char *err,
                                size_t err_len)
{
    struct tls_certs *c = xcalloc(1, sizeof(*c));

    c->cert_file = xstrdup(cert_file);
    c->key_file = xstrdup(key_file);
    pthread_mutex_init(&c->mu, NULL);
    (void)file_stat(cert_file, &c->cert_mtime, &c->cert_size);
    (void)file_stat(key_file, &c->key_mtime, &c->key_size);
    c->checked_ms = mono_ms();
    c->cur = pair_load(cert_file, key_file, err, err_len);
    if (c->cur == NULL) {
        tls_certs_free(c);
        return NULL;
    }
    pthread_mutex_lock(&slot_mu);
    if (slot != NULL) {
        pthread_mutex_unlock(&slot_mu);
        snprintf(err, err_len, "only one https listener per process");
        tls_certs_free(c);
        return NULL;
    }
    slot = c;
    pthread_mutex_unlock(&slot_mu);
    return c;
}

void tls_certs_free(struct tls_certs *c)
{
    if (c == NULL) {
        return;
    }
    pthread_mutex_lock(&slot_mu);
    if (slot == c) {
        slot = NULL;
    }
    pthread_mutex_unlock(&slot_mu);
    pair_free(c->cur);
    pthread_mutex_destroy(&c->mu);
    free(c->cert_file);
    free(c->key_file);
    free(c);
}

unsigned tls_certs_reloads(struct tls_certs *c)
{
    unsigned n;

    pthread_mutex_lock(&c->mu);
    n = c->reloads;
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* The <i>th entry of <name> as a new NUL-terminated UTF-8 string (OPENSSL_free), or NULL
 * when it does not convert or holds a NUL byte. */
static char *name_entry_text(X509_NAME *name, int i)
{
    ASN1_STRING *d = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
    unsigned char *utf8 = NULL;
    int n = ASN1_STRING_to_UTF8(&utf8, d);

    if (n <= 0 || memchr(utf8, '\0', (size_t)n) != NULL) {
        OPENSSL_free(utf8);
        return NULL;
    }
    return (char *)utf8;
}

/*
 * The identity of subject <name> as Go's pkix.Name.FillFromRDNSequence reads it, which the
 * apiserver's x509 authenticator uses: the user is the LAST CN (each one overwrites
 * Subject.CommonName), the groups are every O in order (appended to Subject.Organization).
 * Returns 0 with *id, or -EACCES: no CN, an empty last CN (the authenticator then does not
 * authenticate), an entry that is not text.
 */
static int name_identity(X509_NAME *name, struct identity **id)
{
    int last = -1;
    char *text;

    for (int i = X509_NAME_get_index_by_NID(name, NID_commonName, -1); i >= 0;
         i = X509_NAME_get_index_by_NID(name, NID_commonName, i)) {
        last = i;
    }
    if (last < 0) {
        return -EACCES;
    }
    text = name_entry_text(name, last);
    *id = text != NULL && text[0] != '\0' ? identity_new(text) : NULL;
    OPENSSL_free(text);
    if (*id == NULL) {
        return -EACCES;
    }
    for (int i = X509_NAME_get_index_by_NID(name, NID_organizationName, -1); i >= 0;
         i = X509_NAME_get_index_by_NID(name, NID_organizationName, i)) {
        int rc;

        text = name_entry_text(name, i);
        rc = text != NULL ? identity_add_group(*id, text) : -EACCES;
        OPENSSL_free(text);
        if (rc != 0) {
            return -EACCES;
        }
    }
    return 0;
}

int tls_client_identity(void *session, struct identity **out)
{
    gnutls_session_t s = session;
    gnutls_typed_vdata_st client_auth = {GNUTLS_DT_KEY_PURPOSE_OID,
                                         (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT, 0};
    const gnutls_datum_t *peers;
    unsigned n = 0, status = 0;
    const unsigned char *der;
    X509 *x = NULL;
    struct identity *id = NULL;
    int rc = -EACCES;

    *out = NULL;
    peers = s != NULL ? gnutls_certificate_get_peers(s, &n) : NULL;
    if (peers == NULL || n == 0) {
        return -ENOENT;
    }
    /* x509.Verify with KeyUsages ClientAuth, as the apiserver's x509 authenticator asks (a
     * certificate without extended key usage passes) */
    if (gnutls_certificate_verify_peers(s, &client_auth, 1, &status) != 0 || status != 0) {
        return -EACCES;
    }
    der = peers[0].data;
    x = d2i_X509(NULL, &der, (long)peers[0].size);
    if (x == NULL) {
        return -EACCES;
    }
    rc = name_identity(X509_get_subject_name(x), &id);
    if (rc == 0 && identity_add_authenticated(id) != 0) {
        rc = -EACCES;
    }
    X509_free(x);
    if (rc != 0) {
        identity_free(id);
        return rc;
    }
    *out = id;
    return 0;
}
