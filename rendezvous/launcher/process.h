// Child processes for ftcomm-run: start, wait, describe how they ended.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ftcomm::launcher {

// Starts `args` (searching PATH when `searchPath`) with this process's environment; with a
// non-empty `log`, its stdout and stderr are appended there. The pid, or -1.
pid_t spawn(const std::vector<std::string>& args, bool searchPath, const std::string& log = "");

// waitpid, retried on EINTR; the raw status.
int waitFor(pid_t pid);

// Runs `args` to its end; true when it exited 0.
bool runQuietly(const std::vector<std::string>& args, const std::string& log);

// From now on SIGINT and SIGTERM sent to this process go on to `child`; until
// stopForwardingSignals().
void forwardSignals(pid_t child);
void stopForwardingSignals();

// "exited with code N", "killed by signal N (NAME)".
std::string describe(int status);

}  // namespace ftcomm::launcher
