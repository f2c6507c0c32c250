/* The CUDA emulator's streams, events, graphs and copies (emu.h): work is
 * queued per stream and runs when the host waits for it. Each device has a
 * legacy stream of its own, and a stream belongs to the device that was
 * current when it was made. */
#include "emu.h"

#include <fenv.h>
#include <string.h>

#include <chrono>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

using namespace pleat_emu;

namespace {
typedef std::function<void()> work;
} // namespace

struct pleat_emu_graph {
    std::vector<work> steps;
};

struct pleat_emu_stream {
    int device;
    bool legacy, nonblocking, destroyed;
    std::deque<work> queue;
    uint64_t submitted, done; /* work queued and work run, counted */
    bool flushing;
    pleat_emu_graph *capture; /* non-NULL while capturing */
    bool invalidated;
    cudaStreamCaptureMode mode;
    std::thread::id capturer;
};

struct pleat_emu_event {
    int device;               /* current when it was made: it records there only */
    pleat_emu_stream *stream; /* where it was last recorded, outside a capture */
    uint64_t seq;             /* the work it covers there */
    pleat_emu_graph *captured;
};

namespace {

/* Function-local, so that a call during another file's static
 * initialisation finds them made. */
pleat_emu_stream *new_stream(int device, bool legacy, bool nonblocking)
{
    return new pleat_emu_stream{device,  legacy, nonblocking, false, {}, 0, 0, false,
                                nullptr, false,  cudaStreamCaptureModeGlobal, {}};
}
/* Never destroyed, as a driver's streams outlast the program's static
 * destructors: a list destroyed at exit would leave the streams it holds
 * unreachable, which LeakSanitizer reports as leaks. */
std::vector<pleat_emu_stream *> &streams() /* the legacy ones first, by device */
{
    static std::vector<pleat_emu_stream *> &all = *[] {
        auto *legacy = new std::vector<pleat_emu_stream *>;
        for (int d = 0; d < DEVICES; ++d)
            legacy->push_back(new_stream(d, true, false));
        return legacy;
    }();
    return all;
}

/* The current device's legacy stream for NULL. */
pleat_emu_stream *stream_of(cudaStream_t s)
{
    pleat_emu_stream *st = s ? s : streams()[current_device()];
    if (st->destroyed)
        die("a destroyed stream was used");
    return st;
}

/* Runs st's work up to its seq-th item. */
void flush(pleat_emu_stream *st, uint64_t seq)
{
    if (st->done >= seq)
        return;
    if (st->flushing)
        die("streams wait for each other in a cycle");
    st->flushing = true;
    device_enter(ALL_DEVICES); /* a kernel narrows it to its device */
    /* a GPU never sees the floating-point environment of the host thread
     * that waits (its rounding, flush to zero, unmasked traps): the work
     * runs in the default one */
    fenv_t waiter;
    fegetenv(&waiter);
    fesetenv(FE_DFL_ENV);
    while (st->done < seq) {
        work w = std::move(st->queue.front());
        st->queue.pop_front();
        w();
        ++st->done;
    }
    fesetenv(&waiter);
    device_leave();
    st->flushing = false;
}

void flush_device(int device)
{
    const std::vector<pleat_emu_stream *> &all = streams();
    for (size_t k = 0; k < all.size(); ++k) {
        pleat_emu_stream *st = all[in_reverse() ? all.size() - 1 - k : k];
        if (st->device == device)
            flush(st, st->submitted);
    }
}

void push(pleat_emu_stream *st, work w)
{
    st->queue.push_back(std::move(w));
    ++st->submitted;
}

/* A device's legacy stream and its blocking streams wait for each other's
 * work. */
void enqueue(pleat_emu_stream *st, work w)
{
    for (pleat_emu_stream *other : streams()) {
        bool orders = other->device == st->device &&
                      (st->legacy ? !other->legacy && !other->nonblocking
                                  : !st->nonblocking && other->legacy);
        if (orders && other->submitted > other->done) {
            uint64_t seq = other->submitted;
            push(st, [other, seq]() { flush(other, seq); });
        }
    }
    push(st, std::move(w));
}

/* A blocking stream of device being captured: that device's legacy stream
 * may not touch it. */
pleat_emu_stream *blocking_capture(int device)
{
    for (pleat_emu_stream *st : streams())
        if (st->device == device && st->capture && !st->legacy && !st->nonblocking &&
            !st->destroyed)
            return st;
    return nullptr;
}

/* Work or a wait on st, which on the legacy stream would depend on a
 * blocking stream's capture: it fails, and invalidates that capture. */
cudaError_t legacy_blocked(const pleat_emu_stream *st)
{
    pleat_emu_stream *cap = st->legacy ? blocking_capture(st->device) : nullptr;
    if (!cap)
        return cudaSuccess;
    cap->invalidated = true;
    return fail(cudaErrorStreamCaptureImplicit);
}

} // namespace

/* Its events count as done: another device's stream that waits for one
 * goes on (a GPU's would fail, or wait forever). */
void pleat_emu::drop_work(int device)
{
    for (pleat_emu_stream *st : streams()) {
        if (st->device != device)
            continue;
        if (st->flushing)
            die("a device was lost while its work ran");
        st->queue.clear();
        st->done = st->submitted;
    }
}

cudaError_t pleat_emu::lost_or_unsafe()
{
    cudaError_t e = lost_context(current_device());
    return e != cudaSuccess ? e : unsafe_call();
}

cudaError_t pleat_emu::unsafe_call()
{
    bool conflict = false;
    for (pleat_emu_stream *st : streams()) {
        if (st->capture && (st->mode == cudaStreamCaptureModeGlobal ||
                            (st->mode == cudaStreamCaptureModeThreadLocal &&
                             st->capturer == std::this_thread::get_id()))) {
            st->invalidated = true;
            conflict = true;
        }
    }
    return conflict ? fail(cudaErrorStreamCaptureUnsupported) : cudaSuccess;
}

namespace {

armed_failure refused_operation, failed_wait; /* pleat_emu_fail_operation, _wait */
bool wait_failures_stay;                      /* pleat_emu_wait_failures_stay */
size_t live_events; /* made and not destroyed */
size_t slow_min_bytes; /* pleat_emu_slow */
unsigned slow_copy_ms, slow_memset_ms;

/* w, made to wait ms milliseconds first when ms is not 0. */
work slowed(work w, unsigned ms)
{
    if (ms == 0)
        return w;
    return [w, ms]() {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        w();
    };
}

/* Whether st takes an operation now: the runtime's own refusals first,
 * then the one a test picked (pleat_emu_fail_operation), which fails with
 * its error, queues nothing and invalidates a capture it is made in, as the
 * runtime's own refusals do. */
cudaError_t admit(pleat_emu_stream *st)
{
    if (cudaError_t e = lost_context(st->device))
        return e;
    if (st->capture && st->invalidated)
        return fail(cudaErrorStreamCaptureInvalidated);
    if (cudaError_t e = st->capture ? cudaSuccess : legacy_blocked(st))
        return e;
    if (!refused_operation.fires())
        return cudaSuccess;
    if (st->capture)
        st->invalidated = true;
    return fail(refused_operation.error);
}

/* The end of a host wait on `device` that has run what it waits for:
 * cudaSuccess, or the error a test picked for this wait
 * (pleat_emu_fail_wait), left for cudaGetLastError too, as the runtime
 * reports at a wait a fault of the work before it; one that stays
 * (pleat_emu_wait_failures_stay) loses the device. */
cudaError_t waited(int device)
{
    if (!failed_wait.fires())
        return cudaSuccess;
    if (wait_failures_stay)
        lose(device, failed_wait.error);
    return fail(failed_wait.error);
}

/* Work on st, queued or captured, once admitted. */
void put(pleat_emu_stream *st, work w)
{
    if (st->capture)
        st->capture->steps.push_back(std::move(w));
    else
        enqueue(st, std::move(w));
}

/* One operation on st. */
cudaError_t submit_to(pleat_emu_stream *st, work w)
{
    cudaError_t e = admit(st);
    if (e == cudaSuccess)
        put(st, std::move(w));
    return e;
}

/* Whether a copy's sides are those its kind names. */
bool sides_match(cudaMemcpyKind kind, side dst, side src)
{
    switch (kind) {
    case cudaMemcpyHostToDevice: return dst == DEVICE && src != DEVICE;
    case cudaMemcpyDeviceToHost: return dst != DEVICE && src == DEVICE;
    case cudaMemcpyDeviceToDevice: return dst == DEVICE && src == DEVICE;
    case cudaMemcpyHostToHost: return dst != DEVICE && src != DEVICE;
    case cudaMemcpyDefault: return true;
    }
    return false;
}

/* A copy on st. Device sides must hold the whole range. cudaMemcpy
 * (`blocking`) reads the host's pageable memory when the call is made (the
 * runtime stages it) and returns once its copy has run, except from
 * pageable memory or between device allocations. cudaMemcpyAsync may run
 * its copy whenever the stream gets to it, pageable memory or not (the
 * runtime only may make it synchronous): it reads and writes when it runs. */
cudaError_t copy_on(pleat_emu_stream *st, void *dst, const void *src, size_t bytes,
                    cudaMemcpyKind kind, bool blocking)
{
    if (cudaError_t e = lost_context(st->device))
        return e;
    if (bytes == 0)
        return cudaSuccess;
    side d = side_of(dst, bytes), s = side_of(src, bytes);
    if (straddles(dst, bytes) || straddles(src, bytes) || !sides_match(kind, d, s))
        return fail(cudaErrorInvalidValue);
    if (st->capture && (d == HOST || s == HOST)) {
        st->invalidated = true;
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    work w;
    if (blocking && s == HOST) {
        const char *from = (const char *)src;
        auto staged = std::make_shared<std::vector<char>>(from, from + bytes);
        w = [dst, staged]() { memcpy(dst, staged->data(), staged->size()); };
    } else {
        w = [dst, src, bytes]() { memmove(dst, src, bytes); };
    }
    if (d != DEVICE && s == DEVICE && bytes >= slow_min_bytes) /* to host memory */
        w = slowed(std::move(w), slow_copy_ms);
    cudaError_t e = submit_to(st, std::move(w));
    if (e == cudaSuccess && blocking && s != HOST && (s != DEVICE || d != DEVICE))
        flush(st, st->submitted);
    return e;
}

} // namespace

/* A kernel runs on the current device, whose streams alone take it, and
 * reads that device's memory only. */
cudaError_t pleat_emu::submit(cudaStream_t stream, std::function<void()> w)
{
    locked g(big_lock());
    pleat_emu_stream *st = stream_of(stream);
    const int device = current_device();
    if (st->device != device)
        return fail(cudaErrorInvalidResourceHandle);
    return submit_to(st, [device, w]() {
        device_enter(device);
        w();
        device_leave();
    });
}

extern "C" {

cudaError_t cudaDeviceSynchronize(void)
{
    locked g(big_lock());
    if (cudaError_t e = lost_or_unsafe())
        return e;
    flush_device(current_device());
    return waited(current_device());
}

/* On the legacy stream; returns once the host may reuse its memory (a
 * copy from pageable memory may still be in flight, as the runtime says). */
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
    locked g(big_lock());
    if (cudaError_t e = lost_or_unsafe())
        return e;
    return copy_on(stream_of(nullptr), dst, src, bytes, kind, true);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    locked g(big_lock());
    return copy_on(stream_of(stream), dst, src, bytes, kind, false);
}

cudaError_t cudaMemsetAsync(void *ptr, int value, size_t bytes, cudaStream_t stream)
{
    locked g(big_lock());
    pleat_emu_stream *st = stream_of(stream);
    if (cudaError_t e = lost_context(st->device))
        return e;
    if (bytes == 0)
        return cudaSuccess;
    if (side_of(ptr, bytes) == HOST)
        return fail(cudaErrorInvalidValue);
    return submit_to(st,
                     slowed([ptr, value, bytes]() { memset(ptr, value, bytes); }, slow_memset_ms));
}

cudaError_t cudaMemset(void *ptr, int value, size_t bytes)
{
    return cudaMemsetAsync(ptr, value, bytes, nullptr);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags)
{
    locked g(big_lock());
    if (!stream || (flags & ~cudaStreamNonBlocking))
        return fail(cudaErrorInvalidValue);
    if (cudaError_t e = lost_context(current_device()))
        return e;
    if (cudaError_t e = refused_call())
        return e;
    pleat_emu_stream *st =
        new_stream(current_device(), false, (flags & cudaStreamNonBlocking) != 0);
    streams().push_back(st);
    *stream = st;
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *stream)
{
    return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

/* Its queued work still runs (when waited for); the handle is dead. */
cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    locked g(big_lock());
    if (!stream)
        return fail(cudaErrorInvalidResourceHandle);
    pleat_emu_stream *st = stream_of(stream);
    if (st->capture)
        die("a capturing stream was destroyed");
    st->destroyed = true;
    return lost_context(st->device);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    locked g(big_lock());
    pleat_emu_stream *st = stream_of(stream);
    if (cudaError_t e = lost_context(st->device))
        return e;
    if (st->capture) {
        st->invalidated = true;
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    if (cudaError_t e = legacy_blocked(st))
        return e;
    if (st->legacy) {
        /* as an empty item of its own would: after the blocking streams */
        for (pleat_emu_stream *other : streams())
            if (other->device == st->device && !other->nonblocking)
                flush(other, other->submitted);
    }
    flush(st, st->submitted);
    return waited(st->device);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags)
{
    locked g(big_lock());
    pleat_emu_stream *st = stream_of(stream);
    if (!event)
        return fail(cudaErrorInvalidResourceHandle);
    if (flags != cudaEventWaitDefault)
        die("cudaStreamWaitEvent flags are not emulated");
    if (cudaError_t e = lost_context(st->device))
        return e;
    if (st->capture) {
        if (event->captured && event->captured != st->capture)
            die("a wait on another capture's event is not emulated");
        if (event->stream) {
            st->invalidated = true;
            return fail(cudaErrorStreamCaptureIsolation);
        }
        return cudaSuccess; /* captured in this graph, or never recorded */
    }
    if (event->captured)
        die("a wait joining a capture is not emulated");
    if (event->stream) {
        pleat_emu_stream *on = event->stream;
        uint64_t seq = event->seq;
        return submit_to(st, [on, seq]() { flush(on, seq); });
    }
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode)
{
    locked g(big_lock());
    pleat_emu_stream *st = stream_of(stream);
    if (cudaError_t e = lost_context(st->device))
        return e;
    if (st->legacy)
        return fail(cudaErrorStreamCaptureUnsupported);
    if (st->capture)
        return fail(cudaErrorIllegalState);
    st->capture = new pleat_emu_graph;
    st->invalidated = false;
    st->mode = mode;
    st->capturer = std::this_thread::get_id();
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph)
{
    locked g(big_lock());
    pleat_emu_stream *st = stream_of(stream);
    if (!graph)
        return fail(cudaErrorInvalidValue);
    cudaError_t e = lost_context(st->device);
    if (e == cudaSuccess && !st->capture)
        return fail(cudaErrorIllegalState);
    pleat_emu_graph *made = st->capture; /* ended, lost or not */
    st->capture = nullptr;
    if (e == cudaSuccess && st->invalidated)
        e = fail(cudaErrorStreamCaptureInvalidated);
    if (e != cudaSuccess) {
        delete made;
        *graph = nullptr;
        return e;
    }
    *graph = made;
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus *status)
{
    locked g(big_lock());
    pleat_emu_stream *st = stream_of(stream);
    if (!status)
        return fail(cudaErrorInvalidValue);
    if (cudaError_t e = lost_context(st->device))
        return e;
    if (st->legacy && blocking_capture(st->device))
        return fail(cudaErrorStreamCaptureImplicit);
    if (cudaError_t e = refused_call())
        return e;
    *status = !st->capture ? cudaStreamCaptureStatusNone
              : st->invalidated ? cudaStreamCaptureStatusInvalidated
                                : cudaStreamCaptureStatusActive;
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags)
{
    locked g(big_lock());
    if (!event || (flags & ~cudaEventDisableTiming))
        return fail(cudaErrorInvalidValue);
    if (cudaError_t e = lost_context(current_device()))
        return e;
    if (cudaError_t e = refused_call())
        return e;
    *event = new pleat_emu_event{current_device(), nullptr, 0, nullptr};
    ++live_events;
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    locked g(big_lock());
    if (!event)
        return fail(cudaErrorInvalidResourceHandle);
    const int device = event->device;
    delete event;
    --live_events;
    return lost_context(device);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    locked g(big_lock());
    pleat_emu_stream *st = stream_of(stream);
    if (!event || st->device != event->device) /* the runtime: one context for both */
        return fail(cudaErrorInvalidResourceHandle);
    if (cudaError_t e = lost_context(st->device))
        return e;
    if (st->capture) {
        if (st->invalidated)
            return fail(cudaErrorStreamCaptureInvalidated);
        *event = pleat_emu_event{event->device, nullptr, 0, st->capture};
        return cudaSuccess;
    }
    /* an empty item: the event then covers what the stream itself waits
     * for (the legacy stream and the blocking ones, for each other) */
    if (cudaError_t e = submit_to(st, []() {}))
        return e;
    *event = pleat_emu_event{event->device, st, st->submitted, nullptr};
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    locked g(big_lock());
    if (!event)
        return fail(cudaErrorInvalidResourceHandle);
    if (cudaError_t e = lost_context(event->device))
        return e;
    if (event->captured)
        return fail(cudaErrorCapturedEvent);
    if (event->stream)
        flush(event->stream, event->seq);
    return waited(event->device);
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long)
{
    locked g(big_lock());
    if (!exec || !graph)
        return fail(cudaErrorInvalidValue);
    if (cudaError_t e = lost_context(current_device()))
        return e;
    if (allocation_refused())
        return fail(cudaErrorMemoryAllocation);
    *exec = new pleat_emu_graph(*graph);
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream)
{
    locked g(big_lock());
    if (!exec)
        return fail(cudaErrorInvalidValue);
    pleat_emu_stream *st = stream_of(stream);
    /* one operation: admitted or refused whole */
    cudaError_t e = admit(st);
    if (e == cudaSuccess)
        for (const work &w : exec->steps)
            put(st, w);
    return e;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    locked g(big_lock());
    delete graph;
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) { return cudaGraphDestroy(exec); }

size_t pleat_emu_pending(cudaStream_t stream)
{
    locked g(big_lock());
    pleat_emu_stream *st = stream_of(stream);
    return (size_t)(st->submitted - st->done);
}

void pleat_emu_fail_operation(long long skip, cudaError_t error)
{
    locked g(big_lock());
    if (skip >= 0 && error == cudaSuccess)
        die("pleat_emu_fail_operation needs an error to refuse with");
    refused_operation.arm(skip, error);
}

int pleat_emu_operation_failure_pending(void)
{
    locked g(big_lock());
    return refused_operation.pending();
}

void pleat_emu_wait_failures_stay(int stay)
{
    locked g(big_lock());
    wait_failures_stay = stay != 0;
}

void pleat_emu_fail_wait(long long skip, cudaError_t error)
{
    locked g(big_lock());
    if (skip >= 0 && error == cudaSuccess)
        die("pleat_emu_fail_wait needs an error to report");
    failed_wait.arm(skip, error);
}

int pleat_emu_wait_failure_pending(void)
{
    locked g(big_lock());
    return failed_wait.pending();
}

void pleat_emu_slow(size_t min_bytes, unsigned copy_ms, unsigned memset_ms)
{
    locked g(big_lock());
    slow_min_bytes = min_bytes;
    slow_copy_ms = copy_ms;
    slow_memset_ms = memset_ms;
}

size_t pleat_emu_pending_all(void)
{
    locked g(big_lock());
    size_t n = 0;
    for (const pleat_emu_stream *st : streams())
        n += (size_t)(st->submitted - st->done);
    return n;
}

size_t pleat_emu_live(void)
{
    locked g(big_lock());
    size_t n = live_allocations() + live_events;
    for (const pleat_emu_stream *st : streams())
        n += !st->legacy && !st->destroyed;
    return n;
}

size_t pleat_emu_queued_all(void)
{
    locked g(big_lock());
    size_t n = 0;
    for (const pleat_emu_stream *st : streams())
        n += (size_t)st->submitted;
    return n;
}

} // extern "C"
