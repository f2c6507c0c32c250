/* The CUDA backend as the core sees it (C linkage; the .cu files of cuda/ implement it). */
#ifndef PLEAT_CUDA_CUDA_H
#define PLEAT_CUDA_CUDA_H

#include "core/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const pleat_backend_ops pleat_cuda_ops;

/* BACKEND_UNAVAILABLE when there is no such device (no GPU, no driver), or
 * it cannot be used (see pleat_context_create in pleat.h). */
pleat_status pleat_cuda_create(int device, void **impl, char *describe, size_t describe_size);

/* pleat_self_collide_device() for a CUDA context; see pleat.h. */
pleat_status pleat_cuda_collide_device(void *impl, float *d_particles, uint32_t count,
                                       const pleat_params *params, void *stream,
                                       pleat_stats *stats, int profile, pleat_timings *timings);

/* Waits for the last device call and returns its data status. */
pleat_status pleat_cuda_device_status(void *impl);

#ifdef __cplusplus
}
#endif

#endif
