#include "recorder/cli/show_and_trace.h"

#include <cstdio>
#include <ctime>
#include <map>

#include "recorder/cli/analysis.h"
#include "recorder/cli/json_writer.h"

namespace ftcomm::recorder {

namespace {

std::string utcTime(std::int64_t wallNs) {
  const std::time_t seconds = static_cast<std::time_t>(wallNs / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string duration(const pb::Entry& e, std::int64_t nowNs) {
  const std::int64_t end = e.ended_ns() != 0 ? e.ended_ns() : nowNs;
  const double us = static_cast<double>(end - e.scheduled_ns()) / 1000.0;
  char text[32];
  if (us < 1000.0)
    std::snprintf(text, sizeof text, "%.1f us", us);
  else if (us < 1e6)
    std::snprintf(text, sizeof text, "%.2f ms", us / 1000.0);
  else
    std::snprintf(text, sizeof text, "%.2f s", us / 1e6);
  return std::string(text) + (e.ended_ns() == 0 ? "+" : "");
}

std::string orDash(int value) {
  return value >= 0 ? std::to_string(value) : "-";
}

// Monotonic nanoseconds of one dump as Unix microseconds, so that ranks line up.
double wallMicros(const pb::Dump& dump, std::int64_t monotonicNs) {
  return static_cast<double>(dump.wall_time_ns() - (dump.monotonic_at_dump_ns() - monotonicNs)) /
         1000.0;
}

}  // namespace

void printShow(const pb::Dump& dump, std::ostream& out) {
  out << "job " << dump.job() << ", rank " << dump.rank() << " of " << dump.world_size()
      << ", host " << dump.host() << " pid " << dump.pid() << ", epoch " << dump.epoch() << "\n";
  out << "dumped " << utcTime(dump.wall_time_ns()) << " because: " << dump.reason() << " (ftcomm "
      << dump.library_version() << ", format " << dump.format_version() << ")\n";
  out << "ring: " << dump.entries_size() << " entries, capacity " << dump.capacity() << ", "
      << dump.dropped_entries() << " dropped\n";
  for (const auto& c : dump.communicators()) {
    out << "communicator " << c.comm_id() << " '" << c.name() << "' epoch " << c.epoch()
        << ", rank " << c.rank() << " of " << c.world_ranks_size();
    if (c.parent_comm_id() != 0) out << ", child of " << c.parent_comm_id();
    out << "\n";
  }
  char line[512];
  std::snprintf(line, sizeof line, "%7s  %-14s %5s %6s  %-14s %-9s %10s %5s %5s  %-9s %11s  %s\n",
                "record", "communicator", "epoch", "seq", "op", "dtype", "count", "root", "peer",
                "state", "duration", "error / algorithm");
  out << line;
  for (const auto& e : dump.entries()) {
    std::string tail = e.error().empty() ? e.algorithm() : e.error();
    std::snprintf(line, sizeof line,
                  "%7llu  %-14s %5llu %6llu  %-14s %-9s %10llu %5s %5s  %-9s %11s  ",
                  static_cast<unsigned long long>(e.record_id()),
                  commName(dump, e.comm_id()).c_str(), static_cast<unsigned long long>(e.epoch()),
                  static_cast<unsigned long long>(e.seq()), opName(e.op()).c_str(),
                  dtypeName(e.dtype()).c_str(), static_cast<unsigned long long>(e.count_in()),
                  orDash(e.root()).c_str(), orDash(e.peer()).c_str(), stateName(e.state()).c_str(),
                  duration(e, dump.monotonic_at_dump_ns()).c_str());
    out << line << tail << "\n";
  }
}

void printTrace(const DumpSet& dumps, std::ostream& out) {
  JsonWriter json(out);
  json.beginObject().key("displayTimeUnit").value("ns").key("traceEvents").beginArray();
  for (const auto& dump : dumps.dumps) {
    const int pid = dump.rank();
    json.beginObject().key("ph").value("M").key("name").value("process_name").key("pid").value(pid);
    json.key("args").beginObject().key("name").value(
        dump.job() + " rank " + std::to_string(dump.rank()) + " (" + dump.host() + ":" +
        std::to_string(dump.pid()) + ")");
    json.endObject().endObject();
    json.beginObject()
        .key("ph")
        .value("M")
        .key("name")
        .value("process_sort_index")
        .key("pid")
        .value(pid);
    json.key("args").beginObject().key("sort_index").value(pid).endObject().endObject();
    // One track (tid) per communicator, numbered in the dump's order: communicator ids are
    // 64-bit hashes, which JSON readers would round.
    std::map<std::uint64_t, int> tracks;
    auto trackOf = [&](std::uint64_t commId) {
      auto [it, added] = tracks.emplace(commId, static_cast<int>(tracks.size()) + 1);
      if (added) {
        json.beginObject().key("ph").value("M").key("name").value("thread_name");
        json.key("pid").value(pid).key("tid").value(it->second);
        json.key("args").beginObject().key("name").value(commName(dump, commId));
        json.endObject().endObject();
      }
      return it->second;
    };
    for (const auto& c : dump.communicators()) trackOf(c.comm_id());
    for (const auto& e : dump.entries()) {
      const int track = trackOf(e.comm_id());
      const std::int64_t end = e.ended_ns() != 0 ? e.ended_ns() : dump.monotonic_at_dump_ns();
      json.beginObject();
      json.key("ph").value("X").key("name").value(opName(e.op()));
      json.key("cat").value(commName(dump, e.comm_id()));
      json.key("pid").value(pid).key("tid").value(track);
      json.key("ts").value(wallMicros(dump, e.scheduled_ns()));
      json.key("dur").value(static_cast<double>(end - e.scheduled_ns()) / 1000.0);
      json.key("args").beginObject();
      json.key("epoch").value(e.epoch()).key("seq").value(e.seq());
      json.key("signature").value(signatureOf(e));
      json.key("state").value(stateName(e.state()));
      if (e.peer() >= 0) json.key("peer").value(e.peer());
      if (!e.algorithm().empty()) json.key("algorithm").value(e.algorithm());
      if (!e.error().empty()) json.key("error").value(e.error());
      json.endObject().endObject();
    }
  }
  json.endArray().endObject();
  out << "\n";
}

}  // namespace ftcomm::recorder
