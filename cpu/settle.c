/* End of the sweep stage: the corrections parts owe particles of later parts
 * (see pleat_foreign in cpu.h). Each part's thread grows its own queue; after
 * the sweep, each part adds its own queue's entries, with atomic adds, since
 * the entries of two parts may aim at one particle. The work is the entries,
 * shared as they were queued: with many threads a fifth or more of the pairs
 * cross (each part is then shorter than the 253 columns between a column
 * and its +1 hash1 neighbour), and having part r scan every earlier queue
 * for its own entries cost O(parts x entries): 97M scans for 3M entries
 * with 64 threads on a 4M cloud. Generic (not per ISA). */
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

/* Integer adds: their order cannot change the sums. Relaxed: the pool's
 * hand-over after the stage orders them before the apply. */
static void add(int64_t *sum, int32_t c)
{
    __atomic_fetch_add(sum, (int64_t)c, __ATOMIC_RELAXED);
}

static void settle_task(void *arg, uint32_t p)
{
    pleat_frame *f = arg;
    const pleat_part *part = &f->part[p];
    for (size_t k = 0; k < part->count; ++k) {
        const pleat_foreign *e = &part->items[k];
        add(&f->acc_xy[2 * (size_t)e->b], e->c[0]);
        add(&f->acc_xy[2 * (size_t)e->b + 1], e->c[1]);
        add(&f->acc_z[e->b], e->c[2]);
    }
}

void pleat_cpu_settle(pleat_frame *f, pleat_pool *pool)
{
    if (f->parts > 1)
        pleat_pool_run(pool, f->parts, settle_task, f);
}
