// What every message says about the operation it belongs to. Each message carries its sender's
// signature in a small header, and a receiver compares it with its own: a peer that called a
// different collective, or the same one with another count, dtype, reduce op or root, is caught
// at the first message that crosses between them and reported as Mismatch naming both
// signatures, instead of landing in a buffer sized for something else.
//
// Thread-safety: values only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ftcomm/status.h"

namespace ftcomm::transport {

enum class OpKind : std::uint8_t {
  kNone,
  kAllReduce,
  kReduce,
  kBroadcast,
  kAllGather,
  kAllGatherV,
  kReduceScatter,
  kAllToAll,
  kAllToAllV,
  kGather,
  kScatter,
  kBarrier,
  kPointToPoint,
  kSplit,
  kWireup,
  kControl,
};

struct OpSignature {
  OpKind kind = OpKind::kNone;
  std::uint8_t dtype = 0;     // ftcomm::DataType
  std::uint8_t reduceOp = 0;  // ftcomm::ReduceOp, where the operation reduces
  std::uint8_t reserved = 0;
  std::int32_t root = -1;
  std::uint64_t count = 0;  // elements (per rank or in all, as the operation defines)
  std::uint64_t extra = 0;  // allGatherV: a hash of the per-rank counts (equal on every rank)

  bool operator==(const OpSignature&) const = default;
};
static_assert(sizeof(OpSignature) == 24, "OpSignature is sent as it is laid out");

// Whether a message with signature `got` belongs to an operation posted as `expected`.
// Point-to-point messages agree on kind and dtype only. Lengths are checked by the transport: a
// collective's message must fill its receive exactly (allToAllV's counts differ per pair, so
// they are checked there), a point-to-point one may be shorter but not longer (truncation).
bool signaturesAgree(const OpSignature& expected, const OpSignature& got);

// Why a message of `payload` bytes that `peer` signed `got` cannot complete the receive of
// `capacity` bytes that rank `self` posted as `expected` (Mismatch); Ok when it can. Collective
// messages must fill the receive exactly, point-to-point ones may be shorter.
Status checkMessage(int self, int peer, const OpSignature& expected, std::size_t capacity,
                    const OpSignature& got, std::size_t payload);

// "allReduce(count=8, float32, sum)", "broadcast(count=1, int8, root=2)".
std::string describe(const OpSignature& signature);

}  // namespace ftcomm::transport
