#include "recorder/cli/analysis.h"

#include <algorithm>
#include <map>
#include <set>

#include "recorder/flight_recorder.h"

namespace ftcomm::recorder {

namespace {

using CommEpoch = std::pair<std::uint64_t, std::uint64_t>;

// The collectives one rank recorded for one communicator epoch, by sequence number.
struct RankHistory {
  std::map<std::uint64_t, const pb::Entry*> bySeq;
  bool ringDroppedEntries = false;  // older entries may be missing: absence proves nothing below
};

// Members of a communicator epoch as world ranks: from the communicator tree when a dump knows
// this epoch, and in any case every rank that recorded an operation in it.
std::set<int> membersOf(const std::vector<const pb::Dump*>& dumps, CommEpoch key,
                        const std::map<int, RankHistory>& histories) {
  std::set<int> members;
  for (const pb::Dump* dump : dumps) {
    for (const auto& c : dump->communicators()) {
      if (c.comm_id() == key.first && c.epoch() == key.second) {
        members.insert(c.world_ranks().begin(), c.world_ranks().end());
      }
    }
  }
  for (const auto& [rank, history] : histories) members.insert(rank);
  return members;
}

std::string describePointToPoint(const pb::Entry& e) {
  std::string text = opName(e.op());
  if (e.peer() >= 0)
    text += (e.op() == pb::RECV ? " from rank " : " to rank ") + std::to_string(e.peer());
  text += " tag " + std::to_string(e.tag()) + ", " + std::to_string(e.count_in()) + " x " +
          dtypeName(e.dtype()) + ", " + stateName(e.state());
  if (!e.error().empty()) text += ": " + e.error();
  return text;
}

// Finds the first collective of one communicator epoch that is not complete everywhere.
bool findFirstIncomplete(CommEpoch key, const std::set<int>& members,
                         const std::map<int, RankHistory>& histories,
                         const std::set<int>& ranksWithDumps, CollectiveFinding& finding) {
  std::set<std::uint64_t> seqs;
  for (const auto& [rank, history] : histories) {
    for (const auto& [seq, entry] : history.bySeq) seqs.insert(seq);
  }
  for (std::uint64_t seq : seqs) {
    CollectiveFinding candidate;
    std::map<std::string, int> votes;
    std::map<int, std::string> signatures;
    for (int rank : members) {
      if (!ranksWithDumps.contains(rank)) continue;  // reported once, as a missing dump
      auto h = histories.find(rank);
      const pb::Entry* entry = nullptr;
      if (h != histories.end()) {
        auto it = h->second.bySeq.find(seq);
        if (it != h->second.bySeq.end()) entry = it->second;
      }
      if (entry == nullptr) {
        const bool passedIt = h != histories.end() && !h->second.bySeq.empty() &&
                              h->second.bySeq.rbegin()->first > seq;
        const bool droppedIt = h != histories.end() && h->second.ringDroppedEntries &&
                               !h->second.bySeq.empty() && h->second.bySeq.begin()->first > seq;
        if (!passedIt && !droppedIt) candidate.neverEntered.push_back(rank);
        continue;
      }
      signatures[rank] = signatureOf(*entry);
      ++votes[signatures[rank]];
      if (entry->state() == pb::FAILED) candidate.failed.push_back({rank, entry->error()});
      if (entry->state() == pb::SCHEDULED || entry->state() == pb::STARTED) {
        candidate.stuck.push_back(rank);
      }
    }
    if (signatures.empty()) continue;
    // The signature most members used; on a tie, the lowest rank's.
    std::string majority = signatures.begin()->second;
    for (const auto& [signature, count] : votes) {
      if (count > votes[majority]) majority = signature;
    }
    for (const auto& [rank, signature] : signatures) {
      if (signature != majority) candidate.mismatched.push_back({rank, signature});
    }
    if (candidate.neverEntered.empty() && candidate.mismatched.empty() && candidate.stuck.empty() &&
        candidate.failed.empty()) {
      continue;
    }
    candidate.commId = key.first;
    candidate.epoch = key.second;
    candidate.seq = seq;
    candidate.signature = majority;
    finding = std::move(candidate);
    return true;
  }
  return false;
}

JobReport analyzeJob(const std::string& job, const std::vector<const pb::Dump*>& dumps) {
  JobReport report;
  report.job = job;
  std::set<int> ranksWithDumps;
  std::map<CommEpoch, std::map<int, RankHistory>> collectives;
  std::map<std::uint64_t, std::string> names;
  for (const pb::Dump* dump : dumps) {
    report.worldSize = std::max(report.worldSize, dump->world_size());
    ranksWithDumps.insert(dump->rank());
    if (dump->reason() == kFinishedNormally) report.finishedNormally.push_back(dump->rank());
    if (dump->reason().rfind("expelled: ", 0) == 0) report.fenced.push_back(dump->rank());
    if (dump->dropped_entries() > 0) {
      report.notes.push_back("rank " + std::to_string(dump->rank()) + ": the ring dropped its " +
                             std::to_string(dump->dropped_entries()) +
                             " oldest entries (capacity " + std::to_string(dump->capacity()) + ")");
    }
    for (const auto& c : dump->communicators()) names.emplace(c.comm_id(), c.name());
    for (const auto& entry : dump->entries()) {
      if (isCollective(entry.op())) {
        RankHistory& history = collectives[{entry.comm_id(), entry.epoch()}][dump->rank()];
        history.bySeq[entry.seq()] = &entry;
        history.ringDroppedEntries = dump->dropped_entries() > 0;
      } else if ((entry.op() == pb::SEND || entry.op() == pb::RECV) &&
                 entry.state() != pb::COMPLETED) {
        report.pointToPoint.push_back({dump->rank(), commName(*dump, entry.comm_id()),
                                       entry.epoch(), describePointToPoint(entry)});
      }
    }
  }
  report.ranksWithDumps.assign(ranksWithDumps.begin(), ranksWithDumps.end());
  std::sort(report.fenced.begin(), report.fenced.end());
  report.fenced.erase(std::unique(report.fenced.begin(), report.fenced.end()), report.fenced.end());
  std::sort(report.finishedNormally.begin(), report.finishedNormally.end());
  report.finishedNormally.erase(
      std::unique(report.finishedNormally.begin(), report.finishedNormally.end()),
      report.finishedNormally.end());
  for (int rank = 0; rank < report.worldSize; ++rank) {
    if (!ranksWithDumps.contains(rank)) report.missingDumps.push_back(rank);
  }
  for (const auto& [key, histories] : collectives) {
    CollectiveFinding finding;
    if (!findFirstIncomplete(key, membersOf(dumps, key, histories), histories, ranksWithDumps,
                             finding)) {
      continue;
    }
    auto name = names.find(key.first);
    finding.commName = name != names.end() && !name->second.empty()
                           ? name->second
                           : "comm " + std::to_string(key.first);
    report.collectives.push_back(std::move(finding));
  }
  return report;
}

}  // namespace

std::string signatureOf(const pb::Entry& entry) {
  std::string text = opName(entry.op());
  // The count every member passes alike: a scatter's input is the root's alone and an
  // allgatherv's each member's own, so their output counts (the block, the total) are compared
  // instead; an all-to-all-v's counts are each member's own both ways, and only its type is.
  const pb::OpType op = entry.op();
  if (op != pb::BARRIER) text += " " + dtypeName(entry.dtype());
  if (op != pb::BARRIER && op != pb::ALL_TO_ALL_V) {
    const bool byOutput = op == pb::SCATTER || op == pb::ALL_GATHER_V;
    text += " x" + std::to_string(byOutput ? entry.count_out() : entry.count_in());
    if (op == pb::ALL_GATHER_V) text += " in all";
  }
  if (entry.reduce_op() != pb::REDUCE_OP_UNSPECIFIED) text += " " + reduceOpName(entry.reduce_op());
  if (entry.root() >= 0) text += " root " + std::to_string(entry.root());
  return text;
}

bool Analysis::problem() const {
  return std::any_of(jobs.begin(), jobs.end(), [](const JobReport& j) { return j.problem(); });
}

int Analysis::exitCode() const {
  if (!unreadable.empty()) return 2;
  return problem() ? 1 : 0;
}

Analysis analyze(const DumpSet& dumps) {
  Analysis analysis;
  analysis.unreadable = dumps.unreadable;
  std::map<std::string, std::vector<const pb::Dump*>> byJob;
  for (const auto& dump : dumps.dumps) byJob[dump.job()].push_back(&dump);
  for (const auto& [job, jobDumps] : byJob) analysis.jobs.push_back(analyzeJob(job, jobDumps));
  return analysis;
}

}  // namespace ftcomm::recorder
