#include "rendezvous/launcher/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace ftcomm::launcher {

namespace {

volatile sig_atomic_t forwardTo = 0;

void forward(int sig) {
  if (forwardTo > 0) ::kill(static_cast<pid_t>(forwardTo), sig);
}

}  // namespace

pid_t spawn(const std::vector<std::string>& args, bool searchPath, const std::string& log) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  if (!log.empty()) {
    ::posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                       0644);
    ::posix_spawn_file_actions_adddup2(&actions, 1, 2);
  }
  pid_t pid = -1;
  const int rc = searchPath ? ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ)
                            : ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

int waitFor(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

bool runQuietly(const std::vector<std::string>& args, const std::string& log) {
  const pid_t pid = spawn(args, true, log);
  if (pid < 0) return false;
  const int status = waitFor(pid);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void forwardSignals(pid_t child) {
  forwardTo = child;
  struct sigaction action {};
  action.sa_handler = forward;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

void stopForwardingSignals() {
  forwardTo = 0;
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "killed by signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
  }
  return "ended oddly (status " + std::to_string(status) + ")";
}

}  // namespace ftcomm::launcher
