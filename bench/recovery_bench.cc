// ftcomm-bench-recovery: how long a job takes to recover from losing a rank. Each trial starts
// N member processes (this program with --member) beside a rendezvous server on loopback; they
// run 8-byte allreduces back to back; once all are running, one member (a random one, rank 0
// included) is SIGKILLed, or SIGSTOPped for the hung-rank case. Every survivor reports the
// CLOCK_MONOTONIC time of its first allreduce completed in the new epoch; the trial's recovery
// time is the latest of those minus the time of the signal. Median and max over the trials.
//
//   ftcomm-bench-recovery --ranks N [--trials T] [--stop] [--lease-ms L] [--json]
//   ftcomm-bench-recovery --nodes K --node-loss [--silent | --whole] --ranks N [--trials T]
//                         [--lease-ms L]
//
// With --stop the victim is never seen to exit: only its lease (L ms, default 2000) can find it,
// so the time reported is the lease plus the recovery.
//
// With --nodes the members run under `ftcomm-run --nodes K` (simulated hosts, N/K ranks each)
// and a whole host is lost: all its ranks killed at once (kill-host), or with --silent its data
// link cut first and then its ranks killed, so that no socket closes and only the lease finds
// them, or with --whole every process of the host killed, its agent included (lose-host, under
// ftcomm-run --launch agents). A random rank asks for the fault at its 300th allreduce; the time
// runs from the launcher's act (its log line) to the last survivor's first allreduce of the new
// epoch.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_flags.h"
#include "child_process.h"
#include "ftcomm/communicator.h"
#include "rendezvous_server_process.h"
#include "temp_dir.h"

using namespace ftcomm;
using namespace ftcomm::testing;
using namespace std::chrono_literals;

namespace {

std::int64_t monotonicNs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A member: allreduces until told otherwise (its stdin closes or it is killed).
int member() {
  auto created = Communicator::create();
  if (!created.ok()) {
    std::cout << "ERROR " << created.status().toString() << std::endl;
    return 1;
  }
  Communicator& c = **created;
  bool told = false, recovering = false;
  for (std::int64_t step = 0;; ++step) {
    double x = 1.0;
    Status s = c.allReduce(&x, &x, 1, DataType::kFloat64, ReduceOp::kSum).wait();
    if (s.ok()) {
      if (!told) {
        std::cout << "READY" << std::endl;
        told = true;
      }
      if (recovering) {
        std::cout << "RECOVERED " << monotonicNs() << " size=" << c.size() << std::endl;
        recovering = false;
      }
      continue;
    }
    auto r = c.reconfigure();
    if (!r.ok()) {
      std::cout << "ERROR reconfigure: " << r.status().toString() << std::endl;
      return 1;
    }
    recovering = true;
  }
}

struct Options {
  int ranks = 4;
  int trials = 5;
  bool stop = false;
  int nodes = 0;
  bool nodeLoss = false;
  bool silent = false;
  bool whole = false;  // --whole: the host with its agent (lose-host)
  int leaseMs = 2000;
  bool json = false;
};

constexpr const char* kUsage =
    "usage: ftcomm-bench-recovery --ranks N [--trials T] [--stop] [--lease-ms L] [--json]\n"
    "       ftcomm-bench-recovery --nodes K --node-loss [--silent | --whole] --ranks N "
    "[--trials T] [--lease-ms L] [--json]\n";

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "ftcomm-bench-recovery: " << why << "\n" << kUsage;
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto number = [&](int lo, int hi) {
      const std::optional<long> v = bench::wholeNumber(i + 1 < argc ? argv[++i] : nullptr, lo, hi);
      if (!v)
        usage(flag + " takes a whole number in " + std::to_string(lo) + ".." + std::to_string(hi));
      return static_cast<int>(*v);
    };
    if (bench::isHelpFlag(flag)) {
      std::cout << kUsage;
      std::exit(0);
    }
    if (flag == "--ranks") {
      o.ranks = number(2, 64);
    } else if (flag == "--trials") {
      o.trials = number(1, 1000);
    } else if (flag == "--lease-ms") {
      o.leaseMs = number(10, 600000);
    } else if (flag == "--stop") {
      o.stop = true;
    } else if (flag == "--nodes") {
      o.nodes = number(2, 64);
    } else if (flag == "--node-loss") {
      o.nodeLoss = true;
    } else if (flag == "--silent") {
      o.silent = true;
    } else if (flag == "--whole") {
      o.whole = true;
    } else if (flag == "--json") {
      o.json = true;
    } else {
      usage("unknown flag " + flag);
    }
  }
  if ((o.nodes > 0) != o.nodeLoss) usage("--nodes and --node-loss go together");
  if ((o.silent || o.whole) && !o.nodeLoss) usage("--silent and --whole are kinds of --node-loss");
  if (o.silent && o.whole) usage("--silent or --whole: pick one");
  if (o.nodeLoss && o.stop) usage("--stop stops one rank; --node-loss loses a host");
  if (o.nodes > 0 && o.ranks % o.nodes != 0) usage("--nodes must divide --ranks");
  if (o.nodes > 0 && o.ranks / o.nodes == o.ranks) usage("--node-loss needs a second host");
  return o;
}

// One trial of a lost host under ftcomm-run --nodes: the recovery time in milliseconds, or a
// negative number when it failed.
double hostTrial(const Options& o, const char* self, std::mt19937& rng) {
  const int victim = std::uniform_int_distribution<int>(0, o.ranks - 1)(rng);
  const std::string fault = "rank=" + std::to_string(victim) + ",op=allreduce,seq=300,action=" +
                            (o.silent  ? "silent"
                             : o.whole ? "lose-host"
                                       : "kill-host");
  const TempDir dir("ftcomm-bench-recovery");
  const std::string log = (dir.path / "launcher.log").string();
  const int survivors = o.ranks - o.ranks / o.nodes;
  std::int64_t latest = 0;
  {
    const auto launcher = std::filesystem::canonical("/proc/self/exe").parent_path() / "ftcomm-run";
    std::vector<std::string> argv = {"/usr/bin/env", "UCX_LOG_LEVEL=error", launcher.string()};
    // mpirun 4.1 ends the job when it loses a host's daemon; agents do not.
    if (o.whole) argv.insert(argv.end(), {"--launch", "agents"});
    argv.insert(argv.end(),
                {"--nodes", std::to_string(o.nodes), "-np", std::to_string(o.ranks), "--lease-ms",
                 std::to_string(o.leaseMs), "--fault", fault, "--", self, "--member"});
    LineProcess run(argv, log);
    for (int i = 0; i < survivors; ++i) {
      auto line = run.waitFor("RECOVERED", 60s);
      if (!line) {
        std::ifstream in(log);
        std::cerr << "the survivors did not all recover: " << run.transcript() << "\n"
                  << in.rdbuf() << "\n";
        return -1;
      }
      latest = std::max<std::int64_t>(latest, std::stoll(line->substr(10)));
    }
    run.child().signal(SIGTERM);
    (void)run.child().waitExit(60s);
  }
  std::ifstream in(log);
  std::int64_t acted = 0;
  for (std::string line; std::getline(in, line);) {
    const auto at = line.find(" done at ");
    if (at != std::string::npos) acted = std::stoll(line.substr(at + 9));
  }
  if (acted == 0) {
    std::cerr << "the launcher never reported the lost host\n";
    return -1;
  }
  return static_cast<double>(latest - acted) / 1e6;
}

// One trial: the recovery time in milliseconds, or a negative number when it failed.
double trial(const Options& o, const RendezvousServerProcess& server, const char* self, int index,
             std::mt19937& rng) {
  std::vector<std::unique_ptr<LineProcess>> members;
  const std::string job = "recovery-" + std::to_string(::getpid()) + "-" + std::to_string(index);
  for (int r = 0; r < o.ranks; ++r) {
    members.push_back(std::make_unique<LineProcess>(std::vector<std::string>{
        "/usr/bin/env", "FTCOMM_RENDEZVOUS=" + server.address(), "FTCOMM_JOB=" + job,
        "FTCOMM_RANK=" + std::to_string(r), "FTCOMM_WORLD_SIZE=" + std::to_string(o.ranks),
        "UCX_LOG_LEVEL=error", self, "--member"}));
  }
  for (auto& m : members) {
    if (!m->waitFor("READY", 60s)) {
      std::cerr << "a member never started: " << m->transcript() << "\n";
      return -1;
    }
  }
  std::this_thread::sleep_for(100ms);  // a few hundred allreduces
  const int victim = std::uniform_int_distribution<int>(0, o.ranks - 1)(rng);
  const std::int64_t signalled = monotonicNs();
  members[static_cast<std::size_t>(victim)]->child().signal(o.stop ? SIGSTOP : SIGKILL);
  std::int64_t latest = 0;
  for (int r = 0; r < o.ranks; ++r) {
    if (r == victim) continue;
    auto line = members[static_cast<std::size_t>(r)]->waitFor("RECOVERED", 60s);
    if (!line) {
      std::cerr << "rank " << r
                << " did not recover: " << members[static_cast<std::size_t>(r)]->transcript()
                << "\n";
      return -1;
    }
    latest = std::max<std::int64_t>(latest, std::stoll(line->substr(10)));
  }
  return static_cast<double>(latest - signalled) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--member") return member();
  const Options o = parse(argc, argv);
  // A lost host's trials run under ftcomm-run, which starts the server in the simulated network.
  std::optional<RendezvousServerProcess> server;
  if (!o.nodeLoss)
    server.emplace(std::vector<std::string>{"--lease-ms", std::to_string(o.leaseMs)});
  std::mt19937 rng(std::random_device{}());
  std::vector<double> times;
  for (int t = 0; t < o.trials; ++t) {
    const double ms = o.nodeLoss ? hostTrial(o, argv[0], rng) : trial(o, *server, argv[0], t, rng);
    if (ms < 0) return 1;
    times.push_back(ms);
    if (!o.json) std::printf("trial %d: %.1f ms\n", t, ms);
  }
  std::sort(times.begin(), times.end());
  const std::string caseName = o.silent     ? "silent-host"
                               : o.nodeLoss ? "host-killed"
                               : o.stop     ? "stop"
                                            : "kill";
  const double median = times[times.size() / 2], worst = times.back();
  if (o.json) {
    std::printf(
        "{\"ranks\":%d,\"nodes\":%d,\"trials\":%d,\"case\":\"%s\",\"lease_ms\":%d,"
        "\"median_ms\":%.1f,\"max_ms\":%.1f}\n",
        o.ranks, o.nodes, o.trials, caseName.c_str(), o.leaseMs, median, worst);
  } else {
    const bool leased = o.stop || o.silent;
    std::printf("%d ranks%s, %s, %d trials: median %.1f ms, max %.1f ms%s\n", o.ranks,
                o.nodes > 0 ? (" on " + std::to_string(o.nodes) + " hosts").c_str() : "",
                o.silent     ? "a silent host (link cut, ranks killed; found by the lease)"
                : o.whole    ? "a whole host lost, its agent included"
                : o.nodeLoss ? "a host's ranks all killed"
                : o.stop     ? "SIGSTOP (found by its lease)"
                             : "SIGKILL",
                o.trials, median, worst,
                leased ? (" (lease " + std::to_string(o.leaseMs) + " ms)").c_str() : "");
  }
  return 0;
}
