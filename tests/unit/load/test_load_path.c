/*
 * test_load_path.c - the small pure helpers of `kwp load`: the collection path built from
 * --resource/--namespace (load.h) and the /proc/<pid>/stat parser (procstat.h).
 */
#include <criterion/criterion.h>
#include <errno.h>
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
