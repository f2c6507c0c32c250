/*
 * The per-pair arithmetic (narrow phase, correction, fixed-point sums and the
 * final apply), shared by every CPU kernel variant and the CUDA kernels. The
 * promise "same bits everywhere" rests on this file: each operation is a
 * single IEEE-rounded float or double operation, in a fixed order, with no
 * contraction into FMA (the build passes -ffp-contract=off / -fmad=false).
 *
 * Correction of a colliding pair: pleat.h's formula (NvCloth writes it
 * with (1 - d / L) * diff), computed from (L - d) and diff / L, so that a
 * tiny L next to a huge distance cannot overflow into Inf * 0 = NaN, and
 * from factors that each stay in range (details at pleat_pair_correction).
 *
 * Fixed point: corrections are summed per particle in int64 units of quantum
 * = 2^(e - 30), where distance lies in [2^(e-1), 2^e): e >= -62, as the
 * distance's square is a normal float (core/collide.c), so 1 / quantum is a
 * float. One correction is at most the distance, below 2^30 quanta (a few
 * hundred more after rounding), and converts through int32, in range with
 * room to spare: SIMD units have that conversion, not the one to int64, and
 * out of range it would differ by target.
 */
#ifndef PLEAT_CORE_PAIR_H
#define PLEAT_CORE_PAIR_H

#include "hd.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct pleat_pair_consts {
    float distance;
    float distance2;   /* distance * distance, finite */
    float stiffness;
    float inv_quantum; /* 2^(30 - e) */
    double quantum;    /* 2^(e - 30) */
} pleat_pair_consts;

PLEAT_HD pleat_pair_consts pleat_pair_setup(float distance, float stiffness)
{
    pleat_pair_consts k;
    int e;
    frexpf(distance, &e); /* 0 for a distance of 0 */
    k.distance = distance;
    k.distance2 = distance * distance;
    k.stiffness = stiffness;
    k.inv_quantum = ldexpf(1.0f, 30 - e);
    k.quantum = ldexp(1.0, e - 30);
    return k;
}

PLEAT_HD float pleat_length2(float dx, float dy, float dz)
{
    return dx * dx + dy * dy + dz * dz;
}

/* The narrow-phase test, in two halves so the rest pose is read only for
 * pairs that are close now. d2 = pleat_length2(x_j - x_i). */
PLEAT_HD int pleat_pair_within(float d2, const pleat_pair_consts *k)
{
    return d2 <= k->distance2;
}

/* rest2 = pleat_length2(r_j - r_i): pairs this close at rest never collide. */
PLEAT_HD int pleat_pair_rest_ignored(float rest2, const pleat_pair_consts *k)
{
    return rest2 < k->distance2;
}

/* 2^e for e in [-126, 127], built from its bits. */
PLEAT_HD float pleat_exp2i(int e)
{
    uint32_t bits = (uint32_t)(e + 127) << 23;
    float r;
    memcpy(&r, &bits, sizeof r);
    return r;
}

/* x * 2^e, exact while the result is a normal float. The multiply covers
 * every exponent but the extreme ones, where ldexpf (a libm call) gives the
 * same result. */
PLEAT_HD float pleat_scale2(float x, int e)
{
    return e >= -126 && e <= 127 ? x * pleat_exp2i(e) : ldexpf(x, e);
}

/* Fixed-point corrections of a colliding pair: x_i gets +ci, x_j gets -cj.
 * Coincident particles (diff exactly zero) get zero.
 *
 * diff is first scaled by a power of two (exact) so its largest component u
 * lies in [1/4, 1/2): length and direction stay accurate even where |diff|^2
 * would be subnormal, and with l = |u| < 1, L = l * 2^e and the inverse
 * masses halved (h_i = w_i / 2, h = h_i + h_j + FLT_EPSILON / 2):
 *     t = stiffness * (L - distance) / quantum,  r_i = h_i / (h * l)
 *     x_i += (r_i * (t * u)) quanta
 * which is the formula of pleat.h, from factors that stay in range for
 * every finite inverse mass: |t| is the overlap in quanta, at most
 * 2^30 - 64; h, halved, and h * l, with l < 1, stay finite, and h * l is at
 * least 2^-26; r_i is in [0, 1 / l] and |u| <= l, so r_i * (t * u) is at
 * most 2^30 but for rounding. A factor that comes out subnormal stands for
 * less than a quantum, which truncates to 0 all the same. (Dividing the
 * overlap by h * l first, as one factor, made it subnormal beside a huge
 * inverse mass and a small distance: w = 1e36 at distance 1e-9 was not
 * moved.) */
PLEAT_HD void pleat_pair_correction(float dx, float dy, float dz, float wi, float wj,
                                    const pleat_pair_consts *k, int64_t ci[3], int64_t cj[3])
{
    float ax = fabsf(dx), ay = fabsf(dy), az = fabsf(dz);
    float big = ax > ay ? ax : ay;
    big = big > az ? big : az;
    if (big == 0.0f) {
        for (int a = 0; a < 3; ++a)
            ci[a] = cj[a] = 0;
        return;
    }
    uint32_t bits;
    memcpy(&bits, &big, sizeof bits);
    int e = (int)(bits >> 23) - 125; /* big in [2^(e-2), 2^(e-1)) when normal */
    if (e == -125) {                 /* subnormal: ask libm */
        frexpf(big, &e);
        e += 1;
    }
    float u[3] = {pleat_scale2(dx, -e), pleat_scale2(dy, -e), pleat_scale2(dz, -e)};
    float l = sqrtf(pleat_length2(u[0], u[1], u[2]));
    float len = pleat_scale2(l, e);
    float hi = 0.5f * wi, hj = 0.5f * wj;
    float hl = (hi + hj + 0.5f * FLT_EPSILON) * l;
    float ri = hi / hl, rj = hj / hl;
    float t = k->stiffness * (len - k->distance) * k->inv_quantum;
    for (int a = 0; a < 3; ++a) {
        float v = t * u[a];
        ci[a] = (int32_t)(ri * v); /* toward zero, as the kernels */
        cj[a] = (int32_t)(rj * v);
    }
}

/* A coordinate after its summed correction; an untouched coordinate keeps its
 * bits (adding +0.0 would turn -0.0 into +0.0). */
PLEAT_HD float pleat_apply_sum(float x, int64_t sum, const pleat_pair_consts *k)
{
    if (sum == 0)
        return x;
    return (float)((double)x + (double)sum * k->quantum);
}

/* pleat_find_pairs sorts its list as one integer per pair, i << shift | j
 * with i < j, where shift is the bits that hold any particle index below
 * count: a radix sort then runs a pass per digit of 2 * shift bits, fewer
 * than with i << 32 (a 64k cloth's pairs take 3 passes instead of 5). */
PLEAT_HD int pleat_pair_shift(uint32_t count)
{
    int shift = 1;
    while (shift < 32 && ((uint64_t)1 << shift) < count)
        ++shift;
    return shift;
}

PLEAT_HD uint64_t pleat_pair_pack(uint32_t i, uint32_t j, int shift)
{
    return i < j ? (uint64_t)i << shift | j : (uint64_t)j << shift | i;
}

/* A packed pair as the {i, j} of pleat_find_pairs' output. */
PLEAT_HD void pleat_pair_unpack(uint64_t packed, int shift, uint32_t out[2])
{
    out[0] = (uint32_t)(packed >> shift);
    out[1] = (uint32_t)(packed & (((uint64_t)1 << shift) - 1));
}

#endif
