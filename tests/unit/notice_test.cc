// The control channel's notices (core/notice.h): a failure notice and a leaving notice are told
// apart, and text that is neither is no leaving notice.
#include <catch2/catch.hpp>

#include <string>

#include "core/notice.h"

using namespace ftcomm;
using namespace ftcomm::detail;

TEST_CASE("a leaving notice names the last collective and is never taken for a failure notice") {
  const std::string leaving = encodeLeaving(41);
  std::uint64_t seq = 0;
  REQUIRE(decodeLeaving(leaving.data(), leaving.size(), &seq));
  CHECK(seq == 41);
  const std::string failure = encodeNotice(Status(StatusCode::kTimeout, "late"), 7);
  CHECK_FALSE(decodeLeaving(failure.data(), failure.size(), &seq));
  const Status why = decodeNotice(failure.data(), failure.size(), 2, &seq);
  CHECK(why.code() == StatusCode::kTimeout);
  CHECK(seq == 7);
  CHECK(why.message() == "rank 2: late");
  // Anything else is neither: a leaving notice with more after its number, or none.
  for (const std::string text : {"left 41 more", "left", "left x", "leaving 3", ""}) {
    INFO(text);
    CHECK_FALSE(decodeLeaving(text.data(), text.size(), &seq));
  }
}
