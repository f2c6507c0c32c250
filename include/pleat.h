/*
 * pleat — cloth self-collision for particle systems.
 *
 * Given cloth particles (position and inverse mass) pleat finds every pair of
 * particles closer than a collision distance and pushes each pair apart, as one
 * position-based (PBD) constraint pass. A cloth solver calls
 * pleat_self_collide() once or more per solver iteration.
 *
 * Conventions used by every declaration below:
 * - Lengths are in the caller's units; pleat never assumes a scale.
 * - A particle is 4 floats {x, y, z, inverse mass}; particle i starts at
 *   particles[4 * i]. Inverse mass 0 pins a particle (it never moves), and
 *   so does -0, which is not negative.
 * - The caller owns every array it passes; pleat keeps no pointer to them
 *   after a call returns and never frees them. (What pleat does keep is
 *   named where it is given: a job system's callbacks and job_context for
 *   the context's life, an allocator until another is set.)
 * - Arrays may share memory: a call reads all of its inputs (particles,
 *   indices, rest positions) before it writes any output (corrected
 *   particles, a pair list, stats), so rest_positions may be the particles
 *   themselves and a pair list may be written over its own inputs.
 * - Every function that can fail returns a pleat_status. On any error the
 *   caller's arrays are left bit-for-bit unchanged (pleat validates everything
 *   before it writes anything).
 * - Thread rules: a context is used by one thread at a time; separate
 *   contexts may be used from separate threads at the same time (they may
 *   read the same const input arrays, and may correct disjoint index subsets
 *   of one particle array: a call writes only particles of its own subset,
 *   and only those its corrections move). Sharing one context is detected, not
 *   undefined: a pleat_self_collide(), pleat_find_pairs() or
 *   pleat_self_collide_device() call that starts while another call on the
 *   same context is running returns PLEAT_ERROR_INVALID_ARGUMENT at once
 *   (after its pointer and params checks, num_indices > count included,
 *   whose errors come first, and on a context that can take it: a device
 *   call on a CPU context is BACKEND_UNAVAILABLE; the data checks, which
 *   would read the arrays, are not made, so a bad index or a NaN is not
 *   reported then), without waiting and without touching its arrays,
 *   and the running call is unaffected (a device call holds the context
 *   while it queues its work, and, when it reads stats or is profiled,
 *   until it has waited for them). pleat_context_destroy(),
 *   pleat_context_timings() and pleat_context_device_status() must not
 *   overlap a call on the same context. The free functions (pleat_version, pleat_status_string,
 *   pleat_default_*) and pleat_context_backend() /
 *   pleat_context_describe() are thread-safe, and so are
 *   pleat_context_create() and pleat_context_destroy() (of different
 *   contexts) on several threads at once.
 * - fork() (POSIX): in the child, a context made before the fork works as
 *   follows. A CPU context's worker threads stayed in the parent: its calls
 *   run on the calling thread alone (the same bits; pleat_context_describe()
 *   still names the threads it was made with), and pleat_context_destroy()
 *   frees it without waiting for them. A CUDA context calls nothing of the
 *   CUDA runtime, which does not survive a fork: its calls and
 *   pleat_context_device_status() return PLEAT_ERROR_DEVICE (after the
 *   argument checks and the busy refusal) and write nothing, and
 *   pleat_context_destroy() frees only what it took from pleat's heap (see
 *   pleat_set_allocator()), not its device or pinned memory. One with a
 *   job system relies on the job system, as in the parent. A copy that
 *   another thread's call held at the fork stays held: its calls are
 *   refused, and pleat_context_destroy() leaves it as it is (that call may
 *   have stopped midway, so nothing of it can be freed safely). pleat knows
 *   it is in a child through a pthread_atfork() child handler registered
 *   when it is loaded: not yet in child handlers registered before that,
 *   and never after _Fork() or clone(); there, use or destroy no context.
 * - Results are identical bit for bit whatever the backend, the CPU
 *   instruction set, the thread count or the run, and whatever the caller's
 *   floating-point environment: pleat_self_collide(), pleat_find_pairs()
 *   and pleat_self_collide_device() compute in the default one (round to
 *   nearest, no flush-to-zero or denormals-are-zero, exceptions masked) and
 *   give the caller's back, exception flags included, when they return.
 *   pleat_context_create(), pleat_context_destroy() and
 *   pleat_context_device_status() run in it too.
 *
 * C99 and C++ compatible.
 */
#ifndef PLEAT_H
#define PLEAT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the exported functions (the library hides everything else). A
 * Windows DLL of pleat exports them by name (PLEAT_BUILD_DLL is set while
 * it is built); its callers need nothing: the import library resolves them.
 * A static pleat's functions are hidden (PLEAT_BUILD_STATIC is set while it
 * is built): a shared object that links it, such as a plugin, does not
 * export them, so another copy of pleat in the process cannot take their
 * place. Its callers need nothing either. */
#if defined(_WIN32)
#if defined(PLEAT_BUILD_DLL)
#define PLEAT_API __declspec(dllexport)
#else
#define PLEAT_API
#endif
#elif (defined(__GNUC__) || defined(__clang__)) && !defined(PLEAT_BUILD_STATIC)
#define PLEAT_API __attribute__((visibility("default")))
#else
#define PLEAT_API
#endif

/** Version of this header. pleat_version() gives the library's. */
#define PLEAT_VERSION_MAJOR 0
#define PLEAT_VERSION_MINOR 3
#define PLEAT_VERSION_PATCH 0
#define PLEAT_VERSION_STRING "0.3.0"

/** The library's version as "MAJOR.MINOR.PATCH"; static storage, never NULL. */
PLEAT_API const char *pleat_version(void);

/** Result of every call that can fail. */
typedef enum pleat_status {
    PLEAT_OK = 0,                    /**< success */
    PLEAT_ERROR_INVALID_ARGUMENT,    /**< a NULL pointer, a value out of range, a
                                          negative inverse mass, a context in use by
                                          another call, or a device call a capture
                                          cannot hold (see each call) */
    PLEAT_ERROR_NONFINITE_INPUT,     /**< NaN or infinity in a particle or rest position */
    PLEAT_ERROR_BAD_INDEX,           /**< an index >= count, or an index given twice */
    PLEAT_ERROR_CAPACITY,            /**< the caller's output array is too small (or
                                          absent: see pleat_find_pairs()) */
    PLEAT_ERROR_OUT_OF_MEMORY,       /**< memory could not be allocated (scratch, or a
                                          worker thread could not start) */
    PLEAT_ERROR_BACKEND_UNAVAILABLE, /**< the requested backend or CPU variant is not
                                          built or not present, or the call needs
                                          another backend (device calls on the CPU) */
    PLEAT_ERROR_DEVICE,              /**< the GPU reported an error, or a CUDA call found
                                          an error of the application's pending (see
                                          pleat_self_collide_device()) */
    PLEAT_ERROR_TOO_MANY_TESTS       /**< the call would test more candidate pairs than
                                          pleat_params.max_tests allows */
} pleat_status;

/** A short English description of a status; static storage, never NULL and
 *  never empty (an unknown value gives "unknown pleat status"). */
PLEAT_API const char *pleat_status_string(pleat_status status);

/** Where the work runs. */
typedef enum pleat_backend {
    PLEAT_BACKEND_AUTO = 0, /**< CUDA when built in and a device is present, else CPU */
    PLEAT_BACKEND_CPU,      /**< the CPU: SIMD kernels chosen at run time, worker threads */
    PLEAT_BACKEND_CUDA      /**< an NVIDIA GPU */
} pleat_backend;

/** A range of one stage's tasks: runs end - begin tasks (at most) of the
 *  stage that task_context belongs to (which ones is pleat's choice, so that
 *  no task runs twice: see pleat_enqueue_tasks_fn). Handed to the
 *  application's job system by pleat_enqueue_tasks_fn; may run on any
 *  thread, at the same time as other ranges of the stage. It runs its tasks
 *  in the default floating-point environment whatever the thread's
 *  (flush-to-zero included) and gives the thread's back when it returns. */
typedef void (*pleat_task_range_fn)(uint32_t begin, uint32_t end, void *task_context);

/** The application's job system, handed one stage of a call: it must call
 *  task(begin, end, task_context) over ranges that cover [0, count) exactly
 *  once (count >= 2; ranges of any size, on any threads, the calling one
 *  included), pass job_context through as given, and return a handle for
 *  pleat_finish_tasks_fn, or NULL when every range has already run, as when
 *  it ran them itself before returning (then finish is not called).
 *  pleat guards against a job system that gets this wrong: a range runs as
 *  many of the stage's tasks as it holds, whichever no range has taken yet,
 *  so a repeated range, one past count or an empty one (end <= begin)
 *  runs no task twice and none out of bounds, and the tasks that no range
 *  took (a range dropped) run on the calling thread once finish returns
 *  (or enqueue, with NULL): such mistakes cost time, never results. What
 *  pleat cannot guard against is a range called, or still running, after
 *  finish returned (or enqueue returned NULL): the stage is gone by then,
 *  and that is undefined behaviour. */
typedef void *(*pleat_enqueue_tasks_fn)(pleat_task_range_fn task, uint32_t count,
                                        void *task_context, void *job_context);

/** Returns once every range of the stage that `handle` came from has
 *  returned, with their writes visible to the calling thread (as any job
 *  system's wait gives); it may run ranges itself meanwhile. */
typedef void (*pleat_finish_tasks_fn)(void *handle, void *job_context);

/** How to create a context. Start from pleat_default_context_desc(). */
typedef struct pleat_context_desc {
    pleat_backend backend; /**< default PLEAT_BACKEND_AUTO */
    int cpu_threads;       /**< CPU worker threads, 1..PLEAT_MAX_CPU_THREADS;
                                0 (default) = one per core the creating thread
                                may run on: its CPU affinity (on Windows the
                                process's), which the worker threads inherit,
                                so a context made on a thread pinned to one
                                core gets one thread (make it on another
                                thread, or set the count); or on Linux the
                                process's cgroup CPU quota (v1 or v2, as
                                docker --cpus and Kubernetes CPU limits set
                                it: the tightest of its cgroup and those above
                                it that its cgroup mount shows, so not those
                                above a cgroup namespace's root), or on Windows
                                its job object's hard CPU rate cap (the
                                process's own job's, taken as a share of all
                                processors: where jobs nest, a share of an
                                outer job's rate, so more cores), rounded up
                                to whole cores, where that is fewer; read
                                when the context is created. The calling thread counts as one.
                                With no more threads than such cores,
                                idle workers spin for up to 50 us after each
                                stage before they sleep. Workers start with
                                the asynchronous signals blocked (not the
                                faults a thread raises itself: SIGSEGV,
                                SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS), so
                                that a signal sent to the process reaches one
                                of the application's threads, as a sigwait()
                                or signalfd there expects. With a job system
                                (enqueue_tasks) no threads are started: see
                                there */
    int cuda_device;       /**< CUDA device ordinal, >= 0; default 0. A
                                call that uses the device makes it the
                                calling thread's current device, and the
                                caller's current again before it returns.
                                One that cannot ask which is current, or set
                                its own, returns PLEAT_ERROR_DEVICE having
                                done nothing (creation: BACKEND_UNAVAILABLE;
                                pleat_context_destroy frees all the same).
                                Should the runtime fail to set the caller's
                                back, the result stands and this device
                                stays current. A number past the last device
                                is a device that cannot be used (see
                                pleat_context_create()) */
    int profile;           /**< nonzero: time each stage of every call, for
                                pleat_context_timings(); costs a clock read per
                                stage (on CUDA, a wait for the call's stream
                                after each, so the first stage also times the
                                work queued on it before the call). Default 0 */
    /** The application's job system, for the CPU backend (a game engine's
     *  workers, so that pleat's do not compete with them for the cores):
     *  both set, or both NULL (default: the context's own worker threads).
     *  When set the context starts no threads; each stage of a call with
     *  more than one task goes through enqueue_tasks once, then
     *  finish_tasks, both called only on the thread that called pleat,
     *  before the call returns. cpu_threads then is the number of the job
     *  system's threads pleat plans for (0 = one per core, as above: set it
     *  to the job system's thread count): the radix sort's passes, the
     *  sweep and the corrections' apply are split into at most that many
     *  parts, while other stages (the checks, the keys, the reordering of
     *  the particles, the writing of a pair list) may have more tasks than
     *  that; with 1, every stage runs
     *  on the calling thread and the job system is never called. The
     *  results are the same bits with or without a job system, whatever
     *  the split, the threads and their order. The callbacks are called in
     *  pleat's default floating-point environment (see pleat_task_range_fn),
     *  and so is any work of the engine's that they run on the calling
     *  thread; pleat sets it again after each. Used only on the CPU: with
     *  PLEAT_BACKEND_AUTO on a machine with a GPU the context runs on CUDA
     *  and ignores them, so ask for PLEAT_BACKEND_CPU. */
    pleat_enqueue_tasks_fn enqueue_tasks;
    pleat_finish_tasks_fn finish_tasks;
    void *job_context; /**< passed to both as given; default NULL. pleat
                            keeps it and the two callbacks: they must stay
                            valid until pleat_context_destroy() returns */
} pleat_context_desc;

/** The largest accepted pleat_context_desc.cpu_threads. */
#define PLEAT_MAX_CPU_THREADS 256

/** A filled desc: AUTO backend, one thread per core, CUDA device 0, no
 *  profiling, the context's own worker threads. */
PLEAT_API pleat_context_desc pleat_default_context_desc(void);

/** Opaque; owns scratch memory reused across calls and, on the CPU, worker
 *  threads (none with a job system). */
typedef struct pleat_context pleat_context;

/**
 * Creates a context. desc may be NULL (= the defaults). On success *out gets
 * the context, which the caller destroys with pleat_context_destroy().
 * Errors: out NULL, backend unknown, cpu_threads outside 0..PLEAT_MAX_CPU_THREADS,
 * cuda_device < 0, or only one of enqueue_tasks and finish_tasks set
 * -> INVALID_ARGUMENT; PLEAT_BACKEND_CUDA on a build or
 * machine without CUDA, or whose device cannot be used (held by another
 * process in exclusive mode, in an error state, with no kernel image
 * it can run: older than every GPU architecture the library was built
 * for, or newer, with a driver that cannot compile the library's PTX; or
 * the runtime fails a query of it) -> BACKEND_UNAVAILABLE, and
 * PLEAT_BACKEND_AUTO then runs on the CPU; OUT_OF_MEMORY; a CUDA device
 * that fails while the context sets it up (its stream, its first
 * allocations) -> DEVICE. *out is written
 * only on success. On a CUDA device, creation loads one of pleat's kernels
 * (to learn whether they run there, as the first call would), which may
 * wait for the application's work on the device, or compile PTX.
 * The environment variable PLEAT_CPU_ISA forces the CPU kernel variant of a
 * context that runs on the CPU: exactly one of scalar, sse2, avx2, avx512
 * and neon (lower case, nothing around it); a variant this build or CPU
 * lacks, or any other value -> BACKEND_UNAVAILABLE (a context that runs on
 * CUDA does not read it). Set but empty, it is as if unset.
 */
PLEAT_API pleat_status pleat_context_create(const pleat_context_desc *desc, pleat_context **out);

/** Destroys a context and joins its threads, if it has any (not in a fork()
 *  child of the process that made it: see fork() at the top). NULL is fine.
 *  A CUDA context first waits for its last call's work, except work in CUDA
 *  graphs (see pleat_self_collide_device()). On Windows, destroy contexts
 *  before pleat's DLL is unloaded and not from DllMain or a destructor that
 *  runs at DLL unload: joining the threads there would wait on the loader
 *  lock they need to end. */
PLEAT_API void pleat_context_destroy(pleat_context *ctx);

/** The backend the context runs on (never AUTO); AUTO for a NULL ctx. */
PLEAT_API pleat_backend pleat_context_backend(const pleat_context *ctx);

/** A human-readable description, e.g. "cpu scalar, 2 threads"; owned by the
 *  context, valid until it is destroyed; "" for a NULL ctx. */
PLEAT_API const char *pleat_context_describe(const pleat_context *ctx);

/** Wall-clock time of each stage of a call, in milliseconds. Both backends
 *  time the same stages: a call where no pair can collide (distance 0, or
 *  fewer than two particles taking part) only its checks (bounds_keys_ms),
 *  a pair count (pleat_find_pairs with pairs NULL) no apply_ms, and any
 *  other call every stage, also when it finds no pair. A pair list's
 *  sweeps (a count, then the list) are both in sweep_ms. On CUDA a
 *  host-pointer call's copy to the device is in bounds_keys_ms, and its
 *  copy back into the caller's array in apply_ms (the CPU writes that
 *  array in its apply too). */
typedef struct pleat_timings {
    double bounds_keys_ms; /**< checks, bounding box and grid keys */
    double sort_ms;        /**< radix sort of the keys and reordering of the particles */
    double sweep_ms;       /**< key-range sweep and narrow phase */
    double apply_ms;       /**< applying the corrections (or writing the pair list) */
} pleat_timings;

/**
 * Stage times of the context's last successful pleat_self_collide(),
 * pleat_find_pairs() or pleat_self_collide_device() call (a device call
 * being captured in a CUDA graph is not timed and leaves them; one without
 * stats succeeds once queued, its data checks come later). Needs a
 * context created with profile set; without it, or before any successful
 * call, every time is 0. ctx or out NULL -> INVALID_ARGUMENT.
 */
PLEAT_API pleat_status pleat_context_timings(const pleat_context *ctx, pleat_timings *out);

/** The application's heap, for an engine that tracks or pools its memory.
 *  alloc returns a block of `size` bytes (size >= 1) whose address is a
 *  multiple of `alignment` (16, or on Linux 2 MiB for scratch buffers of
 *  4 MiB and more), or NULL, which pleat reports as OUT_OF_MEMORY with
 *  the caller's data untouched. On Linux pleat advises those 2 MiB-aligned
 *  blocks into transparent huge pages (madvise MADV_HUGEPAGE), advice that
 *  stays with the pages after the block is freed. free gets back only
 *  blocks alloc returned, never NULL, and not their size or alignment: a
 *  heap that needs them records them itself (or, on Windows, takes every
 *  block from _aligned_malloc and gives it to _aligned_free). Both may be
 *  called from several threads at once (a call's worker threads grow their
 *  queues while they sweep; with a job system, its threads do, inside
 *  task ranges), and a block may be freed on another thread than the one
 *  that allocated it. */
typedef void *(*pleat_alloc_fn)(size_t size, size_t alignment, void *alloc_context);
/** Gives back a block the paired pleat_alloc_fn returned (see above). */
typedef void (*pleat_free_fn)(void *block, void *alloc_context);

/** Sets the heap every context takes its host memory from: the context,
 *  its threads' bookkeeping and its scratch, on the CPU and CUDA backends
 *  (not CUDA device memory, the CUDA backend's pinned host memory, what
 *  the CUDA runtime and driver allocate for themselves, nor the worker
 *  threads' stacks and the C library's own data for each thread it
 *  starts). Process-wide; both NULL gives the C library's malloc and free
 *  back. Only while no context exists, so no block of one heap goes to the
 *  other: otherwise, or with only one of the two NULL -> INVALID_ARGUMENT,
 *  and nothing changes. In a fork() child, a copy held at the fork (see
 *  there) is never destroyed, so the heap can no longer be set there. alloc_context is
 *  passed to both, as given; pleat keeps the three until another heap is
 *  set, so they must stay valid while a context exists or may be created.
 *  Not to be called while another thread calls it or creates a context. */
PLEAT_API pleat_status pleat_set_allocator(pleat_alloc_fn alloc, pleat_free_fn free_fn,
                                           void *alloc_context);

/** What a call works on. Start from pleat_default_params(). */
typedef struct pleat_params {
    /** Collision distance, in position units: a pair collides when
     *  |x_j - x_i| <= distance, as evaluated in float, without FMA:
     *  (dx*dx + dy*dy) + dz*dz <= distance*distance with dx = x_j - x_i
     *  (each operation rounded), so a pair within a few float roundings of
     *  the distance (relatively, about 1e-7) may fall either way, the same
     *  way on every backend. 0 (finds nothing, the default) or a positive
     *  value whose square is a normal float: about 1.1e-19 to 1.8e19. */
    float distance;
    /** Fraction of each pair's overlap removed per call, in [0, 1]; 1 puts a
     *  lone colliding pair distance apart, short by a fraction
     *  FLT_EPSILON / (w_i + w_j + FLT_EPSILON) of its overlap (the
     *  response's denominator, which keeps two pinned particles from
     *  dividing by zero) and by rounding. That fraction is about 1e-7 for
     *  inverse masses near 1, but not small for heavy particles: w_i + w_j
     *  of 2e-6 leaves 6% of the overlap, 2e-7 37%. Only the ratio of the
     *  two inverse masses matters otherwise, so scaling every inverse mass
     *  by one factor (to keep them near 1) changes nothing else but for
     *  rounding. Default 1. */
    float stiffness;
    /** Optional: only these particles take part (default NULL = all of them).
     *  Each index < count and given once. A non-NULL array with
     *  num_indices = 0 means no particle takes part. */
    const uint32_t *indices;
    /** Number of entries in indices. Default 0. */
    uint32_t num_indices;
    /** Optional rest pose, 4 floats per particle (the 4th is ignored), same
     *  count as the particles (default NULL). Pairs closer than distance at
     *  rest (|r_j - r_i| < distance, in float as above) never collide, so
     *  mesh neighbours do not fight the cloth's own constraints. */
    const float *rest_positions;
    /** The most candidate tests (pleat_stats.tests) a call may make; 0 (the
     *  default) = no limit. A call whose tests would be more returns
     *  PLEAT_ERROR_TOO_MANY_TESTS and writes nothing, on every backend, ISA
     *  and thread count alike. It stops early: the CPU after about
     *  max_tests tests, CUDA before its sweep (with a limit, every call runs
     *  one more kernel, the sweep's searches without its tests). So the
     *  limit bounds what a collapsed input costs: a mesh scaled to zero puts
     *  its n particles within the distance of one another, n^2 / 2 tests,
     *  hours on a CPU at a few million particles, and past a display GPU's
     *  watchdog. Cloth tests about 5 to 20 candidates a particle; a limit of
     *  100 a particle (taking part) leaves room for folds and crumples. */
    uint64_t max_tests;
} pleat_params;

/** distance 0, stiffness 1, no indices, no rest positions, no test limit. */
PLEAT_API pleat_params pleat_default_params(void);

/** What a call found. */
typedef struct pleat_stats {
    uint64_t pairs; /**< colliding pairs (coincident ones included) */
    uint64_t tests; /**< candidate pairs: those inside a particle's key ranges
                         (the same count on every backend, ISA and thread count) */
} pleat_stats;

/**
 * One self-collision pass. particles: count x {x, y, z, inverse mass},
 * positions corrected in place; inverse masses are never changed.
 *
 * Every colliding pair (i, j) contributes, from the positions at the start of
 * the call (Jacobi), with diff = x_j - x_i and L = |diff|:
 *     delta = stiffness / (w_i + w_j + FLT_EPSILON) * (L - distance) * diff / L
 *     x_i += w_i * delta,  x_j -= w_j * delta
 * and the sums are applied at the end. Coincident pairs (diff = 0) count in
 * stats but are not moved. Sums are kept in fixed point (a quantum of
 * 2^(e-30) for a distance in [2^(e-1), 2^e): between distance * 2^-30 and
 * distance * 2^-29), so the result does not depend on order or threads. One
 * pair's correction of a particle is at most 2^30 quanta (from the distance
 * to twice it), as the formula bounds it, give or take rounding. Inverse
 * masses up to FLT_MAX, beside any distance, move a pair as the formula
 * says, to a float's precision.
 *
 * stats may be NULL; it is written only on success.
 * Errors (arrays untouched): ctx or params NULL, particles NULL with count > 0,
 * distance or stiffness out of range, num_indices > 0 with indices NULL, a
 * negative inverse mass -> INVALID_ARGUMENT; an index >= count or repeated,
 * or num_indices > count (then no index is read) -> BAD_INDEX; NaN/Inf in
 * any of the 4 floats of a taking-part particle or in the x, y, z of its
 * rest position -> NONFINITE_INPUT; OUT_OF_MEMORY; more candidate tests
 * than params->max_tests (when not 0) -> TOO_MANY_TESTS.
 * When several apply, the first of: INVALID_ARGUMENT (pointers and params),
 * BAD_INDEX for num_indices > count, INVALID_ARGUMENT for a context in use
 * (see the thread rules above), BAD_INDEX, NONFINITE_INPUT,
 * INVALID_ARGUMENT (inverse mass), TOO_MANY_TESTS (in pleat_find_pairs(),
 * then CAPACITY). OUT_OF_MEMORY may come before any of them but the first
 * three: the data are checked in scratch reserved first, which a refused
 * call may leave grown; it may also come after them all, from what grows
 * with the pairs found (see the README's Memory).
 */
PLEAT_API pleat_status pleat_self_collide(pleat_context *ctx, float *particles, uint32_t count,
                                          const pleat_params *params, pleat_stats *stats);

/**
 * Lists every colliding pair (the same pairs pleat_self_collide() would
 * correct) as (i, j) with i < j, original particle indices, in ascending
 * (i, j) order, 2 uint32 per pair: pairs[2k] = i, pairs[2k + 1] = j.
 * capacity counts pairs, not uint32s.
 *
 * *num_pairs gets the total on success and on PLEAT_ERROR_CAPACITY; on other
 * errors it is not written. pairs == NULL with capacity == 0 is a size query:
 * PLEAT_OK. pairs == NULL with capacity > 0, or capacity < total:
 * PLEAT_ERROR_CAPACITY and nothing written to pairs. Entries past the total
 * are never written. The one exception to both: a total past SIZE_MAX
 * (possible in a 32-bit build: 92,683 coincident particles make over 2^32
 * pairs) fits no array, so *num_pairs gets SIZE_MAX and the call, a size
 * query too, PLEAT_ERROR_CAPACITY.
 * num_pairs NULL -> INVALID_ARGUMENT; other errors as for
 * pleat_self_collide().
 */
PLEAT_API pleat_status pleat_find_pairs(pleat_context *ctx, const float *particles,
                                        uint32_t count, const pleat_params *params,
                                        uint32_t *pairs, size_t capacity, size_t *num_pairs);

/**
 * pleat_self_collide() on data already in GPU memory, for pipelines that keep
 * their cloth on the GPU. CUDA contexts only: on others it returns
 * BACKEND_UNAVAILABLE once the argument checks below have passed.
 *
 * d_particles is device memory (count x 4 floats, corrected in place);
 * params->indices and params->rest_positions, when set, are device pointers
 * too. stream is a cudaStream_t (NULL: the default stream); the work is
 * queued on it and the call returns without waiting: no host round trip, no
 * device sync, and no allocation once the context has made a call (device or
 * host pointers) with at least as many taking-part particles and at least
 * this count (with indices or without), and with rest positions when they
 * are given, so the call can be captured in a CUDA graph. (A call refused
 * by its argument checks, or with host pointers by an index >= count,
 * sizes nothing.) While stream is being captured a call that would need more
 * scratch than that returns INVALID_ARGUMENT, and so does one with stats
 * set: reading them needs a sync. Either queues nothing and leaves the
 * capture intact. Uncaptured, a call that grows the scratch first waits for
 * the context's last call to finish, and the runtime's frees of the old
 * blocks (cudaFree) may wait for all of the device's work, the
 * application's streams included.
 *
 * The pointer and params checks of pleat_self_collide() are made here and
 * returned at once, num_indices > count (BAD_INDEX) included. The data
 * checks (indices, NaN/Inf, negative inverse mass) and params->max_tests
 * run on the device: a bad input, or a call over its test limit, leaves
 * d_particles unchanged, and its status is returned when stats
 * is non-NULL (the call then waits for the stream: the one documented sync)
 * or by pleat_context_device_status() afterwards. A call that returns an
 * error leaves d_particles unchanged too (one that failed midway, as when
 * the runtime refuses a launch, copy or wait, included), unless the device
 * reported the error while the call's kernels ran (a fault, which leaves
 * the CUDA context unusable).
 * With profile set in the context desc, each stage is waited for and timed,
 * except in a call being captured, which leaves the timings as they were.
 *
 * Calls on one context share its device scratch. A call (device or host
 * pointers) on another stream than the last device-pointer call first makes
 * its stream wait for that call's work, so calls never overlap on the GPU.
 * While a stream is being captured that wait cannot be made, nor can pleat
 * order its later calls after a launch of the graph, so:
 * - issue every call of a captured graph on the capturing stream (not on
 *   streams forked from it);
 * - launch the graph after the context's last call made outside it has
 *   finished or on that call's stream (a host-pointer call returns
 *   finished): the launch does not wait for it;
 * - while a launch of the graph may still run, make device-pointer calls on
 *   the context only on the launch's stream, make no host-pointer call, and
 *   do not destroy the context (wait for that stream first);
 * - make no larger call on the context afterwards (it would grow, and free,
 *   the scratch the graph uses), and launch no graph of it once the context
 *   is destroyed;
 * - with a driver older than CUDA 12.3 and lazy module loading (Linux's
 *   default since CUDA 12.2), a kernel's first launch loads it, which cannot
 *   happen inside a capture: make the call uncaptured first with the
 *   particle count it is captured with (the sort picks its kernels by
 *   size), and with a test limit if it has one (its kernel runs only then),
 *   or set CUDA_MODULE_LOADING=EAGER. A build with CUDA 13 needs a
 *   newer driver anyway.
 * Host-pointer calls on a CUDA context copy from the caller's memory (a
 * subset through pinned staging) and may allocate, a device-pointer call
 * allocates when its scratch grows (the first call of a size), and
 * creating or destroying a context allocates or frees: all of which a
 * capture in cudaStreamCaptureModeGlobal on another thread forbids. While
 * another thread captures in that mode, make no such call. While a
 * blocking stream (one made without cudaStreamNonBlocking) is being
 * captured, the runtime forbids work on the legacy default stream: a call
 * with stream NULL then returns PLEAT_ERROR_DEVICE, queues nothing and
 * leaves that capture intact.
 *
 * CUDA errors: pleat returns its own through the status and leaves none of
 * them in cudaGetLastError(). An error the application left there (not yet
 * read by cudaGetLastError()) stays the application's: on a CUDA context,
 * pleat_self_collide(), pleat_find_pairs(), this function and
 * pleat_context_device_status() return PLEAT_ERROR_DEVICE at once when
 * they find one, queue and write nothing, and leave the error in place.
 * pleat_context_create() and pleat_context_destroy() do not look: a CUDA
 * call of theirs that fails takes such an error's place, and pleat then
 * clears it, so read it before them.
 * (CUB, which sorts the keys, takes that error at every step it checks
 * and returns it as its own, so pleat cannot run under it.) This error
 * state belongs to one copy of the CUDA runtime: the application and a
 * static libpleat share it when they link one cudart (pleat's CMake
 * package and pkg-config file bring cudart_static). A shared libpleat
 * carries a hidden runtime of its own, whose error state is apart from the
 * application's: pleat then neither sees the application's errors nor
 * leaves its own where the application looks. (Sticky errors belong to the
 * device's context and reach both.)
 * A sticky error (a kernel's fault, pleat's or the application's: every
 * later CUDA call on that device returns it, until the process ends) is
 * one pleat cannot clear: the failed call returns PLEAT_ERROR_DEVICE, and
 * so do every later call on a context there and
 * pleat_context_device_status(), writing nothing to host memory (but the
 * status, asked with another device current after no device-pointer call
 * got past its scratch, reads nothing and gives PLEAT_OK); a CUDA context
 * cannot be made on that device (BACKEND_UNAVAILABLE: AUTO runs on the
 * CPU); pleat_context_destroy() still frees the context's host memory and
 * asks the runtime to free its device and pinned memory.
 */
PLEAT_API pleat_status pleat_self_collide_device(pleat_context *ctx, float *d_particles,
                                                 uint32_t count, const pleat_params *params,
                                                 void *stream, pleat_stats *stats);

/** Waits for the context's last device-pointer call that got past its
 *  argument checks and its scratch, and returns the status of its data
 *  checks and test limit (TOO_MANY_TESTS): PLEAT_OK when there was none,
 *  and PLEAT_ERROR_DEVICE when that
 *  call failed after that point (the call returned an error too: DEVICE,
 *  or OUT_OF_MEMORY when the runtime refused a launch, copy or wait for
 *  lack of memory). A call refused earlier (a bad argument, a failed query
 *  of the runtime's: the current device asked or set, a capture, a sort's
 *  size; no memory for its scratch, or an error the device reported while
 *  the call waited for the last call's work before growing its scratch)
 *  does not count: the status stays the last call's (after such an error,
 *  which stays on a GPU, that is PLEAT_ERROR_DEVICE too). The wait is on
 *  the context's own stream, so the call's stream may already be
 *  destroyed.
 *  A call captured into a CUDA graph counts as the last call, but its checks
 *  run only when the graph does: wait for the graph's launch stream first
 *  (before any launch, the status is that of the call before it, unless
 *  that one failed after its scratch, whatever failed, the device or the
 *  runtime: the captured call cannot clear what that one left, so the
 *  status is then unspecified).
 *  Its own read and wait, when they fail, give DEVICE (OUT_OF_MEMORY when
 *  the runtime refuses them for lack of memory); they run on the context's
 *  device, the caller's current device set back as by the calls
 *  (pleat_context_desc.cuda_device).
 *  ctx NULL -> INVALID_ARGUMENT; not a CUDA context -> BACKEND_UNAVAILABLE. */
PLEAT_API pleat_status pleat_context_device_status(pleat_context *ctx);

#ifdef __cplusplus
}
#endif

#endif /* PLEAT_H */
