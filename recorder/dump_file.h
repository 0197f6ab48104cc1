// Dump files on disk: the versioned container of proto/recorder.proto, written atomically, with
// earlier dumps of the same rank kept under numbered names.
#pragma once

#include <filesystem>
#include <string>

#include "ftcomm/proto/recorder.pb.h"
#include "ftcomm/status.h"

namespace ftcomm::recorder {

namespace pb = ::ftcomm::recorder::v1;

inline constexpr std::uint32_t kDumpFormatVersion = 1;
inline constexpr const char* kDumpExtension = ".ftfr";
// How many earlier dumps of one rank are kept beside the latest: <name>.ftfr.1 (newest) ...
inline constexpr int kKeptEarlierDumps = 3;

// <dir>/<job>.<rank>.ftfr, with characters outside [A-Za-z0-9._-] in the job replaced by '_'.
std::filesystem::path dumpPath(const std::filesystem::path& dir, const std::string& job, int rank);

// Writes to a temporary file in `dir`, fsyncs, shifts earlier dumps of the rank, and renames:
// a crash mid-dump leaves no torn file, and an earlier dump is never silently lost.
Result<std::filesystem::path> writeDumpFile(const pb::Dump& dump, const std::filesystem::path& dir);

// Reads and checks a dump; the error names the file and what is wrong with it (not a dump,
// truncated, corrupt, a format version this build does not read).
Result<pb::Dump> readDumpFile(const std::filesystem::path& path);

}  // namespace ftcomm::recorder
