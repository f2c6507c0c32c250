/* An independent grid-based pair finder, for inputs too large for brute
 * force (the scale test, the fuzz harness's generated inputs). It shares no
 * code with pleat: a uniform grid of cubic cells at least as wide as the
 * distance, particles sorted by their cells' 63-bit keys (21 bits an
 * axis), every pair in the same or a neighbouring cell tested with the
 * contract's float predicate
 *     ((dx*dx + dy*dy) + dz*dz) <= d*d   (in float, no FMA)
 * and, with rest positions, the exclusion of pairs closer than d at rest.
 * Free of any test framework. */
#ifndef PLEAT_TESTS_GRID_REFERENCE_H
#define PLEAT_TESTS_GRID_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

/* The colliding pairs (i < j, ascending, 2 uint32 each) among the taking-part
 * particles (indices[0..num_indices) or, with indices NULL, all count of
 * them), as a malloc'd array (NULL with *num = 0 when there are none).
 * Positions (4 floats per particle) must be finite and distance >= 0 with a
 * finite square. Returns NULL with *num = SIZE_MAX when the box holds more
 * than 2^21 cells on an axis (the caller falls back to brute force) or
 * memory runs out. */
uint32_t *grid_reference_pairs(const float *particles, uint32_t count, const uint32_t *indices,
                               uint32_t num_indices, const float *rest, float distance,
                               size_t *num);

#endif
