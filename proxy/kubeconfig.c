/*
 * kubeconfig.c - kubeconfig files to a resolved target (see kubeconfig.h).
 *
 * Each file goes through libyaml twice: an event pass that enforces the depth and node caps
 * before anything is built, then yaml_parser_load for a node tree that is read into the
 * entries below and dropped. Aliases may make that tree a DAG or even a cycle, so every walk
 * counts the nodes it visits and the bytes it copies (a "billion laughs" file stops at a cap)
 * and the one generic walk (the exec extension to JSON) is depth-bounded. Entries keep strings
 * exactly as the file has them, paths already resolved and -data already decoded, so
 * kubeconfig_resolve only validates and copies. Includes libyaml, OpenSSL (base64) and cJSON.
 */
#include "proxy/kubeconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>
#include <openssl/evp.h>
#include <yaml.h>

#include "cache/bug.h"

#define KC_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define KC_EXEC_V1 "client.authentication.k8s.io/v1"
#define KC_EXEC_V1BETA1 "client.authentication.k8s.io/v1beta1"
#define KC_MAX_VISITS                                                                              \
    (4 * (size_t)KUBECONFIG_MAX_NODES) /* node visits per file, aliases included */

/* ---- entries ------------------------------------------------------------------------------ */

struct kc_cluster {
    char *name;   /* "" when the file gives none */
    char *origin; /* file it came from */
    unsigned long line;
    char *server;
    char *ca_file; /* resolved */
    char *ca_data; /* decoded */
    size_t ca_data_len;
    bool insecure;
    char *tls_server_name;
    char *proxy_url;
    bool disable_compression;
    char *exec_ext; /* JSON */
};

struct kc_user {
    char *name;
    char *origin;
    unsigned long line;
    char *token;
    char *token_file; /* resolved */
    char *cert_file;  /* resolved */
    char *key_file;   /* resolved */
    char *cert_data;  /* decoded */
    size_t cert_data_len;
    char *key_data; /* decoded */
    size_t key_data_len;
    char *username;
    char *password;
    char *auth_provider;       /* its name ("" unnamed), or NULL when absent */
    const char *impersonation; /* the first impersonation key set, or NULL */
    bool has_exec;
    struct kubeconfig_exec exec; /* command resolved; interactive from interactive_mode */
    char *interactive_mode;      /* as written, or NULL */
};

struct kc_context {
    char *name;
    char *origin;
    unsigned long line;
    char *cluster;
    char *user;
};

struct kubeconfig {
    struct kc_cluster *clusters;
    size_t clusters_len;
    struct kc_user *users;
    size_t users_len;
    struct kc_context *contexts;
    size_t contexts_len;
    char *current_context; /* from the first file that sets one */
};

/* ---- small helpers ------------------------------------------------------------------------ */

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

static char *mem_dup(const char *p, size_t n)
{
    char *d;

    if (!p) {
        return NULL;
    }
    d = xmalloc(n + 1);
    memcpy(d, p, n);
    d[n] = '\0';
    return d;
}

/* Go's filepath.Clean, for the '/'-separated paths of Linux. */
static char *path_clean(const char *p)
{
    size_t n = strlen(p);
    char *out = xmalloc(n + 2);
    bool rooted = p[0] == '/';
    size_t r = rooted ? 1 : 0;
    size_t w = r;
    size_t dotdot = w; /* out[..dotdot) cannot be backtracked over */

    out[0] = '/';
    while (r < n) {
        if (p[r] == '/') {
            r++;
        } else if (p[r] == '.' && (r + 1 == n || p[r + 1] == '/')) {
            r++;
        } else if (p[r] == '.' && p[r + 1] == '.' && (r + 2 == n || p[r + 2] == '/')) {
            r += 2;
            if (w > dotdot) {
                w--;
                while (w > dotdot && out[w] != '/') {
                    w--;
                }
            } else if (!rooted) {
                if (w > 0) {
                    out[w++] = '/';
                }
                out[w++] = '.';
                out[w++] = '.';
                dotdot = w;
            }
        } else {
            if ((rooted && w != 1) || (!rooted && w != 0)) {
                out[w++] = '/';
            }
            while (r < n && p[r] != '/') {
                out[w++] = p[r++];
            }
        }
    }
    if (w == 0) {
        out[w++] = '.';
    }
    out[w] = '\0';
    return out;
}

/* filepath.Dir(filepath.Abs(file)): the directory relative paths in <file> are taken from. */
static char *path_abs_dir(const char *file)
{
    char cwd[4096];
    char *joined;
    char *clean;
    char *slash;

    if (file[0] == '/') {
        clean = path_clean(file);
    } else {
        size_t len;

        if (!getcwd(cwd, sizeof(cwd))) {
            snprintf(cwd, sizeof(cwd), "/");
        }
        len = strlen(cwd) + strlen(file) + 2;
        joined = xmalloc(len);
        snprintf(joined, len, "%s/%s", cwd, file);
        clean = path_clean(joined);
        free(joined);
    }
    slash = strrchr(clean, '/');
    if (slash == clean) {
        clean[1] = '\0';
    } else if (slash) {
        *slash = '\0';
    }
    return clean;
}

/* clientcmd's ResolvePath: an absolute <p> as is, a relative one joined to <dir> (cleaned). */
static char *path_resolve(const char *dir, const char *p)
{
    size_t len;
    char *joined;
    char *clean;

    if (!p) {
        return NULL;
    }
    if (p[0] == '/') {
        return xstrdup(p);
    }
    len = strlen(dir) + strlen(p) + 2;
    joined = xmalloc(len);
    snprintf(joined, len, "%s/%s", dir, p);
    clean = path_clean(joined);
    free(joined);
    return clean;
}

/* Go's base64.StdEncoding.DecodeString (padding required, CR and LF ignored), decoding with
 * OpenSSL. An empty input decodes to NULL (Go: an empty []byte, i.e. unset). Returns 0 or
 * -EINVAL with the offset of the first bad byte in *<bad>. */
static int b64_decode(const char *s, size_t n, char **out, size_t *out_len, size_t *bad)
{
    char *tmp = xmalloc(n + 1);
    unsigned char *dec = NULL;
    size_t len = 0;
    size_t pad = 0;
    int dn;
    int rc = -EINVAL;

    *out = NULL;
    *out_len = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];

        if (c == '\r' || c == '\n') {
            continue;
        }
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '/' || c == '=') ||
            (c != '=' && pad > 0) || (c == '=' && ++pad > 2)) {
            *bad = i;
            goto out;
        }
        tmp[len++] = c;
    }
    if (len == 0) {
        rc = 0;
        goto out;
    }
    if (len % 4 != 0) {
        *bad = n;
        goto out;
    }
    tmp[len] = '\0';
    dec = xmalloc(len / 4 * 3 + 1);
    dn = EVP_DecodeBlock(dec, (const unsigned char *)tmp, (int)len);
    if (dn < 0 || (size_t)dn < pad) {
        *bad = 0;
        goto out;
    }
    dn -= (int)pad;
    dec[dn] = '\0';
    *out = (char *)dec;
    *out_len = (size_t)dn;
    dec = NULL;
    rc = 0;
out:
    free(dec);
    free(tmp);
    return rc;
}

/* 0 when <path> can be opened for reading, else -errno (O_NONBLOCK: a FIFO does not hang). */
static int check_readable(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    int e;

    if (fd == -1) {
        e = errno;
        return -e;
    }
    close(fd);
    return 0;
}

static void exec_fini(struct kubeconfig_exec *x)
{
    free(x->api_version);
    free(x->command);
    for (size_t i = 0; i < x->args_len; i++) {
        free(x->args[i]);
    }
    free(x->args);
    for (size_t i = 0; i < x->env_len; i++) {
        free(x->env[i].name);
        free(x->env[i].value);
    }
    free(x->env);
    free(x->install_hint);
    memset(x, 0, sizeof(*x));
}

static void cluster_fini(struct kc_cluster *c)
{
    free(c->name);
    free(c->origin);
    free(c->server);
    free(c->ca_file);
    free(c->ca_data);
    free(c->tls_server_name);
    free(c->proxy_url);
    free(c->exec_ext);
}

static void user_fini(struct kc_user *u)
{
    free(u->name);
    free(u->origin);
    free(u->token);
    free(u->token_file);
    free(u->cert_file);
    free(u->key_file);
    free(u->cert_data);
    free(u->key_data);
    free(u->username);
    free(u->password);
    free(u->auth_provider);
    exec_fini(&u->exec);
    free(u->interactive_mode);
}

static void context_fini(struct kc_context *c)
{
    free(c->name);
    free(c->origin);
    free(c->cluster);
    free(c->user);
}

/* ---- YAML access -------------------------------------------------------------------------- */

struct yfile {
    yaml_document_t doc;
    const char *origin;
    const char *buf; /* the file's bytes, for reader-error line numbers */
    size_t len;
    char *dir;     /* absolute directory of origin */
    size_t copied; /* bytes of strings taken, KUBECONFIG_MAX_COPIED */
    size_t visits; /* nodes walked, KC_MAX_VISITS */
    int rc;        /* the last yerr's code */
    char *err;
    size_t err_len;
};

static int yerr(struct yfile *y, const yaml_node_t *n, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* "ORIGIN:LINE: message"; returns <rc>. */
static int yerr(struct yfile *y, const yaml_node_t *n, int rc, const char *fmt, ...)
{
    va_list ap;
    int w;

    y->rc = rc;
    if (y->err_len == 0) {
        return rc;
    }
    w = snprintf(y->err, y->err_len, "%s:%lu: ", y->origin,
                 n ? (unsigned long)n->start_mark.line + 1 : 1ul);
    if (w >= 0 && (size_t)w < y->err_len) {
        va_start(ap, fmt);
        vsnprintf(y->err + w, y->err_len - (size_t)w, fmt, ap);
        va_end(ap);
    }
    return rc;
}

static unsigned long yline(const yaml_node_t *n)
{
    return (unsigned long)n->start_mark.line + 1;
}

static int parser_error(struct yfile *y, const yaml_parser_t *p)
{
    unsigned long line = (unsigned long)p->problem_mark.line + 1;
    unsigned long col = (unsigned long)p->problem_mark.column + 1;

    if (p->error == YAML_MEMORY_ERROR) {
        snprintf(y->err, y->err_len, "%s: out of memory parsing YAML", y->origin);
        return -ENOMEM;
    }
    if (p->error == YAML_READER_ERROR) {
        /* the reader reports a byte offset, not a mark */
        line = 1;
        col = 1;
        for (size_t i = 0; i < p->problem_offset && i < y->len; i++) {
            if (y->buf[i] == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
    }
    if (p->context) {
        snprintf(y->err, y->err_len, "%s:%lu:%lu: invalid YAML: %s (%s at line %lu)", y->origin,
                 line, col, p->problem ? p->problem : "error", p->context,
                 (unsigned long)p->context_mark.line + 1);
    } else {
        snprintf(y->err, y->err_len, "%s:%lu:%lu: invalid YAML: %s", y->origin, line, col,
                 p->problem ? p->problem : "error");
    }
    return -EINVAL;
}

/* The event pass: depth and node caps before libyaml builds a tree (first document only). */
static int yaml_prescan(struct yfile *y)
{
    yaml_parser_t p;
    yaml_event_t ev;
    size_t nodes = 0;
    int depth = 0;
    int rc = 0;

    if (!yaml_parser_initialize(&p)) {
        return -ENOMEM;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)y->buf, y->len);
    for (;;) {
        yaml_event_type_t type;

        if (!yaml_parser_parse(&p, &ev)) {
            rc = parser_error(y, &p);
            break;
        }
        type = ev.type;
        if (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT) {
            depth++;
            nodes++;
        } else if (type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT) {
            depth--;
        } else if (type == YAML_SCALAR_EVENT || type == YAML_ALIAS_EVENT) {
            nodes++;
        }
        if (depth > KUBECONFIG_MAX_DEPTH || nodes > KUBECONFIG_MAX_NODES) {
            unsigned long line = (unsigned long)ev.start_mark.line + 1;

            if (depth > KUBECONFIG_MAX_DEPTH) {
                snprintf(y->err, y->err_len, "%s:%lu: YAML nested more than %d levels deep",
                         y->origin, line, KUBECONFIG_MAX_DEPTH);
            } else {
                snprintf(y->err, y->err_len, "%s:%lu: YAML has more than %d nodes", y->origin, line,
                         KUBECONFIG_MAX_NODES);
            }
            yaml_event_delete(&ev);
            rc = -EFBIG;
            break;
        }
        yaml_event_delete(&ev);
        if (type == YAML_DOCUMENT_END_EVENT || type == YAML_STREAM_END_EVENT) {
            break;
        }
    }
    yaml_parser_delete(&p);
    return rc;
}

static const yaml_node_t *ynode(struct yfile *y, int idx)
{
    return yaml_document_get_node(&y->doc, idx);
}

static bool scalar_is(const yaml_node_t *n, const char *s)
{
    size_t len = strlen(s);

    return n->type == YAML_SCALAR_NODE && n->data.scalar.length == len &&
           memcmp(n->data.scalar.value, s, len) == 0;
}

static bool yis_null(const yaml_node_t *n)
{
    const char *v;
    size_t len;

    if (!n) {
        return true;
    }
    if (n->type != YAML_SCALAR_NODE) {
        return false;
    }
    if (n->tag && strcmp((const char *)n->tag, YAML_NULL_TAG) == 0) {
        return true;
    }
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
        return false;
    }
    v = (const char *)n->data.scalar.value;
    len = n->data.scalar.length;
    return len == 0 || (len == 1 && v[0] == '~') || scalar_is(n, "null") || scalar_is(n, "Null") ||
           scalar_is(n, "NULL");
}

/* Counts <n> node visits against KC_MAX_VISITS. */
static int yvisit(struct yfile *y, const yaml_node_t *at, size_t n)
{
    y->visits += n;
    if (y->visits > KC_MAX_VISITS) {
        return yerr(y, at, -EFBIG, "YAML too large to walk (aliases repeating a large node?)");
    }
    return 0;
}

/* A string field: NULL when null or empty (Go's ""), else a copy; any scalar's text counts. */
static int ystr(struct yfile *y, const yaml_node_t *n, const char *what, char **out)
{
    size_t len;
    int rc;

    *out = NULL;
    if (yis_null(n)) {
        return 0;
    }
    if (n->type != YAML_SCALAR_NODE) {
        return yerr(y, n, -EINVAL, "%s: expected a string", what);
    }
    len = n->data.scalar.length;
    if (len > KUBECONFIG_MAX_STRING) {
        return yerr(y, n, -EFBIG, "%s: longer than %zu bytes", what, KUBECONFIG_MAX_STRING);
    }
    if (memchr(n->data.scalar.value, '\0', len)) {
        return yerr(y, n, -EINVAL, "%s: contains a NUL byte", what);
    }
    if (len > KUBECONFIG_MAX_COPIED - y->copied) {
        return yerr(y, n, -EFBIG, "more than %zu bytes of strings (aliases?)",
                    KUBECONFIG_MAX_COPIED);
    }
    rc = yvisit(y, n, 1);
    if (rc != 0) {
        return rc;
    }
    y->copied += len;
    if (len > 0) {
        *out = mem_dup((const char *)n->data.scalar.value, len);
    }
    return 0;
}

/* YAML 1.1's (go-yaml v2's) spellings of a plain boolean: true when <n> is one. */
static bool plain_bool(const yaml_node_t *n, bool *out)
{
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
                                      "on",   "On",   "ON",   "y",   "Y"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "NO",
                                     "off",   "Off",   "OFF",   "n",  "N"};

    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
        return false;
    }
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (scalar_is(n, yes[i]) || scalar_is(n, no[i])) {
            *out = scalar_is(n, yes[i]);
            return true;
        }
    }
    return false;
}

/* A boolean field; null is false. */
static int ybool(struct yfile *y, const yaml_node_t *n, const char *what, bool *out)
{
    *out = false;
    if (yis_null(n) || plain_bool(n, out)) {
        return 0;
    }
    return yerr(y, n, -EINVAL, "%s: expected true or false", what);
}

/*
 * Finds the values of the <keys_len> known <keys> in mapping <n> (null: none); vals[i] is
 * NULL when key i is absent. Unknown keys are ignored, as client-go does; a known key twice
 * is an error.
 */
static int yfields(struct yfile *y, const yaml_node_t *n, const char *what, const char *const *keys,
                   size_t keys_len, const yaml_node_t **vals)
{
    int rc;

    for (size_t i = 0; i < keys_len; i++) {
        vals[i] = NULL;
    }
    if (yis_null(n)) {
        return 0;
    }
    if (n->type != YAML_MAPPING_NODE) {
        return yerr(y, n, -EINVAL, "%s: expected a mapping", what);
    }
    rc = yvisit(y, n, (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start));
    if (rc != 0) {
        return rc;
    }
    for (const yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *k = ynode(y, p->key);

        if (!k || k->type != YAML_SCALAR_NODE) {
            return yerr(y, k ? k : n, -EINVAL, "%s: a key is not a string", what);
        }
        for (size_t i = 0; i < keys_len; i++) {
            if (scalar_is(k, keys[i])) {
                if (vals[i]) {
                    return yerr(y, k, -EINVAL, "%s: key \"%s\" given twice", what, keys[i]);
                }
                vals[i] = ynode(y, p->value);
                break;
            }
        }
    }
    return 0;
}

/* The items of sequence <n> (null: none), at most <max>. */
static int yseq(struct yfile *y, const yaml_node_t *n, const char *what, size_t max,
                const yaml_node_item_t **items, size_t *len)
{
    *items = NULL;
    *len = 0;
    if (yis_null(n)) {
        return 0;
    }
    if (n->type != YAML_SEQUENCE_NODE) {
        return yerr(y, n, -EINVAL, "%s: expected a list", what);
    }
    *items = n->data.sequence.items.start;
    *len = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (*len > max) {
        return yerr(y, n, -EFBIG, "%s: more than %zu entries", what, max);
    }
    return yvisit(y, n, *len);
}

/* A -data field: base64 in the file, PEM bytes in memory. */
static int ydata(struct yfile *y, const yaml_node_t *n, const char *what, char **out,
                 size_t *out_len)
{
    char *text = NULL;
    size_t bad = 0;
    int rc;

    *out = NULL;
    *out_len = 0;
    rc = ystr(y, n, what, &text);
    if (rc != 0 || !text) {
        return rc;
    }
    rc = b64_decode(text, strlen(text), out, out_len, &bad);
    free(text);
    if (rc != 0) {
        return yerr(y, n, rc, "%s: illegal base64 data at input byte %zu", what, bad);
    }
    return 0;
}

/* True for the text of a JSON number (what may go into cJSON_CreateRaw). */
static bool is_json_number(const char *s, size_t n)
{
    size_t i = 0;

    if (i < n && s[i] == '-') {
        i++;
    }
    if (i < n && s[i] == '0') {
        i++;
    } else if (i < n && s[i] >= '1' && s[i] <= '9') {
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            i++;
        }
    } else {
        return false;
    }
    if (i < n && s[i] == '.') {
        size_t d = ++i;

        while (i < n && s[i] >= '0' && s[i] <= '9') {
            i++;
        }
        if (i == d) {
            return false;
        }
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t d;

        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) {
            i++;
        }
        d = i;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            i++;
        }
        if (i == d) {
            return false;
        }
    }
    return i == n;
}

/*
 * A YAML node as JSON, the way sigs.k8s.io/yaml converts it, simplified: plain null and bool
 * spellings become null and booleans, plain JSON-number text is kept as a number, every other
 * scalar is a string; mapping keys are strings. NULL with a message on error.
 */
static cJSON *yjson(struct yfile *y, const yaml_node_t *n, int depth)
{
    cJSON *j = NULL;
    bool b;

    if (depth > KUBECONFIG_MAX_DEPTH) {
        yerr(y, n, -EFBIG, "extension nested too deep (an alias cycle?)");
        return NULL;
    }
    if (yvisit(y, n, 1) != 0) {
        return NULL;
    }
    if (yis_null(n)) {
        return cJSON_CreateNull();
    }
    if (n->type == YAML_SCALAR_NODE) {
        const char *v = (const char *)n->data.scalar.value;
        size_t len = n->data.scalar.length;
        char *s = NULL;

        if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
            if (plain_bool(n, &b)) {
                return cJSON_CreateBool(b);
            }
            if (is_json_number(v, len) && len < 64) {
                char num[64];

                memcpy(num, v, len);
                num[len] = '\0';
                return cJSON_CreateRaw(num);
            }
        }
        if (ystr(y, n, "extension", &s) != 0) {
            return NULL;
        }
        j = cJSON_CreateString(s ? s : "");
        free(s);
        return j;
    }
    if (n->type == YAML_SEQUENCE_NODE) {
        j = cJSON_CreateArray();
        for (const yaml_node_item_t *it = n->data.sequence.items.start;
             it < n->data.sequence.items.top; it++) {
            const yaml_node_t *c = ynode(y, *it);
            cJSON *cj = c ? yjson(y, c, depth + 1) : NULL;

            if (!cj) {
                cJSON_Delete(j);
                return NULL;
            }
            cJSON_AddItemToArray(j, cj);
        }
        return j;
    }
    j = cJSON_CreateObject();
    for (const yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *k = ynode(y, p->key);
        const yaml_node_t *v = ynode(y, p->value);
        char *key = NULL;
        cJSON *cj;

        if (!k || k->type != YAML_SCALAR_NODE || !v) {
            yerr(y, k ? k : n, -EINVAL, "extension: a key is not a string");
            cJSON_Delete(j);
            return NULL;
        }
        if (ystr(y, k, "extension key", &key) != 0) {
            cJSON_Delete(j);
            return NULL;
        }
        cj = yjson(y, v, depth + 1);
        if (!cj) {
            free(key);
            cJSON_Delete(j);
            return NULL;
        }
        cJSON_AddItemToObject(j, key ? key : "", cj);
        free(key);
    }
    return j;
}

/* ---- reading one file --------------------------------------------------------------------- */

/* The index of the entry named <name> in <arr> (<len> entries of <stride> bytes, each
 * starting with its `char *name`), or <len> when none is. */
static size_t find_name(const void *arr, size_t len, size_t stride, const char *name)
{
    for (size_t i = 0; i < len; i++) {
        const char *const *entry_name = (const void *)((const char *)arr + i * stride);

        if (strcmp(*entry_name, name) == 0) {
            return i;
        }
    }
    return len;
}

#define KC_HAS(arr, len, nm) (find_name((arr), (len), sizeof(*(arr)), (nm)) < (len))
#define KC_FIND(arr, len, nm)                                                                      \
    (KC_HAS(arr, len, nm) ? &(arr)[find_name((arr), (len), sizeof(*(arr)), (nm))] : NULL)

/* One `- name: N\n  <body_key>: {...}` entry: its name ("" when absent) and body node. */
static int ynamed(struct yfile *y, const yaml_node_t *item, const char *what, const char *body_key,
                  char **name, const yaml_node_t **body)
{
    const char *keys[] = {"name", body_key};
    const yaml_node_t *v[2];
    int rc;

    *name = NULL;
    *body = NULL;
    if (!item || item->type != YAML_MAPPING_NODE) {
        return yerr(y, item, -EINVAL, "%s: expected a mapping with name and %s", what, body_key);
    }
    rc = yfields(y, item, what, keys, 2, v);
    if (rc == 0) {
        rc = ystr(y, v[0], "name", name);
    }
    if (rc == 0 && !*name) {
        *name = xstrdup("");
    }
    *body = v[1];
    return rc;
}

/* cluster.extensions[client.authentication.k8s.io/exec].extension, as compact JSON. */
static int exec_extension_json(struct yfile *y, const yaml_node_t *item, const yaml_node_t *body,
                               struct kc_cluster *c)
{
    cJSON *j;
    char *text;
    int rc = 0;

    if (c->exec_ext) {
        return yerr(y, item, -EINVAL, "extension \"%s\" given twice", KUBECONFIG_EXEC_EXTENSION);
    }
    if (!body) {
        c->exec_ext = xstrdup("null"); /* Go's empty RawExtension */
        return 0;
    }
    y->rc = -ENOMEM; /* cJSON's only failure that yerr does not report */
    j = yjson(y, body, 0);
    if (!j) {
        return y->rc;
    }
    text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!text) {
        return -ENOMEM;
    }
    if (strlen(text) > KUBECONFIG_MAX_EXTENSION) {
        rc = yerr(y, body, -EFBIG, "extension \"%s\": more than %zu bytes as JSON",
                  KUBECONFIG_EXEC_EXTENSION, KUBECONFIG_MAX_EXTENSION);
    } else {
        c->exec_ext = xstrdup(text);
    }
    free(text);
    return rc;
}

static int read_exec_extension(struct yfile *y, const yaml_node_t *n, struct kc_cluster *c)
{
    const yaml_node_item_t *items;
    size_t len;
    int rc = yseq(y, n, "extensions", KUBECONFIG_MAX_ENTRIES, &items, &len);

    for (size_t i = 0; rc == 0 && i < len; i++) {
        const yaml_node_t *body;
        char *name = NULL;

        rc = ynamed(y, ynode(y, items[i]), "extensions[]", "extension", &name, &body);
        if (rc == 0 && name && strcmp(name, KUBECONFIG_EXEC_EXTENSION) == 0) {
            rc = exec_extension_json(y, ynode(y, items[i]), body, c);
        }
        free(name);
    }
    return rc;
}

static int read_cluster(struct yfile *y, const yaml_node_t *n, struct kc_cluster *c)
{
    static const char *const keys[] = {"server",
                                       "certificate-authority",
                                       "certificate-authority-data",
                                       "insecure-skip-tls-verify",
                                       "tls-server-name",
                                       "proxy-url",
                                       "disable-compression",
                                       "extensions"};
    const yaml_node_t *v[8];
    char *ca = NULL;
    int rc = yfields(y, n, "cluster", keys, 8, v);

    if (rc == 0) {
        rc = ystr(y, v[0], "server", &c->server);
    }
    if (rc == 0) {
        rc = ystr(y, v[1], "certificate-authority", &ca);
        c->ca_file = path_resolve(y->dir, ca);
        free(ca);
    }
    if (rc == 0) {
        rc = ydata(y, v[2], "certificate-authority-data", &c->ca_data, &c->ca_data_len);
    }
    if (rc == 0) {
        rc = ybool(y, v[3], "insecure-skip-tls-verify", &c->insecure);
    }
    if (rc == 0) {
        rc = ystr(y, v[4], "tls-server-name", &c->tls_server_name);
    }
    if (rc == 0) {
        rc = ystr(y, v[5], "proxy-url", &c->proxy_url);
    }
    if (rc == 0) {
        rc = ybool(y, v[6], "disable-compression", &c->disable_compression);
    }
    if (rc == 0) {
        rc = read_exec_extension(y, v[7], c);
    }
    return rc;
}

static int read_exec(struct yfile *y, const yaml_node_t *n, struct kc_user *u)
{
    static const char *const keys[] = {
        "apiVersion",         "command",        "args", "env", "installHint",
        "provideClusterInfo", "interactiveMode"};
    struct kubeconfig_exec *x = &u->exec;
    const yaml_node_t *v[7];
    const yaml_node_item_t *items;
    size_t len;
    char *cmd = NULL;
    int rc = yfields(y, n, "exec", keys, 7, v);

    u->has_exec = true;
    if (rc == 0) {
        rc = ystr(y, v[0], "exec.apiVersion", &x->api_version);
    }
    if (rc == 0) {
        rc = ystr(y, v[1], "exec.command", &cmd);
        /* a command with a slash is a path, relative to this file; a bare name is looked up
         * in PATH when it runs */
        x->command = cmd && strchr(cmd, '/') ? path_resolve(y->dir, cmd) : dup_or_null(cmd);
        free(cmd);
    }
    if (rc == 0) {
        rc = yseq(y, v[2], "exec.args", KUBECONFIG_MAX_ARGS, &items, &len);
    }
    if (rc == 0 && len > 0) {
        x->args = xcalloc(len, sizeof(*x->args));
        for (size_t i = 0; rc == 0 && i < len; i++) {
            char *a = NULL;

            rc = ystr(y, ynode(y, items[i]), "exec.args[]", &a);
            x->args[x->args_len++] = a ? a : xstrdup("");
        }
    }
    if (rc == 0) {
        rc = yseq(y, v[3], "exec.env", KUBECONFIG_MAX_ARGS, &items, &len);
    }
    if (rc == 0 && len > 0) {
        static const char *const env_keys[] = {"name", "value"};

        x->env = xcalloc(len, sizeof(*x->env));
        for (size_t i = 0; rc == 0 && i < len; i++) {
            const yaml_node_t *item = ynode(y, items[i]);
            const yaml_node_t *ev[2];
            struct kubeconfig_exec_env *e = &x->env[x->env_len++];

            if (!item || item->type != YAML_MAPPING_NODE) {
                rc = yerr(y, item, -EINVAL, "exec.env[]: expected a mapping with name and value");
                break;
            }
            rc = yfields(y, item, "exec.env[]", env_keys, 2, ev);
            if (rc == 0) {
                rc = ystr(y, ev[0], "exec.env[].name", &e->name);
            }
            if (rc == 0) {
                rc = ystr(y, ev[1], "exec.env[].value", &e->value);
            }
            if (rc == 0 && (!e->name || strchr(e->name, '='))) {
                rc = yerr(y, item, -EINVAL, "exec.env[]: %s",
                          e->name ? "name contains '='" : "name is empty");
            }
            if (!e->value) {
                e->value = xstrdup("");
            }
        }
    }
    if (rc == 0) {
        rc = ystr(y, v[4], "exec.installHint", &x->install_hint);
    }
    if (rc == 0) {
        rc = ybool(y, v[5], "exec.provideClusterInfo", &x->provide_cluster_info);
    }
    if (rc == 0) {
        rc = ystr(y, v[6], "exec.interactiveMode", &u->interactive_mode);
    }
    return rc;
}

static int read_user(struct yfile *y, const yaml_node_t *n, struct kc_user *u)
{
    static const char *const keys[] = {"client-certificate",
                                       "client-certificate-data",
                                       "client-key",
                                       "client-key-data",
                                       "token",
                                       "tokenFile",
                                       "username",
                                       "password",
                                       "auth-provider",
                                       "exec",
                                       "as",
                                       "as-uid",
                                       "as-groups",
                                       "as-user-extra"};
    const yaml_node_t *v[14];
    char *s = NULL;
    int rc = yfields(y, n, "user", keys, 14, v);

    if (rc == 0) {
        rc = ystr(y, v[0], "client-certificate", &s);
        u->cert_file = path_resolve(y->dir, s);
        free(s);
        s = NULL;
    }
    if (rc == 0) {
        rc = ydata(y, v[1], "client-certificate-data", &u->cert_data, &u->cert_data_len);
    }
    if (rc == 0) {
        rc = ystr(y, v[2], "client-key", &s);
        u->key_file = path_resolve(y->dir, s);
        free(s);
        s = NULL;
    }
    if (rc == 0) {
        rc = ydata(y, v[3], "client-key-data", &u->key_data, &u->key_data_len);
    }
    if (rc == 0) {
        rc = ystr(y, v[4], "token", &u->token);
    }
    if (rc == 0) {
        rc = ystr(y, v[5], "tokenFile", &s);
        u->token_file = path_resolve(y->dir, s);
        free(s);
        s = NULL;
    }
    if (rc == 0) {
        rc = ystr(y, v[6], "username", &u->username);
    }
    if (rc == 0) {
        rc = ystr(y, v[7], "password", &u->password);
    }
    if (rc == 0 && !yis_null(v[8])) {
        static const char *const ap_keys[] = {"name"};
        const yaml_node_t *apv[1];

        rc = yfields(y, v[8], "auth-provider", ap_keys, 1, apv);
        if (rc == 0) {
            rc = ystr(y, apv[0], "auth-provider.name", &u->auth_provider);
        }
        if (rc == 0 && !u->auth_provider) {
            u->auth_provider = xstrdup("");
        }
    }
    if (rc == 0 && !yis_null(v[9])) {
        rc = read_exec(y, v[9], u);
    }
    /* impersonation: noted here, refused at resolve (kwp impersonates its callers itself) */
    for (size_t i = 10; rc == 0 && i < 14 && !u->impersonation; i++) {
        if (yis_null(v[i])) {
            continue;
        }
        if (v[i]->type == YAML_SCALAR_NODE && v[i]->data.scalar.length == 0) {
            continue;
        }
        if (v[i]->type == YAML_SEQUENCE_NODE &&
            v[i]->data.sequence.items.top == v[i]->data.sequence.items.start) {
            continue;
        }
        if (v[i]->type == YAML_MAPPING_NODE &&
            v[i]->data.mapping.pairs.top == v[i]->data.mapping.pairs.start) {
            continue;
        }
        u->impersonation = keys[i];
    }
    return rc;
}

static int read_context(struct yfile *y, const yaml_node_t *n, struct kc_context *c)
{
    static const char *const keys[] = {"cluster", "user"};
    const yaml_node_t *v[2];
    int rc = yfields(y, n, "context", keys, 2, v);

    if (rc == 0) {
        rc = ystr(y, v[0], "context.cluster", &c->cluster);
    }
    if (rc == 0) {
        rc = ystr(y, v[1], "context.user", &c->user);
    }
    return rc;
}

/* Reads the clusters/users/contexts list <n> into <f>. */
static int read_list(struct yfile *y, const yaml_node_t *n, const char *list, struct kubeconfig *f)
{
    const yaml_node_item_t *items;
    size_t len;
    int rc = yseq(y, n, list, KUBECONFIG_MAX_ENTRIES, &items, &len);

    for (size_t i = 0; rc == 0 && i < len; i++) {
        const yaml_node_t *item = ynode(y, items[i]);
        const yaml_node_t *body;
        char *name = NULL;
        bool dup;

        if (strcmp(list, "clusters") == 0) {
            rc = ynamed(y, item, "clusters[]", "cluster", &name, &body);
            dup = rc == 0 && KC_HAS(f->clusters, f->clusters_len, name);
            if (rc == 0 && !dup) {
                struct kc_cluster *c = &f->clusters[f->clusters_len++];

                c->name = name;
                name = NULL;
                c->origin = xstrdup(y->origin);
                c->line = yline(item);
                rc = read_cluster(y, body, c);
            }
        } else if (strcmp(list, "users") == 0) {
            rc = ynamed(y, item, "users[]", "user", &name, &body);
            dup = rc == 0 && KC_HAS(f->users, f->users_len, name);
            if (rc == 0 && !dup) {
                struct kc_user *u = &f->users[f->users_len++];

                u->name = name;
                name = NULL;
                u->origin = xstrdup(y->origin);
                u->line = yline(item);
                rc = read_user(y, body, u);
            }
        } else {
            rc = ynamed(y, item, "contexts[]", "context", &name, &body);
            dup = rc == 0 && KC_HAS(f->contexts, f->contexts_len, name);
            if (rc == 0 && !dup) {
                struct kc_context *c = &f->contexts[f->contexts_len++];

                c->name = name;
                name = NULL;
                c->origin = xstrdup(y->origin);
                c->line = yline(item);
                rc = read_context(y, body, c);
            }
        }
        if (rc == 0 && dup) {
            /* clientcmd's conversion refuses a name twice in one file */
            rc = yerr(y, item, -EINVAL, "%s: duplicate name \"%s\"", list, name);
        }
        free(name);
    }
    return rc;
}

/* Parses one file's bytes into the fresh <f>. */
static int parse_file(struct yfile *y, struct kubeconfig *f)
{
    static const char *const keys[] = {"clusters", "users", "contexts", "current-context"};
    const yaml_node_t *v[4];
    const yaml_node_t *root;
    yaml_parser_t p;
    int rc;

    rc = yaml_prescan(y);
    if (rc != 0) {
        return rc;
    }
    if (!yaml_parser_initialize(&p)) {
        return -ENOMEM;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)y->buf, y->len);
    if (!yaml_parser_load(&p, &y->doc)) {
        rc = parser_error(y, &p);
        yaml_parser_delete(&p);
        memset(&y->doc, 0, sizeof(y->doc));
        return rc;
    }
    yaml_parser_delete(&p);
    root = yaml_document_get_root_node(&y->doc);
    if (yis_null(root)) {
        return 0; /* an empty file is an empty config (client-go) */
    }
    if (root->type != YAML_MAPPING_NODE) {
        return yerr(y, root, -EINVAL, "expected a mapping (a kubeconfig) at the top level");
    }
    rc = yfields(y, root, "kubeconfig", keys, 4, v);
    if (rc != 0) {
        return rc;
    }
    /* room for every entry up front: the lists are capped */
    for (size_t i = 0; i < 3; i++) {
        size_t n = v[i] && v[i]->type == YAML_SEQUENCE_NODE
                       ? (size_t)(v[i]->data.sequence.items.top - v[i]->data.sequence.items.start)
                       : 0;

        n = n > KUBECONFIG_MAX_ENTRIES ? 0 : n; /* yseq reports it */
        if (i == 0) {
            f->clusters = xcalloc(n + 1, sizeof(*f->clusters));
        } else if (i == 1) {
            f->users = xcalloc(n + 1, sizeof(*f->users));
        } else {
            f->contexts = xcalloc(n + 1, sizeof(*f->contexts));
        }
    }
    rc = read_list(y, v[0], "clusters", f);
    if (rc == 0) {
        rc = read_list(y, v[1], "users", f);
    }
    if (rc == 0) {
        rc = read_list(y, v[2], "contexts", f);
    }
    if (rc == 0) {
        rc = ystr(y, v[3], "current-context", &f->current_context);
    }
    return rc;
}

/* How many of the <src_len> entries of <src> (<stride> bytes each, name first) <dst> lacks. */
static size_t count_new(const void *dst, size_t dst_len, const void *src, size_t src_len,
                        size_t stride)
{
    size_t n = 0;

    for (size_t i = 0; i < src_len; i++) {
        const char *const *name = (const void *)((const char *)src + i * stride);

        n += find_name(dst, dst_len, stride, *name) == dst_len;
    }
    return n;
}

/* Moves the entries of src that dst does not name yet to dst's end (room made by the caller)
 * and finalizes the others: a file merged behind earlier ones. */
#define KC_MOVE_NEW(dst, dst_len, src, src_len, fini)                                              \
    do {                                                                                           \
        for (size_t i_ = 0; i_ < (src_len); i_++) {                                                \
            if (KC_HAS(dst, dst_len, (src)[i_].name)) {                                            \
                fini(&(src)[i_]);                                                                  \
            } else {                                                                               \
                (dst)[(dst_len)++] = (src)[i_];                                                    \
            }                                                                                      \
        }                                                                                          \
        (src_len) = 0;                                                                             \
    } while (0)

/* Moves the entries of <f> that <kc> does not name yet into <kc> (first file wins). */
static int merge_into(struct kubeconfig *kc, struct kubeconfig *f, char *err, size_t err_len)
{
    size_t nc = count_new(kc->clusters, kc->clusters_len, f->clusters, f->clusters_len,
                          sizeof(*kc->clusters));
    size_t nu = count_new(kc->users, kc->users_len, f->users, f->users_len, sizeof(*kc->users));
    size_t nx = count_new(kc->contexts, kc->contexts_len, f->contexts, f->contexts_len,
                          sizeof(*kc->contexts));

    if (kc->clusters_len + nc > KUBECONFIG_MAX_ENTRIES ||
        kc->users_len + nu > KUBECONFIG_MAX_ENTRIES ||
        kc->contexts_len + nx > KUBECONFIG_MAX_ENTRIES) {
        snprintf(err, err_len, "kubeconfig files name more than %d clusters, users or contexts",
                 KUBECONFIG_MAX_ENTRIES);
        return -EFBIG;
    }
    kc->clusters = xrealloc(kc->clusters, (kc->clusters_len + nc + 1) * sizeof(*kc->clusters));
    kc->users = xrealloc(kc->users, (kc->users_len + nu + 1) * sizeof(*kc->users));
    kc->contexts = xrealloc(kc->contexts, (kc->contexts_len + nx + 1) * sizeof(*kc->contexts));
    KC_MOVE_NEW(kc->clusters, kc->clusters_len, f->clusters, f->clusters_len, cluster_fini);
    KC_MOVE_NEW(kc->users, kc->users_len, f->users, f->users_len, user_fini);
    KC_MOVE_NEW(kc->contexts, kc->contexts_len, f->contexts, f->contexts_len, context_fini);
    if (!kc->current_context && f->current_context) {
        kc->current_context = f->current_context;
        f->current_context = NULL;
    }
    return 0;
}

/* ---- public: loading ---------------------------------------------------------------------- */

struct kubeconfig *kubeconfig_new(void)
{
    return xcalloc(1, sizeof(struct kubeconfig));
}

void kubeconfig_free(struct kubeconfig *kc)
{
    if (!kc) {
        return;
    }
    for (size_t i = 0; i < kc->clusters_len; i++) {
        cluster_fini(&kc->clusters[i]);
    }
    for (size_t i = 0; i < kc->users_len; i++) {
        user_fini(&kc->users[i]);
    }
    for (size_t i = 0; i < kc->contexts_len; i++) {
        context_fini(&kc->contexts[i]);
    }
    free(kc->clusters);
    free(kc->users);
    free(kc->contexts);
    free(kc->current_context);
    free(kc);
}

int kubeconfig_add_buffer(struct kubeconfig *kc, const char *buf, size_t len, const char *origin,
                          char *err, size_t err_len)
{
    struct yfile y = {.origin = origin, .buf = buf, .len = len, .err = err, .err_len = err_len};
    struct kubeconfig *f = kubeconfig_new();
    int rc;

    if (len > KUBECONFIG_MAX_FILE_BYTES) {
        snprintf(err, err_len, "%s: larger than %zu bytes", origin, KUBECONFIG_MAX_FILE_BYTES);
        kubeconfig_free(f);
        return -EFBIG;
    }
    y.dir = path_abs_dir(origin);
    rc = parse_file(&y, f);
    yaml_document_delete(&y.doc);
    if (rc == 0) {
        rc = merge_into(kc, f, err, err_len);
    }
    kubeconfig_free(f);
    free(y.dir);
    return rc;
}

int kubeconfig_add_file(struct kubeconfig *kc, const char *path, bool skip_missing, char *err,
                        size_t err_len)
{
    struct stat st;
    char *buf = NULL;
    size_t len = 0;
    ssize_t n;
    int fd;
    int e;
    int rc;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        e = errno;
        if (e == ENOENT && skip_missing) {
            return 0;
        }
        snprintf(err, err_len, "error loading config file \"%s\": %s", path, strerror(e));
        return -e;
    }
    if (fstat(fd, &st) == -1) {
        e = errno;
        goto fail;
    }
    if (S_ISDIR(st.st_mode)) {
        e = EISDIR;
        goto fail;
    }
    /* read to the cap plus one byte, whatever st_size says (pipes, procfs) */
    buf = xmalloc(KUBECONFIG_MAX_FILE_BYTES + 1);
    while (len <= KUBECONFIG_MAX_FILE_BYTES) {
        n = read(fd, buf + len, KUBECONFIG_MAX_FILE_BYTES + 1 - len);
        if (n == -1) {
            e = errno;
            if (e == EINTR) {
                continue;
            }
            goto fail;
        }
        if (n == 0) {
            break;
        }
        len += (size_t)n;
    }
    close(fd);
    if (len > KUBECONFIG_MAX_FILE_BYTES) {
        snprintf(err, err_len, "error loading config file \"%s\": larger than %zu bytes", path,
                 KUBECONFIG_MAX_FILE_BYTES);
        free(buf);
        return -EFBIG;
    }
    rc = kubeconfig_add_buffer(kc, buf, len, path, err, err_len);
    free(buf);
    return rc;
fail:
    snprintf(err, err_len, "error loading config file \"%s\": %s", path, strerror(e));
    close(fd);
    free(buf);
    return -e;
}

int kubeconfig_add_list(struct kubeconfig *kc, const char *list, char *err, size_t err_len)
{
    char *copy = xstrdup(list ? list : "");
    char *names[KUBECONFIG_MAX_FILES];
    size_t names_len = 0;
    char *save = NULL;
    int rc = 0;

    for (char *tok = strtok_r(copy, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
        bool seen = false;

        for (size_t i = 0; i < names_len && !seen; i++) {
            seen = strcmp(names[i], tok) == 0;
        }
        if (seen) {
            continue; /* client-go deduplicates the list, first place kept */
        }
        if (names_len == KUBECONFIG_MAX_FILES) {
            snprintf(err, err_len, "$KUBECONFIG lists more than %d files", KUBECONFIG_MAX_FILES);
            free(copy);
            return -E2BIG;
        }
        names[names_len++] = tok;
    }
    for (size_t i = 0; i < names_len && rc == 0; i++) {
        rc = kubeconfig_add_file(kc, names[i], true, err, err_len);
    }
    free(copy);
    return rc;
}

bool kubeconfig_is_empty(const struct kubeconfig *kc)
{
    return kc->clusters_len == 0 && kc->users_len == 0 && kc->contexts_len == 0 &&
           !kc->current_context;
}

const char *kubeconfig_current_context(const struct kubeconfig *kc)
{
    return kc->current_context;
}

/* ---- public: resolving -------------------------------------------------------------------- */

static int check_cluster(const struct kc_cluster *c, char *err, size_t err_len)
{
    int rc;

    if (!c->server) {
        snprintf(err, err_len, "no server found for cluster \"%s\"", c->name);
        return -EINVAL;
    }
    if (c->ca_file && c->ca_data) {
        snprintf(err, err_len,
                 "certificate-authority-data and certificate-authority are both specified for "
                 "%s. certificate-authority-data will override.",
                 c->name);
        return -EINVAL;
    }
    if (c->insecure && (c->ca_file || c->ca_data)) {
        snprintf(err, err_len,
                 "cluster \"%s\": specifying a root certificates file with the insecure flag is "
                 "not allowed",
                 c->name);
        return -EINVAL;
    }
    rc = c->ca_file ? check_readable(c->ca_file) : 0;
    if (rc != 0) {
        snprintf(err, err_len, "unable to read certificate-authority %s for %s due to %s",
                 c->ca_file, c->name, strerror(-rc));
        return rc;
    }
    if (c->proxy_url) {
        const char *colon = strstr(c->proxy_url, "://");
        size_t sl = colon ? (size_t)(colon - c->proxy_url) : 0;

        if (!colon || !((sl == 4 && strncmp(c->proxy_url, "http", 4) == 0) ||
                        (sl == 5 && strncmp(c->proxy_url, "https", 5) == 0) ||
                        (sl == 6 && strncmp(c->proxy_url, "socks5", 6) == 0))) {
            snprintf(err, err_len,
                     "cluster \"%s\": proxy-url %s: unsupported scheme, must be http, https, or "
                     "socks5",
                     c->name, c->proxy_url);
            return -EINVAL;
        }
    }
    return 0;
}

static int check_exec(const struct kc_user *u, enum kubeconfig_interactive *mode, char *err,
                      size_t err_len)
{
    const struct kubeconfig_exec *x = &u->exec;
    const char *m = u->interactive_mode;

    if (!x->command) {
        snprintf(err, err_len, "command must be specified for %s to use exec authentication plugin",
                 u->name);
        return -EINVAL;
    }
    if (!x->api_version) {
        snprintf(err, err_len,
                 "apiVersion must be specified for %s to use exec authentication plugin", u->name);
        return -EINVAL;
    }
    if (strcmp(x->api_version, KC_EXEC_V1) != 0 && strcmp(x->api_version, KC_EXEC_V1BETA1) != 0) {
        snprintf(err, err_len,
                 "user \"%s\": exec plugin: invalid apiVersion \"%s\" (kwp speaks %s and %s)",
                 u->name, x->api_version, KC_EXEC_V1, KC_EXEC_V1BETA1);
        return -EINVAL;
    }
    if (!m && strcmp(x->api_version, KC_EXEC_V1BETA1) == 0) {
        m = "IfAvailable"; /* clientcmd/api/v1 defaulting for v1beta1 */
    }
    if (!m) {
        snprintf(err, err_len,
                 "interactiveMode must be specified for %s to use exec authentication plugin",
                 u->name);
        return -EINVAL;
    }
    if (strcmp(m, "Never") == 0) {
        *mode = KUBECONFIG_INTERACTIVE_NEVER;
    } else if (strcmp(m, "IfAvailable") == 0) {
        *mode = KUBECONFIG_INTERACTIVE_IF_AVAILABLE;
    } else if (strcmp(m, "Always") == 0) {
        *mode = KUBECONFIG_INTERACTIVE_ALWAYS;
    } else {
        snprintf(err, err_len, "invalid interactiveMode for %s: \"%s\"", u->name, m);
        return -EINVAL;
    }
    return 0;
}

static int check_user(const struct kc_user *u, enum kubeconfig_interactive *mode, char *err,
                      size_t err_len)
{
    int rc;

    if (u->auth_provider) {
        snprintf(err, err_len,
                 "user \"%s\" uses auth-provider \"%s\", which client-go removed in v1.26 and kwp "
                 "does not support: use an exec credential plugin (e.g. gke-gcloud-auth-plugin, "
                 "kubelogin) instead",
                 u->name, u->auth_provider);
        return -EINVAL;
    }
    if (u->impersonation) {
        snprintf(err, err_len,
                 "user \"%s\": impersonation in the kubeconfig (%s) is not supported: kwp sets "
                 "Impersonate-* itself for its callers",
                 u->name, u->impersonation);
        return -EINVAL;
    }
    if (u->cert_file || u->cert_data) {
        if (u->cert_file && u->cert_data) {
            snprintf(err, err_len,
                     "client-cert-data and client-cert are both specified for %s. client-cert-data "
                     "will override.",
                     u->name);
            return -EINVAL;
        }
        if (u->key_file && u->key_data) {
            snprintf(err, err_len,
                     "client-key-data and client-key are both specified for %s; client-key-data "
                     "will override",
                     u->name);
            return -EINVAL;
        }
        if (!u->key_file && !u->key_data) {
            snprintf(err, err_len,
                     "client-key-data or client-key must be specified for %s to use the "
                     "clientCert authentication method.",
                     u->name);
            return -EINVAL;
        }
        rc = u->cert_file ? check_readable(u->cert_file) : 0;
        if (rc != 0) {
            snprintf(err, err_len, "unable to read client-cert %s for %s due to %s", u->cert_file,
                     u->name, strerror(-rc));
            return rc;
        }
        rc = u->key_file ? check_readable(u->key_file) : 0;
        if (rc != 0) {
            snprintf(err, err_len, "unable to read client-key %s for %s due to %s", u->key_file,
                     u->name, strerror(-rc));
            return rc;
        }
    } else if (u->key_file || u->key_data) {
        snprintf(err, err_len, "user \"%s\": client-key without client-certificate", u->name);
        return -EINVAL;
    }
    if (u->token && (u->username || u->password)) {
        snprintf(err, err_len,
                 "more than one authentication method found for %s; found [token basicAuth], only "
                 "one is allowed",
                 u->name);
        return -EINVAL;
    }
    return u->has_exec ? check_exec(u, mode, err, err_len) : 0;
}

static struct kubeconfig_exec *exec_dup(const struct kubeconfig_exec *x,
                                        enum kubeconfig_interactive mode)
{
    struct kubeconfig_exec *d = xcalloc(1, sizeof(*d));

    d->api_version = xstrdup(x->api_version);
    d->command = xstrdup(x->command);
    d->args = xcalloc(x->args_len + 1, sizeof(*d->args));
    for (size_t i = 0; i < x->args_len; i++) {
        d->args[i] = xstrdup(x->args[i]);
    }
    d->args_len = x->args_len;
    d->env = xcalloc(x->env_len + 1, sizeof(*d->env));
    for (size_t i = 0; i < x->env_len; i++) {
        d->env[i].name = xstrdup(x->env[i].name);
        d->env[i].value = xstrdup(x->env[i].value);
    }
    d->env_len = x->env_len;
    d->install_hint = dup_or_null(x->install_hint);
    d->provide_cluster_info = x->provide_cluster_info;
    d->interactive = mode;
    return d;
}

/* client-go's DefaultServerURL: a server without a scheme gets https:// when TLS is
 * configured, else http://. Only http and https are served. */
static int server_url(const struct kc_cluster *c, const struct kc_user *u, char **out, char *err,
                      size_t err_len)
{
    bool tls = c->ca_file || c->ca_data || u->cert_file || u->cert_data || c->insecure;
    size_t len;

    *out = NULL;
    if (!strstr(c->server, "://")) {
        len = strlen(c->server) + 9;
        *out = xmalloc(len);
        snprintf(*out, len, "%s%s", tls ? "https://" : "http://", c->server);
        return 0;
    }
    if (strncmp(c->server, "http://", 7) != 0 && strncmp(c->server, "https://", 8) != 0) {
        snprintf(err, err_len, "cluster \"%s\": server %s: the scheme must be http or https",
                 c->name, c->server);
        return -EINVAL;
    }
    *out = xstrdup(c->server);
    return 0;
}

int kubeconfig_resolve(const struct kubeconfig *kc, const char *context,
                       struct kubeconfig_target **out, char *err, size_t err_len)
{
    const char *name = context && context[0] ? context : kc->current_context;
    const struct kc_context *ctx;
    const struct kc_cluster *c;
    const struct kc_user *u;
    enum kubeconfig_interactive mode = KUBECONFIG_INTERACTIVE_IF_AVAILABLE;
    struct kubeconfig_target *t;
    char *server = NULL;
    int rc;

    *out = NULL;
    if (!name) {
        snprintf(err, err_len,
                 "no context chosen: the kubeconfig sets no current-context and no "
                 "--context was given");
        return -ENOENT;
    }
    ctx = KC_FIND(kc->contexts, kc->contexts_len, name);
    if (!ctx) {
        snprintf(err, err_len, "context was not found for specified context: %s", name);
        return -ENOENT;
    }
    if (!ctx->user) {
        snprintf(err, err_len, "user was not specified for context \"%s\"", name);
        return -EINVAL;
    }
    if (!ctx->cluster) {
        snprintf(err, err_len, "cluster was not specified for context \"%s\"", name);
        return -EINVAL;
    }
    u = KC_FIND(kc->users, kc->users_len, ctx->user);
    if (!u) {
        snprintf(err, err_len, "user \"%s\" was not found for context \"%s\"", ctx->user, name);
        return -ENOENT;
    }
    c = KC_FIND(kc->clusters, kc->clusters_len, ctx->cluster);
    if (!c) {
        snprintf(err, err_len, "cluster \"%s\" was not found for context \"%s\"", ctx->cluster,
                 name);
        return -ENOENT;
    }
    rc = check_cluster(c, err, err_len);
    if (rc == 0) {
        rc = check_user(u, &mode, err, err_len);
    }
    if (rc == 0) {
        rc = server_url(c, u, &server, err, err_len);
    }
    if (rc != 0) {
        return rc;
    }
    t = xcalloc(1, sizeof(*t));
    t->source = xstrdup(ctx->origin);
    t->context = xstrdup(ctx->name);
    t->cluster = xstrdup(c->name);
    t->user = xstrdup(u->name);
    t->server = server;
    t->ca_file = dup_or_null(c->ca_file);
    t->ca_data = mem_dup(c->ca_data, c->ca_data_len);
    t->ca_data_len = c->ca_data_len;
    t->insecure = c->insecure;
    t->tls_server_name = dup_or_null(c->tls_server_name);
    t->proxy_url = dup_or_null(c->proxy_url);
    t->disable_compression = c->disable_compression;
    t->exec_cluster_config = dup_or_null(c->exec_ext);
    t->token = dup_or_null(u->token);
    t->token_file = u->token ? NULL : dup_or_null(u->token_file); /* AUTH.md: when token is empty */
    t->client_cert_file = dup_or_null(u->cert_file);
    t->client_key_file = dup_or_null(u->key_file);
    t->client_cert_data = mem_dup(u->cert_data, u->cert_data_len);
    t->client_cert_data_len = u->cert_data_len;
    t->client_key_data = mem_dup(u->key_data, u->key_data_len);
    t->client_key_data_len = u->key_data_len;
    t->username = dup_or_null(u->username);
    t->password = dup_or_null(u->password);
    t->exec = u->has_exec ? exec_dup(&u->exec, mode) : NULL;
    *out = t;
    return 0;
}

/* ---- public: in-cluster, the whole lookup ------------------------------------------------- */

int kubeconfig_incluster(const char *root, const char *host, const char *port,
                         struct kubeconfig_target **out, char *err, size_t err_len)
{
    struct kubeconfig_target *t;
    char token[4096];
    char ca[4096];
    char *end = NULL;
    unsigned long p;
    size_t len;
    bool v6;
    int rc;

    *out = NULL;
    root = root ? root : "";
    if (!host || !host[0] || !port || !port[0]) {
        snprintf(err, err_len,
                 "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST "
                 "and KUBERNETES_SERVICE_PORT must be defined");
        return -ENOENT;
    }
    if (strlen(root) > 2048) {
        snprintf(err, err_len, "in-cluster: path prefix too long");
        return -ENAMETOOLONG;
    }
    errno = 0;
    p = strtoul(port, &end, 10);
    if (errno != 0 || *end != '\0' || port[0] < '0' || port[0] > '9' || p == 0 || p > 65535) {
        snprintf(err, err_len, "in-cluster: KUBERNETES_SERVICE_PORT \"%s\" is not a port", port);
        return -EINVAL;
    }
    len = strlen(host);
    if (len > 255 || strpbrk(host, "/?#@[] \t\r\n")) {
        snprintf(err, err_len, "in-cluster: KUBERNETES_SERVICE_HOST \"%.255s\" is not a host",
                 host);
        return -EINVAL;
    }
    snprintf(token, sizeof(token), "%s%s/token", root, KC_SA_DIR);
    snprintf(ca, sizeof(ca), "%s%s/ca.crt", root, KC_SA_DIR);
    rc = check_readable(token);
    if (rc != 0) {
        snprintf(err, err_len, "in-cluster: cannot read the service account token %s: %s", token,
                 strerror(-rc));
        return rc == -ENOENT ? -ENOENT : rc;
    }
    t = xcalloc(1, sizeof(*t));
    t->source = xstrdup("in-cluster");
    v6 = strchr(host, ':') != NULL; /* net.JoinHostPort */
    len = len + strlen(port) + 16;
    t->server = xmalloc(len);
    snprintf(t->server, len, "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
    t->token_file = xstrdup(token);
    rc = check_readable(ca);
    if (rc == 0) {
        t->ca_file = xstrdup(ca);
    } else {
        char w[4200];

        snprintf(w, sizeof(w),
                 "in-cluster: cannot read %s (%s): verifying the apiserver with the system trust "
                 "store",
                 ca, strerror(-rc));
        t->warning = xstrdup(w);
    }
    *out = t;
    return 0;
}

int kubeconfig_target_load(const struct kubeconfig_load_opts *o, struct kubeconfig_target **out,
                           char *err, size_t err_len)
{
    struct kubeconfig *kc = kubeconfig_new();
    bool want_context = o->context && o->context[0];
    int rc = 0;

    *out = NULL;
    if (o->path && o->path[0]) {
        rc = kubeconfig_add_file(kc, o->path, false, err, err_len);
    } else if (o->env_list && o->env_list[0]) {
        rc = kubeconfig_add_list(kc, o->env_list, err, err_len);
    } else if (o->home && o->home[0]) {
        size_t len = strlen(o->home) + sizeof("/.kube/config");
        char *path = xmalloc(len);

        snprintf(path, len, "%s/.kube/config", o->home);
        rc = kubeconfig_add_file(kc, path, true, err, err_len);
        free(path);
    }
    if (rc == 0 && kubeconfig_is_empty(kc) && !want_context) {
        if (o->service_host && o->service_host[0] && o->service_port && o->service_port[0]) {
            rc = kubeconfig_incluster(o->incluster_root, o->service_host, o->service_port, out, err,
                                      err_len);
        } else {
            snprintf(err, err_len,
                     "no configuration has been provided: no --kubeconfig, no $KUBECONFIG, no "
                     "~/.kube/config, and not in a cluster (KUBERNETES_SERVICE_HOST and "
                     "KUBERNETES_SERVICE_PORT unset)");
            rc = -ENOENT;
        }
    } else if (rc == 0) {
        rc = kubeconfig_resolve(kc, o->context, out, err, err_len);
    }
    kubeconfig_free(kc);
    return rc;
}

void kubeconfig_target_free(struct kubeconfig_target *t)
{
    if (!t) {
        return;
    }
    free(t->source);
    free(t->context);
    free(t->cluster);
    free(t->user);
    free(t->warning);
    free(t->server);
    free(t->ca_file);
    free(t->ca_data);
    free(t->tls_server_name);
    free(t->proxy_url);
    free(t->exec_cluster_config);
    free(t->token);
    free(t->token_file);
    free(t->client_cert_file);
    free(t->client_key_file);
    free(t->client_cert_data);
    free(t->client_key_data);
    free(t->username);
    free(t->password);
    if (t->exec) {
        exec_fini(t->exec);
        free(t->exec);
    }
    free(t);
}
