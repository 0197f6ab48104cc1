// The AVX2 copy loops (copy_bytes_avx2.h); this file is compiled with -mavx2.
#include "transport/copy_bytes_avx2.h"

#include <immintrin.h>

#include <cstdint>

namespace ftcomm::transport::detail {

void copyAvx2(void* to, const void* from, std::size_t bytes) {
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
    _mm256_store_si256(reinterpret_cast<__m256i*>(out), a);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out + 32), b);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out + 64), c);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out + 96), e);
  }
  for (; out < end; out += 32, in += 32)
    _mm256_store_si256(reinterpret_cast<__m256i*>(out),
                       _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), first);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(end), last);
}

void copyAvx2AroundCache(void* to, const void* from, std::size_t bytes) {
  auto* d = static_cast<unsigned char*>(to);
  const auto* s = static_cast<const unsigned char*>(from);
  const __m256i first = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s));
  const __m256i last = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + bytes - 32));
  // As copyAvx2; the first and last 32 bytes go through the cache, after the fence, so that
  // every store is done when this returns.
  const std::size_t skip = 32 - (reinterpret_cast<std::uintptr_t>(d) & 31);
  unsigned char* out = d + skip;
  const unsigned char* in = s + skip;
  unsigned char* const end = d + bytes - 32;
  for (; out + 128 <= end; out += 128, in += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 64));
    const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 96));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(out), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(out + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(out + 64), c);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(out + 96), e);
  }
  for (; out < end; out += 32, in += 32)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(out),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in)));
  _mm_sfence();
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), first);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(end), last);
}

}  // namespace ftcomm::transport::detail
