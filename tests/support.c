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

uint32_t *pleat_pairs(pleat_context *ctx, const float *particles, uint32_t count,
                      const pleat_params *params, size_t *num)
{
    size_t total = 0;
    cr_assert_eq(pleat_find_pairs(ctx, particles, count, params, NULL, 0, &total), PLEAT_OK);
    uint32_t *pairs = malloc((total + 1) * 2 * sizeof *pairs);
    cr_assert(pairs);
    size_t again = 0;
    cr_assert_eq(pleat_find_pairs(ctx, particles, count, params, pairs, total, &again), PLEAT_OK);
    cr_assert_eq(again, total);
    *num = total;
    return pairs;
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

void collide_hashes(pleat_context *ctx, const float *particles, uint32_t count,
                    const pleat_params *p, int calls, uint64_t *h_collide, uint64_t *h_pairs)
{
    size_t num;
    uint32_t *pairs = pleat_pairs(ctx, particles, count, p, &num);
    *h_pairs = hash_bytes(pairs, num * 2 * sizeof *pairs);
    free(pairs);
    float *work = copy_floats(particles, (size_t)count * 4);
    for (int c = 0; c < calls; ++c)
        cr_assert_eq(pleat_self_collide(ctx, work, count, p, NULL), PLEAT_OK);
    *h_collide = hash_bytes(work, (size_t)count * 4 * sizeof(float));
    free(work);
}
