// Element-wise reduction kernels used by every collective algorithm of the host backend:
// inout[i] = inout[i] OP in[i], or out[i] = a[i] OP b[i]. Written as plain loops over
// restrict-qualified typed pointers, which the compiler vectorizes (reduction_kernels.h), and
// built twice on x86-64: for the baseline, and for AVX2 with F16C where the processor has them
// (reduction_isa.h). float16 and bfloat16 are widened to float32, reduced, and rounded back to
// nearest-even, with the same bits in either build. AVG reduces as a
// sum and the algorithm divides once, at the end, with finishAverage() (partial sums of 16-bit
// types are still stored, and so rounded, in their own type between steps, as in NCCL).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ftcomm/types.h"

namespace ftcomm::algorithms {

// Refuses undefined combinations (checkReduction) before touching memory.
Status reduceInto(DataType type, ReduceOp op, void* inout, const void* in, std::size_t count);

// out[i] = a[i] OP b[i]: a reduction and a copy in one pass. `out` may be `a`; otherwise none of
// the three may overlap.
Status reduceFrom(DataType type, ReduceOp op, void* out, const void* a, const void* b,
                  std::size_t count);

// reduceFrom whose stores go around the cache (non-temporal): for the last step of a reduction
// whose result outgrows the cache, which plain stores would first read from memory
// (reduction_kernels.h, combineAroundCache). float16 and bfloat16 store plainly. The stores are
// done (fenced) when it returns.
Status reduceFromAroundCache(DataType type, ReduceOp op, void* out, const void* a, const void* b,
                             std::size_t count);

// Divides each element by `contributors` (AVG's last step); floating types only.
Status finishAverage(DataType type, void* data, std::size_t count, int contributors);

// IEEE 754 binary16 and bfloat16 conversions, round to nearest even; NaN stays NaN.
float halfToFloat(std::uint16_t half);
std::uint16_t floatToHalf(float value);
float bfloat16ToFloat(std::uint16_t value);
std::uint16_t floatToBfloat16(float value);

}  // namespace ftcomm::algorithms
