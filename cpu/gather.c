/* End of the sort stage: lay the particles out in key order, 16 bytes each,
 * with their sort keys, so the sweep reads candidates contiguously, then pad
 * the arrays (see PLEAT_PAD). Rest positions are copied too only from
 * PLEAT_SORTED_REST_FROM particles on; below, the sweep reads the few it
 * needs, those of close pairs, from the caller's array. A call that corrects gets its fixed-point
 * sums zeroed here too, saving a pass. On the way it checks the column order
 * cpu/order.c asks about. Memory-bound and the same for every ISA. */
#include "cpu.h"

#include <stdint.h>
#include <string.h>

/* How far ahead the particle reads are prefetched: key order jumps around
 * the caller's array, which the hardware prefetcher cannot follow. */
#define AHEAD 16u

/* Whether sorted particle (key1, i1) breaks its column's order after
 * (key0, i0) (sort keys, particle numbers): in one column (a key's bits
 * from 16), the key drops, or the particle number does. */
static inline unsigned breaks_column(uint32_t key0, uint32_t i0, uint32_t key1, uint32_t i1)
{
    return (key0 >> 16 == key1 >> 16) & ((key1 < key0) | (i1 < i0));
}

static void gather_task(void *arg, uint32_t chunk)
{
    pleat_frame *f = arg;
    const uint64_t *packed = f->packed;
    const float *particles = f->particles;
    uint32_t *restrict keys = f->keys, *restrict order = f->order;
    float *restrict pos = f->pos, *restrict rest_sorted = f->rest_sorted;
    const float *rest = f->rest;
    int64_t *acc_z = f->acc_z, *restrict acc_xy = f->acc_xy; /* acc_z is packed */
    uint32_t end = pleat_chunk_end(chunk, f->m);
    uint32_t last_key = 0, last = 0;
    unsigned broken = 0; /* the chunk's first particle is checked after the stage */
    for (uint32_t s = pleat_chunk_begin(chunk); s < end; ++s) {
        if (end - s > AHEAD) { /* not past the chunk: the next one's thread zeroes it */
            size_t ahead = (uint32_t)packed[s + AHEAD];
            __builtin_prefetch(particles + 4 * ahead);
            if (rest_sorted)
                __builtin_prefetch(rest + 4 * ahead);
        }
        uint64_t v = packed[s];
        uint32_t i = (uint32_t)v, key = (uint32_t)(v >> 32);
        broken |= breaks_column(last_key, last, key, i);
        keys[s] = last_key = key;
        order[s] = last = i;
        memcpy(pos + 4 * (size_t)s, particles + 4 * (size_t)i, 4 * sizeof(float));
        if (rest_sorted)
            memcpy(rest_sorted + 4 * (size_t)s, rest + 4 * (size_t)i, 4 * sizeof(float));
        if (acc_z) { /* packed[s] is read: its slot becomes the z sum */
            acc_z[s] = 0;
            acc_xy[2 * (size_t)s] = acc_xy[2 * (size_t)s + 1] = 0;
        }
    }
    f->chunks[chunk].out_of_order = broken;
}

int pleat_cpu_gather(pleat_frame *f, pleat_pool *pool, uint64_t *sorted)
{
    f->packed = sorted;
    /* the z sums reuse the sorted keys, consumed here */
    f->acc_z = f->acc_xy ? (int64_t *)sorted : NULL;
    uint32_t chunks = pleat_chunks(f->m);
    pleat_pool_run(pool, chunks, gather_task, f);
    unsigned broken = 0;
    for (uint32_t k = 0; k < chunks; ++k) {
        uint32_t s = pleat_chunk_begin(k); /* after s - 1, in another chunk */
        broken |= f->chunks[k].out_of_order;
        if (k > 0)
            broken |= breaks_column(f->keys[s - 1], f->order[s - 1], f->keys[s], f->order[s]);
    }
    size_t m = f->m;
    for (size_t s = m; s < m + PLEAT_PAD; ++s) {
        f->keys[s] = UINT32_MAX;
        f->order[s] = 0;
    }
    memset(f->pos + 4 * m, 0, 4 * PLEAT_PAD * sizeof(float));
    return !broken;
}
