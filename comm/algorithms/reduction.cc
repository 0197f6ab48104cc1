#include "algorithms/reduction.h"

#include <string>

#include "algorithms/reduction_by_type.h"
#include "algorithms/reduction_isa.h"

namespace ftcomm::algorithms {

namespace kernels {

constexpr std::size_t kSmallCount = 64;

#if defined(FTCOMM_REDUCTION_AVX2)
void reduceAvx2(DataType type, ReduceOp op, void* out, const void* a, const void* b,
                std::size_t count, Stores stores);
void divideAvx2(DataType type, void* data, std::size_t count, int contributors);
#endif

Isa bestIsa() {
#if defined(FTCOMM_REDUCTION_AVX2)
  static const Isa best = [] {
    __builtin_cpu_init();  // in case this runs before the runtime's own constructor did it
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") ? Isa::kAvx2
                                                                            : Isa::kBaseline;
  }();
  return best;
#else
  return Isa::kBaseline;
#endif
}

void reduce(Isa isa, DataType type, ReduceOp op, void* out, const void* a, const void* b,
            std::size_t count, Stores stores) {
#if defined(FTCOMM_REDUCTION_AVX2)
  if (isa == Isa::kAvx2) return reduceAvx2(type, op, out, a, b, count, stores);
#endif
  (void)isa;
  reduceAny(type, op, out, a, b, count, stores);
}

void divide(Isa isa, DataType type, void* data, std::size_t count, int contributors) {
#if defined(FTCOMM_REDUCTION_AVX2)
  if (isa == Isa::kAvx2) return divideAvx2(type, data, count, contributors);
#endif
  (void)isa;
  divideAny(type, data, count, contributors);
}

}  // namespace kernels

// The baseline build's conversions: the branch-free forms of reduction_kernels.h.
float halfToFloat(std::uint16_t half) {
  return kernels::widenHalf(half);
}
std::uint16_t floatToHalf(float value) {
  return kernels::narrowHalf(value);
}
float bfloat16ToFloat(std::uint16_t value) {
  return kernels::widenBfloat16(value);
}
std::uint16_t floatToBfloat16(float value) {
  return kernels::narrowBfloat16(value);
}

Status reduceInto(DataType type, ReduceOp op, void* inout, const void* in, std::size_t count) {
  return reduceFrom(type, op, inout, inout, in, count);
}

Status reduceFrom(DataType type, ReduceOp op, void* out, const void* a, const void* b,
                  std::size_t count) {
  FTCOMM_RETURN_IF_ERROR(checkReduction(type, op));
  // A few elements (a small allreduce's) stay in this build: the call into the other and its
  // wider loops' set-up cost more than they save (both give the same bits).
  if (count < kernels::kSmallCount) {
    kernels::reduceAny(type, op, out, a, b, count);
  } else {
    kernels::reduce(kernels::bestIsa(), type, op, out, a, b, count);
  }
  return Status::Ok();
}

Status reduceFromAroundCache(DataType type, ReduceOp op, void* out, const void* a, const void* b,
                             std::size_t count) {
  FTCOMM_RETURN_IF_ERROR(checkReduction(type, op));
  kernels::reduce(kernels::bestIsa(), type, op, out, a, b, count, kernels::Stores::kAroundCache);
  return Status::Ok();
}

Status finishAverage(DataType type, void* data, std::size_t count, int contributors) {
  FTCOMM_RETURN_IF_ERROR(checkReduction(type, ReduceOp::kAvg));
  if (contributors < 1)
    return invalidArgument("average over " + std::to_string(contributors) + " contributors");
  kernels::divide(kernels::bestIsa(), type, data, count, contributors);
  return Status::Ok();
}

}  // namespace ftcomm::algorithms
