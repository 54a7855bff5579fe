/* bug.c - BUG_ON's failure path and the abort-on-OOM allocators (see bug.h). */
#include "cache/bug.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bug_fail(const char *file, int line, const char *expr)
{
    fprintf(stderr, "BUG at %s:%d: %s\n", file, line, expr);
    abort();
}

static void *oom(size_t size)
{
    fprintf(stderr, "out of memory allocating %zu bytes\n", size);
    abort();
}

void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    return p ? p : oom(size);
}

void *xcalloc(size_t nmemb, size_t size)
{
    void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
    return p ? p : oom(nmemb * size);
}

void *xrealloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size ? size : 1);
    return p ? p : oom(size);
}

char *xstrdup(const char *s)
{
    char *p = strdup(s);
    return p ? p : oom(strlen(s) + 1);
}

char *xstrndup(const char *s, size_t n)
{
    char *p = strndup(s, n);
    return p ? p : oom(n + 1);
}
