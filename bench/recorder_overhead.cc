// ftcomm-bench-recorder: what the flight recorder costs an operation on the hot path: record()
// when the operation is scheduled, markStarted, and markCompleted, the last from another thread
// as a progress thread would. Prints nanoseconds per operation, median of repeated batches.
// The budget is 2% of an 8-byte allreduce's latency; the end-to-end comparison with the
// recorder on and off belongs to ftcomm-bench once the communicator exists.
//
//   ftcomm-bench-recorder [--ops N] [--batches B]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench_flags.h"
#include "recorder/flight_recorder.h"

using namespace ftcomm::recorder;
using Clock = std::chrono::steady_clock;

namespace {

OpDescriptor allreduce8(std::uint64_t seq) {
  OpDescriptor op;
  op.commId = 1;
  op.epoch = 1;
  op.seq = seq;
  op.op = pb::ALL_REDUCE;
  op.dtype = pb::FLOAT64;
  op.countIn = op.countOut = 1;
  op.reduceOp = pb::SUM;
  op.algorithm = "recursive_doubling";
  return op;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Everything on the calling thread.
double sameThread(FlightRecorder& recorder, int ops) {
  const auto start = Clock::now();
  for (int i = 0; i < ops; ++i) {
    auto progress = recorder.record(allreduce8(static_cast<std::uint64_t>(i)));
    progress->markStarted();
    progress->markCompleted();
  }
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count() / ops;
}

// Recorded on this thread, completed on a second one (a progress thread) through a handoff slot.
// With `recorder` null the same handoff runs without recording: the baseline to subtract.
double completedElsewhere(FlightRecorder* recorder, int ops) {
  std::atomic<OpProgress*> handoff{nullptr};
  std::atomic<bool> done{false};
  const bool completeIt = recorder != nullptr;
  std::thread progressThread([&] {
    while (!done.load(std::memory_order_acquire)) {
      if (OpProgress* p = handoff.exchange(nullptr, std::memory_order_acq_rel)) {
        if (completeIt) p->markCompleted();
      }
    }
  });
  std::vector<std::shared_ptr<OpProgress>> keep(static_cast<std::size_t>(ops));
  if (recorder == nullptr) {
    for (auto& slot : keep) slot = std::make_shared<OpProgress>();
  }
  const auto start = Clock::now();
  for (int i = 0; i < ops; ++i) {
    auto& slot = keep[static_cast<std::size_t>(i)];
    if (recorder != nullptr) {
      slot = recorder->record(allreduce8(static_cast<std::uint64_t>(i)));
      slot->markStarted();
    }
    OpProgress* expected = nullptr;
    while (!handoff.compare_exchange_weak(expected, keep[static_cast<std::size_t>(i)].get(),
                                          std::memory_order_acq_rel)) {
      expected = nullptr;
    }
  }
  while (handoff.load(std::memory_order_acquire) != nullptr) {
  }
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count() / ops;
  done = true;
  progressThread.join();
  return ns;
}

}  // namespace

int main(int argc, char** argv) {
  constexpr const char* kUsage = "usage: ftcomm-bench-recorder [--ops N] [--batches B]\n";
  int ops = 200000, batches = 9;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (ftcomm::bench::isHelpFlag(flag)) {
      std::cout << kUsage;
      return 0;
    }
    if (flag != "--ops" && flag != "--batches") {
      std::cerr << "ftcomm-bench-recorder: unknown flag " << flag << "\n" << kUsage;
      return 2;
    }
    const std::optional<long> value = ftcomm::bench::wholeNumber(
        i + 1 < argc ? argv[++i] : nullptr, 1, std::numeric_limits<int>::max());
    if (!value) {
      std::cerr << "ftcomm-bench-recorder: " << flag << " takes a positive number\n" << kUsage;
      return 2;
    }
    (flag == "--ops" ? ops : batches) = static_cast<int>(*value);
  }
  FlightRecorder recorder(FlightRecorder::kDefaultCapacity);
  std::vector<double> local, remote, handoffOnly;
  for (int b = 0; b < batches; ++b) {
    local.push_back(sameThread(recorder, ops));
    remote.push_back(completedElsewhere(&recorder, ops));
    handoffOnly.push_back(completedElsewhere(nullptr, ops));
  }
  std::cout << "recorder cost per operation (record + start + complete), median of " << batches
            << " batches of " << ops << ":\n";
  std::cout << "  all on one thread:              " << median(local) << " ns\n";
  std::cout << "  completed on a progress thread: " << median(remote) - median(handoffOnly)
            << " ns (" << median(remote) << " ns minus the bare cross-thread handoff, "
            << median(handoffOnly) << " ns)\n";
  return 0;
}
