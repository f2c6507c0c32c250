/*
 * Concurrent use.
 * - Separate contexts on separate threads at once (every kernel variant,
 *   1 to 3 pool threads each, reading the same const inputs) give exactly the
 *   bits of a one-thread run done before.
 * - Separate contexts correcting disjoint subsets of one particle array at
 *   once: a call writes only the particles it moves, so neither undoes the
 *   other (fuzz/stress_threads.c checks it under TSan).
 * - One context shared by several threads: the rule of pleat.h is that a
 *   call which starts while another call holds the context returns
 *   PLEAT_ERROR_INVALID_ARGUMENT at once and writes nothing; the call that
 *   holds it finishes normally. Tested deterministically (the context held by
 *   hand) and by stress (threads racing on one context: every call either
 *   gives the right bits or is refused with its arrays untouched).
 * - A context made before a fork(), in the child.
 * (Signals sent to the process, which must not reach pleat's workers:
 * tests/signals.c.)
 */
#include "core/alloc.h"
#include "core/context.h"
#include "hardening.h"
#include "isas.h"
#include "subsets.h"

#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct expected {
    hz_scene sc;
    pleat_params params;
    uint32_t *indices;
    float *collided; /* particles after one self_collide */
    pleat_stats stats;
    uint32_t *pairs;
    size_t num_pairs;
} expected;

static expected make_expected(uint32_t n, uint64_t seed, int with_rest, int with_indices)
{
    expected e;
    memset(&e, 0, sizeof e);
    e.sc = hz_cloud(n, seed, with_rest, 1);
    e.params = pleat_default_params();
    e.params.distance = e.sc.distance;
    e.params.stiffness = 0.75f;
    e.params.rest_positions = e.sc.rest;
    if (with_indices) {
        e.indices = malloc(n * sizeof *e.indices);
        cr_assert(e.indices);
        uint32_t m = 0;
        for (uint32_t i = 0; i < n; ++i)
            if (i % 4 != 2)
                e.indices[m++] = n - 1 - i;
        e.params.indices = e.indices;
        e.params.num_indices = m;
    }
    /* the reference: one thread, scalar kernels */
    pleat_context *ctx = hz_context("scalar", 1);
    size_t bytes = 16 * (size_t)n;
    e.collided = malloc(bytes);
    cr_assert(e.collided);
    memcpy(e.collided, e.sc.particles, bytes);
    cr_assert_eq(pleat_self_collide(ctx, e.collided, n, &e.params, &e.stats), PLEAT_OK);
    cr_assert_eq(pleat_find_pairs(ctx, e.sc.particles, n, &e.params, NULL, 0, &e.num_pairs),
                 PLEAT_OK);
    e.pairs = malloc((2 * e.num_pairs + 1) * sizeof *e.pairs);
    cr_assert(e.pairs);
    size_t again = 0;
    cr_assert_eq(pleat_find_pairs(ctx, e.sc.particles, n, &e.params, e.pairs, e.num_pairs,
                                  &again),
                 PLEAT_OK);
    cr_assert(e.num_pairs > 100 && e.stats.pairs == e.num_pairs);
    pleat_context_destroy(ctx);
    return e;
}

static void free_expected(expected *e)
{
    hz_scene_free(&e->sc);
    free(e->indices);
    free(e->collided);
    free(e->pairs);
}

/* ---- separate contexts ------------------------------------------------- */

typedef struct worker {
    pthread_t thread;
    pleat_context *ctx;
    const expected *cases;
    int num_cases, rounds;
    int failures;
    char what[160];
} worker;

static void *run_worker(void *arg)
{
    worker *w = arg;
    for (int r = 0; r < w->rounds && !w->failures; ++r)
        for (int k = 0; k < w->num_cases && !w->failures; ++k) {
            const expected *e = &w->cases[(k + r) % w->num_cases];
            size_t bytes = 16 * (size_t)e->sc.count;
            float *p = malloc(bytes);
            uint32_t *pairs = malloc((2 * e->num_pairs + 1) * sizeof *pairs);
            if (!p || !pairs) {
                w->failures++;
                snprintf(w->what, sizeof w->what, "out of memory");
                free(p);
                free(pairs);
                break;
            }
            memcpy(p, e->sc.particles, bytes);
            pleat_stats st;
            size_t num = 0;
            pleat_status s1 = pleat_self_collide(w->ctx, p, e->sc.count, &e->params, &st);
            /* the input arrays are shared by every thread: read only */
            pleat_status s2 = pleat_find_pairs(w->ctx, e->sc.particles, e->sc.count, &e->params,
                                               pairs, e->num_pairs, &num);
            if (s1 != PLEAT_OK || s2 != PLEAT_OK) {
                w->failures++;
                snprintf(w->what, sizeof w->what, "%s: status %s / %s",
                         pleat_context_describe(w->ctx), pleat_status_string(s1),
                         pleat_status_string(s2));
            } else if (memcmp(p, e->collided, bytes) != 0 || st.pairs != e->stats.pairs) {
                w->failures++;
                snprintf(w->what, sizeof w->what, "%s: other bits than one thread",
                         pleat_context_describe(w->ctx));
            } else if (num != e->num_pairs ||
                       memcmp(pairs, e->pairs, 2 * num * sizeof *pairs) != 0) {
                w->failures++;
                snprintf(w->what, sizeof w->what, "%s: other pairs than one thread",
                         pleat_context_describe(w->ctx));
            }
            free(p);
            free(pairs);
        }
    return NULL;
}

Test(concurrency, separate_contexts_on_separate_threads_give_the_same_bits, .timeout = 600)
{
    expected cases[3] = {
        make_expected(30000, 1, 1, 0), /* several chunks: pool threads really split it */
        make_expected(9000, 2, 0, 1),
        make_expected(700, 3, 1, 1),
    };
    /* every variant this machine has, 1 to 3 pool threads; contexts are
     * created here: PLEAT_CPU_ISA is process-wide */
    worker workers[3 * PLEAT_TEST_NUM_ISAS];
    int n = 0;
    for (int k = 0; hz_isas[k]; ++k)
        for (int t = 1; t <= 3; ++t) {
            pleat_context *ctx = hz_context(hz_isas[k], t);
            if (!ctx)
                break;
            memset(&workers[n], 0, sizeof workers[n]);
            workers[n].ctx = ctx;
            workers[n].cases = cases;
            workers[n].num_cases = 3;
            workers[n].rounds = 3;
            ++n;
        }
    cr_assert(n >= 3);
    for (int k = 0; k < n; ++k)
        cr_assert_eq(pthread_create(&workers[k].thread, NULL, run_worker, &workers[k]), 0);
    for (int k = 0; k < n; ++k)
        pthread_join(workers[k].thread, NULL);
    for (int k = 0; k < n; ++k) {
        cr_expect_eq(workers[k].failures, 0, "%s", workers[k].what);
        pleat_context_destroy(workers[k].ctx);
    }
    for (int k = 0; k < 3; ++k)
        free_expected(&cases[k]);
}

Test(concurrency, disjoint_subsets_of_one_array_from_separate_threads, .timeout = 600)
{
    hz_scene sc = hz_cloud(20000, 17, 1, 1);
    pleat_params p = pleat_default_params();
    p.distance = sc.distance;
    p.rest_positions = sc.rest;
    pleat_context *ctx[3] = {hz_context("scalar", 1), hz_context("", 2), hz_context("", 2)};
    cr_assert(ctx[0] && ctx[1] && ctx[2]);
    const char *why = subsets_check(ctx[0], ctx[1], ctx[2], sc.particles, sc.count, &p, 10);
    cr_expect(why == NULL, "%s", why);
    for (int k = 0; k < 3; ++k)
        pleat_context_destroy(ctx[k]);
    hz_scene_free(&sc);
}

/* One pleat_self_collide on a copy of e's start: e's bits. */
static void collides_right(pleat_context *ctx, const expected *e)
{
    size_t bytes = 16 * (size_t)e->sc.count;
    float *p = malloc(bytes);
    cr_assert(p);
    memcpy(p, e->sc.particles, bytes);
    cr_assert_eq(pleat_self_collide(ctx, p, e->sc.count, &e->params, NULL), PLEAT_OK);
    cr_assert(memcmp(p, e->collided, bytes) == 0);
    free(p);
}

/* ---- one shared context ------------------------------------------------ */

Test(concurrency, a_call_on_a_context_in_use_is_refused_and_writes_nothing)
{
    expected e = make_expected(2000, 4, 1, 0);
    pleat_context *ctx = hz_context("", 2);
    size_t bytes = 16 * (size_t)e.sc.count;
    float *p = malloc(bytes);
    uint32_t *pairs = malloc((2 * e.num_pairs + 2) * sizeof *pairs);
    cr_assert(p && pairs);
    memcpy(p, e.sc.particles, bytes);

    /* hold the context as a running call does */
    cr_assert(pleat_context_acquire(ctx));
    pleat_stats st = {7, 7};
    cr_assert_eq(pleat_self_collide(ctx, p, e.sc.count, &e.params, &st),
                 PLEAT_ERROR_INVALID_ARGUMENT);
    cr_assert(memcmp(p, e.sc.particles, bytes) == 0 && st.pairs == 7 && st.tests == 7);
    size_t num = 12345;
    memset(pairs, 0xee, (2 * e.num_pairs + 2) * sizeof *pairs);
    cr_assert_eq(pleat_find_pairs(ctx, p, e.sc.count, &e.params, NULL, 0, &num),
                 PLEAT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(pleat_find_pairs(ctx, p, e.sc.count, &e.params, pairs, e.num_pairs, &num),
                 PLEAT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(num, 12345);
    for (size_t k = 0; k < 2 * e.num_pairs + 2; ++k)
        cr_assert_eq(pairs[k], 0xeeeeeeeeu);
    /* argument errors keep their priority over the busy context: more
     * indices than particles, and a device call on a CPU context */
    cr_assert_eq(pleat_self_collide(ctx, NULL, 3, &e.params, NULL), PLEAT_ERROR_INVALID_ARGUMENT);
    const uint32_t three[3] = {0, 1, 2};
    pleat_params too_many = e.params;
    too_many.indices = three;
    too_many.num_indices = 3;
    cr_assert_eq(pleat_self_collide(ctx, p, 2, &too_many, &st), PLEAT_ERROR_BAD_INDEX);
    cr_assert_eq(pleat_find_pairs(ctx, p, 2, &too_many, NULL, 0, &num), PLEAT_ERROR_BAD_INDEX);
    cr_assert_eq(pleat_self_collide_device(ctx, p, e.sc.count, &e.params, NULL, &st),
                 PLEAT_ERROR_BACKEND_UNAVAILABLE);
    cr_assert(memcmp(p, e.sc.particles, bytes) == 0 && st.pairs == 7 && st.tests == 7 &&
              num == 12345);
    /* the data checks read the arrays, so they are not made: a repeated
     * index, or a NaN, meets the busy refusal */
    const uint32_t repeated[2] = {1, 1};
    pleat_params twice = e.params;
    twice.indices = repeated;
    twice.num_indices = 2;
    cr_assert_eq(pleat_self_collide(ctx, p, e.sc.count, &twice, &st),
                 PLEAT_ERROR_INVALID_ARGUMENT);
    cr_assert(memcmp(p, e.sc.particles, bytes) == 0 && st.pairs == 7 && st.tests == 7);
    float nan_pair[8] = {NAN, 0, 0, 1, 0, 0, 0, 1}, nan_before[8];
    memcpy(nan_before, nan_pair, sizeof nan_pair);
    cr_assert_eq(pleat_find_pairs(ctx, nan_pair, 2, &e.params, NULL, 0, &num),
                 PLEAT_ERROR_INVALID_ARGUMENT);
    cr_assert(memcmp(nan_pair, nan_before, sizeof nan_pair) == 0 && num == 12345);
    pleat_context_release(ctx);

    /* released: it works, with the right answer */
    cr_assert_eq(pleat_self_collide(ctx, p, e.sc.count, &e.params, &st), PLEAT_OK);
    cr_assert(memcmp(p, e.collided, bytes) == 0);
    cr_assert_eq(pleat_find_pairs(ctx, e.sc.particles, e.sc.count, &e.params, pairs,
                                  e.num_pairs, &num),
                 PLEAT_OK);
    cr_assert(num == e.num_pairs && memcmp(pairs, e.pairs, 2 * num * sizeof *pairs) == 0);
    /* a refused call leaves the context free: nothing stays held */
    cr_assert(pleat_context_acquire(ctx));
    pleat_context_release(ctx);
    free(p);
    free(pairs);
    pleat_context_destroy(ctx);
    free_expected(&e);
}

typedef struct racer {
    pthread_t thread;
    pleat_context *ctx; /* shared */
    const expected *e;
    atomic_int *stop;
    atomic_int ok, refused; /* read by the main thread while racing */
    int failures;
    char what[128];
} racer;

static void *run_racer(void *arg)
{
    racer *r = arg;
    const expected *e = r->e;
    size_t bytes = 16 * (size_t)e->sc.count;
    float *p = malloc(bytes);
    uint32_t *pairs = malloc((2 * e->num_pairs + 1) * sizeof *pairs);
    if (!p || !pairs) {
        r->failures++;
        free(p);
        free(pairs);
        return NULL;
    }
    for (int k = 0; !atomic_load(r->stop) && !r->failures; ++k) {
        memcpy(p, e->sc.particles, bytes);
        pleat_status s;
        if (k % 2 == 0) {
            pleat_stats st = {0, 0};
            s = pleat_self_collide(r->ctx, p, e->sc.count, &e->params, &st);
            if (s == PLEAT_OK &&
                (memcmp(p, e->collided, bytes) != 0 || st.pairs != e->stats.pairs)) {
                r->failures++;
                snprintf(r->what, sizeof r->what, "self_collide gave other bits");
            }
        } else {
            size_t num = 999;
            const size_t pair_bytes = (2 * e->num_pairs + 1) * sizeof *pairs;
            memset(pairs, 0xa5, pair_bytes);
            s = pleat_find_pairs(r->ctx, e->sc.particles, e->sc.count, &e->params, pairs,
                                 e->num_pairs, &num);
            if (s == PLEAT_OK && (num != e->num_pairs ||
                                  memcmp(pairs, e->pairs, 2 * num * sizeof *pairs) != 0)) {
                r->failures++;
                snprintf(r->what, sizeof r->what, "find_pairs gave other pairs");
            }
            if (s != PLEAT_OK && num != 999) {
                r->failures++;
                snprintf(r->what, sizeof r->what, "a refused call wrote num_pairs");
            }
            for (size_t i = 0; s != PLEAT_OK && i < pair_bytes; ++i)
                if (((const unsigned char *)pairs)[i] != 0xa5) {
                    r->failures++;
                    snprintf(r->what, sizeof r->what, "a refused call wrote the pairs");
                    break;
                }
        }
        if (s == PLEAT_OK) {
            atomic_fetch_add(&r->ok, 1);
        } else if (s == PLEAT_ERROR_INVALID_ARGUMENT) {
            atomic_fetch_add(&r->refused, 1);
            if (memcmp(p, e->sc.particles, bytes) != 0) {
                r->failures++;
                snprintf(r->what, sizeof r->what, "a refused call wrote the particles");
            }
        } else {
            r->failures++;
            snprintf(r->what, sizeof r->what, "status %s", pleat_status_string(s));
        }
    }
    free(p);
    free(pairs);
    return NULL;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

Test(concurrency, threads_racing_on_one_context_never_corrupt_it, .timeout = 600)
{
    expected e = make_expected(40000, 5, 1, 0);
    pleat_context *ctx = hz_context("", 2);
    atomic_int stop;
    atomic_init(&stop, 0);
    racer racers[3];
    for (int k = 0; k < 3; ++k) {
        memset(&racers[k], 0, sizeof racers[k]);
        atomic_init(&racers[k].ok, 0);
        atomic_init(&racers[k].refused, 0);
        racers[k].ctx = ctx;
        racers[k].e = &e;
        racers[k].stop = &stop;
        cr_assert_eq(pthread_create(&racers[k].thread, NULL, run_racer, &racers[k]), 0);
    }
    /* until every racer has had calls accepted and refused (or 60 s) */
    double start = now_s();
    for (;;) {
        struct timespec nap = {0, 20000000};
        nanosleep(&nap, NULL);
        int done = 1;
        for (int k = 0; k < 3; ++k)
            done &= atomic_load(&racers[k].ok) >= 3 && atomic_load(&racers[k].refused) >= 3;
        if (done || now_s() - start > 60.0)
            break;
    }
    atomic_store(&stop, 1);
    int ok = 0, refused = 0;
    for (int k = 0; k < 3; ++k) {
        pthread_join(racers[k].thread, NULL);
        cr_expect_eq(racers[k].failures, 0, "%s", racers[k].what);
        ok += atomic_load(&racers[k].ok);
        refused += atomic_load(&racers[k].refused);
    }
    cr_assert(ok > 0 && refused > 0, "calls accepted %d, refused %d", ok, refused);
    collides_right(ctx, &e); /* afterwards the context is free and right */
    pleat_context_destroy(ctx);
    free_expected(&e);
}

/* ---- fork() ------------------------------------------------------------- */

/* What a fork() child of a process with this context does with its copy:
 * a call (the right bits, or with `busy` a refusal that writes nothing),
 * then the context's end, which frees every block the context took (live
 * blocks back at `live_before`, their count before it was made) or, for a
 * copy held at the fork, none. As an exit code (the child is not
 * Criterion's): 0 right, 1 to 5 wrong; a hang ends at the alarm, as a
 * signal. */
static int in_child(pleat_context *ctx, const expected *e, int busy, int64_t live_before)
{
    alarm(60);
    size_t bytes = 16 * (size_t)e->sc.count;
    float *p = malloc(bytes);
    uint32_t *pairs = malloc((2 * e->num_pairs + 1) * sizeof *pairs);
    if (!p || !pairs)
        return 1;
    memcpy(p, e->sc.particles, bytes);
    size_t num = 0;
    pleat_status s1 = pleat_self_collide(ctx, p, e->sc.count, &e->params, NULL);
    pleat_status s2 = pleat_find_pairs(ctx, e->sc.particles, e->sc.count, &e->params, pairs,
                                       e->num_pairs, &num);
    const float *want = busy ? e->sc.particles : e->collided;
    const pleat_status status = busy ? PLEAT_ERROR_INVALID_ARGUMENT : PLEAT_OK;
    if (s1 != status || s2 != status)
        return 2;
    if (memcmp(p, want, bytes) != 0)
        return 3;
    if (!busy && (num != e->num_pairs || memcmp(pairs, e->pairs, 2 * num * sizeof *pairs)))
        return 4;
    const int64_t live = pleat_alloc_live();
    pleat_context_destroy(ctx);
    return pleat_alloc_live() == (busy ? live : live_before) ? 0 : 5;
}

/* pleat.h: a CPU context made before a fork() works in the child on the
 * calling thread alone (its workers stayed in the parent), with the same
 * bits, and ends there without waiting for those workers. With 3 and 4
 * threads the child used to hang in the destroy's join or the call's
 * wake-up, or crash in the join. A context a call held at the fork (here
 * held by hand) stays held in the child: its calls are refused, and its
 * end frees nothing, as that call may have stopped midway. */
Test(concurrency, a_context_made_before_fork_works_and_ends_in_the_child, .timeout = 600)
{
    expected e = make_expected(30000, 5, 1, 1);
    for (int threads = 2; threads <= 4; ++threads)
        for (int busy = 0; busy <= 1; ++busy) {
            const int64_t live_before = pleat_alloc_live();
            pleat_context *ctx = hz_context("", threads);
            cr_assert(ctx);
            collides_right(ctx, &e); /* workers that have run, now spinning or asleep */
            cr_assert(!busy || pleat_context_acquire(ctx));
            fflush(NULL);
            pid_t child = fork();
            cr_assert(child >= 0);
            if (child == 0)
                _exit(in_child(ctx, &e, busy, live_before));
            int how = 0;
            cr_assert_eq(waitpid(child, &how, 0), child);
            cr_expect(WIFEXITED(how) && WEXITSTATUS(how) == 0,
                      "%d threads%s: the child %s %d", threads, busy ? ", held" : "",
                      WIFEXITED(how) ? "exited with" : "died of signal",
                      WIFEXITED(how) ? WEXITSTATUS(how) : WTERMSIG(how));
            if (busy)
                pleat_context_release(ctx);
            collides_right(ctx, &e); /* untouched by the child's end */
            pleat_context_destroy(ctx);
        }
    free_expected(&e);
}

