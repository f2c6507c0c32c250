/*
 * cub::DeviceRadixSort for the CUDA emulator: the calls pleat makes (over
 * DoubleBuffers), with CUB's contract: a size query when temp is NULL, a
 * stable sort on the bits [begin_bit, end_bit) of each key, temporary
 * storage the caller keeps, its size growing with the bits sorted, and on
 * return each DoubleBuffer's selector naming the buffer that holds the
 * sorted items, while the other one holds whatever the sort left there
 * (noise here). Which one it is, CUB decides by size and architecture; the
 * emulator follows CUB's rule from sm_70 to sm_100: a sort of one tile (at
 * most single_tile() items) writes the alternate buffer once, a larger one
 * (onesweep) flips at every 8-bit pass. It runs as an LSD radix sort on the CPU. Like CUB it
 * takes an error left in cudaGetLastError() and returns it as its own.
 * Arguments a GPU would fault on (memory outside a device allocation) and
 * buffers that overlap abort. Unsigned keys only.
 */
#ifndef PLEAT_EMU_CUB_DEVICE_RADIX_SORT_CUH
#define PLEAT_EMU_CUB_DEVICE_RADIX_SORT_CUH

#include "../../cuda_runtime.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace cub {

/* Two buffers of one sequence, and which of them holds it now. */
template <typename T> struct DoubleBuffer {
    T *d_buffers[2] = {nullptr, nullptr};
    int selector = 0;
    DoubleBuffer() = default;
    DoubleBuffer(T *current, T *alternate) : d_buffers{current, alternate} {}
    T *Current() { return d_buffers[selector]; }
    T *Alternate() { return d_buffers[selector ^ 1]; }
};

struct DeviceRadixSort {
    /* Items a single-tile sort takes (CUB's tunings for sm_70 to sm_100:
     * 256 threads, 19 items each for 4-byte keys and values, fewer for
     * wider ones). */
    template <typename K, typename V> static size_t single_tile()
    {
        const size_t widest = sizeof(K) > sizeof(V) ? sizeof(K) : sizeof(V);
        const size_t items = 19 * 4 / (widest > 4 ? widest : 4);
        return 256 * (items > 1 ? items : 1);
    }

    template <typename K, typename V, typename N>
    static cudaError_t SortPairs(void *temp, size_t &temp_bytes, DoubleBuffer<K> &keys,
                                 DoubleBuffer<V> &values, N n, int begin_bit = 0,
                                 int end_bit = (int)sizeof(K) * 8, cudaStream_t stream = 0)
    {
        return sort<K, V>(temp, temp_bytes, keys, &values, (size_t)n, begin_bit, end_bit, stream);
    }

    template <typename K, typename N>
    static cudaError_t SortKeys(void *temp, size_t &temp_bytes, DoubleBuffer<K> &keys, N n,
                                int begin_bit = 0, int end_bit = (int)sizeof(K) * 8,
                                cudaStream_t stream = 0)
    {
        return sort<K, char>(temp, temp_bytes, keys, nullptr, (size_t)n, begin_bit, end_bit,
                             stream);
    }

  private:
    /* 8-bit digits, as CUB's own passes. */
    static int passes(int begin_bit, int end_bit)
    {
        return end_bit > begin_bit ? (end_bit - begin_bit + 7) / 8 : 0;
    }

    /* The digit counts of every pass (as CUB's onesweep keeps a histogram
     * per pass: a sort on more bits than its size query asked about gets
     * too little), and 1 KiB a tile, as onesweep's look-back takes (so
     * that the size grows with n, as CUB's does, and a larger call's sort
     * needs more). The items move between the caller's two buffers. */
    template <typename K, typename V> static size_t needed(size_t n, int begin_bit, int end_bit)
    {
        const size_t tile = single_tile<K, V>();
        return (size_t)passes(begin_bit, end_bit) * 257 * sizeof(size_t) +
               (n + tile - 1) / tile * 1024 + 64;
    }

    /* Which buffer holds the sorted items afterwards, counted from the
     * current one: 0 or 1. */
    template <typename K, typename V> static int flips(size_t n, int begin_bit, int end_bit)
    {
        const int p = passes(begin_bit, end_bit);
        if (p == 0)
            return 0;
        return n <= single_tile<K, V>() ? 1 : p % 2;
    }

    static bool overlap(const void *a, size_t a_bytes, const void *b, size_t b_bytes)
    {
        const char *x = (const char *)a, *y = (const char *)b;
        return x < y + b_bytes && y < x + a_bytes;
    }

    template <typename T> static void expect_buffers(DoubleBuffer<T> &d, size_t n, const char *what)
    {
        pleat_emu::expect_device(d.d_buffers[0], n * sizeof(T), what);
        pleat_emu::expect_device(d.d_buffers[1], n * sizeof(T), what);
        if (overlap(d.d_buffers[0], n * sizeof(T), d.d_buffers[1], n * sizeof(T)))
            pleat_emu::die("CUB's two %s overlap", what);
    }

    template <typename K, typename V>
    static cudaError_t sort(void *temp, size_t &temp_bytes, DoubleBuffer<K> &keys,
                            DoubleBuffer<V> *values, size_t n, int begin_bit, int end_bit,
                            cudaStream_t stream)
    {
        static_assert(std::is_unsigned<K>::value, "the emulated sort takes unsigned keys");
        if (cudaError_t pending = cudaGetLastError())
            return pending;
        if (begin_bit < 0 || end_bit > (int)sizeof(K) * 8 || begin_bit > end_bit)
            return cudaErrorInvalidValue;
        if (!temp) {
            if (cudaError_t e = pleat_emu::refused_call()) /* a query, as any other */
                return e;
            temp_bytes = needed<K, V>(n, begin_bit, end_bit);
            return cudaSuccess;
        }
        if (temp_bytes < needed<K, V>(n, begin_bit, end_bit))
            return cudaErrorInvalidValue;
        if (n == 0)
            return cudaSuccess;
        pleat_emu::expect_device(temp, temp_bytes, "CUB temporary storage");
        expect_buffers(keys, n, "key buffers");
        if (values) {
            expect_buffers(*values, n, "value buffers");
            for (K *k : keys.d_buffers)
                for (V *v : values->d_buffers)
                    if (overlap(k, n * sizeof(K), v, n * sizeof(V)))
                        pleat_emu::die("CUB's key and value buffers overlap");
        }
        K *k[2] = {keys.Current(), keys.Alternate()};
        V *v[2] = {values ? values->Current() : nullptr, values ? values->Alternate() : nullptr};
        const int result = flips<K, V>(n, begin_bit, end_bit);
        /* decided now, on the host, as CUB does */
        keys.selector ^= result;
        if (values)
            values->selector ^= result;
        return pleat_emu::submit(stream, [=]() {
            size_t *counts = (size_t *)(((uintptr_t)temp + 7) & ~(uintptr_t)7);
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
                    if (v[0])
                        v[from ^ 1][to] = v[from][i];
                }
            }
            if (from != result) {
                std::memcpy(k[result], k[from], n * sizeof(K));
                if (v[0])
                    std::memcpy(v[result], v[from], n * sizeof(V));
            }
            pleat_emu::fill_noise(k[result ^ 1], n * sizeof(K));
            if (v[0])
                pleat_emu::fill_noise(v[result ^ 1], n * sizeof(V));
        });
    }
};

} // namespace cub

#endif
