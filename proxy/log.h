/*
 * log.h - one-line structured logging to stderr.
 *
 * Each record is a single write(2) of one line, so records from different threads never
 * interleave: ts=2026-11-29T20:30:05.123Z level=warn src=reflector msg="watch closed" ...
 * Never call while holding a resource lock.
 */
#ifndef KWP_PROXY_LOG_H
#define KWP_PROXY_LOG_H

#include <stdint.h>

enum log_level { LOG_LEVEL_DEBUG = 0, LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_ERROR };

/* Records below <level> are dropped. Default LOG_LEVEL_INFO. */
void log_set_level(enum log_level level);

/* Parses "debug", "info", "warn", "error"; returns 0 or -EINVAL. */
int log_parse_level(const char *s, enum log_level *out);

/* <src> names the component ("reflector", "http", "sim"); <fmt> is the rest of the line,
 * conventionally key=value pairs ending with msg="...". */
void log_msg(enum log_level level, const char *src, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_debug(src, ...) log_msg(LOG_LEVEL_DEBUG, src, __VA_ARGS__)
#define log_info(src, ...) log_msg(LOG_LEVEL_INFO, src, __VA_ARGS__)
#define log_warn(src, ...) log_msg(LOG_LEVEL_WARN, src, __VA_ARGS__)
#define log_error(src, ...) log_msg(LOG_LEVEL_ERROR, src, __VA_ARGS__)

/* Rate limiting for storms: at most one record per <interval_ms>; the next record that gets
 * through reports how many were suppressed. The state is per call site. */
struct log_ratelimit {
    int64_t last_ms;
    uint64_t suppressed;
};

void log_ratelimited(struct log_ratelimit *rl, int64_t interval_ms, enum log_level level,
                     const char *src, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Monotonic and wall clocks in milliseconds. */
int64_t clock_mono_ms(void);
int64_t clock_wall_ms(void);

#endif
