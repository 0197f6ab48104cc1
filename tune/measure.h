// Times the real collectives on a communicator, as ftcomm-tune compares ways.
//
// Thread-safety: one thread per communicator, as the collectives themselves.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/registry.h"
#include "ftcomm/communicator.h"

namespace ftcomm::tune {

// The collectives ftcomm-tune times, with the name a rules file gives them. A barrier moves no
// bytes and always runs inline in one chunk: there is nothing to choose.
struct Timed {
  algorithms::Collective collective;
  const char* name;
};
const std::vector<Timed>& timedCollectives();

// Buffers for one collective of `bytes` (as the algorithm choice counts them: the vector, an
// allgather's whole result, a reduce-scatter's or all-to-all's whole input) at `ranks` ranks,
// float32 elements, on the heap as a training job's buffers mostly are.
class Buffers {
 public:
  Buffers(algorithms::Collective collective, std::size_t bytes, int ranks);
  // Elements per call's count argument.
  std::size_t count() const { return count_; }
  float* send() { return send_.data(); }
  float* recv() { return recv_.data(); }

 private:
  std::size_t count_ = 0;
  std::vector<float> send_, recv_;
};

// One call of `collective` on `comm`, posted and waited for.
Status runOnce(Communicator& comm, algorithms::Collective collective, Buffers& buffers);

// Calls a collective `warmup` times, then `calls` times timed; this member's mean time per
// call in microseconds, or why a call failed.
Result<double> timeCalls(Communicator& comm, algorithms::Collective collective, Buffers& buffers,
                         int warmup, int calls);

// The slowest member's value of `mine` (an allreduce with kMax on `comm`).
Result<double> slowest(Communicator& comm, double mine);

// How many calls to time at `bytes`: about 64 MiB moved, between 4 and 2000 calls.
int callsFor(std::size_t bytes);

}  // namespace ftcomm::tune
