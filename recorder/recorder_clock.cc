#include "recorder/recorder_clock.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
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

std::int64_t readTsc() {
#ifdef FTCOMM_HAVE_TSC
  return static_cast<std::int64_t>(__rdtsc());
#else
  return 0;
#endif
}

#ifdef FTCOMM_HAVE_TSC
// The TSC ticks at a constant rate through frequency changes and idle states (CPUID
// 0x80000007, EDX bit 8).
bool invariantTsc() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(0x80000007, &a, &b, &c, &d) != 0 && (d & (1u << 8)) != 0;
}

// clock_gettime is answered in user space (the vDSO): at least 4 times as fast as the system
// call at best, of 32 tries each. A paravirtual clock source is read there only while the
// hypervisor says that the TSC is synchronized across CPUs (Linux's kvm-clock, for one, sets
// VDSO_CLOCKMODE_PVCLOCK only with PVCLOCK_TSC_STABLE_BIT); otherwise every reading is a system
// call (on the project's VMs the gap is 63 against 2310 ticks).
bool clockReadInUserSpace() {
  std::uint64_t vdso = ~std::uint64_t{0}, kernel = ~std::uint64_t{0};
  timespec ts;
  for (int i = 0; i < 32; ++i) {
    std::uint64_t t0 = __rdtsc();
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    std::uint64_t t1 = __rdtsc();
    vdso = std::min(vdso, t1 - t0);
    t0 = __rdtsc();
    ::syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    t1 = __rdtsc();
    kernel = std::min(kernel, t1 - t0);
  }
  return vdso * 4 < kernel;
}
#endif

// Entries may read the TSC: the kernel keeps time with it, or with a paravirtual clock that the
// hypervisor derives from a TSC it keeps invariant and synchronized (KVM's, Hyper-V's).
bool tscIsTrusted() {
#ifdef FTCOMM_HAVE_TSC
  std::ifstream in("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string source;
  if (!(in >> source)) return false;
  if (source == "tsc") return true;
  if (source != "kvm-clock" && source != "hyperv_clocksource_tsc_page") return false;
  return invariantTsc() && clockReadInUserSpace();
#else
  return false;
#endif
}

const Calibration& calibration() {
  static const Calibration c = [] {
    Calibration made;
    made.tsc = tscIsTrusted();
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
