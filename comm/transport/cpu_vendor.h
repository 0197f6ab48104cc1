// The processor's maker, for the few choices measured to differ between the AMD EPYC and Intel
// Xeon machines these benchmarks ran on (docs/BENCHMARKS.md): how bulk copies are cut
// (copy_bytes.h) and up to which size collectives run inline (core/inline_plan.cc).
//
// Thread-safety: a function; the answer is computed once.
#pragma once

namespace ftcomm::transport {

inline bool amdProcessor() {
  static const bool amd = [] {
    __builtin_cpu_init();
    return __builtin_cpu_is("amd") != 0;
  }();
  return amd;
}

}  // namespace ftcomm::transport
