/* A fixed set of worker threads owned by a context. pleat_pool_run() hands
 * out task numbers 0..tasks-1 to the workers and the calling thread (each
 * takes an equal run of consecutive tasks first, the caller the first run,
 * then helps with the others'), and returns when every task is done; no
 * thread is created per call. Results must not depend on which thread ran
 * which task. */
#ifndef PLEAT_CPU_POOL_H
#define PLEAT_CPU_POOL_H

#include "pleat.h"

typedef struct pleat_pool pleat_pool;
typedef void (*pleat_task_fn)(void *arg, uint32_t task);

/* threads >= 1 (the caller counts as one); its idle workers spin when
 * threads <= cores, the cores it may run on (pleat_usable_cores()). NULL
 * when threads or memory fail. */
pleat_pool *pleat_pool_create(int threads, int cores);
/* A pool whose runs go to the application's job system (pleat.h,
 * pleat_context_desc.enqueue_tasks): no threads of its own; `threads` is
 * what pleat_pool_threads() says, how many may run tasks at once. A run of
 * one task runs on the caller. NULL when memory fails. */
pleat_pool *pleat_pool_create_jobs(int threads, pleat_enqueue_tasks_fn enqueue,
                                   pleat_finish_tasks_fn finish, void *context);
void pleat_pool_destroy(pleat_pool *pool);
int pleat_pool_threads(const pleat_pool *pool);
void pleat_pool_run(pleat_pool *pool, uint32_t tasks, pleat_task_fn fn, void *arg);
/* Wakes sleeping workers to spin, ready for the next run: for a call whose
 * first stages are too small to share, so that its first shared one finds
 * them awake. Does nothing where workers do not spin (more threads than
 * cores) or there are none. */
void pleat_pool_nudge(pleat_pool *pool);

/* Where share k of n items (n <= 2^32) cut into `shares` equal runs, in
 * order, begins; k = shares gives n. */
static inline uint64_t pleat_share_begin(uint64_t n, uint32_t k, uint32_t shares)
{
    return n * k / shares;
}

/* Number of fixed-size chunks covering n items (chunking never depends on
 * the thread count, so per-chunk results are the same for every count). */
#define PLEAT_CHUNK 4096u
static inline uint32_t pleat_chunks(uint32_t n)
{
    return (uint32_t)(((uint64_t)n + PLEAT_CHUNK - 1) / PLEAT_CHUNK);
}

#endif
