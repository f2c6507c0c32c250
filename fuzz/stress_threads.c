/*
 * stress_threads: concurrent use of pleat without a test framework, so that
 * ThreadSanitizer can run it (Criterion cannot run under TSan: its arena
 * mapping fails, Snaipe/Criterion#274). tests/test_concurrency.c checks the
 * same rules under the Criterion suites.
 *
 * 1. Separate contexts (every CPU kernel variant x 1..3 pool threads) on
 *    separate threads at once, all reading the same const inputs: every
 *    result has the bits of a one-thread scalar run made before.
 * 2. Threads racing on one shared context: every call either gives those
 *    bits or is refused (PLEAT_ERROR_INVALID_ARGUMENT) without writing.
 * 3. One context handed from thread to thread (joined in between): works.
 * 4. Two contexts correcting the even and the odd particles of one array at
 *    once: each writes only what it moves, so the result is that of one
 *    subset after the other, and TSan sees no race.
 * 5. A dense clump on 2 and 3 pool threads: so many pairs cross from one
 *    sweep part to the next that the parts fold what they owe into their
 *    tables (cpu/settle.c); the bits of the one-thread run.
 * 6. An application's job system (pleat_context_desc.enqueue_tasks) of 3
 *    threads per stage, each taking one task at a time, on the jobs and
 *    the clump with cpu_threads 3: the bits of the one-thread run.
 * 7. Contexts created, used and destroyed on several threads at once (the
 *    kernels the library picks: PLEAT_CPU_ISA is process-wide).
 *
 * Exit status 0 when every check passed, 1 otherwise.
 */
#include <pleat.h>
#include "isas.h"
#include "portable.h"
#include "scenes.h" /* pleat_scene_uniform */
#include "subsets.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failed;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            failed = 1;                                                                            \
        }                                                                                          \
    } while (0)

static pleat_context *context(const char *isa, int threads)
{
    portable_setenv("PLEAT_CPU_ISA", *isa ? isa : NULL);
    pleat_context_desc d = pleat_default_context_desc();
    d.backend = PLEAT_BACKEND_CPU;
    d.cpu_threads = threads;
    pleat_context *ctx = NULL;
    pleat_status s = pleat_context_create(&d, &ctx);
    portable_setenv("PLEAT_CPU_ISA", NULL);
    if (s == PLEAT_ERROR_BACKEND_UNAVAILABLE)
        return NULL;
    if (s != PLEAT_OK) {
        fprintf(stderr, "context %s/%d: %s\n", isa, threads, pleat_status_string(s));
        exit(1);
    }
    return ctx;
}

typedef struct job {
    uint32_t n;
    float *particles, *rest, *collided;
    pleat_params params;
    uint64_t pairs;
    uint32_t *list;
    size_t num;
} job;

/* n particles in a cube with about 6 others within 1 of each; the job's
 * distance is `reach`. */
static void make_job(job *j, uint32_t n, float reach, uint64_t seed)
{
    memset(j, 0, sizeof *j);
    j->n = n;
    j->particles = malloc(16 * (size_t)n);
    j->rest = malloc(16 * (size_t)n);
    j->collided = malloc(16 * (size_t)n);
    if (!j->particles || !j->rest || !j->collided)
        exit(1);
    float side = 1.0f;
    while (side * side * side * 1.4f < (float)n)
        side *= 1.05f;
    for (uint32_t i = 0; i < 4 * n; ++i)
        j->particles[i] =
            i % 4 == 3 ? (i % 20 == 3 ? 0.0f : 1.0f) : pleat_scene_uniform(&seed) * side;
    for (uint32_t i = 0; i < 4 * n; ++i)
        j->rest[i] =
            j->particles[i] + (i % 4 == 3 ? 0.0f : pleat_scene_uniform(&seed) - 0.5f);
    j->params = pleat_default_params();
    j->params.distance = reach;
    j->params.stiffness = 0.8f;
    j->params.rest_positions = j->rest;
    pleat_context *ref = context("scalar", 1);
    memcpy(j->collided, j->particles, 16 * (size_t)n);
    pleat_stats st;
    CHECK(pleat_self_collide(ref, j->collided, n, &j->params, &st) == PLEAT_OK, "reference");
    j->pairs = st.pairs;
    CHECK(pleat_find_pairs(ref, j->particles, n, &j->params, NULL, 0, &j->num) == PLEAT_OK,
          "count");
    j->list = malloc((2 * j->num + 1) * sizeof *j->list);
    if (!j->list)
        exit(1);
    size_t again;
    CHECK(pleat_find_pairs(ref, j->particles, n, &j->params, j->list, j->num, &again) == PLEAT_OK,
          "list");
    pleat_context_destroy(ref);
}

static void free_job(job *j)
{
    free(j->particles);
    free(j->rest);
    free(j->collided);
    free(j->list);
}

/* One collide and one list on ctx; 1 = right, 0 = refused and untouched,
 * -1 = wrong. */
static int run_once(pleat_context *ctx, const job *j, int list)
{
    size_t bytes = 16 * (size_t)j->n;
    int r = -1;
    if (!list) {
        float *p = malloc(bytes);
        if (!p)
            return -1;
        memcpy(p, j->particles, bytes);
        pleat_stats st = {0, 0};
        pleat_status s = pleat_self_collide(ctx, p, j->n, &j->params, &st);
        if (s == PLEAT_OK)
            r = memcmp(p, j->collided, bytes) == 0 && st.pairs == j->pairs ? 1 : -1;
        else if (s == PLEAT_ERROR_INVALID_ARGUMENT)
            r = memcmp(p, j->particles, bytes) == 0 ? 0 : -1;
        free(p);
    } else {
        uint32_t *out = malloc((2 * j->num + 1) * sizeof *out);
        if (!out)
            return -1;
        size_t num = 12345;
        pleat_status s = pleat_find_pairs(ctx, j->particles, j->n, &j->params, out, j->num, &num);
        if (s == PLEAT_OK)
            r = num == j->num && memcmp(out, j->list, 2 * num * sizeof *out) == 0 ? 1 : -1;
        else if (s == PLEAT_ERROR_INVALID_ARGUMENT)
            r = num == 12345 ? 0 : -1;
        free(out);
    }
    return r;
}

typedef struct worker {
    pthread_t thread;
    pleat_context *ctx;
    const job *jobs;
    int num_jobs, rounds;
    atomic_int *stop; /* NULL: run the rounds */
    atomic_int right, refused, wrong;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    for (int r = 0; w->stop ? !atomic_load(w->stop) : r < w->rounds; ++r) {
        int got = run_once(w->ctx, &w->jobs[r % w->num_jobs], r & 1);
        atomic_fetch_add(got > 0 ? &w->right : got == 0 ? &w->refused : &w->wrong, 1);
    }
    return NULL;
}

static void init_worker(worker *w, pleat_context *ctx, const job *jobs, int num_jobs)
{
    memset(w, 0, sizeof *w);
    w->ctx = ctx;
    w->jobs = jobs;
    w->num_jobs = num_jobs;
    w->rounds = 6;
    atomic_init(&w->right, 0);
    atomic_init(&w->refused, 0);
    atomic_init(&w->wrong, 0);
}

static void disjoint_subsets(const job *j)
{
    pleat_context *ctx[3] = {context("scalar", 1), context("", 2), context("", 2)};
    const char *why = subsets_check(ctx[0], ctx[1], ctx[2], j->particles, j->n, &j->params, 4);
    CHECK(why == NULL, "disjoint subsets: %s", why);
    for (int k = 0; k < 3; ++k)
        pleat_context_destroy(ctx[k]);
    printf("disjoint subsets of one array: 2 threads at once\n");
}

/* 6. A job system: each stage gets JOB_THREADS threads, started by
 * enqueue and joined by finish, taking one task at a time. */
#define JOB_THREADS 3

typedef struct stage {
    pleat_task_range_fn task;
    void *task_context;
    uint32_t count;
    atomic_uint next;
    pthread_t thread[JOB_THREADS];
} stage;

static void *stage_thread(void *arg)
{
    stage *st = arg;
    for (uint32_t t; (t = atomic_fetch_add(&st->next, 1)) < st->count;)
        st->task(t, t + 1, st->task_context);
    return NULL;
}

static void *enqueue(pleat_task_range_fn task, uint32_t count, void *task_context,
                     void *job_context)
{
    (void)job_context;
    stage *st = malloc(sizeof *st);
    if (!st)
        exit(1);
    st->task = task;
    st->task_context = task_context;
    st->count = count;
    atomic_init(&st->next, 0);
    for (int k = 0; k < JOB_THREADS; ++k)
        pthread_create(&st->thread[k], NULL, stage_thread, st);
    return st;
}

static void finish(void *handle, void *job_context)
{
    (void)job_context;
    stage *st = handle;
    for (int k = 0; k < JOB_THREADS; ++k)
        pthread_join(st->thread[k], NULL);
    free(st);
}

static void job_system(const job *jobs, int num_jobs)
{
    pleat_context_desc d = pleat_default_context_desc();
    d.backend = PLEAT_BACKEND_CPU;
    d.cpu_threads = 3;
    d.enqueue_tasks = enqueue;
    d.finish_tasks = finish;
    pleat_context *ctx = NULL;
    CHECK(pleat_context_create(&d, &ctx) == PLEAT_OK, "job system: no context");
    if (!ctx)
        return;
    for (int k = 0; k < num_jobs; ++k)
        for (int list = 0; list < 2; ++list)
            CHECK(run_once(ctx, &jobs[k], list) == 1, "job system, job %d, list %d: other bits", k,
                  list);
    pleat_context_destroy(ctx);
}

/* 7. Each thread makes contexts of 1 to 3 pool threads, one after the
 * other, runs a job on each and destroys it, while the others do too. */
enum { MAKERS = 4, MADE = 6 };
typedef struct maker {
    pthread_t thread;
    const job *j;
    int made, right;
} maker;

static void *make_and_use(void *arg)
{
    maker *m = arg;
    for (int r = 0; r < MADE; ++r) {
        pleat_context_desc d = pleat_default_context_desc();
        d.backend = PLEAT_BACKEND_CPU;
        d.cpu_threads = 1 + r % 3;
        pleat_context *ctx = NULL;
        if (pleat_context_create(&d, &ctx) != PLEAT_OK)
            continue;
        m->made++;
        m->right += run_once(ctx, m->j, r & 1) == 1;
        pleat_context_destroy(ctx);
    }
    return NULL;
}

static void contexts_made_at_once(const job *j)
{
    maker ms[MAKERS];
    for (int k = 0; k < MAKERS; ++k) {
        ms[k] = (maker){.j = j};
        pthread_create(&ms[k].thread, NULL, make_and_use, &ms[k]);
    }
    for (int k = 0; k < MAKERS; ++k) {
        pthread_join(ms[k].thread, NULL);
        CHECK(ms[k].made == MADE && ms[k].right == MADE,
              "contexts made at once, thread %d: %d made, %d right of %d", k, ms[k].made,
              ms[k].right, MADE);
    }
    printf("contexts made and destroyed on %d threads at once\n", MAKERS);
}

/* 1. separate contexts: every ISA at 1 to 3 threads, all at once */
static void separate_contexts(const job *jobs)
{
    static const char *const isas[] = {PLEAT_TEST_ISAS, ""};
    enum { NUM_ISAS = sizeof isas / sizeof isas[0] };
    worker ws[3 * NUM_ISAS];
    int n = 0;
    for (int k = 0; k < NUM_ISAS; ++k)
        for (int t = 1; t <= 3; ++t) {
            pleat_context *ctx = context(isas[k], t);
            if (!ctx)
                break;
            init_worker(&ws[n++], ctx, jobs, 2);
        }
    for (int k = 0; k < n; ++k)
        pthread_create(&ws[k].thread, NULL, work, &ws[k]);
    for (int k = 0; k < n; ++k) {
        pthread_join(ws[k].thread, NULL);
        CHECK(atomic_load(&ws[k].right) == ws[k].rounds && atomic_load(&ws[k].wrong) == 0 &&
                  atomic_load(&ws[k].refused) == 0,
              "%s: %d right, %d refused, %d wrong of %d", pleat_context_describe(ws[k].ctx),
              atomic_load(&ws[k].right), atomic_load(&ws[k].refused), atomic_load(&ws[k].wrong),
              ws[k].rounds);
        pleat_context_destroy(ws[k].ctx);
    }
    printf("separate contexts: %d threads at once\n", n);
}

/* 2. one shared context, 3 threads racing until each saw both outcomes
 * (or a minute passed) */
static void shared_context(pleat_context *shared, const job *jobs)
{
    worker ws[3];
    atomic_int stop;
    atomic_init(&stop, 0);
    for (int k = 0; k < 3; ++k) {
        init_worker(&ws[k], shared, jobs, 2);
        ws[k].stop = &stop;
        pthread_create(&ws[k].thread, NULL, work, &ws[k]);
    }
    struct timespec start, now, nap = {0, 10000000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        nanosleep(&nap, NULL);
        int done = 1;
        for (int k = 0; k < 3; ++k)
            done &= atomic_load(&ws[k].right) >= 2 && atomic_load(&ws[k].refused) >= 2;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (done || now.tv_sec - start.tv_sec > 60)
            break;
    }
    atomic_store(&stop, 1);
    int right = 0, refused = 0;
    for (int k = 0; k < 3; ++k) {
        pthread_join(ws[k].thread, NULL);
        CHECK(atomic_load(&ws[k].wrong) == 0, "shared context: %d wrong results",
              atomic_load(&ws[k].wrong));
        right += atomic_load(&ws[k].right);
        refused += atomic_load(&ws[k].refused);
    }
    CHECK(right > 0 && refused > 0, "shared context: %d right, %d refused", right, refused);
    printf("shared context: %d calls right, %d refused\n", right, refused);
}

/* 3. one context handed from thread to thread */
static void handed_over(pleat_context *shared, const job *jobs)
{
    worker w;
    for (int k = 0; k < 4; ++k) {
        init_worker(&w, shared, jobs, 2);
        w.rounds = 2;
        pthread_create(&w.thread, NULL, work, &w);
        pthread_join(w.thread, NULL);
        CHECK(atomic_load(&w.right) == 2, "handed over: %d right", atomic_load(&w.right));
    }
}

/* 5. a clump: about 170 neighbours each, 700k pairs; 2 and 3 threads must
 * give the 1-thread bits */
static void dense_clump(const job *clump)
{
    for (int t = 2; t <= 3; ++t) {
        pleat_context *ctx = context("", t);
        CHECK(run_once(ctx, clump, 0) == 1, "clump, %d threads: not the 1-thread bits", t);
        pleat_context_destroy(ctx);
    }
    printf("dense clump: 2 and 3 threads fold what they owe\n");
}

int main(void)
{
    job jobs[2];
    make_job(&jobs[0], 12000, 1.0f, 1); /* 3 chunks: the pool threads split it */
    make_job(&jobs[1], 3000, 1.0f, 2);
    separate_contexts(jobs);
    pleat_context *shared = context("", 2);
    shared_context(shared, jobs);
    handed_over(shared, jobs);
    pleat_context_destroy(shared);
    disjoint_subsets(&jobs[0]);
    job clump;
    make_job(&clump, 9000, 3.0f, 3);
    dense_clump(&clump);
    job_system(jobs, 2);
    job_system(&clump, 1);
    printf("a job system of %d threads a stage\n", JOB_THREADS);
    contexts_made_at_once(&jobs[1]);
    free_job(&clump);
    for (int k = 0; k < 2; ++k)
        free_job(&jobs[k]);
    puts(failed ? "FAILED" : "passed");
    return failed;
}
