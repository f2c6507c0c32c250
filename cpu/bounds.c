/* Stage 1 driver: index checks, then the bounds kernel on every chunk and the
 * reduction of its results, in chunk order. */
#include "bounds.h"

#include <math.h>
#include <string.h>

pleat_status pleat_cpu_check_indices(const uint32_t *indices, uint32_t num, uint32_t count,
                                     uint8_t *seen)
{
    if (count > 0) /* no bitmap was allocated for no particles */
        memset(seen, 0, ((size_t)count + 7) / 8);
    for (uint32_t s = 0; s < num; ++s) {
        uint32_t i = indices[s];
        if (i >= count)
            return PLEAT_ERROR_BAD_INDEX;
        uint8_t bit = (uint8_t)(1u << (i & 7));
        if (seen[i >> 3] & bit)
            return PLEAT_ERROR_BAD_INDEX;
        seen[i >> 3] |= bit;
    }
    return PLEAT_OK;
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
    if (f->m > 0)
        f->grid = pleat_grid_setup(lower, upper, f->consts.distance);
    return PLEAT_OK;
}
