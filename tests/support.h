/* Criterion helpers on top of reference.h. */
#ifndef PLEAT_TESTS_SUPPORT_H
#define PLEAT_TESTS_SUPPORT_H

#include "reference.h"

/* A CPU context with the given thread count; aborts the test on failure. */
pleat_context *cpu_context(int threads);

/* A job system's callbacks for tests where it must not be called: each
 * fails the test. */
void *uncalled_enqueue(pleat_task_range_fn task, uint32_t count, void *task_context,
                       void *job_context);
void uncalled_finish(void *handle, void *job_context);

#endif
