// The rsh agent mpirun uses under `ftcomm-run --nodes K`:
//   ftcomm-run --host-agent PREFIX WORK ADDRESS COMMAND...
// mpirun runs it as it would run ssh, to start its daemon on the simulated host with control
// address ADDRESS. It enters that host's network namespace, makes new UTS (the hostname
// PREFIX-hN), IPC, mount (a private /dev/shm, /proc and /sys) and PID namespaces, and runs
// COMMAND with /bin/sh under an init process that reaps orphans and stays until the host's last
// process has ended: mpirun's daemon detaches itself, and the PID namespace ends with its init.
//
// Hosts share no filesystem for flight-recorder dumps: each host sees WORK/fr/hN at
// FTCOMM_FR_DIR, and ftcomm-run gathers those folders into FTCOMM_FR_DIR at the end.
#pragma once

#include <string>
#include <vector>

namespace ftcomm::launcher {

// The folder in which host `host` keeps its flight-recorder dumps, under ftcomm-run's WORK.
std::string hostDumpFolder(const std::string& work, int host);

// The agent's exit code: COMMAND's, or 1 (with a message) when the host cannot be entered.
int runHostAgent(const std::string& prefix, const std::string& work, const std::string& address,
                 const std::vector<std::string>& command);

}  // namespace ftcomm::launcher
