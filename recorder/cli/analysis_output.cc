// ftcomm-fr analyze's two outputs: plain words for people, JSON for scripts.
#include <ostream>

#include "recorder/cli/analysis.h"
#include "recorder/cli/json_writer.h"

namespace ftcomm::recorder {

namespace {

std::string rankList(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank" : "ranks";
  for (int r : ranks) text += " " + std::to_string(r);
  return text;
}

void writeRanks(JsonWriter& json, const char* name, const std::vector<int>& ranks) {
  json.key(name).beginArray();
  for (int r : ranks) json.value(r);
  json.endArray();
}

void writeNotes(JsonWriter& json, const char* name, const char* textKey,
                const std::vector<RankNote>& notes) {
  json.key(name).beginArray();
  for (const auto& n : notes)
    json.beginObject().key("rank").value(n.rank).key(textKey).value(n.text).endObject();
  json.endArray();
}

}  // namespace

void printText(const Analysis& analysis, std::ostream& out) {
  for (const auto& u : analysis.unreadable) out << "unreadable: " << u.error << "\n";
  for (const auto& job : analysis.jobs) {
    out << "job " << job.job << ": dumps of " << job.ranksWithDumps.size() << " of "
        << job.worldSize << " ranks\n";
    for (const auto& note : job.notes) out << "  note: " << note << "\n";
    if (!job.finishedNormally.empty()) {
      out << "  finished normally: " << rankList(job.finishedNormally) << " (exited with 0)\n";
    }
    if (!job.fenced.empty()) {
      out << "  fenced: " << rankList(job.fenced)
          << " (expelled: the job went on without them, and they ended themselves)\n";
    }
    if (!job.missingDumps.empty()) {
      out << "  missing dumps: " << rankList(job.missingDumps)
          << " (crashed before dumping, or dumps not collected)\n";
    }
    for (const auto& f : job.collectives) {
      out << "  communicator '" << f.commName << "' (id " << f.commId << ") epoch " << f.epoch
          << ": first incomplete collective is seq " << f.seq << ", " << f.signature << "\n";
      if (!f.neverEntered.empty()) {
        out << "    never entered it (likely culprits): " << rankList(f.neverEntered) << "\n";
      }
      for (const auto& m : f.mismatched) {
        out << "    mismatch: rank " << m.rank << " called " << m.text
            << " (the others: " << f.signature << ")\n";
      }
      if (!f.stuck.empty()) {
        out << "    entered it and never completed (stuck in transport): " << rankList(f.stuck)
            << "\n";
      }
      for (const auto& failed : f.failed) {
        out << "    failed on rank " << failed.rank << ": " << failed.text << "\n";
      }
    }
    for (const auto& p : job.pointToPoint) {
      out << "  incomplete point-to-point on rank " << p.rank << " ('" << p.commName << "' epoch "
          << p.epoch << "): " << p.description << "\n";
    }
    if (!job.problem()) {
      out << "  no problem found: every recorded operation completed on every rank\n";
    }
  }
  if (analysis.jobs.empty() && analysis.unreadable.empty()) out << "no dumps given\n";
}

void printJson(const Analysis& analysis, std::ostream& out) {
  JsonWriter json(out);
  json.beginObject();
  json.key("problem").value(analysis.problem());
  json.key("unreadable").beginArray();
  for (const auto& u : analysis.unreadable) {
    json.beginObject().key("file").value(u.file).key("error").value(u.error).endObject();
  }
  json.endArray();
  json.key("jobs").beginArray();
  for (const auto& job : analysis.jobs) {
    json.beginObject();
    json.key("job").value(job.job);
    json.key("world_size").value(job.worldSize);
    writeRanks(json, "ranks_with_dumps", job.ranksWithDumps);
    writeRanks(json, "missing_dumps", job.missingDumps);
    writeRanks(json, "finished_normally", job.finishedNormally);
    writeRanks(json, "fenced", job.fenced);
    json.key("collectives").beginArray();
    for (const auto& f : job.collectives) {
      json.beginObject();
      json.key("comm_id").value(f.commId);
      json.key("comm_name").value(f.commName);
      json.key("epoch").value(f.epoch);
      json.key("seq").value(f.seq);
      json.key("signature").value(f.signature);
      writeRanks(json, "never_entered", f.neverEntered);
      writeNotes(json, "mismatched", "signature", f.mismatched);
      writeRanks(json, "stuck", f.stuck);
      writeNotes(json, "failed", "error", f.failed);
      json.endObject();
    }
    json.endArray();
    json.key("point_to_point").beginArray();
    for (const auto& p : job.pointToPoint) {
      json.beginObject().key("rank").value(p.rank).key("comm_name").value(p.commName);
      json.key("epoch").value(p.epoch).key("description").value(p.description).endObject();
    }
    json.endArray();
    json.key("notes").beginArray();
    for (const auto& n : job.notes) json.value(n);
    json.endArray();
    json.endObject();
  }
  json.endArray();
  json.endObject();
  out << "\n";
}

}  // namespace ftcomm::recorder
