#include "fpenv.h"

#include <fenv.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define FTZ_DAZ 0x8040u /* MXCSR: flush-to-zero, denormals-are-zero */
#define MXCSR_DEFAULT 0x1f80u
#define MXCSR_ROUNDING 0x6000u
/* fegetround() reads the x87 unit (glibc, MinGW), pleat's arithmetic runs
 * on SSE: a rounding mode is in force when both have it */
static const unsigned mxcsr_rounding[] = {0x4000u, 0x2000u, 0x6000u};
#define HAVE_FTZ 1
static void ftz_on(void)
{
    _mm_setcsr(_mm_getcsr() | FTZ_DAZ);
}
static int ftz_in_force(void)
{
    return (_mm_getcsr() & FTZ_DAZ) == FTZ_DAZ;
}
#elif defined(__aarch64__)
#define FPCR_FZ (1ull << 24) /* flush-to-zero, inputs and results */
#define HAVE_FTZ 1
static unsigned long long fpcr(void)
{
    unsigned long long v;
    __asm__ volatile("mrs %0, fpcr" : "=r"(v));
    return v;
}
static void ftz_on(void)
{
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr() | FPCR_FZ));
}
static int ftz_in_force(void)
{
    return (fpcr() & FPCR_FZ) != 0;
}
#endif

static const int rounding[] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
static const char *const names[] = {"upward", "downward", "toward zero", "flush to zero"};

int fp_spoil_modes(void)
{
#ifdef HAVE_FTZ
    return 4;
#else
    return 3;
#endif
}

const char *fp_spoil_name(int mode)
{
    return names[mode];
}

int fp_spoil(int mode)
{
    if (mode < 3)
        return fesetround(rounding[mode]);
#ifdef HAVE_FTZ
    ftz_on();
#endif
    return 0;
}

int fp_spoiled(int mode)
{
#ifdef HAVE_FTZ
    if (mode == 3)
        return ftz_in_force();
#endif
    int kept = fegetround() == rounding[mode];
#ifdef MXCSR_ROUNDING
    kept &= (_mm_getcsr() & MXCSR_ROUNDING) == mxcsr_rounding[mode];
#endif
    return kept;
}

void fp_unspoil(void)
{
    fesetenv(FE_DFL_ENV);
#ifdef MXCSR_DEFAULT
    _mm_setcsr(MXCSR_DEFAULT);
#endif
}

scene fp_subnormal_cloud(uint32_t n, uint64_t seed)
{
    scene s = scene_make(SCENE_CLOUD, n, 0, seed);
    for (uint32_t i = 0; i < s.count; ++i) {
        s.particles[4 * (size_t)i] *= 1.0f / 32.0f;
        s.particles[4 * (size_t)i + 1] *= 1e-41f;
        s.particles[4 * (size_t)i + 2] *= 1e-41f;
    }
    s.distance = 1e-3f;
    return s;
}
