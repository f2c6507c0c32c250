/* The entry points: check pointers and params, then hand the job to the
 * context's backend, which checks the particle data before it writes. Each
 * runs in the default floating-point environment (core/fp.h). */
#include "context.h"
#include "fp.h"

#include <float.h>
#include <math.h>

/* The checks made before a backend sees the call: every INVALID_ARGUMENT
 * (outputs_ok: the entry point's own output pointers are valid), then more
 * indices than particles, which must repeat one or name one past the array:
 * BAD_INDEX before any backend reads them or sizes its scratch by them. */
static pleat_status check_call(const pleat_context *ctx, const float *particles, uint32_t count,
                               const pleat_params *params, int outputs_ok)
{
    if (!ctx || !params || (!particles && count > 0) || !outputs_ok)
        return PLEAT_ERROR_INVALID_ARGUMENT;
    float d = params->distance, s = params->stiffness;
    /* the narrow phase compares squared lengths with d * d: it must be
     * finite, and normal, or pairs far more than d apart would pass (their
     * squared length rounds down to d * d) where the grid never looks */
    if (!(d >= 0.0f) || !isfinite(d * d) || (d > 0.0f && d * d < FLT_MIN))
        return PLEAT_ERROR_INVALID_ARGUMENT;
    if (!(s >= 0.0f && s <= 1.0f))
        return PLEAT_ERROR_INVALID_ARGUMENT;
    if (params->num_indices > 0 && !params->indices)
        return PLEAT_ERROR_INVALID_ARGUMENT;
    if (params->indices && params->num_indices > count)
        return PLEAT_ERROR_BAD_INDEX;
    return PLEAT_OK;
}

static pleat_job make_job(const pleat_context *ctx, pleat_job_kind kind, const float *particles,
                          uint32_t count, const pleat_params *params)
{
    pleat_job job = {0};
    job.profile = ctx->profile;
    job.kind = kind;
    job.particles = (float *)particles; /* written only by PLEAT_JOB_COLLIDE */
    job.count = count;
    job.params = *params;
    return job;
}

static pleat_status run(pleat_context *ctx, pleat_job *job)
{
    if (!pleat_context_acquire(ctx))
        return PLEAT_ERROR_INVALID_ARGUMENT; /* in use by a concurrent call (pleat.h) */
    pleat_status s = ctx->ops->run(ctx->impl, job);
    if (s == PLEAT_OK && job->kind == PLEAT_JOB_COUNT_PAIRS && job->capacity > 0)
        s = PLEAT_ERROR_CAPACITY; /* find_pairs: room for pairs, but no array to hold them */
    if (s == PLEAT_OK) /* the timings are those of the last call that succeeded */
        ctx->timings = job->timings;
    pleat_context_release(ctx);
    return s;
}

static pleat_status self_collide(pleat_context *ctx, float *particles, uint32_t count,
                                 const pleat_params *params, pleat_stats *stats)
{
    pleat_status s = check_call(ctx, particles, count, params, 1);
    if (s != PLEAT_OK)
        return s;
    pleat_job job = make_job(ctx, PLEAT_JOB_COLLIDE, particles, count, params);
    s = run(ctx, &job);
    if (s == PLEAT_OK && stats)
        *stats = job.stats;
    return s;
}

static pleat_status find_pairs(pleat_context *ctx, const float *particles, uint32_t count,
                               const pleat_params *params, uint32_t *pairs, size_t capacity,
                               size_t *num_pairs)
{
    pleat_status s = check_call(ctx, particles, count, params, num_pairs != NULL);
    if (s != PLEAT_OK)
        return s;
    pleat_job job = make_job(ctx, pairs ? PLEAT_JOB_LIST_PAIRS : PLEAT_JOB_COUNT_PAIRS,
                             particles, count, params);
    job.pairs = pairs;
    job.capacity = capacity;
    s = run(ctx, &job);
    if (s == PLEAT_OK || s == PLEAT_ERROR_CAPACITY)
        *num_pairs = job.num_pairs;
    return s;
}

static pleat_status self_collide_device(pleat_context *ctx, float *d_particles, uint32_t count,
                                        const pleat_params *params, void *stream,
                                        pleat_stats *stats)
{
    pleat_status s = check_call(ctx, d_particles, count, params, 1);
    if (s != PLEAT_OK)
        return s;
    if (!ctx->ops->collide_device)
        return PLEAT_ERROR_BACKEND_UNAVAILABLE;
    if (!pleat_context_acquire(ctx))
        return PLEAT_ERROR_INVALID_ARGUMENT; /* in use by a concurrent call (pleat.h) */
    pleat_timings t = ctx->timings; /* kept by a call that is not timed */
    s = ctx->ops->collide_device(ctx->impl, d_particles, count, params, stream, stats,
                                 ctx->profile, &t);
    if (s == PLEAT_OK)
        ctx->timings = t;
    pleat_context_release(ctx);
    return s;
}

pleat_status pleat_self_collide(pleat_context *ctx, float *particles, uint32_t count,
                                const pleat_params *params, pleat_stats *stats)
{
    pleat_fp_env env;
    pleat_fp_enter(&env);
    pleat_status s = self_collide(ctx, particles, count, params, stats);
    pleat_fp_leave(&env);
    return s;
}

pleat_status pleat_find_pairs(pleat_context *ctx, const float *particles, uint32_t count,
                              const pleat_params *params, uint32_t *pairs, size_t capacity,
                              size_t *num_pairs)
{
    pleat_fp_env env;
    pleat_fp_enter(&env);
    pleat_status s = find_pairs(ctx, particles, count, params, pairs, capacity, num_pairs);
    pleat_fp_leave(&env);
    return s;
}

pleat_status pleat_self_collide_device(pleat_context *ctx, float *d_particles, uint32_t count,
                                       const pleat_params *params, void *stream,
                                       pleat_stats *stats)
{
    pleat_fp_env env;
    pleat_fp_enter(&env);
    pleat_status s = self_collide_device(ctx, d_particles, count, params, stream, stats);
    pleat_fp_leave(&env);
    return s;
}

/* In the default floating-point environment, as every call into the CUDA
 * runtime (core/context.c). */
pleat_status pleat_context_device_status(pleat_context *ctx)
{
    if (!ctx)
        return PLEAT_ERROR_INVALID_ARGUMENT;
    if (!ctx->ops->device_status)
        return PLEAT_ERROR_BACKEND_UNAVAILABLE;
    pleat_fp_env env;
    pleat_fp_enter(&env);
    pleat_status s = ctx->ops->device_status(ctx->impl);
    pleat_fp_leave(&env);
    return s;
}
