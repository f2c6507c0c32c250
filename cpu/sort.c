#include "sort.h"

#include <string.h>

#define DIGITS 8

uint64_t *pleat_radix_sort(uint64_t *keys, uint64_t *tmp, size_t n, int lo_bit, int hi_bit)
{
    int first = lo_bit / 8, last = hi_bit / 8;
    size_t hist[DIGITS][256];
    memset(hist, 0, sizeof hist);
    for (size_t i = 0; i < n; ++i) {
        uint64_t k = keys[i];
        for (int d = first; d < last; ++d)
            hist[d][(k >> (8 * d)) & 0xff]++;
    }

    uint64_t *src = keys, *dst = tmp;
    for (int d = first; d < last; ++d) {
        size_t *h = hist[d];
        if (n == 0 || h[(src[0] >> (8 * d)) & 0xff] == n)
            continue; /* every key has this digit: order unchanged */
        size_t sum = 0;
        for (int b = 0; b < 256; ++b) {
            size_t c = h[b];
            h[b] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; ++i) {
            uint64_t k = src[i];
            dst[h[(k >> (8 * d)) & 0xff]++] = k;
        }
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    return src;
}
