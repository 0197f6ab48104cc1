// ftcomm-bench-handover: how long one cache line takes to go from one core to another and back,
// the floor under every inline collective (algorithms/shm/inline_collective.h). Two processes,
// pinned to the first two CPUs this one may run on, each write a 64-byte line of shared memory and
// wait for the other's, as an 8-byte allreduce does with nothing else around it. Prints the median
// microseconds per exchange over the batches.
//
// On the project's AMD EPYC Zen 5 VMs the figure moves between two levels in the same boot, from
// one minute to the next (the higher several times the lower), and which of them a benchmark ran
// in decides which of ftcomm's forms won. scripts/bench-report records it before each run.
//
//   ftcomm-bench-handover [--exchanges N] [--batches B]
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "bench_flags.h"

namespace {

using ftcomm::bench::isHelpFlag;
using ftcomm::bench::wholeNumber;
using Clock = std::chrono::steady_clock;

struct alignas(64) Line {
  std::atomic<std::uint64_t> round{0};
};

struct Shared {
  Line lines[2];                          // by process
  alignas(64) double perExchangeUs[256];  // by batch, written by process 0
};

constexpr const char* kUsage = "usage: ftcomm-bench-handover [--exchanges N] [--batches B]\n";

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "ftcomm-bench-handover: %s\n%s", why.c_str(), kUsage);
  std::exit(2);
}

long positive(const char* flag, const char* value) {
  const std::optional<long> n = wholeNumber(value, 1, std::numeric_limits<int>::max());
  if (!n) usage(std::string(flag) + " takes a positive number");
  return *n;
}

// The first two CPUs this process may run on; -1 where there are fewer.
std::vector<int> firstTwoCpus() {
  cpu_set_t allowed;
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return {-1, -1};
  for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  while (cpus.size() < 2) cpus.push_back(-1);
  return cpus;
}

bool pin(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return ::sched_setaffinity(0, sizeof one, &one) == 0;
}

void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// `batches` batches of `exchanges` rounds: write this process's line, wait for the other's.
// Every wait gives up after 10 s (a peer that died).
bool run(Shared& shared, int me, long exchanges, long batches) {
  Line& mine = shared.lines[me];
  const Line& theirs = shared.lines[1 - me];
  std::uint64_t round = 0;
  for (long b = 0; b < batches; ++b) {
    const auto start = Clock::now();
    for (long i = 0; i < exchanges; ++i) {
      ++round;
      mine.round.store(round, std::memory_order_release);
      for (unsigned polls = 0; theirs.round.load(std::memory_order_acquire) < round; ++polls) {
        cpuRelax();
        if (polls % 4096 == 4095 && Clock::now() - start > std::chrono::seconds(10)) return false;
      }
    }
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    if (me == 0) shared.perExchangeUs[b] = us / static_cast<double>(exchanges);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  long exchanges = 100000, batches = 9;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (isHelpFlag(flag)) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    const char* value = i + 1 < argc ? argv[++i] : nullptr;
    if (flag == "--exchanges") {
      exchanges = positive("--exchanges", value);
    } else if (flag == "--batches") {
      batches = positive("--batches", value);
    } else {
      usage("unknown flag " + flag);
    }
  }
  if (batches > 256) usage("--batches takes at most 256");
  const std::vector<int> cpus = firstTwoCpus();
  if (cpus[1] < 0) {
    std::fprintf(stderr, "ftcomm-bench-handover: needs two CPUs to run on, one per process\n");
    return 1;
  }
  void* memory =
      ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    std::perror("ftcomm-bench-handover: mmap");
    return 1;
  }
  auto* shared = new (memory) Shared();
  const pid_t child = ::fork();
  if (child < 0) {
    std::perror("ftcomm-bench-handover: fork");
    return 1;
  }
  const int me = child == 0 ? 1 : 0;
  if (!pin(cpus[static_cast<std::size_t>(me)])) {
    std::fprintf(stderr, "ftcomm-bench-handover: could not pin process %d to CPU %d\n", me,
                 cpus[static_cast<std::size_t>(me)]);
  }
  const bool finished = run(*shared, me, exchanges, batches);
  if (child == 0) std::_Exit(finished ? 0 : 1);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!finished || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "ftcomm-bench-handover: the other process stopped answering\n");
    return 1;
  }
  std::vector<double> us(shared->perExchangeUs, shared->perExchangeUs + batches);
  std::sort(us.begin(), us.end());
  std::printf("line hand-over: %.3f us per exchange (median of %ld batches of %ld; %.3f-%.3f)\n",
              us[us.size() / 2], batches, exchanges, us.front(), us.back());
  return 0;
}
