#include "python/src/torch/job_store.h"

#include <algorithm>

#include "python/src/torch/torch_work.h"

namespace ftcomm::torch_backend {

namespace {

// The rendezvous refuses waits longer than an hour and more than 64 keys per wait.
constexpr std::chrono::milliseconds kLongestWait = std::chrono::hours(1);
constexpr std::size_t kKeysPerWait = 64;

template <typename T>
T value(Result<T> result) {
  if (!result.ok()) throw CommError(result.status());
  return std::move(result).value();
}

void succeed(const Status& status) {
  if (!status.ok()) throw CommError(status);
}

std::string text(const std::vector<uint8_t>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

std::vector<uint8_t> bytes(const std::string& text) {
  return std::vector<uint8_t>(text.begin(), text.end());
}

}  // namespace

FtcommStore::FtcommStore(JobStore store, std::string prefix, std::chrono::milliseconds timeout)
    : c10d::Store(timeout), store_(std::move(store)), prefix_(std::move(prefix)) {}

void FtcommStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  succeed(store_.set(prefix_ + key, text(value)));
}

std::vector<uint8_t> FtcommStore::compareSet(const std::string& key,
                                             const std::vector<uint8_t>& expected,
                                             const std::vector<uint8_t>& desired) {
  return bytes(value(store_.compareSet(prefix_ + key, text(expected), text(desired))));
}

std::vector<uint8_t> FtcommStore::get(const std::string& key) {
  auto values = value(store_.wait({prefix_ + key}, std::min(timeout_, kLongestWait)));
  return bytes(values.front());
}

int64_t FtcommStore::add(const std::string& key, int64_t delta) {
  return value(store_.add(prefix_ + key, delta));
}

bool FtcommStore::deleteKey(const std::string& key) {
  return value(store_.remove(prefix_ + key));
}

bool FtcommStore::check(const std::vector<std::string>& keys) {
  for (const auto& key : keys) {
    if (!value(store_.get(prefix_ + key)).has_value()) return false;
  }
  return true;
}

int64_t FtcommStore::getNumKeys() {
  return static_cast<int64_t>(value(store_.count(prefix_)));
}

void FtcommStore::wait(const std::vector<std::string>& keys) {
  wait(keys, timeout_);
}

void FtcommStore::wait(const std::vector<std::string>& keys,
                       const std::chrono::milliseconds& timeout) {
  const auto bounded = timeout.count() <= 0 ? kLongestWait : std::min(timeout, kLongestWait);
  for (std::size_t i = 0; i < keys.size(); i += kKeysPerWait) {
    std::vector<std::string> batch;
    for (std::size_t j = i; j < std::min(keys.size(), i + kKeysPerWait); ++j) {
      batch.push_back(prefix_ + keys[j]);
    }
    (void)value(store_.wait(batch, bounded));
  }
}

}  // namespace ftcomm::torch_backend
