/*
 * The device side of the CUDA emulator (emu.h), for .cu files compiled as
 * C++: the qualifiers, the thread indices, the warp intrinsics and atomics
 * pleat's kernels use, and cudaLaunchKernelEx. A kernel is an ordinary
 * function that every emulated thread runs on a fiber of its own; the warp
 * intrinsics and __syncthreads are where threads wait for each other.
 */
#ifndef PLEAT_EMU_CUDA_RUNTIME_H
#define PLEAT_EMU_CUDA_RUNTIME_H

#include "cuda_runtime_api.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
/* Shared memory is static storage in a section of its own, which the
 * emulator fills with noise before each block runs: a kernel that reads it
 * before writing it gets other bits than the CPU. */
#define __shared__ static __attribute__((section("pleat_emu_shared"), aligned(16)))

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};

typedef struct cudaLaunchConfig_t {
    dim3 gridDim, blockDim;
    size_t dynamicSmemBytes;
    cudaStream_t stream;
    void *attrs;
    unsigned numAttrs;
} cudaLaunchConfig_t;

namespace pleat_emu {

enum exchange_kind { SYNC_WARP, BALLOT, SHFL, SHFL_XOR, SHFL_DOWN };

/* One warp-wide step: this lane gives `value` (and `arg`) and waits until
 * every lane of `mask` has made the same step; returns what it gets back. */
uint64_t exchange(exchange_kind kind, unsigned mask, uint64_t value, unsigned arg);
void sync_threads();
/* Queues `grid` (run by every thread of every block) on config->stream. */
cudaError_t launch(const cudaLaunchConfig_t *config, std::function<void()> grid);
/* cudaSuccess, or the error a test picked for this call
 * (pleat_emu_fail_call), left for cudaGetLastError too: each query or
 * setup call asks once its arguments have passed. */
cudaError_t refused_call();
/* cudaFuncGetAttributes, the same for every kernel. */
cudaError_t func_attributes(cudaFuncAttributes *attr);
/* Queues `work`, which runs with device memory readable, on `stream`. */
cudaError_t submit(cudaStream_t stream, std::function<void()> work);
/* Aborts unless [p, p + bytes) lies in one device allocation (a fault on a GPU). */
void expect_device(const void *p, size_t bytes, const char *what);
/* Aborts unless p, a pointer a kernel is given, is NULL or lies in (or just
 * past) a device or pinned allocation: a GPU faults on a pageable host
 * address, which the emulator's kernels would read. */
void expect_kernel_pointer(const void *p, const char *what);
/* Says what is wrong, then aborts. */
[[noreturn]] void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Fills [p, p + bytes) with noise (new allocations, shared memory, what CUB
 * leaves in a buffer it may alter). */
void fill_noise(void *p, size_t bytes);

template <typename T> uint64_t bits_of(T v)
{
    static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 8, "shuffled type");
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof v);
    return b;
}
template <typename T> T from_bits(uint64_t b)
{
    T v;
    std::memcpy(&v, &b, sizeof v);
    return v;
}

} // namespace pleat_emu

/* The running thread's: the emulator sets them before it runs a thread. */
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;

inline void __syncthreads() { pleat_emu::sync_threads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu)
{
    pleat_emu::exchange(pleat_emu::SYNC_WARP, mask, 0, 0);
}
inline unsigned __ballot_sync(unsigned mask, int predicate)
{
    return (unsigned)pleat_emu::exchange(pleat_emu::BALLOT, mask, predicate != 0, 0);
}
/* Width 32 only: pleat's kernels shuffle across whole warps. */
template <typename T> T __shfl_sync(unsigned mask, T v, int src_lane)
{
    return pleat_emu::from_bits<T>(
        pleat_emu::exchange(pleat_emu::SHFL, mask, pleat_emu::bits_of(v), (unsigned)src_lane));
}
template <typename T> T __shfl_xor_sync(unsigned mask, T v, int lane_mask)
{
    return pleat_emu::from_bits<T>(
        pleat_emu::exchange(pleat_emu::SHFL_XOR, mask, pleat_emu::bits_of(v), (unsigned)lane_mask));
}
template <typename T> T __shfl_down_sync(unsigned mask, T v, unsigned delta)
{
    return pleat_emu::from_bits<T>(
        pleat_emu::exchange(pleat_emu::SHFL_DOWN, mask, pleat_emu::bits_of(v), delta));
}
inline int __popc(unsigned v) { return __builtin_popcount(v); }

/* Atomics: emulated threads only switch inside the intrinsics above, so a
 * read-modify-write is never interleaved, and a plain one would give the
 * same bits here: tests/ptx_sync.cmake checks that the kernels' PTX keeps
 * its atomics, and the race mode (emu.h) takes a plain one for a race.
 * Relaxed, as a GPU's are. */
template <typename T> inline T pleat_emu_fetch_add(T *p, T v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
inline unsigned atomicAdd(unsigned *p, unsigned v) { return pleat_emu_fetch_add(p, v); }
inline int atomicAdd(int *p, int v) { return pleat_emu_fetch_add(p, v); }
inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{
    return pleat_emu_fetch_add(p, v);
}
inline unsigned atomicOr(unsigned *p, unsigned v)
{
    return __atomic_fetch_or(p, v, __ATOMIC_RELAXED);
}
/* Counts up to limit, then wraps to 0. */
inline unsigned atomicInc(unsigned *p, unsigned limit)
{
    unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(p, &old, old >= limit ? 0 : old + 1, true,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}
/* Every thread sees every write at once here (emu.h): nothing to order. */
inline void __threadfence() {}

namespace pleat_emu {
/* A GPU faults on a vector access (float2, float4) off a boundary of its
 * size ("misaligned address"), where x86 would not: V's copies check the
 * address of each one they read or write. */
template <typename V> struct checked_vector {
    checked_vector() = default;
    checked_vector(const checked_vector &from) { check(&from); }
    checked_vector &operator=(const checked_vector &from)
    {
        check(this);
        check(&from);
        return *this;
    }
    static void check(const void *at)
    {
        if ((uintptr_t)at % alignof(V) != 0)
            die("misaligned address: a %zu-byte vector at %p", alignof(V), at);
    }
};
} // namespace pleat_emu

struct alignas(8) float2 : pleat_emu::checked_vector<float2> {
    float x, y;
};
inline float2 make_float2(float x, float y)
{
    float2 v;
    v.x = x, v.y = y;
    return v;
}
struct alignas(16) float4 : pleat_emu::checked_vector<float4> {
    float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w)
{
    float4 v;
    v.x = x, v.y = y, v.z = z, v.w = w;
    return v;
}

inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline int min(int a, int b) { return a < b ? a : b; }

/* Every kernel's attributes alike: the emulator has no registers or
 * binary to describe. */
template <typename... Params>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attr, void (*)(Params...))
{
    return pleat_emu::func_attributes(attr);
}

/* A kernel's arguments are checked when it is queued: a pointer must be one
 * a GPU can read (pleat_emu::expect_kernel_pointer). A struct's pointers
 * are checked by an overload for it, found by argument-dependent lookup
 * (frame_check.h: pleat's frame); other arguments hold none. */
template <typename T> inline void pleat_emu_check_arg(const T &) {}
template <typename T> inline void pleat_emu_check_arg(T *const &p)
{
    pleat_emu::expect_kernel_pointer(p, "a pointer argument");
}

/* The kernel's parameters are copied when it is queued, as on a GPU. */
template <typename... Params, typename... Args>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t *config, void (*kernel)(Params...),
                               Args &&...args)
{
    std::tuple<std::decay_t<Params>...> params(std::forward<Args>(args)...);
    std::apply([](const auto &...a) { (pleat_emu_check_arg(a), ...); }, params);
    return pleat_emu::launch(config, [kernel, params]() { std::apply(kernel, params); });
}

#endif
