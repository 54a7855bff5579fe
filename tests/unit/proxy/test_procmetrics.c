/*
 * test_procmetrics.c - proxy/procmetrics: the process metrics as client_golang's process
 * collector reads them, black-box through procmetrics.h: the parsers on captured /proc text
 * (a command name holding blanks and parentheses, rsslim past a long long, "unlimited"), and
 * a live reading of this test process checked against what the test itself can measure
 * (getrlimit, the fds it opens, the clock).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "proxy/procmetrics.h"

/* A /proc/<pid>/stat line of a process named "kw p) (x" (fields 14, 15: 250, 38; 22: 145209;
 * 23: 667987968; 24: 3037; 25 is rsslim = 2^64-1). */
static const char stat_line[] =
    "10879 (kw p) (x) S 10877 10877 7933 0 -1 4194304 945 0 0 0 250 38 0 0 20 0 14 0 145209 "
    "667987968 3037 18446744073709551615 94783310856192 94783311219845 140721905162400 0 0 0 0 "
    "4096 0 0 0 0 17 0 0 0 0 0 0\n";

Test(procmetrics, stat_fields_are_counted_from_the_last_parenthesis)
{
    struct procmetrics_stat st;

    cr_assert_eq(procmetrics_parse_stat(stat_line, &st), 0);
    cr_assert_eq(st.utime, 250);
    cr_assert_eq(st.stime, 38);
    cr_assert_eq(st.starttime, 145209);
    cr_assert_eq(st.vsize, 667987968);
    cr_assert_eq(st.rss, 3037);
}

Test(procmetrics, malformed_stat_text_is_refused)
{
    struct procmetrics_stat st;

    cr_assert_eq(procmetrics_parse_stat("", &st), -EINVAL);
    cr_assert_eq(procmetrics_parse_stat("1 (kwp S 1 2 3", &st), -EINVAL);
    cr_assert_eq(procmetrics_parse_stat("1 (kwp) S 1 2 3\n", &st), -EINVAL); /* too short */
    cr_assert_eq(procmetrics_parse_stat("1 (kwp) S 1 2 x 4 5 6 7 8 9 10 11 12 13 14 15 16 17 "
                                        "18 19 20 21 22 23 24\n",
                                        &st),
                 -EINVAL);
}

Test(procmetrics, btime_is_found_after_long_lines)
{
    char text[20000] = "cpu  1 2 3\nintr 1";
    int64_t bt = 0;

    for (size_t n = strlen(text); n < sizeof(text) - 64; n += 2) {
        text[n] = ' ';
        text[n + 1] = '7';
        text[n + 2] = '\0';
    }
    snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s",
             "\nctxt 5\nbtime 1796189757\nprocesses 9\n");
    cr_assert_eq(procmetrics_parse_btime(text, &bt), 0);
    cr_assert_eq(bt, 1796189757);
    cr_assert_eq(procmetrics_parse_btime("cpu 1\nctxt 2\n", &bt), -EINVAL);
    cr_assert_eq(procmetrics_parse_btime("btime x\n", &bt), -EINVAL);
}

Test(procmetrics, max_fds_is_the_soft_limit)
{
    static const char limits[] =
        "Limit                     Soft Limit           Hard Limit           Units     \n"
        "Max processes             95037                95037                processes \n"
        "Max open files            1024                 524288               files     \n";
    static const char unlimited[] =
        "Max open files            unlimited            unlimited            files     \n";
    uint64_t soft = 0;

    cr_assert_eq(procmetrics_parse_max_fds(limits, &soft), 0);
    cr_assert_eq(soft, 1024);
    cr_assert_eq(procmetrics_parse_max_fds(unlimited, &soft), 0);
    cr_assert_eq(soft, UINT64_MAX);
    cr_assert_eq(procmetrics_parse_max_fds("Max processes 5 5 processes\n", &soft), -EINVAL);
}

Test(procmetrics, a_live_reading_matches_what_the_process_can_see)
{
    struct procmetrics before, after;
    struct rlimit rl;
    int fds[8];

    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    procmetrics_read(&before);
    cr_assert(before.ok);
    for (int i = 0; i < 8; i++) {
        fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        cr_assert_geq(fds[i], 0);
    }
    procmetrics_read(&after);
    for (int i = 0; i < 8; i++) {
        close(fds[i]);
    }
    cr_assert(after.ok);
    cr_assert_eq(after.open_fds, before.open_fds + 8);
    cr_assert_eq(after.max_fds, (double)rl.rlim_cur);
    cr_assert_gt(after.resident_bytes, 0);
    cr_assert_geq(after.virtual_bytes, after.resident_bytes);
    cr_assert_geq(after.cpu_seconds, before.cpu_seconds);
    /* started within the last 10 minutes, not in the future */
    cr_assert_leq(after.start_time_seconds, (double)time(NULL) + 1);
    cr_assert_geq(after.start_time_seconds, (double)time(NULL) - 600);
}
