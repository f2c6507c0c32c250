/* Every public call runs in the default floating-point environment: round
 * to nearest, exceptions masked, no flush-to-zero or denormals-are-zero,
 * whatever the caller set. Game engines and VFX tools often turn FTZ/DAZ
 * on (some compilers do at start-up), and under them, or another rounding
 * mode, the checks, the corrections and the apply give other bits: the
 * promise of the same bits on every ISA, thread count and backend (CUDA is
 * built without flush-to-zero) holds in one environment only. The worker
 * threads set it once when they start (cpu/pool.c); the calling thread for
 * the length of a call, after which the caller's environment, exception
 * flags included, is back as it was. */
#ifndef PLEAT_CORE_FP_H
#define PLEAT_CORE_FP_H

#include <fenv.h>

static inline void pleat_fp_default(void)
{
    fesetenv(FE_DFL_ENV);
}

static inline void pleat_fp_enter(fenv_t *saved)
{
    fegetenv(saved);
    pleat_fp_default();
}

static inline void pleat_fp_leave(const fenv_t *saved)
{
    fesetenv(saved);
}

#endif
