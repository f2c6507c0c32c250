/* Stage 4 on the GPU: add the fixed-point sums to the caller's particles
 * (device-pointer calls) or list the moved ones for the host (host-pointer
 * calls), unless a check failed (then nothing is written). */
#include "frame.cuh"

__global__ void pleat_apply_kernel(pleat_cuda_frame f)
{
    uint32_t s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= f.m || f.counters->flags != 0)
        return;
    uint32_t i = f.order[s];
    /* The position, the same bits either way. A device call reads its row
     * of the array it writes: the store then lands in a memory sector the
     * load brought in whole, where a store alone leaves it partly written
     * (reading the gather's copy instead was measured slower on an H200,
     * December 2026: 4M cloud 1.82 -> 2.02 ms a call). The host-pointer
     * list is written whatever is read, so it reads the copy, in slot
     * order. */
    const float4 row = f.moved ? f.pos[s] : pleat_cuda_row(f, f.out, i);
    const float at[3] = {row.x, row.y, row.z};
    float v[3];
    bool moved = false;
    for (int c = 0; c < 3; ++c) {
        int64_t sum = (int64_t)f.acc[(size_t)c * f.m + s];
        moved |= sum != 0;
        v[c] = pleat_apply_sum(at[c], sum, &f.consts);
    }
    if (f.moved) {
        const uint32_t particle = moved ? pleat_cuda_particle_at(f, i) : PLEAT_CUDA_UNMOVED;
        f.moved[i] = pleat_cuda_moved{v[0], v[1], v[2], particle};
    } else if (moved) { /* an unmoved particle's bits stay as they are */
        pleat_cuda_set_position(f, i, v[0], v[1], v[2]);
    }
}

cudaError_t pleat_cuda_apply(const pleat_cuda_frame &f, cudaStream_t stream)
{
    return pleat_cuda_launch(pleat_apply_kernel, pleat_cuda_blocks(f.m), PLEAT_CUDA_BLOCK, stream,
                             f);
}
