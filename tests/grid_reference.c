#include "grid_reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define AXIS_BITS 21
#define AXIS_CELLS (1u << AXIS_BITS)

typedef struct entry {
    uint64_t key; /* cx | cy << 21 | cz << 42 */
    uint32_t id;
} entry;

typedef struct pair_list {
    uint64_t *v;
    size_t n, cap;
    int failed;
} pair_list;

static void push(pair_list *l, uint32_t i, uint32_t j)
{
    if (l->failed)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 1024;
        uint64_t *v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->failed = 1;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = i < j ? (uint64_t)i << 32 | j : (uint64_t)j << 32 | i;
}

static uint64_t key_at(const unsigned char *item)
{
    uint64_t key;
    memcpy(&key, item, sizeof key);
    return key;
}

/* LSD radix sort, 16-bit digits, stable, of n items of `size` bytes that each
 * begin with a uint64 key, by the key's bits [0, bits); 0 when out of memory.
 * Sorts the cell entries and the pair list alike. */
static int sort_by_key(void *items, size_t n, size_t size, int bits)
{
    unsigned char *tmp = malloc(n * size);
    size_t *count = malloc(65536 * sizeof *count);
    if (!tmp || !count) {
        free(tmp);
        free(count);
        return 0;
    }
    unsigned char *src = items, *dst = tmp;
    for (int shift = 0; shift < bits; shift += 16) {
        memset(count, 0, 65536 * sizeof *count);
        for (size_t k = 0; k < n; ++k)
            count[(key_at(src + k * size) >> shift) & 0xffff]++;
        size_t sum = 0;
        for (size_t b = 0; b < 65536; ++b) {
            size_t c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (size_t k = 0; k < n; ++k)
            memcpy(dst + count[(key_at(src + k * size) >> shift) & 0xffff]++ * size,
                   src + k * size, size);
        unsigned char *t = src;
        src = dst;
        dst = t;
    }
    if (src != (unsigned char *)items)
        memcpy(items, src, n * size);
    free(tmp);
    free(count);
    return 1;
}

/* The contract's predicates, written out (volatile-free: the build passes
 * -ffp-contract=off, so no product is fused into an add). */
static float length2(const float *a, const float *b)
{
    float dx = b[0] - a[0], dy = b[1] - a[1], dz = b[2] - a[2];
    return (dx * dx + dy * dy) + dz * dz;
}

static void test_pair(pair_list *out, const float *pos, size_t stride, const entry *e, size_t a,
                      size_t b, float d2, int with_rest)
{
    const float *pa = pos + stride * a, *pb = pos + stride * b;
    /* the contract orders the difference as x_j - x_i with i < j; the square
     * is the same either way (negation is exact) */
    if (!(length2(pa, pb) <= d2))
        return;
    if (with_rest && length2(pa + 3, pb + 3) < d2)
        return;
    push(out, e[a].id, e[b].id);
}

/* The cells' width for distance: a pair that passes the float predicate is
 * at most about max(d, 2^-60) apart in real numbers (2^-60 covers squares
 * that underflow to zero), so cells of that size plus a margin never split
 * a colliding pair by more than one cell. 0 when the taking-part
 * particles' box (its low corner into lo) spans AXIS_CELLS - 2 cells or
 * more on an axis. */
static double cell_size(const float *particles, const uint32_t *indices, size_t m,
                        float distance, double lo[3])
{
    double reach = distance > 0x1p-60f ? (double)distance : 0x1p-60;
    double cell = reach * (1.0 + 0x1p-10);
    double hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    lo[0] = lo[1] = lo[2] = INFINITY;
    for (size_t s = 0; s < m; ++s) {
        const float *p = particles + 4 * (size_t)(indices ? indices[s] : s);
        for (int a = 0; a < 3; ++a) {
            lo[a] = p[a] < lo[a] ? p[a] : lo[a];
            hi[a] = p[a] > hi[a] ? p[a] : hi[a];
        }
    }
    for (int a = 0; a < 3; ++a)
        if ((hi[a] - lo[a]) / cell >= (double)(AXIS_CELLS - 2))
            return 0.0;
    return cell;
}

/* The taking-part particles with their cells' keys, sorted by key; NULL
 * when memory runs out. */
static entry *keyed(const float *particles, const uint32_t *indices, size_t m,
                    const double lo[3], double cell)
{
    entry *e = malloc(m * sizeof *e);
    if (!e)
        return NULL;
    for (size_t s = 0; s < m; ++s) {
        uint32_t id = indices ? indices[s] : (uint32_t)s;
        const float *p = particles + 4 * (size_t)id;
        uint64_t key = 0;
        for (int a = 0; a < 3; ++a) {
            /* +1: a neighbour at -1 stays representable */
            uint64_t c = (uint64_t)floor(((double)p[a] - lo[a]) / cell) + 1;
            key |= c << (AXIS_BITS * a);
        }
        e[s].key = key;
        e[s].id = id;
    }
    if (!sort_by_key(e, m, sizeof *e, 64)) {
        free(e);
        return NULL;
    }
    return e;
}

/* Positions, and rest positions after them when there are any (stride
 * floats a particle), in cell order: the walk reads neighbours
 * contiguously. NULL when memory runs out. */
static float *in_cell_order(const float *particles, const float *rest, const entry *e, size_t m,
                            size_t stride)
{
    float *pos = malloc(m * stride * sizeof *pos);
    if (!pos)
        return NULL;
    for (size_t s = 0; s < m; ++s) {
        const float *p = particles + 4 * (size_t)e[s].id;
        float *q = pos + stride * s;
        q[0] = p[0];
        q[1] = p[1];
        q[2] = p[2];
        if (rest) {
            const float *r = rest + 4 * (size_t)e[s].id;
            q[3] = r[0];
            q[4] = r[1];
            q[5] = r[2];
        }
    }
    return pos;
}

/* Tests every pair of particles in one cell or in neighbouring cells, once.
 * Each cell meets its 26 neighbours once: the cell after it in its own row
 * (x + 1) and the three cells x - 1 .. x + 1 of the 4 rows that come after
 * its row in key order, (y + 1, z), (y - 1, z + 1), (y, z + 1),
 * (y + 1, z + 1). Keys order cells by (z, y, x), so the first key of such a
 * neighbour row only grows as the cells are walked in order: one forward
 * cursor per row finds it. */
static void walk_cells(const entry *e, size_t m, const float *pos, size_t stride, float d2,
                       int has_rest, pair_list *out)
{
    static const int rows[4][2] = {{1, 0}, {-1, 1}, {0, 1}, {1, 1}}; /* (dy, dz) */
    size_t cursor[4] = {0, 0, 0, 0};
    for (size_t s = 0; s < m;) {
        size_t end = s + 1;
        while (end < m && e[end].key == e[s].key)
            ++end;
        const uint64_t key = e[s].key;
        /* the same cell, then x + 1 (the next run when it exists) */
        for (size_t a = s; a < end; ++a)
            for (size_t b = a + 1; b < m && e[b].key <= key + 1; ++b)
                test_pair(out, pos, stride, e, a, b, d2, has_rest);
        for (int r = 0; r < 4; ++r) {
            /* cell coordinates are >= 1, so y - 1 never wraps */
            uint64_t row = key + ((uint64_t)(int64_t)rows[r][0] << AXIS_BITS) +
                           ((uint64_t)rows[r][1] << (2 * AXIS_BITS));
            uint64_t lo = row - 1, hi = row + 1;
            size_t b = cursor[r];
            while (b < m && e[b].key < lo)
                ++b;
            cursor[r] = b;
            for (; b < m && e[b].key <= hi; ++b)
                for (size_t a = s; a < end; ++a)
                    test_pair(out, pos, stride, e, a, b, d2, has_rest);
        }
        s = end;
    }
}

/* The pairs found, sorted, as 2 uint32 each (out's list freed); NULL with
 * *num = 0 when there are none, with *num = SIZE_MAX when memory ran out
 * (here or before, out->failed). */
static uint32_t *sorted_pairs(pair_list *out, size_t *num)
{
    uint32_t *pairs = NULL;
    int ok = !out->failed && (out->n == 0 || sort_by_key(out->v, out->n, sizeof *out->v, 64));
    if (ok && out->n > 0) {
        pairs = malloc(out->n * 2 * sizeof *pairs);
        ok = pairs != NULL;
        for (size_t k = 0; pairs && k < out->n; ++k) {
            pairs[2 * k] = (uint32_t)(out->v[k] >> 32);
            pairs[2 * k + 1] = (uint32_t)out->v[k];
        }
    }
    *num = ok ? out->n : SIZE_MAX;
    free(out->v);
    return pairs;
}

uint32_t *grid_reference_pairs(const float *particles, uint32_t count, const uint32_t *indices,
                               uint32_t num_indices, const float *rest, float distance,
                               size_t *num)
{
    *num = 0;
    size_t m = indices ? num_indices : count;
    if (distance == 0.0f || m < 2)
        return NULL;
    double lo[3], cell = cell_size(particles, indices, m, distance, lo);
    if (cell == 0.0) {
        *num = SIZE_MAX;
        return NULL;
    }
    const size_t stride = rest ? 6 : 3;
    entry *e = keyed(particles, indices, m, lo, cell);
    float *pos = e ? in_cell_order(particles, rest, e, m, stride) : NULL;
    pair_list out = {0};
    if (pos)
        walk_cells(e, m, pos, stride, distance * distance, rest != NULL, &out);
    else
        out.failed = 1;
    free(pos);
    free(e);
    return sorted_pairs(&out, num);
}
