/* Stage 1 kernels (per ISA): check the taking-part particles and find their
 * box; then compute their grid keys. One particle is one q4 {x, y, z, w}. */
#include "cpu.h"
#include "simd.h"

#include <math.h>

void PLEAT_KERNEL(bounds_task)(void *arg, uint32_t chunk)
{
    const pleat_frame *f = arg;
    q4 lo = q4_set(INFINITY, INFINITY, INFINITY, INFINITY);
    q4 hi = q4_set(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    unsigned finite = 0xf, negative = 0;
    uint32_t end = pleat_chunk_end(chunk, f->m);
    for (uint32_t s = pleat_chunk_begin(chunk); s < end; ++s) {
        size_t i = pleat_frame_particle(f, s);
        const float *p = f->particles + 4 * i;
        q4 v = q4_load(p);
        finite &= q4_finite(v);
        negative |= p[3] < 0.0f;
        if (f->rest) /* the rest w is ignored */
            finite &= q4_finite(q4_load(f->rest + 4 * i)) | 0x8u;
        lo = q4_min(lo, v);
        hi = q4_max(hi, v);
    }
    pleat_chunk *c = &f->chunks[chunk];
    float l[4], h[4];
    q4_store(l, lo);
    q4_store(h, hi);
    for (int a = 0; a < 3; ++a) {
        c->lower[a] = l[a];
        c->upper[a] = h[a];
    }
    c->nonfinite = finite != 0xf;
    c->negative_mass = negative != 0;
}

void PLEAT_KERNEL(keys_task)(void *arg, uint32_t chunk)
{
    pleat_frame *f = arg;
    const pleat_grid *g = &f->grid;
    /* the w lane maps to cell 1 and is ignored */
    float size[3];
    size[g->sweep] = (float)(PLEAT_SWEEP_CELLS + 1u);
    size[g->hash0] = size[g->hash1] = (float)(PLEAT_HASH_CELLS + 1u);
    const q4 lower = q4_set(g->lower[0], g->lower[1], g->lower[2], 0.0f);
    const q4 scale = q4_set(g->scale[0], g->scale[1], g->scale[2], 0.0f);
    const q4 top = q4_set(size[0], size[1], size[2], 1.0f);
    const q4 one = q4_set(1.0f, 1.0f, 1.0f, 1.0f);
    uint32_t end = pleat_chunk_end(chunk, f->m);
    for (uint32_t s = pleat_chunk_begin(chunk); s < end; ++s) {
        uint32_t i = pleat_frame_particle(f, s);
        /* the operations of pleat_grid_cell(), in the same order */
        q4 t = q4_add(q4_mul(q4_sub(q4_load(f->particles + 4 * (size_t)i), lower), scale), one);
        uint32_t cell[4];
        q4_trunc(q4_min(q4_max(t, one), top), cell);
        uint32_t key = cell[g->sweep] | cell[g->hash0] << 16 | cell[g->hash1] << 24;
        f->packed[s] = (uint64_t)key << 32 | i;
    }
}
