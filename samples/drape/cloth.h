/* cloth.h — a small position-based (PBD) cloth: a square sheet of particles
 * held together by distance constraints, falling under gravity onto a ground
 * plane (and, in one scene, a sphere), kept from passing through itself by
 * pleat_self_collide(). */
#ifndef DRAPE_CLOTH_H
#define DRAPE_CLOTH_H

#include <pleat.h>
#include <stddef.h>
#include <stdint.h>

typedef enum cloth_scene {
    CLOTH_SCENE_SPHERE, /* a flat sheet dropped onto a sphere: drapes, folds on the ground */
    CLOTH_SCENE_PILE    /* the sheet rolled into a standing tube, let go: it collapses
                           into a pile of folds on the ground (the hard case) */
} cloth_scene;

/* Name used on the command line and in file names ("sphere", "pile"). */
const char *cloth_scene_name(cloth_scene scene);

/* The frame count that lets a scene settle (used when --frames is not given). */
int cloth_scene_default_frames(cloth_scene scene);

typedef struct cloth {
    int res;           /* particles per side; count = res * res */
    uint32_t count;
    float *particles;  /* count x {x, y, z, inverse mass}: the array pleat works on */
    float *rest;       /* count x {x, y, z, 0}: the flat sheet, for the links' lengths */
    float *previous;   /* count x {x, y, z}: positions at the start of a substep */
    float *velocity;   /* count x {x, y, z} */

    uint32_t num_links; /* distance constraints */
    uint32_t *link_ends;/* 2 per link */
    float *link_length; /* rest length */
    float *link_stiffness;

    float edge;        /* rest distance between neighbouring particles */
    float distance;    /* self-collision distance (0.8 x edge) */
    float thickness;   /* how far particles stay from the ground and the sphere */
    int has_sphere;
    float sphere_center[3];
    float sphere_radius;

    int substeps;      /* per frame: 8, more for a finer sheet (cloth.c: substeps_for) */
    int self_collision;

    /* pleat_self_collide's calls: the time of each, and their pairs */
    double *call_ms;
    size_t num_calls, call_capacity;
    uint64_t pairs;
} cloth;

/* Builds the scene's sheet. Returns 0, or -1 when memory runs out. */
int cloth_init(cloth *c, cloth_scene scene, int res, int self_collision);
void cloth_free(cloth *c);

/* Advances one frame (1/60 s): substeps x (constraints, ground and sphere,
 * then self-collision and ground and sphere again). Returns the first failing pleat status, else PLEAT_OK
 * (TOO_MANY_TESTS past 100 candidate tests a particle). */
pleat_status cloth_step(cloth *c, pleat_context *ctx);

/* Interpenetrations: pairs of particles that are not mesh neighbours and are
 * closer than half the collision distance, found with pleat_find_pairs. A
 * particle that lies inside another layer's triangle, away from its
 * corners, is not seen. */
pleat_status cloth_count_interpenetrations(const cloth *c, pleat_context *ctx, size_t *count);

/* Writes the mesh (vertices and triangles) as a Wavefront OBJ. 0 or -1. */
int cloth_write_obj(const cloth *c, const char *path);

/* Triangle t (0 <= t < 2 (res-1)^2) as 3 particle indices; front faces are
 * the side that faces +y when the sheet lies flat in its rest pose. */
void cloth_triangle(int res, uint32_t t, uint32_t out[3]);

#endif
