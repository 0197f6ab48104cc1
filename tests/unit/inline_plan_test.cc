// The plan of an inline collective (core/inline_collective.h, inlineChunking): every chunk fits
// its slot, the chunks cover the block exactly once, and the chunk sizes are the ones
// core/inline_plan.cc says it uses on this processor.
#include <catch2/catch.hpp>

#include <cstddef>
#include <vector>

#include "core/inline_collective.h"
#include "core/inline_posts.h"
#include "transport/cpu_vendor.h"
#include "transport/shm/inline_area.h"

using ftcomm::DataType;
using ftcomm::dataTypeSize;
using ftcomm::algorithms::Collective;
using ftcomm::detail::inlineChunking;
using ftcomm::detail::InlineChunking;
using ftcomm::detail::Posts;
using ftcomm::detail::postsOf;

namespace {

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

TEST_CASE("every inline plan's chunks fit their slot and cover each block once") {
  const DataType dtype = GENERATE(DataType::kFloat32, DataType::kFloat16, DataType::kInt64);
  const int ranks = GENERATE(1, 2, 3, 4, 5, 8);
  const std::size_t es = dataTypeSize(dtype);
  for (Collective collective : kCollectives) {
    const bool pieces = postsOf(collective) == Posts::kBlocks;
    for (std::size_t count : countsFor(es)) {
      // A reduce-scatter's and an all-to-all's count is that of one member's block.
      const InlineChunking plan = inlineChunking(collective, count, dtype, ranks, true);
      if (plan.chunks == 0 || plan.direct) continue;
      INFO("collective " << static_cast<int>(collective) << ", " << ranks << " ranks, " << count
                         << " elements of " << es << " bytes: " << plan.chunks << " chunks of "
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

TEST_CASE("a streamed collective moves the chunk size this processor's plan names") {
  const std::size_t mib = std::size_t{1} << 20;
  const bool zen5 = ftcomm::transport::amdZen5OrLater();
  // A 1 MiB reduce of float32 at 2 ranks streams on every processor (to 2 MiB elsewhere, to
  // 64 MiB on Zen 5).
  const InlineChunking two =
      inlineChunking(Collective::kReduce, mib / 4, DataType::kFloat32, 2, true);
  REQUIRE(two.chunks > 1);
  REQUIRE(!two.direct);
  // Zen 5: 512 KiB chunks (inline_plan.cc, slotUse); elsewhere 64 KiB chunks.
  const std::size_t zen5Chunk = std::size_t{512} << 10;
  REQUIRE(two.step == (zen5 ? zen5Chunk : std::size_t{64} << 10));
  if (zen5) {
    // An all-to-all's post holds a chunk of every member's block: 512 KiB each at 4 ranks.
    const InlineChunking blocks =
        inlineChunking(Collective::kAllToAll, mib / 4, DataType::kFloat32, 4, true);
    REQUIRE(blocks.chunks == 2);
    REQUIRE(blocks.step == zen5Chunk);
    // A 16 MiB allreduce at 2 ranks streams in chunks of the same size.
    const InlineChunking large =
        inlineChunking(Collective::kAllReduce, 16 * mib / 4, DataType::kFloat32, 2, true);
    REQUIRE(large.step == zen5Chunk);
    // A post of one whole chunk goes in one.
    const InlineChunking whole =
        inlineChunking(Collective::kAllReduce, zen5Chunk / 4, DataType::kFloat32, 2, true);
    REQUIRE(whole.chunks == 1);
  }
}

TEST_CASE("a collective of up to 1 KiB runs inline in one chunk and chooses nothing") {
  // inlineChunking decides these before looking up the limits and choices (inline_plan.cc,
  // kSmallTotal); the general rules, just past that size, must agree.
  const int ranks = GENERATE(1, 2, 3, 4, 8);
  for (Collective collective : kCollectives) {
    const std::size_t perRank = collective == Collective::kAllGather ? ranks : 1;
    for (std::size_t total :
         {std::size_t{4}, std::size_t{8}, std::size_t{1024}, std::size_t{2048}}) {
      const std::size_t count =
          total / 4 / perRank / (postsOf(collective) == Posts::kBlocks ? ranks : 1);
      if (count == 0) continue;
      const InlineChunking plan =
          inlineChunking(collective, count, DataType::kFloat32, ranks, true);
      INFO("collective " << static_cast<int>(collective) << ", " << ranks << " ranks, " << count
                         << " float32");
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
      inlineChunking(Collective::kBarrier, 0, DataType::kFloat32, 4, true);
  REQUIRE(barrier.chunks == 1);
  REQUIRE(barrier.block == 0);
}
