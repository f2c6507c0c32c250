/* Each pass: every part (one per thread) counts its digits, the counts are
 * turned into per-part bucket offsets in (bucket, part) order, and every part
 * scatters its keys. One counting pass over the keys finds the digits that
 * vary; its per-part counts stay valid until a pass moves keys between parts,
 * so after the first pass a split sort counts the next digit again (a single
 * part never needs to).
 *
 * A scatter writes one key at a time at each bucket's write front. When the
 * buckets have equal power-of-two sizes (a 256 x 256 cloth: every sweep cell
 * or column holds the same number of particles) the fronts lie multiples of
 * 4 KiB apart, share one L1 set and evict each other at every write (a
 * 64-bucket pass ran at 5.8 ns per key; with the fronts shifted apart, 1.1).
 * Such a pass, found by counting the fronts per L1 set once its offsets are
 * known, goes through a line-sized buffer per bucket instead, so each
 * destination line is written whole, once. Elsewhere the buffer only costs:
 * forced on for passes whose fronts spread over the sets, the sort was
 * 1.15-1.55x slower. */
#include "sort.h"

#include <string.h>

/* Digits of at most 11 bits: 3 passes for 32-bit keys instead of 4 with
 * 8-bit ones, and the 2048 buckets' write fronts still fit in L1/L2. The
 * bits are spread evenly over the passes: what a pass costs grows with its
 * buckets, so 25 bits go as 9 + 9 + 7, not 11 + 11 + 3 (64k folded-sheet
 * keys: 0.55 against 0.65 ms). Below NARROW_BELOW keys digits of at most 8
 * bits win: clearing and summing 2048 counters per digit costs more than
 * the fourth pass (radix micro-benchmark, 1k cloud keys: 14.5 ns per key
 * with 11 bits, 8.5 with 8). */
#define WIDE_BITS 11
#define NARROW_BITS 8
#define NARROW_BELOW 4096u
#define MAX_DIGITS ((64 + NARROW_BITS - 1) / NARROW_BITS)
/* counters per part: 6 digits x 2048 buckets, which also hold 8 x 256 */
#define PART_COUNTERS (((64 + WIDE_BITS - 1) / WIDE_BITS) << WIDE_BITS)
_Static_assert(MAX_DIGITS << NARROW_BITS <= PART_COUNTERS, "narrow digits fit the counters");
#define MAX_BUCKETS (1u << WIDE_BITS)

/* A cache line of keys. L1_SETS: sets of 64-byte lines in the L1 data cache
 * (64 in every 32 and 48 KiB x86-64 L1); fronts crowd when one set holds
 * more than CROWD beyond 4 times its even share. */
#define LINE_KEYS 8u
#define LINE_BYTES (LINE_KEYS * sizeof(uint64_t))
#define L1_SETS 64u
#define CROWD 8u

/* Past the caches, each line a write front enters is a miss that the
 * hardware prefetchers, with up to 2048 fronts to follow, leave to the
 * store, so the scatter prefetches every front 2 lines ahead (AVX2, 1
 * thread, sort stage: 4M cloud 49.5 -> 35.9 ms, 4M crumpled 62.5 -> 46.4,
 * 1M crumpled 11.4 -> 9.1; 1 or 4 lines ahead no better). Below 2^19 keys
 * it only cost (256k cloud 1.08 -> 1.10 ms, 64k 0.240 -> 0.251). */
#define FRONT_AHEAD (2u * LINE_BYTES)
#define FRONTS_AHEAD_FROM (1u << 19)

/* Per part: counters, then per bucket a line buffer, its next slot and
 * where the part's region of the bucket starts. */
typedef struct part_scratch {
    size_t counters[PART_COUNTERS];
    size_t start[MAX_BUCKETS];
    uint64_t *next[MAX_BUCKETS];
    _Alignas(LINE_BYTES) uint64_t line[MAX_BUCKETS][LINE_KEYS];
} part_scratch;

typedef struct sort_job {
    const uint64_t *src;
    uint64_t *dst;
    size_t n;
    uint32_t parts;
    int lo_bit;      /* where digit 0 starts */
    int bits;        /* per digit (the last may have fewer) */
    uint64_t mask[MAX_DIGITS]; /* of each digit's bits: the last may be narrower */
    int first, last; /* digits [first, last) are counted */
    int digit;       /* scattered */
    int buffered;    /* scatter the digit through line buffers */
    part_scratch *scratch; /* per part; counters become offsets for the current digit */
    size_t *region;        /* per bucket: where its next part's region starts */
} sort_job;

static size_t part_begin(const sort_job *job, uint32_t part)
{
    return (size_t)pleat_share_begin(job->n, part, job->parts);
}

/* Part p's counters of digit d, 1 << bits of them. */
static size_t *counters(const sort_job *job, uint32_t p, int d)
{
    return job->scratch[p].counters + ((size_t)d << job->bits);
}

/* Where digit d starts in a key. */
static int digit_shift(const sort_job *job, int d)
{
    return job->lo_bit + job->bits * d;
}

/* Counts `digits` digits from job->first of keys [begin, end) into count;
 * inlined with a constant, its loop over the digits unrolls. */
static inline void count_digits(const sort_job *job, size_t *count, size_t begin, size_t end,
                                int digits)
{
    int bits = job->bits;
    int shift[MAX_DIGITS];
    uint64_t mask[MAX_DIGITS];
    for (int q = 0; q < digits; ++q) {
        shift[q] = digit_shift(job, job->first + q);
        mask[q] = job->mask[job->first + q];
    }
    for (size_t i = begin; i < end; ++i) {
        uint64_t k = job->src[i];
        for (int q = 0; q < digits; ++q)
            count[((size_t)q << bits) + ((k >> shift[q]) & mask[q])]++;
    }
}

static void count_task(void *arg, uint32_t part)
{
    const sort_job *job = arg;
    size_t *count = counters(job, part, job->first);
    int digits = job->last - job->first;
    memset(count, 0, ((size_t)digits << job->bits) * sizeof *count);
    size_t begin = part_begin(job, part), end = part_begin(job, part + 1);
    /* constant digit counts for the common cases: a whole key of three
     * wide digits, and one digit (a split sort's recount; a column sort of
     * one) */
    if (digits == 3)
        count_digits(job, count, begin, end, 3);
    else if (digits == 1)
        count_digits(job, count, begin, end, 1);
    else
        count_digits(job, count, begin, end, digits);
}

/* Writes dst[q] for q in [from, to) from a bucket's line buffer, whose slot 0
 * is position `first`. */
static void drain(uint64_t *dst, const uint64_t *line, size_t first, size_t from, size_t to)
{
    for (size_t q = from; q < to; ++q)
        dst[q] = line[q - first];
}

/* Of a bucket's line that begins at position `first`: where the region's
 * keys begin (its first line may begin before the region, where another
 * bucket's or part's keys go). `first` may wrap below 0, so the test is on
 * differences. */
static size_t region_from(size_t first, size_t start)
{
    return first + LINE_KEYS - start >= LINE_KEYS ? first : start;
}

/* The scatter through line buffers. Per bucket: `next` is the slot the next
 * key takes, the counter the position of the line's slot 0. A full line is
 * copied whole (or, the region's first, from where the region starts); the
 * last, partial lines are drained key by key. */
static void scatter_buffered(const sort_job *job, uint32_t part, size_t *first, int shift,
                             uint64_t mask)
{
    part_scratch *ps = &job->scratch[part];
    uint64_t *dst = job->dst;
    /* position q sits in slot (q + phase) % LINE_KEYS of its line */
    size_t phase = (size_t)((uintptr_t)dst / sizeof *dst) % LINE_KEYS;
    for (size_t b = 0; b <= mask; ++b) {
        size_t slot = (first[b] + phase) % LINE_KEYS;
        ps->start[b] = first[b];
        first[b] -= slot;
        ps->next[b] = ps->line[b] + slot;
    }
    size_t end = part_begin(job, part + 1);
    for (size_t i = part_begin(job, part); i < end; ++i) {
        uint64_t k = job->src[i];
        size_t b = (size_t)((k >> shift) & mask);
        uint64_t *slot = ps->next[b];
        *slot++ = k;
        ps->next[b] = slot;
        if ((uintptr_t)slot % LINE_BYTES == 0) { /* the line is full */
            size_t from = region_from(first[b], ps->start[b]);
            if (from == first[b]) {
                /* the last key from k: reading the line back across the
                 * 8 bytes just stored would wait for that store (folded
                 * 64k, sort: 0.195 -> 0.184 ms) */
                memcpy(dst + from, ps->line[b], LINE_BYTES - sizeof k);
                dst[from + LINE_KEYS - 1] = k;
            } else
                drain(dst, ps->line[b], first[b], from, first[b] + LINE_KEYS);
            first[b] += LINE_KEYS;
            /* its next line, 8 of its keys from now: written whole, it
             * would wait for the line to come in (folded 4M, sort: 49 ->
             * 45.5 ms; 1M 11.0 -> 10.3) */
            if (first[b] < job->n)
                __builtin_prefetch(dst + first[b], 1);
            ps->next[b] = ps->line[b];
        }
    }
    for (size_t b = 0; b <= mask; ++b) {
        size_t filled = (size_t)(ps->next[b] - ps->line[b]);
        drain(dst, ps->line[b], first[b], region_from(first[b], ps->start[b]), first[b] + filled);
    }
}

static void scatter_task(void *arg, uint32_t part)
{
    const sort_job *job = arg;
    size_t *offset = counters(job, part, job->digit);
    int shift = digit_shift(job, job->digit);
    uint64_t mask = job->mask[job->digit];
    if (job->buffered) {
        scatter_buffered(job, part, offset, shift, mask);
        return;
    }
    size_t end = part_begin(job, part + 1);
    int ahead = job->n >= FRONTS_AHEAD_FROM;
    for (size_t i = part_begin(job, part); i < end; ++i) {
        uint64_t k = job->src[i];
        size_t q = offset[(k >> shift) & mask]++;
        job->dst[q] = k;
        if (ahead) /* the address only: a prefetch never faults */
            __builtin_prefetch((const void *)((uintptr_t)(job->dst + q) + FRONT_AHEAD), 1);
    }
}

/* Small inputs are not worth waking the workers. offsets() is serial and
 * reads every part's counters, so its cost grows with parts x buckets while
 * a part's count and scatter shrink with n / parts: the two balance near
 * parts = sqrt(n / buckets) (1M keys: 22; 4M: 45). Past that, more parts
 * cost more than they share, and each holds 256 KiB of scratch. */
uint32_t pleat_radix_parts(size_t n, int threads)
{
    if (n < 65536)
        return 1;
    uint32_t most = 1;
    while ((size_t)(most + 1) * (most + 1) <= n / MAX_BUCKETS)
        ++most;
    return (uint32_t)threads < most ? (uint32_t)threads : most;
}

size_t pleat_radix_scratch(size_t n, int threads)
{
    /* + the per-bucket regions, + room to align */
    return (size_t)pleat_radix_parts(n, threads) * sizeof(part_scratch) +
           MAX_BUCKETS * sizeof(size_t) + LINE_BYTES;
}

/* Turns digit d's counts into offsets (for job->dst) and decides whether its
 * scatter needs line buffers; 0 when one bucket holds every key. Offsets go
 * in (bucket, part) order, but the loops run part by part: each part's
 * counters then stream in order, where bucket by bucket every read was a
 * part_scratch (a page or more) away from the last, at about 4 ns a read
 * (1M keys, 256 threads: 4 ms per digit, on the caller's thread). */
static int offsets(sort_job *job, int d)
{
    size_t buckets = (size_t)1 << job->bits, *region = job->region;
    memset(region, 0, buckets * sizeof *region);
    for (uint32_t p = 0; p < job->parts; ++p) {
        const size_t *c = counters(job, p, d);
        for (size_t b = 0; b < buckets; ++b)
            region[b] += c[b];
    }
    size_t sum = 0;
    for (size_t b = 0; b < buckets; ++b) {
        size_t total = region[b];
        if (total == job->n)
            return 0;
        region[b] = sum;
        sum += total;
    }
    /* buffers pay for setting up only with a line of keys per bucket */
    int large = job->n >= LINE_KEYS * buckets;
    uint32_t per_set[L1_SETS] = {0}, fronts = 0, most = 0;
    for (uint32_t p = 0; p < job->parts; ++p) {
        size_t *c = counters(job, p, d);
        for (size_t b = 0; b < buckets; ++b) {
            size_t count = c[b];
            c[b] = region[b];
            if (count && large) {
                uint32_t set = (uint32_t)((uintptr_t)(job->dst + region[b]) / LINE_BYTES % L1_SETS);
                ++fronts;
                if (++per_set[set] > most)
                    most = per_set[set];
            }
            region[b] += count;
        }
    }
    job->buffered = most > 4 * fronts / L1_SETS + CROWD;
    return 1;
}

uint64_t *pleat_radix_sort(pleat_pool *pool, uint64_t *keys, uint64_t *tmp, size_t n, int lo_bit,
                           int hi_bit, void *scratch)
{
    uint32_t parts = pleat_radix_parts(n, pleat_pool_threads(pool));
    int most = n < NARROW_BELOW ? NARROW_BITS : WIDE_BITS;
    int digits = (hi_bit - lo_bit + most - 1) / most;
    int bits = (hi_bit - lo_bit + digits - 1) / digits;
    /* the line buffers want whole cache lines */
    uintptr_t aligned = ((uintptr_t)scratch + LINE_BYTES - 1) / LINE_BYTES * LINE_BYTES;
    part_scratch *ps = (part_scratch *)aligned;
    sort_job job = {keys, tmp, n, parts, lo_bit, bits, {0}, 0, digits, 0, 0, ps,
                    (size_t *)(ps + parts)};
    if (n == 0)
        return keys;
    for (int d = 0; d < digits; ++d) {
        int left = hi_bit - lo_bit - bits * d;
        job.mask[d] = ((uint64_t)1 << (left < bits ? left : bits)) - 1;
    }
    pleat_pool_run(pool, parts, count_task, &job);
    uint64_t *src = keys, *dst = tmp;
    int moved = 0; /* keys moved between parts since they were counted */
    for (int d = 0; d < digits; ++d) {
        job.src = src;
        job.dst = dst;
        if (moved && parts > 1) {
            job.first = d;
            job.last = d + 1;
            pleat_pool_run(pool, parts, count_task, &job);
        }
        if (!offsets(&job, d))
            continue; /* every key has this digit: order unchanged */
        job.digit = d;
        pleat_pool_run(pool, parts, scatter_task, &job);
        uint64_t *t = src;
        src = dst;
        dst = t;
        moved = 1;
    }
    return src;
}
