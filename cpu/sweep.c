/*
 * Stage 3 kernel (per ISA): the key-range sweep and the narrow phase
 * (DESIGN.md §1).
 *
 * Particles are walked in key order in fixed-size chunks. Each tests its own
 * column (only later particles) and 4 neighbouring columns whose keys are all
 * larger, so every pair is met once. The key range of a column only moves
 * forward as the keys grow, so per column a [first, last) cursor into the
 * sorted keys is advanced instead of searched; a chunk starts its cursors
 * with a binary search. Both the cursor advance and the distance test run W
 * candidates at a time (simd.h); a hit is handled by scalar code that redoes
 * the same float operations, so every ISA finds and corrects the same pairs.
 */
#include "cpu.h"
#include "simd.h"

#include <math.h>

/* First position whose key is >= target. */
static uint32_t lower_bound(const uint32_t *keys, uint32_t n, uint32_t target)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < target)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* From p, the first position whose key is >= target. The padding keys are
 * UINT32_MAX, so the scan stops at the end by itself. */
static inline uint32_t advance(const uint32_t *keys, uint32_t p, uint32_t target)
{
    const vu t = vu_set1(target);
    for (;;) {
        unsigned below = vu_lt(vu_load(keys + p), t);
        if (below != PLEAT_ALL_LANES) /* sorted: the lanes below form a prefix */
            return p + (unsigned)__builtin_ctz(~below);
        p += PLEAT_W;
    }
}

static inline void add_fixed(int64_t *acc, const int64_t v[3], int sign, int shared)
{
    for (int a = 0; a < 3; ++a) {
        int64_t d = sign > 0 ? v[a] : -v[a];
        if (shared)
            __atomic_fetch_add(&acc[a], d, __ATOMIC_RELAXED);
        else
            acc[a] += d;
    }
}

typedef struct sweep_state {
    const pleat_frame *f;
    uint64_t pairs, tests;
    uint64_t *out; /* LIST: next slot */
} sweep_state;

/* a and b are within the distance now; apply the rest rule and act. */
static void on_close(sweep_state *st, uint32_t a, uint32_t b)
{
    const pleat_frame *f = st->f;
    const pleat_pair_consts *k = &f->consts;
    if (f->rx && pleat_pair_rest_ignored(pleat_length2(f->rx[b] - f->rx[a], f->ry[b] - f->ry[a],
                                                       f->rz[b] - f->rz[a]),
                                         k))
        return;
    st->pairs++;
    if (f->mode == PLEAT_SWEEP_LIST) {
        uint32_t i = f->order[a], j = f->order[b];
        *st->out++ = i < j ? (uint64_t)i << 32 | j : (uint64_t)j << 32 | i;
    } else if (f->mode == PLEAT_SWEEP_CORRECT) {
        int64_t ci[3], cj[3];
        pleat_pair_correction(f->x[b] - f->x[a], f->y[b] - f->y[a], f->z[b] - f->z[a], f->w[a],
                              f->w[b], k, ci, cj);
        add_fixed(f->acc + 3 * (size_t)a, ci, +1, f->shared_acc);
        add_fixed(f->acc + 3 * (size_t)b, cj, -1, f->shared_acc);
    }
}

static inline void test_range(sweep_state *st, uint32_t a, uint32_t begin, uint32_t end)
{
    const pleat_frame *f = st->f;
    const vf xa = vf_set1(f->x[a]), ya = vf_set1(f->y[a]), za = vf_set1(f->z[a]);
    const vf d2 = vf_set1(f->consts.distance2);
    st->tests += end - begin;
    for (uint32_t b = begin; b < end; b += PLEAT_W) {
        vf dx = vf_sub(vf_load(f->x + b), xa);
        vf dy = vf_sub(vf_load(f->y + b), ya);
        vf dz = vf_sub(vf_load(f->z + b), za);
        unsigned close = vf_le(vf_length2(dx, dy, dz), d2) & pleat_first_lanes(end - b);
        while (close) {
            on_close(st, a, b + pleat_lowest_lane(close));
            close &= close - 1;
        }
    }
}

void PLEAT_KERNEL(sweep_task)(void *arg, uint32_t chunk)
{
    pleat_frame *f = arg;
    const uint32_t *keys = f->keys;
    const uint32_t reach = f->grid.sweep_reach;
    uint32_t n = f->m, begin = pleat_chunk_begin(chunk), end = pleat_chunk_end(chunk, n);
    sweep_state st = {f, 0, 0, f->list ? f->list + f->chunks[chunk].pairs : NULL};

    uint32_t first[PLEAT_NUM_COLUMNS], last[PLEAT_NUM_COLUMNS];
    uint32_t lo, hi;
    pleat_key_range(keys[begin], reach, &lo, &hi);
    for (int c = 1; c < PLEAT_NUM_COLUMNS; ++c)
        first[c] = last[c] = lower_bound(keys, n, lo + pleat_column_offset(c));

    for (uint32_t a = begin; a < end; ++a) {
        pleat_key_range(keys[a], reach, &lo, &hi);
        test_range(&st, a, a + 1, advance(keys, a + 1, hi));
        for (int c = 1; c < PLEAT_NUM_COLUMNS; ++c) {
            uint32_t off = pleat_column_offset(c);
            first[c] = advance(keys, first[c], lo + off);
            last[c] = advance(keys, last[c] > first[c] ? last[c] : first[c], hi + off);
            test_range(&st, a, first[c], last[c]);
        }
    }
    f->chunks[chunk].pairs = st.pairs;
    f->chunks[chunk].tests = st.tests;
}
