#include "algorithms/shm/post_choice.h"

#include <algorithm>
#include <bit>

namespace ftcomm::detail {

PostChoice& PostChoice::process(algorithms::Collective collective) {
  static PostChoice choices[static_cast<int>(algorithms::Collective::kAllToAllV) + 1];
  return choices[static_cast<int>(collective)];
}

double PostChoice::estimate(const Estimates& e, int way) {
  double best = 0;
  for (double x : e.nsPerByte[way]) {
    if (x > 0 && (best == 0 || x < best)) best = x;
  }
  return best;
}

int PostChoice::candidates(unsigned bits, int (&ways)[kWays]) {
  int count = 0;
  for (int w = 0; w < kWays; ++w) {
    if ((bits & (1u << w)) != 0) ways[count++] = w;
  }
  if (count == 0) ways[count++] = static_cast<int>(Way::kCopy);
  return count;
}

int PostChoice::winnerOf(const Estimates& e, const int* ways, int count) {
  int winner = -1;
  double best = 0;
  for (int i = 0; i < count; ++i) {
    const double x = estimate(e, ways[i]);
    if (x == 0) return -1;
    if (winner < 0 || x < best) winner = ways[i], best = x;
  }
  return winner;
}

int PostChoice::nearestWinner(int sizeClass, const int* ways, int count) const {
  for (int d = 1; d < kClasses; ++d) {
    for (const int c : {sizeClass - d, sizeClass + d}) {
      if (c < 0 || c >= kClasses) continue;
      if (const int winner = winnerOf(byClass_[c], ways, count); winner >= 0) return winner;
    }
  }
  return -1;
}

PostChoice::Choice PostChoice::choose(std::size_t bytes, unsigned bits) {
  int ways[kWays];
  const int count = candidates(bits, ways);
  const int sizeClass = std::bit_width(bytes) % kClasses;
  std::lock_guard<std::mutex> lock(mu_);
  Estimates& e = byClass_[sizeClass];
  const std::uint64_t call = e.calls++;
  int way;
  if (const int winner = winnerOf(e, ways, count); winner >= 0) {
    // The winner, but for a run of kRun calls of each other way at the start of every
    // kProbeEvery calls.
    const std::uint64_t probe = (call % kProbeEvery) / kRun;
    way = winner;
    if (probe < static_cast<std::uint64_t>(count - 1)) {
      int others[kWays], n = 0;
      for (int i = 0; i < count; ++i) {
        if (ways[i] != winner) others[n++] = ways[i];
      }
      way = others[probe];
    }
  } else {
    // kRun calls each way, in turn until all are measured: first the way that won at the
    // nearest size measured (or copying), then the others.
    int order[kWays], n = 0;
    const int nearest = nearestWinner(sizeClass, ways, count);
    const int first = nearest >= 0 ? nearest : ways[0];
    order[n++] = first;
    for (int i = 0; i < count; ++i) {
      if (ways[i] != first) order[n++] = ways[i];
    }
    way = order[(call / kRun) % static_cast<std::uint64_t>(count)];
  }
  const Choice choice{static_cast<Way>(way), e.lastWay == way};
  e.lastWay = way;
  return choice;
}

void PostChoice::record(std::size_t bytes, Way way, std::chrono::steady_clock::duration took) {
  if (bytes == 0) return;
  const double ns =
      static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count()) /
      static_cast<double>(bytes);
  const int w = static_cast<int>(way);
  std::lock_guard<std::mutex> lock(mu_);
  Estimates& e = byClass_[std::bit_width(bytes) % kClasses];
  e.nsPerByte[w][e.next[w]] = std::max(ns, 1e-6);
  e.next[w] = (e.next[w] + 1) % kSamples;
}

}  // namespace ftcomm::detail
