/* pleat-bench output: an aligned table for people or one JSON document for
 * machines, written row by row as the measurements come in. */
#ifndef PLEAT_BENCH_REPORT_H
#define PLEAT_BENCH_REPORT_H

#include <stdint.h>
#include <stdio.h>

/* A configuration that was asked for but could not run. */
typedef struct bench_skip {
    char backend[16];
    char isa[16];   /* "" when the whole backend is skipped */
    char reason[96];
} bench_skip;

typedef struct bench_header {
    const char *pleat_version;
    const char *arch;
    const char *cpu_model;
    const char *compiler;
    int online_cores;
    int profile;         /* stage times measured */
    int baseline;        /* the plain grid is timed */
    uint64_t seed;
    int rounds;          /* rows timed this often, interleaved; the best round kept */
    uint32_t tests_per_particle; /* params.max_tests per particle (0: no limit) */
    const bench_skip *skips;
    int num_skips;
} bench_header;

typedef struct bench_row {
    const char *scene;
    uint32_t n;
    float distance;
    int rest;            /* rest positions given */
    char backend[24];    /* "cpu", "cuda", or "auto:cpu" ... (variant.label) */
    char isa[16];        /* "-" on CUDA */
    char describe[96];   /* pleat_context_describe() */
    int threads;         /* effective worker threads; 0 on CUDA */
    int repeats;
    double ms, ms_min, ms_max;              /* per call */
    double bounds_keys_ms, sort_ms, sweep_ms, apply_ms; /* medians; 0 without profile */
    uint64_t pairs, tests;
    uint64_t listed, digest; /* pleat_find_pairs' pairs: count, bench_pair_term() sum */
    int has_baseline;
    double baseline_ms;
    uint64_t baseline_pairs, baseline_tests, baseline_digest;
    int baseline_hashed;
    int pairs_match;     /* the same pairs as the baseline; 1 when there is none */
} bench_row;

void bench_report_begin(FILE *out, int json, const bench_header *h);
void bench_report_row(FILE *out, int json, const bench_row *r);
/* mismatches: rows whose pairs differed from the baseline's. */
void bench_report_end(FILE *out, int json, int rows, int mismatches);

#endif
