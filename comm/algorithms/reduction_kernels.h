// The element-wise reduction kernels' building blocks, written once and compiled once per
// instruction set: reduction.cc compiles them for the baseline x86-64 (SSE2) or the target's
// default, reduction_avx2.cc with AVX2 and F16C (reduction_by_type.h puts them together per
// type, reduction_float16.h adds the 16-bit paths of each build). Everything here has internal
// linkage, so each translation unit keeps its own copy; shared inline functions compiled with
// different instruction sets would be merged by the linker into one, possibly one this
// processor cannot run.
//
// Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__AVX2__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "algorithms/reduction_isa.h"
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

constexpr std::size_t kLineBytes = 64;

// Stores the cache line at `line` into `to` (both kLineBytes-aligned) around the cache, with
// this build's widest non-temporal store. streamsDone() orders them before what follows.
inline void streamLine(void* to, const void* line) {
#if defined(__AVX2__)
  auto* into = static_cast<__m256i*>(to);
  const auto* from = static_cast<const __m256i*>(line);
  _mm256_stream_si256(into, _mm256_load_si256(from));
  _mm256_stream_si256(into + 1, _mm256_load_si256(from + 1));
#elif defined(__SSE2__)
  auto* into = static_cast<__m128i*>(to);
  const auto* from = static_cast<const __m128i*>(line);
  for (int i = 0; i < 4; ++i) _mm_stream_si128(into + i, _mm_load_si128(from + i));
#else
  std::memcpy(to, line, kLineBytes);
#endif
}

inline void streamsDone() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// combine() whose stores go around the cache: each output line is computed into a line on the
// stack and stored from there with non-temporal stores. A plain store first reads the line it
// writes, from memory where the result outgrows the cache (ftcomm-bench-reduction: from memory
// faster, in the cache slower; the profile's result_around_cache_from says from where, and
// docs/tuning.md gives the figures). The line's loop is kept a loop: unrolled whole before the
// compiler vectorized it, the NaN-aware minimum and maximum stayed scalar (0.4-0.75x plain stores
// from memory). Elements before the first whole line of `out`, and after the last, are stored
// plainly, and all of them where `out` is not aligned to its element.
template <typename T, typename Combine>
void combineAroundCache(T* out, const T* a, const T* b, std::size_t count, Combine f) {
  constexpr std::size_t kPerLine = kLineBytes / sizeof(T);
  std::size_t i = 0;
  if (reinterpret_cast<std::uintptr_t>(out) % alignof(T) == 0) {
    for (; i < count && reinterpret_cast<std::uintptr_t>(out + i) % kLineBytes != 0; ++i)
      out[i] = f(a[i], b[i]);
    for (; i + kPerLine <= count; i += kPerLine) {
      alignas(kLineBytes) T line[kPerLine];
#pragma GCC unroll 1
      for (std::size_t j = 0; j < kPerLine; ++j) line[j] = f(a[i + j], b[i + j]);
      streamLine(out + i, line);
    }
    streamsDone();
  }
  for (; i < count; ++i) out[i] = f(a[i], b[i]);
}

template <typename T, typename Combine>
void combineWith(Stores stores, T* out, const T* a, const T* b, std::size_t count, Combine f) {
  if (stores == Stores::kAroundCache) {
    combineAroundCache(out, a, b, count, f);
  } else {
    combine(out, a, b, count, f);
  }
}

// Each operator as a lambda, a type of its own (here and in reduceNarrowFloat): through a
// function pointer, a loop the compiler did not inline (combineAroundCache's) called the operator
// once per element.
template <typename T>
void reduceTyped(ReduceOp op, T* out, const T* a, const T* b, std::size_t count,
                 Stores stores = Stores::kPlain) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      combineWith(stores, out, a, b, count, [](T x, T y) { return add(x, y); });
      return;
    case ReduceOp::kProd:
      combineWith(stores, out, a, b, count, [](T x, T y) { return multiply(x, y); });
      return;
    case ReduceOp::kMin:
      combineWith(stores, out, a, b, count, [](T x, T y) { return minimum(x, y); });
      return;
    case ReduceOp::kMax:
      combineWith(stores, out, a, b, count, [](T x, T y) { return maximum(x, y); });
      return;
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      if constexpr (std::is_integral_v<T>) {
        if (op == ReduceOp::kBand)
          combineWith(stores, out, a, b, count, [](T x, T y) -> T { return x & y; });
        if (op == ReduceOp::kBor)
          combineWith(stores, out, a, b, count, [](T x, T y) -> T { return x | y; });
        if (op == ReduceOp::kBxor)
          combineWith(stores, out, a, b, count, [](T x, T y) -> T { return x ^ y; });
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
      combineNarrow<Widen, Narrow>(out, a, b, count, [](float x, float y) { return add(x, y); });
      return;
    case ReduceOp::kProd:
      combineNarrow<Widen, Narrow>(out, a, b, count,
                                   [](float x, float y) { return multiply(x, y); });
      return;
    case ReduceOp::kMin:
      combineNarrow<Widen, Narrow>(out, a, b, count,
                                   [](float x, float y) { return minimum(x, y); });
      return;
    case ReduceOp::kMax:
      combineNarrow<Widen, Narrow>(out, a, b, count,
                                   [](float x, float y) { return maximum(x, y); });
      return;
    default:
      return;  // bitwise: refused by checkReduction
  }
}

// Calls reduceTyped (or reduceNarrowFloat) with the pointers cast to `type`'s element type.
template <typename T>
void reduceAs(ReduceOp op, void* out, const void* a, const void* b, std::size_t count,
              Stores stores) {
  reduceTyped(op, static_cast<T*>(out), static_cast<const T*>(a), static_cast<const T*>(b), count,
              stores);
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

}  // namespace
}  // namespace ftcomm::algorithms::kernels
