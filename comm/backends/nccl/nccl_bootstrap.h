// What an NCCL communicator needs from the host side: a key-value exchange for NCCL's unique
// ids and agreements, and the membership epoch it belongs to, which tells it of failures
// (docs/ARCHITECTURE.md: the rendezvous is one of the three sources of detection) and carries its
// own failures to every member.
//
// Two implementations: HostBootstrap (nccl_host_bootstrap.cc) over a host Communicator and its
// rendezvous, for processes under mpirun; LocalBootstrap here, for ranks that are threads of one
// process (one GPU each), used by the GPU tests and the CPU tests of the bookkeeping.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ftcomm/status.h"

namespace ftcomm::nccl {

class NcclBootstrap {
 public:
  virtual ~NcclBootstrap() = default;

  // The host membership's epoch; an NCCL communicator belongs to one.
  virtual std::uint64_t epoch() const = 0;
  // Ok while that epoch lives; PeerFailed or Revoked once a member failed or revoked it.
  virtual Status health() const = 0;
  // Revokes the epoch for every member: the first failure seen anywhere reaches all of them.
  virtual Status revoke(const std::string& reason) = 0;
  virtual Status publish(const std::string& key, const std::string& value) = 0;
  // The values of `keys`, in order, once all are published; Timeout after `timeout`.
  virtual Result<std::vector<std::string>> fetch(const std::vector<std::string>& keys,
                                                 std::chrono::milliseconds timeout) = 0;
};

// The shared half of a LocalBootstrap group: a key-value map and the epoch's fate.
class LocalGroup {
 public:
  Status publish(const std::string& key, const std::string& value);
  Result<std::vector<std::string>> fetch(const std::vector<std::string>& keys,
                                         std::chrono::milliseconds timeout);
  Status revoke(const std::string& reason);  // first reason wins
  // A new epoch after a reconfigure: healthy again.
  void advance();
  std::uint64_t epoch() const;
  Status health() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> values_;
  std::uint64_t epoch_ = 1;
  Status revoked_;
};

class LocalBootstrap final : public NcclBootstrap {
 public:
  explicit LocalBootstrap(std::shared_ptr<LocalGroup> group) : group_(std::move(group)) {}

  std::uint64_t epoch() const override { return group_->epoch(); }
  Status health() const override { return group_->health(); }
  Status revoke(const std::string& reason) override { return group_->revoke(reason); }
  Status publish(const std::string& key, const std::string& value) override {
    return group_->publish(key, value);
  }
  Result<std::vector<std::string>> fetch(const std::vector<std::string>& keys,
                                         std::chrono::milliseconds timeout) override {
    return group_->fetch(keys, timeout);
  }

 private:
  std::shared_ptr<LocalGroup> group_;
};

}  // namespace ftcomm::nccl
