// The reduction kernels by element type: what reduction.cc (the baseline build) and
// reduction_avx2.cc (the AVX2 build) compile, each its own copy (reduction_kernels.h).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/reduction_float16.h"
#include "algorithms/reduction_kernels.h"
#include "ftcomm/types.h"

namespace ftcomm::algorithms::kernels {
namespace {  // NOLINT(google-build-namespaces): one copy per instruction set (reduction_kernels.h)

// out[i] = a[i] OP b[i] for `type`; the combination was checked (checkReduction). float16 and
// bfloat16 store plainly whatever `stores` says (their loops are their own: reduction_float16.h).
void reduceAny(DataType type, ReduceOp op, void* out, const void* a, const void* b,
               std::size_t count, Stores stores = Stores::kPlain) {
  switch (type) {
    case DataType::kInt8:
      reduceAs<std::int8_t>(op, out, a, b, count, stores);
      return;
    case DataType::kUint8:
      reduceAs<std::uint8_t>(op, out, a, b, count, stores);
      return;
    case DataType::kInt32:
      reduceAs<std::int32_t>(op, out, a, b, count, stores);
      return;
    case DataType::kUint32:
      reduceAs<std::uint32_t>(op, out, a, b, count, stores);
      return;
    case DataType::kInt64:
      reduceAs<std::int64_t>(op, out, a, b, count, stores);
      return;
    case DataType::kUint64:
      reduceAs<std::uint64_t>(op, out, a, b, count, stores);
      return;
    case DataType::kFloat16:
      reduceHalf(op, static_cast<std::uint16_t*>(out), static_cast<const std::uint16_t*>(a),
                 static_cast<const std::uint16_t*>(b), count);
      return;
    case DataType::kBFloat16:
      reduceBfloat16(op, static_cast<std::uint16_t*>(out), static_cast<const std::uint16_t*>(a),
                     static_cast<const std::uint16_t*>(b), count);
      return;
    case DataType::kFloat32:
      reduceAs<float>(op, out, a, b, count, stores);
      return;
    case DataType::kFloat64:
      reduceAs<double>(op, out, a, b, count, stores);
      return;
  }
}

// Divides each element by `contributors`; floating types only (checked).
void divideAny(DataType type, void* data, std::size_t count, int contributors) {
  switch (type) {
    case DataType::kFloat16:
      divideHalf(static_cast<std::uint16_t*>(data), count, contributors);
      return;
    case DataType::kBFloat16:
      divideBfloat16(static_cast<std::uint16_t*>(data), count, contributors);
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
