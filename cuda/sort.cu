/* Stage 2 on the GPU: CUB's radix sort of (key, particle), then one kernel
 * for the gather of the particles into key order (which also clears the
 * sweep's sums, a launch fewer than a memset) and the start of each column
 * in it. CUB's sort is stable, as the CPU's. */
#include "frame.cuh"

#include <cub/device/device_radix_sort.cuh>

/* Older CUB counts a sort's items in an int: 2^31 particles, or pairs in
 * pleat_find_pairs, would wrap. (The emulator's CUB has no version.) */
#if defined(CUB_VERSION) && CUB_VERSION < 101600
#error "pleat's CUDA backend needs CUB 1.16 or newer (64-bit item counts in DeviceRadixSort)"
#endif

/* Over DoubleBuffers: CUB sorts back and forth between the two buffers
 * pleat has anyway (keys and order, before and after), where the calls
 * with separate outputs need a third of each in their temporary storage,
 * 8 bytes a particle. Which buffer ends up with the sorted items is CUB's
 * choice (by size and architecture), made on the host when the sort is
 * queued, so the kernels after it are launched with the right pointers. */
cudaError_t pleat_cuda_sort_temp_bytes(uint32_t m, size_t *bytes)
{
    cub::DoubleBuffer<uint32_t> keys, order;
    *bytes = 0;
    return cub::DeviceRadixSort::SortPairs(nullptr, *bytes, keys, order, m, 0, 32);
}

/* All 32 bits: which ones vary is only known on the device, and asking the
 * host would cost a sync (and break graph capture). */
cudaError_t pleat_cuda_sort(pleat_cuda_frame *f, void *temp, size_t temp_bytes,
                            cudaStream_t stream)
{
    if (!temp) /* CUB would take this for a size query and sort nothing */
        return cudaErrorInvalidValue;
    cub::DoubleBuffer<uint32_t> keys(f->keys_in, f->keys), order(f->order_in, f->order);
    cudaError_t e =
        cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, order, f->m, 0, 32, stream);
    f->keys = keys.Current();
    f->keys_in = keys.Alternate();
    f->order = order.Current();
    f->order_in = order.Alternate();
    return e;
}

cudaError_t pleat_cuda_sort_pairs_temp_bytes(unsigned long long n, int shift, size_t *bytes)
{
    cub::DoubleBuffer<unsigned long long> list;
    *bytes = 0;
    return cub::DeviceRadixSort::SortKeys(nullptr, *bytes, list, n, 0, 2 * shift);
}

/* Packed pairs into the pair layout of pleat_find_pairs: i, j as uint32.
 * In place (out may be sorted): thread k reads entry k and writes its 8
 * bytes only. */
__global__ void pleat_split_pairs_kernel(const unsigned long long *sorted, uint32_t *out,
                                         unsigned long long n, int shift)
{
    unsigned long long k = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n)
        pleat_pair_unpack(sorted[k], shift, out + 2 * k);
}

cudaError_t pleat_cuda_sort_pairs(unsigned long long *list, unsigned long long *tmp,
                                  unsigned long long n, int shift, void *temp, size_t temp_bytes,
                                  cudaStream_t stream, uint32_t **pairs)
{
    if (!temp)
        return cudaErrorInvalidValue;
    cub::DoubleBuffer<unsigned long long> sorted(list, tmp);
    cudaError_t e = cub::DeviceRadixSort::SortKeys(temp, temp_bytes, sorted, n, 0, 2 * shift,
                                                   stream);
    if (e != cudaSuccess)
        return e;
    *pairs = (uint32_t *)sorted.Current(); /* split in place */
    return pleat_cuda_launch(pleat_split_pairs_kernel, pleat_cuda_blocks(n), PLEAT_CUDA_BLOCK,
                             stream, (const unsigned long long *)sorted.Current(), *pairs, n,
                             shift);
}

/* Thread s gathers slot s's particle into key order (s < m) and finds
 * column start s (s <= PLEAT_COLUMNS): both read only the sorted order and
 * keys, so one launch does both, a launch fewer.
 *
 * A column start is a search over all the keys: the sweep then searches
 * only inside one column, a few steps instead of log2(m). */
__global__ void pleat_gather_kernel(pleat_cuda_frame f)
{
    uint32_t s = blockIdx.x * blockDim.x + threadIdx.x;
    if (f.counters->flags != 0)
        return;
    if (s <= PLEAT_COLUMNS)
        f.cols[s] = pleat_column_start(f.keys, f.m, s);
    if (s >= f.m)
        return;
    if (f.mode == PLEAT_CUDA_CORRECT) /* the sweep's sums start at zero */
        for (int c = 0; c < 3; ++c)
            f.acc[(size_t)c * f.m + s] = 0;
    uint32_t i = f.order[s];
    f.pos[s] = pleat_cuda_row(f, f.particles, i);
    if (f.rest_pos)
        f.rest_pos[s] = pleat_cuda_row(f, f.rest, i);
}

cudaError_t pleat_cuda_gather(const pleat_cuda_frame &f, cudaStream_t stream)
{
    const uint32_t threads = f.m > PLEAT_COLUMNS ? f.m : PLEAT_COLUMNS + 1;
    return pleat_cuda_launch(pleat_gather_kernel, pleat_cuda_blocks(threads), PLEAT_CUDA_BLOCK,
                             stream, f);
}
