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
static inline vu vu_load(const uint32_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
static inline vu vu_set1(uint32_t x) { return _mm256_set1_epi32((int)x); }
/* unsigned a < b: flip the sign bits, compare signed */
static inline unsigned vu_lt(vu a, vu b)
{
    const __m256i flip = _mm256_set1_epi32(INT32_MIN);
    __m256i lt = _mm256_cmpgt_epi32(_mm256_xor_si256(b, flip), _mm256_xor_si256(a, flip));
    return (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(lt));
}
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
static inline vu vu_load(const uint32_t *p) { return _mm_loadu_si128((const __m128i *)p); }
static inline vu vu_set1(uint32_t x) { return _mm_set1_epi32((int)x); }
static inline unsigned vu_lt(vu a, vu b)
{
    const __m128i flip = _mm_set1_epi32(INT32_MIN);
    __m128i lt = _mm_cmplt_epi32(_mm_xor_si128(a, flip), _mm_xor_si128(b, flip));
    return (unsigned)_mm_movemask_ps(_mm_castsi128_ps(lt));
}
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
static inline vu vu_load(const uint32_t *p) { return vld1q_u32(p); }
static inline vu vu_set1(uint32_t x) { return vdupq_n_u32(x); }
static inline unsigned vu_lt(vu a, vu b) { return neon_mask(vcltq_u32(a, b)); }
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
static inline vu vu_load(const uint32_t *p) { return *p; }
static inline vu vu_set1(uint32_t x) { return x; }
static inline unsigned vu_lt(vu a, vu b) { return a < b; }
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

/* Index of the lowest set bit of a nonzero mask. */
static inline unsigned pleat_lowest_lane(unsigned mask)
{
    return (unsigned)__builtin_ctz(mask);
}

#endif
