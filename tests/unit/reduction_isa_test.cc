// The reduction kernels' builds (algorithms/reduction_isa.h: baseline, and AVX2 with F16C where
// this processor has them) against a plain scalar reference of the 16-bit float conversions:
// every float16 and bfloat16 input, each operator, ties, subnormals, infinities and NaN, counts
// that leave tails and inputs that are not aligned.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "algorithms/reduction.h"
#include "algorithms/reduction_isa.h"

using namespace ftcomm;
using namespace ftcomm::algorithms;

namespace {

// The reference: IEEE 754 conversions written case by case, round to nearest even.
float referenceHalfToFloat(std::uint16_t half) {
  const std::uint32_t sign = static_cast<std::uint32_t>(half & 0x8000) << 16;
  const std::uint32_t exponent = (half >> 10) & 0x1f;
  const std::uint32_t mantissa = half & 0x3ff;
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

std::uint16_t referenceFloatToHalf(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000);
  const std::uint32_t magnitude = bits & 0x7fffffff;
  if (magnitude >= 0x7f800000) {
    return magnitude == 0x7f800000
               ? static_cast<std::uint16_t>(sign | 0x7c00)
               : static_cast<std::uint16_t>(sign | 0x7e00 | ((magnitude >> 13) & 0x1ff));
  }
  if (magnitude >= 0x477ff000) return static_cast<std::uint16_t>(sign | 0x7c00);
  if (magnitude < 0x38800000) {
    if (magnitude <= 0x33000000) return sign;
    const std::uint32_t exponent = magnitude >> 23;
    const std::uint32_t mantissa = (magnitude & 0x7fffff) | 0x800000;
    const std::uint32_t shift = 126 - exponent;
    std::uint32_t half = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1);
    const std::uint32_t tie = 1u << (shift - 1);
    if (rest > tie || (rest == tie && (half & 1))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = (magnitude - 0x38000000) >> 13;
  const std::uint32_t rest = magnitude & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;
  return static_cast<std::uint16_t>(sign | half);
}

float referenceBfloat16ToFloat(std::uint16_t value) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(value) << 16);
}

std::uint16_t referenceFloatToBfloat16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7fffffff) > 0x7f800000) return static_cast<std::uint16_t>((bits >> 16) | 0x0040);
  const std::uint32_t upper = bits >> 16, rest = bits & 0xffff;
  const std::uint32_t rounded =
      rest > 0x8000 || (rest == 0x8000 && (upper & 1)) ? upper + 1 : upper;
  return static_cast<std::uint16_t>(rounded);
}

std::vector<kernels::Isa> builds() {
  std::vector<kernels::Isa> all{kernels::Isa::kBaseline};
  if (kernels::bestIsa() != kernels::Isa::kBaseline) all.push_back(kernels::bestIsa());
  return all;
}

const char* nameOf(kernels::Isa isa) {
  return isa == kernels::Isa::kBaseline ? "baseline" : "avx2";
}

// `count` elements of `type` at `at`, numbers from `seed` on: no NaN, so that two builds of one
// reduction may only differ in bits by mistake.
void fill(DataType type, std::byte* at, std::size_t count, int seed) {
  for (std::size_t i = 0; i < count; ++i) {
    const int v =
        static_cast<int>((i * 7919 + static_cast<std::size_t>(seed) * 104729) % 2001) - 1000;
    std::byte* to = at + i * dataTypeSize(type);
    switch (type) {
      case DataType::kFloat32: {
        const float f = static_cast<float>(v) * 0.37f;
        std::memcpy(to, &f, sizeof f);
        break;
      }
      case DataType::kFloat64: {
        const double d = static_cast<double>(v) * 0.37;
        std::memcpy(to, &d, sizeof d);
        break;
      }
      case DataType::kFloat16:
      case DataType::kBFloat16: {
        const float f = static_cast<float>(v) * 0.01f;
        const std::uint16_t h = type == DataType::kFloat16 ? floatToHalf(f) : floatToBfloat16(f);
        std::memcpy(to, &h, sizeof h);
        break;
      }
      default:  // integers: the low bytes of v, every bit pattern among them
        for (std::size_t b = 0; b < dataTypeSize(type); ++b)
          to[b] = static_cast<std::byte>((v * 131 + static_cast<int>(b) * 17) & 0xff);
        break;
    }
  }
}

bool isNan16(DataType type, std::uint16_t v) {
  return type == DataType::kFloat16 ? (v & 0x7fff) > 0x7c00 : (v & 0x7fff) > 0x7f80;
}

// Where the result is a NaN only NaN-ness is compared: which input's payload a sum of two NaN
// carries depends on the order the compiler put the operands in.
bool same16(DataType type, std::uint16_t got, std::uint16_t expected) {
  if (isNan16(type, expected)) return isNan16(type, got);
  return got == expected;
}

}  // namespace

TEST_CASE("the 16-bit conversions give the reference's bits for every input") {
  std::size_t checked = 0;
  for (std::uint32_t v = 0; v <= 0xffff; ++v) {
    const auto x = static_cast<std::uint16_t>(v);
    if (std::bit_cast<std::uint32_t>(halfToFloat(x)) !=
        std::bit_cast<std::uint32_t>(referenceHalfToFloat(x)))
      FAIL("halfToFloat(0x" << std::hex << v << ")");
    if (std::bit_cast<std::uint32_t>(bfloat16ToFloat(x)) !=
        std::bit_cast<std::uint32_t>(referenceBfloat16ToFloat(x)))
      FAIL("bfloat16ToFloat(0x" << std::hex << v << ")");
    checked += 2;
  }
  // Every sign, exponent and top of the mantissa, with the low bits that decide rounding: zero,
  // just below, at and just above the tie, and all ones.
  const std::uint32_t halfLows[] = {0, 1, 0xfff, 0x1000, 0x1001, 0x1fff};
  const std::uint32_t bfloatLows[] = {0, 1, 0x7fff, 0x8000, 0x8001, 0xffff};
  for (std::uint32_t top = 0; top < (1u << 19); ++top) {
    for (std::uint32_t low : halfLows) {
      const std::uint32_t bits = (top << 13) | low;
      const float value = std::bit_cast<float>(bits);
      if (floatToHalf(value) != referenceFloatToHalf(value))
        FAIL("floatToHalf of bits 0x" << std::hex << bits);
      ++checked;
    }
  }
  for (std::uint32_t top = 0; top < (1u << 16); ++top) {
    for (std::uint32_t low : bfloatLows) {
      const std::uint32_t bits = (top << 16) | low;
      const float value = std::bit_cast<float>(bits);
      if (floatToBfloat16(value) != referenceFloatToBfloat16(value))
        FAIL("floatToBfloat16 of bits 0x" << std::hex << bits);
      ++checked;
    }
  }
  CHECK(checked == 2 * 65536 + 6 * (std::size_t{1} << 19) + 6 * 65536);
}

TEST_CASE("every build reduces every 16-bit float input as the reference does") {
  std::size_t checked = 0;
  // Every bit pattern as the first input, one element past an aligned start and with a tail.
  const std::size_t count = 65536 + 13;
  std::vector<std::uint16_t> a(count + 1), b(count + 1), out(count + 1);
  for (DataType type : {DataType::kFloat16, DataType::kBFloat16}) {
    const bool half = type == DataType::kFloat16;
    auto widen = half ? referenceHalfToFloat : referenceBfloat16ToFloat;
    auto narrow = half ? referenceFloatToHalf : referenceFloatToBfloat16;
    auto of = [&](float f) { return narrow(f); };
    // Second inputs: zeros, ones, a subnormal, the largest finite, an infinity, a NaN, and values
    // whose sums with many first inputs land on ties.
    const std::vector<std::uint16_t> seconds = {
        0x0000,
        0x8000,
        of(1.0f),
        of(-1.0f),
        0x0001,
        half ? std::uint16_t{0x7bff} : of(3e38f),
        half ? std::uint16_t{0xfc00} : std::uint16_t{0xff80},
        half ? std::uint16_t{0x7e01} : std::uint16_t{0x7fc1},
        of(0.333f),
        of(-1234.5f)};
    for (std::uint16_t second : seconds) {
      for (std::size_t i = 0; i < count; ++i) {
        a[i + 1] = static_cast<std::uint16_t>(i);
        b[i + 1] = second;
      }
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax}) {
        for (kernels::Isa isa : builds()) {
          kernels::reduce(isa, type, op, out.data() + 1, a.data() + 1, b.data() + 1, count);
          for (std::size_t i = 0; i < count; ++i) {
            const float x = widen(a[i + 1]), y = widen(b[i + 1]);
            float r = 0;
            switch (op) {
              case ReduceOp::kSum:
                r = x + y;
                break;
              case ReduceOp::kProd:
                r = x * y;
                break;
              case ReduceOp::kMin:
                r = (x < y || x != x) ? x : y;
                break;
              default:
                r = (x > y || x != x) ? x : y;
                break;
            }
            if (!same16(type, out[i + 1], narrow(r))) {
              FAIL(dataTypeName(type)
                   << " " << reduceOpName(op) << " in the " << nameOf(isa) << " build: 0x"
                   << std::hex << a[i + 1] << " and 0x" << b[i + 1] << " gave 0x" << out[i + 1]
                   << ", not 0x" << narrow(r));
            }
            ++checked;
          }
        }
      }
    }
    // The average's last step, in place.
    for (int contributors : {2, 3, 7}) {
      for (kernels::Isa isa : builds()) {
        for (std::size_t i = 0; i < count; ++i) out[i + 1] = static_cast<std::uint16_t>(i);
        kernels::divide(isa, type, out.data() + 1, count, contributors);
        for (std::size_t i = 0; i < count; ++i) {
          const auto expected =
              narrow(widen(static_cast<std::uint16_t>(i)) / static_cast<float>(contributors));
          if (!same16(type, out[i + 1], expected))
            FAIL(dataTypeName(type) << " average over " << contributors << " in the " << nameOf(isa)
                                    << " build: 0x" << std::hex << i);
          ++checked;
        }
      }
    }
  }
  // Each build saw every input: 10 second inputs and 4 operators, then 3 averages, per type.
  CHECK(checked == builds().size() * 2 * (10 * 4 + 3) * count);
}

TEST_CASE("every build's stores around the cache give its plain stores' bits") {
  // Counts that leave no whole line, one line and more, with tails; outputs at every offset
  // within a line (the elements before the first whole line are stored plainly), and in place.
  const std::size_t counts[] = {0, 1, 15, 16, 17, 64, 1000 + 13};
  std::size_t compared = 0;
  for (const auto& traits : kDataTypes) {
    const DataType type = traits.type;
    const std::size_t es = traits.bytes;
    for (const auto& opTraits : kReduceOps) {
      const ReduceOp op = opTraits.op;
      if (!checkReduction(type, op).ok()) {
        std::vector<std::byte> x(es);
        CHECK(reduceFromAroundCache(type, op, x.data(), x.data(), x.data(), 1).code() ==
              StatusCode::kInvalidArgument);
        continue;
      }
      for (std::size_t count : counts) {
        for (std::size_t offset = 0; offset < 64 / es + 1; offset += es == 1 ? 7 : 1) {
          for (bool inPlace : {false, true}) {
            const std::size_t bytes = count * es, at = offset * es;
            std::vector<std::byte> a(bytes + 128), b(bytes + 128), plain(bytes + 128),
                around(bytes + 128);
            // 64-byte aligned starts, then `offset` elements in.
            auto aligned = [](std::vector<std::byte>& v) {
              const auto p = reinterpret_cast<std::uintptr_t>(v.data());
              return v.data() + ((64 - p % 64) % 64);
            };
            std::byte* pa = aligned(a) + at;
            std::byte* pb = aligned(b) + at;
            std::byte* pPlain = aligned(plain) + at;
            std::byte* pAround = aligned(around) + at;
            fill(type, pa, count, 1);
            fill(type, pb, count, 2);
            for (kernels::Isa isa : builds()) {
              INFO(traits.name << " " << opTraits.name << " count " << count << " offset " << offset
                               << (inPlace ? " in place" : "") << " " << nameOf(isa));
              if (inPlace) {
                std::memcpy(pPlain, pa, bytes);
                std::memcpy(pAround, pa, bytes);
              }
              // Bytes after the output must stay as they were.
              pPlain[bytes] = pAround[bytes] = std::byte{0x5a};
              kernels::reduce(isa, type, op, pPlain, inPlace ? pPlain : pa, pb, count);
              kernels::reduce(isa, type, op, pAround, inPlace ? pAround : pa, pb, count,
                              kernels::Stores::kAroundCache);
              CHECK(std::memcmp(pPlain, pAround, bytes + 1) == 0);
              ++compared;
            }
          }
        }
      }
      // Through the checked entry point too.
      std::vector<std::byte> a(4096 * es), b(4096 * es), plain(4096 * es), around(4096 * es);
      fill(type, a.data(), 4096, 3);
      fill(type, b.data(), 4096, 4);
      REQUIRE(reduceFrom(type, op, plain.data(), a.data(), b.data(), 4096).ok());
      REQUIRE(reduceFromAroundCache(type, op, around.data(), a.data(), b.data(), 4096).ok());
      CHECK(plain == around);
    }
  }
  CHECK(compared > 0);
}
