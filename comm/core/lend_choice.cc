#include "core/lend_choice.h"

#include <algorithm>
#include <bit>

namespace ftcomm::detail {

LendChoice& LendChoice::broadcastRoots() {
  static LendChoice choice;
  return choice;
}

double LendChoice::fastest(const double (&samples)[kSamples]) {
  double best = 0;
  for (double x : samples) {
    if (x > 0 && (best == 0 || x < best)) best = x;
  }
  return best;
}

LendChoice::Choice LendChoice::choose(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  Estimates& e = byClass_[std::bit_width(bytes) % kClasses];
  const std::uint64_t call = e.calls++;
  const double copied = fastest(e.nsPerByte[0]), lent = fastest(e.nsPerByte[1]);
  bool lend;
  if (copied != 0 && lent != 0) {
    const bool lendIsFaster = lent < copied;
    lastWinner_ = lendIsFaster ? 1 : 0;
    lend = call % kProbeEvery < kRun ? !lendIsFaster : lendIsFaster;
  } else if (lastWinner_ < 0) {
    lend = call >= kRun;  // the process's first size class: copy first, then lend
  } else {
    // The last winner until this class tries the other way (its first probe).
    lend = (lastWinner_ == 1) != (call >= kProbeEvery && call % kProbeEvery < kRun);
  }
  const int way = lend ? 1 : 0;
  const Choice choice{lend, e.lastWay == way};
  e.lastWay = way;
  return choice;
}

void LendChoice::record(std::size_t bytes, bool lent, std::chrono::steady_clock::duration took) {
  if (bytes == 0) return;
  const double ns =
      static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count()) /
      static_cast<double>(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  Estimates& e = byClass_[std::bit_width(bytes) % kClasses];
  const int way = lent ? 1 : 0;
  e.nsPerByte[way][e.next[way]] = std::max(ns, 1e-6);
  e.next[way] = (e.next[way] + 1) % kSamples;
}

}  // namespace ftcomm::detail
