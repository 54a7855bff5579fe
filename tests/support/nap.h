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

#endif
