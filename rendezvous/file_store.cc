// FileStore: a journal file per job (job_journal.h), compacted when it has grown enough. A
// torn tail found by load() is cut when the job's log is opened.
#include <iostream>
#include <map>
#include <mutex>

#include "rendezvous/job_journal.h"
#include "rendezvous/limits.h"
#include "rendezvous/state_store.h"

namespace ftcomm::rendezvous {

namespace {

class FileLog final : public JobLog {
 public:
  FileLog(std::filesystem::path path, std::size_t validBytes)
      : path_(std::move(path)), validBytes_(validBytes) {}

  Status append(const std::vector<pb::JournalRecord>& records,
                const std::function<pb::JobSnapshot()>& snapshot) override {
    if (records.empty()) return Status::Ok();
    FTCOMM_RETURN_IF_ERROR(ensureOpen());
    FTCOMM_RETURN_IF_ERROR(journal_->append(records));
    if (journal_->wantsCompaction()) return journal_->compact(snapshot());
    return Status::Ok();
  }

  Status compact(const pb::JobSnapshot& snapshot) override {
    FTCOMM_RETURN_IF_ERROR(ensureOpen());
    return journal_->compact(snapshot);
  }

  Status drop() override {
    journal_.reset();
    validBytes_ = 0;
    std::error_code ec;
    std::filesystem::remove(path_, ec);
    if (ec) return internalError("cannot remove " + path_.string() + ": " + ec.message());
    return Status::Ok();
  }

 private:
  Status ensureOpen() {
    if (journal_) return Status::Ok();
    auto journal = JobJournal::open(path_, validBytes_);
    if (!journal.ok()) return journal.status();
    journal_ = std::move(journal).value();
    return Status::Ok();
  }

  std::filesystem::path path_;
  std::size_t validBytes_;  // of a journal read at start; 0: a new file
  std::unique_ptr<JobJournal> journal_;
};

class FileStore final : public StateStore {
 public:
  explicit FileStore(std::filesystem::path stateDir) : stateDir_(std::move(stateDir)) {}

  std::string describe() const override { return "state in " + stateDir_.string(); }

  Result<std::vector<StoredJob>> load() override {
    const std::filesystem::path dir = stateDir_ / "jobs";
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return internalError("cannot create state directory " + dir.string() + ": " + ec.message());
    }
    std::vector<StoredJob> jobs;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".journal") continue;
      const std::string jobId = entry.path().stem().string();
      if (!validateJobId(jobId).ok()) {
        std::cerr << "ftcomm-rendezvous: ignoring " << entry.path() << ": not a job journal name\n";
        continue;
      }
      auto contents = JobJournal::read(entry.path());
      if (!contents.ok()) return contents.status();
      if (contents->tornTail) {
        std::cerr << "ftcomm-rendezvous: job " << jobId << ": journal ends in a torn record after "
                  << contents->validBytes << " bytes; it is cut there\n";
      }
      {
        std::lock_guard lock(mu_);
        validBytes_[jobId] = contents->validBytes;
      }
      jobs.push_back({jobId, std::move(contents->records)});
    }
    return jobs;
  }

  Result<std::unique_ptr<JobLog>> openLog(const std::string& jobId) override {
    std::size_t validBytes = 0;
    {
      std::lock_guard lock(mu_);
      if (auto it = validBytes_.find(jobId); it != validBytes_.end()) validBytes = it->second;
    }
    return std::unique_ptr<JobLog>(new FileLog(JobJournal::pathFor(stateDir_, jobId), validBytes));
  }

 private:
  std::filesystem::path stateDir_;
  std::mutex mu_;
  std::map<std::string, std::size_t> validBytes_;
};

}  // namespace

std::unique_ptr<StateStore> makeFileStore(std::filesystem::path stateDir) {
  return std::make_unique<FileStore>(std::move(stateDir));
}

}  // namespace ftcomm::rendezvous
