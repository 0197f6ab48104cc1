#include "core/fault_injection.h"

#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

#include "recorder/flight_recorder.h"

namespace ftcomm::detail {

namespace {

std::vector<std::string> splitOn(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t next = text.find(separator, at);
    parts.push_back(text.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) break;
    at = next + 1;
  }
  return parts;
}

bool parseNumber(const std::string& text, long long lo, long long hi, long long* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

Status bad(const std::string& spec, const std::string& why) {
  return invalidArgument(
      "FTCOMM_FAULT: '" + spec + "': " + why +
      " (SPEC = rank=R,op=OP,seq=S,action=kill|stop|hang|delay:MS|drop-conn|"
      "exit:CODE|cut-link[:MS]|silent|kill-host|lose-host|cut-rendezvous:MS; several "
      "separated by "
      "';')");
}

const char* actionName(FaultInjector::Action action) {
  switch (action) {
    case FaultInjector::Action::kKill:
      return "kill";
    case FaultInjector::Action::kStop:
      return "stop";
    case FaultInjector::Action::kHang:
      return "hang";
    case FaultInjector::Action::kDelay:
      return "delay";
    case FaultInjector::Action::kDropConnection:
      return "drop-conn";
    case FaultInjector::Action::kExit:
      return "exit";
    case FaultInjector::Action::kCutLink:
      return "cut-link";
    case FaultInjector::Action::kSilent:
      return "silent";
    case FaultInjector::Action::kKillHost:
      return "kill-host";
    case FaultInjector::Action::kLoseHost:
      return "lose-host";
    case FaultInjector::Action::kCutRendezvous:
      return "cut-rendezvous";
  }
  return "?";
}

// Asks ftcomm-run (--nodes) to act on this process's host: writes request.RANK in its control
// folder and waits for done.RANK.
void askLauncher(const std::string& request, int launchRank) {
  const char* dir = std::getenv("FTCOMM_RUN_CONTROL");
  if (dir == nullptr || *dir == '\0') return;
  const std::string base = std::string(dir) + "/";
  const std::string rank = std::to_string(launchRank);
  { std::ofstream(base + "request." + rank + ".tmp") << request << "\n"; }
  std::rename((base + "request." + rank + ".tmp").c_str(), (base + "request." + rank).c_str());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!std::ifstream(base + "done." + rank)) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::cerr << "ftcomm: fault injection: ftcomm-run did not act on '" << request
                << "' within 10 s; going on" << std::endl;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

std::string faultOpName(const std::string& callName) {
  std::string name;
  for (char c : callName) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return name;
}

Result<std::vector<FaultInjector::Spec>> FaultInjector::parse(const std::string& text) {
  std::vector<Spec> specs;
  for (const std::string& spec : splitOn(text, ';')) {
    if (spec.empty()) continue;
    Spec s;
    bool haveRank = false, haveOp = false, haveSeq = false, haveAction = false;
    for (const std::string& field : splitOn(spec, ',')) {
      const std::size_t eq = field.find('=');
      if (eq == std::string::npos) return bad(spec, "'" + field + "' is not KEY=VALUE");
      const std::string key = field.substr(0, eq), value = field.substr(eq + 1);
      long long n = 0;
      if (key == "rank") {
        if (!parseNumber(value, 0, 1 << 20, &n)) return bad(spec, "rank must be 0..2^20");
        s.rank = static_cast<int>(n);
        haveRank = true;
      } else if (key == "op") {
        s.op = faultOpName(value);
        if (s.op.empty()) return bad(spec, "op is empty");
        haveOp = true;
      } else if (key == "seq") {
        if (!parseNumber(value, 0, 1LL << 40, &n)) return bad(spec, "seq must be a number");
        s.seq = static_cast<std::uint64_t>(n);
        haveSeq = true;
      } else if (key == "action") {
        haveAction = true;
        const std::size_t colon = value.find(':');
        const std::string verb = value.substr(0, colon);
        const std::string arg = colon == std::string::npos ? "" : value.substr(colon + 1);
        if (verb == "kill") {
          s.action = Action::kKill;
        } else if (verb == "stop") {
          s.action = Action::kStop;
        } else if (verb == "hang") {
          s.action = Action::kHang;
        } else if (verb == "drop-conn") {
          s.action = Action::kDropConnection;
        } else if (verb == "delay") {
          if (!parseNumber(arg, 0, 3600000, &n)) return bad(spec, "delay wants :MS (0..3600000)");
          s.action = Action::kDelay;
          s.argument = static_cast<int>(n);
        } else if (verb == "cut-link" || verb == "silent" || verb == "kill-host" ||
                   verb == "lose-host" || verb == "cut-rendezvous") {
          const char* control = std::getenv("FTCOMM_RUN_CONTROL");
          if (control == nullptr || *control == '\0') {
            return bad(spec,
                       "'" + verb + "' acts on a simulated host: run under ftcomm-run --nodes");
          }
          const bool timed = verb == "cut-link" || verb == "cut-rendezvous";
          if (!timed && !arg.empty()) return bad(spec, "'" + verb + "' takes no argument");
          if (verb == "cut-rendezvous" && arg.empty()) {
            return bad(spec, "'cut-rendezvous' needs :MS, how long the cut lasts");
          }
          if (!arg.empty() && !parseNumber(arg, 1, 3600000, &n)) {
            return bad(spec, "'" + verb + "' wants :MS (1..3600000)");
          }
          s.action = verb == "silent"           ? Action::kSilent
                     : verb == "kill-host"      ? Action::kKillHost
                     : verb == "lose-host"      ? Action::kLoseHost
                     : verb == "cut-rendezvous" ? Action::kCutRendezvous
                                                : Action::kCutLink;
          s.argument = arg.empty() ? 0 : static_cast<int>(n);
        } else if (verb == "exit") {
          if (!parseNumber(arg, 0, 255, &n)) return bad(spec, "exit wants :CODE (0..255)");
          s.action = Action::kExit;
          s.argument = static_cast<int>(n);
        } else {
          return bad(spec, "unknown action '" + value + "'");
        }
        const bool optional = s.action == Action::kCutLink || s.action == Action::kSilent ||
                              s.action == Action::kKillHost || s.action == Action::kLoseHost ||
                              s.action == Action::kCutRendezvous;
        if (!optional && (s.action == Action::kDelay || s.action == Action::kExit) != !arg.empty())
          return bad(spec, "'" + verb + "' " + (arg.empty() ? "needs" : "takes no") + " argument");
      } else {
        return bad(spec, "unknown key '" + key + "'");
      }
    }
    if (!haveRank || !haveOp || !haveSeq || !haveAction)
      return bad(spec, "rank, op, seq and action are all required");
    specs.push_back(std::move(s));
  }
  return specs;
}

FaultInjector& FaultInjector::process() {
  static FaultInjector* injector = [] {
    auto* f = new FaultInjector();
    if (const char* text = std::getenv("FTCOMM_FAULT"); text != nullptr && *text != '\0') {
      auto specs = parse(text);
      if (specs.ok()) {
        f->specs_ = std::move(specs).value();
      } else {
        f->status_ = specs.status();
      }
    }
    return f;
  }();
  return *injector;
}

void FaultInjector::at(const std::string& op, int launchRank, std::uint64_t commId,
                       std::uint64_t epoch, std::uint64_t seq,
                       const std::function<void()>& dropConnection) {
  if (specs_.empty()) return;
  Spec fired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    bool found = false;
    for (Spec& s : specs_) {
      if (s.fired || s.rank != launchRank || s.seq != seq || s.op != faultOpName(op)) continue;
      s.fired = true;
      fired = s;
      found = true;
      break;
    }
    if (!found) return;
  }
  const std::string what = "fault injection: rank " + std::to_string(launchRank) + " " + fired.op +
                           " seq " + std::to_string(seq) + ": " + actionName(fired.action) +
                           (fired.argument != 0 ? ":" + std::to_string(fired.argument) : "");
  std::cerr << "ftcomm: " << what << std::endl;
  recorder::OpDescriptor d;
  d.commId = commId;
  d.epoch = epoch;
  d.seq = seq;
  d.op = recorder::v1::FAULT_INJECTED;
  d.countIn = static_cast<std::uint64_t>(fired.argument);
  if (auto progress = recorder::FlightRecorder::process().record(d)) {
    progress->markStarted();
    progress->markFailed(what);
  }
  switch (fired.action) {
    case Action::kKill:
      ::raise(SIGKILL);
      break;
    case Action::kStop:
      ::raise(SIGSTOP);
      break;
    case Action::kHang:
      while (true) std::this_thread::sleep_for(std::chrono::hours(1));
    case Action::kDelay:
      std::this_thread::sleep_for(std::chrono::milliseconds(fired.argument));
      break;
    case Action::kDropConnection:
      if (dropConnection) dropConnection();
      break;
    case Action::kExit:
      std::_Exit(fired.argument);
    case Action::kCutLink:
      askLauncher("cut-link " + std::to_string(fired.argument), launchRank);
      break;
    case Action::kSilent:
      askLauncher("silent", launchRank);
      break;
    case Action::kKillHost:
      askLauncher("kill-host", launchRank);
      break;
    case Action::kLoseHost:
      askLauncher("lose-host", launchRank);
      break;
    case Action::kCutRendezvous:
      askLauncher("cut-rendezvous " + std::to_string(fired.argument), launchRank);
      break;
  }
}

}  // namespace ftcomm::detail
