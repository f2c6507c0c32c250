/* Independent references and scene makers for the tests. The brute force
 * tests every pair with the contract's float predicate written out here, not
 * with pleat's own code; the response reference works in double precision. */
#ifndef PLEAT_TESTS_SUPPORT_H
#define PLEAT_TESTS_SUPPORT_H

#include <pleat.h>

#include <stddef.h>
#include <stdint.h>

typedef enum scene_kind {
    SCENE_CLOUD,      /* uniform cube */
    SCENE_FOLDED,     /* accordion sheet, layers closer than the distance */
    SCENE_CLUSTERS,   /* dense balls far apart */
    SCENE_PLANE,      /* all z equal: a zero-extent axis */
    SCENE_LINE,       /* all on one line: two zero-extent axes */
    SCENE_COINCIDENT, /* many particles on few exact points */
    SCENE_FAR,        /* a cloud 1e5 units from the origin */
    SCENE_PINNED,     /* a cloud with a third of the particles pinned */
    SCENE_KIND_COUNT
} scene_kind;

typedef struct scene {
    uint32_t count;
    float *particles; /* 4 * count */
    float *rest;      /* 4 * count: a jittered copy of the start (NULL if unused) */
    float distance;
} scene;

const char *scene_name(scene_kind kind);
/* A random scene of about n particles; with_rest adds rest positions. */
scene scene_make(scene_kind kind, uint32_t n, int with_rest, uint64_t seed);
void scene_free(scene *s);

/* A random subset of 0..count-1 in random order; *num gets its size. */
uint32_t *random_subset(uint32_t count, uint64_t seed, uint32_t *num);

/* Every colliding pair (i < j) in ascending order by testing all pairs;
 * returns a malloc'd array of 2 * *num uint32. */
uint32_t *brute_force_pairs(const float *particles, uint32_t count, const pleat_params *params,
                            size_t *num);

/* Jacobi response in double precision over the given pairs: out gets the
 * corrected positions (4 * count doubles). */
void reference_response(const float *particles, uint32_t count, const pleat_params *params,
                        const uint32_t *pairs, size_t num_pairs, double *out);

/* pleat_find_pairs with the size query; returns malloc'd pairs. */
uint32_t *pleat_pairs(pleat_context *ctx, const float *particles, uint32_t count,
                      const pleat_params *params, size_t *num);

/* A CPU context with the given thread count; aborts the test on failure. */
pleat_context *cpu_context(int threads);

/* FNV-1a over bytes, for determinism checks. */
uint64_t hash_bytes(const void *data, size_t bytes);

float *copy_floats(const float *src, size_t n);

#endif
