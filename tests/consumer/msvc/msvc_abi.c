/*
 * One Windows program built three times by tests/windows.cmake against the
 * installed DLL: as C and as C++ in MSVC mode (clang
 * --target=x86_64-pc-windows-msvc, no C run-time library, linked by
 * lld-link through pleat.lib, the import library in Microsoft's format),
 * and as C by MinGW-w64 GCC (through libpleat.dll.a). All three must print
 * the same lines: the layout of every public struct, the defaults returned
 * by value, and what a collision, a pair listing and a bad input give on
 * one scene. So an MSVC program reads the DLL's structs and results as the
 * MinGW-built library writes them.
 *
 * Output goes through WriteFile and memory is static: the MSVC builds have
 * neither stdio nor a heap of the C run-time.
 */
#include <pleat.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define C_LINKAGE extern "C"
#else
#define C_LINKAGE
#endif

/* kernel32, declared here: the MSVC build has no Windows SDK headers */
C_LINKAGE __declspec(dllimport) void *__stdcall GetStdHandle(unsigned long which);
C_LINKAGE __declspec(dllimport) int __stdcall WriteFile(void *file, const void *data,
                                                        unsigned long bytes, unsigned long *written,
                                                        void *overlapped);
C_LINKAGE __declspec(dllimport) void __stdcall ExitProcess(unsigned code);
#define STD_OUTPUT_HANDLE ((unsigned long)-11)

#define SIDE 10u
#define COUNT (SIDE * SIDE * SIDE)

static char out[16384];
static size_t used;

static void put(const char *s)
{
    while (*s && used < sizeof out)
        out[used++] = *s++;
}

static void put_u64(uint64_t v)
{
    char digits[21];
    int n = 0;
    do
        digits[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n > 0 && used < sizeof out)
        out[used++] = digits[--n];
}

/* name=value and a space */
static void field(const char *name, uint64_t value)
{
    put(name);
    put("=");
    put_u64(value);
    put(" ");
}

typedef union float_word {
    float f;
    uint32_t u;
} float_word;

static uint32_t float_bits(float f)
{
    float_word w;
    w.f = f;
    return w.u;
}

/* FNV-1a over n bytes */
static uint64_t hash(const void *data, size_t n)
{
    const unsigned char *p = (const unsigned char *)data;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

#define SIZE(type) field("sizeof(" #type ")", sizeof(type))
#define AT(type, member) field(#member, offsetof(type, member))

static void layouts(void)
{
    SIZE(pleat_context_desc);
    AT(pleat_context_desc, backend);
    AT(pleat_context_desc, cpu_threads);
    AT(pleat_context_desc, cuda_device);
    AT(pleat_context_desc, profile);
    AT(pleat_context_desc, enqueue_tasks);
    AT(pleat_context_desc, finish_tasks);
    AT(pleat_context_desc, job_context);
    put("\n");
    SIZE(pleat_params);
    AT(pleat_params, distance);
    AT(pleat_params, stiffness);
    AT(pleat_params, indices);
    AT(pleat_params, num_indices);
    AT(pleat_params, rest_positions);
    AT(pleat_params, max_tests);
    put("\n");
    SIZE(pleat_stats);
    AT(pleat_stats, pairs);
    AT(pleat_stats, tests);
    SIZE(pleat_timings);
    AT(pleat_timings, bounds_keys_ms);
    AT(pleat_timings, sort_ms);
    AT(pleat_timings, sweep_ms);
    AT(pleat_timings, apply_ms);
    SIZE(pleat_status);
    SIZE(pleat_backend);
    put("\n");
}

static void defaults(void)
{
    const pleat_context_desc d = pleat_default_context_desc();
    field("backend", (uint64_t)d.backend);
    field("cpu_threads", (uint64_t)d.cpu_threads);
    field("cuda_device", (uint64_t)d.cuda_device);
    field("profile", (uint64_t)d.profile);
    field("job_system", d.enqueue_tasks || d.finish_tasks || d.job_context);
    const pleat_params p = pleat_default_params();
    field("distance", float_bits(p.distance));
    field("stiffness", float_bits(p.stiffness));
    field("indices", p.indices != NULL);
    field("num_indices", p.num_indices);
    field("rest", p.rest_positions != NULL);
    field("max_tests", p.max_tests);
    put("\n");
}

static float particles[4 * COUNT];
#define CAPACITY (16 * COUNT) /* pairs */
static uint32_t pairs[2 * CAPACITY];

/* A jittered lattice of spacing 1 (jitter below 1/4, exact floats) with
 * every 7th particle pinned. */
static void make_scene(void)
{
    uint32_t state = 12345;
    for (uint32_t i = 0; i < COUNT; ++i) {
        const uint32_t at[3] = {i % SIDE, i / SIDE % SIDE, i / (SIDE * SIDE)};
        for (int a = 0; a < 3; ++a) {
            state = state * 1664525u + 1013904223u;
            particles[4 * i + a] = (float)at[a] + (float)(state >> 9) * 0x1p-25f;
        }
        particles[4 * i + 3] = i % 7 == 0 ? 0.0f : 1.0f;
    }
}

/* status, stats and the result's hash of each call on the scene; nonzero
 * when a call did not do what pleat.h says */
static int calls(void)
{
    int failed = 0;
    pleat_context_desc desc = pleat_default_context_desc();
    desc.backend = PLEAT_BACKEND_CPU;
    desc.cpu_threads = 2;
    pleat_context *ctx = NULL;
    pleat_status s = pleat_context_create(&desc, &ctx);
    field("create", (uint64_t)s);
    if (s != PLEAT_OK)
        return 1;
    field("context_backend", (uint64_t)pleat_context_backend(ctx));
    put("\n");

    pleat_params p = pleat_default_params();
    p.distance = 1.0f;
    p.stiffness = 0.75f;
    size_t num = 0;
    s = pleat_find_pairs(ctx, particles, COUNT, &p, NULL, 0, &num);
    field("count_pairs", (uint64_t)s);
    field("num", num);
    failed |= s != PLEAT_OK || num == 0 || num > CAPACITY;
    s = pleat_find_pairs(ctx, particles, COUNT, &p, pairs, CAPACITY, &num);
    field("find_pairs", (uint64_t)s);
    num = num < CAPACITY ? num : CAPACITY;
    field("pairs_hash", hash(pairs, num * 2 * sizeof(uint32_t)));
    failed |= s != PLEAT_OK;
    put("\n");

    pleat_stats st = {0, 0};
    s = pleat_self_collide(ctx, particles, COUNT, &p, &st);
    field("self_collide", (uint64_t)s);
    field("pairs", st.pairs);
    field("tests", st.tests);
    failed |= s != PLEAT_OK || st.pairs != num;
    const uint64_t before = hash(particles, sizeof particles);
    field("result_hash", before);
    put("\n");

    const float saved = particles[4 * 5 + 1];
    float_word infinity;
    infinity.u = 0x7f800000u;
    particles[4 * 5 + 1] = infinity.f;
    s = pleat_self_collide(ctx, particles, COUNT, &p, &st);
    particles[4 * 5 + 1] = saved;
    field("infinite_input", (uint64_t)s);
    const int untouched = hash(particles, sizeof particles) == before;
    field("untouched", (uint64_t)untouched);
    failed |= s != PLEAT_ERROR_NONFINITE_INPUT || !untouched;
    put(pleat_status_string(s));
    put("\n");
    pleat_context_destroy(ctx);
    return failed;
}

static int run(void)
{
    put("pleat ");
    put(pleat_version());
    put("\n");
    layouts();
    defaults();
    make_scene();
    const int failed = calls();
    unsigned long written = 0;
    WriteFile(GetStdHandle(STD_OUTPUT_HANDLE), out, (unsigned long)used, &written, NULL);
    return failed || written != used;
}

#ifdef PLEAT_NO_CRT
/* What the C run-time would give: the MSVC ABI's mark that floating point
 * is used, and the memset and memcpy the compiler may call. */
C_LINKAGE int _fltused = 0;
C_LINKAGE void *memset(void *d, int c, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        ((unsigned char *)d)[i] = (unsigned char)c;
    return d;
}
C_LINKAGE void *memcpy(void *d, const void *s, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        ((unsigned char *)d)[i] = ((const unsigned char *)s)[i];
    return d;
}
C_LINKAGE void start(void); /* the entry point (lld-link /entry:start) */
C_LINKAGE void start(void)
{
    ExitProcess((unsigned)run());
}
#else
int main(void)
{
    return run();
}
#endif
