#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "hardening.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

const char *const hz_isas[] = {"scalar", "sse2", "avx2", "neon", NULL};

uint64_t hz_random(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

float hz_uniform(uint64_t *s)
{
    return (float)(hz_random(s) >> 40) * 0x1p-24f;
}

hz_scene hz_cloud(uint32_t n, uint64_t seed, int with_rest, int pinned)
{
    hz_scene s = {n, NULL, NULL, 1.0f};
    uint64_t rng = seed * 0x9e3779b97f4a7c15ull + 1;
    s.particles = calloc(4 * (size_t)n + 1, sizeof(float));
    cr_assert(s.particles);
    /* 6 neighbours in a ball of radius 1: density 6 / (4.19), side^3 = n / density */
    float side = 1.0f;
    while (side * side * side * 1.432f < (float)n)
        side *= 1.05f;
    for (uint32_t i = 0; i < n; ++i) {
        float *p = s.particles + 4 * (size_t)i;
        p[0] = hz_uniform(&rng) * side;
        p[1] = hz_uniform(&rng) * side;
        p[2] = hz_uniform(&rng) * side;
        p[3] = pinned && i % 5 == 0 ? 0.0f : 0.5f + hz_uniform(&rng);
    }
    if (with_rest) {
        s.rest = calloc(4 * (size_t)n + 1, sizeof(float));
        cr_assert(s.rest);
        for (uint32_t i = 0; i < n; ++i)
            for (int a = 0; a < 4; ++a)
                s.rest[4 * (size_t)i + a] =
                    s.particles[4 * (size_t)i + a] + (a < 3 ? hz_uniform(&rng) - 0.5f : 0.0f);
    }
    return s;
}

void hz_scene_free(hz_scene *s)
{
    free(s->particles);
    free(s->rest);
    s->particles = s->rest = NULL;
}

static float length2(const float *a, const float *b)
{
    float dx = b[0] - a[0], dy = b[1] - a[1], dz = b[2] - a[2];
    return (dx * dx + dy * dy) + dz * dz;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint32_t *hz_brute_pairs(const float *particles, uint32_t count, const pleat_params *params,
                         size_t *num)
{
    uint32_t m = params->indices ? params->num_indices : count;
    float d2 = params->distance * params->distance;
    size_t cap = 16, n = 0;
    uint64_t *v = malloc(cap * sizeof *v);
    cr_assert(v);
    for (uint32_t a = 0; a < m && params->distance != 0.0f; ++a)
        for (uint32_t b = a + 1; b < m; ++b) {
            uint32_t i = params->indices ? params->indices[a] : a;
            uint32_t j = params->indices ? params->indices[b] : b;
            if (i > j) {
                uint32_t t = i;
                i = j;
                j = t;
            }
            if (!(length2(particles + 4 * (size_t)i, particles + 4 * (size_t)j) <= d2))
                continue;
            if (params->rest_positions &&
                length2(params->rest_positions + 4 * (size_t)i,
                        params->rest_positions + 4 * (size_t)j) < d2)
                continue;
            if (n == cap) {
                cap *= 2;
                v = realloc(v, cap * sizeof *v);
                cr_assert(v);
            }
            v[n++] = (uint64_t)i << 32 | j;
        }
    qsort(v, n, sizeof *v, cmp_u64);
    uint32_t *pairs = malloc((2 * n + 1) * sizeof *pairs);
    cr_assert(pairs);
    for (size_t k = 0; k < n; ++k) {
        pairs[2 * k] = (uint32_t)(v[k] >> 32);
        pairs[2 * k + 1] = (uint32_t)v[k];
    }
    free(v);
    *num = n;
    return pairs;
}

pleat_context *hz_context(const char *isa, int threads)
{
    if (isa && *isa)
        setenv("PLEAT_CPU_ISA", isa, 1);
    else
        unsetenv("PLEAT_CPU_ISA");
    pleat_context_desc d = pleat_default_context_desc();
    d.backend = PLEAT_BACKEND_CPU;
    d.cpu_threads = threads;
    pleat_context *ctx = NULL;
    pleat_status s = pleat_context_create(&d, &ctx);
    unsetenv("PLEAT_CPU_ISA");
    if (s == PLEAT_ERROR_BACKEND_UNAVAILABLE)
        return NULL;
    cr_assert_eq(s, PLEAT_OK, "context %s/%d: %s", isa, threads, pleat_status_string(s));
    return ctx;
}

static size_t page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

static size_t data_pages(size_t bytes)
{
    size_t page = page_size();
    return (bytes + page - 1) / page + 1; /* at least one, even for 0 bytes */
}

void *hz_guard_alloc(size_t bytes, int front)
{
    size_t page = page_size(), pages = data_pages(bytes);
    unsigned char *base =
        mmap(NULL, (pages + 1) * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(base != MAP_FAILED);
    if (front) {
        cr_assert(mprotect(base, page, PROT_NONE) == 0);
        return base + page;
    }
    cr_assert(mprotect(base + pages * page, page, PROT_NONE) == 0);
    return base + pages * page - bytes;
}

void hz_guard_free(void *p, size_t bytes, int front)
{
    size_t page = page_size(), pages = data_pages(bytes);
    unsigned char *base = front ? (unsigned char *)p - page
                                : (unsigned char *)p + bytes - pages * page;
    munmap(base, (pages + 1) * page);
}
