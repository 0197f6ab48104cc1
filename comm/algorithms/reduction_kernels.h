// The element-wise reduction kernels behind reduction.h, written once and compiled once per
// instruction set: reduction.cc compiles them for the baseline x86-64 (SSE2) or the target's
// default, reduction_avx2.cc with AVX2 and F16C. Everything here has internal linkage, so each
// translation unit keeps its own copy; shared inline functions compiled with different
// instruction sets would be merged by the linker into one, possibly one this processor cannot
// run.
//
// Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#endif

#include "ftcomm/types.h"

namespace ftcomm::algorithms::kernels {
namespace {  // NOLINT(google-build-namespaces): one copy per instruction set, above

// Integer arithmetic goes through the unsigned type of the same width: wrap-around, as MPI and
// NCCL give, instead of undefined behaviour on signed overflow.
template <typename T>
T add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}

template <typename T>
T multiply(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

// NaN wins min and max (a != a only for NaN), so a NaN in the data is never silently dropped.
template <typename T>
T minimum(T a, T b) {
  return (a < b || a != a) ? a : b;
}

template <typename T>
T maximum(T a, T b) {
  return (a > b || a != a) ? a : b;
}

// Two loops, so that each has restrict-qualified pointers the compiler can vectorize: in place
// (out is a), or into a third buffer.
template <typename T, typename Combine>
void combine(T* out, const T* a, const T* __restrict b, std::size_t count, Combine f) {
  if (out == a) {
    T* __restrict inout = out;
    for (std::size_t i = 0; i < count; ++i) inout[i] = f(inout[i], b[i]);
    return;
  }
  T* __restrict to = out;
  const T* __restrict from = a;
  for (std::size_t i = 0; i < count; ++i) to[i] = f(from[i], b[i]);
}

template <typename T>
void reduceTyped(ReduceOp op, T* out, const T* a, const T* b, std::size_t count) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      combine(out, a, b, count, add<T>);
      return;
    case ReduceOp::kProd:
      combine(out, a, b, count, multiply<T>);
      return;
    case ReduceOp::kMin:
      combine(out, a, b, count, minimum<T>);
      return;
    case ReduceOp::kMax:
      combine(out, a, b, count, maximum<T>);
      return;
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      if constexpr (std::is_integral_v<T>) {
        if (op == ReduceOp::kBand) combine(out, a, b, count, [](T x, T y) -> T { return x & y; });
        if (op == ReduceOp::kBor) combine(out, a, b, count, [](T x, T y) -> T { return x | y; });
        if (op == ReduceOp::kBxor) combine(out, a, b, count, [](T x, T y) -> T { return x ^ y; });
      }
      return;
  }
}

// x where `pick`, else y, without a branch.
inline std::uint32_t select(bool pick, std::uint32_t x, std::uint32_t y) {
  const std::uint32_t mask = 0u - static_cast<std::uint32_t>(pick);
  return (x & mask) | (y & ~mask);
}

// The 16-bit conversions without branches, so that the loops below vectorize (a loop over
// the branching forms ran at 0.5 GB/s for float16 and 2.6 GB/s for bfloat16, against 34 GB/s
// for float32, in cache on the EPYC VM): every case is computed and the right one selected.
inline float widenHalf(std::uint16_t half) {
  const std::uint32_t sign = static_cast<std::uint32_t>(half & 0x8000) << 16;
  const std::uint32_t magnitude = half & 0x7fff;
  const std::uint32_t exponent = magnitude >> 10;
  // Rebias the exponent from 15 to 127, and an infinity's or NaN's from 31 to 255.
  const std::uint32_t normal = (magnitude << 13) + (112u << 23);
  const std::uint32_t special = normal + (112u << 23);
  // Zero or subnormal: mantissa * 2^-24, exact in float32.
  const std::uint32_t subnormal = std::bit_cast<std::uint32_t>(
      static_cast<float>(static_cast<std::int32_t>(magnitude)) * 0x1p-24f);
  const std::uint32_t bits =
      select(exponent == 0, subnormal, select(exponent == 31, special, normal));
  return std::bit_cast<float>(sign | bits);
}

inline std::uint16_t narrowHalf(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = (bits >> 16) & 0x8000;
  const std::uint32_t magnitude = bits & 0x7fffffff;
  // A normal half: rebias the exponent from 127 to 15 and round the 13 bits dropped to nearest
  // even (a carry may lift the exponent, up to infinity).
  const std::uint32_t normal = (magnitude - (112u << 23) + 0xfff + ((magnitude >> 13) & 1)) >> 13;
  // Below 2^-14, a subnormal half or zero: adding 0.5 (whose last place is 2^-24, a subnormal
  // half's) rounds to nearest even in the floating-point unit (its default mode, which the
  // float32 reductions rely on too), and the low bits are the half.
  const std::uint32_t subnormal =
      std::bit_cast<std::uint32_t>(std::bit_cast<float>(magnitude) + 0.5f) - 0x3f000000u;
  // 2^16 and above: infinity; a NaN stays a NaN, quiet, with the top of its payload.
  const std::uint32_t special =
      select(magnitude > 0x7f800000, 0x7e00 | ((magnitude >> 13) & 0x1ff), 0x7c00);
  const std::uint32_t half =
      select(magnitude < 0x38800000, subnormal, select(magnitude < 0x47800000, normal, special));
  return static_cast<std::uint16_t>(sign | half);
}

inline float widenBfloat16(std::uint16_t value) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(value) << 16);
}

inline std::uint16_t narrowBfloat16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t rounded = (bits + 0x7fff + ((bits >> 16) & 1)) >> 16;
  const std::uint32_t quiet = (bits >> 16) | 0x0040;  // a NaN stays a NaN
  return static_cast<std::uint16_t>(select((bits & 0x7fffffff) > 0x7f800000, quiet, rounded));
}

// 16-bit floats: each element widened to float32, reduced there, and narrowed back once.
template <float (*Widen)(std::uint16_t), std::uint16_t (*Narrow)(float), typename Combine>
void combineNarrow(std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* __restrict b,
                   std::size_t count, Combine f) {
  if (out == a) {
    std::uint16_t* __restrict inout = out;
    for (std::size_t i = 0; i < count; ++i) inout[i] = Narrow(f(Widen(inout[i]), Widen(b[i])));
    return;
  }
  std::uint16_t* __restrict to = out;
  const std::uint16_t* __restrict from = a;
  for (std::size_t i = 0; i < count; ++i) to[i] = Narrow(f(Widen(from[i]), Widen(b[i])));
}

template <float (*Widen)(std::uint16_t), std::uint16_t (*Narrow)(float)>
void reduceNarrowFloat(ReduceOp op, std::uint16_t* out, const std::uint16_t* a,
                       const std::uint16_t* b, std::size_t count) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      combineNarrow<Widen, Narrow>(out, a, b, count, add<float>);
      return;
    case ReduceOp::kProd:
      combineNarrow<Widen, Narrow>(out, a, b, count, multiply<float>);
      return;
    case ReduceOp::kMin:
      combineNarrow<Widen, Narrow>(out, a, b, count, minimum<float>);
      return;
    case ReduceOp::kMax:
      combineNarrow<Widen, Narrow>(out, a, b, count, maximum<float>);
      return;
    default:
      return;  // bitwise: refused by checkReduction
  }
}

#if defined(__AVX2__) && defined(__F16C__)
// The AVX2 build's 16-bit paths.
//
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

// bfloat16 sums with AVX2, 16 elements at a time and no shuffles: a bfloat16 is the top half of
// a float32, so the even elements of a vector widen by a shift and the odd ones by a mask, and
// the results go back the same way. Rounding and NaN as narrowBfloat16.
inline __m256 roundedToBfloat16(__m256 value) {  // the result in the top half of each lane
  const __m256i bits = _mm256_castps_si256(value);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7fff)), odd);
  const __m256i quiet = _mm256_or_si256(bits, _mm256_set1_epi32(0x00400000));  // a NaN stays one
  return _mm256_blendv_ps(_mm256_castsi256_ps(rounded), _mm256_castsi256_ps(quiet),
                          _mm256_cmp_ps(value, value, _CMP_UNORD_Q));
}

bool sumBfloat16(ReduceOp op, std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
                 std::size_t count) {
  if (op != ReduceOp::kSum && op != ReduceOp::kAvg) return false;
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
  return true;
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

bool sumBfloat16(ReduceOp, std::uint16_t*, const std::uint16_t*, const std::uint16_t*,
                 std::size_t) {
  return false;
}
#endif

// Calls reduceTyped (or reduceNarrowFloat) with the pointers cast to `type`'s element type.
template <typename T>
void reduceAs(ReduceOp op, void* out, const void* a, const void* b, std::size_t count) {
  reduceTyped(op, static_cast<T*>(out), static_cast<const T*>(a), static_cast<const T*>(b), count);
}

template <typename T>
void divideTyped(T* data, std::size_t count, int contributors) {
  const T divisor = static_cast<T>(contributors);
  for (std::size_t i = 0; i < count; ++i) data[i] /= divisor;
}

template <float (*Widen)(std::uint16_t), std::uint16_t (*Narrow)(float)>
void divideNarrowFloat(std::uint16_t* data, std::size_t count, int contributors) {
  const float divisor = static_cast<float>(contributors);
  for (std::size_t i = 0; i < count; ++i) data[i] = Narrow(Widen(data[i]) / divisor);
}

// out[i] = a[i] OP b[i] for `type`; the combination was checked (checkReduction).
void reduceAny(DataType type, ReduceOp op, void* out, const void* a, const void* b,
               std::size_t count) {
  switch (type) {
    case DataType::kInt8:
      reduceAs<std::int8_t>(op, out, a, b, count);
      return;
    case DataType::kUint8:
      reduceAs<std::uint8_t>(op, out, a, b, count);
      return;
    case DataType::kInt32:
      reduceAs<std::int32_t>(op, out, a, b, count);
      return;
    case DataType::kUint32:
      reduceAs<std::uint32_t>(op, out, a, b, count);
      return;
    case DataType::kInt64:
      reduceAs<std::int64_t>(op, out, a, b, count);
      return;
    case DataType::kUint64:
      reduceAs<std::uint64_t>(op, out, a, b, count);
      return;
    case DataType::kFloat16:
      reduceHalf(op, static_cast<std::uint16_t*>(out), static_cast<const std::uint16_t*>(a),
                 static_cast<const std::uint16_t*>(b), count);
      return;
    case DataType::kBFloat16:
      if (sumBfloat16(op, static_cast<std::uint16_t*>(out), static_cast<const std::uint16_t*>(a),
                      static_cast<const std::uint16_t*>(b), count))
        return;
      reduceNarrowFloat<widenBfloat16, narrowBfloat16>(op, static_cast<std::uint16_t*>(out),
                                                       static_cast<const std::uint16_t*>(a),
                                                       static_cast<const std::uint16_t*>(b), count);
      return;
    case DataType::kFloat32:
      reduceAs<float>(op, out, a, b, count);
      return;
    case DataType::kFloat64:
      reduceAs<double>(op, out, a, b, count);
      return;
  }
}

// Divides each element by `contributors`; floating types only (checked).
void divideAny(DataType type, void* data, std::size_t count, int contributors) {
  switch (type) {
    case DataType::kFloat16:
#if defined(__AVX2__) && defined(__F16C__)
      divideHalf(static_cast<std::uint16_t*>(data), count, contributors);
#else
      divideNarrowFloat<widenHalf, narrowHalf>(static_cast<std::uint16_t*>(data), count,
                                               contributors);
#endif
      return;
    case DataType::kBFloat16:
#if defined(__AVX2__) && defined(__F16C__)
      divideBfloat16(static_cast<std::uint16_t*>(data), count, contributors);
#else
      divideNarrowFloat<widenBfloat16, narrowBfloat16>(static_cast<std::uint16_t*>(data), count,
                                                       contributors);
#endif
      return;
    case DataType::kFloat32:
      divideTyped(static_cast<float*>(data), count, contributors);
      return;
    case DataType::kFloat64:
      divideTyped(static_cast<double*>(data), count, contributors);
      return;
    default:
      return;
  }
}

}  // namespace
}  // namespace ftcomm::algorithms::kernels
