// Tuning profiles (comm/tuning/): rules files parse, or fail naming the file and line; every
// shipped profile round-trips through the text members agree on; overrides and the first-match
// rule order resolve into the bands the hot path reads; `auto` is a table lookup.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <string>

#include "tuning/plan_table.h"
#include "tuning/select.h"

using ftcomm::algorithms::Collective;
using namespace ftcomm::tuning;

namespace {

std::string errorOf(const std::string& text) {
  auto parsed = parseProfile(text, "bad.rules");
  REQUIRE(!parsed.ok());
  return parsed.status().message();
}

}  // namespace

TEST_CASE("a malformed rules file is an error naming the file and line") {
  CHECK(errorOf("profile x\nallreduce 2 0-1K sideways\n") ==
        "bad.rules:2: 'sideways' is not a way (inline, direct, message)");
  CHECK(errorOf("profile x\n\n# c\nscan 2 * inline\n")
            .rfind("bad.rules:4: unknown collective 'scan'", 0) == 0);
  CHECK(errorOf("profile x\nallreduce 0 * inline\n")
            .rfind("bad.rules:2: '0' is not a rank count", 0) == 0);
  CHECK(errorOf("profile x\nallreduce 2 4K-1K inline\n")
            .rfind("bad.rules:2: '4K-1K' is not a byte range", 0) == 0);
  CHECK(errorOf("profile x\nallreduce 2 * inline chunk=0\n")
            .rfind("bad.rules:2: 'chunk=0' is not an option", 0) == 0);
  CHECK(errorOf("profile x\nset copy_loop_from lots\n") ==
        "bad.rules:2: 'lots' is not a value of setting copy_loop_from");
  CHECK(errorOf("profile x\nset colour blue\n").rfind("bad.rules:2: unknown setting 'colour'", 0) ==
        0);
  CHECK(errorOf("allreduce 2 * inline\n") == "bad.rules: no 'profile NAME' line");
}

TEST_CASE("every shipped profile parses and round-trips through its agreed text") {
  for (const std::string& name : builtinProfileNames()) {
    INFO(name);
    auto profile = parseProfile(builtinProfileText(name), name);
    REQUIRE(profile.ok());
    CHECK(profile->name == name);
    CHECK(!profile->rules.empty());
    const std::string text = serialize(*profile);
    auto again = parseProfile(text, "agreed");
    REQUIRE(again.ok());
    CHECK(serialize(*again) == text);
    CHECK(profileHash(*again) == profileHash(*profile));
  }
  CHECK(builtinProfileText("generic") != nullptr);
  CHECK(builtinProfileText("nonesuch") == nullptr);
}

TEST_CASE("rules resolve first match first, by collective, rank count and byte range") {
  auto profile = parseProfile(
      "profile t\n"
      "allreduce 2   <32K  inline whole=8K chunk=4K\n"
      "allreduce 2   * message\n"
      "*         3-4 0-1M  inline lend=mapped copy=choose\n"
      "*         *   *     direct\n",
      "t.rules");
  REQUIRE(profile.ok());
  const PlanTable two(*profile, 2), three(*profile, 3), five(*profile, 5);
  CHECK(two.band(Collective::kAllReduce, 0).way == Way::kInline);
  CHECK(two.band(Collective::kAllReduce, 0).whole == 8192);
  CHECK(two.band(Collective::kAllReduce, 0).chunk == 4096);
  CHECK(two.band(Collective::kAllReduce, 32767).way == Way::kInline);
  CHECK(two.band(Collective::kAllReduce, 32768).way == Way::kMessage);
  CHECK(two.band(Collective::kBroadcast, 10).way == Way::kDirect);
  CHECK(three.band(Collective::kAllReduce, 1 << 20).way == Way::kInline);
  CHECK(three.band(Collective::kAllReduce, 1 << 20).lend == Lend::kMapped);
  CHECK(three.band(Collective::kAllReduce, 1 << 20).copy == Copy::kChoose);
  CHECK(three.band(Collective::kAllReduce, (1 << 20) + 1).way == Way::kDirect);
  CHECK(five.band(Collective::kAllToAll, 0).way == Way::kDirect);
}

TEST_CASE("overrides change a profile's settings and its hash, and bad ones are named") {
  auto profile = parseProfile(builtinProfileText("generic"), "generic");
  REQUIRE(profile.ok());
  const std::string before = profileHash(*profile);
  REQUIRE(applyOverrides(*profile, "lend=all,around_cache=never,caller_bytes=4M", "test").ok());
  CHECK(profile->settings.lendAll == Settings::LendAll::kAll);
  CHECK(profile->settings.aroundCache == Settings::AroundCache::kNever);
  CHECK(profile->settings.callerBytes == std::size_t{4} << 20);
  CHECK(profileHash(*profile) != before);
  CHECK(applyOverrides(*profile, "lend=maybe", "test").message() ==
        "test: 'maybe' is not a value of setting lend");
  CHECK(applyOverrides(*profile, "lend", "test").message() == "test: 'lend' is not KEY=VALUE");
}

TEST_CASE("FTCOMM_TUNING selects a built-in profile, a file, or auto by processor") {
  auto generic = selectProfile("generic");
  REQUIRE(generic.ok());
  CHECK(generic->name == "generic");
  auto overridden = selectProfile("zen2,lend=none");
  REQUIRE(overridden.ok());
  CHECK(overridden->name == "zen2");
  CHECK(overridden->settings.lendAll == Settings::LendAll::kNone);
  auto automatic = selectProfile("auto");
  REQUIRE(automatic.ok());
  CHECK(automatic->name == autoProfileName());
  CHECK(selectProfile("nonesuch")
            .status()
            .message()
            .rfind("FTCOMM_TUNING=nonesuch: 'nonesuch' is neither a built-in profile", 0) == 0);
  const std::string path = "/tmp/ftcomm-tuning-test.rules";
  {
    std::ofstream out(path);
    out << "profile mine\n*  *  0-4K  inline\nallreduce * * bogus\n";
  }
  CHECK(selectProfile(path).status().message() ==
        path + ":3: 'bogus' is not a way (inline, direct, message)");
  {
    std::ofstream out(path);
    out << "profile mine\n*  *  0-4K  inline\n";
  }
  auto file = selectProfile(path);
  REQUIRE(file.ok());
  CHECK(file->name == "mine");
  std::remove(path.c_str());
  CHECK(selectProfile("/nonexistent/x.rules").status().message() ==
        "FTCOMM_TUNING: cannot read the rules file /nonexistent/x.rules");
}

#if defined(__x86_64__)
TEST_CASE("the processor key names the family the kernel reports") {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("cpu family", 0) != 0) continue;
    const unsigned kernel = std::stoul(line.substr(line.find(':') + 1));
    char family[16];
    std::snprintf(family, sizeof family, "family 0x%x", kernel);
    CHECK(processorKey().find(family) != std::string::npos);
    return;
  }
  WARN("no cpu family in /proc/cpuinfo: nothing to compare with");
}
#endif
