#include "backends/nccl/nccl_bootstrap.h"

namespace ftcomm::nccl {

Status LocalGroup::publish(const std::string& key, const std::string& value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    values_[key] = value;
  }
  cv_.notify_all();
  return Status::Ok();
}

Result<std::vector<std::string>> LocalGroup::fetch(const std::vector<std::string>& keys,
                                                   std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto all = [&] {
    for (const auto& key : keys) {
      if (values_.count(key) == 0) return false;
    }
    return true;
  };
  if (!cv_.wait_for(lock, timeout, all)) {
    for (const auto& key : keys) {
      if (values_.count(key) == 0) {
        return timeoutError("key " + key + " was not published within " +
                            std::to_string(timeout.count()) + " ms");
      }
    }
  }
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& key : keys) out.push_back(values_.at(key));
  return out;
}

Status LocalGroup::revoke(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (revoked_.ok()) {
    revoked_ =
        Status(StatusCode::kRevoked, "epoch " + std::to_string(epoch_) + " revoked: " + reason);
  }
  return Status::Ok();
}

void LocalGroup::advance() {
  std::lock_guard<std::mutex> lock(mu_);
  ++epoch_;
  revoked_ = Status::Ok();
}

std::uint64_t LocalGroup::epoch() const {
  std::lock_guard<std::mutex> lock(mu_);
  return epoch_;
}

Status LocalGroup::health() const {
  std::lock_guard<std::mutex> lock(mu_);
  return revoked_;
}

}  // namespace ftcomm::nccl
