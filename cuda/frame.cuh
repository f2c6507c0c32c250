/* State of one CUDA call, passed by value to every kernel, and the stage
 * launchers (one .cu file per stage). Every kernel reads its inputs from
 * device memory and reports bad data through `flags`; the apply kernel reads
 * the flags and writes nothing when any is set, so a bad input never reaches
 * the caller's buffer, with no host round trip. */
#ifndef PLEAT_CUDA_FRAME_CUH
#define PLEAT_CUDA_FRAME_CUH

#include "core/backend.h"
#include "core/columns.h"
#include "core/grid.h"
#include "core/pair.h"

#include <cuda_runtime.h>
#include <utility>

/* flags */
#define PLEAT_FLAG_BAD_INDEX 1u
#define PLEAT_FLAG_NONFINITE 2u
#define PLEAT_FLAG_NEGATIVE_MASS 4u
#define PLEAT_FLAG_TOO_MANY_TESTS 8u /* set by the sweep's limit check */

#define PLEAT_CUDA_BLOCK 256
#define PLEAT_CUDA_MAX_BLOCKS 1024 /* of the bounds reduction */

typedef enum pleat_cuda_mode {
    PLEAT_CUDA_COUNT,
    PLEAT_CUDA_LIST,
    PLEAT_CUDA_CORRECT
} pleat_cuda_mode;

/* Device counters of one call, and the bounds blocks' ticket (keys.cu),
 * which is 0 between calls: zeroed with the context, wrapped back by every
 * bounds launch, and zeroed again by the keys kernel. */
typedef struct pleat_cuda_counters {
    unsigned long long pairs, tests, listed;
    unsigned int flags, ticket;
    unsigned long long limit_tests; /* the limit check's running total (sweep.cu) */
} pleat_cuda_counters;

/* What one bounds block found: the box of its particles and its flags. */
typedef struct pleat_cuda_block_box {
    float lower[3], upper[3];
    unsigned int flags;
} pleat_cuda_block_box;

/* What apply leaves for a host-pointer call, per data index (the caller's
 * order: the particle number, or the place in a subset's indices): the new
 * position and the particle, or PLEAT_CUDA_UNMOVED when no sum moved it. The
 * host writes back only the moved ones, as the CPU's apply does, so calls on
 * disjoint subsets of one array from separate contexts never undo each
 * other; in the caller's order, its writes run through the array instead of
 * jumping in key order (a cache miss each in a large scattered cloud). */
typedef struct alignas(16) pleat_cuda_moved {
    float x, y, z;
    uint32_t particle;
} pleat_cuda_moved;
#define PLEAT_CUDA_UNMOVED UINT32_MAX

/* Slot s is the s-th taking-part particle (indices[s], or s without
 * indices). Its floats sit in particles, rest and out at its data index:
 * its particle number, or, in a gathered frame (a host-pointer call on a
 * subset, whose staging copies hold only the taking-part particles, in slot
 * order), s itself. The sort's order holds data indices. */
typedef struct pleat_cuda_frame {
    const float *particles;  /* device, 4 floats per data index */
    uint32_t count;
    const uint32_t *indices; /* device or NULL */
    uint32_t m;
    int gathered;            /* data index = slot (see above) */
    const float *rest;       /* device or NULL */
    int aligned;             /* particles (in and out) and rest start on 16
                                bytes: a row moves as one float4
                                (pleat_cuda_row) */
    float *out;              /* where apply writes (device), when moved is NULL */
    pleat_cuda_moved *moved; /* device, m entries, or NULL: apply writes out */
    pleat_pair_consts consts;
    unsigned long long max_tests;   /* params.max_tests: 0 = no limit */
    pleat_cuda_mode mode;

    pleat_grid *grid;               /* device, written by the last bounds block */
    pleat_cuda_counters *counters;  /* device */
    pleat_cuda_block_box *blocks;   /* device, one per bounds block */
    unsigned int *seen;             /* device bitmap, count bits */
    uint32_t *keys, *order;         /* device, sorted (m each) */
    uint32_t *keys_in, *order_in;   /* device, before the sort (pleat_cuda_sort
                                       may swap each with its sorted one) */
    uint32_t *cols;                 /* device, PLEAT_COLUMNS + 1 column starts
                                       (core/columns.h) */
    float4 *pos;                    /* device, sorted particles (x, y, z, w):
                                       a candidate is one 16-byte load */
    float4 *rest_pos;               /* device, sorted rest positions, or NULL */
    unsigned long long *acc;        /* device, 3 x m fixed-point sums (x, y, z),
                                       cleared by the gather (CORRECT) */
    unsigned long long *list;       /* device, LIST: pleat_pair_pack() entries */
    int pair_shift;                 /* LIST: pleat_pair_shift(count) */
    unsigned long long capacity;    /* LIST: entries in list */
} pleat_cuda_frame;

/* Slot s's particle number. */
__host__ __device__ inline uint32_t pleat_cuda_particle(const pleat_cuda_frame &f, uint32_t s)
{
    return f.indices ? f.indices[s] : s;
}

/* Slot s's data index. */
__host__ __device__ inline uint32_t pleat_cuda_data(const pleat_cuda_frame &f, uint32_t s)
{
    return f.gathered ? s : pleat_cuda_particle(f, s);
}

/* The particle number of data index d (an entry of order). */
__host__ __device__ inline uint32_t pleat_cuda_particle_at(const pleat_cuda_frame &f, uint32_t d)
{
    return f.gathered ? f.indices[d] : d;
}

/* Row d (4 floats) of particles or rest. One 16-byte access where the arrays
 * allow it, where four would each touch the row's memory sector again: the
 * gather and the apply reach the rows in key order, scattered. */
__device__ inline float4 pleat_cuda_row(const pleat_cuda_frame &f, const float *rows, size_t d)
{
    const float *p = rows + 4 * d;
    if (f.aligned)
        return *reinterpret_cast<const float4 *>(p);
    return make_float4(p[0], p[1], p[2], p[3]);
}

/* Writes particle d's position (f.out), x and y as one 8-byte store where
 * the rows are aligned. Never its w: the caller may be changing inverse
 * masses meanwhile (pleat.h: pleat never does). */
__device__ inline void pleat_cuda_set_position(const pleat_cuda_frame &f, size_t d, float x,
                                               float y, float z)
{
    float *p = f.out + 4 * d;
    if (f.aligned) {
        *reinterpret_cast<float2 *>(p) = make_float2(x, y);
    } else {
        p[0] = x;
        p[1] = y;
    }
    p[2] = z;
}

static inline unsigned pleat_cuda_blocks(uint64_t n)
{
    uint64_t b = (n + PLEAT_CUDA_BLOCK - 1) / PLEAT_CUDA_BLOCK;
    return (unsigned)(b < 1 ? 1 : b);
}

/* Launches kernel on `blocks` blocks of `threads` and returns the launch's
 * own status. A <<<>>> launch reports only through cudaGetLastError(),
 * which also holds whatever error the application left there: reading it
 * would blame pleat for that error and clear it. */
template <typename... Params, typename... Args>
static inline cudaError_t pleat_cuda_launch(void (*kernel)(Params...), unsigned blocks,
                                            unsigned threads, cudaStream_t stream, Args &&...args)
{
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(threads);
    config.stream = stream;
    return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

/* Whether this build's kernels run on the current device: cudaSuccess, or
 * the runtime's error for a device older than every architecture built
 * (no binary, no PTX it can compile). Launches nothing. */
cudaError_t pleat_cuda_kernels_run_here(void);

/* Stage launchers (asynchronous, on `stream`); each returns the first error
 * of what it queued. */
cudaError_t pleat_cuda_check_and_keys(const pleat_cuda_frame &f, cudaStream_t stream);
/* Sorts keys_in and order_in; then f->keys and f->order point at the sorted
 * copies, and keys_in and order_in at the other buffers (CUB picks which
 * is which). */
cudaError_t pleat_cuda_sort(pleat_cuda_frame *f, void *temp, size_t temp_bytes,
                            cudaStream_t stream);
/* CUB's temp storage for the sort of m keys, into *bytes. */
cudaError_t pleat_cuda_sort_temp_bytes(uint32_t m, size_t *bytes);
/* The gather of the sorted particles into key order, and the column starts
 * of the sorted keys (cols, core/columns.h). */
cudaError_t pleat_cuda_gather(const pleat_cuda_frame &f, cudaStream_t stream);
cudaError_t pleat_cuda_sweep(const pleat_cuda_frame &f, cudaStream_t stream);
cudaError_t pleat_cuda_apply(const pleat_cuda_frame &f, cudaStream_t stream);
/* Sorts list[0..n) (pleat_pair_pack entries of `shift`, so 2 * shift bits)
 * with tmp, n entries too, and leaves the sorted pairs as (i, j) uint32,
 * the layout of pleat_find_pairs, in one of the two: *pairs. */
cudaError_t pleat_cuda_sort_pairs(unsigned long long *list, unsigned long long *tmp,
                                  unsigned long long n, int shift, void *temp, size_t temp_bytes,
                                  cudaStream_t stream, uint32_t **pairs);
cudaError_t pleat_cuda_sort_pairs_temp_bytes(unsigned long long n, int shift, size_t *bytes);

#endif
