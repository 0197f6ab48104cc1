#include "transport/op_signature.h"

#include <array>

#include "ftcomm/types.h"

namespace ftcomm::transport {
namespace {

constexpr std::array<const char*, 16> kKindNames{
    "none",          "allReduce", "reduce",    "broadcast", "allGather", "allGatherV",
    "reduceScatter", "allToAll",  "allToAllV", "gather",    "scatter",   "barrier",
    "send/recv",     "split",     "wireup",    "control"};

bool reduces(OpKind kind) {
  return kind == OpKind::kAllReduce || kind == OpKind::kReduce || kind == OpKind::kReduceScatter;
}

bool rooted(OpKind kind) {
  return kind == OpKind::kReduce || kind == OpKind::kBroadcast || kind == OpKind::kGather ||
         kind == OpKind::kScatter;
}

}  // namespace

bool signaturesAgree(const OpSignature& expected, const OpSignature& got) {
  if (expected.kind == OpKind::kPointToPoint || expected.kind == OpKind::kControl) {
    return got.kind == expected.kind && got.dtype == expected.dtype;
  }
  return expected == got;
}

Status checkMessage(int self, int peer, const OpSignature& expected, std::size_t capacity,
                    const OpSignature& got, std::size_t payload) {
  const std::string who = "rank " + std::to_string(peer);
  if (!signaturesAgree(expected, got)) {
    return Status(StatusCode::kMismatch, who + " called " + describe(got) + " where rank " +
                                             std::to_string(self) + " called " +
                                             describe(expected));
  }
  if (payload > capacity) {
    return Status(StatusCode::kMismatch, "a message from " + who + " is longer than the " +
                                             std::to_string(capacity) + "-byte receive buffer of " +
                                             describe(expected));
  }
  const bool exact = expected.kind != OpKind::kPointToPoint && expected.kind != OpKind::kControl;
  if (exact && payload != capacity) {
    return Status(StatusCode::kMismatch, who + " sent " + std::to_string(payload) +
                                             " bytes where rank " + std::to_string(self) +
                                             " expects " + std::to_string(capacity) + " in " +
                                             describe(expected));
  }
  return Status::Ok();
}

std::string describe(const OpSignature& s) {
  const auto kind = static_cast<std::size_t>(s.kind);
  std::string text = kind < kKindNames.size() ? kKindNames[kind] : "op#" + std::to_string(kind);
  text += "(count=" + std::to_string(s.count);
  if (s.dtype < kDataTypes.size()) {
    text += ", " + std::string(kDataTypes[s.dtype].name);
  } else {
    text += ", dtype#" + std::to_string(s.dtype);
  }
  if (reduces(s.kind)) {
    text += s.reduceOp < kReduceOps.size() ? ", " + std::string(kReduceOps[s.reduceOp].name)
                                           : ", op#" + std::to_string(s.reduceOp);
  }
  if (rooted(s.kind)) text += ", root=" + std::to_string(s.root);
  if (s.kind == OpKind::kAllGatherV) {
    text += ", counts#" + std::to_string(s.extra % 100000);
  }
  return text + ")";
}

}  // namespace ftcomm::transport
