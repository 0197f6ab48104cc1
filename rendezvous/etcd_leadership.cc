#include "rendezvous/etcd_leadership.h"

#include <iostream>

namespace ftcomm::rendezvous {

namespace {

// The leader key as a transaction's failure branch read it (null: nobody holds it).
const etcdpb::KeyValue* heldKey(const etcdpb::TxnResponse& response) {
  if (response.responses_size() == 0 || response.responses(0).response_range().kvs_size() == 0) {
    return nullptr;
  }
  return &response.responses(0).response_range().kvs(0);
}

}  // namespace

EtcdLeadership::~EtcdLeadership() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (keeper_.joinable()) keeper_.join();
  std::int64_t lease = 0;
  {
    std::lock_guard lock(mu_);
    lease = lease_;
  }
  if (lease != 0) (void)client_.revokeLease(lease);
}

void EtcdLeadership::watchHold(StateStore::HoldCallbacks callbacks) {
  std::lock_guard lock(mu_);
  hold_ = std::move(callbacks);
}

Status EtcdLeadership::guardedTxn(etcdpb::TxnRequest request) {
  auto* compare = request.add_compare();
  compare->set_result(etcdpb::Compare::EQUAL);
  compare->set_target(etcdpb::Compare::CREATE);
  compare->set_key(options_.key);
  compare->set_create_revision(leaderRevision_.load());
  request.clear_failure();
  request.add_failure()->mutable_request_range()->set_key(options_.key);
  auto response = client_.txn(request);
  if (!response.ok()) return response.status();
  if (response->succeeded()) return Status::Ok();
  const etcdpb::KeyValue* key = heldKey(*response);
  const std::string holder = key == nullptr ? "nobody"
                                            : key->value() + " (created at revision " +
                                                  std::to_string(key->create_revision()) + ")";
  return failedPrecondition("this replica is no longer the leader in etcd: " + options_.key +
                            " is held by " + holder + ", not by this replica (created at " +
                            std::to_string(leaderRevision_.load()) + ")");
}

Status EtcdLeadership::acquire(const std::atomic<bool>& stopping,
                               const std::function<void(const std::string&)>& standby) {
  std::string lastHolder;
  while (!stopping.load()) {
    std::int64_t lease = 0;
    {
      std::lock_guard lock(mu_);
      lease = lease_;
    }
    if (lease == 0) {
      if (keeper_.joinable()) keeper_.join();  // it ended with the last lease
      const auto sent = std::chrono::steady_clock::now();
      auto granted = client_.grantLease(options_.ttl);
      if (!granted.ok()) {
        // etcd is electing a leader or out of reach: a standby just tries again.
        std::cerr << "ftcomm-rendezvous: standing by: " << granted.status().toString() << std::endl;
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        continue;
      }
      {
        std::lock_guard lock(mu_);
        lease_ = granted->id();
        ttl_ = std::chrono::seconds(granted->ttl());
        validUntil_ = sent + ttl_;
        lease = lease_;
      }
      warnIfLeaseShort(std::chrono::seconds(granted->ttl()));
      keeper_ = std::thread([this] { keepLease(); });
    }
    etcdpb::TxnRequest request;
    auto* absent = request.add_compare();
    absent->set_result(etcdpb::Compare::EQUAL);
    absent->set_target(etcdpb::Compare::CREATE);
    absent->set_key(options_.key);
    absent->set_create_revision(0);
    auto* put = request.add_success()->mutable_request_put();
    put->set_key(options_.key);
    put->set_value(options_.advertise);
    put->set_lease(lease);
    request.add_failure()->mutable_request_range()->set_key(options_.key);
    auto response = client_.txn(request);
    if (!response.ok()) {
      std::cerr << "ftcomm-rendezvous: standing by: " << response.status().toString() << std::endl;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      continue;
    }
    if (response->succeeded()) {
      leaderRevision_.store(response->header().revision());
      std::lock_guard lock(mu_);
      leading_ = true;
      return Status::Ok();
    }
    const etcdpb::KeyValue* key = heldKey(*response);
    const std::string holder = key != nullptr ? key->value() : "unknown";
    if (holder != lastHolder) {
      lastHolder = holder;
      standby(holder);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return cancelled("stopped while standing by");
}

void EtcdLeadership::tell(
    std::unique_lock<std::mutex>& lock,
    const std::function<void(const std::string&)> StateStore::HoldCallbacks::*which,
    const std::string& why) {
  auto callback = hold_.*which;
  lock.unlock();
  if (callback) callback(why);
  lock.lock();
}

void EtcdLeadership::warnIfLeaseShort(std::chrono::seconds ttl) const {
  // A member fences itself after 1.5 leases without an answer; a takeover takes up to the TTL,
  // plus the polling and the loading of the jobs.
  const auto takeover =
      std::chrono::duration_cast<std::chrono::milliseconds>(ttl) + std::chrono::milliseconds(1000);
  if (options_.memberLease.count() > 0 && options_.memberLease * 3 / 2 < takeover) {
    std::cerr << "ftcomm-rendezvous: warning: etcd granted a " << ttl.count()
              << " s leader lease, so a takeover may take about " << takeover.count()
              << " ms, longer than members wait before fencing themselves (1.5 x --lease-ms "
              << options_.memberLease.count() << "); raise --lease-ms to at least "
              << (takeover.count() * 2 / 3 + 1) << std::endl;
  }
}

Result<bool> EtcdLeadership::stillLeader() {
  auto range = client_.range(options_.key);
  if (!range.ok()) return range.status();
  return range->kvs_size() == 1 && range->kvs(0).create_revision() == leaderRevision_.load();
}

void EtcdLeadership::keepLease() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const auto period = std::max(std::chrono::milliseconds(100), ttl_ / 3);
    auto nextRenewal = std::chrono::steady_clock::now() + period;
    // Wakes at least every 100 ms to check that the lease is still surely held.
    while (!stopping_ && std::chrono::steady_clock::now() < nextRenewal) {
      cv_.wait_for(lock, std::chrono::milliseconds(100));
      // Stop answering a little before etcd could expire the lease (its clock may run ahead).
      if (leading_ && !suspended_ && std::chrono::steady_clock::now() + ttl_ / 10 >= validUntil_) {
        suspended_ = true;
        tell(lock, &StateStore::HoldCallbacks::suspend,
             "its etcd lease was not renewed in time (etcd unreachable or electing a leader)");
        nextRenewal = std::chrono::steady_clock::now();  // try at once
      }
    }
    if (stopping_) break;
    const std::int64_t lease = lease_;
    // A renewal is given up in time for the check above to suspend a leader before its lease
    // could expire.
    auto timeout = ttl_ / 2;
    if (leading_ && !suspended_) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          validUntil_ - ttl_ / 10 - std::chrono::steady_clock::now());
      timeout = std::max(std::chrono::milliseconds(100), std::min(timeout, left));
    }
    lock.unlock();
    const auto sent = std::chrono::steady_clock::now();
    auto ttl = client_.keepAlive(lease, timeout);
    lock.lock();
    if (ttl.ok() && *ttl > 0) {
      validUntil_ = sent + std::chrono::seconds(*ttl);
      if (leading_ && suspended_) {
        lock.unlock();
        auto mine = stillLeader();
        lock.lock();
        if (mine.ok() && *mine) {
          suspended_ = false;
          tell(lock, &StateStore::HoldCallbacks::resume, "its etcd lease was renewed");
        } else if (mine.ok()) {
          leading_ = false;
          tell(lock, &StateStore::HoldCallbacks::lost,
               "another replica holds " + options_.key + " now");
          break;
        }
      }
    } else if (ttl.ok()) {
      // The lease is gone, and the leader key with it.
      if (leading_) {
        leading_ = false;
        tell(lock, &StateStore::HoldCallbacks::lost, "its etcd lease expired");
      }
      lease_ = 0;  // a standby's acquire() grants a new one
      break;
    }
  }
}

}  // namespace ftcomm::rendezvous
