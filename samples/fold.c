/* Times pleat_self_collide on an accordion-folded sheet (rest positions
 * given) and prints the pairs found, ms per call (median) and the backend. */
#include "cli.h"
#include "portable.h"
#include "scenes.h"

#include <pleat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints the usage to out; returns the exit status that goes with it. */
static int usage(FILE *out, const char *argv0, int status)
{
    fprintf(out,
            "usage: %s [--res N] [--layers N] [--repeats N] [--threads N]\n"
            "       [--backend auto|cpu|cuda] [--help]\n"
            "  times pleat_self_collide on an N x N sheet (2..8192) folded into layers\n"
            "  (1..N) 0.6 spacing apart, collision distance 0.9 spacing, rest positions\n"
            "  given, over 1..100000 repeats, with 0 (as many as the cores) to %d threads\n"
            "  (defaults 255, 4, 21, 0, auto). Exit status: 0 done, 1 a failed call, 2 a\n"
            "  bad command line.\n",
            argv0, PLEAT_MAX_CPU_THREADS);
    return status;
}

/* The arrays of a run: the sheet as made (n particles, `bytes` long), a copy
 * each call works on, its rest pose, and each call's time in ms. */
typedef struct fold_arrays {
    uint32_t n;
    size_t bytes;
    float *start, *work, *rest;
    double *ms;
} fold_arrays;

/* Times `repeats` calls on a res x res sheet folded in `layers` and prints
 * the median; 1 when a call fails. */
static int time_calls(pleat_context *ctx, long res, long layers, long repeats, fold_arrays a)
{
    uint32_t made =
        pleat_scene_folded_sheet((uint32_t)res, (uint32_t)layers, 1.0f, 0.6f, a.start, a.rest);
    pleat_params params = pleat_default_params();
    params.distance = 0.9f;
    params.rest_positions = a.rest;

    pleat_stats stats = {0, 0};
    for (long r = 0; r < repeats; ++r) {
        memcpy(a.work, a.start, a.bytes);
        double t0 = portable_now_ms();
        pleat_status s = pleat_self_collide(ctx, a.work, a.n, &params, &stats);
        a.ms[r] = portable_now_ms() - t0;
        if (s != PLEAT_OK) {
            fprintf(stderr, "pleat: %s\n", pleat_status_string(s));
            return 1;
        }
    }
    double median = pleat_scene_median(a.ms, (size_t)repeats);
    printf("pleat %s on %s\n", pleat_version(), pleat_context_describe(ctx));
    printf("folded sheet: %ld x %ld particles in %lu layers, distance 0.9, rest positions\n", res,
           res, (unsigned long)made);
    printf("pairs found:  %llu (%llu candidate tests)\n", (unsigned long long)stats.pairs,
           (unsigned long long)stats.tests);
    printf("time:         %.3f ms per call (median of %ld), %.1f ns per particle\n", median,
           repeats, median * 1e6 / a.n);
    return 0;
}

/* The command line, checked whole: 0 to run, 2 for a bad one, -1 after
 * --help. */
static int parse_args(int argc, char **argv, long *res, long *layers, long *repeats,
                      pleat_context_desc *desc)
{
    long threads = 0;
    for (int i = 1; i < argc; i += 2) { /* an option, then its value */
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--help"))
            return usage(stdout, argv[0], -1);
        int bad = 0;
        if (!v)
            bad = 1;
        else if (!strcmp(o, "--res"))
            bad = cli_parse_long(v, 2, 8192, res);
        else if (!strcmp(o, "--layers"))
            bad = cli_parse_long(v, 1, 8192, layers);
        else if (!strcmp(o, "--repeats"))
            bad = cli_parse_long(v, 1, 100000, repeats);
        else if (!strcmp(o, "--threads"))
            bad = cli_parse_long(v, 0, PLEAT_MAX_CPU_THREADS, &threads);
        else if (!strcmp(o, "--backend") && !strcmp(v, "cpu"))
            desc->backend = PLEAT_BACKEND_CPU;
        else if (!strcmp(o, "--backend") && !strcmp(v, "cuda"))
            desc->backend = PLEAT_BACKEND_CUDA;
        else if (!strcmp(o, "--backend") && !strcmp(v, "auto"))
            desc->backend = PLEAT_BACKEND_AUTO;
        else
            bad = 1;
        if (bad) {
            fprintf(stderr, "%s: bad option or value: '%s%s%s'\n", argv[0], o, v ? " " : "",
                    v ? v : "");
            return usage(stderr, argv[0], 2);
        }
    }
    if (*layers > *res) {
        fprintf(stderr, "%s: more layers (%ld) than columns (%ld)\n", argv[0], *layers, *res);
        return usage(stderr, argv[0], 2);
    }
    desc->cpu_threads = (int)threads;
    return 0;
}

int main(int argc, char **argv)
{
    long res = 255, layers = 4, repeats = 21;
    pleat_context_desc desc = pleat_default_context_desc();
    int rc = parse_args(argc, argv, &res, &layers, &repeats, &desc);
    if (rc)
        return rc < 0 ? 0 : rc;

    pleat_context *ctx;
    pleat_status s = pleat_context_create(&desc, &ctx);
    if (s != PLEAT_OK) {
        fprintf(stderr, "pleat: %s\n", pleat_status_string(s));
        return 1;
    }
    uint32_t n = (uint32_t)(res * res);
    size_t bytes = (size_t)n * 4 * sizeof(float);
    float *start = malloc(bytes), *work = malloc(bytes), *rest = malloc(bytes);
    double *ms = malloc((size_t)repeats * sizeof *ms);
    int failed = !start || !work || !rest || !ms;
    if (failed)
        fprintf(stderr, "out of memory\n");
    else
        failed = time_calls(ctx, res, layers, repeats,
                            (fold_arrays){n, bytes, start, work, rest, ms});
    free(ms);
    free(rest);
    free(work);
    free(start);
    pleat_context_destroy(ctx);
    return failed;
}
