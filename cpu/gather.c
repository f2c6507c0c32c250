/* End of the sort stage: lay the particles out in key order, 16 bytes each,
 * so the sweep reads candidates contiguously, then pad the arrays (see
 * PLEAT_PAD). Rest positions are not copied: the sweep reads the few it
 * needs, those of close pairs, from the caller's array. A call that corrects
 * gets its fixed-point sums zeroed here too, saving a pass. Memory-bound and
 * the same for every ISA. */
#include "cpu.h"

#include <stdint.h>
#include <string.h>

/* How far ahead the particle reads are prefetched: key order jumps around
 * the caller's array, which the hardware prefetcher cannot follow. */
#define AHEAD 16u

static void gather_task(void *arg, uint32_t chunk)
{
    const pleat_frame *f = arg;
    const uint64_t *packed = f->packed;
    const float *particles = f->particles;
    uint32_t *restrict keys = f->keys, *restrict order = f->order;
    float *restrict pos = f->pos;
    int64_t *acc_x = f->acc_x, *restrict acc_y = f->acc_y, *restrict acc_z = f->acc_z;
    uint32_t end = pleat_chunk_end(chunk, f->m);
    for (uint32_t s = pleat_chunk_begin(chunk); s < end; ++s) {
        if (s + AHEAD < end) { /* not past the chunk: the next one's thread zeroes it */
            size_t ahead = (uint32_t)packed[s + AHEAD];
            __builtin_prefetch(particles + 4 * ahead);
        }
        uint64_t v = packed[s];
        uint32_t i = (uint32_t)v;
        keys[s] = (uint32_t)(v >> 32);
        order[s] = i;
        memcpy(pos + 4 * (size_t)s, particles + 4 * (size_t)i, 4 * sizeof(float));
        if (acc_x) /* packed[s] is read: its slot becomes the x sum */
            acc_x[s] = acc_y[s] = acc_z[s] = 0;
    }
}

/* The first int64 at or after `from` that lies `offset` bytes past x in a
 * 4 KiB page. The sweep and the apply touch a particle's three sums one
 * after another, and a load whose address matches an earlier store's in its
 * low 12 bits waits for that store (4K aliasing). Large allocations all
 * start at one offset in a page, and acc_z followed acc_y by m entries, so
 * with m a multiple of 512 all three matched: spread 1 and 2 KiB apart, the
 * 64k cloud's sweep ran 4% faster. */
static int64_t *off_page_of(const int64_t *from, const int64_t *x, uintptr_t offset)
{
    uintptr_t at = (uintptr_t)from;
    return (int64_t *)(at + (((uintptr_t)x + offset - at) & 4095u));
}

void pleat_cpu_gather(pleat_frame *f, pleat_pool *pool, uint64_t *sorted)
{
    f->packed = sorted;
    /* the x sums reuse the sorted keys, consumed here */
    f->acc_x = f->acc_room ? (int64_t *)sorted : NULL;
    if (f->acc_x) {
        f->acc_y = off_page_of(f->acc_room, f->acc_x, 1024);
        f->acc_z = off_page_of(f->acc_y + f->m, f->acc_x, 2048);
    }
    pleat_pool_run(pool, pleat_chunks(f->m), gather_task, f);
    size_t m = f->m;
    for (size_t s = m; s < m + PLEAT_PAD; ++s) {
        f->keys[s] = UINT32_MAX;
        f->order[s] = 0;
    }
    memset(f->pos + 4 * m, 0, 4 * PLEAT_PAD * sizeof(float));
}
