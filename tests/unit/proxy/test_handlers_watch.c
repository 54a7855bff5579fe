/*
 * test_handlers_watch.c - static helpers of proxy/handlers_watch.c, tested directly (the h2o
 * way: the .c is included): the batch arrays a watch holds only while it has events in hand.
 * The frame writer itself is tested black-box through bare watches in test_handlers.c.
 */
#include "proxy/handlers_watch.c"

#include <criterion/criterion.h>
#include <malloc.h>

/*
 * A watch that goes idle gives its batch array back to malloc, and its thread keeps none:
 * a spare kept per thread changed where glibc placed the next watches' allocations and
 * raised the memory per idle watch by up to 4 KB (bench/README, "Memory per idle watch").
 * mallinfo2 counts the calling thread's arena (the main one here): what a take and a give
 * leave allocated must be nothing.
 */
Test(handlers_watch, idle_watch_batch_arrays_go_back_to_malloc)
{
    size_t before, held;
    struct ring_event *a, *b;

    batch_give(batch_take()); /* anything malloc sets up on first use, outside the count */
    before = mallinfo2().uordblks;
    a = batch_take();
    b = batch_take();
    held = mallinfo2().uordblks;
    cr_assert_neq(a, b);
    if (held == before) {
        batch_give(a);
        batch_give(b);
        cr_skip_test("this allocator's mallinfo2 counts nothing (a sanitizer's malloc)");
    }
    cr_assert_geq(held - before, 2 * HANDLERS_WATCH_BATCH * sizeof(*a));
    batch_give(a);
    batch_give(b);
    cr_assert_eq(mallinfo2().uordblks, before,
                 "%zu bytes still allocated after both were given back",
                 mallinfo2().uordblks - before);
}
