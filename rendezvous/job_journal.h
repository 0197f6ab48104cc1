// The durable state of one job: an append-only file of JournalRecords under the server's state
// directory (<state-dir>/jobs/<job>.journal). A record is written before the reply it backs is
// sent, so a client never holds an epoch the restarted server forgot. Records reach the kernel
// with one write(2) per batch; that survives the server process dying (the restart tests), not
// the machine losing power: no fsync per record, by choice, since the job's ranks on that machine
// die with it. Compaction writes one snapshot record to a temporary file, fsyncs and renames it
// over the journal.
//
// On-disk format: the 8-byte magic "FTRJNL01", then records, each a 4-byte little-endian length,
// a 4-byte CRC-32 of the payload, and the serialized JournalRecord. Reading stops at the first
// torn or corrupt record; opening for append cuts the file there.
//
// Thread-safety: none; used under the job's mutex.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ftcomm/proto/rendezvous.pb.h"
#include "ftcomm/status.h"

namespace ftcomm::rendezvous {

namespace pb = ::ftcomm::rendezvous::v1;

struct JournalContents {
  std::vector<pb::JournalRecord> records;
  std::size_t validBytes = 0;
  bool tornTail = false;  // bytes past validBytes were not a whole, intact record
};

class JobJournal {
 public:
  ~JobJournal();
  JobJournal(const JobJournal&) = delete;
  JobJournal& operator=(const JobJournal&) = delete;

  static std::filesystem::path pathFor(const std::filesystem::path& stateDir,
                                       const std::string& jobId);
  // Reads a journal; a missing file reads as empty.
  static Result<JournalContents> read(const std::filesystem::path& path);
  // Opens for append, creating the file, and cuts it at `validBytes` (from read()).
  static Result<std::unique_ptr<JobJournal>> open(std::filesystem::path path,
                                                  std::size_t validBytes);

  Status append(const std::vector<pb::JournalRecord>& records);
  // Replaces the whole journal by one snapshot record.
  Status compact(const pb::JobSnapshot& snapshot);
  // True when the journal has grown enough past its last compaction to be worth compacting.
  bool wantsCompaction() const;

 private:
  JobJournal(std::filesystem::path path, int fd, std::size_t bytes);

  std::filesystem::path path_;
  int fd_ = -1;
  std::size_t bytes_ = 0;
  std::size_t bytesAfterCompaction_ = 0;
};

}  // namespace ftcomm::rendezvous
