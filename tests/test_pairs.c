/* pleat_find_pairs against an O(n^2) brute force: identical pair lists on
 * every scene kind, with and without rest positions and index subsets. */
#include "scenes.h"
#include "support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Returns the number of pairs. */
static size_t compare_with_brute_force(pleat_context *ctx, const scene *s, const pleat_params *p,
                                       const char *what)
{
    size_t expect_n, got_n;
    uint32_t *expect = brute_force_pairs(s->particles, s->count, p, &expect_n);
    uint32_t *got = pleat_pairs(ctx, s->particles, s->count, p, &got_n);
    cr_assert_eq(got_n, expect_n, "%s: %zu pairs, brute force %zu", what, got_n, expect_n);
    for (size_t k = 0; k < 2 * got_n; ++k)
        cr_assert_eq(got[k], expect[k], "%s: pair %zu differs: (%u, %u) vs (%u, %u)", what, k / 2,
                     got[k & ~(size_t)1], got[k | 1], expect[k & ~(size_t)1], expect[k | 1]);
    /* self_collide must count the same pairs */
    float *work = copy_floats(s->particles, (size_t)s->count * 4);
    pleat_stats stats;
    cr_assert_eq(pleat_self_collide(ctx, work, s->count, p, &stats), PLEAT_OK);
    cr_assert_eq(stats.pairs, expect_n, "%s: self_collide counted %llu", what,
                 (unsigned long long)stats.pairs);
    free(work);
    free(got);
    free(expect);
    return expect_n;
}

static void run_scenes(int with_rest, int with_subset)
{
    pleat_context *ctx = cpu_context(2);
    uint64_t rng = 12345 + 2 * with_rest + with_subset;
    size_t total_pairs = 0;
    for (int kind = 0; kind < SCENE_KIND_COUNT; ++kind) {
        for (int rep = 0; rep < 12; ++rep) {
            uint32_t n = 50 + (uint32_t)(pleat_scene_random(&rng) % 1500);
            scene s = scene_make((scene_kind)kind, n, with_rest, pleat_scene_random(&rng));
            pleat_params p = pleat_default_params();
            p.distance = s.distance;
            p.rest_positions = s.rest;
            uint32_t *subset = NULL;
            if (with_subset) {
                subset = random_subset(s.count, pleat_scene_random(&rng), &p.num_indices);
                p.indices = subset;
            }
            char what[128];
            snprintf(what, sizeof what, "%s n=%u rest=%d subset=%u rep=%d", scene_name(kind),
                     s.count, with_rest, with_subset ? p.num_indices : s.count, rep);
            compare_with_brute_force(ctx, &s, &p, what);
            size_t n_pairs;
            free(brute_force_pairs(s.particles, s.count, &p, &n_pairs));
            total_pairs += n_pairs;
            free(subset);
            scene_free(&s);
        }
    }
    cr_assert_gt(total_pairs, 1000, "the scenes must actually collide");
    pleat_context_destroy(ctx);
}

Test(pairs, all_scenes_plain) { run_scenes(0, 0); }
Test(pairs, all_scenes_rest) { run_scenes(1, 0); }
Test(pairs, all_scenes_subset) { run_scenes(0, 1); }
Test(pairs, all_scenes_rest_and_subset) { run_scenes(1, 1); }

/* Pairs exactly at the distance count (<=); a hair further do not. Lattice
 * points on integers make the squared lengths exact. */
Test(pairs, boundary_is_inclusive)
{
    pleat_context *ctx = cpu_context(1);
    float pts[] = {0, 0, 0, 1, 1, 0, 0, 1, 0, 2, 0, 1, 0, 0, 3.0f, 1};
    pleat_params p = pleat_default_params();
    p.distance = 1.0f;
    size_t n;
    uint32_t *pairs = pleat_pairs(ctx, pts, 4, &p, &n);
    cr_assert_eq(n, 1);
    cr_assert(pairs[0] == 0 && pairs[1] == 1);
    free(pairs);
    p.distance = 0.99999994f; /* the float below 1 */
    pairs = pleat_pairs(ctx, pts, 4, &p, &n);
    cr_assert_eq(n, 0);
    free(pairs);
    pleat_context_destroy(ctx);
}

/* The rest rule ignores a pair only when its rest positions are closer than
 * the distance (README, Semantics: |r_j - r_i|^2 < d^2): exactly d apart at rest it
 * still collides, a float closer it does not. Both pairs are 0.5 apart
 * now; the squared rest lengths are exact. */
Test(pairs, rest_boundary_is_exclusive)
{
    pleat_context *ctx = cpu_context(1);
    float pts[] = {0, 0, 0, 1, 0.5f, 0, 0, 1, 0, 3, 0, 1, 0.5f, 3, 0, 1};
    float rest[] = {0, 0, 0, 0, 1, 0, 0, 0, 0, 3, 0, 0, 0.99999994f, 3, 0, 0};
    pleat_params p = pleat_default_params();
    p.distance = 1.0f;
    p.rest_positions = rest;
    size_t n;
    uint32_t *pairs = pleat_pairs(ctx, pts, 4, &p, &n);
    cr_assert_eq(n, 1);
    cr_assert(pairs[0] == 0 && pairs[1] == 1, "pair %u-%u", pairs[0], pairs[1]);
    free(pairs);
    float before[16];
    memcpy(before, pts, sizeof pts);
    cr_assert_eq(pleat_self_collide(ctx, pts, 4, &p, NULL), PLEAT_OK);
    cr_assert(pts[0] < 0.0f && pts[4] > 0.5f, "the pair at rest distance d moves");
    cr_assert(memcmp(pts + 8, before + 8, 8 * sizeof(float)) == 0, "the closer one does not");
    pleat_context_destroy(ctx);
}

/* A pair whose second particle is the highest index, at counts 2^k + 1:
 * the pair list packs i and j into the bits that hold any index below the
 * count, and one bit short would lose it. The others are 10 apart. */
Test(pairs, highest_index_at_counts_just_past_a_power_of_two)
{
    pleat_context *ctx = cpu_context(2);
    const int powers[] = {1, 2, 5, 8, 13, 16, 17};
    for (size_t k = 0; k < sizeof powers / sizeof powers[0]; ++k) {
        uint32_t count = (1u << powers[k]) + 1;
        float *pts = malloc(16 * (size_t)count);
        cr_assert(pts);
        for (uint32_t i = 0; i < count; ++i) {
            float *q = pts + 4 * (size_t)i;
            q[0] = 10.0f * (float)i;
            q[1] = q[2] = 0.0f;
            q[3] = 1.0f;
        }
        pts[4 * (size_t)(count - 1)] = 0.5f; /* beside particle 0 */
        pleat_params p = pleat_default_params();
        p.distance = 1.0f;
        size_t n;
        uint32_t *pairs = pleat_pairs(ctx, pts, count, &p, &n);
        cr_assert_eq(n, 1, "count %u: %zu pairs", count, n);
        cr_assert(pairs[0] == 0 && pairs[1] == count - 1, "count %u: pair %u-%u", count,
                  pairs[0], pairs[1]);
        free(pairs);
        free(pts);
    }
    pleat_context_destroy(ctx);
}

/* More particles than NvCloth's 65535 cap, on a lattice whose pair count is
 * known in closed form: with distance = spacing each particle pairs with
 * its 4 grid neighbours only. */
Test(pairs, beyond_65535_particles_lattice)
{
    const uint32_t res = 300, n = res * res;
    float *pts = malloc((size_t)n * 4 * sizeof *pts);
    cr_assert(pts);
    for (uint32_t j = 0; j < res; ++j)
        for (uint32_t i = 0; i < res; ++i) {
            float *q = pts + 4 * ((size_t)j * res + i);
            q[0] = (float)i;
            q[1] = (float)j;
            q[2] = 0.0f;
            q[3] = 1.0f;
        }
    pleat_context *ctx = cpu_context(2);
    pleat_params p = pleat_default_params();
    p.distance = 1.0f;
    size_t num;
    uint32_t *pairs = pleat_pairs(ctx, pts, n, &p, &num);
    cr_assert_eq(num, (size_t)2 * res * (res - 1));
    for (size_t k = 0; k < num; ++k) {
        uint32_t i = pairs[2 * k], j = pairs[2 * k + 1];
        cr_assert(j == i + 1 || j == i + res, "pair (%u, %u) is not a lattice neighbour", i, j);
        if (k > 0)
            cr_assert(((uint64_t)pairs[2 * k - 2] << 32 | pairs[2 * k - 1]) <
                      ((uint64_t)i << 32 | j));
    }
    free(pairs);
    pleat_context_destroy(ctx);
    free(pts);
}

/* Far from the origin the cell coordinate must be computed from p - lower
 * (pleat_grid_cell): NvCloth's p * scale + bias loses pairs here. The sheet
 * is jittered, so that pairs straddle cell boundaries: on its exact
 * lattice, partners share x and y, and no rounding of the cell separates
 * them. */
Test(pairs, far_from_origin_sheet)
{
    const uint32_t res = 120;
    float *pts = malloc((size_t)res * res * 4 * sizeof *pts);
    cr_assert(pts);
    pleat_scene_folded_sheet(res, 3, 1.0f, 0.6f, pts, NULL);
    uint64_t rng = 100000;
    for (uint32_t i = 0; i < res * res; ++i) {
        pts[4 * i] += 1e5f + 0.3f * (pleat_scene_uniform(&rng) - 0.5f);
        pts[4 * i + 1] -= 1e5f + 0.3f * (pleat_scene_uniform(&rng) - 0.5f);
        pts[4 * i + 2] += 1e5f + 0.1f * (pleat_scene_uniform(&rng) - 0.5f);
    }
    pleat_context *ctx = cpu_context(1);
    pleat_params p = pleat_default_params();
    p.distance = 0.9f;
    scene s = {res * res, pts, NULL, p.distance};
    cr_assert_gt(compare_with_brute_force(ctx, &s, &p, "far sheet"), 10000);
    pleat_context_destroy(ctx);
    free(pts);
}

/* Particles 3e38 either side of the origin: the box's extent overflows a
 * float, so the grid's cell arithmetic gives +Inf for the far side, which
 * the cell clamp must bring back to the last cell on every ISA. */
Test(pairs, a_box_whose_extent_overflows_a_float)
{
    enum { GROUP = 200 };
    static const float at[3] = {-3e38f, 0.0f, 3e38f};
    float *pts = malloc(3 * GROUP * 4 * sizeof *pts);
    cr_assert(pts);
    uint64_t rng = 77;
    for (int g = 0; g < 3; ++g)
        for (int k = 0; k < GROUP; ++k) {
            float *p = pts + 4 * (g * GROUP + k);
            p[0] = at[g];
            p[1] = 4.0f * pleat_scene_uniform(&rng);
            p[2] = 4.0f * pleat_scene_uniform(&rng);
            p[3] = 1.0f;
        }
    pleat_context *ctx = cpu_context(2);
    pleat_params p = pleat_default_params();
    p.distance = 1.0f;
    scene s = {3 * GROUP, pts, NULL, p.distance};
    cr_assert_gt(compare_with_brute_force(ctx, &s, &p, "overflowing box"), 300);
    pleat_context_destroy(ctx);
    free(pts);
}

Test(pairs, zero_distance_finds_nothing)
{
    pleat_context *ctx = cpu_context(1);
    float pts[] = {0, 0, 0, 1, 0, 0, 0, 1};
    pleat_params p = pleat_default_params();
    size_t n = 99;
    cr_assert_eq(pleat_find_pairs(ctx, pts, 2, &p, NULL, 0, &n), PLEAT_OK);
    cr_assert_eq(n, 0);
    pleat_context_destroy(ctx);
}
