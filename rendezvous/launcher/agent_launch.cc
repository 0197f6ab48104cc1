#include "rendezvous/launcher/agent_launch.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "rendezvous/launcher/process.h"
#include "rendezvous/launcher/rank_agent.h"
#include "rendezvous/launcher/rank_wrapper.h"

extern char** environ;

namespace ftcomm::launcher {
namespace {

// `word` as one word of a POSIX shell's command line.
std::string shellQuoted(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_-./=:,@%+") == std::string::npos) {
    return word;
  }
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

namespace {

int ranksOf(const std::vector<AgentHost>& hosts) {
  int total = 0;
  for (const auto& h : hosts) total += h.ranks;
  return total;
}

}  // namespace

AgentLaunch::AgentLaunch(std::vector<AgentHost> hosts, int spares, std::string agent,
                         std::vector<std::string> program)
    : hosts_(std::move(hosts)),
      spares_(spares),
      worldSize_(ranksOf(hosts_)),
      agentPath_(std::move(agent)),
      program_(std::move(program)),
      endings_(worldSize_),
      nextSpare_(static_cast<int>(hosts_.size()) - spares) {}

AgentLaunch::~AgentLaunch() {
  for (Agent& a : agents_) {
    if (a.input >= 0) ::close(a.input);
    if (a.output >= 0) ::close(a.output);
  }
}

std::string AgentLaunch::commandLine(const Agent& agent) const {
  std::string line = "env";
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (name.rfind("FTCOMM_", 0) == 0 || name.rfind("UCX_", 0) == 0)
      line += " " + shellQuoted(entry);
  }
  for (const std::string& word : {agentPath_, std::string("--agent"), std::to_string(agent.first),
                                  std::to_string(agent.count), std::to_string(worldSize_)}) {
    line += " " + shellQuoted(word);
  }
  if (agent.replacement) line += " --replacement";
  if (!dumpFolder_.empty()) line += " --ship-dumps";
  line += " --";
  for (const auto& word : program_) line += " " + shellQuoted(word);
  return line;
}

bool AgentLaunch::startAgent(int host, int first, int count, bool replacement) {
  Agent agent;
  agent.host = host;
  agent.first = first;
  agent.count = count;
  agent.replacement = replacement;
  std::vector<std::string> args = hosts_[host].shell;
  args.push_back(commandLine(agent));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int input[2], output[2];
  if (::pipe2(input, O_CLOEXEC) != 0) return false;
  if (::pipe2(output, O_CLOEXEC) != 0) {
    ::close(input[0]);
    ::close(input[1]);
    return false;
  }
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_adddup2(&actions, input[0], STDIN_FILENO);
  ::posix_spawn_file_actions_adddup2(&actions, output[1], STDERR_FILENO);
  // Its own process group: a terminal's SIGINT reaches the launcher, which stops the job in
  // order.
  posix_spawnattr_t attributes;
  ::posix_spawnattr_init(&attributes);
  ::posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  ::posix_spawnattr_setpgroup(&attributes, 0);
  const int rc = ::posix_spawnp(&agent.pid, argv[0], &actions, &attributes, argv.data(), environ);
  ::posix_spawnattr_destroy(&attributes);
  ::posix_spawn_file_actions_destroy(&actions);
  ::close(input[0]);
  ::close(output[1]);
  if (rc != 0) {
    std::cerr << "ftcomm-run: cannot start " << args[0] << " for host " << hosts_[host].name << ": "
              << std::strerror(rc) << std::endl;
    ::close(input[1]);
    ::close(output[0]);
    return false;
  }
  agent.input = input[1];
  agent.output = output[0];
  ::fcntl(agent.output, F_SETFL, ::fcntl(agent.output, F_GETFL) | O_NONBLOCK);
  std::cerr << "ftcomm-run: host " << hosts_[host].name << ": agent started for ranks " << first
            << ".." << first + count - 1 << (replacement ? " (replacements)" : "") << std::endl;
  agents_.push_back(std::move(agent));
  return true;
}

bool AgentLaunch::start() {
  ::signal(SIGPIPE, SIG_IGN);
  const int used = static_cast<int>(hosts_.size()) - spares_;
  int first = 0;
  for (int h = 0; h < used; ++h) {
    if (hosts_[h].ranks == 0) continue;
    if (!startAgent(h, first, hosts_[h].ranks, false)) {
      stop("an agent did not start");
      return false;
    }
    first += hosts_[h].ranks;
  }
  return true;
}

void AgentLaunch::readOutput(Agent& agent, bool toEnd) {
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(agent.output, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) agent.outputEnded = true;
    if (n <= 0) break;  // the end, or nothing more for now (EAGAIN)
    // Only the new bytes can hold a line's end: a shipped dump is one line of megabytes.
    std::size_t look = agent.pending.size();
    agent.pending.append(buffer, static_cast<std::size_t>(n));
    std::size_t from = 0;
    for (std::size_t nl; (nl = agent.pending.find('\n', look)) != std::string::npos;) {
      takeLine(agent, agent.pending.substr(from, nl - from));
      from = look = nl + 1;
    }
    agent.pending.erase(0, from);
  }
  if (toEnd && !agent.pending.empty()) {
    takeLine(agent, agent.pending);
    agent.pending.clear();
  }
}

void AgentLaunch::takeLine(Agent& agent, const std::string& line) {
  // A rank's unfinished line may precede a report: it goes on as a line of its own.
  const auto marker = line.find(kReportMarker);
  if (marker != 0) std::cerr << line.substr(0, marker) << "\n";
  if (marker == std::string::npos) return;
  const auto report = parseReport(line);
  if (report && report->started) {
    agent.started = true;
    return;
  }
  if (report && !report->file.empty()) {
    if (dumpFolder_.empty()) return;
    // Whole or not at all: written aside, then renamed into place.
    const std::string path = dumpFolder_ + "/" + report->file;
    {
      std::ofstream out(path + ".part", std::ios::binary);
      out << report->contents;
    }
    if (std::rename((path + ".part").c_str(), path.c_str()) != 0) {
      std::cerr << "ftcomm-run: cannot write " << path << std::endl;
    }
    return;
  }
  if (!report || report->rank < agent.first || report->rank >= agent.first + agent.count) return;
  const Ending ending{report->ending,
                      report->exited && report->value != 0 && report->value != kExpelled,
                      report->value};
  endings_[report->rank] = ending;
  std::cerr << "ftcomm-run: " << (agent.replacement ? "replacement rank " : "rank ") << report->rank
            << " on host " << hosts_[agent.host].name << ": " << ending.text << std::endl;
  if (ending.bad) {
    stop("rank " + std::to_string(report->rank) + " ended with exit code " +
         std::to_string(report->value));
  }
}

void AgentLaunch::agentEnded(Agent& agent, int status) {
  agent.ended = true;
  readOutput(agent, true);
  ::close(agent.output);
  ::close(agent.input);
  agent.output = agent.input = -1;
  if (!agent.started) {
    // The remote shell never reached the host (ssh refused, no such host): nothing was lost, and
    // a first launch cannot go on without the host's ranks.
    for (int r = agent.first; r < agent.first + agent.count; ++r) endings_[r].text = "not-started";
    std::cerr << "ftcomm-run: the agent for host " << hosts_[agent.host].name << " did not start ("
              << hosts_[agent.host].shell[0] << " " << describe(status) << ")" << std::endl;
    if (!agent.replacement) {
      unreachable_ = true;
      stop("host " + hosts_[agent.host].name + " is unreachable");
    }
    return;
  }
  std::string lost;
  int lostCount = 0;
  for (int r = agent.first; r < agent.first + agent.count; ++r) {
    if (!endings_[r].text.empty()) continue;
    endings_[r].text = "lost";
    lost += " " + std::to_string(r);
    ++lostCount;
  }
  if (lostCount == 0) return;
  std::cerr << "ftcomm-run: host " << hosts_[agent.host].name << " lost (its agent "
            << describe(status) << "): ranks" << lost << " with it" << std::endl;
  if (stopping_) return;
  if (nextSpare_ >= static_cast<int>(hosts_.size())) {
    std::cerr << "ftcomm-run: no spare host left: the job goes on without them" << std::endl;
    return;
  }
  const int spare = nextSpare_++;
  const int first = static_cast<int>(endings_.size());
  endings_.resize(endings_.size() + lostCount);
  if (!startAgent(spare, first, lostCount, true)) {
    for (int r = first; r < first + lostCount; ++r) endings_[r].text = "not-started";
    std::cerr << "ftcomm-run: the replacements did not start on host " << hosts_[spare].name
              << std::endl;
  }
}

bool AgentLaunch::step(int timeoutMs) {
  std::vector<pollfd> fds;
  std::vector<std::size_t> which;
  bool running = false;
  for (std::size_t i = 0; i < agents_.size(); ++i) {
    if (agents_[i].ended) continue;
    running = true;
    // An output at its end would poll ready at once, again and again, until the agent is reaped.
    if (agents_[i].outputEnded) continue;
    fds.push_back({agents_[i].output, POLLIN, 0});
    which.push_back(i);
  }
  if (!running) return false;
  if (::poll(fds.data(), fds.size(), timeoutMs) > 0) {
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents != 0) readOutput(agents_[which[k]], false);
    }
  }
  // startAgent may grow agents_: index, not iterate.
  for (std::size_t i = 0; i < agents_.size(); ++i) {
    if (agents_[i].ended) continue;
    int status = 0;
    if (::waitpid(agents_[i].pid, &status, WNOHANG) == agents_[i].pid)
      agentEnded(agents_[i], status);
  }
  if (stopping_ && std::chrono::steady_clock::now() >= killAgentsAt_) {
    for (const Agent& a : agents_) {
      if (!a.ended) ::kill(-a.pid, SIGKILL);  // each leads a process group of its own
    }
    killAgentsAt_ = std::chrono::steady_clock::time_point::max();
  }
  return true;
}

void AgentLaunch::stop(const std::string& why) {
  if (stopping_) return;
  stopping_ = true;
  killAgentsAt_ = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  std::cerr << "ftcomm-run: ending the job: " << why << std::endl;
  for (Agent& a : agents_) {
    if (a.input >= 0) {
      ::close(a.input);
      a.input = -1;
    }
  }
}

std::string AgentLaunch::summary() const {
  std::string text = "ranks";
  for (std::size_t r = 0; r < endings_.size(); ++r) {
    if (r == static_cast<std::size_t>(worldSize_)) text += "; replacements";
    text += " " + std::to_string(r) + ":" + endings_[r].text;
  }
  return text;
}

int AgentLaunch::result() const {
  bool ran = false;
  for (const Ending& e : endings_) {
    if (e.bad) return e.code;
    ran = ran || e.text.rfind("exit", 0) == 0 || e.text.rfind("signal", 0) == 0;
  }
  return ran && !unreachable_ ? 0 : 1;
}

}  // namespace ftcomm::launcher
