/*
 * fuzz.h - what every harness in tests/fuzz/ shares: libFuzzer's entry point and CHECK.
 *
 * A harness defines LLVMFuzzerTestOneInput and nothing else global. It is linked either with
 * libFuzzer (clang -fsanitize=fuzzer, KWP_FUZZ=ON: explores new inputs) or with replay.c (any
 * compiler: runs the committed corpus once, as a ctest test). Inputs are arbitrary bytes;
 * harnesses copy them into exact-size heap buffers so AddressSanitizer sees any read past the
 * end. CHECK states an invariant: when it fails the process aborts with the condition's text
 * on stderr, which libFuzzer reports as a crash and keeps as a reproducer.
 */
#ifndef KWP_TESTS_FUZZ_FUZZ_H
#define KWP_TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Runs one input; returns 0 (libFuzzer's contract). Must not keep state between calls that
 * changes what a later input does, or reproducers would not reproduce. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
