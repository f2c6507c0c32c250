/* The CPU backend's stages and the state one call passes between them.
 * Flow: check indices -> check + bounds -> keys -> sort -> gather ->
 * sweep (count, list or correct) -> settle -> apply. Every stage but the
 * index check runs on the context's pool: most as fixed-size chunks, the
 * sort, the sweep, the settle and the apply as one part per thread (their
 * results cannot depend on the split: a stable sort has one result, sums
 * are integers). Nothing is written to the caller's arrays before apply.
 * The kernels of the hot stages come from the context's ISA table. */
#ifndef PLEAT_CPU_CPU_H
#define PLEAT_CPU_CPU_H

#include "core/backend.h"
#include "core/grid.h"
#include "core/pair.h"
#include "kernels.h"
#include "pool.h"

#include <stdatomic.h>

/* Sorted arrays carry this many entries past the end, so a kernel may load
 * two full vectors from any position up to the end: keys are padded with
 * UINT32_MAX (above every key), floats with 0. */
#define PLEAT_PAD 32u

/* From this many taking-part particles on, the gather lays the rest
 * positions out in key order too (16 bytes a particle more). The sweep
 * reads them only for close pairs, from wherever key order puts them in the
 * caller's array: from 128k particles on (a 2 MiB rest array, past the
 * 1.25 MiB L2 of the 2-core x86-64 it was measured on) that costs the sweep
 * more than the gather's copy costs (AVX2, 1 thread, whole call: folded
 * sheet 128k even, 160k 7% faster, 256k 11%; crumpled 128k 6-10%, 256k 4%;
 * with 2 threads at 256k 7-8%), while at 64k the caller's array is still
 * cached and the copy only adds work (folded 64k: 20% slower). */
#define PLEAT_SORTED_REST_FROM (1u << 17)

/* From this many taking-part particles on, a gather after the column pass
 * copies the particles in a second pass that walks columns side by side
 * (cpu/gather.c). */
#define PLEAT_GATHER_WALK_FROM (1u << 18)

/* The sweep, the settle and the apply take one part per thread, but no
 * more parts than one per this many sorted particles, rounded up (so a part
 * holds more than half of it). The fixed-size chunks of the other
 * stages (PLEAT_CHUNK, 4096) were the unit before, so a cloth below 8k
 * particles ran its sweep on one thread. A part that a worker does not take
 * in time costs the caller little (the pool hands a late worker's tasks to
 * the threads that came, cpu/pool.c), and a part's fixed costs (4 cursor
 * searches, its owed corrections) are small beside 1k particles' sweep.
 * AVX2, 2 threads, 4k particles, calls 0.3 ms apart: cloud 0.221 -> 0.166
 * ms a call, folded sheet 0.130 -> 0.095 (with the early wake-up in
 * cpu/backend.c); back to back 1.4-1.5x, or about even while the VM's two
 * cores pass data slowly. 512 a part was no faster at 2k, slower at 1k. */
#define PLEAT_PART_MIN 1024u

static inline uint32_t pleat_cpu_parts(uint32_t m, int threads)
{
    uint32_t most = (uint32_t)(((uint64_t)m + PLEAT_PART_MIN - 1) / PLEAT_PART_MIN);
    return (uint32_t)threads < most ? (uint32_t)threads : most;
}

/* Per-chunk results, reduced in chunk order after a stage (and the sweep's
 * per part). */
typedef struct pleat_chunk {
    float lower[3], upper[3];
    int nonfinite, negative_mass;
    uint64_t pairs, tests;
    int out_of_order; /* the gather's check (cpu/order.c) */
} pleat_chunk;

/* A correction that a sweep part owes a particle of a later part. Parts are
 * contiguous runs of sorted particles, one per thread; a pair's partner
 * always sorts later, mostly in the same part. The corrections that cross
 * into a later part are kept here and added (atomically: two parts may owe
 * one particle) once every part is done, so the sweep itself never writes a
 * sum another thread writes; integer sums, so the order cannot change the
 * result. They are queued as they come, up to as many as the part has
 * particles (PLEAT_OWED_BATCH at least); a full queue is folded into a table
 * of sums per owed particle, so a part's memory is bounded by its particles
 * and those it owes, not by the pairs (a dense clump split between two
 * threads can have millions of crossing pairs over a few thousand
 * particles). Below the limit the queue is all: a table slot (32 bytes, at
 * most 3/4 full) costs more than the one or two entries most owed
 * particles get. */
typedef struct pleat_foreign {
    uint32_t b;   /* sorted position */
    int32_t c[3]; /* fixed-point correction */
} pleat_foreign;

/* A table slot: the sums owed to sorted position b (PLEAT_OWED_EMPTY: none). */
typedef struct pleat_owed {
    uint32_t b;
    int64_t c[3];
} pleat_owed;

#define PLEAT_OWED_BATCH 4096u
#define PLEAT_OWED_EMPTY UINT32_MAX /* above every sorted position */

typedef struct pleat_part {
    pleat_foreign *items;     /* the queue, grown by the part's own thread */
    size_t count, capacity;
    size_t limit;             /* of the queue in this sweep; a full one folds */
    size_t owable;            /* later positions: the most the table can hold */
    pleat_owed *table;        /* open addressing, slots a power of two or 0 */
    size_t slots, used;
    int out_of_memory;
} pleat_part;

typedef enum pleat_sweep_mode {
    PLEAT_SWEEP_COUNT,   /* count pairs and tests per chunk */
    PLEAT_SWEEP_LIST,    /* write pairs from each chunk's offset (pairs field) */
    PLEAT_SWEEP_CORRECT  /* add fixed-point corrections to acc_xy and acc_z */
} pleat_sweep_mode;

typedef struct pleat_frame {
    /* input, as the caller gave it */
    const float *particles;
    uint32_t count;
    const uint32_t *indices; /* NULL: slot s is particle s */
    uint32_t m;              /* taking-part particles */
    const float *rest;       /* NULL: no rest positions */
    float *out;              /* COLLIDE: where apply writes (the caller's particles) */

    pleat_grid grid;
    /* The sort key (cpu/order.c): the grid key with hash1 moved down to just
     * above hash0's highest cell, so the bits that vary sit together:
     * sweep | hash0 << 16 | hash1 << sort_shift, sort_bits bits in all. It
     * orders particles as the grid key does, and the sweep works on it as
     * on the grid key, with the neighbouring columns' offsets moved too
     * (pleat_cpu_column_offset). */
    int sort_shift, sort_bits;
    pleat_pair_consts consts;

    uint64_t *packed;        /* sort key << 32 | particle, m entries, then sorted */
    /* sorted by key, m entries each plus PLEAT_PAD */
    uint32_t *keys, *order;
    /* in every column the particles came in input order (the gather's
     * check, cpu/order.c): the caller's array holds them in mesh order */
    int mesh_order;
    int copy_later;          /* gather: the particles are copied in a second pass */
    float *pos;              /* {x, y, z, w} per particle */
    /* rest positions in key order, 4 floats each (m of them; only queued
     * pairs, all below m, are read), from PLEAT_SORTED_REST_FROM particles
     * on; else NULL: the sweep reads the caller's array */
    float *rest_sorted;
    /* fixed-point sums per sorted particle (COLLIDE; else NULL), zeroed by
     * the gather: {x, y} side by side, so a pair adds both with one vector
     * op, and z in the sorted packed array, consumed by the gather. (Three
     * arrays x, y, z started at one offset in a page: each sum's load then
     * waited on the store to the one before, 4K aliasing.) */
    int64_t *acc_xy, *acc_z;
    uint64_t *list;          /* LIST: pleat_pair_pack() entries, at each chunk's offset */
    int pair_shift;          /* LIST: pleat_pair_shift(count) */

    uint64_t max_tests;      /* params.max_tests: 0 = no limit */
    pleat_chunk *chunks;     /* pleat_chunks(m) entries, at least parts; the sweep's per part */
    pleat_sweep_mode mode;
    uint32_t parts;          /* of the gather's second pass, the sweep and the apply:
                              * pleat_cpu_parts() */
    pleat_part *part;        /* parts entries */
    /* with a test limit, the tests the sweep's parts have counted so far
     * (cpu/sweep.c); last, on a cache line of its own: the parts add to it
     * while they read the fields above */
    _Alignas(64) atomic_uint_least64_t tests_spent;
} pleat_frame;

static inline uint32_t pleat_frame_particle(const pleat_frame *f, uint32_t slot)
{
    return f->indices ? f->indices[slot] : slot;
}

static inline uint32_t pleat_chunk_begin(uint32_t chunk)
{
    return chunk * PLEAT_CHUNK;
}

static inline uint32_t pleat_chunk_end(uint32_t chunk, uint32_t n)
{
    uint64_t end = ((uint64_t)chunk + 1) * PLEAT_CHUNK;
    return end < n ? (uint32_t)end : n;
}

/* First sorted position of sweep part p (p = parts: the end). */
static inline uint32_t pleat_part_begin(const pleat_frame *f, uint32_t p)
{
    return (uint32_t)pleat_share_begin(f->m, p, f->parts);
}

/* Empties a part's queue and table before a sweep of `particles` particles
 * in the part, with `later` particles in the parts after it. */
void pleat_cpu_part_reset(pleat_part *part, uint32_t particles, uint32_t later);
/* Queues a correction for a particle of a later part; sets out_of_memory
 * (and drops it) when the queue or the table cannot grow. */
void pleat_cpu_owe(pleat_part *part, uint32_t b, const int64_t c[3]);
/* Adds every part's owed corrections to the sums, each part its own, and
 * empties the tables. */
void pleat_cpu_settle(pleat_frame *f, pleat_pool *pool);
void pleat_cpu_part_free(pleat_part *part);

/* Sorts f->packed (m entries, made by kern->keys) through tmp (m + PLEAT_PAD
 * entries, as f->packed) and gathers the particles in key order;
 * scratch: pleat_radix_scratch(m, threads of pool). *column_order: whether
 * the context's last call found its particles in column order
 * (cpu/order.c), updated. */
void pleat_cpu_sort(pleat_frame *f, pleat_pool *pool, const pleat_kernels *kern, uint64_t *tmp,
                    void *scratch, int *column_order);

/* pleat_column_offset(c) for sort keys: its hash1 step of 1 << 24 becomes
 * 1 << sort_shift. Cells run from 1, so a hash0 + 1 past the field's top
 * carries into hash0 = 0 of the next hash1, an empty column (as the grid
 * key's hash0 = 255 is), and hash0 - 1 never borrows. */
static inline uint32_t pleat_cpu_column_offset(int column, int sort_shift)
{
    /* off = dh1 << 24 + dh0 << 16, with dh0 in {-1, 0, 1} and dh1 in {0, 1} */
    uint32_t off = pleat_column_offset(column), dh1 = (off + 0x00800000u) >> 24;
    return (dh1 << sort_shift) + (off - (dh1 << 24));
}

/* Whether sorted particle (key1, i1) breaks its column's order after
 * (key0, i0) (sort keys, particle numbers): in one column (a key's bits
 * from 16), the key drops, or the particle number does. */
static inline unsigned pleat_breaks_column(uint32_t key0, uint32_t i0, uint32_t key1, uint32_t i1)
{
    return (key0 >> 16 == key1 >> 16) & ((key1 < key0) | (i1 < i0));
}

/* Lays the particles out in key order (and the padding) into f->keys,
 * f->order, f->pos, with kern's gather kernels (cpu/gather.c). Returns
 * whether in every column the particles came in input order with their
 * keys in order (cpu/order.c). column_pass: `sorted` is sorted by the
 * column bits only; when it then fails the check it is not key order, and
 * f->pos may be left unwritten. Needs f->parts. */
int pleat_cpu_gather(pleat_frame *f, pleat_pool *pool, const pleat_kernels *kern, uint64_t *sorted,
                     int column_pass);

extern const pleat_backend_ops pleat_cpu_ops;
/* desc: its cpu_threads (>= 1, or 0 for one per core pleat_usable_cores()
 * counts) and its job system, if any. describe gets e.g. "cpu avx2, 2
 * threads". */
pleat_status pleat_cpu_create(const pleat_context_desc *desc, void **impl, char *describe,
                              size_t describe_size);

#endif
