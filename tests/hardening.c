#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include "hardening.h"
#include "isas.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

const char *const hz_isas[] = {PLEAT_TEST_ISAS, NULL};

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
        p[0] = pleat_scene_uniform(&rng) * side;
        p[1] = pleat_scene_uniform(&rng) * side;
        p[2] = pleat_scene_uniform(&rng) * side;
        p[3] = pinned && i % 5 == 0 ? 0.0f : 0.5f + pleat_scene_uniform(&rng);
    }
    if (with_rest) {
        s.rest = calloc(4 * (size_t)n + 1, sizeof(float));
        cr_assert(s.rest);
        for (uint32_t i = 0; i < n; ++i)
            for (int a = 0; a < 4; ++a)
                s.rest[4 * (size_t)i + a] = s.particles[4 * (size_t)i + a] +
                                            (a < 3 ? pleat_scene_uniform(&rng) - 0.5f : 0.0f);
    }
    return s;
}

void hz_scene_free(hz_scene *s)
{
    free(s->particles);
    free(s->rest);
    s->particles = s->rest = NULL;
}

pleat_context *hz_context(const char *isa, int threads)
{
    pleat_status s;
    pleat_context *ctx = reference_context(PLEAT_BACKEND_CPU, isa ? isa : "", threads, &s);
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

void *hz_guard_reserve(size_t bytes, int front)
{
    size_t page = page_size(), pages = data_pages(bytes);
    unsigned char *base = mmap(NULL, (pages + 1) * page, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED)
        return NULL;
    if (front) {
        cr_assert(mprotect(base, page, PROT_NONE) == 0);
        return base + page;
    }
    cr_assert(mprotect(base + pages * page, page, PROT_NONE) == 0);
    return base + pages * page - bytes;
}

void *hz_guard_alloc(size_t bytes, int front)
{
    void *p = hz_guard_reserve(bytes, front);
    cr_assert(p);
    return p;
}

void hz_guard_free(void *p, size_t bytes, int front)
{
    size_t page = page_size(), pages = data_pages(bytes);
    unsigned char *base = front ? (unsigned char *)p - page
                                : (unsigned char *)p + bytes - pages * page;
    munmap(base, (pages + 1) * page);
}
