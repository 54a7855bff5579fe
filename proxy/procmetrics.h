/*
 * procmetrics.h - the process metrics every Prometheus client library exports, read from
 * /proc/self as client_golang's process collector (prometheus/procfs) reads them:
 *
 *   process_cpu_seconds_total      (utime + stime) / USER_HZ           /proc/self/stat 14, 15
 *   process_virtual_memory_bytes   vsize                                /proc/self/stat 23
 *   process_resident_memory_bytes  rss pages * page size                /proc/self/stat 24
 *   process_start_time_seconds     btime + starttime / USER_HZ          /proc/stat, stat 22
 *   process_open_fds               entries of /proc/self/fd
 *   process_max_fds                soft "Max open files"                /proc/self/limits
 *
 * The parsers are pure (any thread, tested on captured text); procmetrics_read does the I/O.
 */
#ifndef KWP_PROXY_PROCMETRICS_H
#define KWP_PROXY_PROCMETRICS_H

#include <stdbool.h>
#include <stdint.h>

/* The fields of /proc/<pid>/stat used here, in their own units. */
struct procmetrics_stat {
    uint64_t utime, stime; /* clock ticks */
    uint64_t starttime;    /* clock ticks after boot */
    uint64_t vsize;        /* bytes */
    uint64_t rss;          /* pages */
};

/* Parses the text of /proc/<pid>/stat (the command name may hold blanks and parentheses: the
 * fields are counted from the last ')'). Returns 0 or -EINVAL. */
int procmetrics_parse_stat(const char *text, struct procmetrics_stat *out);

/* Finds the "btime N" line in the text of /proc/stat: 0 with *btime (seconds since the epoch),
 * or -EINVAL. */
int procmetrics_parse_btime(const char *text, int64_t *btime);

/* The soft limit of the "Max open files" line of /proc/<pid>/limits: 0 with *soft
 * (UINT64_MAX for "unlimited", as procfs reads it), or -EINVAL. */
int procmetrics_parse_max_fds(const char *text, uint64_t *soft);

/* One reading, in the units the metrics are exported in. */
struct procmetrics {
    double cpu_seconds;
    double resident_bytes;
    double virtual_bytes;
    double start_time_seconds; /* since the epoch */
    double open_fds;
    double max_fds;
    bool ok; /* every file could be read and parsed */
};

/* Reads the current process's figures. Any thread; opens and closes a few /proc files. */
void procmetrics_read(struct procmetrics *out);

#endif
