// ftcomm-tune: calibrates the machine it runs on. It times the real shared-memory collectives
// each candidate way (tune/bands.h) at sizes from 4 KiB up, with the rank count it was started
// with, and writes a rules file whose bands take the fastest way at each size. Rank counts it
// did not run with keep the base profile's rules. Run it under the launcher, one process per
// rank, on one host:
//
//   ftcomm-run -np 2 ftcomm-tune --out my.rules [--base generic] [--max-bytes 64M]
//   FTCOMM_TUNING=my.rules ...           # then plan with it
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ftcomm/communicator.h"
#include "tune/bands.h"
#include "tune/measure.h"
#include "tuning/select.h"

namespace {

using namespace ftcomm;

struct Options {
  std::string out;
  std::string name = "calibrated";
  std::string base = "generic";
  std::size_t maxBytes = std::size_t{64} << 20;
  int rounds = 3;
  double margin = 0.10;
};

constexpr const char* kUsage =
    "usage: ftcomm-run -np N ftcomm-tune --out FILE [--name NAME] [--base PROFILE]\n"
    "                  [--max-bytes BYTES] [--rounds R] [--margin FRACTION]\n"
    "       ftcomm-tune --processor    (this processor's key, and the profile auto picks)\n"
    "  --out FILE        the rules file to write (rank 0 writes it)\n"
    "  --name NAME       the profile's name (calibrated)\n"
    "  --base PROFILE    settings, and the rules of other rank counts, from this profile\n"
    "                    (FTCOMM_TUNING's values: generic, auto, a name or a path; generic)\n"
    "  --max-bytes B     the largest size timed, 4K or more, like 64M (64M)\n"
    "  --rounds R        each way is timed R times, alternating, and its fastest kept (3)\n"
    "  --margin F        a band changes way only for one faster by more than F (0.10)\n";

std::optional<Options> parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return std::nullopt;
    const std::string value = argv[++i];
    if (flag == "--out") {
      o.out = value;
    } else if (flag == "--name") {
      o.name = value;
    } else if (flag == "--base") {
      o.base = value;
    } else if (flag == "--max-bytes") {
      auto bytes = tuning::parseBytes(value);
      if (!bytes || *bytes < 4096) return std::nullopt;
      o.maxBytes = *bytes;
    } else if (flag == "--rounds") {
      o.rounds = std::atoi(value.c_str());
      if (o.rounds < 1) return std::nullopt;
    } else if (flag == "--margin") {
      o.margin = std::atof(value.c_str());
      if (o.margin < 0) return std::nullopt;
    } else {
      return std::nullopt;
    }
  }
  if (o.out.empty() || o.name.empty() || o.name.find_first_of(" \t#") != std::string::npos) {
    return std::nullopt;
  }
  return o;
}

// The sizes timed: every factor of 4 from 4 KiB to `max`. Collectives of up to 1 KiB run
// inline in one chunk whatever the rules say (algorithms/shm/inline_plan.cc), so there is no
// choice below to measure; the first band covers them.
std::vector<std::size_t> sizesUpTo(std::size_t max) {
  std::vector<std::size_t> sizes;
  for (std::size_t s = 4096; s <= max; s *= 4) sizes.push_back(s);
  return sizes;
}

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      return line.substr(line.find(':') + 2);
    }
  }
  return "unknown model";
}

std::string utcNow() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return text;
}

// A profile that runs every collective `candidate`'s way, with `base`'s settings.
tuning::Profile candidateProfile(const tuning::Profile& base, const tune::Candidate& candidate) {
  tuning::Profile p;
  p.name = "tune-" + candidate.name;
  p.settings = base.settings;
  tuning::Rule rule;
  rule.way = candidate.way;
  if (candidate.way == tuning::Way::kInline) {
    rule.whole = candidate.whole;
    rule.chunk = candidate.chunk;
    rule.room = candidate.room;
  }
  p.rules.push_back(rule);
  return p;
}

struct Measured {
  tune::Timed timed;
  std::vector<tune::Point> points;
};

std::string report(const std::vector<Measured>& measured,
                   const std::vector<tune::Candidate>& candidates, double margin) {
  std::ostringstream out;
  out << "# Measured: microseconds per call, the slowest member's mean, the fastest of the "
         "rounds;\n"
         "# '*' marks the way the bands take.\n";
  for (const Measured& m : measured) {
    char line[160];
    std::snprintf(line, sizeof line, "# %-15s %8s", m.timed.name, "bytes");
    out << line;
    for (const auto& c : candidates) {
      std::snprintf(line, sizeof line, " %13s", c.name.c_str());
      out << line;
    }
    out << "\n";
    const std::vector<int> won = tune::winners(m.points, margin);
    for (std::size_t i = 0; i < m.points.size(); ++i) {
      std::snprintf(line, sizeof line, "# %-15s %8s", "",
                    tuning::formatBytes(m.points[i].bytes).c_str());
      out << line;
      for (std::size_t c = 0; c < candidates.size(); ++c) {
        const double us = m.points[i].micros[c];
        if (us < 0) {
          std::snprintf(line, sizeof line, " %13s", "-");
        } else {
          std::snprintf(line, sizeof line, " %12.2f%c", us,
                        won[i] == static_cast<int>(c) ? '*' : ' ');
        }
        out << line;
      }
      out << "\n";
    }
  }
  return out.str();
}

int fail(int rank, const std::string& what) {
  std::cerr << "ftcomm-tune: rank " << rank << ": " << what << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--processor") {
    // Which machine class this is: the key `auto` looks up, and the profile it picks.
    std::cout << tuning::processorKey() << ": auto picks " << tuning::autoProfileName() << "\n";
    return 0;
  }
  const auto options = parse(argc, argv);
  if (!options) {
    std::cerr << kUsage;
    return 2;
  }
  const Options& o = *options;
  const char* rendezvous = std::getenv("FTCOMM_RENDEZVOUS");
  const char* job = std::getenv("FTCOMM_JOB");
  if (rendezvous == nullptr || job == nullptr) {
    std::cerr << "ftcomm-tune: FTCOMM_RENDEZVOUS and FTCOMM_JOB are not set: start it with "
                 "ftcomm-run -np N ftcomm-tune ...\n";
    return 2;
  }
  auto base = tuning::selectProfile(o.base);
  if (!base.ok()) return fail(-1, base.status().toString());

  // One communicator per candidate, all live at once, so that the ways are timed alternately
  // within each round rather than one after another (the machine drifts over a run).
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  std::vector<std::unique_ptr<Communicator>> comms;
  std::vector<tune::Candidate> candidates;
  // The rank count, which the candidates' chunking depends on, is known once a communicator is.
  int rank = -1, ranks = 0;
  {
    CommOptions probe;
    probe.job = std::string(job) + "-tune-0";
    auto created = Communicator::create(probe);
    if (!created.ok()) return fail(-1, created.status().toString());
    rank = (*created)->rank();
    ranks = (*created)->size();
  }
  candidates = tune::candidatesFor(ranks);
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const std::filesystem::path file =
        dir / ("ftcomm-tune-" + std::to_string(::getpid()) + "-" + candidates[i].name + ".rules");
    {
      std::ofstream out(file);
      out << tuning::serialize(candidateProfile(*base, candidates[i]));
    }
    CommOptions copts;
    copts.job = std::string(job) + "-tune-" + std::to_string(i + 1);
    copts.tuning = file.string();
    auto created = Communicator::create(copts);
    std::filesystem::remove(file);
    if (!created.ok()) return fail(rank, created.status().toString());
    comms.push_back(std::move(created).value());
  }

  const unsigned cpus = std::thread::hardware_concurrency();
  const bool oversubscribed = cpus != 0 && static_cast<unsigned>(ranks) > cpus;
  std::vector<Measured> measured;
  for (const tune::Timed& timed : tune::timedCollectives()) {
    Measured m{timed, {}};
    for (const std::size_t bytes : sizesUpTo(o.maxBytes)) {
      tune::Buffers buffers(timed.collective, bytes, ranks);
      tune::Point point{bytes, std::vector<double>(candidates.size(), -1.0)};
      const int calls = tune::callsFor(bytes);
      for (int round = 0; round < o.rounds; ++round) {
        for (std::size_t c = 0; c < candidates.size(); ++c) {
          auto mine = tune::timeCalls(*comms[c], timed.collective, buffers, 2, calls);
          if (!mine.ok()) {
            return fail(rank, std::string(timed.name) + " " + tuning::formatBytes(bytes) + " by " +
                                  candidates[c].name + ": " + mine.status().toString());
          }
          auto all = tune::slowest(*comms[c], *mine);
          if (!all.ok()) return fail(rank, all.status().toString());
          if (point.micros[c] < 0 || *all < point.micros[c]) point.micros[c] = *all;
        }
      }
      if (rank == 0) {
        std::cerr << "ftcomm-tune: " << timed.name << " " << tuning::formatBytes(bytes) << ":";
        for (std::size_t c = 0; c < candidates.size(); ++c) {
          if (point.micros[c] >= 0)
            std::cerr << " " << candidates[c].name << " " << point.micros[c];
        }
        std::cerr << " us\n";
      }
      m.points.push_back(std::move(point));
    }
    measured.push_back(std::move(m));
  }
  comms.clear();
  if (rank != 0) return 0;

  tuning::Profile result;
  result.name = o.name;
  result.settings = base->settings;
  result.description = "calibrated by ftcomm-tune at " + std::to_string(ranks) + " ranks" +
                       (oversubscribed ? " (oversubscribed)" : "") + " on " +
                       tuning::processorKey() + "; other rank counts as " + base->name;
  for (const Measured& m : measured) {
    const tuning::CollectiveMatch match{false, m.timed.collective};
    for (const tuning::Rule& rule : tune::bandsOf(match, ranks, m.points, candidates, o.margin)) {
      result.rules.push_back(rule);
    }
  }
  for (const tuning::Rule& rule : base->rules) result.rules.push_back(rule);

  std::ostringstream text;
  text << "# Written by ftcomm-tune, " << utcNow() << ", on " << cpuModel() << " ("
       << tuning::processorKey() << "), " << ranks << " ranks on " << cpus << " CPUs"
       << (oversubscribed ? ": OVERSUBSCRIBED, the times include waiting for a CPU" : "")
       << ".\n# Rules for " << ranks << " ranks are measured; the rest, and the settings, are the "
       << base->name << " profile's.\n"
       << report(measured, candidates, o.margin) << tuning::serialize(result);
  // What it writes must load as it will be loaded.
  if (auto check = tuning::parseProfile(text.str(), o.out); !check.ok()) {
    return fail(rank, "the profile written does not parse: " + check.status().toString());
  }
  std::ofstream out(o.out);
  out << text.str();
  if (!out.flush()) return fail(rank, "cannot write " + o.out);
  std::cerr << "ftcomm-tune: wrote " << o.out << " (profile " << o.name << ", "
            << tuning::profileHash(result) << ")\n";
  return 0;
}
