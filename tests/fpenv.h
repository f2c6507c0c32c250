/* The caller's floating-point environment at its worst for pleat: a
 * rounding mode other than to nearest, flush-to-zero (x86: with
 * denormals-are-zero; AArch64: FPCR.FZ), or every exception unmasked, so
 * that one raised traps (SIGFPE). In every mode some exception flags are
 * raised and the others clear, so that a flag raised inside pleat, or one
 * of the caller's lost there, shows. pleat promises the bits of the default
 * environment whatever the caller set, and the caller's environment back,
 * flags included; test_determinism.c and pleat-check (check.c) check it
 * with these. No test framework: pleat-check runs where there is none
 * (Windows under Wine, the GPU machine). */
#ifndef PLEAT_TESTS_FPENV_H
#define PLEAT_TESTS_FPENV_H

#include "reference.h"

/* The mode that unmasks every exception: one of fp_spoil_modes() only
 * where fp_can_trap(). */
#define FP_TRAPS 4

/* How many ways fp_spoil() knows on this machine: 3, or on x86 and
 * AArch64 4 (flush to zero), and 5 where the CPU can trap. */
int fp_spoil_modes(void);
/* Whether this machine traps floating-point exceptions: x86 does; an
 * AArch64 CPU (or qemu) may not, and then keeps no trap bit of FPCR. */
int fp_can_trap(void);
const char *fp_spoil_name(int mode);
/* Puts the calling thread in spoiled environment `mode`, with the flags of
 * every mode (invalid, divide by zero and overflow raised, the others
 * clear); 0 on success. Spoiling several modes in turn combines them. */
int fp_spoil(int mode);
/* Whether the calling thread is still in it, flags included. */
int fp_spoiled(int mode);
/* Whether the calling thread is in the default environment, flags aside:
 * round to nearest, no flush-to-zero or denormals-are-zero, every
 * exception masked. */
int fp_is_default(void);
/* Back to the default environment (on Windows MXCSR too, which MinGW's
 * fesetenv leaves alone, see core/fp.h), flags clear. */
void fp_unspoil(void);
/* A cloud of about n particles whose x lies in about [0, 1/32) and whose y
 * and z are subnormal, distance 1e-3 (about 40 neighbours along x); every
 * fourth particle has the x of the one before, so that half of them are
 * in a pair (n / 4 pairs) whose difference is all subnormal, which FTZ/DAZ
 * would flush to zero: a coincident pair, not moved. */
scene fp_subnormal_cloud(uint32_t n, uint64_t seed);

#endif
