// Job tokens from --token-file. Each non-empty line is "JOB TOKEN" (a token for that job) or
// "TOKEN" alone (a token for every job not named elsewhere); '#' starts a comment. With no file,
// every job is open. Tokens are compared in constant time and never logged.
//
// Thread-safety: immutable after load; safe to read from many threads.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "ftcomm/status.h"

namespace ftcomm::rendezvous {

class TokenStore {
 public:
  TokenStore() = default;  // open: no tokens required
  static Result<TokenStore> load(const std::filesystem::path& file);

  Status check(const std::string& jobId, const std::string& token) const;

 private:
  bool required_ = false;
  std::map<std::string, std::string> perJob_;
  std::optional<std::string> anyJob_;
};

}  // namespace ftcomm::rendezvous
