/*
 * Stage 2 driver: the sort of the packed sort keys (cpu.h) into key order
 * and the gather, with a short cut for particles that come in mesh order.
 *
 * A cloth's particles mostly come in the order of its mesh, and on a sheet
 * whose rows run along the sweep axis or across it, the particles of one
 * column (one hash0, hash1 cell pair) then come with their sweep cells in
 * order. A stable sort by the column bits alone (at most 16 of the key's up
 * to 32: one or two radix passes where the whole key takes up to three, or
 * four below cpu/sort.c's NARROW_BELOW) then gives key order. The gather
 * checks whether it did; when it did not, the keys are made again and
 * sorted in full.
 *
 * Which sort a call tries is what the context's last call found, so a
 * cloud in random order pays for a wasted column pass once, not every call.
 * After a full sort the gather's check tells whether the column pass alone
 * would have done (in every column the particles came in input order), so
 * a context goes back to it when its particles do. Both sorts give the one
 * stable order, so the choice never changes a result, only the time.
 *
 * The gather's driver is here too; its kernels, per ISA, are in
 * cpu/gather.c.
 */
#include "cpu.h"
#include "sort.h"

#include <string.h>

int pleat_cpu_gather(pleat_frame *f, pleat_pool *pool, const pleat_kernels *kern, uint64_t *sorted,
                     int column_pass)
{
    f->packed = sorted;
    f->copy_later = column_pass && f->m >= PLEAT_GATHER_WALK_FROM;
    /* the z sums reuse the sorted keys, consumed here */
    f->acc_z = f->acc_xy ? (int64_t *)sorted : NULL;
    uint32_t chunks = pleat_chunks(f->m);
    pleat_pool_run(pool, chunks, kern->gather, f);
    unsigned broken = 0;
    for (uint32_t k = 0; k < chunks; ++k) {
        uint32_t s = pleat_chunk_begin(k); /* after s - 1, in another chunk */
        broken |= (unsigned)f->chunks[k].out_of_order;
        if (k > 0)
            broken |= pleat_breaks_column(f->keys[s - 1], f->order[s - 1], f->keys[s], f->order[s]);
    }
    size_t m = f->m;
    for (size_t s = m; s < m + PLEAT_PAD; ++s) {
        f->keys[s] = UINT32_MAX;
        f->order[s] = 0;
    }
    memset(f->pos + 4 * m, 0, 4 * PLEAT_PAD * sizeof(float));
    if (f->copy_later && !broken) /* else not key order: the sort goes on */
        pleat_pool_run(pool, f->parts, kern->gather_copy, f);
    return !broken;
}

void pleat_cpu_sort(pleat_frame *f, pleat_pool *pool, const pleat_kernels *kern, uint64_t *tmp,
                    void *scratch, int *column_order)
{
    uint64_t *packed = f->packed;
    for (int column = *column_order;; column = 0) {
        uint64_t *sorted = pleat_radix_sort(pool, packed, tmp, f->m, column ? 48 : 32,
                                            32 + f->sort_bits, scratch);
        /* keys and order go to the buffer that does not hold the result */
        f->keys = (uint32_t *)(sorted == packed ? tmp : packed);
        f->order = f->keys + (size_t)f->m + PLEAT_PAD;
        f->mesh_order = *column_order = pleat_cpu_gather(f, pool, kern, sorted, column);
        if (*column_order || !column)
            return;
        f->packed = packed; /* the gather took the sorted keys for sums */
        pleat_pool_run(pool, pleat_chunks(f->m), kern->keys, f);
    }
}
