// Built against an installed ftcomm: creates an NcclCommunicator over a 1-rank world and prints
// what create() said, so that the install test can check that libftcomm.so loads the NCCL
// plugin (and says why not, where it cannot) without a GPU.
#include <cstdio>

#include "ftcomm/communicator.h"
#include "ftcomm/nccl_communicator.h"

int main() {
  auto host = ftcomm::Communicator::create();
  if (!host.ok()) {
    std::printf("host: %s\n", host.status().toString().c_str());
    return 1;
  }
  auto nccl = ftcomm::NcclCommunicator::create(**host);
  std::printf("nccl: %s\n", nccl.ok() ? "created" : nccl.status().toString().c_str());
  return 0;
}
