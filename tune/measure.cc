#include "tune/measure.h"

#include <algorithm>
#include <chrono>

namespace ftcomm::tune {

using algorithms::Collective;

const std::vector<Timed>& timedCollectives() {
  static const std::vector<Timed> kTimed{
      {Collective::kAllReduce, "allreduce"},
      {Collective::kBroadcast, "broadcast"},
      {Collective::kReduce, "reduce"},
      {Collective::kAllGather, "allgather"},
      {Collective::kReduceScatter, "reduce_scatter"},
      {Collective::kAllToAll, "alltoall"},
  };
  return kTimed;
}

Buffers::Buffers(Collective collective, std::size_t bytes, int ranks) {
  const std::size_t n = static_cast<std::size_t>(ranks);
  const std::size_t elements = std::max<std::size_t>(1, bytes / sizeof(float));
  std::size_t sendElements = elements, recvElements = elements;
  switch (collective) {
    case Collective::kAllGather:  // count per member; the result holds all blocks
      count_ = std::max<std::size_t>(1, elements / n);
      sendElements = count_;
      recvElements = count_ * n;
      break;
    case Collective::kReduceScatter:  // count per block; the input holds all blocks
      count_ = std::max<std::size_t>(1, elements / n);
      sendElements = count_ * n;
      recvElements = count_;
      break;
    case Collective::kAllToAll:
      count_ = std::max<std::size_t>(1, elements / n);
      sendElements = recvElements = count_ * n;
      break;
    default:
      count_ = elements;
      break;
  }
  send_.assign(sendElements, 1.0f);
  recv_.assign(recvElements, 0.0f);
}

Status runOnce(Communicator& comm, Collective collective, Buffers& b) {
  constexpr DataType kType = DataType::kFloat32;
  switch (collective) {
    case Collective::kAllReduce:
      return comm.allReduce(b.send(), b.recv(), b.count(), kType, ReduceOp::kSum).wait();
    case Collective::kBroadcast:
      return comm.broadcast(b.send(), b.count(), kType, 0).wait();
    case Collective::kReduce:
      return comm.reduce(b.send(), b.recv(), b.count(), kType, ReduceOp::kSum, 0).wait();
    case Collective::kAllGather:
      return comm.allGather(b.send(), b.recv(), b.count(), kType).wait();
    case Collective::kReduceScatter:
      return comm.reduceScatter(b.send(), b.recv(), b.count(), kType, ReduceOp::kSum).wait();
    case Collective::kAllToAll:
      return comm.allToAll(b.send(), b.recv(), b.count(), kType).wait();
    default:
      return invalidArgument("ftcomm-tune does not time this collective");
  }
}

Result<double> timeCalls(Communicator& comm, Collective collective, Buffers& buffers, int warmup,
                         int calls) {
  for (int i = 0; i < warmup; ++i) FTCOMM_RETURN_IF_ERROR(runOnce(comm, collective, buffers));
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) FTCOMM_RETURN_IF_ERROR(runOnce(comm, collective, buffers));
  const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
  return took.count() / calls;
}

Result<double> slowest(Communicator& comm, double mine) {
  double all = 0;
  FTCOMM_RETURN_IF_ERROR(comm.allReduce(&mine, &all, 1, DataType::kFloat64, ReduceOp::kMax).wait());
  return all;
}

int callsFor(std::size_t bytes) {
  const std::size_t calls = (std::size_t{64} << 20) / std::max<std::size_t>(bytes, 1);
  return static_cast<int>(std::clamp<std::size_t>(calls, 4, 2000));
}

}  // namespace ftcomm::tune
