/*
 * test_load_path.c - the small pure helpers of `kwp load`: the collection path built from
 * --resource/--namespace and the --source-ips expansion (load.h), and the /proc/<pid>/stat
 * parser (procstat.h).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include "load/load.h"
#include "load/procstat.h"

#define T_TIMEOUT 30

static void expect_path(const char *prefix, const char *res, const char *ns, const char *want)
{
    char out[512];
    int rc = load_resource_path(prefix, res, ns, out, sizeof(out));

    cr_assert_eq(rc, 0, "%s rejected", res);
    cr_assert_str_eq(out, want);
}

Test(load_path, core_and_group_resources, .timeout = T_TIMEOUT)
{
    expect_path("", "pods", NULL, "/api/v1/pods");
    expect_path("", "pods", "", "/api/v1/pods");
    expect_path("", "v1/pods", "default", "/api/v1/namespaces/default/pods");
    expect_path("", "apps/v1/deployments", NULL, "/apis/apps/v1/deployments");
    expect_path("", "example.com/v1alpha1/widgets", "ns-1",
                "/apis/example.com/v1alpha1/namespaces/ns-1/widgets");
    expect_path("/k8s", "configmaps", "kube-system",
                "/k8s/api/v1/namespaces/kube-system/configmaps");
}

Test(load_path, bad_resources_and_namespaces, .timeout = T_TIMEOUT)
{
    static const char *const bad[] = {
        "", "/pods", "pods/", "a/b/c/d", "po ds", "pods?x=1", "apps//deployments"};
    char out[512];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(load_resource_path("", bad[i], NULL, out, sizeof(out)), -EINVAL, "accepted %s",
                     bad[i]);
    }
    cr_assert_eq(load_resource_path("", "pods", "a/b", out, sizeof(out)), -EINVAL);
    cr_assert_eq(load_resource_path("", "pods", "x", out, 8), -EINVAL);
    cr_assert_eq(load_resource_path("", NULL, NULL, out, sizeof(out)), -EINVAL);
}

Test(procstat, parses_a_stat_line_with_a_hostile_name, .timeout = T_TIMEOUT)
{
    /* utime 250 and stime 50 ticks, rss 1000 pages; the name holds ") 1 2 (" */
    const char *line = "4242 (kwp ) 1 2 (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 "
                       "0 3 0 12345 104857600 1000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 "
                       "0 17 1 0 0 0 0 0\n";
    struct procstat ps;
    long ticks = sysconf(_SC_CLK_TCK);
    long page = sysconf(_SC_PAGESIZE);

    cr_assert_eq(procstat_parse(line, &ps), 0);
    cr_assert_float_eq(ps.cpu_s, 300.0 / (double)ticks, 1e-9);
    cr_assert_eq(ps.rss_kb, 1000u * (uint64_t)page / 1024u);
    cr_assert_eq(procstat_parse("4242 (x) S 1 2", &ps), -EPROTO);
    cr_assert_eq(procstat_parse("no paren", &ps), -EPROTO);
}

Test(procstat, reads_this_process, .timeout = T_TIMEOUT)
{
    struct procstat ps;

    cr_assert_eq(procstat_read((int)getpid(), &ps), 0);
    cr_assert_gt(ps.rss_kb, 0);
    cr_assert_geq(ps.cpu_s, 0);
}

/* ---- --source-ips ------------------------------------------------------------------------ */

static struct sockaddr_storage target4(const char *ip)
{
    struct sockaddr_storage ss;
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

    memset(&ss, 0, sizeof(ss));
    sin->sin_family = AF_INET;
    sin->sin_port = htons(8080);
    cr_assert_eq(inet_pton(AF_INET, ip, &sin->sin_addr), 1);
    return ss;
}

/* Expands <items> against a target and returns the count; addresses as text in <out>. */
static int expand(const char *target, const char *const *items, size_t n, uint64_t conns,
                  char out[][INET6_ADDRSTRLEN], char *err, size_t err_len)
{
    struct sockaddr_storage t = target4(target), got[LOAD_SOURCES_MAX];
    int k = load_sources_parse(items, n, &t, conns, 1000, got, LOAD_SOURCES_MAX, err, err_len);

    for (int i = 0; i < k; i++) {
        const void *a = got[i].ss_family == AF_INET6
                            ? (const void *)&((struct sockaddr_in6 *)&got[i])->sin6_addr
                            : (const void *)&((struct sockaddr_in *)&got[i])->sin_addr;
        cr_assert_eq(((struct sockaddr_in *)&got[i])->sin_port, 0, "source ports are 0");
        inet_ntop(got[i].ss_family, a, out[i], INET6_ADDRSTRLEN);
    }
    return k;
}

Test(load_sources, lists_and_ranges, .timeout = T_TIMEOUT)
{
    static char out[LOAD_SOURCES_MAX][INET6_ADDRSTRLEN];
    char err[256];
    const char *items[] = {"127.0.0.9", "127.0.0.1-127.0.0.3", "10.0.0.255-10.0.1.0"};

    cr_assert_eq(expand("127.0.0.1", items, 3, 10, out, err, sizeof(err)), 6, "%s", err);
    cr_assert_str_eq(out[0], "127.0.0.9");
    cr_assert_str_eq(out[1], "127.0.0.1");
    cr_assert_str_eq(out[3], "127.0.0.3");
    cr_assert_str_eq(out[4], "10.0.0.255", "a range crosses an octet");
    cr_assert_str_eq(out[5], "10.0.1.0");
    items[0] = "127.0.0.7-127.0.0.7";
    cr_assert_eq(expand("127.0.0.1", items, 1, 10, out, err, sizeof(err)), 1);
    cr_assert_str_eq(out[0], "127.0.0.7");
}

Test(load_sources, counts_and_auto_on_loopback, .timeout = T_TIMEOUT)
{
    static char out[LOAD_SOURCES_MAX][INET6_ADDRSTRLEN];
    char err[256];
    const char *count[] = {"4"}, *aut[] = {"auto"};

    cr_assert_eq(expand("127.0.0.1", count, 1, 1, out, err, sizeof(err)), 4, "%s", err);
    cr_assert_str_eq(out[0], "127.0.0.1");
    cr_assert_str_eq(out[3], "127.0.0.4");
    /* auto: 1000 connections per address (the test's share), so 2500 need 3 */
    cr_assert_eq(expand("127.0.0.1", aut, 1, 2500, out, err, sizeof(err)), 3, "%s", err);
    cr_assert_str_eq(out[2], "127.0.0.3");
    cr_assert_eq(expand("127.0.0.1", aut, 1, 10, out, err, sizeof(err)), 1);
    cr_assert_eq(expand("127.0.0.1", aut, 1, 0, out, err, sizeof(err)), 1, "at least one");
    /* any 127.x target is loopback */
    cr_assert_eq(expand("127.1.2.3", aut, 1, 1500, out, err, sizeof(err)), 2);
}

Test(load_sources, bad_values_say_why, .timeout = T_TIMEOUT)
{
    static char out[LOAD_SOURCES_MAX][INET6_ADDRSTRLEN];
    static const struct {
        const char *target, *item, *why;
    } bad[] = {
        {"127.0.0.1", "127.0.0.9-127.0.0.1", "bad range"},
        {"127.0.0.1", "127.0.0.1-", "bad range"},
        {"127.0.0.1", "localhost", "not an address"},
        {"127.0.0.1", "127.0.0.1-127.0.2.0", "more than 256"},
        {"127.0.0.1", "0", "a count from 1"},
        {"127.0.0.1", "257", "a count from 1"},
        {"127.0.0.1", "::1", "is IPv6, the target is not"},
        {"10.1.2.3", "auto", "needs an IPv4 loopback target"},
        {"10.1.2.3", "2", "needs an IPv4 loopback target"},
    };
    char err[256];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *items[] = {bad[i].item};
        err[0] = '\0';
        cr_assert_eq(expand(bad[i].target, items, 1, 10, out, err, sizeof(err)), -EINVAL,
                     "accepted %s", bad[i].item);
        cr_assert(strstr(err, bad[i].why) != NULL, "%s: said \"%s\", want \"%s\"", bad[i].item, err,
                  bad[i].why);
    }
    {
        /* a list may not mix in a count or auto: they are whole values */
        const char *items[] = {"127.0.0.1", "auto"};
        cr_assert_eq(expand("127.0.0.1", items, 2, 10, out, err, sizeof(err)), -EINVAL);
    }
}
