#include "core/lend_choice.h"

#include <algorithm>
#include <bit>

namespace ftcomm::detail {

LendChoice& LendChoice::process(Kind kind) {
  static LendChoice choices[3];
  return choices[static_cast<int>(kind)];
}

double LendChoice::fastest(const double (&samples)[kSamples]) {
  double best = 0;
  for (double x : samples) {
    if (x > 0 && (best == 0 || x < best)) best = x;
  }
  return best;
}

int LendChoice::winnerOf(const Estimates& e) {
  const double copied = fastest(e.nsPerByte[0]), lent = fastest(e.nsPerByte[1]);
  if (copied == 0 || lent == 0) return -1;
  return lent < copied ? 1 : 0;
}

int LendChoice::nearestWinner(int sizeClass) const {
  for (int d = 1; d < kClasses; ++d) {
    for (const int c : {sizeClass - d, sizeClass + d}) {
      if (c < 0 || c >= kClasses) continue;
      if (const int winner = winnerOf(byClass_[c]); winner >= 0) return winner;
    }
  }
  return -1;
}

LendChoice::Choice LendChoice::choose(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  Estimates& e = byClass_[std::bit_width(bytes) % kClasses];
  const std::uint64_t call = e.calls++;
  bool lend;
  if (const int winner = winnerOf(e); winner >= 0) {
    lend = (winner == 1) != (call % kProbeEvery < kRun);
  } else {
    // kRun calls each way, in turn until both are measured: first the way that won at the
    // nearest size measured, or copying where nothing was.
    const bool first = nearestWinner(std::bit_width(bytes) % kClasses) == 1;
    lend = first != ((call / kRun) % 2 == 1);
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
