/*
 * sbuf.h - the one buffer kwp builds text in: always NUL-terminated, always capped (curl's
 * dynbuf with its `toobig`, plus snprintf). Two kinds of storage behind one API:
 *  - heap: doubles from 256 bytes up to a cap on its length (sbuf_init; a zero-initialised
 *    struct is a heap sbuf capped at SBUF_MAX_DEFAULT);
 *  - fixed: the caller's array, never grown or freed (sbuf_init_fixed), for texts cut to a
 *    known size (a Status message, an error text, a request head).
 * An append that does not fit stores the prefix that does and sets a sticky error (-ENOBUFS):
 * nothing more is stored until sbuf_clear, so the bytes are always a prefix of what was asked
 * for; sbuf_need counts every byte asked for (snprintf's return value).
 *   struct sbuf sb = {0}; sbuf_str(&sb, "{"); ... use sb.p, sb.len ...; sbuf_free(&sb);
 * One owner, one thread at a time; no locks. libc only.
 */
#ifndef KWP_CACHE_SBUF_H
#define KWP_CACHE_SBUF_H

#include <stdbool.h>
#include <stddef.h>

/* The cap of a zero-initialised (or sbuf_init(sb, 0)) heap sbuf: no text kwp builds is larger
 * than the largest upstream document it accepts (KUBE_JSON_MAX_INPUT). */
#define SBUF_MAX_DEFAULT ((size_t)1 << 30)

struct sbuf {
    /* public, read-only */
    char *p;    /* the bytes, NUL-terminated; heap: NULL until the first append */
    size_t len; /* bytes stored before the NUL */
    /* private */
    size_t cap;  /* bytes of storage at p */
    size_t max;  /* most bytes len may reach; heap: 0 = SBUF_MAX_DEFAULT */
    size_t need; /* bytes asked for since the last clear, stored or not */
    int err;     /* 0, or -ENOBUFS once an append did not fit (sticky) */
    bool fixed;  /* p is the caller's storage */
};

/* Makes <sb> an empty heap buffer whose length may reach <max> bytes (0 = SBUF_MAX_DEFAULT).
 * Allocates nothing yet. */
void sbuf_init(struct sbuf *sb, size_t max);

/* Makes <sb> write into buf[0..cap): at most cap - 1 bytes plus the NUL, written at once
 * (buf[0] = '\0' when cap > 0). <buf> may be NULL with cap 0: sbuf_need then only counts. */
void sbuf_init_fixed(struct sbuf *sb, char *buf, size_t cap);

/* Appends s[0..n) (<s> may be NULL when n is 0). A heap sbuf has storage (p != NULL) after
 * any append, even an empty one. Aborts only on OOM (xrealloc). */
void sbuf_put(struct sbuf *sb, const char *s, size_t n);
void sbuf_str(struct sbuf *sb, const char *s);
void sbuf_putc(struct sbuf *sb, char c);

/* Appends the formatted text, all of it (no length limit of its own). */
void sbuf_printf(struct sbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 0, or -ENOBUFS when some appended byte was not stored (the cap or the fixed storage was
 * reached) since the last sbuf_clear. */
int sbuf_error(const struct sbuf *sb);

/* Bytes appended since the last sbuf_clear, stored or not: what the whole text needs. */
size_t sbuf_need(const struct sbuf *sb);

/* Empties <sb> and forgets its error and count; a heap sbuf keeps its storage unless more
 * than <keep> bytes are allocated (then it is freed). The cap stays. */
void sbuf_clear(struct sbuf *sb, size_t keep);

/* Hands over a heap sbuf's bytes ("" when nothing was appended): the caller frees them with
 * free(). <sb> is left empty, with its cap. Must not be called on fixed storage. */
char *sbuf_take(struct sbuf *sb);

/* Frees a heap sbuf's bytes (fixed storage is the caller's) and zeroes <sb>. */
void sbuf_free(struct sbuf *sb);

#endif
