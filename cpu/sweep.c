/*
 * Stage 3: the key-range sweep and the narrow phase (DESIGN.md §1).
 *
 * Particles are walked in key order in fixed-size chunks. Each tests its own
 * column (only later particles) and 4 neighbouring columns whose keys are all
 * larger, so every pair is met once. The key range of a column only moves
 * forward as the keys grow, so per column a [first, last) cursor into the
 * sorted keys is advanced instead of searched; a chunk starts its cursors
 * with a binary search.
 */
#include "cpu.h"

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

static uint32_t advance(const uint32_t *keys, uint32_t n, uint32_t p, uint32_t target)
{
    while (p < n && keys[p] < target)
        ++p;
    return p;
}

static void add_fixed(int64_t *acc, const int64_t v[3], int sign, int shared)
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
    pleat_frame *f;
    uint64_t pairs, tests;
    uint64_t *out; /* LIST: next slot */
} sweep_state;

static void test_range(sweep_state *st, uint32_t a, uint32_t begin, uint32_t end)
{
    const pleat_frame *f = st->f;
    const pleat_pair_consts *k = &f->consts;
    st->tests += end - begin;
    for (uint32_t b = begin; b < end; ++b) {
        float dx = f->x[b] - f->x[a], dy = f->y[b] - f->y[a], dz = f->z[b] - f->z[a];
        float d2 = pleat_length2(dx, dy, dz);
        if (!pleat_pair_within(d2, k))
            continue;
        if (f->rx && pleat_pair_rest_ignored(pleat_length2(f->rx[b] - f->rx[a], f->ry[b] - f->ry[a],
                                                           f->rz[b] - f->rz[a]),
                                             k))
            continue;
        st->pairs++;
        if (f->mode == PLEAT_SWEEP_LIST) {
            uint32_t i = f->order[a], j = f->order[b];
            *st->out++ = i < j ? (uint64_t)i << 32 | j : (uint64_t)j << 32 | i;
        } else if (f->mode == PLEAT_SWEEP_CORRECT) {
            int64_t ci[3], cj[3];
            pleat_pair_correction(dx, dy, dz, f->w[a], f->w[b], k, ci, cj);
            add_fixed(f->acc + 3 * (size_t)a, ci, +1, f->shared_acc);
            add_fixed(f->acc + 3 * (size_t)b, cj, -1, f->shared_acc);
        }
    }
}

static void sweep_task(void *arg, uint32_t chunk)
{
    pleat_frame *f = arg;
    const uint32_t *keys = f->keys;
    uint32_t n = f->m, begin = chunk * PLEAT_CHUNK, end = pleat_chunk_end(chunk, n);
    sweep_state st = {f, 0, 0, f->list ? f->list + f->chunks[chunk].pairs : NULL};

    uint32_t first[PLEAT_NUM_COLUMNS], last[PLEAT_NUM_COLUMNS];
    uint32_t lo, hi;
    pleat_key_range(keys[begin], f->grid.sweep_reach, &lo, &hi);
    for (int c = 1; c < PLEAT_NUM_COLUMNS; ++c)
        first[c] = last[c] = lower_bound(keys, n, lo + pleat_column_offset(c));

    for (uint32_t a = begin; a < end; ++a) {
        pleat_key_range(keys[a], f->grid.sweep_reach, &lo, &hi);
        test_range(&st, a, a + 1, advance(keys, n, a + 1, hi));
        for (int c = 1; c < PLEAT_NUM_COLUMNS; ++c) {
            uint32_t off = pleat_column_offset(c);
            first[c] = advance(keys, n, first[c], lo + off);
            last[c] = advance(keys, n, last[c] > first[c] ? last[c] : first[c], hi + off);
            test_range(&st, a, first[c], last[c]);
        }
    }
    f->chunks[chunk].pairs = st.pairs;
    f->chunks[chunk].tests = st.tests;
}

void pleat_cpu_sweep(pleat_frame *f, pleat_pool *pool)
{
    pleat_pool_run(pool, pleat_chunks(f->m), sweep_task, f);
}
