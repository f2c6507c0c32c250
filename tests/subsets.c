#include "subsets.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct subset {
    pthread_t thread;
    pleat_context *ctx;
    float *particles;
    uint32_t count;
    pleat_params params;
    int rounds;
    pleat_status status;
} subset;

static void *run_subset(void *arg)
{
    subset *w = arg;
    w->status = PLEAT_OK;
    for (int r = 0; r < w->rounds && w->status == PLEAT_OK; ++r)
        w->status = pleat_self_collide(w->ctx, w->particles, w->count, &w->params, NULL);
    return NULL;
}

/* Runs both subsets: one after the other (threads 0) or on two threads. */
static const char *run_both(subset w[2], int threads)
{
    if (!threads) {
        run_subset(&w[0]);
        run_subset(&w[1]);
    } else {
        for (int h = 0; h < 2; ++h)
            if (pthread_create(&w[h].thread, NULL, run_subset, &w[h]) != 0)
                return "pthread_create failed";
        for (int h = 0; h < 2; ++h)
            pthread_join(w[h].thread, NULL);
    }
    return w[0].status == PLEAT_OK && w[1].status == PLEAT_OK ? NULL : "a call failed";
}

const char *subsets_check(pleat_context *reference, pleat_context *a, pleat_context *b,
                          const float *particles, uint32_t count, const pleat_params *params,
                          int rounds)
{
    size_t bytes = 16 * (size_t)count;
    uint32_t half = count / 2;
    float *want = malloc(bytes + 1), *got = malloc(bytes + 1);
    uint32_t *idx[2] = {malloc(half * sizeof(uint32_t) + 1), malloc(half * sizeof(uint32_t) + 1)};
    const char *why = "out of memory";
    if (want && got && idx[0] && idx[1]) {
        memcpy(want, particles, bytes);
        memcpy(got, particles, bytes);
        subset w[2];
        for (int h = 0; h < 2; ++h) {
            for (uint32_t k = 0; k < half; ++k)
                idx[h][k] = 2 * k + (uint32_t)h;
            w[h] = (subset){0, reference, want, count, *params, rounds, PLEAT_OK};
            w[h].params.indices = idx[h];
            w[h].params.num_indices = half;
        }
        why = run_both(w, 0);
        w[0].ctx = a;
        w[1].ctx = b;
        w[0].particles = w[1].particles = got;
        if (!why)
            why = run_both(w, 1);
        if (!why && memcmp(want, particles, bytes) == 0)
            why = "the corrections moved nothing";
        if (!why && memcmp(got, want, bytes) != 0)
            why = "a subset's corrections were undone or changed";
    }
    free(idx[1]);
    free(idx[0]);
    free(got);
    free(want);
    return why;
}
