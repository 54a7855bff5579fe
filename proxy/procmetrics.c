/*
 * procmetrics.c - process metrics from /proc/self (see procmetrics.h). Reads each file whole into a
 * bounded stack buffer (/proc/stat line by line: its "intr" line alone can be long).
 */
#include "proxy/procmetrics.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int procmetrics_parse_stat(const char *text, struct procmetrics_stat *out)
{
    const char *p = strrchr(text, ')');
    unsigned long long v[21];
    char *end;

    /* after ") ": field 3 (state) is a letter, then fields 4.. are numbers */
    if (p == NULL || p[1] != ' ' || p[2] == '\0' || p[3] != ' ') {
        return -EINVAL;
    }
    p += 4;
    for (int i = 0; i < 21; i++) { /* fields 4..24 (25, rsslim, may not fit a long long) */
        errno = 0;
        /* a few fields (tty_nr, priority, nice) may be negative: read them as signed */
        long long s = strtoll(p, &end, 10);
        if (end == p || errno != 0 || (*end != ' ' && *end != '\n' && *end != '\0')) {
            return -EINVAL;
        }
        v[i] = (unsigned long long)s;
        p = end;
    }
    out->utime = v[14 - 4];
    out->stime = v[15 - 4];
    out->starttime = v[22 - 4];
    out->vsize = v[23 - 4];
    out->rss = v[24 - 4];
    return 0;
}

int procmetrics_parse_btime(const char *text, int64_t *btime)
{
    for (const char *p = text; p != NULL && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, "btime ", 6) == 0) {
            char *end;
            long long v;

            errno = 0;
            v = strtoll(p + 6, &end, 10);
            if (end == p + 6 || errno != 0 || (*end != '\n' && *end != '\0')) {
                return -EINVAL;
            }
            *btime = v;
            return 0;
        }
    }
    return -EINVAL;
}

int procmetrics_parse_max_fds(const char *text, uint64_t *soft)
{
    static const char key[] = "Max open files";
    const char *p = strstr(text, key);
    char *end;
    unsigned long long v;

    if (p == NULL) {
        return -EINVAL;
    }
    p += sizeof(key) - 1;
    while (*p == ' ') {
        p++;
    }
    if (strncmp(p, "unlimited", 9) == 0) {
        *soft = UINT64_MAX; /* procfs' parseUint("unlimited") */
        return 0;
    }
    errno = 0;
    v = strtoull(p, &end, 10);
    if (end == p || errno != 0 || *end != ' ' || *p == '-') {
        return -EINVAL;
    }
    *soft = v;
    return 0;
}

/* Reads <path> into buf (NUL-terminated, truncated at cap - 1). Returns 0 or -errno. */
static int read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t n = 0;
    int err;

    if (fd == -1) {
        return -errno;
    }
    while (n < cap - 1) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r == -1) {
            err = errno;
            if (err == EINTR) {
                continue;
            }
            close(fd);
            return -err;
        }
        if (r == 0) {
            break;
        }
        n += (size_t)r;
    }
    buf[n] = '\0';
    close(fd);
    return 0;
}

/* The boot time never changes: read once, then kept (a benign race may read it twice). */
static int boot_time(int64_t *out)
{
    static _Atomic int64_t cached;
    int64_t v = atomic_load(&cached);
    char line[256];
    FILE *f;
    int rc = -EINVAL;

    if (v != 0) {
        *out = v;
        return 0;
    }
    f = fopen("/proc/stat", "re");
    if (f == NULL) {
        return -errno;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "btime ", 6) == 0) {
            rc = procmetrics_parse_btime(line, &v);
            break;
        }
        /* skip the rest of a long line (intr, softirq) */
        while (strchr(line, '\n') == NULL && fgets(line, sizeof(line), f) != NULL) {
        }
    }
    fclose(f);
    if (rc == 0) {
        atomic_store(&cached, v);
        *out = v;
    }
    return rc;
}

static int count_fds(double *out)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    double n = 0;

    if (d == NULL) {
        return -errno;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.') {
            n++;
        }
    }
    closedir(d);
    *out = n; /* includes the directory's own fd, as procfs' FileDescriptorsLen does */
    return 0;
}

void procmetrics_read(struct procmetrics *out)
{
    char buf[4096];
    struct procmetrics_stat st;
    int64_t btime = 0;
    uint64_t max_fds = 0;
    long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    bool ok = hz > 0 && page > 0;

    memset(out, 0, sizeof(*out));
    if (ok && read_small("/proc/self/stat", buf, sizeof(buf)) == 0 &&
        procmetrics_parse_stat(buf, &st) == 0) {
        out->cpu_seconds = (double)(st.utime + st.stime) / (double)hz;
        out->virtual_bytes = (double)st.vsize;
        out->resident_bytes = (double)st.rss * (double)page;
        if (boot_time(&btime) == 0) {
            out->start_time_seconds = (double)btime + (double)st.starttime / (double)hz;
        } else {
            ok = false;
        }
    } else {
        ok = false;
    }
    if (count_fds(&out->open_fds) != 0) {
        ok = false;
    }
    if (read_small("/proc/self/limits", buf, sizeof(buf)) == 0 &&
        procmetrics_parse_max_fds(buf, &max_fds) == 0) {
        out->max_fds = (double)max_fds;
    } else {
        ok = false;
    }
    out->ok = ok;
}
