// The plan of an inline collective (algorithms/shm/inline_collective.h, inlineChunking) under every
// shipped tuning profile, whatever the processor that runs the test: every chunk fits its slot, the
// chunks cover the block exactly once, and the chunk sizes are the ones the profile names.
#include <catch2/catch.hpp>

#include <cstddef>
#include <vector>

#include "algorithms/shm/inline_collective.h"
#include "algorithms/shm/inline_posts.h"
#include "transport/shm/inline_area.h"
#include "tuning/plan_table.h"

using ftcomm::DataType;
using ftcomm::dataTypeSize;
using ftcomm::algorithms::Collective;
using ftcomm::detail::inlineChunking;
using ftcomm::detail::InlineChunking;
using ftcomm::detail::Posts;
using ftcomm::detail::postsOf;
using ftcomm::tuning::PlanTable;

namespace {

// A shipped profile resolved for `ranks` members.
PlanTable shipped(const std::string& name, int ranks) {
  const char* text = ftcomm::tuning::builtinProfileText(name);
  REQUIRE(text != nullptr);
  auto profile = ftcomm::tuning::parseProfile(text, name);
  REQUIRE(profile.ok());
  return PlanTable(*profile, ranks);
}

constexpr Collective kCollectives[] = {Collective::kAllReduce,     Collective::kBroadcast,
                                       Collective::kReduce,        Collective::kAllGather,
                                       Collective::kReduceScatter, Collective::kAllToAll};

// Element counts on either side of the slot's size and of the limits, in elements of `es`
// bytes: every power of two from 1 byte to 64 MiB, its neighbours, and a few odd ones.
std::vector<std::size_t> countsFor(std::size_t es) {
  std::vector<std::size_t> counts;
  for (std::size_t bytes = 1; bytes <= (std::size_t{64} << 20); bytes *= 2) {
    for (std::size_t b : {bytes - 1, bytes, bytes + 1, bytes * 3 / 2 + 7}) {
      if (b >= es) counts.push_back(b / es);
    }
  }
  return counts;
}

}  // namespace

TEST_CASE("every shipped profile's inline plans fit their slot and cover each block once") {
  const std::string name = GENERATE(from_range(ftcomm::tuning::builtinProfileNames()));
  const DataType dtype = GENERATE(DataType::kFloat32, DataType::kFloat16, DataType::kInt64);
  const int ranks = GENERATE(1, 2, 3, 4, 5, 8);
  const std::size_t es = dataTypeSize(dtype);
  const PlanTable table = shipped(name, ranks);
  for (Collective collective : kCollectives) {
    const bool pieces = postsOf(collective) == Posts::kBlocks;
    for (std::size_t count : countsFor(es)) {
      // A reduce-scatter's and an all-to-all's count is that of one member's block.
      const InlineChunking plan = inlineChunking(table, collective, count, dtype, ranks, true);
      if (plan.chunks == 0 || plan.direct) continue;
      INFO(name << ": collective " << static_cast<int>(collective) << ", " << ranks << " ranks, "
                << count << " elements of " << es << " bytes: " << plan.chunks << " chunks of "
                << plan.step << " bytes, block " << plan.block);
      REQUIRE(plan.step % es == 0);
      REQUIRE(plan.step * (pieces ? static_cast<std::size_t>(ranks) : 1) <=
              ftcomm::shm::kInlineBytes);
      if (plan.block == 0) {
        REQUIRE(plan.chunks == 1);
        continue;
      }
      REQUIRE(plan.chunks * plan.step >= plan.block);
      REQUIRE((plan.chunks - 1) * plan.step < plan.block);
    }
  }
}

TEST_CASE("a streamed collective moves the chunk size its profile names") {
  const std::size_t mib = std::size_t{1} << 20;
  // A 1 MiB reduce of float32 at 2 ranks streams under every shipped profile.
  for (const std::string& name : ftcomm::tuning::builtinProfileNames()) {
    INFO(name);
    const InlineChunking two =
        inlineChunking(shipped(name, 2), Collective::kReduce, mib / 4, DataType::kFloat32, 2, true);
    REQUIRE(two.chunks > 1);
    REQUIRE(!two.direct);
    REQUIRE(two.step == (name == "zen5" ? std::size_t{512} << 10 : std::size_t{64} << 10));
  }
  const std::size_t zen5Chunk = std::size_t{512} << 10;
  // zen5: an all-to-all's post holds a chunk of every member's block: 512 KiB each at 4 ranks.
  const InlineChunking blocks = inlineChunking(shipped("zen5", 4), Collective::kAllToAll, mib / 4,
                                               DataType::kFloat32, 4, true);
  REQUIRE(blocks.chunks == 2);
  REQUIRE(blocks.step == zen5Chunk);
  // A 16 MiB allreduce at 2 ranks streams in chunks of the same size.
  const PlanTable zen5 = shipped("zen5", 2);
  const InlineChunking large =
      inlineChunking(zen5, Collective::kAllReduce, 16 * mib / 4, DataType::kFloat32, 2, true);
  REQUIRE(large.step == zen5Chunk);
  // A post of one whole chunk goes in one.
  const InlineChunking whole =
      inlineChunking(zen5, Collective::kAllReduce, zen5Chunk / 4, DataType::kFloat32, 2, true);
  REQUIRE(whole.chunks == 1);
  // generic: the same allreduce streams in the same chunks, each member choosing per call
  // between lending and copying; past 64 MiB, and at 3 ranks, it goes to the direct algorithms.
  const InlineChunking generic = inlineChunking(shipped("generic", 2), Collective::kAllReduce,
                                                16 * mib / 4, DataType::kFloat32, 2, true);
  REQUIRE(generic.step == zen5Chunk);
  REQUIRE(generic.lends);
  REQUIRE(generic.chooses);
  REQUIRE(inlineChunking(shipped("generic", 2), Collective::kAllReduce, 128 * mib / 4,
                         DataType::kFloat32, 2, true)
              .chunks == 0);
  REQUIRE(inlineChunking(shipped("generic", 3), Collective::kAllReduce, 16 * mib / 4,
                         DataType::kFloat32, 3, true)
              .chunks == 0);
}

TEST_CASE("zen2's bands: 2-rank members choose, broadcasts stream in place of the direct form") {
  const std::size_t mib = std::size_t{1} << 20;
  const PlanTable two = shipped("zen2", 2);
  // A 1 MiB broadcast streams in whole-slot chunks, its root choosing how to post.
  const InlineChunking broadcast =
      inlineChunking(two, Collective::kBroadcast, mib / 8, DataType::kFloat64, 2, true);
  REQUIRE(broadcast.chunks == 4);
  REQUIRE(broadcast.lends);
  REQUIRE(broadcast.chooses);
  REQUIRE(broadcast.choosesCopy);
  // Where the peers cannot be read, it lends only buffers they map: no choosing.
  REQUIRE(
      !inlineChunking(two, Collective::kBroadcast, mib / 8, DataType::kFloat64, 2, false).chooses);
  // A 64 KiB allgather goes to the direct form; from 512 KiB of result it streams and chooses.
  REQUIRE(inlineChunking(two, Collective::kAllGather, 8192, DataType::kFloat32, 2, true).direct);
  const InlineChunking gather =
      inlineChunking(two, Collective::kAllGather, mib / 8, DataType::kFloat64, 2, true);
  REQUIRE(gather.chooses);
  // 4 ranks: a 4 MiB broadcast streams, lending only mapped buffers; 3 ranks: direct past 4 MiB.
  const InlineChunking four = inlineChunking(shipped("zen2", 4), Collective::kBroadcast, mib / 2,
                                             DataType::kFloat64, 4, true);
  REQUIRE(four.lends);
  REQUIRE(!four.chooses);
  REQUIRE(
      inlineChunking(shipped("zen2", 3), Collective::kBroadcast, mib, DataType::kFloat64, 3, true)
          .direct);
  // Of the others only generic lets members choose (how to post, not how to copy).
  const InlineChunking generic = inlineChunking(shipped("generic", 2), Collective::kBroadcast,
                                                mib / 8, DataType::kFloat64, 2, true);
  REQUIRE(generic.chooses);
  REQUIRE(!generic.choosesCopy);
  for (const std::string& name : ftcomm::tuning::builtinProfileNames()) {
    if (name == "zen2" || name == "generic") continue;
    INFO(name);
    REQUIRE(!inlineChunking(shipped(name, 2), Collective::kBroadcast, mib / 8, DataType::kFloat64,
                            2, true)
                 .chooses);
  }
}

TEST_CASE("a collective of up to 1 KiB runs inline in one chunk and chooses nothing") {
  // inlineChunking decides these before looking up the limits and choices (inline_plan.cc,
  // kSmallTotal); the general rules, just past that size, must agree.
  const std::string name = GENERATE(from_range(ftcomm::tuning::builtinProfileNames()));
  const int ranks = GENERATE(1, 2, 3, 4, 8);
  const PlanTable table = shipped(name, ranks);
  for (Collective collective : kCollectives) {
    const std::size_t perRank = collective == Collective::kAllGather ? ranks : 1;
    for (std::size_t total :
         {std::size_t{4}, std::size_t{8}, std::size_t{1024}, std::size_t{2048}}) {
      const std::size_t count =
          total / 4 / perRank / (postsOf(collective) == Posts::kBlocks ? ranks : 1);
      if (count == 0) continue;
      const InlineChunking plan =
          inlineChunking(table, collective, count, DataType::kFloat32, ranks, true);
      INFO(name << ": collective " << static_cast<int>(collective) << ", " << ranks << " ranks, "
                << count << " float32");
      REQUIRE(plan.chunks == 1);
      REQUIRE(!plan.direct);
      REQUIRE(!plan.lends);
      REQUIRE(!plan.chooses);
      REQUIRE(!plan.choosesCopy);
      REQUIRE(plan.block == count * 4);
      REQUIRE(plan.step == count * 4);
    }
  }
  const InlineChunking barrier =
      inlineChunking(shipped(name, 4), Collective::kBarrier, 0, DataType::kFloat32, 4, true);
  REQUIRE(barrier.chunks == 1);
  REQUIRE(barrier.block == 0);
}
