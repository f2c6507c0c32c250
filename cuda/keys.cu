/* Stage 1 on the GPU: the checks and the bounds in one pass over the slots
 * (a box and flags per block); the last block to finish also reduces every
 * block's, starts the call's counters (a memset fewer) and sets the grid up
 * (a launch fewer than a block of its own). Then the keys. Min and max are
 * exact, so the box, and with it every key, matches the CPU's. */
#include "frame.cuh"

#include <math.h>

__device__ static bool finite(float v)
{
    return v - v == 0.0f; /* NaN and Inf give NaN */
}

/* Whether particle i (< count) is named for the first time in this call:
 * each index may be given once. */
__device__ static bool first_claim(const pleat_cuda_frame &f, uint32_t i)
{
    const unsigned bit = 1u << (i & 31);
    return !(atomicOr(&f.seen[i >> 5], bit) & bit);
}

/* Min and max of l and h, and the union of flags, over the block's threads,
 * left in every thread's. Exact, so the order of the reduction does not
 * matter. */
__device__ static void block_reduce(float l[3], float h[3], unsigned *flags)
{
    __shared__ float lo[3][PLEAT_CUDA_BLOCK], hi[3][PLEAT_CUDA_BLOCK];
    __shared__ unsigned any[PLEAT_CUDA_BLOCK];
    for (int a = 0; a < 3; ++a) {
        lo[a][threadIdx.x] = l[a];
        hi[a][threadIdx.x] = h[a];
    }
    any[threadIdx.x] = *flags;
    __syncthreads();
    for (unsigned stride = PLEAT_CUDA_BLOCK / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) {
            for (int a = 0; a < 3; ++a) {
                float ol = lo[a][threadIdx.x + stride], oh = hi[a][threadIdx.x + stride];
                lo[a][threadIdx.x] = ol < lo[a][threadIdx.x] ? ol : lo[a][threadIdx.x];
                hi[a][threadIdx.x] = oh > hi[a][threadIdx.x] ? oh : hi[a][threadIdx.x];
            }
            any[threadIdx.x] |= any[threadIdx.x + stride];
        }
        __syncthreads();
    }
    for (int a = 0; a < 3; ++a) {
        l[a] = lo[a][0];
        h[a] = hi[a][0];
    }
    *flags = any[0];
}

/* The empty box [+Inf, -Inf], which widen() then grows. */
__device__ static void empty_box(float l[3], float h[3])
{
    for (int a = 0; a < 3; ++a) {
        l[a] = INFINITY;
        h[a] = -INFINITY;
    }
}

/* Widens the box [l, h] to take in [lv, hv]. */
__device__ static void widen(float l[3], float h[3], const float lv[3], const float hv[3])
{
    for (int a = 0; a < 3; ++a) {
        l[a] = lv[a] < l[a] ? lv[a] : l[a];
        h[a] = hv[a] > h[a] ? hv[a] : h[a];
    }
}

/* Reads block b's box with loads that skip L1: another SM wrote it. */
__device__ static void read_box(const pleat_cuda_frame &f, unsigned b, float lv[3], float hv[3],
                                unsigned *flags)
{
    const volatile pleat_cuda_block_box *box = f.blocks + b;
    for (int a = 0; a < 3; ++a) {
        lv[a] = box->lower[a];
        hv[a] = box->upper[a];
    }
    *flags = box->flags;
}

/* Run by the last bounds block: the box and flags of every block, which
 * start the call's counters, then the grid (core/grid.h). */
__device__ static void setup(const pleat_cuda_frame &f)
{
    float l[3], h[3];
    empty_box(l, h);
    unsigned flags = 0;
    for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) {
        float lv[3], hv[3];
        unsigned bf;
        read_box(f, b, lv, hv, &bf);
        widen(l, h, lv, hv);
        flags |= bf;
    }
    block_reduce(l, h, &flags);
    if (threadIdx.x == 0) {
        /* not the ticket: it has wrapped to 0, ready for the next call */
        pleat_cuda_counters *c = f.counters;
        c->pairs = c->tests = c->listed = c->limit_tests = 0;
        c->flags = flags;
        if (flags == 0)
            *f.grid = pleat_grid_setup(l, h, f.consts.distance);
    }
}

/* Whether this block is the last of the grid to leave its box: it takes a
 * ticket after its box is visible to every block (the fence), and the one
 * that takes the last, gridDim.x - 1, also wraps the count back to 0. */
__device__ static bool last_block(const pleat_cuda_frame &f)
{
    __shared__ bool last;
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicInc(&f.counters->ticket, gridDim.x - 1) == gridDim.x - 1;
        __threadfence(); /* the other blocks' boxes are read after the ticket */
    }
    __syncthreads();
    return last;
}

__global__ void pleat_bounds_kernel(pleat_cuda_frame f)
{
    float l[3], h[3];
    empty_box(l, h);
    unsigned flags = 0;
    /* 64-bit: a stride past the last slot must not wrap */
    for (size_t s = (size_t)blockIdx.x * blockDim.x + threadIdx.x; s < f.m;
         s += (size_t)gridDim.x * blockDim.x) {
        const uint32_t i = pleat_cuda_particle(f, (uint32_t)s);
        if (i >= f.count) {
            flags |= PLEAT_FLAG_BAD_INDEX;
            continue; /* nothing to read there */
        }
        if (f.indices && !first_claim(f, i))
            flags |= PLEAT_FLAG_BAD_INDEX;
        const size_t d = pleat_cuda_data(f, (uint32_t)s);
        const float4 p = pleat_cuda_row(f, f.particles, d);
        float v[3] = {p.x, p.y, p.z};
        if (!finite(v[0]) || !finite(v[1]) || !finite(v[2]) || !finite(p.w))
            flags |= PLEAT_FLAG_NONFINITE;
        if (p.w < 0.0f)
            flags |= PLEAT_FLAG_NEGATIVE_MASS;
        if (f.rest) {
            const float4 r = pleat_cuda_row(f, f.rest, d);
            if (!finite(r.x) || !finite(r.y) || !finite(r.z))
                flags |= PLEAT_FLAG_NONFINITE;
        }
        widen(l, h, v, v);
    }
    block_reduce(l, h, &flags);
    if (threadIdx.x == 0)
        f.blocks[blockIdx.x] = pleat_cuda_block_box{{l[0], l[1], l[2]}, {h[0], h[1], h[2]}, flags};
    /* last_block's __syncthreads also ends the reads of block_reduce's
     * shared memory, which setup's block_reduce writes again */
    if (last_block(f))
        setup(f);
}

__global__ void pleat_keys_kernel(pleat_cuda_frame f)
{
    uint32_t s = blockIdx.x * blockDim.x + threadIdx.x;
    /* already 0 (last_block), but a caller who overlapped two calls on one
     * context against pleat.h's rules could have left it off: this way
     * only those calls go wrong, not every one after them */
    if (s == 0)
        f.counters->ticket = 0;
    if (s >= f.m)
        return;
    const uint32_t d = pleat_cuda_data(f, s);
    uint32_t key = 0;
    if (f.counters->flags == 0) { /* no flag: every slot's particle is < count */
        const float4 p = pleat_cuda_row(f, f.particles, d);
        key = pleat_grid_key(f.grid, p.x, p.y, p.z);
    }
    f.keys_in[s] = key;
    f.order_in[s] = d;
}

/* Every kernel, CUB's included, is built for the same architectures: one
 * kernel's image stands for all. */
cudaError_t pleat_cuda_kernels_run_here(void)
{
    cudaFuncAttributes attributes;
    return cudaFuncGetAttributes(&attributes, pleat_bounds_kernel);
}

cudaError_t pleat_cuda_check_and_keys(const pleat_cuda_frame &f, cudaStream_t stream)
{
    unsigned per_slot = pleat_cuda_blocks(f.m);
    unsigned blocks = per_slot < PLEAT_CUDA_MAX_BLOCKS ? per_slot : PLEAT_CUDA_MAX_BLOCKS;
    cudaError_t e = pleat_cuda_launch(pleat_bounds_kernel, blocks, PLEAT_CUDA_BLOCK, stream, f);
    if (e == cudaSuccess)
        e = pleat_cuda_launch(pleat_keys_kernel, per_slot, PLEAT_CUDA_BLOCK, stream, f);
    return e;
}
