/* The same bits for every thread count, every repeat of a call, every
 * floating-point environment and an application's job system. */
#include "core/alloc.h"
#include "core/buffer.h"
#include "cpu/cpu.h"
#include "cpu/thread.h"
#include "fpenv.h"
#include "scenes.h"
#include "support.h"

#include <criterion/criterion.h>
#include <fenv.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int thread_counts[] = {1, 2, 3, 8};
#define NUM_COUNTS (sizeof thread_counts / sizeof thread_counts[0])

/* collide_hashes() of a scene. */
static void run(pleat_context *ctx, const scene *s, const pleat_params *p, int calls,
                uint64_t *h_collide, uint64_t *h_pairs)
{
    collide_hashes(ctx, s->particles, s->count, p, calls, h_collide, h_pairs);
}

/* The scenes of the thread tests: every kind at 40000 particles (many
 * chunks), then at 3000 (less than one chunk, where the sweep's parts are
 * about PLEAT_PART_MIN particles each, 3 of them with 3 and 8 threads);
 * scene i of NUM_THREAD_SCENES, with its params. */
#define NUM_THREAD_SCENES (2 * SCENE_KIND_COUNT)
static scene thread_scene(int i, uint64_t *rng, pleat_params *p)
{
    static const uint32_t sizes[] = {40000, 3000};
    int kind = i % SCENE_KIND_COUNT;
    scene s = scene_make((scene_kind)kind, sizes[i / SCENE_KIND_COUNT], kind % 2,
                         pleat_scene_random(rng));
    *p = pleat_default_params();
    p->distance = s.distance;
    p->stiffness = 0.7f;
    p->rest_positions = s.rest;
    return s;
}

Test(determinism, same_bits_for_every_thread_count)
{
    uint64_t rng = 99;
    for (int i = 0; i < NUM_THREAD_SCENES; ++i) {
        int kind = i % SCENE_KIND_COUNT;
        pleat_params p;
        scene s = thread_scene(i, &rng, &p);
        uint64_t first_c = 0, first_p = 0;
        for (size_t t = 0; t < NUM_COUNTS; ++t) {
            pleat_context *ctx = cpu_context(thread_counts[t]);
            uint64_t hc, hp;
            run(ctx, &s, &p, 3, &hc, &hp);
            if (t == 0) {
                first_c = hc;
                first_p = hp;
            }
            cr_assert_eq(hc, first_c, "%s %u: %d threads moved particles differently",
                         scene_name(kind), s.count, thread_counts[t]);
            cr_assert_eq(hp, first_p, "%s %u: %d threads listed different pairs",
                         scene_name(kind), s.count, thread_counts[t]);
            pleat_context_destroy(ctx);
        }
        scene_free(&s);
    }
}

Test(determinism, repeated_calls_same_bits_and_no_allocation)
{
    scene s = scene_make(SCENE_FOLDED, 30000, 1, 5);
    pleat_params p = pleat_default_params();
    p.distance = s.distance;
    p.rest_positions = s.rest;
    pleat_context *ctx = cpu_context(2);
    float *a = copy_floats(s.particles, (size_t)s.count * 4);
    pleat_stats st;
    cr_assert_eq(pleat_self_collide(ctx, a, s.count, &p, &st), PLEAT_OK);
    cr_assert_gt(st.pairs, 0);
    /* neither the scratch buffers nor any other block (the sweep's owed
     * tables and queues come straight from pleat_malloc) */
    size_t allocations = pleat_buffer_allocations();
    uint64_t attempts = pleat_alloc_attempts();
    for (int r = 0; r < 5; ++r) {
        float *b = copy_floats(s.particles, (size_t)s.count * 4);
        cr_assert_eq(pleat_self_collide(ctx, b, s.count, &p, NULL), PLEAT_OK);
        cr_assert(memcmp(a, b, (size_t)s.count * 4 * sizeof(float)) == 0, "repeat %d differs", r);
        free(b);
    }
    cr_assert_eq(pleat_buffer_allocations(), allocations,
                 "calls of the same size must reuse the context's scratch");
    cr_assert_eq(pleat_alloc_attempts(), attempts, "a repeated call allocated");
    free(a);
    pleat_context_destroy(ctx);
    scene_free(&s);
}

/* The order of the index list does not change the result. */
Test(determinism, index_order_does_not_matter)
{
    scene s = scene_make(SCENE_CLOUD, 5000, 0, 17);
    pleat_params p = pleat_default_params();
    p.distance = s.distance;
    uint32_t num;
    uint32_t *subset = random_subset(s.count, 3, &num);
    pleat_context *ctx = cpu_context(2);
    p.indices = subset;
    p.num_indices = num;
    float *a = copy_floats(s.particles, (size_t)s.count * 4);
    cr_assert_eq(pleat_self_collide(ctx, a, s.count, &p, NULL), PLEAT_OK);
    for (uint32_t i = 0; i < num / 2; ++i) { /* reverse */
        uint32_t t = subset[i];
        subset[i] = subset[num - 1 - i];
        subset[num - 1 - i] = t;
    }
    float *b = copy_floats(s.particles, (size_t)s.count * 4);
    cr_assert_eq(pleat_self_collide(ctx, b, s.count, &p, NULL), PLEAT_OK);
    cr_assert(memcmp(a, b, (size_t)s.count * 4 * sizeof(float)) == 0);
    free(a);
    free(b);
    free(subset);
    pleat_context_destroy(ctx);
    scene_free(&s);
}

/* One self-collision call on a copy of the particles; returns the copy. */
static float *collide_copy(pleat_context *ctx, const float *particles, uint32_t count,
                           const pleat_params *p)
{
    float *work = copy_floats(particles, (size_t)count * 4);
    cr_assert_eq(pleat_self_collide(ctx, work, count, p, NULL), PLEAT_OK);
    return work;
}

/* A folded sheet in mesh order, where the sort's column pass alone gives
 * key order (cpu/order.c), and the same particles shuffled, where it does
 * not and the sort is finished in full. One context takes them in the
 * order that switches its sort each way (mesh, mesh, shuffled, shuffled,
 * mesh, mesh) and must give, call by call, the bits of a fresh context;
 * the shuffled particles must end where the mesh-order ones do. In mesh
 * order the apply walks columns side by side (cpu/walk.h), and so, from
 * PLEAT_GATHER_WALK_FROM particles on, does the gather. */
static void mesh_and_shuffled(uint32_t size)
{
    scene s = scene_make(SCENE_FOLDED, size, 1, 23);
    uint32_t n = s.count;
    uint32_t *perm = malloc((size_t)n * sizeof *perm);
    float *shuffled = malloc((size_t)n * 4 * sizeof(float));
    float *shuffled_rest = malloc((size_t)n * 4 * sizeof(float));
    cr_assert(perm && shuffled && shuffled_rest);
    uint64_t rng = 31;
    for (uint32_t i = 0; i < n; ++i)
        perm[i] = i;
    for (uint32_t i = n - 1; i > 0; --i) { /* Fisher-Yates */
        uint32_t j = (uint32_t)(pleat_scene_random(&rng) % (i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (uint32_t k = 0; k < n; ++k) {
        memcpy(shuffled + 4 * (size_t)k, s.particles + 4 * (size_t)perm[k], 4 * sizeof(float));
        memcpy(shuffled_rest + 4 * (size_t)k, s.rest + 4 * (size_t)perm[k], 4 * sizeof(float));
    }
    pleat_params mesh = pleat_default_params();
    mesh.distance = s.distance;
    mesh.stiffness = 0.8f;
    mesh.rest_positions = s.rest;
    pleat_params shuf = mesh;
    shuf.rest_positions = shuffled_rest;

    pleat_context *fresh = cpu_context(3);
    float *want_mesh = collide_copy(fresh, s.particles, n, &mesh);
    pleat_context_destroy(fresh);
    fresh = cpu_context(3);
    float *want_shuf = collide_copy(fresh, shuffled, n, &shuf);
    pleat_context_destroy(fresh);
    for (uint32_t k = 0; k < n; ++k)
        cr_assert(memcmp(want_shuf + 4 * (size_t)k, want_mesh + 4 * (size_t)perm[k],
                         4 * sizeof(float)) == 0,
                  "shuffled particle %u (mesh particle %u) ends elsewhere", k, perm[k]);

    pleat_context *ctx = cpu_context(3);
    const int order[] = {0, 0, 1, 1, 0, 0}; /* 1: shuffled */
    for (size_t c = 0; c < sizeof order / sizeof order[0]; ++c) {
        float *got = order[c] ? collide_copy(ctx, shuffled, n, &shuf)
                              : collide_copy(ctx, s.particles, n, &mesh);
        const float *want = order[c] ? want_shuf : want_mesh;
        cr_assert(memcmp(got, want, (size_t)n * 4 * sizeof(float)) == 0,
                  "call %zu (%s) differs from a fresh context's", c,
                  order[c] ? "shuffled" : "mesh");
        free(got);
    }
    pleat_context_destroy(ctx);
    free(want_mesh);
    free(want_shuf);
    free(shuffled_rest);
    free(shuffled);
    free(perm);
    scene_free(&s);
}

Test(determinism, mesh_order_and_shuffled_order_on_one_context)
{
    mesh_and_shuffled(40000);
    mesh_and_shuffled(PLEAT_GATHER_WALK_FROM + 10000);
}

/* The caller's floating-point environment (tests/fpenv.h), set before the
 * context is made (so its workers start in it too) and left on during the
 * call. The bits must be those of the default environment, and the
 * caller's environment must still be in force afterwards. Any rounding
 * mode changes the corrections of any scene; the subnormal cloud's
 * differences are what FTZ/DAZ would flush. */
Test(determinism, the_callers_floating_point_environment_does_not_matter)
{
    uint64_t rng = 5;
    scene tiny = fp_subnormal_cloud(20000, pleat_scene_random(&rng));
    scene cloth = scene_make(SCENE_FOLDED, 20000, 1, pleat_scene_random(&rng));
    const scene *scenes[] = {&tiny, &cloth};
    if (!fp_can_trap()) /* a note, not cr_log_warn: Criterion fails a run that warns */
        fprintf(stderr, "note: this CPU does not trap floating-point exceptions: mode %s not "
                        "checked\n", fp_spoil_name(FP_TRAPS));
    for (int k = 0; k < 2; ++k) {
        const scene *s = scenes[k];
        pleat_params p = pleat_default_params();
        p.distance = s->distance;
        p.stiffness = 0.7f;
        p.rest_positions = s->rest;
        pleat_context *plain = cpu_context(1);
        uint64_t want_c, want_p;
        run(plain, s, &p, 1, &want_c, &want_p);
        pleat_context_destroy(plain);
        for (int mode = 0; mode < fp_spoil_modes(); ++mode) {
            for (int threads = 1; threads <= 2; ++threads) {
                cr_assert_eq(fp_spoil(mode), 0);
                pleat_context *ctx = cpu_context(threads);
                uint64_t got_c, got_p;
                run(ctx, s, &p, 1, &got_c, &got_p);
                int kept = fp_spoiled(mode);
                fp_unspoil();
                pleat_context_destroy(ctx);
                cr_assert(kept, "scene %d, mode %d: the caller's environment was changed", k, mode);
                cr_assert(got_c == want_c && got_p == want_p,
                          "scene %d, mode %d, %d threads: other bits than the default "
                          "environment's",
                          k, mode, threads);
            }
        }
    }
    scene_free(&cloth);
    scene_free(&tiny);
}

/* A job system for the tests (pleat_context_desc.enqueue_tasks). It cuts
 * each stage into ranges: the first of `first` tasks, the others of
 * `range` (first 0: as the others; range 0: every task left). With
 * threads > 0 each stage gets that many threads of its own, started by
 * enqueue and joined by finish, which take ranges in turn from a shared
 * counter, in every spoiled environment after the first two (rounding
 * toward zero, flushing to zero and, where the CPU can, trapping); with
 * `finish_takes`, finish takes ranges too, on the calling thread, before
 * it joins them. With threads 0 enqueue runs every range itself, the last
 * first, and returns NULL. It checks that its callbacks come from the
 * thread that called pleat, in the default environment, for stages of at
 * least 2 tasks, and that each range gives its thread's environment back.
 * With `spoil`, enqueue (when it returns a handle) and finish leave the
 * calling thread rounding upward, as an engine job they ran there might.
 * With a `mistake`, it breaks its contract as a buggy job system would. */
typedef enum job_mistake {
    NO_MISTAKE,
    DROPS_EVERY_OTHER, /* ranges 1, 3, 5 ... never run */
    DROPS_ALL,         /* no range runs */
    REPEATS,           /* every range runs twice */
    STRAYS,            /* also ranges past the end, inverted and oversized ones */
    JOB_MISTAKES
} job_mistake;

typedef struct test_jobs {
    int threads, range, first, finish_takes, spoil;
    job_mistake mistake;
    pthread_t caller;
    int enqueues, finishes, wrong_thread, not_default, too_small;
    atomic_int env_lost, finish_ranges;
} test_jobs;

typedef struct test_stage {
    test_jobs *jobs;
    pleat_task_range_fn task;
    void *task_context;
    uint32_t count;
    atomic_uint next; /* the next range to take */
    atomic_int finish_began;
    pthread_t thread[8];
} test_stage;

/* Where range k of a stage of `count` tasks starts (count when past its end). */
static uint32_t range_start(const test_jobs *jobs, uint32_t k, uint32_t count)
{
    uint64_t size = jobs->range ? (uint64_t)jobs->range : count;
    uint64_t first = jobs->first ? (uint64_t)jobs->first : size;
    uint64_t at = k == 0 ? 0 : first + (k - 1) * size;
    return at < count ? (uint32_t)at : count;
}

/* Set while this thread runs a range: a task run without it is one that
 * pleat ran itself, after the job system (pool tests, note_task). */
static _Thread_local int in_range;

static void hand(pleat_task_range_fn task, uint32_t begin, uint32_t end, void *task_context)
{
    in_range = 1;
    task(begin, end, task_context);
    in_range = 0;
}

static int dropped(const test_jobs *jobs, uint32_t k)
{
    return jobs->mistake == DROPS_ALL || (jobs->mistake == DROPS_EVERY_OTHER && k % 2 == 1);
}

/* Hands range k of a stage of `count` tasks to task, with the job
 * system's mistake. */
static void give_range(const test_jobs *jobs, pleat_task_range_fn task, void *task_context,
                       uint32_t k, uint32_t count)
{
    const uint32_t begin = range_start(jobs, k, count), end = range_start(jobs, k + 1, count);
    if (dropped(jobs, k))
        return;
    if (jobs->mistake == REPEATS)
        hand(task, begin, end, task_context);
    if (jobs->mistake == STRAYS) {
        hand(task, count, count + 2, task_context);
        hand(task, end, begin, task_context);
        hand(task, UINT32_MAX - 1, UINT32_MAX, task_context);
        if (k == 1) /* the second range asks for far more than there is */
            hand(task, begin, UINT32_MAX, task_context);
    }
    hand(task, begin, end, task_context);
}

/* The tasks of a stage of `count` that its ranges leave to pleat: those of
 * the dropped ranges (a range takes as many as it holds). */
static uint32_t left_to_pleat(const test_jobs *jobs, uint32_t count)
{
    uint32_t left = 0;
    for (uint32_t k = 0; range_start(jobs, k, count) < count; ++k)
        if (dropped(jobs, k))
            left += range_start(jobs, k + 1, count) - range_start(jobs, k, count);
    return left;
}

/* Runs the next range of the stage; 0 when none is left. */
static int take_range(test_stage *st)
{
    uint32_t k = atomic_fetch_add(&st->next, 1);
    if (range_start(st->jobs, k, st->count) == st->count)
        return 0;
    give_range(st->jobs, st->task, st->task_context, k, st->count);
    return 1;
}

/* The harshest environment tests/fpenv.h makes: every spoiled mode after
 * the first two in turn (the last rounding mode wins); all_spoiled() tells
 * whether it was set and is still in force. */
static void spoil_all(void)
{
    for (int mode = 2; mode < fp_spoil_modes(); ++mode)
        fp_spoil(mode);
}

static int all_spoiled(void)
{
    int kept = 1;
    for (int mode = 2; mode < fp_spoil_modes(); ++mode)
        kept &= fp_spoiled(mode);
    return kept;
}

static void *stage_thread(void *arg)
{
    test_stage *st = arg;
    spoil_all();
    while (st->jobs->finish_takes && !atomic_load(&st->finish_began))
        sched_yield(); /* or they might run every range before finish is called */
    while (take_range(st))
        if (!all_spoiled())
            atomic_fetch_add(&st->jobs->env_lost, 1);
    return NULL;
}

/* What every callback checks: the thread, the environment. */
static void note_callback(test_jobs *jobs)
{
    jobs->wrong_thread |= !pthread_equal(pthread_self(), jobs->caller);
    jobs->not_default |= !fp_is_default();
}

static void *test_enqueue(pleat_task_range_fn task, uint32_t count, void *task_context,
                          void *job_context)
{
    test_jobs *jobs = job_context;
    jobs->enqueues++;
    note_callback(jobs);
    jobs->too_small |= count < 2;
    if (jobs->threads == 0) {
        uint32_t ranges = 0;
        while (range_start(jobs, ranges, count) < count)
            ++ranges;
        while (ranges-- > 0)
            give_range(jobs, task, task_context, ranges, count);
        return NULL;
    }
    test_stage *st = malloc(sizeof *st);
    cr_assert(st);
    st->jobs = jobs;
    st->task = task;
    st->task_context = task_context;
    st->count = count;
    atomic_init(&st->next, 0);
    atomic_init(&st->finish_began, 0);
    for (int i = 0; i < jobs->threads; ++i)
        cr_assert_eq(pthread_create(&st->thread[i], NULL, stage_thread, st), 0);
    if (jobs->spoil)
        fesetround(FE_UPWARD);
    return st;
}

static void test_finish(void *handle, void *job_context)
{
    test_jobs *jobs = job_context;
    test_stage *st = handle;
    jobs->finishes++;
    note_callback(jobs);
    if (jobs->finish_takes) {
        /* the first range is finish's for sure; then the threads join in */
        int took = take_range(st);
        atomic_store(&st->finish_began, 1);
        while (took) {
            atomic_fetch_add(&jobs->finish_ranges, 1);
            took = take_range(st);
        }
    }
    for (int i = 0; i < jobs->threads; ++i)
        pthread_join(st->thread[i], NULL);
    free(st);
    if (jobs->spoil)
        fesetround(FE_UPWARD);
}

/* Each job system runs both calls of every thread scene, the caller in the
 * harshest environment (spoil_all), and must give the bits of the
 * context's own threads, and the caller's environment back. */
Test(determinism, a_job_system_gives_the_same_bits)
{
    static const test_jobs setups[] = {
        {.threads = 0, .range = 1},                  /* every task alone, the last first */
        {.threads = 0, .range = 0},                  /* [0, count) at once */
        {.threads = 0, .range = 3, .first = 1},      /* uneven */
        {.threads = 3, .range = 2},
        {.threads = 2, .range = 3, .finish_takes = 1},
        {.threads = 5, .range = 0, .first = 1, .finish_takes = 1},
        {.threads = 3, .range = 2, .spoil = 1},
        /* and buggy ones: the same bits all the same */
        {.threads = 0, .range = 2, .mistake = DROPS_EVERY_OTHER},
        {.threads = 3, .range = 1, .mistake = DROPS_EVERY_OTHER},
        {.threads = 0, .range = 1, .mistake = DROPS_ALL},
        {.threads = 2, .range = 2, .finish_takes = 1, .mistake = REPEATS},
        {.threads = 3, .range = 3, .first = 1, .mistake = STRAYS},
        {.threads = 3, .range = 2, .spoil = 1, .mistake = DROPS_EVERY_OTHER},
    };
    /* and the cpu_threads each plans for: several, more than the job
     * system's threads, fewer, one per core (0), and 1 */
    static const int cpu_threads[] = {3, 8, 2, 0, 1};
    int cores = pleat_usable_cores(); /* what cpu_threads 0 plans for */
    if (cores < 2)
        fprintf(stderr, "note: 1 usable core: cpu_threads 0 cannot be told from 1, whether "
                        "the job system is used is not checked\n");
    uint64_t rng = 31;
    for (int i = 0; i < NUM_THREAD_SCENES; ++i) {
        int kind = i % SCENE_KIND_COUNT;
        pleat_params p;
        scene s = thread_scene(i, &rng, &p);
        pleat_context *own = cpu_context(2);
        uint64_t want_c, want_p;
        run(own, &s, &p, 2, &want_c, &want_p);
        pleat_context_destroy(own);
        for (size_t k = 0; k < sizeof setups / sizeof setups[0]; ++k) {
            int planned = cpu_threads[(k + (size_t)i) % 5];
            test_jobs jobs = setups[k];
            jobs.caller = pthread_self();
            pleat_context_desc d = pleat_default_context_desc();
            d.backend = PLEAT_BACKEND_CPU;
            d.cpu_threads = planned;
            d.enqueue_tasks = test_enqueue;
            d.finish_tasks = test_finish;
            d.job_context = &jobs;
            pleat_context *ctx;
            cr_assert_eq(pleat_context_create(&d, &ctx), PLEAT_OK);
            cr_assert(strstr(pleat_context_describe(ctx), "job system"));
            uint64_t got_c, got_p;
            spoil_all();
            run(ctx, &s, &p, 2, &got_c, &got_p);
            int kept = all_spoiled();
            fp_unspoil();
            pleat_context_destroy(ctx);
            cr_assert(kept, "the caller's environment was not given back");
            cr_assert(got_c == want_c && got_p == want_p,
                      "%s %u, job system %zu, cpu_threads %d: other bits", scene_name(kind),
                      s.count, k, planned);
            if (planned == 1) /* everything on the calling thread */
                cr_assert_eq(jobs.enqueues, 0, "a job system planned for 1 thread was used");
            else if (planned > 1 || cores > 1) /* 0 on 1 core: see the warning */
                cr_assert_gt(jobs.enqueues, 0, "the job system was not used (cpu_threads %d)",
                             planned);
            cr_assert_eq(jobs.finishes, jobs.threads ? jobs.enqueues : 0);
            if (jobs.finish_takes && jobs.enqueues > 0)
                cr_assert_gt(atomic_load(&jobs.finish_ranges), 0, "finish never ran a range");
            cr_assert_eq(jobs.wrong_thread, 0, "a callback came from another thread");
            cr_assert_eq(jobs.not_default, 0, "a callback was called in another environment");
            cr_assert_eq(jobs.too_small, 0, "a stage of fewer than 2 tasks was enqueued");
            cr_assert_eq(atomic_load(&jobs.env_lost), 0,
                         "a range changed its thread's environment");
        }
        scene_free(&s);
    }
}

/* The pool itself: every task of a stage runs once, in the default
 * environment, and the calling thread is back in it after a finish that
 * left it rounding upward. */
#define POOL_TASKS 37

typedef struct task_runs {
    atomic_int runs[POOL_TASKS];
    atomic_int out_of_bounds;
    atomic_int outside; /* tasks run outside every range */
} task_runs;

static void note_task(void *arg, uint32_t task)
{
    task_runs *r = arg;
    if (!in_range)
        atomic_fetch_add(&r->outside, 1);
    if (task >= POOL_TASKS)
        atomic_fetch_add(&r->out_of_bounds, 1);
    else
        atomic_fetch_add(&r->runs[task], fegetround() == FE_TONEAREST ? 1 : 100);
}

/* Runs one stage of POOL_TASKS on a pool of `jobs`; the calling thread's
 * rounding after it into *rounding. */
static void run_pool_stage(test_jobs *jobs, task_runs *r, int *rounding)
{
    jobs->caller = pthread_self();
    pleat_pool *pool = pleat_pool_create_jobs(3, test_enqueue, test_finish, jobs);
    cr_assert(pool);
    for (int t = 0; t < POOL_TASKS; ++t)
        atomic_init(&r->runs[t], 0);
    atomic_init(&r->out_of_bounds, 0);
    atomic_init(&r->outside, 0);
    pleat_pool_run(pool, POOL_TASKS, note_task, r);
    *rounding = fegetround();
    fp_unspoil();
    pleat_pool_destroy(pool);
}

Test(determinism, a_job_system_stage_leaves_the_default_environment)
{
    test_jobs jobs = {.threads = 3, .range = 2, .spoil = 1};
    task_runs r;
    int rounding;
    run_pool_stage(&jobs, &r, &rounding);
    for (int t = 0; t < POOL_TASKS; ++t)
        cr_assert_eq(atomic_load(&r.runs[t]), 1, "task %d: %d", t, atomic_load(&r.runs[t]));
    cr_assert_eq(atomic_load(&r.outside), 0, "the ranges left tasks to pleat");
    cr_assert_eq(jobs.enqueues, 1);
    cr_assert_eq(jobs.finishes, 1);
    cr_assert_eq(rounding, FE_TONEAREST, "the stage left the calling thread's rounding changed");
}

/* Whatever a buggy job system does with the ranges (drop, repeat, stray),
 * the pool runs every task once, in bounds, in the default environment
 * (finish leaves the caller rounding upward), itself only those of dropped
 * ranges: with a faithful job system, none. */
Test(determinism, a_buggy_job_system_runs_every_task_once)
{
    for (int mistake = NO_MISTAKE; mistake < JOB_MISTAKES; ++mistake) {
        for (int threads = 0; threads <= 3; threads += 3) {
            test_jobs jobs = {.threads = threads, .range = 3, .first = 2, .spoil = 1,
                              .mistake = (job_mistake)mistake};
            task_runs r;
            int rounding;
            run_pool_stage(&jobs, &r, &rounding);
            for (int t = 0; t < POOL_TASKS; ++t)
                cr_assert_eq(atomic_load(&r.runs[t]), 1, "mistake %d, %d threads: task %d ran %d",
                             mistake, threads, t, atomic_load(&r.runs[t]));
            cr_assert_eq(atomic_load(&r.out_of_bounds), 0, "mistake %d, %d threads: a task past "
                         "the end ran", mistake, threads);
            cr_assert_eq((uint32_t)atomic_load(&r.outside), left_to_pleat(&jobs, POOL_TASKS),
                         "mistake %d, %d threads: pleat ran %d tasks itself", mistake, threads,
                         atomic_load(&r.outside));
            cr_assert_eq(rounding, FE_TONEAREST);
        }
    }
}
