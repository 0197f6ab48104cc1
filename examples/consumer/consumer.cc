// A training job's smallest use of ftcomm: create the world communicator (rank, size and the
// rendezvous come from ftcomm-run or mpirun), allreduce a gradient-sized buffer from allocMem,
// broadcast a step number, and check both. Exits non-zero on any wrong value or error.
#include <cstdio>
#include <vector>

#include "ftcomm/communicator.h"
#include "ftcomm/memory.h"
#include "ftcomm/version.h"

int main() {
  static_assert(FTCOMM_VERSION_MAJOR >= 0, "ftcomm/version.h defines the version macros");
  auto created = ftcomm::Communicator::create();
  if (!created.ok()) {
    std::fprintf(stderr, "consumer: %s\n", created.status().toString().c_str());
    return 1;
  }
  ftcomm::Communicator& comm = **created;
  const int rank = comm.rank(), size = comm.size();

  constexpr std::size_t kCount = 1 << 18;  // 1 MiB of float32
  auto memory = ftcomm::allocMem(kCount * sizeof(float));
  if (!memory.ok()) {
    std::fprintf(stderr, "consumer: allocMem: %s\n", memory.status().toString().c_str());
    return 1;
  }
  auto* gradients = static_cast<float*>(*memory);
  for (std::size_t i = 0; i < kCount; ++i) gradients[i] = static_cast<float>(rank + 1);
  ftcomm::Status status = comm.allReduce(gradients, gradients, kCount, ftcomm::DataType::kFloat32,
                                         ftcomm::ReduceOp::kSum)
                              .wait();
  const float expected = static_cast<float>(size * (size + 1) / 2);
  int wrong = 0;
  for (std::size_t i = 0; i < kCount; ++i) wrong += gradients[i] != expected;

  std::int64_t step = rank == 0 ? 42 : -1;
  if (status.ok()) status = comm.broadcast(&step, 1, ftcomm::DataType::kInt64, 0).wait();
  (void)ftcomm::freeMem(gradients);
  if (!status.ok() || wrong != 0 || step != 42) {
    std::fprintf(stderr, "consumer: rank %d: %s, %d wrong sums, step %lld\n", rank,
                 status.toString().c_str(), wrong, static_cast<long long>(step));
    return 1;
  }
  const ftcomm::Version v = ftcomm::version();
  std::printf("consumer: rank %d of %d: allreduce and broadcast OK (ftcomm %d.%d.%d, headers %s)\n",
              rank, size, v.major, v.minor, v.patch, FTCOMM_VERSION_STRING);
  return 0;
}
