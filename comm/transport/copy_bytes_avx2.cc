// The AVX2 copy loops (copy_bytes_avx2.h); this file is compiled with -mavx2.
#include "transport/copy_bytes_avx2.h"

#include <immintrin.h>

#include <cstdint>

namespace ftcomm::transport::detail {

namespace {

// An aligned store of 32 bytes: through the cache, or around it (non-temporal).
template <bool kAroundCache>
inline void store(unsigned char* at, __m256i value) {
  if constexpr (kAroundCache) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(at), value);
  } else {
    _mm256_store_si256(reinterpret_cast<__m256i*>(at), value);
  }
}

template <bool kAroundCache>
void copyLoop(void* to, const void* from, std::size_t bytes) {
  auto* d = static_cast<unsigned char*>(to);
  const auto* s = static_cast<const unsigned char*>(from);
  const __m256i first = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s));
  const __m256i last = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + bytes - 32));
  // The first 32 bytes go unaligned; from the next 32-byte boundary of the destination on, the
  // stores are aligned. The last 32 bytes, stored unaligned at the end, cover what the loop
  // leaves.
  const std::size_t skip = 32 - (reinterpret_cast<std::uintptr_t>(d) & 31);
  unsigned char* out = d + skip;
  const unsigned char* in = s + skip;
  unsigned char* const end = d + bytes - 32;
  for (; out + 128 <= end; out += 128, in += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 64));
    const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 96));
    store<kAroundCache>(out, a);
    store<kAroundCache>(out + 32, b);
    store<kAroundCache>(out + 64, c);
    store<kAroundCache>(out + 96, e);
  }
  for (; out < end; out += 32, in += 32)
    store<kAroundCache>(out, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in)));
  // Non-temporal stores are done before any store after the fence (the caller's post among
  // them); the first and last 32 bytes go through the cache after it.
  if constexpr (kAroundCache) _mm_sfence();
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), first);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(end), last);
}

}  // namespace

void copyAvx2(void* to, const void* from, std::size_t bytes) {
  copyLoop<false>(to, from, bytes);
}

void copyAvx2AroundCache(void* to, const void* from, std::size_t bytes) {
  copyLoop<true>(to, from, bytes);
}

}  // namespace ftcomm::transport::detail
