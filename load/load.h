/*
 * load.h - `kwp load`: the watch fan-out load generator and reporter.
 *
 * Parses flags (each with its KWP_* twin), resolves the target, builds the collection path
 * from --resource/--namespace, raises RLIMIT_NOFILE, runs the engine (client.h) and reports
 * (report.h). Runs on the main thread; SIGINT/SIGTERM end the run early and still report.
 */
#ifndef KWP_LOAD_LOAD_H
#define KWP_LOAD_LOAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define LOAD_SOURCES_MAX 256 /* local addresses --source-ips may expand to */

/*
 * Entry point of `kwp load`; argv[0] is "load". Returns the process exit code: 0 after a run
 * (whatever it measured, errors included), 1 when the run could not be set up (target, file,
 * open-file limit), 2 for bad flags.
 */
int load_main(int argc, char **argv);

/*
 * Builds the collection path for <resource> ("pods", "v1/pods", "apps/v1/deployments") in
 * namespace <ns> (NULL or "" = all namespaces) under URL path <prefix> ("" or "/base") into
 * <out>. Returns 0 or -EINVAL (bad resource or namespace, or the path does not fit).
 */
int load_resource_path(const char *prefix, const char *resource, const char *ns, char *out,
                       size_t cap);

/*
 * Expands --source-ips into local addresses to connect from. Each of the <n> items is an
 * address ("127.0.0.2", "::1") or an inclusive IPv4 range ("127.0.0.1-127.0.0.8"); a single
 * item may instead be a count "N" (N loopback addresses from 127.0.0.1) or "auto" (as many
 * loopback addresses from 127.0.0.1 as <conns> connections need at <ports> connections per
 * address). Counts and "auto" need an IPv4 loopback <target>; every address must be of the
 * target's family. Writes at most <cap> addresses (port 0) to <out>.
 * Returns how many, or -EINVAL with a one-line reason in <err>.
 */
int load_sources_parse(const char *const *items, size_t n, const struct sockaddr_storage *target,
                       uint64_t conns, uint64_t ports, struct sockaddr_storage *out, size_t cap,
                       char *err, size_t err_len);

#endif
