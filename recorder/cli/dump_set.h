// The dumps ftcomm-fr works on: files and directories named on the command line, read and
// checked, with every unreadable file kept with its reason (the rest are still analyzed).
#pragma once

#include <string>
#include <vector>

#include "recorder/dump_file.h"

namespace ftcomm::recorder {

struct UnreadableDump {
  std::string file;
  std::string error;
};

struct DumpSet {
  std::vector<pb::Dump> dumps;  // one per (job, rank): the latest when a rank dumped twice
  std::vector<UnreadableDump> unreadable;
};

// A directory contributes its *.ftfr files (the latest dump of each rank; numbered earlier ones
// are left alone); a file is read as given.
DumpSet loadDumps(const std::vector<std::string>& paths);

// Names for the dump's enums, as ftcomm-fr prints them: "all_reduce", "float32", "sum".
std::string opName(pb::OpType op);
std::string dtypeName(pb::DataType dtype);
std::string reduceOpName(pb::ReduceOp op);
std::string stateName(pb::OpState state);
// The communicator's name in this dump, or "comm <id>".
std::string commName(const pb::Dump& dump, std::uint64_t commId);
bool isCollective(pb::OpType op);

}  // namespace ftcomm::recorder
