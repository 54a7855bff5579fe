/*
 * promtext.c - Prometheus text exposition helpers (see promtext.h). Pure formatting into a
 * caller's capped sbuf, plus the relaxed-atomic bucket counters of struct promtext_histo.
 */
#include "proxy/promtext.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/bug.h"
#include "cache/sbuf.h"

void promtext_escape_label(struct sbuf *b, const char *v)
{
    const char *run = v;

    for (const char *p = v;; p++) {
        const char *esc = NULL;

        switch (*p) {
        case '\\':
            esc = "\\\\";
            break;
        case '"':
            esc = "\\\"";
            break;
        case '\n':
            esc = "\\n";
            break;
        case '\0':
            sbuf_put(b, run, (size_t)(p - run));
            return;
        default:
            continue;
        }
        sbuf_put(b, run, (size_t)(p - run));
        sbuf_str(b, esc);
        run = p + 1;
    }
}

void promtext_family(struct sbuf *b, const char *name, const char *type, const char *help)
{
    sbuf_printf(b, "# HELP %s ", name);
    for (const char *p = help; *p; p++) {
        if (*p == '\\') {
            sbuf_str(b, "\\\\");
        } else if (*p == '\n') {
            sbuf_str(b, "\\n");
        } else {
            sbuf_putc(b, *p);
        }
    }
    sbuf_printf(b, "\n# TYPE %s %s\n", name, type);
}

void promtext_number(struct sbuf *b, double v)
{
    char tmp[40];

    if (isnan(v)) {
        sbuf_str(b, "NaN");
        return;
    }
    if (isinf(v)) {
        sbuf_str(b, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        sbuf_printf(b, "%.0f", v == 0 ? 0.0 : v); /* no "-0" */
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
        if (strtod(tmp, NULL) == v) {
            break;
        }
    }
    sbuf_str(b, tmp);
}

/* name<suffix>{labels[,le="..."]} */
static void series_head(struct sbuf *b, const char *name, const char *suffix,
                        const struct promtext_label *l, size_t n_l, const char *le)
{
    sbuf_str(b, name);
    sbuf_str(b, suffix);
    if (n_l == 0 && le == NULL) {
        sbuf_putc(b, ' ');
        return;
    }
    sbuf_putc(b, '{');
    for (size_t i = 0; i < n_l; i++) {
        sbuf_printf(b, "%s%s=\"", i > 0 ? "," : "", l[i].name);
        promtext_escape_label(b, l[i].value);
        sbuf_putc(b, '"');
    }
    if (le != NULL) {
        sbuf_printf(b, "%sle=\"%s\"", n_l > 0 ? "," : "", le);
    }
    sbuf_str(b, "} ");
}

void promtext_sample(struct sbuf *b, const char *name, const struct promtext_label *l, size_t n_l,
                     double v)
{
    series_head(b, name, "", l, n_l, NULL);
    promtext_number(b, v);
    sbuf_putc(b, '\n');
}

void promtext_histogram(struct sbuf *b, const char *name, const struct promtext_label *l,
                        size_t n_l, const double *bounds, size_t n, const uint64_t *counts,
                        double sum)
{
    uint64_t cum = 0;
    struct sbuf le;
    char le_buf[40];

    for (size_t i = 0; i <= n; i++) {
        cum += counts[i];
        if (i < n) {
            sbuf_init_fixed(&le, le_buf, sizeof(le_buf));
            promtext_number(&le, bounds[i]);
        }
        series_head(b, name, "_bucket", l, n_l, i < n ? le_buf : "+Inf");
        sbuf_printf(b, "%llu\n", (unsigned long long)cum);
    }
    series_head(b, name, "_sum", l, n_l, NULL);
    promtext_number(b, sum);
    sbuf_putc(b, '\n');
    series_head(b, name, "_count", l, n_l, NULL);
    sbuf_printf(b, "%llu\n", (unsigned long long)cum);
}

void promtext_histo_init(struct promtext_histo *h, const double *bounds, size_t n)
{
    h->bounds = bounds;
    h->n = n;
    h->counts = xcalloc(n + 1, sizeof(*h->counts));
    atomic_init(&h->sum_ns, 0);
}

void promtext_histo_fini(struct promtext_histo *h)
{
    free(h->counts);
    h->counts = NULL;
}

size_t promtext_bucket(const double *bounds, size_t n, double seconds)
{
    size_t i = 0;

    while (i < n && seconds > bounds[i]) {
        i++;
    }
    return i;
}

void promtext_histo_observe_ns(struct promtext_histo *h, int64_t ns)
{
    if (ns < 0) {
        ns = 0;
    }
    atomic_fetch_add_explicit(&h->counts[promtext_bucket(h->bounds, h->n, (double)ns / 1e9)], 1,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_ns, (unsigned long long)ns, memory_order_relaxed);
}

void promtext_histo_write(struct sbuf *b, const char *name, const struct promtext_label *l,
                          size_t n_l, const struct promtext_histo *h)
{
    uint64_t stack[64];
    uint64_t *c = h->n + 1 <= 64 ? stack : xmalloc((h->n + 1) * sizeof(*c));

    for (size_t i = 0; i <= h->n; i++) {
        c[i] = atomic_load_explicit(&h->counts[i], memory_order_relaxed);
    }
    promtext_histogram(b, name, l, n_l, h->bounds, h->n, c,
                       (double)atomic_load_explicit(&h->sum_ns, memory_order_relaxed) / 1e9);
    if (c != stack) {
        free(c);
    }
}
