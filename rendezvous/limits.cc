#include "rendezvous/limits.h"

#include <string>

namespace ftcomm::rendezvous {

namespace {
bool isJobIdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}
}  // namespace

Status validateJobId(std::string_view jobId) {
  if (jobId.empty()) return invalidArgument("job id is empty");
  if (jobId.size() > kMaxJobIdBytes) {
    return invalidArgument("job id is " + std::to_string(jobId.size()) + " bytes; the limit is " +
                           std::to_string(kMaxJobIdBytes));
  }
  if (jobId.front() == '.') return invalidArgument("job id must not start with '.'");
  for (char c : jobId) {
    if (!isJobIdChar(c)) {
      return invalidArgument("job id may hold only letters, digits, '.', '_' and '-'");
    }
  }
  return Status::Ok();
}

Status validateKey(std::string_view key) {
  if (key.empty()) return invalidArgument("key is empty");
  if (key.size() > kMaxKeyBytes) {
    return invalidArgument("key is " + std::to_string(key.size()) + " bytes; the limit is " +
                           std::to_string(kMaxKeyBytes));
  }
  return Status::Ok();
}

Status validateValue(std::string_view key, std::size_t valueBytes) {
  if (valueBytes > kMaxValueBytes) {
    return invalidArgument("value of key '" + std::string(key) + "' is " +
                           std::to_string(valueBytes) + " bytes; the limit is " +
                           std::to_string(kMaxValueBytes));
  }
  return Status::Ok();
}

Status validateTimeout(std::uint32_t timeoutMs) {
  if (timeoutMs == 0) return invalidArgument("timeout_ms must be set (no wait without a deadline)");
  if (timeoutMs > kMaxTimeoutMs) {
    return invalidArgument("timeout_ms " + std::to_string(timeoutMs) + " exceeds the limit " +
                           std::to_string(kMaxTimeoutMs));
  }
  return Status::Ok();
}

Status validateReason(std::string_view reason) {
  if (reason.size() > kMaxReasonBytes) {
    return invalidArgument("reason is " + std::to_string(reason.size()) + " bytes; the limit is " +
                           std::to_string(kMaxReasonBytes));
  }
  return Status::Ok();
}

}  // namespace ftcomm::rendezvous
