// Comma-separated lists of HOST:PORT: the rendezvous's replicas (FTCOMM_RENDEZVOUS) and etcd's
// members (--store etcd://...).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ftcomm::rendezvous {

// "a,b" gives {"a", "b"}; empty entries are kept, for the caller to refuse.
inline std::vector<std::string> splitList(std::string_view text) {
  std::vector<std::string> entries;
  while (true) {
    const std::size_t comma = text.find(',');
    entries.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) return entries;
    text.remove_prefix(comma + 1);
  }
}

}  // namespace ftcomm::rendezvous
