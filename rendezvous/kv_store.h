// A job's key-value store: set, get, wait-for-keys with a deadline, and the atomic updates of
// c10d's Store (add, compare-and-set, remove). Values are opaque bytes (UCX worker addresses,
// NCCL unique ids, torch's keys); only an application's remove deletes a key while the job lives.
//
// Thread-safety: none; the owning JobState is guarded by its job's mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rendezvous/effects.h"

namespace ftcomm::rendezvous {

class KvStore {
 public:
  explicit KvStore(std::string jobId) : jobId_(std::move(jobId)) {}

  // Validates and journals a set; wakes the waiters it completes.
  Status set(const std::string& key, const std::string& value, Effects& out);
  // One atomic read-modify-write (KvUpdateRequest's oneof), journaled as the set or removal it
  // amounts to; `answer` gets the value afterwards.
  Status update(const pb::KvUpdateRequest& request, pb::KvUpdateResponse& answer, Effects& out);
  std::uint64_t count(const std::string& prefix) const;
  // nullptr when the key does not exist.
  const std::string* get(const std::string& key) const;
  // Answers at once (through `out`) when every key exists, else registers the waiter.
  Status wait(WaiterId waiter, const std::vector<std::string>& keys, Clock::time_point deadline,
              Effects& out);

  // Answers waiters whose deadline has passed with a Timeout naming the missing keys.
  void expireWaiters(Clock::time_point now, Effects& out);
  // True when the waiter was pending here (it is answered Cancelled).
  bool cancel(WaiterId waiter, const Status& why, Effects& out);

  // The single place that changes stored values: live sets and journal replay both come here.
  void apply(const pb::KeyValue& entry);
  void applyRemoval(const std::string& key);
  void appendTo(pb::JobSnapshot& snapshot) const;

  std::size_t size() const { return values_.size(); }

 private:
  struct Waiter {
    WaiterId id;
    std::vector<std::string> keys;
    Clock::time_point deadline;
  };

  bool complete(const Waiter& waiter, Effects& out) const;

  std::string jobId_;
  std::map<std::string, std::string> values_;
  std::size_t valueBytes_ = 0;
  std::vector<Waiter> waiters_;
};

}  // namespace ftcomm::rendezvous
