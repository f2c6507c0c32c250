/* Helpers of the hardening tests (alloc, concurrency, guard, limits, scale,
 * regressions): scenes, an O(n^2) brute force written out from the contract,
 * contexts per CPU kernel variant, buffers that end at a guard page. No
 * pleat code checks pleat here (test_guard, test_concurrency and some of
 * test_alloc compare pleat with its own result elsewhere, as they say). */
#ifndef PLEAT_TESTS_HARDENING_H
#define PLEAT_TESTS_HARDENING_H

#include "reference.h" /* brute_force_pairs */
#include "scenes.h"    /* pleat_scene_random, pleat_scene_uniform */

#include <pleat.h>

#include <stddef.h>
#include <stdint.h>

typedef struct hz_scene {
    uint32_t count;
    float *particles; /* 4 * count */
    float *rest;      /* 4 * count or NULL */
    float distance;
} hz_scene;

/* A cube of n random particles with about 6 neighbours each within the
 * distance (1); every 5th pinned when `pinned`; rest = positions jittered by
 * up to a distance when with_rest. Deterministic for a seed. */
hz_scene hz_cloud(uint32_t n, uint64_t seed, int with_rest, int pinned);
void hz_scene_free(hz_scene *s);

/* CPU context of a forced kernel variant ("" = the best one), or NULL when
 * this build or CPU lacks it (BACKEND_UNAVAILABLE). Fails the test on any
 * other error. Not thread-safe (it sets PLEAT_CPU_ISA for the creation). */
pleat_context *hz_context(const char *isa, int threads);

/* The variants to try, NULL-terminated: tests/isas.h's. */
extern const char *const hz_isas[];

/* A buffer of `bytes` placed so that it ends exactly at an inaccessible page
 * (front = 0) or starts right after one (front = 1): any access past the end
 * (before the start) faults. Release with hz_guard_free. */
void *hz_guard_alloc(size_t bytes, int front);
/* The same, but NULL when the address space cannot be had: pages are backed
 * only once touched, so a huge buffer of which a little is used costs that
 * little. */
void *hz_guard_reserve(size_t bytes, int front);
void hz_guard_free(void *p, size_t bytes, int front);

#endif
