/*
 * log.h - one-line structured logging to stderr.
 *
 * Each record is a single write(2) of one line, so records from different threads never
 * interleave: ts=2026-11-29T20:30:05.123Z level=warn src=reflector msg="watch closed" ...
 * With log_set_format(LOG_FORMAT_JSON) every record is one JSON object instead:
 * {"ts":"2026-11-29T20:30:05.123Z","level":"warn","src":"reflector","msg":"watch closed",...}
 * where the key=value pairs a call formatted become string members (a quoted value without
 * its quotes; text that is not key=value pairs becomes "msg"), escaped by gotext_json_quote.
 * Never call while holding a resource lock.
 */
#ifndef KWP_PROXY_LOG_H
#define KWP_PROXY_LOG_H

#include <stddef.h>
#include <stdint.h>

enum log_level { LOG_LEVEL_DEBUG = 0, LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_ERROR };

/* Records below <level> are dropped. Default LOG_LEVEL_INFO. */
void log_set_level(enum log_level level);

/* Parses "debug", "info", "warn", "error"; returns 0 or -EINVAL. */
int log_parse_level(const char *s, enum log_level *out);

enum log_format { LOG_FORMAT_TEXT = 0, LOG_FORMAT_JSON };

/* Text (logfmt, the default) or JSON lines. Any thread; takes effect for the next record. */
void log_set_format(enum log_format f);

/* Parses "text" or "json"; returns 0 or -EINVAL. */
int log_parse_format(const char *s, enum log_format *out);

/* <src> names the component ("reflector", "http", "sim"); <fmt> is the rest of the line,
 * conventionally key=value pairs ending with msg="...". */
void log_msg(enum log_level level, const char *src, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_debug(src, ...) log_msg(LOG_LEVEL_DEBUG, src, __VA_ARGS__)
#define log_info(src, ...) log_msg(LOG_LEVEL_INFO, src, __VA_ARGS__)
#define log_warn(src, ...) log_msg(LOG_LEVEL_WARN, src, __VA_ARGS__)
#define log_error(src, ...) log_msg(LOG_LEVEL_ERROR, src, __VA_ARGS__)

/* One named value of a log_fields record. */
struct log_field {
    const char *key;   /* a bare word: letters, digits, '_' */
    const char *value; /* any bytes; quoted as needed (text) or as a JSON string */
};

/* A record made of <n> fields then msg=<msg>: in text each value that is empty or holds a
 * blank, '"', '=' or a control is written as Go's %q would; in JSON each is a string. */
void log_fields(enum log_level level, const char *src, const struct log_field *f, size_t n,
                const char *msg);

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
