/* The names of every CPU kernel variant (PLEAT_CPU_ISA), for the suites, the
 * fuzz harnesses and the stress tests that run each one this machine
 * supports: one list, so a new variant is tested everywhere at once. */
#ifndef PLEAT_TESTS_ISAS_H
#define PLEAT_TESTS_ISAS_H

#define PLEAT_TEST_ISAS "scalar", "sse2", "avx2", "avx512", "neon"
/* how many: a constant, for array sizes */
#define PLEAT_TEST_NUM_ISAS (sizeof(const char *const[]){PLEAT_TEST_ISAS} / sizeof(const char *))

#endif
