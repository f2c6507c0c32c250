/* Times pleat_self_collide on an accordion-folded sheet (rest positions
 * given) and prints the pairs found, ms per call (median) and the backend. */
#include "portable.h"
#include "scenes.h"

#include <pleat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int usage(const char *argv0)
{
    fprintf(
        stderr,
        "usage: %s [--res N] [--layers N] [--repeats N] [--threads N] [--backend auto|cpu|cuda]\n"
        "  times pleat_self_collide on an N x N sheet folded into layers 0.6 spacing apart,\n"
        "  collision distance 0.9 spacing, rest positions given (defaults 255, 4, 21, 0, auto)\n",
        argv0);
    return 2;
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
    qsort(a.ms, (size_t)repeats, sizeof *a.ms, cmp_double);
    double median = a.ms[repeats / 2];
    printf("pleat %s on %s\n", pleat_version(), pleat_context_describe(ctx));
    printf("folded sheet: %ld x %ld particles in %ld layers, distance 0.9, rest positions\n", res,
           res, layers);
    printf("pairs found:  %llu (%llu candidate tests)\n", (unsigned long long)stats.pairs,
           (unsigned long long)stats.tests);
    printf("time:         %.3f ms per call (median of %ld), %.1f ns per particle\n", median,
           repeats, median * 1e6 / a.n);
    return 0;
}

int main(int argc, char **argv)
{
    long res = 255, layers = 4, repeats = 21, threads = 0;
    pleat_context_desc desc = pleat_default_context_desc();
    for (int i = 1; i < argc; i += 2) { /* an option, then its value */
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return usage(argv[0]);
        if (!strcmp(argv[i], "--res"))
            res = strtol(v, NULL, 10);
        else if (!strcmp(argv[i], "--layers"))
            layers = strtol(v, NULL, 10);
        else if (!strcmp(argv[i], "--repeats"))
            repeats = strtol(v, NULL, 10);
        else if (!strcmp(argv[i], "--threads"))
            threads = strtol(v, NULL, 10);
        else if (!strcmp(argv[i], "--backend"))
            desc.backend = !strcmp(v, "cpu")    ? PLEAT_BACKEND_CPU
                         : !strcmp(v, "cuda")   ? PLEAT_BACKEND_CUDA
                         : !strcmp(v, "auto")   ? PLEAT_BACKEND_AUTO
                                                : (pleat_backend)-1;
        else
            return usage(argv[0]);
    }
    if (res < 2 || res > 8192 || layers < 1 || layers > res || repeats < 1 || threads < 0)
        return usage(argv[0]);
    desc.cpu_threads = (int)threads;

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
