/*
 * pleat-check: the core correctness checks without a test framework, for
 * machines that have no Criterion (the GPU machine; Windows under Wine, see
 * tests/windows.cmake; a cross build under qemu
 * without an arm64 Criterion root, see tests/neon.cmake). On every scene
 * kind, with and without rest positions and index subsets (of at least a
 * quarter of the particles), each with pairs, it checks the pair list
 * against brute force, the response against the double-precision
 * reference, and that 1 and 3 threads give the same bits; then prints a hash
 * of every result. The small scenes (200 to 1199 particles) take one part
 * of the work, or two from 1025 on; a last scene of 12k particles splits
 * over the 3 threads, so part boundaries, corrections owed across them and the
 * apply's parts are checked too. Then a
 * few cases with exactly known answers, from the Criterion response suite,
 * which a build without Criterion would otherwise never run (on the GPU
 * machine: through the CUDA backend), arrays that share memory, and that
 * the caller's floating-point environment changes no bit and comes back
 * whole, flags included. Scenes
 * are made with exact arithmetic, so the hash is the same on every ISA and
 * architecture: compare it between runs to check "same bits everywhere".
 *
 * Exit status: 0 all passed, 1 a check failed, 77 the requested backend or
 * ISA (PLEAT_CPU_ISA) is not available here.
 */
#include "fpenv.h"
#include "reference.h"
#include "scenes.h"

#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void fail(const char *scene, const char *what)
{
    printf("FAIL %s: %s\n", scene, what);
    ++failures;
}

static pleat_context *make_context(pleat_backend backend, int threads)
{
    pleat_status s;
    pleat_context *ctx = reference_context(backend, NULL, threads, &s);
    if (s == PLEAT_ERROR_BACKEND_UNAVAILABLE) {
        printf("skipped: %s\n", pleat_status_string(s));
        exit(77);
    }
    if (s != PLEAT_OK)
        die(pleat_status_string(s));
    return ctx;
}

/* params.max_tests at the call's tests (st->tests, its result `out`) gives
 * that result; one below, TOO_MANY_TESTS and the particles as they were. */
static void check_limit(pleat_context *ctx, const scene *sc, const pleat_params *p,
                        const float *out, const pleat_stats *st, const char *name)
{
    size_t floats = (size_t)sc->count * 4;
    for (uint64_t below = 0; below < 2 && st->tests > below; ++below) { /* 0: no limit */
        pleat_params limited = *p;
        limited.max_tests = st->tests - below;
        float *again = copy_floats(sc->particles, floats);
        pleat_status s = pleat_self_collide(ctx, again, sc->count, &limited, NULL);
        const float *want = below ? sc->particles : out;
        if (s != (below ? PLEAT_ERROR_TOO_MANY_TESTS : PLEAT_OK) ||
            memcmp(again, want, floats * sizeof *again) != 0)
            fail(name, below ? "one test over the limit: not stopped, or written"
                             : "at the test limit: another result");
        free(again);
    }
}

/* Checks one scene on ctx (and ctx3, its 3-thread twin); returns its hash. */
static uint64_t check_scene(pleat_context *ctx, pleat_context *ctx3, const scene *sc,
                            const pleat_params *p, const char *name)
{
    size_t n_ref, n_got, n_got3;
    uint32_t *ref = brute_force_pairs(sc->particles, sc->count, p, &n_ref);
    uint32_t *got = pleat_pairs(ctx, sc->particles, sc->count, p, &n_got);
    uint32_t *got3 = pleat_pairs(ctx3, sc->particles, sc->count, p, &n_got3);
    if (n_ref == 0)
        fail(name, "no pair: the scene checks nothing");
    if (n_got != n_ref || memcmp(got, ref, n_ref * 2 * sizeof *ref) != 0)
        fail(name, "pairs differ from brute force");
    if (n_got3 != n_got || memcmp(got3, got, n_got * 2 * sizeof *got) != 0)
        fail(name, "3 threads list other pairs");

    size_t floats = (size_t)sc->count * 4;
    float *out = copy_floats(sc->particles, floats), *out3 = copy_floats(sc->particles, floats);
    pleat_stats st, st3;
    if (pleat_self_collide(ctx, out, sc->count, p, &st) != PLEAT_OK ||
        pleat_self_collide(ctx3, out3, sc->count, p, &st3) != PLEAT_OK)
        die("self_collide failed");
    if (memcmp(out, out3, floats * sizeof *out) != 0)
        fail(name, "3 threads move particles differently");
    if (st.pairs != n_ref || st3.pairs != n_ref)
        fail(name, "stats.pairs is not the number of pairs");
    if (st.tests != reference_tests(sc->particles, sc->count, p) || st3.tests != st.tests)
        fail(name, "stats.tests differs from its definition");
    check_limit(ctx3, sc, p, out, &st, name);

    double *want = malloc(floats * sizeof *want);
    uint32_t *degree = calloc(sc->count + 1, sizeof *degree);
    if (!want || !degree)
        die("out of memory");
    reference_response(sc->particles, sc->count, p, ref, n_ref, want);
    for (size_t k = 0; k < 2 * n_ref; ++k)
        degree[ref[k]]++;
    for (size_t i = 0; i < floats; ++i) {
        if (fabs((double)out[i] - want[i]) >
            reference_tolerance(want[i], degree[i / 4], p->distance)) {
            fail(name, "response differs from the double-precision reference");
            break;
        }
    }
    uint64_t h = hash_bytes(got, n_got * 2 * sizeof *got) ^ hash_bytes(out, floats * sizeof *out) ^
                 st.tests;
    free(degree);
    free(want);
    free(out3);
    free(out);
    free(got3);
    free(got);
    free(ref);
    return h;
}

/* A trap where pleat should have masked it: a failure with a message, not
 * a bare crash that loses what stdout (a pipe under CTest) still holds.
 * stdio is not async-signal-safe in general; here the signal comes from
 * pleat's arithmetic, never from inside stdio. */
static void trapped(int sig)
{
    (void)sig;
    puts("FAIL environment: a floating-point exception trapped (SIGFPE)");
    fflush(stdout);
    _Exit(1);
}

/* A context of `threads` made in spoiled mode `mode` (pleat.h: creation
 * runs in the default environment whatever the caller's, so CUDA's start-up
 * must not trap either), which must give the mode back. */
static pleat_context *spoiled_context(pleat_backend backend, int threads, int mode,
                                      const char *name)
{
    if (fp_spoil(mode) != 0)
        die("cannot set the floating-point environment");
    pleat_context *ctx = make_context(backend, threads);
    if (!fp_spoiled(mode))
        fail(name, "creating a context did not give the environment back");
    return ctx;
}

/* Every one of n floats under FLT_MIN in magnitude read as zero, as
 * flush-to-zero and denormals-are-zero read them. */
static void flush_subnormals(float *v, size_t n)
{
    for (size_t k = 0; k < n; ++k)
        v[k] = fabsf(v[k]) < FLT_MIN ? 0.0f : v[k];
}

/* sc's particles after one correction, subnormals flushed. */
static float *corrected_flushed(pleat_context *ctx, const float *particles, uint32_t count,
                                const pleat_params *p)
{
    float *out = copy_floats(particles, (size_t)count * 4);
    if (pleat_self_collide(ctx, out, count, p, NULL) != PLEAT_OK)
        die("a correction of the subnormal cloud");
    flush_subnormals(out, (size_t)count * 4);
    return out;
}

/* How many of sc's particles its subnormal y and z move: with them read as
 * zero (as denormals-are-zero would), the particles that end elsewhere by
 * more than a subnormal (their pair pushed apart, or not). */
static uint32_t moved_by_subnormals(pleat_context *ctx, const scene *sc, const pleat_params *p)
{
    const size_t floats = (size_t)sc->count * 4;
    float *zeroed = copy_floats(sc->particles, floats);
    flush_subnormals(zeroed, floats);
    float *a = corrected_flushed(ctx, sc->particles, sc->count, p);
    float *b = corrected_flushed(ctx, zeroed, sc->count, p);
    uint32_t moved = 0;
    for (uint32_t i = 0; i < sc->count; ++i)
        moved += memcmp(a + 4 * (size_t)i, b + 4 * (size_t)i, 4 * sizeof *a) != 0;
    free(a);
    free(b);
    free(zeroed);
    return moved;
}

/* The same bits whatever floating-point environment the caller is in
 * (tests/fpenv.h), which must be in force again after each call, exception
 * flags included, and no trap: on 1 and 3 threads made in that
 * environment, on a cloud with subnormal differences and a folded sheet
 * with rest positions (6000 particles: the sweep splits over the 3
 * threads). */
static void check_environments(pleat_backend backend, pleat_context *plain)
{
    signal(SIGFPE, trapped);
    if (!fp_can_trap())
        printf("%-26s skipped: this CPU does not trap floating-point exceptions\n",
               "environment/unmasked");
    uint64_t rng = 7;
    scene scenes[] = {fp_subnormal_cloud(6000, pleat_scene_random(&rng)),
                      scene_make(SCENE_FOLDED, 6000, 1, pleat_scene_random(&rng))};
    for (int k = 0; k < 2; ++k) {
        const scene *sc = &scenes[k];
        pleat_params p = pleat_default_params();
        p.distance = sc->distance;
        p.stiffness = 0.7f;
        p.rest_positions = sc->rest;
        uint64_t want_c, want_p;
        collide_hashes(plain, sc->particles, sc->count, &p, 1, &want_c, &want_p);
        int before = failures;
        /* half its particles are in a pair whose difference is subnormal */
        if (k == 0 && moved_by_subnormals(plain, sc, &p) < sc->count / 4)
            fail("environment/subnormal", "its subnormals move few particles");
        for (int mode = 0; mode < fp_spoil_modes(); ++mode) {
            for (int threads = 1; threads <= 3; threads += 2) {
                char name[64];
                snprintf(name, sizeof name, "environment/%s/%d threads", fp_spoil_name(mode),
                         threads);
                pleat_context *ctx = spoiled_context(backend, threads, mode, name);
                uint64_t got_c, got_p;
                collide_hashes(ctx, sc->particles, sc->count, &p, 1, &got_c, &got_p);
                int kept = fp_spoiled(mode);
                fp_unspoil();
                pleat_context_destroy(ctx);
                if (!kept)
                    fail(name, "the caller's environment was not given back");
                if (got_c != want_c || got_p != want_p)
                    fail(name, "other bits than in the default environment");
            }
        }
        printf("%-26s %s\n", k == 0 ? "environment/subnormal" : "environment/folded",
               failures == before ? "same bits, kept" : "WRONG");
        scene_free(&scenes[k]);
    }
}

/* The running totals of the scenes checked. */
typedef struct run {
    pleat_context *ctx, *ctx3;
    uint64_t rng, total;
    int scenes, failed_scenes;
} run;

/* Makes and checks one scene (`tag` follows the kind's name), and adds its
 * hash to the total. */
static void run_scene(run *r, scene_kind kind, const char *tag, uint32_t n, int with_rest,
                      int with_subset, float stiffness)
{
    scene sc = scene_make(kind, n, with_rest, pleat_scene_random(&r->rng));
    pleat_params p = pleat_default_params();
    p.distance = sc.distance;
    p.stiffness = stiffness;
    p.rest_positions = sc.rest;
    uint32_t *subset = NULL;
    if (with_subset) {
        subset = random_large_subset(sc.count, &r->rng, &p.num_indices);
        p.indices = subset;
    }
    char name[64];
    snprintf(name, sizeof name, "%s%s/rest=%d/subset=%d", scene_name(kind), tag, with_rest,
             with_subset);
    int before = failures;
    uint64_t h = check_scene(r->ctx, r->ctx3, &sc, &p, name);
    r->failed_scenes += failures > before;
    printf("%-26s n=%-5u hash %016llx\n", name, sc.count, (unsigned long long)h);
    r->total = r->total * 1099511628211ull ^ h;
    ++r->scenes;
    free(subset);
    scene_free(&sc);
}

/* Corrects n particles (distance d, stiffness k) and checks the pair count
 * and the result against `want`, bit for bit. */
static void known_answer(pleat_context *ctx, const char *name, float *pts, uint32_t n, float d,
                         float k, uint64_t pairs, const float *want)
{
    pleat_params p = pleat_default_params();
    p.distance = d;
    p.stiffness = k;
    pleat_stats st;
    int before = failures;
    if (pleat_self_collide(ctx, pts, n, &p, &st) != PLEAT_OK || st.pairs != pairs)
        fail(name, "status or pair count");
    else if (memcmp(pts, want, 16 * (size_t)n) != 0)
        fail(name, "not the known answer");
    printf("%-26s %s\n", name, failures == before ? "known answer" : "WRONG");
}

/* The rare lanes of the correction: a huge inverse mass beside a tiny
 * distance, pinned particle 2^-100 away (u = -1/4, r_i = 4 and every other
 * operation exact but two roundings that lose nothing, h_i + FLT_EPSILON / 2
 * to h_i and L - d to -d: x_i ends at d, as the formula gives it to a
 * float's precision, where a subnormal factor once took it to 2^-62),
 * coincident particles (counted, not moved), and a pair whose every
 * operation is exact (w_i + w_j + FLT_EPSILON is 1: x_i moves by exactly
 * -2^-8 + 2^-30; x_j ends at 0.5 - w_j (0.5 - d), rounded). At stiffness
 * 0.5 the same pair shows the truncation to whole quanta (2^-30 here): x_i
 * would move by -2^-9 + 2^-31, half a quantum past -2^-9 + 2^-30, so it
 * moves by that; x_j's share is a whole number of quanta already. */
static void known_answers(pleat_context *ctx)
{
    float heavy[] = {0, 0, 0, 1.96e26f, -0x1p-100f, 0, 0, 0};
    const float pushed[] = {0x1.e66666p-63f, 0, 0, 1.96e26f, -0x1p-100f, 0, 0, 0};
    known_answer(ctx, "known/huge-inverse-mass", heavy, 2, 0x1.e66666p-63f, 1.0f, 1, pushed);
    float same[] = {1, 2, 3, 1, 1, 2, 3, 1, 1, 2, 3, 2};
    float unmoved[12];
    memcpy(unmoved, same, sizeof same);
    known_answer(ctx, "known/coincident", same, 3, 0.5f, 1.0f, 3, unmoved);
    const float wi = 0x1p-6f, wj = 1.0f - 0x1p-6f - 0x1p-23f;
    float exact[] = {0, 0, 0, wi, 0.5f, 0, 0, wj};
    /* x_j = 0.5 - w_j * (0.5 - d), d = 0.75 - 2^-24, in float as pleat does it */
    const float xj = 0.5f - (float)((double)wj * (0.5 - (0.75 - 0x1p-24)));
    const float moved[] = {-0x1p-8f + 0x1p-30f, 0, 0, wi, xj, 0, 0, wj};
    known_answer(ctx, "known/exact", exact, 2, 0.75f - 0x1p-24f, 1.0f, 1, moved);
    float half[] = {0, 0, 0, wi, 0.5f, 0, 0, wj};
    const float xj_half = 0.5f - (float)((double)wj * (0.5 * (0.5 - (0.75 - 0x1p-24))));
    const float moved_half[] = {-0x1p-9f + 0x1p-30f, 0, 0, wi, xj_half, 0, 0, wj};
    known_answer(ctx, "known/exact-half", half, 2, 0.75f - 0x1p-24f, 0.5f, 1, moved_half);
}

/* pleat.h: a call reads all of its inputs before it writes an output, so
 * arrays may share memory. A pair list written over the particles, rest
 * positions and indices it comes from (one block holding all three, the
 * list, longer than they are, from the block's start) is the list that
 * separate arrays get; rest rows one row on from the particles' (row i + 1
 * is particle i's rest) correct them as a copy of those rows does. */
static void list_over_its_inputs(pleat_context *ctx, const scene *sc, uint64_t *rng)
{
    const size_t rows = 16 * (size_t)sc->count;
    float *rest = copy_floats(sc->particles, rows / 4);
    for (size_t k = 0; k < rows / 4; ++k)
        rest[k] *= 8.0f; /* a rest pose that rules out some pairs, not most */
    pleat_params p = pleat_default_params();
    p.distance = 5.0f * sc->distance; /* a list longer than its inputs */
    p.rest_positions = rest;
    uint32_t *subset = random_large_subset(sc->count, rng, &p.num_indices);
    p.indices = subset;
    size_t want_n, got_n = 0;
    uint32_t *want = pleat_pairs(ctx, sc->particles, sc->count, &p, &want_n);
    const size_t inputs = 2 * rows + p.num_indices * sizeof *subset, list = 8 * want_n;
    unsigned char *block = malloc(list > inputs ? list : inputs);
    if (!block)
        die("out of memory");
    memcpy(block, sc->particles, rows);
    memcpy(block + rows, rest, rows);
    memcpy(block + 2 * rows, subset, p.num_indices * sizeof *subset);
    p.rest_positions = (const float *)(block + rows);
    p.indices = (const uint32_t *)(block + 2 * rows);
    if (list <= inputs)
        fail("shared-memory", "the list does not cover its inputs");
    else if (pleat_find_pairs(ctx, (const float *)block, sc->count, &p, (uint32_t *)block,
                              want_n, &got_n) != PLEAT_OK ||
             got_n != want_n || memcmp(block, want, list) != 0)
        fail("shared-memory", "a list over its inputs differs");
    free(block);
    free(want);
    free(subset);
    free(rest);
}

static void rest_over_the_particles(pleat_context *ctx, const scene *sc)
{
    const size_t n4 = 4 * (size_t)sc->count;
    float *block = malloc((n4 + 4) * sizeof *block);
    if (!block)
        die("out of memory");
    memcpy(block, sc->particles, n4 * sizeof *block);
    memcpy(block + n4, sc->particles, 4 * sizeof *block); /* the last rest row */
    float *rest = copy_floats(block + 4, n4), *want = copy_floats(block, n4);
    pleat_params p = pleat_default_params();
    p.distance = sc->distance;
    p.rest_positions = rest;
    pleat_stats apart, shared;
    if (pleat_self_collide(ctx, want, sc->count, &p, &apart) != PLEAT_OK || apart.pairs == 0)
        fail("shared-memory", "no pair moves with separate rest positions");
    p.rest_positions = block + 4;
    if (pleat_self_collide(ctx, block, sc->count, &p, &shared) != PLEAT_OK ||
        shared.pairs != apart.pairs || memcmp(block, want, n4 * sizeof *block) != 0)
        fail("shared-memory", "rest rows among the particles' give another result");
    free(want);
    free(rest);
    free(block);
}

static void shared_memory(pleat_context *ctx, uint64_t *rng)
{
    scene sc = scene_make(SCENE_FOLDED, 1600, 0, pleat_scene_random(rng));
    int before = failures;
    list_over_its_inputs(ctx, &sc, rng);
    rest_over_the_particles(ctx, &sc);
    printf("%-26s %s\n", "shared-memory", failures == before ? "same results" : "WRONG");
    scene_free(&sc);
}

int main(int argc, char **argv)
{
    pleat_backend backend = PLEAT_BACKEND_CPU;
    if (argc > 1 && strcmp(argv[1], "--cuda") == 0)
        backend = PLEAT_BACKEND_CUDA;
    else if (argc > 1) {
        fprintf(stderr, "usage: %s [--cuda]\n", argv[0]);
        return 2;
    }
    run r = {make_context(backend, 1), make_context(backend, 3), 2026, 0, 0, 0};
    for (int kind = 0; kind < SCENE_KIND_COUNT; ++kind) {
        for (int variant = 0; variant < 4; ++variant) {
            uint32_t n = 200 + (uint32_t)(pleat_scene_random(&r.rng) % 1000);
            run_scene(&r, (scene_kind)kind, "", n, variant & 1, variant >> 1,
                      variant == 3 ? 0.5f : 1.0f);
        }
    }
    /* one cloud big enough for 3 parts, all of it taking part */
    run_scene(&r, SCENE_CLOUD, "-12k", 12000, 1, 0, 0.5f);
    known_answers(r.ctx);
    shared_memory(r.ctx3, &r.rng);
    check_environments(backend, r.ctx);
    printf("pleat-check on %s: result hash %016llx\n", pleat_context_describe(r.ctx),
           (unsigned long long)r.total);
    /* the scenes, then every check (the known answers and environments too) */
    printf("%d scenes passed, %d failed; failed checks in all: %d\n",
           r.scenes - r.failed_scenes, r.failed_scenes, failures);
    pleat_context_destroy(r.ctx3);
    pleat_context_destroy(r.ctx);
    return failures ? 1 : 0;
}
