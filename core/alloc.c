#include "alloc.h"

#include <stdatomic.h>
#include <stdlib.h>

static atomic_uint_least64_t attempts;
static atomic_uint_least64_t failures;
static atomic_int_least64_t live;
/* 0: no failure armed; else the number of attempts left until the one that
 * fails (1 = the next). */
static atomic_uint_least64_t countdown;
static atomic_int sticky_failure;
static atomic_int failing; /* sticky mode, once triggered */

static int should_fail(void)
{
    atomic_fetch_add_explicit(&attempts, 1, memory_order_relaxed);
    if (atomic_load_explicit(&failing, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&failures, 1, memory_order_relaxed);
        return 1;
    }
    uint64_t n = atomic_load_explicit(&countdown, memory_order_relaxed);
    while (n != 0 && !atomic_compare_exchange_weak_explicit(&countdown, &n, n - 1,
                                                            memory_order_relaxed,
                                                            memory_order_relaxed)) {
    }
    if (n != 1)
        return 0;
    if (atomic_load_explicit(&sticky_failure, memory_order_relaxed))
        atomic_store_explicit(&failing, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&failures, 1, memory_order_relaxed);
    return 1;
}

void *pleat_malloc(size_t bytes)
{
    if (should_fail())
        return NULL;
    void *block = malloc(bytes);
    if (block)
        atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
    return block;
}

void *pleat_calloc(size_t count, size_t size)
{
    if (should_fail())
        return NULL;
    void *block = calloc(count, size);
    if (block)
        atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
    return block;
}

void pleat_free(void *block)
{
    if (!block)
        return;
    atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
    free(block);
}

void pleat_alloc_fail_at(uint64_t nth, int sticky)
{
    atomic_store(&failing, 0);
    atomic_store(&sticky_failure, sticky != 0);
    atomic_store(&countdown, nth);
}

uint64_t pleat_alloc_attempts(void)
{
    return atomic_load(&attempts);
}

uint64_t pleat_alloc_failures(void)
{
    return atomic_load(&failures);
}

int64_t pleat_alloc_live(void)
{
    return atomic_load(&live);
}
