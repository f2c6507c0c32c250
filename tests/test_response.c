/* pleat_self_collide against a double-precision Jacobi reference, and the
 * response rules: pinned particles, coincident pairs, masses untouched. */
#include "cpu/cpu.h"
#include "grid_reference.h"
#include "scenes.h"
#include "support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The pairs by brute force, or for large scenes by the independent grid
 * reference. */
static uint32_t *reference_pairs(const scene *s, const pleat_params *p, size_t *num)
{
    if (s->count <= 20000)
        return brute_force_pairs(s->particles, s->count, p, num);
    uint32_t *pairs = grid_reference_pairs(s->particles, s->count, p->indices, p->num_indices,
                                           p->rest_positions, p->distance, num);
    cr_assert(pairs || *num == 0, "grid reference failed");
    return pairs;
}

static void check_against_reference(pleat_context *ctx, const scene *s, const pleat_params *p,
                                    const char *what)
{
    size_t np;
    uint32_t *pairs = reference_pairs(s, p, &np);
    double *ref = malloc((size_t)s->count * 4 * sizeof *ref);
    uint32_t *degree = calloc(s->count + 1, sizeof *degree);
    cr_assert(ref && degree);
    reference_response(s->particles, s->count, p, pairs, np, ref);
    for (size_t k = 0; k < 2 * np; ++k)
        degree[pairs[k]]++;

    float *got = copy_floats(s->particles, (size_t)s->count * 4);
    pleat_stats stats;
    cr_assert_eq(pleat_self_collide(ctx, got, s->count, p, &stats), PLEAT_OK);
    cr_assert_eq(stats.pairs, np);
    size_t moved = 0;
    for (uint32_t i = 0; i < s->count; ++i) {
        const float *in = s->particles + 4 * (size_t)i;
        const float *out = got + 4 * (size_t)i;
        cr_assert(memcmp(&in[3], &out[3], sizeof(float)) == 0, "%s: mass of %u changed", what, i);
        if (in[3] == 0.0f || degree[i] == 0)
            cr_assert(memcmp(in, out, 4 * sizeof(float)) == 0, "%s: %u must not move", what, i);
        for (int c = 0; c < 3; ++c) {
            double r = ref[4 * (size_t)i + c];
            double err = fabs((double)out[c] - r);
            cr_assert(err <= reference_tolerance(r, degree[i], p->distance),
                      "%s: particle %u axis %d: %.9g vs reference %.9g (%u pairs)", what, i, c,
                      out[c], r, degree[i]);
            moved += out[c] != in[c];
        }
    }
    if (np > 10 && p->stiffness > 0.0f)
        cr_assert_gt(moved, 0, "%s: nothing moved", what);
    free(got);
    free(degree);
    free(ref);
    free(pairs);
}

Test(response, matches_double_reference_on_all_scenes)
{
    pleat_context *ctx = cpu_context(2);
    uint64_t rng = 777;
    for (int kind = 0; kind < SCENE_KIND_COUNT; ++kind) {
        for (int rep = 0; rep < 4; ++rep) {
            uint32_t n = 100 + (uint32_t)(pleat_scene_random(&rng) % 1200);
            scene s = scene_make((scene_kind)kind, n, rep % 2, pleat_scene_random(&rng));
            pleat_params p = pleat_default_params();
            p.distance = s.distance;
            p.stiffness = rep < 2 ? 1.0f : pleat_scene_uniform(&rng);
            p.rest_positions = s.rest;
            uint32_t *subset = NULL;
            if (rep == 3) {
                subset = random_large_subset(s.count, &rng, &p.num_indices);
                p.indices = subset;
            }
            char what[96];
            snprintf(what, sizeof what, "%s n=%u rep=%d", scene_name(kind), s.count, rep);
            check_against_reference(ctx, &s, &p, what);
            free(subset);
            scene_free(&s);
        }
    }
    pleat_context_destroy(ctx);
}

/* From PLEAT_SORTED_REST_FROM taking-part particles on, the gather lays the
 * rest positions out in key order and the sweep reads them there: the same
 * response, with every particle and with a subset. The rest positions (a
 * jittered copy of the start) must exclude pairs, or a wrong rest read
 * could go unseen. */
Test(response, rest_in_key_order_at_scale, .timeout = 600)
{
    enum { N = 200000 };
    _Static_assert(N - N / 16 >= PLEAT_SORTED_REST_FROM, "the subset too takes that path");
    scene s = scene_make(SCENE_CLOUD, N, 1, 4242);
    pleat_params p = pleat_default_params();
    p.distance = s.distance;
    size_t without_rest, with_rest;
    free(reference_pairs(&s, &p, &without_rest));
    p.rest_positions = s.rest;
    free(reference_pairs(&s, &p, &with_rest));
    cr_assert_lt(with_rest + with_rest / 10, without_rest, "rest excludes %zu of %zu pairs",
                 without_rest - with_rest, without_rest);
    pleat_context *ctx = cpu_context(2);
    check_against_reference(ctx, &s, &p, "cloud 200k, rest");
    uint32_t *subset = malloc((size_t)N * sizeof *subset);
    cr_assert(subset);
    p.num_indices = 0;
    for (uint32_t i = 0; i < s.count; ++i)
        if (i % 16 != 5)
            subset[p.num_indices++] = i;
    p.indices = subset;
    check_against_reference(ctx, &s, &p, "cloud 200k, rest, subset");
    free(subset);
    pleat_context_destroy(ctx);
    scene_free(&s);
}

Test(response, full_stiffness_pair_ends_at_distance)
{
    pleat_context *ctx = cpu_context(1);
    float pts[] = {0.1f, 0.2f, 0.3f, 1.0f, 0.5f, 0.4f, 0.1f, 3.0f};
    pleat_params p = pleat_default_params();
    p.distance = 1.25f;
    cr_assert_eq(pleat_self_collide(ctx, pts, 2, &p, NULL), PLEAT_OK);
    double dx = pts[4] - pts[0], dy = pts[5] - pts[1], dz = pts[6] - pts[2];
    cr_assert_float_eq(sqrt(dx * dx + dy * dy + dz * dz), 1.25, 1e-6);
    pleat_context_destroy(ctx);
}

/* Where every operation of the response is exact, so is the result: pairs
 * (0, 0, 0) and (0.5, 0, 0) with d = 0.75 - 2^-24, w_i = 2^-6 and
 * w_j = 1 - 2^-6 - 2^-23 (so w_i + w_j + FLT_EPSILON is exactly 1) give
 * Delta = (0.5 - d) exactly, and x_i moves by 2^-6 Delta = -2^-8 + 2^-30.
 * Its last bit is the quantum of a distance in [0.5, 1), 2^-30: any coarser
 * fixed point truncates it (x_j's product is rounded, so it is checked to
 * an ulp of the exact value). 20 pairs, 3 apart, fill several lanes and
 * batches. */
Test(response, exact_arithmetic_gives_the_exact_result)
{
    pleat_context *ctx = cpu_context(1);
    const float d = 0.75f - 0x1p-24f, wi = 0x1p-6f, wj = 1.0f - 0x1p-6f - 0x1p-23f;
    enum { PAIRS = 20 };
    float pts[PAIRS * 8];
    for (int k = 0; k < PAIRS; ++k) {
        const float pair[8] = {0.0f, 3.0f * (float)k, 0.0f, wi, 0.5f, 3.0f * (float)k, 0.0f, wj};
        memcpy(pts + 8 * k, pair, sizeof pair);
    }
    pleat_params p = pleat_default_params();
    p.distance = d;
    pleat_stats st;
    cr_assert_eq(pleat_self_collide(ctx, pts, 2 * PAIRS, &p, &st), PLEAT_OK);
    cr_assert_eq(st.pairs, PAIRS);
    const double delta = 0.5 - (double)d, xj = 0.5 - (double)wj * delta;
    for (int k = 0; k < PAIRS; ++k) {
        const float *a = pts + 8 * k, *b = a + 4;
        cr_assert(a[0] == -0x1p-8f + 0x1p-30f, "pair %d: x_i %a", k, (double)a[0]);
        cr_assert(fabs((double)b[0] - xj) <= 0x1p-24, "pair %d: x_j %a vs %a", k, (double)b[0],
                  xj);
        cr_assert(a[1] == 3.0f * (float)k && b[1] == a[1] && a[2] == 0.0f && b[2] == 0.0f);
    }
    pleat_context_destroy(ctx);
}

/* The epsilon of the response formula (pleat.h: delta = s / (w_i + w_j + FLT_EPSILON) ...)
 * matters where inverse masses are as small as it is (very heavy
 * particles): two of w = FLT_EPSILON, 0.25 apart, d = 0.5, s = 1 move by
 * 0.25 / 3 each (by 0.125 each without it), as the double reference says. */
Test(response, epsilon_counts_beside_tiny_inverse_masses)
{
    pleat_context *ctx = cpu_context(1);
    float pts[] = {0, 0, 0, FLT_EPSILON, 0.25f, 0, 0, FLT_EPSILON};
    pleat_params p = pleat_default_params();
    p.distance = 0.5f;
    const uint32_t pair[2] = {0, 1};
    double ref[8];
    reference_response(pts, 2, &p, pair, 1, ref);
    cr_assert(fabs(ref[0] + 0.25 / 3) < 1e-7 && fabs(ref[4] - (0.25 + 0.25 / 3)) < 1e-7,
              "reference %.9g %.9g", ref[0], ref[4]);
    cr_assert_eq(pleat_self_collide(ctx, pts, 2, &p, NULL), PLEAT_OK);
    cr_assert(fabs(pts[0] - ref[0]) <= reference_tolerance(ref[0], 1, p.distance) &&
                  fabs(pts[4] - ref[4]) <= reference_tolerance(ref[4], 1, p.distance),
              "x0 %.9g x1 %.9g, reference %.9g %.9g", (double)pts[0], (double)pts[4], ref[0],
              ref[4]);
    pleat_context_destroy(ctx);
}

/* The pair rules as the CUDA sweep takes them from core/pair.h (the CPU
 * sweep has its own vector compares, tested through the suites above):
 * within the distance is inclusive, the rest rule exclusive. */
Test(response, shared_pair_rules_match_the_contract)
{
    pleat_pair_consts k = pleat_pair_setup(1.0f, 1.0f);
    const float below = 0.99999994f, above = 1.00000012f; /* the floats beside 1 */
    cr_assert(pleat_pair_within(pleat_length2(0.0f, 1.0f, 0.0f), &k));
    cr_assert(pleat_pair_within(below, &k));
    cr_assert(!pleat_pair_within(above, &k));
    cr_assert(!pleat_pair_rest_ignored(pleat_length2(1.0f, 0.0f, 0.0f), &k));
    cr_assert(pleat_pair_rest_ignored(below, &k));
    cr_assert(!pleat_pair_rest_ignored(above, &k));
}

/* A particle's summed correction is added with one rounding, of the exact
 * x + sum * quantum, on every backend (pleat_apply_sum, core/pair.h). The
 * reference: that exact value, formed in double where the test can see it
 * is exact, rounded once to float. Adding in float would round the sum
 * first: x = 1 and 2^24 + 65 quanta of 2^-30 are 1 + 2^-6 + 0.51 ulp of
 * 1, which one rounding takes up to 0x1.040002p+0; a float sum rounds to
 * 2^24 + 64 quanta, a tie, and then to even, 0x1.04p+0. */
Test(response, a_sum_is_applied_with_one_rounding)
{
    pleat_pair_consts k = pleat_pair_setup(0.75f, 1.0f); /* quantum 2^-30 */
    cr_assert(k.quantum == 0x1p-30);
    cr_assert(pleat_apply_sum(1.0f, 16777281, &k) == 0x1.040002p+0f);
    uint64_t rng = 5;
    for (int n = 0; n < 100000; ++n) {
        float x = 8.0f * (pleat_scene_uniform(&rng) - 0.5f);
        int64_t sum = (int64_t)(pleat_scene_random(&rng) % (1ull << 36)) - ((int64_t)1 << 35);
        double exact = (double)x + ldexp((double)sum, -30);
        cr_assert(ldexp(exact - (double)x, 30) == (double)sum, "not exact: %a + %lld quanta",
                  (double)x, (long long)sum);
        float want = sum == 0 ? x : (float)exact;
        cr_assert(pleat_apply_sum(x, sum, &k) == want, "%a + %lld quanta: %a, want %a", (double)x,
                  (long long)sum, (double)pleat_apply_sum(x, sum, &k), (double)want);
    }
}

/* The correction as the CUDA kernels compute it, pleat_pair_correction()
 * (core/pair.h), against this variant's CPU kernels, whose fast lanes use
 * vector operations of their own: the same bits for ordinary pairs. Pairs
 * of random separation within the distance, random inverse masses (some
 * pinned) and both orientations sit on a lattice 4 distances apart, so no
 * two pairs touch. */
Test(response, shared_pair_correction_matches_the_kernels)
{
    enum { SIDE = 24, PAIRS = SIDE * SIDE * SIDE };
    pleat_context *ctx = cpu_context(1);
    const float distance = 1.0f, stiffness = 0.75f;
    float *pts = malloc(8 * sizeof(float) * PAIRS), *got = malloc(8 * sizeof(float) * PAIRS);
    cr_assert(pts && got);
    uint64_t rng = 2026;
    for (uint32_t k = 0; k < PAIRS; ++k) {
        float *pi = pts + 8 * (size_t)k, *pj = pi + 4, v[3], len2;
        do { /* a separation in the ball of the distance, not zero */
            for (int a = 0; a < 3; ++a)
                v[a] = (2.0f * pleat_scene_uniform(&rng) - 1.0f) * distance;
            len2 = pleat_length2(v[0], v[1], v[2]);
        } while (len2 > distance * distance || len2 == 0.0f);
        const uint32_t cell[3] = {k % SIDE, k / SIDE % SIDE, k / (SIDE * SIDE)};
        for (int a = 0; a < 3; ++a) {
            pi[a] = (float)cell[a] * 4.0f * distance + pleat_scene_uniform(&rng);
            pj[a] = pi[a] + v[a];
        }
        pi[3] = k % 10 == 0 ? 0.0f : 2.0f * pleat_scene_uniform(&rng);
        pj[3] = k % 7 == 0 ? 0.0f : 2.0f * pleat_scene_uniform(&rng);
    }
    memcpy(got, pts, 8 * sizeof(float) * PAIRS);
    pleat_params p = pleat_default_params();
    p.distance = distance;
    p.stiffness = stiffness;
    pleat_stats st;
    cr_assert_eq(pleat_self_collide(ctx, got, 2 * PAIRS, &p, &st), PLEAT_OK);
    cr_assert_eq(st.pairs, PAIRS);
    const pleat_pair_consts consts = pleat_pair_setup(distance, stiffness);
    size_t moved = 0;
    for (uint32_t k = 0; k < PAIRS; ++k) {
        const float *pi = pts + 8 * (size_t)k, *pj = pi + 4;
        int64_t ci[3], cj[3];
        pleat_pair_correction(pj[0] - pi[0], pj[1] - pi[1], pj[2] - pi[2], pi[3], pj[3], &consts,
                              ci, cj);
        for (int a = 0; a < 3; ++a) {
            const float want[2] = {pleat_apply_sum(pi[a], ci[a], &consts),
                                   pleat_apply_sum(pj[a], -cj[a], &consts)};
            for (int e = 0; e < 2; ++e) {
                float out = got[8 * (size_t)k + 4 * e + a];
                cr_assert(memcmp(&out, &want[e], sizeof out) == 0,
                          "pair %u, particle %d, axis %d: kernel %a, pleat_pair_correction %a", k,
                          e, a, (double)out, (double)want[e]);
                moved += out != pts[8 * (size_t)k + 4 * e + a];
            }
        }
    }
    cr_assert_gt(moved, (size_t)PAIRS, "the pairs were pushed");
    free(got);
    free(pts);
    pleat_context_destroy(ctx);
}

/* Inverse mass 0 pins, and so does -0 (pleat.h: not negative). */
Test(response, pinned_particles_never_move)
{
    pleat_context *ctx = cpu_context(1);
    float pts[] = {0, 0, 0, 0.0f, 0.3f, 0, 0, 1.0f, 0, 0.2f, 0, -0.0f};
    float before[12];
    memcpy(before, pts, sizeof pts);
    pleat_params p = pleat_default_params();
    p.distance = 1.0f;
    pleat_stats st;
    cr_assert_eq(pleat_self_collide(ctx, pts, 3, &p, &st), PLEAT_OK);
    cr_assert_eq(st.pairs, 3);
    cr_assert(memcmp(pts, before, 4 * sizeof(float)) == 0);
    cr_assert(memcmp(pts + 8, before + 8, 4 * sizeof(float)) == 0);
    cr_assert_neq(pts[4], before[4], "the free particle is pushed");
    pleat_context_destroy(ctx);
}

Test(response, coincident_pairs_count_but_do_not_move)
{
    pleat_context *ctx = cpu_context(1);
    float pts[] = {1, 2, 3, 1, 1, 2, 3, 1, 1, 2, 3, 2};
    float before[12];
    memcpy(before, pts, sizeof pts);
    pleat_params p = pleat_default_params();
    p.distance = 0.5f;
    pleat_stats st;
    cr_assert_eq(pleat_self_collide(ctx, pts, 3, &p, &st), PLEAT_OK);
    cr_assert_eq(st.pairs, 3);
    cr_assert(memcmp(pts, before, sizeof pts) == 0);
    pleat_context_destroy(ctx);
}

/* Two particles a subnormal distance apart: the scale exponent is out of the
 * vector kernels' fast range, so the pair goes through the scalar
 * pleat_pair_correction() on every ISA. Its correction must land on the
 * right axes: each particle ends half the distance from the middle, y and z
 * untouched. */
Test(response, subnormal_separation_takes_the_slow_lane)
{
    pleat_context *ctx = cpu_context(1);
    const float d = 1e-12f;
    float pts[] = {0, 0, 0, 1, 3e-39f, 0, 0, 1};
    pleat_params p = pleat_default_params();
    p.distance = d;
    pleat_stats st;
    cr_assert_eq(pleat_self_collide(ctx, pts, 2, &p, &st), PLEAT_OK);
    cr_assert_eq(st.pairs, 1);
    cr_assert(fabsf(pts[0] + d / 2) <= d * 1e-6f && fabsf(pts[4] - d / 2) <= d * 1e-6f,
              "x: %a and %a, want -+%a", pts[0], pts[4], d / 2);
    const int untouched[] = {1, 2, 5, 6};
    for (int k = 0; k < 4; ++k)
        cr_assert(pts[untouched[k]] == 0.0f && !signbit(pts[untouched[k]]),
                  "coordinate %d moved to %a", untouched[k], pts[untouched[k]]);
    pleat_context_destroy(ctx);
}

Test(response, zero_stiffness_and_untouched_signed_zero_keep_bits)
{
    pleat_context *ctx = cpu_context(1);
    float pts[] = {-0.0f, -0.0f, -0.0f, 1, 0.5f, 0, 0, 1, 9, -0.0f, 0, 1};
    float before[12];
    memcpy(before, pts, sizeof pts);
    pleat_params p = pleat_default_params();
    p.distance = 1.0f;
    p.stiffness = 0.0f;
    pleat_stats st;
    cr_assert_eq(pleat_self_collide(ctx, pts, 3, &p, &st), PLEAT_OK);
    cr_assert_eq(st.pairs, 1);
    cr_assert(memcmp(pts, before, sizeof pts) == 0);
    p.stiffness = 1.0f;
    cr_assert_eq(pleat_self_collide(ctx, pts, 3, &p, &st), PLEAT_OK);
    /* only x moves: y and z of the pair and all of particle 2 keep their bits */
    cr_assert(memcmp(&pts[1], &before[1], 2 * sizeof(float)) == 0);
    cr_assert(memcmp(&pts[8], &before[8], 4 * sizeof(float)) == 0);
    pleat_context_destroy(ctx);
}

/* Corrections stay finite where the textbook (1 - d / L) * diff form would
 * overflow: a huge distance and a tiny separation. */
Test(response, huge_distance_tiny_separation_stays_finite)
{
    pleat_context *ctx = cpu_context(1);
    float pts[] = {0, 0, 0, 1, 1e-20f, 0, 0, 1};
    pleat_params p = pleat_default_params();
    p.distance = 1e18f;
    cr_assert_eq(pleat_self_collide(ctx, pts, 2, &p, NULL), PLEAT_OK);
    for (int i = 0; i < 8; ++i)
        cr_assert(isfinite(pts[i]));
    cr_assert_float_eq((double)pts[4] - pts[0], 1e18, 1e12);
    pleat_context_destroy(ctx);
}

/* Inverse masses up to FLT_MAX, beside any distance, move a pair as the
 * double reference does: every factor of the correction stays finite and,
 * where it matters, normal (core/pair.h). One pair a call, along an axis, a
 * face diagonal and the space diagonal, so that a tiny separation is not
 * lost beside the coordinates of other pairs; a subnormal one takes the
 * scalar slow lane (pleat_pair_correction, as on CUDA). A pinned particle
 * keeps its bits. */
Test(response, huge_inverse_masses_move_as_the_reference)
{
    const float w[][2] = {{1.96e26f, 0.0f}, {1e35f, 1e35f},  {1e36f, 1e36f},     {1e36f, 0.0f},
                          {1e36f, 1.0f},    {1e37f, 1e37f},  {1e38f, 1e38f},     {3e38f, 1e38f},
                          {FLT_MAX, 0.0f},  {0.0f, FLT_MAX}, {FLT_MAX, FLT_MAX}, {FLT_MAX, 1.0f}};
    const struct {
        float distance, apart;
    } cases[] = {{1.0f, 0.5f},
                 {1e-9f, 5e-10f},
                 {0x1.e666666p-63f, 0x1.8p-100f},
                 {0x1.e666666p-63f, 0x1.8p-130f}};
    const float dir[][3] = {{1, 0, 0}, {0, 1, 1}, {1, 1, 1}, {-1, 1, -1}};
    pleat_context *ctx = cpu_context(1);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c)
        for (size_t m = 0; m < sizeof w / sizeof w[0]; ++m)
            for (size_t k = 0; k < sizeof dir / sizeof dir[0]; ++k) {
                const float *v = dir[k];
                const float n = cases[c].apart / sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
                float pts[8] = {0, 0, 0, w[m][0], n * v[0], n * v[1], n * v[2], w[m][1]};
                float before[8];
                memcpy(before, pts, sizeof pts);
                pleat_params p = pleat_default_params();
                p.distance = cases[c].distance;
                const uint32_t pair[2] = {0, 1};
                double ref[8];
                reference_response(pts, 2, &p, pair, 1, ref);
                pleat_stats st;
                cr_assert_eq(pleat_self_collide(ctx, pts, 2, &p, &st), PLEAT_OK);
                cr_assert_eq(st.pairs, 1);
                for (int i = 0; i < 2; ++i) {
                    const float *got = pts + 4 * i;
                    if (got[3] == 0.0f) {
                        cr_assert(memcmp(got, before + 4 * i, sizeof before / 2) == 0,
                                  "d = %a: a pinned particle moved", (double)p.distance);
                        continue;
                    }
                    for (int a = 0; a < 3; ++a)
                        cr_assert(fabs(got[a] - ref[4 * i + a]) <=
                                      reference_tolerance(ref[4 * i + a], 1, p.distance),
                                  "d = %a, %a apart along (%g, %g, %g), particle %d (w = %g) "
                                  "axis %d: %a vs reference %a",
                                  (double)p.distance, (double)cases[c].apart, (double)v[0],
                                  (double)v[1], (double)v[2], i, (double)got[3], a,
                                  (double)got[a], ref[4 * i + a]);
                }
            }
    pleat_context_destroy(ctx);
}

/* Only listed particles take part; the others keep their bits even when
 * they overlap a listed one. */
Test(response, index_subset_leaves_others_alone)
{
    pleat_context *ctx = cpu_context(1);
    float pts[] = {0, 0, 0, 1, 0.2f, 0, 0, 1, 0.4f, 0, 0, 1};
    float before[12];
    memcpy(before, pts, sizeof pts);
    uint32_t idx[] = {2, 0};
    pleat_params p = pleat_default_params();
    p.distance = 1.0f;
    p.indices = idx;
    p.num_indices = 2;
    pleat_stats st;
    cr_assert_eq(pleat_self_collide(ctx, pts, 3, &p, &st), PLEAT_OK);
    cr_assert_eq(st.pairs, 1);
    cr_assert(memcmp(&pts[4], &before[4], 4 * sizeof(float)) == 0);
    cr_assert_float_eq(pts[8] - pts[0], 1.0f, 1e-6f);
    pleat_context_destroy(ctx);
}
