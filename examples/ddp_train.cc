// ddp_train: data-parallel SGD on a synthetic linear regression, the way a training job uses
// ftcomm. Every step each rank computes the gradient of the mean squared error on its shard,
// the ranks allreduce it, and every replica takes the same step. When a rank dies, the
// survivors reconfigure the communicator in place, re-shard the data for the new world size,
// take the weights from rank 0 and go on; a replacement that joins gets them the same way.
//
//   ftcomm-run -np 4 [--fault ...] -- ddp_train [--steps N] [--step-ms MS]
//
// Each step, on the world communicator: the gradient allreduce; a broadcast of the step's
// learning rate from rank 0 (rank 0 owns the schedule); an all-to-all of the ranks' sample
// counts (a consistency check of the sharding); and an allreduce of "are replacements
// waiting?". After creation's wire-up (sequence number 1) and the split below (2), step k's
// operations are sequence numbers 3+4k .. 6+4k, which is what FTCOMM_FAULT's seq names. The
// world is also split into two groups (rank % 2) that report their own mean loss, and split
// again after every reconfigure (children do not survive one).
//
// Rank 0 prints the loss per step. The last line: the final and first loss, the world-size
// history, and whether every replica holds identical weights (an allreduce of a checksum, MIN
// against MAX).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ftcomm/communicator.h"

using namespace ftcomm;

namespace {

constexpr int kDim = 16;
constexpr int kSamples = 8192;
constexpr double kLearningRate = 0.05;

// Sample i of the data set, the same in every process: features x and target y.
void sample(int i, double* x, double* y) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(i) * 7919 + 17);
  std::normal_distribution<double> normal(0.0, 1.0);
  double target = 0.0;
  for (int d = 0; d < kDim; ++d) {
    x[d] = normal(rng);
    target += x[d] * (0.5 + 0.25 * d);  // the true weights
  }
  *y = target + 0.1 * normal(rng);
}

// The state every replica holds: the step to run next and the weights.
struct Model {
  double step = 0;
  double w[kDim] = {};
};

// Sum over this rank's shard (samples i with i % size == rank) of the squared error and its
// gradient: out[0..kDim) gradient sums, out[kDim] the squared-error sum, out[kDim+1] the count.
void localGradient(const Model& m, int rank, int size, double* out) {
  std::memset(out, 0, sizeof(double) * (kDim + 2));
  double x[kDim], y = 0;
  for (int i = rank; i < kSamples; i += size) {
    sample(i, x, &y);
    double prediction = 0;
    for (int d = 0; d < kDim; ++d) prediction += m.w[d] * x[d];
    const double error = prediction - y;
    for (int d = 0; d < kDim; ++d) out[d] += 2 * error * x[d];
    out[kDim] += error * error;
    out[kDim + 1] += 1;
  }
}

std::uint64_t checksum(const Model& m) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(m.w);
  for (std::size_t i = 0; i < sizeof m.w; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return h >> 1;  // fits int64
}

int flagValue(const char* name, int fallback, int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = flagValue("--steps", 60, argc, argv);
  const int stepMs = flagValue("--step-ms", 20, argc, argv);
  auto created = Communicator::create();
  if (!created.ok()) {
    std::fprintf(stderr, "ddp_train: %s\n", created.status().toString().c_str());
    return 1;
  }
  Communicator& comm = **created;
  Model model;
  std::string history = std::to_string(comm.size());
  int recoveries = 0;
  // The weights and the step come from rank 0 (a survivor) after every reconfigure, and to a
  // replacement when it arrives: the step that failed may have completed on some ranks only.
  auto sync = [&]() {
    return comm.shareState(&model, sizeof model / 8, DataType::kFloat64).wait();
  };
  auto recover = [&](const Status& why) -> bool {
    if (why.ok()) {
      if (comm.rank() == 0) std::printf("admitting replacements\n");
    } else {
      std::printf("rank %d: step %d failed: %s\n", comm.rank(), static_cast<int>(model.step),
                  why.toString().c_str());
    }
    for (int attempt = 0; attempt < 5; ++attempt) {
      auto r = comm.reconfigure();
      if (!r.ok()) {
        std::fprintf(stderr, "ddp_train: reconfigure: %s\n", r.status().toString().c_str());
        return false;
      }
      history += ">" + std::to_string(r->size);
      ++recoveries;
      if (sync().ok()) {
        if (comm.rank() == 0)
          std::printf("reconfigured: epoch %llu, %d ranks%s; resuming at step %d\n",
                      static_cast<unsigned long long>(r->epoch), r->size,
                      r->admitted.empty() ? "" : " (replacements admitted)",
                      static_cast<int>(model.step));
        return true;
      }
    }
    return false;
  };
  if (comm.joinedAsReplacement() && !sync().ok()) return 1;

  double loss = 0, firstLoss = -1;
  std::unique_ptr<Communicator> group;
  while (model.step < steps) {
    Status s;
    if (!group) {
      auto split = comm.split(comm.rank() % 2, comm.rank());
      if (split.ok()) {
        group = std::move(split).value();
      } else {
        s = split.status();
      }
    }
    double buffer[kDim + 2];
    double rate = 0, localCount = 0;
    if (s.ok()) {
      localGradient(model, comm.rank(), comm.size(), buffer);
      localCount = buffer[kDim + 1];
      s = comm.allReduce(buffer, buffer, kDim + 2, DataType::kFloat64, ReduceOp::kSum).wait();
    }
    if (s.ok()) {
      rate = kLearningRate * (model.step < steps / 2 ? 1.0 : 0.5);
      s = comm.broadcast(&rate, 1, DataType::kFloat64, 0).wait();
    }
    if (s.ok()) {
      std::vector<std::int32_t> mine(static_cast<std::size_t>(comm.size()),
                                     static_cast<std::int32_t>(localCount));
      std::vector<std::int32_t> theirs(mine.size(), 0);
      s = comm.allToAll(mine.data(), theirs.data(), 1, DataType::kInt32).wait();
      std::int64_t total = 0;
      for (std::int32_t n : theirs) total += n;
      if (s.ok() && total != kSamples) {
        std::fprintf(stderr, "ddp_train: the shards hold %lld samples, not %d\n",
                     static_cast<long long>(total), kSamples);
        return 1;
      }
    }
    if (s.ok()) {
      double groupLoss[2] = {buffer[kDim], localCount};
      // The group's own report; its failure is the world's too (same epoch), found below.
      (void)group->allReduce(groupLoss, groupLoss, 2, DataType::kFloat64, ReduceOp::kSum).wait();
    }
    if (s.ok()) {
      for (int d = 0; d < kDim; ++d) model.w[d] -= rate * buffer[d] / buffer[kDim + 1];
      loss = buffer[kDim] / buffer[kDim + 1];
      if (firstLoss < 0) firstLoss = loss;
      if (comm.rank() == 0)
        std::printf("step %3d  loss %.6f  world %d\n", static_cast<int>(model.step), loss,
                    comm.size());
      model.step += 1;
      // Admit waiting replacements at a step boundary every rank agrees on.
      std::int32_t waiting = comm.replacementsWaiting() > 0 ? 1 : 0;
      s = comm.allReduce(&waiting, &waiting, 1, DataType::kInt32, ReduceOp::kMax).wait();
      if (s.ok() && waiting == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(stepMs));
        continue;
      }
    }
    group.reset();  // a child of the epoch being left: split again afterwards
    if (!recover(s)) return 1;
  }
  // Identical replicas: the smallest and the largest checksum agree.
  std::int64_t sums[2] = {static_cast<std::int64_t>(checksum(model)),
                          -static_cast<std::int64_t>(checksum(model))};
  Status s = comm.allReduce(sums, sums, 2, DataType::kInt64, ReduceOp::kMax).wait();
  const bool identical = s.ok() && sums[0] == -sums[1];
  if (comm.rank() == 0) {
    std::printf(
        "FINAL loss=%.6f first_loss=%.6f world_sizes=%s recoveries=%d "
        "replicas_identical=%s\n",
        loss, firstLoss, history.c_str(), recoveries, identical ? "yes" : "no");
  }
  return identical ? 0 : 1;
}
