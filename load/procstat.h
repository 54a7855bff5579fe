/*
 * procstat.h - CPU time and resident memory of a process, read from /proc/<pid>/stat, so a
 * load run can report what the server (and the load client itself) spent per second.
 * Pure reads; any thread.
 */
#ifndef KWP_LOAD_PROCSTAT_H
#define KWP_LOAD_PROCSTAT_H

#include <stdint.h>

struct procstat {
    double cpu_s;    /* user + system CPU seconds since the process started */
    uint64_t rss_kb; /* resident set size now */
};

/* Reads /proc/<pid>/stat. Returns 0, -ENOENT when the process is gone, -EPROTO when the file
 * cannot be parsed. */
int procstat_read(int pid, struct procstat *out);

/* Parses the text of a /proc/<pid>/stat file (exposed for tests). Returns 0 or -EPROTO. */
int procstat_parse(const char *text, struct procstat *out);

#endif
