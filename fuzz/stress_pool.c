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
 * Exit status 0 when every check passed, 1 otherwise.
 */
#include "cpu/pool.h"
#include "portable.h"
#include "scenes.h" /* pleat_scene_random */

#include <stdatomic.h>
#include <stdio.h>
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

/* runs pleat_pool_run `runs` times on a fresh pool; returns its failures */
static int hammer(int threads, int runs, uint64_t *state)
{
    static job jobs[2];
    static const uint32_t counts[] = {0, 1, 2, 3, 8, 31, 100, 1000, MAX_TASKS};
    pleat_pool *pool = pleat_pool_create(threads);
    if (!pool) {
        fprintf(stderr, "FAIL: no pool of %d threads\n", threads);
        return 1;
    }
    int bad = 0;
    for (int r = 0; r < runs; ++r) {
        job *j = &jobs[r & 1];
        uint32_t pick = (uint32_t)pleat_scene_random(state);
        j->tasks = r % 3 ? 1 + pick % 40 : counts[pick % (sizeof counts / sizeof counts[0])];
        memset(j->runs, 0, sizeof j->runs);
        unsigned weight = pick & 64 ? 3 : 1;
        atomic_store(&j->inside, 1);
        pleat_pool_run(pool, j->tasks, weight == 3 ? task_three : task_one, j);
        atomic_store(&j->inside, 0);
        for (uint32_t t = 0; t < j->tasks; ++t) {
            if (j->runs[t] != weight) {
                fprintf(stderr, "FAIL: %d threads, run %d: task %u of %u ran %u times\n", threads,
                        r, t, j->tasks, j->runs[t] / weight);
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
            bad |= hammer(threads[k], 0, &state); /* created and destroyed idle */
            bad |= hammer(threads[k], 1500, &state);
        }
    }
    bad |= atomic_load(&failures) != 0;
    printf("stress_pool: %s\n", bad ? "FAILED" : "ok");
    return bad;
}
