/* Version, status strings, defaults and context creation. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "cpu/quota.h"
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Test(api, version)
{
    char expect[32];
    snprintf(expect, sizeof expect, "%d.%d.%d", PLEAT_VERSION_MAJOR, PLEAT_VERSION_MINOR,
             PLEAT_VERSION_PATCH);
    cr_assert_str_eq(pleat_version(), expect);
    cr_assert_str_eq(PLEAT_VERSION_STRING, expect);
}

Test(api, status_strings_never_empty_and_distinct)
{
    const char *seen[PLEAT_ERROR_TOO_MANY_TESTS + 1];
    for (int s = PLEAT_OK; s <= PLEAT_ERROR_TOO_MANY_TESTS; ++s) {
        seen[s] = pleat_status_string((pleat_status)s);
        cr_assert(seen[s] && *seen[s]);
        for (int t = 0; t < s; ++t)
            cr_assert_str_neq(seen[s], seen[t]);
    }
    const char *unknown = pleat_status_string((pleat_status)1234);
    cr_assert(unknown && *unknown);
    unknown = pleat_status_string((pleat_status)-1);
    cr_assert(unknown && *unknown);
}

/* The header's words exactly, not another status's: a caller's log must not
 * turn a corrupt status into a plausible one. */
Test(api, unknown_status_string)
{
    const int unknown[] = {PLEAT_ERROR_TOO_MANY_TESTS + 1, 999, -1};
    for (size_t k = 0; k < sizeof unknown / sizeof unknown[0]; ++k)
        cr_assert_str_eq(pleat_status_string((pleat_status)unknown[k]), "unknown pleat status",
                         "status %d", unknown[k]);
}

Test(api, defaults)
{
    pleat_context_desc d = pleat_default_context_desc();
    cr_assert(d.backend == PLEAT_BACKEND_AUTO && d.cpu_threads == 0 && d.cuda_device == 0);
    cr_assert_eq(d.profile, 0, "profiling costs a clock read per stage: off by default");
    /* the context's own threads: no job system */
    cr_assert(!d.enqueue_tasks && !d.finish_tasks && !d.job_context);
    pleat_params p = pleat_default_params();
    cr_assert(p.distance == 0.0f && p.stiffness == 1.0f && !p.indices && p.num_indices == 0 &&
              !p.rest_positions);
    cr_assert_eq(p.max_tests, 0, "no test limit by default: a limit can fail a call");
}

Test(api, context_create_and_describe)
{
    pleat_context *ctx = NULL;
    cr_assert_eq(pleat_context_create(NULL, &ctx), PLEAT_OK);
    /* AUTO: the GPU where there is one, else the CPU */
    const char *want = pleat_context_backend(ctx) == PLEAT_BACKEND_CUDA ? "cuda " : "cpu ";
    cr_assert(pleat_context_backend(ctx) != PLEAT_BACKEND_AUTO);
    cr_assert(strncmp(pleat_context_describe(ctx), want, strlen(want)) == 0, "%s",
              pleat_context_describe(ctx));
    pleat_context_destroy(ctx);

    ctx = cpu_context(3);
    cr_assert(strstr(pleat_context_describe(ctx), "3 threads"), "%s", pleat_context_describe(ctx));
    pleat_context_destroy(ctx);
    ctx = cpu_context(1);
    cr_assert(strstr(pleat_context_describe(ctx), "1 thread"));
    pleat_context_destroy(ctx);

    cr_assert_eq(pleat_context_backend(NULL), PLEAT_BACKEND_AUTO);
    cr_assert_str_eq(pleat_context_describe(NULL), "");
    pleat_context_destroy(NULL);
}

Test(api, context_create_errors)
{
    pleat_context *ctx = (pleat_context *)0x1;
    pleat_context_desc d = pleat_default_context_desc();
    cr_assert_eq(pleat_context_create(&d, NULL), PLEAT_ERROR_INVALID_ARGUMENT);
    d.cpu_threads = -1;
    cr_assert_eq(pleat_context_create(&d, &ctx), PLEAT_ERROR_INVALID_ARGUMENT);
    d.cpu_threads = PLEAT_MAX_CPU_THREADS + 1;
    cr_assert_eq(pleat_context_create(&d, &ctx), PLEAT_ERROR_INVALID_ARGUMENT);
    d = pleat_default_context_desc();
    d.cuda_device = -1;
    cr_assert_eq(pleat_context_create(&d, &ctx), PLEAT_ERROR_INVALID_ARGUMENT);
    d = pleat_default_context_desc();
    d.backend = (pleat_backend)7;
    cr_assert_eq(pleat_context_create(&d, &ctx), PLEAT_ERROR_INVALID_ARGUMENT);
    d = pleat_default_context_desc(); /* a job system needs both callbacks */
    d.enqueue_tasks = uncalled_enqueue;
    cr_assert_eq(pleat_context_create(&d, &ctx), PLEAT_ERROR_INVALID_ARGUMENT);
    d = pleat_default_context_desc();
    d.finish_tasks = uncalled_finish;
    cr_assert_eq(pleat_context_create(&d, &ctx), PLEAT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(ctx, (pleat_context *)0x1, "*out is written only on success");
}

/* Creation fails with `want` and leaves *out as it was. */
static void assert_create_fails(const pleat_context_desc *d, pleat_status want)
{
    pleat_context *const sentinel = (pleat_context *)&want;
    pleat_context *ctx = sentinel;
    pleat_status s = pleat_context_create(d, &ctx);
    cr_assert_eq(s, want, "%s", pleat_status_string(s));
    cr_assert_eq(ctx, sentinel, "*out is written only on success (%s)", pleat_status_string(s));
}

/* Failures found after the arguments (the backend's own) keep *out too. */
Test(api, context_create_failures_leave_out)
{
    pleat_context_desc d = pleat_default_context_desc();
    d.backend = PLEAT_BACKEND_CPU;
    setenv("PLEAT_CPU_ISA", "no-such-isa", 1);
    assert_create_fails(&d, PLEAT_ERROR_BACKEND_UNAVAILABLE);
    unsetenv("PLEAT_CPU_ISA");
    d.cpu_threads = -1;
    assert_create_fails(&d, PLEAT_ERROR_INVALID_ARGUMENT);
}

/* The thread count in "cpu <isa>, <n> thread(s)[ of the application's job system]". */
static int described_threads(const pleat_context *ctx)
{
    const char *text = pleat_context_describe(ctx);
    const char *comma = strstr(text, ", ");
    int n = -1;
    cr_assert(comma && sscanf(comma, ", %d thread", &n) == 1, "%s", text);
    return n;
}

/* cpu_threads 0, with the context's own threads and a job system's. */
static int default_threads(int job_system)
{
    pleat_context_desc d = pleat_default_context_desc();
    d.backend = PLEAT_BACKEND_CPU;
    if (job_system) { /* creation plans for them but calls neither */
        d.enqueue_tasks = uncalled_enqueue;
        d.finish_tasks = uncalled_finish;
    }
    pleat_context *ctx = NULL;
    cr_assert_eq(pleat_context_create(&d, &ctx), PLEAT_OK);
    int n = described_threads(ctx);
    pleat_context_destroy(ctx);
    return n;
}

/* One thread per core, within the cgroup's CPU quota (test_cores checks
 * the quota), up to the most a context takes. */
static int threads_for(int cores)
{
    int quota = pleat_cpu_quota_cores("");
    cores = quota && quota < cores ? quota : cores;
    return cores < PLEAT_MAX_CPU_THREADS ? cores : PLEAT_MAX_CPU_THREADS;
}

/* The cores of the thread's affinity, not 1 and not every core of the
 * machine: a process pinned to a few must not start a thread per core. */
Test(api, default_threads_follow_the_affinity)
{
    cpu_set_t set;
    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    int cores = CPU_COUNT(&set);
    for (int jobs = 0; jobs <= 1; ++jobs)
        cr_assert_eq(default_threads(jobs), threads_for(cores), "%d cores%s", cores,
                     jobs ? ", a job system" : "");
    if (cores < 2)
        return;
    /* one core fewer (this test runs in a process of its own) */
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) {
            CPU_CLR(c, &set);
            break;
        }
    cr_assert_eq(sched_setaffinity(0, sizeof set, &set), 0);
    cr_assert_eq(default_threads(0), threads_for(cores - 1), "%d cores", cores - 1);
}

/* CUDA on a build or machine without it is unavailable, and never a CPU
 * context in disguise. */
Test(api, cuda_backend_is_cuda_or_unavailable)
{
    pleat_context_desc d = pleat_default_context_desc();
    d.backend = PLEAT_BACKEND_CUDA;
    pleat_context *ctx = NULL;
    pleat_status s = pleat_context_create(&d, &ctx);
    if (s == PLEAT_OK) {
        cr_assert_eq(pleat_context_backend(ctx), PLEAT_BACKEND_CUDA);
        pleat_context_destroy(ctx);
        return;
    }
    cr_assert_eq(s, PLEAT_ERROR_BACKEND_UNAVAILABLE, "%s", pleat_status_string(s));
    cr_assert_null(ctx);
}

Test(api, device_calls_need_a_cuda_context)
{
    pleat_context *ctx = cpu_context(1);
    float p[8] = {0, 0, 0, 1, 0.5f, 0, 0, 1};
    pleat_params params = pleat_default_params();
    params.distance = 1.0f;
    cr_assert_eq(pleat_self_collide_device(ctx, p, 2, &params, NULL, NULL),
                 PLEAT_ERROR_BACKEND_UNAVAILABLE);
    cr_assert_eq(pleat_context_device_status(ctx), PLEAT_ERROR_BACKEND_UNAVAILABLE);
    cr_assert_eq(pleat_context_device_status(NULL), PLEAT_ERROR_INVALID_ARGUMENT);
    uint32_t idx[3] = {0, 1, 0}; /* more indices than particles: a host-side check */
    params.indices = idx;
    params.num_indices = 3;
    cr_assert_eq(pleat_self_collide_device(ctx, p, 2, &params, NULL, NULL),
                 PLEAT_ERROR_BAD_INDEX);
    params.distance = -1.0f; /* params are checked first, on any backend */
    cr_assert_eq(pleat_self_collide_device(ctx, p, 2, &params, NULL, NULL),
                 PLEAT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(p[4], 0.5f);
    pleat_context_destroy(ctx);
}

Test(api, forced_isa)
{
    pleat_context *ctx = NULL;
    setenv("PLEAT_CPU_ISA", "no-such-isa", 1);
    cr_assert_eq(pleat_context_create(NULL, &ctx), PLEAT_ERROR_BACKEND_UNAVAILABLE);
    setenv("PLEAT_CPU_ISA", "scalar", 1);
    cr_assert_eq(pleat_context_create(NULL, &ctx), PLEAT_OK);
    cr_assert(strstr(pleat_context_describe(ctx), "scalar"));
    pleat_context_destroy(ctx);
    /* set but empty: the default choice, as when unset */
    unsetenv("PLEAT_CPU_ISA");
    cr_assert_eq(pleat_context_create(NULL, &ctx), PLEAT_OK);
    char unset[256];
    snprintf(unset, sizeof unset, "%s", pleat_context_describe(ctx));
    pleat_context_destroy(ctx);
    setenv("PLEAT_CPU_ISA", "", 1);
    cr_assert_eq(pleat_context_create(NULL, &ctx), PLEAT_OK);
    cr_assert_str_eq(pleat_context_describe(ctx), unset);
    pleat_context_destroy(ctx);
    unsetenv("PLEAT_CPU_ISA");
}

/* Two contexts, each with workers, alive at once (their calls run one
 * after the other here; test_concurrency runs them at the same time): each
 * pushes the pair apart to the distance, the same bits. */
Test(api, two_contexts_with_workers_alive_at_once)
{
    pleat_context *a = cpu_context(2), *b = cpu_context(3);
    float pts[] = {0, 0, 0, 1, 0.5f, 0, 0, 1};
    float pts2[8];
    memcpy(pts2, pts, sizeof pts);
    pleat_params p = pleat_default_params();
    p.distance = 1.0f;
    cr_assert_eq(pleat_self_collide(a, pts, 2, &p, NULL), PLEAT_OK);
    cr_assert_eq(pleat_self_collide(b, pts2, 2, &p, NULL), PLEAT_OK);
    /* each moves by (1 - 0.5) / 2 (FLT_EPSILON in the weights: 1e-7 short) */
    cr_assert(fabsf(pts[0] + 0.25f) < 1e-6f && fabsf(pts[4] - 0.75f) < 1e-6f,
              "%g %g", pts[0], pts[4]);
    cr_assert(memcmp(pts, pts2, sizeof pts) == 0);
    pleat_context_destroy(a);
    pleat_context_destroy(b);
}

/* A fresh CPU context that times its calls. */
static pleat_context *profiled_context(void)
{
    pleat_context_desc d = pleat_default_context_desc();
    d.backend = PLEAT_BACKEND_CPU;
    d.profile = 1;
    pleat_context *ctx = NULL;
    cr_assert_eq(pleat_context_create(&d, &ctx), PLEAT_OK);
    return ctx;
}

static void assert_every_stage_timed(const pleat_timings *t)
{
    cr_assert(t->bounds_keys_ms > 0 && t->sort_ms > 0 && t->sweep_ms > 0 && t->apply_ms > 0,
              "%g %g %g %g", t->bounds_keys_ms, t->sort_ms, t->sweep_ms, t->apply_ms);
}

Test(api, stage_timings)
{
    pleat_timings t;
    cr_assert_eq(pleat_context_timings(NULL, &t), PLEAT_ERROR_INVALID_ARGUMENT);
    pleat_context *plain = cpu_context(1);
    cr_assert_eq(pleat_context_timings(plain, NULL), PLEAT_ERROR_INVALID_ARGUMENT);

    pleat_context *prof = profiled_context();
    enum { N = 20000 };
    float *pts = malloc(N * 4 * sizeof *pts);
    cr_assert(pts);
    for (int i = 0; i < N; ++i) {
        pts[4 * i] = (float)(i % 200);
        pts[4 * i + 1] = (float)(i / 200);
        pts[4 * i + 2] = 0.0f;
        pts[4 * i + 3] = 1.0f;
    }
    pleat_params p = pleat_default_params();
    p.distance = 1.0f;
    cr_assert_eq(pleat_self_collide(plain, pts, N, &p, NULL), PLEAT_OK);
    cr_assert_eq(pleat_context_timings(plain, &t), PLEAT_OK);
    cr_assert(t.bounds_keys_ms == 0 && t.sort_ms == 0 && t.sweep_ms == 0 && t.apply_ms == 0);
    cr_assert_eq(pleat_self_collide(prof, pts, N, &p, NULL), PLEAT_OK);
    cr_assert_eq(pleat_context_timings(prof, &t), PLEAT_OK);
    assert_every_stage_timed(&t);
    /* a call that can find nothing still checks every particle: its time */
    p.distance = 0.0f;
    cr_assert_eq(pleat_self_collide(prof, pts, N, &p, NULL), PLEAT_OK);
    cr_assert_eq(pleat_context_timings(prof, &t), PLEAT_OK);
    cr_assert(t.bounds_keys_ms > 0 && t.sort_ms == 0 && t.sweep_ms == 0 && t.apply_ms == 0,
              "%g %g %g %g", t.bounds_keys_ms, t.sort_ms, t.sweep_ms, t.apply_ms);
    p.distance = 1.0f;
    /* calls that fail, after running their stages or not, keep the last
     * successful call's timings */
    size_t total = 0;
    uint32_t one[2];
    cr_assert_eq(pleat_find_pairs(prof, pts, N, &p, NULL, 0, &total), PLEAT_OK);
    cr_assert_eq(pleat_context_timings(prof, &t), PLEAT_OK);
    for (int k = 0; k < 2; ++k) {
        size_t num = 0;
        cr_assert_eq(pleat_find_pairs(prof, pts, N, &p, k ? one : NULL, 1, &num),
                     PLEAT_ERROR_CAPACITY);
        cr_assert_eq(num, total);
        pleat_timings after;
        cr_assert_eq(pleat_context_timings(prof, &after), PLEAT_OK);
        cr_assert(memcmp(&after, &t, sizeof t) == 0, "timings of a failed call (%s)",
                  k ? "array too small" : "no array");
    }
    free(pts);
    pleat_context_destroy(prof);
    pleat_context_destroy(plain);
}

/* find_pairs is timed as self_collide is, its apply stage being the writing
 * of the list: on a fresh context, so no earlier call's times can pass. */
Test(api, stage_timings_of_a_pair_list)
{
    pleat_context *prof = profiled_context();
    scene s = scene_make(SCENE_CLOUD, 4000, 0, 17);
    pleat_params p = pleat_default_params();
    p.distance = s.distance;
    size_t num = 0;
    uint32_t *pairs = pleat_pairs(prof, s.particles, s.count, &p, &num); /* count, then list */
    cr_assert_gt(num, 1000, "a list long enough to take time to write");
    pleat_timings t;
    cr_assert_eq(pleat_context_timings(prof, &t), PLEAT_OK);
    assert_every_stage_timed(&t);
    free(pairs);
    scene_free(&s);
    pleat_context_destroy(prof);
}
