/* Marks the math shared between host C and CUDA device code: inline
 * everywhere, __host__ __device__ under nvcc. Only headers that are compiled
 * by both sides include this. */
#ifndef PLEAT_CORE_HD_H
#define PLEAT_CORE_HD_H

#ifdef __CUDACC__
#define PLEAT_HD static inline __host__ __device__
#else
#define PLEAT_HD static inline
#endif

#endif
