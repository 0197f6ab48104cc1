// Where the rendezvous keeps its jobs' durable state: the journal records their state machines
// emit (job_state.h), written before the replies they back are sent. Two stores:
//   - FileStore: a journal file per job under a state directory (job_journal.h); one server.
//   - EtcdStore: the records as etcd keys (etcd_store.h); several server replicas, one of them
//     the leader that serves, the others standing by to take over.
// A server with neither keeps its state in memory only.
//
// Thread-safety: a StateStore's methods may be called from any thread; a JobLog is used under
// its job's mutex.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ftcomm/proto/rendezvous.pb.h"
#include "ftcomm/status.h"

namespace ftcomm::rendezvous {

namespace pb = ::ftcomm::rendezvous::v1;

// One job as the store holds it: the records to replay, oldest first (a snapshot first, when the
// store has compacted).
struct StoredJob {
  std::string jobId;
  std::vector<pb::JournalRecord> records;
};

class JobLog {
 public:
  virtual ~JobLog() = default;
  // Persists `records` in order. `snapshot` gives the job's state after them, for a store that
  // decides to compact.
  virtual Status append(const std::vector<pb::JournalRecord>& records,
                        const std::function<pb::JobSnapshot()>& snapshot) = 0;
  // Replaces everything stored for the job by one snapshot.
  virtual Status compact(const pb::JobSnapshot& snapshot) = 0;
  // The job is over (no live member, nobody waiting to join): its stored state goes.
  virtual Status drop() = 0;
};

class StateStore {
 public:
  virtual ~StateStore() = default;
  virtual std::string describe() const = 0;
  // Every stored job.
  virtual Result<std::vector<StoredJob>> load() = 0;
  // The log of a job; after load(), it continues the records load() returned.
  virtual Result<std::unique_ptr<JobLog>> openLog(const std::string& jobId) = 0;
  // True where several servers share the store and one at a time may write (acquire() blocks).
  virtual bool replicated() const { return false; }
  // Blocks until this server may write (the leader among replicas), or `stopping` is set, and
  // calls `standby` with the current holder whenever that changes. A lone store returns at once.
  virtual Status acquire(const std::atomic<bool>& stopping,
                         const std::function<void(const std::string& holder)>& standby) {
    (void)stopping;
    (void)standby;
    return Status::Ok();
  }
  // After acquire(): `suspend` is called, on some thread, when the store cannot confirm in time
  // that this server still holds the right to write (it must stop answering at once: another
  // replica may take over), `resume` when it confirms it again, and `lost` when it learns that
  // another holds it now (this server must end).
  struct HoldCallbacks {
    std::function<void(const std::string&why)> suspend, resume, lost;
  };
  virtual void watchHold(HoldCallbacks callbacks) { (void)callbacks; }
};

// Journal files under `stateDir`/jobs (job_journal.h).
std::unique_ptr<StateStore> makeFileStore(std::filesystem::path stateDir);

}  // namespace ftcomm::rendezvous
