/* Run-time choice of the CPU kernel variant: the best one this build has and
 * the CPU and OS support, once per context; PLEAT_CPU_ISA=name forces one. */
#ifndef PLEAT_CPU_ISA_H
#define PLEAT_CPU_ISA_H

#include "kernels.h"
#include "pleat.h"

/* BACKEND_UNAVAILABLE when PLEAT_CPU_ISA names a variant this build or CPU
 * lacks (or no variant at all). */
pleat_status pleat_isa_select(const pleat_kernels **out);

/* Whether the named variant is built and supported here. */
int pleat_isa_available(const char *name);

/* AVX2 can run when the CPU has AVX (cpuid 1 ecx bit 28), AVX2 (cpuid 7.0
 * ebx bit 5) and what -mavx2 implies (SSE3, SSSE3, SSE4.1, SSE4.2 and
 * POPCNT: ecx bits 0, 9, 19, 20 and 23; a hypervisor may hide one) and the
 * OS saves XMM and YMM state (OSXSAVE, ecx bit 27, and XCR0 bits 1 and 2):
 * the decision on those registers, apart from reading them, so it can be
 * tested on any machine. */
int pleat_avx2_usable(unsigned leaf1_ecx, unsigned xcr0, unsigned max_leaf, unsigned leaf7_ebx);

/* AVX-512 (the kernels' build: F, DQ, BW and VL, cpuid 7.0 ebx bits 16, 17,
 * 30 and 31, with FMA and F16C, ecx bits 12 and 29, which clang's flags
 * imply) can run where AVX2 can and the OS also saves the opmask and ZMM
 * state (XCR0 bits 5, 6 and 7), on the same registers. */
int pleat_avx512_usable(unsigned leaf1_ecx, unsigned xcr0, unsigned max_leaf, unsigned leaf7_ebx);

#endif
