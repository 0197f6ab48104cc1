#include "rendezvous/etcd_store.h"

#include <cinttypes>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>

#include "rendezvous/etcd_leadership.h"

namespace ftcomm::rendezvous {

namespace {

// etcd refuses a transaction of more than 128 operations or 1.5 MiB (its defaults).
constexpr std::size_t kMaxOpsPerTxn = 100;
constexpr std::size_t kMaxBytesPerTxn = 1 << 20;
// Records appended since the last snapshot before the next compaction.
constexpr std::size_t kCompactAfterRecords = 512;

// A record's key ends in its sequence number, in this many hex digits, so keys sort as they count.
constexpr std::size_t kSeqDigits = 16;

std::string seqKey(std::uint64_t seq) {
  char text[24];
  std::snprintf(text, sizeof text, "%0*" PRIx64, static_cast<int>(kSeqDigits), seq);
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
      : options_(std::move(options)),
        client_(std::move(client)),
        leadership_(*client_, {options_.prefix + "leader", options_.advertise, options_.leaderTtl,
                               options_.memberLease}) {}

  std::string describe() const override {
    return "state in etcd " + client_->endpointList() + " under " + options_.prefix;
  }
  bool replicated() const override { return true; }
  Result<std::vector<StoredJob>> load() override;
  Result<std::unique_ptr<JobLog>> openLog(const std::string& jobId) override;
  Status acquire(const std::atomic<bool>& stopping,
                 const std::function<void(const std::string&)>& standby) override {
    return leadership_.acquire(stopping, standby);
  }
  void watchHold(HoldCallbacks callbacks) override { leadership_.watchHold(std::move(callbacks)); }

  Status guardedTxn(etcdpb::TxnRequest request) {
    return leadership_.guardedTxn(std::move(request));
  }

 private:
  EtcdStoreOptions options_;
  std::unique_ptr<EtcdClient> client_;
  EtcdLeadership leadership_;  // after client_, which it uses until it is gone
  std::mutex mu_;
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
    } else if (tail.rfind("r/", 0) == 0 && tail.size() == 2 + kSeqDigits) {
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
