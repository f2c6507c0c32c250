/*
 * The order in which the apply and the gather's second pass visit the
 * sorted particles of a cloth that comes in mesh order: a few columns side
 * by side.
 *
 * Both visit every sorted particle once and touch the caller's array at
 * its place there; which particle comes first changes no result. Key
 * order walks one column at a time. On a sheet laid across the sweep axis,
 * one column's particles lie a mesh row apart in the caller's array, and
 * the particles that share their cache lines lie in the next columns. When
 * a row is a multiple of 4 KiB (a 256-wide sheet of 16-byte particles) all
 * of a column's lines fall into the same few cache sets, which hold fewer
 * lines than a column has, so every column that comes back to a line
 * fetches it again (AVX2, one thread, folded sheet: the apply took 3.5x
 * its time on a 255-wide sheet, 64k or 1M); and once the caller's array is
 * past the caches, any row length gives that. Taking a few columns side by
 * side, a particle of each in turn, visits the particles of
 * a line one after another. Runs of columns shorter than PLEAT_WALK_LONG
 * are visited in key order.
 *
 * Only for particles in mesh order (the gather's check, cpu/order.c): in a
 * random order no two columns share lines, and 4 streams of random writes
 * are slower than one (apply, 1M: cloud 20%, crumpled sheet 55%).
 */
#ifndef PLEAT_CPU_WALK_H
#define PLEAT_CPU_WALK_H

#include "core/grid.h"

#include <stdint.h>

/* At most this many streams (the callers' counts are in cpu/apply.c and
 * cpu/gather.c). */
#define PLEAT_WALK_MAX_STREAMS 8
#define PLEAT_WALK_LONG 32u

/* Visits once each of the sorted positions [begin, end) (keys sorted over
 * them; keys[end] may be read), calling visit(arg, s), `streams` columns
 * side by side (2 to PLEAT_WALK_MAX_STREAMS, a constant). Inlined, so visit
 * is too. */
static inline __attribute__((always_inline)) void
pleat_walk_columns(const uint32_t *keys, uint32_t begin, uint32_t end, unsigned streams,
                   void (*visit)(const void *, uint32_t), const void *arg)
{
    const unsigned S = streams;
    uint32_t at[PLEAT_WALK_MAX_STREAMS], stop[PLEAT_WALK_MAX_STREAMS], next = begin;
    unsigned k = 0;
    for (;;) {
        while (k < S && next < end) { /* take the next long column, or visit a short run */
            uint32_t last = keys[next] | PLEAT_KEY_SWEEP_MASK; /* hash1 <= 254: no wrap */
            if (end - next < PLEAT_WALK_LONG || keys[next + PLEAT_WALK_LONG - 1] > last) {
                uint32_t e = end - next < PLEAT_WALK_LONG ? end : next + PLEAT_WALK_LONG;
                for (; next < e; ++next)
                    visit(arg, next);
                continue;
            }
            at[k] = next;
            next += PLEAT_WALK_LONG;
            next += pleat_lower_bound(keys + next, end - next, last + 1u);
            stop[k++] = next;
        }
        if (k == 0)
            return;
        uint32_t steps = UINT32_MAX; /* until the shortest column ends */
        for (unsigned j = 0; j < k; ++j)
            steps = stop[j] - at[j] < steps ? stop[j] - at[j] : steps;
        if (k == S) {
            for (uint32_t t = 0; t < steps; ++t) {
#pragma GCC unroll 8
                for (unsigned j = 0; j < S; ++j)
                    visit(arg, at[j] + t);
            }
        } else { /* the last columns of the range */
            for (uint32_t t = 0; t < steps; ++t)
                for (unsigned j = 0; j < k; ++j)
                    visit(arg, at[j] + t);
        }
        unsigned kept = 0;
        for (unsigned j = 0; j < k; ++j) {
            if (at[j] + steps < stop[j]) {
                at[kept] = at[j] + steps;
                stop[kept++] = stop[j];
            }
        }
        k = kept;
    }
}

#endif
