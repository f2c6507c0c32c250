#include "baseline.h"

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct bench_baseline {
    uint32_t *bucket;  /* per particle: its cell (dense) or hash bucket */
    uint32_t *start;   /* per bucket + 1: first slot of the bucket */
    uint32_t *cursor;  /* per bucket: scatter cursor, then (hashed) visit stamp */
    uint32_t *order;   /* per slot: the particle's index */
    float *pos;        /* per slot: the particle, 4 floats, sorted by bucket */
    float *delta;      /* per slot: summed correction, 3 floats */
    size_t cap_n, cap_buckets;
};

bench_baseline *bench_baseline_create(void)
{
    return calloc(1, sizeof(bench_baseline));
}

void bench_baseline_destroy(bench_baseline *b)
{
    if (!b)
        return;
    free(b->bucket);
    free(b->start);
    free(b->cursor);
    free(b->order);
    free(b->pos);
    free(b->delta);
    free(b);
}

static int grow(void **p, size_t count, size_t size)
{
    void *q = realloc(*p, count * size);
    if (!q)
        return -1;
    *p = q;
    return 0;
}

static int reserve(bench_baseline *b, size_t n, size_t buckets)
{
    if (n > b->cap_n) {
        if (grow((void **)&b->bucket, n, sizeof(uint32_t)) ||
            grow((void **)&b->order, n, sizeof(uint32_t)) ||
            grow((void **)&b->pos, n, 4 * sizeof(float)) ||
            grow((void **)&b->delta, n, 3 * sizeof(float)))
            return -1;
        b->cap_n = n;
    }
    if (buckets > b->cap_buckets) {
        if (grow((void **)&b->start, buckets + 1, sizeof(uint32_t)) ||
            grow((void **)&b->cursor, buckets, sizeof(uint32_t)))
            return -1;
        b->cap_buckets = buckets;
    }
    return 0;
}

/* The grid: cells of side 1 / inv_cell from lo, dims[a] cells per axis.
 * Cell (x, y, z) goes to bucket (x + y * mul[1] + z * mul[2]) mod buckets:
 * with mul = {1, dims[0], dims[0] * dims[1]} and as many buckets as cells
 * that is a dense grid; when the box holds too many cells for that, the same
 * index is wrapped modulo a prime number of buckets (a hashed grid whose
 * neighbouring cells along x stay in neighbouring buckets). */
typedef struct grid {
    double lo[3], inv_cell;
    int64_t dims[3];
    uint64_t mul[3], buckets;
    int hashed;
} grid;

static void cell_of(const grid *g, const float *p, int64_t c[3])
{
    for (int a = 0; a < 3; ++a) {
        int64_t v = (int64_t)(((double)p[a] - g->lo[a]) * g->inv_cell);
        c[a] = v < 0 ? 0 : v >= g->dims[a] ? g->dims[a] - 1 : v;
    }
}

static uint64_t bucket_of(const grid *g, const int64_t c[3])
{
    uint64_t m = g->buckets, h = 0;
    for (int a = 0; a < 3; ++a) /* each term below 2^32 * 2^32 */
        h += ((uint64_t)c[a] % m) * g->mul[a] % m;
    return h % m;
}

static uint64_t next_prime(uint64_t v)
{
    for (;; ++v) {
        int prime = v > 1;
        for (uint64_t d = 2; prime && d * d <= v; ++d)
            prime = v % d != 0;
        if (prime)
            return v;
    }
}

uint64_t bench_pair_term(uint32_t i, uint32_t j)
{
    /* splitmix64's finaliser of (min, max) */
    uint64_t x = i < j ? (uint64_t)i << 32 | j : (uint64_t)j << 32 | i;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* The grid around the n particles: cells a hair wider than the distance,
 * so a pair within the distance is always in the same or a neighbouring
 * cell despite rounding; dense where the box holds few enough cells. */
static grid grid_around(const float *particles, size_t n, float distance)
{
    grid g;
    double hi[3];
    for (int a = 0; a < 3; ++a)
        g.lo[a] = hi[a] = particles[a];
    for (size_t i = 1; i < n; ++i)
        for (int a = 0; a < 3; ++a) {
            double v = particles[4 * i + a];
            g.lo[a] = v < g.lo[a] ? v : g.lo[a];
            hi[a] = v > hi[a] ? v : hi[a];
        }
    double cell = (double)distance * (1.0 + 0x1p-10), widest = 0.0;
    for (int a = 0; a < 3; ++a)
        widest = hi[a] - g.lo[a] > widest ? hi[a] - g.lo[a] : widest;
    if (widest / cell > 0x1p30) /* keep cell coordinates small */
        cell = widest * 0x1p-30;
    g.inv_cell = 1.0 / cell;
    double cells = 1.0;
    for (int a = 0; a < 3; ++a) {
        g.dims[a] = (int64_t)((hi[a] - g.lo[a]) * g.inv_cell) + 1;
        cells *= (double)g.dims[a];
    }
    size_t dense_limit = 4 * n > 4096 ? 4 * n : 4096;
    g.hashed = cells > (double)dense_limit;
    g.buckets = g.hashed ? next_prime(2 * (uint64_t)n) : (uint64_t)cells;
    g.mul[0] = 1;
    g.mul[1] = (uint64_t)g.dims[0] % g.buckets;
    g.mul[2] = g.mul[1] * ((uint64_t)g.dims[1] % g.buckets) % g.buckets;
    return g;
}

/* Bucket offsets of the 27 neighbour cells, modulo the bucket count. */
static void neighbour_offsets(const grid *g, uint64_t offset[27])
{
    for (int k = 0; k < 27; ++k) {
        int64_t d[3] = {k % 3 - 1, k / 3 % 3 - 1, k / 9 - 1};
        uint64_t o = 0;
        for (int a = 0; a < 3; ++a)
            o += d[a] < 0 ? g->buckets - g->mul[a] : d[a] > 0 ? g->mul[a] : 0;
        offset[k] = o % g->buckets;
    }
}

/* Count sort of the particles into their buckets: b->pos and b->order by
 * slot, b->start per bucket; b->delta zeroed. */
static void bin_particles(bench_baseline *b, const grid *g, const float *particles, size_t n)
{
    size_t buckets = (size_t)g->buckets;
    memset(b->start, 0, (buckets + 1) * sizeof(uint32_t));
    for (size_t i = 0; i < n; ++i) {
        int64_t c[3];
        cell_of(g, particles + 4 * i, c);
        b->bucket[i] = (uint32_t)bucket_of(g, c);
        b->start[b->bucket[i] + 1]++;
    }
    for (size_t k = 0; k < buckets; ++k)
        b->start[k + 1] += b->start[k];
    memcpy(b->cursor, b->start, buckets * sizeof(uint32_t));
    for (size_t i = 0; i < n; ++i) {
        uint32_t s = b->cursor[b->bucket[i]]++;
        b->order[s] = (uint32_t)i;
        memcpy(b->pos + 4 * (size_t)s, particles + 4 * i, 4 * sizeof(float));
    }
    if (g->hashed) /* cursor becomes the per-bucket visit stamp */
        memset(b->cursor, 0xff, buckets * sizeof(uint32_t));
    memset(b->delta, 0, n * 3 * sizeof(float));
}

/* A sweep's settings and what it adds up. */
typedef struct sweep {
    const float *rest;
    float distance, stiffness;
    uint64_t pairs, tests;
    uint64_t *digest; /* NULL: not asked for */
} sweep;

/* Tests slot s against the slots [t, end) after it in one bucket, and sums
 * each colliding pair's corrections into b->delta. */
static void test_slots(bench_baseline *b, sweep *w, size_t s, size_t t, size_t end)
{
    const float *pi = b->pos + 4 * s;
    const float d2max = w->distance * w->distance;
    for (; t < end; ++t) {
        const float *pj = b->pos + 4 * t;
        float ex = pj[0] - pi[0], ey = pj[1] - pi[1], ez = pj[2] - pi[2];
        float d2 = ex * ex + ey * ey + ez * ez;
        ++w->tests;
        if (!(d2 <= d2max))
            continue;
        if (w->rest) {
            const float *ri = w->rest + 4 * (size_t)b->order[s];
            const float *rj = w->rest + 4 * (size_t)b->order[t];
            float rx = rj[0] - ri[0], ry = rj[1] - ri[1], rz = rj[2] - ri[2];
            if (rx * rx + ry * ry + rz * rz < d2max)
                continue;
        }
        ++w->pairs;
        if (w->digest)
            *w->digest += bench_pair_term(b->order[s], b->order[t]);
        float len = sqrtf(d2);
        if (!(len > 0.0f))
            continue; /* coincident: no direction, not moved */
        /* pleat.h: delta = s / (w_i + w_j + eps) * (L - d) * diff / L */
        float wi = pi[3], wj = pj[3];
        float f = w->stiffness / (wi + wj + FLT_EPSILON) * (len - w->distance) / len;
        float e[3] = {ex * f, ey * f, ez * f};
        for (int a = 0; a < 3; ++a) {
            b->delta[3 * s + a] += wi * e[a];
            b->delta[3 * t + a] -= wj * e[a];
        }
    }
}

/* Tests the particle in slot s of bucket home against the particles after
 * it (in slot order) in the 27 cells around its own, so each pair is met
 * once. */
static void test_neighbours(bench_baseline *b, const grid *g, const uint64_t offset[27],
                            uint64_t home, size_t s, sweep *w)
{
    int64_t c[3];
    cell_of(g, b->pos + 4 * s, c);
    for (int k = 0; k < 27; ++k) {
        int64_t nc[3] = {c[0] + k % 3 - 1, c[1] + k / 3 % 3 - 1, c[2] + k / 9 - 1};
        if (nc[0] < 0 || nc[1] < 0 || nc[2] < 0 || nc[0] >= g->dims[0] || nc[1] >= g->dims[1] ||
            nc[2] >= g->dims[2])
            continue;
        uint64_t bk = home + offset[k];
        bk = bk >= g->buckets ? bk - g->buckets : bk;
        if (g->hashed) { /* two cells may share a bucket: visit it once */
            if (b->cursor[bk] == (uint32_t)s)
                continue;
            b->cursor[bk] = (uint32_t)s;
        }
        size_t t = b->start[bk], end = b->start[bk + 1];
        test_slots(b, w, s, t <= s ? s + 1 : t, end);
    }
}

int bench_baseline_run(bench_baseline *b, float *particles, uint32_t count, const float *rest,
                       float distance, float stiffness, bench_baseline_stats *stats,
                       uint64_t *digest)
{
    stats->pairs = stats->tests = stats->cells = 0;
    if (digest)
        *digest = 0;
    stats->hashed = 0;
    if (count < 2 || distance == 0.0f)
        return 0;
    size_t n = count;
    grid g = grid_around(particles, n, distance);
    if (reserve(b, n, (size_t)g.buckets))
        return -1;
    stats->cells = g.buckets;
    stats->hashed = g.hashed;
    uint64_t offset[27];
    neighbour_offsets(&g, offset);
    bin_particles(b, &g, particles, n);

    sweep w = {rest, distance, stiffness, 0, 0, digest};
    for (uint64_t home = 0; home < g.buckets; ++home)
        for (size_t s = b->start[home]; s < b->start[home + 1]; ++s)
            test_neighbours(b, &g, offset, home, s, &w);

    /* Jacobi: every correction was computed from the start positions. */
    for (size_t s = 0; s < n; ++s) {
        float *p = particles + 4 * (size_t)b->order[s];
        for (int a = 0; a < 3; ++a)
            p[a] += b->delta[3 * s + a];
    }
    stats->pairs = w.pairs;
    stats->tests = w.tests;
    return 0;
}
