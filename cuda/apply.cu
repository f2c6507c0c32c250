/* Stage 4 on the GPU: add the fixed-point sums to the caller's particles,
 * unless a check failed (then nothing is written). */
#include "frame.cuh"

__global__ void apply_kernel(pleat_cuda_frame f)
{
    uint32_t s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= f.m || f.counters->flags != 0)
        return;
    float *p = f.out + 4 * (size_t)f.order[s];
    for (int c = 0; c < 3; ++c) {
        int64_t sum = (int64_t)f.acc[(size_t)c * f.m + s];
        p[c] = pleat_apply_sum(p[c], sum, &f.consts);
    }
}

void pleat_cuda_apply(const pleat_cuda_frame &f, cudaStream_t stream)
{
    apply_kernel<<<pleat_cuda_blocks(f.m), PLEAT_CUDA_BLOCK, 0, stream>>>(f);
}
