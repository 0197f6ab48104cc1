// ftcomm-bench's command line, and the shape of each operation's buffers at a size.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ftcomm::bench {

struct Options {
  std::string op = "allreduce";
  std::size_t minBytes = 8;
  std::size_t maxBytes = 1 << 20;
  int iters = 0;  // 0: by size
  int rounds = 5;
  bool check = false;
  std::vector<std::string> peers;  // "mpi", "gloo", "recorder-off", in the order given
  bool json = false;
  std::string dtype = "float32";  // or float16, bfloat16 (the peers take float32 only)
  std::string reduceOp = "sum";   // or avg (ftcomm alone: MPI has no average)
  std::string memory = "heap";    // or allocmem: every library's buffers from ftcomm::allocMem
  // Every buffer starts this many bytes past a 64-byte boundary: how copies fare on buffers of
  // other alignments (copies between a buffer and shared memory whose offsets differ).
  int offset = 0;
  // Before every call, one store into each cache line of the call's input, for every library
  // alike: inputs that change from call to call, as a training step's gradients do, instead of
  // inputs that a reader finds clean in its cache from the call before.
  bool rewriteInputs = false;
  // The same stores before every call, but outside the timed part, and then an MPI barrier:
  // each call's input is modified in its caller's cache and held in no other cache when the
  // clock starts (the stores took the lines from any peer that had read them), as a gradient is
  // after a backward pass. Each call is timed alone; --rewrite-inputs times the stores too.
  bool freshInputs = false;
  // Each call posted, then the application thread sleeps for the call's own time T (measured
  // as post+wait alone) before it waits: M. Overlap = (2T - M) / T, how much of the collective
  // progressed while the application was busy elsewhere.
  bool overlap = false;
  // put and get: a window from Window::allocate(), or registered over the bench's heap memory
  // or over memory from ftcomm::allocMem (Window::registerMemory).
  std::string window = "allocate";  // or heap, allocmem
  // The link between two hosts, as measured beside the run (scripts/bench-nodes): its rate each
  // way in GB/s (iperf3 --bidir) and a small message's TCP round trip; 0 when not given. Each
  // adds a column: ftcomm's busbw as a share of the rate, and its time in round trips.
  double linkGbs = 0;
  double linkRttUs = 0;
};

// Parses argv; bad usage aborts the MPI job with exit code 2 and a usage message.
Options parse(int argc, char** argv);

// Elements per rank's block and in each buffer, for `bytes` of elements of `elementBytes`.
struct Shape {
  std::size_t count;  // the count argument of the call
  std::size_t sendElems;
  std::size_t recvElems;
};

Shape shapeOf(const std::string& op, std::size_t bytes, int n, std::size_t elementBytes);

// The sizes a run times: minBytes, doubling up to maxBytes, each with its shape. A size too small
// for one element per member rounds up to the next one (4 ranks: 8 and 16 bytes of an allgather
// are both one float each), and is timed once.
struct SweepSize {
  std::size_t bytes;
  Shape shape;
};
std::vector<SweepSize> sweepOf(const std::string& op, std::size_t minBytes, std::size_t maxBytes,
                               int n, std::size_t elementBytes);
// nccl-tests' bus-bandwidth factor.
double busFactor(const std::string& op, int n);

}  // namespace ftcomm::bench
