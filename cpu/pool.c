/* Workers wait for a new generation of tasks, and the caller for the workers
 * still in one, by spinning a short while (SPIN_NS) before sleeping on a
 * condition variable: a call runs about ten stages back to back, and waking
 * a sleeping thread costs tens of microseconds, more than a whole stage at
 * small sizes. Spinning is only done when every thread can have a core of
 * its own; with more threads than cores a spinning thread would take the
 * core a working one needs. Other contexts' threads may still be waiting for
 * a core, so the spin yields it now and then.
 *
 * The caller does not wait for workers to wake up: it takes tasks too,
 * closes the generation once none is left, and waits for the workers that
 * joined it (`active`). (Each stage used to wait until every worker had
 * woken. Crumpled sheet, 16k particles, AVX2, medians of interleaved runs: 3
 * threads on 2 cores, where workers sleep between stages, 0.71 -> 0.60 ms a
 * call, against 0.66 on 1 thread; 2 threads beside a busy process, 0.70 ->
 * 0.60; 2 threads alone, within noise.) Joining is Dekker's handshake, all
 * in sequentially consistent order: the worker counts itself in `active`,
 * then checks that the generation is still the open one it saw; the caller
 * closes it, then reads `active`. One of the two sees the other, so a worker
 * that takes tasks is waited for, and one that comes late (counted only
 * after the close, or finding the generation closed) takes none and reads
 * none of its fields; the caller waits for it only if it counted itself
 * before the close. No wake-up is lost: a generation opens under the lock,
 * the last worker out signals under the lock after its decrement of
 * `active`, and a sleeper checks its condition under the lock before it
 * waits.
 *
 * A worker spins again whenever the generation changes, closes included,
 * and the caller can change it without opening one (pleat_pool_nudge): a
 * call whose first stages are too small to share wakes the workers at its
 * start, so they are spinning by its first shared stage instead of being
 * woken by it.
 *
 * A pool made with pleat_pool_create_jobs() has no threads: each run of
 * more than one task goes to the application's job system as one enqueue
 * and one finish, and its ranges come back through job_range(), which
 * keeps a job system's mistakes away from the stage's tasks.
 *
 * In a fork() child the workers are gone (only the forking thread is
 * copied), and the lock and condition variables are in whatever state the
 * parent's threads left them: an orphaned pool runs every task on the
 * caller, touches neither, and at its end frees its memory only. */
#include "pool.h"
#include "thread.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/fork.h"
#include "core/fp.h"

#include <stdatomic.h>

#define SPIN_NS 50000.0

/* A thread's seat (the caller's is 0, worker i's is i + 1): its share of a
 * generation's tasks, a run of consecutive ones [next, end), which it takes
 * first, and the others once theirs are gone. Whenever no thread falls
 * behind, the k-th share of every stage then runs on thread k, and as the
 * stages split the particles in order (chunks or parts), what one stage
 * writes for a range of particles the next reads from the same core's
 * caches; where cores are far apart (on the 2-core VM a cache line took 165
 * ns from one core to the other), taking tasks first come first served gave
 * each stage about half its data from the other core. The padding keeps
 * every seat's counter on a cache line of its own (64 bytes; seats are at
 * least 96 apart). */
typedef struct seat {
    _Atomic uint64_t next; /* 64 bits: it may pass end by one per thread */
    uint64_t end;
    struct pleat_pool *pool;
    pleat_thread thread;
    char pad[64];
} seat;

struct pleat_pool {
    int threads;
    int started; /* workers actually running */
    int spin;    /* threads <= pleat_usable_cores() */
    unsigned long forks; /* pleat_forks() before the workers started */
    seat *seats; /* threads of them */
    pleat_mutex lock;
    pleat_cond wake; /* a new generation or stop */
    pleat_cond idle; /* the last active worker left */
    /* odd: open to workers; only the caller changes it (a nudge adds 2 to
     * a closed one, so the workers see a change and spin again) */
    atomic_ulong generation;
    atomic_int stop;
    atomic_int active; /* workers that joined a generation and have not left */
    /* the generation's task function, and the seats' shares: written
     * before it opens, read only by the workers that joined it, which the
     * last run waited for */
    pleat_task_fn fn;
    void *arg;
    /* the application's job system instead of workers (enqueue set) */
    pleat_enqueue_tasks_fn enqueue;
    pleat_finish_tasks_fn finish;
    void *job_context;
};

/* Takes tasks until none is left: seat `own`'s share first, then the
 * others' in turn. A share already taken is passed over after a plain
 * read: an increment would take its cache line from its owner, and every
 * thread looks at every seat once per stage. */
static void drain(pleat_pool *pool, int own)
{
    for (int k = 0; k < pool->threads; ++k) {
        seat *s = &pool->seats[(own + k) % pool->threads];
        uint64_t t;
        while (atomic_load_explicit(&s->next, memory_order_relaxed) < s->end &&
               (t = atomic_fetch_add(&s->next, 1)) < s->end)
            pool->fn(pool->arg, (uint32_t)t);
    }
}

/* Spins until done(pool, seen) holds or SPIN_NS pass; returns whether it holds. */
static int spin_until(pleat_pool *pool, int (*done)(pleat_pool *, unsigned long),
                      unsigned long seen)
{
    if (!pool->spin)
        return done(pool, seen);
    double until = pleat_now_ms() + SPIN_NS * 1e-6;
    for (unsigned i = 1;; ++i) {
        if (done(pool, seen))
            return 1;
        pleat_cpu_relax();
        if (i % 64 == 0) {
            if (pleat_now_ms() > until)
                return 0;
            pleat_thread_yield(); /* a thread of another context may want this core */
        }
    }
}

/* Stop, or a generation other than `seen`: opened, closed or nudged. */
static int woken(pleat_pool *pool, unsigned long seen)
{
    return atomic_load_explicit(&pool->stop, memory_order_acquire) ||
           atomic_load(&pool->generation) != seen;
}

static int none_active(pleat_pool *pool, unsigned long unused)
{
    (void)unused;
    return atomic_load(&pool->active) == 0;
}

/* Spins, then sleeps on `cond`, until done(pool, seen) holds. */
static void wait_until(pleat_pool *pool, int (*done)(pleat_pool *, unsigned long),
                       unsigned long seen, pleat_cond *cond)
{
    if (spin_until(pool, done, seen))
        return;
    pleat_mutex_lock(&pool->lock);
    while (!done(pool, seen))
        pleat_cond_wait(cond, &pool->lock);
    pleat_mutex_unlock(&pool->lock);
}

static void worker_main(void *p)
{
    seat *me = p;
    pleat_pool *pool = me->pool;
    int own = (int)(me - pool->seats);
    unsigned long seen = 0;
    /* a new thread starts in its creator's floating-point environment
     * (POSIX) or the system's (Windows): tasks run in the default one, as
     * the calling thread's (core/fp.h) */
    pleat_fp_default();
    for (;;) {
        wait_until(pool, woken, seen, &pool->wake);
        if (atomic_load_explicit(&pool->stop, memory_order_acquire))
            return;
        seen = atomic_load(&pool->generation);
        if (seen % 2 == 0)
            continue; /* closed or nudged: spin for the next */
        atomic_fetch_add(&pool->active, 1);
        if (atomic_load(&pool->generation) == seen) /* still open: the caller waits for us */
            drain(pool, own);
        if (atomic_fetch_sub(&pool->active, 1) == 1) {
            pleat_mutex_lock(&pool->lock);
            pleat_cond_signal(&pool->idle);
            pleat_mutex_unlock(&pool->lock);
        }
    }
}

/* Whether this is a fork() child of the process that started the workers. */
static int orphaned(const pleat_pool *pool)
{
    return pool->started && pleat_forks() != pool->forks;
}

/* A zeroed pool of `threads`; NULL when threads < 1 or memory fails. */
static pleat_pool *pool_new(int threads)
{
    pleat_pool *pool = threads < 1 ? NULL : pleat_calloc(1, sizeof *pool);
    if (pool)
        pool->threads = threads;
    return pool;
}

pleat_pool *pleat_pool_create(int threads, int cores)
{
    pleat_pool *pool = pool_new(threads);
    if (!pool)
        return NULL;
    pool->spin = threads <= cores;
    pool->forks = pleat_forks();
    atomic_init(&pool->generation, 0);
    atomic_init(&pool->stop, 0);
    atomic_init(&pool->active, 0);
    pleat_mutex_init(&pool->lock);
    pleat_cond_init(&pool->wake);
    pleat_cond_init(&pool->idle);
    pool->seats = pleat_calloc((size_t)threads, sizeof *pool->seats);
    if (!pool->seats) {
        pleat_pool_destroy(pool);
        return NULL;
    }
    for (int i = 0; i < threads; ++i) {
        atomic_init(&pool->seats[i].next, 0);
        pool->seats[i].pool = pool;
    }
    for (int i = 1; i < threads; ++i) {
        seat *s = &pool->seats[i];
        if (!pleat_alloc_thread() || pleat_thread_start(&s->thread, worker_main, s) != 0) {
            pleat_pool_destroy(pool);
            return NULL;
        }
        pool->started++;
    }
    return pool;
}

pleat_pool *pleat_pool_create_jobs(int threads, pleat_enqueue_tasks_fn enqueue,
                                   pleat_finish_tasks_fn finish, void *context)
{
    pleat_pool *pool = pool_new(threads);
    if (!pool)
        return NULL;
    pool->enqueue = enqueue;
    pool->finish = finish;
    pool->job_context = context;
    return pool;
}

void pleat_pool_destroy(pleat_pool *pool)
{
    if (!pool)
        return;
    if (pool->enqueue || orphaned(pool)) {
        pleat_free(pool->seats);
        pleat_free(pool);
        return;
    }
    pleat_mutex_lock(&pool->lock);
    atomic_store_explicit(&pool->stop, 1, memory_order_release);
    pleat_cond_broadcast(&pool->wake);
    pleat_mutex_unlock(&pool->lock);
    for (int i = 1; i <= pool->started; ++i)
        pleat_thread_join(&pool->seats[i].thread);
    pleat_cond_destroy(&pool->idle);
    pleat_cond_destroy(&pool->wake);
    pleat_mutex_destroy(&pool->lock);
    pleat_free(pool->seats);
    pleat_free(pool);
}

int pleat_pool_threads(const pleat_pool *pool)
{
    return pool->threads;
}

/* A stage on the application's job system: its ranges come back here.
 * A range runs as many tasks as it holds, taken from `next`, not the tasks
 * it names: a job system that repeats a range, or hands out one past the
 * stage's end, then runs no task twice and none out of bounds, and the
 * tasks no range took (a range it skipped) run on the calling thread after
 * finish. Which thread runs which task never changes the results. The
 * price: an engine that sends range k of every stage to its worker k no
 * longer keeps a part's particles on one core from stage to stage, as the
 * seats do; most engines' ranges go to whichever worker is free anyway,
 * and claiming the named tasks instead would need a flag per task. */
typedef struct job_stage {
    pleat_task_fn fn;
    void *arg;
    uint32_t tasks;
    _Atomic uint64_t next; /* 64 bits: repeated ranges may take it far past tasks */
} job_stage;

/* Runs up to `want` of the stage's tasks not yet taken. */
static void take_tasks(job_stage *stage, uint32_t want)
{
    uint64_t t = atomic_fetch_add(&stage->next, want);
    const uint64_t end = t + want < stage->tasks ? t + want : stage->tasks;
    for (; t < end; ++t)
        stage->fn(stage->arg, (uint32_t)t);
}

static void job_range(uint32_t begin, uint32_t end, void *task_context)
{
    if (end <= begin)
        return;
    pleat_fp_env saved; /* the job system's thread may flush to zero */
    pleat_fp_enter(&saved);
    take_tasks(task_context, end - begin);
    pleat_fp_leave(&saved);
}

static void run_jobs(pleat_pool *pool, uint32_t tasks, pleat_task_fn fn, void *arg)
{
    job_stage stage = {fn, arg, tasks, 0};
    void *handle = pool->enqueue(job_range, tasks, &stage, pool->job_context);
    /* after each: the engine's jobs may have run here and changed it */
    pleat_fp_default();
    if (handle) {
        pool->finish(handle, pool->job_context);
        pleat_fp_default();
    }
    take_tasks(&stage, tasks); /* what no range took */
}

void pleat_pool_run(pleat_pool *pool, uint32_t tasks, pleat_task_fn fn, void *arg)
{
    if (tasks == 0)
        return;
    if (pool->threads == 1 || tasks == 1 || orphaned(pool)) {
        for (uint32_t t = 0; t < tasks; ++t)
            fn(arg, t);
        return;
    }
    if (pool->enqueue) {
        run_jobs(pool, tasks, fn, arg);
        return;
    }
    /* the workers read these after they see the generation open */
    pool->fn = fn;
    pool->arg = arg;
    uint64_t from = 0; /* equal shares, in order */
    for (int k = 0; k < pool->threads; ++k) {
        seat *s = &pool->seats[k];
        s->end = pleat_share_begin(tasks, (uint32_t)k + 1, (uint32_t)pool->threads);
        atomic_store_explicit(&s->next, from, memory_order_relaxed);
        from = s->end;
    }
    pleat_mutex_lock(&pool->lock);
    atomic_fetch_add(&pool->generation, 1); /* open */
    pleat_cond_broadcast(&pool->wake);
    pleat_mutex_unlock(&pool->lock);

    drain(pool, 0);

    atomic_fetch_add(&pool->generation, 1); /* closed: every task is taken */
    wait_until(pool, none_active, 0, &pool->idle); /* and done */
}

void pleat_pool_nudge(pleat_pool *pool)
{
    /* !spin also covers a job system's pool; an orphan has no workers */
    if (pool->threads == 1 || !pool->spin || orphaned(pool))
        return;
    pleat_mutex_lock(&pool->lock);
    atomic_fetch_add(&pool->generation, 2); /* still closed */
    pleat_cond_broadcast(&pool->wake);
    pleat_mutex_unlock(&pool->lock);
}
