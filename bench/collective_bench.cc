// ftcomm-bench: ftcomm's collectives beside OpenMPI's in the same run, under mpirun.
//
//   mpirun -np N ftcomm-bench --op allreduce|broadcast|reduce|allgather|reducescatter|alltoall
//          [--min-bytes A] [--max-bytes B] [--iters N] [--rounds R] [--check]
//          [--compare mpi,gloo,recorder-off] [--json] [--dtype float32|float16|bfloat16]
//          [--reduce-op sum|avg] [--memory heap|allocmem]
//   mpirun -np 2 ftcomm-bench --op put|get [--compare ucx,ucx-peer] ...   (rma_bench.cc)
//   mpirun -np N ftcomm-bench --op OP --overlap ...                       (overlap_bench.cc)
//
// Sizes follow nccl-tests: the bytes of the whole vector (allreduce, broadcast, reduce) or of
// the whole result / input (allgather, reducescatter, alltoall), float32 elements unless --dtype
// names float16 or bfloat16 (ftcomm alone: the peers take float32 only); the reductions sum
// unless --reduce-op avg (ftcomm alone too). Time is the
// slowest rank's mean per iteration; algbw = bytes / time; busbw = algbw times nccl-tests'
// factor (allreduce 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n; others 1).
// --check first runs the operation on the same random inputs through ftcomm and MPI and
// compares: int32 results must be identical, float32 within 1e-5 relative.
// --memory allocmem: the timed buffers of ftcomm and OpenMPI both come from ftcomm::allocMem
// (ftcomm/memory.h), which same-host peers of ftcomm read from a mapping; heap (the default):
// from operator new.
//
// Each size is timed in R rounds (default 5), ftcomm and the peer alternating, and the median
// round of each is reported, so that a noisy machine moves both sides alike. Without --iters a
// round runs 64 MiB / bytes calls (5 to 1000), fewer where they would take over 2 s.
// --compare names the peers, in one run: OpenMPI (mpi), Gloo over its TCP transport (gloo; for
// allreduce both its ring and its halving-doubling), and ftcomm itself with the flight recorder
// switched off (recorder-off). Each peer's column shows its time and busbw, and the ratio of its
// time to ftcomm's.
// --compare recorder-off: the peer is ftcomm itself with the flight recorder switched off, to
// measure what recording costs (the budget is 2% of an 8-byte allreduce).
//
// The rendezvous: FTCOMM_RENDEZVOUS if set; else rank 0 starts ftcomm-rendezvous (beside this
// program) on loopback and tells the others through MPI.
#include <mpi.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_buffer.h"
#include "bench_options.h"
#include "bench_table.h"
#include "ftcomm/communicator.h"
#include "gloo_peer.h"
#include "overlap_bench.h"
#include "recorder/flight_recorder.h"
#include "rma_bench.h"

extern char** environ;

using namespace ftcomm;
using namespace ftcomm::bench;

namespace {

// The rendezvous address: from the environment, or a server rank 0 starts.
std::string rendezvous(int rank, const char* self, pid_t* server) {
  char address[256] = {};
  if (const char* given = std::getenv("FTCOMM_RENDEZVOUS"); given != nullptr && *given) {
    return given;
  }
  if (rank == 0) {
    const auto dir = std::filesystem::path(self).parent_path();
    const std::string binary = (dir / "ftcomm-rendezvous").string();
    const std::string portFile =
        (std::filesystem::temp_directory_path() / ("ftcomm-bench-" + std::to_string(::getpid())))
            .string();
    std::filesystem::remove(portFile);
    std::vector<std::string> args = {binary, "--listen", "127.0.0.1:0", "--port-file", portFile};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(server, binary.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
      std::cerr << "ftcomm-bench: cannot start " << binary << "\n";
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    std::string port;
    for (int i = 0; i < 1000 && port.empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      std::ifstream in(portFile);
      std::getline(in, port);
    }
    std::filesystem::remove(portFile);
    std::snprintf(address, sizeof address, "127.0.0.1:%s", port.c_str());
  }
  MPI_Bcast(address, sizeof address, MPI_CHAR, 0, MPI_COMM_WORLD);
  return address;
}

void runMpi(const std::string& op, MPI_Datatype dtype, const void* send, void* recv,
            std::size_t count) {
  const int c = static_cast<int>(count);
  if (op == "allreduce")
    MPI_Allreduce(send, recv, c, dtype, MPI_SUM, MPI_COMM_WORLD);
  else if (op == "broadcast")
    MPI_Bcast(recv, c, dtype, 0, MPI_COMM_WORLD);
  else if (op == "reduce")
    MPI_Reduce(send, recv, c, dtype, MPI_SUM, 0, MPI_COMM_WORLD);
  else if (op == "allgather")
    MPI_Allgather(send, c, dtype, recv, c, dtype, MPI_COMM_WORLD);
  else if (op == "reducescatter")
    MPI_Reduce_scatter_block(send, recv, c, dtype, MPI_SUM, MPI_COMM_WORLD);
  else
    MPI_Alltoall(send, c, dtype, recv, c, dtype, MPI_COMM_WORLD);
}

// The same random inputs through both; "" when they agree.
std::string differential(Communicator& c, const std::string& op, const Shape& s, int rank) {
  std::mt19937 rng(static_cast<unsigned>(1234 + rank));
  std::uniform_int_distribution<std::int32_t> ints(-1000, 1000);
  std::uniform_real_distribution<float> reals(-1.0f, 1.0f);
  std::vector<std::int32_t> is(s.sendElems), ia(s.recvElems, 0), ib(s.recvElems, 0);
  std::vector<float> fs(s.sendElems), fa(s.recvElems, 0), fb(s.recvElems, 0);
  for (auto& v : is) v = ints(rng);
  for (auto& v : fs) v = reals(rng);
  if (op == "broadcast") {
    ia.assign(is.begin(), is.end());
    ib = ia;
    fa.assign(fs.begin(), fs.end());
    fb = fa;
  }
  if (Status st = runFtcomm(c, op, DataType::kInt32, is.data(), ia.data(), s.count); !st.ok())
    return st.toString();
  runMpi(op, MPI_INT32_T, is.data(), ib.data(), s.count);
  if (Status st = runFtcomm(c, op, DataType::kFloat32, fs.data(), fa.data(), s.count); !st.ok())
    return st.toString();
  runMpi(op, MPI_FLOAT, fs.data(), fb.data(), s.count);
  const bool rootOnly = op == "reduce" && rank != 0;
  if (rootOnly) return "";
  for (std::size_t i = 0; i < s.recvElems; ++i) {
    if (ia[i] != ib[i])
      return "int32 element " + std::to_string(i) + ": ftcomm " + std::to_string(ia[i]) + ", MPI " +
             std::to_string(ib[i]);
    if (std::fabs(fa[i] - fb[i]) > 1e-5f * std::max(1.0f, std::fabs(fb[i]))) {
      return "float32 element " + std::to_string(i) + ": ftcomm " + std::to_string(fa[i]) +
             ", MPI " + std::to_string(fb[i]);
    }
  }
  return "";
}

// Gloo's store directory: rank 0 makes it, everyone learns it.
std::string glooStoreDir(int rank) {
  char dir[256] = {};
  if (rank == 0) {
    std::string pattern = (std::filesystem::temp_directory_path() / "ftcomm-bench-gloo-XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::cerr << "ftcomm-bench: mkdtemp failed\n";
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    std::snprintf(dir, sizeof dir, "%s", pattern.c_str());
  }
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  return dir;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const Options o = parse(argc, argv);
  pid_t server = -1;
  const std::string address = rendezvous(rank, argv[0], &server);
  int jobId = static_cast<int>(::getpid());
  MPI_Bcast(&jobId, 1, MPI_INT, 0, MPI_COMM_WORLD);
  CommOptions copts;
  copts.rank = rank;
  copts.size = n;
  copts.rendezvous = address;
  copts.job = "bench-" + std::to_string(jobId);
  auto created = Communicator::create(copts);
  if (!created.ok()) {
    std::cerr << "ftcomm-bench: rank " << rank << ": " << created.status().toString() << "\n";
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  Communicator& c = **created;
  if (o.overlap) {
    const int failed = runOverlap(c, o, rank, n);
    created->reset();
    MPI_Barrier(MPI_COMM_WORLD);
    if (server > 0) {
      ::kill(server, SIGTERM);
      ::waitpid(server, nullptr, 0);
    }
    MPI_Finalize();
    return failed;
  }
  if (rank == 0) std::cerr << "ftcomm-bench: tuning profile " << c.tuningProfile() << "\n";
  const bool withGloo = std::find(o.peers.begin(), o.peers.end(), "gloo") != o.peers.end();
  std::string glooDir;
  std::unique_ptr<GlooPeer> gloo;
  if (withGloo) {
    glooDir = glooStoreDir(rank);
    auto connected = GlooPeer::connect(rank, n, glooDir);
    if (!connected.ok()) {
      std::cerr << "ftcomm-bench: rank " << rank << ": " << connected.status().toString() << "\n";
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    gloo = std::move(connected).value();
  }
  int failures = isOneSided(o.op) ? runRmaBench(c, o) : 0;
  bool headed = false;
  const DataType dtype = o.dtype == "float16"    ? DataType::kFloat16
                         : o.dtype == "bfloat16" ? DataType::kBFloat16
                                                 : DataType::kFloat32;
  const std::size_t elementBytes = dataTypeSize(dtype);
  const ReduceOp reduceOp = o.reduceOp == "avg" ? ReduceOp::kAvg : ReduceOp::kSum;
  const std::vector<SweepSize> sweep = isOneSided(o.op)
                                           ? std::vector<SweepSize>{}
                                           : sweepOf(o.op, o.minBytes, o.maxBytes, n, elementBytes);
  for (const auto& [bytes, s] : sweep) {
    std::string verdict;
    if (o.check) {
      std::string problem = differential(c, o.op, s, rank);
      int bad = problem.empty() ? 0 : 1, anyBad = 0;
      MPI_Allreduce(&bad, &anyBad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      if (!problem.empty())
        std::cerr << "rank " << rank << " " << bytes << " B: " << problem << "\n";
      verdict = anyBad ? "MISMATCH" : "ok";
      failures += anyBad;
    }
    const int iters = o.iters > 0
                          ? o.iters
                          : static_cast<int>(std::clamp<std::size_t>((64u << 20) / bytes, 5, 1000));
    const bool allocMem = o.memory == "allocmem";
    const auto offset = static_cast<std::size_t>(o.offset);
    BenchBuffer send(s.sendElems, 1.0f, allocMem, offset),
        recv(s.recvElems, 0.0f, allocMem, offset);
    std::vector<float> glooSend(s.sendElems, 1.0f), glooRecv(s.recvElems, 0.0f);
    // A 16-bit type's buffers hold 1.0 in that type (the peers take float32 only).
    const std::uint16_t one16 = dtype == DataType::kFloat16 ? 0x3c00 : 0x3f80;
    BenchBuffer send16(elementBytes == 2 ? s.sendElems : 0, one16, allocMem, offset),
        recv16(elementBytes == 2 ? s.recvElems : 0, std::uint16_t{0}, allocMem, offset);
    void* ftSend = elementBytes == 2 ? send16.data() : send.data();
    void* ftRecv = elementBytes == 2 ? recv16.data() : recv.data();
    Status last;
    auto ftcommOnce = [&] {
      if (Status st = runFtcomm(c, o.op, dtype, ftSend, ftRecv, s.count, reduceOp); !st.ok())
        last = st;
    };
    std::vector<Column> columns;
    columns.push_back({"ftcomm", ftcommOnce, {}, {}});
    for (const std::string& peer : o.peers) {
      if (peer == "mpi") {
        columns.push_back(
            {"mpi", [&] { runMpi(o.op, MPI_FLOAT, send.data(), recv.data(), s.count); }, {}, {}});
      } else if (peer == "recorder-off") {
        columns.push_back({"recorder_off",
                           [&] {
                             recorder::FlightRecorder::process().setRecording(false);
                             ftcommOnce();
                             recorder::FlightRecorder::process().setRecording(true);
                           },
                           {},
                           {}});
      } else {
        for (const std::string& variant : GlooPeer::variants(o.op)) {
          columns.push_back({variant.empty() ? "gloo" : "gloo_" + variant,
                             gloo->bind(o.op, variant, glooSend.data(), glooRecv.data(), s.count),
                             {},
                             {}});
        }
      }
    }
    if (o.rewriteInputs || o.freshInputs) {
      // The input of each library's call: a broadcast's is the root's one buffer.
      const bool bcast = o.op == "broadcast";
      // ftcomm's buffers hold its dtype; the peers' float32.
      auto inputOf = [&](void* sendBuffer, void* recvBuffer,
                         std::size_t es) -> std::pair<void*, std::size_t> {
        if (bcast && rank != 0) return {nullptr, 0};
        return {bcast ? recvBuffer : sendBuffer, s.sendElems * es};
      };
      for (Column& column : columns) {
        const bool gloos = column.name.rfind("gloo", 0) == 0;
        const bool ours = column.name == "ftcomm" || column.name == "recorder_off";
        const auto [input, inputBytes] =
            gloos  ? inputOf(glooSend.data(), glooRecv.data(), sizeof(float))
            : ours ? inputOf(ftSend, ftRecv, elementBytes)
                   : inputOf(send.data(), recv.data(), sizeof(float));
        if (o.freshInputs) {
          column.prepare = [input, inputBytes] { rewriteLines(input, inputBytes); };
          continue;
        }
        column.body = [input, inputBytes, body = std::move(column.body)] {
          rewriteLines(input, inputBytes);
          body();
        };
      }
    }
    // Rounds alternate between the columns, so that a noisy machine moves all of them alike.
    for (int round = 0; round < o.rounds; ++round) {
      for (Column& column : columns) {
        try {
          column.rounds.push_back(timeIt(iters, o.iters == 0, column));
        } catch (const std::exception& e) {  // Gloo's timeout
          std::cerr << "ftcomm-bench: rank " << rank << ": " << column.name
                    << " failed: " << e.what() << "\n";
          MPI_Abort(MPI_COMM_WORLD, 3);
        }
      }
    }
    if (!last.ok()) {
      std::cerr << "ftcomm-bench: rank " << rank << ": " << last.toString() << "\n";
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const std::size_t actual =
        (o.op == "allgather" || o.op == "reducescatter" || o.op == "alltoall")
            ? s.count * static_cast<std::size_t>(n) * elementBytes
            : s.count * elementBytes;
    if (rank == 0) printRow(o, n, actual, columns, verdict, headed);
  }
  gloo.reset();
  created->reset();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && !glooDir.empty()) std::filesystem::remove_all(glooDir);
  if (server > 0) {
    ::kill(server, SIGTERM);
    ::waitpid(server, nullptr, 0);
  }
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
