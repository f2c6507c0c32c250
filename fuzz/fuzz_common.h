/* Shared by the pleat fuzz harnesses: turns arbitrary bytes into a call
 * (counts, positions with NaN/Inf/denormals/huge/tiny values and duplicates,
 * distance, stiffness, indices, rest positions, misuse) and checks the
 * contract of pleat.h on the result. Any broken invariant prints what and
 * aborts, so libFuzzer (or the replay runner) reports the input. */
#ifndef PLEAT_FUZZ_COMMON_H
#define PLEAT_FUZZ_COMMON_H

#include <pleat.h>

#include <stddef.h>
#include <stdint.h>

/* Creates the contexts (every available ISA x 1, 2, 3 threads, CUDA where
 * there is one, a job system's) once. */
void fz_init(void);

/* One input through pleat_self_collide / pleat_find_pairs, with checks. */
void fz_collide(const uint8_t *data, size_t size);
void fz_pairs(const uint8_t *data, size_t size);

#endif
