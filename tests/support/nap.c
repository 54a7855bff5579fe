/* nap.c - a whole pause of <ms> milliseconds (see nap.h). */
#include "tests/support/nap.h"

#include <errno.h>
#include <time.h>

void nap(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}
