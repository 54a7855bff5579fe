/*
 * procstat.c - /proc/<pid>/stat reader (see procstat.h). The command name (field 2) may hold
 * spaces and parentheses, so fields are counted from the last ')'.
 */
#include "load/procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int procstat_parse(const char *text, struct procstat *out)
{
    const char *p = strrchr(text, ')');
    unsigned long long utime = 0, stime = 0;
    long long rss = 0;
    long ticks = sysconf(_SC_CLK_TCK);
    long page = sysconf(_SC_PAGESIZE);
    int field = 2;

    if (!p || ticks <= 0 || page <= 0) {
        return -EPROTO;
    }
    p++;
    /* fields 3.. follow, separated by single spaces: 14 utime, 15 stime, 24 rss (pages) */
    while (*p && field < 24) {
        char *end;
        while (*p == ' ') {
            p++;
        }
        field++;
        if (field == 14 || field == 15 || field == 24) {
            errno = 0;
            unsigned long long v = strtoull(p, &end, 10);
            if (end == p || errno != 0) {
                return -EPROTO;
            }
            if (field == 14) {
                utime = v;
            } else if (field == 15) {
                stime = v;
            } else {
                rss = (long long)v;
            }
            p = end;
        } else {
            p += strcspn(p, " ");
        }
    }
    if (field != 24) {
        return -EPROTO;
    }
    out->cpu_s = (double)(utime + stime) / (double)ticks;
    out->rss_kb = (uint64_t)rss * (uint64_t)page / 1024u;
    return 0;
}

int procstat_read(int pid, struct procstat *out)
{
    char path[64], text[1024];
    ssize_t n;
    int fd, err;

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        return -ENOENT;
    }
    n = read(fd, text, sizeof(text) - 1);
    err = errno;
    close(fd);
    if (n <= 0) {
        return n == 0 || err == ESRCH ? -ENOENT : -EPROTO;
    }
    text[n] = '\0';
    return procstat_parse(text, out);
}
