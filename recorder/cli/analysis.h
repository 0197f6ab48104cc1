// What ftcomm-fr analyze concludes from the dumps of one job: for each communicator and epoch,
// the first collective that did not complete on every member, and why: who never entered it
// (the likely culprits), who entered it with another signature, who entered and never completed
// (stuck in transport), who failed it; plus point-to-point operations left incomplete and the
// ranks whose dumps are missing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "recorder/cli/dump_set.h"

namespace ftcomm::recorder {

struct RankNote {
  int rank = 0;
  std::string text;  // a signature or an error
};

struct CollectiveFinding {
  std::uint64_t commId = 0;
  std::string commName;
  std::uint64_t epoch = 0;
  std::uint64_t seq = 0;
  std::string signature;          // what most members called
  std::vector<int> neverEntered;  // world ranks
  std::vector<RankNote> mismatched;
  std::vector<int> stuck;
  std::vector<RankNote> failed;
};

struct PointToPointFinding {
  int rank = 0;
  std::string commName;
  std::uint64_t epoch = 0;
  std::string description;  // "send to rank 1 tag 3, 1024 x float32, STARTED"
};

struct JobReport {
  std::string job;
  int worldSize = 0;
  std::vector<int> ranksWithDumps;
  std::vector<int> missingDumps;
  std::vector<int> finishedNormally;  // ranks whose dump says they exited with 0
  // Ranks that ended themselves because the job went on without them (dump reason "expelled:
  // ..."), e.g. behind a cut link: left out, not crashed.
  std::vector<int> fenced;
  std::vector<CollectiveFinding> collectives;
  std::vector<PointToPointFinding> pointToPoint;
  std::vector<std::string> notes;  // e.g. entries dropped by a full ring

  bool problem() const {
    return !missingDumps.empty() || !collectives.empty() || !pointToPoint.empty();
  }
};

struct Analysis {
  std::vector<JobReport> jobs;
  std::vector<UnreadableDump> unreadable;

  bool problem() const;
  // 0: nothing wrong; 1: a problem found; 2: some input could not be read.
  int exitCode() const;
};

Analysis analyze(const DumpSet& dumps);

// "all_reduce float32 x1024 sum", "broadcast float32 x8 root 0": what every member of the
// collective must have called alike ("all_gather_v float32 x96 in all", "all_to_all_v int64").
std::string signatureOf(const pb::Entry& entry);

void printText(const Analysis& analysis, std::ostream& out);
void printJson(const Analysis& analysis, std::ostream& out);

}  // namespace ftcomm::recorder
