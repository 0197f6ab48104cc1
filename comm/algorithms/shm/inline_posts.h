// What each inline collective's members post into their slots (inline_collective.h), shared by
// the collective itself and the plan that sizes it (inline_plan.cc).
//
// Thread-safety: functions.
#pragma once

#include <cstddef>
#include <optional>

#include "algorithms/registry.h"

namespace ftcomm::detail {

// What each collective's members post: the whole input, one block per member, or only the
// root's data (the others post an empty slot, which still says they arrived).
enum class Posts { kInput, kBlocks, kRoot, kNothing };

inline std::optional<Posts> postsOf(algorithms::Collective collective) {
  switch (collective) {
    case algorithms::Collective::kAllReduce:
    case algorithms::Collective::kReduce:
    case algorithms::Collective::kAllGather:
      return Posts::kInput;
    case algorithms::Collective::kReduceScatter:
    case algorithms::Collective::kAllToAll:
      return Posts::kBlocks;
    case algorithms::Collective::kBroadcast:
      return Posts::kRoot;
    case algorithms::Collective::kBarrier:
      return Posts::kNothing;
    default:
      return std::nullopt;  // gather, scatter and the V collectives go by messages
  }
}

inline std::size_t postBytes(Posts posts, std::size_t count, std::size_t elementBytes, int ranks) {
  switch (posts) {
    case Posts::kInput:
    case Posts::kRoot:
      return count * elementBytes;
    case Posts::kBlocks:
      return static_cast<std::size_t>(ranks) * count * elementBytes;
    case Posts::kNothing:
      return 0;
  }
  return 0;
}

}  // namespace ftcomm::detail
