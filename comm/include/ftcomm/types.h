// Element types and reduction operators of ftcomm's operations, with one traits table each
// (the enum is the key; nothing else lists them).
//
// Thread-safety: constants only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ftcomm/status.h"

namespace ftcomm {

enum class DataType : std::uint8_t {
  kInt8,
  kUint8,
  kInt32,
  kUint32,
  kInt64,
  kUint64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
};

enum class ReduceOp : std::uint8_t {
  kSum,
  kProd,
  kMin,
  kMax,
  kAvg,   // floating types only: a sum divided by the number of contributors
  kBand,  // integer types only
  kBor,
  kBxor,
};

struct DataTypeTraits {
  DataType type;
  std::string_view name;
  std::size_t bytes;
  bool floating;
};

inline constexpr std::array<DataTypeTraits, 10> kDataTypes{{
    {DataType::kInt8, "int8", 1, false},
    {DataType::kUint8, "uint8", 1, false},
    {DataType::kInt32, "int32", 4, false},
    {DataType::kUint32, "uint32", 4, false},
    {DataType::kInt64, "int64", 8, false},
    {DataType::kUint64, "uint64", 8, false},
    {DataType::kFloat16, "float16", 2, true},
    {DataType::kBFloat16, "bfloat16", 2, true},
    {DataType::kFloat32, "float32", 4, true},
    {DataType::kFloat64, "float64", 8, true},
}};

struct ReduceOpTraits {
  ReduceOp op;
  std::string_view name;
  bool floatingAllowed;
  bool integerAllowed;
};

inline constexpr std::array<ReduceOpTraits, 8> kReduceOps{{
    {ReduceOp::kSum, "sum", true, true},
    {ReduceOp::kProd, "prod", true, true},
    {ReduceOp::kMin, "min", true, true},
    {ReduceOp::kMax, "max", true, true},
    {ReduceOp::kAvg, "avg", true, false},
    {ReduceOp::kBand, "band", false, true},
    {ReduceOp::kBor, "bor", false, true},
    {ReduceOp::kBxor, "bxor", false, true},
}};

constexpr bool tablesFollowEnums() {
  for (std::size_t i = 0; i < kDataTypes.size(); ++i) {
    if (static_cast<std::size_t>(kDataTypes[i].type) != i) return false;
  }
  for (std::size_t i = 0; i < kReduceOps.size(); ++i) {
    if (static_cast<std::size_t>(kReduceOps[i].op) != i) return false;
  }
  return true;
}
static_assert(tablesFollowEnums(), "kDataTypes and kReduceOps must list the enums in order");

constexpr const DataTypeTraits& traitsOf(DataType type) {
  return kDataTypes[static_cast<std::size_t>(type)];
}
constexpr const ReduceOpTraits& traitsOf(ReduceOp op) {
  return kReduceOps[static_cast<std::size_t>(op)];
}
constexpr std::size_t dataTypeSize(DataType type) {
  return traitsOf(type).bytes;
}
constexpr std::string_view dataTypeName(DataType type) {
  return traitsOf(type).name;
}
constexpr std::string_view reduceOpName(ReduceOp op) {
  return traitsOf(op).name;
}

// Ok when `op` is defined on `type` (AVG wants a floating type; BAND/BOR/BXOR an integer one).
inline Status checkReduction(DataType type, ReduceOp op) {
  // Values outside the enums (a cast integer) are named, not looked up past the tables' ends.
  if (static_cast<std::size_t>(op) >= kReduceOps.size()) {
    return invalidArgument("unknown reduce op " + std::to_string(static_cast<int>(op)));
  }
  if (static_cast<std::size_t>(type) >= kDataTypes.size()) {
    return invalidArgument("unknown dtype " + std::to_string(static_cast<int>(type)));
  }
  const bool floating = traitsOf(type).floating;
  if (floating ? traitsOf(op).floatingAllowed : traitsOf(op).integerAllowed) return Status::Ok();
  return invalidArgument(
      "reduce op " + std::string(reduceOpName(op)) + " is not defined on " +
      std::string(dataTypeName(type)) +
      (floating ? " (bitwise ops take integer types)" : " (avg takes floating types)"));
}

}  // namespace ftcomm
