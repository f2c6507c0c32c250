/* The caller's floating-point environment at its worst for pleat: a
 * rounding mode other than to nearest, or flush-to-zero (x86: with
 * denormals-are-zero; AArch64: FPCR.FZ). pleat promises the bits of the default environment
 * whatever the caller set; test_determinism.c and pleat-check (check.c)
 * check it with these. No test framework: pleat-check runs where there is
 * none (Windows under Wine, the GPU machine). */
#ifndef PLEAT_TESTS_FPENV_H
#define PLEAT_TESTS_FPENV_H

#include "reference.h"

/* How many ways fp_spoil() knows on this machine (3, or 4 on x86 and AArch64). */
int fp_spoil_modes(void);
const char *fp_spoil_name(int mode);
/* Puts the calling thread in spoiled environment `mode`; 0 on success. */
int fp_spoil(int mode);
/* Whether the calling thread is still in it. */
int fp_spoiled(int mode);
/* Back to the default environment (on Windows MXCSR too, which MinGW's
 * fesetenv leaves alone, see core/fp.h). */
void fp_unspoil(void);
/* A cloud of about n particles whose x lies in about [0, 1) and whose y and
 * z are subnormal, distance 1e-3 (about 40 neighbours along x): its
 * differences are subnormal, which FTZ/DAZ would flush to zero. */
scene fp_subnormal_cloud(uint32_t n, uint64_t seed);

#endif
