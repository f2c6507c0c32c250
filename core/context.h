#ifndef PLEAT_CORE_CONTEXT_H
#define PLEAT_CORE_CONTEXT_H

#include "backend.h"

#include <stdatomic.h>

struct pleat_context {
    pleat_backend backend; /* never AUTO */
    const pleat_backend_ops *ops;
    void *impl;
    int profile;
    pleat_timings timings; /* of the last successful call */
    char describe[128];
    atomic_int busy; /* 1 while a call runs: a second, concurrent call is refused */
    unsigned long forks; /* pleat_forks() when it was made */
};

/* Claims the context for one call; 0 when another call holds it. */
static inline int pleat_context_acquire(pleat_context *ctx)
{
    int expected = 0;
    return atomic_compare_exchange_strong_explicit(&ctx->busy, &expected, 1,
                                                   memory_order_acquire, memory_order_relaxed);
}

static inline void pleat_context_release(pleat_context *ctx)
{
    atomic_store_explicit(&ctx->busy, 0, memory_order_release);
}

#endif
