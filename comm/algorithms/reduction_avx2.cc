// The reduction kernels compiled with AVX2 and F16C (CMakeLists.txt sets the flags for this file
// only); reduction.cc calls them where the processor has both.
//
// This file must define no symbol but the two below: any inline function of another header that
// the compiler emitted here out of line (a weak symbol) could be the copy the linker keeps for
// the whole program, AVX2 instructions included, on a processor without them. Keep to what
// the kernel headers (reduction_by_type.h) hold; a ctest test ("build: the AVX2 reduction kernels
// define no symbol but their own", tests/build_checks/avx2_symbols.sh) reads the object's symbols.
#include "algorithms/reduction_by_type.h"

#if !defined(__AVX2__) || !defined(__F16C__)
#error "reduction_avx2.cc must be compiled with -mavx2 -mf16c"
#endif

namespace ftcomm::algorithms::kernels {

void reduceAvx2(DataType type, ReduceOp op, void* out, const void* a, const void* b,
                std::size_t count, Stores stores) {
  reduceAny(type, op, out, a, b, count, stores);
}

void divideAvx2(DataType type, void* data, std::size_t count, int contributors) {
  divideAny(type, data, count, contributors);
}

}  // namespace ftcomm::algorithms::kernels
