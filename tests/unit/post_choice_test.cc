// PostChoice (algorithms/shm/post_choice.h): a member copies its input with plain stores, copies it
// around the cache, or lends it, whichever it measured fastest, tries the others now and then, and
// measures only calls that follow one of the same way.
#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <vector>

#include "algorithms/shm/post_choice.h"

using ftcomm::detail::PostChoice;
using Way = PostChoice::Way;

namespace {

constexpr Way kCopy = Way::kCopy, kAround = Way::kCopyAroundCache, kLend = Way::kLend;

// What a call of each way takes, in ns per byte (in the order of Way).
using Costs = std::array<double, PostChoice::kWays>;

// `calls` calls of `bytes`; the ways taken, in order. Measured calls are recorded as a member
// would.
std::vector<Way> drive(PostChoice& choice, std::size_t bytes, int calls, const Costs& costs,
                       bool mayLend, int* measured = nullptr) {
  const unsigned bits = PostChoice::kCopies | (mayLend ? PostChoice::bit(kLend) : 0u);
  std::vector<Way> ways;
  for (int i = 0; i < calls; ++i) {
    const PostChoice::Choice c = choice.choose(bytes, bits);
    ways.push_back(c.way);
    if (!c.measure) continue;
    if (measured != nullptr) ++*measured;
    const double ns = costs[static_cast<std::size_t>(c.way)] * static_cast<double>(bytes);
    choice.record(bytes, c.way, std::chrono::nanoseconds(static_cast<long long>(ns)));
  }
  return ways;
}

int countOf(const std::vector<Way>& ways, Way way, std::size_t from = 0) {
  int n = 0;
  for (std::size_t i = from; i < ways.size(); ++i) n += ways[i] == way ? 1 : 0;
  return n;
}

constexpr auto kRun = PostChoice::kRun, kProbeEvery = PostChoice::kProbeEvery;

}  // namespace

TEST_CASE("PostChoice: the two copies each in turn, then the faster, and probes of the other") {
  PostChoice choice;
  int measured = 0;
  const auto ways = drive(choice, 1 << 20, 4, {1.0, 2.0, 0}, false, &measured);
  // kRun plain copies, then kRun around the cache; the second of each run is measured.
  CHECK(ways == std::vector<Way>{kCopy, kCopy, kAround, kAround});
  CHECK(measured == 2);
  // Plain copies were faster: from now on it copies so, but for a run of the other every
  // kProbeEvery calls. It never lends where it may not.
  const auto next = drive(choice, 1 << 20, 2 * kProbeEvery, {1.0, 2.0, 0}, false);
  CHECK(countOf(next, kAround) == 2 * static_cast<int>(kRun));
  CHECK(countOf(next, kLend) == 0);
  for (std::size_t call = 4; call < 4 + next.size(); ++call) {
    INFO("call " << call);
    CHECK((next[call - 4] == kAround) == (call % kProbeEvery < kRun));
  }
}

TEST_CASE(
    "PostChoice: three ways where the member may lend, and it lends where lending is fastest") {
  PostChoice choice;
  const auto ways = drive(choice, 64 << 10, 6 + 2 * kProbeEvery, {3.0, 2.0, 1.0}, true);
  CHECK(std::vector<Way>(ways.begin(), ways.begin() + 6) ==
        std::vector<Way>{kCopy, kCopy, kAround, kAround, kLend, kLend});
  // Then every call lends but the probes: kRun plain copies, then kRun around the cache.
  for (std::size_t call = 6; call < ways.size(); ++call) {
    INFO("call " << call);
    const std::uint64_t phase = call % kProbeEvery;
    const Way expected = phase < kRun ? kCopy : phase < 2 * kRun ? kAround : kLend;
    CHECK(ways[call] == expected);
  }
}

TEST_CASE("PostChoice: between lending and one copy, as the settings that fix the copy leave it") {
  PostChoice choice;
  const unsigned bits = PostChoice::bit(kAround) | PostChoice::bit(kLend);
  std::vector<Way> ways;
  for (int i = 0; i < 4; ++i) ways.push_back(choice.choose(1 << 20, bits).way);
  CHECK(ways == std::vector<Way>{kAround, kAround, kLend, kLend});
}

TEST_CASE("PostChoice: a new size class goes the nearest size's winner's way first") {
  PostChoice choice;
  drive(choice, 1 << 20, 8, {3.0, 1.0, 0}, false);  // around the cache won at 1 MiB
  // At 8 MiB: twice around the cache, twice plain, and then plain, which it found faster there.
  const auto ways = drive(choice, 8 << 20, 8, {1.0, 3.0, 0}, false);
  CHECK(ways == std::vector<Way>{kAround, kAround, kCopy, kCopy, kCopy, kCopy, kCopy, kCopy});
}

TEST_CASE("PostChoice: when the machine changes, the chosen way's estimate follows at once") {
  PostChoice choice;
  drive(choice, 2 << 20, 8, {1.0, 2.0, 0}, false);  // plain copies win
  // They become 3x slower: within kSamples calls their fastest recent call is slower than the
  // copies around the cache measured before, and it copies around the cache from then on.
  const auto ways = drive(choice, 2 << 20, PostChoice::kSamples + 4, {3.0, 2.0, 0}, false);
  CHECK(countOf(ways, kAround, ways.size() - 3) == 3);
}

TEST_CASE(
    "PostChoice: size classes and kinds of collective are apart, and another way's call is not "
    "measured") {
  PostChoice choice;
  int measured = 0;
  drive(choice, 1 << 16, 4, {1.0, 2.0, 0}, false, &measured);  // plain wins at 64 KiB
  drive(choice, 1 << 22, 4, {2.0, 1.0, 0}, false, &measured);  // around the cache at 4 MiB
  CHECK(measured == 4);                                        // the second call of each run of two
  CHECK(choice.choose(1 << 16, PostChoice::kCopies).way == kCopy);
  CHECK(choice.choose(1 << 22, PostChoice::kCopies).way == kAround);
  CHECK(choice.choose(1 << 22, PostChoice::kCopies).measure);  // after one of the same way
  using ftcomm::algorithms::Collective;
  CHECK(&PostChoice::process(Collective::kBroadcast) != &PostChoice::process(Collective::kReduce));
  CHECK(&PostChoice::process(Collective::kReduce) == &PostChoice::process(Collective::kReduce));
}
