#include "fpenv.h"

#include <fenv.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define FTZ_DAZ 0x8040u /* MXCSR: flush-to-zero, denormals-are-zero */
#define MXCSR_DEFAULT 0x1f80u
#endif

static const int rounding[] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
static const char *const names[] = {"upward", "downward", "toward zero", "FTZ/DAZ"};

int fp_spoil_modes(void)
{
#ifdef FTZ_DAZ
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
#ifdef FTZ_DAZ
    _mm_setcsr(_mm_getcsr() | FTZ_DAZ);
#endif
    return 0;
}

int fp_spoiled(int mode)
{
#ifdef FTZ_DAZ
    if (mode == 3)
        return (_mm_getcsr() & FTZ_DAZ) == FTZ_DAZ;
#endif
    return fegetround() == rounding[mode];
}

void fp_unspoil(void)
{
    fesetenv(FE_DFL_ENV);
#ifdef FTZ_DAZ
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
