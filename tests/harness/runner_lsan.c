/*
 * runner_lsan.c: LeakSanitizer checks the tests, not Criterion's runner.
 *
 * Criterion runs each test in a child process that it starts again from the
 * test executable with BXFI_MAP in its environment; the parent only schedules
 * children and collects results. Now and then the parent ends with one
 * unreachable 48-byte block from BoxFort's timeout bookkeeping (the calloc in
 * bxfi_push_timeout, which every `.timeout` test goes through; seen in CI as
 * libcriterion.so.3+0x1a332 on Debian 12), and that fails an ASan run which
 * found nothing of ours.
 *
 * So the leak check is off in the runner parent alone. The children, where
 * every line of kwp code under test runs, keep it.
 */
#include <stdlib.h>

static int is_criterion_runner;

__attribute__((constructor)) static void note_process_role(void)
{
    is_criterion_runner = getenv("BXFI_MAP") == NULL;
}

/* Called by LeakSanitizer at exit; non-zero skips the leak check. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
    return is_criterion_runner;
}
