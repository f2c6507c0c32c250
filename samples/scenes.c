#include "scenes.h"

#include <math.h>
#include <stddef.h>

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

void pleat_scene_folded_sheet(uint32_t res, uint32_t layers, float spacing, float gap,
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
