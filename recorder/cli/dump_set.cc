#include "recorder/cli/dump_set.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

namespace ftcomm::recorder {

namespace {

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

void addFile(const std::filesystem::path& path,
             std::map<std::pair<std::string, int>, pb::Dump>& byRank,
             std::vector<UnreadableDump>& unreadable) {
  auto dump = readDumpFile(path);
  if (!dump.ok()) {
    unreadable.push_back({path.string(), dump.status().message()});
    return;
  }
  auto key = std::make_pair(dump->job(), dump->rank());
  auto it = byRank.find(key);
  if (it == byRank.end() || it->second.wall_time_ns() < dump->wall_time_ns()) {
    byRank[key] = std::move(dump).value();
  }
}

}  // namespace

DumpSet loadDumps(const std::vector<std::string>& paths) {
  DumpSet set;
  std::map<std::pair<std::string, int>, pb::Dump> byRank;
  for (const auto& name : paths) {
    std::error_code ec;
    const std::filesystem::path path(name);
    if (std::filesystem::is_directory(path, ec)) {
      std::vector<std::filesystem::path> files;
      for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
        if (entry.path().extension() == kDumpExtension) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
      if (files.empty()) set.unreadable.push_back({name, "directory holds no *.ftfr dump"});
      for (const auto& file : files) addFile(file, byRank, set.unreadable);
    } else {
      addFile(path, byRank, set.unreadable);
    }
  }
  for (auto& [key, dump] : byRank) set.dumps.push_back(std::move(dump));
  return set;
}

std::string opName(pb::OpType op) {
  return lower(pb::OpType_Name(op));
}
std::string dtypeName(pb::DataType dtype) {
  return lower(pb::DataType_Name(dtype));
}
std::string reduceOpName(pb::ReduceOp op) {
  return lower(pb::ReduceOp_Name(op));
}
std::string stateName(pb::OpState state) {
  return pb::OpState_Name(state);
}

std::string commName(const pb::Dump& dump, std::uint64_t commId) {
  for (const auto& c : dump.communicators()) {
    if (c.comm_id() == commId && !c.name().empty()) return c.name();
  }
  return "comm " + std::to_string(commId);
}

bool isCollective(pb::OpType op) {
  switch (op) {
    case pb::ALL_REDUCE:
    case pb::REDUCE:
    case pb::BROADCAST:
    case pb::ALL_GATHER:
    case pb::ALL_GATHER_V:
    case pb::REDUCE_SCATTER:
    case pb::ALL_TO_ALL:
    case pb::ALL_TO_ALL_V:
    case pb::GATHER:
    case pb::SCATTER:
    case pb::BARRIER:
      return true;
    default:
      return false;
  }
}

}  // namespace ftcomm::recorder
