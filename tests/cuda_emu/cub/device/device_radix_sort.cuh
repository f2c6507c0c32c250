/*
 * cub::DeviceRadixSort for the CUDA emulator: the same calls, the same
 * contract (a size query when temp is NULL, a stable sort on the bits
 * [begin_bit, end_bit) of each key, inputs left as they are, temporary
 * storage the caller keeps, its size growing with the bits sorted), run as
 * an LSD radix sort on the CPU inside the temporary storage the size query
 * asked for. Like CUB it takes an error
 * left in cudaGetLastError() and returns it as its own. Arguments a GPU
 * would fault on (memory outside a device allocation) and inputs that
 * overlap outputs abort. Unsigned keys only.
 */
#ifndef PLEAT_EMU_CUB_DEVICE_RADIX_SORT_CUH
#define PLEAT_EMU_CUB_DEVICE_RADIX_SORT_CUH

#include "../../cuda_runtime.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace cub {

struct DeviceRadixSort {
    template <typename K, typename V, typename N>
    static cudaError_t SortPairs(void *temp, size_t &temp_bytes, const K *keys_in, K *keys_out,
                                 const V *values_in, V *values_out, N n, int begin_bit = 0,
                                 int end_bit = (int)sizeof(K) * 8, cudaStream_t stream = 0)
    {
        return sort<K, V>(true, temp, temp_bytes, keys_in, keys_out, values_in, values_out,
                          (size_t)n, begin_bit, end_bit, stream);
    }

    template <typename K, typename N>
    static cudaError_t SortKeys(void *temp, size_t &temp_bytes, const K *keys_in, K *keys_out, N n,
                                int begin_bit = 0, int end_bit = (int)sizeof(K) * 8,
                                cudaStream_t stream = 0)
    {
        return sort<K, char>(false, temp, temp_bytes, keys_in, keys_out, nullptr, nullptr,
                             (size_t)n, begin_bit, end_bit, stream);
    }

  private:
    /* 8-bit digits, as CUB's own passes. */
    static int passes(int begin_bit, int end_bit)
    {
        return end_bit > begin_bit ? (end_bit - begin_bit + 7) / 8 : 0;
    }

    /* Two ping-pong arrays of keys (and values), and the digit counts of
     * every pass (as CUB's onesweep keeps a histogram per pass): a sort
     * on more bits than its size query asked about gets too little. */
    template <typename K, typename V>
    static size_t needed(size_t n, bool pairs, int begin_bit, int end_bit)
    {
        return 2 * n * (sizeof(K) + (pairs ? sizeof(V) : 0)) +
               (size_t)passes(begin_bit, end_bit) * 257 * sizeof(size_t) + 64;
    }

    static bool overlap(const void *a, const void *b, size_t bytes)
    {
        const char *x = (const char *)a, *y = (const char *)b;
        return x < y + bytes && y < x + bytes;
    }

    template <typename K, typename V>
    static cudaError_t sort(bool pairs, void *temp, size_t &temp_bytes, const K *keys_in,
                            K *keys_out, const V *values_in, V *values_out, size_t n,
                            int begin_bit, int end_bit, cudaStream_t stream)
    {
        static_assert(std::is_unsigned<K>::value, "the emulated sort takes unsigned keys");
        if (cudaError_t pending = cudaGetLastError())
            return pending;
        if (begin_bit < 0 || end_bit > (int)sizeof(K) * 8 || begin_bit > end_bit)
            return cudaErrorInvalidValue;
        if (!temp) {
            temp_bytes = needed<K, V>(n, pairs, begin_bit, end_bit);
            return cudaSuccess;
        }
        if (temp_bytes < needed<K, V>(n, pairs, begin_bit, end_bit))
            return cudaErrorInvalidValue;
        if (n == 0)
            return cudaSuccess;
        pleat_emu::expect_device(temp, temp_bytes, "CUB temporary storage");
        pleat_emu::expect_device(keys_in, n * sizeof(K), "CUB keys in");
        pleat_emu::expect_device(keys_out, n * sizeof(K), "CUB keys out");
        if (pairs) {
            pleat_emu::expect_device(values_in, n * sizeof(V), "CUB values in");
            pleat_emu::expect_device(values_out, n * sizeof(V), "CUB values out");
        }
        if (overlap(keys_in, keys_out, n * sizeof(K)) ||
            (pairs && overlap(values_in, values_out, n * sizeof(V))))
            pleat_emu::die("CUB's inputs and outputs overlap");
        return pleat_emu::submit(stream, [=]() {
            char *t = (char *)temp;
            K *k[2] = {(K *)t, (K *)t + n};
            V *v[2] = {nullptr, nullptr};
            t += 2 * n * sizeof(K);
            if (pairs) {
                v[0] = (V *)t;
                v[1] = (V *)t + n;
                t += 2 * n * sizeof(V);
            }
            size_t *counts = (size_t *)(((uintptr_t)t + 7) & ~(uintptr_t)7);
            std::memcpy(k[0], keys_in, n * sizeof(K));
            if (pairs)
                std::memcpy(v[0], values_in, n * sizeof(V));
            int from = 0;
            for (int bit = begin_bit; bit < end_bit; bit += 8, from ^= 1) {
                const int width = end_bit - bit < 8 ? end_bit - bit : 8;
                const uint64_t mask = ((uint64_t)1 << width) - 1;
                size_t *count = counts + (size_t)(bit - begin_bit) / 8 * 257;
                std::memset(count, 0, 257 * sizeof(size_t));
                for (size_t i = 0; i < n; ++i)
                    ++count[1 + (((uint64_t)k[from][i] >> bit) & mask)];
                for (int d = 0; d < 256; ++d)
                    count[d + 1] += count[d];
                for (size_t i = 0; i < n; ++i) {
                    size_t to = count[((uint64_t)k[from][i] >> bit) & mask]++;
                    k[from ^ 1][to] = k[from][i];
                    if (pairs)
                        v[from ^ 1][to] = v[from][i];
                }
            }
            std::memcpy(keys_out, k[from], n * sizeof(K));
            if (pairs)
                std::memcpy(values_out, v[from], n * sizeof(V));
        });
    }
};

} // namespace cub

#endif
