#include "rendezvous/launcher/rank_agent.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>

extern char** environ;

namespace ftcomm::launcher {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kTermGrace = std::chrono::seconds(5);

int usageError(const std::string& why) {
  std::cerr << "ftcomm-run --agent: " << why
            << "\nusage: ftcomm-run --agent FIRST COUNT SIZE [--replacement] [--ship-dumps] -- "
               "PROGRAM ARGS...\n";
  return 2;
}

// Writes all of `text` to standard error, however many writes it takes: a report line of up to
// PIPE_BUF bytes in one, so that a rank's output to the same stream never splits it.
void writeAll(const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the launcher is gone
    done += static_cast<std::size_t>(n);
  }
}

// A report line (rank_agent.h): "started", an ending, or a shipped file.
void report(const std::string& text) {
  writeAll(kReportMarker + text + "\n");
}

// Sets the rank's environment, then execs; only async-signal-safe work after fork().
pid_t startRank(const std::vector<char*>& argv, const std::vector<std::string>& env) {
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid > 0) ::setpgid(pid, pid);  // both sides, so that a stop reaches it whoever runs first
  if (pid != 0) return pid;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the agent died before prctl took effect
  ::setpgid(0, 0);  // a terminal's SIGINT goes to the launcher, which ends the job in order
  ::execvpe(argv[0], argv.data(), envp.data());
  ::_exit(127);
}

// This process's environment with `set` added, in place of what it had of those names.
std::vector<std::string> environmentWith(const std::vector<std::string>& set) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool dropped = false;
    for (const auto& s : set) dropped = dropped || s.substr(0, s.find('=')) == name;
    if (!dropped) env.push_back(entry);
  }
  env.insert(env.end(), set.begin(), set.end());
  return env;
}

// Sends this host's dumps of the job (rank_agent.h, --ship-dumps).
void shipDumps() {
  namespace fs = std::filesystem;
  const char* dir = std::getenv("FTCOMM_FR_DIR");
  const char* job = std::getenv("FTCOMM_JOB");
  if (job == nullptr || *job == '\0') return;
  const std::string prefix = std::string(job) + ".";
  std::error_code ec;
  for (const auto& entry :
       fs::directory_iterator(dir != nullptr && *dir != '\0' ? dir : "ftcomm-fr", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || !entry.is_regular_file(ec)) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string line = "file " + name + " ";
    line.reserve(line.size() + 2 * bytes.size());
    for (unsigned char c : bytes) {
      line.push_back(kDigits[c >> 4]);
      line.push_back(kDigits[c & 15]);
    }
    report(line);
  }
}

}  // namespace

std::optional<RankReport> parseReport(const std::string& line) {
  const auto at = line.find(kReportMarker);
  if (at == std::string::npos) return std::nullopt;
  std::istringstream in(line.substr(at + std::strlen(kReportMarker)));
  RankReport r;
  if (line.compare(at + std::strlen(kReportMarker), 7, "started") == 0) {
    r.started = true;
    return r;
  }
  if (line.compare(at + std::strlen(kReportMarker), 5, "file ") == 0) {
    std::string word, hex;
    if (!(in >> word >> r.file >> hex) || hex.size() % 2 != 0) return std::nullopt;
    // A plain file name: nothing may land outside the launcher's dump folder.
    if (r.file.find('/') != std::string::npos || r.file[0] == '.') return std::nullopt;
    auto digit = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
    for (std::size_t i = 0; i < hex.size(); i += 2) {
      if (!std::isxdigit(static_cast<unsigned char>(hex[i])) ||
          !std::isxdigit(static_cast<unsigned char>(hex[i + 1]))) {
        return std::nullopt;
      }
      r.contents.push_back(static_cast<char>(digit(hex[i]) * 16 + digit(hex[i + 1])));
    }
    return r;
  }
  if (!(in >> r.rank >> r.ending)) return std::nullopt;
  if (r.ending == "failed-to-start") {
    r.exited = true;
    r.value = 127;
    r.ending = "exit 127";
    return r;
  }
  if ((r.ending != "exit" && r.ending != "signal") || !(in >> r.value)) return std::nullopt;
  r.exited = r.ending == "exit";
  r.ending += " " + std::to_string(r.value);
  return r;
}

int runRankAgent(const std::vector<std::string>& args) {
  // FIRST COUNT SIZE [--replacement] [--ship-dumps] -- PROGRAM ARGS...
  if (args.size() < 5) return usageError("too few arguments");
  auto number = [](const std::string& text, long lo, long hi, long* out) {
    char* end = nullptr;
    *out = std::strtol(text.c_str(), &end, 10);
    return !text.empty() && *end == '\0' && *out >= lo && *out <= hi;
  };
  std::size_t at = 3;
  const bool replacement = args[at] == "--replacement";
  if (replacement) ++at;
  const bool ship = at < args.size() && args[at] == "--ship-dumps";
  if (ship) ++at;
  // A first launch's ranks lie within 0..SIZE-1; replacements' past it.
  long first = 0, count = 0, size = 0;
  if (!number(args[2], 1, 4096, &size) || !number(args[0], 0, 1 << 20, &first) ||
      !number(args[1], 1, 4096, &count) || (!replacement && first + count > size)) {
    return usageError("FIRST COUNT SIZE must describe ranks within 0..SIZE-1");
  }
  if (at >= args.size() || args[at] != "--" || at + 1 >= args.size()) {
    return usageError("no program: put it after --");
  }
  std::vector<char*> argv;
  for (std::size_t i = at + 1; i < args.size(); ++i)
    argv.push_back(const_cast<char*>(args[i].c_str()));
  argv.push_back(nullptr);

  // The launcher's end of our standard input closing is the order to stop.
  ::signal(SIGPIPE, SIG_IGN);
  std::map<pid_t, int> running;  // pid -> rank
  for (long i = 0; i < count; ++i) {
    const long rank = first + i;
    std::vector<std::string> set = {
        "FTCOMM_RANK=" + std::to_string(rank),    "FTCOMM_WORLD_SIZE=" + std::to_string(size),
        "FTCOMM_LOCAL_RANK=" + std::to_string(i), "FTCOMM_LOCAL_SIZE=" + std::to_string(count),
        "RANK=" + std::to_string(rank),           "WORLD_SIZE=" + std::to_string(size),
        "LOCAL_RANK=" + std::to_string(i),        "LOCAL_WORLD_SIZE=" + std::to_string(count)};
    if (replacement) set.push_back("FTCOMM_REPLACEMENT=1");
    const pid_t pid = startRank(argv, environmentWith(set));
    if (pid < 0) {
      std::cerr << "ftcomm-run --agent: cannot start rank " << rank << ": " << std::strerror(errno)
                << std::endl;
      report(std::to_string(rank) + " failed-to-start");
      continue;
    }
    running[pid] = static_cast<int>(rank);
  }

  report("started");
  bool stopping = false;
  bool watchInput = true;  // false when there is no standard input to watch
  Clock::time_point killAt{};
  while (!running.empty()) {
    int status = 0;
    const pid_t ended = ::waitpid(-1, &status, WNOHANG);
    if (ended > 0) {
      auto it = running.find(ended);
      if (it == running.end()) continue;
      const std::string ending =
          WIFEXITED(status)
              ? "exit " + std::to_string(WEXITSTATUS(status))
              : "signal " + std::to_string(WIFSIGNALED(status) ? WTERMSIG(status) : 0);
      report(std::to_string(it->second) + " " + ending);
      running.erase(it);
      continue;
    }
    if (stopping && Clock::now() >= killAt) {
      for (const auto& [pid, rank] : running) ::kill(-pid, SIGKILL);
      killAt = Clock::now() + std::chrono::hours(1);
    }
    pollfd in{STDIN_FILENO, POLLIN, 0};
    if (::poll(&in, stopping || !watchInput ? 0 : 1, 20) <= 0) continue;
    if ((in.revents & POLLNVAL) != 0) {
      watchInput = false;
      continue;
    }
    char buffer[256];
    const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
      stopping = true;
      killAt = Clock::now() + kTermGrace;
      for (const auto& [pid, rank] : running) ::kill(-pid, SIGTERM);
    }
  }
  if (ship) shipDumps();
  return 0;
}

}  // namespace ftcomm::launcher
