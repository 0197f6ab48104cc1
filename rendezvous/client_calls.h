// What the rendezvous client's calls (client.cc) and its background threads
// (client_background.cc) share: retry backoff, deadlines, and which answers are verdicts.
#pragma once

#include <chrono>

#include "ftcomm/status.h"

namespace ftcomm::rendezvous::client_calls {

constexpr auto kFirstBackoff = std::chrono::milliseconds(20);
constexpr auto kMaxBackoff = std::chrono::milliseconds(500);

// gRPC takes deadlines on the system clock; ours are on the steady clock.
inline std::chrono::system_clock::time_point systemDeadline(
    std::chrono::steady_clock::time_point t) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             t - std::chrono::steady_clock::now());
}

// The server's word that this member is out (expelled, unknown, or refused), as opposed to a
// call that did not get through.
inline bool isVerdict(StatusCode code) {
  return code == StatusCode::kFailedPrecondition || code == StatusCode::kNotFound ||
         code == StatusCode::kPermissionDenied;
}

}  // namespace ftcomm::rendezvous::client_calls
