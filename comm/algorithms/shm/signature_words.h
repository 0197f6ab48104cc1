// An operation's signature (transport/op_signature.h) as the three words an inline post carries
// (shm/inline_area.h), so that a peer compares it without a lock.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "transport/op_signature.h"

namespace ftcomm::detail {

inline void packSignature(const transport::OpSignature& signature, std::uint64_t (&words)[3]) {
  static_assert(sizeof words == sizeof signature);
  std::memcpy(words, &signature, sizeof words);
}

inline std::string describeWords(const std::uint64_t (&words)[3]) {
  transport::OpSignature signature;
  std::memcpy(&signature, words, sizeof signature);
  return transport::describe(signature);
}

// "rank R called SIGNATURE (#SEQ)": one side of a mismatch's message.
inline std::string describeCall(int rank, const std::uint64_t (&words)[3], std::uint64_t seq) {
  return "rank " + std::to_string(rank) + " called " + describeWords(words) + " (#" +
         std::to_string(seq) + ")";
}

inline bool sameWords(const std::uint64_t (&a)[3], const std::uint64_t (&b)[3]) {
  return a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
}

}  // namespace ftcomm::detail
