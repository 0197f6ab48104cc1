// How a member of an inline collective posts its input, where more than one way can be fastest:
//   - kCopy: copied into its slots with plain stores (transport::copyBytes);
//   - kCopyAroundCache: copied into its slots with stores that go around the cache
//     (transport::copyAroundCache), so that they need not first take each line back from the
//     peer that read it the round before;
//   - kLend: not copied; the peers read it out of the member's buffer (a buffer they cannot
//     map, heap memory, with cross-memory attach, process_vm_readv, whole where every member
//     lends, as the direct form does). Only where the collective lends (InlineChunking::chooses).
// Which is fastest can change while a job runs (on VMs whose cores hand a cache line over fast or
// slowly from one minute to the next: docs/tuning.md), so each member measures its calls' times,
// takes the fastest way, and tries the others now and then. The peers read each member's part from
// where its post says (InlineCollective::takeLent, lendsWhole), and a post's bytes are the same
// however they were stored, so the members need not agree beforehand, and every way gives the
// same bits. Where more than one member may lend (an allgather or all-to-all), the others take
// rank 0's way (InlineCollective::agrees): chosen apart, a member that lends and one that copies
// each measured its own way slow and the other's fast, and could go on choosing apart for good.
//
// Used where the plan lets members choose (InlineChunking::chooses, choosesCopy: a profile band
// with lend=choose or copy=choose).
//
// Thread-safety: any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "algorithms/registry.h"

namespace ftcomm::detail {

class PostChoice {
 public:
  enum class Way { kCopy, kCopyAroundCache, kLend };
  static constexpr int kWays = 3;

  // The process's choices for one kind of collective.
  static PostChoice& process(algorithms::Collective collective);

  struct Choice {
    Way way = Way::kCopy;
    // The call before in this size class went the same way: this one's time is the way's own
    // (record() it). A copied call returns before the peers have read its last chunks, so the
    // call after it starts by waiting for them; a call after one of another way does not
    // measure its own way.
    bool measure = false;
  };
  // The bit of `way` in a set of ways.
  static constexpr unsigned bit(Way way) { return 1u << static_cast<int>(way); }
  static constexpr unsigned kCopies =
      1u << static_cast<int>(Way::kCopy) | 1u << static_cast<int>(Way::kCopyAroundCache);
  // This call's choice for `bytes` among `ways` (bits, at least one).
  Choice choose(std::size_t bytes, unsigned ways);
  // What a measured call of `bytes` took, from its start to its return on this member.
  void record(std::size_t bytes, Way way, std::chrono::steady_clock::duration took);

  // A size class goes kRun calls each way in turn until every way was measured, first the way
  // that won at the nearest size measured (kCopy where none was), then the others in the order
  // of Way. Then it takes the fastest, and tries each other way for kRun calls once every
  // kProbeEvery calls, so that the estimates follow the machine.
  static constexpr std::uint64_t kRun = 2;
  static constexpr std::uint64_t kProbeEvery = 64;
  // Each way's estimate: the fastest of its last kSamples calls (ns per byte). The fastest, since
  // a call's time only ever grows by what is not the way's own (a peer late, a preemption, the
  // first touch of a buffer); the last few, since the machine changes.
  static constexpr int kSamples = 4;

 private:
  struct Estimates {
    std::uint64_t calls = 0;
    double nsPerByte[kWays][kSamples] = {};  // 0 until measured
    int next[kWays] = {};
    int lastWay = -1;  // of the call before
  };
  static constexpr int kClasses = 64;  // by the size's bit width
  static double estimate(const Estimates& e, int way);

  // The ways of the set `bits`, in the order of Way; how many.
  static int candidates(unsigned bits, int (&ways)[kWays]);
  // The fastest of `ways` by their estimates; -1 where one of them was not measured.
  static int winnerOf(const Estimates& e, const int* ways, int count);
  int nearestWinner(int sizeClass, const int* ways, int count) const;  // under mu_

  std::mutex mu_;
  Estimates byClass_[kClasses];
};

}  // namespace ftcomm::detail
