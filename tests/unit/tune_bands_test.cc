// ftcomm-tune's bands: winners per measured size with a margin against noise, and rules that
// parse back and plan the winning way at every measured size.
#include <catch2/catch.hpp>

#include "tune/bands.h"
#include "tuning/plan_table.h"

using namespace ftcomm;
using ftcomm::tune::Point;

namespace {

// Candidates 0..3 of candidatesFor(2): inline, inline-512K, direct, message.
std::vector<Point> points(std::initializer_list<std::pair<std::size_t, std::vector<double>>> rows) {
  std::vector<Point> out;
  for (const auto& [bytes, micros] : rows) out.push_back({bytes, micros});
  return out;
}

}  // namespace

TEST_CASE("tune: the fastest way wins each size, but a way within the margin keeps its band") {
  const auto measured = points({{8, {1.0, 1.1, 3.0, 2.0}},
                                {4096, {2.0, 1.95, 4.0, 5.0}},  // within 5%: stays inline
                                {65536, {20.0, 12.0, 15.0, 30.0}},
                                {1 << 20, {400.0, 300.0, 200.0, 900.0}}});
  CHECK(tune::winners(measured, 0.05) == std::vector<int>{0, 0, 1, 2});
  CHECK(tune::winners(measured, 0.0) == std::vector<int>{0, 1, 1, 2});
}

TEST_CASE("tune: sizes no way was timed at have no winner and cut no band") {
  const auto measured = points({{8, {-1, -1, -1, -1}}, {256, {-1, 2.0, -1, 1.0}}});
  CHECK(tune::winners(measured, 0.05) == std::vector<int>{-1, 3});
}

TEST_CASE("tune: bands start halfway between measured sizes and cover every size once") {
  const auto candidates = tune::candidatesFor(2);
  REQUIRE(candidates.size() == 4);
  CHECK(candidates[1].room == 1024 * 1024);  // 2 ranks of 512 KiB chunks
  const auto measured = points({{8, {1.0, 1.1, 3.0, 2.0}},
                                {4096, {2.0, 2.5, 4.0, 5.0}},
                                {65536, {20.0, 12.0, 15.0, 30.0}},
                                {262144, {90.0, 40.0, 60.0, 90.0}},
                                {1 << 20, {400.0, 300.0, 200.0, 900.0}}});
  const tuning::CollectiveMatch allreduce{false, algorithms::Collective::kAllReduce};
  const auto rules = tune::bandsOf(allreduce, 2, measured, candidates, 0.05);
  REQUIRE(rules.size() == 3);
  CHECK(rules[0].minBytes == 0);
  CHECK(rules[0].maxBytes == 16383);  // halfway between 4 KiB and 64 KiB
  CHECK(rules[0].way == tuning::Way::kInline);
  CHECK(rules[0].chunk == 64 * 1024);
  CHECK(rules[1].minBytes == 16384);
  CHECK(rules[1].maxBytes == 524287);  // halfway between 256 KiB and 1 MiB
  CHECK(rules[1].chunk == 512 * 1024);
  CHECK(rules[2].minBytes == 524288);
  CHECK(rules[2].maxBytes == tuning::kUnbounded);
  CHECK(rules[2].way == tuning::Way::kDirect);
  for (const auto& rule : rules) CHECK((rule.minRanks == 2 && rule.maxRanks == 2));

  // Written out and read back, the profile plans each measured size the winning way.
  tuning::Profile profile;
  profile.name = "lab";
  profile.rules = rules;
  auto parsed = tuning::parseProfile(tuning::serialize(profile), "lab.rules");
  REQUIRE(parsed.ok());
  tuning::PlanTable table(*parsed, 2);
  const auto way = [&](std::size_t bytes) {
    return table.band(algorithms::Collective::kAllReduce, bytes).way;
  };
  CHECK(way(8) == tuning::Way::kInline);
  CHECK(way(65536) == tuning::Way::kInline);
  CHECK(table.band(algorithms::Collective::kAllReduce, 65536).chunk == 512 * 1024);
  CHECK(way(std::size_t{1} << 20) == tuning::Way::kDirect);
  CHECK(way(std::size_t{1} << 30) == tuning::Way::kDirect);
}

TEST_CASE("tune: sizes are written as rules files write them") {
  CHECK(tuning::formatBytes(8) == "8");
  CHECK(tuning::formatBytes(4096) == "4K");
  CHECK(tuning::formatBytes(std::size_t{64} << 20) == "64M");
  CHECK(tuning::formatBytes(1000) == "1000");
}
