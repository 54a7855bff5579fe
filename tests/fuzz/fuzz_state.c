/*
 * fuzz_state.c - proxy/state.c's loader: state_parse and the blob building state_load does
 * after it (build_blobs, static: this file includes state.c, STYLE's "sparingly").
 *
 * The first input byte picks how the rest reaches the parser, so that the fuzzer gets past
 * the checks a random file fails at once:
 *   0 (mod 3): the rest is the whole file, as read from disk (mostly the magic, version and
 *              checksum refusals);
 *   1: the rest with a valid SHA-256 appended (headers and lengths as the input says);
 *   2: the header for the harness's own identity (magic, version 1, upstream "u", pods) +
 *      the rest (rv, boundary, counts, records) + a valid SHA-256: the record parser.
 * Checked: a refusal zeroes the result and gives a reason; an accepted file's spans lie
 * inside the buffer, counts match, event rvs increase strictly within (boundary, rv], and
 * every object then either builds (in strict key order, event objects carrying their event's
 * rv) or is refused as a whole, with nothing leaked.
 */
#include "proxy/state.c"

#include "tests/fuzz/fuzz.h"

static void put_str(char *buf, size_t *off, const char *s)
{
    uint32_t n = (uint32_t)strlen(s);

    for (int i = 0; i < 4; i++) {
        buf[(*off)++] = (char)(n >> (8 * i));
    }
    memcpy(buf + *off, s, n);
    *off += n;
}

static void check_parsed(const char *buf, size_t len, const struct state_file *f)
{
    uint64_t last = f->boundary;

    CHECK(f->boundary > 0 && f->boundary <= f->rv);
    for (size_t i = 0; i < f->n_objects; i++) {
        CHECK(f->objects[i].data >= buf && f->objects[i].len > 0);
        CHECK(f->objects[i].data + f->objects[i].len <= buf + len - STATE_SUM_LEN);
    }
    for (size_t i = 0; i < f->n_events; i++) {
        const struct state_rec *e = &f->events[i];

        CHECK(e->data >= buf && e->len > 0 && e->data + e->len <= buf + len - STATE_SUM_LEN);
        CHECK(e->rv > last && e->rv <= f->rv);
        CHECK(e->type == WATCH_ADDED || e->type == WATCH_MODIFIED || e->type == WATCH_DELETED);
        last = e->rv;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct apires_kind *k = apires_builtin("", "v1", "pods");
    struct apires ar = {.kind = *k};
    struct state_ident id = {"u", "", "v1", "pods", "Pod"};
    struct state_file f;
    struct blob **base = NULL, **evs = NULL;
    char why[STATE_WHY_MAX];
    size_t len = 0, off = 0;
    unsigned int sum_len = 0;
    char *buf;
    int mode, rc;

    if (size == 0) {
        return 0;
    }
    mode = data[0] % 3;
    buf = malloc(size + 128);
    if (mode == 2) {
        memcpy(buf, STATE_MAGIC, 8);
        memcpy(buf + 8, "\1\0\0\0\0\0\0\0", 8);
        off = 16;
        put_str(buf, &off, id.upstream);
        put_str(buf, &off, id.group);
        put_str(buf, &off, id.version);
        put_str(buf, &off, id.plural);
        put_str(buf, &off, id.kind);
    }
    memcpy(buf + off, data + 1, size - 1);
    len = off + size - 1;
    if (mode != 0) {
        CHECK(EVP_Digest(buf, len, (unsigned char *)buf + len, &sum_len, EVP_sha256(), NULL) == 1);
        len += STATE_SUM_LEN;
    }
    /* exact size, so AddressSanitizer sees any read past the end */
    buf = realloc(buf, len > 0 ? len : 1);

    memset(why, 0, sizeof(why));
    rc = state_parse(buf, len, &id, &f, why, sizeof(why));
    if (rc != 0) {
        CHECK(rc == STATE_ERR_CORRUPT || rc == STATE_ERR_VERSION || rc == STATE_ERR_FOREIGN);
        CHECK(why[0] != '\0');
        CHECK(f.objects == NULL && f.events == NULL && f.n_objects == 0 && f.n_events == 0);
    } else {
        check_parsed(buf, len, &f);
        if (build_blobs(&ar, &f, &base, &evs, why, sizeof(why)) == 0) {
            for (size_t i = 0; i < f.n_objects; i++) {
                CHECK(base[i]->rv > 0 && base[i]->rv <= f.boundary);
                CHECK(i == 0 || strcmp(base[i - 1]->key, base[i]->key) < 0);
            }
            for (size_t i = 0; i < f.n_objects; i++) {
                blob_unref(base[i]);
            }
            for (size_t i = 0; i < f.n_events; i++) {
                CHECK(evs[i]->rv == f.events[i].rv);
                blob_unref(evs[i]);
            }
            free(base);
            free(evs);
        } else {
            CHECK(base == NULL && evs == NULL && why[0] != '\0');
        }
    }
    state_file_fini(&f);
    free(buf);
    return 0;
}
