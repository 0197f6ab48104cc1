// Input validation of the rendezvous service, and job tokens.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "rendezvous/limits.h"
#include "rendezvous/token_store.h"

using namespace ftcomm::rendezvous;

TEST_CASE("job ids are short, printable, and cannot name a hidden or parent directory") {
  CHECK(validateJobId("train-7.run_2").ok());
  CHECK_FALSE(validateJobId("").ok());
  CHECK_FALSE(validateJobId(std::string(129, 'a')).ok());
  CHECK(validateJobId(std::string(128, 'a')).ok());
  CHECK_FALSE(validateJobId("..").ok());
  CHECK_FALSE(validateJobId(".hidden").ok());
  CHECK_FALSE(validateJobId("a/b").ok());
  CHECK_FALSE(validateJobId("sp ace").ok());
  CHECK_FALSE(validateJobId(std::string("nul\0x", 5)).ok());
}

TEST_CASE("timeouts must be set and bounded") {
  CHECK_FALSE(validateTimeout(0).ok());
  CHECK(validateTimeout(1).ok());
  CHECK_FALSE(validateTimeout(kMaxTimeoutMs + 1).ok());
}

TEST_CASE("a token file gives each job its token, or one token to every job") {
  char pattern[] = "/tmp/ftcomm-tokens-XXXXXX";
  int fd = ::mkstemp(pattern);
  REQUIRE(fd >= 0);
  ::close(fd);
  {
    std::ofstream file(pattern);
    file << "# comment\njob-a secret-a\n\nshared-secret  # for the others\n";
  }
  auto store = TokenStore::load(pattern);
  std::filesystem::remove(pattern);
  REQUIRE(store.ok());
  CHECK(store->check("job-a", "secret-a").ok());
  auto wrong = store->check("job-a", "shared-secret");
  CHECK(wrong.code() == ftcomm::StatusCode::kPermissionDenied);
  CHECK(wrong.message().find("secret") == std::string::npos);  // never echoes a token
  CHECK(store->check("job-b", "shared-secret").ok());
  CHECK(store->check("job-b", "").code() == ftcomm::StatusCode::kPermissionDenied);
  CHECK(TokenStore().check("any", "").ok());
  CHECK_FALSE(TokenStore::load("/nonexistent/tokens").ok());
}
