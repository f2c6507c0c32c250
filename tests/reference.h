/* Independent references and scene makers, free of any test framework (the
 * Criterion suites and pleat-check both use them). The brute force tests
 * every pair with the contract's float predicate written out here, not with
 * pleat's own code; the response reference works in double precision. Scenes
 * are made with exact arithmetic only (no libm), so every machine and
 * architecture makes the same bits. */
#ifndef PLEAT_TESTS_REFERENCE_H
#define PLEAT_TESTS_REFERENCE_H

#include <pleat.h>

#include <stddef.h>
#include <stdint.h>

/* Prints why and aborts (allocation failure, misuse). */
void die(const char *why);

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
/* The same with at least a quarter of the particles (seeds drawn from
 * *rng until one gives that many): a smaller subset may have no pair. */
uint32_t *random_large_subset(uint32_t count, uint64_t *rng, uint32_t *num);

/* Every colliding pair (i < j) in ascending order by testing all pairs;
 * returns a malloc'd array of 2 * *num uint32. */
uint32_t *brute_force_pairs(const float *particles, uint32_t count, const pleat_params *params,
                            size_t *num);

/* pleat_stats.tests from its definition, pair by pair (O(n^2), no sort, no
 * sweep): with the call's grid (the box of the taking-part particles,
 * core/grid.h), a pair is tested when the key of the one that sorts later
 * lies in the other's key range in its own column or, shifted by the
 * column's offset, in one of the 4 neighbouring columns. */
uint64_t reference_tests(const float *particles, uint32_t count, const pleat_params *params);

/* Jacobi response in double precision over the given pairs: out gets the
 * corrected positions (4 * count doubles). */
void reference_response(const float *particles, uint32_t count, const pleat_params *params,
                        const uint32_t *pairs, size_t num_pairs, double *out);

/* FNV-1a over bytes, for determinism checks. */
uint64_t hash_bytes(const void *data, size_t bytes);

float *copy_floats(const float *src, size_t n);

/* pleat_find_pairs with the size query; returns malloc'd pairs. Aborts
 * (die) when a call fails or the list is not as long as the count. */
uint32_t *pleat_pairs(pleat_context *ctx, const float *particles, uint32_t count,
                      const pleat_params *params, size_t *num);

/* Hashes of the pair list of `particles` and of the particles after `calls`
 * successive self-collision passes on a copy; aborts (die) when a call
 * fails. */
void collide_hashes(pleat_context *ctx, const float *particles, uint32_t count,
                    const pleat_params *p, int calls, uint64_t *h_collide, uint64_t *h_pairs);

/* A context on `backend` with `threads` CPU threads (0: one per core). isa
 * NULL leaves PLEAT_CPU_ISA as the environment has it; "" creates the context
 * with the library's own choice; a name forces that CPU variant. The
 * environment is restored afterwards. *status gets the creation status; the
 * context is NULL unless it is PLEAT_OK. */
pleat_context *reference_context(pleat_backend backend, const char *isa, int threads,
                                 pleat_status *status);

/* Error budget of one corrected coordinate against the double reference:
 * each pair's float correction is off by a few float roundings of a value
 * below the distance (bounded by d * 2^-19 with room) plus a fixed-point
 * quantum (d * 2^-30), and the result is rounded once (an ulp). */
double reference_tolerance(double ref, uint32_t pairs_of_particle, float distance);

#endif
