/*
 * Allocation failure: every allocation pleat makes goes through
 * core/alloc.h, whose hook makes the Nth one fail (a context's worker
 * threads ask it too: a failed start must join the workers already started).
 * For every N that a call (or a context creation) makes, the call must
 * return PLEAT_ERROR_OUT_OF_MEMORY, leave the caller's arrays (and stats,
 * num_pairs, pairs) bit for bit unchanged, leak nothing (live blocks counted
 * by the hook) and leave a context that still gives the right answer. Both a
 * single failure and "every allocation from the Nth on fails" are tried, on
 * fresh contexts and on contexts whose scratch has to grow.
 */
#include "cpu/cpu.h"
#include "cpu/thread.h"
#include "core/alloc.h"
#include "hardening.h"
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum call_kind { CALL_COLLIDE, CALL_COUNT, CALL_LIST } call_kind;

typedef struct scenario {
    const char *name;
    call_kind kind;
    uint32_t n;
    int indices, rest, threads;
    float reach; /* the distance, in the cloud's distances */
} scenario;

typedef struct inputs {
    hz_scene sc;
    uint32_t *indices;
    uint32_t num_indices;
    pleat_params params;
} inputs;

static inputs make_inputs(const scenario *s, uint32_t n, uint64_t seed)
{
    inputs in = {hz_cloud(n, seed, s->rest, 1), NULL, 0, pleat_default_params()};
    in.params.distance = in.sc.distance * s->reach;
    in.params.rest_positions = in.sc.rest;
    if (s->indices) {
        /* every third particle, backwards */
        in.indices = malloc((n / 3 + 1) * sizeof *in.indices);
        cr_assert(in.indices);
        for (uint32_t i = n; i-- > 0;)
            if (i % 3 == 1)
                in.indices[in.num_indices++] = i;
        in.params.indices = in.indices;
        in.params.num_indices = in.num_indices;
    }
    return in;
}

static void free_inputs(inputs *in)
{
    hz_scene_free(&in->sc);
    free(in->indices);
}

typedef struct result {
    pleat_status status;
    float *particles;  /* COLLIDE: the particles after the call */
    pleat_stats stats;
    size_t num_pairs;
    uint32_t *pairs;   /* LIST: the list, num_pairs + 4 entries (sentinels after) */
} result;

#define SENTINEL 0x5a5a5a5au

/* Runs the scenario's call on a copy of the inputs. */
static result call(pleat_context *ctx, const scenario *s, const inputs *in, size_t capacity)
{
    result r;
    memset(&r, 0, sizeof r);
    size_t fbytes = 4 * (size_t)in->sc.count * sizeof(float);
    memset(&r.stats, 0xa5, sizeof r.stats);
    r.num_pairs = SIZE_MAX - 7;
    switch (s->kind) {
    case CALL_COLLIDE:
        r.particles = malloc(fbytes + 1);
        cr_assert(r.particles);
        memcpy(r.particles, in->sc.particles, fbytes);
        r.status = pleat_self_collide(ctx, r.particles, in->sc.count, &in->params, &r.stats);
        break;
    case CALL_COUNT:
        r.status = pleat_find_pairs(ctx, in->sc.particles, in->sc.count, &in->params, NULL, 0,
                                    &r.num_pairs);
        break;
    case CALL_LIST:
        r.pairs = malloc((2 * capacity + 8) * sizeof *r.pairs);
        cr_assert(r.pairs);
        for (size_t k = 0; k < 2 * capacity + 8; ++k)
            r.pairs[k] = SENTINEL;
        r.status = pleat_find_pairs(ctx, in->sc.particles, in->sc.count, &in->params, r.pairs,
                                    capacity, &r.num_pairs);
        break;
    }
    return r;
}

static void free_result(result *r)
{
    free(r->particles);
    free(r->pairs);
}

static void assert_same(const scenario *s, const inputs *in, const result *a, const result *b,
                        size_t capacity)
{
    cr_assert_eq(a->status, b->status);
    switch (s->kind) {
    case CALL_COLLIDE:
        cr_assert(memcmp(a->particles, b->particles, 16 * (size_t)in->sc.count) == 0,
                  "%s: same particles", s->name);
        cr_assert_eq(a->stats.pairs, b->stats.pairs);
        break;
    case CALL_COUNT:
        cr_assert_eq(a->num_pairs, b->num_pairs);
        break;
    case CALL_LIST:
        cr_assert_eq(a->num_pairs, b->num_pairs);
        cr_assert(memcmp(a->pairs, b->pairs, (2 * capacity + 8) * sizeof *a->pairs) == 0,
                  "%s: same pairs", s->name);
        break;
    }
}

/* Nothing written: what a call may write is as it was before the call. */
static void assert_untouched(const scenario *s, const inputs *in, const result *r,
                             size_t capacity)
{
    pleat_stats fresh;
    memset(&fresh, 0xa5, sizeof fresh);
    switch (s->kind) {
    case CALL_COLLIDE:
        cr_assert(memcmp(r->particles, in->sc.particles, 16 * (size_t)in->sc.count) == 0,
                  "%s: particles unchanged on OUT_OF_MEMORY", s->name);
        cr_assert(memcmp(&r->stats, &fresh, sizeof fresh) == 0, "stats untouched");
        break;
    case CALL_COUNT:
        cr_assert_eq(r->num_pairs, SIZE_MAX - 7, "num_pairs untouched");
        break;
    case CALL_LIST:
        cr_assert_eq(r->num_pairs, SIZE_MAX - 7, "num_pairs untouched");
        for (size_t k = 0; k < 2 * capacity + 8; ++k)
            cr_assert_eq(r->pairs[k], SENTINEL, "%s: pairs untouched on OUT_OF_MEMORY",
                         s->name);
        break;
    }
}

/* Runs the call on the smaller inputs, so the context's scratch must grow. */
static void warm_up(pleat_context *ctx, const scenario *s, const inputs *small)
{
    size_t cap = 0;
    if (s->kind == CALL_LIST)
        cr_assert_eq(pleat_find_pairs(ctx, small->sc.particles, small->sc.count, &small->params,
                                      NULL, 0, &cap),
                     PLEAT_OK);
    result w = call(ctx, s, small, cap);
    cr_assert_eq(w.status, PLEAT_OK);
    free_result(&w);
}

/* The exact capacity for a LIST call (0 for the others), from a context of
 * its own so that the scratch of the tested one is not grown by it. */
static size_t capacity_of(const scenario *s, const inputs *in)
{
    size_t cap = 0;
    if (s->kind != CALL_LIST)
        return 0;
    pleat_context *ctx = hz_context("", 1);
    cr_assert_eq(pleat_find_pairs(ctx, in->sc.particles, in->sc.count, &in->params, NULL, 0,
                                  &cap),
                 PLEAT_OK);
    pleat_context_destroy(ctx);
    return cap;
}

/* Every failure point of one call: on a fresh context (warm = 0), or on a
 * context that first ran the call on a quarter of the particles (warm = 1:
 * the failures then hit the growth of its scratch). Returns the number of
 * allocations the call makes. */
static uint64_t exhaust(const scenario *s, int warm)
{
    inputs in = make_inputs(s, s->n, 11);
    inputs small = make_inputs(s, s->n / 4, 12);
    const size_t capacity = capacity_of(s, &in);
    const int64_t live0 = pleat_alloc_live();
    const uint64_t failures0 = pleat_alloc_failures();

    /* the reference result and the allocation count */
    pleat_context *ctx = hz_context("", s->threads);
    if (warm)
        warm_up(ctx, s, &small);
    uint64_t before = pleat_alloc_attempts();
    result ref = call(ctx, s, &in, capacity);
    uint64_t allocations = pleat_alloc_attempts() - before;
    cr_assert_eq(ref.status, PLEAT_OK, "%s: %s", s->name, pleat_status_string(ref.status));
    /* steady state: the same call again allocates nothing */
    before = pleat_alloc_attempts();
    result again = call(ctx, s, &in, capacity);
    cr_assert_eq(pleat_alloc_attempts(), before, "%s: a repeated call allocates nothing",
                 s->name);
    assert_same(s, &in, &ref, &again, capacity);
    free_result(&again);
    pleat_context_destroy(ctx);
    cr_assert_eq(pleat_alloc_live(), live0, "%s: context destroy frees everything", s->name);
    cr_assert(allocations > 0, "%s makes no allocation to fail", s->name);

    for (uint64_t nth = 1; nth <= allocations; ++nth)
        for (int sticky = 0; sticky <= 1; ++sticky) {
            ctx = hz_context("", s->threads);
            if (warm)
                warm_up(ctx, s, &small);
            const int64_t live_ctx = pleat_alloc_live();
            uint64_t f0 = pleat_alloc_failures();
            pleat_alloc_fail_at(nth, sticky);
            result r = call(ctx, s, &in, capacity);
            pleat_alloc_fail_at(0, 0);
            cr_assert(pleat_alloc_failures() > f0, "%s: allocation %llu was made",
                      s->name, (unsigned long long)nth);
            cr_assert_eq(r.status, PLEAT_ERROR_OUT_OF_MEMORY,
                         "%s%s: allocation %llu of %llu failed%s: got %s", s->name,
                         warm ? " (warm)" : "", (unsigned long long)nth,
                         (unsigned long long)allocations, sticky ? " (and every later one)" : "",
                         pleat_status_string(r.status));
            assert_untouched(s, &in, &r, capacity);
            /* what the failed call kept belongs to the context: never less than before */
            cr_assert(pleat_alloc_live() >= live_ctx);
            free_result(&r);

            /* the context still works and gives the same answer */
            r = call(ctx, s, &in, capacity);
            assert_same(s, &in, &ref, &r, capacity);
            free_result(&r);
            pleat_context_destroy(ctx);
            cr_assert_eq(pleat_alloc_live(), live0, "%s: allocation %llu: leaked %lld blocks",
                         s->name, (unsigned long long)nth,
                         (long long)(pleat_alloc_live() - live0));
        }
    cr_assert(pleat_alloc_failures() - failures0 >= 2 * allocations);
    free_result(&ref);
    free_inputs(&in);
    free_inputs(&small);
    fprintf(stderr, "alloc: %-22s %s: %llu allocations, each made to fail (once and sticky)\n",
            s->name, warm ? "growing" : "fresh  ", (unsigned long long)allocations);
    return allocations;
}

static const scenario scenarios[] = {
    {"collide", CALL_COLLIDE, 3000, 0, 0, 1, 1.0f},
    {"collide+indices", CALL_COLLIDE, 3000, 1, 0, 1, 1.0f},
    {"collide+rest", CALL_COLLIDE, 3000, 0, 1, 1, 1.0f},
    {"collide+indices+rest", CALL_COLLIDE, 9000, 1, 1, 3, 1.0f},
    {"collide, 3 threads", CALL_COLLIDE, 20000, 0, 1, 3, 1.0f},
    /* a clump in 3 chunks (2 parts): enough crossing pairs to fold what is owed */
    {"dense collide, 2 threads", CALL_COLLIDE, 9000, 0, 0, 2, 4.0f},
    /* 3 parts, each folding what it owes into a table once; a table's
     * second growth, and the reset after a failed one, are tested on their
     * own (owed_table_grows_twice_and_a_failed_growth_is_reset) */
    {"dense collide, 3 threads", CALL_COLLIDE, 10000, 0, 0, 3, 4.0f},
    {"count", CALL_COUNT, 3000, 0, 0, 1, 1.0f},
    {"count+indices+rest", CALL_COUNT, 9000, 1, 1, 2, 1.0f},
    {"list", CALL_LIST, 3000, 0, 0, 1, 1.0f},
    {"list+indices+rest", CALL_LIST, 9000, 1, 1, 2, 1.0f},
    {"list, 3 threads", CALL_LIST, 20000, 0, 0, 3, 1.0f},
};
#define NUM_SCENARIOS (sizeof scenarios / sizeof scenarios[0])

Test(alloc, every_failure_of_a_call_on_a_fresh_context, .timeout = 600)
{
    for (size_t k = 0; k < NUM_SCENARIOS; ++k)
        exhaust(&scenarios[k], 0);
}

Test(alloc, every_failure_when_the_scratch_grows, .timeout = 600)
{
    for (size_t k = 0; k < NUM_SCENARIOS; ++k)
        exhaust(&scenarios[k], 1);
}

/* 1 thread, 4 pool threads, and 4 threads of a job system. */
Test(alloc, every_failure_of_context_creation)
{
    for (int setup = 0; setup < 3; ++setup) {
        const int64_t live0 = pleat_alloc_live();
        int threads = setup ? 4 : 1;
        pleat_context_desc d = pleat_default_context_desc();
        d.backend = PLEAT_BACKEND_CPU;
        d.cpu_threads = threads;
        if (setup == 2) {
            d.enqueue_tasks = uncalled_enqueue;
            d.finish_tasks = uncalled_finish;
        }
        pleat_context *ctx = NULL;
        uint64_t before = pleat_alloc_attempts();
        cr_assert_eq(pleat_context_create(&d, &ctx), PLEAT_OK);
        uint64_t allocations = pleat_alloc_attempts() - before;
        pleat_context_destroy(ctx);
        cr_assert_eq(pleat_alloc_live(), live0);
        cr_assert(allocations >= 2);
        for (uint64_t nth = 1; nth <= allocations; ++nth)
            for (int sticky = 0; sticky <= 1; ++sticky) {
                pleat_context *out = (pleat_context *)&before;
                pleat_alloc_fail_at(nth, sticky);
                pleat_status s = pleat_context_create(&d, &out);
                pleat_alloc_fail_at(0, 0);
                cr_assert_eq(s, PLEAT_ERROR_OUT_OF_MEMORY, "allocation %llu: %s",
                             (unsigned long long)nth, pleat_status_string(s));
                cr_assert_eq(out, (pleat_context *)&before, "*out written only on success");
                cr_assert_eq(pleat_alloc_live(), live0, "allocation %llu: leaked",
                             (unsigned long long)nth);
            }
        /* and creation works again */
        cr_assert_eq(pleat_context_create(&d, &ctx), PLEAT_OK);
        pleat_context_destroy(ctx);
        cr_assert_eq(pleat_alloc_live(), live0);
        fprintf(stderr,
                "alloc: context create, %d thread%s%s: %llu allocations, each made to fail\n",
                threads, threads == 1 ? "" : "s", setup == 2 ? " of a job system" : "",
                (unsigned long long)allocations);
    }
}

Test(alloc, hook_counts_and_fails)
{
    int64_t live0 = pleat_alloc_live();
    void *a = pleat_malloc(16), *b = pleat_calloc(2, 8);
    cr_assert(a && b);
    cr_assert_eq(pleat_alloc_live(), live0 + 2);
    pleat_alloc_fail_at(2, 0);
    void *c = pleat_malloc(1), *d = pleat_malloc(1), *e = pleat_malloc(1);
    cr_assert(c && !d && e, "only the 2nd fails");
    pleat_alloc_fail_at(1, 1);
    cr_assert(!pleat_malloc(1) && !pleat_calloc(1, 1), "sticky: every one fails");
    pleat_alloc_fail_at(0, 0);
    void *f = pleat_calloc(1, 1);
    cr_assert(f);
    pleat_free(a);
    pleat_free(b);
    pleat_free(c);
    pleat_free(e);
    pleat_free(f);
    pleat_free(NULL);
    cr_assert_eq(pleat_alloc_live(), live0);
}

/* A subset with no particle in it on a huge array reads nothing and needs
 * no scratch that grows with the array (the repeated-index bitmap is
 * count / 8 bytes): after a call on two particles, with every allocation
 * failing, both calls still succeed and write nothing. */
Test(alloc, an_empty_subset_needs_no_scratch_for_the_array)
{
    pleat_context *ctx = cpu_context(2);
    float p[8] = {1, 2, 3, 1, 9, 9, 9, 1};
    uint32_t idx = 0, pair[2] = {7, 7};
    pleat_params params = pleat_default_params();
    params.distance = 1.0f; /* a call that could collide, so none stops early */
    cr_assert_eq(pleat_self_collide(ctx, p, 2, &params, NULL), PLEAT_OK);
    params.indices = &idx;
    params.num_indices = 0;
    pleat_stats stats;
    size_t n = 5;
    pleat_alloc_fail_at(1, 1);
    pleat_status collide = pleat_self_collide(ctx, p, UINT32_MAX, &params, &stats);
    pleat_status pairs = pleat_find_pairs(ctx, p, UINT32_MAX, &params, pair, 1, &n);
    pleat_alloc_fail_at(0, 0);
    cr_assert_eq(collide, PLEAT_OK);
    cr_assert(stats.pairs == 0 && stats.tests == 0);
    cr_assert_eq(pairs, PLEAT_OK);
    cr_assert(n == 0 && pair[0] == 7 && pair[1] == 7);
    cr_assert(p[0] == 1 && p[1] == 2 && p[2] == 3 && p[3] == 1);
    pleat_context_destroy(ctx);
}

/* A call that can find nothing (distance 0, fewer than two particles,
 * nothing at all) runs its checks in a result per 4096 particles and takes
 * no scratch past that: on a fresh context, 100k particles at distance 0
 * take under 4 KiB (the keys, the sort and the sums would be about 5 MB),
 * and the checks still refuse a NaN. */
Test(alloc, a_call_that_can_find_nothing_takes_only_the_checks_scratch)
{
    enum { N = 100000 };
    float *p = malloc(16 * (size_t)N);
    cr_assert(p);
    pleat_scene_uniform_cloud(N, 1.0f, 8.0f, 5, p);
    pleat_params params = pleat_default_params(); /* distance 0 */
    const uint32_t counts[] = {0, 1, N};
    for (size_t k = 0; k < sizeof counts / sizeof *counts; ++k) {
        pleat_context *ctx = cpu_context(2);
        params.distance = counts[k] == N ? 0.0f : 1.0f;
        uint64_t before = pleat_alloc_granted();
        pleat_stats stats;
        cr_assert_eq(pleat_self_collide(ctx, p, counts[k], &params, &stats), PLEAT_OK);
        size_t n = 1;
        cr_assert_eq(pleat_find_pairs(ctx, p, counts[k], &params, NULL, 0, &n), PLEAT_OK);
        uint64_t granted = pleat_alloc_granted() - before;
        cr_assert(stats.pairs == 0 && stats.tests == 0 && n == 0);
        cr_assert(granted < 4096, "%u particles: %llu bytes of scratch", counts[k],
                  (unsigned long long)granted);
        pleat_context_destroy(ctx);
    }
    pleat_context *ctx = cpu_context(2);
    p[4 * 777 + 1] = NAN;
    cr_assert_eq(pleat_self_collide(ctx, p, N, &params, NULL), PLEAT_ERROR_NONFINITE_INPUT);
    pleat_context_destroy(ctx);
    free(p);
}

/* Large scratch is 2 MiB-aligned on Linux (so huge pages can back all of it), counts
 * and fails like any allocation, and small requests are left to malloc. */
Test(alloc, large_scratch_on_huge_page_boundaries)
{
    int64_t live0 = pleat_alloc_live();
    uint64_t granted0 = pleat_alloc_granted();
    void *big = pleat_malloc_huge(PLEAT_HUGE_FROM + 16), *small = pleat_malloc_huge(64);
    cr_assert(big && small);
#ifdef __linux__ /* elsewhere no huge-page advice, no 2 MiB alignment */
    cr_assert_eq((uintptr_t)big % PLEAT_HUGE_PAGE, 0, "large block at %p", big);
#endif
    cr_assert_eq(pleat_alloc_live(), live0 + 2);
    cr_assert_eq(pleat_alloc_granted() - granted0, PLEAT_HUGE_FROM + 16 + 64,
                 "granted counts what was asked for");
    memset(big, 0xa5, PLEAT_HUGE_FROM + 16); /* all of it is ours */
    pleat_alloc_fail_at(1, 0);
    cr_assert_null(pleat_malloc_huge(PLEAT_HUGE_FROM), "the failure hook covers large blocks");
    pleat_free(big);
    pleat_free(small);
    cr_assert_eq(pleat_alloc_live(), live0);
}

/* What a part owes later parts is bounded by particles, not pairs: a dense
 * clump split between two threads crosses millions of pairs over 3000
 * particles; it takes the scratch of one thread and 336 KiB (a queue grown
 * to 4096 entries, 112 KiB allocated on the way, and a table for the 3000
 * particles owed, grown as they come from 1024 slots to 4096, 224 KiB
 * allocated on the way; 16 bytes per crossing pair would be tens of MiB),
 * and the same bits. */
Test(alloc, owed_corrections_grow_with_particles_not_pairs)
{
    const scenario s = {"clump", CALL_COLLIDE, 6000, 0, 0, 1, 8.0f};
    inputs in = make_inputs(&s, s.n, 5);
    uint64_t granted[2];
    result r[2];
    for (int t = 0; t < 2; ++t) {
        pleat_context *ctx = hz_context("", 1 + t);
        uint64_t before = pleat_alloc_granted();
        r[t] = call(ctx, &s, &in, 0);
        granted[t] = pleat_alloc_granted() - before;
        cr_assert_eq(r[t].status, PLEAT_OK, "%d threads: %s", 1 + t,
                     pleat_status_string(r[t].status));
        pleat_context_destroy(ctx);
    }
    cr_assert(r[0].stats.pairs > 4000000, "a clump: %llu pairs",
              (unsigned long long)r[0].stats.pairs);
    assert_same(&s, &in, &r[0], &r[1], 0);
    cr_assert(granted[1] <= granted[0] + 344 * 1024,
              "2 threads took %llu bytes of scratch, 1 thread %llu",
              (unsigned long long)granted[1], (unsigned long long)granted[0]);
    free_result(&r[0]);
    free_result(&r[1]);
    free_inputs(&in);
}

/* pleat.h's status order: a call over its test limit returns
 * TOO_MANY_TESTS, also when a queue or table of owed sums could not grow
 * on the way (that OUT_OF_MEMORY comes after every other status: the limit
 * does not depend on the memory at hand). The clump on 2 threads, each call
 * on a fresh context: the sweep's growths are a call's last allocations,
 * and the last of them, and any after it, fail. */
Test(alloc, the_test_limit_comes_before_a_failed_growth)
{
    const scenario s = {"clump", CALL_COLLIDE, 6000, 0, 0, 1, 8.0f};
    inputs in = make_inputs(&s, s.n, 5);
    pleat_context *ctx = hz_context("", 2);
    const uint64_t before = pleat_alloc_attempts();
    result whole = call(ctx, &s, &in, 0);
    const uint64_t attempts = pleat_alloc_attempts() - before;
    pleat_context_destroy(ctx);
    cr_assert_eq(whole.status, PLEAT_OK);
    for (int limited = 0; limited < 2; ++limited) {
        in.params.max_tests = limited ? whole.stats.tests - 1 : 0;
        ctx = hz_context("", 2);
        pleat_alloc_fail_at(attempts, 1);
        result r = call(ctx, &s, &in, 0);
        pleat_alloc_fail_at(0, 0);
        pleat_context_destroy(ctx);
        cr_assert_eq(r.status, limited ? PLEAT_ERROR_TOO_MANY_TESTS : PLEAT_ERROR_OUT_OF_MEMORY,
                     "max_tests %llu: %s", (unsigned long long)in.params.max_tests,
                     pleat_status_string(r.status));
        cr_assert(memcmp(r.particles, in.sc.particles, 16 * (size_t)in.sc.count) == 0);
        free_result(&r);
    }
    free_result(&whole);
    free_inputs(&in);
}

/* The same bound when the run that owes is long: two sparse clouds of 100k
 * far apart on either side of a dense clump of 4000, which in key order
 * straddles the two threads' runs, so the first run's queue (up to one entry
 * per particle of the run) fills and folds again and again with entries for
 * the 2000 clump particles after it. Its table must hold those 2000 (4096
 * slots, 128 KiB), not a slot per queued entry: sized by entries it took
 * 262144 slots (8 MiB). */
Test(alloc, a_long_runs_owed_table_grows_with_the_particles_owed)
{
    enum { SPARSE = 100000, CLUMP = 4000, N = 2 * SPARSE + CLUMP };
    float *p = malloc(16 * (size_t)N);
    cr_assert(p);
    pleat_scene_uniform_cloud(SPARSE, 1.0f, 8.0f, 3, p);
    pleat_scene_uniform_cloud(SPARSE, 1.0f, 8.0f, 4, p + 4 * (size_t)SPARSE);
    uint64_t seed = 99;
    for (size_t i = 0; i < 2 * (size_t)SPARSE; ++i) /* cubes about 37 wide */
        for (int a = 0; a < 3; ++a)
            p[4 * i + a] += i < SPARSE ? -200.0f : 100.0f;
    for (size_t i = 2 * (size_t)SPARSE; i < N; ++i) {
        for (int a = 0; a < 3; ++a)
            p[4 * i + a] = 0.2f * (pleat_scene_uniform(&seed) - 0.5f);
        p[4 * i + 3] = 1.0f;
    }
    pleat_params params = pleat_default_params();
    params.distance = 1.0f;
    uint64_t granted[2], pairs[2];
    for (int t = 0; t < 2; ++t) {
        pleat_context *ctx = hz_context("", 1 + t);
        float *work = malloc(16 * (size_t)N);
        cr_assert(work);
        memcpy(work, p, 16 * (size_t)N);
        pleat_stats stats;
        uint64_t before = pleat_alloc_granted();
        cr_assert_eq(pleat_self_collide(ctx, work, N, &params, &stats), PLEAT_OK);
        granted[t] = pleat_alloc_granted() - before;
        pairs[t] = stats.pairs;
        pleat_context_destroy(ctx);
        free(work);
    }
    cr_assert(pairs[0] == pairs[1] && pairs[0] > (uint64_t)CLUMP * CLUMP / 2 - CLUMP,
              "the clump's pairs: %llu and %llu", (unsigned long long)pairs[0],
              (unsigned long long)pairs[1]);
    /* the first run's queue (16 bytes an entry, doubled up to one per
     * particle of the run: less than 48 bytes a particle allocated on the
     * way; 3.7 MB here) and 1 MiB for the second thread's sort part and
     * the table's growth (224 KiB here) */
    uint64_t allowed = 48 * ((uint64_t)N / 2) + 1024 * 1024;
    cr_assert(granted[1] <= granted[0] + allowed,
              "2 threads took %llu bytes of scratch, 1 thread %llu: %llu more than allowed",
              (unsigned long long)granted[1], (unsigned long long)granted[0],
              (unsigned long long)(granted[1] - granted[0] - allowed));
    free(p);
}

/* Owes corrections to `owed` positions of a part of 4096 particles, with
 * `later` positions after it, one correction per entry, as the sweep would,
 * summing them into want (3 per position) too. */
static void owe_corrections(pleat_part *part, uint32_t later, uint32_t entries, int64_t *want)
{
    for (uint32_t k = 0; k < entries; ++k) {
        const uint32_t b = (uint32_t)(((uint64_t)k * 7919u) % later);
        const int64_t c[3] = {(int64_t)(k % 5) - 2, (int64_t)(k % 7) - 3, (int64_t)k};
        pleat_cpu_owe(part, b, c);
        for (int a = 0; a < 3; ++a)
            want[3 * (size_t)b + a] += c[a];
    }
}

/* Adds what `part` owes into zeroed sums (part 0 of two) and checks them
 * against want. */
static void expect_settled(pleat_part *part, uint32_t later, const int64_t *want)
{
    pleat_pool *pool = pleat_pool_create(2, pleat_usable_cores());
    pleat_part parts[2] = {*part, {0}};
    pleat_frame f = {0};
    f.parts = 2;
    f.part = parts;
    f.acc_xy = calloc(2 * (size_t)later, sizeof(int64_t));
    f.acc_z = calloc(later, sizeof(int64_t));
    cr_assert(pool && f.acc_xy && f.acc_z);
    pleat_cpu_settle(&f, pool);
    for (uint32_t b = 0; b < later; ++b)
        cr_assert(f.acc_xy[2 * (size_t)b] == want[3 * (size_t)b] &&
                      f.acc_xy[2 * (size_t)b + 1] == want[3 * (size_t)b + 1] &&
                      f.acc_z[b] == want[3 * (size_t)b + 2],
                  "position %u: the sums owed to it are not what was owed", b);
    *part = parts[0];
    free(f.acc_z);
    free(f.acc_xy);
    pleat_pool_destroy(pool);
}

/* A part's table of owed sums grows more than once and keeps every sum
 * folded before (three folds of a 4096-entry queue over 12000 later
 * positions: 8192 slots, then 16384); when a growth fails the part says so
 * and keeps what it had, and the next call's reset starts it empty (a
 * left-over sum would be added to that call's particles). */
Test(alloc, owed_table_grows_twice_and_a_failed_growth_is_reset)
{
    enum { LATER = 12000, ENTRIES = 3 * 4096 + 100 };
    int64_t *want = calloc(3 * (size_t)LATER, sizeof *want);
    cr_assert(want);
    pleat_part part = {0};
    pleat_cpu_part_reset(&part, 4096, LATER);
    owe_corrections(&part, LATER, ENTRIES, want);
    cr_assert(!part.out_of_memory);
    cr_assert_eq(part.slots, 16384, "the table has %zu slots", part.slots);
    expect_settled(&part, LATER, want);

    /* a second table of 8192 slots (256 KiB) is the most the heap gives */
    pleat_cpu_part_free(&part);
    pleat_cpu_part_reset(&part, 4096, LATER);
    memset(want, 0, 3 * (size_t)LATER * sizeof *want);
    pleat_alloc_limit(8192 * sizeof(pleat_owed));
    owe_corrections(&part, LATER, ENTRIES, want);
    pleat_alloc_limit(0);
    cr_assert(part.out_of_memory && part.used > 0 && part.slots == 8192,
              "the failed growth: out of memory %d, %zu of %zu slots used", part.out_of_memory,
              part.used, part.slots);
    part.out_of_memory = 0; /* read and cleared by the sweep's caller (cpu/backend.c) */
    pleat_cpu_part_reset(&part, 4096, LATER);
    for (size_t k = 0; k < part.slots; ++k)
        cr_assert_eq(part.table[k].b, PLEAT_OWED_EMPTY, "slot %zu kept a sum", k);
    memset(want, 0, 3 * (size_t)LATER * sizeof *want);
    owe_corrections(&part, LATER, ENTRIES, want);
    cr_assert(!part.out_of_memory);
    expect_settled(&part, LATER, want);
    pleat_cpu_part_free(&part);
    free(want);
}

/* Scratch a fresh 1-thread context takes for one correcting call on a folded
 * sheet of res^2 particles (with rest positions and an index list). */
static uint64_t scratch_bytes(uint32_t res)
{
    uint32_t n = res * res;
    float *particles = malloc(16 * (size_t)n), *rest = malloc(16 * (size_t)n);
    uint32_t *indices = malloc(sizeof *indices * (size_t)n);
    cr_assert(particles && rest && indices);
    pleat_scene_folded_sheet(res, 4, 1.0f, 0.6f, particles, rest);
    for (uint32_t i = 0; i < n; ++i)
        indices[i] = n - 1 - i;
    pleat_params params = pleat_default_params();
    params.distance = 0.9f;
    params.rest_positions = rest;
    params.indices = indices;
    params.num_indices = n;
    pleat_context *ctx = hz_context("", 1);
    uint64_t before = pleat_alloc_granted();
    cr_assert_eq(pleat_self_collide(ctx, particles, n, &params, NULL), PLEAT_OK);
    uint64_t bytes = pleat_alloc_granted() - before;
    pleat_context_destroy(ctx);
    free(indices);
    free(rest);
    free(particles);
    return bytes;
}

/* Scratch per particle between two sheet sizes: what does not grow with n
 * (the histograms) cancels in the difference. */
static double scratch_per_particle(uint32_t small, uint32_t large)
{
    uint64_t growth = scratch_bytes(large) - scratch_bytes(small);
    return (double)growth / ((double)large * large - (double)small * small);
}

/* The README's memory line: at most 48 bytes of scratch per taking-part
 * particle, plus one bit per particle for the index check and the per-chunk
 * results (tens of bytes per 4096 particles); 16 more for the rest
 * positions in key order from PLEAT_SORTED_REST_FROM particles on. */
Test(alloc, scratch_per_particle)
{
    _Static_assert(360u * 360u < PLEAT_SORTED_REST_FROM, "neither size lays out the rest");
    double per_particle = scratch_per_particle(128, 360);
    cr_assert(per_particle <= 48.0 + 1.0 / 8 + 0.05, "scratch: %.3f bytes per particle",
              per_particle);
    cr_assert(per_particle >= 40.0, "scratch %.2f bytes per particle: is the count broken?",
              per_particle);
}

Test(alloc, scratch_per_particle_with_rest_in_key_order)
{
    _Static_assert(400u * 400u >= PLEAT_SORTED_REST_FROM, "both sizes lay out the rest");
    double per_particle = scratch_per_particle(400, 512);
    cr_assert(per_particle <= 64.0 + 1.0 / 8 + 0.05, "scratch: %.3f bytes per particle",
              per_particle);
    cr_assert(per_particle >= 56.0, "scratch %.2f bytes per particle: no rest layout?",
              per_particle);
}

/* A crumpled mesh for a_call_stopped_by_its_limit_grows_no_scratch, its
 * positions varied so that few coincide and most pairs have a correction:
 * shape 0, one ball smaller than the distance (one column); shape 1, a
 * small ball of 64 particles (x up to 0.95e-4) beside a large one just
 * past the distance in x, in the next column but mostly within reach, and
 * one of the small ball's particles far along z, the sweep axis then. */
static void crumple(float *particles, uint32_t count, float distance, int shape)
{
    for (uint32_t i = 0; i < count; ++i) {
        float *q = particles + 4 * (size_t)i;
        if (shape == 0)
            q[0] = (float)(i % 997) * 1e-7f;
        else
            q[0] = i < 64 ? (float)i * 1.5e-6f : 1.001f * distance + (float)(i % 97) * 1e-7f;
        q[1] = (float)(i % 991) * 1e-7f;
        q[2] = 0.0f;
    }
    if (shape == 1)
        particles[2] = 100.0f;
}

/* params.max_tests bounds what a collapsed input costs, memory included.
 * Past its limit a call stops a column's walk within 1024 steps
 * (cpu/sweep.c's CHECK_EVERY), its own column's and a neighbouring one's.
 * Walked whole, a crumpled mesh's columns would have the first block of
 * the first of 2 parts queue a correction for each particle of the later
 * part, tens of MB of tables (50 MB for shape 0 when the walk was not
 * stopped). With a limit of 1000 the call stops after a few thousand
 * tests, and the scratch that a call on the same particles laid out on a
 * line sized is enough. */
Test(alloc, a_call_stopped_by_its_limit_grows_no_scratch, .timeout = 60 * PLEAT_TEST_TIME_SCALE)
{
    enum { COUNT = 1000000 };
    const float distance = 0.01f;
    float *particles = malloc(16 * (size_t)COUNT), *before = malloc(16 * (size_t)COUNT);
    cr_assert(particles && before);
    for (uint32_t i = 0; i < COUNT; ++i) { /* 2 apart: no pair */
        float *q = particles + 4 * (size_t)i;
        q[0] = 2.0f * (float)i * distance;
        q[1] = q[2] = 0.0f;
        q[3] = 1.0f;
    }
    pleat_context *ctx = hz_context("", 2);
    pleat_params p = pleat_default_params();
    p.distance = distance;
    p.max_tests = 100 * (uint64_t)COUNT;
    cr_assert_eq(pleat_self_collide(ctx, particles, COUNT, &p, NULL), PLEAT_OK);
    p.max_tests = 1000;
    for (int shape = 0; shape < 2; ++shape) {
        crumple(particles, COUNT, distance, shape);
        memcpy(before, particles, 16 * (size_t)COUNT);
        uint64_t granted = pleat_alloc_granted();
        cr_assert_eq(pleat_self_collide(ctx, particles, COUNT, &p, NULL),
                     PLEAT_ERROR_TOO_MANY_TESTS);
        granted = pleat_alloc_granted() - granted;
        cr_assert_eq(granted, 0, "shape %d: %llu bytes of scratch for a call stopped by its limit",
                     shape, (unsigned long long)granted);
        cr_assert(memcmp(before, particles, 16 * (size_t)COUNT) == 0);
    }
    pleat_context_destroy(ctx);
    free(before);
    free(particles);
}

/* An application heap (pleat_set_allocator) for the tests. Each block
 * starts on a multiple of its alignment but never of twice that, so pleat
 * cannot lean on more alignment than it asks for; a header before it holds
 * the system's block and a check word, which free verifies. A request
 * against pleat.h's rules counts as misuse: on Linux, a block of
 * PLEAT_HUGE_FROM bytes or more is asked for on 2 MiB. refuse_from:
 * blocks of that many bytes or more are refused (0: none). */
typedef struct test_heap {
    atomic_long live, blocks, huge, misuse;
    atomic_ullong bytes;
    size_t refuse_from;
} test_heap;

#define HEAP_CHECK 0x5eedf00du

static void *heap_alloc(size_t size, size_t alignment, void *context)
{
    test_heap *h = context;
    if (size == 0 || alignment < 16 || (alignment & (alignment - 1)) != 0)
        atomic_fetch_add(&h->misuse, 1);
#ifdef __linux__
    if (size >= PLEAT_HUGE_FROM && alignment != PLEAT_HUGE_PAGE)
        atomic_fetch_add(&h->misuse, 1);
#endif
    if (h->refuse_from && size >= h->refuse_from)
        return NULL;
    unsigned char *raw = malloc(size + 2 * alignment + 32);
    if (!raw)
        return NULL;
    uintptr_t at = ((uintptr_t)raw + 32 + alignment - 1) & ~(uintptr_t)(alignment - 1);
    if (at % (2 * alignment) == 0)
        at += alignment;
    void **header = (void **)at;
    header[-1] = raw;
    header[-2] = (void *)(at ^ HEAP_CHECK);
    atomic_fetch_add(&h->live, 1);
    atomic_fetch_add(&h->blocks, 1);
    atomic_fetch_add(&h->bytes, size);
    if (alignment == PLEAT_HUGE_PAGE)
        atomic_fetch_add(&h->huge, 1);
    return (void *)at;
}

static void heap_free(void *block, void *context)
{
    test_heap *h = context;
    void **header = block;
    if (!block || header[-2] != (void *)((uintptr_t)block ^ HEAP_CHECK)) {
        atomic_fetch_add(&h->misuse, 1); /* not a block of this heap, or freed twice */
        return;
    }
    header[-2] = NULL;
    atomic_fetch_sub(&h->live, 1);
    free(header[-1]);
}

/* The cloud stretched into a rod along x, 4 times as dense, whose other
 * two edges are 2 distances long: its particles fill 2 x 2 columns, and a
 * 2-thread call's second part is owed the corrections of every pair that
 * crosses from the first, more than fit in 4 MiB of the sweep's table of
 * sums owed (cpu/settle.c; as dense as the cloud, they would fit). */
static void stretch_into_rod(hz_scene *s)
{
    float side = 0.0f;
    for (size_t i = 0; i < (size_t)s->count * 4; i += 4)
        side = s->particles[i] > side ? s->particles[i] : side;
    const float across = 2.0f * s->distance / side;
    for (size_t i = 0; i < (size_t)s->count * 4; i += 4) {
        s->particles[i] /= 4.0f * across * across;
        s->particles[i + 1] *= across;
        s->particles[i + 2] *= across;
    }
}

/* collide_hashes() of the cloud, one call, on a fresh context of `threads`. */
static void heap_run(const hz_scene *s, int threads, uint64_t *h_collide, uint64_t *h_pairs)
{
    pleat_context *ctx = hz_context("", threads);
    pleat_params p = pleat_default_params();
    p.distance = s->distance;
    p.rest_positions = s->rest;
    collide_hashes(ctx, s->particles, s->count, &p, 1, h_collide, h_pairs);
    pleat_context_destroy(ctx);
}

Test(alloc, an_application_heap_takes_every_block)
{
    /* 300k particles: sorted positions past PLEAT_HUGE_FROM, huge-page blocks */
    hz_scene s = hz_cloud(300000, 7, 1, 1), rod = hz_cloud(300000, 7, 0, 0);
    stretch_into_rod(&rod);
    uint64_t want_c, want_p, rod_c, rod_p;
    heap_run(&s, 2, &want_c, &want_p);
    heap_run(&rod, 2, &rod_c, &rod_p);

    test_heap h = {0};
    cr_assert_eq(pleat_set_allocator(heap_alloc, NULL, &h), PLEAT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(pleat_set_allocator(NULL, heap_free, &h), PLEAT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(pleat_set_allocator(heap_alloc, heap_free, &h), PLEAT_OK);
    uint64_t granted0 = pleat_alloc_granted();
    for (int threads = 1; threads <= 3; threads += 2) {
        uint64_t got_c, got_p;
        heap_run(&s, threads, &got_c, &got_p);
        cr_assert(got_c == want_c && got_p == want_p, "%d threads: other bits", threads);
    }
    /* the rod's particles before it was stretched: as many particles, so
     * as many per-particle blocks, but sums owed that fit in 4 MiB (the
     * rod's extra block is its owed-sum table, 8 MiB today) */
    hz_scene plain = hz_cloud(300000, 7, 0, 0);
    uint64_t got_c, got_p;
    long huge0 = atomic_load(&h.huge);
    heap_run(&plain, 2, &got_c, &got_p);
    long huge1 = atomic_load(&h.huge);
    heap_run(&rod, 2, &got_c, &got_p);
    cr_assert(got_c == rod_c && got_p == rod_p, "the rod: other bits");
    cr_assert_gt(atomic_load(&h.huge) - huge1, huge1 - huge0,
                 "the rod's table of sums owed did not outgrow 4 MiB");
    hz_scene_free(&plain);
    /* not while a context exists: its blocks would go to the wrong heap */
    pleat_context *ctx = hz_context("", 2);
    cr_assert_eq(pleat_set_allocator(NULL, NULL, NULL), PLEAT_ERROR_INVALID_ARGUMENT);
    pleat_context_destroy(ctx);
    cr_assert_eq(pleat_set_allocator(NULL, NULL, NULL), PLEAT_OK);
    cr_assert_gt(atomic_load(&h.blocks), 10);
    cr_assert_eq(atomic_load(&h.bytes), pleat_alloc_granted() - granted0,
                 "pleat granted bytes that the heap did not give");
    cr_assert_gt(atomic_load(&h.huge), 0, "no scratch block on a huge-page boundary");
    cr_assert_eq(atomic_load(&h.live), 0, "blocks not given back to the heap");
    cr_assert_eq(atomic_load(&h.misuse), 0,
                 "a bad request (on Linux also a block of 4 MiB or more not asked for on "
                 "2 MiB), or a block freed that the heap had not given");
    hz_scene_free(&rod);
    hz_scene_free(&s);
}

/* Makes a context and checks, before it ends (its end gives its blocks to
 * the heap in force), that `from` gave it blocks (NULL: not checked) and
 * `never` none. */
static void context_heap_is(test_heap *from, test_heap *never)
{
    long from0 = from ? atomic_load(&from->blocks) : 0, never0 = atomic_load(&never->blocks);
    pleat_context *ctx = hz_context("", 2);
    if (from)
        cr_assert_gt(atomic_load(&from->blocks), from0, "the context took no block of its heap");
    cr_assert_eq(atomic_load(&never->blocks), never0, "a block of a heap not in force");
    pleat_context_destroy(ctx);
}

/* A refused heap leaves no half of itself behind: an alloc paired with
 * another heap's free would hand its blocks to the wrong one. */
Test(alloc, a_half_heap_changes_nothing)
{
    test_heap h = {0}, in_force = {0};
    cr_assert_eq(pleat_set_allocator(heap_alloc, NULL, &h), PLEAT_ERROR_INVALID_ARGUMENT);
    context_heap_is(NULL, &h);
    cr_assert_eq(pleat_set_allocator(NULL, heap_free, &h), PLEAT_ERROR_INVALID_ARGUMENT);
    context_heap_is(NULL, &h);
    cr_assert_eq(atomic_load(&h.misuse), 0, "the C library's blocks went to the refused heap");
    /* and with an application heap in force, that one stays */
    cr_assert_eq(pleat_set_allocator(heap_alloc, heap_free, &in_force), PLEAT_OK);
    cr_assert_eq(pleat_set_allocator(heap_alloc, NULL, &h), PLEAT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(pleat_set_allocator(NULL, heap_free, &h), PLEAT_ERROR_INVALID_ARGUMENT);
    context_heap_is(&in_force, &h);
    cr_assert_eq(pleat_set_allocator(NULL, NULL, NULL), PLEAT_OK);
    cr_assert_eq(atomic_load(&in_force.live), 0);
    cr_assert_eq(atomic_load(&in_force.misuse) + atomic_load(&h.misuse), 0);
}

/* Not while a context exists, installing a heap no more than resetting:
 * the live context's blocks would be freed into the new one. */
Test(alloc, no_new_heap_while_a_context_exists)
{
    test_heap old = {0}, other = {0};
    cr_assert_eq(pleat_set_allocator(heap_alloc, heap_free, &old), PLEAT_OK);
    pleat_context *ctx = hz_context("", 2);
    cr_assert_eq(pleat_set_allocator(heap_alloc, heap_free, &other), PLEAT_ERROR_INVALID_ARGUMENT);
    pleat_context_destroy(ctx);
    cr_assert_eq(atomic_load(&old.live), 0, "the live context's blocks left its heap");
    context_heap_is(&old, &other); /* the refused heap never came into force */
    cr_assert_eq(pleat_set_allocator(NULL, NULL, NULL), PLEAT_OK);
    /* from the C library's heap, with a context alive, to an application's */
    ctx = hz_context("", 2);
    cr_assert_eq(pleat_set_allocator(heap_alloc, heap_free, &other), PLEAT_ERROR_INVALID_ARGUMENT);
    pleat_context_destroy(ctx);
    context_heap_is(NULL, &other);
    cr_assert_eq(atomic_load(&old.live), 0);
    cr_assert_eq(atomic_load(&old.misuse) + atomic_load(&other.misuse), 0);
}

/* A context that could not be made is not counted as alive: the heap can
 * change after it. */
static void creation_fails(test_heap *h)
{
    pleat_context_desc d = pleat_default_context_desc();
    d.backend = PLEAT_BACKEND_CPU;
    d.cpu_threads = 2;
    pleat_context *ctx = NULL;
    cr_assert_eq(pleat_context_create(&d, &ctx), PLEAT_ERROR_OUT_OF_MEMORY);
    cr_assert_null(ctx);
    cr_assert_eq(pleat_set_allocator(NULL, NULL, NULL), PLEAT_OK, "a failed creation still counts");
    cr_assert_eq(pleat_set_allocator(heap_alloc, heap_free, h), PLEAT_OK);
}

Test(alloc, an_application_heap_that_says_no)
{
    hz_scene s = hz_cloud(300000, 8, 1, 0);
    test_heap h = {0};
    cr_assert_eq(pleat_set_allocator(heap_alloc, heap_free, &h), PLEAT_OK);
    h.refuse_from = 1; /* the context's first block */
    creation_fails(&h);
    h.refuse_from = 0;
    pleat_alloc_fail_at(2, 0); /* a later block of the creation */
    creation_fails(&h);
    pleat_alloc_fail_at(0, 0);
    h.refuse_from = PLEAT_HUGE_FROM; /* the context, not its scratch */
    pleat_context *ctx = hz_context("", 2);
    pleat_params p = pleat_default_params();
    p.distance = s.distance;
    float *work = copy_floats(s.particles, (size_t)s.count * 4);
    pleat_status st = pleat_self_collide(ctx, work, s.count, &p, NULL);
    int same = memcmp(work, s.particles, (size_t)s.count * 4 * sizeof(float)) == 0;
    pleat_context_destroy(ctx);
    cr_assert_eq(pleat_set_allocator(NULL, NULL, NULL), PLEAT_OK);
    cr_assert_eq(st, PLEAT_ERROR_OUT_OF_MEMORY);
    cr_assert(same, "the particles changed");
    cr_assert_eq(atomic_load(&h.live), 0);
    cr_assert_eq(atomic_load(&h.misuse), 0);
    free(work);
    hz_scene_free(&s);
}
