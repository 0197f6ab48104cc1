// The reduction kernels of the host backend: every type and operator against a reference,
// wrap-around, NaN, the 16-bit float conversions (every bit pattern), and refused combinations.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "algorithms/reduction.h"

using namespace ftcomm;
using namespace ftcomm::algorithms;

namespace {

// In place (reduceInto), and into a third buffer (reduceFrom): both must give the same bits and
// leave their inputs alone.
template <typename T>
std::vector<T> reduced(ReduceOp op, std::vector<T> a, const std::vector<T>& b, DataType type) {
  const std::vector<T> a0 = a, b0 = b;
  std::vector<T> out(a.size(), T(0));
  REQUIRE(reduceFrom(type, op, out.data(), a.data(), b.data(), a.size()).ok());
  REQUIRE(std::memcmp(a.data(), a0.data(), a.size() * sizeof(T)) == 0);
  REQUIRE(reduceInto(type, op, a.data(), b.data(), a.size()).ok());
  REQUIRE(std::memcmp(b.data(), b0.data(), b.size() * sizeof(T)) == 0);
  REQUIRE(std::memcmp(out.data(), a.data(), a.size() * sizeof(T)) == 0);
  return a;
}

template <typename T>
void checkIntegerType(DataType type) {
  const std::vector<T> a{T(1), T(6), T(-3), T(100), T(0)};
  const std::vector<T> b{T(2), T(3), T(7), T(27), T(5)};
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax,
                      ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor}) {
    auto out = reduced(op, a, b, type);
    for (std::size_t i = 0; i < a.size(); ++i) {
      using U = std::make_unsigned_t<T>;
      T expected{};
      switch (op) {
        case ReduceOp::kSum:
          expected = T(U(a[i]) + U(b[i]));
          break;
        case ReduceOp::kProd:
          expected = T(static_cast<std::uint64_t>(U(a[i])) * U(b[i]));
          break;
        case ReduceOp::kMin:
          expected = std::min(a[i], b[i]);
          break;
        case ReduceOp::kMax:
          expected = std::max(a[i], b[i]);
          break;
        case ReduceOp::kBand:
          expected = T(a[i] & b[i]);
          break;
        case ReduceOp::kBor:
          expected = T(a[i] | b[i]);
          break;
        case ReduceOp::kBxor:
          expected = T(a[i] ^ b[i]);
          break;
        default:
          break;
      }
      INFO(dataTypeName(type) << " " << reduceOpName(op) << " element " << i);
      CHECK(out[i] == expected);
    }
  }
}

}  // namespace

TEST_CASE("integer reductions match a reference for every integer type and operator") {
  checkIntegerType<std::int8_t>(DataType::kInt8);
  checkIntegerType<std::uint8_t>(DataType::kUint8);
  checkIntegerType<std::int32_t>(DataType::kInt32);
  checkIntegerType<std::uint32_t>(DataType::kUint32);
  checkIntegerType<std::int64_t>(DataType::kInt64);
  checkIntegerType<std::uint64_t>(DataType::kUint64);
}

TEST_CASE("signed integer sums and products wrap around instead of overflowing") {
  std::vector<std::int32_t> a{std::numeric_limits<std::int32_t>::max(), 1 << 20};
  std::vector<std::int32_t> b{1, 1 << 20};
  REQUIRE(reduceInto(DataType::kInt32, ReduceOp::kSum, a.data(), b.data(), 1).ok());
  CHECK(a[0] == std::numeric_limits<std::int32_t>::min());
  REQUIRE(reduceInto(DataType::kInt32, ReduceOp::kProd, a.data() + 1, b.data() + 1, 1).ok());
  CHECK(a[1] == 0);  // 2^40 mod 2^32
}

TEST_CASE("floating reductions match a reference, and NaN wins min and max") {
  const std::vector<double> a{1.5, -2.0, 3.25, NAN, 7.0};
  const std::vector<double> b{0.5, 4.0, -1.0, 1.0, NAN};
  auto sum = reduced(ReduceOp::kSum, a, b, DataType::kFloat64);
  CHECK(sum[0] == 2.0);
  CHECK(sum[2] == 2.25);
  auto prod = reduced(ReduceOp::kProd, a, b, DataType::kFloat64);
  CHECK(prod[1] == -8.0);
  auto mn = reduced(ReduceOp::kMin, a, b, DataType::kFloat64);
  CHECK(mn[0] == 0.5);
  CHECK(mn[1] == -2.0);
  CHECK(std::isnan(mn[3]));
  CHECK(std::isnan(mn[4]));
  auto mx = reduced(ReduceOp::kMax, a, b, DataType::kFloat64);
  CHECK(mx[1] == 4.0);
  CHECK(std::isnan(mx[3]));
  CHECK(std::isnan(mx[4]));
  std::vector<float> fa{1.0f, 2.0f}, fb{3.0f, 5.0f};
  REQUIRE(reduceInto(DataType::kFloat32, ReduceOp::kAvg, fa.data(), fb.data(), 2).ok());
  REQUIRE(finishAverage(DataType::kFloat32, fa.data(), 2, 2).ok());
  CHECK(fa == std::vector<float>{2.0f, 3.5f});
}

TEST_CASE("undefined type and operator combinations are refused before memory is touched") {
  float f = 1.0f;
  std::int32_t i = 1;
  auto bitwise = reduceInto(DataType::kFloat32, ReduceOp::kBxor, &f, &f, 1);
  CHECK(bitwise.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(bitwise.message(), Catch::Contains("bxor is not defined on float32"));
  CHECK(reduceInto(DataType::kInt32, ReduceOp::kAvg, &i, &i, 1).code() ==
        StatusCode::kInvalidArgument);
  CHECK(finishAverage(DataType::kInt64, &i, 1, 2).code() == StatusCode::kInvalidArgument);
  CHECK(finishAverage(DataType::kFloat32, &f, 1, 0).code() == StatusCode::kInvalidArgument);
  CHECK(f == 1.0f);
  CHECK(i == 1);
}

TEST_CASE("float16 conversions round to nearest even and keep infinities and NaN") {
  CHECK(floatToHalf(1.0f) == 0x3c00);
  CHECK(floatToHalf(-2.0f) == 0xc000);
  CHECK(floatToHalf(65504.0f) == 0x7bff);
  CHECK(floatToHalf(65519.0f) == 0x7bff);
  CHECK(floatToHalf(65520.0f) == 0x7c00);  // the tie above the largest half rounds to infinity
  CHECK(floatToHalf(0.1f) == 0x2e66);
  CHECK(floatToHalf(0x1p-24f) == 0x0001);  // the smallest subnormal
  CHECK(floatToHalf(0x1p-25f) == 0x0000);  // a tie between 0 and it: even
  CHECK(floatToHalf(0x1.8p-25f) == 0x0001);
  CHECK(floatToHalf(0x1p-14f) == 0x0400);  // the smallest normal
  CHECK(floatToHalf(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(std::isnan(halfToFloat(floatToHalf(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(halfToFloat(0x0001) == 0x1p-24f);
  CHECK(std::signbit(halfToFloat(0x8000)));
  // Every half that is a number survives the round trip through float32 unchanged.
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const auto half = static_cast<std::uint16_t>(h);
    const float widened = halfToFloat(half);
    if (std::isnan(widened)) continue;
    if (floatToHalf(widened) != half) FAIL("half 0x" << std::hex << h << " did not round-trip");
  }
}

TEST_CASE("bfloat16 conversions round to nearest even and keep NaN") {
  CHECK(floatToBfloat16(1.0f) == 0x3f80);
  CHECK(floatToBfloat16(std::bit_cast<float>(0x3f808000u)) == 0x3f80);  // tie: even stays
  CHECK(floatToBfloat16(std::bit_cast<float>(0x3f818000u)) == 0x3f82);  // tie: odd rounds up
  CHECK(floatToBfloat16(std::bit_cast<float>(0x3f808001u)) == 0x3f81);
  CHECK(std::isnan(bfloat16ToFloat(floatToBfloat16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isnan(bfloat16ToFloat(floatToBfloat16(std::bit_cast<float>(0x7f800001u)))));
  for (std::uint32_t v = 0; v <= 0xffff; ++v) {
    const auto b = static_cast<std::uint16_t>(v);
    const float widened = bfloat16ToFloat(b);
    if (std::isnan(widened)) continue;
    if (floatToBfloat16(widened) != b)
      FAIL("bfloat16 0x" << std::hex << v << " did not round-trip");
  }
}

TEST_CASE("16-bit float reductions go through float32, across block boundaries") {
  // An odd count larger than the kernels' block exercises the tail.
  const std::size_t count = 1000 + 3;
  for (DataType type : {DataType::kFloat16, DataType::kBFloat16}) {
    auto narrow = type == DataType::kFloat16 ? floatToHalf : floatToBfloat16;
    auto widen = type == DataType::kFloat16 ? halfToFloat : bfloat16ToFloat;
    std::vector<std::uint16_t> a(count), b(count);
    for (std::size_t i = 0; i < count; ++i) {
      a[i] = narrow(static_cast<float>(i % 17) * 0.25f);
      b[i] = narrow(static_cast<float>(i % 5) - 1.0f);
    }
    const auto sum = reduced(ReduceOp::kSum, a, b, type);
    auto avg = a;
    REQUIRE(reduceInto(type, ReduceOp::kAvg, avg.data(), b.data(), count).ok());
    REQUIRE(finishAverage(type, avg.data(), count, 2).ok());
    for (std::size_t i = 0; i < count; ++i) {
      const float expected = widen(a[i]) + widen(b[i]);
      INFO(dataTypeName(type) << " element " << i);
      CHECK(sum[i] == narrow(expected));
      CHECK(avg[i] == narrow(widen(narrow(expected)) / 2.0f));
    }
  }
}
