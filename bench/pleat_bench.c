/* pleat-bench: throughput of pleat_self_collide per scene, size, backend, CPU
 * instruction set and thread count, next to a plain 27-cell grid baseline.
 * `pleat-bench --help` says what it measures and how. */
#include "baseline.h"
#include "cli.h"
#include "report.h"
#include "portable.h"
#include "scenes.h"

#include <pleat.h>

#ifdef PLEAT_BENCH_CUDA
#include <cuda_runtime_api.h>
#define PLEAT_BENCH_PATHS 3 /* host pointers, device pointers, a graph */
#else
#define PLEAT_BENCH_PATHS 1
#endif

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_LIST 32
#define MIN_SIZE 16u
#define MAX_SIZE (1u << 27)

/* ---------------------------------------------------------------- scenes */

typedef enum scene_kind { SCENE_CLOUD, SCENE_FOLDED, SCENE_CRUMPLED, NUM_SCENES } scene_kind;

static const char *const scene_names[NUM_SCENES] = {"cloud", "folded", "crumpled"};

typedef struct scene {
    const char *name;
    uint32_t n;
    float distance;
    float *start; /* n x 4 floats */
    float *rest;  /* n x 4 floats or NULL */
    uint64_t max_tests; /* params.max_tests of every call on it */
} scene;

/* Bytes of one of sc's arrays (start, rest): n x 4 floats. */
static size_t scene_bytes(const scene *sc)
{
    return (size_t)sc->n * 4 * sizeof(float);
}

static uint32_t sheet_res(uint32_t n)
{
    uint32_t res = (uint32_t)lround(sqrt((double)n));
    return res < 4 ? 4 : res;
}

/* 0, or -1 when out of memory. */
static int scene_make(scene_kind kind, uint32_t size, uint64_t seed, scene *sc)
{
    memset(sc, 0, sizeof *sc);
    sc->name = scene_names[kind];
    sc->n = kind == SCENE_CLOUD ? size : sheet_res(size) * sheet_res(size);
    size_t bytes = scene_bytes(sc);
    sc->start = malloc(bytes);
    if (kind != SCENE_CLOUD)
        sc->rest = malloc(bytes);
    if (!sc->start || (kind != SCENE_CLOUD && !sc->rest))
        return -1;
    switch (kind) {
    case SCENE_CLOUD: /* ~8 neighbours within the distance */
        sc->distance = 1.0f;
        pleat_scene_uniform_cloud(sc->n, sc->distance, 8.0f, seed, sc->start);
        break;
    case SCENE_FOLDED: /* 4 layers 0.6 spacing apart, d = 0.9 spacing */
        sc->distance = 0.9f;
        pleat_scene_folded_sheet(sheet_res(size), 4, 1.0f, 0.6f, sc->start, sc->rest);
        break;
    case SCENE_CRUMPLED: /* d = 0.8 of the edge length */
        sc->distance = 0.8f;
        pleat_scene_crumpled_sheet(sheet_res(size), 1.0f, seed, sc->start, sc->rest);
        break;
    default:
        break;
    }
    return 0;
}

static void scene_free(scene *sc)
{
    free(sc->start);
    free(sc->rest);
    sc->start = sc->rest = NULL;
}

/* --------------------------------------------------------------- options */

typedef struct options {
    scene_kind scenes[MAX_LIST];
    int num_scenes;
    uint32_t sizes[MAX_LIST];
    int num_sizes;
    int threads[MAX_LIST];
    int num_threads;
    char isas[MAX_LIST][16];
    int num_isas;
    pleat_backend backends[MAX_LIST];
    int num_backends;
    int repeats; /* 0: by size */
    int rounds;  /* every row of a scene and size is timed this often, interleaved */
    int json, quick, baseline, profile;
    uint64_t seed;
    uint32_t tests_per_particle; /* --max-tests: params.max_tests per particle */
} options;

static void usage(FILE *out)
{
    fprintf(out,
"usage: pleat-bench [options]\n"
"Times pleat_self_collide per scene, size, backend, CPU ISA and thread count,\n"
"and a plain 27-cell uniform grid (one thread) on the same scene, and prints a\n"
"table (or, with --json, one JSON document on stdout).\n"
"\n"
"  --scenes LIST    cloud,folded,crumpled (default: all)\n"
"                     cloud     uniform cube, ~8 neighbours within d = 1\n"
"                     folded    sqrt(n) x sqrt(n) sheet in 4 accordion layers 0.6\n"
"                               apart, d = 0.9 spacing, rest positions\n"
"                     crumpled  sqrt(n) x sqrt(n) sheet folded 3 times along random\n"
"                               lines, squeezed and bent, d = 0.8 spacing, rest\n"
"                               positions\n"
"  --sizes LIST     particle counts, k = 1024, m = 1024^2, e.g. 1k,64k,1m,4m\n"
"                   (default 1k,16k,64k,256k,1m,4m); sheets use the nearest\n"
"                   square, the table shows the count used\n"
"  --threads LIST   CPU worker threads, 0 = the library default (one per core\n"
"                   this process may run on, within its CPU quota: a cgroup's,\n"
"                   or a Windows job's rate)\n"
"                   (default 1,2)\n"
"  --isa LIST       CPU kernels: scalar,sse2,avx2,avx512,neon or auto (the library's\n"
"                   own choice), set through PLEAT_CPU_ISA before each context is\n"
"                   created; one this build or CPU lacks is reported as skipped.\n"
"                   Default: every one of scalar,sse2,avx2,avx512,neon that a context\n"
"                   accepts, or just $PLEAT_CPU_ISA when that is set\n"
"  --backend LIST   cpu,cuda,auto (default cpu,cuda); unavailable = skipped\n"
"  --repeats N      timed calls per row, median reported (default by size:\n"
"                   31 up to 16k, 21 to 64k, 11 to 256k, 7 to 1m, 3 above;\n"
"                   --quick caps it at 9); each row also makes one untimed\n"
"                   warm-up call\n"
"  --rounds N       time every row of a scene and size N times, the rows taking\n"
"                   turns (each round in the reverse order of the one before),\n"
"                   and report each row's round with the lowest median\n"
"                   (default 1); on a machine whose speed drifts (a shared VM)\n"
"                   this compares rows measured in the same phases\n"
"  --seed N         scene seed (default 1)\n"
"  --max-tests K    set params.max_tests to K x the scene's particles (default 0:\n"
"                   no limit), to time the limit's own cost; a call over it\n"
"                   fails the run\n"
"  --no-baseline    do not time the plain grid\n"
"  --no-profile     create contexts without profiling (no stage columns)\n"
"  --quick          a short run: sizes 1k,16k,64k,256k unless --sizes is given,\n"
"                   fewer repeats\n"
"  --json           one JSON document on stdout instead of the table\n"
"  --help           this text\n"
"\n"
"What is timed: before each call the scene's start positions are copied into\n"
"the working array (not timed); a monotonic clock is read just before and after\n"
"pleat_self_collide; ms/call is the median (with --rounds, the lowest of the\n"
"rounds' medians), ns/particle = ms/call / n.\n"
"Contexts are created with desc.profile = 1 and the stage columns\n"
"(bounds+keys, sort, sweep, apply, in ms) are the medians of\n"
"pleat_context_timings() after each call. Profiling reads the clock about 5\n"
"times per call (on CUDA it syncs the device per stage); that cost is inside\n"
"ms/call. --no-profile measures without it. baseline is the plain grid's\n"
"median (ms per call) over as many calls; speedup = baseline / ms/call. The\n"
"baseline must find exactly pleat's pairs (the count, and a digest of the\n"
"pairs listed by an untimed run of each): a row where it does not says\n"
"MISMATCH, a warning goes to stderr and the exit status is 3. With --json,\n"
"stdout holds only the JSON document; warnings go to stderr.\n"
"CUDA rows: cuda takes host pointers; cuda:dev calls pleat_self_collide_device\n"
"on device copies, timed up to a cudaDeviceSynchronize after it; cuda:graph\n"
"replays that call captured once into a CUDA graph, timed from the launch to\n"
"the stream's end (no stage columns: a captured call is not profiled, nor does\n"
"it pay profiling's syncs, so compare cuda:dev with it under --no-profile). The\n"
"device rows copy the start positions in before each call, untimed, and take\n"
"their stats from an untimed repeat, which must give the timed call's bits.\n"
"Exit status: 0 ok, 1 error (a failed call, stats that change from one call\n"
"to the next, or nothing could run), 2 bad usage, 3 pair mismatch.\n");
}

static int fail_usage(const char *what, const char *value)
{
    fprintf(stderr, "pleat-bench: bad %s: '%s' (see --help)\n", what, value);
    return 2;
}

/* Splits a comma-separated list in place; returns the count or -1 if too many. */
static int split(char *list, char *items[MAX_LIST])
{
    int count = 0;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        if (count == MAX_LIST)
            return -1;
        items[count++] = tok;
    }
    return count;
}

static int parse_size(const char *text, uint32_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno)
        return -1;
    if (*end == 'k' || *end == 'K')
        v *= 1024.0, ++end;
    else if (*end == 'm' || *end == 'M')
        v *= 1024.0 * 1024.0, ++end;
    if (*end || !(v >= MIN_SIZE && v <= MAX_SIZE))
        return -1;
    *out = (uint32_t)llround(v);
    return 0;
}

/* The list options' text, read once every option is in (--quick changes the
   default sizes). */
typedef struct option_lists {
    char *scenes, *sizes, *threads, *isas, *backends;
} option_lists;

/* Applies an option without a value: 0, 2 (bad usage), -1 (help shown), or 1
   when arg is no such option. */
static int set_flag(const char *arg, const char *value, options *o)
{
    const struct {
        const char *name;
        int *field; /* NULL: --help */
        int value;
    } flags[] = {{"--json", &o->json, 1},
                 {"--quick", &o->quick, 1},
                 {"--no-baseline", &o->baseline, 0},
                 {"--no-profile", &o->profile, 0},
                 {"--help", NULL, 0}};
    for (size_t f = 0; f < sizeof flags / sizeof *flags; ++f) {
        if (strcmp(arg, flags[f].name))
            continue;
        if (value)
            return fail_usage("option", arg);
        if (!flags[f].field) {
            usage(stdout);
            return -1;
        }
        *flags[f].field = flags[f].value;
        return 0;
    }
    return 1;
}

static int parse_seed(const char *value, uint64_t *seed)
{
    char *end;
    errno = 0;
    unsigned long long s = strtoull(value, &end, 0);
    if (end == value || *end || errno || strchr(value, '-')) /* strtoull negates */
        return fail_usage("--seed", value);
    *seed = s;
    return 0;
}

/* Applies an option that takes a value (arg is known to be one): 0 or 2. */
static int set_valued(const char *arg, char *value, options *o, option_lists *lists)
{
    long v;
    if (!strcmp(arg, "--scenes"))
        lists->scenes = value;
    else if (!strcmp(arg, "--sizes"))
        lists->sizes = value;
    else if (!strcmp(arg, "--threads"))
        lists->threads = value;
    else if (!strcmp(arg, "--isa"))
        lists->isas = value;
    else if (!strcmp(arg, "--backend"))
        lists->backends = value;
    else if (!strcmp(arg, "--repeats")) {
        if (cli_parse_long(value, 1, 100000, &v))
            return fail_usage("--repeats", value);
        o->repeats = (int)v;
    } else if (!strcmp(arg, "--rounds")) {
        if (cli_parse_long(value, 1, 1000, &v))
            return fail_usage("--rounds", value);
        o->rounds = (int)v;
    } else if (!strcmp(arg, "--seed")) {
        return parse_seed(value, &o->seed);
    } else {
        if (cli_parse_long(value, 0, 1 << 24, &v))
            return fail_usage("--max-tests", value);
        o->tests_per_particle = (uint32_t)v;
    }
    return 0;
}

/* Reads argv into o and lists: 0, 2 (bad usage) or -1 (help shown). */
static int read_args(int argc, char **argv, options *o, option_lists *lists)
{
    static const char *const with_value[] = {"--scenes", "--sizes",  "--threads",
                                             "--isa",    "--backend", "--repeats",
                                             "--rounds", "--seed",    "--max-tests"};
    for (int i = 1; i < argc; ++i) {
        char *arg = argv[i], *value = NULL, *eq = NULL;
        if (strncmp(arg, "--", 2) == 0 && (eq = strchr(arg, '=')) != NULL) {
            *eq = '\0';
            value = eq + 1;
        }
        int rc = set_flag(arg, value, o);
        if (rc != 1) {
            if (rc)
                return rc;
            continue;
        }
        int count = (int)(sizeof with_value / sizeof *with_value);
        if (cli_name_index(arg, with_value, count) == count)
            return fail_usage("option", arg);
        if (!value) {
            if (i + 1 >= argc)
                return fail_usage("option (missing value)", arg);
            value = argv[++i];
        }
        if ((rc = set_valued(arg, value, o, lists)))
            return rc;
    }
    return 0;
}

/* Splits text, or fallback when there is none, into items: the count, or 0
   after a usage error naming the option what. */
static int split_list(char *text, char *fallback, const char *what, char *items[MAX_LIST])
{
    int count = split(text ? text : fallback, items);
    if (count <= 0)
        fail_usage(what, text ? text : "");
    return count > 0 ? count : 0;
}

static int parse_scenes(char *text, options *o)
{
    char *items[MAX_LIST], all_scenes[] = "cloud,folded,crumpled";
    int count = split_list(text, all_scenes, "--scenes", items);
    if (!count)
        return 2;
    for (int i = 0; i < count; ++i) {
        int k = cli_name_index(items[i], scene_names, NUM_SCENES);
        if (k == NUM_SCENES)
            return fail_usage("scene", items[i]);
        o->scenes[o->num_scenes++] = (scene_kind)k;
    }
    return 0;
}

static int parse_sizes(char *text, options *o)
{
    char *items[MAX_LIST], default_sizes[] = "1k,16k,64k,256k,1m,4m",
                           quick_sizes[] = "1k,16k,64k,256k";
    int count = split_list(text, o->quick ? quick_sizes : default_sizes, "--sizes", items);
    if (!count)
        return 2;
    for (int i = 0; i < count; ++i)
        if (parse_size(items[i], &o->sizes[o->num_sizes++]))
            return fail_usage("size (16 .. 128m)", items[i]);
    return 0;
}

static int parse_threads(char *text, options *o)
{
    char *items[MAX_LIST], default_threads[] = "1,2";
    int count = split_list(text, default_threads, "--threads", items);
    if (!count)
        return 2;
    for (int i = 0; i < count; ++i) {
        long v;
        if (cli_parse_long(items[i], 0, PLEAT_MAX_CPU_THREADS, &v))
            return fail_usage("thread count", items[i]);
        o->threads[o->num_threads++] = (int)v;
    }
    return 0;
}

/* --isa, else PLEAT_CPU_ISA, else every ISA. */
static int parse_isas(char *text, options *o)
{
    static const char *const isa_names[] = {"scalar", "sse2", "avx2", "avx512", "neon", "auto"};
    const int num_isa_names = (int)(sizeof isa_names / sizeof *isa_names);
    char *items[MAX_LIST], default_isas[] = "scalar,sse2,avx2,avx512,neon", env_isa[16];
    const char *env = getenv("PLEAT_CPU_ISA"), *what = "isa";
    if (!text && env && *env) {
        snprintf(env_isa, sizeof env_isa, "%s", env);
        text = env_isa;
        what = "isa in PLEAT_CPU_ISA";
    } else if (!text) {
        text = default_isas;
    }
    int count = split_list(text, text, "--isa", items);
    if (!count)
        return 2;
    for (int i = 0; i < count; ++i) {
        if (cli_name_index(items[i], isa_names, num_isa_names) == num_isa_names)
            return fail_usage(what, items[i]);
        for (int j = 0; j < o->num_isas; ++j)
            if (!strcmp(o->isas[j], items[i]))
                return fail_usage("isa (named twice)", items[i]);
        strcpy(o->isas[o->num_isas++], items[i]);
    }
    return 0;
}

static int parse_backends(char *text, options *o)
{
    static const char *const backend_names[] = {"cpu", "cuda", "auto"};
    static const pleat_backend backend_ids[] = {PLEAT_BACKEND_CPU, PLEAT_BACKEND_CUDA,
                                                PLEAT_BACKEND_AUTO};
    const int num_backend_names = (int)(sizeof backend_names / sizeof *backend_names);
    char *items[MAX_LIST], default_backends[] = "cpu,cuda";
    int count = split_list(text, default_backends, "--backend", items);
    if (!count)
        return 2;
    for (int i = 0; i < count; ++i) {
        int k = cli_name_index(items[i], backend_names, num_backend_names);
        if (k == num_backend_names)
            return fail_usage("backend", items[i]);
        pleat_backend b = backend_ids[k];
        for (int j = 0; j < o->num_backends; ++j)
            if (o->backends[j] == b)
                return fail_usage("backend (named twice)", items[i]);
        o->backends[o->num_backends++] = b;
    }
    return 0;
}

/* Returns 0 to go on, or the exit status (2 bad usage, -1 help shown). */
static int parse_options(int argc, char **argv, options *o)
{
    option_lists lists = {0};
    memset(o, 0, sizeof *o);
    o->baseline = o->profile = o->rounds = 1;
    o->seed = 1;
    int rc = read_args(argc, argv, o, &lists);
    if (!rc)
        rc = parse_scenes(lists.scenes, o);
    if (!rc)
        rc = parse_sizes(lists.sizes, o);
    if (!rc)
        rc = parse_threads(lists.threads, o);
    if (!rc)
        rc = parse_isas(lists.isas, o);
    if (!rc)
        rc = parse_backends(lists.backends, o);
    return rc;
}

/* -------------------------------------------------------------- machine */

static int online_cores(void)
{
    int n = portable_online_cores();
    return n > PLEAT_MAX_CPU_THREADS ? PLEAT_MAX_CPU_THREADS : n;
}

/* The thread count a CPU context chose, from its description
 * ("cpu avx2, 2 threads"): with --threads 0 the library picks it (from the
 * CPU affinity and the CPU quota, which may be fewer than the online
 * cores). */
static int described_threads(const char *describe)
{
    const char *comma = strrchr(describe, ',');
    int n = 0;
    return comma && sscanf(comma + 1, "%d", &n) == 1 ? n : 0;
}

static const char *arch_name(void)
{
#if defined(__x86_64__) || defined(_M_X64)
    return "x86_64";
#elif defined(__aarch64__) || defined(_M_ARM64)
    return "aarch64";
#elif defined(__i386__)
    return "i386";
#elif defined(__arm__)
    return "arm";
#else
    return "unknown arch";
#endif
}

static void cpu_model(char *out, size_t size)
{
    snprintf(out, size, "unknown cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) && strncmp(line, "Model", 5))
            continue;
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *s = colon + 1;
        while (*s == ' ' || *s == '\t')
            ++s;
        s[strcspn(s, "\n")] = '\0';
        if (*s) {
            snprintf(out, size, "%s", s);
            break;
        }
    }
    fclose(f);
}

static void compiler_name(char *out, size_t size)
{
#if defined(__clang__)
    snprintf(out, size, "bench built with clang %d.%d.%d", __clang_major__, __clang_minor__,
             __clang_patchlevel__);
#elif defined(__GNUC__)
    snprintf(out, size, "bench built with gcc %d.%d.%d", __GNUC__, __GNUC_MINOR__,
             __GNUC_PATCHLEVEL__);
#else
    snprintf(out, size, "bench built with an unknown compiler");
#endif
}

/* -------------------------------------------------------------- variants */

/* How a CUDA row calls pleat: pleat_self_collide; pleat_self_collide_device
 * on device copies; that call captured in a CUDA graph, which is launched. */
enum { HOST_PTRS, DEVICE_PTRS, GRAPH };

/* One way to run pleat: a backend and, on the CPU, a kernel ISA. */
typedef struct variant {
    pleat_backend backend;
    int on_cpu;
    int path;          /* HOST_PTRS, or on CUDA DEVICE_PTRS or GRAPH */
    char label[24];    /* backend column */
    char isa_env[16];  /* PLEAT_CPU_ISA value; "" = unset (library's choice) */
    char isa[16];      /* isa column */
} variant;

static void set_isa_env(const char *isa)
{
    portable_setenv("PLEAT_CPU_ISA", isa && *isa ? isa : NULL);
}

/* The word after "cpu " in "cpu avx2, 2 threads", else "?". */
static void isa_from_describe(const char *describe, char *out, size_t size)
{
    const char *s = strstr(describe, "cpu ");
    snprintf(out, size, "?");
    if (!s)
        return;
    s += 4;
    size_t len = strcspn(s, " ,");
    if (len > 0 && len < size)
        snprintf(out, size, "%.*s", (int)len, s);
}

static pleat_status try_context(pleat_backend backend, const char *isa_env, pleat_context **out)
{
    pleat_context_desc desc = pleat_default_context_desc();
    desc.backend = backend;
    desc.cpu_threads = 1;
    set_isa_env(isa_env);
    return pleat_context_create(&desc, out);
}

static const char *backend_name(pleat_backend b)
{
    return b == PLEAT_BACKEND_CPU ? "cpu" : b == PLEAT_BACKEND_CUDA ? "cuda" : "auto";
}

static void add_skip(bench_skip *skips, int *num, const char *backend, const char *isa,
                     pleat_status s)
{
    if (*num >= 4 * MAX_LIST)
        return;
    bench_skip *k = &skips[(*num)++];
    snprintf(k->backend, sizeof k->backend, "%s", backend);
    snprintf(k->isa, sizeof k->isa, "%s", isa ? isa : "");
    snprintf(k->reason, sizeof k->reason, "%s", pleat_status_string(s));
}

/* Finds what can run. Returns the number of variants, or -1 on a hard error. */
static int probe(const options *o, variant *vars, bench_skip *skips, int *num_skips)
{
    int count = 0;
    *num_skips = 0;
    for (int b = 0; b < o->num_backends; ++b) {
        pleat_backend backend = o->backends[b];
        pleat_context *ctx;
        pleat_backend resolved = backend;
        if (backend != PLEAT_BACKEND_CPU) {
            pleat_status s = try_context(backend, NULL, &ctx);
            if (s == PLEAT_ERROR_BACKEND_UNAVAILABLE) {
                add_skip(skips, num_skips, backend_name(backend), NULL, s);
                continue;
            }
            if (s != PLEAT_OK) {
                fprintf(stderr, "pleat-bench: creating a %s context: %s\n",
                        backend_name(backend), pleat_status_string(s));
                return -1;
            }
            resolved = pleat_context_backend(ctx);
            pleat_context_destroy(ctx);
        }
        char label[16];
        if (backend == PLEAT_BACKEND_AUTO)
            snprintf(label, sizeof label, "auto:%s", backend_name(resolved));
        else
            snprintf(label, sizeof label, "%s", backend_name(backend));
        if (resolved == PLEAT_BACKEND_CUDA) {
            /* host pointers, then (built with CUDA) device pointers, a graph */
            static const char *const suffix[] = {"", ":dev", ":graph"};
            for (int path = HOST_PTRS; path < PLEAT_BENCH_PATHS; ++path) {
                variant *v = &vars[count++];
                memset(v, 0, sizeof *v);
                v->backend = backend;
                v->path = path;
                snprintf(v->label, sizeof v->label, "%s%s", label, suffix[path]);
                snprintf(v->isa, sizeof v->isa, "-");
            }
            continue;
        }
        for (int i = 0; i < o->num_isas; ++i) {
            const char *want = strcmp(o->isas[i], "auto") ? o->isas[i] : "";
            pleat_status s = try_context(backend, want, &ctx);
            if (s == PLEAT_ERROR_BACKEND_UNAVAILABLE) {
                add_skip(skips, num_skips, label, o->isas[i], s);
                continue;
            }
            if (s != PLEAT_OK) {
                fprintf(stderr, "pleat-bench: creating a %s context with PLEAT_CPU_ISA=%s: %s\n",
                        label, want, pleat_status_string(s));
                return -1;
            }
            variant *v = &vars[count++];
            memset(v, 0, sizeof *v);
            v->backend = backend;
            v->on_cpu = 1;
            snprintf(v->label, sizeof v->label, "%s", label);
            snprintf(v->isa_env, sizeof v->isa_env, "%s", want);
            if (*want)
                snprintf(v->isa, sizeof v->isa, "%s", want);
            else
                isa_from_describe(pleat_context_describe(ctx), v->isa, sizeof v->isa);
            pleat_context_destroy(ctx);
        }
    }
    return count;
}

/* ------------------------------------------------------------ measuring */

static int default_repeats(uint32_t n, int quick)
{
    int r = n <= 16384 ? 31 : n <= 65536 ? 21 : n <= 262144 ? 11 : n <= 1048576 ? 7 : 3;
    return quick && r > 9 ? 9 : r;
}

/* Copies the baseline's results from src to dst. */
static void keep_baseline(bench_row *dst, const bench_row *src)
{
    dst->has_baseline = src->has_baseline;
    dst->baseline_ms = src->baseline_ms;
    dst->baseline_pairs = src->baseline_pairs;
    dst->baseline_tests = src->baseline_tests;
    dst->baseline_digest = src->baseline_digest;
    dst->baseline_hashed = src->baseline_hashed;
}

/* Times the baseline on sc; with `list`, also digests its pairs (untimed)
 * for the check against pleat's. Returns 0 or -1 (out of memory). */
static int run_baseline(bench_baseline *b, const scene *sc, float *work, int repeats,
                        double *times, int list, bench_row *row)
{
    size_t bytes = scene_bytes(sc);
    bench_baseline_stats st;
    for (int r = -1; r < repeats; ++r) { /* r = -1: warm-up */
        memcpy(work, sc->start, bytes);
        double t0 = portable_now_ms();
        if (bench_baseline_run(b, work, sc->n, sc->rest, sc->distance, 1.0f, &st, NULL))
            return -1;
        double t1 = portable_now_ms();
        if (r >= 0)
            times[r] = t1 - t0;
    }
    memcpy(work, sc->start, bytes);
    if (list && bench_baseline_run(b, work, sc->n, sc->rest, sc->distance, 1.0f, &st,
                                   &row->baseline_digest))
        return -1;
    row->has_baseline = 1;
    row->baseline_ms = pleat_scene_median(times, (size_t)repeats);
    row->baseline_pairs = st.pairs;
    row->baseline_tests = st.tests;
    row->baseline_hashed = st.hashed;
    return 0;
}

/* The device-pointer paths (pleat-bench built with CUDA): the start
 * positions are copied to the GPU before each call, untimed; the time is
 * the call (or the graph's launch) plus a wait, so it covers the work on the
 * GPU. Stats come from a separate untimed call, since asking for them is a
 * sync, whose result must be the timed one's, bit for bit: a graph that
 * did not run, or ran something else, fails the row. A graph row captures
 * one call on a stream of its own, after a plain call of the same size has
 * sized the context's scratch (a captured call must not allocate). */
typedef struct device_copies {
    float *particles, *rest;
    void *stream, *exec;    /* GRAPH: cudaStream_t, cudaGraphExec_t */
    float *timed, *plain;   /* host: the results of the timed and the stats call */
} device_copies;

/* What one row calls: variant v's path on a context, on sc's start
 * positions, copied into `work` (host pointers) or onto the device (dev). */
typedef struct row_call {
    const variant *v;
    pleat_context *ctx;
    const scene *sc;
    pleat_params params;
    float *work;
    device_copies dev;
} row_call;

/* One timed call: its wall time and the profile's stages. */
typedef struct call_time {
    double ms;
    pleat_timings tm;
} call_time;

#ifdef PLEAT_BENCH_CUDA
/* The start positions into d, landed before anything that follows: a
 * graph's stream does not wait for the legacy stream's copies. */
static int copy_start(device_copies *d, const scene *sc)
{
    size_t bytes = scene_bytes(sc);
    return cudaMemcpy(d->particles, sc->start, bytes, cudaMemcpyHostToDevice) == cudaSuccess &&
           cudaDeviceSynchronize() == cudaSuccess;
}

/* The graph of one pleat_self_collide_device call on c's device arrays. */
static pleat_status capture(row_call *c)
{
    device_copies *d = &c->dev;
    pleat_context *ctx = c->ctx;
    const pleat_params *params = &c->params;
    const uint32_t n = c->sc->n;
    cudaStream_t stream;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
        return PLEAT_ERROR_DEVICE;
    d->stream = stream;
    pleat_status s = pleat_self_collide_device(ctx, d->particles, n, params, stream, NULL);
    if (s == PLEAT_OK && cudaStreamSynchronize(stream) != cudaSuccess)
        s = PLEAT_ERROR_DEVICE;
    if (s == PLEAT_OK && cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) ==
                             cudaSuccess) {
        s = pleat_self_collide_device(ctx, d->particles, n, params, stream, NULL);
        if (cudaStreamEndCapture(stream, &graph) != cudaSuccess && s == PLEAT_OK)
            s = PLEAT_ERROR_DEVICE;
    } else if (s == PLEAT_OK) {
        s = PLEAT_ERROR_DEVICE;
    }
    if (s == PLEAT_OK && cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess)
        s = PLEAT_ERROR_DEVICE;
    if (graph)
        cudaGraphDestroy(graph);
    d->exec = exec;
    return s;
}

static int device_setup(row_call *c)
{
    device_copies *d = &c->dev;
    const scene *sc = c->sc;
    size_t bytes = scene_bytes(sc);
    d->timed = malloc(bytes);
    d->plain = malloc(bytes);
    if (!d->timed || !d->plain || cudaMalloc((void **)&d->particles, bytes) != cudaSuccess ||
        (sc->rest && cudaMalloc((void **)&d->rest, bytes) != cudaSuccess) ||
        (sc->rest && cudaMemcpy(d->rest, sc->rest, bytes, cudaMemcpyHostToDevice) != cudaSuccess) ||
        !copy_start(d, sc)) {
        fprintf(stderr, "pleat-bench: no host or device memory for n=%u\n", (unsigned)sc->n);
        cudaGetLastError(); /* read: pleat refuses to run while an error is pending */
        return -1;
    }
    c->params.rest_positions = d->rest;
    pleat_status s = c->v->path == GRAPH ? capture(c) : PLEAT_OK;
    if (s != PLEAT_OK) {
        fprintf(stderr, "pleat-bench: capturing a call on n=%u in a CUDA graph: %s\n",
                (unsigned)sc->n, pleat_status_string(s));
        cudaGetLastError();
        return -1;
    }
    return 0;
}

static pleat_status device_call(row_call *c, pleat_stats *stats, call_time *t)
{
    device_copies *d = &c->dev;
    pleat_context *ctx = c->ctx;
    const scene *sc = c->sc;
    const pleat_params *params = &c->params;
    cudaStream_t stream = (cudaStream_t)d->stream; /* NULL (legacy) but for a graph */
    if (!copy_start(d, sc))
        return PLEAT_ERROR_DEVICE;
    pleat_status s = PLEAT_OK;
    const double t0 = portable_now_ms();
    if (d->exec) {
        if (cudaGraphLaunch((cudaGraphExec_t)d->exec, stream) != cudaSuccess ||
            cudaStreamSynchronize(stream) != cudaSuccess)
            s = PLEAT_ERROR_DEVICE;
    } else {
        s = pleat_self_collide_device(ctx, d->particles, sc->n, params, NULL, NULL);
        if (s == PLEAT_OK && cudaDeviceSynchronize() != cudaSuccess)
            s = PLEAT_ERROR_DEVICE;
    }
    t->ms = portable_now_ms() - t0;
    if (s != PLEAT_OK)
        return s;
    if (!d->exec) /* a graph's call is not profiled: the stage columns stay empty */
        pleat_context_timings(ctx, &t->tm); /* the timed call's stages, before the next call */
    /* untimed: the stats of the same call (asking for them is a sync), on the
     * stream the graph runs on: a captured call does not order later calls */
    size_t bytes = scene_bytes(sc);
    if (cudaMemcpy(d->timed, d->particles, bytes, cudaMemcpyDeviceToHost) != cudaSuccess ||
        !copy_start(d, sc))
        return PLEAT_ERROR_DEVICE;
    s = pleat_self_collide_device(ctx, d->particles, sc->n, params, stream, stats);
    if (s != PLEAT_OK)
        return s;
    if (cudaMemcpy(d->plain, d->particles, bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
        return PLEAT_ERROR_DEVICE;
    if (memcmp(d->timed, d->plain, bytes) != 0) {
        fprintf(stderr, "pleat-bench: %s n=%u: the timed %s gave other bits than a plain call\n",
                sc->name, (unsigned)sc->n, d->exec ? "graph" : "call");
        return PLEAT_ERROR_DEVICE;
    }
    return PLEAT_OK;
}

static void device_free(device_copies *d)
{
    if (d->exec)
        cudaGraphExecDestroy((cudaGraphExec_t)d->exec);
    if (d->stream)
        cudaStreamDestroy((cudaStream_t)d->stream);
    cudaFree(d->particles);
    cudaFree(d->rest);
    free(d->timed);
    free(d->plain);
}
#else
static int device_setup(row_call *c)
{
    (void)c;
    return -1;
}

static pleat_status device_call(row_call *c, pleat_stats *stats, call_time *t)
{
    (void)c, (void)stats, (void)t;
    return PLEAT_ERROR_BACKEND_UNAVAILABLE;
}

static void device_free(device_copies *d)
{
    (void)d;
}
#endif

/* pleat_find_pairs' list on the start positions (host pointers on every
 * backend), untimed: its count and bench_pair_term() sum into the row. */
static pleat_status pair_digest(pleat_context *ctx, const scene *sc, const pleat_params *params,
                                bench_row *row)
{
    pleat_params host = *params;
    host.rest_positions = sc->rest; /* a device row's params hold device pointers */
    size_t found;
    pleat_status s = pleat_find_pairs(ctx, sc->start, sc->n, &host, NULL, 0, &found);
    if (s != PLEAT_OK)
        return s;
    uint32_t *list = malloc((found ? found : 1) * 2 * sizeof *list);
    if (!list)
        return PLEAT_ERROR_OUT_OF_MEMORY;
    s = pleat_find_pairs(ctx, sc->start, sc->n, &host, list, found, &found);
    row->listed = found;
    row->digest = 0;
    for (size_t k = 0; s == PLEAT_OK && k < found; ++k)
        row->digest += bench_pair_term(list[2 * k], list[2 * k + 1]);
    free(list);
    return s;
}

/* A context for variant v with `threads` (profiled when asked), its
 * description written into row; NULL after saying why when it fails. */
static pleat_context *row_context(const variant *v, int threads, int profile, bench_row *row)
{
    pleat_context_desc desc = pleat_default_context_desc();
    desc.backend = v->backend;
    desc.cpu_threads = v->on_cpu ? threads : 0;
    desc.profile = profile;
    set_isa_env(v->on_cpu ? v->isa_env : NULL);
    pleat_context *ctx;
    pleat_status s = pleat_context_create(&desc, &ctx);
    if (s != PLEAT_OK) {
        fprintf(stderr, "pleat-bench: creating a %s %s context with %d threads: %s\n", v->label,
                v->isa, threads, pleat_status_string(s));
        return NULL;
    }
    snprintf(row->backend, sizeof row->backend, "%s", v->label);
    snprintf(row->isa, sizeof row->isa, "%s", v->isa);
    snprintf(row->describe, sizeof row->describe, "%s", pleat_context_describe(ctx));
    row->threads = v->on_cpu ? (threads ? threads : described_threads(row->describe)) : 0;
    return ctx;
}

/* A host-pointer call on a fresh copy of the start positions. */
static pleat_status host_call(row_call *c, pleat_stats *stats, call_time *t)
{
    memcpy(c->work, c->sc->start, scene_bytes(c->sc));
    const double t0 = portable_now_ms();
    pleat_status s = pleat_self_collide(c->ctx, c->work, c->sc->n, &c->params, stats);
    t->ms = portable_now_ms() - t0;
    pleat_context_timings(c->ctx, &t->tm);
    return s;
}

/* A row's timings: each repeat's call and its profile's stages (bounds+keys,
 * sort, sweep and apply). */
typedef struct row_times {
    int repeats;
    double *call, *stage[4];
} row_times;

/* One warm-up call, then t->repeats timed ones of c's path, into t; the
 * last call's *stats, and *changed when a call's stats differ from the
 * warm-up's (the calls carried state). The first failing status, else
 * PLEAT_OK. */
static pleat_status time_calls(row_call *c, const row_times *t, pleat_stats *stats, int *changed)
{
    pleat_stats first = {0, 0};
    pleat_status s = PLEAT_OK;
    for (int r = -1; r < t->repeats && s == PLEAT_OK; ++r) { /* r = -1: warm-up */
        call_time one = {0, {0, 0, 0, 0}};
        s = c->v->path != HOST_PTRS ? device_call(c, stats, &one) : host_call(c, stats, &one);
        if (s != PLEAT_OK || r < 0) {
            first = *stats;
            continue;
        }
        *changed |= stats->pairs != first.pairs || stats->tests != first.tests;
        t->call[r] = one.ms;
        t->stage[0][r] = one.tm.bounds_keys_ms;
        t->stage[1][r] = one.tm.sort_ms;
        t->stage[2][r] = one.tm.sweep_ms;
        t->stage[3][r] = one.tm.apply_ms;
    }
    return s;
}

/* Times pleat on sc with one variant and thread count; with `list`, also
 * digests its pairs (untimed) for the baseline check. Returns 0, or -1 after
 * printing why. */
static int run_pleat(const variant *v, int threads, int profile, int list, const scene *sc,
                     float *work, int repeats, double *times, bench_row *row)
{
    row_call c = {v, row_context(v, threads, profile, row), sc, pleat_default_params(), work,
                  {NULL, NULL, NULL, NULL, NULL, NULL}};
    if (!c.ctx)
        return -1;
    c.params.distance = sc->distance;
    c.params.stiffness = 1.0f;
    c.params.rest_positions = sc->rest;
    c.params.max_tests = sc->max_tests;
    row_times t = {repeats, times, {NULL, NULL, NULL, NULL}};
    for (int k = 0; k < 4; ++k)
        t.stage[k] = times + (size_t)(k + 1) * (size_t)repeats;
    pleat_stats stats = {0, 0};
    int changed = 0;
    if (v->path != HOST_PTRS && device_setup(&c) != 0) {
        device_free(&c.dev);
        pleat_context_destroy(c.ctx);
        return -1;
    }
    pleat_status s = time_calls(&c, &t, &stats, &changed);
    device_free(&c.dev);
    const char *call = "pleat_self_collide";
    if (s == PLEAT_OK && list) {
        call = "pleat_find_pairs";
        s = pair_digest(c.ctx, sc, &c.params, row);
    }
    pleat_context_destroy(c.ctx);
    if (s != PLEAT_OK) {
        fprintf(stderr, "pleat-bench: %s on %s n=%u (%s): %s\n", call, sc->name,
                (unsigned)sc->n, row->describe, pleat_status_string(s));
        return -1;
    }
    if (changed) { /* the calls carried state: the row times something else */
        fprintf(stderr, "pleat-bench: %s n=%u (%s): the stats changed between calls\n",
                sc->name, (unsigned)sc->n, row->describe);
        return -1;
    }
    row->repeats = repeats;
    row->ms = pleat_scene_median(times, (size_t)repeats); /* sorts: min and max at the ends */
    row->ms_min = times[0];
    row->ms_max = times[repeats - 1];
    row->bounds_keys_ms = pleat_scene_median(t.stage[0], (size_t)repeats);
    row->sort_ms = pleat_scene_median(t.stage[1], (size_t)repeats);
    row->sweep_ms = pleat_scene_median(t.stage[2], (size_t)repeats);
    row->apply_ms = pleat_scene_median(t.stage[3], (size_t)repeats);
    row->pairs = stats.pairs;
    row->tests = stats.tests;
    return 0;
}

/* ------------------------------------------------------------------ main */

/* What a scene and size takes, once made: its arrays and timings. */
typedef struct scene_run {
    uint32_t size; /* asked for (a sheet takes the nearest square) */
    scene sc;
    int repeats;
    float *work;
    double *times;
} scene_run;

/* One round's baseline on r's scene, into *proto when it is the fastest
 * yet (or the first); 1 when memory runs out. */
static int time_baseline(bench_baseline *base, scene_run *r, int list, int first,
                         bench_row *proto)
{
    bench_row b = *proto;
    if (run_baseline(base, &r->sc, r->work, r->repeats, r->times, list, &b)) {
        fprintf(stderr, "pleat-bench: out of memory for %s n=%u\n", r->sc.name,
                (unsigned)r->size);
        return 1;
    }
    b.baseline_digest = list ? b.baseline_digest : proto->baseline_digest;
    if (first || b.baseline_ms < proto->baseline_ms)
        *proto = b;
    return 0;
}

/* The variant and thread count of row k, in the table's order. */
static void row_at(const options *o, const variant *vars, int k, int *vi, int *ti)
{
    for (*vi = 0;; ++*vi) {
        int nt = vars[*vi].on_cpu ? o->num_threads : 1;
        if (k < nt)
            break;
        k -= nt;
    }
    *ti = k;
}

/* Times the baseline and every variant and thread count on r's scene
 * o->rounds times, taking turns, each round in the reverse order of the
 * one before (as bench/interleave.sh), so that no row always runs first or
 * right after another: proto gets the fastest baseline round, best[k]
 * each row's fastest round (with round 0's listed pairs, where the
 * baseline runs first). The number of rows, or -1 when a run fails. */
static int time_rounds(const options *o, const variant *vars, int num_vars, bench_baseline *base,
                       scene_run *r, bench_row *proto, bench_row *best)
{
    int num_rows = 0;
    for (int vi = 0; vi < num_vars; ++vi)
        num_rows += vars[vi].on_cpu ? o->num_threads : 1;
    for (int round = 0; round < o->rounds; ++round) {
        int list = o->baseline && round == 0; /* the pairs are listed once */
        for (int step = 0; step <= num_rows; ++step) {
            int slot = round % 2 ? num_rows - step : step; /* 0: the baseline */
            if (slot == 0) {
                if (o->baseline && time_baseline(base, r, list, round == 0, proto))
                    return -1;
                continue;
            }
            int k = slot - 1, vi, ti;
            row_at(o, vars, k, &vi, &ti);
            bench_row row = *proto;
            if (run_pleat(&vars[vi], o->threads[ti], o->profile, list, &r->sc, r->work,
                          r->repeats, r->times, &row))
                return -1;
            if (!list) { /* round 0's pairs stay with the row */
                row.listed = best[k].listed;
                row.digest = best[k].digest;
            }
            if (round == 0 || row.ms < best[k].ms)
                best[k] = row;
        }
    }
    return num_rows;
}

/* Reports the rows, each with the fastest baseline round, and checks their
 * pairs against the baseline's; the number of rows whose pairs differ. */
static int report_rows(FILE *out, const options *o, const scene *sc, const bench_row *best,
                       int num_rows, const bench_row *proto)
{
    int mismatches = 0;
    for (int k = 0; k < num_rows; ++k) {
        bench_row row = best[k];
        keep_baseline(&row, proto);
        row.pairs_match = !row.has_baseline ||
                          (row.pairs == row.baseline_pairs && row.listed == row.baseline_pairs &&
                           row.digest == row.baseline_digest);
        if (!row.pairs_match) {
            ++mismatches;
            fprintf(stderr,
                    "\n!!! pleat-bench WARNING: PAIR MISMATCH on %s n=%u, %s: pleat "
                    "found %llu pairs (%llu listed), the baseline %llu%s !!!\n\n",
                    sc->name, (unsigned)sc->n, row.describe, (unsigned long long)row.pairs,
                    (unsigned long long)row.listed, (unsigned long long)row.baseline_pairs,
                    row.pairs == row.baseline_pairs && row.listed == row.pairs
                        ? ", the same count but other pairs"
                        : "");
        }
        bench_report_row(out, o->json, &row);
    }
    return mismatches;
}

/* Makes the scene o->scenes[si] at o->sizes[zi], times it and reports its
 * rows (counted into *rows, those whose pairs differ into *mismatches); 1
 * when it fails. */
static int bench_scene(FILE *out, const options *o, const variant *vars, int num_vars,
                       bench_baseline *base, int si, int zi, int *rows, int *mismatches)
{
    static bench_row best[4 * MAX_LIST * MAX_LIST]; /* per variant and thread count */
    scene_run r = {.size = o->sizes[zi], .repeats = 0, .work = NULL, .times = NULL};
    if (scene_make(o->scenes[si], o->sizes[zi], o->seed, &r.sc) == 0) {
        r.sc.max_tests = (uint64_t)o->tests_per_particle * r.sc.n;
        r.repeats = o->repeats ? o->repeats : default_repeats(r.sc.n, o->quick);
        r.work = malloc(scene_bytes(&r.sc));
        r.times = malloc((size_t)r.repeats * 5 * sizeof *r.times);
    }
    int num_rows = -1;
    bench_row proto;
    memset(&proto, 0, sizeof proto);
    if (!r.work || !r.times) {
        fprintf(stderr, "pleat-bench: out of memory for %s n=%u\n", scene_names[o->scenes[si]],
                (unsigned)o->sizes[zi]);
    } else {
        proto.scene = r.sc.name;
        proto.n = r.sc.n;
        proto.distance = r.sc.distance;
        proto.rest = r.sc.rest != NULL;
        num_rows = time_rounds(o, vars, num_vars, base, &r, &proto, best);
    }
    if (num_rows >= 0) {
        *mismatches += report_rows(out, o, &r.sc, best, num_rows, &proto);
        *rows += num_rows;
    }
    free(r.times);
    free(r.work);
    scene_free(&r.sc);
    return num_rows < 0;
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;

    static variant vars[4 * MAX_LIST]; /* at most 3 backends x 5 ISAs: no repeats */
    static bench_skip skips[4 * MAX_LIST];
    int num_skips;
    int num_vars = probe(&o, vars, skips, &num_skips);
    if (num_vars < 0)
        return 1;

    char model[128], compiler[64];
    cpu_model(model, sizeof model);
    compiler_name(compiler, sizeof compiler);
    bench_header h = {pleat_version(), arch_name(), model,  compiler, online_cores(),
                      o.profile,       o.baseline,  o.seed, o.rounds, o.tests_per_particle,
                      skips,           num_skips};
    FILE *out = stdout;
    bench_report_begin(out, o.json, &h);
    if (num_vars == 0) { /* a run that measured nothing must not pass for one that did */
        fprintf(stderr, "pleat-bench: nothing to run: every backend/ISA asked for was skipped\n");
        bench_report_end(out, o.json, 0, 0);
        return 1;
    }

    bench_baseline *base = o.baseline ? bench_baseline_create() : NULL;
    int rows = 0, mismatches = 0, failed = o.baseline && !base;
    for (int si = 0; si < o.num_scenes && !failed; ++si)
        for (int zi = 0; zi < o.num_sizes && !failed; ++zi)
            failed = bench_scene(out, &o, vars, num_vars, base, si, zi, &rows, &mismatches);
    bench_baseline_destroy(base);
    bench_report_end(out, o.json, rows, mismatches);
    if (failed)
        return 1;
    return mismatches ? 3 : 0;
}
