/*
 * filebuf.c - whole-file reads with a cap (filebuf.h).
 */
#include "sim/filebuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/bug.h"

char *filebuf_read(const char *path, size_t max, size_t *len, char *err, size_t err_len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    int e;

    *len = 0;
    if (f == NULL) {
        e = errno;
        snprintf(err, err_len, "%s: %s", path, strerror(e));
        return NULL;
    }
    buf = xmalloc(max + 2);
    *len = fread(buf, 1, max + 1, f);
    if (ferror(f)) {
        snprintf(err, err_len, "%s: read error", path);
        fclose(f);
        free(buf);
        return NULL;
    }
    fclose(f);
    buf[*len] = '\0';
    return buf;
}
