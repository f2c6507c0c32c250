/*
 * The wide-float layer the CPU kernels are written over. A kernel source is
 * compiled once per ISA with one of PLEAT_ISA_SCALAR, _SSE2, _AVX2, _NEON
 * defined (see CMakeLists.txt); this header maps the same few operations to
 * that ISA. Every float operation here is a single IEEE operation, so a kernel
 * gives the same bits whatever the width.
 *
 * - vf / vu: W floats / W uint32; lane masks are plain bit masks (lane l is
 *   bit l), so kernels test them with ordinary integer code.
 * - q4: 4 floats, one particle {x, y, z, w}, for the AoS stages.
 * Lanes are read and written through memcpy or intrinsics only (DESIGN.md §4:
 * punning through pointers is miscompiled).
 */
#ifndef PLEAT_CPU_SIMD_H
#define PLEAT_CPU_SIMD_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(PLEAT_ISA_AVX2)
#include <immintrin.h>
#define PLEAT_W 8
typedef __m256 vf;
typedef __m256i vu;
static inline vf vf_load(const float *p) { return _mm256_loadu_ps(p); }
static inline vf vf_set1(float x) { return _mm256_set1_ps(x); }
static inline vf vf_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static inline vf vf_add(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf vf_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline unsigned vf_le(vf a, vf b) { return (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_LE_OQ)); }
static inline unsigned vf_lt_mask(vf a, vf b) { return (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_LT_OQ)); }
static inline vu vu_load(const uint32_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
static inline vu vu_set1(uint32_t x) { return _mm256_set1_epi32((int)x); }
/* unsigned a < b: flip the sign bits, compare signed */
static inline unsigned vu_lt(vu a, vu b)
{
    const __m256i flip = _mm256_set1_epi32(INT32_MIN);
    __m256i lt = _mm256_cmpgt_epi32(_mm256_xor_si256(b, flip), _mm256_xor_si256(a, flip));
    return (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(lt));
}
static inline vf vf_max(vf a, vf b) { return _mm256_max_ps(a, b); }
/* base[idx[l]] in lane l (element loads: the gather instruction is slow on
 * CPUs with the GDS microcode fix) */
static inline vf vf_gather(const float *base, const uint32_t *idx)
{
    return _mm256_setr_ps(base[idx[0]], base[idx[1]], base[idx[2]], base[idx[3]], base[idx[4]],
                          base[idx[5]], base[idx[6]], base[idx[7]]);
}
static inline vf vf_abs(vf a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
static inline vf vf_sqrt(vf a) { return _mm256_sqrt_ps(a); }
static inline vf vf_div(vf a, vf b) { return _mm256_div_ps(a, b); }
static inline void vf_store(float *p, vf a) { _mm256_storeu_ps(p, a); }
static inline vu vf_bits(vf a) { return _mm256_castps_si256(a); }
static inline vf vu_as_float(vu a) { return _mm256_castsi256_ps(a); }
static inline vu vu_add(vu a, vu b) { return _mm256_add_epi32(a, b); }
static inline vu vu_sub(vu a, vu b) { return _mm256_sub_epi32(a, b); }
#define vu_srl(a, n) _mm256_srli_epi32((a), (n))
#define vu_sll(a, n) _mm256_slli_epi32((a), (n))
static inline void vu_store(uint32_t *p, vu a) { _mm256_storeu_si256((__m256i *)p, a); }
/* truncation toward zero of values in (-2^31, 2^31), as int32 bits */
static inline vu vf_trunc_i32(vf a) { return _mm256_cvttps_epi32(a); }
#elif defined(PLEAT_ISA_SSE2)
#include <emmintrin.h>
#define PLEAT_W 4
typedef __m128 vf;
typedef __m128i vu;
static inline vf vf_load(const float *p) { return _mm_loadu_ps(p); }
static inline vf vf_set1(float x) { return _mm_set1_ps(x); }
static inline vf vf_sub(vf a, vf b) { return _mm_sub_ps(a, b); }
static inline vf vf_add(vf a, vf b) { return _mm_add_ps(a, b); }
static inline vf vf_mul(vf a, vf b) { return _mm_mul_ps(a, b); }
static inline unsigned vf_le(vf a, vf b) { return (unsigned)_mm_movemask_ps(_mm_cmple_ps(a, b)); }
static inline unsigned vf_lt_mask(vf a, vf b) { return (unsigned)_mm_movemask_ps(_mm_cmplt_ps(a, b)); }
static inline vu vu_load(const uint32_t *p) { return _mm_loadu_si128((const __m128i *)p); }
static inline vu vu_set1(uint32_t x) { return _mm_set1_epi32((int)x); }
static inline unsigned vu_lt(vu a, vu b)
{
    const __m128i flip = _mm_set1_epi32(INT32_MIN);
    __m128i lt = _mm_cmplt_epi32(_mm_xor_si128(a, flip), _mm_xor_si128(b, flip));
    return (unsigned)_mm_movemask_ps(_mm_castsi128_ps(lt));
}
static inline vf vf_max(vf a, vf b) { return _mm_max_ps(a, b); }
static inline vf vf_gather(const float *base, const uint32_t *idx)
{
    return _mm_setr_ps(base[idx[0]], base[idx[1]], base[idx[2]], base[idx[3]]);
}
static inline vf vf_abs(vf a) { return _mm_andnot_ps(_mm_set1_ps(-0.0f), a); }
static inline vf vf_sqrt(vf a) { return _mm_sqrt_ps(a); }
static inline vf vf_div(vf a, vf b) { return _mm_div_ps(a, b); }
static inline void vf_store(float *p, vf a) { _mm_storeu_ps(p, a); }
static inline vu vf_bits(vf a) { return _mm_castps_si128(a); }
static inline vf vu_as_float(vu a) { return _mm_castsi128_ps(a); }
static inline vu vu_add(vu a, vu b) { return _mm_add_epi32(a, b); }
static inline vu vu_sub(vu a, vu b) { return _mm_sub_epi32(a, b); }
#define vu_srl(a, n) _mm_srli_epi32((a), (n))
#define vu_sll(a, n) _mm_slli_epi32((a), (n))
static inline void vu_store(uint32_t *p, vu a) { _mm_storeu_si128((__m128i *)p, a); }
static inline vu vf_trunc_i32(vf a) { return _mm_cvttps_epi32(a); }
#elif defined(PLEAT_ISA_NEON)
#include <arm_neon.h>
#define PLEAT_W 4
typedef float32x4_t vf;
typedef uint32x4_t vu;
static inline unsigned neon_mask(uint32x4_t m)
{
    const uint32x4_t bits = {1, 2, 4, 8};
    return vaddvq_u32(vandq_u32(m, bits));
}
static inline vf vf_load(const float *p) { return vld1q_f32(p); }
static inline vf vf_set1(float x) { return vdupq_n_f32(x); }
static inline vf vf_sub(vf a, vf b) { return vsubq_f32(a, b); }
static inline vf vf_add(vf a, vf b) { return vaddq_f32(a, b); }
static inline vf vf_mul(vf a, vf b) { return vmulq_f32(a, b); }
static inline unsigned vf_le(vf a, vf b) { return neon_mask(vcleq_f32(a, b)); }
static inline unsigned vf_lt_mask(vf a, vf b) { return neon_mask(vcltq_f32(a, b)); }
static inline vu vu_load(const uint32_t *p) { return vld1q_u32(p); }
static inline vu vu_set1(uint32_t x) { return vdupq_n_u32(x); }
static inline unsigned vu_lt(vu a, vu b) { return neon_mask(vcltq_u32(a, b)); }
static inline vf vf_max(vf a, vf b) { return vmaxq_f32(a, b); }
static inline vf vf_gather(const float *base, const uint32_t *idx)
{
    float32x4_t v = vdupq_n_f32(base[idx[0]]);
    v = vsetq_lane_f32(base[idx[1]], v, 1);
    v = vsetq_lane_f32(base[idx[2]], v, 2);
    return vsetq_lane_f32(base[idx[3]], v, 3);
}
static inline vf vf_abs(vf a) { return vabsq_f32(a); }
static inline vf vf_sqrt(vf a) { return vsqrtq_f32(a); }
static inline vf vf_div(vf a, vf b) { return vdivq_f32(a, b); }
static inline void vf_store(float *p, vf a) { vst1q_f32(p, a); }
static inline vu vf_bits(vf a) { return vreinterpretq_u32_f32(a); }
static inline vf vu_as_float(vu a) { return vreinterpretq_f32_u32(a); }
static inline vu vu_add(vu a, vu b) { return vaddq_u32(a, b); }
static inline vu vu_sub(vu a, vu b) { return vsubq_u32(a, b); }
#define vu_srl(a, n) vshrq_n_u32((a), (n))
#define vu_sll(a, n) vshlq_n_u32((a), (n))
static inline void vu_store(uint32_t *p, vu a) { vst1q_u32(p, a); }
static inline vu vf_trunc_i32(vf a) { return vreinterpretq_u32_s32(vcvtq_s32_f32(a)); }
#elif defined(PLEAT_ISA_SCALAR)
#define PLEAT_W 1
typedef float vf;
typedef uint32_t vu;
static inline vf vf_load(const float *p) { return *p; }
static inline vf vf_set1(float x) { return x; }
static inline vf vf_sub(vf a, vf b) { return a - b; }
static inline vf vf_add(vf a, vf b) { return a + b; }
static inline vf vf_mul(vf a, vf b) { return a * b; }
static inline unsigned vf_le(vf a, vf b) { return a <= b; }
static inline unsigned vf_lt_mask(vf a, vf b) { return a < b; }
static inline vu vu_load(const uint32_t *p) { return *p; }
static inline vu vu_set1(uint32_t x) { return x; }
static inline unsigned vu_lt(vu a, vu b) { return a < b; }
static inline vf vf_max(vf a, vf b) { return a > b ? a : b; }
static inline vf vf_gather(const float *base, const uint32_t *idx) { return base[idx[0]]; }
static inline vf vf_abs(vf a) { return fabsf(a); }
static inline vf vf_sqrt(vf a) { return sqrtf(a); }
static inline vf vf_div(vf a, vf b) { return a / b; }
static inline void vf_store(float *p, vf a) { *p = a; }
static inline vu vf_bits(vf a) { uint32_t u; memcpy(&u, &a, sizeof u); return u; }
static inline vf vu_as_float(vu a) { float f; memcpy(&f, &a, sizeof f); return f; }
static inline vu vu_add(vu a, vu b) { return a + b; }
static inline vu vu_sub(vu a, vu b) { return a - b; }
#define vu_srl(a, n) ((a) >> (n))
#define vu_sll(a, n) ((a) << (n))
static inline void vu_store(uint32_t *p, vu a) { *p = a; }
/* what cvttps gives: out-of-range and NaN lanes (discarded by the callers)
 * become INT32_MIN, without the undefined behaviour of a C conversion */
static inline vu vf_trunc_i32(vf a)
{
    return a > -2147483904.0f && a < 2147483648.0f ? (uint32_t)(int32_t)a : 0x80000000u;
}
#else
#error "compile the CPU kernels with one PLEAT_ISA_* defined"
#endif

/* q4: one particle {x, y, z, w} (SSE for SSE2 and AVX2). */
#if defined(PLEAT_ISA_AVX2) || defined(PLEAT_ISA_SSE2)
typedef __m128 q4;
static inline q4 q4_load(const float *p) { return _mm_loadu_ps(p); }
static inline q4 q4_set(float x, float y, float z, float w) { return _mm_setr_ps(x, y, z, w); }
static inline q4 q4_min(q4 a, q4 b) { return _mm_min_ps(a, b); }
static inline q4 q4_max(q4 a, q4 b) { return _mm_max_ps(a, b); }
static inline q4 q4_sub(q4 a, q4 b) { return _mm_sub_ps(a, b); }
static inline q4 q4_add(q4 a, q4 b) { return _mm_add_ps(a, b); }
static inline q4 q4_mul(q4 a, q4 b) { return _mm_mul_ps(a, b); }
/* lanes whose value is finite: x - x is 0 only for finite x */
static inline unsigned q4_finite(q4 a) { return (unsigned)_mm_movemask_ps(_mm_cmpeq_ps(_mm_sub_ps(a, a), _mm_setzero_ps())); }
static inline void q4_store(float *out, q4 a) { _mm_storeu_ps(out, a); }
/* truncation of values in [0, 2^31) */
static inline void q4_trunc(q4 a, uint32_t out[4]) { _mm_storeu_si128((__m128i *)out, _mm_cvttps_epi32(a)); }
#elif defined(PLEAT_ISA_NEON)
typedef float32x4_t q4;
static inline q4 q4_load(const float *p) { return vld1q_f32(p); }
static inline q4 q4_set(float x, float y, float z, float w) { const float v[4] = {x, y, z, w}; return vld1q_f32(v); }
static inline q4 q4_min(q4 a, q4 b) { return vminq_f32(a, b); }
static inline q4 q4_max(q4 a, q4 b) { return vmaxq_f32(a, b); }
static inline q4 q4_sub(q4 a, q4 b) { return vsubq_f32(a, b); }
static inline q4 q4_add(q4 a, q4 b) { return vaddq_f32(a, b); }
static inline q4 q4_mul(q4 a, q4 b) { return vmulq_f32(a, b); }
static inline unsigned q4_finite(q4 a) { return neon_mask(vceqq_f32(vsubq_f32(a, a), vdupq_n_f32(0.0f))); }
static inline void q4_store(float *out, q4 a) { vst1q_f32(out, a); }
static inline void q4_trunc(q4 a, uint32_t out[4]) { vst1q_u32(out, vcvtq_u32_f32(a)); }
#else
typedef struct q4 { float v[4]; } q4;
static inline q4 q4_load(const float *p) { q4 r; memcpy(r.v, p, sizeof r.v); return r; }
static inline q4 q4_set(float x, float y, float z, float w) { q4 r = {{x, y, z, w}}; return r; }
#define PLEAT_Q4_MAP(name, expr) \
    static inline q4 name(q4 a, q4 b) { q4 r; for (int l = 0; l < 4; ++l) r.v[l] = (expr); return r; }
PLEAT_Q4_MAP(q4_min, b.v[l] < a.v[l] ? b.v[l] : a.v[l])
PLEAT_Q4_MAP(q4_max, b.v[l] > a.v[l] ? b.v[l] : a.v[l])
PLEAT_Q4_MAP(q4_sub, a.v[l] - b.v[l])
PLEAT_Q4_MAP(q4_add, a.v[l] + b.v[l])
PLEAT_Q4_MAP(q4_mul, a.v[l] * b.v[l])
#undef PLEAT_Q4_MAP
static inline unsigned q4_finite(q4 a)
{
    unsigned m = 0;
    for (int l = 0; l < 4; ++l)
        m |= (unsigned)(a.v[l] - a.v[l] == 0.0f) << l;
    return m;
}
static inline void q4_store(float *out, q4 a) { memcpy(out, a.v, sizeof a.v); }
static inline void q4_trunc(q4 a, uint32_t out[4])
{
    for (int l = 0; l < 4; ++l)
        out[l] = (uint32_t)a.v[l];
}
#endif

#define PLEAT_ALL_LANES ((1u << PLEAT_W) - 1u)

/* Lanes 0..n-1 (n may exceed W). */
static inline unsigned pleat_first_lanes(uint32_t n)
{
    return n >= PLEAT_W ? PLEAT_ALL_LANES : (1u << n) - 1u;
}

/* Sum of squares in the order of pleat_length2 (x, then y, then z). */
static inline vf vf_length2(vf dx, vf dy, vf dz)
{
    return vf_add(vf_add(vf_mul(dx, dx), vf_mul(dy, dy)), vf_mul(dz, dz));
}

/* Writes base + l for every lane l set in mask to out, in lane order;
 * returns how many. out has room for PLEAT_W entries. */
#if defined(PLEAT_ISA_AVX2)
static inline unsigned pleat_compress_lanes(uint32_t base, unsigned mask, uint32_t *out)
{
    /* for each mask, the lane numbers of its set bits, packed 4 bits each
     * (generated: entry m lists l for every bit l of m, lowest first) */
    static const uint32_t table[256] = {
    0x00000000, 0x00000000, 0x00000001, 0x00000010, 0x00000002, 0x00000020, 0x00000021, 0x00000210,
    0x00000003, 0x00000030, 0x00000031, 0x00000310, 0x00000032, 0x00000320, 0x00000321, 0x00003210,
    0x00000004, 0x00000040, 0x00000041, 0x00000410, 0x00000042, 0x00000420, 0x00000421, 0x00004210,
    0x00000043, 0x00000430, 0x00000431, 0x00004310, 0x00000432, 0x00004320, 0x00004321, 0x00043210,
    0x00000005, 0x00000050, 0x00000051, 0x00000510, 0x00000052, 0x00000520, 0x00000521, 0x00005210,
    0x00000053, 0x00000530, 0x00000531, 0x00005310, 0x00000532, 0x00005320, 0x00005321, 0x00053210,
    0x00000054, 0x00000540, 0x00000541, 0x00005410, 0x00000542, 0x00005420, 0x00005421, 0x00054210,
    0x00000543, 0x00005430, 0x00005431, 0x00054310, 0x00005432, 0x00054320, 0x00054321, 0x00543210,
    0x00000006, 0x00000060, 0x00000061, 0x00000610, 0x00000062, 0x00000620, 0x00000621, 0x00006210,
    0x00000063, 0x00000630, 0x00000631, 0x00006310, 0x00000632, 0x00006320, 0x00006321, 0x00063210,
    0x00000064, 0x00000640, 0x00000641, 0x00006410, 0x00000642, 0x00006420, 0x00006421, 0x00064210,
    0x00000643, 0x00006430, 0x00006431, 0x00064310, 0x00006432, 0x00064320, 0x00064321, 0x00643210,
    0x00000065, 0x00000650, 0x00000651, 0x00006510, 0x00000652, 0x00006520, 0x00006521, 0x00065210,
    0x00000653, 0x00006530, 0x00006531, 0x00065310, 0x00006532, 0x00065320, 0x00065321, 0x00653210,
    0x00000654, 0x00006540, 0x00006541, 0x00065410, 0x00006542, 0x00065420, 0x00065421, 0x00654210,
    0x00006543, 0x00065430, 0x00065431, 0x00654310, 0x00065432, 0x00654320, 0x00654321, 0x06543210,
    0x00000007, 0x00000070, 0x00000071, 0x00000710, 0x00000072, 0x00000720, 0x00000721, 0x00007210,
    0x00000073, 0x00000730, 0x00000731, 0x00007310, 0x00000732, 0x00007320, 0x00007321, 0x00073210,
    0x00000074, 0x00000740, 0x00000741, 0x00007410, 0x00000742, 0x00007420, 0x00007421, 0x00074210,
    0x00000743, 0x00007430, 0x00007431, 0x00074310, 0x00007432, 0x00074320, 0x00074321, 0x00743210,
    0x00000075, 0x00000750, 0x00000751, 0x00007510, 0x00000752, 0x00007520, 0x00007521, 0x00075210,
    0x00000753, 0x00007530, 0x00007531, 0x00075310, 0x00007532, 0x00075320, 0x00075321, 0x00753210,
    0x00000754, 0x00007540, 0x00007541, 0x00075410, 0x00007542, 0x00075420, 0x00075421, 0x00754210,
    0x00007543, 0x00075430, 0x00075431, 0x00754310, 0x00075432, 0x00754320, 0x00754321, 0x07543210,
    0x00000076, 0x00000760, 0x00000761, 0x00007610, 0x00000762, 0x00007620, 0x00007621, 0x00076210,
    0x00000763, 0x00007630, 0x00007631, 0x00076310, 0x00007632, 0x00076320, 0x00076321, 0x00763210,
    0x00000764, 0x00007640, 0x00007641, 0x00076410, 0x00007642, 0x00076420, 0x00076421, 0x00764210,
    0x00007643, 0x00076430, 0x00076431, 0x00764310, 0x00076432, 0x00764320, 0x00764321, 0x07643210,
    0x00000765, 0x00007650, 0x00007651, 0x00076510, 0x00007652, 0x00076520, 0x00076521, 0x00765210,
    0x00007653, 0x00076530, 0x00076531, 0x00765310, 0x00076532, 0x00765320, 0x00765321, 0x07653210,
    0x00007654, 0x00076540, 0x00076541, 0x00765410, 0x00076542, 0x00765420, 0x00765421, 0x07654210,
    0x00076543, 0x00765430, 0x00765431, 0x07654310, 0x00765432, 0x07654320, 0x07654321, 0x76543210,
    };
    __m256i lanes = _mm256_srlv_epi32(_mm256_set1_epi32((int)table[mask]),
                                      _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
    lanes = _mm256_and_si256(lanes, _mm256_set1_epi32(0xf));
    _mm256_storeu_si256((__m256i *)out, _mm256_add_epi32(lanes, _mm256_set1_epi32((int)base)));
    return (unsigned)__builtin_popcount(mask);
}
#else
static inline unsigned pleat_compress_lanes(uint32_t base, unsigned mask, uint32_t *out)
{
    unsigned n = 0;
    for (; mask; mask &= mask - 1)
        out[n++] = base + (unsigned)__builtin_ctz(mask);
    return n;
}
#endif

/* Index of the lowest set bit of a nonzero mask. */
static inline unsigned pleat_lowest_lane(unsigned mask)
{
    return (unsigned)__builtin_ctz(mask);
}

#endif
