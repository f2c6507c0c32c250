/* The per-ISA kernel table. keys.c, gather.c, sweep.c, apply.c and kernels.c are
 * compiled once per ISA with -DPLEAT_ISA=<name> -DPLEAT_ISA_<NAME>; each
 * build names its functions <function>_<isa> through PLEAT_KERNEL so the
 * variants link side by side, and kernels.c gathers them into one table. */
#ifndef PLEAT_CPU_KERNELS_H
#define PLEAT_CPU_KERNELS_H

#include "pool.h"

typedef struct pleat_kernels {
    const char *name;
    pleat_task_fn bounds; /* checks + box of one chunk of slots */
    pleat_task_fn keys;   /* sort keys of one chunk of slots */
    pleat_task_fn gather; /* one chunk of sorted entries laid out in key order */
    pleat_task_fn gather_copy; /* the gather's second pass over one part */
    pleat_task_fn sweep;  /* sweep + narrow phase of one part (run) of sorted particles */
    pleat_task_fn apply;  /* fixed-point sums into one part of the particles */
} pleat_kernels;

#define PLEAT_CAT_(a, b) a##_##b
#define PLEAT_CAT(a, b) PLEAT_CAT_(a, b)
#define PLEAT_KERNEL(name) PLEAT_CAT(pleat_##name, PLEAT_ISA)

#ifdef PLEAT_ISA
void PLEAT_KERNEL(bounds_task)(void *arg, uint32_t chunk);
void PLEAT_KERNEL(keys_task)(void *arg, uint32_t chunk);
void PLEAT_KERNEL(gather_task)(void *arg, uint32_t chunk);
void PLEAT_KERNEL(gather_copy_task)(void *arg, uint32_t part);
void PLEAT_KERNEL(sweep_task)(void *arg, uint32_t part);
void PLEAT_KERNEL(apply_task)(void *arg, uint32_t part);
#endif

extern const pleat_kernels pleat_kernels_scalar, pleat_kernels_sse2, pleat_kernels_avx2,
    pleat_kernels_avx512, pleat_kernels_neon;

#endif
