// The copies behind copyBytes on AMD processors (copy_bytes.h): before Zen 5 the AVX2 loop where
// the processor has AVX2, else memcpy in 2 KiB pieces; on Zen 5, from 1 MiB, memcpy in pieces
// short enough for glibc's `rep movsb`; and copyAroundCache.
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

void copyOnAmd(void* to, const void* from, std::size_t bytes) {
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
