/*
 * demo_auth.c - the demo's users, rules and certificates (see demo_auth.h).
 *
 * Tokens are 128 random bits from OpenSSL's RAND_bytes, in hex after the user's name. The
 * certificates are ECDSA P-256 (kubectl, curl and GnuTLS all take them), made with OpenSSL's
 * X509 and X509V3 APIs; the CA signs the two leaves and is freed, its key with it. Files are
 * created with O_EXCL | O_NOFOLLOW and mode 0600 inside the 0700 directory and remembered in
 * the order written, so demo_auth_free unlinks exactly those.
 */
#include "cmd/demo_auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "cache/bug.h"

#define DEMO_AUTH_TOKEN_BYTES 16
#define DEMO_AUTH_TOKEN_MAX 64                      /* "admin-" + 32 hex digits, with room */
#define DEMO_AUTH_DIR_MAX 192                       /* $TMPDIR/kwp-demo-XXXXXX */
#define DEMO_AUTH_PATH_MAX (DEMO_AUTH_DIR_MAX + 34) /* DIR/NAME, NAME below 32 bytes */
#define DEMO_AUTH_MAX_FILES 12
#define DEMO_AUTH_CERT_DAYS 30 /* the files go at exit; a long demo still works a month */

enum demo_user { DEMO_ALICE = 0, DEMO_BOB, DEMO_ADMIN, DEMO_PROXY, DEMO_N_USERS };

static const char *const user_names[DEMO_N_USERS] = {"alice", "bob", "admin", "kwp-proxy"};

struct demo_auth {
    char dir[DEMO_AUTH_DIR_MAX];
    char files[DEMO_AUTH_MAX_FILES][DEMO_AUTH_PATH_MAX]; /* written, in order */
    size_t n_files;
    char token[DEMO_N_USERS][DEMO_AUTH_TOKEN_MAX];
    bool pki;
    /* paths of the files the accessors name */
    char tokens_path[DEMO_AUTH_PATH_MAX], rules_path[DEMO_AUTH_PATH_MAX];
    char ca_path[DEMO_AUTH_PATH_MAX], cert_path[DEMO_AUTH_PATH_MAX], key_path[DEMO_AUTH_PATH_MAX];
};

/* Users and groups of the token file: token,user,uid[,"groups"] (tokenfile.h). */
static const char *const user_csv_tail[DEMO_N_USERS] = {
    ",alice,1001\n", ",bob,1002\n", ",admin,1000,\"system:masters\"\n", ",kwp-proxy,999\n"};

static const char rules_text[] =
    "# kwp demo --auth delegated: who may do what on the embedded simulator (sim/rbac.h).\n"
    "# Discovery for everyone authenticated (kube's system:discovery ClusterRole).\n"
    "allow name=system:discovery groups=system:authenticated verbs=get "
    "nonResourceURLs=/api,/api/*,/apis,/apis/*,/version,/version/,/openapi,/openapi/*,/healthz,"
    "/livez,/readyz\n"
    "# alice reads pods and configmaps in namespace default (a RoleBinding's reach).\n"
    "allow name=alice-reads users=alice verbs=get,list,watch apiGroups=\"\" "
    "resources=pods,configmaps namespaces=default\n"
    "# Group viewers (carol's client certificate, O=viewers) reads pods everywhere.\n"
    "allow name=viewers-read-pods groups=viewers verbs=get,list,watch apiGroups=\"\" "
    "resources=pods\n"
    "# bob: no rule (everything but discovery is Forbidden). admin: system:masters.\n"
    "# kwp's own identity (AUTH.md 6): what it caches, the reviews (system:auth-delegator),\n"
    "# impersonation of the callers it forwards for.\n"
    "allow name=kwp-reads users=kwp-proxy verbs=get,list,watch apiGroups=* resources=*\n"
    "allow name=kwp-reads-discovery users=kwp-proxy verbs=get nonResourceURLs=*\n"
    "allow name=system:auth-delegator users=kwp-proxy verbs=create "
    "apiGroups=authentication.k8s.io,authorization.k8s.io "
    "resources=tokenreviews,subjectaccessreviews\n"
    "allow name=kwp-impersonates users=kwp-proxy verbs=impersonate apiGroups=* resources=*\n";

/* <a>->dir/<name> into <out> (DEMO_AUTH_PATH_MAX). */
static const char *path_of(const struct demo_auth *a, const char *name, char *out)
{
    snprintf(out, DEMO_AUTH_PATH_MAX, "%s/%s", a->dir, name);
    return out;
}

/* Creates <dir>/<name> (0600, exclusive) for writing and remembers it for removal. NULL with a
 * message in <err>. */
static FILE *file_create(struct demo_auth *a, const char *name, char *err, size_t err_len)
{
    char p[DEMO_AUTH_PATH_MAX];
    int fd, e;
    FILE *f;

    if (a->n_files == DEMO_AUTH_MAX_FILES) {
        snprintf(err, err_len, "too many demo files");
        return NULL;
    }
    path_of(a, name, p);
    fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd == -1) {
        e = errno;
        snprintf(err, err_len, "%s: %s", p, strerror(e));
        return NULL;
    }
    snprintf(a->files[a->n_files++], DEMO_AUTH_PATH_MAX, "%s", p);
    f = fdopen(fd, "w");
    if (f == NULL) {
        e = errno;
        close(fd);
        snprintf(err, err_len, "%s: %s", p, strerror(e));
    }
    return f;
}

/* fclose with the error of any write before it. */
static int file_close(FILE *f, const struct demo_auth *a, const char *name, char *err,
                      size_t err_len)
{
    bool bad = ferror(f) != 0;
    char p[DEMO_AUTH_PATH_MAX];

    if (fclose(f) != 0 || bad) {
        snprintf(err, err_len, "%s: write failed", path_of(a, name, p));
        return -EIO;
    }
    return 0;
}

static int write_text(struct demo_auth *a, const char *name, const char *text, char *err,
                      size_t err_len)
{
    FILE *f = file_create(a, name, err, err_len);

    if (f == NULL) {
        return -EIO;
    }
    fputs(text, f);
    return file_close(f, a, name, err, err_len);
}

static int tokens_make(struct demo_auth *a, char *err, size_t err_len)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char r[DEMO_AUTH_TOKEN_BYTES];

    for (int u = 0; u < DEMO_N_USERS; u++) {
        size_t n;

        if (RAND_bytes(r, sizeof(r)) != 1) {
            snprintf(err, err_len, "no random bytes for the demo tokens");
            return -EIO;
        }
        n = strlen(user_names[u]);
        BUG_ON(n + 1 + 2 * sizeof(r) >= DEMO_AUTH_TOKEN_MAX);
        memcpy(a->token[u], user_names[u], n);
        a->token[u][n++] = '-';
        for (size_t i = 0; i < sizeof(r); i++) {
            a->token[u][n++] = hex[r[i] >> 4];
            a->token[u][n++] = hex[r[i] & 15];
        }
        a->token[u][n] = '\0';
    }
    return 0;
}

static int token_file_write(struct demo_auth *a, char *err, size_t err_len)
{
    FILE *f = file_create(a, "tokens.csv", err, err_len);

    if (f == NULL) {
        return -EIO;
    }
    for (int u = 0; u < DEMO_N_USERS; u++) {
        fputs(a->token[u], f);
        fputs(user_csv_tail[u], f);
    }
    return file_close(f, a, "tokens.csv", err, err_len);
}

/* ---- certificates ------------------------------------------------------------------------ */

/* Adds extension <nid> = <value> (openssl's config syntax) to <x>, issued by <issuer>. */
static int cert_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509_EXTENSION *e;
    int ok;

    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (e == NULL) {
        return -EINVAL;
    }
    ok = X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    return ok == 1 ? 0 : -ENOMEM;
}

/*
 * A certificate for <key> with subject /O=<org>/CN=<cn> (<org> may be NULL), signed by <ca>
 * with <ca_key> (NULL, NULL: self-signed, a CA), valid from five minutes ago for
 * DEMO_AUTH_CERT_DAYS; <exts> is a list of NID, value pairs ended by 0. NULL on failure.
 */
static X509 *cert_new(EVP_PKEY *key, const char *org, const char *cn, X509 *ca, EVP_PKEY *ca_key,
                      const int *nids, const char *const *values)
{
    X509 *x = X509_new();
    X509_NAME *name;
    BIGNUM *serial = BN_new();
    bool ok = x != NULL && serial != NULL;

    ok = ok && BN_rand(serial, 63, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 &&
         BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(x)) != NULL;
    ok = ok && X509_set_version(x, X509_VERSION_3) == 1 &&
         X509_gmtime_adj(X509_getm_notBefore(x), -300) != NULL &&
         X509_gmtime_adj(X509_getm_notAfter(x), (long)DEMO_AUTH_CERT_DAYS * 86400) != NULL &&
         X509_set_pubkey(x, key) == 1;
    name = ok ? X509_get_subject_name(x) : NULL;
    ok = ok &&
         (org == NULL || X509_NAME_add_entry_by_NID(name, NID_organizationName, MBSTRING_UTF8,
                                                    (const unsigned char *)org, -1, -1, 0) == 1);
    ok = ok && X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8,
                                          (const unsigned char *)cn, -1, -1, 0) == 1;
    ok = ok && X509_set_issuer_name(x, ca != NULL ? X509_get_subject_name(ca) : name) == 1;
    for (size_t i = 0; ok && nids[i] != 0; i++) {
        ok = cert_ext(x, ca != NULL ? ca : x, nids[i], values[i]) == 0;
    }
    ok = ok && X509_sign(x, ca_key != NULL ? ca_key : key, EVP_sha256()) > 0;
    BN_free(serial);
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

/* Writes <x> to <stem>.crt and, when <key> is set, <key> to <stem>.key. */
static int cert_write(struct demo_auth *a, const char *stem, X509 *x, EVP_PKEY *key, char *err,
                      size_t err_len)
{
    char name[32];
    FILE *f;
    int ok;

    snprintf(name, sizeof(name), "%s.crt", stem);
    f = file_create(a, name, err, err_len);
    if (f == NULL) {
        return -EIO;
    }
    ok = PEM_write_X509(f, x);
    if (file_close(f, a, name, err, err_len) != 0 || ok != 1) {
        snprintf(err, err_len, "cannot write the demo certificate %s", name);
        return -EIO;
    }
    if (key == NULL) {
        return 0;
    }
    snprintf(name, sizeof(name), "%s.key", stem);
    f = file_create(a, name, err, err_len);
    if (f == NULL) {
        return -EIO;
    }
    ok = PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
    if (file_close(f, a, name, err, err_len) != 0 || ok != 1) {
        snprintf(err, err_len, "cannot write the demo key %s", name);
        return -EIO;
    }
    return 0;
}

/* ca.crt (the CA's key stays in memory and goes with it), server.crt/.key, carol.crt/.key. */
static int pki_make(struct demo_auth *a, char *err, size_t err_len)
{
    static const int ca_nids[] = {NID_basic_constraints, NID_key_usage, NID_subject_key_identifier,
                                  0};
    static const char *const ca_values[] = {"critical,CA:TRUE", "critical,keyCertSign,cRLSign",
                                            "hash"};
    static const int leaf_nids[] = {NID_basic_constraints, NID_key_usage,
                                    NID_ext_key_usage,     NID_authority_key_identifier,
                                    NID_subject_alt_name,  0};
    static const char *const server_values[] = {"critical,CA:FALSE", "critical,digitalSignature",
                                                "serverAuth", "keyid",
                                                "IP:127.0.0.1,IP:::1,DNS:localhost"};
    static const int client_nids[] = {NID_basic_constraints, NID_key_usage, NID_ext_key_usage,
                                      NID_authority_key_identifier, 0};
    static const char *const client_values[] = {"critical,CA:FALSE", "critical,digitalSignature",
                                                "clientAuth", "keyid"};
    EVP_PKEY *ca_key = EVP_EC_gen("P-256");
    EVP_PKEY *server_key = EVP_EC_gen("P-256");
    EVP_PKEY *carol_key = EVP_EC_gen("P-256");
    X509 *ca = NULL, *server = NULL, *carol = NULL;
    int rc = -EIO;

    if (ca_key == NULL || server_key == NULL || carol_key == NULL) {
        snprintf(err, err_len, "cannot make the demo's keys");
        goto out;
    }
    ca = cert_new(ca_key, NULL, "kwp-demo-ca", NULL, NULL, ca_nids, ca_values);
    server =
        ca ? cert_new(server_key, NULL, "127.0.0.1", ca, ca_key, leaf_nids, server_values) : NULL;
    carol =
        ca ? cert_new(carol_key, "viewers", "carol", ca, ca_key, client_nids, client_values) : NULL;
    if (carol == NULL || server == NULL) {
        snprintf(err, err_len, "cannot make the demo's certificates");
        goto out;
    }
    rc = cert_write(a, "ca", ca, NULL, err, err_len);
    if (rc == 0) {
        rc = cert_write(a, "server", server, server_key, err, err_len);
    }
    if (rc == 0) {
        rc = cert_write(a, "carol", carol, carol_key, err, err_len);
    }
out:
    X509_free(ca);
    X509_free(server);
    X509_free(carol);
    EVP_PKEY_free(ca_key);
    EVP_PKEY_free(server_key);
    EVP_PKEY_free(carol_key);
    return rc;
}

/* ---- the directory ----------------------------------------------------------------------- */

struct demo_auth *demo_auth_new(bool pki, char *err, size_t err_len)
{
    struct demo_auth *a = xcalloc(1, sizeof(*a));
    const char *tmp = getenv("TMPDIR");
    int e;

    if (tmp == NULL || tmp[0] != '/' || strlen(tmp) > DEMO_AUTH_DIR_MAX - 20) {
        tmp = "/tmp";
    }
    snprintf(a->dir, sizeof(a->dir), "%s/kwp-demo-XXXXXX", tmp);
    if (mkdtemp(a->dir) == NULL) { /* mkdtemp makes it 0700 */
        e = errno;
        snprintf(err, err_len, "mkdtemp %s: %s", a->dir, strerror(e));
        free(a);
        return NULL;
    }
    a->pki = pki;
    path_of(a, "tokens.csv", a->tokens_path);
    path_of(a, "rules", a->rules_path);
    path_of(a, "ca.crt", a->ca_path);
    path_of(a, "server.crt", a->cert_path);
    path_of(a, "server.key", a->key_path);
    if (tokens_make(a, err, err_len) != 0 || token_file_write(a, err, err_len) != 0 ||
        write_text(a, "rules", rules_text, err, err_len) != 0 ||
        (pki && pki_make(a, err, err_len) != 0)) {
        demo_auth_free(a);
        return NULL;
    }
    return a;
}

void demo_auth_free(struct demo_auth *a)
{
    if (a == NULL) {
        return;
    }
    for (size_t i = a->n_files; i > 0; i--) {
        unlink(a->files[i - 1]);
    }
    rmdir(a->dir);
    OPENSSL_cleanse(a->token, sizeof(a->token));
    free(a);
}

const char *demo_auth_token_file(const struct demo_auth *a)
{
    return a->tokens_path;
}

const char *demo_auth_rules_file(const struct demo_auth *a)
{
    return a->rules_path;
}

const char *demo_auth_proxy_token(const struct demo_auth *a)
{
    return a->token[DEMO_PROXY];
}

const char *demo_auth_tls_cert_file(const struct demo_auth *a)
{
    return a->pki ? a->cert_path : NULL;
}

const char *demo_auth_tls_key_file(const struct demo_auth *a)
{
    return a->pki ? a->key_path : NULL;
}

const char *demo_auth_client_ca_file(const struct demo_auth *a)
{
    return a->pki ? a->ca_path : NULL;
}

/* ---- the banner -------------------------------------------------------------------------- */

/* <dir>/kubeconfig: cluster kwp-demo at <url>, a context and user per demo user. */
static int kubeconfig_write(struct demo_auth *a, const char *url, char *err, size_t err_len)
{
    char p[DEMO_AUTH_PATH_MAX];
    FILE *f = file_create(a, "kubeconfig", err, err_len);

    if (f == NULL) {
        return -EIO;
    }
    fprintf(f,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kwp-demo\n  cluster:\n"
            "    server: \"%s\"\n",
            url);
    if (a->pki) {
        fprintf(f, "    certificate-authority: \"%s\"\n", a->ca_path);
    }
    fputs("contexts:\n", f);
    for (int u = 0; u < DEMO_PROXY; u++) {
        fprintf(f, "- name: %s\n  context: {cluster: kwp-demo, user: %s, namespace: default}\n",
                user_names[u], user_names[u]);
    }
    if (a->pki) {
        fputs("- name: carol\n  context: {cluster: kwp-demo, user: carol, namespace: default}\n",
              f);
    }
    fputs("current-context: alice\nusers:\n", f);
    for (int u = 0; u < DEMO_PROXY; u++) {
        fprintf(f, "- name: %s\n  user: {token: \"%s\"}\n", user_names[u], a->token[u]);
    }
    if (a->pki) {
        fprintf(f, "- name: carol\n  user:\n    client-certificate: \"%s\"\n",
                path_of(a, "carol.crt", p));
        fprintf(f, "    client-key: \"%s\"\n", path_of(a, "carol.key", p));
    }
    return file_close(f, a, "kubeconfig", err, err_len);
}

void demo_auth_banner(struct demo_auth *a, FILE *out, const char *url)
{
    char err[256], kc[DEMO_AUTH_PATH_MAX], cacert[DEMO_AUTH_PATH_MAX + 16];
    const char *ca = a->ca_path;
    bool have_kc = kubeconfig_write(a, url, err, sizeof(err)) == 0;

    path_of(a, "kubeconfig", kc);
    snprintf(cacert, sizeof(cacert), "--cacert %s ", ca);
    if (!a->pki) {
        cacert[0] = '\0';
    }
    fprintf(out,
            "auth: delegated: every request is authenticated (client certificate or TokenReview)\n"
            "      and authorized (SubjectAccessReview) on the simulator; rules in %s\n"
            "users (files in %s, removed at exit):\n"
            "  alice  token %s  reads pods and configmaps in namespace default\n"
            "  bob    token %s  discovery only: everything else is Forbidden\n"
            "  admin  token %s  system:masters: everything\n",
            demo_auth_rules_file(a), a->dir, a->token[DEMO_ALICE], a->token[DEMO_BOB],
            a->token[DEMO_ADMIN]);
    if (a->pki) {
        fprintf(out,
                "  carol  client certificate %s/carol.crt (key carol.key; CN=carol, O=viewers)\n"
                "         reads pods in every namespace; the CA is %s\n",
                a->dir, ca);
    }
    if (!have_kc) {
        fprintf(out, "(no kubeconfig: %s)\n", err);
    } else {
        fprintf(out,
                "try:  kubectl --kubeconfig %s --context alice get pods,configmaps    # allowed\n"
                "      kubectl --kubeconfig %s --context alice get pods -n kube-system  "
                "# Forbidden\n"
                "      kubectl --kubeconfig %s --context bob get pods                 # Forbidden\n"
                "      kubectl --kubeconfig %s --context admin get nodes              # allowed\n",
                kc, kc, kc, kc);
        if (a->pki) {
            fprintf(out,
                    "      kubectl --kubeconfig %s --context carol get pods -A -w         "
                    "# allowed\n",
                    kc);
        }
    }
    fprintf(out,
            "      kubectl --server %s%s%s --token %s get pods\n"
            "      curl -s %s-H 'Authorization: Bearer %s' "
            "'%s/api/v1/namespaces/default/pods?resourceVersion=0'\n"
            "      curl -s %s-H 'Authorization: Bearer %s' %s/api/v1/namespaces/default/pods  "
            "# 403\n"
            "      curl -s %s%s/api/v1/namespaces/default/pods  # no credentials: 401\n",
            url, a->pki ? " --certificate-authority " : "", a->pki ? ca : "", a->token[DEMO_ALICE],
            cacert, a->token[DEMO_ALICE], url, cacert, a->token[DEMO_BOB], url, cacert, url);
}
