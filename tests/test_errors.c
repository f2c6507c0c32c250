/* Every bad input gets its status and leaves the caller's arrays bit for bit
 * unchanged, through both entry points. */
#include "support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <float.h>
#include <math.h>
#include <string.h>

#define N 6

typedef struct fixture {
    float particles[4 * N];
    float rest[4 * N];
    uint32_t indices[N];
    uint32_t pairs[2 * 64];
} fixture;

static void fill(fixture *f)
{
    for (int i = 0; i < N; ++i) {
        float *p = f->particles + 4 * i;
        p[0] = 0.1f * (float)i; /* all within 1.0 of each other */
        p[1] = 0.05f * (float)i;
        p[2] = 0.0f;
        p[3] = 1.0f;
        memcpy(f->rest + 4 * i, p, 4 * sizeof(float));
        f->rest[4 * i] *= 20.0f; /* apart at rest, so pairs collide */
        f->indices[i] = (uint32_t)(N - 1 - i);
    }
    memset(f->pairs, 0xab, sizeof f->pairs);
}

/* Runs both entry points (pairs into pairs[capacity]) and checks the
 * status, and that the bytes of `all`, which hold every array of the call,
 * stats and num_pairs are not written. */
static void expect_status(pleat_status want, float *particles, uint32_t count,
                          const pleat_params *p, uint32_t *pairs, size_t capacity, void *all,
                          size_t all_bytes, const char *what)
{
    pleat_context *ctx = cpu_context(2);
    void *before = malloc(all_bytes);
    cr_assert(before);
    memcpy(before, all, all_bytes);
    pleat_stats stats = {12345, 678};
    pleat_status s = pleat_self_collide(ctx, particles, count, p, &stats);
    cr_assert_eq(s, want, "%s: self_collide gave '%s', want '%s'", what, pleat_status_string(s),
                 pleat_status_string(want));
    cr_assert(memcmp(before, all, all_bytes) == 0, "%s: self_collide changed the arrays", what);
    cr_assert(stats.pairs == 12345 && stats.tests == 678, "%s: stats written on error", what);

    size_t num = 777;
    s = pleat_find_pairs(ctx, particles, count, p, pairs, capacity, &num);
    cr_assert_eq(s, want, "%s: find_pairs gave '%s'", what, pleat_status_string(s));
    cr_assert(memcmp(before, all, all_bytes) == 0, "%s: find_pairs changed the arrays", what);
    cr_assert_eq(num, 777, "%s: num_pairs written on error", what);
    free(before);
    pleat_context_destroy(ctx);
}

/* expect_status() on the fixture's arrays. */
static void expect(pleat_status want, fixture *f, uint32_t count, const pleat_params *p,
                   const char *what)
{
    expect_status(want, f->particles, count, p, f->pairs, 64, f, sizeof *f, what);
}

static pleat_params good_params(fixture *f)
{
    pleat_params p = pleat_default_params();
    p.distance = 1.0f;
    p.rest_positions = f->rest;
    p.indices = f->indices;
    p.num_indices = N;
    return p;
}

Test(errors, baseline_is_valid_and_moves)
{
    fixture f;
    fill(&f);
    pleat_params p = good_params(&f);
    pleat_context *ctx = cpu_context(1);
    fixture before = f;
    pleat_stats st;
    cr_assert_eq(pleat_self_collide(ctx, f.particles, N, &p, &st), PLEAT_OK);
    cr_assert_gt(st.pairs, 0);
    cr_assert(memcmp(before.particles, f.particles, sizeof f.particles) != 0);
    pleat_context_destroy(ctx);
}

Test(errors, null_pointers)
{
    fixture f;
    fill(&f);
    pleat_params p = good_params(&f);
    pleat_context *ctx = cpu_context(1);
    size_t num;
    cr_assert_eq(pleat_self_collide(NULL, f.particles, N, &p, NULL), PLEAT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(pleat_self_collide(ctx, f.particles, N, NULL, NULL), PLEAT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(pleat_self_collide(ctx, NULL, N, &p, NULL), PLEAT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(pleat_find_pairs(NULL, f.particles, N, &p, NULL, 0, &num),
                 PLEAT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(pleat_find_pairs(ctx, NULL, N, &p, NULL, 0, &num), PLEAT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(pleat_find_pairs(ctx, f.particles, N, &p, NULL, 0, NULL),
                 PLEAT_ERROR_INVALID_ARGUMENT);
    /* count 0 needs no particles */
    pleat_params plain = pleat_default_params();
    plain.distance = 1.0f;
    cr_assert_eq(pleat_self_collide(ctx, NULL, 0, &plain, NULL), PLEAT_OK);
    cr_assert_eq(pleat_find_pairs(ctx, NULL, 0, &plain, NULL, 0, &num), PLEAT_OK);
    cr_assert_eq(num, 0);
    pleat_context_destroy(ctx);
}

Test(errors, bad_distance)
{
    /* square overflows (1e20) or is subnormal (1e-20: pairs far apart would
     * round onto it) */
    const float bad[] = {-1.0f, -0.0001f, NAN, INFINITY, -INFINITY, 1e20f, FLT_MAX, 1e-20f,
                         FLT_MIN, 0x1p-149f};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
        fixture f;
        fill(&f);
        pleat_params p = good_params(&f);
        p.distance = bad[k];
        char what[64];
        snprintf(what, sizeof what, "distance %g", bad[k]);
        expect(PLEAT_ERROR_INVALID_ARGUMENT, &f, N, &p, what);
    }
}

Test(errors, bad_stiffness)
{
    const float bad[] = {-0.001f, 1.0001f, NAN, INFINITY, -INFINITY};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
        fixture f;
        fill(&f);
        pleat_params p = good_params(&f);
        p.stiffness = bad[k];
        expect(PLEAT_ERROR_INVALID_ARGUMENT, &f, N, &p, "stiffness");
    }
}

Test(errors, nonfinite_particle_any_component)
{
    const float bad[] = {NAN, INFINITY, -INFINITY};
    for (int c = 0; c < 4; ++c)
        for (size_t k = 0; k < 3; ++k) {
            fixture f;
            fill(&f);
            f.particles[4 * 3 + c] = bad[k];
            pleat_params p = good_params(&f);
            char what[64];
            snprintf(what, sizeof what, "particle component %d = %g", c, bad[k]);
            expect(PLEAT_ERROR_NONFINITE_INPUT, &f, N, &p, what);
        }
}

/* A line of n particles 0.5 apart, 1 apart at rest: with a distance of
 * 0.6 every neighbour pair collides (n - 1 pairs), so a call that wrote
 * despite an error would show. */
static void fill_line(float *particles, float *rest, uint32_t n)
{
    for (uint32_t i = 0; i < n; ++i) {
        float *q = particles + 4 * (size_t)i, *r = rest + 4 * (size_t)i;
        q[0] = 0.5f * (float)i;
        q[1] = q[2] = 0.0f;
        q[3] = 1.0f;
        r[0] = (float)i;
        r[1] = r[2] = r[3] = 0.0f;
    }
}

/* The valid twin of a call on a fill_line() line: on a copy, every
 * neighbour pair collides and the particles move. */
static void expect_line_moves(const float *particles, uint32_t n, const pleat_params *p)
{
    const size_t bytes = 16 * (size_t)n;
    float *twin = malloc(bytes);
    cr_assert(twin);
    memcpy(twin, particles, bytes);
    pleat_context *ctx = cpu_context(2);
    pleat_stats st;
    cr_assert_eq(pleat_self_collide(ctx, twin, n, p, &st), PLEAT_OK);
    const int moved = memcmp(twin, particles, bytes) != 0;
    cr_assert(st.pairs == n - 1 && moved, "the valid line (indices %d): %llu pairs, moved %d",
              p->indices != NULL, (unsigned long long)st.pairs, moved);
    pleat_context_destroy(ctx);
    free(twin);
}

/* The checks see every lane: a bad value in a full vector, in the partial
 * last one of a chunk or of the call, at a chunk's edge, read in order or
 * through an index list (a reversed one), is found, and nothing is
 * written, on a line whose valid twin moves. 4113 particles: one full
 * chunk of 4096, then one full AVX-512 vector (two AVX2 ones) and one lane;
 * the positions take each variant's first and last lanes. */
Test(errors, bad_values_in_every_lane_position)
{
    enum { BIG = 4096 + 17 };
    const uint32_t at[] = {0, 3, 4, 5, 7, 8, 15, 16, 4095, 4096, 4103, 4104, 4111, 4112};
    float *particles = malloc(16 * (size_t)BIG), *rest = malloc(16 * (size_t)BIG);
    float *before = malloc(16 * (size_t)BIG);
    uint32_t *reversed = malloc(sizeof *reversed * BIG);
    cr_assert(particles && rest && before && reversed);
    for (uint32_t i = 0; i < BIG; ++i)
        reversed[i] = BIG - 1 - i;
    pleat_context *ctx = cpu_context(2);
    for (int use_indices = 0; use_indices < 2; ++use_indices) {
        pleat_params p = pleat_default_params();
        p.distance = 0.6f;
        p.rest_positions = rest;
        p.indices = use_indices ? reversed : NULL;
        p.num_indices = use_indices ? BIG : 0;
        fill_line(particles, rest, BIG);
        expect_line_moves(particles, BIG, &p);
        for (size_t k = 0; k < sizeof at / sizeof at[0]; ++k)
            for (int kind = 0; kind < 4; ++kind) {
                fill_line(particles, rest, BIG);
                uint32_t i = at[k];
                pleat_status want = PLEAT_ERROR_NONFINITE_INPUT;
                if (kind == 0)
                    particles[4 * (size_t)i + (k % 4)] = NAN; /* each component in turn */
                else if (kind == 1)
                    particles[4 * (size_t)i + (k % 3)] = -INFINITY;
                else if (kind == 2)
                    rest[4 * (size_t)i + (k % 3)] = INFINITY;
                else {
                    particles[4 * (size_t)i + 3] = -1.0f;
                    want = PLEAT_ERROR_INVALID_ARGUMENT;
                }
                memcpy(before, particles, 16 * (size_t)BIG);
                pleat_status s = pleat_self_collide(ctx, particles, BIG, &p, NULL);
                cr_assert_eq(s, want, "kind %d at %u (indices %d): '%s'", kind, i, use_indices,
                             pleat_status_string(s));
                cr_assert(memcmp(before, particles, 16 * (size_t)BIG) == 0,
                          "kind %d at %u: the particles changed", kind, i);
                size_t num = 0;
                s = pleat_find_pairs(ctx, particles, BIG, &p, NULL, 0, &num);
                cr_assert_eq(s, want, "find_pairs, kind %d at %u: '%s'", kind, i,
                             pleat_status_string(s));
            }
    }
    pleat_context_destroy(ctx);
    free(reversed);
    free(before);
    free(rest);
    free(particles);
}

Test(errors, nonfinite_rest_position)
{
    for (int c = 0; c < 3; ++c) {
        fixture f;
        fill(&f);
        f.rest[4 * 2 + c] = NAN;
        pleat_params p = good_params(&f);
        expect(PLEAT_ERROR_NONFINITE_INPUT, &f, N, &p, "rest NaN");
    }
    /* the rest w is ignored */
    fixture f;
    fill(&f);
    f.rest[4 * 2 + 3] = NAN;
    pleat_params p = good_params(&f);
    pleat_context *ctx = cpu_context(1);
    cr_assert_eq(pleat_self_collide(ctx, f.particles, N, &p, NULL), PLEAT_OK);
    pleat_context_destroy(ctx);
}

Test(errors, nonfinite_outside_subset_is_ignored)
{
    fixture f;
    fill(&f);
    f.particles[4 * 5] = NAN;
    f.rest[4 * 5] = INFINITY;
    pleat_params p = good_params(&f);
    p.num_indices = N - 1;
    f.indices[0] = 0; /* indices 0, 4, 3, 2, 1: particle 5 left out */
    pleat_context *ctx = cpu_context(1);
    cr_assert_eq(pleat_self_collide(ctx, f.particles, N, &p, NULL), PLEAT_OK);
    cr_assert(isnan(f.particles[4 * 5]));
    pleat_context_destroy(ctx);
}

Test(errors, negative_inverse_mass)
{
    fixture f;
    fill(&f);
    f.particles[4 * 4 + 3] = -1e-30f;
    pleat_params p = good_params(&f);
    expect(PLEAT_ERROR_INVALID_ARGUMENT, &f, N, &p, "negative mass");
}

Test(errors, bad_indices)
{
    fixture f;
    fill(&f);
    pleat_params p = good_params(&f);
    f.indices[2] = N;
    expect(PLEAT_ERROR_BAD_INDEX, &f, N, &p, "index == count");
    fill(&f);
    f.indices[2] = UINT32_MAX;
    expect(PLEAT_ERROR_BAD_INDEX, &f, N, &p, "index huge");
    fill(&f);
    f.indices[4] = f.indices[1];
    expect(PLEAT_ERROR_BAD_INDEX, &f, N, &p, "repeated index");
    fill(&f);
    expect(PLEAT_ERROR_BAD_INDEX, &f, 0, &p, "any index with count 0");
    fill(&f);
    p.indices = NULL;
    expect(PLEAT_ERROR_INVALID_ARGUMENT, &f, N, &p, "num_indices without indices");
}

/* The data checks run where nothing can collide too: a distance of 0, a
 * single particle, a single index. */
Test(errors, checked_when_nothing_can_collide)
{
    fixture f;
    fill(&f);
    f.particles[4 * 0 + 2] = NAN;
    f.particles[4 * 3 + 3] = -1.0f;
    pleat_params p = good_params(&f);
    p.distance = 0.0f;
    expect(PLEAT_ERROR_NONFINITE_INPUT, &f, N, &p, "NaN, distance 0");
    p = good_params(&f);
    p.indices = NULL;
    p.num_indices = 0;
    expect(PLEAT_ERROR_NONFINITE_INPUT, &f, 1, &p, "NaN in the only particle");
    p.indices = f.indices;
    p.num_indices = 1;
    f.indices[0] = 0;
    expect(PLEAT_ERROR_NONFINITE_INPUT, &f, N, &p, "NaN in a single index");
    f.indices[0] = 3;
    expect(PLEAT_ERROR_INVALID_ARGUMENT, &f, N, &p, "negative mass in a single index");
    f.indices[0] = 6;
    expect(PLEAT_ERROR_BAD_INDEX, &f, N, &p, "a single index past the array");
}

/* The priority holds across the checks' chunks (4096 particles) and
 * threads: an earlier chunk's lesser problem does not win over a later
 * chunk's greater one, in particle order and in subset order, and nothing
 * is written, on a line whose valid twin moves. */
Test(errors, priority_across_chunks)
{
    enum { COUNT = 3 * 4096 + 5 };
    float *particles = malloc(4 * sizeof(float) * COUNT), *rest = malloc(4 * sizeof(float) * COUNT);
    uint32_t *indices = malloc(sizeof(uint32_t) * COUNT);
    cr_assert(particles && rest && indices);
    fill_line(particles, rest, COUNT);
    for (uint32_t i = 0; i < COUNT; ++i)
        indices[i] = COUNT - 1 - i;
    size_t bytes = 4 * sizeof(float) * COUNT;
    pleat_params p = pleat_default_params();
    p.distance = 0.6f;
    p.rest_positions = rest;
    expect_line_moves(particles, COUNT, &p);
    particles[4 * 3 + 3] = -1.0f;                /* negative mass, first chunk */
    particles[4 * (COUNT - 2) + 1] = INFINITY;   /* Inf, last chunk */
    expect_status(PLEAT_ERROR_NONFINITE_INPUT, particles, COUNT, &p, NULL, 0, particles, bytes,
                  "negative mass early, Inf late");
    /* swapped, so that in subset order (reversed) the negative mass again
     * comes in the first chunk and the Inf in the last */
    particles[4 * 3 + 3] = 1.0f;
    particles[4 * (COUNT - 2) + 1] = 0.0f;
    particles[4 * (COUNT - 2) + 3] = -1.0f;
    particles[4 * 3 + 1] = INFINITY;
    p.indices = indices;
    p.num_indices = COUNT;
    expect_status(PLEAT_ERROR_NONFINITE_INPUT, particles, COUNT, &p, NULL, 0, particles, bytes,
                  "negative mass early, Inf late (subset order)");
    indices[COUNT - 1] = indices[0]; /* a repeat at the very end beats both */
    expect_status(PLEAT_ERROR_BAD_INDEX, particles, COUNT, &p, NULL, 0, particles, bytes,
                  "a repeated index after Inf and negative mass");
    free(indices);
    free(rest);
    free(particles);
}

/* When several problems apply, the documented priority decides. */
Test(errors, priority_of_statuses)
{
    fixture f;
    fill(&f);
    f.indices[0] = 99;            /* BAD_INDEX */
    f.particles[4 * 2] = NAN;     /* NONFINITE */
    f.particles[4 * 3 + 3] = -1;  /* negative mass */
    pleat_params p = good_params(&f);
    expect(PLEAT_ERROR_BAD_INDEX, &f, N, &p, "index before NaN");
    f.indices[0] = N - 1;
    expect(PLEAT_ERROR_NONFINITE_INPUT, &f, N, &p, "NaN before negative mass");
    p.stiffness = 2.0f;
    expect(PLEAT_ERROR_INVALID_ARGUMENT, &f, N, &p, "params first");
}

Test(errors, empty_subset_is_valid)
{
    fixture f;
    fill(&f);
    pleat_params p = good_params(&f);
    p.num_indices = 0;
    pleat_context *ctx = cpu_context(1);
    fixture before = f;
    pleat_stats st;
    cr_assert_eq(pleat_self_collide(ctx, f.particles, N, &p, &st), PLEAT_OK);
    cr_assert_eq(st.pairs, 0);
    cr_assert(memcmp(&before, &f, sizeof f) == 0);
    pleat_context_destroy(ctx);
}

/* The index check leaves its bitmap clear after every call, good or bad, on
 * both of its paths (a few indices of many particles, cleared one by one;
 * most of them, cleared at once): a bit left set would turn the next good
 * call into BAD_INDEX. */
Test(errors, index_checks_leave_nothing_behind)
{
    enum { COUNT = 70000 };
    float *particles = malloc(4 * sizeof(float) * COUNT);
    uint32_t *all = malloc(sizeof(uint32_t) * COUNT);
    cr_assert(particles && all);
    for (uint32_t i = 0; i < COUNT; ++i) {
        float *p = particles + 4 * (size_t)i;
        p[0] = 10.0f * (float)i; /* 10 apart: no pairs, nothing moves */
        p[1] = p[2] = 0.0f;
        p[3] = 1.0f;
        all[i] = COUNT - 1 - i;
    }
    uint32_t few[] = {5, 69999, 1234, 40000};
    uint32_t few_repeat[] = {5, 1234, 5, 40000}, few_out[] = {5, 1234, COUNT, 40000};
    struct {
        const uint32_t *indices;
        uint32_t num;
        uint32_t patch; /* all[COUNT - 1] becomes this (0: its own value) */
        pleat_status want;
    } calls[] = {
        {few, 4, 0, PLEAT_OK},
        {few, 4, 0, PLEAT_OK},
        {few_repeat, 4, 0, PLEAT_ERROR_BAD_INDEX},
        {few, 4, 0, PLEAT_OK},
        {few_out, 4, 0, PLEAT_ERROR_BAD_INDEX},
        {few, 4, 0, PLEAT_OK},
        {all, COUNT, 0, PLEAT_OK},
        {all, COUNT, 0, PLEAT_OK},
        {all, COUNT, 7, PLEAT_ERROR_BAD_INDEX}, /* 7 twice, found at the end */
        {all, COUNT, 0, PLEAT_OK},
        {few, 4, 0, PLEAT_OK},
        {all, COUNT / 2, 0, PLEAT_OK},
    };
    pleat_context *ctx = cpu_context(1);
    pleat_params p = pleat_default_params();
    p.distance = 1.0f;
    for (size_t k = 0; k < sizeof calls / sizeof calls[0]; ++k) {
        all[COUNT - 1] = calls[k].patch;
        p.indices = calls[k].indices;
        p.num_indices = calls[k].num;
        size_t num = 0;
        pleat_status s = pleat_find_pairs(ctx, particles, COUNT, &p, NULL, 0, &num);
        cr_assert_eq(s, calls[k].want, "call %zu: %s", k, pleat_status_string(s));
        s = pleat_self_collide(ctx, particles, COUNT, &p, NULL);
        cr_assert_eq(s, calls[k].want, "call %zu: %s", k, pleat_status_string(s));
    }
    pleat_context_destroy(ctx);
    free(all);
    free(particles);
}

/* ---- params.max_tests -------------------------------------------------- */

/* Both entry points with max_tests = limit: self_collide on a copy of the
 * scene's particles (its status, stats and particles), and find_pairs, a
 * size query, then, when it passed, a list of that many pairs (its status
 * and count, and the list's hash); when it failed, lists with room for
 * `room` pairs and for one fewer, made without the query (list_refused:
 * their status when both gave the same, else PLEAT_OK; and whether they
 * wrote nothing). */
typedef struct limited {
    pleat_status collide, pairs, list_refused;
    pleat_stats stats;
    size_t num_pairs;
    uint64_t pairs_hash;
    int list_untouched;
    float *particles;
} limited;

static limited run_limited(pleat_context *ctx, const scene *s, pleat_params p, uint64_t limit,
                           size_t room)
{
    limited r;
    p.max_tests = limit;
    r.particles = copy_floats(s->particles, 4 * (size_t)s->count);
    r.stats = (pleat_stats){12345, 678};
    r.collide = pleat_self_collide(ctx, r.particles, s->count, &p, &r.stats);
    r.num_pairs = 777;
    r.pairs = pleat_find_pairs(ctx, s->particles, s->count, &p, NULL, 0, &r.num_pairs);
    r.pairs_hash = 0;
    r.list_refused = PLEAT_OK;
    r.list_untouched = 1;
    size_t capacity = r.pairs == PLEAT_OK ? r.num_pairs : room, n = 777;
    uint32_t *list = malloc((capacity + 1) * 2 * sizeof *list);
    cr_assert(list);
    memset(list, 0xab, (capacity + 1) * 2 * sizeof *list);
    if (r.pairs == PLEAT_OK) {
        r.pairs = pleat_find_pairs(ctx, s->particles, s->count, &p, list, capacity,
                                   &r.num_pairs);
        r.pairs_hash = hash_bytes(list, r.num_pairs * 2 * sizeof *list);
    } else {
        r.list_refused = pleat_find_pairs(ctx, s->particles, s->count, &p, list, capacity, &n);
        if (capacity > 0 && /* one pair short too: TOO_MANY_TESTS comes before CAPACITY */
            pleat_find_pairs(ctx, s->particles, s->count, &p, list, capacity - 1, &n) !=
                r.list_refused)
            r.list_refused = PLEAT_OK;
        r.list_untouched = n == 777;
        for (size_t k = 0; k < (capacity + 1) * 2; ++k)
            r.list_untouched &= list[k] == 0xababababu;
    }
    free(list);
    return r;
}

/* A call with exactly as many tests as the limit runs as with none, one
 * with one more fails with TOO_MANY_TESTS and writes nothing: the same for
 * every thread count (the sweep's parts stop on their running total), with
 * a subset too. The boundary is the reference's count of the call's tests.
 * The call at the limit comes right after one at half the tests, whose
 * parts stop midway with corrections queued and owed: what they left
 * behind must not change it. */
Test(errors, test_limit_boundary)
{
    static const int threads[] = {1, 2, 3, 8};
    static const scene_kind kinds[] = {SCENE_CLOUD, SCENE_FOLDED, SCENE_COINCIDENT};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; ++k) {
        scene s = scene_make(kinds[k], 8000, kinds[k] == SCENE_FOLDED, 41 + k);
        uint32_t num = 0, *subset = k == 0 ? random_large_subset(s.count, &(uint64_t){7}, &num)
                                           : NULL;
        pleat_params p = pleat_default_params();
        p.distance = s.distance;
        p.rest_positions = s.rest;
        p.indices = subset;
        p.num_indices = num;
        const uint64_t tests = reference_tests(s.particles, s.count, &p);
        cr_assert_gt(tests, 4 * 4096, "%s: %llu tests, enough to be counted in steps",
                     scene_name(kinds[k]), (unsigned long long)tests);
        for (size_t t = 0; t < sizeof threads / sizeof threads[0]; ++t) {
            pleat_context *ctx = cpu_context(threads[t]);
            limited none = run_limited(ctx, &s, p, 0, 0);
            limited over = run_limited(ctx, &s, p, tests - 1, none.num_pairs),
                    half = run_limited(ctx, &s, p, tests / 2, none.num_pairs),
                    at = run_limited(ctx, &s, p, tests, none.num_pairs);
            const char *what = scene_name(kinds[k]);
            cr_assert(none.collide == PLEAT_OK && none.pairs == PLEAT_OK, "%s", what);
            cr_assert_eq(none.stats.tests, tests, "%s: the reference's tests", what);
            cr_assert(at.collide == PLEAT_OK && at.pairs == PLEAT_OK, "%s, %d threads: at the "
                      "limit", what, threads[t]);
            cr_assert(memcmp(at.particles, none.particles, 16 * (size_t)s.count) == 0 &&
                          at.stats.pairs == none.stats.pairs &&
                          at.stats.tests == tests && at.num_pairs == none.num_pairs &&
                          at.pairs_hash == none.pairs_hash,
                      "%s, %d threads: at the limit, the call without one", what, threads[t]);
            cr_assert(over.collide == PLEAT_ERROR_TOO_MANY_TESTS &&
                          over.pairs == PLEAT_ERROR_TOO_MANY_TESTS,
                      "%s, %d threads: one test over the limit gave '%s', '%s'", what,
                      threads[t], pleat_status_string(over.collide),
                      pleat_status_string(over.pairs));
            cr_assert(memcmp(over.particles, s.particles, 16 * (size_t)s.count) == 0 &&
                          over.stats.pairs == 12345 && over.stats.tests == 678 &&
                          over.num_pairs == 777,
                      "%s, %d threads: written over the limit", what, threads[t]);
            cr_assert(half.collide == PLEAT_ERROR_TOO_MANY_TESTS &&
                          half.pairs == PLEAT_ERROR_TOO_MANY_TESTS &&
                          memcmp(half.particles, s.particles, 16 * (size_t)s.count) == 0,
                      "%s, %d threads: half the tests", what, threads[t]);
            cr_assert(over.list_refused == PLEAT_ERROR_TOO_MANY_TESTS && over.list_untouched &&
                          half.list_refused == PLEAT_ERROR_TOO_MANY_TESTS &&
                          half.list_untouched,
                      "%s, %d threads: a list over the limit, made without the size query",
                      what, threads[t]);
            free(none.particles);
            free(at.particles);
            free(over.particles);
            free(half.particles);
            pleat_context_destroy(ctx);
        }
        free(subset);
        scene_free(&s);
    }
}

/* A mesh scaled to zero: every particle on one point, n^2 / 2 tests (5e11
 * here: without the early stop, minutes of sweep on any machine, past this
 * test's time limit; with it, a fraction of a second). Then a call under
 * the limit on the same context. */
Test(errors, test_limit_stops_a_collapsed_mesh, .timeout = 60 * PLEAT_TEST_TIME_SCALE)
{
    enum { COUNT = 1000000 };
    float *particles = calloc(4 * (size_t)COUNT, sizeof(float));
    cr_assert(particles);
    for (uint32_t i = 0; i < COUNT; ++i)
        particles[4 * (size_t)i + 3] = 1.0f;
    pleat_params p = pleat_default_params();
    p.distance = 0.01f;
    p.max_tests = 10000000; /* 10 a particle */
    pleat_context *ctx = cpu_context(2);
    pleat_stats stats = {12345, 678};
    cr_assert_eq(pleat_self_collide(ctx, particles, COUNT, &p, &stats),
                 PLEAT_ERROR_TOO_MANY_TESTS);
    size_t num = 777;
    cr_assert_eq(pleat_find_pairs(ctx, particles, COUNT, &p, NULL, 0, &num),
                 PLEAT_ERROR_TOO_MANY_TESTS);
    cr_assert(stats.pairs == 12345 && stats.tests == 678 && num == 777);
    /* 2 apart on a line: no pair, nothing moved, about 22 tests a particle */
    for (uint32_t i = 0; i < COUNT; ++i)
        particles[4 * (size_t)i] = 2.0f * (float)i * p.distance;
    p.max_tests = 100 * (uint64_t)COUNT;
    float *before = copy_floats(particles, 4 * (size_t)COUNT);
    cr_assert_eq(pleat_self_collide(ctx, particles, COUNT, &p, &stats), PLEAT_OK);
    cr_assert(stats.pairs == 0 && stats.tests > 10 * (uint64_t)COUNT);
    cr_assert(memcmp(before, particles, 16 * (size_t)COUNT) == 0);
    free(before);
    free(particles);
    pleat_context_destroy(ctx);
}
