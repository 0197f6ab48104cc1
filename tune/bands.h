// What ftcomm-tune makes of its measurements: the candidate ways it times, the winner at each
// measured size, and the rules (size bands) that say so in a tuning profile.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tuning/profile.h"

namespace ftcomm::tune {

// One way of running the shared-memory collectives, as a profile rule's way and chunking.
struct Candidate {
  std::string name;
  tuning::Way way = tuning::Way::kInline;
  std::size_t whole = 0, chunk = 0, room = 0;  // Way::kInline only
};

// The ways timed at `ranks` ranks: the slots in 64 KiB chunks (the generic profile's), the slots
// in 512 KiB chunks streamed to any size, the direct algorithms, and the message algorithms.
std::vector<Candidate> candidatesFor(int ranks);

// A collective's times at one size: micros[i] is candidate i's time per call, in microseconds
// (negative where it was not timed).
struct Point {
  std::size_t bytes = 0;
  std::vector<double> micros;
};

// The winning candidate at each point, in order of size. A point keeps the previous point's
// winner unless another candidate is faster than it by more than `margin` (0.05: 5%), so that
// noise between near-equal ways does not cut bands; the first point takes its fastest.
// -1 where no candidate was timed.
std::vector<int> winners(const std::vector<Point>& points, double margin);

// The rules for `collective` (or every collective where `any`) at exactly `ranks` ranks: one
// band per run of equal winners. A band starts halfway (geometrically) between the last size of
// the run before and its own first size, rounded to a power of two; the first starts at 0 and
// the last is unbounded.
std::vector<tuning::Rule> bandsOf(const tuning::CollectiveMatch& collective, int ranks,
                                  const std::vector<Point>& points,
                                  const std::vector<Candidate>& candidates, double margin);

}  // namespace ftcomm::tune
