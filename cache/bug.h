/*
 * bug.h - always-on invariant checks and the abort-on-OOM allocators.
 *
 * BUG_ON(cond) is compiled into every build: it guards states that would corrupt memory
 * (refcount underflow, a cursor outside the ring) and aborts with file and line.
 * xmalloc/xcalloc/xrealloc/xstrdup never return NULL: they print one line and abort.
 * Unbounded growth is prevented by the caps in struct config, not by NULL checks.
 */
#ifndef KWP_CACHE_BUG_H
#define KWP_CACHE_BUG_H

#include <stddef.h>

#define BUG_ON(cond)                                                                               \
    do {                                                                                           \
        if (__builtin_expect(!!(cond), 0)) {                                                       \
            bug_fail(__FILE__, __LINE__, #cond);                                                   \
        }                                                                                          \
    } while (0)

/* Prints "BUG at <file>:<line>: <expr>" to stderr and aborts. */
__attribute__((noreturn)) void bug_fail(const char *file, int line, const char *expr);

/* Allocators that abort on failure (redis zmalloc style). Any thread. */
void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *ptr, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

#endif
