// The 16-bit float paths of each build: reduceHalf, reduceBfloat16, divideHalf and
// divideBfloat16. The AVX2 build (reduction_avx2.cc) has its own; the baseline widens each
// element to float32 with the branch-free conversions of reduction_kernels.h. Both give the same
// bits (tests/unit/reduction_isa_test.cc).
//
// Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#endif

#include "algorithms/reduction_kernels.h"

namespace ftcomm::algorithms::kernels {
namespace {  // NOLINT(google-build-namespaces): one copy per instruction set (reduction_kernels.h)

#if defined(__AVX2__) && defined(__F16C__)
// float16 with the processor's conversions (vcvtph2ps, vcvtps2ph, rounding to nearest even; a
// NaN stays quiet with the top of its payload, as narrowHalf): sums and the average's division
// in one pass of 8 elements at a time; the other operators through a block of each input widened
// into float32 arrays that stay in the first-level cache, reduced there, and narrowed back. (A
// fused loop over _Float16 values let the compiler compare in _Float16 through library calls.)
constexpr std::size_t kHalfBlock = 512;

inline void widenHalves(float* to, const std::uint16_t* from, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(to + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i))));
  for (; i < n; ++i) to[i] = widenHalf(from[i]);
}

inline void narrowHalves(std::uint16_t* to, const float* from, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(to + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(from + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) to[i] = narrowHalf(from[i]);
}

void reduceHalf(ReduceOp op, std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
                std::size_t count) {
  if (op == ReduceOp::kSum || op == ReduceOp::kAvg) {  // the common case, in one pass
    std::size_t i = 0;
    for (; i + 8 <= count; i += 8) {
      const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
      const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                       _mm256_cvtps_ph(_mm256_add_ps(x, y), _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < count; ++i) out[i] = narrowHalf(widenHalf(a[i]) + widenHalf(b[i]));
    return;
  }
  alignas(32) float x[kHalfBlock], y[kHalfBlock];
  for (std::size_t start = 0; start < count; start += kHalfBlock) {
    const std::size_t n = std::min(kHalfBlock, count - start);
    widenHalves(x, a + start, n);
    widenHalves(y, b + start, n);
    reduceTyped(op, x, x, y, n);
    narrowHalves(out + start, x, n);
  }
}

void divideHalf(std::uint16_t* data, std::size_t count, int contributors) {
  const float divisor = static_cast<float>(contributors);
  const __m256 divisors = _mm256_set1_ps(divisor);
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    auto* at = reinterpret_cast<__m128i*>(data + i);
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(at));
    _mm_storeu_si128(at, _mm256_cvtps_ph(_mm256_div_ps(x, divisors), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < count; ++i) data[i] = narrowHalf(widenHalf(data[i]) / divisor);
}

// bfloat16 sums and divisions with AVX2, 16 elements at a time and no shuffles: a bfloat16 is the
// top half of a float32, so the even elements of a vector widen by a shift and the odd ones by a
// mask, and the results go back the same way. Rounding and NaN as narrowBfloat16.
inline __m256 roundedToBfloat16(__m256 value) {  // the result in the top half of each lane
  const __m256i bits = _mm256_castps_si256(value);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7fff)), odd);
  const __m256i quiet = _mm256_or_si256(bits, _mm256_set1_epi32(0x00400000));  // a NaN stays one
  return _mm256_blendv_ps(_mm256_castsi256_ps(rounded), _mm256_castsi256_ps(quiet),
                          _mm256_cmp_ps(value, value, _CMP_UNORD_Q));
}

void reduceBfloat16(ReduceOp op, std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
                    std::size_t count) {
  if (op != ReduceOp::kSum && op != ReduceOp::kAvg) {
    reduceNarrowFloat<widenBfloat16, narrowBfloat16>(op, out, a, b, count);
    return;
  }
  const __m256i top = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  std::size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
    const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i));
    const __m256 even =
        roundedToBfloat16(_mm256_add_ps(_mm256_castsi256_ps(_mm256_slli_epi32(x, 16)),
                                        _mm256_castsi256_ps(_mm256_slli_epi32(y, 16))));
    const __m256 odd =
        roundedToBfloat16(_mm256_add_ps(_mm256_castsi256_ps(_mm256_and_si256(x, top)),
                                        _mm256_castsi256_ps(_mm256_and_si256(y, top))));
    // The even results down into the low halves, the odd ones kept in the top halves.
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm256_blend_epi16(_mm256_srli_epi32(_mm256_castps_si256(even), 16),
                                           _mm256_castps_si256(odd), 0xaa));
  }
  for (; i < count; ++i) out[i] = narrowBfloat16(widenBfloat16(a[i]) + widenBfloat16(b[i]));
}

void divideBfloat16(std::uint16_t* data, std::size_t count, int contributors) {
  const float divisor = static_cast<float>(contributors);
  const __m256 divisors = _mm256_set1_ps(divisor);
  const __m256i top = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  std::size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    auto* at = reinterpret_cast<__m256i*>(data + i);
    const __m256i x = _mm256_loadu_si256(at);
    const __m256 even =
        roundedToBfloat16(_mm256_div_ps(_mm256_castsi256_ps(_mm256_slli_epi32(x, 16)), divisors));
    const __m256 odd =
        roundedToBfloat16(_mm256_div_ps(_mm256_castsi256_ps(_mm256_and_si256(x, top)), divisors));
    _mm256_storeu_si256(at, _mm256_blend_epi16(_mm256_srli_epi32(_mm256_castps_si256(even), 16),
                                               _mm256_castps_si256(odd), 0xaa));
  }
  for (; i < count; ++i) data[i] = narrowBfloat16(widenBfloat16(data[i]) / divisor);
}
#else
void reduceHalf(ReduceOp op, std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
                std::size_t count) {
  reduceNarrowFloat<widenHalf, narrowHalf>(op, out, a, b, count);
}

void reduceBfloat16(ReduceOp op, std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
                    std::size_t count) {
  reduceNarrowFloat<widenBfloat16, narrowBfloat16>(op, out, a, b, count);
}

void divideHalf(std::uint16_t* data, std::size_t count, int contributors) {
  divideNarrowFloat<widenHalf, narrowHalf>(data, count, contributors);
}

void divideBfloat16(std::uint16_t* data, std::size_t count, int contributors) {
  divideNarrowFloat<widenBfloat16, narrowBfloat16>(data, count, contributors);
}
#endif

}  // namespace
}  // namespace ftcomm::algorithms::kernels
