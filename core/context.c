/* Context life cycle, defaults, version and status strings. */
#include "context.h"
#include "alloc.h"
#include "fork.h"
#include "fp.h"
#include "cpu/cpu.h"
#ifdef PLEAT_HAVE_CUDA
#include "cuda/cuda.h"
#endif

const char *pleat_version(void)
{
    return PLEAT_VERSION_STRING;
}

const char *pleat_status_string(pleat_status status)
{
    switch (status) {
    case PLEAT_OK: return "ok";
    case PLEAT_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case PLEAT_ERROR_NONFINITE_INPUT: return "NaN or infinity in a particle or rest position";
    case PLEAT_ERROR_BAD_INDEX: return "index out of range or repeated";
    case PLEAT_ERROR_CAPACITY: return "output array too small";
    case PLEAT_ERROR_OUT_OF_MEMORY: return "out of memory";
    case PLEAT_ERROR_BACKEND_UNAVAILABLE: return "backend unavailable";
    case PLEAT_ERROR_DEVICE: return "GPU device error";
    case PLEAT_ERROR_TOO_MANY_TESTS: return "more candidate tests than params.max_tests";
    }
    return "unknown pleat status";
}

pleat_context_desc pleat_default_context_desc(void)
{
    pleat_context_desc d;
    d.backend = PLEAT_BACKEND_AUTO;
    d.cpu_threads = 0;
    d.cuda_device = 0;
    d.profile = 0;
    d.enqueue_tasks = NULL;
    d.finish_tasks = NULL;
    d.job_context = NULL;
    return d;
}

pleat_params pleat_default_params(void)
{
    pleat_params p;
    p.distance = 0.0f;
    p.stiffness = 1.0f;
    p.indices = NULL;
    p.num_indices = 0;
    p.rest_positions = NULL;
    p.max_tests = 0;
    return p;
}

static pleat_status create(const pleat_context_desc *desc, pleat_context **out)
{
    pleat_context_desc d = desc ? *desc : pleat_default_context_desc();
    if (!out || d.cpu_threads < 0 || d.cpu_threads > PLEAT_MAX_CPU_THREADS || d.cuda_device < 0 ||
        !d.enqueue_tasks != !d.finish_tasks)
        return PLEAT_ERROR_INVALID_ARGUMENT;
    if (d.backend != PLEAT_BACKEND_AUTO && d.backend != PLEAT_BACKEND_CPU &&
        d.backend != PLEAT_BACKEND_CUDA)
        return PLEAT_ERROR_INVALID_ARGUMENT;

    pleat_alloc_context_made(); /* from its first block on: the heap stays */
    pleat_context *ctx = pleat_calloc(1, sizeof *ctx);
    if (!ctx) {
        pleat_alloc_context_gone();
        return PLEAT_ERROR_OUT_OF_MEMORY;
    }
    ctx->forks = pleat_forks();
    pleat_status s = PLEAT_ERROR_BACKEND_UNAVAILABLE;
#ifdef PLEAT_HAVE_CUDA
    if (d.backend != PLEAT_BACKEND_CPU) {
        s = pleat_cuda_create(d.cuda_device, &ctx->impl, ctx->describe, sizeof ctx->describe);
        ctx->backend = PLEAT_BACKEND_CUDA;
        ctx->ops = &pleat_cuda_ops;
    }
#endif
    /* AUTO without a usable GPU runs on the CPU */
    if (s == PLEAT_ERROR_BACKEND_UNAVAILABLE && d.backend != PLEAT_BACKEND_CUDA) {
        s = pleat_cpu_create(&d, &ctx->impl, ctx->describe, sizeof ctx->describe);
        ctx->backend = PLEAT_BACKEND_CPU;
        ctx->ops = &pleat_cpu_ops;
    }
    if (s != PLEAT_OK) {
        pleat_free(ctx);
        pleat_alloc_context_gone();
        return s;
    }
    ctx->profile = d.profile != 0;
    *out = ctx;
    return PLEAT_OK;
}

/* In the default floating-point environment, as the calls: a caller with
 * exceptions unmasked must not trap in what the CUDA runtime computes at
 * start-up, and the context's threads start in that environment. */
pleat_status pleat_context_create(const pleat_context_desc *desc, pleat_context **out)
{
    pleat_fp_env env;
    pleat_fp_enter(&env);
    pleat_status s = create(desc, out);
    pleat_fp_leave(&env);
    return s;
}

void pleat_context_destroy(pleat_context *ctx)
{
    /* A fork() child's copy of a context that a call held at the fork: that
     * call stopped wherever it was (a block freed, its pointer not yet
     * replaced), so nothing of it can be freed safely. It is left. */
    if (!ctx || (pleat_forks() != ctx->forks && atomic_load(&ctx->busy)))
        return;
    pleat_fp_env env;
    pleat_fp_enter(&env);
    ctx->ops->destroy(ctx->impl);
    pleat_free(ctx);
    pleat_alloc_context_gone();
    pleat_fp_leave(&env);
}

pleat_backend pleat_context_backend(const pleat_context *ctx)
{
    return ctx ? ctx->backend : PLEAT_BACKEND_AUTO;
}

const char *pleat_context_describe(const pleat_context *ctx)
{
    return ctx ? ctx->describe : "";
}

pleat_status pleat_context_timings(const pleat_context *ctx, pleat_timings *out)
{
    if (!ctx || !out)
        return PLEAT_ERROR_INVALID_ARGUMENT;
    *out = ctx->timings;
    return PLEAT_OK;
}
