/*
 * Input format (every read past the end gives zeros, so any byte string is
 * an input; the seed corpus in fuzz/corpus uses the same format):
 *
 *   flags     u8  bit 0 indices, bit 1 rest positions, bit 2 generated
 *                 (thousands of particles from a PRNG, several chunks),
 *                 bit 3 misuse, bits 4-7 which context runs first (of the
 *                 first 16: see fz_init)
 *   scale     u8  unit of the lattice coordinates (table `scales`)
 *   distance  u8 selector (+ 4 raw bytes)      see read_distance
 *   stiffness u8 selector (+ 4 raw bytes)      see read_stiffness
 *   misuse    u8 (bit 3 only)                  see enum misuse
 *   capacity  u8 (find_pairs: which capacities to try besides the exact one)
 *   then, direct: count u8 (255: + u16), per particle 3 coordinates
 *   (read_coord) and an inverse mass (read_mass); rest positions; indices.
 *   generated: count u16, seed u32, pattern u8, inject u8; rest and indices
 *   come from the PRNG.
 *   Last, either way: limit u8, the test limit's selector (0: none; see
 *   limit_below and the error paths); then heap u8, an allocation to fail
 *   (0: none; see allocation_failure).
 *
 * Checks on every input, for whichever function runs:
 * - the status is a pleat_status value, and the one the contract gives
 *   (computed here from pleat.h's rules and priorities; OUT_OF_MEMORY is
 *   never expected);
 * - the caller's arrays (particles, rest, indices, and pairs on error) are
 *   bit for bit unchanged on error, and inputs that are const always;
 * - on success: the pairs equal an O(n^2) brute force (n <= BRUTE_MAX) or an
 *   independent grid reference (tests/grid_reference.c) for larger inputs;
 *   every coordinate of a taking-part particle is finite; pinned particles,
 *   particles that are in no pair or not taking part, every inverse mass,
 *   and everything when stiffness is 0 keep their bits; no particle moves
 *   further than its pairs allow, and each ends where the double-precision
 *   Jacobi response over the reference pairs puts it, within
 *   tests/reference.h's tolerance; stats.pairs is the pair count, and up to
 *   REFERENCE_TESTS_MAX taking part stats.tests is the count from its
 *   definition (reference_tests);
 * - params.max_tests: a limit at the call's tests changes nothing; one
 *   under them gives TOO_MANY_TESTS (in find_pairs before CAPACITY) and
 *   writes nothing, wherever the walk stops (the input's limit byte spreads
 *   it from 1 test to all but one); a limit never changes an error, which
 *   the data checks find first;
 * - either call with the input's allocation failing on a fresh context
 *   (every context's heap is the harness's): OUT_OF_MEMORY with nothing
 *   written, or what the call gives without it; then the same context
 *   gives that, and once destroyed it holds no block;
 * - the same bits from every other ISA (PLEAT_CPU_ISA, tests/isas.h: those
 *   this machine has) and thread count, from a context on a job system that
 *   drops ranges (buggy_enqueue), and from the CUDA backend
 *   where a context can have it (a GPU, or the CUDA emulator of
 *   tests/cuda_emu);
 * - built against the emulator, pleat_self_collide() inputs also go
 *   through pleat_self_collide_device() on device copies: the same status
 *   (with stats, and from pleat_context_device_status() without), the same
 *   bits, and the device buffer unchanged on error.
 */
#include "fuzz_common.h"
#include "grid_reference.h"
#include "isas.h"
#include "reference.h" /* reference_response, reference_tests */
#include "portable.h"
#include "scenes.h" /* pleat_scene_random, pleat_scene_uniform */

#ifdef PLEAT_FUZZ_REQUIRE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BRUTE_MAX 1500u
/* reference_tests is O(n^2) with a key per particle of each pair */
#define REFERENCE_TESTS_MAX 400u

/* every variant, then "" (the library's own choice), each at 1 to 3 threads */
static const char *const isas[] = {PLEAT_TEST_ISAS, ""};
#define NUM_ISAS ((int)(sizeof isas / sizeof isas[0]))
#define MAX_CONTEXTS (3 * NUM_ISAS + 2) /* and CUDA, and a job system's */

/* ---- contexts ---------------------------------------------------------- */

typedef struct fz_context {
    pleat_context *ctx;
    const char *isa; /* "" = not forced */
    int threads;
} fz_context;

static fz_context contexts[MAX_CONTEXTS];
static int verbose; /* PLEAT_FUZZ_VERBOSE set: print what each input did */
static int num_contexts;
static int single[NUM_ISAS]; /* one-thread context of each ISA, -1 if absent */
static int cuda = -1;        /* the CUDA context, -1 if absent */
static int jobs = -1;        /* the context on the buggy job system below */

static void fail(const char *what)
{
    fprintf(stderr, "pleat fuzz: invariant broken: %s\n", what);
    fflush(stderr);
    abort();
}

#define CHECK(cond, what)                                                                          \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fail(what);                                                                            \
    } while (0)

static pleat_status create(const char *isa, int threads, pleat_context **out)
{
    portable_setenv("PLEAT_CPU_ISA", isa && *isa ? isa : NULL);
    pleat_context_desc d = pleat_default_context_desc();
    d.backend = PLEAT_BACKEND_CPU;
    d.cpu_threads = threads;
    pleat_status s = pleat_context_create(&d, out);
    portable_setenv("PLEAT_CPU_ISA", NULL);
    return s;
}

/* ---- the heap ---------------------------------------------------------- */

/* Every context takes its host memory from here (pleat_set_allocator,
 * before the first one is made): an input can make the k-th allocation from
 * now fail, or every one from the k-th on, and the blocks held are
 * counted. A call's worker threads allocate too. */
static atomic_ulong allocations, fail_from; /* fail_from 0: none */
static atomic_int fail_on;                  /* every one from fail_from on */
static atomic_long live_blocks;

static void *heap_alloc(size_t size, size_t alignment, void *alloc_context)
{
    (void)alloc_context;
    const unsigned long n = atomic_fetch_add(&allocations, 1) + 1, k = atomic_load(&fail_from);
    if (k && (n == k || (n > k && atomic_load(&fail_on))))
        return NULL;
    void *block = portable_aligned_alloc(size, alignment);
    if (!block)
        fail("harness out of memory");
    atomic_fetch_add(&live_blocks, 1);
    return block;
}

static void heap_free(void *block, void *alloc_context)
{
    (void)alloc_context;
    atomic_fetch_sub(&live_blocks, 1);
    portable_aligned_free(block);
}

static void fail_allocation(unsigned long k, int on)
{
    atomic_store(&allocations, 0);
    atomic_store(&fail_on, on);
    atomic_store(&fail_from, k);
}

/* A job system that breaks its contract (pleat.h guards against that):
 * it runs a stage's ranges of one task on the calling thread, drops every
 * other one (pleat runs those tasks itself after it) and hands out an
 * inverted range too. Its context must give the bits of every other. */
static void *buggy_enqueue(pleat_task_range_fn task, uint32_t count, void *task_context,
                           void *job_context)
{
    (void)job_context;
    for (uint32_t k = count; k-- > 0;) {
        if (k % 2 == 0)
            task(k, k + 1, task_context);
        task(k + 1, k, task_context);
    }
    return NULL; /* every range it meant to run has run */
}

static void unused_finish(void *handle, void *job_context)
{
    (void)handle, (void)job_context;
    fail("finish called after enqueue returned NULL");
}

/* The contexts of isas[k] at 1 to 3 threads, those this machine has. */
static void add_isa(int k)
{
    single[k] = -1;
    for (int t = 1; t <= 3; ++t) {
        pleat_context *ctx = NULL;
        pleat_status s = create(isas[k], t, &ctx);
        if (s == PLEAT_ERROR_BACKEND_UNAVAILABLE)
            break; /* this ISA is not built or the CPU lacks it */
        CHECK(s == PLEAT_OK, "context creation");
        if (*isas[k]) {
            char want[32];
            snprintf(want, sizeof want, "cpu %s,", isas[k]);
            CHECK(strncmp(pleat_context_describe(ctx), want, strlen(want)) == 0,
                  "describe names the forced ISA");
        }
        if (t == 1)
            single[k] = num_contexts;
        contexts[num_contexts++] = (fz_context){ctx, isas[k], t};
    }
}

static pleat_context_desc cuda_desc(void)
{
    pleat_context_desc d = pleat_default_context_desc();
    d.backend = PLEAT_BACKEND_CUDA;
    return d;
}

static pleat_context_desc jobs_desc(void)
{
    pleat_context_desc d = pleat_default_context_desc();
    d.backend = PLEAT_BACKEND_CPU;
    d.cpu_threads = 3;
    d.enqueue_tasks = buggy_enqueue;
    d.finish_tasks = unused_finish;
    return d;
}

/* The CUDA context, where one can be made, and the job system's. */
static void add_cuda_and_jobs(void)
{
    pleat_context_desc d = cuda_desc();
    pleat_context *gpu = NULL;
    pleat_status s = pleat_context_create(&d, &gpu);
    CHECK(s == PLEAT_OK || s == PLEAT_ERROR_BACKEND_UNAVAILABLE, "CUDA context creation");
#ifdef PLEAT_FUZZ_REQUIRE_CUDA /* built against the CUDA emulator */
    CHECK(s == PLEAT_OK, "a CUDA context");
#endif
    if (s == PLEAT_OK) {
        cuda = num_contexts;
        contexts[num_contexts++] = (fz_context){gpu, "cuda", 1};
    }
    d = jobs_desc();
    pleat_context *on_jobs = NULL;
    CHECK(pleat_context_create(&d, &on_jobs) == PLEAT_OK, "a context on a job system");
    jobs = num_contexts;
    contexts[num_contexts++] = (fz_context){on_jobs, "jobs", 3};
}

/* A new context like contexts[k]: its ISA and threads, CUDA, or the job
 * system's. */
static pleat_context *fresh_like(int k)
{
    pleat_context *ctx = NULL;
    pleat_context_desc d = k == cuda ? cuda_desc() : jobs_desc();
    CHECK((k == cuda || k == jobs ? pleat_context_create(&d, &ctx)
                                  : create(contexts[k].isa, contexts[k].threads, &ctx)) == PLEAT_OK,
          "a fresh context");
    return ctx;
}

void fz_init(void)
{
    if (num_contexts)
        return;
    verbose = getenv("PLEAT_FUZZ_VERBOSE") != NULL;
    CHECK(pleat_set_allocator(heap_alloc, heap_free, NULL) == PLEAT_OK, "the harness's heap");
    /* "" (the library's choice) last: the input's 4 bits pick the first
     * context among at most 16, and with every x86 variant, CUDA and the
     * job system there are 17; "" at 3 threads, which the input cannot
     * pick, is the best variant's code at 3 threads */
    for (int k = 0; k < NUM_ISAS - 1; ++k)
        add_isa(k);
    CHECK(single[0] >= 0, "the scalar variant always exists");
    add_cuda_and_jobs();
    add_isa(NUM_ISAS - 1);
    /* a variant that does not exist here is refused, not ignored */
    pleat_context *ctx = (pleat_context *)&num_contexts;
    CHECK(create("bogus", 1, &ctx) == PLEAT_ERROR_BACKEND_UNAVAILABLE,
          "unknown PLEAT_CPU_ISA -> BACKEND_UNAVAILABLE");
    CHECK(ctx == (pleat_context *)&num_contexts, "*out untouched on error");
#if defined(__x86_64__) || defined(__i386__)
    CHECK(create("neon", 1, &ctx) == PLEAT_ERROR_BACKEND_UNAVAILABLE,
          "NEON on x86 -> BACKEND_UNAVAILABLE");
#endif
}

/* ---- reading the input ------------------------------------------------- */

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

static uint8_t u8(reader *r)
{
    if (!r->n)
        return 0;
    r->n--;
    return *r->p++;
}

static uint16_t u16(reader *r)
{
    uint16_t lo = u8(r);
    return (uint16_t)(lo | (uint16_t)u8(r) << 8);
}

static uint32_t u32(reader *r)
{
    uint32_t lo = u16(r);
    return lo | (uint32_t)u16(r) << 16;
}

static float raw_float(reader *r)
{
    uint32_t bits = u32(r);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static const float scales[16] = {
    1.0f, 0.25f, 1e-3f, 1e3f, 1e5f, 1e-20f, 1e20f, 1e-38f,
    1e35f, 0x1p-149f, 0.1f, 3.0f, 0x1p-126f, 65536.0f, 1e-10f, 7.0f,
};

/* Values at every edge the code cares about. */
static float special(unsigned k)
{
    static const float table[32] = {
        0.0f,        -0.0f,      1.0f,        -1.0f,      0.5f,       FLT_MIN,   -FLT_MIN,
        0x1p-149f,   -0x1p-149f, 1e-40f,      FLT_MAX,    -FLT_MAX,   0.0f /*nan*/, 0.0f /*inf*/,
        0.0f /*-inf*/, 1e19f,    1.8e19f,     -1.8e19f,   1e-19f,     1e-20f,    1e5f,
        100000.5f,   65533.0f,   1e30f,       -1e30f,     16777216.0f, 0x1p-24f, 3e38f,
        -3e38f,      1.0000001f, 0x1p-75f,    0x1.fffffep-1f,
    };
    k &= 31;
    if (k == 12)
        return NAN;
    if (k == 13)
        return INFINITY;
    if (k == 14)
        return -INFINITY;
    return table[k];
}

typedef struct decoder {
    reader r;
    float unit;
    float history[16];
    unsigned hist_next;
} decoder;

static float remember(decoder *d, float v)
{
    d->history[d->hist_next++ & 15] = v;
    return v;
}

/* One byte: bit 7 clear -> lattice value (b - 64) * unit / 8 (collisions,
 * ties at cell boundaries); else bits 5-6 choose raw bits, a special value,
 * a repeat of a recent value, or a recent value moved by a few ulps. */
static float read_coord(decoder *d)
{
    uint8_t b = u8(&d->r);
    if (!(b & 0x80))
        return remember(d, (float)((int)b - 64) * d->unit * 0.125f);
    switch ((b >> 5) & 3) {
    case 0:
        return remember(d, raw_float(&d->r));
    case 1:
        return remember(d, special(b));
    case 2:
        return remember(d, d->history[(d->hist_next - 1 - (b & 15)) & 15]);
    default: {
        float v = d->history[(d->hist_next - 1) & 15];
        int steps = (int)(b & 7) - 4;
        for (; steps < 0 && isfinite(v); ++steps)
            v = nextafterf(v, -INFINITY);
        for (; steps > 0 && isfinite(v); --steps)
            v = nextafterf(v, INFINITY);
        return remember(d, v);
    }
    }
}

static float read_mass(decoder *d)
{
    uint8_t b = u8(&d->r);
    if (b < 160)
        return 1.0f;
    if (b < 200)
        return b & 1 ? -0.0f : 0.0f; /* pinned (-0 is not negative) */
    if (b < 220)
        return (float)(b - 200) * 0.25f;
    static const float table[12] = {-1.0f, -FLT_MIN, -0x1p-149f, FLT_MAX, 0x1p-149f, 1e-30f,
                                    1e30f, 0.5f, 3.0f, 0.0f /*nan*/, 0.0f /*inf*/, 1e38f};
    unsigned k = (unsigned)(b - 220) % 14;
    if (k == 9)
        return NAN;
    if (k == 10)
        return INFINITY;
    if (k == 12)
        return raw_float(&d->r);
    if (k == 13)
        return -INFINITY;
    return table[k];
}

static float read_distance(decoder *d)
{
    uint8_t b = u8(&d->r);
    if (b < 128)
        return (float)b * d->unit * 0.0625f; /* lattice multiples, 0 included */
    if (b < 160)
        return raw_float(&d->r);
    static const float table[24] = {
        0.0f,      -0.0f,     1.0f,     0.26f,       0x1p-149f, 1e-40f,  FLT_MIN, 1e-20f,
        1e-30f,    1e19f,     1.8e19f,  1.85e19f,    2e19f,     FLT_MAX, -1.0f,   0.0f /*nan*/,
        0.0f /*inf*/, 1e-19f, 0x1p-63f, 0x1p-64f,    1e-3f,     3.5f,    1e5f,    0x1p-90f,
    };
    unsigned k = (unsigned)(b - 160) % 24;
    if (k == 15)
        return NAN;
    if (k == 16)
        return INFINITY;
    return table[k];
}

static float read_stiffness(decoder *d)
{
    uint8_t b = u8(&d->r);
    if (b < 128)
        return 1.0f;
    if (b < 192)
        return (float)(b - 128) / 63.0f;
    static const float table[12] = {0.0f, -0.0f, 1.0000001f, -0x1p-149f, 0x1p-149f,
                                    0.999999f, 2.0f, -1.0f, 0.0f /*nan*/, 0.0f /*inf*/,
                                    0.5f, 0.0f /*raw*/};
    unsigned k = (unsigned)(b - 192) % 12;
    if (k == 8)
        return NAN;
    if (k == 9)
        return INFINITY;
    if (k == 11)
        return raw_float(&d->r);
    return table[k];
}

enum misuse {
    MISUSE_NULL_CONTEXT,
    MISUSE_NULL_PARAMS,
    MISUSE_NULL_PARTICLES,
    MISUSE_NULL_INDICES,    /* num_indices > 0 */
    MISUSE_NULL_NUM_PAIRS,  /* find_pairs only (self_collide: no misuse) */
    MISUSE_EMPTY_INDICES,   /* indices non-NULL, num_indices 0: nothing takes part */
    MISUSE_COUNT
};

typedef struct fz_case {
    uint32_t count;
    float *particles;   /* 4 * count (+1 so count 0 still has an array) */
    float *rest;        /* NULL or 4 * count */
    uint32_t *indices;  /* NULL or num_indices */
    uint32_t num_indices;
    pleat_params params;
    unsigned first;     /* which context runs first */
    int misuse;         /* -1 or enum misuse */
    unsigned capacity;  /* find_pairs capacity variants */
    int generated;
    uint8_t limit;      /* the test limit's selector: see limit_below */
    uint8_t heap;       /* the allocation to fail: see allocation_failure */
} fz_case;

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        fail("harness out of memory");
    return p;
}

static void make_indices_random(fz_case *c, uint64_t *rng, uint8_t mode)
{
    /* a random subset in random order: Fisher-Yates over 0..count-1 */
    uint32_t n = c->count;
    uint32_t *perm = xcalloc(n, sizeof *perm);
    for (uint32_t i = 0; i < n; ++i)
        perm[i] = i;
    for (uint32_t i = n; i > 1; --i) {
        uint32_t j = (uint32_t)(pleat_scene_random(rng) % i);
        uint32_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    uint32_t num = n ? (uint32_t)(pleat_scene_random(rng) % (n + 1)) : 0;
    /* mode: 0-5 valid, 6 duplicate, 7 out of range */
    unsigned bad = mode & 7;
    uint32_t extra = (bad >= 6) ? 1 : 0;
    c->indices = xcalloc((size_t)num + extra, sizeof *c->indices);
    memcpy(c->indices, perm, (size_t)num * sizeof *perm);
    if (bad == 6 && num > 0)
        c->indices[num] = c->indices[pleat_scene_random(rng) % num];
    else if (bad == 7) {
        static const uint32_t out_of_range[4] = {0, 1, 0x7fffffffu, 0xffffffffu};
        uint32_t k = (uint32_t)(pleat_scene_random(rng) % 4);
        c->indices[num] = k < 2 ? n + k : out_of_range[k];
    } else
        extra = 0;
    c->num_indices = num + extra;
    free(perm);
}

static void read_indices(fz_case *c, decoder *d)
{
    uint8_t mode = u8(&d->r);
    if (mode < 192) {
        uint64_t rng = u32(&d->r);
        make_indices_random(c, &rng, mode >> 2);
        return;
    }
    /* raw: mostly in range, sometimes anything */
    uint32_t num = u8(&d->r);
    c->indices = xcalloc(num, sizeof *c->indices);
    for (uint32_t s = 0; s < num; ++s) {
        uint8_t b = u8(&d->r);
        if (b < 240)
            c->indices[s] = c->count ? b % c->count : b;
        else
            c->indices[s] = u32(&d->r);
    }
    c->num_indices = num;
}

static void read_rest(fz_case *c, decoder *d)
{
    c->rest = xcalloc(4 * (size_t)c->count, sizeof *c->rest);
    for (uint32_t i = 0; i < c->count; ++i) {
        float *r = c->rest + 4 * (size_t)i;
        const float *p = c->particles + 4 * (size_t)i;
        uint8_t b = u8(&d->r);
        if (b < 128) {
            memcpy(r, p, 3 * sizeof *r);
        } else if (b < 192) {
            for (int a = 0; a < 3; ++a)
                r[a] = p[a] + (float)(int8_t)u8(&d->r) * d->unit * 0.015625f;
        } else if (b < 240) {
            for (int a = 0; a < 3; ++a)
                r[a] = read_coord(d);
        } else {
            memcpy(r, p, 3 * sizeof *r);
            r[(b & 3) == 3 ? 0 : b & 3] = b & 4 ? NAN : -INFINITY;
        }
        /* the 4th float is ignored: make it anything, NaN included */
        r[3] = b & 8 ? NAN : 1.0f;
    }
}

/* Thousands of particles in one of a few layouts, so inputs reach several
 * chunks (4096 particles), several threads and the atomic sums. */
static void generate(fz_case *c, decoder *d, int with_indices, int with_rest)
{
    c->count = 4097u + u16(&d->r) % 4096u;
    uint64_t rng = u32(&d->r);
    uint8_t pattern = u8(&d->r), inject = u8(&d->r);
    float dist = c->params.distance;
    /* spacing: about the distance, but never so small that the lattice
     * collapses into a few denormal points (all pairs: quadratic time) */
    float h = isfinite(dist) && dist > 0.0f && isfinite(dist * dist) ? dist : 1.0f;
    h = h > 0x1p-60f ? h : 0x1p-60f;
    uint32_t n = c->count;
    c->particles = xcalloc(4 * (size_t)n, sizeof(float));
    uint32_t side = (uint32_t)cbrt((double)n) + 1;
    for (uint32_t i = 0; i < n; ++i) {
        float *p = c->particles + 4 * (size_t)i;
        switch (pattern % 5) {
        case 0: /* jittered lattice, spacing about h */
            p[0] = ((float)(i % side) + 0.3f * pleat_scene_uniform(&rng)) * h;
            p[1] = ((float)(i / side % side) + 0.3f * pleat_scene_uniform(&rng)) * h;
            p[2] = ((float)(i / side / side) + 0.3f * pleat_scene_uniform(&rng)) * h;
            break;
        case 1: { /* uniform cloud, about 6 neighbours each */
            float s = cbrtf((float)n * 0.7f) * h;
            p[0] = pleat_scene_uniform(&rng) * s;
            p[1] = pleat_scene_uniform(&rng) * s;
            p[2] = pleat_scene_uniform(&rng) * s;
            break;
        }
        case 2: { /* lattice points taken about 3 times each: exact duplicates */
            uint32_t k = (uint32_t)(pleat_scene_random(&rng) % (n / 3)), s3 = side * 2 / 3 + 1;
            p[0] = (float)(k % s3) * h * 0.7f;
            p[1] = (float)(k / s3 % s3) * h * 0.7f;
            p[2] = (float)(k / s3 / s3) * h * 0.7f;
            break;
        }
        case 3: { /* layered sheet */
            uint32_t res = (uint32_t)sqrt((double)n / 4.0) + 1;
            p[0] = (float)(i % res) * h * 1.1f;
            p[1] = (float)(i / res % res) * h * 1.1f;
            p[2] = (float)(i / res / res) * h * 0.6f;
            break;
        }
        default: /* a line: two flat axes */
            p[0] = (float)i * h * 0.7f;
            p[1] = p[2] = 5.0f;
            break;
        }
        uint64_t m = pleat_scene_random(&rng) % 7;
        p[3] = m == 0 ? 0.0f : m == 1 ? 2.0f : 1.0f;
    }
    /* one bad value in a late chunk: the check must still see it */
    if (inject >= 224) {
        uint32_t i = n - 1 - (uint32_t)(pleat_scene_random(&rng) % 100);
        float *p = c->particles + 4 * (size_t)i;
        switch (inject & 3) {
        case 0: p[1] = NAN; break;
        case 1: p[3] = -1.0f; break;
        case 2: p[3] = INFINITY; break;
        default: p[2] = -INFINITY; break;
        }
    }
    if (with_rest) {
        c->rest = xcalloc(4 * (size_t)n, sizeof(float));
        for (uint32_t i = 0; i < n; ++i)
            for (int a = 0; a < 3; ++a)
                c->rest[4 * (size_t)i + a] =
                    c->particles[4 * (size_t)i + a] + (pleat_scene_uniform(&rng) - 0.5f) * h;
        if (inject >= 192 && inject < 200)
            c->rest[4 * (size_t)(n / 2)] = NAN;
    }
    if (with_indices)
        make_indices_random(c, &rng, inject >= 200 && inject < 216 ? 6 + (inject & 1) : 0);
}

static void decode(fz_case *c, const uint8_t *data, size_t size)
{
    memset(c, 0, sizeof *c);
    decoder d = {{data, size}, 1.0f, {0}, 0};
    uint8_t flags = u8(&d.r);
    d.unit = scales[u8(&d.r) & 15];
    c->params = pleat_default_params();
    c->params.distance = read_distance(&d);
    c->params.stiffness = read_stiffness(&d);
    c->misuse = flags & 8 ? (int)(u8(&d.r) % MISUSE_COUNT) : -1;
    c->capacity = u8(&d.r);
    c->first = flags >> 4;
    c->generated = (flags & 4) != 0;
    if (c->generated) {
        generate(c, &d, flags & 1, flags & 2);
    } else {
        uint32_t n = u8(&d.r);
        if (n == 255)
            n += u16(&d.r) % 1024u;
        c->count = n;
        c->particles = xcalloc(4 * (size_t)n, sizeof(float));
        for (uint32_t i = 0; i < n; ++i) {
            float *p = c->particles + 4 * (size_t)i;
            p[0] = read_coord(&d);
            p[1] = read_coord(&d);
            p[2] = read_coord(&d);
            p[3] = read_mass(&d);
        }
        if (flags & 2)
            read_rest(c, &d);
        if (flags & 1)
            read_indices(c, &d);
    }
    c->limit = u8(&d.r);
    c->heap = u8(&d.r);
    c->params.rest_positions = c->rest;
    c->params.indices = c->indices;
    c->params.num_indices = c->num_indices;
    if (c->misuse == MISUSE_NULL_INDICES) {
        c->params.indices = NULL;
        c->params.num_indices = c->params.num_indices ? c->params.num_indices : 1;
    } else if (c->misuse == MISUSE_EMPTY_INDICES) {
        static const uint32_t none[1] = {0};
        c->params.indices = c->indices ? c->indices : none;
        c->params.num_indices = 0;
    }
}

static void release(fz_case *c)
{
    free(c->particles);
    free(c->rest);
    free(c->indices);
}

/* ---- the contract, written out ----------------------------------------- */

static int finite4(const float *p, int n)
{
    for (int a = 0; a < n; ++a)
        if (!isfinite(p[a]))
            return 0;
    return 1;
}

/* pleat.h's first checks, of the pointers and params: INVALID_ARGUMENT
 * or OK. No allocation comes before them. */
static pleat_status argument_status(const fz_case *c, int ctx_null, int params_null,
                                    int particles_null, int num_pairs_null)
{
    const pleat_params *p = &c->params;
    if (ctx_null || params_null || (particles_null && c->count > 0) || num_pairs_null)
        return PLEAT_ERROR_INVALID_ARGUMENT;
    float d = p->distance, s = p->stiffness;
    /* d * d finite, and normal unless d is 0 */
    if (!(d >= 0.0f) || !isfinite(d * d) || (d > 0.0f && d * d < FLT_MIN) ||
        !(s >= 0.0f && s <= 1.0f))
        return PLEAT_ERROR_INVALID_ARGUMENT;
    if (p->num_indices > 0 && !p->indices)
        return PLEAT_ERROR_INVALID_ARGUMENT;
    return PLEAT_OK;
}

/* The status pleat.h promises for this case (never OUT_OF_MEMORY). */
static pleat_status expected_status(const fz_case *c, int ctx_null, int params_null,
                                    int particles_null, int num_pairs_null)
{
    const pleat_params *p = &c->params;
    if (argument_status(c, ctx_null, params_null, particles_null, num_pairs_null) != PLEAT_OK)
        return PLEAT_ERROR_INVALID_ARGUMENT;
    uint32_t m = p->indices ? p->num_indices : c->count;
    if (p->indices) {
        uint8_t *seen = xcalloc(c->count / 8 + 1, 1);
        pleat_status s2 = PLEAT_OK;
        for (uint32_t k = 0; k < m && s2 == PLEAT_OK; ++k) {
            uint32_t i = p->indices[k];
            if (i >= c->count || seen[i / 8] >> (i % 8) & 1)
                s2 = PLEAT_ERROR_BAD_INDEX;
            else
                seen[i / 8] |= (uint8_t)(1u << (i % 8));
        }
        free(seen);
        if (s2 != PLEAT_OK)
            return s2;
    }
    for (uint32_t k = 0; k < m; ++k) {
        uint32_t i = p->indices ? p->indices[k] : k;
        if (!finite4(c->particles + 4 * (size_t)i, 4) ||
            (p->rest_positions && !finite4(p->rest_positions + 4 * (size_t)i, 3)))
            return PLEAT_ERROR_NONFINITE_INPUT;
    }
    for (uint32_t k = 0; k < m; ++k) {
        uint32_t i = p->indices ? p->indices[k] : k;
        if (c->particles[4 * (size_t)i + 3] < 0.0f)
            return PLEAT_ERROR_INVALID_ARGUMENT;
    }
    return PLEAT_OK;
}

static float length2(const float *a, const float *b)
{
    float dx = b[0] - a[0], dy = b[1] - a[1], dz = b[2] - a[2];
    return (dx * dx + dy * dy) + dz * dz;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* O(n^2) over the taking-part particles: |x_j - x_i|^2 <= d^2 in float,
 * minus pairs with |r_j - r_i|^2 < d^2; (i, j) with i < j, ascending. */
static uint32_t *brute_force(const fz_case *c, size_t *num)
{
    const pleat_params *p = &c->params;
    uint32_t m = p->indices ? p->num_indices : c->count;
    float d2 = p->distance * p->distance;
    size_t cap = 64, n = 0;
    uint64_t *v = xcalloc(cap, sizeof *v);
    if (p->distance != 0.0f) {
        for (uint32_t a = 0; a < m; ++a)
            for (uint32_t b = a + 1; b < m; ++b) {
                uint32_t i = p->indices ? p->indices[a] : a, j = p->indices ? p->indices[b] : b;
                if (i > j) {
                    uint32_t t = i;
                    i = j;
                    j = t;
                }
                if (!(length2(c->particles + 4 * (size_t)i, c->particles + 4 * (size_t)j) <= d2))
                    continue;
                if (p->rest_positions && length2(p->rest_positions + 4 * (size_t)i,
                                                 p->rest_positions + 4 * (size_t)j) < d2)
                    continue;
                if (n == cap) {
                    cap *= 2;
                    v = realloc(v, cap * sizeof *v);
                    if (!v)
                        fail("harness out of memory");
                }
                v[n++] = (uint64_t)i << 32 | j;
            }
    }
    qsort(v, n, sizeof *v, cmp_u64);
    uint32_t *pairs = xcalloc(2 * n, sizeof *pairs);
    for (size_t k = 0; k < n; ++k) {
        pairs[2 * k] = (uint32_t)(v[k] >> 32);
        pairs[2 * k + 1] = (uint32_t)v[k];
    }
    free(v);
    *num = n;
    return pairs;
}

static int same_bits(const void *a, const void *b, size_t bytes)
{
    return bytes == 0 || memcmp(a, b, bytes) == 0;
}

/* what an output array holds where nothing may be written */
#define SENTINEL 0xa5a5a5a5u

static int all_sentinel(const uint32_t *v, size_t n)
{
    for (size_t k = 0; k < n; ++k)
        if (v[k] != SENTINEL)
            return 0;
    return 1;
}

/* The reference pairs of a valid case; NULL with *num = SIZE_MAX when the
 * case is too big for brute force and too spread out for the grid. */
static uint32_t *reference_pairs(const fz_case *c, size_t *num)
{
    const pleat_params *p = &c->params;
    uint32_t m = p->indices ? p->num_indices : c->count;
    if (m <= BRUTE_MAX) {
        uint32_t *pairs = brute_force(c, num);
        if (m <= 400) {
            /* keep the grid reference honest: it must agree with brute force
             * wherever it applies (it declines boxes of over 2^21 cells) */
            size_t n2 = 0;
            uint32_t *grid = grid_reference_pairs(c->particles, c->count, p->indices,
                                                  p->num_indices, p->rest_positions,
                                                  p->distance, &n2);
            CHECK(n2 == SIZE_MAX ||
                      (n2 == *num && same_bits(grid, pairs, 2 * n2 * sizeof *pairs)),
                  "grid reference equals brute force");
            free(grid);
        }
        return pairs;
    }
    return grid_reference_pairs(c->particles, c->count, p->indices, p->num_indices,
                                p->rest_positions, p->distance, num);
}

/* Contexts to compare with: every one-thread ISA, CUDA, the job system's
 * and a multi-thread one. */
static int others(unsigned first, int out[NUM_ISAS + 3])
{
    int n = 0;
    int primary = (int)(first % (unsigned)num_contexts);
    for (int k = 0; k < NUM_ISAS; ++k)
        if (single[k] >= 0 && single[k] != primary)
            out[n++] = single[k];
    if (cuda >= 0 && cuda != primary)
        out[n++] = cuda;
    if (jobs != primary)
        out[n++] = jobs;
    int multi = (int)((first * 7u + 3u) % (unsigned)num_contexts);
    if (contexts[multi].threads > 1 && multi != primary && multi != jobs)
        out[n++] = multi;
    return n;
}

/* A call's status: a pleat_status value, with a string, and the one the
 * contract gives (`what` names the call in the report). */
static void check_status(pleat_status s, pleat_status want, const char *what)
{
    CHECK((int)s >= (int)PLEAT_OK && (int)s <= (int)PLEAT_ERROR_TOO_MANY_TESTS,
          "status is a pleat_status value");
    CHECK(*pleat_status_string(s), "status string");
    if (verbose)
        fprintf(stderr, "%s: %s\n", what, pleat_status_string(s));
    if (s != want) {
        fprintf(stderr, "status %d (%s), contract says %d (%s)\n", (int)s,
                pleat_status_string(s), (int)want, pleat_status_string(want));
        fail(what);
    }
}

/* ---- pleat_self_collide ------------------------------------------------ */

#ifdef PLEAT_FUZZ_REQUIRE_CUDA
/* A device copy of `bytes` from host (NULL for NULL; a real block for 0). */
static void *on_device(const void *host, size_t bytes)
{
    if (!host)
        return NULL;
    void *d = NULL;
    CHECK(cudaMalloc(&d, bytes ? bytes : 4) == cudaSuccess, "harness cudaMalloc");
    CHECK(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice) == cudaSuccess,
          "harness copy to the device");
    return d;
}

/* One device-pointer call on a device copy of `before` (indices and rest
 * positions copied too), stats asked for or not, and its status: with
 * stats the call's; without, a call past its argument checks returns OK
 * and pleat_context_device_status() gives it. The particles it leaves go
 * to `out`. */
static pleat_status device_call(const fz_case *c, const float *before, int params_null,
                                int particles_null, pleat_stats *stats, float *out)
{
    const size_t fbytes = 4 * (size_t)c->count * sizeof(float);
    float *d = on_device(before, fbytes);
    pleat_params p = c->params;
    p.indices = on_device(p.indices, (size_t)p.num_indices * sizeof(uint32_t));
    p.rest_positions = on_device(p.rest_positions, fbytes);
    pleat_status s = pleat_self_collide_device(contexts[cuda].ctx, particles_null ? NULL : d,
                                               c->count, params_null ? NULL : &p, NULL, stats);
    if (!stats && s == PLEAT_OK)
        s = pleat_context_device_status(contexts[cuda].ctx);
    /* the copies in may still be queued when pleat refused the call at
     * once (a copy from pageable memory returns once it is staged), and
     * cudaFree does not wait for them */
    CHECK(cudaDeviceSynchronize() == cudaSuccess, "harness device sync");
    CHECK(cudaMemcpy(out, d, fbytes, cudaMemcpyDeviceToHost) == cudaSuccess,
          "harness copy from the device");
    cudaFree(d);
    cudaFree((void *)p.indices);
    cudaFree((void *)p.rest_positions);
    return s;
}

/* The device-pointer path gives what the host-pointer call gave, with
 * stats and without: status `want` and, on success, the particles `after`
 * and the stats `want_stats`; on error nothing written. */
static void device_path(const fz_case *c, const float *before, const float *after,
                        pleat_status want, const pleat_stats *want_stats, int params_null,
                        int particles_null)
{
    const size_t fbytes = 4 * (size_t)c->count * sizeof(float);
    const float *expected = want == PLEAT_OK ? after : before;
    float *out = xcalloc(4 * (size_t)c->count, sizeof(float));
    pleat_stats st;
    memset(&st, 0xa5, sizeof st);
    const pleat_stats st_before = st;
    pleat_status s = device_call(c, before, params_null, particles_null, &st, out);
    check_status(s, want, "device path status");
    CHECK(same_bits(out, expected, fbytes), "device path: the host path's bits, or none");
    CHECK(want == PLEAT_OK ? st.pairs == want_stats->pairs && st.tests == want_stats->tests
                           : same_bits(&st, &st_before, sizeof st),
          "device path stats");
    s = device_call(c, before, params_null, particles_null, NULL, out);
    check_status(s, want, "device path status, without stats");
    CHECK(same_bits(out, expected, fbytes), "device path without stats: the same bits, or none");
    free(out);
}
#endif

/* A test limit under a call's tests (>= 2) from the input's selector: one
 * test fewer without it (0); k in 1..255 from 1 test (k = 1) to all but one
 * (k = 255), so that the parts of the sweep stop at every point of their
 * walk. */
static uint64_t limit_below(const fz_case *c, uint64_t tests)
{
    return c->limit ? 1 + (tests - 2) * (c->limit - 1u) / 254 : tests - 1;
}

/* A call that failed on the first context fails alike on every other one
 * (other ISAs and thread counts, the job system, CUDA), on a fresh copy of
 * the start, and writes nothing there either. */
static void same_error_elsewhere(const fz_case *c, const float *before, pleat_status want,
                                 int params_null, int particles_null)
{
    const size_t fbytes = 4 * (size_t)c->count * sizeof(float);
    int other[NUM_ISAS + 3];
    int n_other = others(c->first, other);
    float *again = xcalloc(4 * (size_t)c->count, sizeof(float));
    for (int k = 0; k < n_other; ++k) {
        memcpy(again, before, fbytes);
        pleat_stats st;
        memset(&st, 0xa5, sizeof st);
        const pleat_stats st_before = st;
        pleat_status s = pleat_self_collide(contexts[other[k]].ctx, particles_null ? NULL : again,
                                            c->count, params_null ? NULL : &c->params, &st);
        CHECK(s == want, "other context: the same error");
        CHECK(same_bits(again, before, fbytes), "other context: particles untouched on error");
        CHECK(same_bits(&st, &st_before, sizeof st), "other context: stats untouched on error");
    }
    free(again);
}

/* What the calls of allocation_failure must give: `want`, and on success
 * self_collide's bits `after` from `before`, or find_pairs' list (`list`,
 * `total` pairs) of the case's particles. */
typedef struct heap_expect {
    pleat_status want;
    const float *before, *after; /* self_collide; after NULL: find_pairs */
    const uint32_t *list;
    size_t total;
} heap_expect;

/* One call of allocation_failure's on ctx (the allocation failing as
 * fail_allocation says: k 0 none): `want` and its result, or, where it may
 * run out, OUT_OF_MEMORY; on error, nothing written. The allocations it
 * made. */
static unsigned long heap_call(pleat_context *ctx, const fz_case *c, const heap_expect *e,
                               unsigned long k, int may_run_out)
{
    const size_t fbytes = 4 * (size_t)c->count * sizeof(float), words = 2 * e->total + 8;
    float *again = xcalloc(4 * (size_t)c->count, sizeof(float));
    uint32_t *list = xcalloc(words, sizeof *list);
    memcpy(again, e->before, fbytes);
    for (size_t w = 0; w < words; ++w)
        list[w] = SENTINEL;
    pleat_stats st;
    memset(&st, 0xa5, sizeof st);
    const pleat_stats st_before = st;
    size_t num = SIZE_MAX - 1;
    fail_allocation(k, c->heap >> 7);
    pleat_status s = e->after ? pleat_self_collide(ctx, again, c->count, &c->params, &st)
                              : pleat_find_pairs(ctx, e->before, c->count, &c->params, list,
                                                 e->total, &num);
    const unsigned long made = atomic_load(&allocations);
    fail_allocation(0, 0);
    if (verbose && k)
        fprintf(stderr, "%s, allocation %lu of %s failing: %s\n",
                e->after ? "self_collide" : "find_pairs", k, c->heap >> 7 ? "the rest" : "one",
                pleat_status_string(s));
    if (!k || !may_run_out || s != PLEAT_ERROR_OUT_OF_MEMORY)
        check_status(s, e->want, k ? "an allocation failing" : "a call on a fresh context");
    if (e->after)
        CHECK(s == PLEAT_OK ? same_bits(again, e->after, fbytes)
                            : same_bits(again, e->before, fbytes) &&
                                  same_bits(&st, &st_before, sizeof st),
              "with an allocation failing or not: the call's bits, or nothing written");
    else
        CHECK(s == PLEAT_OK ? num == e->total &&
                                  same_bits(list, e->list, 2 * e->total * sizeof *list) &&
                                  all_sentinel(list + 2 * e->total, 8)
                            : num == SIZE_MAX - 1 && all_sentinel(list, words),
              "with an allocation failing or not: the list, or nothing written");
    free(list);
    free(again);
    return made;
}

/* The input's allocation failure (its heap byte: 0 none), on a fresh
 * context like the first. A call on one such context counts the
 * allocations a call makes there (n); on another, the k-th of them fails,
 * k = 1 + (bits 0-6) mod n, and with bit 7 every one after it too: the
 * call gives what `e` says, or OUT_OF_MEMORY unless its argument checks
 * fail, with nothing written; then the same context, allowed to allocate,
 * gives what `e` says. Destroyed, each holds no block. Misuse inputs are
 * left out (their contexts and pointers). */
static void allocation_failure(const fz_case *c, const heap_expect *e)
{
    if (!c->heap || c->misuse >= 0)
        return;
    const int first = (int)(c->first % (unsigned)num_contexts);
    const int may_run_out = argument_status(c, 0, 0, 0, 0) == PLEAT_OK;
    const long live = atomic_load(&live_blocks);
    pleat_context *ctx = fresh_like(first);
    const unsigned long n = heap_call(ctx, c, e, 0, may_run_out);
    pleat_context_destroy(ctx);
    if (verbose)
        fprintf(stderr, "a call on a fresh context: %lu allocations\n", n);
    if (n > 0) {
        ctx = fresh_like(first);
        heap_call(ctx, c, e, 1 + (c->heap & 127u) % n, may_run_out);
        heap_call(ctx, c, e, 0, may_run_out);
        pleat_context_destroy(ctx);
    }
    CHECK(atomic_load(&live_blocks) == live, "a destroyed context holds no block");
}

/* Every coordinate of a taking-part particle against the double-precision
 * Jacobi response over the reference's num pairs (ref) of the particles as
 * they were (before): within reference_tolerance, an independent check of
 * the corrections, which the comparison of contexts is not (they share
 * core/pair.h). */
static void check_response(const fz_case *c, const float *before, const uint32_t *ref, size_t num,
                           const uint32_t *pairs_of, const uint8_t *part)
{
    double *want = xcalloc(4 * (size_t)c->count, sizeof(double));
    reference_response(before, c->count, &c->params, ref, num, want);
    for (uint32_t i = 0; i < c->count; ++i)
        for (int k = 0; part[i] && k < 3; ++k) {
            double w = want[4 * (size_t)i + k], got = c->particles[4 * (size_t)i + k];
            if (!(fabs(got - w) <= reference_tolerance(w, pairs_of[i], c->params.distance))) {
                fprintf(stderr, "particle %u axis %d: %a, reference %a (%u pairs)\n", i, k, got,
                        w, pairs_of[i]);
                fail("response differs from the double-precision reference");
            }
        }
    free(want);
}

/* The checks of particle i after a call that succeeded, from its start
 * (before): its inverse mass kept; untouched when it takes no part, pinned,
 * or at stiffness 0; finite; and, with the reference's pairs (*pairs of
 * them, NULL without a reference), unmoved in no pair and moved by at most
 * the distance a pair, plus a quantum and the final rounding. */
static void check_particle(const fz_case *c, uint32_t i, const float *before, int part,
                           const uint32_t *pairs)
{
    const float *a = before + 4 * (size_t)i, *b = c->particles + 4 * (size_t)i;
    CHECK(same_bits(a + 3, b + 3, sizeof(float)), "inverse mass unchanged");
    if (!part) {
        CHECK(same_bits(a, b, 4 * sizeof(float)), "particle outside indices untouched");
        return;
    }
    CHECK(finite4(b, 3), "output finite");
    if (a[3] == 0.0f)
        CHECK(same_bits(a, b, 3 * sizeof(float)), "pinned particle never moves");
    if (c->params.stiffness == 0.0f)
        CHECK(same_bits(a, b, 3 * sizeof(float)), "stiffness 0 moves nothing");
    if (!pairs)
        return;
    if (*pairs == 0)
        CHECK(same_bits(a, b, 3 * sizeof(float)), "a particle in no pair never moves");
    for (int k = 0; k < 3; ++k) {
        double moved = fabs((double)b[k] - (double)a[k]);
        double most = (double)*pairs * (double)c->params.distance * (1.0 + 0x1p-20);
        float far = (float)(fabs((double)a[k]) + most);
        double ulp = (double)nextafterf(far, INFINITY) - (double)far;
        double bound = most + ulp + 0x1p-149;
        if (!(moved <= bound)) {
            fprintf(stderr, "particle %u axis %d moved %g, bound %g\n", i, k, moved, bound);
            fail("particle moved further than its pairs allow");
        }
    }
}

/* The call's bits (c->particles, from before) and counts (*stats) from the
 * n_other other contexts: every other ISA and thread count, the job system
 * and CUDA, each with its test limit at the call's tests (which a limit
 * allows: 0 is none). */
static void same_bits_elsewhere(const fz_case *c, const float *before, const pleat_stats *stats,
                                const int *other, int n_other)
{
    size_t fbytes = 4 * (size_t)c->count * sizeof(float);
    float *again = xcalloc(4 * (size_t)c->count, sizeof(float));
    pleat_params at_limit = c->params;
    at_limit.max_tests = stats->tests;
    const fz_context *first = &contexts[c->first % (unsigned)num_contexts];
    for (int k = 0; k < n_other; ++k) {
        memcpy(again, before, fbytes);
        pleat_stats st2;
        pleat_status s2 =
            pleat_self_collide(contexts[other[k]].ctx, again, c->count, &at_limit, &st2);
        CHECK(s2 == PLEAT_OK, "other context: status");
        if (!same_bits(again, c->particles, fbytes)) {
            fprintf(stderr, "%s/%d threads vs %s/%d threads\n", contexts[other[k]].isa,
                    contexts[other[k]].threads, first->isa, first->threads);
            fail("same bits across ISAs and thread counts");
        }
        CHECK(st2.pairs == stats->pairs && st2.tests == stats->tests,
              "same pair and test counts across contexts");
    }
    free(again);
}

/* A limit under the call's tests (over 1; a limit of 0 is none): stopped,
 * nothing written. One test fewer on one of the other contexts, or the
 * input's limit on every one (and the device path), each stopping where
 * it does. */
static void stopped_under_limit(fz_case *c, const float *before, uint64_t tests,
                                const int *other, int n_other)
{
    size_t fbytes = 4 * (size_t)c->count * sizeof(float);
    float *again = xcalloc(4 * (size_t)c->count, sizeof(float));
    pleat_params at_limit = c->params;
    at_limit.max_tests = limit_below(c, tests);
    int from = c->limit ? 0 : (int)(c->first % (unsigned)n_other);
    for (int k = from; k < (c->limit ? n_other : from + 1); ++k) {
        memcpy(again, before, fbytes);
        pleat_stats st2;
        memset(&st2, 0xa5, sizeof st2);
        const pleat_stats st2_before = st2;
        pleat_status s2 =
            pleat_self_collide(contexts[other[k]].ctx, again, c->count, &at_limit, &st2);
        check_status(s2, PLEAT_ERROR_TOO_MANY_TESTS, "over the test limit");
        CHECK(same_bits(again, before, fbytes), "particles untouched over the limit");
        CHECK(same_bits(&st2, &st2_before, sizeof st2), "stats untouched over the limit");
    }
#ifdef PLEAT_FUZZ_REQUIRE_CUDA
    if (c->limit) {
        c->params.max_tests = at_limit.max_tests;
        device_path(c, before, NULL, PLEAT_ERROR_TOO_MANY_TESTS, NULL, 0, 0);
    }
#endif
    free(again);
}

/* The checks of a call that succeeded, with *stats, from the particles'
 * start (before): the reference's pairs and tests, each particle, the
 * response, the other contexts, an allocation failing, the device path and
 * the test limit. */
static void collide_succeeded(fz_case *c, float *before, const pleat_stats *stats)
{
    const pleat_params *p = &c->params;
    uint32_t m = p->indices ? p->num_indices : c->count;
    /* which particles take part */
    uint8_t *part = xcalloc(c->count, 1);
    for (uint32_t k = 0; k < m; ++k)
        part[p->indices ? p->indices[k] : k] = 1;

    size_t num = 0;
    fz_case start = *c;
    start.particles = before; /* c->particles holds the result now */
    uint32_t *ref = reference_pairs(&start, &num);
    uint32_t *pairs_of = xcalloc(c->count, sizeof(uint32_t));
    if (num != SIZE_MAX) {
        if (stats->pairs != num) {
            fprintf(stderr, "stats.pairs %llu, reference %zu\n",
                    (unsigned long long)stats->pairs, num);
            fail("self_collide pair count");
        }
        for (size_t k = 0; k < 2 * num; ++k)
            pairs_of[ref[k]]++;
    }
    CHECK(stats->tests >= stats->pairs, "tests >= pairs");
    CHECK(m > REFERENCE_TESTS_MAX || stats->tests == reference_tests(before, c->count, p),
          "stats.tests as its definition counts them");
    if (verbose)
        fprintf(stderr, "self_collide: count %u, taking part %u, pairs %llu, tests %llu\n",
                c->count, m, (unsigned long long)stats->pairs, (unsigned long long)stats->tests);

    for (uint32_t i = 0; i < c->count; ++i)
        check_particle(c, i, before, part[i], num != SIZE_MAX ? pairs_of + i : NULL);
    if (num != SIZE_MAX)
        check_response(c, before, ref, num, pairs_of, part);

    int other[NUM_ISAS + 3];
    int n_other = others(c->first, other);
    same_bits_elsewhere(c, before, stats, other, n_other);
    allocation_failure(c, &(heap_expect){PLEAT_OK, before, c->particles, NULL, 0});
#ifdef PLEAT_FUZZ_REQUIRE_CUDA
    device_path(c, before, c->particles, PLEAT_OK, stats, 0, 0);
#endif
    if (n_other > 0 && stats->tests > 1)
        stopped_under_limit(c, before, stats->tests, other, n_other);
    free(pairs_of);
    free(ref);
    free(part);
}

/* Decodes the input into *c; returns a copy of its particles (the
 * caller frees it). */
static float *start_case(fz_case *c, const uint8_t *data, size_t size)
{
    fz_init();
    decode(c, data, size);
    float *before = xcalloc(4 * (size_t)c->count, sizeof(float));
    memcpy(before, c->particles, 4 * (size_t)c->count * sizeof(float));
    return before;
}

/* The context an input's call runs on: its first, or NULL when it misuses
 * one. */
static pleat_context *first_context(const fz_case *c)
{
    return c->misuse == MISUSE_NULL_CONTEXT ? NULL
                                            : contexts[c->first % (unsigned)num_contexts].ctx;
}

void fz_collide(const uint8_t *data, size_t size)
{
    fz_case c;
    float *before = start_case(&c, data, size);
    size_t fbytes = 4 * (size_t)c.count * sizeof(float);
    float *rest_before = c.rest ? xcalloc(4 * (size_t)c.count, sizeof(float)) : NULL;
    if (c.rest)
        memcpy(rest_before, c.rest, fbytes);
    uint32_t *idx_before = c.indices ? xcalloc(c.num_indices, sizeof(uint32_t)) : NULL;
    if (c.indices)
        memcpy(idx_before, c.indices, (size_t)c.num_indices * sizeof(uint32_t));

    int ctx_null = c.misuse == MISUSE_NULL_CONTEXT, params_null = c.misuse == MISUSE_NULL_PARAMS;
    int particles_null = c.misuse == MISUSE_NULL_PARTICLES;
    pleat_context *ctx = first_context(&c);
    pleat_status want = expected_status(&c, ctx_null, params_null, particles_null, 0);
    /* the data checks come before the test limit: it changes no error */
    if (want != PLEAT_OK)
        c.params.max_tests = c.limit;

    pleat_stats stats;
    memset(&stats, 0xa5, sizeof stats);
    pleat_stats stats_before = stats;
    pleat_status s = pleat_self_collide(ctx, particles_null ? NULL : c.particles, c.count,
                                        params_null ? NULL : &c.params, &stats);
    check_status(s, want, "self_collide status");
    CHECK(!c.rest || same_bits(c.rest, rest_before, fbytes), "rest positions untouched");
    CHECK(!c.indices ||
              same_bits(c.indices, idx_before, (size_t)c.num_indices * sizeof(uint32_t)),
          "indices untouched");
    if (s != PLEAT_OK) {
        CHECK(same_bits(c.particles, before, fbytes), "particles untouched on error");
        CHECK(same_bits(&stats, &stats_before, sizeof stats), "stats untouched on error");
        if (!ctx_null) {
            same_error_elsewhere(&c, before, s, params_null, particles_null);
            /* `after` set (to anything): self_collide */
            allocation_failure(&c, &(heap_expect){s, before, before, NULL, 0});
#ifdef PLEAT_FUZZ_REQUIRE_CUDA
            device_path(&c, before, NULL, s, NULL, params_null, particles_null);
#endif
        }
    } else {
        collide_succeeded(&c, before, &stats);
    }
    free(before);
    free(rest_before);
    free(idx_before);
    release(&c);
}

/* ---- pleat_find_pairs -------------------------------------------------- */

/* A find_pairs call that ctx must refuse with `want` (num_pairs NULL
 * where num_null): a size query and a call with an array of 4 pairs (too
 * small or not) alike, neither num_pairs nor the array written (`what`
 * names it in the report). */
static void pairs_refused(pleat_context *ctx, const float *particles, uint32_t count,
                          const pleat_params *p, int num_null, pleat_status want,
                          const char *what)
{
    uint32_t buf[8];
    for (int k = 0; k < 8; ++k)
        buf[k] = SENTINEL;
    size_t n2 = SIZE_MAX - 1, *num = num_null ? NULL : &n2;
    check_status(pleat_find_pairs(ctx, particles, count, p, NULL, 0, num), want, what);
    check_status(pleat_find_pairs(ctx, particles, count, p, buf, 4, num), want, what);
    CHECK(n2 == SIZE_MAX - 1 && all_sentinel(buf, 8), "refused find_pairs wrote nothing");
}

/* With the input's test limit: the list made at the call's tests, and
 * every context refusing one under them, TOO_MANY_TESTS before CAPACITY
 * (tests from pleat_self_collide on a copy, the same count). */
static void pairs_at_limits(const fz_case *c, pleat_context *ctx, const uint32_t *list,
                            size_t total)
{
    float *copy = xcalloc(4 * (size_t)c->count, sizeof(float));
    memcpy(copy, c->particles, 4 * (size_t)c->count * sizeof(float));
    pleat_stats st;
    CHECK(pleat_self_collide(ctx, copy, c->count, &c->params, &st) == PLEAT_OK,
          "self_collide of a find_pairs input");
    free(copy);
    pleat_params p = c->params;
    p.max_tests = st.tests;
    uint32_t *again = xcalloc(2 * total + 1, sizeof *again);
    size_t n2 = 0;
    CHECK(pleat_find_pairs(ctx, c->particles, c->count, &p, again, total, &n2) == PLEAT_OK &&
              n2 == total && same_bits(again, list, 2 * total * sizeof *again),
          "find_pairs at the limit: the same list");
    free(again);
    if (st.tests < 2)
        return;
    p.max_tests = limit_below(c, st.tests);
    pairs_refused(ctx, c->particles, c->count, &p, 0, PLEAT_ERROR_TOO_MANY_TESTS,
                  "find_pairs over the test limit");
    int other[NUM_ISAS + 3];
    int n_other = others(c->first, other);
    for (int k = 0; k < n_other; ++k)
        pairs_refused(contexts[other[k]].ctx, c->particles, c->count, &p, 0,
                      PLEAT_ERROR_TOO_MANY_TESTS, "other context: find_pairs over the limit");
}

/* find_pairs' error on the first context, on every other one: the same
 * status, and neither num_pairs nor the array written. */
static void same_pairs_error_elsewhere(const fz_case *c, pleat_status want, int params_null,
                                       int particles_null, int num_null)
{
    int other[NUM_ISAS + 3];
    int n_other = others(c->first, other);
    for (int k = 0; k < n_other; ++k)
        pairs_refused(contexts[other[k]].ctx, particles_null ? NULL : c->particles, c->count,
                      params_null ? NULL : &c->params, num_null, want,
                      "other context: the same find_pairs error");
}

/* The list of a find_pairs call (total pairs) against the reference's (num
 * pairs; SIZE_MAX: none), and in ascending order, each pair once, i < j. */
static void check_list(const uint32_t *buf, size_t total, const uint32_t *ref, size_t num)
{
    if (num != SIZE_MAX && !same_bits(buf, ref, 2 * num * sizeof *buf)) {
        for (size_t k = 0; k < num; ++k)
            if (buf[2 * k] != ref[2 * k] || buf[2 * k + 1] != ref[2 * k + 1]) {
                fprintf(stderr, "pair %zu: pleat (%u, %u), reference (%u, %u)\n", k, buf[2 * k],
                        buf[2 * k + 1], ref[2 * k], ref[2 * k + 1]);
                break;
            }
        fail("find_pairs list equals brute force");
    }
    for (size_t k = 0; k < total; ++k) {
        CHECK(buf[2 * k] < buf[2 * k + 1], "i < j");
        CHECK(k == 0 || buf[2 * k - 2] < buf[2 * k] ||
                  (buf[2 * k - 2] == buf[2 * k] && buf[2 * k - 1] < buf[2 * k + 1]),
              "ascending and unique");
    }
}

/* The capacities the input's capacity byte asks for besides the exact one
 * (bit 0: too small, 0 with bit 1, else one short; bit 2: a NULL array with
 * a capacity; bit 3: SIZE_MAX), against the list buf of total pairs, on
 * the particles parts (c's, or NULL with none). */
static void capacities(const fz_case *c, pleat_context *ctx, const float *parts,
                       const uint32_t *buf, size_t total)
{
    uint32_t *small = xcalloc(2 * total + 8, sizeof *small);
    pleat_status s;
    if (c->capacity & 1 && total > 0) {
        for (size_t k = 0; k < 2 * total + 8; ++k)
            small[k] = SENTINEL;
        size_t cap = c->capacity & 2 ? 0 : total - 1, n2 = 0;
        s = pleat_find_pairs(ctx, parts, c->count, &c->params, small, cap, &n2);
        CHECK(s == PLEAT_ERROR_CAPACITY && n2 == total, "too small -> CAPACITY and the total");
        CHECK(all_sentinel(small, 2 * total + 8), "nothing written when too small");
    }
    if (c->capacity & 4) {
        size_t n2 = 0;
        s = pleat_find_pairs(ctx, parts, c->count, &c->params, NULL,
                             1 + (c->capacity >> 4), &n2);
        CHECK(s == PLEAT_ERROR_CAPACITY && n2 == total, "NULL pairs, capacity > 0 -> CAPACITY");
    }
    if (c->capacity & 8) {
        for (size_t k = 0; k < 2 * total + 8; ++k)
            small[k] = SENTINEL;
        size_t n2 = 0;
        s = pleat_find_pairs(ctx, parts, c->count, &c->params, small, SIZE_MAX, &n2);
        CHECK(s == PLEAT_OK && n2 == total, "capacity larger than needed");
        CHECK(same_bits(small, buf, (2 * total + 8) * sizeof *buf), "same list, nothing more");
    }
    free(small);
}

/* The same list (buf, total pairs) from every other ISA and thread count,
 * the job system and CUDA, on the particles parts. */
static void same_list_elsewhere(const fz_case *c, const float *parts, const uint32_t *buf,
                                size_t total)
{
    int other[NUM_ISAS + 3];
    int n_other = others(c->first, other);
    uint32_t *again = xcalloc(2 * total + 8, sizeof *again);
    for (int k = 0; k < n_other; ++k) {
        size_t n2 = 0;
        pleat_status s = pleat_find_pairs(contexts[other[k]].ctx, parts, c->count,
                                          &c->params, again, total, &n2);
        CHECK(s == PLEAT_OK && n2 == total, "other context: status and total");
        CHECK(same_bits(again, buf, 2 * total * sizeof *buf), "same pairs across contexts");
    }
    free(again);
}

void fz_pairs(const uint8_t *data, size_t size)
{
    fz_case c;
    float *before = start_case(&c, data, size);
    size_t fbytes = 4 * (size_t)c.count * sizeof(float);

    int ctx_null = c.misuse == MISUSE_NULL_CONTEXT, params_null = c.misuse == MISUSE_NULL_PARAMS;
    int particles_null = c.misuse == MISUSE_NULL_PARTICLES;
    int num_null = c.misuse == MISUSE_NULL_NUM_PAIRS;
    pleat_context *ctx = first_context(&c);
    const float *parts = particles_null ? NULL : c.particles;
    const pleat_params *params = params_null ? NULL : &c.params;
    pleat_status want = expected_status(&c, ctx_null, params_null, particles_null, num_null);
    if (want != PLEAT_OK)
        c.params.max_tests = c.limit; /* which changes no error */

    /* size query */
    size_t total = SIZE_MAX - 1;
    pleat_status s = pleat_find_pairs(ctx, parts, c.count, params, NULL, 0,
                                      num_null ? NULL : &total);
    check_status(s, want, "find_pairs status (size query)");
    CHECK(same_bits(c.particles, before, fbytes), "particles untouched by find_pairs");
    if (s != PLEAT_OK) {
        CHECK(total == SIZE_MAX - 1, "num_pairs not written on error");
        /* and with an array: nothing written to it either */
        pairs_refused(ctx, parts, c.count, params, num_null, want,
                      "find_pairs status (with an array)");
        if (!ctx_null) {
            same_pairs_error_elsewhere(&c, s, params_null, particles_null, num_null);
            allocation_failure(&c, &(heap_expect){s, c.particles, NULL, NULL, 0});
        }
        goto done;
    }

    size_t num = 0;
    uint32_t *ref = reference_pairs(&c, &num);
    if (verbose)
        fprintf(stderr, "find_pairs: count %u, taking part %u, pairs %zu\n", c.count,
                c.params.indices ? c.params.num_indices : c.count, total);
    if (num != SIZE_MAX && total != num) {
        fprintf(stderr, "find_pairs total %zu, reference %zu\n", total, num);
        fail("find_pairs count");
    }

    uint32_t *buf = xcalloc(2 * total + 8, sizeof *buf);
    for (size_t k = 0; k < 2 * total + 8; ++k)
        buf[k] = SENTINEL;
    size_t got = SIZE_MAX - 1;
    s = pleat_find_pairs(ctx, parts, c.count, params, buf, total, &got);
    CHECK(s == PLEAT_OK && got == total, "find_pairs with the exact capacity");
    CHECK(all_sentinel(buf + 2 * total, 8), "nothing written past the total");
    check_list(buf, total, ref, num);
    capacities(&c, ctx, parts, buf, total);
    same_list_elsewhere(&c, parts, buf, total);
    if (c.limit)
        pairs_at_limits(&c, ctx, buf, total);
    allocation_failure(&c, &(heap_expect){PLEAT_OK, c.particles, NULL, buf, total});
    CHECK(same_bits(c.particles, before, fbytes), "particles untouched by find_pairs");
    free(buf);
    free(ref);
done:
    free(before);
    release(&c);
}
