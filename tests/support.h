/* Criterion helpers on top of reference.h. */
#ifndef PLEAT_TESTS_SUPPORT_H
#define PLEAT_TESTS_SUPPORT_H

#include "reference.h"

/* pleat_find_pairs with the size query; returns malloc'd pairs. */
uint32_t *pleat_pairs(pleat_context *ctx, const float *particles, uint32_t count,
                      const pleat_params *params, size_t *num);

/* Hashes of the pair list of `particles` and of the particles after `calls`
 * successive self-collision passes on a copy; fails the test when a call
 * does. */
void collide_hashes(pleat_context *ctx, const float *particles, uint32_t count,
                    const pleat_params *p, int calls, uint64_t *h_collide, uint64_t *h_pairs);

/* A CPU context with the given thread count; aborts the test on failure. */
pleat_context *cpu_context(int threads);

/* A job system's callbacks for tests where it must not be called: each
 * fails the test. */
void *uncalled_enqueue(pleat_task_range_fn task, uint32_t count, void *task_context,
                       void *job_context);
void uncalled_finish(void *handle, void *job_context);

#endif
