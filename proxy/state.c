/*
 * state.c - the warm-restart files of --state-dir (format in state.h).
 *
 * Encoding streams the export through a small buffer into the file and SHA-256 (OpenSSL EVP),
 * so a save costs one pass over the objects and no second copy of the state. Parsing never
 * trusts a byte before the checksum matched, and after that still checks every length and
 * count against what is left of the buffer (a file written by someone else with a valid
 * checksum must not make kwp allocate or read beyond it either).
 * Threads: the saver thread (checkpoints) and the caller of state_saver_final/state_load;
 * no lock of this file's own; resource locks are taken only inside resource_export/replace/
 * apply, never while writing or logging.
 */
#include "proxy/state.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "cache/blob.h"
#include "cache/bug.h"
#include "cache/resource.h"
#include "cache/snapshot.h"
#include "cache/store.h"
#include "proxy/apires.h"
#include "proxy/kube_meta.h"
#include "proxy/log.h"
#include "proxy/registry.h"

#define STATE_WBUF 65536    /* write buffer */
#define STATE_PATH_MAX 4096 /* DIR/name */
#define STATE_HDR_FIXED 16  /* magic, version, flags */
#define STATE_OBJ_MIN 4     /* an object record's length field */
#define STATE_EV_MIN 13     /* an event record: rv, type, length */
#define STATE_WHY_MAX 256

/* ---- writing -------------------------------------------------------------------------------- */

/* An output: a heap buffer (state_encode) or a file descriptor, hashed as it goes. */
struct wout {
    EVP_MD_CTX *md;
    int fd;    /* -1: append to <mem> */
    char *mem; /* fd < 0: the whole output */
    size_t mem_len, mem_cap;
    char buf[STATE_WBUF]; /* fd >= 0: pending bytes */
    size_t len;
    int err; /* first write error (-errno) */
};

static void wout_flush(struct wout *w)
{
    size_t off = 0;

    while (w->fd >= 0 && off < w->len && w->err == 0) {
        ssize_t n = write(w->fd, w->buf + off, w->len - off);

        if (n == -1) {
            int e = errno;

            if (e != EINTR) {
                w->err = -e;
            }
            continue;
        }
        off += (size_t)n;
    }
    w->len = 0;
}

/* Appends without hashing (the checksum itself). */
static void wout_raw(struct wout *w, const void *p, size_t n)
{
    if (w->fd < 0) {
        if (w->mem_len + n > w->mem_cap) {
            w->mem_cap = (w->mem_len + n) * 2;
            w->mem = xrealloc(w->mem, w->mem_cap);
        }
        memcpy(w->mem + w->mem_len, p, n);
        w->mem_len += n;
        return;
    }
    while (n > 0) {
        size_t take = n < sizeof(w->buf) - w->len ? n : sizeof(w->buf) - w->len;

        memcpy(w->buf + w->len, p, take);
        w->len += take;
        p = (const char *)p + take;
        n -= take;
        if (w->len == sizeof(w->buf)) {
            wout_flush(w);
        }
    }
}

static void wout_put(struct wout *w, const void *p, size_t n)
{
    if (EVP_DigestUpdate(w->md, p, n) != 1 && w->err == 0) {
        w->err = -ENOMEM;
    }
    wout_raw(w, p, n);
}

/* <v> as <n> little-endian bytes. */
static void wout_le(struct wout *w, uint64_t v, int n)
{
    unsigned char b[8];

    for (int i = 0; i < n; i++) {
        b[i] = (unsigned char)(v >> (8 * i));
    }
    wout_put(w, b, (size_t)n);
}

static void wout_u32(struct wout *w, uint32_t v)
{
    wout_le(w, v, 4);
}

static void wout_u64(struct wout *w, uint64_t v)
{
    wout_le(w, v, 8);
}

static void wout_str(struct wout *w, const char *s)
{
    size_t n = strlen(s);

    BUG_ON(n > STATE_MAX_STR); /* identities come from flags and discovery, far shorter */
    wout_u32(w, (uint32_t)n);
    wout_put(w, s, n);
}

/* Writes the whole file to <w> (then the checksum). Returns w->err. */
static int encode(struct wout *w, const struct state_ident *id, const struct resource_export *x)
{
    unsigned char sum[EVP_MAX_MD_SIZE];
    unsigned int sum_len = 0;
    struct store_iter it;
    const struct blob *b;

    w->md = EVP_MD_CTX_new();
    if (w->md == NULL || EVP_DigestInit_ex(w->md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(w->md);
        w->md = NULL;
        return -ENOMEM;
    }
    wout_put(w, STATE_MAGIC, 8);
    wout_u32(w, STATE_FORMAT_VERSION);
    wout_u32(w, 0);
    wout_str(w, id->upstream);
    wout_str(w, id->group);
    wout_str(w, id->version);
    wout_str(w, id->plural);
    wout_str(w, id->kind);
    wout_u64(w, x->rv);
    wout_u64(w, x->boundary);
    wout_u64(w, x->base->len);
    wout_u64(w, x->n_events);
    for (b = snapshot_seek(x->base, NULL, &it); b != NULL; b = snapshot_next(&it)) {
        wout_u32(w, (uint32_t)b->len);
        wout_put(w, b->data, b->len);
    }
    for (size_t i = 0; i < x->n_events; i++) {
        const struct ring_event *e = &x->events[i];
        unsigned char t = (unsigned char)e->type;

        wout_u64(w, e->rv);
        wout_put(w, &t, 1);
        wout_u32(w, (uint32_t)e->obj->len);
        wout_put(w, e->obj->data, e->obj->len);
    }
    if (EVP_DigestFinal_ex(w->md, sum, &sum_len) != 1 || sum_len != STATE_SUM_LEN) {
        w->err = w->err != 0 ? w->err : -ENOMEM;
    } else {
        wout_raw(w, sum, STATE_SUM_LEN);
    }
    wout_flush(w);
    EVP_MD_CTX_free(w->md);
    w->md = NULL;
    return w->err;
}

int state_encode(const struct state_ident *id, const struct resource_export *x, char **out,
                 size_t *out_len)
{
    struct wout *w = xcalloc(1, sizeof(*w));
    int rc;

    w->fd = -1;
    rc = encode(w, id, x);
    if (rc != 0) {
        free(w->mem);
        free(w);
        return rc;
    }
    *out = w->mem;
    *out_len = w->mem_len;
    free(w);
    return 0;
}

/* ---- parsing -------------------------------------------------------------------------------- */

/* A cursor over the file; every read checks what is left. */
struct rin {
    const unsigned char *p;
    size_t left;
};

/* <n> little-endian bytes into *v. */
static bool rin_le(struct rin *r, int n, uint64_t *v)
{
    if (r->left < (size_t)n) {
        return false;
    }
    *v = 0;
    for (int i = 0; i < n; i++) {
        *v |= (uint64_t)r->p[i] << (8 * i);
    }
    r->p += n;
    r->left -= (size_t)n;
    return true;
}

static bool rin_u32(struct rin *r, uint32_t *v)
{
    uint64_t x = 0;
    bool ok = rin_le(r, 4, &x);

    *v = (uint32_t)x;
    return ok;
}

static bool rin_u64(struct rin *r, uint64_t *v)
{
    return rin_le(r, 8, v);
}

/* A length-prefixed span of at most <max> bytes. */
static bool rin_span(struct rin *r, size_t max, const char **data, size_t *len)
{
    uint32_t n;

    if (!rin_u32(r, &n) || n > max || n > r->left) {
        return false;
    }
    *data = (const char *)r->p;
    *len = n;
    r->p += n;
    r->left -= n;
    return true;
}

/* Whether the next string equals <want>. */
static bool rin_str_is(struct rin *r, const char *want, bool *ok)
{
    const char *s;
    size_t n;

    if (!rin_span(r, STATE_MAX_STR, &s, &n)) {
        *ok = false;
        return false;
    }
    return n == strlen(want) && memcmp(s, want, n) == 0;
}

static int refuse(int rc, char *why, size_t why_len, const char *what)
{
    snprintf(why, why_len, "%s", what);
    return rc;
}

static bool checksum_ok(const char *buf, size_t len)
{
    unsigned char sum[EVP_MAX_MD_SIZE];
    unsigned int sum_len = 0;

    if (EVP_Digest(buf, len - STATE_SUM_LEN, sum, &sum_len, EVP_sha256(), NULL) != 1 ||
        sum_len != STATE_SUM_LEN) {
        return false;
    }
    return memcmp(sum, buf + len - STATE_SUM_LEN, STATE_SUM_LEN) == 0;
}

int state_parse(const char *buf, size_t len, const struct state_ident *id, struct state_file *out,
                char *why, size_t why_len)
{
    struct rin r;
    uint32_t version, flags;
    uint64_t n_obj, n_ev, last_rv;
    bool ok = true, same = true;
    const char *idents[5];

    memset(out, 0, sizeof(*out));
    if (len < STATE_HDR_FIXED || memcmp(buf, STATE_MAGIC, 8) != 0) {
        return refuse(len < 8 ? STATE_ERR_CORRUPT : STATE_ERR_VERSION, why, why_len,
                      len < 8 ? "truncated (no header)" : "not a kwp state file (magic)");
    }
    r.p = (const unsigned char *)buf + 8;
    r.left = len - 8;
    (void)rin_u32(&r, &version);
    (void)rin_u32(&r, &flags);
    if (version != STATE_FORMAT_VERSION || flags != 0) {
        return refuse(STATE_ERR_VERSION, why, why_len, "another format version");
    }
    if (len > STATE_MAX_FILE_BYTES || len < STATE_HDR_FIXED + STATE_SUM_LEN ||
        !checksum_ok(buf, len)) {
        return refuse(STATE_ERR_CORRUPT, why, why_len,
                      "checksum mismatch (truncated or corrupted)");
    }
    r.left -= STATE_SUM_LEN; /* the checksum is not part of the records */
    idents[0] = id->upstream;
    idents[1] = id->group;
    idents[2] = id->version;
    idents[3] = id->plural;
    idents[4] = id->kind;
    for (size_t i = 0; i < 5; i++) {
        same = rin_str_is(&r, idents[i], &ok) && same;
    }
    if (!ok) {
        return refuse(STATE_ERR_CORRUPT, why, why_len, "bad header");
    }
    if (!same) {
        return refuse(STATE_ERR_FOREIGN, why, why_len, "written for another upstream or resource");
    }
    if (!rin_u64(&r, &out->rv) || !rin_u64(&r, &out->boundary) || !rin_u64(&r, &n_obj) ||
        !rin_u64(&r, &n_ev)) {
        return refuse(STATE_ERR_CORRUPT, why, why_len, "bad header");
    }
    /* Counts against the caps and the bytes left, before anything is allocated. */
    if (out->boundary > out->rv || out->boundary == 0 || n_obj > STATE_MAX_OBJECTS ||
        n_ev > STATE_MAX_EVENTS || n_obj > r.left / STATE_OBJ_MIN ||
        n_ev > (r.left - n_obj * STATE_OBJ_MIN) / STATE_EV_MIN) {
        return refuse(STATE_ERR_CORRUPT, why, why_len, "bad counts");
    }
    out->objects = xmalloc((n_obj > 0 ? n_obj : 1) * sizeof(*out->objects));
    out->events = xmalloc((n_ev > 0 ? n_ev : 1) * sizeof(*out->events));
    for (size_t i = 0; i < n_obj; i++) {
        struct state_rec *o = &out->objects[i];

        if (!rin_span(&r, STATE_MAX_OBJECT_BYTES, &o->data, &o->len) || o->len == 0) {
            state_file_fini(out);
            return refuse(STATE_ERR_CORRUPT, why, why_len, "bad object record");
        }
        o->rv = 0;
        o->type = WATCH_ADDED;
        out->n_objects++;
    }
    last_rv = out->boundary;
    for (size_t i = 0; i < n_ev; i++) {
        struct state_rec *e = &out->events[i];
        unsigned char t;

        if (!rin_u64(&r, &e->rv) || r.left < 1) {
            state_file_fini(out);
            return refuse(STATE_ERR_CORRUPT, why, why_len, "bad event record");
        }
        t = *r.p;
        r.p++;
        r.left--;
        if ((t != WATCH_ADDED && t != WATCH_MODIFIED && t != WATCH_DELETED) || e->rv <= last_rv ||
            e->rv > out->rv || !rin_span(&r, STATE_MAX_OBJECT_BYTES, &e->data, &e->len) ||
            e->len == 0) {
            state_file_fini(out);
            return refuse(STATE_ERR_CORRUPT, why, why_len, "bad event record");
        }
        e->type = (enum watch_type)t;
        last_rv = e->rv;
        out->n_events++;
    }
    if (r.left != 0) {
        state_file_fini(out);
        return refuse(STATE_ERR_CORRUPT, why, why_len, "trailing bytes");
    }
    return 0;
}

void state_file_fini(struct state_file *f)
{
    free(f->objects);
    free(f->events);
    memset(f, 0, sizeof(*f));
}

/* ---- identity ------------------------------------------------------------------------------- */

#define STATE_CA_MAX ((size_t)8 << 20) /* a CA bundle longer than this is named, not hashed */

/* Lower-case hex of the SHA-256 of data[0..len) into <hex> (65 bytes). */
static void sha256_hex(const void *data, size_t len, char hex[65])
{
    unsigned char sum[EVP_MAX_MD_SIZE];
    unsigned int n = 0;

    if (EVP_Digest(data, len, sum, &n, EVP_sha256(), NULL) != 1 || n != STATE_SUM_LEN) {
        snprintf(hex, 65, "unavailable");
        return;
    }
    for (unsigned int i = 0; i < n; i++) {
        snprintf(hex + 2 * i, 3, "%02x", sum[i]);
    }
}

static int read_file(const char *path, size_t max, char **out, size_t *out_len);

void state_upstream_id(const char *url, const char *ca_file, const char *ca_data, bool insecure,
                       char out[STATE_ID_MAX])
{
    char url_part[STATE_ID_MAX / 2 + 16], hex[65];
    char *bundle = NULL;
    size_t len = 0;
    int rc;

    if (strlen(url) > STATE_ID_MAX / 2) {
        sha256_hex(url, strlen(url), hex);
        snprintf(url_part, sizeof(url_part), "sha256:%s", hex);
    } else {
        snprintf(url_part, sizeof(url_part), "%s", url);
    }
    if (insecure) {
        snprintf(out, STATE_ID_MAX, "%s ca=insecure", url_part);
    } else if (ca_data != NULL) {
        sha256_hex(ca_data, strlen(ca_data), hex);
        snprintf(out, STATE_ID_MAX, "%s ca=sha256:%s", url_part, hex);
    } else if (ca_file != NULL) {
        rc = read_file(ca_file, STATE_CA_MAX, &bundle, &len);
        if (rc == 0) {
            sha256_hex(bundle, len, hex);
            snprintf(out, STATE_ID_MAX, "%s ca=sha256:%s", url_part, hex);
        } else {
            /* curl cannot verify with it either: whatever this names, nothing will match */
            snprintf(out, STATE_ID_MAX, "%s ca=unreadable", url_part);
        }
        free(bundle);
    } else {
        snprintf(out, STATE_ID_MAX, "%s ca=system", url_part);
    }
}

/* ---- files ---------------------------------------------------------------------------------- */

static void ident_of(const struct apires *ar, const char *upstream, struct state_ident *id)
{
    id->upstream = upstream;
    id->group = ar->kind.group;
    id->version = ar->kind.version;
    id->plural = ar->kind.plural;
    id->kind = ar->kind.kind;
}

/* DIR/<group|core>_<version>_<plural>.kwpstate, or with a ".<name>.tmp.<pid>" name. Characters
 * outside [A-Za-z0-9.-] become '_' (names come from discovery). Returns false when too long. */
static bool file_path(const struct apires *ar, const char *dir, bool tmp, char *out, size_t cap)
{
    char name[3 * 256 + 16];
    int n;

    n = snprintf(name, sizeof(name), "%s_%s_%s.kwpstate",
                 ar->kind.group[0] != '\0' ? ar->kind.group : "core", ar->kind.version,
                 ar->kind.plural);
    if (n < 0 || (size_t)n >= sizeof(name)) {
        return false;
    }
    for (char *c = name; *c != '\0'; c++) {
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '.' || *c == '-' || *c == '_')) {
            *c = '_';
        }
    }
    if (tmp) {
        n = snprintf(out, cap, "%s/.%s.tmp.%ld", dir, name, (long)getpid());
    } else {
        n = snprintf(out, cap, "%s/%s", dir, name);
    }
    return n >= 0 && (size_t)n < cap;
}

/* Reads the whole file at <path> (at most <max> bytes). Returns 0, -ENOENT, -EFBIG or
 * -errno. */
static int read_file(const char *path, size_t max, char **out, size_t *out_len)
{
    struct stat st;
    char *buf = NULL;
    size_t off = 0;
    int fd, rc = 0;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        return -errno;
    }
    if (fstat(fd, &st) == -1) {
        rc = -errno;
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = -EINVAL;
        goto out;
    }
    if (st.st_size < 0 || (uint64_t)st.st_size > max) {
        rc = -EFBIG;
        goto out;
    }
    buf = xmalloc((size_t)st.st_size + 1);
    while (off < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + off, (size_t)st.st_size - off);

        if (n == -1 && errno == EINTR) {
            continue;
        }
        if (n == -1) {
            rc = -errno;
            goto out;
        }
        if (n == 0) {
            break; /* shrank meanwhile: parsed as truncated */
        }
        off += (size_t)n;
    }
    *out = buf;
    *out_len = off;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return rc;
}

/* Builds the blobs of <f> for <ar>: base objects in strictly increasing key order, each
 * event's object carrying the event's rv. Returns 0 or -EPROTO (with <why>); on error nothing
 * is left allocated. */
static int build_blobs(const struct apires *ar, const struct state_file *f, struct blob ***base,
                       struct blob ***evs, char *why, size_t why_len)
{
    struct blob **bv = xcalloc(f->n_objects + 1, sizeof(*bv));
    struct blob **ev = xcalloc(f->n_events + 1, sizeof(*ev));
    size_t i;
    int rc = -EPROTO;

    for (i = 0; i < f->n_objects; i++) {
        bv[i] = kube_meta_blob(f->objects[i].data, f->objects[i].len, ar->kind.fields);
        if (bv[i] == NULL || bv[i]->rv == 0 || bv[i]->rv > f->boundary) {
            snprintf(why, why_len, "object %zu is not a valid object at the boundary", i);
            goto out;
        }
        if (i > 0 && strcmp(bv[i - 1]->key, bv[i]->key) >= 0) {
            snprintf(why, why_len, "objects out of key order at %zu", i);
            goto out;
        }
    }
    for (i = 0; i < f->n_events; i++) {
        ev[i] = kube_meta_blob(f->events[i].data, f->events[i].len, ar->kind.fields);
        if (ev[i] == NULL || ev[i]->rv != f->events[i].rv) {
            snprintf(why, why_len, "event %zu's object does not carry its resourceVersion", i);
            goto out;
        }
    }
    rc = 0;
out:
    if (rc != 0) {
        for (i = 0; i < f->n_objects; i++) {
            blob_unref(bv[i]);
        }
        for (i = 0; i < f->n_events; i++) {
            blob_unref(ev[i]);
        }
        free(bv);
        free(ev);
        bv = ev = NULL;
    }
    *base = bv;
    *evs = ev;
    return rc;
}

uint64_t state_load(struct apires *ar, const char *dir, const char *upstream)
{
    char path[STATE_PATH_MAX], why[STATE_WHY_MAX] = "";
    struct state_ident id;
    struct state_file f = {0};
    struct blob **base = NULL, **evs = NULL;
    char *buf = NULL;
    size_t len = 0;
    int64_t t0 = clock_mono_ms(), now;
    uint64_t rv = 0;
    int rc;

    if (!file_path(ar, dir, false, path, sizeof(path))) {
        log_warn("state", "resource=%s dir=%s msg=\"state file path too long, listing\"",
                 resource_name(ar->res), dir);
        return 0;
    }
    rc = read_file(path, STATE_MAX_FILE_BYTES, &buf, &len);
    if (rc == -ENOENT) {
        log_info("state", "resource=%s file=%s msg=\"no saved state, listing\"",
                 resource_name(ar->res), path);
        return 0;
    }
    if (rc != 0) {
        log_warn("state",
                 "resource=%s file=%s err=\"%s\" msg=\"cannot read saved state, ignored; "
                 "listing\"",
                 resource_name(ar->res), path, strerror(-rc));
        return 0;
    }
    ident_of(ar, upstream, &id);
    rc = state_parse(buf, len, &id, &f, why, sizeof(why));
    if (rc == 0) {
        rc = build_blobs(ar, &f, &base, &evs, why, sizeof(why));
    }
    if (rc != 0) {
        log_warn("state",
                 "resource=%s file=%s bytes=%zu err=\"%s\" msg=\"saved state refused, "
                 "ignored; listing\"",
                 resource_name(ar->res), path, len, why);
        goto out;
    }
    now = clock_mono_ms();
    resource_replace(ar->res, base, f.n_objects, f.boundary, now);
    for (size_t i = 0; i < f.n_events; i++) {
        /* rvs strictly increase (state_parse), so no apply can be refused */
        BUG_ON(resource_apply(ar->res, f.events[i].type, evs[i], f.events[i].rv, now) != 0);
    }
    resource_progress(ar->res, f.rv);
    rv = f.rv;
    log_info("state",
             "resource=%s file=%s rv=%llu boundary=%llu objects=%zu events=%zu bytes=%zu ms=%lld "
             "msg=\"loaded saved state: serving it (not yet fresh), resuming the watch\"",
             resource_name(ar->res), path, (unsigned long long)f.rv, (unsigned long long)f.boundary,
             f.n_objects, f.n_events, len, (long long)(clock_mono_ms() - t0));
out:
    if (base != NULL) {
        for (size_t i = 0; i < f.n_objects; i++) {
            blob_unref(base[i]);
        }
        for (size_t i = 0; i < f.n_events; i++) {
            blob_unref(evs[i]);
        }
    }
    free(base);
    free(evs);
    state_file_fini(&f);
    free(buf);
    return rv;
}

static void fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd != -1) {
        (void)fsync(fd);
        close(fd);
    }
}

int state_save(struct apires *ar, const char *dir, const char *upstream)
{
    char path[STATE_PATH_MAX], tmp[STATE_PATH_MAX];
    struct resource_export x;
    struct state_ident id;
    struct wout *w = NULL;
    int64_t t0 = clock_mono_ms();
    int fd = -1, rc;

    if (!file_path(ar, dir, false, path, sizeof(path)) ||
        !file_path(ar, dir, true, tmp, sizeof(tmp))) {
        return -ENAMETOOLONG;
    }
    rc = resource_export(ar->res, &x);
    if (rc != 0) {
        /* Not synced (relisting, or never loaded: a start that failed early). A file already
         * there stays: resuming from an older rv is still right (a replay, or a 410). */
        log_info("state", "resource=%s msg=\"not synced: no state saved, the previous file stays\"",
                 resource_name(ar->res));
        return 0;
    }
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd == -1) {
        rc = -errno;
        goto out;
    }
    ident_of(ar, upstream, &id);
    w = xcalloc(1, sizeof(*w));
    w->fd = fd;
    rc = encode(w, &id, &x);
    if (rc == 0 && fsync(fd) == -1) {
        rc = -errno;
    }
    if (close(fd) == -1 && rc == 0) {
        rc = -errno;
    }
    fd = -1;
    if (rc == 0 && rename(tmp, path) == -1) {
        rc = -errno;
    }
    if (rc == 0) {
        fsync_dir(dir);
        log_info("state",
                 "resource=%s file=%s rv=%llu objects=%zu events=%zu ms=%lld "
                 "msg=\"state saved\"",
                 resource_name(ar->res), path, (unsigned long long)x.rv, x.base->len, x.n_events,
                 (long long)(clock_mono_ms() - t0));
    }
out:
    if (rc != 0) {
        (void)unlink(tmp);
        log_warn("state", "resource=%s file=%s err=\"%s\" msg=\"cannot save state\"",
                 resource_name(ar->res), path, strerror(-rc));
    }
    if (fd != -1) {
        close(fd);
    }
    free(w);
    resource_export_fini(&x);
    return rc;
}

/* ---- the saver ------------------------------------------------------------------------------ */

struct state_saver {
    const char *dir;
    const char *upstream;
    struct registry *reg;
    int64_t interval_ms;
    pthread_t thread;
    bool running;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    bool stop;         /* under mu */
};

static void save_all(struct state_saver *sv)
{
    size_t n = registry_len(sv->reg);

    for (size_t i = 0; i < n; i++) {
        (void)state_save(registry_at(sv->reg, i), sv->dir, sv->upstream);
    }
}

static void *saver_main(void *arg)
{
    struct state_saver *sv = arg;
    struct timespec ts;
    bool stop = false;

    while (!stop) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += sv->interval_ms / 1000;
        ts.tv_nsec += (sv->interval_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&sv->mu);
        while (!sv->stop && pthread_cond_timedwait(&sv->cv, &sv->mu, &ts) != ETIMEDOUT) {
        }
        stop = sv->stop;
        pthread_mutex_unlock(&sv->mu);
        if (!stop) {
            save_all(sv);
        }
    }
    return NULL;
}

struct state_saver *state_saver_start(const char *dir, int64_t interval_ms, const char *upstream,
                                      struct registry *reg, char *err, size_t err_len)
{
    struct state_saver *sv;
    pthread_condattr_t attr;
    struct stat st;

    if (stat(dir, &st) == -1 || !S_ISDIR(st.st_mode) || access(dir, W_OK | X_OK) != 0) {
        snprintf(err, err_len, "--state-dir %s is not a writable directory", dir);
        return NULL;
    }
    sv = xcalloc(1, sizeof(*sv));
    sv->dir = dir;
    sv->upstream = upstream;
    sv->reg = reg;
    sv->interval_ms = interval_ms;
    BUG_ON(pthread_mutex_init(&sv->mu, NULL) != 0);
    BUG_ON(pthread_condattr_init(&attr) != 0);
    BUG_ON(pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0);
    BUG_ON(pthread_cond_init(&sv->cv, &attr) != 0);
    pthread_condattr_destroy(&attr);
    if (interval_ms > 0) {
        int prc = pthread_create(&sv->thread, NULL, saver_main, sv);

        if (prc != 0) {
            snprintf(err, err_len, "cannot start the state saver thread: %s", strerror(prc));
            state_saver_free(sv);
            return NULL;
        }
        sv->running = true;
    }
    return sv;
}

static void saver_stop(struct state_saver *sv)
{
    if (!sv->running) {
        return;
    }
    pthread_mutex_lock(&sv->mu);
    sv->stop = true;
    pthread_cond_signal(&sv->cv);
    pthread_mutex_unlock(&sv->mu);
    pthread_join(sv->thread, NULL);
    sv->running = false;
}

void state_saver_final(struct state_saver *sv)
{
    if (sv == NULL) {
        return;
    }
    saver_stop(sv);
    save_all(sv);
}

void state_saver_free(struct state_saver *sv)
{
    if (sv == NULL) {
        return;
    }
    saver_stop(sv);
    pthread_cond_destroy(&sv->cv);
    pthread_mutex_destroy(&sv->mu);
    free(sv);
}
