/* config.c - command-line and environment options (see config.h). */
#include "proxy/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/bug.h"
#include "cache/gotext.h"

/* 2^63 as a double: a millisecond count must stay below it to convert to int64_t. */
#define CONFIG_MS_LIMIT 9223372036854775808.0

/* True when <ms> converts to an int64_t count: finite, not negative, below 2^63 (NaN fails). */
static bool ms_fits(double ms)
{
    return ms >= 0 && ms < CONFIG_MS_LIMIT;
}

int config_parse_duration(const char *s, int64_t *ms)
{
    double total = 0;
    const char *p = s;
    char *end;

    if (!s || !*s) {
        return -EINVAL;
    }
    errno = 0;
    total = strtod(p, &end);
    if (end != p && *end == '\0') { /* bare number: seconds */
        if (errno != 0 || !ms_fits(total * 1000.0)) {
            return -EINVAL;
        }
        *ms = (int64_t)(total * 1000.0);
        return 0;
    }
    total = 0;
    while (*p) {
        double v;
        double unit;
        if (!isdigit((unsigned char)*p) && *p != '.') {
            return -EINVAL;
        }
        v = strtod(p, &end);
        if (end == p) {
            return -EINVAL;
        }
        p = end;
        if (strncmp(p, "ms", 2) == 0) {
            unit = 1;
            p += 2;
        } else if (*p == 's') {
            unit = 1000;
            p++;
        } else if (*p == 'm') {
            unit = 60000;
            p++;
        } else if (*p == 'h') {
            unit = 3600000;
            p++;
        } else {
            return -EINVAL;
        }
        total += v * unit;
    }
    if (!ms_fits(total)) {
        return -EINVAL;
    }
    *ms = (int64_t)total;
    return 0;
}

static int parse_size(const char *s, int64_t *out)
{
    char *end;
    long long v;
    int64_t mul = 1;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (end == s || errno != 0 || v < 0) {
        return -EINVAL;
    }
    if (strcmp(end, "Ki") == 0 || strcmp(end, "K") == 0) {
        mul = 1024;
    } else if (strcmp(end, "Mi") == 0 || strcmp(end, "M") == 0) {
        mul = 1024 * 1024;
    } else if (strcmp(end, "Gi") == 0 || strcmp(end, "G") == 0) {
        mul = 1024 * 1024 * 1024;
    } else if (*end != '\0') {
        return -EINVAL;
    }
    if (v > INT64_MAX / mul) {
        return -EINVAL;
    }
    *out = v * mul;
    return 0;
}

static void env_name(const char *name, char *out, size_t cap)
{
    size_t o = (size_t)snprintf(out, cap, "KWP_");
    for (const char *p = name; *p && o + 1 < cap; p++) {
        out[o++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
    }
    out[o] = '\0';
}

static void list_add(struct config_list *l, const char *v)
{
    const char *p = v;

    while (*p) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (n > 0) {
            l->items = xrealloc(l->items, sizeof(char *) * (l->len + 1));
            l->items[l->len++] = xstrndup(p, n);
        }
        if (!c) {
            break;
        }
        p = c + 1;
    }
}

void config_list_free(struct config_list *l)
{
    for (size_t i = 0; i < l->len; i++) {
        free(l->items[i]);
    }
    free(l->items);
    l->items = NULL;
    l->len = 0;
}

static int set_value(const struct config_opt *o, const char *v, const char *from)
{
    int64_t x;
    char *end;
    bool b;

    switch (o->type) {
    case CFG_STR:
        *(const char **)o->dst = v;
        return 0;
    case CFG_LIST:
        list_add(o->dst, v);
        return 0;
    case CFG_BOOL:
        if (gotext_parse_bool(v, &b) != 0) {
            fprintf(stderr, "%s: invalid boolean %s=%s\n", from, o->name, v);
            return -EINVAL;
        }
        *(bool *)o->dst = b;
        return 0;
    case CFG_INT:
        errno = 0;
        x = strtoll(v, &end, 10);
        if (end == v || *end != '\0' || errno != 0) {
            fprintf(stderr, "%s: invalid integer %s=%s\n", from, o->name, v);
            return -EINVAL;
        }
        break;
    case CFG_SIZE:
        if (parse_size(v, &x) != 0) {
            fprintf(stderr, "%s: invalid size %s=%s (use e.g. 4096, 64Ki, 8Mi)\n", from, o->name,
                    v);
            return -EINVAL;
        }
        break;
    case CFG_DURATION:
        if (config_parse_duration(v, &x) != 0) {
            fprintf(stderr, "%s: invalid duration %s=%s (use e.g. 250ms, 3s, 5m)\n", from, o->name,
                    v);
            return -EINVAL;
        }
        break;
    default:
        return -EINVAL;
    }
    if (o->min != o->max && (x < o->min || x > o->max)) {
        fprintf(stderr, "%s: %s=%s out of range [%lld, %lld]\n", from, o->name, v,
                (long long)o->min, (long long)o->max);
        return -EINVAL;
    }
    *(int64_t *)o->dst = x;
    return 0;
}

static void usage_print(const struct config_opt *opts, size_t n, const char *usage,
                        const char *description)
{
    char env[96];

    printf("usage: %s\n\n%s\n\nflags (each has an environment twin):\n", usage, description);
    for (size_t i = 0; i < n; i++) {
        const char *arg = "";
        switch (opts[i].type) {
        case CFG_STR:
        case CFG_LIST:
            arg = " STR";
            break;
        case CFG_INT:
            arg = " N";
            break;
        case CFG_SIZE:
            arg = " BYTES";
            break;
        case CFG_DURATION:
            arg = " DURATION";
            break;
        case CFG_BOOL:
            arg = "[=BOOL]";
            break;
        }
        env_name(opts[i].name, env, sizeof(env));
        printf("  --%s%s\n      %s  [%s]\n", opts[i].name, arg, opts[i].help, env);
    }
}

int config_parse(const struct config_opt *opts, size_t n, int argc, char **argv, const char *usage,
                 const char *description)
{
    char env[96];

    for (size_t i = 0; i < n; i++) {
        const char *v;
        env_name(opts[i].name, env, sizeof(env));
        v = getenv(env);
        if (v && *v && set_value(&opts[i], v, env) != 0) {
            return -EINVAL;
        }
    }
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        const char *eq;
        size_t len;
        const struct config_opt *o = NULL;

        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage_print(opts, n, usage, description);
            return 1;
        }
        if (strncmp(arg, "--", 2) != 0) {
            fprintf(stderr, "%s: unexpected argument %s (see --help)\n", argv[0], arg);
            return -EINVAL;
        }
        arg += 2;
        eq = strchr(arg, '=');
        len = eq ? (size_t)(eq - arg) : strlen(arg);
        for (size_t i = 0; i < n; i++) {
            if (strlen(opts[i].name) == len && strncmp(opts[i].name, arg, len) == 0) {
                o = &opts[i];
                break;
            }
        }
        if (!o) {
            fprintf(stderr, "%s: unknown flag --%.*s (see --help)\n", argv[0], (int)len, arg);
            return -EINVAL;
        }
        if (eq) {
            if (set_value(o, eq + 1, argv[0]) != 0) {
                return -EINVAL;
            }
        } else if (o->type == CFG_BOOL) {
            *(bool *)o->dst = true;
        } else if (a + 1 < argc) {
            if (set_value(o, argv[++a], argv[0]) != 0) {
                return -EINVAL;
            }
        } else {
            fprintf(stderr, "%s: flag --%s needs a value\n", argv[0], o->name);
            return -EINVAL;
        }
    }
    return 0;
}
