// The copy every bulk move of the shared-memory path and of the algorithms goes through, cut as
// the tuning profile's copy policy says (comm/tuning/profile.h, Settings::copy*): glibc's memcpy
// by default; on processors whose `rep movsb` reads lines another core just wrote slowly, an AVX2
// loop from a few KiB; where source and destination together outgrow the L3, stores around the
// cache (a plain store first reads the line it writes); and where `rep movsb` is the fast copy,
// memcpy in pieces short enough for glibc to keep using it. docs/tuning.md has the measurements.
//
// Thread-safety: functions; the policy is process-wide, set when a communicator is created.
#pragma once

#include <cstddef>
#include <cstring>

#include <atomic>
#include <limits>

namespace ftcomm::transport {

namespace detail {

// The AVX2 loop where the processor has it, else memcpy in 2 KiB pieces (CopyPolicy::loopFrom).
void copyInVectorLoop(void* to, const void* from, std::size_t bytes);

// memcpy in kRepMovsbPieceBytes pieces, each short enough for glibc's `rep movsb`.
void copyInRepMovsbPieces(void* to, const void* from, std::size_t bytes);

}  // namespace detail

// Where copyBytes leaves plain memcpy (sizes in bytes; SIZE_MAX: never).
struct CopyPolicy {
  std::size_t loopFrom = std::numeric_limits<std::size_t>::max();
  std::size_t aroundCacheFrom = std::numeric_limits<std::size_t>::max();
  std::size_t partAroundCacheFrom = std::numeric_limits<std::size_t>::max();
  std::size_t piecesFrom = std::numeric_limits<std::size_t>::max();
  // A direct reduction writes its result slice around the cache from this size.
  std::size_t resultAroundCacheFrom = std::numeric_limits<std::size_t>::max();
};

namespace detail {
// The process's policy, read on every copy (relaxed: a copy cut either way is correct).
struct CopyPolicyCell {
  std::atomic<std::size_t> loopFrom{std::numeric_limits<std::size_t>::max()};
  std::atomic<std::size_t> aroundCacheFrom{std::numeric_limits<std::size_t>::max()};
  std::atomic<std::size_t> partAroundCacheFrom{std::numeric_limits<std::size_t>::max()};
  std::atomic<std::size_t> piecesFrom{std::numeric_limits<std::size_t>::max()};
  std::atomic<std::size_t> resultAroundCacheFrom{std::numeric_limits<std::size_t>::max()};
};
inline CopyPolicyCell copyPolicyCell;
}  // namespace detail

// Sets the process's copy policy (the tuning profile of the communicator created last).
void setCopyPolicy(const CopyPolicy& policy);
CopyPolicy copyPolicy();

// memcpy is cut into pieces of this many bytes from CopyPolicy::piecesFrom.
inline constexpr std::size_t kRepMovsbPieceBytes = std::size_t{512} << 10;

// A copy whose stores go around the cache (non-temporal), into memory that another core reads
// next: a plain store must first take the line back from the core that read it last, which on
// some machines costs more than the copy. The AVX2 loop with non-temporal stores where the
// processor has AVX2, else memcpy. The stores are done (fenced) when it returns.
void copyAroundCache(void* to, const void* from, std::size_t bytes);

inline void copyBytes(void* to, const void* from, std::size_t bytes) {
  const auto& policy = detail::copyPolicyCell;
  if (bytes >= policy.piecesFrom.load(std::memory_order_relaxed)) {
    detail::copyInRepMovsbPieces(to, from, bytes);
    return;
  }
  if (bytes < policy.loopFrom.load(std::memory_order_relaxed)) {
    std::memcpy(to, from, bytes);
    return;
  }
  if (bytes >= policy.aroundCacheFrom.load(std::memory_order_relaxed)) {
    copyAroundCache(to, from, bytes);
    return;
  }
  detail::copyInVectorLoop(to, from, bytes);
}

// One copy of a collective that moves several times as many bytes meanwhile: a member's own
// block of an allgather or all-to-all beside the peers' blocks it reads. Their buffers together
// outgrow the L3 before this copy's would alone, so it goes around the cache from
// CopyPolicy::partAroundCacheFrom.
inline void copyPartOfLargeMove(void* to, const void* from, std::size_t bytes) {
  if (bytes >= detail::copyPolicyCell.partAroundCacheFrom.load(std::memory_order_relaxed)) {
    copyAroundCache(to, from, bytes);
    return;
  }
  copyBytes(to, from, bytes);
}

}  // namespace ftcomm::transport
