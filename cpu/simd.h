/*
 * The wide-float layer the CPU kernels are written over. A kernel source is
 * compiled once per ISA with one of PLEAT_ISA_SCALAR, _SSE2, _AVX2, _AVX512,
 * _NEON defined (see CMakeLists.txt); this header maps the same few
 * operations to that ISA. Every float operation here is a single IEEE
 * operation, so a kernel gives the same bits whatever the width.
 *
 * - vf / vu: W floats / W uint32. vm: a lane mask as compares give it (a
 *   vu whose true lanes are all ones, or 1 in the scalar build, and the
 *   others zero; AVX-512's mask register), which inner loops combine with
 *   vm_and and turn into bits once, with vm_lanes: lane l is bit l, so
 *   kernels test such masks with ordinary integer code. vu_keep(x, m) is x
 *   in m's true lanes and 0 elsewhere; vu_count counts the true lanes per
 *   lane, and vu_sum adds the lanes up. vu_sll and vu_srl shift by a
 *   constant, vu_sll_by by a count known at run time. vu_eq and vu_lt
 *   compare straight into bits. vu_load_halves splits W 64-bit values into
 *   their low and high halves; vu_shift_in moves each lane up by one (a
 *   given value into lane 0), vu_last reads lane W - 1.
 * - Particles are stored {x, y, z, w}, 4 floats each; vf_rows (and
 *   vf_load4, vf_gather4) turn W of them into one vf per component.
 * Lanes are read and written through memcpy or intrinsics only (punning
 * through pointers breaks the aliasing rules and is miscompiled).
 */
#ifndef PLEAT_CPU_SIMD_H
#define PLEAT_CPU_SIMD_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(PLEAT_ISA_AVX512)
#include <immintrin.h>
#define PLEAT_W 16
typedef __m512 vf;
typedef __m512i vu;
static inline vf vf_set1(float x) { return _mm512_set1_ps(x); }
static inline vf vf_sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
static inline vf vf_add(vf a, vf b) { return _mm512_add_ps(a, b); }
static inline vf vf_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
/* compares give a mask register, which the kernels use as it is */
typedef __mmask16 vm;
static inline vm vf_le(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
static inline unsigned vf_lt_mask(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
static inline vu vu_load(const uint32_t *p) { return _mm512_loadu_si512(p); }
static inline vu vu_set1(uint32_t x) { return _mm512_set1_epi32((int)x); }
static inline vu vu_load1(const uint32_t *p) { return _mm512_set1_epi32((int)*p); }
static inline unsigned vu_lt(vu a, vu b) { return _mm512_cmplt_epu32_mask(a, b); }
static inline vm vu_in_range(vu x, vu lo, vu width)
{
    return _mm512_cmplt_epu32_mask(_mm512_sub_epi32(x, lo), width);
}
static inline vm vm_and(vm a, vm b) { return a & b; }
static inline vu vu_and(vu a, vu b) { return _mm512_and_si512(a, b); }
static inline vu vu_or(vu a, vu b) { return _mm512_or_si512(a, b); }
static inline vu vu_keep(vu a, vm m) { return _mm512_maskz_mov_epi32(m, a); }
static inline vu vu_min(vu a, vu b) { return _mm512_min_epu32(a, b); }
static inline unsigned vm_lanes(vm m) { return m; }
static inline vu vu_count(vu count, vm m)
{
    return _mm512_mask_add_epi32(count, m, count, _mm512_set1_epi32(1));
}
static inline vf vf_max(vf a, vf b) { return _mm512_max_ps(a, b); }
static inline vf vf_min(vf a, vf b) { return _mm512_min_ps(a, b); }
/* lane l of out[c] = row[l][c]: as AVX2's, each 128-bit quarter q of r[l]
 * holding row[l + 4q] */
static inline void vf_rows(const float *const row[16], vf out[4])
{
    __m512 r[4];
    for (int l = 0; l < 4; ++l) {
        __m512 v = _mm512_castps128_ps512(_mm_loadu_ps(row[l]));
        v = _mm512_insertf32x4(v, _mm_loadu_ps(row[l + 4]), 1);
        v = _mm512_insertf32x4(v, _mm_loadu_ps(row[l + 8]), 2);
        r[l] = _mm512_insertf32x4(v, _mm_loadu_ps(row[l + 12]), 3);
    }
    __m512 t0 = _mm512_unpacklo_ps(r[0], r[1]), t1 = _mm512_unpackhi_ps(r[0], r[1]);
    __m512 t2 = _mm512_unpacklo_ps(r[2], r[3]), t3 = _mm512_unpackhi_ps(r[2], r[3]);
    out[0] = _mm512_shuffle_ps(t0, t2, 0x44);
    out[1] = _mm512_shuffle_ps(t0, t2, 0xee);
    out[2] = _mm512_shuffle_ps(t1, t3, 0x44);
    out[3] = _mm512_shuffle_ps(t1, t3, 0xee);
}
static inline vf vf_abs(vf a) { return _mm512_abs_ps(a); }
static inline vf vf_sqrt(vf a) { return _mm512_sqrt_ps(a); }
static inline vf vf_div(vf a, vf b) { return _mm512_div_ps(a, b); }
static inline vu vf_bits(vf a) { return _mm512_castps_si512(a); }
static inline vf vu_as_float(vu a) { return _mm512_castsi512_ps(a); }
static inline vu vu_add(vu a, vu b) { return _mm512_add_epi32(a, b); }
static inline vu vu_sub(vu a, vu b) { return _mm512_sub_epi32(a, b); }
#define vu_srl(a, n) _mm512_srli_epi32((a), (n))
#define vu_sll(a, n) _mm512_slli_epi32((a), (n))
static inline vu vu_sll_by(vu a, int n) { return _mm512_sll_epi32(a, _mm_cvtsi32_si128(n)); }
static inline void vu_store(uint32_t *p, vu a) { _mm512_storeu_si512(p, a); }
static inline void vf_store(float *p, vf a) { _mm512_storeu_ps(p, a); }
static inline vu vf_trunc_i32(vf a) { return _mm512_cvttps_epi32(a); }
static inline unsigned vu_eq(vu a, vu b) { return _mm512_cmpeq_epi32_mask(a, b); }
static inline void vu_load_halves(const uint64_t *p, vu *lo, vu *hi)
{
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    __m512i a = _mm512_loadu_si512(p), b = _mm512_loadu_si512(p + 8);
    *lo = _mm512_permutex2var_epi32(a, even, b);
    *hi = _mm512_permutex2var_epi32(a, odd, b);
}
/* valignd: lane 0 from the broadcast's last lane, lane l from a's l - 1 */
static inline vu vu_shift_in(vu a, uint32_t first)
{
    return _mm512_alignr_epi32(a, _mm512_set1_epi32((int)first), 15);
}
static inline uint32_t vu_last(vu a)
{
    return (uint32_t)_mm_cvtsi128_si32(_mm512_castsi512_si128(_mm512_alignr_epi32(a, a, 15)));
}
#elif defined(PLEAT_ISA_AVX2)
#include <immintrin.h>
#define PLEAT_W 8
typedef __m256 vf;
typedef __m256i vu;
typedef vu vm;
static inline vf vf_set1(float x) { return _mm256_set1_ps(x); }
static inline vf vf_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static inline vf vf_add(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf vf_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vm vf_le(vf a, vf b) { return _mm256_castps_si256(_mm256_cmp_ps(a, b, _CMP_LE_OQ)); }
static inline unsigned vf_lt_mask(vf a, vf b)
{
    return (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_LT_OQ));
}
static inline vu vu_load(const uint32_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
static inline vu vu_set1(uint32_t x) { return _mm256_set1_epi32((int)x); }
/* *p in every lane, straight from memory (a load-port broadcast; set1 of a
 * value already in a register costs two shuffle-port ops). _mm_loadu_si32
 * came with gcc 11. */
#if defined(__clang__) || !defined(__GNUC__) || __GNUC__ >= 11
static inline vu vu_load1(const uint32_t *p) { return _mm256_broadcastd_epi32(_mm_loadu_si32(p)); }
#else
static inline vu vu_load1(const uint32_t *p) { return _mm256_set1_epi32((int)*p); }
#endif
/* unsigned a < b: flip the sign bits, compare signed */
static inline unsigned vu_lt(vu a, vu b)
{
    const __m256i flip = _mm256_set1_epi32(INT32_MIN);
    __m256i lt = _mm256_cmpgt_epi32(_mm256_xor_si256(b, flip), _mm256_xor_si256(a, flip));
    return (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(lt));
}
/* x - lo < width, unsigned: (x - lo) ^ 2^31 is x - (lo ^ 2^31), so with lo
 * and width fixed in a loop the sign flips are hoisted out of it */
static inline vm vu_in_range(vu x, vu lo, vu width)
{
    const __m256i flip = _mm256_set1_epi32(INT32_MIN);
    __m256i d = _mm256_sub_epi32(x, _mm256_xor_si256(lo, flip));
    return _mm256_cmpgt_epi32(_mm256_xor_si256(width, flip), d);
}
static inline vu vu_and(vu a, vu b) { return _mm256_and_si256(a, b); }
static inline vu vu_or(vu a, vu b) { return _mm256_or_si256(a, b); }
static inline vu vu_keep(vu a, vm m) { return _mm256_and_si256(a, m); }
static inline vu vu_min(vu a, vu b) { return _mm256_min_epu32(a, b); }
static inline unsigned vm_lanes(vm m)
{
    return (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m));
}
static inline vu vu_count(vu count, vm m) { return _mm256_sub_epi32(count, m); }
static inline vf vf_max(vf a, vf b) { return _mm256_max_ps(a, b); }
static inline vf vf_min(vf a, vf b) { return _mm256_min_ps(a, b); }
/* lane l of out[c] = row[l][c]: 8 rows {x, y, z, w} to 4 vectors */
static inline void vf_rows(const float *const row[8], vf out[4])
{
    __m256 r[4];
    for (int l = 0; l < 4; ++l)
        r[l] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(row[l])),
                                    _mm_loadu_ps(row[l + 4]), 1);
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    out[0] = _mm256_shuffle_ps(t0, t2, 0x44);
    out[1] = _mm256_shuffle_ps(t0, t2, 0xee);
    out[2] = _mm256_shuffle_ps(t1, t3, 0x44);
    out[3] = _mm256_shuffle_ps(t1, t3, 0xee);
}
static inline vf vf_abs(vf a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
static inline vf vf_sqrt(vf a) { return _mm256_sqrt_ps(a); }
static inline vf vf_div(vf a, vf b) { return _mm256_div_ps(a, b); }
static inline vu vf_bits(vf a) { return _mm256_castps_si256(a); }
static inline vf vu_as_float(vu a) { return _mm256_castsi256_ps(a); }
static inline vu vu_add(vu a, vu b) { return _mm256_add_epi32(a, b); }
static inline vu vu_sub(vu a, vu b) { return _mm256_sub_epi32(a, b); }
#define vu_srl(a, n) _mm256_srli_epi32((a), (n))
#define vu_sll(a, n) _mm256_slli_epi32((a), (n))
static inline vu vu_sll_by(vu a, int n) { return _mm256_sll_epi32(a, _mm_cvtsi32_si128(n)); }
static inline void vu_store(uint32_t *p, vu a) { _mm256_storeu_si256((__m256i *)p, a); }
static inline void vf_store(float *p, vf a) { _mm256_storeu_ps(p, a); }
/* truncation toward zero of values in (-2^31, 2^31), as int32 bits */
static inline vu vf_trunc_i32(vf a) { return _mm256_cvttps_epi32(a); }
static inline unsigned vu_eq(vu a, vu b)
{
    return (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a, b)));
}
/* W consecutive 64-bit values, split into their low and high halves */
static inline void vu_load_halves(const uint64_t *p, vu *lo, vu *hi)
{
    __m256 a = _mm256_loadu_ps((const float *)p), b = _mm256_loadu_ps((const float *)(p + 4));
    /* in each 128-bit lane: a's two values, then b's; the permute puts
     * the 64-bit quarters back in order */
    *lo = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(a, b, 0x88)), 0xd8);
    *hi = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(a, b, 0xdd)), 0xd8);
}
/* {first, a0, ..., a(W-2)}: each lane gets the lane before it */
static inline vu vu_shift_in(vu a, uint32_t first)
{
    const __m256i up = _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6);
    return _mm256_blend_epi32(_mm256_permutevar8x32_epi32(a, up), _mm256_set1_epi32((int)first), 1);
}
static inline uint32_t vu_last(vu a) { return (uint32_t)_mm256_extract_epi32(a, 7); }
#elif defined(PLEAT_ISA_SSE2)
#include <emmintrin.h>
#define PLEAT_W 4
typedef __m128 vf;
typedef __m128i vu;
typedef vu vm;
static inline vf vf_set1(float x) { return _mm_set1_ps(x); }
static inline vf vf_sub(vf a, vf b) { return _mm_sub_ps(a, b); }
static inline vf vf_add(vf a, vf b) { return _mm_add_ps(a, b); }
static inline vf vf_mul(vf a, vf b) { return _mm_mul_ps(a, b); }
static inline vm vf_le(vf a, vf b) { return _mm_castps_si128(_mm_cmple_ps(a, b)); }
static inline unsigned vf_lt_mask(vf a, vf b)
{
    return (unsigned)_mm_movemask_ps(_mm_cmplt_ps(a, b));
}
static inline vu vu_load(const uint32_t *p) { return _mm_loadu_si128((const __m128i *)p); }
static inline vu vu_set1(uint32_t x) { return _mm_set1_epi32((int)x); }
static inline vu vu_load1(const uint32_t *p) { return _mm_set1_epi32((int)*p); }
static inline unsigned vu_lt(vu a, vu b)
{
    const __m128i flip = _mm_set1_epi32(INT32_MIN);
    __m128i lt = _mm_cmplt_epi32(_mm_xor_si128(a, flip), _mm_xor_si128(b, flip));
    return (unsigned)_mm_movemask_ps(_mm_castsi128_ps(lt));
}
static inline vm vu_in_range(vu x, vu lo, vu width)
{
    const __m128i flip = _mm_set1_epi32(INT32_MIN);
    __m128i d = _mm_sub_epi32(x, _mm_xor_si128(lo, flip));
    return _mm_cmplt_epi32(d, _mm_xor_si128(width, flip));
}
static inline vu vu_and(vu a, vu b) { return _mm_and_si128(a, b); }
static inline vu vu_or(vu a, vu b) { return _mm_or_si128(a, b); }
static inline vu vu_keep(vu a, vm m) { return _mm_and_si128(a, m); }
/* unsigned minimum (SSE4.1 has it, SSE2 does not) */
static inline vu vu_min(vu a, vu b)
{
    const __m128i flip = _mm_set1_epi32(INT32_MIN);
    __m128i a_above = _mm_cmpgt_epi32(_mm_xor_si128(a, flip), _mm_xor_si128(b, flip));
    return _mm_or_si128(_mm_and_si128(a_above, b), _mm_andnot_si128(a_above, a));
}
static inline unsigned vm_lanes(vm m) { return (unsigned)_mm_movemask_ps(_mm_castsi128_ps(m)); }
static inline vu vu_count(vu count, vm m) { return _mm_sub_epi32(count, m); }
static inline vf vf_max(vf a, vf b) { return _mm_max_ps(a, b); }
static inline vf vf_min(vf a, vf b) { return _mm_min_ps(a, b); }
static inline void vf_rows(const float *const row[4], vf out[4])
{
    __m128 r0 = _mm_loadu_ps(row[0]), r1 = _mm_loadu_ps(row[1]);
    __m128 r2 = _mm_loadu_ps(row[2]), r3 = _mm_loadu_ps(row[3]);
    __m128 t0 = _mm_unpacklo_ps(r0, r1), t1 = _mm_unpackhi_ps(r0, r1);
    __m128 t2 = _mm_unpacklo_ps(r2, r3), t3 = _mm_unpackhi_ps(r2, r3);
    out[0] = _mm_movelh_ps(t0, t2);
    out[1] = _mm_movehl_ps(t2, t0);
    out[2] = _mm_movelh_ps(t1, t3);
    out[3] = _mm_movehl_ps(t3, t1);
}
static inline vf vf_abs(vf a) { return _mm_andnot_ps(_mm_set1_ps(-0.0f), a); }
static inline vf vf_sqrt(vf a) { return _mm_sqrt_ps(a); }
static inline vf vf_div(vf a, vf b) { return _mm_div_ps(a, b); }
static inline vu vf_bits(vf a) { return _mm_castps_si128(a); }
static inline vf vu_as_float(vu a) { return _mm_castsi128_ps(a); }
static inline vu vu_add(vu a, vu b) { return _mm_add_epi32(a, b); }
static inline vu vu_sub(vu a, vu b) { return _mm_sub_epi32(a, b); }
#define vu_srl(a, n) _mm_srli_epi32((a), (n))
#define vu_sll(a, n) _mm_slli_epi32((a), (n))
static inline vu vu_sll_by(vu a, int n) { return _mm_sll_epi32(a, _mm_cvtsi32_si128(n)); }
static inline void vu_store(uint32_t *p, vu a) { _mm_storeu_si128((__m128i *)p, a); }
static inline void vf_store(float *p, vf a) { _mm_storeu_ps(p, a); }
static inline vu vf_trunc_i32(vf a) { return _mm_cvttps_epi32(a); }
static inline unsigned vu_eq(vu a, vu b)
{
    return (unsigned)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(a, b)));
}
static inline void vu_load_halves(const uint64_t *p, vu *lo, vu *hi)
{
    __m128 a = _mm_loadu_ps((const float *)p), b = _mm_loadu_ps((const float *)(p + 2));
    *lo = _mm_castps_si128(_mm_shuffle_ps(a, b, 0x88));
    *hi = _mm_castps_si128(_mm_shuffle_ps(a, b, 0xdd));
}
static inline vu vu_shift_in(vu a, uint32_t first)
{
    return _mm_or_si128(_mm_slli_si128(a, 4), _mm_cvtsi32_si128((int)first));
}
static inline uint32_t vu_last(vu a)
{
    return (uint32_t)_mm_cvtsi128_si32(_mm_shuffle_epi32(a, 0xff));
}
#elif defined(PLEAT_ISA_NEON)
#include <arm_neon.h>
#define PLEAT_W 4
typedef float32x4_t vf;
typedef uint32x4_t vu;
typedef vu vm;
static inline unsigned neon_mask(uint32x4_t m)
{
    const uint32x4_t bits = {1, 2, 4, 8};
    return vaddvq_u32(vandq_u32(m, bits));
}
static inline vf vf_set1(float x) { return vdupq_n_f32(x); }
static inline vf vf_sub(vf a, vf b) { return vsubq_f32(a, b); }
static inline vf vf_add(vf a, vf b) { return vaddq_f32(a, b); }
static inline vf vf_mul(vf a, vf b) { return vmulq_f32(a, b); }
static inline vm vf_le(vf a, vf b) { return vcleq_f32(a, b); }
static inline unsigned vf_lt_mask(vf a, vf b) { return neon_mask(vcltq_f32(a, b)); }
static inline vu vu_load(const uint32_t *p) { return vld1q_u32(p); }
static inline vu vu_set1(uint32_t x) { return vdupq_n_u32(x); }
static inline vu vu_load1(const uint32_t *p) { return vld1q_dup_u32(p); }
static inline unsigned vu_lt(vu a, vu b) { return neon_mask(vcltq_u32(a, b)); }
static inline vm vu_in_range(vu x, vu lo, vu width) { return vcltq_u32(vsubq_u32(x, lo), width); }
static inline vu vu_and(vu a, vu b) { return vandq_u32(a, b); }
static inline vu vu_or(vu a, vu b) { return vorrq_u32(a, b); }
static inline vu vu_keep(vu a, vm m) { return vandq_u32(a, m); }
static inline vu vu_min(vu a, vu b) { return vminq_u32(a, b); }
static inline unsigned vm_lanes(vm m) { return neon_mask(m); }
static inline vu vu_count(vu count, vm m) { return vsubq_u32(count, m); }
static inline vf vf_max(vf a, vf b) { return vmaxq_f32(a, b); }
static inline vf vf_min(vf a, vf b) { return vminq_f32(a, b); }
static inline void vf_rows(const float *const row[4], vf out[4])
{
    float32x4_t r0 = vld1q_f32(row[0]), r1 = vld1q_f32(row[1]);
    float32x4_t r2 = vld1q_f32(row[2]), r3 = vld1q_f32(row[3]);
    float32x4_t t0 = vzip1q_f32(r0, r2), t1 = vzip2q_f32(r0, r2); /* x0 x2 y0 y2, z0 z2 w0 w2 */
    float32x4_t t2 = vzip1q_f32(r1, r3), t3 = vzip2q_f32(r1, r3);
    out[0] = vzip1q_f32(t0, t2);
    out[1] = vzip2q_f32(t0, t2);
    out[2] = vzip1q_f32(t1, t3);
    out[3] = vzip2q_f32(t1, t3);
}
static inline vf vf_abs(vf a) { return vabsq_f32(a); }
static inline vf vf_sqrt(vf a) { return vsqrtq_f32(a); }
static inline vf vf_div(vf a, vf b) { return vdivq_f32(a, b); }
static inline vu vf_bits(vf a) { return vreinterpretq_u32_f32(a); }
static inline vf vu_as_float(vu a) { return vreinterpretq_f32_u32(a); }
static inline vu vu_add(vu a, vu b) { return vaddq_u32(a, b); }
static inline vu vu_sub(vu a, vu b) { return vsubq_u32(a, b); }
#define vu_srl(a, n) vshrq_n_u32((a), (n))
#define vu_sll(a, n) vshlq_n_u32((a), (n))
static inline vu vu_sll_by(vu a, int n) { return vshlq_u32(a, vdupq_n_s32(n)); }
static inline void vu_store(uint32_t *p, vu a) { vst1q_u32(p, a); }
static inline void vf_store(float *p, vf a) { vst1q_f32(p, a); }
static inline vu vf_trunc_i32(vf a) { return vreinterpretq_u32_s32(vcvtq_s32_f32(a)); }
static inline unsigned vu_eq(vu a, vu b) { return neon_mask(vceqq_u32(a, b)); }
static inline void vu_load_halves(const uint64_t *p, vu *lo, vu *hi)
{
    uint32x4x2_t h = vld2q_u32((const uint32_t *)p); /* little-endian: low half first */
    *lo = h.val[0];
    *hi = h.val[1];
}
static inline vu vu_shift_in(vu a, uint32_t first) { return vextq_u32(vdupq_n_u32(first), a, 3); }
static inline uint32_t vu_last(vu a) { return vgetq_lane_u32(a, 3); }
#elif defined(PLEAT_ISA_SCALAR)
#define PLEAT_W 1
typedef float vf;
typedef uint32_t vu;
typedef vu vm;
static inline vf vf_set1(float x) { return x; }
static inline vf vf_sub(vf a, vf b) { return a - b; }
static inline vf vf_add(vf a, vf b) { return a + b; }
static inline vf vf_mul(vf a, vf b) { return a * b; }
static inline vm vf_le(vf a, vf b) { return a <= b; }
static inline unsigned vf_lt_mask(vf a, vf b) { return a < b; }
static inline vu vu_load(const uint32_t *p) { return *p; }
static inline vu vu_set1(uint32_t x) { return x; }
static inline vu vu_load1(const uint32_t *p) { return *p; }
static inline unsigned vu_lt(vu a, vu b) { return a < b; }
static inline vm vu_in_range(vu x, vu lo, vu width) { return x - lo < width; }
static inline vu vu_and(vu a, vu b) { return a & b; }
static inline vu vu_or(vu a, vu b) { return a | b; }
static inline vu vu_keep(vu a, vm m) { return m ? a : 0; }
static inline vu vu_min(vu a, vu b) { return a < b ? a : b; }
static inline unsigned vm_lanes(vm m) { return m; }
static inline vu vu_count(vu count, vm m) { return count + m; }
static inline vf vf_max(vf a, vf b) { return a > b ? a : b; }
static inline vf vf_min(vf a, vf b) { return a < b ? a : b; }
static inline void vf_rows(const float *const row[1], vf out[4])
{
    for (int c = 0; c < 4; ++c)
        out[c] = row[0][c];
}
static inline vf vf_abs(vf a) { return fabsf(a); }
static inline vf vf_sqrt(vf a) { return sqrtf(a); }
static inline vf vf_div(vf a, vf b) { return a / b; }
static inline vu vf_bits(vf a) { uint32_t u; memcpy(&u, &a, sizeof u); return u; }
static inline vf vu_as_float(vu a) { float f; memcpy(&f, &a, sizeof f); return f; }
static inline vu vu_add(vu a, vu b) { return a + b; }
static inline vu vu_sub(vu a, vu b) { return a - b; }
#define vu_srl(a, n) ((a) >> (n))
#define vu_sll(a, n) ((a) << (n))
static inline vu vu_sll_by(vu a, int n) { return a << n; }
static inline void vu_store(uint32_t *p, vu a) { *p = a; }
static inline void vf_store(float *p, vf a) { *p = a; }
/* what cvttps gives: out-of-range and NaN lanes (discarded by the callers)
 * become INT32_MIN, without the undefined behaviour of a C conversion */
static inline vu vf_trunc_i32(vf a)
{
    return a > -2147483904.0f && a < 2147483648.0f ? (uint32_t)(int32_t)a : 0x80000000u;
}
static inline unsigned vu_eq(vu a, vu b) { return a == b; }
static inline void vu_load_halves(const uint64_t *p, vu *lo, vu *hi)
{
    *lo = (uint32_t)*p;
    *hi = (uint32_t)(*p >> 32);
}
static inline vu vu_shift_in(vu a, uint32_t first) { (void)a; return first; }
static inline uint32_t vu_last(vu a) { return a; }
#else
#error "compile the CPU kernels with one PLEAT_ISA_* defined"
#endif

#if !defined(PLEAT_ISA_AVX512) /* there, vm is a mask register */
static inline vm vm_and(vm a, vm b) { return vu_and(a, b); }
#endif

#define PLEAT_ALL_LANES ((1u << PLEAT_W) - 1u)

/* Set lanes of a mask (at most 8 lanes without POPCNT). __builtin_popcount
 * is an instruction or three with POPCNT (AVX2, AVX-512) and on AArch64,
 * but a libgcc call in the SSE2 and scalar builds. */
static inline unsigned pleat_lane_count(unsigned mask)
{
#if defined(__POPCNT__) || defined(__aarch64__)
    return (unsigned)__builtin_popcount(mask);
#elif PLEAT_W > 8
#error "the fallback counts 8 lanes"
#else
    mask = mask - ((mask >> 1) & 0x55u);
    mask = (mask & 0x33u) + ((mask >> 2) & 0x33u);
    return (mask + (mask >> 4)) & 0x0fu;
#endif
}

/* Lane l holds l. */
_Static_assert(PLEAT_W <= 16, "one lane number per lane");
static inline vu vu_lane_numbers(void)
{
    static const uint32_t number[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    return vu_load(number);
}

/* Lanes 0..n-1 (n may exceed W). */
static inline unsigned pleat_first_lanes(uint32_t n)
{
    return n >= PLEAT_W ? PLEAT_ALL_LANES : (1u << n) - 1u;
}

/* The lanes' sum, in 64 bits (W lanes of 32 bits may carry past 32). */
static inline uint64_t vu_sum(vu a)
{
    uint32_t lane[PLEAT_W];
    vu_store(lane, a);
    uint64_t sum = 0;
    for (int l = 0; l < PLEAT_W; ++l)
        sum += lane[l];
    return sum;
}

/* Sum of squares in the order of pleat_length2 (x, then y, then z). */
static inline vf vf_length2(vf dx, vf dy, vf dz)
{
    return vf_add(vf_add(vf_mul(dx, dx), vf_mul(dy, dy)), vf_mul(dz, dz));
}

/* Particles are stored {x, y, z, w}, 4 floats each. Lane l of out[c] is
 * component c of particle idx[l] of p ... */
static inline void vf_gather4(const float *p, const uint32_t *idx, vf out[4])
{
    const float *row[PLEAT_W];
    for (int l = 0; l < PLEAT_W; ++l)
        row[l] = p + 4 * (size_t)idx[l];
    vf_rows(row, out);
}

/* ... or of particle l of p. */
static inline void vf_load4(const float *p, vf out[4])
{
    const float *row[PLEAT_W];
    for (int l = 0; l < PLEAT_W; ++l)
        row[l] = p + 4 * l;
    vf_rows(row, out);
}

/* Two lanes' values side by side. The x and y sums of a particle are kept
 * {x, y} int64, so one pair's x and y corrections are one vector add:
 * vu_store_xy puts lane l of x and y at out[2l], out[2l + 1], and xy_add /
 * xy_sub do sum[0..1] +-= c[0..1] (int32). vu_store_u64 makes the sort's
 * keys: out[l] = hi_l << 32 | lo_l. */
#if defined(PLEAT_ISA_AVX512) || defined(PLEAT_ISA_AVX2) || defined(PLEAT_ISA_SSE2)
/* lane l of lo and hi to the 8 bytes at out + 8l, lo first: on x86
 * (little-endian) both layouts above */
#if defined(PLEAT_ISA_AVX512)
static inline void store_pairs(void *out, vu lo, vu hi)
{
    /* a, b: in each 128-bit quarter q, lanes 4q, 4q + 1 and 4q + 2, 4q + 3
     * paired; the permutes put the 64-bit pairs back in lane order */
    __m512i a = _mm512_unpacklo_epi32(lo, hi), b = _mm512_unpackhi_epi32(lo, hi);
    const __m512i first = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
    const __m512i second = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
    _mm512_storeu_si512(out, _mm512_permutex2var_epi64(a, first, b));
    _mm512_storeu_si512((char *)out + 64, _mm512_permutex2var_epi64(a, second, b));
}
#elif defined(PLEAT_ISA_AVX2)
static inline void store_pairs(void *out, vu lo, vu hi)
{
    __m256i a = _mm256_unpacklo_epi32(lo, hi), b = _mm256_unpackhi_epi32(lo, hi);
    _mm256_storeu_si256((__m256i *)out, _mm256_permute2x128_si256(a, b, 0x20));
    _mm256_storeu_si256((__m256i *)out + 1, _mm256_permute2x128_si256(a, b, 0x31));
}
#endif
#if defined(PLEAT_ISA_AVX512) || defined(PLEAT_ISA_AVX2)
static inline __m128i xy_load(const uint32_t *c)
{
    return _mm_cvtepi32_epi64(_mm_loadl_epi64((const __m128i *)c));
}
#else
static inline void store_pairs(void *out, vu lo, vu hi)
{
    _mm_storeu_si128((__m128i *)out, _mm_unpacklo_epi32(lo, hi));
    _mm_storeu_si128((__m128i *)out + 1, _mm_unpackhi_epi32(lo, hi));
}
/* SSE2 has no sign extension to 64 bits: pair each value with its sign */
static inline __m128i xy_load(const uint32_t *c)
{
    __m128i v = _mm_loadl_epi64((const __m128i *)c);
    return _mm_unpacklo_epi32(v, _mm_srai_epi32(v, 31));
}
#endif
static inline void vu_store_xy(uint32_t *out, vu x, vu y) { store_pairs(out, x, y); }
static inline void vu_store_u64(uint64_t *out, vu lo, vu hi) { store_pairs(out, lo, hi); }
static inline void xy_add(int64_t *sum, const uint32_t *c)
{
    const __m128i old = _mm_loadu_si128((const __m128i *)sum);
    _mm_storeu_si128((__m128i *)sum, _mm_add_epi64(old, xy_load(c)));
}
static inline void xy_sub(int64_t *sum, const uint32_t *c)
{
    const __m128i old = _mm_loadu_si128((const __m128i *)sum);
    _mm_storeu_si128((__m128i *)sum, _mm_sub_epi64(old, xy_load(c)));
}
#elif defined(PLEAT_ISA_NEON)
static inline void vu_store_xy(uint32_t *out, vu x, vu y)
{
    const uint32x4x2_t xy = {{x, y}};
    vst2q_u32(out, xy);
}
static inline void vu_store_u64(uint64_t *out, vu lo, vu hi)
{
    vst1q_u64(out, vreinterpretq_u64_u32(vzip1q_u32(lo, hi)));
    vst1q_u64(out + 2, vreinterpretq_u64_u32(vzip2q_u32(lo, hi)));
}
static inline void xy_add(int64_t *sum, const uint32_t *c)
{
    vst1q_s64(sum, vaddq_s64(vld1q_s64(sum), vmovl_s32(vld1_s32((const int32_t *)c))));
}
static inline void xy_sub(int64_t *sum, const uint32_t *c)
{
    vst1q_s64(sum, vsubq_s64(vld1q_s64(sum), vmovl_s32(vld1_s32((const int32_t *)c))));
}
#else
static inline void vu_store_xy(uint32_t *out, vu x, vu y)
{
    uint32_t lx[PLEAT_W], ly[PLEAT_W];
    vu_store(lx, x);
    vu_store(ly, y);
    for (int l = 0; l < PLEAT_W; ++l) {
        out[2 * l] = lx[l];
        out[2 * l + 1] = ly[l];
    }
}
static inline void vu_store_u64(uint64_t *out, vu lo, vu hi)
{
    *out = (uint64_t)hi << 32 | lo;
}
static inline void xy_add(int64_t *sum, const uint32_t *c)
{
    sum[0] += (int32_t)c[0];
    sum[1] += (int32_t)c[1];
}
static inline void xy_sub(int64_t *sum, const uint32_t *c)
{
    sum[0] -= (int32_t)c[0];
    sum[1] -= (int32_t)c[1];
}
#endif

/* Writes base + l for every lane l set in mask to out, in lane order;
 * returns how many. out has room for PLEAT_W entries. */
#if defined(PLEAT_ISA_AVX512)
static inline unsigned pleat_compress_lanes(uint32_t base, unsigned mask, uint32_t *out)
{
    /* compressed in a register, then one full store: vpcompressd straight
     * to memory is microcoded on AMD's Zen 4 */
    __m512i lanes = _mm512_add_epi32(vu_lane_numbers(), _mm512_set1_epi32((int)base));
    _mm512_storeu_si512(out, _mm512_maskz_compress_epi32((__mmask16)mask, lanes));
    return pleat_lane_count(mask);
}
#elif defined(PLEAT_ISA_AVX2)
static inline unsigned pleat_compress_lanes(uint32_t base, unsigned mask, uint32_t *out)
{
    /* for each mask, the lane numbers of its set bits, one per byte, lowest
     * first (generated: byte k of entry m is the k-th set bit of m) */
    static const uint64_t table[256] = {
    0x0000000000000000, 0x0000000000000000, 0x0000000000000001, 0x0000000000000100,
    0x0000000000000002, 0x0000000000000200, 0x0000000000000201, 0x0000000000020100,
    0x0000000000000003, 0x0000000000000300, 0x0000000000000301, 0x0000000000030100,
    0x0000000000000302, 0x0000000000030200, 0x0000000000030201, 0x0000000003020100,
    0x0000000000000004, 0x0000000000000400, 0x0000000000000401, 0x0000000000040100,
    0x0000000000000402, 0x0000000000040200, 0x0000000000040201, 0x0000000004020100,
    0x0000000000000403, 0x0000000000040300, 0x0000000000040301, 0x0000000004030100,
    0x0000000000040302, 0x0000000004030200, 0x0000000004030201, 0x0000000403020100,
    0x0000000000000005, 0x0000000000000500, 0x0000000000000501, 0x0000000000050100,
    0x0000000000000502, 0x0000000000050200, 0x0000000000050201, 0x0000000005020100,
    0x0000000000000503, 0x0000000000050300, 0x0000000000050301, 0x0000000005030100,
    0x0000000000050302, 0x0000000005030200, 0x0000000005030201, 0x0000000503020100,
    0x0000000000000504, 0x0000000000050400, 0x0000000000050401, 0x0000000005040100,
    0x0000000000050402, 0x0000000005040200, 0x0000000005040201, 0x0000000504020100,
    0x0000000000050403, 0x0000000005040300, 0x0000000005040301, 0x0000000504030100,
    0x0000000005040302, 0x0000000504030200, 0x0000000504030201, 0x0000050403020100,
    0x0000000000000006, 0x0000000000000600, 0x0000000000000601, 0x0000000000060100,
    0x0000000000000602, 0x0000000000060200, 0x0000000000060201, 0x0000000006020100,
    0x0000000000000603, 0x0000000000060300, 0x0000000000060301, 0x0000000006030100,
    0x0000000000060302, 0x0000000006030200, 0x0000000006030201, 0x0000000603020100,
    0x0000000000000604, 0x0000000000060400, 0x0000000000060401, 0x0000000006040100,
    0x0000000000060402, 0x0000000006040200, 0x0000000006040201, 0x0000000604020100,
    0x0000000000060403, 0x0000000006040300, 0x0000000006040301, 0x0000000604030100,
    0x0000000006040302, 0x0000000604030200, 0x0000000604030201, 0x0000060403020100,
    0x0000000000000605, 0x0000000000060500, 0x0000000000060501, 0x0000000006050100,
    0x0000000000060502, 0x0000000006050200, 0x0000000006050201, 0x0000000605020100,
    0x0000000000060503, 0x0000000006050300, 0x0000000006050301, 0x0000000605030100,
    0x0000000006050302, 0x0000000605030200, 0x0000000605030201, 0x0000060503020100,
    0x0000000000060504, 0x0000000006050400, 0x0000000006050401, 0x0000000605040100,
    0x0000000006050402, 0x0000000605040200, 0x0000000605040201, 0x0000060504020100,
    0x0000000006050403, 0x0000000605040300, 0x0000000605040301, 0x0000060504030100,
    0x0000000605040302, 0x0000060504030200, 0x0000060504030201, 0x0006050403020100,
    0x0000000000000007, 0x0000000000000700, 0x0000000000000701, 0x0000000000070100,
    0x0000000000000702, 0x0000000000070200, 0x0000000000070201, 0x0000000007020100,
    0x0000000000000703, 0x0000000000070300, 0x0000000000070301, 0x0000000007030100,
    0x0000000000070302, 0x0000000007030200, 0x0000000007030201, 0x0000000703020100,
    0x0000000000000704, 0x0000000000070400, 0x0000000000070401, 0x0000000007040100,
    0x0000000000070402, 0x0000000007040200, 0x0000000007040201, 0x0000000704020100,
    0x0000000000070403, 0x0000000007040300, 0x0000000007040301, 0x0000000704030100,
    0x0000000007040302, 0x0000000704030200, 0x0000000704030201, 0x0000070403020100,
    0x0000000000000705, 0x0000000000070500, 0x0000000000070501, 0x0000000007050100,
    0x0000000000070502, 0x0000000007050200, 0x0000000007050201, 0x0000000705020100,
    0x0000000000070503, 0x0000000007050300, 0x0000000007050301, 0x0000000705030100,
    0x0000000007050302, 0x0000000705030200, 0x0000000705030201, 0x0000070503020100,
    0x0000000000070504, 0x0000000007050400, 0x0000000007050401, 0x0000000705040100,
    0x0000000007050402, 0x0000000705040200, 0x0000000705040201, 0x0000070504020100,
    0x0000000007050403, 0x0000000705040300, 0x0000000705040301, 0x0000070504030100,
    0x0000000705040302, 0x0000070504030200, 0x0000070504030201, 0x0007050403020100,
    0x0000000000000706, 0x0000000000070600, 0x0000000000070601, 0x0000000007060100,
    0x0000000000070602, 0x0000000007060200, 0x0000000007060201, 0x0000000706020100,
    0x0000000000070603, 0x0000000007060300, 0x0000000007060301, 0x0000000706030100,
    0x0000000007060302, 0x0000000706030200, 0x0000000706030201, 0x0000070603020100,
    0x0000000000070604, 0x0000000007060400, 0x0000000007060401, 0x0000000706040100,
    0x0000000007060402, 0x0000000706040200, 0x0000000706040201, 0x0000070604020100,
    0x0000000007060403, 0x0000000706040300, 0x0000000706040301, 0x0000070604030100,
    0x0000000706040302, 0x0000070604030200, 0x0000070604030201, 0x0007060403020100,
    0x0000000000070605, 0x0000000007060500, 0x0000000007060501, 0x0000000706050100,
    0x0000000007060502, 0x0000000706050200, 0x0000000706050201, 0x0000070605020100,
    0x0000000007060503, 0x0000000706050300, 0x0000000706050301, 0x0000070605030100,
    0x0000000706050302, 0x0000070605030200, 0x0000070605030201, 0x0007060503020100,
    0x0000000007060504, 0x0000000706050400, 0x0000000706050401, 0x0000070605040100,
    0x0000000706050402, 0x0000070605040200, 0x0000070605040201, 0x0007060504020100,
    0x0000000706050403, 0x0000070605040300, 0x0000070605040301, 0x0007060504030100,
    0x0000070605040302, 0x0007060504030200, 0x0007060504030201, 0x0706050403020100,
    };
    __m256i lanes = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)&table[mask]));
    _mm256_storeu_si256((__m256i *)out, _mm256_add_epi32(lanes, _mm256_set1_epi32((int)base)));
    return pleat_lane_count(mask);
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

#endif
