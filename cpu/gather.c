/* Stage 2 kernels (per ISA), after the radix sort: lay the particles out in
 * key order, 16 bytes each, with their sort keys, so the sweep reads
 * candidates contiguously. Rest positions are copied too only from
 * PLEAT_SORTED_REST_FROM particles on; below, the sweep reads the few it
 * needs, those of close pairs, from the caller's array. A call that
 * corrects gets its fixed-point sums zeroed here too, saving a pass. On the
 * way it checks the column order cpu/order.c asks about. The driver,
 * pleat_cpu_gather(), is in cpu/order.c.
 *
 * W sorted entries at a time: their halves split into keys and order, and
 * the check made on W lanes at once, each against the lane before (AVX2,
 * one thread, sort stage: 64k sheets and cloud 10-20% faster than one entry
 * at a time, 1M cloud 22%).
 *
 * After the column pass, from PLEAT_GATHER_WALK_FROM particles on, the
 * particles are copied in a second pass, once the check has held, walking
 * columns side by side (cpu/walk.h): the caller's arrays are then past the
 * caches, and in key order a cache line of them comes back once per column
 * that holds one of its particles (AVX2, one thread, folded sheet, sort:
 * 1M 12.6 -> 11.1 ms, 1023-wide 9.9 -> 8.5, 4M 63 -> 53; 256k 1.60 -> 1.53;
 * at 128k the second pass cost more than it saved, 0.26 -> 0.35). */
#include "cpu.h"
#include "simd.h"
#include "walk.h"

#include <stdint.h>
#include <string.h>

/* How far ahead the particle reads are prefetched: key order jumps around
 * the caller's array, which the hardware prefetcher cannot follow (AVX2, 1
 * thread, sort stage, 16 -> 128 ahead: 1M cloud 10.5 -> 7.5 ms, 4M 65.6 ->
 * 48.9, 1M crumpled 14.4 -> 10.9; 64k cloud 0.239 -> 0.247; 256 ahead no
 * better). In the walk, each column's own particles ahead (4M folded: 8
 * ahead 52.5 ms, 16 ahead 54.7; none, 63). */
#define AHEAD 128u
#define WALK_AHEAD 8u
/* The walk's columns side by side. From WALK_WIDE_FROM particles on, 8
 * (two cache lines of a mesh row) halve the times a row's page is come back
 * to (AVX2, 1 thread, folded sheet, sort: 4M 50 -> 42.3 ms, 1M 10.7 -> 8.7,
 * 512k 3.5 -> 2.9); below, 4 did better (256k: 1.42 -> 1.85 with 8). */
#define WALK_STREAMS 4u
#define WALK_WIDE_STREAMS 8u
#define WALK_WIDE_FROM (1u << 19)
/* the sums zeroed in a step were read in it; the prefetches read further */
_Static_assert(AHEAD >= PLEAT_W, "prefetches read entries not yet zeroed");
_Static_assert(WALK_AHEAD <= PLEAT_PAD, "copy_one reads order up to WALK_AHEAD past the end");

/* Copies sorted particle s (caller's particle i) and its rest position. */
static inline void copy_particle(const pleat_frame *f, uint32_t s, uint32_t i)
{
    memcpy(f->pos + 4 * (size_t)s, f->particles + 4 * (size_t)i, 4 * sizeof(float));
    if (f->rest_sorted)
        memcpy(f->rest_sorted + 4 * (size_t)s, f->rest + 4 * (size_t)i, 4 * sizeof(float));
}

static inline void prefetch_particle(const pleat_frame *f, size_t i)
{
    __builtin_prefetch(f->particles + 4 * i);
    if (f->rest_sorted)
        __builtin_prefetch(f->rest + 4 * i);
}

/* One chunk's sorted entries [s, end): keys, order, the copies when
 * `copy`, the sums zeroed; returns whether the check found a break. The
 * frame is read into locals: the copies and zeroing stores could otherwise
 * alias it, and every field would be loaded again per entry. */
static unsigned lay_out(const pleat_frame *f, uint32_t s, uint32_t end, int copy)
{
    const uint64_t *packed = f->packed;
    const float *particles = f->particles, *rest = f->rest;
    uint32_t *restrict keys = f->keys, *restrict order = f->order;
    float *restrict pos = f->pos, *restrict rest_sorted = f->rest_sorted;
    int64_t *acc_z = f->acc_z, *restrict acc_xy = f->acc_xy; /* acc_z is packed */
    /* the chunk's first particle is checked after the stage: against
     * (0, 0) nothing breaks */
    uint32_t last_key = 0, last = 0;
    unsigned broken = 0;
    for (; end - s >= PLEAT_W; s += PLEAT_W) {
        /* prefetches stay in the chunk: past it, another thread may have
         * zeroed the entries already */
        for (uint32_t l = 0; copy && end - s >= AHEAD + PLEAT_W && l < PLEAT_W; ++l) {
            size_t ahead = (uint32_t)packed[s + AHEAD + l];
            __builtin_prefetch(particles + 4 * ahead);
            if (rest_sorted)
                __builtin_prefetch(rest + 4 * ahead);
        }
        vu i, key;
        vu_load_halves(packed + s, &i, &key);
        vu_store(keys + s, key);
        vu_store(order + s, i);
        vu key0 = vu_shift_in(key, last_key), i0 = vu_shift_in(i, last);
        broken |= vu_eq(vu_srl(key0, 16), vu_srl(key, 16)) & (vu_lt(key, key0) | vu_lt(i, i0));
        last_key = vu_last(key);
        last = vu_last(i);
        for (uint32_t l = 0; copy && l < PLEAT_W; ++l) {
            size_t q = s + l, from = order[q];
            memcpy(pos + 4 * q, particles + 4 * from, 4 * sizeof(float));
            if (rest_sorted)
                memcpy(rest_sorted + 4 * q, rest + 4 * from, 4 * sizeof(float));
        }
        if (acc_z) { /* packed[s, s + W) is read: its slots become the z sums */
            memset(acc_z + s, 0, PLEAT_W * sizeof(int64_t));
            memset(acc_xy + 2 * (size_t)s, 0, 2 * PLEAT_W * sizeof(int64_t));
        }
    }
    for (; s < end; ++s) { /* the last few, one at a time */
        uint64_t v = packed[s];
        uint32_t i = (uint32_t)v, key = (uint32_t)(v >> 32);
        broken |= pleat_breaks_column(last_key, last, key, i);
        keys[s] = last_key = key;
        order[s] = last = i;
        if (copy)
            copy_particle(f, s, i);
        if (acc_z) {
            acc_z[s] = 0;
            acc_xy[2 * (size_t)s] = acc_xy[2 * (size_t)s + 1] = 0;
        }
    }
    return broken;
}

void PLEAT_KERNEL(gather_task)(void *arg, uint32_t chunk)
{
    pleat_frame *f = arg;
    uint32_t begin = pleat_chunk_begin(chunk), end = pleat_chunk_end(chunk, f->m);
    f->chunks[chunk].out_of_order = lay_out(f, begin, end, !f->copy_later) != 0;
}

/* The second pass: one particle, and a prefetch for the one WALK_AHEAD
 * further down its column (in the padding at most: its order entries are
 * 0 by then). */
static inline void copy_one(const void *arg, uint32_t s)
{
    const pleat_frame *f = arg;
    prefetch_particle(f, f->order[s + WALK_AHEAD]);
    copy_particle(f, s, f->order[s]);
}

void PLEAT_KERNEL(gather_copy_task)(void *arg, uint32_t part)
{
    const pleat_frame *f = arg;
    uint32_t begin = pleat_part_begin(f, part), end = pleat_part_begin(f, part + 1);
    if (f->m >= WALK_WIDE_FROM)
        pleat_walk_columns(f->keys, begin, end, WALK_WIDE_STREAMS, copy_one, f);
    else
        pleat_walk_columns(f->keys, begin, end, WALK_STREAMS, copy_one, f);
}
