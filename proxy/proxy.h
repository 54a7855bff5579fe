/*
 * proxy.h - kwp proxy and kwp demo: the caching list/watch proxy application.
 *
 * Wires the pieces of DESIGN.md together: the HTTP server routes each request; resource
 * LIST/WATCH/GET go to proxy/handlers over a cache resource kept in sync by the reflector;
 * everything else is streamed through the passthrough. Resources are cached when named by
 * --resources, or on first use when upstream discovery lists them with list and watch.
 *
 * Threads: main (flags, signals, lifecycle), MHD workers, the reflector, the passthrough,
 * a discovery thread, and the tick (deadlines, bookmarks, idle-peer sweep).
 */
#ifndef KWP_PROXY_PROXY_H
#define KWP_PROXY_PROXY_H

/* `kwp proxy ...`: returns the process exit code. */
int proxy_main(int argc, char **argv);

/* `kwp demo ...`: the simulator and the proxy in one process. */
int proxy_demo_main(int argc, char **argv);

#endif
