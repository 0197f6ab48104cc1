// The flight recorder's clock. Entries take two or three timestamps per operation, and on the
// project's VMs clock_gettime costs 25-35 ns, as much as the rest of a small collective's
// bookkeeping (an 8-byte allreduce at 2 ranks took 0.24 us with the recorder and 0.18 us
// without it on AMD EPYC Zen 5, where the kernel keeps time with kvm-clock). Where the TSC is
// invariant and synchronized across cores (the kernel's clocksource is "tsc", or a paravirtual
// clock that the vDSO reads, which the hypervisor derives from such a TSC; recorder_clock.cc),
// entries read the TSC instead (about 10 ns) and are converted to CLOCK_MONOTONIC nanoseconds
// when a dump is written, against two readings of both clocks. Elsewhere ticks are
// CLOCK_MONOTONIC nanoseconds already.
//
// Thread-safety: functions; any thread.
#pragma once

#include <cstdint>

namespace ftcomm::recorder {

// CLOCK_MONOTONIC in nanoseconds.
std::int64_t monotonicNs();

// A reading of the recorder's clock.
std::int64_t recorderTicks();

// Converts ticks to CLOCK_MONOTONIC nanoseconds at the rate measured between start-up and its
// construction (a dump makes one).
class TickConverter {
 public:
  TickConverter();
  // 0 stays 0 (no time).
  std::int64_t toNs(std::int64_t ticks) const;

 private:
  bool tsc_ = false;
  std::int64_t ticks0_ = 0, ns0_ = 0;
  long double nsPerTick_ = 1;
};

}  // namespace ftcomm::recorder
