/* Stage 1 kernels (per ISA): check the taking-part particles and find their
 * box; then compute their sort keys (the grid keys with hash1 moved down,
 * cpu.h). Both take W slots at a time, one per lane, with each component of
 * the W particles in one vector. In a chunk's last, partial step the lanes
 * past the chunk repeat its last slot: a repeat changes neither the box nor
 * the checks, and its key is not stored. */
#include "cpu.h"
#include "simd.h"

#include <math.h>
#include <string.h>

/* The particles of slots s, s + 1, ... (s < end) as component vectors, and
 * their rest positions too when `r` is given (each slot's particle number
 * found once); returns the particle numbers. Slots are compared as end - s:
 * s + W can pass 2^32 when m is within W of it. */
static inline vu load_slots(const pleat_frame *f, uint32_t s, uint32_t end, vf p[4], vf r[4])
{
    if (!f->indices && end - s >= PLEAT_W) { /* consecutive: no address per lane */
        vf_load4(f->particles + 4 * (size_t)s, p);
        if (r)
            vf_load4(f->rest + 4 * (size_t)s, r);
        return vu_add(vu_set1(s), vu_lane_numbers());
    }
    uint32_t idx[PLEAT_W];
    for (uint32_t l = 0; l < PLEAT_W; ++l)
        idx[l] = pleat_frame_particle(f, l < end - s ? s + l : end - 1);
    vf_gather4(f->particles, idx, p);
    if (r)
        vf_gather4(f->rest, idx, r);
    return vu_load(idx);
}

/* Lanes whose value is finite (x - x is 0 only for finite x). */
static inline vm finite_lanes(vf x)
{
    return vf_le(vf_sub(x, x), vf_set1(0.0f));
}

void PLEAT_KERNEL(bounds_task)(void *arg, uint32_t chunk)
{
    const pleat_frame *f = arg;
    vf lo[3], hi[3];
    for (int a = 0; a < 3; ++a) {
        lo[a] = vf_set1(INFINITY);
        hi[a] = vf_set1(-INFINITY);
    }
    vm finite = finite_lanes(vf_set1(0.0f));
    unsigned negative = 0;
    uint32_t end = pleat_chunk_end(chunk, f->m);
    for (uint64_t s = pleat_chunk_begin(chunk); s < end; s += PLEAT_W) { /* wide: cannot wrap */
        vf p[4], r[4];
        load_slots(f, (uint32_t)s, end, p, f->rest ? r : NULL);
        for (int c = 0; c < 4; ++c)
            finite = vm_and(finite, finite_lanes(p[c]));
        negative |= vf_lt_mask(p[3], vf_set1(0.0f));
        if (f->rest) /* the rest w is ignored */
            for (int c = 0; c < 3; ++c)
                finite = vm_and(finite, finite_lanes(r[c]));
        for (int a = 0; a < 3; ++a) {
            lo[a] = vf_min(lo[a], p[a]);
            hi[a] = vf_max(hi[a], p[a]);
        }
    }
    pleat_chunk *c = &f->chunks[chunk];
    for (int a = 0; a < 3; ++a) {
        float l[PLEAT_W], h[PLEAT_W];
        vf_store(l, lo[a]);
        vf_store(h, hi[a]);
        c->lower[a] = l[0];
        c->upper[a] = h[0];
        for (int k = 1; k < PLEAT_W; ++k) {
            c->lower[a] = l[k] < c->lower[a] ? l[k] : c->lower[a];
            c->upper[a] = h[k] > c->upper[a] ? h[k] : c->upper[a];
        }
    }
    c->nonfinite = vm_lanes(finite) != PLEAT_ALL_LANES;
    c->negative_mass = negative != 0;
}

/* pleat_grid_cell() on W lanes, with the same operations in the same order. */
static inline vu grid_cells(vf p, float lower, float scale, float size)
{
    const vf one = vf_set1(1.0f);
    vf t = vf_add(vf_mul(vf_sub(p, vf_set1(lower)), vf_set1(scale)), one);
    return vf_trunc_i32(vf_min(vf_max(t, one), vf_set1(size)));
}

void PLEAT_KERNEL(keys_task)(void *arg, uint32_t chunk)
{
    pleat_frame *f = arg;
    const pleat_grid *g = &f->grid;
    uint32_t end = pleat_chunk_end(chunk, f->m);
    for (uint64_t s = pleat_chunk_begin(chunk); s < end; s += PLEAT_W) { /* wide: cannot wrap */
        vf p[4];
        vu idx = load_slots(f, (uint32_t)s, end, p, NULL);
        vu sweep = grid_cells(p[g->sweep], g->lower[g->sweep], g->scale[g->sweep], PLEAT_SWEEP_TOP);
        vu h0 = grid_cells(p[g->hash0], g->lower[g->hash0], g->scale[g->hash0], PLEAT_HASH_TOP);
        vu h1 = grid_cells(p[g->hash1], g->lower[g->hash1], g->scale[g->hash1], PLEAT_HASH_TOP);
        vu key = vu_or(vu_or(sweep, vu_sll(h0, 16)), vu_sll_by(h1, f->sort_shift));
        if (end - s >= PLEAT_W) {
            vu_store_u64(f->packed + s, idx, key);
        } else { /* the lanes past the chunk are not stored */
            uint64_t packed[PLEAT_W];
            vu_store_u64(packed, idx, key);
            memcpy(f->packed + s, packed, (end - s) * sizeof *packed);
        }
    }
}
