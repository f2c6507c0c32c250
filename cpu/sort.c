/* Each pass: every part (one per thread) counts its digits, the counts are
 * turned into per-part bucket offsets in (bucket, part) order, and every part
 * scatters its keys. One counting pass over the keys finds the digits that
 * vary; its per-part counts stay valid until a pass moves keys between parts,
 * so after the first pass a split sort counts the next digit again (a single
 * part never needs to). */
#include "sort.h"

#include <string.h>

/* 11-bit digits: 3 passes for the 32-bit grid keys instead of 4 with 8-bit
 * ones, and the 2048 buckets' write fronts still fit in L1/L2. */
#define DIGIT_BITS 11
#define BUCKETS (1 << DIGIT_BITS)
#define DIGITS ((64 + DIGIT_BITS - 1) / DIGIT_BITS)

typedef size_t histogram[DIGITS][BUCKETS];

typedef struct sort_job {
    const uint64_t *src;
    uint64_t *dst;
    size_t n;
    uint32_t parts;
    int lo_bit;      /* where digit 0 starts */
    uint64_t mask[DIGITS]; /* of each digit's bits: the last may be narrower */
    int first, last; /* digits [first, last) are counted */
    int digit;       /* scattered */
    histogram *hist; /* one per part; becomes offsets for the current digit */
} sort_job;

static size_t part_begin(const sort_job *job, uint32_t part)
{
    return (size_t)((uint64_t)job->n * part / job->parts);
}

/* Counts `digits` digits from job->first of keys [begin, end) into h; inlined
 * with a constant count, its loop over the digits unrolls. */
static inline void count_digits(const sort_job *job, histogram *h, size_t begin, size_t end,
                                int digits)
{
    int shift[DIGITS];
    uint64_t mask[DIGITS];
    for (int q = 0; q < digits; ++q) {
        shift[q] = job->lo_bit + DIGIT_BITS * (job->first + q);
        mask[q] = job->mask[job->first + q];
    }
    size_t *count = (*h)[job->first];
    for (size_t i = begin; i < end; ++i) {
        uint64_t k = job->src[i];
        for (int q = 0; q < digits; ++q)
            count[q * BUCKETS + ((k >> shift[q]) & mask[q])]++;
    }
}

static void count_task(void *arg, uint32_t part)
{
    const sort_job *job = arg;
    histogram *h = &job->hist[part];
    int digits = job->last - job->first;
    memset((*h)[job->first], 0, (size_t)digits * sizeof(*h)[0]);
    size_t begin = part_begin(job, part), end = part_begin(job, part + 1);
    if (digits == 3) /* the grid keys' first count */
        count_digits(job, h, begin, end, 3);
    else if (digits == 1) /* a split sort's recount */
        count_digits(job, h, begin, end, 1);
    else
        count_digits(job, h, begin, end, digits);
}

static void scatter_task(void *arg, uint32_t part)
{
    const sort_job *job = arg;
    size_t *offset = job->hist[part][job->digit];
    int shift = job->lo_bit + DIGIT_BITS * job->digit;
    uint64_t mask = job->mask[job->digit];
    size_t end = part_begin(job, part + 1);
    for (size_t i = part_begin(job, part); i < end; ++i) {
        uint64_t k = job->src[i];
        job->dst[offset[(k >> shift) & mask]++] = k;
    }
}

size_t pleat_radix_scratch(int threads)
{
    return (size_t)threads * sizeof(histogram);
}

/* Turns digit d's counts into offsets; 0 when one bucket holds every key. */
static int offsets(sort_job *job, int d)
{
    size_t sum = 0;
    for (int b = 0; b < BUCKETS; ++b) {
        size_t bucket = 0;
        for (uint32_t p = 0; p < job->parts; ++p)
            bucket += job->hist[p][d][b];
        if (bucket == job->n)
            return 0;
        for (uint32_t p = 0; p < job->parts; ++p) {
            size_t c = job->hist[p][d][b];
            job->hist[p][d][b] = sum;
            sum += c;
        }
    }
    return 1;
}

uint64_t *pleat_radix_sort(pleat_pool *pool, uint64_t *keys, uint64_t *tmp, size_t n, int lo_bit,
                           int hi_bit, void *scratch)
{
    /* small inputs are not worth waking the workers */
    uint32_t parts = n < 65536 ? 1 : (uint32_t)pleat_pool_threads(pool);
    int digits = (hi_bit - lo_bit + DIGIT_BITS - 1) / DIGIT_BITS;
    sort_job job = {keys, tmp, n, parts, lo_bit, {0}, 0, digits, 0, scratch};
    if (n == 0)
        return keys;
    for (int d = 0; d < digits; ++d) {
        int bits = hi_bit - lo_bit - DIGIT_BITS * d;
        job.mask[d] = bits < DIGIT_BITS ? ((uint64_t)1 << bits) - 1 : BUCKETS - 1;
    }
    pleat_pool_run(pool, parts, count_task, &job);
    uint64_t *src = keys, *dst = tmp;
    int moved = 0; /* keys moved between parts since they were counted */
    for (int d = 0; d < digits; ++d) {
        if (moved && parts > 1) {
            job.src = src;
            job.first = d;
            job.last = d + 1;
            pleat_pool_run(pool, parts, count_task, &job);
        }
        if (!offsets(&job, d))
            continue; /* every key has this digit: order unchanged */
        job.src = src;
        job.dst = dst;
        job.digit = d;
        pleat_pool_run(pool, parts, scatter_task, &job);
        uint64_t *t = src;
        src = dst;
        dst = t;
        moved = 1;
    }
    return src;
}
