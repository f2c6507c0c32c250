/* Stage 1 driver: index checks, then the bounds kernel on every chunk and the
 * reduction of its results, in chunk order. */
#include "bounds.h"

#include <math.h>
#include <string.h>

/* Clears the bits indices[0..set) set. A few indices of a large array are
 * cleared one by one, so a call on a small subset costs the subset, not the
 * array; else one memset is faster than scattered byte writes. */
static void clear_seen(const uint32_t *indices, uint32_t set, uint32_t count, uint8_t *seen)
{
    if ((uint64_t)set * 256 < count) {
        for (uint32_t s = 0; s < set; ++s)
            seen[indices[s] >> 3] = 0; /* its other bits are clear too */
    } else if (count > 0) { /* no bitmap was allocated for no particles */
        memset(seen, 0, pleat_seen_bytes(count));
    }
}

pleat_status pleat_cpu_check_indices(const uint32_t *indices, uint32_t num, uint32_t count,
                                     uint8_t *seen)
{
    uint32_t s = 0;
    for (; s < num; ++s) {
        uint32_t i = indices[s];
        if (i >= count)
            break;
        uint8_t bit = (uint8_t)(1u << (i & 7));
        if (seen[i >> 3] & bit)
            break;
        seen[i >> 3] |= bit;
    }
    clear_seen(indices, s, count, seen);
    return s == num ? PLEAT_OK : PLEAT_ERROR_BAD_INDEX;
}

/* Bits that hold every hash cell on an axis: a cell grows with the
 * coordinate, so none is above the upper corner's. */
static int hash_bits(const pleat_grid *g, int axis, const float upper[3])
{
    uint32_t top = pleat_grid_cell(upper[axis], g->lower[axis], g->scale[axis], PLEAT_HASH_TOP);
    return 32 - __builtin_clz(top); /* top >= 1 */
}

pleat_status pleat_cpu_bounds(pleat_frame *f, pleat_pool *pool, const pleat_kernels *kern)
{
    uint32_t chunks = pleat_chunks(f->m);
    pleat_pool_run(pool, chunks, kern->bounds, f);
    float lower[3] = {INFINITY, INFINITY, INFINITY};
    float upper[3] = {-INFINITY, -INFINITY, -INFINITY};
    int nonfinite = 0, negative = 0;
    for (uint32_t k = 0; k < chunks; ++k) {
        const pleat_chunk *c = &f->chunks[k];
        nonfinite |= c->nonfinite;
        negative |= c->negative_mass;
        for (int a = 0; a < 3; ++a) {
            lower[a] = c->lower[a] < lower[a] ? c->lower[a] : lower[a];
            upper[a] = c->upper[a] > upper[a] ? c->upper[a] : upper[a];
        }
    }
    if (nonfinite)
        return PLEAT_ERROR_NONFINITE_INPUT;
    if (negative)
        return PLEAT_ERROR_INVALID_ARGUMENT;
    if (f->m > 0) {
        f->grid = pleat_grid_setup(lower, upper, f->consts.distance);
        f->sort_shift = 16 + hash_bits(&f->grid, f->grid.hash0, upper);
        f->sort_bits = f->sort_shift + hash_bits(&f->grid, f->grid.hash1, upper);
    }
    return PLEAT_OK;
}
