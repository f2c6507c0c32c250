/* End of the sweep stage: the corrections parts owe particles of later parts
 * (see pleat_foreign in cpu.h). Each part's thread grows its own queue; after
 * the sweep, part r adds every entry aimed at its particles, so each sum is
 * written by one thread only. Generic (not per ISA). */
#include "core/alloc.h"
#include "cpu.h"

#include <string.h>

void pleat_cpu_owe(pleat_part *part, uint32_t b, const int64_t c[3])
{
    if (part->count == part->capacity) {
        size_t capacity = part->capacity ? 2 * part->capacity : 1024;
        pleat_foreign *items =
            capacity <= SIZE_MAX / sizeof *items ? pleat_malloc(capacity * sizeof *items) : NULL;
        if (!items) {
            part->out_of_memory = 1;
            return;
        }
        if (part->count)
            memcpy(items, part->items, part->count * sizeof *items);
        pleat_free(part->items);
        part->items = items;
        part->capacity = capacity;
    }
    pleat_foreign *e = &part->items[part->count++];
    e->b = b;
    for (int a = 0; a < 3; ++a)
        e->c[a] = (int32_t)c[a]; /* one pair's correction: at most 2^30 quanta */
}

static void settle_task(void *arg, uint32_t r)
{
    pleat_frame *f = arg;
    uint32_t begin = pleat_part_begin(f, r), end = pleat_part_begin(f, r + 1);
    for (uint32_t p = 0; p < r; ++p) { /* only earlier parts owe part r */
        const pleat_part *part = &f->part[p];
        for (size_t k = 0; k < part->count; ++k) {
            const pleat_foreign *e = &part->items[k];
            if (e->b >= begin && e->b < end) {
                f->acc_x[e->b] += e->c[0];
                f->acc_y[e->b] += e->c[1];
                f->acc_z[e->b] += e->c[2];
            }
        }
    }
}

void pleat_cpu_settle(pleat_frame *f, pleat_pool *pool)
{
    if (f->parts > 1)
        pleat_pool_run(pool, f->parts, settle_task, f);
}
