// Which build of the reduction kernels (reduction_by_type.h) runs: the baseline one, or on x86-64
// processors with AVX2 and F16C the one compiled for them (reduction_avx2.cc), chosen once per
// process. The 16-bit float sums gain the most: 128 KiB in cache on the EPYC VM, float16 went
// from 0.5 to 15-23 GB/s of output and bfloat16 from 2.6 to 16 GB/s (float32: 27-34 GB/s in
// either build).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>

#include "ftcomm/types.h"

namespace ftcomm::algorithms::kernels {

enum class Isa { kBaseline, kAvx2 };

// How a kernel writes its output: with plain stores, or around the cache (non-temporal stores,
// a line at a time), for a result too large to stay in the cache (reduceFromAroundCache).
enum class Stores { kPlain, kAroundCache };

// The best build this processor runs.
Isa bestIsa();

// reduceFrom and finishAverage without their checks, in the build `isa` names (which the
// processor must run: bestIsa, or kBaseline).
void reduce(Isa isa, DataType type, ReduceOp op, void* out, const void* a, const void* b,
            std::size_t count, Stores stores = Stores::kPlain);
void divide(Isa isa, DataType type, void* data, std::size_t count, int contributors);

}  // namespace ftcomm::algorithms::kernels
