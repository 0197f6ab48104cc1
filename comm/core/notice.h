// The failure notice: what a member tells the others when one of its operations broke a
// communicator, over a control message (engine.cc) or inside a revocation's reason through the
// rendezvous (engine_membership.cc). Text: "<code> <seq> <message>". And the leaving notice: a
// member that closes a communicator it found usable says after which collective it stopped, so
// that its exit is not taken for a failure. Text: "left <seq>".
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "ftcomm/status.h"

namespace ftcomm::detail {

// What a control message says: a member's operation `seq` failed with `code`, so the
// communicator is broken there. Text: "<code> <seq> <message>".
inline std::string encodeNotice(const Status& why, std::uint64_t seq) {
  return std::to_string(static_cast<int>(why.code())) + " " + std::to_string(seq) + " " +
         why.message();
}

inline Status decodeNotice(const char* data, std::size_t bytes, int sender, std::uint64_t* seq) {
  const std::string text(data, bytes);
  int code = 0;
  unsigned long long parsedSeq = 0;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%d %llu %n", &code, &parsedSeq, &consumed) < 2 ||
      code <= static_cast<int>(StatusCode::kOk) || code > static_cast<int>(StatusCode::kInternal)) {
    *seq = 0;
    return Status(StatusCode::kRevoked,
                  "rank " + std::to_string(sender) + " sent a malformed failure notice");
  }
  *seq = parsedSeq;
  return Status(static_cast<StatusCode>(code), "rank " + std::to_string(sender) + ": " +
                                                   text.substr(static_cast<std::size_t>(consumed)));
}

inline std::string encodeLeaving(std::uint64_t lastSeq) {
  return "left " + std::to_string(lastSeq);
}

// Whether the control message is a leaving notice, and then the last collective its sender took
// part in.
inline bool decodeLeaving(const char* data, std::size_t bytes, std::uint64_t* lastSeq) {
  const std::string text(data, bytes);
  unsigned long long parsed = 0;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "left %llu%n", &parsed, &consumed) < 1 ||
      static_cast<std::size_t>(consumed) != text.size()) {
    return false;
  }
  *lastSeq = parsed;
  return true;
}

// Marks a revocation reason that carries a notice (encodeNotice) for the rendezvous.
inline constexpr std::string_view kRevocationNotice = "[notice] ";

}  // namespace ftcomm::detail
