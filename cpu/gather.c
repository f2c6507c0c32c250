/* End of the sort stage: lay the particles (and rest positions) out in key
 * order, 16 bytes each, so the sweep reads candidates contiguously, then pad
 * the arrays (see PLEAT_PAD). Memory-bound and the same for every ISA. */
#include "cpu.h"

#include <stdint.h>
#include <string.h>

/* How far ahead the particle reads are prefetched: key order jumps around
 * the caller's array, which the hardware prefetcher cannot follow. */
#define AHEAD 16u

static void gather_task(void *arg, uint32_t chunk)
{
    const pleat_frame *f = arg;
    const uint64_t *packed = f->packed;
    const float *particles = f->particles, *rest = f->rest;
    uint32_t *restrict keys = f->keys, *restrict order = f->order;
    float *restrict pos = f->pos, *restrict rest4 = f->rest4;
    uint32_t end = pleat_chunk_end(chunk, f->m), m = f->m;
    for (uint32_t s = pleat_chunk_begin(chunk); s < end; ++s) {
        if (s + AHEAD < m) {
            size_t ahead = (uint32_t)packed[s + AHEAD];
            __builtin_prefetch(particles + 4 * ahead);
            if (rest)
                __builtin_prefetch(rest + 4 * ahead);
        }
        uint64_t v = packed[s];
        uint32_t i = (uint32_t)v;
        keys[s] = (uint32_t)(v >> 32);
        order[s] = i;
        memcpy(pos + 4 * (size_t)s, particles + 4 * (size_t)i, 4 * sizeof(float));
        if (rest)
            memcpy(rest4 + 4 * (size_t)s, rest + 4 * (size_t)i, 4 * sizeof(float));
    }
}

void pleat_cpu_gather(pleat_frame *f, pleat_pool *pool, uint64_t *sorted)
{
    f->packed = sorted;
    pleat_pool_run(pool, pleat_chunks(f->m), gather_task, f);
    size_t m = f->m;
    for (size_t s = m; s < m + PLEAT_PAD; ++s) {
        f->keys[s] = UINT32_MAX;
        f->order[s] = 0;
    }
    memset(f->pos + 4 * m, 0, 4 * PLEAT_PAD * sizeof(float));
    if (f->rest4)
        memset(f->rest4 + 4 * m, 0, 4 * PLEAT_PAD * sizeof(float));
}
