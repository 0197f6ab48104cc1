// The facade's argument checks (core/argument_checks.h): inline for the calls that pass, each
// failing one with an InvalidArgument that names what is wrong.
#include <catch2/catch.hpp>

#include <cstddef>
#include <limits>
#include <string>

#include "backends/nccl/nccl_status.h"
#include "core/argument_checks.h"

using ftcomm::DataType;
using ftcomm::ReduceOp;
using ftcomm::Status;
using ftcomm::StatusCode;
using ftcomm::detail::checkBuffer;
using ftcomm::detail::checkOp;
using ftcomm::detail::checkRank;
using ftcomm::detail::firstError;

namespace {

// An InvalidArgument whose message holds `text`.
void requireInvalid(const Status& s, const std::string& text) {
  INFO(s.toString());
  REQUIRE(s.code() == StatusCode::kInvalidArgument);
  REQUIRE(s.message().find(text) != std::string::npos);
}

}  // namespace

TEST_CASE("a buffer check passes what fits and names what does not") {
  float data[4] = {};
  REQUIRE(checkBuffer(data, 4, 1, DataType::kFloat32, "send").ok());
  REQUIRE(checkBuffer(data, 1, 4, DataType::kFloat32, "send").ok());
  // Nothing to hold: no buffer needed, and no blocks either.
  REQUIRE(checkBuffer(nullptr, 0, 1, DataType::kFloat32, "send").ok());
  REQUIRE(checkBuffer(nullptr, 0, 0, DataType::kFloat32, "send").ok());
  requireInvalid(checkBuffer(nullptr, 3, 1, DataType::kFloat32, "recv"),
                 "recv buffer is null for 3 elements");
  const std::size_t huge = std::numeric_limits<std::size_t>::max() / 4;
  requireInvalid(checkBuffer(data, huge, 1, DataType::kFloat64, "send"),
                 "send: " + std::to_string(huge) + " elements overflow the address space");
  requireInvalid(checkBuffer(data, huge / 2, 4, DataType::kFloat32, "send"),
                 "overflow the address space");
  requireInvalid(checkBuffer(data, 2, 0, DataType::kFloat32, "send"), "overflow the address space");
  requireInvalid(checkBuffer(data, 4, 1, static_cast<DataType>(200), "send"), "unknown dtype 200");
}

TEST_CASE("an op check passes the ops a type has and names the ones it lacks") {
  REQUIRE(checkOp(DataType::kFloat32, ReduceOp::kSum).ok());
  REQUIRE(checkOp(DataType::kInt32, ReduceOp::kBand).ok());
  REQUIRE(checkOp(DataType::kFloat16, ReduceOp::kAvg).ok());
  requireInvalid(checkOp(DataType::kInt32, ReduceOp::kAvg), "avg takes floating types");
  requireInvalid(checkOp(DataType::kFloat32, ReduceOp::kBxor), "bitwise ops take integer types");
  requireInvalid(checkOp(DataType::kFloat32, static_cast<ReduceOp>(99)), "unknown reduce op 99");
  // An unknown dtype is reported, not looked up past the end of the type table.
  requireInvalid(checkOp(static_cast<DataType>(200), ReduceOp::kSum), "unknown dtype 200");
}

TEST_CASE("checkReduction names an operator or type outside the enums on both backends") {
  // Values outside the enums must not index the traits tables.
  requireInvalid(ftcomm::checkReduction(static_cast<DataType>(200), ReduceOp::kSum),
                 "unknown dtype 200");
  requireInvalid(ftcomm::checkReduction(DataType::kFloat32, static_cast<ReduceOp>(99)),
                 "unknown reduce op 99");
  requireInvalid(ftcomm::nccl::checkNcclReduction(static_cast<DataType>(200), ReduceOp::kSum),
                 "unknown dtype 200");
  requireInvalid(ftcomm::nccl::checkNcclReduction(DataType::kFloat32, static_cast<ReduceOp>(99)),
                 "unknown reduce op 99");
  REQUIRE(ftcomm::checkReduction(DataType::kBFloat16, ReduceOp::kMax).ok());
}

TEST_CASE("a rank check passes 0 to size - 1 only") {
  REQUIRE(checkRank(0, 4, "root").ok());
  REQUIRE(checkRank(3, 4, "root").ok());
  requireInvalid(checkRank(4, 4, "root"), "root 4 outside 0..3");
  requireInvalid(checkRank(-1, 4, "peer"), "peer -1 outside 0..3");
}

TEST_CASE("firstError returns the first failed check in order") {
  float data[2] = {};
  REQUIRE(firstError({checkBuffer(data, 2, 1, DataType::kFloat32, "send"),
                      checkOp(DataType::kFloat32, ReduceOp::kSum)})
              .ok());
  requireInvalid(firstError({checkBuffer(data, 2, 1, DataType::kFloat32, "send"),
                             checkBuffer(nullptr, 2, 1, DataType::kFloat32, "recv"),
                             checkOp(DataType::kInt8, ReduceOp::kAvg)}),
                 "recv buffer is null");
}
