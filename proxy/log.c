/* log.c - one-line structured logging (see log.h). Thread-safe: one write(2) per record. */
#include "proxy/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Atomic int min_level = LOG_LEVEL_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_set_level(enum log_level level)
{
    atomic_store(&min_level, (int)level);
}

int log_parse_level(const char *s, enum log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -EINVAL;
}

int64_t clock_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t clock_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void vlog(enum log_level level, const char *src, uint64_t suppressed, const char *fmt,
                 va_list ap) __attribute__((format(printf, 4, 0)));

static void vlog(enum log_level level, const char *src, uint64_t suppressed, const char *fmt,
                 va_list ap)
{
    char line[2048];
    struct timespec ts;
    struct tm tm;
    size_t n;
    int w;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = strftime(line, sizeof(line), "ts=%Y-%m-%dT%H:%M:%S", &tm);
    w = snprintf(line + n, sizeof(line) - n, ".%03ldZ level=%s src=%s ", ts.tv_nsec / 1000000,
                 level_names[level], src);
    if (w > 0) {
        n += (size_t)w;
    }
    if (n < sizeof(line)) {
        w = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
        if (w > 0) {
            n += (size_t)w;
        }
    }
    if (suppressed > 0 && n < sizeof(line)) {
        w = snprintf(line + n, sizeof(line) - n, " suppressed=%llu",
                     (unsigned long long)suppressed);
        if (w > 0) {
            n += (size_t)w;
        }
    }
    if (n >= sizeof(line) - 1) {
        n = sizeof(line) - 2; /* truncated: keep one line */
    }
    line[n++] = '\n';
    (void)!write(STDERR_FILENO, line, n);
}

void log_msg(enum log_level level, const char *src, const char *fmt, ...)
{
    va_list ap;

    if ((int)level < atomic_load(&min_level)) {
        return;
    }
    va_start(ap, fmt);
    vlog(level, src, 0, fmt, ap);
    va_end(ap);
}

void log_ratelimited(struct log_ratelimit *rl, int64_t interval_ms, enum log_level level,
                     const char *src, const char *fmt, ...)
{
    int64_t now = clock_mono_ms();
    uint64_t suppressed;
    va_list ap;

    if ((int)level < atomic_load(&min_level)) {
        return;
    }
    /* Benign race: two threads may both log once; counts stay approximate by design. */
    if (rl->last_ms != 0 && now - rl->last_ms < interval_ms) {
        rl->suppressed++;
        return;
    }
    suppressed = rl->suppressed;
    rl->suppressed = 0;
    rl->last_ms = now;
    va_start(ap, fmt);
    vlog(level, src, suppressed, fmt, ap);
    va_end(ap);
}
