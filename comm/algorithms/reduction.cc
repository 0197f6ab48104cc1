#include "algorithms/reduction.h"

#include <algorithm>
#include <bit>
#include <type_traits>

namespace ftcomm::algorithms {

namespace {

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

// 16-bit floats: widen a block to float32, reduce there, narrow back once per element.
template <float (*Widen)(std::uint16_t), std::uint16_t (*Narrow)(float)>
void reduceNarrowFloat(ReduceOp op, std::uint16_t* out, const std::uint16_t* a,
                       const std::uint16_t* b, std::size_t count) {
  constexpr std::size_t kBlock = 256;
  float x[kBlock], y[kBlock];
  for (std::size_t start = 0; start < count; start += kBlock) {
    const std::size_t n = std::min(kBlock, count - start);
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = Widen(a[start + i]);
      y[i] = Widen(b[start + i]);
    }
    reduceTyped(op, x, x, y, n);
    for (std::size_t i = 0; i < n; ++i) out[start + i] = Narrow(x[i]);
  }
}

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

}  // namespace

float halfToFloat(std::uint16_t half) {
  const std::uint32_t sign = static_cast<std::uint32_t>(half & 0x8000) << 16;
  const std::uint32_t exponent = (half >> 10) & 0x1f;
  const std::uint32_t mantissa = half & 0x3ff;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float32.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

std::uint16_t floatToHalf(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000);
  const std::uint32_t magnitude = bits & 0x7fffffff;
  if (magnitude >= 0x7f800000) {  // infinity or NaN (kept quiet, and still a NaN)
    return magnitude == 0x7f800000
               ? static_cast<std::uint16_t>(sign | 0x7c00)
               : static_cast<std::uint16_t>(sign | 0x7e00 | ((magnitude >> 13) & 0x1ff));
  }
  if (magnitude >= 0x477ff000) return static_cast<std::uint16_t>(sign | 0x7c00);  // >= 65520
  if (magnitude < 0x38800000) {                // below 2^-14: a subnormal half, or zero
    if (magnitude <= 0x33000000) return sign;  // at most 2^-25: rounds to zero (a tie goes even)
    const std::uint32_t exponent = magnitude >> 23;
    const std::uint32_t mantissa = (magnitude & 0x7fffff) | 0x800000;
    const std::uint32_t shift = 126 - exponent;
    std::uint32_t half = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1);
    const std::uint32_t tie = 1u << (shift - 1);
    if (rest > tie || (rest == tie && (half & 1))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = (magnitude - 0x38000000) >> 13;  // rebias the exponent from 127 to 15
  const std::uint32_t rest = magnitude & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;  // a carry may lift the exponent
  return static_cast<std::uint16_t>(sign | half);
}

float bfloat16ToFloat(std::uint16_t value) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(value) << 16);
}

std::uint16_t floatToBfloat16(float value) {
  std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7fffffff) > 0x7f800000) return static_cast<std::uint16_t>((bits >> 16) | 0x0040);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<std::uint16_t>(bits >> 16);
}

Status reduceInto(DataType type, ReduceOp op, void* inout, const void* in, std::size_t count) {
  return reduceFrom(type, op, inout, inout, in, count);
}

Status reduceFrom(DataType type, ReduceOp op, void* out, const void* a, const void* b,
                  std::size_t count) {
  FTCOMM_RETURN_IF_ERROR(checkReduction(type, op));
  switch (type) {
    case DataType::kInt8:
      reduceAs<std::int8_t>(op, out, a, b, count);
      break;
    case DataType::kUint8:
      reduceAs<std::uint8_t>(op, out, a, b, count);
      break;
    case DataType::kInt32:
      reduceAs<std::int32_t>(op, out, a, b, count);
      break;
    case DataType::kUint32:
      reduceAs<std::uint32_t>(op, out, a, b, count);
      break;
    case DataType::kInt64:
      reduceAs<std::int64_t>(op, out, a, b, count);
      break;
    case DataType::kUint64:
      reduceAs<std::uint64_t>(op, out, a, b, count);
      break;
    case DataType::kFloat16:
      reduceNarrowFloat<halfToFloat, floatToHalf>(op, static_cast<std::uint16_t*>(out),
                                                  static_cast<const std::uint16_t*>(a),
                                                  static_cast<const std::uint16_t*>(b), count);
      break;
    case DataType::kBFloat16:
      reduceNarrowFloat<bfloat16ToFloat, floatToBfloat16>(
          op, static_cast<std::uint16_t*>(out), static_cast<const std::uint16_t*>(a),
          static_cast<const std::uint16_t*>(b), count);
      break;
    case DataType::kFloat32:
      reduceAs<float>(op, out, a, b, count);
      break;
    case DataType::kFloat64:
      reduceAs<double>(op, out, a, b, count);
      break;
  }
  return Status::Ok();
}

Status finishAverage(DataType type, void* data, std::size_t count, int contributors) {
  FTCOMM_RETURN_IF_ERROR(checkReduction(type, ReduceOp::kAvg));
  if (contributors < 1)
    return invalidArgument("average over " + std::to_string(contributors) + " contributors");
  switch (type) {
    case DataType::kFloat16:
      divideNarrowFloat<halfToFloat, floatToHalf>(static_cast<std::uint16_t*>(data), count,
                                                  contributors);
      break;
    case DataType::kBFloat16:
      divideNarrowFloat<bfloat16ToFloat, floatToBfloat16>(static_cast<std::uint16_t*>(data), count,
                                                          contributors);
      break;
    case DataType::kFloat32:
      divideTyped(static_cast<float*>(data), count, contributors);
      break;
    case DataType::kFloat64:
      divideTyped(static_cast<double*>(data), count, contributors);
      break;
    default:
      break;  // integer types were refused above
  }
  return Status::Ok();
}

}  // namespace ftcomm::algorithms
