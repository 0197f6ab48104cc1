// What the facade knows of an operation when it schedules it, as the flight recorder keeps it.
#pragma once

#include <cstdint>

#include "ftcomm/proto/recorder.pb.h"
#include "ftcomm/types.h"

namespace ftcomm::recorder {

namespace pb = ::ftcomm::recorder::v1;

// The recorded form of an operation's element type and operator (the proto's enums follow
// ftcomm's, shifted by their UNSPECIFIED).
inline pb::DataType recordedType(DataType dtype) {
  return static_cast<pb::DataType>(static_cast<int>(dtype) + 1);
}
inline pb::ReduceOp recordedOp(ReduceOp op) {
  return static_cast<pb::ReduceOp>(static_cast<int>(op) + 1);
}

// What the facade knows of an operation when it schedules it.
struct OpDescriptor {
  std::uint64_t commId = 0;
  std::uint64_t epoch = 0;
  std::uint64_t seq = 0;
  pb::OpType op = pb::OP_UNSPECIFIED;
  pb::DataType dtype = pb::DTYPE_UNSPECIFIED;
  std::uint64_t countIn = 0;
  std::uint64_t countOut = 0;
  std::int32_t root = -1;
  std::int32_t peer = -1;
  std::int32_t tag = 0;
  pb::ReduceOp reduceOp = pb::REDUCE_OP_UNSPECIFIED;
  const char* algorithm = "";  // must have static storage (algorithms are named by literals)
};

}  // namespace ftcomm::recorder
