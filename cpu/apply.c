/* Stage 4 kernel (per ISA): add each particle's fixed-point sum to its
 * position. Runs only after every check passed and every buffer was
 * reserved: the first write to the caller's array. */
#include "cpu.h"

void PLEAT_KERNEL(apply_task)(void *arg, uint32_t chunk)
{
    const pleat_frame *f = arg;
    uint32_t end = pleat_chunk_end(chunk, f->m);
    for (uint32_t s = pleat_chunk_begin(chunk); s < end; ++s) {
        const int64_t *sum = f->acc + 3 * (size_t)s;
        if ((sum[0] | sum[1] | sum[2]) == 0)
            continue;
        float *p = f->out + 4 * (size_t)f->order[s];
        for (int a = 0; a < 3; ++a)
            p[a] = pleat_apply_sum(p[a], sum[a], &f->consts);
    }
}
