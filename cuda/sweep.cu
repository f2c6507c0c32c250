/*
 * Stage 3 on the GPU: the warp-parallel key-range sweep.
 *
 * A warp takes 32 consecutive sorted particles, one per lane. Each lane finds
 * its own key ranges in the 5 columns (core/columns.h: searches inside one
 * column, through the column starts) and walks them as one list, one
 * candidate per step; the warp takes as many steps as its longest list.
 * Consecutive particles have nearly the same ranges, so at each step the 32
 * lanes read neighbouring candidates: together they read the union of their
 * ranges, coalesced, and L1 serves the overlap.
 *
 * A close pair is not corrected where it is found (its lane alone would run
 * the correction while the 31 others wait): it goes into the warp's queue in
 * shared memory, and each time 32 are queued the whole warp corrects them,
 * one per lane. Particle a's share of a correction is summed in shared
 * memory for a's lane, b's goes to memory at once.
 *
 * Measured on an H200 at 1M cloud particles, this sweep took a quarter of
 * the time of the first version, which loaded the union of the warp's ranges
 * and passed every candidate to every lane (most lanes then skipped it), and
 * half that of lanes correcting their own pairs as they found them.
 *
 * Pairs, tests and corrections are exactly the CPU's: the same ranges, the
 * same core/pair.h arithmetic, and integer sums, which neither atomics nor
 * the queue can reorder.
 */
#include "frame.cuh"
#include "core/columns.h"

#define FULL 0xffffffffu
#define WARPS (PLEAT_CUDA_BLOCK / 32)
/* at most 31 left over after a flush, plus 32 found in one step */
#define QUEUE 64

/* A warp's pairs waiting for their correction (particle a as its lane), and
 * the sums of its particles' own shares, one per lane and axis. */
namespace {
struct warp_share {
    uint32_t b[QUEUE];
    uint8_t lane[QUEUE];
    unsigned long long own[3][32];
};
} // namespace

/* A zero (a pinned side, coincident particles) costs no atomic. */
__device__ static void add_sum(unsigned long long *sum, int64_t v)
{
    if (v != 0)
        atomicAdd(sum, (unsigned long long)v); /* two's complement: adds v */
}

/* Corrects the pair of b and the particle of lane `lane` of the warp whose
 * first slot is base, with pleat_pair_correction() as the CPU does. */
__device__ static void correct(const pleat_cuda_frame &f, warp_share *share, uint32_t base,
                               uint32_t lane, uint32_t b)
{
    const float4 pa = f.pos[base + lane], pb = f.pos[b];
    int64_t ci[3], cj[3];
    pleat_pair_correction(pb.x - pa.x, pb.y - pa.y, pb.z - pa.z, pa.w, pb.w, &f.consts, ci, cj);
    for (int c = 0; c < 3; ++c) {
        add_sum(&f.acc[(size_t)c * f.m + b], -cj[c]);
        if (ci[c] != 0)
            atomicAdd(&share->own[c][lane], (unsigned long long)ci[c]);
    }
}

/* How many lanes below `lane` are set in a ballot: a hit lane's place among
 * the warp's hits of one step. */
__device__ static uint32_t lanes_below(unsigned ballot, uint32_t lane)
{
    return __popc(ballot & ((1u << lane) - 1));
}

/* Queues the lanes' close pairs (lane, b where hit); every lane gets the
 * same *queued. Then, when 32 or more wait (at most 63), corrects the last
 * 32, one per lane. All 32 lanes call it. */
__device__ static void enqueue(const pleat_cuda_frame &f, warp_share *share, uint32_t base,
                               uint32_t lane, bool hit, uint32_t b, uint32_t *queued)
{
    const unsigned found = __ballot_sync(FULL, hit);
    if (hit) {
        const uint32_t at = *queued + lanes_below(found, lane);
        share->b[at] = b;
        share->lane[at] = (uint8_t)lane;
    }
    *queued += __popc(found);
    if (*queued >= 32) {
        __syncwarp();
        *queued -= 32;
        correct(f, share, base, share->lane[*queued + lane], share->b[*queued + lane]);
        __syncwarp();
    }
}

/* Corrects what is left in the queue and adds each lane's own sums. */
__device__ static void finish(const pleat_cuda_frame &f, warp_share *share, uint32_t base,
                              uint32_t lane, uint32_t queued)
{
    __syncwarp();
    if (lane < queued)
        correct(f, share, base, share->lane[lane], share->b[lane]);
    __syncwarp();
    if (base + lane < f.m)
        for (int c = 0; c < 3; ++c)
            add_sum(&f.acc[(size_t)c * f.m + base + lane], (int64_t)share->own[c][lane]);
}

/* Whether a and b (within the distance) make a pair: the rest rule. */
__device__ static bool is_pair(const pleat_cuda_frame &f, uint32_t a, uint32_t b)
{
    if (!f.rest_pos)
        return true;
    const float4 ra = f.rest_pos[a], rb = f.rest_pos[b];
    return !pleat_pair_rest_ignored(pleat_length2(rb.x - ra.x, rb.y - ra.y, rb.z - ra.z),
                                    &f.consts);
}

/* LIST: the lanes' close pairs (a, b where hit) into the list, in the next
 * free entries: one atomic per warp and step, where one per pair would
 * queue every pair of the call on the same counter. All 32 lanes call it. */
__device__ static void list_pairs(const pleat_cuda_frame &f, uint32_t lane, bool hit, uint32_t a,
                                  uint32_t b)
{
    const unsigned found = __ballot_sync(FULL, hit);
    if (found == 0)
        return;
    unsigned long long first = 0;
    if (lane == 0)
        first = atomicAdd(&f.counters->listed, (unsigned long long)__popc(found));
    first = __shfl_sync(FULL, first, 0);
    const unsigned long long slot = first + lanes_below(found, lane);
    if (hit && slot < f.capacity)
        f.list[slot] = pleat_pair_pack(pleat_cuda_particle_at(f, f.order[a]),
                                       pleat_cuda_particle_at(f, f.order[b]), f.pair_shift);
}

/* The sums of each v[i] over the block's threads, into thread 0's v (the
 * other threads' hold parts). A block adds its counts to the call's this
 * way, with one atomic each, not one per warp: every warp of every block
 * adds to the same counters, whose atomics the memory system runs one at a
 * time. Every thread of a block of PLEAT_CUDA_BLOCK (WARPS warps) calls
 * it. */
template <int N> __device__ static void block_sums(unsigned long long (&v)[N])
{
    __shared__ unsigned long long warp_parts[N][WARPS];
    for (int o = 16; o > 0; o /= 2)
        for (int i = 0; i < N; ++i)
            v[i] += __shfl_down_sync(FULL, v[i], o);
    if ((threadIdx.x & 31) == 0)
        for (int i = 0; i < N; ++i)
            warp_parts[i][threadIdx.x / 32] = v[i];
    __syncthreads();
    if (threadIdx.x == 0)
        for (int w = 1; w < WARPS; ++w)
            for (int i = 0; i < N; ++i)
                v[i] += warp_parts[i][w];
}

/* The block's pairs and tests into the call's counters. Every thread of
 * the block calls it. */
__device__ static void count(const pleat_cuda_frame &f, unsigned long long pairs,
                             unsigned long long tests)
{
    unsigned long long sums[2] = {pairs, tests};
    block_sums(sums);
    if (threadIdx.x == 0) {
        atomicAdd(&f.counters->pairs, sums[0]);
        atomicAdd(&f.counters->tests, sums[1]);
    }
}

/* 5 blocks per SM (40 warps, to hide the latency of the candidates' loads)
 * need at most 51 registers a thread: with the bound, ptxas fits the sweep
 * in 48, with no spills (sm_80 .. sm_90), where it would take about 60. An
 * sm_75 SM holds 4 blocks of 256 at most, whatever the registers, and ptxas
 * warns of a bound above that. Not yet timed on a GPU: a build may set
 * PLEAT_CUDA_SWEEP_BLOCKS_PER_SM to time another bound against this one
 * (bench/README.md, experiments). */
#if defined(PLEAT_CUDA_SWEEP_BLOCKS_PER_SM)
#define SWEEP_BLOCKS_PER_SM PLEAT_CUDA_SWEEP_BLOCKS_PER_SM
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define SWEEP_BLOCKS_PER_SM 4
#else
#define SWEEP_BLOCKS_PER_SM 5
#endif

/* One kernel per mode, written once: a call's mode is fixed, and each
 * instance's steps carry only that mode's work. */
template <pleat_cuda_mode MODE>
__global__ void __launch_bounds__(PLEAT_CUDA_BLOCK, SWEEP_BLOCKS_PER_SM)
    pleat_sweep_kernel(pleat_cuda_frame f)
{
    __shared__ warp_share shares[WARPS];
    if (f.counters->flags != 0)
        return;
    const uint32_t lane = threadIdx.x & 31, a = blockIdx.x * blockDim.x + threadIdx.x,
                   base = a - lane;
    warp_share *share = &shares[threadIdx.x / 32];
    pleat_candidates l = {};
    float4 pa = {};
    if (a < f.m) {
        l = pleat_find_candidates(f.cols, f.keys, a, f.grid->sweep_reach);
        pa = f.pos[a];
    }
    for (int c = 0; c < 3; ++c)
        share->own[c][lane] = 0;
    __syncwarp();
    uint32_t steps = l.total; /* the warp's longest list (no __reduce_max_sync on sm_75) */
    for (int o = 16; o > 0; o /= 2)
        steps = max(steps, __shfl_xor_sync(FULL, steps, o));
    uint32_t pairs = 0, queued = 0; /* pairs <= l.total */
    for (uint32_t t = 0; t < steps; ++t) {
        const uint32_t b = pleat_candidate(&l, t);
        bool hit = false;
        if (t < l.total) {
            const float4 pb = f.pos[b];
            hit = pleat_pair_within(pleat_length2(pb.x - pa.x, pb.y - pa.y, pb.z - pa.z),
                                    &f.consts) &&
                  is_pair(f, a, b);
        }
        pairs += hit;
        if constexpr (MODE == PLEAT_CUDA_LIST)
            list_pairs(f, lane, hit, a, b);
        if constexpr (MODE == PLEAT_CUDA_CORRECT)
            enqueue(f, share, base, lane, hit, b, &queued);
    }
    if constexpr (MODE == PLEAT_CUDA_CORRECT)
        finish(f, share, base, lane, queued);
    count(f, pairs, l.total);
}

/* With a test limit (params.max_tests), before the sweep: each block adds
 * its particles' list lengths, which are exactly the tests the sweep would
 * make, to the call's running total, and the block that takes the total past
 * the limit flags the call, so that the sweep and the apply do nothing. The
 * last block to add sees the whole total, so the flag is set exactly when the
 * call's tests are over the limit, in any order of the blocks, at the cost of
 * the sweep's searches and never of its tests. Its own kernel, so that a call
 * without a limit runs the sweep as it was. */
__global__ void pleat_limit_kernel(pleat_cuda_frame f)
{
    __shared__ unsigned flags;
    /* read once for the block, which then leaves whole or not at all, while
     * other blocks may be setting the limit's flag: a flagged call has no
     * column starts, and one already over its limit needs no more count */
    if (threadIdx.x == 0)
        flags = atomicOr(&f.counters->flags, 0u);
    __syncthreads();
    if (flags != 0)
        return;
    const uint32_t a = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long tests[1] = {0};
    if (a < f.m)
        tests[0] = pleat_find_candidates(f.cols, f.keys, a, f.grid->sweep_reach).total;
    block_sums(tests);
    if (threadIdx.x == 0) {
        const unsigned long long before = atomicAdd(&f.counters->limit_tests, tests[0]);
        if (before + tests[0] > f.max_tests)
            atomicOr(&f.counters->flags, PLEAT_FLAG_TOO_MANY_TESTS);
    }
}

cudaError_t pleat_cuda_sweep(const pleat_cuda_frame &f, cudaStream_t stream)
{
    if (f.max_tests != 0) {
        cudaError_t e = pleat_cuda_launch(pleat_limit_kernel, pleat_cuda_blocks(f.m),
                                          PLEAT_CUDA_BLOCK, stream, f);
        if (e != cudaSuccess)
            return e;
    }
    void (*kernel)(pleat_cuda_frame) = pleat_sweep_kernel<PLEAT_CUDA_COUNT>;
    if (f.mode == PLEAT_CUDA_LIST)
        kernel = pleat_sweep_kernel<PLEAT_CUDA_LIST>;
    if (f.mode == PLEAT_CUDA_CORRECT)
        kernel = pleat_sweep_kernel<PLEAT_CUDA_CORRECT>;
    return pleat_cuda_launch(kernel, pleat_cuda_blocks(f.m), PLEAT_CUDA_BLOCK, stream, f);
}
