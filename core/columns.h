/*
 * Column starts and candidate lists: how the CUDA sweep (cuda/sweep.cu)
 * reads the sorted keys, kept here, shared by host and device, so that the
 * CPU tests can check it against the ranges of a brute-force
 * reading of the keys (tests/test_grid.c).
 *
 * A column is key >> 16 (both hash cells). cols[c], for c = 0 ..
 * PLEAT_COLUMNS, is the first sorted slot whose column is c or more, so a
 * search for a key runs inside that key's column only. A particle's
 * candidates are its key ranges in the 5 columns it tests (in its own
 * column, only the later slots), read as one list.
 */
#ifndef PLEAT_CORE_COLUMNS_H
#define PLEAT_CORE_COLUMNS_H

#include "grid.h"

#define PLEAT_COLUMNS 65536u /* columns a key can name */

/* cols[c] of the sorted keys[0..n), c <= PLEAT_COLUMNS. */
PLEAT_HD uint32_t pleat_column_start(const uint32_t *keys, uint32_t n, uint32_t c)
{
    return c >= PLEAT_COLUMNS ? n : pleat_lower_bound(keys, n, c << 16);
}

/* pleat_lower_bound(keys, n, target) through the column starts: every key of
 * an earlier column is smaller than target, of a later one larger. */
PLEAT_HD uint32_t pleat_column_find(const uint32_t *cols, const uint32_t *keys, uint32_t target)
{
    const uint32_t first = cols[target >> 16], last = cols[(target >> 16) + 1];
    return first + pleat_lower_bound(keys + first, last - first, target);
}

/* A particle's candidates as one list of `total` slots: entry t is slot
 * t + shift[k] for the last column k with start[k] <= t. */
typedef struct pleat_candidates {
    uint32_t start[PLEAT_NUM_COLUMNS], shift[PLEAT_NUM_COLUMNS], total;
} pleat_candidates;

/* The candidates of the particle in slot a of the sorted keys. */
PLEAT_HD pleat_candidates pleat_find_candidates(const uint32_t *cols, const uint32_t *keys,
                                                uint32_t a, uint32_t reach)
{
    pleat_candidates l;
    uint32_t lo, hi;
    pleat_key_range(keys[a], reach, &lo, &hi);
    l.total = 0;
    for (int c = 0; c < PLEAT_NUM_COLUMNS; ++c) {
        const uint32_t off = pleat_column_offset(c);
        /* own column: only later particles */
        const uint32_t begin = c == 0 ? a + 1 : pleat_column_find(cols, keys, lo + off);
        const uint32_t end = pleat_column_find(cols, keys, hi + off);
        l.start[c] = l.total;
        l.shift[c] = begin - l.total; /* mod 2^32: t + shift = begin + (t - start) */
        l.total += end - begin;
    }
    return l;
}

/* Entry t < l->total of the list. */
PLEAT_HD uint32_t pleat_candidate(const pleat_candidates *l, uint32_t t)
{
    uint32_t shift = l->shift[0];
    for (int c = 1; c < PLEAT_NUM_COLUMNS; ++c)
        shift = t >= l->start[c] ? l->shift[c] : shift;
    return t + shift;
}

#endif
