/*
 * demo.h - the commands that run the proxy with the simulator in the same process:
 * `kwp demo` (the proxy in front of the embedded simulator, nothing else needed) and
 * `kwp proxy` (whose fallback, when no upstream is configured, is the same simulator).
 *
 * This is the one place that puts sim/ behind proxy/: it hands proxy_main a struct
 * proxy_embedded that starts and stops a struct sim. Main thread only.
 */
#ifndef KWP_CMD_DEMO_H
#define KWP_CMD_DEMO_H

/* `kwp demo ...`: argv[0] is "demo". Returns the process exit code. */
int demo_main(int argc, char **argv);

/* `kwp proxy ...`: argv[0] is "proxy". Returns the process exit code. */
int demo_proxy_main(int argc, char **argv);

#endif
