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

/* A particle's candidates as one list of `total` slots: entry t is slot
 * t + shift[k] for the last column k with start[k] <= t. */
typedef struct pleat_candidates {
    uint32_t start[PLEAT_NUM_COLUMNS], shift[PLEAT_NUM_COLUMNS], total;
} pleat_candidates;

/* The searches of pleat_find_candidates: a first and an end in each column,
 * but for the own column's first (the next slot). */
#define PLEAT_COLUMN_SEARCHES (2 * PLEAT_NUM_COLUMNS - 1)

/* Search s's target: column (s + 1) / 2's first key (s odd) or end (s even)
 * of the range [lo, hi] moved into that column. */
PLEAT_HD uint32_t pleat_search_target(int s, uint32_t lo, uint32_t hi)
{
    return (s % 2 ? lo : hi) + pleat_column_offset((s + 1) / 2);
}

/* The candidates of the particle in slot a of the sorted keys.
 *
 * Its 9 searches, each pleat_lower_bound() inside one column, run side by
 * side, one halving of each per round: a round's loads do not depend on each
 * other, so a GPU lane waits for about log2(keys in a column) loads in a row,
 * where 9 searches one after the other would wait 9 times as long before the
 * sweep's first step. Each search still finds the first key >= its target. */
PLEAT_HD pleat_candidates pleat_find_candidates(const uint32_t *cols, const uint32_t *keys,
                                                uint32_t a, uint32_t reach)
{
    uint32_t lo, hi, at[PLEAT_COLUMN_SEARCHES], len[PLEAT_COLUMN_SEARCHES];
    pleat_key_range(keys[a], reach, &lo, &hi);
    for (int c = 0; c < PLEAT_NUM_COLUMNS; ++c) { /* [at, at + len): the whole column */
        const uint32_t column = (lo + pleat_column_offset(c)) >> 16; /* hi's too */
        const uint32_t first = cols[column], n = cols[column + 1] - first;
        for (int s = c == 0 ? 0 : 2 * c - 1; s <= 2 * c; ++s) {
            at[s] = first;
            len[s] = n;
        }
    }
    for (int searching = 1; searching;) {
        /* every load first, none under a branch (a done search reads slot a
         * and drops it), so that they wait together */
        uint32_t probe[PLEAT_COLUMN_SEARCHES];
        for (int s = 0; s < PLEAT_COLUMN_SEARCHES; ++s)
            probe[s] = keys[len[s] != 0 ? at[s] + len[s] / 2 : a];
        searching = 0;
        for (int s = 0; s < PLEAT_COLUMN_SEARCHES; ++s) {
            const uint32_t half = len[s] / 2;
            if (len[s] != 0 && probe[s] < pleat_search_target(s, lo, hi)) {
                at[s] += half + 1;
                len[s] -= half + 1;
            } else {
                len[s] = half;
            }
            searching |= len[s] != 0;
        }
    }
    pleat_candidates l;
    l.total = 0;
    for (int c = 0; c < PLEAT_NUM_COLUMNS; ++c) {
        /* own column: only later particles */
        const uint32_t begin = c == 0 ? a + 1 : at[2 * c - 1], end = at[2 * c];
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
