#include "recorder/recorder_clock.h"

#include <time.h>

#include <fstream>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define FTCOMM_HAVE_TSC 1
#endif

namespace ftcomm::recorder {

namespace {

// The TSC and CLOCK_MONOTONIC read together at start-up: one end of the conversion.
struct Calibration {
  bool tsc = false;
  std::int64_t ticks0 = 0;
  std::int64_t ns0 = 0;
};

bool kernelKeepsTimeWithTsc() {
  std::ifstream in("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string source;
  return static_cast<bool>(in >> source) && source == "tsc";
}

std::int64_t readTsc() {
#ifdef FTCOMM_HAVE_TSC
  return static_cast<std::int64_t>(__rdtsc());
#else
  return 0;
#endif
}

const Calibration& calibration() {
  static const Calibration c = [] {
    Calibration made;
#ifdef FTCOMM_HAVE_TSC
    made.tsc = kernelKeepsTimeWithTsc();
#endif
    made.ticks0 = made.tsc ? readTsc() : 0;
    made.ns0 = monotonicNs();
    return made;
  }();
  return c;
}

}  // namespace

std::int64_t monotonicNs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::int64_t recorderTicks() {
  return calibration().tsc ? readTsc() : monotonicNs();
}

TickConverter::TickConverter() {
  const Calibration& c = calibration();
  tsc_ = c.tsc;
  ticks0_ = c.ticks0;
  ns0_ = c.ns0;
  if (!tsc_) return;
  // The other end of the conversion: now. Over the process's lifetime so far the rate is exact
  // to far below a nanosecond per microsecond; moments after start-up, a time is still off by
  // no more than the jitter of one clock reading.
  const std::int64_t ticks1 = readTsc();
  const std::int64_t ns1 = monotonicNs();
  if (ticks1 > ticks0_ && ns1 > ns0_) {
    nsPerTick_ = static_cast<long double>(ns1 - ns0_) / static_cast<long double>(ticks1 - ticks0_);
  }
}

std::int64_t TickConverter::toNs(std::int64_t ticks) const {
  if (!tsc_ || ticks == 0) return ticks;
  return ns0_ + static_cast<std::int64_t>(static_cast<long double>(ticks - ticks0_) * nsPerTick_);
}

}  // namespace ftcomm::recorder
