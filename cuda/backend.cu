/*
 * The CUDA backend: a context owns a device, a stream, device scratch (grown
 * to the largest call, CUB's temporary storage included) and pinned host
 * memory for the counters.
 *
 * Device-pointer calls queue the stages on the caller's stream and return:
 * no sync, no allocation once a size has been seen, so they can be captured
 * in a CUDA graph. Asking for stats (or pleat_context_device_status) is the
 * one documented sync. Host-pointer calls copy in, run the same stages on the
 * context's stream, check the device flags, and copy out only on success.
 */
#include "cuda.h"
#include "frame.cuh"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/fork.h"

#include <initializer_list>
#include <stdio.h>
#include <string.h>
#include <type_traits>

/* The file's types are in anonymous namespaces: in a static libpleat
 * their names (device_scope's destructor is a symbol) must not meet an
 * application's. (The kernels, global for the runtime, are named pleat_.) */
namespace {

/* A grow-only buffer in device memory, or in pinned host memory. */
struct device_buffer {
    void *data;
    size_t bytes;
    bool pinned;
};

/* CUB's temporary storage size for the last sort asked about (its items
 * and key bits): the query costs driver calls on the host, and a solver
 * repeats its calls. */
struct sort_size {
    unsigned long long items;
    int bits;
    size_t bytes;
    bool known;
};

} // namespace

typedef struct pleat_cuda {
    int device;
    unsigned long forks;          /* pleat_forks() before the runtime's first call */
    cudaStream_t stream;          /* for host-pointer calls and the device status */
    /* what device_counters hold: the checks of the last device-pointer call
     * that got past its arguments and scratch (read after waiting for
     * done), or nothing readable (that call failed) */
    enum { CHECKS_NONE, CHECKS_QUEUED, CHECKS_LOST } device_checks;
    /* recorded after each call's work: calls share the scratch, so a call
     * on another stream waits for it (see order_after_last) */
    cudaEvent_t done;
    int queued; /* done has been recorded, and not waited for since */
    /* the device-pointer call reserving its scratch is being captured:
     * growing a buffer would wait and allocate, which ends the caller's
     * capture, so reserve() refuses instead */
    int capturing;
    pleat_cuda_counters *host;    /* pinned */
    /* counters: host-pointer calls; device_counters: device-pointer calls,
     * kept apart so pleat_context_device_status() reads the last device call */
    device_buffer counters, device_counters;
    device_buffer grid, bounds, seen, keys, order, keys_in, order_in, cols, pos, rest, acc;
    device_buffer temp, list, list_tmp;
    sort_size keys_size, pairs_size; /* temp's and pairs_temp's */
    /* find_pairs' own CUB temp: growing `temp` would free what a captured
     * device-pointer call's graph still uses */
    device_buffer pairs_temp;
    /* host-pointer calls: staging copies of the caller's arrays (host_in:
     * a subset's, gathered), and the moved particles, on the device and in
     * pinned host memory */
    device_buffer in_particles, in_indices, in_rest, moved, host_in, host_moved;
    /* find_pairs' list, in pinned host memory until the call has succeeded:
     * a copy straight into the caller's array would have written it before
     * the sync that can still report a device error */
    device_buffer host_pairs;
} pleat_cuda;
/* made with pleat_calloc and freed with pleat_free, without constructors */
static_assert(std::is_trivially_default_constructible<pleat_cuda>::value &&
                  std::is_trivially_destructible<pleat_cuda>::value,
              "pleat_cuda must stay plain data");

/* Whether a CUDA call of pleat's succeeded. A failed one also left its
 * error in cudaGetLastError(), where the application would take it for one
 * of its own: pleat reports it through its status and clears it. (A sticky
 * error, a kernel fault, stays: every later call returns it.) */
static bool ok(cudaError_t e)
{
    if (e != cudaSuccess)
        cudaGetLastError();
    return e == cudaSuccess;
}

/* Makes ctx's device current for one call and restores the caller's after:
 * cudaSetDevice changes the calling thread's current device, which a
 * multi-GPU caller relies on. Not knowing the caller's device, the call
 * could not give it back: it does not go on (`ok` false). */
namespace {
struct device_scope {
    int restore = -1; /* the caller's device, when the scope changed it */
    bool ok = false;
    explicit device_scope(int device)
    {
        int previous = -1;
        ok = ::ok(cudaGetDevice(&previous)) &&
             (previous == device || ::ok(cudaSetDevice(device)));
        if (ok && previous != device)
            restore = previous;
    }
    ~device_scope()
    {
        if (restore >= 0)
            ::ok(cudaSetDevice(restore));
    }
};
} // namespace

static pleat_status status_of(cudaError_t e)
{
    if (ok(e))
        return PLEAT_OK;
    return e == cudaErrorMemoryAllocation ? PLEAT_ERROR_OUT_OF_MEMORY : PLEAT_ERROR_DEVICE;
}

/* Whether a call must be refused for the application's error. An error the
 * application left in cudaGetLastError() is its own to read: pleat never
 * takes it (that would hide it) and never reports it as its own. CUB takes
 * that error (cudaGetLastError) at every step it checks, its size query
 * included, and returns it as its own, and any failed call of pleat's would
 * replace it; so such a call is refused with PLEAT_ERROR_DEVICE before
 * anything is queued or written, and the error is left in place. */
static bool error_pending(void)
{
    return cudaPeekAtLastError() != cudaSuccess;
}

/* Whether this is a fork() child of the process that made cu: the CUDA
 * runtime does not survive a fork, so there pleat calls none of it. */
static bool forked(const pleat_cuda *cu)
{
    return pleat_forks() != cu->forks;
}

/* Checked first by every call that uses the device, in this order: a
 * forked child must not even peek at the runtime's error. */
static bool refused(const pleat_cuda *cu)
{
    return forked(cu) || error_pending();
}

/* Not on NULL: cudaFree documents NULL as a no-op, cudaFreeHost does not. */
static void release(device_buffer *b)
{
    if (b->data)
        ok(b->pinned ? cudaFreeHost(b->data) : cudaFree(b->data));
}

/* Waits until the last call's work is done, before its scratch is freed:
 * a device-pointer call returns with its kernels still running, and
 * cudaFree's API entry does not promise to wait for them. Once: a call
 * that grows several buffers waits for the first. */
static pleat_status settle(pleat_cuda *cu)
{
    if (!cu->queued)
        return PLEAT_OK;
    pleat_status st = status_of(cudaEventSynchronize(cu->done));
    cu->queued = st != PLEAT_OK;
    return st;
}

/* Grow-only, like core/buffer.c. While a call is captured it cannot grow
 * (INVALID_ARGUMENT, nothing touched): a call that large must come first. */
static pleat_status reserve(pleat_cuda *cu, device_buffer *b, size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size)
        return PLEAT_ERROR_OUT_OF_MEMORY;
    size_t bytes = count * size;
    if (bytes <= b->bytes)
        return PLEAT_OK;
    if (cu->capturing)
        return PLEAT_ERROR_INVALID_ARGUMENT;
    pleat_status st = b->data ? settle(cu) : PLEAT_OK; /* the old block may be in use */
    if (st != PLEAT_OK)
        return st;
    void *data = NULL;
    cudaError_t e = b->pinned ? cudaMallocHost(&data, bytes) : cudaMalloc(&data, bytes);
    if (e != cudaSuccess)
        return status_of(e);
    release(b);
    b->data = data;
    b->bytes = bytes;
    return PLEAT_OK;
}

/* The bytes of a sort of `items` on `bits` key bits into *c, asked of CUB
 * (query) only when those differ from the last ones asked about. */
template <typename Query>
static pleat_status sort_temp(sort_size *c, unsigned long long items, int bits, Query query)
{
    if (c->known && c->items == items && c->bits == bits)
        return PLEAT_OK;
    size_t bytes = 0;
    cudaError_t e = query(&bytes);
    if (e != cudaSuccess)
        return status_of(e);
    *c = sort_size{items, bits, bytes, true};
    return PLEAT_OK;
}

static pleat_status flags_status(unsigned flags)
{
    if (flags & PLEAT_FLAG_BAD_INDEX)
        return PLEAT_ERROR_BAD_INDEX;
    if (flags & PLEAT_FLAG_NONFINITE)
        return PLEAT_ERROR_NONFINITE_INPUT;
    if (flags & PLEAT_FLAG_NEGATIVE_MASS)
        return PLEAT_ERROR_INVALID_ARGUMENT;
    if (flags & PLEAT_FLAG_TOO_MANY_TESTS)
        return PLEAT_ERROR_TOO_MANY_TESTS;
    return PLEAT_OK;
}

/* Reserves the scratch of a call on m taking-part particles out of count;
 * `counters` is the context's buffer for this kind of call (made with the
 * context). */
static pleat_status reserve_frame(pleat_cuda *cu, pleat_cuda_frame *f, device_buffer *counters)
{
    size_t m = f->m;
    /* the sort takes all the key's bits (sort.cu) */
    pleat_status st = sort_temp(&cu->keys_size, m, 32, [&](size_t *bytes) {
        return pleat_cuda_sort_temp_bytes(f->m, bytes);
    });
    if (st != PLEAT_OK)
        return st;
    struct {
        device_buffer *buf;
        size_t count, size;
    } need[] = {
        {&cu->grid, 1, sizeof(pleat_grid)},
        {&cu->bounds, PLEAT_CUDA_MAX_BLOCKS, sizeof(pleat_cuda_block_box)},
        /* for any call, not only a subset's: a context sized by calls
         * without indices must not allocate at its first captured subset */
        {&cu->seen, ((size_t)f->count + 31) / 32, sizeof(unsigned)},
        {&cu->keys, m, sizeof(uint32_t)},
        {&cu->order, m, sizeof(uint32_t)},
        {&cu->keys_in, m, sizeof(uint32_t)},
        {&cu->order_in, m, sizeof(uint32_t)},
        {&cu->cols, PLEAT_COLUMNS + 1, sizeof(uint32_t)},
        {&cu->pos, m, sizeof(float4)},
        {&cu->rest, f->rest ? m : 0, sizeof(float4)},
        {&cu->acc, m, 3 * sizeof(unsigned long long)},
        {&cu->temp, 1, cu->keys_size.bytes},
    };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; ++i)
        if ((st = reserve(cu, need[i].buf, need[i].count, need[i].size)) != PLEAT_OK)
            return st;
    f->aligned = (uintptr_t)f->particles % 16 == 0 && (uintptr_t)f->out % 16 == 0 &&
                 (uintptr_t)f->rest % 16 == 0;
    f->counters = (pleat_cuda_counters *)counters->data;
    f->grid = (pleat_grid *)cu->grid.data;
    f->blocks = (pleat_cuda_block_box *)cu->bounds.data;
    f->seen = (unsigned *)cu->seen.data;
    f->keys = (uint32_t *)cu->keys.data;
    f->order = (uint32_t *)cu->order.data;
    f->keys_in = (uint32_t *)cu->keys_in.data;
    f->order_in = (uint32_t *)cu->order_in.data;
    f->cols = (uint32_t *)cu->cols.data;
    f->pos = (float4 *)cu->pos.data;
    f->rest_pos = f->rest ? (float4 *)cu->rest.data : NULL;
    f->acc = (unsigned long long *)cu->acc.data;
    return PLEAT_OK;
}

static pleat_cuda_frame make_frame(const float *particles, uint32_t count, const pleat_params *p)
{
    pleat_cuda_frame f;
    memset(&f, 0, sizeof f);
    f.particles = particles;
    f.count = count;
    f.indices = p->indices;
    f.m = p->indices ? p->num_indices : count;
    f.rest = p->rest_positions;
    f.consts = pleat_pair_setup(p->distance, p->stiffness);
    f.max_tests = p->max_tests;
    return f;
}

/* With profiling on, each stage is waited for and timed (the documented
 * cost of profile on CUDA); otherwise laps do nothing. */
namespace {
struct laps {
    int on;
    double mark;
    pleat_timings *t;
    cudaStream_t stream;
};
} // namespace

static cudaError_t lap(laps *l, double *total)
{
    if (!l->on)
        return cudaSuccess;
    cudaError_t e = cudaStreamSynchronize(l->stream);
    pleat_lap(1, &l->mark, total);
    return e;
}

/* Whether s is being captured, into *captured. The query fails on the
 * legacy stream while a blocking stream of the device is being captured:
 * work queued there would join (and invalidate) that capture, so the call is
 * refused with PLEAT_ERROR_DEVICE and nothing queued. */
static pleat_status capture_state(cudaStream_t s, int *captured)
{
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (!ok(cudaStreamIsCapturing(s, &status)))
        return PLEAT_ERROR_DEVICE;
    *captured = status != cudaStreamCaptureStatusNone;
    return PLEAT_OK;
}

/* Calls share the context's scratch: a call on stream s first waits for the
 * work the last device-pointer call queued, which may be on another stream
 * and still running. Not while s is being captured (`captured`, asked once
 * per call; a graph cannot wait on an event recorded outside it): then the
 * calls must share the stream. The context's own stream is never captured. */
static pleat_status order_after_last(pleat_cuda *cu, cudaStream_t s, int captured)
{
    if (cu->queued && !captured)
        return status_of(cudaStreamWaitEvent(s, cu->done, 0));
    return PLEAT_OK;
}

/* Marks the end of a call's work on s for order_after_last; call it only
 * once order_after_last succeeded (s waits for the last mark, or a settle
 * found that mark's work done), so the new mark covers the old. When the
 * mark cannot be made, waits for s instead and keeps the old mark: the
 * next call still comes after both. Returns that wait's status: a fault of
 * the call's work, reported there. */
static pleat_status mark_done(pleat_cuda *cu, cudaStream_t s, int captured)
{
    if (captured)
        return PLEAT_OK;
    if (ok(cudaEventRecord(cu->done, s))) {
        cu->queued = 1;
        return PLEAT_OK;
    }
    return status_of(cudaStreamSynchronize(s));
}

/* Whether a pair can collide at all: else only the checks run (the CPU
 * backend stops at the same point). */
static bool can_collide(const pleat_cuda_frame &f)
{
    return f.m > 1 && f.consts.distance > 0.0f;
}

/* Queues every stage up to the sweep (checks, keys, sort, gather). The
 * sort points f's keys and order at its output, for the kernels after it. */
static cudaError_t queue_prepare(pleat_cuda *cu, pleat_cuda_frame *f, laps *l)
{
    cudaStream_t s = l->stream;
    cudaError_t e = cudaSuccess;
    if (f->indices && f->count > 0)
        e = cudaMemsetAsync(f->seen, 0, ((size_t)f->count + 31) / 32 * sizeof(unsigned), s);
    if (e != cudaSuccess)
        return e;
    /* with no particle no kernel runs, and the counters read as zero; the
     * checks' stage is timed either way, as on the CPU */
    e = f->m == 0 ? cudaMemsetAsync(f->counters, 0, sizeof *f->counters, s)
                  : pleat_cuda_check_and_keys(*f, s);
    if (e != cudaSuccess || (e = lap(l, &l->t->bounds_keys_ms)) != cudaSuccess ||
        !can_collide(*f))
        return e;
    if ((e = pleat_cuda_sort(f, cu->temp.data, cu->temp.bytes, s)) != cudaSuccess ||
        (e = pleat_cuda_gather(*f, s)) != cudaSuccess)
        return e;
    return lap(l, &l->t->sort_ms);
}

/* The copy of counters (device) into cu->host, queued on s. */
static cudaError_t queue_read(pleat_cuda *cu, const pleat_cuda_counters *counters,
                              cudaStream_t s)
{
    return cudaMemcpyAsync(cu->host, counters, sizeof *cu->host, cudaMemcpyDeviceToHost, s);
}

/* The status of the data checks, read and waited for on s. */
static pleat_status read_counters(pleat_cuda *cu, const pleat_cuda_counters *counters,
                                  cudaStream_t s)
{
    cudaError_t e = queue_read(cu, counters, s);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(s);
    return e == cudaSuccess ? flags_status(cu->host->flags) : status_of(e);
}

/* The whole self-collision on device memory (its scratch reserved), queued
 * on l->stream. With `read`, the counters' read is queued before the apply
 * (which does not write them), so that a read the runtime refuses leaves
 * the particles as they were. */
static pleat_status queue_collide(pleat_cuda *cu, pleat_cuda_frame *f, laps *l, bool read)
{
    f->mode = PLEAT_CUDA_CORRECT;
    cudaStream_t s = l->stream;
    cudaError_t e = queue_prepare(cu, f, l);
    if (e == cudaSuccess && can_collide(*f) &&
        (e = pleat_cuda_sweep(*f, s)) == cudaSuccess) /* on the sums the gather cleared */
        e = lap(l, &l->t->sweep_ms);
    double read_ms = 0.0; /* no stage's: the read is timed apart, and dropped */
    if (e == cudaSuccess && read && (e = queue_read(cu, f->counters, s)) == cudaSuccess)
        e = lap(l, &read_ms);
    if (e != cudaSuccess || !can_collide(*f))
        return status_of(e);
    /* reads the checks' flags: nothing is written after a bad input */
    if ((e = pleat_cuda_apply(*f, s)) == cudaSuccess)
        e = lap(l, &l->t->apply_ms);
    return status_of(e);
}

/* A subset's particles, then their rest positions, copied in slot order
 * into pinned staging, so that a host-pointer call reads only the particles
 * that take part: other contexts may be writing the rest of the array at the
 * same time. The indices are checked first, so a bad one is never read
 * through. */
static pleat_status gather_subset(pleat_cuda *cu, const pleat_job *job)
{
    const pleat_params *p = &job->params;
    const uint32_t m = p->num_indices;
    for (uint32_t s = 0; s < m; ++s)
        if (p->indices[s] >= job->count)
            return PLEAT_ERROR_BAD_INDEX;
    pleat_status st = reserve(cu, &cu->host_in, m, (p->rest_positions ? 8 : 4) * sizeof(float));
    if (st != PLEAT_OK)
        return st;
    float *rows = (float *)cu->host_in.data;
    for (uint32_t s = 0; s < m; ++s) {
        const size_t i = p->indices[s];
        memcpy(rows + 4 * (size_t)s, job->particles + 4 * i, 4 * sizeof(float));
        if (p->rest_positions)
            memcpy(rows + 4 * ((size_t)m + s), p->rest_positions + 4 * i, 4 * sizeof(float));
    }
    return PLEAT_OK;
}

/* The caller's arrays into device staging: the whole array, or with
 * indices the taking-part particles only (a gathered frame). */
static pleat_status copy_in(pleat_cuda *cu, const pleat_job *job, pleat_cuda_frame *f)
{
    const pleat_params *p = &job->params;
    size_t n_idx = p->indices ? p->num_indices : 0;
    /* m rows of particles (and rest positions) are staged: the taking-part
     * ones of a subset, or the whole array */
    size_t m = p->indices ? p->num_indices : job->count;
    const bool gathered = p->indices && m > 0;
    pleat_status st = gathered ? gather_subset(cu, job) : PLEAT_OK;
    if (st == PLEAT_OK)
        st = reserve(cu, &cu->in_particles, m, 4 * sizeof(float));
    if (st == PLEAT_OK)
        st = reserve(cu, &cu->in_indices, n_idx, sizeof(uint32_t));
    if (st == PLEAT_OK)
        st = reserve(cu, &cu->in_rest, p->rest_positions ? m : 0, 4 * sizeof(float));
    if (st == PLEAT_OK && job->kind == PLEAT_JOB_COLLIDE) {
        st = reserve(cu, &cu->moved, m, sizeof(pleat_cuda_moved));
        if (st == PLEAT_OK)
            st = reserve(cu, &cu->host_moved, m, sizeof(pleat_cuda_moved));
    }
    if (st != PLEAT_OK)
        return st;
    /* the caller's params give m (an empty index list may have no device
     * copy, yet is still a subset); the device copies replace the arrays */
    *f = make_frame((const float *)cu->in_particles.data, job->count, p);
    f->gathered = gathered;
    f->indices = p->indices ? (const uint32_t *)cu->in_indices.data : NULL;
    f->rest = p->rest_positions ? (const float *)cu->in_rest.data : NULL;
    f->out = (float *)cu->in_particles.data;
    f->moved = (pleat_cuda_moved *)cu->moved.data;
    const float *from = gathered ? (const float *)cu->host_in.data : job->particles;
    const float *rest_from = gathered ? from + 4 * m : p->rest_positions;
    const size_t bytes = m * 4 * sizeof(float);
    cudaStream_t s = cu->stream;
    cudaError_t e = cudaSuccess;
    if (f->m > 0) /* with no particle taking part, nothing is read (as on the CPU) */
        e = cudaMemcpyAsync(f->out, from, bytes, cudaMemcpyHostToDevice, s);
    if (e == cudaSuccess && n_idx)
        e = cudaMemcpyAsync(cu->in_indices.data, p->indices, n_idx * sizeof(uint32_t),
                            cudaMemcpyHostToDevice, s);
    if (e == cudaSuccess && f->rest && f->m > 0)
        e = cudaMemcpyAsync(cu->in_rest.data, rest_from, bytes, cudaMemcpyHostToDevice, s);
    return status_of(e);
}

/* The pair list of a count of `total` pairs: listed (a sweep, timed as
 * one, as on the CPU), sorted and copied out into the caller's array. */
static pleat_status list_pairs(pleat_cuda *cu, pleat_job *job, pleat_cuda_frame *f, laps *l,
                               unsigned long long total)
{
    cudaStream_t s = cu->stream;
    const int shift = f->pair_shift = pleat_pair_shift(job->count);
    pleat_status st = sort_temp(&cu->pairs_size, total, 2 * shift, [&](size_t *bytes) {
        return pleat_cuda_sort_pairs_temp_bytes(total, shift, bytes);
    });
    if (st != PLEAT_OK)
        return st;
    const size_t bytes = (size_t)total * 2 * sizeof(uint32_t);
    if ((st = reserve(cu, &cu->list, total, 8)) != PLEAT_OK ||
        (st = reserve(cu, &cu->list_tmp, total, 8)) != PLEAT_OK ||
        (st = reserve(cu, &cu->pairs_temp, 1, cu->pairs_size.bytes)) != PLEAT_OK ||
        (st = reserve(cu, &cu->host_pairs, 1, bytes)) != PLEAT_OK)
        return st;
    f->mode = PLEAT_CUDA_LIST;
    f->max_tests = 0; /* the count made the same tests, within the limit */
    f->list = (unsigned long long *)cu->list.data;
    f->capacity = total;
    cudaError_t e = cudaMemsetAsync(f->counters, 0, sizeof *f->counters, s);
    if (e == cudaSuccess && (e = pleat_cuda_sweep(*f, s)) == cudaSuccess)
        e = lap(l, &l->t->sweep_ms);
    /* sorted, then written as i, j uint32 pairs into list or list_tmp */
    uint32_t *pairs = NULL;
    if (e == cudaSuccess)
        e = pleat_cuda_sort_pairs(f->list, (unsigned long long *)cu->list_tmp.data, total,
                                  f->pair_shift, cu->pairs_temp.data, cu->pairs_temp.bytes, s,
                                  &pairs);
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(cu->host_pairs.data, pairs, bytes, cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(s);
    if (e != cudaSuccess)
        return status_of(e);
    memcpy(job->pairs, cu->host_pairs.data, bytes);
    return PLEAT_OK;
}

/* find_pairs: count, then (when the caller's array can hold them) list.
 * The stages are timed as on the CPU: a call where no pair can collide
 * times only its checks, a count no list, and a list every stage, also an
 * empty one. */
static pleat_status pairs_job(pleat_cuda *cu, pleat_job *job, pleat_cuda_frame *f, laps *l)
{
    f->mode = PLEAT_CUDA_COUNT;
    cudaError_t e = queue_prepare(cu, f, l);
    if (e != cudaSuccess)
        return status_of(e);
    const bool sweeps = can_collide(*f);
    if (sweeps && (e = pleat_cuda_sweep(*f, cu->stream)) != cudaSuccess)
        return status_of(e);
    pleat_status st = read_counters(cu, f->counters, cu->stream);
    if (st != PLEAT_OK)
        return st;
    if (sweeps) /* read_counters waited for the stream */
        pleat_lap(l->on, &l->mark, &l->t->sweep_ms);
    unsigned long long total = cu->host->pairs;
    job->stats.pairs = total;
    job->stats.tests = cu->host->tests;
    if ((st = pleat_pairs_fit(job, total)) != PLEAT_OK || job->kind == PLEAT_JOB_COUNT_PAIRS ||
        !sweeps || (total > 0 && (st = list_pairs(cu, job, f, l, total)) != PLEAT_OK))
        return st;
    /* the stream is done: a read of the clock, no wait that could fail
     * once the caller's array is written */
    pleat_lap(l->on, &l->mark, &l->t->apply_ms);
    return PLEAT_OK;
}

/* Writes the moved particles (only those, as the CPU does) into the
 * caller's array, in its order (pleat_cuda_moved). The copy runs on the
 * context's stream: cudaMemcpy would use the legacy default stream and wait
 * for the application's work. */
static pleat_status copy_out_moved(pleat_cuda *cu, pleat_job *job, const pleat_cuda_frame &f)
{
    const pleat_cuda_moved *moved = (const pleat_cuda_moved *)cu->host_moved.data;
    cudaError_t e = cudaMemcpyAsync(cu->host_moved.data, f.moved, (size_t)f.m * sizeof *f.moved,
                                    cudaMemcpyDeviceToHost, cu->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(cu->stream);
    if (e != cudaSuccess)
        return status_of(e);
    for (uint32_t d = 0; d < f.m; ++d) {
        const pleat_cuda_moved *mv = &moved[d];
        if (mv->particle == PLEAT_CUDA_UNMOVED)
            continue;
        float *p = job->particles + 4 * (size_t)mv->particle;
        p[0] = mv->x;
        p[1] = mv->y;
        p[2] = mv->z;
    }
    return PLEAT_OK;
}

/* A host-pointer call: copy in, run the stages, check the flags, then write
 * back the moved particles. */
static pleat_status run_host_job(pleat_cuda *cu, pleat_job *job)
{
    laps l = {job->profile, job->profile ? pleat_now_ms() : 0.0, &job->timings, cu->stream};
    pleat_cuda_frame f;
    pleat_status st = copy_in(cu, job, &f);
    if (st == PLEAT_OK)
        st = reserve_frame(cu, &f, &cu->counters);
    if (st != PLEAT_OK)
        return st;
    if (job->kind != PLEAT_JOB_COLLIDE)
        return pairs_job(cu, job, &f, &l);
    if ((st = queue_collide(cu, &f, &l, false)) != PLEAT_OK ||
        (st = read_counters(cu, f.counters, cu->stream)) != PLEAT_OK)
        return st;
    double read_ms = 0.0; /* no stage's, as on the device path: dropped */
    pleat_lap(l.on, &l.mark, &read_ms);
    job->stats.pairs = cu->host->pairs;
    job->stats.tests = cu->host->tests;
    /* only now, with every check passed, the caller's array is written, and
     * only when a correction could have moved something */
    if (!can_collide(f))
        return PLEAT_OK;
    st = copy_out_moved(cu, job, f);
    /* its wait done: a clock read. The write into the caller's array is
     * the apply's, as on the CPU */
    pleat_lap(l.on, &l.mark, &l.t->apply_ms);
    return st;
}

static pleat_status cuda_run(void *impl, pleat_job *job)
{
    pleat_cuda *cu = (pleat_cuda *)impl;
    if (refused(cu))
        return PLEAT_ERROR_DEVICE;
    device_scope scope(cu->device);
    if (!scope.ok)
        return PLEAT_ERROR_DEVICE;
    pleat_status st = order_after_last(cu, cu->stream, 0);
    if (st != PLEAT_OK)
        return st;
    st = run_host_job(cu, job);
    /* A host-pointer call returns with its work done: on success it has
     * waited for the stream (so a fault reported at the mark's wait is not
     * its work's, and its result stands); a call that failed midway may
     * have left work queued that reads the pinned staging the next call
     * rewrites. */
    mark_done(cu, cu->stream, 0);
    if (st != PLEAT_OK)
        ok(cudaStreamSynchronize(cu->stream));
    return st;
}

extern "C" pleat_status pleat_cuda_collide_device(void *impl, float *d_particles, uint32_t count,
                                                  const pleat_params *params, void *stream,
                                                  pleat_stats *stats, int profile,
                                                  pleat_timings *timings)
{
    pleat_cuda *cu = (pleat_cuda *)impl;
    if (refused(cu))
        return PLEAT_ERROR_DEVICE;
    device_scope scope(cu->device);
    if (!scope.ok)
        return PLEAT_ERROR_DEVICE;
    cudaStream_t s = (cudaStream_t)stream;
    /* a sync would invalidate the caller's capture: stats cannot be read
     * while capturing, and a captured call is not timed (the timings stay
     * those of the call before) */
    int captured = 0;
    if (capture_state(s, &captured) != PLEAT_OK)
        return PLEAT_ERROR_DEVICE;
    if (captured && stats)
        return PLEAT_ERROR_INVALID_ARGUMENT;
    profile = profile && !captured;
    pleat_timings unused;
    if (profile)
        memset(timings ? timings : &unused, 0, sizeof unused);
    laps l = {profile, profile ? pleat_now_ms() : 0.0, timings ? timings : &unused, s};
    pleat_cuda_frame f = make_frame(d_particles, count, params);
    f.out = d_particles;
    cu->capturing = captured;
    pleat_status st = reserve_frame(cu, &f, &cu->device_counters);
    cu->capturing = 0;
    if (st != PLEAT_OK)
        return st; /* nothing queued: the device status stays the last call's */
    if ((st = order_after_last(cu, s, captured)) == PLEAT_OK) {
        st = queue_collide(cu, &f, &l, stats != NULL);
        /* also after a failure, which may have queued work on the scratch */
        pleat_status marked = mark_done(cu, s, captured);
        if (st == PLEAT_OK)
            st = marked;
    }
    /* The device status is now this call's. Its first kernel resets the
     * counters (its last block; a memset when no particle takes part), so
     * after a failure they cannot be trusted: LOST, and the device status
     * is PLEAT_ERROR_DEVICE even when the failure came before that kernel,
     * as the call returned an error. */
    cu->device_checks = st == PLEAT_OK ? pleat_cuda::CHECKS_QUEUED : pleat_cuda::CHECKS_LOST;
    if (st != PLEAT_OK || !stats)
        return st;
    /* The stats' wait, whose read was queued. An error there (a fault the
     * device reports of the work waited for, or the runtime's refusal)
     * fails the call after its scratch: its checks are lost as above. */
    cudaError_t e = cudaStreamSynchronize(s);
    if (e != cudaSuccess) {
        cu->device_checks = pleat_cuda::CHECKS_LOST;
        return status_of(e);
    }
    st = flags_status(cu->host->flags);
    if (st == PLEAT_OK) {
        stats->pairs = cu->host->pairs;
        stats->tests = cu->host->tests;
    }
    return st;
}

extern "C" pleat_status pleat_cuda_device_status(void *impl)
{
    pleat_cuda *cu = (pleat_cuda *)impl;
    if (refused(cu))
        return PLEAT_ERROR_DEVICE;
    if (cu->device_checks != pleat_cuda::CHECKS_QUEUED)
        return cu->device_checks == pleat_cuda::CHECKS_NONE ? PLEAT_OK : PLEAT_ERROR_DEVICE;
    device_scope scope(cu->device);
    if (!scope.ok)
        return PLEAT_ERROR_DEVICE;
    /* on the context's own stream, after the last call's mark: the caller's
     * stream may be gone by now */
    pleat_status st = order_after_last(cu, cu->stream, 0);
    if (st != PLEAT_OK)
        return st;
    return read_counters(cu, (const pleat_cuda_counters *)cu->device_counters.data, cu->stream);
}

static void cuda_destroy(void *impl)
{
    pleat_cuda *cu = (pleat_cuda *)impl;
    if (!cu)
        return;
    if (forked(cu)) { /* the scratch is the parent's runtime's: only the host block is ours */
        pleat_free(cu);
        return;
    }
    device_scope scope(cu->device); /* failed, it frees all the same: a release finds its device */
    settle(cu);
    /* and the context's own stream: a create that failed midway may have
     * left a clear of the counters queued there */
    if (cu->stream)
        ok(cudaStreamSynchronize(cu->stream));
    device_buffer *bufs[] = {&cu->counters,     &cu->device_counters, &cu->grid,
                             &cu->bounds,       &cu->seen,            &cu->keys,
                             &cu->order,        &cu->keys_in,         &cu->order_in,
                             &cu->cols,         &cu->pos,             &cu->rest,
                             &cu->acc,          &cu->temp,            &cu->list,
                             &cu->list_tmp,     &cu->pairs_temp,      &cu->in_particles,
                             &cu->in_indices,   &cu->in_rest,         &cu->moved,
                             &cu->host_in,      &cu->host_moved,      &cu->host_pairs};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; ++i)
        release(bufs[i]);
    if (cu->host)
        ok(cudaFreeHost(cu->host));
    if (cu->done)
        ok(cudaEventDestroy(cu->done));
    if (cu->stream)
        ok(cudaStreamDestroy(cu->stream));
    pleat_free(cu);
}

extern "C" const pleat_backend_ops pleat_cuda_ops = {cuda_run, cuda_destroy,
                                                     pleat_cuda_collide_device,
                                                     pleat_cuda_device_status};

extern "C" pleat_status pleat_cuda_create(int device, void **impl, char *describe,
                                          size_t describe_size)
{
    const unsigned long forks = pleat_forks();
    int devices = 0;
    if (!ok(cudaGetDeviceCount(&devices)) || device >= devices)
        return PLEAT_ERROR_BACKEND_UNAVAILABLE;
    /* present but unusable (exclusive mode, error state, older than every
     * architecture built): AUTO falls back. cudaFree(0) creates the
     * device's context now; cudaSetDevice does only when the device
     * changes, so on device 0 the failure would otherwise come at
     * cudaStreamCreate, as PLEAT_ERROR_DEVICE. Without the kernels' check
     * an old GPU would pass here and fail every call. */
    device_scope scope(device);
    cudaDeviceProp prop;
    if (!scope.ok || !ok(cudaFree(0)) || !ok(cudaGetDeviceProperties(&prop, device)) ||
        !ok(pleat_cuda_kernels_run_here()))
        return PLEAT_ERROR_BACKEND_UNAVAILABLE;
    /* plain data: zeroed is value-initialised */
    pleat_cuda *cu = (pleat_cuda *)pleat_calloc(1, sizeof *cu);
    if (!cu)
        return PLEAT_ERROR_OUT_OF_MEMORY;
    cu->device = device;
    cu->forks = forks;
    cu->host_in.pinned = true;
    cu->host_moved.pinned = true;
    cu->host_pairs.pinned = true;
    cudaError_t e = cudaStreamCreateWithFlags(&cu->stream, cudaStreamNonBlocking);
    if (e == cudaSuccess)
        e = cudaEventCreateWithFlags(&cu->done, cudaEventDisableTiming);
    if (e == cudaSuccess)
        e = cudaMallocHost((void **)&cu->host, sizeof *cu->host);
    /* now, not at a first call: a call being captured must not allocate */
    pleat_status st = status_of(e);
    if (st == PLEAT_OK)
        st = reserve(cu, &cu->counters, 1, sizeof(pleat_cuda_counters));
    if (st == PLEAT_OK)
        st = reserve(cu, &cu->device_counters, 1, sizeof(pleat_cuda_counters));
    /* clear: a captured call sets CHECKS_QUEUED before its graph runs, and
     * the bounds blocks' ticket starts at 0 (frame.cuh). On the context's
     * stream, waited for: a plain cudaMemset would go to the legacy stream,
     * which the calls' non-blocking streams do not wait for */
    for (device_buffer *c : {&cu->counters, &cu->device_counters})
        if (st == PLEAT_OK)
            st = status_of(cudaMemsetAsync(c->data, 0, sizeof(pleat_cuda_counters), cu->stream));
    if (st == PLEAT_OK)
        st = status_of(cudaStreamSynchronize(cu->stream));
    if (st != PLEAT_OK) {
        cuda_destroy(cu);
        return st;
    }
    snprintf(describe, describe_size, "cuda %s (device %d)", prop.name, device);
    *impl = cu;
    return PLEAT_OK;
}
