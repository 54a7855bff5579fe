/*
 * replay.c - a main() that runs a harness over committed inputs, so the fuzz corpus is a
 * regression suite in every build (gcc or clang, no libFuzzer needed).
 *
 *   fuzz_<name>_replay FILE|DIR...
 *
 * Each file (a directory's regular files, in name order, dot files skipped) is read into an
 * exact-size heap buffer and passed to LLVMFuzzerTestOneInput once. A harness reports a broken
 * invariant by aborting, so the first bad input ends the run with a non-zero status after its
 * name is printed. Exits 1 when an argument cannot be read, holds a file over REPLAY_MAX_BYTES,
 * or when no input was found at all (an empty corpus proves nothing).
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"

#define REPLAY_MAX_BYTES ((size_t)1 << 20) /* corpus files are small; a larger one is a mistake */
#define REPLAY_MAX_FILES 4096              /* per directory */

/* Runs one file. Returns 0, or -errno when it cannot be read or is too large. */
static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = -EIO;

    if (f == NULL) {
        rc = -errno;
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return rc;
    }
    buf = malloc(REPLAY_MAX_BYTES + 1);
    if (buf == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    len = fread(buf, 1, REPLAY_MAX_BYTES + 1, f);
    if (ferror(f)) {
        fprintf(stderr, "replay: %s: read error\n", path);
        goto out;
    }
    if (len > REPLAY_MAX_BYTES) {
        fprintf(stderr, "replay: %s: larger than %zu bytes\n", path, REPLAY_MAX_BYTES);
        rc = -EFBIG;
        goto out;
    }
    /* An exact-size copy: a harness reading one byte too far trips AddressSanitizer. */
    {
        uint8_t *exact = malloc(len ? len : 1);

        if (exact == NULL) {
            rc = -ENOMEM;
            goto out;
        }
        memcpy(exact, buf, len);
        fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
        LLVMFuzzerTestOneInput(exact, len);
        free(exact);
    }
    rc = 0;
out:
    free(buf);
    fclose(f);
    return rc;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file of <dir> in name order; adds to *count. Returns 0 or -errno. */
static int replay_dir(const char *dir, size_t *count)
{
    DIR *d = opendir(dir);
    char *names[REPLAY_MAX_FILES];
    size_t n = 0;
    struct dirent *e;
    int rc = 0;

    if (d == NULL) {
        rc = -errno;
        fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
        return rc;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        if (n == REPLAY_MAX_FILES) {
            fprintf(stderr, "replay: %s: more than %d files\n", dir, REPLAY_MAX_FILES);
            rc = -E2BIG;
            break;
        }
        names[n] = strdup(e->d_name);
        if (names[n] == NULL) {
            rc = -ENOMEM;
            break;
        }
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof(names[0]), cmp_names);
    for (size_t i = 0; i < n; i++) {
        size_t plen = strlen(dir) + strlen(names[i]) + 2;
        char *path = malloc(plen);
        struct stat st;

        if (rc == 0 && path == NULL) {
            rc = -ENOMEM;
        }
        if (rc == 0) {
            snprintf(path, plen, "%s/%s", dir, names[i]);
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                rc = replay_file(path);
                *count += rc == 0;
            }
        }
        free(path);
        free(names[i]);
    }
    return rc;
}

int main(int argc, char **argv)
{
    size_t count = 0;
    int rc = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc && rc == 0; i++) {
        struct stat st;

        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            rc = -ENOENT;
        } else if (S_ISDIR(st.st_mode)) {
            rc = replay_dir(argv[i], &count);
        } else {
            rc = replay_file(argv[i]);
            count += rc == 0;
        }
    }
    if (rc == 0 && count == 0) {
        fprintf(stderr, "replay: no input found\n");
        rc = -ENOENT;
    }
    printf("replay: %zu inputs, %s\n", count, rc == 0 ? "all passed" : "stopped on an error");
    return rc == 0 ? 0 : 1;
}
