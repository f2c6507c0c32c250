/*
 * stress_pool: the worker pool's hand-off (cpu/pool.c) hammered without a
 * test framework, so ThreadSanitizer can run it. Pools of 2, 3 and 8 threads
 * (on a 2-core machine the first spins between runs, the others sleep) run
 * thousands of pleat_pool_run calls back to back, with task counts from 0 to
 * 4999, two task functions taking turns, and now and then a pause longer
 * than the spin so the workers go to sleep and must be woken, and now and
 * then a nudge (pleat_pool_nudge) between runs, as a small call makes
 * before its first shared stage, sleeping or not. Every task
 * must run exactly once, and only while its pleat_pool_run is in progress.
 * Pools are also created and destroyed with no run at all.
 *
 * Pools on a job system (pleat_pool_create_jobs) run the same: a stage's
 * ranges go to 2 threads of the stage's own, and the job system makes,
 * run by run, each of the mistakes pleat guards against (pleat.h,
 * pleat_enqueue_tasks_fn): dropped ranges, ranges run twice at once on both
 * threads, ranges past the end, inverted and oversized. Every task must
 * still run exactly once.
 *
 * Exit status 0 when every check passed, 1 otherwise.
 */
#include "cpu/pool.h"
#include "cpu/thread.h"
#include "portable.h"
#include "scenes.h" /* pleat_scene_random */

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TASKS 4999u

typedef struct job {
    uint32_t tasks;
    unsigned runs[MAX_TASKS]; /* plain: TSan reports a task run twice at once */
    atomic_int inside;        /* 1 while pleat_pool_run is in progress */
} job;

static atomic_int failures;

static void task(job *j, uint32_t t, unsigned weight)
{
    if (!atomic_load_explicit(&j->inside, memory_order_relaxed) || t >= j->tasks) {
        atomic_fetch_add(&failures, 1);
        fprintf(stderr, "FAIL: task %u of %u ran outside its run\n", t, j->tasks);
        return;
    }
    j->runs[t] += weight;
}

static void task_one(void *arg, uint32_t t)
{
    task(arg, t, 1);
}

static void task_three(void *arg, uint32_t t)
{
    task(arg, t, 3);
}

/* The job system: a stage's ranges are 1 + pick % 4 tasks each, range k
 * taken by one of 2 threads; its mistake is the stage's pick % 5. */
enum { FAITHFUL, DROPS, REPEATS, STRAYS, DROPS_ALL };

typedef struct stage {
    pleat_task_range_fn task;
    void *task_context;
    uint32_t count, size;
    int mistake;
    atomic_uint next; /* the next range; with REPEATS, both threads take each */
    pleat_thread threads[2];
    int started;
} stage;

static uint64_t job_picks = 7;

static void give(stage *st, uint32_t k)
{
    const uint64_t begin = (uint64_t)k * st->size;
    const uint32_t end = (uint32_t)(begin + st->size < st->count ? begin + st->size : st->count);
    if (st->mistake == DROPS_ALL || (st->mistake == DROPS && k % 3 == 1))
        return;
    if (st->mistake == STRAYS) {
        st->task(st->count, st->count + 5, st->task_context);
        st->task(end, (uint32_t)begin, st->task_context);
        if (k == 1)
            st->task((uint32_t)begin, UINT32_MAX, st->task_context);
    }
    st->task((uint32_t)begin, end, st->task_context);
}

static void stage_thread(void *arg)
{
    stage *st = arg;
    const uint32_t ranges = (st->count + st->size - 1) / st->size;
    for (;;) {
        uint32_t k = atomic_fetch_add(&st->next, 1);
        if (st->mistake == REPEATS)
            k /= 2; /* each k comes twice, most often to both threads at once */
        if (k >= ranges)
            return;
        give(st, k);
    }
}

static void *job_enqueue(pleat_task_range_fn task, uint32_t count, void *task_context,
                         void *job_context)
{
    (void)job_context;
    stage *st = calloc(1, sizeof *st);
    if (!st) {
        atomic_fetch_add(&failures, 1);
        return NULL;
    }
    uint32_t pick = (uint32_t)pleat_scene_random(&job_picks);
    st->task = task;
    st->task_context = task_context;
    st->count = count;
    st->size = 1 + pick % 4;
    st->mistake = (int)(pick / 4 % 5);
    atomic_init(&st->next, 0);
    for (; st->started < 2; ++st->started) {
        if (pleat_thread_start(&st->threads[st->started], stage_thread, st) != 0) {
            fprintf(stderr, "FAIL: no job system thread\n");
            atomic_fetch_add(&failures, 1);
            break;
        }
    }
    return st;
}

static void job_finish(void *handle, void *job_context)
{
    (void)job_context;
    stage *st = handle;
    for (int i = 0; i < st->started; ++i)
        pleat_thread_join(&st->threads[i]);
    free(st);
}

/* runs pleat_pool_run `runs` times on a fresh pool (on the job system above
 * with `jobs`); returns its failures */
static int hammer(int threads, int jobs, int runs, uint64_t *state)
{
    static job runs_of[2];
    static const uint32_t counts[] = {0, 1, 2, 3, 8, 31, 100, 1000, MAX_TASKS};
    pleat_pool *pool = jobs ? pleat_pool_create_jobs(threads, job_enqueue, job_finish, NULL)
                            : pleat_pool_create(threads, pleat_usable_cores());
    if (!pool) {
        fprintf(stderr, "FAIL: no pool of %d threads\n", threads);
        return 1;
    }
    int bad = 0;
    for (int r = 0; r < runs; ++r) {
        job *j = &runs_of[r & 1];
        uint32_t pick = (uint32_t)pleat_scene_random(state);
        j->tasks = r % 3 ? 1 + pick % 40 : counts[pick % (sizeof counts / sizeof counts[0])];
        memset(j->runs, 0, sizeof j->runs);
        unsigned weight = pick & 64 ? 3 : 1;
        atomic_store(&j->inside, 1);
        pleat_pool_run(pool, j->tasks, weight == 3 ? task_three : task_one, j);
        atomic_store(&j->inside, 0);
        for (uint32_t t = 0; t < j->tasks; ++t) {
            if (j->runs[t] != weight) {
                fprintf(stderr, "FAIL: %d threads%s, run %d: task %u of %u ran %u times\n",
                        threads, jobs ? " (job system)" : "", r, t, j->tasks, j->runs[t] / weight);
                bad = 1;
                break;
            }
        }
        if (pick % 97 == 0) /* longer than the spin: the workers sleep */
            portable_sleep_us(100 + pick % 200);
        if (pick % 5 == 0 || pick % 97 < 2) /* and often wake them */
            pleat_pool_nudge(pool);
        if (pick % 89 == 0) { /* woken for nothing, they sleep again */
            pleat_pool_nudge(pool);
            portable_sleep_us(100 + pick % 100);
        }
    }
    pleat_pool_destroy(pool);
    return bad;
}

int main(void)
{
    static const int threads[] = {2, 3, 8};
    uint64_t state = 1;
    int bad = 0;
    for (int round = 0; round < 4; ++round) {
        for (size_t k = 0; k < sizeof threads / sizeof threads[0]; ++k) {
            bad |= hammer(threads[k], 0, 0, &state); /* created and destroyed idle */
            bad |= hammer(threads[k], 0, 1500, &state);
            bad |= hammer(threads[k], 1, 300, &state);
        }
    }
    bad |= atomic_load(&failures) != 0;
    printf("stress_pool: %s\n", bad ? "FAILED" : "ok");
    return bad;
}
