// The copy every bulk move of the shared-memory path and of the algorithms goes through.
//
// glibc's memcpy copies with `rep movsb` from 2 KiB to the per-core L2 (512 KiB on AMD), and on
// the AMD EPYC (Zen 3) VMs these benchmarks run on, `rep movsb` reads lines that another core has
// just written at a tenth of a vector loop's speed: a 1 MiB buffer handed from one process to
// another in 64 KiB chunks took 363 us with memcpy, 40-86 us (by the buffers' offsets within a
// cache line) in 2 KiB memcpy pieces, what this file did until 2026-12-02, and 38-43 us through
// an AVX2 loop at every offset; the reader of a 256 KiB buffer took 86, 16 and 6.5 us
// (docs/BENCHMARKS.md, "rep movsb and lines another core just wrote"). So on AMD before Zen 5,
// copies from 2 KiB to 4 MiB go through the AVX2 loop (copy_bytes_avx2.cc) where the processor
// has AVX2, and through 2 KiB memcpy pieces where it does not; from 6 MiB through the AVX2 loop
// whose stores go around the cache (copyAroundCache). 16 MiB and glibc's memcpy until
// 2026-12-04, which wrote around the cache from there on the Zen 3 VMs; on the Zen 2 VM (2
// vCPUs) of that day its memcpy does not, and where a copy's source and destination together
// outgrow the L3, stores around the cache are faster than plain ones, since they do not first
// read each line they write: one process copying between the same two buffers again and again,
// 6 MiB 284 us around the cache against 348 plain and 365 with memcpy, 8 MiB 422 against 967 and
// 889, 16 MiB 1418 against 2199 and 2324; 5 MiB 236 against 204, 4 MiB 184-208 against 120-143.
// Within a collective whose buffers together outgrow the L3, copyPartOfLargeMove goes around
// the cache from 4 MiB. BENCHMARKS.md, "Zen 2: large copies around the cache". On Zen 5 (family
// 0x1a) it is the other way round: `rep movsb` is the fast copy of such lines (the same 1 MiB
// hand-over: memcpy 20-44 us, the AVX2 loop 24-151 us, glibc's vector loop without `rep movsb`
// 31-155 us; "Zen 5" in BENCHMARKS.md), so every copy there goes to memcpy, and one from glibc's 1
// MiB limit for `rep movsb` on goes in 512 KiB memcpy pieces: a 2 MiB copy between heap buffers 17%
// faster than glibc's vector loop, 3-8 MiB 3-6%, 16-32 MiB 13-19%; the direct 2-rank allgather,
// whose own block is such a copy, 2-5% faster at 2-8 MiB (0.88-0.94x OpenMPI -> 0.94-0.98x; "rep
// movsb on Zen 5 from 1 MiB" in BENCHMARKS.md). On Intel, whose `rep movsb` (ERMS, FSRM) is glibc's
// fastest copy, every copy goes to memcpy: 15-30% faster than pieces from 32 KiB to 1 MiB on the
// Xeon (Sapphire Rapids) VMs of 2026-12-01.
//
// Thread-safety: a function.
#pragma once

#include <cstddef>
#include <cstring>

#include "transport/cpu_vendor.h"

namespace ftcomm::transport {

namespace detail {

// From `bytes` of kLoopFromBytes on, on AMD processors: the vector loop or memcpy pieces.
void copyOnAmd(void* to, const void* from, std::size_t bytes);

// memcpy in kRepMovsbPieceBytes pieces, each short enough for glibc's `rep movsb`.
void copyInRepMovsbPieces(void* to, const void* from, std::size_t bytes);

}  // namespace detail

inline constexpr std::size_t kLoopFromBytes = 2048;
inline constexpr std::size_t kAroundCacheFromBytes = std::size_t{6} << 20;
inline constexpr std::size_t kPartAroundCacheFromBytes = std::size_t{4} << 20;

// Whether copies from kLoopFromBytes go to copyOnAmd, and from kAroundCacheFromBytes to
// copyAroundCache: AMD before Zen 5.
inline bool loopCopies() {
  static const bool loop = amdProcessor() && !amdZen5OrLater();
  return loop;
}

// From this size on, glibc's memcpy on AMD leaves `rep movsb` for its vector loop (its
// rep_movsb_stop_threshold: the per-core L2, 1 MiB on Zen 5).
inline constexpr std::size_t kRepMovsbBelowBytes = std::size_t{1} << 20;
inline constexpr std::size_t kRepMovsbPieceBytes = std::size_t{512} << 10;

// Whether copies of kRepMovsbBelowBytes or more go to memcpy in kRepMovsbPieceBytes pieces: AMD
// Zen 5.
inline bool pieceCopies() {
  static const bool pieces = amdZen5OrLater();
  return pieces;
}

// A copy whose stores go around the cache (non-temporal), into memory that another core reads
// next: a plain store must first take the line back from the core that read it last, which on
// some VMs costs more than the copy (a 1 MiB copy into lines the other vCPU had just read: 223
// us with plain stores against 59 around the cache, and 93 against 68 us for the other to read
// it; Zen 2, at the slow hand-over; BENCHMARKS.md, "Zen 2: posts copied around the cache").
// The AVX2 loop with non-temporal stores where the processor has AVX2, else memcpy. The stores
// are done (fenced) when it returns.
void copyAroundCache(void* to, const void* from, std::size_t bytes);

inline void copyBytes(void* to, const void* from, std::size_t bytes) {
  if (bytes >= kRepMovsbBelowBytes && pieceCopies()) {
    detail::copyInRepMovsbPieces(to, from, bytes);
    return;
  }
  if (bytes < kLoopFromBytes || !loopCopies()) {
    std::memcpy(to, from, bytes);
    return;
  }
  if (bytes >= kAroundCacheFromBytes) {
    copyAroundCache(to, from, bytes);
    return;
  }
  detail::copyOnAmd(to, from, bytes);
}

// One copy of a collective that moves several times as many bytes meanwhile: a member's own
// block of an allgather or all-to-all beside the peers' blocks it reads. Their buffers together
// outgrow the L3 before this copy's would alone, so on AMD before Zen 5 it goes around the cache
// from kPartAroundCacheFromBytes: the 2-rank heap allgather of 8 MiB (4 MiB blocks) read
// 1.16-1.23x OpenMPI against 0.97-1.03x with plain stores; of 4 MiB (2 MiB blocks) 0.95x against
// 0.99x around the cache, so not below.
inline void copyPartOfLargeMove(void* to, const void* from, std::size_t bytes) {
  if (bytes >= kPartAroundCacheFromBytes && loopCopies()) {
    copyAroundCache(to, from, bytes);
    return;
  }
  copyBytes(to, from, bytes);
}

}  // namespace ftcomm::transport
