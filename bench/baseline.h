/* The plain reference pleat-bench times pleat against: a straightforward
 * 27-cell uniform grid on one thread, the textbook way (Teschner et al. 2003
 * spatial hashing when the box is too large for a dense grid).
 *
 * Same pairs as pleat: |x_j - x_i|^2 <= d^2 in float, and with rest positions
 * pairs with |r_j - r_i|^2 < d^2 are skipped. Same Jacobi response formula as
 * pleat_self_collide (pleat.h), accumulated in float, so the positions agree
 * with pleat's only to rounding, not bit for bit. */
#ifndef PLEAT_BENCH_BASELINE_H
#define PLEAT_BENCH_BASELINE_H

#include <stdint.h>

typedef struct bench_baseline bench_baseline;

typedef struct bench_baseline_stats {
    uint64_t pairs;  /* colliding pairs (coincident ones included) */
    uint64_t tests;  /* candidate pairs whose distance was computed */
    uint64_t cells;  /* grid cells (dense) or hash buckets (hashed) */
    int hashed;      /* 1: the box was too large for a dense grid */
} bench_baseline_stats;

/* NULL when out of memory. Scratch is kept and reused across runs. */
bench_baseline *bench_baseline_create(void);
void bench_baseline_destroy(bench_baseline *b);

/* One self-collision pass over particles (count x {x, y, z, inverse mass}),
 * corrected in place. rest may be NULL. With digest non-NULL it also gets
 * the digest (below) of the pairs it found (not for timed runs: it costs).
 * Returns 0, or -1 when out of memory (particles untouched then). */
int bench_baseline_run(bench_baseline *b, float *particles, uint32_t count, const float *rest,
                       float distance, float stiffness, bench_baseline_stats *stats,
                       uint64_t *digest);

/* One pair's term of a pair-set digest: the digest of a set is the sum (mod
 * 2^64) of its pairs' terms, so two lists of the same pairs in any order and
 * either orientation have the same digest. */
uint64_t bench_pair_term(uint32_t i, uint32_t j);

#endif
