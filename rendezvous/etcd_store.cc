#include "rendezvous/etcd_store.h"

#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace ftcomm::rendezvous {

namespace {

using SteadyClock = std::chrono::steady_clock;

// etcd refuses a transaction of more than 128 operations or 1.5 MiB (its defaults).
constexpr std::size_t kMaxOpsPerTxn = 100;
constexpr std::size_t kMaxBytesPerTxn = 1 << 20;
// Records appended since the last snapshot before the next compaction.
constexpr std::size_t kCompactAfterRecords = 512;

std::string seqKey(std::uint64_t seq) {
  char text[24];
  std::snprintf(text, sizeof text, "%016" PRIx64, seq);
  return text;
}

class EtcdStore;

class EtcdLog final : public JobLog {
 public:
  EtcdLog(EtcdStore* store, std::string jobPrefix, std::uint64_t nextSeq)
      : store_(store), jobPrefix_(std::move(jobPrefix)), nextSeq_(nextSeq) {}

  Status append(const std::vector<pb::JournalRecord>& records,
                const std::function<pb::JobSnapshot()>& snapshot) override;
  Status compact(const pb::JobSnapshot& snapshot) override;
  Status drop() override;

 private:
  EtcdStore* store_;
  std::string jobPrefix_;  // PREFIX/jobs/JOB/
  std::uint64_t nextSeq_;
  std::size_t sinceSnapshot_ = 0;
};

class EtcdStore final : public StateStore {
 public:
  EtcdStore(EtcdStoreOptions options, std::unique_ptr<EtcdClient> client)
      : options_(std::move(options)), client_(std::move(client)) {}
  ~EtcdStore() override {
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
    // A clean stop hands leadership over at once instead of after the lease's TTL.
    if (lease != 0) (void)client_->revokeLease(lease);
  }

  std::string describe() const override {
    std::string endpoints;
    for (const auto& e : client_->endpoints()) endpoints += (endpoints.empty() ? "" : ",") + e;
    return "state in etcd " + endpoints + " under " + options_.prefix;
  }

  bool replicated() const override { return true; }
  Result<std::vector<StoredJob>> load() override;
  Result<std::unique_ptr<JobLog>> openLog(const std::string& jobId) override;
  Status acquire(const std::atomic<bool>& stopping,
                 const std::function<void(const std::string&)>& standby) override;
  void watchHold(HoldCallbacks callbacks) override {
    std::lock_guard lock(mu_);
    hold_ = std::move(callbacks);
  }

  // A transaction that holds only while this replica is the leader.
  Status guardedTxn(etcdpb::TxnRequest request) {
    auto* compare = request.add_compare();
    compare->set_result(etcdpb::Compare::EQUAL);
    compare->set_target(etcdpb::Compare::CREATE);
    compare->set_key(leaderKey());
    compare->set_create_revision(leaderRevision_.load());
    request.clear_failure();
    request.add_failure()->mutable_request_range()->set_key(leaderKey());
    auto response = client_->txn(request);
    if (!response.ok()) return response.status();
    if (!response->succeeded()) {
      std::string holder = "nobody";
      if (response->responses_size() > 0 &&
          response->responses(0).response_range().kvs_size() > 0) {
        const auto& kv = response->responses(0).response_range().kvs(0);
        holder = kv.value() + " (created at revision " + std::to_string(kv.create_revision()) + ")";
      }
      return failedPrecondition("this replica is no longer the leader in etcd: " + leaderKey() +
                                " is held by " + holder + ", not by this replica (created at " +
                                std::to_string(leaderRevision_.load()) + ")");
    }
    return Status::Ok();
  }
  const std::string& prefix() const { return options_.prefix; }

 private:
  std::string leaderKey() const { return options_.prefix + "leader"; }
  // Renews the lease every third of its TTL. A leader that cannot renew it before it could
  // expire is suspended until a renewal gets through (an etcd election in progress: the new etcd
  // leader renews every lease) and the leader key is still its own; it is lost otherwise.
  void keepLease();
  // Requires mu_ (released around the callback).
  void tell(std::unique_lock<std::mutex>& lock,
            const std::function<void(const std::string&)> HoldCallbacks::*which,
            const std::string& why);
  void warnIfLeaseShort(std::chrono::seconds ttl) const;
  // Whether the leader key is still the one this replica created.
  Result<bool> stillLeader();

  EtcdStoreOptions options_;
  std::unique_ptr<EtcdClient> client_;
  std::atomic<std::int64_t> leaderRevision_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool leading_ = false;    // acquired, and not lost
  bool suspended_ = false;  // leading, but the lease is not surely held now
  std::int64_t lease_ = 0;
  std::chrono::milliseconds ttl_{0};
  SteadyClock::time_point validUntil_{};
  HoldCallbacks hold_;
  std::thread keeper_;
  std::map<std::string, std::uint64_t> nextSeq_;  // from load()
};

Status EtcdLog::append(const std::vector<pb::JournalRecord>& records,
                       const std::function<pb::JobSnapshot()>& snapshot) {
  std::size_t at = 0;
  while (at < records.size()) {
    etcdpb::TxnRequest request;
    std::size_t bytes = 0;
    std::uint64_t seq = nextSeq_;
    while (at < records.size() && request.success_size() < static_cast<int>(kMaxOpsPerTxn)) {
      std::string value = records[at].SerializeAsString();
      if (request.success_size() > 0 && bytes + value.size() > kMaxBytesPerTxn) break;
      bytes += value.size();
      auto* put = request.add_success()->mutable_request_put();
      put->set_key(jobPrefix_ + "r/" + seqKey(seq++));
      put->set_value(std::move(value));
      ++at;
    }
    FTCOMM_RETURN_IF_ERROR(store_->guardedTxn(std::move(request)));
    sinceSnapshot_ += static_cast<std::size_t>(seq - nextSeq_);
    nextSeq_ = seq;
  }
  if (sinceSnapshot_ >= kCompactAfterRecords) return compact(snapshot());
  return Status::Ok();
}

Status EtcdLog::compact(const pb::JobSnapshot& snapshot) {
  pb::JournalRecord record;
  *record.mutable_snapshot() = snapshot;
  std::string value = record.SerializeAsString();
  // A snapshot etcd would refuse (a job whose keys hold megabytes) is not taken: the records
  // stay, which is correct, only longer to load.
  if (value.size() > kMaxBytesPerTxn) return Status::Ok();
  etcdpb::TxnRequest request;
  auto* put = request.add_success()->mutable_request_put();
  put->set_key(jobPrefix_ + "s");
  put->set_value(std::move(value));
  auto* erase = request.add_success()->mutable_request_delete_range();
  erase->set_key(jobPrefix_ + "r/");
  erase->set_range_end(prefixEnd(jobPrefix_ + "r/"));
  FTCOMM_RETURN_IF_ERROR(store_->guardedTxn(std::move(request)));
  sinceSnapshot_ = 0;
  return Status::Ok();
}

Status EtcdLog::drop() {
  etcdpb::TxnRequest request;
  auto* erase = request.add_success()->mutable_request_delete_range();
  erase->set_key(jobPrefix_);
  erase->set_range_end(prefixEnd(jobPrefix_));
  FTCOMM_RETURN_IF_ERROR(store_->guardedTxn(std::move(request)));
  sinceSnapshot_ = 0;
  return Status::Ok();
}

Result<std::vector<StoredJob>> EtcdStore::load() {
  const std::string jobsPrefix = options_.prefix + "jobs/";
  auto range = client_->range(jobsPrefix, prefixEnd(jobsPrefix));
  if (!range.ok()) return range.status();
  struct Parts {
    std::optional<pb::JournalRecord> snapshot;
    std::map<std::string, pb::JournalRecord> records;  // by SEQ, which sorts as it counts
  };
  std::map<std::string, Parts> jobs;
  for (const auto& kv : range->kvs()) {
    const std::string rest = kv.key().substr(jobsPrefix.size());
    const std::size_t slash = rest.find('/');
    if (slash == std::string::npos) continue;
    const std::string jobId = rest.substr(0, slash), tail = rest.substr(slash + 1);
    pb::JournalRecord record;
    if (!record.ParseFromString(kv.value())) {
      return internalError("etcd key " + kv.key() + " does not hold a journal record");
    }
    if (tail == "s") {
      jobs[jobId].snapshot = std::move(record);
    } else if (tail.rfind("r/", 0) == 0 && tail.size() == 18) {
      jobs[jobId].records.emplace(tail.substr(2), std::move(record));
    }
  }
  std::vector<StoredJob> stored;
  std::lock_guard lock(mu_);
  for (auto& [jobId, parts] : jobs) {
    StoredJob job{jobId, {}};
    if (parts.snapshot) job.records.push_back(std::move(*parts.snapshot));
    std::uint64_t last = 0;
    for (auto& [seq, record] : parts.records) {
      last = std::strtoull(seq.c_str(), nullptr, 16);
      job.records.push_back(std::move(record));
    }
    nextSeq_[jobId] = last + 1;
    stored.push_back(std::move(job));
  }
  return stored;
}

Result<std::unique_ptr<JobLog>> EtcdStore::openLog(const std::string& jobId) {
  std::uint64_t next = 1;
  {
    std::lock_guard lock(mu_);
    if (auto it = nextSeq_.find(jobId); it != nextSeq_.end()) next = it->second;
  }
  return std::unique_ptr<JobLog>(new EtcdLog(this, options_.prefix + "jobs/" + jobId + "/", next));
}

Status EtcdStore::acquire(const std::atomic<bool>& stopping,
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
      const auto sent = SteadyClock::now();
      auto granted = client_->grantLease(options_.leaderTtl);
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
    absent->set_key(leaderKey());
    absent->set_create_revision(0);
    auto* put = request.add_success()->mutable_request_put();
    put->set_key(leaderKey());
    put->set_value(options_.advertise);
    put->set_lease(lease);
    request.add_failure()->mutable_request_range()->set_key(leaderKey());
    auto response = client_->txn(request);
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
    std::string holder = "unknown";
    if (response->responses_size() > 0 && response->responses(0).response_range().kvs_size() > 0) {
      holder = response->responses(0).response_range().kvs(0).value();
    }
    if (holder != lastHolder) {
      lastHolder = holder;
      standby(holder);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return cancelled("stopped while standing by");
}

void EtcdStore::tell(std::unique_lock<std::mutex>& lock,
                     const std::function<void(const std::string&)> HoldCallbacks::*which,
                     const std::string& why) {
  auto callback = hold_.*which;
  lock.unlock();
  if (callback) callback(why);
  lock.lock();
}

void EtcdStore::warnIfLeaseShort(std::chrono::seconds ttl) const {
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

Result<bool> EtcdStore::stillLeader() {
  auto range = client_->range(leaderKey());
  if (!range.ok()) return range.status();
  return range->kvs_size() == 1 && range->kvs(0).create_revision() == leaderRevision_.load();
}

void EtcdStore::keepLease() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const auto period = std::max(std::chrono::milliseconds(100), ttl_ / 3);
    auto nextRenewal = SteadyClock::now() + period;
    // Wakes at least every 100 ms to check that the lease is still surely held.
    while (!stopping_ && SteadyClock::now() < nextRenewal) {
      cv_.wait_for(lock, std::chrono::milliseconds(100));
      // Stop answering a little before etcd could expire the lease (its clock may run ahead).
      if (leading_ && !suspended_ && SteadyClock::now() + ttl_ / 10 >= validUntil_) {
        suspended_ = true;
        tell(lock, &HoldCallbacks::suspend,
             "its etcd lease was not renewed in time (etcd unreachable or electing a leader)");
        nextRenewal = SteadyClock::now();  // try at once
      }
    }
    if (stopping_) break;
    const std::int64_t lease = lease_;
    // A renewal is given up in time for the check above to suspend a leader before its lease
    // could expire.
    auto timeout = ttl_ / 2;
    if (leading_ && !suspended_) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          validUntil_ - ttl_ / 10 - SteadyClock::now());
      timeout = std::max(std::chrono::milliseconds(100), std::min(timeout, left));
    }
    lock.unlock();
    const auto sent = SteadyClock::now();
    auto ttl = client_->keepAlive(lease, timeout);
    lock.lock();
    if (ttl.ok() && *ttl > 0) {
      validUntil_ = sent + std::chrono::seconds(*ttl);
      if (leading_ && suspended_) {
        lock.unlock();
        auto mine = stillLeader();
        lock.lock();
        if (mine.ok() && *mine) {
          suspended_ = false;
          tell(lock, &HoldCallbacks::resume, "its etcd lease was renewed");
        } else if (mine.ok()) {
          leading_ = false;
          tell(lock, &HoldCallbacks::lost, "another replica holds " + leaderKey() + " now");
          break;
        }
      }
    } else if (ttl.ok()) {
      // The lease is gone, and the leader key with it.
      if (leading_) {
        leading_ = false;
        tell(lock, &HoldCallbacks::lost, "its etcd lease expired");
      }
      lease_ = 0;  // a standby's acquire() grants a new one
      break;
    }
  }
}

}  // namespace

Result<std::unique_ptr<StateStore>> makeEtcdStore(EtcdStoreOptions options) {
  if (options.prefix.empty() || options.prefix.back() != '/') options.prefix += '/';
  auto client = EtcdClient::connect(options.etcd);
  if (!client.ok()) return client.status();
  // One read proves the cluster answers (and that TLS matches) before the store is used.
  auto probe = (*client)->range(options.prefix + "leader");
  if (!probe.ok()) return probe.status();
  return std::unique_ptr<StateStore>(new EtcdStore(std::move(options), std::move(*client)));
}

}  // namespace ftcomm::rendezvous
