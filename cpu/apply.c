/* Stage 4 kernel (per ISA): add each particle's fixed-point sum to its
 * position. Runs only after every check passed and every buffer was
 * reserved: the first write to the caller's array. */
#include "cpu.h"

void PLEAT_KERNEL(apply_task)(void *arg, uint32_t chunk)
{
    const pleat_frame *f = arg;
    uint32_t end = pleat_chunk_end(chunk, f->m);
    for (uint32_t s = pleat_chunk_begin(chunk); s < end; ++s) {
        /* key order jumps around the caller's array: fetch ahead */
        if (s + 16 < f->m)
            __builtin_prefetch(f->out + 4 * (size_t)f->order[s + 16], 1);
        int64_t sx = f->acc_xy[2 * (size_t)s], sy = f->acc_xy[2 * (size_t)s + 1], sz = f->acc_z[s];
        if ((sx | sy | sz) == 0)
            continue;
        float *p = f->out + 4 * (size_t)f->order[s];
        p[0] = pleat_apply_sum(p[0], sx, &f->consts);
        p[1] = pleat_apply_sum(p[1], sy, &f->consts);
        p[2] = pleat_apply_sum(p[2], sz, &f->consts);
    }
}
