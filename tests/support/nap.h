/*
 * nap.h - the pause between two polls of a bounded wait in a test.
 *
 * Tests never sleep for readiness (STYLE: Tests): they poll a condition under a deadline and
 * nap between polls, or hold still on purpose (a reader that stops reading, a delay a test
 * measures). No state: any thread.
 */
#ifndef KWP_SUPPORT_NAP_H
#define KWP_SUPPORT_NAP_H

/* Sleeps <ms> milliseconds, restarted after a signal so the whole pause is taken. */
void nap(long ms);

#define NAP_POLL_MS 20L

/* Polls <cond> every NAP_POLL_MS until true or <ms> passed; <ok> gets the last value (needs
 * tests/support/http.h for http_now_ms). */
#define WAIT_FOR(ok, cond, ms)                                                                     \
    do {                                                                                           \
        uint64_t wait_end_ = http_now_ms() + (uint64_t)(ms);                                       \
        while (!((ok) = (cond)) && http_now_ms() < wait_end_) {                                    \
            nap(NAP_POLL_MS);                                                                      \
        }                                                                                          \
    } while (0)

#endif
