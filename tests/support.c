#include "support.h"
#include "cpu/isa.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

/* A suite run for a kernel variant this machine lacks is skipped as a whole
 * (CTest's SKIP_RETURN_CODE), before Criterion starts. */
__attribute__((constructor)) static void skip_unsupported_isa(void)
{
    const char *isa = getenv("PLEAT_CPU_ISA");
    if (isa && *isa && !pleat_isa_available(isa)) {
        fprintf(stderr, "PLEAT_CPU_ISA=%s is not supported here: skipped\n", isa);
        exit(77);
    }
}

pleat_context *cpu_context(int threads)
{
    pleat_status s;
    pleat_context *ctx = reference_context(PLEAT_BACKEND_CPU, NULL, threads, &s);
    cr_assert_eq(s, PLEAT_OK, "context: %s", pleat_status_string(s));
    return ctx;
}

void *uncalled_enqueue(pleat_task_range_fn task, uint32_t count, void *task_context,
                       void *job_context)
{
    (void)task, (void)count, (void)task_context, (void)job_context;
    cr_assert_fail("enqueue_tasks called");
    return NULL;
}

void uncalled_finish(void *handle, void *job_context)
{
    (void)handle, (void)job_context;
    cr_assert_fail("finish_tasks called");
}
