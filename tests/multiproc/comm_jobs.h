// How the multi-process communicator tests start a scenario: ftcomm-test-comm members
// (tests/fixtures/comm_peer.cc) under real mpirun, one result line per rank.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "mpi_job.h"
#include "rendezvous_server_process.h"

namespace ftcomm::testing {

inline MpiJob job(const std::string& scenario, int ranks, std::vector<std::string> env = {},
                  std::vector<std::string> mpirunOptions = {}) {
  MpiJob job;
  job.ranks = ranks;
  job.command = {binary("ftcomm-test-comm"), "--scenario", scenario};
  job.env = std::move(env);
  job.mpirunOptions = std::move(mpirunOptions);
  job.timeout = std::chrono::seconds(240);
  return job;
}

inline std::vector<std::string> run(const std::string& scenario, int ranks,
                                    std::vector<std::string> env = {},
                                    std::vector<std::string> mpirunOptions = {}) {
  return runMpiJob(job(scenario, ranks, std::move(env), std::move(mpirunOptions)));
}

// The same with the scenario's buffers from ftcomm::allocMem (`memory` "allocmem") or the heap.
inline std::vector<std::string> runWithMemory(const std::string& memory,
                                              const std::string& scenario, int ranks,
                                              std::vector<std::string> env = {},
                                              std::vector<std::string> mpirunOptions = {},
                                              bool keepSurvivors = false) {
  MpiJob j = job(scenario, ranks, std::move(env), std::move(mpirunOptions));
  j.command.insert(j.command.end(), {"--memory", memory});
  j.keepSurvivors = keepSurvivors;
  return runMpiJob(j);
}

}  // namespace ftcomm::testing
