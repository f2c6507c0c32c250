/*
 * The CUDA emulator's own tests: that it computes what a GPU computes for the
 * intrinsics, the sort and the copies pleat uses, and that it catches what
 * it promises to catch (emu.h): stale reads from a missing wait, capture
 * rules, a call in a fork() child, host access to device memory, writes
 * past an allocation, lanes that leave a warp intrinsic waiting, shared
 * memory read before it is written, and order-dependent code (the expected
 * result of the racy kernel depends on PLEAT_CUDA_EMULATOR_ORDER, so CTest
 * runs this in both orders). With --races, in a ThreadSanitizer build and
 * the race mode, only what that mode reports as a race and what it does
 * not (races()).
 * Exit status 0 when every check passed.
 */
#include "cub/device/device_radix_sort.cuh"
#include "cuda_runtime.h"

#include <fenv.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xmmintrin.h>

#include <algorithm>
#include <functional>
#include <thread>
#include <vector>

static int failures, checks;

static void expect(bool ok, const char *what)
{
    ++checks;
    if (!ok) {
        printf("FAIL %s\n", what);
        ++failures;
    }
}

template <typename... Params, typename... Args>
static cudaError_t launch(void (*kernel)(Params...), unsigned blocks, unsigned threads,
                          cudaStream_t stream, Args... args)
{
    cudaLaunchConfig_t c = {};
    c.gridDim = dim3(blocks);
    c.blockDim = dim3(threads);
    c.stream = stream;
    return cudaLaunchKernelEx(&c, kernel, args...);
}

template <typename T> static T *device(size_t n)
{
    void *p = nullptr;
    if (cudaMalloc(&p, n * sizeof(T)) != cudaSuccess)
        abort();
    return (T *)p;
}

template <typename T> static std::vector<T> back(const T *d, size_t n)
{
    std::vector<T> h(n);
    if (cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost) != cudaSuccess)
        abort();
    return h;
}

/* How fn, run in a child process, ends (waitpid's status); its messages
 * (the emulator's, ThreadSanitizer's) are expected, and go nowhere. */
template <typename F> static int child_status(F fn)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stderr);
        fn();
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

/* Whether fn, run in a child process, dies of signal sig. */
template <typename F> static bool dies_of(int sig, F fn)
{
    const int status = child_status(fn);
    return WIFSIGNALED(status) && WTERMSIG(status) == sig;
}

/* Whether fn, run in a child process, exits with status code. */
template <typename F> static bool exits_with(int code, F fn)
{
    const int status = child_status(fn);
    return WIFEXITED(status) && WEXITSTATUS(status) == code;
}

/* ---- intrinsics ------------------------------------------------------------ */

/* what intrinsics_kernel writes per thread */
const unsigned OUTPUTS = 6;

__global__ void intrinsics_kernel(unsigned *out)
{
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    out[OUTPUTS * t] = __ballot_sync(0xffffffffu, t % 3 == 0);
    out[OUTPUTS * t + 1] = __shfl_xor_sync(0xffffffffu, t * 7, 5);
    out[OUTPUTS * t + 2] = __shfl_down_sync(0xffffffffu, t * 7, 3);
    unsigned long long wide = (unsigned long long)t << 33;
    out[OUTPUTS * t + 3] = (unsigned)(__shfl_down_sync(0xffffffffu, wide, 16) >> 33);
    out[OUTPUTS * t + 4] = __shfl_xor_sync(0xffffffffu, t, 32); /* past the warp: its own */
    /* from lane (7 * lane + 40) mod 32, as the width is 32 */
    out[OUTPUTS * t + 5] = __shfl_sync(0xffffffffu, t * 3, (int)(threadIdx.x % 32 * 7 + 40));
}

static void intrinsics()
{
    const unsigned blocks = 2, threads = 96, n = blocks * threads;
    unsigned *d = device<unsigned>(OUTPUTS * n);
    expect(launch(intrinsics_kernel, blocks, threads, nullptr, d) == cudaSuccess, "launch");
    std::vector<unsigned> h = back(d, OUTPUTS * n);
    bool ballot = true, xors = true, down = true, wide = true, own = true, indexed = true;
    for (unsigned t = 0; t < n; ++t) {
        unsigned warp = t / 32 * 32, lane = t % 32, want = 0;
        for (unsigned l = 0; l < 32; ++l)
            want |= (unsigned)((warp + l) % 3 == 0) << l;
        ballot &= h[OUTPUTS * t] == want;
        xors &= h[OUTPUTS * t + 1] == (warp + (lane ^ 5)) * 7;
        down &= h[OUTPUTS * t + 2] == (lane + 3 < 32 ? t + 3 : t) * 7;
        wide &= h[OUTPUTS * t + 3] == (lane + 16 < 32 ? t + 16 : t);
        own &= h[OUTPUTS * t + 4] == t;
        indexed &= h[OUTPUTS * t + 5] == (warp + (lane * 7 + 40) % 32) * 3;
    }
    expect(ballot, "__ballot_sync");
    expect(xors, "__shfl_xor_sync");
    expect(down, "__shfl_down_sync (32 bits)");
    expect(wide, "__shfl_down_sync (64 bits)");
    expect(own, "__shfl_xor_sync from past the warp gives the lane its own value");
    expect(indexed, "__shfl_sync from a lane, modulo 32");
    cudaFree(d);
}

__global__ void block_sum_kernel(const unsigned *in, unsigned *out)
{
    __shared__ unsigned part[256];
    part[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
    __syncthreads();
    for (unsigned stride = 128; stride > 0; stride /= 2) {
        if (threadIdx.x < stride)
            part[threadIdx.x] += part[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = part[0];
}

static void syncthreads()
{
    std::vector<unsigned> h(3 * 256);
    for (size_t i = 0; i < h.size(); ++i)
        h[i] = (unsigned)(i * i % 1000);
    unsigned *in = device<unsigned>(h.size()), *out = device<unsigned>(3);
    cudaMemcpy(in, h.data(), h.size() * sizeof(unsigned), cudaMemcpyHostToDevice);
    launch(block_sum_kernel, 3, 256, nullptr, (const unsigned *)in, out);
    std::vector<unsigned> sums = back(out, 3);
    bool ok = true;
    for (int b = 0; b < 3; ++b) {
        unsigned want = 0;
        for (int i = 0; i < 256; ++i)
            want += h[b * 256 + i];
        ok &= sums[b] == want;
    }
    expect(ok, "__syncthreads block reduction");
    cudaFree(in);
    cudaFree(out);
}

/* ---- memory ---------------------------------------------------------------- */

__global__ void shared_noise_kernel(unsigned *out)
{
    __shared__ unsigned s;
    out[blockIdx.x] = s;
    s = 0x12345678u;
}

static void noise()
{
    unsigned *d = device<unsigned>(2);
    launch(shared_noise_kernel, 2, 1, nullptr, d);
    std::vector<unsigned> h = back(d, 2);
    expect(h[1] != 0x12345678u, "shared memory is refilled with noise for each block");
    cudaFree(d);
    unsigned *fresh = device<unsigned>(1024);
    std::vector<unsigned> f = back(fresh, 1024);
    expect(std::count(f.begin(), f.end(), 0u) < 8, "new device memory is noise, not zeros");
    cudaFree(fresh);
}

__global__ void fill_kernel(unsigned *out, unsigned n, unsigned value)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = value;
}

static void copies()
{
    unsigned *d = device<unsigned>(64);
    std::vector<unsigned> h(65, 1);
    expect(cudaMemcpy(d, h.data(), 65 * sizeof(unsigned), cudaMemcpyHostToDevice) ==
               cudaErrorInvalidValue,
           "a copy past the end of an allocation is refused");
    expect(cudaGetLastError() == cudaErrorInvalidValue && cudaGetLastError() == cudaSuccess,
           "cudaGetLastError returns the error once");
    expect(cudaMemcpy(h.data(), d, 4, cudaMemcpyHostToDevice) == cudaErrorInvalidValue,
           "a copy against its kind is refused");
    expect(cudaPeekAtLastError() == cudaErrorInvalidValue &&
               cudaPeekAtLastError() == cudaErrorInvalidValue,
           "cudaPeekAtLastError leaves the error");
    cudaGetLastError();
    expect(cudaMemsetAsync(h.data(), 0, 4, nullptr) == cudaErrorInvalidValue,
           "a set of host memory is refused");
    cudaGetLastError();
    expect(cudaFree(h.data()) == cudaErrorInvalidValue, "freeing host memory is refused");
    cudaGetLastError();
    cudaFree(d);
}

/* The allocation asked for fails, once, and only it; sizes of 0 do not count. */
static void out_of_memory()
{
    void *a = nullptr, *b = nullptr, *c = nullptr, *z = &a;
    pleat_emu_fail_allocation(1);
    expect(cudaMalloc(&z, 0) == cudaSuccess && !z && pleat_emu_failure_pending(),
           "an allocation of 0 bytes does not count");
    expect(cudaMalloc(&a, 64) == cudaSuccess && a,
           "the allocations before the failing one succeed");
    expect(cudaMallocHost(&b, 64) == cudaErrorMemoryAllocation && !b &&
               !pleat_emu_failure_pending(),
           "the one asked for fails, pinned memory too");
    expect(cudaGetLastError() == cudaErrorMemoryAllocation, "and leaves its error");
    expect(cudaMalloc(&c, 64) == cudaSuccess && c, "only once");
    pleat_emu_fail_allocation(0);
    pleat_emu_fail_allocation(-1);
    expect(!pleat_emu_failure_pending() && cudaMalloc(&b, 64) == cudaSuccess,
           "a cancelled one does not fail");
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
}

/* ---- streams ------------------------------------------------------------------ */

static void streams()
{
    unsigned *d = device<unsigned>(256);
    cudaMemset(d, 0, 256 * sizeof(unsigned));
    cudaDeviceSynchronize();
    cudaStream_t nb, blocking;
    cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking);
    cudaStreamCreate(&blocking);

    const size_t queued = pleat_emu_queued_all();
    launch(fill_kernel, 1, 256, nb, d, 256u, 7u);
    expect(pleat_emu_pending(nb) == 1 && pleat_emu_pending_all() == 1,
           "a launch is queued, not run");
    expect(back(d, 256)[100] == 0,
           "the legacy stream does not wait for a non-blocking stream (stale bits)");
    cudaStreamSynchronize(nb);
    expect(pleat_emu_pending(nb) == 0 && back(d, 256)[100] == 7, "a stream sync runs its work");
    expect(pleat_emu_queued_all() == queued + 3,
           "the launch and the two copies back, run, stay counted");

    launch(fill_kernel, 1, 256, blocking, d, 256u, 9u);
    expect(back(d, 256)[200] == 9, "the legacy stream waits for a blocking stream");

    cudaEvent_t e;
    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    launch(fill_kernel, 1, 256, nb, d, 256u, 11u);
    cudaEventRecord(e, nb);
    cudaStreamWaitEvent(blocking, e, 0);
    launch(fill_kernel, 1, 128, blocking, d, 128u, 12u);
    cudaStreamSynchronize(blocking);
    std::vector<unsigned> h = back(d, 256);
    expect(h[0] == 12 && h[200] == 11, "a stream waits for the event it was told to");

    /* a destroyed stream's work still runs */
    launch(fill_kernel, 1, 256, nb, d, 256u, 13u);
    cudaEventRecord(e, nb);
    cudaStreamDestroy(nb);
    cudaEventSynchronize(e);
    expect(back(d, 256)[5] == 13, "a destroyed stream's queued work runs");
    cudaEventDestroy(e);
    cudaStreamDestroy(blocking);
    cudaFree(d);
}

/* ---- devices ----------------------------------------------------------------- */

/* Two devices: the current one is the thread's, a stream and memory belong
 * to the device current when they were made, a kernel goes only to a
 * stream of the current device and reads only its memory (copies may
 * cross), and a device sync waits for one device's work. */
static void devices()
{
    int count = 0, dev = -1;
    expect(cudaGetDeviceCount(&count) == cudaSuccess && count == 2, "two devices");
    expect(cudaSetDevice(2) == cudaErrorInvalidDevice && cudaGetLastError(), "no third device");
    unsigned *d0 = device<unsigned>(64);
    cudaStream_t s0;
    cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking);
    cudaEvent_t e0;
    cudaEventCreateWithFlags(&e0, cudaEventDisableTiming);
    cudaSetDevice(1);
    std::thread other([&dev]() { cudaGetDevice(&dev); });
    other.join();
    expect(dev == 0, "the current device is the thread's");
    unsigned *d1 = device<unsigned>(64);
    expect(launch(fill_kernel, 1, 64, s0, d1, 64u, 5u) == cudaErrorInvalidResourceHandle &&
               cudaGetLastError(),
           "a launch onto another device's stream is refused");
    cudaEvent_t e;
    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    expect(cudaEventRecord(e, s0) == cudaErrorInvalidResourceHandle && cudaGetLastError(),
           "an event records only on a stream of its device");
    expect(cudaEventRecord(e0, s0) == cudaSuccess && cudaEventSynchronize(e0) == cudaSuccess,
           "whichever device is current");
    launch(fill_kernel, 1, 64, nullptr, d1, 64u, 6u);
    cudaSetDevice(0);
    expect(pleat_emu_pending_all() == 1 && cudaDeviceSynchronize() == cudaSuccess &&
               pleat_emu_pending_all() == 1,
           "a device sync waits for its own device only");
    expect(back(d1, 64)[63] != 6, "each device has a legacy stream of its own (stale bits)");
    cudaSetDevice(1);
    cudaDeviceSynchronize();
    cudaSetDevice(0);
    expect(back(d1, 64)[63] == 6 && pleat_emu_pending_all() == 0,
           "a copy may read another device's memory");
    cudaSetDevice(1);
    expect(dies_of(SIGSEGV,
                   [d0]() {
                       launch(fill_kernel, 1, 64, nullptr, d0, 64u, 7u);
                       cudaDeviceSynchronize();
                   }),
           "a kernel touching another device's memory faults");
    cudaFree(d1);
    cudaEventDestroy(e);
    cudaEventDestroy(e0);
    cudaSetDevice(0);
    cudaStreamDestroy(s0);
    cudaFree(d0);
}

/* A device older than the build's architectures: no kernel runs there, the
 * rest works, each failure is left for cudaGetLastError, and the other
 * device keeps its images. */
static void no_kernel_images()
{
    unsigned *d0 = device<unsigned>(64);
    cudaFuncAttributes a;
    expect(cudaFuncGetAttributes(&a, fill_kernel) == cudaSuccess && a.maxThreadsPerBlock == 1024,
           "a kernel's attributes");
    pleat_emu_kernel_images(1, 0);
    expect(cudaFuncGetAttributes(&a, fill_kernel) == cudaSuccess &&
               launch(fill_kernel, 1, 64, nullptr, d0, 64u, 2u) == cudaSuccess &&
               back(d0, 64)[63] == 2,
           "no kernel image on device 1: device 0 still runs kernels");
    cudaSetDevice(1);
    unsigned *d1 = device<unsigned>(64);
    expect(cudaFuncGetAttributes(&a, fill_kernel) == cudaErrorNoKernelImageForDevice &&
               cudaGetLastError() == cudaErrorNoKernelImageForDevice,
           "no kernel image: no attributes");
    expect(launch(fill_kernel, 1, 64, nullptr, d1, 64u, 3u) == cudaErrorNoKernelImageForDevice &&
               cudaGetLastError() == cudaErrorNoKernelImageForDevice &&
               pleat_emu_pending_all() == 0,
           "no kernel image: a launch fails and queues nothing");
    expect(cudaMemset(d1, 0, 64 * sizeof(unsigned)) == cudaSuccess && back(d1, 64)[63] == 0,
           "no kernel image: memory still works");
    pleat_emu_kernel_images(1, 1);
    expect(launch(fill_kernel, 1, 64, nullptr, d1, 64u, 3u) == cudaSuccess && back(d1, 64)[63] == 3,
           "kernel images back: a launch runs");
    cudaFree(d1);
    cudaSetDevice(0);
    cudaFree(d0);
}

/* ---- capture ----------------------------------------------------------------- */

__global__ void add_kernel(unsigned *out, unsigned v) { out[threadIdx.x] += v; }

/* 32 zeroed words, and a non-blocking stream *s to work on them: the clear
 * is waited for, as s does not wait for the legacy stream. */
static unsigned *zeroed(cudaStream_t *s)
{
    unsigned *d = device<unsigned>(32);
    cudaMemset(d, 0, 32 * sizeof(unsigned));
    cudaDeviceSynchronize();
    cudaStreamCreateWithFlags(s, cudaStreamNonBlocking);
    return d;
}

static void capture()
{
    cudaStream_t s;
    unsigned *d = zeroed(&s);
    cudaGraph_t g = nullptr;
    cudaGraphExec_t exec = nullptr;

    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    expect(cudaStreamIsCapturing(s, &st) == cudaSuccess && st == cudaStreamCaptureStatusActive,
           "capture status");
    launch(add_kernel, 1, 32, s, d, 5u);
    expect(pleat_emu_pending(s) == 0, "a captured launch is not queued");
    expect(cudaStreamEndCapture(s, &g) == cudaSuccess && g, "end capture");
    pleat_emu_fail_allocation(0);
    expect(cudaGraphInstantiate(&exec, g, 0) == cudaErrorMemoryAllocation &&
               cudaGetLastError() == cudaErrorMemoryAllocation,
           "an instantiation is an allocation, which can fail");
    expect(cudaGraphInstantiate(&exec, g, 0) == cudaSuccess, "instantiate");
    cudaGraphLaunch(exec, s);
    cudaGraphLaunch(exec, s);
    cudaStreamSynchronize(s);
    expect(back(d, 32)[31] == 10, "a graph replays its launch with the captured parameters");
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);

    void *p = nullptr;
    unsigned host = 0;
    cudaEvent_t outside;
    cudaEventCreateWithFlags(&outside, cudaEventDisableTiming);
    cudaEventRecord(outside, nullptr);
    struct {
        const char *what;
        cudaError_t want;
        int call;
    } cases[] = {
        {"cudaMalloc while capturing", cudaErrorStreamCaptureUnsupported, 0},
        {"a stream sync while capturing", cudaErrorStreamCaptureUnsupported, 1},
        {"a pageable copy in a capture", cudaErrorStreamCaptureUnsupported, 2},
        {"a wait on an event recorded outside the capture", cudaErrorStreamCaptureIsolation, 3},
        {"a device sync while capturing", cudaErrorStreamCaptureUnsupported, 4},
    };
    for (const auto &c : cases) {
        cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
        cudaError_t e = c.call == 0   ? cudaMalloc(&p, 64)
                        : c.call == 1 ? cudaStreamSynchronize(s)
                        : c.call == 2 ? cudaMemcpyAsync(d, &host, 4, cudaMemcpyHostToDevice, s)
                        : c.call == 3 ? cudaStreamWaitEvent(s, outside, 0)
                                      : cudaDeviceSynchronize();
        expect(e == c.want, c.what);
        expect(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated && !g, c.what);
        cudaGetLastError();
    }
    cudaEventDestroy(outside);

    cudaStream_t blocking;
    cudaStreamCreate(&blocking);
    cudaStreamBeginCapture(blocking, cudaStreamCaptureModeGlobal);
    expect(cudaStreamIsCapturing(nullptr, &st) == cudaErrorStreamCaptureImplicit,
           "the legacy stream's capture query while a blocking stream captures");
    expect(cudaMemsetAsync(d, 0, 4, nullptr) == cudaErrorStreamCaptureImplicit,
           "legacy-stream work while a blocking stream captures");
    expect(cudaStreamEndCapture(blocking, &g) == cudaErrorStreamCaptureInvalidated,
           "which invalidates the capture");
    cudaGetLastError();
    cudaStreamDestroy(blocking);
    cudaStreamDestroy(s);
    cudaFree(d);
}

/* The operation asked for is refused, once, and only it: it queues
 * nothing, leaves its error, and invalidates a capture; a graph launch is
 * one operation. */
static void refused_operations()
{
    cudaStream_t s;
    unsigned *d = zeroed(&s);
    pleat_emu_fail_operation(1, cudaErrorLaunchOutOfResources);
    expect(cudaMemsetAsync(d, 1, 0, s) == cudaSuccess && pleat_emu_operation_failure_pending(),
           "an empty set does not count");
    launch(add_kernel, 1, 32, s, d, 1u);
    const size_t queued = pleat_emu_pending(s);
    expect(queued > 0, "the operations before the refused one are queued");
    expect(cudaMemsetAsync(d, 0, 32 * sizeof(unsigned), s) == cudaErrorLaunchOutOfResources &&
               !pleat_emu_operation_failure_pending(),
           "the one asked for is refused");
    expect(pleat_emu_pending(s) == queued, "and queues nothing");
    expect(cudaGetLastError() == cudaErrorLaunchOutOfResources, "and leaves its error");
    launch(add_kernel, 1, 32, s, d, 2u);
    expect(cudaGetLastError() == cudaSuccess, "only once");
    cudaStreamSynchronize(s);
    expect(back(d, 32)[31] == 3, "the launches around it ran");

    cudaGraph_t g = nullptr;
    cudaStream_t blocking;
    cudaStreamCreate(&blocking);
    cudaStreamBeginCapture(blocking, cudaStreamCaptureModeGlobal);
    pleat_emu_fail_operation(0, cudaErrorLaunchOutOfResources);
    expect(cudaMemsetAsync(d, 0, 4, nullptr) == cudaErrorStreamCaptureImplicit &&
               pleat_emu_operation_failure_pending(),
           "an operation the runtime refuses anyway does not count");
    cudaStreamEndCapture(blocking, &g);
    cudaGetLastError();
    cudaStreamDestroy(blocking);
    expect(dies_of(SIGABRT, []() { pleat_emu_fail_operation(0, cudaSuccess); }),
           "a refusal without an error aborts");

    pleat_emu_fail_operation(0, cudaErrorMemoryAllocation);
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    expect(cudaMemsetAsync(d, 0, 4, s) == cudaErrorMemoryAllocation, "refused in a capture");
    expect(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated && !g,
           "which invalidates the capture");
    cudaGetLastError();

    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    launch(add_kernel, 1, 32, s, d, 3u);
    launch(add_kernel, 1, 32, s, d, 3u);
    cudaStreamEndCapture(s, &g);
    cudaGraphExec_t exec = nullptr;
    cudaGraphInstantiate(&exec, g, 0);
    pleat_emu_fail_operation(1, cudaErrorLaunchOutOfResources);
    expect(cudaGraphLaunch(exec, s) == cudaSuccess && pleat_emu_operation_failure_pending(),
           "a graph launch counts once");
    expect(cudaGraphLaunch(exec, s) == cudaErrorLaunchOutOfResources, "and is refused whole");
    cudaGetLastError();
    cudaStreamSynchronize(s);
    expect(back(d, 32)[0] == 9, "the launched graph ran, the refused one did not");
    pleat_emu_fail_operation(0, cudaErrorLaunchOutOfResources);
    pleat_emu_fail_operation(-1, cudaSuccess);
    launch(add_kernel, 1, 32, s, d, 1u);
    expect(!pleat_emu_operation_failure_pending() && cudaGetLastError() == cudaSuccess,
           "a cancelled one is not refused");
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
    cudaFree(d);
}

/* The wait asked for fails, once, and only it: it first runs what it waits
 * for, and leaves its error. Event, stream and device waits count; one the
 * runtime refuses anyway does not. */
static void failed_waits()
{
    cudaStream_t s;
    unsigned *d = zeroed(&s);
    cudaEvent_t done;
    cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
    pleat_emu_fail_wait(2, cudaErrorLaunchFailure);
    launch(add_kernel, 1, 32, s, d, 1u);
    cudaEventRecord(done, s);
    expect(cudaEventSynchronize(done) == cudaSuccess && cudaStreamSynchronize(s) == cudaSuccess &&
               pleat_emu_wait_failure_pending(),
           "the waits before the one asked for succeed");
    launch(add_kernel, 1, 32, s, d, 2u);
    expect(cudaDeviceSynchronize() == cudaErrorLaunchFailure && !pleat_emu_wait_failure_pending(),
           "the one asked for fails");
    expect(cudaGetLastError() == cudaErrorLaunchFailure, "and leaves its error");
    expect(pleat_emu_pending(s) == 0 && back(d, 32)[31] == 3, "once it has run its work");
    expect(cudaStreamSynchronize(s) == cudaSuccess && cudaGetLastError() == cudaSuccess,
           "only once");

    pleat_emu_fail_wait(0, cudaErrorIllegalAddress);
    cudaGraph_t g = nullptr;
    cudaEvent_t captured;
    cudaEventCreateWithFlags(&captured, cudaEventDisableTiming);
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    cudaEventRecord(captured, s);
    expect(cudaEventSynchronize(captured) == cudaErrorCapturedEvent &&
               cudaDeviceSynchronize() == cudaErrorStreamCaptureUnsupported &&
               cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported &&
               pleat_emu_wait_failure_pending(),
           "waits the runtime refuses anyway do not count");
    cudaStreamEndCapture(s, &g);
    cudaGetLastError();
    cudaEventDestroy(captured);
    expect(cudaEventSynchronize(done) == cudaErrorIllegalAddress &&
               cudaGetLastError() == cudaErrorIllegalAddress,
           "the next one fails with the error asked for");
    pleat_emu_fail_wait(0, cudaErrorLaunchFailure);
    expect(cudaStreamSynchronize(s) == cudaErrorLaunchFailure &&
               cudaGetLastError() == cudaErrorLaunchFailure,
           "a stream's wait too");
    cudaEvent_t fresh;
    cudaEventCreateWithFlags(&fresh, cudaEventDisableTiming);
    pleat_emu_fail_wait(0, cudaErrorLaunchFailure);
    expect(cudaEventSynchronize(fresh) == cudaErrorLaunchFailure &&
               cudaGetLastError() == cudaErrorLaunchFailure,
           "a wait for an event never recorded too");
    cudaEventDestroy(fresh);
    pleat_emu_fail_wait(0, cudaErrorLaunchFailure);
    pleat_emu_fail_wait(-1, cudaSuccess);
    expect(cudaEventSynchronize(done) == cudaSuccess && !pleat_emu_wait_failure_pending(),
           "a cancelled one does not fail");
    expect(dies_of(SIGABRT, []() { pleat_emu_fail_wait(0, cudaSuccess); }),
           "a failure without an error aborts");
    cudaEventDestroy(done);
    cudaStreamDestroy(s);
    cudaFree(d);
}

/* What lost_devices() holds on device 0 when it loses it: a stream with
 * its graph, on d; another stream, capturing, and work queued there on
 * `dropped`; an event. */
struct lost_objects {
    cudaStream_t s, capturing;
    unsigned *d, *dropped;
    cudaEvent_t e;
    cudaGraph_t g;
    cudaGraphExec_t exec;
};

/* Each call that uses o's device, lost to `gone`, fails with it. */
static void calls_on_lost(lost_objects &o, cudaError_t gone)
{
    void *p = nullptr;
    unsigned h[32];
    cudaStream_t made_stream = nullptr;
    cudaEvent_t made_event = nullptr;
    cudaGraph_t captured = nullptr;
    cudaGraphExec_t made_exec = nullptr;
    cudaStreamCaptureStatus capturing;
    cudaFuncAttributes attr;
    size_t bytes = 0;
    cub::DoubleBuffer<uint32_t> keys, values;
    const std::pair<const char *, std::function<cudaError_t()>> calls[] = {
        {"cudaMalloc", [&] { return cudaMalloc(&p, 64); }},
        {"cudaMallocHost", [&] { return cudaMallocHost(&p, 64); }},
        {"cudaFree(NULL)", [] { return cudaFree(nullptr); }},
        {"a launch", [&] { return launch(add_kernel, 1, 32, o.s, o.d, 1u); }},
        {"cudaMemsetAsync", [&] { return cudaMemsetAsync(o.d, 0, 4, o.s); }},
        {"cudaMemcpy", [&] { return cudaMemcpy(h, o.d, sizeof h, cudaMemcpyDeviceToHost); }},
        {"cudaMemcpyAsync",
         [&] { return cudaMemcpyAsync(o.d, h, sizeof h, cudaMemcpyHostToDevice, o.s); }},
        {"a copy of 0 bytes", [&] { return cudaMemcpyAsync(o.d, h, 0, cudaMemcpyDefault, o.s); }},
        {"a set of 0 bytes", [&] { return cudaMemsetAsync(o.d, 0, 0, o.s); }},
        {"a pageable copy in a capture",
         [&] { return cudaMemcpyAsync(h, o.d, sizeof h, cudaMemcpyDeviceToHost, o.capturing); }},
        {"cudaEventRecord", [&] { return cudaEventRecord(o.e, o.s); }},
        {"cudaStreamWaitEvent", [&] { return cudaStreamWaitEvent(o.s, o.e, 0); }},
        {"cudaStreamSynchronize", [&] { return cudaStreamSynchronize(o.s); }},
        {"cudaEventSynchronize", [&] { return cudaEventSynchronize(o.e); }},
        {"cudaDeviceSynchronize", [] { return cudaDeviceSynchronize(); }},
        {"cudaStreamCreate", [&] { return cudaStreamCreate(&made_stream); }},
        {"cudaEventCreateWithFlags", [&] { return cudaEventCreateWithFlags(&made_event, 0); }},
        {"cudaStreamBeginCapture",
         [&] { return cudaStreamBeginCapture(o.s, cudaStreamCaptureModeGlobal); }},
        {"cudaStreamIsCapturing", [&] { return cudaStreamIsCapturing(o.s, &capturing); }},
        {"cudaFuncGetAttributes", [&] { return cudaFuncGetAttributes(&attr, add_kernel); }},
        {"CUB's size query",
         [&] { return cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, values, 100); }},
        {"cudaGraphInstantiate", [&] { return cudaGraphInstantiate(&made_exec, o.g, 0); }},
        {"cudaGraphLaunch", [&] { return cudaGraphLaunch(o.exec, o.s); }},
        {"cudaStreamEndCapture", [&] { return cudaStreamEndCapture(o.capturing, &captured); }},
    };
    for (const auto &call : calls) {
        char what[96];
        snprintf(what, sizeof what, "%s on a lost device fails with its error", call.first);
        expect(call.second() == gone, what);
    }
    expect(!made_stream && !made_event && !made_exec && !captured && bytes == 0,
           "and makes nothing");
}

/* A lost device (pleat_emu_lose_device, a GPU's sticky error) fails every
 * call that uses it with its error (calls_on_lost), which cudaGetLastError
 * returns and keeps; its queued work never runs; releases fail but free;
 * queries that need no context and the other device work. Given back, it
 * works. */
static void lost_devices()
{
    const cudaError_t gone = cudaErrorIllegalAddress;
    lost_objects o;
    o.d = zeroed(&o.s);
    o.dropped = zeroed(&o.capturing);
    cudaEventCreateWithFlags(&o.e, cudaEventDisableTiming);
    cudaStreamBeginCapture(o.s, cudaStreamCaptureModeGlobal);
    launch(add_kernel, 1, 32, o.s, o.d, 1u);
    cudaStreamEndCapture(o.s, &o.g);
    cudaGraphInstantiate(&o.exec, o.g, 0);
    launch(add_kernel, 1, 32, o.capturing, o.dropped, 1u);
    cudaStreamBeginCapture(o.capturing, cudaStreamCaptureModeThreadLocal);
    pleat_emu_lose_device(0, gone);
    calls_on_lost(o, gone);
    expect(cudaGetLastError() == gone && cudaGetLastError() == gone &&
               cudaPeekAtLastError() == gone,
           "a lost device's error stays");
    int n = 0;
    cudaDeviceProp prop;
    expect(cudaGetDeviceCount(&n) == cudaSuccess &&
               cudaGetDeviceProperties(&prop, 0) == cudaSuccess &&
               cudaRuntimeGetVersion(&n) == cudaSuccess && cudaGetDevice(&n) == cudaSuccess,
           "the queries that need no context work");
    void *p = nullptr;
    cudaSetDevice(1);
    expect(cudaPeekAtLastError() == cudaSuccess && cudaMalloc(&p, 64) == cudaSuccess &&
               cudaFree(p) == cudaSuccess,
           "the other device works");
    cudaSetDevice(0);
    const size_t live = pleat_emu_live();
    expect(cudaEventDestroy(o.e) == gone && cudaStreamDestroy(o.s) == gone &&
               cudaFree(o.d) == gone && pleat_emu_live() == live - 3,
           "releases fail, and free");
    pleat_emu_lose_device(0, cudaSuccess);
    cudaGetLastError();
    expect(cudaStreamSynchronize(o.capturing) == cudaSuccess && back(o.dropped, 32)[0] == 0,
           "a device given back works, and the work queued when it was lost never ran");
    cudaGraphExecDestroy(o.exec);
    cudaGraphDestroy(o.g);
    cudaStreamDestroy(o.capturing);
    cudaFree(o.dropped);
    expect(cudaGetLastError() == cudaSuccess, "no error left");
}

/* A wait failure that stays (pleat_emu_wait_failures_stay) loses the
 * device it waited on once it has run that work, and drops the device's
 * other work. */
static void wait_failures_that_stay()
{
    cudaStream_t s, s2;
    unsigned *d = zeroed(&s), *d2 = zeroed(&s2);
    pleat_emu_wait_failures_stay(1);
    pleat_emu_fail_wait(0, cudaErrorLaunchFailure);
    launch(add_kernel, 1, 32, s, d, 1u);
    launch(add_kernel, 1, 32, s2, d2, 1u);
    void *p = nullptr;
    expect(cudaStreamSynchronize(s) == cudaErrorLaunchFailure &&
               cudaMalloc(&p, 64) == cudaErrorLaunchFailure && !p,
           "a wait failure that stays loses the device");
    pleat_emu_wait_failures_stay(0);
    pleat_emu_lose_device(0, cudaSuccess);
    cudaGetLastError();
    expect(cudaStreamSynchronize(s2) == cudaSuccess && back(d, 32)[0] == 1 &&
               back(d2, 32)[0] == 0,
           "once the work it waited for ran: the device's other work is dropped");
    pleat_emu_fail_wait(0, cudaErrorLaunchFailure);
    expect(cudaStreamSynchronize(s) == cudaErrorLaunchFailure && cudaGetLastError() &&
               cudaMalloc(&p, 64) == cudaSuccess,
           "once asked no more, a wait failure is once again");
    cudaFree(p);
    cudaStreamDestroy(s);
    cudaStreamDestroy(s2);
    cudaFree(d);
    cudaFree(d2);
}

/* Each query and setup call fails when asked to, once, with the error
 * asked for, left for cudaGetLastError, and writes nothing; the same call
 * then succeeds. */
static void failed_calls()
{
    const cudaError_t no = cudaErrorDevicesUnavailable;
    int n = -1;
    cudaStream_t s = nullptr;
    cudaEvent_t e = nullptr;
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusActive;
    cudaDeviceProp prop;
    cudaFuncAttributes attr;
    size_t bytes = 0;
    cub::DoubleBuffer<uint32_t> keys, values;
    const struct {
        const char *what;
        std::function<cudaError_t()> call;
        std::function<bool()> untouched;
    } calls[] = {
        {"cudaGetDeviceCount", [&] { return cudaGetDeviceCount(&n); }, [&] { return n < 0; }},
        {"cudaGetDevice", [&] { return cudaGetDevice(&n); }, [&] { return n < 0; }},
        {"cudaDriverGetVersion", [&] { return cudaDriverGetVersion(&n); }, [&] { return n < 0; }},
        {"cudaRuntimeGetVersion", [&] { return cudaRuntimeGetVersion(&n); },
         [&] { return n < 0; }},
        {"cudaSetDevice", [&] { return cudaSetDevice(1); },
         [&] {
             int now = -1;
             return cudaGetDevice(&now) == cudaSuccess && now == 0;
         }},
        {"cudaGetDeviceProperties", [&] { return cudaGetDeviceProperties(&prop, 0); },
         [&] { return prop.major == -1; }},
        {"cudaFuncGetAttributes", [&] { return cudaFuncGetAttributes(&attr, add_kernel); },
         [&] { return attr.maxThreadsPerBlock == -1; }},
        {"cudaStreamCreateWithFlags",
         [&] { return cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); },
         [&] { return s == nullptr; }},
        {"cudaStreamIsCapturing", [&] { return cudaStreamIsCapturing(nullptr, &capturing); },
         [&] { return capturing == cudaStreamCaptureStatusActive; }},
        {"cudaEventCreateWithFlags",
         [&] { return cudaEventCreateWithFlags(&e, cudaEventDisableTiming); },
         [&] { return e == nullptr; }},
        {"CUB's size query",
         [&] { return cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, values, 100); },
         [&] { return bytes == 0; }},
    };
    for (const auto &c : calls) {
        n = prop.major = attr.maxThreadsPerBlock = -1;
        bytes = 0;
        pleat_emu_fail_call(0, no);
        expect(c.call() == no && !pleat_emu_call_failure_pending() && c.untouched(), c.what);
        expect(cudaGetLastError() == no, "a failed call leaves its error");
        expect(c.call() == cudaSuccess && !c.untouched() && cudaGetLastError() == cudaSuccess,
               "and then succeeds");
        cudaSetDevice(0); /* after cudaSetDevice's row */
    }
    cudaEventDestroy(e);
    cudaStreamDestroy(s);
}

/* Allocations, sets, launches, sorts, waits and releases do not count as
 * the calls pleat_emu_fail_call fails (but cudaFree(NULL), which makes a
 * device's context), nor does a call the runtime refuses anyway. */
static void calls_that_count()
{
    const cudaError_t no = cudaErrorDevicesUnavailable;
    int n = -1;
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    size_t bytes = 0;
    cub::DoubleBuffer<uint32_t> keys, values;
    cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, values, 100);
    pleat_emu_fail_call(1, no);
    expect(cudaGetDeviceCount(nullptr) == cudaErrorInvalidValue &&
               cudaSetDevice(2) == cudaErrorInvalidDevice && pleat_emu_call_failure_pending(),
           "calls the runtime refuses anyway do not count");
    cudaGetLastError();
    unsigned *d = device<unsigned>(64);
    void *temp = device<char>(bytes); /* the size query's, for 100 items: more than enough */
    cub::DoubleBuffer<uint32_t> halves(d, d + 32);
    cudaMemsetAsync(d, 0, 64 * sizeof(unsigned), s);
    launch(add_kernel, 1, 32, s, d, 1u);
    cub::DeviceRadixSort::SortKeys(temp, bytes, halves, 32, 0, 32, s);
    cudaStreamSynchronize(s);
    cudaFree(temp);
    expect(cudaFreeHost(nullptr) == cudaSuccess && cudaGetLastError() == cudaSuccess &&
               pleat_emu_call_failure_pending(),
           "memory, a set, a launch, a sort, a wait and releases do not count");
    expect(cudaGetDevice(&n) == cudaSuccess && cudaGetDevice(&n) == no,
           "the one after the skipped ones fails");
    cudaGetLastError();
    pleat_emu_fail_call(0, no);
    expect(cudaFree(nullptr) == no && cudaGetLastError() == no && cudaFree(nullptr) == cudaSuccess,
           "cudaFree(NULL), which makes the device's context, counts");
    pleat_emu_fail_call(0, no);
    pleat_emu_fail_call(-1, cudaSuccess);
    expect(cudaGetDevice(&n) == cudaSuccess && !pleat_emu_call_failure_pending(),
           "a cancelled one does not fail");
    expect(dies_of(SIGABRT, []() { pleat_emu_fail_call(0, cudaSuccess); }),
           "a failure without an error aborts");
    cudaStreamDestroy(s);
    cudaFree(d);
}

/* pleat_emu_live counts allocations, streams and events made and not
 * released, and nothing else (the legacy streams). */
static void live_objects()
{
    const size_t before = pleat_emu_live();
    unsigned *d = device<unsigned>(4);
    void *pinned = nullptr;
    cudaMallocHost(&pinned, 16);
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaEvent_t e;
    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    expect(pleat_emu_live() == before + 4, "two allocations, a stream and an event held");
    cudaFree(d);
    cudaFreeHost(pinned);
    cudaStreamDestroy(s);
    cudaEventDestroy(e);
    expect(pleat_emu_live() == before, "and released");
}

/* ---- CUB ---------------------------------------------------------------------- */

/* The sorts' test keys: the next of a xorshift sequence. */
static uint64_t xorshift(uint64_t *r)
{
    *r ^= *r << 13;
    *r ^= *r >> 7;
    *r ^= *r << 17;
    return *r;
}

/* One DoubleBuffer sort of n keys with few distinct digits (many ties) on
 * bits [begin_bit, end_bit): the selector must move by `flips`, and the
 * current buffers hold a stable sort, keys carried whole. */
static void sort_case(size_t n, int begin_bit, int end_bit, int flips)
{
    std::vector<uint32_t> keys(n), values(n);
    uint64_t r = 88172645463325252ull;
    for (size_t i = 0; i < n; ++i) {
        keys[i] = (uint32_t)xorshift(&r) & 0x0fff00ffu;
        values[i] = (uint32_t)i;
    }
    uint32_t *k[2] = {device<uint32_t>(n), device<uint32_t>(n)},
             *v[2] = {device<uint32_t>(n), device<uint32_t>(n)};
    cudaMemcpy(k[0], keys.data(), n * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(v[0], values.data(), n * 4, cudaMemcpyHostToDevice);
    cub::DoubleBuffer<uint32_t> dk(k[0], k[1]), dv(v[0], v[1]);
    size_t bytes = 0;
    cub::DeviceRadixSort::SortPairs(nullptr, bytes, dk, dv, n, begin_bit, end_bit);
    expect(dk.selector == 0 && dv.selector == 0, "a size query moves no selector");
    void *temp = nullptr;
    cudaMalloc(&temp, bytes);
    size_t short_bytes = bytes - 1;
    expect(cub::DeviceRadixSort::SortPairs(temp, short_bytes, dk, dv, n, begin_bit, end_bit) ==
               cudaErrorInvalidValue,
           "too little temporary storage is refused");
    if ((32 - begin_bit + 7) / 8 > (end_bit - begin_bit + 7) / 8) /* a pass more */
        expect(cub::DeviceRadixSort::SortPairs(temp, bytes, dk, dv, n, begin_bit, 32) ==
                   cudaErrorInvalidValue,
               "a sort on more bits than its size query asked about is refused");
    expect(cub::DeviceRadixSort::SortPairs(temp, bytes, dk, dv, n, begin_bit, end_bit) ==
               cudaSuccess,
           "SortPairs");
    expect(dk.selector == flips && dv.selector == flips,
           "the selectors name the buffers CUB would leave the sort in");
    std::vector<uint32_t> order(n);
    for (size_t i = 0; i < n; ++i)
        order[i] = (uint32_t)i;
    const uint32_t mask = (uint32_t)((((uint64_t)1 << (end_bit - begin_bit)) - 1) << begin_bit);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return (keys[a] & mask) < (keys[b] & mask); });
    std::vector<uint32_t> got_k = back(dk.Current(), n), got_v = back(dv.Current(), n);
    bool same = true;
    for (size_t i = 0; i < n; ++i)
        same &= got_v[i] == order[i] && got_k[i] == keys[order[i]];
    expect(same, "SortPairs is a stable sort on the bit range, keys carried whole");
    cudaFree(temp);
    for (int b = 0; b < 2; ++b) {
        cudaFree(k[b]);
        cudaFree(v[b]);
    }
}

/* SortKeys of 8-byte keys, as pleat sorts its pair lists: 3000 of them
 * are more than a tile (256 x 9), so 4 passes end where they started. */
static void sort_wide_keys()
{
    const size_t n = 3000;
    std::vector<unsigned long long> keys(n);
    uint64_t r = 2463534242ull;
    for (size_t i = 0; i < n; ++i)
        keys[i] = xorshift(&r) & 0xffffffffull;
    unsigned long long *k[2] = {device<unsigned long long>(n), device<unsigned long long>(n)};
    cudaMemcpy(k[0], keys.data(), n * 8, cudaMemcpyHostToDevice);
    cub::DoubleBuffer<unsigned long long> dk(k[0], k[1]);
    size_t bytes = 0;
    cub::DeviceRadixSort::SortKeys(nullptr, bytes, dk, n, 0, 32);
    void *temp = nullptr;
    cudaMalloc(&temp, bytes);
    expect(cub::DeviceRadixSort::SortKeys(temp, bytes, dk, n, 0, 32) == cudaSuccess &&
               dk.selector == 0,
           "SortKeys of 8-byte keys past a tile of them: 4 passes, back in the first buffer");
    std::sort(keys.begin(), keys.end());
    expect(back(dk.Current(), n) == keys, "SortKeys sorts");
    cudaFree(temp);
    cudaFree(k[0]);
    cudaFree(k[1]);
}

static void sort()
{
    sort_case(10007, 3, 27, 1); /* 3 passes, each a flip */
    sort_case(10007, 0, 32, 0); /* 4 */
    sort_case(1000, 0, 32, 1);  /* one tile: once into the alternate */
    sort_wide_keys();
}

/* ---- what aborts ---------------------------------------------------------------- */

__global__ void early_exit_kernel(unsigned *out)
{
    if (threadIdx.x == 7)
        return;
    out[threadIdx.x] = __ballot_sync(0xffffffffu, 1);
}

__global__ void divergent_kernel(unsigned *out)
{
    if (threadIdx.x < 16)
        out[threadIdx.x] = __ballot_sync(0xffffffffu, 1);
    else
        out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, threadIdx.x, 1);
}

__global__ void sync_after_exit_kernel(unsigned *out)
{
    if (threadIdx.x >= 32)
        return;
    __syncthreads();
    out[threadIdx.x] = 1;
}

__global__ void stuck_kernel(unsigned *out)
{
    if (threadIdx.x == 3)
        __syncthreads();
    else
        __syncwarp();
    out[threadIdx.x] = 1;
}

__global__ void past_end_kernel(unsigned *out, unsigned n) { out[n + threadIdx.x] = 1; }
__global__ void before_start_kernel(unsigned *out) { out[-1 - (int)threadIdx.x] = 1; }

/* n unsigned from one past_end_kernel thread: the write lands in the bytes
 * between the block's end and its 256-byte-rounded end (n = 10), or on the
 * guard page after them (n = 64). */
static void write_past(unsigned n)
{
    unsigned *d = device<unsigned>(n);
    launch(past_end_kernel, 1, 1, nullptr, d, n);
    cudaDeviceSynchronize();
}

/* One unsigned before a block of n: into the bytes before it on its first
 * page (n = 10), or onto the guard page before that page (n = 1024, a
 * page). */
static void write_before(unsigned n)
{
    unsigned *d = device<unsigned>(n);
    launch(before_start_kernel, 1, 1, nullptr, d);
    cudaDeviceSynchronize();
}

/* Copies one float4, or a float2 when `two`, from in + at to out + at.
 * UndefinedBehaviorSanitizer, where built in, would stop a misaligned one
 * first (alignment): it is left to the emulator's own check, under test. */
__global__ __attribute__((no_sanitize("alignment"))) void
vector_kernel(const float *in, float *out, unsigned at, int two)
{
    if (two)
        *reinterpret_cast<float2 *>(out + at) = *reinterpret_cast<const float2 *>(in + at);
    else
        *reinterpret_cast<float4 *>(out + at) = *reinterpret_cast<const float4 *>(in + at);
}

/* The vector types move their floats where aligned, and abort where a GPU
 * would fault (misaligned address). */
static void vectors()
{
    float *d = device<float>(16);
    const std::vector<float> in = {1, 2, 3, 4, 5, 6, 7, 8};
    cudaMemcpy(d, in.data(), 8 * sizeof(float), cudaMemcpyHostToDevice);
    launch(vector_kernel, 1, 1, nullptr, (const float *)d, d + 8, 4u, 0);
    launch(vector_kernel, 1, 1, nullptr, (const float *)d, d + 8, 2u, 1);
    const std::vector<float> out = back(d + 8, 8);
    expect(std::equal(out.begin() + 2, out.end(), in.begin() + 2),
           "an aligned float4 and float2 copy their floats");
    auto copy = [d](unsigned at, int two) {
        return [d, at, two]() {
            launch(vector_kernel, 1, 1, nullptr, (const float *)d, d + 8, at, two);
            cudaDeviceSynchronize();
        };
    };
    expect(dies_of(SIGABRT, copy(2, 0)), "a float4 off a 16-byte boundary aborts");
    expect(dies_of(SIGABRT, copy(1, 1)), "a float2 off an 8-byte boundary aborts");
    cudaFree(d);
}

static void aborts()
{
    unsigned *d = device<unsigned>(64);
    auto run = [d](void (*k)(unsigned *), unsigned threads) {
        return [d, k, threads]() {
            launch(k, 1, threads, nullptr, d);
            cudaDeviceSynchronize();
        };
    };
    expect(dies_of(SIGABRT, run(early_exit_kernel, 32)),
           "a lane that exits before a warp intrinsic waiting for it aborts");
    expect(dies_of(SIGABRT, run(divergent_kernel, 32)),
           "lanes meeting at different intrinsics abort");
    expect(dies_of(SIGABRT, run(sync_after_exit_kernel, 64)),
           "__syncthreads after threads exited aborts");
    expect(dies_of(SIGABRT, run(stuck_kernel, 32)), "a block that cannot go on aborts");
    expect(dies_of(SIGSEGV, [d]() { *(volatile unsigned *)d = 1; }),
           "the host touching device memory faults");
    expect(dies_of(SIGABRT,
                   []() {
                       static unsigned pageable[64];
                       launch(fill_kernel, 1, 64, nullptr, pageable, 64u, 1u);
                   }),
           "a kernel given a pageable host pointer aborts as it is queued");
    unsigned *pinned = nullptr;
    cudaMallocHost((void **)&pinned, 64 * sizeof(unsigned));
    launch(fill_kernel, 1, 64, nullptr, pinned, 64u, 7u);
    cudaDeviceSynchronize();
    expect(pinned[0] == 7 && pinned[63] == 7, "a kernel writes pinned host memory");
    cudaFreeHost(pinned);
    expect(dies_of(SIGSEGV, []() { write_past(64); }),
           "a kernel writing onto the guard page after its allocation faults");
    expect(dies_of(SIGABRT, []() { write_past(10); }),
           "a kernel writing into the rounding after its allocation aborts");
    expect(dies_of(SIGSEGV, []() { write_before(1024); }),
           "a kernel writing onto the guard page before its allocation faults");
    expect(dies_of(SIGABRT, []() { write_before(10); }),
           "a kernel writing into its first page before its allocation aborts");
    expect(dies_of(SIGSEGV,
                   []() {
                       unsigned *x = device<unsigned>(64);
                       cudaStream_t s;
                       cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
                       launch(fill_kernel, 1, 64, s, x, 64u, 1u);
                       cudaFree(x); /* does not wait for s */
                       unsigned *again = device<unsigned>(64);
                       (void)again; /* never at x's addresses */
                       cudaStreamSynchronize(s);
                   }),
           "queued work on memory freed before it ran faults, even after a new cudaMalloc");
    cudaFree(d);
}

/* ---- order ------------------------------------------------------------------------ */

/* Lane `writer` writes what lane `reader` reads, with no sync between:
 * which value the reader sees is the schedule's choice. */
__global__ void racy_kernel(unsigned *out, unsigned writer, unsigned reader)
{
    __shared__ unsigned s;
    if (threadIdx.x == 0)
        s = 1;
    __syncwarp();
    __ballot_sync(0xffffffffu, 1);
    if (threadIdx.x == writer)
        s = 2;
    if (threadIdx.x == reader)
        out[0] = s;
}

/* Each block takes a ticket, counting up to the grid's last and wrapping
 * to 0 (the last-block pattern's counter): out[block] = its ticket. */
__global__ void ticket_kernel(unsigned *counter, unsigned *out)
{
    if (threadIdx.x == 0)
        out[blockIdx.x] = atomicInc(counter, gridDim.x - 1);
}

static void order()
{
    const char *o = getenv("PLEAT_CUDA_EMULATOR_ORDER");
    const bool reverse = o && strcmp(o, "reverse") == 0;
    const unsigned blocks = 5;
    unsigned *t = device<unsigned>(1 + blocks);
    cudaMemset(t, 0, sizeof(unsigned));
    launch(ticket_kernel, blocks, 32, nullptr, t, t + 1);
    std::vector<unsigned> got = back(t, 1 + blocks);
    bool tickets = got[0] == 0; /* wrapped after the last */
    for (unsigned b = 0; b < blocks; ++b)
        tickets &= got[1 + b] == (reverse ? blocks - 1 - b : b);
    expect(tickets, "blocks run in the order's direction, and atomicInc wraps at its limit");
    cudaFree(t);

    unsigned *d = device<unsigned>(1);
    /* the first lane to resume is the first in the order, even when another
     * lane was the last to arrive: so the ends of the warp race too */
    const unsigned pairs[][2] = {{2, 3}, {31, 5}, {0, 30}};
    for (const auto &wr : pairs) {
        launch(racy_kernel, 1, 32, nullptr, d, wr[0], wr[1]);
        bool writer_first = (wr[0] < wr[1]) != reverse;
        expect(back(d, 1)[0] == (writer_first ? 2u : 1u),
               "the two orders schedule lanes between sync points differently");
    }

    /* s2 adds to what s1 sets, without waiting for it */
    cudaMemset(d, 0, sizeof(unsigned));
    cudaDeviceSynchronize(); /* non-blocking streams do not wait for the memset */
    cudaStream_t s1, s2;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    launch(fill_kernel, 1, 1, s1, d, 1u, 5u);
    launch(add_kernel, 1, 1, s2, d, 1u);
    cudaDeviceSynchronize();
    expect(back(d, 1)[0] == (reverse ? 5u : 6u),
           "a device sync runs the streams in the order's direction");
    cudaStreamDestroy(s2);
    cudaStreamDestroy(s1);
    cudaFree(d);
}

/* ---- the race mode --------------------------------------------------------------- */

/* How the lanes of race_kernel's warp, or its two warps, meet between a
 * write and a read of another thread's. */
enum race_case {
    RACE_NOTHING,      /* lane 3 reads what lane 2 wrote, nothing between */
    RACE_SHUFFLE,      /* a shuffle between, which orders no memory */
    RACE_SYNCWARP,     /* __syncwarp between */
    RACE_OTHER_WARP,   /* __syncwarp, but the reader is in the other warp */
    RACE_SYNCTHREADS,  /* __syncthreads, the reader in the other warp */
    RACE_PLAIN_ADD,    /* every thread adds 1 to one word, plainly */
    RACE_ATOMIC_ADD,   /* the same with atomicAdd */
    RACE_NEXT_BARRIER, /* past a __syncthreads, a thread writes what one read before it */
    RACE_LATER_WARP,   /* RACE_OTHER_WARP after the other warp's 4096 __syncwarps */
};

__global__ void race_kernel(unsigned *out, race_case c)
{
    __shared__ unsigned s;
    unsigned local[64]; /* each thread's stack is its own */
    for (unsigned k = 0; k < 64; ++k)
        local[k] = threadIdx.x + k;
    const unsigned t = threadIdx.x, writer = 2, reader = c >= RACE_OTHER_WARP ? 35 : 3;
    if (c == RACE_LATER_WARP && t >= 32) /* no barrier orders warps: however many */
        for (int k = 0; k < 4096; ++k)
            __syncwarp();
    if (c == RACE_PLAIN_ADD || c == RACE_ATOMIC_ADD) {
        if (c == RACE_PLAIN_ADD)
            out[0] += local[0] - t + 1;
        else
            atomicAdd(out, local[0] - t + 1);
        return;
    }
    if (c == RACE_NEXT_BARRIER) {
        const unsigned seen = out[1]; /* all read, then one writes */
        __syncthreads();
        if (t == writer)
            out[1] = seen + local[63];
        return;
    }
    if (t == writer)
        s = local[5];
    if (c == RACE_SHUFFLE)
        __shfl_sync(0xffffffffu, t, 0);
    if (c == RACE_SYNCWARP || c == RACE_OTHER_WARP || c == RACE_LATER_WARP)
        __syncwarp();
    if (c == RACE_SYNCTHREADS)
        __syncthreads();
    if (t == reader)
        out[0] = s;
}

/* The race mode (PLEAT_CUDA_EMULATOR_RACES=1, in a ThreadSanitizer build,
 * which reports a race with exit status 66): what orders threads on a GPU
 * orders them there, and nothing else. The race-free cases run in two
 * blocks of the same shared memory, and none shares a stack. */
static void races()
{
    unsigned *d = device<unsigned>(2);
    auto run = [d](race_case c) {
        return [d, c]() {
            cudaMemset(d, 0, 2 * sizeof(unsigned));
            launch(race_kernel, 2, 64, nullptr, d, c);
            cudaDeviceSynchronize();
        };
    };
    const int reported = 66;
    expect(exits_with(reported, run(RACE_NOTHING)), "a read of another lane's write races");
    expect(exits_with(reported, run(RACE_SHUFFLE)), "a shuffle orders no memory");
    expect(exits_with(0, run(RACE_SYNCWARP)), "__syncwarp orders its lanes");
    expect(exits_with(reported, run(RACE_OTHER_WARP)), "__syncwarp orders no other warp");
    expect(exits_with(0, run(RACE_SYNCTHREADS)), "__syncthreads orders the block");
    expect(exits_with(reported, run(RACE_PLAIN_ADD)), "a plain add of many threads races");
    expect(exits_with(0, run(RACE_ATOMIC_ADD)), "atomicAdd does not race");
    expect(exits_with(0, run(RACE_NEXT_BARRIER)), "a write past a barrier follows its reads");
    expect(exits_with(reported, run(RACE_LATER_WARP)),
           "__syncwarp orders no other warp, after many of them");
    run(RACE_ATOMIC_ADD)();
    expect(back(d, 1)[0] == 2 * 64, "atomicAdd adds");
    /* ThreadSanitizer checks nothing in a child of a process that ran a
     * kernel in this mode (engine.cc) */
    expect(dies_of(SIGABRT, run(RACE_NOTHING)),
           "a kernel in a fork() child of a process that ran one aborts");
    cudaFree(d);
}

/* ---- floating point ------------------------------------------------------------ */

/* out[0] = a * a (1e-20 squared: a subnormal), out[1] = 1 / b (3: inexact) */
__global__ void arithmetic_kernel(float *out, float a, float b)
{
    out[0] = a * a;
    out[1] = 1.0f / b;
}

/* Kernels compute in the default environment, whatever the waiting
 * thread's: no flush to zero, rounding to nearest, no trap. */
static void fp_environment()
{
    float *d = device<float>(2);
    const unsigned csr = _mm_getcsr();
    feclearexcept(FE_ALL_EXCEPT);
    _mm_setcsr(csr | 0x8040); /* flush to zero, denormals are zero */
    fesetround(FE_UPWARD);
    feenableexcept(FE_INEXACT | FE_UNDERFLOW); /* one raised would trap */
    launch(arithmetic_kernel, 1, 1, nullptr, d, 1e-20f, 3.0f);
    const std::vector<float> got = back(d, 2);
    const bool flags_kept = fetestexcept(FE_ALL_EXCEPT) == 0;
    fedisableexcept(FE_ALL_EXCEPT);
    fesetround(FE_TONEAREST);
    _mm_setcsr(csr);
    volatile float a = 1e-20f, b = 3.0f; /* computed here, by default */
    expect(got[0] == a * a && got[0] != 0.0f && got[1] == 1.0f / b,
           "kernels compute in the default floating-point environment");
    expect(flags_kept, "and leave the waiting thread's flags as they were");
    feclearexcept(FE_ALL_EXCEPT);
    cudaFree(d);
}

/* The runtime does not survive a fork() of a process that called it: in
 * the child, a call aborts. */
static void fork_child()
{
    pleat_emu_survive_fork(0);
    int n = 0;
    expect(cudaGetDeviceCount(&n) == cudaSuccess && n == 2, "a call before the fork");
    expect(dies_of(SIGABRT, [&n]() { cudaGetDeviceCount(&n); }),
           "a call in a fork() child aborts");
    expect(dies_of(SIGABRT, []() { cudaPeekAtLastError(); }),
           "so does a look at the last error");
    pleat_emu_survive_fork(1);
    expect(!dies_of(SIGABRT, [&n]() { cudaGetDeviceCount(&n); }),
           "unless the test lets the child call");
}

int main(int argc, char **argv)
{
    pleat_emu_survive_fork(1); /* the death tests run the emulator in children */
    if (argc > 1 && strcmp(argv[1], "--races") == 0) {
        races(); /* the race mode's (the other sections race on purpose) */
        printf("cuda emulator, race mode: %d passed, %d failed\n", checks - failures, failures);
        return failures ? 1 : 0;
    }
    fork_child();
    intrinsics();
    syncthreads();
    noise();
    copies();
    out_of_memory();
    refused_operations();
    failed_waits();
    lost_devices();
    wait_failures_that_stay();
    failed_calls();
    calls_that_count();
    live_objects();
    streams();
    devices();
    no_kernel_images();
    capture();
    sort();
    aborts();
    vectors();
    order();
    fp_environment();
    printf("cuda emulator: %d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
