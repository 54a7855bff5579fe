/*
 * config.h - table-driven command-line options with KWP_* environment twins.
 *
 * Every option --some-flag has the twin KWP_SOME_FLAG; the environment is applied first,
 * flags override it. Values: strings, integers (with range), sizes (1024, 64Ki, 1Mi),
 * durations in milliseconds (Go syntax: 250ms, 3s, 5m, 1h; a bare number is seconds),
 * booleans (--flag, --flag=false; Go ParseBool), and repeatable string lists.
 */
#ifndef KWP_PROXY_CONFIG_H
#define KWP_PROXY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum config_type { CFG_STR = 0, CFG_INT, CFG_SIZE, CFG_DURATION, CFG_BOOL, CFG_LIST };

/* A repeatable option's values (also split on commas). */
struct config_list {
    char **items;
    size_t len;
};

struct config_opt {
    const char *name; /* without the leading "--" */
    enum config_type type;
    void *dst;        /* const char **, int64_t *, int64_t * (ms), bool *, struct config_list * */
    int64_t min, max; /* for CFG_INT / CFG_SIZE / CFG_DURATION (ignored when min == max) */
    const char *help;
};

/*
 * Parses argv (argv[0] is the subcommand name) against <opts>. Prints usage and returns 1 for
 * --help, returns 0 on success, or -EINVAL after printing a one-line error to stderr.
 * <usage> is the first help line, e.g. "kwp sim [flags]".
 */
int config_parse(const struct config_opt *opts, size_t n, int argc, char **argv, const char *usage,
                 const char *description);

/* Parses a Go-style duration ("250ms", "1h30m", ".5s"; a bare number is seconds) into
 * milliseconds. Returns 0, or -EINVAL (*ms untouched) for anything else, a negative value, or
 * one whose milliseconds do not fit an int64_t (inf, nan, 1e400 included). Any thread. */
int config_parse_duration(const char *s, int64_t *ms);

/* Frees the strings a CFG_LIST collected. */
void config_list_free(struct config_list *l);

#endif
