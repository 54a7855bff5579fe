/*
 * tsan_boxfort.h - included (once, by a test's .c) by the unit tests that run threads, so
 * that they can run under ThreadSanitizer (scripts/test.sh's TSan phase).
 *
 * Criterion 2.4 cannot start under ThreadSanitizer (Snaipe/Criterion#274): boxfort maps its
 * inheritable arena at 0x2000_0000_0000 + (rand_r() & 0x3fffff) * 16 MiB with 10 tries, and
 * TSan reserves almost all of that range, so the runner aborts with "Could not initialize
 * inheritable arena". boxfort calls rand_r through the PLT, so the definition below (only
 * under TSan) steers the arena into TSan's application range (0x5500_0000_0000 -
 * 0x5680_0000_0000). A test that includes this must not call rand_r itself.
 */
#ifndef KWP_SUPPORT_TSAN_BOXFORT_H
#define KWP_SUPPORT_TSAN_BOXFORT_H

#if defined(__SANITIZE_THREAD__)
#define TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_TSAN 1
#endif
#endif

#ifdef TEST_TSAN
int rand_r(unsigned *seed);
int rand_r(unsigned *seed)
{
    static const unsigned hi[] = {0x5600, 0x5640, 0x5620, 0x5660, 0x5610,
                                  0x5630, 0x5650, 0x5670, 0x5608, 0x5618};
    unsigned i = (*seed)++ % (sizeof(hi) / sizeof(hi[0]));

    return (int)((hi[i] - 0x2000u) << 8);
}
#endif

#endif
