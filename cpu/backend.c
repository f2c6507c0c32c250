/* The CPU backend: owns the worker pool and the scratch, and runs the stages
 * of cpu.h in order for one job. Every buffer a job needs is reserved before
 * the first write to the caller's memory. */
#include "cpu.h"
#include "core/alloc.h"
#include "core/buffer.h"
#include "core/clock.h"
#include "bounds.h"
#include "isa.h"
#include "sort.h"
#include "thread.h"

#include <stdio.h>

typedef struct pleat_cpu {
    pleat_pool *pool;
    const pleat_kernels *kern;
    /* Scratch, at most 48 bytes per taking-part particle, 64 with rest
     * positions: sort_a and sort_b (8 + 8; after the sort one holds keys +
     * order, the other the z sums), pos (16), acc_xy (16, only when
     * correcting); rest (16) only with rest positions from
     * PLEAT_SORTED_REST_FROM particles on, below which they are read from the
     * caller's array. Plus a bit per particle for index checks and the pair
     * lists of find_pairs. */
    pleat_buffer seen, chunks, radix, sort_a, sort_b, pos, rest, acc_xy, list_a, list_b;
    pleat_part part[PLEAT_MAX_CPU_THREADS]; /* the sweep's queues, kept between calls */
    int column_order; /* the sort's guess (cpu/order.c), 1 at first */
} pleat_cpu;

/* What the checks need: a result per chunk (and per part, which the sweep
 * counts in). Needs f->m and f->parts. */
static pleat_status reserve_checks(pleat_cpu *cpu, pleat_frame *f)
{
    size_t chunks = pleat_chunks(f->m), parts = f->parts;
    pleat_status s =
        pleat_buffer_reserve(&cpu->chunks, chunks > parts ? chunks : parts, sizeof(pleat_chunk));
    f->chunks = cpu->chunks.data;
    return s;
}

/* What the keys, the sort, the gather and the sweep need; sums: the call
 * corrects, so it needs the fixed-point sums. Needs f->m. */
static pleat_status reserve_particles(pleat_cpu *cpu, pleat_frame *f, int sums)
{
    size_t m = f->m;
    if (m > SIZE_MAX - PLEAT_PAD) /* a 32-bit build: m + PLEAT_PAD would wrap */
        return PLEAT_ERROR_OUT_OF_MEMORY;
    int sorted_rest = f->rest && m >= PLEAT_SORTED_REST_FROM;
    struct {
        pleat_buffer *buf;
        size_t count, size;
    } need[] = {
        {&cpu->radix, 1, pleat_radix_scratch(m, pleat_pool_threads(cpu->pool))},
        {&cpu->sort_a, m + PLEAT_PAD, sizeof(uint64_t)},
        {&cpu->sort_b, m + PLEAT_PAD, sizeof(uint64_t)},
        {&cpu->pos, m + PLEAT_PAD, 4 * sizeof(float)},
        {&cpu->rest, sorted_rest ? m : 0, 4 * sizeof(float)},
        {&cpu->acc_xy, sums ? m : 0, 2 * sizeof(int64_t)},
    };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; ++i) {
        pleat_status s = pleat_buffer_reserve(need[i].buf, need[i].count, need[i].size);
        if (s != PLEAT_OK)
            return s;
    }
    f->packed = cpu->sort_a.data;
    f->pos = cpu->pos.data;
    f->rest_sorted = sorted_rest ? cpu->rest.data : NULL;
    f->acc_xy = sums ? cpu->acc_xy.data : NULL; /* the gather zeroes them */
    return PLEAT_OK;
}

/* Checks, bounds, keys, sort and gather: everything before the sweep. */
static pleat_status prepare(pleat_cpu *cpu, pleat_frame *f, pleat_job *job, double *mark)
{
    const pleat_params *p = &job->params;
    f->particles = job->particles;
    f->count = job->count;
    f->indices = p->indices;
    f->m = p->indices ? p->num_indices : job->count;
    f->rest = p->rest_positions;
    f->consts = pleat_pair_setup(p->distance, p->stiffness);
    f->max_tests = p->max_tests;
    /* the parts of the gather's second pass, the sweep and the apply */
    f->parts = pleat_cpu_parts(f->m, pleat_pool_threads(cpu->pool));
    /* below a few chunks the stages before the sweep run on this thread
     * alone: the workers are woken now, to be spinning when it starts
     * (cloud 4k, 2 threads, calls 0.3 ms apart: 0.180 -> 0.166 ms) */
    if (f->parts > 1)
        pleat_pool_nudge(cpu->pool);

    pleat_status s;
    if (f->indices && f->m > 0) { /* an empty subset has nothing to check */
        s = pleat_buffer_reserve_zeroed(&cpu->seen, pleat_seen_bytes(f->count), 1);
        if (s == PLEAT_OK)
            s = pleat_cpu_check_indices(f->indices, f->m, f->count, cpu->seen.data);
        if (s != PLEAT_OK)
            return s;
    }
    /* all the scratch before the checks read the particles (a call that
     * cannot have it fails without a pass over them), but none past the
     * checks' own where nothing can collide */
    int can_collide = p->distance != 0.0f && f->m >= 2;
    if ((s = reserve_checks(cpu, f)) != PLEAT_OK ||
        (can_collide &&
         (s = reserve_particles(cpu, f, job->kind == PLEAT_JOB_COLLIDE)) != PLEAT_OK) ||
        (s = pleat_cpu_bounds(f, cpu->pool, cpu->kern)) != PLEAT_OK)
        return s;
    if (!can_collide) {
        f->m = f->parts = 0;
        pleat_lap(job->profile, mark, &job->timings.bounds_keys_ms); /* the checks ran */
        return PLEAT_OK;
    }
    pleat_pool_run(cpu->pool, pleat_chunks(f->m), cpu->kern->keys, f);
    pleat_lap(job->profile, mark, &job->timings.bounds_keys_ms);
    pleat_cpu_sort(f, cpu->pool, cpu->kern, cpu->sort_b.data, cpu->radix.data,
                   &cpu->column_order);
    pleat_lap(job->profile, mark, &job->timings.sort_ms);
    return PLEAT_OK;
}

/* The sweep, one part per thread (f->parts). */
static pleat_status sweep(pleat_cpu *cpu, pleat_frame *f, pleat_sweep_mode mode, pleat_job *job,
                          double *mark)
{
    f->mode = mode;
    f->part = cpu->part;
    for (uint32_t p = 0; p < f->parts; ++p) {
        uint32_t begin = pleat_part_begin(f, p), end = pleat_part_begin(f, p + 1);
        pleat_cpu_part_reset(&f->part[p], end - begin, f->m - end);
    }
    atomic_store_explicit(&f->tests_spent, 0, memory_order_relaxed); /* each sweep afresh */
    pleat_pool_run(cpu->pool, f->parts, cpu->kern->sweep, f);
    job->stats.pairs = job->stats.tests = 0;
    int out_of_memory = 0;
    for (uint32_t p = 0; p < f->parts; ++p) {
        out_of_memory |= f->part[p].out_of_memory;
        f->part[p].out_of_memory = 0;
        job->stats.pairs += f->chunks[p].pairs;
        job->stats.tests += f->chunks[p].tests;
    }
    /* nothing was written yet in either case; the limit first, as it does
     * not depend on the memory at hand */
    if (f->max_tests != 0 &&
        atomic_load_explicit(&f->tests_spent, memory_order_relaxed) > f->max_tests)
        return PLEAT_ERROR_TOO_MANY_TESTS;
    if (out_of_memory) /* a queue or table could not grow */
        return PLEAT_ERROR_OUT_OF_MEMORY;
    if (mode == PLEAT_SWEEP_CORRECT)
        pleat_cpu_settle(f, cpu->pool);
    pleat_lap(job->profile, mark, &job->timings.sweep_ms);
    return PLEAT_OK;
}

static pleat_status collide(pleat_cpu *cpu, pleat_frame *f, pleat_job *job, double *mark)
{
    pleat_status s;
    if ((s = sweep(cpu, f, PLEAT_SWEEP_CORRECT, job, mark)) != PLEAT_OK)
        return s;
    f->out = job->particles;
    pleat_pool_run(cpu->pool, f->parts, cpu->kern->apply, f); /* the sweep's parts */
    pleat_lap(job->profile, mark, &job->timings.apply_ms);
    return PLEAT_OK;
}

/* The sorted pair list (pleat_pair_pack), out to the caller's array as
 * {i, j}, a chunk of pairs per task. */
typedef struct pair_copy {
    const uint64_t *sorted;
    uint32_t *out;
    size_t total;
    int shift;
} pair_copy;

#define PAIR_COPY_CHUNK 65536u

static void copy_pairs_task(void *arg, uint32_t task)
{
    const pair_copy *c = arg;
    size_t begin = (size_t)task * PAIR_COPY_CHUNK;
    size_t end = c->total - begin < PAIR_COPY_CHUNK ? c->total : begin + PAIR_COPY_CHUNK;
    for (size_t k = begin; k < end; ++k)
        pleat_pair_unpack(c->sorted[k], c->shift, c->out + 2 * k);
}

static pleat_status list_pairs(pleat_cpu *cpu, pleat_frame *f, pleat_job *job, double *mark)
{
    pleat_status s = sweep(cpu, f, PLEAT_SWEEP_COUNT, job, mark);
    if (s != PLEAT_OK)
        return s;
    if ((s = pleat_pairs_fit(job, job->stats.pairs)) != PLEAT_OK)
        return s;
    size_t total = job->num_pairs;
    s = pleat_buffer_reserve(&cpu->list_a, total, sizeof(uint64_t));
    if (s == PLEAT_OK)
        s = pleat_buffer_reserve(&cpu->list_b, total, sizeof(uint64_t));
    if (s == PLEAT_OK) /* more pairs than particles may take more parts */
        s = pleat_buffer_reserve(&cpu->radix, 1,
                                 pleat_radix_scratch(total, pleat_pool_threads(cpu->pool)));
    if (s != PLEAT_OK)
        return s;
    /* each part writes from the sum of the counts before it */
    uint64_t offset = 0;
    for (uint32_t p = 0; p < f->parts; ++p) {
        uint64_t n = f->chunks[p].pairs;
        f->chunks[p].pairs = offset;
        offset += n;
    }
    f->list = cpu->list_a.data;
    f->pair_shift = pleat_pair_shift(f->count);
    f->max_tests = 0; /* the count made the same tests, within the limit */
    if ((s = sweep(cpu, f, PLEAT_SWEEP_LIST, job, mark)) != PLEAT_OK)
        return s;
    pair_copy copy = {pleat_radix_sort(cpu->pool, cpu->list_a.data, cpu->list_b.data, total, 0,
                                       2 * f->pair_shift, cpu->radix.data),
                      job->pairs, total, f->pair_shift};
    pleat_pool_run(cpu->pool, (uint32_t)((total + PAIR_COPY_CHUNK - 1) / PAIR_COPY_CHUNK),
                   copy_pairs_task, &copy);
    pleat_lap(job->profile, mark, &job->timings.apply_ms);
    return PLEAT_OK;
}

static pleat_status cpu_run(void *impl, pleat_job *job)
{
    pleat_cpu *cpu = impl;
    pleat_frame f = {0};
    double mark = job->profile ? pleat_now_ms() : 0.0;
    pleat_status s = prepare(cpu, &f, job, &mark);
    if (s != PLEAT_OK)
        return s;
    job->stats.pairs = job->stats.tests = 0;
    job->num_pairs = 0;
    if (f.m == 0)
        return PLEAT_OK;
    switch (job->kind) {
    case PLEAT_JOB_COLLIDE:
        return collide(cpu, &f, job, &mark);
    case PLEAT_JOB_COUNT_PAIRS:
        s = sweep(cpu, &f, PLEAT_SWEEP_COUNT, job, &mark);
        return s == PLEAT_OK ? pleat_pairs_fit(job, job->stats.pairs) : s;
    case PLEAT_JOB_LIST_PAIRS:
        return list_pairs(cpu, &f, job, &mark);
    }
    return PLEAT_ERROR_INVALID_ARGUMENT;
}

static void cpu_destroy(void *impl)
{
    pleat_cpu *cpu = impl;
    if (!cpu)
        return;
    pleat_pool_destroy(cpu->pool);
    pleat_buffer *bufs[] = {&cpu->seen,  &cpu->chunks, &cpu->radix,  &cpu->sort_a, &cpu->sort_b,
                            &cpu->pos,   &cpu->rest, &cpu->acc_xy, &cpu->list_a, &cpu->list_b};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; ++i)
        pleat_buffer_free(bufs[i]);
    for (size_t p = 0; p < PLEAT_MAX_CPU_THREADS; ++p)
        pleat_cpu_part_free(&cpu->part[p]);
    pleat_free(cpu);
}

const pleat_backend_ops pleat_cpu_ops = {cpu_run, cpu_destroy, NULL, NULL};

pleat_status pleat_cpu_create(const pleat_context_desc *desc, void **impl, char *describe,
                              size_t describe_size)
{
    int threads = desc->cpu_threads;
    const pleat_kernels *kern;
    pleat_status s = pleat_isa_select(&kern);
    if (s != PLEAT_OK)
        return s;
    pleat_cpu *cpu = pleat_calloc(1, sizeof *cpu);
    if (!cpu)
        return PLEAT_ERROR_OUT_OF_MEMORY;
    cpu->kern = kern;
    cpu->column_order = 1;
    int jobs = desc->enqueue_tasks != NULL;
    /* read once, and only where needed: it reads the cgroup's files */
    int cores = !threads || !jobs ? pleat_usable_cores() : threads;
    if (!threads)
        threads = cores < PLEAT_MAX_CPU_THREADS ? cores : PLEAT_MAX_CPU_THREADS;
    cpu->pool = jobs ? pleat_pool_create_jobs(threads, desc->enqueue_tasks, desc->finish_tasks,
                                              desc->job_context)
                     : pleat_pool_create(threads, cores);
    if (!cpu->pool) {
        pleat_free(cpu);
        return PLEAT_ERROR_OUT_OF_MEMORY;
    }
    snprintf(describe, describe_size, "cpu %s, %d thread%s%s", kern->name, threads,
             threads == 1 ? "" : "s", jobs ? " of the application's job system" : "");
    *impl = cpu;
    return PLEAT_OK;
}
