#include "fpenv.h"

#include <fenv.h>

/* The flags every mode raises. Their FE_ values are their bits in x86's
 * MXCSR and AArch64's FPSR, which are set directly: raising them by
 * operations, as feraiseexcept does, would trap in mode FP_TRAPS. pleat
 * itself raises inexact, and underflow on subnormals. */
#define RAISED (FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW)

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define FTZ_DAZ 0x8040u /* MXCSR: flush-to-zero, denormals-are-zero */
#define MXCSR_DEFAULT 0x1f80u
#define MXCSR_ROUNDING 0x6000u
#define MXCSR_MASKS 0x1f80u /* every exception masked */
#define MXCSR_FLAGS 0x3fu   /* denormal included, which fenv.h does not name */
_Static_assert(RAISED == 0x0d, "fenv.h's flags are not MXCSR's bits (IE 1, ZE 4, OE 8)");
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
int fp_can_trap(void)
{
    return 1;
}
/* in MXCSR only: pleat's arithmetic runs on SSE */
static void traps_on(void)
{
    _mm_setcsr(_mm_getcsr() & ~MXCSR_MASKS);
}
static int traps_in_force(void)
{
    return (_mm_getcsr() & MXCSR_MASKS) == 0;
}
static void set_flags(void)
{
    feclearexcept(FE_ALL_EXCEPT); /* the x87 unit's too */
    _mm_setcsr((_mm_getcsr() & ~MXCSR_FLAGS) | RAISED);
}
static unsigned register_flags(void)
{
    return _mm_getcsr() & MXCSR_FLAGS;
}
static int default_control(void)
{
    return (_mm_getcsr() & ~MXCSR_FLAGS) == MXCSR_DEFAULT;
}
#elif defined(__aarch64__)
#define FPCR_FZ (1ull << 24) /* flush-to-zero, inputs and results */
#define FPCR_RMODE (3ull << 22)
#define FPCR_TRAPS 0x9f00ull /* IOE, DZE, OFE, UFE, IXE, IDE */
#define FPSR_FLAGS 0x9full   /* IOC, DZC, OFC, UFC, IXC, IDC */
_Static_assert(RAISED == 0x7, "fenv.h's flags are not FPSR's bits (IOC 1, DZC 2, OFC 4)");
#define HAVE_FTZ 1
static unsigned long long fpcr(void)
{
    unsigned long long v;
    __asm__ volatile("mrs %0, fpcr" : "=r"(v));
    return v;
}
static void set_fpcr(unsigned long long v)
{
    __asm__ volatile("msr fpcr, %0" : : "r"(v));
}
static unsigned long long fpsr(void)
{
    unsigned long long v;
    __asm__ volatile("mrs %0, fpsr" : "=r"(v));
    return v;
}
static void ftz_on(void)
{
    set_fpcr(fpcr() | FPCR_FZ);
}
static int ftz_in_force(void)
{
    return (fpcr() & FPCR_FZ) != 0;
}
/* Trapping is optional: without it the trap enable bits read as zero. */
int fp_can_trap(void)
{
    unsigned long long was = fpcr();
    set_fpcr(was | FPCR_TRAPS);
    int kept = (fpcr() & FPCR_TRAPS) == FPCR_TRAPS;
    set_fpcr(was);
    return kept;
}
static void traps_on(void)
{
    set_fpcr(fpcr() | FPCR_TRAPS);
}
static int traps_in_force(void)
{
    return (fpcr() & FPCR_TRAPS) == FPCR_TRAPS;
}
static void set_flags(void)
{
    unsigned long long v = (fpsr() & ~FPSR_FLAGS) | RAISED;
    __asm__ volatile("msr fpsr, %0" : : "r"(v));
}
static unsigned register_flags(void)
{
    return (unsigned)(fpsr() & FPSR_FLAGS);
}
static int default_control(void)
{
    return (fpcr() & (FPCR_RMODE | FPCR_FZ | FPCR_TRAPS)) == 0;
}
#else
int fp_can_trap(void)
{
    return 0;
}
static void set_flags(void)
{
    feclearexcept(FE_ALL_EXCEPT);
    feraiseexcept(RAISED);
}
static unsigned register_flags(void)
{
    return (unsigned)fetestexcept(FE_ALL_EXCEPT);
}
static int default_control(void)
{
    return 1;
}
#endif

static const int rounding[] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
static const char *const names[] = {"upward", "downward", "toward zero", "flush to zero",
                                    "unmasked"};

int fp_spoil_modes(void)
{
#ifdef HAVE_FTZ
    return 4 + fp_can_trap();
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
    set_flags();
    if (mode < 3)
        return fesetround(rounding[mode]);
#ifdef HAVE_FTZ
    if (mode == 3) {
        ftz_on();
        return 0;
    }
    if (mode == FP_TRAPS && fp_can_trap()) {
        traps_on();
        return 0;
    }
#endif
    return -1;
}

int fp_spoiled(int mode)
{
    int kept = fetestexcept(FE_ALL_EXCEPT) == RAISED && register_flags() == RAISED;
#ifdef HAVE_FTZ
    if (mode == 3)
        return kept && ftz_in_force();
    if (mode == FP_TRAPS)
        return kept && traps_in_force();
#endif
    kept &= fegetround() == rounding[mode];
#ifdef MXCSR_ROUNDING
    kept &= (_mm_getcsr() & MXCSR_ROUNDING) == mxcsr_rounding[mode];
#endif
    return kept;
}

int fp_is_default(void)
{
    return fegetround() == FE_TONEAREST && default_control();
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
        float *q = s.particles + 4 * (size_t)i;
        /* every fourth on the x of the one before: a pair whose difference
         * is all subnormal (where x differs, y and z are worth less than a
         * quantum of the sum) */
        q[0] = i % 4 == 3 ? q[-4] : q[0] * (1.0f / 32.0f);
        q[1] *= 1e-41f;
        q[2] *= 1e-41f;
    }
    s.distance = 1e-3f;
    return s;
}
