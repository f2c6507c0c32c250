/*
 * The CUDA emulator's own declarations, shared by its files (runtime.cc:
 * errors and the device; memory.cc; streams.cc: streams, events, copies and
 * capture; engine.cc: the threads of a kernel).
 *
 * A CUDA device emulated on the CPU, for running pleat's CUDA backend (the
 * .cu files compiled as C++, against cuda_runtime.h here) where no GPU is:
 * CI runs the GPU check against it, so the kernels' logic and the backend's
 * host code are tested on every change, not only when a GPU is lent.
 *
 * It is not a GPU. It runs one emulated thread at a time, so it says nothing
 * of speed, of memory ordering between threads (each sees the others'
 * writes at once: a fence, or a __syncwarp that only orders memory where
 * another intrinsic already brings the lanes together, can go missing
 * unseen, but for the race mode below) or of nvcc's code generation; a pass
 * here is not a GPU result.
 * What it does model, strictly:
 *
 * - Threads. Every thread of a block runs the kernel on a fiber of its own
 *   and runs until it exits or reaches a warp intrinsic or __syncthreads,
 *   where it waits for the lanes it names (the last to arrive too). Then
 *   they go on one at a time in thread order, one legal schedule of many;
 *   PLEAT_CUDA_EMULATOR_ORDER=reverse starts and resumes them in the other
 *   order, so code that depends on the order between two sync points gives
 *   other bits in one of the two runs. Blocks run one after another, in
 *   blockIdx order, or the other way round with reverse: so a grid's "last
 *   block to finish" is its last block in one run and its first in the
 *   other.
 *   An intrinsic whose mask names a lane that has exited or waits
 *   elsewhere, lanes meeting at different intrinsics, __syncthreads after a
 *   thread of the block has exited, and a block that cannot go on all abort
 *   with a message.
 * - Memory. Shared memory and new device allocations are filled with noise.
 *   Device memory is unreadable to the host except while the device works
 *   (a host access is a segfault, as on a GPU); every allocation ends at a
 *   guard page, after a canary up to its 256-byte rounding, and its first
 *   page, a canary up to its start, follows another, so a kernel writing
 *   past either end faults or aborts when the device is next idle (a read
 *   there gets a canary's bytes, unseen, unless it reaches a guard); copies,
 *   sets and CUB's arguments must lie inside one allocation and match their
 *   direction. cudaFree does not wait for queued work (the Programming
 *   Guide says in passing that it synchronises the device; its API entry
 *   promises no order, and pleat does not rely on one), and a freed block
 *   stays unreadable and is never handed
 *   out again: work that runs after the free of its memory faults.
 *   A kernel given a pointer that is neither NULL nor device or pinned
 *   memory (an argument, or a field of pleat's frame: frame_check.h)
 *   aborts as it is queued; host memory it reaches otherwise, it reads,
 *   which a GPU may not.
 *   Memory never runs out by itself; a test picks the allocation that
 *   fails (pleat_emu_fail_allocation: of memory, or a graph's
 *   instantiation, which allocates on a GPU too), the operation queued
 *   on a stream that the runtime refuses (pleat_emu_fail_operation), and
 *   the host wait at which the device reports a fault of the work it ran
 *   (pleat_emu_fail_wait; once, unlike a GPU's, so that a test sees what
 *   the calls after it do, unless the test asks for a GPU's: then the
 *   device's context is lost, pleat_emu_lose_device, and every call that
 *   uses it fails with that error from then on), and the query or setup
 *   call that fails (pleat_emu_fail_call, whose comment in
 *   cuda_runtime_api.h lists them).
 * - Devices. There are two. The current one is the calling thread's;
 *   memory and streams belong to the device current when they were made,
 *   and each device has a legacy stream of its own, as do events. A
 *   kernel goes only to a stream of the current device and reads only that
 *   device's memory and pinned memory: another device's faults. An event
 *   records only on a stream of its own device.
 *   Copies may read and write any device's memory. A device sync waits
 *   for the current device's work only. A test can make a device older
 *   than the build's architectures (pleat_emu_kernel_images): launches
 *   there then fail, and so does cudaFuncGetAttributes.
 * - Streams. Work is queued, not run: it runs when the host waits for it
 *   (a stream or event sync, a device sync, a cudaMemcpy that waits;
 *   cudaMemcpyAsync never does, and touches pageable memory when it runs),
 *   in stream order, after the events it waits for; the legacy stream
 *   orders against blocking streams. A missing wait reads stale bits. A
 *   device sync runs its streams in the order they were made, or the other
 *   way with reverse: so work that misses a wait on another stream's runs
 *   before that work in one of the two runs. Work runs in the default
 *   floating-point environment, whatever the waiting thread's.
 *   A destroyed stream's work still runs; using its handle aborts.
 * - Capture. Work queued on a capturing stream goes into the graph; a
 *   graph launch queues it again with the same parameters. While a global
 *   capture runs, allocation, freeing, a sync of the capturing stream or of
 *   the device, and synchronous copies fail and invalidate it, as do a
 *   pageable copy in the capture, a wait on an event recorded outside it,
 *   and work on the legacy stream while a blocking stream captures.
 * - Fork. The runtime does not survive a fork() of a process that called
 *   it: a call in the child aborts.
 * - Races, with PLEAT_CUDA_EMULATOR_RACES=1 in a ThreadSanitizer build
 *   (without one, that setting aborts). Each thread of a block is a thread
 *   of ThreadSanitizer's, with a stack of its own, ordered only as a GPU
 *   orders it: by __syncthreads, by __syncwarp among its mask's lanes, and
 *   by the block's start and end, never by a shuffle or a ballot; atomics
 *   are atomic. So a missing barrier, or a plain read-modify-write in
 *   place of an atomic, between two threads of a block is a data race
 *   ThreadSanitizer reports. Blocks still run one after another, each after
 *   all the one before did: races between blocks go unseen (engine.cc).
 * Anything else it does not model aborts rather than guess.
 *
 * One process-wide lock serialises every call; the kernels run on the
 * calling thread's fibers while it is held. x86-64 only (the fiber switch).
 */
#ifndef PLEAT_EMU_EMU_H
#define PLEAT_EMU_EMU_H

#include "cuda_runtime.h"

#include <mutex>

namespace pleat_emu {

/* PLEAT_CUDA_EMULATOR_ORDER=reverse (engine.cc). */
bool in_reverse();

/* runtime.cc */
const int DEVICES = 2;
int current_device(); /* the calling thread's */
std::recursive_mutex &big_lock(); /* every call holds it */
typedef std::lock_guard<std::recursive_mutex> locked;
cudaError_t fail(cudaError_t e); /* e, also left for cudaGetLastError */
/* cudaSuccess, or the error of a launch on the current device when it is
 * lost (lost_context) or has no kernel image (pleat_emu_kernel_images),
 * left for cudaGetLastError too */
cudaError_t kernel_image();
/* cudaSuccess, or the error a fault lost `device`'s context to
 * (pleat_emu_lose_device), left for cudaGetLastError too: every call that
 * uses a device's context asks first. */
cudaError_t lost_context(int device);
/* The device's context lost to `error`, as to a kernel's fault on a GPU
 * (cudaSuccess: given back); its queued work is dropped. Under the lock. */
void lose(int device, cudaError_t error);

/* memory.cc */
enum side { HOST, PINNED, DEVICE };
/* Where [p, p + bytes) lies; HOST also when it runs out of an allocation,
 * which straddles() tells. */
side side_of(const void *p, size_t bytes);
bool straddles(const void *p, size_t bytes);
/* Whether the allocation being made (of memory, or a graph's
 * instantiation, which allocates on a GPU too) is the one a test picked to
 * fail (pleat_emu_fail_allocation); the caller, holding big_lock(), fails
 * it. */
bool allocation_refused();
/* A failure a test armed (pleat_emu_fail_allocation, _operation, _wait,
 * _call): `skip` more calls of its kind succeed, then the next fails with
 * `error`, once. Read and written under big_lock(). */
struct armed_failure {
    long long skip = -1; /* < 0: none armed */
    cudaError_t error = cudaSuccess;
    void arm(long long n, cudaError_t e)
    {
        skip = n < 0 ? -1 : n;
        error = e;
    }
    bool pending() const { return skip >= 0; }
    /* Whether this call is the one to fail; then none is armed. */
    bool fires() { return skip >= 0 && skip-- == 0; }
};
/* Device and pinned allocations not freed. */
size_t live_allocations();
/* The device works: until the matching leave, the memory of `view`
 * (ALL_DEVICES: copies and sets; a device: its kernels) is readable. */
const int ALL_DEVICES = -1;
void device_enter(int view);
void device_leave();

/* streams.cc: a call that a running capture forbids (allocation, a device
 * sync) fails and invalidates the captures it conflicts with. */
cudaError_t unsafe_call();
/* Such a call on the current device: its loss first (lost_context), then
 * the captures' refusal (unsafe_call). */
cudaError_t lost_or_unsafe();
/* streams.cc: the device's queued work, dropped unrun, as a GPU drops the
 * work after a fault. Under the lock. */
void drop_work(int device);

} // namespace pleat_emu

#endif
