/* selbench.c - selector_match over 100,000 pod-like blobs (3 labels, 7 fields, like kwp sim's
 * pods, each with 1 KiB of JSON bytes), per selector: ns per match, the best of PASSES passes
 * (default 15); every selector, or only the INDEX-th. Built against one tree's cache library:
 *   gcc -O2 -std=gnu11 -I TREE -o selbench selbench.c TREE/build/cache/libkwp_cache.a -lpthread
 *   ./selbench [INDEX [PASSES]]
 * (bench/README.md, "Store memory"). */
#include "cache/blob.h"
#include "cache/selector.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 100000
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    static struct blob *b[N];
    static const char *tiers[] = {"frontend", "backend", "data"};
    static const char *apps[] = {"web", "api", "cache", "db", "worker"};
    const char *sels[][2] = {{"L", "tier=frontend"},
                             {"L", "app in (web,db),tier!=data"},
                             {"L", "pod-template-hash"},
                             {"L", "!nope,version notin (1,2)"},
                             {"F", "spec.nodeName=node-13"},
                             {"F", "spec.nodeName=node-13,status.phase=Running"},
                             {"F", "metadata.namespace=default,spec.restartPolicy!=Never"}};
    static char json[1024];
    char err[256];
    size_t hits = 0;
    long only = argc > 1 ? strtol(argv[1], NULL, 10) : -1;
    int passes = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 15;

    memset(json, ' ', sizeof(json));
    json[0] = '{';
    json[sizeof(json) - 1] = '}';

    for (int i = 0; i < N; i++) {
        char name[32], hash[16], node[16], ip[32];
        snprintf(name, sizeof(name), "pod-%06d", i);
        snprintf(hash, sizeof(hash), "%010x", (unsigned)(i * 2654435761u));
        snprintf(node, sizeof(node), "node-%02d", i % 50);
        snprintf(ip, sizeof(ip), "10.244.%d.%d", i % 50, i % 250 + 2);
        struct blob_kv labels[] = {
            {"app", apps[i % 5]}, {"pod-template-hash", hash}, {"tier", tiers[i % 3]}};
        struct blob_kv fields[] = {{"spec.nodeName", node},
                                   {"spec.restartPolicy", "Always"},
                                   {"spec.schedulerName", "default-scheduler"},
                                   {"spec.serviceAccountName", "default"},
                                   {"spec.hostNetwork", "false"},
                                   {"status.phase", i % 10 ? "Running" : "Pending"},
                                   {"status.podIP", ip}};
        struct blob_meta m = {.ns = "default",
                              .name = name,
                              .rv_str = "1",
                              .labels = labels,
                              .n_labels = 3,
                              .fields = fields,
                              .n_fields = 7};
        b[i] = blob_new(json, sizeof(json), &m);
    }
    for (size_t s = 0; s < sizeof(sels) / sizeof(sels[0]); s++) {
        if (only >= 0 && (size_t)only != s) {
            continue;
        }
        struct selector *sel = sels[s][0][0] == 'L'
                                   ? selector_parse_labels(sels[s][1], err, sizeof(err))
                                   : selector_parse_fields(sels[s][1], err, sizeof(err));
        double best = 1e9;
        if (sel == NULL) {
            fprintf(stderr, "%s: %s\n", sels[s][1], err);
            return 1;
        }
        for (int rep = 0; rep < passes; rep++) {
            double t0 = now();
            size_t h = 0;
            for (int i = 0; i < N; i++)
                h += selector_match(sel, b[i]);
            double t = now() - t0;
            if (t < best)
                best = t;
            hits = h;
        }
        printf("%-55s %6.1f ns/match  (%zu hits)\n", sels[s][1], best / N * 1e9, hits);
        selector_free(sel);
    }
    for (int i = 0; i < N; i++)
        blob_unref(b[i]);
    return 0;
}
