// memcpy in pieces below glibc's `rep movsb` threshold (2 KiB by default). Above it glibc copies
// with `rep movsb`, which some machines run at a fraction of the vector loop's speed: on the
// AMD EPYC VMs these benchmarks run on, a 32 KiB copy took 3x as long (docs/BENCHMARKS.md).
// From the size where glibc stops using `rep movsb` (on AMD, the per-core L2: 512 KiB here) its
// own loop is faster than pieces (a 1 MiB copy out of a window: 34 GB/s against 7), so large
// copies go to memcpy whole. On Intel, whose `rep movsb` (ERMS, FSRM) is glibc's fastest copy,
// every copy goes whole: 15-30% faster than pieces from 32 KiB to 1 MiB on the Xeon (Sapphire
// Rapids) VMs of 2026-12-01. (GCC expands each 2 KiB piece into `rep movsq`.)
// Every bulk copy of the shared-memory path and of the algorithms goes through here.
//
// Thread-safety: a function.
#pragma once

#include <cstddef>
#include <cstring>

#include "transport/cpu_vendor.h"

namespace ftcomm::transport {

inline void copyBytes(void* to, const void* from, std::size_t bytes) {
  constexpr std::size_t kPiece = 2048;
  constexpr std::size_t kWhole = 512 * 1024;
  if (bytes >= kWhole || !amdProcessor()) {
    std::memcpy(to, from, bytes);
    return;
  }
  auto* d = static_cast<unsigned char*>(to);
  const auto* s = static_cast<const unsigned char*>(from);
  for (; bytes > kPiece; bytes -= kPiece, d += kPiece, s += kPiece) std::memcpy(d, s, kPiece);
  std::memcpy(d, s, bytes);
}

}  // namespace ftcomm::transport
