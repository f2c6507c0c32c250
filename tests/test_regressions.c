/*
 * Regression tests for what fuzzing and the sanitizers found (the raw fuzz
 * inputs are in fuzz/regressions and are replayed by the fuzz_replay tests).
 */
#include "hardening.h"

#include <criterion/criterion.h>
#include <float.h>
#include <string.h>

/* Four particles from start through pleat_self_collide on kernel variant
 * isa (one thread) with params, into p and st; 0 where this machine lacks
 * the variant. */
static int collide4(const char *isa, const float start[4][4], const pleat_params *params,
                    float p[4][4], pleat_stats *st)
{
    pleat_context *ctx = hz_context(isa, 1);
    if (!ctx)
        return 0;
    memcpy(p, start, 16 * sizeof(float));
    cr_assert_eq(pleat_self_collide(ctx, &p[0][0], 4, params, st), PLEAT_OK, "%s", isa);
    pleat_context_destroy(ctx);
    return 1;
}

/* Found by fuzz_collide under UBSan (seed fuzz/corpus/coincident): on the
 * scalar kernels a coincident pair made the batched correction convert NaN
 * (0 * inf) to int32, undefined behaviour in C (SIMD conversions are defined:
 * they give INT32_MIN, and that lane is redone by the scalar code anyway).
 * The result was right on x86, but only by luck. Runs on every variant; the
 * asan preset (-fsanitize=float-cast-overflow) fails it while the scalar
 * conversion is unguarded. */
Test(regressions, coincident_pair_with_every_kernel_variant)
{
    const float start[4][4] = {
        {1.0f, 2.0f, 3.0f, 1.0f}, {1.0f, 2.0f, 3.0f, 1.0f}, /* coincident */
        {5.0f, 2.0f, 3.0f, 1.0f}, {5.5f, 2.0f, 3.0f, 1.0f}, /* 0.5 apart */
    };
    for (int k = 0; hz_isas[k]; ++k) {
        for (int s = 0; s <= 1; ++s) { /* stiffness 0 made 0 * -inf = NaN too */
            pleat_params params = pleat_default_params();
            params.distance = 1.0f;
            params.stiffness = (float)s;
            float p[4][4];
            pleat_stats st;
            if (!collide4(hz_isas[k], start, &params, p, &st))
                continue;
            cr_assert_eq(st.pairs, 2, "%s", hz_isas[k]);
            cr_assert(memcmp(p[0], start[0], 16) == 0 && memcmp(p[1], start[1], 16) == 0,
                      "%s: coincident particles are not moved", hz_isas[k]);
            if (s == 1) /* pushed to 1 apart, symmetrically */
                cr_assert(p[2][0] == 4.75f && p[3][0] == 5.75f, "%s: %a %a", hz_isas[k],
                          p[2][0], p[3][0]);
            else
                cr_assert(memcmp(p, start, sizeof p) == 0);
        }
    }
}

/* Found by fuzz_collide (fuzz/regressions/tiny-distance-underflow): with
 * 0 < distance < about 1.1e-19 the square distance^2 is subnormal or 0, and
 * the float predicate |x_j - x_i|^2 <= d^2 then holds for pairs far more than
 * d apart (every pair whose own square underflows), while the grid only looks
 * about d away. The contract now rejects such distances. */
Test(regressions, distance_whose_square_underflows)
{
    /* particles 2^-80 apart: 2^-160 underflows to 0 <= (1e-30)^2 = 0 */
    float p[3][4] = {{0, 0, 0, 1}, {0x1p-80f, 0, 0, 1}, {0x1p-79f, 0, 0, 1}};
    float before[3][4];
    memcpy(before, p, sizeof p);
    pleat_params params = pleat_default_params();
    params.distance = 1e-30f;
    pleat_context *ctx = hz_context("", 1);
    size_t num = 7;
    cr_assert_eq(pleat_find_pairs(ctx, &p[0][0], 3, &params, NULL, 0, &num),
                 PLEAT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(num, 7);
    cr_assert_eq(pleat_self_collide(ctx, &p[0][0], 3, &params, NULL), PLEAT_ERROR_INVALID_ARGUMENT);
    cr_assert(memcmp(p, before, sizeof p) == 0);
    /* the smallest accepted distance finds the pair it should */
    params.distance = 0x1p-63f; /* its square 2^-126 = FLT_MIN is normal */
    p[1][0] = 0x1p-64f;
    p[2][0] = 1.0f;
    cr_assert_eq(pleat_find_pairs(ctx, &p[0][0], 3, &params, NULL, 0, &num), PLEAT_OK);
    cr_assert_eq(num, 1);
    pleat_context_destroy(ctx);
}

/* Found by the asan preset (gcc's UBSan, nonnull-attribute) in the errors
 * tests: indices with count 0 on a fresh context made the index check call
 * memset(NULL, 0, 0) (the 0-byte bitmap was never allocated): undefined
 * behaviour. Run on a fresh context each time. */
Test(regressions, indices_with_no_particles)
{
    const uint32_t idx[2] = {0, 1};
    pleat_params params = pleat_default_params();
    params.distance = 1.0f;
    params.indices = idx;
    for (uint32_t num = 0; num <= 2; ++num) {
        pleat_context *ctx = hz_context("", 1);
        params.num_indices = num;
        pleat_stats st = {9, 9};
        pleat_status want = num == 0 ? PLEAT_OK : PLEAT_ERROR_BAD_INDEX;
        cr_assert_eq(pleat_self_collide(ctx, NULL, 0, &params, &st), want, "num %u", num);
        pleat_context_destroy(ctx);
        ctx = hz_context("", 1);
        size_t n = 77;
        cr_assert_eq(pleat_find_pairs(ctx, NULL, 0, &params, NULL, 0, &n), want);
        cr_assert_eq(n, num == 0 ? 0 : 77);
        pleat_context_destroy(ctx);
    }
}

/* Found by the fuzz preset (clang's UBSan, pointer-overflow) on the empty
 * input: a correcting call with no particles on a fresh context computed
 * the z sums' address as NULL + 0 (their buffer was never allocated):
 * undefined behaviour. gcc's UBSan does not flag it; the regression input
 * fuzz/regressions/ubsan-null-sums-no-particles replays it under clang. */
Test(regressions, collide_with_no_particles)
{
    pleat_params params = pleat_default_params();
    params.distance = 1.0f;
    for (int threads = 1; threads <= 2; ++threads) {
        pleat_context *ctx = hz_context("", threads);
        pleat_stats st = {9, 9};
        cr_assert_eq(pleat_self_collide(ctx, NULL, 0, &params, &st), PLEAT_OK);
        cr_assert(st.pairs == 0 && st.tests == 0);
        pleat_context_destroy(ctx);
    }
}

/* Found in an audit of the fuzzers (fuzz/regressions/pair-across-hash-cell-
 * edge, made by a search over core/grid.h): particles 2 and 3 are a hair
 * closer than the distance along a hash axis whose cells would be the
 * distance wide (the box is far wider on the sweep axis), and the rounding
 * of (p - lower) * scale puts them two such cells apart. The cells are a
 * hair wider than the distance (PLEAT_HASH_MARGIN) so that this cannot
 * happen; without the margin the pair was lost, and the fuzzers' random
 * inputs never met the case. */
Test(regressions, pair_as_far_apart_as_a_hash_cell_is_wide)
{
    const float start[4][4] = {
        {0.0f, -0x1.72ec2p+4f, -0x1.72ec2p+4f, 1.0f},
        {0x1.f4p+9f, 0x1.02bd7ap+5f, 0x1.02bd7ap+5f, 1.0f},
        {0.0f, 0x1.1ebc4ap+2f, -0x1.72ec2p+4f, 1.0f},
        {0.0f, 0x1.4224dcp+2f, -0x1.72ec2p+4f, 1.0f},
    };
    pleat_params params = pleat_default_params();
    params.distance = 0x1.1b449cp-1f;
    for (int k = 0; hz_isas[k]; ++k) {
        float p[4][4];
        pleat_stats st;
        if (collide4(hz_isas[k], start, &params, p, &st))
            cr_assert_eq(st.pairs, 1, "%s: the pair of particles 2 and 3", hz_isas[k]);
    }
}
