/*
 * Stage 3 on the GPU: the warp-parallel key-range sweep (DESIGN.md §3).
 *
 * A warp takes 32 consecutive sorted particles, one per lane. Consecutive
 * particles share a column and nearly the same key range, so for each column
 * among its lanes the warp takes the union of their ranges in the 5 columns
 * to test, loads it 32 candidates at a time (coalesced, one per lane) and
 * passes each candidate to every lane with a shuffle; each lane keeps the
 * candidates inside its own key range and tests them against its particle.
 * Pairs, tests and corrections are exactly the CPU's: the same ranges, the
 * same core/pair.h arithmetic, and integer sums, which atomics cannot reorder.
 */
#include "frame.cuh"

#define FULL 0xffffffffu

/* A zero (a pinned side, coincident particles) costs no atomic. */
__device__ static void add_sum(unsigned long long *sum, int64_t v)
{
    if (v != 0)
        atomicAdd(sum, (unsigned long long)v); /* two's complement: adds v */
}

/* a and b are within the distance: the rest rule, then count, list or
 * correct. a is the lane's own particle: its corrections add up in `own`
 * and reach memory once, after the sweep (an integer sum, so the bits are
 * the same), which halves the atomics. */
__device__ static void on_close(const pleat_cuda_frame &f, uint32_t a, uint32_t b, float dx,
                                float dy, float dz, unsigned long long *pairs, int64_t own[3])
{
    const pleat_pair_consts *k = &f.consts;
    if (f.rx && pleat_pair_rest_ignored(pleat_length2(f.rx[b] - f.rx[a], f.ry[b] - f.ry[a],
                                                      f.rz[b] - f.rz[a]),
                                        k))
        return;
    ++*pairs;
    if (f.mode == PLEAT_CUDA_LIST) {
        unsigned long long slot = atomicAdd(&f.counters->listed, 1ull);
        if (slot < f.capacity)
            f.list[slot] = pleat_pair_pack(f.order[a], f.order[b], f.pair_shift);
    } else if (f.mode == PLEAT_CUDA_CORRECT) {
        int64_t ci[3], cj[3];
        pleat_pair_correction(dx, dy, dz, f.w[a], f.w[b], k, ci, cj);
        for (int c = 0; c < 3; ++c) {
            own[c] += ci[c];
            add_sum(&f.acc[(size_t)c * f.m + b], -cj[c]);
        }
    }
}

__global__ void sweep_kernel(pleat_cuda_frame f)
{
    if (f.counters->flags != 0)
        return;
    const uint32_t lane = threadIdx.x & 31;
    const uint32_t base = (blockIdx.x * blockDim.x + threadIdx.x) & ~31u;
    if (base >= f.m)
        return;
    const uint32_t a = base + lane, reach = f.grid->sweep_reach;
    const bool active = a < f.m;
    uint32_t key = active ? f.keys[a] : 0, lo = 0, hi = 0;
    pleat_key_range(key, reach, &lo, &hi);
    const float xa = active ? f.x[a] : 0.0f, ya = active ? f.y[a] : 0.0f,
                za = active ? f.z[a] : 0.0f;
    unsigned long long pairs = 0, tests = 0;
    int64_t own[3] = {0, 0, 0};

    unsigned pending = __ballot_sync(FULL, active);
    while (pending) {
        /* the lanes of one column: sorted keys make them a run */
        const uint32_t column = __shfl_sync(FULL, key >> 16, __ffs(pending) - 1);
        const unsigned group = __ballot_sync(FULL, active && (key >> 16) == column);
        pending &= ~group;
        const bool mine = (group >> lane) & 1;
        const uint32_t first_lane = __ffs(group) - 1, last_lane = 31 - __clz(group);
        const uint32_t lo_min = __shfl_sync(FULL, lo, first_lane);
        const uint32_t hi_max = __shfl_sync(FULL, hi, last_lane);
        for (int c = 0; c < PLEAT_NUM_COLUMNS; ++c) {
            const uint32_t off = pleat_column_offset(c);
            /* own column: only later particles */
            uint32_t begin = c == 0 ? base + first_lane + 1
                                    : pleat_lower_bound(f.keys, f.m, lo_min + off);
            uint32_t end = pleat_lower_bound(f.keys, f.m, hi_max + off);
            for (size_t t = begin; t < end; t += 32) { /* 64-bit: must not wrap near 2^32 */
                const uint32_t b = (uint32_t)(t + lane);
                const bool have = t + lane < end;
                const uint32_t kb = have ? f.keys[b] : 0;
                const float xb = have ? f.x[b] : 0.0f, yb = have ? f.y[b] : 0.0f,
                            zb = have ? f.z[b] : 0.0f;
                const uint32_t n = end - t < 32 ? (uint32_t)(end - t) : 32;
                for (uint32_t j = 0; j < n; ++j) {
                    const uint32_t kj = __shfl_sync(FULL, kb, j);
                    const float dx = __shfl_sync(FULL, xb, j) - xa;
                    const float dy = __shfl_sync(FULL, yb, j) - ya;
                    const float dz = __shfl_sync(FULL, zb, j) - za;
                    const uint32_t bj = (uint32_t)(t + j);
                    const bool in_range = mine && (c == 0 ? bj > a && kj < hi
                                                          : kj >= lo + off && kj < hi + off);
                    if (!in_range)
                        continue;
                    ++tests;
                    if (pleat_pair_within(pleat_length2(dx, dy, dz), &f.consts))
                        on_close(f, a, bj, dx, dy, dz, &pairs, own);
                }
            }
        }
    }
    if (active)
        for (int c = 0; c < 3; ++c)
            add_sum(&f.acc[(size_t)c * f.m + a], own[c]);
    for (int o = 16; o > 0; o /= 2) {
        pairs += __shfl_down_sync(FULL, pairs, o);
        tests += __shfl_down_sync(FULL, tests, o);
    }
    if (lane == 0) {
        atomicAdd(&f.counters->pairs, pairs);
        atomicAdd(&f.counters->tests, tests);
    }
}

cudaError_t pleat_cuda_sweep(const pleat_cuda_frame &f, cudaStream_t stream)
{
    return pleat_cuda_launch(sweep_kernel, pleat_cuda_blocks(f.m), PLEAT_CUDA_BLOCK, stream, f);
}
