/*
 * main.c - kwp: one binary, subcommands. Dispatch only; each command parses its own flags.
 * The commands are the only code that knows every layer: cmd/ -> sim/, load/ -> proxy/ ->
 * cache/ (DESIGN.md "Layout").
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/demo.h"
#include "lab/lab.h"
#include "load/load.h"
#include "proxy/log.h"
#include "sim/sim.h"

static void usage(FILE *f)
{
    fputs("usage: kwp COMMAND [flags]\n\n"
          "commands:\n"
          "  proxy   the caching list/watch proxy (the main job)\n"
          "  sim     a simulated kube-apiserver (test upstream, 410 lab)\n"
          "  demo    sim + proxy in one process: the embedded default, nothing else needed\n"
          "  load    watch fan-out load generator and reporter (latency, throughput, 410s)\n"
          "  lab     the 410 lab: experiments on too old / too large resourceVersions\n"
          "\n"
          "environment: KWP_LOG_LEVEL=debug|info|warn|error; every flag has a KWP_* twin.\n"
          "Run 'kwp COMMAND --help' for the flags of a command.\n",
          f);
}

int main(int argc, char **argv)
{
    const char *lvl = getenv("KWP_LOG_LEVEL");
    enum log_level level;

    /* Blocks of 1 MiB and more (LIST iovec arrays, big reply buffers) come from mmap and go
     * back to the system when freed; glibc's sliding threshold would otherwise keep them in
     * the heap after a burst of big LISTs (measured: 542 MB idle after 100k-object LISTs vs
     * 358 MB with this). */
    (void)mallopt(M_MMAP_THRESHOLD, 1 << 20);
    if (lvl && log_parse_level(lvl, &level) == 0) {
        log_set_level(level);
    }
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "proxy") == 0) {
        return demo_proxy_main(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "demo") == 0) {
        return demo_main(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "sim") == 0) {
        return sim_main(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "load") == 0) {
        return load_main(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "lab") == 0) {
        return lab_main(argc - 1, argv + 1);
    }
    fprintf(stderr, "kwp: unknown command %s\n\n", argv[1]);
    usage(stderr);
    return 2;
}
