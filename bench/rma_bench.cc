// Rank 0 puts (or gets) `bytes` to offset 0 of rank 1's window, completing each before the next:
// a put and a flush(1), or a get. Time is rank 0's mean per operation, GB/s = bytes / time; the
// other ranks serve (raw UCX: progress their worker; ftcomm: nothing, its engine does it).
// Columns alternate by round and the median round is reported, as for the collectives.
#include "rma_bench.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>

#include "ftcomm/memory.h"
#include "ftcomm/window.h"
#include "raw_ucx_peer.h"

namespace ftcomm::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kDoneTag = 77;

struct RmaColumn {
  std::string name;
  std::function<void(std::size_t)> once;  // rank 0: one operation of `bytes`
  std::function<void()> serve;            // the others: meanwhile
  std::vector<double> rounds;
};

// Rank 0's mean microseconds per operation, known to every rank.
double timeRma(int iters, std::size_t bytes, const RmaColumn& column) {
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Barrier(MPI_COMM_WORLD);
  double us = 0;
  if (rank == 0) {
    for (int i = 0; i < std::max(2, iters / 10); ++i) column.once(bytes);  // warm-up
    const auto start = Clock::now();
    for (int i = 0; i < iters; ++i) column.once(bytes);
    us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iters;
    char done = 1;
    for (int r = 1; r < n; ++r) MPI_Send(&done, 1, MPI_CHAR, r, kDoneTag, MPI_COMM_WORLD);
  } else {
    for (int flag = 0; !flag;) {
      column.serve();
      MPI_Iprobe(0, kDoneTag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
    char done = 0;
    MPI_Recv(&done, 1, MPI_CHAR, 0, kDoneTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Bcast(&us, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return us;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void require(const Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "ftcomm-bench: %s: %s\n", what, s.toString().c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

}  // namespace

bool isOneSided(const std::string& op) {
  return op == "put" || op == "get";
}

int runRmaBench(Communicator& comm, const Options& o) {
  const int rank = comm.rank();
  if (comm.size() < 2) {
    if (rank == 0) std::fprintf(stderr, "ftcomm-bench: --op %s needs 2 ranks\n", o.op.c_str());
    return 1;
  }
  // The target's memory of a registered window (--window heap or allocmem).
  std::unique_ptr<char[]> heapTarget;
  void* registered = nullptr;
  if (o.window == "heap") {
    heapTarget = std::make_unique<char[]>(o.maxBytes);
    registered = heapTarget.get();
  } else if (o.window == "allocmem") {
    auto memory = allocMem(o.maxBytes);
    require(memory.status(), "allocMem");
    registered = *memory;
  }
  auto window = registered != nullptr ? Window::registerMemory(comm, registered, o.maxBytes)
                                      : Window::allocate(comm, o.maxBytes);
  require(window.status(), registered != nullptr ? "Window::registerMemory" : "Window::allocate");
  Window& w = **window;
  std::vector<char> local(o.maxBytes, 1), rawTarget(o.maxBytes, 0);
  const bool put = o.op == "put";

  std::vector<std::unique_ptr<RawUcxPeer>> raw;
  std::vector<RmaColumn> columns;
  columns.push_back({"ftcomm",
                     [&](std::size_t bytes) {
                       if (put) {
                         require(w.put(local.data(), bytes, 1, 0).wait(), "put");
                         require(w.flush(1).wait(), "flush");
                       } else {
                         require(w.get(local.data(), bytes, 1, 0).wait(), "get");
                       }
                     },
                     [] { std::this_thread::sleep_for(std::chrono::microseconds(20)); },
                     {}});
  for (const std::string& peer : o.peers) {
    if (peer != "ucx" && peer != "ucx-peer") continue;
    raw.push_back(RawUcxPeer::connect(rawTarget.data(), rawTarget.size(), peer == "ucx-peer"));
    RawUcxPeer* p = raw.back().get();
    columns.push_back({peer == "ucx" ? "ucx" : "ucx_peer",
                       [p, put, &local](std::size_t bytes) {
                         if (put) {
                           p->put(local.data(), bytes, 1);
                         } else {
                           p->get(local.data(), bytes, 1);
                         }
                       },
                       [p] { p->serve(); },
                       {}});
  }

  bool headed = false;
  for (std::size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= 2) {
    const int iters = o.iters > 0 ? o.iters
                                  : static_cast<int>(std::clamp<std::size_t>(
                                        (std::size_t{256} << 20) / bytes, 10, 20000));
    for (RmaColumn& column : columns) column.rounds.clear();
    for (int round = 0; round < o.rounds; ++round) {
      for (RmaColumn& column : columns) column.rounds.push_back(timeRma(iters, bytes, column));
    }
    if (rank != 0) continue;
    const double ftUs = median(columns.front().rounds);
    if (o.json) {
      std::printf("{\"op\":\"%s\",\"bytes\":%zu,\"ranks\":%d", o.op.c_str(), bytes, comm.size());
      for (const RmaColumn& column : columns) {
        const double us = median(column.rounds);
        std::printf(",\"%s_us\":%.3f,\"%s_gbs\":%.4f", column.name.c_str(), us, column.name.c_str(),
                    bytes / us / 1e3);
      }
      std::printf("}\n");
    } else {
      if (!headed) {
        headed = true;
        std::printf(
            "# ftcomm-bench --op %s: rank 0 on rank 1's window, median of %d rounds; "
            "ratio = peer time / ftcomm time (above 1: ftcomm is faster)\n",
            o.op.c_str(), o.rounds);
        std::printf("%12s", "bytes");
        for (const RmaColumn& column : columns) {
          std::printf(" %14s %8s", (column.name + "_us").c_str(), "GB/s");
          if (&column != &columns.front()) std::printf(" %8s", "ratio");
        }
        std::printf("\n");
      }
      std::printf("%12zu", bytes);
      for (const RmaColumn& column : columns) {
        const double us = median(column.rounds);
        std::printf(" %14.2f %8.3f", us, bytes / us / 1e3);
        if (&column != &columns.front()) std::printf(" %8.2f", us / ftUs);
      }
      std::printf("\n");
    }
    std::fflush(stdout);
  }
  raw.clear();
  require(w.fence().wait(), "fence");
  window->reset();  // a registered window goes before its memory
  if (o.window == "allocmem") require(freeMem(registered), "freeMem");
  return 0;
}

}  // namespace ftcomm::bench
