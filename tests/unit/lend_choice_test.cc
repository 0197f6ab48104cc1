// LendChoice (core/lend_choice.h): a streamed broadcast's root lends or copies, whichever it
// measured faster, tries the other way now and then, and measures only calls that follow one of
// the same way.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <vector>

#include "core/lend_choice.h"

using ftcomm::detail::LendChoice;

namespace {

// `calls` calls of `bytes` where copying takes `copyNs` and lending `lendNs` per byte; the ways
// taken, in order (true: lent). Measured calls are recorded as the root would.
std::vector<bool> drive(LendChoice& choice, std::size_t bytes, int calls, double copyNs,
                        double lendNs, int* measured = nullptr) {
  std::vector<bool> ways;
  for (int i = 0; i < calls; ++i) {
    const LendChoice::Choice c = choice.choose(bytes);
    ways.push_back(c.lend);
    if (!c.measure) continue;
    if (measured != nullptr) ++*measured;
    const double ns = (c.lend ? lendNs : copyNs) * static_cast<double>(bytes);
    choice.record(bytes, c.lend, std::chrono::nanoseconds(static_cast<long long>(ns)));
  }
  return ways;
}

int lentAmong(const std::vector<bool>& ways, std::size_t from, std::size_t to) {
  int lent = 0;
  for (std::size_t i = from; i < to && i < ways.size(); ++i) lent += ways[i] ? 1 : 0;
  return lent;
}

}  // namespace

TEST_CASE("LendChoice: the first size class goes each way in turn, then the faster one") {
  LendChoice choice;
  int measured = 0;
  const auto ways = drive(choice, 1 << 20, 4, 1.0, 2.0, &measured);
  // kRun copies, then kRun lends; the second of each run is measured.
  CHECK(ways == std::vector<bool>{false, false, true, true});
  CHECK(measured == 2);
  // Copying was faster: from now on it copies, but for a run of lends every kProbeEvery calls.
  const auto next = drive(choice, 1 << 20, 2 * LendChoice::kProbeEvery, 1.0, 2.0);
  const std::size_t total = 4 + next.size();
  CHECK(lentAmong(next, 0, next.size()) == 2 * static_cast<int>(LendChoice::kRun));
  for (std::size_t call = 4; call < total; ++call) {
    INFO("call " << call);
    CHECK(next[call - 4] == (call % LendChoice::kProbeEvery < LendChoice::kRun));
  }
}

TEST_CASE("LendChoice: lends where lending is faster") {
  LendChoice choice;
  const auto ways = drive(choice, 64 << 10, 4 + LendChoice::kProbeEvery, 3.0, 1.0);
  // After the first four, every call lends but the probes, which copy.
  for (std::size_t call = 4; call < ways.size(); ++call) {
    INFO("call " << call);
    CHECK(ways[call] == (call % LendChoice::kProbeEvery >= LendChoice::kRun));
  }
}

TEST_CASE("LendChoice: a new size class goes the nearest size's winner's way first") {
  LendChoice choice;
  drive(choice, 1 << 20, 8, 3.0, 1.0);  // lending won at 1 MiB
  // At 8 MiB: lends twice, copies twice, and keeps copying, which it found faster there.
  const auto ways = drive(choice, 8 << 20, 8, 1.0, 3.0);
  CHECK(ways == std::vector<bool>{true, true, false, false, false, false, false, false});
}

TEST_CASE("LendChoice: when the machine changes, the chosen way's estimate follows at once") {
  LendChoice choice;
  drive(choice, 2 << 20, 8, 1.0, 2.0);  // copying wins
  // Copying becomes 3x slower: within kSamples calls its fastest recent call is slower than the
  // lending measured before, and it lends from then on (but for its probes).
  const auto ways = drive(choice, 2 << 20, LendChoice::kSamples + 4, 3.0, 2.0);
  CHECK(ways.back());
  CHECK(lentAmong(ways, ways.size() - 3, ways.size()) == 3);
}

TEST_CASE("LendChoice: size classes are apart, and calls of another way are not measured") {
  LendChoice choice;
  int measured = 0;
  drive(choice, 1 << 16, 4, 1.0, 2.0, &measured);  // copying wins at 64 KiB
  drive(choice, 1 << 22, 4, 2.0, 1.0, &measured);  // lending at 4 MiB
  CHECK(measured == 4);                            // the second call of each run of two
  CHECK_FALSE(choice.choose(1 << 16).lend);
  CHECK(choice.choose(1 << 22).lend);
  CHECK(choice.choose(1 << 22).measure);  // after one of the same way
}
