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
