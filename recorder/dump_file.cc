#include "recorder/dump_file.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "ftcomm/detail/little_endian.h"

namespace ftcomm::recorder {

namespace {

constexpr char kMagic[8] = {'F', 'T', 'C', 'O', 'M', 'M', 'F', 'R'};
constexpr std::size_t kHeaderBytes = 16;  // magic, version, CRC-32

std::uint32_t crcOf(const std::string& bytes, std::size_t offset) {
  return static_cast<std::uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(bytes.data() + offset),
                                          static_cast<uInt>(bytes.size() - offset)));
}

std::string numbered(const std::filesystem::path& path, int n) {
  return path.string() + "." + std::to_string(n);
}

}  // namespace

std::filesystem::path dumpPath(const std::filesystem::path& dir, const std::string& job, int rank) {
  std::string safe = job.empty() ? "ftcomm" : job;
  for (char& c : safe) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  if (safe.front() == '.') safe.front() = '_';
  return dir / (safe + "." + std::to_string(rank) + kDumpExtension);
}

Result<std::filesystem::path> writeDumpFile(const pb::Dump& dump,
                                            const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return internalError("cannot create dump directory " + dir.string() + ": " + ec.message());
  const auto path = dumpPath(dir, dump.job(), dump.rank());

  std::string bytes(kMagic, sizeof kMagic);
  detail::appendU32(bytes, kDumpFormatVersion);
  const std::string payload = dump.SerializeAsString();
  detail::appendU32(
      bytes, static_cast<std::uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(payload.data()),
                                              static_cast<uInt>(payload.size()))));
  bytes += payload;

  const std::string tmp = path.string() + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return internalError("cannot create " + tmp + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return internalError("cannot write " + tmp + ": " + why);
    }
    done += static_cast<std::size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) {
    ::unlink(tmp.c_str());
    return internalError("cannot fsync " + tmp);
  }
  // Keep the earlier dumps: .ftfr -> .ftfr.1 -> .ftfr.2 ..., the oldest falls off.
  for (int n = kKeptEarlierDumps - 1; n >= 1; --n) {
    std::filesystem::rename(numbered(path, n), numbered(path, n + 1), ec);
  }
  std::filesystem::rename(path, numbered(path, 1), ec);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return internalError("cannot rename " + tmp + " to " + path.string() + ": " + why);
  }
  return path;
}

Result<pb::Dump> readDumpFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return notFound(path.string() + ": cannot open");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string name = path.string() + ": ";
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    return invalidArgument(name + "not an ftcomm flight-recorder dump (no FTCOMMFR header)");
  }
  if (bytes.size() < kHeaderBytes) return invalidArgument(name + "truncated inside its header");
  const std::uint32_t version = detail::readU32(bytes.data() + 8);
  if (version != kDumpFormatVersion) {
    return invalidArgument(name + "dump format version " + std::to_string(version) +
                           "; this ftcomm-fr reads version " + std::to_string(kDumpFormatVersion));
  }
  if (crcOf(bytes, kHeaderBytes) != detail::readU32(bytes.data() + 12)) {
    return invalidArgument(name + "truncated or corrupt (checksum mismatch over " +
                           std::to_string(bytes.size() - kHeaderBytes) + " payload bytes)");
  }
  pb::Dump dump;
  if (!dump.ParseFromArray(bytes.data() + kHeaderBytes,
                           static_cast<int>(bytes.size() - kHeaderBytes))) {
    return invalidArgument(name + "corrupt: the payload is not a Dump message");
  }
  if (dump.format_version() != kDumpFormatVersion) {
    return invalidArgument(name + "header and payload disagree on the format version");
  }
  return dump;
}

}  // namespace ftcomm::recorder
