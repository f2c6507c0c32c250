/* The contract between the backend-neutral core and a backend (cpu/, cuda/).
 * The core checks pointers and params; a backend checks the particle data
 * (indices, finiteness, masses) in its first pass, before it writes anything,
 * and reports the first failing check by the priority of pleat.h. */
#ifndef PLEAT_CORE_BACKEND_H
#define PLEAT_CORE_BACKEND_H

#include "pleat.h"

#include <stdint.h>

typedef enum pleat_job_kind {
    PLEAT_JOB_COLLIDE,    /* correct particles in place */
    PLEAT_JOB_COUNT_PAIRS, /* only count the colliding pairs */
    PLEAT_JOB_LIST_PAIRS  /* list them into pairs when capacity allows */
} pleat_job_kind;

typedef struct pleat_job {
    pleat_job_kind kind;
    float *particles;        /* written by COLLIDE only */
    uint32_t count;
    pleat_params params;     /* checked (a distance of 0 finds nothing) */
    uint32_t *pairs;         /* LIST_PAIRS: caller's output */
    size_t capacity;         /* LIST_PAIRS: in pairs */
    int profile;             /* time the stages into timings */
    pleat_timings timings;   /* out, when profile */
    pleat_stats stats;       /* out */
    size_t num_pairs;        /* out: pairs found (all kinds) */
} pleat_job;

/* find_pairs' total into job->num_pairs, and whether the caller's array
 * holds it (LIST_PAIRS: capacity pairs). A total past SIZE_MAX (a 32-bit
 * build: 92,683 coincident particles make over 2^32 pairs) reads as SIZE_MAX and
 * fits no array: CAPACITY, a size query's too (pleat.h). */
static inline pleat_status pleat_pairs_fit(pleat_job *job, uint64_t total)
{
    int truncated = (size_t)total != total;
    job->num_pairs = truncated ? SIZE_MAX : (size_t)total;
    if (truncated || (job->kind == PLEAT_JOB_LIST_PAIRS && total > job->capacity))
        return PLEAT_ERROR_CAPACITY;
    return PLEAT_OK;
}

typedef struct pleat_backend_ops {
    pleat_status (*run)(void *impl, pleat_job *job);
    void (*destroy)(void *impl);
    /* device-pointer calls; NULL for a backend without device memory */
    pleat_status (*collide_device)(void *impl, float *d_particles, uint32_t count,
                                   const pleat_params *params, void *stream, pleat_stats *stats,
                                   int profile, pleat_timings *timings);
    pleat_status (*device_status)(void *impl);
} pleat_backend_ops;

#endif
