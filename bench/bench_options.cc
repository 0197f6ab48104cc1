#include "bench_options.h"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "bench_flags.h"

namespace ftcomm::bench {

namespace {

constexpr const char* kUsage =
    "usage: ftcomm-bench --op allreduce|broadcast|reduce|allgather|reducescatter|alltoall|put|get "
    "[--min-bytes A] [--max-bytes B] [--iters N] [--rounds R] [--check] "
    "[--compare mpi,gloo,recorder-off | ucx,ucx-peer] [--json] "
    "[--dtype float32|float16|bfloat16] [--reduce-op sum|avg] [--memory heap|allocmem]\n"
    "       [--offset BYTES] (buffers start BYTES, a multiple of 4, past a 64-byte boundary)\n"
    "       [--rewrite-inputs] (a store into every cache line of the input before each call)\n"
    "       [--fresh-inputs] (the same stores untimed, then a barrier; each call timed alone)\n"
    "       [--overlap] (ftcomm alone: post, sleep for the call's own time, wait; overlap in %)\n"
    "       [--window allocate|heap|allocmem] (put and get: the window's memory)\n"
    "       [--link-gbs G] [--link-rtt-us R] (the link's rate each way and small round trip, as\n"
    "       scripts/bench-nodes measures them: adds ftcomm's busbw as a share of G, and its time\n"
    "       in round trips)\n"
    "  Sizes take K, M, G (or KiB, MiB, GiB). Run it under mpirun, one process per rank.\n";

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "ftcomm-bench: " << why << "\n" << kUsage;
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::exit(2);
}

// --help: the usage on rank 0's standard output, and every rank ends with 0.
[[noreturn]] void help() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::cout << kUsage << std::flush;
  MPI_Finalize();
  std::exit(0);
}

// A whole number in lo..hi, or bad usage.
double parsePositive(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0) || v > 1e9) {
    usage(flag + " wants a positive number, not '" + text + "'");
  }
  return v;
}

int parseInt(const std::string& flag, const std::string& text, long lo, long hi) {
  const std::optional<long> value = wholeNumber(text.c_str(), lo, hi);
  if (!value) {
    usage(flag + " takes a whole number in " + std::to_string(lo) + ".." + std::to_string(hi) +
          ", not '" + text + "'");
  }
  return static_cast<int>(*value);
}

std::size_t parseBytes(const std::string& text) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  std::string unit(end);
  if (unit == "K" || unit == "KiB")
    value *= 1024;
  else if (unit == "M" || unit == "MiB")
    value *= 1024 * 1024;
  else if (unit == "G" || unit == "GiB")
    value *= 1024.0 * 1024 * 1024;
  else if (!unit.empty())
    usage("bad size " + text);
  if (value < 0 || value > 16.0 * 1024 * 1024 * 1024) usage("bad size " + text);
  return static_cast<std::size_t>(value);
}

}  // namespace

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(flag + " needs a value");
      return argv[++i];
    };
    if (isHelpFlag(flag))
      help();
    else if (flag == "--op")
      o.op = value();
    else if (flag == "--min-bytes")
      o.minBytes = parseBytes(value());
    else if (flag == "--max-bytes")
      o.maxBytes = parseBytes(value());
    else if (flag == "--iters")
      o.iters = parseInt(flag, value(), 0, 1 << 30);
    else if (flag == "--rounds")
      o.rounds = parseInt(flag, value(), 1, 1000);
    else if (flag == "--check")
      o.check = true;
    else if (flag == "--json")
      o.json = true;
    else if (flag == "--rewrite-inputs")
      o.rewriteInputs = true;
    else if (flag == "--fresh-inputs")
      o.freshInputs = true;
    else if (flag == "--overlap")
      o.overlap = true;
    else if (flag == "--dtype")
      o.dtype = value();
    else if (flag == "--reduce-op")
      o.reduceOp = value();
    else if (flag == "--memory")
      o.memory = value();
    else if (flag == "--window")
      o.window = value();
    else if (flag == "--link-gbs")
      o.linkGbs = parsePositive(flag, value());
    else if (flag == "--link-rtt-us")
      o.linkRttUs = parsePositive(flag, value());
    else if (flag == "--offset")
      o.offset = parseInt(flag, value(), 0, 4092);
    else if (flag == "--compare") {
      const std::string list = value();
      for (std::size_t at = 0; at <= list.size();) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        const std::string peer = list.substr(at, comma - at);
        if (peer != "mpi" && peer != "gloo" && peer != "recorder-off" && peer != "ucx" &&
            peer != "ucx-peer")
          usage("--compare takes a list of mpi, gloo, recorder-off, ucx and ucx-peer, not '" +
                peer + "'");
        o.peers.push_back(peer);
        at = comma + 1;
      }
    } else
      usage("unknown flag " + flag);
  }
  const std::vector<std::string> ops = {"allreduce",     "broadcast", "reduce", "allgather",
                                        "reducescatter", "alltoall",  "put",    "get"};
  if (std::find(ops.begin(), ops.end(), o.op) == ops.end()) usage("unknown op " + o.op);
  const bool oneSided = o.op == "put" || o.op == "get";
  for (const std::string& peer : o.peers) {
    if (oneSided != (peer == "ucx" || peer == "ucx-peer")) {
      usage("--compare " + peer + " does not go with --op " + o.op +
            " (put and get compare with ucx and ucx-peer, the collectives with the others)");
    }
  }
  if (o.memory != "heap" && o.memory != "allocmem")
    usage("--memory takes heap or allocmem, not '" + o.memory + "'");
  if (o.window != "allocate" && o.window != "heap" && o.window != "allocmem")
    usage("--window takes allocate, heap or allocmem, not '" + o.window + "'");
  if (!oneSided && o.window != "allocate") usage("--window goes with --op put and get only");
  if (o.dtype != "float32" && o.dtype != "float16" && o.dtype != "bfloat16")
    usage("--dtype takes float32, float16 or bfloat16, not '" + o.dtype + "'");
  if (o.reduceOp != "sum" && o.reduceOp != "avg")
    usage("--reduce-op takes sum or avg, not '" + o.reduceOp + "'");
  for (const std::string& peer : o.peers) {
    if (o.dtype != "float32" && (peer == "mpi" || peer == "gloo"))
      usage("--compare " + peer + " takes float32 only (OpenMPI has no 16-bit float type)");
    if (o.reduceOp != "sum" && (peer == "mpi" || peer == "gloo"))
      usage("--compare " + peer + " takes --reduce-op sum only (MPI has no average)");
  }
  if (oneSided && o.dtype != "float32") usage("--dtype does not go with --op " + o.op);
  if (o.minBytes == 0 || o.minBytes > o.maxBytes) usage("need 0 < min-bytes <= max-bytes");
  if (o.offset % 4 != 0)
    usage("--offset must be a multiple of 4 in 0..4092 (the elements stay aligned)");
  if (oneSided && o.offset != 0) usage("--offset does not go with --op " + o.op);
  if (oneSided && o.rewriteInputs) usage("--rewrite-inputs does not go with --op " + o.op);
  if (oneSided && o.freshInputs) usage("--fresh-inputs does not go with --op " + o.op);
  if (o.overlap && (oneSided || !o.peers.empty() || o.rewriteInputs || o.freshInputs))
    usage("--overlap measures ftcomm's collectives alone, without --compare or input rewrites");
  if (o.rewriteInputs && o.freshInputs)
    usage("--rewrite-inputs and --fresh-inputs exclude each other (timed stores or untimed)");
  return o;
}

Shape shapeOf(const std::string& op, std::size_t bytes, int n, std::size_t elementBytes) {
  const std::size_t elems = std::max<std::size_t>(bytes / elementBytes, 1);
  const std::size_t un = static_cast<std::size_t>(n);
  if (op == "allgather")
    return {std::max<std::size_t>(elems / un, 1), std::max<std::size_t>(elems / un, 1),
            std::max<std::size_t>(elems / un, 1) * un};
  if (op == "reducescatter")
    return {std::max<std::size_t>(elems / un, 1), std::max<std::size_t>(elems / un, 1) * un,
            std::max<std::size_t>(elems / un, 1)};
  if (op == "alltoall")
    return {std::max<std::size_t>(elems / un, 1), std::max<std::size_t>(elems / un, 1) * un,
            std::max<std::size_t>(elems / un, 1) * un};
  return {elems, elems, elems};
}

std::vector<SweepSize> sweepOf(const std::string& op, std::size_t minBytes, std::size_t maxBytes,
                               int n, std::size_t elementBytes) {
  std::vector<SweepSize> sizes;
  for (std::size_t bytes = minBytes; bytes <= maxBytes; bytes *= 2) {
    const Shape shape = shapeOf(op, bytes, n, elementBytes);
    if (sizes.empty() || sizes.back().shape.count != shape.count) sizes.push_back({bytes, shape});
  }
  return sizes;
}

double busFactor(const std::string& op, int n) {
  if (op == "allreduce") return 2.0 * (n - 1) / n;
  if (op == "allgather" || op == "reducescatter" || op == "alltoall") return double(n - 1) / n;
  return 1.0;
}

}  // namespace ftcomm::bench
