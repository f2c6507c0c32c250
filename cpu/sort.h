/* LSD radix sort of 64-bit keys, 8-bit digits, stable. Grid keys are sorted
 * as key << 32 | particle (only the high 32 bits are digits, the particle
 * rides along); pair lists as i << 32 | j (all 64 bits). */
#ifndef PLEAT_CPU_SORT_H
#define PLEAT_CPU_SORT_H

#include <stddef.h>
#include <stdint.h>

/* Sorts keys[0..n) by bits [lo_bit, hi_bit) (multiples of 8), stably; a
 * digit that is the same for every key costs no pass. tmp holds n entries.
 * Returns the array that holds the result: keys or tmp. */
uint64_t *pleat_radix_sort(uint64_t *keys, uint64_t *tmp, size_t n, int lo_bit, int hi_bit);

#endif
