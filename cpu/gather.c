/* End of the sort stage: lay the particles out in key order, 16 bytes each,
 * with their sort keys, so the sweep reads candidates contiguously, then pad
 * the arrays (see PLEAT_PAD). Rest positions are copied too only from
 * PLEAT_SORTED_REST_FROM particles on; below, the sweep reads the few it
 * needs, those of close pairs, from the caller's array. A call that
 * corrects gets its fixed-point sums zeroed here too, saving a pass. On the
 * way it checks the column order cpu/order.c asks about. Memory-bound and
 * the same for every ISA.
 *
 * After the column pass, from PLEAT_GATHER_WALK_FROM particles on, the
 * particles are copied in a second pass, once the check has held, walking
 * columns side by side (cpu/walk.h): the caller's arrays are then past the
 * caches, and in key order a cache line of them comes back once per column
 * that holds one of its particles (AVX2, one thread, folded sheet, sort:
 * 1M 12.6 -> 11.1 ms, 1023-wide 9.9 -> 8.5, 4M 63 -> 53; 256k 1.60 -> 1.53;
 * at 128k the second pass cost more than it saved, 0.26 -> 0.35). */
#include "cpu.h"
#include "walk.h"

#include <stdint.h>
#include <string.h>

/* How far ahead the particle reads are prefetched: key order jumps around
 * the caller's array, which the hardware prefetcher cannot follow. In the
 * walk, each column's own particles ahead (4M folded: 8 ahead 52.5 ms, 16
 * ahead 54.7; none, 63). */
#define AHEAD 16u
#define WALK_AHEAD 8u

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
    const int copy = !f->copy_later;
    uint32_t end = pleat_chunk_end(chunk, f->m);
    uint32_t last_key = 0, last = 0;
    unsigned broken = 0; /* the chunk's first particle is checked after the stage */
    for (uint32_t s = pleat_chunk_begin(chunk); s < end; ++s) {
        if (copy && end - s > AHEAD) { /* not past the chunk: the next one's thread zeroes it */
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
        if (copy) {
            memcpy(pos + 4 * (size_t)s, particles + 4 * (size_t)i, 4 * sizeof(float));
            if (rest_sorted)
                memcpy(rest_sorted + 4 * (size_t)s, rest + 4 * (size_t)i, 4 * sizeof(float));
        }
        if (acc_z) { /* packed[s] is read: its slot becomes the z sum */
            acc_z[s] = 0;
            acc_xy[2 * (size_t)s] = acc_xy[2 * (size_t)s + 1] = 0;
        }
    }
    f->chunks[chunk].out_of_order = broken;
}

/* The second pass: one particle, and a prefetch for the one WALK_AHEAD
 * further down its column (in the padding at most: its order entries are
 * 0 by then). */
static inline void copy_one(const void *arg, uint32_t s)
{
    const pleat_frame *f = arg;
    size_t ahead = f->order[s + WALK_AHEAD], i = f->order[s];
    __builtin_prefetch(f->particles + 4 * ahead);
    memcpy(f->pos + 4 * (size_t)s, f->particles + 4 * i, 4 * sizeof(float));
    if (f->rest_sorted) {
        __builtin_prefetch(f->rest + 4 * ahead);
        memcpy(f->rest_sorted + 4 * (size_t)s, f->rest + 4 * i, 4 * sizeof(float));
    }
}

static void copy_task(void *arg, uint32_t part)
{
    const pleat_frame *f = arg;
    pleat_walk_columns(f->keys, pleat_part_begin(f, part), pleat_part_begin(f, part + 1), copy_one,
                       f);
}

int pleat_cpu_gather(pleat_frame *f, pleat_pool *pool, uint64_t *sorted, int column_pass)
{
    _Static_assert(WALK_AHEAD <= PLEAT_PAD, "copy_one reads order up to WALK_AHEAD past the end");
    f->packed = sorted;
    f->copy_later = column_pass && f->m >= PLEAT_GATHER_WALK_FROM;
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
    if (f->copy_later && !broken) /* else not key order: the sort goes on */
        pleat_pool_run(pool, f->parts, copy_task, f);
    return !broken;
}
