// The per-host agent of `ftcomm-run --launch agents`:
//   ftcomm-run --agent FIRST COUNT SIZE [--replacement] [--ship-dumps] -- PROGRAM ARGS...
// ftcomm-run starts one on each host through a remote shell (ssh, or the simulated hosts'
// --host-agent). It starts the host's COUNT ranks, launch ranks FIRST..FIRST+COUNT-1 of a job
// launched SIZE strong, watches them,
// and reports how each one ended on its standard error, as a line that starts with
// kReportMarker. It ends when its last rank has ended. When its standard input closes (the
// launcher ended the job, or is gone) it stops its ranks, each a process group of its own: SIGTERM,
// then SIGKILL after 5 s. A rank
// never outlives its agent (PR_SET_PDEATHSIG), so a host whose agent is lost has no rank left
// that nobody watches.
//
// Each rank gets FTCOMM_RANK, FTCOMM_WORLD_SIZE, FTCOMM_LOCAL_RANK and FTCOMM_LOCAL_SIZE, and
// torchrun's RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE. --replacement starts them as
// replacements for a lost host (FTCOMM_REPLACEMENT=1), whose launch ranks lie past SIZE: the job
// gives them their ranks when it admits them. --ship-dumps: once its ranks have ended, it sends
// the job's flight-recorder dumps (the files of FTCOMM_FR_DIR, default ./ftcomm-fr, named after
// FTCOMM_JOB) to the launcher as reports, for hosts that share no filesystem with it.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ftcomm::launcher {

// Starts every report line; the rest is "started" (once, when the agent has started its ranks),
// "RANK exit CODE", "RANK signal SIGNAL", "RANK failed-to-start", or "file NAME HEX" (a dump,
// its bytes in hexadecimal).
inline constexpr const char* kReportMarker =
    "\x1e"
    "ftcomm-agent ";

struct RankReport {
  bool started = false;  // the agent's "started": no rank's ending
  std::string file;      // a shipped dump's name, and its bytes in `contents`
  std::string contents;
  int rank = -1;
  std::string ending;  // "exit CODE" or "signal SIGNAL"
  int value = 0;       // the code or the signal
  bool exited = false;
};

// The report in `line` (after any text a rank left unfinished before it), or nothing.
std::optional<RankReport> parseReport(const std::string& line);

// The agent's exit code: 0 once every rank has ended, 2 for bad usage, 1 when it cannot run.
int runRankAgent(const std::vector<std::string>& args);

}  // namespace ftcomm::launcher
