#include "isa.h"

#include <stdlib.h>
#include <string.h>

int pleat_avx2_usable(unsigned leaf1_ecx, unsigned xcr0, unsigned max_leaf, unsigned leaf7_ebx)
{
    /* OSXSAVE and AVX, and what -mavx2 lets the compiler use besides:
     * SSE3, SSSE3, SSE4.1, SSE4.2 and POPCNT (the sweep counts lanes with it) */
    const unsigned leaf1 = 1u << 27 | 1u << 28 | 1u << 0 | 1u << 9 | 1u << 19 | 1u << 20 | 1u << 23;
    if ((leaf1_ecx & leaf1) != leaf1)
        return 0;
    if ((xcr0 & 6) != 6)
        return 0; /* XMM and YMM state not enabled */
    return max_leaf >= 7 && (leaf7_ebx >> 5 & 1);
}

int pleat_avx512_usable(unsigned leaf1_ecx, unsigned xcr0, unsigned max_leaf, unsigned leaf7_ebx)
{
    const unsigned f_dq_bw_vl = 1u << 16 | 1u << 17 | 1u << 30 | 1u << 31;
    const unsigned fma_f16c = 1u << 12 | 1u << 29; /* clang's -mavx512f implies them */
    return pleat_avx2_usable(leaf1_ecx, xcr0, max_leaf, leaf7_ebx) &&
           (leaf1_ecx & fma_f16c) == fma_f16c && (leaf7_ebx & f_dq_bw_vl) == f_dq_bw_vl &&
           (xcr0 & 0xe0) == 0xe0; /* opmask, ZMM0-15 upper halves, ZMM16-31 */
}

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static int cpu_sse2(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (d >> 26 & 1);
}

/* Reads what pleat_avx2_usable() and pleat_avx512_usable() decide on, and
 * asks `usable`; xgetbv only where OSXSAVE says it exists (elsewhere it
 * faults). */
static int cpu_x86(int (*usable)(unsigned, unsigned, unsigned, unsigned))
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    unsigned leaf1_ecx = c, xcr0 = 0, max_leaf = __get_cpuid_max(0, NULL), leaf7_ebx = 0;
    if (leaf1_ecx >> 27 & 1) {
        unsigned hi;
        __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(hi) : "c"(0));
    }
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        leaf7_ebx = b;
    }
    return usable(leaf1_ecx, xcr0, max_leaf, leaf7_ebx);
}

static int cpu_avx2(void)
{
    return cpu_x86(pleat_avx2_usable);
}

static int cpu_avx512(void)
{
    return cpu_x86(pleat_avx512_usable);
}
#endif

static int cpu_yes(void)
{
    return 1;
}

typedef struct variant {
    const pleat_kernels *kernels;
    int (*supported)(void);
} variant;

/* Best first. */
static const variant variants[] = {
#ifdef PLEAT_HAVE_AVX512
    {&pleat_kernels_avx512, cpu_avx512},
#endif
#ifdef PLEAT_HAVE_AVX2
    {&pleat_kernels_avx2, cpu_avx2},
#endif
#ifdef PLEAT_HAVE_SSE2
    {&pleat_kernels_sse2, cpu_sse2},
#endif
#ifdef PLEAT_HAVE_NEON
    {&pleat_kernels_neon, cpu_yes}, /* AArch64 always has Advanced SIMD */
#endif
    {&pleat_kernels_scalar, cpu_yes},
};
#define NUM_VARIANTS (sizeof variants / sizeof variants[0])

static const variant *find(const char *name)
{
    for (size_t i = 0; i < NUM_VARIANTS; ++i)
        if (strcmp(variants[i].kernels->name, name) == 0)
            return &variants[i];
    return NULL;
}

int pleat_isa_available(const char *name)
{
    const variant *v = find(name);
    return v && v->supported();
}

pleat_status pleat_isa_select(const pleat_kernels **out)
{
    const char *want = getenv("PLEAT_CPU_ISA");
    if (want && *want) {
        const variant *v = find(want);
        if (!v || !v->supported())
            return PLEAT_ERROR_BACKEND_UNAVAILABLE;
        *out = v->kernels;
        return PLEAT_OK;
    }
    for (size_t i = 0; i < NUM_VARIANTS; ++i) {
        if (variants[i].supported()) {
            *out = variants[i].kernels;
            return PLEAT_OK;
        }
    }
    return PLEAT_ERROR_BACKEND_UNAVAILABLE;
}
