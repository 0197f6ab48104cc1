// The access probe of the shared-memory transport (transport/shm/shm_access.h): what it says
// where a process may not reach into another, and what it leaves behind where it may.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "transport/shm/shm_access.h"

using namespace ftcomm;

namespace {

long minorFaults() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

}  // namespace

TEST_CASE("the access probe leaves this process's pages writable (no copy-on-write fork)") {
  // A probe that forked write-protected every page of the process: the next write to each then
  // faulted, 5-15 us apiece on the project's VMs (the flight recorder's ring made the first
  // 4096 operations of every process 1.2 us slower each).
  constexpr std::size_t kPages = 512;
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<char> memory(kPages * page, 1);  // every page written: present and writable
  const Status access = shm::probeProcessAccess();
  const long before = minorFaults();
  for (std::size_t i = 0; i < kPages; ++i) memory[i * page] = 2;
  const long faults = minorFaults() - before;
  INFO("probe: " << access.toString());
  CHECK(faults < static_cast<long>(kPages / 8));
}

namespace {

// The probe's answer in a child of this test, as "<code> <message>". `unreadable`: the child is
// made unreadable to others: not dumpable, and (where the test runs as root, whose
// CAP_SYS_PTRACE would read it anyway) running as nobody. `ignoreSigchld`: as an application may
// set it, so that the kernel reaps the probe's own child before the probe can wait for it.
std::string probeInChild(bool unreadable, bool ignoreSigchld) {
  int report[2];
  REQUIRE(::pipe(report) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(report[0]);
    if (unreadable) {
      if (::getuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(2);
      if (::prctl(PR_SET_DUMPABLE, 0) != 0) ::_exit(3);
    }
    if (ignoreSigchld) ::signal(SIGCHLD, SIG_IGN);
    const Status access = shm::probeProcessAccess();
    const std::string line =
        std::to_string(static_cast<int>(access.code())) + " " + access.message();
    (void)!::write(report[1], line.data(), line.size());
    ::_exit(0);
  }
  ::close(report[1]);
  std::string got;
  char buffer[512];
  for (ssize_t n; (n = ::read(report[0], buffer, sizeof buffer)) > 0;) got.append(buffer, n);
  ::close(report[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return got;
}

const std::string kDenied = std::to_string(static_cast<int>(StatusCode::kPermissionDenied)) + " ";

}  // namespace

TEST_CASE("the access probe says what a process that may not be read refuses") {
  const std::string got = probeInChild(true, false);
  CHECK(got.rfind(kDenied, 0) == 0);
  CHECK_THAT(got, Catch::Contains("a process may not") && Catch::Contains("ptrace access"));
}

TEST_CASE("the access probe's answer does not depend on SIGCHLD being ignored") {
  // Its child's exit status is lost where SIGCHLD is ignored (the kernel reaps the child, and
  // waitpid says ECHILD); an answer read from it said "allowed" without knowing.
  const std::string denied = probeInChild(true, true);
  CHECK(denied.rfind(kDenied, 0) == 0);
  CHECK_THAT(denied, Catch::Contains("a process may not"));
  // And where access is allowed it still says so.
  const std::string here = probeInChild(false, false);
  const std::string ignoring = probeInChild(false, true);
  CHECK(ignoring == here);
}
