// ftcomm-bench-recovery: how long a job takes to recover from losing a rank. Each trial starts
// N member processes (this program with --member) beside a rendezvous server on loopback; they
// run 8-byte allreduces back to back; once all are running, one member (a random one, rank 0
// included) is SIGKILLed, or SIGSTOPped for the hung-rank case. Every survivor reports the
// CLOCK_MONOTONIC time of its first allreduce completed in the new epoch; the trial's recovery
// time is the latest of those minus the time of the signal. Median and max over the trials.
//
//   ftcomm-bench-recovery --ranks N [--trials T] [--stop] [--lease-ms L] [--json]
//
// With --stop the victim is never seen to exit: only its lease (L ms, default 2000) can find it,
// so the time reported is the lease plus the recovery.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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
  int leaseMs = 2000;
  bool json = false;
};

constexpr const char* kUsage =
    "usage: ftcomm-bench-recovery --ranks N [--trials T] [--stop] [--lease-ms L] [--json]\n";

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
    } else if (flag == "--json") {
      o.json = true;
    } else {
      usage("unknown flag " + flag);
    }
  }
  return o;
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
  RendezvousServerProcess server({"--lease-ms", std::to_string(o.leaseMs)});
  std::mt19937 rng(std::random_device{}());
  std::vector<double> times;
  for (int t = 0; t < o.trials; ++t) {
    const double ms = trial(o, server, argv[0], t, rng);
    if (ms < 0) return 1;
    times.push_back(ms);
    if (!o.json) std::printf("trial %d: %.1f ms\n", t, ms);
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2], worst = times.back();
  if (o.json) {
    std::printf(
        "{\"ranks\":%d,\"trials\":%d,\"case\":\"%s\",\"lease_ms\":%d,\"median_ms\":%.1f,"
        "\"max_ms\":%.1f}\n",
        o.ranks, o.trials, o.stop ? "stop" : "kill", o.leaseMs, median, worst);
  } else {
    std::printf("%d ranks, %s, %d trials: median %.1f ms, max %.1f ms%s\n", o.ranks,
                o.stop ? "SIGSTOP (found by its lease)" : "SIGKILL", o.trials, median, worst,
                o.stop ? (" (lease " + std::to_string(o.leaseMs) + " ms)").c_str() : "");
  }
  return 0;
}
