/*
 * filebuf.h - a whole small file read into memory, with a cap: the simulator's flag files
 * (--token-auth-file, --authorization-rules) are read once at start through here.
 * Any thread; no state. libc only.
 */
#ifndef KWP_SIM_FILEBUF_H
#define KWP_SIM_FILEBUF_H

#include <stddef.h>

/*
 * Reads file <path>: returns a new NUL-terminated buffer (the caller frees it) with its length
 * in *len, or NULL with "PATH: reason" in <err> when it cannot be opened or read. At most
 * max + 1 bytes are read, so a file larger than <max> comes back with *len == max + 1 for the
 * caller's own "too large" error.
 */
char *filebuf_read(const char *path, size_t max, size_t *len, char *err, size_t err_len);

#endif
