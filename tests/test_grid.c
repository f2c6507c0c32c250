/* Grid setup and keys (core/grid.h), column starts and candidate lists
 * (core/columns.h), all shared with CUDA. */
#include "core/columns.h"
#include "core/grid.h"
#include "scenes.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

Test(grid, sweep_axis_tie_rule)
{
    cr_assert_eq(pleat_sweep_axis(1, 1, 1), 2);
    cr_assert_eq(pleat_sweep_axis(2, 2, 1), 1);
    cr_assert_eq(pleat_sweep_axis(2, 1, 2), 2);
    cr_assert_eq(pleat_sweep_axis(3, 1, 2), 0);
    cr_assert_eq(pleat_sweep_axis(1, 3, 3), 2);
    cr_assert_eq(pleat_sweep_axis(1, 3, 2), 1);
    cr_assert_eq(pleat_sweep_axis(1, 2, 3), 2);
    float lo[3] = {0, 0, 0}, hi[3] = {1, 5, 2};
    pleat_grid g = pleat_grid_setup(lo, hi, 0.1f);
    cr_assert(g.sweep == 1 && g.hash0 == 2 && g.hash1 == 0);
}

Test(grid, cell_sizes)
{
    float lo[3] = {-1, 0, 0}, hi[3] = {1, 100, 4};
    /* distance larger than edge / 253 on the hash axes: cells of distance * margin */
    pleat_grid g = pleat_grid_setup(lo, hi, 0.5f);
    cr_assert_eq(g.sweep, 1);
    cr_assert_float_eq(1.0f / g.scale[0], 0.5f * PLEAT_HASH_MARGIN, 1e-6f);
    cr_assert_float_eq(1.0f / g.scale[2], 0.5f * PLEAT_HASH_MARGIN, 1e-6f);
    cr_assert_float_eq(g.scale[1], 65533.0f / 100.0f, 1e-2f);
    cr_assert_eq(g.sweep_reach, 2u + (uint32_t)(655.33f * 0.5f + PLEAT_SWEEP_SLACK));
    /* distance smaller: cells of edge / 253 */
    g = pleat_grid_setup(lo, hi, 0.001f);
    cr_assert_float_eq(1.0f / g.scale[0], 2.0f / 253.0f, 1e-6f);
    cr_assert_float_eq(1.0f / g.scale[2], 4.0f / 253.0f, 1e-6f);
    cr_assert_eq(g.sweep_reach, 2u);
}

/* The grid's numbers, written out here rather than taken from grid.h's
 * macros: 253 and 65533 cells (DESIGN.md §1) and the two margins the
 * README's "How it works" adds, a hash cell at least distance * (1 + 2^-10)
 * wide and a sweep reach of 2 + floor(scale * distance + 1/16). The box makes every cell size exact
 * (edges of 253 / 4, 253 / 8 and 65533 / 16); the two distances put scale * distance just below 3
 * (2.96875: the 1/16 lifts it to 3) and below 3 by more than 1/16 (2.875: it stays at 2), and are
 * exact with the margin (95 * 1025 * 2^-19 and 23 * 1025 * 2^-17). */
Test(grid, the_design_numbers)
{
    const float lo[3] = {0, 0, 0}, hi[3] = {65533.0f / 16, 253.0f / 4, 253.0f / 8};
    const float d[2] = {95.0f / 512, 23.0f / 128};
    const float margin_cell[2] = {95.0f * 1025 / 0x1p19f, 23.0f * 1025 / 0x1p17f};
    const uint32_t reach[2] = {2 + 3, 2 + 2};
    for (int k = 0; k < 2; ++k) {
        pleat_grid g = pleat_grid_setup(lo, hi, d[k]);
        cr_assert(g.sweep == 0 && g.hash0 == 1 && g.hash1 == 2);
        cr_assert_eq(g.scale[0], 16.0f);
        cr_assert_eq(g.scale[1], 4.0f, "edge / 253 is wider than the margin cell");
        cr_assert_eq(g.scale[2], 1.0f / margin_cell[k], "the margin cell is wider");
        cr_assert_eq(g.sweep_reach, reach[k]);
        /* cells from 1: sweep 0.5 * 16 + 1, hash 0.6 * 4 + 1, 0.3 / cell + 1 */
        cr_assert_eq(pleat_grid_key(&g, 0.5f, 0.6f, 0.3f), 9u | 3u << 16 | 2u << 24);
    }
}

Test(grid, flat_and_point_boxes)
{
    float lo[3] = {3, 3, 3}, hi[3] = {3, 3, 3};
    pleat_grid g = pleat_grid_setup(lo, hi, 0.25f);
    for (int a = 0; a < 3; ++a)
        cr_assert(isfinite(g.scale[a]) && g.scale[a] > 0.0f);
    cr_assert_eq(pleat_grid_key(&g, 3, 3, 3), 1u | 1u << 16 | 1u << 24);
    cr_assert_leq(g.sweep_reach, 2u + PLEAT_SWEEP_CELLS);
    float lo2[3] = {0, 0, 7}, hi2[3] = {10, 20, 7}; /* a plane z = 7 */
    g = pleat_grid_setup(lo2, hi2, 0.25f);
    cr_assert_eq(g.sweep, 1);
    uint32_t k = pleat_grid_key(&g, 10, 20, 7);
    cr_assert_eq(k & 0xffff, PLEAT_SWEEP_CELLS + 1);
}

Test(grid, clamping_keeps_sentinels_empty)
{
    float lo[3] = {0, 0, 0}, hi[3] = {10, 1, 1};
    pleat_grid g = pleat_grid_setup(lo, hi, 0.001f);
    const float probes[][3] = {{-1e30f, -5, -5}, {1e30f, 50, 50}, {10, 1, 1}, {0, 0, 0},
                               {-INFINITY, INFINITY, 0}};
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; ++i) {
        uint32_t k = pleat_grid_key(&g, probes[i][0], probes[i][1], probes[i][2]);
        uint32_t s = k & 0xffff, h0 = (k >> 16) & 0xff, h1 = k >> 24;
        cr_assert(s >= 1 && s <= PLEAT_SWEEP_CELLS + 1, "sweep cell %u", s);
        cr_assert(h0 >= 1 && h0 <= PLEAT_HASH_CELLS + 1, "hash0 cell %u", h0);
        cr_assert(h1 >= 1 && h1 <= PLEAT_HASH_CELLS + 1, "hash1 cell %u", h1);
    }
    cr_assert_eq(pleat_grid_key(&g, -1, -1, -1), 1u | 1u << 16 | 1u << 24);
    /* past the upper corner: the last usable cells, not the sentinels */
    cr_assert_eq(pleat_grid_key(&g, 1e30f, 50, 50),
                 (PLEAT_SWEEP_CELLS + 1) | (PLEAT_HASH_CELLS + 1) << 16 |
                     (uint32_t)(PLEAT_HASH_CELLS + 1) << 24);
}

Test(grid, huge_distance_reach_is_clamped)
{
    float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    pleat_grid g = pleat_grid_setup(lo, hi, 1e19f);
    cr_assert_eq(g.sweep_reach, 2u + PLEAT_SWEEP_CELLS);
    uint32_t first, last, key = 5u | 7u << 16 | 9u << 24;
    pleat_key_range(key, g.sweep_reach, &first, &last);
    cr_assert_eq(first, key & ~0xffffu);
    cr_assert_eq(last, key | 0xffffu);
}

Test(grid, key_range_stays_in_column)
{
    uint32_t col = 3u << 16 | 200u << 24, first, last;
    pleat_key_range(col | 1u, 10, &first, &last);
    cr_assert_eq(first, col);
    cr_assert_eq(last, col | 11u);
    pleat_key_range(col | 0xfffeu, 10, &first, &last);
    cr_assert_eq(first, col | (0xfffeu - 10));
    cr_assert_eq(last, col | 0xffffu);
}

/* The margins: any two points at most `distance` apart land in neighbouring
 * hash cells and within the sweep reach, for boxes far from the origin and
 * of every aspect. */
Test(grid, close_points_are_neighbours)
{
    uint64_t rng = 2024;
    for (int box = 0; box < 200; ++box) {
        float offset = (pleat_scene_uniform(&rng) - 0.5f) * 2e5f;
        float lo[3], hi[3];
        for (int a = 0; a < 3; ++a) {
            lo[a] = offset + pleat_scene_uniform(&rng);
            hi[a] = lo[a] + powf(10.0f, 3.0f * pleat_scene_uniform(&rng));
        }
        float d = powf(10.0f, -2.0f + 2.0f * pleat_scene_uniform(&rng));
        pleat_grid g = pleat_grid_setup(lo, hi, d);
        for (int t = 0; t < 2000; ++t) {
            float p[3], q[3], dir[3], len = 0;
            for (int a = 0; a < 3; ++a) {
                p[a] = lo[a] + pleat_scene_uniform(&rng) * (hi[a] - lo[a]);
                dir[a] = pleat_scene_uniform(&rng) - 0.5f;
                len += dir[a] * dir[a];
            }
            len = sqrtf(len);
            for (int a = 0; a < 3; ++a)
                q[a] = p[a] + dir[a] / len * d;
            float l2 = (q[0] - p[0]) * (q[0] - p[0]) + (q[1] - p[1]) * (q[1] - p[1]);
            l2 = l2 + (q[2] - p[2]) * (q[2] - p[2]);
            if (!(l2 <= d * d))
                continue; /* rounding put it outside: not a pair */
            uint32_t kp = pleat_grid_key(&g, p[0], p[1], p[2]);
            uint32_t kq = pleat_grid_key(&g, q[0], q[1], q[2]);
            int dh0 = (int)((kp >> 16) & 0xff) - (int)((kq >> 16) & 0xff);
            int dh1 = (int)(kp >> 24) - (int)(kq >> 24);
            int ds = (int)(kp & 0xffff) - (int)(kq & 0xffff);
            cr_assert(abs(dh0) <= 1 && abs(dh1) <= 1, "box %d: hash cells %d %d apart", box, dh0,
                      dh1);
            cr_assert(abs(ds) < (int)g.sweep_reach, "box %d: sweep cells %d apart, reach %u", box,
                      ds, g.sweep_reach);
        }
    }
}

/* Adversarial version of the above: particles just below a cell boundary and
 * partners exactly (or one ulp less than) the distance away along one axis,
 * with distances that make the scaled gap land just below an integer. These
 * are the pairs that float rounding loses without the margins. */
static void check_axis_pairs(const pleat_grid *g, const float lo[3], float d, int axis)
{
    float cell = 1.0f / g->scale[axis];
    int cells = axis == g->sweep ? 2000 : (int)PLEAT_HASH_CELLS;
    for (int k = 1; k < cells; ++k) {
        float base = lo[axis] + (float)k * cell;
        float p = base;
        for (int step = 0; step < 6; ++step, p = nextafterf(p, -INFINITY)) {
            float q = p + d;
            while ((q - p) * (q - p) > d * d)
                q = nextafterf(q, -INFINITY);
            float pp[3] = {lo[0], lo[1], lo[2]}, qq[3] = {lo[0], lo[1], lo[2]};
            pp[axis] = p;
            qq[axis] = q;
            uint32_t kp = pleat_grid_key(g, pp[0], pp[1], pp[2]);
            uint32_t kq = pleat_grid_key(g, qq[0], qq[1], qq[2]);
            int dh0 = (int)((kq >> 16) & 0xff) - (int)((kp >> 16) & 0xff);
            int dh1 = (int)(kq >> 24) - (int)(kp >> 24);
            int ds = (int)(kq & 0xffff) - (int)(kp & 0xffff);
            cr_assert(dh0 <= 1 && dh1 <= 1, "axis %d cell %d: hash cells %d %d apart", axis, k,
                      dh0, dh1);
            cr_assert(ds < (int)g->sweep_reach, "cell %d: sweep cells %d apart, reach %u", k, ds,
                      g->sweep_reach);
        }
    }
}

Test(grid, boundary_pairs_are_neighbours)
{
    const float offsets[] = {0.0f, 1e3f, -7.5e4f, 1e5f};
    for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; ++o) {
        float lo[3] = {offsets[o], offsets[o] + 1, offsets[o] - 2};
        float hi[3] = {lo[0] + 3000.0f, lo[1] + 20.0f, lo[2] + 10.0f};
        /* hash cells = distance (distance > edge / 253) */
        for (float d = 0.1f; d < 1.0f; d += 0.0731f) {
            pleat_grid g = pleat_grid_setup(lo, hi, d);
            check_axis_pairs(&g, lo, d, g.hash0);
            check_axis_pairs(&g, lo, d, g.hash1);
        }
        /* sweep reach: distances whose scaled size is just below an integer */
        pleat_grid g0 = pleat_grid_setup(lo, hi, 1.0f);
        for (int cells = 1; cells < 40; cells += 3) {
            float d = nextafterf((float)cells / g0.scale[g0.sweep], -INFINITY);
            pleat_grid g = pleat_grid_setup(lo, hi, d);
            check_axis_pairs(&g, lo, d, g.sweep);
        }
    }
}

static uint32_t pick(uint64_t *rng, uint32_t n)
{
    return (uint32_t)(pleat_scene_random(rng) % n);
}

/* A key in one of a few columns of a hash grid's corners and middle, with a
 * sweep cell near either end of the axis or near the middle, so that ranges
 * meet the sentinels and the neighbouring columns are often full. */
static uint32_t clustered_key(uint64_t *rng, const uint32_t columns[4], uint32_t centre)
{
    uint32_t s = centre + pick(rng, 200);
    s = s < 1 ? 1 : s > 0xfffeu ? 0xfffeu : s;
    return s | columns[pick(rng, 4)] << 16;
}

static int compare_keys(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Whether slot b is a candidate of slot a in the k-th column a tests
 * (core/columns.h): the column k names, by its hash cells; a sweep cell fewer
 * than `reach` cells away, below the end sentinel; in a's own column, later
 * slots only. */
static int is_candidate(const uint32_t *keys, uint32_t a, uint32_t b, int k, uint32_t reach)
{
    static const int dh0[PLEAT_NUM_COLUMNS] = {0, 1, -1, 0, 1};
    static const int dh1[PLEAT_NUM_COLUMNS] = {0, 0, 1, 1, 1};
    int h0a = (int)(keys[a] >> 16 & 0xff), h1a = (int)(keys[a] >> 24);
    int h0b = (int)(keys[b] >> 16 & 0xff), h1b = (int)(keys[b] >> 24);
    int64_t sa = keys[a] & 0xffff, sb = keys[b] & 0xffff;
    if (h0b != h0a + dh0[k] || h1b != h1a + dh1[k] || (k == 0 && b <= a))
        return 0;
    return sb >= sa - reach && sb < sa + reach && sb < 0xffff;
}

/* The CUDA sweep's view of the sorted keys: the column starts count the keys
 * of earlier columns, and each particle's list holds exactly its candidates,
 * column by column in slot order. Columns at the grid's edges (hash cells 1
 * and 254, where the last neighbour column is 0xffff) and sweep cells at
 * both ends are included. */
Test(grid, column_lists_hold_each_particles_candidates)
{
    enum { N = 400 };
    static const uint32_t edge[] = {1, 2, 100, 253, 254};
    static const uint32_t reaches[] = {2, 3, 40, 65535};
    static const uint32_t centres[] = {0, 30000, 0xfffeu - 150};
    static uint32_t keys[N], cols[PLEAT_COLUMNS + 1];
    uint64_t rng = 77;
    for (int trial = 0; trial < 48; ++trial) {
        uint32_t h0 = edge[pick(&rng, 5)], h1 = edge[pick(&rng, 5)];
        h0 = h0 == 254 ? 253 : h0; /* the first column is (h0, h1), the rest neighbours */
        h1 = h1 == 254 ? 253 : h1;
        const uint32_t left = h0 == 1 ? h0 : h0 - 1; /* hash cell 0 stays empty */
        const uint32_t columns[4] = {h0 | h1 << 8, (h0 + 1) | h1 << 8, left | (h1 + 1) << 8,
                                     (h0 + 1) | (h1 + 1) << 8};
        uint32_t n = 1 + pick(&rng, N), reach = reaches[trial % 4];
        for (uint32_t i = 0; i < n; ++i)
            keys[i] = clustered_key(&rng, columns, centres[pick(&rng, 3)]);
        qsort(keys, n, sizeof keys[0], compare_keys);
        uint32_t below = 0;
        for (uint32_t c = 0; c <= PLEAT_COLUMNS; ++c) {
            while (below < n && keys[below] >> 16 < c)
                ++below;
            cols[c] = pleat_column_start(keys, n, c);
            cr_assert_eq(cols[c], below, "trial %d column %u", trial, c);
        }
        for (uint32_t a = 0; a < n; ++a) {
            pleat_candidates l = pleat_find_candidates(cols, keys, a, reach);
            uint32_t t = 0;
            for (int k = 0; k < PLEAT_NUM_COLUMNS; ++k)
                for (uint32_t b = 0; b < n; ++b)
                    if (is_candidate(keys, a, b, k, reach)) {
                        cr_assert(t < l.total, "trial %d slot %u: list too short", trial, a);
                        cr_assert_eq(pleat_candidate(&l, t), b, "trial %d slot %u entry %u", trial,
                                     a, t);
                        ++t;
                    }
            cr_assert_eq(t, l.total, "trial %d slot %u: list too long", trial, a);
        }
    }
}
