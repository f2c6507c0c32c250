/*
 * Grid setup and grid keys (README, How it works), shared by the CPU kernels and the
 * CUDA kernels so both compute the same keys from the same floats.
 *
 * The box of the taking-part particles is cut into 254 cells on each of the
 * two short (hash) axes and 65534 cells on the long (sweep) axis, coordinates
 * offset by one so that cell 0 and the last value of each field are empty
 * sentinels. A key packs sweep | hash0 << 16 | hash1 << 24.
 *
 * Two margins keep pairs from being lost to float rounding (the scaled
 * coordinate of a particle carries an error of a few ulps of 65535):
 * - a hash cell is at least distance * (1 + 2^-10) wide, so a pair at most
 *   distance apart is never two hash cells apart;
 * - the sweep reach is 2 + floor(scale * distance + 1/16) cells, not
 *   2 + floor(scale * distance), so a pair whose scaled gap sits just below an
 *   integer is still inside the half-open key range.
 */
#ifndef PLEAT_CORE_GRID_H
#define PLEAT_CORE_GRID_H

#include "hd.h"

#include <float.h>
#include <stdint.h>

#define PLEAT_HASH_CELLS 253u            /* usable cells on a hash axis */
#define PLEAT_SWEEP_CELLS 65533u         /* usable cells on the sweep axis */
/* The highest cell on each kind of axis: pleat_grid_cell's `size` */
#define PLEAT_HASH_TOP ((float)(PLEAT_HASH_CELLS + 1u))
#define PLEAT_SWEEP_TOP ((float)(PLEAT_SWEEP_CELLS + 1u))
#define PLEAT_HASH_MARGIN (1.0f + 0x1p-10f)
#define PLEAT_SWEEP_SLACK 0.0625f
/* Edges shorter than this count as this long: keeps 1 / cell size finite for
 * flat or single-point boxes. */
#define PLEAT_MIN_EDGE 0x1p-96f

/* The columns a particle tests: its own and 4 neighbours, +1 hash0,
 * +1 hash1 -1 hash0, +1 hash1, +1 hash1 +1 hash0 (their key offsets:
 * pleat_column_offset). */
#define PLEAT_NUM_COLUMNS 5
#define PLEAT_KEY_SWEEP_MASK 0xffffu

typedef struct pleat_grid {
    float lower[3];       /* box corner, per axis */
    float scale[3];       /* 1 / cell size, per axis */
    int sweep;            /* axis of the longest edge */
    int hash0, hash1;     /* (sweep + 1) % 3, (sweep + 2) % 3 */
    uint32_t sweep_reach; /* cells to look either way along the sweep axis */
} pleat_grid;

PLEAT_HD uint32_t pleat_column_offset(int column)
{
    /* column 0 is the particle's own */
    return column == 0 ? 0u
         : column == 1 ? 0x00010000u
         : column == 2 ? 0x00ff0000u
         : column == 3 ? 0x01000000u
                       : 0x01010000u;
}

/* The seed's tie rule: the first strictly longer axis wins from the right. */
PLEAT_HD int pleat_sweep_axis(float e0, float e1, float e2)
{
    if (e0 > e1)
        return e0 > e2 ? 0 : 2;
    return e1 > e2 ? 1 : 2;
}

PLEAT_HD float pleat_clamp_edge(float edge)
{
    /* FLT_MAX keeps the scale above zero when upper - lower overflows */
    edge = edge > PLEAT_MIN_EDGE ? edge : PLEAT_MIN_EDGE;
    return edge < FLT_MAX ? edge : FLT_MAX;
}

/* lower/upper: the box of the taking-part particles; distance >= 0, finite
 * (0: a call that finds nothing still sets one up, unused). */
PLEAT_HD pleat_grid pleat_grid_setup(const float lower[3], const float upper[3], float distance)
{
    pleat_grid g;
    float edge[3];
    for (int a = 0; a < 3; ++a) {
        edge[a] = pleat_clamp_edge(upper[a] - lower[a]);
        g.lower[a] = lower[a] + 0.0f; /* -0 -> +0: min() may pick either zero */
    }
    g.sweep = pleat_sweep_axis(edge[0], edge[1], edge[2]);
    g.hash0 = (g.sweep + 1) % 3;
    g.hash1 = (g.sweep + 2) % 3;

    float min_cell = distance * PLEAT_HASH_MARGIN;
    for (int h = 0; h < 2; ++h) {
        int a = h == 0 ? g.hash0 : g.hash1;
        float cell = edge[a] / (float)PLEAT_HASH_CELLS;
        cell = cell > min_cell ? cell : min_cell;
        g.scale[a] = 1.0f / cell;
    }
    g.scale[g.sweep] = (float)PLEAT_SWEEP_CELLS / edge[g.sweep];

    /* clamp before converting: a huge distance would overflow the integer */
    float reach = g.scale[g.sweep] * distance + PLEAT_SWEEP_SLACK;
    reach = reach < (float)PLEAT_SWEEP_CELLS ? reach : (float)PLEAT_SWEEP_CELLS;
    g.sweep_reach = 2u + (uint32_t)reach;
    return g;
}

/* Cell of coordinate p on an axis with `size` as its last usable cell. The
 * clamp keeps rounding (and, for a caller's own grid, particles that left the
 * box) out of the sentinel cells. */
PLEAT_HD uint32_t pleat_grid_cell(float p, float lower, float scale, float size)
{
    float t = (p - lower) * scale + 1.0f;
    t = t > 1.0f ? t : 1.0f;
    t = t < size ? t : size;
    return (uint32_t)t;
}

PLEAT_HD uint32_t pleat_grid_key(const pleat_grid *g, float x, float y, float z)
{
    float p[3] = {x, y, z};
    uint32_t s = pleat_grid_cell(p[g->sweep], g->lower[g->sweep], g->scale[g->sweep],
                                 PLEAT_SWEEP_TOP);
    uint32_t h0 = pleat_grid_cell(p[g->hash0], g->lower[g->hash0], g->scale[g->hash0],
                                  PLEAT_HASH_TOP);
    uint32_t h1 = pleat_grid_cell(p[g->hash1], g->lower[g->hash1], g->scale[g->hash1],
                                  PLEAT_HASH_TOP);
    return s | h0 << 16 | h1 << 24;
}

/* Half-open key range [*first, *last) of a particle's own column that holds
 * every key within sweep_reach cells; add pleat_column_offset() to both ends
 * for a neighbouring column. */
PLEAT_HD void pleat_key_range(uint32_t key, uint32_t reach, uint32_t *first, uint32_t *last)
{
    uint32_t s = key & PLEAT_KEY_SWEEP_MASK;
    *first = key - (reach < s ? reach : s);
    uint32_t end = key | PLEAT_KEY_SWEEP_MASK;
    *last = key + reach < end ? key + reach : end;
}

/* First position in keys[0..n) (sorted) whose key is >= target: where a
 * sweep's cursor starts. */
PLEAT_HD uint32_t pleat_lower_bound(const uint32_t *keys, uint32_t n, uint32_t target)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < target)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#endif
