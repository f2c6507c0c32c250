/* End of the sweep stage: the corrections parts owe particles of later parts
 * (see pleat_foreign in cpu.h). Each part's thread queues its own; a queue
 * at its limit is folded into the part's table of sums per owed particle
 * (linear probing, at most 3/4 full), so the memory is bounded by the
 * particles, not the pairs. After the sweep, each part adds its own queue
 * and table, with atomic adds, since two parts may owe one particle. The
 * work is the entries, shared as they were queued: with many threads a fifth
 * or more of the pairs cross (each part is then shorter than the stretch of
 * key order between a column and its +1 hash1 neighbour, a whole row of
 * hash0 columns), and having part r scan every earlier queue for its own
 * entries cost O(parts x entries): 97M scans for 3M entries with 64 threads
 * on a 4M cloud. Queues and tables are scratch like the rest
 * (pleat_malloc_huge: pleat.h's 2 MiB alignment for blocks of 4 MiB and
 * more). Generic (not per ISA). */
#include "core/alloc.h"
#include "cpu.h"

#include <string.h>

static void empty_slots(pleat_owed *table, size_t slots)
{
    for (size_t k = 0; k < slots; ++k)
        table[k].b = PLEAT_OWED_EMPTY;
}

void pleat_cpu_part_reset(pleat_part *part, uint32_t particles, uint32_t later)
{
    part->count = 0;
    part->limit = particles > PLEAT_OWED_BATCH ? particles : PLEAT_OWED_BATCH;
    part->owable = later;
    if (part->used) /* a failed call left it filled */
        empty_slots(part->table, part->slots);
    part->used = 0;
}

void pleat_cpu_part_free(pleat_part *part)
{
    pleat_free(part->items);
    pleat_free(part->table);
    memset(part, 0, sizeof *part);
}

/* Fibonacci hashing: consecutive positions spread over the table. */
static size_t slot_of(uint32_t b, size_t slots)
{
    return (size_t)((uint64_t)b * 0x9E3779B97F4A7C15u >> 32) & (slots - 1);
}

/* Adds c to b's slot, taking a free one if b has none; room is assured. */
static void table_add(pleat_owed *table, size_t slots, size_t *used, uint32_t b,
                      const int64_t c[3])
{
    size_t k = slot_of(b, slots);
    while (table[k].b != b && table[k].b != PLEAT_OWED_EMPTY)
        k = (k + 1) & (slots - 1);
    if (table[k].b == PLEAT_OWED_EMPTY) {
        table[k].b = b;
        table[k].c[0] = table[k].c[1] = table[k].c[2] = 0;
        ++*used;
    }
    for (int a = 0; a < 3; ++a)
        table[k].c[a] += c[a];
}

/* Makes room for `more` new particles in the table (never more than the
 * part can owe); 0 when it cannot grow. */
static int table_room(pleat_part *part, size_t more)
{
    size_t need = part->used + more, slots = part->slots ? part->slots : 1024;
    need = need < part->owable ? need : part->owable;
    while (4 * need > 3 * slots)
        slots *= 2;
    if (slots == part->slots)
        return 1;
    pleat_owed *table =
        slots <= SIZE_MAX / sizeof *table ? pleat_malloc_huge(slots * sizeof *table) : NULL;
    if (!table)
        return 0;
    empty_slots(table, slots);
    size_t used = 0;
    for (size_t k = 0; k < part->slots; ++k)
        if (part->table[k].b != PLEAT_OWED_EMPTY)
            table_add(table, slots, &used, part->table[k].b, part->table[k].c);
    pleat_free(part->table);
    part->table = table;
    part->slots = slots;
    return 1;
}

/* Doubles the queue, up to its limit; 0 when it cannot. */
static int grow(pleat_part *part)
{
    size_t capacity = part->capacity ? 2 * part->capacity : 1024;
    capacity = capacity < part->limit ? capacity : part->limit;
    pleat_foreign *items =
        capacity <= SIZE_MAX / sizeof *items ? pleat_malloc_huge(capacity * sizeof *items) : NULL;
    if (!items)
        return 0;
    if (part->count)
        memcpy(items, part->items, part->count * sizeof *items);
    pleat_free(part->items);
    part->items = items;
    part->capacity = capacity;
    return 1;
}

/* Folds the queue into the table, which grows with the particles owed, not
 * the entries: a full queue holds as many entries as the part has particles,
 * and a dense clump's may all go to a few thousand. A failure midway leaves
 * the sums in both, which the failed call never adds. */
static int fold(pleat_part *part)
{
    for (size_t k = 0; k < part->count; ++k) {
        const pleat_foreign *e = &part->items[k];
        const int64_t c[3] = {e->c[0], e->c[1], e->c[2]};
        if (!table_room(part, 1))
            return 0;
        table_add(part->table, part->slots, &part->used, e->b, c);
    }
    part->count = 0;
    return 1;
}

void pleat_cpu_owe(pleat_part *part, uint32_t b, const int64_t c[3])
{
    if (part->out_of_memory) /* the call fails: no more attempts */
        return;
    if (part->count == part->capacity &&
        !(part->capacity < part->limit ? grow(part) : fold(part))) {
        part->out_of_memory = 1;
        return;
    }
    pleat_foreign *e = &part->items[part->count++];
    e->b = b;
    for (int a = 0; a < 3; ++a)
        e->c[a] = (int32_t)c[a]; /* one pair's correction fits: about 2^30 quanta at most */
}

/* Integer adds: their order cannot change the sums. Relaxed: the pool's
 * hand-over after the stage orders them before the apply. */
static void add(pleat_frame *f, uint32_t b, int64_t x, int64_t y, int64_t z)
{
    __atomic_fetch_add(&f->acc_xy[2 * (size_t)b], x, __ATOMIC_RELAXED);
    __atomic_fetch_add(&f->acc_xy[2 * (size_t)b + 1], y, __ATOMIC_RELAXED);
    __atomic_fetch_add(&f->acc_z[b], z, __ATOMIC_RELAXED);
}

static void settle_task(void *arg, uint32_t p)
{
    pleat_frame *f = arg;
    pleat_part *part = &f->part[p];
    for (size_t k = 0; k < part->count; ++k) {
        const pleat_foreign *e = &part->items[k];
        add(f, e->b, e->c[0], e->c[1], e->c[2]);
    }
    part->count = 0;
    if (!part->used)
        return;
    for (size_t k = 0; k < part->slots; ++k) {
        pleat_owed *o = &part->table[k];
        if (o->b != PLEAT_OWED_EMPTY) {
            add(f, o->b, o->c[0], o->c[1], o->c[2]);
            o->b = PLEAT_OWED_EMPTY;
        }
    }
    part->used = 0;
}

void pleat_cpu_settle(pleat_frame *f, pleat_pool *pool)
{
    if (f->parts > 1)
        pleat_pool_run(pool, f->parts, settle_task, f);
}
