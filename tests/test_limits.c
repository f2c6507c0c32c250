/*
 * Size arithmetic up to the largest count, 2^32 - 1 particles, without the
 * 64 GiB such an array takes: the particle array is a reserved mapping
 * (pages read as zero and cost nothing until written, and a test writes a
 * few), and what cannot be allocated is refused by the allocation hook's
 * size limit, which also records the largest size asked for: a size
 * computed in 32 bits would wrap around and come out small.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include "core/alloc.h"
#include "core/buffer.h"
#include "cpu/cpu.h"
#include "cpu/isa.h"
#include "hardening.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

Test(limits, buffer_size_overflow_is_out_of_memory)
{
    pleat_buffer buf = {NULL, 0};
    cr_assert_eq(pleat_buffer_reserve(&buf, 10, 8), PLEAT_OK);
    void *data = buf.data;
    uint64_t attempts = pleat_alloc_attempts();
    cr_assert_eq(pleat_buffer_reserve(&buf, SIZE_MAX / 8 + 1, 8), PLEAT_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(pleat_buffer_reserve(&buf, SIZE_MAX, SIZE_MAX), PLEAT_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(pleat_alloc_attempts(), attempts, "an overflowing size is never requested");
    cr_assert(buf.data == data && buf.bytes == 80, "the buffer is kept");
    pleat_buffer_free(&buf);
}

/* The largest count's array (64 GiB) needs a 64-bit address space; in a
 * 32-bit build, counts past its size_t are tests/size_max.c's. */
#if SIZE_MAX > UINT32_MAX
#define MAX_COUNT UINT32_MAX

/* 16 bytes for each of 2^32 - 1 particles, reserved but not backed. */
static float *huge_particles(size_t *bytes)
{
    *bytes = 16 * (size_t)MAX_COUNT;
    void *p = mmap(NULL, *bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        cr_skip_test("cannot reserve 64 GiB of address space here");
    return p;
}

/* `bytes` reserved but not backed, ending exactly at an inaccessible page:
 * an access past the end faults. */
static void *huge_guarded(size_t bytes)
{
    void *p = hz_guard_reserve(bytes, 0);
    if (!p)
        cr_skip_test("cannot reserve %zu bytes of address space here", bytes);
    return p;
}

/* The stage-1 kernels of every CPU variant on the last chunk of a call with
 * 2^32 - 1 slots, whose last vector step is where s + W passes 2^32 (the
 * whole call cannot be made here: its scratch is about 200 GiB). The
 * caller's array and the keys end at inaccessible pages, so a step past
 * either faults; the chunk's box must be its own particles' (a loop that
 * wrapped around would go on from slot 0, whose x is 0), and its keys carry
 * exactly its slots' particle numbers. */
Test(limits, the_last_chunk_of_the_largest_count)
{
    uint32_t chunk = pleat_chunks(MAX_COUNT) - 1, begin = pleat_chunk_begin(chunk);
    size_t pbytes = 16 * (size_t)MAX_COUNT, kbytes = 8 * (size_t)MAX_COUNT;
    float *p = huge_guarded(pbytes);
    uint64_t *packed = huge_guarded(kbytes);
    for (uint32_t s = begin; s < MAX_COUNT; ++s) {
        float *q = p + 4 * (size_t)s;
        q[0] = 1000.0f + (float)(s - begin);
        q[1] = q[2] = 0.0f;
        q[3] = 1.0f;
    }
    pleat_chunk *chunks = calloc((size_t)chunk + 1, sizeof *chunks);
    cr_assert(chunks);
    int tried = 0;
    for (const char *const *isa = hz_isas; *isa; ++isa) {
        if (!pleat_isa_available(*isa))
            continue;
        const pleat_kernels *k = NULL;
        setenv("PLEAT_CPU_ISA", *isa, 1);
        pleat_status st = pleat_isa_select(&k);
        unsetenv("PLEAT_CPU_ISA");
        cr_assert_eq(st, PLEAT_OK, "%s", *isa);
        pleat_frame f;
        memset(&f, 0, sizeof f);
        f.particles = p;
        f.count = f.m = MAX_COUNT;
        f.chunks = chunks;
        f.packed = packed;
        k->bounds(&f, chunk);
        const pleat_chunk *c = &chunks[chunk];
        cr_assert(c->lower[0] == 1000.0f && c->upper[0] == 1000.0f + (float)(MAX_COUNT - 1 - begin),
                  "%s: box x [%g, %g]", *isa, c->lower[0], c->upper[0]);
        cr_assert(!c->nonfinite && !c->negative_mass, "%s", *isa);
        k->keys(&f, chunk);
        uint32_t wrong = 0;
        for (uint32_t s = begin; s < MAX_COUNT; ++s)
            wrong += (uint32_t)packed[s] != s;
        cr_assert_eq(wrong, 0, "%s: %u slots with another particle number", *isa, wrong);
        ++tried;
    }
    cr_assert(tried >= 1);
    free(chunks);
    hz_guard_free(packed, kbytes, 0);
    hz_guard_free(p, pbytes, 0);
}

/* Particles at the very end of a 2^32 - 1 array, chosen through indices. */
Test(limits, indices_near_the_largest_count, .timeout = 300)
{
    size_t bytes;
    float *p = huge_particles(&bytes);
    const uint32_t ids[] = {MAX_COUNT - 1, 0, MAX_COUNT - 2, 0x80000000u, MAX_COUNT - 3,
                            0x7fffffffu, 0x40000000u};
    const uint32_t num = sizeof ids / sizeof ids[0];
    /* a line of particles 0.75 apart, in the order of ids */
    for (uint32_t k = 0; k < num; ++k) {
        float *q = p + 4 * (size_t)ids[k];
        q[0] = 0.75f * (float)k;
        q[1] = q[2] = 0.0f;
        q[3] = 1.0f;
    }
    pleat_params params = pleat_default_params();
    params.distance = 1.0f;
    params.indices = ids;
    params.num_indices = num;
    pleat_context *ctx = hz_context("", 2);

    size_t total = 0;
    uint32_t pairs[2 * 8];
    pleat_status s = pleat_find_pairs(ctx, p, MAX_COUNT, &params, pairs, 8, &total);
    if (s == PLEAT_ERROR_OUT_OF_MEMORY) /* the index check's 512 MiB bitmap */
        cr_skip_test("512 MiB for the index bitmap are not available here");
    cr_assert_eq(s, PLEAT_OK, "%s", pleat_status_string(s));
    cr_assert_eq(total, num - 1, "neighbours in the line, %zu", total);
    for (size_t k = 0; k < total; ++k) {
        /* the pair of ids[k], ids[k+1], as (min, max), in ascending order */
        uint32_t a = ids[k], b = ids[k + 1];
        uint32_t i = a < b ? a : b, j = a < b ? b : a;
        int found = 0;
        for (size_t t = 0; t < total; ++t)
            found |= pairs[2 * t] == i && pairs[2 * t + 1] == j;
        cr_assert(found, "pair (%u, %u)", i, j);
        cr_assert(k == 0 || pairs[2 * k - 2] < pairs[2 * k] ||
                  (pairs[2 * k - 2] == pairs[2 * k] && pairs[2 * k - 1] < pairs[2 * k + 1]));
    }

    pleat_stats st;
    cr_assert_eq(pleat_self_collide(ctx, p, MAX_COUNT, &params, &st), PLEAT_OK);
    cr_assert_eq(st.pairs, num - 1);
    /* the two ends moved outwards, the rest of the line apart */
    cr_assert(p[4 * (size_t)ids[0]] < 0.0f);
    cr_assert(p[4 * (size_t)ids[num - 1]] > 0.75f * (float)(num - 1));

    /* 2^32 - 1 itself is not an index of a 2^32 - 1 array */
    const uint32_t bad[] = {5, MAX_COUNT};
    params.indices = bad;
    params.num_indices = 2;
    float before[4];
    memcpy(before, p + 20, sizeof before);
    cr_assert_eq(pleat_self_collide(ctx, p, MAX_COUNT, &params, &st), PLEAT_ERROR_BAD_INDEX);
    cr_assert(memcmp(before, p + 20, sizeof before) == 0);
    pleat_context_destroy(ctx);
    munmap(p, bytes);
}

/* Spot k of 64 in a 2^32 - 1 array: the first of its two particles, and
 * in `two` the particles themselves, free, 0.5 apart. */
static size_t spot(size_t k, float two[8])
{
    const float pair[8] = {(float)k, 0, 0, 1, (float)k + 0.5f, 0, 0, 1};
    memcpy(two, pair, sizeof pair);
    return (size_t)MAX_COUNT / 64 * k;
}

/* At each spot a pair whose rest positions are 100 apart, which a call that
 * went on would move (the rest are zeros: pinned, at rest together). */
static void spot_pairs(float *p, float *rest)
{
    for (size_t k = 0; k < 64; ++k) {
        float two[8];
        size_t i = spot(k, two);
        memcpy(p + 4 * i, two, sizeof two);
        rest[4 * i + 4] = 100.0f;
    }
}

/* Every particle of a 2^32 - 1 array taking part: pleat cannot have the
 * scratch here (the hook refuses anything over 1 GiB), so the call must say
 * OUT_OF_MEMORY without writing anything, after asking for sizes that did
 * not wrap around. */
Test(limits, the_largest_count_asks_for_unwrapped_sizes)
{
    size_t bytes;
    float *p = huge_particles(&bytes), *rest = huge_particles(&bytes);
    spot_pairs(p, rest);
    const int64_t live0 = pleat_alloc_live();
    pleat_context *ctx = hz_context("", 1);
    pleat_params params = pleat_default_params();
    params.distance = 1.0f;
    params.rest_positions = rest + 4 * ((size_t)MAX_COUNT / 64);
    size_t spot_pairs_found = 0; /* a spot alone: its two particles are a pair */
    cr_assert_eq(pleat_find_pairs(ctx, p + 4 * ((size_t)MAX_COUNT / 64), 2, &params, NULL, 0,
                                  &spot_pairs_found),
                 PLEAT_OK);
    cr_assert_eq(spot_pairs_found, 1);
    params.rest_positions = rest;
    for (int kind = 0; kind < 3; ++kind) {
        pleat_alloc_reset_largest();
        pleat_alloc_limit((size_t)1 << 30);
        pleat_stats st = {3, 3};
        size_t num = 3;
        pleat_status s = kind == 0   ? pleat_self_collide(ctx, p, MAX_COUNT, &params, &st)
                         : kind == 1 ? pleat_find_pairs(ctx, p, MAX_COUNT, &params, NULL, 0, &num)
                                     : pleat_find_pairs(ctx, p, MAX_COUNT, &params,
                                                        (uint32_t *)p, 1, &num);
        pleat_alloc_limit(0);
        cr_assert_eq(s, PLEAT_ERROR_OUT_OF_MEMORY, "%s", pleat_status_string(s));
        cr_assert(st.pairs == 3 && num == 3, "outputs untouched");
        /* at least one 4-byte-per-particle array was asked for, unwrapped */
        cr_assert(pleat_alloc_largest() >= 4 * (size_t)MAX_COUNT,
                  "largest request %zu bytes for 2^32 - 1 particles", pleat_alloc_largest());
    }
    /* nothing was written: the spots' pairs are where they were, the pair
     * list (at p) unwritten */
    for (size_t k = 0; k < 64; ++k) {
        float two[8];
        size_t i = spot(k, two);
        cr_assert(memcmp(p + 4 * i, two, sizeof two) == 0, "spot %zu changed", k);
    }
    pleat_context_destroy(ctx);
    cr_assert_eq(pleat_alloc_live(), live0, "nothing leaked");
    munmap(rest, bytes);
    munmap(p, bytes);
}
#endif
