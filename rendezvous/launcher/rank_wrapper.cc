#include "rendezvous/launcher/rank_wrapper.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "rendezvous/launcher/process.h"

namespace ftcomm::launcher {

int rankWrapper(const std::string& statusDir, const std::vector<std::string>& program) {
  const char* rankText = std::getenv("OMPI_COMM_WORLD_RANK");
  const std::string rank = rankText != nullptr ? rankText : "?";
  const pid_t child = spawn(program, true);
  if (child < 0) {
    std::cerr << "ftcomm-run: rank " << rank << ": cannot start " << program[0] << std::endl;
    std::ofstream(statusDir + "/rank." + rank) << "exit 127\n";
    return 127;
  }
  forwardSignals(child);
  const int status = waitFor(child);
  std::ofstream(statusDir + "/rank." + rank)
      << (WIFEXITED(status)
              ? "exit " + std::to_string(WEXITSTATUS(status))
              : "signal " + std::to_string(WIFSIGNALED(status) ? WTERMSIG(status) : 0))
      << "\n";
  std::cerr << "ftcomm-run: rank " << rank << " " << describe(status) << std::endl;
  // A death or an expulsion is a failure the job may have survived: mpirun must not end the
  // job over it.
  if (!WIFEXITED(status) || WEXITSTATUS(status) == kExpelled) return 0;
  return WEXITSTATUS(status);
}

}  // namespace ftcomm::launcher
