#include "scenes.h"

#include <math.h>
#include <stdlib.h>

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double pleat_scene_median(double *values, size_t count)
{
    qsort(values, count, sizeof *values, compare_double);
    size_t mid = count / 2;
    return count % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

uint64_t pleat_scene_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

float pleat_scene_uniform(uint64_t *state)
{
    return (float)(pleat_scene_random(state) >> 40) * 0x1p-24f;
}

uint32_t pleat_scene_folded_sheet(uint32_t res, uint32_t layers, float spacing, float gap,
                                  float *particles, float *rest)
{
    uint32_t seg = (res + layers - 1) / layers; /* columns per layer */
    for (uint32_t j = 0; j < res; ++j) {
        for (uint32_t i = 0; i < res; ++i) {
            uint32_t layer = i / seg, u = i % seg;
            uint32_t along = layer % 2 ? seg - 1 - u : u; /* back and forth */
            float *p = particles + 4 * ((size_t)j * res + i);
            p[0] = (float)along * spacing;
            p[1] = (float)j * spacing;
            p[2] = (float)layer * gap;
            p[3] = 1.0f;
            if (rest) {
                float *r = rest + 4 * ((size_t)j * res + i);
                r[0] = (float)i * spacing;
                r[1] = (float)j * spacing;
                r[2] = 0.0f;
                r[3] = 0.0f;
            }
        }
    }
    return (res + seg - 1) / seg;
}

void pleat_scene_uniform_cloud(uint32_t count, float distance, float neighbours, uint64_t seed,
                               float *particles)
{
    /* density n / V with (4/3) pi d^3 * n / V = neighbours */
    double ball = 4.0 / 3.0 * 3.14159265358979 * (double)distance * distance * distance;
    float side = (float)cbrt(ball * count / (double)neighbours);
    uint64_t state = seed;
    for (uint32_t i = 0; i < count; ++i) {
        float *p = particles + 4 * (size_t)i;
        p[0] = pleat_scene_uniform(&state) * side;
        p[1] = pleat_scene_uniform(&state) * side;
        p[2] = pleat_scene_uniform(&state) * side;
        p[3] = 1.0f;
    }
}

/* One fold of the crumpled sheet: every point on the positive side of the
 * line through c with normal nrm (in xy) is wrapped over the top of the
 * stack, around an axis on that line at height axis_z. A point at height z
 * lies on the cylinder of radius r = axis_z - z; its distance s past the line
 * is an arc length on that cylinder, so each layer keeps its length and lands
 * on top, reversed, `gap`-spaced like the layers below. */
static void crumple_fold(float *particles, size_t count, const double c[2], const double nrm[2],
                         double axis_z)
{
    const double pi = 3.14159265358979323846;
    for (size_t k = 0; k < count; ++k) {
        float *p = particles + 4 * k;
        double s = ((double)p[0] - c[0]) * nrm[0] + ((double)p[1] - c[1]) * nrm[1];
        if (s <= 0.0)
            continue;
        double r = axis_z - (double)p[2], s2, z2;
        double phi = s / r;
        if (phi <= pi) {
            s2 = r * sin(phi);
            z2 = axis_z - r * cos(phi);
        } else {
            s2 = -(s - pi * r);
            z2 = axis_z + r;
        }
        p[0] = (float)((double)p[0] + (s2 - s) * nrm[0]);
        p[1] = (float)((double)p[1] + (s2 - s) * nrm[1]);
        p[2] = (float)z2;
    }
}

/* A few random plane waves over xy: sum of sin(k . xy + phase), k with a
 * random direction and a wavelength in [lo, hi]. */
typedef struct crumple_waves {
    int count;
    double k[6][2], phase[6], amp[6];
} crumple_waves;

static crumple_waves crumple_make_waves(uint64_t *state, int count, double lo, double hi,
                                        double amp_per_wavelength)
{
    const double two_pi = 6.28318530717958647692;
    crumple_waves w;
    w.count = count;
    for (int i = 0; i < count; ++i) {
        double wavelength = lo + (hi - lo) * (double)pleat_scene_uniform(state);
        double angle = two_pi * (double)pleat_scene_uniform(state);
        w.k[i][0] = two_pi / wavelength * cos(angle);
        w.k[i][1] = two_pi / wavelength * sin(angle);
        w.phase[i] = two_pi * (double)pleat_scene_uniform(state);
        w.amp[i] = amp_per_wavelength * wavelength;
    }
    return w;
}

static double crumple_eval(const crumple_waves *w, double x, double y)
{
    double sum = 0.0;
    for (int i = 0; i < w->count; ++i)
        sum += w->amp[i] * sin(w->k[i][0] * x + w->k[i][1] * y + w->phase[i]);
    return sum;
}

/* The flat res x res sheet in the z = 0 plane, spacing apart, every
 * particle free; its rest positions the same, when asked for. */
static void flat_sheet(uint32_t res, float spacing, float *particles, float *rest)
{
    for (uint32_t j = 0; j < res; ++j) {
        for (uint32_t i = 0; i < res; ++i) {
            size_t k = (size_t)j * res + i;
            float *p = particles + 4 * k;
            p[0] = (float)i * spacing;
            p[1] = (float)j * spacing;
            p[2] = 0.0f;
            p[3] = 1.0f;
            if (rest) {
                float *r = rest + 4 * k;
                r[0] = p[0];
                r[1] = p[1];
                r[2] = 0.0f;
                r[3] = 0.0f;
            }
        }
    }
}

/* Three folds, like a napkin: each roughly across the one before, along a
 * line near the middle of what is left, the side to flip chosen at random,
 * wrapped around an axis half a gap above the stack's top. */
static void napkin_folds(float *particles, size_t count, double gap, uint64_t *state)
{
    const double pi = 3.14159265358979323846;
    double base_angle = 2.0 * pi * (double)pleat_scene_uniform(state);
    for (int fold = 0; fold < 3; ++fold) {
        double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY}, top = -INFINITY;
        for (size_t k = 0; k < count; ++k) {
            const float *p = particles + 4 * k;
            /* comparisons, not fmin/fmax: gcc 12 for AArch64 crashes
             * vectorizing those reductions (internal compiler error) */
            for (int a = 0; a < 2; ++a) {
                lo[a] = p[a] < lo[a] ? p[a] : lo[a];
                hi[a] = p[a] > hi[a] ? p[a] : hi[a];
            }
            top = p[2] > top ? p[2] : top;
        }
        double c[2], nrm[2];
        for (int a = 0; a < 2; ++a)
            c[a] = lo[a] + (hi[a] - lo[a]) * (0.4 + 0.2 * (double)pleat_scene_uniform(state));
        double angle =
            base_angle + 0.5 * pi * fold + 0.7 * ((double)pleat_scene_uniform(state) - 0.5);
        if (pleat_scene_uniform(state) < 0.5f)
            angle += pi;
        nrm[0] = cos(angle);
        nrm[1] = sin(angle);
        crumple_fold(particles, count, c, nrm, top + 0.5 * gap);
    }
}

/* Crumple: squeeze the layer stack (gaps from about 0.35 to 1.15 of the
 * spacing, so in places the layers come within the collision distance),
 * wrinkle in the plane (stretch at most about +-25 %), bend with big bumps.
 * extent: half the flat sheet's side. */
static void crumple(float *particles, size_t count, double extent, uint64_t *state)
{
    crumple_waves squeeze = crumple_make_waves(state, 3, extent / 6, extent / 2, 1.0);
    for (int i = 0; i < squeeze.count; ++i)
        squeeze.amp[i] = 1.0 / squeeze.count;
    crumple_waves wrinkle_x = crumple_make_waves(state, 3, extent / 8, extent / 3, 0.013);
    crumple_waves wrinkle_y = crumple_make_waves(state, 3, extent / 8, extent / 3, 0.013);
    crumple_waves bumps = crumple_make_waves(state, 5, extent / 4, extent, 0.04);
    for (size_t k = 0; k < count; ++k) {
        float *p = particles + 4 * k;
        double x = p[0], y = p[1], z = p[2];
        z *= 0.65 + 0.35 * crumple_eval(&squeeze, x, y);
        z += crumple_eval(&bumps, x, y);
        p[0] = (float)(x + crumple_eval(&wrinkle_x, x, y));
        p[1] = (float)(y + crumple_eval(&wrinkle_y, x, y));
        p[2] = (float)z;
    }
}

void pleat_scene_crumpled_sheet(uint32_t res, float spacing, uint64_t seed, float *particles,
                                float *rest)
{
    size_t count = (size_t)res * res;
    flat_sheet(res, spacing, particles, rest);
    uint64_t state = seed ^ 0x63727570706c6564ull; /* "crumpled" */
    napkin_folds(particles, count, spacing, &state);
    crumple(particles, count, 0.5 * (double)(res > 1 ? res - 1 : 1) * (double)spacing, &state);
}
