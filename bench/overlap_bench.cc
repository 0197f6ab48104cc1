#include "overlap_bench.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <thread>
#include <vector>

#include "bench_buffer.h"

namespace ftcomm::bench {

namespace {

// Microseconds per call of `iters` calls of `body`, the slowest rank's, after a barrier.
double slowestMicros(int iters, const std::function<void()>& body) {
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) body();
  double micros =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      iters;
  MPI_Allreduce(MPI_IN_PLACE, &micros, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return micros;
}

}  // namespace

Work postFtcomm(Communicator& c, const std::string& op, DataType dtype, const void* send,
                void* recv, std::size_t count, ReduceOp reduceOp) {
  if (op == "allreduce") return c.allReduce(send, recv, count, dtype, reduceOp);
  if (op == "broadcast") return c.broadcast(recv, count, dtype, 0);
  if (op == "reduce") return c.reduce(send, recv, count, dtype, reduceOp, 0);
  if (op == "allgather") return c.allGather(send, recv, count, dtype);
  if (op == "reducescatter") return c.reduceScatter(send, recv, count, dtype, reduceOp);
  return c.allToAll(send, recv, count, dtype);
}

Status runFtcomm(Communicator& c, const std::string& op, DataType dtype, const void* send,
                 void* recv, std::size_t count, ReduceOp reduceOp) {
  return postFtcomm(c, op, dtype, send, recv, count, reduceOp).wait();
}

// --overlap: T (post and wait), M (post, sleep T, wait), overlap (2T - M) / T, each the median
// of the rounds, rounds of T and M alternating. A sleeping application thread stands for one
// that waits on a GPU or on I/O: on 2 cores with 2 ranks, overlap with computation on the CPU
// cannot be measured, since the collective needs both cores.
int runOverlap(Communicator& c, const Options& o, int rank, int n) {
  const std::vector<SweepSize> sweep = sweepOf(o.op, o.minBytes, o.maxBytes, n, 4);
  if (rank == 0) {
    std::cout << "# tuning profile " << c.tuningProfile() << "\n"
              << "# " << o.op << " bytes  post+wait_us  post+sleep+wait_us  overlap_%\n";
  }
  for (const auto& [bytes, s] : sweep) {
    BenchBuffer send(s.sendElems, 1.0f, o.memory == "allocmem", 0),
        recv(s.recvElems, 0.0f, o.memory == "allocmem", 0);
    const int iters = o.iters > 0
                          ? o.iters
                          : static_cast<int>(std::clamp<std::size_t>((64u << 20) / bytes, 5, 200));
    Status last;
    auto once = [&] {
      if (Status st = runFtcomm(c, o.op, DataType::kFloat32, send.data(), recv.data(), s.count);
          !st.ok())
        last = st;
    };
    // Warm-up: a round's calls, untimed, so that members that choose how to post per call
    // (lend=choose) have measured their ways before the first timed round.
    for (int i = 0; i < iters; ++i) once();
    std::vector<double> alone, overlapped;
    for (int round = 0; round < o.rounds; ++round) {
      const double t = slowestMicros(iters, once);
      alone.push_back(t);
      const auto sleep = std::chrono::duration<double, std::micro>(t);
      overlapped.push_back(slowestMicros(iters, [&] {
        Work w = postFtcomm(c, o.op, DataType::kFloat32, send.data(), recv.data(), s.count);
        std::this_thread::sleep_for(sleep);
        if (Status st = w.wait(); !st.ok()) last = st;
      }));
    }
    if (!last.ok()) {
      std::cerr << "ftcomm-bench: rank " << rank << ": " << last.toString() << "\n";
      return 1;
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double t = median(alone), m = median(overlapped);
    if (rank == 0) {
      std::printf("%-10s %12zu %12.1f %18.1f %10.0f\n", o.op.c_str(), bytes, t, m,
                  100.0 * (2 * t - m) / t);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace ftcomm::bench
