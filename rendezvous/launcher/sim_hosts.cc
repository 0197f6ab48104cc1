#include "rendezvous/launcher/sim_hosts.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>
#include <tuple>

#include "rendezvous/launcher/process.h"

namespace ftcomm::launcher {
namespace {

namespace fs = std::filesystem;

constexpr const char* kNamespaceDir = "/run/netns";
constexpr const char* kPrefix = "ftc-";
constexpr int kMaxHosts = 200;

// The processes whose network namespace is the named one.
std::vector<pid_t> processesIn(const std::string& name) {
  struct stat target {};
  if (::stat((std::string(kNamespaceDir) + "/" + name).c_str(), &target) != 0) return {};
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    struct stat ns {};
    if (::stat((entry.path() / "ns/net").c_str(), &ns) == 0 && ns.st_ino == target.st_ino &&
        ns.st_dev == target.st_dev) {
      found.push_back(static_cast<pid_t>(std::atol(pid.c_str())));
    }
  }
  return found;
}

// Kills what runs in the namespace, then deletes it.
void deleteNamespace(const std::string& name, const std::string& log) {
  for (int round = 0; round < 50; ++round) {
    const auto pids = processesIn(name);
    if (pids.empty()) break;
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  runQuietly({"ip", "netns", "delete", name}, log);
}

// tbf wants a burst and a latency (or limit); a spec naming only the rate gets sound ones.
std::vector<std::string> tbfArguments(const std::string& shape) {
  std::vector<std::string> words;
  std::istringstream in(shape);
  for (std::string w; in >> w;) words.push_back(w);
  auto has = [&](const char* word) {
    for (const auto& w : words) {
      if (w == word) return true;
    }
    return false;
  };
  if (!has("burst") && !has("buffer") && !has("maxburst")) {
    words.insert(words.end(), {"burst", "1mb"});
  }
  if (!has("latency") && !has("limit")) words.insert(words.end(), {"latency", "10ms"});
  return words;
}

}  // namespace

std::string SimulatedHosts::ownPrefix() {
  return kPrefix + std::to_string(::getpid());
}

void SimulatedHosts::sweepLeftovers() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(kNamespaceDir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0) continue;
    const std::string rest = name.substr(std::string(kPrefix).size());
    const long owner = std::atol(rest.substr(0, rest.find('-')).c_str());
    if (owner <= 0 || (::kill(static_cast<pid_t>(owner), 0) != 0 && errno == ESRCH)) {
      deleteNamespace(name, "/dev/null");
    }
  }
}

std::string SimulatedHosts::hostNamespace(int host) const {
  return prefix_ + "-h" + std::to_string(host);
}

std::string SimulatedHosts::controlAddress(int host) {
  return "10.10.0." + std::to_string(host < 0 ? 1 : 11 + host);
}

std::string SimulatedHosts::dataAddress(int host) {
  return "10.20.0." + std::to_string(host < 0 ? 1 : 11 + host);
}

std::string SimulatedHosts::bridgeDataPort(int host) {
  return "d" + (host < 0 ? std::string("h") : std::to_string(host));
}

int SimulatedHosts::hostOfControlAddress(const std::string& address) {
  const std::string subnet = "10.10.0.";
  if (address.rfind(subnet, 0) != 0) return -1;
  const std::string last = address.substr(subnet.size());
  if (last.empty() || last.find_first_not_of("0123456789") != std::string::npos) return -1;
  const int host = std::atoi(last.c_str()) - 11;
  return host >= 0 && host < kMaxHosts ? host : -1;
}

int SimulatedHosts::hostsOf(const std::string& prefix) {
  int hosts = 0;
  std::error_code ec;
  while (hosts < kMaxHosts &&
         fs::exists(fs::path(kNamespaceDir) / (prefix + "-h" + std::to_string(hosts)), ec)) {
    ++hosts;
  }
  return hosts;
}

std::vector<int> SimulatedHosts::hostCpus(int host, int hosts, const std::vector<int>& cpus) {
  if (cpus.empty() || hosts < 1 || host < 0 || host >= hosts) return cpus;
  const std::size_t n = cpus.size(), k = static_cast<std::size_t>(hosts),
                    h = static_cast<std::size_t>(host);
  if (n < k) return {cpus[h % n]};
  return std::vector<int>(cpus.begin() + static_cast<std::ptrdiff_t>(h * n / k),
                          cpus.begin() + static_cast<std::ptrdiff_t>((h + 1) * n / k));
}

std::string SimulatedHosts::hostfile(int slots) const {
  std::string text;
  for (int h = 0; h < hosts_; ++h) {
    text += controlAddress(h) + " slots=" + std::to_string(slots) + "\n";
  }
  return text;
}

bool SimulatedHosts::run(const std::vector<std::string>& args) {
  return runQuietly(args, log_);
}

std::string SimulatedHosts::create(int hosts, const std::string& shape, const std::string& log) {
  if (hosts < 1 || hosts > kMaxHosts) {
    return "--nodes wants 1.." + std::to_string(kMaxHosts) + " hosts";
  }
  if (::geteuid() != 0) return "simulated hosts need root, to make network namespaces";
  prefix_ = ownPrefix();
  log_ = log;
  const std::string net = bridgeNamespace();
  if (!run({"ip", "netns", "add", net})) {
    return "cannot make network namespaces here ('ip netns add' failed; see " + log + ")";
  }
  made_.push_back(net);
  for (const char* bridge : {"ctl", "data"}) {
    if (!run({"ip", "-n", net, "link", "add", bridge, "type", "bridge"}) ||
        !run({"ip", "-n", net, "link", "set", bridge, "up"})) {
      destroy();
      return std::string("cannot make the ") + bridge + " bridge (see " + log + ")";
    }
  }
  std::string why = addHost(headNamespace(), "h", -1, "");
  for (int h = 0; h < hosts && why.empty(); ++h) {
    why = addHost(hostNamespace(h), std::to_string(h), h, shape);
  }
  if (!why.empty()) {
    destroy();
    return why;
  }
  hosts_ = hosts;
  return "";
}

std::string SimulatedHosts::addHost(const std::string& ns, const std::string& tag, int host,
                                    const std::string& shape) {
  const std::string net = bridgeNamespace();
  const std::string where =
      " for " + (host < 0 ? std::string("the head") : "host " + tag) + " (see " + log_ + ")";
  if (!run({"ip", "netns", "add", ns})) return "cannot make a network namespace" + where;
  made_.push_back(ns);
  for (const auto& [port, inside, bridge, address] :
       {std::tuple{"c" + tag, "ctl0", "ctl", controlAddress(host)},
        std::tuple{"d" + tag, kDataInterface, "data", dataAddress(host)}}) {
    if (!run({"ip", "-n", net, "link", "add", port, "type", "veth", "peer", "name", inside, "netns",
              ns}) ||
        !run({"ip", "-n", net, "link", "set", port, "master", bridge, "up"}) ||
        !run({"ip", "-n", ns, "addr", "add", address + "/24", "dev", inside}) ||
        !run({"ip", "-n", ns, "link", "set", inside, "up"})) {
      return std::string("cannot make the ") + bridge + " link" + where;
    }
  }
  if (!run({"ip", "-n", ns, "link", "set", "lo", "up"})) return "cannot raise loopback" + where;
  if (shape.empty()) return "";
  const auto tbf = tbfArguments(shape);
  for (const auto& [space, device] :
       {std::pair{ns, std::string(kDataInterface)}, std::pair{net, bridgeDataPort(host)}}) {
    std::vector<std::string> args = {"tc",  "-n",   space,  "qdisc", "add",
                                     "dev", device, "root", "tbf"};
    args.insert(args.end(), tbf.begin(), tbf.end());
    if (!run(args)) {
      shapeRefused_ = true;
      return "tc could not shape the data link with tbf '" + shape + "'" + where;
    }
  }
  return "";
}

bool SimulatedHosts::setDataLink(int host, bool up) {
  return run(
      {"ip", "-n", bridgeNamespace(), "link", "set", bridgeDataPort(host), up ? "up" : "down"});
}

int SimulatedHosts::killRanks(int host) {
  auto commandLine = [](pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return text;
  };
  auto parentOf = [](pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
    const auto close = text.rfind(')');
    if (close == std::string::npos) return pid_t{-1};
    std::istringstream rest(text.substr(close + 1));
    std::string state;
    long ppid = -1;
    rest >> state >> ppid;
    return static_cast<pid_t>(ppid);
  };
  // argv[1] of a rank wrapper (under mpirun) or of a host's agent (--launch agents); mpirun's
  // own command line names the option further on.
  auto startsRanks = [](const std::string& argv) {
    const auto first = argv.find('\0');
    if (first == std::string::npos) return false;
    for (const std::string& option :
         {std::string("--rank-wrapper\0", 15), std::string("--agent\0", 8)}) {
      if (argv.compare(first + 1, option.size(), option) == 0) return true;
    }
    return false;
  };
  int killed = 0;
  for (pid_t pid : processesIn(hostNamespace(host))) {
    const pid_t parent = parentOf(pid);
    if (parent > 0 && startsRanks(commandLine(parent)) && !startsRanks(commandLine(pid))) {
      killed += ::kill(pid, SIGKILL) == 0 ? 1 : 0;
    }
  }
  return killed;
}

int SimulatedHosts::killHost(int host) {
  int killed = 0;
  for (pid_t pid : processesIn(hostNamespace(host))) killed += ::kill(pid, SIGKILL) == 0 ? 1 : 0;
  return killed;
}

void SimulatedHosts::destroy() {
  // Hosts first: their processes die before the links they use disappear.
  for (auto it = made_.rbegin(); it != made_.rend(); ++it) deleteNamespace(*it, log_);
  made_.clear();
  hosts_ = 0;
}

}  // namespace ftcomm::launcher
