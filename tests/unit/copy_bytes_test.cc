// The bulk copy (transport/copy_bytes.h), the copy around the cache and their AVX2 loops against
// the bytes they should write: sizes on either side of every threshold, sources and destinations at
// every offset within a cache line, and the bytes around the destination left alone; and the
// processor family that chooses between them, against the kernel's.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "transport/copy_bytes.h"
#include "transport/copy_bytes_avx2.h"

using ftcomm::transport::copyBytes;

namespace {

using Copy = void (*)(void*, const void*, std::size_t);

// Copies `bytes` from a source `from` bytes into its buffer to a destination `to` bytes into
// its own, and checks every byte of the destination's buffer: the copy inside, the guard
// pattern around it.
void checkCopy(Copy copy, std::size_t bytes, std::size_t from, std::size_t to) {
  constexpr std::size_t kGuard = 96;
  std::vector<unsigned char> source(bytes + from + kGuard);
  for (std::size_t i = 0; i < source.size(); ++i)
    source[i] = static_cast<unsigned char>((i * 131 + (i >> 8) * 7 + 1) & 0xff);
  std::vector<unsigned char> destination(bytes + to + kGuard, 0xa5);
  copy(destination.data() + to, source.data() + from, bytes);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < destination.size(); ++i) {
    const bool inside = i >= to && i < to + bytes;
    const unsigned char expected = inside ? source[from + i - to] : 0xa5;
    if (destination[i] != expected) ++wrong;
  }
  INFO(bytes << " bytes, source offset " << from << ", destination offset " << to);
  REQUIRE(wrong == 0);
}

const std::vector<std::size_t> kSizes = {0,
                                         1,
                                         31,
                                         32,
                                         127,
                                         128,
                                         129,
                                         2047,
                                         2048,
                                         2049,
                                         4095,
                                         4097,
                                         65536 + 13,
                                         524287,
                                         524288,
                                         1 << 20,
                                         (1 << 20) + 1,
                                         (3u << 19) + 5,
                                         (4u << 20) - 1,
                                         4u << 20,
                                         (4u << 20) + 1,
                                         (6u << 20) - 1,
                                         6u << 20,
                                         (6u << 20) + 1,
                                         (16u << 20) - 1,
                                         16u << 20};

}  // namespace

TEST_CASE("copyBytes copies every size at every alignment and writes nothing else", "[copy]") {
  for (std::size_t bytes : kSizes) {
    const std::size_t step = bytes > (1u << 20) ? 21 : 1;  // the 4-16 MiB sizes at fewer offsets
    for (std::size_t from = 0; from < 64; from += step * 5)
      for (std::size_t to = 0; to < 64; to += step * 3) checkCopy(copyBytes, bytes, from, to);
  }
}

TEST_CASE("the vector-loop copy, which profiles with copy_loop_from take, copies every size",
          "[copy]") {
  // copyBytes takes it only where the profile says; here it runs wherever the tests do.
  for (std::size_t bytes : kSizes) {
    if (bytes < 2048 || bytes > (1u << 20)) continue;
    for (std::size_t from = 0; from < 64; from += 9)
      for (std::size_t to = 0; to < 64; to += 11)
        checkCopy(ftcomm::transport::detail::copyInVectorLoop, bytes, from, to);
  }
}

TEST_CASE("the copy around the cache copies every size at every alignment", "[copy]") {
  // Its AVX2 loop of non-temporal stores where the processor has AVX2, memcpy elsewhere.
  for (std::size_t bytes : kSizes) {
    if (bytes > (1u << 20) + 1) continue;
    for (std::size_t from = 0; from < 64; from += 9)
      for (std::size_t to = 0; to < 64; to += 5)
        checkCopy(ftcomm::transport::copyAroundCache, bytes, from, to);
  }
}

TEST_CASE("a copy that is part of a larger move copies every size around its threshold", "[copy]") {
  // Around the cache from the policy's threshold, copyBytes below it.
  constexpr std::size_t kFrom = std::size_t{4} << 20;
  ftcomm::transport::CopyPolicy policy;
  policy.partAroundCacheFrom = kFrom;
  ftcomm::transport::setCopyPolicy(policy);
  for (std::size_t bytes : {std::size_t{4096}, kFrom - 1, kFrom, kFrom + 1, kFrom + 4093})
    for (std::size_t from = 0; from < 64; from += 27)
      for (std::size_t to = 0; to < 64; to += 31)
        checkCopy(ftcomm::transport::copyPartOfLargeMove, bytes, from, to);
}

TEST_CASE("the copy in rep movsb pieces, which Zen 5 takes from 1 MiB, copies every size",
          "[copy]") {
  // copyBytes takes it only on those processors; here it runs wherever the tests do.
  constexpr std::size_t kPiece = ftcomm::transport::kRepMovsbPieceBytes;
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, kPiece - 1, kPiece, kPiece + 1,
                            2 * kPiece, 3 * kPiece, 3 * kPiece + 17, std::size_t{5} << 20})
    for (std::size_t from = 0; from < 64; from += 13)
      for (std::size_t to = 0; to < 64; to += 19)
        checkCopy(ftcomm::transport::detail::copyInRepMovsbPieces, bytes, from, to);
}

#if defined(__x86_64__)
TEST_CASE(
    "the AVX2 copy loops, plain and around the cache, copy every size from 128 bytes at "
    "every alignment",
    "[copy]") {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2")) {
    WARN("this processor has no AVX2: the loop is never run here");
    return;
  }
  for (std::size_t bytes = 128; bytes <= 1100; bytes += 1) {
    checkCopy(ftcomm::transport::detail::copyAvx2, bytes, bytes % 37, bytes % 61);
    checkCopy(ftcomm::transport::detail::copyAvx2AroundCache, bytes, bytes % 41, bytes % 59);
  }
  for (std::size_t bytes : kSizes) {
    if (bytes < 128 || bytes > (1u << 20)) continue;
    for (std::size_t from = 0; from < 64; from += 7)
      for (std::size_t to = 0; to < 64; to += 5)
        checkCopy(ftcomm::transport::detail::copyAvx2, bytes, from, to);
    for (std::size_t from = 0; from < 64; from += 11)
      for (std::size_t to = 0; to < 64; to += 3)
        checkCopy(ftcomm::transport::detail::copyAvx2AroundCache, bytes, from, to);
  }
}
#endif
