/*
 * test_state.c - proxy/state.c, the --state-dir files: a saved resource loads back to the same
 * objects, the same history and the same 410 boundary; every refused file (missing, truncated
 * at each offset, any byte flipped, another magic, version, upstream or resource, lengths and
 * counts that lie under a valid checksum) is refused with its reason and leaves the cache
 * untouched; a resource that is not synced saves nothing and drops its old file.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/blob.h"
#include "cache/resource.h"
#include "cache/snapshot.h"
#include "proxy/apires.h"
#include "proxy/kube_meta.h"
#include "proxy/log.h"
#include "proxy/state.h"

#define UP "http://127.0.0.1:6443"

static const struct ring_opts small_ring = {.min_cap = 4, .max_cap = 4, .fresh_ms = 0};

static struct apires *pods_new(void)
{
    const struct apires_kind *k = apires_builtin("", "v1", "pods");

    cr_assert(k != NULL);
    return apires_new(k, NULL, &small_ring);
}

static struct blob *pod(const char *name, unsigned rv, const char *phase)
{
    char json[512];
    int n = snprintf(json, sizeof(json),
                     "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\","
                     "\"resourceVersion\":\"%u\",\"labels\":{\"app\":\"a\"}},"
                     "\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"phase\":\"%s\"}}",
                     name, rv, phase);
    struct blob *b = kube_meta_blob(json, (size_t)n, apires_builtin("", "v1", "pods")->fields);

    cr_assert(b != NULL);
    return b;
}

/* A resource with 3 listed pods at rv 10 and 7 events after it (3 evicted by the 4-slot
 * history), then a bookmark to rv 30: boundary = first kept rv - 1. */
static struct apires *filled(void)
{
    struct apires *ar = pods_new();
    struct blob *items[3] = {pod("a", 3, "Pending"), pod("b", 5, "Pending"),
                             pod("c", 9, "Running")};
    struct {
        enum watch_type t;
        const char *name;
        const char *phase;
    } evs[] = {{WATCH_MODIFIED, "a", "Running"}, {WATCH_ADDED, "d", "Pending"},
               {WATCH_DELETED, "b", "Pending"},  {WATCH_MODIFIED, "d", "Running"},
               {WATCH_ADDED, "e", "Pending"},    {WATCH_DELETED, "a", "Running"},
               {WATCH_MODIFIED, "c", "Failed"}};

    resource_replace(ar->res, items, 3, 10, 1);
    for (size_t i = 0; i < 3; i++) {
        blob_unref(items[i]);
    }
    for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
        struct blob *b = pod(evs[i].name, (unsigned)(11 + 2 * i), evs[i].phase);

        cr_assert_eq(resource_apply(ar->res, evs[i].t, b, 11 + 2 * i, 1), 0);
        blob_unref(b);
    }
    resource_progress(ar->res, 30);
    return ar;
}

static void ident(const struct apires *ar, const char *up, struct state_ident *id)
{
    id->upstream = up;
    id->group = ar->kind.group;
    id->version = ar->kind.version;
    id->plural = ar->kind.plural;
    id->kind = ar->kind.kind;
}

static char *encoded(const struct apires *ar, size_t *len)
{
    struct resource_export x;
    struct state_ident id;
    char *buf = NULL;

    cr_assert_eq(resource_export(ar->res, &x), 0);
    ident(ar, UP, &id);
    cr_assert_eq(state_encode(&id, &x, &buf, len), 0);
    resource_export_fini(&x);
    return buf;
}

static void resum(char *buf, size_t len)
{
    unsigned int n = 0;

    cr_assert_eq(EVP_Digest(buf, len - STATE_SUM_LEN, (unsigned char *)buf + len - STATE_SUM_LEN,
                            &n, EVP_sha256(), NULL),
                 1);
}

static int parse(const char *buf, size_t len, const struct apires *ar, const char *up, char *why)
{
    struct state_ident id;
    struct state_file f;
    int rc;

    ident(ar, up, &id);
    rc = state_parse(buf, len, &id, &f, why, 256);
    state_file_fini(&f);
    return rc;
}

/* Every event a watch from <rv> replays, as "type rv json\n" lines. */
static char *history_of(struct resource *res, uint64_t rv)
{
    struct watcher w;
    struct ring_event ev[64];
    char *out = calloc(1, 65536);
    size_t used = 0;
    ssize_t n;

    memset(&w, 0, sizeof(w));
    cr_assert_eq(resource_watch_from(res, &w, rv, NULL), 0);
    while ((n = resource_watch_take(res, &w, ev, 64)) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            used += (size_t)snprintf(out + used, 65536 - used, "%d %llu %s\n", (int)ev[i].type,
                                     (unsigned long long)ev[i].rv, ev[i].obj->data);
        }
    }
    resource_watch_detach(res, &w);
    return out;
}

static char *objects_of(struct resource *res)
{
    uint64_t rv;
    struct snapshot *s = resource_snapshot(res, &rv);
    struct store_iter it;
    char *out = calloc(1, 65536);
    size_t used = 0;

    for (struct blob *b = snapshot_seek(s, NULL, &it); b != NULL; b = snapshot_next(&it)) {
        used += (size_t)snprintf(out + used, 65536 - used, "%s\n", b->data);
    }
    snapshot_unref(s);
    return out;
}

static char *tmpdir(void)
{
    char *d = strdup("/tmp/kwp-state-XXXXXX");

    cr_assert(mkdtemp(d) != NULL);
    return d;
}

static void rmdir_all(const char *d)
{
    char cmd[256];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
    cr_assert_eq(system(cmd), 0);
}

static void quiet(void)
{
    log_set_level(LOG_LEVEL_ERROR);
}

TestSuite(state, .init = quiet);

Test(state, save_then_load_rebuilds_objects_history_and_boundary)
{
    struct apires *a = filled(), *b = pods_new();
    struct resource_stats sa, sb;
    char *d = tmpdir();
    uint64_t boundary = 0;
    struct watcher w;
    char *ha, *hb, *oa, *ob;

    cr_assert_eq(state_save(a, d, UP), 0);
    cr_assert_eq(state_load(b, d, UP), 30);
    resource_stats(a->res, &sa);
    resource_stats(b->res, &sb);
    cr_assert_eq(sb.rv, 30);
    cr_assert(sb.ready);
    cr_assert_eq(sb.history_boundary, sa.history_boundary);
    cr_assert_eq(sa.history_boundary, 16); /* 4 kept: rvs 17..23 */
    cr_assert_eq(sb.history_len, sa.history_len);
    cr_assert_eq(sb.objects, sa.objects);
    oa = objects_of(a->res);
    ob = objects_of(b->res);
    cr_assert_str_eq(ob, oa);
    ha = history_of(a->res, sa.history_boundary);
    hb = history_of(b->res, sb.history_boundary);
    cr_assert_str_eq(hb, ha);
    cr_assert(strstr(hb, "1 17 ") != NULL && strstr(hb, "2 21 ") != NULL); /* MODIFIED, DELETED */
    /* the 410 boundary is exact: one below it is too old, with the same (M) */
    memset(&w, 0, sizeof(w));
    cr_assert_eq(resource_watch_from(b->res, &w, sb.history_boundary - 1, &boundary), -ESTALE);
    cr_assert_eq(boundary, 16);
    free(ha);
    free(hb);
    free(oa);
    free(ob);
    apires_free(a);
    apires_free(b);
    rmdir_all(d);
    free(d);
}

Test(state, round_trip_of_a_fresh_list_without_events)
{
    struct apires *a = pods_new(), *b = pods_new();
    struct blob *items[2] = {pod("x", 4, "Pending"), pod("y", 7, "Pending")};
    char *d = tmpdir();
    char *oa, *ob;

    resource_replace(a->res, items, 2, 7, 1);
    blob_unref(items[0]);
    blob_unref(items[1]);
    cr_assert_eq(state_save(a, d, UP), 0);
    cr_assert_eq(state_load(b, d, UP), 7);
    oa = objects_of(a->res);
    ob = objects_of(b->res);
    cr_assert_str_eq(ob, oa);
    free(oa);
    free(ob);
    apires_free(a);
    apires_free(b);
    rmdir_all(d);
    free(d);
}

Test(state, truncation_at_every_offset_is_refused)
{
    struct apires *a = filled();
    size_t len;
    char *buf = encoded(a, &len);
    char why[256];

    cr_assert_eq(parse(buf, len, a, UP, why), 0);
    for (size_t n = 0; n < len; n++) {
        char *cut = malloc(n + 1); /* exact size: ASan sees a read past the end */

        memcpy(cut, buf, n);
        cr_assert_neq(parse(cut, n, a, UP, why), 0, "a file cut at %zu was accepted", n);
        free(cut);
    }
    free(buf);
    apires_free(a);
}

Test(state, any_flipped_byte_is_refused)
{
    struct apires *a = filled();
    size_t len;
    char *buf = encoded(a, &len);
    char why[256];

    for (size_t i = 0; i < len; i++) {
        buf[i] ^= 0x20;
        cr_assert_neq(parse(buf, len, a, UP, why), 0, "byte %zu flipped was accepted", i);
        buf[i] ^= 0x20;
    }
    cr_assert_eq(parse(buf, len, a, UP, why), 0);
    free(buf);
    apires_free(a);
}

Test(state, wrong_magic_or_version_is_another_format)
{
    struct apires *a = filled();
    size_t len;
    char *buf = encoded(a, &len);
    char why[256];

    buf[0] = 'X';
    cr_assert_eq(parse(buf, len, a, UP, why), STATE_ERR_VERSION);
    cr_assert_str_eq(why, "not a kwp state file (magic)");
    buf[0] = 'K';
    buf[8] = 2; /* version 2, checksum made valid again */
    resum(buf, len);
    cr_assert_eq(parse(buf, len, a, UP, why), STATE_ERR_VERSION);
    cr_assert_str_eq(why, "another format version");
    free(buf);
    apires_free(a);
}

Test(state, another_upstream_or_resource_is_foreign)
{
    struct apires *a = filled();
    const struct apires_kind *cm = apires_builtin("", "v1", "configmaps");
    struct apires *other = apires_new(cm, NULL, &small_ring);
    size_t len;
    char *buf = encoded(a, &len);
    char why[256];

    cr_assert_eq(parse(buf, len, a, "http://127.0.0.1:6444", why), STATE_ERR_FOREIGN);
    cr_assert_str_eq(why, "written for another upstream or resource");
    cr_assert_eq(parse(buf, len, other, UP, why), STATE_ERR_FOREIGN);
    free(buf);
    apires_free(a);
    apires_free(other);
}

/* Offset of the n_objects count: after magic, version, flags and the five strings. */
static size_t counts_off(const char *buf)
{
    size_t off = 16;

    for (int i = 0; i < 5; i++) {
        uint32_t n;

        memcpy(&n, buf + off, 4); /* little-endian host (x86-64, arm64) */
        off += 4 + n;
    }
    return off + 16; /* rv, boundary */
}

Test(state, lying_counts_and_lengths_under_a_valid_checksum_are_refused_unallocated)
{
    struct apires *a = filled();
    size_t len;
    char *buf = encoded(a, &len);
    size_t off = counts_off(buf);
    uint64_t huge = UINT64_MAX / 2, n_obj;
    uint32_t big = 0x7fffffff;
    char why[256];

    memcpy(&n_obj, buf + off, 8);
    cr_assert_eq(n_obj, 3); /* a, c and d as of the boundary (rv 16) */
    memcpy(buf + off, &huge, 8);
    resum(buf, len);
    cr_assert_eq(parse(buf, len, a, UP, why), STATE_ERR_CORRUPT);
    cr_assert_str_eq(why, "bad counts");
    memcpy(buf + off, &n_obj, 8);
    memcpy(buf + off + 8, &huge, 8);
    resum(buf, len);
    cr_assert_eq(parse(buf, len, a, UP, why), STATE_ERR_CORRUPT);
    memcpy(buf + off + 8, &(uint64_t){4}, 8);
    memcpy(buf + off + 16, &big, 4); /* the first object's length */
    resum(buf, len);
    cr_assert_eq(parse(buf, len, a, UP, why), STATE_ERR_CORRUPT);
    cr_assert_str_eq(why, "bad object record");
    free(buf);
    apires_free(a);
}

Test(state, events_out_of_order_under_a_valid_checksum_are_refused)
{
    struct apires *a = filled();
    size_t len;
    char *buf = encoded(a, &len);
    char why[256];
    uint64_t boundary;
    size_t off = counts_off(buf);

    memcpy(&boundary, buf + off - 8, 8);
    boundary = 100; /* above the events' rvs */
    memcpy(buf + off - 8, &boundary, 8);
    resum(buf, len);
    cr_assert_eq(parse(buf, len, a, UP, why), STATE_ERR_CORRUPT);
    free(buf);
    apires_free(a);
}

static void write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");

    cr_assert(f != NULL);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

Test(state, load_refuses_missing_corrupt_and_foreign_files_and_leaves_the_cache_alone)
{
    struct apires *a = filled(), *b = pods_new();
    char *d = tmpdir();
    char path[512];
    size_t len;
    char *buf = encoded(a, &len);
    struct resource_stats st;

    cr_assert_eq(state_load(b, d, UP), 0); /* missing */
    snprintf(path, sizeof(path), "%s/core_v1_pods.kwpstate", d);
    write_file(path, buf, len / 2); /* truncated */
    cr_assert_eq(state_load(b, d, UP), 0);
    buf[len / 2] ^= 1; /* corrupted */
    write_file(path, buf, len);
    cr_assert_eq(state_load(b, d, UP), 0);
    buf[len / 2] ^= 1;
    write_file(path, buf, len);
    cr_assert_eq(state_load(b, d, "https://elsewhere:6443"), 0); /* foreign */
    resource_stats(b->res, &st);
    cr_assert(!st.ready);
    cr_assert_eq(st.objects, 0);
    cr_assert_eq(state_load(b, d, UP), 30); /* the same bytes, for the right upstream */
    free(buf);
    apires_free(a);
    apires_free(b);
    rmdir_all(d);
    free(d);
}

Test(state, a_valid_checksum_over_bad_objects_is_refused)
{
    struct apires *a = filled(), *b = pods_new();
    char *d = tmpdir();
    char path[512];
    size_t len;
    char *buf = encoded(a, &len);
    size_t off = counts_off(buf) + 16 + 4; /* the first object's bytes */

    memcpy(buf + off, "[", 1); /* not an object any more */
    resum(buf, len);
    snprintf(path, sizeof(path), "%s/core_v1_pods.kwpstate", d);
    write_file(path, buf, len);
    cr_assert_eq(state_load(b, d, UP), 0);
    cr_assert(!resource_is_ready(b->res, NULL));
    free(buf);
    apires_free(a);
    apires_free(b);
    rmdir_all(d);
    free(d);
}

Test(state, an_unsynced_resource_saves_nothing_and_keeps_its_old_file)
{
    struct apires *a = filled(), *b = pods_new();
    struct blob *later = pod("z", 40, "Pending");
    char *d = tmpdir();

    cr_assert_eq(state_save(a, d, UP), 0);
    cr_assert_eq(resource_apply(a->res, WATCH_ADDED, later, 40, 2), 0);
    blob_unref(later);
    resource_set_unready(a->res, 2);
    cr_assert_eq(state_save(a, d, UP), 0);
    cr_assert_eq(state_load(b, d, UP), 30, "the file of the last synced save stays");
    apires_free(a);
    apires_free(b);
    rmdir_all(d);
    free(d);
}

Test(state, the_saver_refuses_a_directory_it_cannot_write)
{
    char err[256];

    cr_assert_null(state_saver_start("/nonexistent/kwp", 0, UP, NULL, err, sizeof(err)));
    cr_assert_str_eq(err, "--state-dir /nonexistent/kwp is not a writable directory");
}

Test(state, the_upstream_identity_names_the_url_and_what_vouches_for_the_server)
{
    char a[STATE_ID_MAX], b[STATE_ID_MAX], path[] = "/tmp/kwp-state-ca-XXXXXX";
    char *long_url = malloc(STATE_ID_MAX + 1);
    int fd;

    state_upstream_id(UP, NULL, NULL, false, a);
    cr_assert_str_eq(a, UP " ca=system");
    state_upstream_id(UP, NULL, NULL, true, a);
    cr_assert_str_eq(a, UP " ca=insecure");
    /* sha256("CA1") */
    state_upstream_id(UP, NULL, "CA1", false, a);
    cr_assert_str_eq(a, UP " ca=sha256:"
                           "8b6398d087e48123e80ba59f059907cf4539326ff1e06cd5c49ec0d402d4e2e3");
    state_upstream_id(UP, NULL, "CA2", false, b);
    cr_assert_str_neq(a, b, "another CA is another cluster");
    fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, "CA1", 3), 3);
    close(fd);
    state_upstream_id(UP, path, NULL, false, b);
    cr_assert_str_eq(a, b, "a CA file is hashed by its contents, as ca_data");
    unlink(path);
    state_upstream_id(UP, path, NULL, false, b);
    cr_assert_str_eq(b, UP " ca=unreadable");
    memset(long_url, 'h', STATE_ID_MAX);
    long_url[STATE_ID_MAX] = '\0';
    state_upstream_id(long_url, NULL, NULL, false, b);
    cr_assert(strncmp(b, "sha256:", 7) == 0 && strlen(b) == 7 + 64 + strlen(" ca=system"));
    free(long_url);
}

Test(state, a_smaller_history_after_the_restart_moves_the_boundary_up_exactly)
{
    static const struct ring_opts tiny = {.min_cap = 2, .max_cap = 2, .fresh_ms = 0};
    struct apires *a = filled();
    struct apires *b = apires_new(apires_builtin("", "v1", "pods"), NULL, &tiny);
    struct resource_stats st;
    struct watcher w;
    uint64_t boundary = 0;
    char *d = tmpdir();

    cr_assert_eq(state_save(a, d, UP), 0);
    cr_assert_eq(state_load(b, d, UP), 30);
    resource_stats(b->res, &st);
    cr_assert_eq(st.history_len, 2);       /* rvs 21 and 23 */
    cr_assert_eq(st.history_boundary, 20); /* as if the ring had evicted 17 and 19 itself */
    memset(&w, 0, sizeof(w));
    cr_assert_eq(resource_watch_from(b->res, &w, 19, &boundary), -ESTALE);
    cr_assert_eq(boundary, 20);
    memset(&w, 0, sizeof(w));
    cr_assert_eq(resource_watch_from(b->res, &w, 20, NULL), 0);
    resource_watch_detach(b->res, &w);
    apires_free(a);
    apires_free(b);
    rmdir_all(d);
    free(d);
}
