/* memcpy-align.c - 3,200-byte memcpy from malloc blocks at several source offsets (gcc -O2);
 * why blob.c keeps the JSON 16-byte aligned (bench/README.md, "Store memory"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
int main(void)
{
    enum { N = 10000, SZ = 3200 };
    static char *src[N];
    char *dst = aligned_alloc(64, 16384 * 4);
    for (int off = 0; off < 64; off += 1) {
        for (int i = 0; i < N; i++) {
            src[i] = malloc(SZ + 256);
            memset(src[i], 'a' + i % 26, SZ + 256);
        }
        double best = 1e9;
        for (int rep = 0; rep < 5; rep++) {
            double t0 = now();
            size_t d = 0;
            for (int i = 0; i < N; i++) {
                memcpy(dst + d, src[i] + off, SZ);
                d = (d + SZ) % (16384 * 3);
            }
            double t = now() - t0;
            if (t < best)
                best = t;
        }
        printf("src offset %2d: %.2f GB/s\n", off, (double)N * SZ / best / 1e9);
        for (int i = 0; i < N; i++)
            free(src[i]);
    }
    return dst[100];
}
