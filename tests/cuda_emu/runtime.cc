/* The CUDA emulator: errors, versions and the devices (emu.h). */
#include "emu.h"

#include <atomic>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace pleat_emu {

[[noreturn]] void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("pleat CUDA emulator: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

/* Set in a fork() child of a process that had called the runtime: CUDA
 * does not survive such a fork, and a call there aborts (on a GPU it fails
 * or hangs). Checked before the lock, which the parent's threads may have
 * held. Not when a death test's child runs the emulator on purpose
 * (pleat_emu_survive_fork). */
static std::atomic<bool> used{false}; /* set by threads without the lock */
static bool forked_child, survives_fork;
static void mark_child()
{
    forked_child = used.load(std::memory_order_relaxed) && !survives_fork;
}
static const int watching_forks = pthread_atfork(nullptr, nullptr, mark_child);

static void not_in_a_fork_child()
{
    (void)watching_forks;
    if (forked_child)
        die("a CUDA call in a fork() child of the process that used the runtime");
    used.store(true, std::memory_order_relaxed);
}

std::recursive_mutex &big_lock()
{
    static std::recursive_mutex lock; /* made at its first use */
    not_in_a_fork_child();
    return lock;
}
thread_local cudaError_t last_error = cudaSuccess;
thread_local int current = 0; /* the thread's current device, as the runtime's */

int current_device() { return current; }

static bool no_kernel_images[DEVICES]; /* under the lock */
static armed_failure failed_call;      /* pleat_emu_fail_call */
static cudaError_t lost[DEVICES];      /* under the lock: pleat_emu_lose_device */

cudaError_t lost_context(int device)
{
    locked g(big_lock());
    return fail(lost[device]);
}

void lose(int device, cudaError_t error)
{
    lost[device] = error;
    if (error != cudaSuccess)
        drop_work(device);
}

cudaError_t refused_call()
{
    locked g(big_lock());
    return failed_call.fires() ? fail(failed_call.error) : cudaSuccess;
}

cudaError_t kernel_image()
{
    locked g(big_lock());
    if (cudaError_t e = lost_context(current))
        return e;
    return no_kernel_images[current] ? fail(cudaErrorNoKernelImageForDevice) : cudaSuccess;
}

cudaError_t func_attributes(cudaFuncAttributes *attr)
{
    if (!attr)
        return fail(cudaErrorInvalidValue);
    cudaError_t e = kernel_image();
    if (e == cudaSuccess)
        e = refused_call();
    if (e != cudaSuccess)
        return e;
    memset(attr, 0, sizeof *attr);
    attr->maxThreadsPerBlock = 1024;
    attr->ptxVersion = attr->binaryVersion = 90;
    return cudaSuccess;
}

cudaError_t fail(cudaError_t e)
{
    not_in_a_fork_child();
    if (e != cudaSuccess)
        last_error = e;
    return e;
}

/* Noise: xorshift64*, from a fixed seed, so each run fills the same bits. */
static uint64_t noise_state = 0x9e3779b97f4a7c15ull;
void fill_noise(void *p, size_t bytes)
{
    unsigned char *c = (unsigned char *)p;
    for (size_t i = 0; i < bytes; i += 8) {
        noise_state ^= noise_state >> 12;
        noise_state ^= noise_state << 25;
        noise_state ^= noise_state >> 27;
        uint64_t v = noise_state * 0x2545f4914f6cdd1dull;
        memcpy(c + i, &v, bytes - i < 8 ? bytes - i : 8);
    }
}

} // namespace pleat_emu

using namespace pleat_emu;

extern "C" {

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorDevicesUnavailable: return "CUDA-capable device(s) is/are busy or unavailable";
    case cudaErrorNoKernelImageForDevice:
        return "no kernel image is available for execution on the device";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    case cudaErrorStreamCaptureUnsupported: return "not permitted while capturing";
    case cudaErrorStreamCaptureInvalidated: return "the capture was invalidated";
    case cudaErrorStreamCaptureIsolation: return "a dependency on work outside the capture";
    case cudaErrorStreamCaptureImplicit: return "the legacy stream would wait for a capture";
    case cudaErrorCapturedEvent: return "the event was recorded in a capture";
    }
    return "unknown error";
}

void pleat_emu_kernel_images(int device, int present)
{
    if (device < 0 || device >= DEVICES)
        die("pleat_emu_kernel_images: no device %d", device);
    locked g(big_lock());
    no_kernel_images[device] = !present;
}

void pleat_emu_fail_call(long long skip, cudaError_t error)
{
    locked g(big_lock());
    if (skip >= 0 && error == cudaSuccess)
        die("pleat_emu_fail_call needs an error to fail with");
    failed_call.arm(skip, error);
}

int pleat_emu_call_failure_pending(void)
{
    locked g(big_lock());
    return failed_call.pending();
}

void pleat_emu_survive_fork(int survive)
{
    survives_fork = survive != 0;
}

void pleat_emu_lose_device(int device, cudaError_t error)
{
    if (device < 0 || device >= DEVICES)
        die("pleat_emu_lose_device: no device %d", device);
    locked g(big_lock());
    lose(device, error);
}

/* A lost device's error stays, whatever the thread's last. */
cudaError_t cudaGetLastError(void)
{
    locked g(big_lock());
    cudaError_t e = lost[current] != cudaSuccess ? lost[current] : last_error;
    last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    locked g(big_lock());
    return lost[current] != cudaSuccess ? lost[current] : last_error;
}

/* Both versions: 13.0. */
static cudaError_t version(int *v)
{
    if (!v)
        return fail(cudaErrorInvalidValue);
    if (cudaError_t e = refused_call())
        return e;
    *v = 13000;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v) { return version(v); }

cudaError_t cudaRuntimeGetVersion(int *v) { return version(v); }

cudaError_t cudaGetDeviceCount(int *count)
{
    if (!count)
        return fail(cudaErrorInvalidValue);
    if (cudaError_t e = refused_call())
        return e;
    *count = DEVICES;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
    if (!device)
        return fail(cudaErrorInvalidValue);
    if (cudaError_t e = refused_call())
        return e;
    *device = current;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    if (device < 0 || device >= DEVICES)
        return fail(cudaErrorInvalidDevice);
    if (cudaError_t e = refused_call())
        return e;
    current = device;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device)
{
    if (!prop)
        return fail(cudaErrorInvalidValue);
    if (device < 0 || device >= DEVICES)
        return fail(cudaErrorInvalidDevice);
    if (cudaError_t e = refused_call())
        return e;
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "pleat CUDA emulator");
    prop->totalGlobalMem = (size_t)16 << 30;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->multiProcessorCount = 1;
    prop->major = 9;
    return cudaSuccess;
}

} // extern "C"
