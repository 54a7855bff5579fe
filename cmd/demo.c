/*
 * demo.c - `kwp demo` and `kwp proxy` (see demo.h): the proxy's flags and lifecycle are
 * proxy_main's; this file adds the embedded simulator (started with the proxy's bookmark and
 * watch-lag settings), demo's --objects/--churn and its banner; with `kwp demo --auth
 * delegated`, the demo users, rules and certificates of demo_auth.h on both sides.
 *
 * The struct demo lives on the command's stack for the whole run; the simulator it starts
 * is stopped by proxy_main after the proxy stopped. Includes proxy/ and sim/ headers.
 */
#include "cmd/demo.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cmd/demo_auth.h"
#include "proxy/config.h"
#include "proxy/proxy.h"
#include "sim/sim.h"

#define DEMO_OBJECTS_DEFAULT 50
#define DEMO_CHURN_DEFAULT 2

struct demo {
    int64_t objects;        /* pods the simulator starts with */
    int64_t churn;          /* simulator pod writes per second */
    bool users;             /* `kwp demo`: demo users when the proxy's --auth is delegated */
    struct sim *sim;        /* NULL until started */
    struct demo_auth *auth; /* the demo users, or NULL */
};

static int demo_sim_start(void *ctx, struct proxy_embedded_start *s, char *err, size_t err_len)
{
    struct demo *d = ctx;
    struct sim_opts so;

    sim_opts_defaults(&so);
    so.objects = d->objects;
    so.churn = d->churn;
    so.bookmark_interval_ms = s->bookmark_interval_ms;
    so.watch_max_lag_ms = s->watch_max_lag_ms;
    if (d->users && s->delegated) {
        /* certificates only when the proxy serves the demo's TLS: with its own flags a
         * client certificate of the demo's CA would not verify */
        d->auth = demo_auth_new(!s->downstream_tls, err, err_len);
        if (!d->auth) {
            return -EIO;
        }
        so.token_auth_file = demo_auth_token_file(d->auth);
        so.authorization_rules = demo_auth_rules_file(d->auth);
        s->token = demo_auth_proxy_token(d->auth);
        s->tls_cert_file = demo_auth_tls_cert_file(d->auth);
        s->tls_key_file = demo_auth_tls_key_file(d->auth);
        s->client_ca_file = demo_auth_client_ca_file(d->auth);
    }
    d->sim = sim_start(&so, err, err_len);
    if (!d->sim) {
        demo_auth_free(d->auth);
        d->auth = NULL;
        return -EINVAL;
    }
    s->url = sim_url(d->sim);
    return 0;
}

static void demo_sim_stop(void *ctx)
{
    struct demo *d = ctx;

    sim_stop(d->sim);
    d->sim = NULL;
    demo_auth_free(d->auth);
    d->auth = NULL;
}

static void demo_banner(void *ctx, const char *url)
{
    struct demo *d = ctx;

    if (d->auth) {
        printf("upstream (embedded simulator) on %s\n", sim_url(d->sim));
        demo_auth_banner(d->auth, stdout, url);
        return;
    }
    printf("upstream (embedded simulator) on %s\n"
           "try:  kubectl --server %s get pods -A -w\n"
           "      curl -s '%s/api/v1/namespaces/default/pods?resourceVersion=0'\n"
           "      curl -s %s/metrics\n",
           sim_url(d->sim), url, url, url);
}

int demo_main(int argc, char **argv)
{
    struct demo d = {.objects = DEMO_OBJECTS_DEFAULT, .churn = DEMO_CHURN_DEFAULT, .users = true};
    const struct config_opt flags[] = {
        {"objects", CFG_INT, &d.objects, 0, 1000000, "pods the simulator starts with (default 50)"},
        {"churn", CFG_INT, &d.churn, 0, 100000, "simulator pod writes per second (default 2)"},
    };
    const struct proxy_cmd cmd = {
        .usage = "kwp demo [flags]",
        .description = "The proxy in front of the embedded simulator, in one process: nothing else "
                       "needed.\nPoint kubectl at the printed URL. With --auth delegated the "
                       "simulator gets demo users\n(printed with their tokens) and rules, and the "
                       "proxy serves https with a demo CA.",
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
