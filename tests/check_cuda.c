/*
 * pleat-check-cuda: the CUDA backend against the CPU backend, bit for bit,
 * and the device-pointer API, without a test framework (the GPU machine has
 * no Criterion). Exit status: 0 all passed, 1 a check failed, 77 no CUDA
 * device here (CI: skipped).
 *
 * First, host memory running out while a CUDA context is made. On every
 * scene kind, with and without rest positions, and with an index subset
 * (of at least a quarter of the particles) with rest positions, and on
 * clusters whose differences are subnormal: the corrected particles, the
 * pair list and the stats of the CUDA backend (host pointers and device
 * pointers) equal the CPU backend's, also at a test limit, where a list
 * one pair short, or over the limit, is refused. Then bad
 * inputs through the device API: the status comes back with the stats, and
 * the device buffer is left as it was. Then an error the application left
 * pending in the CUDA runtime: calls refuse to run on it and leave it
 * there; a device call on a context another call holds; a context made
 * before a fork(), in the child; calls where no particle takes part. Then
 * the asynchronous path (own stream, a CUDA graph), which call
 * the device status reports, a call on the legacy stream while the
 * application captures a blocking stream, the timings of a captured call,
 * the stages each backend times (the same, also where nothing can collide),
 * scratch freed while calls are queued, a subset call that may read only
 * its subset, and two contexts correcting disjoint subsets of one host
 * array from two threads at once; with two devices, a context on each,
 * called while the other is current; a device number past the last. On
 * the CUDA emulator, also device
 * memory running out at each allocation of a call in turn, and the runtime
 * refusing each operation in turn, and the device reporting a fault at each
 * of its waits in turn, in a call on a fresh context and in one
 * that repeats the call before (which no allocation may fail), and a
 * device older than every architecture built. --threads runs only the two
 * threads on one array (for ThreadSanitizer).
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "core/context.h"
#include "reference.h"
#include "scenes.h"
#include "subsets.h"

#include <cuda_runtime_api.h>
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures, checks;

static void expect(int ok, const char *what, const char *scene)
{
    ++checks;
    if (!ok) {
        printf("FAIL %s: %s\n", scene, what);
        ++failures;
    }
}

static pleat_context *make(pleat_backend backend)
{
    pleat_status s;
    pleat_context *ctx = reference_context(backend, NULL, 0, &s);
    if (backend == PLEAT_BACKEND_CUDA && s == PLEAT_ERROR_BACKEND_UNAVAILABLE) {
        /* say why: on a GPU machine this is an old driver, not a pass */
        int devices = 0, driver = 0, runtime = 0;
        cudaError_t e = cudaGetDeviceCount(&devices);
        cudaDriverGetVersion(&driver);
        cudaRuntimeGetVersion(&runtime);
        printf("skipped: no usable CUDA device (%s; %d devices, driver %d, runtime %d)\n",
               cudaGetErrorString(e), devices, driver, runtime);
        exit(77);
    }
    if (s != PLEAT_OK)
        die(pleat_status_string(s));
    return ctx;
}

/* A context that times each stage of its calls (profile): on CUDA, waiting
 * for each. */
static pleat_context *profiled(pleat_backend backend)
{
    pleat_context_desc desc = pleat_default_context_desc();
    desc.backend = backend;
    desc.profile = 1;
    pleat_context *ctx = NULL;
    if (pleat_context_create(&desc, &ctx) != PLEAT_OK)
        die("a profiled context");
    return ctx;
}

/* A cudaMemcpy from pageable memory may return before its DMA lands, and
 * the calls under test run on a non-blocking stream, which is not ordered
 * after it: wait for the copy. */
static void upload(void *d, const void *host, size_t bytes)
{
    if (bytes && (cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess ||
                  cudaDeviceSynchronize() != cudaSuccess))
        die("cudaMemcpy");
}

/* bytes of device memory (at least 4, so that an empty array still has an
 * address). */
static void *device_alloc(size_t bytes)
{
    void *d = NULL;
    if (cudaMalloc(&d, bytes ? bytes : 4) != cudaSuccess)
        die("cudaMalloc");
    return d;
}

static void *to_device(const void *host, size_t bytes)
{
    void *d = device_alloc(bytes);
    upload(d, host, bytes);
    return d;
}

/* A device copy of host's floats that starts `skip` floats past
 * cudaMalloc's alignment, as a caller's sub-array may; *base gets what to
 * cudaFree. */
static float *to_device_skewed(const float *host, size_t floats, size_t skip, void **base)
{
    *base = device_alloc((floats + skip) * sizeof(float));
    float *d = (float *)*base + skip;
    upload(d, host, floats * sizeof(float));
    return d;
}

static float *from_device(const float *d, size_t floats)
{
    float *h = malloc(floats * sizeof *h + 1);
    if (!h || cudaMemcpy(h, d, floats * sizeof *h, cudaMemcpyDeviceToHost) != cudaSuccess)
        die("copy back");
    return h;
}

/* That the first `bytes` (whole floats) of device memory d are want's;
 * `what` names a failure. */
static void expect_device(const float *d, const void *want, size_t bytes, const char *what,
                          const char *name)
{
    float *got = from_device(d, bytes / sizeof(float));
    expect(memcmp(got, want, bytes) == 0, what, name);
    free(got);
}

/* Launches a captured graph on st and waits; with want, the device
 * particles d must then be its `bytes`. `label` names the graph in the
 * failures ("<label> launch", "<label> particles differ"). */
static void launch_graph(cudaGraphExec_t exec, cudaStream_t st, const float *d, const float *want,
                         size_t bytes, const char *label, const char *name)
{
    char what[96];
    snprintf(what, sizeof what, "%s launch", label);
    expect(cudaGraphLaunch(exec, st) == cudaSuccess && cudaStreamSynchronize(st) == cudaSuccess,
           what, name);
    if (!want)
        return;
    snprintf(what, sizeof what, "%s particles differ", label);
    expect_device(d, want, bytes, what, name);
}

/* Output a call must leave as it was: filled with a marker byte first,
 * then checked. */
enum { MARKER = 0xab };

static void mark(void *p, size_t bytes)
{
    memset(p, MARKER, bytes);
}

static int marked(const void *p, size_t bytes)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < bytes; ++i)
        if (c[i] != MARKER)
            return 0;
    return 1;
}

static uint32_t *pairs_of(pleat_context *ctx, const scene *sc, const pleat_params *p, size_t *n)
{
    if (pleat_find_pairs(ctx, sc->particles, sc->count, p, NULL, 0, n) != PLEAT_OK)
        die("pair count");
    uint32_t *pairs = malloc((*n + 1) * 2 * sizeof *pairs);
    if (!pairs || pleat_find_pairs(ctx, sc->particles, sc->count, p, pairs, *n, n) != PLEAT_OK)
        die("pair list");
    return pairs;
}

/* A pair list that ctx must refuse with `want` (CAPACITY: *num_pairs gets
 * want_n, the total; other errors leave it): nothing written to the array
 * of `capacity` pairs, nor past it. */
static void pair_list_refused(pleat_context *ctx, const scene *sc, const pleat_params *p,
                              size_t capacity, pleat_status want, size_t want_n,
                              const char *what, const char *name)
{
    const size_t words = 2 * (capacity + 1);
    uint32_t *pairs = malloc(words * sizeof *pairs);
    if (!pairs)
        die("malloc");
    mark(pairs, words * sizeof *pairs);
    size_t n = 7;
    expect(pleat_find_pairs(ctx, sc->particles, sc->count, p, pairs, capacity, &n) == want &&
               n == (want == PLEAT_ERROR_CAPACITY ? want_n : 7),
           what, name);
    expect(marked(pairs, words * sizeof *pairs), what, name);
    free(pairs);
}

/* params.max_tests at a call's tests (sa->tests) and one below, through the
 * CPU and the CUDA context's three kinds of call (host pointers, a pair
 * count, device pointers with stats and without them, then the device
 * status): at the limit, the call without one (its particles `a`, stats
 * sa); below, TOO_MANY_TESTS and nothing written. p and dp are the call's
 * params with host and with device pointers. */
static void limits(pleat_context *cpu, pleat_context *gpu, const scene *sc, const pleat_params *p,
                   const pleat_params *dp, const float *a, const pleat_stats *sa,
                   const char *name)
{
    const size_t floats = (size_t)sc->count * 4, bytes = floats * sizeof(float);
    for (int over = 0; over < 2 && sa->tests > (uint64_t)over; ++over) { /* 0: no limit */
        const pleat_status want = over ? PLEAT_ERROR_TOO_MANY_TESTS : PLEAT_OK;
        const float *after = over ? sc->particles : a;
        const pleat_stats marker = {12345, 678}, want_stats = over ? marker : *sa;
        pleat_params hp = *p, devp = *dp;
        hp.max_tests = devp.max_tests = sa->tests - (uint64_t)over;
        float *h_cpu = copy_floats(sc->particles, floats);
        float *h_gpu = copy_floats(sc->particles, floats);
        pleat_stats s_cpu = marker, s_gpu = marker, s_dev = marker;
        expect(pleat_self_collide(cpu, h_cpu, sc->count, &hp, &s_cpu) == want, "cpu limit status",
               name);
        expect(pleat_self_collide(gpu, h_gpu, sc->count, &hp, &s_gpu) == want,
               "host-pointer limit status", name);
        expect(memcmp(h_cpu, after, bytes) == 0 && memcmp(h_gpu, after, bytes) == 0 &&
                   memcmp(&s_cpu, &want_stats, sizeof marker) == 0 &&
                   memcmp(&s_gpu, &want_stats, sizeof marker) == 0,
               "host-pointer result at a limit", name);
        size_t n = 7;
        expect(pleat_find_pairs(gpu, sc->particles, sc->count, &hp, NULL, 0, &n) == want &&
                   n == (over ? 7 : sa->pairs),
               "pair count at a limit", name);
        if (!over) { /* the list too: its sweep comes after the count's */
            size_t n_cpu, n_gpu;
            uint32_t *pc = pairs_of(cpu, sc, &hp, &n_cpu), *pg = pairs_of(gpu, sc, &hp, &n_gpu);
            expect(n_cpu == n_gpu && memcmp(pc, pg, n_cpu * 2 * sizeof *pc) == 0,
                   "pair lists at a limit", name);
            free(pc);
            free(pg);
        }
        /* a list one pair short of the total; over the limit, also one with
         * room for every pair, both made without the size query first
         * (TOO_MANY_TESTS comes before CAPACITY) */
        for (int k = 0; k < 4; ++k) {
            const int cuda = k & 1, short_by = k < 2;
            if (short_by ? sa->pairs == 0 : !over)
                continue;
            pair_list_refused(cuda ? gpu : cpu, sc, &hp, sa->pairs - short_by,
                              over ? PLEAT_ERROR_TOO_MANY_TESTS : PLEAT_ERROR_CAPACITY,
                              sa->pairs,
                              cuda ? "pair list refused (cuda)" : "pair list refused (cpu)", name);
        }
        float *d_stats = to_device(sc->particles, bytes);
        float *d_async = to_device(sc->particles, bytes);
        expect(pleat_self_collide_device(gpu, d_stats, sc->count, &devp, NULL, &s_dev) == want &&
                   memcmp(&s_dev, &want_stats, sizeof marker) == 0,
               "device limit status", name);
        expect(pleat_self_collide_device(gpu, d_async, sc->count, &devp, NULL, NULL) == PLEAT_OK &&
                   pleat_context_device_status(gpu) == want,
               "device status at a limit", name);
        float *b_stats = from_device(d_stats, floats), *b_async = from_device(d_async, floats);
        expect(memcmp(b_stats, after, bytes) == 0 && memcmp(b_async, after, bytes) == 0,
               "device-pointer result at a limit", name);
        cudaFree(d_stats);
        cudaFree(d_async);
        free(b_stats);
        free(b_async);
        free(h_cpu);
        free(h_gpu);
    }
}

/* CPU, CUDA with host pointers, CUDA with device pointers: the same bits;
 * with `limits`, the same at a test limit too (limits()).
 * skew's bit 0 starts the device particles, bit 1 the device rest
 * positions, 4 bytes past 16-byte alignment: the kernels then read and
 * write rows as 4 floats, not one float4. */
static void compare(pleat_context *cpu, pleat_context *gpu, const scene *sc,
                    const pleat_params *p, int skew, int with_limits, const char *name)
{
    size_t floats = (size_t)sc->count * 4, n_cpu, n_gpu;
    uint32_t *pc = pairs_of(cpu, sc, p, &n_cpu), *pg = pairs_of(gpu, sc, p, &n_gpu);
    expect(n_cpu == n_gpu && memcmp(pc, pg, n_cpu * 2 * sizeof *pc) == 0, "pair lists differ",
           name);

    float *a = copy_floats(sc->particles, floats), *b = copy_floats(sc->particles, floats);
    pleat_stats sa, sb, sd;
    expect(pleat_self_collide(cpu, a, sc->count, p, &sa) == PLEAT_OK, "cpu call", name);
    expect(pleat_self_collide(gpu, b, sc->count, p, &sb) == PLEAT_OK, "cuda call", name);
    expect(memcmp(a, b, floats * sizeof *a) == 0, "host-pointer particles differ", name);
    expect(sa.pairs == sb.pairs && sa.tests == sb.tests, "stats differ", name);

    /* the device-pointer path, params pointing at device copies */
    void *d_base = NULL, *d_rest_base = NULL;
    float *d_particles = to_device_skewed(sc->particles, floats, skew & 1, &d_base);
    pleat_params dp = *p;
    void *d_idx = p->indices ? to_device(p->indices, p->num_indices * sizeof(uint32_t)) : NULL;
    dp.indices = d_idx;
    if (p->rest_positions)
        dp.rest_positions = to_device_skewed(p->rest_positions, floats, skew >> 1, &d_rest_base);
    expect(pleat_self_collide_device(gpu, d_particles, sc->count, &dp, NULL, &sd) == PLEAT_OK,
           "device call", name);
    expect_device(d_particles, a, floats * sizeof *a, "device-pointer particles differ", name);
    expect(sd.pairs == sa.pairs && sd.tests == sa.tests, "device stats differ", name);
    if (with_limits)
        limits(cpu, gpu, sc, p, &dp, a, &sa, name);
    cudaFree(d_base);
    cudaFree(d_idx);
    cudaFree(d_rest_base);
    free(b);
    free(a);
    free(pg);
    free(pc);
}

/* Clusters of three particles whose x differ by subnormal amounts (y and z
 * shared; clusters 3d apart), with inverse masses from 0 to FLT_MAX. Each
 * pair's difference is subnormal (or zero), so its correction takes the scalar lane
 * on every ISA (pleat_pair_correction, core/pair.h), whose scaling calls
 * ldexpf and frexpf: on a GPU, CUDA's, not the C library's. */
static scene subnormal_clusters(uint32_t clusters, uint64_t *rng)
{
    static const float w[] = {0.0f, 1.0f, 3.5f, 1e30f, 1e38f, FLT_MAX};
    scene sc = {3 * clusters, malloc(3 * 4 * sizeof(float) * (size_t)clusters), NULL, 1e-3f};
    if (!sc.particles)
        die("malloc");
    for (uint32_t i = 0; i < sc.count; ++i) {
        float *q = sc.particles + 4 * (size_t)i;
        uint64_t r = pleat_scene_random(rng);
        uint32_t c = i / 3;
        float x = ldexpf((float)(r % 1000), -140); /* up to 2^-130 */
        q[0] = r >> 10 & 1 ? -x : x;
        q[1] = (float)(c % 64) * 3 * sc.distance;
        q[2] = (float)(c / 64) * 3 * sc.distance;
        q[3] = w[(r >> 11) % (sizeof w / sizeof w[0])];
    }
    return sc;
}

/* The subnormal clusters: the CPU finds every cluster's 3 pairs and moves
 * its particles apart, and the GPU gives its bits. */
static void subnormal_x(pleat_context *cpu, pleat_context *gpu, uint64_t *rng)
{
    const char *name = "subnormal x";
    scene sc = subnormal_clusters(2000, rng);
    pleat_params p = pleat_default_params();
    p.distance = sc.distance;
    size_t n = 0;
    free(pairs_of(cpu, &sc, &p, &n));
    expect(n == sc.count, "every cluster's 3 pairs", name);
    float *moved = copy_floats(sc.particles, 4 * (size_t)sc.count);
    expect(pleat_self_collide(cpu, moved, sc.count, &p, NULL) == PLEAT_OK, "cpu call", name);
    uint32_t apart = 0; /* particles moved at least d/8 along x */
    for (uint32_t i = 0; i < sc.count; ++i)
        apart += fabsf(moved[4 * (size_t)i] - sc.particles[4 * (size_t)i]) >= sc.distance / 8;
    expect(apart > sc.count / 2, "most particles pushed apart", name);
    int before = failures;
    compare(cpu, gpu, &sc, &p, 1, 0, name);
    printf("%-24s %s\n", name, failures == before ? "same bits" : "DIFFERENT");
    free(moved);
    scene_free(&sc);
}

/* n floats of page-aligned memory, for protecting pages of it. */
static float *pages_of(size_t floats)
{
    float *p = mmap(NULL, floats * sizeof(float), PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        die("mmap");
    return p;
}

/* Bad data through the device API: its status with the stats (and from
 * pleat_context_device_status without them), the buffer unchanged; and
 * through the host API, on a subset (a host-pointer call gathers the
 * subset, so it checks the indices before it reads through them). */
static void bad_inputs(pleat_context *gpu)
{
    float pts[16] = {0, 0, 0, 1, 0.5f, 0, 0, 1, 1, 0, 0, 1, 1.5f, 0, 0, 1};
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *map = (char *)pages_of(2 * page / sizeof(float));
    if (mprotect(map + page, page, PROT_NONE) != 0)
        die("guard page");
    char *guard_page = map + page;
    struct {
        const char *name;
        int component;
        float value;
        uint32_t index;
        pleat_status want;
    } cases[] = {
        {"NaN position", 5, 0.0f / 0.0f, 0, PLEAT_ERROR_NONFINITE_INPUT},
        {"negative mass", 7, -1.0f, 0, PLEAT_ERROR_INVALID_ARGUMENT},
        {"index out of range", -1, 0.0f, 4, PLEAT_ERROR_BAD_INDEX},
        {"index given twice", -1, 0.0f, 1, PLEAT_ERROR_BAD_INDEX},
        {"NaN and a bad index", 5, 0.0f / 0.0f, 4, PLEAT_ERROR_BAD_INDEX},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        float bad[16];
        memcpy(bad, pts, sizeof pts);
        if (cases[k].component >= 0)
            bad[cases[k].component] = cases[k].value;
        uint32_t idx[4] = {0, 1, 2, cases[k].index ? cases[k].index : 3};
        float *d = to_device(bad, sizeof bad);
        uint32_t *d_idx = to_device(idx, sizeof idx);
        pleat_params p = pleat_default_params();
        p.distance = 1.0f;
        p.indices = d_idx;
        p.num_indices = 4;
        pleat_stats st;
        expect(pleat_self_collide_device(gpu, d, 4, &p, NULL, &st) == cases[k].want,
               "status with stats", cases[k].name);
        expect(pleat_self_collide_device(gpu, d, 4, &p, NULL, NULL) == PLEAT_OK,
               "queued without stats", cases[k].name);
        expect(pleat_context_device_status(gpu) == cases[k].want, "device status",
               cases[k].name);
        expect_device(d, bad, sizeof bad, "device buffer changed", cases[k].name);
        cudaFree(d);
        cudaFree(d_idx);

        /* the host copy ends at an unreadable page: an index read through
         * before it is checked faults */
        float *host = (float *)(guard_page - sizeof bad);
        memcpy(host, bad, sizeof bad);
        p.indices = idx;
        size_t found = 7;
        expect(pleat_self_collide(gpu, host, 4, &p, &st) == cases[k].want, "host-pointer status",
               cases[k].name);
        expect(pleat_find_pairs(gpu, host, 4, &p, NULL, 0, &found) == cases[k].want && found == 7,
               "pair count status", cases[k].name);
        expect(memcmp(host, bad, sizeof bad) == 0, "host array changed", cases[k].name);
    }
    munmap(guard_page - page, 2 * page);
}

/* No particle taking part, with rest positions: no particles (count 0),
 * or an empty subset of a scene. Every kind of call (host pointers, a pair
 * count and a list, device pointers with stats and without) succeeds with
 * no pair and no test, and moves nothing. */
static void nothing_takes_part(pleat_context *gpu)
{
    const char *name = "nothing takes part";
    scene sc = scene_make(SCENE_CLOUD, 500, 1, 23);
    const size_t floats = (size_t)sc.count * 4, bytes = floats * sizeof(float);
    float *d = to_device(sc.particles, bytes), *d_rest = to_device(sc.rest, bytes);
    const uint32_t none = 0, *d_none = to_device(&none, sizeof none);
    for (int subset = 0; subset < 2; ++subset) {
        const uint32_t count = subset ? sc.count : 0;
        const char *what = subset ? "an empty subset" : "count 0";
        pleat_params p = pleat_default_params();
        p.distance = sc.distance;
        p.rest_positions = sc.rest;
        p.indices = subset ? &none : NULL; /* with num_indices 0 */
        float *h = copy_floats(sc.particles, floats);
        pleat_stats st = {7, 7};
        size_t n = 7, listed = 7;
        uint32_t list[2] = {7, 7};
        expect(pleat_self_collide(gpu, h, count, &p, &st) == PLEAT_OK && st.pairs == 0 &&
                   st.tests == 0 && memcmp(h, sc.particles, bytes) == 0,
               "host pointers", what);
        expect(pleat_find_pairs(gpu, h, count, &p, NULL, 0, &n) == PLEAT_OK && n == 0 &&
                   pleat_find_pairs(gpu, h, count, &p, list, 1, &listed) == PLEAT_OK &&
                   listed == 0 && list[0] == 7 && list[1] == 7,
               "pair count and list", what);
        pleat_params dp = p;
        dp.rest_positions = d_rest;
        dp.indices = subset ? d_none : NULL;
        st = (pleat_stats){7, 7};
        expect(pleat_self_collide_device(gpu, d, count, &dp, NULL, &st) == PLEAT_OK &&
                   st.pairs == 0 && st.tests == 0 &&
                   pleat_self_collide_device(gpu, d, count, &dp, NULL, NULL) == PLEAT_OK &&
                   pleat_context_device_status(gpu) == PLEAT_OK,
               "device pointers", what);
        expect_device(d, sc.particles, bytes, "device pointers moved something", what);
        free(h);
    }
    cudaFree(d);
    cudaFree(d_rest);
    cudaFree((void *)d_none);
    scene_free(&sc);
    printf("%-24s %s\n", name, "done");
}

/* A device call on a context that another call holds (held here by hand,
 * as a running call holds it) is refused with INVALID_ARGUMENT: nothing
 * written, and the device status stays the call before's. Released, the
 * context runs the call. */
static void busy_context(pleat_context *gpu)
{
    const char *name = "busy context";
    const float pts[8] = {0, 0, 0, 1, 0.5f, 0, 0, 1}, nan_pts[8] = {NAN, 0, 0, 1, 0.5f, 0, 0, 1};
    float *d = to_device(nan_pts, sizeof pts);
    pleat_params p = pleat_default_params();
    p.distance = 1.0f;
    expect(pleat_self_collide_device(gpu, d, 2, &p, NULL, NULL) == PLEAT_OK &&
               pleat_context_device_status(gpu) == PLEAT_ERROR_NONFINITE_INPUT,
           "the call before", name);
    upload(d, pts, sizeof pts);
    expect(pleat_context_acquire(gpu), "held by hand", name);
    pleat_stats stats = {7, 7};
    expect(pleat_self_collide_device(gpu, d, 2, &p, NULL, &stats) == PLEAT_ERROR_INVALID_ARGUMENT &&
               stats.pairs == 7 && stats.tests == 7,
           "a call on a held context", name);
    pleat_context_release(gpu);
    expect(pleat_context_device_status(gpu) == PLEAT_ERROR_NONFINITE_INPUT,
           "the refused call changed the device status", name);
    expect_device(d, pts, sizeof pts, "the refused call wrote", name);
    expect(pleat_self_collide_device(gpu, d, 2, &p, NULL, &stats) == PLEAT_OK &&
               stats.pairs == 1,
           "the call once released", name);
    cudaFree(d);
    printf("%-24s %s\n", name, "done");
}

/* What a fork() child does with its copy of gpu: every call refused with
 * PLEAT_ERROR_DEVICE, writing nothing, then the context's end. As an exit
 * code (0 right, else the first wrong step); a call into the CUDA runtime
 * would be a crash or a hang on a GPU, and aborts the emulator. */
static int fork_child_calls(pleat_context *gpu, float *d, const float *pts, size_t bytes)
{
    alarm(60);
    float host[8];
    memcpy(host, pts, bytes);
    pleat_params p = pleat_default_params();
    p.distance = 1.0f;
    pleat_stats stats = {7, 7};
    size_t num = 7;
    uint32_t pairs[2] = {7, 7};
    if (pleat_self_collide(gpu, host, 2, &p, &stats) != PLEAT_ERROR_DEVICE)
        return 1;
    if (pleat_find_pairs(gpu, host, 2, &p, pairs, 1, &num) != PLEAT_ERROR_DEVICE)
        return 2;
    if (pleat_self_collide_device(gpu, d, 2, &p, NULL, &stats) != PLEAT_ERROR_DEVICE)
        return 3;
    if (pleat_context_device_status(gpu) != PLEAT_ERROR_DEVICE)
        return 4;
    if (memcmp(host, pts, bytes) != 0 || stats.pairs != 7 || stats.tests != 7 || num != 7 ||
        pairs[0] != 7 || pairs[1] != 7)
        return 5;
    pleat_context_destroy(gpu);
    return 0;
}

/* pleat.h: the CUDA runtime does not survive a fork(), so in the child a
 * CUDA context made before it calls none of it: its calls are refused and
 * its end frees only what it took from pleat's heap. The parent's context
 * is unaffected. */
static void fork_child(pleat_context *gpu)
{
    const char *name = "fork child";
    const float pts[8] = {0, 0, 0, 1, 0.5f, 0, 0, 1};
    float *d = to_device(pts, sizeof pts);
    pleat_params p = pleat_default_params();
    p.distance = 1.0f;
    expect(pleat_self_collide_device(gpu, d, 2, &p, NULL, NULL) == PLEAT_OK, "the call before",
           name);
    fflush(NULL);
    pid_t child = fork();
    if (child < 0)
        die("fork");
    if (child == 0)
        _exit(fork_child_calls(gpu, d, pts, sizeof pts));
    int how = 0;
    expect(waitpid(child, &how, 0) == child && WIFEXITED(how) && WEXITSTATUS(how) == 0,
           "the child's calls were not all refused, or it died", name);
    if (WIFEXITED(how) && WEXITSTATUS(how) != 0)
        printf("  the child's step %d was wrong\n", WEXITSTATUS(how));
    pleat_stats stats = {0, 0};
    expect(pleat_self_collide_device(gpu, d, 2, &p, NULL, &stats) == PLEAT_OK &&
               stats.pairs == 1 && pleat_context_device_status(gpu) == PLEAT_OK,
           "the parent's context after the child", name);
    cudaFree(d);
    printf("%-24s %s\n", name, "done");
}

/* An error the application left in cudaGetLastError() is its own: calls
 * (device and host pointers, pair counts, the device status) are refused
 * with PLEAT_ERROR_DEVICE, write nothing, and leave the error for the
 * application to read, neither taken nor replaced. Once it is cleared the
 * same calls run and, having succeeded, leave no error behind. */
static void pending_error(pleat_context *gpu)
{
    const char *name = "pending app error";
    float pts[8] = {0, 0, 0, 1, 0.5f, 0, 0, 1}, host[8];
    float *d = to_device(pts, sizeof pts);
    pleat_params p = pleat_default_params();
    p.distance = 1.0f;
    void *huge = NULL;
    cudaError_t made = cudaMalloc(&huge, (size_t)1 << 62);
    expect(made == cudaErrorMemoryAllocation && cudaPeekAtLastError() == made,
           "an impossible cudaMalloc left no pending error", name);
    pleat_stats st;
    expect(pleat_self_collide_device(gpu, d, 2, &p, NULL, &st) == PLEAT_ERROR_DEVICE,
           "device call not refused", name);
    memcpy(host, pts, sizeof pts);
    expect(pleat_self_collide(gpu, host, 2, &p, NULL) == PLEAT_ERROR_DEVICE,
           "host call not refused", name);
    expect(memcmp(host, pts, sizeof pts) == 0, "host array changed", name);
    size_t found = 7;
    expect(pleat_find_pairs(gpu, pts, 2, &p, NULL, 0, &found) == PLEAT_ERROR_DEVICE && found == 7,
           "pair count not refused", name);
    expect(pleat_context_device_status(gpu) == PLEAT_ERROR_DEVICE, "device status not refused",
           name);
    expect(cudaGetLastError() == made, "the application's error was taken or replaced", name);
    expect_device(d, pts, sizeof pts, "device buffer changed", name);

    expect(pleat_self_collide_device(gpu, d, 2, &p, NULL, &st) == PLEAT_OK && st.pairs == 1,
           "device call once cleared", name);
    expect(pleat_self_collide(gpu, host, 2, &p, NULL) == PLEAT_OK, "host call once cleared", name);
    expect(pleat_find_pairs(gpu, pts, 2, &p, NULL, 0, &found) == PLEAT_OK && found == 1,
           "pair count once cleared", name);
    expect(pleat_context_device_status(gpu) == PLEAT_OK, "device status once cleared", name);
    expect(cudaPeekAtLastError() == cudaSuccess, "a call that succeeded left an error", name);
    printf("%-24s %s\n", name, "done");
    cudaFree(d);
}

/* One device-pointer call captured on st into a graph, instantiated; NULL
 * (after a failed check) when the capture or the instantiation failed: an
 * allocation or a sync inside the call invalidates the capture. A call
 * asking for stats first must be refused without a sync. */
static cudaGraphExec_t capture(pleat_context *gpu, float *d, uint32_t count,
                               const pleat_params *p, cudaStream_t st, const char *name)
{
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    expect(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal) == cudaSuccess, "begin capture",
           name);
    pleat_stats stats;
    expect(pleat_self_collide_device(gpu, d, count, p, st, &stats) == PLEAT_ERROR_INVALID_ARGUMENT,
           "stats asked for while capturing", name);
    pleat_status s = pleat_self_collide_device(gpu, d, count, p, st, NULL);
    cudaError_t ce = cudaStreamEndCapture(st, &graph);
    expect(s == PLEAT_OK, "call while capturing", name);
    expect(ce == cudaSuccess, "end capture (capture invalidated?)", name);
    if (s == PLEAT_OK && ce == cudaSuccess &&
        cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
        expect(0, "graph instantiate", name);
        exec = NULL;
    }
    if (graph)
        cudaGraphDestroy(graph);
    cudaGetLastError();
    return exec;
}

/* A captured call that needs more scratch than its context has (no call
 * that large before it, or none with rest positions) is refused with
 * INVALID_ARGUMENT before it touches CUDA: the capture stays intact and
 * empty, no error is left, the buffer and the device status stay as they
 * were. After a call as large, the same capture works. */
static void capture_needs_a_call_first(pleat_context *cpu)
{
    const char *name = "capture/new scratch";
    pleat_context *gpu = make(PLEAT_BACKEND_CUDA);
    scene sc = scene_make(SCENE_FOLDED, 5000, 1, 31);
    pleat_params p = pleat_default_params();
    p.distance = sc.distance;
    size_t floats = (size_t)sc.count * 4, bytes = floats * sizeof(float);
    float *d = to_device(sc.particles, bytes);
    pleat_params dp = p;
    dp.rest_positions = to_device(sc.rest, bytes);
    cudaStream_t st;
    if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess)
        die("cudaStreamCreate");
    /* a fresh context; after a smaller call; after calls without rest positions */
    const uint32_t before[3] = {0, 1000, sc.count};
    for (int k = 0; k < 3; ++k) {
        if (before[k] > 0)
            expect(pleat_self_collide_device(gpu, d, before[k], &p, st, NULL) == PLEAT_OK &&
                       cudaStreamSynchronize(st) == cudaSuccess,
                   "the call before the capture", name);
        upload(d, sc.particles, bytes);
        cudaGraph_t graph = NULL;
        cudaGraphExec_t exec = NULL;
        expect(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal) == cudaSuccess,
               "begin capture", name);
        pleat_status s = pleat_self_collide_device(gpu, d, sc.count, k == 2 ? &dp : &p, st, NULL);
        expect(s == PLEAT_ERROR_INVALID_ARGUMENT, "a captured call that needs new scratch", name);
        expect(cudaStreamEndCapture(st, &graph) == cudaSuccess, "the capture was ended", name);
        expect(cudaPeekAtLastError() == cudaSuccess, "an error was left behind", name);
        expect(graph && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess &&
                   cudaGraphLaunch(exec, st) == cudaSuccess &&
                   cudaStreamSynchronize(st) == cudaSuccess,
               "the graph runs", name);
        expect_device(d, sc.particles, bytes, "the buffer changed", name);
        expect(pleat_context_device_status(gpu) == PLEAT_OK, "device status", name);
        if (exec)
            cudaGraphExecDestroy(exec);
        if (graph)
            cudaGraphDestroy(graph);
    }
    float *want = copy_floats(sc.particles, floats);
    pleat_params hp = p;
    hp.rest_positions = sc.rest;
    expect(pleat_self_collide(cpu, want, sc.count, &hp, NULL) == PLEAT_OK, "cpu call", name);
    expect(pleat_self_collide_device(gpu, d, sc.count, &dp, st, NULL) == PLEAT_OK &&
               cudaStreamSynchronize(st) == cudaSuccess,
           "the call as large, with rest positions", name);
    upload(d, sc.particles, bytes);
    cudaGraphExec_t exec = capture(gpu, d, sc.count, &dp, st, name);
    if (exec) {
        launch_graph(exec, st, d, want, bytes, "graph", name);
        cudaGraphExecDestroy(exec);
    }
    printf("%-24s %s\n", name, "done");
    cudaStreamDestroy(st);
    cudaFree((void *)dp.rest_positions);
    cudaFree(d);
    free(want);
    scene_free(&sc);
    pleat_context_destroy(gpu);
}

/* Uncaptured device calls without stats, as a solver makes them every
 * step: on one array again and again, then on another (same data, other
 * pointer), then back. Each starts from the scene and must give the CPU's
 * bits (want): nothing a call leaves in the context may change the next,
 * whatever the backend keeps between calls of one frame. */
static void repeated_calls(pleat_context *gpu, float *d, float *d2, uint32_t count,
                           const pleat_params *dp, const float *start, const float *want,
                           cudaStream_t st, const char *name)
{
    const size_t floats = (size_t)count * 4, bytes = floats * sizeof(float);
    float *const arrays[] = {d, d, d, d2, d2, d2, d, d};
    for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; ++k) {
        char what[64];
        upload(arrays[k], start, bytes);
        snprintf(what, sizeof what, "repeated call %zu", k);
        expect(pleat_self_collide_device(gpu, arrays[k], count, dp, st, NULL) == PLEAT_OK &&
                   cudaStreamSynchronize(st) == cudaSuccess,
               what, name);
        snprintf(what, sizeof what, "repeated call %zu particles differ", k);
        expect_device(arrays[k], want, bytes, what, name);
    }
}

/* The documented asynchronous path: a stream of the caller's, no stats
 * (repeated_calls too), then the same call captured in a CUDA graph and
 * replayed twice. Each result must equal the CPU's bits; the capture must
 * succeed (no sync, no allocation, no pageable copy inside it). Also a
 * duplicated index through the device API. */
static void async_and_graph(pleat_context *cpu, pleat_context *gpu)
{
    const char *name = "async/graph";
    scene sc = scene_make(SCENE_FOLDED, 50000, 1, 77);
    pleat_params p = pleat_default_params();
    p.distance = sc.distance;
    p.rest_positions = sc.rest;
    size_t floats = (size_t)sc.count * 4, bytes = floats * sizeof(float);
    float *want = copy_floats(sc.particles, floats);
    expect(pleat_self_collide(cpu, want, sc.count, &p, NULL) == PLEAT_OK, "cpu call", name);

    cudaStream_t st;
    if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess)
        die("cudaStreamCreate");
    float *d = to_device(sc.particles, bytes);
    pleat_params dp = p;
    dp.rest_positions = to_device(sc.rest, bytes);
    expect(pleat_self_collide_device(gpu, d, sc.count, &dp, st, NULL) == PLEAT_OK, "queued", name);
    expect(cudaStreamSynchronize(st) == cudaSuccess, "stream sync", name);
    expect_device(d, want, bytes, "async (no stats) particles differ", name);
    expect(pleat_context_device_status(gpu) == PLEAT_OK, "device status after async call", name);
    float *d2 = to_device(sc.particles, bytes);
    repeated_calls(gpu, d, d2, sc.count, &dp, sc.particles, want, st, name);
    cudaFree(d2);

    /* a call of this size was seen: the capture needs no allocation */
    cudaGraphExec_t exec = capture(gpu, d, sc.count, &dp, st, name);
    if (exec) {
        for (int r = 0; r < 2; ++r) {
            upload(d, sc.particles, bytes);
            launch_graph(exec, st, d, want, bytes, "graph replay", name);
        }
        expect(pleat_context_device_status(gpu) == PLEAT_OK, "device status after replay", name);
        cudaGraphExecDestroy(exec);
    }

    /* a duplicated index, no stats: reported later, buffer unchanged. Every
     * particle but the last takes part, and the last index repeats the
     * first, so the call's other pairs would move particles. */
    uint32_t *idx = malloc(sizeof *idx * sc.count);
    if (!idx)
        die("out of memory");
    for (uint32_t i = 0; i < sc.count; ++i)
        idx[i] = i + 1 < sc.count ? i : 0;
    uint32_t *d_idx = to_device(idx, sizeof *idx * sc.count);
    free(idx);
    pleat_params bad = dp;
    bad.indices = d_idx;
    bad.num_indices = sc.count - 1; /* the valid twin: without the repeat */
    upload(d, sc.particles, bytes);
    expect(pleat_self_collide_device(gpu, d, sc.count, &bad, st, NULL) == PLEAT_OK &&
               cudaStreamSynchronize(st) == cudaSuccess,
           "the subset without the repeat", name);
    float *got = from_device(d, floats);
    expect(memcmp(got, sc.particles, bytes) != 0, "the subset without the repeat moves nothing",
           name);
    free(got);
    upload(d, sc.particles, bytes);
    bad.num_indices = sc.count;
    expect(pleat_self_collide_device(gpu, d, sc.count, &bad, st, NULL) == PLEAT_OK, "queued dup",
           name);
    expect(pleat_context_device_status(gpu) == PLEAT_ERROR_BAD_INDEX, "duplicate index status",
           name);
    expect_device(d, sc.particles, bytes, "device buffer changed by a bad call", name);
    printf("%-24s %s\n", name, "done");

    cudaFree(d_idx);
    cudaFree((void *)dp.rest_positions);
    cudaFree(d);
    cudaStreamDestroy(st);
    free(want);
    scene_free(&sc);
}

/* Which call pleat_context_device_status() reports: the last one that
 * queued work, read on the context's own stream (the call's stream may be
 * destroyed by then); a call refused before queuing does not count. And a
 * capture on a fresh context whose only earlier call took host pointers,
 * with rest positions and indices: the device call must not allocate (the
 * capture would be invalidated). */
static void status_rules(pleat_context *cpu)
{
    const char *name = "device status rules";
    pleat_context *gpu = make(PLEAT_BACKEND_CUDA);
    scene sc = scene_make(SCENE_FOLDED, 20000, 1, 31);
    size_t floats = (size_t)sc.count * 4, bytes = floats * sizeof(float);
    uint32_t *idx = malloc((size_t)sc.count * sizeof *idx);
    if (!idx)
        die("malloc");
    for (uint32_t i = 0; i < sc.count; ++i)
        idx[i] = sc.count - 1 - i;
    pleat_params p = pleat_default_params();
    p.distance = sc.distance;
    p.rest_positions = sc.rest;
    p.indices = idx;
    p.num_indices = sc.count;
    float *want = copy_floats(sc.particles, floats), *host = copy_floats(sc.particles, floats);
    expect(pleat_self_collide(cpu, want, sc.count, &p, NULL) == PLEAT_OK, "cpu call", name);
    expect(pleat_self_collide(gpu, host, sc.count, &p, NULL) == PLEAT_OK, "host-pointer call",
           name);
    expect(memcmp(host, want, bytes) == 0, "host-pointer particles differ", name);
    expect(pleat_context_device_status(gpu) == PLEAT_OK, "no device call yet", name);

    float *d = to_device(sc.particles, bytes);
    pleat_params dp = p;
    dp.rest_positions = to_device(sc.rest, bytes);
    dp.indices = to_device(idx, (size_t)sc.count * sizeof *idx);
    cudaStream_t st;
    if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess)
        die("cudaStreamCreate");
    cudaGraphExec_t exec = capture(gpu, d, sc.count, &dp, st, name);
    if (exec) {
        launch_graph(exec, st, d, want, bytes, "graph", name);
        cudaGraphExecDestroy(exec);
    }

    /* a bad index queued on a stream that is destroyed before the status */
    upload(d, sc.particles, bytes);
    uint32_t bad = sc.count;
    upload((uint32_t *)dp.indices + 5, &bad, sizeof bad);
    expect(pleat_self_collide_device(gpu, d, sc.count, &dp, st, NULL) == PLEAT_OK, "queued", name);
    expect(cudaStreamDestroy(st) == cudaSuccess, "stream destroyed", name);
    expect(pleat_context_device_status(gpu) == PLEAT_ERROR_BAD_INDEX,
           "status after the stream was destroyed", name);
    /* refused by the argument checks, before the backend: the status is
     * still the bad call's */
    pleat_params refused = dp;
    refused.distance = -1.0f;
    expect(pleat_self_collide_device(gpu, d, sc.count, &refused, NULL, NULL) ==
               PLEAT_ERROR_INVALID_ARGUMENT,
           "negative distance refused", name);
    expect(pleat_context_device_status(gpu) == PLEAT_ERROR_BAD_INDEX,
           "a refused call changed the status", name);
    expect_device(d, sc.particles, bytes, "device buffer changed", name);
    /* a good call replaces it */
    upload((uint32_t *)dp.indices + 5, &idx[5], sizeof idx[5]);
    expect(pleat_self_collide_device(gpu, d, sc.count, &dp, NULL, NULL) == PLEAT_OK, "good call",
           name);
    expect(pleat_context_device_status(gpu) == PLEAT_OK, "status after a good call", name);
    expect_device(d, want, bytes, "particles differ", name);
    printf("%-24s %s\n", name, "done");

    cudaFree((void *)dp.indices);
    cudaFree((void *)dp.rest_positions);
    cudaFree(d);
    free(host);
    free(want);
    free(idx);
    scene_free(&sc);
    pleat_context_destroy(gpu);
}

/* While a blocking stream of the application is being captured, work on
 * the legacy stream would join that capture: a device call on stream NULL
 * is refused, queues nothing, leaves no error and leaves the capture intact;
 * once the capture ends the same call runs. */
static void legacy_while_capturing(pleat_context *gpu)
{
    const char *name = "legacy while capturing";
    float pts[8] = {0, 0, 0, 1, 0.5f, 0, 0, 1};
    float *d = to_device(pts, sizeof pts);
    pleat_params p = pleat_default_params();
    p.distance = 1.0f;
    cudaStream_t blocking;
    if (cudaStreamCreate(&blocking) != cudaSuccess)
        die("cudaStreamCreate");
    cudaGraph_t graph = NULL;
    expect(cudaStreamBeginCapture(blocking, cudaStreamCaptureModeGlobal) == cudaSuccess,
           "begin capture", name);
    expect(pleat_self_collide_device(gpu, d, 2, &p, NULL, NULL) == PLEAT_ERROR_DEVICE,
           "call on the legacy stream not refused", name);
    expect(cudaPeekAtLastError() == cudaSuccess, "pleat left an error", name);
    expect(cudaStreamEndCapture(blocking, &graph) == cudaSuccess && graph,
           "the application's capture was invalidated", name);
    if (graph)
        cudaGraphDestroy(graph);
    pleat_stats st;
    expect(pleat_self_collide_device(gpu, d, 2, &p, NULL, &st) == PLEAT_OK && st.pairs == 1,
           "call once the capture ended", name);
    printf("%-24s %s\n", name, "done");
    cudaStreamDestroy(blocking);
    cudaFree(d);
}

/* On a profiled context: a fresh context's device status is OK (its
 * counters are cleared at creation), a device call is timed, and a captured
 * one is not (a sync would end the capture): it leaves the timings as they
 * were. Then a subset of the same array, captured although every earlier
 * call took the whole array: it must not allocate, and gives the CPU's
 * bits. */
static void capture_and_timings(pleat_context *cpu)
{
    const char *name = "capture and timings";
    pleat_context *gpu = profiled(PLEAT_BACKEND_CUDA);
    expect(pleat_context_device_status(gpu) == PLEAT_OK, "status of a fresh context", name);
    scene sc = scene_make(SCENE_CLOUD, 30000, 0, 5);
    size_t bytes = (size_t)sc.count * 4 * sizeof(float);
    float *d = to_device(sc.particles, bytes);
    pleat_params p = pleat_default_params();
    p.distance = sc.distance;
    expect(pleat_self_collide_device(gpu, d, sc.count, &p, NULL, NULL) == PLEAT_OK, "timed call",
           name);
    pleat_timings timed, after;
    expect(pleat_context_timings(gpu, &timed) == PLEAT_OK && timed.sweep_ms > 0,
           "a device call was not timed", name);
    cudaStream_t st;
    if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess)
        die("cudaStreamCreate");
    cudaGraphExec_t exec = capture(gpu, d, sc.count, &p, st, name);
    expect(pleat_context_timings(gpu, &after) == PLEAT_OK &&
               memcmp(&timed, &after, sizeof timed) == 0,
           "a captured call changed the timings", name);
    if (exec) {
        launch_graph(exec, st, d, NULL, 0, "graph", name);
        cudaGraphExecDestroy(exec);
    }

    uint32_t *subset = random_subset(sc.count, 6, &p.num_indices);
    p.indices = subset;
    float *want = copy_floats(sc.particles, (size_t)sc.count * 4);
    expect(pleat_self_collide(cpu, want, sc.count, &p, NULL) == PLEAT_OK, "cpu call", name);
    pleat_params dp = p;
    dp.indices = to_device(subset, p.num_indices * sizeof *subset);
    upload(d, sc.particles, bytes);
    exec = capture(gpu, d, sc.count, &dp, st, name);
    if (exec) {
        launch_graph(exec, st, d, want, bytes, "subset graph", name);
        cudaGraphExecDestroy(exec);
    }
    printf("%-24s %s\n", name, "done");
    cudaFree((void *)dp.indices);
    free(want);
    free(subset);
    cudaStreamDestroy(st);
    cudaFree(d);
    scene_free(&sc);
    pleat_context_destroy(gpu);
}

/* The stages the context's last call timed, as bits: 1 bounds and keys,
 * 2 sort, 4 sweep, 8 apply. */
static unsigned timed_stages(const pleat_context *ctx)
{
    pleat_timings t;
    if (pleat_context_timings(ctx, &t) != PLEAT_OK)
        die("pleat_context_timings");
    return (t.bounds_keys_ms > 0) | (t.sort_ms > 0) << 1 | (t.sweep_ms > 0) << 2 |
           (t.apply_ms > 0) << 3;
}

/* One call, timed: 0 a correction, 1 a pair count, 2 a pair list (on a
 * copy of sc's particles), 3 device pointers with stats, 4 without (on `d`,
 * which they correct in place: the stages timed do not depend on where its
 * particles are). */
static pleat_status timed_call(pleat_context *ctx, int call, const scene *sc, uint32_t count,
                               const pleat_params *p, const pleat_params *dp, float *d)
{
    float *h = copy_floats(sc->particles, (size_t)sc->count * 4);
    uint32_t *list = NULL;
    size_t n = 0;
    pleat_stats st;
    pleat_status s = PLEAT_ERROR_INVALID_ARGUMENT;
    switch (call) {
    case 0: s = pleat_self_collide(ctx, h, count, p, NULL); break;
    case 1: s = pleat_find_pairs(ctx, h, count, p, NULL, 0, &n); break;
    case 2: /* the list's call last: the timings are its own */
        if ((s = pleat_find_pairs(ctx, h, count, p, NULL, 0, &n)) != PLEAT_OK)
            break;
        if (!(list = malloc(2 * n * sizeof *list + 1)))
            die("malloc");
        s = pleat_find_pairs(ctx, h, count, p, list, n, &n);
        break;
    case 3: s = pleat_self_collide_device(ctx, d, count, dp, NULL, &st); break;
    case 4: s = pleat_self_collide_device(ctx, d, count, dp, NULL, NULL); break;
    }
    free(list);
    free(h);
    return s;
}

/* Both backends time the same stages of a call (pleat_timings: one
 * semantics), also where nothing can collide: a call checks its particles
 * (bounds and keys) whether or not any pair can collide; a pair count
 * sweeps but writes nothing; a list and a correction run every stage, also
 * with no pair found. */
static void same_stages_timed(void)
{
    const char *name = "same stages timed";
    pleat_context *ctxs[2] = {profiled(PLEAT_BACKEND_CPU), profiled(PLEAT_BACKEND_CUDA)};
    scene sc = scene_make(SCENE_CLOUD, 3000, 0, 31);
    const size_t bytes = (size_t)sc.count * 4 * sizeof(float);
    float *d = to_device(sc.particles, bytes);
    const uint32_t none = 0, *d_none = to_device(&none, sizeof none);
    const struct {
        const char *what;
        float distance; /* times sc.distance */
        int taking_part; /* 0 none (count 0), 1 an empty subset, 2 one particle, 3 all */
        unsigned stages[5]; /* per call kind (timed_call) */
    } cases[] = {
        {"colliding", 1.0f, 3, {15, 7, 15, 15, 15}},
        {"no pair within the distance", 1e-3f, 3, {15, 7, 15, 15, 15}},
        {"distance 0", 0.0f, 3, {1, 1, 1, 1, 1}},
        {"one particle", 1.0f, 2, {1, 1, 1, 1, 1}},
        {"an empty subset", 1.0f, 1, {1, 1, 1, 1, 1}},
        {"count 0", 1.0f, 0, {1, 1, 1, 1, 1}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        pleat_params p = pleat_default_params();
        p.distance = cases[c].distance * sc.distance;
        p.indices = cases[c].taking_part == 1 ? &none : NULL;
        const uint32_t count = cases[c].taking_part == 0   ? 0
                               : cases[c].taking_part == 2 ? 1
                                                            : sc.count;
        pleat_params dp = p;
        dp.indices = p.indices ? d_none : NULL;
        for (int b = 0; b < 2; ++b) {
            for (int call = 0; call < (b ? 5 : 3); ++call) {
                char what[128];
                pleat_status s = timed_call(ctxs[b], call, &sc, count, &p, &dp, d);
                unsigned got = timed_stages(ctxs[b]);
                /* the CPU checks at most one particle within a tick of a
                 * coarse clock (CUDA's stage waits for its stream) */
                if (b == 0 && cases[c].taking_part < 3)
                    got |= 1;
                snprintf(what, sizeof what, "%s, %s call %d: stages %u timed, want %u",
                         cases[c].what, b ? "cuda" : "cpu", call, got, cases[c].stages[call]);
                expect(s == PLEAT_OK && got == cases[c].stages[call], what, name);
            }
        }
    }
    cudaFree(d);
    cudaFree((void *)d_none);
    scene_free(&sc);
    pleat_context_destroy(ctxs[0]);
    pleat_context_destroy(ctxs[1]);
    printf("%-24s %s\n", name, "done");
}

/* A device call left queued on a stream of the caller's, then a larger call
 * (which grows the scratch) and a destroy, neither waited for: scratch is
 * freed only once the work that uses it is done, so each result is the
 * CPU's. */
static void free_while_queued(pleat_context *cpu)
{
    const char *name = "free while queued";
    pleat_context *gpu = make(PLEAT_BACKEND_CUDA);
    cudaStream_t st;
    if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess)
        die("cudaStreamCreate");
    scene small = scene_make(SCENE_CLOUD, 3000, 0, 12);
    scene large = scene_make(SCENE_FOLDED, 30000, 0, 13);
    const scene *scenes[3] = {&small, &large, &small};
    float *d[3], *want[3];
    pleat_params p[3];
    for (int k = 0; k < 3; ++k) {
        const scene *sc = scenes[k];
        size_t floats = (size_t)sc->count * 4;
        p[k] = pleat_default_params();
        p[k].distance = sc->distance;
        want[k] = copy_floats(sc->particles, floats);
        expect(pleat_self_collide(cpu, want[k], sc->count, &p[k], NULL) == PLEAT_OK, "cpu call",
               name);
        d[k] = to_device(sc->particles, floats * sizeof(float));
    }
    /* back to back: to_device() waits for the device */
    for (int k = 0; k < 3; ++k)
        expect(pleat_self_collide_device(gpu, d[k], scenes[k]->count, &p[k], st, NULL) == PLEAT_OK,
               "queued", name);
    pleat_context_destroy(gpu); /* the third call may still be queued */
    expect(cudaStreamSynchronize(st) == cudaSuccess, "stream sync", name);
    for (int k = 0; k < 3; ++k) {
        size_t floats = (size_t)scenes[k]->count * 4;
        expect_device(d[k], want[k], floats * sizeof(float), "particles differ", name);
        free(want[k]);
        cudaFree(d[k]);
    }
    printf("%-24s %s\n", name, "done");
    cudaStreamDestroy(st);
    scene_free(&small);
    scene_free(&large);
}

/* Every other page of a and b, from the second: readable or not. */
static void protect_odd_pages(float *a, float *b, size_t pages, int prot)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t q = 1; q < pages; q += 2)
        if (mprotect((char *)a + q * page, page, prot) ||
            mprotect((char *)b + q * page, page, prot))
            die("mprotect");
}

/* A host-pointer call on a subset reads only the subset's particles and
 * rest positions (other contexts may be writing the rest of the array):
 * the particles of the even pages take part, in a shuffled order, while
 * the odd pages of both arrays are unreadable. Pairs and corrections equal
 * the CPU's, with and without rest positions. */
static void subset_only(pleat_context *cpu, pleat_context *gpu)
{
    const char *name = "subset reads only it";
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), per = page / (4 * sizeof(float)), pages = 8;
    const uint32_t n = (uint32_t)(pages * per);
    scene sc = scene_make(SCENE_CLOUD, n, 1, 57);
    if (sc.count < n)
        die("scene too small");
    float *a = pages_of(4 * (size_t)n), *r = pages_of(4 * (size_t)n);
    memcpy(r, sc.rest, 4 * (size_t)n * sizeof(float));
    /* the particles of the even pages, in a random order: slot k of a
     * permutation stands for particle k % per of even page k / per */
    uint32_t m = (uint32_t)(pages / 2 * per), unused, *idx = random_subset(m, 99, &unused);
    for (uint32_t s = 0; s < m; ++s)
        idx[s] = (uint32_t)(idx[s] / per * 2 * per + idx[s] % per);
    for (int rest = 0; rest < 2; ++rest) {
        pleat_params p = pleat_default_params();
        p.distance = sc.distance;
        p.indices = idx;
        p.num_indices = m;
        p.rest_positions = rest ? r : NULL;
        size_t n_cpu = 0, n_gpu = 0;
        uint32_t *pc = pleat_pairs(cpu, sc.particles, n, &p, &n_cpu);
        float *want = copy_floats(sc.particles, 4 * (size_t)n);
        expect(pleat_self_collide(cpu, want, n, &p, NULL) == PLEAT_OK, "cpu call", name);
        memcpy(a, sc.particles, 4 * (size_t)n * sizeof(float));
        uint32_t *pg = malloc((n_cpu + 1) * 2 * sizeof *pg);
        protect_odd_pages(a, r, pages, PROT_NONE);
        expect(pleat_find_pairs(gpu, a, n, &p, NULL, 0, &n_gpu) == PLEAT_OK && n_gpu == n_cpu,
               "pair count", name);
        expect(pg && pleat_find_pairs(gpu, a, n, &p, pg, n_cpu, &n_gpu) == PLEAT_OK,
               "pair list", name);
        expect(pleat_self_collide(gpu, a, n, &p, NULL) == PLEAT_OK, "cuda call", name);
        protect_odd_pages(a, r, pages, PROT_READ | PROT_WRITE);
        expect(pg && memcmp(pc, pg, n_cpu * 2 * sizeof *pc) == 0, "pair lists differ", name);
        expect(memcmp(a, want, 4 * (size_t)n * sizeof(float)) == 0, "particles differ", name);
        free(pg);
        free(want);
        free(pc);
    }
    printf("%-24s %s\n", name, "done");
    munmap(a, 4 * (size_t)n * sizeof(float));
    munmap(r, 4 * (size_t)n * sizeof(float));
    free(idx);
    scene_free(&sc);
}

/* Whether the calling thread's current device is `device`. */
static int current_is(int device)
{
    int now = -1;
    return cudaGetDevice(&now) == cudaSuccess && now == device;
}

#ifdef PLEAT_CUDA_EMULATOR
/* The calls device_failures() makes fail, each on a scene of its own. */
enum { FAULT_HOST, FAULT_SUBSET, FAULT_PAIRS, FAULT_DEVICE, FAULT_DEVICE_QUIET, FAULT_KINDS };
static const char *const fault_names[FAULT_KINDS] = {"host", "host subset", "pair list",
                                                     "device, a test limit", "device, no stats"};

/* Device pointers, with stats (which wait for the call) or without. */
static int fault_on_device(int kind)
{
    return kind == FAULT_DEVICE || kind == FAULT_DEVICE_QUIET;
}

/* One call's inputs and outputs: host particles (or their device copy) and
 * rest positions, a subset for FAULT_SUBSET, and what comes back. */
typedef struct fault_call {
    int kind;
    scene sc;
    pleat_params p;
    uint32_t *subset;
    float *host, *d, *d_rest;
    uint32_t *pairs;
    size_t capacity, n;
    pleat_stats stats;
} fault_call;

static fault_call fault_make(int kind, uint32_t count, uint64_t seed, size_t capacity)
{
    fault_call c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.sc = scene_make(SCENE_CLOUD, count, 1, seed);
    size_t floats = (size_t)c.sc.count * 4;
    c.p = pleat_default_params();
    c.p.distance = c.sc.distance;
    c.p.rest_positions = kind == FAULT_PAIRS ? NULL : c.sc.rest;
    /* a test limit the call stays under: its kernel is one more operation */
    c.p.max_tests = kind == FAULT_DEVICE ? (uint64_t)1 << 40 : 0;
    if (kind == FAULT_SUBSET) {
        c.subset = random_subset(c.sc.count, seed, &c.p.num_indices);
        c.p.indices = c.subset;
    }
    c.host = copy_floats(c.sc.particles, floats);
    if (fault_on_device(kind)) {
        c.d = to_device(c.sc.particles, floats * sizeof(float));
        c.d_rest = to_device(c.sc.rest, floats * sizeof(float));
    }
    c.capacity = capacity;
    c.pairs = malloc((capacity + 1) * 2 * sizeof *c.pairs);
    if (!c.pairs)
        die("malloc");
    return c;
}

/* Host inputs as made, outputs filled with a marker the call must not
 * leave. */
static void fault_mark(fault_call *c)
{
    memcpy(c->host, c->sc.particles, (size_t)c->sc.count * 4 * sizeof(float));
    mark(c->pairs, (c->capacity + 1) * 2 * sizeof *c->pairs);
    mark(&c->stats, sizeof c->stats);
    mark(&c->n, sizeof c->n);
}

/* Inputs as made, on the device too, and outputs marked. */
static void fault_reset(fault_call *c)
{
    fault_mark(c);
    if (c->d)
        upload(c->d, c->sc.particles, (size_t)c->sc.count * 4 * sizeof(float));
}

/* The call alone: a device call's result stays on the device (fault_fetch). */
static pleat_status fault_call_only(pleat_context *ctx, fault_call *c, cudaStream_t st)
{
    if (c->kind == FAULT_PAIRS)
        return pleat_find_pairs(ctx, c->host, c->sc.count, &c->p, c->pairs, c->capacity, &c->n);
    if (!fault_on_device(c->kind))
        return pleat_self_collide(ctx, c->host, c->sc.count, &c->p, &c->stats);
    pleat_params dp = c->p;
    dp.rest_positions = c->d_rest;
    return pleat_self_collide_device(ctx, c->d, c->sc.count, &dp, st,
                                     c->kind == FAULT_DEVICE ? &c->stats : NULL);
}

/* A device call's particles, once st has run what the call queued. */
static void fault_fetch(fault_call *c, cudaStream_t st)
{
    if (!fault_on_device(c->kind))
        return;
    cudaStreamSynchronize(st);
    float *got = from_device(c->d, (size_t)c->sc.count * 4);
    memcpy(c->host, got, (size_t)c->sc.count * 4 * sizeof(float));
    free(got);
}

static pleat_status fault_run(pleat_context *ctx, fault_call *c, cudaStream_t st)
{
    pleat_status s = fault_call_only(ctx, c, st);
    fault_fetch(c, st);
    return s;
}

/* Whether c's outputs are those of `want` (a call's copy), or untouched. */
static int fault_same(const fault_call *c, const fault_call *want)
{
    size_t bytes = (size_t)c->sc.count * 4 * sizeof(float);
    if (c->kind == FAULT_PAIRS)
        return c->n == want->n && memcmp(c->pairs, want->pairs, 2 * c->n * sizeof(uint32_t)) == 0;
    if (memcmp(c->host, want->host, bytes) != 0)
        return 0;
    return c->kind == FAULT_DEVICE_QUIET ||
           (c->stats.pairs == want->stats.pairs && c->stats.tests == want->stats.tests);
}

static int fault_particles_are(const fault_call *c, const float *want)
{
    return memcmp(c->host, want, (size_t)c->sc.count * 4 * sizeof(float)) == 0;
}

/* Whether c's pair array, stats and pair count still hold fault_reset's
 * marker. */
static int fault_outputs_untouched(const fault_call *c)
{
    return marked(c->pairs, (c->capacity + 1) * 2 * sizeof *c->pairs) &&
           marked(&c->stats, sizeof c->stats) && marked(&c->n, sizeof c->n);
}

static void fault_free(fault_call *c)
{
    cudaFree(c->d);
    cudaFree(c->d_rest);
    free(c->pairs);
    free(c->host);
    free(c->subset);
    scene_free(&c->sc);
}

/* What the emulator makes fail: each allocation of a call in turn (device
 * or pinned memory runs out), each operation the call queues on a stream
 * in turn (a kernel, sort, copy, set, event record or wait, refused with
 * `error` as the runtime refuses a launch it cannot load or fit), each of
 * its host waits in turn (the device reports `error`, a fault of the work
 * waited for), or each of its queries and setup calls in turn (the current
 * device asked or set, a stream made, CUB's size query: `error`, as when
 * the device has become unavailable). */
enum { ALLOCATIONS, OPERATIONS, WAITS, CALLS };
static const char *const failing_names[] = {"allocations", "operations", "waits", "calls"};

typedef struct fault {
    const char *name;
    int failing;         /* ALLOCATIONS, OPERATIONS, WAITS or CALLS */
    cudaError_t error;   /* an operation's, a wait's or a call's */
    pleat_status status; /* what the failed call returns */
    int profile;         /* on a context that times each stage, waiting for it */
    /* the caller's current device (the context's is 0): from device 1,
     * pleat sets its own and then the caller's again */
    int caller;
} fault;

static const fault faults[] = {
    {"out of memory", ALLOCATIONS, cudaSuccess, PLEAT_ERROR_OUT_OF_MEMORY, 0, 0},
    {"launch refused", OPERATIONS, cudaErrorLaunchOutOfResources, PLEAT_ERROR_DEVICE, 0, 0},
    {"no memory to launch", OPERATIONS, cudaErrorMemoryAllocation, PLEAT_ERROR_OUT_OF_MEMORY, 0,
     0},
    {"a fault at a wait", WAITS, cudaErrorLaunchFailure, PLEAT_ERROR_DEVICE, 0, 0},
    {"a fault at a wait, profiled", WAITS, cudaErrorLaunchFailure, PLEAT_ERROR_DEVICE, 1, 0},
    {"a runtime call fails", CALLS, cudaErrorDevicesUnavailable, PLEAT_ERROR_DEVICE, 0, 0},
    {"a runtime call fails, from device 1", CALLS, cudaErrorDevicesUnavailable,
     PLEAT_ERROR_DEVICE, 0, 1},
};

enum { FAULTS = sizeof faults / sizeof faults[0] };

/* What the context did before the call made to fail (fail_call's warm). */
enum { WARM_KINDS = 3 };
static const char *const warm_names[WARM_KINDS] = {"cold", "after the same call",
                                                   "after it twice"};

/* k >= 0: the k + 1-th allocation, operation, wait or call fails; k < 0
 * cancels it. */
static void fault_arm(const fault *f, long long k)
{
    switch (f->failing) {
    case OPERATIONS: pleat_emu_fail_operation(k, f->error); break;
    case WAITS: pleat_emu_fail_wait(k, f->error); break;
    case CALLS: pleat_emu_fail_call(k, f->error); break;
    default: pleat_emu_fail_allocation(k);
    }
}

static int fault_pending(const fault *f)
{
    switch (f->failing) {
    case OPERATIONS: return pleat_emu_operation_failure_pending();
    case WAITS: return pleat_emu_wait_failure_pending();
    case CALLS: return pleat_emu_call_failure_pending();
    default: return pleat_emu_failure_pending();
    }
}

/* Whether a call that returned PLEAT_OK after a failure got around it:
 * the refused mark of its end (it waits instead), or a failure to make the
 * caller's device current again, which leaves the context's current (the
 * call's result stands: it has written the caller's data). */
static int fault_got_around(const fault *f, int kept_device)
{
    return f->failing == OPERATIONS || (f->failing == CALLS && f->caller != 0 && !kept_device);
}

/* What fail_call saw beside plain failures. */
typedef struct fault_tally {
    int got_around;          /* calls that got around a failure (fault_got_around) */
    long long got_around_at; /* the last one's k */
    int ran_whole;           /* device calls failed at a wait once all their work ran */
} fault_tally;

/* The calls of one kind that device_failures() and lost_device() make
 * fail: `large`, on a fresh context after `small` (a smaller call of the
 * same kind) or after itself; `want`, the CPU's answer to large through
 * the host API (the same inputs), whose pair count sizes every call's pair
 * array. */
typedef struct fault_calls {
    fault_call want, small, large;
} fault_calls;

static fault_calls fault_calls_make(pleat_context *cpu, int kind, uint32_t count)
{
    const char *name = fault_names[kind];
    fault_calls c;
    c.want = fault_make(fault_on_device(kind) ? FAULT_HOST : kind, count, 81 + kind, 0);
    size_t capacity = 0;
    expect(pleat_find_pairs(cpu, c.want.host, c.want.sc.count, &c.want.p, NULL, 0, &capacity) ==
               PLEAT_OK,
           "cpu count", name);
    c.want.capacity = capacity;
    c.want.pairs = realloc(c.want.pairs, (capacity + 1) * 2 * sizeof *c.want.pairs);
    if (!c.want.pairs)
        die("realloc");
    fault_reset(&c.want);
    expect(fault_run(cpu, &c.want, NULL) == PLEAT_OK, "cpu call", name);
    c.small = fault_make(kind, count / 4, 91 + kind, capacity);
    c.large = fault_make(kind, count, 81 + kind, capacity);
    return c;
}

static void fault_calls_free(fault_calls *c)
{
    fault_free(&c->want);
    fault_free(&c->small);
    fault_free(&c->large);
}

/* What a fresh context does before the call made to fail (warm): with
 * warm 0, the smaller call, which returns `primed`; else warm times the
 * same call, which gives the CPU's bits. */
static void warm_up(pleat_context *gpu, int warm, fault_calls *c, pleat_status primed,
                    cudaStream_t st, const char *name)
{
    if (warm == 0) {
        fault_reset(&c->small);
        expect(fault_run(gpu, &c->small, st) == primed, "the smaller call", name);
    }
    for (int w = 0; w < warm; ++w) {
        fault_reset(&c->large);
        expect(fault_run(gpu, &c->large, st) == PLEAT_OK && fault_same(&c->large, &c->want),
               "the same call before", name);
    }
}

/* Destroys ctx (NULL is fine): the emulator must then hold no more than
 * before the context (`live`), or `what` fails. */
static void destroy_to(pleat_context *ctx, size_t live, const char *what, const char *name)
{
    pleat_context_destroy(ctx);
    expect(pleat_emu_live() == live, what, name);
}

/* One call made to fail at its k-th allocation, operation, wait or call,
 * on a fresh context that made first, with warm 0, a smaller call of the
 * same kind (so the call grows its scratch and waits for that call's
 * work), or warm times the same call, as a solver repeats its frame (a
 * backend may keep what a repeat tells it), with the fault's caller device
 * current. Returns 0 once the call made fewer than k + 1. A failed call
 * returns the fault's status and leaves the caller's arrays, stats, pair
 * count and current device untouched, with every operation it queued run,
 * and no error in the runtime. A host-pointer call leaves no work queued,
 * and neither does a device call that failed before its work or in its
 * scratch (a query or setup call, no memory, or a wait for the last
 * call's work), which leaves the device status as it was; a device call
 * that failed after that (it queued work or had an operation refused)
 * makes it PLEAT_ERROR_DEVICE. A device call whose stats' wait, or on a
 * profiled context whose last stage's wait, failed (the device reported a
 * fault) has run whole: it has the CPU's particles, and the rest as above.
 * A call that gets around a failure (fault_got_around) returns the CPU's
 * bits, and a device call leaves the device status PLEAT_OK. Then the same
 * call on that context gives the CPU's bits, and once it is destroyed the
 * emulator counts nothing more held than before it (pleat_emu_live). */
static int fail_call(const fault *f, long long k, int warm, fault_calls *c, cudaStream_t st,
                     const char *name, fault_tally *tally)
{
    fault_call *large = &c->large;
    const fault_call *want = &c->want;
    const int device = fault_on_device(large->kind);
    const size_t live = pleat_emu_live();
    pleat_context *gpu = f->profile ? profiled(PLEAT_BACKEND_CUDA) : make(PLEAT_BACKEND_CUDA);
    warm_up(gpu, warm, c,
            large->kind == FAULT_DEVICE ? PLEAT_ERROR_NONFINITE_INPUT : PLEAT_OK, st, name);
    pleat_status before = pleat_context_device_status(gpu);
    expect(before == (device && !warm ? PLEAT_ERROR_NONFINITE_INPUT : PLEAT_OK),
           "its device status", name);
    pleat_timings timed, timed_after;
    pleat_context_timings(gpu, &timed);
    fault_reset(large);
    cudaDeviceSynchronize(); /* every context's work, this one's included */
    const size_t queued_before = pleat_emu_queued_all();
    cudaSetDevice(f->caller);
    fault_arm(f, k);
    pleat_status s = fault_call_only(gpu, large, st);
    int failed = !fault_pending(f);
    fault_arm(f, -1);
    const int kept = current_is(f->caller), context_current = current_is(0);
    cudaSetDevice(0);
    const int queued = pleat_emu_queued_all() != queued_before;
    size_t left = pleat_emu_pending_all();
    expect(cudaGetLastError() == cudaSuccess, "an error left in the runtime", name);
    fault_fetch(large, st);
    if (!failed) {
        expect(s == PLEAT_OK && kept && fault_same(large, want), "the call without a failure",
               name);
        destroy_to(gpu, live, "the context's destroy kept something", name);
        return 0;
    }
    const int operation = f->failing == OPERATIONS;
    if (s == PLEAT_OK && fault_got_around(f, kept)) {
        expect(kept || context_current, "the context's device current", name);
        expect(fault_same(large, want), "the bits after a failure got around", name);
        expect(!device || pleat_context_device_status(gpu) == PLEAT_OK,
               "the device status after a failure got around", name);
        ++tally->got_around;
        tally->got_around_at = k;
    } else {
        const int ran = device && f->failing == WAITS && fault_particles_are(large, want->host);
        tally->ran_whole += ran;
        expect(s == f->status, "status", name);
        expect(kept, "the caller's current device changed", name);
        pleat_context_timings(gpu, &timed_after);
        expect(memcmp(&timed, &timed_after, sizeof timed) == 0, "the timings changed", name);
        expect(fault_outputs_untouched(large) &&
                   (ran || fault_particles_are(large, large->sc.particles)),
               "the caller's data changed", name);
        expect(left == 0 || (device && queued), "work left queued", name);
        expect(pleat_context_device_status(gpu) ==
                   (device && (operation || queued) ? PLEAT_ERROR_DEVICE : before),
               "device status", name);
    }
    fault_reset(large);
    expect(fault_run(gpu, large, st) == PLEAT_OK && fault_same(large, want), "the call after",
           name);
    destroy_to(gpu, live, "the context's destroy kept something", name);
    return 1;
}

/* The queries a CUDA context's creation makes before it takes the device:
 * the count of devices, the caller's device, the context's device set
 * (only from another device), cudaFree(NULL) to make its context, its
 * properties, whether pleat's kernels run there. The device cannot be used
 * when one of them fails. */
static long long setup_probes(const fault *f)
{
    return f->failing == CALLS ? 5 + (f->caller != 0) : 0;
}

enum setup_step { CREATE, STATUS, DESTROY, CREATE_AUTO };
static const char *const setup_names[] = {"create", "the device status", "destroy",
                                          "create with AUTO"};

/* Runs `step` (a create into *ctx, of a CUDA context or with AUTO, or on
 * *ctx) with the k + 1-th of f's
 * failures armed and the fault's caller device current, and then device 0
 * current again. Returns whether that failure happened; *s: what the
 * create or the status returned; *kept: whether the caller's device was
 * current after the step, which only a failed call from another device
 * may leave otherwise (the context's current). No error may be left in the
 * runtime. */
static int setup_step_fails(const fault *f, long long k, enum setup_step step,
                            pleat_context **ctx, pleat_status *s, int *kept)
{
    pleat_context_desc desc = pleat_default_context_desc();
    desc.backend = step == CREATE_AUTO ? PLEAT_BACKEND_AUTO : PLEAT_BACKEND_CUDA;
    cudaSetDevice(f->caller);
    fault_arm(f, k);
    if (step == CREATE || step == CREATE_AUTO)
        *s = pleat_context_create(&desc, ctx);
    else if (step == STATUS)
        *s = pleat_context_device_status(*ctx);
    else
        pleat_context_destroy(*ctx);
    const int failed = !fault_pending(f);
    fault_arm(f, -1);
    *kept = current_is(f->caller);
    const int context_current = current_is(0);
    cudaSetDevice(0);
    expect(cudaGetLastError() == cudaSuccess, "an error left in the runtime", setup_names[step]);
    expect(*kept || (failed && f->failing == CALLS && f->caller != 0 && context_current),
           "the caller's current device", setup_names[step]);
    return failed;
}

/* What setup_failures() counts for one fault: the calls of each step
 * (CREATE, STATUS, DESTROY) made to fail in turn, and the failures got
 * around. */
typedef struct setup_tally {
    long long n[3];
    int got_around;
} setup_tally;

/* A CUDA context's creation made to fail at each of its allocations,
 * operations, waits or calls in turn (f), then AUTO's after the same
 * failure. */
static void create_failures(const fault *f, setup_tally *t)
{
    const size_t live = pleat_emu_live();
    for (;; ++t->n[CREATE]) {
        pleat_context *ctx = NULL;
        pleat_status s;
        int kept;
        const int failed = setup_step_fails(f, t->n[CREATE], CREATE, &ctx, &s, &kept);
        if (!failed || (s == PLEAT_OK && fault_got_around(f, kept))) {
            expect(s == PLEAT_OK && ctx, "create", f->name);
            destroy_to(ctx, live, "destroy kept something", f->name);
            if (!failed)
                break;
            ++t->got_around;
            continue;
        }
        pleat_status want =
            t->n[CREATE] < setup_probes(f) ? PLEAT_ERROR_BACKEND_UNAVAILABLE : f->status;
        expect(s == want && !ctx && kept, "a failed create", f->name);
        /* NULL, or a create that failed wrongly */
        destroy_to(ctx, live, "a failed create kept something", f->name);
        expect(pleat_emu_pending_all() == 0, "work left queued by create", f->name);
        const int on_cpu = want == PLEAT_ERROR_BACKEND_UNAVAILABLE;
        expect(setup_step_fails(f, t->n[CREATE], CREATE_AUTO, &ctx, &s, &kept) && kept &&
                   s == (on_cpu ? PLEAT_OK : want) && (ctx != NULL) == on_cpu &&
                   (!ctx || pleat_context_backend(ctx) == PLEAT_BACKEND_CPU),
               "AUTO after the same failure", f->name);
        destroy_to(ctx, live, "AUTO kept something", f->name);
    }
}

/* The device status after a device call, and the destruction of a context
 * with that call queued, each made to fail at each of its allocations,
 * operations, waits or calls in turn (f). */
static void status_and_destroy_failures(const fault *f, setup_tally *t)
{
    scene sc = scene_make(SCENE_CLOUD, 1000, 1, 5);
    float *d = to_device(sc.particles, (size_t)sc.count * 4 * sizeof(float));
    pleat_params p = pleat_default_params();
    p.distance = sc.distance;
    const size_t live = pleat_emu_live();
    for (int step = STATUS; step <= DESTROY; ++step) {
        for (;; ++t->n[step]) {
            pleat_context *ctx = make(PLEAT_BACKEND_CUDA);
            expect(pleat_self_collide_device(ctx, d, sc.count, &p, NULL, NULL) == PLEAT_OK,
                   "a device call", f->name);
            pleat_status s = PLEAT_OK;
            int kept;
            const int failed = setup_step_fails(f, t->n[step], step, &ctx, &s, &kept);
            t->got_around += failed && !kept;
            if (step == STATUS) {
                expect(s == (failed && kept ? f->status : PLEAT_OK), "the device status",
                       f->name);
                expect(pleat_context_device_status(ctx) == PLEAT_OK, "the status read again",
                       f->name);
                pleat_context_destroy(ctx);
            }
            expect(pleat_emu_live() == live, "destroy kept something", f->name);
            if (!failed)
                break;
        }
    }
    cudaFree(d);
    scene_free(&sc);
}

/* Each fault at each allocation, operation, wait or call in turn of a CUDA
 * context's creation, of pleat_context_device_status() after a device call
 * and of the destruction of a context with that call queued, with the
 * fault's caller device current. Creation and the status return the
 * fault's status (creation BACKEND_UNAVAILABLE for a failed probe,
 * setup_probes), a failed creation makes no context and keeps none of
 * what it made, and the caller's device is current again; or, where
 * setting the caller's device again failed (fault_got_around), creation
 * has made its context and the status read has given PLEAT_OK. With AUTO
 * the same failure gives the same status, but for a failed probe: then
 * the context runs on the CPU. Destruction frees all the same: what the
 * emulator counts as held (pleat_emu_live) is as before the context.
 * (None waits for a stage: the profiled faults would repeat the others.) */
static void setup_failures(void)
{
    for (size_t i = 0; i < FAULTS; ++i) {
        const fault *f = &faults[i];
        if (f->profile)
            continue;
        setup_tally t = {{0, 0, 0}, 0};
        create_failures(f, &t);
        status_and_destroy_failures(f, &t);
        const long long *n = t.n;
        printf("%-36s %lld in create, %lld in the device status, %lld in destroy failed in turn\n",
               f->name, n[CREATE], n[STATUS], n[DESTROY]);
        /* after the probes, a stream and an event made; the status read
         * asks the caller's device and waits once; destroy asks it, and
         * waits for the call and the context's stream; from another
         * device, each sets the context's device and the caller's again at
         * its end, which it gets around */
        const int other = f->caller != 0;
        expect(n[CREATE] > 0 && (f->failing == ALLOCATIONS ? n[STATUS] == 0 : n[STATUS] > 0),
               "what failed in create and the status", f->name);
        expect(n[DESTROY] == (f->failing == WAITS ? 2 : f->failing == CALLS ? 1 + 2 * other : 0),
               "what failed in destroy", f->name);
        expect(f->failing != CALLS ||
                   (n[CREATE] == setup_probes(f) + 2 + other && n[STATUS] == 1 + 2 * other),
               "the calls of create and the status", f->name);
        expect(t.got_around == 3 * (f->failing == CALLS && other), "failures got around",
               f->name);
    }
}

/* A call (large, repeating the one before) whose mark of its end the
 * runtime refuses waits for its stream instead. Each operation is refused
 * in turn, with the wait after the call's own made to fail (a host call in
 * these checks waits twice, a device call before its mark never): only the
 * refused mark makes that wait. When the device reports a fault there, a
 * host-pointer call, which has waited for its work and written the
 * caller's data, stands (`want`'s result); a device-pointer call returns
 * PLEAT_ERROR_DEVICE with its work run whole (the CPU's particles, no
 * stats, the timings as they were) and the device status says so. No error
 * is left in the runtime, and the same call then gives the CPU's bits. */
static void refused_mark_fault(fault_call *large, const fault_call *want, cudaStream_t st)
{
    const int device = fault_on_device(large->kind);
    char name[80];
    snprintf(name, sizeof name, "a refused mark, then a fault at its wait, %s",
             fault_names[large->kind]);
    int found = 0;
    for (long long k = 0;; ++k) {
        pleat_context *gpu = make(PLEAT_BACKEND_CUDA);
        fault_reset(large);
        expect(fault_run(gpu, large, st) == PLEAT_OK, "the same call before", name);
        fault_reset(large);
        cudaDeviceSynchronize();
        pleat_timings timed, timed_after;
        pleat_context_timings(gpu, &timed);
        pleat_emu_fail_operation(k, cudaErrorLaunchOutOfResources);
        pleat_emu_fail_wait(device ? 0 : 2, cudaErrorLaunchFailure);
        pleat_status s = fault_call_only(gpu, large, st);
        const int refused = !pleat_emu_operation_failure_pending(),
                  waited = !pleat_emu_wait_failure_pending();
        pleat_emu_fail_operation(-1, cudaSuccess);
        pleat_emu_fail_wait(-1, cudaSuccess);
        expect(cudaGetLastError() == cudaSuccess, "an error left in the runtime", name);
        fault_fetch(large, st);
        if (refused && waited) {
            ++found;
            if (device) {
                expect(s == PLEAT_ERROR_DEVICE && fault_particles_are(large, want->host) &&
                           fault_outputs_untouched(large),
                       "the call", name);
                expect(pleat_context_device_status(gpu) == PLEAT_ERROR_DEVICE, "device status",
                       name);
                pleat_context_timings(gpu, &timed_after);
                expect(memcmp(&timed, &timed_after, sizeof timed) == 0, "the timings changed",
                       name);
            } else {
                expect(s == PLEAT_OK && fault_same(large, want), "the call", name);
            }
            fault_reset(large);
            expect(fault_run(gpu, large, st) == PLEAT_OK && fault_same(large, want),
                   "the call after", name);
        }
        pleat_context_destroy(gpu);
        if (!refused)
            break;
    }
    expect(found == 1, "one refused operation waits, the mark", name);
}

/* How many allocations, operations, waits or calls a call of `kind`
 * makes, or -1 for some: a call that repeats the one before allocates
 * nothing (the README's Memory: the same size allocates nothing), and
 * then, unprofiled, a device call waits only for its stats (none without:
 * it never synchronises) and a host call in these checks twice (for its
 * checks before it writes anything, and for what it writes: these scenes
 * have pairs to list or to correct). Its queries and setup calls are the
 * caller's device asked (and from another device, the context's set and
 * the caller's set again), a device call's question whether its stream is
 * being captured, and CUB's size query for each sort of other sizes than
 * the call before's (all but a repeated call: the keys', and a pair list's). */
static long long fault_count(const fault *f, int kind, int warm)
{
    if (warm && f->failing == ALLOCATIONS)
        return 0;
    if (warm && f->failing == WAITS && !f->profile)
        return fault_on_device(kind) ? kind == FAULT_DEVICE : 2;
    if (f->failing == CALLS)
        return 1 + 2 * (f->caller != 0) + fault_on_device(kind) +
               (warm ? 0 : 1 + (kind == FAULT_PAIRS));
    return -1;
}

/* How many of a call's waits come once it has run whole: a device call's
 * stats' wait, and on a profiled context the wait for its last stage. */
static int fault_ran_whole(const fault *f, int kind)
{
    return f->failing == WAITS && fault_on_device(kind) ? (kind == FAULT_DEVICE) + f->profile : 0;
}

/* The stage a slow piece of a call's work is timed in (the emulator's
 * pleat_emu_slow), as on the CPU: a host-pointer correction's copy back
 * into the caller's array is its apply (the CPU's apply writes there), and
 * a pair list's second sweep, which starts with a clear of its counters,
 * is a sweep. Laps are disjoint and each waits for its work, so the delay
 * lies in one lap: the checked stage's lower bound fails when the work
 * moves. (No bound on the others: under load they can exceed the delay.) */
static void slow_work_stages(void)
{
    const char *name = "slow work's stage";
    enum { DELAY_MS = 250 };
    pleat_context *gpu = profiled(PLEAT_BACKEND_CUDA);
    scene sc = scene_make(SCENE_CLOUD, 3000, 0, 37);
    pleat_params p = pleat_default_params();
    p.distance = sc.distance;
    pleat_timings t;
    /* only the moved particles' copy: the counters' read is smaller */
    pleat_emu_slow(1024, DELAY_MS, 0);
    expect(timed_call(gpu, 0, &sc, sc.count, &p, &p, NULL) == PLEAT_OK &&
               pleat_context_timings(gpu, &t) == PLEAT_OK && t.apply_ms >= DELAY_MS,
           "a correction's copy back is not its apply", name);
    pleat_emu_slow(0, 0, DELAY_MS);
    expect(timed_call(gpu, 2, &sc, sc.count, &p, &p, NULL) == PLEAT_OK &&
               pleat_context_timings(gpu, &t) == PLEAT_OK && t.sweep_ms >= DELAY_MS,
           "a pair list's second sweep is not a sweep", name);
    pleat_emu_slow(0, 0, 0);
    scene_free(&sc);
    pleat_context_destroy(gpu);
    printf("%-24s %s\n", name, "done");
}

/* Every fault at every allocation, operation, wait or call of every kind
 * of call. */
static void device_failures(pleat_context *cpu)
{
    cudaStream_t st;
    if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess)
        die("cudaStreamCreate");
    for (int kind = 0; kind < FAULT_KINDS; ++kind) {
        fault_calls c = fault_calls_make(cpu, kind, 6000);
        if (fault_on_device(kind)) /* a bad input: its status must outlive a refused call */
            upload(c.small.d_rest + 1, &(float){NAN}, sizeof(float));
        for (size_t i = 0; i < FAULTS * WARM_KINDS; ++i) {
            const fault *f = &faults[i % FAULTS];
            const int warm = (int)(i / FAULTS);
            char name[80];
            snprintf(name, sizeof name, "%s, %s, %s", f->name, fault_names[kind],
                     warm_names[warm]);
            long long k = 0;
            fault_tally tally = {0, -1, 0};
            while (fail_call(f, k, warm, &c, st, name, &tally))
                ++k;
            const long long n = fault_count(f, kind, warm);
            expect(n < 0 ? k > 0 : k == n, failing_names[f->failing], name);
            expect(tally.got_around == (f->failing == OPERATIONS ||
                                        (f->failing == CALLS && f->caller != 0)),
                   "failures got around", name);
            expect(f->failing != CALLS || tally.got_around == 0 || tally.got_around_at == k - 1,
                   "the call got around is the last", name);
            expect(tally.ran_whole == fault_ran_whole(f, kind),
                   "a failed wait after the whole call", name);
            printf("%-62s %lld %s failed in turn, %d got around\n", name, k,
                   failing_names[f->failing], tally.got_around);
        }
        refused_mark_fault(&c.large, &c.want, st);
        fault_calls_free(&c);
    }
    cudaStreamDestroy(st);
}
#endif

/* A CUDA context on `device`, which pleat cannot use, is refused with
 * BACKEND_UNAVAILABLE; AUTO falls back to the CPU and gives its bits. The
 * runtime then holds `left` (cudaSuccess: no error), as before. */
static void refused_device(pleat_context *cpu, int device, cudaError_t left, const char *name)
{
    scene sc = scene_make(SCENE_CLOUD, 3000, 0, 17);
    pleat_params p = pleat_default_params();
    p.distance = sc.distance;
    size_t bytes = (size_t)sc.count * 4 * sizeof(float);
    float *want = copy_floats(sc.particles, (size_t)sc.count * 4);
    expect(pleat_self_collide(cpu, want, sc.count, &p, NULL) == PLEAT_OK, "cpu call", name);
    pleat_context_desc d = pleat_default_context_desc();
    d.backend = PLEAT_BACKEND_CUDA;
    d.cuda_device = device;
    pleat_context *ctx = NULL;
    expect(pleat_context_create(&d, &ctx) == PLEAT_ERROR_BACKEND_UNAVAILABLE && !ctx,
           "PLEAT_BACKEND_CUDA is refused", name);
    d.backend = PLEAT_BACKEND_AUTO;
    expect(pleat_context_create(&d, &ctx) == PLEAT_OK, "PLEAT_BACKEND_AUTO", name);
    if (ctx) {
        float *got = copy_floats(sc.particles, (size_t)sc.count * 4);
        expect(strncmp(pleat_context_describe(ctx), "cpu", 3) == 0, "AUTO runs on the CPU", name);
        expect(pleat_self_collide(ctx, got, sc.count, &p, NULL) == PLEAT_OK &&
                   memcmp(got, want, bytes) == 0,
               "AUTO gives the CPU's bits", name);
        free(got);
        pleat_context_destroy(ctx);
    }
    expect(cudaPeekAtLastError() == left, "the error left in the runtime", name);
    free(want);
    scene_free(&sc);
}

/* The device after the last one: refused_device(). */
static void device_past_the_last(pleat_context *cpu)
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess)
        die("cudaGetDeviceCount");
    refused_device(cpu, devices, cudaSuccess, "device past the last");
    printf("%-24s %s\n", "device past the last", "done");
}

#ifdef PLEAT_CUDA_EMULATOR
/* A device older than every architecture of the build (the emulator's
 * device 1 made so) cannot run pleat's kernels: refused_device(), and pleat
 * leaves no error in the runtime. The check is made on the context's
 * device, not the caller's current one: device 0 is still usable while
 * device 1 is current. */
static void no_kernel_image(pleat_context *cpu)
{
    const char *name = "no kernel image";
    pleat_emu_kernel_images(1, 0);
    refused_device(cpu, 1, cudaSuccess, name);
    cudaSetDevice(1);
    pleat_context_desc d = pleat_default_context_desc();
    d.backend = PLEAT_BACKEND_CUDA;
    d.cuda_device = 0;
    pleat_context *ctx = NULL;
    expect(pleat_context_create(&d, &ctx) == PLEAT_OK, "device 0 while device 1 is current",
           name);
    pleat_context_destroy(ctx);
    cudaSetDevice(0);
    expect(cudaPeekAtLastError() == cudaSuccess, "no error left in the runtime", name);
    pleat_emu_kernel_images(1, 1);
    printf("%-24s %s\n", name, "done");
}

/* After a fault that stays: each kind of call on gpu (set[kind].large) is
 * refused with PLEAT_ERROR_DEVICE and writes nothing to host memory, and
 * so is the device status; from another current device, the status reads
 * nothing after no device-pointer call (a host kind's): PLEAT_OK. */
static void refused_everywhere(pleat_context *gpu, fault_calls *set, int kind_lost,
                               cudaStream_t st, const char *name)
{
    for (int kind = 0; kind < FAULT_KINDS; ++kind) {
        fault_call *c = &set[kind].large;
        fault_mark(c);
        char what[80];
        snprintf(what, sizeof what, "a %s call after it", fault_names[kind]);
        expect(fault_call_only(gpu, c, st) == PLEAT_ERROR_DEVICE &&
                   fault_particles_are(c, c->sc.particles) && fault_outputs_untouched(c),
               what, name);
    }
    expect(pleat_context_device_status(gpu) == PLEAT_ERROR_DEVICE, "the device status after it",
           name);
    cudaSetDevice(1);
    expect(pleat_context_device_status(gpu) ==
               (fault_on_device(kind_lost) ? PLEAT_ERROR_DEVICE : PLEAT_OK),
           "the device status from another device", name);
    cudaSetDevice(0);
}

/* A GPU's fault stays (a sticky error): every later call on its device
 * fails with it. */
static const fault fault_that_stays = {"a fault that stays", WAITS, cudaErrorIllegalAddress,
                                       PLEAT_ERROR_DEVICE, 0, 0};

/* The call set[kind].large losing the device at its k-th wait, on a
 * fresh context warmed up as fail_call's (warm_up). Returns 0 once the call
 * waits fewer than k + 1 times (it then gives the CPU's bits). The call
 * returns PLEAT_ERROR_DEVICE and leaves the caller's host memory
 * untouched; then nothing gets through on that device
 * (refused_everywhere), a CUDA context cannot be made there and an AUTO
 * one runs on the CPU (refused_device), and the lost context's destroy
 * returns, having released all it held. */
static int lose_at_wait(pleat_context *cpu, fault_calls *set, int kind, int warm, long long k,
                        cudaStream_t st)
{
    const fault *f = &fault_that_stays;
    fault_call *c = &set[kind].large;
    char name[96];
    snprintf(name, sizeof name, "%s at wait %lld, %s, %s", f->name, k, fault_names[kind],
             warm_names[warm]);
    const size_t live = pleat_emu_live();
    pleat_context *gpu = make(PLEAT_BACKEND_CUDA);
    warm_up(gpu, warm, &set[kind], PLEAT_OK, st, name);
    fault_reset(c);
    pleat_emu_wait_failures_stay(1);
    fault_arm(f, k);
    pleat_status s = fault_call_only(gpu, c, st);
    const int lost = !fault_pending(f);
    fault_arm(f, -1);
    pleat_emu_wait_failures_stay(0);
    if (lost) {
        expect(s == f->status && fault_particles_are(c, c->sc.particles) &&
                   fault_outputs_untouched(c),
               "the call", name);
        refused_everywhere(gpu, set, kind, st, name);
        refused_device(cpu, 0, f->error, name);
    } else {
        fault_fetch(c, st);
        expect(s == PLEAT_OK && fault_same(c, &set[kind].want), "the call without a fault",
               name);
    }
    destroy_to(gpu, live, "the lost context's destroy kept something", name);
    pleat_emu_lose_device(0, cudaSuccess); /* a new process's device */
    cudaGetLastError();
    return lost;
}

/* A fault that stays at each wait of each kind of call in turn
 * (lose_at_wait). */
static void lost_device(pleat_context *cpu)
{
    cudaStream_t st;
    if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess)
        die("cudaStreamCreate");
    fault_calls set[FAULT_KINDS];
    for (int kind = 0; kind < FAULT_KINDS; ++kind)
        set[kind] = fault_calls_make(cpu, kind, 1500);
    for (int kind = 0; kind < FAULT_KINDS; ++kind) {
        for (int warm = 0; warm < 2; ++warm) {
            long long k = 0;
            while (lose_at_wait(cpu, set, kind, warm, k, st))
                ++k;
            const long long n = fault_count(&fault_that_stays, kind, warm);
            char name[80];
            snprintf(name, sizeof name, "%s, %s, %s", fault_that_stays.name, fault_names[kind],
                     warm_names[warm]);
            expect(n < 0 ? k > 0 : k == n, "waits", name);
            printf("%-62s %lld waits lost the device in turn\n", name, k);
        }
    }
    for (int kind = 0; kind < FAULT_KINDS; ++kind)
        fault_calls_free(&set[kind]);
    cudaStreamDestroy(st);
}
#endif

/* An application heap (pleat_set_allocator) that refuses its block number
 * `left` (counted from 0; < 0: none) and counts the blocks not given back. */
typedef struct refusing_heap {
    atomic_llong left;
    atomic_long live;
} refusing_heap;

static void *refusing_alloc(size_t size, size_t alignment, void *context)
{
    refusing_heap *h = context;
    void *block = NULL;
    if (atomic_fetch_sub(&h->left, 1) == 0 || posix_memalign(&block, alignment, size) != 0)
        return NULL;
    atomic_fetch_add(&h->live, 1);
    return block;
}

static void refusing_free(void *block, void *context)
{
    atomic_fetch_sub(&((refusing_heap *)context)->live, 1);
    free(block);
}

/* Host memory running out while a CUDA context is made, at each of its
 * blocks in turn: OUT_OF_MEMORY, no context, every block given back; with
 * AUTO too, which falls back to the CPU when the GPU cannot be used, not
 * when memory runs out. Once no block is refused, both make a CUDA
 * context. While no other context exists: the heap can only be set then. */
static void host_memory_at_creation(void)
{
    const char *name = "host memory at creation";
    static refusing_heap h; /* pleat holds it until it is reset */
    atomic_store(&h.left, -1);
    if (pleat_set_allocator(refusing_alloc, refusing_free, &h) != PLEAT_OK)
        die("pleat_set_allocator");
    pleat_context_desc d = pleat_default_context_desc();
    long long k = 0;
    for (int refused = 1; refused && k < 100; ++k) {
        refused = 0;
        for (int b = 0; b < 2; ++b) {
            d.backend = b ? PLEAT_BACKEND_AUTO : PLEAT_BACKEND_CUDA;
            atomic_store(&h.left, k);
            pleat_context *ctx = NULL;
            pleat_status st = pleat_context_create(&d, &ctx);
            if (atomic_load(&h.left) >= 0) { /* the k-th block was never asked for */
                expect(st == PLEAT_OK && strncmp(pleat_context_describe(ctx), "cuda", 4) == 0,
                       "a CUDA context once no block is refused", name);
            } else {
                expect(st == PLEAT_ERROR_OUT_OF_MEMORY && !ctx, "out of memory", name);
                refused = 1;
            }
            pleat_context_destroy(ctx);
            expect(atomic_load(&h.live) == 0, "blocks not given back", name);
        }
    }
    expect(k > 1 && k < 100, "blocks refused in turn", name);
    if (pleat_set_allocator(NULL, NULL, NULL) != PLEAT_OK)
        die("pleat_set_allocator reset");
    expect(cudaPeekAtLastError() == cudaSuccess, "no error left in the runtime", name);
    printf("%-24s %lld blocks refused in turn\n", name, k - 1);
}

/* A CUDA context's three kinds of call on sc (device pointers on st, with
 * d and dp holding sc on ctx's device): the CPU's bits, the caller's
 * current device `caller` kept. */
static void calls_from(int caller, pleat_context *ctx, const scene *sc, const pleat_params *p,
                       float *d, const pleat_params *dp, cudaStream_t st, const float *want,
                       const uint32_t *want_pairs, size_t want_n, const char *name)
{
    size_t floats = (size_t)sc->count * 4, bytes = floats * sizeof(float), n = 0;
    float *h = copy_floats(sc->particles, floats);
    expect(pleat_self_collide(ctx, h, sc->count, p, NULL) == PLEAT_OK &&
               memcmp(h, want, bytes) == 0,
           "host-pointer call", name);
    uint32_t *pairs = pleat_pairs(ctx, sc->particles, sc->count, p, &n);
    expect(n == want_n && memcmp(pairs, want_pairs, 2 * n * sizeof *pairs) == 0, "pair list",
           name);
    upload(d, sc->particles, bytes);
    pleat_stats stats;
    expect(pleat_self_collide_device(ctx, d, sc->count, dp, st, &stats) == PLEAT_OK,
           "device call", name);
    expect_device(d, want, bytes, "device-pointer particles differ", name);
    expect(pleat_context_device_status(ctx) == PLEAT_OK, "device status", name);
    expect(current_is(caller), "pleat changed the caller's current device", name);
    free(pairs);
    free(h);
}

/* Device-side copies of sc made on `device`, and a stream of it. */
static float *on_device(int device, const scene *sc, pleat_params *dp, cudaStream_t *st)
{
    size_t bytes = (size_t)sc->count * 4 * sizeof(float);
    if (cudaSetDevice(device) != cudaSuccess ||
        cudaStreamCreateWithFlags(st, cudaStreamNonBlocking) != cudaSuccess)
        die("a stream of the device");
    float *d = to_device(sc->particles, bytes);
    dp->rest_positions = to_device(sc->rest, bytes);
    return d;
}

/* With two devices: a context on each, each called while the other is the
 * caller's current device, host pointers, a pair list and device pointers
 * on a stream of its device: the CPU's bits, and the caller's current
 * device back after every call, context creation and destruction
 * included. Skipped with one device (the emulator has two). */
static void two_devices(pleat_context *cpu)
{
    const char *name = "two devices";
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 2) {
        printf("%-24s %s\n", name, "skipped: one device");
        return;
    }
    scene sc = scene_make(SCENE_FOLDED, 20000, 1, 61);
    pleat_params p = pleat_default_params();
    p.distance = sc.distance;
    p.rest_positions = sc.rest;
    size_t floats = (size_t)sc.count * 4, n = 0;
    float *want = copy_floats(sc.particles, floats);
    expect(pleat_self_collide(cpu, want, sc.count, &p, NULL) == PLEAT_OK, "cpu call", name);
    uint32_t *pairs = pleat_pairs(cpu, sc.particles, sc.count, &p, &n);
    pleat_context *ctx[2] = {NULL, NULL};
    pleat_params dp[2] = {p, p};
    cudaStream_t st[2];
    float *d[2];
    for (int k = 0; k < 2; ++k)
        d[k] = on_device(k, &sc, &dp[k], &st[k]);
    for (int k = 0; k < 2; ++k) {
        pleat_context_desc desc = pleat_default_context_desc();
        desc.backend = PLEAT_BACKEND_CUDA;
        desc.cuda_device = k;
        cudaSetDevice(1 - k);
        expect(pleat_context_create(&desc, &ctx[k]) == PLEAT_OK && current_is(1 - k),
               "context creation", name);
    }
    for (int round = 0; round < 2 && ctx[0] && ctx[1]; ++round) {
        for (int k = 0; k < 2; ++k) {
            cudaSetDevice(1 - k);
            calls_from(1 - k, ctx[k], &sc, &p, d[k], &dp[k], st[k], want, pairs, n, name);
        }
    }
    for (int k = 0; k < 2; ++k) {
        cudaSetDevice(1 - k);
        pleat_context_destroy(ctx[k]);
        expect(current_is(1 - k), "context destruction", name);
        cudaSetDevice(k);
        cudaStreamDestroy(st[k]);
        cudaFree((void *)dp[k].rest_positions);
        cudaFree(d[k]);
    }
    cudaSetDevice(0);
    printf("%-24s %s\n", name, "done");
    free(pairs);
    free(want);
    scene_free(&sc);
}

/* Two CUDA contexts on two threads correct the even and the odd particles of
 * one host array at the same time: the result must be the CPU's, run one
 * subset after the other (a context that wrote back particles it did not
 * move would undo the other's corrections). */
static void shared_array(pleat_context *cpu)
{
    scene sc = scene_make(SCENE_CLOUD, 40000, 0, 91);
    pleat_params p = pleat_default_params();
    p.distance = sc.distance;
    pleat_context *a = make(PLEAT_BACKEND_CUDA), *b = make(PLEAT_BACKEND_CUDA);
    const char *why = subsets_check(cpu, a, b, sc.particles, sc.count, &p, 20);
    expect(why == NULL, why ? why : "", "shared array");
    printf("%-24s %s\n", "shared array", "done");
    pleat_context_destroy(a);
    pleat_context_destroy(b);
    scene_free(&sc);
}

/* Destroys the contexts; then, with `heap`, the checks that need none
 * alive (host_memory_at_creation()). */
static int finish(pleat_context *cpu, pleat_context *gpu, int heap)
{
    pleat_context_destroy(cpu);
    pleat_context_destroy(gpu);
    if (heap)
        host_memory_at_creation();
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}

/* --threads: only the checks where host threads meet (shared_array), for
 * ThreadSanitizer, under which the emulator takes an hour over the rest. */
int main(int argc, char **argv)
{
    pleat_context *gpu = make(PLEAT_BACKEND_CUDA), *cpu = make(PLEAT_BACKEND_CPU);
    printf("pleat-check-cuda: %s against %s\n", pleat_context_describe(gpu),
           pleat_context_describe(cpu));
    if (argc > 1 && strcmp(argv[1], "--threads") == 0) {
        shared_array(cpu);
        return finish(cpu, gpu, 0);
    }
    uint64_t rng = 4242;
    for (int kind = 0; kind < SCENE_KIND_COUNT; ++kind) {
        for (int variant = 0; variant < 4; ++variant) {
            /* sizes from a few hundred to 200k: several warps, blocks, chunks */
            uint32_t n = variant == 3 ? 200000 : 300 + (uint32_t)(pleat_scene_random(&rng) % 5000);
            /* rest positions from variant 1 on: the subset too has them */
            scene sc = scene_make((scene_kind)kind, n, variant != 0, pleat_scene_random(&rng));
            pleat_params p = pleat_default_params();
            p.distance = sc.distance;
            p.stiffness = variant == 2 ? 0.5f : 1.0f;
            p.rest_positions = sc.rest;
            uint32_t *subset = NULL;
            if (variant == 2) {
                subset = random_large_subset(sc.count, &rng, &p.num_indices);
                p.indices = subset;
            }
            char name[64];
            snprintf(name, sizeof name, "%s/%d n=%u", scene_name(kind), variant, sc.count);
            int before = failures;
            /* each skew per variant; the limits below 200k: many blocks
             * already, at a fraction of the emulator's time */
            compare(cpu, gpu, &sc, &p, (kind + variant) % 4, variant != 3, name);
            printf("%-24s %s\n", name, failures == before ? "same bits" : "DIFFERENT");
            free(subset);
            scene_free(&sc);
        }
    }
    subnormal_x(cpu, gpu, &rng);
    bad_inputs(gpu);
    pending_error(gpu);
    busy_context(gpu);
    fork_child(gpu);
    nothing_takes_part(gpu);
    async_and_graph(cpu, gpu);
    capture_needs_a_call_first(cpu);
    status_rules(cpu);
    legacy_while_capturing(gpu);
    capture_and_timings(cpu);
    same_stages_timed();
    free_while_queued(cpu);
    subset_only(cpu, gpu);
    shared_array(cpu);
    two_devices(cpu);
#ifdef PLEAT_CUDA_EMULATOR
    slow_work_stages();
    device_failures(cpu);
    setup_failures();
    no_kernel_image(cpu);
    lost_device(cpu);
#endif
    device_past_the_last(cpu);
    return finish(cpu, gpu, 1);
}
