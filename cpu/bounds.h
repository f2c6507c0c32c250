#ifndef PLEAT_CPU_BOUNDS_H
#define PLEAT_CPU_BOUNDS_H

#include "cpu.h"

/* The bytes of the index check's bitmap for count particles: 512 MiB at
 * most, which a 32-bit size_t holds, where count + 7 would wrap. */
static inline size_t pleat_seen_bytes(uint32_t count)
{
    return (size_t)(((uint64_t)count + 7) / 8);
}

/* BAD_INDEX when an index is >= count or repeated; seen holds count bits,
 * clear on entry and left clear (zero it once, when it is allocated). */
pleat_status pleat_cpu_check_indices(const uint32_t *indices, uint32_t num, uint32_t count,
                                     uint8_t *seen);
/* Checks every taking-part particle and finds their box; fills f->grid.
 * NONFINITE_INPUT before INVALID_ARGUMENT (negative mass). */
pleat_status pleat_cpu_bounds(pleat_frame *f, pleat_pool *pool, const pleat_kernels *kern);

#endif
