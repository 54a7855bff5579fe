/*
 * demo.c - `kwp demo` and `kwp proxy` (see demo.h): the proxy's flags and lifecycle are
 * proxy_main's; this file adds the embedded simulator (started with the proxy's bookmark and
 * watch-lag settings), demo's --objects/--churn and its banner.
 *
 * The struct demo lives on the command's stack for the whole run; the simulator it starts
 * is stopped by proxy_main after the proxy stopped. Includes proxy/ and sim/ headers.
 */
#include "cmd/demo.h"

#include <stdint.h>
#include <stdio.h>

#include "proxy/config.h"
#include "proxy/proxy.h"
#include "sim/sim.h"

#define DEMO_OBJECTS_DEFAULT 50
#define DEMO_CHURN_DEFAULT 2

struct demo {
    int64_t objects; /* pods the simulator starts with */
    int64_t churn;   /* simulator pod writes per second */
    struct sim *sim; /* NULL until started */
};

static const char *demo_sim_start(void *ctx, int64_t bookmark_interval_ms, int64_t watch_max_lag_ms,
                                  char *err, size_t err_len)
{
    struct demo *d = ctx;
    struct sim_opts so;

    sim_opts_defaults(&so);
    so.objects = d->objects;
    so.churn = d->churn;
    so.bookmark_interval_ms = bookmark_interval_ms;
    so.watch_max_lag_ms = watch_max_lag_ms;
    d->sim = sim_start(&so, err, err_len);
    return d->sim ? sim_url(d->sim) : NULL;
}

static void demo_sim_stop(void *ctx)
{
    struct demo *d = ctx;

    sim_stop(d->sim);
    d->sim = NULL;
}

static void demo_banner(void *ctx, const char *url)
{
    struct demo *d = ctx;

    printf("upstream (embedded simulator) on %s\n"
           "try:  kubectl --server %s get pods -A -w\n"
           "      curl -s '%s/api/v1/namespaces/default/pods?resourceVersion=0'\n"
           "      curl -s %s/metrics\n",
           sim_url(d->sim), url, url, url);
}

int demo_main(int argc, char **argv)
{
    struct demo d = {.objects = DEMO_OBJECTS_DEFAULT, .churn = DEMO_CHURN_DEFAULT};
    const struct config_opt flags[] = {
        {"objects", CFG_INT, &d.objects, 0, 1000000, "pods the simulator starts with (default 50)"},
        {"churn", CFG_INT, &d.churn, 0, 100000, "simulator pod writes per second (default 2)"},
    };
    const struct proxy_cmd cmd = {
        .usage = "kwp demo [flags]",
        .description = "The proxy in front of the embedded simulator, in one process: nothing else "
                       "needed.\nPoint kubectl at the printed URL.",
        .embedded_only = true,
        .flags = flags,
        .n_flags = sizeof(flags) / sizeof(flags[0]),
        .default_resources = "pods,configmaps,namespaces,nodes",
        .embedded = {.name = "simulator",
                     .start = demo_sim_start,
                     .stop = demo_sim_stop,
                     .ready = demo_banner,
                     .ctx = &d},
    };

    return proxy_main(argc, argv, &cmd);
}

int demo_proxy_main(int argc, char **argv)
{
    struct demo d = {.objects = DEMO_OBJECTS_DEFAULT, .churn = DEMO_CHURN_DEFAULT};
    const struct proxy_cmd cmd = {
        .usage = "kwp proxy [flags]",
        .description =
            "The caching list/watch proxy. Upstream: --upstream, --kubeconfig, $KUBECONFIG,\n"
            "the in-cluster service account, ~/.kube/config; with none, the embedded simulator.",
        .embedded = {.name = "simulator",
                     .start = demo_sim_start,
                     .stop = demo_sim_stop,
                     .ctx = &d},
    };

    return proxy_main(argc, argv, &cmd);
}
