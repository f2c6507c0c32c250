/* cloth.c — the PBD cloth of the drape demo. See cloth.h.
 *
 * Each frame is split into substeps. A substep predicts positions from the
 * velocities and gravity, then runs once
 *   1. distance constraints (stretch, shear, bending), Gauss-Seidel,
 *   2. ground and sphere contacts,
 *   3. pleat_self_collide (when enabled), with the particles on the ground
 *      made heavier (hold_on_ground), then the contacts again,
 * and finally derives the new velocities from how far particles moved.
 *
 * pleat gets no rest positions: they skip the pairs that start within the
 * collision distance, and at 0.8 x edge none of the flat sheet's do. Mesh
 * neighbours crushed closer than that are pushed apart like any pair. */
#include "cloth.h"
#include "portable.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PI_F 3.14159265f

static const float frame_dt = 1.0f / 60.0f;
static const float gravity = -9.81f;     /* m/s^2 along y */
static const float max_speed = 3.0f;     /* m/s, a crude air drag. It also bounds how far a
                                            particle moves in a substep, to half the collision
                                            distance (see substeps_for), so one layer cannot
                                            jump through another between two calls */
static const float damping = 0.5f;       /* 1/s, velocity damping */
static const float friction = 0.1f;      /* fraction of tangential speed lost per substep in
                                            contact with the ground */
static const float sphere_friction = 0.3f; /* the same on the sphere */
static const float free_inverse_mass = 1.0f; /* 1/kg, every particle's */
static const float held_inverse_mass = 0.25f; /* a particle's on the ground, for pleat */
static const float compress = 0.1f;      /* links resist compression at this fraction of their
                                            stiffness, so the cloth buckles into folds easily */

const char *cloth_scene_name(cloth_scene scene)
{
    return scene == CLOTH_SCENE_SPHERE ? "sphere" : "pile";
}

int cloth_scene_default_frames(cloth_scene scene)
{
    return scene == CLOTH_SCENE_SPHERE ? 180 : 200;
}

void cloth_triangle(int res, uint32_t t, uint32_t out[3])
{
    uint32_t quad = t / 2, n = (uint32_t)res;
    uint32_t i = quad % (n - 1), j = quad / (n - 1);
    uint32_t a = j * n + i, b = a + 1, c = a + n, d = c + 1;
    /* rest pose: i along +x, j along +z, so (a, c, b) faces +y */
    if (t % 2 == 0) {
        out[0] = a, out[1] = c, out[2] = b;
    } else {
        out[0] = b, out[1] = c, out[2] = d;
    }
}

/* A small deterministic random generator (xorshift32), values in [-1, 1). */
static float jitter(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return (float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

static void add_link(cloth *c, uint32_t a, uint32_t b, float stiffness)
{
    const float *ra = c->rest + 4 * (size_t)a, *rb = c->rest + 4 * (size_t)b;
    float dx = rb[0] - ra[0], dy = rb[1] - ra[1], dz = rb[2] - ra[2];
    uint32_t k = c->num_links++;
    c->link_ends[2 * k] = a;
    c->link_ends[2 * k + 1] = b;
    c->link_length[k] = sqrtf(dx * dx + dy * dy + dz * dz);
    c->link_stiffness[k] = stiffness;
}

/* Stretch links to the right and forward neighbours, shear links along both
 * diagonals of each quad, bending links two particles apart. */
static void build_links(cloth *c)
{
    const uint32_t n = (uint32_t)c->res;
    const float stretch = 1.0f, shear = 0.8f, bend = 0.02f;
    for (uint32_t j = 0; j < n; j++)
        for (uint32_t i = 0; i < n; i++) {
            uint32_t p = j * n + i;
            if (i + 1 < n)
                add_link(c, p, p + 1, stretch);
            if (j + 1 < n)
                add_link(c, p, p + n, stretch);
        }
    for (uint32_t j = 0; j + 1 < n; j++)
        for (uint32_t i = 0; i + 1 < n; i++) {
            uint32_t p = j * n + i;
            add_link(c, p, p + n + 1, shear);
            add_link(c, p + 1, p + n, shear);
        }
    for (uint32_t j = 0; j < n; j++)
        for (uint32_t i = 0; i < n; i++) {
            uint32_t p = j * n + i;
            if (i + 2 < n)
                add_link(c, p, p + 2, bend);
            if (j + 2 < n)
                add_link(c, p, p + 2 * n, bend);
        }
}

/* sphere: the flat sheet (2.4 m), turned a little about y, held 0.5 m above
 * a sphere (0.4 m radius) resting on the ground, and let go. */
static void place_sphere_scene(cloth *c)
{
    const float angle = 0.35f, cs = cosf(angle), sn = sinf(angle);
    c->has_sphere = 1;
    c->sphere_center[0] = 0.0f;
    c->sphere_center[1] = 0.4f;
    c->sphere_center[2] = 0.0f;
    c->sphere_radius = 0.4f;
    for (uint32_t p = 0; p < c->count; p++) {
        const float *r = c->rest + 4 * (size_t)p;
        float half = 0.5f * c->edge * (float)(c->res - 1);
        float x = r[0] - half, z = r[2] - half;
        float *q = c->particles + 4 * (size_t)p;
        q[0] = cs * x - sn * z + 0.05f;
        q[1] = 1.3f;
        q[2] = sn * x + cs * z - 0.03f;
    }
}

/* pile: the sheet rolled into an open tube (its side edges meet but are not
 * joined) standing on the ground. Released, it collapses under its own
 * weight into a ring-shaped pile of folds, like a dropped skirt. A small
 * ripple in the radius makes it buckle unevenly. */
static void place_pile_scene(cloth *c)
{
    const uint32_t n = (uint32_t)c->res;
    /* neighbours around the tube keep their rest distance */
    const float radius = c->edge / (2.0f * sinf(PI_F / (float)n));
    uint32_t seed = 12345u;
    for (uint32_t j = 0; j < n; j++)
        for (uint32_t i = 0; i < n; i++) {
            float *q = c->particles + 4 * ((size_t)j * n + i);
            float a = 2.0f * PI_F * (float)i / (float)n, y = c->thickness + (float)j * c->edge;
            float r = radius + 0.01f * sinf(7.0f * a) + 0.02f * sinf(2.0f * PI_F * y / 0.3f);
            q[0] = r * cosf(a) + 0.001f * jitter(&seed);
            q[1] = y;
            q[2] = r * sinf(a) + 0.001f * jitter(&seed);
        }
}

/* Enough substeps (8 at least) that a particle at max_speed moves at most
 * half the collision distance in one: two layers then close by at most the
 * distance between two calls, which pushed them that far apart. The pile's
 * sheet: 8 at 128 x 128, 24 at 384 x 384. */
static int substeps_for(float distance)
{
    double needed = ceil((double)max_speed * (double)frame_dt / (0.5 * (double)distance));
    return needed > 8.0 ? (int)needed : 8;
}

int cloth_init(cloth *c, cloth_scene scene, int res, int self_collision)
{
    memset(c, 0, sizeof *c);
    c->res = res;
    c->count = (uint32_t)res * (uint32_t)res;
    /* side of the square sheet, m */
    const float size = scene == CLOTH_SCENE_SPHERE ? 2.4f : 2.0f;
    c->edge = size / (float)(res - 1);
    c->distance = 0.8f * c->edge;
    c->thickness = 0.5f * c->distance;
    c->substeps = substeps_for(c->distance);
    c->self_collision = self_collision;

    size_t n = c->count, max_links = 6 * n;
    c->particles = malloc(4 * n * sizeof(float));
    c->rest = malloc(4 * n * sizeof(float));
    c->previous = malloc(3 * n * sizeof(float));
    c->velocity = calloc(3 * n, sizeof(float));
    c->link_ends = malloc(2 * max_links * sizeof(uint32_t));
    c->link_length = malloc(max_links * sizeof(float));
    c->link_stiffness = malloc(max_links * sizeof(float));
    if (!c->particles || !c->rest || !c->previous || !c->velocity || !c->link_ends ||
        !c->link_length || !c->link_stiffness) {
        cloth_free(c);
        return -1;
    }

    for (int j = 0; j < res; j++)
        for (int i = 0; i < res; i++) {
            float *r = c->rest + 4 * ((size_t)j * (size_t)res + (size_t)i);
            r[0] = (float)i * c->edge;
            r[1] = 0.0f;
            r[2] = (float)j * c->edge;
            r[3] = 0.0f;
        }
    build_links(c);
    if (scene == CLOTH_SCENE_SPHERE)
        place_sphere_scene(c);
    else
        place_pile_scene(c);
    for (size_t p = 0; p < n; p++)
        c->particles[4 * p + 3] = free_inverse_mass;
    return 0;
}

void cloth_free(cloth *c)
{
    free(c->particles);
    free(c->rest);
    free(c->previous);
    free(c->velocity);
    free(c->link_ends);
    free(c->link_length);
    free(c->link_stiffness);
    free(c->call_ms);
    memset(c, 0, sizeof *c);
}

static void solve_links(cloth *c)
{
    float *x = c->particles;
    for (uint32_t k = 0; k < c->num_links; k++) {
        float *a = x + 4 * (size_t)c->link_ends[2 * k];
        float *b = x + 4 * (size_t)c->link_ends[2 * k + 1];
        float dx = b[0] - a[0], dy = b[1] - a[1], dz = b[2] - a[2];
        float len = sqrtf(dx * dx + dy * dy + dz * dz);
        float w = a[3] + b[3];
        if (len < 1e-12f || w <= 0.0f)
            continue;
        float stretch = len - c->link_length[k];
        float stiffness = stretch > 0.0f ? c->link_stiffness[k] : c->link_stiffness[k] * compress;
        float s = stiffness * stretch / (len * w);
        a[0] += a[3] * s * dx, a[1] += a[3] * s * dy, a[2] += a[3] * s * dz;
        b[0] -= b[3] * s * dx, b[1] -= b[3] * s * dy, b[2] -= b[3] * s * dz;
    }
}

static void solve_contacts(cloth *c)
{
    const float floor_y = c->thickness;
    const float r = c->sphere_radius + c->thickness;
    for (uint32_t p = 0; p < c->count; p++) {
        float *q = c->particles + 4 * (size_t)p;
        if (q[1] < floor_y)
            q[1] = floor_y;
        if (c->has_sphere) {
            float dx = q[0] - c->sphere_center[0], dy = q[1] - c->sphere_center[1],
                  dz = q[2] - c->sphere_center[2];
            float d2 = dx * dx + dy * dy + dz * dz;
            if (d2 < r * r && d2 > 0.0f) {
                float s = r / sqrtf(d2);
                q[0] = c->sphere_center[0] + dx * s;
                q[1] = c->sphere_center[1] + dy * s;
                q[2] = c->sphere_center[2] + dz * s;
            }
        }
    }
}

/* While hold is set, makes the particles that lie on the ground heavier for
 * pleat (inverse mass held_inverse_mass): a layer that has come down on
 * another then takes most of the correction and is lifted. With equal
 * masses the lower particle was pushed into the ground, put back by the
 * contacts, and the two layers ended pressed into one plane (at 160 x 160,
 * 37 particles lay in a triangle of another layer on the ground; 3 now).
 * Not pinned (0): two particles on the ground must still push each other
 * apart. Cleared, every particle is free again. */
static void hold_on_ground(cloth *c, int hold)
{
    for (uint32_t p = 0; p < c->count; p++) {
        float *q = c->particles + 4 * (size_t)p;
        q[3] = hold && q[1] <= c->thickness ? held_inverse_mass : free_inverse_mass;
    }
}

/* pleat.h's advice: 100 candidate tests a particle leaves room for folds,
 * and fails a call on a collapsed sheet fast (TOO_MANY_TESTS) instead of
 * testing its n^2 / 2 pairs. */
static uint64_t test_limit(const cloth *c)
{
    return 100 * (uint64_t)c->count;
}

/* One call, timed, its pairs added to the run's. */
static pleat_status self_collide(cloth *c, pleat_context *ctx)
{
    pleat_params params = pleat_default_params();
    params.distance = c->distance;
    params.stiffness = 1.0f;
    params.max_tests = test_limit(c);
    if (c->num_calls == c->call_capacity) {
        size_t cap = c->call_capacity ? 2 * c->call_capacity : 1024;
        double *t = realloc(c->call_ms, cap * sizeof(double));
        if (!t)
            return PLEAT_ERROR_OUT_OF_MEMORY;
        c->call_ms = t;
        c->call_capacity = cap;
    }
    pleat_stats stats;
    double start = portable_now_ms();
    pleat_status status = pleat_self_collide(ctx, c->particles, c->count, &params, &stats);
    c->call_ms[c->num_calls++] = portable_now_ms() - start;
    if (status == PLEAT_OK)
        c->pairs += stats.pairs;
    return status;
}

/* New velocities from the motion over the substep, then drag, speed limit
 * and friction where a particle rests on the ground or the sphere. */
static void update_velocities(cloth *c, float dt)
{
    const float keep = expf(-damping * dt);
    const float contact = 1.05f * c->thickness;
    const float r = c->sphere_radius + contact;
    for (uint32_t p = 0; p < c->count; p++) {
        const float *q = c->particles + 4 * (size_t)p;
        const float *o = c->previous + 3 * (size_t)p;
        float *v = c->velocity + 3 * (size_t)p;
        for (int k = 0; k < 3; k++)
            v[k] = (q[k] - o[k]) / dt * keep;
        float speed2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
        if (speed2 > max_speed * max_speed) {
            float s = max_speed / sqrtf(speed2);
            v[0] *= s, v[1] *= s, v[2] *= s;
        }
        if (q[1] <= contact) {
            v[0] *= 1.0f - friction;
            v[2] *= 1.0f - friction;
            if (v[1] < 0.0f)
                v[1] = 0.0f;
        }
        if (c->has_sphere) {
            float n[3] = {q[0] - c->sphere_center[0], q[1] - c->sphere_center[1],
                          q[2] - c->sphere_center[2]};
            float d2 = n[0] * n[0] + n[1] * n[1] + n[2] * n[2];
            if (d2 < r * r && d2 > 0.0f) {
                float inv = 1.0f / sqrtf(d2);
                float vn = (v[0] * n[0] + v[1] * n[1] + v[2] * n[2]) * inv;
                for (int k = 0; k < 3; k++) {
                    float normal = vn * n[k] * inv;
                    v[k] = (v[k] - normal) * (1.0f - sphere_friction) + (vn > 0.0f ? normal : 0.0f);
                }
            }
        }
    }
}

pleat_status cloth_step(cloth *c, pleat_context *ctx)
{
    const float dt = frame_dt / (float)c->substeps;
    for (int s = 0; s < c->substeps; s++) {
        for (uint32_t p = 0; p < c->count; p++) {
            float *q = c->particles + 4 * (size_t)p;
            float *o = c->previous + 3 * (size_t)p;
            float *v = c->velocity + 3 * (size_t)p;
            v[1] += gravity * dt;
            for (int k = 0; k < 3; k++) {
                o[k] = q[k];
                q[k] += v[k] * dt;
            }
        }
        solve_links(c);
        solve_contacts(c);
        if (c->self_collision) {
            hold_on_ground(c, 1);
            pleat_status status = self_collide(c, ctx);
            hold_on_ground(c, 0);
            if (status != PLEAT_OK)
                return status;
            solve_contacts(c);
        }
        update_velocities(c, dt);
    }
    return PLEAT_OK;
}

pleat_status cloth_count_interpenetrations(const cloth *c, pleat_context *ctx, size_t *count)
{
    pleat_params params = pleat_default_params();
    params.distance = 0.5f * c->distance;
    params.max_tests = test_limit(c);
    size_t total = 0;
    /* size query first, then the list itself */
    pleat_status status = pleat_find_pairs(ctx, c->particles, c->count, &params, NULL, 0, &total);
    if (status != PLEAT_OK)
        return status;
    if (total > SIZE_MAX / (2 * sizeof(uint32_t))) /* past a 32-bit size_t */
        return PLEAT_ERROR_OUT_OF_MEMORY;
    uint32_t *pairs = malloc((total > 0 ? total : 1) * 2 * sizeof(uint32_t));
    if (!pairs)
        return PLEAT_ERROR_OUT_OF_MEMORY;
    status = pleat_find_pairs(ctx, c->particles, c->count, &params, pairs, total, &total);
    size_t found = 0;
    if (status == PLEAT_OK) {
        /* Mesh neighbours (same quad) pressed together are a crushed sheet,
         * not one layer through another: leave them out. */
        const long n = c->res;
        for (size_t k = 0; k < total; k++) {
            long a = (long)pairs[2 * k], b = (long)pairs[2 * k + 1];
            long di = labs(a % n - b % n), dj = labs(a / n - b / n);
            if (di > 1 || dj > 1)
                found++;
        }
        *count = found;
    }
    free(pairs);
    return status;
}

int cloth_write_obj(const cloth *c, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "# pleat drape demo: %d x %d cloth, self-collision %s\n", c->res, c->res,
            c->self_collision ? "on" : "off");
    for (uint32_t p = 0; p < c->count; p++) {
        const float *q = c->particles + 4 * (size_t)p;
        fprintf(f, "v %.6f %.6f %.6f\n", q[0], q[1], q[2]);
    }
    for (int j = 0; j < c->res; j++)
        for (int i = 0; i < c->res; i++)
            fprintf(f, "vt %.6f %.6f\n", (double)i / (c->res - 1), (double)j / (c->res - 1));
    uint32_t triangles = 2 * (uint32_t)(c->res - 1) * (uint32_t)(c->res - 1);
    for (uint32_t t = 0; t < triangles; t++) {
        uint32_t v[3];
        cloth_triangle(c->res, t, v);
        fprintf(f, "f %u/%u %u/%u %u/%u\n", v[0] + 1, v[0] + 1, v[1] + 1, v[1] + 1, v[2] + 1,
                v[2] + 1);
    }
    int ok = !ferror(f);
    if (fclose(f) != 0)
        ok = 0;
    return ok ? 0 : -1;
}
