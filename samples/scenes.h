/* Generated cloth scenes shared by the samples, pleat-bench and the tests,
 * and the median their timings report. Particles are 4 floats {x, y, z,
 * inverse mass}; the caller owns the arrays (size them with 4 * count
 * floats). */
#ifndef PLEAT_SAMPLES_SCENES_H
#define PLEAT_SAMPLES_SCENES_H

#include <stddef.h>
#include <stdint.h>

/* A res x res sheet with the given spacing, folded like an accordion into
 * `layers` layers `gap` apart along z (1 <= layers <= res), each
 * ceil(res / layers) columns wide but the last. rest (may be NULL) gets the
 * flat sheet. Inverse mass 1. Count: res * res. Returns the layers made,
 * fewer than asked when the columns run out first (res 8 in 5: 4 of 2). */
uint32_t pleat_scene_folded_sheet(uint32_t res, uint32_t layers, float spacing, float gap,
                                  float *particles, float *rest);

/* count points uniform in a cube sized for about `neighbours` others within
 * `distance` of each; inverse mass 1. seed: any value. */
void pleat_scene_uniform_cloud(uint32_t count, float distance, float neighbours, uint64_t seed,
                               float *particles);

/* A res x res sheet with the given spacing, crumpled onto itself: folded
 * three times along random lines (each fold wraps the stack around a
 * cylinder, layers `spacing` apart, arc length kept), then the layer stack is
 * squeezed in places (gaps between about 0.35 and 1.15 spacing) and bent by a
 * few large random bumps. Deterministic for a given seed (on one platform's
 * libm). rest (may be NULL) gets the flat sheet, as in
 * pleat_scene_folded_sheet. Inverse mass 1. Count: res * res; res >= 2.
 * Meant for a collision distance of about 0.8 spacing. */
void pleat_scene_crumpled_sheet(uint32_t res, float spacing, uint64_t seed, float *particles,
                                float *rest);

/* Sorts values[0 .. count) and returns their median (the mean of the middle
 * two when count is even); count >= 1. */
double pleat_scene_median(double *values, size_t count);

/* A small deterministic generator (splitmix64), for reproducible scenes. */
uint64_t pleat_scene_random(uint64_t *state);
/* Uniform in [0, 1). */
float pleat_scene_uniform(uint64_t *state);

#endif
