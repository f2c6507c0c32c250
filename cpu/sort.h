/* LSD radix sort of 64-bit keys, digits of at most 11 bits (8 below 4096
 * keys) spread evenly over the passes, stable, split over the pool.
 * Sort keys (cpu.h) are sorted as key << 32 | particle (only the high 32 bits are
 * digits, the particle rides along); pair lists as i << b | j (all 2b bits,
 * b the bits that hold any particle index).
 * A stable sort has one result, so the split cannot change it. */
#ifndef PLEAT_CPU_SORT_H
#define PLEAT_CPU_SORT_H

#include "pool.h"

#include <stddef.h>
#include <stdint.h>

/* How many parts (one per thread) a sort of n keys takes on a pool of
 * `threads` threads: 1 below 65536 keys, else at most sqrt(n / 2048). */
uint32_t pleat_radix_parts(size_t n, int threads);

/* Scratch a sort of n keys needs on a pool of `threads` threads, in bytes:
 * 256 KiB per part, and 16 KiB. */
size_t pleat_radix_scratch(size_t n, int threads);

/* Sorts keys[0..n) by bits [lo_bit, hi_bit) only (0 <= lo_bit < hi_bit <=
 * 64), stably; a digit that is the same for every key costs no pass. tmp
 * holds n entries, scratch pleat_radix_scratch(n, threads of pool) bytes.
 * Returns the array that holds the result: keys or tmp. */
uint64_t *pleat_radix_sort(pleat_pool *pool, uint64_t *keys, uint64_t *tmp, size_t n, int lo_bit,
                           int hi_bit, void *scratch);

#endif
