/* One check of the rule in pleat.h that separate contexts may correct
 * disjoint subsets of one particle array at the same time, shared by the
 * Criterion suite (test_concurrency.c), the ThreadSanitizer harness
 * (fuzz/stress_threads.c) and the GPU check (check_cuda.c), which cannot
 * share a test framework. Needs only pleat.h and POSIX threads. */
#ifndef PLEAT_TESTS_SUBSETS_H
#define PLEAT_TESTS_SUBSETS_H

#include <pleat.h>

/* Corrects the even and the odd particles of a copy of `particles` (count
 * of them; params gives distance, stiffness, rest; its indices are ignored),
 * `rounds` calls per subset: with `reference`, one subset after the other,
 * and with contexts a and b on two threads at once. The subsets interleave,
 * so they share cache lines. Returns NULL when both copies end with the same
 * bits and the corrections moved something, else what went wrong. */
const char *subsets_check(pleat_context *reference, pleat_context *a, pleat_context *b,
                          const float *particles, uint32_t count, const pleat_params *params,
                          int rounds);

#endif
