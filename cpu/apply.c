/* Stage 4: add each particle's fixed-point sum to its position. Runs only
 * after every check passed and every buffer was reserved: the first write to
 * the caller's array. */
#include "cpu.h"

typedef struct apply_args {
    const pleat_frame *f;
    float *particles;
} apply_args;

static void apply_task(void *arg, uint32_t chunk)
{
    const apply_args *args = arg;
    const pleat_frame *f = args->f;
    uint32_t end = pleat_chunk_end(chunk, f->m);
    for (uint32_t s = chunk * PLEAT_CHUNK; s < end; ++s) {
        float *p = args->particles + 4 * (size_t)f->order[s];
        const int64_t *sum = f->acc + 3 * (size_t)s;
        for (int a = 0; a < 3; ++a)
            p[a] = pleat_apply_sum(p[a], sum[a], &f->consts);
    }
}

void pleat_cpu_apply(const pleat_frame *f, pleat_pool *pool, float *particles)
{
    apply_args args = {f, particles};
    pleat_pool_run(pool, pleat_chunks(f->m), apply_task, &args);
}
