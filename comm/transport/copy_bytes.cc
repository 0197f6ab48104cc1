// The copies behind copyBytes (copy_bytes.h): the AVX2 loop where the processor has AVX2, else
// memcpy in 2 KiB pieces; memcpy in pieces short enough for glibc's `rep movsb`; copyAroundCache;
// and the process's copy policy.
#include "transport/copy_bytes.h"

#include "transport/copy_bytes_avx2.h"

namespace ftcomm::transport::detail {

namespace {

bool avx2Copies() {
#if defined(FTCOMM_COPY_AVX2)
  static const bool avx2 = [] {
    __builtin_cpu_init();  // in case this runs before the runtime's own constructor did it
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return avx2;
#else
  return false;
#endif
}

// memcpy in pieces of a constant kPiece bytes, and the rest.
template <std::size_t kPiece>
void copyInPiecesOf(void* to, const void* from, std::size_t bytes) {
  auto* d = static_cast<unsigned char*>(to);
  const auto* s = static_cast<const unsigned char*>(from);
  for (; bytes > kPiece; bytes -= kPiece, d += kPiece, s += kPiece) std::memcpy(d, s, kPiece);
  std::memcpy(d, s, bytes);
}

}  // namespace

void copyInRepMovsbPieces(void* to, const void* from, std::size_t bytes) {
  copyInPiecesOf<kRepMovsbPieceBytes>(to, from, bytes);
}

void copyInVectorLoop(void* to, const void* from, std::size_t bytes) {
#if defined(FTCOMM_COPY_AVX2)
  if (avx2Copies()) {
    copyAvx2(to, from, bytes);
    return;
  }
#endif
  // GCC expands each constant 2 KiB memcpy into `rep movsq`, which is faster here than glibc's
  // `rep movsb` over the whole range, and slower than the vector loop.
  copyInPiecesOf<2048>(to, from, bytes);
}

}  // namespace ftcomm::transport::detail

namespace ftcomm::transport {

void setCopyPolicy(const CopyPolicy& policy) {
  auto& cell = detail::copyPolicyCell;
  cell.loopFrom.store(policy.loopFrom, std::memory_order_relaxed);
  cell.aroundCacheFrom.store(policy.aroundCacheFrom, std::memory_order_relaxed);
  cell.partAroundCacheFrom.store(policy.partAroundCacheFrom, std::memory_order_relaxed);
  cell.piecesFrom.store(policy.piecesFrom, std::memory_order_relaxed);
  cell.resultAroundCacheFrom.store(policy.resultAroundCacheFrom, std::memory_order_relaxed);
}

CopyPolicy copyPolicy() {
  const auto& cell = detail::copyPolicyCell;
  CopyPolicy policy;
  policy.loopFrom = cell.loopFrom.load(std::memory_order_relaxed);
  policy.aroundCacheFrom = cell.aroundCacheFrom.load(std::memory_order_relaxed);
  policy.partAroundCacheFrom = cell.partAroundCacheFrom.load(std::memory_order_relaxed);
  policy.piecesFrom = cell.piecesFrom.load(std::memory_order_relaxed);
  policy.resultAroundCacheFrom = cell.resultAroundCacheFrom.load(std::memory_order_relaxed);
  return policy;
}

void copyAroundCache(void* to, const void* from, std::size_t bytes) {
#if defined(FTCOMM_COPY_AVX2)
  if (bytes >= 128 && detail::avx2Copies()) {
    detail::copyAvx2AroundCache(to, from, bytes);
    return;
  }
#endif
  std::memcpy(to, from, bytes);
}

}  // namespace ftcomm::transport
