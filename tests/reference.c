#include "reference.h"
#include "core/grid.h"
#include "portable.h"
#include "scenes.h"

#include <stdio.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void die(const char *why)
{
    fprintf(stderr, "test support: %s\n", why);
    abort();
}

const char *scene_name(scene_kind kind)
{
    static const char *names[] = {"cloud", "folded", "clusters",  "plane",
                                  "line",  "coincident", "far", "pinned"};
    return kind < SCENE_KIND_COUNT ? names[kind] : "?";
}

static void set(float *p, float x, float y, float z, float w)
{
    p[0] = x;
    p[1] = y;
    p[2] = z;
    p[3] = w;
}

/* n uniform numbers in [0, 1), drawn in order. (Never draw several as the
 * arguments of one call: their order is unspecified, and x86-64 and AArch64
 * compilers do pick different ones.) */
static void draw(uint64_t *rng, float *out, int n)
{
    for (int k = 0; k < n; ++k)
        out[k] = pleat_scene_uniform(rng);
}

static void fill_cloud(scene *s, uint64_t *rng, float side, float offset)
{
    for (uint32_t i = 0; i < s->count; ++i) {
        float u[4];
        draw(rng, u, 4);
        set(s->particles + 4 * (size_t)i, offset + u[0] * side, offset + u[1] * side,
            offset + u[2] * side, 0.25f + u[3]);
    }
}

/* The side of a cube holding about 6 neighbours per particle: (n * 0.7)^(1/3)
 * distances, found with integers so every machine makes the same scene. */
static float cloud_side(const scene *s)
{
    uint32_t cube = 1;
    while ((uint64_t)cube * cube * cube * 10 < (uint64_t)s->count * 7)
        ++cube;
    return (float)cube * s->distance;
}

/* A res x res sheet (s->count particles) folded in 2 to 5 layers. */
static void fill_folded(scene *s, uint64_t *rng, uint32_t res)
{
    float spacing = s->distance / 0.9f;
    uint32_t layers = 2 + (uint32_t)(pleat_scene_random(rng) % 4);
    pleat_scene_folded_sheet(res, layers, spacing, 0.6f * spacing, s->particles, NULL);
}

/* Dense cubes 2 distances wide, 100 apart, about 300 particles in each. */
static void fill_clusters(scene *s, uint64_t *rng)
{
    uint32_t clusters = 5 + s->count / 300;
    for (uint32_t i = 0; i < s->count; ++i) {
        uint32_t c = (uint32_t)(pleat_scene_random(rng) % clusters);
        float cx = 100.0f * (float)c, r = 2.0f * s->distance;
        float u[3];
        draw(rng, u, 3);
        set(s->particles + 4 * (size_t)i, cx + u[0] * r, u[1] * r, -cx + u[2] * r, 1.0f);
    }
}

/* A square at z = 3, about 4 neighbours per particle. */
static void fill_plane(scene *s, uint64_t *rng)
{
    float side = sqrtf((float)s->count * 3.14f / 4.0f) * s->distance;
    for (uint32_t i = 0; i < s->count; ++i) {
        float u[2];
        draw(rng, u, 2);
        set(s->particles + 4 * (size_t)i, u[0] * side, u[1] * side, 3.0f, 1.0f);
    }
}

/* A segment along y, about 6 neighbours per particle. */
static void fill_line(scene *s, uint64_t *rng)
{
    for (uint32_t i = 0; i < s->count; ++i) {
        float t = pleat_scene_uniform(rng) * (float)s->count * s->distance / 3.0f;
        set(s->particles + 4 * (size_t)i, 1.0f, -2.0f + t, 5.0f, 2.0f);
    }
}

/* Spots of about 8 particles each at the same position. */
static void fill_coincident(scene *s, uint64_t *rng)
{
    uint32_t spots = 7 + s->count / 8;
    for (uint32_t i = 0; i < s->count; ++i) {
        uint32_t spot = (uint32_t)(pleat_scene_random(rng) % spots);
        set(s->particles + 4 * (size_t)i, (float)(spot % 16) * 0.3f * s->distance, 0.0f,
            (float)(spot / 16) * 0.5f * s->distance, 1.0f);
    }
}

/* The particles of a scene of `kind`, drawn from rng. */
static void fill(scene *s, scene_kind kind, uint64_t *rng, uint32_t res)
{
    switch (kind) {
    case SCENE_CLOUD:
    case SCENE_PINNED:
        fill_cloud(s, rng, cloud_side(s), 0.0f);
        if (kind == SCENE_PINNED)
            for (uint32_t i = 0; i < s->count; i += 3)
                s->particles[4 * (size_t)i + 3] = 0.0f;
        break;
    case SCENE_FAR: fill_cloud(s, rng, cloud_side(s), 1e5f); break;
    case SCENE_FOLDED: fill_folded(s, rng, res); break;
    case SCENE_CLUSTERS: fill_clusters(s, rng); break;
    case SCENE_PLANE: fill_plane(s, rng); break;
    case SCENE_LINE: fill_line(s, rng); break;
    case SCENE_COINCIDENT: fill_coincident(s, rng); break;
    default: die("unknown scene kind");
    }
}

scene scene_make(scene_kind kind, uint32_t n, int with_rest, uint64_t seed)
{
    uint64_t rng = seed * 7919 + kind;
    scene s = {0};
    s.distance = 0.1f + pleat_scene_uniform(&rng);
    uint32_t res = 0;
    if (kind == SCENE_FOLDED) {
        res = (uint32_t)sqrt((double)n);
        res = res < 4 ? 4 : res;
        n = res * res;
    }
    s.count = n;
    s.particles = calloc((size_t)n * 4, sizeof(float));
    if (!s.particles)
        die("out of memory");
    fill(&s, kind, &rng, res);
    if (with_rest) {
        s.rest = copy_floats(s.particles, (size_t)n * 4);
        /* jitter so some pairs are close at rest and some are not */
        for (size_t i = 0; i < (size_t)n * 4; ++i)
            s.rest[i] += (pleat_scene_uniform(&rng) - 0.5f) * s.distance;
    }
    return s;
}

void scene_free(scene *s)
{
    free(s->particles);
    free(s->rest);
    s->particles = s->rest = NULL;
}

uint32_t *random_subset(uint32_t count, uint64_t seed, uint32_t *num)
{
    uint32_t *all = malloc(((size_t)count + 1) * sizeof *all);
    if (!all)
        die("out of memory");
    for (uint32_t i = 0; i < count; ++i)
        all[i] = i;
    uint64_t rng = seed;
    for (uint32_t i = count; i > 1; --i) { /* Fisher-Yates */
        uint32_t j = (uint32_t)(pleat_scene_random(&rng) % i);
        uint32_t t = all[i - 1];
        all[i - 1] = all[j];
        all[j] = t;
    }
    *num = count ? (uint32_t)(pleat_scene_random(&rng) % count) : 0;
    return all;
}

uint32_t *random_large_subset(uint32_t count, uint64_t *rng, uint32_t *num)
{
    for (;;) {
        uint32_t *subset = random_subset(count, pleat_scene_random(rng), num);
        if (*num >= count / 4)
            return subset;
        free(subset);
    }
}

static void takes_part(const pleat_params *params, uint32_t count, uint8_t *mask)
{
    memset(mask, params->indices ? 0 : 1, count);
    for (uint32_t s = 0; params->indices && s < params->num_indices; ++s)
        mask[params->indices[s]] = 1;
}

static float sq(float a)
{
    return a * a;
}

uint64_t reference_tests(const float *particles, uint32_t count, const pleat_params *params)
{
    uint8_t *mask = malloc(count + 1);
    uint32_t *key = malloc((count + 1) * sizeof *key);
    if (!mask || !key)
        die("out of memory");
    takes_part(params, count, mask);
    float lower[3] = {INFINITY, INFINITY, INFINITY}, upper[3] = {-INFINITY, -INFINITY, -INFINITY};
    uint32_t taking = 0;
    for (uint32_t i = 0; i < count; ++i) {
        for (int a = 0; mask[i] && a < 3; ++a) {
            float v = particles[4 * (size_t)i + a];
            lower[a] = v < lower[a] ? v : lower[a];
            upper[a] = v > upper[a] ? v : upper[a];
        }
        taking += mask[i];
    }
    uint64_t tests = 0;
    if (params->distance > 0.0f && taking >= 2) {
        pleat_grid g = pleat_grid_setup(lower, upper, params->distance);
        for (uint32_t i = 0; i < count; ++i) {
            const float *p = particles + 4 * (size_t)i;
            key[i] = pleat_grid_key(&g, p[0], p[1], p[2]);
        }
        for (uint32_t i = 0; i < count; ++i) {
            for (uint32_t j = i + 1; mask[i] && j < count; ++j) {
                if (!mask[j])
                    continue;
                uint32_t ka = key[i] < key[j] ? key[i] : key[j];
                uint32_t kb = key[i] < key[j] ? key[j] : key[i];
                uint32_t lo, hi;
                pleat_key_range(ka, g.sweep_reach, &lo, &hi);
                for (int c = 0; c < PLEAT_NUM_COLUMNS; ++c) {
                    uint32_t off = pleat_column_offset(c);
                    if (kb >= lo + off && kb < hi + off) {
                        ++tests;
                        break;
                    }
                }
            }
        }
    }
    free(key);
    free(mask);
    return tests;
}

uint32_t *brute_force_pairs(const float *particles, uint32_t count, const pleat_params *params,
                            size_t *num)
{
    uint8_t *mask = malloc(count + 1);
    if (!mask)
        die("out of memory");
    takes_part(params, count, mask);
    float d = params->distance, d2 = d * d;
    size_t cap = 1024, n = 0;
    uint32_t *out = malloc(cap * 2 * sizeof *out);
    if (!out)
        die("out of memory");
    for (uint32_t i = 0; d > 0.0f && i < count; ++i) {
        if (!mask[i])
            continue;
        const float *a = particles + 4 * (size_t)i;
        for (uint32_t j = i + 1; j < count; ++j) {
            const float *b = particles + 4 * (size_t)j;
            if (!mask[j])
                continue;
            /* the contract: |x_j - x_i|^2 <= d^2, in float, summed in order */
            float l2 = sq(b[0] - a[0]) + sq(b[1] - a[1]);
            l2 = l2 + sq(b[2] - a[2]);
            if (!(l2 <= d2))
                continue;
            if (params->rest_positions) {
                const float *ra = params->rest_positions + 4 * (size_t)i;
                const float *rb = params->rest_positions + 4 * (size_t)j;
                float r2 = sq(rb[0] - ra[0]) + sq(rb[1] - ra[1]);
                r2 = r2 + sq(rb[2] - ra[2]);
                if (r2 < d2)
                    continue;
            }
            if (n == cap) {
                cap *= 2;
                out = realloc(out, cap * 2 * sizeof *out);
                if (!out)
        die("out of memory");
            }
            out[2 * n] = i;
            out[2 * n + 1] = j;
            ++n;
        }
    }
    free(mask);
    *num = n;
    return out;
}

void reference_response(const float *particles, uint32_t count, const pleat_params *params,
                        const uint32_t *pairs, size_t num_pairs, double *out)
{
    for (size_t i = 0; i < (size_t)count * 4; ++i)
        out[i] = particles[i];
    double d = params->distance, s = params->stiffness;
    for (size_t k = 0; k < num_pairs; ++k) {
        const float *a = particles + 4 * (size_t)pairs[2 * k];
        const float *b = particles + 4 * (size_t)pairs[2 * k + 1];
        double diff[3] = {(double)b[0] - a[0], (double)b[1] - a[1], (double)b[2] - a[2]};
        double len = sqrt(diff[0] * diff[0] + diff[1] * diff[1] + diff[2] * diff[2]);
        if (len == 0.0)
            continue;
        double wa = a[3], wb = b[3];
        double scale = s / (wa + wb + FLT_EPSILON) * (1.0 - d / len);
        for (int c = 0; c < 3; ++c) {
            out[4 * (size_t)pairs[2 * k] + c] += wa * scale * diff[c];
            out[4 * (size_t)pairs[2 * k + 1] + c] -= wb * scale * diff[c];
        }
    }
}

uint64_t hash_bytes(const void *data, size_t bytes)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < bytes; ++i)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

float *copy_floats(const float *src, size_t n)
{
    float *dst = malloc((n + 1) * sizeof *dst);
    if (!dst)
        die("out of memory");
    memcpy(dst, src, n * sizeof *dst);
    return dst;
}

double reference_tolerance(double ref, uint32_t pairs_of_particle, float distance)
{
    double ulp = nextafterf((float)fabs(ref), INFINITY) - (float)fabs(ref);
    return ulp + pairs_of_particle * (double)distance * 0x1p-19;
}

/* A CPU context made with a variant forced (`isa`, the name PLEAT_CPU_ISA
 * takes) must run that one: one that ran another variant would make each
 * per-variant test compare that other variant with itself. */
static void check_forced_isa(pleat_context *ctx, const char *isa)
{
    if (!isa || !*isa || pleat_context_backend(ctx) != PLEAT_BACKEND_CPU)
        return;
    const char *runs = pleat_context_describe(ctx); /* "cpu <variant>, ..." */
    const size_t n = strlen(isa);
    if (strncmp(runs, "cpu ", 4) != 0 || strncmp(runs + 4, isa, n) != 0 || runs[4 + n] != ',') {
        fprintf(stderr, "PLEAT_CPU_ISA=%s, yet the context is \"%s\"\n", isa, runs);
        die("the context does not run the variant asked for");
    }
}

pleat_context *reference_context(pleat_backend backend, const char *isa, int threads,
                                 pleat_status *status)
{
    const char *was = getenv("PLEAT_CPU_ISA");
    char *saved = was ? strdup(was) : NULL;
    if (isa)
        portable_setenv("PLEAT_CPU_ISA", *isa ? isa : NULL);
    pleat_context_desc d = pleat_default_context_desc();
    d.backend = backend;
    d.cpu_threads = threads;
    pleat_context *ctx = NULL;
    *status = pleat_context_create(&d, &ctx);
    if (isa)
        portable_setenv("PLEAT_CPU_ISA", saved);
    if (*status == PLEAT_OK)
        check_forced_isa(ctx, isa ? isa : saved);
    free(saved);
    return *status == PLEAT_OK ? ctx : NULL;
}

uint32_t *pleat_pairs(pleat_context *ctx, const float *particles, uint32_t count,
                      const pleat_params *params, size_t *num)
{
    size_t total = 0, again = 0;
    if (pleat_find_pairs(ctx, particles, count, params, NULL, 0, &total) != PLEAT_OK)
        die("pair count failed");
    uint32_t *pairs = malloc((total + 1) * 2 * sizeof *pairs);
    if (!pairs)
        die("out of memory");
    if (pleat_find_pairs(ctx, particles, count, params, pairs, total, &again) != PLEAT_OK)
        die("pair list failed");
    if (again != total)
        die("the pair list is not as long as the count said");
    *num = total;
    return pairs;
}

void collide_hashes(pleat_context *ctx, const float *particles, uint32_t count,
                    const pleat_params *p, int calls, uint64_t *h_collide, uint64_t *h_pairs)
{
    size_t num;
    uint32_t *pairs = pleat_pairs(ctx, particles, count, p, &num);
    *h_pairs = hash_bytes(pairs, num * 2 * sizeof *pairs);
    free(pairs);
    float *work = copy_floats(particles, (size_t)count * 4);
    for (int c = 0; c < calls; ++c)
        if (pleat_self_collide(ctx, work, count, p, NULL) != PLEAT_OK)
            die("self_collide failed");
    *h_collide = hash_bytes(work, (size_t)count * 4 * sizeof(float));
    free(work);
}
