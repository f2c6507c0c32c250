/* Stage 4 kernel (per ISA): add each particle's fixed-point sum to its
 * position. Runs only after every check passed and every buffer was
 * reserved: the first write to the caller's array. One contiguous part of
 * the sorted particles per thread, as in the sweep: key order scatters the
 * writes over the caller's array, and threads taking turns at neighbouring
 * chunks wrote particles of one cache line at once (a mesh laid across the
 * sweep axis, folded 1M: 2 threads were slower than 1). Particles in mesh
 * order are visited a few columns side by side (cpu/walk.h). */
#include "cpu.h"
#include "walk.h"

/* How far ahead the writes are prefetched in key order: on a random order
 * (a cloud) each is a DRAM miss, and 16 ahead did not cover the latency
 * (1M cloud: apply 13.1 -> 11.0 ms, 4M 80 -> 67 ms with 64). On the Zen 5
 * host 128 did better again (AVX2, 1 thread, apply: 1M cloud 3.53 -> 2.77
 * ms, 4M 17.3 -> 13.7; 1M crumpled 3.48 -> 3.09; 256: 3.14, 15.2). */
#define AHEAD 128u
/* Columns walked side by side on a mesh: 2 leave the two layers a column of
 * the folded sheet holds apart; 8 were no faster at 64k and much slower at
 * 4M (folded, apply: 11.3 -> 30 ms). */
#define STREAMS 4u

static inline void apply_one(const void *arg, uint32_t s)
{
    const pleat_frame *f = arg;
    int64_t sx = f->acc_xy[2 * (size_t)s], sy = f->acc_xy[2 * (size_t)s + 1], sz = f->acc_z[s];
    if ((sx | sy | sz) == 0)
        return;
    float *p = f->out + 4 * (size_t)f->order[s];
    p[0] = pleat_apply_sum(p[0], sx, &f->consts);
    p[1] = pleat_apply_sum(p[1], sy, &f->consts);
    p[2] = pleat_apply_sum(p[2], sz, &f->consts);
}

void PLEAT_KERNEL(apply_task)(void *arg, uint32_t part)
{
    const pleat_frame *f = arg;
    uint32_t begin = pleat_part_begin(f, part), end = pleat_part_begin(f, part + 1);
    if (f->mesh_order) {
        /* the hardware prefetchers follow a mesh's rows; prefetching 64
         * ahead in every stream cost more than it saved (folded 255-wide,
         * 64k: apply 0.059 ms without, 0.082 with) */
        pleat_walk_columns(f->keys, begin, end, STREAMS, apply_one, f);
        return;
    }
    for (uint32_t s = begin; s < end; ++s) {
        if (f->m - s > AHEAD) /* s + AHEAD could wrap */
            __builtin_prefetch(f->out + 4 * (size_t)f->order[s + AHEAD], 1);
        apply_one(f, s);
    }
}
