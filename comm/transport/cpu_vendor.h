// The processor's maker, for the few choices measured to differ between the AMD EPYC and Intel
// Xeon machines these benchmarks ran on (docs/BENCHMARKS.md): how bulk copies are cut
// (copy_bytes.h) and up to which size collectives run inline (core/inline_plan.cc); and, for the
// copies, the processor family, since the EPYC VMs differ there too.
//
// Thread-safety: a function; the answer is computed once.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace ftcomm::transport {

inline bool amdProcessor() {
  static const bool amd = [] {
    __builtin_cpu_init();
    return __builtin_cpu_is("amd") != 0;
  }();
  return amd;
}

// The x86 processor family as CPUID leaf 1 reports it, extended family included (AMD: 0x17 Zen
// and Zen 2, 0x19 Zen 3 and Zen 4, 0x1a Zen 5); 0 where there is no CPUID.
inline unsigned processorFamily() {
  static const unsigned family = [] {
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return 0u;
    const unsigned base = (eax >> 8) & 0xf;
    return base == 0xf ? base + ((eax >> 20) & 0xff) : base;
#else
    return 0u;
#endif
  }();
  return family;
}

// AMD Zen 5 or later (family 0x1a on): where the copy and the inline limits part from Zen 3's
// (copy_bytes.h, core/inline_plan.cc).
inline bool amdZen5OrLater() {
  return amdProcessor() && processorFamily() >= 0x1a;
}

// AMD family 0x17 (Zen 2, and Zen and Zen+, which were not measured): where a broadcast at 3-4
// ranks streams in place of the direct form (to 4 MiB at 3), and a 2-rank allgather or all-to-all
// goes direct from 32 KiB (core/inline_plan.cc).
inline bool amdZen2() {
  return amdProcessor() && processorFamily() == 0x17;
}

}  // namespace ftcomm::transport
