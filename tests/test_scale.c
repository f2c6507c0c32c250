/*
 * Scale: 16M particles (2^24) once, in a cloth-like scene: a 2048 x 2048
 * sheet folded into 4 layers 0.6 apart (collision distance 0.9, spacing 1,
 * jittered, every 7th particle pinned). The pairs pleat lists are checked
 * against the independent grid reference (tests/grid_reference.c), without
 * and with rest positions (the unfolded sheet, which excludes the mesh
 * neighbours); self_collide gives the same
 * pair count, finite output, pinned and pair-less particles unmoved, and the
 * same bits with one thread and with all of them. Then a pair count above
 * 2^32 (92,700 coincident particles) is reported without truncation.
 *
 * Registered only with -DPLEAT_TEST_SCALE=ON (label `scale`): it needs about
 * 2 GiB and a minute of a 2-core machine.
 */
#include "grid_reference.h"
#include "hardening.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SIDE 2048u
#define LAYERS 4u
#define N (SIDE * SIDE * LAYERS)

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void make_sheet(float *p, float *rest)
{
    uint64_t rng = 20240601;
    for (uint32_t l = 0; l < LAYERS; ++l)
        for (uint32_t j = 0; j < SIDE; ++j)
            for (uint32_t i = 0; i < SIDE; ++i) {
                size_t k = ((size_t)l * SIDE + j) * SIDE + i;
                float *q = p + 4 * k;
                /* accordion: odd layers run backwards, so the fold joins them */
                uint32_t x = l % 2 ? SIDE - 1 - i : i;
                q[0] = (float)x + 0.3f * (pleat_scene_uniform(&rng) - 0.5f);
                q[1] = (float)j + 0.3f * (pleat_scene_uniform(&rng) - 0.5f);
                q[2] = 0.6f * (float)l + 0.1f * (pleat_scene_uniform(&rng) - 0.5f);
                q[3] = k % 7 == 0 ? 0.0f : 1.0f;
                /* the unfolded sheet, 0.85 apart: mesh neighbours are closer
                 * than the distance at rest and never collide */
                float *r = rest + 4 * k;
                r[0] = 0.85f * (float)(l * SIDE + i);
                r[1] = 0.85f * (float)j;
                r[2] = 0.0f;
                r[3] = 1.0f;
            }
}

static uint32_t *pleat_list(pleat_context *ctx, const float *p, const pleat_params *params,
                            size_t *num)
{
    cr_assert_eq(pleat_find_pairs(ctx, p, N, params, NULL, 0, num), PLEAT_OK);
    uint32_t *pairs = malloc((2 * *num + 1) * sizeof *pairs);
    cr_assert(pairs);
    size_t again = 0;
    cr_assert_eq(pleat_find_pairs(ctx, p, N, params, pairs, *num, &again), PLEAT_OK);
    cr_assert_eq(again, *num);
    return pairs;
}

/* Checks pleat's list against the reference; returns the reference pairs. */
static uint32_t *compare_with_reference(const float *p, const pleat_params *params,
                                        const char *what, size_t *ref_count)
{
    pleat_context *ctx = hz_context("", 0);
    double t0 = now_s();
    size_t num = 0;
    uint32_t *pairs = pleat_list(ctx, p, params, &num);
    double t1 = now_s();
    pleat_context_destroy(ctx); /* its scratch is not needed by the reference */
    size_t ref_num = 0;
    uint32_t *ref = grid_reference_pairs(p, N, NULL, 0, params->rest_positions, params->distance,
                                         &ref_num);
    double t2 = now_s();
    cr_assert_neq(ref_num, SIZE_MAX, "the grid reference ran out of room");
    fprintf(stderr, "scale %s: %zu pairs (pleat %.2f s for count + list, reference %.2f s)\n",
            what, num, t1 - t0, t2 - t1);
    cr_assert_eq(num, ref_num, "%s: pleat %zu pairs, reference %zu", what, num, ref_num);
    if (memcmp(pairs, ref, 2 * num * sizeof *pairs) != 0) {
        for (size_t k = 0; k < num; ++k)
            cr_assert(pairs[2 * k] == ref[2 * k] && pairs[2 * k + 1] == ref[2 * k + 1],
                      "%s: pair %zu: pleat (%u, %u), reference (%u, %u)", what, k, pairs[2 * k],
                      pairs[2 * k + 1], ref[2 * k], ref[2 * k + 1]);
    }
    cr_assert(num > N / 2, "the scene has pairs");
    free(pairs);
    *ref_count = ref_num;
    return ref;
}

Test(scale, sixteen_million_particles, .timeout = 3600)
{
    float *p = malloc(16 * (size_t)N), *rest = malloc(16 * (size_t)N);
    cr_assert(p && rest);
    make_sheet(p, rest);
    pleat_params params = pleat_default_params();
    params.distance = 0.9f;

    size_t num = 0;
    free(compare_with_reference(p, &params, "no rest", &num));
    params.rest_positions = rest;
    uint32_t *ref = compare_with_reference(p, &params, "rest", &num);

    /* which particles are in a pair (with rest positions) */
    uint8_t *in_pair = calloc(N / 8, 1);
    cr_assert(in_pair);
    for (size_t k = 0; k < 2 * num; ++k)
        in_pair[ref[k] / 8] |= (uint8_t)(1u << (ref[k] % 8));
    free(ref);

    float *one = malloc(16 * (size_t)N);
    cr_assert(one);
    memcpy(one, p, 16 * (size_t)N);
    pleat_context *all = hz_context("", 0);
    pleat_stats st;
    double t0 = now_s();
    float *q = malloc(16 * (size_t)N);
    cr_assert(q);
    memcpy(q, p, 16 * (size_t)N);
    cr_assert_eq(pleat_self_collide(all, q, N, &params, &st), PLEAT_OK);
    double t1 = now_s();
    fprintf(stderr, "scale self_collide (%s): %.2f s, %llu pairs, %llu tests\n",
            pleat_context_describe(all), t1 - t0, (unsigned long long)st.pairs,
            (unsigned long long)st.tests);
    cr_assert_eq(st.pairs, num);
    pleat_context_destroy(all);
    for (size_t i = 0; i < N; ++i) {
        const float *a = p + 4 * i, *b = q + 4 * i;
        cr_assert(isfinite(b[0]) && isfinite(b[1]) && isfinite(b[2]));
        if (a[3] == 0.0f || !(in_pair[i / 8] >> (i % 8) & 1))
            cr_assert(memcmp(a, b, 16) == 0, "particle %zu moved", i);
        cr_assert(memcmp(a + 3, b + 3, 4) == 0);
    }
    pleat_context *single = hz_context("", 1);
    cr_assert_eq(pleat_self_collide(single, one, N, &params, NULL), PLEAT_OK);
    cr_assert(memcmp(one, q, 16 * (size_t)N) == 0, "same bits with one thread and with all");
    pleat_context_destroy(single);
    free(one);
    free(q);
    free(in_pair);
    free(p);
    free(rest);
}

Test(scale, a_pair_count_above_two_to_the_32, .timeout = 3600)
{
    /* n (n - 1) / 2 > 2^32 for n = 92,700 */
    const uint32_t n = 92700;
    const uint64_t want = (uint64_t)n * (n - 1) / 2;
    float *p = calloc(4 * (size_t)n, sizeof *p);
    cr_assert(p);
    for (uint32_t i = 0; i < n; ++i)
        p[4 * (size_t)i + 3] = 1.0f;
    pleat_params params = pleat_default_params();
    params.distance = 1.0f;
    pleat_context *ctx = hz_context("", 0);
    double t0 = now_s();
    size_t total = 0;
    cr_assert_eq(pleat_find_pairs(ctx, p, n, &params, NULL, 0, &total), PLEAT_OK);
    fprintf(stderr, "scale: %zu coincident pairs counted in %.2f s\n", total, now_s() - t0);
    cr_assert_eq((uint64_t)total, want);
    uint32_t one[2] = {7, 7};
    total = 0;
    cr_assert_eq(pleat_find_pairs(ctx, p, n, &params, one, 1, &total), PLEAT_ERROR_CAPACITY);
    cr_assert((uint64_t)total == want && one[0] == 7 && one[1] == 7);
    pleat_context_destroy(ctx);
    free(p);
}
