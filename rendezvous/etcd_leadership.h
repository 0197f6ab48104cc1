// Which rendezvous replica may write the etcd store: the one holding the key PREFIX/leader,
// created in a transaction only where it is absent and bound to an etcd lease this replica keeps
// alive. Writes go through guardedTxn(), which holds only while the key is still the one this
// replica created (fencing). A leader that cannot renew its lease before it could expire is
// suspended until a renewal gets through and the key is still its own (an etcd election: the
// new etcd leader renews every lease), and lost if another replica holds the key.
//
// Thread-safety: every method may be called from any thread; the hold callbacks run on the
// lease keeper's thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "rendezvous/etcd_client.h"
#include "rendezvous/state_store.h"

namespace ftcomm::rendezvous {

class EtcdLeadership {
 public:
  struct Options {
    std::string key;        // PREFIX/leader
    std::string advertise;  // the key's value: how clients reach this replica
    std::chrono::seconds ttl{2};
    std::chrono::milliseconds memberLease{0};  // only for a warning when too short
  };

  EtcdLeadership(EtcdClient& client, Options options)
      : client_(client), options_(std::move(options)) {}
  // Revokes the lease: a clean stop hands leadership over at once, not after the TTL.
  ~EtcdLeadership();

  // StateStore::acquire and StateStore::watchHold.
  Status acquire(const std::atomic<bool>& stopping,
                 const std::function<void(const std::string& holder)>& standby);
  void watchHold(StateStore::HoldCallbacks callbacks);
  // A transaction that holds only while this replica leads.
  Status guardedTxn(etcdpb::TxnRequest request);

 private:
  // Renews the lease every third of its TTL, and suspends, resumes or loses the lead.
  void keepLease();
  // Requires mu_ (released around the callback).
  void tell(std::unique_lock<std::mutex>& lock,
            const std::function<void(const std::string&)> StateStore::HoldCallbacks::*which,
            const std::string& why);
  void warnIfLeaseShort(std::chrono::seconds ttl) const;
  // Whether the leader key is still the one this replica created.
  Result<bool> stillLeader();

  EtcdClient& client_;
  Options options_;
  std::atomic<std::int64_t> leaderRevision_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool leading_ = false;    // acquired, and not lost
  bool suspended_ = false;  // leading, but the lease is not surely held now
  std::int64_t lease_ = 0;
  std::chrono::milliseconds ttl_{0};
  std::chrono::steady_clock::time_point validUntil_{};
  StateStore::HoldCallbacks hold_;
  std::thread keeper_;
};

}  // namespace ftcomm::rendezvous
