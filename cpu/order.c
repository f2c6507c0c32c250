/*
 * Stage 2 driver: the sort of the packed sort keys (cpu.h) into key order
 * and the gather, with a short cut for particles that come in mesh order.
 *
 * A cloth's particles mostly come in the order of its mesh, and on a sheet
 * whose rows run along the sweep axis or across it, the particles of one
 * column (one hash0, hash1 cell pair) then come with their sweep cells in
 * order. A stable sort by the column bits alone (one radix pass where the
 * whole key takes three) then gives key order. The gather checks whether it
 * did; when it did not, the keys are made again and sorted in full.
 *
 * Which sort a call tries is what the context's last call found, so a
 * cloud in random order pays for a wasted column pass once, not every call.
 * After a full sort the gather's check tells whether the column pass alone
 * would have done (in every column the particles came in input order), so
 * a context goes back to it when its particles do. Both sorts give the one
 * stable order, so the choice never changes a result, only the time.
 */
#include "cpu.h"
#include "sort.h"

void pleat_cpu_sort(pleat_frame *f, pleat_pool *pool, pleat_task_fn keys_task, uint64_t *tmp,
                    void *scratch, int *column_order)
{
    uint64_t *packed = f->packed;
    for (int column = *column_order;; column = 0) {
        uint64_t *sorted = pleat_radix_sort(pool, packed, tmp, f->m, column ? 48 : 32,
                                            32 + f->sort_bits, scratch);
        /* keys and order go to the buffer that does not hold the result */
        f->keys = (uint32_t *)(sorted == packed ? tmp : packed);
        f->order = f->keys + (size_t)f->m + PLEAT_PAD;
        f->mesh_order = *column_order = pleat_cpu_gather(f, pool, sorted, column);
        if (*column_order || !column)
            return;
        f->packed = packed; /* the gather took the sorted keys for sums */
        pleat_pool_run(pool, pleat_chunks(f->m), keys_task, f);
    }
}
