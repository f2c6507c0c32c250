/* Stage 1: check the taking-part particles, find their box, compute keys. */
#include "cpu.h"

#include <math.h>
#include <string.h>

pleat_status pleat_cpu_check_indices(const uint32_t *indices, uint32_t num, uint32_t count,
                                     uint8_t *seen)
{
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

static void bounds_task(void *arg, uint32_t chunk)
{
    const pleat_frame *f = arg;
    pleat_chunk *c = &f->chunks[chunk];
    for (int a = 0; a < 3; ++a) {
        c->lower[a] = INFINITY;
        c->upper[a] = -INFINITY;
    }
    c->nonfinite = c->negative_mass = 0;
    uint32_t end = pleat_chunk_end(chunk, f->m);
    for (uint32_t s = chunk * PLEAT_CHUNK; s < end; ++s) {
        uint32_t i = pleat_frame_particle(f, s);
        const float *p = f->particles + 4 * (size_t)i;
        for (int a = 0; a < 4; ++a)
            c->nonfinite |= !isfinite(p[a]);
        c->negative_mass |= p[3] < 0.0f;
        if (f->rest) {
            const float *r = f->rest + 4 * (size_t)i;
            for (int a = 0; a < 3; ++a)
                c->nonfinite |= !isfinite(r[a]);
        }
        for (int a = 0; a < 3; ++a) {
            c->lower[a] = p[a] < c->lower[a] ? p[a] : c->lower[a];
            c->upper[a] = p[a] > c->upper[a] ? p[a] : c->upper[a];
        }
    }
}

pleat_status pleat_cpu_bounds(pleat_frame *f, pleat_pool *pool)
{
    uint32_t chunks = pleat_chunks(f->m);
    pleat_pool_run(pool, chunks, bounds_task, f);
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

static void keys_task(void *arg, uint32_t chunk)
{
    pleat_frame *f = arg;
    uint32_t end = pleat_chunk_end(chunk, f->m);
    for (uint32_t s = chunk * PLEAT_CHUNK; s < end; ++s) {
        uint32_t i = pleat_frame_particle(f, s);
        const float *p = f->particles + 4 * (size_t)i;
        uint32_t key = pleat_grid_key(&f->grid, p[0], p[1], p[2]);
        f->packed[s] = (uint64_t)key << 32 | i;
    }
}

void pleat_cpu_keys(pleat_frame *f, pleat_pool *pool)
{
    pleat_pool_run(pool, pleat_chunks(f->m), keys_task, f);
}
