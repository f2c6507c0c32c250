/* Every public call runs in the default floating-point environment: round
 * to nearest, exceptions masked, no flush-to-zero or denormals-are-zero,
 * whatever the caller set. Game engines and VFX tools often turn FTZ/DAZ
 * on (some compilers do at start-up), and under them, or another rounding
 * mode, the checks, the corrections and the apply give other bits: the
 * promise of the same bits on every ISA, thread count and backend (CUDA is
 * built without flush-to-zero) holds in one environment only. The worker
 * threads set it once when they start (cpu/pool.c); the calling thread for
 * the length of a call, after which the caller's environment, exception
 * flags included, is back as it was.
 *
 * On Windows the SSE unit's control and status register (MXCSR), where
 * every float operation of pleat's runs on x86-64, is set and restored
 * directly: MinGW's fegetenv and fesetenv, as Wine runs them, neither keep
 * nor reset its flush-to-zero, denormals-are-zero and rounding bits. */
#ifndef PLEAT_CORE_FP_H
#define PLEAT_CORE_FP_H

#if defined(_WIN32) && defined(__x86_64__)
#include <xmmintrin.h>

typedef unsigned pleat_fp_env; /* MXCSR */

/* Round to nearest, every exception masked, its flags clear, no FTZ/DAZ. */
#define PLEAT_MXCSR_DEFAULT 0x1f80u

static inline void pleat_fp_default(void)
{
    _mm_setcsr(PLEAT_MXCSR_DEFAULT);
}

static inline void pleat_fp_enter(pleat_fp_env *saved)
{
    *saved = _mm_getcsr();
    pleat_fp_default();
}

static inline void pleat_fp_leave(const pleat_fp_env *saved)
{
    _mm_setcsr(*saved);
}
#else
#include <fenv.h>

typedef fenv_t pleat_fp_env;

static inline void pleat_fp_default(void)
{
    fesetenv(FE_DFL_ENV);
}

static inline void pleat_fp_enter(pleat_fp_env *saved)
{
    fegetenv(saved);
    pleat_fp_default();
}

static inline void pleat_fp_leave(const pleat_fp_env *saved)
{
    fesetenv(saved);
}
#endif

#endif
