#include "support.h"
#include "scenes.h"

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

static void fill_cloud(scene *s, uint64_t *rng, float side, float offset)
{
    for (uint32_t i = 0; i < s->count; ++i)
        set(s->particles + 4 * (size_t)i, offset + pleat_scene_uniform(rng) * side,
            offset + pleat_scene_uniform(rng) * side, offset + pleat_scene_uniform(rng) * side,
            0.25f + pleat_scene_uniform(rng));
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
    cr_assert(s.particles);
    /* side of a cube holding about 6 neighbours per particle */
    float side = cbrtf((float)n * 4.19f / 6.0f) * s.distance;
    switch (kind) {
    case SCENE_CLOUD:
    case SCENE_PINNED:
        fill_cloud(&s, &rng, side, 0.0f);
        if (kind == SCENE_PINNED)
            for (uint32_t i = 0; i < n; i += 3)
                s.particles[4 * (size_t)i + 3] = 0.0f;
        break;
    case SCENE_FAR:
        fill_cloud(&s, &rng, side, 1e5f);
        break;
    case SCENE_FOLDED: {
        float spacing = s.distance / 0.9f;
        uint32_t layers = 2 + (uint32_t)(pleat_scene_random(&rng) % 4);
        pleat_scene_folded_sheet(res, layers, spacing, 0.6f * spacing, s.particles, NULL);
        break;
    }
    case SCENE_CLUSTERS: {
        uint32_t clusters = 5 + n / 300; /* about 300 per dense ball */
        for (uint32_t i = 0; i < n; ++i) {
            uint32_t c = (uint32_t)(pleat_scene_random(&rng) % clusters);
            float cx = 100.0f * (float)c, r = 2.0f * s.distance;
            set(s.particles + 4 * (size_t)i, cx + pleat_scene_uniform(&rng) * r,
                pleat_scene_uniform(&rng) * r, -cx + pleat_scene_uniform(&rng) * r, 1.0f);
        }
        break;
    }
    case SCENE_PLANE: {
        float side2 = sqrtf((float)n * 3.14f / 4.0f) * s.distance;
        for (uint32_t i = 0; i < n; ++i)
            set(s.particles + 4 * (size_t)i, pleat_scene_uniform(&rng) * side2,
                pleat_scene_uniform(&rng) * side2, 3.0f, 1.0f);
        break;
    }
    case SCENE_LINE:
        for (uint32_t i = 0; i < n; ++i) {
            float t = pleat_scene_uniform(&rng) * (float)n * s.distance / 3.0f;
            set(s.particles + 4 * (size_t)i, 1.0f, -2.0f + t, 5.0f, 2.0f);
        }
        break;
    case SCENE_COINCIDENT: {
        uint32_t spots = 7 + n / 8; /* about 8 particles on each spot */
        for (uint32_t i = 0; i < n; ++i) {
            uint32_t spot = (uint32_t)(pleat_scene_random(&rng) % spots);
            set(s.particles + 4 * (size_t)i, (float)(spot % 16) * 0.3f * s.distance, 0.0f,
                (float)(spot / 16) * 0.5f * s.distance, 1.0f);
        }
        break;
    }
    default:
        cr_assert_fail("unknown scene kind");
    }
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
    cr_assert(all);
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

uint32_t *brute_force_pairs(const float *particles, uint32_t count, const pleat_params *params,
                            size_t *num)
{
    uint8_t *mask = malloc(count + 1);
    cr_assert(mask);
    takes_part(params, count, mask);
    float d = params->distance, d2 = d * d;
    size_t cap = 1024, n = 0;
    uint32_t *out = malloc(cap * 2 * sizeof *out);
    cr_assert(out);
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
                cr_assert(out);
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

uint32_t *pleat_pairs(pleat_context *ctx, const float *particles, uint32_t count,
                      const pleat_params *params, size_t *num)
{
    size_t total = 0;
    cr_assert_eq(pleat_find_pairs(ctx, particles, count, params, NULL, 0, &total), PLEAT_OK);
    uint32_t *pairs = malloc((total + 1) * 2 * sizeof *pairs);
    cr_assert(pairs);
    size_t again = 0;
    cr_assert_eq(pleat_find_pairs(ctx, particles, count, params, pairs, total, &again), PLEAT_OK);
    cr_assert_eq(again, total);
    *num = total;
    return pairs;
}

pleat_context *cpu_context(int threads)
{
    pleat_context_desc desc = pleat_default_context_desc();
    desc.backend = PLEAT_BACKEND_CPU;
    desc.cpu_threads = threads;
    pleat_context *ctx = NULL;
    pleat_status s = pleat_context_create(&desc, &ctx);
    cr_assert_eq(s, PLEAT_OK, "context: %s", pleat_status_string(s));
    return ctx;
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
    cr_assert(dst);
    memcpy(dst, src, n * sizeof *dst);
    return dst;
}
