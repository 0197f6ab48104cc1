// ftcomm-run --rank-wrapper STATUS_DIR -- PROGRAM ARGS...: mpirun runs each rank under it. It
// runs the program, writes how it ended to STATUS_DIR/rank.R (R: OMPI_COMM_WORLD_RANK) for
// ftcomm-run's summary, and says so on stderr.
#pragma once

#include <string>
#include <vector>

namespace ftcomm::launcher {

// The exit code of a rank that was expelled (FTCOMM_EXIT_ON_EXPEL): the job went on without it.
constexpr int kExpelled = 75;

// The wrapper's exit code: the program's, or 0 where it died from a signal or was expelled, so
// that mpirun never ends the job over a failure the job survived.
int rankWrapper(const std::string& statusDir, const std::vector<std::string>& program);

}  // namespace ftcomm::launcher
