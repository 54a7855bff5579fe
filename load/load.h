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

#endif
