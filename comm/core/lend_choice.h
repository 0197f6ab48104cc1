// Whether a member of a streamed broadcast (its root), allgather or all-to-all lends a buffer
// that its peers cannot map (heap memory: they read it with cross-memory attach,
// process_vm_readv, whole where every member lends, as the direct form does) or copies it
// through its slots chunk by chunk. Where neither is always faster, each member measures both and
// takes the faster one, trying the other now and then, since what is faster changes while a job
// runs. The peers read each member's part from where its post says (InlineCollective::takeLent,
// lendsWhole), so the members need not agree beforehand, and every way gives the same bits. The
// members of an allgather or all-to-all mostly choose alike: they count the same calls and
// measure the same collectives.
//
// Used where the plan lets members choose (InlineChunking::chooses: at 2 ranks on Zen 2,
// inline_plan.cc says why).
//
// Thread-safety: any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace ftcomm::detail {

class LendChoice {
 public:
  // The process's choices for a broadcast's root, for an allgather's member, for an
  // all-to-all's member.
  enum class Kind { kBroadcast, kAllGather, kAllToAll };
  static LendChoice& process(Kind kind);

  struct Choice {
    bool lend = false;
    // The call before in this size class went the same way: this one's time is the way's own
    // (record() it). A copied call returns before the peers have read its last chunks, so the
    // call after it starts by waiting for them; a call after one of the other way does not
    // measure its own way.
    bool measure = false;
  };
  // This call's choice for `bytes`.
  Choice choose(std::size_t bytes);
  // What a measured call of `bytes` took, from its start to its return on this member.
  void record(std::size_t bytes, bool lent, std::chrono::steady_clock::duration took);

  // A size class goes kRun calls each way, first the way that won at the nearest size measured
  // (copying where none was), then takes the faster, and tries the other for kRun calls once
  // every kProbeEvery calls, so that the estimates follow the machine.
  static constexpr std::uint64_t kRun = 2;
  static constexpr std::uint64_t kProbeEvery = 64;
  // Each way's estimate: the fastest of its last kSamples calls (ns per byte). The fastest, since
  // a call's time only ever grows by what is not the way's own (a peer late, a preemption, the
  // first touch of a buffer); the last few, since the machine changes.
  static constexpr int kSamples = 4;

 private:
  struct Estimates {
    std::uint64_t calls = 0;
    double nsPerByte[2][kSamples] = {};  // copied, lent; 0 until measured
    int next[2] = {0, 0};
    int lastWay = -1;  // of the call before
  };
  static constexpr int kClasses = 64;  // by the size's bit width
  static double fastest(const double (&samples)[kSamples]);

  // 1 where lending is faster, 0 where copying is, -1 before both were measured.
  static int winnerOf(const Estimates& e);
  int nearestWinner(int sizeClass) const;  // under mu_

  std::mutex mu_;
  Estimates byClass_[kClasses];
};

}  // namespace ftcomm::detail
