/*
 * Guard pages: every caller array pleat reads or writes (particles, rest
 * positions, indices, the pairs output) is placed so that it ends exactly at
 * an inaccessible page, or starts right after one, so that a kernel reading
 * (or writing) a SIMD vector past the end, or before the start, faults. For
 * every count 0..70 (and a few around the 4096-particle chunk), every CPU
 * kernel variant the machine has, with and without rest positions and
 * indices; results are checked against brute force and against a plain
 * (unguarded) run on the scalar kernels.
 */
#include "hardening.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

typedef struct guarded {
    void *p;
    size_t bytes;
    int front;
} guarded;

static guarded guard_copy(const void *src, size_t bytes, int front)
{
    guarded g = {hz_guard_alloc(bytes, front), bytes, front};
    if (bytes)
        memcpy(g.p, src, bytes);
    return g;
}

static void guard_release(guarded *g)
{
    hz_guard_free(g->p, g->bytes, g->front);
}

static void check_one(pleat_context *ctx, pleat_context *plain, uint32_t n, int with_rest,
                      int with_indices, int front, const char *isa)
{
    hz_scene sc = hz_cloud(n, 1000 + n, with_rest, 1);
    uint32_t *idx = malloc((n + 1) * sizeof *idx);
    cr_assert(idx);
    uint32_t m = 0; /* two of every three particles, in descending order */
    for (uint32_t i = n; i-- > 0;)
        if (i % 3 != 1)
            idx[m++] = i;
    size_t fbytes = 16 * (size_t)n;
    guarded gp = guard_copy(sc.particles, fbytes, front);
    guarded gr = guard_copy(sc.rest, with_rest ? fbytes : 0, front);
    guarded gi = guard_copy(idx, with_indices ? m * sizeof *idx : 0, front);
    pleat_params params = pleat_default_params();
    params.distance = sc.distance;
    params.stiffness = 0.9f;
    params.rest_positions = with_rest ? gr.p : NULL;
    params.indices = with_indices ? gi.p : NULL;
    params.num_indices = with_indices ? m : 0;

    /* the answer, from ordinary memory */
    pleat_params plain_params = params;
    plain_params.rest_positions = sc.rest;
    plain_params.indices = with_indices ? idx : NULL;
    size_t num = 0;
    uint32_t *ref = brute_force_pairs(sc.particles, n, &plain_params, &num);
    float *expect = malloc(fbytes + 16);
    cr_assert(expect);
    memcpy(expect, sc.particles, fbytes);
    pleat_stats st;
    cr_assert_eq(pleat_self_collide(plain, expect, n, &plain_params, &st), PLEAT_OK);
    cr_assert_eq(st.pairs, num);

    /* find_pairs: size query, then into an array that ends at the guard */
    size_t total = 0;
    cr_assert_eq(pleat_find_pairs(ctx, gp.p, n, &params, NULL, 0, &total), PLEAT_OK,
                 "%s n=%u", isa, n);
    cr_assert_eq(total, num, "%s n=%u rest=%d indices=%d: %zu pairs, brute force %zu", isa, n,
                 with_rest, with_indices, total, num);
    guarded gpairs = {hz_guard_alloc(2 * total * sizeof(uint32_t), front),
                      2 * total * sizeof(uint32_t), front};
    size_t again = 0;
    cr_assert_eq(pleat_find_pairs(ctx, gp.p, n, &params, gpairs.p, total, &again), PLEAT_OK);
    cr_assert(again == num && memcmp(gpairs.p, ref, 2 * num * sizeof *ref) == 0,
              "%s n=%u: pairs differ from brute force", isa, n);
    guard_release(&gpairs);

    /* self_collide in place, on the guarded particles */
    cr_assert_eq(pleat_self_collide(ctx, gp.p, n, &params, &st), PLEAT_OK);
    cr_assert(memcmp(gp.p, expect, fbytes) == 0, "%s n=%u: other bits than scalar", isa, n);
    cr_assert_eq(st.pairs, num);

    guard_release(&gp);
    guard_release(&gr);
    guard_release(&gi);
    free(expect);
    free(ref);
    free(idx);
    hz_scene_free(&sc);
}

static void run_sizes(int front)
{
    pleat_context *plain = hz_context("scalar", 1);
    static const uint32_t big[] = {4095, 4096, 4097, 8193};
    int variants = 0;
    for (int k = 0; hz_isas[k]; ++k) {
        pleat_context *ctx = hz_context(hz_isas[k], k == 0 ? 1 : 2);
        if (!ctx)
            continue;
        ++variants;
        for (uint32_t n = 1; n <= 70 + 4; ++n) {
            uint32_t count = n <= 70 ? n : big[n - 71];
            for (int opt = 0; opt < 4; ++opt)
                check_one(ctx, plain, count, opt & 1, opt >> 1, front, hz_isas[k]);
        }
        pleat_context_destroy(ctx);
    }
    cr_assert(variants >= 1);
    pleat_context_destroy(plain);
}

Test(guard, arrays_ending_at_a_guard_page, .timeout = 600)
{
    run_sizes(0);
}

Test(guard, arrays_starting_after_a_guard_page, .timeout = 600)
{
    run_sizes(1);
}

Test(guard, empty_arrays_at_the_guard_page)
{
    for (int k = 0; hz_isas[k]; ++k) {
        pleat_context *ctx = hz_context(hz_isas[k], 1);
        if (!ctx)
            continue;
        /* zero-length arrays that point at the first inaccessible byte */
        float *p = hz_guard_alloc(0, 0);
        uint32_t *idx = hz_guard_alloc(0, 0);
        pleat_params params = pleat_default_params();
        params.distance = 1.0f;
        pleat_stats st = {5, 5};
        cr_assert_eq(pleat_self_collide(ctx, p, 0, &params, &st), PLEAT_OK);
        cr_assert(st.pairs == 0 && st.tests == 0);
        size_t num = 7;
        cr_assert_eq(pleat_find_pairs(ctx, p, 0, &params, (uint32_t *)idx, 0, &num), PLEAT_OK);
        cr_assert_eq(num, 0);
        /* indices given but empty: nothing takes part, particles never read */
        params.indices = idx;
        params.num_indices = 0;
        cr_assert_eq(pleat_self_collide(ctx, p, 3, &params, &st), PLEAT_OK);
        cr_assert_eq(st.pairs, 0);
        hz_guard_free(p, 0, 0);
        hz_guard_free(idx, 0, 0);
        pleat_context_destroy(ctx);
    }
}

/* More indices than particles: BAD_INDEX before any index is read, so the
 * ones past the caller's array (here, the guard page) are never touched. */
Test(guard, more_indices_than_particles)
{
    const uint32_t n = 64;
    hz_scene sc = hz_cloud(n, 5, 0, 1);
    uint32_t *idx = hz_guard_alloc(n * sizeof *idx, 0);
    for (uint32_t i = 0; i < n; ++i)
        idx[i] = i;
    for (int k = 0; hz_isas[k]; ++k) {
        pleat_context *ctx = hz_context(hz_isas[k], 2);
        if (!ctx)
            continue;
        pleat_params params = pleat_default_params();
        params.distance = sc.distance;
        params.indices = idx;
        static const uint32_t over[] = {65, 4096, UINT32_MAX};
        for (size_t o = 0; o < sizeof over / sizeof over[0]; ++o) {
            params.num_indices = over[o];
            size_t num = 7;
            cr_assert_eq(pleat_self_collide(ctx, sc.particles, n, &params, NULL),
                         PLEAT_ERROR_BAD_INDEX, "%s, %u indices", hz_isas[k], over[o]);
            cr_assert_eq(pleat_find_pairs(ctx, sc.particles, n, &params, NULL, 0, &num),
                         PLEAT_ERROR_BAD_INDEX, "%s, %u indices", hz_isas[k], over[o]);
            cr_assert_eq(num, 7);
        }
        params.num_indices = n; /* all of them: valid */
        cr_assert_eq(pleat_self_collide(ctx, sc.particles, n, &params, NULL), PLEAT_OK);
        pleat_context_destroy(ctx);
    }
    hz_guard_free(idx, n * sizeof *idx, 0);
    hz_scene_free(&sc);
}
