/* The radix sort against qsort, on one thread, split over three, and with
 * more threads than a sort of that size takes parts. */
#include "cpu/cpu.h"
#include "cpu/isa.h"
#include "cpu/sort.h"
#include "cpu/thread.h"
#include "cpu/walk.h"
#include "isas.h"
#include "scenes.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_high(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a >> 32, y = *(const uint64_t *)b >> 32;
    if (x != y)
        return (x > y) - (x < y);
    /* stability: the payload (low half) was the input position */
    uint32_t i = (uint32_t)*(const uint64_t *)a, j = (uint32_t)*(const uint64_t *)b;
    return (i > j) - (i < j);
}

static int cmp_all(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sorts with a pool of `threads` threads. */
static const uint64_t *sort(int threads, uint64_t *keys, uint64_t *tmp, size_t n, int lo, int hi)
{
    static pleat_pool *pools[17];
    if (!pools[threads])
        pools[threads] = pleat_pool_create(threads, pleat_usable_cores());
    cr_assert(pools[threads]);
    void *scratch = malloc(pleat_radix_scratch(n, threads)); /* exactly: ASan sees overruns */
    cr_assert(scratch);
    const uint64_t *got = pleat_radix_sort(pools[threads], keys, tmp, n, lo, hi, scratch);
    free(scratch);
    return got;
}

/* Sorts grid keys (key << 32 | input position) through tmp and compares
 * with qsort; `what` names the case in a failure. */
static void expect_grid_sort(int threads, uint64_t *keys, uint64_t *tmp, size_t n,
                             const char *what)
{
    uint64_t *expect = malloc((n + 1) * sizeof *expect);
    cr_assert(expect);
    memcpy(expect, keys, n * sizeof *keys);
    qsort(expect, n, sizeof *expect, cmp_high);
    const uint64_t *got = sort(threads, keys, tmp, n, 32, 64);
    cr_assert(got == keys || got == tmp);
    for (size_t i = 0; i < n; ++i)
        cr_assert_eq(got[i], expect[i], "threads=%d n=%zu %s: entry %zu", threads, n, what, i);
    free(expect);
}

/* key_mask: which bits of the 32-bit key vary (few = many equal keys). */
static void check(int threads, size_t n, uint32_t key_mask, uint64_t seed)
{
    uint64_t *keys = malloc((n + 1) * sizeof *keys), *tmp = malloc((n + 1) * sizeof *tmp);
    cr_assert(keys && tmp);
    uint64_t rng = seed;
    for (size_t i = 0; i < n; ++i)
        keys[i] = (uint64_t)((uint32_t)pleat_scene_random(&rng) & key_mask) << 32 | (uint32_t)i;
    char what[32];
    snprintf(what, sizeof what, "mask=%x", key_mask);
    expect_grid_sort(threads, keys, tmp, n, what);
    free(tmp);
    free(keys);
}

Test(sort, parts_grow_with_the_square_root_of_the_keys)
{
    const struct {
        size_t n;
        int threads;
        uint32_t parts;
    } cases[] = {{65535, 8, 1},  {65536, 1, 1},  {65536, 2, 2},      {65536, 64, 5},
                 {200003, 16, 9}, {1u << 20, 64, 22}, {1u << 20, 8, 8}, {1u << 22, 256, 45}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        uint32_t parts = pleat_radix_parts(cases[c].n, cases[c].threads);
        cr_assert_eq(parts, cases[c].parts, "n=%zu threads=%d: %u parts", cases[c].n,
                     cases[c].threads, parts);
    }
    /* scratch grows with the parts, not with the threads */
    cr_assert_eq(pleat_radix_scratch(1u << 20, 256), pleat_radix_scratch(1u << 20, 22));
    cr_assert_lt(pleat_radix_scratch(1u << 20, 8), pleat_radix_scratch(1u << 20, 22));
}

/* A sort takes at most sqrt(n / 2048) parts (200003 keys: 9), whatever
 * the pool's size: 16 threads leave some idle. */
Test(sort, more_threads_than_parts)
{
    const uint32_t masks[] = {0xffffffffu, 0x0f0f00ffu, 0x7u};
    for (size_t m = 0; m < sizeof masks / sizeof masks[0]; ++m)
        check(16, 200003, masks[m], 77 + m);
}

Test(sort, sizes_and_key_spreads)
{
    const size_t sizes[] = {0, 1, 2, 3, 7, 255, 256, 257, 1001, 65535, 65536, 200003};
    const uint32_t masks[] = {0xffffffffu, 0xffu, 0xff00u, 0x00ff0000u, 0xff000000u, 0x7u, 0};
    for (int threads = 1; threads <= 3; threads += 2)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s)
            for (size_t m = 0; m < sizeof masks / sizeof masks[0]; ++m)
                check(threads, sizes[s], masks[m], 1 + s * 31 + m);
}

/* Full 64-bit keys (pair lists), many repeated: 6 digits of 11 bits, or 8
 * of 8 below 4096 keys. */
static void check_full(size_t n)
{
    uint64_t *keys = malloc(n * sizeof *keys), *tmp = malloc(n * sizeof *tmp);
    uint64_t *expect = malloc(n * sizeof *expect);
    cr_assert(keys && tmp && expect);
    uint64_t rng = 42;
    for (size_t i = 0; i < n; ++i)
        keys[i] =
            i > 0 && pleat_scene_random(&rng) % 3 == 0 ? keys[i / 2] : pleat_scene_random(&rng);
    memcpy(expect, keys, n * sizeof *keys);
    qsort(expect, n, sizeof *expect, cmp_all);
    const uint64_t *got = sort(3, keys, tmp, n, 0, 64);
    cr_assert(memcmp(got, expect, n * sizeof *keys) == 0);
    free(expect);
    free(tmp);
    free(keys);
}

Test(sort, full_64_bit_keys)
{
    check_full(200001);
    check_full(3001);
}

/* Bit ranges: only the asked bits order the keys, and equal ones keep their
 * input order. */
static const uint64_t *field_keys;
static int field_lo, field_hi;

static uint64_t field(uint64_t k)
{
    k >>= field_lo;
    return field_hi - field_lo == 64 ? k : k & (((uint64_t)1 << (field_hi - field_lo)) - 1);
}

static int cmp_field(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    uint64_t x = field(field_keys[i]), y = field(field_keys[j]);
    if (x != y)
        return (x > y) - (x < y);
    return (i > j) - (i < j);
}

/* Bit ranges that do not split into whole digits (11-bit ones, or 8-bit
 * ones below 4096 keys). */
static void check_ranges(size_t n)
{
    const int ranges[][2] = {{0, 32}, {5, 40}, {32, 64}, {13, 14}, {0, 11}, {3, 61}, {0, 64}};
    uint64_t *keys = malloc(n * sizeof *keys), *tmp = malloc(n * sizeof *tmp);
    uint64_t *input = malloc(n * sizeof *input);
    size_t *idx = malloc(n * sizeof *idx);
    cr_assert(keys && tmp && input && idx);
    uint64_t rng = 7;
    for (size_t i = 0; i < n; ++i) /* few distinct fields: many ties */
        input[i] = pleat_scene_random(&rng) & 0xf0f0f0f0f0f0f0f0u;
    for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; ++r) {
        field_keys = input;
        field_lo = ranges[r][0];
        field_hi = ranges[r][1];
        for (size_t i = 0; i < n; ++i)
            idx[i] = i;
        qsort(idx, n, sizeof *idx, cmp_field);
        for (int threads = 1; threads <= 3; threads += 2) {
            memcpy(keys, input, n * sizeof *keys);
            const uint64_t *got = sort(threads, keys, tmp, n, field_lo, field_hi);
            for (size_t i = 0; i < n; ++i)
                cr_assert_eq(got[i], input[idx[i]], "bits [%d, %d), %d threads: entry %zu",
                             field_lo, field_hi, threads, i);
        }
    }
    free(idx);
    free(input);
    free(tmp);
    free(keys);
}

Test(sort, any_bit_range)
{
    check_ranges(70001);
    check_ranges(3001);
}

/* Keys laid out like a 2^k x 2^k cloth: every bucket of a digit holds the
 * same power-of-two number of keys, so the write fronts crowd into one L1 set
 * and the sort takes its line-buffered scatter. `shift` entries offset both
 * arrays from a cache line, so regions start mid-line too; `nudge` moves a
 * few keys to another bucket so sizes are off by one here and there. */
static void check_crowded(int threads, size_t n, size_t shift, int nudge)
{
    uint64_t *keys_mem = malloc((n + 16) * sizeof *keys_mem);
    uint64_t *tmp_mem = malloc((n + 16) * sizeof *tmp_mem);
    cr_assert(keys_mem && tmp_mem);
    /* 64-byte aligned, then shifted */
    uint64_t *keys = (uint64_t *)(((uintptr_t)keys_mem + 63) / 64 * 64) + shift;
    uint64_t *tmp = (uint64_t *)(((uintptr_t)tmp_mem + 63) / 64 * 64) + (7 - shift);
    uint64_t rng = 3 + shift;
    for (size_t i = 0; i < n; ++i) {
        /* digit 0 (bits 0-10): 256 buckets; digit 1: 64; digit 2: the rest */
        uint32_t key = (uint32_t)(i % 256) | (uint32_t)(i / 256 % 64) << 11 |
                       (uint32_t)(i / 16384) << 22;
        if (nudge && pleat_scene_random(&rng) % 997 == 0)
            key ^= 1u << (pleat_scene_random(&rng) % 32);
        keys[i] = (uint64_t)key << 32 | (uint32_t)i;
    }
    char what[32];
    snprintf(what, sizeof what, "shift=%zu nudge=%d", shift, nudge);
    expect_grid_sort(threads, keys, tmp, n, what);
    free(tmp_mem);
    free(keys_mem);
}

Test(sort, crowded_buckets_any_alignment)
{
    for (int threads = 1; threads <= 3; threads += 2)
        for (size_t shift = 0; shift < 8; ++shift)
            for (int nudge = 0; nudge <= 1; ++nudge)
                check_crowded(threads, 65536 + 4 * shift, shift, nudge);
    check_crowded(3, 1u << 18, 5, 1);
    check_crowded(16, 1u << 18, 3, 1); /* 11 parts: more region edges in each bucket */
}

/* The gather of sorted entries made by hand (see below) with one ISA's
 * kernels, after a full sort or after the column pass (which, from
 * PLEAT_GATHER_WALK_FROM entries on, copies the particles only when the
 * order holds, walking columns side by side in 3 parts). Returns the
 * gather's answer after checking what it laid out, sums zeroed included. */
static int gather_checked(const uint64_t *entries, uint32_t m, uint32_t count, int column_pass,
                          const pleat_kernels *kern)
{
    static pleat_pool *pool;
    if (!pool)
        pool = pleat_pool_create(2, pleat_usable_cores());
    cr_assert(pool);
    pleat_frame f = {0};
    f.m = m;
    f.parts = 3;
    f.sort_shift = 20;
    float *particles = calloc((size_t)count * 4, sizeof(float));
    uint64_t *sorted = malloc((size_t)m * sizeof *sorted);
    uint32_t *keys = malloc(2 * ((size_t)m + PLEAT_PAD) * sizeof *keys);
    f.pos = malloc(((size_t)m + PLEAT_PAD) * 4 * sizeof(float));
    f.acc_xy = malloc(2 * (size_t)m * sizeof(int64_t));
    f.chunks = calloc(pleat_chunks(m), sizeof(pleat_chunk));
    cr_assert(particles && sorted && keys && f.pos && f.acc_xy && f.chunks);
    memset(f.acc_xy, 0x5a, 2 * (size_t)m * sizeof(int64_t));
    for (uint32_t i = 0; i < count; ++i)
        particles[4 * (size_t)i] = (float)i;
    memcpy(sorted, entries, (size_t)m * sizeof *sorted);
    f.particles = particles;
    f.keys = keys;
    f.order = keys + m + PLEAT_PAD;
    for (uint32_t s = 0; s < m + PLEAT_PAD; ++s)
        f.pos[4 * (size_t)s] = -1.0f; /* no particle's */
    int in_order = pleat_cpu_gather(&f, pool, kern, sorted, column_pass);
    int copied = in_order || !column_pass || m < PLEAT_GATHER_WALK_FROM;
    for (uint32_t s = 0; s < m; ++s) {
        uint32_t k = (uint32_t)(entries[s] >> 32), i = (uint32_t)entries[s];
        cr_assert_eq(f.keys[s], k, "entry %u: key %x, not %x", s, f.keys[s], k);
        cr_assert_eq(f.order[s], i);
        if (copied)
            cr_assert_eq(f.pos[4 * (size_t)s], (float)i, "entry %u", s);
        cr_assert(sorted[s] == 0 && f.acc_xy[2 * (size_t)s] == 0 &&
                      f.acc_xy[2 * (size_t)s + 1] == 0,
                  "%s: the sums of entry %u are not zeroed", kern->name, s);
    }
    free(f.acc_xy);
    free(f.chunks);
    free(f.pos);
    free(keys);
    free(sorted);
    free(particles);
    return in_order;
}

/* The gather's check of the column order (cpu/order.c) on sorted entries
 * made by hand: sort keys with hash0 in 4 bits (sort_shift 20), 100
 * entries per column, each column's particle numbers rising, two entries
 * per sweep cell; particle numbers below count. The gather's answer, the
 * same after a full sort and after the column pass. */
static int gather_says_in_order(const uint64_t *entries, uint32_t m, uint32_t count)
{
    static const char *const isas[] = {PLEAT_TEST_ISAS};
    int answer = -1;
    for (size_t k = 0; k < sizeof isas / sizeof isas[0]; ++k) {
        if (!pleat_isa_available(isas[k]))
            continue;
        const pleat_kernels *kern;
        cr_assert_eq(setenv("PLEAT_CPU_ISA", isas[k], 1), 0);
        cr_assert_eq(pleat_isa_select(&kern), PLEAT_OK);
        for (int column_pass = 0; column_pass <= 1; ++column_pass) {
            int got = gather_checked(entries, m, count, column_pass, kern);
            cr_assert(answer < 0 || got == answer, "%s, %s: another answer", isas[k],
                      column_pass ? "column pass" : "full sort");
            answer = got;
        }
    }
    cr_assert_eq(unsetenv("PLEAT_CPU_ISA"), 0);
    return answer;
}

/* Swaps the particle numbers (low halves) or the keys (high halves) of
 * entries s and s + 1. */
static void swap_half(uint64_t *e, uint32_t s, uint64_t half)
{
    uint64_t a = e[s] & half, b = e[s + 1] & half;
    e[s] = (e[s] & ~half) | b;
    e[s + 1] = (e[s + 1] & ~half) | a;
}

/* m: past 3 chunks, or past PLEAT_GATHER_WALK_FROM too */
static void check_gather_order(uint32_t m)
{
    const uint32_t columns = (m + 99) / 100;
    uint64_t *e = malloc((size_t)m * sizeof *e);
    cr_assert(e);
    const uint64_t particle = 0xffffffffu, key = ~particle;
    /* entry s: column c = s / 100 (hash0 1 + c % 15, hash1 1 + c / 15),
     * sweep cell 3 * (s % 100 / 2); particle numbers interleave the
     * columns, so they drop from each column to the next */
    for (uint32_t s = 0; s < m; ++s) {
        uint32_t c = s / 100, r = s % 100;
        uint32_t k = 3 * (r / 2) | (1 + c % 15) << 16 | (1 + c / 15) << 20;
        e[s] = (uint64_t)k << 32 | (r * columns + c);
    }
    cr_assert(gather_says_in_order(e, m, 100 * columns),
              "in order, and particle numbers drop between columns");
    const struct {
        uint32_t s;
        uint64_t half;
        const char *what;
    } breaks[] = {
        {150, particle, "particle numbers drop inside a chunk"},
        {153, key, "the key drops inside a chunk"},
        {159, particle, "particle numbers drop across lanes' vectors"},
        {167, key, "the key drops across lanes' vectors"},
        {175, key, "the key drops across 16 lanes' vectors"},
        {PLEAT_CHUNK - 1, particle, "particle numbers drop from one chunk to the next"},
        {2 * PLEAT_CHUNK - 1, key, "the key drops from one chunk to the next"},
        {m - 2, particle, "particle numbers drop at the end"},
    };
    for (size_t b = 0; b < sizeof breaks / sizeof breaks[0]; ++b) {
        swap_half(e, breaks[b].s, breaks[b].half);
        cr_assert(!gather_says_in_order(e, m, 100 * columns), "m %u, %s: not seen", m,
                  breaks[b].what);
        swap_half(e, breaks[b].s, breaks[b].half);
    }
    free(e);
}

Test(sort, the_gather_checks_the_column_order)
{
    check_gather_order(3 * PLEAT_CHUNK + 5);
    check_gather_order(PLEAT_GATHER_WALK_FROM + 5);
}

/* The apply's walk (cpu/walk.h) visits each position of its range once and
 * nothing else, whatever the columns: long and short ones, runs of short
 * ones, a range that starts or ends inside a column. */
static void count_visit(const void *arg, uint32_t s)
{
    ++((uint32_t *)arg)[s];
}

Test(sort, the_column_walk_visits_each_particle_once)
{
    enum { N = 20000 };
    uint32_t *keys = malloc((N + PLEAT_PAD) * sizeof *keys), *seen = malloc(N * sizeof *seen);
    cr_assert(keys && seen);
    uint64_t state = 7;
    for (int layout = 0; layout < 4; ++layout) {
        /* column lengths: 0 long ones only, 1 short ones only, 2 and 3 mixed */
        uint32_t s = 0, column = 1;
        while (s < N) {
            uint32_t r = (uint32_t)pleat_scene_random(&state);
            uint32_t len = layout == 0   ? 32 + r % 300
                           : layout == 1 ? 1 + r % 31
                           : r % 3 == 0  ? 1 + r % 40
                                         : 20 + r % (layout == 2 ? 100 : 600);
            for (uint32_t k = 0; k < len && s < N; ++k, ++s)
                keys[s] = column << 16 | (k * 7 / 3); /* sweep cells rise, with repeats */
            column += 1 + r % 2;
        }
        for (uint32_t p = 0; p < PLEAT_PAD; ++p)
            keys[N + p] = UINT32_MAX;
        for (int range = 0; range < 6; ++range) {
            uint32_t begin = range ? (uint32_t)pleat_scene_random(&state) % (N / 2) : 0;
            uint32_t end = range ? begin + (uint32_t)pleat_scene_random(&state) % (N - begin) : N;
            for (unsigned streams = 2; streams <= PLEAT_WALK_MAX_STREAMS; streams *= 2) {
                memset(seen, 0, N * sizeof *seen);
                pleat_walk_columns(keys, begin, end, streams, count_visit, seen);
                for (uint32_t t = 0; t < N; ++t)
                    cr_assert_eq(seen[t], t >= begin && t < end,
                                 "layout %d, %u streams, [%u, %u): %u visited %u times", layout,
                                 streams, begin, end, t, seen[t]);
            }
        }
    }
    free(seen);
    free(keys);
}

/* The sweep's neighbouring columns in sort keys (pleat_cpu_column_offset):
 * from every cell (hash0, hash1) of a field hash0_bits wide, the offset
 * leads to (hash0 + dh0, hash1 + dh1), or, when hash0 + 1 passes the
 * field's top, to a column with hash0 = 0, where no particle ever is. */
Test(sort, column_offsets_of_sort_keys)
{
    static const int step[PLEAT_NUM_COLUMNS][2] = {{0, 0}, {1, 0}, {-1, 1}, {0, 1}, {1, 1}};
    for (int hash0_bits = 1; hash0_bits <= 8; ++hash0_bits) {
        int shift = 16 + hash0_bits;
        uint32_t top0 = (1u << hash0_bits) - 1u;
        for (uint32_t h1 = 1; h1 <= 253; h1 += 9) {
            for (uint32_t h0 = 1; h0 <= top0 && h0 <= 254; ++h0) {
                uint32_t key = 77u | h0 << 16 | h1 << shift;
                for (int c = 0; c < PLEAT_NUM_COLUMNS; ++c) {
                    uint32_t to = key + pleat_cpu_column_offset(c, shift);
                    uint32_t h0_to = h0 + (uint32_t)step[c][0], h1_to = h1 + (uint32_t)step[c][1];
                    uint32_t want = h0_to > top0 ? 77u | (h1_to + 1) << shift
                                                 : 77u | h0_to << 16 | h1_to << shift;
                    cr_assert_eq(to, want, "hash0 bits %d, cell (%u, %u), column %d: %x, not %x",
                                 hash0_bits, h0, h1, c, to, want);
                }
            }
        }
    }
}
