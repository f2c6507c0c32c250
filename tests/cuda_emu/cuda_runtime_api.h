/*
 * The CUDA runtime API as pleat's CUDA backend and its GPU check use it,
 * implemented on the CPU by the emulator (tests/cuda_emu/emu.h). Only the
 * emulated builds put this folder on the include path: the real build uses
 * the toolkit's headers. Names and error numbers are the runtime's; what a
 * call does is described in emu.h, including where it is stricter than a
 * GPU. C and C++.
 */
#ifndef PLEAT_EMU_CUDA_RUNTIME_API_H
#define PLEAT_EMU_CUDA_RUNTIME_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorDevicesUnavailable = 46,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorNoKernelImageForDevice = 209,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorIllegalState = 401,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchOutOfResources = 701,
    cudaErrorLaunchFailure = 719,
    cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorStreamCaptureInvalidated = 901,
    cudaErrorStreamCaptureIsolation = 905,
    cudaErrorStreamCaptureImplicit = 906,
    cudaErrorCapturedEvent = 907
} cudaError_t;

typedef struct pleat_emu_stream *cudaStream_t;
typedef struct pleat_emu_event *cudaEvent_t;
typedef struct pleat_emu_graph *cudaGraph_t;
typedef struct pleat_emu_graph *cudaGraphExec_t;

typedef enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
} cudaMemcpyKind;

typedef enum cudaStreamCaptureStatus {
    cudaStreamCaptureStatusNone = 0,
    cudaStreamCaptureStatusActive = 1,
    cudaStreamCaptureStatusInvalidated = 2
} cudaStreamCaptureStatus;

typedef enum cudaStreamCaptureMode {
    cudaStreamCaptureModeGlobal = 0,
    cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed = 2
} cudaStreamCaptureMode;

#define cudaStreamDefault 0x0u
#define cudaStreamNonBlocking 0x1u
#define cudaEventDefault 0x0u
#define cudaEventDisableTiming 0x2u
#define cudaEventWaitDefault 0x0u

typedef struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    int warpSize, maxThreadsPerBlock, multiProcessorCount, major, minor;
} cudaDeviceProp;

typedef struct cudaFuncAttributes {
    size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
    int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion;
} cudaFuncAttributes;

const char *cudaGetErrorString(cudaError_t error);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
cudaError_t cudaDriverGetVersion(int *version);
cudaError_t cudaRuntimeGetVersion(int *version);

cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceSynchronize(void);

cudaError_t cudaMalloc(void **ptr, size_t bytes);
cudaError_t cudaFree(void *ptr);
cudaError_t cudaMallocHost(void **ptr, size_t bytes);
cudaError_t cudaFreeHost(void *ptr);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream);
cudaError_t cudaMemset(void *ptr, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void *ptr, int value, size_t bytes, cudaStream_t stream);

cudaError_t cudaStreamCreate(cudaStream_t *stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags);
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus *status);

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventSynchronize(cudaEvent_t event);

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);

/* The emulator's own, for its tests: operations queued on stream and not
 * run yet (a call that promises no sync leaves its work queued). */
size_t pleat_emu_pending(cudaStream_t stream);
/* The same, over every stream (destroyed ones included). */
size_t pleat_emu_pending_all(void);
/* Items ever queued on a stream, run or not, over every stream: each
 * operation (a graph launch queues each of its steps; a capture queues
 * nothing), and the waits the emulator adds to order the legacy stream and
 * blocking streams: so it grows by at least one for each operation. */
size_t pleat_emu_queued_all(void);
/* What the program holds: device and pinned allocations not freed, and
 * streams and events made and not destroyed (graphs aside). Memory the
 * emulator maps and streams it keeps are out of LeakSanitizer's sight:
 * a test compares this before and after. */
size_t pleat_emu_live(void);
/* The next `skip` device or pinned allocations (of a nonzero size) and
 * graph instantiations succeed and the one after fails with
 * cudaErrorMemoryAllocation, once, as on a GPU whose memory runs out;
 * skip < 0 cancels it. */
void pleat_emu_fail_allocation(long long skip);
/* Whether the failure asked for has not happened yet. */
int pleat_emu_failure_pending(void);
/* The next `skip` operations queued on a stream (kernels, CUB's sorts,
 * copies, sets, event records, waits for a recorded event, graph launches;
 * in a capture, the kernels, copies and sets) are queued, and the one after
 * is refused with `error` (not cudaSuccess), once, as the runtime refuses a
 * launch whose module lazy loading cannot load for lack of memory: it
 * queues nothing, leaves its error for cudaGetLastError, and invalidates a
 * capture it is made in. An operation the runtime refuses anyway does not
 * count. skip < 0 cancels it. */
void pleat_emu_fail_operation(long long skip, cudaError_t error);
/* Whether the refusal asked for has not happened yet. */
int pleat_emu_operation_failure_pending(void);
/* The next `skip` host waits (cudaStreamSynchronize, cudaEventSynchronize
 * (of an event never recorded too), cudaDeviceSynchronize) succeed, and the
 * one after runs what it waits for and then returns `error` (not
 * cudaSuccess), once, left for cudaGetLastError too, as the runtime reports
 * at a wait a fault of the work before it. On a GPU such an error stays,
 * and every later call returns it; here it does not, so a test sees what
 * the calls after it do, unless pleat_emu_wait_failures_stay asks for a
 * GPU's. A wait the runtime refuses anyway does not count.
 * skip < 0 cancels it. */
void pleat_emu_fail_wait(long long skip, cudaError_t error);
/* Whether the failure asked for has not happened yet. */
int pleat_emu_wait_failure_pending(void);
/* With stay set (0 at the start), the error of a wait made to fail
 * (pleat_emu_fail_wait) stays, as a GPU's fault does: the device waited
 * for is lost to it (pleat_emu_lose_device) once the wait has run what it
 * waits for. */
void pleat_emu_wait_failures_stay(int stay);
/* `device`'s context is lost to `error`, as to a kernel's fault on a GPU
 * (a sticky error): its queued work is dropped unrun, and from now on every
 * call that uses the context fails with `error` before any other check but
 * its arguments', left for cudaGetLastError too, which returns it and keeps
 * it, as does cudaPeekAtLastError, while that device is current. Those
 * calls are all but the versions, cudaGetDeviceCount, cudaGetDevice,
 * cudaSetDevice (which on a GPU may return it too), cudaGetDeviceProperties
 * and the graphs' destroys; the releases of memory, streams and events
 * fail but free all the same. error cudaSuccess gives the device back, as
 * a new process would find it. */
void pleat_emu_lose_device(int device, cudaError_t error);
/* The next `skip` queries and setup calls succeed, and the one after fails
 * with `error` (not cudaSuccess), once, left for cudaGetLastError too: the
 * calls that neither allocate, queue work nor wait (cudaGetDeviceCount,
 * cudaGetDevice, cudaSetDevice, cudaGetDeviceProperties,
 * cudaFuncGetAttributes, the versions, cudaStreamIsCapturing, a stream's or
 * an event's creation, cudaFree(NULL), which makes the device's context,
 * CUB's size query), as the runtime can fail any of them (a device gone
 * unavailable, a context it cannot make). Releases of memory, streams,
 * events and graphs never fail. A call the runtime refuses anyway (a bad
 * argument) does not count. skip < 0 cancels it. */
void pleat_emu_fail_call(long long skip, cudaError_t error);
/* Whether the failure asked for has not happened yet. */
int pleat_emu_call_failure_pending(void);
/* present 0: `device` becomes a GPU older than every architecture the
 * build holds. No kernel image runs there: launches and
 * cudaFuncGetAttributes with it current fail with
 * cudaErrorNoKernelImageForDevice, while the calls that use no kernel
 * (memory, streams) work. 1 (the start) undoes it. */
void pleat_emu_kernel_images(int device, int present);
/* Slow work, for tests of the stage a call times it in: from now on every
 * copy from device to host memory of at least min_bytes, and every memset,
 * waits copy_ms or memset_ms milliseconds when it runs (0: none). */
void pleat_emu_slow(size_t min_bytes, unsigned copy_ms, unsigned memset_ms);
/* The runtime does not survive a fork() of a process that called it: a
 * call in such a child aborts. With survive set (0 at the start), a child
 * forked from now on may call it, as a death test's does to see the
 * emulator abort or fault there. */
void pleat_emu_survive_fork(int survive);

#ifdef __cplusplus
}
#endif

#endif
