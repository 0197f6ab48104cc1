#include "rendezvous/job_journal.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>

#include "ftcomm/detail/little_endian.h"

namespace ftcomm::rendezvous {

namespace {

constexpr char kMagic[8] = {'F', 'T', 'R', 'J', 'N', 'L', '0', '1'};
constexpr std::size_t kHeaderBytes = 8;
constexpr std::size_t kMaxRecordBytes = 512u << 20;
constexpr std::size_t kCompactionFloorBytes = 1u << 20;

Status ioError(const std::string& what, const std::filesystem::path& path) {
  return internalError(what + " " + path.string() + ": " + std::strerror(errno));
}

std::uint32_t crcOf(const std::string& payload) {
  return static_cast<std::uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(payload.data()), static_cast<uInt>(payload.size())));
}

std::string encode(const std::vector<pb::JournalRecord>& records) {
  std::string out;
  for (const auto& record : records) {
    std::string payload = record.SerializeAsString();
    detail::appendU32(out, static_cast<std::uint32_t>(payload.size()));
    detail::appendU32(out, crcOf(payload));
    out += payload;
  }
  return out;
}

Status writeAll(int fd, const std::string& bytes, const std::filesystem::path& path) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ioError("cannot write", path);
    done += static_cast<std::size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

std::filesystem::path JobJournal::pathFor(const std::filesystem::path& stateDir,
                                          const std::string& jobId) {
  return stateDir / "jobs" / (jobId + ".journal");
}

Result<JournalContents> JobJournal::read(const std::filesystem::path& path) {
  JournalContents contents;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!std::filesystem::exists(path)) return contents;
    return ioError("cannot open", path);
  }
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.empty()) return contents;
  if (data.size() < kHeaderBytes && std::memcmp(data.data(), kMagic, data.size()) == 0) {
    contents.tornTail = true;  // the process died while creating the file: nothing was in it
    return contents;
  }
  if (data.size() < kHeaderBytes || std::memcmp(data.data(), kMagic, kHeaderBytes) != 0) {
    return invalidArgument(path.string() + " is not an ftcomm rendezvous journal (bad magic)");
  }
  std::size_t pos = kHeaderBytes;
  while (pos < data.size()) {
    if (data.size() - pos < 8) break;
    const std::uint32_t length = detail::readU32(data.data() + pos);
    const std::uint32_t crc = detail::readU32(data.data() + pos + 4);
    if (length > kMaxRecordBytes || data.size() - pos - 8 < length) break;
    std::string payload = data.substr(pos + 8, length);
    pb::JournalRecord record;
    if (crcOf(payload) != crc || !record.ParseFromString(payload)) break;
    contents.records.push_back(std::move(record));
    pos += 8 + length;
  }
  contents.validBytes = pos;
  contents.tornTail = pos < data.size();
  return contents;
}

Result<std::unique_ptr<JobJournal>> JobJournal::open(std::filesystem::path path,
                                                     std::size_t validBytes) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec)
    return internalError("cannot create " + path.parent_path().string() + ": " + ec.message());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return ioError("cannot open", path);
  std::size_t bytes = validBytes;
  if (validBytes == 0) {
    if (::ftruncate(fd, 0) != 0) {
      ::close(fd);
      return ioError("cannot truncate", path);
    }
    Status s = writeAll(fd, std::string(kMagic, kHeaderBytes), path);
    if (!s.ok()) {
      ::close(fd);
      return s;
    }
    bytes = kHeaderBytes;
  } else if (::ftruncate(fd, static_cast<off_t>(validBytes)) != 0 ||
             ::lseek(fd, static_cast<off_t>(validBytes), SEEK_SET) < 0) {
    ::close(fd);
    return ioError("cannot cut the torn tail of", path);
  }
  return std::unique_ptr<JobJournal>(new JobJournal(std::move(path), fd, bytes));
}

JobJournal::JobJournal(std::filesystem::path path, int fd, std::size_t bytes)
    : path_(std::move(path)), fd_(fd), bytes_(bytes), bytesAfterCompaction_(bytes) {}

JobJournal::~JobJournal() {
  if (fd_ >= 0) ::close(fd_);
}

Status JobJournal::append(const std::vector<pb::JournalRecord>& records) {
  if (records.empty()) return Status::Ok();
  std::string bytes = encode(records);
  FTCOMM_RETURN_IF_ERROR(writeAll(fd_, bytes, path_));
  bytes_ += bytes.size();
  return Status::Ok();
}

Status JobJournal::compact(const pb::JobSnapshot& snapshot) {
  pb::JournalRecord record;
  *record.mutable_snapshot() = snapshot;
  const std::string bytes = std::string(kMagic, kHeaderBytes) + encode({record});
  std::filesystem::path tmp = path_;
  tmp += ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return ioError("cannot create", tmp);
  Status s = writeAll(fd, bytes, tmp);
  if (s.ok() && ::fsync(fd) != 0) s = ioError("cannot fsync", tmp);
  if (s.ok() && ::rename(tmp.c_str(), path_.c_str()) != 0) s = ioError("cannot rename", tmp);
  if (!s.ok()) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  // The new file is the journal now; appends continue on its descriptor.
  ::close(fd_);
  fd_ = fd;
  bytes_ = bytesAfterCompaction_ = bytes.size();
  return Status::Ok();
}

bool JobJournal::wantsCompaction() const {
  return bytes_ > std::max(kCompactionFloorBytes, 4 * bytesAfterCompaction_);
}

}  // namespace ftcomm::rendezvous
