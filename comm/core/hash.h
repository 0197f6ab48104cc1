// The one hash of the facade (FNV-1a), for values every member computes alike: communicator ids,
// the allGatherV counts in a signature, split's rank lists. Not for security.
#pragma once

#include <cstdint>
#include <string_view>

namespace ftcomm::detail {

constexpr std::uint64_t kHashSeed = 1469598103934665603ull;

constexpr std::uint64_t hashMix(std::uint64_t h, std::uint64_t value) {
  h ^= value;
  return h * 1099511628211ull;
}

constexpr std::uint64_t hashText(std::string_view text, std::uint64_t h = kHashSeed) {
  for (unsigned char c : text) h = hashMix(h, c);
  return h;
}

}  // namespace ftcomm::detail
