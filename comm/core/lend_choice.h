// Whether a streamed broadcast's root lends a buffer that its peers cannot map (heap memory: they
// read it with cross-memory attach, process_vm_readv, in one piece, as the direct form does) or
// copies it through its slots chunk by chunk. Where neither is always faster, the root measures
// both and takes the faster one, trying the other now and then, since what is faster changes
// while a job runs. The peers follow what the root posted (InlineCollective::lendsWhole), so the
// members need not agree beforehand, and both ways give the same bits.
//
// Used where the plan lets the root choose (InlineChunking::rootChooses: 2-rank broadcasts on
// Zen 2, inline_plan.cc says why).
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
  // The process's choices for broadcast roots.
  static LendChoice& broadcastRoots();

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
  // What a measured call of `bytes` took, from its start to its root's return.
  void record(std::size_t bytes, bool lent, std::chrono::steady_clock::duration took);

  // The way that won in the size class measured last, a new size class goes first (the ways
  // ranked alike at every size measured: it is the machine's state that decides); the first of
  // all go kRun calls each way. Then the other way is tried for kRun calls once every
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
    double nsPerByte[2][kSamples] = {};  // copied, lent; 0 until measured
    int next[2] = {0, 0};
    int lastWay = -1;  // of the call before
  };
  static constexpr int kClasses = 64;  // by the size's bit width
  static double fastest(const double (&samples)[kSamples]);

  std::mutex mu_;
  Estimates byClass_[kClasses];
  int lastWinner_ = -1;  // 0 copied, 1 lent; -1 none yet
};

}  // namespace ftcomm::detail
