/*
 * proxy.h - kwp proxy: the caching list/watch proxy application.
 *
 * Wires the pieces of DESIGN.md together: the HTTP server routes each request; resource
 * LIST/WATCH/GET go to proxy/handlers over a cache resource kept in sync by the reflector;
 * everything else is streamed through the passthrough. Resources are cached when named by
 * --resources, or on first use when upstream discovery lists them with list and watch.
 *
 * The commands that run it (`kwp proxy`, `kwp demo`: cmd/demo.c) hand it their flags and,
 * for when no upstream is configured, an embedded upstream as a struct proxy_embedded; the
 * proxy knows nothing else about it (it never includes sim/).
 *
 * Threads: main (flags, signals, lifecycle), MHD workers, the reflector, the passthrough,
 * a discovery thread, and the tick (deadlines, bookmarks, idle-peer sweep).
 */
#ifndef KWP_PROXY_PROXY_H
#define KWP_PROXY_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct config_opt;

/* What the proxy tells the embedded upstream it starts, and what it hands back. */
struct proxy_embedded_start {
    /* in */
    int64_t bookmark_interval_ms; /* the proxy's --bookmark-interval */
    int64_t watch_max_lag_ms;     /* and --watch-max-lag */
    bool delegated;               /* --auth delegated: the upstream reviews kwp's callers */
    bool downstream_tls;          /* --tls-cert-file, --tls-key-file or --client-ca-file given */
    /* out, lent until the stop call */
    const char *url;   /* "http://HOST:PORT", required */
    const char *token; /* kwp's own bearer token on it, or NULL */
    /* downstream TLS used when the proxy was given none of those flags, or NULL */
    const char *tls_cert_file;
    const char *tls_key_file;
    const char *client_ca_file;
};

/*
 * Starts the embedded upstream, on the main thread with SIGTERM/SIGINT blocked and libcurl
 * initialised, as <s>'s inputs say; fills <s>'s outputs. Returns 0, or -errno with a one-line
 * reason in <err> (then the stop call is not made).
 */
typedef int proxy_upstream_start_fn(void *ctx, struct proxy_embedded_start *s, char *err,
                                    size_t err_len);

/* Stops what a successful start started; called once, on the main thread, after the proxy
 * stopped (or failed to start). */
typedef void proxy_upstream_stop_fn(void *ctx);

/* The proxy listens on <url> in front of the embedded upstream; called on the main thread
 * after "listening on URL" is printed, before stdout is flushed (a banner). */
typedef void proxy_ready_fn(void *ctx, const char *url);

/* An upstream in this process, started when no upstream is configured. */
struct proxy_embedded {
    const char *name;               /* what it is, in messages: "simulator" */
    proxy_upstream_start_fn *start; /* NULL: none (then no upstream is an error) */
    proxy_upstream_stop_fn *stop;
    proxy_ready_fn *ready; /* may be NULL */
    void *ctx;             /* passed to the three */
};

/* A command that runs the proxy. */
struct proxy_cmd {
    const char *usage;              /* first help line, e.g. "kwp proxy [flags]" */
    const char *description;        /* the help text under it */
    bool embedded_only;             /* no upstream flags: always the embedded upstream */
    const struct config_opt *flags; /* the command's own flags, listed after the proxy's */
    size_t n_flags;
    const char *default_resources; /* --resources when none is given ("pods,nodes"), or NULL */
    struct proxy_embedded embedded;
};

/*
 * Runs the proxy command <cmd> with argv (argv[0] is the command name): parses the flags,
 * finds the upstream (DESIGN.md's order; the embedded one when there is none), serves until
 * SIGTERM/SIGINT, then shuts down gracefully (--shutdown-delay of serving with /readyz failing,
 * every cached watch drained, README "Rolling updates"). Returns the process exit code: 0, 1
 * when it cannot start, 2 for bad flags.
 * Main thread only.
 */
int proxy_main(int argc, char **argv, const struct proxy_cmd *cmd);

#endif
