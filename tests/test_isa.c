/* Every CPU kernel variant this machine supports gives the scalar variant's
 * bits: corrected particles, pair lists and stats, at 1 and 3 threads. */
#include "cpu/isa.h"
#include "isas.h"
#include "scenes.h"
#include "support.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static const char *const isas[] = {PLEAT_TEST_ISAS};

typedef struct result {
    uint64_t particles, pairs, stats;
} result;

static result run(const char *isa, int threads, const scene *s, const pleat_params *p)
{
    pleat_status made;
    pleat_context *ctx = reference_context(PLEAT_BACKEND_CPU, isa, threads, &made);
    cr_assert_eq(made, PLEAT_OK, "%s: %s", isa, pleat_status_string(made));
    cr_assert(strstr(pleat_context_describe(ctx), isa), "%s", pleat_context_describe(ctx));
    result r;
    size_t num;
    uint32_t *pairs = pleat_pairs(ctx, s->particles, s->count, p, &num);
    r.pairs = hash_bytes(pairs, num * 2 * sizeof *pairs);
    free(pairs);
    float *work = copy_floats(s->particles, (size_t)s->count * 4);
    pleat_stats st;
    for (int c = 0; c < 2; ++c)
        cr_assert_eq(pleat_self_collide(ctx, work, s->count, p, &st), PLEAT_OK);
    r.particles = hash_bytes(work, (size_t)s->count * 4 * sizeof(float));
    r.stats = hash_bytes(&st, sizeof st);
    free(work);
    pleat_context_destroy(ctx);
    return r;
}

Test(isa, every_variant_gives_the_scalar_bits)
{
    uint64_t rng = 31337;
    int compared = 0;
    for (int kind = 0; kind < SCENE_KIND_COUNT; ++kind) {
        scene s = scene_make((scene_kind)kind, 20000, kind % 2, pleat_scene_random(&rng));
        pleat_params p = pleat_default_params();
        p.distance = s.distance;
        p.stiffness = 0.8f;
        p.rest_positions = s.rest;
        result want = run("scalar", 1, &s, &p);
        for (size_t i = 0; i < sizeof isas / sizeof isas[0]; ++i) {
            if (!pleat_isa_available(isas[i]))
                continue;
            for (int threads = 1; threads <= 3; threads += 2) {
                result got = run(isas[i], threads, &s, &p);
                cr_assert(got.particles == want.particles, "%s: %s, %d threads: particles differ",
                          scene_name(kind), isas[i], threads);
                cr_assert(got.pairs == want.pairs, "%s: %s: pairs differ", scene_name(kind),
                          isas[i]);
                cr_assert(got.stats == want.stats, "%s: %s: stats differ", scene_name(kind),
                          isas[i]);
                ++compared;
            }
        }
        scene_free(&s);
    }
    cr_assert_gt(compared, SCENE_KIND_COUNT * 2, "at least scalar and one SIMD variant");
}

/* The leaf-1 ecx bits the AVX2 kernels' flags imply: SSE3, SSSE3, SSE4.1,
 * SSE4.2, POPCNT. */
static const unsigned implied[] = {1u << 0, 1u << 9, 1u << 19, 1u << 20, 1u << 23};
#define IMPLIED (1u << 0 | 1u << 9 | 1u << 19 | 1u << 20 | 1u << 23)

/* The AVX2 decision on given cpuid/xgetbv values: every requirement
 * missing in turn (above all an OS that does not save YMM state: the
 * instructions exist, yet would fault). */
Test(isa, avx2_needs_the_cpu_and_the_os)
{
    const unsigned osxsave = 1u << 27 | IMPLIED, avx = 1u << 28, ymm = 6, avx2 = 1u << 5;
    cr_assert(pleat_avx2_usable(osxsave | avx, ymm, 7, avx2));
    cr_assert(pleat_avx2_usable(osxsave | avx, ymm | 0xe0, 13, avx2 | 1)); /* AVX-512 state too */
    cr_assert(!pleat_avx2_usable(avx | IMPLIED, ymm, 7, avx2), "no OSXSAVE");
    cr_assert(!pleat_avx2_usable(osxsave, ymm, 7, avx2), "no AVX");
    for (int k = 0; k < 5; ++k)
        cr_assert(!pleat_avx2_usable((osxsave | avx) & ~implied[k], ymm, 7, avx2),
                  "implied feature %d off", k);
    cr_assert(!pleat_avx2_usable(osxsave | avx, 2, 7, avx2), "YMM state off");
    cr_assert(!pleat_avx2_usable(osxsave | avx, 4, 7, avx2), "XMM state off");
    cr_assert(!pleat_avx2_usable(osxsave | avx, ymm, 6, avx2), "no leaf 7");
    cr_assert(!pleat_avx2_usable(osxsave | avx, ymm, 7, avx2 ^ ~0u), "no AVX2 bit");
}

/* The AVX-512 decision: AVX2's, plus the F, DQ, BW and VL bits the kernels
 * are built with and the OS saving the opmask and both ZMM parts. */
Test(isa, avx512_needs_the_cpu_and_the_os)
{
    const unsigned fma = 1u << 12, f16c = 1u << 29;
    const unsigned osxsave = 1u << 27 | IMPLIED | fma | f16c, avx = 1u << 28, avx2 = 1u << 5;
    const unsigned zmm = 0xe6, f = 1u << 16, dq = 1u << 17, bw = 1u << 30, vl = 1u << 31;
    const unsigned all = avx2 | f | dq | bw | vl;
    cr_assert(pleat_avx512_usable(osxsave | avx, zmm, 7, all));
    /* leaf-1 ecx as read on the CI machine (a VM), x87 state and more,
     * every leaf-7 bit */
    cr_assert(pleat_avx512_usable(0xfffa3203, 0x2e7, 13, ~0u));
    cr_assert(!pleat_avx512_usable(avx | IMPLIED | fma | f16c, zmm, 7, all), "no OSXSAVE");
    cr_assert(!pleat_avx512_usable(osxsave, zmm, 7, all), "no AVX");
    cr_assert(!pleat_avx512_usable((osxsave | avx) & ~fma, zmm, 7, all), "no FMA");
    cr_assert(!pleat_avx512_usable((osxsave | avx) & ~f16c, zmm, 7, all), "no F16C");
    cr_assert(!pleat_avx512_usable(osxsave | avx, zmm, 7, all & ~avx2), "no AVX2");
    const unsigned bit[] = {f, dq, bw, vl};
    for (int k = 0; k < 4; ++k)
        cr_assert(!pleat_avx512_usable(osxsave | avx, zmm, 7, all & ~bit[k]), "feature %d off", k);
    for (unsigned state = 0x20; state <= 0x80; state <<= 1)
        cr_assert(!pleat_avx512_usable(osxsave | avx, zmm & ~state, 7, all), "state %#x off",
                  state);
    cr_assert(!pleat_avx512_usable(osxsave | avx, 6, 7, all), "only YMM state");
    cr_assert(!pleat_avx512_usable(osxsave | avx, 0xe4, 7, all), "ZMM state without XMM state");
    cr_assert(!pleat_avx512_usable(osxsave | avx, 0xe2, 7, all), "ZMM state without YMM state");
    cr_assert(!pleat_avx512_usable(osxsave | avx, zmm, 6, all), "no leaf 7");
}

/* The x86 variants this machine may run, as the library reads cpuid and
 * xgetbv, are those the compiler's own run-time check reports (which also
 * asks the OS): a wrong reading would skip a variant's tests unseen. */
Test(isa, x86_variants_match_the_compilers_check)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    cr_assert_eq(pleat_isa_available("sse2"), !!__builtin_cpu_supports("sse2"));
    cr_assert_eq(pleat_isa_available("avx2"), !!__builtin_cpu_supports("avx2"));
    int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                 __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    cr_assert_eq(pleat_isa_available("avx512"), avx512);
#else
    cr_skip_test("not an x86-64 build");
#endif
}
