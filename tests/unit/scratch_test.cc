// algorithms::Scratch: large blocks go back to a bounded cache and serve the next task of a
// similar size; small ones and far smaller requests bypass it.
#include "algorithms/scratch.h"

#include <catch2/catch.hpp>
#include <vector>

namespace ftcomm::algorithms {

TEST_CASE("scratch: a large block freed by one task is the next similar task's block",
          "[scratch]") {
  Scratch::dropCache();
  std::byte* first = nullptr;
  {
    Scratch s;
    s.resize(40u << 20);
    REQUIRE(s.size() == 40u << 20);
    first = s.data();
    s.data()[s.size() - 1] = std::byte{7};  // the whole block is usable
  }
  CHECK(Scratch::cachedBytes() >= (40u << 20));
  Scratch again;
  again.resize(33u << 20);  // within a factor of 2 of the cached block
  CHECK(again.data() == first);
  CHECK(Scratch::cachedBytes() == 0);
  Scratch::dropCache();
}

TEST_CASE("scratch: small blocks and far smaller requests do not use the cache", "[scratch]") {
  Scratch::dropCache();
  {
    Scratch small;
    small.resize(4096);
    REQUIRE(small.data() != nullptr);
  }
  CHECK(Scratch::cachedBytes() == 0);
  std::byte* big = nullptr;
  {
    Scratch s;
    s.resize(64u << 20);
    big = s.data();
  }
  Scratch tiny;
  tiny.resize(2u << 20);  // a 64 MiB block would waste 62 MiB of it
  CHECK(tiny.data() != big);
  Scratch::dropCache();
  CHECK(Scratch::cachedBytes() == 0);
}

TEST_CASE("scratch: the cache keeps at most 8 blocks", "[scratch]") {
  Scratch::dropCache();
  {
    std::vector<Scratch> many(12);
    for (auto& s : many) s.resize(1u << 20);
  }
  CHECK(Scratch::cachedBytes() <= 8 * ((1u << 20) + (64u << 10)));
  CHECK(Scratch::cachedBytes() >= 8 * (1u << 20));
  Scratch::dropCache();
}

TEST_CASE("scratch: moving hands the block over, resizing within capacity keeps it", "[scratch]") {
  Scratch a;
  a.resize(2u << 20);
  std::byte* block = a.data();
  Scratch b = std::move(a);
  CHECK(a.empty());
  CHECK(a.data() == nullptr);
  CHECK(b.data() == block);
  b.resize(1u << 20);
  CHECK(b.data() == block);
  CHECK(b.size() == 1u << 20);
}

}  // namespace ftcomm::algorithms
