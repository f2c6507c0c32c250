/* End of the sort stage: lay the particles out in key order (structure of
 * arrays) so the sweep reads candidates contiguously, then pad the arrays
 * (see PLEAT_PAD). Memory-bound and the same for every ISA. */
#include "cpu.h"

#include <stdint.h>

/* How far ahead the particle reads are prefetched: key order jumps around
 * the caller's array, which the hardware prefetcher cannot follow. */
#define AHEAD 16u

static void gather_task(void *arg, uint32_t chunk)
{
    pleat_frame *f = arg;
    uint32_t end = pleat_chunk_end(chunk, f->m);
    for (uint32_t s = pleat_chunk_begin(chunk); s < end; ++s) {
        if (s + AHEAD < f->m) {
            size_t ahead = (uint32_t)f->packed[s + AHEAD];
            __builtin_prefetch(f->particles + 4 * ahead);
            if (f->rest)
                __builtin_prefetch(f->rest + 4 * ahead);
        }
        uint64_t v = f->packed[s];
        uint32_t i = (uint32_t)v;
        const float *p = f->particles + 4 * (size_t)i;
        f->keys[s] = (uint32_t)(v >> 32);
        f->order[s] = i;
        f->x[s] = p[0];
        f->y[s] = p[1];
        f->z[s] = p[2];
        f->w[s] = p[3];
        if (f->rx) {
            const float *r = f->rest + 4 * (size_t)i;
            f->rx[s] = r[0];
            f->ry[s] = r[1];
            f->rz[s] = r[2];
        }
    }
}

void pleat_cpu_gather(pleat_frame *f, pleat_pool *pool, uint64_t *sorted)
{
    f->packed = sorted;
    pleat_pool_run(pool, pleat_chunks(f->m), gather_task, f);
    for (size_t s = f->m; s < (size_t)f->m + PLEAT_PAD; ++s) {
        f->keys[s] = UINT32_MAX;
        f->order[s] = 0;
        f->x[s] = f->y[s] = f->z[s] = f->w[s] = 0.0f;
        if (f->rx)
            f->rx[s] = f->ry[s] = f->rz[s] = 0.0f;
    }
}
