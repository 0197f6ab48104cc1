// The AVX2 copy loops behind copyBytes and copyAroundCache (copy_bytes.h), built only on x86-64 and
// only run where the processor has AVX2 (copy_bytes.cc chooses).
//
// Thread-safety: a function.
#pragma once

#include <cstddef>

namespace ftcomm::transport::detail {

// Copies `bytes` (at least 128) from `from` to `to`, which do not overlap: 32-byte loads, and
// stores aligned to 32 bytes past the first.
void copyAvx2(void* to, const void* from, std::size_t bytes);

// The same with non-temporal stores (around the cache), then a store fence.
void copyAvx2AroundCache(void* to, const void* from, std::size_t bytes);

}  // namespace ftcomm::transport::detail
