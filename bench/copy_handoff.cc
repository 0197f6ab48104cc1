// ftcomm-bench-copy: a buffer handed from one process to another through shared memory, as the
// shared-memory path streams it: the writer (pinned to CPU 0) copies its buffer into the shared
// one in chunks, publishing each; the reader (CPU 1) copies each published chunk out. Both copy
// with glibc's memcpy or with ftcomm's copyBytes (transport/copy_bytes.h), the two alternating
// batch by batch. Prints the median time from the writer's first byte to the reader's last, and
// the ratio memcpy / copyBytes.
//
//   ftcomm-bench-copy [--bytes KiB] [--chunk KiB] [--shared-offset B] [--private-offset B]
//                     [--batches N]
// --chunk 0 hands the whole buffer over at once; the offsets move the shared buffer and the
// processes' own buffers off their 64-byte boundaries.
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "bench_flags.h"
#include "transport/copy_bytes.h"

namespace {

using ftcomm::bench::isHelpFlag;
using ftcomm::bench::wholeNumber;
using Clock = std::chrono::steady_clock;
using Copy = void (*)(void*, const void*, std::size_t);

struct Options {
  std::size_t bytes = 1 << 20;
  std::size_t chunk = 64 << 10;
  std::size_t sharedOffset = 0;
  std::size_t privateOffset = 0;
  int batches = 10;
};

struct alignas(64) Control {
  std::atomic<long> published{0};             // chunks the writer has published, over all rounds
  alignas(64) std::atomic<long> consumed{0};  // rounds the reader has finished
};

constexpr const char* kUsage =
    "usage: ftcomm-bench-copy [--bytes KiB] [--chunk KiB] [--shared-offset B] "
    "[--private-offset B] [--batches N]\n";

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "ftcomm-bench-copy: %s\n%s", why.c_str(), kUsage);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (isHelpFlag(flag)) {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    // The flag's value, read only for a flag it knows (an unknown one is named as such).
    auto value = [&]() -> std::size_t {
      const std::optional<long> number =
          wholeNumber(i + 1 < argc ? argv[++i] : nullptr, 0, std::numeric_limits<int>::max());
      if (!number) usage(flag + " takes a whole number, not negative");
      return static_cast<std::size_t>(*number);
    };
    if (flag == "--bytes")
      o.bytes = value() << 10;
    else if (flag == "--chunk")
      o.chunk = value() << 10;
    else if (flag == "--shared-offset")
      o.sharedOffset = value();
    else if (flag == "--private-offset")
      o.privateOffset = value();
    else if (flag == "--batches")
      o.batches = static_cast<int>(value());
    else
      usage("unknown flag " + flag);
  }
  if (o.bytes == 0 || o.bytes > (std::size_t{1} << 30)) usage("--bytes must be in 1..1048576");
  if (o.chunk == 0 || o.chunk > o.bytes) o.chunk = o.bytes;
  if (o.sharedOffset > 4095 || o.privateOffset > 4095) usage("offsets must be below 4096");
  if (o.batches < 1) usage("--batches must be positive");
  return o;
}

void pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  (void)sched_setaffinity(0, sizeof set, &set);
}

double microsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

void copyWithMemcpy(void* to, const void* from, std::size_t bytes) {
  std::memcpy(to, from, bytes);
}

// One batch of `rounds` hand-offs with `copy`; returns each round's time, measured by the
// writer. The reader is a child process that leaves when the batch ends.
std::vector<double> batch(const Options& o, Copy copy, Control* control, unsigned char* shared,
                          int rounds) {
  const long chunks = static_cast<long>((o.bytes + o.chunk - 1) / o.chunk);
  control->published.store(0);
  control->consumed.store(0);
  const pid_t reader = fork();
  if (reader < 0) usage("fork failed");
  if (reader == 0) {
    pinTo(1);
    std::vector<unsigned char> own(o.bytes + o.privateOffset);
    unsigned char* out = own.data() + o.privateOffset;
    for (long round = 0; round < rounds; ++round) {
      for (long c = 0; c < chunks; ++c) {
        while (control->published.load(std::memory_order_acquire) < round * chunks + c + 1)
          __builtin_ia32_pause();
        const std::size_t at = static_cast<std::size_t>(c) * o.chunk;
        copy(out + at, shared + at, std::min(o.chunk, o.bytes - at));
      }
      control->consumed.store(round + 1, std::memory_order_release);
    }
    _exit(0);
  }
  pinTo(0);
  std::vector<unsigned char> own(o.bytes + o.privateOffset, 1);
  unsigned char* in = own.data() + o.privateOffset;
  std::vector<double> times;
  for (long round = 0; round < rounds; ++round) {
    for (std::size_t i = 0; i < o.bytes; i += 4096) in[i] = static_cast<unsigned char>(round);
    const auto start = Clock::now();
    for (long c = 0; c < chunks; ++c) {
      const std::size_t at = static_cast<std::size_t>(c) * o.chunk;
      copy(shared + at, in + at, std::min(o.chunk, o.bytes - at));
      control->published.store(round * chunks + c + 1, std::memory_order_release);
    }
    while (control->consumed.load(std::memory_order_acquire) < round + 1) __builtin_ia32_pause();
    times.push_back(microsSince(start));
  }
  (void)waitpid(reader, nullptr, 0);
  return times;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const std::size_t mapped = 4096 + o.bytes + o.sharedOffset;
  void* region = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) usage("mmap failed");
  auto* control = new (region) Control;
  unsigned char* shared = static_cast<unsigned char*>(region) + 4096 + o.sharedOffset;
  std::memset(shared, 0, o.bytes);
  const int rounds = static_cast<int>(std::clamp<std::size_t>((256u << 20) / o.bytes, 20, 2000));
  std::vector<double> withMemcpy, withCopyBytes;
  for (int b = 0; b < o.batches; ++b) {
    for (double t : batch(o, copyWithMemcpy, control, shared, rounds)) withMemcpy.push_back(t);
    for (double t : batch(o, ftcomm::transport::copyBytes, control, shared, rounds))
      withCopyBytes.push_back(t);
  }
  const double a = median(withMemcpy), b = median(withCopyBytes);
  std::printf(
      "%10zu B in %zu B chunks, offsets %zu/%zu: memcpy %9.1f us  copyBytes %9.1f us"
      "  (%.2f GB/s)  memcpy/copyBytes %.2f\n",
      o.bytes, o.chunk, o.sharedOffset, o.privateOffset, a, b,
      static_cast<double>(o.bytes) / b / 1e3, a / b);
  munmap(region, mapped);
  return 0;
}
